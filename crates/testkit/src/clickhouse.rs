//! A real ClickHouse server for tests: `clickhouse-server` on free loopback ports
//! with a temporary config and data directory, killed when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{temp_dir, wait_until, Child};

/// A running `clickhouse-server`.
pub struct ClickHouse {
    pub dir: PathBuf,
    pub http_port: u16,
    binary: PathBuf,
    child: Option<Child>,
}

fn binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("JSCOPE_CLICKHOUSE_SERVER") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .map(|d| d.join("clickhouse-server"))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn write_config(dir: &Path, http: u16) {
    let (tcp, inter) = (free_port(), free_port());
    let d = dir.display();
    let config = format!(
        r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{inter}</interserver_http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <mark_cache_size>5368709120</mark_cache_size>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
</yandex>
"#
    );
    let users = r#"<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
"#;
    std::fs::write(dir.join("config.xml"), config).expect("write clickhouse config");
    std::fs::write(dir.join("users.xml"), users).expect("write clickhouse users");
}

impl ClickHouse {
    /// Starts a server, or prints why not and returns `None` when
    /// `clickhouse-server` is not installed (`.ci/run` installs Debian's).
    pub fn start(name: &str) -> Option<ClickHouse> {
        let Some(binary) = binary() else {
            eprintln!(
                "skipped: clickhouse-server is not installed (apt-get install clickhouse-server)"
            );
            return None;
        };
        let dir = temp_dir(name);
        let http_port = free_port();
        write_config(&dir, http_port);
        let mut ch = ClickHouse {
            dir,
            http_port,
            binary,
            child: None,
        };
        ch.restart();
        Some(ch)
    }

    /// `clickhouse://127.0.0.1:PORT/DATABASE`.
    pub fn url(&self, database: &str) -> String {
        format!("clickhouse://127.0.0.1:{}/{database}", self.http_port)
    }

    /// Kills the server (the data directory stays).
    pub fn stop(&mut self) {
        self.child = None;
        wait_until(Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", self.http_port)).is_err()
        });
    }

    /// Starts the server (again) on the same ports and data, and waits until it answers.
    pub fn restart(&mut self) {
        self.stop();
        let log = std::fs::File::create(self.dir.join("stdout.log")).expect("server log");
        let child = Child::spawn(
            Command::new(&self.binary)
                .arg(format!(
                    "--config-file={}",
                    self.dir.join("config.xml").display()
                ))
                .current_dir(&self.dir)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log),
        );
        self.child = Some(child);
        let up = wait_until(Duration::from_secs(60), || {
            self.query("SELECT 1").is_ok_and(|r| r.trim() == "1")
        });
        assert!(
            up,
            "clickhouse-server did not answer on port {}: {}",
            self.http_port,
            std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
        );
    }

    /// Runs `sql` over HTTP and returns the body (an error's body as `Err`).
    pub fn query(&self, sql: &str) -> Result<String, String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.http_port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(30))).ok();
        write!(
            s,
            "POST / HTTP/1.0\r\nHost: x\r\nContent-Length: {}\r\n\r\n{sql}",
            sql.len()
        )
        .map_err(|e| e.to_string())?;
        let mut out = String::new();
        s.read_to_string(&mut out).map_err(|e| e.to_string())?;
        let ok = out.starts_with("HTTP/1.0 200") || out.starts_with("HTTP/1.1 200");
        let body = out
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        if ok {
            Ok(body)
        } else {
            Err(body)
        }
    }
}
