//! Threads at a moment (xdProf's view): every thread of one snapshot with its
//! identity, state and stack, in thread start order.

use std::fmt;

use jscope_format::thread_state::{classify, INTERRUPTED, IN_NATIVE, SUSPENDED};
use jscope_format::{Recording, Snapshot, SnapshotThread, StackId};
use serde::Serialize;

use crate::labels::{method_label, source_position};
use crate::AnalysisError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameRow {
    /// `pkg.Class.method`.
    pub method: String,
    /// `Foo.java:12`, `Native Method` or `Unknown Source`.
    pub position: String,
    /// 0 when unknown.
    pub line: u32,
    /// Bytecode index; -1 when unknown or native.
    pub bci: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadRow {
    /// 1 for the first thread started, as xdProf's logical start.
    pub start_order: u32,
    /// The recording's thread id.
    pub id: u32,
    pub java_id: i64,
    pub name: String,
    pub parent: String,
    pub group: String,
    pub daemon: bool,
    /// State class name: runnable, blocked, waiting, ...
    pub state: String,
    pub suspended: bool,
    pub interrupted: bool,
    pub in_native: bool,
    /// Top first.
    pub frames: Vec<FrameRow>,
}

impl ThreadRow {
    /// The state with its flags, e.g. `blocked+suspended`.
    pub fn status(&self) -> String {
        let mut s = self.state.clone();
        for (on, name) in [
            (self.in_native, "native"),
            (self.suspended, "suspended"),
            (self.interrupted, "interrupted"),
        ] {
            if on && !s.contains(name) {
                s.push('+');
                s.push_str(name);
            }
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadsView {
    /// Seconds from the start of the recording to the snapshot shown.
    pub at_s: f64,
    pub snapshot_index: usize,
    pub snapshots: usize,
    pub threads: Vec<ThreadRow>,
}

/// The snapshot nearest `at_s` seconds from the start (the last when `None`).
pub fn threads_at(rec: &Recording, at_s: Option<f64>) -> Result<ThreadsView, AnalysisError> {
    let index = nearest_snapshot(rec, at_s).ok_or(AnalysisError::NoSnapshots)?;
    let snap = &rec.snapshots[index];
    let mut threads: Vec<ThreadRow> = snap.threads.iter().map(|t| thread_row(rec, t)).collect();
    threads.sort_by_key(|t| (t.start_order, t.id));
    Ok(ThreadsView {
        at_s: seconds(rec, snap),
        snapshot_index: index,
        snapshots: rec.snapshots.len(),
        threads,
    })
}

fn seconds(rec: &Recording, snap: &Snapshot) -> f64 {
    rec.ticks_to_ns(snap.ticks) as f64 / 1e9
}

fn nearest_snapshot(rec: &Recording, at_s: Option<f64>) -> Option<usize> {
    let Some(at) = at_s else {
        return rec.snapshots.len().checked_sub(1);
    };
    let distance = |i: &usize| (seconds(rec, &rec.snapshots[*i]) - at).abs();
    (0..rec.snapshots.len()).min_by(|a, b| distance(a).total_cmp(&distance(b)))
}

fn thread_row(rec: &Recording, t: &SnapshotThread) -> ThreadRow {
    let def = rec.threads.get(&t.thread).cloned().unwrap_or_default();
    ThreadRow {
        start_order: def.start_order,
        id: t.thread.0,
        java_id: def.java_id,
        name: def.name,
        parent: def.parent,
        group: def.group,
        daemon: def.daemon,
        state: classify(t.state).to_string(),
        suspended: t.state & SUSPENDED != 0,
        interrupted: t.state & INTERRUPTED != 0,
        in_native: t.state & IN_NATIVE != 0,
        frames: frame_rows(rec, t.stack.0),
    }
}

fn frame_rows(rec: &Recording, stack: u32) -> Vec<FrameRow> {
    rec.stack(StackId(stack))
        .iter()
        .map(|f| FrameRow {
            method: method_label(rec, f.method),
            position: source_position(rec, f),
            line: f.line,
            bci: f.bci,
        })
        .collect()
}

impl fmt::Display for ThreadsView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "snapshot {} of {} at {:.3}s: {} threads",
            self.snapshot_index + 1,
            self.snapshots,
            self.at_s,
            self.threads.len()
        )?;
        writeln!(f)?;
        self.fmt_table(f)?;
        for t in &self.threads {
            writeln!(f)?;
            let daemon = if t.daemon { " daemon" } else { "" };
            writeln!(
                f,
                "\"{}\" #{}{daemon} {}",
                t.name,
                t.start_order,
                t.status()
            )?;
            for fr in &t.frames {
                writeln!(f, "    at {}({})", fr.method, fr.position)?;
            }
        }
        Ok(())
    }
}

impl ThreadsView {
    /// xdProf's table: order, id, name, parent, group, #frames, status.
    fn fmt_table(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = |title: &str, cell: fn(&ThreadRow) -> &str| {
            self.threads
                .iter()
                .map(|t| cell(t).chars().count())
                .chain([title.len()])
                .max()
                .unwrap_or(0)
        };
        let name_w = width("name", |t| &t.name);
        let parent_w = width("parent", |t| or_dash(&t.parent));
        let group_w = width("group", |t| or_dash(&t.group));
        writeln!(
            f,
            "{:>5} {:>6}  {:<name_w$}  {:<parent_w$}  {:<group_w$}  {:>7}  status",
            "order", "id", "name", "parent", "group", "#frames"
        )?;
        for t in &self.threads {
            writeln!(
                f,
                "{:>5} {:>6}  {:<name_w$}  {:<parent_w$}  {:<group_w$}  {:>7}  {}",
                t.start_order,
                t.id,
                t.name,
                or_dash(&t.parent),
                or_dash(&t.group),
                t.frames.len(),
                t.status()
            )?;
        }
        Ok(())
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}
