//! ClickHouse for tests, on free loopback ports with a temporary data directory,
//! killed when dropped: Debian's `clickhouse-server` (18.16), and the current engine
//! (26.9, embedded by PyPI's chdb) behind `clickhouse_current.py`, a test-only HTTP
//! transport: every statement runs on the 26.9 engine, the script only carries it.
//! [`on_each_clickhouse!`](crate::on_each_clickhouse) runs a test on both.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::{temp_dir, wait_until, Child};

/// Which ClickHouse a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// Debian's `clickhouse-server` (18.16 on Debian 12), the real server.
    Debian,
    /// The current engine (26.9 in chdb 4.4.0) in a Python process behind
    /// `crates/testkit/clickhouse_current.py`: the engine runs every statement,
    /// the script is only the HTTP transport. Found as `JSCOPE_CHDB_PYTHON` (a python
    /// with chdb), else `.venv-chdb` in the workspace, which `scripts/test.sh` creates.
    Current,
}

impl Server {
    pub const ALL: [Server; 2] = [Server::Debian, Server::Current];
}

/// How a server is started.
enum Launch {
    Server(PathBuf),
    Chdb(PathBuf),
}

/// A running ClickHouse.
pub struct ClickHouse {
    pub dir: PathBuf,
    pub http_port: u16,
    /// Its HTTPS port, when started with [`ClickHouse::start_https`].
    pub https_port: Option<u16>,
    pub server: Server,
    launch: Launch,
    child: Option<Child>,
}

/// The python with chdb that runs [`Server::Current`], or [`crate::tools::missing`].
fn chdb_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("JSCOPE_CHDB_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let venv = crate::workspace_root().join(".venv-chdb");
    let python = venv.join("bin/python");
    let has_chdb = std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|d| d.path().join("site-packages/chdb").is_dir());
    if python.exists() && has_chdb {
        return Some(python);
    }
    crate::tools::missing(
        "chdb (the current ClickHouse engine) in .venv-chdb",
        "python3 -m venv .venv-chdb && .venv-chdb/bin/pip install --no-deps chdb==4.4.0 \
         chdb-core==26.9.0, or set JSCOPE_CHDB_PYTHON",
    );
    None
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

/// The `https_port` and `openSSL.server` settings for a certificate and its key.
fn https_config(port: u16, cert: &Path, key: &Path) -> String {
    format!(
        r#"<https_port>{port}</https_port>
  <openSSL><server>
    <certificateFile>{}</certificateFile><privateKeyFile>{}</privateKeyFile>
    <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>
    <cacheSessions>true</cacheSessions><disableProtocols>sslv2,sslv3</disableProtocols>
    <preferServerCiphers>true</preferServerCiphers>
  </server></openSSL>"#,
        cert.display(),
        key.display()
    )
}

fn write_config(dir: &Path, http: u16, https: &str) {
    write_config_on(dir, http, free_port(), https);
}

/// The config with its native `tcp` port given (a cluster's nodes name each other's)
/// and `extra` settings.
fn write_config_on(dir: &Path, http: u16, tcp: u16, extra: &str) {
    let https = extra;
    let inter = free_port();
    let d = dir.display();
    let config = format!(
        r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog></logger>
  <http_port>{http}</http_port>
  {https}
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
    /// Starts Debian's `clickhouse-server`, or returns `None` when it is not
    /// installed ([`crate::tools::missing`]: a failure under `CI=true`).
    pub fn start(name: &str) -> Option<ClickHouse> {
        ClickHouse::start_on(Server::Debian, name)
    }

    /// Starts `server`, or returns `None` when it is not installed
    /// ([`crate::tools::missing`]).
    pub fn start_on(server: Server, name: &str) -> Option<ClickHouse> {
        let launch = match server {
            Server::Debian => match binary() {
                Some(b) => Launch::Server(b),
                None => {
                    crate::tools::missing("clickhouse-server", "apt-get install clickhouse-server");
                    return None;
                }
            },
            Server::Current => Launch::Chdb(chdb_python()?),
        };
        let dir = temp_dir(name);
        let http_port = free_port();
        if let Launch::Server(_) = launch {
            write_config(&dir, http_port, "");
        }
        let mut ch = ClickHouse {
            dir,
            http_port,
            https_port: None,
            server,
            launch,
            child: None,
        };
        ch.restart();
        eprintln!(
            "clickhouse {} ({}) on port {}",
            ch.version(),
            match server {
                Server::Debian => "clickhouse-server",
                Server::Current => "the engine in chdb, behind clickhouse_current.py",
            },
            ch.http_port
        );
        Some(ch)
    }

    /// Starts Debian's `clickhouse-server` with HTTPS too, serving `cert` (PEM) with
    /// its `key`; `None` when it is not installed ([`crate::tools::missing`]).
    pub fn start_https(name: &str, cert: &Path, key: &Path) -> Option<ClickHouse> {
        let Some(bin) = binary() else {
            crate::tools::missing("clickhouse-server", "apt-get install clickhouse-server");
            return None;
        };
        let dir = temp_dir(name);
        let (http_port, https_port) = (free_port(), free_port());
        write_config(&dir, http_port, &https_config(https_port, cert, key));
        let mut ch = ClickHouse {
            dir,
            http_port,
            https_port: Some(https_port),
            server: Server::Debian,
            launch: Launch::Server(bin),
            child: None,
        };
        ch.restart();
        Some(ch)
    }

    /// The engine's `version()`.
    pub fn version(&self) -> String {
        self.query("SELECT version()")
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|e| panic!("clickhouse version: {e}"))
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
        if let Launch::Server(_) = &self.launch {
            // A replica killed mid-insert can hold a part it wrote but never
            // registered in ZooKeeper (the insert was not acknowledged, so the
            // writer sent it again elsewhere). Past a share of such parts the
            // server refuses to start until told to restore from its replicas,
            // as an operator tells it after a crash: the flag file does that
            // (unregistered parts are detached, the rest fetched), and the
            // server removes it once started.
            let flags = self.dir.join("data").join("flags");
            let _ = std::fs::create_dir_all(&flags);
            let _ = std::fs::write(flags.join("force_restore_data"), b"");
        }
        let log = std::fs::File::create(self.dir.join("stdout.log")).expect("server log");
        let mut cmd = match &self.launch {
            Launch::Server(binary) => {
                let mut c = Command::new(binary);
                c.arg(format!(
                    "--config-file={}",
                    self.dir.join("config.xml").display()
                ));
                c
            }
            Launch::Chdb(python) => {
                let mut c = Command::new(python);
                c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("clickhouse_current.py"))
                    .arg("--port")
                    .arg(self.http_port.to_string())
                    .arg("--path")
                    .arg(self.dir.join("data"))
                    .arg("--log")
                    .arg(self.dir.join("statements.log"));
                c
            }
        };
        let child = Child::spawn(
            cmd.current_dir(&self.dir)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log),
        );
        self.child = Some(child);
        let up = wait_until(Duration::from_secs(60), || {
            self.query("SELECT 1").is_ok_and(|r| r.trim() == "1")
        });
        let log = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        assert!(
            up,
            "{:?} clickhouse did not answer on port {}: {}{}",
            self.server,
            self.http_port,
            log("error.log"),
            log("stdout.log")
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

/// Runs each named test fn (taking a [`Server`]) as two tests, one per server:
/// `NAME::clickhouse_18_16_server` (Debian's clickhouse-server) and
/// `NAME::clickhouse_26_9_engine_via_chdb_http_transport` (the current engine,
/// embedded by chdb, behind the test-only `clickhouse_current.py` transport).
#[macro_export]
macro_rules! on_each_clickhouse {
    ($($test:ident),+ $(,)?) => {$(
        mod $test {
            #[test]
            fn clickhouse_18_16_server() {
                super::$test($crate::Server::Debian)
            }

            #[test]
            fn clickhouse_26_9_engine_via_chdb_http_transport() {
                super::$test($crate::Server::Current)
            }
        }
    )+};
}

/// ZooKeeper (Debian's `zookeeper`) on a free loopback port, killed when dropped.
pub struct ZooKeeper {
    pub port: u16,
    _child: Child,
}

const ZK_SERVER: &str = "/usr/share/zookeeper/bin/zkServer.sh";

impl ZooKeeper {
    /// Starts it, or `None` when it is not installed ([`crate::tools::missing`]).
    pub fn start(name: &str) -> Option<ZooKeeper> {
        if !Path::new(ZK_SERVER).is_file() {
            crate::tools::missing("zookeeper", "apt-get install zookeeper");
            return None;
        }
        let dir = temp_dir(name);
        let port = free_port();
        let cfg = dir.join("zoo.cfg");
        std::fs::write(
            &cfg,
            format!(
                "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
                 4lw.commands.whitelist=ruok\n",
                dir.join("data").display()
            ),
        )
        .expect("zoo.cfg");
        let log = std::fs::File::create(dir.join("zookeeper.log")).expect("zk log");
        let child = Child::spawn(
            Command::new(ZK_SERVER)
                .arg("start-foreground")
                .arg(&cfg)
                .env("ZOO_LOG_DIR", &dir)
                .env("ZOO_LOG4J_PROP", "WARN,CONSOLE")
                .env("JVMFLAGS", "-Xmx256m")
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log),
        );
        let ruok = || -> Option<String> {
            let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
            s.write_all(b"ruok").ok()?;
            let mut out = String::new();
            s.read_to_string(&mut out).ok()?;
            Some(out)
        };
        let up = wait_until(Duration::from_secs(60), || {
            ruok().is_some_and(|a| a == "imok")
        });
        assert!(
            up,
            "zookeeper did not answer on port {port}: {}",
            std::fs::read_to_string(dir.join("zookeeper.log")).unwrap_or_default()
        );
        Some(ZooKeeper {
            port,
            _child: child,
        })
    }
}

/// ZooKeeper and `shards` x `replicas` `clickhouse-server`s (Debian's) on free
/// loopback ports, forming the cluster `name` (`remote_servers`, with internal
/// replication, and each node's `shard` and `replica` macros). Node `i` is replica
/// `i % replicas` of shard `i / replicas`. `None` when ZooKeeper or ClickHouse is not
/// installed ([`crate::tools::missing`]).
pub struct Cluster {
    pub name: String,
    pub nodes: Vec<ClickHouse>,
    pub zookeeper: ZooKeeper,
}

impl Cluster {
    pub fn start(name: &str, shards: usize, replicas: usize) -> Option<Cluster> {
        let Some(bin) = binary() else {
            crate::tools::missing("clickhouse-server", "apt-get install clickhouse-server");
            return None;
        };
        let zookeeper = ZooKeeper::start(&format!("{name}-zk"))?;
        let n = shards * replicas;
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let mut servers = String::new();
        for shard in 0..shards {
            servers.push_str("<shard><internal_replication>true</internal_replication>");
            for r in 0..replicas {
                let tcp = ports[shard * replicas + r].1;
                servers.push_str(&format!(
                    "<replica><host>127.0.0.1</host><port>{tcp}</port></replica>"
                ));
            }
            servers.push_str("</shard>");
        }
        let dirs: Vec<PathBuf> = (0..n).map(|i| temp_dir(&format!("{name}-{i}"))).collect();
        for (i, dir) in dirs.iter().enumerate() {
            let extra = format!(
                "<interserver_http_host>127.0.0.1</interserver_http_host>\n  \
                 <zookeeper><node><host>127.0.0.1</host><port>{}</port></node></zookeeper>\n  \
                 <remote_servers><{name}>{servers}</{name}></remote_servers>\n  \
                 <macros><shard>{:02}</shard><replica>node{i}</replica></macros>\n  \
                 <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>",
                zookeeper.port,
                i / replicas + 1,
            );
            write_config_on(dir, ports[i].0, ports[i].1, &extra);
        }
        // Started in parallel: each takes seconds to come up.
        let nodes: Vec<ClickHouse> = std::thread::scope(|scope| {
            let started: Vec<_> = dirs
                .into_iter()
                .zip(&ports)
                .map(|(dir, &(http_port, _))| {
                    let bin = bin.clone();
                    scope.spawn(move || {
                        let mut ch = ClickHouse {
                            dir,
                            http_port,
                            https_port: None,
                            server: Server::Debian,
                            launch: Launch::Server(bin),
                            child: None,
                        };
                        ch.restart();
                        ch
                    })
                })
                .collect();
            started
                .into_iter()
                .map(|h| h.join().expect("a node starts"))
                .collect()
        });
        // ClickHouse 18.16 answers queries before its ZooKeeper session is up,
        // and a distributed DDL statement in that window crashes the server
        // (a null session in zkutil::ZooKeeper::createImpl): ready means every
        // node reads ZooKeeper.
        for node in &nodes {
            let ready = wait_until(Duration::from_secs(60), || {
                node.query("SELECT count() FROM system.zookeeper WHERE path = '/'")
                    .is_ok()
            });
            assert!(ready, "a ClickHouse node never reached ZooKeeper");
        }
        Some(Cluster {
            name: name.to_string(),
            nodes,
            zookeeper,
        })
    }

    /// `clickhouse://127.0.0.1:PORT/DATABASE?cluster=NAME` through node `i`.
    pub fn url(&self, i: usize, database: &str) -> String {
        format!("{}?cluster={}", self.nodes[i].url(database), self.name)
    }
}
