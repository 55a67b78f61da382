//! Stacks that do not name the code that ran, on real JVMs (each JDK testkit
//! finds) running `tests/stack_fixtures/StubLoop.java`, a loop whose time is in
//! the arraycopy stub: walked by AsyncGetCallTrace (`cstack=asgct`) most of its
//! samples are `[unknown_java]`, and every reading command says so in one line;
//! `jscope info` names the walker; no sample is left out of collapsed stacks.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, Child, Java};
use support::{jscope, stderr, stdout, Report};

fn record(java: &Java, cstack: &str) -> PathBuf {
    let classes =
        compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stack_fixtures"));
    let file = temp_dir(&format!("stack-health-{cstack}-{}", java.major)).join("app.jsc");
    let agent = format!(
        "-agentpath:{}=mode=cpu,interval=1ms,cstack={cstack},quiet,file={}",
        agent_path().display(),
        file.display()
    );
    let mut cmd = Command::new(&java.bin);
    cmd.args([
        &agent,
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:+DebugNonSafepoints",
        "-cp",
    ])
    .arg(classes)
    .args(["StubLoop", "1500"])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let out = Child::spawn(&mut cmd).finish(Duration::from_secs(120));
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout) == "done\n",
        "JDK {}: {}",
        java.major,
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The sum of the counts of collapsed lines.
fn collapsed_total(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

#[test]
fn unknown_stacks_make_every_reader_warn_in_one_line() {
    for java in javas() {
        let f = record(&java, "asgct");
        let info = stdout(&jscope(&["info", s(&f)]));
        assert!(
            info.contains("stack walker asgct"),
            "JDK {}: {info}",
            java.major
        );
        let line = info
            .lines()
            .find(|l| l.trim_start().starts_with("unknown_java"))
            .unwrap_or_else(|| panic!("JDK {}: no unknown_java line: {info}", java.major));
        assert!(line.ends_with("%)"), "{line}");

        let report = Report::of(&f, &[]);
        let unknown = report.json["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["method"] == "[unknown_java]")
            .unwrap_or_else(|| panic!("JDK {}: {}", java.major, report.json));
        let unknown = unknown["self_samples"].as_u64().unwrap();
        assert!(
            unknown * 100 > report.samples,
            "JDK {}: {unknown} of {}",
            java.major,
            report.samples
        );

        let prefix = "jscope: warning: app.jsc: ";
        let what = "cpu samples have no complete Java stack (unknown_java ";
        for args in [
            vec!["report", s(&f)],
            vec!["collapsed", s(&f)],
            vec!["callgraph", s(&f)],
            vec!["export", s(&f), "--format", "collapsed"],
        ] {
            let out = jscope(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            let err = stderr(&out);
            let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with(prefix)).collect();
            assert_eq!(warnings.len(), 1, "JDK {}: {args:?}: {err}", java.major);
            let w = warnings[0];
            assert!(
                w.contains(&format!("of {} {what}", group(report.samples)))
                    && w.contains(&format!("unknown_java {unknown}"))
                    && w.ends_with("; see jscope info"),
                "JDK {}: {w}",
                java.major
            );
        }
        let flame = f.with_extension("svg");
        let out = jscope(&["flame", s(&f), "-o", s(&flame)]);
        assert!(stderr(&out).starts_with(prefix), "{}", stderr(&out));
        // No sample is left out of the collapsed stacks.
        let collapsed = stdout(&jscope(&["collapsed", s(&f)]));
        assert_eq!(collapsed_total(&collapsed), report.samples);
    }
}

#[test]
fn the_vm_walker_is_named_and_leaves_no_sample_out() {
    for java in javas() {
        let f = record(&java, "vm");
        let info = stdout(&jscope(&["info", s(&f)]));
        assert!(
            info.contains("stack walker vm"),
            "JDK {}: {info}",
            java.major
        );
        let report = Report::of(&f, &[]);
        let collapsed = stdout(&jscope(&["collapsed", s(&f), "--annotate"]));
        assert_eq!(collapsed_total(&collapsed), report.samples);
        // The loop's own frame is JIT-compiled, by C1 or C2.
        assert!(
            collapsed.contains("StubLoop.main_[j]") || collapsed.contains("StubLoop.main_[1]"),
            "JDK {}: {collapsed}",
            java.major
        );
    }
}

/// `1945` as `1,945`, as the warning writes counts.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
