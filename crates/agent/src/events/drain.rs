//! The writer's side of events: takes what the callbacks and the user-event
//! rings queued, names classes, methods and stacks through the writer's
//! dictionaries, and writes JvmEvent and UserEventDef records.

use std::sync::atomic::Ordering;

use jscope_format::{ChunkWriter, JvmEvent, UserEventDef, UserEventKind};

use super::queue::{RawEvent, RawKind};
use super::{park, user};
use crate::java_threads::ThreadKey;
use crate::jvm::{Jni, Jvmti};
use crate::symbols::Symbols;

/// One event taken from the queues, before it is named.
pub enum Taken {
    /// From a Java thread's callback or ring; needs its recording thread.
    OnThread { thread: ThreadKey, event: Pending },
    /// Process-wide (timeline 0).
    Global(Pending),
}

pub enum Pending {
    Raw(RawKind, u64),
    User(user::UserRaw),
    Gc {
        ticks: u64,
        duration_ns: u64,
    },
    Free {
        ticks: u64,
        object: u64,
        allocated_total: u64,
    },
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
}

impl EventDrain {
    /// Everything queued now: the callbacks' queue, GCs, frees, user rings.
    pub fn take(&mut self) -> Vec<Taken> {
        let queues = &super::STATE.queues;
        let mut out: Vec<Taken> = queues.take().into_iter().map(on_thread).collect();
        while let Some([ticks, duration_ns, _]) = queues.gcs.pop() {
            out.push(Taken::Global(Pending::Gc { ticks, duration_ns }));
        }
        while let Some([ticks, object, allocated_total]) = queues.frees.pop() {
            out.push(Taken::Global(Pending::Free {
                ticks,
                object,
                allocated_total,
            }));
        }
        let clock = user::stamp_mapper();
        let mut rings = user::rings();
        for ring in rings.iter() {
            ring.drain(|e| {
                let e = user::UserRaw {
                    ticks: clock.ns(e.ticks),
                    ..*e
                };
                out.push(Taken::OnThread {
                    thread: ring.thread,
                    event: Pending::User(e),
                })
            });
        }
        user::forget_ended(&mut rings);
        out
    }

    /// Names registered since the last call, as UserEventDef records; called
    /// after `take`, so every id a taken event uses is defined.
    pub fn write_defs(&mut self, out: &mut ChunkWriter, symbols: &mut Symbols) {
        for (id, name) in user::names_from(self.defs_written + 1) {
            let name = symbols.string(out, &name);
            out.user_event_def(&UserEventDef { id, name });
            self.defs_written = id;
        }
    }

    /// Writes one event on recording thread `thread` (0 for process-wide ones);
    /// `owner` is the recording thread of its monitor's owner (0 unknown).
    pub fn write(
        &mut self,
        taken: Taken,
        (thread, owner): (u32, u32),
        (jvmti, jni): (Jvmti, Jni),
        out: &mut ChunkWriter,
        symbols: &mut Symbols,
    ) {
        let pending = match taken {
            Taken::OnThread { event, .. } => event,
            Taken::Global(event) => event,
        };
        let mut resolve = |key: usize| jvmti.method_names(jni, key as crate::sys::jmethodID).ok();
        let mut stack =
            |out: &mut ChunkWriter, symbols: &mut Symbols, frames: Vec<(usize, i32)>| {
                if frames.is_empty() {
                    0
                } else {
                    symbols.stack(out, frames.into_iter(), &mut resolve)
                }
            };
        let class = |out: &mut ChunkWriter, symbols: &mut Symbols, sig: Option<String>| {
            sig.map_or(0, |s| symbols.class_id(out, &s))
        };
        let event = match pending {
            Pending::Gc { ticks, duration_ns } => JvmEvent::Gc { ticks, duration_ns },
            Pending::Free {
                ticks,
                object,
                allocated_total,
            } => JvmEvent::ObjectFree {
                ticks,
                object,
                allocated_total,
            },
            Pending::User(e) => JvmEvent::User {
                thread,
                ticks: e.ticks,
                event: e.event,
                kind: match e.kind {
                    1 => UserEventKind::Begin,
                    2 => UserEventKind::End,
                    _ => UserEventKind::Instant,
                },
                value: e.value,
            },
            Pending::Raw(kind, ticks) => match kind {
                RawKind::ThreadStart => JvmEvent::ThreadStart {
                    thread,
                    ticks,
                    parent: 0,
                },
                RawKind::ThreadEnd => JvmEvent::ThreadEnd { thread, ticks },
                RawKind::Monitor {
                    duration_ns,
                    class: c,
                    object,
                    stack: s,
                    ..
                } => JvmEvent::MonitorBlocked {
                    thread,
                    ticks,
                    duration_ns,
                    class: class(out, symbols, c),
                    object,
                    owner,
                    stack: stack(out, symbols, s),
                },
                RawKind::Wait {
                    duration_ns,
                    class: c,
                    object,
                    timeout_ms,
                    timed_out,
                    stack: s,
                } => JvmEvent::MonitorWait {
                    thread,
                    ticks,
                    duration_ns,
                    class: class(out, symbols, c),
                    object,
                    timeout_ms,
                    timed_out,
                    stack: stack(out, symbols, s),
                },
                RawKind::Park {
                    duration_ns,
                    blocker,
                    timeout_ns,
                    stack: s,
                } => JvmEvent::Park {
                    thread,
                    ticks,
                    duration_ns,
                    blocker_class: class(out, symbols, blocker),
                    timeout_ns,
                    stack: stack(out, symbols, s),
                },
                RawKind::Alloc {
                    class: c,
                    size,
                    stack: s,
                    object,
                    allocated_total,
                } => JvmEvent::Alloc {
                    thread,
                    ticks,
                    class: class(out, symbols, c),
                    size,
                    stack: stack(out, symbols, s),
                    object,
                    allocated_total,
                },
                RawKind::ClassLoad { class: c } => JvmEvent::ClassLoad {
                    thread,
                    ticks,
                    class: class(out, symbols, c),
                },
                RawKind::ClassUnload { class: c } => JvmEvent::ClassUnload {
                    ticks,
                    class: class(out, symbols, c),
                },
                RawKind::Compiled { method, code_size } => JvmEvent::Compiled {
                    ticks,
                    method: symbols.method_id(out, method, &mut resolve),
                    code_size,
                },
                RawKind::CompiledUnload { method } => JvmEvent::CompiledUnload {
                    ticks,
                    method: symbols.method_id(out, method, &mut resolve),
                },
            },
        };
        out.event(&event);
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
            (
                "events.park_short",
                park::PARK.short.load(Ordering::Relaxed),
            ),
            (
                "events.park_unmatched",
                park::PARK.unmatched.load(Ordering::Relaxed),
            ),
        ]
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
