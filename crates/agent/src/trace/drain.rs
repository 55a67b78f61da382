//! The writer's side of tracing: takes the events waiting in every thread's ring,
//! names probe ids with MethodDef records (through the writer's dictionaries) and
//! encodes them as TraceBatch records.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use jscope_format::{ChunkWriter, TraceBatch, TraceEvent, TraceKind};

use super::probe::{self, RawEvent};
use super::registry;
use crate::symbols::Symbols;

/// Events per TraceBatch record, so no record grows without bound.
const BATCH_EVENTS: usize = 8192;

/// One thread's events taken from its ring.
pub struct RawBatch {
    pub tid: u32,
    pub env: usize,
    /// The recording thread, once known for this ring.
    pub thread: Option<u32>,
    ring: usize,
    pub events: Vec<RawEvent>,
}

/// The writer's tracing state for one recording.
#[derive(Default)]
pub struct TraceDrain {
    /// Probe index -> recording method id.
    methods: HashMap<u32, u32>,
    /// Ring -> recording thread, resolved at the ring's first drain, while its
    /// thread surely lives (a Linux thread id can later belong to another Java
    /// thread, as main's does to DestroyJavaVM).
    threads: HashMap<usize, u32>,
    written: u64,
    has_cpu: bool,
    /// Probe ticks to recording ticks, refreshed at each take.
    clock: Option<probe::TickMapper>,
}

impl TraceDrain {
    /// Everything the rings hold now, per thread; rings of ended threads are
    /// forgotten once empty.
    pub fn take(&mut self) -> Vec<RawBatch> {
        self.has_cpu = probe::with_cpu();
        self.clock = Some(probe::TickMapper::now());
        let mut rings = probe::rings();
        let mut out = Vec::new();
        for ring in rings.iter() {
            let mut events = Vec::new();
            ring.drain(|e| events.push(*e));
            let key = Arc::as_ptr(ring) as usize;
            for chunk in events.chunks(BATCH_EVENTS) {
                out.push(RawBatch {
                    tid: ring.tid,
                    env: ring.env,
                    thread: self.threads.get(&key).copied(),
                    ring: key,
                    events: chunk.to_vec(),
                });
            }
        }
        probe::forget_ended(&mut rings);
        out
    }

    /// Encodes one thread's events as a TraceBatch of recording thread `thread`.
    pub fn write(
        &mut self,
        raw: &RawBatch,
        thread: u32,
        out: &mut ChunkWriter,
        symbols: &mut Symbols,
    ) {
        self.threads.insert(raw.ring, thread);
        let events = raw
            .events
            .iter()
            .map(|e| TraceEvent {
                kind: TraceKind::from_u8((e.head & 3) as u8).unwrap_or(TraceKind::Throw),
                method: self.method_id(e.head >> 2, out, symbols),
                ticks: self.clock.map_or(e.ticks, |c| c.ns(e.ticks)),
                untraced: e.untraced,
                cpu_ns: e.cpu,
            })
            .collect();
        out.trace(&TraceBatch {
            thread,
            has_cpu: self.has_cpu,
            events,
        });
        self.written += raw.events.len() as u64;
    }

    fn method_id(&mut self, index: u32, out: &mut ChunkWriter, symbols: &mut Symbols) -> u32 {
        if let Some(&id) = self.methods.get(&index) {
            return id;
        }
        let id = registry::method(index).map_or(0, |m| symbols.define(out, &m.names()));
        self.methods.insert(index, id);
        id
    }

    /// Counters for the recording: events written and dropped, plus the session's.
    pub fn counter_values(&self) -> Vec<(&'static str, u64)> {
        let session = super::counter_values();
        if session.is_empty() {
            return Vec::new(); // tracing was never used in this process
        }
        let dropped: u64 = probe::rings()
            .iter()
            .map(|r| r.dropped.load(Ordering::Relaxed))
            .sum();
        let mut values = vec![
            ("trace.events_written", self.written),
            ("trace.events_dropped", dropped + probe::dropped_by_ended()),
        ];
        values.extend(session);
        values
    }
}
