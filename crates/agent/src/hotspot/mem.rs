//! Reads for one walk. Memory the walk knows is mapped is read directly: the
//! walked thread's own stack between its stack pointer and its base (the
//! walk runs on that thread), and the committed part of the code blob being
//! read. Anything else (metadata, the C heap, a register's garbage) goes
//! through the fault-free load. Direct reads are volatile: the memory may
//! change under them (the code cache is patched), never fault.

use crate::safe;

/// Address ranges [start, end) known to be mapped for this walk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mem {
    stack: (usize, usize),
    blob: (usize, usize),
}

impl Mem {
    /// No range trusted: every read is fault-free.
    pub const SAFE: Mem = Mem {
        stack: (0, 0),
        blob: (0, 0),
    };

    /// Trusts [sp, base) of the calling thread's stack [low, base) (bounds
    /// the caller knows to be the calling thread's own) when `sp` lies above
    /// the caller's own frame: everything from there to the base is the live
    /// frames of the thread, mapped (no guard page is above a running frame).
    pub fn on_own_stack(sp: usize, low: usize, base: usize) -> Mem {
        let here = &sp as *const usize as usize;
        let own = low <= here && here < base && base - low < 1 << 30;
        let stack = if own && here <= sp && sp < base {
            (sp, base)
        } else {
            (0, 0)
        };
        Mem {
            stack,
            blob: (0, 0),
        }
    }

    /// The same, also trusting the code blob [start, end).
    pub fn with_blob(self, start: usize, end: usize) -> Mem {
        Mem {
            blob: (start, end),
            ..self
        }
    }

    #[inline(always)]
    fn mapped(&self, addr: usize, len: usize) -> bool {
        // An empty range (the untrusted default) holds nothing, address 0 neither.
        let inside = |(lo, hi): (usize, usize)| lo <= addr && addr < hi && hi - addr >= len;
        inside(self.stack) || inside(self.blob)
    }

    /// The word at `addr`.
    #[inline(always)]
    pub fn word(&self, addr: usize) -> Option<usize> {
        if self.mapped(addr, 8) {
            // SAFETY: the range is mapped for the whole walk.
            return Some(unsafe { std::ptr::read_volatile(addr as *const usize) });
        }
        safe::load(addr)
    }

    #[inline(always)]
    pub fn u32(&self, addr: usize) -> Option<u32> {
        if self.mapped(addr, 4) {
            // SAFETY: as above.
            return Some(unsafe { std::ptr::read_volatile(addr as *const u32) });
        }
        safe::load_u32(addr)
    }

    #[inline(always)]
    pub fn u16(&self, addr: usize) -> Option<u16> {
        if self.mapped(addr, 2) {
            // SAFETY: as above.
            return Some(unsafe { std::ptr::read_volatile(addr as *const u16) });
        }
        safe::load_u16(addr)
    }

    #[inline(always)]
    pub fn u8(&self, addr: usize) -> Option<u8> {
        if self.mapped(addr, 1) {
            // SAFETY: as above.
            return Some(unsafe { std::ptr::read_volatile(addr as *const u8) });
        }
        safe::load_u8(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_callers_own_stack_is_trusted() {
        let local = [1usize, 2, 3];
        let sp = local.as_ptr() as usize;
        // A base far above: the caller's frames lie between.
        let mem = Mem::on_own_stack(sp, sp - 4096, sp + 4096);
        assert_eq!(mem.word(sp + 8), Some(2));
        assert!(mem.mapped(sp, 8));
        assert!(!mem.mapped(sp - 8, 8), "below sp is not trusted");
        let below_the_caller = Mem::on_own_stack(sp - 4000, sp - 4096, sp + 4096);
        assert_eq!(
            below_the_caller,
            Mem::SAFE,
            "a stack pointer below the caller's frame"
        );
        let elsewhere = Mem::on_own_stack(0x1000, 0x1000, 0x2000);
        assert_eq!(elsewhere, Mem::SAFE);
        assert_eq!(elsewhere.word(8), None, "untrusted reads stay fault-free");
        assert_eq!(
            Mem::SAFE.word(0),
            None,
            "nothing is trusted by default, page 0 neither"
        );
        assert!(!Mem::SAFE.mapped(0, 1));
    }
}
