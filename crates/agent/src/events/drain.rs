//! The writer's side of events: takes what the callbacks and the user-event
//! rings queued, names classes, methods and stacks through the writer's
//! dictionaries, and writes JvmEvent and UserEventDef records.

use std::sync::atomic::Ordering;

use jscope_format::{
    ChunkWriter, ClassId, EventKind, JvmEvent, MethodId, RequestId, StackId, StringId, ThreadId,
    UserEventDef, UserEventKind,
};

use super::gcinfo::{self, GcNote};
use super::queue::{RawEvent, RawKind};
use super::user;
use crate::java_threads::ThreadKey;
use crate::sink::Sink;
use crate::symbols::Symbols;

/// One event taken from the queues, before it is named.
pub enum Taken {
    /// From a Java thread's callback or ring; needs its recording thread.
    OnThread { thread: ThreadKey, event: Pending },
    /// Process-wide (timeline 0).
    Global(Pending),
}

/// An event as queued, with its time: a callback's, whose classes, stacks and
/// methods are still to be named, or one already of the format's kinds.
pub enum Pending {
    Raw(RawKind, u64),
    Ready(EventKind, u64),
    /// A collection the JVM's GC notification described, with its time and
    /// duration: the JVMTI pause it matched, or its own for concurrent cycles
    /// and notes no pause matched.
    Gc(Box<GcNote>, u64, u64),
}

impl Taken {
    /// The thread whose recording thread the event needs.
    pub fn thread(&self) -> Option<ThreadKey> {
        match self {
            Taken::OnThread { thread, .. } => Some(*thread),
            Taken::Global(_) => None,
        }
    }

    /// Thread.getId() of a contended monitor's owner, when asked for and known.
    pub fn owner_java_id(&self) -> Option<i64> {
        match self {
            Taken::OnThread {
                event: Pending::Raw(RawKind::Monitor { owner, .. }, _),
                ..
            } if *owner != 0 => Some(*owner),
            _ => None,
        }
    }
}

/// The writer's event state for one recording.
#[derive(Default)]
pub struct EventDrain {
    /// User event names written so far (ids 1..=this).
    defs_written: u32,
    written: u64,
    /// JVMTI pauses (start, duration) waiting for their GC notification.
    pauses: Vec<(u64, u64)>,
    /// GC notifications waiting for the clock offset to settle.
    notes: Vec<GcNote>,
    matcher: gcinfo::Matcher,
}

/// How long a notification waits for the offset to settle before it is paired
/// on the best guess; a pause waits twice that for its notification before it
/// is written without.
const NOTE_WAIT_NS: u64 = 2_000_000_000;

impl EventDrain {
    /// Everything queued now: the callbacks' queue, GCs, frees, user rings.
    pub fn take(&mut self) -> Vec<Taken> {
        let queues = &super::STATE.queues;
        let mut out: Vec<Taken> = queues.take().into_iter().map(on_thread).collect();
        while let Some([ticks, duration_ns, _]) = queues.gcs.pop() {
            if gcinfo::installed() {
                self.pauses.push((ticks, duration_ns));
            } else {
                out.push(Taken::Global(Pending::Ready(
                    EventKind::gc_pause(duration_ns),
                    ticks,
                )));
            }
        }
        self.match_gcs(&mut out);
        while let Some([ticks, object, allocated_total]) = queues.frees.pop() {
            let kind = EventKind::ObjectFree {
                object,
                allocated_total,
            };
            out.push(Taken::Global(Pending::Ready(kind, ticks)));
        }
        let clock = user::stamp_mapper();
        let mut rings = user::rings();
        for ring in rings.iter() {
            ring.drain(|e| {
                out.push(Taken::OnThread {
                    thread: ring.thread,
                    event: Pending::Ready(user_kind(e), clock.ns(e.ticks)),
                })
            });
        }
        user::forget_ended(&mut rings);
        out
    }

    /// Pairs GC notes with the pauses they describe; writes pauses whose note
    /// did not come in time (all of them once the recording stopped) as pauses
    /// only.
    fn match_gcs(&mut self, out: &mut Vec<Taken>) {
        let fresh = gcinfo::take_notes();
        self.matcher.vote(&fresh, &self.pauses);
        self.notes.extend(fresh);
        let now = crate::clock::monotonic_ns();
        let stopped = !super::on(super::Kinds::GC);
        let overdue = self
            .notes
            .first()
            .is_some_and(|n| now.saturating_sub(n.arrival_ns) > NOTE_WAIT_NS);
        // Until the offset is settled, notes wait (pairing early on a guess
        // could shift every later pair).
        let notes = if self.matcher.confident() || stopped || overdue {
            std::mem::take(&mut self.notes)
        } else {
            Vec::new()
        };
        let matched = self.matcher.match_all(&notes, &self.pauses);
        let mut used = vec![false; self.pauses.len()];
        // Notes that share a pause become one collection (see `Matcher`).
        let mut joined: Vec<(usize, GcNote)> = Vec::new();
        for (note, pause) in notes.into_iter().zip(matched) {
            match pause {
                Some(i) => {
                    used[i] = true;
                    match joined.iter_mut().find(|(j, _)| *j == i) {
                        Some((_, first)) => gcinfo::join(first, note),
                        None => joined.push((i, note)),
                    }
                }
                None => {
                    let d = note.duration_ns();
                    let ticks = note.arrival_ns.saturating_sub(d);
                    out.push(Taken::Global(Pending::Gc(Box::new(note), ticks, d)));
                }
            }
        }
        for (i, note) in joined {
            let (ticks, duration_ns) = self.pauses[i];
            // A pause longer than the notes joined to it so far may still get
            // another (Parallel's System.gc(): the full collection's note can
            // come a batch after the scavenge's): they wait for it a while.
            let whole = gcinfo::covers(&note, duration_ns);
            if !whole && !stopped && now.saturating_sub(note.arrival_ns) <= NOTE_WAIT_NS {
                used[i] = false;
                self.notes.push(note);
                continue;
            }
            out.push(Taken::Global(Pending::Gc(
                Box::new(note),
                ticks,
                duration_ns,
            )));
        }
        let mut i = 0;
        self.pauses.retain(|_| {
            i += 1;
            !used[i - 1]
        });
        self.pauses.retain(|&(ticks, duration_ns)| {
            let waited = now.saturating_sub(ticks + duration_ns) > 2 * NOTE_WAIT_NS;
            if stopped || waited {
                out.push(Taken::Global(Pending::Ready(
                    EventKind::gc_pause(duration_ns),
                    ticks,
                )));
            }
            !(stopped || waited)
        });
    }

    /// Names registered since the last call, as UserEventDef records; called
    /// after `take`, so every id a taken event uses is defined.
    pub fn write_defs(&mut self, out: &mut ChunkWriter, symbols: &mut Symbols) {
        for (id, name) in user::names_from(self.defs_written + 1) {
            let name = symbols.string(out, &name);
            out.user_event_def(&UserEventDef {
                id,
                name: StringId(name),
            });
            self.defs_written = id;
        }
    }

    /// Writes one event on recording thread `thread` (0 for process-wide ones);
    /// `owner` is the recording thread of its monitor's owner (0 unknown).
    pub fn write(&mut self, taken: Taken, (thread, owner): (u32, u32), sink: &mut Sink) {
        let (Taken::OnThread { event, .. } | Taken::Global(event)) = taken;
        let (kind, ticks) = match event {
            Pending::Ready(kind, ticks) => (kind, ticks),
            Pending::Raw(raw, ticks) => (raw_kind(raw, ThreadId(owner), &mut Names(sink)), ticks),
            Pending::Gc(note, ticks, duration_ns) => {
                let mut name = |s: &str| match s {
                    "" => StringId(0),
                    s => StringId(sink.symbols.string(&mut sink.chunk, s)),
                };
                let kind = EventKind::Gc {
                    duration_ns,
                    collector: name(&note.collector),
                    cause: name(&note.cause),
                    generation: note.generation,
                    heap_before: note.heap_before,
                    heap_after: note.heap_after,
                    gc_id: note.gc_id,
                    concurrent: note.concurrent,
                };
                (kind, ticks)
            }
        };
        sink.chunk
            .event(&JvmEvent::on(ThreadId(thread), ticks, kind));
        self.written += 1;
    }

    /// Counters for the recording; none when events were never asked for.
    pub fn counter_values(&self) -> Vec<(&'static str, u64)> {
        if !super::started() {
            return Vec::new();
        }
        vec![
            ("events.written", self.written),
            ("events.dropped", {
                let q = &super::STATE.queues;
                q.dropped.load(Ordering::Relaxed)
                    + q.gcs.dropped.load(Ordering::Relaxed)
                    + q.frees.dropped.load(Ordering::Relaxed)
            }),
            ("events.user_dropped", user::dropped()),
            ("events.gc_notes_dropped", gcinfo::dropped()),
            (
                "events.park_short",
                super::STATE.park.short.load(Ordering::Relaxed),
            ),
            (
                "events.park_unmatched",
                super::STATE.park.unmatched.load(Ordering::Relaxed),
            ),
        ]
    }
}

/// Names what events refer to (classes, stacks, methods) through the writer's
/// sink, as ids of the recording; none for what a callback could not see.
struct Names<'a>(&'a mut Sink);

impl Names<'_> {
    fn class(&mut self, signature: Option<String>) -> ClassId {
        signature.map_or(ClassId::NONE, |s| ClassId(self.0.class(&s)))
    }

    fn stack(&mut self, frames: Vec<(usize, i32)>) -> StackId {
        if frames.is_empty() {
            return StackId::NONE;
        }
        StackId(self.0.stack(frames.into_iter()))
    }

    fn method(&mut self, key: usize) -> MethodId {
        MethodId(self.0.method(key))
    }
}

fn user_kind(e: &user::UserRaw) -> EventKind {
    let kind = match e.kind {
        1 => UserEventKind::Begin,
        2 => UserEventKind::End,
        _ => UserEventKind::Instant,
    };
    EventKind::User {
        event: e.event,
        kind,
        value: e.value,
    }
}

/// The format's kind for a callback's event: the same fields, classes, stacks and
/// methods named.
fn raw_kind(kind: RawKind, owner: ThreadId, n: &mut Names) -> EventKind {
    use EventKind::*;
    match kind {
        RawKind::ThreadStart => ThreadStart {
            parent: ThreadId::NONE,
        },
        RawKind::ThreadEnd => ThreadEnd {},
        RawKind::Monitor {
            duration_ns,
            class,
            object,
            stack,
            request,
            ..
        } => MonitorBlocked {
            duration_ns,
            class: n.class(class),
            object,
            owner,
            stack: n.stack(stack),
            request: RequestId(request.into()),
        },
        RawKind::Wait {
            duration_ns,
            class,
            object,
            timeout_ms,
            timed_out,
            stack,
            request,
        } => MonitorWait {
            duration_ns,
            class: n.class(class),
            object,
            timeout_ms,
            timed_out,
            stack: n.stack(stack),
            request: RequestId(request.into()),
        },
        RawKind::Park {
            duration_ns,
            blocker,
            timeout_ns,
            stack,
            request,
        } => Park {
            duration_ns,
            blocker_class: n.class(blocker),
            timeout_ns,
            stack: n.stack(stack),
            request: RequestId(request.into()),
        },
        RawKind::Alloc {
            class,
            size,
            stack,
            object,
            allocated_total,
            weight,
            request,
        } => Alloc {
            class: n.class(class),
            size,
            stack: n.stack(stack),
            object,
            allocated_total,
            weight,
            request: RequestId(request.into()),
        },
        RawKind::ClassLoad { class } => ClassLoad {
            class: n.class(class),
        },
        RawKind::ClassUnload { class } => ClassUnload {
            class: n.class(class),
        },
        RawKind::Compiled { method, code_size } => Compiled {
            method: n.method(method),
            code_size,
        },
        RawKind::CompiledUnload { method } => CompiledUnload {
            method: n.method(method),
        },
    }
}

fn on_thread(e: RawEvent) -> Taken {
    let global = matches!(
        e.kind,
        RawKind::Compiled { .. } | RawKind::CompiledUnload { .. } | RawKind::ClassUnload { .. }
    );
    let pending = Pending::Raw(e.kind, e.ticks);
    match global {
        true => Taken::Global(pending),
        false => Taken::OnThread {
            thread: e.thread,
            event: pending,
        },
    }
}
