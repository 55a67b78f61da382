//! The writer's side of tracing: takes the events waiting in every thread's ring,
//! names probe ids with MethodDef records (through the writer's dictionaries) and
//! encodes them as TraceBatch records straight from the rings' slots.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use std::time::{Duration, Instant};

use jscope_format::{CallAggregate, CallPair, ChunkWriter, TraceEvent, TraceKind};
use jscope_format::{EventKind, JvmEvent, MethodId, ThreadId};

use super::aggregate::{self, PairKey, PairTotals};
use super::probe::{self, RawEvent, ThreadRing};
use super::registry;
use crate::clock;
use crate::java_threads::ThreadKey;
use crate::symbols::Symbols;

/// Events per TraceBatch record, so no record grows without bound.
const BATCH_EVENTS: usize = 8192;
/// Batches taken from one ring per drain, so one busy thread cannot keep the
/// writer from the others.
const BATCHES_PER_TAKE: usize = 64;
/// Once tracing has stopped, the writer's last drains take this many batches per
/// ring (2 Mi events); whatever is left then is counted as dropped.
const FINAL_BATCHES: usize = 256;

/// What one thread produced since the last take.
pub struct RawBatch {
    pub key: ThreadKey,
    /// The recording thread, once known for this ring or table.
    pub thread: Option<u32>,
    source: usize,
    payload: Payload,
}

enum Payload {
    /// Events waiting in this ring, encoded from it in place by `write`.
    Events(Arc<ThreadRing>),
    Pairs(Vec<(PairKey, PairTotals)>),
}

/// Aggregate totals are taken this often (and once more when tracing stops).
const AGGREGATE_EVERY: Duration = Duration::from_secs(1);

/// The writer's tracing state for one recording.
#[derive(Default)]
pub struct TraceDrain {
    /// Probe index -> recording method id (0: not defined yet); probe indexes
    /// are dense, so a vector is the fastest map.
    methods: Vec<u32>,
    /// Ring -> recording thread, resolved at the ring's first drain, while its
    /// thread surely lives (a Linux thread id can later belong to another Java
    /// thread, as main's does to DestroyJavaVM).
    threads: HashMap<usize, u32>,
    /// Recording thread -> trace events written for it so far: where its
    /// `Thread.start` calls fall among its events.
    thread_events: HashMap<u32, u64>,
    /// Recording thread -> the time of its latest event written: no later event
    /// of it is written before that (see [`TraceDrain::encode`]).
    last_ns: HashMap<u32, u64>,
    written: u64,
    has_cpu: bool,
    /// Probe ticks to recording ticks, refreshed at each take.
    clock: Option<probe::TickMapper>,
    last_aggregate: Option<Instant>,
    /// (probe index, method id) of the last lookup.
    last_method: (u32, u32),
    pairs_written: u64,
    /// The drain in progress: aggregate batches, then rings in turn.
    pending: Vec<RawBatch>,
    rings: Vec<Arc<probe::ThreadRing>>,
    ring_pos: usize,
    ring_batches: usize,
    batches_per_ring: usize,
}

impl TraceDrain {
    /// Starts a drain: takes the aggregate tables if due and the list of rings
    /// (forgetting those of ended threads once empty); [`TraceDrain::next_batch`]
    /// then hands out one batch at a time, so a drain holds one batch in memory
    /// and the writer can cut chunks between batches.
    pub fn begin_take(&mut self) {
        self.has_cpu = probe::with_cpu();
        self.clock = Some(probe::tick_mapper());
        probe::writer_alive();
        let mut pending = Vec::new();
        self.take_aggregates(&mut pending);
        self.pending = pending;
        let mut rings = probe::rings();
        // A new ring may get a forgotten one's address (virtual threads come
        // and go by the thousand) and must not inherit its thread.
        probe::forget_ended(&mut rings, |gone| {
            self.threads.remove(&(Arc::as_ptr(gone) as usize));
        });
        self.rings = rings.clone();
        drop(rings);
        self.batches_per_ring = if probe::session_running() {
            BATCHES_PER_TAKE
        } else {
            FINAL_BATCHES
        };
        self.ring_pos = 0;
        self.ring_batches = 0;
    }

    /// The next batch of this drain: aggregates first, then each ring's events
    /// up to its share.
    pub fn next_batch(&mut self) -> Option<RawBatch> {
        if let Some(batch) = self.pending.pop() {
            return Some(batch);
        }
        while let Some(ring) = self.rings.get(self.ring_pos).cloned() {
            if self.ring_batches >= self.batches_per_ring || ring.is_empty() {
                self.ring_pos += 1;
                self.ring_batches = 0;
                continue;
            }
            self.ring_batches += 1;
            let key = Arc::as_ptr(&ring) as usize;
            return Some(RawBatch {
                key: ring.thread,
                thread: self.threads.get(&key).copied(),
                source: key,
                payload: Payload::Events(ring),
            });
        }
        self.rings.clear();
        None
    }

    /// Encodes one thread's events as a TraceBatch of recording thread `thread`.
    pub fn write(
        &mut self,
        raw: RawBatch,
        thread: u32,
        out: &mut ChunkWriter,
        symbols: &mut Symbols,
    ) {
        self.threads.insert(raw.source, thread);
        match raw.payload {
            Payload::Events(ring) => {
                ring.drain_slice(BATCH_EVENTS, |raw| {
                    self.write_events(raw, thread, out, symbols)
                });
            }
            Payload::Pairs(pairs) => self.write_pairs(&pairs, thread, out, symbols),
        }
    }

    /// Every thread's aggregate totals, once per AGGREGATE_EVERY and whenever
    /// the session has stopped (so the writer's last drain gets the rest). A new
    /// table is handed over at once, even empty, so that its thread is named
    /// while it surely lives.
    fn take_aggregates(&mut self, out: &mut Vec<RawBatch>) {
        let due = !probe::session_running()
            || self
                .last_aggregate
                .is_none_or(|t| t.elapsed() >= AGGREGATE_EVERY);
        if due {
            self.last_aggregate = Some(Instant::now());
        }
        let mut tables = probe::tables();
        for table in tables.iter() {
            let key = Arc::as_ptr(table) as usize;
            let known = self.threads.contains_key(&key);
            let pairs = if due { table.take() } else { Vec::new() };
            if pairs.is_empty() && known {
                continue;
            }
            out.push(RawBatch {
                key: table.thread,
                thread: self.threads.get(&key).copied(),
                source: key,
                payload: Payload::Pairs(pairs),
            });
        }
        if due {
            aggregate::forget_ended(&mut tables);
        }
    }

    fn write_pairs(
        &mut self,
        pairs: &[(PairKey, PairTotals)],
        thread: u32,
        out: &mut ChunkWriter,
        symbols: &mut Symbols,
    ) {
        if pairs.is_empty() {
            return; // only the thread was named
        }
        let clock = self.clock.unwrap_or_else(probe::tick_mapper);
        let pairs = pairs
            .iter()
            .map(|&((caller, callee), t)| CallPair {
                caller: if caller == 0 {
                    MethodId::NONE
                } else {
                    MethodId(self.method_id(caller, out, symbols))
                },
                callee: MethodId(self.method_id(callee, out, symbols)),
                calls: t.calls,
                total_ns: clock.duration_ns(t.total),
                min_ns: clock.duration_ns(t.min),
                max_ns: clock.duration_ns(t.max),
            })
            .collect::<Vec<_>>();
        self.pairs_written += pairs.len() as u64;
        out.call_aggregate(&CallAggregate {
            thread: ThreadId(thread),
            ticks: clock::monotonic_ns(),
            pairs,
        });
    }

    /// A batch of nobody's events (no recording thread): taken and left out.
    pub fn skip(&mut self, raw: RawBatch) {
        if let Payload::Events(ring) = raw.payload {
            ring.drain_slice(BATCH_EVENTS, |_| ());
        }
    }

    /// Encodes a thread's raw events straight into the chunk: their methods
    /// defined first, then the events between `Thread.start` markers as trace
    /// batches, each marker as a start_call event between them.
    fn write_events(
        &mut self,
        raw: &[RawEvent],
        thread: u32,
        out: &mut ChunkWriter,
        symbols: &mut Symbols,
    ) {
        let mut written = self.thread_events.get(&thread).copied().unwrap_or(0);
        let mut floor = self.last_ns.get(&thread).copied().unwrap_or(0);
        let mut from = 0;
        for (i, e) in raw.iter().enumerate() {
            if e.head & 3 != probe::KIND_START {
                self.define(e.head >> 2, out, symbols);
                continue;
            }
            written += self.encode(&raw[from..i], thread, &mut floor, out);
            from = i + 1;
            let ticks = self.clock.map_or(e.ticks, |c| c.ns(e.ticks)).max(floor);
            floor = ticks;
            out.event(&JvmEvent::on(
                ThreadId(thread),
                ticks,
                EventKind::ThreadStartCall {
                    started: e.cpu as i64,
                    trace_events: written,
                },
            ));
        }
        written += self.encode(&raw[from..], thread, &mut floor, out);
        self.thread_events.insert(thread, written);
        self.last_ns.insert(thread, floor);
    }

    /// Encodes trace events (no start markers) whose methods are defined as one
    /// TraceBatch; returns how many. No event is placed before `floor`, the
    /// thread's latest event so far, which it then raises to the batch's last.
    /// A batch maps its stamps with one mapper, a rising line; but a take maps
    /// events stamped after its mapper was made, and the next mapper's line
    /// (joined at that moment, with a slope measured anew) may place the
    /// thread's next events a little lower: an exit before its enter, by up to
    /// a few hundred ns under load.
    #[inline]
    fn encode(
        &mut self,
        raw: &[RawEvent],
        thread: u32,
        floor: &mut u64,
        out: &mut ChunkWriter,
    ) -> u64 {
        let methods = &self.methods;
        let clock = self.clock;
        let low = *floor;
        let ns = move |stamp: u64| clock.map_or(stamp, |c| c.ns(stamp)).max(low);
        if let Some(last) = raw.last() {
            *floor = ns(last.ticks);
        }
        out.trace_mapped(ThreadId(thread), self.has_cpu, raw, |e| TraceEvent {
            kind: match e.head & 3 {
                probe::KIND_ENTER => TraceKind::Enter,
                probe::KIND_EXIT => TraceKind::Exit,
                _ => TraceKind::Throw,
            },
            method: MethodId(methods.get((e.head >> 2) as usize).copied().unwrap_or(0)),
            ticks: ns(e.ticks),
            untraced: e.untraced,
            cpu_ns: e.cpu,
        });
        self.written += raw.len() as u64;
        raw.len() as u64
    }

    /// Makes sure probe `index` has its recording method id (0 when the registry
    /// does not know it).
    #[inline]
    fn define(&mut self, index: u32, out: &mut ChunkWriter, symbols: &mut Symbols) {
        if self.last_method.0 == index && index != 0 {
            return;
        }
        self.method_id(index, out, symbols);
    }

    fn method_id(&mut self, index: u32, out: &mut ChunkWriter, symbols: &mut Symbols) -> u32 {
        // Consecutive events are mostly of the same method (its enter and exit).
        if self.last_method.0 == index && index != 0 {
            return self.last_method.1;
        }
        let slot = index as usize;
        let id = match self.methods.get(slot) {
            Some(&id) if id != 0 => id,
            _ => {
                let id = registry::method(index).map_or(0, |m| symbols.define(out, &m.names()));
                if self.methods.len() <= slot {
                    self.methods.resize(slot + 1, 0);
                }
                self.methods[slot] = id;
                id
            }
        };
        self.last_method = (index, id);
        id
    }

    /// Counters for the recording: events written and dropped, plus the session's.
    pub fn counter_values(&self) -> Vec<(&'static str, u64)> {
        let session = super::counter_values();
        if session.is_empty() {
            return Vec::new(); // tracing was never used in this process
        }
        let stopped = !probe::session_running();
        let dropped: u64 = probe::rings()
            .iter()
            .map(|r| r.dropped.load(Ordering::Relaxed) + if stopped { r.pending() } else { 0 })
            .sum();
        let mut values = vec![
            ("trace.events_written", self.written),
            ("trace.pairs_written", self.pairs_written),
            ("trace.events_dropped", dropped + probe::dropped_by_ended()),
            ("trace.waits", probe::waits().0),
            ("trace.waited_ns", probe::waits().1),
        ];
        values.extend(session);
        values
    }
}
