//! The page script's pure parts (decoding, search, box layout), run in Node.js.
//!
//! The page itself needs a browser; these functions do not, and page.js exports
//! them when loaded as a Node module. Without `node` on PATH the tests say so and
//! skip, and fail under `CI=true` (jscope_testkit::tools).

use jscope_flame::{render_html, FlameGraph, Options};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

const SCRIPT: &str = include_str!("../src/html/page.js");
const DATA_START: &str = r#"<script type="application/json" id="flame-data">"#;

/// Runs `body` in Node with `api` (page.js exports) and `g` (decoded page data)
/// in scope and returns what it prints as JSON; `None` when Node is missing.
fn run_node(graph: &FlameGraph, options: &Options, body: &str) -> Option<Value> {
    let node = jscope_testkit::tools::node()?;
    let html = render_html(graph, options);
    let start = html.find(DATA_START).unwrap() + DATA_START.len();
    let data = &html[start..start + html[start..].find("</script>").unwrap()];
    let dir = scratch_dir();
    std::fs::write(dir.join("page.js"), SCRIPT).unwrap();
    std::fs::write(dir.join("data.json"), data).unwrap();
    let driver = format!(
        "const api = require('./page.js');\n\
         const g = api.decode(JSON.parse(require('fs').readFileSync('./data.json', 'utf8')));\n\
         const name = (i) => g.name[i] < 0 ? null : g.names[g.name[i]];\n\
         console.log(JSON.stringify((() => {{ {body} }})()));\n"
    );
    std::fs::write(dir.join("driver.js"), driver).unwrap();
    let out = Command::new(node)
        .arg("driver.js")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("driver prints JSON"))
}

fn scratch_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "flame-page-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn small_graph() -> FlameGraph {
    FlameGraph::from_collapsed("main;a;x 6\nmain;b 2\nmain 2\nr;r;r 5\n").unwrap()
}

#[test]
fn decoding_restores_positions_subtrees_and_parents() {
    let body = "const f = []; for (let i = 0; i < g.n; i++) f.push([name(i), g.depth[i], g.x[i], g.width[i], g.end[i], g.parent[i]]); return f;";
    let Some(frames) = run_node(&small_graph(), &Options::default(), body) else {
        return;
    };
    let expected = json!([
        ["all", 0, 0, 15, 8, -1],
        ["main", 1, 0, 10, 5, 0],
        ["a", 2, 0, 6, 4, 1],
        ["x", 3, 0, 6, 4, 2],
        ["b", 2, 6, 2, 5, 1],
        ["r", 1, 10, 5, 8, 0],
        ["r", 2, 10, 5, 8, 5],
        ["r", 3, 10, 5, 8, 6],
    ]);
    assert_eq!(frames, expected);
}

#[test]
fn search_counts_each_sample_once() {
    let body = r#"const out = {};
        for (const q of ["x", "MAIN", "/^(a|b)$/", "/^A$/", "/^A$/i", "r", "nothing"]) {
            out[q] = api.matchedWeight(g, api.matchNames(g.names, api.compileQuery(q)));
        }
        out.empty = api.compileQuery("  ");
        try { api.compileQuery("/(/"); out.invalid = "accepted"; } catch (e) { out.invalid = "rejected"; }
        return out;"#;
    let Some(out) = run_node(&small_graph(), &Options::default(), body) else {
        return;
    };
    let expected = json!({"x": 6, "MAIN": 10, "/^(a|b)$/": 8, "/^A$/": 0, "/^A$/i": 6,
                          "r": 5, "nothing": 0, "empty": null, "invalid": "rejected"});
    assert_eq!(out, expected);
}

#[test]
fn narrow_frames_become_one_sliver_and_zoom_widens_them() {
    let mut g = FlameGraph::new();
    g.add(["main", "hot"], 100_000);
    for i in 0..1000 {
        g.add(["main", "cold", &format!("c{i}")], 1);
    }
    let body = r#"const find = (n) => { for (let i = 0; i < g.n; i++) if (name(i) === n) return i; };
        const show = (boxes) => boxes.map((b) => [b.frame < 0 ? "sliver" : name(b.frame), b.depth,
            Math.round(b.px), Math.round(b.pw), b.count, b.weight, b.ancestor]);
        return { full: show(api.layoutBoxes(g, 0, 1000, 1, null)),
                 zoomed: show(api.layoutBoxes(g, find("cold"), 1000, 1, null)).slice(0, 4) };"#;
    let Some(out) = run_node(&g, &Options::default(), body) else {
        return;
    };
    // At full width cold is 10 px and its children 0.01 px each: one sliver.
    assert_eq!(
        out["full"],
        json!([
            ["all", 0, 0, 1000, 1, 101000, false],
            ["main", 1, 0, 1000, 1, 101000, false],
            ["cold", 2, 0, 10, 1, 1000, false],
            ["hot", 2, 10, 990, 1, 100000, false],
            ["sliver", 3, 0, 10, 1000, 1000, false]
        ])
    );
    // Zoomed into cold, each child is a pixel wide and drawn on its own.
    assert_eq!(
        out["zoomed"],
        json!([
            ["all", 0, 0, 1000, 1, 101000, true],
            ["main", 1, 0, 1000, 1, 101000, true],
            ["cold", 2, 0, 1000, 1, 1000, false],
            ["c0", 3, 0, 1, 1, 1, false]
        ])
    );
}

#[test]
fn frames_merged_by_the_budget_still_nest_inside_their_parents() {
    let mut g = FlameGraph::new();
    for i in 0..3000u64 {
        g.add(
            ["main", &format!("m{}", i % 50), &format!("leaf{i}")],
            1 + i % 5,
        );
    }
    let options = Options {
        max_html_frames: 200,
        ..Options::default()
    };
    let body = r#"const bad = []; let merged = 0;
        for (let i = 1; i < g.n; i++) {
            const p = g.parent[i];
            if (g.name[i] < 0) merged++;
            if (g.x[i] < g.x[p] || g.x[i] + g.width[i] > g.x[p] + g.width[p] || g.depth[i] !== g.depth[p] + 1) bad.push(i);
        }
        return { n: g.n, bad: bad, merged: merged, total: g.total };"#;
    let Some(out) = run_node(&g, &options, body) else {
        return;
    };
    assert_eq!(out["bad"], json!([]), "{out}");
    assert!(out["merged"].as_u64().unwrap() > 0, "{out}");
    assert!(out["n"].as_u64().unwrap() <= 400, "{out}");
    assert_eq!(out["total"], g.total());
}

#[test]
fn labels_are_cut_by_characters_not_code_units() {
    let body = r#"return [api.fitLabel("😀😀😀😀😀😀", 5), api.fitLabel("short", 9), api.fitLabel("abcdefgh", 4),
                   api.formatCount(1234567), api.percent(1, 3)];"#;
    let Some(out) = run_node(&small_graph(), &Options::default(), body) else {
        return;
    };
    assert_eq!(out, json!(["😀😀😀..", "short", "", "1,234,567", "33.33%"]));
}
