//! One stored JVM's exact-trace call tree for the UI's tree browser
//! (`GET /api/jvms/ID/tree`): the tree is built once from the stored recording by
//! `jscope_analysis::trace` (the code `jscope tree` runs) and kept while the JVM's
//! stored data is unchanged; the browser then asks for one node's children at a
//! time (lazy, so a deep or wide tree costs only what is expanded), for the calls of
//! a method in tree order (find and find-next) and for per-method statistics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jscope_analysis::trace::{analyse_bytes, replay_bytes, Call, CallSink, CallTree, NodeRef};
use jscope_analysis::trace::{TraceOptions, TraceStats};
use jscope_analysis::ThreadMatcher;
use serde::Serialize;
use serde_json::json;

use crate::http::{Request, Response};
use crate::CollectorError;
use jscope_store::{Store, StoreError};

/// At most this many matches of a find are returned (the count says how many there are).
const MAX_MATCHES: usize = 10_000;
/// Children answered per request unless `limit` says otherwise, and the most it may say.
const PAGE: usize = 500;
const MAX_PAGE: usize = 10_000;

/// Trees kept at once: the least recently asked for goes first.
const KEPT_TREES: usize = 4;

/// The last tree built, per JVM, for the last few JVMs browsed: rebuilt when the
/// JVM's stored data or the hidden methods change.
#[derive(Default)]
pub struct TreeCache {
    trees: Mutex<Cached>,
}

#[derive(Default)]
struct Cached {
    /// JVM id -> the key it was built for, the tree, and when it was last asked for.
    trees: HashMap<String, (Key, Arc<Browsed>, u64)>,
    clock: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    last_seq: u64,
    bytes: u64,
    hide: Vec<String>,
}

/// A built tree with what the browser shows beside it.
struct Browsed {
    tree: CallTree,
    stats: TraceStats,
    /// Thread CPU ns of each call, by `tree.threads` index and node index, when the
    /// agent recorded CPU time.
    cpu: Vec<Vec<Option<u64>>>,
}

/// Records each call's CPU time at the slot the tree gives it: the tree numbers a
/// thread's calls in order of entry, per dense thread index, as this does.
#[derive(Default)]
struct CpuSink {
    /// Per dense thread index: CPU ns per call in order of entry.
    calls: Vec<Vec<Option<u64>>>,
    /// Thread id of each dense index.
    ids: HashMap<u32, u32>,
}

impl CallSink for CpuSink {
    fn enter(&mut self, thread: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        let t = thread as usize;
        if self.calls.len() <= t {
            self.calls.resize_with(t + 1, Vec::new);
        }
        self.calls[t].push(None);
        (self.calls[t].len() - 1) as u32
    }

    fn exit(&mut self, call: &Call) {
        self.ids.insert(call.thread_index, call.thread);
        if let Some(slot) = self
            .calls
            .get_mut(call.thread_index as usize)
            .and_then(|c| c.get_mut(call.slot as usize))
        {
            *slot = call.cpu_ns;
        }
    }
}

impl Browsed {
    fn build(bytes: &[u8], options: &TraceOptions, jvm: &str) -> Result<Browsed, CollectorError> {
        let unreadable = |e: jscope_analysis::trace::TraceError| {
            CollectorError::Store(StoreError::Unreadable {
                jvm: jvm.to_string(),
                message: e.to_string(),
            })
        };
        let (tree, stats, _) = analyse_bytes(bytes, options).map_err(unreadable)?;
        let (sink, _, _) = replay_bytes(bytes, options, CpuSink::default()).map_err(unreadable)?;
        let mut by_id: HashMap<u32, Vec<Option<u64>>> = HashMap::new();
        for (index, calls) in sink.calls.into_iter().enumerate() {
            if let Some(&id) = sink.ids.get(&(index as u32)) {
                by_id.insert(id, calls);
            }
        }
        let cpu = tree
            .threads
            .iter()
            .map(|t| {
                by_id
                    .remove(&t.thread)
                    .filter(|c| c.len() == t.nodes.len())
                    .unwrap_or_else(|| vec![None; t.nodes.len()])
            })
            .collect();
        Ok(Browsed { tree, stats, cpu })
    }

    fn row(&self, r: NodeRef, caller: Option<NodeRef>) -> NodeRow {
        let n = self.tree.node(r);
        NodeRow {
            id: id_of(r),
            label: self.tree.label(n.method).to_string(),
            caller: caller.map(|c| self.tree.label(self.tree.node(c).method).to_string()),
            thread: self.tree.threads[r.thread].name.clone(),
            enter_ns: n.enter_ns,
            exit_ns: n.exit_ns,
            duration_ns: n.duration_ns(),
            self_ns: n.self_ns,
            cpu_ns: self.cpu[r.thread][r.node],
            flags: n.flags,
            children: self.tree.children(r).len(),
        }
    }

    /// The calls whose label `matcher` matches, in tree order (depth first, a
    /// call's own callees before the threads it started), each as the path of ids
    /// from a top-level call down to it with each one's index among its parent's
    /// children (to fetch the right page of them); and how many there are in all.
    fn find(&self, matches: impl Fn(&str) -> bool) -> Found {
        // Each method's label is matched once, not once per call.
        let hit: Vec<bool> = self.tree.labels.iter().map(|l| matches(l)).collect();
        let unknown = matches(self.tree.label(u32::MAX));
        let mut found = Found::default();
        let mut path: Vec<(NodeRef, usize)> = Vec::new();
        // (node, its index among its siblings, depth in the browsed tree): depth
        // tells how much of `path` to keep.
        let mut stack: Vec<(NodeRef, usize, usize)> = self
            .tree
            .virtual_root_children()
            .into_iter()
            .enumerate()
            .rev()
            .map(|(i, r)| (r, i, 0))
            .collect();
        while let Some((r, index, depth)) = stack.pop() {
            path.truncate(depth);
            path.push((r, index));
            let method = self.tree.node(r).method as usize;
            if hit.get(method).copied().unwrap_or(unknown) {
                found.count += 1;
                if found.matches.len() < MAX_MATCHES {
                    found
                        .matches
                        .push(path.iter().map(|&(p, _)| id_of(p)).collect());
                    found.indexes.push(path.iter().map(|&(_, i)| i).collect());
                }
            }
            let kids = self.tree.children(r).into_iter().enumerate().rev();
            stack.extend(kids.map(|(i, c)| (c, i, depth + 1)));
        }
        found
    }
}

/// The answer to a find.
#[derive(Debug, Default, Serialize)]
struct Found {
    count: usize,
    /// Per match, the ids from a top-level call down to it.
    matches: Vec<Vec<String>>,
    /// Per match, the index of each of those calls among its parent's children.
    indexes: Vec<Vec<usize>>,
}

/// One page of a node's children (or of the top-level calls): their number, the
/// offset and the page.
fn page(req: &Request, all: Vec<NodeRef>) -> Result<(usize, usize, Vec<NodeRef>), CollectorError> {
    let number = |name: &str, default: usize| {
        req.param(name).map_or(Ok(default), |v| {
            v.parse::<usize>()
                .map_err(|_| CollectorError::BadQuery(format!("{name} must be a number")))
        })
    };
    let offset = number("offset", 0)?;
    let limit = number("limit", PAGE)?.clamp(1, MAX_PAGE);
    let total = all.len();
    let rows = all.into_iter().skip(offset).take(limit).collect();
    Ok((total, offset, rows))
}

/// One call as the browser shows it. Times are ns since the recording's start.
#[derive(Debug, Serialize)]
struct NodeRow {
    /// `THREAD.NODE`: the thread's index in the tree and the call's in its thread.
    id: String,
    label: String,
    /// The calling method; none for a call under the virtual root.
    caller: Option<String>,
    thread: String,
    enter_ns: u64,
    exit_ns: u64,
    duration_ns: u64,
    self_ns: u64,
    cpu_ns: Option<u64>,
    flags: u8,
    children: usize,
}

fn id_of(r: NodeRef) -> String {
    format!("{}.{}", r.thread, r.node)
}

fn parse_id(tree: &CallTree, id: &str) -> Result<NodeRef, CollectorError> {
    let bad = || CollectorError::BadQuery(format!("no call {id:?} in the tree"));
    let (t, n) = id.split_once('.').ok_or_else(bad)?;
    let r = NodeRef {
        thread: t.parse().map_err(|_| bad())?,
        node: n.parse().map_err(|_| bad())?,
    };
    let exists = tree
        .threads
        .get(r.thread)
        .is_some_and(|t| r.node < t.nodes.len());
    exists.then_some(r).ok_or_else(bad)
}

impl TreeCache {
    fn get(
        &self,
        store: &dyn Store,
        id: &str,
        hide: Vec<String>,
    ) -> Result<Arc<Browsed>, CollectorError> {
        let stored = store
            .jvms()
            .into_iter()
            .find(|j| j.identity.id == id)
            .ok_or_else(|| CollectorError::Store(StoreError::UnknownJvm(id.to_string())))?;
        let key = Key {
            last_seq: stored.last_seq(),
            bytes: stored.bytes(),
            hide,
        };
        {
            let mut cached = self.trees.lock().expect("tree cache");
            cached.clock += 1;
            let now = cached.clock;
            if let Some((k, b, used)) = cached.trees.get_mut(id) {
                if *k == key {
                    *used = now;
                    return Ok(b.clone());
                }
            }
        }
        let bytes = store.raw(id, None, None)?;
        let built = Arc::new(Browsed::build(
            &bytes,
            &TraceOptions::hiding(&key.hide),
            id,
        )?);
        let mut cached = self.trees.lock().expect("tree cache");
        cached.clock += 1;
        let now = cached.clock;
        cached
            .trees
            .insert(id.to_string(), (key, built.clone(), now));
        while cached.trees.len() > KEPT_TREES {
            let oldest = cached
                .trees
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(id, _)| id.clone())
                .expect("more than KEPT_TREES");
            cached.trees.remove(&oldest);
        }
        Ok(built)
    }
}

/// `GET /api/jvms/ID/tree`: `node=ID` its children (the virtual root's without it,
/// with the tree's summary), `offset` and `limit` (500) of them; `find=PATTERN`
/// (substring or glob of `pkg.Class.method`, `exact=1` for the whole label) the
/// matching calls' paths in tree order; `stats=1` the per-method statistics.
/// `hide` (repeatable) leaves methods out.
pub fn tree_of(
    cache: &TreeCache,
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<Response, CollectorError> {
    let b = cache.get(store, id, req.params("hide"))?;
    if let Some(pattern) = req.param("find") {
        let found = if matches!(req.param("exact"), Some("1" | "true")) {
            b.find(|label| label == pattern)
        } else {
            let m = ThreadMatcher::new(pattern);
            b.find(|label| m.matches(label))
        };
        return Ok(Response::json(&found));
    }
    if matches!(req.param("stats"), Some("1" | "true")) {
        let methods: Vec<_> = b
            .stats
            .methods
            .iter()
            .map(|m| {
                json!({
                    "method": m.method, "calls": m.calls, "total_ns": m.total_ns,
                    "self_ns": m.self_ns, "mean_ns": m.mean_ns, "max_ns": m.max_ns,
                    "cpu_ns": m.cpu_ns,
                })
            })
            .collect();
        return Ok(Response::json(&json!({ "methods": methods })));
    }
    let Some(node) = req.param("node") else {
        let (total, offset, top) = page(req, b.tree.virtual_root_children())?;
        let rows: Vec<NodeRow> = top.into_iter().map(|r| b.row(r, None)).collect();
        return Ok(Response::json(&json!({
            "jvm": id,
            "calls": b.tree.calls(),
            "threads": b.tree.threads.len(),
            "events": b.tree.events,
            "damage": b.tree.damage,
            "total": total,
            "offset": offset,
            "nodes": rows,
        })));
    };
    let r = parse_id(&b.tree, node)?;
    let (total, offset, kids) = page(req, b.tree.children(r))?;
    let rows: Vec<NodeRow> = kids.into_iter().map(|c| b.row(c, Some(r))).collect();
    Ok(Response::json(&json!({
        "parent": node, "total": total, "offset": offset, "nodes": rows,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::parse_target;
    use jscope_format::*;

    /// main: `App.main` 0..100 calls `Thread.start` 10..20 and `App.work` 30..50;
    /// worker (first seen inside the start call): `App.run` 15..60 calls `App.work`
    /// 20..40. CPU time is half the elapsed time.
    fn recording() -> Vec<u8> {
        let mut w = ChunkWriter::new();
        for (i, s) in ["App", "java.lang.Thread", "main", "start", "work", "run"]
            .iter()
            .enumerate()
        {
            w.string(StringId(i as u32 + 1), s);
        }
        for id in [1, 2] {
            w.class(&ClassDef {
                id: ClassId(id),
                name: StringId(id),
                source_file: StringId::NONE,
            });
        }
        for (id, class, name) in [(1, 1, 3), (2, 2, 4), (3, 1, 5), (4, 1, 6)] {
            w.method(&MethodDef {
                id: MethodId(id),
                class: ClassId(class),
                name: StringId(name),
                signature: StringId::NONE,
                modifiers: 9,
            });
        }
        for (id, name) in [(1, "main"), (2, "worker")] {
            w.thread(&ThreadDef {
                id: ThreadId(id),
                java_id: id as i64,
                name: name.into(),
                start_order: id,
                ..ThreadDef::default()
            });
        }
        let ev = |kind, method, at: u64| TraceEvent {
            kind,
            method: MethodId(method),
            ticks: at,
            untraced: 0,
            cpu_ns: at / 2,
        };
        use TraceKind::{Enter, Exit};
        let main = [
            ev(Enter, 1, 0),
            ev(Enter, 2, 10),
            ev(Exit, 2, 20),
            ev(Enter, 3, 30),
            ev(Exit, 3, 50),
            ev(Exit, 1, 100),
        ];
        let worker = [
            ev(Enter, 4, 15),
            ev(Enter, 3, 20),
            ev(Exit, 3, 40),
            ev(Exit, 4, 60),
        ];
        for (thread, events) in [(1, main.to_vec()), (2, worker.to_vec())] {
            w.trace(&TraceBatch {
                thread: ThreadId(thread),
                has_cpu: true,
                events,
            });
        }
        let header = Header {
            ticks_per_second: 1_000_000_000,
            ..Header::default()
        };
        let mut bytes = encode_file_start(&header);
        bytes.extend(w.finish());
        bytes
    }

    #[test]
    fn find_walks_callees_then_started_threads_with_each_calls_index() {
        let b = Browsed::build(&recording(), &TraceOptions::default(), "x").unwrap();
        let found = b.find(|l| l == "App.work");
        assert_eq!(found.count, 2);
        // Thread.start comes before main's own work(): the worker's work() first.
        assert_eq!(
            found.matches,
            [vec!["0.0", "0.1", "1.0", "1.1"], vec!["0.0", "0.2"]]
        );
        assert_eq!(found.indexes, [vec![0, 0, 0, 0], vec![0, 1]]);
        let glob = ThreadMatcher::new("*.w?rk");
        assert_eq!(b.find(|l| glob.matches(l)).count, 2);
    }

    #[test]
    fn rows_carry_caller_thread_times_and_each_calls_cpu_time() {
        let b = Browsed::build(&recording(), &TraceOptions::default(), "x").unwrap();
        let main = NodeRef { thread: 0, node: 0 };
        let work = b.row(NodeRef { thread: 0, node: 2 }, Some(main));
        assert_eq!(work.label, "App.work");
        assert_eq!(work.caller.as_deref(), Some("App.main"));
        assert_eq!(
            (work.enter_ns, work.exit_ns, work.duration_ns),
            (30, 50, 20)
        );
        assert_eq!(work.cpu_ns, Some(10));
        let start = NodeRef { thread: 0, node: 1 };
        let run = b.row(NodeRef { thread: 1, node: 0 }, Some(start));
        assert_eq!((run.thread.as_str(), run.children), ("worker", 1));
        assert_eq!(run.cpu_ns, Some(60 / 2 - 15 / 2));
        assert_eq!(
            b.row(start, Some(main)).children,
            1,
            "the started thread's root"
        );
    }

    #[test]
    fn children_come_in_pages_and_bad_ids_are_refused() {
        let b = Browsed::build(&recording(), &TraceOptions::default(), "x").unwrap();
        let kids = b.tree.children(NodeRef { thread: 0, node: 0 });
        let (total, offset, rows) = page(&parse_target("/t?offset=1&limit=5"), kids).unwrap();
        assert_eq!((total, offset), (2, 1));
        assert_eq!(rows, [NodeRef { thread: 0, node: 2 }]);
        let bad = page(&parse_target("/t?limit=x"), vec![]).unwrap_err();
        assert_eq!(bad.to_string(), "bad query: limit must be a number");
        for id in ["9.0", "0.9", "0", "a.b"] {
            assert!(parse_id(&b.tree, id).is_err(), "{id}");
        }
    }
}
