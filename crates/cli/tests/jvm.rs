//! End to end: the built `jscope` records real JVMs (with the agent found next
//! to the binary) and the analysis commands report what the fixtures do. Every
//! test runs on each JDK that `jscope_testkit::javas()` finds.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, wait_until, Child, Java};
use serde_json::Value;
use support::*;

/// JVM tests measure cpu shares; running them one at a time keeps two JVMs
/// from competing for the machine's cores.
static ONE_JVM_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_JVM_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn classes() -> PathBuf {
    // Fails early, with the testkit's message, when the agent is not built.
    agent_path();
    compile_fixtures(&fixtures())
}

/// `jscope record --mode MODE --interval INTERVAL -o FILE -- java -cp CLASSES MAIN ARGS`.
fn record(java: &Java, mode: &str, interval: &str, name: &str, main_args: &[&str]) -> PathBuf {
    record_with_output(java, mode, interval, name, main_args).0
}

/// `record`, and what the program printed on its standard output.
fn record_with_output(
    java: &Java,
    mode: &str,
    interval: &str,
    name: &str,
    main_args: &[&str],
) -> (PathBuf, String) {
    let file = temp_dir(&format!("{name}-jdk{}", java.major)).join(format!("{name}.jsc"));
    let cp = classes();
    let mut args = vec![
        "record",
        "--mode",
        mode,
        "--interval",
        interval,
        "-o",
        file.to_str().unwrap(),
        "--",
    ];
    args.extend([java.bin.to_str().unwrap(), "-cp", cp.to_str().unwrap()]);
    args.extend_from_slice(main_args);
    let out = jscope(&args);
    assert!(
        out.status.success(),
        "jdk {}: jscope {args:?}: {}",
        java.major,
        stderr(&out)
    );
    assert!(
        file.is_file(),
        "jdk {}: no recording at {}",
        java.major,
        file.display()
    );
    (file, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn f(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The line of `marker` in a fixture source, 1-based.
fn line_of(source: &str, marker: &str) -> u64 {
    let text = std::fs::read_to_string(fixtures().join(source)).unwrap();
    text.lines()
        .position(|l| l.contains(marker))
        .expect("marker in fixture") as u64
        + 1
}

#[test]
fn cpu_report_shows_the_seventy_thirty_split() {
    let _serial = serial();
    for java in javas() {
        let file = record(&java, "cpu", "5ms", "cpusplit", &["CpuSplit", "3"]);
        // CpuSplit's only busy Java thread is its main thread; not filtering by name
        // keeps the test independent of how the launcher's main thread is named when
        // it ends (DestroyJavaVM on the same kernel thread).
        let report = Report::of(&file, &["--mode", "cpu"]);
        // 3 s of the thread's CPU time at 5 ms is about 600 samples, loaded or not.
        assert!(
            report.samples >= 400,
            "jdk {}: only {} samples",
            java.major,
            report.samples
        );
        // The split within the samples of the two methods: every thread of the JVM
        // is sampled (compiler and GC threads too), so shares of all samples hold
        // less than 100 points between them.
        let seventy = report
            .samples_of("CpuSplit.seventy")
            .expect("seventy sampled") as f64;
        let thirty = report
            .samples_of("CpuSplit.thirty")
            .expect("thirty sampled") as f64;
        let n = seventy + thirty;
        let share = 100.0 * seventy / n;
        // Sampling error of a 70/30 split over n samples: four binomial standard
        // deviations (7.5 points at 600 samples), never under 5 points.
        let tolerance = (400.0 * (0.21 / n).sqrt()).max(5.0);
        assert!(
            (share - 70.0).abs() <= tolerance,
            "jdk {}: seventy {share:.1}% of the two methods' {n} samples (± {tolerance:.1})",
            java.major
        );
        let all_threads = Report::of(&file, &["--mode", "cpu"]).samples;
        damaged_copies_read_up_to_the_damage(&file, all_threads);
    }
}

/// A torn tail and a flipped byte in a real recording: `report` still works on
/// what comes before and says where the damage starts.
fn damaged_copies_read_up_to_the_damage(file: &Path, full_samples: u64) {
    let bytes = std::fs::read(file).unwrap();
    let torn = file.with_file_name("torn.jsc");
    std::fs::write(&torn, &bytes[..bytes.len() - 1]).unwrap();
    let mut flipped_bytes = bytes.clone();
    let middle = bytes.len() / 2;
    flipped_bytes[middle] ^= 0xff;
    let flipped = file.with_file_name("flipped.jsc");
    std::fs::write(&flipped, &flipped_bytes).unwrap();
    for (path, limit) in [(&torn, bytes.len() - 1), (&flipped, middle)] {
        let out = jscope(&["report", f(path), "--format", "json"]);
        assert!(out.status.success(), "{}: {}", path.display(), stderr(&out));
        let err = stderr(&out);
        let prefix = format!("jscope: warning: {} is damaged at byte ", path.display());
        // The damage is said first, in one line; a warning about what was read
        // (e.g. unknown stacks over 1% of the samples before the damage) may follow.
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with(&prefix) && first.ends_with("; read up to there"),
            "{err}"
        );
        let offset: usize = first[prefix.len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            offset <= limit,
            "damage at {offset}, after the damaged byte {limit}"
        );
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(json["samples"].as_u64().unwrap() <= full_samples);
    }
}

fn thread_samples(file: &Path, mode: &str, thread: &str) -> u64 {
    Report::of(file, &["--mode", mode, "--thread", thread]).samples
}

#[test]
fn cpu_mode_sees_the_spinner_and_wall_mode_sees_both() {
    let _serial = serial();
    for java in javas() {
        let (cpu, out) =
            record_with_output(&java, "cpu", "10ms", "sleepspin-cpu", &["SleepSpin", "2"]);
        let (sleeper, spinner) = (
            thread_samples(&cpu, "cpu", "sleeper"),
            thread_samples(&cpu, "cpu", "spinner"),
        );
        // Held against the CPU the spinner really got: on a loaded machine it gets a
        // fraction of a core, and a fixed count of samples would measure the load.
        let cpu_ms: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("spinner cpu ms: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("jdk {}: no spinner cpu time in {out:?}", java.major));
        let expected = cpu_ms / 10;
        assert!(
            spinner >= 5 && spinner * 2 >= expected,
            "jdk {}: spinner has {spinner} cpu samples for {cpu_ms} ms of its cpu time",
            java.major
        );
        assert!(
            sleeper * 20 <= spinner,
            "jdk {}: sleeper {sleeper} vs spinner {spinner} cpu samples",
            java.major
        );

        let wall = record(&java, "wall", "10ms", "sleepspin-wall", &["SleepSpin", "2"]);
        let (sleeper, spinner) = (
            thread_samples(&wall, "wall", "sleeper"),
            thread_samples(&wall, "wall", "spinner"),
        );
        assert!(
            sleeper >= 50 && spinner >= 50,
            "jdk {}: wall sleeper {sleeper}, spinner {spinner}",
            java.major
        );
        let ratio = sleeper as f64 / spinner as f64;
        assert!(
            (0.6..=1.6).contains(&ratio),
            "jdk {}: wall sleeper {sleeper} vs spinner {spinner}",
            java.major
        );
    }
}

fn thread<'a>(view: &'a Value, name: &str) -> &'a Value {
    view["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no thread {name}: {view}"))
}

fn frame<'a>(thread: &'a Value, method: &str) -> &'a Value {
    thread["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["method"] == method)
        .unwrap_or_else(|| panic!("no frame {method}: {thread}"))
}

#[test]
fn snapshot_shows_the_blocked_thread_in_its_frame_and_line() {
    let _serial = serial();
    let blocked_line = line_of("Blocked.java", "// BLOCKED HERE");
    let waiting_line = line_of("Blocked.java", "// WAITING HERE");
    for java in javas() {
        let file = record(&java, "snapshot", "50ms", "blocked", &["Blocked", "4000"]);
        let info = jscope_json(&["info", f(&file), "--format", "json"]);
        assert!(
            info["snapshots"].as_u64().unwrap() >= 20,
            "jdk {}: {info}",
            java.major
        );
        // main holds the lock for 4 of the run's ~4.5 s: the middle is inside it.
        let middle = format!("{}", info["duration_s"].as_f64().unwrap() / 2.0);
        let view = jscope_json(&["threads", f(&file), "--at", &middle, "--format", "json"]);

        let blocker = thread(&view, "blocker");
        assert_eq!(blocker["state"], "blocked", "jdk {}: {blocker}", java.major);
        assert_eq!(
            blocker["frames"][0]["method"], "Blocked.enter",
            "jdk {}: {blocker}",
            java.major
        );
        assert_eq!(
            blocker["frames"][0]["line"], blocked_line,
            "jdk {}: {blocker}",
            java.major
        );
        assert_eq!(
            blocker["frames"][0]["position"],
            format!("Blocked.java:{blocked_line}")
        );
        assert_eq!(
            (&blocker["group"], &blocker["parent"]),
            (&Value::from("workers"), &Value::from("main"))
        );

        let waiter = thread(&view, "waiter");
        assert_eq!(waiter["state"], "waiting", "jdk {}: {waiter}", java.major);
        assert_eq!(
            frame(waiter, "Blocked.await")["line"],
            waiting_line,
            "jdk {}: {waiter}",
            java.major
        );
        assert_eq!(waiter["group"], "workers");

        let order = |t: &Value| t["start_order"].as_u64().unwrap();
        let main = thread(&view, "main");
        assert!(
            order(main) >= 1 && order(main) < order(blocker),
            "jdk {}: {view}",
            java.major
        );
        assert!(order(blocker) < order(waiter), "jdk {}: {view}", java.major);
        assert_eq!(main["state"], "sleeping", "jdk {}: {main}", java.major);

        // Snapshot samples carry thread states, so reports can select by state.
        let blocked = Report::of(
            &file,
            &[
                "--mode", "snapshot", "--state", "blocked", "--thread", "blocker",
            ],
        );
        assert!(
            blocked.samples >= 10,
            "jdk {}: {}",
            java.major,
            blocked.json
        );
        assert_eq!(blocked.json["methods"][0]["method"], "Blocked.enter");
        assert_eq!(blocked.percent("Blocked.enter"), Some((100.0, 100.0)));

        let text = stdout(&jscope(&["threads", f(&file), "--at", &middle]));
        assert!(
            text.contains(&format!(
                "    at Blocked.enter(Blocked.java:{blocked_line})"
            )),
            "{text}"
        );
    }
}

/// Starts `Idle` and waits for its "ready" line, so the JVM is up to attach to.
fn start_idle(java: &Java) -> Child {
    let mut child = Child::spawn(
        Command::new(&java.bin)
            .args(["-cp", f(&classes()), "Idle", "60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

fn cpu_samples_once_readable(file: &Path) -> u64 {
    let mut samples = 0;
    let readable = wait_until(Duration::from_secs(10), || {
        let out = jscope(&["info", f(file), "--format", "json"]);
        let Ok(json) = serde_json::from_slice::<Value>(&out.stdout) else {
            return false;
        };
        samples = json["samples"]["cpu"].as_u64().unwrap_or(0);
        out.status.success() && json["ended_cleanly"] == true
    });
    assert!(
        readable,
        "{} never became a complete recording",
        file.display()
    );
    samples
}

#[test]
fn attach_then_stop_yields_a_valid_recording() {
    let _serial = serial();
    for java in javas() {
        let dir = temp_dir(&format!("attach-jdk{}", java.major));
        let idle = start_idle(&java);
        let pid = idle.id().to_string();
        let file = dir.join("attached.jsc");
        let out = jscope(&[
            "attach",
            &pid,
            "--mode",
            "cpu",
            "--interval",
            "5ms",
            "-o",
            f(&file),
        ]);
        assert!(
            out.status.success(),
            "jdk {}: attach: {}",
            java.major,
            stderr(&out)
        );
        std::thread::sleep(Duration::from_millis(1500));
        let out = jscope(&["stop", &pid]);
        assert!(
            out.status.success(),
            "jdk {}: stop: {}",
            java.major,
            stderr(&out)
        );
        let samples = cpu_samples_once_readable(&file);
        assert!(samples > 0, "jdk {}: no samples after attach", java.major);
        let report = Report::of(&file, &["--thread", "main"]);
        assert!(
            report
                .percent("Idle.main")
                .is_some_and(|(_, total)| total > 90.0),
            "jdk {}: {}",
            java.major,
            report.json
        );

        // With --duration, attach itself stops the recording.
        let timed = dir.join("timed.jsc");
        let out = jscope(&["attach", &pid, "-o", f(&timed), "--duration", "1s"]);
        assert!(
            out.status.success(),
            "jdk {}: attach --duration: {}",
            java.major,
            stderr(&out)
        );
        assert!(
            cpu_samples_once_readable(&timed) > 0,
            "jdk {}: no samples with --duration",
            java.major
        );
    }
}

#[test]
fn attach_to_a_missing_process_is_a_one_line_error() {
    let out = jscope(&[
        "attach",
        "999999999",
        "-o",
        "/tmp/never.jsc",
        "--timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("jscope: cannot attach to pid 999999999") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn record_forwards_stdio_and_exit_code() {
    let _serial = serial();
    for java in javas() {
        let file = temp_dir(&format!("exit-jdk{}", java.major)).join("exit.jsc");
        let cp = classes();
        let args = [
            "record",
            "-o",
            f(&file),
            "--",
            f(&java.bin),
            "-cp",
            f(&cp),
            "Exit",
            "7",
        ];
        let out = jscope(&args);
        assert_eq!(
            out.status.code(),
            Some(7),
            "jdk {}: {}",
            java.major,
            stderr(&out)
        );
        assert_eq!(stdout(&out), "to stdout\n", "jdk {}", java.major);
        assert!(stderr(&out).contains("to stderr\n"), "jdk {}", java.major);
        let info = jscope_json(&["info", f(&file), "--format", "json"]);
        assert_eq!(info["ended_cleanly"], true, "jdk {}: {info}", java.major);
        assert!(
            info["command_line"].as_str().unwrap().contains("Exit 7"),
            "{info}"
        );
    }
}
