//! The table of sampled blocks still held: block address -> allocation id,
//! so that a `free` finds out, in a few loads, whether its block was sampled.
//!
//! Lock-free and allocation-free, as the hooks that use it may run inside an
//! allocator: a fixed array of buckets of [`WAYS`] slots, each bucket one
//! cache line of keys; an address belongs to one bucket (Fibonacci hashing).
//! Insert claims an empty slot with a compare-and-swap, writes the id and
//! then publishes the key; remove swaps the key back to empty. There are no
//! probe chains and so no tombstones: a block's address is in at most one
//! slot, because a block is inserted only after the allocator returned it and
//! removed before it is given back. A full bucket refuses the insert (the
//! sample is then written with id 0: its free is not followed).
//!
//! In front of the table, a small array of counters (a counting filter) says
//! how many blocks held hash to each: nearly every free reads one counter of a
//! 16 KiB array and goes on, without touching the table's lines.

use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};

/// Slots per bucket: one 64-byte cache line of keys.
pub const WAYS: usize = 8;
/// A slot being filled (no block starts at address 1).
const CLAIMED: usize = 1;

/// Counters of the filter in front of the table: 16 KiB, which stays in the
/// cache of a thread that frees often, where the table's own lines would not.
const FILTER: usize = 8 << 10;

pub struct BlockTable {
    keys: Box<[AtomicUsize]>,
    ids: Box<[AtomicU64]>,
    /// log2 of the bucket count.
    bits: u32,
    /// How many blocks held hash to each counter: a free whose counter is 0
    /// (nearly every free) is answered without reading the table.
    filter: Box<[AtomicU16]>,
    /// Blocks held.
    live: AtomicUsize,
}

impl BlockTable {
    /// A table of at least `entries` slots (a power of two, two buckets at least).
    pub fn new(entries: usize) -> BlockTable {
        let buckets = (entries / WAYS).max(2).next_power_of_two();
        let slots = buckets * WAYS;
        BlockTable {
            keys: (0..slots).map(|_| AtomicUsize::new(0)).collect(),
            ids: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            bits: buckets.trailing_zeros(),
            filter: (0..FILTER).map(|_| AtomicU16::new(0)).collect(),
            live: AtomicUsize::new(0),
        }
    }

    /// How many slots the table has.
    pub fn capacity(&self) -> usize {
        self.keys.len()
    }

    /// Blocks held now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    #[inline]
    fn hash(addr: usize) -> u64 {
        ((addr as u64) >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// The first slot of `addr`'s bucket.
    #[inline]
    fn bucket(&self, addr: usize) -> usize {
        (Self::hash(addr) >> (64 - self.bits)) as usize * WAYS
    }

    /// `addr`'s filter counter (other bits of the hash than the bucket's).
    #[inline]
    fn counter(&self, addr: usize) -> &AtomicU16 {
        &self.filter[(Self::hash(addr) >> 20) as usize % FILTER]
    }

    /// Remembers that block `addr` is allocation `id`; false when its bucket
    /// is full.
    pub fn insert(&self, addr: usize, id: u64) -> bool {
        let b = self.bucket(addr);
        for i in b..b + WAYS {
            let key = &self.keys[i];
            if key.load(Ordering::Relaxed) == 0
                && key
                    .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                self.ids[i].store(id, Ordering::Relaxed);
                // The counter before the key: a free finding the key has
                // passed a counter that counts it.
                self.counter(addr).fetch_add(1, Ordering::Release);
                // Publishes the id with the key.
                key.store(addr, Ordering::Release);
                self.live.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Whether block `addr` may be in the table: the free's fast test, a few
    /// plain loads of one cache line.
    #[inline]
    pub fn may_hold(&self, addr: usize) -> bool {
        if self.counter(addr).load(Ordering::Acquire) == 0 {
            return false;
        }
        let b = self.bucket(addr);
        self.keys[b..b + WAYS]
            .iter()
            .any(|k| k.load(Ordering::Relaxed) == addr)
    }

    /// Forgets block `addr`; its allocation id when it was held.
    pub fn remove(&self, addr: usize) -> Option<u64> {
        let b = self.bucket(addr);
        for i in b..b + WAYS {
            let key = &self.keys[i];
            if key.load(Ordering::Acquire) != addr {
                continue;
            }
            // The id was published before the key; only this block's owner
            // removes it, so it cannot change before the swap below.
            let id = self.ids[i].load(Ordering::Relaxed);
            if key
                .compare_exchange(addr, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                self.counter(addr).fetch_sub(1, Ordering::Release);
                self.live.fetch_sub(1, Ordering::Relaxed);
                return Some(id);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn blocks_are_found_until_removed() {
        let t = BlockTable::new(64);
        assert_eq!(t.capacity(), 64);
        assert!(!t.may_hold(0x1000));
        assert!(t.insert(0x1000, 7));
        assert!(t.insert(0x2000, 8));
        assert!(t.may_hold(0x1000) && t.may_hold(0x2000));
        assert!(!t.may_hold(0x3000));
        assert_eq!(t.live(), 2);
        assert_eq!(t.remove(0x1000), Some(7));
        assert_eq!(t.remove(0x1000), None, "removed once");
        assert!(!t.may_hold(0x1000));
        assert_eq!(t.remove(0x2000), Some(8));
        assert_eq!(t.live(), 0);
    }

    #[test]
    fn a_full_bucket_refuses_and_takes_again_once_one_leaves() {
        let t = BlockTable::new(16);
        // Find WAYS + 1 addresses of one bucket.
        let b = t.bucket(0x10);
        let same: Vec<usize> = (1..100_000usize)
            .map(|i| i * 16)
            .filter(|&a| t.bucket(a) == b)
            .take(WAYS + 1)
            .collect();
        for (i, &a) in same[..WAYS].iter().enumerate() {
            assert!(t.insert(a, i as u64 + 1));
        }
        assert!(!t.insert(same[WAYS], 99), "the bucket is full");
        assert_eq!(t.remove(same[3]), Some(4));
        assert!(t.insert(same[WAYS], 99));
        assert_eq!(t.remove(same[WAYS]), Some(99));
    }

    #[test]
    fn threads_inserting_and_removing_their_own_blocks_lose_none() {
        let t = Arc::new(BlockTable::new(1 << 14));
        let workers: Vec<_> = (0..4usize)
            .map(|w| {
                let t = t.clone();
                std::thread::spawn(move || {
                    let mut lost = 0;
                    for round in 0..200usize {
                        let base = (w + 1) << 32 | round << 16;
                        let blocks: Vec<usize> = (0..200).map(|i| base + i * 64).collect();
                        for (i, &a) in blocks.iter().enumerate() {
                            assert!(t.insert(a, (w * 1_000_000 + i) as u64));
                        }
                        for (i, &a) in blocks.iter().enumerate() {
                            if t.remove(a) != Some((w * 1_000_000 + i) as u64) {
                                lost += 1;
                            }
                        }
                    }
                    lost
                })
            })
            .collect();
        let lost: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
        assert_eq!(lost, 0);
        assert_eq!(t.live(), 0);
    }
}
