//! Names of native and kernel program counters, on the writer thread: the
//! library (its file name) and the function, cached per address.

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Arc;

use jscope_format::FrameKind;

/// A named native frame.
#[derive(Debug, Clone)]
pub struct NativeName {
    /// The library's file name, `[kernel]` or `[unknown]`.
    pub lib: Arc<str>,
    /// The function, or `0x<offset>` in its library when it has no symbol.
    pub name: String,
    pub kind: FrameKind,
}

/// The writer's cache of native names.
#[derive(Default)]
pub struct NativeNames {
    cache: HashMap<(usize, bool), NativeName>,
    libs: HashMap<String, Arc<str>>,
}

impl NativeNames {
    /// The name of user-space `pc` (`kernel` false) or kernel address `pc`.
    pub fn name(&mut self, pc: usize, kernel: bool) -> NativeName {
        if let Some(n) = self.cache.get(&(pc, kernel)) {
            return n.clone();
        }
        let n = if kernel {
            NativeName {
                lib: self.lib("[kernel]"),
                name: format!("0x{pc:x}"),
                kind: FrameKind::Kernel,
            }
        } else {
            self.user(pc)
        };
        self.cache.insert((pc, kernel), n.clone());
        n
    }

    fn lib(&mut self, name: &str) -> Arc<str> {
        if let Some(l) = self.libs.get(name) {
            return l.clone();
        }
        let l: Arc<str> = Arc::from(name);
        self.libs.insert(name.to_string(), l.clone());
        l
    }

    fn user(&mut self, pc: usize) -> NativeName {
        // SAFETY: a zeroed Dl_info is valid; dladdr fills it or returns 0.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: any address may be asked about.
        let found = unsafe { libc::dladdr(pc as *const _, &mut info) } != 0;
        if !found || info.dli_fname.is_null() {
            return NativeName {
                lib: self.lib("[unknown]"),
                name: format!("0x{pc:x}"),
                kind: FrameKind::Native,
            };
        }
        // SAFETY: dladdr's strings live as long as the library stays loaded.
        let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        let file = path.rsplit('/').next().unwrap_or(&path).to_string();
        let name = if info.dli_sname.is_null() {
            format!("0x{:x}", pc.wrapping_sub(info.dli_fbase as usize))
        } else {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(info.dli_sname) }
                .to_string_lossy()
                .into_owned()
        };
        let kind = if file == "libjvm.so" {
            FrameKind::Vm
        } else {
            FrameKind::Native
        };
        NativeName {
            lib: self.lib(&file),
            name,
            kind,
        }
    }
}
