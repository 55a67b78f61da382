//! Services and labels end to end with real JVMs: `jscope record --service --label
//! --stream-to` into `jscope serve`, then the CLI reading a service, a label or all
//! JVMs merged, and wall-clock windows over the same JVM's file. On the first JDK
//! `jscope_testkit::javas()` finds.

mod serving;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, compile_fixtures, javas, temp_dir, wait_until, Child};
use serde_json::Value;
use support::*;

fn classes() -> PathBuf {
    agent_path();
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

fn samples(args: &[&str]) -> u64 {
    let json = jscope_json(&[&["report", "--format", "json", "--mode", "cpu"], args].concat());
    json["samples"].as_u64().unwrap()
}

fn collapsed_total(args: &[&str]) -> u64 {
    let out = jscope(&[&["collapsed", "--mode", "cpu"], args].concat());
    assert!(out.status.success(), "collapsed {args:?}: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

/// Collapsed stacks as a map, identical stacks added up (line order aside).
fn stacks(text: &str) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for l in text.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        *out.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    out
}

#[test]
fn recorded_services_and_labels_select_and_merge_real_jvms() {
    let Some(java) = javas().into_iter().next() else {
        panic!("no JDK found");
    };
    let dir = temp_dir("cli-fleet-jvm");
    let data = dir.join("data");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let agents = served.agents.unwrap().to_string();
    let jvms = [
        ("alpha", "shop", "prod"),
        ("beta", "shop", "dev"),
        ("gamma", "billing", "prod"),
    ];
    let mut children: Vec<Child> = jvms
        .iter()
        .map(|(which, service, env)| {
            let file = dir.join(format!("{which}.jsc"));
            Child::spawn(
                Command::new(jscope_bin())
                    .args(["record", "--mode", "cpu", "--stream-to", &agents])
                    .args(["--service", service, "--label", &format!("env={env}")])
                    .args(["--label", &format!("which={which}"), "-o"])
                    .arg(&file)
                    .arg("--")
                    .arg(&java.bin)
                    .arg("-cp")
                    .arg(classes())
                    .args(["Hot", which, "3000"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit()),
            )
        })
        .collect();
    for c in &mut children {
        let status = c
            .wait_timeout(Duration::from_secs(60))
            .expect("record ends");
        assert!(status.success(), "{status}");
    }
    let rows = || -> Vec<Value> { served.json("/api/jvms").as_array().unwrap().clone() };
    assert!(
        wait_until(Duration::from_secs(20), || {
            let r = rows();
            r.len() == 3 && r.iter().all(|r| r["status"] == "gone")
        }),
        "{:?}",
        rows()
    );
    // The JVM list carries the header's service and labels.
    let rows = rows();
    let row = |which: &str| {
        rows.iter()
            .find(|r| r["labels"]["which"] == which)
            .unwrap_or_else(|| panic!("{which} in {rows:?}"))
            .clone()
    };
    for (which, service, env) in jvms {
        let r = row(which);
        assert_eq!(
            (r["service"].as_str(), r["labels"]["env"].as_str()),
            (Some(service), Some(env)),
            "{r}"
        );
    }
    let url = served.url();
    let text = stdout(&jscope(&["jvms", "--collector", &url]));
    assert!(
        text.lines().any(|l| l.contains("billing")
            && l.contains("env=prod,which=gamma")
            && l.ends_with(" Hot")),
        "{text}"
    );

    // Each JVM alone, then merged.
    let id = |which: &str| row(which)["id"].as_str().unwrap().to_string();
    let one = |which: &str| samples(&["--collector", &url, "--jvm", &id(which)]);
    let (a, b, c) = (one("alpha"), one("beta"), one("gamma"));
    // A few only when the machine is busy; each JVM spins for 3 s.
    assert!(a > 5 && b > 5 && c > 5, "{a} {b} {c}");
    let shop = jscope_json(&[
        "report",
        "--format",
        "json",
        "--mode",
        "cpu",
        "--collector",
        &url,
        "--service",
        "shop",
        "--since",
        "10m",
    ]);
    assert_eq!(shop["samples"].as_u64(), Some(a + b), "{shop}");
    let methods: Vec<&str> = shop["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert!(
        methods.contains(&"Hot.alpha") && methods.contains(&"Hot.beta"),
        "{methods:?}"
    );
    assert!(!methods.contains(&"Hot.gamma"), "{methods:?}");

    // The collector aggregates (/api/hot, /api/flame); reading the same JVMs'
    // recordings one by one from its data directory and merging them gives the same.
    let data_dir = data.to_str().unwrap().to_string();
    for pick in [
        &["--service", "shop"][..],
        &["--label", "env=prod"],
        &["--jvm", "all"],
        &["--service", "shop", "--label", "env=dev"],
    ] {
        let via = |source: &[&str], window: &[&str]| {
            let args = [source, pick, window].concat();
            let report = jscope_json(
                &[
                    &[
                        "report", "--format", "json", "--mode", "cpu", "--top", "1000",
                    ],
                    &args[..],
                ]
                .concat(),
            );
            let out = jscope(&[&["collapsed", "--mode", "cpu"], &args[..]].concat());
            assert!(out.status.success(), "collapsed {args:?}: {}", stderr(&out));
            (report, stacks(&stdout(&out)))
        };
        let (api_report, api_stacks) = via(&["--collector", &url], &["--since", "10m"]);
        let (files_report, files_stacks) = via(&["--data", &data_dir], &[]);
        assert_eq!(api_report, files_report, "{pick:?}");
        assert_eq!(api_stacks, files_stacks, "{pick:?}");
        assert!(api_report["samples"].as_u64().unwrap() > 0, "{pick:?}");
    }
    // The API's own selection parameters name the same JVMs.
    let hot = served.json("/api/hot?service=shop&since=10m&mode=cpu&limit=1000");
    assert_eq!(hot["samples"].as_u64(), Some(a + b), "{hot}");
    let prod = served.json("/api/flame?label=env%3Dprod&from=-10m&format=json");
    assert_eq!(prod["samples"].as_u64(), Some(a + c), "{prod}");
    let listed = served.json("/api/jvms?service=shop&label=env%3Ddev");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["labels"]["which"], "beta", "{listed}");

    let data = data.to_str().unwrap();
    let each: u64 = ["alpha", "beta", "gamma"]
        .iter()
        .map(|w| collapsed_total(&["--data", data, "--jvm", &id(w)]))
        .sum();
    assert_eq!(each, a + b + c);
    assert_eq!(collapsed_total(&["--data", data, "--jvm", "all"]), each);
    assert_eq!(
        collapsed_total(&["--data", data, "--label", "env=prod"]),
        a + c
    );

    // The file carries the same start; a wall-clock window over it cuts exactly as
    // the same seconds from the start do.
    let file = dir.join("alpha.jsc");
    let file = file.to_str().unwrap();
    let start = row("alpha")["started_ns"].as_u64().unwrap();
    assert_eq!(
        samples(&[file]),
        a,
        "the file and the collector hold the same"
    );
    let mut cut = 0;
    for (from, to) in [(0.5, 1.5), (1.0, 2.25), (1.75, 600.0)] {
        let at = |s: f64| rfc3339(start + (s * 1e9) as u64);
        let seconds = samples(&[file, "--from", &from.to_string(), "--to", &to.to_string()]);
        let wall = samples(&[file, "--from", &at(from), "--to", &at(to)]);
        assert_eq!(wall, seconds, "[{from}, {to})");
        assert!(seconds <= a, "[{from}, {to}) holds {seconds} of {a}");
        cut += seconds;
        let data_wall = samples(&[
            "--data",
            data,
            "--jvm",
            &id("alpha"),
            "--from",
            &at(from),
            "--to",
            &at(to),
        ]);
        assert_eq!(data_wall, seconds, "collector data, [{from}, {to})");
    }
    assert!(cut > 0, "the windows hold samples");
    assert!(served.interrupt());
}
