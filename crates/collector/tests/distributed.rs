//! JVMs that only trace (no sampling), streamed to a real collector: their trace
//! events and remote calls are stored under the time they cover and read back
//! (also from a data directory indexed before trace spans were), and
//! `GET /api/distributed` merges them into one tree across JVMs.

mod common;

use std::time::Duration;

use common::*;
use jscope_format::{
    Header, RemoteCall, RemoteProtocol, RemoteSide, ThreadDef, TraceBatch, TraceEvent, TraceKind,
};
use jscope_format::{StackId, StringId, ThreadId};
use jscope_store::{FileStore, Store};
use jscope_testkit::{temp_dir, RecordingBuilder};
use serde_json::{json, Value};

const MINUTE_NS: u64 = 60_000_000_000;
const MS: u64 = 1_000_000;
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// A JVM that traces and records HTTP calls; times in ns since its start.
struct TracingJvm {
    b: RecordingBuilder,
    stream: String,
    events: Vec<TraceEvent>,
    remotes: Vec<RemoteCall>,
}

impl TracingJvm {
    fn new(pid: u32, thread: &str, clock_ahead_ns: u64) -> TracingJvm {
        let header = Header {
            pid,
            host: "testhost".into(),
            command_line: format!("java App{pid}"),
            start_wall_ns: now_ns() - 60_000 * MS + clock_ahead_ns,
            start_ticks: 1_000,
            ticks_per_second: 1_000_000_000,
            modes: "trace".into(),
            ..Header::default()
        };
        let mut b = RecordingBuilder::with_header(header);
        b.thread_def(ThreadDef {
            id: ThreadId(1),
            java_id: 1,
            name: thread.into(),
            group: "main".into(),
            start_order: 1,
            ..ThreadDef::default()
        });
        TracingJvm {
            stream: format!("testhost-{pid}-1"),
            b,
            events: vec![],
            remotes: vec![],
        }
    }

    fn string(&mut self, s: &str) -> u32 {
        self.b.string(s).0
    }

    fn ticks(&self, ns: u64) -> u64 {
        self.b.header().start_ticks + ns
    }

    fn enter(&mut self, label: &str, at_ns: u64) {
        self.event(TraceKind::Enter, label, at_ns);
    }

    fn exit(&mut self, label: &str, at_ns: u64) {
        self.event(TraceKind::Exit, label, at_ns);
    }

    fn event(&mut self, kind: TraceKind, label: &str, at_ns: u64) {
        let method = self.b.method(label);
        let ticks = self.ticks(at_ns);
        self.events.push(TraceEvent {
            kind,
            method,
            ticks,
            untraced: 0,
            cpu_ns: 0,
        });
    }

    /// An HTTP call on connection `client_port` -> 8080, seen from this side.
    fn http(&mut self, side: RemoteSide, span_ns: (u64, u64), client_port: u32) {
        let (host, path, get, id) = (
            self.string("127.0.0.1"),
            self.string("/hop"),
            self.string("GET"),
            self.string(TRACEPARENT),
        );
        let (local_port, remote_port) = match side {
            RemoteSide::Client => (client_port, 8080),
            RemoteSide::Server => (8080, client_port),
        };
        let ticks = self.ticks(span_ns.0);
        self.remotes.push(RemoteCall {
            side,
            protocol: RemoteProtocol::Http,
            thread: ThreadId(1),
            ticks,
            duration_ns: span_ns.1 - span_ns.0,
            local_host: StringId(host),
            local_port,
            remote_host: StringId(host),
            remote_port,
            conn_seq: 1,
            object: StringId(path),
            method_hash: 0,
            method: StringId(get),
            request_id: StringId(id),
            stack: StackId::NONE,
            failed: false,
        });
    }

    /// The dictionaries, trace events and remote calls written so far as one chunk.
    fn chunk(&mut self) -> Vec<u8> {
        self.b.trace(&TraceBatch {
            thread: ThreadId(1),
            has_cpu: false,
            events: std::mem::take(&mut self.events),
        });
        for r in std::mem::take(&mut self.remotes) {
            self.b.remote(&r);
        }
        self.b.take_chunk()
    }

    /// Streams the chunk to the collector as the agent would, then says goodbye.
    fn stream_to(&mut self, agents: std::net::SocketAddr) {
        let cfg = jscope_wire::ClientConfig::new(agents.to_string(), self.stream.clone());
        let mut c = jscope_wire::WireClient::connect(&cfg, &self.b.file_start(), 1)
            .expect("collector accepts");
        c.send(1, &self.chunk()).unwrap();
        assert_eq!(c.finish(Duration::from_secs(10)).unwrap(), 1);
    }
}

/// A client whose `main` calls a stub that makes one HTTP call, and a server (its
/// clock two minutes ahead) whose handler serves it; neither samples.
fn client_and_server() -> (TracingJvm, TracingJvm) {
    let mut client = TracingJvm::new(10, "main", 0);
    client.enter("app.Client.main", 0);
    client.enter("app.Client.fetch", MS);
    client.http(RemoteSide::Client, (MS + 100_000, 9 * MS - 100_000), 41_000);
    client.exit("app.Client.fetch", 9 * MS);
    client.exit("app.Client.main", 10 * MS);
    let mut server = TracingJvm::new(11, "HTTP-Dispatcher", 2 * MINUTE_NS);
    server.http(RemoteSide::Server, (MS + 500_000, 8 * MS + 500_000), 41_000);
    server.enter("app.Server.handle", MS + 600_000);
    server.exit("app.Server.handle", 8 * MS + 400_000);
    (client, server)
}

fn wall_ms(jvm: &TracingJvm, ns: u64) -> u64 {
    (jvm.b.header().start_wall_ns + ns) / MS
}

#[test]
fn a_jvm_that_only_traces_is_stored_under_the_time_its_calls_cover() {
    let data = temp_dir("collector-trace-spans");
    let (mut client, mut server) = client_and_server();
    let (handle, _log) = start(&data, |_| {});
    client.stream_to(handle.agents_addr().unwrap());
    server.stream_to(handle.agents_addr().unwrap());
    handle.shutdown();

    let store = FileStore::open_read_only(&data).unwrap();
    let jvm = store
        .jvms()
        .into_iter()
        .find(|j| j.identity.id == client.stream)
        .unwrap();
    let seg = &jvm.segments[0];
    let start = client.b.header().start_wall_ns;
    assert_eq!(
        (seg.start_ns, seg.end_ns),
        (Some(start), Some(start + 10 * MS))
    );
    let rec = store.read(&client.stream, None, None).unwrap();
    assert_eq!(rec.traces.iter().map(|b| b.events.len()).sum::<usize>(), 4);
    assert_eq!(rec.remote_calls.len(), 1);
    // A window inside the calls finds them; one after them does not.
    let inside = store
        .read(&client.stream, Some(start + 5 * MS), Some(start + 6 * MS))
        .unwrap();
    assert_eq!(inside.remote_calls.len(), 1);
    let after = store
        .read(&client.stream, Some(start + 11 * MS), None)
        .unwrap();
    assert!(after.traces.is_empty() && after.remote_calls.is_empty());
    // The server's span ends with its remote call's end (8.5 ms), after its last event.
    let s = store
        .jvms()
        .into_iter()
        .find(|j| j.identity.id == server.stream)
        .unwrap();
    let s_start = server.b.header().start_wall_ns;
    assert_eq!(
        (s.segments[0].start_ns, s.segments[0].end_ns),
        (
            Some(s_start + MS + 500_000),
            Some(s_start + 8 * MS + 500_000)
        )
    );
}

#[test]
fn a_data_directory_indexed_before_trace_spans_reads_back_whole() {
    let data = temp_dir("collector-old-index");
    let (mut client, _) = client_and_server();
    let (handle, _log) = start(&data, |_| {});
    client.stream_to(handle.agents_addr().unwrap());
    handle.shutdown();
    // What an older collector wrote for a trace-only stream: no span, no flag.
    let index = data.join("jvms").join(&client.stream).join("index.json");
    let mut old: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    for seg in old["segments"].as_array_mut().unwrap() {
        let seg = seg.as_object_mut().unwrap();
        seg.remove("spans_all_records");
        seg.insert("start_ns".into(), Value::Null);
        seg.insert("end_ns".into(), Value::Null);
    }
    std::fs::write(&index, serde_json::to_vec_pretty(&old).unwrap()).unwrap();

    let reader = FileStore::open_read_only(&data).unwrap();
    let rec = reader.read(&client.stream, None, None).unwrap();
    assert_eq!(
        rec.remote_calls.len(),
        1,
        "read back without rewriting the index"
    );
    let untouched: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(untouched, old, "a reader changes nothing");

    // A collector opening it rescans the old segment and rewrites the index.
    let store = FileStore::open(&data, 64 << 20, Duration::from_secs(3600)).unwrap();
    let start = client.b.header().start_wall_ns;
    let seg = &store.jvms()[0].segments[0];
    assert_eq!(
        (seg.start_ns, seg.end_ns),
        (Some(start), Some(start + 10 * MS))
    );
    let new: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(new["segments"][0]["spans_all_records"], json!(true));
}

#[test]
fn the_api_merges_stored_jvms_into_one_tree_with_the_server_under_the_clients_call() {
    let data = temp_dir("collector-distributed-api");
    let (mut client, mut server) = client_and_server();
    let (handle, _log) = start(&data, |_| {});
    client.stream_to(handle.agents_addr().unwrap());
    server.stream_to(handle.agents_addr().unwrap());
    let http = handle.http_addr().unwrap();

    let tree = get_json(http, "/api/distributed");
    assert_eq!(tree["jvms"].as_array().unwrap().len(), 2);
    assert_eq!(
        (
            &tree["matched"],
            &tree["unmatched_clients"],
            &tree["unmatched_servers"]
        ),
        (&json!(1), &json!(0), &json!(0))
    );
    let names: Vec<&str> = tree["jvms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    let c = names.iter().position(|n| *n == client.stream).unwrap();
    let s = names.iter().position(|n| *n == server.stream).unwrap();
    assert_eq!(tree["reference"], json!(c));
    // The server's clock is two minutes ahead. Bounds: client start - server start
    // = -0.4 ms and end - end = +0.4 ms around the true difference of the clocks.
    let offset = tree["jvms"][s]["offset_ns"].as_i64().unwrap();
    let truth = client.b.header().start_wall_ns as i64 - server.b.header().start_wall_ns as i64;
    assert!((truth + 2 * MINUTE_NS as i64).abs() < 1_000_000_000);
    assert_eq!(offset, truth);
    assert_eq!(tree["jvms"][s]["uncertainty_ns"], json!(400_000));

    let rows: Vec<(Option<u64>, u64, String)> = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["parent"].as_u64(),
                n["jvm"].as_u64().unwrap(),
                n["label"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let (c, s) = (c as u64, s as u64);
    assert_eq!(rows[0], (None, c, "app.Client.main".into()));
    assert_eq!(rows[1], (Some(0), c, "app.Client.fetch".into()));
    assert_eq!((rows[2].0, rows[2].1), (Some(1), c), "the remote call");
    assert_eq!(rows[3], (Some(2), s, "app.Server.handle".into()));
    let remote = &tree["nodes"][2]["remote"];
    assert_eq!(remote["server_jvm"], json!(s));
    assert_eq!(remote["network_ns"], json!(800_000));
    assert_eq!(remote["request_id"], json!(TRACEPARENT));
    assert_eq!(rows.len(), 4, "the server's own tree is empty: {rows:?}");

    // Only the client: its call stays unmatched and is not shown as a remote row.
    let one = get_json(http, &format!("/api/distributed?jvm={}", client.stream));
    assert_eq!(
        (&one["matched"], &one["unmatched_clients"]),
        (&json!(0), &json!(1))
    );
    assert_eq!(one["nodes"].as_array().unwrap().len(), 2);
    // A window after the client's main keeps none of its rows.
    let late = wall_ms(&client, 11 * MS);
    let none = get_json(http, &format!("/api/distributed?from={late}"));
    assert_eq!(none["nodes"], json!([]));
    let during = wall_ms(&client, 5 * MS);
    let some = get_json(http, &format!("/api/distributed?from={during}&to={during}"));
    assert_eq!(some["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(http_get(http, "/api/distributed?jvm=nope").0, 404);
    assert_eq!(http_get(http, "/api/distributed?depth=x").0, 400);
    handle.shutdown();
}
