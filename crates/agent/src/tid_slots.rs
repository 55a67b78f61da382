//! A small value per Linux thread id that a signal handler can read: the wall
//! sampler's thread states and the carriers' mounted virtual threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Slots of a [`TidSlots`]; a power of two well above the threads a JVM runs.
pub const SLOTS: usize = 4096;

/// One slot per Linux thread id (direct-mapped by `tid % SLOTS`), each packing
/// the tid and its value into one atomic word, so a reader gets both at once
/// without a lock (async-signal-safe). Two tids sharing a slot only cost the
/// earlier one its value: it reads as unknown (0), never as another's.
pub struct TidSlots {
    slots: [AtomicU64; SLOTS],
}

impl Default for TidSlots {
    fn default() -> Self {
        Self::new()
    }
}

impl TidSlots {
    pub const fn new() -> TidSlots {
        TidSlots {
            slots: [const { AtomicU64::new(0) }; SLOTS],
        }
    }

    fn slot(&self, tid: u32) -> &AtomicU64 {
        &self.slots[tid as usize % SLOTS]
    }

    /// `tid`'s value is `value` from now on.
    pub fn set(&self, tid: u32, value: u32) {
        let word = (u64::from(tid) << 32) | u64::from(value);
        self.slot(tid).store(word, Ordering::Release);
    }

    /// The value last set for `tid`, or 0 (unknown). Async-signal-safe.
    pub fn get(&self, tid: u32) -> u32 {
        let word = self.slot(tid).load(Ordering::Acquire);
        if (word >> 32) as u32 == tid {
            word as u32
        } else {
            0
        }
    }

    /// Forgets `tid`'s value; another tid's sharing the slot stays.
    pub fn clear(&self, tid: u32) {
        let slot = self.slot(tid);
        let word = slot.load(Ordering::Relaxed);
        if (word >> 32) as u32 == tid {
            let _ = slot.compare_exchange(word, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_states_belong_to_their_thread() {
        let states = TidSlots::default();
        assert_eq!(states.get(42), 0, "nothing set yet");
        states.set(42, 0x45);
        assert_eq!(states.get(42), 0x45);
        let sharing = 42 + SLOTS as u32;
        assert_eq!(states.get(sharing), 0, "same slot, other thread");
        states.set(sharing, 5);
        assert_eq!(states.get(42), 0, "overwritten: unknown, never wrong");
        assert_eq!(states.get(sharing), 5);
    }
}
