//! Collapsed stacks: one line per distinct stack, root first, `a;b;c count`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use jscope_format::{Recording, ThreadId};

use crate::labels::{Annotation, Labeler};
use crate::StackCounts;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollapseOptions {
    /// Label frames `pkg.Class.method:123` instead of `pkg.Class.method`.
    pub lines: bool,
    /// Put a `[thread name]` frame at the root of every stack.
    pub thread_roots: bool,
    /// Whether frame names carry their kind (see [`Annotation`]).
    pub annotate: Annotation,
}

/// Distinct root-first stacks with their sample counts, sorted by frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collapsed {
    pub stacks: Vec<(Vec<String>, u64)>,
}

/// Folds counted stacks into labelled stacks. Different stack ids can collapse
/// to the same labels (line numbers dropped, overloads), so counts are merged.
/// Samples without any frame count under the one frame `[no_stack]`.
pub fn collapse(rec: &Recording, counts: &StackCounts, opts: CollapseOptions) -> Collapsed {
    let labeler = Labeler {
        rec,
        lines: opts.lines,
    };
    let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (&(stack, thread), &n) in &counts.counts {
        let mut frames = labeler.annotated(stack, opts.annotate);
        if opts.thread_roots {
            frames.insert(0, thread_root(rec, thread));
        }
        *merged.entry(frames).or_default() += n;
    }
    Collapsed {
        stacks: merged.into_iter().collect(),
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
