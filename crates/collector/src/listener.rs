//! Plugins (xdProf's `ServerListener`): one instance sees every JVM's connect, data
//! and disconnect. The store, the live state and the hot-methods analysis are all
//! plugins; more can be registered with `ServerConfig`-independent `Listeners::add`.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use jscope_format::{Record, Recording};
use jscope_store::{JvmIdentity, Store};

/// One agent connection, as every plugin sees it.
pub struct Connection {
    pub jvm: Arc<JvmIdentity>,
    pub peer: SocketAddr,
    pub connected_at: SystemTime,
    /// Magic and header chunk, as the agent sent them.
    pub header_bytes: Arc<[u8]>,
    /// The JVM's dictionaries (strings, classes, methods, threads, stacks) and last
    /// counters, kept current by the ingest before plugins see a chunk; the live-state
    /// plugin also keeps the latest snapshot in `snapshots`. Shared across this JVM's
    /// connections.
    pub dict: Arc<RwLock<Recording>>,
    /// Highest sequence number that was durable when this connection started.
    pub resumed_after: u64,
}

/// One chunk received from an agent.
pub struct Trace<'a> {
    pub seq: u64,
    /// The framed chunk exactly as the agent sent it.
    pub chunk: &'a [u8],
    /// Its records, decoded once for all plugins (timestamps absolute).
    pub records: &'a [Record],
    /// Chunks the agent never delivered between the previous one and this.
    pub lost_before: u64,
    /// Wall-clock span of the chunk's timed records (samples, snapshots, trace
    /// events, remote calls, JVM events), epoch ns.
    pub span_ns: Option<(u64, u64)>,
    pub received: SystemTime,
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disconnect {
    /// The agent said goodbye.
    Clean,
    /// The connection broke, timed out or misbehaved; the text says how.
    Lost(String),
}

/// A plugin failed; the ingest drops the connection without acknowledging.
#[derive(Debug, thiserror::Error)]
#[error("{plugin}: {message}")]
pub struct ListenerError {
    pub plugin: &'static str,
    pub message: String,
}

/// An analysis tool attached to the collector. Calls for one connection come from
/// that connection's thread, in order; calls for different JVMs come concurrently.
pub trait ServerListener: Send + Sync {
    fn name(&self) -> &'static str;

    fn on_connect(&self, _c: &Connection) -> Result<(), ListenerError> {
        Ok(())
    }

    fn on_data(&self, c: &Connection, t: &Trace) -> Result<(), ListenerError>;

    /// Called before the ingest acknowledges the chunks passed to `on_data` so far: a
    /// plugin that stores data makes it durable here.
    fn before_ack(&self, _c: &Connection) -> Result<(), ListenerError> {
        Ok(())
    }

    fn on_disconnect(&self, _c: &Connection, _why: &Disconnect) {}
}

/// The registered plugins, called in registration order.
#[derive(Clone, Default)]
pub struct Listeners {
    all: Vec<Arc<dyn ServerListener>>,
}

impl Listeners {
    pub fn add(&mut self, l: Arc<dyn ServerListener>) {
        self.all.push(l);
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.all.iter().map(|l| l.name()).collect()
    }

    pub(crate) fn connect(&self, c: &Connection) -> Result<(), ListenerError> {
        self.all
            .iter()
            .try_for_each(|l| guarded(&**l, || l.on_connect(c)))
    }

    pub(crate) fn data(&self, c: &Connection, t: &Trace) -> Result<(), ListenerError> {
        self.all
            .iter()
            .try_for_each(|l| guarded(&**l, || l.on_data(c, t)))
    }

    pub(crate) fn before_ack(&self, c: &Connection) -> Result<(), ListenerError> {
        self.all
            .iter()
            .try_for_each(|l| guarded(&**l, || l.before_ack(c)))
    }

    pub(crate) fn disconnect(&self, c: &Connection, why: &Disconnect) {
        self.all.iter().for_each(|l| {
            let _ = guarded(&**l, || {
                l.on_disconnect(c, why);
                Ok(())
            });
        })
    }
}

/// A plugin's call, a panic in it (a bug) turned into its error: the connection is
/// dropped without an acknowledgement as for any plugin error, and its thread, its
/// place among the connections and the other agents carry on.
fn guarded(
    l: &dyn ServerListener,
    call: impl FnOnce() -> Result<(), ListenerError>,
) -> Result<(), ListenerError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).unwrap_or_else(|_| {
        Err(ListenerError {
            plugin: l.name(),
            message: "the plugin panicked".into(),
        })
    })
}

/// Registers a store as a plugin: it sees the chunks like every other analysis, and
/// `before_ack` is where acknowledged data becomes durable.
pub struct StoreListener {
    store: Arc<dyn Store>,
}

impl StoreListener {
    pub fn new(store: Arc<dyn Store>) -> StoreListener {
        StoreListener { store }
    }
}

fn failed(e: jscope_store::StoreError) -> ListenerError {
    ListenerError {
        plugin: "store",
        message: e.to_string(),
    }
}

impl ServerListener for StoreListener {
    fn name(&self) -> &'static str {
        "store"
    }

    fn on_connect(&self, c: &Connection) -> Result<(), ListenerError> {
        let dict = c.dict.read().expect("dict lock");
        self.store
            .open(&c.jvm, &c.header_bytes, c.resumed_after + 1, &dict)
            .map_err(failed)
    }

    fn on_data(&self, c: &Connection, t: &Trace) -> Result<(), ListenerError> {
        let dict = c.dict.read().expect("dict lock");
        self.store
            .append_records(&c.jvm.id, t.seq, t.chunk, t.span_ns, &dict, t.records)
            .map_err(failed)
    }

    fn before_ack(&self, c: &Connection) -> Result<(), ListenerError> {
        self.store.sync(&c.jvm.id).map_err(failed)
    }

    fn on_disconnect(&self, c: &Connection, why: &Disconnect) {
        {
            let dict = c.dict.read().expect("dict lock");
            let clean = matches!(why, Disconnect::Clean);
            let _ = self.store.end_stream(&c.jvm.id, &dict, clean);
        }
        // A failed close leaves the segment open; recovery at the next start closes it.
        let _ = self.store.close(&c.jvm.id);
    }
}
