//! Turns JFR events into jscope's model: names into the string, class and method
//! dictionaries, JFR stack traces and threads into stacks and thread records,
//! sampling events into samples and the rest into jscope's JVM events and traces.

use std::collections::{BTreeMap, HashMap};

use jscope_format::thread_state as ts;
use jscope_format::{
    CallAggregate, CallPair, EventKind, JvmEvent, MethodId, Recording, Sample, SampleMode,
    Snapshot, SnapshotThread, ThreadId, TraceBatch, TraceEvent, TraceKind, UserEventDef,
    UserEventKind,
};

use crate::metadata::Class;
use crate::names::Names;
use crate::value::{Value, View};

/// The type name prefix of the events jscope writes for a user event name
/// (`jscope.user.checkout`, labelled with the name as registered).
pub(crate) const USER_EVENT_PREFIX: &str = "jscope.user.";

/// The JFR event types this reader maps; others are skipped unread.
pub(crate) const MAPPED: &[&str] = &[
    "jdk.ExecutionSample",
    "jdk.NativeMethodSample",
    "jdk.CPUTimeSample",
    "profiler.WallClockSample",
    "jdk.ObjectAllocationSample",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.JavaMonitorEnter",
    "jdk.JavaMonitorWait",
    "jdk.ThreadPark",
    "jdk.GarbageCollection",
    "jdk.GCPhasePause",
    "jdk.ThreadStart",
    "jdk.ThreadEnd",
    "jdk.MethodTrace",
    "jdk.MethodTiming",
    "jdk.ActiveSetting",
    "jdk.JVMInformation",
    "jdk.OSInformation",
    "jdk.CPUInformation",
    "jscope.Header",
    "jscope.ThreadSnapshot",
    "jscope.ThreadStartCall",
    "jscope.Counter",
    "jdk.ClassLoad",
    "jdk.ClassUnload",
    "jdk.Compilation",
    "jscope.ObjectFree",
    "jscope.CompiledUnload",
];

/// At most this many samples are made of one batched async-profiler wall sample.
const MAX_BATCHED_COPIES: u64 = 10_000;

/// Sampling intervals when the recording's settings do not say (JFR's profile.jfc).
const DEFAULT_CPU_INTERVAL_NS: u64 = 10_000_000;
const DEFAULT_WALL_INTERVAL_NS: u64 = 20_000_000;

/// A JDK 25 method trace: one call of `method` on a thread.
struct Call {
    start: u64,
    end: u64,
    method: MethodId,
    /// Frames in its stack trace: a call that starts and ends with another is
    /// inside it when its stack is deeper.
    depth: usize,
}

/// A `jscope.ThreadSnapshot`: the wall-clock samples at its moment are its threads.
struct SnapshotMark {
    ticks: u64,
    interval_ns: u64,
    threads: u64,
}

/// Which interval a sample's weight is a multiple of, filled in at the end, when
/// every chunk's settings are known.
struct PendingWeight {
    sample: usize,
    wall: bool,
    factor: u64,
}

#[derive(Default)]
pub(crate) struct Builder {
    pub rec: Recording,
    pub names: Names,
    calls: BTreeMap<ThreadId, Vec<Call>>,
    timings: HashMap<MethodId, (u64, CallPair)>,
    pending: Vec<PendingWeight>,
    cpu_interval: Option<u64>,
    wall_interval: Option<u64>,
    /// Indices of `jdk.ExecutionSample` samples, dropped when the recording also has
    /// JDK 25's `jdk.CPUTimeSample`: both sample CPU time, so keeping both would
    /// count it twice, and the CPU-time sampler is the exact one.
    execution_samples: Vec<usize>,
    /// GCs as `jdk.GarbageCollection` gives them and the pauses (start,
    /// duration, GC id) `jdk.GCPhasePause` gives; the pauses are used when there
    /// are any, named after their collection.
    collections: Vec<(u64, EventKind)>,
    pauses: Vec<(u64, u64, u64)>,
    cpu_time_samples: u64,
    snapshots: Vec<SnapshotMark>,
    /// User event ids by name, for `jscope.user.*` events.
    user_events: HashMap<String, u32>,
    /// What `jscope.Header` events say of the recording's agent and modes.
    agent: Option<String>,
    modes_said: Option<String>,
    pub async_profiler: bool,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder::default()
    }

    /// Maps one event of type `class`.
    pub(crate) fn event(&mut self, v: &View, class: &Class, e: &Value) {
        let t = v.time_ns(e, "startTime").unwrap_or(0);
        let dur = || v.span_ns(e, "duration").unwrap_or(0);
        match class.name.as_str() {
            "jdk.ExecutionSample" => {
                let state = v.as_string(v.get(e, "state")).map_or(0, |s| state_bits(&s));
                self.execution_samples.push(self.rec.samples.len());
                self.sample(v, e, "sampledThread", SampleMode::Cpu, state, t, 1);
            }
            "jdk.NativeMethodSample" => {
                let state = v
                    .as_string(v.get(e, "state"))
                    .map_or(ts::ALIVE | ts::RUNNABLE | ts::IN_NATIVE, |s| state_bits(&s));
                self.sample(v, e, "sampledThread", SampleMode::Wall, state, t, 1);
            }
            "profiler.WallClockSample" => {
                // async-profiler batches an idle thread's consecutive samples into
                // one event of `samples` over `timeSpan`, and counts them all (its
                // converters' samples and values): they are that many samples here
                // too, spread over the span, or report and flame would count one
                // where pprof's weight and async-profiler count thirty.
                let state = v.as_string(v.get(e, "state")).map_or(0, |s| state_bits(&s));
                let n = v.int(e, "samples").unwrap_or(1).max(1) as u64;
                let span = v.span_ns(e, "timeSpan").unwrap_or(0);
                // A corrupt count costs no more than this many copies; the last
                // carries the rest as its weight.
                let copies = n.min(MAX_BATCHED_COPIES);
                for i in 0..copies {
                    let at = t + (span as u128 * i as u128 / copies as u128) as u64;
                    let factor = if i + 1 == copies { n - i } else { 1 };
                    self.sample(v, e, "sampledThread", SampleMode::Wall, state, at, factor);
                }
            }
            "jdk.CPUTimeSample" => self.cpu_time_sample(v, e, t),
            // JDK's throttled samples carry only the bytes they stand for.
            // It records no object size (only the bytes it stands for): size 0,
            // so `alloc` does not count each sample as one object of `weight` bytes.
            "jdk.ObjectAllocationSample" => self.alloc(v, e, t, "objectSize", "weight"),
            // A TLAB sample stands for the TLAB it opened (async-profiler's too).
            "jdk.ObjectAllocationInNewTLAB" => {
                let by = if v.int(e, "tlabSize").unwrap_or(0) > 0 {
                    "tlabSize"
                } else {
                    "allocationSize"
                };
                self.alloc(v, e, t, "allocationSize", by)
            }
            "jdk.ObjectAllocationOutsideTLAB" => {
                self.alloc(v, e, t, "allocationSize", "allocationSize")
            }
            "jdk.JavaMonitorEnter" => {
                let kind = EventKind::MonitorBlocked {
                    duration_ns: dur(),
                    class: self.names.class(v, v.raw(e, "monitorClass")),
                    object: v.int(e, "address").unwrap_or(0) as u64,
                    owner: self.names.thread(v, v.raw(e, "previousOwner")),
                    stack: self.names.stack(v, v.raw(e, "stackTrace")),
                    request: Default::default(),
                };
                self.thread_event(v, e, t, kind);
            }
            "jdk.JavaMonitorWait" => {
                let kind = EventKind::MonitorWait {
                    duration_ns: dur(),
                    class: self.names.class(v, v.raw(e, "monitorClass")),
                    object: v.int(e, "address").unwrap_or(0) as u64,
                    timeout_ms: v.span_ns(e, "timeout").unwrap_or(0) / 1_000_000,
                    timed_out: v.bool(e, "timedOut"),
                    stack: self.names.stack(v, v.raw(e, "stackTrace")),
                    request: Default::default(),
                };
                self.thread_event(v, e, t, kind);
            }
            "jdk.ThreadPark" => {
                let kind = EventKind::Park {
                    duration_ns: dur(),
                    blocker_class: self.names.class(v, v.raw(e, "parkedClass")),
                    timeout_ns: v.int(e, "timeout").filter(|&n| n > 0).unwrap_or(0) as u64,
                    stack: self.names.stack(v, v.raw(e, "stackTrace")),
                    request: Default::default(),
                };
                self.thread_event(v, e, t, kind);
            }
            "jdk.GarbageCollection" => self.collection(v, e, t),
            "jdk.GCPhasePause" => {
                let gc_id = v.int(e, "gcId").unwrap_or(0).max(0) as u64;
                self.pauses.push((t, dur(), gc_id));
            }
            "jdk.ThreadStart" => {
                let thread = self.names.thread(v, v.raw(e, "thread"));
                let parent = self.names.thread(v, v.raw(e, "parentThread"));
                let kind = EventKind::ThreadStart { parent };
                self.rec.events.push(JvmEvent::on(thread, t, kind));
            }
            "jdk.ThreadEnd" => {
                let thread = self.names.thread(v, v.raw(e, "thread"));
                self.rec
                    .events
                    .push(JvmEvent::on(thread, t, EventKind::ThreadEnd {}));
            }
            "jdk.MethodTrace" => {
                let thread = self.names.thread(v, v.raw(e, "eventThread"));
                let method = self.names.method(v, v.raw(e, "method"));
                let depth = match v.get(v.raw(e, "stackTrace"), "frames") {
                    Value::Array(frames) => frames.len(),
                    _ => 0,
                };
                let call = Call {
                    start: t,
                    end: t + dur(),
                    method,
                    depth,
                };
                self.calls.entry(thread).or_default().push(call);
            }
            "jdk.MethodTiming" => self.timing(v, e, t),
            "jdk.ActiveSetting" => self.setting(v, e),
            "jdk.JVMInformation" => self.jvm_info(v, e),
            "jdk.OSInformation" => {
                let os = v.string(e, "osVersion").unwrap_or_default();
                self.rec.header.os = os_name(&os);
            }
            "jdk.CPUInformation" => {
                // The CPU's model and features (`AMD Unknown x86 SSE SSE2 ...`), not
                // an architecture: kept beside the header (the arch comes from
                // JVMInformation's `for linux-amd64`).
                // async-profiler writes the machine there (`x86_64`).
                let cpu = v.string(e, "cpu").unwrap_or_default();
                let h = &mut self.rec.header;
                if !cpu.is_empty() && !cpu.contains(' ') {
                    if h.arch.is_empty() {
                        h.arch = cpu;
                    }
                } else if !cpu.is_empty() {
                    h.extra.retain(|(k, _)| k != "cpu");
                    h.extra.push(("cpu".into(), cpu));
                }
            }
            "jscope.Header" => self.header_entry(v, e),
            "jscope.ThreadStartCall" => {
                let kind = EventKind::ThreadStartCall {
                    started: v.int(e, "startedThreadId").unwrap_or(0),
                    trace_events: v.int(e, "traceEvents").unwrap_or(0).max(0) as u64,
                };
                self.thread_event(v, e, t, kind);
            }
            "jdk.ClassLoad" => {
                let class = self.names.class(v, v.raw(e, "loadedClass"));
                self.thread_event(v, e, t, EventKind::ClassLoad { class });
            }
            "jdk.ClassUnload" => {
                let class = self.names.class(v, v.raw(e, "unloadedClass"));
                self.thread_event(v, e, t, EventKind::ClassUnload { class });
            }
            "jdk.Compilation" => {
                let method = self.names.method(v, v.raw(e, "method"));
                let code_size = v.int(e, "codeSize").unwrap_or(0).max(0) as u64;
                self.thread_event(v, e, t, EventKind::Compiled { method, code_size });
            }
            "jscope.ObjectFree" => {
                let kind = EventKind::ObjectFree {
                    object: v.int(e, "object").unwrap_or(0) as u64,
                    allocated_total: v.int(e, "allocatedTotal").unwrap_or(0) as u64,
                };
                self.rec.events.push(JvmEvent::global(t, kind));
            }
            "jscope.CompiledUnload" => {
                let method = self.names.method(v, v.raw(e, "method"));
                let kind = EventKind::CompiledUnload { method };
                self.rec.events.push(JvmEvent::global(t, kind));
            }
            "jscope.Counter" => {
                let name = v.string(e, "name").unwrap_or_default();
                let value = v.int(e, "value").unwrap_or(0) as u64;
                self.rec.counters.insert(name, value);
            }
            "jscope.ThreadSnapshot" => self.snapshots.push(SnapshotMark {
                ticks: t,
                interval_ns: v.span_ns(e, "interval").unwrap_or(0),
                threads: v.int(e, "threads").unwrap_or(0).max(0) as u64,
            }),
            name if name.starts_with(USER_EVENT_PREFIX) => {
                let label = class
                    .label
                    .as_deref()
                    .unwrap_or(&name[USER_EVENT_PREFIX.len()..]);
                self.user_event(v, e, t, label);
            }
            _ => {}
        }
    }

    /// A collection: its sum of pauses; one without pauses (a concurrent cycle)
    /// keeps its length and is marked concurrent.
    fn collection(&mut self, v: &View, e: &Value, t: u64) {
        let duration = v.span_ns(e, "duration").unwrap_or(0);
        let (duration_ns, concurrent) = match v.span_ns(e, "sumOfPauses") {
            Some(0) if duration > 0 => (duration, true),
            Some(paused) => (paused, false),
            None => (duration, false),
        };
        let mut string = |field: &str| {
            let s = v.as_string(v.get(e, field)).unwrap_or_default();
            self.names.string(&s)
        };
        let kind = EventKind::Gc {
            duration_ns,
            collector: string("name"),
            cause: string("cause"),
            generation: 0,
            heap_before: 0,
            heap_after: 0,
            gc_id: v.int(e, "gcId").unwrap_or(0).max(0) as u64,
            concurrent,
        };
        self.collections.push((t, kind));
    }

    /// What jscope wrote of its recording's header that no JDK event holds.
    fn header_entry(&mut self, v: &View, e: &Value) {
        let key = v.string(e, "key").unwrap_or_default();
        let value = v.string(e, "value").unwrap_or_default();
        let h = &mut self.rec.header;
        match key.as_str() {
            "agent_version" => self.agent = Some(value),
            "modes" => self.modes_said = Some(value),
            "host" => h.host = value,
            "vm_vendor" => h.vm_vendor = value,
            "max_depth" => h.max_depth = value.parse().unwrap_or(0),
            "" => {}
            _ => {
                h.extra.retain(|(k, _)| *k != key);
                h.extra.push((key, value));
            }
        }
    }

    /// An event of a user event type: its name is the type's label.
    fn user_event(&mut self, v: &View, e: &Value, t: u64, name: &str) {
        let event = match self.user_events.get(name) {
            Some(&id) => id,
            None => {
                let id = self.user_events.len() as u32 + 1;
                let def = UserEventDef {
                    id,
                    name: self.names.string(name),
                };
                let i = id as usize;
                if self.rec.user_events.len() <= i {
                    self.rec.user_events.resize(i + 1, None);
                }
                self.rec.user_events[i] = Some(def);
                self.user_events.insert(name.to_string(), id);
                id
            }
        };
        let kind = match v.string(e, "kind").as_deref() {
            Some("begin") => UserEventKind::Begin,
            Some("end") => UserEventKind::End,
            _ => UserEventKind::Instant,
        };
        let value = v.int(e, "value").unwrap_or(0);
        self.thread_event(v, e, t, EventKind::User { event, kind, value });
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &mut self,
        v: &View,
        e: &Value,
        thread_field: &str,
        mode: SampleMode,
        state: u32,
        ticks: u64,
        factor: u64,
    ) {
        let thread = self.names.thread(v, v.raw(e, thread_field));
        let stack = self.names.stack(v, v.raw(e, "stackTrace"));
        self.pending.push(PendingWeight {
            sample: self.rec.samples.len(),
            wall: mode == SampleMode::Wall,
            factor,
        });
        self.rec.samples.push(Sample {
            request: 0,
            thread,
            carrier: Default::default(),
            ticks,
            stack,
            mode,
            weight_ns: 0,
            state,
        });
    }

    /// JDK 25's CPU-time sampler: the event carries its own period; failed
    /// samples have no stack and are left out.
    fn cpu_time_sample(&mut self, v: &View, e: &Value, t: u64) {
        if v.bool(e, "failed") {
            return;
        }
        let thread = self.names.thread(v, v.raw(e, "eventThread"));
        let stack = self.names.stack(v, v.raw(e, "stackTrace"));
        let weight = v.span_ns(e, "samplingPeriod").unwrap_or(0);
        self.cpu_time_samples += 1;
        if weight == 0 {
            self.pending.push(PendingWeight {
                sample: self.rec.samples.len(),
                wall: false,
                factor: 1,
            });
        }
        self.rec.samples.push(Sample {
            request: 0,
            thread,
            carrier: Default::default(),
            ticks: t,
            stack,
            mode: SampleMode::Cpu,
            weight_ns: weight,
            state: ts::ALIVE | ts::RUNNABLE,
        });
    }

    /// An allocation sample: the object's own size, and the bytes it stands for.
    fn alloc(&mut self, v: &View, e: &Value, t: u64, size_field: &str, weight_field: &str) {
        let size = v.int(e, size_field).unwrap_or(0).max(0) as u64;
        let weight = v.int(e, weight_field).unwrap_or(0).max(0) as u64;
        let kind = EventKind::Alloc {
            class: self.names.class(v, v.raw(e, "objectClass")),
            size,
            weight: weight.max(size),
            stack: self.names.stack(v, v.raw(e, "stackTrace")),
            object: 0,
            allocated_total: 0,
            request: Default::default(),
        };
        self.thread_event(v, e, t, kind);
    }

    fn thread_event(&mut self, v: &View, e: &Value, t: u64, kind: EventKind) {
        let thread = self.names.thread(v, v.raw(e, "eventThread"));
        self.rec.events.push(JvmEvent::on(thread, t, kind));
    }

    /// JDK 25's per-method totals; each event holds the totals so far, so the last
    /// one of each method counts.
    fn timing(&mut self, v: &View, e: &Value, t: u64) {
        let callee = self.names.method(v, v.raw(e, "method"));
        let calls = v.int(e, "invocations").unwrap_or(0).max(0) as u64;
        let avg = v.span_ns(e, "average").unwrap_or(0);
        let pair = CallPair {
            caller: MethodId::NONE,
            callee,
            calls,
            total_ns: avg.saturating_mul(calls),
            min_ns: v.span_ns(e, "minimum").unwrap_or(0),
            max_ns: v.span_ns(e, "maximum").unwrap_or(0),
        };
        let entry = self.timings.entry(callee).or_insert((t, pair));
        if t >= entry.0 {
            *entry = (t, pair);
        }
    }

    /// Sampling intervals from `jdk.ActiveSetting`: JFR's `period` of its samplers,
    /// async-profiler's `interval` and `wall` (nanoseconds).
    fn setting(&mut self, v: &View, e: &Value) {
        let Some(id) = v.int(e, "id") else { return };
        let ty = v.meta.classes.get(&id).map_or("", |c| c.name.as_str());
        let name = v.string(e, "name").unwrap_or_default();
        let value = v.string(e, "value").unwrap_or_default();
        let Some(ns) = parse_interval(&value) else {
            return;
        };
        match (ty, name.as_str()) {
            ("jdk.ExecutionSample", "period" | "interval") => self.cpu_interval = Some(ns),
            ("jdk.ExecutionSample", "wall") => self.wall_interval = Some(ns),
            ("jdk.NativeMethodSample", "period") => {
                self.wall_interval.get_or_insert(ns);
            }
            _ => {}
        }
    }

    fn jvm_info(&mut self, v: &View, e: &Value) {
        let h = &mut self.rec.header;
        h.vm_name = v.string(e, "jvmName").unwrap_or_default();
        let version = v.string(e, "jvmVersion").unwrap_or_default();
        // `OpenJDK 64-Bit Server VM (25.0.2+10-LTS) for linux-amd64 JRE ...`
        let inner = version
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(v, _)| v.to_string());
        // jscope writes the Java version after `JRE`; the JDK repeats the VM's there.
        let jre = version
            .split_once(" JRE (")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(v, _)| v.to_string());
        h.java_version = jre.or_else(|| inner.clone()).unwrap_or_default();
        if let Some(arch) = arch_of(&version) {
            h.arch = arch;
        }
        h.vm_version = inner.unwrap_or(version);
        h.command_line = v.string(e, "javaArguments").unwrap_or_default();
        h.pid = v.int(e, "pid").unwrap_or(0) as u32;
        let args = v.string(e, "jvmArguments").unwrap_or_default();
        h.extra.retain(|(k, _)| k != "jvm_arguments");
        if !args.is_empty() {
            h.extra.push(("jvm_arguments".into(), args));
        }
    }

    /// Fills in what needs every chunk: sample weights, traces, timings, header.
    pub(crate) fn finish(mut self) -> Recording {
        let cpu = self.cpu_interval.unwrap_or(DEFAULT_CPU_INTERVAL_NS);
        let wall = self.wall_interval.unwrap_or(DEFAULT_WALL_INTERVAL_NS);
        for p in &self.pending {
            let interval = if p.wall { wall } else { cpu };
            self.rec.samples[p.sample].weight_ns = interval.saturating_mul(p.factor);
        }
        if self.cpu_time_samples > 0 {
            self.drop_execution_samples();
        }
        self.add_gcs();
        // JFR writes each thread's buffer in turn; jscope's samples are in time order.
        self.rec.samples.sort_by_key(|s| s.ticks);
        self.gather_snapshots();
        for (thread, calls) in std::mem::take(&mut self.calls) {
            self.rec.traces.push(nest(thread, calls));
        }
        if !self.timings.is_empty() {
            let mut pairs: Vec<CallPair> = self.timings.values().map(|(_, p)| *p).collect();
            pairs.sort_by_key(|p| p.callee);
            let ticks = self.timings.values().map(|(t, _)| *t).max().unwrap_or(0);
            self.rec.call_aggregates.push(CallAggregate {
                thread: ThreadId::NONE,
                ticks,
                pairs,
            });
        }
        std::mem::take(&mut self.names).into_recording(&mut self.rec);
        let modes = self.modes_found();
        let h = &mut self.rec.header;
        h.modes = self.modes_said.take().unwrap_or(modes);
        h.interval_ns = cpu;
        h.ticks_per_second = 1_000_000_000;
        h.agent_version = match self.agent.take() {
            Some(agent) => agent,
            None if self.async_profiler => "async-profiler (JFR)".into(),
            None => "JDK Flight Recorder".into(),
        };
        h.extra.push(("source".into(), "jfr".into()));
        self.rec
    }
}

impl Builder {
    /// The sampling modes the samples and snapshots read are of, as the agent
    /// names them: cpu, wall, snapshot.
    fn modes_found(&self) -> String {
        let has = |mode| self.rec.samples.iter().any(|s| s.mode == mode);
        let modes = [
            (has(SampleMode::Cpu), "cpu"),
            (has(SampleMode::Wall), "wall"),
            (!self.rec.snapshots.is_empty(), "snapshot"),
        ];
        let on: Vec<&str> = modes
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, m)| *m)
            .collect();
        on.join("+")
    }

    /// The wall-clock samples at each `jscope.ThreadSnapshot`'s moment (as many
    /// as it says it had threads) become that snapshot's threads again.
    fn gather_snapshots(&mut self) {
        if self.snapshots.is_empty() {
            return;
        }
        let mut marks = std::mem::take(&mut self.snapshots);
        marks.sort_by_key(|m| m.ticks);
        let samples = &self.rec.samples;
        let mut taken = vec![false; samples.len()];
        for m in marks {
            let first = samples.partition_point(|s| s.ticks < m.ticks);
            let mine: Vec<usize> = (first..samples.len())
                .take_while(|&i| samples[i].ticks == m.ticks)
                .filter(|&i| samples[i].mode == SampleMode::Wall && !taken[i])
                .take(m.threads as usize)
                .collect();
            let threads = mine
                .into_iter()
                .map(|i| {
                    taken[i] = true;
                    SnapshotThread {
                        thread: samples[i].thread,
                        carrier: ThreadId::NONE,
                        state: samples[i].state,
                        stack: samples[i].stack,
                    }
                })
                .collect();
            self.rec.snapshots.push(Snapshot {
                ticks: m.ticks,
                interval_ns: m.interval_ns,
                threads,
            });
        }
        let mut i = 0;
        self.rec.samples.retain(|_| {
            i += 1;
            !taken[i - 1]
        });
    }

    /// jscope's `gc` events are stop-the-world pauses: JFR's pause phases when the
    /// recording has them (named after their collection), else each collection's
    /// sum of pauses (a concurrent cycle's duration is mostly not a pause).
    fn add_gcs(&mut self) {
        let collections = std::mem::take(&mut self.collections);
        let gcs: Vec<(u64, EventKind)> = if self.pauses.is_empty() {
            collections
        } else {
            let by_id: HashMap<u64, EventKind> = collections
                .into_iter()
                .filter_map(|(_, k)| match k {
                    EventKind::Gc { gc_id, .. } => Some((gc_id, k)),
                    _ => None,
                })
                .collect();
            std::mem::take(&mut self.pauses)
                .into_iter()
                .map(|(t, duration_ns, id)| (t, pause_of(by_id.get(&id), duration_ns)))
                .collect()
        };
        for (t, kind) in gcs {
            self.rec.events.push(JvmEvent::global(t, kind));
        }
        // Within a chunk, JFR writes each thread's buffer in turn: events come in
        // time order per thread only. jscope's are in time order, and the running
        // allocation total follows that order.
        self.rec.events.sort_by_key(|e| e.ticks);
        let mut total = 0u64;
        for e in &mut self.rec.events {
            if let EventKind::Alloc {
                weight,
                allocated_total,
                ..
            } = &mut e.kind
            {
                // The allocation clock runs on the bytes samples stand for, as the agent's.
                total = total.saturating_add(*weight);
                *allocated_total = total;
            }
        }
    }

    fn drop_execution_samples(&mut self) {
        let drop: std::collections::HashSet<usize> = self.execution_samples.drain(..).collect();
        let mut i = 0;
        self.rec.samples.retain(|_| {
            i += 1;
            !drop.contains(&(i - 1))
        });
        self.rec
            .header
            .extra
            .push(("cpu_samples".into(), "jdk.CPUTimeSample".into()));
    }
}

/// One pause of a collection, named after it.
fn pause_of(collection: Option<&EventKind>, duration_ns: u64) -> EventKind {
    match collection {
        Some(&EventKind::Gc {
            collector,
            cause,
            gc_id,
            ..
        }) => EventKind::Gc {
            duration_ns,
            collector,
            cause,
            generation: 0,
            heap_before: 0,
            heap_after: 0,
            gc_id,
            concurrent: false,
        },
        _ => EventKind::gc_pause(duration_ns),
    }
}

/// Turns calls (start, end) into properly nested enter/exit events: a call that
/// starts before the previous one ends is inside it.
fn nest(thread: ThreadId, mut calls: Vec<Call>) -> TraceBatch {
    calls.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end), c.depth));
    let mut events = Vec::with_capacity(calls.len() * 2);
    let mut open: Vec<(u64, MethodId)> = Vec::new();
    let exit = |end: u64, method: MethodId| TraceEvent {
        kind: TraceKind::Exit,
        method,
        ticks: end,
        untraced: 0,
        cpu_ns: 0,
    };
    for c in calls {
        while let Some(&(end, m)) = open.last().filter(|(end, _)| *end <= c.start) {
            events.push(exit(end, m));
            open.pop();
        }
        // A call that outlasts its enclosing one (clock skew) ends with it.
        let end = open.last().map_or(c.end, |&(e, _)| c.end.min(e));
        events.push(TraceEvent {
            kind: TraceKind::Enter,
            method: c.method,
            ticks: c.start,
            untraced: 0,
            cpu_ns: 0,
        });
        open.push((end, c.method));
    }
    while let Some((end, m)) = open.pop() {
        events.push(exit(end, m));
    }
    TraceBatch {
        thread,
        has_cpu: false,
        events,
    }
}

/// JFR's thread state names as JVMTI state bits: the JDK's `STATE_*` names of
/// JVMTI states, and async-profiler's `STATE_DEFAULT` (unknown), `STATE_RUNNABLE`
/// (on CPU) and `STATE_SLEEPING` (off CPU, taken as sleeping).
pub(crate) fn state_bits(name: &str) -> u32 {
    let (alive, waiting) = (ts::ALIVE, ts::ALIVE | ts::WAITING);
    let timed = waiting | ts::WAITING_WITH_TIMEOUT;
    let untimed = waiting | ts::WAITING_INDEFINITELY;
    match name {
        "STATE_RUNNABLE" => alive | ts::RUNNABLE,
        "STATE_IN_NATIVE" => alive | ts::RUNNABLE | ts::IN_NATIVE,
        "STATE_BLOCKED" | "STATE_BLOCKED_ON_MONITOR_ENTER" => alive | ts::BLOCKED_ON_MONITOR_ENTER,
        "STATE_WAITING" => untimed,
        "STATE_IN_OBJECT_WAIT" => untimed | ts::IN_OBJECT_WAIT,
        "STATE_TIMED_WAITING" => timed,
        "STATE_IN_OBJECT_WAIT_TIMED" => timed | ts::IN_OBJECT_WAIT,
        "STATE_SLEEPING" => timed | ts::SLEEPING,
        "STATE_PARKED" => untimed | ts::PARKED,
        "STATE_PARKED_TIMED" => timed | ts::PARKED,
        "STATE_TERMINATED" => ts::TERMINATED,
        "STATE_NEW" => ts::RUNNABLE,
        _ => 0,
    }
}

/// The OS as one line: the JDK gives /etc/os-release (`PRETTY_NAME="Debian ..."`
/// among other lines), async-profiler `uname: Linux ...`.
fn os_name(text: &str) -> String {
    let pretty = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"'));
    let first = text.lines().next().unwrap_or("").trim();
    pretty
        .unwrap_or_else(|| first.strip_prefix("uname:").unwrap_or(first).trim())
        .to_string()
}

/// The architecture in a JVM version string, as `os.arch` names it: `amd64` of
/// `OpenJDK 64-Bit Server VM (17.0.15+6) for linux-amd64 JRE (17.0.15+6), built ...`.
fn arch_of(jvm_version: &str) -> Option<String> {
    let platform = jvm_version
        .split(" for ")
        .nth(1)?
        .split_whitespace()
        .next()?;
    let (_, arch) = platform.split_once('-')?;
    Some(arch.to_string()).filter(|a| !a.is_empty())
}

/// `10 ms`, `20ms`, `1 s`, `500 us`, or bare nanoseconds (async-profiler).
pub(crate) fn parse_interval(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..split].parse().ok()?;
    let scale = match s[split..].trim() {
        "" | "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    };
    Some(n * scale).filter(|&ns| ns > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arch_is_the_jvm_versions_platform_not_the_cpu_model() {
        let v = "OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1) for linux-amd64 JRE (17.0.15+6-Debian-1deb12u1), built on May  1 2025 09:21:09 by \"buildd\" with gcc 12.2.0";
        assert_eq!(arch_of(v).as_deref(), Some("amd64"));
        assert_eq!(
            arch_of("OpenJDK 64-Bit Server VM (25.0.2+10-LTS) for linux-aarch64 JRE").as_deref(),
            Some("aarch64")
        );
        assert_eq!(arch_of("OpenJDK 64-Bit Server VM"), None);
    }

    #[test]
    fn thread_states_classify_as_their_names_say() {
        use jscope_format::thread_state::{classify, StateClass};
        let class = |n| classify(state_bits(n));
        assert_eq!(class("STATE_RUNNABLE"), StateClass::Runnable);
        assert_eq!(class("STATE_IN_NATIVE"), StateClass::Native);
        assert_eq!(class("STATE_BLOCKED_ON_MONITOR_ENTER"), StateClass::Blocked);
        assert_eq!(class("STATE_IN_OBJECT_WAIT"), StateClass::Waiting);
        assert_eq!(
            class("STATE_IN_OBJECT_WAIT_TIMED"),
            StateClass::TimedWaiting
        );
        assert_eq!(class("STATE_PARKED_TIMED"), StateClass::Parked);
        assert_eq!(class("STATE_SLEEPING"), StateClass::Sleeping);
        assert_eq!(class("STATE_NEW"), StateClass::New);
        assert_eq!(class("STATE_DEFAULT"), StateClass::Unknown);
    }

    #[test]
    fn intervals_in_jfr_and_async_profiler_notation() {
        assert_eq!(parse_interval("10 ms"), Some(10_000_000));
        assert_eq!(parse_interval("20ms"), Some(20_000_000));
        assert_eq!(parse_interval("10000000"), Some(10_000_000));
        assert_eq!(parse_interval("off"), None);
        assert_eq!(parse_interval("0 ms"), None);
    }

    #[test]
    fn overlapping_calls_nest_and_close_in_order() {
        let m = |i| MethodId(i);
        let calls = vec![
            Call {
                start: 2,
                end: 4,
                method: m(2),
                depth: 2,
            },
            Call {
                start: 0,
                end: 10,
                method: m(1),
                depth: 1,
            },
            Call {
                start: 5,
                end: 12,
                method: m(3),
                depth: 2,
            },
        ];
        let b = nest(ThreadId(1), calls);
        let seq: Vec<(TraceKind, u32, u64)> = b
            .events
            .iter()
            .map(|e| (e.kind, e.method.0, e.ticks))
            .collect();
        use TraceKind::*;
        assert_eq!(
            seq,
            [
                (Enter, 1, 0),
                (Enter, 2, 2),
                (Exit, 2, 4),
                (Enter, 3, 5),
                (Exit, 3, 10),
                (Exit, 1, 10)
            ]
        );
    }
}
