//! Collapsed stacks: one line per distinct stack, root first, `a;b;c count`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use jscope_format::{FrameKind, Recording, StackId, ThreadId};

use crate::labels::Labeler;
use crate::StackCounts;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollapseOptions {
    /// Label frames `pkg.Class.method:123` instead of `pkg.Class.method`.
    pub lines: bool,
    /// Put a `[thread name]` frame at the root of every stack.
    pub thread_roots: bool,
    /// Java frames whose tier is known carry async-profiler's suffixes (`_[0]`
    /// interpreted, `_[j]` JIT-compiled, `_[i]` inlined), so one method run at two
    /// tiers is two frames. Kernel frames always end in `_[k]`.
    pub annotate: bool,
}

/// Distinct root-first stacks with their sample counts, sorted by frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collapsed {
    pub stacks: Vec<(Vec<String>, u64)>,
}

/// Folds counted stacks into labelled stacks. Different stack ids can collapse
/// to the same labels (line numbers dropped, overloads), so counts are merged.
/// Samples without any frame are left out: they have nothing to draw.
pub fn collapse(rec: &Recording, counts: &StackCounts, opts: CollapseOptions) -> Collapsed {
    let labeler = Labeler {
        rec,
        lines: opts.lines,
    };
    let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (&(stack, thread), &n) in &counts.counts {
        let mut frames = if opts.annotate {
            rec.stack(StackId(stack))
                .iter()
                .rev()
                .map(|f| labeler.frame(f) + kind_suffix(f.kind))
                .collect()
        } else {
            labeler.root_first(stack)
        };
        if frames.is_empty() {
            continue;
        }
        if opts.thread_roots {
            frames.insert(0, thread_root(rec, thread));
        }
        *merged.entry(frames).or_default() += n;
    }
    Collapsed {
        stacks: merged.into_iter().collect(),
    }
}

/// async-profiler's annotation of a frame's kind in collapsed stacks; empty where the
/// label says it already (kernel `_[k]`, native `symbol [lib]`) or the tier is unknown.
pub fn kind_suffix(kind: FrameKind) -> &'static str {
    match kind {
        FrameKind::Interpreted => "_[0]",
        FrameKind::Compiled => "_[j]",
        FrameKind::Inlined => "_[i]",
        _ => "",
    }
}

fn thread_root(rec: &Recording, thread: u32) -> String {
    match rec.threads.get(&ThreadId(thread)) {
        Some(t) => format!("[{}]", t.name),
        None => format!("[thread {thread}]"),
    }
}

impl Collapsed {
    /// Writes `frame;frame;frame count` lines, the format flame-graph tools read.
    pub fn write_to(&self, mut w: impl Write) -> io::Result<()> {
        for (frames, n) in &self.stacks {
            writeln!(w, "{} {n}", frames.join(";"))?;
        }
        Ok(())
    }

    pub fn total(&self) -> u64 {
        self.stacks.iter().map(|(_, n)| n).sum()
    }
}
