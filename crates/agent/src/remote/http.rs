//! HTTP calls over the JDK's built-ins, in the remote-call JVMTI environment:
//!
//! - client (`HttpURLConnection`): `sun.net.www.http.HttpClient.writeRequests`
//!   is where the request headers go on the wire; at its entry a W3C
//!   `traceparent` is added to them unless the application set one, and the call
//!   starts; it ends when `HttpClient.parseHTTP` (the response's status line and
//!   headers) returns, so reading the body is not part of it; a status >= 500
//!   marks it failed. Endpoints are the `HttpClient`'s socket.
//! - server (`com.sun.net.httpserver`): `ServerImpl$Exchange$LinkHandler.handle`
//!   runs the application's filters and handler; the call starts there (its
//!   `traceparent`, method, path and endpoints read from the exchange) and ends
//!   when the response headers start being sent (`ExchangeImpl.sendResponseHeaders`,
//!   before the client can have them, so the clock bounds hold) or when it returns.
//!
//! The header is an ordinary request header, which a peer without jscope ignores.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::capture::{is, next_seq, set_breakpoints, Target};
use super::{push, RawRemote};
use crate::callback_env::{Env, Ti};
use crate::java_threads::ThreadKey;
use crate::jvm::Jni;
use crate::sys;

const HTTP_CLIENT: &str = "Lsun/net/www/http/HttpClient;";
const LINK_HANDLER: &str = "Lsun/net/httpserver/ServerImpl$Exchange$LinkHandler;";
const EXCHANGE: &str = "Lsun/net/httpserver/ExchangeImpl;";

static WRITE_1: AtomicUsize = AtomicUsize::new(0);
static WRITE_2: AtomicUsize = AtomicUsize::new(0);
static PARSE: AtomicUsize = AtomicUsize::new(0);
static HANDLE: AtomicUsize = AtomicUsize::new(0);
static RESPOND: AtomicUsize = AtomicUsize::new(0);

/// (class signature, method, descriptor, slot to remember its id in).
/// `parseHTTP` lost its `ProgressSource` parameter after JDK 17: one of the two
/// exists.
const TARGETS: [Target; 6] = [
    (
        HTTP_CLIENT,
        "writeRequests",
        "(Lsun/net/www/MessageHeader;)V",
        &WRITE_1,
    ),
    (
        HTTP_CLIENT,
        "writeRequests",
        "(Lsun/net/www/MessageHeader;Lsun/net/www/http/PosterOutputStream;)V",
        &WRITE_2,
    ),
    (
        HTTP_CLIENT,
        "parseHTTP",
        "(Lsun/net/www/MessageHeader;Lsun/net/ProgressSource;Lsun/net/www/protocol/http/HttpURLConnection;)Z",
        &PARSE,
    ),
    (
        HTTP_CLIENT,
        "parseHTTP",
        "(Lsun/net/www/MessageHeader;Lsun/net/www/protocol/http/HttpURLConnection;)Z",
        &PARSE,
    ),
    (
        LINK_HANDLER,
        "handle",
        "(Lcom/sun/net/httpserver/HttpExchange;)V",
        &HANDLE,
    ),
    (EXCHANGE, "sendResponseHeaders", "(IJ)V", &RESPOND),
];

type Endpoint = (String, u32);

struct Call {
    start_ns: u64,
    answered_ns: Option<u64>,
    local: Endpoint,
    remote: Endpoint,
    seq: u64,
    path: String,
    method: String,
    traceparent: String,
    failed: bool,
}

#[derive(Default)]
struct ThreadState {
    /// The request written last on this thread, waiting for its response.
    client: Option<Call>,
    /// A parseHTTP frame pop is pending for it: a global reference to the
    /// response headers it fills (0 when none), for the status at its return.
    parsing: Option<usize>,
    /// Open handler frames (None: its exchange could not be read).
    servers: Vec<Option<Call>>,
}

thread_local! {
    static STATE: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// Sets the breakpoints of a prepared class that is one of the targets.
pub fn on_class_prepare(ti: Ti, sig: &str, class: sys::jclass) {
    set_breakpoints(ti, sig, class, &TARGETS);
    super::http_client::on_class_prepare(ti, sig, class);
}

/// Handles a breakpoint if it is one of HTTP's; false otherwise.
pub fn on_breakpoint(ti: Ti, env: Env, thread: sys::jthread, method: sys::jmethodID) -> bool {
    if is(method, &WRITE_1) || is(method, &WRITE_2) {
        client_writes(ti, env, thread);
    } else if is(method, &PARSE) {
        client_parses(ti, env, thread);
    } else if is(method, &HANDLE) {
        server_handles(ti, env, thread);
    } else if is(method, &RESPOND) {
        server_responds(ti, thread);
    } else {
        return super::http_client::on_breakpoint(ti, env, thread, method);
    }
    true
}

/// Handles a frame pop if it is one of HTTP's; false otherwise.
pub fn on_frame_pop(env: Env, thread: sys::jthread, method: sys::jmethodID, failed: bool) -> bool {
    let end = crate::clock::monotonic_ns();
    let (server, call) = if is(method, &PARSE) {
        let (call, responses) = STATE.with(|s| {
            let mut s = s.borrow_mut();
            (s.client.take(), s.parsing.take().unwrap_or(0))
        });
        let status = response_status(env, responses as sys::jobject);
        env.delete_global(responses as sys::jobject);
        let call = call.map(|mut c| {
            c.failed = status.is_some_and(|s| s >= 500);
            c
        });
        (false, call)
    } else if is(method, &HANDLE) {
        (true, STATE.with(|s| s.borrow_mut().servers.pop()).flatten())
    } else {
        return false;
    };
    if let Some(mut call) = call {
        call.failed |= failed;
        emit(server, call, end, ThreadKey::of(Jni(env.0), thread));
    }
    true
}

fn emit(server: bool, call: Call, end_ns: u64, thread: ThreadKey) {
    let end_ns = call.answered_ns.unwrap_or(end_ns);
    push(RawRemote {
        server,
        thread,
        start_ns: call.start_ns,
        duration_ns: end_ns.saturating_sub(call.start_ns),
        local: call.local,
        remote: call.remote,
        conn_seq: call.seq,
        object: call.path,
        method_hash: 0,
        method: call.method,
        failed: call.failed,
        http: true,
        request_id: call.traceparent,
    });
}

/// The endpoints of a connected `java.net.Socket`, from this JVM's side.
pub fn socket_endpoints(env: Env, socket: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    if socket.is_null() {
        return None;
    }
    let host = |getter: &str| {
        let addr = env.call_object(socket, getter, "()Ljava/net/InetAddress;");
        let h = env.call_string(addr, "getHostAddress");
        env.delete(addr);
        h
    };
    let local = (
        host("getLocalAddress"),
        env.call_int(socket, "getLocalPort"),
    );
    let remote = (host("getInetAddress"), env.call_int(socket, "getPort"));
    match (local, remote) {
        ((Some(lh), Some(lp)), (Some(rh), Some(rp))) => Some(((lh, lp as u32), (rh, rp as u32))),
        _ => None,
    }
}

/// `HttpClient.writeRequests(MessageHeader head, ...)`: `this` is slot 0, the
/// headers slot 1. The headers are printed to the socket right after this.
fn client_writes(ti: Ti, env: Env, thread: sys::jthread) {
    let this = ti.local_object(thread, 0, 0);
    let socket = env.object_field(this, "serverSocket", "Ljava/net/Socket;");
    let ends = socket_endpoints(env, socket);
    env.delete(socket);
    env.delete(this);
    let Some((local, remote)) = ends else {
        return;
    };
    let head = ti.local_object(thread, 0, 1);
    let traceparent = ensure_traceparent(env, head);
    let method = request_method(env, head);
    env.delete(head);
    let seq = next_seq(&local, &remote);
    let (method, path) = method.unwrap_or_default();
    let call = Call {
        start_ns: crate::clock::monotonic_ns(),
        answered_ns: None,
        local,
        remote,
        seq,
        path,
        method,
        traceparent: traceparent.unwrap_or_default(),
        failed: false,
    };
    STATE.with(|s| s.borrow_mut().client = Some(call));
}

/// The request's own `traceparent`, or a new one (this thread's served trace,
/// if any, with a new span id) added to the headers.
fn ensure_traceparent(env: Env, head: sys::jobject) -> Option<String> {
    let key = env.new_string("traceparent");
    let find = ("findValue", "(Ljava/lang/String;)Ljava/lang/String;");
    let found = env.call_object_with(head, find, &[sys::jvalue { l: key }]);
    let existing = env.string(found);
    env.delete(found);
    let value = match existing {
        Some(v) => Some(v),
        None => {
            let v = new_traceparent(served_trace_id());
            let val = env.new_string(&v);
            let set = ("setIfNotSet", "(Ljava/lang/String;Ljava/lang/String;)V");
            let ok =
                env.call_void_with(head, set, &[sys::jvalue { l: key }, sys::jvalue { l: val }]);
            env.delete(val);
            ok.then_some(v)
        }
    };
    env.delete(key);
    value
}

/// The request line (`GET /path?q HTTP/1.1`, the key of the headers' first
/// entry, whose value is null) as (method, path without the query).
fn request_method(env: Env, head: sys::jobject) -> Option<(String, String)> {
    let get = ("getKey", "(I)Ljava/lang/String;");
    let line = env.call_object_with(head, get, &[sys::jvalue { i: 0 }]);
    let text = env.string(line);
    env.delete(line);
    parse_request_line(&text?)
}

fn parse_request_line(line: &str) -> Option<(String, String)> {
    let mut parts = line.split(' ');
    let method = parts.next()?.to_string();
    let target = parts.next()?;
    // A proxy request names the whole URL: keep its path.
    let path = match target.find("://") {
        Some(p) => target[p + 3..]
            .find('/')
            .map_or("/", |q| &target[p + 3 + q..]),
        None => target,
    };
    let path = path.split('?').next().unwrap_or(path).to_string();
    Some((method, path))
}

/// `parseHTTP(MessageHeader responses, ...)` reads the response to the request
/// written last on this thread into `responses` (slot 1).
fn client_parses(ti: Ti, env: Env, thread: sys::jthread) {
    let wanted = STATE.with(|s| {
        let s = s.borrow();
        s.client.is_some() && s.parsing.is_none()
    });
    if !wanted || !ti.notify_frame_pop(thread) {
        return;
    }
    let responses = ti.local_object(thread, 0, 1);
    let global = env.new_global(responses);
    env.delete(responses);
    STATE.with(|s| s.borrow_mut().parsing = Some(global as usize));
}

/// The status code of a parsed response (its first entry's value is the status
/// line, `HTTP/1.1 503 Service Unavailable`).
fn response_status(env: Env, responses: sys::jobject) -> Option<u32> {
    let get = ("getValue", "(I)Ljava/lang/String;");
    let line = env.call_object_with(responses, get, &[sys::jvalue { i: 0 }]);
    let text = env.string(line);
    env.delete(line);
    parse_status(&text?)
}

fn parse_status(line: &str) -> Option<u32> {
    line.strip_prefix("HTTP/")?.split(' ').nth(1)?.parse().ok()
}

/// `LinkHandler.handle(HttpExchange exchange)`: slot 1.
fn server_handles(ti: Ti, env: Env, thread: sys::jthread) {
    let exchange = ti.local_object(thread, 0, 1);
    let call = read_exchange(env, exchange);
    env.delete(exchange);
    if ti.notify_frame_pop(thread) {
        STATE.with(|s| s.borrow_mut().servers.push(call));
    }
}

fn read_exchange(env: Env, exchange: sys::jobject) -> Option<Call> {
    let local = address(env, exchange, "getLocalAddress")?;
    let remote = address(env, exchange, "getRemoteAddress")?;
    let method = env
        .call_string(exchange, "getRequestMethod")
        .unwrap_or_default();
    let uri = env.call_object(exchange, "getRequestURI", "()Ljava/net/URI;");
    let path = env.call_string(uri, "getPath").unwrap_or_default();
    env.delete(uri);
    let headers = env.call_object(
        exchange,
        "getRequestHeaders",
        "()Lcom/sun/net/httpserver/Headers;",
    );
    let key = env.new_string("traceparent");
    let first = ("getFirst", "(Ljava/lang/String;)Ljava/lang/String;");
    let value = env.call_object_with(headers, first, &[sys::jvalue { l: key }]);
    let traceparent = env.string(value).unwrap_or_default();
    for o in [value, key, headers] {
        env.delete(o);
    }
    let seq = next_seq(&local, &remote);
    Some(Call {
        start_ns: crate::clock::monotonic_ns(),
        answered_ns: None,
        local,
        remote,
        seq,
        path,
        method,
        traceparent,
        failed: false,
    })
}

/// An `InetSocketAddress` getter of the exchange as (host address, port).
fn address(env: Env, exchange: sys::jobject, getter: &str) -> Option<Endpoint> {
    socket_address(env, exchange, (getter, "()Ljava/net/InetSocketAddress;"))
}

/// The `InetSocketAddress` a getter of `o` returns (`(name, descriptor)`), as
/// (host address, port).
pub(super) fn socket_address(
    env: Env,
    o: sys::jobject,
    (getter, descriptor): (&str, &str),
) -> Option<Endpoint> {
    let sa = env.call_object(o, getter, descriptor);
    let addr = env.call_object(sa, "getAddress", "()Ljava/net/InetAddress;");
    let host = env.call_string(addr, "getHostAddress");
    let port = env.call_int(sa, "getPort");
    env.delete(addr);
    env.delete(sa);
    Some((host?, port? as u32))
}

/// `ExchangeImpl.sendResponseHeaders(int rCode, long length)`: the answer starts.
fn server_responds(ti: Ti, thread: sys::jthread) {
    let now = crate::clock::monotonic_ns();
    let status = ti.local_int(thread, 0, 1).unwrap_or(0);
    STATE.with(|s| {
        if let Some(Some(call)) = s.borrow_mut().servers.last_mut() {
            call.answered_ns.get_or_insert(now);
            call.failed |= status >= 500;
        }
    });
}

/// The trace id of the request this thread is serving, if it carried one.
pub(super) fn served_trace_id() -> Option<String> {
    STATE.with(|s| {
        let s = s.borrow();
        let call = s.servers.iter().rev().flatten().next()?;
        trace_id_of(&call.traceparent)
    })
}

/// `00-<32 hex trace id>-<16 hex parent id>-<flags>` -> the trace id.
fn trace_id_of(traceparent: &str) -> Option<String> {
    let mut parts = traceparent.split('-');
    let (_, id) = (parts.next()?, parts.next()?);
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) && id != "0".repeat(32))
        .then(|| id.to_ascii_lowercase())
}

/// A version-00 traceparent, sampled, with a random span id (and trace id
/// unless one is given).
pub(super) fn new_traceparent(trace_id: Option<String>) -> String {
    let trace = trace_id.unwrap_or_else(|| format!("{:016x}{:016x}", random(), random()));
    format!("00-{trace}-{:016x}-01", random())
}

/// A non-zero random u64 (W3C forbids all-zero ids).
fn random() -> u64 {
    let mut v = 0u64;
    // SAFETY: writes at most 8 bytes into v.
    let n = unsafe { libc::getrandom((&mut v as *mut u64).cast(), 8, 0) };
    if n != 8 || v == 0 {
        // Fallback: time mixed with a counter, still unique within the JVM.
        static N: AtomicUsize = AtomicUsize::new(1);
        let c = N.fetch_add(1, Ordering::Relaxed) as u64;
        v = crate::clock::monotonic_ns().rotate_left(17) ^ c.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            | 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_give_method_and_path() {
        assert_eq!(
            parse_request_line("GET /a/b?x=1 HTTP/1.1"),
            Some(("GET".into(), "/a/b".into()))
        );
        assert_eq!(
            parse_request_line("POST http://h:8/p/q?z HTTP/1.1"),
            Some(("POST".into(), "/p/q".into()))
        );
        assert_eq!(parse_request_line("GET"), None);
        assert_eq!(parse_status("HTTP/1.1 503 Service Unavailable"), Some(503));
        assert_eq!(parse_status("HTTP/1.0 200"), Some(200));
        assert_eq!(parse_status("garbage"), None);
    }

    #[test]
    fn traceparents_are_version_00_and_keep_a_served_trace_id() {
        let t = new_traceparent(None);
        let parts: Vec<&str> = t.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(
            (parts[0], parts[1].len(), parts[2].len(), parts[3]),
            ("00", 32, 16, "01")
        );
        let id = trace_id_of(&t).unwrap();
        let child = new_traceparent(Some(id.clone()));
        assert_eq!(trace_id_of(&child), Some(id));
        assert_ne!(child, t);
        assert_eq!(
            trace_id_of("00-00000000000000000000000000000000-0000000000000001-01"),
            None
        );
    }
}
