// The Requests view of the collector's UI: the requests the JVMs served
// (GET api/requests, what `jscope requests` lists), a latency heatmap (x: when a
// request began, in time buckets; y: its duration, in buckets on a log scale, four a
// decade; colour: how many), a drag over its cells selecting the requests in them
// and drawing the flame graph of their samples (api/flame?request=...), and a
// request's tree of parts across JVMs, each part with a flame graph of its own.
// Hash keys: tab=requests&latency=DURATION.
"use strict";

window.jscopeRequests = (() => {
  const token = new URLSearchParams(location.search).get("token");
  const $ = (sel) => document.querySelector(sel);
  const SVG = "http://www.w3.org/2000/svg";
  const COLS = 40, PER_DECADE = 4;
  const W = 900, H = 260, L = 70, R = 10, T = 8, B = 22;

  const style = document.createElement("style");
  style.textContent = `
    #rq-heat { border: 1px solid #ddd; background: #fff; width: 100%; max-width: 900px; height: auto; display: block; user-select: none; }
    #rq-heat text { font: 11px sans-serif; fill: #555; }
    #rq-heat rect.rq-cell { stroke: #fff; stroke-width: 0.5; cursor: crosshair; }
    #rq-heat rect.rq-cell.sel { stroke: #1565c0; stroke-width: 1.5; }
    .rq-main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 10px; align-items: start; }
    #rq-tree li { cursor: pointer; } #rq-tree li.chosen > span { background: #ffe0b2; }
    #rq-frame { width: 100%; height: 60vh; border: 1px solid #ddd; }
    #rq-table-wrap { max-height: 40vh; overflow: auto; }`;
  document.head.append(style);

  function url(path, params) {
    const q = new URLSearchParams(params || {});
    if (token) q.set("token", token);
    return "api/" + path + "?" + q.toString();
  }

  function ms(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
    return (ns / 1e3).toFixed(1) + " µs";
  }

  function el(name, attrs, text) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  let data = null; // the last answer of api/requests
  let grid = null; // { tEdges (ms), lEdges (ns), cell: [[col, row] per request] }
  let chosenTrace = null;

  // Bucket edges: COLS equal time buckets over the requests' starts (ms since the
  // epoch), and latency edges from the power of ten below the shortest request, four
  // a decade, up past the longest. A request is in [edge, next edge); the last time
  // bucket holds its end too.
  function buckets(rows) {
    const starts = rows.map((r) => r.start_ns / 1e6);
    const t0 = Math.min(...starts), t1 = Math.max(...starts);
    const dt = t1 > t0 ? (t1 - t0) / COLS : 1;
    const tEdges = [];
    for (let i = 0; i <= COLS; i++) tEdges.push(i === COLS ? t1 : t0 + i * dt);
    const d0 = Math.max(1, Math.min(...rows.map((r) => r.duration_ns)));
    const d1 = Math.max(...rows.map((r) => r.duration_ns));
    const lo = Math.pow(10, Math.floor(Math.log10(d0)));
    const lEdges = [];
    for (let i = 0; ; i++) {
      const e = Math.round(lo * Math.pow(10, i / PER_DECADE));
      lEdges.push(e);
      if (e > d1) break;
    }
    const col = (t) => {
      for (let c = COLS - 1; c >= 0; c--) if (t >= tEdges[c]) return c;
      return 0;
    };
    const row = (d) => {
      for (let r = lEdges.length - 2; r >= 0; r--) if (d >= lEdges[r]) return r;
      return 0;
    };
    const cell = rows.map((r) => [col(r.start_ns / 1e6), row(r.duration_ns)]);
    return { tEdges, lEdges, cell };
  }

  function drawHeatmap() {
    const svg = $("#rq-heat");
    svg.replaceChildren();
    const rows = data.requests;
    if (!rows.length) return;
    grid = buckets(rows);
    svg.dataset.tEdges = JSON.stringify(grid.tEdges);
    svg.dataset.lEdges = JSON.stringify(grid.lEdges);
    const nRows = grid.lEdges.length - 1;
    const counts = Array.from({ length: COLS }, () => new Array(nRows).fill(0));
    for (const [c, r] of grid.cell) counts[c][r]++;
    const max = Math.max(...counts.flat());
    const cw = (W - L - R) / COLS, ch = (H - T - B) / nRows;
    for (let c = 0; c < COLS; c++) {
      for (let r = 0; r < nRows; r++) {
        const n = counts[c][r];
        // White to deep red by count, on a square-root scale so single requests show.
        const k = n ? 0.15 + 0.85 * Math.sqrt(n / max) : 0;
        const fill = n ? `rgb(${255 - Math.round(55 * k)},${Math.round(235 * (1 - k))},${Math.round(200 * (1 - k))})` : "#f7f7f7";
        const rect = el("rect", { class: "rq-cell", x: (L + c * cw).toFixed(1), y: (H - B - (r + 1) * ch).toFixed(1),
          width: cw.toFixed(1), height: ch.toFixed(1), fill });
        rect.dataset.col = String(c);
        rect.dataset.row = String(r);
        rect.dataset.count = String(n);
        rect.append(el("title", {}, `${n} requests, ${ms(grid.lEdges[r])} to ${ms(grid.lEdges[r + 1])}`));
        svg.append(rect);
      }
    }
    for (let r = 0; r <= nRows; r += 2) {
      svg.append(el("text", { x: L - 4, y: (H - B - r * ch + 4).toFixed(1), "text-anchor": "end" }, ms(grid.lEdges[r])));
    }
    const span = grid.tEdges[COLS] - grid.tEdges[0];
    for (let i = 0; i <= 4; i++) {
      svg.append(el("text", { x: L + (W - L - R) * i / 4, y: H - 6, "text-anchor": "middle" },
        "+" + (span * i / 4 / 1000).toFixed(2) + " s"));
    }
  }

  // ---- Dragging over cells ----
  let dragFrom = null, dragTo = null;
  // Ids travel in the URL (16 KiB of head at most): the slowest this many.
  const MAX_IDS = 400;

  function cellAt(e) {
    const t = e.target;
    return t && t.classList && t.classList.contains("rq-cell") ? [Number(t.dataset.col), Number(t.dataset.row)] : null;
  }

  function mark(a, b) {
    const [c0, c1] = [Math.min(a[0], b[0]), Math.max(a[0], b[0])];
    const [r0, r1] = [Math.min(a[1], b[1]), Math.max(a[1], b[1])];
    document.querySelectorAll("#rq-heat rect.rq-cell").forEach((x) => {
      const c = Number(x.dataset.col), r = Number(x.dataset.row);
      x.classList.toggle("sel", c >= c0 && c <= c1 && r >= r0 && r <= r1);
    });
    return { c0, c1, r0, r1 };
  }

  async function select(box) {
    const picked = data.requests.filter((_, i) => {
      const [c, r] = grid.cell[i];
      return c >= box.c0 && c <= box.c1 && r >= box.r0 && r <= box.r1;
    });
    $("#rq-heat").dataset.selection = [box.c0, box.c1, box.r0, box.r1].join(",");
    showTable(picked, `${picked.length} requests selected`);
    await flame(picked);
  }

  // The JVM ids of the rows' pids.
  function jvmsOf(rows) {
    const ids = new Set();
    for (const r of rows) for (const p of r.jvms) for (const id of data.jvm_ids[p] || []) ids.add(id);
    return [...ids];
  }

  async function flame(rows, params) {
    document.body.dataset.requestsFlame = "loading";
    const frame = $("#rq-frame");
    if (!rows.length && !params) {
      frame.removeAttribute("src");
      $("#rq-flame-info").textContent = "no requests in those cells";
      document.body.dataset.requestsFlame = "empty";
      return;
    }
    const some = rows.slice(0, MAX_IDS); // slowest first
    const q = params || { jvm: jvmsOf(some).join(","), request: some.map((r) => r.id).join(",") };
    const loaded = new Promise((ok) => frame.addEventListener("load", ok, { once: true }));
    frame.src = url("flame", { ...q, format: "html" });
    await loaded;
    $("#rq-flame-info").textContent = params ? "" : rows.length > MAX_IDS
      ? `flame graph of the slowest ${MAX_IDS} of ${rows.length} requests' samples`
      : `flame graph of ${rows.length} requests' samples`;
    document.body.dataset.requestsFlame = "ready";
  }

  // ---- The table and a request's tree ----
  function showTable(rows, info) {
    $("#rq-info").textContent = info;
    const body = $("#rq-table tbody");
    body.replaceChildren(...rows.slice(0, 500).map((r) => {
      const tr = document.createElement("tr");
      tr.dataset.id = r.id;
      for (const [text, num] of [[ms(r.duration_ns), true], [ms(r.cpu_ns), true], [r.samples, true],
        [r.trace_id || r.id, false], [r.entry + (r.failed ? " (failed)" : ""), false], [r.jvms.join(", "), false]]) {
        const td = document.createElement("td");
        td.textContent = String(text);
        if (num) td.className = "num";
        tr.append(td);
      }
      tr.onclick = () => showTree(r);
      return tr;
    }));
  }

  function showTree(r) {
    chosenTrace = r.id;
    document.querySelectorAll("#rq-table tbody tr").forEach((x) => x.classList.toggle("selected", x.dataset.id === r.id));
    $("#rq-tree-title").textContent = `${r.entry}: ${ms(r.duration_ns)}, ${r.parts} parts on ${r.jvms.length} JVMs`;
    const items = r.tree.map((p) => {
      const li = document.createElement("li");
      const label = document.createElement("span");
      label.textContent = `${p.name} (${p.kind}) on pid ${p.jvm}, ${p.thread}: ${ms(p.duration_ns)}`;
      li.append(label);
      li.dataset.part = String(p.request);
      if (p.calls.length) {
        const calls = document.createElement("ul");
        for (const c of p.calls) {
          const ci = document.createElement("li");
          ci.textContent = `calls ${c.method} ${c.path}: ${ms(c.duration_ns)}`;
          calls.append(ci);
        }
        li.append(calls);
      }
      li.onclick = (e) => {
        e.stopPropagation();
        document.querySelectorAll("#rq-tree li").forEach((x) => x.classList.toggle("chosen", x === li));
        const jvm = (data.jvm_ids[p.jvm] || [])[0];
        if (jvm) flame([], { jvm, request: String(p.request) })
          .then(() => ($("#rq-flame-info").textContent = `flame graph of ${p.name} on pid ${p.jvm}`));
      };
      return { li, parent: p.parent };
    });
    const root = document.createElement("ul");
    items.forEach((it) => {
      const under = it.parent === null || it.parent === undefined ? null : items[it.parent];
      if (!under) return root.append(it.li);
      let sub = under.li.querySelector(":scope > ul.parts");
      if (!sub) {
        sub = document.createElement("ul");
        sub.className = "parts";
        under.li.append(sub);
      }
      sub.append(it.li);
    });
    $("#rq-tree").replaceChildren(root);
    flame([r]);
  }

  // ---- Loading ----
  let loaded = false;

  async function load() {
    loaded = true;
    document.body.dataset.requestsReady = "false";
    $("#rq-error").textContent = "";
    try {
      const p = { limit: "5000" };
      const latency = $("#rq-latency").value.trim();
      if (latency) p.latency = latency;
      const r = await fetch(url("requests", p));
      const body = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(body.error || r.statusText);
      data = body;
      drawHeatmap();
      showTable(data.requests, `${data.requests.length} requests` +
        (data.total > data.requests.length ? ` (the slowest of ${data.total})` : "") +
        (data.requests.length ? "; drag over the heatmap's cells for their flame graph" : ""));
    } catch (e) {
      $("#rq-error").textContent = e.message;
    }
    document.body.dataset.requestsReady = "true";
  }

  function start() {
    const h = window.jscopeStartHash || new URLSearchParams(location.hash.slice(1));
    if (h.get("latency")) $("#rq-latency").value = h.get("latency");
    $("#rq-go").onclick = load;
    const svg = $("#rq-heat");
    svg.addEventListener("mousedown", (e) => {
      dragFrom = dragTo = cellAt(e);
      if (dragFrom) { mark(dragFrom, dragFrom); e.preventDefault(); }
    });
    svg.addEventListener("mousemove", (e) => {
      const at = cellAt(e);
      if (dragFrom && at) { dragTo = at; mark(dragFrom, at); }
    });
    window.addEventListener("mouseup", (e) => {
      if (!dragFrom) return;
      const box = mark(dragFrom, cellAt(e) || dragTo);
      dragFrom = dragTo = null;
      select(box);
    });
  }

  // Called by app.js on each refresh: loads the requests once.
  async function refresh(tab) {
    if (tab === "requests" && !loaded) await load();
  }

  start();
  return { refresh, load, chosen: () => chosenTrace };
})();
