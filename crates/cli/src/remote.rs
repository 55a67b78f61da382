//! A minimal HTTP/1.1 GET client for the collector's API (`--collector URL`):
//! plain `http://HOST:PORT`, one request per connection, as the collector serves.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

pub struct Collector {
    /// `host:port` as given.
    authority: String,
    /// A path prefix after the authority, without a trailing slash.
    prefix: String,
    token: Option<String>,
}

impl Collector {
    pub fn new(url: &str, token: Option<String>) -> Result<Collector> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            anyhow!("--collector must be an http:// URL, e.g. http://127.0.0.1:7080 (got {url})")
        })?;
        let (authority, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            bail!("--collector {url} names no host");
        }
        let authority = if authority.contains(':') {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let prefix = prefix.trim_end_matches('/');
        Ok(Collector {
            authority,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("/{prefix}")
            },
            token,
        })
    }

    pub fn base(&self) -> String {
        format!("http://{}{}", self.authority, self.prefix)
    }

    /// GETs `path` (starting with `/`) and returns the body of a 200 answer; any
    /// other status is an error carrying the collector's message.
    /// The collector's JVM list (`/api/jvms`), as rows of the caller's shape.
    pub fn jvms<T: serde::de::DeserializeOwned>(&self) -> Result<Vec<T>> {
        serde_json::from_slice(&self.get("/api/jvms")?)
            .with_context(|| format!("{} did not answer a JVM list", self.base()))
    }

    pub fn get(&self, path: &str) -> Result<Vec<u8>> {
        let addr = self
            .authority
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .with_context(|| format!("cannot resolve {}", self.authority))?;
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .with_context(|| format!("cannot connect to the collector at {}", self.base()))?;
        s.set_read_timeout(Some(Duration::from_secs(300)))?;
        let auth = self
            .token
            .as_deref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            s,
            "GET {}{path} HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n",
            self.prefix, self.authority
        )?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer)
            .with_context(|| format!("reading the answer of {}", self.base()))?;
        let (status, body) = split_response(&answer)
            .with_context(|| format!("{} answered something that is not HTTP", self.base()))?;
        if status != 200 {
            bail!(
                "the collector answered {status} to {path}: {}",
                message_of(&body)
            );
        }
        Ok(body)
    }
}

/// The status and body of a complete response, honouring Content-Length.
fn split_response(answer: &[u8]) -> Option<(u16, Vec<u8>)> {
    let head_end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..head_end]).ok()?;
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = answer[head_end + 4..].to_vec();
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    });
    if let Some(n) = length {
        if body.len() < n {
            return None;
        }
        body.truncate(n);
    }
    Some((status, body))
}

/// The `error` of a JSON error body, or the body itself.
fn message_of(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_answers_are_parsed() {
        let c = Collector::new("http://127.0.0.1:7080/", None).unwrap();
        assert_eq!(c.base(), "http://127.0.0.1:7080");
        let c = Collector::new("http://example:9/jscope", None).unwrap();
        assert_eq!(c.base(), "http://example:9/jscope");
        let refused = Collector::new("localhost", None).err().unwrap();
        assert!(refused.to_string().contains("http://"), "{refused}");
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(split_response(ok), Some((200, b"abc".to_vec())));
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc";
        assert_eq!(split_response(short), None, "a cut answer is an error");
        assert_eq!(message_of(br#"{"error": "unknown jvm"}"#), "unknown jvm");
    }
}
