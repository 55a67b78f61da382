//! A small HTTP/1.1 server for the API and the UI: GET, and POST with a
//! `Content-Length` body for pushes (`push`), one request per connection, bounded
//! request size and time, a thread per request up to a limit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use jscope_store::LogSink;
use jscope_tls::Stream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

const MAX_HEAD: u64 = 16 << 10;
const MAX_CONCURRENT: usize = 64;
/// The largest request body read (a pushed profile).
pub const MAX_BODY: u64 = 64 << 20;

/// A parsed request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub authorization: Option<String>,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    /// The body of a POST (empty for GET).
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of a query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Every value of a repeated parameter, commas also separating values.
    pub fn params(&self, name: &str) -> Vec<String> {
        self.query
            .iter()
            .filter(|(k, _)| k == name)
            .flat_map(|(_, v)| v.split(','))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect()
    }
}

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(value: &impl serde::Serialize) -> Response {
        Response {
            status: 200,
            content_type: "application/json",
            body: serde_json::to_vec(value).expect("serialisable"),
        }
    }

    pub fn error(status: u16, message: &str) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: serde_json::to_vec(&serde_json::json!({ "error": message })).expect("json"),
        }
    }

    pub fn bytes(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status: 200,
            content_type,
            body: body.into(),
        }
    }
}

pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// How the server speaks: plain HTTP, or HTTPS with this configuration; and where
/// refused connections are logged.
#[derive(Clone)]
pub(crate) struct Transport {
    pub tls: Option<Arc<jscope_tls::ServerConfig>>,
    pub log: Arc<dyn LogSink>,
    /// Requests answered, by route and status, for `/metrics`.
    pub counts: Arc<crate::metrics::HttpCounts>,
}

/// Serves until `stopping` is set and a connection wakes the loop.
pub(crate) fn serve(
    listener: TcpListener,
    handler: Handler,
    stopping: Arc<AtomicBool>,
    transport: Transport,
) {
    let busy = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        if busy.load(Ordering::SeqCst) >= MAX_CONCURRENT {
            if transport.tls.is_none() {
                let _ = respond(&mut Stream::Plain(stream), &Response::error(503, "busy"));
            }
            continue;
        }
        busy.fetch_add(1, Ordering::SeqCst);
        let (handler, done, transport) = (handler.clone(), busy.clone(), transport.clone());
        let spawned = thread::Builder::new()
            .name("jscope-http".into())
            .spawn(move || {
                if let Some(stream) = secure(stream, &transport) {
                    handle(stream, &handler, &transport.counts);
                }
                done.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // The closure (and its counter decrement) never ran.
            busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The connection as the server speaks it: on an HTTPS port a plaintext request is
/// answered in plaintext with a 400 naming https://, and logged; a failed TLS
/// handshake is logged. `None` when nothing more is to be done with it.
fn secure(tcp: TcpStream, transport: &Transport) -> Option<Stream> {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = tcp.set_write_timeout(Some(Duration::from_secs(30)));
    let Some(tls) = &transport.tls else {
        return Some(Stream::Plain(tcp));
    };
    let peer = tcp
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    match jscope_tls::peek_first(&tcp) {
        Some(b) if jscope_tls::looks_like_tls(b) => {}
        Some(_) => {
            transport.log.line(&format!(
                "{peer}: refused: plaintext HTTP on the HTTPS port"
            ));
            jscope_tls::discard_pending(&tcp);
            let no = Response::error(400, "this server speaks only HTTPS: use https://");
            let _ = respond(&mut Stream::Plain(tcp), &no);
            return None;
        }
        None => return None,
    }
    match Stream::server(tcp, tls.clone()) {
        Ok(s) => Some(s),
        Err(e) => {
            transport
                .log
                .line(&format!("{peer}: refused: TLS handshake failed: {e}"));
            None
        }
    }
}

fn handle(mut stream: Stream, handler: &Handler, counts: &crate::metrics::HttpCounts) {
    let mut path = String::new();
    let response = match read_request(&mut stream) {
        Ok(req) if matches!(req.method.as_str(), "GET" | "HEAD" | "POST") => {
            path.clone_from(&req.path);
            // A handler that panics (a bug) answers 500; the server, and its count of
            // busy connections, carry on.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&req)))
                .unwrap_or_else(|_| Response::error(500, "jscope: internal error"))
        }
        Ok(_) => Response::error(405, "only GET and POST"),
        Err(r) => r,
    };
    counts.count(&path, response.status);
    let _ = respond(&mut stream, &response);
    stream.close_notify();
}

fn read_request(stream: &mut Stream) -> Result<Request, Response> {
    let bad = || Response::error(400, "bad request");
    let mut r = BufReader::new(stream.take(MAX_HEAD));
    let mut line = String::new();
    r.read_line(&mut line).map_err(|_| bad())?;
    let mut parts = line.split_whitespace();
    let method = parts.next().ok_or_else(bad)?.to_string();
    let target = parts.next().ok_or_else(bad)?;
    let mut req = parse_target(target);
    req.method = method;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut expect_continue = false;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).map_err(|_| bad())? == 0 || h.trim().is_empty() {
            break;
        }
        let Some((k, v)) = h.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
        match k.as_str() {
            "authorization" => req.authorization = Some(v),
            "content-type" => req.content_type = Some(v),
            "content-encoding" => req.content_encoding = Some(v),
            "content-length" => length = Some(v.parse().map_err(|_| bad())?),
            "transfer-encoding" => chunked = !v.eq_ignore_ascii_case("identity"),
            "expect" => expect_continue = v.eq_ignore_ascii_case("100-continue"),
            _ => {}
        }
    }
    if req.method != "POST" {
        return Ok(req);
    }
    if chunked {
        return Err(Response::error(411, "send the body with a Content-Length"));
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY {
        return Err(Response::error(
            413,
            &format!("body of {length} bytes is over the limit of {MAX_BODY}"),
        ));
    }
    if expect_continue {
        // curl asks before sending a body over 1 KiB; say yes rather than make it wait.
        let w = r.get_mut().get_mut();
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .and_then(|_| w.flush())
            .map_err(|_| bad())?;
    }
    // What the head's reader buffered past the head is the body's start.
    let buffered = r.buffer().len() as u64;
    r.get_mut().set_limit(length.saturating_sub(buffered));
    let mut body = Vec::with_capacity(length as usize);
    r.read_to_end(&mut body).map_err(|_| bad())?;
    body.truncate(length as usize);
    if (body.len() as u64) < length {
        return Err(Response::error(
            400,
            &format!("body ended after {} of {length} bytes", body.len()),
        ));
    }
    req.body = body;
    Ok(req)
}

/// Splits `/path?a=1&b=2` and percent-decodes the parts.
pub fn parse_target(target: &str) -> Request {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    Request {
        path: percent_decode(path),
        query,
        ..Request::default()
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| Some(hex(bytes[i + 1])? * 16 + hex(bytes[i + 2])?))
            .flatten();
        match (bytes[i], escaped) {
            (_, Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn respond(stream: &mut Stream, r: &Response) -> std::io::Result<()> {
    let reason = match r.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        r.status,
        r.content_type,
        r.body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&r.body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_handler_answers_500_and_the_server_keeps_serving() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handler: Handler = Arc::new(|req: &Request| {
            assert!(req.path != "/panic", "a bug");
            Response::bytes("text/plain", "ok")
        });
        let transport = Transport {
            tls: None,
            log: Arc::new(jscope_store::MemoryLog::default()),
            counts: Default::default(),
        };
        thread::spawn(move || {
            serve(
                listener,
                handler,
                Arc::new(AtomicBool::new(false)),
                transport,
            )
        });
        let get = |path: &str| {
            let mut s = TcpStream::connect(addr).unwrap();
            write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out.get(9..12).unwrap_or("").to_string()
        };
        // More panics than the server has room for busy connections.
        for _ in 0..MAX_CONCURRENT + 6 {
            assert_eq!(get("/panic"), "500");
        }
        assert_eq!(get("/ok"), "200");
    }

    #[test]
    fn targets_are_split_and_decoded() {
        let r = parse_target("/api/flame?jvm=a%2Cb&jvm=c&thread=pool+1&x=%zz&y=%4");
        assert_eq!(r.path, "/api/flame");
        assert_eq!(r.params("jvm"), ["a", "b", "c"]);
        assert_eq!(r.param("thread"), Some("pool 1"));
        assert_eq!(r.param("x"), Some("%zz"));
        assert_eq!(r.param("y"), Some("%4"));
        assert_eq!(r.param("none"), None);
    }
}
