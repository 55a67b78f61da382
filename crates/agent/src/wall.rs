//! The wall engine's sampler thread: every interval it sends WALL_SIGNAL with
//! tgkill to up to `budget` threads, round-robin over the process's threads minus
//! the agent's own and those known not to be Java threads, whatever their state,
//! so sleeping and blocked threads are sampled too.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::signals::{SignalShared, WALL_SIGNAL};
use crate::stopper::Stopper;
use crate::threads::{gettid, process_tids, ThreadTable};

/// How often the thread list is re-read from /proc.
const RELIST_EVERY: Duration = Duration::from_millis(200);

pub struct WallSampler {
    pub shared: &'static SignalShared,
    pub table: Arc<ThreadTable>,
    pub stopper: Arc<Stopper>,
    pub interval: Duration,
    pub budget: usize,
}

/// The round-robin position over a changing list of threads.
#[derive(Default)]
struct RoundRobin {
    cursor: usize,
}

impl RoundRobin {
    /// The next `budget` threads of `tids`, continuing where the last tick ended.
    fn next<'a>(&mut self, tids: &'a [u32], budget: usize) -> impl Iterator<Item = u32> + 'a {
        let n = tids.len();
        let take = budget.min(n);
        let start = if n == 0 { 0 } else { self.cursor % n };
        self.cursor = if n == 0 { 0 } else { (start + take) % n };
        (0..take).map(move |i| tids[(start + i) % n])
    }
}

/// Time one wall sample stands for when `budget` of `threads` are signalled per
/// tick: each thread is visited every threads/budget ticks.
fn sample_weight(interval: Duration, threads: usize, budget: usize) -> u64 {
    let per_tick = budget.min(threads).max(1) as u64;
    interval.as_nanos() as u64 * threads.max(1) as u64 / per_tick
}

impl WallSampler {
    pub fn spawn(self) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("jscope-wall".into())
            .spawn(move || self.run())
    }

    fn run(self) {
        self.table.mark_agent(gettid());
        // SAFETY: getpid cannot fail.
        let pid = unsafe { libc::getpid() };
        let mut robin = RoundRobin::default();
        let mut tids = Vec::new();
        let mut listed_at: Option<Instant> = None;
        let mut next = Instant::now() + self.interval;
        while !self.stopper.wait_until(next) {
            next = (next + self.interval).max(Instant::now());
            if listed_at.map_or(true, |t| t.elapsed() >= RELIST_EVERY) {
                tids = process_tids();
                listed_at = Some(Instant::now());
            }
            self.table.retain_sampleable(&mut tids);
            let weight = sample_weight(self.interval, tids.len(), self.budget);
            self.shared.wall_weight_ns.store(weight, Ordering::Relaxed);
            for tid in robin.next(&tids, self.budget) {
                // SAFETY: signalling a thread of this process; a thread that has
                // exited meanwhile makes tgkill fail with ESRCH, which is harmless.
                unsafe { libc::syscall(libc::SYS_tgkill, pid, tid as libc::c_int, WALL_SIGNAL) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_covers_every_thread_in_turn() {
        let mut r = RoundRobin::default();
        let tids = [1, 2, 3, 4, 5];
        assert_eq!(r.next(&tids, 2).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(r.next(&tids, 2).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(r.next(&tids, 2).collect::<Vec<_>>(), [5, 1]);
        assert_eq!(r.next(&tids, 9).collect::<Vec<_>>(), [2, 3, 4, 5, 1]);
        assert_eq!(r.next(&[], 4).count(), 0);
    }

    #[test]
    fn weight_scales_with_threads_per_budget() {
        let ms = Duration::from_millis(10);
        assert_eq!(sample_weight(ms, 4, 16), 10_000_000);
        assert_eq!(sample_weight(ms, 32, 16), 20_000_000);
        assert_eq!(sample_weight(ms, 0, 16), 10_000_000);
    }
}
