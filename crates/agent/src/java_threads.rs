//! Describing java.lang.Thread objects and finding a thread by its JNIEnv, on
//! the identity `crate::jvm::thread` reads (the Java thread id and the address
//! of the VM's native thread); and [`ThreadKey`], the one way an event's thread
//! is identified for the writer.

use crate::jvm::thread::{current_java_id, java_id};
use crate::jvm::{Jni, Jvmti, ThreadInfo};
use crate::sys;
use crate::threads::{gettid, ThreadTable};

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

pub use crate::jvm::thread::ThreadFields;

/// Marks the calling thread, one of the agent's own attached to the VM, as the
/// agent's by its Java id too (snapshots and events then leave it out).
/// Describes every live Java thread to `table` again (a renamed thread gets a
/// new revision of its definition); `tid_of` gives the Linux id of the
/// threads whose id is known here.
pub fn see_live_threads(
    jvmti: Jvmti,
    jni: Jni,
    fields: ThreadFields,
    table: &ThreadTable,
    tid_of: impl Fn(i64) -> Option<u32>,
) {
    jni.with_local_frame(64, || {
        let Ok(threads) = jvmti.all_threads() else {
            return;
        };
        jni.ensure_local_capacity(threads.len() + 64);
        for t in threads {
            if let Some((java_id, info)) = describe(jvmti, jni, fields, t) {
                table.see(java_id, info, tid_of(java_id));
            }
            jni.delete_local(t);
        }
    });
}

pub fn mark_agent_java(table: &ThreadTable, jni: Jni) {
    match current_java_id(jni) {
        0 => {}
        id => table.mark_agent_java(id),
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
