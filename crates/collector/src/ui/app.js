// The collector's web UI: plain DOM code over the JSON API (docs/API.md), no build step.
// View state lives in the URL hash (#tab=threads&jvm=ID&thread=3) so views can be linked.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const ui = { tab: "jvms", jvm: null, thread: null, paused: false, jvms: [] };

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
async function loadJvms() {
  ui.jvms = await api("jvms");
  fillRows($("#jvms tbody"), ui.jvms, (tr, j) => {
    tr.className = j.status + (j.id === ui.jvm ? " selected" : "");
    tr.dataset.id = j.id;
    cell(tr, j.pid, "num");
    cell(tr, j.command_line, "cmd").title = j.command_line;
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
  if (!ui.jvm && ui.jvms.length) selectJvm(ui.jvms[0].id);
  status(ui.jvms.filter((j) => j.status === "connected").length + " connected, " + ui.jvms.length + " known");
}

function fillJvmPickers() {
  document.querySelectorAll(".jvm-select").forEach((sel) => {
    const keep = ui.jvm;
    sel.replaceChildren(...ui.jvms.map((j) => new Option(j.pid + " " + j.command_line.slice(0, 40) + " (" + j.status + ")", j.id)));
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
      l.append(i, " " + j.pid);
      l.title = j.command_line;
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
    cell(tr, t.java_id, "num");
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

function drawFlame() {
  const q = rangeQuery("flame");
  for (const [k, id] of [["thread", "#flame-thread"], ["state", "#flame-state"], ["mode", "#flame-mode"]]) {
    const v = $(id).value.trim();
    if (v) q.set(k, v);
  }
  q.set("format", "html");
  if (token) q.set("token", token);
  $("#flame-frame").src = "api/flame?" + q.toString();
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
  if (graph.nodes.length) focusNode(0);
}

function focusNode(i) {
  $("#cg-focus").textContent = graph.nodes[i].label;
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
  } catch (e) {
    status("error: " + e.message);
  }
}

function start() {
  loadHash();
  document.querySelectorAll("#tabs button").forEach((b) => (b.onclick = () => showTab(b.dataset.tab)));
  document.querySelectorAll(".jvm-select").forEach((s) => (s.onchange = () => { selectJvm(s.value); refresh(); }));
  $("#pause").onclick = togglePause;
  $("#flame-go").onclick = drawFlame;
  $("#cg-go").onclick = () => buildCallGraph().catch((e) => status("error: " + e.message));
  $("#hot-mode").onchange = loadHot;
  showTab(ui.tab);
  setInterval(refresh, 1000);
}

start();
