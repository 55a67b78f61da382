//! The ClickHouse store on a replicated cluster (`?cluster=NAME`): ZooKeeper and
//! 2 shards x 2 replicas of Debian's `clickhouse-server` (18.16) on free loopback
//! ports. Two collectors, each through another node, take simulated JVMs; each
//! collector's store sees every JVM whole, and each node holds only its shard's
//! rows, the same on both replicas. The current engine (26.9, in chdb: no
//! ZooKeeper there) parses every statement of the cluster's schema.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use jscope_store::query::{flame, Query};
use jscope_store::{ClickHouseStore, MemoryLog, Store};
use jscope_testkit::{temp_dir, wait_until, ClickHouse, Cluster, Server};

const ACK: Duration = Duration::from_secs(30);

#[test]
fn two_collectors_on_a_replicated_cluster_see_every_jvm() {
    let Some(cluster) = Cluster::start("jscope_test", 2, 2) else {
        return;
    };
    let url = |node: usize| format!("{}&flush_ms=100", cluster.url(node, "jscope"));
    let (a, _) = start(&temp_dir("cluster-a"), |c| c.store = Some(url(0)));
    let (b, _) = start(&temp_dir("cluster-b"), |c| c.store = Some(url(2)));
    let mut sims: Vec<SimJvm> = (0..4)
        .map(|i| SimJvm::new(9300 + i, &format!("com.acme.C{i}")))
        .collect();
    for (i, sim) in sims.iter_mut().enumerate() {
        let to = if i % 2 == 0 { &a } else { &b };
        let mut client = sim.connect(to.agents_addr().unwrap(), 1);
        for seq in 1..=4 {
            client.send(seq, &sim.chunk()).unwrap();
        }
        assert_eq!(client.wait_for_ack(4, ACK).unwrap(), 4);
        assert_eq!(client.finish(ACK).unwrap(), 4);
    }
    a.shutdown();
    b.shutdown();
    let ids: Vec<String> = sims.iter().map(|s| s.stream.clone()).collect();
    let per_jvm = 4 * SNAPSHOTS_PER_CHUNK * THREADS as u64;
    for node in [1, 3] {
        let store = ClickHouseStore::connect(&url(node), Arc::new(MemoryLog::default())).unwrap();
        let listed: Vec<String> = store.jvms().into_iter().map(|j| j.identity.id).collect();
        for id in &ids {
            assert!(listed.contains(id), "node {node}: {listed:?}");
            assert_eq!(store.resume(id).unwrap().unwrap().acked, 4);
        }
        let q = Query {
            jvms: ids.clone(),
            ..Query::default()
        };
        assert_eq!(flame(&store, &q).unwrap().0.total(), 4 * per_jvm);
    }
    // Each shard's two replicas hold the same rows; the shards split the JVMs.
    let local = |node: usize| {
        cluster.nodes[node]
            .query("SELECT count() FROM jscope.chunks_local WHERE kind = 1")
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    assert!(wait_until(Duration::from_secs(20), || local(0) == local(1)
        && local(2) == local(3)));
    assert_eq!(local(0) + local(2), 16, "every chunk on one shard");
}

#[test]
fn the_current_engine_parses_the_cluster_schema() {
    let Some(ch) = ClickHouse::start_on(Server::Current, "cluster-syntax") else {
        return;
    };
    let mut statements = ClickHouseStore::schema_statements("jscope", Some("fleet"));
    assert!(statements.len() > 15, "{statements:?}");
    // The columns added to tables an older collector made, as if every table
    // lacked them: on the local tables and the Distributed ones.
    let upgrade =
        ClickHouseStore::upgrade_statements("jscope", Some("fleet"), &mut |_, _| Ok(true)).unwrap();
    assert_eq!(
        upgrade,
        [
            "ALTER TABLE jscope.events_local ON CLUSTER fleet ADD COLUMN request UInt64",
            "ALTER TABLE jscope.events ON CLUSTER fleet ADD COLUMN request UInt64"
        ]
    );
    statements.extend(upgrade);
    for sql in statements {
        let quoted = sql.replace('\\', "\\\\").replace('\'', "\\'");
        let formatted = ch
            .query(&format!("SELECT formatQuery('{quoted}')"))
            .unwrap_or_else(|e| panic!("26.9 does not parse {sql}: {e}"));
        assert!(formatted.contains("ON CLUSTER fleet"), "{formatted}");
    }
}
