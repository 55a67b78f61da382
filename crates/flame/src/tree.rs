//! The flame graph's data: a prefix tree of frames built from weighted stacks.
//!
//! Frame names are interned once, and a node's children are found through one
//! hash map keyed by (parent, name) so that adding a stack costs one lookup per
//! frame no matter how wide the tree is.

use rustc_hash::FxHashMap;

/// Index of a node in [`FlameGraph::nodes`]; the root is always 0.
pub(crate) type NodeId = u32;

/// Index of an interned frame name.
pub(crate) type NameId = u32;

pub(crate) const ROOT: NodeId = 0;

/// Sentinel for "no node" in the intrusive child lists.
const NONE: NodeId = NodeId::MAX;

/// One frame in the tree: a name reached through a particular path from the root.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) name: NameId,
    /// Weight of every stack passing through this node.
    pub(crate) total: u64,
    /// Weight of stacks that end exactly here.
    pub(crate) own: u64,
    first_child: NodeId,
    next_sibling: NodeId,
}

/// Total and own ("self") weight of one node, as returned by [`FlameGraph::weight_at`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameWeight {
    /// Weight of all stacks that pass through the frame.
    pub total: u64,
    /// Weight of the stacks whose leaf is the frame.
    pub self_weight: u64,
}

/// A flame graph: weighted stacks merged into a tree of frames.
///
/// ```
/// let mut g = jscope_flame::FlameGraph::new();
/// g.add(["main", "work", "compute"], 3);
/// g.add(["main", "work"], 1);
/// assert_eq!(g.total(), 4);
/// assert_eq!(g.weight_at(["main", "work"]).unwrap().self_weight, 1);
/// ```
#[derive(Debug, Clone)]
pub struct FlameGraph {
    pub(crate) nodes: Vec<Node>,
    names: Vec<Box<str>>,
    name_ids: FxHashMap<Box<str>, NameId>,
    children: FxHashMap<(NodeId, NameId), NodeId>,
}

impl Default for FlameGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl FlameGraph {
    /// The name of the synthetic root frame that spans every sample.
    pub const ROOT_NAME: &'static str = "all";

    /// An empty graph holding only the root frame.
    pub fn new() -> Self {
        let mut graph = FlameGraph {
            nodes: Vec::new(),
            names: Vec::new(),
            name_ids: FxHashMap::default(),
            children: FxHashMap::default(),
        };
        let root_name = graph.intern(Self::ROOT_NAME);
        graph.nodes.push(Node::new(root_name));
        graph
    }

    /// Adds one stack, listed root (outermost caller) first, with its weight.
    ///
    /// An empty stack counts towards the root only; a zero weight changes nothing.
    pub fn add<I, S>(&mut self, frames_root_first: I, weight: u64)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        if weight == 0 {
            return;
        }
        let mut node = ROOT;
        self.nodes[ROOT as usize].total = self.nodes[ROOT as usize].total.saturating_add(weight);
        for frame in frames_root_first {
            node = self.child_or_insert(node, frame.as_ref());
            let n = &mut self.nodes[node as usize];
            n.total = n.total.saturating_add(weight);
        }
        let leaf = &mut self.nodes[node as usize];
        leaf.own = leaf.own.saturating_add(weight);
    }

    /// The weight of all stacks added so far.
    pub fn total(&self) -> u64 {
        self.nodes[ROOT as usize].total
    }

    /// Number of frames in the tree, not counting the root.
    pub fn frame_count(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Weights of the frame reached by `path` (root first), or `None` if no stack
    /// passed through it. The empty path names the root.
    pub fn weight_at<I, S>(&self, path: I) -> Option<FrameWeight>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut node = ROOT;
        for frame in path {
            let name = *self.name_ids.get(frame.as_ref())?;
            node = *self.children.get(&(node, name))?;
        }
        let n = &self.nodes[node as usize];
        Some(FrameWeight {
            total: n.total,
            self_weight: n.own,
        })
    }

    pub(crate) fn name(&self, id: NameId) -> &str {
        &self.names[id as usize]
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// Children of `id` in insertion order (most recent first); callers sort as needed.
    pub(crate) fn children_of(&self, id: NodeId) -> ChildIter<'_> {
        ChildIter {
            graph: self,
            next: self.nodes[id as usize].first_child,
        }
    }

    fn child_or_insert(&mut self, parent: NodeId, frame: &str) -> NodeId {
        let name = self.intern(frame);
        if let Some(&child) = self.children.get(&(parent, name)) {
            return child;
        }
        let child = NodeId::try_from(self.nodes.len()).expect("more than 4 billion frames");
        let mut node = Node::new(name);
        node.next_sibling = self.nodes[parent as usize].first_child;
        self.nodes[parent as usize].first_child = child;
        self.nodes.push(node);
        self.children.insert((parent, name), child);
        child
    }

    fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = NameId::try_from(self.names.len()).expect("more than 4 billion names");
        self.names.push(name.into());
        self.name_ids.insert(name.into(), id);
        id
    }
}

impl Node {
    fn new(name: NameId) -> Self {
        Node {
            name,
            total: 0,
            own: 0,
            first_child: NONE,
            next_sibling: NONE,
        }
    }
}

/// Iterator over the ids of one node's children.
pub(crate) struct ChildIter<'a> {
    graph: &'a FlameGraph,
    next: NodeId,
}

impl Iterator for ChildIter<'_> {
    type Item = NodeId;

    fn next(&mut self) -> Option<NodeId> {
        if self.next == NONE {
            return None;
        }
        let id = self.next;
        self.next = self.graph.nodes[id as usize].next_sibling;
        Some(id)
    }
}
