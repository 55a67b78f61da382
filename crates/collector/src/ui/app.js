// The collector's web UI: plain DOM code over the JSON API (docs/API.md), no build step.
// View state lives in the URL hash (#tab=threads&jvm=ID&thread=3) so views can be linked.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const ui = { tab: "jvms", jvm: null, thread: null, paused: false, jvms: [] };
// The hash as the page was opened: the other views' scripts read their own keys
// from it (saveHash keeps only the tab, JVM and thread).
window.jscopeStartHash = new URLSearchParams(location.hash.slice(1));

function apiUrl(path, params) {
  const q = new URLSearchParams(params || {});
  if (token) q.set("token", token);
  const s = q.toString();
  return "api/" + path + (s ? "?" + s : "");
}

async function api(path, params) {
  const r = await fetch(apiUrl(path, params));
  if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
  return r.json();
}

const $ = (sel) => document.querySelector(sel);

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function fillRows(tbody, rows, build) {
  tbody.replaceChildren(...rows.map((r) => {
    const tr = document.createElement("tr");
    build(tr, r);
    return tr;
  }));
}

function when(ms) {
  return ms ? new Date(ms).toLocaleString() : "";
}

function status(text) {
  $("#status").textContent = text;
}

function saveHash() {
  const h = new URLSearchParams({ tab: ui.tab });
  if (ui.jvm) h.set("jvm", ui.jvm);
  if (ui.thread !== null) h.set("thread", ui.thread);
  history.replaceState(null, "", "#" + h.toString());
}

function loadHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  ui.tab = h.get("tab") || "jvms";
  ui.jvm = h.get("jvm");
  ui.thread = h.has("thread") ? Number(h.get("thread")) : null;
  // `pause=1` freezes the threads view after its first load (for linking a moment).
  ui.pauseAfterLoad = h.get("pause") === "1";
}

function showTab(name) {
  ui.tab = name;
  document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".tab").forEach((s) => s.classList.toggle("active", s.id === "tab-" + name));
  saveHash();
  refresh();
}

function selectJvm(id) {
  ui.jvm = id;
  ui.thread = null;
  document.querySelectorAll(".jvm-select").forEach((s) => (s.value = id));
  saveHash();
}

// ---- JVM list ----
// What a JVM runs, from its main class on (`com.acme.Main --port 8080`), not the
// launcher's options, which -agentpath makes long; the full line is the title.
function runs(j) {
  const cmd = j.command_line || "";
  if (!cmd) return [j.service, ...Object.entries(j.labels || {}).map(([k, v]) => k + "=" + v)].filter(Boolean).join(" "); // a push: service and labels
  if (!j.main_class) return cmd;
  const at = cmd.indexOf(" " + j.main_class);
  return at >= 0 ? cmd.slice(at + 1) : j.main_class;
}

function labelText(j) {
  return Object.entries(j.labels || {}).map(([k, v]) => k + "=" + v).join(" ");
}

// The list's filter: every word must match, `KEY=VALUE` a label exactly, other
// words the service, a label, the host or the command line in part.
function jvmMatches(j, filter) {
  return filter.split(/\s+/).filter(Boolean).every((w) => {
    const eq = w.indexOf("=");
    if (eq > 0) return (j.labels || {})[w.slice(0, eq)] === w.slice(eq + 1);
    const text = [j.service, labelText(j), j.host, j.command_line].join(" ").toLowerCase();
    return text.includes(w.toLowerCase());
  });
}

async function loadJvms() {
  ui.jvms = await api("jvms");
  const filter = $("#jvms-filter").value.trim();
  const listed = ui.jvms.filter((j) => jvmMatches(j, filter));
  $("#jvms-info").textContent = filter ? listed.length + " of " + ui.jvms.length + " JVMs" : "";
  fillRows($("#jvms tbody"), listed, (tr, j) => {
    tr.className = j.status + (j.id === ui.jvm ? " selected" : "");
    tr.dataset.id = j.id;
    cell(tr, j.pid, "num");
    cell(tr, runs(j), "cmd").title = j.command_line;
    cell(tr, j.service, "service");
    cell(tr, labelText(j), "labels");
    cell(tr, j.host ? j.host + "/" + j.address : j.address);
    cell(tr, j.vm);
    cell(tr, j.os);
    cell(tr, when(j.connected_since_ms));
    cell(tr, j.samples_per_second.toFixed(1), "num");
    cell(tr, j.drops, "num");
    cell(tr, j.status, "status");
    tr.onclick = () => { selectJvm(j.id); showTab("threads"); };
  });
  fillJvmPickers();
  fillServicePickers();
  fillDistJvms();
  updateJfrLink();
  if (!ui.jvm && ui.jvms.length) selectJvm(ui.jvms[0].id);
  status(ui.jvms.filter((j) => j.status === "connected").length + " connected, " + ui.jvms.length + " known");
}

function fillServicePickers() {
  const services = [...new Set(ui.jvms.map((j) => j.service).filter(Boolean))].sort();
  document.querySelectorAll(".service-select").forEach((sel) => {
    const have = [...sel.options].slice(1).map((o) => o.value);
    if (have.join("\n") === services.join("\n")) return;
    const keep = sel.value;
    sel.replaceChildren(sel.options[0], ...services.map((s) => new Option(s, s)));
    sel.value = services.includes(keep) ? keep : "";
  });
}

function fillJvmPickers() {
  document.querySelectorAll(".jvm-select").forEach((sel) => {
    const keep = ui.jvm;
    sel.replaceChildren(...ui.jvms.map((j) => new Option(j.pid + " " + runs(j).slice(0, 40) + " (" + j.status + ")", j.id)));
    if (keep) sel.value = keep;
  });
  document.querySelectorAll(".jvm-checks").forEach((box) => {
    const checked = new Set([...box.querySelectorAll("input:checked")].map((i) => i.value));
    if (!checked.size && ui.jvm) checked.add(ui.jvm);
    box.replaceChildren(...ui.jvms.map((j) => {
      const l = document.createElement("label");
      const i = document.createElement("input");
      i.type = "checkbox";
      i.value = j.id;
      i.checked = checked.has(j.id);
      // A pushed profile has no pid or command: its service and labels name it.
      l.append(i, " " + (j.main_class ? j.pid + " " + j.main_class : runs(j) || j.id));
      l.title = j.command_line || j.id;
      return l;
    }));
  });
}

// ---- Live threads ----
async function loadThreads() {
  if (!ui.jvm || ui.paused) return;
  let view;
  try {
    view = await api("jvms/" + encodeURIComponent(ui.jvm) + "/threads");
  } catch (e) {
    $("#threads-info").textContent = e.message;
    $("#threads tbody").replaceChildren();
    $("#stack tbody").replaceChildren();
    return;
  }
  if (ui.paused) return; // paused while the request was in flight
  $("#threads-info").textContent = view.threads.length + " threads, snapshot at " + view.at_s.toFixed(1) + "s";
  if (ui.thread === null && view.threads.length) ui.thread = view.threads[0].id;
  fillRows($("#threads tbody"), view.threads, (tr, t) => {
    tr.dataset.id = t.id;
    if (t.id === ui.thread) tr.className = "selected";
    cell(tr, t.start_order, "num");
    // The recording's thread id, as `jscope threads` prints it; Java's own on hover.
    cell(tr, t.id, "num").title = "Java thread id " + t.java_id;
    cell(tr, t.name);
    cell(tr, t.parent);
    cell(tr, t.group);
    cell(tr, t.frames.length, "num");
    cell(tr, t.state + (t.suspended ? "+suspended" : "") + (t.interrupted ? "+interrupted" : ""));
    tr.onclick = () => { ui.thread = t.id; saveHash(); showStack(view); };
  });
  showStack(view);
  if (ui.pauseAfterLoad) {
    ui.pauseAfterLoad = false;
    togglePause();
  }
}

function showStack(view) {
  document.querySelectorAll("#threads tbody tr").forEach((tr) => tr.classList.toggle("selected", Number(tr.dataset.id) === ui.thread));
  const t = view.threads.find((x) => x.id === ui.thread);
  fillRows($("#stack tbody"), t ? t.frames : [], (tr, f) => {
    cell(tr, f.method);
    cell(tr, f.line || "", "num");
    cell(tr, f.position);
  });
}

function togglePause() {
  ui.paused = !ui.paused;
  const b = $("#pause");
  b.textContent = ui.paused ? "Resume" : "Pause";
  b.classList.toggle("paused", ui.paused);
  document.body.dataset.paused = ui.paused;
  if (!ui.paused) loadThreads();
}

// ---- Flame graph and call graph over stored data ----
function rangeQuery(prefix) {
  const q = new URLSearchParams();
  document.querySelectorAll("#" + prefix + "-jvms input:checked").forEach((i) => q.append("jvm", i.value));
  const last = $("#" + prefix + "-range").value;
  if (last) q.set("last", last);
  return q;
}

// The flame graph tab's selection: checked JVMs (or a service and labels), range,
// threads, state and mode.
function flameQuery() {
  const q = rangeQuery("flame");
  // A service or labels select the JVMs instead of the checked ones (all must match).
  const service = $("#flame-service").value;
  const labels = $("#flame-labels").value.trim().split(/\s+/).filter(Boolean);
  if (service || labels.length) {
    q.delete("jvm");
    if (service) q.set("service", service);
    labels.forEach((l) => q.append("label", l));
  }
  for (const [k, id] of [["thread", "#flame-thread"], ["state", "#flame-state"], ["mode", "#flame-mode"]]) {
    const v = $(id).value.trim();
    if (v) q.set(k, v);
  }
  return q;
}

function drawFlame() {
  const q = flameQuery();
  q.set("format", "html");
  if (token) q.set("token", token);
  $("#flame-frame").src = "api/flame?" + q.toString();
  updateJfrLink();
}

// The same selection as one JFR file, a chunk per JVM (api/jfr).
function updateJfrLink() {
  $("#flame-jfr").href = apiUrl("jfr", flameQuery());
}

let graph = null;
async function buildCallGraph() {
  const q = rangeQuery("cg");
  graph = await api("callgraph", q);
  const dot = new URLSearchParams(q);
  dot.set("format", "dot");
  $("#cg-dot").href = apiUrl("callgraph", dot);
  fillRows($("#cg-nodes tbody"), graph.nodes.slice(0, 500), (tr, n) => {
    cell(tr, n.total_samples, "num");
    cell(tr, n.self_samples, "num");
    cell(tr, n.label);
    tr.onclick = () => focusNode(graph.nodes.indexOf(n));
  });
  drawCallGraph(graph, Number($("#cg-max").value) || 40);
  if (graph.nodes.length) focusNode(0);
}

// ---- Call graph drawing: a layered SVG built from the JSON ----
const SVG_NS = "http://www.w3.org/2000/svg";
const CG = { rowGap: 90, nodeH: 38, gap: 18, margin: 20, minShare: 0.005, edgeMinShare: 0.001 };

function svgEl(name, attrs, parent) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (parent) parent.appendChild(el);
  return el;
}

// `pkg.Class.method` -> `Class.method`: the full name is in the tooltip. Native
// (`start_thread [libc.so.6]`) and kernel (`finish_task_switch.isra.0_[k]`) frames
// keep their whole name: their dots are not a package's.
function shortLabel(label) {
  if (/[\s\[]/.test(label)) return label;
  const parts = label.split(".");
  return parts.length > 2 ? parts.slice(-2).join(".") : label;
}

// The hottest `max` nodes above the share threshold (nodes come hottest first).
function keptNodes(g, max) {
  const keep = [];
  g.nodes.forEach((n, i) => {
    if (keep.length < max && g.total && n.total_samples / g.total >= CG.minShare) keep.push(i);
  });
  return keep;
}

// Layer of each kept node: breadth-first distance from the roots (kept nodes no kept
// node calls). Cycles unreachable from a root start again from their hottest node.
function assignLayers(kept, g) {
  const inKept = new Set(kept);
  const edges = g.edges.filter((e) => inKept.has(e.caller) && inKept.has(e.callee) && e.caller !== e.callee &&
    e.samples / g.total >= CG.edgeMinShare);
  const called = new Set(edges.map((e) => e.callee));
  const layer = new Map();
  let frontier = kept.filter((i) => !called.has(i));
  if (!frontier.length && kept.length) frontier = [kept[0]];
  frontier.forEach((i) => layer.set(i, 0));
  for (;;) {
    while (frontier.length) {
      const next = [];
      for (const i of frontier) {
        for (const e of edges) {
          if (e.caller === i && !layer.has(e.callee)) {
            layer.set(e.callee, layer.get(i) + 1);
            next.push(e.callee);
          }
        }
      }
      frontier = next;
    }
    const rest = kept.filter((i) => !layer.has(i));
    if (!rest.length) return { layer, edges };
    layer.set(rest[0], 0);
    frontier = [rest[0]];
  }
}

// x, y, width of each node: rows by layer, each row ordered by the mean x of the
// node's callers in the rows above (barycentre), then centred.
function placeNodes(kept, g, layer, edges) {
  const rows = [];
  kept.forEach((i) => (rows[layer.get(i)] = rows[layer.get(i)] || []).push(i));
  const pos = new Map();
  const width = (i) => Math.min(280, Math.max(160, shortLabel(g.nodes[i].label).length * 6.8 + 16)) +
    Math.round(120 * g.nodes[i].total_samples / g.total);
  rows.forEach((row, depth) => {
    const centre = (i) => {
      const xs = edges.filter((e) => e.callee === i && pos.has(e.caller)).map((e) => pos.get(e.caller).x + pos.get(e.caller).w / 2);
      return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity;
    };
    row.sort((a, b) => centre(a) - centre(b) || a - b);
    let x = 0;
    for (const i of row) {
      const w = width(i);
      pos.set(i, { x, y: CG.margin + depth * CG.rowGap, w });
      x += w + CG.gap;
    }
  });
  const rowWidth = (row) => row.reduce((s, i) => s + pos.get(i).w + CG.gap, -CG.gap);
  const total = Math.max(0, ...rows.map(rowWidth));
  rows.forEach((row) => {
    const shift = CG.margin + (total - rowWidth(row)) / 2;
    row.forEach((i) => (pos.get(i).x += shift));
  });
  return { pos, width: total + 2 * CG.margin + 80, height: rows.length * CG.rowGap + CG.margin };
}

// Yellow for little self time to red for the most.
function nodeColour(selfShare) {
  const t = Math.min(1, selfShare);
  return "hsl(" + Math.round(50 - 50 * t) + ", 90%, " + Math.round(88 - 30 * t) + "%)";
}

function pct(n, total) {
  return total ? (100 * n / total).toFixed(1) + "%" : "0%";
}

function drawEdge(svg, g, e, pos, layer) {
  const a = pos.get(e.caller), b = pos.get(e.callee);
  let d;
  if (layer.get(e.callee) > layer.get(e.caller)) {
    const x1 = a.x + a.w / 2, y1 = a.y + CG.nodeH, x2 = b.x + b.w / 2, y2 = b.y;
    d = `M${x1},${y1} C${x1},${y1 + 40} ${x2},${y2 - 40} ${x2},${y2}`;
  } else {
    // Back or sideways call (recursion through others): loop around on the right.
    const x1 = a.x + a.w, y1 = a.y + CG.nodeH / 2, x2 = b.x + b.w, y2 = b.y + CG.nodeH / 2;
    d = `M${x1},${y1} C${x1 + 70},${y1} ${x2 + 70},${y2} ${x2},${y2}`;
  }
  const share = e.samples / g.total;
  const path = svgEl("path", {
    d, class: "cg-edge", "stroke-width": (1 + 9 * share).toFixed(2), "marker-end": "url(#cg-arrow)",
    "data-caller": e.caller, "data-callee": e.callee,
  }, svg);
  svgEl("title", {}, path).textContent = g.nodes[e.caller].label + " \u2192 " + g.nodes[e.callee].label +
    ": " + e.samples + " samples (" + pct(e.samples, g.total) + ")";
}

function drawNode(svg, g, i, p) {
  const n = g.nodes[i];
  const box = svgEl("g", { class: "cg-node", "data-index": i, transform: `translate(${p.x},${p.y})` }, svg);
  svgEl("rect", {
    width: p.w, height: CG.nodeH, rx: 4, fill: nodeColour(n.self_samples / g.total),
    "stroke-width": (1 + 4 * n.total_samples / g.total).toFixed(2),
  }, box);
  const name = svgEl("text", { x: 6, y: 15, class: "cg-name" }, box);
  name.textContent = shortLabel(n.label);
  const figures = svgEl("text", { x: 6, y: 31, class: "cg-figures" }, box);
  figures.textContent = pct(n.total_samples, g.total) + " total, " + pct(n.self_samples, g.total) + " self";
  svgEl("title", {}, box).textContent = n.label + "\n" + n.total_samples + " samples total, " + n.self_samples + " self";
  box.onclick = () => focusNode(i);
}

function drawCallGraph(g, max) {
  const host = $("#cg-graph");
  const kept = keptNodes(g, max);
  if (!kept.length) {
    host.replaceChildren();
    host.textContent = "no samples in this range";
    return;
  }
  const { layer, edges } = assignLayers(kept, g);
  const { pos, width, height } = placeNodes(kept, g, layer, edges);
  const svg = svgEl("svg", { width, height, viewBox: `0 0 ${width} ${height}`, id: "cg-svg" });
  const marker = svgEl("marker", {
    id: "cg-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse",
  }, svgEl("defs", {}, svg));
  svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#546e7a" }, marker);
  edges.forEach((e) => drawEdge(svg, g, e, pos, layer));
  kept.forEach((i) => drawNode(svg, g, i, pos.get(i)));
  host.replaceChildren(svg);
  $("#cg-info").textContent = kept.length + " of " + g.nodes.length + " methods, " + edges.length + " calls, " + g.total + " samples";
}

function focusNode(i) {
  $("#cg-focus").textContent = graph.nodes[i].label;
  document.querySelectorAll("#cg-graph .cg-node").forEach((n) => n.classList.toggle("focus", Number(n.dataset.index) === i));
  document.querySelectorAll("#cg-graph .cg-edge").forEach((e) =>
    e.classList.toggle("focus", Number(e.dataset.caller) === i || Number(e.dataset.callee) === i));
  const side = (edges, pick) => edges.map((e) => ({ n: e.samples, label: graph.nodes[pick(e)].label, i: pick(e) }));
  const callers = side(graph.edges.filter((e) => e.callee === i), (e) => e.caller);
  const callees = side(graph.edges.filter((e) => e.caller === i), (e) => e.callee);
  for (const [sel, rows] of [["#cg-callers", callers], ["#cg-callees", callees]]) {
    fillRows($(sel + " tbody"), rows, (tr, r) => {
      cell(tr, r.n, "num");
      cell(tr, r.label);
      tr.onclick = () => focusNode(r.i);
    });
  }
}

// ---- Distributed: the merged execution tree across JVMs (distributed.js renders it) ----
const dist = { view: null, loaded: false, unchecked: new Set() };

// Every known JVM, checked unless the user unchecked it (new JVMs come checked).
function fillDistJvms() {
  const box = $("#dist-jvms");
  box.querySelectorAll("input").forEach((i) => (i.checked ? dist.unchecked.delete(i.value) : dist.unchecked.add(i.value)));
  box.replaceChildren(...ui.jvms.map((j) => {
    const l = document.createElement("label");
    const i = document.createElement("input");
    i.type = "checkbox";
    i.value = j.id;
    i.checked = !dist.unchecked.has(j.id);
    l.append(i, " " + j.pid);
    l.title = j.id + ": " + j.command_line;
    return l;
  }));
}

function distQuery() {
  const q = new URLSearchParams();
  const boxes = [...document.querySelectorAll("#dist-jvms input")];
  const picked = boxes.filter((i) => i.checked).map((i) => i.value);
  if (!picked.length) throw new Error("choose at least one JVM");
  if (picked.length < boxes.length) picked.forEach((id) => q.append("jvm", id));
  const range = $("#dist-range").value;
  if (range === "custom") {
    for (const [k, id] of [["from", "#dist-from"], ["to", "#dist-to"]]) {
      const v = $(id).value;
      if (v) q.set(k, String(new Date(v).getTime()));
    }
  } else if (range) {
    q.set("last", range);
  }
  return q;
}

async function loadDistributed() {
  dist.loaded = true;
  if (!dist.view) {
    dist.view = new window.jscopeDistributed.DistributedView({
      legend: $("#dist-legend tbody"), tree: $("#dist-tree tbody"), summary: $("#dist-summary"),
    });
  }
  $("#dist-error").textContent = "";
  document.body.dataset.distReady = "false";
  try {
    const tree = await api("distributed", distQuery());
    dist.view.render(tree);
    // No rows: the JVMs recorded no calls to link, not a failed merge.
    if (!tree.nodes.length) {
      $("#dist-summary").textContent += ": no traced or remote calls in these JVMs; record them with " +
        "jscope record --remote --trace 'com.acme.*' (the agent's remote and trace= options)";
    }
  } catch (e) {
    $("#dist-error").textContent = e.message;
  }
  document.body.dataset.distReady = "true";
}

// ---- Hot methods (running, per JVM) ----
async function loadHot() {
  if (!ui.jvm) return;
  const params = { limit: 200 };
  if ($("#hot-mode").value) params.mode = $("#hot-mode").value;
  const t = await api("jvms/" + encodeURIComponent(ui.jvm) + "/hot", params);
  $("#hot-info").textContent = t.samples + " samples (" + (t.mode || "none") + ")";
  fillRows($("#hot tbody"), t.methods, (tr, m) => {
    cell(tr, m.self_samples, "num");
    cell(tr, m.self_percent.toFixed(2), "num");
    cell(tr, m.total_samples, "num");
    cell(tr, m.total_percent.toFixed(2), "num");
    cell(tr, m.method);
  });
}

async function refresh() {
  try {
    await loadJvms();
    if (ui.tab === "threads") await loadThreads();
    if (ui.tab === "hot") await loadHot();
    if (ui.tab === "flame" && !$("#flame-frame").getAttribute("src") && ui.jvm) drawFlame();
    if (ui.tab === "callgraph" && !graph && ui.jvm) await buildCallGraph();
    if (ui.tab === "distributed" && !dist.loaded && ui.jvms.length) await loadDistributed();
    if (window.jscopeEvents) await window.jscopeEvents.refresh(ui.tab, ui.jvm);
    if (window.jscopeTree) await window.jscopeTree.refresh(ui.tab, ui.jvm);
    if (window.jscopeCompare) await window.jscopeCompare.refresh(ui.tab, ui.jvm, ui.jvms);
    if (window.jscopeQueue) await window.jscopeQueue.refresh(ui.tab, ui.jvm);
    if (window.jscopeRequests) await window.jscopeRequests.refresh(ui.tab);
    if (window.jscopeExplore) await window.jscopeExplore.refresh(ui.tab);
  } catch (e) {
    status("error: " + e.message);
  }
}

// A flame graph's widest frames are at its bottom, by its root: when a deep stack
// makes the page taller than its frame, show the bottom rather than an empty top.
function showFlameRoots(frame) {
  frame.addEventListener("load", () => {
    const doc = frame.contentDocument;
    if (doc && doc.documentElement) frame.contentWindow.scrollTo(0, doc.documentElement.scrollHeight);
  });
}

function start() {
  loadHash();
  ["#flame-frame", "#diff-frame", "#ex-frame"].forEach((id) => showFlameRoots($(id)));
  document.querySelectorAll("#tabs button").forEach((b) => (b.onclick = () => showTab(b.dataset.tab)));
  document.querySelectorAll(".jvm-select").forEach((s) => (s.onchange = () => { selectJvm(s.value); refresh(); }));
  $("#pause").onclick = togglePause;
  $("#jvms-filter").oninput = () => loadJvms().catch((e) => status("error: " + e.message));
  $("#flame-go").onclick = drawFlame;
  $("#tab-flame .bar").addEventListener("change", updateJfrLink);
  updateJfrLink();
  $("#cg-go").onclick = () => buildCallGraph().catch((e) => status("error: " + e.message));
  $("#cg-max").onchange = () => graph && drawCallGraph(graph, Number($("#cg-max").value) || 40);
  $("#hot-mode").onchange = loadHot;
  $("#dist-go").onclick = loadDistributed;
  $("#dist-expand").onclick = () => dist.view && dist.view.setAll(true);
  $("#dist-collapse").onclick = () => dist.view && dist.view.setAll(false);
  $("#dist-range").onchange = () =>
    document.querySelectorAll(".dist-custom").forEach((l) => l.classList.toggle("shown", $("#dist-range").value === "custom"));
  showTab(ui.tab);
  setInterval(refresh, 1000);
}

start();
