//! `java.net.http.HttpClient` calls (JDK 11+ client, `jdk.internal.net.http`), in
//! the remote-call JVMTI environment:
//!
//! - start: `MultiExchange`'s constructor, which `HttpClientImpl.sendAsync` (and
//!   `send`, through it) runs on the caller's thread with the request already
//!   turned into an `HttpRequestImpl`. Unless the application's headers hold a
//!   `traceparent`, one is added as a *system* header (the user's request object
//!   is immutable; `Http1Request` and HTTP/2's `Stream` write system headers
//!   next to the user's ones). The caller's thread is remembered here.
//! - end: `Response`'s constructor, run wherever the response headers were
//!   parsed (a selector or executor thread for `sendAsync`): the pending call is
//!   found by the request's traceparent (not thread-local state), its endpoints
//!   read from the connection's channel, and a status >= 500 marks it failed.
//!
//! Pending calls live in one bounded list: a request that never gets a response
//! (connection refused, timeout, cancelled) is evicted when the list is full,
//! and counted.

use std::sync::atomic::Ordering;

use super::http::{new_traceparent, served_trace_id};
use super::points::{next_seq, socket_addresses, Args, Endpoint, Target};
use super::{push, RawRemote, REMOTE};
use crate::java_threads::ThreadKey;
use crate::jvm::breakpoints::Hit;
use crate::jvm::Jni;
use crate::sys;

const MULTI_EXCHANGE: &str = "Ljdk/internal/net/http/MultiExchange;";
const RESPONSE: &str = "Ljdk/internal/net/http/Response;";

/// The constructors to break at (entries only: no thread waits for a return). `MultiExchange` lost its
/// `AccessControlContext` parameter with the Security Manager (JDK 24); the
/// request is slot 2 in both. `Response`'s six-argument constructor delegates
/// to the seven-argument one, so breaking there sees every response once.
pub(super) const TARGETS: [Target; 3] = [
    Target::entry(
        MULTI_EXCHANGE,
        "<init>",
        "(Ljava/net/http/HttpRequest;Ljdk/internal/net/http/HttpRequestImpl;Ljdk/internal/net/http/HttpClientImpl;Ljava/net/http/HttpResponse$BodyHandler;Ljava/net/http/HttpResponse$PushPromiseHandler;Ljava/security/AccessControlContext;)V",
        request_starts,
    ),
    Target::entry(
        MULTI_EXCHANGE,
        "<init>",
        "(Ljava/net/http/HttpRequest;Ljdk/internal/net/http/HttpRequestImpl;Ljdk/internal/net/http/HttpClientImpl;Ljava/net/http/HttpResponse$BodyHandler;Ljava/net/http/HttpResponse$PushPromiseHandler;)V",
        request_starts,
    ),
    Target::entry(
        RESPONSE,
        "<init>",
        "(Ljdk/internal/net/http/HttpRequestImpl;Ljdk/internal/net/http/Exchange;Ljava/net/http/HttpHeaders;Ljdk/internal/net/http/HttpConnection;ILjava/net/http/HttpClient$Version;Z)V",
        response_arrives,
    ),
];

/// At most this many requests wait for their responses at once.
const MAX_PENDING: usize = 4096;

/// A request sent, waiting for its response headers.
pub(super) struct Pending {
    traceparent: String,
    start_ns: u64,
    /// The caller's thread.
    thread: ThreadKey,
    method: String,
    path: String,
}

/// (requests evicted without a response, requests that could not be read).
pub fn lost_counts() -> (u64, u64) {
    (
        REMOTE.http_evicted.load(Ordering::Relaxed),
        REMOTE.http_unreadable.load(Ordering::Relaxed),
    )
}

/// `MultiExchange(HttpRequest user, HttpRequestImpl request, ...)`: slot 2.
fn request_starts(hit: &Hit) {
    let (env, thread) = (hit.jni, hit.thread);
    let start_ns = crate::clock::monotonic_ns();
    let args = Args::of(hit, 0);
    let request = args.object(2);
    let read = read_request(env, request);
    env.delete_local(request);
    let Some((traceparent, method, path)) = read else {
        REMOTE.http_unreadable.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let pending = Pending {
        traceparent,
        start_ns,
        thread: ThreadKey::of(Jni(env.0), thread),
        method,
        path,
    };
    let mut list = REMOTE
        .http_pending
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if list.len() >= MAX_PENDING {
        list.pop_front();
        REMOTE.http_evicted.fetch_add(1, Ordering::Relaxed);
    }
    list.push_back(pending);
}

/// The request's traceparent (the application's, or one added now), method
/// and path (decoded, no query, as the server reports it).
fn read_request(env: Jni, request: sys::jobject) -> Option<(String, String, String)> {
    if request.is_null() {
        return None;
    }
    let method = env.call_string(request, "method")?;
    let uri = env.call_object(request, "uri", "()Ljava/net/URI;");
    let path = env.call_string(uri, "getPath");
    env.delete_local(uri);
    let traceparent = match user_traceparent(env, request) {
        Some(own) => own,
        None => add_traceparent(env, request)?,
    };
    Some((traceparent, method, path.unwrap_or_default()))
}

/// The `traceparent` among the headers the application set, if any.
fn user_traceparent(env: Jni, request: sys::jobject) -> Option<String> {
    let headers = env.call_object(request, "headers", "()Ljava/net/http/HttpHeaders;");
    let value = first_value(env, headers, "traceparent");
    env.delete_local(headers);
    value
}

/// Adds a new traceparent (continuing the trace this thread serves, if any)
/// as a system header; None if the request refused it.
fn add_traceparent(env: Jni, request: sys::jobject) -> Option<String> {
    let value = new_traceparent(served_trace_id(env, None));
    let (k, v) = (env.new_string("traceparent"), env.new_string(&value));
    let set = ("setSystemHeader", "(Ljava/lang/String;Ljava/lang/String;)V");
    let ok = !k.is_null()
        && !v.is_null()
        && env.call_void_with(request, set, &[sys::jvalue { l: k }, sys::jvalue { l: v }]);
    env.delete_local(v);
    env.delete_local(k);
    ok.then_some(value)
}

/// `HttpHeaders.firstValue(name).orElse(null)` as a Rust string.
fn first_value(env: Jni, headers: sys::jobject, name: &str) -> Option<String> {
    let key = env.new_string(name);
    if key.is_null() {
        return None;
    }
    let first = ("firstValue", "(Ljava/lang/String;)Ljava/util/Optional;");
    let found = env.call_object_with(headers, first, &[sys::jvalue { l: key }]);
    let or_else = ("orElse", "(Ljava/lang/Object;)Ljava/lang/Object;");
    let null = sys::jvalue {
        l: std::ptr::null_mut(),
    };
    let value = env.call_object_with(found, or_else, &[null]);
    let text = env.string_of(value);
    for o in [value, found, key] {
        env.delete_local(o);
    }
    text
}

/// `Response(HttpRequestImpl req, Exchange, HttpHeaders, HttpConnection conn,
/// int status, Version, boolean)`: slots 1, 4 and 5.
fn response_arrives(hit: &Hit) {
    let env = hit.jni;
    let end_ns = crate::clock::monotonic_ns();
    let args = Args::of(hit, 0);
    let status = args.int(5).unwrap_or(0);
    // An interim `100 Continue` is followed by the real response.
    if status == 100 {
        return;
    }
    let request = args.object(1);
    let traceparent = sent_traceparent(env, request);
    env.delete_local(request);
    let Some(pending) = traceparent.and_then(|t| take_pending(&t)) else {
        return; // not a request this capture started (e.g. a proxy's CONNECT)
    };
    let conn = args.object(4);
    let ends = super::http::endpoints_of(env, conn, || connection_endpoints(env, conn));
    env.delete_local(conn);
    emit(pending, ends, end_ns, status >= 500);
}

/// The traceparent the request went out with: the application's, else the
/// system header added at its start.
fn sent_traceparent(env: Jni, request: sys::jobject) -> Option<String> {
    if request.is_null() {
        return None;
    }
    if let Some(own) = user_traceparent(env, request) {
        return Some(own);
    }
    let builder = env.call_object(
        request,
        "getSystemHeadersBuilder",
        "()Ljdk/internal/net/http/common/HttpHeadersBuilder;",
    );
    let headers = env.call_object(builder, "build", "()Ljava/net/http/HttpHeaders;");
    let value = first_value(env, headers, "traceparent");
    env.delete_local(headers);
    env.delete_local(builder);
    value
}

/// Removes and returns the oldest pending request with this traceparent (an
/// application may reuse its own header on several requests).
fn take_pending(traceparent: &str) -> Option<Pending> {
    let mut list = REMOTE
        .http_pending
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let at = list.iter().position(|p| p.traceparent == traceparent)?;
    list.remove(at)
}

/// (local, remote) of an `HttpConnection`'s `SocketChannel`.
fn connection_endpoints(env: Jni, conn: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    let channel = env.call_object(conn, "channel", "()Ljava/nio/channels/SocketChannel;");
    let getters = ("getLocalAddress", "getRemoteAddress");
    let ends = socket_addresses(env, channel, getters, "()Ljava/net/SocketAddress;");
    env.delete_local(channel);
    ends
}

/// Pushes the finished call, on the caller's thread. Without endpoints (the
/// channel already closed) it is still recorded, with no connection sequence.
fn emit(p: Pending, ends: Option<(Endpoint, Endpoint)>, end_ns: u64, failed: bool) {
    let (local, remote, seq) = match ends {
        Some((l, r)) => {
            let seq = next_seq(&l, &r);
            (l, r, seq)
        }
        None => ((String::new(), 0), (String::new(), 0), 0),
    };
    push(RawRemote {
        server: false,
        thread: p.thread,
        start_ns: p.start_ns,
        duration_ns: end_ns.saturating_sub(p.start_ns),
        local,
        remote,
        conn_seq: seq,
        object: p.path,
        method_hash: 0,
        method: p.method,
        failed,
        http: true,
        request_id: p.traceparent,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(t: &str, start_ns: u64) -> Pending {
        Pending {
            traceparent: t.into(),
            start_ns,
            thread: ThreadKey::new(1, 2, 3),
            method: "GET".into(),
            path: "/".into(),
        }
    }

    #[test]
    fn pending_requests_are_found_by_traceparent_oldest_first() {
        let t = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let u = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        {
            let mut list = REMOTE.http_pending.lock().unwrap();
            list.push_back(pending(t, 10));
            list.push_back(pending(u, 20));
            list.push_back(pending(t, 30));
        }
        assert_eq!(take_pending(t).map(|p| p.start_ns), Some(10));
        assert_eq!(take_pending(u).map(|p| p.start_ns), Some(20));
        assert_eq!(take_pending(t).map(|p| p.start_ns), Some(30));
        assert!(take_pending(t).is_none());
    }
}
