//! `GET /api/requests`: the requests the selected JVMs served (`jscope requests`'
//! rows: trace id, entry, JVMs, duration, CPU time, samples and the tree of its
//! parts), slowest first, with each JVM's pid mapped to its id here.

use std::collections::BTreeMap;

use jscope_analysis::{request_rows, RequestRow};
use jscope_format::Recording;
use jscope_store::{JvmSummary, Store};
use serde::Serialize;

use crate::api::params;
use crate::http::{Request, Response};
use crate::CollectorError;

#[derive(Serialize)]
struct Requests {
    requests: Vec<RequestRow>,
    /// Rows there were before `limit`.
    total: usize,
    /// The pids the rows name, each with the ids of the JVMs that had it.
    jvm_ids: BTreeMap<u32, Vec<String>>,
}

/// Every JVM when none is selected; `latency` keeps requests at least that long,
/// `request` the named ones, `from`/`to` those whose entry began inside;
/// `limit` (default 50) rows.
pub fn requests_of(
    store: &dyn Store,
    rows: &[JvmSummary],
    req: &Request,
) -> Result<Response, CollectorError> {
    let (q, _) = params::query_or_all(req, rows)?;
    let limit = params::count_param(req, "limit")?.unwrap_or(50);
    let mut jvm_ids: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut recs: Vec<(u32, Recording)> = Vec::new();
    for id in &q.jvms {
        let rec = store.read(id, q.from_ns, q.to_ns)?;
        jvm_ids.entry(rec.header.pid).or_default().push(id.clone());
        recs.push((rec.header.pid, rec));
    }
    let jvms: Vec<(u32, &Recording)> = recs.iter().map(|(p, r)| (*p, r)).collect();
    let min = q.requests.min_latency_ns.unwrap_or(0);
    let wanted: Option<Vec<String>> = q.requests.request.as_deref().map(|r| {
        r.split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .collect()
    });
    let mut out: Vec<RequestRow> = request_rows(&jvms)
        .into_iter()
        .filter(|r| r.duration_ns >= min)
        .filter(|r| q.from_ns.is_none_or(|from| r.start_ns >= from))
        .filter(|r| q.to_ns.is_none_or(|to| r.start_ns < to))
        .filter(|r| wanted.as_ref().is_none_or(|w| w.contains(&r.id)))
        .collect();
    let total = out.len();
    out.truncate(limit);
    Ok(Response::json(&Requests {
        requests: out,
        total,
        jvm_ids,
    }))
}
