//! Remote calls (issue 6): Java RMI calls made and served by this JVM, recorded as
//! RemoteCall records so that `jscope merge` can link them across JVMs.
//!
//! A second JVMTI environment (its own capabilities and callbacks, so the rest of
//! the agent is untouched) sets breakpoints at the entry of JDK methods once
//! their classes are prepared, and at the return instructions of those whose
//! returns end a call (`points`; never frame pops, which would run the waiting
//! thread interpreted only):
//!
//! - `UnicastRef.invoke(Remote, Method, Object[], long)`: a client call (method
//!   name, method hash; ends when invoke returns, or when the server's
//!   exception is read; a frame left by another exception ends its call at the
//!   thread's next RMI breakpoint);
//! - `StreamRemoteCall(Connection, ObjID, int, long)`: the client's call on a
//!   connection (endpoints from the connection's socket, object id);
//! - `StreamRemoteCall(Connection)`: the server's call read from a connection;
//! - `UnicastServerRef.dispatch(Remote, RemoteCall)`: its execution.
//!
//! Both sides count `StreamRemoteCall`s per connection (endpoint pair), so their
//! `conn_seq` agree without any change to the protocol. Calls to the JDK's own
//! registry and distributed GC objects are counted but not recorded.
//!
//! HTTP (`http`): `HttpURLConnection` requests carry a W3C `traceparent` header
//! and are recorded with it; `com.sun.net.httpserver` handlers read it.
//! `java.net.http.HttpClient` requests (`send` and `sendAsync`) get one too
//! (`http_client`).
//!
//! The HTTP methods get calls inserted into their code as their classes load,
//! not breakpoints (`calls`: a breakpoint and the frame read behind it cost
//! far more per request).
//!
//! Frameworks (`frameworks`): servlets (Jetty, Tomcat: `javax` and `jakarta`)
//! and Netty's HTTP handlers serve requests; OkHttp 3 and Apache HttpClient 5
//! calls carry a `traceparent`, all recorded as the JDK's HTTP calls are.

mod calls;
mod capture;
mod frameworks;
mod http;
mod http_client;
mod points;
mod readers;
pub mod requests;
mod span;

use crate::java_threads::ThreadKey;
use crate::jvm::thread::{current_java_id, java_id};
use crate::jvm::Jni;
use crate::sys;
use crate::threads::gettid;
use jscope_format::{StackId, StringId, ThreadId};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

pub use capture::install;

use crate::engine::{Drained, Engine, StartContext, StartError, StopContext};
use crate::sink::Sink;

/// `remote` (RMI and HTTP), `remote=rmi`, `remote=http` and `clockoffset=DURATION`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteOptions {
    /// Record remote calls (only when the agent is loaded at JVM start).
    pub enabled: bool,
    /// Which protocols (both with a bare `remote`).
    pub rmi: bool,
    pub http: bool,
    /// Added to the recording's wall-clock anchor, to simulate a machine whose
    /// clock is off (analysis places JVMs by that anchor).
    pub clock_offset_ns: i64,
}

impl RemoteOptions {
    pub fn owns(key: &str) -> bool {
        matches!(key, "remote" | "clockoffset")
    }

    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        match (key, value) {
            ("remote", None) => (self.enabled, self.rmi, self.http) = (true, true, true),
            ("remote", Some(list)) => {
                for p in list.split('+') {
                    match p {
                        "rmi" => self.rmi = true,
                        "http" => self.http = true,
                        _ => return Err(format!("bad remote protocol {p:?} (rmi, http)")),
                    }
                }
                self.enabled = true;
            }
            ("clockoffset", Some(v)) => self.clock_offset_ns = parse_signed_duration(v)?,
            _ => return Err(format!("bad remote option {key}")),
        }
        Ok(())
    }
}

/// `-3m`, `90s`, `+1h`, `250ms`: a signed duration (ns, us, ms, s, m or h).
fn parse_signed_duration(text: &str) -> Result<i64, String> {
    let bad = || format!("bad clockoffset {text:?} (e.g. -3m, 90s, 250ms)");
    let (sign, rest) = match text.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let split = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (digits, unit) = rest.split_at(split);
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let per_unit: i64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(per_unit).map(|ns| sign * ns).ok_or_else(bad)
}

/// A side's view of one call, waiting for the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRemote {
    pub server: bool,
    /// The thread that made or served the call.
    pub thread: ThreadKey,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub local: (String, u32),
    pub remote: (String, u32),
    pub conn_seq: u64,
    pub object: String,
    pub method_hash: u64,
    pub method: String,
    pub failed: bool,
    /// HTTP (else RMI).
    pub http: bool,
    /// The in-band id (HTTP: the traceparent), empty when none.
    pub request_id: String,
}

/// What the captures share, in one static (their breakpoints find it without
/// any recording at hand: they are set once, when the agent loads).
struct RemoteState {
    /// Calls recorded, waiting for the writer.
    calls: Mutex<Vec<RawRemote>>,
    /// Which protocols are captured (set once, before any class is prepared).
    rmi_on: AtomicBool,
    http_on: AtomicBool,
    /// Calls seen so far per connection (local end, remote end), on either side.
    conn_seq: Mutex<Option<HashMap<(Endpoint, Endpoint), u64>>>,
    /// `HttpClient` requests waiting for their response headers.
    http_pending: Mutex<VecDeque<http_client::Pending>>,
    /// Requests whose response never came and were evicted from the full list.
    http_evicted: AtomicU64,
    /// Requests not recorded because the request could not be read.
    http_unreadable: AtomicU64,
    /// The requests threads serve (samples and events carry their ids).
    requests: requests::Requests,
    /// Methods given inserted calls, as (class signature, name, descriptor):
    /// they get no breakpoints (`calls`).
    inserted: Mutex<Vec<(String, String, String)>>,
    /// The environment the inserted calls' handlers run in, once they can run.
    calls_env: std::sync::OnceLock<usize>,
    /// Methods given breakpoints (RMI's, and HTTP methods left without calls).
    breakpointed: AtomicU64,
    /// Target methods left with neither inserted calls nor breakpoints.
    missed: AtomicU64,
    /// Methods whose inserted calls go through a Java reader (`readers`).
    through_readers: AtomicU64,
    /// The readers defined: (reader, weak global reference to its loader),
    /// never deleted (one whose loader was unloaded matches none).
    readers: Mutex<Vec<(&'static str, usize)>>,
    /// Whether an HTTP method got breakpoints.
    http_breakpointed: AtomicBool,
}

type Endpoint = (String, u32);

static REMOTE: RemoteState = RemoteState {
    calls: Mutex::new(Vec::new()),
    rmi_on: AtomicBool::new(false),
    http_on: AtomicBool::new(false),
    conn_seq: Mutex::new(None),
    http_pending: Mutex::new(VecDeque::new()),
    http_evicted: AtomicU64::new(0),
    http_unreadable: AtomicU64::new(0),
    requests: requests::Requests::new(),
    inserted: Mutex::new(Vec::new()),
    calls_env: std::sync::OnceLock::new(),
    breakpointed: AtomicU64::new(0),
    missed: AtomicU64::new(0),
    through_readers: AtomicU64::new(0),
    readers: Mutex::new(Vec::new()),
    http_breakpointed: AtomicBool::new(false),
};

/// The requests this JVM's threads serve.
pub fn requests() -> &'static requests::Requests {
    &REMOTE.requests
}

/// The calling thread's Linux id, asked of the kernel once per thread (for
/// Java threads, not signal handlers: this thread-local may allocate).
fn own_tid() -> u32 {
    http::STATE
        .try_with(|s| match s.try_borrow_mut() {
            Ok(mut s) => *s.tid.get_or_insert_with(gettid),
            Err(_) => gettid(),
        })
        .unwrap_or_else(|_| gettid())
}

/// [`ThreadKey::of`] with the thread's Linux id asked once per thread.
fn thread_key(env: Jni, thread: sys::jthread) -> ThreadKey {
    ThreadKey::new(own_tid(), env.0 as usize, java_id(env, thread))
}

/// The thread a request of `thread` (None: the current thread) belongs to: a
/// virtual thread by its Java id alone, as the writer names them.
pub(crate) fn served_by(env: Jni, thread: Option<sys::jthread>) -> ThreadKey {
    as_served(match thread {
        Some(t) => thread_key(env, t),
        None => ThreadKey::new(own_tid(), env.0 as usize, current_java_id(env)),
    })
}

/// [`served_by`] for the current thread's `key`.
fn as_served(key: ThreadKey) -> ThreadKey {
    let mounted = crate::trace::vthreads::mounted_on(key.tid);
    if mounted != 0 && mounted == key.java_id {
        ThreadKey::new(0, 0, key.java_id)
    } else {
        key
    }
}

/// Sets the HTTP breakpoints of a prepared class (the JDK's own HTTP classes,
/// then the frameworks') that is one of the targets, for the methods that have
/// no inserted calls. Once one has, the inserted calls' own depths no longer
/// pair calls with breakpoints: they ask JVMTI for depths too.
fn http_class_prepared(jvmti: crate::jvm::Jvmti, sig: &str, class: sys::jclass) {
    let set: usize = calls::groups()
        .iter()
        .map(|targets| points::set_breakpoints(jvmti, sig, class, targets))
        .sum();
    if set > 0 {
        REMOTE
            .http_breakpointed
            .store(true, std::sync::atomic::Ordering::Release);
    }
}

/// An HTTP request served, named `name`, with its incoming traceparent (empty: none).
fn http_opening(name: String, traceparent: &str) -> requests::Opening<'_> {
    requests::Opening {
        kind: jscope_format::RequestKind::Http,
        name,
        tags: String::new(),
        traceparent: Some(traceparent).filter(|t| !t.is_empty()),
    }
}

/// Opens a request on `thread` (the current thread); returns its id.
fn begin_request(env: Jni, thread: sys::jthread, opening: requests::Opening<'_>) -> u32 {
    let key = thread_key(env, thread);
    REMOTE.requests.begin(key.tid, as_served(key), opening)
}

/// Ends request `id` (0: none) of the current thread, `thread` its key.
fn end_request(thread: ThreadKey, id: u32, failed: bool) {
    if id != 0 {
        REMOTE
            .requests
            .end(thread.tid, as_served(thread), id, failed);
    }
}

fn push(r: RawRemote) {
    if let Ok(mut q) = REMOTE.calls.lock() {
        q.push(r);
    }
}

/// The calls recorded since the last call (for the writer).
pub fn take() -> Vec<RawRemote> {
    REMOTE
        .calls
        .lock()
        .map(|mut q| std::mem::take(&mut *q))
        .unwrap_or_default()
}

/// Remote capture as an engine. Its breakpoints are set when the agent loads
/// ([`install`]: the capabilities are granted only then), so starting and
/// stopping a recording changes nothing; the engine drains the calls captured.
#[derive(Default)]
pub(crate) struct RemoteEngine;

impl Engine for RemoteEngine {
    fn start(&self, _ctx: &StartContext<'_>) -> Result<(), StartError> {
        span::RECORDING.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        span::RECORDING.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// RMI and HTTP calls made and served, under their threads.
    fn drain(&self, sink: &mut Sink) -> Drained {
        for r in take() {
            let Some(thread) = sink.event_thread(r.thread) else {
                continue;
            };
            // Paths and traceparents are endless: transient (see `Symbols`).
            let mut s = |text: &str, kept: bool| {
                StringId(match kept {
                    true => sink.string(text),
                    false => sink.transient_string(text),
                })
            };
            let call = jscope_format::RemoteCall {
                side: if r.server {
                    jscope_format::RemoteSide::Server
                } else {
                    jscope_format::RemoteSide::Client
                },
                protocol: if r.http {
                    jscope_format::RemoteProtocol::Http
                } else {
                    jscope_format::RemoteProtocol::Rmi
                },
                thread: ThreadId(thread),
                ticks: r.start_ns,
                duration_ns: r.duration_ns,
                local_host: s(&r.local.0, true),
                local_port: r.local.1,
                remote_host: s(&r.remote.0, true),
                remote_port: r.remote.1,
                conn_seq: r.conn_seq,
                object: s(&r.object, false),
                method_hash: r.method_hash,
                method: s(&r.method, true),
                request_id: if r.request_id.is_empty() {
                    StringId::NONE
                } else {
                    s(&r.request_id, false)
                },
                stack: StackId::NONE,
                failed: r.failed,
            };
            sink.chunk.remote(&call);
        }
        for r in REMOTE.requests.take() {
            let Some(thread) = sink.event_thread(r.thread) else {
                continue;
            };
            let name = StringId(sink.transient_string(&r.name));
            let tags = match r.tags.as_str() {
                "" => StringId::NONE,
                t => StringId(sink.transient_string(t)),
            };
            sink.chunk.request(&jscope_format::Request {
                id: r.id.into(),
                thread: ThreadId(thread),
                ticks: r.start_ns,
                duration_ns: r.duration_ns,
                trace_id: r.trace_id,
                span_id: r.span_id,
                parent_span_id: r.parent_span_id,
                parent: r.parent.into(),
                kind: r.kind,
                name,
                tags,
                failed: r.failed,
            });
        }
        Drained::All
    }

    /// How the methods were captured (calls inserted into their code, of
    /// which those through Java readers, or breakpoints); `java.net.http.HttpClient` requests not recorded, when
    /// there are any.
    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        let inserted = REMOTE
            .inserted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        out.push(("remote.methods_inserted", inserted as u64));
        let through = REMOTE
            .through_readers
            .load(std::sync::atomic::Ordering::Relaxed);
        out.push(("remote.methods_through_readers", through));
        let breakpointed = REMOTE
            .breakpointed
            .load(std::sync::atomic::Ordering::Relaxed);
        out.push(("remote.methods_breakpointed", breakpointed));
        let missed = REMOTE.missed.load(std::sync::atomic::Ordering::Relaxed);
        if missed > 0 {
            out.push(("remote.methods_missed", missed));
        }
        let dropped = REMOTE.requests.dropped();
        if dropped > 0 {
            out.push(("requests.dropped", dropped));
        }
        let (evicted, unreadable) = http_client::lost_counts();
        if evicted + unreadable > 0 {
            out.push(("remote.http_client_evicted", evicted));
            out.push(("remote.http_client_unreadable", unreadable));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offsets_are_signed_durations() {
        assert_eq!(parse_signed_duration("-3m"), Ok(-180_000_000_000));
        assert_eq!(parse_signed_duration("90s"), Ok(90_000_000_000));
        assert_eq!(parse_signed_duration("+5ms"), Ok(5_000_000));
        assert!(parse_signed_duration("soon").is_err());
        let mut o = RemoteOptions::default();
        o.set("remote", None).unwrap();
        o.set("clockoffset", Some("-2m")).unwrap();
        assert_eq!((o.enabled, o.clock_offset_ns), (true, -120_000_000_000));
        assert!(o.set("clockoffset", None).is_err());
        assert!(o.rmi && o.http);
        let mut h = RemoteOptions::default();
        h.set("remote", Some("http")).unwrap();
        assert!(h.enabled && h.http && !h.rmi);
        assert!(h.set("remote", Some("ftp")).is_err());
    }
}
