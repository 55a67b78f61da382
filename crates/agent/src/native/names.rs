//! Names of native and kernel program counters, on the writer thread: the
//! library (its file name) and the function, cached per address.

use std::collections::HashMap;
use std::sync::Arc;

use jscope_format::FrameKind;

use super::elf::Symbolizer;
use super::kallsyms::KernelSymbols;

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
    /// Made on first use (it reads /proc/self/maps).
    symbolizer: Option<Symbolizer>,
    /// Read on first kernel frame; None inside when /proc/kallsyms is unreadable.
    kernel: Option<Option<KernelSymbols>>,
}

impl NativeNames {
    /// The name of user-space `pc` (`kernel` false) or kernel address `pc`.
    pub fn name(&mut self, pc: usize, kernel: bool) -> NativeName {
        if let Some(n) = self.cache.get(&(pc, kernel)) {
            return n.clone();
        }
        let n = if kernel {
            self.kernel_name(pc)
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

    fn kernel_name(&mut self, pc: usize) -> NativeName {
        let symbols = self.kernel.get_or_insert_with(KernelSymbols::load);
        let name = symbols
            .as_ref()
            .and_then(|k| k.lookup(pc as u64))
            .map_or_else(|| format!("0x{pc:x}"), str::to_string);
        NativeName {
            lib: self.lib("[kernel]"),
            name,
            kind: FrameKind::Kernel,
        }
    }

    fn user(&mut self, pc: usize) -> NativeName {
        let symbolizer = self.symbolizer.get_or_insert_with(Symbolizer::new);
        match symbolizer.lookup(pc as u64) {
            Some(sym) => {
                let kind = if &*sym.lib == "libjvm.so" {
                    FrameKind::Vm
                } else {
                    FrameKind::Native
                };
                let name = sym.name.unwrap_or_else(|| format!("0x{:x}", sym.offset));
                NativeName {
                    lib: sym.lib,
                    name,
                    kind,
                }
            }
            None => NativeName {
                lib: self.lib("[unknown]"),
                name: format!("0x{pc:x}"),
                kind: FrameKind::Native,
            },
        }
    }
}
