//! Hot methods: where samples land (self) and which methods they pass through (total).

use std::collections::{HashMap, HashSet};
use std::fmt;

use jscope_format::Recording;
use serde::{Deserialize, Serialize};

use crate::labels::Labeler;
use crate::stats::percent;
use crate::{Mode, StackCounts};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotMethod {
    /// `pkg.Class.method`; overloads share a row, as they share a flame-graph frame.
    pub method: String,
    /// Samples with this method on top of the stack.
    pub self_samples: u64,
    /// Samples with this method anywhere on the stack, once per stack even when recursive.
    pub total_samples: u64,
    pub self_percent: f64,
    pub total_percent: f64,
}

/// The hot-methods table, sorted by self samples, then total, then name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotMethods {
    pub mode: Option<Mode>,
    /// Selected samples, the base of the percentages (including samples without a stack).
    pub samples: u64,
    pub methods: Vec<HotMethod>,
}

#[derive(Default)]
struct Tally {
    self_samples: u64,
    total_samples: u64,
}

pub fn hot_methods(rec: &Recording, mode: Option<Mode>, counts: &StackCounts) -> HotMethods {
    let labeler = Labeler { rec, lines: false };
    let mut tallies: HashMap<String, Tally> = HashMap::new();
    for (stack, n) in counts.by_stack() {
        tally_stack(&labeler, stack, n, &mut tallies);
    }
    ranked(mode, counts.total, tallies)
}

/// The table of `tallies` over `samples` selected samples: percentages, and rows
/// by self samples, then total, then name.
fn ranked(mode: Option<Mode>, samples: u64, tallies: HashMap<String, Tally>) -> HotMethods {
    let mut methods: Vec<HotMethod> = tallies
        .into_iter()
        .map(|(method, t)| HotMethod {
            method,
            self_samples: t.self_samples,
            total_samples: t.total_samples,
            self_percent: percent(t.self_samples, samples),
            total_percent: percent(t.total_samples, samples),
        })
        .collect();
    methods.sort_by(|a, b| {
        (b.self_samples, b.total_samples)
            .cmp(&(a.self_samples, a.total_samples))
            .then_with(|| a.method.cmp(&b.method))
    });
    HotMethods {
        mode,
        samples,
        methods,
    }
}

fn tally_stack(labeler: &Labeler, stack: u32, n: u64, tallies: &mut HashMap<String, Tally>) {
    let labels = labeler.root_first(stack);
    if let Some(top) = labels.last() {
        tallies.entry(top.clone()).or_default().self_samples += n;
    }
    let unique: HashSet<String> = labels.into_iter().collect();
    for label in unique {
        tallies.entry(label).or_default().total_samples += n;
    }
}

impl HotMethods {
    /// Several tables (e.g. one per JVM) as one: rows merged by method name, the
    /// percentages over all their samples, the first table's mode that has one.
    /// Give whole tables: rows cut off by [`truncate`](HotMethods::truncate) are
    /// missing from the sums.
    pub fn merge(tables: impl IntoIterator<Item = HotMethods>) -> HotMethods {
        let (mut mode, mut samples) = (None, 0);
        let mut tallies: HashMap<String, Tally> = HashMap::new();
        for t in tables {
            mode = mode.or(t.mode);
            samples += t.samples;
            for m in t.methods {
                let e = tallies.entry(m.method).or_default();
                e.self_samples += m.self_samples;
                e.total_samples += m.total_samples;
            }
        }
        ranked(mode, samples, tallies)
    }

    /// Keeps the first `n` rows.
    pub fn truncate(&mut self, n: usize) {
        self.methods.truncate(n);
    }
}

impl fmt::Display for HotMethods {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = self.mode.map_or("none", Mode::name);
        writeln!(f, "{} samples ({mode})", self.samples)?;
        writeln!(
            f,
            "{:>8} {:>7} {:>8} {:>7}  method",
            "self", "self%", "total", "total%"
        )?;
        for m in &self.methods {
            writeln!(
                f,
                "{:>8} {:>6.2}% {:>8} {:>6.2}%  {}",
                m.self_samples, m.self_percent, m.total_samples, m.total_percent, m.method
            )?;
        }
        Ok(())
    }
}
