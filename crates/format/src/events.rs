//! JVM events (JPMT, JX): threads, monitors, waits, parks, GC, allocation samples,
//! object lifetimes, class loading, JIT, and user-defined events.
//!
//! Every event sits on a timeline: its thread's, or timeline 0 for process-wide events
//! (GC, object frees, class unloads, JIT). Events that last (blocking, waiting,
//! parking, GC) are written once, when they end, with their start time and duration.

use crate::varint::{put_i64, put_u64, Cursor};
use crate::FormatError;

/// A user event's name, declared once (`jscope.Events.register("name")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserEventDef {
    pub id: u32,
    /// String id of the name.
    pub name: u32,
}

/// How a user event was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum UserEventKind {
    Instant = 0,
    Begin = 1,
    End = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JvmEvent {
    /// `parent` is the thread that called `Thread.start`, 0 when unknown.
    ThreadStart {
        thread: u32,
        ticks: u64,
        parent: u32,
    },
    ThreadEnd {
        thread: u32,
        ticks: u64,
    },
    /// A contended `synchronized` entry: blocked from `ticks` for `duration_ns` on an
    /// object of class `class` (object = agent-assigned object id), held by `owner`.
    MonitorBlocked {
        thread: u32,
        ticks: u64,
        duration_ns: u64,
        class: u32,
        object: u64,
        owner: u32,
        stack: u32,
    },
    /// `Object.wait` from `ticks` for `duration_ns`; `timeout_ms` 0 = none.
    MonitorWait {
        thread: u32,
        ticks: u64,
        duration_ns: u64,
        class: u32,
        object: u64,
        timeout_ms: u64,
        timed_out: bool,
        stack: u32,
    },
    /// `LockSupport.park`; `blocker_class` 0 when no blocker object.
    Park {
        thread: u32,
        ticks: u64,
        duration_ns: u64,
        blocker_class: u32,
        timeout_ns: u64,
        stack: u32,
    },
    /// A garbage collection (JVMTI GarbageCollectionStart/Finish).
    Gc {
        ticks: u64,
        duration_ns: u64,
    },
    /// A sampled allocation. `object` is the id of the tagged object (0 when its
    /// lifetime is not tracked); `allocated_total` is the agent's running total of
    /// sampled allocated bytes at this moment (JX's age in bytes = difference).
    Alloc {
        thread: u32,
        ticks: u64,
        class: u32,
        size: u64,
        stack: u32,
        object: u64,
        allocated_total: u64,
    },
    /// A tracked object was freed (JVMTI ObjectFree).
    ObjectFree {
        ticks: u64,
        object: u64,
        allocated_total: u64,
    },
    ClassLoad {
        thread: u32,
        ticks: u64,
        class: u32,
    },
    ClassUnload {
        ticks: u64,
        class: u32,
    },
    /// A method was JIT-compiled (`code_size` bytes of machine code) or its code unloaded.
    Compiled {
        ticks: u64,
        method: u32,
        code_size: u64,
    },
    CompiledUnload {
        ticks: u64,
        method: u32,
    },
    User {
        thread: u32,
        ticks: u64,
        event: u32,
        kind: UserEventKind,
        value: i64,
    },
}

pub(crate) mod tag {
    pub const USER_EVENT_DEF: u64 = 7;
    pub const THREAD_START: u64 = 32;
    pub const THREAD_END: u64 = 33;
    pub const MONITOR_BLOCKED: u64 = 34;
    pub const MONITOR_WAIT: u64 = 35;
    pub const PARK: u64 = 36;
    pub const GC: u64 = 37;
    pub const ALLOC: u64 = 38;
    pub const OBJECT_FREE: u64 = 39;
    pub const CLASS_LOAD: u64 = 40;
    pub const CLASS_UNLOAD: u64 = 41;
    pub const COMPILED: u64 = 42;
    pub const COMPILED_UNLOAD: u64 = 43;
    pub const USER: u64 = 44;

    pub fn is_event(t: u64) -> bool {
        (THREAD_START..=USER).contains(&t)
    }
}

impl JvmEvent {
    /// The thread whose timeline carries the event; 0 for process-wide events.
    pub fn timeline(&self) -> u32 {
        use JvmEvent::*;
        match *self {
            ThreadStart { thread, .. }
            | ThreadEnd { thread, .. }
            | MonitorBlocked { thread, .. }
            | MonitorWait { thread, .. }
            | Park { thread, .. }
            | Alloc { thread, .. }
            | ClassLoad { thread, .. }
            | User { thread, .. } => thread,
            Gc { .. }
            | ObjectFree { .. }
            | ClassUnload { .. }
            | Compiled { .. }
            | CompiledUnload { .. } => 0,
        }
    }

    pub fn ticks(&self) -> u64 {
        use JvmEvent::*;
        match *self {
            ThreadStart { ticks, .. }
            | ThreadEnd { ticks, .. }
            | MonitorBlocked { ticks, .. }
            | MonitorWait { ticks, .. }
            | Park { ticks, .. }
            | Gc { ticks, .. }
            | Alloc { ticks, .. }
            | ObjectFree { ticks, .. }
            | ClassLoad { ticks, .. }
            | ClassUnload { ticks, .. }
            | Compiled { ticks, .. }
            | CompiledUnload { ticks, .. }
            | User { ticks, .. } => ticks,
        }
    }

    /// The record tag and the fields after the thread and time, in wire order.
    fn tag_and_fields(&self) -> (u64, Vec<u64>) {
        use JvmEvent::*;
        match *self {
            ThreadStart { parent, .. } => (tag::THREAD_START, vec![parent.into()]),
            ThreadEnd { .. } => (tag::THREAD_END, vec![]),
            MonitorBlocked {
                duration_ns,
                class,
                object,
                owner,
                stack,
                ..
            } => (
                tag::MONITOR_BLOCKED,
                vec![
                    duration_ns,
                    class.into(),
                    object,
                    owner.into(),
                    stack.into(),
                ],
            ),
            MonitorWait {
                duration_ns,
                class,
                object,
                timeout_ms,
                timed_out,
                stack,
                ..
            } => (
                tag::MONITOR_WAIT,
                vec![
                    duration_ns,
                    class.into(),
                    object,
                    timeout_ms,
                    timed_out.into(),
                    stack.into(),
                ],
            ),
            Park {
                duration_ns,
                blocker_class,
                timeout_ns,
                stack,
                ..
            } => (
                tag::PARK,
                vec![duration_ns, blocker_class.into(), timeout_ns, stack.into()],
            ),
            Gc { duration_ns, .. } => (tag::GC, vec![duration_ns]),
            Alloc {
                class,
                size,
                stack,
                object,
                allocated_total,
                ..
            } => (
                tag::ALLOC,
                vec![class.into(), size, stack.into(), object, allocated_total],
            ),
            ObjectFree {
                object,
                allocated_total,
                ..
            } => (tag::OBJECT_FREE, vec![object, allocated_total]),
            ClassLoad { class, .. } => (tag::CLASS_LOAD, vec![class.into()]),
            ClassUnload { class, .. } => (tag::CLASS_UNLOAD, vec![class.into()]),
            Compiled {
                method, code_size, ..
            } => (tag::COMPILED, vec![method.into(), code_size]),
            CompiledUnload { method, .. } => (tag::COMPILED_UNLOAD, vec![method.into()]),
            User {
                event, kind, value, ..
            } => (
                tag::USER,
                vec![
                    event.into(),
                    kind as u64,
                    ((value << 1) ^ (value >> 63)) as u64,
                ],
            ),
        }
    }
}

/// Encodes `e` as `thread:varint dt:svarint field:varint*`; returns its tag.
pub(crate) fn encode_event(out: &mut Vec<u8>, e: &JvmEvent, dt: i64) -> u64 {
    let (t, fields) = e.tag_and_fields();
    put_u64(out, e.timeline().into());
    put_i64(out, dt);
    for f in fields {
        put_u64(out, f);
    }
    t
}

fn u32_of(v: u64) -> Result<u32, FormatError> {
    u32::try_from(v).map_err(|_| FormatError::Malformed(format!("id {v} exceeds u32")))
}

/// Decodes an event record body; `absolute` turns (timeline, delta) into ticks.
pub(crate) fn decode_event(
    t: u64,
    c: &mut Cursor,
    absolute: &mut dyn FnMut(u32, i64) -> u64,
) -> Result<JvmEvent, FormatError> {
    use JvmEvent::*;
    let thread = c.u32()?;
    let ticks = absolute(thread, c.i64()?);
    let mut n = || c.u64();
    Ok(match t {
        tag::THREAD_START => ThreadStart {
            thread,
            ticks,
            parent: u32_of(n()?)?,
        },
        tag::THREAD_END => ThreadEnd { thread, ticks },
        tag::MONITOR_BLOCKED => MonitorBlocked {
            thread,
            ticks,
            duration_ns: n()?,
            class: u32_of(n()?)?,
            object: n()?,
            owner: u32_of(n()?)?,
            stack: u32_of(n()?)?,
        },
        tag::MONITOR_WAIT => MonitorWait {
            thread,
            ticks,
            duration_ns: n()?,
            class: u32_of(n()?)?,
            object: n()?,
            timeout_ms: n()?,
            timed_out: n()? != 0,
            stack: u32_of(n()?)?,
        },
        tag::PARK => Park {
            thread,
            ticks,
            duration_ns: n()?,
            blocker_class: u32_of(n()?)?,
            timeout_ns: n()?,
            stack: u32_of(n()?)?,
        },
        tag::GC => Gc {
            ticks,
            duration_ns: n()?,
        },
        tag::ALLOC => Alloc {
            thread,
            ticks,
            class: u32_of(n()?)?,
            size: n()?,
            stack: u32_of(n()?)?,
            object: n()?,
            allocated_total: n()?,
        },
        tag::OBJECT_FREE => ObjectFree {
            ticks,
            object: n()?,
            allocated_total: n()?,
        },
        tag::CLASS_LOAD => ClassLoad {
            thread,
            ticks,
            class: u32_of(n()?)?,
        },
        tag::CLASS_UNLOAD => ClassUnload {
            ticks,
            class: u32_of(n()?)?,
        },
        tag::COMPILED => Compiled {
            ticks,
            method: u32_of(n()?)?,
            code_size: n()?,
        },
        tag::COMPILED_UNLOAD => CompiledUnload {
            ticks,
            method: u32_of(n()?)?,
        },
        tag::USER => {
            let event = u32_of(n()?)?;
            let kind = match n()? {
                0 => UserEventKind::Instant,
                1 => UserEventKind::Begin,
                2 => UserEventKind::End,
                k => {
                    return Err(FormatError::Malformed(format!(
                        "unknown user event kind {k}"
                    )))
                }
            };
            let z = n()?;
            User {
                thread,
                ticks,
                event,
                kind,
                value: ((z >> 1) as i64) ^ -((z & 1) as i64),
            }
        }
        other => {
            return Err(FormatError::Malformed(format!(
                "tag {other} is not an event"
            )))
        }
    })
}
