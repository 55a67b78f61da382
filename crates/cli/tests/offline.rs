//! The analysis commands on recordings written with the format crate: output
//! shapes, damage handling, errors and pipes. No JVM involved.

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use jscope_testkit::temp_dir;
use support::*;

fn write_recording(name: &str, bytes: &[u8]) -> PathBuf {
    let path = temp_dir(name).join("rec.jsc");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn damage_warning(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("jscope: warning: "))
        .unwrap_or_else(|| panic!("no warning in {stderr:?}"));
    assert!(line.ends_with("; read up to there"), "{line}");
    let after = line
        .split(" is damaged at byte ")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    let offset = after.split(' ').next().unwrap().parse().unwrap();
    let chunk = after
        .split("(chunk ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        stderr.lines().count(),
        1,
        "one warning line only: {stderr:?}"
    );
    (offset, chunk)
}

#[test]
fn report_of_an_intact_recording_has_every_sample_and_no_warning() {
    let file = write_recording("intact", &synthetic_recording().bytes);
    let out = jscope(&["report", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(stderr(&out), "");
    let text = stdout(&out);
    assert!(text.starts_with("30 samples (cpu)"), "{text}");
    assert!(text.contains("33.33%  demo.App.first"), "{text}");
    let report = Report::of(&file, &[]);
    assert_eq!(report.samples, 30);
    assert_eq!(report.percent("demo.App.main"), Some((0.0, 100.0)));
}

#[test]
fn truncated_recording_is_read_up_to_the_torn_chunk() {
    let rec = synthetic_recording();
    let cut = rec.chunk_offsets[2] + 7;
    let file = write_recording("truncated", &rec.bytes[..cut]);
    let out = jscope(&["report", file.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (offset, chunk) = damage_warning(&stderr(&out));
    assert_eq!(offset, rec.chunk_offsets[2] as u64);
    assert_eq!(chunk, 3);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["samples"], 20);
    assert!(stderr(&out).contains(file.to_str().unwrap()));
}

#[test]
fn corrupted_chunk_stops_reading_there() {
    let rec = synthetic_recording();
    let mut bytes = rec.bytes.clone();
    let inside_second = (rec.chunk_offsets[1] + rec.chunk_offsets[2]) / 2;
    bytes[inside_second] ^= 0x5a;
    let file = write_recording("corrupted", &bytes);
    let out = jscope(&["report", file.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (offset, chunk) = damage_warning(&stderr(&out));
    assert_eq!((offset, chunk), (rec.chunk_offsets[1] as u64, 2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["samples"], 10);
    assert_eq!(json["methods"][0]["method"], "demo.App.first");
    // Every reading command warns the same way and still works.
    for cmd in ["info", "collapsed", "callgraph"] {
        let out = jscope(&[cmd, file.to_str().unwrap()]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
        assert_eq!(damage_warning(&stderr(&out)), (offset, chunk), "{cmd}");
    }
}

#[test]
fn info_reports_damage_and_counts() {
    let rec = synthetic_recording();
    let file = write_recording("info", &rec.bytes[..rec.chunk_offsets[2] + 3]);
    let json = jscope_json(&["info", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(json["samples"]["cpu"], 20);
    assert_eq!(json["ended_cleanly"], false);
    assert!(json["damage"]
        .as_str()
        .unwrap()
        .starts_with("damaged at byte"));
    assert_eq!(json["vm_name"], "Synthetic VM");
    let text = stdout(&jscope(&["info", file.to_str().unwrap()]));
    assert!(text.contains("samples:    20 cpu"), "{text}");
    assert!(text.contains("damage:"), "{text}");
}

#[test]
fn collapsed_and_callgraph_print_to_stdout() {
    let file = write_recording("collapsed", &synthetic_recording().bytes);
    let out = stdout(&jscope(&["collapsed", file.to_str().unwrap(), "--lines"]));
    assert_eq!(
        out,
        "demo.App.main:3;demo.App.first:30 10\ndemo.App.main:3;demo.App.second:40 10\ndemo.App.main:3;demo.App.third:50 10\n"
    );
    let dot = stdout(&jscope(&["callgraph", file.to_str().unwrap(), "--dot"]));
    assert!(dot.starts_with("digraph jscope {"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 3, "{dot}");
    let window = stdout(&jscope(&[
        "collapsed",
        file.to_str().unwrap(),
        "--from",
        "0.1",
        "--to",
        "0.2",
    ]));
    assert_eq!(window, "demo.App.main;demo.App.second 10\n");
}

#[test]
fn threads_without_snapshots_is_a_one_line_error() {
    let file = write_recording("nosnap", &synthetic_recording().bytes);
    let out = jscope(&["threads", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "jscope: the recording has no snapshots (record with --mode snapshot)\n"
    );
}

#[test]
fn errors_are_one_line_with_exit_code_1() {
    let file = write_recording("errors", &synthetic_recording().bytes);
    let f = file.to_str().unwrap();
    let not_a_recording = write_recording("garbage", b"hello, this is not a recording");
    for args in [
        vec!["report", "/nonexistent/x.jsc"],
        vec!["report", not_a_recording.to_str().unwrap()],
        vec!["report", f, "--mode", "gpu"],
        vec!["report", f, "--state", "dozing"],
        vec!["report", f, "--from", "2", "--to", "1"],
        // --jvm picks a collector's JVM: on a file it was silently ignored.
        vec!["report", f, "--jvm", "123"],
        vec!["report", f, "--service", "shop"],
        vec!["report"],
        vec!["bogus"],
        vec!["record", "-o", "x.jsc"],
    ] {
        let out = jscope(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("jscope: ") && err.lines().count() == 1,
            "{args:?}: {err:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn every_command_has_help() {
    for cmd in [
        "record",
        "attach",
        "stop",
        "report",
        "flame",
        "collapsed",
        "callgraph",
        "threads",
        "info",
    ] {
        let out = jscope(&[cmd, "--help"]);
        assert!(out.status.success(), "{cmd}");
        assert!(stdout(&out).contains("Usage: jscope"), "{cmd}");
    }
    // The reading commands take JFR files too; their help said `.jsc` only.
    for cmd in [
        "report",
        "flame",
        "collapsed",
        "callgraph",
        "info",
        "events",
        "locks",
        "gc",
        "alloc",
        "tree",
        "stats",
        "queue",
        "export",
        "view",
    ] {
        let help = stdout(&jscope(&[cmd, "--help"]));
        assert!(help.contains("JFR"), "{cmd}: {help}");
    }
}

#[test]
fn closed_stdout_is_success() {
    // The pipe's read end is closed before jscope starts, so its first write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let file = write_recording("pipe", &synthetic_recording().bytes);
    let out = Command::new(jscope_bin())
        .args(["collapsed", file.to_str().unwrap()])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn flame_writes_html_and_svg() {
    let file = write_recording("flame", &synthetic_recording().bytes);
    let dir = file.parent().unwrap();
    for name in ["out.html", "out.svg"] {
        let out_path = dir.join(name);
        let out = jscope(&[
            "flame",
            file.to_str().unwrap(),
            "-o",
            out_path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let page = std::fs::read_to_string(&out_path).unwrap();
        assert!(page.contains("demo.App.second"), "{name}");
        if name.ends_with(".svg") {
            assert!(
                page.trim_start().starts_with("<?xml") || page.trim_start().starts_with("<svg"),
                "{name}"
            );
        } else {
            assert!(
                page.contains("<html") || page.contains("<!DOCTYPE"),
                "{name}"
            );
        }
    }
}

#[test]
fn record_with_a_missing_agent_is_a_one_line_error() {
    let out = Command::new(jscope_bin())
        .args(["record", "-o", "/tmp/never.jsc", "--", "java", "-version"])
        .env("JSCOPE_AGENT", "/nonexistent/libjscope_agent.so")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "jscope: JSCOPE_AGENT=/nonexistent/libjscope_agent.so is not a file\n"
    );
}

/// A --thread or --state that keeps no sample printed an empty table without a
/// word why (a mistyped thread name, or a state cpu samples do not carry).
#[test]
fn a_thread_or_state_filter_that_keeps_nothing_gets_a_note_saying_which() {
    let file = write_recording("empty-filter", &synthetic_recording().bytes);
    let f = file.to_str().unwrap();
    let out = jscope(&["report", f, "--thread", "no-such-thread"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "jscope: note: --thread 'no-such-thread' matches no thread of rec.jsc (its threads: "
        ),
        "{err}"
    );
    let out = jscope(&["report", f, "--state", "parked"]);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("jscope: note: no cpu sample of rec.jsc is in state parked (they are: "),
        "{err}"
    );
    // A filter that keeps samples says nothing.
    let out = jscope(&["report", f, "--thread", "main"]);
    assert_eq!(stderr(&out), "");
}

/// An output directory that does not exist: java ran the whole program, the
/// agent disabled itself, and jscope said the JVM "did not start or did not load
/// jscope's agent".
#[test]
fn record_into_a_missing_directory_is_a_one_line_error_before_java_runs() {
    let out = Command::new(jscope_bin())
        .args([
            "record",
            "-o",
            "/nonexistent/dir/x.jsc",
            "--",
            "java",
            "-version",
        ])
        .env("JSCOPE_AGENT", "/nonexistent/libjscope_agent.so")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "jscope: cannot write /nonexistent/dir/x.jsc: the directory /nonexistent/dir does not exist\n"
    );
}

/// A window that holds none of the samples (past the end, or `--since` on an old
/// file) printed an empty table without a word why.
#[test]
fn a_window_without_samples_gets_a_note_with_the_recordings_span() {
    let file = write_recording("empty-window", &synthetic_recording().bytes);
    let f = file.to_str().unwrap();
    let out = jscope(&["report", f, "--from", "1000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("0 samples (cpu)"),
        "{}",
        stdout(&out)
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("jscope: note: ")
            && err.contains("no cpu samples in the window 1000.000.. s")
            && err.contains("it runs from 0 to "),
        "{err}"
    );
    let out = jscope(&["report", f, "--since", "1m"]);
    assert!(
        stderr(&out).contains("no cpu samples in the window"),
        "{}",
        stderr(&out)
    );
    // A window with samples says nothing.
    let out = jscope(&["report", f, "--from", "0"]);
    assert_eq!(stderr(&out), "");
    // diff's own error on an empty side says it: one line, no note before it.
    let side = format!("{f}@1000..2000");
    let out = jscope(&["diff", &side, f]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nothing to compare"), "{err}");
}

/// A wrong flag pointed at `jscope --help` (which lists commands, not the flag's
/// command's options) and ran clap's tip on: `'--bogus' found tip: ...`.
#[test]
fn a_wrong_flag_points_at_its_commands_help() {
    let file = write_recording("wrong-flag", &synthetic_recording().bytes);
    let out = jscope(&["report", file.to_str().unwrap(), "--bogus"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'--bogus' found; tip:"), "{err}");
    assert!(
        err.trim_end().ends_with("(see jscope report --help)"),
        "{err}"
    );
    let err = stderr(&jscope(&["bogus"]));
    assert!(err.trim_end().ends_with("(see jscope --help)"), "{err}");
    // A bad value: clap's own "For more information, try '--help'." went before it.
    let err = stderr(&jscope(&["threads", file.to_str().unwrap(), "--at", "abc"]));
    assert!(!err.contains("For more information"), "{err}");
    assert!(
        err.trim_end().ends_with("(see jscope threads --help)"),
        "{err}"
    );
}
