//! Stacks weighted by what events measure, for allocation and lock flame graphs:
//! allocation samples by the bytes they stand for, contention by the time spent,
//! native allocations by their bytes (all, or those never freed), native lock
//! waits by their time.

use jscope_format::{ClassId, EventKind, Recording, StackId};

use super::reports::AllocWeights;
use super::{class_name, EventFilter, EventType};
use crate::synthetic::AllocationStacks;
use crate::StackCounts;

/// What an event flame graph weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventWeight {
    /// Allocation samples' stacks, weighted by their estimated bytes.
    Alloc,
    /// Contention, in ns: time blocked entering `synchronized` (monitor events)
    /// plus parks on a `java.util.concurrent.locks` synchronizer (a lock's
    /// acquisition). Waits (`Object.wait`, `Condition.await`) and other parks are
    /// left out: they wait for work or a signal, not for a lock.
    Lock,
    /// Native allocation samples, weighted by their estimated bytes.
    NativeMem,
    /// Native allocation samples whose blocks were not freed by the end of
    /// the recording (or of the window), weighted by their estimated bytes.
    Leak,
    /// Native (pthread) lock waits, weighted by their estimated time.
    NativeLock,
}

impl EventWeight {
    /// `alloc`, `lock` (or `locks`); `None` for anything else (a sampling mode).
    pub fn parse(s: &str) -> Option<EventWeight> {
        match s.trim().to_ascii_lowercase().as_str() {
            "alloc" | "allocation" | "allocations" => Some(EventWeight::Alloc),
            "lock" | "locks" | "contention" => Some(EventWeight::Lock),
            "nativemem" | "native_mem" | "malloc" => Some(EventWeight::NativeMem),
            "leak" | "leaks" | "inuse" | "in_use" => Some(EventWeight::Leak),
            "nativelock" | "native_lock" | "nativelocks" => Some(EventWeight::NativeLock),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EventWeight::Alloc => "alloc",
            EventWeight::Lock => "lock",
            EventWeight::NativeMem => "nativemem",
            EventWeight::Leak => "leak",
            EventWeight::NativeLock => "nativelock",
        }
    }

    /// What the weights count, for a graph's subtitle.
    pub fn unit(self) -> &'static str {
        match self {
            EventWeight::Alloc => "bytes allocated (estimated)",
            EventWeight::Lock => "ns of contention",
            EventWeight::NativeMem => "native bytes allocated (estimated)",
            EventWeight::Leak => "native bytes not freed (estimated)",
            EventWeight::NativeLock => "ns waiting for native locks (estimated)",
        }
    }
}

/// Whether a park's blocker is a lock's synchronizer (not a condition queue).
fn is_lock_blocker(name: &str) -> bool {
    let dotted = name.replace('/', ".");
    dotted.starts_with("java.util.concurrent.locks.") && !dotted.contains("ConditionObject")
}

/// The selected events' stacks, keyed by (stack, thread) as sample counts are,
/// weighted by `what`; `total` is the sum of the weights. An allocation's
/// stack has the allocated class as its leaf frame ([`AllocationStacks`]),
/// added to `rec`.
pub fn weighted_stacks(
    rec: &mut Recording,
    filter: &EventFilter,
    what: EventWeight,
) -> StackCounts {
    let mut out = StackCounts::default();
    for e in weighted_events(rec, filter, what) {
        *out.counts.entry((e.stack.0, e.thread)).or_default() += e.weight;
        out.total += e.weight;
    }
    out
}

/// One selected event with the stack a profile shows for it and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightedEvent {
    pub thread: u32,
    pub ticks: u64,
    /// An allocation's with the allocated class as its leaf frame.
    pub stack: StackId,
    /// Estimated bytes (alloc) or ns of contention (lock); never 0.
    pub weight: u64,
    /// The allocated class, or the class of the lock waited for.
    pub class: ClassId,
}

/// The events a profile of `what` weighs, in recording order, each with the
/// stack the profile shows: every reader of allocation profiles (flame graphs,
/// collapsed stacks, exports) takes its stacks from here, so the allocated
/// class is the leaf frame in each of them. The stacks this makes are added
/// to `rec`.
pub fn weighted_events(
    rec: &mut Recording,
    filter: &EventFilter,
    what: EventWeight,
) -> Vec<WeightedEvent> {
    let mut events = picked_events(rec, filter, what);
    if what == EventWeight::Alloc {
        let mut leaves = AllocationStacks::new();
        for e in &mut events {
            e.stack = leaves.stack(rec, e.stack, e.class);
        }
    }
    events
}

/// The selected events with their recorded stacks.
fn picked_events(rec: &Recording, filter: &EventFilter, what: EventWeight) -> Vec<WeightedEvent> {
    let types = match what {
        EventWeight::Alloc => vec![EventType::Alloc],
        EventWeight::Lock => vec![EventType::Monitor, EventType::Park],
        EventWeight::NativeLock => vec![EventType::NativeLock],
        EventWeight::NativeMem | EventWeight::Leak => {
            return native_stacks(rec, filter, what == EventWeight::Leak)
        }
    };
    let f = EventFilter {
        types,
        ..filter.clone()
    };
    let weights = AllocWeights::of(rec);
    let mut out = Vec::new();
    for e in f.select(rec) {
        let (stack, weight, class) = match e.kind {
            EventKind::Alloc { stack, class, .. } => (stack, weights.weight(e).unwrap_or(0), class),
            EventKind::MonitorBlocked {
                duration_ns,
                stack,
                class,
                ..
            } => (stack, duration_ns, class),
            EventKind::Park {
                duration_ns,
                blocker_class,
                stack,
                ..
            } if is_lock_blocker(&class_name(rec, blocker_class)) => {
                (stack, duration_ns, blocker_class)
            }
            EventKind::NativeLock { weight, stack, .. } => (stack, weight, ClassId(0)),
            _ => continue,
        };
        if weight == 0 {
            continue;
        }
        out.push(WeightedEvent {
            thread: e.thread.0,
            ticks: e.ticks,
            stack,
            weight,
            class,
        });
    }
    out
}

/// Native allocation samples (all, or with `leaks` those never freed),
/// weighted by their estimated bytes.
fn native_stacks(rec: &Recording, filter: &EventFilter, leaks: bool) -> Vec<WeightedEvent> {
    super::native_allocations(rec, filter)
        .into_iter()
        .filter(|a| a.weight != 0 && (!leaks || a.leaked()))
        .map(|a| WeightedEvent {
            thread: a.event.thread.0,
            ticks: a.event.ticks,
            stack: a.stack,
            weight: a.weight,
            class: ClassId(0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lock_blockers_are_synchronizers_not_conditions() {
        use super::is_lock_blocker;
        assert!(is_lock_blocker(
            "java.util.concurrent.locks.ReentrantLock$NonfairSync"
        ));
        assert!(is_lock_blocker(
            "java/util/concurrent/locks/ReentrantReadWriteLock$FairSync"
        ));
        assert!(!is_lock_blocker(
            "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject"
        ));
        assert!(!is_lock_blocker("java.util.concurrent.SynchronousQueue"));
        assert!(!is_lock_blocker("-"));
    }
}
