//! The collector's settings, with the defaults `jscope serve` uses.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::CollectorError;
use jscope_store::{LogSink, StderrLog};

/// Everything `serve` needs. Build with struct update syntax over `default()`.
#[derive(Clone)]
pub struct ServerConfig {
    /// Where agents connect (`HOST:PORT`; port 0 picks a free one).
    pub agents: String,
    /// Where the HTTP API and web UI listen; `None` serves no HTTP.
    pub http: Option<String>,
    /// The embedded store's directory.
    pub data: PathBuf,
    /// `clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE`: keep everything in ClickHouse
    /// instead of `data` (docs/COLLECTOR.md); `None` is the embedded file store.
    pub store: Option<String>,
    /// Stored data older than this is deleted; `None` keeps everything.
    pub retention: Option<Duration>,
    /// Required from agents and HTTP clients when set; mandatory off loopback.
    pub token: Option<String>,
    /// Largest frame accepted from an agent.
    pub max_frame: u32,
    /// Connections beyond this are refused (each holds a thread).
    pub max_connections: usize,
    /// A client that sends nothing for this long between frames is dropped.
    pub idle_timeout: Duration,
    /// A client that stops for this long inside a frame (or the handshake) is dropped.
    pub stall_timeout: Duration,
    /// A segment file is closed and a new one started beyond this size...
    pub segment_bytes: u64,
    /// ...or this age, so retention can delete old data of long-running JVMs.
    pub segment_age: Duration,
    pub log: Arc<dyn LogSink>,
    /// TLS on the agent port and the HTTP port (`--tls-cert`, `--tls-key`,
    /// `--client-ca`); `None` is plaintext.
    pub tls: Option<jscope_tls::ServerFiles>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            agents: "127.0.0.1:7000".into(),
            http: Some("127.0.0.1:7080".into()),
            data: PathBuf::from("jscope-data"),
            store: None,
            retention: None,
            token: None,
            max_frame: jscope_wire::DEFAULT_MAX_FRAME,
            max_connections: 2048,
            idle_timeout: Duration::from_secs(120),
            stall_timeout: Duration::from_secs(10),
            segment_bytes: 64 << 20,
            segment_age: Duration::from_secs(3600),
            log: Arc::new(StderrLog),
            tls: None,
        }
    }
}

impl ServerConfig {
    /// Resolves `addr` and refuses a non-loopback one when no token is configured.
    pub(crate) fn checked_addr(&self, addr: &str) -> Result<SocketAddr, CollectorError> {
        let resolved = addr
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| CollectorError::BadAddress(addr.to_string()))?;
        if !resolved.ip().is_loopback() && self.token.as_deref().unwrap_or("").is_empty() {
            return Err(CollectorError::NeedsToken {
                addr: addr.to_string(),
            });
        }
        Ok(resolved)
    }
}

/// Parses `90s`, `30m`, `12h`, `7d` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, CollectorError> {
    let bad = || CollectorError::BadDuration(text.to_string());
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    Ok(Duration::from_secs(n.checked_mul(secs).ok_or_else(bad)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert!(parse_duration("7w").is_err());
        assert!(parse_duration("d").is_err());
    }

    #[test]
    fn non_loopback_needs_a_token() {
        let c = ServerConfig::default();
        assert!(c.checked_addr("127.0.0.1:0").is_ok());
        assert!(matches!(
            c.checked_addr("0.0.0.0:0"),
            Err(CollectorError::NeedsToken { .. })
        ));
        let with = ServerConfig {
            token: Some("s3cret".into()),
            ..ServerConfig::default()
        };
        assert!(with.checked_addr("0.0.0.0:0").is_ok());
    }
}
