//! `jscope requests`, `--request` and `--latency` over a real JVM's recording:
//! a pooled `com.sun.net.httpserver` (every 20th request spins 120 ms) and
//! `jscope.Span`s (the agent's request fixture).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child};

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
