//! Traced calls and remote calls across JVMs (`GET /api/traced`, `GET /api/remote`),
//! JVM events per kind (`GET /api/events`) and event-weighted stacks across JVMs
//! (`/api/flame?mode=alloc|lock`). A store
//! that keeps them as rows (ClickHouse: `trace_calls`, `remote_calls`, `events`)
//! answers in SQL; any other store is answered from each JVM's chunks, read back
//! and analysed as a recording file is. Both paths give the same rows: the
//! `*_from_chunks` functions are the reference the SQL answers are tested against.

use std::collections::{BTreeMap, HashMap, HashSet};

use jscope_analysis::events::{weighted_stacks, EventFilter, EventWeight};
use jscope_analysis::trace::{replay, Call, CallSink, TraceOptions, THREW};
use jscope_analysis::{StackCounts, ThreadMatcher};
use jscope_format::{MethodId, Recording, RemoteProtocol, RemoteSide};

use crate::query::Query;
use crate::store::Store;
pub use crate::store::{EventKindRow, RemoteGroup, TracedMethod};
use crate::StoreError;

pub(crate) fn sort_kinds(rows: &mut [EventKindRow]) {
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.kind.cmp(&b.kind))
    });
}

/// The events of `q`'s JVMs per kind: in SQL where the store can, else from chunks.
pub fn event_kinds(store: &dyn Store, q: &Query) -> Result<Vec<EventKindRow>, StoreError> {
    no_jvm(q)?;
    match store.event_kinds_across(&q.jvms, q.from_ns, q.to_ns)? {
        Some(rows) => Ok(rows),
        None => event_kinds_from_chunks(store, q),
    }
}

/// [`event_kinds`] from each JVM's chunks.
pub fn event_kinds_from_chunks(
    store: &dyn Store,
    q: &Query,
) -> Result<Vec<EventKindRow>, StoreError> {
    no_jvm(q)?;
    let mut kinds: BTreeMap<&'static str, ([u64; 3], HashSet<usize>)> = BTreeMap::new();
    for (j, id) in q.jvms.iter().enumerate() {
        let rec = store.read(id, q.from_ns, q.to_ns)?;
        for e in &rec.events {
            let at = wall_at(&rec, e.ticks);
            if !in_window(at, q.from_ns, q.to_ns) {
                continue;
            }
            let d = e.kind.field("duration_ns").map_or(0, |v| v.as_u64());
            let (t, jvms) = kinds.entry(e.kind.name()).or_default();
            t[0] += 1;
            t[1] += d;
            t[2] = t[2].max(d);
            jvms.insert(j);
        }
    }
    let mut rows: Vec<EventKindRow> = kinds
        .into_iter()
        .map(|(kind, (t, jvms))| EventKindRow {
            kind: kind.into(),
            events: t[0],
            total_ns: t[1],
            max_ns: t[2],
            jvms: jvms.len() as u64,
        })
        .collect();
    sort_kinds(&mut rows);
    Ok(rows)
}

pub(crate) fn side_name(s: RemoteSide) -> &'static str {
    match s {
        RemoteSide::Client => "client",
        RemoteSide::Server => "server",
    }
}

pub(crate) fn protocol_name(p: RemoteProtocol) -> &'static str {
    match p {
        RemoteProtocol::Rmi => "rmi",
        RemoteProtocol::Http => "http",
    }
}

/// Most total time first, then by name, so both paths list rows in one order.
pub(crate) fn sort_traced(rows: &mut [TracedMethod]) {
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.method.cmp(&b.method)));
}

pub(crate) fn sort_remote(rows: &mut [RemoteGroup]) {
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.direction.cmp(&b.direction))
            .then_with(|| a.protocol.cmp(&b.protocol))
            .then_with(|| a.target.cmp(&b.target))
            .then_with(|| a.method.cmp(&b.method))
    });
}

fn in_window(ns: u64, from: Option<u64>, to: Option<u64>) -> bool {
    from.is_none_or(|f| ns >= f) && to.is_none_or(|t| ns < t)
}

fn no_jvm(q: &Query) -> Result<(), StoreError> {
    if q.jvms.is_empty() {
        return Err(StoreError::BadQuery("no jvm selected".into()));
    }
    Ok(())
}

/// The traced methods of `q`'s JVMs: in SQL where the store can, else from chunks.
pub fn traced_methods(store: &dyn Store, q: &Query) -> Result<Vec<TracedMethod>, StoreError> {
    no_jvm(q)?;
    match store.traced_methods_across(&q.jvms, q.from_ns, q.to_ns)? {
        Some(rows) => Ok(rows),
        None => traced_methods_from_chunks(store, q),
    }
}

/// Per method label: calls, total, self, max, threw, and the JVMs.
type MethodTotals = BTreeMap<String, ([u64; 5], HashSet<usize>)>;

/// Sums one JVM's calls that begin in the window into the totals as the replay of
/// its whole stored stream finishes them (a call in the window may have begun in a
/// chunk before it), keeping no call.
struct Totals<'a> {
    rec: &'a Recording,
    /// The JVM's index in the query.
    jvm: usize,
    window: (Option<u64>, Option<u64>),
    labels: HashMap<u32, String>,
    totals: &'a mut MethodTotals,
}

impl CallSink for Totals<'_> {
    fn enter(&mut self, _thread: u32, _method: u32, _enter_ns: u64, _depth: u32) -> u32 {
        0
    }

    fn exit(&mut self, c: &Call) {
        let at = self.rec.header.start_wall_ns.saturating_add(c.enter_ns);
        if !in_window(at, self.window.0, self.window.1) {
            return;
        }
        let rec = self.rec;
        let label = self
            .labels
            .entry(c.method)
            .or_insert_with(|| rec.method_label(MethodId(c.method)));
        let (t, jvms) = match self.totals.get_mut(label.as_str()) {
            Some(e) => e,
            None => self.totals.entry(label.clone()).or_default(),
        };
        let d = c.duration_ns();
        t[0] += 1;
        t[1] += d;
        t[2] += c.self_ns;
        t[3] = t[3].max(d);
        t[4] += u64::from(c.flags & THREW != 0);
        jvms.insert(self.jvm);
    }
}

/// [`traced_methods`] from each JVM's chunks, paired by `jscope_analysis::trace`.
pub fn traced_methods_from_chunks(
    store: &dyn Store,
    q: &Query,
) -> Result<Vec<TracedMethod>, StoreError> {
    no_jvm(q)?;
    let mut totals = MethodTotals::new();
    for (j, id) in q.jvms.iter().enumerate() {
        let rec = store.read(id, None, None)?;
        let sink = Totals {
            rec: &rec,
            jvm: j,
            window: (q.from_ns, q.to_ns),
            labels: HashMap::new(),
            totals: &mut totals,
        };
        replay(&rec, &TraceOptions::default(), sink);
    }
    let mut rows: Vec<TracedMethod> = totals
        .into_iter()
        .map(|(method, (t, jvms))| TracedMethod {
            method,
            calls: t[0],
            total_ns: t[1],
            self_ns: t[2],
            max_ns: t[3],
            threw: t[4],
            jvms: jvms.len() as u64,
        })
        .collect();
    sort_traced(&mut rows);
    Ok(rows)
}

/// The remote calls of `q`'s JVMs grouped: in SQL where the store can, else from chunks.
pub fn remote_calls(store: &dyn Store, q: &Query) -> Result<Vec<RemoteGroup>, StoreError> {
    no_jvm(q)?;
    match store.remote_calls_across(&q.jvms, q.from_ns, q.to_ns)? {
        Some(rows) => Ok(rows),
        None => remote_calls_from_chunks(store, q),
    }
}

/// [`remote_calls`] from each JVM's chunks.
pub fn remote_calls_from_chunks(
    store: &dyn Store,
    q: &Query,
) -> Result<Vec<RemoteGroup>, StoreError> {
    no_jvm(q)?;
    type Key = (&'static str, &'static str, String, String);
    let mut groups: BTreeMap<Key, ([u64; 4], HashSet<usize>)> = BTreeMap::new();
    for (j, id) in q.jvms.iter().enumerate() {
        let rec = store.read(id, q.from_ns, q.to_ns)?;
        for c in &rec.remote_calls {
            let at = wall_at(&rec, c.ticks);
            if !in_window(at, q.from_ns, q.to_ns) {
                continue;
            }
            let key = (
                side_name(c.side),
                protocol_name(c.protocol),
                rec.string(c.object).to_string(),
                rec.string(c.method).to_string(),
            );
            let (t, jvms) = groups.entry(key).or_default();
            t[0] += 1;
            t[1] += u64::from(c.failed);
            t[2] += c.duration_ns;
            t[3] = t[3].max(c.duration_ns);
            jvms.insert(j);
        }
    }
    let mut rows: Vec<RemoteGroup> = groups
        .into_iter()
        .map(|((d, p, target, method), (t, jvms))| RemoteGroup {
            direction: d.into(),
            protocol: p.into(),
            target,
            method,
            calls: t[0],
            failed: t[1],
            total_ns: t[2],
            max_ns: t[3],
            jvms: jvms.len() as u64,
        })
        .collect();
    sort_remote(&mut rows);
    Ok(rows)
}

/// An event-weighted stack count: the recording that labels the stacks and the
/// weights per stack (one per JVM from chunks, one for all from a store that
/// counts in SQL).
pub type EventStacks = Vec<(Recording, StackCounts)>;

/// The event stacks of `q`'s JVMs weighted by `what`: in SQL where the store can,
/// else from chunks.
pub fn event_stacks(
    store: &dyn Store,
    q: &Query,
    what: EventWeight,
) -> Result<EventStacks, StoreError> {
    no_jvm(q)?;
    if !q.requests.is_empty() {
        // Requests are known to the chunks (their records, nested in each
        // other), not to the store's event tables.
        return event_stacks_from_chunks(store, q, what);
    }
    let thread = q.thread.as_deref().map(ThreadMatcher::new);
    match store.event_stacks_across(&q.jvms, q.from_ns, q.to_ns, what, thread.as_ref())? {
        Some(one) => Ok(vec![one]),
        None => event_stacks_from_chunks(store, q, what),
    }
}

/// [`event_stacks`] from each JVM's chunks, selected as `jscope events` selects.
pub fn event_stacks_from_chunks(
    store: &dyn Store,
    q: &Query,
    what: EventWeight,
) -> Result<EventStacks, StoreError> {
    no_jvm(q)?;
    let mut out = Vec::new();
    for id in &q.jvms {
        let mut rec = store.read(id, q.from_ns, q.to_ns)?;
        let start = rec.header.start_wall_ns;
        let f = EventFilter {
            thread: q.thread.as_deref().map(ThreadMatcher::new),
            from_s: crate::when::seconds_since(start, q.from_ns),
            to_s: crate::when::seconds_since(start, q.to_ns),
            requests: q.requests.clone(),
            ..EventFilter::default()
        };
        let counts = weighted_stacks(&mut rec, &f, what);
        out.push((rec, counts));
    }
    Ok(out)
}

/// Unix epoch nanoseconds of a clock reading in `rec`.
fn wall_at(rec: &jscope_format::Recording, ticks: u64) -> u64 {
    rec.header
        .start_wall_ns
        .saturating_add(rec.ticks_to_ns(ticks))
}
