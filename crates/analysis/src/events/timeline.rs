//! The thread timeline (JX's thread activity diagram) as data: per thread, spans of
//! state from samples and snapshots, and the blocked, waiting and parked intervals of
//! monitor, wait and park events; GC pauses across all threads; events as markers.

use std::collections::BTreeMap;

use jscope_format::thread_state::{classify, StateClass};
use jscope_format::{EventKind, JvmEvent, Recording, SampleMode, ThreadId};
use serde::Serialize;

use super::rows::{Ages, EventRow, UserPairs};
use super::{thread_name, AllocWeights, EventFilter, EventType};

/// Frames kept of each marker's stack.
pub const MARKER_FRAMES: usize = 16;

/// A stretch of time a thread spent in one state; ns since the recording start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
    /// running, blocked, waiting, sleeping or parked.
    pub state: &'static str,
}

/// One thread's lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lane {
    pub id: u32,
    pub name: String,
    /// States seen by samples and snapshots: each observation holds until the next
    /// one (at most two sampling intervals), equal neighbours merged.
    pub spans: Vec<Span>,
    /// Exact intervals from monitor (blocked), wait (waiting) and park (parked) events.
    pub intervals: Vec<Span>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcBar {
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Cause, collector, generation, heap before and after, when recorded.
    #[serde(flatten)]
    pub detail: super::reports::GcDetail,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// Epoch ms of the recording start (ns values count from there).
    pub start_wall_ms: u64,
    pub from_ns: u64,
    pub to_ns: u64,
    pub lanes: Vec<Lane>,
    pub gc: Vec<GcBar>,
    /// Events other than GC, in time order, at most the requested number, each
    /// with the top [`MARKER_FRAMES`] frames of its stack.
    pub events: Vec<EventRow>,
    /// Events left out beyond that number.
    pub events_left_out: u64,
}

fn state_name(class: StateClass) -> Option<&'static str> {
    match class {
        StateClass::Runnable | StateClass::Native => Some("running"),
        StateClass::Blocked => Some("blocked"),
        StateClass::Waiting | StateClass::TimedWaiting => Some("waiting"),
        StateClass::Sleeping => Some("sleeping"),
        StateClass::Parked => Some("parked"),
        StateClass::Terminated | StateClass::New | StateClass::Unknown => None,
    }
}

/// A state seen at `ns` that holds for at most `hold_ns` unless observed again.
type Obs = (u64, &'static str, u64);

/// Twice the time one observation stands for: a sample's weight, a snapshot's
/// typical interval; the header's interval (or 10 ms) when unknown.
fn holds(rec: &Recording) -> (u64, u64) {
    let fallback = match rec.header.interval_ns {
        0 => 10_000_000,
        i => i,
    };
    let mut gaps: Vec<u64> = rec
        .snapshots
        .iter()
        .map(|s| s.interval_ns)
        .filter(|&g| g > 0)
        .collect();
    gaps.sort_unstable();
    let snapshot = gaps.get(gaps.len() / 2).copied().unwrap_or(fallback);
    (2 * fallback, 2 * snapshot)
}

/// Observations per thread from samples and snapshots. A cpu sample without state
/// bits still says the thread was running.
fn observations(rec: &Recording) -> BTreeMap<u32, Vec<Obs>> {
    let (sample_hold, snapshot_hold) = holds(rec);
    let mut out: BTreeMap<u32, Vec<Obs>> = BTreeMap::new();
    for s in &rec.samples {
        let state = match (s.state, s.mode) {
            (0, SampleMode::Cpu) => Some("running"),
            (bits, _) => state_name(classify(bits)),
        };
        let hold = if s.weight_ns > 0 {
            2 * s.weight_ns
        } else {
            sample_hold
        };
        if let Some(state) = state {
            out.entry(s.thread.0)
                .or_default()
                .push((rec.ticks_to_ns(s.ticks), state, hold));
        }
    }
    for snap in &rec.snapshots {
        let ns = rec.ticks_to_ns(snap.ticks);
        for t in &snap.threads {
            if let Some(state) = state_name(classify(t.state)) {
                out.entry(t.thread.0)
                    .or_default()
                    .push((ns, state, snapshot_hold));
            }
        }
    }
    out
}

/// Spans from sorted observations, clipped to `[from, to]`.
fn spans(mut obs: Vec<Obs>, from: u64, to: u64) -> Vec<Span> {
    obs.sort_unstable();
    obs.dedup_by_key(|o| o.0);
    let mut out: Vec<Span> = Vec::new();
    for (k, &(ns, state, hold_ns)) in obs.iter().enumerate() {
        let limit = ns.saturating_add(hold_ns);
        let end = obs.get(k + 1).map_or(limit, |n| n.0.min(limit));
        let (start, end) = (ns.max(from), end.min(to));
        if start >= end {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.state == state && last.end_ns == start => last.end_ns = end,
            _ => out.push(Span {
                start_ns: start,
                end_ns: end,
                state,
            }),
        }
    }
    out
}

fn interval_of(rec: &Recording, e: &JvmEvent) -> Option<(u32, Span)> {
    let thread = e.thread;
    let (state, duration_ns) = match e.kind {
        EventKind::MonitorBlocked { duration_ns, .. } => ("blocked", duration_ns),
        EventKind::MonitorWait { duration_ns, .. } => ("waiting", duration_ns),
        EventKind::Park { duration_ns, .. } => ("parked", duration_ns),
        _ => return None,
    };
    let start_ns = rec.ticks_to_ns(e.ticks);
    let end_ns = start_ns.saturating_add(duration_ns);
    Some((
        thread.0,
        Span {
            start_ns,
            end_ns,
            state,
        },
    ))
}

fn lane<'a>(lanes: &'a mut BTreeMap<u32, Lane>, rec: &Recording, id: u32) -> &'a mut Lane {
    lanes.entry(id).or_insert_with(|| Lane {
        id,
        name: thread_name(rec, ThreadId(id)),
        spans: vec![],
        intervals: vec![],
    })
}

/// The timeline between `from_s` and `to_s` (seconds since the start; `None`: the
/// whole recording), with at most `max_events` event markers.
pub fn timeline(
    rec: &Recording,
    from_s: Option<f64>,
    to_s: Option<f64>,
    max_events: usize,
) -> Timeline {
    let end = rec.duration_ns();
    let from = from_s.map_or(0, |s| (s.max(0.0) * 1e9) as u64);
    let to = to_s.map_or(end, |s| (s.max(0.0) * 1e9) as u64).max(from);
    let mut lanes: BTreeMap<u32, Lane> = BTreeMap::new();
    for (thread, obs) in observations(rec) {
        let s = spans(obs, from, to);
        if !s.is_empty() {
            lane(&mut lanes, rec, thread).spans = s;
        }
    }
    let mut gc = Vec::new();
    for e in &rec.events {
        if let Some((thread, span)) = interval_of(rec, e) {
            if span.end_ns >= from && span.start_ns <= to {
                lane(&mut lanes, rec, thread).intervals.push(span);
            }
        } else if let Some((duration_ns, detail)) = super::reports::gc_of(rec, e) {
            let start_ns = rec.ticks_to_ns(e.ticks);
            if start_ns.saturating_add(duration_ns) >= from && start_ns <= to {
                gc.push(GcBar {
                    start_ns,
                    duration_ns,
                    detail,
                });
            }
        }
    }
    let filter = EventFilter {
        types: EventType::ALL
            .into_iter()
            .filter(|t| *t != EventType::Gc)
            .collect(),
        from_s: Some(from as f64 / 1e9),
        to_s: Some(to as f64 / 1e9 + 1e-9),
        ..Default::default()
    };
    let selected = filter.select(rec);
    let left_out = selected.len().saturating_sub(max_events) as u64;
    let (ages, mut user) = (Ages::of(rec), UserPairs::default());
    let weights = AllocWeights::of(rec);
    let mut events: Vec<EventRow> = selected
        .into_iter()
        .take(max_events)
        .map(|e| EventRow::of(rec, e, &ages, weights, &mut user))
        .collect();
    // The top frames say where; whole deep stacks would make the answer huge.
    events
        .iter_mut()
        .for_each(|e| e.stack.truncate(MARKER_FRAMES));
    for e in events.iter().filter(|e| e.thread != 0) {
        lane(&mut lanes, rec, e.thread);
    }
    gc.sort_by_key(|g| g.start_ns);
    let mut lanes: Vec<Lane> = lanes.into_values().collect();
    for l in &mut lanes {
        l.intervals.sort_by_key(|s| s.start_ns);
    }
    lanes.sort_by_key(|l| {
        (
            rec.thread(ThreadId(l.id))
                .map_or(u32::MAX, |t| t.start_order),
            l.id,
        )
    });
    Timeline {
        start_wall_ms: rec.header.start_wall_ns / 1_000_000,
        from_ns: from,
        to_ns: to,
        lanes,
        gc,
        events,
        events_left_out: left_out,
    }
}
