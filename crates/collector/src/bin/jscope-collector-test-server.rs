//! A collector in its own process, for tests that kill it (kill -9 recovery) and for
//! the load bench. `jscope serve` is the product's way to run a collector.
//!
//! Usage: jscope-collector-test-server DATA_DIR|clickhouse://HOST:PORT/DB [AGENTS_ADDR] [HTTP_ADDR]
//! Prints `agents=ADDR http=ADDR` once listening, then serves until killed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use jscope_collector::{serve, ServerConfig};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let data = args.next().context("usage: DATA_DIR [AGENTS] [HTTP]")?;
    let store = data.starts_with("clickhouse://").then(|| data.clone());
    let data = PathBuf::from(data);
    let agents = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let http = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let cfg = ServerConfig {
        agents,
        http: Some(http),
        data,
        store,
        ..ServerConfig::default()
    };
    let handle = serve(cfg)?;
    let addr = |a: Option<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
    println!(
        "agents={} http={}",
        addr(handle.agents_addr()),
        addr(handle.http_addr())
    );
    std::io::stdout().flush()?;
    handle.wait();
    Ok(())
}
