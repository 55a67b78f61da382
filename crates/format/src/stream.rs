//! Reading chunks from a file or any reader, one at a time, without holding the
//! whole recording in memory.

use std::io::Read;

use crate::chunk::{check_magic, split_chunk, RawChunk, Split, MAGIC};
use crate::read::Damage;
use crate::FormatError;

/// Iterates over the chunks of a recording read from `R` (a `File`, a
/// `BufReader`), keeping one chunk in memory. Stops at the first damaged or cut
/// chunk, which [`ChunkStream::damage`] then describes, as [`crate::ChunkReader`]
/// does for bytes in memory.
pub struct ChunkStream<R> {
    reader: R,
    buf: Vec<u8>,
    pos: u64,
    index: u64,
    damage: Option<Damage>,
    done: bool,
    version: (u8, u8),
}

impl<R: Read> ChunkStream<R> {
    /// Reads and checks the magic; the first chunk returned is the header chunk.
    pub fn new(mut reader: R) -> Result<Self, FormatError> {
        let mut magic = Vec::with_capacity(MAGIC.len());
        (&mut reader)
            .take(MAGIC.len() as u64)
            .read_to_end(&mut magic)
            .map_err(|e| FormatError::Io(e.to_string()))?;
        let version = check_magic(&magic)?;
        Ok(ChunkStream {
            reader,
            buf: Vec::new(),
            pos: MAGIC.len() as u64,
            index: 0,
            damage: None,
            done: false,
            version,
        })
    }

    /// The format version the magic names.
    pub fn version(&self) -> (u8, u8) {
        self.version
    }

    /// Set once iteration has stopped at damage.
    pub fn damage(&self) -> Option<&Damage> {
        self.damage.as_ref()
    }

    /// Bytes consumed so far, the magic included.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn fail(&mut self, reason: String) -> Option<RawChunk> {
        self.done = true;
        self.damage = Some(Damage {
            offset: self.pos,
            chunk_index: self.index,
            reason,
        });
        None
    }

    /// Reads until `buf` holds `n` bytes; false at the end of the input.
    fn fill(&mut self, n: usize) -> std::io::Result<bool> {
        let have = self.buf.len();
        if have >= n {
            return Ok(true);
        }
        let got = (&mut self.reader)
            .take((n - have) as u64)
            .read_to_end(&mut self.buf)?;
        Ok(have + got >= n)
    }
}

impl<R: Read> Iterator for ChunkStream<R> {
    type Item = RawChunk;

    fn next(&mut self) -> Option<RawChunk> {
        if self.done {
            return None;
        }
        self.buf.clear();
        let mut need = 0;
        loop {
            match split_chunk(&self.buf, self.pos) {
                Ok(Split::Chunk(c)) => {
                    self.pos += c.stored_len as u64;
                    self.index += 1;
                    return Some(c);
                }
                Ok(Split::NeedMore(n)) => {
                    if n <= need {
                        return self.fail(format!("chunk frame claims {n} bytes"));
                    }
                    need = n;
                    match self.fill(n) {
                        Ok(true) => {}
                        Ok(false) if self.buf.is_empty() => {
                            self.done = true; // a clean end between chunks
                            return None;
                        }
                        Ok(false) => {
                            let msg = format!(
                                "truncated chunk: needs {n} bytes, only {} remain",
                                self.buf.len()
                            );
                            return self.fail(msg);
                        }
                        Err(e) => return self.fail(format!("read error: {e}")),
                    }
                }
                Err(e) => return self.fail(e.to_string()),
            }
        }
    }
}
