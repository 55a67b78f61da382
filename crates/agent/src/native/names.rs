//! Names of native and kernel program counters, on the writer thread: the
//! library (its file name) and the function. The writer caches what it makes
//! of them per address (see `Sink::mixed_stack`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// The symbol tables, read on a thread of their own (`jscope-symbols`) as cpu
/// sampling starts: libjvm alone has some 40,000 symbols and the kernel over
/// 100,000, and the writer, reading them itself at the first native frame, left
/// the other engines' bounded queues to fill and drop meanwhile.
pub struct Preload {
    /// `None` while reading; `Some(None)` once taken or when reading failed.
    slot: Mutex<Option<Option<Loaded>>>,
}

type Loaded = (Symbolizer, Option<KernelSymbols>);

impl Preload {
    /// Starts reading the tables; `None` when no thread could be started (the
    /// writer then reads them itself, on first use). `started` runs first on
    /// the reading thread, with its Linux id (the cpu engine arms it there:
    /// the reading is the process's CPU time like any other).
    pub fn start(
        table: Arc<crate::threads::ThreadTable>,
        started: Box<dyn FnOnce(u32) + Send>,
    ) -> Option<Arc<Preload>> {
        Preload::start_with(table, true, started)
    }

    /// As [`Preload::start`], the kernel's symbols only when `kernel` (stacks
    /// without kernel frames, the native hooks', need none).
    pub fn start_with(
        table: Arc<crate::threads::ThreadTable>,
        kernel: bool,
        started: Box<dyn FnOnce(u32) + Send>,
    ) -> Option<Arc<Preload>> {
        let preload = Arc::new(Preload {
            slot: Mutex::new(None),
        });
        let filled = preload.clone();
        std::thread::Builder::new()
            .name("jscope-symbols".into())
            .spawn(move || {
                let tid = crate::threads::gettid();
                table.mark_agent(tid);
                // Nothing here may unwind out of the thread unnoticed: a panic
                // leaves the slot empty and the writer reads on first use.
                let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    started(tid);
                    let mut s = Symbolizer::new();
                    s.preload();
                    (s, kernel.then(KernelSymbols::load).flatten())
                }));
                *filled.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(loaded.ok());
            })
            .ok()?;
        Some(preload)
    }

    /// `None` while reading; then the tables once, and `Some(None)` after.
    fn take(&self) -> Option<Option<Loaded>> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.as_mut().map(Option::take)
    }
}

/// The writer's namer of native frames.
#[derive(Default)]
pub struct NativeNames {
    libs: HashMap<String, Arc<str>>,
    /// Made on first use (it reads /proc/self/maps).
    symbolizer: Option<Symbolizer>,
    /// Read on first kernel frame; None inside when /proc/kallsyms is unreadable.
    kernel: Option<Option<KernelSymbols>>,
}

/// How long the last drain waits for the symbol tables being read.
const LAST_WAIT: Duration = Duration::from_secs(10);

impl NativeNames {
    /// Whether names can be given without reading symbol tables now: true once
    /// `preload` has read them (taken over here), or when there is none. With
    /// `last`, waits for it (the recording's last drain), at most `LAST_WAIT`.
    pub fn ready(&mut self, preload: Option<&Preload>, last: bool) -> bool {
        let Some(preload) = preload else {
            return true;
        };
        if self.symbolizer.is_some() {
            return true;
        }
        let until = Instant::now() + LAST_WAIT;
        loop {
            match preload.take() {
                Some(Some((symbolizer, kernel))) => {
                    self.symbolizer = Some(symbolizer);
                    self.kernel = Some(kernel);
                    return true;
                }
                // Failed (or taken): the writer reads on first use.
                Some(None) => return true,
                None => {}
            }
            if !last || Instant::now() >= until {
                // Past the wait the writer reads them itself.
                return last;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The process's mappings changed (a library was loaded): they are read
    /// again now, not at the next address in no known mapping (which waits
    /// 200 ms after the last reading).
    pub fn maps_changed(&mut self) {
        if let Some(symbolizer) = &mut self.symbolizer {
            symbolizer.refresh();
        }
    }

    /// The name of user-space `pc` (`kernel` false) or kernel address `pc`,
    /// and whether it was found: an address in no mapping known yet is to be
    /// asked again later (the library may have been loaded after the maps
    /// were last read).
    pub fn name(&mut self, pc: usize, kernel: bool) -> (NativeName, bool) {
        if kernel {
            (self.kernel_name(pc), true)
        } else {
            self.user(pc)
        }
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

    /// The name, and whether `pc` was in a known mapping.
    fn user(&mut self, pc: usize) -> (NativeName, bool) {
        let symbolizer = self.symbolizer.get_or_insert_with(Symbolizer::new);
        match symbolizer.lookup(pc as u64) {
            Some(sym) => {
                let kind = if &*sym.lib == "libjvm.so" {
                    FrameKind::Vm
                } else {
                    FrameKind::Native
                };
                let name = sym.name.unwrap_or_else(|| format!("0x{:x}", sym.offset));
                (
                    NativeName {
                        lib: sym.lib,
                        name,
                        kind,
                    },
                    true,
                )
            }
            None => (
                NativeName {
                    lib: self.lib("[unknown]"),
                    name: format!("0x{pc:x}"),
                    kind: FrameKind::Native,
                },
                false,
            ),
        }
    }
}

/// JNI's mangling of a class or method name into a native function's name:
/// `/` and `.` become `_`, `_` `;` `[` become `_1` `_2` `_3`, other characters
/// outside ASCII letters and digits `_0xxxx` (their UTF-16 units, lower case).
fn jni_mangle(name: &str, out: &mut String) {
    for c in name.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' => out.push(c),
            '/' | '.' => out.push('_'),
            '_' => out.push_str("_1"),
            ';' => out.push_str("_2"),
            '[' => out.push_str("_3"),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("_0{u:04x}"));
                }
            }
        }
    }
}

/// Whether `symbol` is the JNI function of native method `method` of `class`
/// (binary name, `pkg.Outer$Inner`): `Java_<class>_<method>`, or that
/// followed by `__<mangled signature>` (the long name of overloads).
pub fn jni_matches(symbol: &str, class: &str, method: &str) -> bool {
    let mut short = String::with_capacity(5 + class.len() + method.len() + 1);
    short.push_str("Java_");
    jni_mangle(class, &mut short);
    short.push('_');
    jni_mangle(method, &mut short);
    match symbol.strip_prefix(short.as_str()) {
        Some(rest) => rest.is_empty() || rest.starts_with("__"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::jni_matches;

    #[test]
    fn jni_names_match_their_native_methods() {
        assert!(jni_matches("Java_Between_outer", "Between", "outer"));
        assert!(jni_matches(
            "Java_com_acme_Shop_pay",
            "com.acme.Shop",
            "pay"
        ));
        assert!(jni_matches(
            "Java_com_acme_Shop_00024Cart_pay_1now",
            "com.acme.Shop$Cart",
            "pay_now"
        ));
        assert!(jni_matches("Java_p_X_f__ILjava_lang_String_2", "p.X", "f"));
        assert!(jni_matches("Java_X_caf_000e9", "X", "caf\u{e9}"));
        assert!(!jni_matches("Java_X_outerx", "X", "outer"));
        assert!(!jni_matches("Java_X_outer", "X", "spin"));
        assert!(!jni_matches("Java_Y_outer", "X", "outer"));
        assert!(!jni_matches("JNI_OnLoad", "X", "outer"));
    }
}
