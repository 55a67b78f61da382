//! `jscope requests`, `--request` and `--latency` over a real JVM's recording:
//! a pooled `com.sun.net.httpserver` (every 20th request spins 120 ms) and
//! `jscope.Span`s (the agent's request fixture); the same streamed to `jscope
//! serve` (its `/api/requests`, `latency` and `request` on its flame graph, the
//! CLI's `--collector`), and pushed again as OTLP with its links.

mod serving;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, wait_until, Child};
use serde_json::{json, Value};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

fn jscope(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_jscope"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Samples in collapsed output, all and under a frame containing `frame`.
fn share(collapsed: &str, frame: &str) -> (u64, u64) {
    let mut all = 0;
    let mut with = 0;
    for line in collapsed.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if stack.contains(frame) {
            with += n;
        }
    }
    (all, with)
}

#[test]
fn requests_list_slowest_first_and_narrow_profiles_to_one_or_the_slow_ones() {
    let java = javas().remove(0);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/request_fixtures");
    let dir = temp_dir("requests-cli");
    let file = dir.join("r.jsc");
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-agentpath:{}=remote=http,interval=1ms,quiet,file={}",
        agent_path().display(),
        file.display()
    ))
    .arg("-cp")
    .arg(compile_fixtures(&fixtures))
    .args(["Served", "20", &format!("00-{TRACE}-b7ad6b7169203331-01")])
    .stdout(Stdio::null());
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

#[test]
fn the_collector_keeps_streamed_and_pushed_requests_and_narrows_flames_by_them() {
    let java = javas().remove(0);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/request_fixtures");
    let dir = temp_dir("requests-collector");
    let bin = Path::new(env!("CARGO_BIN_EXE_jscope"));
    let served = serving::serve(bin, &dir.join("data"), &[]);
    let url = served.url();
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-agentpath:{}=remote=http,interval=1ms,quiet,collector={}",
        agent_path().display(),
        served.agents.unwrap()
    ))
    .arg("-cp")
    .arg(compile_fixtures(&fixtures))
    .args(["Served", "20", &format!("00-{TRACE}-b7ad6b7169203331-01")])
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
    let (bad, body) = served.get(&format!("/api/flame?jvm={id}&latency=fast"));
    assert_eq!(bad, 400, "{}", String::from_utf8_lossy(&body));

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
