//! Collapsed stacks: one line per distinct stack, root first, `a;b;c count`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use jscope_format::{FrameKind, Recording, ThreadId};

use crate::labels::Labeler;
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

/// How frame names carry the kind of their frame. Kernel frames always end in
/// `_[k]` and native frames name their library (`write [libc.so.6]`), whatever
/// the annotation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Annotation {
    /// Plain names: a method run at two tiers is one frame (diffs, sandwich views).
    #[default]
    None,
    /// async-profiler's suffixes, as its collapsed stacks with `--annotate`
    /// write them: `_[0]` interpreted, `_[1]` C1-compiled, `_[j]` compiled (C2,
    /// or a tier not known), `_[i]` inlined, and `_[i]` on class frames (the
    /// receiver above a vtable or itable stub, an allocated class), as
    /// async-profiler's own class frames read. One method run at two tiers is
    /// two frames.
    Tiers,
    /// [`Annotation::Tiers`] with stubs (`_[s]`) and class frames (`_[t]`) told
    /// apart from the rest, as jscope-flame colours them.
    Kinds,
}

impl Annotation {
    /// The suffix a frame of `kind` gets; empty where the label says it already
    /// or the kind has none.
    pub fn suffix(self, kind: FrameKind) -> &'static str {
        match (self, kind) {
            (Annotation::None, _) => "",
            (Annotation::Kinds, FrameKind::Stub) => "_[s]",
            (Annotation::Kinds, FrameKind::Class) => "_[t]",
            (_, kind) => kind_suffix(kind),
        }
    }
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

/// async-profiler's annotation of a frame's kind in collapsed stacks
/// ([`Annotation::Tiers`]); empty where the label says it already (kernel
/// `_[k]`, native `symbol [lib]`), for stubs and markers, and where the tier is
/// unknown.
pub fn kind_suffix(kind: FrameKind) -> &'static str {
    match kind {
        FrameKind::Interpreted => "_[0]",
        FrameKind::C1 => "_[1]",
        FrameKind::Compiled => "_[j]",
        FrameKind::Inlined | FrameKind::Class => "_[i]",
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
