//! Exact-tracing analysis: call trees and call statistics from trace batches.
//!
//! The stack algorithm (JaViz) runs per thread over entries and exits; it feeds
//! either a [`CallTree`] (compact pre-order arrays per thread, threads linked to the
//! `Thread.start` call that started them, one virtual root per JVM) or streaming
//! [`TraceStats`] (per method and per caller→callee pair, no tree kept). Methods
//! hidden by [`TraceOptions::hide`] vanish: their callees attach to the nearest
//! visible caller and their own time counts as that caller's self time.
//! Overhead correction (JPMT, JX) subtracts the header's `trace.probe_cost_ns` for
//! each traced call (two probes) and each untraced call counted inside a call.
//! Aggregate-mode recordings go through [`aggregate_stats`]. See docs/TRACE-API.md.
//!
//! ```
//! use jscope_analysis::trace::{CallTree, TraceOptions, TraceStats};
//! use jscope_format::*;
//!
//! // A recording where `main` calls `work` three times, taking 1, 2 and 3 ms.
//! let mut w = ChunkWriter::new();
//! w.string(StringId(1), "demo.App");
//! w.string(StringId(2), "main");
//! w.string(StringId(3), "work");
//! w.class(&ClassDef { id: ClassId(1), name: StringId(1), source_file: StringId::NONE });
//! let method = |id, name| MethodDef {
//!     id: MethodId(id), class: ClassId(1), name: StringId(name), signature: StringId::NONE, modifiers: 9,
//! };
//! w.method(&method(1, 2));
//! w.method(&method(2, 3));
//! let ev = |kind, method, ms: u64| TraceEvent { kind, method: MethodId(method), ticks: ms * 1_000_000, untraced: 0, cpu_ns: 0 };
//! let mut events = vec![ev(TraceKind::Enter, 1, 0)];
//! let mut at = 0;
//! for ms in [1, 2, 3] {
//!     events.push(ev(TraceKind::Enter, 2, at));
//!     events.push(ev(TraceKind::Exit, 2, at + ms));
//!     at += ms;
//! }
//! events.push(ev(TraceKind::Exit, 1, at + 1));
//! w.trace(&TraceBatch { thread: ThreadId(1), has_cpu: false, events });
//! let header = Header { ticks_per_second: 1_000_000_000, ..Default::default() };
//! let mut bytes = encode_file_start(&header);
//! bytes.extend(w.finish());
//!
//! let (stats, _) = TraceStats::from_bytes(&bytes, &TraceOptions::default()).unwrap();
//! let work = stats.method("demo.App.work").unwrap();
//! assert_eq!((work.calls, work.total_ns, work.p50_ns), (3, 6_000_000, Some(2_000_000)));
//! assert!((work.stddev_ns.unwrap() - 816_496.6).abs() < 1.0);
//! assert_eq!(stats.pair("demo.App.main", "demo.App.work").unwrap().calls, 3);
//!
//! let (tree, _) = CallTree::from_bytes(&bytes, &TraceOptions::default()).unwrap();
//! let main = tree.virtual_root_children()[0];
//! assert_eq!(tree.label(tree.node(main).method), "demo.App.main");
//! assert_eq!(tree.children(main).len(), 3);
//! assert_eq!(tree.node(main).self_ns, 1_000_000);
//! ```

mod aggregate;
mod complete;
mod diff;
mod engine;
mod export;
mod histogram;
mod read;
mod render;
mod stats;
mod tree;

#[cfg(test)]
mod tests;

use jscope_format::{Recording, TraceBatch};
use serde::Serialize;

pub use aggregate::aggregate_stats;
pub use complete::incomplete_note;
pub(crate) use diff::erfc;
pub use diff::{
    benjamini_hochberg, mann_whitney, normalise_thread, poisson_test, DiffOptions, MethodChange,
    NodeChange, OneSided, Presence, SideStats, TraceDiff, TreeDiff,
};
pub use engine::{Anomalies, Call, CallSink, CLOSED_BY_MISMATCH, THREW, UNFINISHED};
pub use read::{
    scan_bytes, scan_file, scan_file_with_progress, scan_recording, ScanProgress, TraceError,
};
pub use render::TreeView;
pub use stats::{fmt_ns, MethodStats, PairStats, SortKey};
pub use tree::{CallTree, Node, NodeRef, ThreadTree};

use engine::{Clock, MethodClasses, StackEngine};
use stats::StatsSink;
use tree::TreeSink;

use crate::ThreadMatcher;

/// How trace events are read.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// Methods to leave out, by `pkg.Class.method` label: a substring, or a glob
    /// with `*` and `?` that must match the whole label.
    pub hide: Vec<ThreadMatcher>,
    /// Cost of one probe in ns; defaults to the header's `trace.probe_cost_ns`.
    pub probe_cost_ns: Option<f64>,
}

impl TraceOptions {
    /// Leaves out the methods matching any of `patterns` (substrings or globs of
    /// `pkg.Class.method`, as `--hide` gives them); the recording's probe cost.
    pub fn hiding(patterns: &[String]) -> TraceOptions {
        TraceOptions {
            hide: patterns.iter().map(|p| ThreadMatcher::new(p)).collect(),
            probe_cost_ns: None,
        }
    }

    /// The probe cost to correct with, if any.
    pub fn probe_cost(&self, rec: &Recording) -> Option<f64> {
        self.probe_cost_ns.or_else(|| {
            rec.header
                .extra("trace.probe_cost_ns")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|c| c.is_finite() && *c >= 0.0)
        })
    }
}

/// Method and caller→callee statistics of a recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    /// True when built from call aggregates: no self time, stddev or percentiles.
    pub aggregate_mode: bool,
    /// False when some method had more than 4096 calls: its percentiles come from a
    /// log-linear histogram and are within 0.4%.
    pub percentiles_exact: bool,
    pub events: u64,
    pub calls: u64,
    /// The agent's `trace.events_dropped` counter: events lost when a thread's
    /// trace ring was full. The trace is incomplete when it is not 0.
    pub dropped_events: u64,
    pub probe_cost_ns: Option<f64>,
    /// The perf event the agent counted per traced call (`tracecounter=`, the
    /// header's `trace.counter`); then each method's `counter` holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    pub anomalies: Anomalies,
    pub methods: Vec<MethodStats>,
    /// Sorted by total time, largest first.
    pub pairs: Vec<PairStats>,
}

/// Feeds batches to an engine created from the first batch's recording, so one
/// code path serves streamed and decoded recordings.
struct Feeder<S> {
    sink: Option<S>,
    engine: Option<StackEngine<S>>,
    options: TraceOptions,
    /// See [`StackEngine::forget_idle_threads`].
    forget_idle_threads: bool,
}

impl<S: CallSink> Feeder<S> {
    fn new(sink: S, options: &TraceOptions) -> Self {
        Feeder {
            sink: Some(sink),
            engine: None,
            options: options.clone(),
            forget_idle_threads: false,
        }
    }

    fn engine(&mut self, rec: &Recording) -> &mut StackEngine<S> {
        let (sink, options, forget) = (&mut self.sink, &self.options, self.forget_idle_threads);
        self.engine.get_or_insert_with(|| {
            let classes = MethodClasses::new(options.hide.clone());
            let cost = options.probe_cost(rec).unwrap_or(0.0);
            let sink = sink.take().expect("the sink moves into the engine once");
            let mut engine = StackEngine::new(sink, Clock::of(rec), classes, cost);
            engine.forget_idle_threads = forget;
            engine
        })
    }

    fn batch(&mut self, rec: &Recording, b: &TraceBatch) {
        self.engine(rec).batch(rec, b);
    }

    fn finish(mut self, rec: &Recording) -> StackEngine<S> {
        self.engine(rec);
        let mut engine = self.engine.expect("created above");
        engine.finish();
        engine
    }
}

fn events<S>(e: &StackEngine<S>) -> u64 {
    e.threads.values().map(|t| t.events).sum()
}

impl TraceStats {
    /// Statistics of a decoded recording: from its trace events, or from its call
    /// aggregates when it has no trace events.
    pub fn of(rec: &Recording, options: &TraceOptions) -> TraceStats {
        let mut feeder = Feeder::new(StatsSink::default(), options);
        scan_recording(rec, |r, b| feeder.batch(r, b));
        Self::finish(feeder, rec, options)
    }

    /// Statistics streamed from a recording's bytes (trace batches are not kept);
    /// returns the recording without its traces, for its header and damage.
    pub fn from_bytes(
        bytes: &[u8],
        options: &TraceOptions,
    ) -> Result<(TraceStats, Recording), TraceError> {
        let mut feeder = Feeder::new(StatsSink::default(), options);
        let rec = scan_bytes(bytes, |r, b| feeder.batch(r, b))?;
        Ok((Self::finish(feeder, &rec, options), rec))
    }

    /// Statistics streamed from a recording file, one chunk at a time (memory is
    /// the per-thread stacks and per-method totals, whatever the file's size),
    /// calling `progress` after each chunk; returns the recording without its
    /// traces too.
    pub fn from_file(
        path: &std::path::Path,
        options: &TraceOptions,
        progress: &mut dyn FnMut(ScanProgress),
    ) -> Result<(TraceStats, Recording), TraceError> {
        let mut feeder = Feeder::new(StatsSink::default(), options);
        let rec = scan_file_with_progress(path, progress, |r, b| feeder.batch(r, b))?;
        Ok((Self::finish(feeder, &rec, options), rec))
    }

    fn finish(feeder: Feeder<StatsSink>, rec: &Recording, options: &TraceOptions) -> TraceStats {
        let engine = feeder.finish(rec);
        let n = events(&engine);
        if n == 0 && !rec.call_aggregates.is_empty() {
            return aggregate_stats(rec);
        }
        let mut stats = engine.sink.finish(rec, engine.anomalies, n);
        stats.probe_cost_ns = options.probe_cost(rec);
        stats
    }
}

/// Runs the stack algorithm over a decoded recording into your own sink: every
/// finished call, in the order calls finish per thread, with the same numbers the
/// tree and the statistics get. Returns the sink and what did not fit the stacks.
pub fn replay<S: CallSink>(rec: &Recording, options: &TraceOptions, sink: S) -> (S, Anomalies) {
    let mut feeder = Feeder::new(sink, options);
    scan_recording(rec, |r, b| feeder.batch(r, b));
    let engine = feeder.finish(rec);
    (engine.sink, engine.anomalies)
}

/// [`replay`] fed batch by batch as a stream arrives (the collector's chunks): a
/// call reaches the sink when its exit arrives, however many batches later, with
/// the numbers `replay` over the whole stream gives it. `finish` closes the calls
/// still open at their thread's last event, as `replay` does at the end.
///
/// Memory is the open calls: a thread whose calls have all returned at the end of
/// a batch is forgotten, so its later calls get a new [`Call::thread_index`] and
/// their [`Call::enter_event`] and [`Call::exit_event`] count from that batch on.
pub struct Replayer<S> {
    feeder: Feeder<S>,
}

impl<S: CallSink> Replayer<S> {
    pub fn new(sink: S, options: &TraceOptions) -> Self {
        let mut feeder = Feeder::new(sink, options);
        feeder.forget_idle_threads = true;
        Replayer { feeder }
    }

    /// One batch; `rec` holds the dictionaries declared so far (the first batch's
    /// header sets the clock and the probe cost).
    pub fn batch(&mut self, rec: &Recording, b: &TraceBatch) {
        self.feeder.batch(rec, b);
    }

    /// The sink, to take the calls finished so far.
    pub fn sink_mut(&mut self) -> &mut S {
        match (&mut self.feeder.engine, &mut self.feeder.sink) {
            (Some(e), _) => &mut e.sink,
            (None, Some(s)) => s,
            (None, None) => unreachable!("the sink is in the engine or the feeder"),
        }
    }

    /// Closes the open calls and returns the sink and the anomalies.
    pub fn finish(self, rec: &Recording) -> (S, Anomalies) {
        let engine = self.feeder.finish(rec);
        (engine.sink, engine.anomalies)
    }
}

/// [`replay`] streamed from a recording's bytes; also returns the recording
/// without its traces.
pub fn replay_bytes<S: CallSink>(
    bytes: &[u8],
    options: &TraceOptions,
    sink: S,
) -> Result<(S, Anomalies, Recording), TraceError> {
    let mut feeder = Feeder::new(sink, options);
    let rec = scan_bytes(bytes, |r, b| feeder.batch(r, b))?;
    let engine = feeder.finish(&rec);
    Ok((engine.sink, engine.anomalies, rec))
}

/// Builds the tree and the statistics together.
#[derive(Default)]
struct TreeAndStats {
    tree: TreeSink,
    stats: StatsSink,
}

impl CallSink for TreeAndStats {
    #[inline]
    fn enter(&mut self, thread: u32, method: u32, enter_ns: u64, depth: u32) -> u32 {
        self.tree.enter(thread, method, enter_ns, depth)
    }

    #[inline]
    fn exit(&mut self, call: &Call) {
        self.tree.exit(call);
        self.stats.exit(call);
    }
}

/// The call tree and the statistics in one pass over a recording's bytes (the
/// events are decoded once), and the recording without its traces.
pub fn analyse_bytes(
    bytes: &[u8],
    options: &TraceOptions,
) -> Result<(CallTree, TraceStats, Recording), TraceError> {
    let mut feeder = Feeder::new(TreeAndStats::default(), options);
    let rec = scan_bytes(bytes, |r, b| feeder.batch(r, b))?;
    let engine = feeder.finish(&rec);
    let cost = options.probe_cost(&rec);
    let n = events(&engine);
    let both = engine.sink;
    let tree = both
        .tree
        .finish(&rec, &engine.threads, engine.anomalies, cost);
    let mut stats = both.stats.finish(&rec, engine.anomalies, n);
    stats.probe_cost_ns = cost;
    Ok((tree, stats, rec))
}

impl CallTree {
    /// The call tree of a decoded recording.
    pub fn of(rec: &Recording, options: &TraceOptions) -> CallTree {
        let mut feeder = Feeder::new(TreeSink::default(), options);
        scan_recording(rec, |r, b| feeder.batch(r, b));
        Self::finish(feeder, rec, options)
    }

    /// The call tree streamed from a recording's bytes (batches are not kept, only
    /// the nodes); returns the recording without its traces too.
    pub fn from_bytes(
        bytes: &[u8],
        options: &TraceOptions,
    ) -> Result<(CallTree, Recording), TraceError> {
        let mut feeder = Feeder::new(TreeSink::default(), options);
        let rec = scan_bytes(bytes, |r, b| feeder.batch(r, b))?;
        Ok((Self::finish(feeder, &rec, options), rec))
    }

    /// The call tree streamed from a recording file, one chunk at a time (only
    /// the nodes are kept), calling `progress` after each chunk.
    pub fn from_file(
        path: &std::path::Path,
        options: &TraceOptions,
        progress: &mut dyn FnMut(ScanProgress),
    ) -> Result<(CallTree, Recording), TraceError> {
        let mut feeder = Feeder::new(TreeSink::default(), options);
        let rec = scan_file_with_progress(path, progress, |r, b| feeder.batch(r, b))?;
        Ok((Self::finish(feeder, &rec, options), rec))
    }

    fn finish(feeder: Feeder<TreeSink>, rec: &Recording, options: &TraceOptions) -> CallTree {
        let engine = feeder.finish(rec);
        let cost = options.probe_cost(rec);
        engine
            .sink
            .finish(rec, &engine.threads, engine.anomalies, cost)
    }
}
