//! Stack-count summaries of closed segments, so that a query over a long range does
//! not decode every stored record.
//!
//! ```text
//! seg-<first seq>.sum = "JSCSUM2\n" segment_len:u64 dict_len:u32 dict-chunk
//!                       mode_totals:3×u64 buckets:u32 bucket* crc:u32
//! bucket = start_ns:u64 end_ns:u64 chunks_from:u64 chunks_to:u64
//!          totals_len:u32 (mode:u8 stack:var count:var)*
//!          detail_len:u32 group*
//! group  = mode<<4|state:u8 thread:var len:var (stack_delta:var count:var)*
//! ```
//! (little endian; `var` is LEB128; `crc` is the CRC-32C of everything before it). A
//! bucket is a run of consecutive chunks whose events span about a minute, with the
//! number of samples per (mode, stack) over every thread and state (`totals`, what an
//! unfiltered query adds), and per (mode, state class, thread id, stack) (`detail`,
//! what a thread or state filter picks from: one group per (mode, state class,
//! thread), its stacks ascending, `len` its bytes so unwanted groups are skipped), and
//! where its chunks lie in the segment file. Thread ids are resolved to names at query
//! time, through the dictionaries of the segments the query reads, as decoding does.
//! A query covering a bucket whole adds its counts; one cutting into it decodes just
//! that bucket's chunks, after the segment's header and dictionary (`dict-chunk`, the
//! segment's whole dictionary as one data chunk). The summary is written when the
//! segment closes; a missing, damaged or stale one (the segment's length differs) only
//! makes queries slower.
//!
//! `JSCSUM1` summaries (no `detail`, fixed-width `mode:u8 stack:u32 count:u32` totals
//! after an `entries:u32`, no crc) still serve unfiltered queries; a collector opening
//! the store rewrites them (see `is_current`), and until then filtered queries decode.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use jscope_analysis::{Mode, Selection, StackCounts};
use jscope_format::thread_state::classify;
use jscope_format::ThreadId;
use jscope_format::{decode_payload, ChunkReader, Record, Recording, StateClass};

use crate::identity::{apply_dictionary, event_span, new_dictionary, JvmIdentity};
use crate::segment;
use crate::store::SampleFilter;
use crate::StoreError;

const MAGIC: &[u8] = b"JSCSUM2\n";
const MAGIC_V1: &[u8] = b"JSCSUM1\n";
/// A bucket closes once its events span this long.
const BUCKET_NS: u64 = 60_000_000_000;
/// Buckets closer than this to a range bound are decoded, so that the summary and a
/// full decode (which compares f64 seconds) agree to the sample.
const EDGE_NS: u64 = 1_000_000;
/// State classes by their number in a group's first byte.
const STATES: [StateClass; 10] = [
    StateClass::Runnable,
    StateClass::Blocked,
    StateClass::Waiting,
    StateClass::TimedWaiting,
    StateClass::Sleeping,
    StateClass::Parked,
    StateClass::Native,
    StateClass::Terminated,
    StateClass::New,
    StateClass::Unknown,
];

pub(crate) struct Bucket {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Byte range of the bucket's chunks in the segment file.
    pub chunks: (u64, u64),
    /// Samples per (mode, stack), every thread and state together.
    pub counts: Vec<(u8, u32, u32)>,
    /// The groups, encoded as in the file (checked when the summary was decoded);
    /// empty in a `JSCSUM1` summary or one decoded without them.
    pub detail: Vec<u8>,
}

pub(crate) struct Summary {
    pub segment_len: u64,
    pub dict_chunk: Vec<u8>,
    /// Samples per mode, in `Mode::ALL` order, over the whole segment.
    pub mode_totals: [u64; 3],
    pub buckets: Vec<Bucket>,
    /// The buckets carry per-thread, per-state counts (a `JSCSUM2` summary decoded
    /// with them).
    pub detailed: bool,
}

pub(crate) fn path_of(segment: &Path) -> PathBuf {
    segment.with_extension("sum")
}

fn mode_index(m: Mode) -> u8 {
    Mode::ALL.iter().position(|&x| x == m).unwrap_or(0) as u8
}

fn state_index(state: u32) -> u8 {
    let class = classify(state);
    STATES.iter().position(|&c| c == class).unwrap_or(0) as u8
}

/// Counts of one bucket being built.
struct Open {
    start_ns: u64,
    end_ns: u64,
    from: u64,
    to: u64,
    counts: BTreeMap<(u8, u32), u32>,
    /// Keyed by (mode<<4|state, thread, stack): the order groups are written in.
    detail: BTreeMap<(u8, u32, u32), u32>,
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
            detail: encode_detail(&self.detail),
        }
    }
}

/// Reads a segment to its last intact chunk and summarises it.
pub(crate) fn build(path: &Path, jvm: &JvmIdentity) -> Result<Summary, StoreError> {
    let bytes = std::fs::read(path).map_err(StoreError::io(path))?;
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
            // A bucket opened by chunks without timed records (a resync's
            // dictionary) has no start yet: u64::MAX.
            if start >= o.start_ns.saturating_add(BUCKET_NS) {
                buckets.push(open.take().expect("open bucket").close());
            }
        }
        let o = open.get_or_insert_with(|| Open {
            start_ns: span.map_or(u64::MAX, |s| s.0),
            end_ns: 0,
            from: chunk.offset,
            to: end,
            counts: BTreeMap::new(),
            detail: BTreeMap::new(),
        });
        o.to = end;
        if let Some((a, b)) = span {
            (o.start_ns, o.end_ns) = (o.start_ns.min(a), o.end_ns.max(b));
        }
        count(&records, o, &mut totals);
    }
    buckets.extend(open.map(Open::close));
    Ok(Summary {
        segment_len: valid_len,
        dict_chunk: segment::encode_prelude(&dict),
        mode_totals: totals,
        buckets,
        detailed: true,
    })
}

fn count(records: &[Record], o: &mut Open, totals: &mut [u64; 3]) {
    let mut add = |m: Mode, thread: u32, state: u32, stack: u32| {
        let m = mode_index(m);
        *o.counts.entry((m, stack)).or_default() += 1;
        let group = m << 4 | state_index(state);
        *o.detail.entry((group, thread, stack)).or_default() += 1;
        totals[m as usize] += 1;
    };
    for r in records {
        match r {
            Record::Sample(s) => add(Mode::of_sample(s.mode), s.thread.0, s.state, s.stack.0),
            Record::Snapshot(snap) => snap
                .threads
                .iter()
                .for_each(|t| add(Mode::Snapshot, t.thread.0, t.state, t.stack.0)),
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

fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `section` after its length.
fn put_section(out: &mut Vec<u8>, section: &[u8]) {
    put_u32(out, section.len() as u32);
    out.extend_from_slice(section);
}

fn encode_totals(counts: &[(u8, u32, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(m, stack, n) in counts {
        out.push(m);
        put_var(&mut out, stack.into());
        put_var(&mut out, n.into());
    }
    out
}

fn encode_detail(detail: &BTreeMap<(u8, u32, u32), u32>) -> Vec<u8> {
    let entries: Vec<_> = detail.iter().collect();
    let mut out = Vec::new();
    let mut body = Vec::new();
    for group in entries.chunk_by(|a, b| (a.0 .0, a.0 .1) == (b.0 .0, b.0 .1)) {
        let (ms, thread, _) = *group[0].0;
        body.clear();
        let mut prev = 0;
        for (&(_, _, stack), &n) in group {
            put_var(&mut body, (stack - prev).into());
            put_var(&mut body, n.into());
            prev = stack;
        }
        out.push(ms);
        put_var(&mut out, thread.into());
        put_var(&mut out, body.len() as u64);
        out.extend_from_slice(&body);
    }
    out
}

pub(crate) fn encode(s: &Summary) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    put_u64(&mut out, s.segment_len);
    put_section(&mut out, &s.dict_chunk);
    s.mode_totals.iter().for_each(|&t| put_u64(&mut out, t));
    put_u32(&mut out, s.buckets.len() as u32);
    for b in &s.buckets {
        for v in [b.start_ns, b.end_ns, b.chunks.0, b.chunks.1] {
            put_u64(&mut out, v);
        }
        put_section(&mut out, &encode_totals(&b.counts));
        put_section(&mut out, &b.detail);
    }
    let crc = crc32c::crc32c(&out);
    put_u32(&mut out, crc);
    out
}

/// A cursor over summary bytes; every read fails cleanly past the end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
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

    fn var(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn var32(&mut self) -> Option<u32> {
        u32::try_from(self.var()?).ok()
    }

    fn section(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// One (mode, state class, thread) group of a bucket's detail.
struct Group<'a> {
    mode: u8,
    state: u8,
    thread: u32,
    entries: Entries<'a>,
}

fn next_group<'a>(c: &mut Cursor<'a>) -> Option<Group<'a>> {
    let ms = c.u8()?;
    let thread = c.var32()?;
    let len = usize::try_from(c.var()?).ok()?;
    Some(Group {
        mode: ms >> 4,
        state: ms & 0xf,
        thread,
        entries: Entries {
            c: Cursor(c.take(len)?),
            stack: 0,
        },
    })
}

/// A group's (stack, count) entries; ends early on damage.
struct Entries<'a> {
    c: Cursor<'a>,
    stack: u32,
}

impl Iterator for Entries<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        if self.c.0.is_empty() {
            return None;
        }
        self.stack = self.stack.checked_add(self.c.var32()?)?;
        Some((self.stack, self.c.var32()?))
    }
}

/// The groups of a bucket's detail, checked whole so that queries can trust it.
fn valid_detail(detail: &[u8]) -> bool {
    let mut c = Cursor(detail);
    while !c.0.is_empty() {
        let Some(mut g) = next_group(&mut c) else {
            return false;
        };
        g.entries.by_ref().for_each(drop);
        if !g.entries.c.0.is_empty() || usize::from(g.state) >= STATES.len() || g.mode > 2 {
            return false;
        }
    }
    true
}

fn decode_totals(bytes: &[u8]) -> Option<Vec<(u8, u32, u32)>> {
    let mut c = Cursor(bytes);
    let mut out = Vec::new();
    while !c.0.is_empty() {
        out.push((c.u8()?, c.var32()?, c.var32()?));
    }
    Some(out)
}

fn decode_totals_v1(c: &mut Cursor) -> Option<Vec<(u8, u32, u32)>> {
    let entries = c.u32()? as usize;
    // Each entry is 9 bytes: refuse counts the file cannot hold before allocating.
    if entries > c.0.len() / 9 {
        return None;
    }
    (0..entries)
        .map(|_| Some((c.u8()?, c.u32()?, c.u32()?)))
        .collect()
}

/// `detail`: the bucket has a detail section (`JSCSUM2`): `Some(true)` to keep it,
/// `Some(false)` to skip it unread.
fn decode_bucket(c: &mut Cursor, detail: Option<bool>) -> Option<Bucket> {
    let (start_ns, end_ns, from, to) = (c.u64()?, c.u64()?, c.u64()?, c.u64()?);
    let (counts, detail) = if let Some(keep) = detail {
        let counts = decode_totals(c.section()?)?;
        let detail = c.section()?;
        match keep {
            true => (counts, valid_detail(detail).then(|| detail.to_vec())?),
            false => (counts, Vec::new()),
        }
    } else {
        (decode_totals_v1(c)?, Vec::new())
    };
    Some(Bucket {
        start_ns,
        end_ns,
        chunks: (from, to),
        counts,
        detail,
    })
}

/// Decodes a summary; its per-thread, per-state counts only `with_detail` (checking
/// them costs about as much as reading the rest, and unfiltered queries need none).
pub(crate) fn decode(bytes: &[u8], with_detail: bool) -> Option<Summary> {
    let (body, has_detail) = match bytes.strip_prefix(MAGIC) {
        Some(_) => {
            let (body, crc) = bytes.split_at(bytes.len().checked_sub(4)?);
            let crc = u32::from_le_bytes(crc.try_into().ok()?);
            (crc32c::crc32c(body) == crc).then_some((body.strip_prefix(MAGIC)?, true))?
        }
        None => (bytes.strip_prefix(MAGIC_V1)?, false),
    };
    let mut c = Cursor(body);
    let segment_len = c.u64()?;
    let dict_chunk = c.section()?.to_vec();
    let mode_totals = [c.u64()?, c.u64()?, c.u64()?];
    let n = c.u32()?;
    let detail = has_detail.then_some(with_detail);
    let buckets = (0..n)
        .map(|_| decode_bucket(&mut c, detail))
        .collect::<Option<Vec<_>>>()?;
    c.0.is_empty().then_some(Summary {
        segment_len,
        dict_chunk,
        mode_totals,
        buckets,
        detailed: has_detail && with_detail,
    })
}

/// Builds and writes the summary of a closed segment.
pub(crate) fn write(segment: &Path, jvm: &JvmIdentity) -> Result<(), StoreError> {
    let s = build(segment, jvm)?;
    let path = path_of(segment);
    let tmp = path.with_extension("sum.tmp");
    std::fs::write(&tmp, encode(&s)).map_err(StoreError::io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(StoreError::io(&path))
}

/// The segment's summary when present and made from the segment as it is now, with
/// its per-thread, per-state counts when asked for and present (see `decode`).
pub(crate) fn load(segment: &Path, with_detail: bool) -> Option<Summary> {
    let s = decode(&std::fs::read(path_of(segment)).ok()?, with_detail)?;
    let len = std::fs::metadata(segment).ok()?.len();
    (s.segment_len == len).then_some(s)
}

/// Whether the segment has a summary of the current version made from it as it is
/// now, judged from its first bytes only (opening a store asks it of every segment;
/// damage further in is found, and the summary ignored, when a query loads it).
pub(crate) fn is_current(segment: &Path) -> bool {
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path_of(segment)).and_then(|mut f| f.read_exact(&mut head));
    let len = std::fs::metadata(segment).map(|m| m.len());
    match (read, len) {
        (Ok(()), Ok(len)) => head[..8] == *MAGIC && head[8..] == len.to_le_bytes(),
        _ => false,
    }
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

/// A query's thread and state filter, with thread ids resolved to names through
/// `names` (the dictionaries of the segments the query reads, in order: what decoding
/// resolves them with). Each thread's verdict is kept.
pub(crate) struct Accept<'a> {
    filter: &'a SampleFilter,
    names: &'a Recording,
    threads: HashMap<u32, bool>,
}

impl<'a> Accept<'a> {
    pub fn new(filter: &'a SampleFilter, names: &'a Recording) -> Accept<'a> {
        Accept {
            filter,
            names,
            threads: HashMap::new(),
        }
    }

    fn thread(&mut self, id: u32) -> bool {
        let Some(matcher) = &self.filter.thread else {
            return true;
        };
        let names = self.names;
        *self.threads.entry(id).or_insert_with(|| {
            names
                .threads
                .get(&ThreadId(id))
                .is_some_and(|t| matcher.matches(&t.name))
        })
    }

    fn state(&self, index: u8) -> bool {
        self.filter.states.is_empty()
            || STATES
                .get(usize::from(index))
                .is_some_and(|c| self.filter.states.contains(c))
    }
}

/// Stack ids below this are counted in a flat table.
const FLAT_STACKS: u32 = 1 << 16;

/// Counts per stack being added up: a flat table for the small ids agents hand out,
/// since a filtered query adds millions of summary entries (one map update each was
/// most of its time).
#[derive(Default)]
struct Tally {
    flat: Vec<u64>,
    other: BTreeMap<u32, u64>,
    total: u64,
}

impl Tally {
    fn add(&mut self, stack: u32, n: u64) {
        self.total += n;
        if stack >= FLAT_STACKS {
            *self.other.entry(stack).or_default() += n;
            return;
        }
        let i = stack as usize;
        if i >= self.flat.len() {
            self.flat.resize(i + 1, 0);
        }
        self.flat[i] += n;
    }

    /// Adds the tally to `counts`, under thread 0.
    fn add_to(self, counts: &mut StackCounts) {
        let flat = self
            .flat
            .into_iter()
            .enumerate()
            .map(|(i, n)| (i as u32, n));
        for (stack, n) in flat.chain(self.other).filter(|&(_, n)| n > 0) {
            *counts.counts.entry((stack, 0)).or_default() += n;
        }
        counts.total += self.total;
    }
}

/// Adds a whole bucket's samples of `mode` that `accept` keeps.
fn add_bucket(b: &Bucket, mode: u8, accept: &mut Accept, tally: &mut Tally) {
    if accept.filter.is_empty() {
        for &(_, stack, n) in b.counts.iter().filter(|e| e.0 == mode) {
            tally.add(stack, n.into());
        }
        return;
    }
    let mut c = Cursor(&b.detail);
    while let Some(g) = next_group(&mut c) {
        if g.mode == mode && accept.state(g.state) && accept.thread(g.thread) {
            g.entries.for_each(|(stack, n)| tally.add(stack, n.into()));
        }
    }
}

/// Adds the samples of `w` in a summarised segment to `counts`: whole buckets from
/// the summary, cut ones by decoding their chunks (`header` is the JVM's magic and
/// header chunk; `selection` the query's, with its mode set). The summary must be
/// `detailed` unless `accept`'s filter is empty.
pub(crate) fn count_into(
    s: &Summary,
    segment: &Path,
    header: &[u8],
    w: &Window,
    selection: &Selection,
    accept: &mut Accept,
    counts: &mut StackCounts,
) -> Result<(), StoreError> {
    let mode = mode_index(w.mode);
    // Threads are judged by `accept`, by the names the whole query sees; a cut
    // bucket's own dictionary may predate a later rename.
    let cut_selection = Selection {
        thread: None,
        ..selection.clone()
    };
    let mut bytes: Option<Vec<u8>> = None;
    let mut tally = Tally::default();
    for b in s.buckets.iter().filter(|b| !w.misses(b)) {
        if w.covers(b) {
            add_bucket(b, mode, accept, &mut tally);
            continue;
        }
        let seg = match &bytes {
            Some(b) => b,
            None => bytes.insert(std::fs::read(segment).map_err(StoreError::io(segment))?),
        };
        let (from, to) = (b.chunks.0 as usize, (b.chunks.1 as usize).min(seg.len()));
        let mut one = header.to_vec();
        one.extend_from_slice(&s.dict_chunk);
        one.extend_from_slice(seg.get(from..to).unwrap_or_default());
        let rec = Recording::from_bytes(&one)?;
        for ((stack, thread), n) in cut_selection.stack_counts(&rec).counts {
            if accept.thread(thread) {
                tally.add(stack, n);
            }
        }
    }
    tally.add_to(counts);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail() -> BTreeMap<(u8, u32, u32), u32> {
        // cpu runnable on threads 1 and 300, snapshot parked on thread 1.
        BTreeMap::from([
            ((0, 1, 3), 4),
            ((0, 1, 200), 1),
            ((0, 300, 3), 2),
            ((2 << 4 | 5, 1, 9), 1),
        ])
    }

    fn sample_summary() -> Summary {
        Summary {
            segment_len: 1234,
            dict_chunk: vec![1, 2, 3],
            mode_totals: [7, 0, 1],
            buckets: vec![Bucket {
                start_ns: 10,
                end_ns: 20,
                chunks: (100, 200),
                counts: vec![(0, 3, 6), (0, 200, 1), (2, 9, 1)],
                detail: encode_detail(&detail()),
            }],
            detailed: true,
        }
    }

    #[test]
    fn summaries_round_trip_and_damage_is_refused() {
        let bytes = encode(&sample_summary());
        let plain = decode(&bytes, false).expect("decodes");
        assert!(!plain.detailed && plain.buckets[0].detail.is_empty());
        let back = decode(&bytes, true).expect("decodes");
        assert_eq!(back.segment_len, 1234);
        assert_eq!(back.dict_chunk, vec![1, 2, 3]);
        assert_eq!(back.mode_totals, [7, 0, 1]);
        assert!(back.detailed);
        assert_eq!(back.buckets[0].chunks, (100, 200));
        assert_eq!(back.buckets[0].counts, sample_summary().buckets[0].counts);
        let mut groups = Vec::new();
        let mut c = Cursor(&back.buckets[0].detail);
        while let Some(g) = next_group(&mut c) {
            let entries: Vec<_> = g.entries.collect();
            groups.push((g.mode, g.state, g.thread, entries));
        }
        assert_eq!(
            groups,
            vec![
                (0, 0, 1, vec![(3, 4), (200, 1)]),
                (0, 0, 300, vec![(3, 2)]),
                (2, 5, 1, vec![(9, 1)]),
            ]
        );
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], true).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, true).is_none());
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x10;
            assert!(decode(&flipped, false).is_none(), "flipped byte {i}");
        }
    }

    #[test]
    fn a_version_1_summary_still_decodes_without_detail() {
        let mut v1 = MAGIC_V1.to_vec();
        put_u64(&mut v1, 1234);
        put_section(&mut v1, &[1, 2, 3]);
        [7u64, 0, 1].iter().for_each(|&t| put_u64(&mut v1, t));
        put_u32(&mut v1, 1);
        [10u64, 20, 100, 200]
            .iter()
            .for_each(|&v| put_u64(&mut v1, v));
        put_u32(&mut v1, 2);
        for (m, stack, n) in [(0u8, 3u32, 6u32), (2, 9, 1)] {
            v1.push(m);
            put_u32(&mut v1, stack);
            put_u32(&mut v1, n);
        }
        let back = decode(&v1, true).expect("decodes");
        assert!(!back.detailed);
        assert_eq!(back.buckets[0].counts, vec![(0, 3, 6), (2, 9, 1)]);
        assert!(back.buckets[0].detail.is_empty());
        for cut in 0..v1.len() {
            assert!(decode(&v1[..cut], true).is_none(), "cut at {cut}");
        }
    }

    #[test]
    fn a_whole_bucket_adds_the_groups_the_filter_keeps() {
        use jscope_analysis::ThreadMatcher;
        use jscope_format::ThreadDef;
        let mut names = Recording::from_bytes(&jscope_format::encode_file_start(
            &jscope_format::Header::default(),
        ))
        .unwrap();
        for (id, name) in [(1, "worker-1"), (300, "gc")] {
            names.threads.insert(
                ThreadId(id),
                ThreadDef {
                    id: ThreadId(id),
                    name: name.into(),
                    ..ThreadDef::default()
                },
            );
        }
        let s = sample_summary();
        let counted = |mode: Mode, thread: Option<&str>, states: Vec<StateClass>| {
            let filter = SampleFilter {
                thread: thread.map(ThreadMatcher::new),
                states,
            };
            let (mut tally, mut counts) = (Tally::default(), StackCounts::default());
            let mut accept = Accept::new(&filter, &names);
            add_bucket(&s.buckets[0], mode_index(mode), &mut accept, &mut tally);
            tally.add_to(&mut counts);
            (
                counts.total,
                counts.by_stack().into_iter().collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            counted(Mode::Cpu, None, vec![]),
            (7, vec![(3, 6), (200, 1)])
        );
        assert_eq!(
            counted(Mode::Cpu, Some("worker"), vec![]),
            (5, vec![(3, 4), (200, 1)])
        );
        assert_eq!(counted(Mode::Cpu, Some("g?"), vec![]), (2, vec![(3, 2)]));
        assert_eq!(counted(Mode::Cpu, Some("nobody"), vec![]), (0, vec![]));
        assert_eq!(
            counted(Mode::Cpu, None, vec![StateClass::Parked]),
            (0, vec![])
        );
        assert_eq!(
            counted(Mode::Snapshot, Some("worker-1"), vec![StateClass::Parked]),
            (1, vec![(9, 1)])
        );
        assert_eq!(
            counted(
                Mode::Cpu,
                None,
                vec![StateClass::Blocked, StateClass::Runnable]
            ),
            (7, vec![(3, 6), (200, 1)])
        );
    }

    #[test]
    fn a_tally_keeps_small_and_large_stack_ids() {
        let mut tally = Tally::default();
        for (stack, n) in [(3, 2), (FLAT_STACKS + 7, 5), (3, 1), (0, 4), (u32::MAX, 1)] {
            tally.add(stack, n);
        }
        let mut counts = StackCounts::default();
        counts.counts.insert((3, 9), 10);
        counts.total = 10;
        tally.add_to(&mut counts);
        assert_eq!(counts.total, 23);
        assert_eq!(
            counts.counts.into_iter().collect::<Vec<_>>(),
            vec![
                ((0, 0), 4),
                ((3, 0), 3),
                ((3, 9), 10),
                ((FLAT_STACKS + 7, 0), 5),
                ((u32::MAX, 0), 1)
            ]
        );
    }

    #[test]
    fn buckets_near_a_bound_are_decoded_not_counted() {
        let b = Bucket {
            start_ns: 1_000_000_000,
            end_ns: 2_000_000_000,
            chunks: (0, 0),
            counts: vec![],
            detail: vec![],
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
