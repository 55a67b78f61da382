//! Failover with real JVMs: an agent given two collectors (`collector=A|B`) streams to
//! A; A is killed with kill -9 mid-stream and B takes the stream over, either on A's
//! data directory (started after A died, as a shared store would be) or on its own,
//! running from the start. Run on the first JDK `jscope_testkit::javas()` finds: the
//! failover is the agent's and the collector's, not the JVM's.

mod fleet4;
mod jvms;
mod serving;
mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use fleet4::assert_moved_on_one_store;
use jscope_testkit::{javas, temp_dir, wait_until, Child, Java};
use jvms::*;
use serde_json::Value;
use serving::Served;
use support::*;

/// The JVM's stored copy in a data directory, read as `jscope info --data DIR`.
fn stored(data: &Path, pid: u32) -> Value {
    info(&["--data", data.to_str().unwrap(), "--jvm", &pid.to_string()])
}

/// Starts A on `data`, the JVM streaming to `A|b` with a file copy, and waits until
/// A acknowledged a few chunks. Returns A, the JVM, its pid, the stream id and A's
/// last acknowledged chunk.
fn stream_to_a(
    java: &Java,
    data: &Path,
    b: SocketAddr,
    file: &Path,
) -> (Served, Child, u32, String) {
    let a = serving::serve(&jscope_bin(), data, &[]);
    let a_addr = a.agents.unwrap();
    let options = format!(
        "mode=cpu+snapshot,collector={a_addr}|{b},file={}",
        file.display()
    );
    let jvm = hot_jvm(java, &options, "beta", 9_000);
    let pid = jvm.id();
    assert!(
        wait_until(Duration::from_secs(20), || {
            row_of(&a, pid).is_some_and(|r| r["last_seq"].as_u64().unwrap_or(0) >= 2)
        }),
        "the agent streams to the first collector: {:?}",
        rows(&a)
    );
    let id = row_of(&a, pid).unwrap()["id"].as_str().unwrap().to_string();
    (a, jvm, pid, id)
}

#[test]
fn kill_9_of_a_collector_moves_the_agent_to_the_next_on_the_same_store_exactly_once() {
    let _one = serial();
    let java = javas().into_iter().next().expect("a JDK");
    let dir = temp_dir("failover-same-store");
    let (data, file) = (dir.join("data"), dir.join("copy.jsc"));
    let b_addr = free_addr();
    let (a, mut jvm, pid, id) = stream_to_a(&java, &data, b_addr, &file);
    let acked_by_a = row_of(&a, pid).unwrap()["last_seq"].as_u64().unwrap();
    a.kill();
    // B takes A's directory over (A's lock died with it), on B's own port.
    let b = serving::serve_on(&jscope_bin(), &data, b_addr);
    assert!(
        wait_until(Duration::from_secs(20), || {
            row_of(&b, pid).is_some_and(|r| r["status"] == "connected")
        }),
        "the agent moved to the second collector: {:?}",
        rows(&b)
    );
    let row = row_of(&b, pid).unwrap();
    assert_eq!(
        row["id"],
        id.as_str(),
        "the same stream, the same JVM: {row}"
    );
    wait_exit(&mut jvm, &java);
    assert!(wait_until(Duration::from_secs(10), || {
        row_of(&b, pid).is_some_and(|r| r["status"] == "gone")
    }));

    let copy = info(&[file.to_str().unwrap()]);
    let in_store = stored(&data, pid);
    // The store had the stream's start: no dictionary was resent.
    assert_moved_on_one_store(&copy);
    let acked = counter(&copy, "collector.chunks_acked").unwrap_or(0);
    let stored_seq = b.json(&format!("/api/jvms/{id}"))["jvm"]["last_seq"]
        .as_u64()
        .unwrap();
    assert!(
        stored_seq >= acked && acked > acked_by_a,
        "the store holds every acknowledged chunk ({stored_seq} >= {acked} > {acked_by_a})"
    );
    // Every chunk once: the store's copy counts what the agent's file counts.
    assert_eq!(
        holdings(&in_store),
        holdings(&copy),
        "stored {in_store} vs file {copy}"
    );
    assert!(holdings(&copy).0 > 50, "{copy}");
    assert_eq!(
        rows(&b).iter().filter(|r| r["pid"] == pid).count(),
        1,
        "one JVM: {:?}",
        rows(&b)
    );
    let report = jscope_json(&[
        "report",
        "--collector",
        &b.url(),
        "--jvm",
        &id,
        "--mode",
        "cpu",
        "--format",
        "json",
    ]);
    assert_eq!(report["methods"][0]["method"], "Hot.beta", "{report}");
    assert!(b.interrupt());
}

#[test]
fn kill_9_of_a_collector_moves_the_agent_to_a_running_one_with_its_own_store() {
    let _one = serial();
    let java = javas().into_iter().next().expect("a JDK");
    let dir = temp_dir("failover-own-store");
    let (data_a, data_b, file) = (dir.join("a"), dir.join("b"), dir.join("copy.jsc"));
    let b = serving::serve(&jscope_bin(), &data_b, &[]);
    let (a, mut jvm, pid, id) = stream_to_a(&java, &data_a, b.agents.unwrap(), &file);
    assert!(row_of(&b, pid).is_none(), "B sees nothing while A is up");
    a.kill();
    assert!(
        wait_until(Duration::from_secs(20), || {
            row_of(&b, pid).is_some_and(|r| r["status"] == "connected")
        }),
        "the agent moved to the second collector: {:?}",
        rows(&b)
    );
    assert_eq!(row_of(&b, pid).unwrap()["id"], id.as_str());
    wait_exit(&mut jvm, &java);
    assert!(wait_until(Duration::from_secs(10), || {
        row_of(&b, pid).is_some_and(|r| r["status"] == "gone")
    }));

    let copy = info(&[file.to_str().unwrap()]);
    let (in_a, in_b) = (stored(&data_a, pid), stored(&data_b, pid));
    assert_eq!(
        counter(&copy, "collector.chunks_dropped").unwrap_or(0),
        0,
        "{copy}"
    );
    // B's store lacked the stream's start: it got the dictionary first.
    assert!(
        counter(&copy, "collector.resyncs").unwrap_or(0) >= 1,
        "{copy}"
    );
    let acked = counter(&copy, "collector.chunks_acked").unwrap_or(0);
    let b_seq = b.json(&format!("/api/jvms/{id}"))["jvm"]["last_seq"]
        .as_u64()
        .unwrap();
    assert!(
        b_seq >= acked,
        "B holds the last acknowledged chunk ({b_seq} >= {acked})"
    );
    // Nothing acknowledged is lost: A's directory keeps what A stored, B's the rest.
    // (A chunk A stored but died before acknowledging is in both.)
    let (cpu_a, snaps_a) = holdings(&in_a);
    let (cpu_b, snaps_b) = holdings(&in_b);
    let (cpu, snaps) = holdings(&copy);
    assert!(cpu_a > 0 && cpu_b > 0, "A {in_a} B {in_b}");
    assert!(
        cpu_a + cpu_b >= cpu && snaps_a + snaps_b >= snaps && cpu_b < cpu,
        "A {in_a} + B {in_b} cover the file {copy}"
    );
    // B's part reads on its own: the resent dictionary names its methods.
    let report = jscope_json(&[
        "report",
        "--collector",
        &b.url(),
        "--jvm",
        &id,
        "--mode",
        "cpu",
        "--format",
        "json",
    ]);
    assert_eq!(report["methods"][0]["method"], "Hot.beta", "{report}");
    assert_eq!(report["samples"].as_u64().unwrap(), cpu_b, "{report}");
    assert!(b.interrupt());
}

jscope_testkit::on_each_clickhouse!(
    clickhouse_two_collectors_four_jvms_kill_9_of_one_exactly_once_and_service_flames
);

/// The must-show, once on Debian's `clickhouse-server` (18.16) and once on
/// the current engine (26.9, embedded by chdb, behind the test-only HTTP transport
/// `crates/testkit/clickhouse_current.py`; skipped, saying why, without either): two
/// collectors over one ClickHouse database, four JVMs of two services with labels
/// streaming to `A|B`; kill -9 of A mid-stream moves all four to B, which carries
/// on each stream where ClickHouse stands. Afterwards every JVM's stored profile
/// equals its agent's own file (every acknowledged chunk, none twice), and each
/// service's flame graph counted in SQL over the last 10 minutes equals the merge of
/// its JVMs read one by one.
fn clickhouse_two_collectors_four_jvms_kill_9_of_one_exactly_once_and_service_flames(
    server: jscope_testkit::Server,
) {
    let _one = serial();
    let Some(ch) = jscope_testkit::ClickHouse::start_on(server, "failover-ch") else {
        return;
    };
    let java = javas().into_iter().next().expect("a JDK");
    let dir = temp_dir("failover-ch-run");
    let store = format!("{}?flush_ms=200", ch.url("jscope"));
    let a = serving::serve(&jscope_bin(), &dir.join("unused-a"), &["--store", &store]);
    let b = serving::serve(&jscope_bin(), &dir.join("unused-b"), &["--store", &store]);
    let mut fleet = fleet4::start(&java, &dir, &a, &b);
    a.kill();
    fleet4::check_moved_to_b(&mut fleet, &b, &java);
    assert!(b.interrupt());
    drop(ch);
}
