//! `GET /api/diff`: what changed between two selections of stored samples (two
//! JVMs, one JVM's two time ranges, two services or label values): the methods'
//! shares on both sides ranked by change (`jscope_analysis::diff_hot`, as `jscope
//! diff` prints it) and a differential flame graph (`jscope_flame::render_diff_html`).

use jscope_analysis::{diff_hot, Mode};
use jscope_flame::{render_diff_html, FlameGraph, Options};
use serde_json::json;

use super::params::{parse_moment, parse_query};
use crate::http::{Request, Response};
use crate::CollectorError;
use jscope_store::query::{self, Query};
use jscope_store::JvmSummary;
use jscope_store::SelectError;
use jscope_store::Store;

/// One side's query: the shared `mode`, `thread`, `state` and `lines`, with the
/// side's JVMs as a query selects them under the side's prefix: `PREFIX_jvm`
/// (ids, pids or `all`; `PREFIX` alone too), `PREFIX_service`, `PREFIX_host`,
/// `PREFIX_label` (`key=value`, repeatable: all must match), and `PREFIX_from`/
/// `PREFIX_to` (epoch ms, RFC 3339 or a span ago).
fn side_query(
    rows: &[JvmSummary],
    req: &Request,
    shared: &Query,
    side: &str,
) -> Result<Query, CollectorError> {
    let mut sel = super::params::selection(req, &format!("{side}_"))?;
    sel.jvms.splice(0..0, req.params(side));
    if sel.is_empty() {
        return Err(CollectorError::BadQuery(format!(
            "choose the {side} side's JVMs ({side}_jvm=ID, {side}_service=NAME or {side}_label=KEY=VALUE)"
        )));
    }
    let jvms = sel.pick_ids(rows).map_err(|e| match e {
        SelectError::NoSuchJvm(_) => e.into(),
        e => CollectorError::BadQuery(format!("{e} (the {side} side)")),
    })?;
    let now = jscope_store::when::now_ns();
    Ok(Query {
        jvms,
        from_ns: parse_moment(req, &format!("{side}_from"), now)?,
        to_ns: parse_moment(req, &format!("{side}_to"), now)?,
        ..shared.clone()
    })
}

/// The diff as JSON (`format=json`: `diff` is `HotDiff`, `base` and `new` each side's
/// collapsed stacks) or the differential flame graph page (`format=html`).
pub fn diff_of(
    store: &dyn Store,
    rows: &[JvmSummary],
    req: &Request,
) -> Result<Response, CollectorError> {
    let shared = parse_query(req)?;
    let mut base_q = side_query(rows, req, &shared, "base")?;
    let mut new_q = side_query(rows, req, &shared, "new")?;
    // One mode for both sides: the base's first mode with samples unless chosen.
    let base = query::side(store, &base_q)?;
    let mode = base.mode().ok_or_else(|| {
        CollectorError::BadQuery("the base side has no samples in the selection".into())
    })?;
    // Several base JVMs may each have chosen their own first mode: count again in one.
    let base = if shared.mode.is_none() && base_q.jvms.len() > 1 {
        base_q.mode = Some(mode);
        query::side(store, &base_q)?
    } else {
        base
    };
    new_q.mode = Some(mode);
    let new = query::side(store, &new_q)?;
    let warnings: Vec<String> = [("base", &base), ("new", &new)]
        .iter()
        .filter_map(|(side, s)| Some(format!("the {side} side: {}", s.incomplete.warning()?)))
        .collect();
    let query::Side {
        graph: base_graph,
        hot: base_hot,
        ..
    } = base;
    let query::Side {
        graph: new_graph,
        hot: new_hot,
        ..
    } = new;
    if new_hot.samples == 0 {
        return Err(CollectorError::BadQuery(format!(
            "the new side has no {} samples in the selection",
            mode.name()
        )));
    }
    let mut diff = diff_hot(&base_hot, &new_hot);
    match req.param("format").unwrap_or("json") {
        "html" => Ok(Response::bytes(
            "text/html; charset=utf-8",
            page(&base_q, &new_q, mode, &base_graph, &new_graph),
        )),
        "json" => {
            if let Some(n) = super::params::count_param(req, "limit")? {
                diff.truncate(n);
            }
            Ok(Response::json(&json!({
                "diff": diff,
                "base": { "jvms": base_q.jvms, "samples": base_graph.total(), "collapsed": base_graph.to_collapsed() },
                "new": { "jvms": new_q.jvms, "samples": new_graph.total(), "collapsed": new_graph.to_collapsed() },
                "warnings": warnings,
            })))
        }
        other => Err(CollectorError::BadQuery(format!(
            "unknown format {other:?}"
        ))),
    }
}

fn page(base_q: &Query, new_q: &Query, mode: Mode, base: &FlameGraph, new: &FlameGraph) -> String {
    let options = Options {
        title: format!("{} vs {}", base_q.jvms.join(" + "), new_q.jvms.join(" + ")),
        subtitle: format!(
            "{} samples: base {}, new {}; width is the new side, colour the change of share (red grew, blue shrank)",
            mode.name(),
            base.total(),
            new.total()
        ),
        ..Options::default()
    };
    render_diff_html(new, base, &options)
}
