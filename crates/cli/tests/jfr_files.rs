//! Every reading command on a JFR file kept as test data (async-profiler's, see
//! crates/jfr/tests/data/README.md), and the errors for what is not JFR.

mod serving;
mod support;

use std::path::PathBuf;
use std::time::Duration;

use jscope_testkit::temp_dir;
use support::*;

fn async_profiler_jfr() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../jfr/tests/data/async-profiler.jfr")
}

fn ok(args: &[&str]) -> String {
    let out = jscope(args);
    assert!(out.status.success(), "jscope {args:?}: {}", stderr(&out));
    assert_eq!(stderr(&out), "", "jscope {args:?}");
    stdout(&out)
}

#[test]
fn the_reading_commands_read_async_profiler_jfr() {
    let f = async_profiler_jfr();
    let f = f.to_str().unwrap();
    let report = Report::of(async_profiler_jfr().as_path(), &[]);
    assert!(report.samples > 100, "{}", report.samples);
    assert!(report.percent("ApFixture.contend").is_some());
    assert!(ok(&["report", f, "--mode", "wall"]).contains("ApFixture.contend"));
    assert!(ok(&["collapsed", f]).contains("ApFixture.main;ApFixture.burn"));
    assert!(ok(&["callgraph", f]).contains("ApFixture.contend"));
    let html = temp_dir("jfr-flame").join("flame.html");
    ok(&["flame", f, "-o", html.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("ApFixture.burn"));
    let info = ok(&["info", f]);
    assert!(
        info.contains("async-profiler (JFR)") && info.contains("ApFixture"),
        "{info}"
    );
    let locks = ok(&["locks", f]);
    assert!(
        locks.contains("java.lang.Object") && locks.contains("ApFixture.contend"),
        "{locks}"
    );
    assert!(ok(&["alloc", f, "--by", "class"]).contains("[B"));
    assert!(ok(&["events", f, "--type", "monitor"]).contains("contender-"));
    assert!(ok(&["diff", f, f]).contains("ApFixture.contend"));
}

#[test]
fn what_is_not_jfr_or_jscope_is_one_error_line() {
    let dir = temp_dir("not-jfr");
    let file = dir.join("notes.jfr");
    std::fs::write(&file, b"hello, this is text").unwrap();
    let out = jscope(&["report", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("not a jscope recording or a JFR file"),
        "{err}"
    );
    let jsc = dir.join("out.jsc");
    let out = jscope(&[
        "convert",
        file.to_str().unwrap(),
        "-o",
        jsc.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a JFR file"),
        "{}",
        stderr(&out)
    );
    assert!(!jsc.exists());
}

#[test]
fn a_cut_jfr_file_is_converted_up_to_the_cut_with_one_warning() {
    let bytes = std::fs::read(async_profiler_jfr()).unwrap();
    let dir = temp_dir("cut-jfr");
    let cut = dir.join("cut.jfr");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let jsc = dir.join("cut.jsc");
    let out = jscope(&[
        "convert",
        cut.to_str().unwrap(),
        "-o",
        jsc.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("chunk cut") && err.contains("read up to there"),
        "{err}"
    );
    // The .jsc holds what was read, and is whole.
    let out = jscope(&["info", jsc.to_str().unwrap()]);
    assert!(
        out.status.success() && stderr(&out).is_empty(),
        "{}",
        stderr(&out)
    );
}

/// `jscope view` serves through the collector's store, which reads `.jsc`: a JFR
/// file is served from a converted copy, removed when the view stops.
#[test]
fn view_serves_a_jfr_file_from_a_copy_it_removes() {
    let f = async_profiler_jfr();
    let mut served = serving::start(
        &jscope_bin(),
        &["view", f.to_str().unwrap(), "--http", "127.0.0.1:0"],
    );
    let jvms = served.json("/api/jvms");
    assert_eq!(jvms.as_array().unwrap().len(), 1, "{jvms}");
    assert!(
        jvms[0]["command_line"]
            .as_str()
            .unwrap()
            .contains("ApFixture"),
        "{jvms}"
    );
    let pid = served.child.id();
    let copy = std::env::temp_dir().join(format!("jscope-{pid}-async-profiler.jsc"));
    assert!(copy.is_file(), "{}", copy.display());
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    assert!(served.child.wait_timeout(Duration::from_secs(20)).is_some());
    assert!(!copy.exists(), "{} left behind", copy.display());
}

/// A file cut before its first sample has no samples because of the cut, not
/// because it "was recorded without sampling".
#[test]
fn a_jfr_file_cut_before_any_sample_says_so_not_that_it_had_no_sampling() {
    let bytes = std::fs::read(async_profiler_jfr()).unwrap();
    let dir = temp_dir("cut-early-jfr");
    let cut = dir.join("cut.jfr");
    std::fs::write(&cut, &bytes[..100]).unwrap();
    let out = jscope(&["report", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("damaged at byte") && !err.contains("without sampling"),
        "{err}"
    );
    assert!(err.contains("no samples before its damage"), "{err}");
}
