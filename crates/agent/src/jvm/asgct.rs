//! AsyncGetCallTrace, HotSpot's async-signal-safe stack walker, which the cpu
//! and wall engines call from their signal handler.

use std::ffi::c_void;

use crate::ring::CallFrame;
use crate::sys;

/// HotSpot's trace record for AsyncGetCallTrace.
#[repr(C)]
struct CallTrace {
    env: *mut sys::JNIEnv,
    num_frames: i32,
    frames: *mut CallFrame,
}

/// `void AsyncGetCallTrace(ASGCT_CallTrace*, jint depth, void* ucontext)`.
type RawAsgct = unsafe extern "C" fn(*mut CallTrace, i32, *mut c_void);

/// The walker, found among the symbols libjvm exports.
#[derive(Clone, Copy, Debug)]
pub struct Asgct(RawAsgct);

impl Asgct {
    pub fn find() -> Option<Asgct> {
        // SAFETY: dlsym with RTLD_DEFAULT searches the global scope, where libjvm is.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr()) };
        if sym.is_null() {
            return None;
        }
        // SAFETY: HotSpot exports the symbol with exactly this signature.
        Some(Asgct(unsafe {
            std::mem::transmute::<*mut c_void, RawAsgct>(sym)
        }))
    }

    /// Walks the Java stack of the thread `ucontext` interrupted into `frames`;
    /// the number of frames, or a negative failure code. Async-signal-safe.
    ///
    /// # Safety
    /// `frames` has room for `depth` frames; `env` is the interrupted thread's
    /// JNIEnv; `ucontext` is the signal handler's.
    pub unsafe fn walk(
        &self,
        env: *mut sys::JNIEnv,
        frames: *mut CallFrame,
        depth: i32,
        ucontext: *mut c_void,
    ) -> i32 {
        let mut trace = CallTrace {
            env,
            num_frames: 0,
            frames,
        };
        // SAFETY: the caller's promise; the walker validates the thread and
        // context itself and reports failures in num_frames.
        unsafe { (self.0)(&mut trace, depth, ucontext) };
        trace.num_frames
    }
}
