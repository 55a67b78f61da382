//! The primitives of a JFR chunk: big-endian fixed-width numbers, compressed
//! integers (LEB128-like varints whose ninth byte carries a full 8 bits) and the
//! six string encodings. Every read is bounds-checked.

use crate::JfrError;

/// A string as it is stored: inline, absent, or a key into the string pool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JString {
    Null,
    Inline(String),
    Pool(i64),
}

pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Whether `short`, `char`, `int` and `long` are varints (chunk header flag bit 0).
    compressed: bool,
}

fn truncated() -> JfrError {
    JfrError::Malformed("ends early".into())
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], compressed: bool) -> Self {
        Cursor {
            buf,
            pos: 0,
            compressed,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], JfrError> {
        let end = self.pos.checked_add(n).ok_or_else(truncated)?;
        let b = self.buf.get(self.pos..end).ok_or_else(truncated)?;
        self.pos = end;
        Ok(b)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, JfrError> {
        Ok(self.bytes(1)?[0])
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], JfrError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    pub(crate) fn be_i16(&mut self) -> Result<i16, JfrError> {
        self.fixed().map(i16::from_be_bytes)
    }

    pub(crate) fn be_i32(&mut self) -> Result<i32, JfrError> {
        self.fixed().map(i32::from_be_bytes)
    }

    pub(crate) fn be_i64(&mut self) -> Result<i64, JfrError> {
        self.fixed().map(i64::from_be_bytes)
    }

    /// A compressed integer: 7 bits a byte, low first; the ninth byte gives 8.
    pub(crate) fn varint(&mut self) -> Result<u64, JfrError> {
        let mut v = 0u64;
        for i in 0..8 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Ok(v | (u64::from(self.u8()?) << 56))
    }

    pub(crate) fn short(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            Ok(self.varint()? as i16 as i64)
        } else {
            self.be_i16().map(i64::from)
        }
    }

    pub(crate) fn int(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            Ok(self.varint()? as i32 as i64)
        } else {
            self.be_i32().map(i64::from)
        }
    }

    pub(crate) fn long(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            Ok(self.varint()? as i64)
        } else {
            self.be_i64()
        }
    }

    /// A count (array length, string length) that must fit in what is left, so a
    /// corrupt count cannot ask for a huge allocation.
    pub(crate) fn count(&mut self) -> Result<usize, JfrError> {
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| JfrError::Malformed(format!("count {n} exceeds the data")))
    }

    pub(crate) fn f32(&mut self) -> Result<f64, JfrError> {
        self.fixed().map(|b| f64::from(f32::from_be_bytes(b)))
    }

    pub(crate) fn f64(&mut self) -> Result<f64, JfrError> {
        self.fixed().map(f64::from_be_bytes)
    }

    /// A string in any of JFR's encodings: 0 null, 1 empty, 2 pool key, 3 UTF-8,
    /// 4 char array, 5 Latin-1.
    pub(crate) fn string(&mut self) -> Result<JString, JfrError> {
        Ok(match self.u8()? {
            0 => JString::Null,
            1 => JString::Inline(String::new()),
            2 => JString::Pool(self.long()?),
            3 => {
                let n = self.count()?;
                JString::Inline(String::from_utf8_lossy(self.bytes(n)?).into_owned())
            }
            4 => {
                let n = self.count()?;
                let units = (0..n)
                    .map(|_| self.short().map(|c| c as u16))
                    .collect::<Result<Vec<u16>, _>>()?;
                JString::Inline(String::from_utf16_lossy(&units))
            }
            5 => {
                let n = self.count()?;
                JString::Inline(self.bytes(n)?.iter().map(|&b| char::from(b)).collect())
            }
            e => return Err(JfrError::Malformed(format!("unknown string encoding {e}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_take_seven_bits_a_byte_and_eight_in_the_ninth() {
        let mut c = Cursor::new(&[0xac, 0x02], true);
        assert_eq!(c.int().unwrap(), 300);
        let all = [0xff; 9];
        assert_eq!(Cursor::new(&all, true).long().unwrap(), -1);
        assert_eq!(Cursor::new(&[0, 0, 1, 44], false).int().unwrap(), 300);
    }

    #[test]
    fn strings_in_every_encoding() {
        let bytes = [
            0, 1, 2, 7, 3, 2, b'h', b'i', 4, 2, 0x68, 0xc9, 0x01, 5, 2, b'o', 0xe9,
        ];
        let mut c = Cursor::new(&bytes, true);
        assert_eq!(c.string().unwrap(), JString::Null);
        assert_eq!(c.string().unwrap(), JString::Inline(String::new()));
        assert_eq!(c.string().unwrap(), JString::Pool(7));
        assert_eq!(c.string().unwrap(), JString::Inline("hi".into()));
        assert_eq!(c.string().unwrap(), JString::Inline("hÉ".into()));
        assert_eq!(c.string().unwrap(), JString::Inline("oé".into()));
        assert!(c.string().is_err());
    }

    #[test]
    fn a_count_larger_than_the_data_is_an_error_not_an_allocation() {
        let mut c = Cursor::new(&[3, 0xff, 0xff, 0xff, 0x07], true);
        assert!(c.string().is_err());
    }
}
