//! The collector transport (`collector=HOST:PORT|HOST:PORT|...`): a sender thread that
//! streams the writer's chunks to a collector with `jscope_wire`, and the writer's end
//! of it.
//!
//! The writer never waits for the network: it offers each finished chunk through a
//! bounded queue and moves on (a full queue drops the chunk and counts it). The sender
//! keeps chunks in a bounded [`Outbox`] until the collector acknowledges them,
//! connects with backoff while the collector is away, and resends what was not
//! acknowledged after a reconnection.
//!
//! With several collectors the sender streams to one at a time: it tries them in turn
//! from the first, and when its collector dies (the connection breaks or closes, or
//! nothing sent is acknowledged within ACK_TIMEOUT) it moves to the next one at once,
//! waiting (with a doubling backoff) only after a whole round failed. Each collector
//! says in its Accept how much of the stream its store holds; the sender resends only
//! what is above that. A collector whose store lacks chunks the sender no longer holds
//! (another store, or none yet) gets a resync first: the sender asks the writer for
//! the dictionary and puts it in front of the held chunks, numbered afresh from the
//! oldest held one ([`Outbox::rebase`]), so that store can resolve what follows.
//!
//! A chunk may declare dictionary entries (strings, methods, stacks, threads) that
//! later chunks use, so losing one would orphan what follows. After any drop the
//! stream is out of sync: the sender drops further data chunks until the writer has
//! sent a *resync*, chunks declaring the whole dictionary again, and resumes from
//! there. The file never holds resync chunks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jscope_wire::{ClientConfig, Outbox, Pushed, WireClient, WireError, DEFAULT_MAX_FRAME};

use crate::options::{CollectorOptions, TlsOptions};
use crate::stopper::Stopper;
use crate::threads::{gettid, ThreadTable};

/// Chunks waiting between writer and sender; one a second is the normal rate, so
/// this covers the longest a network call can hold the sender.
pub const QUEUE_CHUNKS: usize = 32;
/// How often the sender looks for acknowledgements when no chunk arrives.
const TICK: Duration = Duration::from_millis(50);
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A collector that acknowledges nothing sent for this long is taken for dead (a
/// store's fsync or insert batch takes milliseconds to a second or two).
const ACK_TIMEOUT: Duration = Duration::from_secs(15);
/// Bounds every write and the wait for the collector's answer to the hello.
const IO_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the sender tries to deliver and get acknowledged what is left at the end.
pub const FINAL_WAIT: Duration = Duration::from_secs(2);
/// How long stopping waits for a sender that is connected (it bounds itself by
/// FINAL_WAIT; this is the backstop for one stuck in a network call), and for one
/// that is not: that one can only be trying to connect, and a collector that is up
/// answers within milliseconds.
const STOP_WAIT_CONNECTED: Duration = Duration::from_millis(2500);
const STOP_WAIT_UNCONNECTED: Duration = Duration::from_millis(500);

/// What the writer hands to the sender.
pub enum Outgoing {
    /// One chunk, byte for byte as written to the file.
    Data(Vec<u8>),
    /// Chunks declaring every dictionary entry written so far, in dependency order.
    Resync(Vec<Vec<u8>>),
}

/// The transport's counters, written into the recording with the agent's others.
#[derive(Default)]
pub struct SenderStats {
    chunks_sent: AtomicU64,
    bytes_sent: AtomicU64,
    chunks_acked: AtomicU64,
    chunks_dropped: AtomicU64,
    bytes_dropped: AtomicU64,
    reconnects: AtomicU64,
    resyncs: AtomicU64,
    /// Bytes of chunks held until the collector acknowledges them (a gauge).
    buffered: AtomicU64,
    /// True while a connection to the collector is open.
    connected: AtomicBool,
}

impl SenderStats {
    pub fn values(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("collector.chunks_sent", get(&self.chunks_sent)),
            ("collector.bytes_sent", get(&self.bytes_sent)),
            ("collector.chunks_acked", get(&self.chunks_acked)),
            ("collector.chunks_dropped", get(&self.chunks_dropped)),
            ("collector.bytes_dropped", get(&self.bytes_dropped)),
            ("collector.reconnects", get(&self.reconnects)),
            ("collector.resyncs", get(&self.resyncs)),
            ("collector.buffered_bytes", get(&self.buffered)),
        ]
    }

    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    fn dropped(&self, bytes: usize) {
        self.chunks_dropped.fetch_add(1, Ordering::Relaxed);
        self.bytes_dropped
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn sent(&self, bytes: usize) {
        self.chunks_sent.fetch_add(1, Ordering::Relaxed);
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// The writer's end of the transport.
pub struct CollectorLink {
    tx: SyncSender<Outgoing>,
    /// Set (by either side) when the collector's copy needs the dictionary again.
    resync: Arc<AtomicBool>,
    pub stats: Arc<SenderStats>,
    /// False once the sender is gone; nothing is offered after that.
    alive: bool,
}

impl CollectorLink {
    /// Hands a finished chunk to the sender without blocking. `dictionary` builds
    /// the resync chunks; it runs only when a resync is due.
    pub fn offer(&mut self, chunk: Vec<u8>, dictionary: impl FnOnce() -> Vec<Vec<u8>>) {
        if !self.alive {
            return;
        }
        if self.resync.swap(false, Ordering::AcqRel) && !self.send(Outgoing::Resync(dictionary())) {
            // Without the dictionary this chunk could refer to entries the collector
            // lacks, so it waits for the next resync too.
            self.resync.store(true, Ordering::Release);
            self.stats.dropped(chunk.len());
            return;
        }
        let len = chunk.len();
        if !self.send(Outgoing::Data(chunk)) {
            self.resync.store(true, Ordering::Release);
            self.stats.dropped(len);
        }
    }

    fn send(&mut self, message: Outgoing) -> bool {
        match self.tx.try_send(message) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => false,
            Err(TrySendError::Disconnected(_)) => {
                self.alive = false;
                false
            }
        }
    }
}

/// Reconnection delays: doubling from BACKOFF_MIN to BACKOFF_MAX, reset on success.
#[derive(Debug)]
struct Backoff {
    delay: Duration,
    next: Instant,
}

impl Backoff {
    fn new(now: Instant) -> Backoff {
        Backoff {
            delay: BACKOFF_MIN,
            next: now,
        }
    }

    fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    fn failed(&mut self, now: Instant) {
        self.next = now + self.delay;
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
    }

    fn reset(&mut self, now: Instant) {
        self.delay = BACKOFF_MIN;
        self.next = now;
    }
}

/// Whether the collector's copy of the stream can take the next data chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamSync {
    InSync,
    /// A chunk was dropped; data waits for a resync, which has been asked for
    /// when `requested`.
    Lost {
        requested: bool,
    },
}

/// The sender thread's state.
pub struct Sender {
    /// `cfg.addr` is the collector being tried or streamed to: `addrs[current]`.
    cfg: ClientConfig,
    addrs: Vec<String>,
    current: usize,
    /// Collectors that failed since the last successful connection; a whole round
    /// of them failing means waiting for the backoff.
    failed_in_round: usize,
    /// The collector streamed to last, to say when another takes over.
    last_connected: Option<usize>,
    /// The connected collector lacks the start of the stream: nothing goes to it
    /// until the writer's resync arrives and is put in front of the held chunks.
    awaiting_dictionary: bool,
    /// Since when a chunk sent on this connection has been waiting for its
    /// acknowledgement (reset whenever one arrives).
    waiting_since: Option<Instant>,
    /// ACK_TIMEOUT (shorter in tests).
    ack_timeout: Duration,
    /// Magic and header chunk, sent in every hello.
    header: Vec<u8>,
    rx: Receiver<Outgoing>,
    outbox: Outbox,
    buffer: usize,
    /// The largest chunk frame the collector takes (from its last Accept).
    max_frame: u32,
    sync: StreamSync,
    resync: Arc<AtomicBool>,
    stats: Arc<SenderStats>,
    client: Option<WireClient>,
    backoff: Backoff,
    connected_once: bool,
    /// Per collector: it refused the stream for good (bad token, bad hello).
    refused: Vec<bool>,
    /// Set once every collector refused the stream for good.
    gave_up: bool,
    quiet: bool,
    told_unreachable: bool,
    table: Arc<ThreadTable>,
    /// The TLS files could not be used: nothing is streamed.
    tls_error: Option<String>,
}

/// Creates the link and the (not yet started) sender for one recording.
pub fn link(
    options: &CollectorOptions,
    header: Vec<u8>,
    stream: String,
    quiet: bool,
    table: Arc<ThreadTable>,
) -> (CollectorLink, Sender) {
    let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE_CHUNKS);
    let resync = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(SenderStats::default());
    let first = options.addrs.first().cloned().unwrap_or_default();
    let mut cfg = ClientConfig::new(first, stream);
    cfg.token = options.token.clone();
    cfg.labels = options.labels.clone();
    cfg.connect_timeout = CONNECT_TIMEOUT;
    cfg.io_timeout = IO_TIMEOUT;
    // The files are read here, on the thread starting the recording, never in a
    // signal handler; a bad one stops streaming with one line (the file, if any,
    // is still written).
    let tls_error = match options.tls.as_ref().map(|t| tls_files(t).config()) {
        Some(Ok(config)) => {
            cfg.tls = Some(config);
            None
        }
        Some(Err(e)) => Some(e.to_string()),
        None => None,
    };
    let writer_end = CollectorLink {
        tx,
        resync: resync.clone(),
        stats: stats.clone(),
        alive: true,
    };
    let sender = Sender {
        cfg,
        addrs: options.addrs.clone(),
        refused: vec![false; options.addrs.len()],
        current: 0,
        failed_in_round: 0,
        last_connected: None,
        awaiting_dictionary: false,
        waiting_since: None,
        ack_timeout: ACK_TIMEOUT,
        header,
        rx,
        outbox: Outbox::new(options.buffer),
        buffer: options.buffer,
        max_frame: DEFAULT_MAX_FRAME,
        sync: StreamSync::InSync,
        resync,
        stats,
        client: None,
        backoff: Backoff::new(Instant::now()),
        connected_once: false,
        gave_up: false,
        quiet,
        told_unreachable: false,
        table,
        tls_error,
    };
    (writer_end, sender)
}

fn tls_files(t: &TlsOptions) -> jscope_tls::ClientFiles {
    jscope_tls::ClientFiles {
        ca: t.ca.as_ref().map(Into::into),
        cert: t.cert.as_ref().map(Into::into),
        key: t.key.as_ref().map(Into::into),
        insecure: t.insecure,
    }
}

impl Sender {
    /// Runs the sender on its own thread (not attached to the VM: it never calls
    /// into Java). `done` is set when it has finished.
    /// Starts the sender thread; `marked` is stopped once the thread is known as
    /// the agent's, so no engine started after it samples it.
    pub fn spawn(
        self,
        done: Arc<Stopper>,
        marked: Arc<Stopper>,
    ) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("jscope-sender".into())
            .spawn(move || {
                self.table.mark_agent(gettid());
                marked.stop();
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run()));
                done.stop();
            })
    }

    /// Until the writer hangs up: take chunks, talk to the collector. Then deliver
    /// what is left within FINAL_WAIT.
    fn run(mut self) {
        if let Some(e) = self.tls_error.take() {
            crate::report(format!("collector TLS: {e}; streaming stopped"));
            self.give_up();
        }
        loop {
            match self.rx.recv_timeout(TICK) {
                Ok(message) => self.take(message),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            while let Ok(message) = self.rx.try_recv() {
                self.take(message);
            }
            self.ask_for_resync_when_room();
            self.pump();
            self.stats
                .buffered
                .store(self.outbox.bytes() as u64, Ordering::Relaxed);
        }
        self.finish(Instant::now() + FINAL_WAIT);
    }

    fn take(&mut self, message: Outgoing) {
        match (message, self.sync) {
            (Outgoing::Data(chunk), StreamSync::InSync) => {
                if !self.push(chunk) {
                    self.sync = StreamSync::Lost { requested: false };
                }
            }
            (Outgoing::Data(chunk), StreamSync::Lost { .. }) => self.stats.dropped(chunk.len()),
            (Outgoing::Resync(chunks), _) if self.awaiting_dictionary => self.take_rebase(chunks),
            (Outgoing::Resync(chunks), _) => self.take_resync(chunks),
        }
    }

    /// A resync counts only whole: once one of its chunks is dropped, the rest
    /// would be of no use and are dropped too.
    fn take_resync(&mut self, chunks: Vec<Vec<u8>>) {
        let mut whole = true;
        for chunk in chunks {
            if whole {
                whole = self.push(chunk);
            } else {
                self.stats.dropped(chunk.len());
            }
        }
        self.sync = if whole {
            self.stats.resyncs.fetch_add(1, Ordering::Relaxed);
            StreamSync::InSync
        } else {
            StreamSync::Lost { requested: false }
        };
    }

    /// The resync a collector lacking the stream's start waits for: it goes in front
    /// of every held chunk (all written before it, so it declares what they use).
    fn take_rebase(&mut self, chunks: Vec<Vec<u8>>) {
        let too_large = chunks.iter().any(|c| self.too_large(c));
        if self.gave_up || too_large {
            chunks.iter().for_each(|c| self.stats.dropped(c.len()));
            self.sync = StreamSync::Lost { requested: false };
            return;
        }
        let (chunks, bytes, kept) = self.outbox.rebase(chunks);
        self.stats
            .chunks_dropped
            .fetch_add(chunks, Ordering::Relaxed);
        self.stats.bytes_dropped.fetch_add(bytes, Ordering::Relaxed);
        if kept {
            self.stats.resyncs.fetch_add(1, Ordering::Relaxed);
            self.awaiting_dictionary = false;
            self.sync = StreamSync::InSync;
        } else {
            self.sync = StreamSync::Lost { requested: false };
        }
    }

    /// Whether `chunk` framed (8 bytes more) exceeds what the collector takes.
    fn too_large(&self, chunk: &[u8]) -> bool {
        chunk.len() as u64 + 8 > u64::from(self.max_frame)
    }

    /// Queues a chunk for the collector; false when it was dropped (and counted).
    fn push(&mut self, chunk: Vec<u8>) -> bool {
        let len = chunk.len();
        if self.gave_up || self.too_large(&chunk) {
            self.stats.dropped(len);
            return false;
        }
        match self.outbox.push(chunk) {
            Pushed::Queued(_) => true,
            Pushed::Dropped => {
                self.stats.dropped(len);
                false
            }
        }
    }

    /// A resync is asked for only once half the buffer is free, so that a collector
    /// that stays away does not make the writer rebuild the dictionary every second.
    fn ask_for_resync_when_room(&mut self) {
        if self.sync == (StreamSync::Lost { requested: false })
            && !self.gave_up
            && self.outbox.bytes() <= self.buffer / 2
        {
            self.resync.store(true, Ordering::Release);
            self.sync = StreamSync::Lost { requested: true };
        }
    }

    /// Connects when due, sends what is unsent, collects acknowledgements.
    fn pump(&mut self) {
        if self.client.is_none() && !self.connect(Instant::now()) {
            return;
        }
        if let Err(e) = self.exchange() {
            self.lost_connection(e);
        }
    }

    fn connect(&mut self, now: Instant) -> bool {
        if self.gave_up || !self.backoff.due(now) {
            return false;
        }
        if self.refused[self.current] {
            self.pass_turn();
            return false;
        }
        self.cfg.addr = self.addrs[self.current].clone();
        match WireClient::connect(&self.cfg, &self.header, self.outbox.next_seq()) {
            Ok(client) => {
                self.connected(client);
                true
            }
            Err(WireError::Refused { code, message }) if !code.is_transient() => {
                // Retrying this collector cannot help; the others may take the stream.
                self.refused[self.current] = true;
                let all = self.refused.iter().all(|r| *r);
                crate::report(format!(
                    "collector {} refused the stream ({code}: {message}); {}",
                    self.cfg.addr,
                    if all {
                        "streaming stopped"
                    } else {
                        "trying the others"
                    }
                ));
                if all {
                    self.give_up();
                } else {
                    self.pass_turn();
                }
                false
            }
            Err(e) => {
                self.lost_connection(e);
                false
            }
        }
    }

    fn connected(&mut self, client: WireClient) {
        let accept = client.accept();
        // The collector's store lacks chunks this side no longer holds: the ones it
        // gets next would name dictionary entries it never saw.
        let lacks_start = accept.acked + 1 < self.outbox.next_seq();
        self.outbox.resume(accept.acked);
        self.max_frame = accept.max_frame;
        self.note_acked(accept.acked);
        self.awaiting_dictionary = lacks_start;
        if lacks_start {
            self.resync.store(true, Ordering::Release);
        }
        if self.connected_once {
            self.stats.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(before) = self.last_connected.filter(|b| *b != self.current) {
            if !self.quiet {
                crate::report(format!(
                    "collector {} takes over the stream from {} (it holds up to chunk {})",
                    self.addrs[self.current], self.addrs[before], accept.acked
                ));
            }
        }
        self.last_connected = Some(self.current);
        self.failed_in_round = 0;
        self.waiting_since = None;
        self.connected_once = true;
        self.backoff.reset(Instant::now());
        self.client = Some(client);
        self.stats.connected.store(true, Ordering::Release);
    }

    fn give_up(&mut self) {
        self.gave_up = true;
        self.client = None;
        self.stats.connected.store(false, Ordering::Release);
        // Nothing will ever take these chunks; the memory goes back.
        self.outbox = Outbox::new(0);
    }

    /// The current collector failed (to connect, or while streaming): the next one
    /// is tried at once, and after a whole round of failures the backoff applies.
    fn lost_connection(&mut self, e: WireError) {
        self.client = None;
        self.waiting_since = None;
        self.stats.connected.store(false, Ordering::Release);
        let n = self.addrs.len().max(1);
        self.pass_turn();
        if !self.quiet && !self.told_unreachable {
            self.told_unreachable = true;
            let then = if n > 1 {
                "trying the others in turn"
            } else {
                "retrying"
            };
            crate::report(format!(
                "collector {}: {e}; keeping up to {} bytes of chunks and {then}",
                self.cfg.addr, self.buffer
            ));
        }
    }

    /// The next collector's turn; a whole round of failures waits for the backoff.
    fn pass_turn(&mut self) {
        let n = self.addrs.len().max(1);
        self.current = (self.current + 1) % n;
        self.failed_in_round += 1;
        if self.failed_in_round >= n {
            self.failed_in_round = 0;
            self.backoff.failed(Instant::now());
        }
    }

    /// Sends every chunk not yet sent on this connection, then reads acknowledgements.
    /// A collector that closed its end, or acknowledges nothing for ACK_TIMEOUT, is
    /// an error like a broken connection.
    fn exchange(&mut self) -> Result<(), WireError> {
        let Some(client) = self.client.as_mut() else {
            return Ok(());
        };
        while let Some((seq, chunk)) = self
            .outbox
            .next_unsent()
            .filter(|_| !self.awaiting_dictionary)
        {
            client.send(seq, chunk)?;
            self.stats.sent(chunk.len());
            self.outbox.mark_sent(seq);
        }
        let before = self.outbox.next_seq();
        let acked = client.poll_acks()?;
        if client.is_closed() {
            return Err(WireError::Closed);
        }
        self.note_acked(acked);
        let now = Instant::now();
        self.waiting_since = match self.waiting_since {
            _ if !self.outbox.in_flight() => None,
            Some(_) if self.outbox.next_seq() != before => Some(now),
            Some(since) => Some(since),
            None => Some(now),
        };
        if self
            .waiting_since
            .is_some_and(|since| now.duration_since(since) >= self.ack_timeout)
        {
            return Err(WireError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("nothing acknowledged for {:?}", self.ack_timeout),
            )));
        }
        Ok(())
    }

    fn note_acked(&mut self, acked: u64) {
        self.outbox.ack(acked);
        self.stats.chunks_acked.fetch_max(acked, Ordering::Relaxed);
    }

    /// The end of the recording: one more connection attempt if none is open, the
    /// rest sent, the final acknowledgement awaited and a goodbye, all before
    /// `deadline`. Whatever is still unacknowledged then is lost.
    fn finish(mut self, deadline: Instant) {
        if self.outbox.is_empty() && self.client.is_none() {
            return;
        }
        // One attempt at each collector, as long as the deadline allows.
        for _ in 0..self.addrs.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.client.is_some() || self.gave_up || left.is_zero() {
                break;
            }
            self.backoff.reset(Instant::now());
            self.cfg.connect_timeout = self.cfg.connect_timeout.min(left);
            self.cfg.io_timeout = self.cfg.io_timeout.min(left);
            self.connect(Instant::now());
        }
        if let Err(e) = self.exchange() {
            self.lost_connection(e);
        }
        let Some(mut client) = self.client.take() else {
            return;
        };
        let left = deadline.saturating_duration_since(Instant::now());
        // A collector still waiting for the dictionary was sent nothing: the writer
        // that would make the resync is gone.
        if !self.awaiting_dictionary {
            if let Ok(acked) = client.wait_for_ack(self.outbox.last_seq(), left) {
                self.note_acked(acked);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if let Ok(acked) = client.finish(left.min(Duration::from_millis(200))) {
            self.note_acked(acked);
        }
        self.stats.connected.store(false, Ordering::Release);
    }
}

/// Waits for the sender to finish at the end of a recording: up to
/// STOP_WAIT_CONNECTED while it is connected and delivering, but only
/// STOP_WAIT_UNCONNECTED while it is still trying to connect, so a collector that
/// accepts connections and never answers costs the JVM's exit half a second.
/// Returns true if the sender finished.
pub fn wait_for_sender(done: &Stopper, stats: &SenderStats) -> bool {
    let start = Instant::now();
    loop {
        let limit = if stats.is_connected() {
            STOP_WAIT_CONNECTED
        } else {
            STOP_WAIT_UNCONNECTED
        };
        let step = (start + limit).min(Instant::now() + TICK);
        if done.wait_until(step) {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_waits_long_only_for_a_connected_sender() {
        let (done, stats) = (Stopper::default(), SenderStats::default());
        let start = Instant::now();
        assert!(!wait_for_sender(&done, &stats));
        let waited = start.elapsed();
        assert!(
            (STOP_WAIT_UNCONNECTED..STOP_WAIT_UNCONNECTED + TICK * 4).contains(&waited),
            "{waited:?}"
        );
        stats.connected.store(true, Ordering::Release);
        let start = Instant::now();
        assert!(!wait_for_sender(&done, &stats));
        assert!(start.elapsed() >= STOP_WAIT_CONNECTED);
        done.stop();
        assert!(
            wait_for_sender(&done, &stats),
            "a finished sender is not waited for"
        );
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let t0 = Instant::now();
        let mut b = Backoff::new(t0);
        assert!(b.due(t0));
        let mut waits = Vec::new();
        for _ in 0..8 {
            b.failed(t0);
            waits.push(b.next - t0);
        }
        let ms: Vec<u128> = waits.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert!(!b.due(t0));
        b.reset(t0);
        assert!(b.due(t0));
        b.failed(t0);
        assert_eq!(b.next - t0, BACKOFF_MIN);
    }

    fn test_sender(buffer: usize) -> (CollectorLink, Sender) {
        let options = CollectorOptions {
            addrs: vec!["127.0.0.1:1".into()],
            token: String::new(),
            labels: Vec::new(),
            buffer,
            tls: None,
        };
        link(&options, Vec::new(), "s".into(), true, Arc::default())
    }

    /// Drains what the writer offered into the sender, as its loop does.
    fn deliver(sender: &mut Sender) {
        while let Ok(m) = sender.rx.try_recv() {
            sender.take(m);
        }
        sender.ask_for_resync_when_room();
    }

    #[test]
    fn a_drop_holds_back_data_until_a_resync_gets_through() {
        let (mut writer, mut sender) = test_sender(1000);
        let no_dictionary = || -> Vec<Vec<u8>> { panic!("no resync is due") };
        writer.offer(vec![1; 600], no_dictionary);
        writer.offer(vec![2; 600], no_dictionary);
        deliver(&mut sender);
        assert_eq!(sender.outbox.len(), 1, "the second chunk does not fit");
        assert_eq!(sender.sync, StreamSync::Lost { requested: false });
        assert!(
            !sender.resync.load(Ordering::Acquire),
            "no resync while the buffer is more than half full"
        );
        sender.outbox.ack(1);
        writer.offer(vec![3; 10], no_dictionary);
        deliver(&mut sender);
        assert_eq!(
            sender.outbox.len(),
            0,
            "data after a drop waits for the resync"
        );
        assert!(sender.resync.load(Ordering::Acquire));
        let mut built = 0;
        writer.offer(vec![4; 10], || {
            built += 1;
            vec![vec![9; 100], vec![8; 100]]
        });
        deliver(&mut sender);
        assert_eq!(built, 1);
        assert_eq!(sender.sync, StreamSync::InSync);
        let queued: Vec<u8> = (2..=4)
            .map(|seq| {
                sender.outbox.ack(seq - 1);
                sender.outbox.next_unsent().unwrap().1[0]
            })
            .collect();
        assert_eq!(queued, [9, 8, 4], "resync chunks first, then the data");
        let stats: std::collections::HashMap<_, _> = writer.stats.values().into_iter().collect();
        assert_eq!(stats["collector.chunks_dropped"], 2);
        assert_eq!(stats["collector.bytes_dropped"], 610);
        assert_eq!(stats["collector.resyncs"], 1);
    }

    #[test]
    fn a_full_queue_drops_at_the_writer_and_resyncs_before_the_next_chunk() {
        let (mut writer, mut sender) = test_sender(1 << 20);
        for i in 0..QUEUE_CHUNKS + 1 {
            writer.offer(vec![i as u8; 10], || panic!("not yet"));
        }
        assert_eq!(writer.stats.chunks_dropped.load(Ordering::Relaxed), 1);
        deliver(&mut sender);
        writer.offer(vec![77; 10], || vec![vec![66; 10]]);
        deliver(&mut sender);
        assert_eq!(sender.outbox.len(), QUEUE_CHUNKS + 2);
        assert_eq!(sender.sync, StreamSync::InSync);
    }

    #[test]
    fn a_failed_collector_passes_the_turn_and_a_failed_round_backs_off() {
        let (_writer, mut sender) = test_sender(1 << 20);
        // Nothing listens on ports 1 and 2 of the loopback: refused at once.
        sender.addrs = vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()];
        sender.refused = vec![false; 2];
        let t0 = Instant::now();
        sender.pump();
        assert_eq!(sender.current, 1, "the second collector is next");
        assert!(sender.backoff.due(Instant::now()), "and tried at once");
        sender.pump();
        assert_eq!(sender.cfg.addr, "127.0.0.1:2");
        assert_eq!(sender.current, 0);
        assert!(
            !sender.backoff.due(Instant::now()),
            "a whole round failed: the backoff applies"
        );
        assert!(sender.backoff.next - t0 >= BACKOFF_MIN);
        sender.pump();
        assert_eq!(sender.current, 0, "nothing is tried before the backoff");
    }

    #[test]
    fn a_collector_that_acknowledges_nothing_is_left_for_the_next() {
        use jscope_wire::{read_message, read_preamble, write_message, Accept, Message};
        use std::io::Read;
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = silent.accept().unwrap();
            let mut r = std::io::BufReader::new(s.try_clone().unwrap());
            read_preamble(&mut r).unwrap();
            assert!(matches!(
                read_message(&mut r, DEFAULT_MAX_FRAME),
                Ok(Message::Hello(_))
            ));
            let yes = Message::Accept(Accept {
                acked: 0,
                max_frame: DEFAULT_MAX_FRAME,
                server: "silent".into(),
            });
            write_message(&mut &s, &yes).unwrap();
            // Takes every chunk and acknowledges none, until the client goes.
            let _ = r.read_to_end(&mut Vec::new());
        });
        let (mut writer, mut sender) = test_sender(1 << 20);
        sender.addrs = vec![addr.to_string(), "127.0.0.1:1".into()];
        sender.refused = vec![false; 2];
        sender.ack_timeout = Duration::from_millis(300);
        writer.offer(vec![1; 10], || panic!("no resync"));
        deliver(&mut sender);
        sender.pump();
        assert!(sender.client.is_some(), "connected to the silent collector");
        let start = Instant::now();
        while sender.client.is_some() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(TICK);
            sender.pump();
        }
        assert!(sender.client.is_none(), "left after the ack timeout");
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert_eq!(sender.current, 1, "the next collector's turn");
        assert!(sender.backoff.due(Instant::now()), "tried at once");
        assert_eq!(sender.outbox.len(), 1, "the chunk waits for the next one");
        drop(sender);
        server.join().unwrap();
    }

    #[test]
    fn a_collector_refusing_for_good_is_skipped_and_all_refusing_stops_streaming() {
        use jscope_wire::{read_message, read_preamble, write_message, Message, RefuseCode};
        let strict = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = strict.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..2 {
                let (s, _) = strict.accept().unwrap();
                let mut r = std::io::BufReader::new(s.try_clone().unwrap());
                read_preamble(&mut r).unwrap();
                let _ = read_message(&mut r, DEFAULT_MAX_FRAME);
                let no = Message::Refuse {
                    code: RefuseCode::BadToken,
                    message: "wrong or missing token".into(),
                };
                write_message(&mut &s, &no).unwrap();
            }
        });
        let (_writer, mut sender) = test_sender(1 << 20);
        sender.addrs = vec![addr.to_string(), "127.0.0.1:1".into()];
        sender.refused = vec![false; 2];
        sender.pump();
        assert_eq!(sender.refused, [true, false]);
        assert!(!sender.gave_up, "the other collector may take the stream");
        assert_eq!(sender.current, 1);
        sender.pump(); // refused by the kernel: a round ends, the backoff applies
        assert_eq!(sender.current, 0);
        sender.backoff.reset(Instant::now());
        sender.pump();
        assert_eq!(
            sender.current, 1,
            "the refusing collector is not asked again"
        );
        // One collector alone refusing for good ends the streaming.
        let (_writer, mut alone) = test_sender(1 << 20);
        alone.addrs = vec![addr.to_string()];
        alone.pump();
        assert!(alone.gave_up);
        server.join().unwrap();
    }

    #[test]
    fn a_collector_lacking_the_start_gets_the_dictionary_before_the_held_chunks() {
        let (mut writer, mut sender) = test_sender(1 << 20);
        for i in 1..=3u8 {
            writer.offer(vec![i; 10], || panic!("no resync yet"));
        }
        deliver(&mut sender);
        sender.outbox.resume(1);
        assert_eq!(sender.outbox.next_seq(), 2);
        // What `connected` does on an Accept saying the store holds nothing.
        sender.awaiting_dictionary = true;
        sender.resync.store(true, Ordering::Release);
        writer.offer(vec![4; 10], || vec![vec![9; 10]]);
        deliver(&mut sender);
        assert!(!sender.awaiting_dictionary);
        assert_eq!(sender.sync, StreamSync::InSync);
        let sent: Vec<(u64, u8)> = std::iter::from_fn(|| {
            let (seq, first) = sender.outbox.next_unsent().map(|(s, c)| (s, c[0]))?;
            sender.outbox.mark_sent(seq);
            Some((seq, first))
        })
        .collect();
        assert_eq!(sent, [(2, 9), (3, 2), (4, 3), (5, 4)]);
        assert_eq!(sender.outbox.last_seq(), 5);
    }

    #[test]
    fn a_sender_that_is_gone_is_not_offered_anything() {
        let (mut writer, sender) = test_sender(1 << 20);
        drop(sender);
        writer.offer(vec![1], || panic!("no resync for nobody"));
        assert!(!writer.alive);
        writer.offer(vec![2], || panic!("no resync for nobody"));
    }
}
