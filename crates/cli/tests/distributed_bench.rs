//! BENCHMARKS.md target: `jscope merge` over recordings that total 10 M trace
//! events across 10 JVMs in at most 5 s. Ignored by default (it writes ~10 M
//! events); run with
//! `cargo test --release -p jscope-cli --test distributed_bench -- --ignored --nocapture`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use jscope_format::*;
use jscope_testkit::{temp_dir, RecordingBuilder};
use support::*;

const JVMS: u32 = 10;
const EVENTS_PER_JVM: u64 = 1_000_000;
/// Remote calls from JVM 0 to each server.
const CALLS_PER_SERVER: u64 = 200;
const EVENTS_PER_CHUNK: usize = 100_000;

/// 1 tick = 1 ns. Thread 1 repeats `A { B }` (4 events per 4 µs); on JVM 0 every
/// 100th A is a stub call to a server, which serves it on its thread 2.
fn write_jvm(path: &Path, pid: u32) {
    let start = 1_000_000_000u64;
    let mut b = RecordingBuilder::with_header(Header {
        pid,
        host: format!("10.2.0.{pid}"),
        start_ticks: start,
        start_wall_ns: 1_700_000_000_000_000_000 + u64::from(pid) * 60_000_000_000,
        ticks_per_second: 1_000_000_000,
        modes: "trace".into(),
        ..Default::default()
    });
    let (a, bm) = (b.method("bench.App.a"), b.method("bench.App.b"));
    let ev = |kind, method, ns: u64| TraceEvent {
        kind,
        method,
        ticks: start + ns,
        untraced: 0,
        cpu_ns: 0,
    };
    let mut events = Vec::with_capacity(EVENTS_PER_CHUNK);
    let iterations = EVENTS_PER_JVM / 4;
    for i in 0..iterations {
        let t = i * 4_000;
        events.extend([
            ev(TraceKind::Enter, a, t),
            ev(TraceKind::Enter, bm, t + 1_000),
            ev(TraceKind::Exit, bm, t + 2_000),
            ev(TraceKind::Exit, a, t + 3_000),
        ]);
        if events.len() >= EVENTS_PER_CHUNK {
            b.trace(&TraceBatch {
                thread: ThreadId(1),
                has_cpu: false,
                events: std::mem::take(&mut events),
            });
            b.cut();
        }
    }
    b.trace(&TraceBatch {
        thread: ThreadId(1),
        has_cpu: false,
        events,
    });
    remote_calls(&mut b, pid, start);
    std::fs::write(path, b.bytes(None)).unwrap();
}

fn remote_calls(b: &mut RecordingBuilder, pid: u32, start: u64) {
    let (object, method) = (b.string("[1]"), b.string("call()V"));
    let served_method = b.method("bench.Served.run");
    let (me, client_host) = (b.string(&format!("10.2.0.{pid}")), b.string("10.2.0.0"));
    let rc = |side, thread, ns: u64, dur, local: (StringId, u32), remote: (StringId, u32), seq| {
        RemoteCall {
            side,
            protocol: RemoteProtocol::Rmi,
            thread,
            ticks: start + ns,
            duration_ns: dur,
            local_host: local.0,
            local_port: local.1,
            remote_host: remote.0,
            remote_port: remote.1,
            conn_seq: seq,
            object,
            method_hash: 1,
            method,
            request_id: StringId::NONE,
            stack: StackId::NONE,
            failed: false,
        }
    };
    let mut served = vec![];
    for s in 1..JVMS {
        let server_host = b.string(&format!("10.2.0.{s}"));
        for k in 0..CALLS_PER_SERVER {
            // JVM 0's A call number (s * CALLS_PER_SERVER + k) * 100 is the stub.
            let t = (u64::from(s) * CALLS_PER_SERVER + k) * 100 * 4_000;
            let (client, server) = ((client_host, 50_000 + s), (me, 1099));
            if pid == 0 {
                b.remote(&rc(
                    RemoteSide::Client,
                    ThreadId(1),
                    t + 100,
                    2_800,
                    client,
                    (server_host, 1099),
                    k + 1,
                ));
            } else if pid == s {
                served.push(rc(
                    RemoteSide::Server,
                    ThreadId(2),
                    t + 500,
                    1_000,
                    server,
                    client,
                    k + 1,
                ));
            }
        }
    }
    if pid == 0 {
        return;
    }
    let events = served
        .iter()
        .flat_map(|r| {
            let t = r.ticks - start;
            [
                TraceEvent {
                    kind: TraceKind::Enter,
                    method: served_method,
                    ticks: start + t + 100,
                    untraced: 0,
                    cpu_ns: 0,
                },
                TraceEvent {
                    kind: TraceKind::Exit,
                    method: served_method,
                    ticks: start + t + 900,
                    untraced: 0,
                    cpu_ns: 0,
                },
            ]
        })
        .collect();
    b.trace(&TraceBatch {
        thread: ThreadId(2),
        has_cpu: false,
        events,
    });
    for r in &served {
        b.remote(r);
    }
}

#[test]
#[ignore = "benchmark: writes 10 M events; run with --release -- --ignored"]
fn merging_10_m_events_across_10_jvms() {
    let dir = temp_dir("distributed-bench");
    let paths: Vec<PathBuf> = (0..JVMS).map(|j| dir.join(format!("jvm{j}.jsc"))).collect();
    for (j, p) in paths.iter().enumerate() {
        write_jvm(p, j as u32);
    }
    let session = dir.join("bench.jss");
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", session.to_str().unwrap()]);
    let t0 = Instant::now();
    let out = jscope(&args);
    let took = t0.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = stdout(&out);
    let expected = (JVMS as u64 - 1) * CALLS_PER_SERVER;
    assert!(
        summary.contains(&format!(
            "{expected} remote calls matched, 0 client calls unmatched, 0 server calls unmatched"
        )),
        "{summary}"
    );
    let t1 = Instant::now();
    let tree = jscope(&[
        "tree",
        "--distributed",
        session.to_str().unwrap(),
        "--jvm",
        "0",
        "--depth",
        "1",
    ]);
    let tree_took = t1.elapsed();
    assert!(tree.status.success(), "{}", stderr(&tree));
    println!(
        "merge of {} events across {JVMS} JVMs: {:.2} s (target 5 s); tree --distributed --depth 1: {:.2} s",
        u64::from(JVMS) * EVENTS_PER_JVM + expected * 2,
        took.as_secs_f64(),
        tree_took.as_secs_f64()
    );
}
