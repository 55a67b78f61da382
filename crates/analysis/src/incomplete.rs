//! Samples whose stack does not name the code that ran: the walk found no Java
//! frame (a one-frame stack such as `[unknown_java]` or `[no_java_frame]`),
//! stopped part way (the frames found, then a marker such as
//! `[break_compiled]`), or found no frame at all (shown as `[no_stack]`).
//! Counted here, over the samples a view shows, so every reader can say when
//! they weigh on a profile.

use std::collections::{BTreeMap, HashMap};

use jscope_format::{Frame, FrameKind, Recording, StackId};
use serde::Serialize;

use crate::labels::NO_STACK;
use crate::stats::{group_digits, percent};
use crate::{Mode, StackCounts};

/// Readers warn when incomplete stacks are more than this share of a profile.
pub const WARN_PERCENT: f64 = 1.0;

/// How many of a profile's samples have an unknown, broken or empty stack,
/// and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IncompleteStacks {
    /// What the samples are of.
    pub mode: Option<Mode>,
    /// The profile's samples.
    pub samples: u64,
    /// Those of them whose stack is unknown, broken or empty.
    pub incomplete: u64,
    /// By reason: a marker frame's name without its brackets (`unknown_java`,
    /// `break_compiled`), or `no_stack`.
    pub reasons: BTreeMap<String, u64>,
}

/// The incomplete stacks among `counts`, samples of `mode` selected from `rec`.
/// An empty stack counts for cpu and wall samples, whose walk found nothing;
/// a snapshot's thread with no Java frame (one the JVM runs no Java code on,
/// such as `Signal Dispatcher`) is shown as it was, not as a failure.
pub fn incomplete_stacks(
    rec: &Recording,
    mode: Option<Mode>,
    counts: &StackCounts,
) -> IncompleteStacks {
    let empty_fails = mode != Some(Mode::Snapshot);
    let mut out = IncompleteStacks {
        mode,
        samples: counts.total,
        ..IncompleteStacks::default()
    };
    let mut reason_of: HashMap<u32, Option<&str>> = HashMap::new();
    for (&(stack, _), &n) in &counts.counts {
        let reason = *reason_of
            .entry(stack)
            .or_insert_with(|| stack_reason(rec, StackId(stack), empty_fails));
        if let Some(reason) = reason {
            out.incomplete += n;
            *out.reasons.entry(reason.to_string()).or_default() += n;
        }
    }
    out
}

/// Why a stack is incomplete, if it is.
fn stack_reason(rec: &Recording, stack: StackId, empty_fails: bool) -> Option<&str> {
    let frames = rec.stack(stack);
    if frames.is_empty() {
        return empty_fails.then(|| NO_STACK.trim_matches(['[', ']']));
    }
    frames.iter().find_map(|f| marker_reason(rec, f))
}

/// The reason a marker frame names: the agent writes why a walk stopped as a
/// frame of kind unknown named `[reason]`, a method of no library.
pub fn marker_reason<'r>(rec: &'r Recording, f: &Frame) -> Option<&'r str> {
    if f.kind != FrameKind::Unknown || rec.native_library(f.method) != Some("") {
        return None;
    }
    let name = rec.string(rec.method(f.method)?.name);
    name.strip_prefix('[')?.strip_suffix(']')
}

impl IncompleteStacks {
    /// Adds another profile's counts (another JVM's, for a merged view).
    pub fn add(&mut self, other: &IncompleteStacks) {
        self.mode = self.mode.or(other.mode);
        self.samples += other.samples;
        self.incomplete += other.incomplete;
        for (reason, n) in &other.reasons {
            *self.reasons.entry(reason.clone()).or_default() += n;
        }
    }

    /// The incomplete share of the samples, in percent.
    pub fn percent(&self) -> f64 {
        percent(self.incomplete, self.samples)
    }

    /// One line for readers to show when incomplete stacks are more than
    /// [`WARN_PERCENT`] of the profile, e.g. `4.2% of 1,945 cpu samples have no
    /// complete Java stack (unknown_java 144, no_stack 3); see jscope info`.
    pub fn warning(&self) -> Option<String> {
        if self.samples == 0 || self.percent() <= WARN_PERCENT {
            return None;
        }
        let mut reasons: Vec<(&String, &u64)> = self.reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let reasons: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let samples = match self.mode {
            Some(m) => format!("{m} samples"),
            None => "samples".to_string(),
        };
        Some(format!(
            "{:.1}% of {} {samples} have no complete Java stack ({}); see jscope info",
            self.percent(),
            group_digits(self.samples),
            reasons.join(", ")
        ))
    }
}
