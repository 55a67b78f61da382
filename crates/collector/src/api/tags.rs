//! The tag explorer (Pyroscope's): `GET /api/tags` lists the keys JVMs can be told
//! apart by (the built-in `service` and `host`, and every label key) with their
//! values and how many JVMs carry each; `GET /api/explore?by=KEY` breaks one
//! profile (the selected JVMs' samples over the window) down by that key's values:
//! each value's samples, share and top methods, and a value's flame graph.

use std::collections::BTreeMap;

use jscope_analysis::{HotMethods, Mode};
use jscope_flame::{FlameGraph, Options};
use serde::Serialize;
use serde_json::json;

use super::params::flame_response;
use crate::http::{Request, Response};
use crate::CollectorError;
use jscope_store::query::{self, Query};
use jscope_store::{JvmSummary, Store};

/// Keys every JVM has, before its labels.
const BUILT_IN: [&str; 2] = ["service", "host"];

/// A JVM's value of `key`: its service, host or label; `None` when it has no such label.
fn value_of<'r>(row: &'r JvmSummary, key: &str) -> Option<&'r str> {
    match key {
        "service" => Some(&row.service),
        "host" => Some(&row.host),
        label => row.labels.get(label).map(String::as_str),
    }
}

#[derive(Debug, Serialize)]
struct TagValue {
    value: String,
    jvms: usize,
}

#[derive(Debug, Serialize)]
struct TagKey {
    key: String,
    /// `service` and `host`, which every JVM has.
    built_in: bool,
    /// Values by how many JVMs carry them, most first.
    values: Vec<TagValue>,
    /// Selected JVMs without this label.
    unset: usize,
}

/// `GET /api/tags[?service=..&label=..&jvm=..]`: the keys of the selected JVMs
/// (all when nothing is selected) with their values and JVM counts.
pub fn tags(rows: &[JvmSummary], req: &Request) -> Result<Response, CollectorError> {
    let sel = super::params::selection(req, "")?;
    let chosen = sel.pick(rows)?;
    let mut keys: Vec<String> = BUILT_IN.iter().map(|k| k.to_string()).collect();
    let labels: std::collections::BTreeSet<&String> =
        chosen.iter().flat_map(|r| r.labels.keys()).collect();
    keys.extend(
        labels
            .into_iter()
            .filter(|k| !BUILT_IN.contains(&k.as_str()))
            .cloned(),
    );
    let out: Vec<TagKey> = keys
        .into_iter()
        .map(|key| {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            let mut unset = 0;
            for r in &chosen {
                match value_of(r, &key) {
                    Some(v) => *counts.entry(v).or_default() += 1,
                    None => unset += 1,
                }
            }
            let mut values: Vec<TagValue> = counts
                .into_iter()
                .map(|(value, jvms)| TagValue {
                    value: value.to_string(),
                    jvms,
                })
                .collect();
            values.sort_by(|a, b| b.jvms.cmp(&a.jvms).then_with(|| a.value.cmp(&b.value)));
            TagKey {
                built_in: BUILT_IN.contains(&key.as_str()),
                key,
                values,
                unset,
            }
        })
        .collect();
    Ok(Response::json(
        &json!({ "jvms": chosen.len(), "keys": out }),
    ))
}

/// One value's part of the profile.
struct Part {
    /// `None` for the selected JVMs without the label.
    value: Option<String>,
    jvms: Vec<String>,
    graph: FlameGraph,
    hot: HotMethods,
}

/// `GET /api/explore?by=KEY[&value=V|&unset=1][&top=N][&flames=1]` with a query's
/// selection (all JVMs when none), window, `mode`, `thread` and `state`: the
/// profile broken down by KEY's values (JSON), or with `format=html|collapsed`
/// the flame graph of the chosen value (of everything without one).
pub fn explore(
    store: &dyn Store,
    rows: &[JvmSummary],
    req: &Request,
) -> Result<Response, CollectorError> {
    let by = req
        .param("by")
        .ok_or_else(|| CollectorError::BadQuery("explore needs by=KEY (see /api/tags)".into()))?;
    let (q, title) = super::params::query_or_all(req, rows)?;
    let mut groups: BTreeMap<Option<String>, Vec<String>> = BTreeMap::new();
    for id in &q.jvms {
        let row = rows.iter().find(|r| r.id == *id);
        let value = row.and_then(|r| value_of(r, by)).map(str::to_string);
        groups.entry(value).or_default().push(id.clone());
    }
    let format = req.param("format").unwrap_or("json");
    // The flame graph of everything is the parts' graphs added up.
    let wants_whole = format != "json" && wanted_value(req).is_none();
    let mut whole = FlameGraph::new();
    let mut parts = Vec::new();
    for (value, jvms) in groups {
        let part_q = Query {
            jvms: jvms.clone(),
            ..q.clone()
        };
        let query::Side { graph, hot, .. } =
            query::side_into(store, &part_q, wants_whole.then_some(&mut whole))?;
        parts.push(Part {
            value,
            jvms,
            graph,
            hot,
        });
    }
    parts.sort_by(|a, b| {
        b.hot
            .samples
            .cmp(&a.hot.samples)
            .then_with(|| a.value.cmp(&b.value))
    });
    let total: u64 = parts.iter().map(|p| p.hot.samples).sum();
    let mode = q.mode.or_else(|| parts.iter().find_map(|p| p.hot.mode));
    let top = super::params::count_param(req, "top")?.unwrap_or(10);
    let chosen = chosen_part(req, &parts, by)?;
    if format != "json" {
        let graph = match chosen {
            Some(p) => &p.graph,
            None if q.jvms.is_empty() => {
                return Err(CollectorError::BadQuery("no jvm selected".into()))
            }
            None => &whole,
        };
        let name = chosen.map_or_else(|| format!("by {by}"), |p| label(by, &p.value));
        return flame_response(
            graph,
            req,
            || Options {
                title: format!(
                    "{title}: {name} ({})",
                    mode.map_or("no samples", Mode::name)
                ),
                subtitle: format!(
                    "{} of {total} samples{}",
                    graph.total(),
                    match super::params::describe(&q) {
                        d if d.is_empty() => String::new(),
                        d => format!("; {d}"),
                    }
                ),
                ..Options::default()
            },
            || json!({}),
        );
    }
    let flames = matches!(req.param("flames"), Some("1" | "true"));
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / total as f64
        }
    };
    let whole = HotMethods::merge(parts.iter().map(|p| p.hot.clone()));
    let described = |p: &Part, with_flame: bool| {
        let mut hot = p.hot.clone();
        hot.truncate(top);
        let mut v = json!({
            "value": p.value,
            "jvms": p.jvms,
            "samples": p.hot.samples,
            "share": share(p.hot.samples),
            "top": hot.methods,
        });
        if with_flame {
            v["collapsed"] = json!(p.graph.to_collapsed());
        }
        v
    };
    let values: Vec<serde_json::Value> = parts.iter().map(|p| described(p, flames)).collect();
    let mut whole_top = whole;
    whole_top.truncate(top);
    Ok(Response::json(&json!({
        "by": by,
        "title": title,
        "mode": mode,
        "samples": total,
        "values": values,
        "whole": { "samples": total, "top": whole_top.methods },
        "selected": chosen.map(|p| described(p, true)),
    })))
}

/// The value `value=V` (or `unset=1`, `Some(None)`) names, if any.
fn wanted_value(req: &Request) -> Option<Option<String>> {
    if matches!(req.param("unset"), Some("1" | "true")) {
        Some(None)
    } else {
        req.param("value").map(|v| Some(v.to_string()))
    }
}

/// The part `value=V` (or `unset=1`) names, if any.
fn chosen_part<'p>(
    req: &Request,
    parts: &'p [Part],
    by: &str,
) -> Result<Option<&'p Part>, CollectorError> {
    let Some(want) = wanted_value(req) else {
        return Ok(None);
    };
    parts
        .iter()
        .find(|p| p.value == want)
        .map(Some)
        .ok_or_else(|| {
            CollectorError::BadQuery(format!("no selected JVM has {}", label(by, &want)))
        })
}

fn label(by: &str, value: &Option<String>) -> String {
    match value {
        Some(v) => format!("{by}={v}"),
        None => format!("no {by}"),
    }
}
