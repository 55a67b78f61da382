//! Streaming over a recording's trace batches without keeping them: one thread
//! reads, decompresses and decodes chunks while the caller consumes the previous
//! ones. Files are read chunk by chunk, never whole, so memory stays bounded by
//! what the caller keeps (per-thread stacks and per-method totals, or tree nodes).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::mpsc::sync_channel;

use jscope_format::{
    ChunkKind, ChunkReader, ChunkStream, Damage, FormatError, RawChunk, Record, Recording,
    TraceBatch,
};

/// Why a recording could not be read at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("{0}")]
    Format(#[from] FormatError),
    #[error("{0}")]
    Io(String),
}

/// How far a scan has got, handed to a progress callback after each chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScanProgress {
    /// Bytes of the recording read so far.
    pub bytes: u64,
    /// Its size (0 when unknown).
    pub total_bytes: u64,
    /// Trace events handed to the visitor so far.
    pub events: u64,
}

/// Chunks decoded ahead of the consumer; enough to keep both cores busy.
const DECODED_AHEAD: usize = 4;

/// A chunk as the decoding thread hands it over.
enum Decoded {
    Data {
        offset: u64,
        end: u64,
        records: Result<Vec<Record>, FormatError>,
    },
    /// A chunk kind this reader does not know: counted as skipped.
    Other { end: u64 },
}

/// Reads a recording from bytes, handing each trace batch to `visit` (with the
/// dictionaries known so far) instead of storing it. The returned recording holds
/// everything else (header, dictionaries, samples, aggregates, damage) and an empty
/// `traces`. Damage after the header is reported in `damage`, as
/// [`Recording::from_bytes`] does.
pub fn scan_bytes(
    bytes: &[u8],
    visit: impl FnMut(&Recording, &TraceBatch),
) -> Result<Recording, TraceError> {
    let version = jscope_format::check_magic(bytes)?;
    let mut chunks = ChunkReader::new(bytes)?;
    let first = chunks.next();
    let rec = Recording::from_header_chunk(version, first.as_ref(), chunks.damage())?;
    let total = bytes.len() as u64;
    let mut ends = ChunkEnds(chunks);
    Ok(scan_chunks(
        rec,
        &mut ends,
        |c| c.0.damage().cloned(),
        total,
        &mut |_| {},
        visit,
    ))
}

/// [`ChunkReader`] with each chunk's end offset, as [`ChunkStream`] knows it.
struct ChunkEnds<'a>(ChunkReader<'a>);

impl Iterator for ChunkEnds<'_> {
    type Item = (RawChunk, u64);

    fn next(&mut self) -> Option<(RawChunk, u64)> {
        let c = self.0.next()?;
        let end = c.offset + c.stored_len as u64;
        Some((c, end))
    }
}

/// [`ChunkStream`] with each chunk's end offset.
struct StreamEnds<R>(ChunkStream<R>);

impl<R: std::io::Read> Iterator for StreamEnds<R> {
    type Item = (RawChunk, u64);

    fn next(&mut self) -> Option<(RawChunk, u64)> {
        let c = self.0.next()?;
        Some((c, self.0.position()))
    }
}

/// Reads a recording file as [`scan_bytes`] does, one chunk at a time (the file is
/// never held whole in memory).
pub fn scan_file(
    path: &Path,
    visit: impl FnMut(&Recording, &TraceBatch),
) -> Result<Recording, TraceError> {
    scan_file_with_progress(path, &mut |_| {}, visit)
}

/// [`scan_file`], calling `progress` after each chunk.
pub fn scan_file_with_progress(
    path: &Path,
    progress: &mut dyn FnMut(ScanProgress),
    visit: impl FnMut(&Recording, &TraceBatch),
) -> Result<Recording, TraceError> {
    let io = |e: std::io::Error| TraceError::Io(e.to_string());
    let file = File::open(path).map_err(io)?;
    let total = file.metadata().map_err(io)?.len();
    let mut stream = ChunkStream::new(BufReader::with_capacity(1 << 20, file))?;
    let first = stream.next();
    let rec = Recording::from_header_chunk(stream.version(), first.as_ref(), stream.damage())?;
    let mut ends = StreamEnds(stream);
    Ok(scan_chunks(
        rec,
        &mut ends,
        |s| s.0.damage().cloned(),
        total,
        progress,
        visit,
    ))
}

/// Hands the batches of an already decoded recording to `visit`.
pub fn scan_recording(rec: &Recording, mut visit: impl FnMut(&Recording, &TraceBatch)) {
    for b in &rec.traces {
        visit(rec, b);
    }
}

/// Decodes `chunks` (after the header) on a second thread and applies them to
/// `rec` in order, trace batches to `visit`; stops at the first damage.
fn scan_chunks<I>(
    mut rec: Recording,
    chunks: &mut I,
    damage_of: impl FnOnce(&I) -> Option<Damage> + Send,
    total_bytes: u64,
    progress: &mut dyn FnMut(ScanProgress),
    mut visit: impl FnMut(&Recording, &TraceBatch),
) -> Recording
where
    I: Iterator<Item = (RawChunk, u64)> + Send,
{
    let mut events = 0u64;
    let tail_damage = std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Decoded>(DECODED_AHEAD);
        let producer = s.spawn(move || {
            for (c, end) in chunks.by_ref() {
                let decoded = if c.kind == ChunkKind::Data as u8 {
                    Decoded::Data {
                        offset: c.offset,
                        end,
                        records: jscope_format::decode_payload(&c.payload),
                    }
                } else if c.kind == ChunkKind::Summary as u8 {
                    continue; // the data chunk after it says it all again
                } else {
                    Decoded::Other { end }
                };
                if tx.send(decoded).is_err() {
                    break;
                }
            }
            damage_of(chunks)
        });
        for decoded in rx.iter() {
            let end = match decoded {
                Decoded::Data {
                    offset,
                    end,
                    records,
                } => {
                    let ok = apply_decoded(&mut rec, offset, records, &mut |r, b| {
                        events += b.events.len() as u64;
                        visit(r, b)
                    });
                    if !ok {
                        break;
                    }
                    end
                }
                Decoded::Other { end } => {
                    rec.skipped_records += 1;
                    rec.chunks += 1;
                    end
                }
            };
            progress(ScanProgress {
                bytes: end,
                total_bytes,
                events,
            });
        }
        drop(rx);
        producer.join().expect("the chunk decoder does not panic")
    });
    if rec.damage.is_none() {
        rec.damage = tail_damage;
    }
    rec
}

/// Adds one decoded chunk; false when it was damaged (reading stops there).
fn apply_decoded(
    rec: &mut Recording,
    offset: u64,
    records: Result<Vec<Record>, FormatError>,
    visit: &mut dyn FnMut(&Recording, &TraceBatch),
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
