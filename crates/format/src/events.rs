//! JVM events (JPMT, JX): threads, monitors, waits, parks, GC, allocation samples,
//! object lifetimes, class loading, JIT, and user-defined events.
//!
//! Every event is one shape, [`JvmEvent`]: the timeline it sits on (its thread, or
//! thread 0 for process-wide events: GC, object frees, class unloads, JIT), its time,
//! and its [`EventKind`] with the kind's own fields. Events that last (blocking,
//! waiting, parking, GC) are written once, when they end, with their start time and
//! duration.
//!
//! The kinds are declared once, in the `event_kinds!` table below: tag, name and
//! fields in wire order. The enum, the encoder, the decoder, field access by name and
//! [`EVENT_KINDS`] are all made from it, so a new kind or field is one table entry.

use crate::ids::{ClassId, IdMap, MethodId, RequestId, StackId, StringId, ThreadId};
use crate::varint::{put_i64, put_u64, Cursor};
use crate::FormatError;

/// A user event's name, declared once (`jscope.Events.register("name")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserEventDef {
    pub id: u32,
    pub name: StringId,
}

/// How a user event was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum UserEventKind {
    Instant = 0,
    Begin = 1,
    End = 2,
}

/// One JVM event: on which timeline, when, and what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JvmEvent {
    /// The thread whose timeline carries the event; [`ThreadId::NONE`] for
    /// process-wide events.
    pub thread: ThreadId,
    /// When it happened; for events that last, when they began.
    pub ticks: u64,
    pub kind: EventKind,
}

/// A field of an event kind, as the table declares it: its name and Rust type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventField {
    pub name: &'static str,
    pub ty: &'static str,
}

/// An event kind as the table declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKindInfo {
    pub tag: u64,
    /// The kind's short name, as `--type` and the event rows spell it.
    pub name: &'static str,
    /// The fields after thread and time, in wire order.
    pub fields: &'static [EventField],
}

/// The value of one event field, for code that reads fields by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue {
    U64(u64),
    I64(i64),
    Bool(bool),
    Class(ClassId),
    Method(MethodId),
    Stack(StackId),
    Thread(ThreadId),
    String(StringId),
    /// A user event id ([`UserEventDef::id`]).
    UserEvent(u32),
    UserKind(UserEventKind),
}

impl FieldValue {
    /// The value as a number: ids as their number, `true` as 1, a user event kind as
    /// its wire value; a negative `I64` as its two's complement.
    pub fn as_u64(self) -> u64 {
        self.as_i64() as u64
    }

    /// As [`FieldValue::as_u64`], signed; a `U64` above `i64::MAX` wraps.
    pub fn as_i64(self) -> i64 {
        match self {
            FieldValue::U64(v) => v as i64,
            FieldValue::I64(v) => v,
            FieldValue::Bool(b) => b.into(),
            FieldValue::Class(id) => id.0.into(),
            FieldValue::Method(id) => id.0.into(),
            FieldValue::Stack(id) => id.0.into(),
            FieldValue::Thread(id) => id.0.into(),
            FieldValue::String(id) => id.0.into(),
            FieldValue::UserEvent(id) => id.into(),
            FieldValue::UserKind(k) => k as i64,
        }
    }
}

/// How a field type goes on the wire (all as varints) and reads as a [`FieldValue`].
trait Wire: Sized + Copy {
    fn put(self, out: &mut Vec<u8>);
    fn get(c: &mut Cursor) -> Result<Self, FormatError>;
    fn value(self) -> FieldValue;
    /// The value a trailing field missing from an older record reads as.
    fn zero() -> Self;
    fn is_zero(self) -> bool {
        self.value().as_u64() == 0
    }
}

impl Wire for u64 {
    fn put(self, out: &mut Vec<u8>) {
        put_u64(out, self);
    }
    fn get(c: &mut Cursor) -> Result<u64, FormatError> {
        c.u64()
    }
    fn value(self) -> FieldValue {
        FieldValue::U64(self)
    }
    fn zero() -> u64 {
        0
    }
}

/// Zigzag, so small negative values stay short.
impl Wire for i64 {
    fn put(self, out: &mut Vec<u8>) {
        put_i64(out, self);
    }
    fn get(c: &mut Cursor) -> Result<i64, FormatError> {
        c.i64()
    }
    fn value(self) -> FieldValue {
        FieldValue::I64(self)
    }
    fn zero() -> i64 {
        0
    }
}

impl Wire for bool {
    fn put(self, out: &mut Vec<u8>) {
        put_u64(out, self.into());
    }
    fn get(c: &mut Cursor) -> Result<bool, FormatError> {
        Ok(c.u64()? != 0)
    }
    fn value(self) -> FieldValue {
        FieldValue::Bool(self)
    }
    fn zero() -> bool {
        false
    }
}

/// A user event id.
impl Wire for u32 {
    fn put(self, out: &mut Vec<u8>) {
        put_u64(out, self.into());
    }
    fn get(c: &mut Cursor) -> Result<u32, FormatError> {
        c.u32()
    }
    fn value(self) -> FieldValue {
        FieldValue::UserEvent(self)
    }
    fn zero() -> u32 {
        0
    }
}

impl Wire for UserEventKind {
    fn put(self, out: &mut Vec<u8>) {
        put_u64(out, self as u64);
    }
    fn get(c: &mut Cursor) -> Result<UserEventKind, FormatError> {
        match c.u64()? {
            0 => Ok(UserEventKind::Instant),
            1 => Ok(UserEventKind::Begin),
            2 => Ok(UserEventKind::End),
            k => Err(FormatError::Malformed(format!(
                "unknown user event kind {k}"
            ))),
        }
    }
    fn value(self) -> FieldValue {
        FieldValue::UserKind(self)
    }
    fn zero() -> UserEventKind {
        UserEventKind::Instant
    }
}

/// A request id: a number on the wire and to readers of fields by name.
impl Wire for RequestId {
    fn put(self, out: &mut Vec<u8>) {
        put_u64(out, self.0);
    }
    fn get(c: &mut Cursor) -> Result<RequestId, FormatError> {
        c.u64().map(RequestId)
    }
    fn value(self) -> FieldValue {
        FieldValue::U64(self.0)
    }
    fn zero() -> RequestId {
        RequestId::NONE
    }
}

macro_rules! id_wire {
    ($($id:ident => $variant:ident),*) => {$(
        impl Wire for $id {
            fn put(self, out: &mut Vec<u8>) {
                put_u64(out, self.into());
            }
            fn get(c: &mut Cursor) -> Result<$id, FormatError> {
                c.u32().map($id)
            }
            fn value(self) -> FieldValue {
                FieldValue::$variant(self)
            }
            fn zero() -> $id {
                $id(0)
            }
        }
    )*};
}

id_wire!(
    ClassId => Class,
    MethodId => Method,
    StackId => Stack,
    ThreadId => Thread,
    StringId => String
);

/// How a field type moves to another recording's ids: ids through the map,
/// numbers as they are.
trait RemapField: Sized {
    fn remap(self, map: &mut dyn IdMap) -> Self;
}

macro_rules! kept_as_is {
    ($($ty:ty),*) => {$(
        impl RemapField for $ty {
            fn remap(self, _: &mut dyn IdMap) -> $ty {
                self
            }
        }
    )*};
}

kept_as_is!(u64, i64, bool, UserEventKind);

macro_rules! mapped_by {
    ($($ty:ty => $method:ident),*) => {$(
        impl RemapField for $ty {
            fn remap(self, map: &mut dyn IdMap) -> $ty {
                map.$method(self)
            }
        }
    )*};
}

mapped_by!(
    ClassId => class,
    MethodId => method,
    StackId => stack,
    ThreadId => thread,
    StringId => string,
    u32 => user_event,
    RequestId => request
);

/// Declares the event kinds: the enum, its tags and names, the encoder and decoder,
/// field access by name, remapping to another recording's ids, and [`EVENT_KINDS`].
macro_rules! event_kinds {
    ($(
        $(#[$doc:meta])*
        $kind:ident = $tag:literal, $name:literal {
            $($field:ident: $ty:ident),* $(; $($opt:ident: $oty:ident),*)?
        }
    )*) => {
        /// What happened, with the fields of its kind (in wire order).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum EventKind {
            $($(#[$doc])* $kind { $($field: $ty,)* $($($opt: $oty),*)? },)*
        }

        /// Every event kind, in tag order.
        pub const EVENT_KINDS: &[EventKindInfo] = &[$(EventKindInfo {
            tag: $tag,
            name: $name,
            fields: &[
                $(EventField { name: stringify!($field), ty: stringify!($ty) },)*
                $($(EventField { name: stringify!($opt), ty: stringify!($oty) }),*)?
            ],
        }),*];

        impl EventKind {
            /// The record tag of this kind.
            pub fn tag(&self) -> u64 {
                match self {
                    $(EventKind::$kind { .. } => $tag,)*
                }
            }

            /// Writes the fields in wire order; the trailing ones (after `;` in the
            /// table) only when one of them is not zero, so an event without them
            /// has the bytes it had before they were added.
            fn encode_fields(&self, out: &mut Vec<u8>) {
                match *self {
                    $(EventKind::$kind { $($field,)* $($($opt),*)? } => {
                        $($field.put(out);)*
                        $(if false $(|| !$opt.is_zero())* {
                            $($opt.put(out);)*
                        })?
                    })*
                }
            }

            /// Reads the fields of the kind tagged `tag`; `None` when it is no event.
            /// Trailing fields missing from the record (older writers) read as zero.
            fn decode_fields(tag: u64, c: &mut Cursor) -> Result<Option<EventKind>, FormatError> {
                Ok(Some(match tag {
                    $($tag => EventKind::$kind {
                        $($field: Wire::get(c)?,)*
                        $($($opt: if c.is_empty() { Wire::zero() } else { Wire::get(c)? }),*)?
                    },)*
                    _ => return Ok(None),
                }))
            }

            /// The event's fields with their ids (classes, methods, stacks, threads,
            /// strings, user events) as `map` maps them; numbers stay as they are.
            pub fn remap(&self, map: &mut dyn IdMap) -> EventKind {
                match *self {
                    $(EventKind::$kind { $($field,)* $($($opt),*)? } => EventKind::$kind {
                        $($field: RemapField::remap($field, map),)*
                        $($($opt: RemapField::remap($opt, map),)*)?
                    },)*
                }
            }

            /// The field called `name`, when this kind has one.
            pub fn field(&self, name: &str) -> Option<FieldValue> {
                match *self {
                    $(EventKind::$kind { $($field,)* $($($opt),*)? } => {
                        $(if name == stringify!($field) {
                            return Some($field.value());
                        })*
                        $($(if name == stringify!($opt) {
                            return Some($opt.value());
                        })*)?
                    })*
                }
                None
            }
        }
    };
}

event_kinds! {
    /// `parent` is the thread that called `Thread.start`, 0 when unknown.
    ThreadStart = 32, "thread_start" { parent: ThreadId }
    ThreadEnd = 33, "thread_end" {}
    /// A contended `synchronized` entry: blocked from the event's time for
    /// `duration_ns` on an object of class `class` (object = agent-assigned object
    /// id), held by `owner`. `request` is the request the thread was serving
    /// (0: none), as on the kinds below that have one.
    MonitorBlocked = 34, "monitor" {
        duration_ns: u64, class: ClassId, object: u64, owner: ThreadId, stack: StackId;
        request: RequestId
    }
    /// `Object.wait` for `duration_ns`; `timeout_ms` 0 = none.
    MonitorWait = 35, "wait" {
        duration_ns: u64, class: ClassId, object: u64, timeout_ms: u64, timed_out: bool,
        stack: StackId; request: RequestId
    }
    /// `LockSupport.park`; `blocker_class` 0 when no blocker object.
    Park = 36, "park" {
        duration_ns: u64, blocker_class: ClassId, timeout_ns: u64, stack: StackId;
        request: RequestId
    }
    /// A garbage collection (JVMTI GarbageCollectionStart/Finish): a pause.
    /// The trailing fields come from the JVM's GC notification of the same
    /// collection when the agent matched one (zero otherwise): `collector` (the
    /// GarbageCollectorMXBean's name), `cause` (`System.gc()`, `G1 Evacuation
    /// Pause`, ...), `generation` ([`GC_YOUNG`], [`GC_OLD`], [`GC_FULL`], 0 unknown),
    /// the heap's used bytes `heap_before`/`heap_after` (all pools), `gc_id` (the
    /// collector's count) and `concurrent` (a concurrent cycle: `duration_ns` is
    /// then its length, not a pause).
    Gc = 37, "gc" {
        duration_ns: u64;
        collector: StringId, cause: StringId, generation: u64, heap_before: u64,
        heap_after: u64, gc_id: u64, concurrent: bool
    }
    /// A sampled allocation. `object` is the id of the tagged object (0 when its
    /// lifetime is not tracked); `allocated_total` is the agent's running total of
    /// allocated bytes at this moment (JX's age in bytes = difference): the sum of
    /// the samples' weights, or of their sizes in recordings without weights.
    /// `weight` is the bytes the sample stands for (0: not recorded, an older
    /// writer; readers estimate it from `size` and the header's `events.allocrate`).
    Alloc = 38, "alloc" {
        class: ClassId, size: u64, stack: StackId, object: u64, allocated_total: u64;
        weight: u64, request: RequestId
    }
    /// A tracked object was freed (JVMTI ObjectFree).
    ObjectFree = 39, "free" { object: u64, allocated_total: u64 }
    ClassLoad = 40, "class_load" { class: ClassId }
    ClassUnload = 41, "class_unload" { class: ClassId }
    /// A method was JIT-compiled (`code_size` bytes of machine code).
    Compiled = 42, "compiled" { method: MethodId, code_size: u64 }
    /// A method's compiled code was unloaded.
    CompiledUnload = 43, "compiled_unload" { method: MethodId }
    /// `event` is a user event id; `value` what was logged with it.
    User = 44, "user" { event: u32, kind: UserEventKind, value: i64 }
    /// The event's thread called `Thread.start` on the thread whose Java id is
    /// `started`, after it had written `trace_events` trace events: the call open
    /// at that point is the one that started the thread (written while tracing).
    ThreadStartCall = 45, "start_call" { started: i64, trace_events: u64 }
    /// A sampled native allocation (agent option `nativemem`): `size` bytes at
    /// `address` returned by `call` ([`NATIVE_MALLOC`], [`NATIVE_CALLOC`],
    /// [`NATIVE_REALLOC`], [`NATIVE_POSIX_MEMALIGN`], [`NATIVE_ALIGNED_ALLOC`]),
    /// standing for `weight` bytes allocated (see [`alloc_sample_weight`]). `id`
    /// numbers the allocation within the recording, and its
    /// [`EventKind::NativeFree`] repeats it; 0 when its free is not followed (the
    /// agent's table of sampled blocks was full).
    NativeAlloc = 46, "native_alloc" {
        size: u64, weight: u64, address: u64, call: u64, id: u64, stack: StackId;
        request: RequestId
    }
    /// The block of native allocation `id` was freed (by `free`, or by a
    /// `realloc` that moved or resized it); process-wide (timeline 0).
    NativeFree = 47, "native_free" { id: u64, address: u64 }
    /// A thread waited `duration_ns` to acquire the native lock at `address`
    /// (agent option `nativelock`): `lock` is [`NATIVE_MUTEX`],
    /// [`NATIVE_RWLOCK_READ`] or [`NATIVE_RWLOCK_WRITE`]; `weight` is the
    /// blocked time, in ns, the sample stands for.
    NativeLock = 50, "native_lock" {
        duration_ns: u64, weight: u64, address: u64, lock: u64, stack: StackId;
        request: RequestId
    }
}

/// [`EventKind::NativeAlloc`]'s `call`: `malloc`.
pub const NATIVE_MALLOC: u64 = 1;
/// `calloc`.
pub const NATIVE_CALLOC: u64 = 2;
/// `realloc` (the new block; the old one's free is an event of its own).
pub const NATIVE_REALLOC: u64 = 3;
/// `posix_memalign`.
pub const NATIVE_POSIX_MEMALIGN: u64 = 4;
/// `aligned_alloc`.
pub const NATIVE_ALIGNED_ALLOC: u64 = 5;

/// The C function of an [`EventKind::NativeAlloc`]'s `call`.
pub fn native_call_name(call: u64) -> &'static str {
    match call {
        NATIVE_MALLOC => "malloc",
        NATIVE_CALLOC => "calloc",
        NATIVE_REALLOC => "realloc",
        NATIVE_POSIX_MEMALIGN => "posix_memalign",
        NATIVE_ALIGNED_ALLOC => "aligned_alloc",
        _ => "unknown",
    }
}

/// [`EventKind::NativeLock`]'s `lock`: `pthread_mutex_lock`.
pub const NATIVE_MUTEX: u64 = 1;
/// `pthread_rwlock_rdlock`.
pub const NATIVE_RWLOCK_READ: u64 = 2;
/// `pthread_rwlock_wrlock`.
pub const NATIVE_RWLOCK_WRITE: u64 = 3;

/// The C function of an [`EventKind::NativeLock`]'s `lock`.
pub fn native_lock_name(lock: u64) -> &'static str {
    match lock {
        NATIVE_MUTEX => "pthread_mutex_lock",
        NATIVE_RWLOCK_READ => "pthread_rwlock_rdlock",
        NATIVE_RWLOCK_WRITE => "pthread_rwlock_wrlock",
        _ => "unknown",
    }
}

/// The bytes an allocation sample of `size` bytes stands for when the JVM samples
/// about every `interval` bytes (JVMTI `SetHeapSamplingInterval`: HotSpot draws
/// the distance to the next sample from an exponential distribution of mean
/// `interval`, so an object of `size` bytes is sampled with probability
/// `1 - exp(-size/interval)`, and weighting each sample by the inverse of that
/// probability makes the sum of the weights an unbiased estimate of the bytes
/// allocated). About `interval + size/2` for small objects, `size` for objects
/// much larger than the interval, `size` when every allocation is sampled.
pub fn alloc_sample_weight(size: u64, interval: u64) -> u64 {
    if interval == 0 || size == 0 {
        return size;
    }
    let x = size as f64 / interval as f64;
    // -expm1(-x) = 1 - exp(-x), exact for small x.
    let p = -(-x).exp_m1();
    (size as f64 / p).round() as u64
}

/// [`EventKind::Gc`]'s `generation`: a young (minor) collection.
pub const GC_YOUNG: u64 = 1;
/// An old-generation or mixed collection that is not a full one (G1's mixed, a
/// concurrent cycle).
pub const GC_OLD: u64 = 2;
/// A full collection (`end of major GC`).
pub const GC_FULL: u64 = 3;

pub(crate) mod tag {
    pub const USER_EVENT_DEF: u64 = 7;
}

impl EventKind {
    /// A GC pause with no details (JVMTI's start and finish only).
    pub const fn gc_pause(duration_ns: u64) -> EventKind {
        EventKind::Gc {
            duration_ns,
            collector: StringId(0),
            cause: StringId(0),
            generation: 0,
            heap_before: 0,
            heap_after: 0,
            gc_id: 0,
            concurrent: false,
        }
    }

    /// The table's entry for this kind.
    pub fn info(&self) -> &'static EventKindInfo {
        &EVENT_KINDS[self.index()]
    }

    /// This kind's position in [`EVENT_KINDS`] (whose tags ascend, with gaps
    /// where other records' tags are).
    pub fn index(&self) -> usize {
        let tag = self.tag();
        // Every kind is in the table (made from the same declaration).
        EVENT_KINDS.partition_point(|k| k.tag < tag)
    }

    /// The kind's short name (`monitor`, `gc`, ...).
    pub fn name(&self) -> &'static str {
        self.info().name
    }

    /// The request the event's thread was serving; none for kinds without one.
    pub fn request(&self) -> RequestId {
        match *self {
            EventKind::MonitorBlocked { request, .. }
            | EventKind::MonitorWait { request, .. }
            | EventKind::Park { request, .. }
            | EventKind::Alloc { request, .. }
            | EventKind::NativeAlloc { request, .. }
            | EventKind::NativeLock { request, .. } => request,
            _ => RequestId::NONE,
        }
    }
}

impl JvmEvent {
    /// An event on `thread`'s timeline.
    pub fn on(thread: ThreadId, ticks: u64, kind: EventKind) -> JvmEvent {
        JvmEvent {
            thread,
            ticks,
            kind,
        }
    }

    /// A process-wide event (timeline 0).
    pub fn global(ticks: u64, kind: EventKind) -> JvmEvent {
        JvmEvent::on(ThreadId::NONE, ticks, kind)
    }

    /// The field called `name` of the event's kind.
    pub fn field(&self, name: &str) -> Option<FieldValue> {
        self.kind.field(name)
    }

    /// The request its thread was serving ([`crate::Request::id`]), 0 for none.
    pub fn request(&self) -> u64 {
        self.kind.request().0
    }

    /// The event on `map`'s thread with its fields' ids mapped; the time is kept.
    pub fn remap(&self, map: &mut dyn IdMap) -> JvmEvent {
        JvmEvent::on(map.thread(self.thread), self.ticks, self.kind.remap(map))
    }
}

/// Encodes `e` as `thread:varint dt:svarint field:varint*`; returns its tag.
pub(crate) fn encode_event(out: &mut Vec<u8>, e: &JvmEvent, dt: i64) -> u64 {
    put_u64(out, e.thread.into());
    put_i64(out, dt);
    e.kind.encode_fields(out);
    e.kind.tag()
}

/// Whether `t` tags an event record.
pub(crate) fn is_event(t: u64) -> bool {
    EVENT_KINDS.binary_search_by_key(&t, |k| k.tag).is_ok()
}

/// Decodes an event record body; `absolute` turns (timeline, delta) into ticks.
pub(crate) fn decode_event(
    t: u64,
    c: &mut Cursor,
    absolute: &mut dyn FnMut(ThreadId, i64) -> u64,
) -> Result<JvmEvent, FormatError> {
    let thread = c.id()?;
    let ticks = absolute(thread, c.i64()?);
    let kind = EventKind::decode_fields(t, c)?
        .ok_or_else(|| FormatError::Malformed(format!("tag {t} is not an event")))?;
    Ok(JvmEvent::on(thread, ticks, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_ascend_so_a_kind_finds_its_entry() {
        for pair in EVENT_KINDS.windows(2) {
            assert!(
                pair[0].tag < pair[1].tag,
                "{} {}",
                pair[0].name,
                pair[1].name
            );
        }
        let lock = EventKind::NativeLock {
            duration_ns: 7,
            weight: 9,
            address: 0x1000,
            lock: NATIVE_MUTEX,
            stack: StackId(3),
            request: RequestId(4),
        };
        assert_eq!((lock.name(), lock.tag()), ("native_lock", 50));
        assert_eq!(
            lock.request(),
            RequestId(4),
            "native waits carry their request"
        );
        assert!(is_event(46) && is_event(47) && is_event(50));
        assert!(!is_event(48) && !is_event(49), "remote calls are no events");
        let gc = EventKind::gc_pause(5);
        assert_eq!(alloc_sample_weight(1024, 0), 1024);
        assert_eq!(alloc_sample_weight(24, 512 * 1024), 512 * 1024 + 12);
        assert_eq!(alloc_sample_weight(1 << 30, 1 << 19), 1 << 30);
        // 1 MB objects at a 512 KB interval: sampled with probability 1 - e^-2.
        assert_eq!(alloc_sample_weight(1 << 20, 1 << 19), 1_212_697);
        assert_eq!((gc.name(), gc.info().fields.len()), ("gc", 8));
        assert_eq!(gc.field("duration_ns"), Some(FieldValue::U64(5)));
        assert_eq!(gc.field("stack"), None);
    }
}
