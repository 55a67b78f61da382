//! `jscope merge` and `jscope tree --distributed` on a client -> s1 -> s2 chain of
//! recordings written with the format crate, the servers' clocks off by minutes.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use support::*;

const WALL: u64 = 1_700_000_000_000_000_000;
const MINUTE_NS: i64 = 60_000_000_000;

/// One JVM's recording; times in µs of true time (1 tick = 1 µs), its wall clock
/// off by `skew_ns`.
struct Jvm {
    b: RecordingBuilder,
    events: BTreeMap<u32, Vec<(u64, TraceEvent)>>,
    remotes: Vec<RemoteCall>,
}

impl Jvm {
    fn new(pid: u32, host: &str, skew_ns: i64) -> Jvm {
        let mut j = Jvm {
            b: RecordingBuilder::with_header(Header {
                pid,
                host: host.into(),
                command_line: format!("java Beacon{pid}"),
                start_ticks: 1_000_000 * u64::from(pid),
                start_wall_ns: (WALL as i64 + skew_ns) as u64,
                ticks_per_second: 1_000_000,
                modes: "trace".into(),
                ..Default::default()
            }),
            events: BTreeMap::new(),
            remotes: vec![],
        };
        j.b.thread_def(ThreadDef {
            id: ThreadId(1),
            java_id: 1,
            name: "main".into(),
            group: "main".into(),
            start_order: 1,
            ..Default::default()
        });
        j.b.thread_def(ThreadDef {
            id: ThreadId(2),
            java_id: 2,
            name: "RMI TCP Connection(1)".into(),
            group: "system".into(),
            start_order: 2,
            ..Default::default()
        });
        j
    }

    fn string(&mut self, s: &str) -> u32 {
        self.b.string(s).0
    }

    /// `label` is `pkg.Class.method`.
    fn method(&mut self, label: &str) -> u32 {
        self.b.method(label).0
    }

    fn ticks(&self) -> u64 {
        self.b.header().start_ticks
    }

    fn call(&mut self, thread: u32, label: &str, from_us: u64, to_us: u64) {
        let method = self.method(label);
        let base = self.ticks();
        let ev = |kind, at| TraceEvent {
            kind,
            method: MethodId(method),
            ticks: base + at,
            untraced: 0,
            cpu_ns: 0,
        };
        let list = self.events.entry(thread).or_default();
        list.push((from_us * 2 + 1, ev(TraceKind::Enter, from_us)));
        list.push((to_us * 2, ev(TraceKind::Exit, to_us)));
    }

    fn remote(
        &mut self,
        server: bool,
        thread: u32,
        span: (u64, u64),
        local: (&str, u32),
        remote: (&str, u32),
    ) {
        let (lh, rh) = (self.string(local.0), self.string(remote.0));
        let (object, method) = (self.string("[1:2:3, 4]"), self.string("remoteFoo(II)V"));
        self.remotes.push(RemoteCall {
            side: if server {
                RemoteSide::Server
            } else {
                RemoteSide::Client
            },
            protocol: RemoteProtocol::Rmi,
            thread: ThreadId(thread),
            ticks: self.ticks() + span.0,
            duration_ns: (span.1 - span.0) * 1000,
            local_host: StringId(lh),
            local_port: local.1,
            remote_host: StringId(rh),
            remote_port: remote.1,
            conn_seq: 1,
            object: StringId(object),
            method_hash: 77,
            method: StringId(method),
            request_id: StringId::NONE,
            stack: StackId::NONE,
            failed: false,
        });
    }

    fn write(self, path: &Path) {
        std::fs::write(path, self.finished().bytes(None)).unwrap();
    }

    /// The header and the one data chunk.
    fn parts(self) -> (Header, Vec<u8>) {
        let b = self.finished();
        let header = b.header().clone();
        let (_, mut chunks) = b.chunks(None);
        (header, chunks.remove(0))
    }

    /// The recording with its traces and remote calls written.
    fn finished(mut self) -> RecordingBuilder {
        for (thread, mut evs) in std::mem::take(&mut self.events) {
            evs.sort_by_key(|e| e.0);
            self.b.trace(&TraceBatch {
                thread: ThreadId(thread),
                has_cpu: false,
                events: evs.into_iter().map(|e| e.1).collect(),
            });
        }
        for r in std::mem::take(&mut self.remotes) {
            self.b.remote(&r);
        }
        self.b
    }
}

/// client -> s1 -> s2; s1 two minutes ahead, s2 four minutes behind.
fn chain(dir: &Path) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = ["client", "s1", "s2"]
        .iter()
        .map(|n| dir.join(format!("{n}.jsc")))
        .collect();
    for (j, p) in chain_jvms().into_iter().zip(&paths) {
        j.write(p);
    }
    paths
}

fn chain_jvms() -> [Jvm; 3] {
    let mut c = Jvm::new(10, "10.1.0.1", 0);
    c.call(1, "beacon.Client.main", 0, 10_000);
    c.call(1, "beacon.Stub.remoteFoo", 1_000, 9_000);
    c.remote(
        false,
        1,
        (1_100, 8_900),
        ("10.1.0.1", 41_000),
        ("10.1.0.2", 1099),
    );
    let mut s1 = Jvm::new(11, "10.1.0.2", 2 * MINUTE_NS);
    s1.call(1, "beacon.Server.main", 0, 50);
    s1.call(2, "beacon.Server.remoteFoo", 1_600, 8_400);
    s1.remote(
        true,
        2,
        (1_500, 8_500),
        ("10.1.0.2", 1099),
        ("10.1.0.1", 41_000),
    );
    s1.call(2, "beacon.Stub.remoteFoo", 2_000, 8_000);
    s1.remote(
        false,
        2,
        (2_100, 7_900),
        ("10.1.0.2", 42_000),
        ("10.1.0.3", 1099),
    );
    let mut s2 = Jvm::new(12, "10.1.0.3", -4 * MINUTE_NS);
    s2.call(2, "beacon.Termination.remoteFoo", 2_600, 7_400);
    s2.remote(
        true,
        2,
        (2_500, 7_500),
        ("10.1.0.3", 1099),
        ("10.1.0.2", 42_000),
    );
    [c, s1, s2]
}

fn run_ok(args: &[&str]) -> String {
    let out = jscope(args);
    assert!(out.status.success(), "jscope {args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn merge_writes_a_session_and_tree_distributed_prints_one_tree_across_the_jvms() {
    let dir = temp_dir("distributed-merge");
    let paths = chain(&dir);
    let files: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    let session = dir.join("beacon.jss");
    let mut args = vec!["merge"];
    // Servers first: the reference is still the client.
    args.extend([files[2], files[1], files[0]]);
    args.extend(["-o", session.to_str().unwrap()]);
    let summary = run_ok(&args);
    assert!(
        summary.contains("2 remote calls matched, 0 client calls unmatched"),
        "{summary}"
    );
    assert!(summary.contains("jvm 2: "), "{summary}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(json["jscope_session"], 1);
    assert_eq!(json["reference"], 2);
    assert_eq!(json["members"][0]["path"], "s2.jsc");
    assert_eq!(json["matches"].as_array().unwrap().len(), 2);
    // s2 is 4 minutes behind the client: +240 s, within the stated uncertainty.
    let off = json["members"][0]["offset_ns"].as_i64().unwrap();
    let unc = json["members"][0]["uncertainty_ns"].as_i64().unwrap();
    assert!((off - 4 * MINUTE_NS).abs() <= unc, "{off} ± {unc}");
    assert_eq!(json["matches"][0]["network_ns"], 800_000);

    let from_session = run_ok(&["tree", "--distributed", session.to_str().unwrap()]);
    let mut direct = vec!["tree", "--distributed"];
    direct.extend([files[2], files[1], files[0]]);
    assert_eq!(run_ok(&direct), from_session);

    let lines: Vec<&str> = from_session.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{from_session}"))
    };
    let main = at("  beacon.Client.main [jvm 2 main] call=0.000000000s");
    let hop1 = at("      => rmi to jvm 1 10.1.0.2:1099 object=[1:2:3, 4] method=remoteFoo(II)V conn=10.1.0.1:41000#1 client=7.800ms server=7.000ms network=800.000us");
    let s1 =
        at("        beacon.Server.remoteFoo [jvm 1 RMI TCP Connection(1)] call=~0.0016s±400.000us");
    let hop2 = at("            => rmi to jvm 0 10.1.0.3:1099");
    let s2 = at("              beacon.Termination.remoteFoo [jvm 0 RMI TCP Connection(1)] call=~0.0026s±800.000us");
    assert!(
        main < hop1 && hop1 < s1 && s1 < hop2 && hop2 < s2,
        "{from_session}"
    );
    // s1's own tree keeps its main only; the served call is under the client.
    let s1_root = at("[virtual root] jvm 1 10.1.0.2 pid 11");
    assert!(lines[s1_root + 1].contains("beacon.Server.main [jvm 1 main]"));
    assert!(
        !lines[s1_root + 1..]
            .iter()
            .any(|l| l.contains("Server.remoteFoo")),
        "{from_session}"
    );

    let json = jscope_json(&[
        "tree",
        "--distributed",
        session.to_str().unwrap(),
        "--format",
        "json",
        "--jvm",
        "2",
    ]);
    let nodes = json["nodes"].as_array().unwrap();
    let jvms: Vec<u64> = nodes.iter().map(|n| n["jvm"].as_u64().unwrap()).collect();
    assert_eq!(jvms, [2, 2, 2, 1, 1, 1, 0], "{json}");
    assert_eq!(nodes[5]["remote"]["network_ns"], 800_000);
    assert_eq!(nodes[6]["parent"], 5);
    assert_eq!(nodes[6]["uncertainty_ns"], 800_000);

    let trace = dir.join("beacon.trace.json");
    run_ok(&[
        "tree",
        "--distributed",
        session.to_str().unwrap(),
        "--jvm",
        "2",
        "--chrome",
        trace.to_str().unwrap(),
    ]);
    let chrome: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = chrome["traceEvents"].as_array().unwrap();
    let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len(), 7);
    let pids: Vec<u64> = complete
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, [3, 3, 3, 2, 2, 2, 1]);
    // The first hop's server call starts 1.6 ms after the client's main, ±400 µs.
    assert_eq!(complete[3]["ts"], 1600.0);
    assert_eq!(complete[3]["args"]["uncertainty_us"], 400.0);
    assert_eq!(complete[2]["args"]["network_us"], 800.0);
    assert_eq!(events.iter().filter(|e| e["ph"] == "s").count(), 2);
    assert_eq!(events.iter().filter(|e| e["ph"] == "f").count(), 2);

    let only = run_ok(&[
        "tree",
        "--distributed",
        session.to_str().unwrap(),
        "--jvm",
        "1",
        "--depth",
        "1",
    ]);
    assert_eq!(
        only.lines()
            .filter(|l| l.starts_with("[virtual root]"))
            .count(),
        1,
        "{only}"
    );
}

#[test]
fn a_session_whose_match_table_does_not_fit_its_recordings_is_refused() {
    let dir = temp_dir("distributed-bad-session");
    let paths = chain(&dir);
    let session = dir.join("s.jss");
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", session.to_str().unwrap()]);
    run_ok(&args);
    let good = std::fs::read_to_string(&session).unwrap();
    let text = good.replace(
        "\"client\": [\n        0,\n        0\n      ]",
        "\"client\": [\n        0,\n        9\n      ]",
    );
    assert_ne!(good, text);
    std::fs::write(&session, text).unwrap();
    let out = jscope(&["tree", "--distributed", session.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("the match table does not fit its recordings"),
        "{}",
        stderr(&out)
    );
    let plain = jscope(&["tree", paths[0].to_str().unwrap(), "extra.jsc"]);
    assert!(!plain.status.success(), "more files need --distributed");
    // A session where one trace recording is read says what it is and what reads
    // it (the sample and event readers read its JVMs merged: merged_jvms.rs).
    for cmd in ["tree", "stats"] {
        let out = jscope(&[cmd, session.to_str().unwrap()]);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(
            err.contains("is a session of several JVMs")
                && err.contains("jscope tree --distributed")
                && err.lines().count() == 1,
            "{cmd}: {err}"
        );
    }
}

/// The chain's JVMs as a collector would have stored their streams.
fn chain_data_dir(dir: &Path) {
    use jscope_store::identity::{apply_dictionary, new_dictionary, timed_span};
    use jscope_store::{FileStore, JvmIdentity, Store};
    let store = FileStore::open(dir, 64 << 20, std::time::Duration::from_secs(3600)).unwrap();
    for jvm in chain_jvms() {
        let (header, chunk) = jvm.parts();
        let id = JvmIdentity::from_header(&format!("h-{}", header.pid), &header, "127.0.0.1", &[]);
        let mut dict = new_dictionary(&header);
        store
            .open(&id, &encode_file_start(&header), 1, &dict)
            .unwrap();
        let Ok(Split::Chunk(raw)) = split_chunk(&chunk, 0) else {
            panic!("one whole chunk")
        };
        let records = decode_payload(&raw.payload).unwrap();
        apply_dictionary(&mut dict, &records);
        let span = timed_span(&id, &records);
        store.append(&id.id, 1, &chunk, span, &dict).unwrap();
        store.sync(&id.id).unwrap();
        store.close(&id.id).unwrap();
    }
}

#[test]
fn merge_reads_the_jvms_of_a_collector_data_directory() {
    let dir = temp_dir("distributed-data");
    let data = dir.join("data");
    chain_data_dir(&data);
    let session = dir.join("all.jss");
    let summary = run_ok(&[
        "merge",
        "--data",
        data.to_str().unwrap(),
        "-o",
        session.to_str().unwrap(),
    ]);
    assert!(
        summary
            .contains("2 remote calls matched, 0 client calls unmatched, 0 server calls unmatched"),
        "{summary}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    let members = json["members"].as_array().unwrap();
    assert_eq!(members.len(), 3);
    assert!(
        members
            .iter()
            .all(|m| m["data"] == "data" && m.get("path").is_none()),
        "{json}"
    );
    let tree = run_ok(&["tree", "--distributed", session.to_str().unwrap()]);
    assert!(
        tree.contains("              beacon.Termination.remoteFoo [jvm "),
        "{tree}"
    );

    // Chosen by pid and by id: the client and s1 only; s1's call to s2 stays unmatched.
    let two = dir.join("two.jss");
    let summary = run_ok(&[
        "merge",
        "--data",
        data.to_str().unwrap(),
        "--jvm",
        "10",
        "--jvm",
        "h-11",
        "-o",
        two.to_str().unwrap(),
    ]);
    assert!(
        summary
            .contains("1 remote calls matched, 1 client calls unmatched, 0 server calls unmatched"),
        "{summary}"
    );
    let out = jscope(&[
        "merge",
        "--data",
        data.to_str().unwrap(),
        "--jvm",
        "99",
        "-o",
        two.to_str().unwrap(),
    ]);
    assert!(
        !out.status.success() && stderr(&out).contains("no JVM with id or pid 99"),
        "{}",
        stderr(&out)
    );
}

/// A JFR file given to merge said `not a jscope recording: no JSCOPE magic`, and a
/// missing one named its path twice (`cannot read F: F: No such file`).
#[test]
fn merge_names_a_jfr_file_and_a_missing_file_once() {
    let dir = temp_dir("distributed-merge-inputs");
    let paths = chain(&dir);
    let jfr = dir.join("app.jfr");
    std::fs::write(&jfr, b"FLR\0\0\x02\0\x01 rest of a JFR file").unwrap();
    let session = dir.join("s.jss");
    let out = jscope(&[
        "merge",
        paths[0].to_str().unwrap(),
        jfr.to_str().unwrap(),
        "-o",
        session.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is a JFR file") && err.contains("jscope convert"),
        "{err}"
    );
    let missing = dir.join("gone.jsc");
    let m = missing.to_str().unwrap();
    let out = jscope(&[
        "merge",
        paths[0].to_str().unwrap(),
        m,
        "-o",
        session.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.matches(m).count(), 1, "{err}");
    assert!(!session.exists());
}
