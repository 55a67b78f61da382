//! Running the built `jscope` binary and making recordings for it to read.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use jscope_format::thread_state::{ALIVE, RUNNABLE};
use jscope_format::*;
use jscope_testkit::RecordingBuilder;

pub fn jscope_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_jscope"))
}

/// Runs `jscope ARGS` to completion.
pub fn jscope(args: &[&str]) -> Output {
    Command::new(jscope_bin())
        .args(args)
        .output()
        .expect("run jscope")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `jscope ARGS`, asserts success, and returns its stdout.
pub fn jscope_ok(args: &[&str]) -> String {
    let out = jscope(args);
    assert!(
        out.status.success(),
        "jscope {args:?} failed: {}",
        stderr(&out)
    );
    String::from_utf8(out.stdout).expect("jscope prints UTF-8")
}

/// Samples of collapsed output: (all of them, those whose stack contains `frame`).
pub fn collapsed_share(collapsed: &str, frame: &str) -> (u64, u64) {
    let (mut all, mut with) = (0, 0);
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

/// Runs `jscope ARGS`, asserts success and parses stdout as JSON.
pub fn jscope_json(args: &[&str]) -> serde_json::Value {
    let out = jscope_ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("jscope {args:?}: bad JSON ({e}): {out}"))
}

/// The `samples` and per-method rows of `jscope report ... --format json`.
pub struct Report {
    pub samples: u64,
    pub json: serde_json::Value,
}

impl Report {
    pub fn of(file: &Path, extra: &[&str]) -> Report {
        let mut args = vec![
            "report",
            file.to_str().unwrap(),
            "--format",
            "json",
            "--top",
            "1000",
        ];
        args.extend_from_slice(extra);
        let json = jscope_json(&args);
        Report {
            samples: json["samples"].as_u64().unwrap(),
            json,
        }
    }

    /// The samples with the first method whose label ends with `suffix` on their
    /// stack (its total samples).
    pub fn samples_of(&self, suffix: &str) -> Option<u64> {
        let m = self.json["methods"]
            .as_array()?
            .iter()
            .find(|m| m["method"].as_str().is_some_and(|l| l.ends_with(suffix)))?;
        m["total_samples"].as_u64()
    }

    /// (self %, total %) of the first method whose label ends with `suffix`.
    pub fn percent(&self, suffix: &str) -> Option<(f64, f64)> {
        let m = self.json["methods"]
            .as_array()?
            .iter()
            .find(|m| m["method"].as_str().is_some_and(|l| l.ends_with(suffix)))?;
        Some((m["self_percent"].as_f64()?, m["total_percent"].as_f64()?))
    }
}

/// Where the chunks of a synthetic recording start, for damaging it precisely.
pub struct Synthetic {
    pub bytes: Vec<u8>,
    /// Byte offset of each data chunk (the header chunk excluded).
    pub chunk_offsets: Vec<usize>,
}

/// A recording of one thread `main` with three data chunks of 10 cpu samples
/// each: chunk 1 in `demo.App.first`, 2 in `demo.App.second`, 3 in `demo.App.third`.
pub fn synthetic_recording() -> Synthetic {
    let mut b = RecordingBuilder::with_header(Header {
        vm_name: "Synthetic VM".into(),
        java_version: "17".into(),
        start_ticks: 1_000,
        ticks_per_second: 1_000_000_000,
        modes: "cpu".into(),
        interval_ns: 10_000_000,
        ..Header::default()
    });
    b.thread_def(ThreadDef {
        id: ThreadId(1),
        java_id: 1,
        name: "main".into(),
        group: "main".into(),
        parent: "system".into(),
        start_order: 1,
        ..ThreadDef::default()
    });
    let main = b.method("demo.App.main");
    let stacks: Vec<StackId> = (3..=5u32)
        .zip(["first", "second", "third"])
        .map(|(line, name)| {
            let method = b.method(&format!("demo.App.{name}"));
            b.stack_of(&[
                Frame {
                    method,
                    bci: 4,
                    line: 10 * line,
                    kind: FrameKind::Compiled,
                },
                Frame {
                    method: main,
                    bci: 1,
                    line: 3,
                    kind: FrameKind::Interpreted,
                },
            ])
        })
        .collect();
    for (i, stack) in stacks.into_iter().enumerate() {
        for n in 0..10 {
            b.raw_sample(&Sample {
                request: 0,
                thread: ThreadId(1),
                carrier: Default::default(),
                ticks: 1_000 + (i as u64 * 10 + n) * 10_000_000,
                stack,
                mode: SampleMode::Cpu,
                weight_ns: 10_000_000,
                state: ALIVE | RUNNABLE,
            });
        }
        if i == 2 {
            b.end_at(1_000 + 30 * 10_000_000);
        }
        b.cut();
    }
    let (mut bytes, chunks) = b.chunks(None);
    let mut chunk_offsets = Vec::new();
    for c in chunks {
        chunk_offsets.push(bytes.len());
        bytes.extend_from_slice(&c);
    }
    Synthetic {
        bytes,
        chunk_offsets,
    }
}

/// Starts `java -agentpath:AGENT=OPTIONS -cp CLASSES ARGS...`, its stdout going to
/// DIR/NAME.log (stderr inherited), not yet waited for.
pub fn start_logged<S: AsRef<std::ffi::OsStr>>(
    java: &jscope_testkit::Java,
    dir: &Path,
    name: &str,
    options: &str,
    classes: &Path,
    args: &[S],
) -> jscope_testkit::Child {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-agentpath:{}={options}",
        jscope_testkit::agent_path().display()
    ))
    .arg("-cp")
    .arg(classes)
    .args(args)
    .stdout(std::process::Stdio::from(log))
    .stderr(std::process::Stdio::inherit());
    jscope_testkit::Child::spawn(&mut cmd)
}

/// Waits (60 s at most) until DIR/NAME.log of [`start_logged`] says `ready`.
pub fn wait_ready(dir: &Path, name: &str) {
    let log = dir.join(format!("{name}.log"));
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(60) {
        if std::fs::read_to_string(&log).is_ok_and(|s| s.contains("ready")) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{name} did not start");
}

/// A duration as the session page formats it (fmtNs in distributed.js).
pub fn fmt_ns(ns: u64) -> String {
    let f = ns as f64;
    match ns {
        n if n >= 1_000_000_000 => format!("{:.3} s", f / 1e9),
        n if n >= 1_000_000 => format!("{:.3} ms", f / 1e6),
        n if n >= 1_000 => format!("{:.3} us", f / 1e3),
        n => format!("{n} ns"),
    }
}

/// The HTTP fixtures (crates/agent/tests/http_fixtures), compiled once per process.
pub fn http_classes() -> PathBuf {
    jscope_testkit::compile_fixtures(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/http_fixtures"),
    )
}

/// A local TCP port nobody listens on (as text, for a fixture's arguments).
pub fn free_port() -> String {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string()
}

/// `jscope record OPTIONS... -o FILE -- JAVA -cp CLASSES ARGS...`, asserting it
/// succeeded.
pub fn record(file: &Path, options: &[&str], java: &Path, classes: &Path, args: &[&str]) {
    let mut all = vec!["record"];
    all.extend_from_slice(options);
    all.extend([
        "-o",
        file.to_str().unwrap(),
        "--",
        java.to_str().unwrap(),
        "-cp",
        classes.to_str().unwrap(),
    ]);
    all.extend_from_slice(args);
    let out = jscope(&all);
    assert!(out.status.success(), "jscope {all:?}: {}", stderr(&out));
}

/// Runs `java JVM_ARGS... -agentpath:AGENT=OPTIONS,file=FILE -cp CLASSES ARGS...`
/// to its end (`secs` at most), FILE being `app.jsc` in a fresh temp dir `dir`;
/// asserts it exited 0 and returns FILE and what the fixture printed.
pub fn agent_run(
    java: &jscope_testkit::Java,
    dir: &str,
    jvm_args: &[&str],
    options: &str,
    classes: &Path,
    args: &[&str],
    secs: u64,
) -> (PathBuf, String) {
    let file = jscope_testkit::temp_dir(dir).join("app.jsc");
    let mut cmd = Command::new(&java.bin);
    cmd.args(jvm_args)
        .arg(format!(
            "-agentpath:{}={options},file={}",
            jscope_testkit::agent_path().display(),
            file.display()
        ))
        .arg("-cp")
        .arg(classes)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = jscope_testkit::Child::spawn(&mut cmd).finish(std::time::Duration::from_secs(secs));
    assert!(
        out.status.success(),
        "JDK {}: {}",
        java.major,
        String::from_utf8_lossy(&out.stderr)
    );
    (file, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Epoch ns as RFC 3339 in UTC, to the nanosecond, by GNU date (an oracle
/// independent of jscope's own time parsing).
pub fn rfc3339(ns: u64) -> String {
    let out = Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("@{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000),
            "+%Y-%m-%dT%H:%M:%S.%NZ",
        ])
        .output()
        .expect("run date");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
