//! The JVMTI callbacks of the events. Each stamps the time, gathers what only
//! the calling thread can see (its stack, the object's class) and queues a raw
//! event; the writer names everything later. Each runs its whole body in the
//! events engine's guard (`jvm::entry`), so none ever unwinds into the JVM, and
//! the GC-time ones (GarbageCollectionStart/Finish, ObjectFree) only read the
//! clock and store into lock-free slots (the guard allocates nothing).

use std::sync::atomic::Ordering;

use super::queue::{RawEvent, RawKind};
use super::{on, Kinds, STATE};
use crate::clock;
use crate::java_threads::ThreadKey;
use crate::jvm::entry::{guarded_in, EVENTS};
use crate::jvm::{thread, Jni, Jvmti};
use crate::sys;

use super::WAITS;

/// Monitor object ids carry this bit, so ObjectFree of a tagged monitor is not
/// taken for the free of a sampled allocation.
pub const MONITOR_TAG: u64 = 1 << 62;

/// Sets the event callbacks (the agent installs one callback table for all).
pub fn install(cb: &mut sys::jvmtiEventCallbacks) {
    cb.MonitorContendedEnter = Some(monitor_contended_enter);
    cb.MonitorContendedEntered = Some(monitor_contended_entered);
    cb.MonitorWait = Some(monitor_wait);
    cb.MonitorWaited = Some(monitor_waited);
    cb.GarbageCollectionStart = Some(gc_start);
    cb.GarbageCollectionFinish = Some(gc_finish);
    cb.SampledObjectAlloc = Some(sampled_object_alloc);
    cb.ObjectFree = Some(object_free);
    cb.CompiledMethodLoad = Some(compiled_method_load);
    cb.CompiledMethodUnload = Some(compiled_method_unload);
}

/// Bit of `can_generate_sampled_allocation_events` in jvmtiCapabilities (JDK 11+;
/// the generated bindings predate its setter).
const CAN_SAMPLE_ALLOCATIONS_BIT: usize = 43;

/// The capabilities the chosen kinds need (HotSpot grants them in the live phase
/// too, so attaching works).
pub fn capabilities(kinds: Kinds, object_ages: bool) -> sys::jvmtiCapabilities {
    let mut caps = crate::jvm::no_capabilities();
    if kinds.contains(Kinds::MONITORS) || kinds.contains(Kinds::WAITS) {
        caps.set_can_generate_monitor_events(1);
        caps.set_can_tag_objects(1);
        caps.set_can_get_monitor_info(1);
    }
    if kinds.contains(Kinds::GC) {
        caps.set_can_generate_garbage_collection_events(1);
    }
    if kinds.contains(Kinds::ALLOC) {
        caps._bitfield_1.set_bit(CAN_SAMPLE_ALLOCATIONS_BIT, true);
        if object_ages {
            caps.set_can_tag_objects(1);
            caps.set_can_generate_object_free_events(1);
        }
    }
    if kinds.contains(Kinds::JIT) {
        caps.set_can_generate_compiled_method_load_events(1);
    }
    caps
}

pub(super) fn push(jni: *mut sys::JNIEnv, java_thread: sys::jthread, ticks: u64, kind: RawKind) {
    push_key(ThreadKey::of(Jni(jni), java_thread), ticks, kind);
}

/// The request the calling thread serves now, 0 for none. Read on the thread
/// itself, when its event happens: a pooled thread whose request ended reads
/// none (or the request it serves next), never the finished one.
pub(super) fn current_request() -> u32 {
    crate::remote::requests().current(crate::threads::gettid())
}

/// The request the thread of `key`, the calling thread, serves now (its Linux
/// id read once for both the event's thread and its request).
pub(super) fn request_of(key: &ThreadKey) -> u32 {
    crate::remote::requests().current(key.tid)
}

/// Queues an event of the calling thread `java_thread`, serving the request
/// it serves now: `kind` is given that request.
fn push_serving(
    jni: *mut sys::JNIEnv,
    java_thread: sys::jthread,
    ticks: u64,
    kind: impl FnOnce(u32) -> RawKind,
) {
    let key = ThreadKey::of(Jni(jni), java_thread);
    let kind = kind(request_of(&key));
    push_key(key, ticks, kind);
}

/// Queues an event of the thread `thread` names.
pub(super) fn push_key(thread: ThreadKey, ticks: u64, kind: RawKind) {
    STATE.queues.push(RawEvent {
        thread,
        ticks,
        kind,
    });
}

/// ThreadStart, called by the agent's own callback on the new thread.
pub fn thread_started(jni: *mut sys::JNIEnv, thread: sys::jthread) {
    guarded_in(&EVENTS, "events_thread_start", (), || {
        if on(Kinds::THREADS) {
            push(jni, thread, clock::monotonic_ns(), RawKind::ThreadStart);
        }
    })
}

/// ThreadEnd, on the ending thread.
pub fn thread_ended(jni: *mut sys::JNIEnv, thread: sys::jthread) {
    guarded_in(&EVENTS, "events_thread_end", (), || {
        if on(Kinds::THREADS) {
            push(jni, thread, clock::monotonic_ns(), RawKind::ThreadEnd);
        }
    })
}

/// ClassLoad, on the loading thread.
pub fn class_loaded(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    class: sys::jclass,
) {
    guarded_in(&EVENTS, "events_class_load", (), || {
        if on(Kinds::CLASSES) {
            let class = Jvmti(jvmti).class_signature(class).ok();
            push(
                jni,
                thread,
                clock::monotonic_ns(),
                RawKind::ClassLoad { class },
            );
        }
    })
}

/// The agent's id of a monitor object: its tag, given on first sight.
fn monitor_id(jvmti: Jvmti, object: sys::jobject) -> u64 {
    let tag = jvmti.get_tag(object);
    if tag != 0 {
        return tag;
    }
    let id = MONITOR_TAG | STATE.next_object.fetch_add(1, Ordering::Relaxed);
    if jvmti.set_tag(object, id) {
        id
    } else {
        0
    }
}

unsafe extern "C" fn monitor_contended_enter(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
    object: sys::jobject,
) {
    guarded_in(&EVENTS, "monitor_contended_enter", (), || {
        if !on(Kinds::MONITORS) {
            return;
        }
        WAITS.with(|w| w.blocked_since.set(clock::monotonic_ns()));
        if super::monitor_owners() {
            let owner = Jvmti(jvmti).monitor_owner(object);
            let id = thread::java_id(Jni(jni), owner);
            Jni(jni).delete_local(owner);
            WAITS.with(|w| w.blocked_by.set(id));
        }
    })
}

unsafe extern "C" fn monitor_contended_entered(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    object: sys::jobject,
) {
    guarded_in(&EVENTS, "monitor_contended_entered", (), || {
        let since = WAITS.with(|w| w.blocked_since.replace(0));
        let owner = WAITS.with(|w| w.blocked_by.replace(0));
        if since == 0 || !on(Kinds::MONITORS) {
            return;
        }
        let end = clock::monotonic_ns();
        let jvmti = Jvmti(jvmti);
        push_serving(jni, thread, since, |request| RawKind::Monitor {
            duration_ns: end.saturating_sub(since),
            class: jvmti.object_class_signature(Jni(jni), object),
            object: monitor_id(jvmti, object),
            owner,
            stack: jvmti.current_stack(super::depth()),
            request,
        });
    })
}

unsafe extern "C" fn monitor_wait(
    _jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
    _object: sys::jobject,
    timeout: sys::jlong,
) {
    guarded_in(&EVENTS, "monitor_wait", (), || {
        if on(Kinds::WAITS) {
            let now = clock::monotonic_ns();
            WAITS.with(|w| w.waiting_since.set((now, timeout.max(0) as u64)));
        }
    })
}

unsafe extern "C" fn monitor_waited(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    object: sys::jobject,
    timed_out: sys::jboolean,
) {
    guarded_in(&EVENTS, "monitor_waited", (), || {
        let (since, timeout_ms) = WAITS.with(|w| w.waiting_since.replace((0, 0)));
        if since == 0 || !on(Kinds::WAITS) {
            return;
        }
        let end = clock::monotonic_ns();
        let jvmti = Jvmti(jvmti);
        push_serving(jni, thread, since, |request| RawKind::Wait {
            duration_ns: end.saturating_sub(since),
            class: jvmti.object_class_signature(Jni(jni), object),
            object: monitor_id(jvmti, object),
            timeout_ms,
            timed_out: timed_out != 0,
            stack: jvmti.current_stack(super::depth()),
            request,
        });
    })
}

/// Runs inside the collector: one clock read and one atomic store.
unsafe extern "C" fn gc_start(_jvmti: *mut sys::jvmtiEnv) {
    guarded_in(&EVENTS, "gc_start", (), || {
        STATE
            .gc_start
            .store(clock::monotonic_ns(), Ordering::Relaxed);
    })
}

/// Runs inside the collector: a clock read and a lock-free push.
unsafe extern "C" fn gc_finish(_jvmti: *mut sys::jvmtiEnv) {
    guarded_in(&EVENTS, "gc_finish", (), || {
        let start = STATE.gc_start.swap(0, Ordering::Relaxed);
        if start != 0 {
            let end = clock::monotonic_ns();
            STATE.queues.gcs.push([start, end.saturating_sub(start), 0]);
        }
    })
}

unsafe extern "C" fn sampled_object_alloc(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    object: sys::jobject,
    class: sys::jclass,
    size: sys::jlong,
) {
    guarded_in(&EVENTS, "sampled_object_alloc", (), || {
        if !on(Kinds::ALLOC) {
            return;
        }
        let now = clock::monotonic_ns();
        let jvmti = Jvmti(jvmti);
        let size = size.max(0) as u64;
        // The interval-based estimate, as JFR's and async-profiler's: reading the
        // thread's allocated bytes would need a Java call per sample.
        let interval = STATE.alloc_interval.load(Ordering::Relaxed);
        let weight = jscope_format::alloc_sample_weight(size, interval);
        let allocated_total = STATE.allocated_total.fetch_add(weight, Ordering::Relaxed) + weight;
        let mut id = 0;
        if super::object_ages() {
            id = STATE.next_object.fetch_add(1, Ordering::Relaxed);
            if !jvmti.set_tag(object, id) {
                id = 0;
            }
        }
        push_serving(jni, thread, now, |request| RawKind::Alloc {
            class: jvmti.class_signature(class).ok(),
            size,
            stack: jvmti.current_stack(super::depth()),
            object: id,
            allocated_total,
            weight,
            request,
        });
    })
}

/// May run inside the collector: a clock read and a lock-free push.
unsafe extern "C" fn object_free(_jvmti: *mut sys::jvmtiEnv, tag: sys::jlong) {
    guarded_in(&EVENTS, "object_free", (), || {
        let tag = tag as u64;
        if tag & MONITOR_TAG != 0 {
            return;
        }
        let total = STATE.allocated_total.load(Ordering::Relaxed);
        let frees = &STATE.queues.frees;
        frees.push([clock::monotonic_ns(), tag, total]);
        if frees.past_a_quarter() {
            // A burst: the writer drains while the JVM posts the rest
            // (lock-free: an atomic flag and a futex wake).
            crate::thread_ring::wake_consumer();
        }
    })
}

unsafe extern "C" fn compiled_method_load(
    _jvmti: *mut sys::jvmtiEnv,
    method: sys::jmethodID,
    code_size: sys::jint,
    _code_addr: *const std::ffi::c_void,
    _map_length: sys::jint,
    _map: *const sys::jvmtiAddrLocationMap,
    _compile_info: *const std::ffi::c_void,
) {
    guarded_in(&EVENTS, "compiled_method_load", (), || {
        if on(Kinds::JIT) {
            let kind = RawKind::Compiled {
                method: method as usize,
                code_size: code_size.max(0) as u64,
            };
            push(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                clock::monotonic_ns(),
                kind,
            )
        }
    })
}

unsafe extern "C" fn compiled_method_unload(
    _jvmti: *mut sys::jvmtiEnv,
    method: sys::jmethodID,
    _code_addr: *const std::ffi::c_void,
) {
    guarded_in(&EVENTS, "compiled_method_unload", (), || {
        if on(Kinds::JIT) {
            let kind = RawKind::CompiledUnload {
                method: method as usize,
            };
            push(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                clock::monotonic_ns(),
                kind,
            )
        }
    })
}

/// HotSpot's ClassUnload extension event (see `Jvmti::set_class_unload_callback`).
///
/// # Safety
/// Called by the JVM only, with `name` null or a NUL-terminated class name.
pub unsafe extern "C" fn class_unloaded(
    _jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    name: *const std::ffi::c_char,
) {
    guarded_in(&EVENTS, "class_unloaded", (), || {
        if !on(Kinds::CLASSES) || name.is_null() {
            return;
        }
        let ticks = clock::monotonic_ns();
        let Some(name) = crate::jvm::c_str(name) else {
            return;
        };
        let class = Some(unload_signature(&name));
        push(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            ticks,
            RawKind::ClassUnload { class },
        );
    })
}

/// The event names the class in internal form (`p/Foo`); signatures of arrays
/// and `Lp/Foo;` forms pass through.
fn unload_signature(name: &str) -> String {
    if name.starts_with('[') || (name.starts_with('L') && name.ends_with(';')) {
        name.to_string()
    } else {
        format!("L{name};")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unloaded_names_become_signatures() {
        assert_eq!(super::unload_signature("p/Foo"), "Lp/Foo;");
        assert_eq!(super::unload_signature("Lp/Foo;"), "Lp/Foo;");
        assert_eq!(super::unload_signature("[B"), "[B");
    }
}
