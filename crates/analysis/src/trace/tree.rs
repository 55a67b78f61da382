//! Call trees: per thread, the calls in pre-order in one compact array; each
//! started thread grafted under the call that started it (JaViz), by the agent's
//! record of each `Thread.start` (see [`CallTree::link_started_threads`]); every
//! other thread's root calls under one virtual root for the JVM.

use std::collections::{HashMap, HashSet};

use jscope_format::{EventKind, MethodId, Recording, ThreadId};
use serde::Serialize;

use super::engine::{Anomalies, Call, CallSink, ThreadStack, OPEN_TO_THE_END, THREAD_START_LABEL};

/// One call. Times are ns since the recording's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Node {
    pub method: u32,
    /// 0 for a thread's root calls.
    pub depth: u32,
    /// Calls inside this one; they follow it in the thread's array.
    pub descendants: u32,
    /// [`UNFINISHED`](super::UNFINISHED), [`THREW`](super::THREW),
    /// [`CLOSED_BY_MISMATCH`](super::CLOSED_BY_MISMATCH).
    pub flags: u8,
    pub enter_ns: u64,
    pub exit_ns: u64,
    pub self_ns: u64,
    pub corrected_ns: u64,
    pub corrected_self_ns: u64,
}

impl Node {
    pub fn duration_ns(&self) -> u64 {
        self.exit_ns.saturating_sub(self.enter_ns)
    }
}

/// Where a node is: thread index in [`CallTree::threads`] and node index in its array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NodeRef {
    pub thread: usize,
    pub node: usize,
}

/// One thread's calls in pre-order: a node's children follow it, each after the
/// previous child's descendants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadTree {
    pub thread: u32,
    pub name: String,
    pub events: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub nodes: Vec<Node>,
    /// The `Thread.start` call this thread was linked to, if any.
    pub started_by: Option<NodeRef>,
}

impl ThreadTree {
    /// Indices of the thread's root calls.
    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        self.siblings_from(0, self.nodes.len())
    }

    /// Indices of the direct children of node `i`.
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = i + 1 + self.nodes[i].descendants as usize;
        self.siblings_from(i + 1, end)
    }

    fn siblings_from(&self, start: usize, end: usize) -> impl Iterator<Item = usize> + '_ {
        let mut next = start;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let i = next;
            next += 1 + self.nodes[i].descendants as usize;
            Some(i)
        })
    }
}

/// The dynamic call tree of one JVM's recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallTree {
    pub pid: u32,
    pub command_line: String,
    /// Threads in the order of their first trace event (then by id).
    pub threads: Vec<ThreadTree>,
    /// Threads grafted under a `Thread.start` call, sorted by the call.
    pub grafts: Vec<(NodeRef, usize)>,
    /// `pkg.Class.method` by method id.
    pub labels: Vec<String>,
    pub probe_cost_ns: Option<f64>,
    pub anomalies: Anomalies,
    pub events: u64,
    /// Where reading stopped early, if it did.
    pub damage: Option<String>,
}

/// The tree-building sink of the stack algorithm.
#[derive(Default)]
pub(crate) struct TreeSink {
    threads: Vec<Vec<Node>>,
    /// Per thread and node: the indices of the node's enter and closing events
    /// among its thread's events, to find the call open at a `Thread.start`.
    spans: Vec<Vec<(u64, u64)>>,
}

impl CallSink for TreeSink {
    #[inline]
    fn enter(&mut self, thread: u32, method: u32, enter_ns: u64, depth: u32) -> u32 {
        let t = thread as usize;
        if self.threads.len() <= t {
            self.threads.resize_with(t + 1, Vec::new);
        }
        if self.spans.len() <= t {
            self.spans.resize_with(t + 1, Vec::new);
        }
        self.spans[t].push((0, OPEN_TO_THE_END));
        let nodes = &mut self.threads[t];
        nodes.push(Node {
            method,
            depth,
            descendants: 0,
            flags: 0,
            enter_ns,
            exit_ns: enter_ns,
            self_ns: 0,
            corrected_ns: 0,
            corrected_self_ns: 0,
        });
        (nodes.len() - 1) as u32
    }

    #[inline]
    fn exit(&mut self, c: &Call) {
        let nodes = &mut self.threads[c.thread_index as usize];
        let len = nodes.len();
        let slot = c.slot as usize;
        let n = &mut nodes[slot];
        n.exit_ns = c.exit_ns;
        n.descendants = (len - slot - 1) as u32;
        n.flags = c.flags;
        n.self_ns = c.self_ns;
        n.corrected_ns = c.corrected_ns;
        n.corrected_self_ns = c.corrected_self_ns;
        self.spans[c.thread_index as usize][slot] = (c.enter_event, c.exit_event);
    }
}

impl TreeSink {
    pub(crate) fn finish(
        mut self,
        rec: &Recording,
        threads: &HashMap<u32, ThreadStack>,
        anomalies: Anomalies,
        probe_cost_ns: Option<f64>,
    ) -> CallTree {
        let mut spans: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        let mut trees: Vec<ThreadTree> = threads
            .iter()
            .map(|(&id, t)| {
                if let Some(s) = self.spans.get_mut(t.index as usize) {
                    spans.insert(id, std::mem::take(s));
                }
                self.thread_tree(rec, id, t)
            })
            .collect();
        trees.sort_by_key(|t| (t.first_ns, t.thread));
        let mut tree = CallTree {
            pid: rec.header.pid,
            command_line: rec.header.command_line.clone(),
            threads: trees,
            grafts: vec![],
            labels: labels(rec),
            probe_cost_ns,
            anomalies,
            events: threads.values().map(|t| t.events).sum(),
            damage: rec.damage.as_ref().map(|d| d.to_string()),
        };
        let starts = start_records(rec);
        if starts.is_empty() {
            // Recordings from agents that did not record starts.
            tree.link_by_time();
        } else {
            tree.link_started_threads(rec, &starts, &spans);
        }
        tree
    }

    fn thread_tree(&mut self, rec: &Recording, id: u32, t: &ThreadStack) -> ThreadTree {
        let nodes = self
            .threads
            .get_mut(t.index as usize)
            .map(std::mem::take)
            .unwrap_or_default();
        ThreadTree {
            thread: id,
            name: rec
                .thread(ThreadId(id))
                .map_or_else(|| format!("thread-{id}"), |d| d.name.clone()),
            events: t.events,
            first_ns: t.first_ns.unwrap_or(0),
            last_ns: t.last_ns,
            nodes,
            started_by: None,
        }
    }
}

fn labels(rec: &Recording) -> Vec<String> {
    (0..rec.methods.len() as u32)
        .map(|id| rec.method_label(MethodId(id)))
        .collect()
}

/// A traced `Thread.start` call, a candidate parent for a new thread.
struct StartCall {
    at: NodeRef,
    enter_ns: u64,
    exit_ns: u64,
    used: bool,
}

impl CallTree {
    pub fn node(&self, r: NodeRef) -> &Node {
        &self.threads[r.thread].nodes[r.node]
    }

    pub fn label(&self, method: u32) -> &str {
        self.labels
            .get(method as usize)
            .map_or("[unknown]", String::as_str)
    }

    /// Visible calls in the tree.
    pub fn calls(&self) -> usize {
        self.threads.iter().map(|t| t.nodes.len()).sum()
    }

    /// Children of a call: its own callees, then the root calls of threads it started.
    pub fn children(&self, r: NodeRef) -> Vec<NodeRef> {
        let t = &self.threads[r.thread];
        let mut out: Vec<NodeRef> = t
            .children(r.node)
            .map(|node| NodeRef {
                thread: r.thread,
                node,
            })
            .collect();
        let first = self.grafts.partition_point(|(at, _)| *at < r);
        for &(_, b) in self.grafts[first..].iter().take_while(|(at, _)| *at == r) {
            out.extend(self.thread_roots(b));
        }
        out
    }

    pub fn thread_roots(&self, thread: usize) -> impl Iterator<Item = NodeRef> + '_ {
        self.threads[thread]
            .roots()
            .map(move |node| NodeRef { thread, node })
    }

    /// The virtual root's children: root calls of every thread not started by a
    /// traced `Thread.start`, in order of entry.
    pub fn virtual_root_children(&self) -> Vec<NodeRef> {
        let mut out: Vec<NodeRef> = (0..self.threads.len())
            .filter(|&t| self.threads[t].started_by.is_none())
            .flat_map(|t| self.thread_roots(t))
            .collect();
        out.sort_by_key(|&r| (self.node(r).enter_ns, r.thread));
        out
    }

    /// The caller of a call: the enclosing call on its thread, or the
    /// `Thread.start` call for a started thread's roots; None under the virtual root.
    pub fn parent(&self, r: NodeRef) -> Option<NodeRef> {
        let t = &self.threads[r.thread];
        let depth = t.nodes[r.node].depth;
        if depth == 0 {
            return t.started_by;
        }
        (0..r.node)
            .rev()
            .find(|&i| t.nodes[i].depth == depth - 1)
            .map(|node| NodeRef {
                thread: r.thread,
                node,
            })
    }

    /// Finds the call of a method, the `n`th in pre-order over the threads.
    pub fn find(&self, label: &str, n: usize) -> Option<NodeRef> {
        self.threads
            .iter()
            .enumerate()
            .flat_map(|(ti, t)| {
                (0..t.nodes.len()).map(move |i| NodeRef {
                    thread: ti,
                    node: i,
                })
            })
            .filter(|&r| self.label(self.node(r).method) == label)
            .nth(n)
    }

    /// JaViz's start/run linking, exact: the agent records each `Thread.start`
    /// on the starting thread's timeline (a `start_call` event) with the started
    /// thread's Java id and the number of trace events its caller had written
    /// then. The started thread (found by its Java id) hangs under the innermost
    /// call of the starting thread open at that point: the traced `Thread.start`
    /// itself when it is traced, else the call during which `start()` ran. Threads
    /// started under one call come in start order. A start made outside every
    /// traced call links nothing: its thread stays under the virtual root.
    fn link_started_threads(
        &mut self,
        rec: &Recording,
        starts: &[StartRecord],
        spans: &HashMap<u32, Vec<(u64, u64)>>,
    ) {
        let index_of: HashMap<u32, usize> = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (t.thread, i))
            .collect();
        let by_java_id: HashMap<i64, u32> = rec
            .threads
            .values()
            .filter(|d| d.java_id != 0)
            .map(|d| (d.java_id, d.id.0))
            .collect();
        let mut linked = HashSet::new();
        for s in starts {
            let (Some(&parent), Some(child)) = (
                index_of.get(&s.parent),
                by_java_id
                    .get(&s.started)
                    .and_then(|id| index_of.get(id))
                    .copied(),
            ) else {
                continue;
            };
            if parent == child || linked.contains(&child) {
                continue; // a nested start of the same thread keeps the outer one
            }
            let Some(node) = spans
                .get(&s.parent)
                .and_then(|sp| self.open_at(parent, sp, s.trace_events))
            else {
                continue;
            };
            linked.insert(child);
            let at = NodeRef {
                thread: parent,
                node,
            };
            self.threads[child].started_by = Some(at);
            self.grafts.push((at, child));
        }
        // Stable: threads started under one call keep their start order.
        self.grafts.sort_by_key(|g| g.0);
    }

    /// The innermost call of thread `t` open after its first `n` events: down
    /// from the roots, the last call entered before that point, while it is
    /// still open there.
    fn open_at(&self, t: usize, spans: &[(u64, u64)], n: u64) -> Option<usize> {
        let tree = &self.threads[t];
        let open = |i: usize| {
            spans
                .get(i)
                .is_some_and(|&(enter, exit)| enter < n && n <= exit)
        };
        let entered = |i: &usize| spans.get(*i).is_some_and(|&(enter, _)| enter < n);
        let mut found = None;
        let mut last = tree.roots().take_while(entered).last();
        while let Some(i) = last.filter(|&i| open(i)) {
            found = Some(i);
            last = tree.children(i).take_while(entered).last();
        }
        found
    }

    /// The time heuristic for recordings without start records: a thread whose
    /// first event falls inside a traced `Thread.start` call of another thread is
    /// that call's child; a thread whose first event comes after the call returned
    /// takes the latest start call before it not yet linked. It pairs threads
    /// wrongly when several starts precede their threads' first events.
    fn link_by_time(&mut self) {
        let mut starts = self.start_calls();
        let mut order: Vec<usize> = (0..self.threads.len())
            .filter(|&t| !self.threads[t].nodes.is_empty())
            .collect();
        order.sort_by_key(|&t| (self.threads[t].first_ns, t));
        for b in order {
            if let Some(k) = pick_start(&starts, b, self.threads[b].first_ns) {
                starts[k].used = true;
                self.threads[b].started_by = Some(starts[k].at);
                self.grafts.push((starts[k].at, b));
            }
        }
        self.grafts.sort_unstable();
    }

    fn start_calls(&self) -> Vec<StartCall> {
        let is_start: Vec<bool> = self
            .labels
            .iter()
            .map(|l| l == THREAD_START_LABEL)
            .collect();
        let mut out = vec![];
        for (ti, t) in self.threads.iter().enumerate() {
            for (i, n) in t.nodes.iter().enumerate() {
                if is_start.get(n.method as usize) == Some(&true) {
                    out.push(StartCall {
                        at: NodeRef {
                            thread: ti,
                            node: i,
                        },
                        enter_ns: n.enter_ns,
                        exit_ns: n.exit_ns,
                        used: false,
                    });
                }
            }
        }
        out.sort_by_key(|s| (s.enter_ns, s.at.thread));
        out
    }
}

/// One `Thread.start` as the agent recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct StartRecord {
    /// The starting thread (recording id).
    parent: u32,
    /// Trace events the starting thread had written when it called `start()`.
    trace_events: u64,
    /// The started thread's Java id.
    started: i64,
}

/// The recording's start records, by starting thread and then in start order.
fn start_records(rec: &Recording) -> Vec<StartRecord> {
    let mut out: Vec<StartRecord> = rec
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::ThreadStartCall {
                started,
                trace_events,
            } => Some(StartRecord {
                parent: e.thread.0,
                trace_events,
                started,
            }),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

/// The start call a thread first seen at `first_ns` belongs to (`starts` sorted by
/// entry). Start calls that began strictly earlier only, so two threads can never
/// start each other.
fn pick_start(starts: &[StartCall], thread: usize, first_ns: u64) -> Option<usize> {
    let open = |s: &StartCall| !s.used && s.at.thread != thread && s.enter_ns < first_ns;
    starts
        .iter()
        .position(|s| open(s) && first_ns <= s.exit_ns)
        .or_else(|| starts.iter().rposition(open))
}

#[cfg(test)]
mod link_tests {
    use jscope_format::*;

    use super::super::TraceOptions;
    use super::*;

    /// main runs `main`, which calls `helper`; it starts thread b before the
    /// helper, a inside it and c after it. The started threads' first events come
    /// in the order b, c, a, all after the starts, so timing alone cannot tell.
    fn recording() -> Vec<u8> {
        let mut w = ChunkWriter::new();
        for (id, s) in [(1, "T"), (2, "main"), (3, "work"), (4, "helper")] {
            w.string(StringId(id), s);
        }
        w.class(&ClassDef {
            id: ClassId(1),
            name: StringId(1),
            source_file: StringId::NONE,
        });
        for (id, name) in [(1, 2), (2, 3), (3, 4)] {
            w.method(&MethodDef {
                id: MethodId(id),
                class: ClassId(1),
                name: StringId(name),
                signature: StringId::NONE,
                modifiers: 9,
            });
        }
        for (id, java_id, name) in [(1, 1, "main"), (2, 12, "a"), (3, 13, "b"), (4, 14, "c")] {
            w.thread(&ThreadDef {
                id: ThreadId(id),
                java_id,
                name: name.into(),
                ..Default::default()
            });
        }
        let ev = |kind, method, ns| TraceEvent {
            kind,
            method: MethodId(method),
            ticks: ns,
            untraced: 0,
            cpu_ns: 0,
        };
        let batch = |thread, events| TraceBatch {
            thread: ThreadId(thread),
            has_cpu: false,
            events,
        };
        use TraceKind::{Enter, Exit};
        w.trace(&batch(
            1,
            vec![
                ev(Enter, 1, 10),
                ev(Enter, 3, 20),
                ev(Exit, 3, 30),
                ev(Exit, 1, 40),
            ],
        ));
        for (started, trace_events) in [(13, 1), (12, 2), (14, 3)] {
            w.event(&JvmEvent::on(
                ThreadId(1),
                35,
                EventKind::ThreadStartCall {
                    started,
                    trace_events,
                },
            ));
        }
        for (thread, at) in [(3, 50), (4, 60), (2, 70)] {
            w.trace(&batch(thread, vec![ev(Enter, 2, at), ev(Exit, 2, at + 1)]));
        }
        jscope_testkit::recording::ns_file(&mut w)
    }

    #[test]
    fn started_threads_hang_under_the_call_open_at_their_start_in_start_order() {
        let (tree, _) = CallTree::from_bytes(&recording(), &TraceOptions::default()).unwrap();
        let thread = |name: &str| tree.threads.iter().position(|t| t.name == name).unwrap();
        let main = tree.find("T.main", 0).unwrap();
        let helper = tree.find("T.helper", 0).unwrap();
        assert_eq!(tree.threads[thread("a")].started_by, Some(helper));
        assert_eq!(tree.threads[thread("b")].started_by, Some(main));
        assert_eq!(tree.threads[thread("c")].started_by, Some(main));
        let names: Vec<&str> = tree
            .children(main)
            .iter()
            .map(|r| tree.threads[r.thread].name.as_str())
            .collect();
        assert_eq!(
            names,
            ["main", "b", "c"],
            "own callee, then starts in order"
        );
        assert!(tree.threads[thread("main")].started_by.is_none());
        assert_eq!(tree.virtual_root_children(), [main]);
    }
}
