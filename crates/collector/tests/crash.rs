//! kill -9 of the collector mid-stream, then a restart: no acknowledged chunk is lost
//! and the resumed stream has no duplicates.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use jscope_testkit::{temp_dir, Child};
use jscope_wire::{ClientConfig, Outbox, Pushed, WireClient};

const TOTAL: u64 = 60;
const KILL_AT: u64 = 25;

fn start_server(data: &Path) -> (Child, SocketAddr, SocketAddr) {
    let mut child = Child::spawn(
        Command::new(env!("CARGO_BIN_EXE_jscope-collector-test-server"))
            .arg(data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = |key: &str| -> SocketAddr {
        let field = line
            .split_whitespace()
            .find_map(|f| f.strip_prefix(key))
            .unwrap();
        field.parse().unwrap()
    };
    let (agents, http) = (addr("agents="), addr("http="));
    (child, agents, http)
}

fn connect(sim: &SimJvm, agents: SocketAddr, out: &Outbox) -> WireClient {
    let cfg = ClientConfig::new(agents.to_string(), sim.stream.clone());
    WireClient::connect(&cfg, &sim.header_bytes(), out.next_seq()).unwrap()
}

/// Sends every queued chunk not yet written to this connection.
fn pump(c: &mut WireClient, out: &mut Outbox) -> Result<(), jscope_wire::WireError> {
    while let Some((seq, chunk)) = out.next_unsent() {
        let chunk = chunk.to_vec();
        c.send(seq, &chunk)?;
        out.mark_sent(seq);
        out.ack(c.poll_acks()?);
    }
    Ok(())
}

#[test]
fn kill_9_mid_stream_loses_no_acknowledged_chunk() {
    let data = temp_dir("collector-crash");
    let (mut server, agents, _) = start_server(&data);
    let mut sim = SimJvm::new(6000, "com.acme.Crash");
    let mut out = Outbox::new(64 << 20);
    let mut c = connect(&sim, agents, &out);
    let (mut acked, mut made) = (0, 0);
    for n in 1..=TOTAL {
        made = n;
        assert!(matches!(out.push(sim.chunk()), Pushed::Queued(s) if s == n));
        if n == KILL_AT {
            acked = c
                .wait_for_ack(KILL_AT - 5, Duration::from_secs(10))
                .unwrap();
            // SIGKILL while chunks are in flight.
            server.0.kill().unwrap();
            server.0.wait().unwrap();
        }
        if pump(&mut c, &mut out).is_err() {
            break;
        }
        acked = acked.max(c.acked());
    }
    assert!(acked >= KILL_AT - 5, "acked {acked} before the kill");

    let (server, agents, http) = start_server(&data);
    // Before the agent is back, the store already holds every acknowledged chunk.
    let row = get_json(http, &format!("/api/jvms/{}", sim.stream));
    assert!(row["jvm"]["last_seq"].as_u64().unwrap() >= acked, "{row}");
    let flame = get_json(http, &format!("/api/flame?jvm={}", sim.stream));
    let per_chunk = SNAPSHOTS_PER_CHUNK * THREADS as u64;
    assert!(
        flame["samples"].as_u64().unwrap() >= acked * per_chunk,
        "{flame}"
    );

    let mut c = connect(&sim, agents, &out);
    let resumed = c.accept().acked;
    assert!(resumed >= acked);
    out.resume(resumed);
    for _ in made + 1..=TOTAL {
        out.push(sim.chunk());
    }
    pump(&mut c, &mut out).unwrap();
    assert_eq!(c.finish(Duration::from_secs(10)).unwrap(), TOTAL);

    let flame = get_json(
        http,
        &format!("/api/flame?jvm={}&mode=snapshot", sim.stream),
    );
    assert_eq!(
        flame["samples"],
        TOTAL * per_chunk,
        "every chunk once, none twice"
    );
    drop(server);
}
