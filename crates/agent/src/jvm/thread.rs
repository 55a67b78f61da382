//! Thread identity: the one way the agent learns a thread's Java id (its
//! `Thread.getId()`, read from the `tid` field), and HotSpot's native thread
//! address that maps a Thread to its JNIEnv.

use std::sync::OnceLock;

use super::{Jni, Jvmti};
use crate::sys;

/// Field ids of java.lang.Thread that the agent reads. Field ids stay valid for
/// as long as the class is loaded, which for Thread is forever.
#[derive(Clone, Copy, Debug)]
pub struct ThreadFields {
    tid: sys::jfieldID,
    /// `eetop`, HotSpot's pointer to the native JavaThread; null when absent.
    eetop: sys::jfieldID,
}

// SAFETY: field ids are plain VM-wide handles, usable from any attached thread.
unsafe impl Send for ThreadFields {}
// SAFETY: as above; they are never written after the lookup.
unsafe impl Sync for ThreadFields {}

impl ThreadFields {
    /// Looks the fields up; None when Thread has no `tid` field. Once per
    /// process, by [`init`].
    fn lookup(jni: Jni) -> Option<ThreadFields> {
        let class = jni.find_class("java/lang/Thread");
        if class.is_null() {
            return None;
        }
        let tid = jni.field_id(class, "tid", "J");
        let eetop = jni.field_id(class, "eetop", "J");
        jni.delete_local(class);
        (!tid.is_null()).then_some(ThreadFields { tid, eetop })
    }

    /// Thread.getId() of `thread`.
    pub fn java_id(&self, jni: Jni, thread: sys::jthread) -> i64 {
        jni.long_field(thread, self.tid)
    }

    /// The native thread's address, or None when unknown or the thread is dead.
    pub fn native_address(&self, jni: Jni, thread: sys::jthread) -> Option<i64> {
        if self.eetop.is_null() {
            return None;
        }
        Some(jni.long_field(thread, self.eetop)).filter(|a| *a != 0)
    }
}

/// The fields and the agent's JVMTI environment, set once by [`init`].
static IDENTITY: OnceLock<(Jvmti, ThreadFields)> = OnceLock::new();

/// Looks Thread's fields up once per process, on a Java thread (callbacks may
/// then ask for ids); the recorder does before any engine starts. None when
/// they cannot be found.
pub fn init(jvmti: Jvmti, jni: Jni) -> Option<ThreadFields> {
    if let Some((_, fields)) = IDENTITY.get() {
        return Some(*fields);
    }
    let fields = ThreadFields::lookup(jni)?;
    let _ = IDENTITY.set((jvmti, fields));
    Some(fields)
}

/// Thread.getId() of `thread`; 0 when unknown (null, or before [`init`]).
pub fn java_id(jni: Jni, thread: sys::jthread) -> i64 {
    match IDENTITY.get() {
        Some((_, f)) if !thread.is_null() && !jni.0.is_null() => f.java_id(jni, thread),
        _ => 0,
    }
}

/// Thread.getId() of the calling Java thread; 0 when unknown.
pub fn current_java_id(jni: Jni) -> i64 {
    let Some((jvmti, fields)) = IDENTITY.get() else {
        return 0;
    };
    if jni.0.is_null() {
        return 0;
    }
    let Some(me) = jvmti.current_thread() else {
        return 0;
    };
    let id = fields.java_id(jni, me);
    jni.delete_local(me);
    id
}

/// True when the calling Java thread is a virtual thread (its Thread object
/// has no native thread behind it); false when unknown.
pub fn current_is_virtual(jni: Jni) -> bool {
    let Some((jvmti, fields)) = IDENTITY.get() else {
        return false;
    };
    if jni.0.is_null() || fields.eetop.is_null() {
        return false;
    }
    let Some(me) = jvmti.current_thread() else {
        return false;
    };
    let virtual_thread = fields.native_address(jni, me).is_none();
    jni.delete_local(me);
    virtual_thread
}
