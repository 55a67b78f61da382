//! Virtual threads (JDK 21+): a carrier thread runs many virtual threads, each
//! of which may unmount in the middle of a traced call (a sleep, a park) and
//! resume on another carrier. The probes' rings and shadow stacks belong to OS
//! threads, so at every mount the carrier takes the mounted virtual thread's own
//! ring and stack ([`super::probe::Local::mount`]) and gives them back at the
//! unmount: each virtual thread's events stay in one ring, in order, and the
//! writer records them as a thread of their own.
//!
//! The transitions come from a JVMTI environment of this module's own (it
//! replaces its callbacks freely): VirtualThreadStart/End and HotSpot's
//! VirtualThreadMount/Unmount extension events, with `can_support_virtual_threads`.
//! A JVM without them (JDK 17) refuses the JDK 21 environment version and
//! nothing changes.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::probe::{self, Local};
use crate::jvm::entry::{guarded_in, TRACE};
use crate::jvm::{Jni, Jvmti, ThreadInfo, Vm};
use crate::sys;
use crate::threads::gettid;

/// JVMTI_VERSION_21: the first with virtual threads.
const JVMTI_VERSION_21: u32 = 0x3015_0000;

/// Whether virtual-thread transitions are followed (set up once per process).
static ENABLED: OnceLock<bool> = OnceLock::new();

/// Virtual threads seen but not yet named in the recording: Java id -> (its
/// name, empty when unset; the Linux id of the carrier it started on).
static NAMES: Mutex<Option<HashMap<i64, (String, u32)>>> = Mutex::new(None);

fn names() -> std::sync::MutexGuard<'static, Option<HashMap<i64, (String, u32)>>> {
    NAMES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Follows virtual-thread transitions from now on, when the JVM has them; true
/// when it does. Runs on a Java thread when tracing starts.
pub fn enable() -> bool {
    *ENABLED.get_or_init(|| {
        let Some(vm) = Vm::remembered() else {
            return false;
        };
        let env = vm.get_env(JVMTI_VERSION_21);
        if env.is_null() {
            return false; // before JDK 21
        }
        let jvmti = Jvmti(env.cast());
        let ok = jvmti.add_virtual_thread_capability().is_ok()
            && jvmti
                .set_virtual_thread_lifecycle_callbacks(on_start, on_end)
                .is_ok()
            && jvmti.set_virtual_thread_mount_callbacks(on_mount, on_unmount);
        if !ok {
            jvmti.dispose();
        }
        ok
    })
}

/// The Java id of `vthread`, and its name kept for the writer at its first
/// sighting in a session.
fn identify(jvmti: *mut sys::jvmtiEnv, jni: Jni, vthread: sys::jthread) -> i64 {
    let id = crate::jvm::thread::java_id(jni, vthread);
    if id == 0 || !probe::session_running() {
        return id;
    }
    if names().as_ref().is_some_and(|m| m.contains_key(&id)) {
        return id;
    }
    let name = Jvmti(jvmti)
        .thread_info(jni, vthread)
        .map(|i| i.name)
        .unwrap_or_default();
    names()
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_insert((name, gettid()));
    id
}

/// The recording's description of virtual thread `java_id` (taken once):
/// its name, or `virtual-<id>` when it has none, and the carrier it started on
/// (`carrier` names a Linux thread id).
pub fn description(java_id: i64, carrier_name: impl Fn(u32) -> Option<String>) -> ThreadInfo {
    let (name, carrier) = names()
        .as_mut()
        .and_then(|m| m.remove(&java_id))
        .unwrap_or_default();
    let name = if name.is_empty() {
        format!("virtual-{java_id}")
    } else {
        name
    };
    let group = match carrier_name(carrier).filter(|_| carrier != 0) {
        Some(c) => format!("virtual (carrier {c})"),
        None => "virtual".to_string(),
    };
    ThreadInfo {
        name,
        daemon: true,
        group,
        parent: String::new(),
    }
}

fn transition(
    name: &'static str,
    jvmti: *mut sys::jvmtiEnv,
    env: *mut sys::JNIEnv,
    vthread: sys::jthread,
    f: fn(&mut Local, i64),
) {
    guarded_in(&TRACE, name, (), || {
        if !probe::session_running() || env.is_null() || vthread.is_null() {
            return;
        }
        let id = identify(jvmti, Jni(env), vthread);
        if id != 0 {
            probe::virtual_thread(env, |l| f(l, id));
        }
    })
}

/// VirtualThreadStart: on its carrier, as it first runs.
unsafe extern "C" fn on_start(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadStart", jvmti, env, t, Local::mount)
}

/// VirtualThreadMount: it continues on this carrier.
unsafe extern "C" fn on_mount(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadMount", jvmti, env, t, Local::mount)
}

/// VirtualThreadUnmount: it yields this carrier (a sleep, a park, blocking I/O).
unsafe extern "C" fn on_unmount(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadUnmount", jvmti, env, t, Local::unmount)
}

/// VirtualThreadEnd: its last moment on its carrier.
unsafe extern "C" fn on_end(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadEnd", jvmti, env, t, Local::end)
}
