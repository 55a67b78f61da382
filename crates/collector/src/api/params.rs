//! What every handler of the API reads from a request: the JVMs it selects, its
//! window, mode and filters (`Query`), counts and formats, one JVM's data over its
//! window, and a flame graph in the format it asks for. Handlers share these and
//! nothing else.

use jscope_analysis::events::EventWeight;
use jscope_analysis::{parse_state, Annotation, Mode, RequestFilter};
use jscope_flame::{render_html, FlameGraph, Options};
use jscope_format::Recording;
use jscope_store::distributed::DistributedQuery;
use jscope_store::jvms::common_mode;
use jscope_store::query::Query;
use jscope_store::when::{moment_ns, now_ns, span_ns};
use jscope_store::{JvmSelection, JvmSummary, Store};

use crate::config::parse_duration;
use crate::http::{Request, Response};
use crate::CollectorError;

/// A query over the JVMs the request selects (`jvm`, `service`, `host`, `label`),
/// with one sampling mode for several unless `mode` names one; and what to call
/// the selection in titles.
pub fn query_of(req: &Request, rows: &[JvmSummary]) -> Result<(Query, String), CollectorError> {
    query_with(req, rows, false)
}

/// [`query_of`], over every JVM when the request selects none.
pub fn query_or_all(req: &Request, rows: &[JvmSummary]) -> Result<(Query, String), CollectorError> {
    query_with(req, rows, true)
}

fn query_with(
    req: &Request,
    rows: &[JvmSummary],
    all: bool,
) -> Result<(Query, String), CollectorError> {
    let mut q = parse_query(req)?;
    let mut sel = selection(req, "")?;
    if sel.is_empty() && all {
        sel.jvms.push("all".into());
    }
    if sel.is_empty() {
        return Err(CollectorError::BadQuery(
            "no jvm selected: give jvm=ID|PID|all, service=NAME or label=KEY=VALUE".into(),
        ));
    }
    q.jvms = sel.pick_ids(rows)?;
    let title = if sel.narrowed() || sel.jvms == ["all"] {
        match q.jvms.len() {
            1 => format!("{} (1 JVM)", sel.describe()),
            n => format!("{} ({n} JVMs)", sel.describe()),
        }
    } else {
        q.jvms.join(" + ")
    };
    if q.mode.is_none() && q.jvms.len() > 1 && event_weight(req).is_none() {
        q.mode = common_mode(rows, &q.jvms);
    }
    Ok((q, title))
}

/// The flame graph's event weight a request asks for with `mode=alloc|lock`.
pub fn event_weight(req: &Request) -> Option<EventWeight> {
    req.param("mode").and_then(EventWeight::parse)
}

/// A flame graph in the `format` the request asks for (json by default): an
/// HTML page with `options`, collapsed stacks, or the `json` body.
pub fn flame_response(
    graph: &FlameGraph,
    req: &Request,
    options: impl FnOnce() -> Options,
    json: impl FnOnce() -> serde_json::Value,
) -> Result<Response, CollectorError> {
    match req.param("format").unwrap_or("json") {
        "html" => Ok(Response::bytes(
            "text/html; charset=utf-8",
            render_html(graph, &options()),
        )),
        "collapsed" => Ok(Response::bytes(
            "text/plain; charset=utf-8",
            graph.to_collapsed(),
        )),
        "json" => Ok(Response::json(&json())),
        other => Err(CollectorError::BadQuery(format!(
            "unknown format {other:?}"
        ))),
    }
}

pub fn describe(q: &Query) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &q.thread {
        parts.push(format!("threads {t}"));
    }
    if !q.states.is_empty() {
        let s: Vec<String> = q.states.iter().map(|s| s.to_string()).collect();
        parts.push(format!("states {}", s.join(",")));
    }
    if let Some(ns) = q.requests.min_latency_ns {
        parts.push(format!("requests of {:.1} ms or more", ns as f64 / 1e6));
    }
    if let Some(r) = &q.requests.request {
        match r.split(',').count() {
            1 => parts.push(format!("request {r}")),
            n => parts.push(format!("{n} requests")),
        }
    }
    parts.join(", ")
}

pub fn limit(req: &Request) -> Result<usize, CollectorError> {
    Ok(count_param(req, "limit")?.unwrap_or(100))
}

/// A count parameter (`limit`, `top`, `max_events`): a 400 naming it when it is not
/// a number, rather than its default in silence.
pub fn count_param(req: &Request, name: &str) -> Result<Option<usize>, CollectorError> {
    req.param(name)
        .map(|v| {
            v.parse::<usize>().map_err(|_| {
                CollectorError::BadQuery(format!("{name} must be a whole number, not {v:?}"))
            })
        })
        .transpose()
}

pub fn parse_mode(req: &Request) -> Result<Option<Mode>, CollectorError> {
    req.param("mode")
        .map(|m| {
            m.parse::<Mode>()
                .map_err(|e| CollectorError::BadQuery(e.to_string()))
        })
        .transpose()
}

/// A window bound: `{name}_ns` (epoch ns, exact), else `{name}` as epoch ms, an
/// RFC 3339 time or a span ago (`10m`, `-1h30m`).
pub fn parse_moment(req: &Request, name: &str, now_ns: u64) -> Result<Option<u64>, CollectorError> {
    if let Some(v) = req.param(&format!("{name}_ns")) {
        return v
            .parse::<u64>()
            .map(Some)
            .map_err(|_| CollectorError::BadQuery(format!("{name}_ns must be epoch nanoseconds")));
    }
    req.param(name)
        .map(|v| moment_ns(v, now_ns).map_err(|e| CollectorError::BadQuery(format!("{name}: {e}"))))
        .transpose()
}

/// `jvm` (repeatable or comma-separated ids; `jvm=all`, pids, `service`, `host`
/// and `label` are resolved by [`ApiContext::query`]), `from`/`to` (epoch ms, RFC
/// 3339 or a span ago; `from_ns`/`to_ns` exact), `since` (e.g. 1h30m) or `last`
/// (e.g. 5m), `mode`, `thread`, `state` (repeatable), `lines`, `annotate`,
/// `latency` and `request` (see [`requests`]).
pub fn parse_query(req: &Request) -> Result<Query, CollectorError> {
    let now = now_ns();
    let mut from_ns = parse_moment(req, "from", now)?;
    if let Some(last) = req.param("last") {
        from_ns = Some(now.saturating_sub(parse_duration(last)?.as_nanos() as u64));
    }
    if let Some(since) = req.param("since") {
        let span = span_ns(since).ok_or_else(|| {
            CollectorError::BadQuery(format!(
                "since must be a span like 10m, 1h or 1h30m, not {since:?}"
            ))
        })?;
        from_ns = Some(now.saturating_sub(span));
    }
    let states = req
        .params("state")
        .iter()
        .map(|s| parse_state(s).map_err(|e| CollectorError::BadQuery(e.to_string())))
        .collect::<Result<_, _>>()?;
    Ok(Query {
        jvms: req.params("jvm"),
        from_ns,
        to_ns: parse_moment(req, "to", now)?,
        // `alloc` and `lock` are the flame graph's event weights, not sample modes.
        mode: match event_weight(req) {
            Some(_) => None,
            None => parse_mode(req)?,
        },
        thread: req.param("thread").map(str::to_string),
        states,
        lines: matches!(req.param("lines"), Some("1" | "true")),
        annotate: parse_annotation(req)?,
        requests: requests(req)?,
    })
}

/// `latency` (requests at least this long: `50ms`, `1.5s`, `200us`; a bare
/// number is ms; `latency_ns` exact) and `request` (trace ids or recording ids,
/// repeatable or comma-separated): the samples of those requests only.
pub fn requests(req: &Request) -> Result<RequestFilter, CollectorError> {
    let min_latency_ns = match (req.param("latency_ns"), req.param("latency")) {
        (Some(ns), _) => Some(ns.parse::<u64>().map_err(|_| {
            CollectorError::BadQuery(format!("latency_ns must be nanoseconds, not {ns:?}"))
        })?),
        (None, Some(text)) => Some(latency_ns(text).ok_or_else(|| {
            CollectorError::BadQuery(format!(
                "latency must be a duration like 50ms, 1.5s or 200us, not {text:?}"
            ))
        })?),
        (None, None) => None,
    };
    let ids = req.params("request");
    Ok(RequestFilter {
        min_latency_ns,
        request: (!ids.is_empty()).then(|| ids.join(",")),
    })
}

/// A duration as ns: a number and `ns`, `us`, `ms` (the default), `s` or `m`.
fn latency_ns(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok()?;
    let per = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "" | "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        _ => return None,
    };
    let ns = value * per;
    (ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64).then_some(ns as u64)
}

/// `annotate=tiers` (async-profiler's suffixes: `_[0]`, `_[1]`, `_[j]`, `_[i]`),
/// `annotate=kinds` (those, stubs `_[s]` and classes `_[t]`, as flame graphs
/// colour them) or `none`, the default.
fn parse_annotation(req: &Request) -> Result<Annotation, CollectorError> {
    match req.param("annotate") {
        None | Some("none") => Ok(Annotation::None),
        Some("tiers") => Ok(Annotation::Tiers),
        Some("kinds") => Ok(Annotation::Kinds),
        Some(other) => Err(CollectorError::BadQuery(format!(
            "unknown annotate {other:?} (none, tiers or kinds)"
        ))),
    }
}

/// `jvm` (repeatable or comma-separated; all stored JVMs when absent), `from`/`to`
/// (epoch ms) or `last`, `depth`, `min_duration_us`, `hide` (repeatable).
pub fn parse_distributed_query(req: &Request) -> Result<DistributedQuery, CollectorError> {
    let q = parse_query(req)?;
    let number = |name: &str| {
        req.param(name)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| CollectorError::BadQuery(format!("{name} must be a number")))
            })
            .transpose()
    };
    Ok(DistributedQuery {
        jvms: q.jvms,
        from_ns: q.from_ns,
        to_ns: q.to_ns,
        max_depth: number("depth")?.map(|d| d as usize),
        min_duration_ns: number("min_duration_us")?.unwrap_or(0).saturating_mul(1000),
        hide: req.params("hide"),
    })
}

/// Every value of a parameter, not split at commas (a label's value may hold one).
fn raw_params<'r>(req: &'r Request, name: &str) -> impl Iterator<Item = &'r str> + 'r {
    let name = name.to_string();
    req.query
        .iter()
        .filter(move |(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The JVMs a request selects: `jvm=ID|PID|all` (repeatable or comma-separated),
/// `service=NAME`, `host=NAME` and `label=K=V` (repeatable; every one must match),
/// each with `prefix` in front (`""` for a query's own, `base_`/`new_` for a diff side).
pub fn selection(req: &Request, prefix: &str) -> Result<JvmSelection, CollectorError> {
    let label = format!("{prefix}label");
    Ok(JvmSelection {
        jvms: req.params(&format!("{prefix}jvm")),
        service: req.param(&format!("{prefix}service")).map(str::to_string),
        host: req.param(&format!("{prefix}host")).map(str::to_string),
        labels: JvmSelection::labels_of(raw_params(req, &label), &label)?,
    })
}

/// The window in epoch ns: `from`/`to` (epoch ms, RFC 3339 or a span ago, as
/// [`parse_moment`] reads them), or `last` (e.g. `30s`, `5m`)
/// ending where the JVM's stored data ends, so a recording file or a JVM gone long
/// ago shows its own last minutes.
fn window(
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<(Option<u64>, Option<u64>), CollectorError> {
    let now = jscope_store::when::now_ns();
    let from = parse_moment(req, "from", now)?;
    let to = parse_moment(req, "to", now)?;
    let Some(last) = req.param("last").filter(|l| !l.is_empty()) else {
        return Ok((from, to));
    };
    let span = crate::parse_duration(last)?.as_nanos() as u64;
    let end = store
        .jvms()
        .into_iter()
        .find(|j| j.identity.id == id)
        .and_then(|j| j.end_ns());
    Ok(end.map_or((from, to), |end| (Some(end.saturating_sub(span)), None)))
}

/// The JVM's stored data around the request's window, and the window in seconds
/// since the recording start.
pub fn load(
    store: &dyn Store,
    id: &str,
    req: &Request,
) -> Result<(Recording, Option<f64>, Option<f64>), CollectorError> {
    let (from, to) = window(store, id, req)?;
    let rec = store.read(id, from, to)?;
    let start_ns = rec.header.start_wall_ns;
    Ok((
        rec,
        jscope_store::when::seconds_since(start_ns, from),
        jscope_store::when::seconds_since(start_ns, to),
    ))
}
