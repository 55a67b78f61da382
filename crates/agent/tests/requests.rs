//! Request context on real JVMs: a pooled `com.sun.net.httpserver` serving
//! requests (`remote=http`) and `jscope.Span`s nested on a thread pool and on
//! virtual threads that unmount inside them. Every sample that names a request
//! was taken on the thread serving it, inside its window as the fixture itself
//! logged it (System.nanoTime is the agent's clock); a chosen `traceparent`
//! keeps its trace id; nothing sampled after a span ended carries it. The same
//! holds for the allocations (Java and native), monitor blocks and parks the
//! threads record: each request allocates (a zlib deflater's native state too)
//! and blocks on a lock, and pooled threads allocate and park after their
//! requests ended.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_format::{EventKind, Recording, Request, RequestKind};
use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child, Java};

const CHOSEN: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/request_fixtures"))
}

/// Runs the fixture under the agent: its recording, its log lines and the
/// JVM's safepoint log.
fn run(java: &Java) -> (Recording, Vec<Vec<String>>, String) {
    let dir = temp_dir("requests");
    let file = dir.join("r.jsc");
    let log = dir.join("out.log");
    let safepoints = dir.join("safepoints.log");
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!("-Xlog:safepoint:file={}", safepoints.display()))
        .arg(format!(
            "-agentpath:{}=mode=cpu,remote=http,interval=1ms,events=alloc+monitors+park,allocrate=256k,\
             parkthreshold=1ms,nativemem=64k,quiet,file={}",
            agent_path().display(),
            file.display()
        ))
        .arg("-cp")
        .arg(classes())
        .args(["Served", "12", CHOSEN])
        .stdout(Stdio::from(std::fs::File::create(&log).unwrap()));
    let status = Child::spawn(&mut cmd)
        .wait_timeout(Duration::from_secs(120))
        .expect("the JVM exits");
    assert!(status.success(), "JDK {}: {status}", java.major);
    let lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').map(String::from).collect())
        .collect();
    let safepoints = std::fs::read_to_string(&safepoints).unwrap();
    (Recording::read_file(&file).unwrap(), lines, safepoints)
}

/// A window the fixture logged, in ns: (thread name or "", t0, t1).
fn window(l: &[String], at: usize) -> (u64, u64) {
    (l[at].parse().unwrap(), l[at + 1].parse().unwrap())
}

#[test]
fn samples_and_events_carry_the_request_their_thread_served_and_only_while_it_did() {
    for java in javas() {
        let (rec, lines, safepoints) = run(&java);
        // The breakpoints read their methods' arguments without stopping the
        // JVM: no JVMTI local-variable read, each a safepoint (setting the
        // breakpoints is one, which shows the log works).
        assert!(
            safepoints.contains("\"ChangeBreakpoints\""),
            "JDK {}: no breakpoint safepoint logged",
            java.major
        );
        let reads = safepoints.matches("\"GetOrSetLocal\"").count();
        assert_eq!(
            reads, 0,
            "JDK {}: {reads} local-variable safepoints",
            java.major
        );
        let by_id: HashMap<u64, &Request> = rec.requests.iter().map(|r| (r.id, r)).collect();
        let name = |r: &Request| rec.strings[r.name.index()].clone();
        // Every request served, one record each, with the trace id it came with.
        let served: Vec<&Vec<String>> = lines.iter().filter(|l| l[0] == "served").collect();
        assert_eq!(served.len(), 28, "JDK {}", java.major);
        let http: Vec<&Request> = rec
            .requests
            .iter()
            .filter(|r| r.kind == RequestKind::Http)
            .collect();
        assert_eq!(http.len(), 28, "JDK {}", java.major);
        assert!(http.iter().all(|r| name(r) == "GET /work"));
        let chosen: Vec<&&Request> = http
            .iter()
            .filter(|r| r.trace_id_hex() == "0af7651916cd43dd8448eb211c80319c")
            .collect();
        assert_eq!(chosen.len(), 1, "the chosen traceparent's request");
        assert_eq!(chosen[0].parent_span_id, 0xb7ad_6b71_6920_3331);
        // The fixture's own windows: by trace id (requests) and by id (spans).
        let mut windows: HashMap<u64, (u64, u64)> = HashMap::new();
        for l in &served {
            let r = http.iter().find(|r| r.trace_id_hex() == l[1]).unwrap();
            windows.insert(r.id, window(l, 3));
            if l[5] == "heavy" {
                assert!(r.duration_ns >= 100_000_000, "{l:?}: {r:?}");
            }
        }
        let spans: Vec<&Vec<String>> = lines.iter().filter(|l| l[0] == "span").collect();
        let virtual_ = java.major >= 21;
        assert_eq!(spans.len(), if virtual_ { 24 } else { 12 });
        for l in &spans {
            let id: u64 = l[2].parse().unwrap();
            let r = by_id[&id];
            assert_eq!((r.kind, name(r)), (RequestKind::Span, l[1].clone()));
            windows.insert(id, window(l, 3));
            if l[1].starts_with("inner") {
                let outer = by_id[&r.parent];
                assert!(name(outer).starts_with("outer"));
                assert_eq!(
                    (outer.trace_id, outer.span_id),
                    (r.trace_id, r.parent_span_id)
                );
                assert_eq!(rec.strings[r.tags.index()], "depth=2");
            }
        }
        // Every sample naming a request: its thread, inside the logged window.
        let slack = 2_000_000;
        let mut named = HashMap::<u64, usize>::new();
        for s in rec.samples.iter().filter(|s| s.request != 0) {
            let r = by_id[&s.request];
            let (t0, t1) = windows[&s.request];
            assert_eq!(s.thread, r.thread, "JDK {}: {s:?} {r:?}", java.major);
            assert!(
                s.ticks + slack >= t0 && s.ticks <= t1 + slack,
                "JDK {}: sample at {} outside {:?} of {}",
                java.major,
                s.ticks,
                (t0, t1),
                name(r)
            );
            *named.entry(s.request).or_default() += 1;
        }
        // Heavy requests and spans were sampled under their ids, the virtual
        // threads' inner spans across their sleep too.
        let heavy_named = served
            .iter()
            .filter(|l| l[5] == "heavy")
            .filter(|l| {
                let r = http.iter().find(|r| r.trace_id_hex() == l[1]).unwrap();
                named.get(&r.id).is_some_and(|n| *n >= 20)
            })
            .count();
        assert!(heavy_named >= 1, "JDK {}: {named:?}", java.major);
        let spans_named = spans
            .iter()
            .filter(|l| named.contains_key(&l[2].parse::<u64>().unwrap()))
            .count();
        assert!(
            spans_named * 4 >= spans.len() * 3,
            "JDK {}: {spans_named} of {} spans sampled",
            java.major,
            spans.len()
        );
        // After a span ended, its thread's samples name no request.
        for l in spans.iter().filter(|l| l[1].starts_with("outer")) {
            let r = by_id[&l[2].parse::<u64>().unwrap()];
            let (_, t3) = windows[&r.id];
            let after: Vec<_> = rec
                .samples
                .iter()
                .filter(|s| s.thread == r.thread && s.ticks > t3 + slack)
                .filter(|s| s.ticks < t3 + 8_000_000)
                .collect();
            assert!(after.iter().all(|s| s.request == 0), "{after:?}");
        }
        events_carry_their_request(&rec, &windows, &http, &spans, java.major);
    }
}

/// Allocations (Java and native), monitor blocks and parks: one naming a
/// request is its thread's, inside the request's window; one of a thread
/// inside the window of a request it served names it; a span's thread
/// allocates after it ended and names none.
fn events_carry_their_request(
    rec: &Recording,
    windows: &HashMap<u64, (u64, u64)>,
    http: &[&Request],
    spans: &[&Vec<String>],
    major: u32,
) {
    let slack = 2_000_000;
    let by_id: HashMap<u64, &Request> = rec.requests.iter().map(|r| (r.id, r)).collect();
    let carrying = |e: &&jscope_format::JvmEvent| {
        matches!(
            e.kind,
            EventKind::Alloc { .. }
                | EventKind::MonitorBlocked { .. }
                | EventKind::Park { .. }
                | EventKind::NativeAlloc { .. }
        )
    };
    let events: Vec<_> = rec.events.iter().filter(carrying).collect();
    let mut named = HashMap::<(u64, &str), usize>::new();
    for e in &events {
        if e.request() == 0 {
            continue;
        }
        let r = by_id[&e.request()];
        let (t0, t1) = windows[&r.id];
        assert_eq!(e.thread, r.thread, "JDK {major}: {e:?} {r:?}");
        assert!(
            e.ticks + slack >= t0 && e.ticks <= t1 + slack,
            "JDK {major}: {e:?} outside {:?} of request {}",
            (t0, t1),
            r.id
        );
        *named.entry((r.id, e.kind.name())).or_default() += 1;
    }
    // Inside a served request's window its thread's events all name it.
    for r in http {
        let (t0, t1) = windows[&r.id];
        for e in events.iter().filter(|e| e.thread == r.thread) {
            if e.ticks >= t0 && e.ticks <= t1 {
                assert_eq!(e.request(), r.id, "JDK {major}: {e:?} inside {r:?}");
            }
        }
    }
    let with = |kind: &str| {
        http.iter()
            .filter(|r| named.contains_key(&(r.id, kind)))
            .count()
    };
    assert!(
        with("alloc") * 4 >= http.len() * 3,
        "JDK {major}: {} of {} requests' allocations named: {named:?}",
        with("alloc"),
        http.len()
    );
    assert!(
        with("native_alloc") * 4 >= http.len() * 3,
        "JDK {major}: {} of {} requests' native allocations named: {named:?}",
        with("native_alloc"),
        http.len()
    );
    assert!(
        with("monitor") * 2 >= http.len(),
        "JDK {major}: {} of {} requests blocked on the lock: {named:?}",
        with("monitor"),
        http.len()
    );
    // Pooled threads after their requests: the server's threads park for the
    // next one, the spans' threads allocate; none of it names a request.
    let servers: Vec<_> = http.iter().map(|r| r.thread).collect();
    // A park is between requests when its middle is in no request's window:
    // it begins as the handler returns, within the slack of the window's end.
    let idle: Vec<_> = events
        .iter()
        .filter(|e| servers.contains(&e.thread))
        .filter_map(|e| match e.kind {
            EventKind::Park { duration_ns, .. } => Some((e, e.ticks + duration_ns / 2)),
            _ => None,
        })
        .filter(|&(e, middle)| {
            !http.iter().any(|r| {
                r.thread == e.thread
                    && windows[&r.id].0 <= middle + slack
                    && middle <= windows[&r.id].1 + slack
            })
        })
        .collect();
    assert!(
        !idle.is_empty(),
        "JDK {major}: the server's threads parked between requests"
    );
    for (e, _) in idle {
        assert_eq!(
            e.request(),
            0,
            "JDK {major}: a park between requests: {e:?}"
        );
    }
    let mut after_spans = 0;
    for l in spans.iter().filter(|l| l[1].starts_with("outer")) {
        let r = by_id[&l[2].parse::<u64>().unwrap()];
        let (_, t3) = windows[&r.id];
        // Its task allocates 5 ms after the span ended; the pool's next task
        // begins 10 ms after.
        let after = |t: u64| t > t3 + slack && t < t3 + 9_000_000;
        for e in events
            .iter()
            .filter(|e| e.thread == r.thread && after(e.ticks))
        {
            assert_eq!(e.request(), 0, "JDK {major}: after {r:?}: {e:?}");
            after_spans += usize::from(matches!(e.kind, EventKind::Alloc { .. }));
        }
    }
    assert!(
        after_spans > 0,
        "JDK {major}: the spans' threads allocated after them"
    );
}
