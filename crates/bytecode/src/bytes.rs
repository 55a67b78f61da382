//! Big-endian cursor over class-file bytes and the matching writers.

use crate::ClassError;

/// Reads big-endian values and fails with the offset where the input ran out.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], ClassError> {
        if self.remaining() < n {
            return Err(ClassError::Truncated(self.bytes.len()));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, ClassError> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, ClassError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, ClassError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, ClassError> {
        Ok((u64::from(self.u32()?) << 32) | u64::from(self.u32()?))
    }
}

pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Writes a table length as u16, failing instead of truncating.
pub(crate) fn put_len16(out: &mut Vec<u8>, len: usize) -> Result<(), ClassError> {
    put_u16(out, u16::try_from(len).map_err(|_| ClassError::TooLarge)?);
    Ok(())
}

/// Reads a big-endian i16/i32 at `at` of a code array (bounds already checked by the caller).
pub(crate) fn be_i16(code: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([code[at], code[at + 1]])
}

pub(crate) fn be_i32(code: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([code[at], code[at + 1], code[at + 2], code[at + 3]])
}

pub(crate) fn be_u16(code: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([code[at], code[at + 1]])
}
