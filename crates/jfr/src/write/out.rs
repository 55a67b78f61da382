//! The primitives of a JFR chunk as the JDK writes them with compressed integers:
//! `short`, `int` and `long` as varints (7 bits a byte, low first, the ninth byte
//! carrying a full 8 bits), strings as an encoding byte and UTF-8, and events
//! framed by their size.

/// Bytes being written, with JFR's encodings.
#[derive(Debug, Default, Clone)]
pub(crate) struct Out {
    pub buf: Vec<u8>,
}

/// String encodings (the reader's `Cursor::string` lists them all).
const STRING_NULL: u8 = 0;
const STRING_EMPTY: u8 = 1;
const STRING_UTF8: u8 = 3;

impl Out {
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn u8(&mut self, b: u8) {
        self.buf.push(b);
    }

    pub fn bool(&mut self, b: bool) {
        self.buf.push(u8::from(b));
    }

    /// A compressed `long`: at most 9 bytes, the ninth holding 8 bits.
    pub fn varint(&mut self, mut v: u64) {
        for _ in 0..8 {
            if v < 0x80 {
                self.buf.push(v as u8);
                return;
            }
            self.buf.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    pub fn long(&mut self, v: i64) {
        self.varint(v as u64);
    }

    /// A compressed `int`: a negative value is its 32-bit two's complement, as the
    /// JDK writes it (5 bytes for -1), so readers that sign-extend 32 bits get it back.
    pub fn int(&mut self, v: i32) {
        self.varint(u64::from(v as u32));
    }

    /// A string written inline: null, empty, or UTF-8.
    pub fn string(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(STRING_NULL),
            Some("") => self.u8(STRING_EMPTY),
            Some(s) => self.utf8(s),
        }
    }

    /// A string as UTF-8 even when empty: async-profiler's converter reads symbols
    /// only in this encoding.
    pub fn utf8(&mut self, s: &str) {
        self.u8(STRING_UTF8);
        self.int(s.len() as i32);
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Appends `body` as one event: its size (itself included) then the body.
    pub fn event(&mut self, body: &[u8]) {
        // The size counts its own bytes, which may push it past a varint boundary.
        let mut size_len = 1;
        while varint_len((body.len() + size_len) as u64) > size_len {
            size_len += 1;
        }
        self.int((body.len() + size_len) as i32);
        self.buf.extend_from_slice(body);
    }
}

/// How many bytes `v` takes as a varint.
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).clamp(1, 9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::{Cursor, JString};

    #[test]
    fn integers_read_back_as_the_reader_reads_them() {
        let mut o = Out::default();
        let longs = [0i64, 1, 127, 128, 300, -1, i64::MAX, i64::MIN, 1 << 56];
        for v in longs {
            o.long(v);
        }
        let ints = [0i32, -1, i32::MIN, i32::MAX, 70_000];
        for v in ints {
            o.int(v);
        }
        let mut c = Cursor::new(&o.buf, true);
        for v in longs {
            assert_eq!(c.long().unwrap(), v);
        }
        for v in ints {
            assert_eq!(c.int().unwrap(), i64::from(v));
        }
        assert_eq!(c.remaining(), 0);
        let mut minus_one = Out::default();
        minus_one.int(-1);
        assert_eq!(minus_one.buf, [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn strings_read_back_in_their_encodings() {
        let mut o = Out::default();
        o.string(None);
        o.string(Some(""));
        o.string(Some("héllo"));
        o.utf8("");
        let mut c = Cursor::new(&o.buf, true);
        assert_eq!(c.string().unwrap(), JString::Null);
        assert_eq!(c.string().unwrap(), JString::Inline(String::new()));
        assert_eq!(c.string().unwrap(), JString::Inline("héllo".into()));
        assert_eq!(o.buf[o.buf.len() - 2..], [3, 0]);
    }

    #[test]
    fn an_event_size_counts_its_own_bytes_across_the_varint_boundaries() {
        for body_len in [
            0usize, 1, 125, 126, 127, 128, 16_380, 16_381, 16_382, 16_383,
        ] {
            let mut o = Out::default();
            o.event(&vec![7u8; body_len]);
            let mut c = Cursor::new(&o.buf, true);
            let size = c.int().unwrap() as usize;
            assert_eq!(size, o.buf.len(), "body of {body_len}");
        }
    }

    #[test]
    fn varint_lengths() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
        assert_eq!(varint_len(u64::MAX), 9);
    }
}
