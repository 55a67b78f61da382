//! The queues between the event callbacks and the writer.
//!
//! Callbacks on Java threads (monitors, waits, allocations, threads, classes,
//! JIT) push onto one bounded, mutex-guarded queue: they run in native state,
//! where a short lock is allowed. GC and ObjectFree callbacks may run inside the
//! collector, where nothing may lock or allocate, so they push fixed-size
//! entries onto lock-free bounded rings. Both drop and count when full.

use crate::java_threads::ThreadKey;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a Java-thread callback observed, before the writer names anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawKind {
    ThreadStart,
    ThreadEnd,
    Monitor {
        duration_ns: u64,
        class: Option<String>,
        object: u64,
        /// Thread.getId() of the owner when the thread began to block; 0 unknown.
        owner: i64,
        stack: Vec<(usize, i32)>,
        /// The request the thread served (`crate::remote::requests`), 0 none;
        /// as in the kinds below.
        request: u32,
    },
    Wait {
        duration_ns: u64,
        class: Option<String>,
        object: u64,
        timeout_ms: u64,
        timed_out: bool,
        stack: Vec<(usize, i32)>,
        request: u32,
    },
    /// A LockSupport.park* call that lasted at least the threshold.
    Park {
        duration_ns: u64,
        /// The blocker object's class signature; None without a blocker.
        blocker: Option<String>,
        timeout_ns: u64,
        stack: Vec<(usize, i32)>,
        request: u32,
    },
    Alloc {
        class: Option<String>,
        size: u64,
        stack: Vec<(usize, i32)>,
        object: u64,
        allocated_total: u64,
        /// The bytes the sample stands for (see `callbacks::sample_weight`).
        weight: u64,
        request: u32,
    },
    ClassLoad {
        class: Option<String>,
    },
    /// Process-wide, like the two below: the thread fields are ignored.
    ClassUnload {
        class: Option<String>,
    },
    Compiled {
        method: usize,
        code_size: u64,
    },
    CompiledUnload {
        method: usize,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    /// The thread it happened on.
    pub thread: ThreadKey,
    pub ticks: u64,
    pub kind: RawKind,
}

/// Events waiting for the writer before new ones are dropped.
pub const QUEUE_EVENTS: usize = 1 << 16;

/// The event session's queues (one set per process, in `super::STATE`).
pub struct Queues {
    events: Mutex<Vec<RawEvent>>,
    /// Events dropped because `events` was full (since the process started).
    pub dropped: AtomicU64,
    /// Finished collections: (start ticks, duration ns, 0).
    pub gcs: AtomicRing<GC_SLOTS>,
    /// Freed tracked objects: (ticks, object id, allocated total).
    pub frees: AtomicRing<FREE_SLOTS>,
}

/// Collections waiting for the writer: one each, a few hundred a second at most.
pub const GC_SLOTS: usize = 1 << 13;

/// Frees waiting for the writer. The JVM posts ObjectFree in bursts, every
/// tagged object found dead since its last look at once (more than 8,000
/// within one 50 ms poll of the writer in a run of 400,000 short-lived
/// allocations sampled every 32 KiB), so the ring is large (1 MiB) and a push
/// past a quarter of it wakes the writer.
pub const FREE_SLOTS: usize = 1 << 15;

impl Queues {
    pub const fn new() -> Queues {
        Queues {
            events: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            gcs: AtomicRing::new(),
            frees: AtomicRing::new(),
        }
    }

    pub fn push(&self, e: RawEvent) {
        let mut q = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= QUEUE_EVENTS {
            drop(q);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        q.push(e);
    }

    /// Everything queued, oldest first.
    pub fn take(&self) -> Vec<RawEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Clears every queue for a new recording (before its events are enabled).
    pub fn reset(&self) {
        self.take();
        self.gcs.reset();
        self.frees.reset();
    }
}

/// A bounded multi-producer single-consumer ring of `[u64; 3]` entries that never
/// locks or allocates (Vyukov's sequence-numbered slots): a producer claims a
/// slot by advancing `head`, fills it and publishes it by bumping its sequence;
/// the writer reads published slots in order and hands them back.
pub struct AtomicRing<const N: usize> {
    slots: [Slot; N],
    head: AtomicUsize,
    tail: AtomicUsize,
    pub dropped: AtomicU64,
}

struct Slot {
    seq: AtomicUsize,
    data: [AtomicU64; 3],
}

impl<const N: usize> AtomicRing<N> {
    pub const fn new() -> AtomicRing<N> {
        // Sequences start at 0 and are set to the slot index by `reset` before
        // first use (a const fn cannot loop over the array to do it here).
        #[allow(clippy::declare_interior_mutable_const)]
        const SLOT: Slot = Slot {
            seq: AtomicUsize::new(0),
            data: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
        };
        AtomicRing {
            slots: [SLOT; N],
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Empties the ring; only while no producer runs (before events are enabled).
    pub fn reset(&self) {
        for (i, s) in self.slots.iter().enumerate() {
            s.seq.store(i, Ordering::Relaxed);
        }
        self.head.store(0, Ordering::Relaxed);
        self.tail.store(0, Ordering::Release);
    }

    /// Producer side; false (and counted) when full.
    pub fn push(&self, v: [u64; 3]) -> bool {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos % N];
            let seq = slot.seq.load(Ordering::Acquire);
            let diff = seq as isize - pos as isize;
            if diff == 0 {
                match self.head.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        for (d, x) in slot.data.iter().zip(v) {
                            d.store(x, Ordering::Relaxed);
                        }
                        slot.seq.store(pos + 1, Ordering::Release);
                        return true;
                    }
                    Err(now) => pos = now,
                }
            } else if diff < 0 {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            } else {
                pos = self.head.load(Ordering::Relaxed);
            }
        }
    }

    /// Consumer side (the writer only): the oldest published entry.
    pub fn pop(&self) -> Option<[u64; 3]> {
        let pos = self.tail.load(Ordering::Relaxed);
        let slot = &self.slots[pos % N];
        if slot.seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        let v = [0, 1, 2].map(|i| slot.data[i].load(Ordering::Relaxed));
        slot.seq.store(pos + N, Ordering::Release);
        self.tail.store(pos + 1, Ordering::Relaxed);
        Some(v)
    }

    /// Whether more than a quarter of the slots hold entries (claimed or
    /// published), as far as two relaxed loads can tell.
    pub fn past_a_quarter(&self) -> bool {
        let (head, tail) = (
            self.head.load(Ordering::Relaxed),
            self.tail.load(Ordering::Relaxed),
        );
        head.saturating_sub(tail) > N / 4
    }
}

impl<const N: usize> Default for AtomicRing<N> {
    fn default() -> Self {
        let r = AtomicRing::new();
        r.reset();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn ring_keeps_order_drops_when_full_and_wraps() {
        let r = AtomicRing::<GC_SLOTS>::default();
        for i in 0..GC_SLOTS as u64 {
            assert_eq!(r.past_a_quarter(), i > GC_SLOTS as u64 / 4);
            assert!(r.push([i, i + 1, i + 2]));
        }
        assert!(!r.push([0; 3]));
        assert_eq!(r.dropped.load(Ordering::Relaxed), 1);
        for i in 0..GC_SLOTS as u64 {
            assert_eq!(r.pop(), Some([i, i + 1, i + 2]));
        }
        assert_eq!(r.pop(), None);
        assert!(r.push([7, 8, 9]));
        assert_eq!(r.pop(), Some([7, 8, 9]));
    }

    #[test]
    fn ring_takes_concurrent_producers() {
        let r = Arc::new(AtomicRing::<GC_SLOTS>::default());
        let producers: Vec<_> = (0..4u64)
            .map(|p| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        while !r.push([p, i, 0]) {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u64; 4];
        let mut seen = 0;
        while seen < 4000 {
            if let Some([p, i, _]) = r.pop() {
                assert_eq!(next[p as usize], i, "per-producer order");
                next[p as usize] += 1;
                seen += 1;
            }
        }
        for p in producers {
            p.join().unwrap();
        }
    }
}
