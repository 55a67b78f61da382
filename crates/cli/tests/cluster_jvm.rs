//! A replicated ClickHouse cluster under real JVMs: ZooKeeper and 2 shards x 2
//! replicas of Debian's `clickhouse-server` (18.16), two collectors
//! (`--store clickhouse://...?cluster=NAME`, each through another shard's node), four
//! JVMs of two services streaming to `A|B`. Mid-stream one replica is killed with
//! kill -9 (streaming goes on) and restarted, then collector A is killed with
//! kill -9 and B takes every stream over. Every JVM's stored profile equals its
//! agent's own file (every acknowledged chunk, none twice), each service's flame
//! graph counted in SQL over the cluster equals the merge of its JVMs read one by
//! one, and the restarted replica holds what its shard's other replica holds.

#[allow(dead_code)]
mod jvms;
mod serving;
mod support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::{agent_path, javas, temp_dir, wait_until, Child, Cluster};
use jvms::*;
use serde_json::Value;
use support::*;

fn assert_moved_on_one_store(copy: &Value) {
    let count = |name| counter(copy, name).unwrap_or(0);
    assert!(count("collector.reconnects") >= 1, "{copy}");
    assert_eq!(count("collector.chunks_dropped"), 0, "{copy}");
    assert_eq!(count("collector.resyncs"), 0, "{copy}");
}

/// `jscope collapsed ARGS --mode cpu` as stack → count.
fn collapsed(args: &[&str]) -> BTreeMap<String, u64> {
    let out = jscope(&[&["collapsed"], args, &["--mode", "cpu"]].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    parse_collapsed(&stdout(&out))
}

fn parse_collapsed(text: &str) -> BTreeMap<String, u64> {
    let mut stacks = BTreeMap::new();
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        *stacks.entry(stack.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    stacks
}

fn merge_into(all: &mut BTreeMap<String, u64>, one: &BTreeMap<String, u64>) {
    for (stack, n) in one {
        *all.entry(stack.clone()).or_default() += n;
    }
}

#[test]
fn replicated_cluster_two_collectors_four_jvms_kill_9_of_a_replica_and_a_collector() {
    let _one = serial();
    let Some(mut cluster) = Cluster::start("jscope_jvms", 2, 2) else {
        return;
    };
    let java = javas().into_iter().next().expect("a JDK");
    let dir = temp_dir("cluster-jvm-run");
    // A writes through shard 1's first replica, B through shard 2's.
    let store_a = format!("{}&flush_ms=200", cluster.url(0, "jscope"));
    let store_b = format!("{}&flush_ms=200", cluster.url(2, "jscope"));
    let a = serving::serve(&jscope_bin(), &dir.join("unused-a"), &["--store", &store_a]);
    let b = serving::serve(&jscope_bin(), &dir.join("unused-b"), &["--store", &store_b]);
    let (a_addr, b_addr) = (a.agents.unwrap(), b.agents.unwrap());
    // (service, zone, hot method)
    let plan = [
        ("shop", "a", "alpha"),
        ("shop", "b", "beta"),
        ("search", "a", "gamma"),
        ("search", "b", "alpha"),
    ];
    let mut jvms = Vec::new();
    let mut files = Vec::new();
    for (i, (service, zone, which)) in plan.iter().enumerate() {
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
            row_of(&a, p).is_some_and(|r| {
                r["status"] == "connected" && r["last_seq"].as_u64().unwrap_or(0) >= 2
            })
        })),
        "four JVMs stream to A: {:?}",
        rows(&a)
    );
    // B sees them through the shared store while A streams them.
    assert!(
        wait_until(Duration::from_secs(10), || pids
            .iter()
            .all(|&p| row_of(&b, p).is_some())),
        "B lists A's JVMs from the store: {:?}",
        rows(&b)
    );
    let ids: Vec<String> = pids
        .iter()
        .map(|&p| row_of(&a, p).unwrap()["id"].as_str().unwrap().to_string())
        .collect();
    // kill -9 of shard 1's second replica mid-stream: inserts and reads go on through
    // the first; two more chunks of every JVM are acknowledged meanwhile.
    cluster.nodes[1].stop();
    let seq_now: Vec<u64> = pids
        .iter()
        .map(|&p| row_of(&a, p).unwrap()["last_seq"].as_u64().unwrap())
        .collect();
    assert!(
        wait_until(Duration::from_secs(30), || pids
            .iter()
            .zip(&seq_now)
            .all(|(&p, &s)| row_of(&a, p)
                .is_some_and(|r| r["last_seq"].as_u64().unwrap_or(0) >= s + 2))),
        "streaming goes on without the replica: {:?}",
        rows(&a)
    );
    // It comes back and catches up (checked at the end); then kill -9 of collector A.
    cluster.nodes[1].restart();
    a.kill();
    assert!(
        wait_until(Duration::from_secs(30), || {
            pids.iter()
                .all(|&p| row_of(&b, p).is_some_and(|r| r["status"] == "connected"))
        }),
        "all four moved to B: {:?}",
        rows(&b)
    );
    for (i, &pid) in pids.iter().enumerate() {
        let row = row_of(&b, pid).unwrap();
        assert_eq!(row["id"], ids[i].as_str(), "the same JVM: {row}");
        assert_eq!(row["service"], plan[i].0, "{row}");
        assert_eq!(row["labels"]["zone"], plan[i].1, "{row}");
    }
    for jvm in &mut jvms {
        wait_exit(jvm, &java);
    }
    assert!(wait_until(Duration::from_secs(20), || pids
        .iter()
        .all(|&p| row_of(&b, p).is_some_and(|r| r["status"] == "gone"))));

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
        merge_into(by_service.entry(plan[i].0).or_default(), &stored);
    }
    for (service, merged) in &by_service {
        let jvm_ids: Vec<&str> = (0..plan.len())
            .filter(|i| plan[*i].0 == *service)
            .map(|i| ids[i].as_str())
            .collect();
        // Counted in ClickHouse over the window.
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
    assert!(b.interrupt());
    // The restarted replica holds what its shard's other replica holds.
    let count = |node: usize, table: &str| {
        cluster.nodes[node]
            .query(&format!("SELECT count() FROM jscope.{table}_local"))
            .unwrap()
            .trim()
            .to_string()
    };
    for table in ["chunks", "samples", "stacks", "jvms"] {
        assert!(
            wait_until(Duration::from_secs(30), || count(0, table)
                == count(1, table)),
            "{table}: replica {} vs {}",
            count(1, table),
            count(0, table)
        );
    }
    assert_ne!(count(1, "chunks"), "0");
}
