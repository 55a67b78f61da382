//! Chunk summaries: what a data chunk holds, in a small uncompressed chunk written
//! just before it, so a reader can count a recording without decompressing it.
//!
//! ```text
//! summary chunk payload = base_ticks:varint summary_record copied_record*
//! summary_record = tag 22, body:
//!   data_len:varint               stored length of the data chunk that follows
//!   n:varint (tag:varint count:varint){n}   records of the data chunk per tag
//!   enters:varint exits:varint throws:varint  its trace events per kind
//!   last_event_ticks:varint       latest sample, snapshot, trace or JVM event time
//! copied_record = the data chunk's thread, counters and end records, again
//! ```
//! A summary describes only the chunk right after it, and only when that chunk
//! is a data chunk of `data_len` bytes; otherwise readers ignore it.

use std::collections::BTreeMap;

use crate::ids::ThreadId;
use crate::model::TraceCounts;
use crate::record::{decode_record_in, tag, DeltaDecoder, DeltaEncoder, Record};
use crate::varint::{put_u64, Cursor};
use crate::FormatError;

/// What one data chunk holds, as its summary chunk says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChunkSummary {
    /// Stored length of the data chunk it describes (its frame included).
    pub data_len: u64,
    /// Records per tag.
    pub records: BTreeMap<u64, u64>,
    /// Its trace events; `batches` equals the trace records.
    pub trace: TraceCounts,
    /// Latest time of a sample, snapshot, trace event or JVM event; 0 when none.
    pub last_event_ticks: u64,
    /// The chunk's thread, counters and end records, in order.
    pub copied: Vec<Record>,
}

/// Builds the summary of the chunk a `ChunkWriter` is filling.
pub(crate) struct SummaryBuilder {
    /// Records per tag for the common tags (below 64); others in `rare`.
    counts: [u64; 64],
    rare: BTreeMap<u64, u64>,
    pub(crate) trace: TraceCounts,
    pub(crate) last_event_ticks: u64,
    /// Copied records, with deltas of their own.
    copied: Vec<u8>,
    times: DeltaEncoder,
}

impl Default for SummaryBuilder {
    fn default() -> Self {
        SummaryBuilder {
            counts: [0; 64],
            rare: BTreeMap::new(),
            trace: TraceCounts::default(),
            last_event_ticks: 0,
            copied: Vec::new(),
            times: DeltaEncoder::default(),
        }
    }
}

impl SummaryBuilder {
    #[inline]
    pub(crate) fn count(&mut self, t: u64) {
        match self.counts.get_mut(t as usize) {
            Some(n) => *n += 1,
            None => *self.rare.entry(t).or_default() += 1,
        }
    }

    #[inline]
    pub(crate) fn saw(&mut self, ticks: u64) {
        self.last_event_ticks = self.last_event_ticks.max(ticks);
    }

    /// Copies a record; `body` writes it given the delta of `ticks` on `timeline`
    /// (None for records without a time).
    pub(crate) fn copy(
        &mut self,
        t: u64,
        timeline: ThreadId,
        ticks: Option<u64>,
        body: impl FnOnce(&mut Vec<u8>, i64),
    ) {
        let dt = ticks.map_or(0, |ticks| self.times.delta(timeline, ticks));
        let mut b = Vec::new();
        body(&mut b, dt);
        put_u64(&mut self.copied, t);
        put_u64(&mut self.copied, b.len() as u64);
        self.copied.extend_from_slice(&b);
    }

    /// The summary chunk's payload for a data chunk of `data_len` stored bytes;
    /// resets the builder for the next chunk.
    pub(crate) fn finish(&mut self, data_len: usize) -> Vec<u8> {
        let mut body = Vec::with_capacity(64);
        put_u64(&mut body, data_len as u64);
        let mut tags: Vec<(u64, u64)> = (0..64u64)
            .map(|t| (t, self.counts[t as usize]))
            .filter(|&(_, n)| n > 0)
            .collect();
        tags.extend(self.rare.iter().map(|(&t, &n)| (t, n)));
        put_u64(&mut body, tags.len() as u64);
        for (t, n) in tags {
            put_u64(&mut body, t);
            put_u64(&mut body, n);
        }
        for v in [
            self.trace.enters,
            self.trace.exits,
            self.trace.throws,
            self.last_event_ticks,
        ] {
            put_u64(&mut body, v);
        }
        let mut payload = Vec::with_capacity(body.len() + self.copied.len() + 16);
        put_u64(&mut payload, 0); // base ticks: copied records carry absolute deltas
        put_u64(&mut payload, tag::SUMMARY);
        put_u64(&mut payload, body.len() as u64);
        payload.extend_from_slice(&body);
        payload.extend_from_slice(&self.copied);
        *self = SummaryBuilder::default();
        payload
    }
}

/// Decodes a summary chunk's payload.
pub fn decode_summary(payload: &[u8]) -> Result<ChunkSummary, FormatError> {
    let mut c = Cursor::new(payload);
    let base = c.u64()?;
    if c.u64()? != tag::SUMMARY {
        return Err(FormatError::Malformed(
            "summary chunk does not start with a summary".into(),
        ));
    }
    let len = usize::try_from(c.u64()?).map_err(|_| FormatError::Truncated)?;
    let mut b = Cursor::new(c.bytes(len)?);
    let mut s = ChunkSummary {
        data_len: b.u64()?,
        ..Default::default()
    };
    let n = b.u64()?;
    for _ in 0..n.min(1 << 16) {
        let (t, count) = (b.u64()?, b.u64()?);
        s.records.insert(t, count);
    }
    s.trace.batches = s.records.get(&tag::TRACE).copied().unwrap_or(0);
    s.trace.enters = b.u64()?;
    s.trace.exits = b.u64()?;
    s.trace.throws = b.u64()?;
    s.last_event_ticks = b.u64()?;
    let mut times = DeltaDecoder::new(base);
    while !c.is_empty() {
        let t = c.u64()?;
        let len = usize::try_from(c.u64()?).map_err(|_| FormatError::Truncated)?;
        let mut body = Cursor::new(c.bytes(len)?);
        s.copied.push(decode_record_in(t, &mut body, &mut times)?);
    }
    Ok(s)
}

impl ChunkSummary {
    /// Whether the summary and its copies say all a reader of counts needs: true
    /// when the chunk holds nothing but dictionary names, threads, counters, the
    /// end, trace batches, call aggregates, JVM events and remote calls. A chunk
    /// with samples, snapshots, stacks or records of other kinds must be decoded.
    pub fn is_enough(&self) -> bool {
        self.records.keys().all(|&t| {
            matches!(
                t,
                tag::STRING
                    | tag::TRANSIENT_STRING
                    | tag::CLASS
                    | tag::METHOD
                    | tag::THREAD
                    | tag::COUNTERS
                    | tag::END
                    | tag::TRACE
                    | tag::CALL_AGGREGATE
                    | crate::events::tag::USER_EVENT_DEF
            ) || crate::events::is_event(t)
                || t == crate::remote::TAG_CLIENT
                || t == crate::remote::TAG_SERVER
        })
    }
}
