//! What each thread keeps for the hooks: the guard that keeps a hook's own
//! work from entering the hooks again, and the countdowns to its next native
//! allocation and lock samples.
//!
//! Sampling follows the bytes (or the nanoseconds waited) as HotSpot's heap
//! sampler follows allocated bytes: the distance to the next sample is drawn
//! from an exponential distribution of mean `interval`, so that a call of
//! `size` is sampled with probability `1 - exp(-size/interval)` and its
//! weight, `jscope_format::alloc_sample_weight`, makes the weights an
//! unbiased estimate of the total. The countdown is the thread's own: the
//! fast path is a subtraction and a compare on thread-local memory, with no
//! shared cache line written.
//!
//! The thread-local is a `const`-initialised struct of `Cell`s without a
//! destructor: reading it never allocates and never registers anything, even
//! on a thread that is exiting (libc frees its buffers through `free` late in
//! a thread's exit).

use std::cell::Cell;

struct PerThread {
    /// Inside a hook's own work (sampling, patching): hooks pass straight through.
    busy: Cell<bool>,
    /// Bytes left before the next native allocation sample.
    bytes_left: Cell<i64>,
    /// Nanoseconds of waiting left before the next native lock sample.
    wait_left: Cell<i64>,
    /// The recording the countdowns were drawn for (see [`Countdown`]).
    bytes_recording: Cell<u32>,
    wait_recording: Cell<u32>,
    rng: Cell<u64>,
    /// The thread's Linux id, once asked (a system call the first time only).
    tid: Cell<u32>,
}

thread_local! {
    static THREAD: PerThread = const {
        PerThread {
            busy: Cell::new(false),
            bytes_left: Cell::new(0),
            wait_left: Cell::new(0),
            bytes_recording: Cell::new(0),
            wait_recording: Cell::new(0),
            rng: Cell::new(0),
            tid: Cell::new(0),
        }
    };
}

/// Whether this thread is inside a hook's own work.
#[inline]
pub fn busy() -> bool {
    THREAD.with(|t| t.busy.get())
}

/// This thread's Linux id. (A forked child's thread keeps its parent's, but
/// a child's hooks record nothing.)
pub fn tid() -> u32 {
    THREAD.with(|t| match t.tid.get() {
        0 => {
            let tid = crate::threads::gettid();
            t.tid.set(tid);
            tid
        }
        tid => tid,
    })
}

/// Marks this thread busy until dropped (also when a panic unwinds through it).
pub struct Busy {
    was: bool,
}

impl Busy {
    pub fn enter() -> Busy {
        Busy {
            was: THREAD.with(|t| t.busy.replace(true)),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        THREAD.with(|t| t.busy.set(self.was));
    }
}

/// Which countdown a call counts down.
#[derive(Debug, Clone, Copy)]
pub enum Countdown {
    /// Bytes allocated.
    Bytes,
    /// Nanoseconds spent waiting for a lock.
    Wait,
}

impl Countdown {
    fn cells(self, t: &PerThread) -> (&Cell<i64>, &Cell<u32>) {
        match self {
            Countdown::Bytes => (&t.bytes_left, &t.bytes_recording),
            Countdown::Wait => (&t.wait_left, &t.wait_recording),
        }
    }

    /// Counts `amount` down; the weight of a sample when this call is one.
    /// `recording` numbers the recording (from 1), so that a countdown drawn
    /// for an earlier recording (or never) is drawn again for this one's
    /// `interval`; interval 0 samples every call, with weight `amount`.
    /// None while the thread is busy.
    #[inline]
    pub fn take(self, amount: u64, interval: u64, recording: u32) -> Option<u64> {
        THREAD.with(|t| {
            if t.busy.get() {
                return None;
            }
            let (left, drawn) = self.cells(t);
            let amount = amount.min(i64::MAX as u64 / 2) as i64;
            let now = left.get() - amount;
            left.set(now);
            if now > 0 {
                return None;
            }
            self.crossed(t, amount, interval, recording, drawn)
        })
    }

    #[cold]
    fn crossed(
        self,
        t: &PerThread,
        amount: i64,
        interval: u64,
        recording: u32,
        drawn: &Cell<u32>,
    ) -> Option<u64> {
        let (left, _) = self.cells(t);
        if drawn.get() != recording {
            // Never drawn for this recording: this call is not a sample unless
            // a fresh distance ends inside it.
            drawn.set(recording);
            left.set(draw(t, interval) - amount);
            if left.get() > 0 {
                return None;
            }
        }
        left.set(draw(t, interval));
        Some(jscope_format::alloc_sample_weight(amount as u64, interval))
    }
}

/// A distance to the next sample: exponential with mean `interval` (0 for 0).
fn draw(t: &PerThread, interval: u64) -> i64 {
    if interval == 0 {
        return 0;
    }
    let mut x = t.rng.get();
    if x == 0 {
        // Seeded from the thread's own address and the clock, once.
        x = (t as *const PerThread as u64) ^ crate::clock::monotonic_ns() ^ 0x9e37_79b9_7f4a_7c15;
    }
    // xorshift64*
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t.rng.set(x);
    let bits = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
    // In (0, 1]: never ln(0).
    let u = (bits as f64 + 1.0) / (1u64 << 53) as f64;
    let d = -u.ln() * interval as f64;
    d.min((i64::MAX / 4) as f64).max(1.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_add_up_to_the_bytes_counted() {
        let interval = 64 * 1024;
        let (mut weights, mut samples) = (0u64, 0u64);
        let mut total = 0u64;
        for i in 0..2_000_000u64 {
            let size = 16 + (i * 7919) % 2000;
            total += size;
            if let Some(w) = Countdown::Bytes.take(size, interval, 1) {
                weights += w;
                samples += 1;
            }
        }
        let error = (weights as f64 - total as f64).abs() / total as f64;
        assert!(
            error < 0.05,
            "estimate {weights} of {total} ({samples} samples)"
        );
        let expected = total / interval;
        assert!(
            samples > expected / 2 && samples < expected * 2,
            "{samples}"
        );
    }

    #[test]
    fn interval_zero_samples_every_call_at_its_size() {
        for size in [1u64, 100, 1 << 20] {
            assert_eq!(Countdown::Wait.take(size, 0, 3), Some(size));
        }
    }

    #[test]
    fn a_busy_thread_is_not_sampled() {
        let guard = Busy::enter();
        assert!(busy());
        assert_eq!(Countdown::Bytes.take(1 << 30, 0, 5), None);
        drop(guard);
        assert!(!busy());
        assert_eq!(Countdown::Bytes.take(10, 0, 5), Some(10));
    }

    #[test]
    fn a_large_call_is_sampled_at_its_own_size() {
        let interval = 4096;
        let size = 1 << 30;
        assert_eq!(Countdown::Bytes.take(size, interval, 9), Some(size));
    }
}
