// Two views over sampled profiles in the collector's UI:
// - Sandwich: one method's callers (an inverted tree: who called it, and who called
//   them) and callees, from the JVM's collapsed stacks (GET api/flame?format=json).
// - Diff: two selections (two JVMs, or one JVM's two time ranges) compared by
//   GET api/diff: methods ranked by the change of their share, and the differential
//   flame graph (red grew, blue shrank) in a frame.
"use strict";

window.jscopeCompare = (() => {
  const token = new URLSearchParams(location.search).get("token");
  const $ = (sel) => document.querySelector(sel);

  function url(path, params) {
    const q = new URLSearchParams(params || {});
    if (token) q.set("token", token);
    return "api/" + path + "?" + q.toString();
  }

  async function get(path, params) {
    const r = await fetch(url(path, params));
    if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
    return r.json();
  }

  function td(tr, text, cls) {
    const c = document.createElement("td");
    c.textContent = String(text);
    if (cls) c.className = cls;
    tr.append(c);
    return c;
  }

  function pct(n, total) {
    return total ? (100 * n / total).toFixed(1) + "%" : "";
  }

  // ---- Sandwich ----
  const sw = { stacks: [], jvm: null, total: 0 };

  // `a;b;c 12` lines -> [{ frames, n }], root first.
  function parseCollapsed(text) {
    const out = [];
    for (const line of text.split("\n")) {
      const at = line.lastIndexOf(" ");
      if (at <= 0) continue;
      out.push({ frames: line.slice(0, at).split(";"), n: Number(line.slice(at + 1)) });
    }
    return out;
  }

  // Per method: samples of stacks it is on (total) and at the top of (self).
  function methodTable(stacks) {
    const by = new Map();
    for (const s of stacks) {
      const seen = new Set(s.frames);
      for (const f of seen) {
        const m = by.get(f) || { method: f, total: 0, self: 0 };
        m.total += s.n;
        by.set(f, m);
      }
      by.get(s.frames[s.frames.length - 1]).self += s.n;
    }
    return [...by.values()].sort((a, b) => b.total - a.total || a.method.localeCompare(b.method));
  }

  // Paths from the method outward (its callers upward, or its callees downward),
  // merged into a tree of { name, n, kids }. The outermost call of the method in
  // each stack is the one taken, so recursion is counted once.
  function sandwich(stacks, method) {
    const callers = { name: method, n: 0, kids: new Map() };
    const callees = { name: method, n: 0, kids: new Map() };
    const add = (root, path, n) => {
      root.n += n;
      let node = root;
      for (const f of path) {
        let k = node.kids.get(f);
        if (!k) node.kids.set(f, (k = { name: f, n: 0, kids: new Map() }));
        k.n += n;
        node = k;
      }
    };
    for (const s of stacks) {
      const i = s.frames.indexOf(method);
      if (i < 0) continue;
      add(callers, s.frames.slice(0, i).reverse(), s.n);
      add(callees, s.frames.slice(i + 1), s.n);
    }
    return { callers, callees };
  }

  // A tree as indented rows, largest first, at most `limit` rows.
  function treeRows(tbody, root, limit) {
    const rows = [];
    const walk = (node, depth) => {
      if (rows.length >= limit) return;
      const tr = document.createElement("tr");
      tr.dataset.method = node.name;
      tr.dataset.depth = depth;
      td(tr, node.n, "num");
      td(tr, pct(node.n, root.n), "num");
      const name = td(tr, node.name);
      name.style.paddingLeft = 6 + 16 * depth + "px";
      if (depth > 0) tr.onclick = () => showSandwich(node.name);
      rows.push(tr);
      [...node.kids.values()].sort((a, b) => b.n - a.n).forEach((k) => walk(k, depth + 1));
    };
    walk(root, 0);
    tbody.replaceChildren(...rows);
  }

  async function loadSandwich(jvm) {
    sw.jvm = jvm;
    const params = { jvm, format: "json" };
    const last = $("#sw-range").value;
    if (last) params.last = last;
    if ($("#sw-mode").value) params.mode = $("#sw-mode").value;
    document.body.dataset.sandwichReady = "false";
    $("#sw-error").textContent = "";
    try {
      const r = await get("flame", params);
      sw.stacks = parseCollapsed(r.collapsed);
      sw.total = r.samples;
      const methods = methodTable(sw.stacks);
      $("#sw-info").textContent = `${r.samples} ${r.mode || "no"} samples, ${methods.length} methods`;
      const tbody = $("#sw-methods tbody");
      tbody.replaceChildren(...methods.slice(0, 300).map((m) => {
        const tr = document.createElement("tr");
        tr.dataset.method = m.method;
        td(tr, m.total, "num");
        td(tr, pct(m.total, sw.total), "num");
        td(tr, m.self, "num");
        td(tr, m.method);
        tr.onclick = () => showSandwich(m.method);
        return tr;
      }));
      const want = $("#sw-method").value.trim() || (methods[0] && methods[0].method);
      if (want) showSandwich(want);
    } catch (e) {
      $("#sw-error").textContent = e.message;
    }
    document.body.dataset.sandwichReady = "true";
  }

  function showSandwich(method) {
    $("#sw-method").value = method;
    const { callers, callees } = sandwich(sw.stacks, method);
    $("#sw-focus").textContent = `${method}: ${callers.n} samples (${pct(callers.n, sw.total)})`;
    document.querySelectorAll("#sw-methods tbody tr").forEach((tr) => tr.classList.toggle("selected", tr.dataset.method === method));
    treeRows($("#sw-callers tbody"), callers, 500);
    treeRows($("#sw-callees tbody"), callees, 500);
  }

  // ---- Diff ----
  // Every JVM, then every agent label (`service=shop`: all JVMs with it).
  function fillJvmSelect(sel, jvms, want) {
    const keep = sel.value || want;
    const labels = [...new Set(jvms.flatMap((j) => Object.entries(j.labels || {}).map(([k, v]) => k + "=" + v)))].sort();
    sel.replaceChildren(
      ...jvms.map((j) => new Option((j.main_class ? j.pid + " " + j.main_class : j.service || j.id) + " (" + j.status + ")", j.id)),
      ...labels.map((l) => new Option("label " + l, "label:" + l)));
    if (keep && [...sel.options].some((o) => o.value === keep)) sel.value = keep;
  }

  // A JVM or a label; seconds from the (earliest chosen) JVM's start -> epoch ms.
  function sideParams(q, side, jvms) {
    const pick = $(`#diff-${side}`).value;
    let chosen;
    if (pick.startsWith("label:")) {
      const l = pick.slice(6);
      q.set(side + "_label", l);
      const [k, v] = [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)];
      chosen = jvms.filter((j) => (j.labels || {})[k] === v);
    } else {
      q.set(side + "_jvm", pick);
      chosen = jvms.filter((x) => x.id === pick);
    }
    const start = Math.min(...chosen.map((j) => j.started_ms));
    for (const bound of ["from", "to"]) {
      const v = $(`#diff-${side}-${bound}`).value.trim();
      if (v !== "" && chosen.length) q.set(`${side}_${bound}`, String(Math.round(start + 1000 * Number(v))));
    }
  }

  async function compare(jvms) {
    const q = new URLSearchParams();
    sideParams(q, "base", jvms);
    sideParams(q, "new", jvms);
    if ($("#diff-mode").value) q.set("mode", $("#diff-mode").value);
    if ($("#diff-thread").value.trim()) q.set("thread", $("#diff-thread").value.trim());
    document.body.dataset.diffReady = "false";
    $("#diff-error").textContent = "";
    try {
      const r = await get("diff", q);
      const d = r.diff;
      $("#diff-info").textContent = `${d.mode || "no"} samples: base ${d.base_samples}, new ${d.new_samples}`;
      const sign = (x) => (x > 0 ? "+" : "") + x.toFixed(2);
      const tbody = $("#diff-table tbody");
      tbody.replaceChildren(...d.methods.slice(0, 300).map((m) => {
        const tr = document.createElement("tr");
        tr.dataset.method = m.method;
        tr.className = m.self_delta > 0 ? "grew" : m.self_delta < 0 ? "shrank" : "";
        td(tr, sign(m.self_delta), "num");
        td(tr, m.base_self_percent.toFixed(2), "num");
        td(tr, m.new_self_percent.toFixed(2), "num");
        td(tr, sign(m.total_delta), "num");
        td(tr, m.base_total_percent.toFixed(2), "num");
        td(tr, m.new_total_percent.toFixed(2), "num");
        td(tr, m.presence);
        td(tr, m.method);
        return tr;
      }));
      q.set("format", "html");
      if (token) q.set("token", token);
      $("#diff-frame").src = "api/diff?" + q.toString();
    } catch (e) {
      $("#diff-error").textContent = e.message;
    }
    document.body.dataset.diffReady = "true";
  }

  // ---- Wiring ----
  let sandwichFor = null;
  let diffDone = false;
  let jvmList = [];

  function start() {
    const h = window.jscopeStartHash || new URLSearchParams(location.hash.slice(1));
    if (h.get("method")) $("#sw-method").value = h.get("method");
    for (const side of ["base", "new"]) {
      if (h.get(side)) $(`#diff-${side}`).dataset.want = h.get(side);
      for (const bound of ["from", "to"]) {
        const v = h.get(`${side}_${bound}`);
        if (v !== null) $(`#diff-${side}-${bound}`).value = v;
      }
    }
    $("#sw-go").onclick = () => loadSandwich($("#sw-jvm").value);
    $("#sw-method").onkeydown = (e) => { if (e.key === "Enter") showSandwich($("#sw-method").value.trim()); };
    $("#diff-go").onclick = () => compare(jvmList);
  }

  // Called by app.js on each refresh with the JVM list.
  async function refresh(tab, jvm, jvms) {
    jvmList = jvms || [];
    for (const side of ["base", "new"]) fillJvmSelect($(`#diff-${side}`), jvmList, $(`#diff-${side}`).dataset.want);
    if (tab === "sandwich" && jvm && sandwichFor !== jvm) {
      sandwichFor = jvm;
      await loadSandwich(jvm);
    }
    if (tab === "diff" && !diffDone && $("#diff-base").dataset.want && $("#diff-new").dataset.want && jvmList.length) {
      diffDone = true;
      await compare(jvmList);
    }
  }

  start();
  return { refresh, parseCollapsed, sandwich, methodTable };
})();
