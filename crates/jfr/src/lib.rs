//! JDK Flight Recorder files in and out of jscope's model: every reading command
//! works on `.jfr` as on `.jsc`, a recording read from JFR is kept as a `.jsc`
//! ([`encode_jsc`]), and any recording is written as JFR ([`encode_jfr`],
//! [`JfrWriter`]) for the JDK's tools, JMC, IDEs and async-profiler's converter.
//!
//! JFR files from JDK 11 to 25 (format 2.x) and from async-profiler are read:
//! chunks, the metadata event, constant pools (split over any number of
//! checkpoints), compressed integers and every string encoding. A truncated or
//! corrupt file is read up to the damage, which is reported in
//! [`Recording::damage`] as for a damaged `.jsc`. See docs/JFR.md; what a
//! written file holds is in docs/EXPORT.md.

mod build;
mod chunk;
mod cursor;
mod jsc;
mod metadata;
mod names;
mod value;
mod write;

use std::path::Path;

use jscope_format::{Damage, Recording};

use crate::build::{Builder, MAPPED, USER_EVENT_PREFIX};
use crate::chunk::{read_chunk, Chunk, MAGIC};
use crate::value::View;

pub use crate::jsc::encode_jsc;
pub use crate::write::{encode_jfr, write_jfr, EventCounts, JfrChunk, JfrWriter};

/// Why bytes could not be read as JFR at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JfrError {
    #[error("not a JFR file: {0}")]
    NotJfr(String),
    #[error("JFR format {0}.{1} is not supported (JDK 11 and later write 2.x)")]
    Unsupported(u16, u16),
    #[error("malformed JFR: {0}")]
    Malformed(String),
    #[error("{0}")]
    Io(String),
}

/// Whether `bytes` start as a JFR file does.
pub fn is_jfr(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

pub fn read_file(path: &Path) -> Result<Recording, JfrError> {
    let bytes = std::fs::read(path).map_err(|e| JfrError::Io(e.to_string()))?;
    read_bytes(&bytes)
}

/// Reads every chunk up to the first damage; fails only when `bytes` are not JFR or
/// use a format version this reader does not know.
pub fn read_bytes(bytes: &[u8]) -> Result<Recording, JfrError> {
    if !is_jfr(bytes) {
        return Err(JfrError::NotJfr("it does not start with FLR\\0".into()));
    }
    let mut b = Builder::new();
    let walk = walk_chunks(bytes, &mut b)?;
    let mut rec = b.finish();
    rec.chunks = walk.chunks;
    rec.end_ticks = Some(walk.end_ns).filter(|&ns| ns > 0 && walk.damage.is_none());
    rec.damage = walk.damage;
    Ok(rec)
}

/// What walking the chunks found besides their events.
struct Walk {
    chunks: u64,
    /// The latest chunk end, epoch nanoseconds.
    end_ns: u64,
    damage: Option<Damage>,
}

/// Maps chunk after chunk into `b` until the end of `bytes` or the first damage.
fn walk_chunks(bytes: &[u8], b: &mut Builder) -> Result<Walk, JfrError> {
    let wanted = |name: &str| MAPPED.contains(&name) || name.starts_with(USER_EVENT_PREFIX);
    let mut walk = Walk {
        chunks: 0,
        end_ns: 0,
        damage: None,
    };
    let mut at = 0usize;
    while at < bytes.len() {
        let chunk = match read_chunk(bytes, at, &wanted) {
            Ok(c) => c,
            Err(e @ JfrError::Unsupported(..)) if walk.chunks == 0 => return Err(e),
            Err(e) => {
                walk.damage = Some(damage_at(at as u64, walk.chunks, e.to_string()));
                break;
            }
        };
        if walk.chunks == 0 {
            start_header(b, &chunk);
        }
        b.async_profiler |= chunk.meta.id_of("profiler.WallClockSample").is_some();
        map_chunk(b, &chunk);
        let h = chunk.header;
        walk.end_ns = walk
            .end_ns
            .max(h.start_nanos.saturating_add(h.duration_nanos).max(0) as u64);
        if let Some((offset, reason)) = chunk.damage {
            walk.damage = Some(damage_at(offset, walk.chunks, reason));
        }
        walk.chunks += 1;
        match chunk.next {
            Some(next) if walk.damage.is_none() => at = next,
            _ => break,
        }
    }
    Ok(walk)
}

fn damage_at(offset: u64, chunk_index: u64, reason: String) -> Damage {
    Damage {
        offset,
        chunk_index,
        reason,
    }
}

/// Ticks in the recording are epoch nanoseconds, whatever each chunk's clock is.
fn start_header(b: &mut Builder, chunk: &Chunk) {
    let h = &mut b.rec.header;
    let start = chunk.header.start_nanos.max(0) as u64;
    h.start_wall_ns = start;
    h.start_ticks = start;
    b.rec.version = (jscope_format::VERSION_MAJOR, jscope_format::VERSION_MINOR);
    h.extra.push((
        "jfr_version".into(),
        format!("{}.{}", chunk.header.major, chunk.header.minor),
    ));
}

fn map_chunk(b: &mut Builder, chunk: &Chunk) {
    let view = View {
        meta: &chunk.meta,
        pools: &chunk.pools,
        clock: chunk.header.clock(),
    };
    b.names.new_chunk();
    for (ty, e) in &chunk.events {
        if let Some(class) = chunk.meta.classes.get(ty) {
            b.event(&view, class, e);
        }
    }
}
