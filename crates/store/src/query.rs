//! Queries over stored data: flame graphs, hot methods and call graphs over a time
//! range, for one JVM or several merged, filtered by thread and state. Each JVM's data
//! goes through `jscope-analysis` exactly as a recording file would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;

use jscope_analysis::{
    call_graph, collapse, hot_methods, incomplete_stacks, Annotation, CallGraph, CollapseOptions,
    HotMethods, IncompleteStacks, Mode, RequestFilter, Selection, StackCounts, ThreadMatcher,
};
use jscope_flame::FlameGraph;
use jscope_format::{Recording, StateClass};
use serde::{Deserialize, Serialize};

use crate::store::{Counted, SampleFilter, Store};
use crate::StoreError;

/// What to look at.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub jvms: Vec<String>,
    /// Epoch ns, inclusive.
    pub from_ns: Option<u64>,
    /// Epoch ns, exclusive.
    pub to_ns: Option<u64>,
    pub mode: Option<Mode>,
    /// Substring or glob of thread names.
    pub thread: Option<String>,
    pub states: Vec<StateClass>,
    /// Frame labels with `:line`.
    pub lines: bool,
    /// How flame graphs' frame names carry their kind.
    pub annotate: Annotation,
    /// Only samples of slow requests, or of the named ones (read from each
    /// JVM's samples: no store's summaries know requests).
    pub requests: RequestFilter,
}

impl Query {
    /// The samples a query selects of one JVM's recording.
    pub fn selection(&self, rec: &Recording) -> Selection {
        let start = rec.header.start_wall_ns;
        Selection {
            mode: self.mode,
            thread: self.thread.as_deref().map(ThreadMatcher::new),
            states: self.states.clone(),
            from_s: crate::when::seconds_since(start, self.from_ns),
            to_s: crate::when::seconds_since(start, self.to_ns),
            group: Default::default(),
            requests: self.requests.clone(),
        }
    }

    fn filter(&self) -> SampleFilter {
        SampleFilter {
            thread: self.thread.as_deref().map(ThreadMatcher::new),
            states: self.states.clone(),
        }
    }

    /// One JVM's selected samples: from the store's summaries when it has them,
    /// else by reading and selecting.
    fn counted<S: Store + ?Sized>(&self, store: &S, id: &str) -> Result<Counted, StoreError> {
        let filter = self.filter();
        if self.requests.is_empty() {
            if let Some(c) = store.stack_counts(id, self.from_ns, self.to_ns, self.mode, &filter)? {
                return Ok(c);
            }
        }
        let rec = store.read(id, self.from_ns, self.to_ns)?;
        let sel = self.selection(&rec);
        let (mode, counts) = (sel.mode_in(&rec), sel.stack_counts(&rec));
        Ok((rec, mode, counts))
    }

    /// Reads each JVM's data, counts the selected samples and hands them to
    /// `per_jvm`, on up to one thread per core; `merge` gets each result in the
    /// calling thread. Each worker holds one JVM's recording at a time, so memory
    /// stays bounded however many JVMs are merged. Returns the incomplete stacks
    /// among all the samples counted, for the view's warnings.
    fn each_jvm<T: Send, S: Store + ?Sized>(
        &self,
        store: &S,
        per_jvm: impl Fn(&Recording, Option<Mode>, &StackCounts) -> T + Sync,
        mut merge: impl FnMut(T),
    ) -> Result<IncompleteStacks, StoreError> {
        let mut incomplete = IncompleteStacks::default();
        let per_jvm = |rec: &Recording, mode: Option<Mode>, counts: &StackCounts| {
            (
                incomplete_stacks(rec, mode, counts),
                per_jvm(rec, mode, counts),
            )
        };
        let merge = |(found, one): (IncompleteStacks, T)| {
            incomplete.add(&found);
            merge(one);
        };
        self.each_jvm_counted(store, per_jvm, merge)?;
        Ok(incomplete)
    }

    fn each_jvm_counted<T: Send, S: Store + ?Sized>(
        &self,
        store: &S,
        per_jvm: impl Fn(&Recording, Option<Mode>, &StackCounts) -> T + Sync,
        mut merge: impl FnMut(T),
    ) -> Result<(), StoreError> {
        if self.jvms.is_empty() {
            return Err(StoreError::BadQuery("no jvm selected".into()));
        }
        // A store that counts across JVMs where the data lives answers in one pass
        // (not by request: that needs each sample).
        let across = match self.requests.is_empty() {
            true => store.stack_counts_across(
                &self.jvms,
                self.from_ns,
                self.to_ns,
                self.mode,
                &self.filter(),
            )?,
            false => None,
        };
        if let Some((rec, mode, counts)) = across {
            merge(per_jvm(&rec, mode, &counts));
            return Ok(());
        }
        let next = AtomicUsize::new(0);
        let workers = thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(self.jvms.len());
        let (tx, rx) = mpsc::channel();
        thread::scope(|scope| {
            for _ in 0..workers {
                let (tx, next, per_jvm) = (tx.clone(), &next, &per_jvm);
                scope.spawn(move || loop {
                    let Some(id) = self.jvms.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    let one = self
                        .counted(store, id)
                        .map(|(rec, mode, counts)| per_jvm(&rec, mode, &counts));
                    let failed = one.is_err();
                    if tx.send(one).is_err() || failed {
                        return;
                    }
                });
            }
            drop(tx);
            for one in rx {
                merge(one?);
            }
            Ok(())
        })
    }
}

/// A view as the API sends it: the view's own fields and `warnings`, the
/// lines a reader shows with it (incomplete stacks above 1% of its samples).
#[derive(Debug, Serialize, Deserialize)]
pub struct WithWarnings<T> {
    #[serde(flatten)]
    pub view: T,
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `view` with the warnings `incomplete` calls for.
pub fn with_warnings<T>(view: T, incomplete: &IncompleteStacks) -> WithWarnings<T> {
    WithWarnings {
        view,
        warnings: incomplete.warning().into_iter().collect(),
    }
}

/// A flame graph over the selected samples of every JVM of the query, merged,
/// and its incomplete stacks.
pub fn flame<S: Store + ?Sized>(
    store: &S,
    q: &Query,
) -> Result<(FlameGraph, Option<Mode>, IncompleteStacks), StoreError> {
    let mut graph = FlameGraph::new();
    let mut mode = None;
    let opts = CollapseOptions {
        lines: q.lines,
        thread_roots: false,
        annotate: q.annotate,
    };
    let incomplete = q.each_jvm(
        store,
        |rec, m, counts| (m, collapse(rec, counts, opts)),
        |(m, collapsed)| {
            mode = mode.or(m);
            for (frames, n) in collapsed.stacks {
                graph.add(frames, n);
            }
        },
    )?;
    Ok((graph, mode, incomplete))
}

/// Hot methods over the selected samples of every JVM of the query, merged by
/// name, and their incomplete stacks.
pub fn hot<S: Store + ?Sized>(
    store: &S,
    q: &Query,
    limit: usize,
) -> Result<(HotMethods, IncompleteStacks), StoreError> {
    let mut tables = Vec::new();
    let incomplete = q.each_jvm(store, hot_methods, |t| tables.push(t))?;
    let mut merged = HotMethods::merge(tables);
    merged.truncate(limit);
    Ok((merged, incomplete))
}

/// The call graph of every JVM of the query, merged by method label, and its
/// incomplete stacks.
pub fn callgraph(
    store: &dyn Store,
    q: &Query,
) -> Result<(CallGraph, IncompleteStacks), StoreError> {
    let mut graphs = Vec::new();
    let incomplete = q.each_jvm(
        store,
        |rec, _, counts| call_graph(rec, counts),
        |g| graphs.push(g),
    )?;
    Ok((CallGraph::merge(graphs), incomplete))
}

/// One side of a diff: the flame graph and the hot-method table of the query's
/// samples, in one pass over each JVM's data, and their incomplete stacks.
pub struct Side {
    pub graph: FlameGraph,
    pub hot: HotMethods,
    pub incomplete: IncompleteStacks,
}

impl Side {
    /// The mode the side's samples are of.
    pub fn mode(&self) -> Option<Mode> {
        self.hot.mode
    }
}

/// The [`Side`] of `q`'s samples.
pub fn side(store: &dyn Store, q: &Query) -> Result<Side, StoreError> {
    side_into(store, q, None)
}

/// [`side`], adding its stacks to `whole` as well: one graph of several sides
/// without counting their samples again.
pub fn side_into(
    store: &dyn Store,
    q: &Query,
    mut whole: Option<&mut FlameGraph>,
) -> Result<Side, StoreError> {
    let mut graph = FlameGraph::new();
    let mut tables = Vec::new();
    // Unannotated: a method run at two tiers is one method whose share changed.
    let opts = CollapseOptions {
        lines: q.lines,
        thread_roots: false,
        annotate: Annotation::None,
    };
    let incomplete = q.each_jvm(
        store,
        |rec, m, counts| (collapse(rec, counts, opts), hot_methods(rec, m, counts)),
        |(collapsed, table)| {
            for (frames, n) in collapsed.stacks {
                if let Some(whole) = whole.as_deref_mut() {
                    whole.add(&frames, n);
                }
                graph.add(frames, n);
            }
            tables.push(table);
        },
    )?;
    Ok(Side {
        graph,
        hot: HotMethods::merge(tables),
        incomplete,
    })
}
