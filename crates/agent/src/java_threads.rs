//! Reading identity out of java.lang.Thread objects: the Java thread id and the
//! address of the VM's native thread, from which a thread's JNIEnv follows.

use crate::jvm::{Jni, Jvmti, ThreadInfo};
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
