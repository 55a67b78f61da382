//! `GET /api/jvms/ID/queue`: a queue replayed from one stored JVM's exact trace
//! (`jscope_analysis::replay_queue_bytes`, what `jscope queue` runs) for the UI's
//! Queue view: the summary, the first requests and the queue length series thinned
//! for a chart. See docs/QUEUE.md.

use jscope_analysis::{replay_queue_bytes, LengthPoint, QueueError, QueueReport, QueueSpec};
use serde_json::json;

use crate::http::{Request, Response};
use crate::CollectorError;
use jscope_store::{Store, StoreError};

/// At most this many requests are sent (`requests_total` says how many there are).
const MAX_REQUESTS: usize = 10_000;
/// The length series is thinned to at most this many points.
const MAX_POINTS: usize = 2_000;

/// The length series in at most `max` points: when longer, the time is cut into
/// `max / 2` buckets and each keeps its lowest and highest point (in time order),
/// so the chart keeps every peak and every return to empty.
pub fn thin_length(points: &[LengthPoint], max: usize) -> Vec<LengthPoint> {
    if points.len() <= max || max < 2 {
        return points.to_vec();
    }
    let (first, last) = (points[0].t_ns, points[points.len() - 1].t_ns);
    let buckets = (max / 2) as u64;
    let span = (last - first).max(1);
    let bucket_of = |t: u64| ((t - first) as u128 * buckets as u128 / (span as u128 + 1)) as u64;
    let mut out = Vec::with_capacity(max);
    let mut i = 0;
    while i < points.len() {
        let b = bucket_of(points[i].t_ns);
        let (mut lo, mut hi) = (i, i);
        let mut j = i;
        while j < points.len() && bucket_of(points[j].t_ns) == b {
            if points[j].length < points[lo].length {
                lo = j;
            }
            if points[j].length > points[hi].length {
                hi = j;
            }
            j += 1;
        }
        out.push(points[lo.min(hi)]);
        if lo != hi {
            out.push(points[lo.max(hi)]);
        }
        i = j;
    }
    out
}

/// The replayed queue as JSON: `summary` as `jscope queue --format json` has it,
/// `requests` (the first 10,000; `requests_total`), `length` (at most 2,000
/// points; `length_total`). Parameters: `queue` (threadpool, blockingqueue or
/// CLASS#ENQ/CLASS#DEQ; default as the CLI's), `task` (CLASS#METHOD), `workers`.
pub fn queue_of(store: &dyn Store, id: &str, req: &Request) -> Result<Response, CollectorError> {
    let with_task = |spec: QueueSpec| match req.param("task").filter(|t| !t.trim().is_empty()) {
        Some(t) => spec.with_task(t).map_err(CollectorError::BadQuery),
        None => Ok(spec),
    };
    let spec = match req.param("queue").filter(|q| !q.trim().is_empty()) {
        Some(q) => Some(with_task(
            QueueSpec::parse(q.trim()).map_err(CollectorError::BadQuery)?,
        )?),
        None => None,
    };
    let workers = match req.param("workers").filter(|w| !w.is_empty()) {
        Some(w) => Some(w.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
            CollectorError::BadQuery(format!("workers must be a positive number, not {w:?}"))
        })?),
        None => None,
    };
    let bytes = store.raw(id, None, None)?;
    let replay = |spec: &QueueSpec| replay_queue_bytes(&bytes, spec, workers).map(|(r, _)| r);
    let replayed: Result<QueueReport, QueueError> = match &spec {
        Some(spec) => replay(spec),
        None => {
            let (pool, queue) = (
                with_task(QueueSpec::thread_pool())?,
                with_task(QueueSpec::blocking_queue())?,
            );
            replay(&pool).or_else(|e| match e {
                QueueError::Missing { .. } => replay(&queue).map_err(|_| e),
                e => Err(e),
            })
        }
    };
    let report = match replayed {
        Ok(r) => r,
        Err(e @ (QueueError::Missing { .. } | QueueError::NoTrace(_))) => {
            return Ok(Response::error(400, &e.to_string()))
        }
        Err(e) => {
            return Err(StoreError::Unreadable {
                jvm: id.to_string(),
                message: e.to_string(),
            }
            .into())
        }
    };
    let requests = &report.requests[..report.requests.len().min(MAX_REQUESTS)];
    Ok(Response::json(&json!({
        "jvm": id,
        "summary": report.summary,
        "requests_total": report.requests.len(),
        "requests": requests,
        "length_total": report.length.len(),
        "length": thin_length(&report.length, MAX_POINTS),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t_ns: u64, length: u64) -> LengthPoint {
        LengthPoint { t_ns, length }
    }

    #[test]
    fn a_short_series_is_kept_whole() {
        let s = vec![p(0, 1), p(5, 0)];
        assert_eq!(thin_length(&s, 2_000), s);
    }

    #[test]
    fn thinning_keeps_each_buckets_peak_and_trough_in_time_order() {
        // 10,000 points: a saw 0..9 repeating, with one spike of 50 at t = 7,777.
        let mut s: Vec<LengthPoint> = (0..10_000u64).map(|t| p(t, t % 10)).collect();
        s[7_777].length = 50;
        let thin = thin_length(&s, 2_000);
        assert!(thin.len() <= 2_000, "{}", thin.len());
        assert!(thin.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
        assert!(thin.contains(&p(7_777, 50)));
        assert_eq!(thin.iter().filter(|x| x.length == 0).count(), 1_000);
        assert_eq!(thin.first().unwrap().t_ns, 0);
    }
}
