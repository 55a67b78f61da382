//! What walks remember between samples, shared by every signal handler:
//! jmethodIDs by Method*, and the Java frames of compiled methods by return
//! address. Both are direct-mapped tables of atomics that handlers read and
//! write at once, without a lock; a hit is always checked against the JVM's
//! own memory before use, so a slot overwritten meanwhile, or a Method* or
//! compiled method whose memory was reused, is a miss, never a wrong frame.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::safe::load;

/// Method* → jmethodID. A slot's id is stored before its key, and a hit is
/// checked by the id's slot pointing back at the Method*.
pub struct IdCache {
    slots: Box<[(AtomicUsize, AtomicUsize)]>,
}

const ID_SLOTS: usize = 4096;

/// A slot index for `key`, from its bits above the alignment.
fn index(key: usize, slots: usize) -> usize {
    ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) & (slots - 1)
}

impl Default for IdCache {
    fn default() -> IdCache {
        IdCache::new()
    }
}

impl IdCache {
    pub fn new() -> IdCache {
        IdCache {
            slots: (0..ID_SLOTS)
                .map(|_| (AtomicUsize::new(0), AtomicUsize::new(0)))
                .collect(),
        }
    }

    pub fn get(&self, method: usize) -> Option<usize> {
        let (key, id) = &self.slots[index(method, ID_SLOTS)];
        if key.load(Ordering::Acquire) != method {
            return None;
        }
        let id = id.load(Ordering::Relaxed);
        (id != 0 && load(id)? == method).then_some(id)
    }

    pub fn put(&self, method: usize, id: usize) {
        let (key, slot) = &self.slots[index(method, ID_SLOTS)];
        slot.store(id, Ordering::Relaxed);
        key.store(method, Ordering::Release);
    }
}

impl std::fmt::Debug for IdCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IdCache({} slots)", self.slots.len())
    }
}

/// Inlined methods remembered per compiled frame at most (deeper ones are
/// walked each time).
pub const CACHED_FRAMES: usize = 6;
const FRAME_SLOTS: usize = 2048;

/// The Java frames of a compiled method at one return address, and its frame
/// size: what a walk of that frame needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompiledFrames {
    /// The compiled method (its blob) and what identifies it.
    pub blob: usize,
    pub method: usize,
    pub compile_id: u32,
    pub frame_words: u32,
    pub count: usize,
    /// (jmethodID, typed `lineno`), innermost first.
    pub frames: [(usize, i32); CACHED_FRAMES],
}

/// Return address → [`CompiledFrames`]. Each slot has a sequence number, odd
/// while a handler writes it; a reader that sees it change, or odd, misses.
pub struct FrameCache {
    slots: Box<[FrameSlot]>,
}

#[derive(Default)]
struct FrameSlot {
    seq: AtomicU64,
    pc: AtomicUsize,
    blob: AtomicUsize,
    method: AtomicUsize,
    compile_id: AtomicU32,
    frame_words: AtomicU32,
    count: AtomicU32,
    ids: [AtomicUsize; CACHED_FRAMES],
    linenos: [AtomicU32; CACHED_FRAMES],
}

impl Default for FrameCache {
    fn default() -> FrameCache {
        FrameCache::new()
    }
}

impl FrameCache {
    pub fn new() -> FrameCache {
        FrameCache {
            slots: (0..FRAME_SLOTS).map(|_| FrameSlot::default()).collect(),
        }
    }

    /// The frames remembered at return address `pc`, if any (the caller
    /// checks them against the compiled method at `pc`).
    pub fn get(&self, pc: usize) -> Option<CompiledFrames> {
        let slot = &self.slots[index(pc, FRAME_SLOTS)];
        let seq = slot.seq.load(Ordering::Acquire);
        if seq % 2 == 1 || slot.pc.load(Ordering::Relaxed) != pc {
            return None;
        }
        let mut out = CompiledFrames {
            blob: slot.blob.load(Ordering::Relaxed),
            method: slot.method.load(Ordering::Relaxed),
            compile_id: slot.compile_id.load(Ordering::Relaxed),
            frame_words: slot.frame_words.load(Ordering::Relaxed),
            count: (slot.count.load(Ordering::Relaxed) as usize).min(CACHED_FRAMES),
            frames: [(0, 0); CACHED_FRAMES],
        };
        for i in 0..out.count {
            out.frames[i] = (
                slot.ids[i].load(Ordering::Relaxed),
                slot.linenos[i].load(Ordering::Relaxed) as i32,
            );
        }
        fence(Ordering::Acquire);
        (slot.seq.load(Ordering::Relaxed) == seq && out.count > 0).then_some(out)
    }

    /// Remembers `frames` at return address `pc`, unless another handler is
    /// writing the slot.
    pub fn put(&self, pc: usize, frames: &CompiledFrames) {
        let slot = &self.slots[index(pc, FRAME_SLOTS)];
        let seq = slot.seq.load(Ordering::Relaxed);
        if seq % 2 == 1
            || slot
                .seq
                .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        slot.pc.store(pc, Ordering::Relaxed);
        slot.blob.store(frames.blob, Ordering::Relaxed);
        slot.method.store(frames.method, Ordering::Relaxed);
        slot.compile_id.store(frames.compile_id, Ordering::Relaxed);
        slot.frame_words
            .store(frames.frame_words, Ordering::Relaxed);
        slot.count.store(frames.count as u32, Ordering::Relaxed);
        for i in 0..frames.count.min(CACHED_FRAMES) {
            slot.ids[i].store(frames.frames[i].0, Ordering::Relaxed);
            slot.linenos[i].store(frames.frames[i].1 as u32, Ordering::Relaxed);
        }
        slot.seq.store(seq + 2, Ordering::Release);
    }
}

impl std::fmt::Debug for FrameCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrameCache({} slots)", self.slots.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_frame_comes_back_and_another_address_misses() {
        let cache = FrameCache::new();
        let mut frames = CompiledFrames {
            blob: 0x7000,
            method: 0x9000,
            compile_id: 42,
            frame_words: 6,
            count: 2,
            ..CompiledFrames::default()
        };
        frames.frames[0] = (0x100, 7);
        frames.frames[1] = (0x200, -5);
        cache.put(0x7123, &frames);
        assert_eq!(cache.get(0x7123), Some(frames));
        assert_eq!(cache.get(0x7124), None);
    }
}
