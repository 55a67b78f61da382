//! A panic inside the agent never takes the JVM down. The agent the tests load
//! is built with the test-only `panic-test` feature (the agent crate
//! dev-depends on itself with it), whose `panictest=NAME` option makes entry
//! point NAME panic each time it runs. Each case checks that the JVM runs to
//! its normal end (exit code and output), that the recording is complete and
//! keeps the other data, that the panic is counted (`agent.panics`) and that it
//! is reported exactly once on stderr.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use jscope_format::Recording;
use jscope_testkit::{agent_path, compile_fixtures, java_with_agent, javas, temp_dir, Child, Java};

const JVM_LIMIT: Duration = Duration::from_secs(120);

fn classes() -> PathBuf {
    let dir =
        compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/events_fixtures"));
    // The compile-time stub of jscope.Events is not wanted on the class path.
    let _ = std::fs::remove_dir_all(dir.join("jscope"));
    dir
}

fn run(java: &Java, options: &str, main: &str, args: &[&str]) -> Output {
    let mut cmd = java_with_agent(java, options, &classes(), main, args);
    Child::spawn(&mut cmd).finish(JVM_LIMIT)
}

/// Runs `main` with the agent told to panic in `entry`, and checks everything a
/// panic must leave standing; gives the recording for the case's own checks.
fn survive(
    java: &Java,
    entry: &str,
    options: &str,
    (main, args, output): (&str, &[&str], &str),
) -> Recording {
    let file = temp_dir(&format!("panic-{entry}-{}", java.major)).join("out.jsc");
    let options = format!("{options},quiet,panictest={entry},file={}", file.display());
    let out = run(java, &options, main, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stderr.contains("unknown option `panictest`"),
        "{} was built without the panic-test feature (a plain `cargo build` wrote it \
         after the test build): touch crates/agent/src/lib.rs and run the tests again",
        agent_path().display()
    );
    assert!(
        stdout.contains(output),
        "JDK {}: {main} did not print `{output}`: {stdout} {stderr}",
        java.major
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "JDK {}: {main} with {options} did not end normally: {stderr}",
        java.major
    );
    assert!(
        !stderr.contains("FATAL") && !stderr.contains("WARNING in native method"),
        "JDK {}: {stderr}",
        java.major
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("jscope: "))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "JDK {}: one report of the panic expected: {stderr}",
        java.major
    );
    assert!(
        lines[0].contains(&format!("internal error in {entry} ")),
        "JDK {}: {}",
        java.major,
        lines[0]
    );
    let rec = Recording::read_file(&file).expect("readable recording");
    assert!(
        rec.damage.is_none() && rec.end_ticks.is_some(),
        "JDK {}: incomplete recording",
        java.major
    );
    assert!(
        rec.counters.get("agent.panics").is_some_and(|n| *n >= 1),
        "JDK {}: panics not counted: {:?}",
        java.major,
        rec.counters
    );
    rec
}

/// GarbageCollectionStart runs inside the collector: the panic there stops the
/// events engine; the program (two busy threads, a System.gc() every 100 ms) and
/// the cpu sampler go on.
#[test]
fn a_panic_in_gc_start_stops_events_only() {
    for java in javas() {
        let rec = survive(
            &java,
            "gc_start",
            "mode=cpu,interval=1ms,events=gc",
            ("Busy", &["1500"], "shared "),
        );
        // The engine stops at the first panic: it never runs again.
        assert_eq!(rec.counters.get("agent.panics"), Some(&1));
        assert!(
            !rec.samples.is_empty(),
            "JDK {}: the cpu samples are still recorded",
            java.major
        );
    }
}

/// ThreadStart belongs to the agent's lifecycle, which never stops: every
/// thread start panics, is counted, and is reported once.
#[test]
fn a_panic_in_thread_start_is_reported_once() {
    for java in javas() {
        let rec = survive(
            &java,
            "thread_start",
            "mode=cpu,interval=1ms,events=waits",
            ("ProducerConsumer", &["5"], "consumed 5"),
        );
        assert!(
            rec.events
                .iter()
                .any(|e| matches!(e.kind, jscope_format::EventKind::MonitorWait { .. })),
            "JDK {}: the waits are still recorded",
            java.major
        );
    }
}
