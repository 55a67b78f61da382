//! `GET /metrics`: simulated agents stream a known load through the real ingest and
//! the HTTP API answers known requests; the page parses as Prometheus text with
//! `prometheus-parse`, and its counters match what the load sent (within 1%; they
//! are exact here), per JVM too, agent counters included.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use jscope_testkit::temp_dir;
use jscope_wire::{ClientConfig, WireClient, WireError};
use prometheus_parse::{Scrape, Value};

const TOKEN: &str = "metrics-token";
const CHUNKS: u64 = 25;

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    http_get(addr, &format!("{path}?token={TOKEN}"))
}

fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{metric}: {other:?}"),
        })
        .collect();
    assert_eq!(found.len(), 1, "{metric}{labels:?}: {found:?}");
    found[0]
}

fn within_1_percent(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= want.abs() * 0.01,
        "{what}: /metrics says {got}, the load sent {want}"
    );
}

#[test]
fn metrics_parse_as_prometheus_text_and_count_what_was_sent() {
    let (server, _log) = start(&temp_dir("metrics"), |c| c.token = Some(TOKEN.into()));
    let agents = server.agents_addr().unwrap();
    let http = server.http_addr().unwrap();

    // Three JVMs, each CHUNKS chunks; the last chunk carries the agent's counters.
    let mut sims: Vec<SimJvm> = (0..3)
        .map(|i| SimJvm::new(9100 + i, &format!("com.acme.M{i}")))
        .collect();
    let (mut bytes, mut samples) = (0u64, 0u64);
    for (i, sim) in sims.iter_mut().enumerate() {
        let mut cfg = ClientConfig::new(agents.to_string(), sim.stream.clone());
        cfg.token = TOKEN.into();
        let mut client = WireClient::connect(&cfg, &sim.header_bytes(), 1).unwrap();
        for seq in 1..=CHUNKS {
            let chunk = if seq == CHUNKS {
                sim.chunk_with_counters(&[
                    ("samples.written", 1000 + i as u64),
                    ("samples.dropped", 7 * i as u64),
                    ("walk.failed.gc_active", 3),
                    ("walk.failed.deopt", 11 + i as u64),
                    ("collector.buffered_bytes", 4096),
                ])
            } else {
                sim.chunk()
            };
            bytes += chunk.len() as u64;
            samples += SNAPSHOTS_PER_CHUNK * THREADS as u64;
            client.send(seq, &chunk).unwrap();
        }
        assert_eq!(
            client
                .wait_for_ack(CHUNKS, Duration::from_secs(20))
                .unwrap(),
            CHUNKS
        );
        // The first two say goodbye; the third stays connected.
        if i < 2 {
            client.finish(Duration::from_secs(20)).unwrap();
        } else {
            std::mem::forget(client);
        }
    }
    // Two refused for a wrong token.
    for _ in 0..2 {
        let sim = SimJvm::new(9200, "com.acme.Wrong");
        let mut cfg = ClientConfig::new(agents.to_string(), sim.stream.clone());
        cfg.token = "wrong".into();
        let refused = WireClient::connect(&cfg, &sim.header_bytes(), 1).err();
        assert!(
            matches!(refused, Some(WireError::Refused { .. })),
            "{refused:?}"
        );
    }
    // HTTP requests of known routes and statuses.
    for _ in 0..3 {
        assert_eq!(get(http, "/api/jvms").0, 200);
    }
    assert_eq!(http_get(http, "/api/jvms").0, 401);
    assert_eq!(get(http, "/api/jvms/nope/recording").0, 404);

    let (status, text) = get(http, "/metrics");
    assert_eq!(status, 200);
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    // Every line is a comment or a sample the parser took.
    let sample_lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    let bucket_lines = text.lines().filter(|l| l.contains("_bucket{")).count();
    assert!(bucket_lines > 0);
    assert_eq!(
        scrape.samples.len(),
        // a histogram's buckets are one sample; its _sum and _count one each
        sample_lines - bucket_lines + 1,
        "{text}"
    );
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let name = line.split_whitespace().nth(2).unwrap();
        assert!(scrape.docs.contains_key(name), "no HELP for {name}");
    }

    let v = |m: &str| value(&scrape, m, &[]);
    within_1_percent(
        v("jscope_chunks_received_total"),
        (3 * CHUNKS) as f64,
        "chunks",
    );
    within_1_percent(
        v("jscope_samples_received_total"),
        samples as f64,
        "samples",
    );
    within_1_percent(v("jscope_bytes_received_total"), bytes as f64, "bytes");
    assert_eq!(v("jscope_agents_connected"), 1.0);
    assert_eq!(v("jscope_connections_accepted_total"), 3.0);
    assert_eq!(v("jscope_store_errors_total"), 0.0);
    assert_eq!(v("jscope_queued_bytes"), 0.0);
    assert_eq!(
        value(
            &scrape,
            "jscope_connections_refused_total",
            &[("reason", "token")]
        ),
        2.0
    );
    let histogram = scrape
        .samples
        .iter()
        .find(|s| s.metric == "jscope_store_write_seconds")
        .expect("the store latency histogram");
    let Value::Histogram(buckets) = &histogram.value else {
        panic!("{histogram:?}")
    };
    let inf = buckets.iter().find(|b| b.less_than.is_infinite()).unwrap();
    assert!(
        inf.count >= 3.0,
        "one durable batch per JVM at least: {buckets:?}"
    );
    assert!(buckets.windows(2).all(|w| w[0].count <= w[1].count));
    let count = value(&scrape, "jscope_store_write_seconds_count", &[]);
    assert_eq!(count, inf.count);
    let http_count = |route: &str, status: &str| {
        value(
            &scrape,
            "jscope_http_requests_total",
            &[("route", route), ("status", status)],
        )
    };
    assert_eq!(http_count("/api/jvms", "200"), 3.0);
    assert_eq!(http_count("/api/jvms", "401"), 1.0);
    assert_eq!(http_count("/api/jvms", "404"), 1.0);

    // Per JVM: the collector's view and the agent's own counters.
    let by_jvm: HashMap<String, usize> = sims
        .iter()
        .enumerate()
        .map(|(i, s)| (s.stream.clone(), i))
        .collect();
    for (id, &i) in &by_jvm {
        let j = |m: &str, extra: &[(&str, &str)]| {
            let mut labels = vec![("jvm", id.as_str())];
            labels.extend_from_slice(extra);
            value(&scrape, m, &labels)
        };
        assert_eq!(j("jscope_jvm_chunks_received_total", &[]), CHUNKS as f64);
        within_1_percent(
            j("jscope_jvm_samples_received_total", &[]),
            (CHUNKS * SNAPSHOTS_PER_CHUNK * THREADS as u64) as f64,
            "a JVM's samples",
        );
        assert_eq!(
            j("jscope_jvm_connected", &[]),
            if i == 2 { 1.0 } else { 0.0 }
        );
        assert_eq!(
            j("jscope_agent_samples_written_total", &[]),
            1000.0 + i as f64
        );
        assert_eq!(j("jscope_agent_samples_dropped_total", &[]), 7.0 * i as f64);
        assert_eq!(j("jscope_agent_buffered_bytes", &[]), 4096.0);
        assert_eq!(
            j("jscope_agent_walks_failed_total", &[("reason", "deopt")]),
            11.0 + i as f64
        );
        assert_eq!(
            j(
                "jscope_agent_walks_failed_total",
                &[("reason", "gc_active")]
            ),
            3.0
        );
    }
    // The token guards the page like the API.
    assert_eq!(http_get(http, "/metrics").0, 401);
    server.shutdown();
}
