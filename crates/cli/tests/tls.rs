//! TLS end to end: `jscope serve --tls-cert --tls-key` with real JVMs streaming to it
//! (`collector=tls://...`), certificates from a CA made in the test.
//!
//! - An agent that trusts the collector's CA streams, its data is stored and read
//!   back over HTTPS by the CLI (`--collector https://... --tls-ca`) and shown by the
//!   web UI in headless Chromium.
//! - An agent trusting another CA, a plaintext agent, an agent facing an expired
//!   certificate and (with `--client-ca`) an agent without a client certificate are
//!   refused: one line in the agent's stderr, a line in the collector's log per
//!   attempt, and nothing of theirs stored.
//! - A certificate replaced on disk is served to the next connection, no restart.
//! - A capture of the loopback traffic (tcpdump) holds the plaintext agent's token
//!   and header bytes (the capture sees the traffic as sent) but neither the TLS
//!   agent's token, nor its method and thread names, nor any piece of the chunks it
//!   sent (byte for byte in its own file).
//!
//! Chromium runs with `--ignore-certificate-errors`: it proves only that the UI
//! renders over HTTPS. Certificate verification is proven by the agents and the CLI,
//! which are refused with the wrong CA.

#[allow(dead_code)]
mod jvms;
mod serving;
mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use jscope_testkit::pki::{CertFiles, TestCa};
use jscope_testkit::{agent_path, javas, temp_dir, tools, wait_until, Child, Java};
use jvms::*;
use serde_json::Value;
use serving::cdp::Browser;
use serving::Served;
use support::*;

const TOKEN: &str = "tls-token-7f3a9c2e51d0";
const PLAIN_TOKEN: &str = "plain-token-0b8d41c6e2";

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A JVM of the Hot fixture with the agent, its stderr in `err`.
fn jvm(java: &Java, options: &str, which: &str, millis: u64, err: &Path) -> Child {
    Child::spawn(
        Command::new(&java.bin)
            .arg(format!("-agentpath:{}={options}", agent_path().display()))
            .arg("-cp")
            .arg(classes())
            .args(["Hot", which, &millis.to_string()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(err).unwrap()),
    )
}

/// The agent's lines about the collector at `addr`.
fn agent_lines(err: &Path, addr: SocketAddr) -> Vec<String> {
    let text = std::fs::read_to_string(err).unwrap_or_default();
    let addr = addr.to_string();
    text.lines()
        .filter(|l| l.starts_with("jscope: ") && l.contains(&format!("collector {addr}")))
        .filter(|l| !l.starts_with("jscope: recording"))
        .map(str::to_string)
        .collect()
}

fn trusting(ca: &Path) -> jscope_tls::ClientFiles {
    jscope_tls::ClientFiles {
        ca: Some(ca.to_path_buf()),
        ..Default::default()
    }
}

/// GET over HTTPS, trusting `ca`; the status and body.
fn https_get(addr: SocketAddr, path: &str, ca: &Path) -> Result<(u16, Vec<u8>), String> {
    https_get_with(addr, path, &trusting(ca))
}

fn https_get_with(
    addr: SocketAddr,
    path: &str,
    files: &jscope_tls::ClientFiles,
) -> Result<(u16, Vec<u8>), String> {
    let config = files.config().map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut s = jscope_tls::Stream::client(tcp, config, "127.0.0.1").map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    )
    .and_then(|_| s.flush())
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    let at = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    Ok((status, out[at..].to_vec()))
}

fn https_rows(served: &Served, ca: &Path) -> Vec<Value> {
    let (status, body) = https_get(served.http, "/api/jvms", ca).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice::<Value>(&body)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The certificate a TLS server at `addr` presents now (DER).
fn served_cert(addr: SocketAddr, ca: &Path) -> Vec<u8> {
    let config = jscope_tls::ClientFiles {
        ca: Some(ca.to_path_buf()),
        ..Default::default()
    }
    .config()
    .unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    jscope_tls::Stream::client(tcp, config, "127.0.0.1")
        .unwrap()
        .peer_certificate()
        .unwrap()
}

fn pem_der(file: &Path) -> Vec<u8> {
    use jscope_tls::pki_types::pem::PemObject;
    jscope_tls::pki_types::CertificateDer::from_pem_file(file)
        .unwrap()
        .to_vec()
}

/// tcpdump on the loopback interface, writing `file`, for `ports`.
struct Capture {
    child: Child,
    file: PathBuf,
}

impl Capture {
    fn start(ports: &[u16], file: &Path) -> Option<Capture> {
        let bin = tools::command(&["tcpdump"], "apt-get install tcpdump")?;
        let filter: Vec<String> = ports.iter().map(|p| format!("tcp port {p}")).collect();
        let mut child = Child::spawn(
            Command::new(bin)
                .args(["-i", "lo", "-U", "-s", "0", "-w"])
                .arg(file)
                .arg(filter.join(" or "))
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        // It says "listening on lo" once the capture runs.
        let mut err = child.0.stderr.take().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("listening on") {
            match err.read(&mut buf) {
                Ok(0) | Err(_) => panic!("tcpdump: {}", String::from_utf8_lossy(&seen)),
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Some(Capture {
            child,
            file: file.to_path_buf(),
        })
    }

    /// Stops the capture and returns the captured bytes.
    fn stop(mut self) -> Vec<u8> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        self.child.wait_timeout(Duration::from_secs(10));
        std::fs::read(&self.file).unwrap()
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    contains_bytes(hay, needle.as_bytes())
}

fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn serve_tls(data: &Path, cert: &CertFiles, extra: &[&str]) -> Served {
    let mut args = vec!["--tls-cert", path(&cert.cert), "--tls-key", path(&cert.key)];
    args.extend_from_slice(extra);
    let served = serving::serve(&jscope_bin(), data, &args);
    assert!(served.tls, "the collector announces https://");
    served
}

fn wait_log(served: &Served, log: &mut Vec<String>, want: &str) -> bool {
    wait_until(Duration::from_secs(20), || {
        log.extend(served.log_lines());
        log.iter().any(|l| l.contains(want))
    })
}

#[test]
fn agents_stream_over_tls_and_untrusted_or_plaintext_ones_are_refused() {
    let _one = serial();
    let Some(java) = javas().into_iter().next() else {
        return;
    };
    let dir = temp_dir("tls-e2e");
    let good = TestCa::new(&dir, "good");
    let other = TestCa::new(&dir, "other");
    let cert = good.server("server", "first");
    // The files the collector serves, replaced later.
    let live = CertFiles {
        cert: dir.join("live-cert.pem"),
        key: dir.join("live-key.pem"),
    };
    std::fs::copy(&cert.cert, &live.cert).unwrap();
    std::fs::copy(&cert.key, &live.key).unwrap();
    let served = serve_tls(&dir.join("data"), &live, &["--token", TOKEN]);
    let agents = served.agents.unwrap();
    let capture = Capture::start(&[agents.port(), served.http.port()], &dir.join("lo.pcap"));

    let err = |n: &str| dir.join(format!("{n}.err"));
    // Both write their own file too: what they send is byte for byte in it.
    let (ok_file, plain_file) = (dir.join("ok.jsc"), dir.join("plain.jsc"));
    let ok_options = format!(
        "collector=tls://{agents},tlsca={},token={TOKEN},file={}",
        path(&good.ca),
        path(&ok_file)
    );
    let mut ok = jvm(&java, &ok_options, "alpha", 8000, &err("ok"));
    let wrong_ca = format!(
        "collector=tls://{agents},tlsca={},token={TOKEN}",
        path(&other.ca)
    );
    let mut wrong = jvm(&java, &wrong_ca, "alpha", 1500, &err("wrong"));
    let plain = format!(
        "collector={agents},token={PLAIN_TOKEN},file={}",
        path(&plain_file)
    );
    let mut plaintext = jvm(&java, &plain, "gamma", 1500, &err("plain"));

    let ok_pid = ok.id();
    assert!(
        wait_until(Duration::from_secs(30), || {
            https_rows(&served, &good.ca).iter().any(|r| {
                r["pid"] == ok_pid
                    && r["status"] == "connected"
                    && r["samples"].as_u64().unwrap_or(0) > 100
            })
        }),
        "the TLS agent streams: {:?}",
        https_rows(&served, &good.ca)
    );
    for (child, name) in [(&mut wrong, "wrong"), (&mut plaintext, "plain")] {
        assert!(
            child.wait_timeout(Duration::from_secs(60)).is_some(),
            "{name} exits"
        );
    }
    let wrong_lines = agent_lines(&err("wrong"), agents);
    assert_eq!(wrong_lines.len(), 1, "{wrong_lines:?}");
    assert!(
        wrong_lines[0].contains("TLS with") && wrong_lines[0].contains("certificate"),
        "{wrong_lines:?}"
    );
    let plain_lines = agent_lines(&err("plain"), agents);
    assert_eq!(plain_lines.len(), 1, "{plain_lines:?}");
    assert!(plain_lines[0].contains("takes only TLS"), "{plain_lines:?}");
    let mut log = Vec::new();
    assert!(
        wait_log(
            &served,
            &mut log,
            "refused: plaintext connection on the TLS agent port"
        ),
        "{log:?}"
    );
    assert!(
        wait_log(&served, &mut log, "refused: TLS handshake failed"),
        "{log:?}"
    );
    let plain_refusals = log.iter().filter(|l| l.contains("plaintext")).count();
    assert_eq!(
        plain_refusals, 1,
        "one line for the plaintext agent: {log:?}"
    );

    // Plain HTTP on the HTTPS port: a 400 naming https, and a log line.
    let (status, body) = serving::http_get(served.http, "/api/jvms");
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("https://"));
    assert!(
        wait_log(&served, &mut log, "plaintext HTTP on the HTTPS port"),
        "{log:?}"
    );

    // The CLI reads it over HTTPS with the CA, and refuses it with another.
    let url = served.url();
    let pid = ok_pid.to_string();
    let report = jscope_json(&[
        "report",
        "--collector",
        &url,
        "--tls-ca",
        path(&good.ca),
        "--token",
        TOKEN,
        "--jvm",
        &pid,
        "--mode",
        "cpu",
        "--format",
        "json",
    ]);
    assert_eq!(report["methods"][0]["method"], "Hot.alpha", "{report}");
    let refused = jscope(&[
        "report",
        "--collector",
        &url,
        "--tls-ca",
        path(&other.ca),
        "--token",
        TOKEN,
        "--jvm",
        &pid,
    ]);
    assert!(!refused.status.success());
    let text = stderr(&refused);
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    assert!(
        text.contains("TLS") && text.contains("certificate"),
        "{text}"
    );

    // The UI renders over HTTPS.
    if let Some(mut b) = Browser::launch_with("tls", &["--ignore-certificate-errors"]) {
        b.goto(&format!("{url}/?token={TOKEN}"));
        b.wait_for(
            "document.querySelectorAll('#jvms tbody tr').length >= 1",
            Duration::from_secs(20),
        );
        let row = b.html("#jvms tbody tr");
        assert!(row.contains(&format!(">{ok_pid}<")), "{row}");
        assert!(row.contains("Hot alpha"), "{row}");
        b.screenshot("tls-jvms.png");
    }

    // A renewed certificate is served to the next connection.
    assert_eq!(served_cert(agents, &good.ca), pem_der(&cert.cert));
    let renewed = good.server("renewed", "second");
    std::fs::copy(&renewed.key, &live.key).unwrap();
    std::fs::copy(&renewed.cert, &live.cert).unwrap();
    assert_eq!(served_cert(agents, &good.ca), pem_der(&renewed.cert));
    assert_eq!(served_cert(served.http, &good.ca), pem_der(&renewed.cert));

    assert!(ok.wait_timeout(Duration::from_secs(90)).is_some());
    // Only the trusted agent's JVM is stored.
    let rows = https_rows(&served, &good.ca);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["pid"], ok_pid);

    if let Some(capture) = capture {
        let bytes = capture.stop();
        assert!(
            contains(&bytes, PLAIN_TOKEN),
            "the capture sees loopback traffic ({} bytes)",
            bytes.len()
        );
        assert!(bytes.len() > 20_000, "{} bytes captured", bytes.len());
        for secret in [TOKEN, "alpha", "hot-worker"] {
            assert!(!contains(&bytes, secret), "{secret} in the capture");
        }
        // The plaintext agent's hello carried its file's start (magic and header
        // chunk) as it is; none of the TLS agent's chunks, byte for byte in its
        // file, went over the wire as they are.
        let plain_start = std::fs::read(&plain_file).unwrap();
        assert!(
            contains_bytes(&bytes, &plain_start[..48]),
            "the plaintext hello's header bytes are in the capture"
        );
        let sent = std::fs::read(&ok_file).unwrap();
        assert!(
            sent.len() > 10_000,
            "{} bytes in the TLS agent's file",
            sent.len()
        );
        let windows: Vec<&[u8]> = (256..sent.len() - 32)
            .step_by(509)
            .map(|at| &sent[at..at + 32])
            .collect();
        let seen = windows.iter().filter(|w| contains_bytes(&bytes, w)).count();
        assert_eq!(
            seen,
            0,
            "of {} pieces of the TLS agent's chunks",
            windows.len()
        );
    }
    assert!(served.interrupt());
}

#[test]
fn expired_certificates_and_missing_client_certificates_are_refused() {
    let _one = serial();
    let Some(java) = javas().into_iter().next() else {
        return;
    };
    let dir = temp_dir("tls-refused");
    let ca = TestCa::new(&dir, "ca");
    let expired = ca.expired_server("expired");
    let cert = ca.server("server", "server");
    let client = ca.client("client", "agent");
    let old = serve_tls(&dir.join("old"), &expired, &[]);
    let mutual = serve_tls(&dir.join("mutual"), &cert, &["--client-ca", path(&ca.ca)]);
    let (old_agents, mutual_agents) = (old.agents.unwrap(), mutual.agents.unwrap());
    let err = |n: &str| dir.join(format!("{n}.err"));
    let tlsca = format!("tlsca={}", path(&ca.ca));
    let mut facing_expired = jvm(
        &java,
        &format!("collector=tls://{old_agents},{tlsca}"),
        "alpha",
        1500,
        &err("expired"),
    );
    let mut no_cert = jvm(
        &java,
        &format!("collector=tls://{mutual_agents},{tlsca}"),
        "alpha",
        1500,
        &err("nocert"),
    );
    let mut with_cert = jvm(
        &java,
        &format!(
            "collector=tls://{mutual_agents},{tlsca},tlscert={},tlskey={}",
            path(&client.cert),
            path(&client.key)
        ),
        "beta",
        1500,
        &err("withcert"),
    );
    for child in [&mut facing_expired, &mut no_cert, &mut with_cert] {
        assert!(child.wait_timeout(Duration::from_secs(60)).is_some());
    }
    let expired_lines = agent_lines(&err("expired"), old_agents);
    assert_eq!(expired_lines.len(), 1, "{expired_lines:?}");
    assert!(expired_lines[0].contains("expired"), "{expired_lines:?}");
    let no_cert_lines = agent_lines(&err("nocert"), mutual_agents);
    assert_eq!(no_cert_lines.len(), 1, "{no_cert_lines:?}");
    assert!(
        no_cert_lines[0].to_lowercase().contains("certificate"),
        "{no_cert_lines:?}"
    );
    let mut log = Vec::new();
    assert!(
        wait_log(&old, &mut log, "refused: TLS handshake failed"),
        "{log:?}"
    );
    let mut log = Vec::new();
    assert!(
        wait_log(&mutual, &mut log, "refused: TLS handshake failed"),
        "{log:?}"
    );
    assert!(
        log.iter()
            .filter(|l| l.contains("refused"))
            .all(|l| l.contains("TLS handshake failed") && l.contains("certificate")),
        "{log:?}"
    );
    // The expired collector stored nothing (read without checking its certificate);
    // the mutual one only the JVM with a client certificate, read by the CLI with one.
    let insecure = jscope_tls::ClientFiles {
        insecure: true,
        ..Default::default()
    };
    let (status, body) = https_get_with(old.http, "/api/jvms", &insecure).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        serde_json::json!([])
    );
    // The HTTP port wants a client certificate too.
    assert!(https_get(mutual.http, "/api/jvms", &ca.ca).is_err());
    let mut with_client = trusting(&ca.ca);
    with_client.cert = Some(client.cert.clone());
    with_client.key = Some(client.key.clone());
    let (status, body) = https_get_with(mutual.http, "/api/jvms", &with_client).unwrap();
    assert_eq!(status, 200);
    let rows: Value = serde_json::from_slice(&body).unwrap();
    let pids: Vec<&Value> = rows.as_array().unwrap().iter().map(|r| &r["pid"]).collect();
    assert_eq!(pids, [&Value::from(with_cert.id())], "{rows}");
    let url = mutual.url();
    let report = jscope_json(&[
        "report",
        "--collector",
        &url,
        "--tls-ca",
        path(&ca.ca),
        "--tls-cert",
        path(&client.cert),
        "--tls-key",
        path(&client.key),
        "--jvm",
        &with_cert.id().to_string(),
        "--mode",
        "cpu",
        "--format",
        "json",
    ]);
    assert_eq!(report["methods"][0]["method"], "Hot.beta", "{report}");
    assert!(old.interrupt());
    assert!(mutual.interrupt());
}
