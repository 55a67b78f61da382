//! The ClickHouse store: every collector pointed at one database shares the JVMs,
//! and flame graphs, hot methods and call graphs are counted there in SQL.
//!
//! ```text
//! jvms     identity (JSON), header bytes, service, labels     ReplacingMergeTree(updated) by stream
//! chunks   the agents' chunks byte for byte (kind 1) and      ReplacingMergeTree by (stream, seq, kind)
//!          dictionary preludes (kind 0)                        partitioned by day
//! samples  one row per stack sample (snapshot threads too)   MergeTree by (jvm, mode, time_ns)
//! stack_minutes  samples counted per (minute, jvm, mode,      SummingMergeTree, filled by a
//!          state, thread, stack)                               materialized view over samples
//! stacks   a stack's frames, stored once by content hash      ReplacingMergeTree by hash
//! events   one row per JVM event (gc, park, monitor, alloc,   MergeTree by (jvm, kind, time_ns)
//!          ...) with its fields by name
//! trace_calls  one row per traced call, entries paired with   MergeTree by (jvm, method, start_ns)
//!          exits by `jscope_analysis::trace::Replayer`
//! remote_calls one row per RMI/HTTP call, either side, with   MergeTree by (jvm, start_ns)
//!          the link that joins a client's call to the server's
//! ```
//! Queries count the whole minutes of a window from `stack_minutes` and its ragged
//! ends from `samples`, all in SQL; event flame graphs, traced methods and remote
//! calls across JVMs are grouped in SQL too (docs/COLLECTOR.md lists the columns).
//! The raw chunks still hold everything (`read` returns them). A traced call is
//! written when its exit arrives, in whichever chunk; the calls still open when the
//! agent says goodbye are written then, flagged `unfinished` and closed at their
//! thread's last event, as a whole recording's replay closes them. A connection
//! that breaks leaves its replayer with the stream, and the agent's next
//! connection to this collector carries on with it when ClickHouse holds exactly
//! what it replayed.
//! A prelude starts each connection and each day
//! of a stream, so a day's partition reads on its own after retention dropped the
//! ones before it (`retain` drops whole day partitions: 18.16 has no TTL).
//!
//! One writer thread batches the rows of every stream and inserts them when a batch
//! is ~1 s old or large; `sync` returns once the batch holding the stream's chunks
//! committed, so a chunk is acknowledged only after ClickHouse confirmed it. Samples
//! and stacks are inserted before chunks: a chunk row is the mark that its samples are
//! in. A connection starts (`open`) from what ClickHouse holds: chunks up to the end
//! of the stream's unbroken run of stored chunks are skipped, and rows beyond it (from
//! a batch whose chunk insert failed, or stored after a batch that failed) are deleted
//! first. Once a batch holding a stream failed, its connection takes no more chunks.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jscope_analysis::events::{stack_of, AllocWeights, EventWeight};
use jscope_analysis::trace::{Call, Replayer, TraceOptions, THREW, UNFINISHED};
use jscope_analysis::AllocationStacks;
use jscope_analysis::{civil_from_days, Mode, StackCounts, ThreadMatcher};
use jscope_format::thread_state::classify;
use jscope_format::{
    FieldValue, Frame, FrameKind, Interner, JvmEvent, MethodId, Record, Recording, RemoteCall,
    RemoteSide, StackId, StateClass, StringId, ThreadId, UserEventKind,
};

use crate::calls::{
    protocol_name, side_name, sort_kinds, sort_remote, sort_traced, EventKindRow, RemoteGroup,
    TracedMethod,
};
use crate::clickhouse_http::{quote, ClickHouseUrl, Client, Cursor, Row};
use crate::identity::{apply_dictionary, new_dictionary, JvmIdentity};
use crate::log::LogSink;
use crate::segment::encode_prelude;
use crate::store::{Counted, Retained, SampleFilter, SegmentInfo, Store, StoredJvm, StreamStatus};
use crate::when::now_ns;
use crate::StoreError;

const SAMPLE_COLUMNS: &str =
    "day, time_ns, service, stream, jvm, labels.key, labels.value, seq, mode, thread, state, stack, weight";
const CHUNK_COLUMNS: &str = "day, stream, seq, kind, start_ns, end_ns, bytes, chunk";
const STACK_COLUMNS: &str = "hash, frames";
const JVM_COLUMNS: &str = "stream, service, labels.key, labels.value, identity, header, updated";
const EVENT_COLUMNS: &str = "day, time_ns, service, stream, jvm, labels.key, labels.value, seq, \
     thread, kind, duration_ns, stack, weight, size, fields.key, fields.value, request";
const TRACE_COLUMNS: &str = "day, start_ns, service, stream, jvm, labels.key, labels.value, seq, \
     end_ns, duration_ns, self_ns, thread, method, depth, threw, unfinished, untraced, cpu_ns, \
     self_cpu_ns";
const REMOTE_COLUMNS: &str = "day, start_ns, service, stream, jvm, labels.key, labels.value, \
     seq, duration_ns, thread, direction, protocol, target, method, method_hash, local, remote, \
     conn_seq, link, request_id, failed, stack";
/// The tables of rows decoded from chunks, each with a `seq` column and day partitions.
const ROW_TABLES: [&str; 4] = ["samples", "events", "trace_calls", "remote_calls"];
/// `AND minute >= lo AND minute < hi` (with the days they fall in).
fn minutes_window(lo: Option<u64>, hi: Option<u64>) -> String {
    window_sql("minute", MINUTE_NS, lo, hi)
}

/// The last day every supported ClickHouse reads as a date: 18.16 turns
/// `toDate('2106-02-07')` and later into 0000-00-00.
const LAST_SQL_DAY: u16 = 49_672; // 2105-12-31

/// `AND column >= lo AND column < hi` with the days they fall in; `unit_ns` is
/// the column's unit in ns. A bound's day past [`LAST_SQL_DAY`] is written as that
/// day, so a window ending in the far future still ends after the data.
fn window_sql(column: &str, unit_ns: u64, lo: Option<u64>, hi: Option<u64>) -> String {
    let day = |bound: u64| date_sql(day_of(bound.saturating_mul(unit_ns)).min(LAST_SQL_DAY));
    let mut w = String::new();
    if let Some(lo) = lo {
        w.push_str(&format!(" AND {column} >= {lo} AND day >= {}", day(lo)));
    }
    if let Some(hi) = hi {
        w.push_str(&format!(" AND {column} < {hi} AND day <= {}", day(hi)));
    }
    w
}

/// `jvm IN (...)` of stream ids, by their hash: comparing millions of strings
/// costs 5x the count itself.
fn jvm_in(jvms: &[String]) -> String {
    let ids: Vec<String> = jvms.iter().map(|j| fnv(j.as_bytes()).to_string()).collect();
    format!("jvm IN ({})", ids.join(", "))
}

/// Counts sample rows in `[from, to)` per stack (and mode).
fn raw_count(
    db: &str,
    w: &str,
    mode_filter: &str,
    group: &str,
    from: Option<u64>,
    to: Option<u64>,
) -> String {
    let time = window_sql("time_ns", 1, from, to);
    format!("SELECT stack, count(){group} FROM {db}.samples WHERE {w}{mode_filter}{time} GROUP BY stack{group}")
}

/// The per-minute counts' key, from a `samples` row.
const MINUTE_COLUMNS: &str =
    "day, toUInt32(intDiv(time_ns, 60000000000)) AS minute, jvm, mode, state, thread, stack";
const MINUTE_NS: u64 = 60_000_000_000;
/// A batch is inserted at once beyond this many bytes of rows.
const BATCH_BYTES: usize = 8 << 20;
const KIND_PRELUDE: u8 = 0;
const KIND_CHUNK: u8 = 1;

/// The tables, in SQL that ClickHouse 18.16 and current releases both accept.
fn schema(db: &str) -> Vec<String> {
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {db}"),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.jvms (stream String, service String, \
             labels Nested(key String, value String), identity String, header String, \
             updated UInt64) ENGINE = ReplacingMergeTree(updated) ORDER BY stream"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.chunks (day Date, stream String, seq UInt64, \
             kind UInt8, start_ns UInt64, end_ns UInt64, bytes UInt64, chunk String) \
             ENGINE = ReplacingMergeTree PARTITION BY toYYYYMMDD(day) ORDER BY (stream, seq, kind)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.samples (day Date, time_ns UInt64, service String, \
             stream String, jvm UInt64, labels Nested(key String, value String), seq UInt64, \
             mode UInt8, thread String, state UInt8, stack UInt64, weight UInt64) \
             ENGINE = MergeTree PARTITION BY toYYYYMMDD(day) ORDER BY (jvm, mode, time_ns)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.stack_minutes (day Date, minute UInt32, jvm UInt64, \
             mode UInt8, state UInt8, thread String, stack UInt64, n Int64) \
             ENGINE = SummingMergeTree(n) PARTITION BY toYYYYMMDD(day) \
             ORDER BY (jvm, mode, minute, state, thread, stack)"
        ),
        format!(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.stack_minutes_mv TO {db}.stack_minutes \
             AS SELECT {MINUTE_COLUMNS}, toInt64(count()) AS n FROM {db}.samples \
             GROUP BY day, minute, jvm, mode, state, thread, stack"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.stacks (hash UInt64, frames String) \
             ENGINE = ReplacingMergeTree ORDER BY hash"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.events (day Date, time_ns UInt64, service String, \
             stream String, jvm UInt64, labels Nested(key String, value String), seq UInt64, \
             thread String, kind String, duration_ns UInt64, stack UInt64, weight UInt64, \
             size UInt64, fields Nested(key String, value String), request UInt64) \
             ENGINE = MergeTree PARTITION BY toYYYYMMDD(day) ORDER BY (jvm, kind, time_ns)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.trace_calls (day Date, start_ns UInt64, \
             end_ns UInt64, duration_ns UInt64, self_ns UInt64, service String, stream String, \
             jvm UInt64, labels Nested(key String, value String), seq UInt64, thread String, \
             method String, depth UInt32, threw UInt8, unfinished UInt8, untraced UInt64, \
             cpu_ns Nullable(UInt64), self_cpu_ns Nullable(UInt64)) \
             ENGINE = MergeTree PARTITION BY toYYYYMMDD(day) ORDER BY (jvm, method, start_ns)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.remote_calls (day Date, start_ns UInt64, \
             duration_ns UInt64, service String, stream String, jvm UInt64, \
             labels Nested(key String, value String), seq UInt64, thread String, \
             direction String, protocol String, target String, method String, \
             method_hash UInt64, local String, remote String, conn_seq UInt64, link String, \
             request_id String, failed UInt8, stack UInt64) \
             ENGINE = MergeTree PARTITION BY toYYYYMMDD(day) ORDER BY (jvm, start_ns)"
        ),
    ]
}

/// Columns added to a table after it was first created, as (table, column, type):
/// [`schema`] has them, and a table made before gets them at connect
/// ([`ClickHouseStore::upgrade_statements`]; 18.16 has no `ADD COLUMN IF NOT
/// EXISTS`, so the store asks `system.columns` first). Rows stored before read
/// the column's default (0).
const ADDED_COLUMNS: [(&str, &str, &str); 1] = [
    // The request its thread served (0: none), of allocations, monitor blocks,
    // waits and parks.
    ("events", "request", "UInt64"),
];

/// The tables of a cluster (`?cluster=NAME`): each of [`schema`]'s tables becomes
/// `NAME_local` on every node (`ON CLUSTER`) with the replicated form of its engine,
/// its replicas coordinated in ZooKeeper under `/clickhouse/tables/{shard}/DB/NAME`
/// (the nodes' `shard` and `replica` macros), and a Distributed table of its own name
/// over them, so every statement of the store reads and writes the whole cluster.
/// Rows are sharded by JVM (`jvm`, or the stream id's hash) and stacks by their
/// hash, so one JVM's rows, and one stack, are on one shard. The per-minute view
/// reads each node's `samples_local` into its `stack_minutes_local`.
fn cluster_schema(db: &str, cluster: &str) -> Vec<String> {
    let on = format!("ON CLUSTER {cluster}");
    let mut out = vec![format!("CREATE DATABASE IF NOT EXISTS {db} {on}")];
    for sql in schema(db).into_iter().skip(1) {
        if sql.starts_with("CREATE MATERIALIZED VIEW") {
            out.push(format!(
                "CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.stack_minutes_mv {on} \
                 TO {db}.stack_minutes_local \
                 AS SELECT {MINUTE_COLUMNS}, toInt64(count()) AS n FROM {db}.samples_local \
                 GROUP BY day, minute, jvm, mode, state, thread, stack"
            ));
            continue;
        }
        let prefix = format!("CREATE TABLE IF NOT EXISTS {db}.");
        let rest = sql.strip_prefix(&prefix).expect("a CREATE TABLE");
        let (table, rest) = rest.split_once(' ').expect("columns");
        let path = format!("'/clickhouse/tables/{{shard}}/{db}/{table}', '{{replica}}'");
        let local = rest
            .replace(
                "ENGINE = ReplacingMergeTree(updated)",
                &format!("ENGINE = ReplicatedReplacingMergeTree({path}, updated)"),
            )
            .replace(
                "ENGINE = ReplacingMergeTree ",
                &format!("ENGINE = ReplicatedReplacingMergeTree({path}) "),
            )
            .replace(
                "ENGINE = SummingMergeTree(n)",
                &format!("ENGINE = ReplicatedSummingMergeTree({path}, n)"),
            )
            .replace(
                "ENGINE = MergeTree ",
                &format!("ENGINE = ReplicatedMergeTree({path}) "),
            );
        assert!(local.contains("ENGINE = Replicated"), "{table}: {local}");
        out.push(format!("{prefix}{table}_local {on} {local}"));
        let key = match table {
            "jvms" | "chunks" => "cityHash64(stream)",
            "stacks" => "hash",
            _ => "jvm",
        };
        out.push(format!(
            "{prefix}{table} {on} AS {db}.{table}_local \
             ENGINE = Distributed({cluster}, {db}, {table}_local, {key})"
        ));
    }
    out
}

/// A table's name for `ALTER` statements, which Distributed tables do not take: its
/// local tables on every node of the cluster, or the table itself.
fn alter_target(db: &str, table: &str, cluster: Option<&str>) -> String {
    match cluster {
        Some(c) => format!("{db}.{table}_local ON CLUSTER {c}"),
        None => format!("{db}.{table}"),
    }
}

/// One row of a `GROUP BY` answer: `S` string keys and `N` UInt64 aggregates.
type Grouped<const S: usize, const N: usize> = ([String; S], [u64; N]);

/// The rows of a `GROUP BY` answer in RowBinary.
fn grouped<const S: usize, const N: usize>(out: &[u8]) -> Result<Vec<Grouped<S, N>>, StoreError> {
    let mut c = Cursor::new(out);
    let mut rows = Vec::new();
    while !c.done() {
        let mut keys: [String; S] = std::array::from_fn(|_| String::new());
        for k in &mut keys {
            *k = c.string().map_err(ch)?;
        }
        let mut n = [0u64; N];
        for v in &mut n {
            *v = c.u64().map_err(ch)?;
        }
        rows.push((keys, n));
    }
    Ok(rows)
}

fn ch(e: String) -> StoreError {
    StoreError::ClickHouse(e)
}

/// `'YYYY-MM-DD'` of a day number, as a SQL `Date` literal.
fn date_sql(day: u16) -> String {
    let (y, m, d) = civil_from_days(i64::from(day));
    format!("toDate('{y:04}-{m:02}-{d:02}')")
}

/// Days since 1970-01-01 (ClickHouse's `Date` in RowBinary).
fn day_of(ns: u64) -> u16 {
    (ns / 86_400_000_000_000).min(u16::MAX as u64) as u16
}

fn mode_code(m: Mode) -> u8 {
    match m {
        Mode::Cpu => 1,
        Mode::Wall => 2,
        Mode::Snapshot => 3,
    }
}

fn mode_of(code: u8) -> Option<Mode> {
    match code {
        1 => Some(Mode::Cpu),
        2 => Some(Mode::Wall),
        3 => Some(Mode::Snapshot),
        _ => None,
    }
}

fn state_code(s: StateClass) -> u8 {
    s as u8
}

/// FNV-1a: a stack's hash from its encoded frames (and a stream id's, the samples'
/// `jvm` column), the same in every collector.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A stack's frames by name, independent of any JVM's ids.
fn encode_frames(dict: &Recording, frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut row = Row(&mut out);
    row.u32(frames.len() as u32);
    for f in frames {
        match dict.method(f.method) {
            Some(m) => {
                let class = dict.class(m.class);
                row.u8(1)
                    .str(class.map_or("", |c| dict.string(c.name)))
                    .str(class.map_or("", |c| dict.string(c.source_file)))
                    .str(dict.string(m.name))
                    .str(dict.string(m.signature))
                    .u32(m.modifiers);
            }
            None => {
                row.u8(0);
            }
        }
        row.u32(f.bci as u32).u32(f.line).u8(f.kind as u8);
    }
    out
}

/// A stack of the stacks table (frames by name, as [`encode_frames`] writes them) in
/// `to`'s dictionaries.
fn stack_of_blob(to: &mut Interner, blob: &[u8]) -> Result<StackId, String> {
    let mut c = Cursor::new(blob);
    let u32_of = |c: &mut Cursor| -> Result<u32, String> {
        let b = [c.u8()?, c.u8()?, c.u8()?, c.u8()?];
        Ok(u32::from_le_bytes(b))
    };
    let n = u32_of(&mut c)?;
    let mut frames = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let method = if c.u8()? == 1 {
            let (class, file) = (c.string()?, c.string()?);
            let (name, sig) = (c.string()?, c.string()?);
            let modifiers = u32_of(&mut c)?;
            let class = to.class(&class, &file);
            to.method(class, &name, &sig, modifiers)
        } else {
            MethodId(u32::MAX)
        };
        let bci = u32_of(&mut c)? as i32;
        let line = u32_of(&mut c)?;
        let kind = FrameKind::from_u8(c.u8()?);
        frames.push(Frame {
            method,
            bci,
            line,
            kind,
        });
    }
    Ok(to.stack(frames))
}

/// A stream's state in this collector while it streams here.
struct StreamState {
    identity: JvmIdentity,
    /// The stream id's hash: the samples' `jvm` column.
    jvm_hash: u64,
    /// Highest sequence number ClickHouse held when the connection started:
    /// chunks up to it are not inserted again.
    stored_upto: u64,
    /// The JVM's stack ids' hashes.
    hashes: HashMap<u32, u64>,
    /// The day of the last prelude written.
    prelude_day: Option<u16>,
    /// The batch that holds the stream's last appended rows.
    batch: u64,
    active: bool,
    /// Pairs the connection's trace entries with their exits across chunks.
    trace: Replayer<Vec<Call>>,
    /// The last chunk staged.
    last_seq: u64,
    /// The last chunk whose trace events `trace` has seen.
    trace_upto: u64,
}

/// The replayer's sink holds the calls it finished that no row holds yet.
fn new_replayer() -> Replayer<Vec<Call>> {
    Replayer::new(Vec::new(), &TraceOptions::default())
}

/// Rows waiting for the writer.
#[derive(Default)]
struct Pending {
    samples: Vec<u8>,
    events: Vec<u8>,
    trace_calls: Vec<u8>,
    remote_calls: Vec<u8>,
    chunks: Vec<u8>,
    stacks: Vec<u8>,
    new_stacks: Vec<u64>,
    streams: HashSet<String>,
    since: Option<Instant>,
}

impl Pending {
    /// Empties the batch, keeping its buffers' capacity.
    fn clear(&mut self) {
        self.samples.clear();
        self.events.clear();
        self.trace_calls.clear();
        self.remote_calls.clear();
        self.chunks.clear();
        self.stacks.clear();
        self.new_stacks.clear();
        self.streams.clear();
        self.since = None;
    }

    fn bytes(&self) -> usize {
        self.samples.len()
            + self.events.len()
            + self.trace_calls.len()
            + self.remote_calls.len()
            + self.chunks.len()
            + self.stacks.len()
    }
}

struct Writer {
    pending: Pending,
    /// Id of the batch being filled; batches before it are inserted or failed.
    filling: u64,
    /// Why the last batch holding a stream failed, until its `sync` reports it.
    errors: HashMap<String, String>,
    down: bool,
    stopping: bool,
    /// Insert the batch being filled now rather than when it is due (a connection
    /// ending waits for its rows).
    flush_now: bool,
}

struct Shared {
    client: Client,
    writer: Mutex<Writer>,
    wake: Condvar,
    /// Stack hashes known to be in the stacks table.
    stored_stacks: Mutex<HashSet<u64>>,
    log: Arc<dyn LogSink>,
}

pub struct ClickHouseStore {
    shared: Arc<Shared>,
    db: String,
    /// `?cluster=NAME`: ALTERs go to the local tables on every node.
    cluster: Option<String>,
    streams: Mutex<HashMap<String, Arc<Mutex<StreamState>>>>,
    /// Frames of stacks read back, by hash.
    frames: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
    headers: Mutex<HashMap<String, jscope_format::Header>>,
    writer: Option<JoinHandle<()>>,
}

impl ClickHouseStore {
    /// The statements that create the store's database and tables: on one server, or
    /// (`cluster`) replicated tables on every node and Distributed tables over them.
    pub fn schema_statements(database: &str, cluster: Option<&str>) -> Vec<String> {
        match cluster {
            Some(c) => cluster_schema(database, c),
            None => schema(database),
        }
    }

    /// The statements that add [`ADDED_COLUMNS`] to tables made before them, for
    /// the tables `lacks(table, column)` says lack them: on one server the table;
    /// on a cluster its local tables on every node and the Distributed table over
    /// them (`table_local`, `table`).
    pub fn upgrade_statements(
        database: &str,
        cluster: Option<&str>,
        lacks: &mut dyn FnMut(&str, &str) -> Result<bool, StoreError>,
    ) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for (table, column, ty) in ADDED_COLUMNS {
            let tables = match cluster {
                Some(c) => vec![
                    (format!("{table}_local"), format!(" ON CLUSTER {c}")),
                    (table.to_string(), format!(" ON CLUSTER {c}")),
                ],
                None => vec![(table.to_string(), String::new())],
            };
            for (t, on) in tables {
                if lacks(&t, column)? {
                    out.push(format!(
                        "ALTER TABLE {database}.{t}{on} ADD COLUMN {column} {ty}"
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Connects, creating the database and tables when missing and adding the
    /// columns that tables made by an older collector lack.
    pub fn connect(url: &str, log: Arc<dyn LogSink>) -> Result<ClickHouseStore, StoreError> {
        let url = ClickHouseUrl::parse(url).map_err(StoreError::ClickHouse)?;
        let db = url.database.clone();
        let flush = url.flush;
        let cluster = url.cluster.clone();
        let client = Client::new(url).map_err(StoreError::ClickHouse)?;
        for sql in Self::schema_statements(&db, cluster.as_deref()) {
            client.query(&sql).map_err(ch)?;
        }
        let mut lacks = |table: &str, column: &str| {
            let n = client
                .query(&format!(
                    "SELECT count() FROM system.columns WHERE database = {} AND table = {} \
                     AND name = {}",
                    quote(&db),
                    quote(table),
                    quote(column)
                ))
                .map_err(ch)?;
            Ok(String::from_utf8_lossy(&n).trim() == "0")
        };
        for sql in Self::upgrade_statements(&db, cluster.as_deref(), &mut lacks)? {
            client.query(&sql).map_err(ch)?;
        }
        let shared = Arc::new(Shared {
            client,
            writer: Mutex::new(Writer {
                pending: Pending::default(),
                filling: 1,
                errors: HashMap::new(),
                down: false,
                stopping: false,
                flush_now: false,
            }),
            wake: Condvar::new(),
            stored_stacks: Mutex::new(HashSet::new()),
            log,
        });
        let for_writer = shared.clone();
        let writer = std::thread::Builder::new()
            .name("jscope-clickhouse".into())
            .spawn(move || write_loop(&for_writer, flush))
            .expect("spawn the clickhouse writer");
        Ok(ClickHouseStore {
            shared,
            db,
            cluster,
            streams: Mutex::new(HashMap::new()),
            frames: Mutex::new(HashMap::new()),
            headers: Mutex::new(HashMap::new()),
            writer: Some(writer),
        })
    }

    fn client(&self) -> &Client {
        &self.shared.client
    }

    fn select(&self, sql: &str) -> Result<Vec<u8>, StoreError> {
        self.client()
            .query(&format!("{sql} FORMAT RowBinary"))
            .map_err(ch)
    }

    fn scalar(&self, sql: &str) -> Result<u64, StoreError> {
        let out = self.select(sql)?;
        let mut c = Cursor::new(&out);
        if c.done() {
            return Ok(0);
        }
        c.u64().map_err(ch)
    }

    /// The agent's magic and header chunk as stored, `None` for an unknown stream.
    fn header_bytes(&self, stream: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let out = self.select(&format!(
            "SELECT argMax(header, updated) FROM {}.jvms WHERE stream = {} GROUP BY stream",
            self.db,
            quote(stream)
        ))?;
        let mut c = Cursor::new(&out);
        if c.done() {
            return Ok(None);
        }
        Ok(Some(c.bytes().map_err(ch)?.to_vec()))
    }

    fn header(&self, stream: &str) -> Result<jscope_format::Header, StoreError> {
        if let Some(h) = self.headers.lock().expect("headers lock").get(stream) {
            return Ok(h.clone());
        }
        let bytes = self
            .header_bytes(stream)?
            .ok_or_else(|| StoreError::UnknownJvm(stream.to_string()))?;
        let h = Recording::from_bytes(&bytes)?.header;
        self.headers
            .lock()
            .expect("headers lock")
            .insert(stream.to_string(), h.clone());
        Ok(h)
    }

    /// The end of the stream's unbroken run of stored chunks: what an agent may be
    /// told is stored. A batch that failed while a later one went in leaves a hole
    /// (chunk N missing, N+1 stored); the run ends before it, so `open` deletes the
    /// rows beyond and the agent resends them. Such a hole can only follow the last
    /// prelude (a connection's first chunk, a day's, or the first after a gap the
    /// agent made, `stage`), so the run is looked for from there: the agent's own
    /// gaps, and any older ones, do not end it.
    fn stored_upto(&self, stream: &str) -> Result<u64, StoreError> {
        let (db, s) = (&self.db, quote(stream));
        let out = self.select(&format!(
            "SELECT min(seq), max(seq), uniqExact(seq) FROM {db}.chunks \
             WHERE stream = {s} AND kind = {KIND_CHUNK}"
        ))?;
        let mut c = Cursor::new(&out);
        if c.done() {
            return Ok(0);
        }
        let (lo, hi, n) = (
            c.u64().map_err(ch)?,
            c.u64().map_err(ch)?,
            c.u64().map_err(ch)?,
        );
        if n == 0 || hi - lo + 1 == n {
            return Ok(hi);
        }
        let base = self.scalar(&format!(
            "SELECT max(seq) FROM {db}.chunks WHERE stream = {s} AND kind = {KIND_PRELUDE}"
        ))?;
        let out = self.select(&format!(
            "SELECT seq FROM {db}.chunks WHERE stream = {s} AND kind = {KIND_CHUNK} \
             AND seq >= {base} GROUP BY seq ORDER BY seq"
        ))?;
        let mut c = Cursor::new(&out);
        let mut upto: Option<u64> = None;
        while !c.done() {
            let seq = c.u64().map_err(ch)?;
            match upto {
                Some(prev) if seq != prev + 1 => return Ok(prev),
                _ => upto = Some(seq),
            }
        }
        Ok(upto.unwrap_or(hi))
    }

    /// Waits until the writer has inserted (or failed) `batch`, asking it to insert
    /// now rather than when the batch is due.
    fn committed(&self, batch: u64) -> std::sync::MutexGuard<'_, Writer> {
        let mut w = self.shared.writer.lock().expect("writer lock");
        if w.filling <= batch {
            w.flush_now = true;
            self.shared.wake.notify_all();
        }
        while w.filling <= batch {
            w = self.shared.wake.wait(w).expect("writer lock");
        }
        w
    }

    fn stream(&self, stream: &str) -> Result<Arc<Mutex<StreamState>>, StoreError> {
        self.streams
            .lock()
            .expect("streams lock")
            .get(stream)
            .cloned()
            .ok_or_else(|| StoreError::UnknownJvm(stream.to_string()))
    }

    /// The WHERE clause of a sample count; `None` when nothing can match.
    fn sample_filter(
        &self,
        jvms: &[String],
        from_ns: Option<u64>,
        to_ns: Option<u64>,
        filter: &SampleFilter,
    ) -> Result<Option<String>, StoreError> {
        let mut w = jvm_in(jvms);
        if !filter.states.is_empty() {
            let codes: Vec<String> = filter
                .states
                .iter()
                .map(|s| state_code(*s).to_string())
                .collect();
            w.push_str(&format!(" AND state IN ({})", codes.join(", ")));
        }
        if let Some(m) = &filter.thread {
            let names = self.threads_matching(
                m,
                &format!(
                    "SELECT DISTINCT thread FROM {}.stack_minutes WHERE {w}{}",
                    self.db,
                    minutes_window(
                        from_ns.map(|f| f / MINUTE_NS),
                        to_ns.map(|t| t.div_ceil(MINUTE_NS))
                    )
                ),
            )?;
            let Some(names) = names else {
                return Ok(None);
            };
            w.push_str(&names);
        }
        Ok(Some(w))
    }

    /// ` AND thread IN (...)` of the names `distinct` (a query of thread names)
    /// answers that `m` matches; `None` when none does.
    fn threads_matching(
        &self,
        m: &ThreadMatcher,
        distinct: &str,
    ) -> Result<Option<String>, StoreError> {
        let out = self.select(distinct)?;
        let mut c = Cursor::new(&out);
        let mut names = Vec::new();
        while !c.done() {
            let name = c.string().map_err(ch)?;
            if m.matches(&name) {
                names.push(quote(&name));
            }
        }
        if names.is_empty() {
            return Ok(None);
        }
        Ok(Some(format!(" AND thread IN ({})", names.join(", "))))
    }

    /// Frames of the stacks `hashes`, from the cache or the stacks table.
    fn frames_of(&self, hashes: &[u64]) -> Result<HashMap<u64, Arc<Vec<u8>>>, StoreError> {
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        {
            let cache = self.frames.lock().expect("frames lock");
            for h in hashes {
                match cache.get(h) {
                    Some(f) => {
                        out.insert(*h, f.clone());
                    }
                    None => missing.push(*h),
                }
            }
        }
        for part in missing.chunks(5000) {
            let list: Vec<String> = part.iter().map(u64::to_string).collect();
            let rows = self.select(&format!(
                "SELECT hash, any(frames) FROM {}.stacks WHERE hash IN ({}) GROUP BY hash",
                self.db,
                list.join(",")
            ))?;
            let mut c = Cursor::new(&rows);
            let mut cache = self.frames.lock().expect("frames lock");
            while !c.done() {
                let h = c.u64().map_err(ch)?;
                let f = Arc::new(c.bytes().map_err(ch)?.to_vec());
                cache.insert(h, f.clone());
                out.insert(h, f);
            }
        }
        Ok(out)
    }

    /// Counts per stack hash as counts per stack of a recording rebuilt from the
    /// stacks table (frames by name), with `header`.
    fn rebuild_counts(
        &self,
        header: &jscope_format::Header,
        counted: Vec<(u64, u64)>,
    ) -> Result<(Recording, StackCounts), StoreError> {
        let hashes: Vec<u64> = counted.iter().map(|(h, _)| *h).collect();
        let (rec, ids) = self.rebuild_stacks(header, &hashes)?;
        let mut counts = StackCounts::default();
        for ((_, n), id) in counted.into_iter().zip(ids) {
            *counts.counts.entry((id.0, 0)).or_default() += n;
            counts.total += n;
        }
        Ok((rec, counts))
    }

    /// A recording holding the stacks of `hashes`, and each one's id in it, in
    /// order (a hash the store does not know is an empty stack).
    fn rebuild_stacks(
        &self,
        header: &jscope_format::Header,
        hashes: &[u64],
    ) -> Result<(Recording, Vec<StackId>), StoreError> {
        let frames = self.frames_of(hashes)?;
        let mut rebuild = Interner::new(new_dictionary(header));
        let mut ids = Vec::with_capacity(hashes.len());
        for hash in hashes {
            let id = match frames.get(hash) {
                Some(blob) => stack_of_blob(&mut rebuild, blob).map_err(ch)?,
                None => rebuild.stack(Vec::new()),
            };
            ids.push(id);
        }
        Ok((rebuild.into_recording(), ids))
    }

    /// Raw rows (kind, bytes) of `stream` in sequence order from the prelude that
    /// precedes the first chunk covering `from_ns` to the last starting by `to_ns`.
    fn rows(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<(u8, Vec<u8>)>, StoreError> {
        let (db, s) = (&self.db, quote(stream));
        let mut range = String::new();
        if let Some(f) = from_ns {
            let lo = self.scalar(&format!(
                "SELECT min(seq) FROM {db}.chunks WHERE stream = {s} AND kind = {KIND_CHUNK} AND end_ns >= {f}"
            ))?;
            let base = self.scalar(&format!(
                "SELECT max(seq) FROM {db}.chunks WHERE stream = {s} AND kind = {KIND_PRELUDE} AND seq <= {lo}"
            ))?;
            range.push_str(&format!(" AND seq >= {base}"));
        }
        if let Some(t) = to_ns {
            let hi = self.scalar(&format!(
                "SELECT max(seq) FROM {db}.chunks WHERE stream = {s} AND kind = {KIND_CHUNK} AND start_ns <= {t}"
            ))?;
            range.push_str(&format!(" AND seq <= {hi}"));
        }
        let out = self.select(&format!(
            "SELECT kind, chunk FROM {db}.chunks WHERE stream = {s}{range} \
             ORDER BY seq, kind LIMIT 1 BY seq, kind"
        ))?;
        let mut c = Cursor::new(&out);
        let mut rows = Vec::new();
        while !c.done() {
            let kind = c.u8().map_err(ch)?;
            rows.push((kind, c.bytes().map_err(ch)?.to_vec()));
        }
        Ok(rows)
    }

    /// Appends rows for one chunk to the writer's batch.
    fn stage(
        &self,
        st: &mut StreamState,
        seq: u64,
        chunk: &[u8],
        span_ns: Option<(u64, u64)>,
        dict: &Recording,
        records: &[Record],
    ) {
        let id = &st.identity;
        let day = day_of(span_ns.map_or_else(now_ns, |s| s.1));
        let mut chunks = Vec::new();
        // After a gap (chunks the agent dropped) a prelude marks it as the agent's:
        // see `stored_upto`.
        if st.prelude_day != Some(day) || seq != st.last_seq + 1 {
            Row(&mut chunks)
                .u16(day)
                .str(&id.id)
                .u64(seq)
                .u8(KIND_PRELUDE)
                .u64(0)
                .u64(0)
                .u64(0)
                .bytes(&encode_prelude(dict));
            st.prelude_day = Some(day);
        }
        let (lo, hi) = span_ns.unwrap_or((0, 0));
        Row(&mut chunks)
            .u16(day)
            .str(&id.id)
            .u64(seq)
            .u8(KIND_CHUNK)
            .u64(lo)
            .u64(hi)
            .u64(chunk.len() as u64)
            .bytes(chunk);

        let mut rows = Rows::default();
        let weights = AllocWeights::of(dict);
        // The chunk's transient strings name its own records only (the
        // dictionary keeps none: see `apply_dictionary`).
        let transient: HashMap<StringId, &str> = records
            .iter()
            .filter_map(|r| match r {
                Record::TransientString { id, value } => Some((*id, value.as_str())),
                _ => None,
            })
            .collect();
        let name = |id: StringId| match transient.get(&id) {
            Some(s) => s,
            None => dict.string(id),
        };
        for r in records {
            match r {
                Record::Sample(s) => self.sample_row(
                    st,
                    dict,
                    &mut rows,
                    seq,
                    (Mode::of_sample(s.mode), s.ticks),
                    (s.thread, s.stack, s.state),
                    s.weight_ns,
                ),
                Record::Snapshot(snap) => {
                    for t in &snap.threads {
                        self.sample_row(
                            st,
                            dict,
                            &mut rows,
                            seq,
                            (Mode::Snapshot, snap.ticks),
                            (t.thread, t.stack, t.state),
                            snap.interval_ns,
                        );
                    }
                }
                Record::Event(e) => self.event_row(st, dict, &mut rows, (seq, weights), e),
                Record::Remote(c) => self.remote_row(st, (dict, &name), &mut rows, seq, c),
                Record::Trace(b) => st.trace.batch(dict, b),
                _ => {}
            }
        }
        let calls = std::mem::take(st.trace.sink_mut());
        call_rows(st, dict, &mut rows.trace_calls, seq, &calls);
        st.last_seq = seq;
        st.trace_upto = seq;
        self.queue(st, rows, chunks);
    }

    /// Hands a chunk's rows to the writer.
    fn queue(&self, st: &mut StreamState, rows: Rows, chunks: Vec<u8>) {
        let mut w = self.shared.writer.lock().expect("writer lock");
        let p = &mut w.pending;
        p.samples.extend_from_slice(&rows.samples);
        p.events.extend_from_slice(&rows.events);
        p.trace_calls.extend_from_slice(&rows.trace_calls);
        p.remote_calls.extend_from_slice(&rows.remote_calls);
        p.chunks.extend_from_slice(&chunks);
        p.stacks.extend_from_slice(&rows.stacks);
        p.new_stacks.extend(rows.new_stacks);
        p.streams.insert(st.identity.id.clone());
        p.since.get_or_insert_with(Instant::now);
        let full = p.bytes() >= BATCH_BYTES;
        st.batch = w.filling;
        if full {
            self.shared.wake.notify_all();
        }
    }

    /// The hash of a JVM's stack, its frames staged for the stacks table when new;
    /// 0 for no stack.
    fn stack_hash(
        &self,
        st: &mut StreamState,
        dict: &Recording,
        rows: &mut Rows,
        stack: StackId,
    ) -> u64 {
        if let Some(&h) = st.hashes.get(&stack.0) {
            return h;
        }
        if stack.is_none() {
            return 0;
        }
        let blob = encode_frames(dict, dict.stack(stack));
        let h = fnv(&blob);
        let stored = self.shared.stored_stacks.lock().expect("stacks lock");
        if !stored.contains(&h) && rows.new_stacks.insert(h) {
            Row(&mut rows.stacks).u64(h).bytes(&blob);
        }
        st.hashes.insert(stack.0, h);
        h
    }

    #[allow(clippy::too_many_arguments)]
    fn sample_row(
        &self,
        st: &mut StreamState,
        dict: &Recording,
        rows: &mut Rows,
        seq: u64,
        (mode, ticks): (Mode, u64),
        (thread, stack, state): (ThreadId, StackId, u32),
        weight: u64,
    ) {
        let hash = self.stack_hash(st, dict, rows, stack);
        let time = st.identity.wall_ns(ticks);
        let thread_name = dict.thread(thread).map_or("", |t| t.name.as_str());
        let mut row = Row(&mut rows.samples);
        stream_columns(&mut row, st, time, seq);
        row.u8(mode_code(mode))
            .str(thread_name)
            .u8(state_code(classify(state)))
            .u64(hash)
            .u64(weight);
    }

    fn event_row(
        &self,
        st: &mut StreamState,
        dict: &Recording,
        rows: &mut Rows,
        (seq, weights): (u64, AllocWeights),
        e: &JvmEvent,
    ) {
        let stack = self.stack_hash(st, dict, rows, stack_of(e));
        let fields: Vec<(&str, String)> = e
            .kind
            .info()
            .fields
            .iter()
            .filter_map(|f| {
                let v = e.kind.field(f.name)?;
                Some((
                    f.name,
                    field_text(dict, v, |s| self.stack_hash(st, dict, rows, s)),
                ))
            })
            .collect();
        let number = |name: &str| e.kind.field(name).map_or(0, FieldValue::as_u64);
        let time = st.identity.wall_ns(e.ticks);
        // Java allocation samples' weights (estimated from older recordings'
        // sizes), else the event's own (native allocations and lock waits).
        let weight = weights
            .weight(e)
            .or_else(|| e.kind.field("weight").map(FieldValue::as_u64))
            .unwrap_or(0);
        let mut row = Row(&mut rows.events);
        stream_columns(&mut row, st, time, seq);
        row.str(dict.thread(e.thread).map_or("", |t| t.name.as_str()))
            .str(e.kind.name())
            .u64(number("duration_ns"))
            .u64(stack)
            .u64(weight)
            .u64(number("size"))
            .strings(fields.iter().map(|(k, _)| *k))
            .strings(fields.iter().map(|(_, v)| v.as_str()))
            .u64(e.request());
    }

    /// A remote call's row, its strings named by `name` (the dictionary's and
    /// the chunk's transient ones).
    fn remote_row<'a>(
        &self,
        st: &mut StreamState,
        (dict, name): (&'a Recording, &dyn Fn(StringId) -> &'a str),
        rows: &mut Rows,
        seq: u64,
        c: &RemoteCall,
    ) {
        let stack = self.stack_hash(st, dict, rows, c.stack);
        let time = st.identity.wall_ns(c.ticks);
        let local = format!("{}:{}", name(c.local_host), c.local_port);
        let remote = format!("{}:{}", name(c.remote_host), c.remote_port);
        let (client, server) = match c.side {
            RemoteSide::Client => (&local, &remote),
            RemoteSide::Server => (&remote, &local),
        };
        // The key `jscope_analysis::distributed` matches the two sides by.
        let link = format!(
            "{}:{client}>{server}#{}",
            protocol_name(c.protocol),
            c.conn_seq
        );
        let mut row = Row(&mut rows.remote_calls);
        stream_columns(&mut row, st, time, seq);
        row.u64(c.duration_ns)
            .str(dict.thread(c.thread).map_or("", |t| t.name.as_str()))
            .str(side_name(c.side))
            .str(protocol_name(c.protocol))
            .str(name(c.object))
            .str(name(c.method))
            .u64(c.method_hash)
            .str(&local)
            .str(&remote)
            .u64(c.conn_seq)
            .str(&link)
            .str(name(c.request_id))
            .u8(u8::from(c.failed))
            .u64(stack);
    }
}

/// A chunk's rows for each table.
#[derive(Default)]
struct Rows {
    samples: Vec<u8>,
    events: Vec<u8>,
    trace_calls: Vec<u8>,
    remote_calls: Vec<u8>,
    stacks: Vec<u8>,
    new_stacks: HashSet<u64>,
}

/// `day, time, service, stream, jvm, labels, seq`: the columns every row table
/// starts with (`time` being `time_ns` or `start_ns`).
fn stream_columns(row: &mut Row, st: &StreamState, time: u64, seq: u64) {
    row.u16(day_of(time))
        .u64(time)
        .str(&st.identity.service)
        .str(&st.identity.id)
        .u64(st.jvm_hash)
        .strings(st.identity.labels.iter().map(|(k, _)| k.as_str()))
        .strings(st.identity.labels.iter().map(|(_, v)| v.as_str()))
        .u64(seq);
}

/// An event field as text: numbers in decimal, ids by name (a class, a method's
/// `pkg.Class.method`, a thread, a string, a user event), a stack by its hash in
/// the stacks table.
fn field_text(dict: &Recording, v: FieldValue, mut stack: impl FnMut(StackId) -> u64) -> String {
    match v {
        FieldValue::U64(n) => n.to_string(),
        FieldValue::I64(n) => n.to_string(),
        FieldValue::Bool(b) => u8::from(b).to_string(),
        FieldValue::Class(c) => dict
            .class(c)
            .map_or(String::new(), |c| dict.string(c.name).to_string()),
        FieldValue::Method(m) if m.0 == 0 => String::new(),
        FieldValue::Method(m) => dict.method_label(m),
        FieldValue::Stack(s) => stack(s).to_string(),
        FieldValue::Thread(t) => dict.thread(t).map_or(String::new(), |t| t.name.clone()),
        FieldValue::String(s) => dict.string(s).to_string(),
        FieldValue::UserEvent(id) => dict
            .user_events
            .get(id as usize)
            .and_then(Option::as_ref)
            .map_or_else(|| format!("#{id}"), |d| dict.string(d.name).to_string()),
        FieldValue::UserKind(k) => match k {
            UserEventKind::Instant => "instant",
            UserEventKind::Begin => "begin",
            UserEventKind::End => "end",
        }
        .to_string(),
    }
}

/// Rows of finished traced calls (ns since the recording start on the JVM's clock).
fn call_rows(st: &StreamState, dict: &Recording, out: &mut Vec<u8>, seq: u64, calls: &[Call]) {
    let mut labels: HashMap<u32, String> = HashMap::new();
    let start = st.identity.start_wall_ns;
    for c in calls {
        let label = labels
            .entry(c.method)
            .or_insert_with(|| dict.method_label(MethodId(c.method)));
        let thread = dict
            .thread(ThreadId(c.thread))
            .map_or("", |t| t.name.as_str());
        let (lo, hi) = (
            start.saturating_add(c.enter_ns),
            start.saturating_add(c.exit_ns),
        );
        let mut row = Row(out);
        stream_columns(&mut row, st, lo, seq);
        row.u64(hi)
            .u64(c.duration_ns())
            .u64(c.self_ns)
            .str(thread)
            .str(label)
            .u32(c.depth)
            .u8(u8::from(c.flags & THREW != 0))
            .u8(u8::from(c.flags & UNFINISHED != 0))
            .u64(c.untraced);
        for cpu in [c.cpu_ns, c.self_cpu_ns] {
            match cpu {
                Some(n) => row.u8(0).u64(n),
                None => row.u8(1),
            };
        }
    }
}

/// Inserts batches until the store is dropped.
fn write_loop(shared: &Shared, flush: Duration) {
    // The batch inserted last, emptied: it becomes the next one to fill, so the
    // buffers keep their size instead of growing anew on connection threads
    // (glibc keeps each such thread's freed multi-MiB buffers in its arena).
    let mut spare = Pending::default();
    let mut w = shared.writer.lock().expect("writer lock");
    loop {
        let ready = w.pending.since.is_some_and(|t| t.elapsed() >= flush)
            || w.pending.bytes() >= BATCH_BYTES
            || ((w.stopping || w.flush_now) && w.pending.since.is_some());
        if !ready {
            if w.stopping {
                return;
            }
            let wait = w
                .pending
                .since
                .map_or(flush, |t| flush.saturating_sub(t.elapsed()));
            w = shared
                .wake
                .wait_timeout(w, wait.max(Duration::from_millis(1)))
                .expect("writer lock")
                .0;
            continue;
        }
        let mut batch = std::mem::replace(&mut w.pending, spare);
        w.filling += 1;
        w.flush_now = false;
        drop(w);
        let result = insert_batch(&shared.client, &batch);
        w = shared.writer.lock().expect("writer lock");
        match result {
            Ok(()) => {
                if w.down {
                    w.down = false;
                    shared.log.line("clickhouse is back: acknowledging again");
                }
                shared
                    .stored_stacks
                    .lock()
                    .expect("stacks lock")
                    .extend(batch.new_stacks.iter().copied());
            }
            Err(e) => {
                if !w.down {
                    w.down = true;
                    shared.log.line(&format!(
                        "clickhouse insert failed, not acknowledging until it works again: {e}"
                    ));
                }
                for s in batch.streams.drain() {
                    w.errors.insert(s, e.clone());
                }
            }
        }
        batch.clear();
        spare = batch;
        shared.wake.notify_all();
    }
}

fn insert_batch(client: &Client, b: &Pending) -> Result<(), String> {
    if !b.stacks.is_empty() {
        client.insert("stacks", STACK_COLUMNS, &b.stacks)?;
    }
    if !b.samples.is_empty() {
        client.insert("samples", SAMPLE_COLUMNS, &b.samples)?;
    }
    if !b.events.is_empty() {
        client.insert("events", EVENT_COLUMNS, &b.events)?;
    }
    if !b.trace_calls.is_empty() {
        client.insert("trace_calls", TRACE_COLUMNS, &b.trace_calls)?;
    }
    if !b.remote_calls.is_empty() {
        client.insert("remote_calls", REMOTE_COLUMNS, &b.remote_calls)?;
    }
    if !b.chunks.is_empty() {
        client.insert("chunks", CHUNK_COLUMNS, &b.chunks)?;
    }
    Ok(())
}

impl Drop for ClickHouseStore {
    fn drop(&mut self) {
        self.shared.writer.lock().expect("writer lock").stopping = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.writer.take() {
            let _ = t.join();
        }
    }
}

impl Store for ClickHouseStore {
    fn resume(&self, stream: &str) -> Result<Option<StreamStatus>, StoreError> {
        let Some(header) = self.header_bytes(stream)? else {
            return Ok(None);
        };
        let acked = self.stored_upto(stream)?;
        let head = Recording::from_bytes(&header)?;
        let mut dict = new_dictionary(&head.header);
        // The dictionaries: from the last prelude on.
        let base = self.scalar(&format!(
            "SELECT max(seq) FROM {}.chunks WHERE stream = {} AND kind = {KIND_PRELUDE}",
            self.db,
            quote(stream)
        ))?;
        let out = self.select(&format!(
            "SELECT chunk FROM {}.chunks WHERE stream = {} AND seq >= {base} \
             ORDER BY seq, kind LIMIT 1 BY seq, kind",
            self.db,
            quote(stream)
        ))?;
        let mut c = Cursor::new(&out);
        while !c.done() {
            let bytes = c.bytes().map_err(ch)?;
            if let Ok(jscope_format::Split::Chunk(raw)) = jscope_format::split_chunk(bytes, 0) {
                if let Ok(records) = jscope_format::decode_payload(&raw.payload) {
                    apply_dictionary(&mut dict, &records);
                }
            }
        }
        dict.end_ticks = None;
        Ok(Some(StreamStatus { acked, dict }))
    }

    fn acked(&self, stream: &str) -> Result<Option<u64>, StoreError> {
        // `resume`'s answer without fetching the header or rebuilding the dictionary.
        let known = self.scalar(&format!(
            "SELECT count() FROM {}.jvms WHERE stream = {}",
            self.db,
            quote(stream)
        ))?;
        if known == 0 {
            return Ok(None);
        }
        Ok(Some(self.stored_upto(stream)?))
    }

    fn open(
        &self,
        jvm: &JvmIdentity,
        header: &[u8],
        _next_seq: u64,
        _dict: &Recording,
    ) -> Result<(), StoreError> {
        let mut row = Vec::new();
        let identity = serde_json::to_string(jvm).expect("identity serialises");
        Row(&mut row)
            .str(&jvm.id)
            .str(&jvm.service)
            .strings(jvm.labels.iter().map(|(k, _)| k.as_str()))
            .strings(jvm.labels.iter().map(|(_, v)| v.as_str()))
            .str(&identity)
            .bytes(header)
            .u64(now_ns());
        self.client()
            .insert("jvms", JVM_COLUMNS, &row)
            .map_err(ch)?;
        // The previous connection's rows first (see `close`).
        let previous = self
            .streams
            .lock()
            .expect("streams lock")
            .get(&jvm.id)
            .cloned();
        if let Some(old) = &previous {
            let batch = old.lock().expect("stream lock").batch;
            drop(self.committed(batch));
        }
        let stored_upto = self.stored_upto(&jvm.id)?;
        // The calls the previous connection here left open carry on when ClickHouse
        // holds exactly what it staged (no other collector stored more since, no
        // batch of it failed); else they are lost and the trace starts afresh.
        let (trace, trace_upto) = match previous {
            Some(old) => {
                let mut old = old.lock().expect("stream lock");
                if old.last_seq == stored_upto && old.trace_upto == stored_upto {
                    (
                        std::mem::replace(&mut old.trace, new_replayer()),
                        stored_upto,
                    )
                } else {
                    (new_replayer(), 0)
                }
            }
            None => (new_replayer(), 0),
        };
        let jvm_hash = fnv(jvm.id.as_bytes());
        // Rows of chunks whose insert did not complete would count twice.
        let (db, this) = (
            &self.db,
            format!("jvm = {jvm_hash} AND stream = {}", quote(&jvm.id)),
        );
        for table in ROW_TABLES {
            let orphans = self.scalar(&format!(
                "SELECT count() FROM {db}.{table} WHERE jvm = {jvm_hash} AND seq > {stored_upto}"
            ))?;
            if orphans == 0 {
                continue;
            }
            if table == "samples" {
                // The per-minute counts took them in too: their negation cancels them.
                self.client()
                    .query(&format!(
                        "INSERT INTO {db}.stack_minutes SELECT {MINUTE_COLUMNS}, \
                         -toInt64(count()) AS n FROM {db}.samples \
                         WHERE {this} AND seq > {stored_upto} \
                         GROUP BY day, minute, jvm, mode, state, thread, stack"
                    ))
                    .map_err(ch)?;
            }
            self.client()
                .query(&format!(
                    "ALTER TABLE {} DELETE WHERE {this} AND seq > {stored_upto}",
                    alter_target(db, table, self.cluster.as_deref())
                ))
                .map_err(ch)?;
        }
        if let Ok(h) = Recording::from_bytes(header) {
            self.headers
                .lock()
                .expect("headers lock")
                .insert(jvm.id.clone(), h.header);
        }
        // A failure of the previous connection's last batch was its own.
        self.shared
            .writer
            .lock()
            .expect("writer lock")
            .errors
            .remove(&jvm.id);
        let state = StreamState {
            identity: jvm.clone(),
            jvm_hash,
            stored_upto,
            hashes: HashMap::new(),
            prelude_day: None,
            batch: 0,
            active: true,
            trace,
            last_seq: stored_upto,
            trace_upto,
        };
        self.streams
            .lock()
            .expect("streams lock")
            .insert(jvm.id.clone(), Arc::new(Mutex::new(state)));
        Ok(())
    }

    fn append(
        &self,
        stream: &str,
        seq: u64,
        chunk: &[u8],
        span_ns: Option<(u64, u64)>,
        dict: &Recording,
    ) -> Result<(), StoreError> {
        let records = match jscope_format::split_chunk(chunk, 0) {
            Ok(jscope_format::Split::Chunk(raw)) => jscope_format::decode_payload(&raw.payload)?,
            _ => Vec::new(),
        };
        self.append_records(stream, seq, chunk, span_ns, dict, &records)
    }

    fn append_records(
        &self,
        stream: &str,
        seq: u64,
        chunk: &[u8],
        span_ns: Option<(u64, u64)>,
        dict: &Recording,
        records: &[Record],
    ) -> Result<(), StoreError> {
        let st = self.stream(stream)?;
        let mut st = st.lock().expect("stream lock");
        // After a failed batch the connection takes no more chunks: a later
        // batch going in would leave a hole below chunks stored after it.
        if let Some(e) = self
            .shared
            .writer
            .lock()
            .expect("writer lock")
            .errors
            .get(stream)
        {
            return Err(ch(e.clone()));
        }
        if seq <= st.stored_upto {
            // Stored before (an agent resending after a collector died): its rows
            // are in, but its trace events still open calls that later chunks close
            // (unless the trace carried on from the previous connection here).
            if seq > st.trace_upto {
                for r in records {
                    if let Record::Trace(b) = r {
                        st.trace.batch(dict, b);
                    }
                }
                st.trace.sink_mut().clear();
                st.trace_upto = seq;
            }
            return Ok(());
        }
        self.stage(&mut st, seq, chunk, span_ns, dict, records);
        Ok(())
    }

    fn sync(&self, stream: &str) -> Result<(), StoreError> {
        let batch = self.stream(stream)?.lock().expect("stream lock").batch;
        let mut w = self.shared.writer.lock().expect("writer lock");
        while w.filling <= batch {
            w = self.shared.wake.wait(w).expect("writer lock");
        }
        match w.errors.remove(stream) {
            Some(e) => Err(ch(e)),
            None => Ok(()),
        }
    }

    fn end_stream(&self, stream: &str, dict: &Recording, clean: bool) -> Result<(), StoreError> {
        if !clean {
            // The agent comes back: its open calls close in a later chunk.
            return Ok(());
        }
        let st = self.stream(stream)?;
        let mut st = st.lock().expect("stream lock");
        let replayer = std::mem::replace(&mut st.trace, new_replayer());
        let (open, _) = replayer.finish(dict);
        if open.is_empty() {
            return Ok(());
        }
        let mut rows = Rows::default();
        let seq = st.last_seq;
        call_rows(&st, dict, &mut rows.trace_calls, seq, &open);
        self.queue(&mut st, rows, Vec::new());
        Ok(())
    }

    fn close(&self, stream: &str) -> Result<(), StoreError> {
        let Ok(st) = self.stream(stream) else {
            return Ok(());
        };
        let batch = {
            let mut st = st.lock().expect("stream lock");
            st.active = false;
            st.batch
        };
        // Rows staged but not yet inserted (a chunk the connection never
        // acknowledged, the calls left open) must be in before the agent
        // reconnects: `open` resumes from what ClickHouse holds, and a chunk
        // still in the batch would be sent and stored again. The error stays
        // for `open` to see.
        let w = self.committed(batch);
        match w.errors.get(stream) {
            Some(e) => Err(ch(e.clone())),
            None => Ok(()),
        }
    }

    fn jvms(&self) -> Vec<StoredJvm> {
        let listed = || -> Result<Vec<StoredJvm>, StoreError> {
            let ids = self.select(&format!(
                "SELECT stream, argMax(identity, updated) FROM {}.jvms GROUP BY stream ORDER BY stream",
                self.db
            ))?;
            let spans = self.select(&format!(
                "SELECT stream, min(seq), max(seq), minIf(start_ns, start_ns > 0), max(end_ns), \
                 sum(bytes) FROM {}.chunks WHERE kind = {KIND_CHUNK} GROUP BY stream",
                self.db
            ))?;
            let mut by_stream = BTreeMap::new();
            let mut c = Cursor::new(&spans);
            while !c.done() {
                let s = c.string().map_err(ch)?;
                let v = [
                    c.u64().map_err(ch)?,
                    c.u64().map_err(ch)?,
                    c.u64().map_err(ch)?,
                    c.u64().map_err(ch)?,
                    c.u64().map_err(ch)?,
                ];
                by_stream.insert(s, v);
            }
            let active = self.streams.lock().expect("streams lock");
            let mut out = Vec::new();
            let mut c = Cursor::new(&ids);
            while !c.done() {
                let s = c.string().map_err(ch)?;
                let json = c.bytes().map_err(ch)?;
                let Ok(identity) = serde_json::from_slice::<JvmIdentity>(json) else {
                    continue;
                };
                let here = active
                    .get(&s)
                    .is_some_and(|st| st.lock().expect("stream lock").active);
                let segments = by_stream
                    .get(&s)
                    .map(|&[first, last, lo, hi, bytes]| SegmentInfo {
                        file: "clickhouse".into(),
                        first_seq: first,
                        last_seq: last,
                        bytes,
                        start_ns: (lo > 0).then_some(lo),
                        end_ns: (hi > 0).then_some(hi),
                        spans_all_records: true,
                        created_ns: identity.start_wall_ns,
                        closed: !here,
                    })
                    .into_iter()
                    .collect();
                out.push(StoredJvm { identity, segments });
            }
            Ok(out)
        };
        match listed() {
            Ok(v) => v,
            Err(e) => {
                self.shared
                    .log
                    .line(&format!("cannot list jvms from clickhouse: {e}"));
                Vec::new()
            }
        }
    }

    fn read(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Recording, StoreError> {
        let bytes = self.raw(stream, from_ns, to_ns)?;
        let mut rec = Recording::from_bytes(&bytes)?;
        rec.damage = None;
        Ok(rec)
    }

    fn raw(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Vec<u8>, StoreError> {
        let mut out = self
            .header_bytes(stream)?
            .ok_or_else(|| StoreError::UnknownJvm(stream.to_string()))?;
        for (_, bytes) in self.rows(stream, from_ns, to_ns)? {
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }

    fn stack_counts(
        &self,
        stream: &str,
        from_ns: Option<u64>,
        to_ns: Option<u64>,
        mode: Option<Mode>,
        filter: &SampleFilter,
    ) -> Result<Option<Counted>, StoreError> {
        self.stack_counts_across(&[stream.to_string()], from_ns, to_ns, mode, filter)
    }

    fn stack_counts_across(
        &self,
        jvms: &[String],
        from_ns: Option<u64>,
        to_ns: Option<u64>,
        mode: Option<Mode>,
        filter: &SampleFilter,
    ) -> Result<Option<Counted>, StoreError> {
        let Some(first) = jvms.first() else {
            return Ok(None);
        };
        let header = self.header(first)?;
        let empty = |mode| {
            Ok(Some((
                new_dictionary(&header),
                mode,
                StackCounts::default(),
            )))
        };
        let Some(w) = self.sample_filter(jvms, from_ns, to_ns, filter)? else {
            return empty(mode);
        };
        // Without a mode, one scan counts every mode and the first with samples is kept.
        let (mode_filter, group) = match mode {
            Some(m) => (format!(" AND mode = {}", mode_code(m)), ""),
            None => (String::new(), ", mode"),
        };
        // Whole minutes of the window from the per-minute counts, its ragged ends
        // from the sample rows.
        let lo_min = from_ns.map(|f| f.div_ceil(MINUTE_NS));
        let hi_min = to_ns.map(|t| t / MINUTE_NS);
        let mut queries = Vec::new();
        if lo_min.unwrap_or(0) < hi_min.unwrap_or(u64::MAX) {
            queries.push(format!(
                "SELECT stack, toUInt64(sum(n)){group} FROM {}.stack_minutes WHERE {w}{mode_filter}{} \
                 GROUP BY stack{group} HAVING sum(n) > 0",
                self.db,
                minutes_window(lo_min, hi_min)
            ));
            if let (Some(f), Some(m)) = (from_ns, lo_min) {
                queries.push(raw_count(
                    &self.db,
                    &w,
                    &mode_filter,
                    group,
                    Some(f),
                    Some(m * MINUTE_NS),
                ));
            }
            if let (Some(t), Some(m)) = (to_ns, hi_min) {
                queries.push(raw_count(
                    &self.db,
                    &w,
                    &mode_filter,
                    group,
                    Some(m * MINUTE_NS),
                    Some(t),
                ));
            }
        } else {
            queries.push(raw_count(&self.db, &w, &mode_filter, group, from_ns, to_ns));
        }
        let mut summed: HashMap<(Mode, u64), u64> = HashMap::new();
        for q in queries {
            let out = self.select(&q)?;
            let mut c = Cursor::new(&out);
            while !c.done() {
                let (stack, n) = (c.u64().map_err(ch)?, c.u64().map_err(ch)?);
                let m = match mode {
                    Some(m) => m,
                    None => mode_of(c.u8().map_err(ch)?).unwrap_or(Mode::Snapshot),
                };
                *summed.entry((m, stack)).or_default() += n;
            }
        }
        let rows: Vec<(Mode, u64, u64)> = summed
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|((m, stack), n)| (m, stack, n))
            .collect();
        let Some(mode) = mode.or_else(|| rows.iter().map(|r| r.0).min()) else {
            return empty(None);
        };
        let counted: Vec<(u64, u64)> = rows
            .into_iter()
            .filter(|r| r.0 == mode)
            .map(|r| (r.1, r.2))
            .collect();
        let (rec, counts) = self.rebuild_counts(&header, counted)?;
        Ok(Some((rec, Some(mode), counts)))
    }

    fn event_stacks_across(
        &self,
        jvms: &[String],
        from_ns: Option<u64>,
        to_ns: Option<u64>,
        what: EventWeight,
        thread: Option<&ThreadMatcher>,
    ) -> Result<Option<(Recording, StackCounts)>, StoreError> {
        let Some(first) = jvms.first() else {
            return Ok(None);
        };
        let header = self.header(first)?;
        let mut w = format!(
            "{}{}",
            jvm_in(jvms),
            window_sql("time_ns", 1, from_ns, to_ns)
        );
        if let Some(m) = thread {
            // As `EventFilter` selects: by thread name; process-wide events have none.
            let Some(names) = self.threads_matching(
                m,
                &format!(
                    "SELECT DISTINCT thread FROM {}.events WHERE {w} AND thread != ''",
                    self.db
                ),
            )?
            else {
                return Ok(Some((new_dictionary(&header), StackCounts::default())));
            };
            w.push_str(&names);
        }
        let (sum, which) = match what {
            EventWeight::Alloc => ("weight", "kind = 'alloc' AND weight > 0".to_string()),
            EventWeight::NativeMem => ("weight", "kind = 'native_alloc' AND weight > 0".into()),
            EventWeight::NativeLock => ("weight", "kind = 'native_lock' AND weight > 0".into()),
            // Matching frees to their allocations is left to the chunks.
            EventWeight::Leak => return Ok(None),
            EventWeight::Lock => {
                // `weighted_stacks`: monitor entries, and parks on a lock's synchronizer.
                let blocker =
                    "replaceAll(fields.value[indexOf(fields.key, 'blocker_class')], '/', '.')";
                (
                    "duration_ns",
                    format!(
                        "duration_ns > 0 AND (kind = 'monitor' OR (kind = 'park' AND \
                         {blocker} LIKE 'java.util.concurrent.locks.%' AND \
                         {blocker} NOT LIKE '%ConditionObject%'))"
                    ),
                )
            }
        };
        // An allocation's class becomes its stack's leaf frame, as
        // `weighted_stacks` makes it of the chunks.
        let class = match what {
            EventWeight::Alloc => "fields.value[indexOf(fields.key, 'class')]",
            _ => "''",
        };
        let out = self.select(&format!(
            "SELECT stack, {class}, sum({sum}) FROM {}.events WHERE {w} AND {which} \
             GROUP BY stack, {class}",
            self.db
        ))?;
        let mut c = Cursor::new(&out);
        let mut rows = Vec::new();
        while !c.done() {
            let stack = c.u64().map_err(ch)?;
            let class = c.string().map_err(ch)?;
            rows.push((stack, class, c.u64().map_err(ch)?));
        }
        let hashes: Vec<u64> = rows.iter().map(|(h, _, _)| *h).collect();
        let (mut rec, ids) = self.rebuild_stacks(&header, &hashes)?;
        let mut leaves = AllocationStacks::new();
        let mut counts = StackCounts::default();
        for ((_, class, n), id) in rows.iter().zip(ids) {
            let stack = leaves.stack_named(&mut rec, id, class);
            *counts.counts.entry((stack.0, 0)).or_default() += n;
            counts.total += n;
        }
        Ok(Some((rec, counts)))
    }

    fn event_kinds_across(
        &self,
        jvms: &[String],
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Option<Vec<EventKindRow>>, StoreError> {
        let out = self.select(&format!(
            "SELECT kind, count(), sum(duration_ns), max(duration_ns), toUInt64(uniqExact(jvm)) \
             FROM {}.events WHERE {}{} GROUP BY kind",
            self.db,
            jvm_in(jvms),
            window_sql("time_ns", 1, from_ns, to_ns)
        ))?;
        let mut rows: Vec<EventKindRow> = grouped(&out)?
            .into_iter()
            .map(|([kind], n): Grouped<1, 4>| EventKindRow {
                kind,
                events: n[0],
                total_ns: n[1],
                max_ns: n[2],
                jvms: n[3],
            })
            .collect();
        sort_kinds(&mut rows);
        Ok(Some(rows))
    }

    fn traced_methods_across(
        &self,
        jvms: &[String],
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Option<Vec<TracedMethod>>, StoreError> {
        let out = self.select(&format!(
            "SELECT method, count(), sum(duration_ns), sum(self_ns), max(duration_ns), \
             toUInt64(sum(threw)), toUInt64(uniqExact(jvm)) FROM {}.trace_calls WHERE {}{} \
             GROUP BY method",
            self.db,
            jvm_in(jvms),
            window_sql("start_ns", 1, from_ns, to_ns)
        ))?;
        let mut rows: Vec<TracedMethod> = grouped(&out)?
            .into_iter()
            .map(|([method], n): Grouped<1, 6>| TracedMethod {
                method,
                calls: n[0],
                total_ns: n[1],
                self_ns: n[2],
                max_ns: n[3],
                threw: n[4],
                jvms: n[5],
            })
            .collect();
        sort_traced(&mut rows);
        Ok(Some(rows))
    }

    fn remote_calls_across(
        &self,
        jvms: &[String],
        from_ns: Option<u64>,
        to_ns: Option<u64>,
    ) -> Result<Option<Vec<RemoteGroup>>, StoreError> {
        let out = self.select(&format!(
            "SELECT direction, protocol, target, method, count(), toUInt64(sum(failed)), \
             sum(duration_ns), max(duration_ns), toUInt64(uniqExact(jvm)) \
             FROM {}.remote_calls WHERE {}{} GROUP BY direction, protocol, target, method",
            self.db,
            jvm_in(jvms),
            window_sql("start_ns", 1, from_ns, to_ns)
        ))?;
        let mut rows: Vec<RemoteGroup> = grouped(&out)?
            .into_iter()
            .map(
                |([direction, protocol, target, method], n): Grouped<4, 5>| RemoteGroup {
                    direction,
                    protocol,
                    target,
                    method,
                    calls: n[0],
                    failed: n[1],
                    total_ns: n[2],
                    max_ns: n[3],
                    jvms: n[4],
                },
            )
            .collect();
        sort_remote(&mut rows);
        Ok(Some(rows))
    }

    fn retain(&self, cutoff_ns: u64) -> Result<Retained, StoreError> {
        let out = self.select(&format!(
            "SELECT table, partition, sum(bytes) FROM system.parts WHERE database = {} \
             AND table IN ({}) AND active GROUP BY table, partition \
             HAVING max(max_date) < {}",
            quote(&self.db),
            [
                "chunks",
                "samples",
                "stack_minutes",
                "events",
                "trace_calls",
                "remote_calls"
            ]
            .map(|t| match self.cluster {
                Some(_) => quote(&format!("{t}_local")),
                None => quote(t),
            })
            .join(", "),
            date_sql(day_of(cutoff_ns))
        ))?;
        let mut c = Cursor::new(&out);
        let mut done = Retained::default();
        while !c.done() {
            let table = c.string().map_err(ch)?;
            let table = table.strip_suffix("_local").unwrap_or(&table).to_string();
            let partition = c.string().map_err(ch)?;
            let bytes = c.u64().map_err(ch)?;
            if !partition.chars().all(|ch| ch.is_ascii_digit()) {
                continue;
            }
            self.client()
                .query(&format!(
                    "ALTER TABLE {} DROP PARTITION {partition}",
                    alter_target(&self.db, &table, self.cluster.as_deref())
                ))
                .map_err(ch)?;
            done.segments_deleted += 1;
            done.bytes_freed += bytes;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_print_as_dates() {
        assert_eq!(date_sql(0), "toDate('1970-01-01')");
        assert_eq!(date_sql(20_416), "toDate('2025-11-24')");
        assert_eq!(day_of(1_764_000_000_000_000_000), 20_416);
    }
}
