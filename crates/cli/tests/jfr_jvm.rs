//! JFR in, end to end: real JVMs (JDK 17 and JDK 25, as the testkit finds them)
//! record a fixture with a known CPU split with JDK Flight Recorder, and `jscope`
//! reads the `.jfr` as it reads its own recordings: the split, method traces' exact
//! call counts, and `jscope convert` keeping the same report.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use jscope_testkit::{
    agent_path, compile_fixtures, javas, jcmd, temp_dir, wait_until, Child, Java,
};
use support::*;

/// The tests measure CPU shares; one JVM at a time keeps them from competing.
static ONE_JVM_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_JVM_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jfr_fixtures"))
}

/// Runs `JfrSplit SECONDS` under `-XX:StartFlightRecording=filename=FILE,settings=profile,EXTRA`
/// and returns the file and what the fixture printed (its call counts).
fn record_jfr(java: &Java, name: &str, extra: &str, seconds: &str) -> (PathBuf, String) {
    let file = temp_dir(&format!("{name}-jdk{}", java.major)).join(format!("{name}.jfr"));
    let mut cmd = Command::new(&java.bin);
    cmd.arg(format!(
        "-XX:StartFlightRecording=filename={},settings=profile{extra}",
        file.display()
    ))
    .arg("-Xlog:jfr=warning")
    .arg("-cp")
    .arg(classes())
    .args(["JfrSplit", seconds])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(120));
    assert!(
        out.status.success() && file.is_file(),
        "jdk {}: JFR recording failed: {}",
        java.major,
        String::from_utf8_lossy(&out.stderr)
    );
    (file, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The same fixture recorded by jscope's own agent.
fn record_jsc(java: &Java) -> PathBuf {
    agent_path();
    let file = temp_dir(&format!("jfrsplit-jsc-jdk{}", java.major)).join("split.jsc");
    record(
        &file,
        // JFR samples Java threads' Java frames: so does jscope here.
        &["--mode", "cpu", "--interval", "5ms", "--cstack", "no"],
        &java.bin,
        &classes(),
        &["JfrSplit", "2"],
    );
    file
}

/// (seventy %, thirty %) of the CPU samples, with the sample count.
fn split(file: &Path) -> (f64, f64, u64) {
    let r = Report::of(file, &["--mode", "cpu"]);
    let (_, seventy) = r.percent("JfrSplit.seventy").expect("seventy sampled");
    let (_, thirty) = r.percent("JfrSplit.thirty").expect("thirty sampled");
    (seventy, thirty, r.samples)
}

/// Checks the split between the fixture's two methods (their shares of the
/// samples in either, so that other threads and frames do not weigh), within
/// three binomial standard deviations (and a point for the split the loops
/// themselves drift by); returns (seventy %, thirty %) of those samples.
fn assert_split(what: &str, file: &Path) -> (f64, f64) {
    let (seventy, thirty, samples) = split(file);
    assert!(samples >= 200, "{what}: only {samples} samples");
    let both = seventy + thirty;
    let n = samples as f64 * both / 100.0;
    let share = 100.0 * seventy / both;
    let margin = 300.0 * (0.7 * 0.3 / n).sqrt() + 1.0;
    assert!(
        (share - 70.0).abs() <= margin,
        "{what}: {share:.1}% / {:.1}% of the {n:.0} samples in either ({seventy:.1}% / {thirty:.1}% of all {samples}), not 70/30 ± {margin:.1}",
        100.0 - share
    );
    (share, 100.0 - share)
}

/// `(seventy, thirty)` from the fixture's `calls seventy=N thirty=M` line.
fn printed_calls(stdout: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("calls "))
        .expect("the fixture prints its calls");
    let n = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .expect("a count")
    };
    (n("seventy="), n("thirty="))
}

/// Calls per method from `jscope stats FILE --format json`.
fn stats_calls(file: &Path, method: &str) -> u64 {
    let json = jscope_json(&["stats", file.to_str().unwrap(), "--format", "json"]);
    json["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .find(|m| m["method"] == method)
        .and_then(|m| m["calls"].as_u64())
        .unwrap_or_else(|| panic!("{method} not in stats: {json}"))
}

#[test]
fn execution_samples_show_the_split_as_jscope_does_and_convert_keeps_it() {
    let _serial = serial();
    for java in javas().into_iter().filter(|j| j.major >= 17) {
        let what = format!("jdk {} JFR", java.major);
        let (jfr, _) = record_jfr(&java, "jfrsplit", ",jdk.ExecutionSample#period=2ms", "3");
        // JDK 25 samples cooperatively (JEP 518): on some runs it wrote a few dozen
        // execution samples for 3 s of CPU (the reader counts what `jfr summary` does:
        // the several-chunks test), so its split is checked on jdk.CPUTimeSample, its
        // CPU sampler, in the test below.
        if java.major < 25 {
            let from_jfr = assert_split(&what, &jfr);
            let ours = assert_split(&format!("jdk {} jscope", java.major), &record_jsc(&java));
            assert!(
                (from_jfr.0 - ours.0).abs() <= 10.0,
                "{what}: {from_jfr:?} vs jscope's {ours:?}"
            );
        }

        let jsc = jfr.with_extension("jsc");
        let out = jscope(&[
            "convert",
            jfr.to_str().unwrap(),
            "-o",
            jsc.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "convert: {}", stderr(&out));
        let report = |f: &Path| stdout(&jscope(&["report", f.to_str().unwrap()]));
        assert_eq!(
            report(&jfr),
            report(&jsc),
            "{what}: convert changed the report"
        );
        assert!(report(&jfr).contains("JfrSplit.seventy"));
        // The fixture ends with two System.gc() calls.
        let gc = stdout(&jscope(&["gc", jfr.to_str().unwrap()]));
        let pauses: u64 = gc
            .lines()
            .find_map(|l| l.strip_prefix("GC pauses:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{what}: {gc}"));
        assert!(pauses >= 2, "{what}: {gc}");
        cut_copies_read_with_one_warning(&what, &jfr);
    }
}

/// A copy cut short anywhere reads with one warning (how much it keeps depends on
/// where the JVM wrote what: a single-chunk JDK recording writes most samples near
/// its end; `a_recording_dumped_mid_run_has_several_chunks_all_read` cuts one of
/// several chunks).
fn cut_copies_read_with_one_warning(what: &str, jfr: &Path) {
    let bytes = std::fs::read(jfr).unwrap();
    for len in [bytes.len() / 4, bytes.len() / 2, bytes.len() * 3 / 4] {
        let cut = jfr.with_file_name(format!("cut-{len}.jfr"));
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let out = jscope(&["info", cut.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(out.status.success(), "{what}: cut at {len}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: one warning: {err}");
        assert!(
            err.starts_with("jscope: warning:") && err.contains("read up to there"),
            "{err}"
        );
    }
}

/// Where each chunk of a JFR file starts (its size is at bytes 8..16 of its header).
fn chunk_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= bytes.len() {
        out.push(at);
        let size = i64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        at += usize::try_from(size).expect("chunk size");
    }
    out
}

fn jdk25() -> Option<Java> {
    let found = javas().into_iter().find(|j| j.major >= 25);
    if found.is_none() {
        eprintln!("no JDK 25 found: JDK 25's JFR events are not tested");
    }
    found
}

#[test]
fn jdk25_cpu_time_samples_show_the_split_and_method_timing_counts_calls() {
    let _serial = serial();
    let Some(java) = jdk25() else { return };
    let extra = ",jdk.CPUTimeSample#enabled=true,jdk.CPUTimeSample#throttle=5ms,\
                 jdk.MethodTiming#enabled=true,jdk.MethodTiming#filter=JfrSplit::thirty";
    let (jfr, printed) = record_jfr(&java, "cputime", extra, "3");
    assert_split("jdk 25 CPUTimeSample", &jfr);
    let info = stdout(&jscope(&["info", jfr.to_str().unwrap()]));
    assert!(info.contains("jdk.CPUTimeSample"), "{info}");
    // MethodTiming gives totals per method: stats reads them as an aggregate.
    assert_eq!(
        stats_calls(&jfr, "JfrSplit.thirty"),
        printed_calls(&printed).1
    );
}

#[test]
fn jdk25_method_traces_give_exact_call_counts_and_a_tree() {
    let _serial = serial();
    let Some(java) = jdk25() else { return };
    let extra = ",jdk.MethodTrace#enabled=true,\
                 jdk.MethodTrace#filter=JfrSplit::seventy;JfrSplit::thirty;JfrSplit::main";
    let (jfr, printed) = record_jfr(&java, "methodtrace", extra, "1");
    let (seventy, thirty) = printed_calls(&printed);
    assert!(seventy > 10, "{printed}");
    assert_eq!(stats_calls(&jfr, "JfrSplit.seventy"), seventy);
    assert_eq!(stats_calls(&jfr, "JfrSplit.thirty"), thirty);
    let tree = stdout(&jscope(&["tree", jfr.to_str().unwrap()]));
    let main_line = tree.lines().position(|l| l.contains("JfrSplit.main"));
    let thirty_line = tree.lines().position(|l| l.contains("JfrSplit.thirty"));
    assert!(
        matches!((main_line, thirty_line), (Some(m), Some(t)) if m < t),
        "main encloses the calls: {}",
        tree.lines().take(5).collect::<Vec<_>>().join("\n")
    );
    // `jscope queue` reads the traces as stats and tree do (it said "not a jscope
    // recording"): a queue whose enqueue is seventy() gets one request per call.
    let out = jscope(&[
        "queue",
        jfr.to_str().unwrap(),
        "--queue",
        "JfrSplit#seventy/JfrSplit#thirty",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(": {seventy} requests enqueued")),
        "{seventy} seventy calls: {text}"
    );
}

/// `jfr summary`'s count of one event type, and its chunk count: the JDK's own
/// reading of the file.
fn jfr_summary(jfr_tool: &Path, file: &Path, event: &str) -> (u64, u64) {
    let out = Command::new(jfr_tool)
        .arg("summary")
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let value = |prefix: &str| -> u64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix:?} in jfr summary: {text}"))
    };
    (value(&format!("{event} ")), value("Chunks:"))
}

/// Each `jcmd JFR.dump` of a running recording starts a new chunk, so the file
/// written at exit has several: jscope reads them all, as the JDK's `jfr` does.
#[test]
fn a_recording_dumped_mid_run_has_several_chunks_all_read() {
    let _serial = serial();
    for java in javas() {
        let Some(jcmd) = jcmd(&java) else { continue };
        let jfr_tool = jcmd.with_file_name("jfr");
        let dir = temp_dir(&format!("jfr-chunks-jdk{}", java.major));
        let file = dir.join("chunks.jfr");
        let mut cmd = Command::new(&java.bin);
        cmd.arg(format!(
            "-XX:StartFlightRecording=filename={},settings=profile",
            file.display()
        ))
        .arg("-Xlog:jfr=warning")
        .arg("-cp")
        .arg(classes())
        .args(["JfrSplit", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        let child = Child::spawn(&mut cmd);
        let pid = child.id().to_string();
        for n in 0..2 {
            let copy = dir.join(format!("dump{n}.jfr"));
            let dumped = wait_until(Duration::from_secs(30), || {
                let out = Command::new(&jcmd)
                    .args([pid.as_str(), "JFR.dump", "name=1"])
                    .arg(format!("filename={}", copy.display()))
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).contains("Dumped recording")
            });
            assert!(dumped, "jdk {}: jcmd JFR.dump never succeeded", java.major);
            std::thread::sleep(Duration::from_millis(300));
        }
        let out = child.finish(Duration::from_secs(120));
        assert!(out.status.success(), "jdk {}", java.major);
        let info = stdout(&jscope(&["info", file.to_str().unwrap()]));
        let chunks: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("chunks:"))
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("{info}"));
        let samples = Report::of(&file, &["--mode", "cpu"]).samples;
        if !jfr_tool.exists() {
            assert!(chunks >= 2, "jdk {}: {info}", java.major);
            continue;
        }
        let (jdk_samples, jdk_chunks) = jfr_summary(&jfr_tool, &file, "jdk.ExecutionSample");
        assert!(jdk_chunks >= 2, "jdk {}: {jdk_chunks} chunks", java.major);
        assert_eq!(
            (samples, chunks),
            (jdk_samples, jdk_chunks),
            "jdk {}",
            java.major
        );

        // Cut just inside the last chunk: the chunks before it are all kept.
        let bytes = std::fs::read(&file).unwrap();
        let last = *chunk_offsets(&bytes).last().unwrap();
        let cut = dir.join("cut.jfr");
        std::fs::write(&cut, &bytes[..last + 200]).unwrap();
        let out = jscope(&["report", cut.to_str().unwrap(), "--format", "json"]);
        assert!(out.status.success(), "jdk {}: {}", java.major, stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let kept = json["samples"].as_u64().unwrap();
        // Exactly the samples of the whole chunks before the cut (the last chunk
        // may hold none: JDK 25 takes few execution samples).
        let whole = dir.join("whole-chunks.jfr");
        std::fs::write(&whole, &bytes[..last]).unwrap();
        let before = Report::of(&whole, &["--mode", "cpu"]).samples;
        assert!(
            0 < kept && kept == before && kept <= samples,
            "jdk {}: {kept} of {samples} samples kept, {before} in the chunks before the cut",
            java.major
        );
    }
}
