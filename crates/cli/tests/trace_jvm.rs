//! `jscope tree`, `stats` and `export` on recordings the agent wrote while tracing
//! a real JVM (each JDK testkit finds, under -Xverify:all): the fixture's known call
//! structure comes out as exact counts, the started thread hangs under the traced
//! `Thread.start` of the method that started it, and the sleeps have their durations.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child, Java};
use serde_json::Value;
use support::*;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_fixtures"))
}

/// Runs TracedApp with the agent's `options` plus a fresh file; returns the file.
fn trace_run(java: &Java, options: &str) -> PathBuf {
    let (file, printed) = agent_run(
        java,
        &format!("trace-jvm-{}", java.major),
        &["-Xverify:all"],
        options,
        &classes(),
        &["TracedApp"],
        120,
    );
    assert_eq!(printed, "depth 3 rescued true\n");
    file
}

fn method<'a>(stats: &'a Value, label: &str) -> &'a Value {
    stats["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["method"] == label)
        .unwrap_or_else(|| panic!("no {label} in {stats}"))
}

fn ms(v: &Value) -> f64 {
    v.as_f64().unwrap() / 1e6
}

fn assert_stats(java: &Java, file: &Path) {
    let stats = jscope_json(&[
        "stats",
        file.to_str().unwrap(),
        "--format",
        "json",
        "-n",
        "1000",
    ]);
    let calls = |label: &str| method(&stats, label)["calls"].as_u64().unwrap();
    // depth(3) on main and depth(2) on the task thread: 4 + 3 calls.
    assert_eq!(calls("TracedApp.depth"), 7, "JDK {}", java.major);
    assert_eq!(calls("TracedApp.fail"), 2);
    assert_eq!(method(&stats, "TracedApp.fail")["threw"], 2);
    assert_eq!(method(&stats, "TracedApp.rescue")["threw"], 0);
    assert_eq!((calls("TracedApp.main"), calls("TracedApp.task")), (1, 1));
    let pause = method(&stats, "TracedApp.pause");
    assert_eq!(pause["calls"], 3);
    // Sleeps never undershoot; on a loaded machine they may overshoot by a lot, so
    // the upper bounds are loose and the exact checks are the ones that hold whatever
    // the load: with three calls, the mean and stddev follow from min, median and max.
    let (min, p50, max) = (
        ms(&pause["min_ns"]),
        ms(&pause["p50_ns"]),
        ms(&pause["max_ns"]),
    );
    assert!((1.0..26.0).contains(&min), "{pause}");
    assert!((2.0..27.0).contains(&p50) && p50 >= min, "{pause}");
    assert!((3.0..28.0).contains(&max) && max >= p50, "{pause}");
    let mean = (min + p50 + max) / 3.0;
    assert!((ms(&pause["mean_ns"]) - mean).abs() < 0.01, "{pause}");
    let var = [min, p50, max]
        .iter()
        .map(|v| (v - mean).powi(2))
        .sum::<f64>()
        / 3.0;
    assert!(
        (ms(&pause["stddev_ns"]) - var.sqrt()).abs() < 0.01,
        "{pause}"
    );
    assert_eq!(stats["anomalies"]["unmatched_exits"], 0);
    assert_eq!(stats["anomalies"]["mismatched_exits"], 0);
    assert!(
        stats["probe_cost_ns"].as_f64().unwrap() > 0.0,
        "the agent measures it"
    );
}

/// The task thread's root call is the next line after the `Thread.start` that
/// `launch` made, one level deeper.
fn assert_tree(java: &Java, file: &Path) {
    let out = jscope(&["tree", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| {
            l.trim_start()
                .starts_with("java.lang.Thread.start [main] caller=TracedApp.launch ")
        })
        .unwrap_or_else(|| panic!("JDK {}: no start call in\n{text}", java.major));
    let indent = |l: &str| l.len() - l.trim_start().len();
    let task = lines[start + 1];
    assert!(
        task.trim_start()
            .starts_with("TracedApp.task [traced-task] caller=java.lang.Thread.start "),
        "JDK {}:\n{text}",
        java.major
    );
    assert_eq!(indent(task), indent(lines[start]) + 2, "{text}");
    assert!(lines[0].starts_with("[virtual root] jvm pid "), "{text}");
}

fn assert_chrome(file: &Path) {
    let stats = jscope_json(&["stats", file.to_str().unwrap(), "--format", "json"]);
    let out = jscope(&["export", file.to_str().unwrap(), "--format", "chrome"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("Chrome trace JSON");
    let events = json["traceEvents"].as_array().unwrap();
    let complete = events.iter().filter(|e| e["ph"] == "X").count() as u64;
    assert_eq!(complete, stats["calls"].as_u64().unwrap());
}

#[test]
fn a_traced_jvm_gives_exact_counts_a_linked_thread_and_sleep_durations() {
    for java in javas() {
        let file = trace_run(&java, "trace=TracedApp;java.lang.Thread#start");
        assert_stats(&java, &file);
        assert_tree(&java, &file);
        assert_chrome(&file);
    }
}

#[test]
fn an_aggregate_mode_jvm_gives_exact_counts_and_says_what_is_missing() {
    for java in javas() {
        let file = trace_run(&java, "trace=TracedApp,traceagg");
        let stats = jscope_json(&["stats", file.to_str().unwrap(), "--format", "json"]);
        assert_eq!(stats["aggregate_mode"], true);
        let calls = |label: &str| method(&stats, label)["calls"].as_u64().unwrap();
        assert_eq!(calls("TracedApp.depth"), 7, "JDK {}", java.major);
        assert_eq!((calls("TracedApp.fail"), calls("TracedApp.task")), (2, 1));
        let pause = method(&stats, "TracedApp.pause");
        assert_eq!(pause["calls"], 3);
        assert!(
            ms(&pause["min_ns"]) >= 1.0 && ms(&pause["max_ns"]) >= 3.0,
            "{pause}"
        );
        assert!(
            pause["p50_ns"].is_null() && pause["self_ns"].is_null(),
            "{pause}"
        );
        let text = stdout(&jscope(&["stats", file.to_str().unwrap()]));
        assert!(text.starts_with("aggregate-mode recording: "), "{text}");
    }
}

/// `jscope record --trace --events` spells the agent's options, and `jscope trace
/// start|stop` switches tracing on a JVM that is already running.
#[test]
fn record_and_trace_commands_drive_the_agent() {
    agent_path();
    let java = &javas()[0];
    let dir = temp_dir("trace-cli");
    let file = dir.join("record.jsc");
    let out = Command::new(jscope_bin())
        .args([
            "record",
            "--mode",
            "none",
            "--trace",
            "TracedApp",
            "--events",
            "gc,threads",
            "-o",
        ])
        .arg(&file)
        .args(["--", java.bin.to_str().unwrap(), "-cp"])
        .arg(classes())
        .arg("TracedApp")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = jscope_json(&[
        "stats",
        file.to_str().unwrap(),
        "--format",
        "json",
        "-n",
        "1000",
    ]);
    assert_eq!(method(&stats, "TracedApp.depth")["calls"], 7);

    let hot = compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
    let mut cmd = Command::new(&java.bin);
    cmd.arg("-cp").arg(&hot).args(["Hot", "alpha", "20000"]);
    let mut jvm = Child::spawn(&mut cmd);
    let pid = jvm.id().to_string();
    let traced = dir.join("attach.jsc");
    std::thread::sleep(Duration::from_millis(500));
    let start = jscope(&[
        "trace",
        "start",
        &pid,
        "--trace",
        "Hot#alpha",
        "-o",
        traced.to_str().unwrap(),
    ]);
    assert!(start.status.success(), "{}", stderr(&start));
    std::thread::sleep(Duration::from_millis(700));
    let stop = jscope(&["trace", "stop", &pid]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    let end = jscope(&["stop", &pid]);
    assert!(end.status.success(), "{}", stderr(&end));
    let stats = jscope_json(&["stats", traced.to_str().unwrap(), "--format", "json"]);
    let calls = method(&stats, "Hot.alpha")["calls"].as_u64().unwrap();
    assert!(calls > 10, "{stats}");
    let _ = jvm.0.kill();
}
