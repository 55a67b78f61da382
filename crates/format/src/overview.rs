//! A recording counted rather than kept: what `jscope info` needs, read from the
//! chunk summaries without decompressing the chunks they describe, and by
//! decoding one chunk at a time where there is no summary (older recordings) or
//! the chunk holds samples, snapshots or stacks.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::chunk::{check_magic, split_chunk, ChunkKind, Split, FRAME_PEEK, MAGIC};
use crate::model::TraceCounts;
use crate::read::{Damage, Recording};
use crate::record::{decode_payload_counting_traces, Record};
use crate::summary::{decode_summary, ChunkSummary};
use crate::FormatError;

/// A recording's contents counted chunk by chunk, with bounded memory.
#[derive(Debug, Clone, Default)]
pub struct Overview {
    /// The header, threads, counters, end, damage and chunk counts; the samples,
    /// snapshots, stacks and names of the chunks that had to be decoded. Never
    /// trace events, JVM events, remote calls or call aggregates (counted below).
    pub rec: Recording,
    /// Trace events by kind over the whole recording.
    pub trace: TraceCounts,
    /// JVM events (thread, monitor, GC, ...) over the whole recording.
    pub jvm_events: u64,
    /// The same by kind name (`monitor`, `gc`, ...; [`crate::EVENT_KINDS`]).
    pub jvm_events_by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Latest trace or JVM event time seen; see [`Overview::duration_ns`].
    pub last_event_ticks: u64,
    /// Data chunks counted from their summary, without decompressing them.
    pub summarized_chunks: u64,
    /// Data chunks decoded (no summary, or samples, snapshots or stacks in them).
    pub decoded_chunks: u64,
}

impl Overview {
    /// Counts a recording file. Fails only when it does not start with a readable
    /// header; later damage is in `rec.damage`, everything before it counted. A
    /// chunk counted from its summary is checked for its length (a cut file is
    /// found), not for its checksum, which needs its bytes read.
    pub fn read_file(path: &Path) -> Result<Overview, FormatError> {
        let io = |e: std::io::Error| FormatError::Io(e.to_string());
        let mut file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut o = Overview {
            rec: read_header(&mut file, len)?,
            ..Default::default()
        };
        let mut pos = header_end(&mut file, len)?;
        let mut frames = 1u64;
        let mut summary: Option<ChunkSummary> = None;
        let mut peek = [0u8; FRAME_PEEK];
        while pos < len {
            let rest = len - pos;
            let got = read_at(
                &mut file,
                pos,
                &mut peek[..rest.min(FRAME_PEEK as u64) as usize],
            )
            .map_err(io)?;
            let total = match frame_len(got) {
                Ok(Some(total)) if total <= rest => total,
                Ok(Some(total)) => {
                    o.damage(
                        pos,
                        frames,
                        format!("truncated chunk: needs {total} bytes, only {rest} remain"),
                    );
                    break;
                }
                Ok(None) => {
                    o.damage(
                        pos,
                        frames,
                        format!("truncated chunk: needs 8 bytes, only {rest} remain"),
                    );
                    break;
                }
                Err(e) => {
                    o.damage(pos, frames, e.to_string());
                    break;
                }
            };
            let kind = got[FRAME_PEEK - 1];
            let described = summary
                .take()
                .filter(|s| s.data_len == total && s.is_enough());
            if let (Some(s), true) = (described, kind == ChunkKind::Data as u8) {
                o.add_summary(s);
                pos += total;
                frames += 1;
                continue;
            }
            let mut bytes = vec![0u8; total as usize];
            file.seek(SeekFrom::Start(pos)).map_err(io)?;
            file.read_exact(&mut bytes).map_err(io)?;
            let chunk = match split_chunk(&bytes, pos) {
                Ok(Split::Chunk(c)) => c,
                Ok(Split::NeedMore(n)) => {
                    o.damage(
                        pos,
                        frames,
                        format!("truncated chunk: needs {n} bytes, only {rest} remain"),
                    );
                    break;
                }
                Err(e) => {
                    o.damage(pos, frames, e.to_string());
                    break;
                }
            };
            frames += 1;
            pos += total;
            if kind == ChunkKind::Summary as u8 {
                // A summary that does not decode only costs decoding its chunk.
                summary = decode_summary(&chunk.payload).ok();
                continue;
            }
            if kind != ChunkKind::Data as u8 {
                o.rec.skipped_records += 1;
                o.rec.chunks += 1;
                continue;
            }
            let counted = decode_payload_counting_traces(
                &chunk.payload,
                &mut o.trace,
                &mut o.last_event_ticks,
            );
            match counted {
                Ok(records) => {
                    for r in records {
                        o.add(r);
                    }
                    o.rec.chunks += 1;
                    o.decoded_chunks += 1;
                }
                Err(e) => {
                    let chunk_index = o.rec.chunks;
                    o.rec.damage = Some(Damage {
                        offset: chunk.offset,
                        chunk_index,
                        reason: e.to_string(),
                    });
                    break;
                }
            }
        }
        Ok(o)
    }

    /// From the start to the clean end, or else to the last event counted, as
    /// [`Recording::duration_ns`] of the whole recording.
    pub fn duration_ns(&self) -> u64 {
        let last = self
            .rec
            .end_ticks
            .unwrap_or_else(|| self.last_event_ticks.max(self.rec.last_event_ticks()));
        self.rec.ticks_to_ns(last)
    }

    fn damage(&mut self, offset: u64, chunk_index: u64, reason: String) {
        self.rec.damage = Some(Damage {
            offset,
            chunk_index,
            reason,
        });
    }

    fn add_summary(&mut self, s: ChunkSummary) {
        self.trace.add(&s.trace);
        for (&tag, &n) in &s.records {
            if let Some(kind) = crate::EVENT_KINDS.iter().find(|k| k.tag == tag) {
                self.jvm_events += n;
                *self.jvm_events_by_kind.entry(kind.name).or_default() += n;
            }
        }
        self.last_event_ticks = self.last_event_ticks.max(s.last_event_ticks);
        for r in s.copied {
            self.rec.apply(r);
        }
        self.rec.chunks += 1;
        self.summarized_chunks += 1;
    }

    fn add(&mut self, r: Record) {
        match r {
            // Counted by `decode_payload_counting_traces`.
            Record::Trace(_) => {}
            Record::Event(e) => {
                self.jvm_events += 1;
                *self.jvm_events_by_kind.entry(e.kind.name()).or_default() += 1;
                self.last_event_ticks = self.last_event_ticks.max(e.ticks);
            }
            Record::Remote(_) | Record::CallAggregate(_) => {}
            other => self.rec.apply(other),
        }
    }
}

/// The stored length of the chunk whose first bytes are `head`; None when fewer
/// than the 8 frame bytes are there.
fn frame_len(head: &[u8]) -> Result<Option<u64>, FormatError> {
    if head.len() < 8 {
        return Ok(None);
    }
    let body_len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
    if !(3..=crate::MAX_CHUNK_BYTES).contains(&body_len) {
        return Err(FormatError::Malformed(format!(
            "implausible chunk length {body_len}"
        )));
    }
    Ok(Some(8 + body_len as u64))
}

/// Reads up to `buf.len()` bytes at `pos`; the bytes read.
fn read_at<'a>(file: &mut File, pos: u64, buf: &'a mut [u8]) -> std::io::Result<&'a [u8]> {
    file.seek(SeekFrom::Start(pos))?;
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(&buf[..n])
}

/// Where the header chunk ends (the file's end when it is cut).
fn header_end(file: &mut File, len: u64) -> Result<u64, FormatError> {
    let mut head = [0u8; MAGIC.len() + FRAME_PEEK];
    let got = read_at(file, 0, &mut head).map_err(|e| FormatError::Io(e.to_string()))?;
    let total = frame_len(&got[MAGIC.len().min(got.len())..])
        .ok()
        .flatten()
        // An unreadable frame: the magic and the frame are enough for the error.
        .unwrap_or(FRAME_PEEK as u64);
    Ok((MAGIC.len() as u64).saturating_add(total).min(len))
}

/// The recording with just its header chunk read, errors worded as a full read
/// words them.
fn read_header(file: &mut File, len: u64) -> Result<Recording, FormatError> {
    let end = header_end(file, len)?;
    let mut bytes = vec![0u8; end as usize];
    let got = read_at(file, 0, &mut bytes).map_err(|e| FormatError::Io(e.to_string()))?;
    check_magic(got)?;
    let bytes = got.to_vec();
    Recording::from_bytes(&bytes)
}
