//! Stack-count summaries of closed segments, so that a query over a long range does
//! not decode every stored record.
//!
//! ```text
//! seg-<first seq>.sum = "JSCSUM1\n" segment_len:u64 dict_len:u32 dict-chunk
//!                       mode_totals:3×u64 buckets:u32 bucket*
//! bucket = start_ns:u64 end_ns:u64 chunks_from:u64 chunks_to:u64 entries:u32
//!          (mode:u8 stack:u32 count:u32)*
//! ```
//! (little endian). A bucket is a run of consecutive chunks whose events span about a
//! minute, with the number of samples per (mode, stack) over every thread and state,
//! and where its chunks lie in the segment file. A query covering a bucket whole adds
//! its counts; one cutting into it decodes just that bucket's chunks, after the
//! segment's header and dictionary (`dict-chunk`, the segment's whole dictionary as
//! one data chunk). The summary is written when the segment closes; a missing,
//! damaged or stale one (the segment's length differs) only makes queries slower.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jscope_analysis::{Mode, Selection, StackCounts};
use jscope_format::{decode_payload, ChunkReader, Record, Recording, SampleMode};

use super::segment;
use crate::jvm::{apply_dictionary, event_span, new_dictionary, JvmIdentity};
use crate::CollectorError;

const MAGIC: &[u8] = b"JSCSUM1\n";
/// A bucket closes once its events span this long.
const BUCKET_NS: u64 = 60_000_000_000;
/// Buckets closer than this to a range bound are decoded, so that the summary and a
/// full decode (which compares f64 seconds) agree to the sample.
const EDGE_NS: u64 = 1_000_000;

pub(crate) struct Bucket {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Byte range of the bucket's chunks in the segment file.
    pub chunks: (u64, u64),
    pub counts: Vec<(u8, u32, u32)>,
}

pub(crate) struct Summary {
    pub segment_len: u64,
    pub dict_chunk: Vec<u8>,
    /// Samples per mode, in `Mode::ALL` order, over the whole segment.
    pub mode_totals: [u64; 3],
    pub buckets: Vec<Bucket>,
}

pub(crate) fn path_of(segment: &Path) -> PathBuf {
    segment.with_extension("sum")
}

fn mode_index(m: Mode) -> u8 {
    Mode::ALL.iter().position(|&x| x == m).unwrap_or(0) as u8
}

fn sample_mode(m: SampleMode) -> Mode {
    match m {
        SampleMode::Cpu => Mode::Cpu,
        SampleMode::Wall => Mode::Wall,
    }
}

/// Counts of one bucket being built.
struct Open {
    start_ns: u64,
    end_ns: u64,
    from: u64,
    to: u64,
    counts: BTreeMap<(u8, u32), u32>,
}

impl Open {
    fn close(self) -> Bucket {
        Bucket {
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            chunks: (self.from, self.to),
            counts: self
                .counts
                .into_iter()
                .map(|((m, s), n)| (m, s, n))
                .collect(),
        }
    }
}

/// Reads a segment to its last intact chunk and summarises it.
pub(crate) fn build(path: &Path, jvm: &JvmIdentity) -> Result<Summary, CollectorError> {
    let bytes = std::fs::read(path).map_err(CollectorError::io(path))?;
    let header = Recording::from_bytes(&bytes)?;
    let mut dict = new_dictionary(&header.header);
    let mut totals = [0u64; 3];
    let mut buckets = Vec::new();
    let mut open: Option<Open> = None;
    let mut valid_len = 0;
    for (i, chunk) in ChunkReader::new(&bytes)?.enumerate() {
        let Ok(records) = decode_payload(&chunk.payload) else {
            break;
        };
        let end = chunk.offset + chunk.stored_len as u64;
        valid_len = end;
        if i == 0 {
            continue;
        }
        apply_dictionary(&mut dict, &records);
        if i == 1 {
            continue; // the prelude: dictionary only
        }
        let span = event_span(jvm, &records);
        if let (Some(o), Some((start, _))) = (&open, span) {
            if start >= o.start_ns + BUCKET_NS {
                buckets.push(open.take().expect("open bucket").close());
            }
        }
        let o = open.get_or_insert_with(|| Open {
            start_ns: span.map_or(u64::MAX, |s| s.0),
            end_ns: 0,
            from: chunk.offset,
            to: end,
            counts: BTreeMap::new(),
        });
        o.to = end;
        if let Some((a, b)) = span {
            (o.start_ns, o.end_ns) = (o.start_ns.min(a), o.end_ns.max(b));
        }
        count(&records, &mut o.counts, &mut totals);
    }
    buckets.extend(open.map(Open::close));
    Ok(Summary {
        segment_len: valid_len,
        dict_chunk: segment::encode_prelude(&dict),
        mode_totals: totals,
        buckets,
    })
}

fn count(records: &[Record], counts: &mut BTreeMap<(u8, u32), u32>, totals: &mut [u64; 3]) {
    let mut add = |m: Mode, stack: u32| {
        let m = mode_index(m);
        *counts.entry((m, stack)).or_default() += 1;
        totals[m as usize] += 1;
    };
    for r in records {
        match r {
            Record::Sample(s) => add(sample_mode(s.mode), s.stack),
            Record::Snapshot(snap) => snap
                .threads
                .iter()
                .for_each(|t| add(Mode::Snapshot, t.stack)),
            _ => {}
        }
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn encode(s: &Summary) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    put_u64(&mut out, s.segment_len);
    put_u32(&mut out, s.dict_chunk.len() as u32);
    out.extend_from_slice(&s.dict_chunk);
    s.mode_totals.iter().for_each(|&t| put_u64(&mut out, t));
    put_u32(&mut out, s.buckets.len() as u32);
    for b in &s.buckets {
        for v in [b.start_ns, b.end_ns, b.chunks.0, b.chunks.1] {
            put_u64(&mut out, v);
        }
        put_u32(&mut out, b.counts.len() as u32);
        for &(m, stack, n) in &b.counts {
            out.push(m);
            put_u32(&mut out, stack);
            put_u32(&mut out, n);
        }
    }
    out
}

/// A cursor over summary bytes; every read fails cleanly past the end.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

pub(crate) fn decode(bytes: &[u8]) -> Option<Summary> {
    let mut c = Cursor(bytes.strip_prefix(MAGIC)?);
    let segment_len = c.u64()?;
    let dict_len = c.u32()? as usize;
    let dict_chunk = c.take(dict_len)?.to_vec();
    let mode_totals = [c.u64()?, c.u64()?, c.u64()?];
    let n = c.u32()?;
    let mut buckets = Vec::new();
    for _ in 0..n {
        let (start_ns, end_ns, from, to) = (c.u64()?, c.u64()?, c.u64()?, c.u64()?);
        let entries = c.u32()? as usize;
        // Each entry is 9 bytes: refuse counts the file cannot hold before allocating.
        if entries > c.0.len() / 9 {
            return None;
        }
        let mut counts = Vec::with_capacity(entries);
        for _ in 0..entries {
            counts.push((c.u8()?, c.u32()?, c.u32()?));
        }
        buckets.push(Bucket {
            start_ns,
            end_ns,
            chunks: (from, to),
            counts,
        });
    }
    c.0.is_empty().then_some(Summary {
        segment_len,
        dict_chunk,
        mode_totals,
        buckets,
    })
}

/// Builds and writes the summary of a closed segment.
pub(crate) fn write(segment: &Path, jvm: &JvmIdentity) -> Result<(), CollectorError> {
    let s = build(segment, jvm)?;
    let path = path_of(segment);
    let tmp = path.with_extension("sum.tmp");
    std::fs::write(&tmp, encode(&s)).map_err(CollectorError::io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(CollectorError::io(&path))
}

/// The segment's summary when present and made from the segment as it is now.
pub(crate) fn load(segment: &Path) -> Option<Summary> {
    let s = decode(&std::fs::read(path_of(segment)).ok()?)?;
    let len = std::fs::metadata(segment).ok()?.len();
    (s.segment_len == len).then_some(s)
}

/// Where a query stands: the mode it counts and its range.
pub(crate) struct Window {
    pub mode: Mode,
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
}

impl Window {
    fn covers(&self, b: &Bucket) -> bool {
        self.from_ns
            .is_none_or(|f| b.start_ns >= f.saturating_add(EDGE_NS))
            && self
                .to_ns
                .is_none_or(|t| b.end_ns.saturating_add(EDGE_NS) < t)
    }

    fn misses(&self, b: &Bucket) -> bool {
        self.from_ns.is_some_and(|f| b.end_ns < f) || self.to_ns.is_some_and(|t| b.start_ns >= t)
    }
}

/// Adds the samples of `w` in a summarised segment to `counts`: whole buckets from
/// the summary, cut ones by decoding their chunks (`header` is the JVM's magic and
/// header chunk; `selection` the query's, with its mode set).
pub(crate) fn count_into(
    s: &Summary,
    segment: &Path,
    header: &[u8],
    w: &Window,
    selection: &Selection,
    counts: &mut StackCounts,
) -> Result<(), CollectorError> {
    let mode = mode_index(w.mode);
    let mut bytes: Option<Vec<u8>> = None;
    for b in s.buckets.iter().filter(|b| !w.misses(b)) {
        if w.covers(b) {
            for &(_, stack, n) in b.counts.iter().filter(|e| e.0 == mode) {
                *counts.counts.entry((stack, 0)).or_default() += n as u64;
                counts.total += n as u64;
            }
            continue;
        }
        let seg = match &bytes {
            Some(b) => b,
            None => bytes.insert(std::fs::read(segment).map_err(CollectorError::io(segment))?),
        };
        let (from, to) = (b.chunks.0 as usize, (b.chunks.1 as usize).min(seg.len()));
        let mut one = header.to_vec();
        one.extend_from_slice(&s.dict_chunk);
        one.extend_from_slice(seg.get(from..to).unwrap_or_default());
        let rec = Recording::from_bytes(&one)?;
        for ((stack, _), n) in selection.stack_counts(&rec).counts {
            *counts.counts.entry((stack, 0)).or_default() += n;
            counts.total += n;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_round_trip_and_damage_is_refused() {
        let s = Summary {
            segment_len: 1234,
            dict_chunk: vec![1, 2, 3],
            mode_totals: [5, 0, 7],
            buckets: vec![Bucket {
                start_ns: 10,
                end_ns: 20,
                chunks: (100, 200),
                counts: vec![(0, 3, 4), (2, 9, 1)],
            }],
        };
        let bytes = encode(&s);
        let back = decode(&bytes).expect("decodes");
        assert_eq!(back.segment_len, 1234);
        assert_eq!(back.dict_chunk, vec![1, 2, 3]);
        assert_eq!(back.mode_totals, [5, 0, 7]);
        assert_eq!(back.buckets[0].chunks, (100, 200));
        assert_eq!(back.buckets[0].counts, vec![(0, 3, 4), (2, 9, 1)]);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
    }

    #[test]
    fn buckets_near_a_bound_are_decoded_not_counted() {
        let b = Bucket {
            start_ns: 1_000_000_000,
            end_ns: 2_000_000_000,
            chunks: (0, 0),
            counts: vec![],
        };
        let w = |from: Option<u64>, to: Option<u64>| Window {
            mode: Mode::Cpu,
            from_ns: from,
            to_ns: to,
        };
        assert!(w(None, None).covers(&b));
        assert!(w(Some(500_000_000), Some(3_000_000_000)).covers(&b));
        assert!(
            !w(Some(1_000_000_000), None).covers(&b),
            "bound at its start"
        );
        assert!(!w(None, Some(2_000_000_001)).covers(&b), "bound at its end");
        assert!(w(Some(2_000_000_001), None).misses(&b));
        assert!(w(None, Some(1_000_000_000)).misses(&b));
        assert!(!w(Some(1_500_000_000), None).misses(&b));
    }
}
