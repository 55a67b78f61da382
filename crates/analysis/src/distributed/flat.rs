//! The merged tree as flat, serialisable rows (parent by index) for JSON output
//! and UIs: every node carries its JVM (for colouring), remote calls carry their
//! network time, and times are on the reference timeline with their uncertainty.

use serde::Serialize;

use super::{Child, DistributedTree, DistributedView, MRef};

/// One JVM of the session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatJvm {
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub command_line: String,
    /// Add to this JVM's clock to get the reference's; None when not linked.
    pub offset_ns: Option<i64>,
    pub uncertainty_ns: Option<u64>,
}

/// A call, or a remote call (`remote` set) whose children are the server's calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatNode {
    /// Index of the parent row; None for a JVM's top-level rows.
    pub parent: Option<usize>,
    /// The JVM this row ran in (the client's for a remote call).
    pub jvm: usize,
    /// The JVM whose tree this row is shown in (its virtual root).
    pub root_jvm: usize,
    pub depth: usize,
    /// `pkg.Class.method`, or `protocol object method` for a remote call.
    pub label: String,
    pub thread: String,
    /// On the reference timeline (ns since the reference recording's start); for a
    /// JVM not linked to the reference, on its own clock.
    pub start_ns: i64,
    pub end_ns: i64,
    /// How far `start_ns`/`end_ns` may be off (0 on the reference JVM).
    pub uncertainty_ns: u64,
    pub own_clock: bool,
    pub duration_ns: u64,
    pub self_ns: u64,
    pub flags: u8,
    pub remote: Option<FlatRemote>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatRemote {
    pub protocol: String,
    pub server_jvm: usize,
    pub server: String,
    pub client: String,
    pub conn_seq: u64,
    pub object: String,
    pub method: String,
    pub request_id: Option<String>,
    pub client_ns: u64,
    pub server_ns: u64,
    pub network_ns: u64,
    pub failed: bool,
}

/// The session's JVMs and the merged tree's rows in pre-order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatTree {
    pub reference: usize,
    pub jvms: Vec<FlatJvm>,
    pub matched: usize,
    pub unmatched_clients: usize,
    pub unmatched_servers: usize,
    pub nodes: Vec<FlatNode>,
}

impl DistributedTree {
    /// The rows `write_text` would print, as data.
    pub fn flatten(&self, view: &DistributedView) -> FlatTree {
        let mut nodes = vec![];
        let mut seen = std::collections::HashSet::new();
        for j in self.jvm_order(view) {
            let mut stack: Vec<(Child, Option<usize>, usize)> = self
                .roots(j)
                .into_iter()
                .rev()
                .map(|c| (c, None, 0))
                .collect();
            while let Some((c, parent, depth)) = stack.pop() {
                if !self.shows(c, view, &mut seen) {
                    continue;
                }
                nodes.push(self.flat_node(c, parent, j, depth));
                if view.max_depth.is_some_and(|d| depth + 1 >= d) {
                    continue;
                }
                let me = Some(nodes.len() - 1);
                stack.extend(self.kids(c).into_iter().rev().map(|k| (k, me, depth + 1)));
            }
        }
        FlatTree {
            reference: self.reference,
            jvms: self.flat_jvms(),
            matched: self.links.len(),
            unmatched_clients: self.unmatched_clients.len(),
            unmatched_servers: self.unmatched_servers.len(),
            nodes,
        }
    }

    fn flat_jvms(&self) -> Vec<FlatJvm> {
        self.members
            .iter()
            .zip(&self.offsets)
            .map(|(m, o)| FlatJvm {
                name: m.name.clone(),
                host: m.host.clone(),
                pid: m.pid,
                command_line: m.command_line.clone(),
                offset_ns: o.map(|o| o.offset_ns),
                uncertainty_ns: o.map(|o| o.uncertainty_ns),
            })
            .collect()
    }

    fn flat_node(
        &self,
        c: Child,
        parent: Option<usize>,
        root_jvm: usize,
        depth: usize,
    ) -> FlatNode {
        match c {
            Child::Call(r) => self.flat_call(r, parent, root_jvm, depth),
            Child::Remote(i) => self.flat_remote(i, parent, root_jvm, depth),
        }
    }

    /// Times of a JVM's interval on the reference timeline, or on its own clock.
    fn placed(&self, jvm: usize, start: u64, end: u64) -> (i64, i64, u64, bool) {
        match (self.on_reference(jvm, start), self.on_reference(jvm, end)) {
            (Some((s, u)), Some((e, _))) => (s as i64, e as i64, u, false),
            _ => (start as i64, end as i64, 0, true),
        }
    }

    fn flat_call(&self, r: MRef, parent: Option<usize>, root_jvm: usize, depth: usize) -> FlatNode {
        let n = self.node(r);
        let (start_ns, end_ns, uncertainty_ns, own_clock) =
            self.placed(r.jvm, n.enter_ns, n.exit_ns);
        FlatNode {
            parent,
            jvm: r.jvm,
            root_jvm,
            depth,
            label: self.label(r).to_string(),
            thread: self.thread_name(r).to_string(),
            start_ns,
            end_ns,
            uncertainty_ns,
            own_clock,
            duration_ns: n.duration_ns(),
            self_ns: self.self_ns(r),
            flags: n.flags,
            remote: None,
        }
    }

    /// The self time of call `r` in the merged tree: its own JVM's self time less
    /// the client time of the remote calls grafted under it (they are its children
    /// here, and the time spent waiting on them is theirs).
    pub fn self_ns(&self, r: MRef) -> u64 {
        let remote: u64 = self.links_at.get(&r).map_or(0, |links| {
            links
                .iter()
                .map(|&i| self.remote(self.links[i].client).duration_ns())
                .sum()
        });
        self.node(r).self_ns.saturating_sub(remote)
    }

    fn flat_remote(
        &self,
        i: usize,
        parent: Option<usize>,
        root_jvm: usize,
        depth: usize,
    ) -> FlatNode {
        let l = &self.links[i];
        let (c, s) = (self.remote(l.client), self.remote(l.server));
        let (start_ns, end_ns, uncertainty_ns, own_clock) =
            self.placed(l.client.jvm, c.start_ns, c.end_ns);
        let thread = self.members[l.client.jvm]
            .thread_index(c.thread)
            .map_or_else(String::new, |t| {
                self.members[l.client.jvm].tree.threads[t].name.clone()
            });
        FlatNode {
            parent,
            jvm: l.client.jvm,
            root_jvm,
            depth,
            label: format!("{} {} {}", c.protocol, c.object, c.method),
            thread,
            start_ns,
            end_ns,
            uncertainty_ns,
            own_clock,
            duration_ns: c.duration_ns(),
            self_ns: l.network_ns,
            flags: 0,
            remote: Some(FlatRemote {
                protocol: c.protocol.to_string(),
                server_jvm: l.server.jvm,
                server: c.remote.to_string(),
                client: c.local.to_string(),
                conn_seq: c.conn_seq,
                object: c.object.clone(),
                method: c.method.clone(),
                request_id: c.request_id.clone(),
                client_ns: c.duration_ns(),
                server_ns: s.duration_ns(),
                network_ns: l.network_ns,
                failed: c.failed || s.failed,
            }),
        }
    }
}
