//! The weighted stacks every export writes: one kind of measurement out of a
//! recording (cpu, wall or snapshot samples, allocations, lock waits, or exact
//! traces' self time), with its functions and stacks interned once.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use jscope_analysis::events::{weighted_events, EventFilter, EventWeight};
use jscope_analysis::trace::CallTree;
use jscope_analysis::{
    count_mode, kind_suffix, method_label, source_file, Mode, Selection, NO_STACK,
};
use jscope_format::thread_state::classify;
use jscope_format::{EventKind, FrameKind, MethodId, Recording, SampleMode, StackId};

use crate::ExportError;

/// What the exported values measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Cpu samples, weighted by their interval.
    Cpu,
    /// Wall-clock samples, weighted by their interval.
    Wall,
    /// Every thread of every snapshot, weighted by the snapshot interval.
    Snapshot,
    /// Sampled allocations, weighted by their size.
    Alloc,
    /// Contended monitor entries and parks, weighted by how long they blocked.
    Lock,
    /// Exact-tracing calls, weighted by their self time.
    Trace,
    /// Sampled native allocations (the agent's `nativemem`), weighted by their
    /// estimated bytes.
    NativeMem,
    /// Sampled native allocations whose blocks were still held at the end of
    /// the recording (or window): the in-use memory, by estimated bytes.
    Leak,
    /// Sampled native lock waits (the agent's `nativelock`), by estimated time.
    NativeLock,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Cpu,
        Kind::Wall,
        Kind::Snapshot,
        Kind::Alloc,
        Kind::Lock,
        Kind::Trace,
        Kind::NativeMem,
        Kind::Leak,
        Kind::NativeLock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Wall => "wall",
            Kind::Snapshot => "snapshot",
            Kind::Alloc => "alloc",
            Kind::Lock => "lock",
            Kind::Trace => "trace",
            Kind::NativeMem => "nativemem",
            Kind::Leak => "leak",
            Kind::NativeLock => "nativelock",
        }
    }

    /// The two values of every sample, (type, unit): how many events it stands
    /// for, then their weight.
    pub fn value_types(self) -> [(&'static str, &'static str); 2] {
        match self {
            Kind::Cpu => [("samples", "count"), ("cpu", "nanoseconds")],
            Kind::Wall => [("samples", "count"), ("wall", "nanoseconds")],
            // Not `wall`: a consumer merging profiles by type would add snapshots to
            // the wall samples of the same recording.
            Kind::Snapshot => [("samples", "count"), ("snapshot", "nanoseconds")],
            Kind::Alloc => [("alloc_objects", "count"), ("alloc_space", "bytes")],
            Kind::Lock => [("contentions", "count"), ("delay", "nanoseconds")],
            Kind::Trace => [("calls", "count"), ("self", "nanoseconds")],
            // Go's heap profile names for allocated and in-use memory, told
            // apart from the Java heap's (a consumer merging profiles by type
            // would add the two); the counts are samples.
            Kind::NativeMem => [
                ("native_alloc_objects", "count"),
                ("native_alloc_space", "bytes"),
            ],
            Kind::Leak => [
                ("native_inuse_objects", "count"),
                ("native_inuse_space", "bytes"),
            ],
            Kind::NativeLock => [
                ("native_contentions", "count"),
                ("native_delay", "nanoseconds"),
            ],
        }
    }

    /// The weight's unit.
    pub fn unit(self) -> &'static str {
        self.value_types()[1].1
    }

    /// Whether a stack's count (not its weight) is what collapsed stacks print,
    /// as `jscope collapsed` does for samples.
    fn collapsed_counts(self) -> bool {
        matches!(self, Kind::Cpu | Kind::Wall | Kind::Snapshot)
    }

    fn sample_mode(self) -> Option<Mode> {
        match self {
            Kind::Cpu => Some(Mode::Cpu),
            Kind::Wall => Some(Mode::Wall),
            Kind::Snapshot => Some(Mode::Snapshot),
            _ => None,
        }
    }

    /// The kind an export uses when none is asked for: traces when the recording
    /// has trace events (as the trace exports always did), else the first of cpu,
    /// wall, snapshot that has samples, else allocations, else lock waits.
    pub fn default_for(rec: &Recording) -> Option<Kind> {
        if has_kind(rec, Kind::Trace) {
            return Some(Kind::Trace);
        }
        if let Some(m) = Mode::primary(rec) {
            return Some(match m {
                Mode::Cpu => Kind::Cpu,
                Mode::Wall => Kind::Wall,
                Mode::Snapshot => Kind::Snapshot,
            });
        }
        [Kind::Alloc, Kind::Lock, Kind::NativeMem, Kind::NativeLock]
            .into_iter()
            .find(|&k| has_kind(rec, k))
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Kind, ExportError> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ExportError::UnknownKind(s.to_string()))
    }
}

/// Whether the recording holds anything of `kind` at all (before filters).
pub(crate) fn has_kind(rec: &Recording, kind: Kind) -> bool {
    match kind.sample_mode() {
        Some(m) => count_mode(rec, m) > 0,
        None if kind == Kind::Trace => rec.traces.iter().any(|b| !b.events.is_empty()),
        None if kind == Kind::Leak => has_kind(rec, Kind::NativeMem),
        None => rec.events.iter().any(|e| event_kind(&e.kind) == Some(kind)),
    }
}

/// Which kind a JVM event counts for, if any.
fn event_kind(kind: &EventKind) -> Option<Kind> {
    match kind {
        EventKind::Alloc { .. } => Some(Kind::Alloc),
        EventKind::MonitorBlocked { .. } | EventKind::Park { .. } => Some(Kind::Lock),
        EventKind::NativeAlloc { .. } => Some(Kind::NativeMem),
        EventKind::NativeLock { .. } => Some(Kind::NativeLock),
        _ => None,
    }
}

/// A method as the exports name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Function {
    /// `pkg.Class.method`, as `jscope report` labels it.
    pub name: String,
    /// `pkg.Class.method(signature)` when the signature is known, else the name.
    pub system_name: String,
    /// The class's source file; for native code (a mixed-stack frame) its library's
    /// file name (`libc.so.6`, `[kernel]`); empty when unknown.
    pub file: String,
    /// The library of native code (`libjvm.so`, `libc.so.6`, `[kernel]`); empty for
    /// Java code. pprof and OTLP write one mapping per library.
    pub lib: String,
}

/// One frame: a function and the source line executing in it (0: unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: u32,
    pub line: u32,
    /// The JIT inlined this frame into its caller (the next frame down).
    pub inlined: bool,
}

/// One observation: a stack on a thread at a moment, with its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Index into [`Profile::stacks`].
    pub stack: u32,
    pub thread: u32,
    /// The thread state class (`runnable`, `blocked`, ...), when known.
    pub state: Option<&'static str>,
    /// Nanoseconds since the start of the recording.
    pub time_ns: u64,
    /// How long the sample stands for (cpu, wall, snapshot, lock, trace), or the
    /// bytes it allocated (alloc), in [`Kind::unit`].
    pub weight: u64,
    /// The allocated class (alloc) or the class waited on (lock), when known.
    pub class: Option<String>,
    /// The request its thread served (cpu and wall samples): W3C trace id and
    /// span id.
    pub link: Option<Link>,
}

/// A sample's request as OTLP links it: (trace id, span id).
pub type Link = ([u8; 16], u64);

/// One kind of measurement out of a recording, ready to write.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub kind: Option<Kind>,
    pub functions: Vec<Function>,
    /// Frames top first.
    pub stacks: Vec<Vec<Frame>>,
    /// In time order.
    pub samples: Vec<Sample>,
    /// Thread names by thread id.
    pub threads: BTreeMap<u32, String>,
    /// Unix epoch ns of the recording's start.
    pub start_wall_ns: u64,
    pub duration_ns: u64,
    /// The sampling interval (cpu, wall, snapshot), or 0.
    pub period_ns: u64,
    pub pid: u32,
    pub command_line: String,
}

impl Profile {
    /// The selected samples of `kind` (the selection's thread, state and time
    /// filters apply; its mode is `kind`'s) out of a recording. With `annotate`,
    /// Java frames whose tier the recording knows are named with async-profiler's
    /// suffix (`_[0]` interpreted, `_[j]` JIT-compiled, `_[i]` inlined), one
    /// function per method and tier.
    pub fn of(rec: &Recording, kind: Kind, sel: &Selection, annotate: bool) -> Profile {
        if kind == Kind::Alloc {
            return Profile::of_allocations(rec, sel, annotate);
        }
        let mut b = Builder::new(rec, kind, annotate);
        match kind {
            Kind::Cpu | Kind::Wall => b.signal_samples(sel),
            Kind::Snapshot => b.snapshots(sel),
            Kind::Alloc | Kind::Lock | Kind::NativeLock => b.events(sel),
            Kind::NativeMem | Kind::Leak => b.native_allocations(sel),
            Kind::Trace => b.traces(&CallTree::of(rec, &Default::default())),
        }
        b.finish()
    }

    /// Allocation samples, each stack with the allocated class as its leaf
    /// frame as every allocation profile shows it (made by the analysis
    /// library in a copy of the recording, which its stacks are added to).
    fn of_allocations(rec: &Recording, sel: &Selection, annotate: bool) -> Profile {
        let mut shown = rec.clone();
        let events = weighted_events(&mut shown, &EventFilter::default(), EventWeight::Alloc);
        let mut b = Builder::new(&shown, Kind::Alloc, annotate);
        for e in events {
            if sel.keeps(&shown, e.thread, 0, e.ticks) {
                let class = class_name(&shown, e.class);
                b.add(e.stack, e.thread, None, e.ticks, e.weight, class);
            }
        }
        b.finish()
    }

    /// The self time of every traced call of `tree` (its hidden methods already
    /// left out), out of the recording it was built from.
    pub fn of_trace(rec: &Recording, tree: &CallTree) -> Profile {
        let mut b = Builder::new(rec, Kind::Trace, false);
        b.traces(tree);
        b.finish()
    }

    pub fn kind(&self) -> Kind {
        self.kind.unwrap_or(Kind::Cpu)
    }

    pub fn thread_name(&self, thread: u32) -> String {
        self.threads
            .get(&thread)
            .cloned()
            .unwrap_or_else(|| format!("thread {thread}"))
    }

    /// Unix epoch ns of a sample.
    pub fn wall_ns(&self, s: &Sample) -> u64 {
        self.start_wall_ns.saturating_add(s.time_ns)
    }

    /// The sum of every sample's weight.
    pub fn total_weight(&self) -> u64 {
        self.samples.iter().map(|s| s.weight).sum()
    }

    /// A stack's frames as machine locations, leaf first: each run of inlined
    /// frames goes with the frame they were inlined into, innermost first (the
    /// order pprof and OTLP give a location's lines).
    pub fn locations(&self, stack: u32) -> Vec<&[Frame]> {
        let frames = &self.stacks[stack as usize];
        let mut out = Vec::new();
        let mut start = 0;
        for (i, f) in frames.iter().enumerate() {
            if !f.inlined || i + 1 == frames.len() {
                out.push(&frames[start..=i]);
                start = i + 1;
            }
        }
        out
    }

    /// Root-first function names of a stack.
    pub fn root_first(&self, stack: u32) -> impl Iterator<Item = &str> + '_ {
        self.stacks[stack as usize]
            .iter()
            .rev()
            .map(|f| self.functions[f.function as usize].name.as_str())
    }

    /// Collapsed stacks (`root;...;leaf value`), sorted, merged by names: sample
    /// counts for cpu, wall and snapshot (as `jscope collapsed` prints them), the
    /// weight for the others.
    pub fn collapsed(&self) -> Vec<(String, u64)> {
        let counts = self.kind().collapsed_counts();
        let mut merged: BTreeMap<String, u64> = BTreeMap::new();
        for s in &self.samples {
            if self.stacks[s.stack as usize].is_empty() {
                continue;
            }
            let path = self.root_first(s.stack).collect::<Vec<_>>().join(";");
            *merged.entry(path).or_default() += if counts { 1 } else { s.weight };
        }
        merged.into_iter().filter(|(_, n)| *n > 0).collect()
    }
}

/// The name of a class (an allocated one, or a lock's), when known.
fn class_name(rec: &Recording, class: jscope_format::ClassId) -> Option<String> {
    rec.class(class)
        .map(|c| rec.string(c.name).to_string())
        .filter(|n| !n.is_empty())
}

/// Interns functions and stacks while samples are added.
struct Builder<'r> {
    rec: &'r Recording,
    profile: Profile,
    functions: HashMap<Function, u32>,
    by_method: HashMap<u32, u32>,
    stacks: HashMap<Vec<Frame>, u32>,
    by_stack_id: HashMap<u32, u32>,
    /// Name Java frames with their tier's suffix.
    annotate: bool,
    by_method_tier: HashMap<(u32, u8), u32>,
}

impl<'r> Builder<'r> {
    fn new(rec: &'r Recording, kind: Kind, annotate: bool) -> Builder<'r> {
        let period_ns = match kind {
            // A snapshot stands for the snapshot interval, not the sampling one.
            Kind::Snapshot => rec
                .header
                .extra("snapshot_interval_ns")
                .and_then(|v| v.parse().ok())
                .or_else(|| rec.snapshots.iter().map(|s| s.interval_ns).find(|&i| i > 0))
                .unwrap_or(rec.header.interval_ns),
            _ if kind.sample_mode().is_some() => rec.header.interval_ns,
            _ => 0,
        };
        Builder {
            rec,
            profile: Profile {
                kind: Some(kind),
                threads: rec
                    .threads
                    .iter()
                    .map(|(id, t)| (id.0, t.name.clone()))
                    .collect(),
                start_wall_ns: rec.header.start_wall_ns,
                duration_ns: rec.duration_ns(),
                period_ns,
                pid: rec.header.pid,
                command_line: rec.header.command_line.clone(),
                ..Profile::default()
            },
            functions: HashMap::new(),
            by_method: HashMap::new(),
            stacks: HashMap::new(),
            by_stack_id: HashMap::new(),
            annotate,
            by_method_tier: HashMap::new(),
        }
    }

    fn signal_samples(&mut self, sel: &Selection) {
        let want = match self.profile.kind() {
            Kind::Wall => SampleMode::Wall,
            _ => SampleMode::Cpu,
        };
        let rec = self.rec;
        let allowed = sel.requests.allowed(rec);
        let links: HashMap<u64, Link> = rec
            .requests
            .iter()
            .map(|r| (r.id, (r.trace_id, r.span_id)))
            .collect();
        for s in rec.samples.iter().filter(|s| s.mode == want) {
            if !sel.keeps(rec, s.thread.0, s.state, s.ticks)
                || !allowed.as_ref().is_none_or(|a| a.contains(&s.request))
            {
                continue;
            }
            let weight = if s.weight_ns > 0 {
                s.weight_ns
            } else {
                rec.header.interval_ns
            };
            self.add(s.stack, s.thread.0, Some(s.state), s.ticks, weight, None);
            if let Some(last) = self.profile.samples.last_mut() {
                last.link = links.get(&s.request).copied();
            }
        }
    }

    fn snapshots(&mut self, sel: &Selection) {
        let rec = self.rec;
        // The first snapshot has no achieved interval: it counts as the next one's.
        let first = rec
            .snapshots
            .iter()
            .map(|s| s.interval_ns)
            .find(|&i| i > 0)
            .unwrap_or(rec.header.interval_ns);
        for snap in &rec.snapshots {
            let weight = if snap.interval_ns > 0 {
                snap.interval_ns
            } else {
                first
            };
            for t in &snap.threads {
                if sel.keeps(rec, t.thread.0, t.state, snap.ticks) {
                    self.add(t.stack, t.thread.0, Some(t.state), snap.ticks, weight, None);
                }
            }
        }
    }

    fn events(&mut self, sel: &Selection) {
        let rec = self.rec;
        let kind = self.profile.kind();
        // Allocation samples count the bytes they stand for, as `jscope alloc` does.
        let alloc_weights = jscope_analysis::events::AllocWeights::of(rec);
        for e in rec
            .events
            .iter()
            .filter(|e| event_kind(&e.kind) == Some(kind))
        {
            if !sel.keeps(rec, e.thread.0, 0, e.ticks) {
                continue;
            }
            let (weight, class, stack) = match e.kind {
                EventKind::Alloc { class, stack, .. } => {
                    (alloc_weights.weight(e).unwrap_or(0), class, stack)
                }
                EventKind::MonitorBlocked {
                    duration_ns,
                    class,
                    stack,
                    ..
                } => (duration_ns, class, stack),
                EventKind::Park {
                    duration_ns,
                    blocker_class,
                    stack,
                    ..
                } => (duration_ns, blocker_class, stack),
                EventKind::NativeLock { weight, stack, .. } => {
                    (weight, jscope_format::ClassId::NONE, stack)
                }
                _ => continue,
            };
            self.add(
                stack,
                e.thread.0,
                None,
                e.ticks,
                weight,
                class_name(rec, class),
            );
        }
    }

    /// Native allocation samples by their estimated bytes: all of them, or for
    /// [`Kind::Leak`] those whose blocks were still held at the window's end.
    fn native_allocations(&mut self, sel: &Selection) {
        let rec = self.rec;
        let leaks = self.profile.kind() == Kind::Leak;
        let filter = jscope_analysis::events::EventFilter {
            to_s: sel.to_s,
            ..Default::default()
        };
        for a in jscope_analysis::events::native_allocations(rec, &filter) {
            let e = a.event;
            if !sel.keeps(rec, e.thread.0, 0, e.ticks) || (leaks && !a.leaked()) {
                continue;
            }
            let call = jscope_format::native_call_name(a.call).to_string();
            self.add(a.stack, e.thread.0, None, e.ticks, a.weight, Some(call));
        }
    }

    fn traces(&mut self, tree: &CallTree) {
        let mut path: Vec<Frame> = Vec::new();
        for t in &tree.threads {
            for n in &t.nodes {
                path.truncate(n.depth as usize);
                let function = self.trace_function(tree, n.method);
                path.push(Frame {
                    function,
                    line: 0,
                    inlined: false,
                });
                if n.self_ns == 0 {
                    continue;
                }
                let top_first: Vec<Frame> = path.iter().rev().copied().collect();
                let stack = self.intern_stack(top_first);
                self.profile.samples.push(Sample {
                    stack,
                    thread: t.thread,
                    state: None,
                    time_ns: n.enter_ns,
                    weight: n.self_ns,
                    class: None,
                    link: None,
                });
            }
        }
    }

    /// A traced method's function: the tree's label, the recording's file.
    fn trace_function(&mut self, tree: &CallTree, method: u32) -> u32 {
        if let Some(&f) = self.by_method.get(&method) {
            return f;
        }
        let name = tree.label(method).to_string();
        let f = Function {
            system_name: self.system_name(MethodId(method), &name),
            file: source_file(self.rec, MethodId(method))
                .unwrap_or("")
                .to_string(),
            name,
            lib: String::new(),
        };
        let id = self.intern_function(f);
        self.by_method.insert(method, id);
        id
    }

    fn add(
        &mut self,
        stack: StackId,
        thread: u32,
        state: Option<u32>,
        ticks: u64,
        weight: u64,
        class: Option<String>,
    ) {
        let stack = self.stack(stack);
        self.profile.samples.push(Sample {
            stack,
            thread,
            state: state.filter(|s| *s != 0).map(|s| classify(s).name()),
            time_ns: self.rec.ticks_to_ns(ticks),
            weight,
            class,
            link: None,
        });
    }

    /// The interned stack of a recording's stack id; a stack without frames
    /// is the one frame `[no_stack]`, as every view shows it.
    fn stack(&mut self, id: StackId) -> u32 {
        if let Some(&s) = self.by_stack_id.get(&id.0) {
            return s;
        }
        let mut frames: Vec<Frame> = self
            .rec
            .stack(id)
            .iter()
            .map(|f| Frame {
                function: self.frame_function(f),
                line: f.line,
                inlined: f.kind == FrameKind::Inlined,
            })
            .collect();
        if frames.is_empty() {
            frames.push(Frame {
                function: self.intern_function(Function {
                    name: NO_STACK.to_string(),
                    system_name: NO_STACK.to_string(),
                    file: String::new(),
                    lib: String::new(),
                }),
                line: 0,
                inlined: false,
            });
        }
        let s = self.intern_stack(frames);
        self.by_stack_id.insert(id.0, s);
        s
    }

    fn intern_stack(&mut self, frames: Vec<Frame>) -> u32 {
        let next = self.profile.stacks.len() as u32;
        *self.stacks.entry(frames).or_insert_with_key(|frames| {
            self.profile.stacks.push(frames.clone());
            next
        })
    }

    /// The function of a frame: its method's, or with `annotate` its method's at the
    /// frame's tier.
    fn frame_function(&mut self, f: &jscope_format::Frame) -> u32 {
        let suffix = kind_suffix(f.kind);
        let function = self.method_function(f.method);
        if !self.annotate || suffix.is_empty() {
            return function;
        }
        if let Some(&id) = self.by_method_tier.get(&(f.method.0, f.kind as u8)) {
            return id;
        }
        let mut tiered = self.profile.functions[function as usize].clone();
        tiered.name.push_str(suffix);
        let id = self.intern_function(tiered);
        self.by_method_tier.insert((f.method.0, f.kind as u8), id);
        id
    }

    fn method_function(&mut self, method: MethodId) -> u32 {
        if let Some(&f) = self.by_method.get(&method.0) {
            return f;
        }
        let name = method_label(self.rec, method);
        let lib = self.rec.native_library(method).unwrap_or("").to_string();
        let f = Function {
            system_name: self.system_name(method, &name),
            file: source_file(self.rec, method)
                .unwrap_or(lib.as_str())
                .to_string(),
            name,
            lib,
        };
        let id = self.intern_function(f);
        self.by_method.insert(method.0, id);
        id
    }

    fn system_name(&self, method: MethodId, name: &str) -> String {
        let signature = self
            .rec
            .method(method)
            .map(|m| self.rec.string(m.signature))
            .unwrap_or("");
        format!("{name}{signature}")
    }

    fn intern_function(&mut self, f: Function) -> u32 {
        let next = self.profile.functions.len() as u32;
        *self.functions.entry(f).or_insert_with_key(|f| {
            self.profile.functions.push(f.clone());
            next
        })
    }

    fn finish(mut self) -> Profile {
        self.profile.samples.sort_by_key(|s| (s.time_ns, s.thread));
        self.profile
    }
}
