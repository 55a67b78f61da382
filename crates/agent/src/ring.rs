//! The bounded lock-free ring that carries raw samples from signal handlers (and
//! the native hooks, `crate::interpose`) to the writer thread.
//!
//! Producers run inside signal handlers, so claiming and publishing a slot is a
//! handful of atomic operations on memory allocated up front: no allocation, no
//! lock, no system call. The design is a bounded multi-producer queue with one
//! sequence number per slot; the single consumer is the writer thread. A full ring
//! makes the producer drop the sample (and the caller counts it).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One frame as the async stack walker writes it: `lineno` holds the bytecode
/// index (or a negative marker for native frames) and `method` a jmethodID.
/// The layout matches HotSpot's ASGCT_CallFrame.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallFrame {
    pub lineno: i32,
    pub method: *mut std::ffi::c_void,
}

impl CallFrame {
    const EMPTY: CallFrame = CallFrame {
        lineno: 0,
        method: std::ptr::null_mut(),
    };
}

/// What the handler records about one sample besides its frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleHeader {
    /// Linux thread id of the sampled thread.
    pub tid: u32,
    /// 1 = cpu, 2 = wall (the format's SampleMode values).
    pub mode: u8,
    /// Frames written (native ones first), or the walker's negative failure code.
    pub num_frames: i32,
    /// What AsyncGetCallTrace returned: its frame count or failure code.
    pub java_code: i32,
    /// CLOCK_MONOTONIC nanoseconds when the sample was taken.
    pub ticks: u64,
    /// The thread's JNIEnv address; identifies threads the agent has not seen start.
    pub env: usize,
    /// Time this sample stands for.
    pub weight_ns: u64,
    /// JVMTI thread state bits as the handler knew them (0 when unknown).
    pub state: u32,
    /// Java id of the virtual thread mounted on this carrier thread, 0 for none.
    pub vthread: i64,
    /// Walked by the VM structure walker: the frames are in stack order,
    /// typed (see `crate::frames`).
    pub vm_walk: bool,
    /// The request the thread was serving (`crate::remote::requests`), 0 for none.
    pub request: u32,
}

/// What a ring's slots carry besides their frames.
pub trait RingHeader: Copy + Default {
    /// How many frames the producer wrote (negative: none, a failure code).
    fn frame_count(&self) -> i32;
    /// The header of a slot whose producer gave it up ([`ABANDONED`]).
    fn abandoned() -> Self;
}

impl RingHeader for SampleHeader {
    fn frame_count(&self) -> i32 {
        self.num_frames
    }

    fn abandoned() -> SampleHeader {
        SampleHeader {
            num_frames: ABANDONED,
            ..SampleHeader::default()
        }
    }
}

struct Slot<H> {
    seq: AtomicUsize,
    header: UnsafeCell<H>,
}

/// `num_frames` of a slot whose producer gave it up without publishing (a
/// panic caught in the handler): the consumer skips it.
pub const ABANDONED: i32 = i32::MIN;

/// A claimed slot: the producer fills the frames and then publishes. A claim
/// dropped unpublished publishes an [`ABANDONED`] sample, so the consumer never
/// waits for a slot forever.
pub struct Claim<'a, H: RingHeader = SampleHeader> {
    ring: &'a SampleRing<H>,
    pos: usize,
    published: bool,
}

impl<H: RingHeader> Drop for Claim<'_, H> {
    fn drop(&mut self) {
        if !self.published {
            self.store(H::abandoned());
        }
    }
}

impl<H: RingHeader> Claim<'_, H> {
    /// The slot's frame buffer, `depth` frames long, for the walker to write into.
    pub fn frames_ptr(&mut self) -> *mut CallFrame {
        self.ring.frames_of(self.pos & self.ring.mask)
    }

    /// Makes the sample visible to the consumer, and wakes the consumer
    /// early when the ring is a quarter full (it polls; a burst of samples
    /// must not wait for the next poll while the ring fills).
    pub fn publish(mut self, header: H) {
        self.store(header);
        self.published = true;
        let waiting = (self.pos + 1).wrapping_sub(self.ring.dequeue.load(Ordering::Relaxed));
        if waiting >= (self.ring.mask + 1) / 4 {
            crate::thread_ring::wake_consumer();
        }
    }

    fn store(&self, header: H) {
        let slot = &self.ring.slots[self.pos & self.ring.mask];
        // SAFETY: the successful claim gave this producer exclusive use of the slot
        // until the sequence store below hands it to the consumer.
        unsafe { *slot.header.get() = header };
        slot.seq.store(self.pos + 1, Ordering::Release);
    }
}

/// A fixed-capacity ring of samples with up to `depth` frames each.
pub struct SampleRing<H: RingHeader = SampleHeader> {
    slots: Box<[Slot<H>]>,
    frames: Box<[UnsafeCell<CallFrame>]>,
    mask: usize,
    depth: usize,
    enqueue: AtomicUsize,
    dequeue: AtomicUsize,
}

// SAFETY: slots are handed between threads only through the per-slot sequence
// numbers (acquire/release), so no two threads touch a slot's data at once.
unsafe impl<H: RingHeader + Send> Sync for SampleRing<H> {}
// SAFETY: as for Sync; the ring owns its buffers, which hold no references.
unsafe impl<H: RingHeader + Send> Send for SampleRing<H> {}

impl<H: RingHeader> SampleRing<H> {
    /// Allocates everything up front; `capacity` is rounded up to a power of two
    /// and `depth` to at least one frame.
    pub fn new(capacity: usize, depth: usize) -> SampleRing<H> {
        let capacity = capacity.max(2).next_power_of_two();
        let depth = depth.max(1);
        let slots = (0..capacity)
            .map(|i| Slot {
                seq: AtomicUsize::new(i),
                header: UnsafeCell::new(H::default()),
            })
            .collect();
        let frames = (0..capacity * depth)
            .map(|_| UnsafeCell::new(CallFrame::EMPTY))
            .collect();
        SampleRing {
            slots,
            frames,
            mask: capacity - 1,
            depth,
            enqueue: AtomicUsize::new(0),
            dequeue: AtomicUsize::new(0),
        }
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    fn frames_of(&self, index: usize) -> *mut CallFrame {
        self.frames[index * self.depth].get()
    }

    /// Claims a free slot, or returns None when the ring is full. Async-signal-safe.
    pub fn try_claim(&self) -> Option<Claim<'_, H>> {
        let mut pos = self.enqueue.load(Ordering::Relaxed);
        loop {
            let seq = self.slots[pos & self.mask].seq.load(Ordering::Acquire);
            let lag = seq as isize - pos as isize;
            if lag < 0 {
                return None;
            }
            if lag > 0 {
                pos = self.enqueue.load(Ordering::Relaxed);
                continue;
            }
            match self.enqueue.compare_exchange_weak(
                pos,
                pos + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Claim {
                        ring: self,
                        pos,
                        published: false,
                    })
                }
                Err(current) => pos = current,
            }
        }
    }

    /// Takes the oldest published sample, if any, and hands it to `f`.
    /// Only one thread may consume.
    pub fn pop<R>(&self, f: impl FnOnce(&H, &[CallFrame]) -> R) -> Option<R> {
        let pos = self.dequeue.load(Ordering::Relaxed);
        let slot = &self.slots[pos & self.mask];
        if slot.seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        // SAFETY: the sequence says the producer published this slot and no
        // producer can reclaim it until the store below.
        let header = unsafe { *slot.header.get() };
        let count = header.frame_count().clamp(0, self.depth as i32) as usize;
        // SAFETY: as above; the producer wrote `count` (at most depth) frames.
        let frames = unsafe { std::slice::from_raw_parts(self.frames_of(pos & self.mask), count) };
        let result = f(&header, frames);
        slot.seq.store(pos + self.mask + 1, Ordering::Release);
        self.dequeue.store(pos + 1, Ordering::Relaxed);
        Some(result)
    }

    /// True when no published or in-flight sample remains.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.enqueue.load(Ordering::Acquire) == self.dequeue.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn put(ring: &SampleRing, tid: u32, frames: &[i32]) -> bool {
        let Some(mut claim) = ring.try_claim() else {
            return false;
        };
        let ptr = claim.frames_ptr();
        for (i, bci) in frames.iter().enumerate() {
            // SAFETY: the claim owns the slot's depth frames; tests put fewer.
            unsafe {
                *ptr.add(i) = CallFrame {
                    lineno: *bci,
                    method: std::ptr::null_mut(),
                }
            };
        }
        claim.publish(SampleHeader {
            tid,
            num_frames: frames.len() as i32,
            ..Default::default()
        });
        true
    }

    /// The writer polls; a ring filling faster than that wakes it.
    #[test]
    fn a_quarter_full_ring_wakes_its_consumer() {
        let ring = SampleRing::new(16, 2);
        let hook = Box::leak(Box::new(crate::thread_ring::Wake::for_current_thread()));
        crate::thread_ring::set_wake_hook(hook);
        for tid in 0..4 {
            assert!(put(&ring, tid, &[1]));
        }
        let start = std::time::Instant::now();
        std::thread::park_timeout(std::time::Duration::from_secs(30));
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn samples_come_out_in_order_with_their_frames() {
        let ring = SampleRing::new(4, 3);
        assert!(put(&ring, 1, &[10, 11]));
        assert!(put(&ring, 2, &[20, 21, 22]));
        let first = ring.pop(|h, f| (h.tid, f.iter().map(|c| c.lineno).collect::<Vec<_>>()));
        assert_eq!(first, Some((1, vec![10, 11])));
        let second = ring.pop(|h, f| (h.tid, f.len()));
        assert_eq!(second, Some((2, 3)));
        assert_eq!(ring.pop(|h, _| h.tid), None);
        assert!(ring.is_empty());
    }

    #[test]
    fn full_ring_refuses_and_recovers_after_a_pop() {
        let ring = SampleRing::new(2, 1);
        assert!(put(&ring, 1, &[1]));
        assert!(put(&ring, 2, &[2]));
        assert!(!put(&ring, 3, &[3]), "a full ring must refuse");
        assert_eq!(ring.pop(|h, _| h.tid), Some(1));
        assert!(put(&ring, 4, &[4]));
        assert_eq!(ring.pop(|h, _| h.tid), Some(2));
        assert_eq!(ring.pop(|h, _| h.tid), Some(4));
    }

    #[test]
    fn failed_walks_carry_no_frames() {
        let ring = SampleRing::new(2, 4);
        let claim = ring.try_claim().unwrap();
        claim.publish(SampleHeader {
            tid: 9,
            num_frames: -2,
            ..Default::default()
        });
        assert_eq!(ring.pop(|h, f| (h.num_frames, f.len())), Some((-2, 0)));
    }

    #[test]
    fn concurrent_producers_lose_nothing_that_was_accepted() {
        let ring = Arc::new(SampleRing::new(64, 2));
        let producers: Vec<_> = (0..4u32)
            .map(|t| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    let mut accepted = 0u64;
                    for i in 0..5000 {
                        while !put(&ring, t, &[i, i]) {
                            std::thread::yield_now();
                        }
                        accepted += 1;
                    }
                    accepted
                })
            })
            .collect();
        let mut seen = [0u64; 4];
        let mut last = [-1i32; 4];
        while seen.iter().sum::<u64>() < 20_000 {
            if let Some((t, v)) = ring.pop(|h, f| (h.tid as usize, f[0].lineno)) {
                assert!(v > last[t], "per-producer order is kept");
                last[t] = v;
                seen[t] += 1;
            }
        }
        let accepted: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
        assert_eq!(accepted, 20_000);
        assert_eq!(seen, [5000; 4]);
    }
}
