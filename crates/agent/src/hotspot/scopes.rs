//! A compiled method's debug information: its PcDescs (sorted by the code
//! offset each describes) and the scope records they point to, each naming
//! a method and bytecode index, innermost inlined method first. Every read is
//! fault-free; a record that does not decode ends the chain.

use super::code::Blob;
use super::layout::{Layout, Sections};
use super::mem::Mem;

/// Bytes of one PcDesc: pc offset, scope decode offset, object decode offset, flags.
const PC_DESC_BYTES: usize = 16;
/// Scopes followed at most in one chain (inlining deeper than this is cut).
const MAX_SCOPES: usize = 64;

/// What the walker reads of one compiled method.
#[derive(Debug, Clone, Copy)]
pub struct Nmethod {
    pub addr: usize,
    pub code_begin: usize,
    pub method: usize,
    pub comp_level: i32,
    pcs_begin: usize,
    pcs_end: usize,
    scopes: usize,
    metadata: usize,
    /// Reads of the blob and its sections.
    mem: Mem,
}

impl Nmethod {
    /// The compiled method of `blob`. Async-signal-safe.
    pub fn read(l: &Layout, blob: &Blob) -> Option<Nmethod> {
        let (addr, mem) = (blob.addr, blob.mem);
        let load = |a: usize| mem.word(a);
        let load_u32 = |a: usize| mem.u32(a);
        let (pcs_begin, pcs_end, scopes, metadata) = match l.nm_sections {
            Sections::Inline {
                scopes_data_begin,
                scopes_pcs_offset,
                dependencies_offset,
                metadata_offset,
            } => (
                addr.wrapping_add(load_u32(addr.wrapping_add(scopes_pcs_offset))? as usize),
                addr.wrapping_add(load_u32(addr.wrapping_add(dependencies_offset))? as usize),
                load(addr.wrapping_add(scopes_data_begin))?,
                addr.wrapping_add(load_u32(addr.wrapping_add(metadata_offset))? as usize),
            ),
            Sections::Split {
                immutable_data,
                scopes_pcs_offset,
                scopes_data_offset,
                mutable_data,
                relocation_size,
            } => {
                let at = |offset: usize| addr.wrapping_add(offset);
                let data = load(at(immutable_data))?;
                let scopes = data.wrapping_add(load_u32(at(scopes_data_offset))? as usize);
                let relocations = load_u32(at(relocation_size))? as usize;
                (
                    data.wrapping_add(load_u32(at(scopes_pcs_offset))? as usize),
                    scopes,
                    scopes,
                    load(at(mutable_data))?.wrapping_add(relocations),
                )
            }
        };
        if pcs_end < pcs_begin || pcs_end - pcs_begin > 64 << 20 {
            return None;
        }
        Some(Nmethod {
            addr,
            code_begin: super::code::code_begin(l, blob)?,
            method: load(addr.wrapping_add(l.nm_method))?,
            comp_level: super::code::int_field(&mem, addr, l.nm_comp_level)?,
            pcs_begin,
            pcs_end,
            scopes,
            metadata,
            mem,
        })
    }

    /// The scope decode offset for `pc`: for a return address (`exact`) the
    /// PcDesc at exactly its offset, else the first PcDesc after it (the end
    /// of the region the instruction at `pc` belongs to). None when no PcDesc
    /// fits; Some(0) when the PcDesc has no scope.
    pub fn decode_offset(&self, pc: usize, exact: bool) -> Option<u32> {
        let offset = pc.checked_sub(self.code_begin)? as i64;
        let count = (self.pcs_end - self.pcs_begin) / PC_DESC_BYTES;
        let pc_offset = |i: usize| -> Option<i64> {
            Some(
                self.mem
                    .u32(self.pcs_begin.wrapping_add(i * PC_DESC_BYTES))? as i32
                    as i64,
            )
        };
        // The first PcDesc whose offset is at least `offset` (exact) or
        // beyond it (an interrupted instruction).
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let at = pc_offset(mid)?;
            if at < offset || (!exact && at == offset) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == count {
            return None;
        }
        if exact && pc_offset(lo)? != offset {
            // A return address always has its own PcDesc; failing that, the
            // region it ends in.
            return self.decode_offset(pc, false);
        }
        self.mem
            .u32(self.pcs_begin.wrapping_add(lo * PC_DESC_BYTES + 4))
    }

    /// Whether `pc` is a return address of a call in this method: a PcDesc
    /// at exactly its offset.
    pub fn is_call_site(&self, pc: usize) -> bool {
        let Some(offset) = pc.checked_sub(self.code_begin) else {
            return false;
        };
        let count = (self.pcs_end - self.pcs_begin) / PC_DESC_BYTES;
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self
                .mem
                .u32(self.pcs_begin.wrapping_add(mid * PC_DESC_BYTES))
                .map(|o| o as i32 as i64)
            {
                Some(at) if at < offset as i64 => lo = mid + 1,
                Some(at) if at > offset as i64 => hi = mid,
                Some(_) => return true,
                None => return false,
            }
        }
        false
    }

    /// Calls `each(method, bci)` for the scopes of `decode_offset`, innermost
    /// first; stops when `each` returns false. False when a record did not
    /// decode (what was handed over stays handed over).
    pub fn scopes(
        &self,
        decode_offset: u32,
        excluded: bool,
        mut each: impl FnMut(usize, i32) -> bool,
    ) -> bool {
        let mut at = decode_offset as usize;
        for _ in 0..MAX_SCOPES {
            let mut s = Unsigned5 {
                at: self.scopes.wrapping_add(at),
                excluded,
                mem: self.mem,
            };
            let (Some(sender), Some(index), Some(bci)) = (s.read(), s.read(), s.read()) else {
                return false;
            };
            if index == 0 {
                return false;
            }
            let Some(method) = self
                .mem
                .word(self.metadata.wrapping_add(8 * (index as usize - 1)))
            else {
                return false;
            };
            if !each(method, bci as i32 - 1) {
                return true;
            }
            if sender == 0 {
                return true;
            }
            at = sender as usize;
        }
        false
    }
}

/// HotSpot's compressed integers (UNSIGNED5): bytes below 192 end a number,
/// each byte carries 6 more bits after the first's 8. From JDK 20 every
/// byte is stored plus one, so that none is zero (`excluded`).
struct Unsigned5 {
    at: usize,
    excluded: bool,
    mem: Mem,
}

impl Unsigned5 {
    fn next(&mut self) -> Option<u32> {
        let b = self.mem.u8(self.at)? as u32;
        self.at = self.at.wrapping_add(1);
        match self.excluded {
            true => b.checked_sub(1),
            false => Some(b),
        }
    }

    fn read(&mut self) -> Option<u32> {
        const LOW: u32 = 192;
        let raw = |b: u32, excluded: bool| if excluded { b + 1 } else { b };
        let first = self.next()?;
        if raw(first, self.excluded) < LOW {
            return Some(first);
        }
        let mut sum = first;
        for i in 1..5 {
            let b = self.next()?;
            sum = sum.wrapping_add(b << (6 * i));
            if raw(b, self.excluded) < LOW || i == 4 {
                return Some(sum);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8], excluded: bool) -> Vec<u32> {
        let mut s = Unsigned5 {
            at: bytes.as_ptr() as usize,
            excluded,
            mem: Mem::SAFE,
        };
        let mut out = Vec::new();
        while s.at < bytes.as_ptr() as usize + bytes.len() {
            out.push(s.read().unwrap());
        }
        out
    }

    #[test]
    fn compressed_integers_decode_both_ways() {
        // 5 (one byte), 200 = 192 + 8 (192 + 8%64=200 then (200-192)>>6=0 → [200, 0]).
        assert_eq!(decode(&[5, 200, 0], false), vec![5, 200]);
        // From JDK 20 each byte is one more.
        assert_eq!(decode(&[6, 201, 1], true), vec![5, 200]);
        // 1000 = 232 + 12*64: [232, 12].
        assert_eq!(decode(&[232, 12], false), vec![1000]);
        assert_eq!(decode(&[233, 13], true), vec![1000]);
    }
}
