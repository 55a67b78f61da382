//! Call graph (xdProf's call graph generator): methods as nodes with self and
//! total samples, caller→callee edges with the samples that passed along them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

use jscope_format::Recording;
use serde::Serialize;

use crate::labels::Labeler;
use crate::stats::percent;
use crate::StackCounts;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallNode {
    pub label: String,
    pub self_samples: u64,
    /// Once per stack, even when the method recurses.
    pub total_samples: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallEdge {
    /// Index into [`CallGraph::nodes`].
    pub caller: usize,
    pub callee: usize,
    /// Samples whose stack has this call, once per stack.
    pub samples: u64,
}

/// Nodes sorted by total samples (descending); edges by samples.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CallGraph {
    pub total: u64,
    pub nodes: Vec<CallNode>,
    pub edges: Vec<CallEdge>,
}

#[derive(Default)]
struct Builder {
    nodes: HashMap<String, (u64, u64)>,
    edges: HashMap<(String, String), u64>,
}

impl Builder {
    fn add_stack(&mut self, root_first: &[String], n: u64) {
        if let Some(top) = root_first.last() {
            self.nodes.entry(top.clone()).or_default().0 += n;
        }
        for label in root_first.iter().collect::<HashSet<_>>() {
            self.nodes.entry(label.clone()).or_default().1 += n;
        }
        let calls: HashSet<(&String, &String)> =
            root_first.windows(2).map(|w| (&w[0], &w[1])).collect();
        for (caller, callee) in calls {
            *self
                .edges
                .entry((caller.clone(), callee.clone()))
                .or_default() += n;
        }
    }

    fn add_graph(&mut self, g: &CallGraph) {
        for n in &g.nodes {
            let e = self.nodes.entry(n.label.clone()).or_default();
            e.0 += n.self_samples;
            e.1 += n.total_samples;
        }
        for e in &g.edges {
            let key = (
                g.nodes[e.caller].label.clone(),
                g.nodes[e.callee].label.clone(),
            );
            *self.edges.entry(key).or_default() += e.samples;
        }
    }

    fn finish(self, total: u64) -> CallGraph {
        let mut nodes: Vec<CallNode> = self
            .nodes
            .into_iter()
            .map(|(label, (s, t))| CallNode {
                label,
                self_samples: s,
                total_samples: t,
            })
            .collect();
        nodes.sort_by(|a, b| {
            b.total_samples
                .cmp(&a.total_samples)
                .then_with(|| a.label.cmp(&b.label))
        });
        let index: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.label.as_str(), i))
            .collect();
        let mut edges: Vec<CallEdge> = self
            .edges
            .iter()
            .map(|((caller, callee), &samples)| CallEdge {
                caller: index[caller.as_str()],
                callee: index[callee.as_str()],
                samples,
            })
            .collect();
        edges.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then((a.caller, a.callee).cmp(&(b.caller, b.callee)))
        });
        CallGraph {
            total,
            nodes,
            edges,
        }
    }
}

impl CallGraph {
    /// Several graphs (e.g. one per JVM) as one, nodes and edges merged by label.
    pub fn merge(graphs: impl IntoIterator<Item = CallGraph>) -> CallGraph {
        let mut builder = Builder::default();
        let mut total = 0;
        for g in graphs {
            total += g.total;
            builder.add_graph(&g);
        }
        builder.finish(total)
    }
}

pub fn call_graph(rec: &Recording, counts: &StackCounts) -> CallGraph {
    let labeler = Labeler { rec, lines: false };
    let mut builder = Builder::default();
    for (stack, n) in counts.by_stack() {
        builder.add_stack(&labeler.root_first(stack), n);
    }
    builder.finish(counts.total)
}

/// What the Graphviz rendering keeps and how it is titled.
#[derive(Debug, Clone, PartialEq)]
pub struct DotOptions {
    /// Nodes whose total share (percent) is below this are left out.
    pub node_min_percent: f64,
    /// Edges whose share (percent) is below this are left out.
    pub edge_min_percent: f64,
    pub title: String,
}

impl Default for DotOptions {
    fn default() -> Self {
        DotOptions {
            node_min_percent: 0.5,
            edge_min_percent: 0.1,
            title: "jscope call graph".into(),
        }
    }
}

impl CallGraph {
    /// Writes a Graphviz digraph: node fill and edge colour/width grow with
    /// their share of all samples, so hot paths stand out.
    pub fn write_dot(&self, opts: &DotOptions, mut w: impl Write) -> io::Result<()> {
        writeln!(w, "digraph jscope {{")?;
        writeln!(
            w,
            "  label=\"{}\\n{} samples\"; labelloc=t; fontname=\"Helvetica\";",
            escape(&opts.title),
            self.total
        )?;
        writeln!(
            w,
            "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];"
        )?;
        writeln!(w, "  edge [fontname=\"Helvetica\", fontsize=9];")?;
        let kept = self.kept_nodes(opts.node_min_percent);
        for (&i, node) in &kept {
            self.write_node(&mut w, i, node)?;
        }
        for e in &self.edges {
            let share = percent(e.samples, self.total);
            if share >= opts.edge_min_percent
                && kept.contains_key(&e.caller)
                && kept.contains_key(&e.callee)
            {
                self.write_edge(&mut w, e, share)?;
            }
        }
        writeln!(w, "}}")
    }

    fn kept_nodes(&self, min_percent: f64) -> BTreeMap<usize, &CallNode> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| percent(n.total_samples, self.total) >= min_percent)
            .collect()
    }

    fn write_node(&self, w: &mut impl Write, i: usize, n: &CallNode) -> io::Result<()> {
        let total = percent(n.total_samples, self.total);
        let own = percent(n.self_samples, self.total);
        let (class, method) = split_label(&n.label);
        writeln!(
            w,
            "  n{i} [label=\"{}\\n{}\\nself {} ({own:.1}%)\\ntotal {} ({total:.1}%)\", fillcolor=\"{}\", fontsize={:.0}];",
            escape(class),
            escape(method),
            n.self_samples,
            n.total_samples,
            heat_colour(total / 100.0),
            10.0 + 8.0 * own / 100.0,
        )
    }

    fn write_edge(&self, w: &mut impl Write, e: &CallEdge, share: f64) -> io::Result<()> {
        writeln!(
            w,
            "  n{} -> n{} [label=\"{}\", weight={}, penwidth={:.2}, color=\"{}\"];",
            e.caller,
            e.callee,
            e.samples,
            e.samples.max(1),
            1.0 + 5.0 * share / 100.0,
            edge_colour(share / 100.0),
        )
    }
}

/// `pkg.Class.method` → (`pkg.Class`, `method`), so boxes stay narrow. Native and
/// kernel frames are split at their library, not at a dot of it or of the symbol:
/// `start_thread [libc.so.6]` → (`libc.so.6`, `start_thread`), `schedule_[k]` →
/// (`kernel`, `schedule`).
fn split_label(label: &str) -> (&str, &str) {
    if let Some(symbol) = label.strip_suffix("_[k]") {
        return ("kernel", symbol);
    }
    if let Some((symbol, library)) = label.strip_suffix(']').and_then(|l| l.rsplit_once(" [")) {
        return (library, symbol);
    }
    if label.contains([' ', '[', ':']) {
        return ("", label);
    }
    match label.rfind('.') {
        Some(i) => (&label[..i], &label[i + 1..]),
        None => ("", label),
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn blend(from: (u8, u8, u8), to: (u8, u8, u8), t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(from.0, to.0),
        mix(from.1, to.1),
        mix(from.2, to.2)
    )
}

/// Pale yellow for cold methods to red for methods on every sample.
fn heat_colour(share: f64) -> String {
    blend((0xff, 0xf7, 0xd6), (0xe0, 0x40, 0x30), share)
}

/// Grey for rare calls to dark red for calls on every sample.
fn edge_colour(share: f64) -> String {
    blend((0xa0, 0xa0, 0xa0), (0xb0, 0x10, 0x10), share)
}

#[cfg(test)]
mod label_tests {
    use super::split_label;

    #[test]
    fn native_and_kernel_labels_split_at_their_library() {
        assert_eq!(split_label("demo.Work.hot"), ("demo.Work", "hot"));
        assert_eq!(split_label("main"), ("", "main"));
        assert_eq!(
            split_label("start_thread [libc.so.6]"),
            ("libc.so.6", "start_thread")
        );
        assert_eq!(
            split_label("JavaThread::run() [libjvm.so]"),
            ("libjvm.so", "JavaThread::run()")
        );
        assert_eq!(
            split_label("finish_task_switch.isra.0_[k]"),
            ("kernel", "finish_task_switch.isra.0")
        );
        assert_eq!(
            split_label("JavaCalls::call_helper"),
            ("", "JavaCalls::call_helper")
        );
    }
}
