//! The ClickHouse store's `events`, `trace_calls` and `remote_calls` tables against a
//! real `clickhouse-server` (skipped, saying why, when it is not installed): two
//! JVMs (an HTTP/RMI client and the server it calls) stream chunks with JVM events,
//! trace events whose calls span chunks, and remote calls through the real ingest;
//! the rows are checked against the agents' own files decoded, and the SQL answers
//! of the API (event flame graphs, traced methods, remote calls across JVMs)
//! against the same answers computed from the chunks read back.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use jscope_analysis::events::{EventFilter, EventWeight};
use jscope_analysis::trace::{replay, Call, TraceOptions, THREW, UNFINISHED};
use jscope_analysis::{collapse, CollapseOptions};
use jscope_flame::FlameGraph;
use jscope_format::{
    encode_file_start, ClassId, EventKind, Frame, FrameKind, Header, JvmEvent, MethodId, Recording,
    RemoteCall, RemoteProtocol, RemoteSide, StackId, StringId, ThreadDef, ThreadId, TraceBatch,
    TraceEvent, TraceKind, UserEventKind, NATIVE_CALLOC, NATIVE_MALLOC, NATIVE_MUTEX,
};
use jscope_store::calls::{
    event_kinds, event_kinds_from_chunks, event_stacks, event_stacks_from_chunks, remote_calls,
    remote_calls_from_chunks, traced_methods, traced_methods_from_chunks, EventStacks,
};
use jscope_store::query::Query;
use jscope_store::{ClickHouseStore, MemoryLog, Store};
use jscope_testkit::{temp_dir, wait_until, ClickHouse, RecordingBuilder};
use jscope_wire::{ClientConfig, WireClient};

const ACK: Duration = Duration::from_secs(20);
const MS: u64 = 1_000_000;
/// Chunks each JVM sends; each covers one second.
const CHUNKS: u64 = 4;

/// A JVM that records events, exact traces and remote calls: the client calls the
/// server over HTTP (`GET /cart`) and RMI once per chunk.
struct RichJvm {
    header: Header,
    stream: String,
    client: bool,
    writer: RecordingBuilder,
    /// The ids of the strings below, by their `S_` index.
    strings: [StringId; 18],
    made: u64,
}

// Strings, by their index in `RichJvm::strings`.
const S_SHOP: usize = 1;
const S_MAIN: usize = 2;
const S_WORK: usize = 3;
const S_HELPER: usize = 4;
const S_SIG: usize = 5;
const S_LOCK: usize = 6;
const S_COND: usize = 7;
const S_BYTES: usize = 8;
const S_CHECKOUT: usize = 9;
const S_G1: usize = 10;
const S_CLIENT_HOST: usize = 11;
const S_SERVER_HOST: usize = 12;
const S_CART: usize = 13;
const S_GET: usize = 14;
const S_RMI_OBJECT: usize = 15;
const S_RMI_METHOD: usize = 16;
const S_CAUSE: usize = 17;

impl RichJvm {
    fn new(pid: u32, client: bool, start_wall_ns: u64) -> RichJvm {
        let header = Header {
            agent_version: "0.1.0-test".into(),
            pid,
            host: "testhost".into(),
            command_line: if client {
                "com.acme.Shop"
            } else {
                "com.acme.Cart"
            }
            .into(),
            vm_name: "OpenJDK 64-Bit Server VM".into(),
            vm_version: "17.0.9".into(),
            vm_vendor: "Test".into(),
            java_version: "17".into(),
            os: "Linux".into(),
            arch: "amd64".into(),
            start_wall_ns,
            start_ticks: 1_000,
            ticks_per_second: 1_000_000_000,
            modes: "cpu".into(),
            interval_ns: 10 * MS,
            max_depth: 64,
            extra: vec![
                ("events".into(), "all".into()),
                ("events.allocrate".into(), "524288".into()),
            ],
        };
        RichJvm {
            stream: format!("testhost-{pid}-{start_wall_ns}"),
            header: header.clone(),
            client,
            writer: RecordingBuilder::with_header(header.clone()),
            strings: [StringId::NONE; 18],
            made: 0,
        }
    }

    fn header_bytes(&self) -> Vec<u8> {
        encode_file_start(&self.header)
    }

    fn declare(&mut self) {
        let w = &mut self.writer;
        let texts = [
            (S_SHOP, "com.acme.Shop"),
            (S_MAIN, "main"),
            (S_WORK, "work"),
            (S_HELPER, "helper"),
            (S_SIG, "()V"),
            (
                S_LOCK,
                "java.util.concurrent.locks.ReentrantLock$NonfairSync",
            ),
            (
                S_COND,
                "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject",
            ),
            (S_BYTES, "byte[]"),
            (S_CHECKOUT, "checkout"),
            (S_G1, "G1 Young Generation"),
            (S_CLIENT_HOST, "10.0.0.1"),
            (S_SERVER_HOST, "10.0.0.2"),
            (S_CART, "/cart"),
            (S_GET, "GET"),
            (S_RMI_OBJECT, "[0:0:0, 7]"),
            (S_RMI_METHOD, "price(Ljava/lang/String;)J"),
            (S_CAUSE, "G1 Evacuation Pause"),
        ];
        for (i, text) in texts {
            self.strings[i] = w.string(text);
        }
        let text = |i: usize| texts.iter().find(|(j, _)| *j == i).map_or("", |t| t.1);
        // Classes 1 to 4 and methods 1 to 3, as the events below name them.
        for (id, name) in [(1, S_SHOP), (2, S_LOCK), (3, S_COND), (4, S_BYTES)] {
            assert_eq!(w.class(text(name)), ClassId(id));
        }
        for (id, name) in [(1, S_MAIN), (2, S_WORK), (3, S_HELPER)] {
            let label = format!("com.acme.Shop.{}", text(name));
            assert_eq!(w.method_with(&label, "()V", 1), MethodId(id));
        }
        let frame = |m, line| Frame {
            method: MethodId(m),
            bci: 1,
            line,
            kind: FrameKind::Interpreted,
        };
        assert_eq!(w.stack_of(&[frame(2, 20), frame(1, 10)]), StackId(1));
        assert_eq!(
            w.stack_of(&[frame(3, 30), frame(2, 21), frame(1, 10)]),
            StackId(2)
        );
        assert_eq!(w.stack_of(&[frame(1, 11)]), StackId(3));
        for t in 1..=3u32 {
            w.thread_def(ThreadDef {
                id: ThreadId(t),
                java_id: 10 + i64::from(t),
                os_tid: 0,
                name: if t == 1 {
                    "main".into()
                } else {
                    format!("worker-{t}")
                },
                group: "main".into(),
                parent: "system".into(),
                start_order: t,
                daemon: false,
            });
        }
        w.user_event(1, "checkout");
    }

    fn chunk(&mut self) -> Vec<u8> {
        self.made += 1;
        let k = self.made;
        if k == 1 {
            self.declare();
        }
        let start_ticks = self.header.start_ticks;
        let s = self.strings;
        let at = |ms: u64| start_ticks + (k - 1) * 1_000 * MS + ms * MS;
        let event = |thread: u32, ticks, kind| JvmEvent {
            thread: ThreadId(thread),
            ticks,
            kind,
        };
        let mut events = vec![
            event(
                0,
                at(5),
                EventKind::Gc {
                    duration_ns: (3 + k) * MS,
                    collector: s[S_G1],
                    cause: s[S_CAUSE],
                    generation: 1,
                    heap_before: 64 << 20,
                    heap_after: 16 << 20,
                    gc_id: k,
                    concurrent: false,
                },
            ),
            event(
                2,
                at(100),
                EventKind::MonitorBlocked {
                    duration_ns: k * MS,
                    class: ClassId(1),
                    object: 77,
                    owner: ThreadId(3),
                    stack: StackId(1),
                    request: Default::default(),
                },
            ),
            event(
                3,
                at(200),
                EventKind::Park {
                    duration_ns: 2 * k * MS,
                    blocker_class: ClassId(2),
                    timeout_ns: 0,
                    stack: StackId(2),
                    request: Default::default(),
                },
            ),
            // A wait on a condition: no contention.
            event(
                3,
                at(300),
                EventKind::Park {
                    duration_ns: 9 * MS,
                    blocker_class: ClassId(3),
                    timeout_ns: 0,
                    stack: StackId(1),
                    request: Default::default(),
                },
            ),
            event(
                1,
                at(400),
                EventKind::Alloc {
                    class: ClassId(4),
                    size: 1_000 * k,
                    stack: StackId(2),
                    object: 0,
                    allocated_total: 0,
                    weight: 0,
                    request: Default::default(),
                },
            ),
            event(
                2,
                at(450),
                EventKind::Alloc {
                    class: ClassId(4),
                    size: 64,
                    stack: StackId(3),
                    object: 0,
                    allocated_total: 0,
                    weight: 4_096,
                    request: Default::default(),
                },
            ),
            event(
                1,
                at(500),
                EventKind::User {
                    event: 1,
                    kind: UserEventKind::Instant,
                    value: 7 * k as i64,
                },
            ),
            // Native memory: a block freed in the same second, one never
            // freed, and a native lock wait.
            event(
                2,
                at(600),
                EventKind::NativeAlloc {
                    size: 512,
                    weight: 65_536 * k,
                    address: 0x1000 * k,
                    call: NATIVE_MALLOC,
                    id: 2 * k,
                    stack: StackId(3),
                    request: jscope_format::RequestId::NONE,
                },
            ),
            event(
                0,
                at(650),
                EventKind::NativeFree {
                    id: 2 * k,
                    address: 0x1000 * k,
                },
            ),
            event(
                3,
                at(700),
                EventKind::NativeAlloc {
                    size: 4_096,
                    weight: 70_000,
                    address: 0x9000 * k,
                    call: NATIVE_CALLOC,
                    id: 2 * k + 1,
                    stack: StackId(2),
                    request: jscope_format::RequestId::NONE,
                },
            ),
            event(
                3,
                at(750),
                EventKind::NativeLock {
                    duration_ns: 3 * MS,
                    weight: 5 * MS,
                    address: 0x7f00,
                    lock: NATIVE_MUTEX,
                    stack: StackId(1),
                    request: jscope_format::RequestId::NONE,
                },
            ),
        ];
        if k == 1 {
            events.push(event(1, at(1), EventKind::ClassLoad { class: ClassId(1) }));
        }
        for e in &events {
            self.writer.event(e);
        }

        // main is entered in the first chunk and never left; worker-2's work is
        // entered in chunk 2 and left in chunk 3.
        let ev = |kind, m, ticks, untraced| TraceEvent {
            kind,
            method: MethodId(m),
            ticks,
            untraced,
            cpu_ns: 0,
        };
        let mut main = Vec::new();
        if k == 1 {
            main.push(ev(TraceKind::Enter, 1, at(2), 0));
        }
        main.extend([
            ev(TraceKind::Enter, 2, at(10), 3),
            ev(TraceKind::Enter, 3, at(20 + k), 1),
            ev(
                if k == 2 {
                    TraceKind::Throw
                } else {
                    TraceKind::Exit
                },
                3,
                at(40),
                0,
            ),
            ev(TraceKind::Exit, 2, at(60 + 10 * k), 0),
        ]);
        self.writer.trace(&TraceBatch {
            thread: ThreadId(1),
            has_cpu: false,
            events: main,
        });
        // With the thread's CPU time (the agent's `tracecpu`): 2.5 ms in the call.
        let with_cpu = |e: TraceEvent, cpu_ns| TraceEvent { cpu_ns, ..e };
        let worker = match k {
            2 => vec![with_cpu(ev(TraceKind::Enter, 2, at(900), 0), 5_000_000)],
            3 => vec![with_cpu(ev(TraceKind::Exit, 2, at(300), 0), 7_500_000)],
            _ => vec![],
        };
        if !worker.is_empty() {
            self.writer.trace(&TraceBatch {
                thread: ThreadId(2),
                has_cpu: true,
                events: worker,
            });
        }

        // The same calls from both sides: each on its own clock and thread.
        let (side, local, remote, lport, rport) = if self.client {
            (
                RemoteSide::Client,
                S_CLIENT_HOST,
                S_SERVER_HOST,
                50_001,
                8080,
            )
        } else {
            (
                RemoteSide::Server,
                S_SERVER_HOST,
                S_CLIENT_HOST,
                8080,
                50_001,
            )
        };
        let http = RemoteCall {
            side,
            protocol: RemoteProtocol::Http,
            thread: ThreadId(if self.client { 1 } else { 2 }),
            ticks: at(if self.client { 600 } else { 601 }),
            duration_ns: if self.client {
                20 * k * MS
            } else {
                18 * k * MS
            },
            local_host: s[local],
            local_port: lport,
            remote_host: s[remote],
            remote_port: rport,
            conn_seq: k,
            object: s[S_CART],
            method_hash: 0,
            method: s[S_GET],
            request_id: StringId::NONE,
            stack: StackId(if self.client { 1 } else { 0 }),
            failed: k == 3,
        };
        self.writer.remote(&http);
        if self.client {
            self.writer.remote(&RemoteCall {
                protocol: RemoteProtocol::Rmi,
                ticks: at(700),
                duration_ns: 5 * MS,
                local_port: 50_002,
                remote_port: 1099,
                conn_seq: k,
                object: s[S_RMI_OBJECT],
                method_hash: 0x1234,
                method: s[S_RMI_METHOD],
                failed: false,
                ..http
            });
        }
        self.writer.take_chunk()
    }

    fn connect(&self, addr: std::net::SocketAddr) -> WireClient {
        let cfg = ClientConfig::new(addr.to_string(), self.stream.clone());
        WireClient::connect(&cfg, &self.header_bytes(), 1).expect("collector accepts")
    }
}

fn own_file(jvm: &RichJvm, chunks: &[Vec<u8>]) -> Recording {
    let mut bytes = jvm.header_bytes();
    chunks.iter().for_each(|c| bytes.extend_from_slice(c));
    Recording::from_bytes(&bytes).unwrap()
}

/// The statements of the ```sql block in docs/COLLECTOR.md.
fn docs_examples() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/COLLECTOR.md");
    let text = std::fs::read_to_string(path).unwrap();
    let block = text
        .split("```sql\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    block
        .split(";\n")
        .map(|q| {
            q.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|q| !q.trim().is_empty())
        .collect()
}

fn sql(ch: &ClickHouse, q: &str) -> String {
    ch.query(q).unwrap_or_else(|e| panic!("{q}: {e}"))
}

fn collapsed(stacks: EventStacks) -> String {
    let mut g = FlameGraph::new();
    for (rec, counts) in stacks {
        let opts = CollapseOptions {
            lines: false,
            thread_roots: false,
            annotate: Default::default(),
        };
        for (frames, n) in collapse(&rec, &counts, opts).stacks {
            g.add(frames, n);
        }
    }
    g.to_collapsed()
}

jscope_testkit::on_each_clickhouse!(
    events_traced_calls_and_remote_calls_are_rows_and_sql_answers_equal_the_chunks,
    calls_open_across_a_dropped_connection_are_paired_as_in_one_connection
);

fn events_traced_calls_and_remote_calls_are_rows_and_sql_answers_equal_the_chunks(
    server: jscope_testkit::Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-tables") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (server, _log) = start(&temp_dir("ch-tables-unused"), |c| c.store = Some(url));
    let addr = server.agents_addr().unwrap();
    // Whole seconds into a minute, so windows below fall between records.
    let t0 = now_ns() / 1_000_000_000 * 1_000_000_000 - 1_800_000_000_000;
    let mut jvms = [RichJvm::new(9301, true, t0), RichJvm::new(9302, false, t0)];
    let mut sent = vec![Vec::new(), Vec::new()];
    for (jvm, sent) in jvms.iter_mut().zip(&mut sent) {
        let mut client = jvm.connect(addr);
        for seq in 1..=CHUNKS {
            let chunk = jvm.chunk();
            client.send(seq, &chunk).unwrap();
            sent.push(chunk);
        }
        assert_eq!(client.wait_for_ack(CHUNKS, ACK).unwrap(), CHUNKS);
        assert_eq!(client.finish(ACK).unwrap(), CHUNKS);
    }
    let own: Vec<Recording> = jvms
        .iter()
        .zip(&sent)
        .map(|(j, s)| own_file(j, s))
        .collect();

    // Every traced call of the agents' own files, paired as `jscope trace` pairs them;
    // the calls still open at the end (main) are written when the connection ends.
    let truth_calls: Vec<Vec<Call>> = own
        .iter()
        .map(|rec| replay(rec, &TraceOptions::default(), Vec::new()).0)
        .collect();
    let total_calls: usize = truth_calls.iter().map(Vec::len).sum();
    assert!(
        wait_until(Duration::from_secs(20), || {
            ch.query("SELECT count() FROM jscope.trace_calls")
                .is_ok_and(|n| n.trim() == total_calls.to_string())
        }),
        "trace_calls: {:?}, want {total_calls}",
        ch.query("SELECT count() FROM jscope.trace_calls")
    );

    for (i, (jvm, rec)) in jvms.iter().zip(&own).enumerate() {
        let s = &jvm.stream;
        // events: one row per event, with its kind's name, duration, weight and fields.
        let mut want: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for e in &rec.events {
            let d = e.kind.field("duration_ns").map_or(0, |v| v.as_u64());
            let w = want.entry(e.kind.name()).or_default();
            w.0 += 1;
            w.1 += d;
        }
        let want: String = want
            .iter()
            .map(|(k, (n, d))| format!("{k}\t{n}\t{d}\n"))
            .collect();
        let got = sql(
            &ch,
            &format!(
                "SELECT kind, count(), sum(duration_ns) FROM jscope.events \
                 WHERE stream = '{s}' GROUP BY kind ORDER BY kind"
            ),
        );
        assert_eq!(got, want);
        assert_eq!(
            sql(
                &ch,
                &format!(
                    "SELECT thread, fields.value[indexOf(fields.key, 'collector')], \
                     fields.value[indexOf(fields.key, 'cause')], time_ns FROM jscope.events \
                     WHERE stream = '{s}' AND kind = 'gc' ORDER BY time_ns LIMIT 1"
                )
            ),
            format!(
                "\tG1 Young Generation\tG1 Evacuation Pause\t{}\n",
                t0 + 5 * MS
            )
        );
        // Alloc weights: the recorded one, or the estimate from the sampling interval.
        assert_eq!(
            sql(
                &ch,
                &format!(
                    "SELECT size, weight, thread FROM jscope.events WHERE stream = '{s}' \
                     AND kind = 'alloc' ORDER BY time_ns LIMIT 2"
                )
            ),
            format!(
                "1000\t{}\tmain\n64\t4096\tworker-2\n",
                jscope_format::alloc_sample_weight(1_000, 524_288)
            )
        );
        assert_eq!(
            sql(
                &ch,
                &format!(
                    "SELECT fields.value[indexOf(fields.key, 'event')], \
                     fields.value[indexOf(fields.key, 'value')] FROM jscope.events \
                     WHERE stream = '{s}' AND kind = 'user' ORDER BY time_ns"
                )
            ),
            "checkout\t7\ncheckout\t14\ncheckout\t21\ncheckout\t28\n"
        );
        // The stack column joins the stacks table.
        assert_eq!(
            sql(
                &ch,
                &format!(
                    "SELECT count() FROM jscope.events WHERE stream = '{s}' AND stack != 0 \
                     AND stack NOT IN (SELECT hash FROM jscope.stacks)"
                )
            )
            .trim(),
            "0"
        );

        // trace_calls: one row per call with the replay's numbers.
        let start = rec.header.start_wall_ns;
        let mut want: Vec<String> = truth_calls[i]
            .iter()
            .map(|c| {
                format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    rec.method_label(MethodId(c.method)),
                    rec.thread(ThreadId(c.thread)).unwrap().name,
                    start + c.enter_ns,
                    start + c.exit_ns,
                    c.self_ns,
                    c.depth,
                    u8::from(c.flags & THREW != 0),
                    u8::from(c.flags & UNFINISHED != 0),
                    c.untraced
                )
            })
            .collect();
        want.sort();
        let got = sql(
            &ch,
            &format!(
                "SELECT method, thread, start_ns, end_ns, self_ns, depth, threw, unfinished, \
                 untraced FROM jscope.trace_calls WHERE stream = '{s}'"
            ),
        );
        let mut got: Vec<String> = got.lines().map(str::to_string).collect();
        got.sort();
        assert_eq!(got, want);
        // The call that spans chunks 2 and 3, and main left open.
        let spanning = format!(
            "com.acme.Shop.work\tworker-2\t{}\t{}\t",
            t0 + 1_900 * MS,
            t0 + 2_300 * MS
        );
        assert!(got.iter().any(|r| r.starts_with(&spanning)), "{got:?}");
        let main: Vec<&String> = got
            .iter()
            .filter(|r| r.starts_with("com.acme.Shop.main\tmain\t"))
            .collect();
        assert_eq!(main.len(), 1, "{got:?}");
        // Never left: unfinished, with the untraced calls of everything inside.
        assert!(main[0].ends_with("\t0\t1\t16"), "{main:?}");
        // CPU time where the batches carried it, NULL elsewhere.
        assert_eq!(
            sql(
                &ch,
                &format!(
                    "SELECT thread, cpu_ns, self_cpu_ns FROM jscope.trace_calls \
                     WHERE stream = '{s}' AND method = 'com.acme.Shop.work' ORDER BY start_ns"
                )
            ),
            "main\t\\N\t\\N\nmain\t\\N\t\\N\nworker-2\t2500000\t2500000\nmain\t\\N\t\\N\nmain\t\\N\t\\N\n"
        );

        // remote_calls: every call with its side, target and link.
        assert_eq!(
            sql(
                &ch,
                &format!("SELECT count() FROM jscope.remote_calls WHERE stream = '{s}'")
            )
            .trim(),
            rec.remote_calls.len().to_string()
        );
    }
    // Each HTTP call's link joins the client's row to the server's; RMI's server
    // was not recorded.
    assert_eq!(
        sql(
            &ch,
            "SELECT protocol, count(), sum(client_ns), sum(server_ns) FROM \
             (SELECT link, any(protocol) AS protocol, \
              sumIf(duration_ns, direction = 'client') AS client_ns, \
              sumIf(duration_ns, direction = 'server') AS server_ns \
              FROM jscope.remote_calls GROUP BY link \
              HAVING countIf(direction = 'client') = 1 AND countIf(direction = 'server') = 1) \
             GROUP BY protocol"
        ),
        format!("http\t4\t{}\t{}\n", 200 * MS, 180 * MS)
    );
    assert_eq!(
        sql(
            &ch,
            "SELECT link FROM jscope.remote_calls WHERE protocol = 'rmi' ORDER BY start_ns LIMIT 1"
        ),
        "rmi:10.0.0.1:50002>10.0.0.2:1099#1\n"
    );

    // The API's answers across JVMs: SQL equals what the chunks read back give.
    let store = ClickHouseStore::connect(
        &format!("{}?flush_ms=100", ch.url("jscope")),
        Arc::new(MemoryLog::default()),
    )
    .unwrap();
    let ids: Vec<String> = jvms.iter().map(|j| j.stream.clone()).collect();
    let windows = [
        (None, None),
        (Some(t0 + 1_250 * MS), Some(t0 + 2_950 * MS)),
        (Some(t0 + 3_000 * MS), None),
    ];
    for (from_ns, to_ns) in windows {
        for thread in [None, Some("worker-*".to_string())] {
            let q = Query {
                jvms: ids.clone(),
                from_ns,
                to_ns,
                thread: thread.clone(),
                ..Query::default()
            };
            let weights = [
                EventWeight::Alloc,
                EventWeight::Lock,
                EventWeight::NativeMem,
                EventWeight::NativeLock,
                EventWeight::Leak,
            ];
            for what in weights {
                let in_sql = collapsed(event_stacks(&store, &q, what).unwrap());
                let from_chunks = collapsed(event_stacks_from_chunks(&store, &q, what).unwrap());
                assert_eq!(
                    in_sql, from_chunks,
                    "{what:?} {from_ns:?}..{to_ns:?} {thread:?}"
                );
                if from_ns.is_none() {
                    assert!(!in_sql.is_empty(), "{what:?} {thread:?}");
                }
            }
        }
        let q = Query {
            jvms: ids.clone(),
            from_ns,
            to_ns,
            ..Query::default()
        };
        let kinds = event_kinds(&store, &q).unwrap();
        assert_eq!(kinds, event_kinds_from_chunks(&store, &q).unwrap());
        if from_ns.is_none() {
            let gc = kinds.iter().find(|k| k.kind == "gc").unwrap();
            assert_eq!(
                (gc.events, gc.total_ns, gc.max_ns, gc.jvms),
                (8, 2 * 22 * MS, 7 * MS, 2)
            );
        }
        let traced = traced_methods(&store, &q).unwrap();
        assert_eq!(traced, traced_methods_from_chunks(&store, &q).unwrap());
        let remote = remote_calls(&store, &q).unwrap();
        assert_eq!(remote, remote_calls_from_chunks(&store, &q).unwrap());
        if from_ns.is_none() {
            let work = traced
                .iter()
                .find(|m| m.method == "com.acme.Shop.work")
                .unwrap();
            // 4 per JVM on main, 1 per JVM on worker-2.
            assert_eq!((work.calls, work.jvms), (10, 2));
            let helper = traced
                .iter()
                .find(|m| m.method == "com.acme.Shop.helper")
                .unwrap();
            assert_eq!(helper.threw, 2);
            let http_server = remote
                .iter()
                .find(|r| r.direction == "server" && r.protocol == "http")
                .unwrap();
            assert_eq!(
                (http_server.calls, http_server.failed, http_server.total_ns),
                (4, 1, 180 * MS)
            );
        }
    }
    // Lock contention leaves the condition wait out.
    let q = Query {
        jvms: ids.clone(),
        ..Query::default()
    };
    let lock = event_stacks(&store, &q, EventWeight::Lock).unwrap();
    let total: u64 = lock.iter().map(|(_, c)| c.total).sum();
    assert_eq!(total, 2 * (10 + 20) * MS);
    let mut rec = own[0].clone();
    let alloc = jscope_analysis::events::weighted_stacks(
        &mut rec,
        &EventFilter::default(),
        EventWeight::Alloc,
    );
    let sql_alloc: u64 = event_stacks(
        &store,
        &Query {
            jvms: vec![ids[0].clone()],
            ..Query::default()
        },
        EventWeight::Alloc,
    )
    .unwrap()
    .iter()
    .map(|(_, c)| c.total)
    .sum();
    assert_eq!(sql_alloc, alloc.total);

    // Through the HTTP API too.
    let http = server.http_addr().unwrap();
    let jvm_params: String = ids.iter().map(|id| format!("jvm={id}&")).collect();
    let traced = get_json(http, &format!("/api/traced?{jvm_params}"));
    assert_eq!(
        traced,
        serde_json::to_value(traced_methods_from_chunks(&store, &q).unwrap()).unwrap()
    );
    let kinds = get_json(http, &format!("/api/events?{jvm_params}"));
    assert_eq!(
        kinds,
        serde_json::to_value(event_kinds_from_chunks(&store, &q).unwrap()).unwrap()
    );
    let remote = get_json(http, &format!("/api/remote?{jvm_params}"));
    assert_eq!(
        remote,
        serde_json::to_value(remote_calls_from_chunks(&store, &q).unwrap()).unwrap()
    );
    let (status, flame) = http_get(
        http,
        &format!("/api/flame?{jvm_params}mode=lock&format=collapsed"),
    );
    assert_eq!(status, 200, "{flame}");
    assert_eq!(
        flame,
        collapsed(event_stacks_from_chunks(&store, &q, EventWeight::Lock).unwrap())
    );
    server.shutdown();

    // The example SQL of docs/COLLECTOR.md runs and answers.
    let answers = docs_examples()
        .iter()
        .map(|q| {
            sql(
                &ch,
                &q.replace("com.acme.Shop.checkout", "com.acme.Shop.work"),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(answers.len(), 4, "{answers:?}");
    let column = |answer: &str, i: usize| -> Vec<String> {
        answer
            .lines()
            .map(|l| l.split('\t').nth(i).unwrap().to_string())
            .collect()
    };
    // GC pauses per service per minute: all 8.
    let pauses: u64 = column(&answers[0], 2)
        .iter()
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(pauses, 2 * CHUNKS, "{}", answers[0]);
    // The slowest remote calls: every client call, HTTP ones with their server's side.
    let slowest = answers[1].lines().collect::<Vec<_>>();
    assert_eq!(slowest.len(), 2 * CHUNKS as usize, "{}", answers[1]);
    assert!(
        slowest[0].contains("\thttp\t/cart\tGET\t80\t"),
        "{}",
        answers[1]
    );
    assert!(slowest[0].ends_with("\t72"), "{}", answers[1]);
    // A traced method's calls per JVM.
    assert_eq!(column(&answers[2], 1), ["5", "5"], "{}", answers[2]);
    // Contention by class: the lock and the condition parks, the monitor entries.
    assert_eq!(answers[3].lines().count(), 3, "{}", answers[3]);

    // Retention drops the new tables' day partitions with the rest.
    store.retain(now_ns() + 86_400_000_000_000).unwrap();
    for table in ["events", "trace_calls", "remote_calls"] {
        assert_eq!(
            sql(&ch, &format!("SELECT count() FROM jscope.{table}")).trim(),
            "0",
            "{table}"
        );
    }
}

/// `trace_calls` rows as text, sorted, and the same rows from a replay of the
/// agent's own file.
fn call_rows_of(ch: &ClickHouse, jvm: &RichJvm, rec: &Recording) -> (Vec<String>, Vec<String>) {
    let start = rec.header.start_wall_ns;
    let mut want: Vec<String> = replay(rec, &TraceOptions::default(), Vec::<Call>::new())
        .0
        .iter()
        .map(|c| {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                rec.method_label(MethodId(c.method)),
                rec.thread(ThreadId(c.thread)).unwrap().name,
                start + c.enter_ns,
                start + c.exit_ns,
                c.self_ns,
                c.depth,
                u8::from(c.flags & THREW != 0),
                u8::from(c.flags & UNFINISHED != 0),
                c.untraced
            )
        })
        .collect();
    want.sort();
    let got = sql(
        ch,
        &format!(
            "SELECT method, thread, start_ns, end_ns, self_ns, depth, threw, unfinished, \
             untraced FROM jscope.trace_calls WHERE stream = '{}'",
            jvm.stream
        ),
    );
    let mut got: Vec<String> = got.lines().map(str::to_string).collect();
    got.sort();
    (got, want)
}

fn calls_open_across_a_dropped_connection_are_paired_as_in_one_connection(
    server: jscope_testkit::Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-trace-reconnect") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (server, _log) = start(&temp_dir("ch-trace-reconnect-unused"), |c| {
        c.store = Some(url)
    });
    let addr = server.agents_addr().unwrap();
    let t0 = now_ns() / 1_000_000_000 * 1_000_000_000 - 1_800_000_000_000;
    let mut jvm = RichJvm::new(9401, true, t0);
    let mut sent = Vec::new();
    // Chunk 2 enters worker-2's `work` and main is open throughout; the
    // connection breaks after it (no goodbye), and chunks 3 and 4 come on the next.
    let mut client = jvm.connect(addr);
    for seq in 1..=2 {
        let chunk = jvm.chunk();
        client.send(seq, &chunk).unwrap();
        sent.push(chunk);
    }
    assert_eq!(client.wait_for_ack(2, ACK).unwrap(), 2);
    drop(client);
    let cfg = ClientConfig::new(addr.to_string(), jvm.stream.clone());
    let mut client = WireClient::connect(&cfg, &jvm.header_bytes(), 3).unwrap();
    assert_eq!(client.accept().acked, 2);
    for seq in 3..=CHUNKS {
        let chunk = jvm.chunk();
        client.send(seq, &chunk).unwrap();
        sent.push(chunk);
    }
    assert_eq!(client.wait_for_ack(CHUNKS, ACK).unwrap(), CHUNKS);
    assert_eq!(client.finish(ACK).unwrap(), CHUNKS);
    let own = own_file(&jvm, &sent);

    let (mut got, want) = call_rows_of(&ch, &jvm, &own);
    assert!(
        wait_until(Duration::from_secs(20), || {
            got = call_rows_of(&ch, &jvm, &own).0;
            got.len() >= want.len()
        }),
        "{got:?}"
    );
    assert_eq!(got, want);
    // worker-2's `work`, entered before the break and left after it: 400 ms.
    let spanning = format!(
        "com.acme.Shop.work\tworker-2\t{}\t{}\t",
        t0 + 1_900 * MS,
        t0 + 2_300 * MS
    );
    assert!(got.iter().any(|r| r.starts_with(&spanning)), "{got:?}");
    server.shutdown();
}
