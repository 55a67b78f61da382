//! The JVM's command-line flags as its flag table holds them (`JVMFlag::flags`,
//! exported with the VM structures), read off the signal handler: how object
//! headers hold class pointers depends on two of them, and one the agent
//! switches on (`DebugNonSafepoints`, see [`Switch`]).

use std::ffi::{c_char, CStr};

use super::structs::VmStructs;

/// The value of boolean flag `name`; None when the table or the flag is missing.
pub fn bool_flag(s: &VmStructs, name: &str) -> Option<bool> {
    let addr = flag_address(s, name)?;
    crate::safe::load_u8(addr).map(|b| b != 0)
}

/// A boolean flag the agent may turn on: where its value is, and whether it
/// still has its default (nobody set it on the command line, in the
/// environment or through management).
#[derive(Debug, Clone, Copy)]
pub struct Switch {
    value: usize,
    default: bool,
}

/// Origins are the low four bits of `JVMFlag::_flags`; 0 is the default.
const ORIGIN_MASK: u8 = 0xf;

impl Switch {
    /// Boolean flag `name`; None when the table or the flag is missing.
    pub fn find(s: &VmStructs, name: &str) -> Option<Switch> {
        let entry = flag_entry(s, name)?;
        let value = crate::safe::load(entry + s.offset("JVMFlag", "_addr")?)?;
        crate::safe::load_u8(value)?;
        // Without an origin field the flag is taken as default: switching it
        // on only ever happens from off.
        let default = match s.offset("JVMFlag", "_flags") {
            Some(at) => crate::safe::load_u8(entry + at)? & ORIGIN_MASK == 0,
            None => true,
        };
        Some(Switch { value, default })
    }

    /// Turns the flag on unless it was set by the user (either way): true
    /// when it is on afterwards.
    pub fn turn_on(&self) -> bool {
        match crate::safe::load_u8(self.value) {
            Some(0) if self.default => {
                // SAFETY: the flag table's address of a bool flag, read just
                // above; HotSpot reads such flags without synchronisation.
                unsafe { std::ptr::write_volatile(self.value as *mut u8, 1) };
                true
            }
            Some(v) => v != 0,
            None => false,
        }
    }
}

/// The address of flag `name`'s value.
fn flag_address(s: &VmStructs, name: &str) -> Option<usize> {
    let entry = flag_entry(s, name)?;
    crate::safe::load(entry + s.offset("JVMFlag", "_addr")?)
}

/// The address of flag `name`'s entry in the flag table.
fn flag_entry(s: &VmStructs, name: &str) -> Option<usize> {
    let table = crate::safe::load(s.address("JVMFlag", "flags")?)?;
    let count = crate::safe::load(s.address("JVMFlag", "numFlags")?)?;
    let stride = s.size("JVMFlag")?;
    let name_at = s.offset("JVMFlag", "_name")?;
    (0..count.min(10_000)).find_map(|i| {
        let entry = table + i * stride;
        let text = crate::safe::load(entry + name_at)?;
        if text == 0 {
            return None;
        }
        // SAFETY: flag names are NUL-terminated literals in libjvm.
        let flag = unsafe { CStr::from_ptr(text as *const c_char) };
        (flag.to_bytes() == name.as_bytes()).then_some(entry)
    })
}
