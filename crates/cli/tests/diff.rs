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

    // Shares of the main thread's samples, the only thread running Shift: every
    // thread of the JVM is sampled (compiler and GC threads too, a part that varies
    // from run to run), so shares of all samples would not be a third each.
    let main = ["--thread", "main"];
    let json: Value =
        jscope_json(&[&["diff", f(&base), f(&new), "--format", "json"], &main[..]].concat());
    assert_eq!(json["mode"], "cpu", "{json:#}");
    let (base_n, new_n) = (
        json["base_samples"].as_u64().unwrap() as f64,
        json["new_samples"].as_u64().unwrap() as f64,
    );
    // 2 s of the thread's CPU time at 5 ms is about 400 samples a side.
    assert!(
        base_n >= 200.0 && new_n >= 200.0,
        "{base_n} and {new_n} samples"
    );
    // A share's change within four binomial standard deviations of the expected
    // one, plus 2 points for the main loop's own samples.
    let margin = |p_base: f64, p_new: f64| {
        let var = p_base * (1.0 - p_base) / base_n + p_new * (1.0 - p_new) / new_n;
        100.0 * 4.0 * var.sqrt() + 2.0
    };
    let rows = json["methods"].as_array().unwrap();
    let first = &rows[0];
    assert_eq!(first["method"], "Shift.grows", "{json:#}");
    assert_eq!(first["presence"], "both");
    assert_eq!(first["significant"], true, "{json:#}");
    let row = |name: &str| rows.iter().find(|r| r["method"] == name).unwrap();
    // grows: a third before, two thirds after; steady and other: a third, then a sixth.
    for (method, before, after) in [
        ("Shift.grows", 1.0 / 3.0, 2.0 / 3.0),
        ("Shift.steady", 1.0 / 3.0, 1.0 / 6.0),
        ("Shift.other", 1.0 / 3.0, 1.0 / 6.0),
    ] {
        let d = row(method)["self_delta"].as_f64().unwrap();
        let want = 100.0 * (after - before);
        let m = margin(before, after);
        assert!(
            (d - want).abs() <= m,
            "{method} changed {d:+.1} pp, expected {want:+.1} ± {m:.1} ({base_n} and {new_n} samples)"
        );
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
    // The main thread's shares, as above: other threads' parts vary between runs.
    let json: Value = jscope_json(&[
        "diff",
        f(&base),
        f(&new),
        "--thread",
        "main",
        "--format",
        "json",
    ]);
    let rows = json["methods"].as_array().unwrap();
    assert!(rows.len() >= 3, "{json:#}");
    for row in rows {
        assert_eq!(row["significant"], false, "{row:#}");
    }
    let text = stdout(&jscope(&["diff", f(&base), f(&new), "--thread", "main"]));
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
