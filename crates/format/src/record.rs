//! Records: the typed entries of a chunk payload, and their encoding.
//!
//! ```text
//! payload = base_ticks:varint record*
//! record  = tag:varint len:varint body[len]
//! ```
//! Readers skip records whose tag they do not know, so newer writers may add kinds.
//! Timestamps are zigzag deltas from the previous timestamp on the same timeline in
//! the same chunk: a sample's timeline is its thread, process-wide events share
//! timeline 0. Every timeline starts from the chunk's `base_ticks`.

use std::collections::HashMap;

use crate::events::{self, decode_event, JvmEvent, UserEventDef};
use crate::ids::{MethodId, StackId, StringId, ThreadId};
use crate::model::*;
use crate::remote::{self, decode_remote, RemoteCall};
use crate::request::{self, decode_request, Request};
use crate::varint::{put_i64, put_str, put_u64, write_i64, write_u64, Cursor, MAX_VARINT};
use crate::FormatError;

pub(crate) mod tag {
    pub const HEADER: u64 = 1;
    pub const STRING: u64 = 2;
    pub const CLASS: u64 = 3;
    pub const METHOD: u64 = 4;
    pub const THREAD: u64 = 5;
    pub const STACK: u64 = 6;
    /// A string valid in its own chunk only (see `Record::TransientString`).
    pub const TRANSIENT_STRING: u64 = 8;
    pub const SAMPLE: u64 = 16;
    pub const SNAPSHOT: u64 = 17;
    pub const COUNTERS: u64 = 18;
    pub const END: u64 = 19;
    pub const TRACE: u64 = 20;
    pub const CALL_AGGREGATE: u64 = 21;
    /// Only in summary chunks (see `summary.rs`).
    pub const SUMMARY: u64 = 22;
}

/// One decoded record, with absolute timestamps.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Header(Box<Header>),
    String {
        id: StringId,
        value: String,
    },
    /// A string declared for the records of its own chunk only (a request's
    /// path or traceparent): read as any string, never kept in a dictionary
    /// that is declared again (a collector's, a segment's).
    TransientString {
        id: StringId,
        value: String,
    },
    Class(ClassDef),
    Method(MethodDef),
    Thread(ThreadDef),
    Stack {
        id: StackId,
        frames: Vec<Frame>,
    },
    Sample(Sample),
    Snapshot(Snapshot),
    Counters {
        ticks: u64,
        values: Vec<(String, u64)>,
    },
    End {
        ticks: u64,
    },
    Trace(TraceBatch),
    CallAggregate(CallAggregate),
    Event(JvmEvent),
    Remote(RemoteCall),
    Request(Request),
    UserEventDef(UserEventDef),
    /// A record kind this reader does not know; skipped.
    Unknown {
        tag: u64,
    },
}

/// Turns absolute timestamps into per-timeline deltas (writer side).
#[derive(Default)]
pub(crate) struct DeltaEncoder {
    base: u64,
    last: HashMap<ThreadId, u64>,
}

impl DeltaEncoder {
    pub(crate) fn reset(&mut self, base: u64) {
        self.base = base;
        self.last.clear();
    }

    pub(crate) fn delta(&mut self, timeline: ThreadId, ticks: u64) -> i64 {
        let prev = self.last.insert(timeline, ticks).unwrap_or(self.base);
        ticks.wrapping_sub(prev) as i64
    }
}

/// Undoes `DeltaEncoder` (reader side).
pub(crate) struct DeltaDecoder {
    base: u64,
    last: HashMap<ThreadId, u64>,
}

impl DeltaDecoder {
    pub(crate) fn new(base: u64) -> DeltaDecoder {
        DeltaDecoder {
            base,
            last: HashMap::new(),
        }
    }

    fn absolute(&mut self, timeline: ThreadId, delta: i64) -> u64 {
        let prev = self.last.get(&timeline).copied().unwrap_or(self.base);
        let ticks = prev.wrapping_add(delta as u64);
        self.last.insert(timeline, ticks);
        ticks
    }
}

pub(crate) fn encode_header(out: &mut Vec<u8>, h: &Header) {
    let pairs = header_pairs(h);
    put_u64(out, pairs.len() as u64);
    for (k, v) in &pairs {
        put_str(out, k);
        put_str(out, v);
    }
}

fn header_pairs(h: &Header) -> Vec<(String, String)> {
    let mut p: Vec<(String, String)> = [
        ("agent_version", h.agent_version.clone()),
        ("pid", h.pid.to_string()),
        ("host", h.host.clone()),
        ("command_line", h.command_line.clone()),
        ("vm_name", h.vm_name.clone()),
        ("vm_vendor", h.vm_vendor.clone()),
        ("vm_version", h.vm_version.clone()),
        ("java_version", h.java_version.clone()),
        ("os", h.os.clone()),
        ("arch", h.arch.clone()),
        ("start_wall_ns", h.start_wall_ns.to_string()),
        ("start_ticks", h.start_ticks.to_string()),
        ("ticks_per_second", h.ticks_per_second.to_string()),
        ("modes", h.modes.clone()),
        ("interval_ns", h.interval_ns.to_string()),
        ("max_depth", h.max_depth.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    p.extend(h.extra.iter().cloned());
    p
}

fn decode_header(c: &mut Cursor) -> Result<Header, FormatError> {
    let n = c.u64()?;
    let mut h = Header::default();
    for _ in 0..n {
        let (k, v) = (c.string()?, c.string()?);
        set_header_field(&mut h, k, v)?;
    }
    Ok(h)
}

fn set_header_field(h: &mut Header, k: String, v: String) -> Result<(), FormatError> {
    fn num<T: std::str::FromStr>(k: &str, v: &str) -> Result<T, FormatError> {
        v.parse()
            .map_err(|_| FormatError::Malformed(format!("header field {k}={v:?} is not a number")))
    }
    match k.as_str() {
        "agent_version" => h.agent_version = v,
        "pid" => h.pid = num(&k, &v)?,
        "host" => h.host = v,
        "command_line" => h.command_line = v,
        "vm_name" => h.vm_name = v,
        "vm_vendor" => h.vm_vendor = v,
        "vm_version" => h.vm_version = v,
        "java_version" => h.java_version = v,
        "os" => h.os = v,
        "arch" => h.arch = v,
        "start_wall_ns" => h.start_wall_ns = num(&k, &v)?,
        "start_ticks" => h.start_ticks = num(&k, &v)?,
        "ticks_per_second" => h.ticks_per_second = num(&k, &v)?,
        "modes" => h.modes = v,
        "interval_ns" => h.interval_ns = num(&k, &v)?,
        "max_depth" => h.max_depth = num(&k, &v)?,
        _ => h.extra.push((k, v)),
    }
    Ok(())
}

pub(crate) fn encode_frames(out: &mut Vec<u8>, frames: &[Frame]) {
    put_u64(out, frames.len() as u64);
    for f in frames {
        put_u64(out, f.method.into());
        put_i64(out, f.bci.into());
        put_u64(out, f.line.into());
        out.push(f.kind as u8);
    }
}

pub(crate) fn encode_thread(out: &mut Vec<u8>, t: &ThreadDef) {
    put_u64(out, t.id.into());
    put_i64(out, t.java_id);
    put_u64(out, t.os_tid.into());
    put_str(out, &t.name);
    put_str(out, &t.group);
    put_str(out, &t.parent);
    put_u64(out, t.start_order.into());
    out.push(u8::from(t.daemon));
}

/// Decodes a whole chunk payload into records.
pub fn decode_payload(payload: &[u8]) -> Result<Vec<Record>, FormatError> {
    let mut c = Cursor::new(payload);
    let base = c.u64()?;
    let mut times = DeltaDecoder::new(base);
    let mut out = Vec::new();
    while !c.is_empty() {
        let t = c.u64()?;
        let len = usize::try_from(c.u64()?).map_err(|_| FormatError::Truncated)?;
        let mut body = Cursor::new(c.bytes(len)?);
        out.push(decode_record_in(t, &mut body, &mut times)?);
    }
    Ok(out)
}

/// Decodes a payload's records as [`decode_payload`] does, except trace batches,
/// which are checked as decoding checks them but only counted: their events by
/// kind into `trace`, their latest event time into `last_ticks` (nothing is added
/// when the payload does not decode). For readers that count a recording
/// (`Overview`) without holding its events.
pub fn decode_payload_counting_traces(
    payload: &[u8],
    trace: &mut TraceCounts,
    last_ticks: &mut u64,
) -> Result<Vec<Record>, FormatError> {
    let mut c = Cursor::new(payload);
    let base = c.u64()?;
    let mut times = DeltaDecoder::new(base);
    let (mut counts, mut last) = (TraceCounts::default(), 0u64);
    let mut out = Vec::new();
    while !c.is_empty() {
        let t = c.u64()?;
        let len = usize::try_from(c.u64()?).map_err(|_| FormatError::Truncated)?;
        let mut body = Cursor::new(c.bytes(len)?);
        if t == tag::TRACE {
            skim_trace(&mut body, &mut times, &mut counts, &mut last)?;
        } else {
            out.push(decode_record_in(t, &mut body, &mut times)?);
        }
    }
    trace.add(&counts);
    *last_ticks = (*last_ticks).max(last);
    Ok(out)
}

/// Walks a trace batch as `decode_trace` reads it, counting its events.
fn skim_trace(
    c: &mut Cursor,
    times: &mut DeltaDecoder,
    counts: &mut TraceCounts,
    last: &mut u64,
) -> Result<(), FormatError> {
    let thread: ThreadId = c.id()?;
    let mut ticks = times.absolute(thread, c.i64()?);
    let has_cpu = c.u8()? & TRACE_HAS_CPU != 0;
    let n = c.u64()?;
    let mut kinds = [0u64; 3];
    for _ in 0..n {
        let head = c.u64()?;
        let kind = (head & 3) as usize;
        if kind == 3 {
            return Err(FormatError::Malformed("unknown trace event kind 3".into()));
        }
        if head >> 2 > u64::from(u32::MAX) {
            return Err(FormatError::Malformed("method id exceeds u32".into()));
        }
        ticks = ticks.wrapping_add(c.u64()?);
        if kind == TraceKind::Enter as usize {
            c.u32()?;
        }
        if has_cpu {
            c.i64()?;
        }
        kinds[kind] += 1;
    }
    times.last.insert(thread, ticks);
    counts.batches += 1;
    counts.enters += kinds[TraceKind::Enter as usize];
    counts.exits += kinds[TraceKind::Exit as usize];
    counts.throws += kinds[TraceKind::Throw as usize];
    if n > 0 {
        *last = (*last).max(ticks);
    }
    Ok(())
}

/// Decodes one record's body, its deltas on `times`.
pub(crate) fn decode_record_in(
    t: u64,
    c: &mut Cursor,
    times: &mut DeltaDecoder,
) -> Result<Record, FormatError> {
    Ok(match t {
        tag::HEADER => Record::Header(Box::new(decode_header(c)?)),
        tag::STRING => Record::String {
            id: c.id()?,
            value: c.string()?,
        },
        tag::TRANSIENT_STRING => Record::TransientString {
            id: c.id()?,
            value: c.string()?,
        },
        tag::CLASS => Record::Class(ClassDef {
            id: c.id()?,
            name: c.id()?,
            source_file: c.id()?,
        }),
        tag::METHOD => Record::Method(MethodDef {
            id: c.id()?,
            class: c.id()?,
            name: c.id()?,
            signature: c.id()?,
            modifiers: c.u32()?,
        }),
        tag::THREAD => Record::Thread(decode_thread(c)?),
        tag::STACK => Record::Stack {
            id: c.id()?,
            frames: decode_frames(c)?,
        },
        tag::SAMPLE => Record::Sample(decode_sample(c, times)?),
        tag::SNAPSHOT => Record::Snapshot(decode_snapshot(c, times)?),
        tag::COUNTERS => decode_counters(c, times)?,
        tag::END => Record::End {
            ticks: times.absolute(ThreadId::NONE, c.i64()?),
        },
        tag::TRACE => Record::Trace(decode_trace(c, times)?),
        tag::CALL_AGGREGATE => Record::CallAggregate(decode_aggregate(c, times)?),
        events::tag::USER_EVENT_DEF => Record::UserEventDef(UserEventDef {
            id: c.u32()?,
            name: c.id()?,
        }),
        t if events::is_event(t) => {
            Record::Event(decode_event(t, c, &mut |th, d| times.absolute(th, d))?)
        }
        remote::TAG_CLIENT | remote::TAG_SERVER => {
            Record::Remote(decode_remote(t, c, &mut |th, d| times.absolute(th, d))?)
        }
        request::TAG_REQUEST => {
            Record::Request(decode_request(c, &mut |th, d| times.absolute(th, d))?)
        }
        other => Record::Unknown { tag: other },
    })
}

fn decode_thread(c: &mut Cursor) -> Result<ThreadDef, FormatError> {
    Ok(ThreadDef {
        id: c.id()?,
        java_id: c.i64()?,
        os_tid: c.u32()?,
        name: c.string()?,
        group: c.string()?,
        parent: c.string()?,
        start_order: c.u32()?,
        daemon: c.u8()? != 0,
    })
}

fn decode_frames(c: &mut Cursor) -> Result<Vec<Frame>, FormatError> {
    let n = c.u64()?;
    let mut frames = Vec::with_capacity(n.min(4096) as usize);
    for _ in 0..n {
        let method = c.id()?;
        let bci = i32::try_from(c.i64()?)
            .map_err(|_| FormatError::Malformed("bci out of range".into()))?;
        let line = c.u32()?;
        let kind = FrameKind::from_u8(c.u8()?);
        frames.push(Frame {
            method,
            bci,
            line,
            kind,
        });
    }
    Ok(frames)
}

fn decode_sample(c: &mut Cursor, times: &mut DeltaDecoder) -> Result<Sample, FormatError> {
    let thread = c.id()?;
    let ticks = times.absolute(thread, c.i64()?);
    let stack = c.id()?;
    let mode_byte = c.u8()?;
    let mode = SampleMode::from_u8(mode_byte)
        .ok_or_else(|| FormatError::Malformed(format!("unknown sample mode {mode_byte}")))?;
    let (weight_ns, state) = (c.u64()?, c.u32()?);
    // Trailing, newer: a virtual thread's carrier, then the request served.
    let carrier = if c.is_empty() {
        ThreadId::NONE
    } else {
        c.id()?
    };
    let request = if c.is_empty() { 0 } else { c.u64()? };
    Ok(Sample {
        thread,
        carrier,
        ticks,
        stack,
        mode,
        weight_ns,
        state,
        request,
    })
}

fn decode_snapshot(c: &mut Cursor, times: &mut DeltaDecoder) -> Result<Snapshot, FormatError> {
    let ticks = times.absolute(ThreadId::NONE, c.i64()?);
    let interval_ns = c.u64()?;
    let n = c.u64()?;
    let mut threads = Vec::with_capacity(n.min(65536) as usize);
    for _ in 0..n {
        threads.push(SnapshotThread {
            thread: c.id()?,
            carrier: ThreadId::NONE,
            state: c.u32()?,
            stack: c.id()?,
        });
    }
    // Trailing, newer: each thread's carrier (virtual threads).
    if !c.is_empty() {
        for t in &mut threads {
            t.carrier = c.id()?;
        }
    }
    Ok(Snapshot {
        ticks,
        interval_ns,
        threads,
    })
}

fn decode_counters(c: &mut Cursor, times: &mut DeltaDecoder) -> Result<Record, FormatError> {
    let ticks = times.absolute(ThreadId::NONE, c.i64()?);
    let n = c.u64()?;
    let mut values = Vec::with_capacity(n.min(1024) as usize);
    for _ in 0..n {
        values.push((c.string()?, c.u64()?));
    }
    Ok(Record::Counters { ticks, values })
}

const TRACE_HAS_CPU: u8 = 1;

/// Trace events are the highest-volume records: each costs a varint of
/// `method << 2 | kind`, a varint time delta within the batch, and on entries the
/// untraced-call count. The record's body is written into `scratch`, a buffer
/// that only grows and is never cleared, so a batch neither zero-fills nor
/// bounds-checks room byte by byte (at most 35 bytes an event); the caller copies
/// the body (its first returned bytes) into the chunk. The events are those `map`
/// makes of `items`, one at a time, so a producer's own records are encoded
/// without an intermediate batch. Returns the body's length and the number of
/// (enters, exits, throws).
#[inline]
pub(crate) fn encode_trace_with<E>(
    scratch: &mut Vec<u8>,
    thread: ThreadId,
    has_cpu: bool,
    items: &[E],
    first_dt: i64,
    map: impl Fn(&E) -> TraceEvent,
) -> (usize, [u64; 3]) {
    let per_event = if has_cpu {
        3 * MAX_VARINT + 5
    } else {
        2 * MAX_VARINT + 5
    };
    // The head's four fields, and 8 bytes of slack: a short varint stores 8
    // bytes of which it keeps its own.
    let need = 4 * MAX_VARINT + items.len() * per_event + 8;
    if scratch.len() < need {
        scratch.resize(need, 0);
    }
    let buf = &mut scratch[..need];
    let mut pos = write_u64(buf, 0, thread.into());
    pos = write_i64(buf, pos, first_dt);
    buf[pos] = if has_cpu { TRACE_HAS_CPU } else { 0 };
    pos = write_u64(buf, pos + 1, items.len() as u64);
    let mut prev = items.first().map_or(0, |e| map(e).ticks);
    // Counted in registers; exits are the rest.
    let (mut enters, mut throws) = (0u64, 0u64);
    if has_cpu {
        let mut prev_cpu = 0u64;
        for item in items {
            let e = map(item);
            enters += u64::from(e.kind == TraceKind::Enter);
            throws += u64::from(e.kind == TraceKind::Throw);
            pos = write_event(buf, pos, &e, &mut prev);
            pos = write_i64(buf, pos, e.cpu_ns.wrapping_sub(prev_cpu) as i64);
            prev_cpu = e.cpu_ns;
        }
    } else {
        for item in items {
            let e = map(item);
            enters += u64::from(e.kind == TraceKind::Enter);
            throws += u64::from(e.kind == TraceKind::Throw);
            pos = write_event(buf, pos, &e, &mut prev);
        }
    }
    let exits = items.len() as u64 - enters - throws;
    (pos, [enters, exits, throws])
}

#[inline(always)]
fn write_event(buf: &mut [u8], pos: usize, e: &TraceEvent, prev: &mut u64) -> usize {
    let mut pos = write_u64(buf, pos, (u64::from(e.method) << 2) | e.kind as u64);
    pos = write_u64(buf, pos, e.ticks.wrapping_sub(*prev));
    *prev = e.ticks;
    // Entries and exits alternate unpredictably: the count is written either way
    // and kept only for entries, instead of a branch that mispredicts.
    let after = write_u64(buf, pos, e.untraced.into());
    pos + usize::from(e.kind == TraceKind::Enter) * (after - pos)
}

fn decode_trace(c: &mut Cursor, times: &mut DeltaDecoder) -> Result<TraceBatch, FormatError> {
    let thread = c.id()?;
    let mut ticks = times.absolute(thread, c.i64()?);
    let has_cpu = c.u8()? & TRACE_HAS_CPU != 0;
    let n = c.u64()?;
    let mut events = Vec::with_capacity(n.min(1 << 20) as usize);
    let mut cpu = 0u64;
    for _ in 0..n {
        let head = c.u64()?;
        let kind = TraceKind::from_u8((head & 3) as u8)
            .ok_or_else(|| FormatError::Malformed("unknown trace event kind 3".into()))?;
        let method = u32::try_from(head >> 2)
            .map(MethodId)
            .map_err(|_| FormatError::Malformed("method id exceeds u32".into()))?;
        ticks = ticks.wrapping_add(c.u64()?);
        let untraced = if kind == TraceKind::Enter {
            c.u32()?
        } else {
            0
        };
        if has_cpu {
            cpu = cpu.wrapping_add(c.i64()? as u64);
        }
        events.push(TraceEvent {
            kind,
            method,
            ticks,
            untraced,
            cpu_ns: if has_cpu { cpu } else { 0 },
        });
    }
    times.last.insert(thread, ticks);
    Ok(TraceBatch {
        thread,
        has_cpu,
        events,
    })
}

pub(crate) fn encode_aggregate(out: &mut Vec<u8>, a: &CallAggregate, dt: i64) {
    put_u64(out, a.thread.into());
    put_i64(out, dt);
    put_u64(out, a.pairs.len() as u64);
    for p in &a.pairs {
        put_u64(out, p.caller.into());
        put_u64(out, p.callee.into());
        for v in [p.calls, p.total_ns, p.min_ns, p.max_ns] {
            put_u64(out, v);
        }
    }
}

fn decode_aggregate(
    c: &mut Cursor,
    times: &mut DeltaDecoder,
) -> Result<CallAggregate, FormatError> {
    let thread = c.id()?;
    let ticks = times.absolute(thread, c.i64()?);
    let n = c.u64()?;
    let mut pairs = Vec::with_capacity(n.min(1 << 16) as usize);
    for _ in 0..n {
        let (caller, callee) = (c.id()?, c.id()?);
        let (calls, total_ns, min_ns, max_ns) = (c.u64()?, c.u64()?, c.u64()?, c.u64()?);
        pairs.push(CallPair {
            caller,
            callee,
            calls,
            total_ns,
            min_ns,
            max_ns,
        });
    }
    Ok(CallAggregate {
        thread,
        ticks,
        pairs,
    })
}
