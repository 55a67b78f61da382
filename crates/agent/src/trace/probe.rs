//! The probes' hot path: the native bodies of `jscope/Trace.enter/exit/exitThrow`.
//!
//! Each Java thread owns a [`ThreadRing`], a single-producer single-consumer ring
//! of raw events that the writer thread drains; the thread itself keeps a shadow
//! stack (repairs missing exits, decides `exclude-library`) and the JPMT counter of
//! calls it did not record. Nothing here locks or allocates except the first event
//! of a thread in a session (registering its ring).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::aggregate::ThreadAgg;
use crate::clock::{self, ProbeClock, StampMapper};
use crate::java_threads::ThreadKey;
use crate::jvm::entry::{guarded_in, TRACE};
use crate::native::perf::{self, PerfKind};
use crate::sys;

/// Bit 30 of a probe id marks a library (JDK) method; the rest is the index into
/// the probe registry. Bit 31 is left clear so ids stay positive Java ints.
pub const LIBRARY_BIT: u32 = 1 << 30;
/// Bit 29 marks a count-only probe (`count-untraced`): its calls only raise the
/// thread's untraced counter.
pub const COUNT_BIT: u32 = 1 << 29;
pub const INDEX_MASK: u32 = COUNT_BIT - 1;
/// Marks a shadow-stack entry whose enter was recorded.
const RECORDED: u32 = 1 << 31;

pub const KIND_ENTER: u32 = 0;
pub const KIND_EXIT: u32 = 1;
pub const KIND_THROW: u32 = 2;
/// Not a trace event: the thread called `Thread.start`; `cpu` holds the
/// started thread's Java id (the writer turns it into a start_call event).
pub const KIND_START: u32 = 3;

/// One probe hit as the application thread stores it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawEvent {
    pub ticks: u64,
    /// Thread CPU ns when the session records CPU time, or the thread's perf
    /// counter under `tracecounter=`, else 0.
    pub cpu: u64,
    /// `index << 2 | kind`.
    pub head: u32,
    /// On enters: calls not recorded since the previous recorded event.
    pub untraced: u32,
}

/// Events one thread may have waiting for the writer before its probes wait (or,
/// with `traceoverflow=drop`, drop).
pub const RING_EVENTS: usize = 1 << 19;

/// The longest a probe waits for room in its thread's ring. A writer that frees
/// no room for this long is taken for stopped or dead: probes then drop (and
/// count) instead of waiting, until the writer drains again.
const WAIT_LIMIT_NS: u64 = 5_000_000_000;

/// A thread's trace events on their way to the writer.
pub type ThreadRing = crate::thread_ring::ThreadRing<RawEvent>;
/// A thread's own handle on its ring (one per ring).
type Producer = crate::thread_ring::Producer<RawEvent>;

// SAFETY: RawEvent is plain integers; all-zero bytes are a valid value.
unsafe impl crate::thread_ring::ZeroValid for RawEvent {}

/// What the probes share with the trace session and the writer, in one static
/// (the natives find it without a lock): the running session's settings and
/// rings, and counters that add up over a recording's sessions.
struct ProbeState {
    /// The running session's number; 0 means tracing is off.
    generation: AtomicU64,
    /// The number the next session takes.
    next_generation: AtomicU64,
    with_cpu: AtomicBool,
    exclude_library: AtomicBool,
    aggregate: AtomicBool,
    ring_capacity: AtomicUsize,
    /// Exits whose enter this thread never saw (tracing began inside the call).
    unmatched_exits: AtomicU64,
    /// Enters without exit closed by an outer exit (see `Local::exit`).
    repaired: AtomicU64,
    threads: AtomicU32,
    /// Virtual threads given a ring of their own.
    virtual_threads: AtomicU32,
    /// Probes stamp events with the probe clock (the TSC when the kernel trusts
    /// it): a few ns instead of the ~20 ns of clock_gettime. The writer maps
    /// stamps to CLOCK_MONOTONIC ns.
    clock: ProbeClock,
    dropped_ended: AtomicU64,
    /// `traceoverflow=wait`: a probe whose ring is full waits for the writer.
    wait_on_full: AtomicBool,
    /// Set when a wait reached WAIT_LIMIT_NS; cleared by the writer's next drain.
    wait_gave_up: AtomicBool,
    /// Waits for room in this session, and their total length.
    waits: AtomicU64,
    waited_ns: AtomicU64,
    /// Rings of the current session, for the writer.
    rings: Mutex<Vec<Arc<ThreadRing>>>,
    /// `tracecounter=`: the perf counter each thread opens in place of its CPU
    /// time (read only when a thread's probe state is made).
    counter: Mutex<Option<PerfKind>>,
    /// Aggregate tables of the current session's threads (`traceagg`).
    tables: Mutex<Vec<Arc<ThreadAgg>>>,
}

static PROBES: ProbeState = ProbeState {
    generation: AtomicU64::new(0),
    next_generation: AtomicU64::new(1),
    with_cpu: AtomicBool::new(false),
    exclude_library: AtomicBool::new(false),
    aggregate: AtomicBool::new(false),
    ring_capacity: AtomicUsize::new(RING_EVENTS),
    unmatched_exits: AtomicU64::new(0),
    repaired: AtomicU64::new(0),
    threads: AtomicU32::new(0),
    virtual_threads: AtomicU32::new(0),
    clock: ProbeClock::new(),
    dropped_ended: AtomicU64::new(0),
    wait_on_full: AtomicBool::new(true),
    wait_gave_up: AtomicBool::new(false),
    waits: AtomicU64::new(0),
    waited_ns: AtomicU64::new(0),
    rings: Mutex::new(Vec::new()),
    counter: Mutex::new(None),
    tables: Mutex::new(Vec::new()),
};

/// The settings of a session's probes.
#[derive(Debug, Clone, Copy)]
pub struct SessionSettings {
    pub with_cpu: bool,
    pub exclude_library: bool,
    pub aggregate: bool,
    pub ring_capacity: usize,
    /// Wait for the writer when a ring is full (else drop and count).
    pub wait_on_full: bool,
    /// `tracecounter=`: events carry this counter's value instead of CPU time
    /// (then `with_cpu` is set too: the column is the same).
    pub counter: Option<PerfKind>,
}

/// Switches the probes on for a new session with these settings.
pub fn begin_session(settings: SessionSettings) {
    let SessionSettings {
        with_cpu,
        exclude_library,
        aggregate,
        ring_capacity,
        wait_on_full,
        counter,
    } = settings;
    *PROBES.counter.lock().unwrap_or_else(|e| e.into_inner()) = counter;
    PROBES
        .with_cpu
        .store(with_cpu || counter.is_some(), Ordering::Relaxed);
    PROBES.wait_on_full.store(wait_on_full, Ordering::Relaxed);
    PROBES.wait_gave_up.store(false, Ordering::Relaxed);
    PROBES.waits.store(0, Ordering::Relaxed);
    PROBES.waited_ns.store(0, Ordering::Relaxed);
    PROBES.aggregate.store(aggregate, Ordering::Relaxed);
    tables().clear();
    PROBES
        .exclude_library
        .store(exclude_library, Ordering::Relaxed);
    PROBES.ring_capacity.store(ring_capacity, Ordering::Relaxed);
    rings().clear();
    *unmounted() = None;
    PROBES.clock.start();
    let generation = PROBES.next_generation.fetch_add(1, Ordering::Relaxed);
    PROBES.generation.store(generation, Ordering::Release);
}

/// Switches the probes off; events already in rings stay for the writer.
pub fn end_session() {
    PROBES.generation.store(0, Ordering::Release);
}

/// True while a session's probes record.
pub fn session_running() -> bool {
    PROBES.generation.load(Ordering::Acquire) != 0
}

pub fn set_exclude_library(on: bool) {
    PROBES.exclude_library.store(on, Ordering::Relaxed);
}

pub fn rings() -> std::sync::MutexGuard<'static, Vec<Arc<ThreadRing>>> {
    PROBES.rings.lock().unwrap_or_else(|e| e.into_inner())
}

/// The aggregate tables of the current session's threads.
pub fn tables() -> std::sync::MutexGuard<'static, Vec<Arc<ThreadAgg>>> {
    PROBES.tables.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the current session's events carry thread CPU time.
pub fn with_cpu() -> bool {
    PROBES.with_cpu.load(Ordering::Relaxed)
}

/// Drops the rings of ended threads that hold nothing more, keeping their drop
/// counts and handing each to `forgotten`.
pub fn forget_ended(rings: &mut Vec<Arc<ThreadRing>>, forgotten: impl FnMut(&Arc<ThreadRing>)) {
    crate::thread_ring::forget_ended(rings, &PROBES.dropped_ended, forgotten);
}

/// Zeroes the counters that add up over the sessions of one recording, so a
/// later recording in the same process (attach) counts only its own.
pub fn reset_recording_counters() {
    for counter in [
        &PROBES.unmatched_exits,
        &PROBES.repaired,
        &PROBES.dropped_ended,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    PROBES.threads.store(0, Ordering::Relaxed);
    PROBES.virtual_threads.store(0, Ordering::Relaxed);
}

/// Events dropped by threads whose rings were forgotten.
pub fn dropped_by_ended() -> u64 {
    PROBES.dropped_ended.load(Ordering::Relaxed)
}

/// The writer drains: probes that gave up waiting may wait again.
pub fn writer_alive() {
    if PROBES.wait_gave_up.load(Ordering::Relaxed) {
        PROBES.wait_gave_up.store(false, Ordering::Relaxed);
    }
}

/// (waits for room in a full ring, ns spent waiting) in the current session.
pub fn waits() -> (u64, u64) {
    (
        PROBES.waits.load(Ordering::Relaxed),
        PROBES.waited_ns.load(Ordering::Relaxed),
    )
}

/// Process-wide probe counters as (name, value).
pub fn counter_values() -> [(&'static str, u64); 4] {
    [
        (
            "trace.unmatched_exits",
            PROBES.unmatched_exits.load(Ordering::Relaxed),
        ),
        (
            "trace.repaired_enters",
            PROBES.repaired.load(Ordering::Relaxed),
        ),
        (
            "trace.threads",
            PROBES.threads.load(Ordering::Relaxed).into(),
        ),
        (
            "trace.virtual_threads",
            PROBES.virtual_threads.load(Ordering::Relaxed).into(),
        ),
    ]
}

/// True when the probes' ticks are TSC values (see [`TickMapper`]).
pub fn uses_tsc() -> bool {
    PROBES.clock.uses_tsc()
}

/// Maps probe ticks to CLOCK_MONOTONIC ns.
pub type TickMapper = StampMapper;

/// A mapper for the ticks of the current session.
pub fn tick_mapper() -> TickMapper {
    PROBES.clock.mapper()
}

/// The probes' clock.
#[inline]
fn now() -> u64 {
    PROBES.clock.now()
}

/// A probe's stamp: `early`, read as the native began, or now when it was not
/// read then (0).
#[inline(always)]
fn stamp(early: u64) -> u64 {
    if early != 0 {
        early
    } else {
        now()
    }
}

/// Reads the stamp of a probe as its native begins, unless tracing is off or
/// the call may only be counted (count-only ids; library ids under
/// `exclude-library`, whose caller decides), which need none. Read first, the
/// TSC's long latency overlaps the probe's own work instead of delaying the
/// ring store that the JNI wrapper's fence, right after the native returns,
/// waits for (about 3 ns of a traced call on the machine of BENCHMARKS.md).
#[inline(always)]
fn early_stamp(id: u32, exclude_library: bool) -> u64 {
    let counted = id & COUNT_BIT != 0 || (exclude_library && id & LIBRARY_BIT != 0);
    // Acquire: the session's clock settings, stored before its generation, are
    // what `now` reads.
    if counted || PROBES.generation.load(Ordering::Acquire) == 0 {
        0
    } else {
        now()
    }
}

/// An open call on the shadow stack.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// Probe id, with `RECORDED` when its enter was written.
    id: u32,
    /// Entry ticks (aggregate mode only).
    start: u64,
}

/// One thread's probe state in one session.
pub struct Local {
    /// This thread's ring and shadow stack, or while a virtual thread is mounted
    /// on this carrier, that virtual thread's.
    track: Track,
    /// Aggregate mode: caller→callee totals instead of events.
    agg: Option<Arc<ThreadAgg>>,
    generation: u64,
    with_cpu: bool,
    /// Events without a CPU column and not aggregated: the probes' fast paths
    /// ([`Local::enter`], [`Local::exit`]) apply.
    plain: bool,
    /// On a full ring, wait for the writer (`traceoverflow=wait`) or drop.
    wait: bool,
    /// The Java id of the virtual thread mounted on this carrier (0: none).
    mounted: i64,
    /// The carrier's own track while a virtual thread is mounted.
    home: Option<Track>,
    /// `tracecounter=`: this thread's perf counter fd, read in place of its CPU
    /// time ([`NO_COUNTER`]: CPU time, or no fd: the open failed and `with_cpu`
    /// is off, so 0 is written).
    counter_fd: i32,
}

/// `Local::counter_fd` when this thread has no counter.
const NO_COUNTER: i32 = -1;

/// What a thread's events go through: its ring and shadow stack. A carrier
/// swaps its own for a virtual thread's at each mount, so a virtual thread keeps
/// one ring and one stack whichever carrier runs it.
pub struct Track {
    /// The ring, through this track's producer handle.
    out: Producer,
    stack: Vec<Open>,
    /// JPMT: calls not recorded since the previous recorded event.
    untraced: u32,
}

/// Virtual-thread ring capacity: far more virtual threads than platform
/// threads exist at once, so each gets a smaller ring (their writer waits or
/// drops alike).
const VIRTUAL_RING_EVENTS: usize = 1 << 12;

/// Tracks of the virtual threads not mounted now, by Java id.
static UNMOUNTED: Mutex<Option<std::collections::HashMap<i64, Track>>> = Mutex::new(None);

fn unmounted() -> std::sync::MutexGuard<'static, Option<std::collections::HashMap<i64, Track>>> {
    UNMOUNTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new virtual thread's track, its ring registered for the writer under a key
/// with only the Java id (no Linux thread: the writer names it a virtual thread).
/// Aggregate mode writes no events: its tracks share one ring the writer never
/// sees, so the drain does not scan a ring per virtual thread.
fn virtual_track(java_id: i64, aggregate: bool) -> Track {
    let ring = if aggregate {
        static NO_EVENTS: OnceLock<Arc<ThreadRing>> = OnceLock::new();
        NO_EVENTS
            .get_or_init(|| Arc::new(ThreadRing::new(1, ThreadKey::default())))
            .clone()
    } else {
        let capacity = PROBES
            .ring_capacity
            .load(Ordering::Relaxed)
            .min(VIRTUAL_RING_EVENTS);
        let ring = Arc::new(ThreadRing::new(capacity, ThreadKey::new(0, 0, java_id)));
        rings().push(ring.clone());
        ring
    };
    PROBES.virtual_threads.fetch_add(1, Ordering::Relaxed);
    Track {
        out: Producer::new(ring),
        stack: Vec::new(),
        untraced: 0,
    }
}

impl Local {
    pub fn new(
        ring: Arc<ThreadRing>,
        agg: Option<Arc<ThreadAgg>>,
        generation: u64,
        with_cpu: bool,
    ) -> Local {
        Local {
            track: Track {
                out: Producer::new(ring),
                stack: Vec::with_capacity(256),
                untraced: 0,
            },
            plain: !with_cpu && agg.is_none(),
            agg,
            generation,
            with_cpu,
            wait: false,
            mounted: 0,
            home: None,
            counter_fd: NO_COUNTER,
        }
    }

    /// Events carry `kind`'s count for this thread instead of its CPU time.
    /// A thread whose counter fails to open writes 0 without trying a read per
    /// event (each would be a failing syscall on the probe's path).
    fn open_counter(&mut self, kind: PerfKind) {
        match perf::open_counter(kind) {
            Ok(fd) => {
                self.with_cpu = true;
                self.counter_fd = fd;
            }
            Err(_) => self.with_cpu = false,
        }
        self.plain = !self.with_cpu && self.agg.is_none();
    }

    /// Virtual thread `java_id` was mounted on this carrier (or started on it):
    /// its events go to its own ring and stack until it unmounts.
    pub fn mount(&mut self, java_id: i64) {
        if self.mounted == java_id {
            return;
        }
        if self.mounted != 0 {
            // Its unmount was not seen: it ended.
            self.end(self.mounted);
        }
        let taken = unmounted().as_mut().and_then(|m| m.remove(&java_id));
        let mut track = taken.unwrap_or_else(|| virtual_track(java_id, self.agg.is_some()));
        std::mem::swap(&mut self.track, &mut track);
        self.home = Some(track);
        self.mounted = java_id;
    }

    /// Virtual thread `java_id` unmounts from this carrier: its track waits for
    /// its next mount, on whichever carrier.
    pub fn unmount(&mut self, java_id: i64) {
        if self.mounted != java_id {
            return; // mounted before this session began
        }
        let Some(mut track) = self.home.take() else {
            return;
        };
        std::mem::swap(&mut self.track, &mut track);
        self.mounted = 0;
        unmounted()
            .get_or_insert_with(Default::default)
            .insert(java_id, track);
    }

    /// Virtual thread `java_id` ends: its ring is handed to the writer as ended.
    pub fn end(&mut self, java_id: i64) {
        if self.mounted != java_id {
            if let Some(t) = unmounted().as_mut().and_then(|m| m.remove(&java_id)) {
                t.out.ring().ended.store(true, Ordering::Release);
            }
            return;
        }
        let Some(mut track) = self.home.take() else {
            return;
        };
        std::mem::swap(&mut self.track, &mut track);
        self.mounted = 0;
        track.out.ring().ended.store(true, Ordering::Release);
    }

    // Always inlined: as a call it cost a frame per probe on the hottest path.
    #[inline(always)]
    fn emit(&mut self, id: u32, kind: u32, untraced: u32, early: u64) {
        let cpu = if self.with_cpu {
            if self.counter_fd == NO_COUNTER {
                clock::thread_cpu_ns()
            } else {
                perf::read_count(self.counter_fd)
            }
        } else {
            0
        };
        self.push(|| RawEvent {
            ticks: stamp(early),
            cpu,
            head: ((id & INDEX_MASK) << 2) | kind,
            untraced,
        });
    }

    /// This thread is starting the thread whose Java id is `started`: a marker
    /// in the ring, between the events before and after (aggregate mode keeps
    /// no events, so no marker either).
    #[inline]
    pub fn started(&mut self, started: i64) {
        if self.agg.is_some() {
            return;
        }
        self.push(|| RawEvent {
            ticks: now(),
            cpu: started as u64,
            head: KIND_START,
            untraced: 0,
        });
    }

    /// The ring is full: wait for the writer to make room, or drop and count.
    #[cold]
    #[inline(never)]
    fn full(&mut self, event: RawEvent) {
        if self.wait && wait_for_room(&mut self.track.out) && self.track.out.try_push(event) {
            return;
        }
        self.track.out.ring().count_drop();
    }

    /// Into the ring the event `make` builds; a full ring waits or drops (see
    /// [`Local::full`]). The event is built only once there is room, right
    /// before it is stored (see [`crate::thread_ring::Producer::reserve`]).
    #[inline(always)]
    fn push(&mut self, make: impl Fn() -> RawEvent) {
        if !self.track.out.reserve() {
            return self.full(make());
        }
        self.track.out.push_reserved(make());
    }

    /// The fast paths' event: no CPU column.
    #[inline(always)]
    fn push_plain(&mut self, head: u32, untraced: u32, early: u64) {
        self.push(|| RawEvent {
            ticks: stamp(early),
            cpu: 0,
            head,
            untraced,
        });
    }

    /// A method entry. Under `exclude-library` a library method is recorded only
    /// when the innermost instrumented caller is application code (JaViz); called
    /// from a library method or from uninstrumented code it is only counted.
    #[inline(always)]
    pub fn enter(&mut self, id: u32, exclude_library: bool) {
        self.enter_at(id, exclude_library, 0);
    }

    /// [`Local::enter`] with the stamp read as the native began ([`early_stamp`];
    /// 0: none, read one when needed).
    #[inline(always)]
    fn enter_at(&mut self, id: u32, exclude_library: bool, early: u64) {
        // The fast path: a recorded entry, no CPU column, not aggregated.
        let counted = id & COUNT_BIT != 0 || (exclude_library && id & LIBRARY_BIT != 0);
        if self.plain && !counted {
            let untraced = std::mem::take(&mut self.track.untraced);
            self.push_plain(((id & INDEX_MASK) << 2) | KIND_ENTER, untraced, early);
            self.track.stack.push(Open {
                id: id | RECORDED,
                start: 0,
            });
            return;
        }
        self.enter_general(id, exclude_library, early);
    }

    #[inline(never)]
    fn enter_general(&mut self, id: u32, exclude_library: bool, early: u64) {
        if id & COUNT_BIT != 0 {
            self.track.untraced = self.track.untraced.saturating_add(1);
            return;
        }
        let caller_is_app = self
            .track
            .stack
            .last()
            .is_some_and(|e| e.id & LIBRARY_BIT == 0);
        if exclude_library && id & LIBRARY_BIT != 0 && !caller_is_app {
            self.track.untraced = self.track.untraced.saturating_add(1);
            self.track.stack.push(Open { id, start: 0 });
            return;
        }
        let untraced = std::mem::take(&mut self.track.untraced);
        let start = if self.agg.is_some() {
            stamp(early)
        } else {
            self.emit(id, KIND_ENTER, untraced, early);
            0
        };
        self.track.stack.push(Open {
            id: id | RECORDED,
            start,
        });
    }

    /// A method exit (`kind` exit or throw). Open calls above the matching entry
    /// never saw their exit (a constructor that threw before `super()` returned,
    /// where no handler may cover the code): they are closed as thrown here, so
    /// the recorded events always nest.
    #[inline(always)]
    pub fn exit(&mut self, id: u32, kind: u32) {
        self.exit_at(id, kind, 0);
    }

    /// [`Local::exit`] with the stamp read as the native began (see
    /// [`Local::enter_at`]).
    #[inline(always)]
    fn exit_at(&mut self, id: u32, kind: u32, early: u64) {
        // The fast path: the exit of the innermost call, whose entry was recorded
        // (count-only ids are never on the stack).
        if self.plain
            && self
                .track
                .stack
                .last()
                .is_some_and(|o| o.id == id | RECORDED)
        {
            self.track.stack.pop();
            return self.push_plain(((id & INDEX_MASK) << 2) | kind, 0, early);
        }
        self.exit_general(id, kind, early);
    }

    #[inline(never)]
    fn exit_general(&mut self, id: u32, kind: u32, early: u64) {
        if id & COUNT_BIT != 0 {
            return;
        }
        match self.track.stack.pop() {
            Some(top) if top.id & !RECORDED == id => {
                if top.id & RECORDED != 0 {
                    self.record_exit(top, kind, early);
                }
            }
            Some(top) => {
                self.track.stack.push(top);
                self.exit_repairing(id, kind, early);
            }
            None => {
                PROBES.unmatched_exits.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    #[inline]
    fn record_exit(&mut self, open: Open, kind: u32, early: u64) {
        let Some(agg) = &self.agg else {
            return self.emit(open.id, kind, 0, early);
        };
        let caller = self
            .track
            .stack
            .iter()
            .rev()
            .find(|o| o.id & RECORDED != 0)
            .map_or(0, |o| o.id & INDEX_MASK);
        agg.add(
            caller,
            open.id & INDEX_MASK,
            stamp(early).wrapping_sub(open.start),
        );
    }

    #[cold]
    fn exit_repairing(&mut self, id: u32, kind: u32, early: u64) {
        let Some(pos) = self
            .track
            .stack
            .iter()
            .rposition(|e| e.id & !RECORDED == id)
        else {
            PROBES.unmatched_exits.fetch_add(1, Ordering::Relaxed);
            return;
        };
        while self.track.stack.len() > pos + 1 {
            let Some(open) = self.track.stack.pop() else {
                break;
            };
            PROBES.repaired.fetch_add(1, Ordering::Relaxed);
            if open.id & RECORDED != 0 {
                self.record_exit(open, KIND_THROW, early);
            }
        }
        self.exit_at(id, kind, early);
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.track.out.ring().ended.store(true, Ordering::Release);
        if let Some(home) = &self.home {
            home.out.ring().ended.store(true, Ordering::Release);
        }
        if let Some(agg) = &self.agg {
            agg.ended.store(true, Ordering::Release);
        }
        if self.counter_fd >= 0 {
            // SAFETY: this thread's own counter fd, closed once.
            unsafe { libc::close(self.counter_fd) };
        }
    }
}

thread_local! {
    /// This thread's probe state: a plain pointer, so the hot path is one
    /// thread-local load (no lazy-init or destructor-state checks). Null before the
    /// thread's first event; BUSY while it is being created (a probe reached from
    /// the creation itself, e.g. a traced Thread.getId, records nothing).
    static LOCAL: Cell<*mut Local> = const { Cell::new(std::ptr::null_mut()) };
    /// Frees LOCAL when the thread ends; touched only on the slow path, where
    /// registering its destructor is paid once per thread.
    static OWNER: LocalOwner = const { LocalOwner };
}

/// A sentinel no allocation can equal (the address is `Local`'s alignment).
const BUSY: *mut Local = std::ptr::dangling_mut::<Local>();

struct LocalOwner;

impl Drop for LocalOwner {
    fn drop(&mut self) {
        let p = LOCAL.with(|c| c.replace(BUSY));
        if !p.is_null() && p != BUSY {
            // SAFETY: LOCAL's non-BUSY pointers come from Box::into_raw in
            // `replace_local` and are freed only here or there, on this thread.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// Runs `f` on this thread's state for the current session, creating it (and
/// registering a ring) on the thread's first event of the session.
#[inline(always)]
fn with_local(env: *mut sys::JNIEnv, f: impl FnOnce(&mut Local)) {
    if let Some(local) = local(env) {
        f(local);
    }
}

/// This thread's state for the current session, created (and its ring
/// registered) on the thread's first event of the session; None while tracing
/// is off, while the state is being created, or as the thread ends. The caller
/// uses it at once and reaches no other probe meanwhile, so the borrow is unique.
/// (A closure called from here and from the slow path would not be inlined into
/// the probes.)
#[inline(always)]
fn local(env: *mut sys::JNIEnv) -> Option<&'static mut Local> {
    let p = LOCAL.with(|c| c.get());
    // One compare rules out both null and BUSY (the lowest non-null address).
    if p as usize > BUSY as usize {
        // SAFETY: a non-null, non-BUSY pointer is this thread's live Local (see
        // LocalOwner); the caller's use of it is unique (see above).
        let local = unsafe { &mut *p };
        // A Local's generation is never 0, so this also means tracing is on.
        if local.generation == PROBES.generation.load(Ordering::Acquire) {
            return Some(local);
        }
    }
    local_slow(env, p)
}

/// [`local`] for a thread without a Local of the running session.
#[cold]
#[inline(never)]
fn local_slow(env: *mut sys::JNIEnv, p: *mut Local) -> Option<&'static mut Local> {
    let generation = PROBES.generation.load(Ordering::Acquire);
    if generation == 0 || p == BUSY {
        return None;
    }
    replace_local(env, generation, p)
}

/// The slow path: a new Local for this session in place of `old` (null or the
/// previous session's); None when the thread is ending.
#[cold]
fn replace_local(
    env: *mut sys::JNIEnv,
    generation: u64,
    old: *mut Local,
) -> Option<&'static mut Local> {
    // Registers the destructor; fails once the thread's TLS is being torn down.
    OWNER.try_with(|_| ()).ok()?;
    LOCAL.with(|c| c.set(BUSY));
    if !old.is_null() {
        // SAFETY: see LocalOwner; `old` is this thread's, no longer referenced.
        drop(unsafe { Box::from_raw(old) });
    }
    let fresh = Box::into_raw(Box::new(new_local(env, generation)));
    LOCAL.with(|c| c.set(fresh));
    // SAFETY: just allocated; lives until this thread's LocalOwner drops it.
    Some(unsafe { &mut *fresh })
}

#[cold]
fn new_local(env: *mut sys::JNIEnv, generation: u64) -> Local {
    let jni = crate::jvm::Jni(env);
    let mut key = ThreadKey::current(jni);
    if crate::jvm::thread::current_is_virtual(jni) {
        // Made on a carrier while a virtual thread runs: the ring is the
        // carrier's, which the writer finds by its JNIEnv.
        key.java_id = 0;
    }
    let ring = Arc::new(ThreadRing::new(
        PROBES.ring_capacity.load(Ordering::Relaxed),
        key,
    ));
    rings().push(ring.clone());
    let agg = PROBES.aggregate.load(Ordering::Relaxed).then(|| {
        let agg = Arc::new(ThreadAgg::new(key));
        tables().push(agg.clone());
        agg
    });
    PROBES.threads.fetch_add(1, Ordering::Relaxed);
    let mut local = Local::new(
        ring,
        agg,
        generation,
        PROBES.with_cpu.load(Ordering::Relaxed),
    );
    local.wait = PROBES.wait_on_full.load(Ordering::Relaxed);
    let counter = *PROBES.counter.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(kind) = counter {
        local.open_counter(kind);
    }
    local
}

/// Waits until the writer has made room in `ring`: spinning briefly, then
/// yielding, then sleeping in growing steps (up to 1 ms). The thread is inside a
/// JNI native meanwhile, so safepoints and GC go on without it. Gives up (false)
/// when tracing stops (the writer's last drain is coming, nothing more is
/// taken) or after WAIT_LIMIT_NS, after which probes drop until the writer
/// drains again: a stopped or dead writer never hangs the application. The wait
/// is counted either way.
#[cold]
#[inline(never)]
fn wait_for_room(out: &mut Producer) -> bool {
    if PROBES.wait_gave_up.load(Ordering::Relaxed) {
        return false;
    }
    let start = clock::monotonic_ns();
    let mut round = 0u32;
    let ok = loop {
        if out.refresh_room() {
            break true;
        }
        if PROBES.generation.load(Ordering::Acquire) == 0 {
            break false;
        }
        crate::thread_ring::wake_consumer();
        if round < 64 {
            std::hint::spin_loop();
        } else if round < 96 {
            std::thread::yield_now();
        } else {
            if clock::monotonic_ns().saturating_sub(start) > WAIT_LIMIT_NS {
                PROBES.wait_gave_up.store(true, Ordering::Relaxed);
                break false;
            }
            let step = 5u64 << (round - 96).min(8);
            std::thread::sleep(std::time::Duration::from_micros(step.min(1000)));
        }
        round += 1;
    };
    PROBES.waits.fetch_add(1, Ordering::Relaxed);
    PROBES.waited_ns.fetch_add(
        clock::monotonic_ns().saturating_sub(start),
        Ordering::Relaxed,
    );
    ok
}

/// `jscope/Trace.enter(int)`.
pub extern "C" fn native_enter(env: *mut sys::JNIEnv, _class: sys::jclass, id: sys::jint) {
    guarded_in(&TRACE, "Trace.enter", (), || {
        let (id, exclude) = (id as u32, PROBES.exclude_library.load(Ordering::Relaxed));
        let early = early_stamp(id, exclude);
        if let Some(l) = local(env) {
            l.enter_at(id, exclude, early);
        }
    })
}

/// `jscope/Trace.exit(int)`.
pub extern "C" fn native_exit(env: *mut sys::JNIEnv, _class: sys::jclass, id: sys::jint) {
    guarded_in(&TRACE, "Trace.exit", (), || {
        let (id, exclude) = (id as u32, PROBES.exclude_library.load(Ordering::Relaxed));
        let early = early_stamp(id, exclude);
        if let Some(l) = local(env) {
            l.exit_at(id, KIND_EXIT, early);
        }
    })
}

/// `jscope/Trace.exitThrow(int)`.
pub extern "C" fn native_exit_throw(env: *mut sys::JNIEnv, _class: sys::jclass, id: sys::jint) {
    guarded_in(&TRACE, "Trace.exitThrow", (), || {
        let (id, exclude) = (id as u32, PROBES.exclude_library.load(Ordering::Relaxed));
        let early = early_stamp(id, exclude);
        if let Some(l) = local(env) {
            l.exit_at(id, KIND_THROW, early);
        }
    })
}

/// `jscope/Trace.started(Thread)`, called by `Thread.start` (every overload
/// with code) before it starts `thread`.
pub extern "C" fn native_started(env: *mut sys::JNIEnv, _class: sys::jclass, thread: sys::jobject) {
    guarded_in(&TRACE, "Trace.started", (), || {
        let started = crate::jvm::thread::java_id(crate::jvm::Jni(env), thread);
        if started != 0 {
            with_local(env, |l| l.started(started));
        }
    })
}

/// A virtual-thread transition on this carrier (JVMTI callbacks, see
/// [`super::vthreads`]); nothing while tracing is off.
pub fn virtual_thread(env: *mut sys::JNIEnv, f: impl FnOnce(&mut Local)) {
    with_local(env, f)
}

/// The agent's own cost of one probe (timestamp, shadow stack, ring store) in ns,
/// measured on a private ring: JX's error correction subtracts it per event. The
/// JNI transition into the probe is not included (see docs/AGENT.md).
pub fn measure_probe_cost(with_cpu: bool, counter: Option<PerfKind>) -> u64 {
    PROBES.clock.choose_source();
    const CALLS: u32 = 20_000;
    let ring = Arc::new(ThreadRing::new(2 * CALLS as usize, ThreadKey::default()));
    let mut best = u64::MAX;
    for _ in 0..3 {
        let mut local = Local::new(ring.clone(), None, 1, with_cpu);
        if let Some(kind) = counter {
            local.open_counter(kind);
        }
        let start = clock::monotonic_ns();
        for i in 0..CALLS {
            local.enter(i & 1023, false);
            local.exit(i & 1023, KIND_EXIT);
        }
        let spent = clock::monotonic_ns() - start;
        best = best.min(spent / (2 * u64::from(CALLS)));
        ring.drain(|_| {});
    }
    best
}

/// Benchmarks only (`examples/probe_bench.rs`): starts a session in this process
/// and runs `calls` traced calls (entry and exit) through the JNI natives' bodies,
/// thread-local lookup and guard included, on this thread, `rounds` times, draining
/// the ring between rounds; returns the best round's ns per call. Never call it in
/// a JVM: it replaces the process's trace session.
#[doc(hidden)]
pub fn bench_native_calls(calls: u32, rounds: u32) -> f64 {
    begin_session(SessionSettings {
        with_cpu: false,
        exclude_library: false,
        aggregate: false,
        ring_capacity: 2 * calls as usize,
        wait_on_full: true,
        counter: None,
    });
    let generation = PROBES.generation.load(Ordering::Acquire);
    let ring = Arc::new(ThreadRing::new(2 * calls as usize, ThreadKey::default()));
    OWNER.with(|_| ());
    let old = LOCAL.with(|c| c.replace(BUSY));
    if !old.is_null() && old != BUSY {
        // SAFETY: see LocalOwner.
        drop(unsafe { Box::from_raw(old) });
    }
    let mut local = Local::new(ring.clone(), None, generation, false);
    local.wait = true;
    LOCAL.with(|c| c.set(Box::into_raw(Box::new(local))));
    let env = std::ptr::null_mut();
    let class = std::ptr::null_mut();
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let start = clock::monotonic_ns();
        for i in 0..calls {
            let id = std::hint::black_box((i & 1023) as sys::jint);
            native_enter(env, class, id);
            native_exit(env, class, id);
        }
        let spent = clock::monotonic_ns() - start;
        best = best.min(spent as f64 / f64::from(calls));
        ring.drain(|_| {});
    }
    end_session();
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(capacity: usize) -> (Local, Arc<ThreadRing>) {
        let ring = Arc::new(ThreadRing::new(capacity, ThreadKey::new(1, 2, 0)));
        (Local::new(ring.clone(), None, 1, false), ring)
    }

    fn events(ring: &ThreadRing) -> Vec<(u32, u32, u32)> {
        let mut v = Vec::new();
        ring.drain(|e| v.push((e.head >> 2, e.head & 3, e.untraced)));
        v
    }

    #[test]
    fn nested_calls_record_in_order_with_rising_times() {
        let (mut l, ring) = local(64);
        l.enter(1, false);
        l.enter(2, false);
        l.exit(2, KIND_EXIT);
        l.exit(1, KIND_THROW);
        let mut ticks = Vec::new();
        ring.drain(|e| ticks.push(e.ticks));
        assert!(ticks.windows(2).all(|w| w[0] <= w[1]));
        l.enter(3, false);
        l.exit(3, KIND_EXIT);
        assert_eq!(events(&ring), [(3, 0, 0), (3, 1, 0)]);
    }

    #[test]
    fn library_calls_from_library_code_are_counted_not_recorded() {
        let (mut l, ring) = local(64);
        let lib = |i| i | LIBRARY_BIT;
        l.enter(lib(9), true); // library called from uninstrumented code: counted
        l.exit(lib(9), KIND_EXIT);
        l.enter(1, true); // app
        l.enter(lib(2), true); // library called by app: recorded
        l.enter(lib(3), true); // library called by library: counted
        l.enter(lib(4), true);
        l.exit(lib(4), KIND_EXIT);
        l.exit(lib(3), KIND_EXIT);
        l.enter(5, true); // app callback from library: recorded, carries the count
        l.exit(5, KIND_EXIT);
        l.exit(lib(2), KIND_EXIT);
        l.exit(1, KIND_EXIT);
        assert_eq!(
            events(&ring),
            [
                (1, 0, 1),
                (2, 0, 0),
                (5, 0, 2),
                (5, 1, 0),
                (2, 1, 0),
                (1, 1, 0)
            ]
        );
    }

    #[test]
    fn a_missing_exit_is_closed_as_thrown_and_stray_exits_are_dropped() {
        let (mut l, ring) = local(64);
        l.enter(1, false);
        l.enter(2, false); // a constructor whose exit never comes
        l.exit(1, KIND_EXIT);
        l.exit(7, KIND_EXIT); // entered before tracing began
        assert_eq!(events(&ring), [(1, 0, 0), (2, 0, 0), (2, 2, 0), (1, 1, 0)]);
    }

    #[test]
    fn count_only_probes_raise_the_untraced_counter_and_nothing_else() {
        let (mut l, ring) = local(64);
        for _ in 0..3 {
            l.enter(COUNT_BIT, false);
            l.exit(COUNT_BIT, KIND_EXIT);
        }
        l.enter(COUNT_BIT, false);
        l.exit(COUNT_BIT, KIND_THROW);
        l.enter(1, false);
        l.exit(1, KIND_EXIT);
        assert_eq!(events(&ring), [(1, 0, 4), (1, 1, 0)]);
    }

    /// The ring of virtual thread `java_id` (registered at its first mount).
    fn virtual_ring(java_id: i64) -> Arc<ThreadRing> {
        rings()
            .iter()
            .find(|r| r.thread == ThreadKey::new(0, 0, java_id))
            .cloned()
            .expect("a ring for the virtual thread")
    }

    #[test]
    fn a_virtual_thread_keeps_its_ring_and_stack_across_carriers() {
        // Ids no other test uses; the rings are process-wide.
        let (a, b) = (-1001, -1002);
        let (mut carrier1, home1) = local(64);
        let (mut carrier2, _home2) = local(64);
        carrier1.enter(1, false); // the carrier's own call
        carrier1.mount(a);
        carrier1.enter(2, false); // a enters 2, then sleeps
        carrier1.unmount(a);
        carrier1.mount(b);
        carrier1.enter(2, false); // b enters 2 on the same carrier
        carrier1.unmount(b);
        carrier2.mount(a);
        carrier2.exit(2, KIND_EXIT); // a leaves 2 on another carrier
        carrier2.end(a);
        carrier1.mount(b);
        carrier1.exit(2, KIND_EXIT);
        carrier1.unmount(b);
        carrier1.exit(1, KIND_EXIT); // the carrier's stack was kept aside
        assert_eq!(events(&home1), [(1, 0, 0), (1, 1, 0)]);
        let ring_a = virtual_ring(a);
        assert_eq!(events(&ring_a), [(2, 0, 0), (2, 1, 0)]);
        assert!(ring_a.ended.load(Ordering::Acquire), "a ended");
        let ring_b = virtual_ring(b);
        assert_eq!(events(&ring_b), [(2, 0, 0), (2, 1, 0)]);
        assert!(!ring_b.ended.load(Ordering::Acquire));
    }

    #[test]
    fn a_full_ring_drops_and_counts() {
        let (mut l, ring) = local(4);
        for _ in 0..3 {
            l.enter(1, false);
            l.exit(1, KIND_EXIT);
        }
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 2);
        assert_eq!(events(&ring).len(), 4);
        l.enter(1, false);
        assert_eq!(events(&ring).len(), 1, "room again once drained");
    }

    #[test]
    fn a_full_ring_waits_for_the_writer_unless_tracing_stopped() {
        // The only test that touches the session's generation.
        PROBES.generation.store(u64::MAX, Ordering::Release);
        let (mut l, ring) = local(8);
        l.wait = true;
        let writer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                while n < 2000 {
                    n += ring.drain(|_| {});
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
                n
            })
        };
        for _ in 0..1000 {
            l.enter(1, false);
            l.exit(1, KIND_EXIT);
        }
        assert_eq!(
            writer.join().unwrap(),
            2000,
            "every event reached the writer"
        );
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 0);
        let (waits, waited_ns) = waits();
        assert!(waits > 0 && waited_ns > 0, "{waits} waits, {waited_ns} ns");
        // Tracing stopped: nothing will drain any more, so a full ring drops.
        PROBES.generation.store(0, Ordering::Release);
        for _ in 0..5 {
            l.enter(1, false);
            l.exit(1, KIND_EXIT);
        }
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 2);
    }

    /// On a clock of its own: the probes' one is started and mapped by the other
    /// tests of this process, in parallel. Each stamp is bracketed by two
    /// CLOCK_MONOTONIC reads, so a preemption between them widens the window
    /// instead of failing the test.
    #[test]
    fn probe_ticks_map_to_monotonic_nanoseconds() {
        let clock = clock::ProbeClock::new();
        clock.start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mapper = clock.mapper();
        for _ in 0..3 {
            let before = clock::monotonic_ns();
            let ticks = clock.now();
            let after = clock::monotonic_ns();
            let mapped = mapper.ns(ticks);
            assert!(
                mapped + 100_000 >= before && mapped <= after + 100_000,
                "{mapped} outside {before}..{after}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn probe_cost_is_measured() {
        let ns = measure_probe_cost(false, None);
        assert!(ns > 0 && ns < 10_000, "{ns}");
    }
}
