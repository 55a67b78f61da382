//! Describing java.lang.Thread objects and finding a thread by its JNIEnv, on
//! the identity `crate::jvm::thread` reads (the Java thread id and the address
//! of the VM's native thread).

use crate::jvm::{Jni, Jvmti, ThreadInfo};
use crate::sys;

pub use crate::jvm::thread::ThreadFields;

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
