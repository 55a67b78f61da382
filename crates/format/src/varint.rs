//! LEB128 variable-length integers and the byte cursor the decoders share.

use crate::FormatError;

pub(crate) fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The most bytes a varint of a u64 takes.
pub(crate) const MAX_VARINT: usize = 10;

/// Varint length by leading zeros of the value (at least 1 byte).
const VARINT_LEN: [u8; 65] = {
    let mut t = [1u8; 65];
    let mut lz = 0;
    while lz < 64 {
        t[lz] = (64 - lz).div_ceil(7) as u8;
        lz += 1;
    }
    t
};

/// The continuation bits of a varint of `n` bytes below 2^35 (`n` <= 5).
const CONTINUATION: [u64; 6] = [0, 0, 0x80, 0x8080, 0x80_8080, 0x8080_8080];

/// Writes `v` at `buf[pos..]` and returns the position after it; `buf` must have
/// room for [`MAX_VARINT`] bytes from `pos`, and values below 2^35 (ids, counts,
/// short time deltas) store 8 bytes there of which the varint's length counts.
/// The hot loop of the trace encoder writes into a slice sized once per batch
/// instead of pushing byte by byte, and this form has no branch on the length.
#[inline(always)]
pub(crate) fn write_u64(buf: &mut [u8], pos: usize, v: u64) -> usize {
    if v < 1 << 14 {
        // Most of a trace's fields (method ids, kinds, short time deltas,
        // untraced counts): one or two bytes, in half the instructions.
        let two = u64::from(v >= 0x80);
        let word = (v & 0x7f) | ((v << 1) & 0x7f00) | (two << 7);
        buf[pos..pos + 2].copy_from_slice(&(word as u16).to_le_bytes());
        return pos + 1 + two as usize;
    }
    if v < 1 << 35 {
        // 7 bits a byte, spread into up to 5 bytes, continuation bits on all but
        // the last byte.
        let spread = (v & 0x7f)
            | ((v & (0x7f << 7)) << 1)
            | ((v & (0x7f << 14)) << 2)
            | ((v & (0x7f << 21)) << 3)
            | ((v & (0x7f << 28)) << 4);
        let n = VARINT_LEN[(v | 1).leading_zeros() as usize] as usize;
        let cont = CONTINUATION[n];
        buf[pos..pos + 8].copy_from_slice(&(spread | cont).to_le_bytes());
        return pos + n;
    }
    let (mut pos, mut v) = (pos, v);
    while v >= 0x80 {
        buf[pos] = (v as u8) | 0x80;
        v >>= 7;
        pos += 1;
    }
    buf[pos] = v as u8;
    pos + 1
}

/// [`write_u64`] of a zigzag-encoded `v`.
#[inline(always)]
pub(crate) fn write_i64(buf: &mut [u8], pos: usize, v: i64) -> usize {
    write_u64(buf, pos, ((v << 1) ^ (v >> 63)) as u64)
}

/// Zigzag keeps small negative numbers (a bci of -1, a backwards time step) short.
pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, ((v << 1) ^ (v >> 63)) as u64);
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Reads primitives from a record body; every read is bounds-checked.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn u64(&mut self) -> Result<u64, FormatError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(FormatError::Truncated)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FormatError::Malformed("varint longer than 10 bytes".into()))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, FormatError> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| FormatError::Malformed(format!("value {v} exceeds u32")))
    }

    /// A typed id (a varint that fits a `u32`).
    pub(crate) fn id<T: From<u32>>(&mut self) -> Result<T, FormatError> {
        self.u32().map(T::from)
    }

    pub(crate) fn i64(&mut self) -> Result<i64, FormatError> {
        let v = self.u64()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub(crate) fn u8(&mut self) -> Result<u8, FormatError> {
        let b = *self.buf.get(self.pos).ok_or(FormatError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self.pos.checked_add(n).ok_or(FormatError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(FormatError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    pub(crate) fn string(&mut self) -> Result<String, FormatError> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| FormatError::Truncated)?;
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| FormatError::Malformed("string is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_unsigned_and_signed_extremes() {
        let mut out = Vec::new();
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            put_u64(&mut out, v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            put_i64(&mut out, v);
        }
        let mut c = Cursor::new(&out);
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            assert_eq!(c.u64().unwrap(), v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(c.i64().unwrap(), v);
        }
        assert!(c.is_empty());
    }

    #[test]
    fn small_values_take_one_byte() {
        let mut out = Vec::new();
        put_u64(&mut out, 127);
        put_i64(&mut out, -64);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn slice_writer_matches_put_u64() {
        let mut values: Vec<u64> = vec![0, 1, 127, 128, 16383, 16384, (1 << 35) - 1, 1 << 35];
        values.extend((0..64).map(|b| 1u64 << b));
        values.extend((1..64).map(|b| (1u64 << b) - 1));
        values.push(u64::MAX);
        for v in values {
            let mut want = Vec::new();
            put_u64(&mut want, v);
            let mut buf = [0xffu8; 24];
            let n = write_u64(&mut buf, 3, v);
            assert_eq!(&buf[3..n], &want[..], "{v}");
        }
    }

    #[test]
    fn truncated_varint_is_an_error() {
        let mut c = Cursor::new(&[0x80, 0x80]);
        assert!(matches!(c.u64(), Err(FormatError::Truncated)));
    }
}
