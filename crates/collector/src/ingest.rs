//! The ingest server: one thread per agent connection (blocking I/O with timeouts), so
//! a slow or broken client only ever holds up itself. Each connection: preamble, hello,
//! accept/refuse, then chunks, validated and decoded once, passed to every plugin,
//! and acknowledged after the plugins' `before_ack` (the store's fsync). Chunks that
//! arrive together are acknowledged together, which batches the fsyncs.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::{Duration, SystemTime};

use jscope_format::{decode_payload, split_chunk, ChunkKind, Record, Recording, Split};
use jscope_wire::{
    read_message, read_preamble, valid_stream_id, write_message, Accept, Hello, Message,
    RefuseCode, WireError,
};
use serde::Serialize;

use crate::listener::Connection;
use crate::listener::{Disconnect, Listeners, Trace};
use crate::ServerConfig;
use jscope_store::identity::{apply_dictionary, new_dictionary, timed_span};
use jscope_store::JvmIdentity;
use jscope_store::Store;
use jscope_tls::Stream;

const SERVER_NAME: &str = concat!("jscope-collector ", env!("CARGO_PKG_VERSION"));

/// Counters over the collector's lifetime.
#[derive(Debug, Default)]
pub struct IngestStats {
    pub accepted: AtomicU64,
    pub refused: AtomicU64,
    pub dropped: AtomicU64,
    pub active: AtomicUsize,
    pub chunks: AtomicU64,
    pub duplicate_chunks: AtomicU64,
    pub bytes: AtomicU64,
    pub samples: AtomicU64,
    /// Refused connections by reason (see [`Failure::reason`]).
    pub refusals: Mutex<std::collections::BTreeMap<&'static str, u64>>,
    /// How long the store took to make each acknowledged batch durable.
    pub store_write: crate::histogram::Histogram,
    /// Store writes (a chunk, or making a batch durable) that failed.
    pub store_errors: AtomicU64,
    /// Bytes of chunks handed to the store and not yet durable and acknowledged.
    pub queued_bytes: AtomicU64,
}

/// A point-in-time copy of [`IngestStats`].
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub connections_accepted: u64,
    pub connections_refused: u64,
    pub connections_dropped: u64,
    pub connections_active: usize,
    pub chunks: u64,
    pub duplicate_chunks: u64,
    pub bytes: u64,
    pub samples: u64,
}

impl IngestStats {
    /// Counts a refused connection under `reason`.
    pub(crate) fn refuse(&self, reason: &'static str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        *self
            .refusals
            .lock()
            .expect("refusals lock")
            .entry(reason)
            .or_default() += 1;
    }

    /// Refused connections by reason: `token`, `version`, `hello`, `busy`, `full`,
    /// `stopping`, `store`, `plaintext` (on a TLS port), `tls` (a failed TLS
    /// handshake), `protocol` (not the wire protocol, timeouts), `other`.
    pub fn refusals(&self) -> Vec<(&'static str, u64)> {
        let r = self.refusals.lock().expect("refusals lock");
        r.iter().map(|(k, v)| (*k, *v)).collect()
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            connections_accepted: get(&self.accepted),
            connections_refused: get(&self.refused),
            connections_dropped: get(&self.dropped),
            connections_active: self.active.load(Ordering::Relaxed),
            chunks: get(&self.chunks),
            duplicate_chunks: get(&self.duplicate_chunks),
            bytes: get(&self.bytes),
            samples: get(&self.samples),
        }
    }
}

/// A JVM's state that outlives its connections.
struct JvmEntry {
    dict: Arc<RwLock<Recording>>,
    acked: Mutex<u64>,
}

pub(crate) struct Ingest {
    cfg: ServerConfig,
    /// The agent port speaks TLS with this configuration; `None` is plain TCP.
    tls: Option<Arc<jscope_tls::ServerConfig>>,
    store: Arc<dyn Store>,
    listeners: Listeners,
    jvms: Mutex<HashMap<String, Arc<JvmEntry>>>,
    /// The connection streaming each stream id, to take over from a half-dead one.
    active: Mutex<HashMap<String, (u64, TcpStream)>>,
    next_conn: AtomicU64,
    pub(crate) stats: IngestStats,
    pub(crate) stopping: AtomicBool,
    /// A store failure was logged and the store has not worked since: agents
    /// retrying meanwhile are refused or dropped without a line each.
    store_down: AtomicBool,
}

/// Why a session ended badly: the log line, and what to tell the client if anything.
struct Failure {
    line: String,
    refuse: Option<RefuseCode>,
    /// The store failed (not the agent or the network): logged once per outage.
    store: bool,
}

impl Failure {
    fn lost(line: impl Into<String>) -> Failure {
        Failure {
            line: line.into(),
            refuse: None,
            store: false,
        }
    }

    fn refuse(code: RefuseCode, line: impl Into<String>) -> Failure {
        Failure {
            line: line.into(),
            refuse: Some(code),
            store: code == RefuseCode::StoreUnavailable,
        }
    }

    /// What refusing it is counted as in the collector's metrics.
    fn reason(&self) -> &'static str {
        match self.refuse {
            Some(RefuseCode::BadToken) => "token",
            Some(RefuseCode::UnsupportedVersion) => "version",
            Some(RefuseCode::BadHello) => "hello",
            Some(RefuseCode::Busy) => "busy",
            Some(RefuseCode::Full) => "full",
            Some(RefuseCode::ShuttingDown) => "stopping",
            Some(RefuseCode::StoreUnavailable) => "store",
            Some(RefuseCode::Other) => "other",
            None if self.store => "store",
            None => "protocol",
        }
    }

    /// The store could not take or make durable what the agent sent.
    fn store(line: impl Into<String>) -> Failure {
        Failure {
            store: true,
            ..Failure::lost(line)
        }
    }
}

fn wire_failure(what: &str, e: WireError) -> Failure {
    match e {
        WireError::Idle => Failure::lost(format!("{what}: timed out")),
        WireError::UnsupportedVersion(_) => {
            Failure::refuse(RefuseCode::UnsupportedVersion, e.to_string())
        }
        WireError::FrameTooLarge { .. } => {
            Failure::refuse(RefuseCode::Other, format!("{what}: {e}"))
        }
        e => Failure::lost(format!("{what}: {e}")),
    }
}

/// Constant-time comparison, so the token cannot be guessed byte by byte from timing.
fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Ingest {
    pub(crate) fn new(
        cfg: ServerConfig,
        store: Arc<dyn Store>,
        listeners: Listeners,
        tls: Option<Arc<jscope_tls::ServerConfig>>,
    ) -> Ingest {
        Ingest {
            tls,
            cfg,
            store,
            listeners,
            jvms: Mutex::new(HashMap::new()),
            active: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
            stats: IngestStats::default(),
            stopping: AtomicBool::new(false),
            store_down: AtomicBool::new(false),
        }
    }

    fn log(&self, line: String) {
        self.cfg.log.line(&line);
    }

    /// Logs a failed session; of store failures only the first until the store
    /// works again (every agent retries, and would repeat it once per retry).
    fn log_failure(&self, f: &Failure, line: impl FnOnce() -> String) {
        if !f.store {
            self.log(line());
        } else if !self.store_down.swap(true, Ordering::Relaxed) {
            self.log(format!(
                "{} (the store is failing: agents are refused until it works again, without a line each)",
                line()
            ));
        }
    }

    /// Accepts connections until `stopping` is set (and a connection wakes it).
    pub(crate) fn accept_loop(self: Arc<Self>, listener: TcpListener) {
        for stream in listener.incoming() {
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            match stream {
                Ok(s) => self.clone().spawn(s),
                Err(e) => self.log(format!("accept failed: {e}")),
            }
        }
    }

    fn spawn(self: Arc<Self>, stream: TcpStream) {
        let Ok(peer) = stream.peer_addr() else { return };
        if self.stats.active.load(Ordering::SeqCst) >= self.cfg.max_connections {
            self.stats.refuse("full");
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let full = Message::Refuse {
                code: RefuseCode::Full,
                message: "collector at its connection limit".into(),
            };
            let _ = write_message(&mut &stream, &full);
            self.log(format!(
                "{peer}: refused: at the limit of {} connections",
                self.cfg.max_connections
            ));
            return;
        }
        self.stats.active.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        let spawned = thread::Builder::new()
            .name("jscope-conn".into())
            .stack_size(512 << 10)
            .spawn(move || {
                me.session(stream, peer);
                me.stats.active.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            self.stats.active.fetch_sub(1, Ordering::SeqCst);
            self.log(format!("{peer}: no thread for the connection: {e}"));
        }
    }

    fn session(&self, tcp: TcpStream, peer: SocketAddr) {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let stream = match self.secure(tcp) {
            Ok(s) => s,
            Err((f, reason)) => {
                self.stats.refuse(reason);
                self.log(format!("{peer}: refused: {}", f.line));
                return;
            }
        };
        let mut reader = BufReader::with_capacity(64 << 10, stream);
        let mut session = match self.handshake(&mut reader, peer, conn_id) {
            Ok((conn, entry)) => Session {
                last_seen: conn.resumed_after,
                queued: 0,
                reader,
                conn,
                entry,
            },
            Err(f) => {
                self.stats.refuse(f.reason());
                if let Some(code) = f.refuse {
                    let no = Message::Refuse {
                        code,
                        message: f.line.clone(),
                    };
                    let stream = reader.get_mut();
                    let _ = write_message(stream, &no);
                    let _ = stream.flush();
                    stream.close_notify();
                }
                self.log_failure(&f, || format!("{peer}: refused: {}", f.line));
                return;
            }
        };
        self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        self.store_down.store(false, Ordering::Relaxed);
        let jvm = &session.conn.jvm;
        let main = jscope_store::identity::main_class_of(&jvm.command_line);
        let who = if main.is_empty() {
            format!("jvm {} (pid {})", jvm.id, jvm.pid)
        } else {
            format!("jvm {} (pid {}, {main})", jvm.id, jvm.pid)
        };
        // A first connection has nothing to resume after.
        match session.last_seen {
            0 => self.log(format!("{peer}: connected {who}")),
            n => self.log(format!("{peer}: connected {who}, resuming after chunk {n}")),
        }
        let why = match self.stream_chunks(&mut session) {
            Ok(()) => {
                self.log(format!(
                    "{peer}: {who} disconnected after chunk {}",
                    session.last_seen
                ));
                Disconnect::Clean
            }
            Err(f) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                self.log_failure(&f, || {
                    format!("{peer}: dropped jvm {}: {}", session.conn.jvm.id, f.line)
                });
                Disconnect::Lost(f.line)
            }
        };
        self.listeners.disconnect(&session.conn, &why);
        self.stats
            .queued_bytes
            .fetch_sub(std::mem::take(&mut session.queued), Ordering::Relaxed);
        self.release(&session.conn.jvm.id, conn_id);
        let stream = session.reader.get_mut();
        stream.close_notify();
        let _ = stream.tcp().shutdown(Shutdown::Both);
    }

    /// Sets the socket's timeouts and, when the agent port speaks TLS, runs the TLS
    /// handshake; a plaintext client there is refused before anything of it is read.
    fn secure(&self, tcp: TcpStream) -> Result<Stream, (Failure, &'static str)> {
        let io = |e: std::io::Error| (Failure::lost(format!("socket: {e}")), "io");
        tcp.set_read_timeout(Some(self.cfg.stall_timeout))
            .map_err(io)?;
        tcp.set_write_timeout(Some(self.cfg.stall_timeout))
            .map_err(io)?;
        tcp.set_nodelay(true).map_err(io)?;
        let Some(tls) = &self.tls else {
            return Ok(Stream::Plain(tcp));
        };
        match jscope_tls::peek_first(&tcp) {
            Some(b) if jscope_tls::looks_like_tls(b) => {}
            Some(_) => {
                // Said in plaintext, as the client speaks: it learns why, and nothing
                // of what it sent is read.
                let no = Message::Refuse {
                    code: RefuseCode::Other,
                    message:
                        "this collector takes only TLS: connect with collector=tls://HOST:PORT"
                            .into(),
                };
                jscope_tls::discard_pending(&tcp);
                let _ = write_message(&mut &tcp, &no);
                let _ = tcp.shutdown(Shutdown::Write);
                return Err((
                    Failure::lost("plaintext connection on the TLS agent port"),
                    "plaintext",
                ));
            }
            None => return Err((Failure::lost("closed before the TLS handshake"), "tls")),
        }
        Stream::server(tcp, tls.clone())
            .map_err(|e| (Failure::lost(format!("TLS handshake failed: {e}")), "tls"))
    }

    /// Preamble, hello, checks and accept: the connection and the JVM's lasting state.
    fn handshake(
        &self,
        reader: &mut BufReader<Stream>,
        peer: SocketAddr,
        conn_id: u64,
    ) -> Result<(Connection, Arc<JvmEntry>), Failure> {
        read_preamble(reader).map_err(|e| wire_failure("preamble", e))?;
        let hello = match read_message(reader, self.cfg.max_frame) {
            Ok(Message::Hello(h)) => h,
            Ok(other) => {
                return Err(Failure::refuse(
                    RefuseCode::BadHello,
                    format!("expected hello, got {}", other.name()),
                ))
            }
            Err(e) => return Err(wire_failure("hello", e)),
        };
        let header = self.check_hello(&hello)?;
        self.claim(&hello.stream, conn_id, reader.get_ref().tcp())?;
        let entry = self.jvm_entry(&hello.stream, &header).map_err(|e| {
            self.release(&hello.stream, conn_id);
            Failure::refuse(RefuseCode::StoreUnavailable, e)
        })?;
        let acked = *entry.acked.lock().expect("acked lock");
        let identity = JvmIdentity::from_header(
            &hello.stream,
            &header,
            &peer.ip().to_string(),
            &hello.labels,
        );
        let conn = Connection {
            jvm: Arc::new(identity),
            peer,
            connected_at: SystemTime::now(),
            header_bytes: hello.header.into(),
            dict: entry.dict.clone(),
            resumed_after: acked,
        };
        if let Err(e) = self.listeners.connect(&conn) {
            self.release(&conn.jvm.id, conn_id);
            return Err(Failure::refuse(RefuseCode::StoreUnavailable, e.to_string()));
        }
        let accept = Message::Accept(Accept {
            acked,
            max_frame: self.cfg.max_frame,
            server: SERVER_NAME.into(),
        });
        let stream = reader.get_mut();
        if let Err(e) = write_message(stream, &accept).and_then(|_| Ok(stream.flush()?)) {
            self.listeners
                .disconnect(&conn, &Disconnect::Lost(e.to_string()));
            self.release(&conn.jvm.id, conn_id);
            return Err(Failure::lost(format!("writing accept: {e}")));
        }
        Ok((conn, entry))
    }

    fn check_hello(&self, hello: &Hello) -> Result<jscope_format::Header, Failure> {
        let want = self.cfg.token.as_deref().unwrap_or("");
        if !want.is_empty() && !same_token(want, &hello.token) {
            return Err(Failure::refuse(
                RefuseCode::BadToken,
                "wrong or missing token",
            ));
        }
        if !valid_stream_id(&hello.stream) {
            return Err(Failure::refuse(
                RefuseCode::BadHello,
                format!("invalid stream id {:?}", hello.stream),
            ));
        }
        if hello.next_seq == 0 {
            return Err(Failure::refuse(
                RefuseCode::BadHello,
                "next_seq must be at least 1",
            ));
        }
        match Recording::from_bytes(&hello.header) {
            Ok(rec) if rec.chunks == 1 && rec.damage.is_none() => Ok(rec.header),
            Ok(_) => Err(Failure::refuse(
                RefuseCode::BadHello,
                "header bytes hold more than magic and header chunk",
            )),
            Err(e) => Err(Failure::refuse(
                RefuseCode::BadHello,
                format!("recording header: {e}"),
            )),
        }
    }

    /// Registers this connection for its stream, shutting down an older one (an agent
    /// that reconnects after a network failure must not wait for the old one to time out).
    fn claim(&self, stream_id: &str, conn_id: u64, tcp: &TcpStream) -> Result<(), Failure> {
        for _ in 0..100 {
            {
                let mut active = self.active.lock().expect("active lock");
                match active.get(stream_id) {
                    Some((_, old)) => {
                        let _ = old.shutdown(Shutdown::Both);
                    }
                    None => {
                        let clone = tcp.try_clone().map_err(|e| Failure::lost(e.to_string()))?;
                        active.insert(stream_id.to_string(), (conn_id, clone));
                        return Ok(());
                    }
                }
            }
            thread::sleep(Duration::from_millis(50));
        }
        Err(Failure::refuse(
            RefuseCode::Busy,
            format!("stream {stream_id} is busy"),
        ))
    }

    fn release(&self, stream_id: &str, conn_id: u64) {
        let mut active = self.active.lock().expect("active lock");
        if active.get(stream_id).is_some_and(|(id, _)| *id == conn_id) {
            active.remove(stream_id);
        }
    }

    /// The JVM's lasting state: from memory while the store holds no more of the
    /// stream than that, else from the store, else new. The memory is a cache: with
    /// a store shared by several collectors, an agent may have streamed to another
    /// collector since it left this one, and then resuming from the cached point
    /// would store again what the other one stored.
    fn jvm_entry(
        &self,
        stream_id: &str,
        header: &jscope_format::Header,
    ) -> Result<Arc<JvmEntry>, String> {
        let cached = self.jvms.lock().expect("jvms lock").get(stream_id).cloned();
        if let Some(e) = cached {
            let mine = *e.acked.lock().expect("acked lock");
            let stored = self.store.acked(stream_id).map_err(|e| e.to_string())?;
            if stored.is_none_or(|s| s <= mine) {
                return Ok(e);
            }
            self.jvms.lock().expect("jvms lock").remove(stream_id);
        }
        let (acked, dict) = match self.store.resume(stream_id).map_err(|e| e.to_string())? {
            Some(s) => (s.acked, s.dict),
            None => (0, new_dictionary(header)),
        };
        let entry = Arc::new(JvmEntry {
            dict: Arc::new(RwLock::new(dict)),
            acked: Mutex::new(acked),
        });
        let mut jvms = self.jvms.lock().expect("jvms lock");
        Ok(jvms.entry(stream_id.to_string()).or_insert(entry).clone())
    }

    fn stream_chunks(&self, s: &mut Session) -> Result<(), Failure> {
        let mut idle = Duration::ZERO;
        let mut pending = false;
        loop {
            if pending && s.reader.buffer().is_empty() {
                self.commit(s)?;
                pending = false;
            }
            match read_message(&mut s.reader, self.cfg.max_frame) {
                Ok(Message::Chunk { seq, chunk }) => {
                    idle = Duration::ZERO;
                    self.chunk(s, seq, &chunk)?;
                    pending = true;
                }
                Ok(Message::Bye) => return self.commit(s),
                Ok(other) => {
                    return Err(Failure::lost(format!("unexpected {} frame", other.name())))
                }
                // The collector closing a connection as it stops is not the agent's doing.
                Err(_) if self.stopping.load(Ordering::SeqCst) => {
                    return Err(Failure::lost("the collector is stopping"))
                }
                Err(WireError::Idle) => {
                    idle += self.cfg.stall_timeout;
                    if idle >= self.cfg.idle_timeout {
                        return Err(Failure::lost(format!("idle for {}s", idle.as_secs())));
                    }
                }
                Err(WireError::Closed) => {
                    return Err(Failure::lost("connection closed without bye"))
                }
                Err(e) => return Err(Failure::lost(e.to_string())),
            }
        }
    }

    fn chunk(&self, s: &mut Session, seq: u64, bytes: &[u8]) -> Result<(), Failure> {
        if seq <= s.last_seen {
            self.stats.duplicate_chunks.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let records =
            decode_chunk(bytes).map_err(|why| Failure::lost(format!("chunk {seq}: {why}")))?;
        apply_dictionary(&mut s.conn.dict.write().expect("dict lock"), &records);
        let trace = Trace {
            seq,
            chunk: bytes,
            records: &records,
            lost_before: seq - s.last_seen - 1,
            span_ns: timed_span(&s.conn.jvm, &records),
            received: SystemTime::now(),
        };
        self.listeners.data(&s.conn, &trace).map_err(|e| {
            self.stats.store_errors.fetch_add(1, Ordering::Relaxed);
            Failure::store(e.to_string())
        })?;
        s.last_seen = seq;
        s.queued += bytes.len() as u64;
        self.stats
            .queued_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.count(bytes.len(), &records);
        Ok(())
    }

    fn count(&self, bytes: usize, records: &[Record]) {
        let samples: u64 = records
            .iter()
            .map(|r| match r {
                Record::Sample(_) => 1,
                Record::Snapshot(s) => s.threads.len() as u64,
                _ => 0,
            })
            .sum();
        self.stats.chunks.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.stats.samples.fetch_add(samples, Ordering::Relaxed);
    }

    /// Makes everything seen durable, then acknowledges it.
    fn commit(&self, s: &mut Session) -> Result<(), Failure> {
        let started = std::time::Instant::now();
        self.listeners.before_ack(&s.conn).map_err(|e| {
            self.stats.store_errors.fetch_add(1, Ordering::Relaxed);
            Failure::store(e.to_string())
        })?;
        self.stats.store_write.observe(started.elapsed());
        self.stats
            .queued_bytes
            .fetch_sub(std::mem::take(&mut s.queued), Ordering::Relaxed);
        self.store_down.store(false, Ordering::Relaxed);
        *s.entry.acked.lock().expect("acked lock") = s.last_seen;
        let w = s.reader.get_mut();
        write_message(w, &Message::Ack { seq: s.last_seen })
            .and_then(|_| w.flush().map_err(WireError::from))
            .map_err(|e| Failure::lost(format!("writing ack: {e}")))
    }

    /// Closes every agent connection (at shutdown).
    pub(crate) fn disconnect_all(&self) {
        for (_, tcp) in self.active.lock().expect("active lock").values() {
            let _ = tcp.shutdown(Shutdown::Both);
        }
    }
}

struct Session {
    reader: BufReader<Stream>,
    conn: Connection,
    entry: Arc<JvmEntry>,
    /// Highest sequence number passed to the plugins.
    last_seen: u64,
    /// Bytes passed to the plugins since the last acknowledgement.
    queued: u64,
}

/// Checks that `bytes` are exactly one intact data chunk and decodes its records.
fn decode_chunk(bytes: &[u8]) -> Result<Vec<Record>, String> {
    let raw = match split_chunk(bytes, 0) {
        Ok(Split::Chunk(c)) => c,
        Ok(Split::NeedMore(n)) => {
            return Err(format!("incomplete chunk ({} of {n} bytes)", bytes.len()))
        }
        Err(e) => return Err(e.to_string()),
    };
    if raw.stored_len != bytes.len() {
        return Err("trailing bytes after the chunk".into());
    }
    if raw.kind != ChunkKind::Data as u8 {
        return Err(format!("chunk kind {} is not data", raw.kind));
    }
    decode_payload(&raw.payload).map_err(|e| e.to_string())
}
