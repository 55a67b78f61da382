//! Four JVMs of two services streaming to two collectors `A|B` over one store,
//! for the failover tests on ClickHouse and on a replicated ClickHouse cluster:
//! starting them, and what must hold once A was killed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, wait_until, Child, Java};
use serde_json::Value;

use crate::jvms::*;
use crate::serving::Served;
use crate::support::*;

/// (service, zone, hot method) of each JVM.
pub const PLAN: [(&str, &str, &str); 4] = [
    ("shop", "a", "alpha"),
    ("shop", "b", "beta"),
    ("search", "a", "gamma"),
    ("search", "b", "alpha"),
];

/// The four JVMs, their own files, pids and (once A listed them) JVM ids.
pub struct Fleet {
    pub jvms: Vec<Child>,
    pub files: Vec<PathBuf>,
    pub pids: Vec<u32>,
    pub ids: Vec<String>,
}

/// Starts the JVMs of [`PLAN`] streaming to `a|b` (and to their own files under
/// `dir`) and waits until they stream to A and B lists them from the store.
pub fn start(java: &Java, dir: &Path, a: &Served, b: &Served) -> Fleet {
    let (a_addr, b_addr) = (a.agents.unwrap(), b.agents.unwrap());
    let mut jvms = Vec::new();
    let mut files = Vec::new();
    for (i, (service, zone, which)) in PLAN.iter().enumerate() {
        let file = dir.join(format!("jvm{i}.jsc"));
        let options = format!(
            "mode=cpu+snapshot,service={service},labels=zone:{zone};version:{i},collector={a_addr}|{b_addr},file={}",
            file.display()
        );
        jvms.push(Child::spawn(
            Command::new(&java.bin)
                .arg(format!("-agentpath:{}={options}", agent_path().display()))
                .arg("-cp")
                .arg(classes())
                .args(["Hot", which, "10000"])
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
        ));
        files.push(file);
    }
    let pids: Vec<u32> = jvms.iter().map(Child::id).collect();
    assert!(
        wait_until(Duration::from_secs(30), || pids.iter().all(|&p| {
            row_of(a, p).is_some_and(|r| {
                r["status"] == "connected" && r["last_seq"].as_u64().unwrap_or(0) >= 2
            })
        })),
        "four JVMs stream to A: {:?}",
        rows(a)
    );
    // B sees them through the shared store while A streams them.
    assert!(
        wait_until(Duration::from_secs(10), || pids
            .iter()
            .all(|&p| row_of(b, p).is_some())),
        "B lists A's JVMs from the store: {:?}",
        rows(b)
    );
    let ids = pids
        .iter()
        .map(|&p| row_of(a, p).unwrap()["id"].as_str().unwrap().to_string())
        .collect();
    Fleet {
        jvms,
        files,
        pids,
        ids,
    }
}

/// After A was killed: all four moved to B as the same JVMs and ran to their
/// end; every JVM's stored profile equals its agent's own file (every
/// acknowledged chunk, none twice); each service's flame graph counted in the
/// store over the last 10 minutes, and the CLI's `--service` and `--label`
/// selections, equal the merge of their JVMs read one by one.
pub fn check_moved_to_b(fleet: &mut Fleet, b: &Served, java: &Java) {
    let Fleet {
        jvms,
        files,
        pids,
        ids,
    } = fleet;
    assert!(
        wait_until(Duration::from_secs(30), || {
            pids.iter()
                .all(|&p| row_of(b, p).is_some_and(|r| r["status"] == "connected"))
        }),
        "all four moved to B: {:?}",
        rows(b)
    );
    for (i, &pid) in pids.iter().enumerate() {
        let row = row_of(b, pid).unwrap();
        assert_eq!(row["id"], ids[i].as_str(), "the same JVM: {row}");
        assert_eq!(row["service"], PLAN[i].0, "{row}");
        assert_eq!(row["labels"]["zone"], PLAN[i].1, "{row}");
    }
    for jvm in jvms.iter_mut() {
        wait_exit(jvm, java);
    }
    assert!(wait_until(Duration::from_secs(20), || pids
        .iter()
        .all(|&p| row_of(b, p).is_some_and(|r| r["status"] == "gone"))));

    let url = b.url();
    let mut by_service: BTreeMap<&str, BTreeMap<String, u64>> = BTreeMap::new();
    for (i, &pid) in pids.iter().enumerate() {
        let copy = info(&[files[i].to_str().unwrap()]);
        assert_moved_on_one_store(&copy);
        let stored_seq = b.json(&format!("/api/jvms/{}", ids[i]))["jvm"]["last_seq"]
            .as_u64()
            .unwrap();
        let acked = counter(&copy, "collector.chunks_acked").unwrap_or(0);
        assert!(stored_seq >= acked, "jvm {i}: {stored_seq} >= {acked}");
        // Exactly once: the stored JVM, read back whole, is the agent's own file.
        let own = collapsed(&[files[i].to_str().unwrap()]);
        let pid = pid.to_string();
        let stored = collapsed(&["--collector", &url, "--jvm", &pid]);
        assert!(own.values().sum::<u64>() > 50, "jvm {i}: {own:?}");
        assert_eq!(stored, own, "jvm {i} (pid {pid}): stored vs its file");
        let stored_info = info(&["--collector", &url, "--jvm", &pid]);
        assert_eq!(holdings(&stored_info), holdings(&copy), "jvm {i}");
        merge_into(by_service.entry(PLAN[i].0).or_default(), &stored);
    }
    for (service, merged) in &by_service {
        let jvm_ids: Vec<&str> = (0..PLAN.len())
            .filter(|i| PLAN[*i].0 == *service)
            .map(|i| ids[i].as_str())
            .collect();
        // Counted in the store over the window.
        let (status, body) = b.get(&format!(
            "/api/flame?jvm={}&mode=cpu&last=10m&format=collapsed",
            jvm_ids.join(",")
        ));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let in_sql = parse_collapsed(&String::from_utf8(body).unwrap());
        assert_eq!(
            &in_sql, merged,
            "service {service}: SQL vs its JVMs one by one"
        );
        // The CLI's selection by service over the same window.
        let cli = collapsed(&["--collector", &url, "--service", service, "--since", "10m"]);
        assert_eq!(&cli, merged, "service {service}: --service vs its JVMs");
    }
    let zone_a = collapsed(&["--collector", &url, "--label", "zone=a"]);
    let mut want = collapsed(&["--collector", &url, "--jvm", &pids[0].to_string()]);
    merge_into(
        &mut want,
        &collapsed(&["--collector", &url, "--jvm", &pids[2].to_string()]),
    );
    assert_eq!(zone_a, want, "--label zone=a merges JVMs 0 and 2");
}

/// The agent's own counters (its file's `info`): it reconnected, dropped nothing,
/// and resent no dictionary (the new collector's store had the stream's start).
pub fn assert_moved_on_one_store(copy: &Value) {
    let count = |name| counter(copy, name).unwrap_or(0);
    assert!(count("collector.reconnects") >= 1, "{copy}");
    assert_eq!(count("collector.chunks_dropped"), 0, "{copy}");
    assert_eq!(count("collector.resyncs"), 0, "{copy}");
}

/// `jscope collapsed ARGS --mode cpu` as stack → count.
pub fn collapsed(args: &[&str]) -> BTreeMap<String, u64> {
    let out = jscope(&[&["collapsed"], args, &["--mode", "cpu"]].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    parse_collapsed(&stdout(&out))
}

pub fn parse_collapsed(text: &str) -> BTreeMap<String, u64> {
    let mut stacks = BTreeMap::new();
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        *stacks.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    stacks
}

pub fn merge_into(all: &mut BTreeMap<String, u64>, one: &BTreeMap<String, u64>) {
    for (stack, n) in one {
        *all.entry(stack.clone()).or_default() += n;
    }
}
