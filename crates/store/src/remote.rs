//! A running collector read through its HTTP API (`--collector URL`): a minimal
//! HTTP/1.1 GET client, plain `http://HOST:PORT`, one request per connection, as
//! the collector serves. It is one more [`JvmSource`](crate::JvmSource): the JVM
//! list, a JVM's recording, and hot methods and stacks the collector aggregates.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use jscope_tls::{ClientFiles, Stream};

use jscope_analysis::{Annotation, HotMethods, Mode};
use jscope_flame::FlameGraph;
use jscope_format::Recording;
use serde::Deserialize;

use crate::jvms::JvmSummary;
use crate::query::{Query, WithWarnings};
use crate::StoreError;

/// A collector's HTTP API.
pub struct RemoteCollector {
    /// `host:port` as given.
    authority: String,
    /// A path prefix after the authority, without a trailing slash.
    prefix: String,
    token: Option<String>,
    /// `https://`: what the client trusts (the system's CAs unless told otherwise).
    tls: Option<ClientFiles>,
}

fn remote(message: String) -> StoreError {
    StoreError::Remote(message)
}

impl RemoteCollector {
    pub fn new(url: &str, token: Option<String>) -> Result<RemoteCollector, StoreError> {
        let (rest, tls) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (rest, None),
            (_, Some(rest)) => (rest, Some(ClientFiles::default())),
            _ => {
                return Err(remote(format!(
                "--collector must be an http:// or https:// URL, e.g. http://127.0.0.1:7080 (got {url})"
            )))
            }
        };
        let (authority, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(remote(format!("--collector {url} names no host")));
        }
        let authority = if authority.contains(':') {
            authority.to_string()
        } else if tls.is_some() {
            format!("{authority}:443")
        } else {
            format!("{authority}:80")
        };
        let prefix = prefix.trim_end_matches('/');
        Ok(RemoteCollector {
            authority,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("/{prefix}")
            },
            token,
            tls,
        })
    }

    /// For an https:// collector: the CA to trust, a client certificate, or (only on
    /// an explicit `--insecure`) no check. Ignored for http://.
    pub fn with_tls(mut self, files: ClientFiles) -> RemoteCollector {
        if self.tls.is_some() {
            self.tls = Some(files);
        }
        self
    }

    pub fn base(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority, self.prefix)
    }

    /// The collector's JVM list (`/api/jvms`).
    pub fn jvm_list(&self) -> Result<Vec<JvmSummary>, StoreError> {
        self.json("/api/jvms", "a JVM list")
    }

    /// A JVM's stored data over `[from_ns, to_ns)` as the bytes of one recording
    /// (`/api/jvms/ID/recording`).
    pub fn recording_bytes(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError> {
        let mut query = Vec::new();
        if let Some(ns) = from_ns {
            query.push(("from_ns", ns.to_string()));
        }
        if let Some(ns) = to_ns {
            query.push(("to_ns", ns.to_string()));
        }
        self.get(&path_with(
            &format!("/api/jvms/{}/recording", encode(id)),
            &query,
        ))
    }

    /// [`Self::recording_bytes`] read as a recording; damage is left in it for the
    /// caller to report.
    pub fn recording(
        &self,
        id: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError> {
        let bytes = self.recording_bytes(id, from_ns, to_ns)?;
        Recording::from_bytes(&bytes).map_err(|e| {
            remote(format!(
                "{} sent an unreadable recording of {id}: {e}",
                self.base()
            ))
        })
    }

    /// The hot methods of the query's JVMs, merged by the collector (`/api/hot`),
    /// and the warnings it sent with them.
    pub fn hot(&self, q: &Query, limit: usize) -> Result<WithWarnings<HotMethods>, StoreError> {
        let mut query = query_params(q);
        query.push(("limit", limit.to_string()));
        self.json(&path_with("/api/hot", &query), "a hot-methods table")
    }

    /// The stacks of the query's JVMs, merged by the collector (`/api/flame`),
    /// frames named as `q.annotate` says, and the warnings it sent with them.
    pub fn flame(&self, q: &Query) -> Result<WithWarnings<(FlameGraph, Option<Mode>)>, StoreError> {
        #[derive(Deserialize)]
        struct Flame {
            mode: Option<Mode>,
            collapsed: String,
            #[serde(default)]
            warnings: Vec<String>,
        }
        let mut query = query_params(q);
        query.push(("format", "json".into()));
        if q.lines {
            query.push(("lines", "1".into()));
        }
        match q.annotate {
            Annotation::None => {}
            Annotation::Tiers => query.push(("annotate", "tiers".into())),
            Annotation::Kinds => query.push(("annotate", "kinds".into())),
        }
        let flame: Flame = self.json(&path_with("/api/flame", &query), "stacks")?;
        let graph = FlameGraph::from_collapsed(&flame.collapsed).map_err(|e| {
            remote(format!(
                "{} sent stacks jscope cannot read: {e}",
                self.base()
            ))
        })?;
        Ok(WithWarnings {
            view: (graph, flame.mode),
            warnings: flame.warnings,
        })
    }

    /// The requests the collector's JVMs served (`/api/requests`), slowest first,
    /// with these parameters (`jvm`, `service`, `label`, `latency_ns`, `limit`).
    pub fn requests<T: serde::de::DeserializeOwned>(
        &self,
        query: &[(&str, String)],
    ) -> Result<T, StoreError> {
        self.json(&path_with("/api/requests", query), "a request list")
    }

    fn json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        what: &str,
    ) -> Result<T, StoreError> {
        let body = self.get(path)?;
        serde_json::from_slice(&body)
            .map_err(|e| remote(format!("{} did not answer {what}: {e}", self.base())))
    }

    /// GETs `path` (starting with `/`) and returns the body of a 200 answer; any
    /// other status is an error carrying the collector's message.
    pub fn get(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        let failed = |what: String| move |e: std::io::Error| remote(format!("{what}: {e}"));
        let addr = self
            .authority
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| remote(format!("cannot resolve {}", self.authority)))?;
        let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).map_err(failed(
            format!("cannot connect to the collector at {}", self.base()),
        ))?;
        let io = failed(format!("talking to {}", self.base()));
        tcp.set_read_timeout(Some(Duration::from_secs(300)))
            .map_err(&io)?;
        tcp.set_write_timeout(Some(Duration::from_secs(30)))
            .map_err(&io)?;
        let mut s = match &self.tls {
            None => Stream::Plain(tcp),
            Some(files) => {
                let config = files.config().map_err(|e| remote(e.to_string()))?;
                let host = jscope_tls::host_of(&self.authority);
                Stream::client(tcp, config, host).map_err(failed(format!(
                    "TLS with the collector at {} failed",
                    self.base()
                )))?
            }
        };
        let auth = self
            .token
            .as_deref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            s,
            "GET {}{path} HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n",
            self.prefix, self.authority
        )
        .and_then(|_| s.flush())
        .map_err(&io)?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer)
            .map_err(failed(format!("reading the answer of {}", self.base())))?;
        let (status, body) = split_response(&answer).ok_or_else(|| {
            remote(format!(
                "{} answered something that is not HTTP",
                self.base()
            ))
        })?;
        if status != 200 {
            return Err(remote(format!(
                "the collector answered {status} to {path}: {}",
                message_of(&body)
            )));
        }
        Ok(body)
    }
}

/// The API's parameters for the query's JVMs, window and filters.
fn query_params(q: &Query) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = q.jvms.iter().map(|j| ("jvm", j.clone())).collect();
    if let Some(m) = q.mode {
        out.push(("mode", m.name().to_string()));
    }
    if let Some(t) = &q.thread {
        out.push(("thread", t.clone()));
    }
    out.extend(q.states.iter().map(|s| ("state", s.to_string())));
    if let Some(ns) = q.from_ns {
        out.push(("from_ns", ns.to_string()));
    }
    if let Some(ns) = q.to_ns {
        out.push(("to_ns", ns.to_string()));
    }
    if let Some(ns) = q.requests.min_latency_ns {
        out.push(("latency_ns", ns.to_string()));
    }
    if let Some(r) = &q.requests.request {
        out.push(("request", r.clone()));
    }
    out
}

fn path_with(path: &str, query: &[(&str, String)]) -> String {
    if query.is_empty() {
        return path.to_string();
    }
    let params: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    format!("{path}?{}", params.join("&"))
}

/// Percent-encodes a path segment or query value (stream ids are host-pid-start,
/// but hosts vary).
pub fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
        let c = RemoteCollector::new("http://127.0.0.1:7080/", None).unwrap();
        assert_eq!(c.base(), "http://127.0.0.1:7080");
        let c = RemoteCollector::new("http://example:9/jscope", None).unwrap();
        assert_eq!(c.base(), "http://example:9/jscope");
        let refused = RemoteCollector::new("localhost", None).err().unwrap();
        assert!(refused.to_string().contains("http://"), "{refused}");
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(split_response(ok), Some((200, b"abc".to_vec())));
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc";
        assert_eq!(split_response(short), None, "a cut answer is an error");
        assert_eq!(message_of(br#"{"error": "unknown jvm"}"#), "unknown jvm");
        assert_eq!(encode("my host-1"), "my%20host-1");
        let q = Query {
            jvms: vec!["a b".into()],
            from_ns: Some(5),
            ..Query::default()
        };
        assert_eq!(
            path_with("/api/hot", &query_params(&q)),
            "/api/hot?jvm=a%20b&from_ns=5"
        );
    }
}
