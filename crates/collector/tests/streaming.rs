//! Several simulated agents streaming at once; their data shows up in the API under
//! the right identity, live and stored.

mod common;

use std::thread;
use std::time::Duration;

use common::*;
use jscope_testkit::{temp_dir, wait_until};

const CHUNKS: u64 = 5;

#[test]
fn several_agents_stream_at_once_and_keep_their_identity() {
    let (server, _log) = start(&temp_dir("collector-streaming"), |_| {});
    let agents_addr = server.agents_addr().unwrap();
    let http = server.http_addr().unwrap();
    let pids = [4101u32, 4102, 4103];
    let mut sims: Vec<SimJvm> = pids
        .iter()
        .map(|&p| SimJvm::new(p, &format!("com.acme.Main{p} --port {p}")))
        .collect();
    let streams: Vec<String> = sims.iter().map(|s| s.stream.clone()).collect();
    let mut clients: Vec<_> = thread::scope(|scope| {
        let handles: Vec<_> = sims
            .iter_mut()
            .map(|sim| {
                scope.spawn(move || {
                    let mut c = sim.connect(agents_addr, 1);
                    assert_eq!(c.accept().acked, 0);
                    for seq in 1..=CHUNKS {
                        c.send(seq, &sim.chunk()).unwrap();
                    }
                    assert_eq!(
                        c.wait_for_ack(CHUNKS, Duration::from_secs(10)).unwrap(),
                        CHUNKS
                    );
                    c
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let list = get_json(http, "/api/jvms");
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for (pid, stream) in pids.iter().zip(&streams) {
        let row = rows
            .iter()
            .find(|r| r["id"] == stream.as_str())
            .expect("jvm listed");
        assert_eq!(row["pid"], *pid);
        assert_eq!(
            row["command_line"],
            format!("com.acme.Main{pid} --port {pid}")
        );
        assert_eq!(row["address"], "127.0.0.1");
        assert_eq!(row["vm"], "OpenJDK 64-Bit Server VM 17.0.9 Test");
        assert_eq!(row["os"], "Linux amd64");
        assert_eq!(row["status"], "connected");
        assert_eq!(
            row["samples"],
            CHUNKS * SNAPSHOTS_PER_CHUNK * THREADS as u64
        );
        assert_eq!(row["last_seq"], CHUNKS);
        assert!(row["samples_per_second"].as_f64().unwrap() > 0.0);
    }

    // Live threads of one JVM: xdProf's thread table and the stack with line numbers.
    let threads = get_json(http, &format!("/api/jvms/{}/threads", streams[1]));
    let t = threads["threads"].as_array().unwrap();
    let names: Vec<&str> = t.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["main", "worker-2", "worker-3"]);
    assert_eq!(t[0]["state"], "runnable");
    assert_eq!(t[1]["state"], "waiting");
    assert_eq!(t[0]["frames"][0]["method"], "com.acme.App4102.work");
    assert_eq!(t[0]["frames"][0]["line"], 42);

    // The running hot-methods table.
    let hot = get_json(http, &format!("/api/jvms/{}/hot", streams[0]));
    assert_eq!(
        hot["samples"],
        CHUNKS * SNAPSHOTS_PER_CHUNK * THREADS as u64
    );
    assert_eq!(hot["methods"][0]["method"], "com.acme.App4101.main");
    assert_eq!(
        hot["methods"][0]["self_samples"],
        CHUNKS * SNAPSHOTS_PER_CHUNK * 2
    );

    // A flame graph over two JVMs merged, from the store, filtered by thread.
    let q = format!(
        "/api/flame?jvm={}&jvm={}&format=collapsed&thread=main",
        streams[0], streams[2]
    );
    let (status, body) = http_get(http, &q);
    assert_eq!(status, 200);
    let per_jvm = CHUNKS * SNAPSHOTS_PER_CHUNK;
    assert!(
        body.contains(&format!(
            "com.acme.App4101.main;com.acme.App4101.work {per_jvm}"
        )),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "com.acme.App4103.main;com.acme.App4103.work {per_jvm}"
        )),
        "{body}"
    );
    assert!(!body.contains("App4102"), "{body}");
    let (status, html) = http_get(http, &format!("/api/flame?jvm={}&format=html", streams[0]));
    assert_eq!(status, 200);
    assert!(
        html.contains("<canvas") || html.contains("<svg"),
        "flame page"
    );
    let graph = get_json(
        http,
        &format!("/api/callgraph?jvm={}&state=waiting", streams[0]),
    );
    assert_eq!(graph["total"], CHUNKS * SNAPSHOTS_PER_CHUNK * 2);

    // Agents leave: the list says so.
    for c in clients.drain(..) {
        assert_eq!(c.finish(Duration::from_secs(5)).unwrap(), CHUNKS);
    }
    assert!(wait_until(Duration::from_secs(5), || {
        let list = get_json(http, "/api/jvms");
        list.as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "gone")
    }));
    let stats = get_json(http, "/api/stats");
    assert_eq!(stats["chunks"], 3 * CHUNKS);
    server.shutdown();
}

#[test]
fn a_reconnecting_agent_resumes_without_duplicates() {
    let (server, _log) = start(&temp_dir("collector-resume"), |_| {});
    let addr = server.agents_addr().unwrap();
    let mut sim = SimJvm::new(4200, "com.acme.Resume");
    let chunks: Vec<Vec<u8>> = (0..6).map(|_| sim.chunk()).collect();
    let mut c = sim.connect(addr, 1);
    for seq in 1..=3 {
        c.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    c.wait_for_ack(3, Duration::from_secs(5)).unwrap();
    drop(c); // the connection breaks without a goodbye
    let mut c = sim.connect(addr, 2);
    assert_eq!(c.accept().acked, 3);
    // A careless client resends chunk 3; it is acknowledged but not stored twice.
    for seq in 3..=6 {
        c.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(c.finish(Duration::from_secs(5)).unwrap(), 6);
    let rec = server.api().store.read(&sim.stream, None, None).unwrap();
    assert_eq!(rec.snapshots.len() as u64, 6 * SNAPSHOTS_PER_CHUNK);
    let stats = server.stats().unwrap();
    assert_eq!((stats.chunks, stats.duplicate_chunks), (6, 1));
    server.shutdown();
}

#[test]
fn view_serves_the_same_api_over_one_recording_file() {
    let dir = temp_dir("collector-view");
    let mut sim = SimJvm::new(4300, "com.acme.FromFile");
    let mut bytes = sim.header_bytes();
    for _ in 0..3 {
        bytes.extend(sim.chunk());
    }
    let file = dir.join("shop.jsc");
    std::fs::write(&file, bytes).unwrap();
    let server = jscope_collector::view(&file, "127.0.0.1:0").unwrap();
    let http = server.http_addr().unwrap();
    let list = get_json(http, "/api/jvms");
    assert_eq!(list[0]["id"], "shop");
    assert_eq!(list[0]["pid"], 4300);
    assert_eq!(list[0]["status"], "gone");
    let threads = get_json(http, "/api/jvms/shop/threads");
    assert_eq!(threads["snapshots"], 3 * SNAPSHOTS_PER_CHUNK);
    assert_eq!(threads["threads"][0]["frames"][0]["line"], 42);
    let hot = get_json(http, "/api/jvms/shop/hot");
    assert_eq!(hot["samples"], 3 * SNAPSHOTS_PER_CHUNK * THREADS as u64);
    let flame = get_json(http, "/api/flame?jvm=shop");
    assert_eq!(flame["samples"], 3 * SNAPSHOTS_PER_CHUNK * THREADS as u64);
    assert_eq!(http_get(http, "/api/jvms/nope/threads").0, 404);
    server.shutdown();
}

#[test]
fn the_log_said_resuming_after_chunk_0_on_a_first_connect_and_nothing_on_disconnect() {
    let (server, log) = start(&temp_dir("collector-log"), |_| {});
    let addr = server.agents_addr().unwrap();
    let mut sim = SimJvm::new(4250, "com.acme.Logged --port 1");
    let mut c = sim.connect(addr, 1);
    assert_eq!(c.accept().acked, 0);
    for seq in 1..=2 {
        c.send(seq, &sim.chunk()).unwrap();
    }
    assert_eq!(c.finish(Duration::from_secs(5)).unwrap(), 2);
    let mut c = sim.connect(addr, 3);
    assert_eq!(c.accept().acked, 2);
    c.send(3, &sim.chunk()).unwrap();
    assert_eq!(c.finish(Duration::from_secs(5)).unwrap(), 3);
    assert!(wait_until(Duration::from_secs(5), || log.lines().len() >= 4));
    let lines = log.lines();
    let about: Vec<&String> = lines.iter().filter(|l| l.contains(&sim.stream)).collect();
    assert_eq!(about.len(), 4, "{lines:#?}");
    assert!(
        about[0].ends_with(&format!(
            "connected jvm {} (pid 4250, com.acme.Logged)",
            sim.stream
        )),
        "{}",
        about[0]
    );
    assert!(!about[0].contains("resuming"), "{}", about[0]);
    assert!(
        about[1].ends_with("disconnected after chunk 2"),
        "{}",
        about[1]
    );
    assert!(about[2].ends_with("resuming after chunk 2"), "{}", about[2]);
    assert!(
        about[3].ends_with("disconnected after chunk 3"),
        "{}",
        about[3]
    );
    server.shutdown();
}

#[test]
fn event_views_take_times_as_every_query_does() {
    let dir = temp_dir("collector-event-times");
    let mut sim = SimJvm::new(4350, "com.acme.Timed");
    let mut bytes = sim.header_bytes();
    for _ in 0..3 {
        bytes.extend(sim.chunk());
    }
    let file = dir.join("timed.jsc");
    std::fs::write(&file, bytes).unwrap();
    let server = jscope_collector::view(&file, "127.0.0.1:0").unwrap();
    let http = server.http_addr().unwrap();
    let start_ms = sim.header.start_wall_ns / 1_000_000;
    // A span ago and an RFC 3339 time before the recording both cover all of it,
    // as epoch ms do.
    for from in [
        format!("{}", start_ms - 1000),
        "1h".to_string(),
        "-1h".to_string(),
        "2000-01-01T00:00:00Z".to_string(),
    ] {
        for endpoint in ["timeline", "locks", "alloc"] {
            let (status, body) = http_get(http, &format!("/api/jvms/timed/{endpoint}?from={from}"));
            assert_eq!(status, 200, "{endpoint}?from={from}: {body}");
        }
        let timeline = get_json(http, &format!("/api/jvms/timed/timeline?from={from}"));
        assert_eq!(
            timeline["lanes"].as_array().unwrap().len(),
            THREADS as usize
        );
        assert_eq!(timeline["from_ns"], 0, "from={from}");
    }
    let (status, body) = http_get(http, "/api/jvms/timed/timeline?to=soon");
    assert_eq!(status, 400);
    assert!(body.contains("to: bad time `soon`"), "{body}");
    server.shutdown();
}

#[test]
fn bad_numbers_and_formats_get_a_400_naming_them_not_a_default() {
    let dir = temp_dir("collector-bad-params");
    let mut sim = SimJvm::new(4360, "com.acme.Strict");
    let mut bytes = sim.header_bytes();
    for _ in 0..3 {
        bytes.extend(sim.chunk());
    }
    let file = dir.join("strict.jsc");
    std::fs::write(&file, bytes).unwrap();
    let server = jscope_collector::view(&file, "127.0.0.1:0").unwrap();
    let http = server.http_addr().unwrap();
    for (query, names) in [
        ("/api/jvms/strict/hot?limit=ten", "limit"),
        ("/api/hot?jvm=all&limit=-1", "limit"),
        ("/api/explore?by=service&top=x", "top"),
        ("/api/jvms/strict/timeline?max_events=many", "max_events"),
        ("/api/diff?base=strict&new=strict&limit=x", "limit"),
        ("/api/jvms/strict/threads?at=noon", "at"),
        ("/api/callgraph?jvm=all&format=svg", "format"),
    ] {
        let (status, body) = http_get(http, query);
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains(names), "{query}: {body}");
    }
    // The good spellings still answer: `at` as epoch ms picks the nearest snapshot.
    let start_ms = sim.header.start_wall_ns / 1_000_000;
    let at = get_json(
        http,
        &format!("/api/jvms/strict/threads?at={}", start_ms + 250),
    );
    assert_eq!(at["snapshot_index"], 2, "{at}");
    assert_eq!(
        get_json(http, "/api/jvms/strict/hot?limit=1")["methods"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(http_get(http, "/api/callgraph?jvm=all&format=dot").0, 200);
    server.shutdown();
}

#[test]
fn pushed_native_and_kernel_frames_keep_the_names_they_were_pushed_with() {
    let (server, _log) = start(&temp_dir("collector-push-native"), |_| {});
    let http = server.http_addr().unwrap();
    // async-profiler's and jscope's collapsed stacks: C++ and libc frames with their
    // library, kernel frames marked `_[k]`.
    let stacks = "\
start_thread [libc.so.6];JavaThread::run() [libjvm.so];com.acme.App.main;do_syscall_64_[k] 7
start_thread [libc.so.6];VMThread::loop() [libjvm.so] 3
com.acme.App.main;Inflater::inflate 2
";
    let until = now_ns() / 1_000_000_000;
    let (status, body) = http_post(
        http,
        &format!("/ingest?name=native.cpu&from={}&until={until}", until - 10),
        stacks,
    );
    assert_eq!(status, 200, "{body}");
    let (status, collapsed) = http_get(http, "/api/flame?service=native&format=collapsed");
    assert_eq!(status, 200, "{collapsed}");
    let mut got: Vec<&str> = collapsed.lines().collect();
    let mut want: Vec<&str> = stacks.lines().collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    server.shutdown();
}

#[test]
fn a_token_is_taken_as_a_bearer_token_in_any_case_or_as_a_parameter() {
    use std::io::{Read, Write};
    let (server, _log) = start(&temp_dir("collector-token"), |c| {
        c.token = Some("s3cret".into())
    });
    let http = server.http_addr().unwrap();
    let status = |path: &str, auth: Option<&str>| {
        let mut s = std::net::TcpStream::connect(http).unwrap();
        let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out[9..12].parse::<u16>().unwrap()
    };
    assert_eq!(status("/api/jvms", None), 401);
    assert_eq!(status("/api/jvms", Some("Bearer wrong")), 401);
    assert_eq!(status("/api/jvms", Some("Basic s3cret")), 401);
    assert_eq!(status("/api/jvms?token=s3cret", None), 200);
    for auth in ["Bearer s3cret", "bearer s3cret", "BEARER  s3cret"] {
        assert_eq!(status("/api/jvms", Some(auth)), 200, "{auth}");
    }
    assert_eq!(status("/", None), 200, "the UI's page carries no data");
    server.shutdown();
}

#[test]
fn a_stopping_collector_logs_that_it_stopped_not_that_the_agent_left() {
    let (server, log) = start(&temp_dir("collector-stop-log"), |_| {});
    let mut sim = SimJvm::new(4400, "com.acme.Stays");
    let mut c = sim.connect(server.agents_addr().unwrap(), 1);
    c.send(1, &sim.chunk()).unwrap();
    c.wait_for_ack(1, Duration::from_secs(5)).unwrap();
    server.shutdown();
    // Connection threads are not joined: the line may come just after the shutdown.
    let said = format!("dropped jvm {}: the collector is stopping", sim.stream);
    assert!(
        wait_until(Duration::from_secs(5), || log
            .lines()
            .iter()
            .any(|l| l.ends_with(&said))),
        "{:#?}",
        log.lines()
    );
    let about: Vec<String> = log
        .lines()
        .into_iter()
        .filter(|l| l.contains(&sim.stream))
        .collect();
    assert_eq!(about.len(), 2, "connected, then dropped: {about:#?}");
    drop(c);
}
