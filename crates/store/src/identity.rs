//! Who a stored stream is: the JVM's identity (xdProf's header line), what its
//! command runs, and the wall-clock spans and dictionaries of its chunks.

use jscope_format::{FieldValue, Header, JvmEvent, Record, Recording, TraceBatch};
use serde::{Deserialize, Serialize};

/// What a java command line runs: the main class, `-jar`'s jar or `-m`'s module,
/// skipping the launcher and its options (`-cp X`, `-agentpath:...`, `-Xmx1g`);
/// empty when there is none. `words` are the command's arguments, the launcher first.
pub fn main_class<S: AsRef<str>>(words: &[S]) -> String {
    // Launcher options whose value is the next word.
    const WITH_VALUE: [&str; 13] = [
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--upgrade-module-path",
        "--add-modules",
        "--add-opens",
        "--add-exports",
        "--add-reads",
        "--patch-module",
        "--limit-modules",
        "--source",
    ];
    let mut words = words.iter().map(AsRef::as_ref);
    let first = words.next().unwrap_or("");
    let launcher = first.contains('/') || first.starts_with("java") || first.ends_with("java.exe");
    let mut rest: Vec<&str> = Vec::new();
    if !launcher {
        rest.push(first); // no launcher in front (HotSpot's sun.java.command)
    }
    rest.extend(words);
    let mut it = rest.into_iter();
    while let Some(w) = it.next() {
        match w {
            "-jar" | "-m" | "--module" => return it.next().unwrap_or("").to_string(),
            w if WITH_VALUE.contains(&w) => {
                it.next();
            }
            w if w.starts_with('-') => {}
            w => return w.to_string(),
        }
    }
    String::new()
}

/// [`main_class`] of a command line joined by spaces, as a recording's header has it.
pub fn main_class_of(command_line: &str) -> String {
    main_class(&command_line.split_whitespace().collect::<Vec<_>>())
}

/// A JVM as the collector knows it: its stream id and the identity from its header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JvmIdentity {
    /// The stream id the agent chose; names the JVM in the API and on disk.
    pub id: String,
    pub pid: u32,
    pub host: String,
    /// The agent's address as the collector saw it.
    pub address: String,
    pub command_line: String,
    /// `vm_name vm_version vm_vendor`.
    pub vm: String,
    pub java_version: String,
    /// `os arch`.
    pub os: String,
    pub agent_version: String,
    pub modes: String,
    pub interval_ns: u64,
    /// Unix epoch ns at `start_ticks`.
    pub start_wall_ns: u64,
    pub start_ticks: u64,
    pub ticks_per_second: u64,
    pub labels: Vec<(String, String)>,
    /// The service an agent's `service=` option or a pushed profile named
    /// (Pyroscope's app name, OTLP's `service.name`); empty when none did.
    #[serde(default)]
    pub service: String,
}

impl JvmIdentity {
    /// The service and labels come from the header (agent options `service=`,
    /// `labels=`) and the connection's labels, which win on a shared key.
    pub fn from_header(id: &str, h: &Header, address: &str, labels: &[(String, String)]) -> Self {
        let extra = |key: &str| {
            h.extra
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let mut all = labels.to_vec();
        for pair in extra("labels").unwrap_or("").split(';') {
            if let Some((k, v)) = pair.split_once(':') {
                let (k, v) = (k.trim(), v.trim());
                if !k.is_empty() && !all.iter().any(|(have, _)| have == k) {
                    all.push((k.to_string(), v.to_string()));
                }
            }
        }
        JvmIdentity {
            id: id.to_string(),
            pid: h.pid,
            host: h.host.clone(),
            address: address.to_string(),
            command_line: h.command_line.clone(),
            vm: join_present(&[&h.vm_name, &h.vm_version, &h.vm_vendor]),
            java_version: h.java_version.clone(),
            os: join_present(&[&h.os, &h.arch]),
            agent_version: h.agent_version.clone(),
            modes: h.modes.clone(),
            interval_ns: h.interval_ns,
            start_wall_ns: h.start_wall_ns,
            start_ticks: h.start_ticks,
            ticks_per_second: h.ticks_per_second,
            labels: all,
            service: extra("service").unwrap_or("").to_string(),
        }
    }

    /// Unix epoch nanoseconds of an agent clock reading.
    pub fn wall_ns(&self, ticks: u64) -> u64 {
        let rel = ticks.saturating_sub(self.start_ticks) as u128;
        let ns = match self.ticks_per_second {
            0 | 1_000_000_000 => rel,
            tps => rel * 1_000_000_000 / tps as u128,
        };
        self.start_wall_ns.saturating_add(ns as u64)
    }
}

fn join_present(parts: &[&str]) -> String {
    let present: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    present.join(" ")
}

/// The samples and snapshots of a chunk's records, as wall-clock span (first, last)
/// in epoch ns (what the stack summaries bucket by).
pub fn event_span(jvm: &JvmIdentity, records: &[Record]) -> Option<(u64, u64)> {
    let ticks = records.iter().filter_map(|r| match r {
        Record::Sample(s) => Some(s.ticks),
        Record::Snapshot(s) => Some(s.ticks),
        _ => None,
    });
    let (lo, hi) = ticks.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    (lo <= hi).then(|| (jvm.wall_ns(lo), jvm.wall_ns(hi)))
}

/// The wall-clock span (epoch ns) of every timed record of a chunk: samples,
/// snapshots, trace events, call aggregates, remote calls and JVM events (with their
/// durations). The store files chunks under it, so a JVM that only traces is found
/// by time as well as one that samples.
pub fn timed_span(jvm: &JvmIdentity, records: &[Record]) -> Option<(u64, u64)> {
    span_of_times(jvm, records.iter().filter_map(record_ticks))
}

/// The wall-clock span of (first ticks, last ticks, ns lasted after the last) times.
pub fn span_of_times(
    jvm: &JvmIdentity,
    times: impl Iterator<Item = (u64, u64, u64)>,
) -> Option<(u64, u64)> {
    let mut span: Option<(u64, u64)> = None;
    for (first, last, lasted_ns) in times {
        let (lo, hi) = (
            jvm.wall_ns(first),
            jvm.wall_ns(last).saturating_add(lasted_ns),
        );
        span = Some(span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
    }
    span
}

/// The first and last ticks a record covers and how long it lasted after the last.
fn record_ticks(r: &Record) -> Option<(u64, u64, u64)> {
    match r {
        Record::Sample(s) => Some((s.ticks, s.ticks, 0)),
        Record::Snapshot(s) => Some((s.ticks, s.ticks, 0)),
        Record::Trace(b) => batch_ticks(b),
        Record::CallAggregate(a) => Some((a.ticks, a.ticks, 0)),
        Record::Remote(c) => Some((c.ticks, c.ticks, c.duration_ns)),
        Record::Event(e) => Some(event_ticks(e)),
        _ => None,
    }
}

pub fn batch_ticks(b: &TraceBatch) -> Option<(u64, u64, u64)> {
    let ticks = b.events.iter().map(|e| e.ticks);
    Some((ticks.clone().min()?, ticks.max()?, 0))
}

pub fn event_ticks(e: &JvmEvent) -> (u64, u64, u64) {
    (e.ticks, e.ticks, event_duration_ns(e))
}

fn event_duration_ns(e: &JvmEvent) -> u64 {
    e.field("duration_ns").map_or(0, FieldValue::as_u64)
}

/// Adds a chunk's dictionary entries, counters and end to `dict`; events are left out
/// so that the dictionary stays small however long the JVM runs.
///
/// A transient string is not kept: it names records of its own chunk only,
/// and a prelude declaring it again would grow with every request served.
pub fn apply_dictionary(dict: &mut Recording, records: &[Record]) {
    for r in records {
        match r {
            Record::String { .. }
            | Record::Class(_)
            | Record::Method(_)
            | Record::Thread(_)
            | Record::Stack { .. }
            | Record::UserEventDef(_)
            | Record::Counters { .. }
            | Record::End { .. } => dict.apply(r.clone()),
            _ => {}
        }
    }
}

/// An empty dictionary for a JVM with this header.
pub fn new_dictionary(header: &Header) -> Recording {
    Recording {
        header: header.clone(),
        strings: vec![String::new()],
        ..Recording::default()
    }
}

#[cfg(test)]
mod main_class_tests {
    use super::*;

    #[test]
    fn a_chunks_transient_strings_stay_out_of_the_dictionary() {
        use jscope_format::StringId;
        let mut dict = new_dictionary(&Header::default());
        let records = [
            Record::String {
                id: StringId(1),
                value: "GET".into(),
            },
            Record::TransientString {
                id: StringId(2),
                value: "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01".into(),
            },
        ];
        apply_dictionary(&mut dict, &records);
        assert_eq!(dict.strings, ["", "GET"]);
    }

    #[test]
    fn the_main_class_follows_the_launcher_options() {
        let m = main_class_of;
        assert_eq!(
            m("java -agentpath:/long/path/libjscope_agent.so=mode=cpu,file=/tmp/a.jsc -cp /x/classes com.acme.Main arg"),
            "com.acme.Main"
        );
        assert_eq!(m("/usr/bin/java -Xmx1g -jar app.jar serve"), "app.jar");
        assert_eq!(
            m("java --module-path mods -m app/com.acme.Main"),
            "app/com.acme.Main"
        );
        assert_eq!(m("-cp x Main"), "Main");
        assert_eq!(m("com.acme.Shop --port 8080"), "com.acme.Shop");
        assert_eq!(m("java -version"), "");
        assert_eq!(m(""), "");
    }
}
