//! Load through two collectors into a replicated ClickHouse cluster: ZooKeeper and
//! 2 shards x 2 replicas of `clickhouse-server` on loopback ports (the testkit's),
//! two release `jscope-collector serve --store clickhouse://...?cluster=...` (each
//! through another shard's node), and two `jscope-loadgen` processes, each sending
//! half of the simulated agents (snapshot mode, one thread, RATE samples/s, ten
//! services) to one collector for SECONDS.
//!
//! Prints: chunks sent and acknowledged, collector CPU seconds per million samples,
//! ClickHouse bytes per sample (active parts of the database on one replica of each
//! shard, and on every node), and the time of the flame graph of everything (every
//! JVM, the whole window) through a collector's API.
//!
//! ```text
//! cargo build --release -p jscope-collector --bins
//! JSCOPE_BENCH_AGENTS=1000 JSCOPE_BENCH_RATE=100 JSCOPE_BENCH_SECONDS=600 \
//!     cargo bench -p jscope-collector --bench cluster_load
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jscope_testkit::{temp_dir, Child, Cluster};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn release_bin(name: &str) -> PathBuf {
    let root = jscope_testkit::workspace_root();
    let bin = root.join("target/release").join(name);
    assert!(
        bin.is_file(),
        "{} is missing: cargo build --release -p jscope-collector --bins",
        bin.display()
    );
    bin
}

struct Collector {
    child: Child,
    agents: SocketAddr,
    http: SocketAddr,
}

fn collector(store: &str, data: &std::path::Path) -> Collector {
    let mut child = Child::spawn(
        Command::new(release_bin("jscope-collector"))
            .args(["serve", "--agents", "127.0.0.1:0", "--http", "127.0.0.1:0"])
            .arg("--data")
            .arg(data)
            .args(["--store", store])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(data.with_extension("log")).unwrap()),
    );
    let out = BufReader::new(child.0.stdout.take().unwrap());
    let mut agents = None;
    for line in out.lines().map_while(Result::ok) {
        if let Some(rest) = line.strip_prefix("jscope: agents: collector=") {
            agents = rest.split_whitespace().next().map(|a| a.parse().unwrap());
        }
        if let Some(rest) = line.strip_prefix("jscope: UI: http://") {
            let http = rest.split('/').next().unwrap().parse().unwrap();
            return Collector {
                child,
                agents: agents.expect("agents address first"),
                http,
            };
        }
    }
    panic!(
        "the collector printed no addresses: {}",
        std::fs::read_to_string(data.with_extension("log")).unwrap_or_default()
    );
}

fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, out[at..].to_vec())
}

fn main() {
    let agents = env("JSCOPE_BENCH_AGENTS", 1000);
    let rate = env("JSCOPE_BENCH_RATE", 100);
    let seconds = env("JSCOPE_BENCH_SECONDS", 600);
    let started = Instant::now();
    let Some(cluster) = Cluster::start("bench_cluster", 2, 2) else {
        eprintln!("no ZooKeeper or clickhouse-server: nothing measured");
        return;
    };
    println!(
        "cluster of 2 shards x 2 replicas up in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let dir = temp_dir("bench-cluster");
    let store = |node| format!("{}&flush_ms=1000", cluster.url(node, "bench"));
    let collectors = [
        collector(&store(0), &dir.join("a")),
        collector(&store(2), &dir.join("b")),
    ];
    let loads: Vec<Child> = collectors
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let half = agents / 2 + if i == 0 { agents % 2 } else { 0 };
            Child::spawn(
                Command::new(release_bin("jscope-loadgen"))
                    .arg(c.agents.to_string())
                    .args(["--agents", &half.to_string()])
                    .args(["--rate", &rate.to_string()])
                    .args(["--threads", "1"])
                    .args(["--seconds", &seconds.to_string()])
                    .args(["--services", "10"])
                    .args(["--pid", &c.child.id().to_string()])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit()),
            )
        })
        .collect();
    let mut samples = 0f64;
    let mut cpu = 0f64;
    for (i, mut load) in loads.into_iter().enumerate() {
        let mut text = String::new();
        load.0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        load.wait_timeout(Duration::from_secs(seconds + 300));
        println!("collector {i}: {}", text.trim().replace('\n', "; "));
        for word in text.split_whitespace() {
            if let Some(v) = word.strip_prefix("samples=") {
                samples += v.parse::<f64>().unwrap();
            }
            if let Some(v) = word.strip_prefix("cpu_s=") {
                cpu += v.parse::<f64>().unwrap();
            }
        }
    }
    println!(
        "collectors: {:.2} CPU s per million samples ({cpu:.1} s for {:.2} M samples)",
        cpu / (samples / 1e6),
        samples / 1e6
    );
    let bytes = |node: usize| -> f64 {
        cluster.nodes[node]
            .query("SELECT sum(bytes) FROM system.parts WHERE database = 'bench' AND active")
            .unwrap()
            .trim()
            .parse()
            .unwrap_or(0.0)
    };
    let stored = samples;
    let one_copy = bytes(0) + bytes(2);
    let all = one_copy + bytes(1) + bytes(3);
    println!(
        "clickhouse: {:.2} bytes per sample on one replica of each shard, {:.2} on all four nodes",
        one_copy / stored,
        all / stored
    );
    let (status, body) = get(collectors[1].http, "/api/jvms");
    assert_eq!(status, 200);
    let rows: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let path = format!("/api/flame?jvm={}&format=collapsed", ids.join(","));
    let mut times = Vec::new();
    let mut total = 0u64;
    for _ in 0..5 {
        let t = Instant::now();
        let (status, body) = get(collectors[1].http, &path);
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        total = String::from_utf8_lossy(&body)
            .lines()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "flame graph of everything ({} JVMs, {total} samples): median {:.3}s, range {:.3}-{:.3}s",
        ids.len(),
        times[2],
        times[0],
        times[4]
    );
}
