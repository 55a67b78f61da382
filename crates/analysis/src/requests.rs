//! Requests as the unit: which samples belong to slow requests (`--latency`) or
//! to one request (`--request`), and the list of requests, slowest first.
//!
//! A sample names the innermost request its thread served ([`Sample::request`]);
//! it belongs to every request around that one too (a span inside a servlet
//! request is part of the request). Requests of several JVMs that share a W3C
//! trace id are one request: `--request TRACE_ID` keeps the samples of all of
//! them, and the list shows them as one row.

use std::collections::{HashMap, HashSet};

use jscope_format::{Recording, Request, Sample, SampleMode};
use serde::{Deserialize, Serialize};

/// Which requests' samples to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFilter {
    /// Requests (spans, traced entry calls) that lasted at least this long.
    pub min_latency_ns: Option<u64>,
    /// One request: its trace id (32 hex digits) or its id in the recording;
    /// several separated by commas.
    pub request: Option<String>,
}

impl RequestFilter {
    pub fn is_empty(&self) -> bool {
        self.min_latency_ns.is_none() && self.request.is_none()
    }

    /// The ids of the requests whose samples are kept: those that pass the
    /// filter and every request nested in one that does. None: no filter.
    pub fn allowed(&self, rec: &Recording) -> Option<HashSet<u64>> {
        if self.is_empty() {
            return None;
        }
        let by_id: HashMap<u64, &Request> = rec.requests.iter().map(|r| (r.id, r)).collect();
        let passes = |r: &Request| {
            self.min_latency_ns.is_none_or(|min| r.duration_ns >= min)
                && self.request.as_deref().is_none_or(|want| names(r, want))
        };
        let allowed = rec
            .requests
            .iter()
            .filter(|r| {
                // The request or one it is nested in (parents end after children).
                let mut at = Some(*r);
                let mut hops = 0;
                while let Some(x) = at {
                    if passes(x) {
                        return true;
                    }
                    hops += 1;
                    at = by_id.get(&x.parent).copied().filter(|_| hops < 64);
                }
                false
            })
            .map(|r| r.id)
            .collect();
        Some(allowed)
    }
}

/// Whether `want` names request `r`: its trace id, or its id (one of several
/// separated by commas).
fn names(r: &Request, want: &str) -> bool {
    let trace = r.trace_id_hex();
    want.split(',').any(|want| {
        let want = want.trim().to_ascii_lowercase();
        (!want.is_empty() && trace == want) || want.parse::<u64>().is_ok_and(|n| n == r.id)
    })
}

/// One row of `jscope requests`: a request across the JVMs it touched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRow {
    /// What `--request` takes: the trace id, or the id in the recording.
    pub id: String,
    pub trace_id: String,
    /// The entry: the outermost request's name (`GET /path`, a span's name).
    pub entry: String,
    pub kind: String,
    /// JVMs (by pid) whose threads served part of it, the entry's first.
    pub jvms: Vec<u32>,
    /// When the entry began: epoch ns (its JVM's clock).
    pub start_ns: u64,
    /// The outermost request's duration.
    pub duration_ns: u64,
    /// CPU time of its cpu samples (their weights), in every JVM.
    pub cpu_ns: u64,
    /// Samples of every mode taken while it was served.
    pub samples: u64,
    /// Requests (server calls, spans) that make it up.
    pub parts: usize,
    pub failed: bool,
    /// The requests that make it up, in the order read, each with the calls it
    /// made and the part it was called from.
    pub tree: Vec<RequestPart>,
}

/// One JVM's part of a request: a served call or a span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPart {
    /// The JVM's pid.
    pub jvm: u32,
    /// Its id in that JVM's recording (what `--request` takes there).
    pub request: u64,
    pub kind: String,
    pub name: String,
    pub thread: String,
    /// W3C span id (16 hex digits), and the caller's ("" for none).
    pub span_id: String,
    pub parent_span_id: String,
    pub duration_ns: u64,
    /// HTTP calls its thread made while serving it (innermost request only).
    pub calls: Vec<OutgoingCall>,
    /// The index in `tree` of the part it was called from (by its caller's
    /// span id: an outgoing call's, or an enclosing span's), None for the entry.
    pub parent: Option<usize>,
}

/// A client call made inside a request: its method, path, and the span id of
/// the traceparent it carried (what the server it reached names as parent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutgoingCall {
    pub method: String,
    pub path: String,
    pub span_id: String,
    pub duration_ns: u64,
}

/// The requests of one JVM's recording: (its pid, the recording).
pub type JvmRecording<'a> = (u32, &'a Recording);

/// Requests of `jvms`, slowest first: those sharing a trace id are one row.
pub fn request_rows(jvms: &[JvmRecording<'_>]) -> Vec<RequestRow> {
    let mut rows: Vec<RequestRow> = Vec::new();
    let mut by_trace: HashMap<String, usize> = HashMap::new();
    for (pid, rec) in jvms {
        let counts = sample_counts(rec);
        let mut calls = outgoing_calls(rec);
        let span_ids: HashSet<u64> = rec.requests.iter().map(|r| r.span_id).collect();
        for r in &rec.requests {
            let (samples, cpu_ns) = counts.get(&r.id).copied().unwrap_or_default();
            let trace = r.trace_id_hex();
            let outermost = r.parent == 0;
            let at = match by_trace.get(&trace) {
                Some(&i) if !trace.is_empty() => i,
                _ => {
                    rows.push(RequestRow {
                        id: if trace.is_empty() {
                            r.id.to_string()
                        } else {
                            trace.clone()
                        },
                        trace_id: trace.clone(),
                        entry: String::new(),
                        kind: String::new(),
                        jvms: Vec::new(),
                        start_ns: 0,
                        duration_ns: 0,
                        cpu_ns: 0,
                        samples: 0,
                        parts: 0,
                        failed: false,
                        tree: Vec::new(),
                    });
                    if !trace.is_empty() {
                        by_trace.insert(trace.clone(), rows.len() - 1);
                    }
                    rows.len() - 1
                }
            };
            let row = &mut rows[at];
            row.samples += samples;
            row.cpu_ns += cpu_ns;
            row.parts += 1;
            row.failed |= r.failed;
            let string = |id: jscope_format::StringId| {
                rec.strings.get(id.index()).cloned().unwrap_or_default()
            };
            let thread = rec
                .threads
                .get(&r.thread)
                .map(|t| t.name.clone())
                .unwrap_or_default();
            let start_ns = rec.header.start_wall_ns + rec.ticks_to_ns(r.ticks);
            row.tree.push(RequestPart {
                jvm: *pid,
                request: r.id,
                kind: r.kind.name().to_string(),
                name: string(r.name),
                thread,
                span_id: span_hex(r.span_id),
                parent_span_id: span_hex(r.parent_span_id),
                duration_ns: r.duration_ns,
                calls: calls.remove(&r.id).unwrap_or_default(),
                parent: None,
            });
            // The entry: outermost on its thread, called from no span of this
            // JVM, and the longest such (the caller's side outlasts its callees).
            let root = outermost && !span_ids.contains(&r.parent_span_id);
            if root && r.duration_ns >= row.duration_ns {
                row.entry = rec.strings.get(r.name.index()).cloned().unwrap_or_default();
                row.kind = r.kind.name().to_string();
                row.duration_ns = r.duration_ns;
                row.start_ns = start_ns;
                row.jvms.retain(|p| p != pid);
                row.jvms.insert(0, *pid);
            } else if !row.jvms.contains(pid) {
                row.jvms.push(*pid);
            }
            if row.start_ns == 0 {
                row.start_ns = start_ns;
            }
        }
    }
    for row in &mut rows {
        link_parts(&mut row.tree);
    }
    rows.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.id.cmp(&b.id)));
    rows
}

fn span_hex(id: u64) -> String {
    if id == 0 {
        String::new()
    } else {
        format!("{id:016x}")
    }
}

/// Each part's caller: the part that made the call its parent span id names,
/// else the part with that span id (a span nested in another).
fn link_parts(tree: &mut [RequestPart]) {
    let parents: Vec<Option<usize>> = tree
        .iter()
        .map(|p| {
            let want = &p.parent_span_id;
            if want.is_empty() {
                return None;
            }
            tree.iter()
                .position(|q| q.calls.iter().any(|c| &c.span_id == want))
                .or_else(|| tree.iter().position(|q| &q.span_id == want))
        })
        .collect();
    for (p, parent) in tree.iter_mut().zip(parents) {
        p.parent = parent;
    }
}

/// The HTTP client calls of a recording, by the innermost request open on
/// their thread when they started.
fn outgoing_calls(rec: &Recording) -> HashMap<u64, Vec<OutgoingCall>> {
    let string = |id: jscope_format::StringId| rec.strings.get(id.index()).cloned();
    let mut out: HashMap<u64, Vec<OutgoingCall>> = HashMap::new();
    for c in rec.remote_calls.iter().filter(|c| {
        c.side == jscope_format::RemoteSide::Client && c.request_id != jscope_format::StringId::NONE
    }) {
        let Some(traceparent) = string(c.request_id) else {
            continue;
        };
        let inside = rec
            .requests
            .iter()
            .filter(|r| {
                r.thread == c.thread && r.ticks <= c.ticks && c.ticks <= r.ticks + r.duration_ns
            })
            .max_by_key(|r| r.ticks);
        let Some(r) = inside else {
            continue;
        };
        out.entry(r.id).or_default().push(OutgoingCall {
            method: string(c.method).unwrap_or_default(),
            path: string(c.object).unwrap_or_default(),
            span_id: traceparent
                .split('-')
                .nth(2)
                .unwrap_or_default()
                .to_string(),
            duration_ns: c.duration_ns,
        });
    }
    out
}

/// Per request id: (samples taken under it, CPU ns of its cpu samples).
fn sample_counts(rec: &Recording) -> HashMap<u64, (u64, u64)> {
    let parents: HashMap<u64, u64> = rec.requests.iter().map(|r| (r.id, r.parent)).collect();
    let mut out: HashMap<u64, (u64, u64)> = HashMap::new();
    for s in rec.samples.iter().filter(|s| s.request != 0) {
        let mut at = s.request;
        for _ in 0..64 {
            add(&mut out, at, s);
            match parents.get(&at) {
                Some(&p) if p != 0 => at = p,
                _ => break,
            }
        }
    }
    out
}

fn add(out: &mut HashMap<u64, (u64, u64)>, id: u64, s: &Sample) {
    let e = out.entry(id).or_default();
    e.0 += 1;
    if s.mode == SampleMode::Cpu {
        e.1 += s.weight_ns;
    }
}
