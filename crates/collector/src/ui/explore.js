// The Explore view of the collector's UI (Pyroscope's tag explorer): one profile,
// the selected JVMs' samples over a window, broken down by a key's values
// (GET api/tags for the keys, api/explore?by=KEY for the breakdown): a bar per value
// with its share, and for the clicked value its top methods beside the whole's and
// its flame graph (api/explore?...&value=V&format=html).
// Hash keys: tab=explore&by=KEY&value=V&service=NAME&since=1h&mode=cpu.
"use strict";

window.jscopeExplore = (() => {
  const token = new URLSearchParams(location.search).get("token");
  const $ = (sel) => document.querySelector(sel);
  const state = { loaded: false, tagsLoaded: false, value: null, unset: false, data: null };

  const style = document.createElement("style");
  style.textContent = `
    .ex-main { display: grid; grid-template-columns: minmax(320px, 32%) minmax(0, 1fr); gap: 12px; align-items: start; }
    .ex-bar { background: #eceff1; height: 14px; min-width: 60px; }
    /* Long values and method names wrap, so the table fits its column. */
    #ex-values td.ex-value, #ex-values td.ex-topmethod { overflow-wrap: anywhere; }
    .ex-bar div { background: #ef6c00; height: 100%; }
    #ex-values tr.selected .ex-bar div { background: #1565c0; }
    #ex-frame { width: 100%; height: 60vh; border: 1px solid #ddd; }
    #ex-info { color: #555; }`;
  document.head.append(style);

  function url(path, params) {
    const q = new URLSearchParams(params || {});
    if (token) q.set("token", token);
    return "api/" + path + "?" + q.toString();
  }

  async function api(path, params) {
    const r = await fetch(url(path, params));
    if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
    return r.json();
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text === undefined || text === null ? "" : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  const shown = (v) => (v === null ? "(none)" : v);

  // The selection and window every request of the view carries.
  function params() {
    const p = { by: $("#ex-by").value || "service" };
    for (const [k, id] of [["service", "#ex-service"], ["since", "#ex-range"], ["mode", "#ex-mode"]]) {
      const v = $(id).value;
      if (v) p[k] = v;
    }
    return p;
  }

  function saveHash() {
    const h = new URLSearchParams({ tab: "explore", ...params() });
    if (state.unset) h.set("unset", "1");
    else if (state.value !== null) h.set("value", state.value);
    history.replaceState(null, "", "#" + h.toString());
  }

  async function loadTags() {
    const t = await api("tags");
    const want = $("#ex-by").dataset.want || $("#ex-by").value;
    $("#ex-by").replaceChildren(...t.keys.map((k) =>
      new Option(k.key + " (" + k.values.length + (k.values.length === 1 ? " value)" : " values)"), k.key)));
    const labels = t.keys.filter((k) => !k.built_in);
    $("#ex-by").value = t.keys.some((k) => k.key === want) ? want : (labels.length ? labels[0].key : "service");
    const services = t.keys.find((k) => k.key === "service");
    const keep = $("#ex-service").dataset.want || $("#ex-service").value;
    $("#ex-service").replaceChildren(new Option("all", ""),
      ...(services ? services.values : []).map((v) => new Option(v.value + " (" + v.jvms + " JVMs)", v.value)));
    $("#ex-service").value = keep;
    state.tagsLoaded = true;
  }

  function topRows(tbody, methods) {
    tbody.replaceChildren(...methods.map((m) => {
      const tr = document.createElement("tr");
      cell(tr, m.self_samples, "num");
      cell(tr, m.self_percent.toFixed(2), "num");
      cell(tr, m.total_percent.toFixed(2), "num");
      cell(tr, m.method);
      tr.dataset.method = m.method;
      return tr;
    }));
  }

  function showValues(d) {
    $("#ex-values tbody").replaceChildren(...d.values.map((v) => {
      const tr = document.createElement("tr");
      tr.dataset.value = v.value === null ? "" : v.value;
      tr.dataset.unset = v.value === null;
      tr.dataset.samples = v.samples;
      tr.dataset.share = v.share;
      tr.dataset.top = v.top.length ? v.top[0].method : "";
      cell(tr, shown(v.value), "ex-value");
      cell(tr, v.jvms.length, "num");
      cell(tr, v.samples, "num");
      cell(tr, v.share.toFixed(1) + "%", "num ex-share");
      const bar = cell(tr, "");
      const track = document.createElement("div");
      track.className = "ex-bar";
      const fill = document.createElement("div");
      fill.style.width = v.share.toFixed(2) + "%";
      track.append(fill);
      bar.append(track);
      cell(tr, v.top.length ? v.top[0].method : "", "ex-topmethod");
      tr.onclick = () => choose(v.value);
      return tr;
    }));
    $("#ex-info").textContent = d.samples + " " + (d.mode || "") + " samples of " + d.title + ", by " + d.by;
  }

  function showChosen() {
    const d = state.data;
    document.querySelectorAll("#ex-values tbody tr").forEach((tr) =>
      tr.classList.toggle("selected", state.unset ? tr.dataset.unset === "true" : tr.dataset.unset === "false" && tr.dataset.value === state.value));
    topRows($("#ex-whole tbody"), d.whole.top);
    const sel = d.selected;
    if (!sel) {
      $("#ex-chosen").textContent = "Click a value to see its flame graph and top methods";
      $("#ex-top tbody").replaceChildren();
      $("#ex-frame").removeAttribute("src");
      return;
    }
    $("#ex-chosen").textContent = d.by + " = " + shown(sel.value) + ": " + sel.samples + " samples, " + sel.share.toFixed(1) + "% of the whole";
    $("#ex-chosen").dataset.value = sel.value === null ? "" : sel.value;
    topRows($("#ex-top tbody"), sel.top);
    const p = { ...params(), format: "html" };
    if (sel.value === null) p.unset = "1";
    else p.value = sel.value;
    $("#ex-frame").src = url("explore", p);
  }

  async function load() {
    document.body.dataset.exploreReady = "false";
    $("#ex-error").textContent = "";
    try {
      if (!state.tagsLoaded) await loadTags();
      const p = params();
      if (state.unset) p.unset = "1";
      else if (state.value !== null) p.value = state.value;
      let d;
      try {
        d = await api("explore", p);
      } catch (e) {
        // A value the new key or window lacks: the breakdown without one.
        if (!p.value && !p.unset) throw e;
        state.value = null;
        state.unset = false;
        delete p.value;
        delete p.unset;
        d = await api("explore", p);
      }
      state.data = d;
      showValues(d);
      showChosen();
      saveHash();
    } catch (e) {
      $("#ex-error").textContent = e.message;
      $("#ex-values tbody").replaceChildren();
    }
    state.loaded = true;
    document.body.dataset.exploreReady = "true";
  }

  function choose(value) {
    state.unset = value === null;
    state.value = value;
    load();
  }

  function start() {
    const h = window.jscopeStartHash || new URLSearchParams(location.hash.slice(1));
    if (h.get("by")) $("#ex-by").dataset.want = h.get("by");
    if (h.get("service")) $("#ex-service").dataset.want = h.get("service");
    if (h.get("since") !== null) $("#ex-range").value = h.get("since");
    if (h.get("mode")) $("#ex-mode").value = h.get("mode");
    if (h.get("value") !== null) state.value = h.get("value");
    state.unset = h.get("unset") === "1";
    const reload = () => { state.value = null; state.unset = false; load(); };
    $("#ex-go").onclick = () => { state.tagsLoaded = false; load(); };
    for (const id of ["#ex-by", "#ex-service", "#ex-range", "#ex-mode"]) $(id).onchange = reload;
  }

  // Called by app.js on each refresh: loads the breakdown once, when first shown.
  async function refresh(tab) {
    if (tab === "explore" && !state.loaded) await load();
  }

  start();
  return { refresh, load };
})();
