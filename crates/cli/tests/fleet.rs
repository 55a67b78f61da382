//! Services, labels and several JVMs read as one: the collector takes an agent's
//! `service=` and `labels=` from its header, and every reading command selects JVMs
//! by `--service`, `--label` and `--jvm all`, merging them into one profile.
//! Simulated agents (real protocol, real chunks) here; fleet_jvm.rs uses real JVMs.

#[path = "../../collector/tests/common/sim.rs"]
mod common;
mod serving;
mod support;

use std::time::Duration;

use common::{SimJvm, SNAPSHOTS_PER_CHUNK, THREADS};
use jscope_testkit::temp_dir;
use support::*;

/// A simulated JVM of `service` with `labels` streaming `chunks` chunks, all
/// acknowledged; its start, epoch ns.
fn stream(agents: std::net::SocketAddr, pid: u32, service: &str, labels: &str, chunks: u64) -> u64 {
    let mut sim = SimJvm::new(pid, &format!("com.acme.Main{pid}"));
    sim.header.extra = vec![
        ("service".into(), service.into()),
        ("labels".into(), labels.into()),
    ];
    let mut c = sim.connect(agents, 1);
    for seq in 1..=chunks {
        c.send(seq, &sim.chunk()).unwrap();
    }
    assert_eq!(c.finish(Duration::from_secs(10)).unwrap(), chunks);
    sim.header.start_wall_ns
}

fn samples(args: &[&str]) -> u64 {
    let json = jscope_json(&[&["report", "--format", "json"], args].concat());
    json["samples"].as_u64().unwrap()
}

/// `jscope collapsed ARGS`: the sum of its counts, and its lines.
fn collapsed(args: &[&str]) -> (u64, String) {
    let out = jscope(&[&["collapsed"], args].concat());
    assert!(out.status.success(), "collapsed {args:?}: {}", stderr(&out));
    let text = stdout(&out);
    let total = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    (total, text)
}

#[test]
fn jvms_are_selected_by_service_label_or_all_and_merged() {
    let data = temp_dir("cli-fleet");
    let served = serving::serve(&jscope_bin(), &data, &[]);
    let agents = served.agents.expect("serve prints the agents address");
    let jvms = [
        (6101, "shop", "env:prod;zone:a", 3),
        (6102, "shop", "env:dev;zone:a", 5),
        (6103, "billing", "env:prod;zone:b", 2),
    ];
    let starts: Vec<u64> = jvms
        .iter()
        .map(|&(pid, service, labels, chunks)| stream(agents, pid, service, labels, chunks))
        .collect();
    let per_chunk = SNAPSHOTS_PER_CHUNK * THREADS as u64;
    let url = served.url();

    // The JVM list shows the header's service and labels.
    let rows = served.json("/api/jvms");
    for (pid, service, labels, _) in jvms {
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["pid"] == pid)
            .unwrap();
        assert_eq!(row["service"], service, "{row}");
        let env = labels.split(';').next().unwrap().split_once(':').unwrap().1;
        assert_eq!(row["labels"]["env"], env, "{row}");
    }
    let out = jscope(&["jvms", "--collector", &url]);
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.contains("6103") && l.contains("billing") && l.contains("env=prod,zone=b")),
        "{text}"
    );

    let data_dir = data.to_str().unwrap();
    for (source, value) in [("--collector", url.as_str()), ("--data", data_dir)] {
        let one = |pid: u32| samples(&[source, value, "--jvm", &pid.to_string()]);
        let (a, b, c) = (one(6101), one(6102), one(6103));
        assert_eq!((a, b, c), (3 * per_chunk, 5 * per_chunk, 2 * per_chunk));
        // A service: its two JVMs merged.
        assert_eq!(samples(&[source, value, "--service", "shop"]), a + b);
        // Labels: all must match.
        assert_eq!(samples(&[source, value, "--label", "env=prod"]), a + c);
        assert_eq!(
            samples(&[source, value, "--label", "env=prod", "--label", "zone=a"]),
            a
        );
        assert_eq!(samples(&[source, value, "--jvm", "all"]), a + b + c);
        // --jvm within a service picks one of its JVMs.
        assert_eq!(
            samples(&[source, value, "--service", "shop", "--jvm", "6102"]),
            b
        );
        let out = jscope(&[
            "report",
            source,
            value,
            "--service",
            "shop",
            "--jvm",
            "6103",
        ]);
        assert!(
            stderr(&out).contains("no JVM with id or pid 6103"),
            "{}",
            stderr(&out)
        );
        let out = jscope(&["report", source, value, "--service", "nope"]);
        let err = stderr(&out);
        assert!(
            !out.status.success()
                && err.contains("no JVM matches service nope")
                && err.lines().count() == 1,
            "{err}"
        );
        // The last ten minutes hold everything.
        assert_eq!(
            samples(&[source, value, "--service", "shop", "--since", "10m"]),
            a + b
        );
        assert_eq!(
            samples(&[source, value, "--jvm", "all", "--from", "-10m"]),
            a + b + c
        );
        assert_eq!(samples(&[source, value, "--jvm", "all", "--to", "-10m"]), 0);
        // A wall-clock window cuts exactly where the same seconds from the start do:
        // snapshots are 100 ms apart, so bounds fall on snapshots.
        for (from, to) in [(0.5, 1.0), (0.0, 0.3), (0.2, 10.0)] {
            let at = |s: f64| rfc3339(starts[1] + (s * 1e9) as u64);
            let seconds = samples(&[
                source,
                value,
                "--jvm",
                "6102",
                "--from",
                &from.to_string(),
                "--to",
                &to.to_string(),
            ]);
            let wall = samples(&[
                source,
                value,
                "--jvm",
                "6102",
                "--from",
                &at(from),
                "--to",
                &at(to),
            ]);
            assert_eq!(wall, seconds, "{source} [{from}, {to})");
            assert!(
                seconds > 0 && seconds < b,
                "{source} [{from}, {to}): {seconds}"
            );
        }
        // Merged, seconds count from the earliest JVM's start (6101's here).
        let at = |s: f64| rfc3339(starts[0] + (s * 1e9) as u64);
        assert_eq!(
            samples(&[
                source,
                value,
                "--service",
                "shop",
                "--from",
                "0.3",
                "--to",
                "0.9"
            ]),
            samples(&[
                source,
                value,
                "--service",
                "shop",
                "--from",
                &at(0.3),
                "--to",
                &at(0.9)
            ]),
        );
        let out = jscope(&[
            "report",
            source,
            value,
            "--jvm",
            "all",
            "--from",
            "yesterday",
        ]);
        assert!(
            stderr(&out).contains("bad time `yesterday`"),
            "{}",
            stderr(&out)
        );
        let out = jscope(&["report", source, value, "--label", "env"]);
        assert!(
            stderr(&out).contains("--label wants KEY=VALUE"),
            "{}",
            stderr(&out)
        );
    }

    // Merged profiles: the counts of `collapsed --jvm all` and `--label` are the sums
    // of the JVMs read one by one, stack by stack (each JVM's methods are its own).
    let (all, text) = collapsed(&["--data", data_dir, "--jvm", "all"]);
    let mut sum = 0;
    for (pid, _, _, _) in jvms {
        let (n, one) = collapsed(&["--data", data_dir, "--jvm", &pid.to_string()]);
        for line in one.lines() {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        sum += n;
    }
    assert_eq!(all, sum);
    let (prod, text) = collapsed(&["--data", data_dir, "--label", "env=prod"]);
    assert_eq!(prod, (3 + 2) * per_chunk);
    assert!(text.contains("com.acme.App6101.main") && text.contains("com.acme.App6103.main"));
    assert!(!text.contains("App6102"), "{text}");

    // A merged flame graph is titled by the selection.
    let html = data.join("shop.html");
    let out = jscope(&[
        "flame",
        "--collector",
        &url,
        "--service",
        "shop",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("service shop (2 JVMs)"),
        "titled by the selection"
    );

    // jscope diff compares two selections: a service against a label, each merged.
    let out = jscope(&[
        "diff",
        "--data",
        data_dir,
        "service=shop",
        "env=prod,zone=b",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let diff: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(diff["base_samples"], (3 + 5) * per_chunk, "{diff}");
    assert_eq!(diff["new_samples"], 2 * per_chunk, "{diff}");
    let row = |m: &str| {
        diff["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["method"] == m)
            .unwrap_or_else(|| panic!("{m} in {diff}"))
            .clone()
    };
    assert_eq!(row("com.acme.App6103.main")["base_total_samples"], 0);
    assert_eq!(row("com.acme.App6103.main")["new_total_percent"], 100.0);
    assert_eq!(row("com.acme.App6102.main")["new_total_samples"], 0);

    // A file has no JVMs to select.
    let out = jscope(&["report", "x.jsc", "--service", "shop"]);
    assert!(
        stderr(&out).contains("--service and --label select JVMs"),
        "{}",
        stderr(&out)
    );
    assert!(served.interrupt());
}
