//! Reading: walk the chunks of a file or stream and build a `Recording`, keeping
//! everything before the first damaged chunk.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::chunk::{check_magic, split_chunk, ChunkKind, RawChunk, Split, MAGIC};
use crate::events::{JvmEvent, UserEventDef};
use crate::ids::{ClassId, MethodId, StackId, StringId, ThreadId};
use crate::model::*;
use crate::record::{decode_payload, Record};
use crate::remote::RemoteCall;
use crate::request::Request;
use crate::FormatError;

/// Where and why reading stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset in the file of the first chunk that could not be read.
    pub offset: u64,
    /// Index of that chunk (0 is the header chunk).
    pub chunk_index: u64,
    pub reason: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "damaged at byte {} (chunk {}): {}",
            self.offset, self.chunk_index, self.reason
        )
    }
}

/// Iterates over the chunks of a complete byte buffer (a file read into memory).
pub struct ChunkReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    index: u64,
    damage: Option<Damage>,
}

impl<'a> ChunkReader<'a> {
    /// Checks the magic; the first chunk returned is the header chunk.
    pub fn new(bytes: &'a [u8]) -> Result<Self, FormatError> {
        check_magic(bytes)?;
        Ok(ChunkReader {
            bytes,
            pos: MAGIC.len(),
            index: 0,
            damage: None,
        })
    }

    /// Set once iteration has stopped at damage.
    pub fn damage(&self) -> Option<&Damage> {
        self.damage.as_ref()
    }

    fn fail(&mut self, reason: String) -> Option<RawChunk> {
        self.damage = Some(Damage {
            offset: self.pos as u64,
            chunk_index: self.index,
            reason,
        });
        None
    }
}

impl Iterator for ChunkReader<'_> {
    type Item = RawChunk;

    fn next(&mut self) -> Option<RawChunk> {
        if self.damage.is_some() || self.pos >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[self.pos..];
        match split_chunk(rest, self.pos as u64) {
            Ok(Split::Chunk(c)) => {
                self.pos += c.stored_len;
                self.index += 1;
                Some(c)
            }
            Ok(Split::NeedMore(n)) => {
                let msg = format!(
                    "truncated chunk: needs {n} bytes, only {} remain",
                    rest.len()
                );
                self.fail(msg)
            }
            Err(e) => self.fail(e.to_string()),
        }
    }
}

/// A whole recording decoded into memory.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub header: Header,
    pub version: (u8, u8),
    /// Indexed by id; index 0 is the empty string.
    pub strings: Vec<String>,
    pub classes: Vec<Option<ClassDef>>,
    pub methods: Vec<Option<MethodDef>>,
    pub threads: BTreeMap<ThreadId, ThreadDef>,
    pub stacks: Vec<Option<Vec<Frame>>>,
    pub samples: Vec<Sample>,
    pub snapshots: Vec<Snapshot>,
    /// Exact-tracing events, batch by batch in recording order.
    pub traces: Vec<TraceBatch>,
    pub call_aggregates: Vec<CallAggregate>,
    /// JVM events in recording order.
    pub events: Vec<JvmEvent>,
    /// Remote calls made (client side) and executed (server side).
    pub remote_calls: Vec<RemoteCall>,
    /// Requests served (samples and events name them by id).
    pub requests: Vec<Request>,
    /// User event names by id.
    pub user_events: Vec<Option<UserEventDef>>,
    /// The last value seen of each counter.
    pub counters: BTreeMap<String, u64>,
    /// Set when the recording ended cleanly.
    pub end_ticks: Option<u64>,
    /// Set when reading stopped at a damaged chunk; everything before it is kept.
    pub damage: Option<Damage>,
    /// Records of kinds this reader does not know, skipped.
    pub skipped_records: u64,
    /// Chunks read, the header chunk included.
    pub chunks: u64,
}

fn put<T>(v: &mut Vec<Option<T>>, i: usize, value: T) {
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(value);
}

impl Recording {
    pub fn read_file(path: &Path) -> Result<Recording, FormatError> {
        let bytes = std::fs::read(path).map_err(|e| FormatError::Io(e.to_string()))?;
        Recording::from_bytes(&bytes)
    }

    /// Fails only when `bytes` do not start with a readable header; later damage is
    /// reported in `damage`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Recording, FormatError> {
        let version = check_magic(bytes)?;
        let mut chunks = ChunkReader::new(bytes)?;
        let first = chunks.next();
        let mut rec = Recording::from_header_chunk(version, first.as_ref(), chunks.damage())?;
        for chunk in chunks.by_ref() {
            if chunk.kind == ChunkKind::Summary as u8 {
                continue; // says again what the next chunk holds
            }
            if let Err(e) = rec.apply_chunk(&chunk) {
                rec.damage = Some(Damage {
                    offset: chunk.offset,
                    chunk_index: rec.chunks,
                    reason: e.to_string(),
                });
                break;
            }
            rec.chunks += 1;
        }
        if rec.damage.is_none() {
            rec.damage = chunks.damage().cloned();
        }
        Ok(rec)
    }

    /// A recording with just its header read, from the first chunk a chunk reader
    /// gave (`None` when it gave none, `damage` then saying why): where readers
    /// that stream the other chunks start. Errors as [`Recording::from_bytes`].
    pub fn from_header_chunk(
        version: (u8, u8),
        first: Option<&RawChunk>,
        damage: Option<&Damage>,
    ) -> Result<Recording, FormatError> {
        let first = first.ok_or_else(|| header_error(damage))?;
        let mut rec = Recording {
            version,
            strings: vec![String::new()],
            ..Default::default()
        };
        rec.read_header_chunk(first)?;
        rec.chunks = 1;
        Ok(rec)
    }

    fn read_header_chunk(&mut self, chunk: &RawChunk) -> Result<(), FormatError> {
        if chunk.kind != ChunkKind::Header as u8 {
            return Err(FormatError::NotARecording(
                "first chunk is not a header".into(),
            ));
        }
        let records = decode_payload(&chunk.payload)?;
        match records.into_iter().next() {
            Some(Record::Header(h)) => {
                self.header = *h;
                Ok(())
            }
            _ => Err(FormatError::NotARecording(
                "header chunk holds no header".into(),
            )),
        }
    }

    /// Decodes one data chunk and adds its records; nothing is added if it fails.
    /// Summary chunks add nothing (their data chunk has it all).
    pub fn apply_chunk(&mut self, chunk: &RawChunk) -> Result<(), FormatError> {
        if chunk.kind == ChunkKind::Summary as u8 {
            return Ok(());
        }
        if chunk.kind != ChunkKind::Data as u8 {
            self.skipped_records += 1;
            return Ok(());
        }
        for r in decode_payload(&chunk.payload)? {
            self.apply(r);
        }
        Ok(())
    }

    /// Adds one record.
    pub fn apply(&mut self, r: Record) {
        match r {
            Record::String { id, value } | Record::TransientString { id, value } => {
                self.put_string(id, value)
            }
            Record::Class(c) => put(&mut self.classes, c.id.index(), c),
            Record::Method(m) => put(&mut self.methods, m.id.index(), m),
            Record::Thread(t) => {
                self.threads.insert(t.id, t);
            }
            Record::Stack { id, frames } => put(&mut self.stacks, id.index(), frames),
            Record::Sample(s) => self.samples.push(s),
            Record::Snapshot(s) => self.snapshots.push(s),
            Record::Counters { values, .. } => self.counters.extend(values),
            Record::End { ticks } => self.end_ticks = Some(ticks),
            Record::Trace(b) => self.traces.push(b),
            Record::CallAggregate(a) => self.call_aggregates.push(a),
            Record::Event(e) => self.events.push(e),
            Record::Remote(c) => self.remote_calls.push(c),
            Record::Request(r) => self.requests.push(r),
            Record::UserEventDef(d) => put(&mut self.user_events, d.id as usize, d),
            Record::Header(_) | Record::Unknown { .. } => self.skipped_records += 1,
        }
    }

    fn put_string(&mut self, id: StringId, value: String) {
        let i = id.index();
        if self.strings.len() <= i {
            self.strings.resize(i + 1, String::new());
        }
        self.strings[i] = value;
    }

    pub fn string(&self, id: StringId) -> &str {
        self.strings
            .get(id.index())
            .map(String::as_str)
            .unwrap_or("")
    }

    pub fn method(&self, id: MethodId) -> Option<&MethodDef> {
        self.methods.get(id.index()).and_then(Option::as_ref)
    }

    pub fn class(&self, id: ClassId) -> Option<&ClassDef> {
        self.classes.get(id.index()).and_then(Option::as_ref)
    }

    /// `com.acme.Foo.bar`, or `[unknown]` when the method is not known. Native code
    /// (see [`Recording::native_library`]) reads `symbol [libc.so.6]` (a mapping the
    /// kernel names in brackets, the vDSO, `symbol [vdso]`), kernel code
    /// `symbol_[k]` as async-profiler writes it, code in no known mapping `[unknown]`.
    pub fn method_label(&self, method: MethodId) -> String {
        let Some(m) = self.method(method) else {
            return "[unknown]".to_string();
        };
        if let Some(lib) = self.native_library(method) {
            let name = self.string(m.name);
            return match lib {
                "[kernel]" => format!("{name}_[k]"),
                "[unknown]" => "[unknown]".to_string(),
                "" => name.to_string(),
                lib if lib.starts_with('[') && lib.ends_with(']') => format!("{name} {lib}"),
                _ => format!("{name} [{lib}]"),
            };
        }
        match self.class(m.class) {
            Some(c) => format!("{}.{}", self.string(c.name), self.string(m.name)),
            None => self.string(m.name).to_string(),
        }
    }

    /// The library of a method that stands for native code (a mixed-stack frame): its
    /// class is named by the library file (`libc.so.6`, `[kernel]`, `[unknown]`; none when the library is not known), its
    /// signature is empty and its modifiers say native. `None` for Java methods,
    /// including Java's own `native` methods, which have a signature.
    pub fn native_library(&self, method: MethodId) -> Option<&str> {
        let m = self.method(method)?;
        if m.modifiers & 0x100 == 0
            || m.signature != StringId::NONE && !self.string(m.signature).is_empty()
        {
            return None;
        }
        Some(self.class(m.class).map_or("", |c| self.string(c.name)))
    }

    /// The method label, with `:line` when the line is known.
    pub fn frame_label(&self, f: &Frame) -> String {
        let m = self.method_label(f.method);
        if f.line > 0 {
            format!("{m}:{}", f.line)
        } else {
            m
        }
    }

    /// Frames of a stack, top first; empty when unknown.
    pub fn stack(&self, id: StackId) -> &[Frame] {
        self.stacks
            .get(id.index())
            .and_then(Option::as_deref)
            .unwrap_or(&[])
    }

    pub fn thread(&self, id: ThreadId) -> Option<&ThreadDef> {
        self.threads.get(&id)
    }

    /// Nanoseconds since the start of the recording.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        let rel = ticks.saturating_sub(self.header.start_ticks);
        match self.header.ticks_per_second {
            0 | 1_000_000_000 => rel,
            tps => (rel as u128 * 1_000_000_000 / tps as u128) as u64,
        }
    }

    /// From the start to the clean end, or else to the last event read.
    pub fn duration_ns(&self) -> u64 {
        let last = self.end_ticks.unwrap_or_else(|| self.last_event_ticks());
        self.ticks_to_ns(last)
    }

    /// The latest sample, snapshot, trace event or JVM event time held, or the
    /// start when there is none.
    pub fn last_event_ticks(&self) -> u64 {
        let s = self.samples.iter().map(|s| s.ticks).max().unwrap_or(0);
        let n = self.snapshots.iter().map(|s| s.ticks).max().unwrap_or(0);
        let t = self
            .traces
            .iter()
            .filter_map(|b| b.events.last())
            .map(|e| e.ticks)
            .max()
            .unwrap_or(0);
        let e = self.events.iter().map(|e| e.ticks).max().unwrap_or(0);
        s.max(n).max(t).max(e).max(self.header.start_ticks)
    }
}

/// The magic was read, so the file is a recording whose header is cut or damaged.
fn header_error(damage: Option<&Damage>) -> FormatError {
    FormatError::DamagedHeader(match damage {
        Some(d) => format!(
            "its header is cut or damaged at byte {} ({}); truncated before the header was complete",
            d.offset, d.reason
        ),
        None => format!(
            "truncated at byte {}, right after the magic, before the header",
            MAGIC.len()
        ),
    })
}
