//! Stacks weighted by what events measure, for allocation and lock flame graphs:
//! allocation samples by the bytes they stand for, contention by the time spent,
//! native allocations by their bytes (all, or those never freed), native lock
//! waits by their time.

use jscope_format::{EventKind, Recording};

use super::reports::AllocWeights;
use super::{class_name, EventFilter, EventType};
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
/// weighted by `what`; `total` is the sum of the weights.
pub fn weighted_stacks(rec: &Recording, filter: &EventFilter, what: EventWeight) -> StackCounts {
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
    let mut out = StackCounts::default();
    for e in f.select(rec) {
        let (stack, w) = match e.kind {
            EventKind::Alloc { stack, .. } => (stack, weights.weight(e).unwrap_or(0)),
            EventKind::MonitorBlocked {
                duration_ns, stack, ..
            } => (stack, duration_ns),
            EventKind::Park {
                duration_ns,
                blocker_class,
                stack,
                ..
            } if is_lock_blocker(&class_name(rec, blocker_class)) => (stack, duration_ns),
            EventKind::NativeLock { weight, stack, .. } => (stack, weight),
            _ => continue,
        };
        if w == 0 {
            continue;
        }
        *out.counts.entry((stack.0, e.thread.0)).or_default() += w;
        out.total += w;
    }
    out
}

/// Native allocation samples (all, or with `leaks` those never freed) by
/// stack and thread, weighted by their estimated bytes.
fn native_stacks(rec: &Recording, filter: &EventFilter, leaks: bool) -> StackCounts {
    let mut out = StackCounts::default();
    for a in super::native_allocations(rec, filter) {
        if a.weight == 0 || (leaks && !a.leaked()) {
            continue;
        }
        *out.counts.entry((a.stack.0, a.event.thread.0)).or_default() += a.weight;
        out.total += a.weight;
    }
    out
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
