//! Per-thread CPU-time timers for the cpu engine: one POSIX timer per thread on
//! that thread's CPU-time clock, delivering SIGPROF to that very thread
//! (SIGEV_THREAD_ID). Samples therefore follow CPU consumption and land wherever
//! the thread is, not only at safepoints.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::{Engine, StartContext, StartError, StopContext};
use crate::threads::process_tids;

/// The kernel's CPU-time clock id of thread `tid` (CPUCLOCK_SCHED, per thread),
/// the same value pthread_getcpuclockid gives for the thread.
pub fn thread_cpu_clock(tid: u32) -> libc::clockid_t {
    ((!(tid as libc::clockid_t)) << 3) | 6
}

/// The armed timers, by Linux thread id.
pub struct CpuTimers {
    interval: Duration,
    signo: libc::c_int,
    timers: Mutex<Timers>,
}

#[derive(Default)]
struct Timers {
    by_tid: HashMap<u32, usize>,
    /// Set by disarm_all: a thread starting while the recording stops gets none.
    closed: bool,
}

impl CpuTimers {
    /// Timers firing `signo` every `interval` of their thread's CPU time.
    pub fn new(interval: Duration, signo: libc::c_int) -> CpuTimers {
        CpuTimers {
            interval,
            signo,
            timers: Mutex::default(),
        }
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
        let timer = create_timer(tid, self.signo)?;
        if let Err(e) = set_timer(timer, self.interval) {
            delete_timer(timer);
            return Err(e);
        }
        timers.by_tid.insert(tid, timer as usize);
        Ok(())
    }

    /// Stops sampling thread `tid`.
    pub fn disarm(&self, tid: u32) {
        if let Some(timer) = self.lock().by_tid.remove(&tid) {
            delete_timer(timer as libc::timer_t);
        }
    }

    /// Disarms every thread, for good.
    pub fn disarm_all(&self) {
        let mut timers = self.lock();
        timers.closed = true;
        for (_, timer) in timers.by_tid.drain() {
            delete_timer(timer as libc::timer_t);
        }
    }

    #[cfg(test)]
    pub fn armed(&self) -> usize {
        self.lock().by_tid.len()
    }
}

/// The cpu engine: a CPU-time timer per Java thread, each firing CPU_SIGNAL
/// every interval of its thread's CPU time. Threads alive at start are armed
/// here; later ones by the ThreadStart hook (recorder::Hooks).
pub(crate) struct CpuEngine {
    timers: Option<Arc<CpuTimers>>,
}

impl CpuEngine {
    /// `timers` is None when cpu sampling is not asked for.
    pub fn new(timers: Option<Arc<CpuTimers>>) -> CpuEngine {
        CpuEngine { timers }
    }
}

impl Engine for CpuEngine {
    /// Arms every thread of the process except the agent's own; threads that
    /// turn out not to be Java threads are disarmed by the signal engine's drain.
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        if let Some(timers) = &self.timers {
            let mut tids = process_tids();
            ctx.table.retain_sampleable(&mut tids);
            for tid in tids {
                let _ = timers.arm(tid);
            }
        }
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        self.silence();
    }

    fn silence(&self) {
        if let Some(timers) = &self.timers {
            timers.disarm_all();
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
