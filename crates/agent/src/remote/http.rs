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
//! Returns are breakpoints on the methods' return instructions (`points`): a
//! `parseHTTP` or `handle` left by an exception ends its call, failed, at the
//! thread's next breakpoint of this capture (its next request, mostly); until
//! then a handler's request stays the thread's.
//!
//! The header is an ordinary request header, which a peer without jscope ignores.

use std::cell::RefCell;

use super::points::{
    next_seq, socket_addresses, socket_endpoints, Args, At, Connections, Endpoint, Frames, Target,
};
use super::{push, RawRemote};
use crate::java_threads::ThreadKey;
use crate::jvm::breakpoints::Hit;
use crate::jvm::{GlobalRef, Jni};
use crate::sys;

const HTTP_CLIENT: &str = "Lsun/net/www/http/HttpClient;";
const LINK_HANDLER: &str = "Lsun/net/httpserver/ServerImpl$Exchange$LinkHandler;";
const EXCHANGE: &str = "Lsun/net/httpserver/ExchangeImpl;";

/// The methods to break at. `parseHTTP` lost its `ProgressSource` parameter
/// after JDK 17: one of the two exists.
pub(super) const TARGETS: [Target; 7] = [
    // The connection about to write its request (the next `writeRequests` of
    // its `HttpClient`, on this thread, writes it).
    Target::entry(
        "Lsun/net/www/protocol/http/HttpURLConnection;",
        "writeRequests",
        "()V",
        connection_writes,
    ),
    Target::entry(
        HTTP_CLIENT,
        "writeRequests",
        "(Lsun/net/www/MessageHeader;)V",
        client_writes,
    ),
    Target::entry(
        HTTP_CLIENT,
        "writeRequests",
        "(Lsun/net/www/MessageHeader;Lsun/net/www/http/PosterOutputStream;)V",
        client_writes,
    ),
    Target::entry_and_returns(
        HTTP_CLIENT,
        "parseHTTP",
        "(Lsun/net/www/MessageHeader;Lsun/net/ProgressSource;Lsun/net/www/protocol/http/HttpURLConnection;)Z",
        client_parses,
    ),
    Target::entry_and_returns(
        HTTP_CLIENT,
        "parseHTTP",
        "(Lsun/net/www/MessageHeader;Lsun/net/www/protocol/http/HttpURLConnection;)Z",
        client_parses,
    ),
    Target::entry_and_returns(
        LINK_HANDLER,
        "handle",
        "(Lcom/sun/net/httpserver/HttpExchange;)V",
        server_handles,
    ),
    Target::entry(EXCHANGE, "sendResponseHeaders", "(IJ)V", server_responds),
];

/// One HTTP call on this thread (the frameworks' ones too).
pub(super) struct Call {
    pub start_ns: u64,
    pub answered_ns: Option<u64>,
    pub local: Endpoint,
    pub remote: Endpoint,
    pub seq: u64,
    pub path: String,
    pub method: String,
    pub traceparent: String,
    pub failed: bool,
    /// The request it opened on this thread (server calls), 0 for none.
    pub request: u32,
}

#[derive(Default)]
pub(super) struct ThreadState {
    /// The request written last on this thread, waiting for its response.
    client: Option<Call>,
    /// The `HttpURLConnection` that wrote it.
    connection: Option<GlobalRef>,
    /// The `HttpURLConnection` whose request is about to be written.
    writing: Option<GlobalRef>,
    /// The parseHTTP frame reading its response: a global reference to the
    /// response headers it fills (None when it could not be made), for the
    /// status at its return.
    parsing: Frames<Option<GlobalRef>>,
    /// Open handler frames (None: its exchange could not be read), each with
    /// a global reference to its exchange, for the status at its return.
    servers: Frames<Option<(Call, Option<GlobalRef>)>>,
    /// Open framework server frames (servlets, Netty handlers), innermost last.
    pub framework_servers: Frames<Call>,
    /// Open framework client calls (OkHttp, HttpClient 5), innermost last.
    pub framework_clients: Frames<Call>,
    /// Methods with inserted calls (and returns that matter) open on this
    /// thread: the depth of the next one entered (`calls`).
    pub inserted_open: i32,
    /// The endpoints of the connections this thread used last.
    connections: Connections,
    /// The thread's Linux id, once asked (`own_tid`).
    pub tid: Option<u32>,
}

thread_local! {
    pub(super) static STATE: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// The endpoints of `connection` (an object that stays with one connection),
/// read by `read` unless this thread read them last time (null: always read).
/// `read` may run Java code, so no state is borrowed while it runs.
pub(super) fn endpoints_of(
    env: Jni,
    connection: sys::jobject,
    read: impl FnOnce() -> Option<(Endpoint, Endpoint)>,
) -> Option<(Endpoint, Endpoint)> {
    endpoints_checked(env, connection, None, read)
}

/// [`endpoints_of`] for a key that may move to another connection (a
/// recycled request object): what was read for it counts only with the same
/// (local, remote) ports, when they are given.
pub(super) fn endpoints_checked(
    env: Jni,
    connection: sys::jobject,
    ports: Option<(u32, u32)>,
    read: impl FnOnce() -> Option<(Endpoint, Endpoint)>,
) -> Option<(Endpoint, Endpoint)> {
    if connection.is_null() {
        return read();
    }
    let found = STATE.with(|s| s.borrow().connections.find(env, connection));
    if let Some(ends) = found.filter(|(l, r)| ports.is_none_or(|p| p == (l.1, r.1))) {
        return Some(ends);
    }
    let ends = read()?;
    STATE.with(|s| {
        s.borrow_mut()
            .connections
            .add(env, connection, ends.clone())
    });
    Some(ends)
}

/// Ends, failed, the calls of the JDK's HTTP classes on this thread whose
/// frames are gone at `at` (left by an exception: see `points`).
fn close_left(hit: &Hit, at: At, now: u64) {
    let (client, servers) = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let mut client = None;
        if s.parsing.take_left(at).is_some() {
            client = s.client.take();
        }
        let mut servers = Vec::new();
        while let Some(served) = s.servers.take_left(at) {
            servers.push(served.map(|(call, _)| call));
        }
        (client, servers)
    });
    returned(hit, false, client, true, now);
    for call in servers {
        returned(hit, true, call, true, now);
    }
}

/// A call's frame was left at `end` (by an exception when `left`): its
/// request (if any) ends, the call is recorded.
pub(super) fn returned(hit: &Hit, server: bool, call: Option<Call>, left: bool, end: u64) {
    if let Some(mut call) = call {
        call.failed |= left;
        let thread = super::thread_key(hit.jni, hit.thread);
        super::end_request(thread, call.request, call.failed);
        emit(server, call, end, thread);
    }
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

/// `HttpURLConnection.writeRequests()`: `this` (slot 0) is the connection
/// the `HttpClient.writeRequests` it calls next writes for.
fn connection_writes(hit: &Hit) {
    let env = hit.jni;
    let this = Args::of(hit, 0).object(0);
    let connection = env.global_ref(this);
    env.delete_local(this);
    STATE.with(|s| s.borrow_mut().writing = connection);
}

/// `HttpClient.writeRequests(MessageHeader head, ...)`: `this` is slot 0, the
/// headers slot 1. The headers are printed to the socket right after this.
fn client_writes(hit: &Hit) {
    let env = hit.jni;
    if let Some(at) = At::of(hit) {
        close_left(hit, at, crate::clock::monotonic_ns());
    }
    let args = Args::of(hit, 0);
    let this = args.object(0);
    let socket = env.object_field(this, "serverSocket", "Ljava/net/Socket;");
    let ends = endpoints_of(env, socket, || socket_endpoints(env, socket));
    env.delete_local(socket);
    env.delete_local(this);
    let Some((local, remote)) = ends else {
        return;
    };
    let head = args.object(1);
    drop(args);
    // The connection writing, whose `responses` parseHTTP fills: its status is
    // read there with no frame read of its own.
    let connection = STATE.with(|s| s.borrow_mut().writing.take());
    let traceparent = ensure_traceparent(env, head);
    let method = request_method(env, head);
    env.delete_local(head);
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
        request: 0,
    };
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.client = Some(call);
        s.connection = connection;
    });
}

/// The request's own `traceparent`, or a new one (this thread's served trace,
/// if any, with a new span id) added to the headers.
fn ensure_traceparent(env: Jni, head: sys::jobject) -> Option<String> {
    let key = env.new_string("traceparent");
    let find = ("findValue", "(Ljava/lang/String;)Ljava/lang/String;");
    let found = env.call_object_with(head, find, &[sys::jvalue { l: key }]);
    let existing = env.string_of(found);
    env.delete_local(found);
    let value = match existing {
        Some(v) => Some(v),
        None => {
            let v = new_traceparent(served_trace_id(env, None));
            let val = env.new_string(&v);
            let set = ("setIfNotSet", "(Ljava/lang/String;Ljava/lang/String;)V");
            let ok =
                env.call_void_with(head, set, &[sys::jvalue { l: key }, sys::jvalue { l: val }]);
            env.delete_local(val);
            ok.then_some(v)
        }
    };
    env.delete_local(key);
    value
}

/// The request line (`GET /path?q HTTP/1.1`, the key of the headers' first
/// entry, whose value is null) as (method, path without the query).
fn request_method(env: Jni, head: sys::jobject) -> Option<(String, String)> {
    let get = ("getKey", "(I)Ljava/lang/String;");
    let line = env.call_object_with(head, get, &[sys::jvalue { i: 0 }]);
    let text = env.string_of(line);
    env.delete_local(line);
    parse_request_line(&text?)
}

pub(super) fn parse_request_line(line: &str) -> Option<(String, String)> {
    let mut parts = line.split(' ');
    let method = parts.next()?.to_string();
    let target = parts.next()?;
    Some((method, path_of(target)))
}

/// The path of a request target without its query (a proxy request names
/// the whole URL: its path).
pub(super) fn path_of(target: &str) -> String {
    let path = match target.find("://") {
        Some(p) => target[p + 3..]
            .find('/')
            .map_or("/", |q| &target[p + 3 + q..]),
        None => target,
    };
    path.split('?').next().unwrap_or(path).to_string()
}

/// `parseHTTP(MessageHeader responses, ...)` reads the response to the request
/// written last on this thread into `responses` (slot 1). At its return the
/// client call ends, failed for a status >= 500. A `parseHTTP` that retries the
/// request inside itself writes it again (the call read is the last written)
/// and parses it in a nested frame: only the outer one counts.
fn client_parses(hit: &Hit) {
    let Some(at) = At::of(hit) else {
        return;
    };
    let now = crate::clock::monotonic_ns();
    close_left(hit, at, now);
    let env = hit.jni;
    if at.entry {
        let wanted = STATE.with(|s| {
            let s = s.borrow();
            let wanted = s.client.is_some() && s.parsing.is_empty();
            wanted.then(|| s.connection.as_ref().map(|c| env.new_local(c.get())))
        });
        if let Some(conn) = wanted {
            let field = ("responses", "Lsun/net/www/MessageHeader;");
            let mut responses = conn.map_or(std::ptr::null_mut(), |c| {
                let r = env.object_field(c, field.0, field.1);
                env.delete_local(c);
                r
            });
            if responses.is_null() {
                responses = Args::of(hit, 0).object(1);
            }
            let global = env.global_ref(responses);
            env.delete_local(responses);
            STATE.with(|s| s.borrow_mut().parsing.push(at.depth, global));
        }
        return;
    }
    let parsed = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let responses = s.parsing.take_returning(at)?;
        Some((s.client.take(), responses))
    });
    let Some((call, responses)) = parsed else {
        return;
    };
    let status = responses.and_then(|r| response_status(env, r.get()));
    let call = call.map(|mut c| {
        c.failed = status.is_some_and(|s| s >= 500);
        c
    });
    returned(hit, false, call, false, now);
}

/// The status code of a parsed response (its first entry's value is the status
/// line, `HTTP/1.1 503 Service Unavailable`).
fn response_status(env: Jni, responses: sys::jobject) -> Option<u32> {
    let get = ("getValue", "(I)Ljava/lang/String;");
    let line = env.call_object_with(responses, get, &[sys::jvalue { i: 0 }]);
    let text = env.string_of(line);
    env.delete_local(line);
    parse_status(&text?)
}

fn parse_status(line: &str) -> Option<u32> {
    line.strip_prefix("HTTP/")?.split(' ').nth(1)?.parse().ok()
}

/// `LinkHandler.handle(HttpExchange exchange)`: slot 1. At its return the
/// server call ends (unless its answer ended it).
fn server_handles(hit: &Hit) {
    let Some(at) = At::of(hit) else {
        return;
    };
    let now = crate::clock::monotonic_ns();
    close_left(hit, at, now);
    let (env, thread) = (hit.jni, hit.thread);
    if !at.entry {
        let served = STATE.with(|s| s.borrow_mut().servers.take_returning(at));
        let call = served.flatten().map(|(mut call, exchange)| {
            let status = exchange.and_then(|e| env.call_int(e.get(), "getResponseCode"));
            call.failed |= status.is_some_and(|s| s >= 500);
            call
        });
        returned(hit, true, call, false, now);
        return;
    }
    let exchange = Args::of(hit, 0).object(1);
    let call = read_exchange(env, exchange);
    let global = env.global_ref(exchange);
    env.delete_local(exchange);
    let served = call.map(|mut c| {
        let name = format!("{} {}", c.method, c.path);
        let opening = super::http_opening(name, &c.traceparent);
        c.request = super::begin_request(env, thread, opening);
        (c, global)
    });
    STATE.with(|s| s.borrow_mut().servers.push(at.depth, served));
}

fn read_exchange(env: Jni, exchange: sys::jobject) -> Option<Call> {
    // The exchange's connection (null if the field is not there: read anyway).
    let conn = env.object_field(
        exchange,
        "connection",
        "Lsun/net/httpserver/HttpConnection;",
    );
    let getters = ("getLocalAddress", "getRemoteAddress");
    let ends = endpoints_of(env, conn, || {
        socket_addresses(env, exchange, getters, "()Ljava/net/InetSocketAddress;")
    });
    env.delete_local(conn);
    let (local, remote) = ends?;
    let method = env
        .call_string(exchange, "getRequestMethod")
        .unwrap_or_default();
    let uri = env.call_object(exchange, "getRequestURI", "()Ljava/net/URI;");
    let path = env.call_string(uri, "getPath").unwrap_or_default();
    env.delete_local(uri);
    let headers = env.call_object(
        exchange,
        "getRequestHeaders",
        "()Lcom/sun/net/httpserver/Headers;",
    );
    let key = env.new_string("traceparent");
    let first = ("getFirst", "(Ljava/lang/String;)Ljava/lang/String;");
    let value = env.call_object_with(headers, first, &[sys::jvalue { l: key }]);
    let traceparent = env.string_of(value).unwrap_or_default();
    for o in [value, key, headers] {
        env.delete_local(o);
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
        request: 0,
    })
}

/// `ExchangeImpl.sendResponseHeaders(int rCode, long length)`: the answer
/// starts (its status is read from the exchange when the handler returns).
fn server_responds(hit: &Hit) {
    let now = crate::clock::monotonic_ns();
    if let Some(at) = At::of(hit) {
        close_left(hit, at, now);
    }
    STATE.with(|s| {
        if let Some(Some((call, _))) = s.borrow_mut().servers.last_mut() {
            call.answered_ns.get_or_insert(now);
        }
    });
}

/// The trace id of the request `thread` (None: the current thread, found by
/// JVMTI) is serving, if any.
pub(super) fn served_trace_id(env: Jni, thread: Option<sys::jthread>) -> Option<String> {
    let key = super::served_by(env, thread);
    let (_, trace, _) = super::requests().innermost(&key)?;
    Some(jscope_format::Request::format_trace_id(&trace))
}

/// `00-<32 hex trace id>-<16 hex parent id>-<flags>` -> the trace id.
#[cfg(test)]
fn trace_id_of(traceparent: &str) -> Option<String> {
    let mut parts = traceparent.split('-');
    let (_, id) = (parts.next()?, parts.next()?);
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) && id != "0".repeat(32))
        .then(|| id.to_ascii_lowercase())
}

/// A version-00 traceparent, sampled, with a random span id (and trace id
/// unless one is given).
pub(super) fn new_traceparent(trace_id: Option<String>) -> String {
    let random = super::requests::random_u64;
    let trace = trace_id.unwrap_or_else(|| format!("{:016x}{:016x}", random(), random()));
    format!("00-{trace}-{:016x}-01", random())
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
    fn request_targets_give_their_paths() {
        assert_eq!(path_of("/a/b?x=1"), "/a/b");
        assert_eq!(path_of("http://h:8/p/q?z"), "/p/q");
        assert_eq!(path_of("http://h:8"), "/");
        assert_eq!(path_of(""), "");
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
