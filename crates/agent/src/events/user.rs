//! User events (issue 5 item 2): the bootstrap class `jscope.Events`, synthesised
//! at run time like tracing's probe class and bound to the natives below, so an
//! application compiled against any declaration of it (a stub is enough) calls the
//! agent with no jar on its class path:
//!
//! ```java
//! int id = jscope.Events.register("request");   // same name, same id
//! jscope.Events.log(id);  jscope.Events.log(id, bytes);
//! jscope.Events.begin(id); ...; jscope.Events.end(id);
//! ```
//!
//! Each thread logs into its own single-producer ring (no lock, no allocation
//! after its first event); the writer drains the rings.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use jscope_bytecode::ClassFile;
use jscope_format::UserEventKind;

use crate::clock::{ProbeClock, StampMapper};
use crate::java_threads::ThreadKey;
use crate::jvm::entry::{guarded_in, USER_EVENTS};
use crate::jvm::{Jni, Jvmti};
use crate::sys;

pub const CLASS_NAME: &str = "jscope/Events";

/// (name, descriptor) of each native, in the order of [`natives`].
const METHODS: [(&str, &str); 5] = [
    ("register", "(Ljava/lang/String;)I"),
    ("log", "(I)V"),
    ("log", "(IJ)V"),
    ("begin", "(I)V"),
    ("end", "(I)V"),
];

#[derive(Debug, thiserror::Error)]
pub enum UserClassError {
    #[error("cannot build jscope.Events: {0}")]
    Build(#[from] jscope_bytecode::ClassError),
    #[error("cannot define jscope.Events in the bootstrap loader (an application class of that name loaded first?)")]
    Define,
    #[error("cannot bind the natives of jscope.Events")]
    Natives,
}

/// The class file: five `public static native` methods, no code.
pub fn class_bytes() -> Result<Vec<u8>, jscope_bytecode::ClassError> {
    ClassFile::natives_only(CLASS_NAME, &METHODS)
}

fn natives() -> [*mut c_void; 5] {
    [
        native_register as *mut c_void,
        native_log as *mut c_void,
        native_log_value as *mut c_void,
        native_begin as *mut c_void,
        native_end as *mut c_void,
    ]
}

/// What the natives, the event session and the writer share, in one static
/// (the natives find it without a lock). All of it lives as long as the process:
/// the class is defined once, names keep their ids across recordings, and a
/// thread keeps its ring.
pub(crate) struct UserState {
    /// The class, defined once per process (a second definition would fail).
    class: OnceLock<usize>,
    enabled: AtomicBool,
    /// Events are stamped with the probe clock (the TSC when the kernel trusts
    /// it): a few ns instead of clock_gettime's ~20, which is most of the 50 ns
    /// budget.
    clock: ProbeClock,
    names: Mutex<Option<Names>>,
    rings: Mutex<Vec<Arc<UserRing>>>,
    /// Events dropped by threads whose rings were forgotten.
    dropped_ended: AtomicU64,
}

impl UserState {
    pub(crate) const fn new() -> UserState {
        UserState {
            class: OnceLock::new(),
            enabled: AtomicBool::new(false),
            clock: ProbeClock::new(),
            names: Mutex::new(None),
            rings: Mutex::new(Vec::new()),
            dropped_ended: AtomicU64::new(0),
        }
    }
}

/// Defines `jscope.Events` in the bootstrap loader and binds its natives.
pub fn install(_jvmti: Jvmti, jni: Jni) -> Result<(), UserClassError> {
    if super::STATE.user.class.get().is_some() {
        return Ok(());
    }
    let bytes = class_bytes()?;
    let class = jni.define_boot_class(CLASS_NAME, &bytes);
    if class.is_null() {
        return Err(UserClassError::Define);
    }
    let methods: Vec<_> = METHODS
        .iter()
        .zip(natives())
        .map(|((n, d), f)| (*n, *d, f))
        .collect();
    if !jni.register_natives(class, &methods) {
        jni.delete_local(class);
        return Err(UserClassError::Natives);
    }
    let global = jni.new_global(class);
    jni.delete_local(class);
    let _ = super::STATE.user.class.set(global as usize);
    Ok(())
}

pub fn set_enabled(on: bool) {
    if on {
        super::STATE.user.clock.start();
    }
    super::STATE.user.enabled.store(on, Ordering::Release);
}

/// Maps the stamps of events logged so far to CLOCK_MONOTONIC ns.
pub fn stamp_mapper() -> StampMapper {
    super::STATE.user.clock.mapper()
}

/// Registered names; id = index + 1. Ids stay valid for the whole process, so
/// a class that registered its events once keeps logging across recordings.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    ids: HashMap<String, u32>,
}

/// The id of `name`, registering it on first use.
pub fn register(name: &str) -> u32 {
    let mut guard = super::STATE
        .user
        .names
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let names = guard.get_or_insert_with(Names::default);
    if let Some(&id) = names.ids.get(name) {
        return id;
    }
    names.list.push(name.to_string());
    let id = names.list.len() as u32;
    names.ids.insert(name.to_string(), id);
    id
}

/// Names registered from id `from` (1-based) on, with their ids.
pub fn names_from(from: u32) -> Vec<(u32, String)> {
    let guard = super::STATE
        .user
        .names
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let Some(names) = guard.as_ref() else {
        return Vec::new();
    };
    names
        .list
        .iter()
        .enumerate()
        .skip(from.saturating_sub(1) as usize)
        .map(|(i, n)| (i as u32 + 1, n.clone()))
        .collect()
}

/// One logged event as the thread stores it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct UserRaw {
    /// TSC or CLOCK_MONOTONIC ns; see [`StampMapper`].
    pub ticks: u64,
    pub value: i64,
    pub event: u32,
    pub kind: u32,
}

/// Events a thread may have waiting for the writer before new ones are dropped.
pub const RING_EVENTS: usize = 1 << 14;

/// One thread's user events on their way to the writer.
pub type UserRing = crate::thread_ring::ThreadRing<UserRaw>;

// SAFETY: UserRaw is plain integers; all-zero bytes are a valid value.
unsafe impl crate::thread_ring::ZeroValid for UserRaw {}

pub fn rings() -> std::sync::MutexGuard<'static, Vec<Arc<UserRing>>> {
    super::STATE
        .user
        .rings
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Forgets the rings of ended threads once drained, keeping their drop counts.
pub fn forget_ended(rings: &mut Vec<Arc<UserRing>>) {
    crate::thread_ring::forget_ended(rings, &super::STATE.user.dropped_ended, |_| ());
}

pub fn dropped() -> u64 {
    let live: u64 = rings()
        .iter()
        .map(|r| r.dropped.load(Ordering::Relaxed))
        .sum();
    live + super::STATE.user.dropped_ended.load(Ordering::Relaxed)
}

/// A thread's ring and its producer-side room (see `ThreadRing::push`); marks
/// the ring ended when its thread exits.
struct Local {
    ring: Arc<UserRing>,
    room: usize,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.ring.ended.store(true, Ordering::Release);
    }
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

#[inline]
fn log(env: *mut sys::JNIEnv, event: i32, kind: UserEventKind, value: i64) {
    if !super::STATE.user.enabled.load(Ordering::Relaxed) || event <= 0 {
        return;
    }
    let e = UserRaw {
        ticks: super::STATE.user.clock.now(),
        value,
        event: event as u32,
        kind: kind as u32,
    };
    let _ = LOCAL.try_with(|l| {
        let Ok(mut slot) = l.try_borrow_mut() else {
            return; // reached again from inside the ring's creation
        };
        if let Some(local) = slot.as_mut() {
            local.ring.push(e, &mut local.room);
            return;
        }
        drop(slot);
        let ring = Arc::new(UserRing::new(RING_EVENTS, ThreadKey::current(Jni(env))));
        let mut local = Local { ring, room: 0 };
        local.ring.push(e, &mut local.room);
        rings().push(local.ring.clone());
        if let Ok(mut slot) = l.try_borrow_mut() {
            *slot = Some(local);
        }
    });
}

extern "C" fn native_register(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    name: sys::jstring,
) -> sys::jint {
    guarded_in(&USER_EVENTS, "Events.register", 0, || {
        match Jni(env).string_of(name) {
            Some(name) => register(&name) as sys::jint,
            None => 0,
        }
    })
}

extern "C" fn native_log(env: *mut sys::JNIEnv, _class: sys::jclass, id: sys::jint) {
    guarded_in(&USER_EVENTS, "Events.log", (), || {
        log(env, id, UserEventKind::Instant, 0)
    })
}

extern "C" fn native_log_value(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    id: sys::jint,
    value: sys::jlong,
) {
    guarded_in(&USER_EVENTS, "Events.logValue", (), || {
        log(env, id, UserEventKind::Instant, value)
    })
}

extern "C" fn native_begin(env: *mut sys::JNIEnv, _class: sys::jclass, id: sys::jint) {
    guarded_in(&USER_EVENTS, "Events.begin", (), || {
        log(env, id, UserEventKind::Begin, 0)
    })
}

extern "C" fn native_end(env: *mut sys::JNIEnv, _class: sys::jclass, id: sys::jint) {
    guarded_in(&USER_EVENTS, "Events.end", (), || {
        log(env, id, UserEventKind::End, 0)
    })
}

/// Distinct names with their ids, for tests and counters.
#[cfg(test)]
pub fn registered() -> HashMap<String, u32> {
    names_from(1).into_iter().map(|(i, n)| (n, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_has_the_five_natives() {
        let bytes = class_bytes().unwrap();
        let class = ClassFile::parse(&bytes).unwrap();
        assert_eq!(class.name().unwrap(), CLASS_NAME);
        let methods: Vec<(String, String)> = class
            .methods
            .iter()
            .map(|m| {
                (
                    class.pool.utf8(m.name_index).unwrap(),
                    class.pool.utf8(m.descriptor_index).unwrap(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = METHODS
            .iter()
            .map(|(n, d)| (n.to_string(), d.to_string()))
            .collect();
        assert_eq!(methods, expected);
    }

    #[test]
    fn names_register_once() {
        let a = register("unit-a");
        let b = register("unit-b");
        assert_ne!(a, b);
        assert_eq!(register("unit-a"), a);
        assert!(names_from(b).iter().any(|(i, n)| *i == b && n == "unit-b"));
        assert_eq!(registered()["unit-a"], a);
    }

    #[test]
    fn a_ring_keeps_order_and_counts_drops() {
        let r = UserRing::new(RING_EVENTS, ThreadKey::new(1, 2, 3));
        let mut room = 0;
        for i in 0..RING_EVENTS as u64 + 3 {
            let e = UserRaw {
                ticks: i,
                ..Default::default()
            };
            r.push(e, &mut room);
        }
        assert_eq!(r.dropped.load(Ordering::Relaxed), 3);
        let mut seen = Vec::new();
        r.drain(|e| seen.push(e.ticks));
        assert_eq!(seen.len(), RING_EVENTS);
        assert!(seen.windows(2).all(|w| w[0] + 1 == w[1]) && r.is_empty());
    }
}
