//! Streaming over a recording's trace batches without keeping them: one thread
//! decompresses and decodes chunks while the caller consumes the previous ones.

use std::sync::mpsc::sync_channel;

use jscope_format::{ChunkKind, ChunkReader, Damage, FormatError, Record, Recording, TraceBatch};

/// Why a recording could not be read at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("{0}")]
    Format(#[from] FormatError),
    #[error("{0}")]
    Io(String),
}

/// Chunks decoded ahead of the consumer; enough to keep both cores busy.
const DECODED_AHEAD: usize = 4;

type Decoded = (u64, Result<Vec<Record>, FormatError>);

/// Reads a recording from bytes, handing each trace batch to `visit` (with the
/// dictionaries known so far) instead of storing it. The returned recording holds
/// everything else (header, dictionaries, samples, aggregates, damage) and an empty
/// `traces`. Damage after the header is reported in `damage`, as
/// [`Recording::from_bytes`] does.
pub fn scan_bytes(
    bytes: &[u8],
    mut visit: impl FnMut(&Recording, &TraceBatch),
) -> Result<Recording, TraceError> {
    let mut chunks = ChunkReader::new(bytes)?;
    let mut rec = header_only(bytes, &mut chunks)?;
    let tail_damage = std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Decoded>(DECODED_AHEAD);
        let producer = s.spawn(move || {
            for c in chunks.by_ref() {
                let records = if c.kind == ChunkKind::Data as u8 {
                    jscope_format::decode_payload(&c.payload)
                } else {
                    Ok(vec![])
                };
                if tx.send((c.offset, records)).is_err() {
                    break;
                }
            }
            chunks.damage().cloned()
        });
        for (offset, records) in rx.iter() {
            if !apply_decoded(&mut rec, offset, records, &mut visit) {
                break;
            }
        }
        drop(rx);
        producer.join().expect("the chunk decoder does not panic")
    });
    if rec.damage.is_none() {
        rec.damage = tail_damage;
    }
    Ok(rec)
}

/// Reads a file with [`scan_bytes`].
pub fn scan_file(
    path: &std::path::Path,
    visit: impl FnMut(&Recording, &TraceBatch),
) -> Result<Recording, TraceError> {
    let bytes = std::fs::read(path).map_err(|e| TraceError::Io(e.to_string()))?;
    scan_bytes(&bytes, visit)
}

/// Hands the batches of an already decoded recording to `visit`.
pub fn scan_recording(rec: &Recording, mut visit: impl FnMut(&Recording, &TraceBatch)) {
    for b in &rec.traces {
        visit(rec, b);
    }
}

/// The recording with just its header chunk read.
fn header_only(bytes: &[u8], chunks: &mut ChunkReader) -> Result<Recording, TraceError> {
    let Some(first) = chunks.next() else {
        // Let the format crate word the error.
        return Ok(Recording::from_bytes(bytes)?);
    };
    let end = first.offset as usize + first.stored_len;
    Ok(Recording::from_bytes(&bytes[..end])?)
}

/// Adds one decoded chunk; false when it was damaged (reading stops there).
fn apply_decoded(
    rec: &mut Recording,
    offset: u64,
    records: Result<Vec<Record>, FormatError>,
    visit: &mut impl FnMut(&Recording, &TraceBatch),
) -> bool {
    match records {
        Ok(records) => {
            for r in records {
                match r {
                    Record::Trace(b) => visit(rec, &b),
                    other => rec.apply(other),
                }
            }
            rec.chunks += 1;
            true
        }
        Err(e) => {
            rec.damage = Some(Damage {
                offset,
                chunk_index: rec.chunks,
                reason: e.to_string(),
            });
            false
        }
    }
}
