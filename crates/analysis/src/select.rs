//! Sample selection: which stack samples an analysis looks at.
//!
//! Cpu and wall samples come from the signal samplers; snapshot mode contributes
//! one sample per thread per snapshot, so every view works on snapshots too.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use jscope_format::thread_state::{classify, StateClass};
use jscope_format::{Recording, Sample, SampleMode, Snapshot, ThreadId};
use serde::{Deserialize, Serialize};

use crate::{AnalysisError, ThreadMatcher};

/// Where a stack sample came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Cpu,
    Wall,
    Snapshot,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Cpu, Mode::Wall, Mode::Snapshot];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Cpu => "cpu",
            Mode::Wall => "wall",
            Mode::Snapshot => "snapshot",
        }
    }

    /// The mode a stack sample of `mode` counts under.
    pub fn of_sample(mode: SampleMode) -> Mode {
        match mode {
            SampleMode::Cpu => Mode::Cpu,
            SampleMode::Wall => Mode::Wall,
        }
    }

    /// The mode an analysis uses when none is asked for: the first of cpu,
    /// wall, snapshot that has samples. Mixing modes would count the same
    /// moment twice, so a selection always looks at exactly one.
    pub fn primary(rec: &Recording) -> Option<Mode> {
        Mode::ALL.into_iter().find(|&m| count_mode(rec, m) > 0)
    }
}

/// Number of stack samples of `mode` (snapshot threads count one each).
pub fn count_mode(rec: &Recording, mode: Mode) -> u64 {
    match mode {
        Mode::Snapshot => rec.snapshots.iter().map(|s| s.threads.len() as u64).sum(),
        m => rec
            .samples
            .iter()
            .filter(|s| Mode::of_sample(s.mode) == m)
            .count() as u64,
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = AnalysisError;

    fn from_str(s: &str) -> Result<Mode, AnalysisError> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| AnalysisError::UnknownMode(s.to_string()))
    }
}

/// Which thread a sample taken on a carrier running a virtual thread (JDK 21+)
/// counts for: the virtual thread (default: what ran) or its carrier (where it
/// ran: per platform thread, as before virtual threads were told apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadGrouping {
    #[default]
    Virtual,
    Carrier,
}

impl FromStr for ThreadGrouping {
    type Err = AnalysisError;

    fn from_str(s: &str) -> Result<ThreadGrouping, AnalysisError> {
        match s.to_ascii_lowercase().as_str() {
            "virtual" => Ok(ThreadGrouping::Virtual),
            "carrier" => Ok(ThreadGrouping::Carrier),
            _ => Err(AnalysisError::UnknownGrouping(s.to_string())),
        }
    }
}

/// One stack observed on one thread at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackSample {
    pub mode: Mode,
    /// A virtual thread's, when one ran on a carrier (see [`ThreadGrouping`]).
    pub thread: u32,
    /// The carrier a virtual `thread` ran on; 0 for a platform thread.
    pub carrier: u32,
    pub ticks: u64,
    pub stack: u32,
    /// JVMTI thread state bits; 0 when unknown.
    pub state: u32,
    /// The request its thread served, 0 for none (snapshots: always 0).
    pub request: u64,
}

impl StackSample {
    fn from_sample(s: &Sample) -> StackSample {
        StackSample {
            mode: Mode::of_sample(s.mode),
            thread: s.thread.0,
            carrier: s.carrier.0,
            ticks: s.ticks,
            stack: s.stack.0,
            state: s.state,
            request: s.request,
        }
    }

    fn from_snapshot(snap: &Snapshot) -> impl Iterator<Item = StackSample> + '_ {
        snap.threads.iter().map(move |t| StackSample {
            mode: Mode::Snapshot,
            thread: t.thread.0,
            carrier: t.carrier.0,
            ticks: snap.ticks,
            stack: t.stack.0,
            state: t.state,
            request: 0,
        })
    }
}

/// Parses a thread state class name as the CLI and users write it.
pub fn parse_state(name: &str) -> Result<StateClass, AnalysisError> {
    name.trim()
        .to_ascii_lowercase()
        .parse()
        .map_err(|_| AnalysisError::UnknownState(name.to_string()))
}

/// A filter over a recording's samples. The default selects every sample of
/// the recording's primary mode.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `None`: [`Mode::primary`].
    pub mode: Option<Mode>,
    pub thread: Option<ThreadMatcher>,
    /// Empty: any state.
    pub states: Vec<StateClass>,
    /// Seconds since the start of the recording, inclusive.
    pub from_s: Option<f64>,
    /// Seconds since the start of the recording, exclusive.
    pub to_s: Option<f64>,
    /// Whether virtual threads' samples count for them or their carriers.
    pub group: ThreadGrouping,
    /// Only samples taken while slow requests, or one request, were served.
    pub requests: crate::RequestFilter,
}

impl Selection {
    /// Checks the window; other fields are valid by construction.
    pub fn validate(&self) -> Result<(), AnalysisError> {
        match (self.from_s, self.to_s) {
            (Some(from), Some(to)) if from > to => Err(AnalysisError::EmptyWindow { from, to }),
            _ => Ok(()),
        }
    }

    /// The mode this selection looks at in `rec`, if any samples exist.
    pub fn mode_in(&self, rec: &Recording) -> Option<Mode> {
        self.mode.or_else(|| Mode::primary(rec))
    }

    /// The selected samples in recording order (signal samples, then snapshots).
    pub fn samples<'r>(&'r self, rec: &'r Recording) -> impl Iterator<Item = StackSample> + 'r {
        let mode = self.mode_in(rec);
        let signal = rec
            .samples
            .iter()
            .map(StackSample::from_sample)
            .filter(move |s| Some(s.mode) == mode);
        let snapshots = rec
            .snapshots
            .iter()
            .filter(move |_| mode == Some(Mode::Snapshot))
            .flat_map(StackSample::from_snapshot);
        let group = self.group;
        let allowed = self.requests.allowed(rec);
        signal
            .chain(snapshots)
            .map(move |mut s| {
                if group == ThreadGrouping::Carrier && s.carrier != 0 {
                    s.thread = std::mem::take(&mut s.carrier);
                }
                s
            })
            .filter(move |s| self.accepts(rec, s))
            .filter(move |s| allowed.as_ref().is_none_or(|a| a.contains(&s.request)))
    }

    /// Selected samples counted per distinct stack, which is all most views need.
    pub fn stack_counts(&self, rec: &Recording) -> StackCounts {
        StackCounts::from_samples(self.samples(rec))
    }

    fn accepts(&self, rec: &Recording, s: &StackSample) -> bool {
        self.keeps(rec, s.thread, s.state, s.ticks)
    }

    /// Whether something seen on `thread` in JVMTI `state` at `ticks` passes the
    /// thread, state and time filters (the mode aside), for views over other
    /// weighted things than stack samples (allocations, lock waits, sample weights).
    pub fn keeps(&self, rec: &Recording, thread: u32, state: u32, ticks: u64) -> bool {
        self.accepts_thread(rec, thread)
            && self.accepts_state(state)
            && self.accepts_time(rec, ticks)
    }

    fn accepts_thread(&self, rec: &Recording, thread: u32) -> bool {
        let Some(matcher) = &self.thread else {
            return true;
        };
        rec.threads
            .get(&ThreadId(thread))
            .is_some_and(|t| matcher.matches(&t.name))
    }

    fn accepts_state(&self, state: u32) -> bool {
        self.states.is_empty() || self.states.contains(&classify(state))
    }

    fn accepts_time(&self, rec: &Recording, ticks: u64) -> bool {
        let s = rec.ticks_to_ns(ticks) as f64 / 1e9;
        self.from_s.is_none_or(|from| s >= from) && self.to_s.is_none_or(|to| s < to)
    }
}

/// How many selected samples saw each distinct (stack, thread) pair.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackCounts {
    pub total: u64,
    /// Keyed by (stack id, thread id).
    pub counts: BTreeMap<(u32, u32), u64>,
}

impl StackCounts {
    pub fn from_samples(samples: impl IntoIterator<Item = StackSample>) -> StackCounts {
        let mut out = StackCounts::default();
        for s in samples {
            *out.counts.entry((s.stack, s.thread)).or_default() += 1;
            out.total += 1;
        }
        out
    }

    /// Counts per stack id, all threads together.
    pub fn by_stack(&self) -> BTreeMap<u32, u64> {
        let mut out = BTreeMap::new();
        for (&(stack, _), &n) in &self.counts {
            *out.entry(stack).or_default() += n;
        }
        out
    }
}
