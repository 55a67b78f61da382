//! The breakpoint environment's one dispatch: a registry from a method to the
//! handler of its breakpoints. The captures (RMI, HTTP, the HTTP client, the
//! frameworks, parks) register their methods as their classes are prepared and
//! never compare methods themselves; [`install`] points the environment's
//! Breakpoint callback at the registry. No capture asks for frame pops: in
//! HotSpot a thread waiting for one runs interpreted only, so returns are
//! breakpoints too.
//!
//! HotSpot grants the breakpoint capability to one environment only, so every
//! capture shares the environment that asked first.

use std::sync::RwLock;

use super::entry::{guarded_in, BREAKPOINTS};
use super::{Jni, Jvmti};
use crate::sys;

/// A method's entry or return reached, on the thread that reached it: a
/// breakpoint that fired, or a call the remote captures inserted into the
/// method's code (`remote::calls`).
#[derive(Clone, Copy)]
pub struct Hit {
    pub jvmti: Jvmti,
    pub jni: Jni,
    pub thread: sys::jthread,
    /// Null for an inserted call (its handler is known by its site).
    pub method: sys::jmethodID,
    /// 0 at the method's entry.
    pub location: sys::jlocation,
    /// An inserted call's `Object[]` of the method's local slots at its entry
    /// (see `jscope_bytecode::call_with_arguments`); null at a return and for
    /// breakpoints.
    pub args: sys::jobject,
    /// Reached through an inserted call: its native frame is the thread's top
    /// frame, above the method's own.
    pub inserted: bool,
    /// The frame's depth as the inserted calls count it (the methods with
    /// inserted calls open below it on this thread); None: JVMTI counts it.
    pub depth: Option<i32>,
}

/// What to run for a method's breakpoints.
#[derive(Clone, Copy)]
pub struct Handler {
    pub on_breakpoint: fn(&Hit),
}

/// (method id, handler); a few dozen entries at most, read on every breakpoint.
static REGISTRY: RwLock<Vec<(usize, Handler)>> = RwLock::new(Vec::new());

/// Routes `method`'s breakpoints to `handler`; a method
/// registered again keeps its first handler.
pub fn register(method: sys::jmethodID, handler: Handler) {
    let m = method as usize;
    if m == 0 {
        return;
    }
    let mut list = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if !list.iter().any(|(k, _)| *k == m) {
        list.push((m, handler));
    }
}

/// Sets a breakpoint at `location` of `method` and routes it to `handler`.
pub fn set(jvmti: Jvmti, method: sys::jmethodID, location: i64, handler: Handler) -> bool {
    register(method, handler);
    jvmti.set_breakpoint(method, location)
}

fn handler_of(method: sys::jmethodID) -> Option<Handler> {
    let m = method as usize;
    let list = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    list.iter().find(|(k, _)| *k == m).map(|(_, h)| *h)
}

/// Points `cb`'s Breakpoint callback at the registry.
pub fn install(cb: &mut sys::jvmtiEventCallbacks) {
    cb.Breakpoint = Some(on_breakpoint);
}

unsafe extern "C" fn on_breakpoint(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    method: sys::jmethodID,
    location: sys::jlocation,
) {
    guarded_in(&BREAKPOINTS, "breakpoint", (), || {
        if let Some(handler) = handler_of(method) {
            (handler.on_breakpoint)(&Hit {
                jvmti: Jvmti(jvmti),
                jni: Jni(jni),
                thread,
                method,
                location,
                args: std::ptr::null_mut(),
                inserted: false,
                depth: None,
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    static CALLED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

    fn first(_: &Hit) {
        CALLED.store(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn second(_: &Hit) {
        CALLED.store(2, std::sync::atomic::Ordering::Relaxed);
    }

    #[test]
    fn a_method_keeps_its_first_handler_and_unknown_methods_have_none() {
        let method = 0x5eed_usize as sys::jmethodID;
        register(
            method,
            Handler {
                on_breakpoint: first,
            },
        );
        register(
            method,
            Handler {
                on_breakpoint: second,
            },
        );
        let h = handler_of(method).expect("registered");
        (h.on_breakpoint)(&Hit {
            jvmti: Jvmti(std::ptr::null_mut()),
            jni: Jni(std::ptr::null_mut()),
            thread: std::ptr::null_mut(),
            method,
            location: 0,
            args: std::ptr::null_mut(),
            inserted: false,
            depth: None,
        });
        assert_eq!(CALLED.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(handler_of(0x5eee_usize as sys::jmethodID).is_none());
        register(std::ptr::null_mut(), h);
        assert!(handler_of(std::ptr::null_mut()).is_none());
    }
}
