//! `jscope diff` on exact traces of real JVMs: a method that became twice as slow
//! ranks first and is significant, two runs of the same program differ in nothing
//! significant, and a call made on one side only is a one-side-only subtree.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir};
use serde_json::Value;
use support::*;

fn classes() -> PathBuf {
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/diff_trace_fixtures"))
}

/// Traces `DiffApp ARGS` into DIR/NAME.
fn record(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    agent_path();
    let java = &javas()[0];
    let file = dir.join(name);
    let out = Command::new(jscope_bin())
        .args([
            "record", "--mode", "none", "--quiet", "--trace", "DiffApp", "-o",
        ])
        .arg(&file)
        .args(["--", java.bin.to_str().unwrap(), "-cp"])
        .arg(classes())
        .arg("DiffApp")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    file
}

fn diff(base: &Path, new: &Path) -> Value {
    jscope_json(&[
        "diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--format",
        "json",
    ])
}

#[test]
fn trace_diff_finds_the_slower_method_and_nothing_between_equal_runs() {
    let dir = temp_dir("diff-trace");
    // 40 rounds of steady() (10 ms) and work() (10 ms, then 20 ms).
    let base = record(&dir, "base.jsc", &["40", "10"]);
    let again = record(&dir, "again.jsc", &["40", "10"]);
    let slower = record(&dir, "slower.jsc", &["40", "20", "extra"]);

    let d = diff(&base, &slower);
    let first = &d["methods"][0];
    assert_eq!(first["method"], "DiffApp.work", "{d:#}");
    assert_eq!(first["significant"], true, "{first}");
    let change = first["p50_change"].as_f64().unwrap();
    assert!((0.7..1.3).contains(&change), "{first}");
    assert!(first["q_value"].as_f64().unwrap() < 1e-6, "{first}");
    let row = |m: &str| {
        d["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["method"] == m)
            .unwrap_or_else(|| panic!("no {m}: {d:#}"))
            .clone()
    };
    assert_eq!(row("DiffApp.steady")["significant"], false);
    assert_eq!(row("DiffApp.extra")["presence"], "new");
    // The one-side-only subtree: extra() under main, with helper() and pause().
    let only = d["tree"]["only_new"].as_array().unwrap();
    assert_eq!(only.len(), 1, "{:#}", d["tree"]);
    assert_eq!(
        only[0]["path"],
        serde_json::json!(["main", "DiffApp.main", "DiffApp.extra"])
    );
    assert_eq!(
        (only[0]["calls"].as_u64(), only[0]["nodes"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(d["tree"]["only_base"].as_array().unwrap().is_empty());
    let changed: Vec<&Value> = d["tree"]["changed"].as_array().unwrap().iter().collect();
    assert!(
        changed.iter().any(|c| c["path"]
            == serde_json::json!(["main", "DiffApp.main", "DiffApp.round", "DiffApp.work"])
            && c["duration_changed"] == true),
        "{:#}",
        d["tree"]
    );
    assert!(
        !changed
            .iter()
            .any(|c| c["path"].as_array().unwrap().last().unwrap() == "DiffApp.steady"),
        "{:#}",
        d["tree"]
    );

    let same = diff(&base, &again);
    let significant: Vec<&Value> = same["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["significant"] == true || m["presence"] != "both")
        .collect();
    assert!(significant.is_empty(), "{same:#}");
    let t = &same["tree"];
    assert!(
        t["changed"].as_array().unwrap().is_empty()
            && t["only_new"].as_array().unwrap().is_empty()
            && t["only_base"].as_array().unwrap().is_empty(),
        "{t:#}"
    );

    let text = stdout(&jscope(&[
        "diff",
        base.to_str().unwrap(),
        slower.to_str().unwrap(),
    ]));
    assert!(text.starts_with("trace diff: base "), "{text}");
    assert!(
        text.contains("only in new: [main] DiffApp.main > DiffApp.extra (3 calls"),
        "{text}"
    );
    let out = jscope(&[
        "diff",
        base.to_str().unwrap(),
        slower.to_str().unwrap(),
        "-o",
        dir.join("x.html").to_str().unwrap(),
    ]);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("jscope: differential flame graphs"));
}
