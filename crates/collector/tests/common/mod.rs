//! Shared test support: simulated agents (`sim.rs`, which the CLI's tests share)
//! and an in-process collector.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use jscope_collector::{serve, MemoryLog, ServerConfig, ServerHandle};

mod sim;
#[allow(unused_imports)] // not every test binary uses every part
pub use sim::*;

/// A collector on free loopback ports with its log kept in memory.
pub fn start(data: &Path, tune: impl FnOnce(&mut ServerConfig)) -> (ServerHandle, Arc<MemoryLog>) {
    let log = Arc::new(MemoryLog::default());
    let mut cfg = ServerConfig {
        agents: "127.0.0.1:0".into(),
        http: Some("127.0.0.1:0".into()),
        data: data.to_path_buf(),
        log: log.clone(),
        ..ServerConfig::default()
    };
    tune(&mut cfg);
    (serve(cfg).expect("collector starts"), log)
}
