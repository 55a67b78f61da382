//! A replicated ClickHouse cluster under real JVMs: ZooKeeper and 2 shards x 2
//! replicas of Debian's `clickhouse-server` (18.16), two collectors
//! (`--store clickhouse://...?cluster=NAME`, each through another shard's node), four
//! JVMs of two services streaming to `A|B`. Mid-stream one replica is killed with
//! kill -9 (streaming goes on) and restarted, then collector A is killed with
//! kill -9 and B takes every stream over. Every JVM's stored profile equals its
//! agent's own file (every acknowledged chunk, none twice), each service's flame
//! graph counted in SQL over the cluster equals the merge of its JVMs read one by
//! one, and the restarted replica holds what its shard's other replica holds.

mod fleet4;
#[allow(dead_code)]
mod jvms;
mod serving;
mod support;

use std::time::Duration;

use jscope_testkit::{javas, temp_dir, wait_until, Cluster};
use jvms::*;
use support::*;

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
    let mut fleet = fleet4::start(&java, &dir, &a, &b);
    let pids = &fleet.pids;
    // kill -9 of the second replica of a shard holding streams (they are spread by
    // the hash of their ids, so all four may land on one shard) mid-stream: inserts
    // and reads go on through the first; two more chunks of every JVM are
    // acknowledged meanwhile.
    let first = match cluster.nodes[0].query("SELECT count() FROM jscope.chunks_local") {
        Ok(n) if n.trim() != "0" => 0,
        _ => 2,
    };
    let second = first + 1;
    cluster.nodes[second].stop();
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
    cluster.nodes[second].restart();
    a.kill();
    fleet4::check_moved_to_b(&mut fleet, &b, &java);
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
            wait_until(Duration::from_secs(30), || count(first, table)
                == count(second, table)),
            "{table}: replica {} vs {}",
            count(second, table),
            count(first, table)
        );
    }
    assert_ne!(count(second, "chunks"), "0");
}
