//! The JVMTI side of remote-call capture: breakpoints at the RMI methods'
//! entries and return instructions, endpoints from the connection's socket.
//! A client call the server answered with an exception ends, failed, when
//! that exception is read (`exceptionReceivedFromServer`); a frame left by
//! any other exception ends its call, failed, at the thread's next RMI
//! breakpoint (`points`).

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use super::points::{
    next_seq, set_breakpoints, socket_endpoints, Args, At, Endpoint, Frames, Target,
};
use super::{push, RawRemote, REMOTE};
use crate::java_threads::ThreadKey;
use crate::jvm::breakpoints::{self, Hit};
use crate::jvm::entry::{guarded_in, BREAKPOINTS};
use crate::jvm::{Jni, Jvmti, Vm};
use crate::sys;

const STREAM_REMOTE_CALL: &str = "Lsun/rmi/transport/StreamRemoteCall;";
const UNICAST_REF: &str = "Lsun/rmi/server/UnicastRef;";
const UNICAST_SERVER_REF: &str = "Lsun/rmi/server/UnicastServerRef;";

/// The methods to break at, with their handlers.
const TARGETS: [Target; 6] = [
    Target::entry(
        STREAM_REMOTE_CALL,
        "<init>",
        "(Lsun/rmi/transport/Connection;Ljava/rmi/server/ObjID;IJ)V",
        client_new_call,
    ),
    Target::entry(
        STREAM_REMOTE_CALL,
        "<init>",
        "(Lsun/rmi/transport/Connection;)V",
        server_new_call,
    ),
    Target::entry_and_returns(
        UNICAST_REF,
        "invoke",
        "(Ljava/rmi/Remote;Ljava/lang/reflect/Method;[Ljava/lang/Object;J)Ljava/lang/Object;",
        client_invoke,
    ),
    // The server answered with an exception, which invoke is about to throw:
    // the client call ends here, failed (no return of invoke will be hit).
    Target::entry(
        STREAM_REMOTE_CALL,
        "exceptionReceivedFromServer",
        "(Ljava/lang/Exception;)V",
        client_throws,
    ),
    Target::entry_and_returns(
        UNICAST_SERVER_REF,
        "dispatch",
        "(Ljava/rmi/Remote;Ljava/rmi/server/RemoteCall;)V",
        server_dispatch,
    ),
    // The server's answer is about to be written: its execution ends here, before
    // the client can have it (ending at dispatch's return, after the answer was
    // flushed, would let the client finish first and skew the clock bounds).
    Target::entry(
        STREAM_REMOTE_CALL,
        "getResultStream",
        "(Z)Ljava/io/ObjectOutput;",
        server_answers,
    ),
];

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
    /// The request a dispatch opened on this thread, 0 for none.
    request: u32,
}

#[derive(Default)]
struct ThreadState {
    /// Open `UnicastRef.invoke` frames, innermost last.
    clients: Frames<Call>,
    /// The incoming call read last on this thread, waiting for its dispatch.
    incoming: Option<OnConnection>,
    /// Open `dispatch` frames (None: a JDK-internal call, not recorded).
    servers: Frames<Option<Call>>,
}

thread_local! {
    static STATE: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// Creates the capture's own JVMTI environment. Only at JVM start: the
/// capabilities it needs cannot be added to a running JVM.
pub fn install(vm: Vm, options: &super::RemoteOptions) -> Result<(), String> {
    REMOTE.rmi_on.store(options.rmi, Ordering::Release);
    REMOTE.http_on.store(options.http, Ordering::Release);
    let jvmti = vm.jvmti().ok_or("no JVMTI environment for remote calls")?;
    let mut caps = crate::jvm::no_capabilities();
    caps.set_can_get_bytecodes(1);
    // RMI's calls are breakpoints (their arguments read from the frames), and
    // end at breakpoints on their methods' return instructions (no frame pops:
    // a thread waiting for one runs interpreted only). HTTP alone takes neither
    // capability: holding breakpoints or local access turns off the JIT's
    // escape analysis for every method the JVM compiles.
    if options.rmi {
        caps.set_can_generate_breakpoint_events(1);
        caps.set_can_access_local_variables(1);
    }
    // HTTP methods get calls inserted as their classes load (`calls`).
    if options.http {
        caps.set_can_generate_all_class_hook_events(1);
    }
    if jvmti.add_capabilities(&caps).is_err() {
        return Err(
            "the JVM refused the capabilities remote calls need (breakpoints, locals, class hooks)"
                .into(),
        );
    }
    let mut cb = crate::jvm::no_callbacks();
    cb.ClassPrepare = Some(on_class_prepare);
    cb.ClassFileLoadHook = Some(super::calls::on_class_file_load);
    cb.VMInit = Some(on_vm_init);
    breakpoints::install(&mut cb);
    if jvmti.set_callbacks(&cb).is_err() {
        return Err("cannot set the remote-call callbacks".into());
    }
    let mut events = vec![sys::JVMTI_EVENT_CLASS_PREPARE, sys::JVMTI_EVENT_VM_INIT];
    if options.rmi {
        events.push(sys::JVMTI_EVENT_BREAKPOINT);
    }
    for event in events {
        if jvmti.set_event(true, event).is_err() {
            return Err("cannot enable the remote-call events".into());
        }
    }
    // JVMTI grants breakpoints to one environment only: park events use this
    // one (and add the capability themselves when RMI did not).
    crate::events::park::share_env(jvmti);
    Ok(())
}

/// Inserted calls need the live phase (their probe class is defined then).
unsafe extern "C" fn on_vm_init(
    jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
) {
    guarded_in(&BREAKPOINTS, "remote_vm_init", (), || {
        if let Err(e) = super::calls::start(Jvmti(jvmti), Jni(jni)) {
            crate::report(format!("{e}; HTTP calls are captured by breakpoints"));
        }
    })
}

unsafe extern "C" fn on_class_prepare(
    jvmti: *mut sys::jvmtiEnv,
    _jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
    class: sys::jclass,
) {
    guarded_in(&BREAKPOINTS, "remote_class_prepare", (), || {
        let jvmti = Jvmti(jvmti);
        let sig = jvmti.class_signature(class).unwrap_or_default();
        if REMOTE.http_on.load(Ordering::Acquire) {
            super::http_class_prepared(jvmti, &sig, class);
        }
        if REMOTE.rmi_on.load(Ordering::Acquire) {
            set_breakpoints(jvmti, &sig, class, &TARGETS);
        }
    })
}

/// Ends, failed, this thread's calls whose frames are gone at `at` (left by
/// an exception: see `points`).
fn close_left(hit: &Hit, at: At, now: u64) {
    loop {
        let (client, server) = STATE.with(|s| {
            let mut s = s.borrow_mut();
            (s.clients.take_left(at), s.servers.take_left(at))
        });
        if client.is_none() && server.is_none() {
            return;
        }
        returned(hit, false, client, true, now);
        returned(hit, true, server.flatten(), true, now);
    }
}

/// Where the hit is in its thread's stack, after ending the calls left.
fn at(hit: &Hit) -> Option<(At, u64)> {
    let at = At::of(hit)?;
    let now = crate::clock::monotonic_ns();
    close_left(hit, at, now);
    Some((at, now))
}

/// `invoke(Remote obj, Method method, Object[] params, long opnum)`: slots 1-4.
/// Its arguments are read later, from the `StreamRemoteCall` constructor: at its
/// first instruction a method whose class exact tracing instrumented has no
/// local variable table entries yet (JVMTI answers INVALID_SLOT). At its
/// return the client call ends.
fn client_invoke(hit: &Hit) {
    let Some((at, now)) = at(hit) else {
        return;
    };
    if !at.entry {
        let call = STATE.with(|s| s.borrow_mut().clients.take_returning(at));
        returned(hit, false, call, false, now);
        return;
    }
    let call = Call {
        start_ns: now,
        answered_ns: None,
        method: String::new(),
        hash: 0,
        conn: None,
        request: 0,
    };
    STATE.with(|s| s.borrow_mut().clients.push(at.depth, call));
}

/// `StreamRemoteCall.exceptionReceivedFromServer(Exception)`, inside the
/// innermost open invoke: its call ends, failed.
fn client_throws(hit: &Hit) {
    let Some((_, now)) = at(hit) else {
        return;
    };
    let call = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let on_wire = s.clients.last_mut().is_some_and(|c| c.conn.is_some());
        on_wire.then(|| s.clients.pop()).flatten()
    });
    returned(hit, false, call, true, now);
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
fn endpoints(env: Jni, conn: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    let socket = env.object_field(conn, "socket", "Ljava/net/Socket;");
    let ends = socket_endpoints(env, socket);
    env.delete_local(socket);
    ends
}

/// `StreamRemoteCall(Connection c, ObjID id, int op, long hash)`: slots 1-4.
fn client_new_call(hit: &Hit) {
    at(hit);
    let env = hit.jni;
    let args = Args::of(hit, 0);
    let conn = args.object(1);
    let ends = endpoints(env, conn);
    env.delete_local(conn);
    let Some((local, remote)) = ends else {
        return;
    };
    let seq = next_seq(&local, &remote);
    let id = args.object(2);
    let object = env.call_string(id, "toString").unwrap_or_default();
    env.delete_local(id);
    let hash = args.long(4).unwrap_or(0) as u64;
    // The caller is UnicastRef.invoke (depth 1) for the calls recorded.
    let m = args.object_at(1, 2);
    let method = short_method(&env.call_string(m, "toGenericString").unwrap_or_default());
    env.delete_local(m);
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
fn server_new_call(hit: &Hit) {
    at(hit);
    let env = hit.jni;
    let conn = Args::of(hit, 0).object(1);
    let ends = endpoints(env, conn);
    env.delete_local(conn);
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
/// call is recorded with no object name. At its return the server call ends
/// (its answer was written: `server_answers`).
fn server_dispatch(hit: &Hit) {
    let Some((at, now)) = at(hit) else {
        return;
    };
    let (env, thread) = (hit.jni, hit.thread);
    if !at.entry {
        let call = STATE.with(|s| s.borrow_mut().servers.take_returning(at));
        returned(hit, true, call.flatten(), false, now);
        return;
    }
    let obj = Args::of(hit, 0).object(1);
    let class = env.class_name(obj).unwrap_or_default();
    env.delete_local(obj);
    let incoming = STATE.with(|s| s.borrow_mut().incoming.take());
    let call = incoming
        .filter(|_| !class.starts_with("sun.rmi."))
        .map(|mut on| {
            let opening = super::requests::Opening {
                kind: jscope_format::RequestKind::Rmi,
                name: class.clone(),
                tags: String::new(),
                traceparent: None,
            };
            on.object = class;
            Call {
                start_ns: crate::clock::monotonic_ns(),
                answered_ns: None,
                method: String::new(),
                hash: 0,
                conn: Some(on),
                request: super::begin_request(env, thread, opening),
            }
        });
    STATE.with(|s| s.borrow_mut().servers.push(at.depth, call));
}

/// The first answer written inside the innermost open dispatch of this thread.
fn server_answers(hit: &Hit) {
    let now = at(hit).map_or_else(crate::clock::monotonic_ns, |(_, now)| now);
    STATE.with(|s| {
        if let Some(Some(call)) = s.borrow_mut().servers.last_mut() {
            call.answered_ns.get_or_insert(now);
        }
    });
}

/// A call's frame was left at `end` (by an exception when `left`): its
/// request (if any) ends, the call is recorded.
fn returned(hit: &Hit, server: bool, call: Option<Call>, left: bool, end: u64) {
    if let Some(call) = call {
        let thread = super::thread_key(hit.jni, hit.thread);
        super::end_request(thread, call.request, left);
        emit(server, call, end, left, thread);
    }
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
