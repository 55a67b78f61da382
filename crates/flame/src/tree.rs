//! The flame graph's data: a prefix tree of frames built from weighted stacks.
//!
//! Frame names are interned once. Most nodes have a handful of children, found
//! by walking a short sibling list; children of wide nodes (past
//! [`LIST_LIMIT`]) are also indexed in one hash map keyed by (parent, name), so
//! adding a stack costs about one cheap lookup per frame however wide the tree
//! is, without paying for a hash map entry per node.

use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Index of a node in [`FlameGraph::nodes`]; the root is always 0.
pub(crate) type NodeId = u32;

/// Index of an interned frame name.
pub(crate) type NameId = u32;

pub(crate) const ROOT: NodeId = 0;

/// Sentinel for "no node" in the intrusive child lists.
const NONE: NodeId = NodeId::MAX;

/// Children beyond this many are looked up through the hash map instead of the list.
const LIST_LIMIT: u32 = 8;

/// One frame in the tree: a name reached through a particular path from the root.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) name: NameId,
    /// Weight of every stack passing through this node. The weight of stacks
    /// ending here is not stored: it is the total less the children's, and
    /// leaving it out keeps a node at 24 bytes for graphs of millions of frames.
    pub(crate) total: u64,
    first_child: NodeId,
    next_sibling: NodeId,
    child_count: u32,
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
    names: Vec<Arc<str>>,
    name_ids: FxHashMap<Arc<str>, NameId>,
    /// Children of nodes with more than [`LIST_LIMIT`] of them.
    wide_children: FxHashMap<(NodeId, NameId), NodeId>,
    /// Nodes of the previous stack below the root. Consecutive stacks usually
    /// share a prefix (collapsed files are sorted, samples repeat), and one
    /// string comparison against it is much cheaper than a lookup.
    last_path: Vec<NodeId>,
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
            wide_children: FxHashMap::default(),
            last_path: Vec::new(),
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
        self.add_weight(ROOT, weight);
        let mut node = ROOT;
        let mut depth = 0;
        let mut on_last_path = true;
        for frame in frames_root_first {
            let frame = frame.as_ref();
            match self.last_path.get(depth) {
                Some(&cached) if on_last_path && self.node_name(cached) == frame => node = cached,
                _ => {
                    on_last_path = false;
                    node = self.child_or_insert(node, frame);
                    self.last_path.truncate(depth);
                    self.last_path.push(node);
                }
            }
            self.add_weight(node, weight);
            depth += 1;
        }
        self.last_path.truncate(depth);
    }

    fn add_weight(&mut self, node: NodeId, weight: u64) {
        let n = &mut self.nodes[node as usize];
        n.total = n.total.saturating_add(weight);
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
            node = self.child_named(node, frame.as_ref())?;
        }
        Some(FrameWeight {
            total: self.nodes[node as usize].total,
            self_weight: self.self_weight(node),
        })
    }

    /// Weight of the stacks ending at `id`: what its children do not account for.
    pub(crate) fn self_weight(&self, id: NodeId) -> u64 {
        let children: u64 = self
            .children_of(id)
            .map(|c| self.nodes[c as usize].total)
            .sum();
        self.nodes[id as usize].total.saturating_sub(children)
    }

    fn node_name(&self, id: NodeId) -> &str {
        &self.names[self.nodes[id as usize].name as usize]
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
        match self.find_child(parent, name) {
            Some(child) => child,
            None => self.insert_child(parent, name),
        }
    }

    /// The child of `parent` called `name`, if any.
    pub(crate) fn child_named(&self, parent: NodeId, name: &str) -> Option<NodeId> {
        self.find_child(parent, *self.name_ids.get(name)?)
    }

    fn find_child(&self, parent: NodeId, name: NameId) -> Option<NodeId> {
        if self.nodes[parent as usize].child_count > LIST_LIMIT {
            return self.wide_children.get(&(parent, name)).copied();
        }
        self.children_of(parent)
            .find(|&c| self.nodes[c as usize].name == name)
    }

    fn insert_child(&mut self, parent: NodeId, name: NameId) -> NodeId {
        let child = NodeId::try_from(self.nodes.len()).expect("more than 4 billion frames");
        let mut node = Node::new(name);
        let p = &mut self.nodes[parent as usize];
        node.next_sibling = p.first_child;
        p.first_child = child;
        p.child_count += 1;
        let count = p.child_count;
        self.nodes.push(node);
        if count == LIST_LIMIT + 1 {
            // The list just became too long to scan: index all of it.
            let all: Vec<NodeId> = self.children_of(parent).collect();
            for c in all {
                self.wide_children
                    .insert((parent, self.nodes[c as usize].name), c);
            }
        } else if count > LIST_LIMIT {
            self.wide_children.insert((parent, name), child);
        }
        child
    }

    fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = NameId::try_from(self.names.len()).expect("more than 4 billion names");
        let shared: Arc<str> = name.into();
        self.names.push(Arc::clone(&shared));
        self.name_ids.insert(shared, id);
        id
    }
}

impl Node {
    fn new(name: NameId) -> Self {
        Node {
            name,
            total: 0,
            first_child: NONE,
            next_sibling: NONE,
            child_count: 0,
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
