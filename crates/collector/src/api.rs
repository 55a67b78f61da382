//! The HTTP JSON API (documented in docs/API.md) and the embedded web UI.

use std::collections::BTreeMap;
use std::sync::Arc;

use jscope_analysis::{parse_state, threads_at, DotOptions, Mode};
use jscope_flame::{render_html, FlameGraph, Options};

use jscope_store::distributed::{distributed_tree, DistributedQuery};
use jscope_store::jvms::{common_mode, sort_rows};
use jscope_store::query::{self, Query};
use jscope_store::when::{moment_ns, now_ns, span_ns};
use jscope_store::{JvmSelection, JvmStatus, JvmSummary, SelectError, Store, StoreError};

use crate::config::parse_duration;
use crate::hot::HotMethodsListener;
use crate::http::{Handler, Request, Response};
use crate::ingest::StatsSnapshot;
use crate::live::{LiveFigures, LiveState};
use crate::CollectorError;

const INDEX_HTML: &str = include_str!("ui/index.html");
const APP_JS: &str = include_str!("ui/app.js");
const APP_CSS: &str = include_str!("ui/app.css");
const TIMELINE_JS: &str = include_str!("ui/timeline.js");
const TIMELINE_CSS: &str = include_str!("ui/timeline.css");
/// The merged tree's script and style, shared with the session page (`jscope view SESSION`).
const DISTRIBUTED_JS: &str = include_str!("ui/distributed.js");
const DISTRIBUTED_CSS: &str = include_str!("ui/distributed.css");
/// The trace tree browser, the sandwich and the diff views.
const TREE_JS: &str = include_str!("ui/tree.js");
const COMPARE_JS: &str = include_str!("ui/compare.js");
/// The queue view (a queue replayed from a JVM's trace).
const QUEUE_JS: &str = include_str!("ui/queue.js");
/// The tag explorer.
const EXPLORE_JS: &str = include_str!("ui/explore.js");
const BROWSE_CSS: &str = include_str!("ui/browse.css");

/// What the API reads from.
pub struct ApiContext {
    pub store: Arc<dyn Store>,
    /// `None` when serving a recording file (no agents).
    pub live: Option<Arc<LiveState>>,
    pub hot: Option<Arc<HotMethodsListener>>,
    pub stats: Option<Arc<dyn Fn() -> StatsSnapshot + Send + Sync>>,
    pub token: Option<String>,
    /// Exact-trace trees the tree browser reads, kept while their data is unchanged.
    pub trees: crate::api_tree::TreeCache,
    /// Streams of pushed profiles; `None` where pushes are not accepted (`view`).
    pub pushes: Option<crate::push::Pushes>,
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
        match path {
            "" | "/index.html" => return Response::bytes("text/html; charset=utf-8", INDEX_HTML),
            "/app.js" => return Response::bytes("text/javascript; charset=utf-8", APP_JS),
            "/app.css" => return Response::bytes("text/css; charset=utf-8", APP_CSS),
            "/timeline.js" => {
                return Response::bytes("text/javascript; charset=utf-8", TIMELINE_JS)
            }
            "/timeline.css" => return Response::bytes("text/css; charset=utf-8", TIMELINE_CSS),
            "/distributed.js" => {
                return Response::bytes("text/javascript; charset=utf-8", DISTRIBUTED_JS)
            }
            "/distributed.css" => {
                return Response::bytes("text/css; charset=utf-8", DISTRIBUTED_CSS)
            }
            "/tree.js" => return Response::bytes("text/javascript; charset=utf-8", TREE_JS),
            "/compare.js" => return Response::bytes("text/javascript; charset=utf-8", COMPARE_JS),
            "/queue.js" => return Response::bytes("text/javascript; charset=utf-8", QUEUE_JS),
            "/explore.js" => return Response::bytes("text/javascript; charset=utf-8", EXPLORE_JS),
            "/browse.css" => return Response::bytes("text/css; charset=utf-8", BROWSE_CSS),
            _ => {}
        }
        if let Some(r) = self.push(path, req) {
            return r;
        }
        if req.method == "POST" {
            return Response::error(405, "only GET here");
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
            ["jvms", id, "timeline"] => crate::api_events::timeline_of(&*self.store, id, req),
            ["jvms", id, "locks"] => crate::api_events::locks_of(&*self.store, id, req),
            ["jvms", id, "alloc"] => crate::api_events::alloc_of(&*self.store, id, req),
            ["jvms", id, "tree"] => crate::api_tree::tree_of(&self.trees, &*self.store, id, req),
            ["jvms", id, "queue"] => crate::api_queue::queue_of(&*self.store, id, req),
            ["diff"] => crate::api_diff::diff_of(&*self.store, &self.jvm_list(), req),
            ["flame"] => self.flame(req),
            ["tags"] => crate::api_tags::tags(&self.jvm_list(), req),
            ["explore"] => crate::api_tags::explore(self, req),
            ["hot"] => {
                let q = self.query(req)?.0;
                Ok(Response::json(&query::hot(&*self.store, &q, limit(req)?)?))
            }
            ["callgraph"] => self.callgraph(req),
            ["events"] => {
                let (q, _, _) = self.query_or_all(req)?;
                Ok(Response::json(&jscope_store::calls::event_kinds(
                    &*self.store,
                    &q,
                )?))
            }
            ["traced"] => {
                let (q, _, _) = self.query_or_all(req)?;
                Ok(Response::json(&jscope_store::calls::traced_methods(
                    &*self.store,
                    &q,
                )?))
            }
            ["remote"] => {
                let (q, _, _) = self.query_or_all(req)?;
                Ok(Response::json(&jscope_store::calls::remote_calls(
                    &*self.store,
                    &q,
                )?))
            }
            ["distributed"] => {
                let q = parse_distributed_query(req)?;
                Ok(Response::json(&distributed_tree(&*self.store, &q)?))
            }
            ["stats"] => Ok(Response::json(&self.stats.as_ref().map(|s| s()))),
            _ => Ok(Response::error(404, "no such endpoint")),
        }
    }

    /// The JVM list, narrowed by `service`, `host`, `label` and `jvm` when given.
    fn jvms(&self, req: &Request) -> Result<Response, CollectorError> {
        let rows = self.jvm_list();
        let sel = selection(req, "")?;
        Ok(Response::json(&sel.pick(&rows)?))
    }

    /// A query over the JVMs the request selects (`jvm`, `service`, `host`,
    /// `label`), with one sampling mode for several unless `mode` names one; and
    /// what to call the selection in titles.
    pub(crate) fn query(&self, req: &Request) -> Result<(Query, String), CollectorError> {
        self.query_with(req, false).map(|(q, title, _)| (q, title))
    }

    /// [`Self::query`], over every JVM when the request selects none; with the JVM
    /// list it picked from.
    pub(crate) fn query_or_all(
        &self,
        req: &Request,
    ) -> Result<(Query, String, Vec<JvmSummary>), CollectorError> {
        self.query_with(req, true)
    }

    fn query_with(
        &self,
        req: &Request,
        all: bool,
    ) -> Result<(Query, String, Vec<JvmSummary>), CollectorError> {
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
        let rows = self.jvm_list();
        q.jvms = sel.pick_ids(&rows)?;
        let title = if sel.narrowed() || sel.jvms == ["all"] {
            match q.jvms.len() {
                1 => format!("{} (1 JVM)", sel.describe()),
                n => format!("{} ({n} JVMs)", sel.describe()),
            }
        } else {
            q.jvms.join(" + ")
        };
        if q.mode.is_none() && q.jvms.len() > 1 && crate::api_events::event_weight(req).is_none() {
            q.mode = common_mode(&rows, &q.jvms);
        }
        Ok((q, title, rows))
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
        let at_ns = parse_moment(req, "at", now_ns())?;
        let rec = self.store.read(id, None, None)?;
        let at_s = at_ns.map(|at| (at as f64 - rec.header.start_wall_ns as f64) / 1e9);
        match threads_at(&rec, at_s) {
            Ok(view) => Ok(Response::json(&view)),
            Err(e) => Ok(Response::error(404, &e.to_string())),
        }
    }

    fn live_hot(&self, id: &str, req: &Request) -> Result<Response, CollectorError> {
        let (mode, limit) = (parse_mode(req)?, limit(req)?);
        if let Some(table) = self
            .hot
            .as_ref()
            .and_then(|h| h.hot_methods(id, mode, limit))
        {
            return Ok(Response::json(&table));
        }
        let q = Query {
            jvms: vec![id.to_string()],
            mode,
            ..Query::default()
        };
        Ok(Response::json(&query::hot(&*self.store, &q, limit)?))
    }

    /// The stored data of one JVM as a recording file, for `jscope report --collector`.
    fn recording(&self, id: &str, req: &Request) -> Result<Response, CollectorError> {
        let q = parse_query(req)?;
        let bytes = self.store.raw(id, q.from_ns, q.to_ns)?;
        Ok(Response::bytes("application/octet-stream", bytes))
    }

    fn flame(&self, req: &Request) -> Result<Response, CollectorError> {
        let (q, title) = self.query(req)?;
        if let Some(what) = crate::api_events::event_weight(req) {
            return crate::api_events::event_flame(&*self.store, &q, what, req);
        }
        let (graph, mode) = query::flame(&*self.store, &q)?;
        flame_response(
            &graph,
            req,
            || Options {
                title: format!("{title} ({})", mode.map_or("no samples", Mode::name)),
                subtitle: describe(&q),
                ..Options::default()
            },
            || {
                serde_json::json!({
                    "mode": mode,
                    "samples": graph.total(),
                    "collapsed": graph.to_collapsed(),
                })
            },
        )
    }

    fn callgraph(&self, req: &Request) -> Result<Response, CollectorError> {
        let q = self.query(req)?.0;
        let format = req.param("format").unwrap_or("json");
        if !matches!(format, "json" | "dot") {
            return Err(CollectorError::BadQuery(format!(
                "unknown format {format:?} (json or dot)"
            )));
        }
        let graph = query::callgraph(&*self.store, &q)?;
        if format == "dot" {
            let mut out = Vec::new();
            graph
                .write_dot(&DotOptions::default(), &mut out)
                .map_err(|e| CollectorError::BadQuery(e.to_string()))?;
            return Ok(Response::bytes("text/vnd.graphviz", out));
        }
        Ok(Response::json(&graph))
    }
}

/// A flame graph in the `format` the request asks for (json by default): an
/// HTML page with `options`, collapsed stacks, or the `json` body.
pub(crate) fn flame_response(
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

pub(crate) fn describe(q: &Query) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &q.thread {
        parts.push(format!("threads {t}"));
    }
    if !q.states.is_empty() {
        let s: Vec<String> = q.states.iter().map(|s| s.to_string()).collect();
        parts.push(format!("states {}", s.join(",")));
    }
    parts.join(", ")
}

fn limit(req: &Request) -> Result<usize, CollectorError> {
    Ok(count_param(req, "limit")?.unwrap_or(100))
}

/// A count parameter (`limit`, `top`, `max_events`): a 400 naming it when it is not
/// a number, rather than its default in silence.
pub(crate) fn count_param(req: &Request, name: &str) -> Result<Option<usize>, CollectorError> {
    req.param(name)
        .map(|v| {
            v.parse::<usize>().map_err(|_| {
                CollectorError::BadQuery(format!("{name} must be a whole number, not {v:?}"))
            })
        })
        .transpose()
}

fn parse_mode(req: &Request) -> Result<Option<Mode>, CollectorError> {
    req.param("mode")
        .map(|m| {
            m.parse::<Mode>()
                .map_err(|e| CollectorError::BadQuery(e.to_string()))
        })
        .transpose()
}

/// A window bound: `{name}_ns` (epoch ns, exact), else `{name}` as epoch ms, an
/// RFC 3339 time or a span ago (`10m`, `-1h30m`).
pub(crate) fn parse_moment(
    req: &Request,
    name: &str,
    now_ns: u64,
) -> Result<Option<u64>, CollectorError> {
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
/// (e.g. 5m), `mode`, `thread`, `state` (repeatable), `lines`.
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
        mode: match crate::api_events::event_weight(req) {
            Some(_) => None,
            None => parse_mode(req)?,
        },
        thread: req.param("thread").map(str::to_string),
        states,
        lines: matches!(req.param("lines"), Some("1" | "true")),
    })
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
pub(crate) fn selection(req: &Request, prefix: &str) -> Result<JvmSelection, CollectorError> {
    let label = format!("{prefix}label");
    Ok(JvmSelection {
        jvms: req.params(&format!("{prefix}jvm")),
        service: req.param(&format!("{prefix}service")).map(str::to_string),
        host: req.param(&format!("{prefix}host")).map(str::to_string),
        labels: JvmSelection::labels_of(raw_params(req, &label), &label)?,
    })
}

pub(crate) fn handler(ctx: Arc<ApiContext>) -> Handler {
    Arc::new(move |req| ctx.handle(req))
}
