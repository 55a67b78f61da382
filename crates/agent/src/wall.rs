//! The wall engine's sampler thread: every interval it sends WALL_SIGNAL with
//! tgkill to up to `budget` threads, round-robin over the process's threads minus
//! the agent's own and those known not to be Java threads, whatever their state,
//! so sleeping and blocked threads are sampled too.
//!
//! Just before signalling a thread it reads the thread's JVMTI state and leaves it
//! in the handler's [`WallStates`](crate::signals::WallStates) slot, so wall samples
//! say whether the thread was running, sleeping, waiting or blocked. JVMTI needs
//! the caller attached to the VM, so this thread is an attached daemon.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Engine, StartContext, StartError, StopContext};
use crate::java_threads::{self, ThreadFields};
use crate::jvm::{Jni, Jvmti, Vm};
use crate::options::Options;
use crate::signals::{SignalEngine, SignalShared, WALL_SIGNAL};
use crate::stopper::{SamplerThread, Stopper};
use crate::sys;
use crate::threads::{gettid, process_tids, ThreadTable};

/// How often the thread list is re-read from /proc.
const RELIST_EVERY: Duration = Duration::from_millis(200);

struct WallSampler {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub fields: ThreadFields,
    pub shared: &'static SignalShared,
    pub table: Arc<ThreadTable>,
    pub stopper: Arc<Stopper>,
    /// Set when the thread has left the VM.
    pub done: Arc<Stopper>,
    pub interval: Duration,
    pub budget: usize,
}

/// Global references to the live Java threads, by Java id, so the sampler can ask
/// JVMTI for the state of the thread behind a Linux id.
#[derive(Default)]
struct ThreadRefs {
    by_java_id: HashMap<i64, sys::jthread>,
}

impl ThreadRefs {
    /// Brings the set up to date with GetAllThreads: new threads get a global
    /// reference, threads that ended lose theirs.
    fn refresh(&mut self, jvmti: Jvmti, jni: Jni, fields: ThreadFields) {
        jni.with_local_frame(64, || {
            let Ok(threads) = jvmti.all_threads() else {
                return;
            };
            jni.ensure_local_capacity(threads.len() + 64);
            let mut live = HashMap::with_capacity(threads.len());
            for t in threads {
                let java_id = fields.java_id(jni, t);
                let global = match self.by_java_id.remove(&java_id) {
                    Some(g) => g,
                    None => jni.new_global(t),
                };
                live.insert(java_id, global);
                jni.delete_local(t);
            }
            self.release(jni);
            self.by_java_id = live;
        });
    }

    /// JVMTI state bits of Java thread `java_id`, 0 when unknown.
    fn state(&self, jvmti: Jvmti, java_id: i64) -> u32 {
        self.by_java_id
            .get(&java_id)
            .map_or(0, |t| jvmti.thread_state(*t))
    }

    fn release(&mut self, jni: Jni) {
        for (_, global) in self.by_java_id.drain() {
            jni.delete_global(global);
        }
    }
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
    pub fn spawn(self) -> std::io::Result<()> {
        std::thread::Builder::new()
            .name("jscope-wall".into())
            .spawn(move || {
                let done = self.done.clone();
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run()));
                done.stop();
            })
            .map(drop)
    }

    fn run(self) {
        // Marked before attaching so the ThreadStart callback skips this thread.
        self.table.mark_agent(gettid());
        let Some(jni) = self.vm.attach_daemon("jscope-wall") else {
            return;
        };
        java_threads::mark_agent_java(&self.table, jni);
        let mut refs = ThreadRefs::default();
        self.sample_until_stopped(jni, &mut refs);
        refs.release(jni);
        self.vm.detach();
    }

    fn sample_until_stopped(&self, jni: Jni, refs: &mut ThreadRefs) {
        // SAFETY: getpid cannot fail.
        let pid = unsafe { libc::getpid() };
        let mut robin = RoundRobin::default();
        let mut tids = Vec::new();
        let mut listed_at: Option<Instant> = None;
        let mut next = Instant::now() + self.interval;
        while !self.stopper.wait_until(next) {
            next = (next + self.interval).max(Instant::now());
            if listed_at.is_none_or(|t| t.elapsed() >= RELIST_EVERY) {
                tids = process_tids();
                refs.refresh(self.jvmti, jni, self.fields);
                listed_at = Some(Instant::now());
            }
            self.table.retain_sampleable(&mut tids, false);
            let weight = sample_weight(self.interval, tids.len(), self.budget);
            self.shared.wall_weight_ns.store(weight, Ordering::Relaxed);
            for tid in robin.next(&tids, self.budget) {
                let state = self
                    .table
                    .java_id_of_tid(tid)
                    .map_or(0, |id| refs.state(self.jvmti, id));
                self.shared.wall_states.set(tid, state);
                // SAFETY: signalling a thread of this process; a thread that has
                // exited meanwhile makes tgkill fail with ESRCH, which is harmless.
                unsafe { libc::syscall(libc::SYS_tgkill, pid, tid as libc::c_int, WALL_SIGNAL) };
            }
        }
    }
}

/// The wall engine: runs the sampler thread when `wall` mode is asked for; its
/// samples reach the writer through the signal engine's ring.
pub(crate) struct WallEngine {
    /// `wall` mode asked for.
    wanted: bool,
    interval: Duration,
    /// Threads signalled per interval at most.
    budget: usize,
    signals: Arc<SignalEngine>,
    sampler: SamplerThread,
}

impl WallEngine {
    pub fn new(options: &Options, signals: Arc<SignalEngine>) -> WallEngine {
        WallEngine {
            wanted: options.modes.wall,
            interval: options.interval,
            budget: options.wall_threads as usize,
            signals,
            sampler: SamplerThread::default(),
        }
    }
}

impl Engine for WallEngine {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        let (true, Some(shared)) = (self.wanted, self.signals.shared()) else {
            return Ok(());
        };
        let started = self.sampler.start(|stopper, done| {
            let wall = WallSampler {
                vm: ctx.vm,
                jvmti: ctx.jvmti,
                fields: ctx.fields,
                shared,
                table: ctx.table.clone(),
                stopper,
                done,
                interval: self.interval,
                budget: self.budget,
            };
            wall.spawn()
        });
        started.map_err(StartError::Thread)
    }

    fn stop(&self, _ctx: &StopContext) {
        self.sampler.stop();
    }

    fn wait(&self, deadline: Instant) {
        self.sampler.wait(deadline);
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
