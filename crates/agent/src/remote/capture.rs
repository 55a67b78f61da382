//! The JVMTI side of remote-call capture: breakpoints at the RMI methods' entries,
//! frame pops at their returns, endpoints from the connection's socket.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{http, push, RawRemote};
use crate::callback_env::{Env, Ti};
use crate::java_threads::ThreadKey;
use crate::jvm::Jni;
use crate::jvm::Vm;
use crate::sys;

const STREAM_REMOTE_CALL: &str = "Lsun/rmi/transport/StreamRemoteCall;";
const UNICAST_REF: &str = "Lsun/rmi/server/UnicastRef;";
const UNICAST_SERVER_REF: &str = "Lsun/rmi/server/UnicastServerRef;";

/// The methods, by jmethodID once their classes are prepared.
static CLIENT_NEW_CALL: AtomicUsize = AtomicUsize::new(0);
static SERVER_NEW_CALL: AtomicUsize = AtomicUsize::new(0);
static INVOKE: AtomicUsize = AtomicUsize::new(0);
static DISPATCH: AtomicUsize = AtomicUsize::new(0);
static RESULT: AtomicUsize = AtomicUsize::new(0);

/// (class signature, method, descriptor, slot to remember its id in).
const TARGETS: [Target; 5] = [
    (
        STREAM_REMOTE_CALL,
        "<init>",
        "(Lsun/rmi/transport/Connection;Ljava/rmi/server/ObjID;IJ)V",
        &CLIENT_NEW_CALL,
    ),
    (
        STREAM_REMOTE_CALL,
        "<init>",
        "(Lsun/rmi/transport/Connection;)V",
        &SERVER_NEW_CALL,
    ),
    (
        UNICAST_REF,
        "invoke",
        "(Ljava/rmi/Remote;Ljava/lang/reflect/Method;[Ljava/lang/Object;J)Ljava/lang/Object;",
        &INVOKE,
    ),
    (
        UNICAST_SERVER_REF,
        "dispatch",
        "(Ljava/rmi/Remote;Ljava/rmi/server/RemoteCall;)V",
        &DISPATCH,
    ),
    // The server's answer is about to be written: its execution ends here, before
    // the client can have it (ending at dispatch's return, after the answer was
    // flushed, would let the client finish first and skew the clock bounds).
    (
        STREAM_REMOTE_CALL,
        "getResultStream",
        "(Z)Ljava/io/ObjectOutput;",
        &RESULT,
    ),
];

type Endpoint = (String, u32);

/// Calls seen so far per connection (local end, remote end), on either side.
static CONN_SEQ: Mutex<Option<HashMap<(Endpoint, Endpoint), u64>>> = Mutex::new(None);

pub(super) fn next_seq(local: &Endpoint, remote: &Endpoint) -> u64 {
    let mut m = CONN_SEQ.lock().unwrap_or_else(|e| e.into_inner());
    let n = m
        .get_or_insert_with(HashMap::new)
        .entry((local.clone(), remote.clone()))
        .or_insert(0);
    *n += 1;
    *n
}

/// A call on a connection, as the `StreamRemoteCall` constructor saw it.
#[derive(Clone)]
struct OnConnection {
    local: Endpoint,
    remote: Endpoint,
    seq: u64,
    object: String,
}

struct Call {
    start_ns: u64,
    /// When the server began writing its answer (server calls only).
    answered_ns: Option<u64>,
    method: String,
    hash: u64,
    conn: Option<OnConnection>,
}

#[derive(Default)]
struct ThreadState {
    /// Open `UnicastRef.invoke` frames, innermost last.
    clients: Vec<Call>,
    /// The incoming call read last on this thread, waiting for its dispatch.
    incoming: Option<OnConnection>,
    /// Open `dispatch` frames (None: a JDK-internal call, not recorded).
    servers: Vec<Option<Call>>,
}

thread_local! {
    static STATE: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// Which protocols are captured (set once, before any class is prepared).
static RMI_ON: AtomicBool = AtomicBool::new(false);
static HTTP_ON: AtomicBool = AtomicBool::new(false);

/// Creates the capture's own JVMTI environment. Only at JVM start: the
/// capabilities it needs cannot be added to a running JVM.
pub fn install(vm: Vm, options: &super::RemoteOptions) -> Result<(), String> {
    RMI_ON.store(options.rmi, Ordering::Release);
    HTTP_ON.store(options.http, Ordering::Release);
    let env = vm.get_env(sys::JVMTI_VERSION_1_2);
    if env.is_null() {
        return Err("no JVMTI environment for remote calls".into());
    }
    let ti = Ti(env.cast());
    // SAFETY (all calls): valid env; structs are zero-initialised then filled.
    let t = unsafe { &**ti.0 };
    let mut caps: sys::jvmtiCapabilities = unsafe { std::mem::zeroed() };
    caps.set_can_generate_breakpoint_events(1);
    caps.set_can_generate_frame_pop_events(1);
    caps.set_can_access_local_variables(1);
    if unsafe { (t.AddCapabilities.expect("JVMTI AddCapabilities"))(ti.0, &caps) } != 0 {
        return Err(
            "the JVM refused the capabilities remote calls need (breakpoints, frame pops, locals)"
                .into(),
        );
    }
    let mut cb: sys::jvmtiEventCallbacks = unsafe { std::mem::zeroed() };
    cb.ClassPrepare = Some(on_class_prepare);
    cb.Breakpoint = Some(on_breakpoint);
    cb.FramePop = Some(on_frame_pop);
    let size = std::mem::size_of::<sys::jvmtiEventCallbacks>() as sys::jint;
    if unsafe { (t.SetEventCallbacks.expect("JVMTI SetEventCallbacks"))(ti.0, &cb, size) } != 0 {
        return Err("cannot set the remote-call callbacks".into());
    }
    for event in [
        sys::JVMTI_EVENT_CLASS_PREPARE,
        sys::JVMTI_EVENT_BREAKPOINT,
        sys::JVMTI_EVENT_FRAME_POP,
    ] {
        let set = t
            .SetEventNotificationMode
            .expect("JVMTI SetEventNotificationMode");
        if unsafe { set(ti.0, sys::JVMTI_ENABLE, event, std::ptr::null_mut()) } != 0 {
            return Err("cannot enable the remote-call events".into());
        }
    }
    // JVMTI grants breakpoints to one environment only: park events use this one.
    crate::events::park::share_env(ti.0);
    Ok(())
}

unsafe extern "C" fn on_class_prepare(
    jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
    class: sys::jclass,
) {
    let _ = std::panic::catch_unwind(|| {
        let ti = Ti(jvmti);
        let sig = ti.class_signature(class);
        if HTTP_ON.load(Ordering::Acquire) {
            http::on_class_prepare(ti, &sig, class);
        }
        if RMI_ON.load(Ordering::Acquire) {
            set_breakpoints(ti, &sig, class, &TARGETS);
        }
    });
}

/// A method to break at: (class signature, name, descriptor, slot for its id).
pub(super) type Target = (
    &'static str,
    &'static str,
    &'static str,
    &'static AtomicUsize,
);

/// Sets a breakpoint at each target method of a prepared class and remembers its id.
pub(super) fn set_breakpoints(ti: Ti, sig: &str, class: sys::jclass, targets: &[Target]) {
    if !targets.iter().any(|t| t.0 == sig) {
        return;
    }
    for (m, name, desc) in ti.methods(class) {
        for (_, n, d, slot) in targets.iter().filter(|t| t.0 == sig) {
            if name == *n && desc == *d && ti.set_breakpoint(m, 0) {
                slot.store(m as usize, Ordering::Release);
            }
        }
    }
}

/// Whether `method` is the target whose id `slot` holds.
pub(super) fn is(method: sys::jmethodID, slot: &AtomicUsize) -> bool {
    let m = method as usize;
    m != 0 && m == slot.load(Ordering::Acquire)
}

unsafe extern "C" fn on_breakpoint(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    method: sys::jmethodID,
    location: sys::jlocation,
) {
    let _ = std::panic::catch_unwind(|| {
        let (ti, env) = (Ti(jvmti), Env(jni));
        if is(method, &INVOKE) {
            client_invoke(ti, env, thread);
        } else if is(method, &CLIENT_NEW_CALL) {
            client_new_call(ti, env, thread);
        } else if is(method, &SERVER_NEW_CALL) {
            server_new_call(ti, env, thread);
        } else if is(method, &DISPATCH) {
            server_dispatch(ti, env, thread);
        } else if is(method, &RESULT) {
            server_answers();
        } else if crate::events::park::on_shared_breakpoint(jvmti, jni, thread, method, location) {
            // A park event's.
        } else {
            http::on_breakpoint(ti, env, thread, method);
        }
    });
}

/// `invoke(Remote obj, Method method, Object[] params, long opnum)`: slots 1-4.
/// Its arguments are read later, from the `StreamRemoteCall` constructor: at its
/// first instruction a method whose class exact tracing instrumented has no
/// local variable table entries yet (JVMTI answers INVALID_SLOT).
fn client_invoke(ti: Ti, _env: Env, thread: sys::jthread) {
    let call = Call {
        start_ns: crate::clock::monotonic_ns(),
        answered_ns: None,
        method: String::new(),
        hash: 0,
        conn: None,
    };
    if ti.notify_frame_pop(thread) {
        STATE.with(|s| s.borrow_mut().clients.push(call));
    }
}

/// `public abstract int beacon.Beacon.remoteFoo(int,int) throws ...` -> `remoteFoo(int,int)`.
fn short_method(generic: &str) -> String {
    let head = generic.split(" throws ").next().unwrap_or(generic);
    let call = head.rsplit(' ').next().unwrap_or(head);
    match call.find('(') {
        Some(p) => {
            let name = call[..p].rsplit('.').next().unwrap_or(&call[..p]);
            format!("{name}{}", &call[p..])
        }
        None => call.to_string(),
    }
}

/// The endpoints of a `TCPConnection`'s socket, from this JVM's side.
fn endpoints(env: Env, conn: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    let socket = env.object_field(conn, "socket", "Ljava/net/Socket;");
    let ends = http::socket_endpoints(env, socket);
    env.delete(socket);
    ends
}

/// `StreamRemoteCall(Connection c, ObjID id, int op, long hash)`: slots 1-4.
fn client_new_call(ti: Ti, env: Env, thread: sys::jthread) {
    let conn = ti.local_object(thread, 0, 1);
    let ends = endpoints(env, conn);
    env.delete(conn);
    let Some((local, remote)) = ends else {
        return;
    };
    let seq = next_seq(&local, &remote);
    let id = ti.local_object(thread, 0, 2);
    let object = env.call_string(id, "toString").unwrap_or_default();
    env.delete(id);
    let hash = ti.local_long(thread, 0, 4).unwrap_or(0) as u64;
    // The caller is UnicastRef.invoke (depth 1) for the calls recorded.
    let m = ti.local_object(thread, 1, 2);
    let method = short_method(&env.call_string(m, "toGenericString").unwrap_or_default());
    env.delete(m);
    STATE.with(|s| {
        if let Some(call) = s
            .borrow_mut()
            .clients
            .last_mut()
            .filter(|c| c.conn.is_none())
        {
            // The call starts on the wire here, inside the traced stub call (the
            // breakpoint at invoke's entry fires before its probes).
            call.start_ns = crate::clock::monotonic_ns();
            (call.method, call.hash) = (method, hash);
            call.conn = Some(OnConnection {
                local,
                remote,
                seq,
                object,
            });
        }
    });
}

/// `StreamRemoteCall(Connection c)`: a call read from a connection.
fn server_new_call(ti: Ti, env: Env, thread: sys::jthread) {
    let conn = ti.local_object(thread, 0, 1);
    let ends = endpoints(env, conn);
    env.delete(conn);
    let Some((local, remote)) = ends else {
        return;
    };
    let seq = next_seq(&local, &remote);
    let on = OnConnection {
        local,
        remote,
        seq,
        object: String::new(),
    };
    STATE.with(|s| s.borrow_mut().incoming = Some(on));
}

/// `dispatch(Remote obj, RemoteCall call)`: the JDK's registry and DGC objects
/// (`sun.rmi.*`) are counted but not recorded; their clients are not either.
/// When `obj` cannot be read (dispatch itself traced: see `client_invoke`) the
/// call is recorded with no object name.
fn server_dispatch(ti: Ti, env: Env, thread: sys::jthread) {
    let obj = ti.local_object(thread, 0, 1);
    let class = env.class_name(obj).unwrap_or_default();
    env.delete(obj);
    let incoming = STATE.with(|s| s.borrow_mut().incoming.take());
    let call = incoming
        .filter(|_| !class.starts_with("sun.rmi."))
        .map(|mut on| {
            on.object = class;
            Call {
                start_ns: crate::clock::monotonic_ns(),
                answered_ns: None,
                method: String::new(),
                hash: 0,
                conn: Some(on),
            }
        });
    if ti.notify_frame_pop(thread) {
        STATE.with(|s| s.borrow_mut().servers.push(call));
    }
}

/// The first answer written inside the innermost open dispatch of this thread.
fn server_answers() {
    let now = crate::clock::monotonic_ns();
    STATE.with(|s| {
        if let Some(Some(call)) = s.borrow_mut().servers.last_mut() {
            call.answered_ns.get_or_insert(now);
        }
    });
}

unsafe extern "C" fn on_frame_pop(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
    method: sys::jmethodID,
    by_exception: sys::jboolean,
) {
    let _ = std::panic::catch_unwind(|| {
        let end = crate::clock::monotonic_ns();
        let failed = by_exception != 0;
        let (server, call) = if is(method, &INVOKE) {
            (false, STATE.with(|s| s.borrow_mut().clients.pop()))
        } else if is(method, &DISPATCH) {
            (true, STATE.with(|s| s.borrow_mut().servers.pop()).flatten())
        } else {
            http::on_frame_pop(Env(jni), thread, method, failed);
            return;
        };
        if let Some(call) = call {
            emit(server, call, end, failed, ThreadKey::of(Jni(jni), thread));
        }
    });
}

fn emit(server: bool, call: Call, end_ns: u64, failed: bool, thread: ThreadKey) {
    let end_ns = call.answered_ns.unwrap_or(end_ns);
    let Some(on) = call.conn else {
        return; // no connection seen (e.g. not TCP): nothing to match it by
    };
    push(RawRemote {
        server,
        thread,
        start_ns: call.start_ns,
        duration_ns: end_ns.saturating_sub(call.start_ns),
        local: on.local,
        remote: on.remote,
        conn_seq: on.seq,
        object: on.object,
        method_hash: call.hash,
        method: call.method,
        failed,
        http: false,
        request_id: String::new(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_are_shortened_to_name_and_parameters() {
        assert_eq!(
            short_method("public abstract int beacon.Beacon.remoteFoo(int,int) throws java.rmi.RemoteException"),
            "remoteFoo(int,int)"
        );
        assert_eq!(short_method("void a.B.run()"), "run()");
    }
}
