//! The signal side of the cpu and wall engines: the SIGPROF/SIGVTALRM handler that
//! walks the interrupted thread's Java stack with AsyncGetCallTrace into the ring,
//! and the counters it keeps.
//!
//! Everything reachable from the handler is async-signal-safe: atomics, the
//! pre-allocated ring, `clock_gettime`, `gettid`, JavaVM GetEnv and the walker.
//! No allocation, no lock, no Rust thread-local, no I/O.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

use jscope_format::thread_state::{ALIVE, RUNNABLE};

use crate::jvm::Vm;
use crate::ring::{CallFrame, SampleHeader, SampleRing};
use crate::{clock, sys, threads};

/// Signal of the cpu engine, delivered by per-thread CPU-time timers.
pub const CPU_SIGNAL: c_int = libc::SIGPROF;
/// Signal of the wall engine, sent with tgkill. HotSpot does not use it.
pub const WALL_SIGNAL: c_int = libc::SIGVTALRM;

/// `num_frames` marker for a signalled thread that is not attached to the VM.
pub const NOT_ATTACHED: i32 = -100;

/// The stack walker (see `crate::jvm::asgct`).
pub type AsgctFn = crate::jvm::asgct::Asgct;

/// Finds AsyncGetCallTrace among the symbols libjvm exports.
pub fn find_asgct() -> Option<AsgctFn> {
    AsgctFn::find()
}

/// Counter names in index order; see [`Counter`].
pub const COUNTER_NAMES: [&str; 16] = [
    "walk.ok",
    "walk.failed.no_java_frame",
    "walk.failed.no_class_load",
    "walk.failed.gc_active",
    "walk.failed.unknown_not_java",
    "walk.failed.not_walkable_not_java",
    "walk.failed.unknown_java",
    "walk.failed.not_walkable_java",
    "walk.failed.unknown_state",
    "walk.failed.thread_exit",
    "walk.failed.deopt",
    "walk.failed.safepoint",
    "walk.failed.other",
    "walk.failed.not_attached",
    "samples.dropped",
    "signals.received",
];

/// Index of the counter for a walk result: 0 for success, 1..=11 for HotSpot's
/// failure codes 0..=-10, then "other" and "not attached".
pub fn walk_counter(num_frames: i32) -> usize {
    match num_frames {
        n if n > 0 => 0,
        NOT_ATTACHED => 13,
        n @ -10..=0 => (1 - n) as usize,
        _ => 12,
    }
}

const DROPPED: usize = 14;
const RECEIVED: usize = 15;

/// Slots of [`WallStates`]; a power of two well above the threads signalled per tick.
const WALL_STATE_SLOTS: usize = 4096;

/// Thread states handed from the wall sampler to the signal handler, one slot per
/// Linux thread id (direct-mapped by `tid % WALL_STATE_SLOTS`). Each slot packs the
/// tid and the state into one atomic word, so the handler reads both consistently
/// without a lock; two tids sharing a slot only cost a sample its state.
pub struct WallStates {
    slots: Box<[AtomicU64]>,
}

impl Default for WallStates {
    fn default() -> Self {
        WallStates {
            slots: (0..WALL_STATE_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl WallStates {
    fn slot(&self, tid: u32) -> &AtomicU64 {
        &self.slots[tid as usize % WALL_STATE_SLOTS]
    }

    /// Called by the wall sampler right before it signals `tid`.
    pub fn set(&self, tid: u32, state: u32) {
        let word = (u64::from(tid) << 32) | u64::from(state);
        self.slot(tid).store(word, Ordering::Release);
    }

    /// The state last set for `tid`, or 0 (unknown). Async-signal-safe.
    pub fn get(&self, tid: u32) -> u32 {
        let word = self.slot(tid).load(Ordering::Acquire);
        if (word >> 32) as u32 == tid {
            word as u32
        } else {
            0
        }
    }
}

/// State the handler reads; one per recording, leaked so a late signal never
/// sees freed memory.
pub struct SignalShared {
    vm: Vm,
    asgct: AsgctFn,
    pub ring: SampleRing,
    counters: [AtomicU64; COUNTER_NAMES.len()],
    cpu_weight_ns: u64,
    /// Time a wall sample stands for; the wall sampler updates it every tick.
    pub wall_weight_ns: AtomicU64,
    pub wall_states: WallStates,
    active: AtomicBool,
}

impl SignalShared {
    pub fn new(vm: Vm, asgct: AsgctFn, ring: SampleRing, cpu_weight_ns: u64) -> SignalShared {
        SignalShared {
            vm,
            asgct,
            ring,
            counters: std::array::from_fn(|_| AtomicU64::new(0)),
            cpu_weight_ns,
            wall_weight_ns: AtomicU64::new(0),
            wall_states: WallStates::default(),
            active: AtomicBool::new(true),
        }
    }

    /// Makes the handler ignore signals from now on (timers may still fire once).
    pub fn deactivate(&self) {
        self.active.store(false, Ordering::Release);
    }

    pub fn count(&self, index: usize) {
        self.counters[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Current totals, named.
    pub fn counter_values(&self) -> Vec<(&'static str, u64)> {
        COUNTER_NAMES
            .iter()
            .zip(&self.counters)
            .map(|(n, c)| (*n, c.load(Ordering::Relaxed)))
            .collect()
    }

    /// Walks the current thread's stack into a ring slot. Called from the handler.
    fn sample(&self, signo: c_int, ucontext: *mut c_void) {
        self.count(RECEIVED);
        let tid = threads::gettid();
        // A CPU-time timer fires only while its thread runs on a CPU.
        let (mode, weight, state) = match signo {
            CPU_SIGNAL => (1, self.cpu_weight_ns, ALIVE | RUNNABLE),
            _ => (
                2,
                self.wall_weight_ns.load(Ordering::Relaxed),
                self.wall_states.get(tid),
            ),
        };
        let Some(mut claim) = self.ring.try_claim() else {
            self.count(DROPPED);
            return;
        };
        let env = self.vm.get_env(sys::JNI_VERSION_1_6).cast::<sys::JNIEnv>();
        let num_frames = if env.is_null() {
            NOT_ATTACHED
        } else {
            self.walk(env, claim.frames_ptr(), ucontext)
        };
        self.count(walk_counter(num_frames));
        let header = SampleHeader {
            tid,
            mode,
            num_frames,
            ticks: clock::monotonic_ns(),
            env: env as usize,
            weight_ns: weight,
            state,
        };
        claim.publish(header);
    }

    fn walk(&self, env: *mut sys::JNIEnv, frames: *mut CallFrame, ucontext: *mut c_void) -> i32 {
        // SAFETY: frames has room for ring.depth() entries, env is this thread's
        // and ucontext the handler's.
        unsafe {
            self.asgct
                .walk(env, frames, self.ring.depth() as i32, ucontext)
        }
    }
}

static CURRENT: AtomicPtr<SignalShared> = AtomicPtr::new(std::ptr::null_mut());

/// Makes `shared` the state the handler uses from now on. The previous one, if
/// any, stays allocated: a handler may still be running on it.
pub fn publish(shared: Box<SignalShared>) -> &'static SignalShared {
    let shared: &'static SignalShared = Box::leak(shared);
    CURRENT.store(
        shared as *const SignalShared as *mut SignalShared,
        Ordering::Release,
    );
    shared
}

extern "C" fn on_signal(signo: c_int, _info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let shared = CURRENT.load(Ordering::Acquire);
        // SAFETY: published states are leaked, so the pointer stays valid.
        if let Some(shared) = unsafe { shared.as_ref() } {
            if shared.active.load(Ordering::Acquire) {
                shared.sample(signo, ucontext);
            }
        }
    }));
    // SAFETY: as above; the interrupted code must see its errno unchanged.
    unsafe { *libc::__errno_location() = errno };
}

/// Installs the handler for both signals, once per process. The handler stays
/// installed after a recording stops: restoring the default action would let a
/// late timer signal kill the process.
pub fn install_handlers() -> std::io::Result<()> {
    static INSTALL: Once = Once::new();
    let mut result = Ok(());
    INSTALL.call_once(|| result = install(CPU_SIGNAL).and_then(|()| install(WALL_SIGNAL)));
    result
}

fn install(signo: c_int) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; the fields are set before use.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as *const () as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: valid sigset; blocking both signals keeps the handlers from nesting.
    unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaddset(&mut action.sa_mask, CPU_SIGNAL);
        libc::sigaddset(&mut action.sa_mask, WALL_SIGNAL);
    }
    // SAFETY: valid action; the old action is not needed.
    if unsafe { libc::sigaction(signo, &action, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_states_belong_to_their_thread() {
        let states = WallStates::default();
        assert_eq!(states.get(42), 0, "nothing set yet");
        states.set(42, 0x45);
        assert_eq!(states.get(42), 0x45);
        let sharing = 42 + WALL_STATE_SLOTS as u32;
        assert_eq!(states.get(sharing), 0, "same slot, other thread");
        states.set(sharing, 5);
        assert_eq!(states.get(42), 0, "overwritten: unknown, never wrong");
        assert_eq!(states.get(sharing), 5);
    }

    #[test]
    fn walk_results_map_to_their_counters() {
        assert_eq!(COUNTER_NAMES[walk_counter(12)], "walk.ok");
        assert_eq!(COUNTER_NAMES[walk_counter(0)], "walk.failed.no_java_frame");
        assert_eq!(COUNTER_NAMES[walk_counter(-2)], "walk.failed.gc_active");
        assert_eq!(
            COUNTER_NAMES[walk_counter(-6)],
            "walk.failed.not_walkable_java"
        );
        assert_eq!(COUNTER_NAMES[walk_counter(-10)], "walk.failed.safepoint");
        assert_eq!(COUNTER_NAMES[walk_counter(-11)], "walk.failed.other");
        assert_eq!(
            COUNTER_NAMES[walk_counter(NOT_ATTACHED)],
            "walk.failed.not_attached"
        );
    }
}
