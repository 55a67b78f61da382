//! `jscope requests`, `--request` and `--latency` over a real JVM's recording:
//! a pooled `com.sun.net.httpserver` (every 20th request spins 120 ms) and
//! `jscope.Span`s (the agent's request fixture); the same streamed to `jscope
//! serve` (its `/api/requests`, `latency` and `request` on its flame graph, the
//! CLI's `--collector`), and pushed again as OTLP with its links. Each request
//! allocates and blocks on a lock: `--mode alloc|lock` and `jscope events`
//! narrow to a request's own.

mod serving;
mod support;

use serving::cdp::Browser;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_format::{EventKind, JvmEvent, Recording};
use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, wait_until, Child};
use serde_json::{json, Value};
use support::{collapsed_share as share, jscope_ok as jscope};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

#[test]
fn requests_list_slowest_first_and_narrow_profiles_to_one_or_the_slow_ones() {
    let java = javas().remove(0);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/request_fixtures");
    let dir = temp_dir("requests-cli");
    let file = dir.join("r.jsc");
    let log = dir.join("out.log");
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-agentpath:{}=remote=http,interval=1ms,{EVENTS},quiet,file={}",
        agent_path().display(),
        file.display()
    ))
    .arg("-cp")
    .arg(compile_fixtures(&fixtures))
    .args(["Served", "20", &format!("00-{TRACE}-b7ad6b7169203331-01")])
    .stdout(Stdio::from(std::fs::File::create(&log).unwrap()));
    let status = Child::spawn(&mut cmd)
        .wait_timeout(Duration::from_secs(120))
        .unwrap();
    assert!(status.success());
    let f = file.to_str().unwrap();
    let listed: serde_json::Value = serde_json::from_str(&jscope(&[
        "requests", f, "--format", "json", "--limit", "1000",
    ]))
    .unwrap();
    let rows = listed["requests"].as_array().unwrap();
    let durations: Vec<u64> = rows
        .iter()
        .map(|r| r["duration_ns"].as_u64().unwrap())
        .collect();
    assert!(durations.windows(2).all(|w| w[0] >= w[1]), "slowest first");
    let chosen = rows
        .iter()
        .find(|r| r["trace_id"] == TRACE)
        .expect("the chosen trace");
    assert_eq!(chosen["entry"], "GET /work");
    // One request: only the handler's samples, on the server's threads.
    let one = jscope(&["collapsed", f, "--request", TRACE]);
    let (n, handler) = share(&one, "Served.lambda$main");
    assert!(n > 0 && n == handler, "{one}");
    // Slow requests: the heavy branch's share grows.
    let (all, heavy) = share(&jscope(&["collapsed", f]), "Served.heavy");
    let (slow, slow_heavy) = share(
        &jscope(&["collapsed", f, "--latency", "100ms"]),
        "Served.heavy",
    );
    assert!(slow > 0 && slow < all);
    let (before, after) = (heavy as f64 / all as f64, slow_heavy as f64 / slow as f64);
    assert!(
        after > 2.0 * before,
        "heavy share {before:.2} -> {after:.2}"
    );
    one_requests_events(f, &std::fs::read_to_string(&log).unwrap());
}

/// The agent's event options of these tests: every request allocates and
/// blocks on a lock.
const EVENTS: &str = "events=alloc+monitors+park,allocrate=256k,parkthreshold=1ms";

/// `--mode alloc|lock` and `jscope events` narrowed to the chosen request: only
/// what its thread allocated (or blocked on) while it served it, as the
/// fixture logged (`served TRACE THREAD T0 T1 KIND`, System.nanoTime: the
/// agent's clock).
fn one_requests_events(f: &str, log: &str) {
    let served: Vec<&str> = log
        .lines()
        .find(|l| l.starts_with(&format!("served {TRACE} ")))
        .expect("the chosen request's line")
        .split(' ')
        .collect();
    let (name, t0, t1): (&str, u64, u64) = (
        served[2],
        served[3].parse().unwrap(),
        served[4].parse().unwrap(),
    );
    let rec = Recording::read_file(Path::new(f)).unwrap();
    let thread = rec
        .threads
        .values()
        .find(|t| t.name == name)
        .expect("the serving thread")
        .id;
    let on_thread = |lo: u64, hi: u64| -> Vec<&JvmEvent> {
        rec.events
            .iter()
            .filter(|e| e.thread == thread && e.ticks >= lo && e.ticks <= hi)
            .filter(|e| matches!(e.kind, EventKind::Alloc { .. }))
            .collect()
    };
    let weights = |lo, hi| -> u64 {
        on_thread(lo, hi)
            .iter()
            .map(|e| e.field("weight").unwrap().as_u64())
            .sum()
    };
    let alloc = jscope(&["collapsed", f, "--mode", "alloc", "--request", TRACE]);
    let (bytes, handler) = share(&alloc, "Served.lambda$main");
    assert!(bytes > 0 && bytes == handler, "{alloc}");
    // Everything allocated inside the window, nothing outside it.
    let slack = 2_000_000;
    let (inside, around) = (weights(t0, t1), weights(t0 - slack, t1 + slack));
    assert!(
        inside > 0 && inside <= bytes && bytes <= around,
        "{inside} <= {bytes} <= {around}"
    );
    let (all, _) = share(&jscope(&["collapsed", f, "--mode", "alloc"]), "");
    assert!(bytes < all / 10, "{bytes} of {all}");
    // Contention of every request (all last 3 ms or more): inside the
    // handler, mostly its lock (the server's own locks are contended too).
    let lock = jscope(&["collapsed", f, "--mode", "lock", "--latency", "1ms"]);
    let (ns, handler) = share(&lock, "Served.lambda$main");
    let (_, contend) = share(&lock, "Served.contend");
    assert!(ns > 0 && ns == handler && contend * 10 >= ns * 9, "{lock}");
    // `jscope events`: the request's allocations and blocks, on its thread.
    let rows = jscope(&["events", f, "--request", TRACE, "--format", "csv"]);
    let rows: Vec<&str> = rows.lines().skip(1).collect();
    assert!(rows.len() >= on_thread(t0, t1).len() && !rows.is_empty());
    assert!(rows.iter().all(|r| r.contains(name)), "{rows:?}");
}

/// Sorted collapsed lines.
fn lines(collapsed: &str) -> Vec<String> {
    let mut out: Vec<String> = collapsed.lines().map(str::to_string).collect();
    out.sort();
    out
}

/// POSTs an OTLP body to the collector: the status.
fn post_otlp(served: &serving::Served, body: &[u8]) -> u16 {
    let mut s = TcpStream::connect(served.http).unwrap();
    write!(
        s,
        "POST /v1development/profiles HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap()
}

/// Runs the request fixture (`Served PER`) streaming to `served`'s agent port
/// (and writing `file`, if given) until it exits; its pid, and the id under
/// which the collector stored it once it shows the JVM gone.
fn stream_served(
    java: &jscope_testkit::Java,
    served: &serving::Served,
    fixtures: &Path,
    per: &str,
    file: Option<&Path>,
) -> (u32, String) {
    let file = file.map_or(String::new(), |f| format!(",file={}", f.display()));
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-agentpath:{}=remote=http,interval=1ms,{EVENTS},quiet,collector={}{file}",
        agent_path().display(),
        served.agents.unwrap(),
    ))
    .arg("-cp")
    .arg(compile_fixtures(fixtures))
    .args(["Served", per, &format!("00-{TRACE}-b7ad6b7169203331-01")])
    .stdout(Stdio::null());
    let mut jvm = Child::spawn(&mut cmd);
    let pid = jvm.id();
    assert!(jvm
        .wait_timeout(Duration::from_secs(120))
        .unwrap()
        .success());
    let mut id = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            let jvms = served.json("/api/jvms");
            let gone = jvms
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["pid"] == json!(pid) && j["status"] == "gone");
            if let Some(j) = gone {
                id = j["id"].as_str().unwrap().to_string();
            }
            gone.is_some()
        }),
        "the JVM streamed and disconnected"
    );
    (pid, id)
}

#[test]
fn the_collector_keeps_streamed_and_pushed_requests_and_narrows_flames_by_them() {
    let java = javas().remove(0);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/request_fixtures");
    let dir = temp_dir("requests-collector");
    let bin = Path::new(env!("CARGO_BIN_EXE_jscope"));
    let served = serving::serve(bin, &dir.join("data"), &[]);
    let url = served.url();
    let (pid, id) = stream_served(&java, &served, &fixtures, "20", None);
    // The stored recording keeps its requests: the API lists what the CLI
    // lists from it, the chosen trace id among them, slowest first.
    let (code, bytes) = served.get(&format!("/api/jvms/{id}/recording"));
    assert_eq!(code, 200);
    let file = dir.join("stored.jsc");
    std::fs::write(&file, bytes).unwrap();
    let f = file.to_str().unwrap();
    let cli: Value = serde_json::from_str(&jscope(&[
        "requests", f, "--format", "json", "--limit", "1000",
    ]))
    .unwrap();
    let api = served.json(&format!("/api/requests?jvm={id}&limit=1000"));
    let rows = api["requests"].as_array().unwrap();
    assert!(rows.len() >= 40, "{} requests", rows.len());
    assert_eq!(api["requests"], cli["requests"]);
    assert_eq!(api["jvm_ids"][pid.to_string()], json!([id]));
    assert!(rows
        .windows(2)
        .all(|w| w[0]["duration_ns"].as_u64() >= w[1]["duration_ns"].as_u64()));
    let chosen = rows.iter().find(|r| r["trace_id"] == TRACE).unwrap();
    assert_eq!(chosen["entry"], "GET /work");
    // So does the collector-backed CLI.
    let remote: Value = serde_json::from_str(&jscope(&[
        "requests",
        "--collector",
        &url,
        "--jvm",
        &id,
        "--format",
        "json",
        "--limit",
        "1000",
    ]))
    .unwrap();
    assert_eq!(remote["requests"], cli["requests"]);
    // `latency`: the slow requests only, and the flame graph of their samples.
    let slow = served.json(&format!("/api/requests?jvm={id}&limit=1000&latency=100ms"));
    let n_slow = rows
        .iter()
        .filter(|r| r["duration_ns"].as_u64().unwrap() >= 100_000_000)
        .count();
    assert!(n_slow > 0 && n_slow < rows.len());
    assert_eq!(slow["total"], json!(n_slow));
    let file_slow = jscope(&["collapsed", f, "--latency", "100ms"]);
    let (all, _) = share(&jscope(&["collapsed", f]), "");
    let (want, heavy) = share(&file_slow, "Served.heavy");
    assert!(want > 0 && want < all && heavy > 0);
    let flame = served.json(&format!("/api/flame?jvm={id}&latency=100ms"));
    assert_eq!(flame["samples"], json!(want));
    assert_eq!(
        lines(flame["collapsed"].as_str().unwrap()),
        lines(&file_slow)
    );
    assert_eq!(
        lines(&jscope(&[
            "collapsed",
            "--collector",
            &url,
            "--jvm",
            &id,
            "--latency",
            "100ms"
        ])),
        lines(&file_slow)
    );
    // `request`: one trace's samples.
    let one = served.json(&format!("/api/flame?jvm={id}&request={TRACE}"));
    let file_one = jscope(&["collapsed", f, "--request", TRACE]);
    assert_eq!(lines(one["collapsed"].as_str().unwrap()), lines(&file_one));
    // And its allocations, by the API and the collector-backed CLI.
    let file_alloc = jscope(&["collapsed", f, "--mode", "alloc", "--request", TRACE]);
    let alloc = served.json(&format!("/api/flame?jvm={id}&mode=alloc&request={TRACE}"));
    assert!(!file_alloc.is_empty());
    assert_eq!(
        lines(alloc["collapsed"].as_str().unwrap()),
        lines(&file_alloc)
    );
    assert_eq!(
        lines(&jscope(&[
            "collapsed",
            "--collector",
            &url,
            "--jvm",
            &id,
            "--mode",
            "alloc",
            "--request",
            TRACE
        ])),
        lines(&file_alloc)
    );
    let (bad, body) = served.get(&format!("/api/flame?jvm={id}&latency=fast"));
    assert_eq!(bad, 400, "{}", String::from_utf8_lossy(&body));

    // The Requests tab (before the push: one JVM's requests).
    if let Some(mut b) = Browser::launch("requests") {
        requests_tab(&mut b, &served, &id, rows, f);
    }

    // The recording pushed as OTLP: its links become the pushed JVM's requests.
    let otlp = dir.join("r.otlp");
    jscope(&[
        "export",
        f,
        "--format",
        "otlp",
        "-o",
        otlp.to_str().unwrap(),
    ]);
    assert_eq!(post_otlp(&served, &std::fs::read(&otlp).unwrap()), 200);
    let jvms = served.json("/api/jvms");
    let pushed = jvms
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["labels"]["process.runtime.name"].is_string())
        .unwrap_or_else(|| panic!("no pushed JVM in {jvms}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let got = served.json(&format!("/api/requests?jvm={pushed}&limit=1000"));
    let traced = |v: &Value| {
        let mut t: Vec<String> = v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["samples"].as_u64() > Some(0) && r["trace_id"] != "")
            .map(|r| r["trace_id"].as_str().unwrap().to_string())
            .collect();
        t.sort();
        t
    };
    assert!(traced(&got).contains(&TRACE.to_string()), "{got}");
    assert_eq!(traced(&got), traced(&cli));
    let pushed_one = served.json(&format!("/api/flame?jvm={pushed}&request={TRACE}"));
    assert_eq!(pushed_one["samples"], one["samples"]);
    assert!(served.interrupt());
}

jscope_testkit::on_each_clickhouse!(requests_streamed_into_clickhouse_list_as_the_agents_file);

/// A JVM serving requests streams to `jscope serve --store clickhouse://...` and
/// writes its own file: the collector (`/api/requests`, `jscope requests
/// --collector`) lists the same requests with the same samples as the file, the
/// events table holds each event's request, and an allocation flame graph of
/// one request is the file's.
fn requests_streamed_into_clickhouse_list_as_the_agents_file(server: jscope_testkit::Server) {
    let Some(ch) = jscope_testkit::ClickHouse::start_on(server, "requests-ch") else {
        return;
    };
    let java = javas().remove(0);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/request_fixtures");
    let dir = temp_dir("requests-ch");
    let store = format!("{}?flush_ms=200", ch.url("jscope"));
    let bin = Path::new(env!("CARGO_BIN_EXE_jscope"));
    let served = serving::serve(bin, &dir.join("unused"), &["--store", &store]);
    let file = dir.join("own.jsc");
    let (_, id) = stream_served(&java, &served, &fixtures, "8", Some(&file));
    let f = file.to_str().unwrap();
    let own: Value = serde_json::from_str(&jscope(&[
        "requests", f, "--format", "json", "--limit", "1000",
    ]))
    .unwrap();
    let rows = own["requests"].as_array().unwrap();
    assert!(rows.len() >= 16, "{own}");
    assert!(rows.iter().any(|r| r["trace_id"] == TRACE));
    assert!(rows.iter().any(|r| r["samples"].as_u64() > Some(10)));
    let url = served.url();
    let remote: Value = serde_json::from_str(&jscope(&[
        "requests",
        "--collector",
        &url,
        "--jvm",
        &id,
        "--format",
        "json",
        "--limit",
        "1000",
    ]))
    .unwrap();
    assert_eq!(remote["requests"], own["requests"]);
    let api = served.json(&format!("/api/requests?jvm={id}&limit=1000"));
    assert_eq!(api["requests"], own["requests"]);
    // The events table: each event's request, as the file has it.
    let rec = Recording::read_file(&file).unwrap();
    let named = rec.events.iter().filter(|e| e.request() != 0).count();
    assert!(named > 0);
    let counted = ch
        .query("SELECT count() FROM jscope.events WHERE request != 0")
        .unwrap();
    assert_eq!(counted.trim(), named.to_string());
    let file_alloc = jscope(&["collapsed", f, "--mode", "alloc", "--request", TRACE]);
    let alloc = served.json(&format!("/api/flame?jvm={id}&mode=alloc&request={TRACE}"));
    assert!(!file_alloc.is_empty());
    assert_eq!(
        lines(alloc["collapsed"].as_str().unwrap()),
        lines(&file_alloc)
    );
    assert!(served.interrupt());
}

/// The heatmap cell (column, row) of a request, by the bucket edges the page drew:
/// `[edge, next)`, the last time bucket closed.
fn cell_of(r: &Value, t_edges: &[f64], l_edges: &[u64]) -> (usize, usize) {
    let t = r["start_ns"].as_u64().unwrap() as f64 / 1e6;
    let d = r["duration_ns"].as_u64().unwrap();
    let cols = t_edges.len() - 1;
    let col = (0..cols).rev().find(|&c| t >= t_edges[c]).unwrap_or(0);
    let row = (0..l_edges.len() - 1)
        .rev()
        .find(|&i| d >= l_edges[i])
        .unwrap_or(0);
    (col, row)
}

/// Drags over the heatmap from one cell to another: the ids the table then
/// lists, and the flame graph shown (total, and each root frame's width).
fn drag(
    b: &mut Browser,
    from: (usize, usize),
    to: (usize, usize),
) -> (Vec<String>, u64, Vec<(String, u64)>) {
    b.eval("document.body.dataset.requestsFlame = ''");
    let mut at = |(c, r): (usize, usize)| -> (f64, f64) {
        let v = b.eval(&format!(
            "(() => {{ const x = document.querySelector('#rq-heat rect[data-col=\"{c}\"][data-row=\"{r}\"]').getBoundingClientRect(); \
             return [x.left + x.width / 2, x.top + x.height / 2]; }})()"
        ));
        (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
    };
    let (a, z) = (at(from), at(to));
    let mouse = |b: &mut Browser, kind: &str, (x, y): (f64, f64)| {
        b.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1}),
        );
    };
    mouse(b, "mousePressed", a);
    mouse(b, "mouseMoved", ((a.0 + z.0) / 2.0, (a.1 + z.1) / 2.0));
    mouse(b, "mouseMoved", z);
    mouse(b, "mouseReleased", z);
    b.wait_for(
        "document.body.dataset.requestsFlame === 'ready'",
        Duration::from_secs(30),
    );
    let ids: Vec<String> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('#rq-table tbody tr')].map(t => t.dataset.id)"),
    )
    .unwrap();
    let shown = b.eval(
        "(() => { const d = JSON.parse(document.querySelector('#rq-frame').contentDocument\
         .getElementById('flame-data').textContent); const out = []; \
         for (let i = 0; i < d.frames.length; i += 3) if (d.frames[i + 1] === 1) \
           out.push([d.names[d.frames[i]], d.frames[i + 2]]); return [d.total, out]; })()",
    );
    let roots: Vec<(String, u64)> = serde_json::from_value(shown[1].clone()).unwrap();
    (ids, shown[0].as_u64().unwrap(), roots)
}

/// A flame graph's total and root frames (width by name, sorted) from collapsed stacks.
fn roots_of(collapsed: &str) -> (u64, Vec<(String, u64)>) {
    let mut by: std::collections::BTreeMap<String, u64> = Default::default();
    let mut total = 0;
    for line in collapsed.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        total += n;
        *by.entry(stack.split(';').next().unwrap().to_string())
            .or_default() += n;
    }
    (total, by.into_iter().collect())
}

/// Names without the kind suffix the page's frames carry (`_[j]`).
fn plain(mut roots: Vec<(String, u64)>) -> Vec<(String, u64)> {
    for (name, _) in &mut roots {
        if name.len() > 4 && name[name.len() - 4..].starts_with("_[") {
            name.truncate(name.len() - 4);
        }
    }
    roots.sort();
    roots
}

fn requests_tab(b: &mut Browser, served: &serving::Served, id: &str, rows: &[Value], file: &str) {
    b.goto("about:blank");
    b.goto(&format!("{}/#tab=requests", served.url()));
    b.wait_for(
        "document.body.dataset.requestsReady === 'true'",
        Duration::from_secs(30),
    );
    assert_eq!(b.text("#rq-error"), "");
    assert!(
        b.html("#rq-heat").contains("rq-cell"),
        "{}",
        b.html("#tab-requests")
    );
    let edges = b.eval("[document.querySelector('#rq-heat').dataset.tEdges, document.querySelector('#rq-heat').dataset.lEdges]");
    let t_edges: Vec<f64> = serde_json::from_str(edges[0].as_str().unwrap()).unwrap();
    let l_edges: Vec<u64> = serde_json::from_str(edges[1].as_str().unwrap()).unwrap();
    let (cols, lrows) = (t_edges.len() - 1, l_edges.len() - 1);
    let cells: Vec<(usize, usize)> = rows
        .iter()
        .map(|r| cell_of(r, &t_edges, &l_edges))
        .collect();
    // Every request counted in its cell.
    let drawn: u64 = b
        .eval("[...document.querySelectorAll('#rq-heat rect.rq-cell')].reduce((n, r) => n + Number(r.dataset.count), 0)")
        .as_u64()
        .unwrap();
    assert_eq!(drawn, rows.len() as u64);
    let in_box = |c0: usize, c1: usize, r0: usize, r1: usize| -> Vec<String> {
        let mut ids: Vec<String> = rows
            .iter()
            .zip(&cells)
            .filter(|(_, &(c, r))| (c0..=c1).contains(&c) && (r0..=r1).contains(&r))
            .map(|(row, _)| row["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let api_flame = |query: &str| -> (u64, Vec<(String, u64)>) {
        let v = served.json(&format!("/api/flame?jvm={id}&{query}"));
        let (total, roots) = roots_of(v["collapsed"].as_str().unwrap());
        assert_eq!(v["samples"], json!(total));
        (total, roots)
    };
    // The first half of the time, every latency: dragged from the top left corner.
    let half = cols / 2 - 1;
    let (mut ids, total, roots) = drag(b, (0, lrows - 1), (half, 0));
    ids.sort();
    let want = in_box(0, half, 0, lrows - 1);
    assert!(
        !want.is_empty() && want.len() < rows.len(),
        "{} of {}",
        want.len(),
        rows.len()
    );
    assert_eq!(ids, want, "the requests in the dragged cells");
    let (api_total, api_roots) = api_flame(&format!("request={}", want.join(",")));
    assert!(api_total > 0);
    assert_eq!((total, plain(roots)), (api_total, plain(api_roots)));
    b.screenshot("cli-requests-heatmap.png");
    // Every time, from the latency bucket holding 100 ms up: `--latency` of its edge.
    let k = (0..lrows)
        .rev()
        .find(|&i| l_edges[i] <= 100_000_000)
        .unwrap();
    let (mut ids, total, roots) = drag(b, (cols - 1, k), (0, lrows - 1));
    ids.sort();
    let want = in_box(0, cols - 1, k, lrows - 1);
    assert!(!want.is_empty() && want.len() < rows.len());
    assert_eq!(ids, want);
    let slow: Vec<String> = rows
        .iter()
        .filter(|r| r["duration_ns"].as_u64().unwrap() >= l_edges[k])
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(slow.len(), want.len());
    let by_latency = api_flame(&format!("latency_ns={}", l_edges[k]));
    assert_eq!(
        (total, plain(roots.clone())),
        (by_latency.0, plain(by_latency.1))
    );
    let cli = jscope(&["collapsed", file, "--latency", &format!("{}ns", l_edges[k])]);
    assert_eq!(roots_of(&cli).0, total, "jscope collapsed --latency");
    // A request's parts: its tree, then the flame graph of its own samples.
    let first = b.eval("document.querySelector('#rq-table tbody tr').dataset.id");
    let row = rows.iter().find(|r| r["id"] == first).unwrap();
    b.click("#rq-table tbody tr");
    let parts = b.wait_for(
        "document.querySelectorAll('#rq-tree li[data-part]').length",
        Duration::from_secs(10),
    );
    assert_eq!(parts, row["parts"]);
}
