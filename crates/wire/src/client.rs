//! A blocking client for one connection: handshake, chunk sends, acknowledgements.
//!
//! Made for a plain `std::thread` (the agent's transport thread, tests, the load
//! generator): every call is bounded by the configured timeouts, and reading
//! acknowledgements never blocks unless asked to wait.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jscope_tls::Stream;

use crate::message::{is_timeout, write_chunk};
use crate::{
    read_message, write_message, write_preamble, Accept, Hello, Message, WireError,
    DEFAULT_MAX_FRAME,
};

/// Server frames are a few bytes; anything larger is a broken peer.
const MAX_SERVER_FRAME: usize = 1 << 20;

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `HOST:PORT`.
    pub addr: String,
    /// Empty when the collector needs none.
    pub token: String,
    /// See [`crate::stream_id_for`].
    pub stream: String,
    pub labels: Vec<(String, String)>,
    pub connect_timeout: Duration,
    /// Bounds every write and the handshake's read.
    pub io_timeout: Duration,
    /// Speak TLS (`collector=tls://HOST:PORT`), the server's certificate checked for
    /// the host in `addr`; `None` is plain TCP.
    pub tls: Option<Arc<jscope_tls::ClientConfig>>,
}

impl ClientConfig {
    pub fn new(addr: impl Into<String>, stream: impl Into<String>) -> ClientConfig {
        ClientConfig {
            addr: addr.into(),
            token: String::new(),
            stream: stream.into(),
            labels: Vec::new(),
            connect_timeout: Duration::from_secs(3),
            io_timeout: Duration::from_secs(10),
            tls: None,
        }
    }
}

/// One accepted connection to a collector.
pub struct WireClient {
    stream: Stream,
    /// Frames are encoded here and written to the stream in one call.
    outbuf: Vec<u8>,
    inbox: Vec<u8>,
    accept: Accept,
    acked: u64,
    closed: bool,
}

impl WireClient {
    /// Connects, sends the preamble and a hello, and waits for the answer.
    /// `header` is `jscope_format::encode_file_start` output; `next_seq` the lowest
    /// sequence number the caller can still send (1 for a new stream).
    pub fn connect(
        cfg: &ClientConfig,
        header: &[u8],
        next_seq: u64,
    ) -> Result<WireClient, WireError> {
        let tcp = connect_any(&cfg.addr, cfg.connect_timeout)?;
        tcp.set_nodelay(true)?;
        tcp.set_write_timeout(Some(cfg.io_timeout))?;
        tcp.set_read_timeout(Some(cfg.io_timeout))?;
        let mut stream = match &cfg.tls {
            None => Stream::Plain(tcp),
            Some(tls) => {
                // The token goes in the hello, so nothing is sent before TLS is up.
                Stream::client(tcp, tls.clone(), jscope_tls::host_of(&cfg.addr)).map_err(|e| {
                    WireError::Tls {
                        addr: cfg.addr.clone(),
                        why: e.to_string(),
                    }
                })?
            }
        };
        let mut writer = Vec::new();
        write_preamble(&mut writer)?;
        let hello = Hello {
            token: cfg.token.clone(),
            stream: cfg.stream.clone(),
            next_seq,
            labels: cfg.labels.clone(),
            header: header.to_vec(),
        };
        write_message(&mut writer, &Message::Hello(hello))?;
        stream.write_all(&writer)?;
        stream.flush()?;
        writer.clear();
        let accept = read_answer(&mut stream)?;
        Ok(WireClient {
            stream,
            outbuf: writer,
            inbox: Vec::new(),
            acked: accept.acked,
            accept,
            closed: false,
        })
    }

    /// What the collector said when it accepted; `accept().acked` is where to resume.
    pub fn accept(&self) -> &Accept {
        &self.accept
    }

    /// Highest sequence number the collector has acknowledged as durable.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// True once the collector closed its end (read end of stream): the connection
    /// can take no more chunks, and what it did not acknowledge must go elsewhere.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.stream.tcp().peer_addr().ok()
    }

    /// Sends one framed chunk. Blocks at most the io timeout when the collector reads
    /// slowly; on error the connection is unusable and the caller reconnects.
    pub fn send(&mut self, seq: u64, chunk: &[u8]) -> Result<(), WireError> {
        let len = chunk.len() as u64 + 8;
        if len > self.accept.max_frame as u64 {
            return Err(WireError::FrameTooLarge {
                len: len.min(u32::MAX as u64) as u32,
                max: self.accept.max_frame,
            });
        }
        write_chunk(&mut self.outbuf, seq, chunk)?;
        self.flush_out()
    }

    /// Reads whatever acknowledgements have arrived, without blocking, and returns the
    /// highest acknowledged sequence number.
    pub fn poll_acks(&mut self) -> Result<u64, WireError> {
        self.stream.tcp().set_nonblocking(true)?;
        let read = self.fill_inbox();
        self.stream.tcp().set_nonblocking(false)?;
        read?;
        self.drain_inbox()?;
        Ok(self.acked)
    }

    /// Blocks until `seq` is acknowledged or `timeout` passes; returns the highest
    /// acknowledged sequence number either way.
    pub fn wait_for_ack(&mut self, seq: u64, timeout: Duration) -> Result<u64, WireError> {
        let deadline = Instant::now() + timeout;
        self.drain_inbox()?;
        while self.acked < seq && !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.stream.tcp().set_read_timeout(Some(left))?;
            let read = self.fill_inbox();
            read?;
            self.drain_inbox()?;
        }
        Ok(self.acked)
    }

    /// Says goodbye, waits up to `timeout` for the final acknowledgement, and closes.
    pub fn finish(mut self, timeout: Duration) -> Result<u64, WireError> {
        write_message(&mut self.outbuf, &Message::Bye)?;
        self.flush_out()?;
        let deadline = Instant::now() + timeout;
        while !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.stream.tcp().set_read_timeout(Some(left))?;
            self.fill_inbox()?;
            self.drain_inbox()?;
        }
        self.stream.close_notify();
        Ok(self.acked)
    }

    /// Writes the encoded frames; on error the connection is unusable.
    fn flush_out(&mut self) -> Result<(), WireError> {
        let written = self
            .stream
            .write_all(&self.outbuf)
            .and_then(|_| self.stream.flush());
        self.outbuf.clear();
        written.map_err(WireError::from)
    }

    /// Appends readable bytes to the inbox; stops at would-block, a timeout or end of stream.
    fn fill_inbox(&mut self) -> Result<(), WireError> {
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.inbox.extend_from_slice(&buf[..n]);
                    if n < buf.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Decodes the complete frames in the inbox.
    fn drain_inbox(&mut self) -> Result<(), WireError> {
        while let Some((kind, len)) = frame_head(&self.inbox)? {
            if self.inbox.len() < 5 + len {
                break;
            }
            let msg = Message::decode(kind, &self.inbox[5..5 + len])?;
            self.inbox.drain(..5 + len);
            self.handle(msg)?;
        }
        Ok(())
    }

    fn handle(&mut self, msg: Message) -> Result<(), WireError> {
        match msg {
            Message::Ack { seq } => {
                self.acked = self.acked.max(seq);
                Ok(())
            }
            Message::Refuse { code, message } => Err(WireError::Refused { code, message }),
            other => Err(WireError::Unexpected {
                got: other.name(),
                want: "ack",
            }),
        }
    }
}

fn frame_head(inbox: &[u8]) -> Result<Option<(u8, usize)>, WireError> {
    if inbox.len() < 5 {
        return Ok(None);
    }
    let len = u32::from_le_bytes(inbox[1..5].try_into().expect("4 bytes")) as usize;
    if len > MAX_SERVER_FRAME {
        return Err(WireError::FrameTooLarge {
            len: len as u32,
            max: MAX_SERVER_FRAME as u32,
        });
    }
    Ok(Some((inbox[0], len)))
}

fn read_answer(r: &mut impl Read) -> Result<Accept, WireError> {
    let mut r = FirstBytes {
        inner: r,
        kept: Vec::new(),
    };
    match read_message(&mut r, DEFAULT_MAX_FRAME) {
        Ok(Message::Accept(a)) => Ok(a),
        Ok(Message::Refuse { code, message }) => Err(WireError::Refused { code, message }),
        Ok(other) => Err(WireError::Unexpected {
            got: other.name(),
            want: "accept",
        }),
        Err(WireError::Idle) => Err(WireError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no answer to hello",
        ))),
        // A length past the limit or a kind no collector sends: the peer speaks
        // something else, and its first bytes say what better than the frame error.
        Err(WireError::FrameTooLarge { .. } | WireError::Malformed { what: "frame", .. }) => {
            r.rest_of_line();
            Err(not_a_collector(&r.kept))
        }
        Err(e) => Err(e),
    }
}

/// What a peer that is not a collector answered: its first line, printable.
fn not_a_collector(first: &[u8]) -> WireError {
    let line = first.split(|b| *b == b'\n').next().unwrap_or_default();
    let answer: String = String::from_utf8_lossy(line)
        .trim_end()
        .chars()
        .map(|c| if c.is_control() { '.' } else { c })
        .collect();
    let http = first.starts_with(b"HTTP/");
    WireError::NotACollector {
        answer: format!("{answer:?}"),
        hint: if http {
            " (an HTTP server: the collector's --http port? agents send to its --agents port)"
        } else {
            ""
        },
    }
}

/// A reader that keeps the first bytes it hands on, for [`not_a_collector`].
struct FirstBytes<'a, R: Read> {
    inner: &'a mut R,
    kept: Vec<u8>,
}

impl<R: Read> FirstBytes<'_, R> {
    /// Reads on to the end of the first line (or 80 bytes, the peer's end, an error).
    fn rest_of_line(&mut self) {
        let mut buf = [0u8; 80];
        while self.kept.len() < 80 && !self.kept.contains(&b'\n') {
            match self.read(&mut buf[..80 - self.kept.len()]) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
}

impl<R: Read> Read for FirstBytes<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let room = 80usize.saturating_sub(self.kept.len()).min(n);
        self.kept.extend_from_slice(&buf[..room]);
        Ok(n)
    }
}

fn connect_any(addr: &str, timeout: Duration) -> Result<TcpStream, WireError> {
    let fail = |why: String| WireError::Connect {
        addr: addr.to_string(),
        why,
    };
    let addrs = addr.to_socket_addrs().map_err(|e| fail(e.to_string()))?;
    let mut last = "no address".to_string();
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e.to_string(),
        }
    }
    Err(fail(last))
}
