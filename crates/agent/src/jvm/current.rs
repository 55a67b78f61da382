//! The calling thread's JNIEnv, found without calling into the JVM: for
//! signal handlers.
//!
//! JNI's GetEnv reads libjvm's thread-local variable. libjvm is loaded with
//! dlopen, so its thread-local storage is allocated per thread on first use,
//! by the C library, with malloc. A signal that lands in malloc on a thread
//! that never touched libjvm's storage (a native thread of the application,
//! or one of the agent's own) and calls GetEnv there takes malloc's lock a
//! second time and hangs the thread for good. HotSpot also keeps every thread
//! it knows under a POSIX thread-specific key, which reads without
//! allocating; a JavaThread holds its JNIEnv at a fixed offset, and a JNIEnv
//! starts with the VM's one JNI function table.

use super::{Jni, Jvmti};

/// Where HotSpot keeps the current thread, and how to tell a JavaThread.
#[derive(Debug, Clone, Copy)]
pub struct CurrentEnv {
    key: libc::pthread_key_t,
    env_offset: usize,
    functions: usize,
}

/// Keys the C library hands out (PTHREAD_KEYS_MAX on Linux).
const KEYS: libc::pthread_key_t = 1024;

impl CurrentEnv {
    /// Found from the calling thread, attached to the VM: None when no key
    /// holds its JavaThread (not HotSpot, or a layout not known).
    pub fn find(jvmti: Jvmti, jni: Jni) -> Option<CurrentEnv> {
        let env = jni.0 as usize;
        let thread = java_thread(jvmti, jni)?;
        let env_offset = env.checked_sub(thread).filter(|&o| o < 1 << 16)?;
        // SAFETY: a JNIEnv's first word is its function table.
        let functions = unsafe { *(env as *const usize) };
        // SAFETY: pthread_getspecific reads this thread's own slots; a key
        // never created reads as null.
        let key =
            (0..KEYS).find(|&k| unsafe { libc::pthread_getspecific(k) } as usize == thread)?;
        Some(CurrentEnv {
            key,
            env_offset,
            functions,
        })
    }

    /// The calling thread's JNIEnv, 0 when it is not a JavaThread (a native
    /// thread, or one of the VM's own that are not: GC, VM thread).
    /// Async-signal-safe: one thread-specific read and one fault-free load.
    #[inline]
    pub fn get(&self) -> usize {
        // SAFETY: reads this thread's own slot, allocating nothing.
        let thread = unsafe { libc::pthread_getspecific(self.key) } as usize;
        if thread == 0 {
            return 0;
        }
        let env = thread.wrapping_add(self.env_offset);
        match crate::safe::load(env) {
            Some(f) if f == self.functions => env,
            _ => 0,
        }
    }
}

/// The calling thread's JavaThread*: its java.lang.Thread's `eetop`.
pub fn java_thread(jvmti: Jvmti, jni: Jni) -> Option<usize> {
    let thread = jvmti.current_thread()?;
    let class = jni.find_class("java/lang/Thread");
    let field = jni.field_id(class, "eetop", "J");
    jni.delete_local(class);
    let eetop = if field.is_null() {
        0
    } else {
        jni.long_field(thread, field) as usize
    };
    jni.delete_local(thread);
    (eetop != 0).then_some(eetop)
}

/// A signal handler's way to its thread's JNIEnv: HotSpot's key where it
/// was found, else GetEnv (safe on threads that touched libjvm before).
#[derive(Clone, Copy)]
pub enum EnvOf {
    Key(CurrentEnv),
    GetEnv(super::Vm),
}

impl EnvOf {
    /// Found from the calling thread, attached to the VM.
    pub fn find(vm: super::Vm, jvmti: Jvmti, jni: Jni) -> EnvOf {
        CurrentEnv::find(jvmti, jni).map_or(EnvOf::GetEnv(vm), EnvOf::Key)
    }

    /// The calling thread's JNIEnv, 0 when it has none.
    #[inline]
    pub fn get(&self) -> usize {
        match self {
            EnvOf::Key(c) => c.get(),
            EnvOf::GetEnv(vm) => vm.get_env(crate::sys::JNI_VERSION_1_6) as usize,
        }
    }
}
