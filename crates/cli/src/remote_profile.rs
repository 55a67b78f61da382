//! `report`, `flame` and `collapsed` with `--collector URL`: the collector
//! aggregates the selected JVMs' samples (`/api/hot`, `/api/flame`) and sends the
//! merged table or stacks, so a service's hour is not downloaded recording by
//! recording. Reads the API cannot answer (`--threads` roots, alloc and lock
//! weights, or nothing selected: the errors and notes come from the recordings)
//! go the old way, through `source::load`.

use std::path::Path;

use anyhow::{Context, Result};
use jscope_analysis::events::EventWeight;
use jscope_analysis::{Annotation, HotMethod, HotMethods, Mode};
use jscope_flame::FlameGraph;
use serde_json::Value;

use crate::args::{SelectArgs, SourceArgs};
use crate::remote::Collector;
use crate::source::{self, Filter};

/// A read the collector's aggregation answers: the API query naming the selected
/// JVMs, window and filters, and the title the merged recording would have.
pub struct Remote {
    collector: Collector,
    query: Vec<(&'static str, String)>,
    pub title: String,
}

/// The collector's merged stacks of a selection.
pub struct RemoteStacks {
    pub graph: FlameGraph,
    pub mode: Option<Mode>,
    pub title: String,
}

impl Remote {
    /// `Some` when `file` is absent and `src` names a collector, for sample modes
    /// (and after `selection` accepted `sel`); the JVMs are chosen as `source::load`
    /// chooses them, and the window's seconds count from the same origin.
    pub fn of(file: Option<&Path>, src: &SourceArgs, sel: &SelectArgs) -> Result<Option<Remote>> {
        let (None, Some(url)) = (file, &src.collector) else {
            return Ok(None);
        };
        if sel.mode.as_deref().and_then(EventWeight::parse).is_some() {
            return Ok(None);
        }
        crate::analyze::selection(sel)?;
        let collector = Collector::new(url, src.token.clone())?;
        let filter = Filter::of(src)?;
        let chosen = filter.select(source::collector_rows(&collector, src)?)?;
        let origin = source::origin_ns(&chosen);
        let mut query: Vec<(&'static str, String)> =
            chosen.iter().map(|j| ("jvm", j.id.clone())).collect();
        if let Some(m) = &sel.mode {
            query.push(("mode", m.clone()));
        }
        if let Some(t) = &sel.thread {
            query.push(("thread", t.clone()));
        }
        query.extend(sel.state.iter().map(|s| ("state", s.clone())));
        if let Some(ns) = source::epoch_ns(origin, sel.from) {
            query.push(("from_ns", ns.to_string()));
        }
        if let Some(ns) = source::epoch_ns(origin, sel.to) {
            query.push(("to_ns", ns.to_string()));
        }
        let title = source::title_of_selection(&chosen, &filter);
        Ok(Some(Remote {
            collector,
            query,
            title,
        }))
    }

    fn get(&self, endpoint: &str, extra: &[(&str, String)]) -> Result<Value> {
        let params: Vec<String> = self
            .query
            .iter()
            .map(|(k, v)| (*k, v))
            .chain(extra.iter().map(|(k, v)| (*k, v)))
            .map(|(k, v)| format!("{k}={}", source::encode(v)))
            .collect();
        let body = self
            .collector
            .get(&format!("/api/{endpoint}?{}", params.join("&")))?;
        serde_json::from_slice(&body).with_context(|| {
            format!(
                "{} answered /api/{endpoint} with something not JSON",
                self.collector.base()
            )
        })
    }

    /// The merged hot-methods table (`None` when it holds no samples: the caller
    /// reads the recordings to say why).
    pub fn hot(&self, top: usize) -> Result<Option<HotMethods>> {
        let v = self.get("hot", &[("limit", top.to_string())])?;
        let bad = || {
            anyhow::anyhow!(
                "{} sent a hot-methods table jscope cannot read",
                self.collector.base()
            )
        };
        let samples = v["samples"].as_u64().ok_or_else(bad)?;
        if samples == 0 {
            return Ok(None);
        }
        crate::analyze::warn_stacks(&self.title, warnings(&v));
        let methods = v["methods"]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|m| {
                Some(HotMethod {
                    method: m["method"].as_str()?.to_string(),
                    self_samples: m["self_samples"].as_u64()?,
                    total_samples: m["total_samples"].as_u64()?,
                    self_percent: m["self_percent"].as_f64()?,
                    total_percent: m["total_percent"].as_f64()?,
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad)?;
        Ok(Some(HotMethods {
            mode: mode_of(&v),
            samples,
            methods,
        }))
    }

    /// The merged stacks (`None` when there are none, as for [`Self::hot`]),
    /// frames named with `annotate`'s suffixes.
    pub fn stacks(self, lines: bool, annotate: Annotation) -> Result<Option<RemoteStacks>> {
        let mut extra = vec![("format", "json".to_string())];
        if lines {
            extra.push(("lines", "1".into()));
        }
        match annotate {
            Annotation::None => {}
            Annotation::Tiers => extra.push(("annotate", "tiers".into())),
            Annotation::Kinds => extra.push(("annotate", "kinds".into())),
        }
        let v = self.get("flame", &extra)?;
        if v["samples"].as_u64().unwrap_or(0) == 0 {
            return Ok(None);
        }
        let graph = FlameGraph::from_collapsed(v["collapsed"].as_str().unwrap_or(""))
            .with_context(|| format!("{} sent stacks jscope cannot read", self.collector.base()))?;
        crate::analyze::warn_stacks(&self.title, warnings(&v));
        Ok(Some(RemoteStacks {
            graph,
            mode: mode_of(&v),
            title: self.title,
        }))
    }
}

/// The warnings a collector sent with a profile (`warnings`: lines to show).
fn warnings(v: &Value) -> Vec<String> {
    v["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|s| Some(s.as_str()?.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn mode_of(v: &Value) -> Option<Mode> {
    v["mode"].as_str().and_then(|m| m.parse().ok())
}
