//! Reading identity out of java.lang.Thread objects: the Java thread id and the
//! address of the VM's native thread, from which a thread's JNIEnv follows; and
//! [`ThreadKey`], the one way an event's thread is identified for the writer.

use std::sync::OnceLock;

use crate::jvm::{Jni, Jvmti, ThreadInfo};
use crate::sys;
use crate::threads::gettid;

/// Who an event happened on, as its producer knows it; the writer turns it into
/// the recording's thread id (threads::ThreadTable, by Java id first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ThreadKey {
    /// Linux thread id.
    pub tid: u32,
    /// The thread's JNIEnv, which the writer can map to its java.lang.Thread.
    pub env: usize,
    /// `Thread.getId()`, 0 when unknown: names the thread even after it ended
    /// (its Linux id may then belong to another Java thread, e.g. DestroyJavaVM
    /// after main).
    pub java_id: i64,
}

impl ThreadKey {
    pub fn new(tid: u32, env: usize, java_id: i64) -> ThreadKey {
        ThreadKey { tid, env, java_id }
    }

    /// The calling thread's key, `thread` being its own java.lang.Thread (as a
    /// JVMTI callback receives it).
    pub fn of(jni: Jni, thread: sys::jthread) -> ThreadKey {
        ThreadKey::new(gettid(), jni.0 as usize, java_id(jni, thread))
    }

    /// The calling Java thread's key.
    pub fn current(jni: Jni) -> ThreadKey {
        ThreadKey::new(gettid(), jni.0 as usize, current_java_id(jni))
    }
}

/// What learning a Java id needs: published once per process by the first
/// recording to start, before any engine runs.
static IDENTITY: OnceLock<(Jvmti, ThreadFields)> = OnceLock::new();

/// Makes [`java_id`] and [`ThreadKey`] work (the first call wins: the agent has
/// one JVMTI environment and Thread's fields never change).
pub fn publish_identity(jvmti: Jvmti, fields: ThreadFields) {
    let _ = IDENTITY.set((jvmti, fields));
}

/// `Thread.getId()` of `thread`; 0 when unknown.
pub fn java_id(jni: Jni, thread: sys::jthread) -> i64 {
    match IDENTITY.get() {
        Some((_, f)) if !thread.is_null() && !jni.0.is_null() => f.java_id(jni, thread),
        _ => 0,
    }
}

/// `Thread.getId()` of the calling Java thread; 0 when unknown.
pub fn current_java_id(jni: Jni) -> i64 {
    let Some((jvmti, _)) = IDENTITY.get() else {
        return 0;
    };
    let Some(me) = jvmti.current_thread() else {
        return 0;
    };
    let id = java_id(jni, me);
    jni.delete_local(me);
    id
}

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
unsafe impl Sync for ThreadFields {}

impl ThreadFields {
    /// Looks the fields up; None when Thread has no `tid` field.
    pub fn lookup(jni: Jni) -> Option<ThreadFields> {
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

/// The Java id and description of `thread`, or None if JVMTI cannot describe it
/// (it ended meanwhile).
pub fn describe(
    jvmti: Jvmti,
    jni: Jni,
    fields: ThreadFields,
    thread: sys::jthread,
) -> Option<(i64, ThreadInfo)> {
    let info = jvmti.thread_info(jni, thread).ok()?;
    Some((fields.java_id(jni, thread), info))
}

/// Maps a thread's JNIEnv address back to its Thread object. HotSpot embeds the
/// JNIEnv at a fixed offset inside its native thread, so that offset, learned
/// once from the calling thread, turns every Thread's `eetop` into its JNIEnv.
#[derive(Clone, Copy, Debug)]
pub struct EnvMapper {
    fields: ThreadFields,
    offset: i64,
}

impl EnvMapper {
    /// Calibrates on the calling thread, which must be attached (`jni` is its env).
    pub fn calibrate(jvmti: Jvmti, jni: Jni, fields: ThreadFields) -> Option<EnvMapper> {
        let me = jvmti.current_thread()?;
        let address = fields.native_address(jni, me);
        jni.delete_local(me);
        Some(EnvMapper {
            fields,
            offset: jni.0 as i64 - address?,
        })
    }

    /// The live thread whose JNIEnv is `env`, described, if any.
    pub fn find(&self, jvmti: Jvmti, jni: Jni, env: usize) -> Option<(i64, ThreadInfo)> {
        jni.with_local_frame(64, || {
            let threads = jvmti.all_threads().ok()?;
            jni.ensure_local_capacity(threads.len() + 64);
            threads.iter().find_map(|&t| {
                let address = self.fields.native_address(jni, t)?;
                (address + self.offset == env as i64)
                    .then(|| describe(jvmti, jni, self.fields, t))?
            })
        })
    }
}
