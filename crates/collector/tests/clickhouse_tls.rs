//! The collector's ClickHouse store over HTTPS (`clickhouse+https://...?ca=FILE`)
//! against a real `clickhouse-server` (18.16) serving a certificate a test CA signed:
//! an agent's chunks are acknowledged and land in ClickHouse; a store URL trusting
//! another CA, or naming the plain HTTP port, stops the collector from starting with
//! one error naming TLS.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use jscope_collector::{serve, MemoryLog, ServerConfig};
use jscope_testkit::pki::TestCa;
use jscope_testkit::{temp_dir, ClickHouse};

#[test]
fn the_store_speaks_https_to_clickhouse_and_checks_its_certificate() {
    let dir = temp_dir("ch-tls-pki");
    let ca = TestCa::new(&dir, "ch");
    let other = TestCa::new(&dir, "other");
    let cert = ca.server("clickhouse", "clickhouse");
    let Some(ch) = ClickHouse::start_https("ch-tls", &cert.cert, &cert.key) else {
        return;
    };
    let https = ch.https_port.unwrap();
    let url = |ca: &std::path::Path| {
        format!(
            "clickhouse+https://127.0.0.1:{https}/jscope?flush_ms=100&ca={}",
            ca.display()
        )
    };
    let (server, _log) = start(&temp_dir("ch-tls-unused"), |c| c.store = Some(url(&ca.ca)));
    let addr = server.agents_addr().unwrap();
    let mut sim = SimJvm::new(8801, "com.acme.Secure");
    let mut client = sim.connect(addr, 1);
    for seq in 1..=3 {
        client.send(seq, &sim.chunk()).unwrap();
    }
    assert_eq!(client.wait_for_ack(3, Duration::from_secs(20)).unwrap(), 3);
    assert_eq!(client.finish(Duration::from_secs(20)).unwrap(), 3);
    server.shutdown();
    // Read back over plain HTTP, beside the store.
    let chunks = ch
        .query(&format!(
            "SELECT count() FROM jscope.chunks FINAL WHERE kind = 1 AND stream = '{}'",
            sim.stream
        ))
        .unwrap();
    assert_eq!(chunks.trim(), "3", "chunks stored over HTTPS");

    for (bad, why) in [
        (url(&other.ca), "certificate"),
        (
            format!(
                "clickhouse+https://127.0.0.1:{}/jscope?ca={}",
                ch.http_port,
                ca.ca.display()
            ),
            "TLS",
        ),
    ] {
        let cfg = ServerConfig {
            agents: "127.0.0.1:0".into(),
            http: None,
            store: Some(bad.clone()),
            log: Arc::new(MemoryLog::default()),
            ..ServerConfig::default()
        };
        let e = serve(cfg).err().expect("refused").to_string();
        assert!(e.contains(why) && !e.contains('\n'), "{bad}: {e}");
    }
}
