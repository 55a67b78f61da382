//! Text rendering of a call tree: one indented line per call.

use std::io::{self, Write};

use super::engine::{CLOSED_BY_MISMATCH, THREW, UNFINISHED};
use super::stats::fmt_ns;
use super::tree::{CallTree, NodeRef};
use crate::ThreadMatcher;

/// What `CallTree::write_text` shows.
#[derive(Debug, Clone, Default)]
pub struct TreeView {
    /// Only threads whose name matches; a matching thread started by one that does
    /// not match appears under the virtual root.
    pub thread: Option<ThreadMatcher>,
    /// Levels below the virtual root to show (1 = thread roots only).
    pub max_depth: Option<usize>,
    /// Leave out calls (and what they called) shorter than this.
    pub min_duration_ns: u64,
}

impl TreeView {
    fn shows(&self, thread_name: &str) -> bool {
        match &self.thread {
            Some(m) => m.matches(thread_name),
            None => true,
        }
    }
}

impl CallTree {
    /// The virtual root, then each call indented by two spaces per level:
    /// `method [thread] caller=C call=T return=T duration=D self=S` plus the
    /// overhead-corrected times when a probe cost is known and flags.
    pub fn write_text(&self, view: &TreeView, out: &mut dyn Write) -> io::Result<()> {
        let shown: Vec<bool> = self.threads.iter().map(|t| view.shows(&t.name)).collect();
        self.write_root_line(&shown, out)?;
        let mut stack: Vec<(NodeRef, usize, Option<u32>)> = self
            .top_calls(&shown)
            .into_iter()
            .rev()
            .map(|r| (r, 1, None))
            .collect();
        while let Some((r, level, caller)) = stack.pop() {
            let n = self.node(r);
            if n.duration_ns() < view.min_duration_ns {
                continue;
            }
            self.write_line(r, level, caller, out)?;
            if view.max_depth.is_some_and(|d| level >= d) {
                continue;
            }
            for c in self.children(r).into_iter().rev() {
                if shown[c.thread] {
                    stack.push((c, level + 1, Some(n.method)));
                }
            }
        }
        Ok(())
    }

    /// Roots of shown threads whose starter is not shown (or who have none).
    fn top_calls(&self, shown: &[bool]) -> Vec<NodeRef> {
        let mut out: Vec<NodeRef> = (0..self.threads.len())
            .filter(|&t| shown[t])
            .filter(|&t| match self.threads[t].started_by {
                Some(s) => !shown[s.thread],
                None => true,
            })
            .flat_map(|t| self.thread_roots(t))
            .collect();
        out.sort_by_key(|&r| (self.node(r).enter_ns, r.thread));
        out
    }

    fn write_root_line(&self, shown: &[bool], out: &mut dyn Write) -> io::Result<()> {
        let threads = shown.iter().filter(|&&s| s).count();
        let calls: usize = (0..self.threads.len())
            .filter(|&t| shown[t])
            .map(|t| self.threads[t].nodes.len())
            .sum();
        write!(
            out,
            "[virtual root] jvm pid {} ({}): {threads} threads, {calls} calls",
            self.pid, self.command_line
        )?;
        match self.probe_cost_ns {
            Some(c) => writeln!(out, ", probe cost {c} ns"),
            None => writeln!(out),
        }
    }

    fn write_line(
        &self,
        r: NodeRef,
        level: usize,
        caller: Option<u32>,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let n = self.node(r);
        let caller = caller.map_or("[virtual root]", |m| self.label(m));
        write!(
            out,
            "{:indent$}{} [{}] caller={} call={} return={} duration={} self={}",
            "",
            self.label(n.method),
            self.threads[r.thread].name,
            caller,
            seconds(n.enter_ns),
            seconds(n.exit_ns),
            fmt_ns(n.duration_ns() as f64),
            fmt_ns(n.self_ns as f64),
            indent = 2 * level
        )?;
        if self.probe_cost_ns.is_some() {
            write!(
                out,
                " corrected={}/{}",
                fmt_ns(n.corrected_ns as f64),
                fmt_ns(n.corrected_self_ns as f64)
            )?;
        }
        writeln!(out, "{}", flag_words(n.flags))
    }
}

/// Seconds since the start, to the nanosecond.
fn seconds(ns: u64) -> String {
    format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn flag_words(flags: u8) -> String {
    let mut s = String::new();
    for (bit, word) in [
        (THREW, " threw"),
        (UNFINISHED, " unfinished"),
        (CLOSED_BY_MISMATCH, " exit-lost"),
    ] {
        if flags & bit != 0 {
            s.push_str(word);
        }
    }
    s
}
