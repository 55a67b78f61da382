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
//! `calling`, `answered`, `sends`, `leave`; each given the current thread, so
//! the agent need not ask JVMTI for it). The native leaves them for the site's
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

use super::calls::Reached;
use super::frameworks::call;
use super::http::{new_traceparent, path_of, served_trace_id, Call, STATE};
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
pub(super) const HC5_SEND: &str = "jscope/fw/Hc5Send";

/// Each helper's class file.
pub(super) const HELPERS: [(&str, &[u8]); 8] = [
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
    (HC5_SEND, include_bytes!("../../java/classes/Hc5Send.class")),
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
    /// A served request, the key of its connection (a local reference valid
    /// while the native that left it runs, which is when its handler takes
    /// it) and, for a key that may move to another connection, its (local,
    /// remote) ports.
    Served(Call, sys::jobject, Option<(u32, u32)>),
    /// A client call (with the traceparent it sends).
    Calling(Call),
    /// The object an exchange goes over (a socket, a connection: one that
    /// stays with its connection), a local reference valid while the native
    /// that left it runs, which is when its handler takes it.
    Sends(sys::jobject),
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

/// Runs the entry handler of `site` on `thread` (the current one) with
/// `read` left for it.
fn hand(env: Jni, thread: sys::jthread, site: i32, read: Read) {
    STATE.with(|s| s.borrow_mut().read = Some(read));
    super::calls::reached(env, site, Reached::Entry(null_mut()), Some(thread));
    take();
}

const THREAD: &str = "Ljava/lang/Thread;";
const STRING: &str = "Ljava/lang/String;";

/// The natives of `jscope/Remote` the helpers call, each given the current
/// thread (`Thread.currentThread()`, which costs compiled Java nothing).
pub(super) fn natives() -> Vec<(&'static str, String, *mut c_void)> {
    vec![
        (
            "served",
            format!("({THREAD}I{STRING}{STRING}{STRING}Ljava/lang/Object;II)V"),
            served as *mut c_void,
        ),
        (
            "calling",
            format!("({THREAD}I{STRING}{STRING}{STRING}){STRING}"),
            calling as *mut c_void,
        ),
        (
            "setOkHttpRequest",
            "(Ljava/lang/Object;Ljava/lang/Object;)Z".into(),
            set_okhttp_request as *mut c_void,
        ),
        (
            "answered",
            format!("({THREAD}II)V"),
            answered as *mut c_void,
        ),
        (
            "sends",
            format!("({THREAD}ILjava/lang/Object;)V"),
            sends as *mut c_void,
        ),
        ("leave", format!("({THREAD}I)V"), leave as *mut c_void),
    ]
}

/// `served(thread, site, method, target, traceparent, connection, localPort,
/// remotePort)`: a server request (no method: none), its connection known by
/// `connection` and, when the key can move between connections (ports >= 0),
/// its ports.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn served(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
    method: sys::jstring,
    target: sys::jstring,
    traceparent: sys::jstring,
    connection: sys::jobject,
    local_port: sys::jint,
    remote_port: sys::jint,
) {
    guarded_in(&BREAKPOINTS, "remote_served", (), || {
        let env = Jni(env);
        let read = match env.string_of(method) {
            Some(method) => {
                let path = path_of(&env.string_of(target).unwrap_or_default());
                let traceparent = env.string_of(traceparent).unwrap_or_default();
                let ports = u32::try_from(local_port)
                    .ok()
                    .zip(u32::try_from(remote_port).ok());
                Read::Served(call(method, path, traceparent), connection, ports)
            }
            None => Read::Nothing,
        };
        hand(env, thread, site, read);
    })
}

/// `calling(thread, site, method, target, traceparent)`: a client call (no
/// method: none) sending the request's `traceparent`; without one, a new one
/// (in the trace the thread serves, if any) is returned for the helper to
/// add to the request (null: nothing to add).
unsafe extern "C" fn calling(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
    method: sys::jstring,
    target: sys::jstring,
    traceparent: sys::jstring,
) -> sys::jstring {
    guarded_in(&BREAKPOINTS, "remote_calling", null_mut(), || {
        let env = Jni(env);
        let Some(method) = env.string_of(method) else {
            hand(env, thread, site, Read::Nothing);
            return null_mut();
        };
        let path = path_of(&env.string_of(target).unwrap_or_default());
        let (sent, added) = match env.string_of(traceparent) {
            Some(own) => (own, None),
            None => {
                let new = new_traceparent(served_trace_id(env, Some(thread)));
                (new.clone(), Some(new))
            }
        };
        hand(env, thread, site, Read::Calling(call(method, path, sent)));
        added.map_or(null_mut(), |t| env.new_string(&t))
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

/// `answered(thread, site, status)`: a response with `status` (< 0: not a
/// response) is encoded.
unsafe extern "C" fn answered(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
    status: sys::jint,
) {
    guarded_in(&BREAKPOINTS, "remote_answered", (), || {
        let read = u32::try_from(status).map_or(Read::Nothing, Read::Answered);
        hand(Jni(env), thread, site, read);
    })
}

/// `sends(thread, site, connection)`: an exchange goes over `connection` (its
/// endpoints read by the site's handler, once per connection and thread).
unsafe extern "C" fn sends(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
    connection: sys::jobject,
) {
    guarded_in(&BREAKPOINTS, "remote_sends", (), || {
        hand(Jni(env), thread, site, Read::Sends(connection));
    })
}

/// `leave(thread, site)`: a return of the site's method.
unsafe extern "C" fn leave(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
) {
    guarded_in(&BREAKPOINTS, "remote_leave", (), || {
        super::calls::reached(Jni(env), site, Reached::Exit, Some(thread));
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
