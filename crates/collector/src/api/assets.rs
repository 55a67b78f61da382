//! The embedded web UI: its page, scripts and styles (vanilla JS, `include_str!`).

use crate::http::Response;

const INDEX_HTML: &str = include_str!("../ui/index.html");
const APP_JS: &str = include_str!("../ui/app.js");
const APP_CSS: &str = include_str!("../ui/app.css");
const TIMELINE_JS: &str = include_str!("../ui/timeline.js");
const TIMELINE_CSS: &str = include_str!("../ui/timeline.css");
/// The merged tree's script and style, shared with the session page (`jscope view SESSION`).
const DISTRIBUTED_JS: &str = include_str!("../ui/distributed.js");
const DISTRIBUTED_CSS: &str = include_str!("../ui/distributed.css");
/// The trace tree browser, the sandwich and the diff views.
const TREE_JS: &str = include_str!("../ui/tree.js");
const COMPARE_JS: &str = include_str!("../ui/compare.js");
/// The queue view (a queue replayed from a JVM's trace).
const QUEUE_JS: &str = include_str!("../ui/queue.js");
/// The requests view (the latency heatmap, the slowest requests, their trees).
const REQUESTS_JS: &str = include_str!("../ui/requests.js");
/// The tag explorer.
const EXPLORE_JS: &str = include_str!("../ui/explore.js");
const BROWSE_CSS: &str = include_str!("../ui/browse.css");

/// The UI file at `path`, when it is one.
pub fn asset(path: &str) -> Option<Response> {
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    let (kind, body) = match path {
        "" | "/index.html" => ("text/html; charset=utf-8", INDEX_HTML),
        "/app.js" => (JS, APP_JS),
        "/app.css" => (CSS, APP_CSS),
        "/timeline.js" => (JS, TIMELINE_JS),
        "/timeline.css" => (CSS, TIMELINE_CSS),
        "/distributed.js" => (JS, DISTRIBUTED_JS),
        "/distributed.css" => (CSS, DISTRIBUTED_CSS),
        "/tree.js" => (JS, TREE_JS),
        "/compare.js" => (JS, COMPARE_JS),
        "/queue.js" => (JS, QUEUE_JS),
        "/requests.js" => (JS, REQUESTS_JS),
        "/explore.js" => (JS, EXPLORE_JS),
        "/browse.css" => (CSS, BROWSE_CSS),
        _ => return None,
    };
    Some(Response::bytes(kind, body))
}
