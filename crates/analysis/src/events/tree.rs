//! Event trees (JPMT's event traces): per thread, each event nested inside the traced
//! method invocation during which it happened; without trace batches, inside the
//! sample interval (the stack sampled at or before it, until the next sample).

use std::collections::BTreeMap;
use std::fmt;

use jscope_format::{MethodId, Recording, ThreadId};
use serde::Serialize;

use super::rows::{Ages, EventRow, UserPairs};
use super::{thread_name, AllocWeights, EventFilter};
use crate::labels::Labeler;
use crate::trace::{replay, Call, CallSink, TraceOptions};
use crate::Selection;

/// What the events were nested into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TreeBasis {
    /// Traced method invocations (exact tracing).
    Traced,
    /// Sample intervals (cpu, wall or snapshot samples).
    Sampled,
    /// Neither: every event is loose.
    None,
}

/// A method invocation or a sample interval, with the events that happened in it
/// and not in a deeper invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventNode {
    /// The invoked method, or the sampled stack's top frame.
    pub label: String,
    /// Sample intervals: the sampled stack, root first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub events: Vec<EventRow>,
    pub children: Vec<EventNode>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadEvents {
    pub thread: u32,
    pub name: String,
    /// Invocations (or intervals) that hold events, in time order; others are left out.
    pub roots: Vec<EventNode>,
    /// Events outside every invocation or interval of the thread.
    pub loose: Vec<EventRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventTree {
    pub basis: TreeBasis,
    /// By thread id; process-wide events (GC, JIT, ...) are under thread 0.
    pub threads: Vec<ThreadEvents>,
}

/// A node being built: an invocation or interval and its place in the thread's tree.
struct Open {
    label: String,
    stack: Vec<String>,
    start_ns: u64,
    end_ns: u64,
    children: Vec<usize>,
    events: Vec<EventRow>,
    has_events: bool,
}

/// One thread's nodes in an arena, roots in time order.
#[derive(Default)]
struct Arena {
    nodes: Vec<Open>,
    roots: Vec<usize>,
}

impl Arena {
    fn add(&mut self, parent: Option<usize>, node: Open) -> usize {
        let i = self.nodes.len();
        self.nodes.push(node);
        match parent {
            Some(p) => self.nodes[p].children.push(i),
            None => self.roots.push(i),
        }
        i
    }

    /// The nodes whose spans hold `ns`, outermost first.
    fn path(&self, ns: u64) -> Vec<usize> {
        let mut out = Vec::new();
        let mut level = &self.roots;
        loop {
            let k = level.partition_point(|&i| self.nodes[i].start_ns <= ns);
            let Some(&i) = k.checked_sub(1).and_then(|k| level.get(k)) else {
                return out;
            };
            if ns > self.nodes[i].end_ns {
                return out;
            }
            out.push(i);
            level = &self.nodes[i].children;
        }
    }

    fn finish(&mut self, i: usize) -> EventNode {
        let children: Vec<usize> = (self.nodes[i].children.iter().copied())
            .filter(|&c| self.nodes[c].has_events)
            .collect();
        let kids = children.into_iter().map(|c| self.finish(c)).collect();
        let n = &mut self.nodes[i];
        EventNode {
            label: std::mem::take(&mut n.label),
            stack: std::mem::take(&mut n.stack),
            start_ns: n.start_ns,
            end_ns: n.end_ns,
            events: std::mem::take(&mut n.events),
            children: kids,
        }
    }
}

/// Collects finished calls per thread.
#[derive(Default)]
struct Calls(BTreeMap<u32, Vec<Call>>);

impl CallSink for Calls {
    fn enter(&mut self, _thread_index: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        0
    }

    fn exit(&mut self, call: &Call) {
        self.0.entry(call.thread).or_default().push(*call);
    }
}

fn traced_arenas(rec: &Recording) -> BTreeMap<u32, Arena> {
    let (calls, _) = replay(rec, &TraceOptions::default(), Calls::default());
    let labels = Labeler { rec, lines: false };
    calls
        .0
        .into_iter()
        .map(|(thread, mut calls)| {
            calls.sort_by_key(|c| (c.enter_ns, c.depth));
            let mut arena = Arena::default();
            let mut open: Vec<usize> = Vec::new();
            for c in calls {
                open.truncate(c.depth as usize);
                let node = Open {
                    label: labels.frame(&jscope_format::Frame {
                        method: MethodId(c.method),
                        ..Default::default()
                    }),
                    stack: vec![],
                    start_ns: c.enter_ns,
                    end_ns: c.exit_ns,
                    children: vec![],
                    events: vec![],
                    has_events: false,
                };
                let i = arena.add(open.last().copied(), node);
                open.push(i);
            }
            (thread, arena)
        })
        .collect()
}

fn sampled_arenas(rec: &Recording) -> BTreeMap<u32, Arena> {
    let mut by_thread: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
    for s in Selection::default().samples(rec) {
        by_thread
            .entry(s.thread)
            .or_default()
            .push((rec.ticks_to_ns(s.ticks), s.stack));
    }
    let labels = Labeler { rec, lines: true };
    let end = rec.duration_ns();
    by_thread
        .into_iter()
        .map(|(thread, mut samples)| {
            samples.sort_unstable();
            let mut arena = Arena::default();
            for (k, &(ns, stack)) in samples.iter().enumerate() {
                let next = samples
                    .get(k + 1)
                    .map_or(end.max(ns), |n| n.0.saturating_sub(1).max(ns));
                let frames = labels.root_first(stack);
                let node = Open {
                    label: frames
                        .last()
                        .cloned()
                        .unwrap_or_else(|| "[no stack]".to_string()),
                    stack: frames,
                    start_ns: ns,
                    end_ns: next,
                    children: vec![],
                    events: vec![],
                    has_events: false,
                };
                arena.add(None, node);
            }
            (thread, arena)
        })
        .collect()
}

/// Each thread's invocations (with traces) or sample intervals.
fn arenas(rec: &Recording) -> (TreeBasis, BTreeMap<u32, Arena>) {
    if rec.traces.iter().any(|b| !b.events.is_empty()) {
        (TreeBasis::Traced, traced_arenas(rec))
    } else if Selection::default().mode_in(rec).is_some() {
        (TreeBasis::Sampled, sampled_arenas(rec))
    } else {
        (TreeBasis::None, BTreeMap::new())
    }
}

/// Where each thread was at a moment: the traced invocations it was in, or the
/// stack sampled at or before it. Lets `--method` select events without a stack.
pub(crate) struct Contexts(BTreeMap<u32, Arena>);

impl Contexts {
    pub fn of(rec: &Recording) -> Contexts {
        Contexts(arenas(rec).1)
    }

    /// `pkg.Class.method` labels of the thread's context at `ns`, outermost first.
    pub fn labels(&self, thread: u32, ns: u64) -> Vec<&str> {
        let Some(a) = self.0.get(&thread) else {
            return vec![];
        };
        let path = a.path(ns);
        let nodes = path.iter().map(|&i| &a.nodes[i]);
        let labels: Vec<&str> = nodes
            .flat_map(|n| {
                if n.stack.is_empty() {
                    std::slice::from_ref(&n.label)
                } else {
                    &n.stack[..]
                }
            })
            .map(String::as_str)
            .collect();
        labels.into_iter().map(without_line).collect()
    }
}

/// `pkg.Class.method:12` -> `pkg.Class.method`.
fn without_line(label: &str) -> &str {
    match label.rsplit_once(':') {
        Some((m, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => m,
        _ => label,
    }
}

/// Nests the selected events into traced invocations when the recording has trace
/// batches, else into sample intervals.
pub fn event_tree(rec: &Recording, filter: &EventFilter) -> EventTree {
    let (basis, mut arenas) = arenas(rec);
    let (ages, weights) = (Ages::of(rec), AllocWeights::of(rec));
    let mut user = UserPairs::default();
    let mut loose: BTreeMap<u32, Vec<EventRow>> = BTreeMap::new();
    for e in filter.select(rec) {
        let row = EventRow::of(rec, e, &ages, weights, &mut user);
        let thread = e.thread;
        let arena = arenas.get_mut(&thread.0);
        let path = arena.as_ref().map_or_else(Vec::new, |a| a.path(row.ns));
        match (arena, path.last()) {
            (Some(arena), Some(&i)) => {
                path.iter().for_each(|&n| arena.nodes[n].has_events = true);
                arena.nodes[i].events.push(row);
            }
            _ => loose.entry(thread.0).or_default().push(row),
        }
    }
    let threads: std::collections::BTreeSet<u32> = arenas
        .iter()
        .filter(|(_, a)| a.nodes.iter().any(|n| n.has_events))
        .map(|(&t, _)| t)
        .chain(loose.keys().copied())
        .collect();
    let threads = threads
        .into_iter()
        .map(|t| {
            let roots = arenas.get_mut(&t).map_or_else(Vec::new, |a| {
                let roots: Vec<usize> = a
                    .roots
                    .iter()
                    .copied()
                    .filter(|&r| a.nodes[r].has_events)
                    .collect();
                roots.into_iter().map(|r| a.finish(r)).collect()
            });
            ThreadEvents {
                thread: t,
                name: thread_name(rec, ThreadId(t)),
                roots,
                loose: loose.remove(&t).unwrap_or_default(),
            }
        })
        .collect();
    EventTree { basis, threads }
}

fn fmt_ns(ns: u64) -> String {
    crate::trace::fmt_ns(ns as f64)
}

fn write_event(f: &mut fmt::Formatter<'_>, depth: usize, r: &EventRow) -> fmt::Result {
    write!(
        f,
        "{:indent$}* {:.6}s {}",
        "",
        r.time_s,
        r.kind,
        indent = depth * 2
    )?;
    if !r.subject.is_empty() {
        write!(f, " {}", r.subject)?;
    }
    if r.duration_ns > 0 {
        write!(f, " {}", fmt_ns(r.duration_ns))?;
    }
    if r.value != 0 {
        write!(f, " value={}", r.value)?;
    }
    if r.timed_out == Some(true) {
        write!(f, " (timed out)")?;
    }
    if !r.site.is_empty() {
        write!(f, " at {}", r.site)?;
    }
    writeln!(f)
}

fn write_node(f: &mut fmt::Formatter<'_>, depth: usize, n: &EventNode) -> fmt::Result {
    let span = n.end_ns.saturating_sub(n.start_ns);
    writeln!(
        f,
        "{:indent$}{} [{:.6}s +{}]",
        "",
        n.label,
        n.start_ns as f64 / 1e9,
        fmt_ns(span),
        indent = depth * 2
    )?;
    for e in &n.events {
        write_event(f, depth + 1, e)?;
    }
    n.children
        .iter()
        .try_for_each(|c| write_node(f, depth + 1, c))
}

impl fmt::Display for EventTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.threads {
            match t.thread {
                0 => writeln!(f, "process-wide events")?,
                id => writeln!(f, "thread {} (#{id})", t.name)?,
            }
            for n in &t.roots {
                write_node(f, 1, n)?;
            }
            for e in &t.loose {
                write_event(f, 1, e)?;
            }
        }
        Ok(())
    }
}
