//! The execution tree across stored JVMs (`GET /api/distributed`): each chosen JVM's
//! stored stream is read as one recording and merged by `jscope_analysis::distributed`,
//! the same code `jscope merge --data` runs, so the collector and the CLI agree on
//! matches, grafting and clock offsets.

use std::collections::HashMap;
use std::path::Path;

use jscope_analysis::distributed::{
    load_members, load_source, DistributedTree, DistributedView, FlatTree, LoadError, Member,
    MemberSource, RecordingStore,
};
use jscope_analysis::trace::TraceOptions;

use crate::file::FileStore;
use crate::store::Store;
use crate::StoreError;

/// Which JVMs, which time and how much of the tree.
#[derive(Debug, Clone, Default)]
pub struct DistributedQuery {
    /// Stream ids; every stored JVM when empty.
    pub jvms: Vec<String>,
    /// Epoch ns on the reference JVM's clock: only top-level calls (and the remote
    /// calls under them) that overlap `[from_ns, to_ns]` are kept.
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    pub max_depth: Option<usize>,
    pub min_duration_ns: u64,
    /// Methods to leave out (substring or glob of `pkg.Class.method`).
    pub hide: Vec<String>,
}

/// The merged tree of the query's JVMs as rows (`FlatTree`, as `jscope tree
/// --distributed --format json` prints it).
pub fn distributed_tree(store: &dyn Store, q: &DistributedQuery) -> Result<FlatTree, StoreError> {
    let ids = chosen(store, &q.jvms);
    if ids.is_empty() {
        return Err(StoreError::BadQuery("the collector holds no JVM".into()));
    }
    let options = TraceOptions::hiding(&q.hide);
    // Everything stored of each JVM: a call that overlaps the window may have begun
    // long before it, and the window is on the reference's clock, not on this JVM's.
    let members = load_members(&ids, |id| {
        let bytes = store.raw(id, None, None)?;
        Member::from_bytes(id, &bytes, &options).map_err(|e| StoreError::Unreadable {
            jvm: id.clone(),
            message: e.to_string(),
        })
    })?;
    let origins: Vec<u64> = members.iter().map(|m| m.start_wall_ns).collect();
    let tree = DistributedTree::build(members);
    let view = DistributedView {
        jvm: None,
        max_depth: q.max_depth,
        min_duration_ns: q.min_duration_ns,
    };
    let mut flat = tree.flatten(&view);
    if q.from_ns.is_some() || q.to_ns.is_some() {
        keep_window(&mut flat, &origins, q.from_ns, q.to_ns);
    }
    Ok(flat)
}

/// The ids asked for, or every stored JVM's (in the store's order).
fn chosen(store: &dyn Store, want: &[String]) -> Vec<String> {
    if !want.is_empty() {
        return want.to_vec();
    }
    store.jvms().into_iter().map(|j| j.identity.id).collect()
}

/// A collector's stores give the merge its members (`jscope merge --data` reads a
/// data directory through this too).
impl RecordingStore for dyn Store + '_ {
    type Error = StoreError;

    fn recording(&self, jvm: &str) -> Result<Vec<u8>, StoreError> {
        self.raw(jvm, None, None)
    }
}

/// The members of `sources` (recording files, JVMs of collector data
/// directories), as many read at a time as there are cores; each data directory is
/// opened once, read-only (a collector may be writing to it). `warn` hears of each
/// recording read only up to its damage.
pub fn load_sources(
    sources: &[MemberSource],
    options: &TraceOptions,
    warn: &(dyn Fn(String) + Sync),
) -> Result<Vec<Member>, LoadError<StoreError>> {
    let mut stores: HashMap<&Path, Box<dyn Store>> = HashMap::new();
    for source in sources {
        if let MemberSource::Data { dir, .. } = source {
            if !stores.contains_key(dir.as_path()) {
                let store =
                    FileStore::open_read_only(dir).map_err(|source| LoadError::OpenStore {
                        dir: dir.clone(),
                        source,
                    })?;
                stores.insert(dir, Box::new(store));
            }
        }
    }
    load_members(sources, |source| {
        let member = load_source(source, options, |dir| Ok(&stores[dir]))?;
        if let Some(d) = &member.tree.damage {
            warn(format!("{} is {d}; read up to there", source.name()));
        }
        Ok(member)
    })
}

/// Drops the top-level rows (with their subtrees) outside `[from, to]` (epoch ns).
/// Rows are on the reference's timeline, those of unlinked JVMs on their own clock;
/// `origins` are each JVM's recording start on its wall clock.
fn keep_window(flat: &mut FlatTree, origins: &[u64], from: Option<u64>, to: Option<u64>) {
    let origin = |j: usize| origins.get(j).copied().unwrap_or(0) as i128;
    let mut keep = vec![false; flat.nodes.len()];
    for (i, n) in flat.nodes.iter().enumerate() {
        keep[i] = match n.parent {
            Some(p) => keep[p],
            None => {
                let at = origin(if n.own_clock { n.jvm } else { flat.reference });
                let (start, end) = (at + n.start_ns as i128, at + n.end_ns as i128);
                from.is_none_or(|f| end >= f as i128) && to.is_none_or(|t| start <= t as i128)
            }
        };
    }
    retain_rows(flat, &keep);
}

/// Keeps the rows marked in `keep` (a row's parent is kept with it), renumbering
/// the parents.
fn retain_rows(flat: &mut FlatTree, keep: &[bool]) {
    let new_index: Vec<usize> = keep
        .iter()
        .scan(0, |kept, &k| {
            let at = *kept;
            *kept += usize::from(k);
            Some(at)
        })
        .collect();
    let mut rows = keep.iter();
    flat.nodes
        .retain(|_| *rows.next().expect("one mark per row"));
    for n in &mut flat.nodes {
        n.parent = n.parent.map(|p| new_index[p]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_analysis::distributed::FlatNode;

    fn node(parent: Option<usize>, start_ns: i64, end_ns: i64) -> FlatNode {
        FlatNode {
            parent,
            jvm: 0,
            root_jvm: 0,
            depth: parent.map_or(0, |_| 1),
            label: format!("{start_ns}"),
            thread: "main".into(),
            start_ns,
            end_ns,
            uncertainty_ns: 0,
            own_clock: false,
            duration_ns: (end_ns - start_ns) as u64,
            self_ns: 0,
            flags: 0,
            remote: None,
        }
    }

    #[test]
    fn a_window_keeps_the_top_level_calls_it_overlaps_with_their_subtrees() {
        let mut flat = FlatTree {
            reference: 0,
            jvms: vec![],
            matched: 0,
            unmatched_clients: 0,
            unmatched_servers: 0,
            nodes: vec![
                node(None, 0, 10),
                node(Some(0), 2, 3),
                node(None, 20, 30),
                node(Some(2), 21, 22),
                node(Some(3), 21, 22),
                node(None, 40, 50),
            ],
        };
        // The reference started at epoch ns 1000: the window is 1015..=1025.
        keep_window(&mut flat, &[1000], Some(1015), Some(1025));
        let rows: Vec<(Option<usize>, i64)> =
            flat.nodes.iter().map(|n| (n.parent, n.start_ns)).collect();
        assert_eq!(rows, vec![(None, 20), (Some(0), 21), (Some(1), 21)]);
    }
}
