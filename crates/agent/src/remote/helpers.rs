//! Java helpers between the frameworks' HTTP methods and the agent.
//!
//! A handler that reads a request through JNI calls back into Java for each
//! getter: a trip through the JVM's call machinery that, once per request, runs
//! cold (its code and data long out of the caches), about 5 to 30 µs a call
//! here, most of the request context's cost. So the calls inserted into a
//! framework's method go to a small Java class instead (`crates/agent/java/src`,
//! compiled by `crates/agent/java/build.sh` into the class files embedded
//! here): it calls the request's getters in Java, where the JIT compiles them
//! with the method (the application calls most of them anyway), and hands the
//! agent plain values through one native of `jscope/Remote` (`served`,
//! `calling`, `answered`, `sends`). The native leaves them for the site's
//! handler (`take`), which then reads nothing itself. Anything a helper's Java
//! throws is caught there: the native is told there was nothing to read.
//!
//! A helper is defined, with JNI's DefineClass, in the loader of the framework
//! class that calls it (only there are the framework's types visible), as that
//! class loads. Classes of a named module cannot read the loader's unnamed
//! module, where the helper lives: theirs, and those of a loader the helper
//! cannot be defined in, call `jscope/Remote.enter` as before.

use std::ffi::c_void;
use std::ptr::null_mut;

use super::frameworks::call;
use super::http::{endpoints_of, new_traceparent, path_of, served_trace_id, Call, STATE};
use super::points::{socket_endpoints, Endpoint};
use super::REMOTE;
use crate::jvm::entry::{guarded_in, BREAKPOINTS};
use crate::jvm::{Jni, Jvmti};
use crate::sys;

pub(super) const JAVAX_SERVLET: &str = "jscope/fw/JavaxServlet";
pub(super) const JAKARTA_SERVLET: &str = "jscope/fw/JakartaServlet";
pub(super) const NETTY_READ: &str = "jscope/fw/NettyRead";
pub(super) const NETTY_ENCODE: &str = "jscope/fw/NettyEncode";
pub(super) const OKHTTP_CALL: &str = "jscope/fw/OkHttpCall";
pub(super) const OKHTTP_SEND: &str = "jscope/fw/OkHttpSend";
pub(super) const HC5_CALL: &str = "jscope/fw/Hc5Call";

/// Each helper's class file.
pub(super) const HELPERS: [(&str, &[u8]); 7] = [
    (
        JAVAX_SERVLET,
        include_bytes!("../../java/classes/JavaxServlet.class"),
    ),
    (
        JAKARTA_SERVLET,
        include_bytes!("../../java/classes/JakartaServlet.class"),
    ),
    (
        NETTY_READ,
        include_bytes!("../../java/classes/NettyRead.class"),
    ),
    (
        NETTY_ENCODE,
        include_bytes!("../../java/classes/NettyEncode.class"),
    ),
    (
        OKHTTP_CALL,
        include_bytes!("../../java/classes/OkHttpCall.class"),
    ),
    (
        OKHTTP_SEND,
        include_bytes!("../../java/classes/OkHttpSend.class"),
    ),
    (HC5_CALL, include_bytes!("../../java/classes/Hc5Call.class")),
];

/// At most this many (helper, loader) pairs are remembered; past that a
/// helper's definition in a new loader is tried and, failing as a duplicate
/// in a loader that has it, leaves that class on `jscope/Remote`.
const KEPT: usize = 256;

/// Whether `helper` can be called from a class of `package` (internal form)
/// that `loader` is loading: defined there now if it was not.
pub(super) fn ready(
    jvmti: Jvmti,
    env: Jni,
    loader: sys::jobject,
    package: &str,
    helper: &'static str,
) -> bool {
    if loader.is_null() || jvmti.in_named_module(loader, package) != Some(false) {
        return false;
    }
    let defined = |list: &[(&str, usize)]| {
        list.iter()
            .any(|&(h, weak)| h == helper && env.is_same_object(weak as sys::jobject, loader))
    };
    if defined(&REMOTE.helpers.lock().unwrap_or_else(|e| e.into_inner())) {
        return true;
    }
    let Some(&(_, bytes)) = HELPERS.iter().find(|(h, _)| *h == helper) else {
        return false;
    };
    // Not under the lock: defining takes the loader's own lock, which a thread
    // loading a framework class holds while it waits for ours.
    let class = env.define_class(helper, loader, bytes);
    if class.is_null() {
        return false;
    }
    env.delete_local(class);
    let mut list = REMOTE.helpers.lock().unwrap_or_else(|e| e.into_inner());
    if list.len() < KEPT {
        let weak = env.new_weak_global(loader);
        if !weak.is_null() {
            list.push((helper, weak as usize));
        }
    }
    true
}

/// What a helper read for its site's handler.
pub(super) enum Read {
    /// A served request and its endpoints.
    Served(Call, Option<(Endpoint, Endpoint)>),
    /// A client call (with the traceparent it sends).
    Calling(Call),
    /// The endpoints of the connection an exchange goes over.
    Sends(Option<(Endpoint, Endpoint)>),
    /// The status of a response being encoded.
    Answered(u32),
    /// Nothing to open (not an HTTP message, or the helper's Java failed).
    Nothing,
}

/// What the helper read for the handler running now (None: reached without
/// a helper; the handler reads for itself).
pub(super) fn take() -> Option<Read> {
    STATE.with(|s| s.borrow_mut().read.take())
}

/// Runs the entry handler of `site` with `read` left for it.
fn hand(env: Jni, site: i32, read: Read) {
    STATE.with(|s| s.borrow_mut().read = Some(read));
    super::calls::reached(env, site, super::calls::Reached::Entry(null_mut()));
    take();
}

/// The natives of `jscope/Remote` the helpers call.
pub(super) fn natives() -> [(&'static str, &'static str, *mut c_void); 6] {
    [
        (
            "served",
            "(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;ILjava/lang/String;I)V",
            served as *mut c_void,
        ),
        (
            "calling",
            "(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;)V",
            calling as *mut c_void,
        ),
        ("traceparent", "()Ljava/lang/String;", traceparent as *mut c_void),
        (
            "setOkHttpRequest",
            "(Ljava/lang/Object;Ljava/lang/Object;)Z",
            set_okhttp_request as *mut c_void,
        ),
        ("answered", "(II)V", answered as *mut c_void),
        ("sends", "(ILjava/lang/Object;)V", sends as *mut c_void),
    ]
}

/// `served(site, method, target, traceparent, localAddress, localPort,
/// remoteAddress, remotePort)`: a server request (no method: none).
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn served(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    site: sys::jint,
    method: sys::jstring,
    target: sys::jstring,
    traceparent: sys::jstring,
    local: sys::jstring,
    local_port: sys::jint,
    remote: sys::jstring,
    remote_port: sys::jint,
) {
    guarded_in(&BREAKPOINTS, "remote_served", (), || {
        let env = Jni(env);
        let read = match env.string_of(method) {
            Some(method) => {
                let path = path_of(&env.string_of(target).unwrap_or_default());
                let traceparent = env.string_of(traceparent).unwrap_or_default();
                let host = |s| {
                    env.string_of(s)
                        .map(|h| h.trim_matches(['[', ']']).to_string())
                };
                let ends = host(local)
                    .map(|h| (h, local_port as u32))
                    .zip(host(remote).map(|h| (h, remote_port as u32)));
                Read::Served(call(method, path, traceparent), ends)
            }
            None => Read::Nothing,
        };
        hand(env, site, read);
    })
}

/// `calling(site, method, target, traceparent)`: a client call sending
/// `traceparent` (none, or no method: nothing to record).
unsafe extern "C" fn calling(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    site: sys::jint,
    method: sys::jstring,
    target: sys::jstring,
    traceparent: sys::jstring,
) {
    guarded_in(&BREAKPOINTS, "remote_calling", (), || {
        let env = Jni(env);
        let read = match (env.string_of(method), env.string_of(traceparent)) {
            (Some(method), Some(traceparent)) => {
                let path = path_of(&env.string_of(target).unwrap_or_default());
                Read::Calling(call(method, path, traceparent))
            }
            _ => Read::Nothing,
        };
        hand(env, site, read);
    })
}

/// `traceparent()`: a new traceparent for a client call of this thread (in
/// the trace it serves, if any).
unsafe extern "C" fn traceparent(env: *mut sys::JNIEnv, _class: sys::jclass) -> sys::jstring {
    guarded_in(&BREAKPOINTS, "remote_traceparent", null_mut(), || {
        let env = Jni(env);
        env.new_string(&new_traceparent(served_trace_id(env)))
    })
}

/// `setOkHttpRequest(call, request)`: `RealCall.originalRequest` (final, so
/// set through JNI) becomes `request`.
unsafe extern "C" fn set_okhttp_request(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    call: sys::jobject,
    request: sys::jobject,
) -> sys::jboolean {
    guarded_in(&BREAKPOINTS, "remote_set_request", 0, || {
        let field = ("originalRequest", "Lokhttp3/Request;");
        let set = !request.is_null() && Jni(env).set_object_field(call, field, request);
        sys::jboolean::from(set)
    })
}

/// `answered(site, status)`: a response with `status` (< 0: not a response)
/// is encoded.
unsafe extern "C" fn answered(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    site: sys::jint,
    status: sys::jint,
) {
    guarded_in(&BREAKPOINTS, "remote_answered", (), || {
        let read = u32::try_from(status).map_or(Read::Nothing, Read::Answered);
        hand(Jni(env), site, read);
    })
}

/// `sends(site, socket)`: an exchange goes over `socket` (its endpoints read
/// once per connection and thread).
unsafe extern "C" fn sends(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    site: sys::jint,
    socket: sys::jobject,
) {
    guarded_in(&BREAKPOINTS, "remote_sends", (), || {
        let env = Jni(env);
        let ends = endpoints_of(env, socket, || socket_endpoints(env, socket));
        hand(env, site, Read::Sends(ends));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_targets_give_their_paths() {
        assert_eq!(path_of("/a/b?x=1"), "/a/b");
        assert_eq!(path_of("http://h:8/p/q?z"), "/p/q");
        assert_eq!(path_of("http://h:8"), "/");
        assert_eq!(path_of(""), "");
    }

    #[test]
    fn every_helper_is_a_class_file_of_its_name() {
        for (name, bytes) in HELPERS {
            let class = jscope_bytecode::ClassFile::parse(bytes).unwrap();
            assert_eq!(class.name().unwrap(), name);
        }
    }
}
