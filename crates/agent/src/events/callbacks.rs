//! The JVMTI callbacks of the events. Each stamps the time, gathers what only
//! the calling thread can see (its stack, the object's class) and queues a raw
//! event; the writer names everything later. None of them ever unwinds into the
//! JVM, and the GC-time ones (GarbageCollectionStart/Finish, ObjectFree) only
//! read the clock and store into lock-free slots.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::queue::{self, RawEvent, RawKind};
use super::{jvmti_ext, on, Kinds, ALLOCATED_TOTAL};
use crate::clock;
use crate::java_threads::{java_id, ThreadKey};
use crate::jvm::{Jni, Jvmti};
use crate::sys;

/// Monitor object ids carry this bit, so ObjectFree of a tagged monitor is not
/// taken for the free of a sampled allocation.
pub const MONITOR_TAG: u64 = 1 << 62;
static NEXT_OBJECT: AtomicU64 = AtomicU64::new(1);
static GC_START: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// When this thread began to block on a monitor (0: it is not blocked).
    static BLOCKED_SINCE: Cell<u64> = const { Cell::new(0) };
    /// Thread.getId() of the monitor's owner then (0: not asked or unknown).
    static BLOCKED_BY: Cell<i64> = const { Cell::new(0) };
    /// When this thread began to wait, and its timeout in ms.
    static WAITING_SINCE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

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

fn quietly(f: impl FnOnce()) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
}

pub(super) fn push(jni: *mut sys::JNIEnv, thread: sys::jthread, ticks: u64, kind: RawKind) {
    queue::push(RawEvent {
        thread: ThreadKey::of(Jni(jni), thread),
        ticks,
        kind,
    });
}

/// ThreadStart, called by the agent's own callback on the new thread.
pub fn thread_started(jni: *mut sys::JNIEnv, thread: sys::jthread) {
    if on(Kinds::THREADS) {
        quietly(|| push(jni, thread, clock::monotonic_ns(), RawKind::ThreadStart));
    }
}

/// ThreadEnd, on the ending thread.
pub fn thread_ended(jni: *mut sys::JNIEnv, thread: sys::jthread) {
    if on(Kinds::THREADS) {
        quietly(|| push(jni, thread, clock::monotonic_ns(), RawKind::ThreadEnd));
    }
}

/// ClassLoad, on the loading thread.
pub fn class_loaded(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    class: sys::jclass,
) {
    if on(Kinds::CLASSES) {
        quietly(|| {
            let class = jvmti_ext::class_signature(Jvmti(jvmti), class);
            push(
                jni,
                thread,
                clock::monotonic_ns(),
                RawKind::ClassLoad { class },
            );
        });
    }
}

/// The agent's id of a monitor object: its tag, given on first sight.
fn monitor_id(jvmti: Jvmti, object: sys::jobject) -> u64 {
    let tag = jvmti_ext::get_tag(jvmti, object);
    if tag != 0 {
        return tag;
    }
    let id = MONITOR_TAG | NEXT_OBJECT.fetch_add(1, Ordering::Relaxed);
    if jvmti_ext::set_tag(jvmti, object, id) {
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
    if !on(Kinds::MONITORS) {
        return;
    }
    BLOCKED_SINCE.with(|c| c.set(clock::monotonic_ns()));
    if super::monitor_owners() {
        quietly(|| {
            let owner = jvmti_ext::monitor_owner(Jvmti(jvmti), object);
            let id = java_id(Jni(jni), owner);
            if !owner.is_null() {
                Jni(jni).delete_local(owner);
            }
            BLOCKED_BY.with(|c| c.set(id));
        });
    }
}

unsafe extern "C" fn monitor_contended_entered(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    object: sys::jobject,
) {
    let since = BLOCKED_SINCE.with(|c| c.replace(0));
    let owner = BLOCKED_BY.with(|c| c.replace(0));
    if since == 0 || !on(Kinds::MONITORS) {
        return;
    }
    let end = clock::monotonic_ns();
    quietly(|| {
        let jvmti = Jvmti(jvmti);
        let kind = RawKind::Monitor {
            duration_ns: end.saturating_sub(since),
            class: jvmti_ext::object_class_signature(jvmti, Jni(jni), object),
            object: monitor_id(jvmti, object),
            owner,
            stack: jvmti_ext::current_stack(jvmti, super::depth()),
        };
        push(jni, thread, since, kind);
    });
}

unsafe extern "C" fn monitor_wait(
    _jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
    _object: sys::jobject,
    timeout: sys::jlong,
) {
    if on(Kinds::WAITS) {
        let now = clock::monotonic_ns();
        WAITING_SINCE.with(|c| c.set((now, timeout.max(0) as u64)));
    }
}

unsafe extern "C" fn monitor_waited(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    object: sys::jobject,
    timed_out: sys::jboolean,
) {
    let (since, timeout_ms) = WAITING_SINCE.with(|c| c.replace((0, 0)));
    if since == 0 || !on(Kinds::WAITS) {
        return;
    }
    let end = clock::monotonic_ns();
    quietly(|| {
        let jvmti = Jvmti(jvmti);
        let kind = RawKind::Wait {
            duration_ns: end.saturating_sub(since),
            class: jvmti_ext::object_class_signature(jvmti, Jni(jni), object),
            object: monitor_id(jvmti, object),
            timeout_ms,
            timed_out: timed_out != 0,
            stack: jvmti_ext::current_stack(jvmti, super::depth()),
        };
        push(jni, thread, since, kind);
    });
}

/// Runs inside the collector: one clock read and one atomic store.
unsafe extern "C" fn gc_start(_jvmti: *mut sys::jvmtiEnv) {
    GC_START.store(clock::monotonic_ns(), Ordering::Relaxed);
}

/// Runs inside the collector: a clock read and a lock-free push.
unsafe extern "C" fn gc_finish(_jvmti: *mut sys::jvmtiEnv) {
    let start = GC_START.swap(0, Ordering::Relaxed);
    if start != 0 {
        let end = clock::monotonic_ns();
        queue::GCS.push([start, end.saturating_sub(start), 0]);
    }
}

unsafe extern "C" fn sampled_object_alloc(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    object: sys::jobject,
    class: sys::jclass,
    size: sys::jlong,
) {
    if !on(Kinds::ALLOC) {
        return;
    }
    let now = clock::monotonic_ns();
    quietly(|| {
        let jvmti = Jvmti(jvmti);
        let size = size.max(0) as u64;
        let allocated_total = ALLOCATED_TOTAL.fetch_add(size, Ordering::Relaxed) + size;
        let mut id = 0;
        if super::object_ages() {
            id = NEXT_OBJECT.fetch_add(1, Ordering::Relaxed);
            if !jvmti_ext::set_tag(jvmti, object, id) {
                id = 0;
            }
        }
        let kind = RawKind::Alloc {
            class: jvmti_ext::class_signature(jvmti, class),
            size,
            stack: jvmti_ext::current_stack(jvmti, super::depth()),
            object: id,
            allocated_total,
        };
        push(jni, thread, now, kind);
    });
}

/// May run inside the collector: a clock read and a lock-free push.
unsafe extern "C" fn object_free(_jvmti: *mut sys::jvmtiEnv, tag: sys::jlong) {
    let tag = tag as u64;
    if tag & MONITOR_TAG != 0 {
        return;
    }
    let total = ALLOCATED_TOTAL.load(Ordering::Relaxed);
    queue::FREES.push([clock::monotonic_ns(), tag, total]);
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
    if on(Kinds::JIT) {
        let kind = RawKind::Compiled {
            method: method as usize,
            code_size: code_size.max(0) as u64,
        };
        quietly(|| {
            push(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                clock::monotonic_ns(),
                kind,
            )
        });
    }
}

unsafe extern "C" fn compiled_method_unload(
    _jvmti: *mut sys::jvmtiEnv,
    method: sys::jmethodID,
    _code_addr: *const std::ffi::c_void,
) {
    if on(Kinds::JIT) {
        let kind = RawKind::CompiledUnload {
            method: method as usize,
        };
        quietly(|| {
            push(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                clock::monotonic_ns(),
                kind,
            )
        });
    }
}

/// HotSpot's ClassUnload extension event (see jvmti_ext::set_class_unload_callback).
///
/// # Safety
/// Called by the JVM only, with `name` null or a NUL-terminated class name.
pub unsafe extern "C" fn class_unloaded(
    _jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    name: *const std::ffi::c_char,
) {
    if !on(Kinds::CLASSES) || name.is_null() {
        return;
    }
    let ticks = clock::monotonic_ns();
    quietly(|| {
        // SAFETY: the JVM passes a NUL-terminated class name.
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
        let class = Some(unload_signature(&name));
        push(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            ticks,
            RawKind::ClassUnload { class },
        );
    });
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
