//! Calls inserted into the HTTP captures' methods instead of breakpoints.
//!
//! A breakpoint costs its thread a trip through the interpreter and JVMTI, and
//! reading the method's arguments there costs a walk of the thread's own stack
//! that computes every walked interpreted frame's oop map (about 0.7 ms per
//! request on the JDK's HTTP client, whose callers are large methods). So, for
//! the methods of `http`, `http_client` and `frameworks`, the ClassFileLoadHook
//! of the remote-call environment rewrites the method as its class loads: at
//! its entry a call to `jscope/Remote.enter(site, slots)` with its local slots
//! (`jscope_bytecode::call_with_arguments`), and before each of its returns,
//! when the returns matter, `jscope/Remote.exit(site)`. Both natives run the
//! site's handler as a breakpoint would (`Hit::inserted`), in the same
//! environment. A method the rewriter refuses, or whose class loaded before the
//! probe class existed (before VMInit), gets its breakpoints as before when its
//! class is prepared. RMI keeps breakpoints: its client call reads its caller's
//! frame.

use std::ffi::{c_char, c_uchar, c_void};
use std::ptr::null_mut;
use std::sync::atomic::Ordering;

use jscope_bytecode::{
    call_with_arguments, ArgumentProbes, CallSite, ARGUMENTS_PROBE_DESCRIPTOR, PROBE_DESCRIPTOR,
};

use super::frameworks::call;
use super::http::{new_traceparent, path_of, served_trace_id};
use super::points::Target;
use super::readers::{self, Read};
use super::REMOTE;
use crate::jvm::breakpoints::Hit;
use crate::jvm::entry::{guarded_in, BREAKPOINTS};
use crate::jvm::{self, Jni, Jvmti};
use crate::sys;

/// The probe class, defined in the bootstrap loader at VMInit.
const PROBE_CLASS: &str = "jscope/Remote";
const PROBES: ArgumentProbes = ArgumentProbes {
    class: PROBE_CLASS,
    enter: "enter",
    exit: "exit",
    thrown: "thrown",
};

/// The sites: every HTTP target, numbered by group and place in its group.
pub(super) fn groups() -> [&'static [Target]; 3] {
    [
        &super::http::TARGETS,
        &super::http_client::TARGETS,
        &super::frameworks::TARGETS,
    ]
}

const PER_GROUP: i32 = 64;

fn target_of(site: i32) -> Option<&'static Target> {
    let group = usize::try_from(site / PER_GROUP).ok()?;
    let index = usize::try_from(site % PER_GROUP).ok()?;
    groups().get(group)?.get(index)
}

/// Called at JVM start (the remote environment's VMInit): defines the probe
/// class and turns the ClassFileLoadHook on. Without it (an error), every
/// target keeps its breakpoints.
pub(super) fn start(jvmti: Jvmti, jni: Jni) -> Result<(), String> {
    if !REMOTE.http_on.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut natives = vec![
        (
            PROBES.enter,
            ARGUMENTS_PROBE_DESCRIPTOR,
            enter as *mut c_void,
        ),
        (PROBES.exit, PROBE_DESCRIPTOR, exit as *mut c_void),
        (PROBES.thrown, PROBE_DESCRIPTOR, thrown as *mut c_void),
    ];
    natives.extend(reader_natives());
    let class =
        jvm::native_class::define(jvmti, jni, PROBE_CLASS, &natives).map_err(|e| e.to_string())?;
    jni.delete_local(class);
    let _ = REMOTE.calls_env.set(jvmti.0 as usize);
    jvmti
        .set_event(true, sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK)
        .map_err(|e| format!("cannot rewrite the HTTP classes: {e}"))
}

/// The remote environment's ClassFileLoadHook: a class holding HTTP targets
/// gets its calls.
///
/// # Safety
/// Called by the JVM only, with the pointers the JVMTI specification describes.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe extern "C" fn on_class_file_load(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    class_being_redefined: sys::jclass,
    loader: sys::jobject,
    name: *const c_char,
    _protection_domain: sys::jobject,
    class_data_len: sys::jint,
    class_data: *const c_uchar,
    new_class_data_len: *mut sys::jint,
    new_class_data: *mut *mut c_uchar,
) {
    guarded_in(&BREAKPOINTS, "remote_class_file_load", (), || {
        if class_being_redefined.is_null() {
            jvm::replace_class_file(
                Jvmti(jvmti),
                name,
                class_data_len,
                class_data,
                new_class_data_len,
                new_class_data,
                |name, bytes| {
                    rewrite(name, bytes, |reader| {
                        let package = name.rsplit_once('/').map_or("", |(p, _)| p);
                        readers::ready(Jvmti(jvmti), Jni(jni), loader, package, reader)
                    })
                },
            );
        }
    })
}

/// The class file with its targets' calls, when `internal_name` holds targets
/// (the methods rewritten are noted, so no breakpoint doubles them). The calls
/// go through the targets' reader when `ready` says the class can call it.
fn rewrite(
    internal_name: &str,
    bytes: &[u8],
    ready: impl FnOnce(&'static str) -> bool,
) -> Option<Vec<u8>> {
    let is_class = |t: &Target| {
        t.class.strip_prefix('L').and_then(|c| c.strip_suffix(';')) == Some(internal_name)
    };
    let groups = groups();
    if !groups.iter().any(|g| g.iter().any(is_class)) {
        return None;
    }
    let select = |name: &str, desc: &str| {
        groups.iter().zip(0..).find_map(|(group, g)| {
            group.iter().zip(0..).find_map(|(t, i)| {
                (is_class(t) && t.name == name && t.descriptor == desc).then_some(CallSite {
                    id: g * PER_GROUP + i,
                    returns: t.returns,
                })
            })
        })
    };
    let reader = groups
        .iter()
        .flat_map(|g| g.iter())
        .filter(|t| is_class(t))
        .find_map(|t| t.reader);
    let probes = match reader {
        Some(class) if ready(class) => ArgumentProbes { class, ..PROBES },
        _ => PROBES,
    };
    let (new_bytes, methods) = call_with_arguments(bytes, select, &probes).ok()??;
    if probes.class != PROBE_CLASS {
        REMOTE
            .through_readers
            .fetch_add(methods.len() as u64, Ordering::Relaxed);
    }
    let sig = format!("L{internal_name};");
    let mut list = REMOTE.inserted.lock().unwrap_or_else(|e| e.into_inner());
    list.extend(methods.into_iter().map(|(n, d)| (sig.clone(), n, d)));
    Some(new_bytes)
}

/// How a method with inserted calls was reached.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reached {
    /// Its entry, with its local slots (null: a reader read them).
    Entry(sys::jobject),
    /// One of its returns.
    Exit,
    /// An exception leaving it.
    Thrown,
}

/// `jscope/Remote.enter(int site, Object[] slots)`.
unsafe extern "C" fn enter(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    site: sys::jint,
    slots: sys::jobject,
) {
    guarded_in(&BREAKPOINTS, "remote_enter", (), || {
        reached(Jni(env), site, Reached::Entry(slots), None)
    })
}

/// `jscope/Remote.exit(int site)`, before a return of the site's method.
unsafe extern "C" fn exit(env: *mut sys::JNIEnv, _class: sys::jclass, site: sys::jint) {
    guarded_in(&BREAKPOINTS, "remote_exit", (), || {
        reached(Jni(env), site, Reached::Exit, None)
    })
}

/// `jscope/Remote.thrown(int site)`, as an exception leaves the site's method.
unsafe extern "C" fn thrown(env: *mut sys::JNIEnv, _class: sys::jclass, site: sys::jint) {
    guarded_in(&BREAKPOINTS, "remote_thrown", (), || {
        reached(Jni(env), site, Reached::Thrown, None)
    })
}

/// The depth of the frame reached, counted by the inserted calls: the methods
/// with returns that matter open below it on this thread (each entry of one
/// counts, each exit and exception leaving it uncounts).
fn depth_of(target: &Target, how: Reached) -> i32 {
    super::http::STATE.with(|s| {
        let open = &mut s.borrow_mut().inserted_open;
        match how {
            Reached::Entry(_) => {
                let depth = *open;
                *open += i32::from(target.returns);
                depth
            }
            Reached::Exit | Reached::Thrown => {
                *open = (*open - 1).max(0);
                *open
            }
        }
    })
}

/// Runs the site's handler as its breakpoint would have, at its entry or a
/// return. An exception leaving the method only uncounts its frame: its call
/// ends, failed, at the thread's next call or breakpoint of its capture, as
/// with breakpoints (see `points`).
pub(super) fn reached(env: Jni, site: i32, how: Reached, thread: Option<sys::jthread>) {
    let (Some(target), Some(&raw)) = (target_of(site), REMOTE.calls_env.get()) else {
        return;
    };
    let depth = depth_of(target, how);
    let (slots, location) = match how {
        Reached::Entry(slots) => (slots, 0),
        Reached::Exit => (null_mut(), 1),
        Reached::Thrown => return,
    };
    // Depths that breakpoints ask JVMTI for do not pair with these.
    let counted = !REMOTE.http_breakpointed.load(Ordering::Acquire);
    let jvmti = Jvmti(raw as *mut sys::jvmtiEnv);
    let run = |thread| {
        (target.on_hit)(&Hit {
            jvmti,
            jni: env,
            thread,
            method: null_mut(),
            location,
            args: slots,
            inserted: true,
            depth: counted.then_some(depth),
        })
    };
    match thread {
        // A reader's native: the handler reads at most a connection's
        // addresses, in the native's own frame of local references.
        Some(thread) => run(thread),
        // The handler reads the slots: a frame of its own for their references.
        None => env.with_local_frame(64, || {
            if let Some(thread) = jvmti.current_thread() {
                run(thread);
            }
        }),
    }
    // Whatever the handler's calls threw must not reach the application.
    env.clear_exception();
}

// The natives the Java readers (`readers`) call.

/// Runs the entry handler of `site` on `thread` (the current one) with
/// `read` left for it.
fn hand(env: Jni, thread: sys::jthread, site: i32, read: Read) {
    readers::leave_for_handler(read);
    reached(env, site, Reached::Entry(null_mut()), Some(thread));
    readers::take();
}

/// The natives of `jscope/Remote` the readers call, each given the current
/// thread (`Thread.currentThread()`, which costs compiled Java nothing).
fn reader_natives() -> [(&'static str, &'static str, *mut c_void); 6] {
    [
        (
            "served",
            "(Ljava/lang/Thread;ILjava/lang/String;Ljava/lang/Object;II)V",
            served as *mut c_void,
        ),
        (
            "calling",
            "(Ljava/lang/Thread;ILjava/lang/String;[B)I",
            calling as *mut c_void,
        ),
        (
            "setOkHttpRequest",
            "(Ljava/lang/Object;Ljava/lang/Object;)Z",
            set_okhttp_request as *mut c_void,
        ),
        (
            "answered",
            "(Ljava/lang/Thread;II)V",
            answered as *mut c_void,
        ),
        (
            "sends",
            "(Ljava/lang/Thread;ILjava/lang/Object;)V",
            sends as *mut c_void,
        ),
        ("leave", "(Ljava/lang/Thread;I)V", leave as *mut c_void),
    ]
}

/// A reader's request text: its method, target and traceparent (empty: none),
/// one line each. Read as (method, path, traceparent).
fn request_lines(env: Jni, request: sys::jstring) -> Option<(String, String, String)> {
    let text = env.short_string_of(request)?;
    let mut lines = text.splitn(3, '\n');
    let method = lines.next()?.to_string();
    let path = path_of(lines.next()?);
    let traceparent = lines.next()?.to_string();
    Some((method, path, traceparent))
}

/// `served(thread, site, request, connection, localPort, remotePort)`: a
/// server request (`request_lines`; null: none), its connection known by
/// `connection` and, when the key can move between connections (ports >= 0),
/// its ports.
unsafe extern "C" fn served(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
    request: sys::jstring,
    connection: sys::jobject,
    local_port: sys::jint,
    remote_port: sys::jint,
) {
    guarded_in(&BREAKPOINTS, "remote_served", (), || {
        let env = Jni(env);
        let read = match request_lines(env, request) {
            Some((method, path, traceparent)) => {
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

/// `calling(thread, site, request, added)`: a client call (`request_lines`;
/// null: none); a request without a traceparent gets a new one (in the trace
/// the thread serves, if any), written into `added` for the reader to add to
/// the request: its length is returned (0: nothing to add).
unsafe extern "C" fn calling(
    env: *mut sys::JNIEnv,
    _class: sys::jclass,
    thread: sys::jthread,
    site: sys::jint,
    request: sys::jstring,
    added: sys::jobject,
) -> sys::jint {
    guarded_in(&BREAKPOINTS, "remote_calling", 0, || {
        let env = Jni(env);
        let Some((method, path, own)) = request_lines(env, request) else {
            hand(env, thread, site, Read::Nothing);
            return 0;
        };
        let (sent, written) = if own.is_empty() {
            let new = new_traceparent(served_trace_id(env, Some(thread)));
            match env.set_bytes(added, new.as_bytes()) {
                true => {
                    let written = new.len();
                    (new, written)
                }
                false => (String::new(), 0),
            }
        } else {
            (own, 0)
        };
        hand(env, thread, site, Read::Calling(call(method, path, sent)));
        sys::jint::try_from(written).unwrap_or(0)
    })
}

/// `setOkHttpRequest(call, request)`: `RealCall.originalRequest` (final)
/// becomes `request`, through JNI, for a reader that could not set it by
/// reflection.
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
        reached(Jni(env), site, Reached::Exit, Some(thread));
    })
}
