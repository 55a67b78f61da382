//! Execution trees across JVMs (JaViz's merge and tree generation).
//!
//! Each JVM's recording gives a [`CallTree`](crate::trace::CallTree) and its remote
//! call records ([`Member`]). [`match_calls`] links every client record to the server
//! record of the same call by connection identity (the client's local and remote
//! endpoints are the server's remote and local ones) and per-connection order
//! (`conn_seq`), with the in-band request id when both sides carry one; clocks of
//! different JVMs are never compared to match. [`DistributedTree::build`] then
//!
//! - grafts each server's subtree (the calls its dispatch thread made between the
//!   server record's start and end, on the server's own clock) under the client's
//!   innermost traced call enclosing the client record (the stub call);
//! - leaves those calls out of the server's own tree (they belong to the client),
//!   while server calls not matched to a loaded client stay in the server's tree;
//! - estimates each JVM's clock offset to a reference JVM from the matched pairs
//!   ([`ClockOffset`]) and gives per-call network time (client duration minus server
//!   duration).
//!
//! The session file of `jscope merge` ([`Session`]), the merged tree as Chrome
//! trace-event JSON ([`FlatTree::write_chrome`]) and the loading of members from
//! files or a collector's store ([`load_source`], [`load_stored`],
//! [`load_members`]) live here too, so the CLI and the collector share them.
//!
//! See docs/DISTRIBUTED.md.

mod chrome;
mod clock;
mod flat;
mod load;
mod matching;
mod member;
mod render;
mod session;

#[cfg(test)]
mod files_tests;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::trace::{NodeRef, ThreadTree};

pub use clock::{estimate_offsets, ClockOffset};
pub use flat::{FlatJvm, FlatNode, FlatRemote, FlatTree};
pub use load::{
    load_members, load_source, load_stored, LoadError, MemberSource, RecordingStore, StoredError,
};
pub use matching::{match_calls, CallRef, Match};
pub use member::{Endpoint, Member, ProtocolName, Remote, RemoteSideName};
pub use render::DistributedView;
pub use session::{
    is_session, NoSuchCall, Session, SessionError, SessionMatch, SessionMember, SESSION_VERSION,
};

/// A call in one JVM's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct MRef {
    pub jvm: usize,
    pub node: NodeRef,
}

/// A matched remote call placed in the merged tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    pub client: CallRef,
    pub server: CallRef,
    /// The client's innermost traced call around the client record (the stub
    /// call); None when the client thread has no traced call around it, and the
    /// remote subtree then hangs under the client JVM's virtual root.
    pub at: Option<NodeRef>,
    /// The server's calls during the dispatch, in the server JVM's tree.
    pub roots: Vec<NodeRef>,
    /// Client duration minus server duration (0 if the server took longer, which
    /// only measurement noise explains).
    pub network_ns: u64,
}

/// The part of the tree below a call: one of its JVM's calls or a remote call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    Call(MRef),
    /// Index in [`DistributedTree::links`].
    Remote(usize),
}

/// Several JVMs' call trees merged through their matched remote calls.
#[derive(Debug, Clone)]
pub struct DistributedTree {
    pub members: Vec<Member>,
    pub links: Vec<Link>,
    /// Client records with no server record among the loaded JVMs.
    pub unmatched_clients: Vec<CallRef>,
    /// Server records with no client record among the loaded JVMs; their calls stay
    /// in the server's own tree.
    pub unmatched_servers: Vec<CallRef>,
    /// The JVM whose clock the timeline uses: the first one that is never the
    /// server of a matched call (the client of the whole session), else the first.
    pub reference: usize,
    /// Per member; None for JVMs not linked to the reference by matched calls.
    pub offsets: Vec<Option<ClockOffset>>,
    /// (client JVM, stub call) -> links under it.
    links_at: HashMap<MRef, Vec<usize>>,
    /// Per JVM, links with no enclosing client call.
    links_at_root: Vec<Vec<usize>>,
    /// Server calls grafted under a client: left out of their own JVM's tree.
    grafted: HashSet<MRef>,
}

impl DistributedTree {
    /// Matches the members' remote calls and builds the merged tree.
    pub fn build(members: Vec<Member>) -> DistributedTree {
        let matches = match_calls(&members);
        Self::with_matches(members, &matches)
    }

    /// Builds the merged tree from given matches (e.g. a session's match table).
    pub fn with_matches(members: Vec<Member>, matches: &[Match]) -> DistributedTree {
        let links: Vec<Link> = matches.iter().map(|m| link(&members, m)).collect();
        let reference = pick_reference(members.len(), matches);
        let offsets = estimate_offsets(&members, matches, reference);
        let (unmatched_clients, unmatched_servers) = unmatched(&members, matches);
        let mut t = DistributedTree {
            links_at_root: vec![vec![]; members.len()],
            members,
            links,
            unmatched_clients,
            unmatched_servers,
            reference,
            offsets,
            links_at: HashMap::new(),
            grafted: HashSet::new(),
        };
        t.index_links();
        t
    }

    fn index_links(&mut self) {
        for (i, l) in self.links.iter().enumerate() {
            match l.at {
                Some(node) => self
                    .links_at
                    .entry(MRef {
                        jvm: l.client.jvm,
                        node,
                    })
                    .or_default()
                    .push(i),
                None => self.links_at_root[l.client.jvm].push(i),
            }
            for &node in &l.roots {
                self.grafted.insert(MRef {
                    jvm: l.server.jvm,
                    node,
                });
            }
        }
    }

    /// The matches the tree was built from.
    pub fn matches(&self) -> Vec<Match> {
        self.links
            .iter()
            .map(|l| Match {
                client: l.client,
                server: l.server,
            })
            .collect()
    }

    pub fn remote(&self, c: CallRef) -> &Remote {
        &self.members[c.jvm].remotes[c.call]
    }

    pub fn node(&self, r: MRef) -> &crate::trace::Node {
        self.members[r.jvm].tree.node(r.node)
    }

    pub fn label(&self, r: MRef) -> &str {
        let tree = &self.members[r.jvm].tree;
        tree.label(tree.node(r.node).method)
    }

    pub fn thread_name(&self, r: MRef) -> &str {
        &self.members[r.jvm].tree.threads[r.node.thread].name
    }

    /// Whether a call was grafted under another JVM's client call.
    pub fn is_grafted(&self, r: MRef) -> bool {
        self.grafted.contains(&r)
    }

    /// A JVM's own tree below its virtual root: its root calls minus those that
    /// belong to other JVMs' calls, and the remote calls with no enclosing call.
    pub fn roots(&self, jvm: usize) -> Vec<Child> {
        let own = self.members[jvm].tree.virtual_root_children();
        let mut out = self.own_children(jvm, own);
        out.extend(self.links_at_root[jvm].iter().map(|&i| Child::Remote(i)));
        self.sort_children(out)
    }

    /// A call's callees (minus those grafted elsewhere), the threads it started and
    /// the remote calls made inside it, in order of start.
    pub fn children(&self, r: MRef) -> Vec<Child> {
        let own = self.members[r.jvm].tree.children(r.node);
        let mut out = self.own_children(r.jvm, own);
        if let Some(ls) = self.links_at.get(&r) {
            out.extend(ls.iter().map(|&i| Child::Remote(i)));
        }
        self.sort_children(out)
    }

    /// The server calls of a remote call.
    pub fn remote_children(&self, link: usize) -> Vec<Child> {
        let l = &self.links[link];
        l.roots
            .iter()
            .map(|&node| {
                Child::Call(MRef {
                    jvm: l.server.jvm,
                    node,
                })
            })
            .collect()
    }

    fn own_children(&self, jvm: usize, nodes: Vec<NodeRef>) -> Vec<Child> {
        nodes
            .into_iter()
            .map(|node| MRef { jvm, node })
            .filter(|r| !self.grafted.contains(r))
            .map(Child::Call)
            .collect()
    }

    fn sort_children(&self, mut v: Vec<Child>) -> Vec<Child> {
        v.sort_by_key(|c| match *c {
            Child::Call(r) => self.node(r).enter_ns,
            Child::Remote(i) => self.remote(self.links[i].client).start_ns,
        });
        v
    }

    /// A JVM's time (ns since its recording start) on the reference JVM's timeline
    /// (ns since the reference recording's start), with its uncertainty; None when
    /// the JVM is not linked to the reference.
    pub fn on_reference(&self, jvm: usize, rel_ns: u64) -> Option<(i128, u64)> {
        let o = self.offsets[jvm]?;
        let r = &self.members[self.reference];
        let t = self.members[jvm].wall_ns(rel_ns) + o.offset_ns as i128 - r.start_wall_ns as i128;
        Some((t, o.uncertainty_ns))
    }
}

fn link(members: &[Member], m: &Match) -> Link {
    let (cm, sm) = (&members[m.client.jvm], &members[m.server.jvm]);
    let (c, s) = (&cm.remotes[m.client.call], &sm.remotes[m.server.call]);
    let at = cm.thread_index(c.thread).and_then(|t| {
        let tt = &cm.tree.threads[t];
        deepest_enclosing(tt, c.start_ns, c.end_ns).map(|node| NodeRef { thread: t, node })
    });
    let roots = sm
        .thread_index(s.thread)
        .map(|t| {
            calls_within(&sm.tree.threads[t], s.start_ns, s.end_ns)
                .into_iter()
                .map(|node| NodeRef { thread: t, node })
                .collect()
        })
        .unwrap_or_default();
    Link {
        client: m.client,
        server: m.server,
        at,
        roots,
        network_ns: c.duration_ns().saturating_sub(s.duration_ns()),
    }
}

/// The innermost call of a thread whose interval holds [start, end]. A thread's
/// nodes are in pre-order, which is the order of entry, so the last call entered
/// by `start` is found by binary search and the answer is it or an ancestor.
fn deepest_enclosing(t: &ThreadTree, start: u64, end: u64) -> Option<usize> {
    let holds = |i: usize| t.nodes[i].enter_ns <= start && t.nodes[i].exit_ns >= end;
    let mut i = t
        .nodes
        .partition_point(|n| n.enter_ns <= start)
        .checked_sub(1)?;
    loop {
        if holds(i) {
            return Some(i);
        }
        let depth = t.nodes[i].depth.checked_sub(1)?;
        i = (0..i).rev().find(|&k| t.nodes[k].depth == depth)?;
    }
}

/// The outermost calls of a thread lying entirely within [start, end]: what the
/// thread did for this remote call. Calls that began before it (JaViz's "method A"
/// of the server's own program) are not taken; calls entered inside it that end
/// after it are not taken either, only what they called inside it.
fn calls_within(t: &ThreadTree, start: u64, end: u64) -> Vec<usize> {
    let mut out = vec![];
    let mut k = t.nodes.partition_point(|n| n.enter_ns < start);
    while let Some(n) = t.nodes.get(k).filter(|n| n.enter_ns <= end) {
        if n.exit_ns <= end {
            out.push(k);
            k += 1 + n.descendants as usize;
        } else {
            k += 1;
        }
    }
    out
}

fn pick_reference(members: usize, matches: &[Match]) -> usize {
    let servers: HashSet<usize> = matches.iter().map(|m| m.server.jvm).collect();
    let clients: HashSet<usize> = matches.iter().map(|m| m.client.jvm).collect();
    (0..members)
        .find(|j| clients.contains(j) && !servers.contains(j))
        .or_else(|| (0..members).find(|j| !servers.contains(j)))
        .unwrap_or(0)
}

fn unmatched(members: &[Member], matches: &[Match]) -> (Vec<CallRef>, Vec<CallRef>) {
    let used: HashSet<CallRef> = matches.iter().flat_map(|m| [m.client, m.server]).collect();
    let (mut clients, mut servers) = (vec![], vec![]);
    for (jvm, m) in members.iter().enumerate() {
        for (call, r) in m.remotes.iter().enumerate() {
            let c = CallRef { jvm, call };
            if used.contains(&c) {
                continue;
            }
            match r.side {
                RemoteSideName::Client => clients.push(c),
                RemoteSideName::Server => servers.push(c),
            }
        }
    }
    (clients, servers)
}
