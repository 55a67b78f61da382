//! End to end over ClickHouse, once on Debian's `clickhouse-server` (18.16) and once
//! on the current engine (26.9, embedded by chdb, behind the test-only HTTP transport
//! `crates/testkit/clickhouse_current.py`); skipped, saying why, when one is not
//! installed: real JVMs stream to `jscope serve --store clickhouse://...`, and the
//! CLI reads each back equal to the agent's own file, and both merged.

mod serving;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{
    agent_path, compile_fixtures, javas, on_each_clickhouse, temp_dir, wait_until, Child,
    ClickHouse, Server,
};
use support::*;

fn classes() -> PathBuf {
    agent_path();
    compile_fixtures(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
}

/// `jscope collapsed ARGS` as stack → count.
fn collapsed(args: &[&str]) -> BTreeMap<String, u64> {
    let out = jscope(&[&["collapsed"], args].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let mut stacks = BTreeMap::new();
    for line in stdout(&out).lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        *stacks.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    stacks
}

on_each_clickhouse!(jvms_streamed_into_clickhouse_read_back_equal_to_their_own_files);

fn jvms_streamed_into_clickhouse_read_back_equal_to_their_own_files(server: Server) {
    let Some(ch) = ClickHouse::start_on(server, "cli-ch") else {
        return;
    };
    let java = &javas()[0];
    let dir = temp_dir("cli-ch-run");
    let store = format!("{}?flush_ms=200", ch.url("jscope"));
    let served = serving::serve(&jscope_bin(), &dir.join("unused"), &["--store", &store]);
    let addr = served.agents.unwrap();
    let files: Vec<PathBuf> = ["alpha", "beta"]
        .iter()
        .map(|w| dir.join(format!("{w}.jsc")))
        .collect();
    let mut jvms: Vec<Child> = ["alpha", "beta"]
        .iter()
        .zip(&files)
        .map(|(w, file)| {
            Child::spawn(
                Command::new(&java.bin)
                    .arg(format!(
                        "-agentpath:{}=mode=cpu+snapshot,collector={addr},file={}",
                        agent_path().display(),
                        file.display()
                    ))
                    .arg("-cp")
                    .arg(classes())
                    .args(["Hot", w, "3000"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit()),
            )
        })
        .collect();
    let pids: Vec<String> = jvms.iter().map(|j| j.id().to_string()).collect();
    for jvm in &mut jvms {
        let status = jvm
            .wait_timeout(Duration::from_secs(60))
            .expect("jvm exits");
        assert!(status.success());
    }
    let url = served.url();
    let gone = |pid: &str| {
        served
            .json("/api/jvms")
            .as_array()
            .unwrap()
            .iter()
            .any(|r| {
                r["pid"].as_u64().map(|p| p.to_string()).as_deref() == Some(pid)
                    && r["status"] == "gone"
            })
    };
    assert!(wait_until(Duration::from_secs(20), || pids
        .iter()
        .all(|p| gone(p))));

    let mut merged = BTreeMap::new();
    for (pid, file) in pids.iter().zip(&files) {
        let file = file.to_str().unwrap();
        let own = collapsed(&[file]);
        assert!(own.values().sum::<u64>() > 20, "{own:?}");
        assert_eq!(
            collapsed(&["--collector", &url, "--jvm", pid]),
            own,
            "pid {pid}"
        );
        // The report reads the stored JVM whole, as the file reads.
        let report = |src: &[&str]| {
            let mut r = jscope_json(&[&["report"], src, &["--format", "json"]].concat());
            r["methods"].take()
        };
        assert_eq!(
            report(&["--collector", &url, "--jvm", pid]),
            report(&[file])
        );
        for (stack, n) in own {
            *merged.entry(stack).or_insert(0) += n;
        }
    }
    // Both JVMs in one profile: read whole, and counted in ClickHouse by the API.
    assert_eq!(collapsed(&["--collector", &url, "--jvm", "all"]), merged);
    let ids: Vec<String> = served
        .json("/api/jvms")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let (status, body) = served.get(&format!(
        "/api/flame?jvm={}&mode=cpu&format=collapsed",
        ids.join(",")
    ));
    assert_eq!(status, 200);
    let mut in_sql = BTreeMap::new();
    for line in String::from_utf8(body).unwrap().lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        in_sql.insert(stack.to_string(), n.parse::<u64>().unwrap());
    }
    assert_eq!(in_sql, merged);
    assert!(served.interrupt());
}
