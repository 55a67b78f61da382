//! JVM events and user events (issue 5, after JPMT section 4.1 and JX sections
//! 4-5): thread starts and ends, contended monitors, waits, garbage collections,
//! sampled allocations with object lifetimes, class loads, JIT compilations, and
//! the application's own events through the bootstrap class `jscope.Events`.
//!
//! - [`options`]: `events=`, `allocrate=`, `objectages`, `eventsconfig=`.
//! - [`callbacks`]: the JVMTI callbacks; they only stamp and queue.
//! - [`queue`]: the bounded queues between the callbacks and the writer.
//! - [`user`]: `jscope.Events`, its natives and per-thread rings.
//! - [`park`]: LockSupport parks, from breakpoints in their own JVMTI environment.
//! - [`drain`]: the writer's side, queued events to JvmEvent records.

pub mod callbacks;
pub mod drain;
pub mod gcinfo;
pub mod options;
pub mod park;
pub mod queue;
pub mod user;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::engine::{Drained, Engine, StartContext, StartError, StopContext};
use crate::java_threads::ThreadKey;
use crate::jvm::{Jni, Jvmti, JvmtiError};
use crate::sink::Sink;
use crate::sys;
pub use options::{EventOptions, Kinds};

/// The event session's state, shared by the engine (start, stop, the writer's
/// drain) with the JVMTI callbacks, which find it through this one static: its
/// settings are set for each recording and its queues emptied, while the drop
/// counts, the allocated total and the object tags live as long as the process
/// (tags stay on objects after a recording stops).
pub(crate) struct EventState {
    /// The kinds switched on in the running recording; 0 when none is.
    active: AtomicU32,
    /// Frames kept per event stack.
    depth: AtomicU32,
    /// Whether sampled objects are tagged so their frees are seen.
    object_ages: AtomicBool,
    /// Whether contended entries ask for the monitor's owner.
    monitor_owners: AtomicBool,
    /// Set once events were started in this process (their counters are written).
    started: AtomicBool,
    /// The agent's running total of the allocation samples' weights: estimated
    /// bytes allocated (JX's clock for ages in bytes allocated).
    pub allocated_total: AtomicU64,
    /// The heap sampling interval in bytes (`allocrate`), for the samples' weights.
    pub alloc_interval: AtomicU64,
    /// The next object tag.
    pub next_object: AtomicU64,
    /// When the running collection started, 0 when none runs.
    pub gc_start: AtomicU64,
    /// The bounded queues between the callbacks and the writer.
    pub queues: queue::Queues,
    /// The park hooks' state.
    pub park: park::ParkState,
    /// The GC notification listener's state.
    pub gc: gcinfo::GcState,
    /// The user events' state.
    pub user: user::UserState,
}

pub(crate) static STATE: EventState = EventState {
    active: AtomicU32::new(0),
    depth: AtomicU32::new(64),
    object_ages: AtomicBool::new(false),
    monitor_owners: AtomicBool::new(false),
    started: AtomicBool::new(false),
    allocated_total: AtomicU64::new(0),
    alloc_interval: AtomicU64::new(0),
    next_object: AtomicU64::new(1),
    gc_start: AtomicU64::new(0),
    queues: queue::Queues::new(),
    park: park::ParkState::new(),
    gc: gcinfo::GcState::new(),
    user: user::UserState::new(),
};

/// What a thread's callbacks keep from the start of a wait to its end.
pub(crate) struct Waits {
    /// When this thread began to block on a monitor (0: it is not blocked).
    pub blocked_since: Cell<u64>,
    /// Thread.getId() of the monitor's owner then (0: not asked or unknown).
    pub blocked_by: Cell<i64>,
    /// When this thread began to wait, and its timeout in ms.
    pub waiting_since: Cell<(u64, u64)>,
    /// When this thread entered Unsafe.park from a park method (0: it did not).
    pub parked_since: Cell<u64>,
}

thread_local! {
    pub(crate) static WAITS: Waits = const {
        Waits {
            blocked_since: Cell::new(0),
            blocked_by: Cell::new(0),
            waiting_since: Cell::new((0, 0)),
            parked_since: Cell::new(0),
        }
    };
}

pub fn monitor_owners() -> bool {
    STATE.monitor_owners.load(Ordering::Relaxed)
}
/// Frames an event stack keeps at most: the callbacks walk on the application's
/// thread, so deeper walks would cost the application.
pub const MAX_EVENT_DEPTH: u32 = 128;

pub fn started() -> bool {
    STATE.started.load(Ordering::Relaxed)
}

/// Whether events of `kind` are recorded now.
#[inline]
pub fn on(kind: Kinds) -> bool {
    STATE.active.load(Ordering::Relaxed) & kind.bits() != 0
}

pub fn object_ages() -> bool {
    STATE.object_ages.load(Ordering::Relaxed)
}

pub fn depth() -> u32 {
    STATE.depth.load(Ordering::Relaxed)
}

/// Why events could not start.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("JVMTI refused the event capabilities: {0}")]
    Capabilities(JvmtiError),
    #[error("JVMTI refused to enable {what}: {source}")]
    Enable {
        what: &'static str,
        source: JvmtiError,
    },
    #[error(transparent)]
    UserClass(#[from] user::UserClassError),
    #[error(transparent)]
    Park(#[from] park::ParkError),
}

/// The JVMTI events behind each kind.
fn jvmti_events(kinds: Kinds, object_ages: bool) -> Vec<(&'static str, sys::jvmtiEvent)> {
    let mut out = Vec::new();
    let table: [(Kinds, &'static str, &[sys::jvmtiEvent]); 5] = [
        (
            Kinds::MONITORS,
            "monitor events",
            &[
                sys::JVMTI_EVENT_MONITOR_CONTENDED_ENTER,
                sys::JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
            ],
        ),
        (
            Kinds::WAITS,
            "wait events",
            &[
                sys::JVMTI_EVENT_MONITOR_WAIT,
                sys::JVMTI_EVENT_MONITOR_WAITED,
            ],
        ),
        (
            Kinds::GC,
            "garbage collection events",
            &[
                sys::JVMTI_EVENT_GARBAGE_COLLECTION_START,
                sys::JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
            ],
        ),
        (
            Kinds::ALLOC,
            "allocation sampling",
            &[sys::JVMTI_EVENT_SAMPLED_OBJECT_ALLOC],
        ),
        (
            Kinds::JIT,
            "compiled method events",
            &[
                sys::JVMTI_EVENT_COMPILED_METHOD_LOAD,
                sys::JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
            ],
        ),
    ];
    for (kind, what, events) in table {
        // Thread and class events are enabled by every recording already.
        if kinds.contains(kind) {
            out.extend(events.iter().map(|e| (what, *e)));
        }
    }
    if object_ages && kinds.contains(Kinds::ALLOC) {
        out.push(("object free events", sys::JVMTI_EVENT_OBJECT_FREE));
    }
    out
}

/// The event session as an engine: JVMTI events and user events, drained from
/// their queues and rings (park events too, which [`ParkEngine`] produces).
pub(crate) struct EventEngine {
    options: EventOptions,
    /// Frames kept per event stack (the recording's `depth`).
    depth: u32,
    drain: Mutex<drain::EventDrain>,
}

impl EventEngine {
    pub fn new(options: EventOptions, depth: u32) -> EventEngine {
        EventEngine {
            options,
            depth,
            drain: Mutex::default(),
        }
    }
}

impl Engine for EventEngine {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        if self.options.kinds.is_empty() {
            return Ok(());
        }
        start(ctx.jvmti, ctx.jni, &self.options, self.depth)
            .map_err(|e| StartError::EventSession(e.into()))
    }

    fn stop(&self, ctx: &StopContext) {
        stop(ctx.jvmti);
    }

    /// JVM and user events, each on its thread's timeline (agent threads' own
    /// are left out, as their samples are).
    fn drain(&self, sink: &mut Sink) -> Drained {
        let mut d = self.drain.lock().unwrap_or_else(|e| e.into_inner());
        let taken = d.take();
        d.write_defs(&mut sink.chunk, &mut sink.symbols);
        // Per drain, each thread is looked up once (user events come in runs).
        let mut known: HashMap<ThreadKey, Option<u32>> = HashMap::new();
        for e in taken {
            let thread = match e.thread() {
                None => 0,
                Some(key) => match *known.entry(key).or_insert_with(|| sink.event_thread(key)) {
                    Some(t) => t,
                    None => continue,
                },
            };
            let owner = e
                .owner_java_id()
                .and_then(|id| sink.table.order_of_java_id(id))
                .inspect(|&o| sink.emit_thread(o))
                .unwrap_or(0);
            d.write(e, (thread, owner), sink);
        }
        Drained::All
    }

    fn counters(&self, out: &mut Vec<(&'static str, u64)>) {
        let d = self.drain.lock().unwrap_or_else(|e| e.into_inner());
        out.extend(d.counter_values());
    }
}

/// The park hooks as an engine: breakpoints around LockSupport's parks, set in
/// their own JVMTI environment (granted only at load, see [`park::install`]).
pub(crate) struct ParkEngine {
    /// Parks asked for.
    wanted: bool,
    threshold_ns: u64,
    armed: AtomicBool,
}

impl ParkEngine {
    pub fn new(options: &EventOptions) -> ParkEngine {
        ParkEngine {
            wanted: options.kinds.contains(Kinds::PARK),
            threshold_ns: options.park_threshold_ns,
            armed: AtomicBool::new(false),
        }
    }
}

impl Engine for ParkEngine {
    fn start(&self, ctx: &StartContext<'_>) -> Result<(), StartError> {
        // Without the park environment `EventEngine` reports or leaves parks out.
        if !self.wanted || !park::installed() {
            return Ok(());
        }
        park::arm(ctx.jni, self.threshold_ns)
            .map_err(|e| StartError::EventSession(EventsError::from(e).into()))?;
        self.armed.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn stop(&self, _ctx: &StopContext) {
        if self.armed.swap(false, Ordering::Relaxed) {
            park::disarm();
        }
    }
}

/// Starts recording the events `options` ask for. Runs on a Java thread
/// (VMInit's or the attach listener) once the recording's writer exists.
pub fn start(
    jvmti: Jvmti,
    jni: Jni,
    options: &EventOptions,
    depth: u32,
) -> Result<(), EventsError> {
    let mut kinds = options.kinds;
    if kinds.contains(Kinds::PARK) && !park::installed() {
        if kinds == Kinds::PARK {
            return Err(park::unavailable().into());
        }
        // Park with other kinds (`events=all+park`) by attach: the others still work.
        eprintln!("jscope: {}; parks are not recorded", park::unavailable());
        kinds.remove(Kinds::PARK);
    }
    if kinds.is_empty() {
        return Ok(());
    }
    jvmti
        .add_capabilities(&callbacks::capabilities(kinds, options.object_ages))
        .map_err(EventsError::Capabilities)?;
    let state = &STATE;
    state
        .depth
        .store(depth.clamp(1, MAX_EVENT_DEPTH), Ordering::Relaxed);
    state
        .object_ages
        .store(options.object_ages, Ordering::Relaxed);
    state
        .monitor_owners
        .store(options.monitor_owners, Ordering::Relaxed);
    state.queues.reset();
    if kinds.contains(Kinds::ALLOC) {
        state
            .alloc_interval
            .store(options.alloc_rate.into(), Ordering::Relaxed);
        jvmti
            .set_heap_sampling_interval(options.alloc_rate)
            .map_err(|source| EventsError::Enable {
                what: "allocation sampling",
                source,
            })?;
    }
    if kinds.contains(Kinds::USER) {
        user::install(jvmti, jni)?;
    }
    if kinds.contains(Kinds::GC) {
        // Best effort: without the listener GCs are recorded as pauses only.
        if let Err(e) = gcinfo::install(jni) {
            eprintln!("jscope: {e}; GC causes and heap sizes are not recorded");
        }
    }
    state.started.store(true, Ordering::Relaxed);
    state.active.store(kinds.bits(), Ordering::Release);
    for (what, event) in jvmti_events(kinds, options.object_ages) {
        if let Err(source) = jvmti.set_event(true, event) {
            stop(jvmti);
            return Err(EventsError::Enable { what, source });
        }
    }
    if kinds.contains(Kinds::CLASSES) {
        // Best effort: without the extension event, unloads are not recorded.
        let _ = jvmti.set_class_unload_callback(Some(callbacks::class_unloaded));
    }
    user::set_enabled(kinds.contains(Kinds::USER));
    Ok(())
}

/// Stops recording events; what is queued stays for the writer's last drain.
pub fn stop(jvmti: Jvmti) {
    let kinds = Kinds::from_bits_truncate(STATE.active.swap(0, Ordering::AcqRel));
    user::set_enabled(false);
    if kinds.contains(Kinds::CLASSES) {
        jvmti.set_class_unload_callback(None);
    }
    for (_, event) in jvmti_events(kinds, true) {
        let _ = jvmti.set_event(false, event);
    }
}

/// Header keys describing the events asked for.
pub fn header_extra(options: &EventOptions) -> Vec<(String, String)> {
    let mut kinds = options.kinds;
    if !park::installed() {
        // Attached: `start` leaves parks out (see there).
        kinds.remove(Kinds::PARK);
    }
    if kinds.is_empty() {
        return Vec::new();
    }
    let mut pairs = vec![("events".to_string(), kinds.label())];
    if options.kinds.contains(Kinds::ALLOC) {
        pairs.push(("events.allocrate".into(), options.alloc_rate.to_string()));
        pairs.push(("events.objectages".into(), options.object_ages.to_string()));
    }
    if kinds.contains(Kinds::PARK) {
        pairs.push((
            "events.parkthreshold_ns".into(),
            options.park_threshold_ns.to_string(),
        ));
    }
    pairs
}
