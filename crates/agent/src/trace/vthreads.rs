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
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::probe::{self, Local};
use crate::jvm::entry::{guarded_in, TRACE};
use crate::jvm::{Jni, Jvmti, ThreadInfo, Vm};
use crate::sys;
use crate::threads::gettid;
use crate::tid_slots::TidSlots;

/// JVMTI_VERSION_21: the first with virtual threads.
const JVMTI_VERSION_21: u32 = 0x3015_0000;

/// What is known of virtual threads, process-wide (the JVMTI callbacks are
/// handed no state of ours).
struct VirtualThreads {
    /// Whether virtual-thread transitions are followed (set up once per
    /// process).
    enabled: OnceLock<bool>,
    /// Set while a recording samples or records events: virtual threads are
    /// then named for the writer even when no tracing session runs.
    followed: AtomicBool,
    /// Which virtual thread each carrier runs now (its Java id), for the signal
    /// handler. Only the carrier itself writes its slot (the mount callbacks
    /// run on it) and the handler reads it on that same thread. Java ids above
    /// 2^32 are not kept: such a thread's samples stay the carrier's.
    mounts: TidSlots,
    /// Set while snapshots are taken: the mounted virtual threads are then kept
    /// as references too (`mounted_refs`), so a snapshot can take their stacks.
    snapshots: AtomicBool,
    /// Carrier tid -> (the mounted virtual thread's Java id, a global reference
    /// to it), while `snapshots` is set. A carrier's own stack shows only
    /// `Continuation.run` above its pool's frames while a virtual thread runs.
    mounted_refs: Mutex<Option<HashMap<u32, (i64, usize)>>>,
    /// Virtual threads seen but not yet named in the recording: Java id -> (its
    /// name, empty when unset; the Linux id of the carrier it started on).
    names: Mutex<Option<HashMap<i64, (String, u32)>>>,
}

static VIRTUAL: VirtualThreads = VirtualThreads {
    enabled: OnceLock::new(),
    followed: AtomicBool::new(false),
    mounts: TidSlots::new(),
    snapshots: AtomicBool::new(false),
    mounted_refs: Mutex::new(None),
    names: Mutex::new(None),
};

/// The Java id of the virtual thread mounted on carrier `tid` now, or 0.
/// Async-signal-safe: one atomic load.
pub fn mounted_on(tid: u32) -> i64 {
    i64::from(VIRTUAL.mounts.get(tid))
}

/// Carrier `tid` now runs virtual thread `java_id` (0: none).
fn set_mounted(tid: u32, java_id: i64) {
    match u32::try_from(java_id) {
        Ok(id) if id != 0 => VIRTUAL.mounts.set(tid, id),
        _ => VIRTUAL.mounts.clear(tid),
    }
}

fn mounted_refs() -> std::sync::MutexGuard<'static, Option<HashMap<u32, (i64, usize)>>> {
    VIRTUAL
        .mounted_refs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Snapshots want the mounted virtual threads (`on`), or no more.
pub fn keep_mounted_refs(on: bool, jni: Jni) {
    VIRTUAL.snapshots.store(on, Ordering::Relaxed);
    if !on {
        for (_, r) in mounted_refs().take().unwrap_or_default().into_values() {
            jni.delete_global(r as sys::jobject);
        }
    }
}

/// The virtual thread mounted on carrier `tid`, as its Java id and a local
/// reference of the caller's (`jni`), when snapshots keep them.
pub fn mounted_ref(tid: u32, jni: Jni) -> Option<(i64, sys::jthread)> {
    let guard = mounted_refs();
    let &(id, r) = guard.as_ref()?.get(&tid)?;
    let local = jni.new_local(r as sys::jobject);
    drop(guard);
    (!local.is_null()).then_some((id, local))
}

fn update_mounted_ref(jni: Jni, tid: u32, mounted: Option<(i64, sys::jthread)>) {
    if !VIRTUAL.snapshots.load(Ordering::Relaxed) {
        return;
    }
    let new = mounted.map(|(id, t)| (id, jni.new_global(t) as usize));
    let old = {
        let mut guard = mounted_refs();
        let map = guard.get_or_insert_with(HashMap::new);
        match new {
            Some(n) => map.insert(tid, n),
            None => map.remove(&tid),
        }
    };
    if let Some((_, r)) = old {
        jni.delete_global(r as sys::jobject);
    }
}

/// Follows virtual threads for a recording's samples and events (`on`), or
/// stops naming them when it ends; true when the JVM has virtual threads.
pub fn follow(on: bool) -> bool {
    VIRTUAL.followed.store(on, Ordering::Relaxed);
    !on || enable()
}

/// True while someone records what virtual threads do.
fn wanted() -> bool {
    VIRTUAL.followed.load(Ordering::Relaxed) || probe::session_running()
}

fn names() -> std::sync::MutexGuard<'static, Option<HashMap<i64, (String, u32)>>> {
    VIRTUAL.names.lock().unwrap_or_else(|e| e.into_inner())
}

/// Follows virtual-thread transitions from now on, when the JVM has them; true
/// when it does. Runs on a Java thread when tracing starts.
pub fn enable() -> bool {
    *VIRTUAL.enabled.get_or_init(|| {
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
/// `carrier` is the Linux id of the thread it runs on now.
fn identify(jvmti: *mut sys::jvmtiEnv, jni: Jni, vthread: sys::jthread, carrier: u32) -> i64 {
    let id = crate::jvm::thread::java_id(jni, vthread);
    if id == 0 || !wanted() {
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
        .or_insert((name, carrier));
    id
}

/// The recording's description of virtual thread `java_id` (taken once):
/// its name, or `virtual-<id>` when it has none, and the carrier it started on
/// (`carrier` names a Linux thread id).
pub fn description(java_id: i64, carrier_name: &dyn Fn(u32) -> Option<String>) -> ThreadInfo {
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
    (mounts, f): (bool, fn(&mut Local, i64)),
) {
    guarded_in(&TRACE, name, (), || {
        if env.is_null() || vthread.is_null() {
            return;
        }
        let tid = gettid();
        let id = identify(jvmti, Jni(env), vthread, tid);
        // Kept whether or not anything records now: a recording that starts
        // while this virtual thread runs finds it mounted.
        // The carrier's request slot follows its mount slot in the order that
        // never shows the carrier (mount slot 0) with the virtual thread's
        // request to a signal between the two stores: set the mount first,
        // clear the request first.
        let requests = crate::remote::requests();
        if mounts {
            set_mounted(tid, id);
            compiler_fence(Ordering::SeqCst);
            requests.mounted(tid, id);
        } else {
            requests.mounted(tid, 0);
            compiler_fence(Ordering::SeqCst);
            set_mounted(tid, 0);
        }
        let mounted = (mounts && id != 0).then_some((id, vthread));
        update_mounted_ref(Jni(env), tid, mounted);
        if mounts {
            crate::events::park::virtual_thread_mounted(Jni(env), vthread, id);
        }
        if id != 0 && probe::session_running() {
            probe::virtual_thread(env, |l| f(l, id));
        }
    })
}

/// VirtualThreadStart: on its carrier, as it first runs.
unsafe extern "C" fn on_start(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadStart", jvmti, env, t, (true, Local::mount))
}

/// VirtualThreadMount: it continues on this carrier.
unsafe extern "C" fn on_mount(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadMount", jvmti, env, t, (true, Local::mount))
}

/// VirtualThreadUnmount: it yields this carrier (a sleep, a park, blocking I/O).
unsafe extern "C" fn on_unmount(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition(
        "VirtualThreadUnmount",
        jvmti,
        env,
        t,
        (false, Local::unmount),
    )
}

/// VirtualThreadEnd: its last moment on its carrier.
unsafe extern "C" fn on_end(jvmti: *mut sys::jvmtiEnv, env: *mut sys::JNIEnv, t: sys::jthread) {
    transition("VirtualThreadEnd", jvmti, env, t, (false, Local::end))
}
