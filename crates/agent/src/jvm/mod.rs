//! The agent's one access layer to the JVM: typed wrappers over the raw JavaVM,
//! JNIEnv and jvmtiEnv function tables, and the guard every `extern "C"` entry
//! point runs its body in. Nothing outside this module (and `sys`, the bindings)
//! touches a function table.
//!
//! - [`Vm`], [`Jni`] and [`Jvmti`]: one newtype per raw pointer. Each call checks
//!   its result, clears the Java exception it may cause and frees what JVMTI
//!   allocated, so the rest of the agent never handles JVM memory by hand.
//! - One policy for a function the JVM's table lacks: the lookup returns
//!   [`JvmtiError::Missing`], which a wrapper returns or turns into its usual
//!   failure value (None, null, false), never a panic.
//! - [`thread`]: one way to learn a thread's Java id. [`GlobalRef`] and
//!   [`WeakRef`]: global references that delete themselves. `ids`: method and
//!   field ids looked up by name once per class. [`breakpoints`]: one registry from a
//!   method to the handler of its breakpoint. [`locals`]: a thread's own frame
//!   locals, read without a safepoint. [`entry`]: the panic guard.
//!
//! The raw pointer arguments (jobject, jclass, jmethodID, ...) are JVM handles that
//! callers received from the JVM; the agent never dereferences them itself, so the
//! wrappers are not `unsafe fn`s.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod asgct;
pub mod breakpoints;
pub mod current;
pub mod entry;
mod ids;
mod jni;
mod jvmti;
pub mod locals;
pub mod native_class;
pub mod thread;

use std::ffi::{c_char, c_void, CString};
use std::ptr::null_mut;

pub use jni::{GlobalRef, Jni, WeakRef};
pub use jvmti::{Jvmti, MethodNames, ThreadInfo};

use crate::sys;

/// Why a JVM call failed: a JVMTI error code (displayed with its name where the
/// agent knows it), or a function the JVM's table does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JvmtiError {
    #[error("JVMTI error {0} ({name})", name = error_name(*.0))]
    Code(u32),
    #[error("the JVM has no {0} function")]
    Missing(&'static str),
}

fn error_name(code: u32) -> &'static str {
    match code {
        sys::JVMTI_ERROR_INVALID_THREAD => "invalid thread",
        sys::JVMTI_ERROR_THREAD_NOT_ALIVE => "thread not alive",
        sys::JVMTI_ERROR_INVALID_CLASS => "invalid class",
        sys::JVMTI_ERROR_CLASS_NOT_PREPARED => "class not prepared",
        sys::JVMTI_ERROR_INVALID_METHODID => "invalid method id",
        sys::JVMTI_ERROR_NOT_AVAILABLE => "not available",
        sys::JVMTI_ERROR_MUST_POSSESS_CAPABILITY => "capability missing",
        sys::JVMTI_ERROR_ABSENT_INFORMATION => "absent information",
        sys::JVMTI_ERROR_NATIVE_METHOD => "native method",
        sys::JVMTI_ERROR_WRONG_PHASE => "wrong phase",
        sys::JVMTI_ERROR_UNATTACHED_THREAD => "unattached thread",
        _ => "other",
    }
}

/// Turns a JVMTI return code into a Result.
pub(crate) fn check(code: sys::jvmtiError) -> Result<(), JvmtiError> {
    if code == sys::JVMTI_ERROR_NONE {
        Ok(())
    } else {
        Err(JvmtiError::Code(code))
    }
}

/// A function of a JNI or JVMTI table, or the one error for its absence:
/// `function!(table, Name)` is `Result<fn, JvmtiError>`.
macro_rules! function {
    ($table:expr, $name:ident) => {
        $table
            .$name
            .ok_or($crate::jvm::JvmtiError::Missing(stringify!($name)))
    };
}
pub(crate) use function;

/// An all-empty capabilities set, to switch on the ones wanted.
pub fn no_capabilities() -> sys::jvmtiCapabilities {
    // SAFETY: jvmtiCapabilities is a bit field of plain integers; all zero is
    // "no capability".
    unsafe { std::mem::zeroed() }
}

/// A callback table with no callback set, to fill in the ones wanted.
pub fn no_callbacks() -> sys::jvmtiEventCallbacks {
    // SAFETY: the table is a struct of Option<fn>; all zero is all None.
    unsafe { std::mem::zeroed() }
}

/// A ClassFileLoadHook's work around its own `rewrite`: a named class's
/// internal name and bytes go in, and the bytes `rewrite` returns replace the
/// class (copied into JVMTI memory, which the JVM frees). Hidden classes (no
/// name) and empty class data are left alone.
#[allow(clippy::too_many_arguments)]
pub fn replace_class_file(
    jvmti: Jvmti,
    name: *const c_char,
    class_data_len: sys::jint,
    class_data: *const u8,
    new_class_data_len: *mut sys::jint,
    new_class_data: *mut *mut u8,
    rewrite: impl FnOnce(&str, &[u8]) -> Option<Vec<u8>>,
) {
    if name.is_null() || class_data.is_null() || class_data_len <= 0 {
        return;
    }
    let Some(name) = c_str(name) else {
        return;
    };
    let Some(new_bytes) = rewrite(&name, c_bytes(class_data, class_data_len)) else {
        return;
    };
    if let Some(mem) = jvmti.allocate_copy(&new_bytes) {
        set_out(new_class_data, mem);
        set_out(new_class_data_len, new_bytes.len() as sys::jint);
    }
}

/// A NUL-terminated string the JVM passed to a callback, or None for null.
pub fn c_str<'a>(s: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the JVM passes null (checked) or a NUL-terminated string that lives
    // through the callback.
    Some(unsafe { std::ffi::CStr::from_ptr(s) }.to_string_lossy())
}

/// `len` bytes the JVM passed to a callback (empty for null).
pub fn c_bytes<'a>(bytes: *const u8, len: sys::jint) -> &'a [u8] {
    if bytes.is_null() || len <= 0 {
        return &[];
    }
    // SAFETY: the JVM passes `len` readable bytes at `bytes` (checked non-null),
    // alive through the callback.
    unsafe { std::slice::from_raw_parts(bytes, len as usize) }
}

/// Stores `value` through an out-pointer the JVM passed to a callback.
pub fn set_out<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: the JVM passes a writable out-pointer (checked non-null).
        unsafe { *out = value };
    }
}

/// The JavaVM: the one handle valid on every thread.
#[derive(Clone, Copy, Debug)]
pub struct Vm(pub *mut sys::JavaVM);

// SAFETY: the JavaVM pointer is process-wide and its functions are thread-safe.
unsafe impl Send for Vm {}
// SAFETY: as above; the handle itself is never written.
unsafe impl Sync for Vm {}

/// The process's JavaVM once the agent was loaded (see [`Vm::remember`]).
static VM: std::sync::atomic::AtomicPtr<sys::JavaVM> =
    std::sync::atomic::AtomicPtr::new(null_mut());

impl Vm {
    /// Keeps the JavaVM for code that is handed none (a [`GlobalRef`] dropped).
    pub fn remember(self) {
        VM.store(self.0, std::sync::atomic::Ordering::Release);
    }

    /// The JavaVM given to [`Vm::remember`], if any.
    pub fn remembered() -> Option<Vm> {
        let vm = VM.load(std::sync::atomic::Ordering::Acquire);
        (!vm.is_null()).then_some(Vm(vm))
    }

    /// The calling thread's JNIEnv, when it is attached.
    pub fn jni(&self) -> Option<Jni> {
        let env = self.get_env(sys::JNI_VERSION_1_6);
        (!env.is_null()).then_some(Jni(env.cast()))
    }

    fn table(&self) -> &sys::JNIInvokeInterface_ {
        // SAFETY: a JavaVM handed to the agent points at the VM's function table.
        unsafe { &**self.0 }
    }

    /// The interface `version` for the calling thread, or null when the thread is
    /// not attached. Not for signal handlers: on a thread that never touched
    /// libjvm, its thread-local read allocates (see [`current`]).
    pub fn get_env(&self, version: u32) -> *mut c_void {
        let mut env = null_mut();
        let Some(get_env) = self.table().GetEnv else {
            return null_mut();
        };
        // SAFETY: valid VM and out-pointer.
        match unsafe { get_env(self.0, &mut env, version as sys::jint) } {
            0 => env,
            _ => null_mut(),
        }
    }

    /// A JVMTI environment for this agent.
    pub fn jvmti(&self) -> Option<Jvmti> {
        let env = self.get_env(sys::JVMTI_VERSION_1_2);
        (!env.is_null()).then_some(Jvmti(env.cast()))
    }

    /// Attaches the calling native thread as a daemon Java thread named `name`.
    pub fn attach_daemon(&self, name: &str) -> Option<Jni> {
        let name = CString::new(name).ok()?;
        let mut args = sys::JavaVMAttachArgs {
            version: sys::JNI_VERSION_1_6 as sys::jint,
            name: name.as_ptr() as *mut c_char,
            group: null_mut(),
        };
        let mut env = null_mut();
        let attach = self.table().AttachCurrentThreadAsDaemon?;
        // SAFETY: valid VM, out-pointer and args living through the call.
        let rc = unsafe {
            attach(
                self.0,
                &mut env,
                (&mut args as *mut sys::JavaVMAttachArgs).cast(),
            )
        };
        (rc == 0 && !env.is_null()).then_some(Jni(env.cast()))
    }

    /// Detaches the calling thread (which must hold no monitors or frames).
    pub fn detach(&self) {
        if let Some(detach) = self.table().DetachCurrentThread {
            // SAFETY: valid VM; detaching an unattached thread is a harmless error.
            unsafe { detach(self.0) };
        }
    }
}

/// The source line of `bci` given (start bci, line) pairs sorted by bci; 0 = unknown.
pub fn line_of(lines: &[(i64, u32)], bci: i64) -> u32 {
    let after = lines.partition_point(|(start, _)| *start <= bci);
    if after == 0 {
        return 0;
    }
    lines[after - 1].1
}

/// `Ljava/util/Map$Entry;` -> `java.util.Map$Entry`; `[I` -> `int[]`.
pub fn class_name_from_signature(sig: &str) -> String {
    let dims = sig.bytes().take_while(|b| *b == b'[').count();
    let base = match &sig[dims..] {
        "Z" => "boolean".to_string(),
        "B" => "byte".to_string(),
        "C" => "char".to_string(),
        "S" => "short".to_string(),
        "I" => "int".to_string(),
        "J" => "long".to_string(),
        "F" => "float".to_string(),
        "D" => "double".to_string(),
        "V" => "void".to_string(),
        s => s
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
            .unwrap_or(s)
            .replace('/', "."),
    };
    base + &"[]".repeat(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_from_the_last_entry_at_or_before_the_bci() {
        let lines = [(0, 10), (4, 11), (9, 14)];
        assert_eq!(line_of(&lines, 0), 10);
        assert_eq!(line_of(&lines, 3), 10);
        assert_eq!(line_of(&lines, 4), 11);
        assert_eq!(line_of(&lines, 100), 14);
        assert_eq!(line_of(&lines, -1), 0);
        assert_eq!(line_of(&[], 5), 0);
    }

    #[test]
    fn class_signatures_become_java_names() {
        assert_eq!(
            class_name_from_signature("Ljava/lang/String;"),
            "java.lang.String"
        );
        assert_eq!(
            class_name_from_signature("Ljava/util/Map$Entry;"),
            "java.util.Map$Entry"
        );
        assert_eq!(class_name_from_signature("[I"), "int[]");
        assert_eq!(
            class_name_from_signature("[[Ljava/lang/Object;"),
            "java.lang.Object[][]"
        );
    }

    #[test]
    fn errors_name_the_code() {
        assert_eq!(
            JvmtiError::Code(23).to_string(),
            "JVMTI error 23 (invalid method id)"
        );
    }
}
