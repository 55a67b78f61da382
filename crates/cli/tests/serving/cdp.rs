//! Headless Chromium driven over the DevTools protocol (a small WebSocket client
//! written here), so a test can click, wait for the page to change, read the DOM
//! and take screenshots of the exact state it checked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jscope_testkit::{target_dir, temp_dir, Child};
use serde_json::{json, Value};

pub struct Browser {
    _child: Child,
    ws: TcpStream,
    next_id: u64,
}

impl Browser {
    /// Starts headless Chromium on a blank page; `None` when it is absent (a failure
    /// in CI).
    pub fn launch(name: &str) -> Option<Browser> {
        Browser::launch_with(name, &[])
    }

    /// [`Browser::launch`] with more Chromium flags.
    pub fn launch_with(name: &str, extra: &[&str]) -> Option<Browser> {
        let bin = jscope_testkit::tools::chromium()?;
        let profile = temp_dir(&format!("chromium-{name}"));
        let mut child = Child::spawn(
            Command::new(bin)
                .args([
                    "--no-sandbox",
                    "--headless",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--remote-debugging-port=0",
                    "--remote-allow-origins=*",
                    "--window-size=1400,900",
                ])
                .args(extra)
                .arg(format!("--user-data-dir={}", profile.display()))
                .arg("about:blank")
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        let stderr = child.0.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let browser_url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium prints its DevTools address");
        let host = browser_url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let page = page_socket(&host);
        let ws = ws_connect(&page);
        let mut b = Browser {
            _child: child,
            ws,
            next_id: 0,
        };
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        Some(b)
    }

    /// Sends one command and returns its result, skipping events.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        ws_send(&mut self.ws, msg.as_bytes());
        loop {
            let v: Value = serde_json::from_slice(&ws_read(&mut self.ws)).unwrap();
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(
            "document.readyState === 'complete'",
            Duration::from_secs(20),
        );
    }

    /// Evaluates `js` in the page (promises awaited) and returns its value.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{js}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Polls `js` until it is truthy; returns its value.
    pub fn wait_for(&mut self, js: &str, limit: Duration) -> Value {
        let start = Instant::now();
        loop {
            let v = self.eval(js);
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
            if truthy {
                return v;
            }
            assert!(start.elapsed() < limit, "timed out waiting for {js}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The text of the first element matching `selector` ("" when absent).
    pub fn text(&mut self, selector: &str) -> String {
        let js = format!(
            "(document.querySelector({}) || {{}}).textContent || ''",
            json!(selector)
        );
        self.eval(&js).as_str().unwrap_or("").to_string()
    }

    pub fn html(&mut self, selector: &str) -> String {
        let js = format!(
            "(document.querySelector({}) || {{}}).outerHTML || ''",
            json!(selector)
        );
        self.eval(&js).as_str().unwrap_or("").to_string()
    }

    pub fn click(&mut self, selector: &str) {
        self.eval(&format!(
            "document.querySelector({}).click()",
            json!(selector)
        ));
    }

    /// A PNG of the viewport under target/jscope-test/screenshots/.
    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        let dir = target_dir().join("jscope-test").join("screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64_decode(r["data"].as_str().unwrap());
        assert!(png.len() > 5000, "a real screenshot, not a blank one");
        let file = dir.join(name);
        std::fs::write(&file, png).unwrap();
        file
    }
}

/// The WebSocket URL of the browser's first page.
fn page_socket(host: &str) -> String {
    let mut s = TcpStream::connect(host).unwrap();
    write!(
        s,
        "GET /json/list HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    // Chromium keeps the connection open: read exactly Content-Length bytes.
    let mut r = BufReader::new(s);
    let mut length = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).unwrap();
    let targets: Vec<Value> = serde_json::from_slice(&body).unwrap();
    let page = targets
        .iter()
        .find(|t| t["type"] == "page")
        .expect("a page target");
    page["webSocketDebuggerUrl"].as_str().unwrap().to_string()
}

fn ws_connect(url: &str) -> TcpStream {
    let rest = url.trim_start_matches("ws://");
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: anNjb3BlLXRlc3Qta2V5IQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    // Read the 101 answer byte by byte so no frame byte is swallowed.
    let mut head = Vec::new();
    let mut b = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    s
}

/// One masked text frame (clients must mask; the key need not be secret here).
fn ws_send(s: &mut TcpStream, payload: &[u8]) {
    let mut frame = vec![0x81];
    let n = payload.len();
    if n < 126 {
        frame.push(0x80 | n as u8);
    } else if n <= 0xffff {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        frame.push(0x80 | 127);
        frame.extend_from_slice(&(n as u64).to_be_bytes());
    }
    let key = [0x4a, 0x53, 0x43, 0x50];
    frame.extend_from_slice(&key);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    s.write_all(&frame).unwrap();
}

/// One whole message (fragments joined); control frames are skipped.
fn ws_read(s: &mut TcpStream) -> Vec<u8> {
    let mut message = Vec::new();
    loop {
        let mut h = [0u8; 2];
        s.read_exact(&mut h).unwrap();
        let (fin, opcode) = (h[0] & 0x80 != 0, h[0] & 0x0f);
        let mut len = (h[1] & 0x7f) as u64;
        if len == 126 {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            len = u16::from_be_bytes(b) as u64;
        } else if len == 127 {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            len = u64::from_be_bytes(b);
        }
        let mut payload = vec![0u8; len as usize];
        s.read_exact(&mut payload).unwrap();
        if opcode >= 0x8 {
            continue;
        }
        message.extend_from_slice(&payload);
        if fin {
            return message;
        }
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u32> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let mut n = 0u32;
        for (i, d) in group.iter().enumerate() {
            n |= d << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    out
}
