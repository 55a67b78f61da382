//! One flat row per event (JPMT's command-line analyzer), written as text columns for
//! gnuplot and scripts, CSV, or JSON.

use std::collections::HashMap;
use std::io::{self, Write};

use jscope_format::{
    native_call_name, native_lock_name, ClassId, EventKind, FieldValue, JvmEvent, Recording,
    StackId, ThreadId, UserEventKind,
};
use serde::Serialize;

use super::{class_name, frames_of, site_of, thread_name, AllocWeights, EventType};
use crate::labels::method_label;

/// One event. `duration_ns` and `value` depend on the type (docs/EVENTS.md):
/// monitor: blocked time and owner thread; wait: waited time and timeout in ms;
/// park: parked time and timeout in ns; alloc: size; free: age in ns and in bytes
/// allocated since; native_alloc: size (subject: the allocating function);
/// native_lock: time waited (subject: the lock function and address); compiled: code size; thread_start: parent thread; start_call: the started
/// thread's Java id; user: the
/// logged value, and on `end` the time since its `begin`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRow {
    pub time_s: f64,
    pub ns: u64,
    #[serde(rename = "type")]
    pub kind: EventType,
    pub thread: u32,
    pub thread_name: String,
    pub duration_ns: u64,
    pub value: i64,
    /// The class (monitor, wait, park blocker, alloc, free, class events), method
    /// (JIT), user event name, or thread name (thread events).
    pub subject: String,
    /// Top frame of the event's stack, `pkg.Class.method:line`.
    pub site: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<bool>,
    /// User events: instant, begin or end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_kind: Option<&'static str>,
    /// Allocation samples: the bytes the sample stands for (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
}

/// What an allocation sample knew about a tracked object, to age it when freed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Born {
    pub ticks: u64,
    pub allocated_total: u64,
    pub class: ClassId,
    pub stack: StackId,
}

/// Tracked objects by id, from the allocation samples.
pub(crate) struct Ages(pub HashMap<u64, Born>);

impl Ages {
    pub fn of(rec: &Recording) -> Ages {
        let mut born = HashMap::new();
        for e in &rec.events {
            if let EventKind::Alloc {
                class,
                stack,
                object,
                allocated_total,
                ..
            } = e.kind
            {
                if object != 0 {
                    let b = Born {
                        ticks: e.ticks,
                        allocated_total,
                        class,
                        stack,
                    };
                    born.insert(object, b);
                }
            }
        }
        Ages(born)
    }
}

/// Open `begin`s of user events per (thread, event), so an `end` gets its duration.
#[derive(Default)]
pub(crate) struct UserPairs(HashMap<(ThreadId, u32), Vec<u64>>);

impl UserPairs {
    /// Ticks of the matching begin when `kind` is an end.
    pub fn step(
        &mut self,
        thread: ThreadId,
        event: u32,
        kind: UserEventKind,
        ticks: u64,
    ) -> Option<u64> {
        let open = self.0.entry((thread, event)).or_default();
        match kind {
            UserEventKind::Begin => {
                open.push(ticks);
                None
            }
            UserEventKind::End => open.pop(),
            UserEventKind::Instant => None,
        }
    }
}

pub(crate) fn user_event_name(rec: &Recording, event: u32) -> String {
    rec.user_events
        .get(event as usize)
        .and_then(Option::as_ref)
        .map_or_else(|| format!("#{event}"), |d| rec.string(d.name).to_string())
}

fn user_kind_name(k: UserEventKind) -> &'static str {
    match k {
        UserEventKind::Instant => "instant",
        UserEventKind::Begin => "begin",
        UserEventKind::End => "end",
    }
}

/// The event-table fields a row shows as its `value`; each kind has at most one.
const VALUE_FIELDS: [&str; 8] = [
    "parent",
    "owner",
    "timeout_ms",
    "timeout_ns",
    "size",
    "code_size",
    "value",
    "started",
];

/// The fields of a row that depend on the event's kind.
#[derive(Default)]
struct Fields {
    duration_ns: u64,
    value: i64,
    subject: String,
    stack: StackId,
    timed_out: Option<bool>,
    user_kind: Option<&'static str>,
}

/// Read from the event's fields by their names in the format's event table; frees
/// and user events are aged and paired against earlier events.
fn fields(rec: &Recording, e: &JvmEvent, ages: &Ages, user: &mut UserPairs) -> Fields {
    match e.kind {
        EventKind::ObjectFree {
            object,
            allocated_total,
        } => return freed(rec, e.ticks, ages.0.get(&object), allocated_total),
        EventKind::User { event, kind, value } => {
            let begun = user.step(e.thread, event, kind, e.ticks);
            return Fields {
                duration_ns: begun.map_or(0, |b| gap(rec, e.ticks, b)),
                value,
                subject: user_event_name(rec, event),
                user_kind: Some(user_kind_name(kind)),
                ..Fields::default()
            };
        }
        _ => {}
    }
    Fields {
        duration_ns: e.field("duration_ns").map_or(0, FieldValue::as_u64),
        value: VALUE_FIELDS
            .iter()
            .find_map(|name| e.field(name))
            .map_or(0, FieldValue::as_i64),
        subject: subject(rec, e),
        stack: super::stack_of(e),
        timed_out: e.field("timed_out").map(|v| v.as_u64() != 0),
        user_kind: None,
    }
}

/// The class (a park without a blocker has none), the method, or for thread
/// events the thread.
fn subject(rec: &Recording, e: &JvmEvent) -> String {
    match e.kind {
        EventKind::ThreadStartCall { started, .. } => {
            // The started thread, by its Java id.
            return rec
                .threads
                .values()
                .find(|t| t.java_id == started)
                .map_or_else(String::new, |t| t.name.clone());
        }
        EventKind::NativeAlloc { call, .. } => return native_call_name(call).to_string(),
        EventKind::NativeFree { address, .. } => return format!("{address:#x}"),
        EventKind::NativeLock { lock, address, .. } => {
            return format!("{} {address:#x}", native_lock_name(lock))
        }
        _ => {}
    }
    match (
        e.field("class"),
        e.field("blocker_class"),
        e.field("method"),
    ) {
        (Some(FieldValue::Class(c)), _, _) => class_name(rec, c),
        (_, Some(FieldValue::Class(c)), _) if !c.is_none() => class_name(rec, c),
        (_, _, Some(FieldValue::Method(m))) => method_label(rec, m),
        _ if matches!(
            e.kind,
            EventKind::ThreadStart { .. } | EventKind::ThreadEnd { .. }
        ) =>
        {
            thread_name(rec, e.thread)
        }
        _ => String::new(),
    }
}

/// A free: its age in time and in bytes allocated since, its allocation's class and
/// stack, when the allocation was seen.
fn freed(rec: &Recording, ticks: u64, born: Option<&Born>, allocated_total: u64) -> Fields {
    let Some(b) = born else {
        return Fields {
            subject: "[unknown]".to_string(),
            ..Fields::default()
        };
    };
    Fields {
        duration_ns: gap(rec, ticks, b.ticks),
        value: allocated_total.saturating_sub(b.allocated_total) as i64,
        subject: class_name(rec, b.class),
        stack: b.stack,
        ..Fields::default()
    }
}

/// Nanoseconds from `from` to `to`, 0 when `to` is earlier.
fn gap(rec: &Recording, to: u64, from: u64) -> u64 {
    rec.ticks_to_ns(to).saturating_sub(rec.ticks_to_ns(from))
}

impl EventRow {
    pub(crate) fn of(
        rec: &Recording,
        e: &JvmEvent,
        ages: &Ages,
        weights: AllocWeights,
        user: &mut UserPairs,
    ) -> EventRow {
        let f = fields(rec, e, ages, user);
        let ns = rec.ticks_to_ns(e.ticks);
        EventRow {
            time_s: ns as f64 / 1e9,
            ns,
            kind: EventType::of(e),
            thread: e.thread.0,
            thread_name: thread_name(rec, e.thread),
            duration_ns: f.duration_ns,
            value: f.value,
            subject: f.subject,
            site: if f.stack.is_none() {
                String::new()
            } else {
                site_of(rec, f.stack)
            },
            stack: frames_of(rec, f.stack),
            timed_out: f.timed_out,
            user_kind: f.user_kind,
            weight: weights.weight(e).or(match e.kind {
                EventKind::NativeAlloc { weight, .. } | EventKind::NativeLock { weight, .. } => {
                    Some(weight)
                }
                _ => None,
            }),
        }
    }
}

/// How `write_rows` lays events out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RowFormat {
    /// Space-separated columns, numbers first, a `#` header line (gnuplot skips it);
    /// strings with spaces are double-quoted, empty ones are `-`.
    #[default]
    Text,
    /// RFC 4180 CSV with a header line.
    Csv,
}

const COLUMNS: [&str; 8] = [
    "time_s",
    "thread",
    "duration_ns",
    "value",
    "type",
    "thread_name",
    "subject",
    "site",
];

/// Writes one line per event (JSON is the rows' serde form).
pub fn write_rows(rows: &[EventRow], format: RowFormat, out: &mut dyn Write) -> io::Result<()> {
    match format {
        RowFormat::Text => {
            writeln!(out, "# {}", COLUMNS.join(" "))?;
            for r in rows {
                let s = [&r.thread_name, &r.subject, &r.site].map(|v| text_field(v));
                writeln!(
                    out,
                    "{:.9} {} {} {} {} {} {} {}",
                    r.time_s, r.thread, r.duration_ns, r.value, r.kind, s[0], s[1], s[2]
                )?;
            }
        }
        RowFormat::Csv => {
            writeln!(out, "{}", COLUMNS.join(","))?;
            for r in rows {
                let s = [&r.thread_name, &r.subject, &r.site].map(|v| csv_field(v));
                writeln!(
                    out,
                    "{:.9},{},{},{},{},{},{},{}",
                    r.time_s, r.thread, r.duration_ns, r.value, r.kind, s[0], s[1], s[2]
                )?;
            }
        }
    }
    Ok(())
}

fn text_field(v: &str) -> String {
    if v.is_empty() {
        "-".to_string()
    } else if v.contains(|c: char| c.is_whitespace() || c == '"') {
        format!("\"{}\"", v.replace('"', "'"))
    } else {
        v.to_string()
    }
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod table_tests {
    use jscope_format::EVENT_KINDS;

    use super::VALUE_FIELDS;
    use crate::events::EventType;

    #[test]
    fn every_event_kind_is_a_type_and_row_fields_are_named_in_the_table() {
        for k in EVENT_KINDS {
            assert!(
                EventType::ALL.iter().any(|t| t.name() == k.name),
                "{} has no EventType",
                k.name
            );
            let values = k.fields.iter().filter(|f| VALUE_FIELDS.contains(&f.name));
            assert!(values.count() <= 1, "{} has two value fields", k.name);
        }
        let named = |n: &str| {
            EVENT_KINDS
                .iter()
                .any(|k| k.fields.iter().any(|f| f.name == n))
        };
        for n in VALUE_FIELDS
            .iter()
            .chain(&["duration_ns", "stack", "timed_out", "class"])
        {
            assert!(named(n), "no event kind has a field {n}");
        }
        assert!(named("blocker_class") && named("method"));
    }
}
