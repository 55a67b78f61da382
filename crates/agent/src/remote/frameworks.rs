//! HTTP calls over the frameworks services run, in the remote-call JVMTI
//! environment, recorded as the JDK's own HTTP calls are (`http`):
//!
//! - servlets (Jetty 9: `javax.servlet`; Tomcat 10: `jakarta.servlet`):
//!   `HttpServlet.service(ServletRequest, ServletResponse)` serves a request;
//!   its method, URI, `traceparent` header and endpoints are read from the
//!   request, a request opens on the thread and ends when `service` returns.
//!   A servlet called inside another's service (forward, include) is part of
//!   the outer request.
//! - Netty 4.1 (`SimpleChannelInboundHandler.channelRead` given an
//!   `HttpRequest`): the request ends when the handler returns; the server call
//!   ends when its response is encoded (`HttpObjectEncoder.encode`) if that
//!   comes first. A handler that answers later, from another thread, ends its
//!   request at its return: the work done after that is not part of it.
//! - OkHttp 3 (`RealCall.getResponseWithInterceptorChain`, which both
//!   `execute` and `enqueue` run): unless the application set a `traceparent`,
//!   the call's request is replaced by a copy with one (`Request` is
//!   immutable); endpoints come from the connection the exchange goes over
//!   (`CallServerInterceptor.intercept`). The call ends when the response
//!   headers are read (the method returns).
//! - Apache HttpClient 5 classic (`InternalHttpClient.doExecute`): the
//!   `traceparent` is set on the request; endpoints from the connection that
//!   sends its headers (`DefaultBHttpClientConnection.sendRequestHeader`).
//!
//! Client calls are marked failed only when they throw (their status is not
//! read). Calls end at breakpoints on their methods' return instructions; a
//! method left by an exception is noticed at its thread's next framework
//! call of the same side (see `on_hit` and `points`), and its call then ends,
//! failed: until then its request stays the thread's. Each exchange on a
//! connection counts once on both sides, so the connection order matches the
//! server's.

use super::http::{
    endpoints_checked, endpoints_of, new_traceparent, returned, served_trace_id, Call, STATE,
};
use super::points::{
    next_seq, socket_addresses, socket_endpoints, Args, At, Endpoint, Frames, Target,
};
use super::readers::{self, Read};
use crate::jvm::breakpoints::Hit;
use crate::jvm::Jni;
use crate::sys;

const STRING_ARG: &str = "(Ljava/lang/String;)Ljava/lang/String;";
const ADDRESS: &str = "()Ljava/net/SocketAddress;";

pub(super) const TARGETS: [Target; 8] = [
    Target::entry_and_returns(
        "Ljavax/servlet/http/HttpServlet;",
        "service",
        "(Ljavax/servlet/ServletRequest;Ljavax/servlet/ServletResponse;)V",
        servlet,
    )
    .through(readers::JAVAX_SERVLET),
    Target::entry_and_returns(
        "Ljakarta/servlet/http/HttpServlet;",
        "service",
        "(Ljakarta/servlet/ServletRequest;Ljakarta/servlet/ServletResponse;)V",
        servlet,
    )
    .through(readers::JAKARTA_SERVLET),
    Target::entry_and_returns(
        "Lio/netty/channel/SimpleChannelInboundHandler;",
        "channelRead",
        "(Lio/netty/channel/ChannelHandlerContext;Ljava/lang/Object;)V",
        netty,
    )
    .through(readers::NETTY_READ),
    Target::entry(
        "Lio/netty/handler/codec/http/HttpObjectEncoder;",
        "encode",
        "(Lio/netty/channel/ChannelHandlerContext;Ljava/lang/Object;Ljava/util/List;)V",
        netty_encodes,
    )
    .through(readers::NETTY_ENCODE),
    Target::entry_and_returns(
        "Lokhttp3/RealCall;",
        "getResponseWithInterceptorChain",
        "()Lokhttp3/Response;",
        okhttp,
    )
    .through(readers::OKHTTP_CALL),
    Target::entry(
        "Lokhttp3/internal/http/CallServerInterceptor;",
        "intercept",
        "(Lokhttp3/Interceptor$Chain;)Lokhttp3/Response;",
        okhttp_sends,
    )
    .through(readers::OKHTTP_SEND),
    Target::entry_and_returns(
        "Lorg/apache/hc/client5/http/impl/classic/InternalHttpClient;",
        "doExecute",
        "(Lorg/apache/hc/core5/http/HttpHost;Lorg/apache/hc/core5/http/ClassicHttpRequest;Lorg/apache/hc/core5/http/protocol/HttpContext;)Lorg/apache/hc/client5/http/impl/classic/CloseableHttpResponse;",
        hc5,
    )
    .through(readers::HC5_CALL),
    Target::entry(
        "Lorg/apache/hc/core5/http/impl/io/DefaultBHttpClientConnection;",
        "sendRequestHeader",
        "(Lorg/apache/hc/core5/http/ClassicHttpRequest;)V",
        hc5_sends,
    )
    .through(readers::HC5_SEND),
];

fn servlet(hit: &Hit) {
    on_server(hit, servlet_serves);
}

fn netty(hit: &Hit) {
    on_server(hit, netty_reads);
}

fn okhttp(hit: &Hit) {
    on_client(hit, okhttp_calls);
}

fn hc5(hit: &Hit) {
    on_client(hit, hc5_calls);
}

/// Which of a thread's framework stacks.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Server,
    Client,
}

fn on_server(hit: &Hit, entry: fn(&Hit, i32)) {
    on_hit(hit, Side::Server, entry);
}

fn on_client(hit: &Hit, entry: fn(&Hit, i32)) {
    on_hit(hit, Side::Client, entry);
}

/// Calls left by an exception end, then: at the entry, `entry` runs with the
/// stack depth; at a return, the call of this frame ends.
fn on_hit(hit: &Hit, side: Side, entry: fn(&Hit, i32)) {
    let Some(at) = At::of(hit) else {
        return;
    };
    let now = crate::clock::monotonic_ns();
    while let Some(call) = with_stack(side, |s| s.take_left(at)) {
        returned(hit, side == Side::Server, Some(call), true, now);
    }
    if at.entry {
        entry(hit, at.depth);
        return;
    }
    let call = with_stack(side, |s| s.take_returning(at));
    returned(hit, side == Side::Server, call, false, now);
}

fn with_stack<R>(side: Side, f: impl FnOnce(&mut Frames<Call>) -> R) -> R {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        f(match side {
            Side::Server => &mut s.framework_servers,
            Side::Client => &mut s.framework_clients,
        })
    })
}

/// A new call read from a request: starting now, with no endpoints yet.
pub(super) fn call(method: String, path: String, traceparent: String) -> Call {
    Call {
        start_ns: crate::clock::monotonic_ns(),
        answered_ns: None,
        local: (String::new(), 0),
        remote: (String::new(), 0),
        seq: 0,
        path,
        method,
        traceparent,
        failed: false,
        request: 0,
    }
}

/// Opens the served request of `c` on this thread (entered at `depth`).
fn serve(hit: &Hit, mut c: Call, ends: Option<(Endpoint, Endpoint)>, depth: i32) {
    if let Some((local, remote)) = ends {
        c.seq = next_seq(&local, &remote);
        (c.local, c.remote) = (local, remote);
    }
    let name = format!("{} {}", c.method, c.path);
    let opening = super::http_opening(name, &c.traceparent);
    c.request = super::begin_request(hit.jni, hit.thread, opening);
    STATE.with(|s| s.borrow_mut().framework_servers.push(depth, c));
}

/// Whether the thread serves a framework request (one nested in it, a
/// forward or an inner handler, is part of it).
fn serving() -> bool {
    STATE.with(|s| !s.borrow().framework_servers.is_empty())
}

/// `HttpServlet.service(ServletRequest req, ServletResponse res)`: slot 1.
fn servlet_serves(hit: &Hit, depth: i32) {
    let read = readers::take();
    if serving() {
        return;
    }
    if let Some(read) = read {
        return serve_read(hit, read, depth, servlet_endpoints);
    }
    let env = hit.jni;
    let args = Args::of(hit, 0);
    let req = args.object(1);
    let read = read_servlet_request(env, req);
    env.delete_local(req);
    if let Some((c, ends)) = read {
        serve(hit, c, ends, depth);
    }
}

fn read_servlet_request(
    env: Jni,
    req: sys::jobject,
) -> Option<(Call, Option<(Endpoint, Endpoint)>)> {
    // Only an HttpServletRequest has a method.
    let method = env.call_string(req, "getMethod")?;
    let path = env.call_string(req, "getRequestURI").unwrap_or_default();
    let traceparent = string_call(env, req, "getHeader", "traceparent").unwrap_or_default();
    // The address getters run code the container itself rarely does (socket
    // queries, address formatting), mostly interpreted: Jetty's request
    // belongs to its connection's channel, so there they are asked once per
    // connection (other containers: every request).
    const CHANNEL: &str = "()Lorg/eclipse/jetty/server/HttpChannel;";
    let channel = env.call_object(req, "getHttpChannel", CHANNEL);
    let ends = endpoints_of(env, channel, || servlet_endpoints(env, req));
    env.delete_local(channel);
    Some((call(method, path, traceparent), ends))
}

/// A servlet request's (local, remote) endpoints, from its getters.
fn servlet_endpoints(env: Jni, req: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    let end = |addr: &str, port: &str| -> Option<Endpoint> {
        let host = env.call_string(req, addr)?;
        let port = env.call_int(req, port)?;
        Some((host.trim_matches(['[', ']']).to_string(), port as u32))
    };
    end("getLocalAddr", "getLocalPort").zip(end("getRemoteAddr", "getRemotePort"))
}

/// `o.name(arg)` for a `String name(String)` method, as a Rust string.
fn string_call(env: Jni, o: sys::jobject, name: &str, arg: &str) -> Option<String> {
    let key = env.new_string(arg);
    if key.is_null() {
        return None;
    }
    let value = env.call_object_with(o, (name, STRING_ARG), &[sys::jvalue { l: key }]);
    let text = env.string_of(value);
    env.delete_local(value);
    env.delete_local(key);
    text
}

/// A request a reader read opens (`Read::Served`); `endpoints` reads the
/// endpoints from its connection key when this thread has not.
fn serve_read(
    hit: &Hit,
    read: Read,
    depth: i32,
    endpoints: fn(Jni, sys::jobject) -> Option<(Endpoint, Endpoint)>,
) {
    if let Read::Served(c, key, ports) = read {
        let env = hit.jni;
        let ends = endpoints_checked(env, key, ports, || endpoints(env, key));
        serve(hit, c, ends, depth);
    }
}

/// A Netty channel's (local, remote) endpoints.
fn netty_endpoints(env: Jni, channel: sys::jobject) -> Option<(Endpoint, Endpoint)> {
    socket_addresses(env, channel, ("localAddress", "remoteAddress"), ADDRESS)
}

/// `SimpleChannelInboundHandler.channelRead(ChannelHandlerContext ctx, Object
/// msg)`: slots 1 and 2; only an `HttpRequest` opens a request.
fn netty_reads(hit: &Hit, depth: i32) {
    let read = readers::take();
    if serving() {
        return;
    }
    if let Some(read) = read {
        return serve_read(hit, read, depth, netty_endpoints);
    }
    let env = hit.jni;
    let args = Args::of(hit, 0);
    let msg = args.object(2);
    let method = env.call_object(msg, "method", "()Lio/netty/handler/codec/http/HttpMethod;");
    let read = (!method.is_null()).then(|| {
        let name = env.call_string(method, "name").unwrap_or_default();
        let uri = env.call_string(msg, "uri").unwrap_or_default();
        let path = uri.split('?').next().unwrap_or_default().to_string();
        let headers = env.call_object(
            msg,
            "headers",
            "()Lio/netty/handler/codec/http/HttpHeaders;",
        );
        let traceparent = string_call(env, headers, "get", "traceparent").unwrap_or_default();
        env.delete_local(headers);
        call(name, path, traceparent)
    });
    env.delete_local(method);
    env.delete_local(msg);
    let Some(c) = read else {
        return;
    };
    let ctx = args.object(1);
    let channel = env.call_object(ctx, "channel", "()Lio/netty/channel/Channel;");
    let ends = endpoints_of(env, channel, || netty_endpoints(env, channel));
    env.delete_local(channel);
    env.delete_local(ctx);
    serve(hit, c, ends, depth);
}

/// `HttpObjectEncoder.encode(ctx, Object msg, List out)`: a response (it has a
/// status) encoded inside a served Netty request is its answer.
fn netty_encodes(hit: &Hit) {
    let read = readers::take();
    if !serving() {
        return;
    }
    let now = crate::clock::monotonic_ns();
    let code = match read {
        Some(Read::Answered(code)) => Some(code as i32),
        Some(_) => None,
        None => {
            let env = hit.jni;
            let msg = Args::of(hit, 0).object(2);
            let status = env.call_object(
                msg,
                "status",
                "()Lio/netty/handler/codec/http/HttpResponseStatus;",
            );
            let code = env.call_int(status, "code");
            env.delete_local(status);
            env.delete_local(msg);
            code
        }
    };
    if let Some(code) = code {
        STATE.with(|s| {
            if let Some(c) = s.borrow_mut().framework_servers.last_mut() {
                c.answered_ns.get_or_insert(now);
                c.failed |= code >= 500;
            }
        });
    }
}

/// Pushes a client call entered at `depth`.
fn calling(c: Call, depth: i32) {
    STATE.with(|s| s.borrow_mut().framework_clients.push(depth, c));
}

/// A client call a reader read is pushed (`Read::Calling`).
fn calling_read(read: Read, depth: i32) {
    if let Read::Calling(c) = read {
        calling(c, depth);
    }
}

/// An exchange of the innermost client call goes over a connection: counted,
/// and the call's endpoints (its first exchange's) are these.
fn sends_over(ends: Option<(Endpoint, Endpoint)>) {
    let Some((local, remote)) = ends else {
        return;
    };
    let seq = next_seq(&local, &remote);
    STATE.with(|s| {
        if let Some(c) = s.borrow_mut().framework_clients.last_mut() {
            if c.seq == 0 {
                (c.local, c.remote, c.seq) = (local, remote, seq);
                c.start_ns = crate::clock::monotonic_ns();
            }
        }
    });
}

/// `RealCall.getResponseWithInterceptorChain()`: `this` (slot 0) holds the
/// request (`originalRequest`), replaced by a copy with a traceparent unless
/// it has one.
fn okhttp_calls(hit: &Hit, depth: i32) {
    if let Some(read) = readers::take() {
        return calling_read(read, depth);
    }
    let env = hit.jni;
    let args = Args::of(hit, 0);
    let this = args.object(0);
    const FIELD: (&str, &str) = ("originalRequest", "Lokhttp3/Request;");
    let req = env.object_field(this, FIELD.0, FIELD.1);
    let method = env.call_string(req, "method");
    let url = env.call_object(req, "url", "()Lokhttp3/HttpUrl;");
    let path = env.call_string(url, "encodedPath").unwrap_or_default();
    env.delete_local(url);
    let traceparent = match string_call(env, req, "header", "traceparent") {
        Some(own) => Some(own),
        None => {
            let value = new_traceparent(served_trace_id(env, None));
            let (k, v) = (env.new_string("traceparent"), env.new_string(&value));
            let builder = env.call_object(req, "newBuilder", "()Lokhttp3/Request$Builder;");
            let header = (
                "header",
                "(Ljava/lang/String;Ljava/lang/String;)Lokhttp3/Request$Builder;",
            );
            let with = env.call_object_with(
                builder,
                header,
                &[sys::jvalue { l: k }, sys::jvalue { l: v }],
            );
            let copy = env.call_object(with, "build", "()Lokhttp3/Request;");
            let set = !copy.is_null() && env.set_object_field(this, FIELD, copy);
            for o in [copy, with, builder, v, k] {
                env.delete_local(o);
            }
            set.then_some(value)
        }
    };
    env.delete_local(req);
    env.delete_local(this);
    if let (Some(method), Some(traceparent)) = (method, traceparent) {
        calling(call(method, path, traceparent), depth);
    }
}

/// `CallServerInterceptor.intercept(Chain chain)`: slot 1; the exchange goes
/// over `chain.connection().socket()`.
fn okhttp_sends(hit: &Hit) {
    let env = hit.jni;
    let read = |socket| endpoints_of(env, socket, || socket_endpoints(env, socket));
    match readers::take() {
        Some(Read::Sends(socket)) => sends_over(read(socket)),
        Some(_) => {}
        None => {
            let chain = Args::of(hit, 0).object(1);
            let conn = env.call_object(chain, "connection", "()Lokhttp3/Connection;");
            let socket = env.call_object(conn, "socket", "()Ljava/net/Socket;");
            sends_over(read(socket));
            for o in [socket, conn, chain] {
                env.delete_local(o);
            }
        }
    }
}

/// `InternalHttpClient.doExecute(HttpHost, ClassicHttpRequest request,
/// HttpContext)`: slot 2, a mutable request.
fn hc5_calls(hit: &Hit, depth: i32) {
    if let Some(read) = readers::take() {
        return calling_read(read, depth);
    }
    let env = hit.jni;
    let args = Args::of(hit, 0);
    let req = args.object(2);
    let read = read_hc5_request(env, req);
    env.delete_local(req);
    if let Some(c) = read {
        calling(c, depth);
    }
}

fn read_hc5_request(env: Jni, req: sys::jobject) -> Option<Call> {
    let method = env.call_string(req, "getMethod")?;
    let path = env.call_string(req, "getPath").unwrap_or_default();
    let path = path.split('?').next().unwrap_or_default().to_string();
    let first = (
        "getFirstHeader",
        "(Ljava/lang/String;)Lorg/apache/hc/core5/http/Header;",
    );
    let key = env.new_string("traceparent");
    let header = env.call_object_with(req, first, &[sys::jvalue { l: key }]);
    let own = env.call_string(header, "getValue");
    env.delete_local(header);
    let traceparent = match own {
        Some(own) => Some(own),
        None => {
            let value = new_traceparent(served_trace_id(env, None));
            let v = env.new_string(&value);
            let set = ("setHeader", "(Ljava/lang/String;Ljava/lang/Object;)V");
            let ok = !key.is_null()
                && !v.is_null()
                && env.call_void_with(req, set, &[sys::jvalue { l: key }, sys::jvalue { l: v }]);
            env.delete_local(v);
            ok.then_some(value)
        }
    };
    env.delete_local(key);
    Some(call(method, path, traceparent?))
}

/// `DefaultBHttpClientConnection.sendRequestHeader(request)`: `this` (slot 0)
/// is the connection.
fn hc5_sends(hit: &Hit) {
    let env = hit.jni;
    let getters = ("getLocalAddress", "getRemoteAddress");
    let read = |conn| endpoints_of(env, conn, || socket_addresses(env, conn, getters, ADDRESS));
    match readers::take() {
        Some(Read::Sends(conn)) => sends_over(read(conn)),
        Some(_) => {}
        None => {
            let conn = Args::of(hit, 0).object(0);
            sends_over(read(conn));
            env.delete_local(conn);
        }
    }
}
