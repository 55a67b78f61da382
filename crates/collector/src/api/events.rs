//! API endpoints over a JVM's events (docs/EVENTS.md): the thread timeline, the
//! lock report and the allocation report, each over `from`/`to` (epoch ms, an RFC 3339
//! time or a span ago, as every query of the API takes them).

use jscope_analysis::events::{
    age_report, alloc_report, live_report, lock_report, timeline, AllocBy, EventFilter, EventWeight,
};
use jscope_analysis::{collapse, CollapseOptions};
use jscope_flame::{FlameGraph, Options};
use jscope_format::Recording;

use jscope_store::query::Query;

use crate::http::{Request, Response};
use crate::CollectorError;
use jscope_store::Store;

/// Event markers a timeline answer holds at most; the rest are counted.
const MAX_EVENTS: usize = 20_000;

/// `GET /api/jvms/{id}/timeline[?from=MS&to=MS|&last=DURATION][&max_events=N]`.
pub(crate) fn timeline_of(
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<Response, CollectorError> {
    let (rec, from_s, to_s) = super::params::load(store, id, req)?;
    let max = super::params::count_param(req, "max_events")?.unwrap_or(MAX_EVENTS);
    Ok(Response::json(&timeline(&rec, from_s, to_s, max)))
}

/// The window, and `latency`/`request` as `/api/flame` takes them: the events
/// of those requests only.
fn filter(
    req: &Request,
    from_s: Option<f64>,
    to_s: Option<f64>,
) -> Result<EventFilter, CollectorError> {
    Ok(EventFilter {
        from_s,
        to_s,
        requests: super::params::requests(req)?,
        ..EventFilter::default()
    })
}

/// `GET /api/jvms/{id}/locks[?from=MS&to=MS|&last=DURATION][&latency=D][&request=ID]`.
pub(crate) fn locks_of(
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<Response, CollectorError> {
    let (rec, from_s, to_s) = super::params::load(store, id, req)?;
    let mut body = serde_json::to_value(lock_report(&rec, &filter(req, from_s, to_s)?))
        .map_err(|e| CollectorError::BadQuery(e.to_string()))?;
    body["recorded_events"] = recorded_events(&rec).into();
    Ok(Response::json(&body))
}

/// The event kinds the agent was asked for (its `events` setting), so an empty view
/// can tell "none happened" from "none were recorded".
fn recorded_events(rec: &Recording) -> String {
    rec.header
        .extra
        .iter()
        .find(|(k, _)| k == "events")
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// `GET /api/jvms/{id}/alloc[?by=site|stack|class][&from=MS&to=MS][&latency=D][&request=ID]`:
/// the report and object ages.
pub(crate) fn alloc_of(
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<Response, CollectorError> {
    let by = match req.param("by").unwrap_or("site") {
        "site" => AllocBy::Site,
        "stack" => AllocBy::Stack,
        "class" => AllocBy::Class,
        other => {
            return Err(CollectorError::BadQuery(format!(
                "by must be site, stack or class, not {other:?}"
            )))
        }
    };
    let (rec, from_s, to_s) = super::params::load(store, id, req)?;
    let f = filter(req, from_s, to_s)?;
    Ok(Response::json(&serde_json::json!({
        "alloc": alloc_report(&rec, &f, by),
        "live": live_report(&rec, &f, by),
        "ages": age_report(&rec, &f),
        "recorded_events": recorded_events(&rec),
        "object_ages": rec.header.extra.iter().any(|(k, v)| k == "events.objectages" && v == "true"),
    })))
}

/// `GET /api/flame?mode=alloc|lock&jvm=...`: the JVMs' allocation samples
/// weighted by estimated bytes, or their contention (monitor and lock parks)
/// weighted by time, merged into one flame graph; formats as `/api/flame`.
pub(crate) fn event_flame(
    store: &dyn Store,
    q: &Query,
    what: EventWeight,
    req: &Request,
) -> Result<Response, CollectorError> {
    if q.jvms.is_empty() {
        return Err(CollectorError::BadQuery("no jvm selected".into()));
    }
    let opts = CollapseOptions {
        lines: q.lines,
        thread_roots: false,
        annotate: q.annotate,
    };
    let mut graph = FlameGraph::new();
    // One count across the JVMs where the store can (ClickHouse: the events table),
    // else each JVM's events read back from its chunks.
    for (rec, counts) in jscope_store::calls::event_stacks(store, q, what)? {
        for (frames, n) in collapse(&rec, &counts, opts).stacks {
            graph.add(frames, n);
        }
    }
    super::params::flame_response(
        &graph,
        req,
        || Options {
            title: format!("{} ({})", q.jvms.join(" + "), what.name()),
            subtitle: format!("{} {}", graph.total(), what.unit()),
            ..Options::default()
        },
        || {
            serde_json::json!({
                "mode": what,
                "unit": what.unit(),
                "samples": graph.total(),
                "collapsed": graph.to_collapsed(),
            })
        },
    )
}
