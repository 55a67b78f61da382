//! The HTTP JSON API (documented in docs/API.md) and the embedded web UI: the
//! context every request reads, the router and the JVM endpoints. Handlers of the
//! other endpoints are one module each; what they read from a request is
//! [`params`]'s.

mod assets;
mod diff;
mod events;
mod jfr;
mod native;
pub mod params;
mod queue;
mod requests;
mod tags;
pub mod tree;

use std::collections::BTreeMap;
use std::sync::Arc;

use jscope_analysis::{threads_at, Annotation, DotOptions, Mode};
use jscope_flame::Options;
use jscope_store::distributed::distributed_tree;
use jscope_store::jvms::sort_rows;
use jscope_store::query::{self, Query};
use jscope_store::when::now_ns;
use jscope_store::{JvmStatus, JvmSummary, SelectError, Store, StoreError};

use crate::hot::HotMethodsListener;
use crate::http::{Handler, Request, Response};
use crate::ingest::StatsSnapshot;
use crate::live::{LiveFigures, LiveState};
use crate::CollectorError;

/// What the API reads from.
pub struct ApiContext {
    pub store: Arc<dyn Store>,
    /// `None` when serving a recording file (no agents).
    pub live: Option<Arc<LiveState>>,
    pub hot: Option<Arc<HotMethodsListener>>,
    pub stats: Option<Arc<dyn Fn() -> StatsSnapshot + Send + Sync>>,
    pub token: Option<String>,
    /// Exact-trace trees the tree browser reads, kept while their data is unchanged.
    pub trees: tree::TreeCache,
    /// Streams of pushed profiles; `None` where pushes are not accepted (`view`).
    pub pushes: Option<crate::push::Pushes>,
    /// `/metrics` in Prometheus text; `None` where there is no ingest (`view`).
    pub metrics: Option<Arc<dyn Fn() -> String + Send + Sync>>,
}

/// A JVM's row with what the live state knows of it: connection, rates, drops.
fn with_live(mut row: JvmSummary, l: &LiveFigures) -> JvmSummary {
    let ms = |ns: u64| ns / 1_000_000;
    row.status = if l.connected {
        JvmStatus::Connected
    } else {
        JvmStatus::Gone
    };
    row.connected_since_ms = Some(ms(l.connected_since_ns));
    row.gone_since_ms = l.disconnected_ns.map(ms);
    row.disconnect_reason = l.disconnect_reason.clone();
    row.samples_per_second = l.samples_per_second;
    row.samples = l.samples;
    row.drops = l.dropped_samples + l.lost_chunks;
    row.dropped_samples = l.dropped_samples;
    row.lost_chunks = l.lost_chunks;
    row.chunks = l.chunks;
    row.last_seq = l.last_seq;
    row
}

impl ApiContext {
    /// Every JVM the store or the live state knows, connected ones first.
    pub fn jvm_list(&self) -> Vec<JvmSummary> {
        let mut rows: BTreeMap<String, JvmSummary> = self
            .store
            .jvms()
            .iter()
            .map(|j| (j.identity.id.clone(), JvmSummary::of_stored(j)))
            .collect();
        for l in self.live.as_ref().map(|l| l.figures()).unwrap_or_default() {
            // The agent's identity is the current one (its address, labels); the
            // store says what it holds.
            let stored = rows.remove(&l.identity.id).unwrap_or_default();
            let row = JvmSummary {
                stored_bytes: stored.stored_bytes,
                stored_from_ms: stored.stored_from_ms,
                stored_to_ms: stored.stored_to_ms,
                ..JvmSummary::of_identity((*l.identity).clone())
            };
            rows.insert(row.id.clone(), with_live(row, &l));
        }
        let mut out: Vec<JvmSummary> = rows.into_values().collect();
        sort_rows(&mut out);
        out
    }

    fn authorised(&self, req: &Request) -> bool {
        let Some(want) = self.token.as_deref().filter(|t| !t.is_empty()) else {
            return true;
        };
        // The scheme is case-insensitive (RFC 9110), `bearer T` as good as `Bearer T`.
        let bearer = req
            .authorization
            .as_deref()
            .and_then(|a| a.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        bearer == Some(want) || req.param("token") == Some(want)
    }

    pub fn handle(&self, req: &Request) -> Response {
        let path = req.path.trim_end_matches('/');
        if let Some(r) = assets::asset(path) {
            return r;
        }
        if let Some(r) = self.push(path, req) {
            return r;
        }
        if req.method == "POST" {
            return Response::error(405, "only GET here");
        }
        if path == "/metrics" {
            let Some(metrics) = &self.metrics else {
                return Response::error(404, "metrics are a collector's (jscope serve)");
            };
            if !self.authorised(req) {
                return Response::error(401, "token required");
            }
            return Response::bytes("text/plain; version=0.0.4; charset=utf-8", metrics());
        }
        if !path.starts_with("/api/") {
            return Response::error(404, "no such page");
        }
        if !self.authorised(req) {
            return Response::error(401, "token required");
        }
        match self.route(path, req) {
            Ok(r) => r,
            Err(CollectorError::Store(StoreError::UnknownJvm(id))) => {
                Response::error(404, &format!("unknown jvm {id:?}"))
            }
            Err(e @ CollectorError::Store(StoreError::Select(SelectError::NoSuchJvm(_)))) => {
                Response::error(404, &e.to_string())
            }
            Err(
                e @ (CollectorError::BadQuery(_)
                | CollectorError::BadDuration(_)
                | CollectorError::Store(StoreError::BadQuery(_) | StoreError::Select(_))),
            ) => Response::error(400, &e.to_string()),
            Err(e) => Response::error(500, &e.to_string()),
        }
    }

    /// Pyroscope's and OTLP's push endpoints; `None` for other paths.
    fn push(&self, path: &str, req: &Request) -> Option<Response> {
        let handler = match path {
            "/ingest" => crate::push::ingest,
            "/v1development/profiles" => crate::push::otlp,
            _ => return None,
        };
        let Some(pushes) = &self.pushes else {
            return Some(Response::error(
                404,
                "pushes go to a collector (jscope serve)",
            ));
        };
        if req.method != "POST" {
            return Some(Response::error(405, "push with POST"));
        }
        if !self.authorised(req) {
            return Some(Response::error(401, "token required"));
        }
        // A push that panics (a bug) answers 500 and leaves the collector serving.
        let pushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handler(pushes, &*self.store, req)
        }));
        Some(match pushed {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Response::error(e.status, &e.message),
            Err(_) => Response::error(500, "jscope: the push failed (internal error)"),
        })
    }

    fn route(&self, path: &str, req: &Request) -> Result<Response, CollectorError> {
        let parts: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
        match parts.as_slice() {
            ["jvms"] => self.jvms(req),
            ["jvms", id] => self.jvm(id),
            ["jvms", id, "threads"] => self.threads(id, req),
            ["jvms", id, "hot"] => self.live_hot(id, req),
            ["jvms", id, "recording"] => self.recording(id, req),
            ["jvms", id, "timeline"] => events::timeline_of(&*self.store, id, req),
            ["jvms", id, "locks"] => events::locks_of(&*self.store, id, req),
            ["jvms", id, "alloc"] => events::alloc_of(&*self.store, id, req),
            ["jvms", id, "nativemem"] => native::nativemem_of(&*self.store, id, req),
            ["jvms", id, "tree"] => tree::tree_of(&self.trees, &*self.store, id, req),
            ["jvms", id, "queue"] => queue::queue_of(&*self.store, id, req),
            ["diff"] => diff::diff_of(&*self.store, &self.jvm_list(), req),
            ["flame"] => self.flame(req),
            ["requests"] => requests::requests_of(&*self.store, &self.jvm_list(), req),
            ["jfr"] => jfr::jfr_of(&*self.store, &self.jvm_list(), req),
            ["tags"] => tags::tags(&self.jvm_list(), req),
            ["explore"] => tags::explore(&*self.store, &self.jvm_list(), req),
            ["hot"] => {
                let q = params::query_of(req, &self.jvm_list())?.0;
                let (hot, incomplete) = query::hot(&*self.store, &q, params::limit(req)?)?;
                Ok(Response::json(&query::with_warnings(hot, &incomplete)))
            }
            ["callgraph"] => self.callgraph(req),
            ["events"] => {
                let (q, _) = params::query_or_all(req, &self.jvm_list())?;
                Ok(Response::json(&jscope_store::calls::event_kinds(
                    &*self.store,
                    &q,
                )?))
            }
            ["traced"] => {
                let (q, _) = params::query_or_all(req, &self.jvm_list())?;
                Ok(Response::json(&jscope_store::calls::traced_methods(
                    &*self.store,
                    &q,
                )?))
            }
            ["remote"] => {
                let (q, _) = params::query_or_all(req, &self.jvm_list())?;
                Ok(Response::json(&jscope_store::calls::remote_calls(
                    &*self.store,
                    &q,
                )?))
            }
            ["distributed"] => {
                let q = params::parse_distributed_query(req)?;
                Ok(Response::json(&distributed_tree(&*self.store, &q)?))
            }
            ["stats"] => Ok(Response::json(&self.stats.as_ref().map(|s| s()))),
            _ => Ok(Response::error(404, "no such endpoint")),
        }
    }

    /// The JVM list, narrowed by `service`, `host`, `label` and `jvm` when given.
    fn jvms(&self, req: &Request) -> Result<Response, CollectorError> {
        let rows = self.jvm_list();
        let sel = params::selection(req, "")?;
        Ok(Response::json(&sel.pick(&rows)?))
    }

    fn jvm(&self, id: &str) -> Result<Response, CollectorError> {
        let row = self
            .jvm_list()
            .into_iter()
            .find(|j| j.id == id)
            .ok_or_else(|| CollectorError::Store(StoreError::UnknownJvm(id.to_string())))?;
        let segments = self
            .store
            .jvms()
            .into_iter()
            .find(|j| j.identity.id == id)
            .map(|j| j.segments)
            .unwrap_or_default();
        Ok(Response::json(
            &serde_json::json!({ "jvm": row, "segments": segments }),
        ))
    }

    /// Live threads when the JVM streams snapshots; else the stored snapshot nearest `at`.
    fn threads(&self, id: &str, req: &Request) -> Result<Response, CollectorError> {
        if req.param("at").is_none() {
            if let Some(view) = self.live.as_ref().and_then(|l| l.threads(id)) {
                return Ok(Response::json(&view));
            }
        }
        let at_ns = params::parse_moment(req, "at", now_ns())?;
        let rec = self.store.read(id, None, None)?;
        // Integer ns first: epoch ns as f64 are 256 ns apart. Before the start
        // stays negative (the nearest snapshot is the first).
        let at_s = at_ns.map(|at| (at as i128 - rec.header.start_wall_ns as i128) as f64 / 1e9);
        match threads_at(&rec, at_s) {
            Ok(view) => Ok(Response::json(&view)),
            Err(e) => Ok(Response::error(404, &e.to_string())),
        }
    }

    fn live_hot(&self, id: &str, req: &Request) -> Result<Response, CollectorError> {
        let (mode, limit) = (params::parse_mode(req)?, params::limit(req)?);
        if let Some((table, incomplete)) = self
            .hot
            .as_ref()
            .and_then(|h| h.hot_methods(id, mode, limit))
        {
            return Ok(Response::json(&query::with_warnings(table, &incomplete)));
        }
        let q = Query {
            jvms: vec![id.to_string()],
            mode,
            ..Query::default()
        };
        let (hot, incomplete) = query::hot(&*self.store, &q, limit)?;
        Ok(Response::json(&query::with_warnings(hot, &incomplete)))
    }

    /// The stored data of one JVM as a recording file, for `jscope report --collector`.
    fn recording(&self, id: &str, req: &Request) -> Result<Response, CollectorError> {
        let q = params::parse_query(req)?;
        let bytes = self.store.raw(id, q.from_ns, q.to_ns)?;
        Ok(Response::bytes("application/octet-stream", bytes))
    }

    fn flame(&self, req: &Request) -> Result<Response, CollectorError> {
        let (mut q, title) = params::query_of(req, &self.jvm_list())?;
        // A page draws frames in the colours of their kinds.
        if req.param("format") == Some("html") && req.param("annotate").is_none() {
            q.annotate = Annotation::Kinds;
        }
        if let Some(what) = params::event_weight(req) {
            return events::event_flame(&*self.store, &q, what, req);
        }
        let (graph, mode, incomplete) = query::flame(&*self.store, &q)?;
        let warnings: Vec<String> = incomplete.warning().into_iter().collect();
        params::flame_response(
            &graph,
            req,
            || Options {
                title: format!("{title} ({})", mode.map_or("no samples", Mode::name)),
                subtitle: [params::describe(&q)]
                    .into_iter()
                    .chain(warnings.iter().cloned())
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
                ..Options::default()
            },
            || {
                serde_json::json!({
                    "mode": mode,
                    "samples": graph.total(),
                    "collapsed": graph.to_collapsed(),
                    "warnings": warnings,
                })
            },
        )
    }

    fn callgraph(&self, req: &Request) -> Result<Response, CollectorError> {
        let q = params::query_of(req, &self.jvm_list())?.0;
        let format = req.param("format").unwrap_or("json");
        if !matches!(format, "json" | "dot") {
            return Err(CollectorError::BadQuery(format!(
                "unknown format {format:?} (json or dot)"
            )));
        }
        let (graph, incomplete) = query::callgraph(&*self.store, &q)?;
        if format == "dot" {
            let mut out = Vec::new();
            graph
                .write_dot(&DotOptions::default(), &mut out)
                .map_err(|e| CollectorError::BadQuery(e.to_string()))?;
            return Ok(Response::bytes("text/vnd.graphviz", out));
        }
        Ok(Response::json(&query::with_warnings(graph, &incomplete)))
    }
}

pub(crate) fn handler(ctx: Arc<ApiContext>) -> Handler {
    Arc::new(move |req| ctx.handle(req))
}
