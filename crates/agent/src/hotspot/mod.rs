//! A Java stack walker of the agent's own over HotSpot's VM structures
//! (`cstack=vm`, the default on HotSpot), for the cpu and wall signal handler.
//!
//! AsyncGetCallTrace cannot walk from a program counter in a stub, an
//! intrinsic or a megamorphic call site, and such samples came back as
//! `[unknown_java]`. This walker reads the JVM's own description of its
//! structures instead ([`structs`], [`layout`]), resolved once at start off
//! the handler, and in the handler finds the code blob of each program
//! counter in the code cache ([`code`]), names compiled frames with their
//! inlined methods from the debug information ([`scopes`]), steps over
//! stubs and adapters, walks interpreted frames, and follows entry frames
//! and the thread's last Java frame through native code ([`walk`]). Every
//! memory read is fault-free (`crate::safe`). A walk that cannot go on keeps
//! what it found and ends with a marker frame saying why
//! (`crate::frames::Break`).
//!
//! Where the structures are missing or fail the self-check at start (not
//! HotSpot, an unknown layout), the recording falls back to
//! AsyncGetCallTrace and says so in one line.

pub mod cache;
pub mod code;
pub mod flags;
#[cfg(feature = "fault-injection")]
pub mod fuzz;
pub mod layout;
pub mod mem;
pub mod names;
pub mod scopes;
pub mod structs;
pub mod walk;

use crate::jvm::{Jni, Jvmti};
use crate::safe::{load, load_u16, load_u32};
use cache::{FrameCache, IdCache};
use code::CodeCache;
use layout::Layout;

/// Everything the walker needs of one JVM, resolved off the handler.
#[derive(Debug)]
pub struct HotSpot {
    pub layout: Layout,
    pub code: CodeCache,
    /// Where Java code returns to in the call stub (the entry frame's pc).
    pub call_stub_return: usize,
    /// The JNIEnv's offset in its JavaThread.
    pub env_offset: usize,
    /// The narrow klass base and shift, read once (set at VM init).
    pub klass_base: usize,
    pub klass_shift: u32,
    /// The compilers' `compile_method` functions: a native frame in one of
    /// them is a compiler thread compiling its task's method.
    pub compile_method: [(usize, usize); 2],
    /// jmethodID of `jdk.internal.vm.Continuation.enterSpecial` (JDK 21+):
    /// the bottom frame of a mounted virtual thread.
    pub enter_special: usize,
    /// Compressed integers store each byte plus one (JDK 20+).
    pub excluded_byte: bool,
    /// jmethodIDs of the Method*s walks met, so most frames read one word
    /// of metadata instead of five.
    ids: IdCache,
    /// The Java frames of compiled methods at return addresses walks met.
    pub frames: FrameCache,
    /// `DebugNonSafepoints`: debug information at every instruction of
    /// compiled code, not only at safepoints.
    debug_non_safepoints: Option<flags::Switch>,
}

/// Why the walker is not used for a recording.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unavailable {
    #[error("this JVM exports no VM structures")]
    NoStructures,
    #[error("{0}")]
    Layout(String),
    #[error("the code cache cannot be read")]
    CodeCache,
    #[error("fault-free reads are not available: {0}")]
    Safe(#[from] crate::safe::InstallError),
    #[error("the self-check failed: {0}")]
    SelfCheck(&'static str),
}

impl HotSpot {
    /// Resolves the walker for the running JVM; on a Java thread (VMInit's or
    /// the attach listener's), after the VM is initialised.
    pub fn resolve(jvmti: Jvmti, jni: Jni, env: usize) -> Result<HotSpot, Unavailable> {
        let symbols = LibjvmSymbols::read();
        if crate::safe::use_jvm_safefetch(symbols.safefetch.unwrap_or(0)).is_err() {
            crate::safe::install()?;
        }
        let structs = structs::VmStructs::read().ok_or(Unavailable::NoStructures)?;
        let feature = feature_version(jvmti);
        if feature == 0 {
            return Err(Unavailable::SelfCheck("the JVM's version is not known"));
        }
        let layout = Layout::resolve(&structs, feature).map_err(Unavailable::Layout)?;
        let code = CodeCache::read(&layout).ok_or(Unavailable::CodeCache)?;
        let d = layout.klass_decoding;
        let hs = HotSpot {
            call_stub_return: load(layout.call_stub_return_address).unwrap_or(0),
            env_offset: env_offset(jvmti, jni, env).ok_or(Unavailable::SelfCheck(
                "java.lang.Thread.eetop does not lead to the JavaThread",
            ))?,
            klass_base: load(d.base).unwrap_or(0),
            klass_shift: load_u32(d.shift).unwrap_or(0),
            compile_method: symbols.compile_method,
            enter_special: enter_special(jvmti, jni),
            excluded_byte: feature >= 20,
            ids: IdCache::new(),
            frames: FrameCache::new(),
            debug_non_safepoints: flags::Switch::find(&structs, "DebugNonSafepoints"),
            layout,
            code,
        };
        hs.self_check(jvmti, jni)?;
        Ok(hs)
    }

    /// Asks the JIT compilers to describe every instruction of what they
    /// compile from now on, so that a sample in the middle of compiled code
    /// names its inlined methods, by turning `DebugNonSafepoints` on unless
    /// the user set it. True when it is on.
    pub fn debug_every_instruction(&self) -> bool {
        self.debug_non_safepoints.is_some_and(|f| f.turn_on())
    }

    /// Checks the layout against what JVMTI says: the call stub is in the
    /// code cache, and a known method's Method* leads back to its jmethodID.
    fn self_check(&self, jvmti: Jvmti, jni: Jni) -> Result<(), Unavailable> {
        if !self.code.contains(self.call_stub_return)
            || self
                .code
                .find(&self.layout, self.call_stub_return)
                .map(|b| b.kind)
                != Some(code::BlobKind::StubRoutines)
        {
            return Err(Unavailable::SelfCheck(
                "the call stub is not where the code cache says",
            ));
        }
        let class = jni.find_class("java/lang/Thread");
        let methods = jvmti.methods(class);
        jni.delete_local(class);
        let checked = methods.iter().filter(|(id, _, _)| {
            let id = *id as usize;
            load(id).is_some_and(|method| self.jmethod_id(method) == Some(id))
        });
        if checked.count() == 0 {
            return Err(Unavailable::SelfCheck(
                "Method* does not lead back to its jmethodID",
            ));
        }
        Ok(())
    }

    /// The jmethodID of Method* `method`, when the method has one and the
    /// pointer really is a Method (its jmethodID leads back to it).
    /// Async-signal-safe.
    pub fn jmethod_id(&self, method: usize) -> Option<usize> {
        if let Some(id) = self.ids.get(method) {
            return Some(id);
        }
        let id = self.jmethod_id_of(method)?;
        self.ids.put(method, id);
        Some(id)
    }

    /// The jmethodID of `method` from its class's table of them.
    fn jmethod_id_of(&self, method: usize) -> Option<usize> {
        let l = &self.layout;
        let cm = load(method.wrapping_add(l.method_const))?;
        let pool = load(cm.wrapping_add(l.const_constants))?;
        let idnum = load_u16(cm.wrapping_add(l.const_idnum))? as usize;
        let holder = load(pool.wrapping_add(l.pool_holder))?;
        let ids = load(holder.wrapping_add(l.klass_jmethod_ids))?;
        if ids == 0 || idnum >= load(ids)? {
            return None;
        }
        let id = load(ids.wrapping_add(8 * (idnum + 1)))?;
        (id != 0 && load(id)? == method).then_some(id)
    }

    /// Whether Method* `method` is a Java `native` method.
    pub fn is_native(&self, method: usize) -> bool {
        load_u32(method.wrapping_add(self.layout.method_access_flags))
            .is_some_and(|f| f & layout::ACC_NATIVE != 0)
    }

    /// The bytecode index of `bcp` in Method* `method`, when it lies in its code.
    pub fn bci(&self, method: usize, bcp: usize) -> Option<i32> {
        let l = &self.layout;
        let cm = load(method.wrapping_add(l.method_const))?;
        let codes = cm.wrapping_add(l.const_size);
        let size = load_u16(cm.wrapping_add(l.const_code_size))? as usize;
        let bci = bcp.checked_sub(codes)?;
        (bci < size).then_some(bci as i32)
    }

    /// The Klass* of the object at `oop`. Async-signal-safe.
    pub fn klass_of(&self, oop: usize) -> Option<usize> {
        let d = &self.layout.klass_decoding;
        let narrow = match d.mark_shift {
            Some(shift) => {
                let mut mark = load(oop)?;
                if mark & 3 == 2 {
                    // Inflated: the header is displaced into the monitor.
                    mark = load(mark ^ 2)?;
                }
                (mark >> shift) as u32
            }
            None if d.uncompressed => return load(oop.wrapping_add(8)).filter(|&k| k != 0),
            None => load_u32(oop.wrapping_add(8))?,
        };
        (narrow != 0).then(|| {
            self.klass_base
                .wrapping_add((narrow as usize).wrapping_shl(self.klass_shift))
        })
    }

    /// The name of class `klass` in Java notation (`java.lang.String`), read
    /// off the handler; None when it is not a readable class.
    pub fn class_name(&self, klass: usize) -> Option<String> {
        let l = &self.layout;
        let symbol = load(klass + l.klass_name)?;
        let len = load_u16(symbol + l.symbol_length)? as usize;
        if len == 0 || len > 4096 {
            return None;
        }
        let bytes: Option<Vec<u8>> = (0..len)
            .map(|i| crate::safe::load_u8(symbol + l.symbol_body + i))
            .collect();
        let internal = String::from_utf8_lossy(&bytes?).into_owned();
        Some(crate::jvm::class_name_from_signature(&format!(
            "L{internal};"
        )))
    }
}

/// The running JVM's feature version (11, 17, 21, 25), from the VM's own
/// properties (the only ones JVMTI has while the VM starts).
fn feature_version(jvmti: Jvmti) -> u32 {
    ["java.vm.specification.version", "java.vm.version"]
        .iter()
        .find_map(|key| {
            let v = jvmti.system_property(key)?;
            v.trim_start_matches("1.")
                .split(['.', '+', '-'])
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// The offset of the JNIEnv in a JavaThread, from this thread's.
fn env_offset(jvmti: Jvmti, jni: Jni, env: usize) -> Option<usize> {
    let eetop = crate::jvm::current::java_thread(jvmti, jni)?;
    env.checked_sub(eetop).filter(|&o| o < 1 << 16)
}

/// What the walker takes from libjvm's symbol table (one read of it): the
/// entry of the JVM's own fault-free load, SafeFetchN (a function of libjvm's
/// from JDK 17, before a stub whose address a StubRoutines static holds),
/// and C1's and C2's `compile_method` ranges (zero where missing).
struct LibjvmSymbols {
    safefetch: Option<usize>,
    compile_method: [(usize, usize); 2],
}

impl LibjvmSymbols {
    fn read() -> LibjvmSymbols {
        let mut out = LibjvmSymbols {
            safefetch: None,
            compile_method: [(0, 0); 2],
        };
        let Some((path, bias)) = crate::native::walk::loaded_object("libjvm.so") else {
            return out;
        };
        let found = crate::native::elf::ElfSymbols::find_all(
            std::path::Path::new(&path),
            &[
                "SafeFetchN_impl",
                "_ZN12StubRoutines17_safefetchN_entryE",
                "_ZN8Compiler14compile_method",
                "_ZN10C2Compiler14compile_method",
            ],
        );
        let at = |i: usize| found[i].map(|(addr, size)| (bias + addr as usize, size as usize));
        out.safefetch = match (at(0), at(1)) {
            (Some((f, _)), _) => Some(f),
            // SAFETY: a static of libjvm's, set when its stubs were generated
            // (before VMInit); read as any word.
            (None, Some((var, _))) => Some(unsafe { *(var as *const usize) }).filter(|&e| e != 0),
            _ => None,
        };
        for (i, slot) in out.compile_method.iter_mut().enumerate() {
            if let Some((start, size)) = at(2 + i) {
                *slot = (start, start + size);
            }
        }
        out
    }
}

/// jmethodID of `jdk.internal.vm.Continuation.enterSpecial`, 0 before JDK 21.
fn enter_special(jvmti: Jvmti, jni: Jni) -> usize {
    let class = jni.find_class("jdk/internal/vm/Continuation");
    if class.is_null() {
        jni.clear_exception();
        return 0;
    }
    let id = jvmti
        .methods(class)
        .into_iter()
        .find(|(_, name, _)| name == "enterSpecial")
        .map_or(0, |(id, _, _)| id as usize);
    jni.delete_local(class);
    id
}
