//! What each of a recording's samples, snapshots, JVM events, traced calls and
//! header fields becomes in a chunk: the event records, in the field order the
//! metadata declares (docs/EXPORT.md has the table).

use std::collections::HashMap;

use jscope_format::{
    EventKind, JvmEvent, MethodId, Recording, SampleMode, ThreadId, TraceKind, UserEventKind,
};

use super::out::Out;
use super::pools::Pools;
use super::types::id;

/// A method trace's stack holds at most this many traced calls (the JDK's
/// default stack depth), innermost first; deeper ones are cut.
const MAX_TRACE_DEPTH: usize = 64;

/// Header keys that JDK events carry, or that the reader adds itself, and so are
/// not repeated as `jscope.Header` events.
const HEADER_KEYS_ELSEWHERE: [&str; 4] = ["jvm_arguments", "cpu", "source", "jfr_version"];

/// How many of each event type a chunk holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventCounts {
    /// By JFR event type name.
    pub by_type: std::collections::BTreeMap<String, u64>,
    /// jscope events with no JFR counterpart (object frees, class loads, JIT,
    /// remote calls, ...), left out.
    pub left_out: u64,
}

/// Writes one recording's events into a chunk body.
pub(crate) struct EventWriter<'r> {
    rec: &'r Recording,
    pub pools: Pools<'r>,
    pub out: Out,
    body: Out,
    /// The recording's start, in its own ticks; chunk ticks are nanoseconds from it.
    start_ticks: u64,
    ticks_per_second: u64,
    /// The type id and type name of each user event definition, by its id.
    user_types: HashMap<u32, (i64, String)>,
    pub counts: EventCounts,
}

impl<'r> EventWriter<'r> {
    pub(crate) fn new(rec: &'r Recording, pools: Pools<'r>, out: Out) -> EventWriter<'r> {
        let user_types = rec
            .user_events
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, d)| {
                let name = super::types::user_event_type_name(rec.string(d.name));
                (d.id, (id::FIRST_USER_EVENT + i as i64, name))
            })
            .collect();
        EventWriter {
            rec,
            pools,
            out,
            body: Out::default(),
            start_ticks: rec.header.start_ticks,
            ticks_per_second: rec.header.ticks_per_second,
            user_types,
            counts: EventCounts::default(),
        }
    }

    /// Chunk ticks (nanoseconds from the recording's start) of recording ticks.
    pub(crate) fn ticks(&self, ticks: u64) -> i64 {
        let rel = i128::from(ticks) - i128::from(self.start_ticks);
        let ns = match self.ticks_per_second {
            0 | 1_000_000_000 => rel,
            tps => rel * 1_000_000_000 / i128::from(tps),
        };
        ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    fn span(&self, ns: u64) -> i64 {
        ns.min(i64::MAX as u64) as i64
    }

    /// Starts an event of type `ty` at recording ticks `at`.
    fn begin(&mut self, ty: i64, at: u64) {
        self.body.buf.clear();
        self.body.long(ty);
        let t = self.ticks(at);
        self.body.long(t);
    }

    fn end(&mut self, type_name: &str) {
        self.out.event(&self.body.buf);
        *self
            .counts
            .by_type
            .entry(type_name.to_string())
            .or_default() += 1;
    }

    fn key(&mut self, k: u64) {
        self.body.varint(k);
    }

    pub(crate) fn write_all(&mut self) {
        let rec = self.rec;
        self.header_events();
        self.samples();
        self.snapshots();
        for e in &rec.events {
            self.jvm_event(e);
        }
        self.traces();
        self.counters();
        self.counts.left_out += self.rec.remote_calls.len() as u64;
    }

    /// The agent's counters, at the end of the recording.
    fn counters(&mut self) {
        let rec = self.rec;
        let at = rec.end_ticks.unwrap_or_else(|| rec.last_event_ticks());
        for (name, &value) in &rec.counters {
            self.begin(id::COUNTER, at);
            self.body.string(Some(name));
            self.body.varint(value);
            self.end("jscope.Counter");
        }
    }

    fn samples(&mut self) {
        let rec = self.rec;
        for s in &rec.samples {
            let thread = self.pools.thread(s.thread);
            let stack = self.pools.stack(s.stack);
            let state = self.pools.state(s.state);
            match s.mode {
                SampleMode::Cpu => {
                    self.begin(id::EXECUTION_SAMPLE, s.ticks);
                    self.key(thread);
                    self.key(stack);
                    self.key(state);
                    self.end("jdk.ExecutionSample");
                }
                SampleMode::Wall => self.wall_sample(s.ticks, thread, stack, state),
            }
        }
    }

    /// async-profiler's wall-clock sample: one sample, no time span.
    fn wall_sample(&mut self, at: u64, thread: u64, stack: u64, state: u64) {
        self.begin(id::WALL_CLOCK_SAMPLE, at);
        self.key(thread);
        self.key(stack);
        self.key(state);
        self.body.int(1);
        self.body.long(0);
        self.end("profiler.WallClockSample");
    }

    /// A snapshot is a `jscope.ThreadSnapshot` (its interval and thread count) and
    /// one wall-clock sample per thread at its moment, which JMC and
    /// async-profiler show as the wall samples they are.
    fn snapshots(&mut self) {
        let rec = self.rec;
        for snap in &rec.snapshots {
            self.begin(id::THREAD_SNAPSHOT, snap.ticks);
            let interval = self.span(snap.interval_ns);
            self.body.long(interval);
            self.body.int(snap.threads.len() as i32);
            self.end("jscope.ThreadSnapshot");
            for t in &snap.threads {
                let thread = self.pools.thread(t.thread);
                let stack = self.pools.stack(t.stack);
                let state = self.pools.state(t.state);
                self.wall_sample(snap.ticks, thread, stack, state);
            }
        }
    }

    fn jvm_event(&mut self, e: &JvmEvent) {
        let thread = self.pools.thread(e.thread);
        match e.kind {
            EventKind::ThreadStart { parent } => {
                let parent = self.pools.thread(parent);
                self.begin(id::THREAD_START, e.ticks);
                self.key(parent);
                self.key(0);
                self.key(thread);
                self.key(parent);
                self.end("jdk.ThreadStart");
            }
            EventKind::ThreadEnd {} => {
                self.begin(id::THREAD_END, e.ticks);
                self.key(thread);
                self.key(thread);
                self.end("jdk.ThreadEnd");
            }
            EventKind::MonitorBlocked {
                duration_ns,
                class,
                object,
                owner,
                stack,
                ..
            } => {
                let (class, owner) = (self.pools.class(class), self.pools.thread(owner));
                self.lasting(id::MONITOR_ENTER, e, duration_ns, thread, stack);
                self.key(class);
                self.key(owner);
                self.body.varint(object);
                self.end("jdk.JavaMonitorEnter");
            }
            EventKind::MonitorWait {
                duration_ns,
                class,
                object,
                timeout_ms,
                timed_out,
                stack,
                ..
            } => {
                let class = self.pools.class(class);
                self.lasting(id::MONITOR_WAIT, e, duration_ns, thread, stack);
                self.key(class);
                self.key(0); // the notifier is not recorded
                self.body.varint(timeout_ms);
                self.body.bool(timed_out);
                self.body.varint(object);
                self.end("jdk.JavaMonitorWait");
            }
            EventKind::Park {
                duration_ns,
                blocker_class,
                timeout_ns,
                stack,
                ..
            } => {
                let class = self.pools.class(blocker_class);
                self.lasting(id::THREAD_PARK, e, duration_ns, thread, stack);
                self.key(class);
                // No timeout and no deadline are Long.MIN_VALUE, as the JDK writes them.
                let timeout = if timeout_ns == 0 {
                    i64::MIN
                } else {
                    self.span(timeout_ns)
                };
                self.body.long(timeout);
                self.body.long(i64::MIN);
                self.body.varint(0);
                self.end("jdk.ThreadPark");
            }
            EventKind::Gc { .. } => self.gc(e),
            EventKind::Alloc {
                class,
                size,
                stack,
                weight,
                ..
            } => {
                let (class, stack) = (self.pools.class(class), self.pools.stack(stack));
                self.begin(id::ALLOCATION_SAMPLE, e.ticks);
                self.key(thread);
                self.key(stack);
                self.key(class);
                self.body.varint(if weight > 0 { weight } else { size });
                self.body.varint(size);
                self.end("jdk.ObjectAllocationSample");
            }
            EventKind::User { event, kind, value } => {
                self.user_event(e, thread, event, kind, value)
            }
            EventKind::ClassLoad { class } => {
                let class = self.pools.class(class);
                self.begin(id::CLASS_LOAD, e.ticks);
                self.body.long(0);
                self.key(thread);
                self.key(0);
                self.key(class);
                self.key(0);
                self.key(0);
                self.end("jdk.ClassLoad");
            }
            EventKind::ClassUnload { class } => {
                let class = self.pools.class(class);
                self.begin(id::CLASS_UNLOAD, e.ticks);
                self.key(thread);
                self.key(class);
                self.key(0);
                self.end("jdk.ClassUnload");
            }
            EventKind::Compiled { method, code_size } => {
                let method = self.pools.method(method);
                self.begin(id::COMPILATION, e.ticks);
                self.body.long(0);
                self.key(thread);
                self.body.int(0); // the compilation's id is not recorded
                self.body.string(None);
                self.key(method);
                self.body.int(0);
                self.body.bool(true);
                self.body.bool(false);
                self.body.varint(code_size);
                self.body.varint(0);
                self.end("jdk.Compilation");
            }
            EventKind::ObjectFree {
                object,
                allocated_total,
            } => {
                self.begin(id::OBJECT_FREE, e.ticks);
                self.body.varint(object);
                self.body.varint(allocated_total);
                self.end("jscope.ObjectFree");
            }
            EventKind::CompiledUnload { method } => {
                let method = self.pools.method(method);
                self.begin(id::COMPILED_UNLOAD, e.ticks);
                self.key(method);
                self.end("jscope.CompiledUnload");
            }
            EventKind::ThreadStartCall {
                started,
                trace_events,
            } => {
                self.begin(id::THREAD_START_CALL, e.ticks);
                self.key(thread);
                self.body.long(started);
                self.body.varint(trace_events);
                self.end("jscope.ThreadStartCall");
            }
            // Kinds the format gains later are left out, and counted, until mapped.
            #[allow(unreachable_patterns)]
            _ => self.counts.left_out += 1,
        }
    }

    /// Starts an event that lasts: start, duration, thread and stack.
    fn lasting(
        &mut self,
        ty: i64,
        e: &JvmEvent,
        duration_ns: u64,
        thread: u64,
        stack: jscope_format::StackId,
    ) {
        let stack = self.pools.stack(stack);
        self.begin(ty, e.ticks);
        let d = self.span(duration_ns);
        self.body.long(d);
        self.key(thread);
        self.key(stack);
    }

    /// A collection: its pause, or for a concurrent cycle its length with no
    /// pause (`sumOfPauses` 0).
    fn gc(&mut self, e: &JvmEvent) {
        let EventKind::Gc {
            duration_ns,
            collector,
            cause,
            gc_id,
            concurrent,
            ..
        } = e.kind
        else {
            return;
        };
        let rec = self.rec;
        let name = non_empty(rec.string(collector)).map_or(0, |n| self.pools.gc_name(n));
        let cause = non_empty(rec.string(cause)).map_or(0, |c| self.pools.gc_cause(c));
        let d = self.span(duration_ns);
        let paused = if concurrent { 0 } else { d };
        self.begin(id::GARBAGE_COLLECTION, e.ticks);
        self.body.long(d);
        self.key(0); // the collecting thread is not recorded
        self.body.int(gc_id as i32);
        self.key(name);
        self.key(cause);
        self.body.long(paused);
        self.body.long(paused);
        self.end("jdk.GarbageCollection");
    }

    fn user_event(
        &mut self,
        e: &JvmEvent,
        thread: u64,
        event: u32,
        kind: UserEventKind,
        value: i64,
    ) {
        let Some((ty, type_name)) = self.user_types.get(&event).cloned() else {
            self.counts.left_out += 1;
            return;
        };
        self.begin(ty, e.ticks);
        self.key(thread);
        self.body.string(Some(match kind {
            UserEventKind::Instant => "instant",
            UserEventKind::Begin => "begin",
            UserEventKind::End => "end",
        }));
        self.body.long(value);
        self.end(&type_name);
    }

    /// Each traced call, when it ends, as JDK 25's `jdk.MethodTrace`: its start,
    /// duration and the traced calls open around it (innermost first) as its
    /// stack. A call still open at its thread's last event ends there, as
    /// `jscope stats` closes it.
    fn traces(&mut self) {
        let mut open: HashMap<ThreadId, Vec<(MethodId, u64)>> = HashMap::new();
        let mut last: HashMap<ThreadId, u64> = HashMap::new();
        let rec = self.rec;
        for b in &rec.traces {
            let stack = open.entry(b.thread).or_default();
            for ev in &b.events {
                match ev.kind {
                    TraceKind::Enter => stack.push((ev.method, ev.ticks)),
                    TraceKind::Exit | TraceKind::Throw => {
                        // An exit of a method below the top closes the calls above it.
                        let Some(depth) = stack.iter().rposition(|&(m, _)| m == ev.method) else {
                            continue;
                        };
                        while stack.len() > depth {
                            self.method_trace(b.thread, stack, ev.ticks);
                            stack.pop();
                        }
                    }
                }
            }
            if let Some(ev) = b.events.last() {
                last.insert(b.thread, ev.ticks);
            }
        }
        let mut threads: Vec<_> = open.into_iter().collect();
        threads.sort_by_key(|(t, _)| *t);
        for (thread, mut stack) in threads {
            let end = last.get(&thread).copied().unwrap_or(0);
            while !stack.is_empty() {
                self.method_trace(thread, &stack, end);
                stack.pop();
            }
        }
    }

    /// The call on top of `stack`, ending at `end`.
    fn method_trace(&mut self, thread: ThreadId, stack: &[(MethodId, u64)], end: u64) {
        let Some(&(method, start)) = stack.last() else {
            return;
        };
        let frames: Vec<MethodId> = stack
            .iter()
            .rev()
            .take(MAX_TRACE_DEPTH)
            .map(|&(m, _)| m)
            .collect();
        let stack_key = self.pools.trace_stack(&frames);
        let thread = self.pools.thread(thread);
        let method = self.pools.method(method);
        self.begin(id::METHOD_TRACE, start);
        let ticks = end.saturating_sub(start).min(i64::MAX as u64) as i64;
        let duration = self.ticks_span(ticks);
        self.body.long(duration);
        self.key(thread);
        self.key(stack_key);
        self.key(method);
        self.end("jdk.MethodTrace");
    }

    /// Recording ticks as a span of chunk ticks (nanoseconds).
    fn ticks_span(&self, ticks: i64) -> i64 {
        match self.ticks_per_second {
            0 | 1_000_000_000 => ticks,
            tps => (i128::from(ticks) * 1_000_000_000 / i128::from(tps)) as i64,
        }
    }

    /// The JVM's identity, the sampling intervals and the rest of the header.
    fn header_events(&mut self) {
        let rec = self.rec;
        let h = &rec.header;
        let start = h.start_ticks;
        self.begin(id::JVM_INFORMATION, start);
        self.body.string(Some(&h.vm_name));
        self.body.string(Some(&jvm_version(h)));
        self.body.string(h.extra("jvm_arguments"));
        self.body.string(None);
        self.body.string(Some(&h.command_line));
        self.body.long((h.start_wall_ns / 1_000_000) as i64);
        self.body.long(i64::from(h.pid));
        self.end("jdk.JVMInformation");
        if !h.os.is_empty() {
            self.begin(id::OS_INFORMATION, start);
            self.body.string(Some(&h.os));
            self.end("jdk.OSInformation");
        }
        if let Some(cpu) = h.extra("cpu") {
            self.begin(id::CPU_INFORMATION, start);
            self.body.string(Some(cpu));
            self.body.string(Some(""));
            for _ in 0..3 {
                self.body.int(0);
            }
            self.end("jdk.CPUInformation");
        }
        for (name, ns) in sampling_intervals(rec) {
            self.begin(id::ACTIVE_SETTING, start);
            self.body.long(id::EXECUTION_SAMPLE);
            self.body.string(Some(name));
            self.body.string(Some(&ns.to_string()));
            self.end("jdk.ActiveSetting");
        }
        for (k, v) in header_entries(rec) {
            self.begin(id::HEADER, start);
            self.body.string(Some(&k));
            self.body.string(Some(&v));
            self.end("jscope.Header");
        }
    }
}

fn non_empty(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.is_empty())
}

/// The JVM version as the JDK writes it, which the reader takes apart again:
/// `OpenJDK 64-Bit Server VM (17.0.15+6) for linux-amd64 JRE (17.0.15)`.
fn jvm_version(h: &jscope_format::Header) -> String {
    let mut v = format!("{} ({})", h.vm_name, h.vm_version);
    if !h.arch.is_empty() {
        v.push_str(&format!(" for linux-{}", h.arch));
    }
    if !h.java_version.is_empty() {
        v.push_str(&format!(" JRE ({})", h.java_version));
    }
    v
}

/// async-profiler's names of its sampling intervals (nanoseconds), which jscope's
/// reader and async-profiler's converter read: the cpu samples' and the wall
/// samples' weight.
fn sampling_intervals(rec: &Recording) -> Vec<(&'static str, u64)> {
    let weight = |mode: SampleMode| {
        rec.samples
            .iter()
            .find(|s| s.mode == mode && s.weight_ns > 0)
            .map(|s| s.weight_ns)
    };
    let mut out = Vec::new();
    if let Some(cpu) = weight(SampleMode::Cpu).or(Some(rec.header.interval_ns).filter(|&i| i > 0)) {
        out.push(("interval", cpu));
    }
    if let Some(wall) = weight(SampleMode::Wall) {
        out.push(("wall", wall));
    }
    out
}

/// Header fields no JDK event holds, as key/values.
fn header_entries(rec: &Recording) -> Vec<(String, String)> {
    let h = &rec.header;
    let mut out = Vec::new();
    for (k, v) in [
        ("agent_version", &h.agent_version),
        ("host", &h.host),
        ("vm_vendor", &h.vm_vendor),
        ("modes", &h.modes),
    ] {
        if !v.is_empty() {
            out.push((k.to_string(), v.clone()));
        }
    }
    if h.max_depth > 0 {
        out.push(("max_depth".into(), h.max_depth.to_string()));
    }
    for (k, v) in &h.extra {
        if !HEADER_KEYS_ELSEWHERE.contains(&k.as_str()) {
            out.push((k.clone(), v.clone()));
        }
    }
    out
}
