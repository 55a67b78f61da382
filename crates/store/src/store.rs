//! Storage behind a trait, so that a distributed backend can replace the embedded one
//! without touching ingest or queries. A collector's ingest asks a store where a
//! stream resumes and appends to it; queries read through [`Store::read`].

use jscope_analysis::events::EventWeight;
use jscope_analysis::{Mode, StackCounts, ThreadMatcher};
use jscope_format::{Record, Recording, StateClass};
use serde::{Deserialize, Serialize};

use crate::identity::JvmIdentity;
use crate::StoreError;

/// One traced method's calls over the selected JVMs and window (calls that began in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TracedMethod {
    /// `pkg.Class.method`.
    pub method: String,
    pub calls: u64,
    pub total_ns: u64,
    /// Total minus the traced calls directly inside.
    pub self_ns: u64,
    pub max_ns: u64,
    /// Calls that left by throwing.
    pub threw: u64,
    /// JVMs the calls ran in.
    pub jvms: u64,
}

/// Remote calls grouped by side, protocol, target and method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoteGroup {
    /// `client` (this JVM called out) or `server` (this JVM executed the call).
    pub direction: String,
    /// `rmi` or `http`.
    pub protocol: String,
    /// RMI: the remote object's id; HTTP: the request path.
    pub target: String,
    /// RMI: the method name and descriptor; HTTP: the request method.
    pub method: String,
    pub calls: u64,
    /// Calls that ended with an exception (HTTP: status >= 500).
    pub failed: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub jvms: u64,
}

/// JVM events of one kind over the selected JVMs and window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventKindRow {
    /// The recording's name: `gc`, `monitor`, `park`, `alloc`, ...
    pub kind: String,
    pub events: u64,
    /// The kind's `duration_ns` summed (0 for kinds without one).
    pub total_ns: u64,
    pub max_ns: u64,
    pub jvms: u64,
}

/// Where a stream stands in a store.
pub struct StreamStatus {
    /// Highest durable sequence number.
    pub acked: u64,
    /// The stream's dictionaries as stored, so a collector restarted mid-stream can
    /// still resolve the ids of the chunks that follow.
    pub dict: Recording,
}

/// One stored piece of a JVM's stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    pub file: String,
    pub first_seq: u64,
    /// `first_seq - 1` while the segment holds no chunk.
    pub last_seq: u64,
    pub bytes: u64,
    /// Wall-clock span of the timed records stored, epoch ns.
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    /// The span covers every timed record (trace events, remote calls and JVM
    /// events too). Indexes written before it covered only samples and snapshots
    /// (false when absent): such segments are rescanned when the store opens.
    #[serde(default)]
    pub spans_all_records: bool,
    /// Epoch ns when the segment was started.
    pub created_ns: u64,
    /// No more chunks will be added.
    pub closed: bool,
}

/// A JVM in the store's index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredJvm {
    pub identity: JvmIdentity,
    pub segments: Vec<SegmentInfo>,
}

impl StoredJvm {
    pub fn start_ns(&self) -> Option<u64> {
        self.segments.iter().filter_map(|s| s.start_ns).min()
    }

    pub fn end_ns(&self) -> Option<u64> {
        self.segments.iter().filter_map(|s| s.end_ns).max()
    }

    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }

    pub fn last_seq(&self) -> u64 {
        self.segments.iter().map(|s| s.last_seq).max().unwrap_or(0)
    }
}

/// Counted samples: the recording to label them with, the mode counted, the counts.
pub type Counted = (Recording, Option<Mode>, StackCounts);

/// Which samples to count besides range and mode: by thread name and state class,
/// as [`jscope_analysis::Selection`] filters them. The default keeps every sample.
#[derive(Debug, Clone, Default)]
pub struct SampleFilter {
    pub thread: Option<ThreadMatcher>,
    /// Empty: any state.
    pub states: Vec<StateClass>,
}

impl SampleFilter {
    pub fn is_empty(&self) -> bool {
        self.thread.is_none() && self.states.is_empty()
    }
}

/// What retention removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retained {
    pub segments_deleted: usize,
    pub jvms_deleted: usize,
    pub bytes_freed: u64,
}

/// A place to keep streams. Calls for one stream never overlap (one connection per
/// stream at a time); calls for different streams may run concurrently.
pub trait Store: Send + Sync {
    /// Where `stream` stands, or `None` when the store has never seen it.
    fn resume(&self, stream: &str) -> Result<Option<StreamStatus>, StoreError>;

    /// `resume`'s `acked` alone. Several collectors may share a store: the ingest asks
    /// this at every handshake of a stream it has cached, and rebuilds its cache with
    /// `resume` when another collector took the stream further. Stores that can
    /// answer without rebuilding the dictionary should.
    fn acked(&self, stream: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.resume(stream)?.map(|s| s.acked))
    }

    /// Starts appending for a new connection. `dict` is what the stream's earlier
    /// chunks declared; stored pieces must stay readable on their own.
    fn open(
        &self,
        jvm: &JvmIdentity,
        header: &[u8],
        next_seq: u64,
        dict: &Recording,
    ) -> Result<(), StoreError>;

    /// Adds chunk `seq`. A sequence number above the last plus one means the agent lost
    /// the chunks in between. Not yet durable: see `sync`.
    fn append(
        &self,
        stream: &str,
        seq: u64,
        chunk: &[u8],
        span_ns: Option<(u64, u64)>,
        dict: &Recording,
    ) -> Result<(), StoreError>;

    /// `append` with the chunk's records as the ingest decoded them, for stores that
    /// keep more than the bytes (the ClickHouse store's sample rows).
    fn append_records(
        &self,
        stream: &str,
        seq: u64,
        chunk: &[u8],
        span_ns: Option<(u64, u64)>,
        dict: &Recording,
        _records: &[Record],
    ) -> Result<(), StoreError> {
        self.append(stream, seq, chunk, span_ns, dict)
    }

    /// The connection ends (before `close`): `dict` is its dictionaries, to label
    /// what the store still holds of it; `clean` when the agent said goodbye (its
    /// JVM ended: the ClickHouse store writes the traced calls still open then,
    /// else it keeps them open for the agent's next connection). Nothing by default.
    fn end_stream(&self, _stream: &str, _dict: &Recording, _clean: bool) -> Result<(), StoreError> {
        Ok(())
    }

    /// Makes every appended chunk survive a crash of the collector or the machine.
    fn sync(&self, stream: &str) -> Result<(), StoreError>;

    /// The connection ended.
    fn close(&self, stream: &str) -> Result<(), StoreError>;

    /// The index: every stored JVM with its pieces and time ranges.
    fn jvms(&self) -> Vec<StoredJvm>;

    /// The stream's data covering `[from_ns, to_ns]` (epoch ns; `None` = unbounded) as
    /// one recording. It may hold more than the range; callers select.
    fn read(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError>;

    /// The same data as `read`, as the bytes of one recording file (what
    /// `GET /api/jvms/{id}/recording` sends and `jscope report --collector` reads).
    fn raw(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError>;

    /// The samples of `stream` in `[from_ns, to_ns)` of `mode` (default: the first
    /// mode with samples) that `filter` keeps, counted per stack (summarised counts
    /// carry thread 0), with a recording that holds the dictionaries to label them: the same
    /// counts as `read` and selecting. `None` when the store has no faster way than
    /// that (the default); `FileStore` uses the summaries of closed segments.
    fn stack_counts(
        &self,
        _stream: &str,
        _from_ns: Option<u64>,
        _to_ns: Option<u64>,
        _mode: Option<Mode>,
        _filter: &SampleFilter,
    ) -> Result<Option<Counted>, StoreError> {
        Ok(None)
    }

    /// The samples of every JVM of `jvms` (stream ids, e.g. a service's or a
    /// label's JVMs) counted together as [`Store::stack_counts`] counts one JVM's, in
    /// one pass where the data lives: `mode` `None` takes the first of cpu, wall,
    /// snapshot with samples in the whole set. The recording holds the merged
    /// dictionaries (frames by name) and the header of the first JVM. `None` when the
    /// store cannot (the default; callers count JVM by JVM and merge).
    fn stack_counts_across(
        &self,
        _jvms: &[String],
        _from_ns: Option<u64>,
        _to_ns: Option<u64>,
        _mode: Option<Mode>,
        _filter: &SampleFilter,
    ) -> Result<Option<Counted>, StoreError> {
        Ok(None)
    }

    /// The events of `jvms` in `[from_ns, to_ns)` weighted by `what` per stack
    /// (threads by name when `thread` is set), as `jscope_analysis::events::weighted_stacks`
    /// weighs one JVM's, counted in one pass where the data lives, with a
    /// recording whose dictionaries label the stacks. `None` when the store cannot
    /// (the default; callers read JVM by JVM).
    fn event_stacks_across(
        &self,
        _jvms: &[String],
        _from_ns: Option<u64>,
        _to_ns: Option<u64>,
        _what: EventWeight,
        _thread: Option<&ThreadMatcher>,
    ) -> Result<Option<(Recording, StackCounts)>, StoreError> {
        Ok(None)
    }

    /// The events of `jvms` in `[from_ns, to_ns)` per kind, as
    /// `calls::event_kinds_from_chunks` counts them. `None` when the store
    /// cannot (the default).
    fn event_kinds_across(
        &self,
        _jvms: &[String],
        _from_ns: Option<u64>,
        _to_ns: Option<u64>,
    ) -> Result<Option<Vec<EventKindRow>>, StoreError> {
        Ok(None)
    }

    /// The traced calls of `jvms` that began in `[from_ns, to_ns)`, per method, as
    /// `calls::traced_methods_from_chunks` counts them. `None` when the
    /// store cannot (the default).
    fn traced_methods_across(
        &self,
        _jvms: &[String],
        _from_ns: Option<u64>,
        _to_ns: Option<u64>,
    ) -> Result<Option<Vec<TracedMethod>>, StoreError> {
        Ok(None)
    }

    /// The remote calls of `jvms` that began in `[from_ns, to_ns)`, grouped as
    /// `calls::remote_calls_from_chunks` groups them. `None` when the store
    /// cannot (the default).
    fn remote_calls_across(
        &self,
        _jvms: &[String],
        _from_ns: Option<u64>,
        _to_ns: Option<u64>,
    ) -> Result<Option<Vec<RemoteGroup>>, StoreError> {
        Ok(None)
    }

    /// Deletes data that ended before `cutoff_ns` (epoch ns).
    fn retain(&self, cutoff_ns: u64) -> Result<Retained, StoreError>;
}
