// The thread timeline (JX's thread activity diagram), the lock view and the
// allocation view, over /api/jvms/{id}/timeline, /locks and /alloc (docs/EVENTS.md).
// Loaded after app.js and uses its helpers (api, $, cell, fillRows, svgEl).
"use strict";

window.jscopeEvents = (() => {
  const TL = { labelW: 180, laneH: 18, laneGap: 6, axisH: 26, minRangeNs: 1000, right: 12 };
  const STATES = ["running", "blocked", "waiting", "sleeping", "parked"];
  const st = { data: null, lanes: [], from: 0, to: 1, loaded: {}, drag: null, pending: false };

  function fmtNs(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e10 ? 1 : 3) + "s";
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e7 ? 1 : 3) + "ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e4 ? 1 : 3) + "us";
    return Math.round(ns) + "ns";
  }

  // The `last` window of a view: it ends where the JVM's data ends.
  function range(prefix) {
    const last = $("#" + prefix + "-range").value;
    return last ? { last } : {};
  }

  // ---- Timeline ----
  async function loadTimeline(jvm) {
    $("#tl-info").textContent = "loading...";
    const d = await api("jvms/" + encodeURIComponent(jvm) + "/timeline", range("tl"));
    st.data = d;
    st.lanes = d.lanes.map((l) => ({ id: l.id, name: l.name || "#" + l.id, spans: l.spans, intervals: l.intervals, events: [] }));
    const byId = new Map(st.lanes.map((l) => [l.id, l]));
    for (const e of d.events) {
      let lane = byId.get(e.thread);
      if (!lane) {
        // Process-wide events (JIT, frees, class unloads) share one lane on top.
        lane = { id: e.thread, name: e.thread ? "#" + e.thread : "JVM", spans: [], intervals: [], events: [] };
        byId.set(e.thread, lane);
        if (e.thread) st.lanes.push(lane); else st.lanes.unshift(lane);
      }
      lane.events.push(e);
    }
    fit();
  }

  function fit() {
    if (!st.data) return;
    st.from = st.data.from_ns;
    st.to = Math.max(st.data.to_ns, st.from + TL.minRangeNs);
    draw();
  }

  function plotWidth() {
    const host = $("#tl-graph");
    return Math.max(200, (host.clientWidth || 1200) - TL.labelW - TL.right);
  }

  function xOf(ns, w) {
    return TL.labelW + (ns - st.from) / (st.to - st.from) * w;
  }

  // A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks.
  function tickStep(range, n) {
    const raw = range / n;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  function drawAxis(svg, w) {
    const step = tickStep(st.to - st.from, Math.max(2, Math.floor(w / 110)));
    for (let t = Math.ceil(st.from / step) * step; t <= st.to; t += step) {
      const x = xOf(t, w);
      svgEl("line", { x1: x, x2: x, y1: TL.axisH - 6, y2: "100%", class: "tl-tick" }, svg);
      if (x > TL.labelW + w - 40) continue; // no room for the label
      svgEl("text", { x: x + 2, y: TL.axisH - 9, class: "tl-tick-label" }, svg).textContent = fmtTick(t, step);
    }
  }

  // A tick's time in the unit of the step, with as many decimals as the step needs,
  // so ticks a microsecond apart at 489 ms still read differently.
  function fmtTick(t, step) {
    const [scale, unit] = step >= 1e9 ? [1e9, "s"] : step >= 1e6 ? [1e6, "ms"] : [1e3, "us"];
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
    return (t / scale).toFixed(decimals) + unit;
  }

  function laneY(i) {
    return TL.axisH + i * (TL.laneH + TL.laneGap);
  }

  // Draws the spans inside the view, at most one per pixel column and state.
  function drawSpans(g, spans, y, h, w, cls, lane) {
    let lastX = -1, lastState = null;
    for (const s of spans) {
      if (s.end_ns < st.from || s.start_ns > st.to) continue;
      const x1 = Math.max(TL.labelW, xOf(s.start_ns, w));
      const x2 = Math.min(TL.labelW + w, xOf(s.end_ns, w));
      if (Math.floor(x1) === lastX && s.state === lastState && x2 - x1 < 1) continue;
      lastX = Math.floor(x1);
      lastState = s.state;
      const r = svgEl("rect", { x: x1, y, width: Math.max(0.75, x2 - x1), height: h, class: cls + " tl-" + s.state }, g);
      r.onclick = (ev) => { ev.stopPropagation(); details(spanDetails(lane, s, cls)); };
    }
  }

  function drawMarkers(g, lane, y, w) {
    const seen = new Set();
    for (const e of lane.events) {
      if (e.ns < st.from || e.ns > st.to) continue;
      const x = xOf(e.ns, w);
      const key = Math.round(x * 2) + e.type;
      if (seen.has(key)) continue;
      seen.add(key);
      const m = svgEl("path", { d: `M${x},${y} l-4,-6 h8 z`, class: "tl-marker tl-ev-" + e.type }, g);
      svgEl("title", {}, m).textContent = e.type + " " + (e.subject || "") + " at " + fmtNs(e.ns);
      m.onclick = (ev) => { ev.stopPropagation(); details(eventDetails(lane, e)); };
    }
  }

  function drawGc(svg, w, height) {
    for (const gc of st.data.gc) {
      const end = gc.start_ns + gc.duration_ns;
      if (end < st.from || gc.start_ns > st.to) continue;
      const x1 = Math.max(TL.labelW, xOf(gc.start_ns, w));
      const x2 = Math.min(TL.labelW + w, xOf(end, w));
      const r = svgEl("rect", { x: x1, y: TL.axisH - 4, width: Math.max(2, x2 - x1), height: height - TL.axisH + 4, class: "tl-gc" }, svg);
      svgEl("title", {}, r).textContent = gcText(gc);
      r.onclick = (ev) => { ev.stopPropagation(); details(gcDetails(gc, end)); };
    }
  }

  function draw() {
    st.pending = false;
    const host = $("#tl-graph");
    if (!st.data) return;
    const w = plotWidth();
    const height = laneY(st.lanes.length) + 8;
    const svg = svgEl("svg", { width: TL.labelW + w + TL.right, height, id: "tl-svg" });
    drawAxis(svg, w);
    st.lanes.forEach((lane, i) => {
      const y = laneY(i);
      const g = svgEl("g", { class: "tl-lane", "data-thread": lane.id }, svg);
      svgEl("rect", { x: TL.labelW, y, width: w, height: TL.laneH, class: "tl-lane-bg" }, g);
      const label = svgEl("text", { x: 4, y: y + TL.laneH - 5, class: "tl-lane-label" }, g);
      label.textContent = lane.name.length > 26 ? lane.name.slice(0, 25) + "\u2026" : lane.name;
      svgEl("title", {}, label).textContent = lane.name + " (#" + lane.id + ")";
      drawSpans(g, lane.spans, y + 3, TL.laneH - 6, w, "tl-span", lane);
      drawSpans(g, lane.intervals, y, TL.laneH, w, "tl-interval", lane);
      drawMarkers(g, lane, y + 6, w);
    });
    drawGc(svg, w, height);
    host.replaceChildren(svg);
    const d = st.data;
    $("#tl-info").textContent = st.lanes.length + " threads, " + d.gc.length + " GCs, " + d.events.length + " events" +
      (d.events_left_out ? " (" + d.events_left_out + " left out)" : "") + "; showing " + fmtNs(st.from) + " to " +
      fmtNs(st.to) + " (" + fmtNs(st.to - st.from) + ")";
  }

  function redraw() {
    if (st.pending) return;
    st.pending = true;
    requestAnimationFrame(draw);
  }

  // Wheel zooms around the pointer, down to a 1 us wide view.
  function onWheel(ev) {
    if (!st.data) return;
    ev.preventDefault();
    const w = plotWidth();
    const rect = $("#tl-graph").getBoundingClientRect();
    const px = Math.min(Math.max(ev.clientX - rect.left + $("#tl-graph").scrollLeft - TL.labelW, 0), w);
    const at = st.from + px / w * (st.to - st.from);
    const factor = Math.exp(ev.deltaY * 0.0015);
    const total = Math.max(st.data.to_ns - st.data.from_ns, TL.minRangeNs);
    const range = Math.min(Math.max((st.to - st.from) * factor, TL.minRangeNs), total * 4);
    st.from = at - px / w * range;
    st.to = st.from + range;
    redraw();
  }

  function onDown(ev) {
    st.drag = { x: ev.clientX, from: st.from, to: st.to, moved: false };
  }

  function onMove(ev) {
    if (!st.drag) return;
    const dx = ev.clientX - st.drag.x;
    if (Math.abs(dx) > 2) st.drag.moved = true;
    const shift = dx / plotWidth() * (st.drag.to - st.drag.from);
    st.from = st.drag.from - shift;
    st.to = st.drag.to - shift;
    if (st.drag.moved) redraw();
  }

  function onUp() {
    st.drag = null;
  }

  // Zoom by a factor around the middle (buttons, and tests without a wheel).
  function zoom(factor) {
    if (!st.data) return;
    const mid = (st.from + st.to) / 2;
    const range = Math.max((st.to - st.from) * factor, TL.minRangeNs);
    st.from = mid - range / 2;
    st.to = mid + range / 2;
    draw();
  }

  function details(rows) {
    fillRows($("#tl-details tbody"), rows, (tr, r) => {
      cell(tr, r[0]);
      cell(tr, r[1]);
    });
  }

  function spanDetails(lane, s, cls) {
    return [["thread", lane.name + " (#" + lane.id + ")"], ["state", s.state + (cls === "tl-interval" ? " (event)" : " (sampled)")],
      ["start", fmtNs(s.start_ns)], ["duration", fmtNs(s.end_ns - s.start_ns)]];
  }

  function eventDetails(lane, e) {
    const rows = [["event", e.type + (e.user_kind ? " (" + e.user_kind + ")" : "")], ["thread", lane.name], ["time", fmtNs(e.ns)]];
    if (e.subject) rows.push(["subject", e.subject]);
    if (e.duration_ns) rows.push(["duration", fmtNs(e.duration_ns)]);
    if (e.value) rows.push(["value", e.value]);
    if (e.timed_out !== undefined) rows.push(["timed out", e.timed_out]);
    (e.stack || []).forEach((f, i) => rows.push([i ? "" : "stack", f]));
    return rows;
  }

  function legend() {
    const box = $("#tl-legend");
    box.replaceChildren(...STATES.map((s) => {
      const span = document.createElement("span");
      span.className = "tl-key tl-" + s;
      span.textContent = s;
      return span;
    }), Object.assign(document.createElement("span"), { className: "tl-key tl-gc-key", textContent: "GC" }));
  }

  // ---- Why a view is empty ----
  function has(events, kind) {
    return events.split(/[+,]/).some((k) => k === kind || (k === "all" && kind !== "park"));
  }

  function locksHint(events) {
    const missing = ["monitors", "waits", "park"].filter((k) => !has(events, k));
    if (missing.length === 3) {
      return "This JVM recorded no monitor, wait or park events: record with --events monitors,waits,park (agent option events=monitors+waits+park).";
    }
    if (missing.length) {
      return "No lock events in this range. This JVM did not record " + missing.join(", ") + ": add --events " + missing.join(",") + " to record them.";
    }
    return "No contended monitors, waits or parks in this range.";
  }

  function allocHint(allocRows, ageRows, events, objectAges) {
    if (!allocRows && !has(events, "alloc") && !objectAges) {
      return "This JVM recorded no allocations: record with --events alloc (and --object-ages for object ages).";
    }
    if (!allocRows) return "No sampled allocations in this range.";
    if (!ageRows && !objectAges) return "No object ages: record with --object-ages (agent option objectages).";
    return "";
  }

  // GC bars' hover text and details: the pause, and when the JVM's GC
  // notification was recorded its cause, collector, generation and heap.
  function gcText(gc) {
    let t = (gc.concurrent ? "GC cycle " : "GC ") + fmtNs(gc.duration_ns) + " at " + fmtNs(gc.start_ns);
    if (gc.cause) t += "\n" + gc.collector + ": " + gc.cause + (gc.generation ? " (" + gc.generation + ")" : "");
    if (gc.heap_before) t += "\nheap " + fmtBytes(gc.heap_before) + " \u2192 " + fmtBytes(gc.heap_after || 0);
    return t;
  }

  function gcDetails(gc, end) {
    const rows = [[gc.concurrent ? "GC cycle (concurrent)" : "GC pause", fmtNs(gc.duration_ns)], ["start", fmtNs(gc.start_ns)], ["end", fmtNs(end)]];
    if (gc.cause) rows.push(["cause", gc.cause], ["collector", gc.collector]);
    if (gc.generation) rows.push(["generation", gc.generation]);
    if (gc.heap_before) rows.push(["heap before", fmtBytes(gc.heap_before)], ["heap after", fmtBytes(gc.heap_after || 0)]);
    return rows;
  }

  // ---- Lock view ----
  function siteText(sites) {
    return sites && sites.length ? sites[0].stack.join(" \u2190 ") : "";
  }

  async function loadLocks(jvm) {
    const r = await api("jvms/" + encodeURIComponent(jvm) + "/locks", range("locks"));
    const rows = [
      ...r.monitors.map((m) => ({ kind: "monitor", who: m.class, count: m.count, total: m.total_ns, max: m.max_ns, extra: m.objects + " objects", sites: m.sites })),
      ...r.waits.map((w) => ({ kind: "wait", who: w.class, count: w.count, total: w.total_ns, max: w.max_ns, extra: w.timed_out + " of " + w.with_timeout + " timed out", sites: w.sites })),
      ...r.parks.map((p) => ({ kind: "park", who: p.blocker || "(no blocker)", count: p.count, total: p.total_ns, max: p.max_ns, extra: "", sites: p.sites })),
    ];
    $("#locks-info").textContent = r.monitors.length + " contended monitor classes, " + r.waits.length + " waited on, " + r.parks.length + " park blockers";
    $("#locks-hint").textContent = rows.length ? "" : locksHint(r.recorded_events || "");
    fillRows($("#locks tbody"), rows, (tr, x) => {
      cell(tr, x.kind);
      cell(tr, x.who);
      cell(tr, x.count, "num");
      cell(tr, fmtNs(x.total), "num");
      cell(tr, fmtNs(x.max), "num");
      cell(tr, x.extra);
      cell(tr, siteText(x.sites), "site");
      tr.onclick = () => fillRows($("#lock-sites tbody"), x.sites, (t2, s) => {
        cell(t2, s.count, "num");
        cell(t2, fmtNs(s.total_ns), "num");
        cell(t2, s.stack.join(" \u2190 "));
      });
    });
  }

  // ---- Allocation view ----
  function fmtBytes(v) {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : String(v)) + " " + units[i];
  }

  async function loadAlloc(jvm) {
    const r = await api("jvms/" + encodeURIComponent(jvm) + "/alloc", { by: $("#alloc-by").value, ...range("alloc") });
    const a = r.alloc;
    $("#alloc-info").textContent = "about " + fmtBytes(a.est_bytes) + " in " + a.est_objects + " objects allocated (" + a.count + " samples of " + a.bytes + " bytes); " + r.ages.freed + " tracked objects freed, " + r.ages.live + " not";
    $("#alloc-hint").textContent = allocHint(a.rows.length, r.ages.rows.length, r.recorded_events || "", r.object_ages);
    const where = (x) => x.stack && x.stack.length ? x.stack.join(" \u2190 ") : x.key;
    fillRows($("#alloc tbody"), a.rows, (tr, x) => {
      cell(tr, fmtBytes(x.est_bytes), "num");
      cell(tr, x.est_objects, "num");
      cell(tr, x.percent.toFixed(2), "num");
      cell(tr, x.count, "num");
      cell(tr, x.bytes, "num");
      cell(tr, where(x));
      cell(tr, x.top_class || "");
    });
    fillRows($("#alloc-live tbody"), r.live ? r.live.rows : [], (tr, x) => {
      cell(tr, fmtBytes(x.est_bytes), "num");
      cell(tr, x.count, "num");
      cell(tr, where(x));
      cell(tr, x.top_class || "");
    });
    fillRows($("#ages tbody"), r.ages.rows, (tr, x) => {
      cell(tr, x.class);
      cell(tr, x.freed, "num");
      cell(tr, x.live, "num");
      cell(tr, x.p50_ns === null ? "" : fmtNs(x.p50_ns), "num");
      cell(tr, x.max_ns === null ? "" : fmtNs(x.max_ns), "num");
      cell(tr, x.p50_bytes === null ? "" : x.p50_bytes, "num");
      cell(tr, x.by_ns.map((n, i) => n ? r.ages.ns_buckets[i].label + ":" + n : "").filter(Boolean).join(" "));
    });
  }

  // Called by app.js on every refresh; loads a view once per JVM (Reload reloads).
  async function refresh(tab, jvm) {
    if (!jvm) return;
    const loaders = { timeline: loadTimeline, locks: loadLocks, alloc: loadAlloc };
    if (!loaders[tab] || st.loaded[tab] === jvm) return;
    st.loaded[tab] = jvm;
    try {
      await loaders[tab](jvm);
    } catch (e) {
      st.loaded[tab] = null;
      throw e;
    }
  }

  function reload(tab) {
    st.loaded[tab] = null;
    refresh(tab, ui.jvm).catch((e) => status("error: " + e.message));
  }

  function init() {
    legend();
    const g = $("#tl-graph");
    g.addEventListener("wheel", onWheel, { passive: false });
    g.addEventListener("mousedown", onDown);
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", onUp);
    $("#tl-fit").onclick = fit;
    $("#tl-in").onclick = () => zoom(0.5);
    $("#tl-out").onclick = () => zoom(2);
    $("#tl-reload").onclick = () => reload("timeline");
    $("#locks-reload").onclick = () => reload("locks");
    $("#alloc-by").onchange = () => reload("alloc");
    $("#tl-range").onchange = () => reload("timeline");
    $("#locks-range").onchange = () => reload("locks");
    $("#alloc-range").onchange = () => reload("alloc");
    window.addEventListener("resize", redraw);
  }

  init();
  return { refresh, zoom, fit, state: st, fmtNs };
})();
