//! The collector's own metrics, `GET /metrics` in the Prometheus text exposition
//! format (version 0.0.4): ingest counters, refusals by reason, the store's write
//! latency as a histogram, store errors, bytes waiting to be made durable, HTTP
//! requests by route and status, and per JVM the collector's view (connected,
//! chunks, samples, lost chunks) and the agent's own health from the counters it
//! sends in every chunk (samples written and dropped, failed stack walks by reason,
//! bytes held for the collector).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

pub use crate::histogram::Histogram;
use crate::ingest::IngestStats;
use crate::live::LiveState;

/// HTTP requests answered, by route and status.
#[derive(Debug, Default)]
pub struct HttpCounts(Mutex<BTreeMap<(String, u16), u64>>);

impl HttpCounts {
    pub fn count(&self, path: &str, status: u16) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((route_of(path), status)).or_default() += 1;
    }

    fn all(&self) -> Vec<((String, u16), u64)> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// A request's route for its label: the API's resource (`/api/jvms` for
/// `/api/jvms/ID/recording` too), a push endpoint, `/metrics`, else `ui` (the page and
/// its assets) — never the raw path, whose ids would make a series per JVM.
pub fn route_of(path: &str) -> String {
    let path = path.split('?').next().unwrap_or("");
    if let Some(rest) = path.strip_prefix("/api/") {
        let first = rest.split('/').next().unwrap_or("");
        let known = !first.is_empty()
            && first.len() <= 32
            && first
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-');
        return if known {
            format!("/api/{first}")
        } else {
            "/api/other".into()
        };
    }
    match path.trim_end_matches('/') {
        p @ ("/metrics" | "/ingest" | "/v1development/profiles") => p.to_string(),
        _ => "ui".into(),
    }
}

fn head(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn one(out: &mut String, name: &str, help: &str, kind: &str, value: u64) {
    head(out, name, help, kind);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value with `\`, `"` and newlines escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Everything `/metrics` shows, read at the time of the request.
pub(crate) struct Sources<'a> {
    pub ingest: &'a IngestStats,
    pub live: &'a LiveState,
    pub http: &'a HttpCounts,
}

/// The agent counters shown per JVM: (counter, metric, help, type).
const AGENT_COUNTERS: [(&str, &str, &str, &str); 5] = [
    (
        "samples.written",
        "jscope_agent_samples_written_total",
        "Samples the agent wrote (its own counter).",
        "counter",
    ),
    (
        "samples.dropped",
        "jscope_agent_samples_dropped_total",
        "Samples the agent dropped (a full buffer).",
        "counter",
    ),
    (
        "walk.ok",
        "jscope_agent_walks_ok_total",
        "Stack walks that succeeded.",
        "counter",
    ),
    (
        "collector.chunks_dropped",
        "jscope_agent_chunks_dropped_total",
        "Chunks the agent dropped instead of sending (collector away too long).",
        "counter",
    ),
    (
        "collector.buffered_bytes",
        "jscope_agent_buffered_bytes",
        "Bytes the agent holds until the collector acknowledges them.",
        "gauge",
    ),
];

pub(crate) fn render(src: &Sources) -> String {
    let mut out = String::new();
    let s = src.ingest.snapshot();
    one(
        &mut out,
        "jscope_agents_connected",
        "Agent connections open now.",
        "gauge",
        s.connections_active as u64,
    );
    one(
        &mut out,
        "jscope_connections_accepted_total",
        "Agent connections accepted.",
        "counter",
        s.connections_accepted,
    );
    one(
        &mut out,
        "jscope_connections_dropped_total",
        "Agent connections that ended without a clean goodbye.",
        "counter",
        s.connections_dropped,
    );
    head(
        &mut out,
        "jscope_connections_refused_total",
        "Agent connections refused, by reason.",
        "counter",
    );
    for (reason, n) in src.ingest.refusals() {
        let _ = writeln!(
            out,
            "jscope_connections_refused_total{{reason=\"{}\"}} {n}",
            label(reason)
        );
    }
    for (name, help, value) in [
        (
            "jscope_chunks_received_total",
            "Chunks received from agents and passed to the store (duplicates not counted).",
            s.chunks,
        ),
        (
            "jscope_duplicate_chunks_total",
            "Chunks received again after a reconnection and ignored.",
            s.duplicate_chunks,
        ),
        (
            "jscope_samples_received_total",
            "Stack samples (snapshot threads included) in the chunks received.",
            s.samples,
        ),
        (
            "jscope_bytes_received_total",
            "Bytes of the chunks received.",
            s.bytes,
        ),
        (
            "jscope_store_errors_total",
            "Store writes that failed.",
            src.ingest.store_errors.load(Ordering::Relaxed),
        ),
    ] {
        one(&mut out, name, help, "counter", value);
    }
    src.ingest.store_write.write(
        &mut out,
        "jscope_store_write_seconds",
        "Time to make a batch of received chunks durable before acknowledging it.",
    );
    one(
        &mut out,
        "jscope_queued_bytes",
        "Bytes received and handed to the store, not yet durable and acknowledged.",
        "gauge",
        src.ingest.queued_bytes.load(Ordering::Relaxed),
    );
    head(
        &mut out,
        "jscope_http_requests_total",
        "HTTP requests answered, by route and status.",
        "counter",
    );
    for ((route, status), n) in src.http.all() {
        let _ = writeln!(
            out,
            "jscope_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}",
            label(&route)
        );
    }
    per_jvm(&mut out, src.live);
    out
}

fn per_jvm(out: &mut String, live: &LiveState) {
    let jvms: Vec<_> = live
        .figures()
        .into_iter()
        .map(|f| {
            let labels = format!(
                "jvm=\"{}\",service=\"{}\"",
                label(&f.identity.id),
                label(&f.identity.service)
            );
            let counters = live.counters_of(&f.identity.id).unwrap_or_default();
            (labels, f, counters)
        })
        .collect();
    type Pick = fn(&crate::live::LiveFigures) -> u64;
    let collector: [(&str, &str, &str, Pick); 4] = [
        (
            "jscope_jvm_connected",
            "1 while the JVM's agent is connected.",
            "gauge",
            |f| u64::from(f.connected),
        ),
        (
            "jscope_jvm_chunks_received_total",
            "Chunks received from the JVM since the collector started.",
            "counter",
            |f| f.chunks,
        ),
        (
            "jscope_jvm_samples_received_total",
            "Stack samples received from the JVM since the collector started.",
            "counter",
            |f| f.samples,
        ),
        (
            "jscope_jvm_chunks_lost_total",
            "Chunks the JVM's agent never delivered (gaps in its sequence).",
            "counter",
            |f| f.lost_chunks,
        ),
    ];
    for (name, help, kind, pick) in collector {
        head(out, name, help, kind);
        for (labels, f, _) in &jvms {
            let _ = writeln!(out, "{name}{{{labels}}} {}", pick(f));
        }
    }
    for (counter, name, help, kind) in AGENT_COUNTERS {
        head(out, name, help, kind);
        for (labels, _, counters) in &jvms {
            if let Some(v) = counters.get(counter) {
                let _ = writeln!(out, "{name}{{{labels}}} {v}");
            }
        }
    }
    let name = "jscope_agent_walks_failed_total";
    head(
        out,
        name,
        "Stack walks that failed, by reason (the agent's walk.failed.* counters).",
        "counter",
    );
    for (labels, _, counters) in &jvms {
        for (counter, v) in counters {
            if let Some(reason) = counter.strip_prefix("walk.failed.") {
                let _ = writeln!(out, "{name}{{{labels},reason=\"{}\"}} {v}", label(reason));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_never_carry_ids() {
        assert_eq!(route_of("/api/jvms"), "/api/jvms");
        assert_eq!(route_of("/api/jvms/vm-1-2/recording"), "/api/jvms");
        assert_eq!(route_of("/api/Weird%20"), "/api/other");
        assert_eq!(route_of("/metrics"), "/metrics");
        assert_eq!(route_of("/"), "ui");
        assert_eq!(route_of("/app.js"), "ui");
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
