//! The cpu engine's signal sources, one per thread, each delivering SIGPROF to
//! that very thread: a perf_event counter (task-clock, or the event `event=`
//! names; see crate::native::perf) when the kernel allows it, else a POSIX timer
//! on the thread's CPU-time clock (SIGEV_THREAD_ID). Samples therefore follow CPU
//! consumption (or the event) and land wherever the thread is, not only at
//! safepoints.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::{Engine, StartContext, StartError, StopContext};
use crate::native::perf::{PerfEvents, PerfFd};
use crate::native::scan::Scanner;
use crate::threads::process_tids;

/// The kernel's CPU-time clock id of thread `tid` (CPUCLOCK_SCHED, per thread),
/// the same value pthread_getcpuclockid gives for the thread.
pub fn thread_cpu_clock(tid: u32) -> libc::clockid_t {
    ((!(tid as libc::clockid_t)) << 3) | 6
}

/// The armed sources, by Linux thread id.
pub struct CpuTimers {
    interval: Duration,
    signo: libc::c_int,
    /// perf_event counters instead of timers.
    perf: Option<PerfEvents>,
    timers: Mutex<Timers>,
}

/// One thread's source.
enum Source {
    Timer(usize),
    Perf(PerfFd),
}

#[derive(Default)]
struct Timers {
    by_tid: HashMap<u32, Source>,
    /// Set by disarm_all: a thread starting while the recording stops gets none.
    closed: bool,
}

impl CpuTimers {
    /// Timers firing `signo` every `interval` of their thread's CPU time.
    pub fn new(interval: Duration, signo: libc::c_int) -> CpuTimers {
        CpuTimers {
            interval,
            signo,
            perf: None,
            timers: Mutex::default(),
        }
    }

    /// perf_event counters (already made for `signo`) instead of timers.
    pub fn with_perf(perf: PerfEvents, signo: libc::c_int) -> CpuTimers {
        CpuTimers {
            interval: Duration::ZERO,
            signo,
            perf: Some(perf),
            timers: Mutex::default(),
        }
    }

    /// The perf counters, when they are the source.
    pub fn perf(&self) -> Option<&PerfEvents> {
        self.perf.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timers> {
        self.timers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts sampling thread `tid` every `interval` of its CPU time. A thread
    /// that already has a timer keeps it.
    pub fn arm(&self, tid: u32) -> std::io::Result<()> {
        let mut timers = self.lock();
        if timers.closed || timers.by_tid.contains_key(&tid) {
            return Ok(());
        }
        if let Some(perf) = &self.perf {
            timers.by_tid.insert(tid, Source::Perf(perf.open(tid)?));
            return Ok(());
        }
        let timer = create_timer(tid, self.signo)?;
        if let Err(e) = set_timer(timer, self.interval) {
            delete_timer(timer);
            return Err(e);
        }
        timers.by_tid.insert(tid, Source::Timer(timer as usize));
        Ok(())
    }

    fn release(&self, source: Source) {
        match source {
            Source::Timer(timer) => delete_timer(timer as libc::timer_t),
            Source::Perf(fd) => {
                if let Some(perf) = &self.perf {
                    perf.close(fd);
                }
            }
        }
    }

    /// Stops sampling thread `tid`.
    pub fn disarm(&self, tid: u32) {
        let source = self.lock().by_tid.remove(&tid);
        if let Some(source) = source {
            self.release(source);
        }
    }

    /// Arms the threads of `live` that have no source yet and releases the
    /// sources of threads no longer alive.
    pub fn sync(&self, live: &[u32]) {
        let gone: Vec<u32> = {
            let timers = self.lock();
            let set: std::collections::HashSet<u32> = live.iter().copied().collect();
            timers
                .by_tid
                .keys()
                .filter(|t| !set.contains(t))
                .copied()
                .collect()
        };
        for tid in gone {
            self.disarm(tid);
        }
        for &tid in live {
            let _ = self.arm(tid);
        }
    }

    /// Disarms every thread, for good.
    pub fn disarm_all(&self) {
        let drained: Vec<Source> = {
            let mut timers = self.lock();
            timers.closed = true;
            timers.by_tid.drain().map(|(_, s)| s).collect()
        };
        for source in drained {
            self.release(source);
        }
    }

    #[cfg(test)]
    pub fn armed(&self) -> usize {
        self.lock().by_tid.len()
    }
}

/// The cpu engine: a source per thread, each firing CPU_SIGNAL every interval
/// of its thread's CPU time (or every period of events). Threads alive at start
/// are armed here; later Java threads by the ThreadStart hook
/// (recorder::Hooks), and with `all_threads` every other thread by the
/// [`Scanner`], which re-lists the process's threads a few times a second.
pub(crate) struct CpuEngine {
    timers: Option<Arc<CpuTimers>>,
    all_threads: bool,
    scanner: Mutex<Option<Scanner>>,
}

impl CpuEngine {
    /// `timers` is None when cpu sampling is not asked for; `all_threads` samples
    /// threads that are not Java threads too.
    pub fn new(timers: Option<Arc<CpuTimers>>, all_threads: bool) -> CpuEngine {
        CpuEngine {
            timers,
            all_threads,
            scanner: Mutex::new(None),
        }
    }
}

impl Engine for CpuEngine {
    /// Arms every thread of the process (the agent's own too with mixed
    /// stacks); unless all threads are sampled, threads that turn out not to
    /// be Java threads are disarmed by the signal engine's drain.
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        if let Some(timers) = &self.timers {
            crate::native::walk::refresh_code_ranges();
            let mut tids = process_tids();
            // With mixed stacks the agent's own threads too; with Java
            // stacks only, they have none to give.
            ctx.table.retain_sampleable(&mut tids, self.all_threads);
            for tid in tids {
                let _ = timers.arm(tid);
            }
            if self.all_threads {
                let timers = timers.clone();
                let sync = Box::new(move |tids: &[u32]| timers.sync(tids));
                let scanner =
                    Scanner::spawn(sync, ctx.table.clone()).map_err(StartError::Thread)?;
                *self.scanner.lock().unwrap_or_else(|e| e.into_inner()) = Some(scanner);
            }
        }
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        if let Some(scanner) = &*self.scanner.lock().unwrap_or_else(|e| e.into_inner()) {
            scanner.stop();
        }
        self.silence();
    }

    fn silence(&self) {
        if let Some(timers) = &self.timers {
            timers.disarm_all();
        }
    }

    fn wait(&self, deadline: std::time::Instant) {
        if let Some(scanner) = &*self.scanner.lock().unwrap_or_else(|e| e.into_inner()) {
            scanner.wait(deadline);
        }
    }
}

fn create_timer(tid: u32, signo: libc::c_int) -> std::io::Result<libc::timer_t> {
    // SAFETY: zeroed sigevent is valid; the fields used are set below.
    let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
    event.sigev_notify = libc::SIGEV_THREAD_ID;
    event.sigev_signo = signo;
    event.sigev_notify_thread_id = tid as libc::c_int;
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: valid clock id, event and out-pointer.
    if unsafe { libc::timer_create(thread_cpu_clock(tid), &mut event, &mut timer) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(timer)
}

fn set_timer(timer: libc::timer_t, interval: Duration) -> std::io::Result<()> {
    let period = libc::timespec {
        tv_sec: interval.as_secs() as libc::time_t,
        tv_nsec: interval.subsec_nanos() as _,
    };
    let spec = libc::itimerspec {
        it_interval: period,
        it_value: period,
    };
    // SAFETY: timer was created by timer_create; spec is valid.
    if unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn delete_timer(timer: libc::timer_t) {
    // SAFETY: timer was created by timer_create and is deleted once.
    unsafe { libc::timer_delete(timer) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::threads::gettid;

    #[test]
    fn clock_id_matches_pthread_getcpuclockid() {
        let mut expected: libc::clockid_t = 0;
        assert_eq!(
            // SAFETY: the current thread and a valid out-pointer.
            unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut expected) },
            0
        );
        assert_eq!(thread_cpu_clock(gettid()), expected);
    }

    #[test]
    fn timers_are_armed_once_per_thread_and_removed() {
        let timers = CpuTimers::new(Duration::from_secs(3600), libc::SIGPROF);
        // A SIGPROF before the hour is up would kill the test; an hour never comes.
        let tid = gettid();
        timers.arm(tid).unwrap();
        timers.arm(tid).unwrap();
        assert_eq!(timers.armed(), 1);
        timers.disarm(tid);
        assert_eq!(timers.armed(), 0);
        timers.arm(tid).unwrap();
        timers.disarm_all();
        assert_eq!(timers.armed(), 0);
    }

    #[test]
    fn arming_a_missing_thread_fails() {
        let timers = CpuTimers::new(Duration::from_millis(10), libc::SIGPROF);
        assert!(timers.arm(0x3fff_fff0).is_err());
    }
}
