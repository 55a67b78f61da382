//! The natives of `jscope.Span` (java/jscope/Span.java, on the application's
//! class path): a span opens a request on the calling thread, so its samples
//! and events carry the span's id. HotSpot finds these natives by their JNI
//! names in the agent's library. Without a recording they open nothing: the
//! class's `start` returns 0 and its `end(0)` never calls down.

use std::sync::atomic::{AtomicBool, Ordering};

use jscope_format::RequestKind;

use super::requests::Opening;
use super::{own_tid, served_by, REMOTE};
use crate::jvm::entry::{guarded_in, BREAKPOINTS};
use crate::jvm::Jni;
use crate::sys;

/// Set while a recording runs: spans open requests only then.
pub(super) static RECORDING: AtomicBool = AtomicBool::new(false);

#[no_mangle]
pub extern "C" fn Java_jscope_Span_present0(
    _env: *mut sys::JNIEnv,
    _class: sys::jclass,
) -> sys::jboolean {
    1
}

#[no_mangle]
pub extern "C" fn Java_jscope_Span_start0(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    name: sys::jstring,
    tags: sys::jstring,
) -> sys::jlong {
    if !RECORDING.load(Ordering::Relaxed) {
        return 0;
    }
    guarded_in(&BREAKPOINTS, "Span.start", 0, || {
        let jni = Jni(env);
        let opening = Opening {
            kind: RequestKind::Span,
            name: jni.string_of(name).unwrap_or_default(),
            tags: jni.string_of(tags).unwrap_or_default(),
            traceparent: None,
        };
        let key = served_by(jni, None);
        sys::jlong::from(REMOTE.requests.begin(own_tid(), key, opening))
    })
}

#[no_mangle]
pub extern "C" fn Java_jscope_Span_end0(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    span: sys::jlong,
) {
    guarded_in(&BREAKPOINTS, "Span.end", (), || {
        let Ok(id) = u32::try_from(span) else {
            return;
        };
        let key = served_by(Jni(env), None);
        REMOTE.requests.end(own_tid(), key, id, false);
    })
}
