//! Segment files: one recording-format file per piece of a stream.
//!
//! ```text
//! segment = magic header-chunk prelude-chunk chunk*
//! ```
//! The header chunk is the agent's; the prelude is a data chunk the collector writes
//! with every dictionary entry known when the segment starts, so each segment reads on
//! its own (and retention can delete older ones); then the agent's chunks, byte for byte.
//! Chunk `i` after the prelude has sequence number `first_seq + i`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use jscope_format::{decode_payload, ChunkReader, ChunkWriter, Recording};
use jscope_format::{StackId, StringId};

use crate::identity::{apply_dictionary, new_dictionary, timed_span, JvmIdentity};
use crate::StoreError;

pub(crate) fn file_name(first_seq: u64) -> String {
    format!("seg-{first_seq:012}.jsc")
}

pub(crate) fn first_seq_of(name: &str) -> Option<u64> {
    name.strip_prefix("seg-")?
        .strip_suffix(".jsc")?
        .parse()
        .ok()
}

/// Every dictionary entry of `dict` as one data chunk.
pub(crate) fn encode_prelude(dict: &Recording) -> Vec<u8> {
    let mut w = ChunkWriter::new();
    for (id, s) in dict.strings.iter().enumerate().skip(1) {
        w.string(StringId(id as u32), s);
    }
    dict.classes.iter().flatten().for_each(|c| w.class(c));
    dict.methods.iter().flatten().for_each(|m| w.method(m));
    dict.threads.values().for_each(|t| w.thread(t));
    for (id, frames) in dict.stacks.iter().enumerate() {
        if let Some(frames) = frames {
            w.stack(StackId(id as u32), frames);
        }
    }
    w.finish()
}

/// Creates a segment with the header and prelude, durable before it is used.
pub(crate) fn create(path: &Path, header: &[u8], prelude: &[u8]) -> Result<File, StoreError> {
    let mut f = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .map_err(StoreError::io(path))?;
    f.write_all(header).map_err(StoreError::io(path))?;
    f.write_all(prelude).map_err(StoreError::io(path))?;
    f.sync_all().map_err(StoreError::io(path))?;
    sync_dir(path.parent().expect("segment has a directory"))?;
    Ok(f)
}

/// Makes a directory entry (a new or renamed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io(dir))
}

/// What a segment holds, found by reading it.
pub(crate) struct Scanned {
    /// Agent chunks after the prelude.
    pub chunks: u64,
    /// Bytes up to the end of the last intact chunk.
    pub valid_len: u64,
    pub file_len: u64,
    pub span_ns: Option<(u64, u64)>,
    /// Dictionaries declared in the segment (prelude included).
    pub dict: Recording,
}

/// Reads a segment up to the first damage. `None` when even the header or prelude is
/// incomplete (the segment was being created when the collector died).
pub(crate) fn scan(path: &Path, jvm: &JvmIdentity) -> Result<Option<Scanned>, StoreError> {
    let bytes = std::fs::read(path).map_err(StoreError::io(path))?;
    let Ok(header) = Recording::from_bytes(&bytes) else {
        return Ok(None);
    };
    let mut dict = new_dictionary(&header.header);
    let mut reader = ChunkReader::new(&bytes)?;
    let mut seen = 0u64;
    let mut valid_len = jscope_format::MAGIC.len() as u64;
    let mut span: Option<(u64, u64)> = None;
    for chunk in reader.by_ref() {
        let Ok(records) = decode_payload(&chunk.payload) else {
            break;
        };
        if seen > 0 {
            apply_dictionary(&mut dict, &records);
        }
        if seen > 1 {
            span = merge_span(span, timed_span(jvm, &records));
        }
        valid_len = chunk.offset + chunk.stored_len as u64;
        seen += 1;
    }
    if seen < 2 {
        return Ok(None);
    }
    Ok(Some(Scanned {
        chunks: seen - 2,
        valid_len,
        file_len: bytes.len() as u64,
        span_ns: span,
        dict,
    }))
}

pub(crate) fn merge_span(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
        (a, b) => a.or(b),
    }
}

/// Cuts a torn tail so that appends continue after the last intact chunk.
pub(crate) fn truncate(path: &Path, len: u64) -> Result<(), StoreError> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(StoreError::io(path))?;
    f.set_len(len).map_err(StoreError::io(path))?;
    f.sync_all().map_err(StoreError::io(path))
}

/// Adds a segment's chunks to `rec` (starting a recording from its header when `rec`
/// is `None`). A torn tail (a chunk being appended right now) ends the segment.
pub(crate) fn read_into(rec: Option<Recording>, path: &Path) -> Result<Recording, StoreError> {
    let bytes = std::fs::read(path).map_err(StoreError::io(path))?;
    let Some(mut rec) = rec else {
        let mut rec = Recording::from_bytes(&bytes)?;
        rec.damage = None;
        return Ok(rec);
    };
    for chunk in ChunkReader::new(&bytes)?.skip(1) {
        if rec.apply_chunk(&chunk).is_err() {
            break;
        }
        rec.chunks += 1;
    }
    Ok(rec)
}

/// Appends a segment to `out` so that `out` stays one recording file: the whole
/// segment when `out` is empty, else only what follows its header (the prelude
/// restates the dictionaries, which a reader applies again harmlessly). A torn tail
/// (a chunk being appended right now) is left out.
pub(crate) fn raw_into(out: &mut Vec<u8>, path: &Path) -> Result<(), StoreError> {
    let bytes = std::fs::read(path).map_err(StoreError::io(path))?;
    let mut body_start = None;
    let mut end = None;
    for (i, chunk) in ChunkReader::new(&bytes)?.enumerate() {
        if decode_payload(&chunk.payload).is_err() {
            break;
        }
        if i == 1 {
            body_start = Some(chunk.offset as usize);
        }
        end = Some(chunk.offset as usize + chunk.stored_len);
    }
    let Some(end) = end else {
        return Ok(());
    };
    let start = if out.is_empty() {
        0
    } else {
        body_start.unwrap_or(end)
    };
    out.extend_from_slice(&bytes[start..end]);
    Ok(())
}
