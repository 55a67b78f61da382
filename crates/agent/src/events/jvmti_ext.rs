//! The JVMTI and JNI calls only events need (capabilities, stacks, tags, object
//! classes), wrapped like `crate::jvm`: each checks its result and frees what
//! JVMTI allocated.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::CStr;
use std::ptr::null_mut;

use super::options::Kinds;
use crate::jvm::{check, Jni, Jvmti, JvmtiError};
use crate::sys;

/// Bit of `can_generate_sampled_allocation_events` in jvmtiCapabilities (JDK 11+;
/// the generated bindings predate its setter).
const CAN_SAMPLE_ALLOCATIONS_BIT: usize = 43;

/// The capabilities the chosen kinds need (HotSpot grants them in the live phase
/// too, so attaching works).
pub fn add_capabilities(jvmti: Jvmti, kinds: Kinds, object_ages: bool) -> Result<(), JvmtiError> {
    // SAFETY: an all-zero capabilities struct is valid.
    let mut caps: sys::jvmtiCapabilities = unsafe { std::mem::zeroed() };
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
    let add = jvmti
        .table()
        .AddCapabilities
        .expect("JVMTI AddCapabilities");
    // SAFETY: valid env and struct.
    check(unsafe { add(jvmti.0, &caps) })
}

pub fn set_heap_sampling_interval(jvmti: Jvmti, bytes: u32) -> Result<(), JvmtiError> {
    let f = jvmti
        .table()
        .SetHeapSamplingInterval
        .ok_or(JvmtiError(sys::JVMTI_ERROR_NOT_AVAILABLE))?;
    // SAFETY: valid env.
    check(unsafe { f(jvmti.0, bytes.min(i32::MAX as u32) as sys::jint) })
}

/// The calling thread's stack, top first, as (jmethodID, bci) with bci -1 for
/// native frames.
pub fn current_stack(jvmti: Jvmti, depth: u32) -> Vec<(usize, i32)> {
    let Some(get) = jvmti.table().GetStackTrace else {
        return Vec::new();
    };
    // SAFETY: jvmtiFrameInfo is plain data; zero is a valid value.
    let mut frames: Vec<sys::jvmtiFrameInfo> = vec![unsafe { std::mem::zeroed() }; depth as usize];
    let mut n = 0;
    // SAFETY: valid env, a null thread means the current one, the buffer holds
    // `depth` frames.
    let code = unsafe {
        get(
            jvmti.0,
            null_mut(),
            0,
            depth as sys::jint,
            frames.as_mut_ptr(),
            &mut n,
        )
    };
    if check(code).is_err() {
        return Vec::new();
    }
    frames
        .iter()
        .take(n.max(0) as usize)
        .map(|f| (f.method as usize, f.location as i32))
        .collect()
}

/// The JVM signature of a class (`[B`, `Ljava/lang/String;`).
pub fn class_signature(jvmti: Jvmti, class: sys::jclass) -> Option<String> {
    let mut sig = null_mut();
    let f = jvmti.table().GetClassSignature?;
    // SAFETY: valid env, class reference and out-pointer.
    check(unsafe { f(jvmti.0, class, &mut sig, null_mut()) }).ok()?;
    // SAFETY: JVMTI returns a NUL-terminated string, freed right after.
    let s = unsafe { CStr::from_ptr(sig) }
        .to_string_lossy()
        .into_owned();
    jvmti.deallocate(sig.cast());
    Some(s)
}

/// The signature of an object's class.
pub fn object_class_signature(jvmti: Jvmti, jni: Jni, object: sys::jobject) -> Option<String> {
    if object.is_null() {
        return None;
    }
    let f = jni.table().GetObjectClass?;
    // SAFETY: valid env and object reference.
    let class = unsafe { f(jni.0, object) };
    if class.is_null() {
        return None;
    }
    let sig = class_signature(jvmti, class);
    jni.delete_local(class);
    sig
}

pub fn get_tag(jvmti: Jvmti, object: sys::jobject) -> u64 {
    let mut tag = 0;
    let Some(f) = jvmti.table().GetTag else {
        return 0;
    };
    // SAFETY: valid env, object and out-pointer.
    if check(unsafe { f(jvmti.0, object, &mut tag) }).is_err() {
        return 0;
    }
    tag as u64
}

pub fn set_tag(jvmti: Jvmti, object: sys::jobject, tag: u64) -> bool {
    let Some(f) = jvmti.table().SetTag else {
        return false;
    };
    // SAFETY: valid env and object.
    check(unsafe { f(jvmti.0, object, tag as sys::jlong) }).is_ok()
}

/// The thread owning `object`'s monitor now, as a local reference (null when
/// none or unknown). The waiter arrays JVMTI allocates are freed.
pub fn monitor_owner(jvmti: Jvmti, object: sys::jobject) -> sys::jthread {
    let Some(f) = jvmti.table().GetObjectMonitorUsage else {
        return null_mut();
    };
    // SAFETY: jvmtiMonitorUsage is plain data; zero is a valid value.
    let mut usage: sys::jvmtiMonitorUsage = unsafe { std::mem::zeroed() };
    // SAFETY: valid env, object and out-pointer.
    if check(unsafe { f(jvmti.0, object, &mut usage) }).is_err() {
        return null_mut();
    }
    for list in [usage.waiters, usage.notify_waiters] {
        if !list.is_null() {
            jvmti.deallocate(list.cast());
        }
    }
    usage.owner
}

/// HotSpot's ClassUnload extension event as current JDKs define it: the unloaded
/// class's name, since the class itself is gone.
pub type ClassUnloadCallback =
    unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut sys::JNIEnv, *const std::ffi::c_char);

const CLASS_UNLOAD_ID: &CStr = c"com.sun.hotspot.events.ClassUnload";

/// Sets (or with None clears) the ClassUnload extension callback. False when the
/// JVM has no such event or gives it other parameters than (JNIEnv*, const
/// char*) (older JDKs passed a jclass, which cannot be used once unloaded).
pub fn set_class_unload_callback(jvmti: Jvmti, callback: Option<ClassUnloadCallback>) -> bool {
    let (Some(get), Some(set)) = (
        jvmti.table().GetExtensionEvents,
        jvmti.table().SetExtensionEventCallback,
    ) else {
        return false;
    };
    let (mut n, mut infos) = (0, null_mut());
    // SAFETY: valid env and out-pointers.
    if check(unsafe { get(jvmti.0, &mut n, &mut infos) }).is_err() || infos.is_null() {
        return false;
    }
    // SAFETY: JVMTI filled n entries.
    let list = unsafe { std::slice::from_raw_parts(infos, n.max(0) as usize) };
    let index = list.iter().find_map(|e| {
        // SAFETY: ids are NUL-terminated strings.
        let id = unsafe { CStr::from_ptr(e.id) };
        (id == CLASS_UNLOAD_ID && takes_jni_and_name(e)).then_some(e.extension_event_index)
    });
    for e in list {
        free_event_info(jvmti, e);
    }
    jvmti.deallocate(infos.cast());
    let Some(index) = index else {
        return false;
    };
    // SAFETY: the JVM calls extension callbacks with the parameters it declared,
    // which were just checked to be the callback's.
    let cb: sys::jvmtiExtensionEvent = callback.map(|f| unsafe {
        std::mem::transmute::<ClassUnloadCallback, unsafe extern "C" fn(*mut sys::jvmtiEnv, ...)>(f)
    });
    // SAFETY: valid env and index.
    check(unsafe { set(jvmti.0, index, cb) }).is_ok()
}

fn takes_jni_and_name(e: &sys::jvmtiExtensionEventInfo) -> bool {
    if e.param_count != 2 || e.params.is_null() {
        return false;
    }
    // SAFETY: JVMTI filled param_count entries.
    let p = unsafe { std::slice::from_raw_parts(e.params, 2) };
    p[0].base_type == sys::JVMTI_TYPE_JNIENV && p[1].base_type == sys::JVMTI_TYPE_CCHAR
}

/// GetExtensionEvents allocates every string and array it returns.
fn free_event_info(jvmti: Jvmti, e: &sys::jvmtiExtensionEventInfo) {
    if !e.params.is_null() {
        // SAFETY: JVMTI filled param_count entries.
        let params = unsafe { std::slice::from_raw_parts(e.params, e.param_count.max(0) as usize) };
        for p in params {
            jvmti.deallocate(p.name.cast());
        }
        jvmti.deallocate(e.params.cast());
    }
    jvmti.deallocate(e.id.cast());
    jvmti.deallocate(e.short_description.cast());
}
