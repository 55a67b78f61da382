//! The stack algorithm (JaViz): one stack per thread; an entry pushes a frame, an
//! exit pops it and hands the finished call to a [`CallSink`]. The tree builder and
//! the streaming statistics are both sinks, so they agree on every number.

use std::collections::HashMap;

use jscope_format::{MethodId, Recording, TraceBatch, TraceEvent, TraceKind};
use serde::Serialize;

use crate::ThreadMatcher;

/// The call was still open at the thread's last event and was closed there.
pub const UNFINISHED: u8 = 1;
/// The method left by throwing.
pub const THREW: u8 = 2;
/// An exit of an enclosing method arrived while this call was open (lost exit).
pub const CLOSED_BY_MISMATCH: u8 = 4;

/// What did not fit the stack discipline; counted, never fatal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Anomalies {
    /// Exits whose method was below the top of the stack: the frames above were
    /// closed at that exit's time.
    pub mismatched_exits: u64,
    /// Frames closed that way.
    pub closed_by_mismatch: u64,
    /// Exits with no matching open call (events lost before tracing started, or an
    /// exit of a method that is not on the stack): ignored.
    pub unmatched_exits: u64,
    /// Calls still open at their thread's last event, closed there.
    pub unfinished: u64,
}

/// A call that has returned (or was closed), as a sink sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub thread: u32,
    /// Dense index of the thread, in order of its first batch in the recording.
    pub thread_index: u32,
    pub method: u32,
    /// The nearest visible caller's method id; 0 at a thread's root.
    pub caller: u32,
    /// Visible depth: 0 for a thread's root calls.
    pub depth: u32,
    /// What the sink returned when the call was entered.
    pub slot: u32,
    pub enter_ns: u64,
    pub exit_ns: u64,
    pub self_ns: u64,
    /// Duration minus the probe cost of every traced and untraced call inside it.
    pub corrected_ns: u64,
    pub corrected_self_ns: u64,
    /// Thread CPU time spent in the call, when the agent recorded CPU time (or
    /// the count of the recording's `trace.counter` event in its place).
    pub cpu_ns: Option<u64>,
    /// `cpu_ns` minus that of the visible calls directly inside.
    pub self_cpu_ns: Option<u64>,
    pub flags: u8,
    /// Calls of untraced methods counted inside the call: the counts the entries
    /// of the traced calls inside it carry (each counts the untraced calls since
    /// the thread's previous traced event), nested calls' included. Exits carry
    /// none, so the untraced calls after the last traced event inside the call
    /// count on the thread's next entry, after the call, not here.
    pub untraced: u64,
    /// Index of the call's enter among its thread's trace events (0 for the first).
    pub enter_event: u64,
    /// Index of the event that closed the call; [`OPEN_TO_THE_END`] for a call
    /// still open at the thread's last event.
    pub exit_event: u64,
}

/// [`Call::exit_event`] of a call closed by the end of its thread's events.
pub const OPEN_TO_THE_END: u64 = u64::MAX;

impl Call {
    pub fn duration_ns(&self) -> u64 {
        self.exit_ns.saturating_sub(self.enter_ns)
    }
}

/// Receives calls from the stack algorithm.
pub trait CallSink {
    /// A visible call begins; the result is kept and handed back in [`Call::slot`].
    fn enter(&mut self, thread_index: u32, method: u32, enter_ns: u64, depth: u32) -> u32;
    /// A visible call has finished.
    fn exit(&mut self, call: &Call);
}

/// Keeps every finished call, in the order they finish.
impl CallSink for Vec<Call> {
    fn enter(&mut self, _thread_index: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        0
    }

    fn exit(&mut self, call: &Call) {
        self.push(*call);
    }
}

/// Stands for "no CPU time": the event's batch did not carry it.
const NO_CPU: u64 = u64::MAX;

/// When an event happened: ns since the start, thread CPU ns or `NO_CPU`, and
/// the event's index among its thread's events.
#[derive(Debug, Clone, Copy, Default)]
struct Stamp {
    ns: u64,
    cpu: u64,
    event: u64,
}

/// Nanoseconds since the recording's start, from ticks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: u64,
    ticks_per_second: u64,
}

impl Clock {
    pub(crate) fn of(rec: &Recording) -> Clock {
        Clock {
            start: rec.header.start_ticks,
            ticks_per_second: rec.header.ticks_per_second,
        }
    }

    #[inline]
    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        let rel = ticks.saturating_sub(self.start);
        match self.ticks_per_second {
            0 | 1_000_000_000 => rel,
            tps => (rel as u128 * 1_000_000_000 / tps as u128) as u64,
        }
    }
}

/// Per method id: whether the options hide it. Classified lazily because streaming readers learn methods chunk by chunk.
#[derive(Default)]
pub(crate) struct MethodClasses {
    hide: Vec<ThreadMatcher>,
    /// 0 = not yet classified, else CLASSIFIED | HIDDEN.
    bits: Vec<u8>,
}

const CLASSIFIED: u8 = 1;
const HIDDEN: u8 = 2;
pub(crate) const THREAD_START_LABEL: &str = "java.lang.Thread.start";

impl MethodClasses {
    pub(crate) fn new(hide: Vec<ThreadMatcher>) -> Self {
        MethodClasses { hide, bits: vec![] }
    }

    #[inline]
    fn bits(&mut self, rec: &Recording, method: u32) -> u8 {
        let i = method as usize;
        if let Some(&b) = self.bits.get(i) {
            if b != 0 {
                return b;
            }
        }
        self.classify(rec, method)
    }

    fn classify(&mut self, rec: &Recording, method: u32) -> u8 {
        let label = rec.method_label(MethodId(method));
        let mut b = CLASSIFIED;
        if self.hide.iter().any(|m| m.matches(&label)) {
            b |= HIDDEN;
        }
        // An unknown method may be defined by a later chunk: do not cache it yet.
        if rec.method(MethodId(method)).is_some() {
            let i = method as usize;
            if self.bits.len() <= i {
                self.bits.resize(i + 1, 0);
            }
            self.bits[i] = b;
        }
        b
    }
}

/// One open call on a thread's stack.
#[derive(Debug, Clone, Copy)]
struct Frame {
    method: u32,
    hidden: bool,
    /// Visible depth and nearest visible caller of this call.
    depth: u32,
    caller: u32,
    slot: u32,
    enter_ns: u64,
    enter_cpu: u64,
    enter_event: u64,
    untraced_at_enter: u64,
    /// Durations of the visible calls directly inside (through hidden frames).
    child_ns: u64,
    child_corrected_ns: u64,
    /// CPU time (or counter) of the visible calls directly inside.
    child_cpu: u64,
    /// Traced calls inside, hidden ones included (each cost two probes).
    traced_inside: u64,
    /// Untraced calls counted on the entries inside.
    untraced_inside: u64,
}

/// The state of one thread.
#[derive(Debug, Default)]
pub(crate) struct ThreadStack {
    pub(crate) index: u32,
    frames: Vec<Frame>,
    pub(crate) first_ns: Option<u64>,
    pub(crate) last_ns: u64,
    last_cpu: u64,
    pub(crate) events: u64,
}

/// Runs the stack algorithm over trace batches and feeds a sink.
pub(crate) struct StackEngine<S> {
    pub(crate) sink: S,
    pub(crate) threads: HashMap<u32, ThreadStack>,
    pub(crate) anomalies: Anomalies,
    pub(crate) classes: MethodClasses,
    clock: Clock,
    probe_cost_ns: f64,
    /// The next thread's [`Call::thread_index`].
    next_index: u32,
    /// Drop a thread's state once a batch leaves its stack empty (a stream's
    /// replayer, which lives as long as its JVM: threads come and go). Its later
    /// calls then get a new `thread_index` and event indices counted afresh.
    pub(crate) forget_idle_threads: bool,
}

impl<S: CallSink> StackEngine<S> {
    pub(crate) fn new(sink: S, clock: Clock, classes: MethodClasses, probe_cost_ns: f64) -> Self {
        StackEngine {
            sink,
            threads: HashMap::new(),
            anomalies: Anomalies::default(),
            classes,
            clock,
            probe_cost_ns,
            next_index: 0,
            forget_idle_threads: false,
        }
    }

    pub(crate) fn batch(&mut self, rec: &Recording, b: &TraceBatch) {
        let next_index = &mut self.next_index;
        let t = self.threads.entry(b.thread.0).or_insert_with(|| {
            *next_index += 1;
            ThreadStack {
                index: *next_index - 1,
                ..Default::default()
            }
        });
        let mut run = Run {
            sink: &mut self.sink,
            anomalies: &mut self.anomalies,
            classes: &mut self.classes,
            clock: self.clock,
            cost: self.probe_cost_ns,
            thread: b.thread.0,
        };
        for e in &b.events {
            let cpu = if b.has_cpu { e.cpu_ns } else { NO_CPU };
            run.event(rec, t, e, cpu);
        }
        if self.forget_idle_threads && t.frames.is_empty() {
            self.threads.remove(&b.thread.0);
        }
    }

    /// Closes every open call at its thread's last event.
    pub(crate) fn finish(&mut self) {
        let mut run = Run {
            sink: &mut self.sink,
            anomalies: &mut self.anomalies,
            classes: &mut self.classes,
            clock: self.clock,
            cost: self.probe_cost_ns,
            thread: 0,
        };
        // In thread order, so results never depend on the hash map's order.
        let mut ids: Vec<u32> = self.threads.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let t = self.threads.get_mut(&id).expect("id taken from the map");
            run.thread = id;
            let n = t.frames.len() as u64;
            run.anomalies.unfinished += n;
            let at = Stamp {
                ns: t.last_ns,
                cpu: t.last_cpu,
                event: OPEN_TO_THE_END,
            };
            while !t.frames.is_empty() {
                run.pop(t, at, UNFINISHED);
            }
        }
    }
}

/// The borrowed parts of the engine one batch needs.
struct Run<'a, S> {
    sink: &'a mut S,
    anomalies: &'a mut Anomalies,
    classes: &'a mut MethodClasses,
    clock: Clock,
    cost: f64,
    thread: u32,
}

impl<S: CallSink> Run<'_, S> {
    #[inline]
    fn event(&mut self, rec: &Recording, t: &mut ThreadStack, e: &TraceEvent, cpu: u64) {
        let at = Stamp {
            ns: self.clock.ns(e.ticks),
            cpu,
            event: t.events,
        };
        t.first_ns.get_or_insert(at.ns);
        (t.last_ns, t.last_cpu) = (at.ns, cpu);
        t.events += 1;
        match e.kind {
            TraceKind::Enter => self.enter(rec, t, e, at),
            TraceKind::Exit => self.exit(t, e.method.0, at, 0),
            TraceKind::Throw => self.exit(t, e.method.0, at, THREW),
        }
    }

    #[inline]
    fn enter(&mut self, rec: &Recording, t: &mut ThreadStack, e: &TraceEvent, at: Stamp) {
        let hidden = self.classes.bits(rec, e.method.0) & HIDDEN != 0;
        let (depth, caller) = t.frames.last().map_or((0, 0), Frame::inner_position);
        let slot = if hidden {
            0
        } else {
            self.sink.enter(t.index, e.method.0, at.ns, depth)
        };
        t.frames.push(Frame {
            method: e.method.0,
            hidden,
            depth,
            caller,
            slot,
            enter_ns: at.ns,
            enter_cpu: at.cpu,
            enter_event: at.event,
            untraced_at_enter: e.untraced.into(),
            child_ns: 0,
            child_corrected_ns: 0,
            child_cpu: 0,
            traced_inside: 0,
            untraced_inside: 0,
        });
    }

    #[inline]
    fn exit(&mut self, t: &mut ThreadStack, method: u32, at: Stamp, flags: u8) {
        match t.frames.last() {
            Some(top) if top.method == method => self.pop(t, at, flags),
            _ => self.exit_below_top(t, method, at, flags),
        }
    }

    /// The exit's method is not on top: close the frames above it (their exits were
    /// lost), or ignore the exit when its method is not open at all.
    fn exit_below_top(&mut self, t: &mut ThreadStack, method: u32, at: Stamp, flags: u8) {
        let Some(pos) = t.frames.iter().rposition(|f| f.method == method) else {
            self.anomalies.unmatched_exits += 1;
            return;
        };
        self.anomalies.mismatched_exits += 1;
        while t.frames.len() > pos + 1 {
            self.anomalies.closed_by_mismatch += 1;
            self.pop(t, at, CLOSED_BY_MISMATCH);
        }
        self.pop(t, at, flags);
    }

    /// Pops the top frame, reports it when visible and folds it into its parent.
    fn pop(&mut self, t: &mut ThreadStack, at: Stamp, flags: u8) {
        let f = t
            .frames
            .pop()
            .expect("pop is only called on a non-empty stack");
        let duration = at.ns.saturating_sub(f.enter_ns);
        let corrected = self.corrected(duration, &f);
        if f.hidden {
            fold_hidden(&mut t.frames, &f);
            return;
        }
        let cpu = cpu_between(f.enter_cpu, at.cpu);
        let call = Call {
            thread: self.thread,
            thread_index: t.index,
            method: f.method,
            caller: f.caller,
            depth: f.depth,
            slot: f.slot,
            enter_ns: f.enter_ns,
            exit_ns: at.ns,
            self_ns: duration.saturating_sub(f.child_ns),
            corrected_ns: corrected,
            corrected_self_ns: corrected.saturating_sub(f.child_corrected_ns),
            cpu_ns: cpu,
            self_cpu_ns: cpu.map(|c| c.saturating_sub(f.child_cpu)),
            flags,
            untraced: f.untraced_inside,
            enter_event: f.enter_event,
            exit_event: at.event,
        };
        self.sink.exit(&call);
        if let Some(p) = t.frames.last_mut() {
            p.child_ns += duration;
            p.child_corrected_ns += corrected;
            p.child_cpu += cpu.unwrap_or(0);
            p.traced_inside += 1 + f.traced_inside;
            p.untraced_inside += f.untraced_at_enter + f.untraced_inside;
        }
    }
}

impl<S> Run<'_, S> {
    /// The duration minus the probes inside the call, rounded to the ns.
    #[inline]
    fn corrected(&self, duration: u64, f: &Frame) -> u64 {
        if self.cost == 0.0 {
            return duration;
        }
        let overhead = self.cost * (2 * f.traced_inside + f.untraced_inside) as f64;
        // Adding 0.5 before truncating rounds without a libm call per call.
        ((duration as f64 - overhead).max(0.0) + 0.5) as u64
    }
}

/// A hidden call's time stays in its parent's self time; its visible children count
/// as the parent's children, and its probes as overhead inside the parent.
fn fold_hidden(frames: &mut [Frame], f: &Frame) {
    if let Some(p) = frames.last_mut() {
        p.child_ns += f.child_ns;
        p.child_corrected_ns += f.child_corrected_ns;
        p.child_cpu += f.child_cpu;
        p.traced_inside += 1 + f.traced_inside;
        p.untraced_inside += f.untraced_at_enter + f.untraced_inside;
    }
}

fn cpu_between(enter: u64, exit: u64) -> Option<u64> {
    (enter != NO_CPU && exit != NO_CPU).then(|| exit.saturating_sub(enter))
}

impl Frame {
    /// Depth and caller of a call entered inside this one: a hidden frame is
    /// transparent, so its callees attach to its nearest visible ancestor.
    fn inner_position(&self) -> (u32, u32) {
        if self.hidden {
            (self.depth, self.caller)
        } else {
            (self.depth + 1, self.method)
        }
    }
}
