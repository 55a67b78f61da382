//! `jscope serve` / `jscope view` as child processes: start, read the addresses
//! they print, query their HTTP API, stop them.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use jscope_testkit::Child;

pub mod cdp;
pub mod ui;

pub struct Served {
    pub child: Child,
    /// Where agents connect (serve only).
    pub agents: Option<SocketAddr>,
    pub http: SocketAddr,
    /// What the child printed so far and prints later, line by line.
    pub lines: mpsc::Receiver<String>,
    /// What it prints on stderr (its log), line by line; also echoed to the test's.
    pub log: mpsc::Receiver<String>,
    /// It serves HTTPS (and TLS to agents).
    pub tls: bool,
}

fn addr_after<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix)
}

/// Starts `jscope ARGS` and waits for its `UI: http://...` line.
pub fn start(jscope: &Path, args: &[&str]) -> Served {
    let mut child = Child::spawn(
        Command::new(jscope)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let err = child.0.stderr.take().unwrap();
    let (log_tx, log) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            eprintln!("{line}");
            let _ = log_tx.send(line);
        }
    });
    let out = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut agents = None;
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("jscope {args:?} printed no UI address"));
        if let Some(rest) = addr_after(&line, "jscope: agents: collector=") {
            let addr = rest.split_whitespace().next().unwrap();
            let addr = addr.strip_prefix("tls://").unwrap_or(addr);
            agents = Some(addr.parse().unwrap());
        }
        let (tls, rest) = match (
            addr_after(&line, "jscope: UI: http://"),
            addr_after(&line, "jscope: UI: https://"),
        ) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => continue,
        };
        let http = rest.split('/').next().unwrap().parse().unwrap();
        return Served {
            child,
            agents,
            http,
            lines: rx,
            log,
            tls,
        };
    }
}

/// `jscope serve` on free loopback ports over `data`.
pub fn serve(jscope: &Path, data: &Path, extra: &[&str]) -> Served {
    let data = data.to_str().unwrap();
    let mut args = vec![
        "serve",
        "--agents",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--data",
        data,
    ];
    args.extend_from_slice(extra);
    start(jscope, &args)
}

/// `jscope serve` again on the same agent port (after a crash), retrying while the
/// port is still held by the kernel.
pub fn serve_on(jscope: &Path, data: &Path, agents: SocketAddr) -> Served {
    let data = data.to_str().unwrap();
    let agents = agents.to_string();
    let args = [
        "serve",
        "--agents",
        &agents,
        "--http",
        "127.0.0.1:0",
        "--data",
        data,
    ];
    start(jscope, &args)
}

impl Served {
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.http)
    }

    /// The log lines printed so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        http_get(self.http, path)
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(
            status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&body)
        );
        serde_json::from_slice(&body).unwrap()
    }

    /// Ctrl-C, as a user would stop it; returns whether it exited cleanly.
    pub fn interrupt(mut self) -> bool {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = self.child.wait_timeout(Duration::from_secs(20));
        status.is_some_and(|s| s.success())
    }

    /// kill -9.
    pub fn kill(mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }
}

pub fn http_get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("http connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
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
