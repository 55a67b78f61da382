//! The code cache as the walker sees it: whether a program counter is in
//! code the JVM generated, and which code blob holds it (a compiled method,
//! the interpreter, a stub), found through each code heap's segment map as
//! HotSpot itself finds it, without a lock. Every read is fault-free.

use super::layout::{CodeBegin, IntField, Layout};
use crate::safe::{load, load_u16, load_u32, load_u8};

/// At most this many code heaps (HotSpot makes one to three).
const MAX_HEAPS: usize = 8;
/// Segment map hops a lookup follows at most (a corrupt map must not spin).
const MAX_HOPS: usize = 1 << 16;
/// A segment map byte that marks a free segment.
const FREE_SEGMENT: u8 = 0xFF;

/// One code heap: its reserved range and segment map.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Heap {
    low: usize,
    high: usize,
    segmap: usize,
    shift: u32,
}

/// The code heaps, read once the VM is initialised (they never move).
#[derive(Debug, Clone, Default)]
pub struct CodeCache {
    heaps: [Heap; MAX_HEAPS],
    count: usize,
    low: usize,
    high: usize,
}

/// What kind of code a blob holds, told by its name (the same names on JDK
/// 11 to 25 for the kinds the walker treats apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A code blob found by [`CodeCache::find`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub addr: usize,
    pub kind: BlobKind,
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
        let heap = self.heaps[..self.count]
            .iter()
            .find(|h| h.low <= pc && pc < h.high)?;
        let mut segment = (pc - heap.low) >> heap.shift;
        for _ in 0..MAX_HOPS {
            let hop = load_u8(heap.segmap + segment)?;
            if hop == FREE_SEGMENT {
                return None;
            }
            if hop == 0 {
                let block = heap.low + (segment << heap.shift);
                if load_u8(block.wrapping_add(l.heap_block_used))? == 0 {
                    return None;
                }
                return Some(block.wrapping_add(l.heap_block_size));
            }
            segment = segment.checked_sub(hop as usize)?;
        }
        None
    }

    /// The blob holding `pc` and its kind. Async-signal-safe.
    pub fn find(&self, l: &Layout, pc: usize) -> Option<Blob> {
        let addr = self.find_start(l, pc)?;
        let size = load_u32(addr.wrapping_add(l.blob_size))? as usize;
        if pc >= addr.wrapping_add(size) {
            return None;
        }
        Some(Blob {
            addr,
            kind: kind_of(l, addr)?,
        })
    }
}

/// The blob's kind, from the first bytes of its name.
fn kind_of(l: &Layout, blob: usize) -> Option<BlobKind> {
    let name = load(blob.wrapping_add(l.blob_name))?;
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
pub fn int_field(blob: usize, f: IntField) -> Option<i32> {
    Some(match f.bytes {
        1 => load_u8(blob.wrapping_add(f.offset))? as i8 as i32,
        2 => load_u16(blob.wrapping_add(f.offset))? as i16 as i32,
        _ => load_u32(blob.wrapping_add(f.offset))? as i32,
    })
}

/// Where a blob's code starts.
pub fn code_begin(l: &Layout, blob: usize) -> Option<usize> {
    match l.blob_code_begin {
        CodeBegin::Pointer(o) => load(blob.wrapping_add(o)),
        CodeBegin::Offset(o) => Some(blob.wrapping_add(load_u32(blob.wrapping_add(o))? as usize)),
    }
}

/// A compiled method's verified entry point (where a call whose receiver
/// was checked lands, and its frame is built).
pub fn verified_entry(l: &Layout, nm: usize) -> Option<usize> {
    match l.nm_verified_entry {
        super::layout::VerifiedEntry::Pointer(o) => load(nm.wrapping_add(o)),
        super::layout::VerifiedEntry::Offset(o) => {
            Some(code_begin(l, nm)?.wrapping_add(load_u16(nm.wrapping_add(o))? as usize))
        }
    }
}

/// A blob's frame size in words (0 when it has none of its own).
pub fn frame_size(l: &Layout, blob: usize) -> Option<usize> {
    let words = load_u32(blob.wrapping_add(l.blob_frame_size))? as i32;
    Some(words.max(0) as usize)
}

/// The address from which a blob's frame is complete; None when it never is
/// while interrupted (frame_never_safe).
pub fn frame_complete(l: &Layout, blob: usize) -> Option<usize> {
    let offset = int_field(blob, l.blob_frame_complete)?;
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
