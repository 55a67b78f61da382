//! The code cache as the walker sees it: whether a program counter is in
//! code the JVM generated, and which code blob holds it (a compiled method,
//! the interpreter, a stub), found through each code heap's segment map as
//! HotSpot itself finds it, without a lock. Every read is fault-free.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::layout::{CodeBegin, IntField, Layout};
use super::mem::Mem;
use crate::safe::{load, load_u32, load_u8};

/// At most this many code heaps (HotSpot makes one to three).
const MAX_HEAPS: usize = 8;
/// Segment map hops a lookup follows at most (a corrupt map must not spin).
const MAX_HOPS: usize = 1 << 16;
/// A segment map byte that marks a free segment.
const FREE_SEGMENT: u8 = 0xFF;

/// One code heap: its reserved range and segment map, and where its
/// committed end is read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Heap {
    low: usize,
    high: usize,
    segmap: usize,
    shift: u32,
    committed_high: usize,
}

/// The code heaps, read once the VM is initialised (they never move).
#[derive(Debug, Default)]
pub struct CodeCache {
    heaps: [Heap; MAX_HEAPS],
    count: usize,
    low: usize,
    high: usize,
    /// Each heap's committed end as last read: it only grows, so an address
    /// below it needs no read.
    committed: [AtomicUsize; MAX_HEAPS],
    /// Blob names already classified, by the address of the name (the JVM's
    /// static strings): most lookups need not read the name.
    names: [(AtomicUsize, AtomicUsize); NAMES],
}

/// Blob names remembered.
const NAMES: usize = 16;

/// What kind of code a blob holds, told by its name (the same names on JDK
/// 11 to 25 for the kinds the walker treats apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum BlobKind {
    /// A compiled Java method.
    Nmethod,
    /// A compiled wrapper of a Java native method (or a method handle
    /// intrinsic, or Continuation.enterSpecial).
    NativeNmethod,
    Interpreter,
    /// Vtable and itable stubs: jumps, no frame of their own.
    VtableChunks,
    /// StubRoutines: arraycopy, CRC32, math intrinsics, the call stub.
    StubRoutines,
    /// Continuation stubs (JDK 21+): thaw and the return barrier.
    ContinuationStubs,
    /// I2C/C2I adapters and method handle adapters: no frame of their own.
    Adapter,
    /// Runtime stubs, safepoint, deoptimization and exception blobs: a fixed
    /// frame size.
    RuntimeStub,
}

impl BlobKind {
    const ALL: [BlobKind; 8] = [
        BlobKind::Nmethod,
        BlobKind::NativeNmethod,
        BlobKind::Interpreter,
        BlobKind::VtableChunks,
        BlobKind::StubRoutines,
        BlobKind::ContinuationStubs,
        BlobKind::Adapter,
        BlobKind::RuntimeStub,
    ];

    fn from_code(code: usize) -> Option<BlobKind> {
        BlobKind::ALL.get(code).copied()
    }
}

/// A code blob found by [`CodeCache::find`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub addr: usize,
    pub kind: BlobKind,
    /// Reads of the blob: its bytes are committed, read directly.
    pub mem: Mem,
}

impl CodeCache {
    /// The code heaps of the running JVM; None when they cannot be read.
    /// Off the handler, after VMInit.
    pub fn read(l: &Layout) -> Option<CodeCache> {
        let mut c = CodeCache {
            low: load(l.code_low_bound)?,
            high: load(l.code_high_bound)?,
            ..CodeCache::default()
        };
        let array = load(l.code_heaps)?;
        let len = load_u32(array + l.array_len)? as usize;
        let data = load(array + l.array_data)?;
        for i in 0..len.min(MAX_HEAPS) {
            let heap = load(data + 8 * i)?;
            let memory = heap + l.heap_memory;
            c.heaps[c.count] = Heap {
                low: load(memory + l.vs_low)?,
                high: load(memory + l.vs_high_boundary)?,
                segmap: load(heap + l.heap_segmap + l.vs_low)?,
                shift: load_u32(heap + l.heap_log2_segment)?,
                committed_high: memory + l.vs_high,
            };
            c.count += 1;
        }
        let sane = c.count > 0
            && c.low < c.high
            && c.heaps[..c.count]
                .iter()
                .all(|h| c.low <= h.low && h.low < h.high && h.high <= c.high && h.shift < 16);
        sane.then_some(c)
    }

    /// The code cache's lowest and highest (exclusive) addresses.
    pub fn bounds(&self) -> (usize, usize) {
        (self.low, self.high)
    }

    /// True when `pc` lies in the code cache. Async-signal-safe.
    #[inline]
    pub fn contains(&self, pc: usize) -> bool {
        self.low <= pc && pc < self.high
    }

    /// The start of the code blob holding `pc`, through the segment map of its
    /// heap; None for free space or outside the code cache. Async-signal-safe.
    pub fn find_start(&self, l: &Layout, pc: usize) -> Option<usize> {
        self.find_block(l, pc, Mem::SAFE).map(|(start, _, _)| start)
    }

    /// The committed end of heap `i`, read again (the heap grows as code is
    /// added), or None when it reads as beyond the heap.
    fn recommitted(&self, i: usize) -> Option<usize> {
        let heap = &self.heaps[i];
        let committed = load(heap.committed_high)?;
        if committed > heap.high {
            return None;
        }
        self.committed[i].fetch_max(committed, Ordering::Relaxed);
        Some(committed)
    }

    /// The blob start, the end of its heap's committed part and the heap's
    /// index; segment map and block headers below that end are read directly.
    fn find_block(&self, l: &Layout, pc: usize, mem: Mem) -> Option<(usize, usize, usize)> {
        let i = self.heaps[..self.count]
            .iter()
            .position(|h| h.low <= pc && pc < h.high)?;
        let heap = &self.heaps[i];
        let mut committed = self.committed[i].load(Ordering::Relaxed);
        if pc >= committed {
            committed = self.recommitted(i)?;
            if pc >= committed {
                return None;
            }
        }
        let segments = (committed - heap.low) >> heap.shift;
        let mem = mem.with_blob(heap.segmap, heap.segmap + segments);
        let mut segment = (pc - heap.low) >> heap.shift;
        for _ in 0..MAX_HOPS {
            let hop = mem.u8(heap.segmap + segment)?;
            if hop == FREE_SEGMENT {
                return None;
            }
            if hop == 0 {
                let block = heap.low + (segment << heap.shift);
                let header = Mem::SAFE.with_blob(block, committed);
                if header.u8(block.wrapping_add(l.heap_block_used))? == 0 {
                    return None;
                }
                return Some((block.wrapping_add(l.heap_block_size), committed, i));
            }
            segment = segment.checked_sub(hop as usize)?;
        }
        None
    }

    /// The blob holding `pc` and its kind. Async-signal-safe.
    pub fn find(&self, l: &Layout, pc: usize) -> Option<Blob> {
        let (addr, mut committed, heap) = self.find_block(l, pc, Mem::SAFE)?;
        let size = Mem::SAFE
            .with_blob(addr, committed)
            .u32(addr.wrapping_add(l.blob_size))? as usize;
        let end = addr.checked_add(size)?;
        if end > committed {
            // A blob the heap grew for since its committed end was read.
            committed = self.recommitted(heap)?;
        }
        if pc >= end || end > committed {
            return None;
        }
        let mem = Mem::SAFE.with_blob(addr, end);
        Some(Blob {
            addr,
            kind: self.kind_of(l, addr, &mem)?,
            mem,
        })
    }

    /// The blob's kind, by its name's address when that name was seen before.
    fn kind_of(&self, l: &Layout, blob: usize, mem: &Mem) -> Option<BlobKind> {
        let name = mem.word(blob.wrapping_add(l.blob_name))?;
        let slot = &self.names[(name >> 3) % NAMES];
        if name != 0 && slot.0.load(Ordering::Acquire) == name {
            if let Some(kind) = BlobKind::from_code(slot.1.load(Ordering::Relaxed)) {
                return Some(kind);
            }
        }
        let kind = kind_of_name(name)?;
        // The kind before the name: a reader that sees the name sees its kind.
        slot.1.store(kind as usize, Ordering::Relaxed);
        slot.0.store(name, Ordering::Release);
        Some(kind)
    }
}

/// A blob's kind from the first bytes of its name at `name`.
fn kind_of_name(name: usize) -> Option<BlobKind> {
    let head = load(name)?.to_le_bytes();
    Some(match &head {
        b"nmethod\0" => BlobKind::Nmethod,
        b"native n" => BlobKind::NativeNmethod,
        b"Interpre" => BlobKind::Interpreter,
        b"vtable c" => BlobKind::VtableChunks,
        b"StubRout" => {
            // "StubRoutines (continuation stubs)", "(continuationstubs)".
            let tail = load(name.wrapping_add(14))?.to_le_bytes();
            match &tail[..5] {
                b"conti" => BlobKind::ContinuationStubs,
                _ => BlobKind::StubRoutines,
            }
        }
        // Inline cache stubs (JDK 11-21) jump on without a frame as adapters do.
        b"I2C/C2I " | b"adapters" | b"MethodHa" | b"InlineCa" => BlobKind::Adapter,
        _ => BlobKind::RuntimeStub,
    })
}

/// A blob's integer field of any width, sign-extended.
pub fn int_field(mem: &Mem, blob: usize, f: IntField) -> Option<i32> {
    Some(match f.bytes {
        1 => mem.u8(blob.wrapping_add(f.offset))? as i8 as i32,
        2 => mem.u16(blob.wrapping_add(f.offset))? as i16 as i32,
        _ => mem.u32(blob.wrapping_add(f.offset))? as i32,
    })
}

/// Where a blob's code starts.
pub fn code_begin(l: &Layout, blob: &Blob) -> Option<usize> {
    let (mem, addr) = (&blob.mem, blob.addr);
    match l.blob_code_begin {
        CodeBegin::Pointer(o) => mem.word(addr.wrapping_add(o)),
        CodeBegin::Offset(o) => Some(addr.wrapping_add(mem.u32(addr.wrapping_add(o))? as usize)),
    }
}

/// A compiled method's verified entry point (where a call whose receiver
/// was checked lands, and its frame is built).
pub fn verified_entry(l: &Layout, nm: &Blob) -> Option<usize> {
    let (mem, addr) = (&nm.mem, nm.addr);
    match l.nm_verified_entry {
        super::layout::VerifiedEntry::Pointer(o) => mem.word(addr.wrapping_add(o)),
        super::layout::VerifiedEntry::Offset(o) => {
            Some(code_begin(l, nm)?.wrapping_add(mem.u16(addr.wrapping_add(o))? as usize))
        }
    }
}

/// A blob's frame size in words (0 when it has none of its own).
pub fn frame_size(l: &Layout, blob: &Blob) -> Option<usize> {
    let words = blob.mem.u32(blob.addr.wrapping_add(l.blob_frame_size))? as i32;
    Some(words.max(0) as usize)
}

/// The address from which a blob's frame is complete; None when it never is
/// while interrupted (frame_never_safe).
pub fn frame_complete(l: &Layout, blob: &Blob) -> Option<usize> {
    let offset = int_field(&blob.mem, blob.addr, l.blob_frame_complete)?;
    match offset >= 0 {
        true => code_begin(l, blob).map(|b| b.wrapping_add(offset as usize)),
        false => None,
    }
}

/// The blob's name, read off the handler (its first 80 bytes at most).
pub fn name(l: &Layout, blob: usize) -> Option<String> {
    let text = load(blob.wrapping_add(l.blob_name))?;
    let mut bytes = Vec::new();
    for i in 0..80 {
        match load_u8(text.wrapping_add(i))? {
            0 => break,
            b => bytes.push(b),
        }
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
