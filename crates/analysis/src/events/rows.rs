//! One flat row per event (JPMT's command-line analyzer), written as text columns for
//! gnuplot and scripts, CSV, or JSON.

use std::collections::HashMap;
use std::io::{self, Write};

use jscope_format::{JvmEvent, Recording, UserEventKind};
use serde::Serialize;

use super::{class_name, frames_of, site_of, thread_name, EventType};
use crate::labels::method_label;

/// One event. `duration_ns` and `value` depend on the type (docs/EVENTS.md):
/// monitor: blocked time and owner thread; wait: waited time and timeout in ms;
/// park: parked time and timeout in ns; alloc: size; free: age in ns and in bytes
/// allocated since; compiled: code size; thread_start: parent thread; user: the
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
}

/// What an allocation sample knew about a tracked object, to age it when freed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Born {
    pub ticks: u64,
    pub allocated_total: u64,
    pub class: u32,
    pub stack: u32,
}

/// Tracked objects by id, from the allocation samples.
pub(crate) struct Ages(pub HashMap<u64, Born>);

impl Ages {
    pub fn of(rec: &Recording) -> Ages {
        let mut born = HashMap::new();
        for e in &rec.events {
            if let JvmEvent::Alloc {
                ticks,
                class,
                stack,
                object,
                allocated_total,
                ..
            } = *e
            {
                if object != 0 {
                    let b = Born {
                        ticks,
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
pub(crate) struct UserPairs(HashMap<(u32, u32), Vec<u64>>);

impl UserPairs {
    /// Ticks of the matching begin when `kind` is an end.
    pub fn step(
        &mut self,
        thread: u32,
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

/// The type-dependent fields: duration, value, subject, stack, timed_out, user kind.
type Fields = (u64, i64, String, u32, Option<bool>, Option<&'static str>);

fn fields(rec: &Recording, e: &JvmEvent, ages: &Ages, user: &mut UserPairs) -> Fields {
    use JvmEvent::*;
    let gap = |a: u64, b: u64| rec.ticks_to_ns(a).saturating_sub(rec.ticks_to_ns(b));
    match *e {
        ThreadStart { thread, parent, .. } => {
            (0, parent.into(), thread_name(rec, thread), 0, None, None)
        }
        ThreadEnd { thread, .. } => (0, 0, thread_name(rec, thread), 0, None, None),
        MonitorBlocked {
            duration_ns,
            class,
            owner,
            stack,
            ..
        } => (
            duration_ns,
            owner.into(),
            class_name(rec, class),
            stack,
            None,
            None,
        ),
        MonitorWait {
            duration_ns,
            class,
            timeout_ms,
            timed_out,
            stack,
            ..
        } => (
            duration_ns,
            timeout_ms as i64,
            class_name(rec, class),
            stack,
            Some(timed_out),
            None,
        ),
        Park {
            duration_ns,
            blocker_class,
            timeout_ns,
            stack,
            ..
        } => {
            let blocker = if blocker_class == 0 {
                String::new()
            } else {
                class_name(rec, blocker_class)
            };
            (duration_ns, timeout_ns as i64, blocker, stack, None, None)
        }
        Gc { duration_ns, .. } => (duration_ns, 0, String::new(), 0, None, None),
        Alloc {
            class, size, stack, ..
        } => (0, size as i64, class_name(rec, class), stack, None, None),
        ObjectFree {
            ticks,
            object,
            allocated_total,
        } => match ages.0.get(&object) {
            Some(b) => {
                let bytes = allocated_total.saturating_sub(b.allocated_total) as i64;
                (
                    gap(ticks, b.ticks),
                    bytes,
                    class_name(rec, b.class),
                    b.stack,
                    None,
                    None,
                )
            }
            None => (0, 0, "[unknown]".to_string(), 0, None, None),
        },
        ClassLoad { class, .. } | ClassUnload { class, .. } => {
            (0, 0, class_name(rec, class), 0, None, None)
        }
        Compiled {
            method, code_size, ..
        } => (
            0,
            code_size as i64,
            method_label(rec, method),
            0,
            None,
            None,
        ),
        CompiledUnload { method, .. } => (0, 0, method_label(rec, method), 0, None, None),
        User {
            thread,
            ticks,
            event,
            kind,
            value,
        } => {
            let begun = user.step(thread, event, kind, ticks);
            let d = begun.map_or(0, |b| gap(ticks, b));
            (
                d,
                value,
                user_event_name(rec, event),
                0,
                None,
                Some(user_kind_name(kind)),
            )
        }
    }
}

impl EventRow {
    pub(crate) fn of(rec: &Recording, e: &JvmEvent, ages: &Ages, user: &mut UserPairs) -> EventRow {
        let (duration_ns, value, subject, stack, timed_out, user_kind) = fields(rec, e, ages, user);
        let ns = rec.ticks_to_ns(e.ticks());
        let thread = e.timeline();
        EventRow {
            time_s: ns as f64 / 1e9,
            ns,
            kind: EventType::of(e),
            thread,
            thread_name: thread_name(rec, thread),
            duration_ns,
            value,
            subject,
            site: if stack == 0 {
                String::new()
            } else {
                site_of(rec, stack)
            },
            stack: frames_of(rec, stack),
            timed_out,
            user_kind,
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
