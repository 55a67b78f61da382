//! Several collectors over one store (ClickHouse: Debian's `clickhouse-server` 18.16
//! and the current engine, 26.9 in chdb behind the test-only HTTP transport
//! `crates/testkit/clickhouse_current.py`, each test once per server; skipped,
//! saying why, when one is not installed): a collector's memory of a stream is only a
//! cache, so an agent coming back to it after streaming to another one resumes where
//! the store stands, and nothing is stored twice.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use jscope_format::Recording;
use jscope_store::{ClickHouseStore, MemoryLog, Store};
use jscope_testkit::{on_each_clickhouse, temp_dir, ClickHouse, Server};
use jscope_wire::{ClientConfig, RefuseCode, WireClient, WireError};

const ACK: Duration = Duration::from_secs(20);

on_each_clickhouse!(
    an_agent_back_on_a_collector_resumes_where_the_shared_store_stands,
    a_collector_whose_store_is_down_refuses_for_now_and_accepts_once_it_is_back,
);

fn an_agent_back_on_a_collector_resumes_where_the_shared_store_stands(server: Server) {
    let Some(ch) = ClickHouse::start_on(server, "ch-shared") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (a, _) = start(&temp_dir("ch-shared-a"), |c| c.store = Some(url.clone()));
    let (b, _) = start(&temp_dir("ch-shared-b"), |c| c.store = Some(url.clone()));
    let (a_addr, b_addr) = (a.agents_addr().unwrap(), b.agents_addr().unwrap());
    let mut sim = SimJvm::new(8301, "com.acme.Shared");
    let mut sent = Vec::new();
    // A, then B, then A again, three chunks each; each Accept says where the
    // stream stands in the store.
    for (turn, addr) in [a_addr, b_addr, a_addr].into_iter().enumerate() {
        let first = turn as u64 * 3 + 1;
        let mut client = sim.connect(addr, first);
        assert_eq!(
            client.accept().acked,
            first - 1,
            "turn {turn}: the collector resumes where the store stands"
        );
        for seq in first..first + 3 {
            let chunk = sim.chunk();
            client.send(seq, &chunk).unwrap();
            sent.push(chunk);
        }
        assert_eq!(client.wait_for_ack(first + 2, ACK).unwrap(), first + 2);
        client.finish(Duration::from_secs(5)).unwrap();
    }
    // Every chunk once: the store's copy is the agent's own file.
    let mut own = sim.header_bytes();
    sent.iter().for_each(|c| own.extend_from_slice(c));
    let own = Recording::from_bytes(&own).unwrap();
    let store = ClickHouseStore::connect(
        &format!("{}?flush_ms=100", ch.url("jscope")),
        Arc::new(MemoryLog::default()),
    )
    .unwrap();
    let stored = store.read(&sim.stream, None, None).unwrap();
    assert_eq!(stored.snapshots.len(), own.snapshots.len());
    assert_eq!(own.snapshots.len() as u64, 9 * SNAPSHOTS_PER_CHUNK);
    assert_eq!(store.acked(&sim.stream).unwrap(), Some(9));
    // A's hot table missed B's chunks: the API answers from the store.
    let hot = get_json(
        a.http_addr().unwrap(),
        &format!("/api/jvms/{}/hot?mode=snapshot", sim.stream),
    );
    assert_eq!(
        hot["samples"].as_u64(),
        Some(9 * SNAPSHOTS_PER_CHUNK * THREADS as u64),
        "{hot}"
    );
    a.shutdown();
    b.shutdown();
}

fn a_collector_whose_store_is_down_refuses_for_now_and_accepts_once_it_is_back(server: Server) {
    let Some(mut ch) = ClickHouse::start_on(server, "ch-down") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (server, log) = start(&temp_dir("ch-down-run"), |c| c.store = Some(url));
    let addr = server.agents_addr().unwrap();
    let sim = SimJvm::new(8302, "com.acme.Down");
    ch.stop();
    let cfg = ClientConfig::new(addr.to_string(), sim.stream.clone());
    // Agents retrying meanwhile are refused without a line each.
    for _ in 0..3 {
        let again = WireClient::connect(&cfg, &sim.header_bytes(), 1);
        assert!(matches!(again, Err(WireError::Refused { .. })));
    }
    // A connection's line follows its refusal: wait for the first.
    let refused = || {
        log.lines()
            .into_iter()
            .filter(|l| l.contains("refused"))
            .collect::<Vec<_>>()
    };
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while refused().is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let refusals = refused();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(refusals[0].contains("the store is failing"), "{refusals:?}");
    match WireClient::connect(&cfg, &sim.header_bytes(), 1) {
        Err(WireError::Refused { code, message }) => {
            assert_eq!(code, RefuseCode::StoreUnavailable, "{message}");
            assert!(
                code.is_transient(),
                "an agent retries, or tries another collector"
            );
        }
        Ok(_) => panic!("accepted without a store"),
        Err(e) => panic!("{e}"),
    }
    ch.restart();
    let client = sim.connect(addr, 1);
    assert_eq!(client.accept().acked, 0);
    server.shutdown();
}
