//! Several JVMs read as one keep every JVM's records: two real JVMs record GC
//! pauses, contended monitors and traced calls (to files and to a collector at
//! once); `jscope merge`'s session read by `gc`, `events` and `locks`, and `--jvm
//! all` over the collector, count the sum of both JVMs' events, and both JVMs'
//! traced calls are in the merged trace export.

mod serving;
mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, wait_until, Child, Java};
use support::{jscope, jscope_bin, jscope_json, stderr, stdout};

/// `EventsApp all` (contended counter, queue, allocations, user events, 3 GCs) with
/// its `gc` and `counter` methods traced, recorded to a file and streamed to
/// `collector`.
fn record(java: &Java, name: &str, collector: SocketAddr) -> PathBuf {
    let dir =
        compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/events_fixtures"));
    // Without the compile-time stub of `jscope.Events`: the agent's must load.
    let _ = std::fs::remove_dir_all(dir.join("jscope"));
    let file = temp_dir(&format!("merged-{name}-{}", java.major)).join("app.jsc");
    let options = format!(
        "trace=EventsApp#gc;EventsApp#counter,events=monitors+gc+user,quiet,file={},collector={collector}",
        file.display()
    );
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!("-agentpath:{}={options}", agent_path().display()))
        .arg("-cp")
        .arg(&dir)
        .args(["EventsApp", "all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(180));
    assert!(
        out.status.success(),
        "JDK {}: {}",
        java.major,
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// GC pauses, contended monitor entries and `EventsApp.gc` calls (traced, in the
/// Chrome export) of what `args` reads.
fn counts(args: &[&str]) -> [u64; 3] {
    let gc = jscope_json(&[&["gc"], args, &["--format", "json"]].concat())["count"]
        .as_u64()
        .unwrap();
    let locks = jscope_json(&[&["locks"], args, &["--format", "json"]].concat());
    let monitors = locks["monitors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["count"].as_u64().unwrap())
        .sum();
    let out = jscope(
        &[
            &["export"],
            args,
            &["--format", "chrome", "--mode", "trace"],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let chrome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = chrome.get("traceEvents").unwrap_or(&chrome);
    let traced = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "EventsApp.gc" && e["ph"] != "M")
        .count() as u64;
    [gc, monitors, traced]
}

fn sum(a: [u64; 3], b: [u64; 3]) -> [u64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

#[test]
fn merged_jvms_keep_both_jvms_gc_pauses_lock_events_and_traced_calls() {
    for java in javas() {
        let data = temp_dir(&format!("merged-data-{}", java.major));
        let served = serving::serve(&jscope_bin(), &data, &[]);
        let agents = served.agents.expect("serve prints the agents address");
        let files = [record(&java, "a", agents), record(&java, "b", agents)];
        let (a, b) = (counts(&[s(&files[0])]), counts(&[s(&files[1])]));
        assert!(
            a.iter().chain(&b).all(|&n| n > 0),
            "JDK {}: {a:?} {b:?}",
            java.major
        );
        assert_eq!((a[2], b[2]), (1, 1), "one traced gc() call each");

        // jscope merge: the session read as one recording by the event commands.
        let session = files[0].with_file_name("two.jss");
        let out = jscope(&["merge", s(&files[0]), s(&files[1]), "-o", s(&session)]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            counts(&[s(&session)]),
            sum(a, b),
            "JDK {}: the session",
            java.major
        );
        let gc_lines = stdout(&jscope(&["events", s(&session), "--type", "gc"]));
        assert_eq!(
            gc_lines.lines().count() as u64 - 1,
            a[0] + b[0],
            "{gc_lines}"
        );

        // --jvm all over the collector that both streamed to.
        let url = served.url();
        let stored = wait_until(Duration::from_secs(30), || {
            let rows = served.json("/api/jvms");
            let rows = rows.as_array().unwrap();
            rows.len() == 2 && rows.iter().all(|r| r["status"] == "gone")
        });
        assert!(stored, "both JVMs stored: {}", served.json("/api/jvms"));
        let all = ["--collector", url.as_str(), "--jvm", "all"];
        assert_eq!(counts(&all), sum(a, b), "JDK {}: --jvm all", java.major);
    }
}
