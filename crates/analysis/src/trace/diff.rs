//! Two exact traces compared: per-method call statistics with a rank test over
//! the per-call durations, and the calling-context trees (call paths from each
//! thread's roots, threads matched by name with digits normalised) compared node
//! by node. See docs/CLI.md (`jscope diff` on traces).
//!
//! A change is *significant* when the two-sided Mann-Whitney U test (normal
//! approximation with tie and continuity corrections) over the per-call
//! durations, adjusted for the number of comparisons by Benjamini-Hochberg, has
//! q < `alpha`, and the median moved by at least `min_change` (relative): with
//! thousands of calls a rank test finds a 1% shift, which is rarely what one
//! asks. Call counts are compared as Poisson counts (conditional binomial test,
//! normal approximation). Hot methods keep a reservoir sample of their
//! durations (uniform, seeded), so memory stays bounded.

use std::collections::HashMap;
use std::fmt;

use jscope_format::{MethodId, Recording, ThreadId};
use serde::Serialize;

use super::engine::{Call, CallSink};
use super::stats::fmt_ns;
use super::{replay, replay_bytes, TraceError, TraceOptions};

/// Durations kept per method; above that, a uniform reservoir sample.
const METHOD_SAMPLE: usize = 16_384;
/// Durations kept per call path.
const NODE_SAMPLE: usize = 2_048;
/// Fewest calls per side for a test.
const MIN_CALLS: usize = 3;

/// How the diff decides what changed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DiffOptions {
    /// Benjamini-Hochberg false discovery rate.
    pub alpha: f64,
    /// Smallest relative change of the median duration (or of the call count)
    /// that counts, e.g. 0.1 for 10%.
    pub min_change: f64,
    /// Smallest absolute change of the median duration that counts: probes cost
    /// tens of ns and clocks tick in steps of 10-40 ns, so a method of 20 ns that
    /// "became 80 ns" is noise however significant.
    pub min_delta_ns: u64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            alpha: 0.01,
            min_change: 0.1,
            min_delta_ns: 1_000,
        }
    }
}

impl DiffOptions {
    /// Whether a median moved enough to count (significance aside).
    fn moved(&self, base_p50: u64, new_p50: u64) -> bool {
        let delta = new_p50.abs_diff(base_p50);
        delta >= self.min_delta_ns
            && rel(base_p50 as f64, new_p50 as f64).is_some_and(|c| c.abs() >= self.min_change)
    }
}

/// Uniform reservoir sample of durations (Vitter's algorithm R), seeded.
#[derive(Debug, Clone, Default)]
struct Reservoir {
    seen: u64,
    values: Vec<u64>,
}

impl Reservoir {
    #[inline]
    fn add(&mut self, v: u64, cap: usize, rng: &mut u64) {
        self.seen += 1;
        if self.values.len() < cap {
            self.values.push(v);
        } else {
            let j = splitmix(rng) % self.seen;
            if (j as usize) < cap {
                self.values[j as usize] = v;
            }
        }
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, Default)]
struct Acc {
    calls: u64,
    total: u64,
    self_ns: u64,
    sample: Reservoir,
}

/// One side's calls, per method and per call path.
#[derive(Default)]
struct DiffSink {
    methods: Vec<Acc>,
    /// Per path node: (parent node or thread tag, method) and its calls.
    nodes: Vec<(u64, u32, Acc)>,
    index: HashMap<(u64, u32), u32>,
    stacks: Vec<Vec<u32>>,
    /// Thread id of each thread index.
    thread_ids: Vec<Option<u32>>,
    rng: u64,
}

const THREAD_TAG: u64 = 1 << 32;

impl CallSink for DiffSink {
    fn enter(&mut self, thread: u32, method: u32, _enter_ns: u64, depth: u32) -> u32 {
        let t = thread as usize;
        if self.stacks.len() <= t {
            self.stacks.resize_with(t + 1, Vec::new);
        }
        let depth = depth as usize;
        let stack = &mut self.stacks[t];
        stack.truncate(depth);
        // The open calls below this one are the stack (depth 0: the thread's root).
        let parent = match stack.last() {
            Some(&p) if depth > 0 => u64::from(p),
            _ => THREAD_TAG | u64::from(thread),
        };
        let next = self.nodes.len() as u32;
        let id = *self.index.entry((parent, method)).or_insert(next);
        if id == next {
            self.nodes.push((parent, method, Acc::default()));
        }
        stack.push(id);
        id
    }

    fn exit(&mut self, c: &Call) {
        let d = c.duration_ns();
        let m = c.method as usize;
        if self.methods.len() <= m {
            self.methods.resize_with(m + 1, Acc::default);
        }
        let rng = &mut self.rng;
        let a = &mut self.methods[m];
        a.calls += 1;
        a.total += d;
        a.self_ns += c.self_ns;
        a.sample.add(d, METHOD_SAMPLE, rng);
        let n = &mut self.nodes[c.slot as usize].2;
        n.calls += 1;
        n.total += d;
        n.self_ns += c.self_ns;
        n.sample.add(d, NODE_SAMPLE, rng);
        let t = c.thread_index as usize;
        if self.thread_ids.len() <= t {
            self.thread_ids.resize(t + 1, None);
        }
        self.thread_ids[t] = Some(c.thread);
    }
}

/// Labels shared by both sides, so that ids compare across them.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }
}

const NONE: u32 = u32::MAX;

/// A calling-context tree: thread groups at the top (parent [`NONE`]), then the
/// calls by interned label; nodes in creation order, so parents come first.
#[derive(Default)]
struct Cct {
    nodes: Vec<CctNode>,
    index: HashMap<(u32, u32), u32>,
}

struct CctNode {
    parent: u32,
    key: u32,
    group: bool,
    acc: Acc,
}

impl Cct {
    fn node(&mut self, parent: u32, key: u32, group: bool) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self.index.entry((parent, key)).or_insert(next);
        if id == next {
            self.nodes.push(CctNode {
                parent,
                key,
                group,
                acc: Acc::default(),
            });
        }
        id
    }

    /// Thread group, then the labels from the thread's root call to node `i`.
    fn path(&self, mut i: u32, names: &[String]) -> Vec<String> {
        let mut out = vec![];
        while i != NONE {
            let n = &self.nodes[i as usize];
            out.push(names[n.key as usize].clone());
            i = n.parent;
        }
        out.reverse();
        out
    }
}

/// A side reduced to interned labels: per method and the calling-context tree.
struct Side {
    calls: u64,
    methods: HashMap<u32, Acc>,
    tree: Cct,
}

/// `pool-1-thread-3` and `pool-2-thread-7` are both `pool-#-thread-#`.
pub fn normalise_thread(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for ch in name.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(ch);
            in_digits = false;
        }
    }
    out
}

/// Adds one accumulator to another (overloads share a label; threads of one
/// group share their paths). The samples are concatenated and, above `cap`,
/// subsampled uniformly: exact while each part is complete, approximate when a
/// part was itself a reservoir sample.
fn merge(into: &mut Acc, from: Acc, cap: usize, rng: &mut u64) {
    into.calls += from.calls;
    into.total += from.total;
    into.self_ns += from.self_ns;
    into.sample.seen += from.sample.seen;
    into.sample.values.extend(from.sample.values);
    let v = &mut into.sample.values;
    if v.len() > cap {
        for i in 0..cap {
            let j = i + (splitmix(rng) % (v.len() - i) as u64) as usize;
            v.swap(i, j);
        }
        v.truncate(cap);
    }
}

impl DiffSink {
    fn finish(self, rec: &Recording, names: &mut Interner) -> Side {
        let mut rng = 0x5eed;
        let mut labels: Vec<u32> = vec![NONE; rec.methods.len().max(self.methods.len())];
        let mut label = |names: &mut Interner, m: u32| {
            let i = m as usize;
            if labels.len() <= i {
                labels.resize(i + 1, NONE);
            }
            if labels[i] == NONE {
                labels[i] = names.id(&rec.method_label(MethodId(m)));
            }
            labels[i]
        };
        let mut methods: HashMap<u32, Acc> = HashMap::new();
        let mut calls = 0;
        for (id, a) in self.methods.into_iter().enumerate() {
            if a.calls > 0 {
                calls += a.calls;
                let key = label(names, id as u32);
                merge(methods.entry(key).or_default(), a, METHOD_SAMPLE, &mut rng);
            }
        }
        let thread_ids = self.thread_ids;
        let group_of = |names: &mut Interner, ti: u32| -> u32 {
            let name = match thread_ids.get(ti as usize).copied().flatten() {
                Some(id) => rec
                    .thread(ThreadId(id))
                    .map_or_else(|| format!("thread-{id}"), |d| d.name.clone()),
                None => format!("thread-{ti}"),
            };
            names.id(&normalise_thread(&name))
        };
        // Each of the sink's per-thread nodes onto the side's tree, parents first
        // (a sink node's parent has a smaller id); threads of a group merge.
        let mut tree = Cct::default();
        let mut side_of: Vec<u32> = Vec::with_capacity(self.nodes.len());
        for (parent, method, acc) in self.nodes {
            let up = if parent & THREAD_TAG != 0 {
                let g = group_of(names, parent as u32);
                tree.node(NONE, g, true)
            } else {
                side_of[parent as usize]
            };
            let key = label(names, method);
            let id = tree.node(up, key, false);
            if acc.calls > 0 {
                merge(&mut tree.nodes[id as usize].acc, acc, NODE_SAMPLE, &mut rng);
            }
            side_of.push(id);
        }
        Side {
            calls,
            methods,
            tree,
        }
    }
}

/// One side of a method or node row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideStats {
    pub calls: u64,
    pub total_ns: u64,
    pub self_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// True when the percentiles come from a reservoir sample of the calls.
    pub sampled: bool,
}

fn side_stats(a: &Acc) -> SideStats {
    let mut v = a.sample.values.clone();
    v.sort_unstable();
    SideStats {
        calls: a.calls,
        total_ns: a.total,
        self_ns: a.self_ns,
        mean_ns: a.total as f64 / a.calls.max(1) as f64,
        p50_ns: quantile(&v, 0.5),
        p99_ns: quantile(&v, 0.99),
        sampled: (v.len() as u64) < a.calls,
    }
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Where a method or subtree was seen: the same as in the sampled diff.
pub use crate::diff::Presence;

/// One method on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodChange {
    pub method: String,
    pub presence: Presence,
    pub base: Option<SideStats>,
    pub new: Option<SideStats>,
    /// New minus base.
    pub delta_total_ns: i64,
    pub delta_self_ns: i64,
    /// Relative change of the median duration (0.5 = 50% longer).
    pub p50_change: Option<f64>,
    pub calls_change: Option<f64>,
    /// Mann-Whitney U over the per-call durations, two-sided.
    pub p_value: Option<f64>,
    /// Benjamini-Hochberg adjusted p-value over all method tests.
    pub q_value: Option<f64>,
    pub significant: bool,
}

/// A subtree present on one side only: its root's call path and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneSided {
    /// Thread group (digits normalised), then the methods from the thread's root.
    pub path: Vec<String>,
    pub calls: u64,
    pub total_ns: u64,
    /// Call paths in the subtree, its root included.
    pub nodes: u64,
}

/// A call path present on both sides whose calls or durations changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeChange {
    pub path: Vec<String>,
    pub base: SideStats,
    pub new: SideStats,
    pub calls_change: f64,
    pub p50_change: f64,
    pub calls_q: Option<f64>,
    pub duration_q: Option<f64>,
    pub calls_changed: bool,
    pub duration_changed: bool,
}

/// The call-tree diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeDiff {
    pub only_base: Vec<OneSided>,
    pub only_new: Vec<OneSided>,
    /// Sorted by the absolute change of total time.
    pub changed: Vec<NodeChange>,
    /// Paths present on both sides.
    pub matched: u64,
}

/// Two exact traces compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceDiff {
    pub options: DiffOptions,
    pub base_calls: u64,
    pub new_calls: u64,
    /// Significant changes first (largest relative change of the median first),
    /// then methods of one side only (largest total first), then the rest by
    /// p-value.
    pub methods: Vec<MethodChange>,
    pub tree: TreeDiff,
}

impl TraceDiff {
    /// Compares two recordings' bytes, streamed (trace batches are not kept);
    /// also returns both recordings without their traces, for their headers and
    /// damage.
    pub fn from_bytes(
        base: &[u8],
        new: &[u8],
        trace: &TraceOptions,
        options: DiffOptions,
    ) -> Result<(TraceDiff, Recording, Recording), TraceError> {
        let mut names = Interner::default();
        let (b, _, brec) = replay_bytes(base, trace, DiffSink::default())?;
        let base = b.finish(&brec, &mut names);
        let (n, _, nrec) = replay_bytes(new, trace, DiffSink::default())?;
        let new = n.finish(&nrec, &mut names);
        Ok((compare(base, new, &names.names, options), brec, nrec))
    }

    /// Compares two decoded recordings.
    pub fn of(
        base: &Recording,
        new: &Recording,
        trace: &TraceOptions,
        options: DiffOptions,
    ) -> TraceDiff {
        let mut names = Interner::default();
        let b = replay(base, trace, DiffSink::default())
            .0
            .finish(base, &mut names);
        let n = replay(new, trace, DiffSink::default())
            .0
            .finish(new, &mut names);
        compare(b, n, &names.names, options)
    }

    /// Keeps the first `n` method rows, one-sided subtrees and changed nodes.
    pub fn truncate(&mut self, n: usize) {
        self.methods.truncate(n);
        self.tree.only_base.truncate(n);
        self.tree.only_new.truncate(n);
        self.tree.changed.truncate(n);
    }

    pub fn method(&self, label: &str) -> Option<&MethodChange> {
        self.methods.iter().find(|m| m.method == label)
    }
}

fn rel(base: f64, new: f64) -> Option<f64> {
    (base > 0.0).then(|| new / base - 1.0)
}

fn compare(base: Side, new: Side, names: &[String], options: DiffOptions) -> TraceDiff {
    let mut keys: Vec<u32> = base
        .methods
        .keys()
        .chain(new.methods.keys())
        .copied()
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut rows: Vec<MethodChange> = keys
        .into_iter()
        .map(|m| {
            method_row(
                &names[m as usize],
                base.methods.get(&m),
                new.methods.get(&m),
            )
        })
        .collect();
    let ps: Vec<Option<f64>> = rows.iter().map(|r| r.p_value).collect();
    for (r, q) in rows.iter_mut().zip(benjamini_hochberg(&ps)) {
        r.q_value = q;
        let moved = match (&r.base, &r.new) {
            (Some(b), Some(n)) => options.moved(b.p50_ns, n.p50_ns),
            _ => false,
        };
        r.significant = q.is_some_and(|q| q < options.alpha) && moved;
    }
    rows.sort_by(|a, b| {
        let group = |r: &MethodChange| match (r.significant, r.presence) {
            (true, _) => 0,
            (_, Presence::Base | Presence::New) => 1,
            _ => 2,
        };
        let total = |r: &MethodChange| r.base.as_ref().or(r.new.as_ref()).map_or(0, |s| s.total_ns);
        group(a)
            .cmp(&group(b))
            .then_with(|| match group(a) {
                // The largest relative change of the median first: a method that
                // became twice as slow comes before its callers, whose change is
                // diluted by their other work.
                0 => b
                    .p50_change
                    .unwrap_or(0.0)
                    .abs()
                    .total_cmp(&a.p50_change.unwrap_or(0.0).abs())
                    .then_with(|| {
                        b.delta_total_ns
                            .unsigned_abs()
                            .cmp(&a.delta_total_ns.unsigned_abs())
                    }),
                1 => total(b).cmp(&total(a)),
                _ => a
                    .p_value
                    .unwrap_or(1.0)
                    .total_cmp(&b.p_value.unwrap_or(1.0)),
            })
            .then_with(|| a.method.cmp(&b.method))
    });
    TraceDiff {
        options,
        base_calls: base.calls,
        new_calls: new.calls,
        methods: rows,
        tree: tree_diff(&base.tree, &new.tree, names, options),
    }
}

fn method_row(method: &str, b: Option<&Acc>, n: Option<&Acc>) -> MethodChange {
    let presence = match (b, n) {
        (Some(_), Some(_)) => Presence::Both,
        (Some(_), None) => Presence::Base,
        _ => Presence::New,
    };
    let (bs, ns) = (b.map(side_stats), n.map(side_stats));
    let g = |s: &Option<SideStats>, f: fn(&SideStats) -> u64| s.as_ref().map_or(0, f) as i64;
    let both = bs.as_ref().zip(ns.as_ref());
    MethodChange {
        method: method.to_string(),
        presence,
        delta_total_ns: g(&ns, |s| s.total_ns) - g(&bs, |s| s.total_ns),
        delta_self_ns: g(&ns, |s| s.self_ns) - g(&bs, |s| s.self_ns),
        p50_change: both.and_then(|(b, n)| rel(b.p50_ns as f64, n.p50_ns as f64)),
        calls_change: both.and_then(|(b, n)| rel(b.calls as f64, n.calls as f64)),
        p_value: b
            .zip(n)
            .and_then(|(b, n)| mann_whitney(&b.sample.values, &n.sample.values)),
        q_value: None,
        significant: false,
        base: bs,
        new: ns,
    }
}

fn tree_diff(base: &Cct, new: &Cct, names: &[String], options: DiffOptions) -> TreeDiff {
    // Base node -> new node with the same path: parents are matched first.
    let mut to_new: Vec<Option<u32>> = Vec::with_capacity(base.nodes.len());
    for n in &base.nodes {
        let up = match n.parent {
            NONE => Some(NONE),
            p => to_new[p as usize],
        };
        to_new.push(up.and_then(|up| new.index.get(&(up, n.key)).copied()));
    }
    let mut to_base: Vec<Option<u32>> = vec![None; new.nodes.len()];
    for (i, m) in to_new.iter().enumerate() {
        if let Some(m) = m {
            to_base[*m as usize] = Some(i as u32);
        }
    }
    let mut changed = changed_paths(base, new, &to_new, names, options);
    let delta = |c: &NodeChange| (c.new.total_ns as i64 - c.base.total_ns as i64).unsigned_abs();
    changed.sort_by(|a, b| delta(b).cmp(&delta(a)).then(a.path.cmp(&b.path)));
    TreeDiff {
        only_base: one_sided(base, &to_new, names),
        only_new: one_sided(new, &to_base, names),
        matched: to_new
            .iter()
            .zip(&base.nodes)
            .filter(|(m, n)| m.is_some() && !n.group)
            .count() as u64,
        changed,
    }
}

/// The topmost calls of `side` the other side lacks (`matched[i]` is None), with
/// the paths under each: a call whose caller is matched (or is a thread group
/// the other side lacks) roots a subtree; the calls below it belong to it.
fn one_sided(side: &Cct, matched: &[Option<u32>], names: &[String]) -> Vec<OneSided> {
    let mut root_of = vec![NONE; side.nodes.len()];
    let mut count: HashMap<u32, u64> = HashMap::new();
    for (i, n) in side.nodes.iter().enumerate() {
        if n.group || matched[i].is_some() {
            continue;
        }
        let p = n.parent as usize;
        let inherits = matched[p].is_none() && !side.nodes[p].group;
        let r = if inherits { root_of[p] } else { i as u32 };
        root_of[i] = r;
        *count.entry(r).or_default() += 1;
    }
    let mut out: Vec<OneSided> = count
        .into_iter()
        .map(|(r, nodes)| {
            let a = &side.nodes[r as usize].acc;
            OneSided {
                path: side.path(r, names),
                calls: a.calls,
                total_ns: a.total,
                nodes,
            }
        })
        .collect();
    out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.path.cmp(&b.path)));
    out
}

/// Paths on both sides whose call counts or durations changed significantly.
fn changed_paths(
    base: &Cct,
    new: &Cct,
    to_new: &[Option<u32>],
    names: &[String],
    options: DiffOptions,
) -> Vec<NodeChange> {
    let both: Vec<(u32, &Acc, &Acc)> = to_new
        .iter()
        .enumerate()
        .filter(|(i, _)| !base.nodes[*i].group)
        .filter_map(|(i, m)| m.map(|m| (i as u32, &base.nodes[i].acc, &new.nodes[m as usize].acc)))
        .collect();
    let calls_p: Vec<Option<f64>> = both
        .iter()
        .map(|(_, b, n)| poisson_test(b.calls, n.calls))
        .collect();
    let dur_p: Vec<Option<f64>> = both
        .iter()
        .map(|(_, b, n)| mann_whitney(&b.sample.values, &n.sample.values))
        .collect();
    // One family of tests: the counts and the durations of every matched path.
    let mut all = calls_p.clone();
    all.extend(&dur_p);
    let q = benjamini_hochberg(&all);
    let (calls_q, dur_q) = q.split_at(both.len());
    let significant = |q: Option<f64>| q.is_some_and(|q| q < options.alpha);
    both.iter()
        .enumerate()
        .filter_map(|(i, &(node, b, n))| {
            let calls_changed = significant(calls_q[i])
                && rel(b.calls as f64, n.calls as f64)
                    .is_some_and(|c| c.abs() >= options.min_change);
            // The samples are only sorted for the few paths that may have changed.
            if !calls_changed && !significant(dur_q[i]) {
                return None;
            }
            let (bs, ns) = (side_stats(b), side_stats(n));
            let duration_changed = significant(dur_q[i]) && options.moved(bs.p50_ns, ns.p50_ns);
            (calls_changed || duration_changed).then(|| NodeChange {
                path: base.path(node, names),
                calls_change: rel(bs.calls as f64, ns.calls as f64).unwrap_or(0.0),
                p50_change: rel(bs.p50_ns as f64, ns.p50_ns as f64).unwrap_or(0.0),
                base: bs,
                new: ns,
                calls_q: calls_q[i],
                duration_q: dur_q[i],
                calls_changed,
                duration_changed,
            })
        })
        .collect()
}

/// Two-sided p-value of the Mann-Whitney U test (normal approximation, tie and
/// continuity corrections); None below [`MIN_CALLS`] on either side.
pub fn mann_whitney(x: &[u64], y: &[u64]) -> Option<f64> {
    let (nx, ny) = (x.len(), y.len());
    if nx < MIN_CALLS || ny < MIN_CALLS {
        return None;
    }
    let mut all: Vec<(u64, bool)> = x
        .iter()
        .map(|&v| (v, false))
        .chain(y.iter().map(|&v| (v, true)))
        .collect();
    all.sort_unstable_by_key(|a| a.0);
    let n = all.len();
    let (mut rank_y, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j < n && all[j].0 == all[i].0 {
            j += 1;
        }
        let avg = (i + 1 + j) as f64 / 2.0;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        rank_y += avg * all[i..j].iter().filter(|a| a.1).count() as f64;
        i = j;
    }
    let (nx, ny, n) = (nx as f64, ny as f64, n as f64);
    let u = rank_y - ny * (ny + 1.0) / 2.0;
    let mean = nx * ny / 2.0;
    let var = nx * ny / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some(erfc(z / std::f64::consts::SQRT_2).min(1.0))
}

/// Two-sided p-value that two Poisson counts have the same rate (conditional
/// binomial test, normal approximation with continuity correction).
pub fn poisson_test(a: u64, b: u64) -> Option<f64> {
    let n = (a + b) as f64;
    if a + b < 2 * MIN_CALLS as u64 {
        return None;
    }
    let z = (((b as f64) - (a as f64)).abs() - 1.0).max(0.0) / n.sqrt();
    Some(erfc(z / std::f64::consts::SQRT_2).min(1.0))
}

/// Benjamini-Hochberg adjusted p-values (q-values); None stays None and does not
/// count as a test.
pub fn benjamini_hochberg(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    idx.sort_by(|&a, &b| p[a].unwrap().total_cmp(&p[b].unwrap()));
    let m = idx.len() as f64;
    let mut out = vec![None; p.len()];
    let mut running = 1.0f64;
    for (k, &i) in idx.iter().enumerate().rev() {
        let q = p[i].unwrap() * m / (k + 1) as f64;
        running = running.min(q);
        out[i] = Some(running);
    }
    out
}

/// Complementary error function with fractional error below 1.2e-7 (Chebyshev
/// fit, Numerical Recipes' erfcc): tiny p-values keep their magnitude.
pub(crate) fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:+.1}%", v * 100.0))
}

fn signed_ns(v: i64) -> String {
    if v >= 0 {
        format!("+{}", fmt_ns(v as f64))
    } else {
        fmt_ns(v as f64)
    }
}

fn q_text(q: Option<f64>) -> String {
    q.map_or_else(|| "-".into(), |q| format!("{q:.2e}"))
}

fn path_text(p: &[String]) -> String {
    match p.split_first() {
        Some((thread, calls)) => format!("[{thread}] {}", calls.join(" > ")),
        None => String::new(),
    }
}

impl fmt::Display for TraceDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "trace diff: base {} calls, new {} calls. * = significant: Mann-Whitney U over per-call durations, Benjamini-Hochberg q < {}, median change >= {:.0}% and >= {}",
            self.base_calls,
            self.new_calls,
            self.options.alpha,
            self.options.min_change * 100.0,
            fmt_ns(self.options.min_delta_ns as f64)
        )?;
        writeln!(
            f,
            "\n{:>9} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12} {:>8} {:>9}   method",
            "calls", "calls", "total", "total", "mean", "mean", "p50", "p50", "p99", "p99", "", "", "", ""
        )?;
        writeln!(
            f,
            "{:>9} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12} {:>8} {:>9}",
            "base",
            "new",
            "base",
            "new",
            "base",
            "new",
            "base",
            "new",
            "base",
            "new",
            "d.total",
            "d.self",
            "d.p50",
            "q"
        )?;
        for m in &self.methods {
            let s = |s: &Option<SideStats>, f: fn(&SideStats) -> String| {
                s.as_ref().map_or_else(|| "-".into(), f)
            };
            let mark = match (m.presence, m.significant) {
                (Presence::Base, _) => " (base only)",
                (Presence::New, _) => " (new only)",
                (_, true) => " *",
                _ => "",
            };
            writeln!(
                f,
                "{:>9} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} {:>12} {:>8} {:>9}   {}{}",
                s(&m.base, |s| s.calls.to_string()),
                s(&m.new, |s| s.calls.to_string()),
                s(&m.base, |s| fmt_ns(s.total_ns as f64)),
                s(&m.new, |s| fmt_ns(s.total_ns as f64)),
                s(&m.base, |s| fmt_ns(s.mean_ns)),
                s(&m.new, |s| fmt_ns(s.mean_ns)),
                s(&m.base, |s| fmt_ns(s.p50_ns as f64)),
                s(&m.new, |s| fmt_ns(s.p50_ns as f64)),
                s(&m.base, |s| fmt_ns(s.p99_ns as f64)),
                s(&m.new, |s| fmt_ns(s.p99_ns as f64)),
                signed_ns(m.delta_total_ns),
                signed_ns(m.delta_self_ns),
                pct(m.p50_change),
                q_text(m.q_value),
                m.method,
                mark
            )?;
        }
        let t = &self.tree;
        writeln!(
            f,
            "\ncall tree: {} call paths on both sides, {} subtrees only in base, {} only in new, {} paths changed",
            t.matched,
            t.only_base.len(),
            t.only_new.len(),
            t.changed.len()
        )?;
        for (title, list) in [("only in base", &t.only_base), ("only in new", &t.only_new)] {
            for s in list.iter() {
                writeln!(
                    f,
                    "  {title}: {} ({} calls, {}, {} paths)",
                    path_text(&s.path),
                    s.calls,
                    fmt_ns(s.total_ns as f64),
                    s.nodes
                )?;
            }
        }
        for c in &t.changed {
            let mut what = vec![];
            if c.calls_changed {
                what.push(format!(
                    "calls {} -> {} ({})",
                    c.base.calls,
                    c.new.calls,
                    pct(Some(c.calls_change))
                ));
            }
            if c.duration_changed {
                what.push(format!(
                    "p50 {} -> {} ({})",
                    fmt_ns(c.base.p50_ns as f64),
                    fmt_ns(c.new.p50_ns as f64),
                    pct(Some(c.p50_change))
                ));
            }
            writeln!(
                f,
                "  changed: {}: {}; total {} -> {}",
                path_text(&c.path),
                what.join(", "),
                fmt_ns(c.base.total_ns as f64),
                fmt_ns(c.new.total_ns as f64)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jscope_format::*;

    /// Calls made one after another: (path of labels from the root, µs).
    type Calls<'a> = Vec<(Vec<&'a str>, u64)>;

    /// A trace recording of threads (id, name, calls).
    fn recording(threads: &[(u32, &str, Calls)]) -> Vec<u8> {
        let mut w = ChunkWriter::new();
        let mut dict = Dictionary::new();
        for (id, name, calls) in threads {
            jscope_testkit::recording::main_thread(&mut w, *id, name);
            let mut events = vec![];
            let mut at = 0;
            for (path, us) in calls {
                let ids: Vec<MethodId> =
                    path.iter().map(|l| dict.method_label(&mut w, l)).collect();
                for &m in &ids {
                    events.push(jscope_testkit::recording::trace_event(
                        TraceKind::Enter,
                        m,
                        at,
                    ));
                }
                at += us * 1000;
                for &m in ids.iter().rev() {
                    events.push(jscope_testkit::recording::trace_event(
                        TraceKind::Exit,
                        m,
                        at,
                    ));
                }
                at += 1000;
            }
            jscope_testkit::recording::trace_batch(&mut w, *id, events);
        }
        jscope_testkit::recording::ns_file(&mut w)
    }

    #[test]
    fn trace_diff_matches_threads_by_normalised_name_and_finds_one_sided_subtrees() {
        // Base: pool-1-thread-1 runs a.run > a.get (100 µs) 20 times and
        // a.run > a.put 20 times. New: pool-7-thread-3 does the same, but get
        // takes 200 µs and put is gone; a.run > a.fresh > a.deep is new.
        let calls = |get_us: u64, put: bool, fresh: bool| {
            let mut v = vec![];
            for i in 0..20u64 {
                v.push((vec!["a.run", "a.get"], get_us + i % 3));
                if put {
                    v.push((vec!["a.run", "a.put"], 50 + i % 2));
                }
                if fresh {
                    v.push((vec!["a.run", "a.fresh", "a.deep"], 10));
                }
            }
            v
        };
        let base = recording(&[(1, "pool-1-thread-1", calls(100, true, false))]);
        let new = recording(&[(5, "pool-7-thread-3", calls(200, false, true))]);
        let (d, _, _) = TraceDiff::from_bytes(
            &base,
            &new,
            &TraceOptions::default(),
            DiffOptions::default(),
        )
        .unwrap();
        let decoded = TraceDiff::of(
            &Recording::from_bytes(&base).unwrap(),
            &Recording::from_bytes(&new).unwrap(),
            &TraceOptions::default(),
            DiffOptions::default(),
        );
        assert_eq!(d, decoded);
        assert_eq!(d.methods[0].method, "a.get");
        assert!(d.methods[0].significant);
        assert!((d.methods[0].p50_change.unwrap() - 1.0).abs() < 0.05);
        assert_eq!(d.method("a.put").unwrap().presence, Presence::Base);
        assert_eq!(d.method("a.deep").unwrap().presence, Presence::New);
        let t = &d.tree;
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(t.only_base.len(), 1);
        assert_eq!(
            t.only_base[0].path,
            path(&["pool-#-thread-#", "a.run", "a.put"])
        );
        assert_eq!(t.only_new.len(), 1);
        assert_eq!(
            t.only_new[0].path,
            path(&["pool-#-thread-#", "a.run", "a.fresh"])
        );
        assert_eq!((t.only_new[0].calls, t.only_new[0].nodes), (20, 2));
        // run's calls: 40 -> 40 (put replaced by fresh), get's durations doubled.
        let changed: Vec<_> = t
            .changed
            .iter()
            .map(|c| c.path.last().unwrap().as_str())
            .collect();
        assert!(changed.contains(&"a.get"), "{changed:?}");
        let get = t
            .changed
            .iter()
            .find(|c| c.path.last().unwrap() == "a.get")
            .unwrap();
        assert!(get.duration_changed && !get.calls_changed);
        assert_eq!(t.matched, 2);
    }

    #[test]
    fn mann_whitney_separates_shifted_samples_and_not_equal_ones() {
        let a: Vec<u64> = (0..50).map(|i| 1000 + i * 7 % 100).collect();
        let b: Vec<u64> = a.iter().map(|v| v * 2).collect();
        assert!(mann_whitney(&a, &b).unwrap() < 1e-10);
        let p = mann_whitney(&a, &a).unwrap();
        assert!(p > 0.9, "{p}");
        assert_eq!(mann_whitney(&a[..2], &b), None);
        // Known value: x = 1..=5, y = 6..=10, U = 25: z = (12.5 - 0.5) / 4.787.
        let x: Vec<u64> = (1..=5).collect();
        let y: Vec<u64> = (6..=10).collect();
        let p = mann_whitney(&x, &y).unwrap();
        assert!((p - 0.01218).abs() < 2e-4, "{p}");
    }

    #[test]
    fn erfc_is_accurate_in_the_tail() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(5.0) / 1.537_459_8e-12 - 1.0).abs() < 1e-5);
        assert!((erfc(-1.0) - 1.842_700_79).abs() < 1e-7);
    }

    #[test]
    fn benjamini_hochberg_adjusts_in_rank_order() {
        let q = benjamini_hochberg(&[Some(0.01), None, Some(0.04), Some(0.03)]);
        assert_eq!(q[1], None);
        assert!((q[0].unwrap() - 0.03).abs() < 1e-12);
        assert!((q[3].unwrap() - 0.04).abs() < 1e-12);
        assert!((q[2].unwrap() - 0.04).abs() < 1e-12);
    }

    #[test]
    fn poisson_counts() {
        assert!(poisson_test(100, 200).unwrap() < 1e-6);
        assert!(poisson_test(100, 104).unwrap() > 0.5);
        assert_eq!(poisson_test(1, 2), None);
    }

    #[test]
    fn thread_names_normalise_digits() {
        assert_eq!(normalise_thread("pool-12-thread-3"), "pool-#-thread-#");
        assert_eq!(normalise_thread("main"), "main");
    }

    #[test]
    fn reservoir_keeps_a_bounded_uniform_sample() {
        let mut r = Reservoir::default();
        let mut rng = 1;
        for v in 0..100_000u64 {
            r.add(v, 1000, &mut rng);
        }
        assert_eq!((r.seen, r.values.len()), (100_000, 1000));
        let mean = r.values.iter().sum::<u64>() as f64 / 1000.0;
        assert!((mean - 50_000.0).abs() < 4_000.0, "{mean}");
    }
}
