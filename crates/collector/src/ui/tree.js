// The trace tree browser (JaViz's tree visualizer) of the collector's "Trace tree" tab:
// one JVM's exact-trace call tree (GET api/jvms/ID/tree, children fetched as nodes
// are expanded) or the merged tree across JVMs (GET api/distributed, all rows at
// once). Expand and collapse; a node-info panel; find and find-next by method
// (substring, or glob with * and ?) walking the calls in tree order; a mapper: the
// whole expanded tree drawn one line per row, the visible part marked, moving with
// the scroll and clickable to jump; and a per-method statistics table whose rows
// find their method's calls. Only the rows in view are in the DOM.
"use strict";

window.jscopeTree = (() => {
  const ROW_H = 20;
  const token = new URLSearchParams(location.search).get("token");
  const $ = (sel) => document.querySelector(sel);

  async function get(path, params) {
    const q = new URLSearchParams(params || {});
    if (token) q.set("token", token);
    const s = q.toString();
    const r = await fetch("api/" + path + (s ? "?" + s : ""));
    if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
    return r.json();
  }

  function fmtNs(ns) {
    if (ns === null || ns === undefined) return "";
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + " us";
    return Math.round(ns) + " ns";
  }

  // As the collector's ThreadMatcher: a glob (* and ?) must match the whole
  // label, anything else is a substring.
  function matcher(pattern, exact) {
    if (exact) return (label) => label === pattern;
    if (!/[*?]/.test(pattern)) return (label) => label.includes(pattern);
    const re = new RegExp("^" + pattern.split("").map((c) =>
      c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")).join("") + "$", "s");
    return (label) => re.test(label);
  }

  // ---- Sources: what the browser reads its nodes from ----
  // children(id, offset, limit) answers { total, nodes } (id null: the top-level
  // calls); find answers { paths, indexes, count }: per match the ids from a
  // top-level call down to it, and each one's index among its parent's children.

  // One stored JVM's trace tree, served lazily by the collector.
  class JvmSource {
    constructor(jvm) {
      this.jvm = jvm;
      this.path = "jvms/" + encodeURIComponent(jvm) + "/tree";
    }
    async children(id, offset, limit) {
      const params = { offset, limit };
      if (id !== null) params.node = id;
      const t = await get(this.path, params);
      if (id === null) {
        this.summary = `${t.calls} calls in ${t.threads} threads, ${t.events} events` + (t.damage ? ` (${t.damage})` : "") +
          // An empty tree is a JVM that did not trace, not one whose calls were lost.
          (t.events ? "" : ": this JVM recorded no exact trace; record with jscope record --trace 'com.acme.*' (the agent's trace= option)");
      }
      return { total: t.total, nodes: t.nodes.map((n) => ({ ...n, jvm: this.jvm, kids: n.children })) };
    }
    async find(pattern, exact) {
      const params = { find: pattern };
      if (exact) params.exact = "1";
      const r = await get(this.path, params);
      return { paths: r.matches, indexes: r.indexes, count: r.count };
    }
    async stats() {
      return (await get(this.path, { stats: "1" })).methods;
    }
  }

  // The merged tree across JVMs: every row arrives at once.
  class DistributedSource {
    constructor(params) {
      this.params = params;
      this.nodes = null;
    }
    async load() {
      const t = await get("distributed", this.params);
      const label = (n) => n.remote
        ? `\u21d2 ${n.remote.protocol} ${n.remote.server} ${n.remote.object} ${n.remote.method}`.trim()
        : n.label;
      this.kids = t.nodes.map(() => []);
      this.top = [];
      t.nodes.forEach((n, i) => (n.parent === null ? this.top : this.kids[n.parent]).push(String(i)));
      this.nodes = t.nodes.map((n, i) => ({
        id: String(i), label: label(n), method: n.remote ? null : n.label,
        caller: n.parent === null ? null : label(t.nodes[n.parent]),
        thread: n.thread, jvm: (t.jvms[n.jvm] || {}).name || `jvm ${n.jvm}`,
        enter_ns: n.start_ns, exit_ns: n.end_ns, duration_ns: n.duration_ns,
        self_ns: n.remote ? null : n.self_ns, cpu_ns: null, flags: n.flags,
        network_ns: n.remote ? n.remote.network_ns : null, kids: this.kids[i].length,
      }));
      this.summary = `${t.jvms.length} JVMs, ${t.nodes.length} calls, ${t.matched} remote calls matched`;
    }
    async children(id, offset, limit) {
      if (id === null && !this.nodes) await this.load();
      const all = id === null ? this.top : this.kids[Number(id)];
      return { total: all.length, nodes: all.slice(offset, offset + limit).map((c) => this.nodes[c]) };
    }
    async find(pattern, exact) {
      const m = matcher(pattern, exact);
      const paths = [], indexes = [];
      const walk = (id, index, path, at) => {
        const p = path.concat(id), q = at.concat(index);
        if (m(this.nodes[id].label)) {
          paths.push(p);
          indexes.push(q);
        }
        this.kids[Number(id)].forEach((c, i) => walk(c, i, p, q));
      };
      this.top.forEach((id, i) => walk(id, i, [], []));
      return { paths, indexes, count: paths.length };
    }
    async stats() {
      const by = new Map();
      for (const n of this.nodes) {
        if (!n.method) continue;
        const s = by.get(n.method) || { method: n.method, calls: 0, total_ns: 0, self_ns: 0, max_ns: 0 };
        s.calls += 1;
        s.total_ns += n.duration_ns;
        s.self_ns += n.self_ns;
        s.max_ns = Math.max(s.max_ns, n.duration_ns);
        by.set(n.method, s);
      }
      const rows = [...by.values()];
      rows.forEach((s) => (s.mean_ns = s.total_ns / s.calls));
      return rows.sort((a, b) => b.total_ns - a.total_ns);
    }
  }

  // ---- The browser ----
  // Children arrive in pages of PAGE; the pages not fetched yet of an open node show
  // as one "not loaded" row per gap, which fetches the gap's first page when clicked.
  const PAGE = 500;
  const ROOT = "";

  class TreeBrowser {
    constructor(parts) {
      this.p = parts;
      this.source = null;
      // id -> { node, depth, open, kids: null | { total, pages: Map(page -> ids) } }
      this.entries = new Map();
      this.visible = []; // ids, and { gap } objects for pages not loaded
      this.selected = null;
      this.matches = { paths: [], indexes: [], count: 0, at: -1, ids: new Set() };
      this.maxDuration = 1;
      parts.scroll.addEventListener("scroll", () => this.draw(false));
      parts.map.addEventListener("click", (e) => this.jumpTo(e));
      parts.scroll.addEventListener("keydown", (e) => this.key(e));
      this.observer = new ResizeObserver(() => this.draw());
      this.observer.observe(parts.scroll);
    }

    async open(source) {
      this.source = source;
      this.entries.clear();
      this.entries.set(ROOT, { node: { id: ROOT, kids: 1 }, depth: -1, open: true, kids: null });
      this.selected = null;
      this.matches = { paths: [], indexes: [], count: 0, at: -1, ids: new Set() };
      await this.loadPage(ROOT, 0);
      const top = this.entries.get(ROOT).kids.pages.get(0).map((id) => this.entries.get(id).node);
      this.maxDuration = Math.max(1, ...top.map((n) => n.duration_ns));
      this.p.summary.textContent = source.summary || "";
      this.p.found.textContent = "";
      this.layout();
      this.showInfo(null);
      this.p.stats.replaceChildren();
      this.fillStats(await source.stats());
    }

    async loadPage(id, page) {
      const e = this.entries.get(id);
      if (e.kids && e.kids.pages.has(page)) return;
      const r = await this.source.children(id === ROOT ? null : id, page * PAGE, PAGE);
      if (!e.kids) e.kids = { total: r.total, pages: new Map() };
      e.kids.pages.set(page, r.nodes.map((n) => {
        if (!this.entries.has(n.id)) this.entries.set(n.id, { node: n, depth: e.depth + 1, open: false, kids: null, parent: id });
        return n.id;
      }));
    }

    async toggle(id, open) {
      const e = this.entries.get(id);
      if (!e.node.kids) return;
      if (open) await this.loadPage(id, 0);
      e.open = open;
      this.layout();
    }

    collapseAll() {
      this.entries.forEach((e, id) => (e.open = id === ROOT));
      this.layout();
    }

    // The rows shown: the children of every open node, the root's first.
    layout() {
      const out = [];
      const walk = (id) => {
        const e = this.entries.get(id);
        if (!e.open || !e.kids) return;
        const pages = Math.ceil(e.kids.total / PAGE);
        let gap = null;
        for (let p = 0; p < pages; p++) {
          const ids = e.kids.pages.get(p);
          if (!ids) {
            const n = Math.min(PAGE, e.kids.total - p * PAGE);
            if (gap) gap.count += n;
            else out.push((gap = { gap: true, parent: id, page: p, count: n, depth: e.depth + 1 }));
            continue;
          }
          gap = null;
          for (const c of ids) {
            out.push(c);
            walk(c);
          }
        }
      };
      walk(ROOT);
      this.visible = out;
      this.index = new Map();
      out.forEach((item, i) => { if (typeof item === "string") this.index.set(item, i); });
      this.p.spacer.style.height = out.length * ROW_H + "px";
      this.draw();
    }

    // The rows in view (and a few around them), the mapper's marker, and the
    // mapper itself unless only the scroll position changed.
    draw(map = true) {
      const s = this.p.scroll;
      const first = Math.max(0, Math.floor(s.scrollTop / ROW_H) - 5);
      const last = Math.min(this.visible.length, Math.ceil((s.scrollTop + s.clientHeight) / ROW_H) + 5);
      const rows = [];
      for (let i = first; i < last; i++) rows.push(this.row(this.visible[i], i));
      this.p.rows.replaceChildren(...rows);
      if (map) this.drawMap();
      this.drawMarker();
    }

    gapRow(g, i) {
      const div = document.createElement("div");
      div.className = "tb-row tb-gap";
      div.style.top = i * ROW_H + "px";
      div.style.paddingLeft = 4 + 16 * g.depth + "px";
      div.dataset.parent = g.parent;
      div.dataset.page = g.page;
      div.textContent = `\u2026 ${g.count} calls not loaded (click to load ${Math.min(PAGE, g.count)})`;
      div.onclick = () => this.loadPage(g.parent, g.page).then(() => this.layout()).catch((x) => this.error(x));
      return div;
    }

    row(id, i) {
      if (typeof id !== "string") return this.gapRow(id, i);
      const e = this.entries.get(id);
      const n = e.node;
      const div = document.createElement("div");
      div.className = "tb-row" + (id === this.selected ? " selected" : "") + (this.matches.ids.has(id) ? " match" : "");
      div.dataset.id = id;
      div.style.top = i * ROW_H + "px";
      div.style.paddingLeft = 4 + 16 * e.depth + "px";
      const t = document.createElement("span");
      t.className = "tb-toggle";
      t.textContent = n.kids ? (e.open ? "\u25be" : "\u25b8") : "";
      t.onclick = (ev) => { ev.stopPropagation(); this.toggle(id, !e.open).catch((x) => this.error(x)); };
      const label = document.createElement("span");
      label.className = "tb-label";
      label.textContent = n.label;
      const dur = document.createElement("span");
      dur.className = "tb-dur";
      dur.textContent = fmtNs(n.duration_ns);
      const bar = document.createElement("span");
      bar.className = "tb-bar";
      bar.style.width = Math.max(1, 80 * n.duration_ns / this.maxDuration) + "px";
      div.append(t, label, dur, bar);
      div.onclick = () => {
        this.select(id);
        this.p.scroll.focus({ preventScroll: true });
      };
      div.ondblclick = () => this.toggle(id, !e.open).catch((x) => this.error(x));
      return div;
    }

    // One line per shown row, indented by depth, as long as the call's share of the
    // longest top-level call, green to teal by depth; matches red, the selected call
    // blue, rows not loaded grey.
    drawMap() {
      const c = this.p.map;
      const H = this.p.scroll.clientHeight || 400;
      const W = c.clientWidth || 90;
      if (c.height !== H) c.height = H;
      if (c.width !== W) c.width = W;
      const g = c.getContext("2d");
      g.clearRect(0, 0, W, H);
      const N = this.visible.length;
      const h = H / Math.max(N, 1);
      for (let i = 0; i < N; i++) {
        const item = this.visible[i];
        const y = Math.floor(i * h), lh = Math.max(1, Math.ceil(h) - (h > 3 ? 1 : 0));
        if (typeof item !== "string") {
          g.fillStyle = "#cfd8dc";
          g.fillRect(Math.min(W - 4, item.depth * 3), y, W, lh);
          continue;
        }
        const e = this.entries.get(item);
        const x = Math.min(W - 4, e.depth * 3);
        const w = Math.max(2, (W - x) * Math.min(1, e.node.duration_ns / this.maxDuration));
        g.fillStyle = item === this.selected ? "#1565c0" : this.matches.ids.has(item) ? "#e53935" : `hsl(${95 + (e.depth * 37) % 90}, 30%, ${48 + (e.depth * 7) % 24}%)`;
        g.fillRect(x, y, w, lh);
      }
    }

    drawMarker() {
      const H = this.p.scroll.clientHeight || 400;
      const s = this.p.scroll;
      const total = Math.max(s.scrollHeight, 1);
      const top = s.scrollTop / total * H;
      const height = Math.max(4, Math.min(H, s.clientHeight / total * H));
      this.p.marker.style.top = top + "px";
      this.p.marker.style.height = height + "px";
      this.p.marker.dataset.top = top.toFixed(1);
    }

    jumpTo(ev) {
      const rect = this.p.map.getBoundingClientRect();
      const at = (ev.clientY - rect.top) / rect.height;
      const s = this.p.scroll;
      s.scrollTop = Math.max(0, at * this.visible.length * ROW_H - s.clientHeight / 2);
      this.draw(false);
    }

    // Up/Down: the previous/next shown call; Right: open, then the first child;
    // Left: close, then the caller; F3 (Shift+F3): the next (previous) match.
    key(ev) {
      const act = async () => {
        if (ev.key === "F3") return this.next(ev.shiftKey ? -1 : 1);
        const at = this.selected === null ? -1 : this.index.get(this.selected);
        const e = this.selected === null ? null : this.entries.get(this.selected);
        let to = null;
        if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
          const step = ev.key === "ArrowDown" ? 1 : -1;
          for (let i = at + step; i >= 0 && i < this.visible.length; i += step) {
            if (typeof this.visible[i] === "string") { to = this.visible[i]; break; }
          }
        } else if (ev.key === "ArrowRight" && e && e.node.kids) {
          if (!e.open) return this.toggle(this.selected, true);
          to = this.visible[at + 1];
        } else if (ev.key === "ArrowLeft" && e) {
          if (e.open) return this.toggle(this.selected, false);
          to = e.parent === ROOT ? null : e.parent;
        } else {
          return;
        }
        if (typeof to === "string") {
          this.select(to);
          this.reveal(to);
        }
      };
      if (["ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "F3"].includes(ev.key)) ev.preventDefault();
      act().catch((x) => this.error(x));
    }

    select(id) {
      this.selected = id;
      this.showInfo(this.entries.get(id).node);
      this.draw();
    }

    // Scrolls so row `id` is in view, centred when it was not.
    reveal(id) {
      const i = this.index.get(id);
      const s = this.p.scroll;
      const y = i * ROW_H;
      if (y < s.scrollTop || y + ROW_H > s.scrollTop + s.clientHeight) {
        s.scrollTop = Math.max(0, y - s.clientHeight / 2);
      }
      this.draw();
    }

    showInfo(n) {
      const info = this.p.info;
      info.dataset.id = n ? n.id : "";
      const fields = n ? [
        ["method", "Method", n.label],
        ["caller", "Caller", n.caller || "(none: a top-level call)"],
        ["thread", "Thread", n.thread],
        ["jvm", "JVM", n.jvm],
        ["call", "Call time", (n.enter_ns / 1e9).toFixed(6) + " s", n.enter_ns],
        ["return", "Return time", (n.exit_ns / 1e9).toFixed(6) + " s", n.exit_ns],
        ["duration", "Duration", fmtNs(n.duration_ns), n.duration_ns],
        ["self", "Self", n.self_ns === null ? "" : fmtNs(n.self_ns), n.self_ns],
        ["cpu", "CPU time", n.cpu_ns === null || n.cpu_ns === undefined ? "not recorded" : fmtNs(n.cpu_ns), n.cpu_ns],
      ] : [];
      if (n && n.network_ns !== null && n.network_ns !== undefined) fields.push(["network", "Network", fmtNs(n.network_ns), n.network_ns]);
      if (n && n.flags) fields.push(["flags", "Flags", [n.flags & 1 ? "unfinished" : "", n.flags & 2 ? "threw" : "", n.flags & 4 ? "closed by mismatch" : ""].filter(Boolean).join(", ")]);
      info.querySelector("tbody").replaceChildren(...fields.map(([key, name, text, ns]) => {
        const tr = document.createElement("tr");
        const th = document.createElement("th");
        th.textContent = name;
        const td = document.createElement("td");
        td.textContent = text;
        td.dataset.field = key;
        if (ns !== undefined && ns !== null) td.dataset.ns = String(ns);
        tr.append(th, td);
        return tr;
      }));
    }

    fillStats(rows) {
      this.p.stats.replaceChildren(...rows.map((m) => {
        const tr = document.createElement("tr");
        tr.dataset.method = m.method;
        for (const [v, cls] of [[m.method, ""], [m.calls, "num"], [fmtNs(m.total_ns), "num"], [fmtNs(m.mean_ns), "num"], [fmtNs(m.max_ns), "num"]]) {
          const td = document.createElement("td");
          td.textContent = String(v);
          if (cls) td.className = cls;
          tr.append(td);
        }
        tr.onclick = () => {
          this.p.findInput.value = m.method;
          this.find(m.method, true).catch((x) => this.error(x));
        };
        return tr;
      }));
    }

    async find(pattern, exact) {
      if (!this.source || !pattern) return;
      const r = await this.source.find(pattern, exact);
      this.matches = { ...r, at: -1, ids: new Set(r.paths.map((p) => p[p.length - 1])) };
      if (!r.paths.length) {
        this.p.found.textContent = "no call matches";
        this.draw();
        return;
      }
      await this.next(1);
    }

    // The next (or previous) match in tree order: the pages holding it and its
    // ancestors fetched, its ancestors opened, selected, scrolled into view.
    async next(step) {
      const m = this.matches;
      if (!m.paths.length) return;
      m.at = (m.at + step + m.paths.length) % m.paths.length;
      const path = m.paths[m.at], at = m.indexes[m.at];
      for (let j = 0; j < path.length; j++) {
        await this.loadPage(j === 0 ? ROOT : path[j - 1], Math.floor(at[j] / PAGE));
        if (j < path.length - 1) this.entries.get(path[j]).open = true;
      }
      this.layout();
      const id = path[path.length - 1];
      this.select(id);
      this.reveal(id);
      this.p.found.textContent = `match ${m.at + 1} of ${m.count}` + (m.count > m.paths.length ? ` (first ${m.paths.length} listed)` : "");
      this.p.found.dataset.at = String(m.at);
    }

    error(e) {
      this.p.error.textContent = e.message || String(e);
    }
  }

  // ---- The tab ----
  let browser = null;
  let loadedFor = null;

  function parts() {
    return {
      scroll: $("#tb-scroll"), spacer: $("#tb-spacer"), rows: $("#tb-rows"), map: $("#tb-map"),
      marker: $("#tb-marker"), info: $("#tb-info"), stats: $("#tb-stats tbody"), summary: $("#tb-summary"),
      found: $("#tb-found"), findInput: $("#tb-find"), error: $("#tb-error"),
    };
  }

  async function load(jvm) {
    if (!browser) browser = new TreeBrowser(parts());
    $("#tb-error").textContent = "";
    document.body.dataset.treeReady = "false";
    const distributed = $("#tb-source").value === "distributed";
    const source = distributed ? new DistributedSource({}) : new JvmSource(jvm);
    loadedFor = distributed ? "distributed" : jvm;
    try {
      await browser.open(source);
      const find = $("#tb-find").value.trim();
      if (find) await browser.find(find, false);
    } catch (e) {
      browser.error(e);
    }
    document.body.dataset.treeReady = "true";
  }

  function start() {
    const h = window.jscopeStartHash || new URLSearchParams(location.hash.slice(1));
    if (h.get("source") === "distributed") $("#tb-source").value = "distributed";
    if (h.get("find")) $("#tb-find").value = h.get("find");
    $("#tb-load").onclick = () => load($("#tb-jvm").value);
    const go = () => browser && browser.find($("#tb-find").value.trim(), false).catch((e) => browser.error(e));
    $("#tb-find-go").onclick = go;
    $("#tb-find").onkeydown = (e) => { if (e.key === "Enter") go(); };
    $("#tb-next").onclick = () => browser && browser.next(1).catch((e) => browser.error(e));
    $("#tb-prev").onclick = () => browser && browser.next(-1).catch((e) => browser.error(e));
    $("#tb-collapse").onclick = () => browser && browser.collapseAll();
    $("#tb-source").onchange = () => load($("#tb-jvm").value);
  }

  // Called by app.js on each refresh: loads once when the tab is first shown.
  async function refresh(tab, jvm) {
    if (tab !== "tree") return;
    const distributed = $("#tb-source").value === "distributed";
    if (distributed ? loadedFor !== null : !jvm || loadedFor === jvm) return;
    await load(jvm);
  }

  start();
  return { refresh, TreeBrowser, JvmSource, DistributedSource, matcher };
})();
