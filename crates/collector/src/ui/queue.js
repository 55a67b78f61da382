// The Queue view of the collector's UI: a queue replayed from one JVM's stored exact
// trace (GET api/jvms/ID/queue, what `jscope queue` runs): the queue length over time
// as a step chart, each request's time in queue and service time against its arrival,
// and the summary (arrival rate, utilisation, waits, Little's law, Erlang C).
// Hash keys: tab=queue&jvm=ID&queue=SPEC&task=CLASS#METHOD&workers=N.
"use strict";

window.jscopeQueue = (() => {
  const token = new URLSearchParams(location.search).get("token");
  const $ = (sel) => document.querySelector(sel);
  const SVG = "http://www.w3.org/2000/svg";

  const style = document.createElement("style");
  style.textContent = `
    .q-main { display: grid; grid-template-columns: minmax(320px, 30%) minmax(0, 1fr); gap: 10px; align-items: start; }
    #q-summary td.num { text-align: right; font-variant-numeric: tabular-nums; }
    .q-charts { display: grid; grid-template-columns: 1fr; gap: 6px; }
    .q-chart { border: 1px solid #ddd; background: #fff; width: 100%; height: auto; display: block; }
    .q-chart text { font: 11px sans-serif; fill: #555; }
    #q-length-line { fill: none; stroke: #1565c0; stroke-width: 1.2; }
    .q-axis { stroke: #999; stroke-width: 1; }
    .q-wait { fill: #c62828; } .q-service { fill: #2e7d32; }
    .q-key { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
    #q-info { color: #555; }`;
  document.head.append(style);

  function url(path, params) {
    const q = new URLSearchParams(params || {});
    if (token) q.set("token", token);
    return "api/" + path + "?" + q.toString();
  }

  function ms(ns) {
    if (ns === null || ns === undefined) return "";
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    return (ns / 1e3).toFixed(1) + " µs";
  }

  function el(name, attrs, text) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // ---- Summary ----
  function summaryRows(s) {
    const e = s.erlang_c;
    const num = (x, d) => (x === null || x === undefined ? "" : x.toFixed(d));
    return [
      ["queue", "Queue", s.queue],
      ["enqueued", "Requests (enqueued / served / still queued)", `${s.enqueued} / ${s.served} / ${s.still_queued}`, s.enqueued],
      ["workers", "Workers (c)", s.workers, s.workers],
      ["window_ns", "Window", ms(s.window_ns), s.window_ns],
      ["arrival_rate", "Arrival rate λ", num(s.arrival_rate, 2) + " /s", s.arrival_rate],
      ["utilisation", "Utilisation ρ", s.utilisation === null ? "" : (100 * s.utilisation).toFixed(1) + "%", s.utilisation],
      ["mean_queue_ns", "Mean time in queue W", ms(s.mean_queue_ns), s.mean_queue_ns],
      ["p50_queue_ns", "Time in queue p50 / p90 / p99 / max",
        [s.p50_queue_ns, s.p90_queue_ns, s.p99_queue_ns, s.max_queue_ns].map(ms).join(" / "), s.p50_queue_ns],
      ["mean_service_ns", `Mean service time (to ${s.service_end})`, ms(s.mean_service_ns), s.mean_service_ns],
      ["cv", "Coefficient of variation: inter-arrival / service", `${num(s.interarrival_cv, 2)} / ${num(s.service_cv, 2)}`],
      ["mean_length", "Mean queue length L", num(s.mean_length, 3), s.mean_length],
      ["little_lambda_w", "Little's law λW (equals L)", num(s.little_lambda_w, 3), s.little_lambda_w],
      ["max_length", "Max queue length", s.max_length, s.max_length],
      ["erlang_c", "Erlang C (M/M/c): ρ, P(wait), mean wait",
        e ? `${num(e.rho, 3)}, ${num(e.p_wait, 3)}, ${ms(e.mean_queue_ns)}` : "not defined (ρ ≥ 1 or no service times)",
        e ? e.mean_queue_ns : null],
    ];
  }

  function showSummary(s) {
    $("#q-summary tbody").replaceChildren(...summaryRows(s).map(([field, name, text, value]) => {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.textContent = name;
      const td = document.createElement("td");
      td.textContent = String(text);
      td.className = "num";
      td.dataset.field = field;
      if (value !== null && value !== undefined) td.dataset.value = String(value);
      tr.append(th, td);
      return tr;
    }));
  }

  // ---- Charts ----
  const W = 900, H = 220, L = 70, R = 10, T = 10, B = 24;

  function axes(svg, t0, t1, ymax, yfmt) {
    const x = (t) => L + (W - L - R) * (t1 > t0 ? (t - t0) / (t1 - t0) : 0);
    const y = (v) => H - B - (H - B - T) * (ymax > 0 ? v / ymax : 0);
    svg.append(el("line", { class: "q-axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    svg.append(el("line", { class: "q-axis", x1: L, y1: T, x2: L, y2: H - B }));
    for (let i = 0; i <= 4; i++) {
      const t = t0 + (t1 - t0) * i / 4;
      svg.append(el("text", { x: x(t), y: H - 6, "text-anchor": "middle" }, ((t - t0) / 1e9).toFixed(2) + " s"));
      const v = ymax * i / 4;
      svg.append(el("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, yfmt(v)));
    }
    return { x, y };
  }

  // The length series as a step chart: each point holds until the next.
  function drawLength(points, summary) {
    const svg = $("#q-length");
    svg.replaceChildren();
    if (!points.length) return;
    const t0 = points[0].t_ns, t1 = Math.max(points[points.length - 1].t_ns, t0 + 1);
    // Whole-number ticks: the axis goes up to the next multiple of 4.
    const ymax = 4 * Math.ceil(Math.max(1, ...points.map((p) => p.length)) / 4);
    const { x, y } = axes(svg, t0, t1, ymax, (v) => String(v));
    let d = `M${x(points[0].t_ns).toFixed(1)} ${y(points[0].length).toFixed(1)}`;
    for (const p of points.slice(1)) d += ` H${x(p.t_ns).toFixed(1)} V${y(p.length).toFixed(1)}`;
    const line = el("path", { id: "q-length-line", d });
    line.dataset.points = String(points.length);
    line.dataset.max = String(Math.max(...points.map((p) => p.length)));
    svg.append(line);
    const mean = el("line", { class: "q-axis", x1: L, x2: W - R, y1: y(summary.mean_length), y2: y(summary.mean_length), "stroke-dasharray": "4 3" });
    mean.append(el("title", {}, "mean length L = " + summary.mean_length.toFixed(3)));
    svg.append(mean);
    svg.append(el("text", { x: W - R, y: T + 10, "text-anchor": "end" }, "queue length (dashed: mean L)"));
  }

  // Per request, against its arrival: time in queue (red) and service time (green).
  function drawRequests(requests) {
    const svg = $("#q-requests");
    svg.replaceChildren();
    const done = requests.filter((r) => r.queue_ns !== null);
    if (!done.length) return;
    const t0 = Math.min(...done.map((r) => r.enqueue_ns));
    const t1 = Math.max(t0 + 1, ...done.map((r) => r.enqueue_ns));
    const ymax = Math.max(1, ...done.map((r) => Math.max(r.queue_ns, r.service_ns || 0)));
    // Ticks in the unit of the largest time.
    const [unit, div] = ymax >= 1e9 ? ["s", 1e9] : ymax >= 1e6 ? ["ms", 1e6] : ["µs", 1e3];
    const { x, y } = axes(svg, t0, t1, ymax, (v) => (v / div).toFixed(ymax / div >= 10 ? 0 : 1) + " " + unit);
    const dots = el("g", { id: "q-dots" });
    for (const r of done) {
      const cx = x(r.enqueue_ns).toFixed(1);
      const w = el("circle", { class: "q-wait", cx, cy: y(r.queue_ns).toFixed(1), r: 1.8 });
      w.append(el("title", {}, `request ${r.id}: ${ms(r.queue_ns)} in queue`));
      dots.append(w);
      if (r.service_ns !== null) {
        const s = el("circle", { class: "q-service", cx, cy: y(r.service_ns).toFixed(1), r: 1.5 });
        s.append(el("title", {}, `request ${r.id}: ${ms(r.service_ns)} service`));
        dots.append(s);
      }
    }
    svg.append(dots);
  }

  // ---- Loading ----
  let loadedFor = null;

  function params() {
    const p = {};
    for (const [key, id] of [["queue", "#q-queue"], ["task", "#q-task"], ["workers", "#q-workers"]]) {
      const v = $(id).value.trim();
      if (v) p[key] = v;
    }
    return p;
  }

  async function load(jvm) {
    if (!jvm) return;
    loadedFor = jvm;
    document.body.dataset.queueReady = "false";
    $("#q-error").textContent = "";
    try {
      const r = await fetch(url("jvms/" + encodeURIComponent(jvm) + "/queue", params()));
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || r.statusText);
      showSummary(body.summary);
      drawLength(body.length, body.summary);
      drawRequests(body.requests);
      $("#q-info").textContent = `${body.requests_total} requests` +
        (body.requests.length < body.requests_total ? ` (the first ${body.requests.length} drawn)` : "") +
        `, ${body.length_total} length changes` +
        (body.length.length < body.length_total ? ` (${body.length.length} points drawn)` : "");
    } catch (e) {
      $("#q-error").textContent = e.message;
      $("#q-summary tbody").replaceChildren();
      $("#q-length").replaceChildren();
      $("#q-requests").replaceChildren();
      $("#q-info").textContent = "";
    }
    document.body.dataset.queueReady = "true";
  }

  function start() {
    const h = window.jscopeStartHash || new URLSearchParams(location.hash.slice(1));
    for (const key of ["queue", "task", "workers"]) if (h.get(key)) $("#q-" + key).value = h.get(key);
    $("#q-go").onclick = () => load($("#q-jvm").value);
  }

  // Called by app.js on each refresh: loads the chosen JVM's queue once.
  async function refresh(tab, jvm) {
    if (tab === "queue" && jvm && loadedFor !== jvm) await load(jvm);
  }

  start();
  return { refresh, load };
})();
