//! `jscope diff`: two recordings of the same fixture, one where a method does
//! four times the work, compared as a table, as JSON and as a differential
//! flame graph; and the one-line errors for unusable sides.

mod support;

use std::path::{Path, PathBuf};

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Java};
use serde_json::Value;
use support::*;

fn classes() -> PathBuf {
    agent_path();
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff_fixtures"))
}

fn f(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Records `java -cp CLASSES Shift SECONDS FACTOR` with cpu sampling every 5 ms.
fn record_shift(java: &Java, dir: &Path, name: &str, factor: &str) -> PathBuf {
    let file = dir.join(format!("{name}.jsc"));
    record(
        &file,
        &["--mode", "cpu", "--interval", "5ms"],
        &java.bin,
        &classes(),
        &["Shift", "2", factor],
    );
    file
}

#[test]
fn diff_ranks_the_method_whose_share_grew_first() {
    let java = javas().into_iter().next().expect("a java");
    let dir = temp_dir("diff-shift");
    let base = record_shift(&java, &dir, "base", "1");
    let new = record_shift(&java, &dir, "new", "4");

    let json: Value = jscope_json(&["diff", f(&base), f(&new), "--format", "json"]);
    assert_eq!(json["mode"], "cpu", "{json:#}");
    let (base_n, new_n) = (
        json["base_samples"].as_u64().unwrap(),
        json["new_samples"].as_u64().unwrap(),
    );
    // 2 s of the thread's CPU time at 5 ms is about 400 samples a side.
    assert!(
        base_n >= 200 && new_n >= 200,
        "{base_n} and {new_n} samples"
    );
    let rows = json["methods"].as_array().unwrap();
    let first = &rows[0];
    assert_eq!(first["method"], "Shift.grows", "{json:#}");
    assert_eq!(first["presence"], "both");
    assert_eq!(first["significant"], true, "{json:#}");
    // A third before, two thirds after: +33 points, with sampling slack.
    let delta = first["self_delta"].as_f64().unwrap();
    assert!(
        (20.0..=45.0).contains(&delta),
        "grows changed {delta:+.1} pp"
    );
    let row = |name: &str| rows.iter().find(|r| r["method"] == name).unwrap();
    for shrunk in ["Shift.steady", "Shift.other"] {
        let d = row(shrunk)["self_delta"].as_f64().unwrap();
        assert!((-25.0..=-8.0).contains(&d), "{shrunk} changed {d:+.1} pp");
    }

    let text = jscope(&["diff", f(&base), f(&new), "--top", "2"]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = stdout(&text);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[3].ends_with("Shift.grows"), "{text}");

    let html = dir.join("diff.html");
    let out = jscope(&["diff", f(&base), f(&new), "-o", f(&html)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for method in ["Shift.grows", "Shift.steady", "Shift.other"] {
        assert!(page.contains(&format!("<title>{method} (")), "{method}");
    }
    // grows grew: red, with both shares in its tooltip.
    let grows = page
        .lines()
        .find(|l| l.contains("<title>Shift.grows ("))
        .unwrap();
    assert!(grows.contains("fill=\"rgb(255,"), "{grows}");
    assert!(grows.contains("base ") && grows.contains(" pp)"), "{grows}");

    let svg = dir.join("diff.svg");
    let out = jscope(&["diff", f(&base), f(&new), "-o", f(&svg)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));

    // A side without samples of the chosen mode names the side and what it has.
    let out = jscope(&["diff", f(&base), f(&new), "--mode", "wall"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.starts_with("jscope: the base side base.jsc has no wall samples (it has ")
            && err.contains(" cpu)")
            && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn two_runs_of_an_unchanged_fixture_show_no_significant_difference() {
    let java = javas().into_iter().next().expect("a java");
    let dir = temp_dir("diff-same");
    let base = record_shift(&java, &dir, "base", "1");
    let new = record_shift(&java, &dir, "new", "1");
    let json: Value = jscope_json(&["diff", f(&base), f(&new), "--format", "json"]);
    let rows = json["methods"].as_array().unwrap();
    assert!(rows.len() >= 3, "{json:#}");
    for row in rows {
        assert_eq!(row["significant"], false, "{row:#}");
    }
    let text = stdout(&jscope(&["diff", f(&base), f(&new)]));
    // The marker is the column after the total change (method names may hold a
    // `*`, as in a native frame's `*const T`).
    assert!(
        text.lines()
            .skip(3)
            .all(|l| l.split_whitespace().nth(6) != Some("*")),
        "{text}"
    );
}

#[test]
fn diff_of_a_missing_file_says_which_side_in_one_line() {
    let base = temp_dir("diff-missing").join("base.jsc");
    std::fs::write(&base, synthetic_recording().bytes).unwrap();
    let out = jscope(&["diff", f(&base), "/nonexistent/new.jsc"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.starts_with("jscope: new side: cannot read /nonexistent/new.jsc")
            && err.lines().count() == 1,
        "{err}"
    );
}
