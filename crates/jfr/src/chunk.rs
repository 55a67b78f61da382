//! Chunks: a JFR file is one or more self-contained chunks, each a 68-byte header,
//! then events. Every event is `size type fields...`; type 0 is the metadata event
//! (the chunk's types), type 1 a checkpoint (constant pool entries). A chunk's
//! events and pools are read whole before they are interpreted, since an event may
//! refer to pool entries written after it.

use std::collections::HashSet;

use crate::cursor::Cursor;
use crate::metadata::{read_metadata, Metadata};
use crate::value::{Clock, Pools, Reader, Value};
use crate::JfrError;

pub const MAGIC: &[u8; 4] = b"FLR\0";
const HEADER_LEN: usize = 68;
const TYPE_METADATA: i64 = 0;
const TYPE_CHECKPOINT: i64 = 1;

#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkHeader {
    pub major: u16,
    pub minor: u16,
    pub size: i64,
    pub metadata_offset: i64,
    pub start_nanos: i64,
    pub duration_nanos: i64,
    pub start_ticks: i64,
    pub ticks_per_second: i64,
    pub compressed: bool,
}

impl ChunkHeader {
    fn read(b: &[u8]) -> Result<ChunkHeader, JfrError> {
        let mut c = Cursor::new(b, false);
        if c.bytes(4)? != MAGIC {
            return Err(JfrError::Malformed("no chunk magic".into()));
        }
        let major = c.be_i16()? as u16;
        let minor = c.be_i16()? as u16;
        let size = c.be_i64()?;
        let _cpool_offset = c.be_i64()?;
        let metadata_offset = c.be_i64()?;
        let start_nanos = c.be_i64()?;
        let duration_nanos = c.be_i64()?;
        let start_ticks = c.be_i64()?;
        let ticks_per_second = c.be_i64()?;
        let features = c.be_i32()?;
        Ok(ChunkHeader {
            major,
            minor,
            size,
            metadata_offset,
            start_nanos,
            duration_nanos,
            start_ticks,
            ticks_per_second,
            compressed: features & 1 != 0,
        })
    }

    pub(crate) fn clock(&self) -> Clock {
        Clock {
            start_nanos: self.start_nanos,
            start_ticks: self.start_ticks,
            ticks_per_second: self.ticks_per_second,
        }
    }
}

/// One chunk read as far as it goes.
pub(crate) struct Chunk {
    pub header: ChunkHeader,
    pub meta: Metadata,
    pub pools: Pools,
    /// Events of the wanted types, in file order: (type id, value).
    pub events: Vec<(i64, Value)>,
    /// Where and why reading this chunk stopped early (offset in the file).
    pub damage: Option<(u64, String)>,
    /// Offset of the next chunk, when this one is whole.
    pub next: Option<usize>,
}

/// Reads the chunk at `at`. Errors only when there is no chunk header to read.
pub(crate) fn read_chunk(
    file: &[u8],
    at: usize,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Chunk, JfrError> {
    let rest = &file[at.min(file.len())..];
    if rest.len() < HEADER_LEN {
        return Err(JfrError::Malformed(format!(
            "chunk header cut: {} of {HEADER_LEN} bytes",
            rest.len()
        )));
    }
    let header = ChunkHeader::read(&rest[..HEADER_LEN])?;
    if header.major != 2 {
        return Err(JfrError::Unsupported(header.major, header.minor));
    }
    let mut chunk = Chunk {
        header,
        meta: Metadata::default(),
        pools: Pools::default(),
        events: Vec::new(),
        damage: None,
        next: None,
    };
    let whole = usize::try_from(header.size)
        .ok()
        .filter(|&s| s >= HEADER_LEN && s <= rest.len());
    let body = match whole {
        Some(s) => {
            chunk.next = Some(at + s);
            &rest[..s]
        }
        None => {
            chunk.damage = Some((
                file.len() as u64,
                format!(
                    "chunk cut: {} of its {} bytes are there",
                    rest.len(),
                    header.size
                ),
            ));
            rest
        }
    };
    match read_metadata_at(body, &header) {
        Ok(meta) => chunk.meta = meta,
        Err(e) => {
            let at_meta = at as u64 + header.metadata_offset.max(0) as u64;
            chunk.damage = Some(match chunk.damage.take() {
                // The JDK writes the metadata after the first events: a cut before
                // it is damage at the cut, not at an offset past the file's end.
                Some((end, cut)) if at_meta >= end => (
                    end,
                    format!("{cut}; its metadata event (at byte {at_meta}) is past the cut"),
                ),
                _ => (at_meta, format!("no readable metadata event: {e}")),
            });
            chunk.next = None;
            return Ok(chunk);
        }
    }
    if let Err((offset, e)) = read_events(&mut chunk, body, wanted) {
        // In a cut chunk, the event the cut falls in is the damage, not its fault.
        let reason = match chunk.damage.take() {
            Some((_, cut)) => format!("{cut}; the event at byte {} runs past the end", at + offset),
            None => e.to_string(),
        };
        chunk.damage = Some((at as u64 + offset as u64, reason));
        chunk.next = None;
    }
    Ok(chunk)
}

fn read_metadata_at(body: &[u8], h: &ChunkHeader) -> Result<Metadata, JfrError> {
    let off = usize::try_from(h.metadata_offset)
        .ok()
        .filter(|&o| o >= HEADER_LEN && o < body.len())
        .ok_or_else(|| JfrError::Malformed("metadata offset outside the chunk".into()))?;
    let (mut c, ty) = event_at(body, off, h.compressed)?;
    if ty != TYPE_METADATA {
        return Err(JfrError::Malformed(format!("event type {ty}, not 0")));
    }
    read_metadata(&mut c)
}

/// The body cursor of the event at `off` (past its size and type), and its type.
fn event_at(body: &[u8], off: usize, compressed: bool) -> Result<(Cursor<'_>, i64), JfrError> {
    let mut c = Cursor::new(&body[off..], compressed);
    let size = c.int()?;
    let len = usize::try_from(size)
        .ok()
        .filter(|&s| s > 0 && s <= body.len() - off)
        .ok_or_else(|| JfrError::Malformed(format!("event size {size} does not fit")))?;
    let mut c = Cursor::new(&body[off..off + len], compressed);
    c.int()?;
    let ty = c.long()?;
    Ok((c, ty))
}

fn read_events(
    chunk: &mut Chunk,
    body: &[u8],
    wanted: &dyn Fn(&str) -> bool,
) -> Result<(), (usize, JfrError)> {
    let compressed = chunk.header.compressed;
    let Chunk {
        meta,
        pools,
        events,
        ..
    } = chunk;
    let reader = Reader::new(meta);
    // Decided once per type, not per event.
    let keep: HashSet<i64> = meta
        .classes
        .iter()
        .filter(|(_, c)| wanted(&c.name))
        .map(|(&id, _)| id)
        .collect();
    let mut off = HEADER_LEN;
    while off < body.len() {
        let (mut c, ty) = event_at(body, off, compressed).map_err(|e| (off, e))?;
        let len = event_len(body, off, compressed);
        reader.begin(len);
        match ty {
            TYPE_METADATA => Ok(()),
            TYPE_CHECKPOINT => read_checkpoint(&mut c, &reader, pools),
            _ if keep.contains(&ty) => reader.value(&mut c, ty, 0).map(|v| events.push((ty, v))),
            _ => Ok(()),
        }
        .map_err(|e| (off, e))?;
        off += len;
    }
    Ok(())
}

fn event_len(body: &[u8], off: usize, compressed: bool) -> usize {
    let mut c = Cursor::new(&body[off..], compressed);
    c.int().map_or(body.len(), |s| s as usize)
}

fn read_checkpoint(c: &mut Cursor, r: &Reader, pools: &mut Pools) -> Result<(), JfrError> {
    let _start = c.long()?;
    let _duration = c.long()?;
    let _delta = c.long()?;
    let _type_mask = c.u8()?;
    let n = c.count()?;
    for _ in 0..n {
        let class = c.long()?;
        let entries = c.count()?;
        for _ in 0..entries {
            let key = c.long()?;
            let v = r.value(c, class, 0)?;
            pools.insert(class, key, v);
        }
    }
    Ok(())
}
