//! Writes jscope recordings as JDK Flight Recorder files that the JDK's `jfr`
//! tool and `jdk.jfr.consumer`, JDK Mission Control, IDEs and async-profiler's
//! converter read as their own.
//!
//! A recording becomes one chunk: the 68-byte header, the events (samples,
//! snapshots, JVM events, traced calls, the JVM's identity), the metadata event
//! declaring every type they use (with the JDK's names and field order), and one
//! checkpoint holding the constant pools they refer to (threads, stack traces,
//! methods, classes, packages, symbols, frame types, thread states, GC names).
//! Several recordings (a collector's JVMs) are several chunks of one file, with
//! pool keys that never repeat across them. docs/EXPORT.md says what maps to what.

mod events;
mod out;
mod pools;
mod types;

use std::io::{self, Write};

use jscope_format::Recording;

use self::events::EventWriter;
use self::out::Out;
use self::pools::{Keys, Pools};

pub use self::events::EventCounts;

/// The chunk header's length; events start after it.
const HEADER_LEN: usize = 68;
/// Version 2.1, as the JDK has written since JDK 14 (and readers of 2.0 read).
const MAJOR: i16 = 2;
const MINOR: i16 = 1;
/// Chunk header flags: integers are compressed, and the chunk is the file's last.
const FLAG_COMPRESSED_INTEGERS: u8 = 1;
const FLAG_FINAL_CHUNK: u8 = 2;

/// Writes recordings as the chunks of one JFR file.
#[derive(Debug, Default)]
pub struct JfrWriter {
    keys: Keys,
    chunks: i64,
}

/// One written chunk: its bytes and what it holds.
#[derive(Debug, Clone)]
pub struct JfrChunk {
    pub bytes: Vec<u8>,
    pub counts: EventCounts,
}

impl JfrWriter {
    pub fn new() -> JfrWriter {
        JfrWriter::default()
    }

    /// The chunk holding `rec`; `last` marks the file's final chunk.
    pub fn chunk(&mut self, rec: &Recording, last: bool) -> JfrChunk {
        let mut out = Out::default();
        out.buf.resize(HEADER_LEN, 0);
        let mut w = EventWriter::new(rec, Pools::new(rec, self.keys), out);
        w.write_all();
        let end = w.ticks(rec.end_ticks.unwrap_or_else(|| rec.last_event_ticks()));
        let EventWriter {
            pools,
            mut out,
            counts,
            ..
        } = w;
        self.chunks += 1;
        let metadata_at = out.len();
        let names = user_event_names(rec);
        let types = types::all_types(&names);
        // Each chunk's own metadata id: a chunk equal to the one before it in id
        // would be read with the earlier chunk's types.
        out.buf
            .extend(types::metadata_event(&types, 0, self.chunks));
        let checkpoint_at = out.len();
        let (checkpoint, next) = pools.checkpoint(end);
        out.buf.extend(checkpoint);
        self.keys = next;
        let header = ChunkHeader {
            size: out.len() as i64,
            checkpoint_at: checkpoint_at as i64,
            metadata_at: metadata_at as i64,
            start_nanos: rec.header.start_wall_ns.min(i64::MAX as u64) as i64,
            duration_nanos: end.max(0),
            last,
        };
        header.write(&mut out.buf[..HEADER_LEN]);
        JfrChunk {
            bytes: out.buf,
            counts,
        }
    }
}

/// The names of the recording's user events, in the order of their definitions.
fn user_event_names(rec: &Recording) -> Vec<String> {
    rec.user_events
        .iter()
        .flatten()
        .map(|d| rec.string(d.name).to_string())
        .collect()
}

struct ChunkHeader {
    size: i64,
    checkpoint_at: i64,
    metadata_at: i64,
    start_nanos: i64,
    duration_nanos: i64,
    last: bool,
}

impl ChunkHeader {
    /// The 68 bytes, big-endian: magic, version, size, the offsets of the last
    /// checkpoint and of the metadata, start and duration in nanoseconds, start
    /// ticks (0: chunk ticks are nanoseconds from the start) and ticks per
    /// second, then the file state (0: complete) and the flags.
    fn write(&self, b: &mut [u8]) {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            b[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(crate::chunk::MAGIC);
        put(&MAJOR.to_be_bytes());
        put(&MINOR.to_be_bytes());
        for v in [
            self.size,
            self.checkpoint_at,
            self.metadata_at,
            self.start_nanos,
            self.duration_nanos,
            0,
            1_000_000_000,
        ] {
            put(&v.to_be_bytes());
        }
        let final_flag = if self.last { FLAG_FINAL_CHUNK } else { 0 };
        put(&[0, 0, 0, FLAG_COMPRESSED_INTEGERS | final_flag]);
    }
}

/// The bytes of a JFR file holding `rec` (one chunk).
pub fn encode_jfr(rec: &Recording) -> Vec<u8> {
    JfrWriter::new().chunk(rec, true).bytes
}

/// Writes `rec` as a JFR file to `out`; what it holds, by JFR event type.
pub fn write_jfr(rec: &Recording, out: &mut dyn Write) -> io::Result<EventCounts> {
    let chunk = JfrWriter::new().chunk(rec, true);
    out.write_all(&chunk.bytes)?;
    Ok(chunk.counts)
}
