//! Bad input is refused with one log line each while a good agent keeps streaming.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::*;
use jscope_testkit::{temp_dir, wait_until};
use jscope_wire::{write_preamble, ClientConfig, RefuseCode, WireClient, WireError};

const MAX_FRAME: u32 = 1 << 20;

fn lines_about(log: &[String], peer: SocketAddr) -> Vec<String> {
    let tag = format!("{peer}:");
    log.iter()
        .filter(|l| l.starts_with(&tag))
        .cloned()
        .collect()
}

/// Streams a chunk every 20 ms until told to stop; returns the acknowledged count.
fn good_agent(addr: SocketAddr, token: &str, stop: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    let token = token.to_string();
    thread::spawn(move || {
        let mut sim = SimJvm::new(5000, "com.acme.Good");
        let mut cfg = ClientConfig::new(addr.to_string(), sim.stream.clone());
        cfg.token = token;
        let mut c = WireClient::connect(&cfg, &sim.header_bytes(), 1).unwrap();
        let mut seq = 0;
        while !stop.load(Ordering::SeqCst) {
            seq += 1;
            c.send(seq, &sim.chunk()).unwrap();
            c.poll_acks().unwrap();
            thread::sleep(Duration::from_millis(20));
        }
        let acked = c.wait_for_ack(seq, Duration::from_secs(5)).unwrap();
        assert_eq!(acked, seq, "every chunk of the good agent is acknowledged");
        acked
    })
}

#[test]
fn bad_clients_are_refused_with_one_line_while_others_flow() {
    let (server, log) = start(&temp_dir("collector-bad"), |c| {
        c.token = Some("s3cret".into());
        c.max_frame = MAX_FRAME;
        c.stall_timeout = Duration::from_millis(500);
    });
    let addr = server.agents_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let good = good_agent(addr, "s3cret", stop.clone());

    // Garbage: an HTTP request on the agent port.
    let mut garbage = TcpStream::connect(addr).unwrap();
    garbage
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let garbage_peer = garbage.local_addr().unwrap();

    // A client that stops in the middle of its hello frame.
    let mut stalled = TcpStream::connect(addr).unwrap();
    write_preamble(&mut stalled).unwrap();
    stalled.write_all(&[1, 200, 0, 0, 0, 1, 2, 3]).unwrap();
    let stalled_peer = stalled.local_addr().unwrap();

    // A wrong token.
    let sim = SimJvm::new(5001, "com.acme.Intruder");
    let mut cfg = ClientConfig::new(addr.to_string(), sim.stream.clone());
    cfg.token = "guess".into();
    match WireClient::connect(&cfg, &sim.header_bytes(), 1) {
        Err(WireError::Refused {
            code: RefuseCode::BadToken,
            ..
        }) => {}
        other => panic!("wrong token accepted: {:?}", other.map(|_| ())),
    }

    // An oversized frame after a correct handshake.
    let big = SimJvm::new(5002, "com.acme.Big");
    let big_peer = {
        let mut raw = TcpStream::connect(addr).unwrap();
        write_preamble(&mut raw).unwrap();
        let hello = jscope_wire::Message::Hello(jscope_wire::Hello {
            token: "s3cret".into(),
            stream: format!("{}-raw", big.stream),
            next_seq: 1,
            labels: vec![],
            header: big.header_bytes(),
        });
        raw.write_all(&hello.encode()).unwrap();
        let mut frame = vec![4u8];
        frame.extend_from_slice(&(MAX_FRAME + 1).to_le_bytes());
        raw.write_all(&frame).unwrap();
        let peer = raw.local_addr().unwrap();
        std::mem::forget(raw); // keep it open: the server must not wait for the payload
        peer
    };

    let token_lines = || {
        log.lines()
            .iter()
            .filter(|l| l.contains("refused: wrong or missing token"))
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(5), || {
            let l = log.lines();
            !lines_about(&l, garbage_peer).is_empty()
                && !lines_about(&l, stalled_peer).is_empty()
                && l.iter()
                    .any(|x| x.starts_with(&format!("{big_peer}:")) && x.contains("dropped"))
                && token_lines() == 1
        }),
        "log: {:#?}",
        log.lines()
    );
    thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let acked = good.join().unwrap();
    assert!(acked >= 10, "the good agent kept flowing ({acked} chunks)");

    let l = log.lines();
    let one = |peer: SocketAddr, what: &str| {
        let lines = lines_about(&l, peer);
        assert_eq!(lines.len(), 1, "one line for {peer}: {lines:?}");
        assert!(lines[0].contains(what), "{lines:?}");
    };
    one(garbage_peer, "bad preamble");
    one(stalled_peer, "stalled in the middle of a frame");
    assert_eq!(token_lines(), 1);
    let big_lines: Vec<String> = l
        .iter()
        .filter(|x| x.starts_with(&format!("{big_peer}:")) && !x.contains("connected jvm"))
        .cloned()
        .collect();
    assert_eq!(big_lines.len(), 1, "{big_lines:?}");
    assert!(big_lines[0].contains("exceeds the limit"), "{big_lines:?}");
    assert_eq!(server.stats().unwrap().connections_refused, 3);
    server.shutdown();
}

#[test]
fn non_loopback_without_token_does_not_start() {
    let cfg = jscope_collector::ServerConfig {
        agents: "0.0.0.0:0".into(),
        http: None,
        data: temp_dir("collector-notoken"),
        ..Default::default()
    };
    let err = jscope_collector::serve(cfg).err().expect("refused");
    assert!(err.to_string().contains("needs --token"), "{err}");
}

#[test]
fn http_api_needs_the_token_when_one_is_set() {
    let (server, _log) = start(&temp_dir("collector-http-token"), |c| {
        c.token = Some("t0k".into())
    });
    let http = server.http_addr().unwrap();
    assert_eq!(http_get(http, "/api/jvms").0, 401);
    assert_eq!(http_get(http, "/api/jvms?token=t0k").0, 200);
    // The UI's static files carry no data.
    assert_eq!(http_get(http, "/").0, 200);
    server.shutdown();
}

#[test]
fn a_garbage_chunk_drops_only_its_connection() {
    let (server, log) = start(&temp_dir("collector-badchunk"), |_| {});
    let addr = server.agents_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let good = good_agent(addr, "", stop.clone());
    let sim = SimJvm::new(5003, "com.acme.Corrupt");
    let mut c = sim.connect(addr, 1);
    let mut bad = SimJvm::new(5003, "x").chunk();
    let n = bad.len();
    bad[n - 1] ^= 0xff; // breaks the CRC
    c.send(1, &bad).unwrap();
    assert!(wait_until(Duration::from_secs(5), || log
        .lines()
        .iter()
        .any(|l| l.contains("chunk 1: checksum mismatch"))));
    assert_eq!(
        c.wait_for_ack(1, Duration::from_millis(300)).unwrap_or(0),
        0
    );
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    assert!(good.join().unwrap() >= 5);
    server.shutdown();
}

/// A plugin with a bug: it panics on the data of one JVM (pid 5100).
struct PanickyPlugin;

impl jscope_collector::ServerListener for PanickyPlugin {
    fn name(&self) -> &'static str {
        "panicky"
    }

    fn on_data(
        &self,
        c: &jscope_collector::Connection,
        _t: &jscope_collector::Trace,
    ) -> Result<(), jscope_collector::ListenerError> {
        assert!(c.jvm.pid != 5100, "a bug in the plugin");
        Ok(())
    }
}

#[test]
fn a_panicking_plugin_drops_its_connection_with_one_line_and_the_rest_flows() {
    let log = Arc::new(jscope_collector::MemoryLog::default());
    let server = jscope_collector::serve_with(
        jscope_collector::ServerConfig {
            agents: "127.0.0.1:0".into(),
            http: None,
            data: temp_dir("collector-panicky"),
            log: log.clone(),
            ..jscope_collector::ServerConfig::default()
        },
        vec![Arc::new(PanickyPlugin)],
    )
    .unwrap();
    let addr = server.agents_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let good = good_agent(addr, "", stop.clone());

    let mut bad = SimJvm::new(5100, "com.acme.Unlucky");
    let mut c = bad.connect(addr, 1);
    c.send(1, &bad.chunk()).unwrap();
    assert_ne!(
        c.wait_for_ack(1, Duration::from_secs(5)).ok(),
        Some(1),
        "no acknowledgement for a chunk a plugin failed on"
    );
    let said = format!("dropped jvm {}: panicky: the plugin panicked", bad.stream);
    assert!(
        wait_until(Duration::from_secs(5), || log
            .lines()
            .iter()
            .any(|l| l.contains(&said))),
        "{:#?}",
        log.lines()
    );
    // Its place among the connections is free again: only the good agent is active.
    assert!(wait_until(Duration::from_secs(5), || server
        .stats()
        .unwrap()
        .connections_active
        == 1));
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    assert!(good.join().unwrap() > 0);
    server.shutdown();
}
