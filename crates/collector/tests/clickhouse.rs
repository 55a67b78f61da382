//! The ClickHouse store against a real `clickhouse-server` (18.16) and the current
//! engine (26.9, embedded by chdb, behind the test-only HTTP transport
//! `crates/testkit/clickhouse_current.py`), each test once per server (skipped,
//! saying why, when one is not installed): agents streaming through the real ingest,
//! their JVMs read back whole, flame graphs counted in SQL across JVMs, and
//! ClickHouse going away.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use jscope_analysis::{collapse, CollapseOptions, Selection};
use jscope_flame::FlameGraph;
use jscope_format::thread_state::classify;
use jscope_format::Recording;
use jscope_store::query::{flame, Query};
use jscope_store::{ClickHouseStore, MemoryLog, Store};
use jscope_testkit::{on_each_clickhouse, temp_dir, ClickHouse, Server};

const ACK: Duration = Duration::from_secs(20);

/// The agent's own file: its header and every chunk it sent.
fn own_file(sim: &SimJvm, chunks: &[Vec<u8>]) -> Recording {
    let mut bytes = sim.header_bytes();
    chunks.iter().for_each(|c| bytes.extend_from_slice(c));
    Recording::from_bytes(&bytes).unwrap()
}

fn collapsed(rec: &Recording) -> String {
    let counts = Selection::default().stack_counts(rec);
    let mut g = FlameGraph::new();
    for (frames, n) in collapse(rec, &counts, CollapseOptions::default()).stacks {
        g.add(frames, n);
    }
    g.to_collapsed()
}

fn store_at(ch: &ClickHouse, db: &str) -> ClickHouseStore {
    let log = Arc::new(MemoryLog::default());
    ClickHouseStore::connect(&format!("{}?flush_ms=100", ch.url(db)), log).unwrap()
}

on_each_clickhouse!(
    agents_stream_into_clickhouse_and_every_collector_reads_them_back,
    while_clickhouse_is_down_nothing_is_acknowledged_and_nothing_acknowledged_is_lost,
    orphan_samples_are_cancelled_on_reconnect_and_state_and_window_filters_run_in_sql,
    a_chunk_staged_when_its_connection_breaks_is_stored_once_after_a_quick_reconnect,
    a_hole_left_by_a_failed_batch_is_resent_and_chunks_the_agent_dropped_are_not_waited_for,
    unknown_users_and_rejected_statements_are_errors_with_clickhouses_message,
    an_events_table_of_an_older_collector_gets_the_request_column_and_keeps_its_rows,
);

/// The events table as collectors made it before events carried their request.
const OLD_EVENTS: &str = "CREATE TABLE old.events (day Date, time_ns UInt64, service String, \
     stream String, jvm UInt64, labels Nested(key String, value String), seq UInt64, \
     thread String, kind String, duration_ns UInt64, stack UInt64, weight UInt64, \
     size UInt64, fields Nested(key String, value String)) \
     ENGINE = MergeTree PARTITION BY toYYYYMMDD(day) ORDER BY (jvm, kind, time_ns)";

fn an_events_table_of_an_older_collector_gets_the_request_column_and_keeps_its_rows(
    server: Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-upgrade") else {
        return;
    };
    ch.query("CREATE DATABASE old").unwrap();
    ch.query(OLD_EVENTS).unwrap();
    ch.query(
        "INSERT INTO old.events (day, time_ns, jvm, kind, duration_ns) \
         VALUES (toDate('2026-11-01'), 5, 7, 'monitor', 9)",
    )
    .unwrap();
    let columns = || {
        ch.query("SELECT name FROM system.columns WHERE database = 'old' AND table = 'events' AND name = 'request'").unwrap()
    };
    assert_eq!(columns().trim(), "");
    drop(store_at(&ch, "old"));
    assert_eq!(columns().trim(), "request");
    let rows = ch
        .query("SELECT kind, duration_ns, request FROM old.events")
        .unwrap();
    assert_eq!(rows, "monitor\t9\t0\n", "the old row reads no request");
    // Connecting again changes nothing.
    drop(store_at(&ch, "old"));
    assert_eq!(columns().trim(), "request");
}

#[test]
fn the_current_clickhouse_is_the_26_9_engine() {
    let Some(ch) = ClickHouse::start_on(Server::Current, "ch-version") else {
        return;
    };
    let version = ch.version();
    assert!(version.starts_with("26.9."), "{version}");
}

fn agents_stream_into_clickhouse_and_every_collector_reads_them_back(server: Server) {
    let Some(ch) = ClickHouse::start_on(server, "ch-stream") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (server, _log) = start(&temp_dir("ch-stream-unused"), |c| c.store = Some(url));
    let addr = server.agents_addr().unwrap();
    let mut sims = [
        SimJvm::new(8101, "com.acme.A"),
        SimJvm::new(8102, "com.acme.B"),
    ];
    let mut sent = vec![Vec::new(), Vec::new()];
    for (sim, sent) in sims.iter_mut().zip(&mut sent) {
        let mut client = sim.connect(addr, 1);
        for seq in 1..=5 {
            let chunk = sim.chunk();
            client.send(seq, &chunk).unwrap();
            sent.push(chunk);
        }
        assert_eq!(client.wait_for_ack(5, ACK).unwrap(), 5);
        assert_eq!(client.finish(ACK).unwrap(), 5);
    }

    // Another collector on the same database sees both JVMs and where they stand.
    let other = store_at(&ch, "jscope");
    let jvms = other.jvms();
    assert_eq!(jvms.len(), 2, "{jvms:?}");
    for (sim, sent) in sims.iter().zip(&sent) {
        assert_eq!(other.resume(&sim.stream).unwrap().unwrap().acked, 5);
        let stored = other.read(&sim.stream, None, None).unwrap();
        let own = own_file(sim, sent);
        assert_eq!(stored.snapshots, own.snapshots);
        assert_eq!(stored.threads, own.threads);
        assert_eq!(collapsed(&stored), collapsed(&own));
        let raw = other.raw(&sim.stream, None, None).unwrap();
        assert_eq!(
            collapsed(&Recording::from_bytes(&raw).unwrap()),
            collapsed(&own)
        );
    }

    // One flame graph of both, counted in SQL, equals the merge of each read alone.
    let ids: Vec<String> = sims.iter().map(|s| s.stream.clone()).collect();
    let q = Query {
        jvms: ids.clone(),
        ..Query::default()
    };
    let (merged, _, _) = flame(&other, &q).unwrap();
    let mut by_hand = FlameGraph::new();
    for id in &ids {
        let rec = other.read(id, None, None).unwrap();
        let counts = Selection::default().stack_counts(&rec);
        for (frames, n) in collapse(&rec, &counts, CollapseOptions::default()).stacks {
            by_hand.add(frames, n);
        }
    }
    assert_eq!(merged.to_collapsed(), by_hand.to_collapsed());
    assert_eq!(merged.total(), 2 * 5 * SNAPSHOTS_PER_CHUNK * THREADS as u64);

    // A time window and a thread filter are answered in SQL too.
    let start = sims[0].header.start_wall_ns;
    let q = Query {
        jvms: vec![ids[0].clone()],
        from_ns: Some(start),
        to_ns: Some(start + 400_000_000),
        thread: Some("worker-*".into()),
        ..Query::default()
    };
    let (window, _, _) = flame(&other, &q).unwrap();
    assert_eq!(window.total(), 4 * (THREADS as u64 - 1));
    // Windows of whole minutes (per-minute counts) and ragged ends (sample rows).
    for (from, to) in [
        (Some(start - 30_000_000_000), None),
        (None, Some(start + 90_000_000_000)),
        (Some(start - 61_000_000_000), Some(start + 61_000_000_000)),
    ] {
        let q = Query {
            jvms: ids.clone(),
            from_ns: from,
            to_ns: to,
            ..Query::default()
        };
        assert_eq!(
            flame(&other, &q).unwrap().0.to_collapsed(),
            by_hand.to_collapsed()
        );
    }
    server.shutdown();

    // Retention drops whole days: a cutoff yesterday keeps today's partitions (their
    // max_date in system.parts is today), a cutoff tomorrow drops them.
    let kept = other.retain(now_ns() - 86_400_000_000_000).unwrap();
    assert_eq!(kept.segments_deleted, 0, "{kept:?}");
    let everything = Query {
        jvms: ids.clone(),
        ..Query::default()
    };
    assert_eq!(
        flame(&other, &everything).unwrap().0.to_collapsed(),
        by_hand.to_collapsed()
    );
    let gone = other.retain(now_ns() + 86_400_000_000_000).unwrap();
    assert!(
        gone.segments_deleted >= 2 && gone.bytes_freed > 0,
        "{gone:?}"
    );
    assert!(other.jvms().iter().all(|j| j.segments.is_empty()));
    let (all, _, _) = flame(
        &other,
        &Query {
            jvms: ids,
            ..Query::default()
        },
    )
    .unwrap();
    assert_eq!(all.total(), 0);
}

fn while_clickhouse_is_down_nothing_is_acknowledged_and_nothing_acknowledged_is_lost(
    server: Server,
) {
    let Some(mut ch) = ClickHouse::start_on(server, "ch-down") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (server, log) = start(&temp_dir("ch-down-unused"), |c| c.store = Some(url));
    let addr = server.agents_addr().unwrap();
    let mut sim = SimJvm::new(8201, "com.acme.Down");
    let mut chunks = Vec::new();
    let mut client = sim.connect(addr, 1);
    for seq in 1..=3 {
        chunks.push(sim.chunk());
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(client.wait_for_ack(3, ACK).unwrap(), 3);

    ch.stop();
    for seq in 4..=6 {
        chunks.push(sim.chunk());
        let _ = client.send(seq, &chunks[seq as usize - 1]);
    }
    let acked = client.wait_for_ack(6, Duration::from_secs(3)).unwrap_or(3);
    assert_eq!(acked, 3, "nothing is acknowledged while clickhouse is down");
    let said = |what: &str| log.lines().iter().filter(|l| l.contains(what)).count();
    assert_eq!(said("clickhouse insert failed"), 1, "{:?}", log.lines());

    ch.restart();
    // The agent reconnects and resends what was not acknowledged.
    let mut client = None;
    assert!(jscope_testkit::wait_until(Duration::from_secs(30), || {
        client = std::panic::catch_unwind(|| sim.connect(addr, 4)).ok();
        client.is_some()
    }));
    let mut client = client.unwrap();
    assert_eq!(client.accept().acked, 3);
    for seq in 4..=6 {
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(client.wait_for_ack(6, ACK).unwrap(), 6);
    assert_eq!(client.finish(ACK).unwrap(), 6);
    assert_eq!(said("clickhouse is back"), 1, "{:?}", log.lines());

    let rows = ch
        .query(&format!(
            "SELECT count() FROM jscope.samples WHERE stream = '{}'",
            sim.stream
        ))
        .unwrap();
    assert_eq!(
        rows.trim().parse::<u64>().unwrap(),
        6 * SNAPSHOTS_PER_CHUNK * THREADS as u64,
        "every snapshot thread of every acknowledged chunk, once"
    );
    let stored = store_at(&ch, "jscope")
        .read(&sim.stream, None, None)
        .unwrap();
    assert_eq!(stored.snapshots, own_file(&sim, &chunks).snapshots);
    server.shutdown();
}

/// The statements the other tests leave out: a connection cancelling the sample rows
/// of a batch whose chunk insert failed (their negated per-minute counts, and an
/// ALTER ... DELETE), a thread-state filter, and a JVM read back over a time window.
fn orphan_samples_are_cancelled_on_reconnect_and_state_and_window_filters_run_in_sql(
    server: Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-orphans") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (collector, _log) = start(&temp_dir("ch-orphans-unused"), |c| c.store = Some(url));
    let addr = collector.agents_addr().unwrap();
    let mut sim = SimJvm::new(8401, "com.acme.Orphans");
    let mut chunks = Vec::new();
    let mut client = sim.connect(addr, 1);
    for seq in 1..=3 {
        chunks.push(sim.chunk());
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(client.wait_for_ack(3, ACK).unwrap(), 3);
    assert_eq!(client.finish(ACK).unwrap(), 3);

    // A batch whose sample rows went in but whose chunk insert failed: chunk 3's
    // rows again as chunk 4's, counted per minute by the view as well.
    let columns = "day, time_ns, service, stream, jvm, labels.key, labels.value, seq, \
                   mode, thread, state, stack, weight";
    ch.query(&format!(
        "INSERT INTO jscope.samples ({columns}) SELECT {} FROM jscope.samples \
         WHERE stream = '{}' AND seq = 3",
        columns.replace("seq,", "toUInt64(4),"),
        sim.stream
    ))
    .unwrap();
    let stream = sim.stream.clone();
    let rows = || {
        ch.query(&format!(
            "SELECT count() FROM jscope.samples WHERE stream = '{stream}'"
        ))
        .unwrap()
        .trim()
        .parse::<u64>()
        .unwrap()
    };
    let per_chunk = SNAPSHOTS_PER_CHUNK * THREADS as u64;
    assert_eq!(rows(), 4 * per_chunk);

    // The agent comes back: the connection cancels the orphans, then chunks 4 and 5.
    let mut client = sim.connect(addr, 4);
    assert_eq!(client.accept().acked, 3);
    for seq in 4..=5 {
        chunks.push(sim.chunk());
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(client.wait_for_ack(5, ACK).unwrap(), 5);
    assert_eq!(client.finish(ACK).unwrap(), 5);
    collector.shutdown();
    // The delete is a mutation, applied in the background by both versions.
    assert!(
        jscope_testkit::wait_until(Duration::from_secs(20), || rows() == 5 * per_chunk),
        "orphan sample rows deleted: {} rows",
        rows()
    );
    let store = store_at(&ch, "jscope");
    let own = own_file(&sim, &chunks);
    let all = Query {
        jvms: vec![sim.stream.clone()],
        ..Query::default()
    };
    let (whole, _, _) = flame(&store, &all).unwrap();
    assert_eq!(whole.total(), 5 * per_chunk, "each sample once");
    assert_eq!(whole.to_collapsed(), collapsed(&own));
    // A window ending past the dates ClickHouse holds (18.16: 2106) still ends after
    // the data, as over the file store, instead of before it.
    let to_2200 = Query {
        from_ns: Some(0),
        to_ns: Some(7_258_118_400_000_000_000),
        ..all.clone()
    };
    assert_eq!(flame(&store, &to_2200).unwrap().0.total(), 5 * per_chunk);

    // Thread states, filtered in SQL: only `main` runs.
    let running = Query {
        states: vec![classify(0x5)],
        ..all.clone()
    };
    assert_eq!(
        flame(&store, &running).unwrap().0.total(),
        5 * SNAPSHOTS_PER_CHUNK
    );

    // A window reads from the dictionary prelude before its first chunk (the second
    // connection wrote one at chunk 4) to the last chunk starting in it; each chunk
    // holds 400 ms of snapshots.
    let start = sim.header.start_wall_ns;
    let window = store
        .read(
            &sim.stream,
            Some(start + 1_300_000_000),
            Some(start + 1_700_000_000),
        )
        .unwrap();
    assert_eq!(window.snapshots, own.snapshots[12..20].to_vec());
    assert_eq!(collapsed(&window), {
        let mut only = own.clone();
        only.snapshots = own.snapshots[12..20].to_vec();
        collapsed(&only)
    });
}

/// Refusals reach the store as errors carrying ClickHouse's message: an unknown user
/// (on 26.9 refused by the transport, which checks logins with the server's text),
/// and a statement the engine rejects.
fn unknown_users_and_rejected_statements_are_errors_with_clickhouses_message(server: Server) {
    let Some(ch) = ClickHouse::start_on(server, "ch-refusals") else {
        return;
    };
    let url = ch.url("jscope").replace("://", "://nobody:secret@");
    let log = Arc::new(MemoryLog::default());
    let err = match ClickHouseStore::connect(&url, log) {
        Ok(_) => panic!("an unknown user connected"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("HTTP ") && err.contains("nobody"), "{err}");
    let err = ch
        .query("SELECT count() FROM system.no_such_table")
        .unwrap_err();
    assert!(
        err.contains("Code: 60") && err.contains("no_such_table"),
        "{err}"
    );
}

fn a_chunk_staged_when_its_connection_breaks_is_stored_once_after_a_quick_reconnect(
    server: Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-requick") else {
        return;
    };
    // Batches wait 3 s: the broken connection's chunk is still in the writer when
    // the agent comes back.
    let url = format!("{}?flush_ms=3000", ch.url("jscope"));
    let (collector, _log) = start(&temp_dir("ch-requick-unused"), |c| c.store = Some(url));
    let addr = collector.agents_addr().unwrap();
    let mut sim = SimJvm::new(8501, "com.acme.Quick");
    let mut chunks = vec![sim.chunk(), sim.chunk()];
    let mut client = sim.connect(addr, 1);
    client.send(1, &chunks[0]).unwrap();
    assert_eq!(client.wait_for_ack(1, ACK).unwrap(), 1);
    drop(client);

    // Chunk 2 and a damaged chunk 3 in one write: the collector stages chunk 2,
    // finds chunk 3 unreadable before acknowledging, and drops the connection.
    let cfg = jscope_wire::ClientConfig::new(addr.to_string(), sim.stream.clone());
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    let mut out = Vec::new();
    jscope_wire::write_preamble(&mut out).unwrap();
    jscope_wire::write_message(
        &mut out,
        &jscope_wire::Message::Hello(jscope_wire::Hello {
            token: cfg.token.clone(),
            stream: cfg.stream.clone(),
            next_seq: 2,
            labels: Vec::new(),
            header: sim.header_bytes(),
        }),
    )
    .unwrap();
    std::io::Write::write_all(&mut tcp, &out).unwrap();
    match jscope_wire::read_message(&mut tcp, 1 << 20).unwrap() {
        jscope_wire::Message::Accept(a) => assert_eq!(a.acked, 1),
        other => panic!("{}", other.name()),
    }
    let mut out = Vec::new();
    for (seq, chunk) in [(2, chunks[1].clone()), (3, b"not a chunk".to_vec())] {
        jscope_wire::write_message(&mut out, &jscope_wire::Message::Chunk { seq, chunk }).unwrap();
    }
    std::io::Write::write_all(&mut tcp, &out).unwrap();
    // The collector ends the connection without an acknowledgement.
    let mut rest = Vec::new();
    let _ = std::io::Read::read_to_end(&mut tcp, &mut rest);

    // The agent comes back at once and resends what was not acknowledged.
    let mut client = sim.connect(addr, 2);
    let acked = client.accept().acked;
    chunks.push(sim.chunk());
    for seq in acked + 1..=3 {
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(client.wait_for_ack(3, ACK).unwrap(), 3);
    assert_eq!(client.finish(ACK).unwrap(), 3);
    collector.shutdown();

    // Each chunk's samples once.
    let rows = ch
        .query(&format!(
            "SELECT count(), uniqExact(seq) FROM jscope.samples WHERE stream = '{}'",
            sim.stream
        ))
        .unwrap();
    let per_chunk = SNAPSHOTS_PER_CHUNK * THREADS as u64;
    assert_eq!(rows, format!("{}\t3\n", 3 * per_chunk));
    let store = store_at(&ch, "jscope");
    assert_eq!(
        collapsed(&store.read(&sim.stream, None, None).unwrap()),
        collapsed(&own_file(&sim, &chunks))
    );
}

fn a_hole_left_by_a_failed_batch_is_resent_and_chunks_the_agent_dropped_are_not_waited_for(
    server: Server,
) {
    let Some(ch) = ClickHouse::start_on(server, "ch-hole") else {
        return;
    };
    let url = format!("{}?flush_ms=100", ch.url("jscope"));
    let (collector, _log) = start(&temp_dir("ch-hole-unused"), |c| c.store = Some(url.clone()));
    let (other, _log) = start(&temp_dir("ch-hole-other"), |c| c.store = Some(url));
    let addr = collector.agents_addr().unwrap();
    let mut sim = SimJvm::new(8601, "com.acme.Hole");
    let mut chunks: Vec<Vec<u8>> = (1..=4).map(|_| sim.chunk()).collect();
    let mut client = sim.connect(addr, 1);
    for seq in 1..=4 {
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
        assert_eq!(client.wait_for_ack(seq, ACK).unwrap(), seq);
    }
    assert_eq!(client.finish(ACK).unwrap(), 4);

    // What a failed batch for chunk 3 followed by a good one for chunk 4 leaves:
    // no chunk 3 and none of its rows.
    let stream = sim.stream.clone();
    for table in ["chunks", "samples"] {
        ch.query(&format!(
            "ALTER TABLE jscope.{table} DELETE WHERE stream = '{stream}' AND seq = 3"
        ))
        .unwrap();
    }
    let count = |q: &str| ch.query(q).unwrap().trim().parse::<u64>().unwrap();
    let samples = || {
        count(&format!(
            "SELECT count() FROM jscope.samples WHERE stream = '{stream}'"
        ))
    };
    let per_chunk = SNAPSHOTS_PER_CHUNK * THREADS as u64;
    assert!(
        jscope_testkit::wait_until(Duration::from_secs(20), || {
            samples() == 3 * per_chunk
                && count(&format!(
                    "SELECT count() FROM jscope.chunks WHERE stream = '{stream}' AND seq = 3"
                )) == 0
        }),
        "chunk 3 deleted"
    );

    // The agent moves to another collector; it is told only chunks 1 and 2 are
    // stored, and sends 3 and 4 again.
    let mut client = sim.connect(other.agents_addr().unwrap(), 1);
    assert_eq!(client.accept().acked, 2);
    for seq in 3..=4 {
        client.send(seq, &chunks[seq as usize - 1]).unwrap();
    }
    assert_eq!(client.wait_for_ack(4, ACK).unwrap(), 4);
    // Chunks 5 and 6 the agent dropped (its buffer was full): 7 comes next.
    chunks.extend([sim.chunk(), sim.chunk(), sim.chunk()]);
    client.send(7, &chunks[6]).unwrap();
    assert_eq!(client.wait_for_ack(7, ACK).unwrap(), 7);
    drop(client);
    // Back to the first: the agent's own gap does not hold the stream back.
    let client = sim.connect(addr, 8);
    assert_eq!(client.accept().acked, 7);
    assert_eq!(client.finish(ACK).unwrap(), 7);
    collector.shutdown();
    other.shutdown();

    assert!(
        jscope_testkit::wait_until(Duration::from_secs(20), || samples() == 5 * per_chunk),
        "each stored chunk's samples once: {} rows",
        samples()
    );
    assert_eq!(
        ch.query(&format!(
            "SELECT seq, count() FROM jscope.samples WHERE stream = '{stream}' \
             GROUP BY seq ORDER BY seq"
        ))
        .unwrap(),
        [1, 2, 3, 4, 7]
            .iter()
            .map(|s| format!("{s}\t{per_chunk}\n"))
            .collect::<String>()
    );
}
