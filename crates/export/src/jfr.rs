//! JDK Flight Recorder files (jscope-jfr's writer) of what an export request
//! selects: the whole recording, or one kind of it, narrowed by thread, state and
//! time as every export is.

use std::borrow::Cow;

use jscope_analysis::{fill_empty_stacks, Selection};
use jscope_format::{EventKind, JvmEvent, Recording, SampleMode};
use jscope_jfr::{JfrChunk, JfrWriter};

use crate::{Kind, Request};

/// The chunk of `rec` narrowed to `req`, the next of `writer`'s file; `last`
/// marks the file's final chunk.
pub fn chunk(writer: &mut JfrWriter, rec: &Recording, req: &Request, last: bool) -> JfrChunk {
    writer.chunk(&selected(rec, req), last)
}

/// A JFR file of `rec` narrowed to `req`.
pub fn encode(rec: &Recording, req: &Request) -> Vec<u8> {
    chunk(&mut JfrWriter::new(), rec, req, true).bytes
}

/// What of `rec` a request keeps: with a kind, only that kind's samples, events
/// or traces; the thread and time filters apply to everything on a thread (a
/// process-wide event has none, and goes when a thread is asked for), the state
/// filter to samples. A sample without any frame gets the one frame
/// `[no_stack]`, as every view shows it.
pub fn selected<'r>(rec: &'r Recording, req: &Request) -> Cow<'r, Recording> {
    let mut kept = narrowed_to(rec, req);
    let empty = |r: &Recording| {
        let snapshot_stacks = r.snapshots.iter().flat_map(|s| &s.threads).map(|t| t.stack);
        let mut stacks = r.samples.iter().map(|s| s.stack).chain(snapshot_stacks);
        stacks.any(|id| r.stack(id).is_empty())
    };
    if empty(&kept) {
        fill_empty_stacks(kept.to_mut());
    }
    kept
}

fn narrowed_to<'r>(rec: &'r Recording, req: &Request) -> Cow<'r, Recording> {
    let sel = &req.selection;
    if req.kind.is_none() && !narrowed(req) {
        return Cow::Borrowed(rec);
    }
    let keeps = |kind: Kind| req.kind.is_none_or(|k| k == kind);
    // Events and traces have no state; a snapshot's moment is no thread's.
    let any_state = Selection {
        states: Vec::new(),
        ..sel.clone()
    };
    let on = |thread: u32, ticks: u64| any_state.keeps(rec, thread, 0, ticks);
    let window = Selection {
        thread: None,
        ..any_state.clone()
    };
    let mut out = rec.clone();
    out.samples
        .retain(|s| keeps(kind_of_sample(s.mode)) && sel.keeps(rec, s.thread.0, s.state, s.ticks));
    out.snapshots
        .retain(|s| keeps(Kind::Snapshot) && window.keeps(rec, 0, 0, s.ticks));
    for snap in &mut out.snapshots {
        let at = snap.ticks;
        snap.threads
            .retain(|t| sel.keeps(rec, t.thread.0, t.state, at));
    }
    out.snapshots.retain(|s| !s.threads.is_empty());
    out.events
        .retain(|e| event_kept(e, req.kind) && on(e.thread.0, e.ticks));
    for b in &mut out.traces {
        let thread = b.thread.0;
        b.events
            .retain(|e| keeps(Kind::Trace) && on(thread, e.ticks));
    }
    out.traces.retain(|b| !b.events.is_empty());
    if req.kind.is_some() {
        out.call_aggregates.clear();
        out.remote_calls.clear();
        out.header.modes = modes_of(&out);
    }
    Cow::Owned(out)
}

/// Whether a request's thread, state or time filters narrow what it exports.
pub fn narrowed(req: &Request) -> bool {
    let sel = &req.selection;
    sel.thread.is_some() || !sel.states.is_empty() || sel.from_s.is_some() || sel.to_s.is_some()
}

/// Whether a recording has no samples, snapshots, events or traced calls.
pub fn holds_nothing(rec: &Recording) -> bool {
    rec.samples.is_empty()
        && rec.snapshots.is_empty()
        && rec.events.is_empty()
        && rec.traces.iter().all(|b| b.events.is_empty())
}

fn kind_of_sample(mode: SampleMode) -> Kind {
    match mode {
        SampleMode::Cpu => Kind::Cpu,
        SampleMode::Wall => Kind::Wall,
    }
}

/// Whether an event goes with the asked kind: allocations with alloc, monitor
/// entries, waits and parks (the JDK's lock events) with lock; everything when
/// no kind is asked.
fn event_kept(e: &JvmEvent, kind: Option<Kind>) -> bool {
    match kind {
        None => true,
        Some(Kind::Alloc) => matches!(e.kind, EventKind::Alloc { .. }),
        Some(Kind::Lock) => matches!(
            e.kind,
            EventKind::MonitorBlocked { .. }
                | EventKind::MonitorWait { .. }
                | EventKind::Park { .. }
        ),
        Some(_) => false,
    }
}

/// The sampling modes left, as the agent names them.
fn modes_of(rec: &Recording) -> String {
    let has = |mode| rec.samples.iter().any(|s| s.mode == mode);
    [
        (has(SampleMode::Cpu), "cpu"),
        (has(SampleMode::Wall), "wall"),
        (!rec.snapshots.is_empty(), "snapshot"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, m)| *m)
    .collect::<Vec<_>>()
    .join("+")
}
