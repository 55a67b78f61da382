//! The signal side of the cpu and wall engines: the SIGPROF/SIGVTALRM handler that
//! walks the interrupted thread's stack into the ring (Java frames with the VM
//! structure walker, `crate::hotspot`, or with AsyncGetCallTrace), and the
//! counters it keeps; and [`SignalEngine`], which publishes the handler's
//! state (one pointer, `HANDLER.current`) and drains the ring on the writer thread.
//!
//! Everything reachable from the handler is async-signal-safe: atomics, the
//! pre-allocated ring, `clock_gettime`, `gettid`, JavaVM GetEnv and the walker.
//! No allocation, no lock, no Rust thread-local, no I/O.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};

use jscope_format::thread_state::{ALIVE, IN_NATIVE, RUNNABLE};
use jscope_format::{Sample, SampleMode, StackId, ThreadId};

use crate::cpu_timers::CpuTimers;
use crate::engine::{Drained, Engine, StartContext, StartError, StopContext};
use crate::frames::{Break, BETWEEN_PC, KERNEL_PC, NATIVE_PC, SEGMENT_END};
use crate::hotspot::names::GeneratedCode;
use crate::hotspot::walk::{self as vm_walk, Context, End};
use crate::hotspot::HotSpot;
use crate::java_threads::ThreadKey;
use crate::jvm::asgct::Asgct;
use crate::native::{perf, walk as native_walk};
use crate::options::Options;
use crate::ring::{CallFrame, SampleHeader, SampleRing, ABANDONED};
use crate::sink::Sink;
use crate::{clock, sys, threads};

/// Signal of the cpu engine, delivered by per-thread CPU-time timers.
pub const CPU_SIGNAL: c_int = libc::SIGPROF;
/// Signal of the wall engine, sent with tgkill. HotSpot does not use it.
pub const WALL_SIGNAL: c_int = libc::SIGVTALRM;

/// `num_frames` marker for a signalled thread that is not attached to the VM.
pub const NOT_ATTACHED: i32 = -100;

/// Native (and kernel) frames kept per sample at most, before the Java frames.
const MAX_NATIVE: usize = 128;
const MAX_KERNEL: usize = 64;

/// si_code values of a perf_event overflow signal (POLL_IN..=POLL_HUP).
const POLL_CODES: std::ops::RangeInclusive<c_int> = 1..=6;

/// Counter names in index order: AsyncGetCallTrace's results, the handler's
/// own counts, then the VM structure walker's reasons to stop (see
/// [`break_counter`]).
pub const COUNTER_NAMES: [&str; 27] = [
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
    "walk.native_only",
    "signals.panics",
    "walk.failed.break_stack_range",
    "walk.failed.unknown_nmethod",
    "walk.failed.break_compiled",
    "walk.failed.break_interpreted",
    "walk.failed.break_deopt",
    "walk.failed.break_entry_frame",
    "walk.failed.unknown_stub",
    "walk.failed.break_native",
    "walk.failed.break_not_walkable",
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
/// A mixed sample with native frames and no Java frame (a VM or native thread,
/// or a Java thread whose Java walk failed inside native code).
const NATIVE_ONLY: usize = 16;
/// Panics caught in the handler (the sample is abandoned).
const PANICS: usize = 17;
/// The first of the VM structure walker's reasons to stop.
const BROKEN: usize = 18;

/// The counter of a walk the VM structure walker stopped for `why`: its own,
/// but for a Java thread with no Java frame, which is AsyncGetCallTrace's
/// `no_java_frame` too.
fn break_counter(why: Break) -> usize {
    match why {
        Break::NoJavaFrame => walk_counter(0),
        Break::NotWalkable => BROKEN + Break::NoJavaFrame as usize,
        other => BROKEN + other as usize,
    }
}

/// Thread states handed from the wall sampler to the signal handler, by Linux
/// thread id: the sampler sets a thread's right before it signals it.
pub type WallStates = crate::tid_slots::TidSlots;

/// State the handler reads; one per recording, leaked so a late signal never
/// sees freed memory.
pub struct SignalShared {
    /// The handler's way to its thread's JNIEnv (never GetEnv where it can be
    /// helped: see `jvm::current`).
    env: crate::jvm::current::EnvOf,
    asgct: Asgct,
    /// The VM structure walker; None: AsyncGetCallTrace walks Java frames.
    walker: Option<VmWalker>,
    /// The names of the code the JVM generates (stubs), for the writer.
    generated: GeneratedCode,
    pub ring: SampleRing,
    counters: [AtomicU64; COUNTER_NAMES.len()],
    cpu_weight_ns: u64,
    /// Time a wall sample stands for; the wall sampler updates it every tick.
    pub wall_weight_ns: AtomicU64,
    pub wall_states: WallStates,
    active: AtomicBool,
    /// Walk native frames (and kernel frames, when the counters record them)
    /// for cpu samples.
    mixed: bool,
    /// The cpu engine's sources: perf counters are re-enabled after each signal.
    cpu: Option<Arc<CpuTimers>>,
}

/// The VM structure walker and how it treats native code.
pub struct VmWalker {
    pub hotspot: Arc<HotSpot>,
    /// Native frames between Java frames, in their place (`cstack=vmx`).
    pub interleave: bool,
}

impl SignalShared {
    pub fn new(
        env: crate::jvm::current::EnvOf,
        asgct: Asgct,
        walker: Option<VmWalker>,
        ring: SampleRing,
        cpu_weight_ns: u64,
        mixed: bool,
        cpu: Option<Arc<CpuTimers>>,
    ) -> SignalShared {
        SignalShared {
            walker,
            generated: GeneratedCode::default(),
            mixed,
            cpu,
            env,
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

    /// The perf counter whose overflow sent this signal, if one did.
    fn perf_fd(&self, signo: c_int, info: *mut libc::siginfo_t) -> Option<c_int> {
        self.cpu.as_ref()?.perf()?;
        // SAFETY: the kernel's siginfo for this signal; si_fd follows si_band
        // in the SIGPOLL layout (x86_64 and aarch64: offset 24).
        let info = unsafe { info.as_ref()? };
        if signo != CPU_SIGNAL || !POLL_CODES.contains(&info.si_code) {
            return None;
        }
        // SAFETY: as above; the SIGPOLL member is what F_SETSIG signals carry.
        Some(unsafe { *((info as *const libc::siginfo_t as *const u8).add(24) as *const c_int) })
    }

    /// The kernel frames of a cpu sample (perf_events' call chain) into
    /// `frames`; how many.
    fn kernel_frames(&self, fd: Option<c_int>, frames: &mut [CallFrame]) -> usize {
        let room = frames.len().min(MAX_KERNEL);
        let mut kernel = [0u64; MAX_KERNEL];
        let k = match (fd, self.cpu.as_ref().and_then(|c| c.perf())) {
            (Some(fd), Some(p)) => p.kernel_frames(fd, &mut kernel[..room]),
            _ => 0,
        };
        for (slot, ip) in frames.iter_mut().zip(&kernel[..k]) {
            *slot = CallFrame {
                lineno: KERNEL_PC,
                method: *ip as usize as *mut c_void,
            };
        }
        k
    }

    /// Native and kernel frames of a cpu sample into `frames` (room for
    /// `room`), for AsyncGetCallTrace's Java frames below; how many.
    fn native_frames(
        &self,
        fd: Option<c_int>,
        frames: *mut CallFrame,
        room: usize,
        ucontext: *mut c_void,
    ) -> usize {
        // SAFETY: the claimed slot has room for `room` frames.
        let slot = unsafe { std::slice::from_raw_parts_mut(frames, room) };
        let k = self.kernel_frames(fd, slot);
        let mut n = k;
        let mut put = |lineno: i32, pc: usize| {
            slot[n] = CallFrame {
                lineno,
                method: pc as *mut c_void,
            };
            n += 1;
        };
        let mut pcs = [0usize; MAX_NATIVE];
        let user_room = (room - k).min(MAX_NATIVE);
        // SAFETY: the handler's own context.
        let w = unsafe { native_walk::walk_mixed(ucontext, &mut pcs[..user_room]) };
        for pc in &pcs[..w.top] {
            put(NATIVE_PC, *pc);
        }
        // Each segment with its end marker, while it fits whole.
        let mut start = w.top;
        for (closed, &end) in w.ends[..w.segments].iter().enumerate() {
            if k + end + closed + 1 > room {
                break;
            }
            for pc in &pcs[start..end] {
                put(BETWEEN_PC, *pc);
            }
            put(SEGMENT_END, 0);
            start = end;
        }
        n
    }

    /// Walks the current thread's stack into a ring slot. Called from the handler.
    fn sample(&self, signo: c_int, fd: Option<c_int>, ucontext: *mut c_void) {
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
        let depth = self.ring.depth();
        let env = self.env.get() as *mut sys::JNIEnv;
        let vthread = crate::trace::vthreads::mounted_on(tid);
        let request = crate::remote::requests().current(tid);
        if let (Some(walker), false) = (&self.walker, env.is_null()) {
            // SAFETY: the slot has room for depth frames.
            let slot = unsafe { std::slice::from_raw_parts_mut(claim.frames_ptr(), depth) };
            let (num_frames, java_code) =
                self.vm_sample(walker, mode, fd, env as usize, vthread, ucontext, slot);
            claim.publish(SampleHeader {
                tid,
                mode,
                num_frames,
                java_code,
                ticks: clock::monotonic_ns(),
                env: env as usize,
                weight_ns: weight,
                state,
                vthread,
                vm_walk: true,
                request,
            });
            return;
        }
        let native = if mode == 1 && self.mixed {
            self.native_frames(fd, claim.frames_ptr(), depth, ucontext)
        } else {
            0
        };
        let java_code = if env.is_null() {
            NOT_ATTACHED
        } else if native < depth {
            // SAFETY: the slot has room for depth frames; native are taken.
            let rest = unsafe { claim.frames_ptr().add(native) };
            self.walk(env, rest, (depth - native) as i32, ucontext)
        } else {
            0
        };
        if native > 0 && java_code <= 0 {
            self.count(NATIVE_ONLY);
        } else {
            self.count(walk_counter(java_code));
        }
        let num_frames = match native {
            0 => java_code,
            n => n as i32 + java_code.max(0),
        };
        let header = SampleHeader {
            tid,
            mode,
            num_frames,
            java_code,
            ticks: clock::monotonic_ns(),
            env: env as usize,
            weight_ns: weight,
            state,
            vthread,
            vm_walk: false,
            request,
        };
        claim.publish(header);
    }

    /// A Java thread's sample by the VM structure walker: kernel frames, then
    /// the walk's frames (native ones where asked for). Returns the frames
    /// written and, as `java_code`, the Java frames found (or, for a thread
    /// with none and no native frame either, AsyncGetCallTrace's "unknown,
    /// not Java" so that such threads drop out of Java-only sampling).
    #[allow(clippy::too_many_arguments)]
    fn vm_sample(
        &self,
        walker: &VmWalker,
        mode: u8,
        fd: Option<c_int>,
        env: usize,
        vthread: i64,
        ucontext: *mut c_void,
        slot: &mut [CallFrame],
    ) -> (i32, i32) {
        let cpu_mixed = mode == 1 && self.mixed;
        let k = if cpu_mixed {
            self.kernel_frames(fd, slot)
        } else {
            0
        };
        // SAFETY: the handler's own context.
        let Some(ctx) = (unsafe { Context::from_ucontext(ucontext) }) else {
            self.count(break_counter(Break::NotWalkable));
            return (k as i32, 0);
        };
        let options = vm_walk::Options {
            native: native_walk::code_ranges(),
            native_frames: cpu_mixed,
            interleave: walker.interleave,
            virtual_thread: vthread != 0,
            // The handler runs on the thread it walks, whose JNIEnv it has.
            own_thread: true,
        };
        let thread = env.wrapping_sub(walker.hotspot.env_offset);
        let out = vm_walk::walk(&walker.hotspot, thread, &ctx, options, &mut slot[k..]);
        match out.end {
            End::Broke(why) => self.count(break_counter(why)),
            _ if out.java_frames > 0 => self.count(0),
            _ => self.count(NATIVE_ONLY),
        }
        let frames = k + out.frames;
        if frames == 0 {
            return (UNKNOWN_NOT_JAVA, UNKNOWN_NOT_JAVA);
        }
        (frames as i32, out.java_frames as i32)
    }

    fn walk(
        &self,
        env: *mut sys::JNIEnv,
        frames: *mut CallFrame,
        depth: i32,
        ucontext: *mut c_void,
    ) -> i32 {
        // SAFETY: frames has room for depth entries, env is this thread's and
        // ucontext the handler's.
        unsafe { self.asgct.walk(env, frames, depth, ucontext) }
    }
}

/// The handler's process-wide state.
struct Handler {
    /// The state of the recording the handler samples for (never freed).
    current: AtomicPtr<SignalShared>,
    /// The handlers are installed once.
    install: Once,
}

static HANDLER: Handler = Handler {
    current: AtomicPtr::new(std::ptr::null_mut()),
    install: Once::new(),
};

/// Makes `shared` the state the handler uses from now on. The previous one, if
/// any, stays allocated: a handler may still be running on it.
pub fn publish(shared: Box<SignalShared>) -> &'static SignalShared {
    let shared: &'static SignalShared = Box::leak(shared);
    HANDLER.current.store(
        shared as *const SignalShared as *mut SignalShared,
        Ordering::Release,
    );
    shared
}

extern "C" fn on_signal(signo: c_int, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    let shared = HANDLER.current.load(Ordering::Acquire);
    // SAFETY: published states are leaked, so the pointer stays valid.
    if let Some(shared) = unsafe { shared.as_ref() } {
        // The perf counter that signalled is taken first and re-enabled after
        // the sample whatever happened in it: a caught panic must not leave
        // the thread's counter disabled for good.
        let mut fd = None;
        let sampled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if shared.active.load(Ordering::Acquire) {
                fd = shared.perf_fd(signo, info);
                shared.sample(signo, fd, ucontext);
            }
        }));
        if let Some(fd) = fd {
            perf::rearm(fd);
        }
        if sampled.is_err() {
            shared.count(PANICS);
        }
    }
    // SAFETY: as above; the interrupted code must see its errno unchanged.
    unsafe { *libc::__errno_location() = errno };
}

/// The running recording's VM structure walker, if it has one (tests drive
/// it directly with the `fault-injection` feature).
#[cfg(feature = "fault-injection")]
pub fn current_walker() -> Option<&'static HotSpot> {
    // SAFETY: published states are leaked, so the pointer stays valid.
    let shared = unsafe { HANDLER.current.load(Ordering::Acquire).as_ref()? };
    shared.walker.as_ref().map(|w| &*w.hotspot)
}

/// JVMTI DynamicCodeGenerated: the JVM generated code `name` (a stub) at
/// [start, start + len); the writer names stub frames by it.
pub fn code_generated(name: &str, start: usize, len: usize) {
    // SAFETY: published states are leaked, so the pointer stays valid.
    if let Some(shared) = unsafe { HANDLER.current.load(Ordering::Acquire).as_ref() } {
        shared.generated.add(name, start, len);
    }
}

/// Installs the handler for both signals, once per process. The handler stays
/// installed after a recording stops: restoring the default action would let a
/// late timer signal kill the process.
pub fn install_handlers() -> std::io::Result<()> {
    let mut result = Ok(());
    HANDLER
        .install
        .call_once(|| result = install(CPU_SIGNAL).and_then(|()| install(WALL_SIGNAL)));
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

/// Bytes of frame storage the sample ring may take.
const RING_FRAME_BYTES: usize = 8 << 20;

/// Asks the JVM for what the VM structure walker names frames by: the names
/// of the code it generated (stubs), now and from now on, and debug
/// information at every instruction of what it compiles from now on, so that
/// a sample in the middle of compiled code names its inlined methods. The
/// flag that asks for the latter is turned on directly; only where it cannot
/// be is it had by listening to compiled methods (which turns it on too, but
/// has the JVM describe every compiled method to the agent: JIT-heavy
/// programs paid about two percent CPU for that). What the JVM refuses only
/// makes frames less precise.
fn learn_generated_code(jvmti: crate::jvm::Jvmti, hotspot: &HotSpot) {
    if !hotspot.debug_every_instruction() {
        let mut caps = crate::jvm::no_capabilities();
        caps.set_can_generate_compiled_method_load_events(1);
        if jvmti.add_capabilities(&caps).is_ok() {
            let _ = jvmti.set_event(true, sys::JVMTI_EVENT_COMPILED_METHOD_LOAD);
        }
    }
    if jvmti
        .set_event(true, sys::JVMTI_EVENT_DYNAMIC_CODE_GENERATED)
        .is_ok()
    {
        let _ = jvmti.generate_events(sys::JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
    }
}

/// The signal engine (never reached from the handler): publishes the handler's
/// state when cpu or wall sampling is asked for, and on the writer thread turns
/// the ring's raw samples into Sample records. The cpu engine's timers and the
/// wall engine's sampler thread make the signals.
pub(crate) struct SignalEngine {
    /// The VM structure walker, handed to the handler's state at start.
    walker: Mutex<Option<VmWalker>>,
    /// Cpu or wall sampling asked for.
    wanted: bool,
    /// Frames kept per sample.
    depth: usize,
    /// CPU time a cpu sample stands for.
    cpu_weight_ns: u64,
    shared: OnceLock<&'static SignalShared>,
    /// The cpu engine's timers, disarmed for threads that are not Java threads.
    timers: Option<Arc<CpuTimers>>,
    /// Every thread is sampled, with native frames (cstack=fp): failed walks
    /// are kept as `[unknown]` samples and no thread is struck out.
    mixed: bool,
    /// With mixed stacks: the symbol tables being read off the writer thread;
    /// samples wait in their ring until they are.
    symbols: OnceLock<Arc<crate::native::names::Preload>>,
    drain: Mutex<SampleDrain>,
}

#[derive(Default)]
struct SampleDrain {
    strikes: Strikes,
    written: u64,
    names: crate::hotspot::names::GeneratedNames,
}

impl SignalEngine {
    /// The engine for `options`; `hotspot` is the VM structure walker when
    /// it was resolved (else AsyncGetCallTrace walks Java frames).
    pub fn new(
        options: &Options,
        timers: Option<Arc<CpuTimers>>,
        hotspot: Option<Arc<HotSpot>>,
    ) -> SignalEngine {
        SignalEngine {
            walker: Mutex::new(hotspot.map(|hotspot| VmWalker {
                hotspot,
                interleave: options.cstack.interleaved(),
            })),
            wanted: options.modes.signals(),
            depth: options.depth as usize,
            cpu_weight_ns: options.cpu_weight(),
            shared: OnceLock::new(),
            timers,
            mixed: options.cstack.mixed(),
            symbols: OnceLock::new(),
            drain: Mutex::default(),
        }
    }

    /// The handler's state, once started.
    pub fn shared(&self) -> Option<&'static SignalShared> {
        self.shared.get().copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SampleDrain> {
        self.drain.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn on_sample(
        &self,
        d: &mut SampleDrain,
        sink: &mut Sink,
        h: &SampleHeader,
        frames: &[CallFrame],
    ) {
        if h.num_frames == ABANDONED {
            return;
        }
        let mixed_cpu = self.mixed && h.mode == 1;
        if h.num_frames <= 0 && (!mixed_cpu || h.vm_walk) {
            // Failed walks are counted by the handler; here only threads that
            // can never give a Java stack are dropped from sampling.
            if d.strikes.strike(h.tid, h.num_frames) && !sink.is_java_thread(h.tid, h.env) {
                self.exclude(sink, h.tid);
            }
            return;
        }
        d.strikes.clear(h.tid);
        let thread = match h.mode {
            1 => Some(sink.cpu_sample_thread(h.tid, h.env)),
            _ => sink.event_thread(ThreadKey::new(h.tid, h.env, 0)),
        };
        let Some(mut thread) = thread else {
            return;
        };
        // A carrier running a virtual thread: the sample is the virtual thread's.
        let mut carrier = 0;
        if h.vthread != 0 {
            carrier = std::mem::replace(&mut thread, sink.virtual_thread(h.vthread));
        }
        let stack = if h.vm_walk {
            let source = self
                .shared()
                .and_then(|s| Some((&s.generated, &*s.walker.as_ref()?.hotspot)));
            let names = &mut d.names;
            let mut name = |lineno: i32, value: usize| names.name(source, lineno, value);
            sink.walked_stack(frames, &mut name)
        } else if h.num_frames <= 0 {
            // The time was spent all the same: kept, under the walk's failure.
            let reason = COUNTER_NAMES[walk_counter(h.num_frames)];
            sink.unknown_stack(reason.trim_start_matches("walk.failed."))
        } else if mixed_cpu {
            sink.mixed_stack(frames.iter().map(|f| (f.method as usize, f.lineno)))
        } else {
            sink.stack(frames.iter().map(|f| (f.method as usize, f.lineno)))
        };
        let mode = if h.mode == 1 {
            SampleMode::Cpu
        } else {
            SampleMode::Wall
        };
        let top_native = frames
            .iter()
            .find(|f| !matches!(f.lineno, BETWEEN_PC | SEGMENT_END))
            .is_some_and(|f| {
                matches!(f.lineno, NATIVE_PC | KERNEL_PC)
                    || sink.symbols.is_native(f.method as usize)
            });
        let sample = Sample {
            request: h.request.into(),
            thread: ThreadId(thread),
            carrier: ThreadId(carrier),
            ticks: h.ticks,
            stack: StackId(stack),
            mode,
            weight_ns: h.weight_ns,
            state: sample_state(mode, h.state, top_native),
        };
        sink.chunk.sample(&sample);
        d.written += 1;
    }

    /// Stops sampling a thread that is not a Java thread (GC, compiler, VM-internal
    /// or plain native threads).
    fn exclude(&self, sink: &mut Sink, tid: u32) {
        sink.table.mark_not_java(tid);
        // With mixed stacks the cpu engine samples such threads all the same
        // (only the wall sampler leaves them alone).
        if let (Some(timers), false) = (&self.timers, self.mixed) {
            timers.disarm(tid);
        }
    }
}

impl Engine for SignalEngine {
    /// The handler's shared state, with a ring sized so its frames take
    /// RING_FRAME_BYTES.
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        if !self.wanted {
            return Ok(());
        }
        let asgct = Asgct::find().ok_or(StartError::NoAsyncGetCallTrace)?;
        install_handlers().map_err(StartError::Signals)?;
        let depth = self.depth;
        let slot_bytes = depth * std::mem::size_of::<CallFrame>();
        let capacity = (RING_FRAME_BYTES / slot_bytes).clamp(256, 8192);
        let ring = SampleRing::new(capacity, depth);
        let walker = self.walker.lock().unwrap_or_else(|e| e.into_inner()).take();
        let hotspot = walker.as_ref().map(|w| w.hotspot.clone());
        let shared = SignalShared::new(
            ctx.env,
            asgct,
            walker,
            ring,
            self.cpu_weight_ns,
            self.mixed,
            self.timers.clone(),
        );
        let _ = self.shared.set(publish(Box::new(shared)));
        if let Some(hotspot) = hotspot {
            learn_generated_code(ctx.jvmti, &hotspot);
        } else if self.mixed {
            // AsyncGetCallTrace's native segments are found through call_helper.
            native_walk::find_call_helper();
        }
        if self.mixed {
            let timers = self.timers.clone();
            let arm = Box::new(move |tid| {
                if let Some(t) = timers {
                    let _ = t.arm(tid);
                }
            });
            if let Some(preload) = crate::native::names::Preload::start(ctx.table.clone(), arm) {
                let _ = self.symbols.set(preload);
            }
        }
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        self.silence();
    }

    fn silence(&self) {
        if let Some(shared) = self.shared() {
            shared.deactivate();
        }
    }

    fn drain(&self, sink: &mut Sink) -> Drained {
        if let Some(shared) = self.shared() {
            if !sink.native_names_ready(self.symbols.get().map(|p| &**p)) {
                // The ring holds them (or counts what it cannot) meanwhile.
                return Drained::All;
            }
            let mut d = self.lock();
            while shared
                .ring
                .pop(|h, frames| self.on_sample(&mut d, sink, h, frames))
                .is_some()
            {}
        }
        Drained::All
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        if let Some(shared) = self.shared() {
            out.extend(shared.counter_values());
        }
        out.push(("samples.written", self.lock().written));
    }
}

/// Consecutive "not a Java thread" walk results per Linux thread. A thread not
/// attached to the VM is struck out at once; one the walker calls "unknown, not
/// Java" (-3: compiler and other hidden VM threads, or a native thread without a
/// walkable Java frame) after STRIKE_OUT results in a row, since a Java thread in
/// transition can give that code once.
#[derive(Default)]
struct Strikes {
    by_tid: HashMap<u32, u32>,
}

const STRIKE_OUT: u32 = 3;
const UNKNOWN_NOT_JAVA: i32 = -3;

impl Strikes {
    /// Counts a failed walk; true when the thread should no longer be sampled.
    fn strike(&mut self, tid: u32, code: i32) -> bool {
        match code {
            NOT_ATTACHED => true,
            UNKNOWN_NOT_JAVA => {
                let n = self.by_tid.entry(tid).or_default();
                *n += 1;
                *n >= STRIKE_OUT
            }
            _ => false,
        }
    }

    fn clear(&mut self, tid: u32) {
        self.by_tid.remove(&tid);
    }
}

/// A sample's JVMTI state bits. The handler knows a cpu sample's thread was on a
/// CPU (alive and runnable) and a wall sample's state as the wall sampler read it
/// just before signalling; a cpu sample whose top frame is a native method is
/// running native code.
fn sample_state(mode: SampleMode, handler_state: u32, top_native: bool) -> u32 {
    match mode {
        SampleMode::Cpu if top_native => handler_state | IN_NATIVE,
        _ => handler_state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn every_stop_of_the_vm_walker_has_a_counter_of_its_name() {
        for why in Break::ALL {
            let name = COUNTER_NAMES[break_counter(why)];
            assert_eq!(
                name.strip_prefix("walk.failed."),
                Some(why.name()),
                "{why:?}"
            );
        }
        let mut names = COUNTER_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COUNTER_NAMES.len(), "counter names are unique");
    }

    #[test]
    fn unattached_threads_strike_out_at_once() {
        let mut s = Strikes::default();
        assert!(s.strike(1, NOT_ATTACHED));
    }

    #[test]
    fn unknown_not_java_strikes_out_after_three_in_a_row() {
        let mut s = Strikes::default();
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        s.clear(2);
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(!s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(s.strike(2, UNKNOWN_NOT_JAVA));
        assert!(
            !s.strike(3, -2),
            "a GC in progress says nothing about the thread"
        );
    }

    #[test]
    fn cpu_samples_in_native_methods_are_native() {
        use jscope_format::thread_state::{classify, ALIVE, RUNNABLE, SLEEPING, WAITING};
        use jscope_format::StateClass;
        let on_cpu = ALIVE | RUNNABLE;
        let cpu = |native| classify(sample_state(SampleMode::Cpu, on_cpu, native));
        assert_eq!(cpu(false), StateClass::Runnable);
        assert_eq!(cpu(true), StateClass::Native);
        let sleeping = ALIVE | WAITING | SLEEPING;
        assert_eq!(
            sample_state(SampleMode::Wall, sleeping, true),
            sleeping,
            "a wall sample keeps what JVMTI said"
        );
    }
}
