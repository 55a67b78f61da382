//! A small synchronous client for ClickHouse's HTTP interface (one request per
//! connection, `Connection: close`), and the RowBinary encoding that inserts and
//! selects use. Both exist unchanged from ClickHouse 18.16 to current releases.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use jscope_tls::{ClientFiles, Stream};

/// Where a ClickHouse server is and who to log in as:
/// `clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE[?flush_ms=N]`, or
/// `clickhouse+https://...` for its HTTPS port, with `ca=FILE` (else the system's
/// CAs), `cert=FILE&key=FILE` (a client certificate) and `insecure=1` (no check of
/// the server's certificate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickHouseUrl {
    pub host: String,
    pub port: u16,
    pub database: String,
    pub user: String,
    pub password: String,
    /// How long rows wait to be batched with other agents' before an insert.
    pub flush: Duration,
    /// `clickhouse+https://`: what the TLS client trusts and shows.
    pub tls: Option<ClientFiles>,
    /// `cluster=NAME`: replicated tables on every node of that cluster (its
    /// `remote_servers` entry) and Distributed tables over them.
    pub cluster: Option<String>,
}

impl ClickHouseUrl {
    /// Parses the URL; user and password not in it come from `JSCOPE_CLICKHOUSE_USER`
    /// and `JSCOPE_CLICKHOUSE_PASSWORD` (else `default` and none).
    pub fn parse(text: &str) -> Result<ClickHouseUrl, String> {
        let bad = |why: &str| {
            format!("bad store {text:?}: {why} (use clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE or clickhouse+https://...)")
        };
        let (rest, mut tls) = match text.strip_prefix("clickhouse+https://") {
            Some(rest) => (rest, Some(ClientFiles::default())),
            None => (
                text.strip_prefix("clickhouse://")
                    .ok_or_else(|| bad("not clickhouse://"))?,
                None,
            ),
        };
        let (rest, params) = rest.split_once('?').unwrap_or((rest, ""));
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (addr, database) = rest.split_once('/').ok_or_else(|| bad("no database"))?;
        let (host, port) = addr.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        let port: u16 = port.parse().map_err(|_| bad("bad port"))?;
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let database = database.trim_end_matches('/');
        if database.is_empty()
            || !database
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(bad("the database name must be letters, digits and _"));
        }
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (user, password) = match auth {
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (u.to_string(), p.to_string()),
                None => (
                    a.to_string(),
                    env("JSCOPE_CLICKHOUSE_PASSWORD").unwrap_or_default(),
                ),
            },
            None => (
                env("JSCOPE_CLICKHOUSE_USER").unwrap_or_else(|| "default".into()),
                env("JSCOPE_CLICKHOUSE_PASSWORD").unwrap_or_default(),
            ),
        };
        let mut flush = Duration::from_secs(1);
        let mut cluster = None;
        for p in params.split('&').filter(|p| !p.is_empty()) {
            match p.split_once('=') {
                Some(("flush_ms", v)) => {
                    flush = Duration::from_millis(v.parse().map_err(|_| bad("bad flush_ms"))?)
                }
                Some(("cluster", v)) => {
                    if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(bad("the cluster name must be letters, digits and _"));
                    }
                    cluster = Some(v.to_string());
                }
                Some((k @ ("ca" | "cert" | "key" | "insecure"), v)) => {
                    let t = tls
                        .as_mut()
                        .ok_or_else(|| bad(&format!("{k}= needs clickhouse+https://")))?;
                    match k {
                        "ca" => t.ca = Some(v.into()),
                        "cert" => t.cert = Some(v.into()),
                        "key" => t.key = Some(v.into()),
                        _ => t.insecure = matches!(v, "1" | "true" | "yes"),
                    }
                }
                _ => return Err(bad(&format!("unknown parameter {p:?}"))),
            }
        }
        Ok(ClickHouseUrl {
            host: host.trim_matches(['[', ']']).to_string(),
            port,
            database: database.to_string(),
            user,
            password,
            flush,
            tls,
            cluster,
        })
    }
}

/// Runs statements over HTTP (or HTTPS).
pub struct Client {
    url: ClickHouseUrl,
    timeout: Duration,
    /// Built once from `url.tls`.
    tls: Option<std::sync::Arc<jscope_tls::ClientConfig>>,
}

fn encode_component(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
}

impl Client {
    /// A client for `url`; its TLS files are read here, an error naming the file.
    pub fn new(url: ClickHouseUrl) -> Result<Client, String> {
        let tls = url
            .tls
            .as_ref()
            .map(|t| t.config())
            .transpose()
            .map_err(|e| format!("ClickHouse TLS: {e}"))?;
        Ok(Client {
            url,
            timeout: Duration::from_secs(30),
            tls,
        })
    }

    /// `sql` runs with `body` as its data (an INSERT's rows), or as the query itself
    /// when `insert` is empty. Returns the response body.
    fn request(&self, query_param: Option<&str>, body: &[u8]) -> Result<Vec<u8>, String> {
        let mut target = String::from("/?user=");
        encode_component(&self.url.user, &mut target);
        if !self.url.password.is_empty() {
            target.push_str("&password=");
            encode_component(&self.url.password, &mut target);
        }
        if self.url.cluster.is_some() {
            // An insert returns once every shard has it (not when it is queued on the
            // node it went to), and every request prefers the first live replica of
            // each shard, so a read sees what an insert just wrote; ON CLUSTER
            // statements wait for a dead node at most a minute.
            target.push_str(
                "&insert_distributed_sync=1&load_balancing=in_order&distributed_ddl_task_timeout=60",
            );
        }
        if let Some(q) = query_param {
            target.push_str("&query=");
            encode_component(q, &mut target);
        }
        let addr = (self.url.host.as_str(), self.url.port)
            .to_socket_addrs()
            .map_err(|e| format!("{}:{}: {e}", self.url.host, self.url.port))?
            .next()
            .ok_or_else(|| format!("{}: no address", self.url.host))?;
        let io = |e: std::io::Error| format!("{addr}: {e}");
        let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(io)?;
        tcp.set_read_timeout(Some(self.timeout)).map_err(io)?;
        tcp.set_write_timeout(Some(self.timeout)).map_err(io)?;
        let mut stream = match &self.tls {
            None => Stream::Plain(tcp),
            Some(tls) => Stream::client(tcp, tls.clone(), &self.url.host)
                .map_err(|e| format!("{addr}: TLS: {e}"))?,
        };
        let mut w = std::io::BufWriter::new(&mut stream);
        write!(
            w,
            "POST {target} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.url.host,
            body.len()
        )
        .map_err(io)?;
        w.write_all(body).map_err(io)?;
        w.flush().map_err(io)?;
        drop(w);
        let mut r = BufReader::new(&mut stream);
        let mut status = String::new();
        r.read_line(&mut status).map_err(io)?;
        let code: u16 = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("{addr}: not an HTTP response: {:?}", status.trim()))?;
        let mut chunked = false;
        let mut length = None;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).map_err(io)? == 0 {
                break;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                } else if k == "content-length" {
                    length = v.parse::<usize>().ok();
                }
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                r.read_line(&mut size).map_err(io)?;
                let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| format!("{addr}: bad chunk size {:?}", size.trim()))?;
                if n == 0 {
                    break;
                }
                let at = out.len();
                out.resize(at + n, 0);
                r.read_exact(&mut out[at..]).map_err(io)?;
                let mut crlf = [0u8; 2];
                r.read_exact(&mut crlf).map_err(io)?;
            }
        } else if let Some(n) = length {
            out.resize(n, 0);
            r.read_exact(&mut out).map_err(io)?;
        } else {
            r.read_to_end(&mut out).map_err(io)?;
        }
        if code != 200 {
            let text = String::from_utf8_lossy(&out);
            let first = text.lines().next().unwrap_or("").trim();
            return Err(format!("{addr}: HTTP {code}: {first}"));
        }
        Ok(out)
    }

    /// Runs a statement or a query (its result format in the SQL); returns the body.
    pub fn query(&self, sql: &str) -> Result<Vec<u8>, String> {
        self.request(None, sql.as_bytes())
    }

    /// `INSERT INTO table (columns) FORMAT RowBinary` with `rows` encoded by [`Row`].
    pub fn insert(&self, table: &str, columns: &str, rows: &[u8]) -> Result<(), String> {
        let sql = format!(
            "INSERT INTO {}.{table} ({columns}) FORMAT RowBinary",
            self.url.database
        );
        self.request(Some(&sql), rows).map(|_| ())
    }
}

/// A SQL string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Appends RowBinary values.
pub struct Row<'a>(pub &'a mut Vec<u8>);

impl Row<'_> {
    fn varint(&mut self, mut n: u64) {
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.varint(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }

    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }

    pub fn strings<'s>(&mut self, v: impl ExactSizeIterator<Item = &'s str>) -> &mut Self {
        self.varint(v.len() as u64);
        v.for_each(|s| {
            self.str(s);
        });
        self
    }
}

/// Reads RowBinary values (a `SELECT ... FORMAT RowBinary` result).
pub struct Cursor<'a> {
    pub buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf }
    }

    pub fn done(&self) -> bool {
        self.buf.is_empty()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() < n {
            return Err("clickhouse sent a truncated row".into());
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("clickhouse sent a bad length".into())
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()? as usize;
        self.take(n)
    }

    pub fn string(&mut self) -> Result<String, String> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_credentials() {
        let u = ClickHouseUrl::parse("clickhouse://bob:pw@db.local:8123/prof").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.database.as_str()),
            ("db.local", 8123, "prof")
        );
        assert_eq!((u.user.as_str(), u.password.as_str()), ("bob", "pw"));
        let u = ClickHouseUrl::parse("clickhouse://127.0.0.1:8123/jscope?flush_ms=200").unwrap();
        assert_eq!(u.flush, Duration::from_millis(200));
        for bad in [
            "http://h:1/db",
            "clickhouse://h/db",
            "clickhouse://h:x/db",
            "clickhouse://h:1/",
            "clickhouse://h:1/a;b",
            "clickhouse://h:1/db?x=1",
        ] {
            assert!(ClickHouseUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn row_binary_round_trips() {
        let mut buf = Vec::new();
        Row(&mut buf).u64(7).str("héllo").bytes(&[0; 200]).u8(3);
        let mut c = Cursor::new(&buf);
        assert_eq!(c.u64().unwrap(), 7);
        assert_eq!(c.string().unwrap(), "héllo");
        assert_eq!(c.bytes().unwrap().len(), 200);
        assert_eq!(c.u8().unwrap(), 3);
        assert!(c.done());
        assert_eq!(quote("a'b\\c"), "'a\\'b\\\\c'");
    }
}
