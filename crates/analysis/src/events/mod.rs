//! JVM event analysis (JPMT's event traces, JX's reports): selecting events, one flat
//! row per event for scripts, reports (contended monitors, waits, GC pauses,
//! allocation by site and class, object ages, user event intervals) and event trees,
//! in which each thread's events nest inside the traced method invocation, or the
//! sample interval, during which they happened. See docs/EVENTS.md.
//!
//! ```
//! use jscope_analysis::events::{gc_report, EventFilter, EventType};
//! use jscope_format::*;
//!
//! let mut w = ChunkWriter::new();
//! for i in 0..3u64 {
//!     w.event(&JvmEvent::global(i * 100_000_000, EventKind::gc_pause((i + 1) * 1_000_000)));
//! }
//! w.end(1_000_000_000);
//! let header = Header { ticks_per_second: 1_000_000_000, ..Default::default() };
//! let mut bytes = encode_file_start(&header);
//! bytes.extend(w.finish());
//! let rec = Recording::from_bytes(&bytes).unwrap();
//!
//! let gc = gc_report(&rec, &EventFilter::default());
//! assert_eq!((gc.count, gc.total_ns, gc.max_ns), (3, 6_000_000, 3_000_000));
//! assert!((gc.wall_percent - 0.6).abs() < 1e-9);
//! let only_gc = EventFilter { types: vec![EventType::Gc], ..Default::default() };
//! assert_eq!(only_gc.rows(&rec).len(), 3);
//! ```

mod native;
mod render;
mod reports;
mod rows;
mod timeline;
mod tree;
mod weighted;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use jscope_format::{ClassId, EventKind, FieldValue, JvmEvent, Recording, StackId, ThreadId};
use serde::Serialize;

use crate::labels::method_label;
use crate::{AnalysisError, ThreadMatcher};

/// A `--type` name that is no event type or group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event type `{0}` (expected thread_start, thread_end, monitor, wait, park, gc, alloc, free, class_load, class_unload, compiled, compiled_unload, user, start_call, native_alloc, native_free, native_lock, or a group: threads, locks, classes, jit, objects, nativemem)")]
pub struct UnknownEventType(pub String);

pub use native::{
    native_allocations, native_lock_rows, native_mem_report, NativeAllocation, NativeBy,
    NativeLockRow, NativeMemReport, NativeMemRow, NativeSite,
};
pub use reports::{
    age_report, alloc_report, gc_report, live_report, lock_report, user_report, AgeBucket,
    AgeReport, AgeRow, AllocBy, AllocReport, AllocRow, AllocWeights, GcDetail, GcPause, GcReport,
    LockReport, MonitorRow, ParkRow, SiteRow, UserReport, UserRow, WaitRow,
};
pub use rows::{write_rows, EventRow, RowFormat};
pub use timeline::{timeline, GcBar, Lane, Span, Timeline, MARKER_FRAMES};
pub use tree::{event_tree, EventNode, EventTree, ThreadEvents, TreeBasis};
pub use weighted::{weighted_events, weighted_stacks, EventWeight, WeightedEvent};

/// The kinds of JVM event, as `--type` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    ThreadStart,
    ThreadEnd,
    Monitor,
    Wait,
    Park,
    Gc,
    Alloc,
    Free,
    ClassLoad,
    ClassUnload,
    Compiled,
    CompiledUnload,
    User,
    /// A traced thread's `Thread.start` call (the start/run link of tracing).
    StartCall,
    /// A sampled native allocation (`nativemem`).
    NativeAlloc,
    /// A sampled native allocation's block freed.
    NativeFree,
    /// A sampled wait for a native (pthread) lock (`nativelock`).
    NativeLock,
}

const TYPE_NAMES: [(EventType, &str); 17] = [
    (EventType::ThreadStart, "thread_start"),
    (EventType::ThreadEnd, "thread_end"),
    (EventType::Monitor, "monitor"),
    (EventType::Wait, "wait"),
    (EventType::Park, "park"),
    (EventType::Gc, "gc"),
    (EventType::Alloc, "alloc"),
    (EventType::Free, "free"),
    (EventType::ClassLoad, "class_load"),
    (EventType::ClassUnload, "class_unload"),
    (EventType::Compiled, "compiled"),
    (EventType::CompiledUnload, "compiled_unload"),
    (EventType::User, "user"),
    (EventType::StartCall, "start_call"),
    (EventType::NativeAlloc, "native_alloc"),
    (EventType::NativeFree, "native_free"),
    (EventType::NativeLock, "native_lock"),
];

/// Names that stand for several types, so `--type threads` reads naturally.
const GROUPS: [(&str, &[EventType]); 6] = [
    (
        "threads",
        &[
            EventType::ThreadStart,
            EventType::ThreadEnd,
            EventType::StartCall,
        ],
    ),
    (
        "locks",
        &[
            EventType::Monitor,
            EventType::Wait,
            EventType::Park,
            EventType::NativeLock,
        ],
    ),
    (
        "nativemem",
        &[EventType::NativeAlloc, EventType::NativeFree],
    ),
    ("classes", &[EventType::ClassLoad, EventType::ClassUnload]),
    ("jit", &[EventType::Compiled, EventType::CompiledUnload]),
    ("objects", &[EventType::Alloc, EventType::Free]),
];

impl EventType {
    pub const ALL: [EventType; 17] = [
        EventType::ThreadStart,
        EventType::ThreadEnd,
        EventType::Monitor,
        EventType::Wait,
        EventType::Park,
        EventType::Gc,
        EventType::Alloc,
        EventType::Free,
        EventType::ClassLoad,
        EventType::ClassUnload,
        EventType::Compiled,
        EventType::CompiledUnload,
        EventType::User,
        EventType::StartCall,
        EventType::NativeAlloc,
        EventType::NativeFree,
        EventType::NativeLock,
    ];

    pub fn name(self) -> &'static str {
        TYPE_NAMES
            .iter()
            .find(|(t, _)| *t == self)
            .map_or("?", |(_, n)| n)
    }

    /// The type of `e`: TYPE_NAMES lists one type per kind in the order of the
    /// format's event table (`types_follow_the_format_event_table` checks), so
    /// no name is compared.
    pub fn of(e: &JvmEvent) -> EventType {
        TYPE_NAMES[e.kind.index()].0
    }

    /// Parses one name or group (`threads`, `locks`, `classes`, `jit`, `objects`,
    /// `nativemem`);
    /// `blocked` and `lock` are accepted for `monitor`.
    pub fn parse_list(name: &str) -> Result<Vec<EventType>, UnknownEventType> {
        let n = name.trim().to_ascii_lowercase().replace('-', "_");
        if let Some((_, types)) = GROUPS.iter().find(|(g, _)| *g == n) {
            return Ok(types.to_vec());
        }
        Ok(vec![n.parse()?])
    }
}

impl FromStr for EventType {
    type Err = UnknownEventType;

    fn from_str(s: &str) -> Result<EventType, UnknownEventType> {
        let n = s.trim().to_ascii_lowercase();
        let n = match n.as_str() {
            "blocked" | "lock" | "contended" => "monitor",
            "object_free" => "free",
            other => other,
        };
        TYPE_NAMES
            .iter()
            .find(|(_, name)| *name == n)
            .map(|(t, _)| *t)
            .ok_or_else(|| UnknownEventType(s.to_string()))
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which events an analysis looks at. The default selects every event.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Empty: every type.
    pub types: Vec<EventType>,
    /// Threads by name (substring or glob). Process-wide events (GC, frees, JIT,
    /// class unloads) have no thread and are left out when this is set.
    pub thread: Option<ThreadMatcher>,
    /// Keeps events with a frame of their stack whose `pkg.Class.method` label
    /// matches (substring or glob). A free looks at its allocation's stack; other
    /// events without a stack at the thread's traced invocations, or else its
    /// sampled stack, at that moment.
    pub method: Option<ThreadMatcher>,
    /// Seconds since the start of the recording, inclusive.
    pub from_s: Option<f64>,
    /// Seconds since the start of the recording, exclusive.
    pub to_s: Option<f64>,
    /// Only events their thread recorded while serving slow requests, or the
    /// named ones (allocations, monitor blocks, waits and parks carry their
    /// request; other kinds none, so a request filter leaves them out).
    pub requests: crate::RequestFilter,
}

impl EventFilter {
    pub fn validate(&self) -> Result<(), AnalysisError> {
        match (self.from_s, self.to_s) {
            (Some(from), Some(to)) if from > to => Err(AnalysisError::EmptyWindow { from, to }),
            _ => Ok(()),
        }
    }

    /// The selected events, in time order (the recording order is per chunk and
    /// events that last are written when they end).
    pub fn select<'r>(&self, rec: &'r Recording) -> Vec<&'r JvmEvent> {
        let scope = self.method.as_ref().map(|m| MethodScope::new(rec, m));
        let allowed = self.requests.allowed(rec);
        let mut out: Vec<&JvmEvent> = rec
            .events
            .iter()
            .filter(|e| {
                self.accepts_type(e)
                    && self.accepts_thread(rec, e.thread.0)
                    && self.accepts_time(rec, e.ticks)
                    && allowed.as_ref().is_none_or(|a| a.contains(&e.request()))
                    && scope.as_ref().is_none_or(|s| s.contains(e))
            })
            .collect();
        out.sort_by_key(|e| e.ticks);
        out
    }

    fn accepts_type(&self, e: &JvmEvent) -> bool {
        self.types.is_empty() || self.types.contains(&EventType::of(e))
    }

    fn accepts_thread(&self, rec: &Recording, thread: u32) -> bool {
        let Some(m) = &self.thread else {
            return true;
        };
        rec.thread(ThreadId(thread))
            .is_some_and(|t| m.matches(&t.name))
    }

    fn accepts_time(&self, rec: &Recording, ticks: u64) -> bool {
        let s = rec.ticks_to_ns(ticks) as f64 / 1e9;
        self.from_s.is_none_or(|from| s >= from) && self.to_s.is_none_or(|to| s < to)
    }

    /// One row per selected event, in time order.
    pub fn rows(&self, rec: &Recording) -> Vec<EventRow> {
        let (ages, weights) = (rows::Ages::of(rec), AllocWeights::of(rec));
        let mut user = rows::UserPairs::default();
        self.select(rec)
            .into_iter()
            .map(|e| EventRow::of(rec, e, &ages, weights, &mut user))
            .collect()
    }
}

/// What `--method` looks at: an event's own stack; for a free, its allocation's
/// stack; for other events without a stack, the thread's traced invocations or
/// sampled stack at that moment (as the event tree nests it).
struct MethodScope<'r> {
    rec: &'r Recording,
    matcher: &'r ThreadMatcher,
    ages: rows::Ages,
    contexts: tree::Contexts,
}

impl<'r> MethodScope<'r> {
    fn new(rec: &'r Recording, matcher: &'r ThreadMatcher) -> Self {
        MethodScope {
            rec,
            matcher,
            ages: rows::Ages::of(rec),
            contexts: tree::Contexts::of(rec),
        }
    }

    fn contains(&self, e: &JvmEvent) -> bool {
        let stack = match e.kind {
            EventKind::ObjectFree { object, .. } => {
                self.ages.0.get(&object).map_or(StackId::NONE, |b| b.stack)
            }
            _ => stack_of(e),
        };
        let frames = self.rec.stack(stack);
        if !frames.is_empty() {
            return frames
                .iter()
                .any(|f| self.matcher.matches(&method_label(self.rec, f.method)));
        }
        let ns = self.rec.ticks_to_ns(e.ticks);
        self.contexts
            .labels(e.thread.0, ns)
            .iter()
            .any(|l| self.matcher.matches(l))
    }
}

/// The stack an event carries; none when its kind has no stack.
pub fn stack_of(e: &JvmEvent) -> StackId {
    match e.field("stack") {
        Some(FieldValue::Stack(stack)) => stack,
        _ => StackId::NONE,
    }
}

/// A class's name, `[unknown]` when the id is 0 or not defined.
pub(crate) fn class_name(rec: &Recording, class: ClassId) -> String {
    match rec.class(class) {
        Some(c) if !class.is_none() => rec.string(c.name).to_string(),
        _ => "[unknown]".to_string(),
    }
}

/// `pkg.Class.method:line` of a stack's top frame; `[no stack]` when it has none.
pub(crate) fn site_of(rec: &Recording, stack: StackId) -> String {
    match rec.stack(stack).first() {
        Some(f) if f.line > 0 => format!("{}:{}", method_label(rec, f.method), f.line),
        Some(f) => method_label(rec, f.method),
        None => "[no stack]".to_string(),
    }
}

/// Frame labels of a stack, top first.
pub(crate) fn frames_of(rec: &Recording, stack: StackId) -> Vec<String> {
    rec.stack(stack)
        .iter()
        .map(|f| {
            let m = method_label(rec, f.method);
            if f.line > 0 {
                format!("{m}:{}", f.line)
            } else {
                m
            }
        })
        .collect()
}

/// The thread's name, or `#id` when it was never defined.
pub(crate) fn thread_name(rec: &Recording, thread: ThreadId) -> String {
    match rec.thread(thread) {
        Some(t) => t.name.clone(),
        None if thread.is_none() => String::new(),
        None => format!("#{thread}"),
    }
}

#[cfg(test)]
mod type_table {
    use super::*;
    use jscope_format::EVENT_KINDS;

    #[test]
    fn types_follow_the_format_event_table() {
        assert_eq!(TYPE_NAMES.len(), EVENT_KINDS.len());
        for (i, (kind, (_, name))) in EVENT_KINDS.iter().zip(TYPE_NAMES).enumerate() {
            assert_eq!(kind.name, name, "entry {i}");
        }
    }
}
