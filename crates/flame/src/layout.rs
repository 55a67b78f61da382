//! Placement of frames on the horizontal axis, shared by both renderers.
//!
//! Children sit left-aligned under their parent in name order. Children lighter
//! than the threshold are merged into one box after their wide siblings, so the
//! drawn widths still add up to the parent's; if even the merged box is under
//! the threshold it is left out, as a sub-pixel sliver would be invisible anyway.

use crate::tree::{FlameGraph, NodeId, ROOT};

/// What a laid-out box stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    /// A frame of the graph.
    Node(NodeId),
    /// `count` sibling frames, each under the threshold, drawn as one box.
    Merged { count: u64 },
}

/// One box of the flame graph, in sample units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) label: Label,
    /// Distance from the root, which has depth 0.
    pub(crate) depth: u32,
    /// Left edge, in samples from the root's left edge.
    pub(crate) x: u64,
    pub(crate) width: u64,
}

/// All boxes of one graph, in pre-order (each frame before its children,
/// siblings left to right).
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) frames: Vec<Frame>,
    pub(crate) max_depth: u32,
}

/// Work still to do while walking the tree.
enum Pending {
    Node { id: NodeId, depth: u32, x: u64 },
    Merged(Frame),
}

impl Layout {
    /// Lays out every frame whose weight is at least `min_weight`, merging the rest.
    pub(crate) fn new(graph: &FlameGraph, min_weight: f64) -> Layout {
        let mut layout = Layout {
            frames: Vec::new(),
            max_depth: 0,
        };
        // An explicit stack rather than recursion: Java stacks can be thousands deep.
        let mut pending = vec![Pending::Node {
            id: ROOT,
            depth: 0,
            x: 0,
        }];
        while let Some(item) = pending.pop() {
            match item {
                Pending::Node { id, depth, x } => {
                    layout.push(Frame {
                        label: Label::Node(id),
                        depth,
                        x,
                        width: graph.node(id).total,
                    });
                    push_children(graph, id, depth + 1, x, min_weight, &mut pending);
                }
                Pending::Merged(frame) => layout.push(frame),
            }
        }
        layout
    }

    fn push(&mut self, frame: Frame) {
        self.max_depth = self.max_depth.max(frame.depth);
        self.frames.push(frame);
    }
}

/// Queues the children of `parent` so that they pop in left-to-right order.
fn push_children(
    graph: &FlameGraph,
    parent: NodeId,
    depth: u32,
    parent_x: u64,
    min_weight: f64,
    pending: &mut Vec<Pending>,
) {
    let (mut wide, narrow): (Vec<NodeId>, Vec<NodeId>) = graph
        .children_of(parent)
        .partition(|&c| graph.node(c).total as f64 >= min_weight);
    wide.sort_unstable_by_key(|&c| graph.name(graph.node(c).name));
    let mut x = parent_x;
    let placed: Vec<Pending> = wide
        .into_iter()
        .map(|id| {
            let item = Pending::Node { id, depth, x };
            x += graph.node(id).total;
            item
        })
        .collect();
    let merged_weight: u64 = narrow.iter().map(|&c| graph.node(c).total).sum();
    if !narrow.is_empty() && merged_weight as f64 >= min_weight {
        pending.push(Pending::Merged(Frame {
            label: Label::Merged {
                count: narrow.len() as u64,
            },
            depth,
            x,
            width: merged_weight,
        }));
    }
    pending.extend(placed.into_iter().rev());
}

/// The smallest weight a frame needs so that at most `max_frames` frames are kept.
///
/// A child never outweighs its parent, so "weight at least t" always selects a
/// connected top part of the tree and a plain threshold is enough.
pub(crate) fn weight_for_budget(graph: &FlameGraph, max_frames: usize) -> u64 {
    let mut weights: Vec<u64> = graph.nodes.iter().map(|n| n.total).collect();
    if max_frames == 0 || weights.len() <= max_frames {
        return 0;
    }
    let kth = weights.len() - max_frames;
    let (_, &mut threshold, _) = weights.select_nth_unstable(kth);
    // Ties at the threshold could overshoot the budget; excluding them stays under it.
    let kept = graph.nodes.iter().filter(|n| n.total >= threshold).count();
    if kept > max_frames {
        threshold + 1
    } else {
        threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(stacks: &[(&str, u64)]) -> FlameGraph {
        let mut g = FlameGraph::new();
        for (stack, weight) in stacks {
            g.add(stack.split(';'), *weight);
        }
        g
    }

    fn describe(g: &FlameGraph, layout: &Layout) -> Vec<String> {
        layout
            .frames
            .iter()
            .map(|f| {
                let name = match f.label {
                    Label::Node(id) => g.name(g.node(id).name).to_string(),
                    Label::Merged { count } => format!("[{count}]"),
                };
                format!("{}:{}@{}+{}", f.depth, name, f.x, f.width)
            })
            .collect()
    }

    #[test]
    fn children_are_left_aligned_in_name_order() {
        let g = graph(&[("m;b", 2), ("m;a", 3), ("m", 1), ("z", 4)]);
        let layout = Layout::new(&g, 0.0);
        assert_eq!(
            describe(&g, &layout),
            ["0:all@0+10", "1:m@0+6", "2:a@0+3", "2:b@3+2", "1:z@6+4"]
        );
        assert_eq!(layout.max_depth, 2);
    }

    #[test]
    fn narrow_siblings_merge_after_the_wide_ones() {
        let g = graph(&[("m;a", 50), ("m;b", 3), ("m;c", 3), ("m;d", 1), ("n", 43)]);
        let layout = Layout::new(&g, 5.0);
        assert_eq!(
            describe(&g, &layout),
            [
                "0:all@0+100",
                "1:m@0+57",
                "2:a@0+50",
                "2:[3]@50+7",
                "1:n@57+43"
            ]
        );
    }

    #[test]
    fn merged_box_under_the_threshold_is_left_out() {
        let g = graph(&[("m;a", 50), ("m;b", 1), ("m;c", 1)]);
        let layout = Layout::new(&g, 5.0);
        assert_eq!(
            describe(&g, &layout),
            ["0:all@0+52", "1:m@0+52", "2:a@0+50"]
        );
    }

    #[test]
    fn budget_threshold_keeps_at_most_the_budget() {
        let g = graph(&[("a;b;c", 5), ("a;d", 3), ("e", 2), ("f", 1)]);
        // Weights: all 11, a 8, b 5, c 5, d 3, e 2, f 1.
        assert_eq!(weight_for_budget(&g, 100), 0);
        assert_eq!(weight_for_budget(&g, 5), 3);
        assert_eq!(weight_for_budget(&g, 4), 5);
        // Three frames would cut between b and c's equal weights: keep two instead.
        assert_eq!(weight_for_budget(&g, 3), 6);
    }
}
