//! Regression tests named after what a new user saw (issue 15, "a newcomer's first
//! hour"): each asserts the message or behaviour that replaced a puzzling one.

mod support;

use std::path::PathBuf;

use jscope_testkit::temp_dir;
use support::*;

fn synthetic_file(name: &str) -> PathBuf {
    let file = temp_dir(name).join("synthetic.jsc");
    std::fs::write(&file, synthetic_recording().bytes).unwrap();
    file
}

/// One line of stderr, starting `jscope: `.
fn one_error_line(out: &std::process::Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("jscope: ")).collect();
    assert_eq!(lines.len(), 1, "one jscope line expected: {err}");
    lines[0].to_string()
}

#[test]
fn record_java_without_double_dash_said_unexpected_argument_java() {
    let out = jscope(&["record", "-o", "x.jsc", "java", "-cp", "classes", "Main"]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(line.contains("'java'"), "{line}");
    assert!(line.contains("put `--` before the java command"), "{line}");
}

#[test]
fn record_ls_said_see_the_agents_message_above_with_no_message_above() {
    let dir = temp_dir("record-ls");
    let file = dir.join("ls.jsc");
    let out = jscope(&["record", "-o", file.to_str().unwrap(), "--", "true"]);
    // `true` succeeded, but nothing was recorded: that is a failure.
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(!line.contains("above"), "{line}");
    assert!(line.contains("`true` exited with code 0"), "{line}");
    assert!(line.contains("is not a JVM"), "{line}");
    assert!(line.contains("no recording was written"), "{line}");
}

#[test]
fn port_in_use_said_address_already_in_use_twice() {
    let file = synthetic_file("port-in-use");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = jscope(&["view", file.to_str().unwrap(), "--http", &addr]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert_eq!(line.matches("in use").count(), 1, "{line}");
    assert!(line.contains(&addr), "{line}");
    let data = temp_dir("port-in-use-serve");
    let out = jscope(&[
        "serve",
        "--data",
        data.to_str().unwrap(),
        "--agents",
        &addr,
        "--http",
        "127.0.0.1:0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert_eq!(line.matches("in use").count(), 1, "{line}");
}

#[test]
fn recording_cut_inside_its_header_was_called_not_a_jscope_recording() {
    let synthetic = synthetic_recording();
    let dir = temp_dir("cut-header");
    let cut = dir.join("cut.jsc");
    // Inside the header chunk: after the magic, before the first data chunk.
    std::fs::write(&cut, &synthetic.bytes[..synthetic.chunk_offsets[0] - 5]).unwrap();
    let out = jscope(&["info", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out);
    assert!(!line.contains("not a jscope recording"), "{line}");
    assert!(line.contains("damaged recording"), "{line}");
    assert!(line.contains("at byte 8"), "{line}");
    assert!(line.contains("truncated"), "{line}");
    // Only the magic: also a cut recording, not a foreign file.
    std::fs::write(&cut, &synthetic.bytes[..8]).unwrap();
    let line = one_error_line(&jscope(&["info", cut.to_str().unwrap()]));
    assert!(
        line.contains("damaged recording") && line.contains("byte 8"),
        "{line}"
    );
    // A file that is not a recording at all still says so.
    std::fs::write(&cut, b"hello world").unwrap();
    let line = one_error_line(&jscope(&["info", cut.to_str().unwrap()]));
    assert!(line.contains("not a jscope recording"), "{line}");
}
