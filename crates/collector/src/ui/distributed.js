// The execution tree across JVMs: rows of /api/distributed (FlatTree) as an
// indented, collapsible table. Each row is coloured by the JVM that ran it (the
// legend maps colours to JVMs, as JaViz's mapper did); remote calls show their
// network time; a timeline bar places each call on the reference JVM's clock,
// with a line for how far that placement may be off. One script for the session
// page (`jscope view SESSION`) and the collector's Distributed tab, which renders
// through `window.jscopeDistributed.DistributedView`.
'use strict';

window.jscopeDistributed = (() => {
  const palette = ['#1e88e5', '#e53935', '#43a047', '#fb8c00', '#8e24aa', '#00897b',
    '#6d4c41', '#d81b60', '#3949ab', '#c0ca33', '#546e7a', '#fdd835'];

  function jvmColour(j) {
    return j < palette.length ? palette[j] : `hsl(${(j * 137.5) % 360}, 60%, 45%)`;
  }

  // A light tint of a JVM's colour for its rows' background.
  function tint(j) {
    return `color-mix(in srgb, ${jvmColour(j)} 14%, white)`;
  }

  function fmtNs(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return ns + ' ns';
  }

  // A time on the reference timeline, with only the decimals its uncertainty allows.
  function fmtAt(node) {
    const s = node.start_ns / 1e9;
    if (node.own_clock) return s.toFixed(6) + ' s (own clock)';
    if (!node.uncertainty_ns) return s.toFixed(6) + ' s';
    const digits = Math.max(0, Math.min(9, Math.ceil(-Math.log10(node.uncertainty_ns / 1e9))));
    return '~' + s.toFixed(digits) + ' s \u00b1' + fmtNs(node.uncertainty_ns);
  }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'style') e.style.cssText = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const kid of kids) e.append(kid);
    return e;
  }

  function offsetText(j) {
    if (j.offset_ns === null || j.offset_ns === undefined) return 'not linked (own clock)';
    if (j.offset_ns === 0 && !j.uncertainty_ns) return 'reference clock';
    const sign = j.offset_ns >= 0 ? '+' : '-';
    return sign + fmtNs(Math.abs(j.offset_ns)) + ' \u00b1' + fmtNs(j.uncertainty_ns || 0);
  }

  function renderLegend(tree, body) {
    body.replaceChildren(...tree.jvms.map((j, i) => el('tr', { 'data-jvm': i },
      el('td', {}, el('span', { class: 'swatch', style: `background:${jvmColour(i)}` })),
      el('td', {}, `jvm ${i}` + (i === tree.reference ? ' (reference)' : '')),
      el('td', {}, j.host),
      el('td', { class: 'num' }, String(j.pid)),
      el('td', {}, offsetText(j)),
      el('td', { class: 'cmd', title: j.command_line }, j.name + ': ' + j.command_line))));
  }

  // The span of the timeline: every call placed on the reference clock.
  function timeSpan(nodes) {
    let lo = Infinity, hi = -Infinity;
    for (const n of nodes) {
      if (n.own_clock) continue;
      lo = Math.min(lo, n.start_ns);
      hi = Math.max(hi, n.end_ns);
    }
    return lo < hi ? [lo, hi] : null;
  }

  function lane(n, span) {
    const box = el('div', { class: 'lane' });
    if (!span || n.own_clock) return box;
    const pct = (ns) => (100 * (ns - span[0]) / (span[1] - span[0])).toFixed(3) + '%';
    if (n.uncertainty_ns) {
      const u = n.uncertainty_ns;
      box.append(el('div', {
        class: 'fuzz',
        style: `left:${pct(n.start_ns - u)};width:calc(${pct(n.end_ns + u)} - ${pct(n.start_ns - u)})`,
      }));
    }
    box.append(el('div', {
      class: 'span',
      style: `left:${pct(n.start_ns)};width:calc(${pct(n.end_ns)} - ${pct(n.start_ns)});background:${jvmColour(n.jvm)}`,
    }));
    return box;
  }

  function callText(n) {
    if (!n.remote) return n.label;
    const r = n.remote;
    return `\u21d2 ${r.protocol} to jvm ${r.server_jvm} ${r.server} ${r.object} ${r.method}`.trim();
  }

  function row(n, i, hasKids, span, onToggle) {
    const r = n.remote;
    const toggle = el('span', { class: 'toggle' }, hasKids ? '\u25be' : '');
    const title = r
      ? `conn ${r.client}#${r.conn_seq}` + (r.request_id ? `\nrequest ${r.request_id}` : '')
        + `\nclient ${fmtNs(r.client_ns)}, server ${fmtNs(r.server_ns)}`
      : '';
    const tr = el('tr', {
      'data-row': i, 'data-jvm': n.jvm, 'data-depth': n.depth,
      class: (r ? 'remote' : 'call') + (r && r.failed ? ' failed' : ''),
      style: `background:${tint(n.jvm)}`,
    },
    el('td', { class: 'call', title, style: `padding-left:${6 + 16 * n.depth}px;border-left-color:${jvmColour(n.jvm)}` },
      toggle, callText(n)),
    el('td', {}, `jvm ${n.jvm}`),
    el('td', {}, n.thread),
    el('td', { class: 'num' }, fmtAt(n)),
    el('td', { class: 'num' }, fmtNs(n.duration_ns)),
    el('td', { class: 'num' }, r ? '' : fmtNs(n.self_ns)),
    el('td', { class: 'num network' }, r ? fmtNs(r.network_ns) : ''),
    el('td', { class: 'tl' }, lane(n, span)));
    if (r) tr.dataset.networkNs = r.network_ns;
    if (hasKids) toggle.addEventListener('click', () => onToggle(i, tr.dataset.closed === 'true'));
    return tr;
  }

  function rootRow(tree, j) {
    const jvm = tree.jvms[j];
    return el('tr', { class: 'root', 'data-root': j },
      el('td', { colSpan: 8, style: `border-left:6px solid ${jvmColour(j)}` },
        `[virtual root] jvm ${j} ${jvm.host} pid ${jvm.pid}` + (j === tree.reference ? ' (reference)' : '')));
  }

  // One rendering of a tree into `parts` ({ legend, tree, summary }: the legend's and
  // the tree's tbody and an element for the summary line); the session page and the
  // collector's Distributed tab each make one.
  class DistributedView {
    constructor(parts) {
      this.parts = parts;
      this.rows = [];
      this.kids = [];
    }

    render(tree) {
      renderLegend(tree, this.parts.legend);
      this.kids = tree.nodes.map(() => []);
      tree.nodes.forEach((n, i) => { if (n.parent !== null) this.kids[n.parent].push(i); });
      const span = timeSpan(tree.nodes);
      const toggle = (i, open) => this.setOpen(i, open);
      this.rows = tree.nodes.map((n, i) => row(n, i, this.kids[i].length > 0, span, toggle));
      // Each JVM's tree under a heading (its virtual root), the reference's first.
      const shown = [];
      tree.nodes.forEach((n, i) => {
        if (i === 0 || tree.nodes[i - 1].root_jvm !== n.root_jvm) shown.push(rootRow(tree, n.root_jvm));
        shown.push(this.rows[i]);
      });
      this.parts.tree.replaceChildren(...shown);
      this.parts.summary.textContent =
        `${tree.jvms.length} JVMs, ${tree.matched} remote calls matched, ` +
        `${tree.unmatched_clients} client and ${tree.unmatched_servers} server calls unmatched`;
    }

    // Shows or hides the descendants of row i (keeping closed subtrees closed).
    setOpen(i, open) {
      const { rows, kids } = this;
      rows[i].dataset.closed = open ? 'false' : 'true';
      rows[i].querySelector('.toggle').textContent = open ? '\u25be' : '\u25b8';
      const walk = (p, visible) => {
        for (const c of kids[p]) {
          rows[c].style.display = visible ? '' : 'none';
          walk(c, visible && rows[c].dataset.closed !== 'true');
        }
      };
      walk(i, open);
    }

    // Roots stay visible.
    setAll(open) {
      this.rows.forEach((r, i) => { if (this.kids[i].length) this.setOpen(i, open); });
    }
  }

  // The session page (`jscope view SESSION`): the one tree its server computed.
  async function sessionPage() {
    const view = new DistributedView({
      legend: document.querySelector('#legend tbody'),
      tree: document.querySelector('#tree tbody'),
      summary: document.querySelector('#summary'),
    });
    try {
      const res = await fetch('api/distributed');
      if (!res.ok) throw new Error(`api/distributed: HTTP ${res.status}`);
      view.render(await res.json());
    } catch (e) {
      document.querySelector('#error').textContent = String(e);
    }
    document.querySelector('#expand').addEventListener('click', () => view.setAll(true));
    document.querySelector('#collapse').addEventListener('click', () => view.setAll(false));
    document.body.dataset.ready = 'true';
  }

  if (document.body.dataset.page === 'session') sessionPage();
  return { DistributedView };
})();
