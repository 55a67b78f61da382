//! Writing: the file prelude and `ChunkWriter`, which buffers records for one chunk.

use crate::chunk::{frame_chunk, frame_chunk_into, frame_chunk_plain, ChunkKind, MAGIC};
use crate::events::{self, encode_event, JvmEvent, UserEventDef};
use crate::ids::{StackId, StringId, ThreadId};
use crate::model::*;
use crate::record::{
    encode_aggregate, encode_frames, encode_header, encode_thread, encode_trace_with, tag,
    DeltaEncoder, Record,
};
use crate::remote::{encode_remote, RemoteCall};
use crate::request::Request;
use crate::summary::SummaryBuilder;
use crate::varint::{put_i64, put_str, put_u64};

/// Magic and header chunk: the first bytes of every recording file and agent stream.
pub fn encode_file_start(header: &Header) -> Vec<u8> {
    let mut payload = Vec::new();
    put_u64(&mut payload, header.start_ticks);
    let mut body = Vec::new();
    encode_header(&mut body, header);
    put_record(&mut payload, tag::HEADER, &body);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&frame_chunk(ChunkKind::Header, &payload));
    out
}

fn encode_counters(out: &mut Vec<u8>, dt: i64, values: &[(&str, u64)]) {
    put_i64(out, dt);
    put_u64(out, values.len() as u64);
    for (name, v) in values {
        put_str(out, name);
        put_u64(out, *v);
    }
}

fn put_record(out: &mut Vec<u8>, t: u64, body: &[u8]) {
    put_u64(out, t);
    put_u64(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// Accumulates the records of one data chunk.
///
/// The chunk's time base is the first timestamp written to it, so each chunk decodes
/// on its own once the dictionaries it refers to are known.
#[derive(Default)]
pub struct ChunkWriter {
    records: Vec<u8>,
    /// The finished chunk's payload, kept so each chunk does not allocate it anew.
    payload: Vec<u8>,
    body: Vec<u8>,
    /// Where trace records are encoded: grown, never cleared (see
    /// `encode_trace_with`).
    scratch: Vec<u8>,
    base: Option<u64>,
    times: DeltaEncoder,
    summary: SummaryBuilder,
}

impl ChunkWriter {
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, t: u64) {
        put_record(&mut self.records, t, &self.body);
        self.body.clear();
        self.summary.count(t);
    }

    fn delta(&mut self, timeline: ThreadId, ticks: u64) -> i64 {
        if self.base.is_none() {
            self.base = Some(ticks);
            self.times.reset(ticks);
        }
        self.times.delta(timeline, ticks)
    }

    pub fn string(&mut self, id: StringId, s: &str) {
        self.string_record(tag::STRING, id, s);
    }

    /// A string for the records of this chunk only ([`Record::TransientString`]).
    pub fn transient_string(&mut self, id: StringId, s: &str) {
        self.string_record(tag::TRANSIENT_STRING, id, s);
    }

    fn string_record(&mut self, tag: u64, id: StringId, s: &str) {
        put_u64(&mut self.body, id.into());
        put_str(&mut self.body, s);
        self.push(tag);
    }

    pub fn class(&mut self, c: &ClassDef) {
        for v in [c.id.0, c.name.0, c.source_file.0] {
            put_u64(&mut self.body, v.into());
        }
        self.push(tag::CLASS);
    }

    pub fn method(&mut self, m: &MethodDef) {
        for v in [m.id.0, m.class.0, m.name.0, m.signature.0, m.modifiers] {
            put_u64(&mut self.body, v.into());
        }
        self.push(tag::METHOD);
    }

    pub fn thread(&mut self, t: &ThreadDef) {
        encode_thread(&mut self.body, t);
        self.push(tag::THREAD);
        self.summary
            .copy(tag::THREAD, ThreadId::NONE, None, |b, _| {
                encode_thread(b, t)
            });
    }

    pub fn stack(&mut self, id: StackId, frames_top_first: &[Frame]) {
        put_u64(&mut self.body, id.into());
        encode_frames(&mut self.body, frames_top_first);
        self.push(tag::STACK);
    }

    /// A dictionary record (string, class, method, thread, stack, user event name);
    /// other records (a transient string too) are not dictionary entries and are
    /// left out.
    pub fn dictionary_entry(&mut self, r: &Record) {
        match r {
            Record::String { id, value } => self.string(*id, value),
            Record::Class(c) => self.class(c),
            Record::Method(m) => self.method(m),
            Record::Thread(t) => self.thread(t),
            Record::Stack { id, frames } => self.stack(*id, frames),
            Record::UserEventDef(d) => self.user_event_def(d),
            _ => {}
        }
    }

    pub fn sample(&mut self, s: &Sample) {
        let dt = self.delta(s.thread, s.ticks);
        put_u64(&mut self.body, s.thread.into());
        put_i64(&mut self.body, dt);
        put_u64(&mut self.body, s.stack.into());
        self.body.push(s.mode as u8);
        put_u64(&mut self.body, s.weight_ns);
        put_u64(&mut self.body, s.state.into());
        // Trailing fields: left out when unset (the bytes as before); a request
        // needs the carrier before it.
        if s.carrier != ThreadId::NONE || s.request != 0 {
            put_u64(&mut self.body, s.carrier.into());
        }
        if s.request != 0 {
            put_u64(&mut self.body, s.request);
        }
        self.push(tag::SAMPLE);
        self.summary.saw(s.ticks);
    }

    pub fn snapshot(&mut self, s: &Snapshot) {
        let dt = self.delta(ThreadId::NONE, s.ticks);
        put_i64(&mut self.body, dt);
        put_u64(&mut self.body, s.interval_ns);
        put_u64(&mut self.body, s.threads.len() as u64);
        for t in &s.threads {
            for v in [t.thread.0, t.state, t.stack.0] {
                put_u64(&mut self.body, v.into());
            }
        }
        // Trailing: each thread's carrier, only when one of them ran on a carrier.
        if s.threads.iter().any(|t| t.carrier != ThreadId::NONE) {
            for t in &s.threads {
                put_u64(&mut self.body, t.carrier.into());
            }
        }
        self.push(tag::SNAPSHOT);
        self.summary.saw(s.ticks);
    }

    /// Cumulative counter totals (drops, failed walks by reason, ...) at `ticks`.
    pub fn counters(&mut self, ticks: u64, values: &[(&str, u64)]) {
        let dt = self.delta(ThreadId::NONE, ticks);
        encode_counters(&mut self.body, dt, values);
        self.push(tag::COUNTERS);
        self.summary
            .copy(tag::COUNTERS, ThreadId::NONE, Some(ticks), |b, dt| {
                encode_counters(b, dt, values)
            });
    }

    /// Method entries and exits of one thread, in order. The thread's timeline moves
    /// to the batch's last event.
    pub fn trace(&mut self, b: &TraceBatch) {
        self.trace_mapped(b.thread, b.has_cpu, &b.events, |e| *e);
    }

    /// The trace record [`ChunkWriter::trace`] writes for the batch of `thread`
    /// whose events `map` makes of `items` (in order; none writes nothing),
    /// without the batch: the agent's writer encodes its rings' slots straight
    /// into the chunk.
    #[inline]
    pub fn trace_mapped<E>(
        &mut self,
        thread: ThreadId,
        has_cpu: bool,
        items: &[E],
        map: impl Fn(&E) -> TraceEvent,
    ) {
        let (Some(first), Some(last)) = (items.first(), items.last()) else {
            return;
        };
        let last_ticks = map(last).ticks;
        let dt = self.delta(thread, map(first).ticks);
        let (len, kinds) = encode_trace_with(&mut self.scratch, thread, has_cpu, items, dt, map);
        self.times.delta(thread, last_ticks);
        put_record(&mut self.records, tag::TRACE, &self.scratch[..len]);
        self.summary.count(tag::TRACE);
        self.summary.trace.add_kinds(kinds);
        self.summary.saw(last_ticks);
    }

    /// Caller→callee totals of one thread (aggregate tracing).
    pub fn call_aggregate(&mut self, a: &CallAggregate) {
        let dt = self.delta(a.thread, a.ticks);
        encode_aggregate(&mut self.body, a, dt);
        self.push(tag::CALL_AGGREGATE);
    }

    /// A JVM event (thread, monitor, GC, allocation, ..., user event).
    pub fn event(&mut self, e: &JvmEvent) {
        let dt = self.delta(e.thread, e.ticks);
        let t = encode_event(&mut self.body, e, dt);
        self.push(t);
        self.summary.saw(e.ticks);
    }

    /// A remote call as this JVM saw it (client or server side).
    pub fn remote(&mut self, c: &RemoteCall) {
        let dt = self.delta(c.thread, c.ticks);
        let t = encode_remote(&mut self.body, c, dt);
        self.push(t);
    }

    /// A request served, written when it ended.
    pub fn request(&mut self, r: &Request) {
        let dt = self.delta(r.thread, r.ticks);
        crate::request::encode_request(&mut self.body, r, dt);
        self.push(crate::request::TAG_REQUEST);
    }

    /// Declares a user event's name.
    pub fn user_event_def(&mut self, d: &UserEventDef) {
        put_u64(&mut self.body, d.id.into());
        put_u64(&mut self.body, d.name.into());
        self.push(events::tag::USER_EVENT_DEF);
    }

    /// Marks a clean end of the recording.
    pub fn end(&mut self, ticks: u64) {
        let dt = self.delta(ThreadId::NONE, ticks);
        put_i64(&mut self.body, dt);
        self.push(tag::END);
        self.summary
            .copy(tag::END, ThreadId::NONE, Some(ticks), |b, dt| {
                put_i64(b, dt)
            });
    }

    /// Writes a record of a kind this crate does not define (for forward-compatibility tests
    /// and for extensions); readers that do not know `tag` skip it.
    pub fn raw_record(&mut self, tag: u64, body: &[u8]) {
        put_record(&mut self.records, tag, body);
        self.summary.count(tag);
    }

    /// Uncompressed bytes buffered so far.
    pub fn raw_len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Frames the buffered records as one chunk and resets the writer for the next.
    pub fn finish(&mut self) -> Vec<u8> {
        self.summary = SummaryBuilder::default();
        self.finish_data()
    }

    /// As [`ChunkWriter::finish`], preceded by the chunk's summary chunk (see
    /// `ChunkKind::Summary`): what files get, so `jscope info` reads them without
    /// decompressing. Streams to a collector take [`ChunkWriter::finish_parts`]'s
    /// data chunk alone.
    pub fn finish_indexed(&mut self) -> Vec<u8> {
        let (mut summary, data) = self.finish_parts();
        summary.extend_from_slice(&data);
        summary
    }

    /// The summary chunk and the data chunk it describes, for a writer that sends
    /// the data chunk elsewhere too.
    pub fn finish_parts(&mut self) -> (Vec<u8>, Vec<u8>) {
        let data = self.finish_data();
        let payload = self.summary.finish(data.len());
        let mut summary = Vec::with_capacity(payload.len() + 16);
        frame_chunk_plain(&mut summary, ChunkKind::Summary, &payload);
        (summary, data)
    }

    fn finish_data(&mut self) -> Vec<u8> {
        self.payload.clear();
        put_u64(&mut self.payload, self.base.unwrap_or(0));
        self.payload.extend_from_slice(&self.records);
        self.records.clear();
        self.base = None;
        let mut out = Vec::with_capacity(self.payload.len() / 2);
        frame_chunk_into(&mut out, ChunkKind::Data, &self.payload);
        out
    }
}
