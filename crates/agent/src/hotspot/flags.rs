//! The JVM's command-line flags as its flag table holds them (`JVMFlag::flags`,
//! exported with the VM structures), read off the signal handler: how object
//! headers hold class pointers depends on two of them.

use std::ffi::{c_char, CStr};

use super::structs::VmStructs;

/// The value of boolean flag `name`; None when the table or the flag is missing.
pub fn bool_flag(s: &VmStructs, name: &str) -> Option<bool> {
    let addr = flag_address(s, name)?;
    crate::safe::load_u8(addr).map(|b| b != 0)
}

/// The address of flag `name`'s value.
fn flag_address(s: &VmStructs, name: &str) -> Option<usize> {
    let table = crate::safe::load(s.address("JVMFlag", "flags")?)?;
    let count = crate::safe::load(s.address("JVMFlag", "numFlags")?)?;
    let stride = s.size("JVMFlag")?;
    let name_at = s.offset("JVMFlag", "_name")?;
    let addr_at = s.offset("JVMFlag", "_addr")?;
    (0..count.min(10_000)).find_map(|i| {
        let entry = table + i * stride;
        let text = crate::safe::load(entry + name_at)?;
        if text == 0 {
            return None;
        }
        // SAFETY: flag names are NUL-terminated literals in libjvm.
        let flag = unsafe { CStr::from_ptr(text as *const c_char) };
        (flag.to_bytes() == name.as_bytes())
            .then(|| crate::safe::load(entry + addr_at))
            .flatten()
    })
}
