'use strict';
// Interactive flame graph. The JSON in #flame-data holds:
//   total       weight of all samples; countName what the weights count
//   inverted    true for an icicle graph (root on top)
//   minWidthPx  boxes narrower than max(minWidthPx, 1) CSS pixels are merged
//   names       frame names; nameColor[k] indexes colors for names[k]
//   frames      flat [name, depth, width, ...] triples in pre-order: each frame
//               before its children, siblings left to right, children
//               left-aligned under their parent, so x positions follow from
//               the order. A negative name -n is a box standing for n narrow
//               frames the renderer merged.
// Pure functions come first and are exported for Node so they can be tested
// without a browser; the page wiring runs only where there is a document.
(function () {
  const FRAME_HEIGHT = 16;
  const HIGHLIGHT = '#e040fb';
  const SLIVER = '#c7c7c7';
  const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';

  // Expands the flat frame array into typed arrays with x, subtree end and parent.
  function decode(data) {
    const f = data.frames;
    const n = f.length / 3;
    const g = {
      n: n, total: data.total, names: data.names, maxDepth: 0,
      name: new Int32Array(n), depth: new Int32Array(n), width: new Float64Array(n),
      x: new Float64Array(n), end: new Int32Array(n), parent: new Int32Array(n),
    };
    const nextX = [0];
    const open = [];
    for (let i = 0; i < n; i++) {
      const d = f[3 * i + 1];
      g.name[i] = f[3 * i];
      g.depth[i] = d;
      g.width[i] = f[3 * i + 2];
      g.x[i] = d === 0 ? 0 : nextX[d];
      nextX[d] = g.x[i] + g.width[i];
      nextX[d + 1] = g.x[i];
      while (open.length && g.depth[open[open.length - 1]] >= d) g.end[open.pop()] = i;
      g.parent[i] = open.length ? open[open.length - 1] : -1;
      open.push(i);
      if (d > g.maxDepth) g.maxDepth = d;
    }
    while (open.length) g.end[open.pop()] = n;
    return g;
  }

  // Turns the search text into a name predicate: /re/ or /re/i is a regular
  // expression, anything else a case-insensitive substring. Empty gives null;
  // an invalid expression throws.
  function compileQuery(text) {
    const query = text.trim();
    if (!query) return null;
    const re = /^\/(.+)\/(i?)$/.exec(query);
    if (re) {
      const expr = new RegExp(re[1], re[2]);
      return function (name) { return expr.test(name); };
    }
    const lower = query.toLowerCase();
    return function (name) { return name.toLowerCase().includes(lower); };
  }

  function matchNames(names, test) {
    const hit = new Uint8Array(names.length);
    for (let k = 0; k < names.length; k++) hit[k] = test(names[k]) ? 1 : 0;
    return hit;
  }

  function isMatch(g, hit, i) {
    const k = g.name[i];
    return hit !== null && k >= 0 && hit[k] === 1;
  }

  // Weight under matching frames, each sample counted once even when a matching
  // frame calls another (its subtree is skipped).
  function matchedWeight(g, hit) {
    let sum = 0;
    for (let i = 0; i < g.n;) {
      if (isMatch(g, hit, i)) {
        sum += g.width[i];
        i = g.end[i];
      } else {
        i++;
      }
    }
    return sum;
  }

  // The boxes to draw when frame `zoom` spans `widthPx` pixels. Frames under
  // minPx pixels are not drawn one by one: adjacent ones at the same depth merge
  // into a grey sliver box (frame -1) and their subtrees are skipped, which
  // keeps the work proportional to what is visible.
  function layoutBoxes(g, zoom, widthPx, minPx, hit) {
    const x0 = g.x[zoom];
    const scale = widthPx / Math.max(g.width[zoom], 1);
    const boxes = [];
    const runs = [];
    for (let i = 0; i < g.n;) {
      const left = (g.x[i] - x0) * scale;
      const w = g.width[i] * scale;
      if (left >= widthPx || left + w <= 0 || g.width[i] === 0) {
        i = g.end[i];
        continue;
      }
      if (w < minPx) {
        addToRun(runs, boxes, g, i, left, w, hit);
        i = g.end[i];
        continue;
      }
      const px = Math.max(left, 0);
      boxes.push({ frame: i, depth: g.depth[i], px: px, pw: Math.min(left + w, widthPx) - px,
        weight: g.width[i], count: 1, match: isMatch(g, hit, i), ancestor: g.depth[i] < g.depth[zoom] });
      i++;
    }
    runs.forEach(function (run) { if (run) flushRun(run, boxes); });
    return boxes;
  }

  function addToRun(runs, boxes, g, i, left, w, hit) {
    const d = g.depth[i];
    const count = g.name[i] < 0 ? -g.name[i] : 1;
    const run = runs[d];
    if (run && left <= run.px + run.pw + 0.5) {
      run.pw = left + w - run.px;
      run.count += count;
      run.weight += g.width[i];
      run.match = run.match || isMatch(g, hit, i);
      return;
    }
    if (run) flushRun(run, boxes);
    runs[d] = { frame: -1, depth: d, px: left, pw: w, weight: g.width[i], count: count,
      match: isMatch(g, hit, i), ancestor: false };
  }

  // Runs too thin to see even together are dropped, like the renderer does.
  function flushRun(run, boxes) {
    if (run.pw >= 0.5) boxes.push(run);
  }

  function formatCount(n) {
    return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  function percent(part, whole) {
    return (100 * part / Math.max(whole, 1)).toFixed(2) + '%';
  }

  function boxName(g, box) {
    if (box.frame < 0) return '[' + box.count + ' frames narrower than a pixel]';
    const k = g.name[box.frame];
    return k < 0 ? '[' + (-k) + ' merged small frames]' : g.names[k];
  }

  // Shortens a label to maxChars characters (not UTF-16 units), ending in "..".
  function fitLabel(text, maxChars) {
    if (text.length <= maxChars) return text;
    const chars = Array.from(text);
    if (chars.length <= maxChars) return text;
    return maxChars < 5 ? '' : chars.slice(0, maxChars - 2).join('') + '..';
  }

  const api = { decode, compileQuery, matchNames, matchedWeight, layoutBoxes, boxName, fitLabel, formatCount, percent };
  if (typeof module !== 'undefined' && module.exports) module.exports = api;
  if (typeof document !== 'undefined') start(api);

  function start() {
    const data = JSON.parse(document.getElementById('flame-data').textContent);
    const g = decode(data);
    const el = {
      chart: document.getElementById('chart'), canvas: document.getElementById('canvas'),
      search: document.getElementById('search'), matched: document.getElementById('matched'),
      reset: document.getElementById('reset'), tooltip: document.getElementById('tooltip'),
      tipName: document.getElementById('tip-name'), tipWeight: document.getElementById('tip-weight'),
      empty: document.getElementById('empty'),
    };
    const state = { zoom: 0, hit: null, rows: [], maxDepth: 0, pending: false };
    const minPx = Math.max(data.minWidthPx || 0, 1);

    if (g.total === 0) {
      el.canvas.hidden = true;
      el.empty.hidden = false;
      return;
    }

    // Rows span only the depths drawn, so a graph whose deep frames are all
    // merged away does not leave a screen of empty rows above it.
    function rowOf(depth) { return data.inverted ? depth : state.maxDepth - depth; }

    function draw() {
      state.pending = false;
      const width = el.canvas.clientWidth;
      const boxes = layoutBoxes(g, state.zoom, width, minPx, state.hit);
      state.maxDepth = boxes.reduce(function (max, box) { return Math.max(max, box.depth); }, 0);
      const height = (state.maxDepth + 1) * FRAME_HEIGHT;
      const ratio = window.devicePixelRatio || 1;
      el.canvas.style.height = height + 'px';
      el.canvas.width = Math.round(width * ratio);
      el.canvas.height = Math.round(height * ratio);
      const ctx = el.canvas.getContext('2d');
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.font = FONT;
      ctx.textBaseline = 'middle';
      const charWidth = ctx.measureText('MMMMMMMMMM').width / 10;
      state.rows = [];
      boxes.forEach(function (box) { paint(ctx, box, charWidth); addToRow(box); });
      state.rows.forEach(function (row) { row.sort(function (a, b) { return a.px - b.px; }); });
    }

    // A flame graph stands on its root: start with the root row in view.
    function showRoot() {
      const bottom = el.canvas.getBoundingClientRect().bottom;
      if (!data.inverted && bottom > window.innerHeight) window.scrollBy(0, bottom - window.innerHeight + 8);
    }

    function paint(ctx, box, charWidth) {
      const y = rowOf(box.depth) * FRAME_HEIGHT;
      ctx.globalAlpha = box.ancestor ? 0.55 : 1;
      ctx.fillStyle = box.match ? HIGHLIGHT : colourOf(box);
      ctx.fillRect(box.px, y, box.pw > 3 ? box.pw - 1 : box.pw, FRAME_HEIGHT - 1);
      const maxChars = Math.floor((box.pw - 6) / charWidth);
      if (box.frame >= 0 && maxChars >= 3) {
        const label = fitLabel(boxName(g, box), maxChars);
        if (label) {
          ctx.fillStyle = '#000';
          ctx.fillText(label, box.px + 3, y + FRAME_HEIGHT / 2);
        }
      }
      ctx.globalAlpha = 1;
    }

    function colourOf(box) {
      const k = box.frame < 0 ? -1 : g.name[box.frame];
      return k < 0 ? SLIVER : data.colors[data.nameColor[k]];
    }

    function addToRow(box) {
      (state.rows[box.depth] = state.rows[box.depth] || []).push(box);
    }

    function boxAt(clientX, clientY) {
      const rect = el.canvas.getBoundingClientRect();
      const x = clientX - rect.left;
      const row = Math.floor((clientY - rect.top) / FRAME_HEIGHT);
      const depth = data.inverted ? row : state.maxDepth - row;
      const boxes = state.rows[depth];
      if (!boxes) return null;
      let lo = 0;
      let hi = boxes.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (boxes[mid].px <= x) lo = mid; else hi = mid - 1;
      }
      const box = boxes[lo];
      return box && box.px <= x && x < box.px + box.pw ? box : null;
    }

    function showTooltip(box, clientX, clientY) {
      el.tipName.textContent = boxName(g, box);
      let text = formatCount(box.weight) + ' ' + data.countName + ', ' + percent(box.weight, g.total) + ' of all';
      if (state.zoom !== 0) text += ', ' + percent(box.weight, g.width[state.zoom]) + ' of zoomed frame';
      el.tipWeight.textContent = text;
      el.tooltip.hidden = false;
      const tip = el.tooltip.getBoundingClientRect();
      const left = clientX + 14 + tip.width > window.innerWidth ? clientX - tip.width - 10 : clientX + 14;
      const top = clientY + 16 + tip.height > window.innerHeight ? clientY - tip.height - 10 : clientY + 16;
      el.tooltip.style.left = Math.max(left, 0) + 'px';
      el.tooltip.style.top = Math.max(top, 0) + 'px';
    }

    function zoomTo(frame) {
      state.zoom = frame;
      el.reset.disabled = frame === 0;
      schedule();
    }

    function runSearch() {
      let test = null;
      el.search.classList.remove('invalid');
      try {
        test = compileQuery(el.search.value);
      } catch (err) {
        el.search.classList.add('invalid');
      }
      state.hit = test ? matchNames(g.names, test) : null;
      if (test) {
        const weight = matchedWeight(g, state.hit);
        el.matched.textContent = 'Matched: ' + percent(weight, g.total) + ' (' + formatCount(weight) + ' ' + data.countName + ')';
      } else {
        el.matched.textContent = '';
      }
      schedule();
    }

    function schedule() {
      if (state.pending) return;
      state.pending = true;
      window.requestAnimationFrame(draw);
    }

    el.canvas.addEventListener('mousemove', function (ev) {
      const box = boxAt(ev.clientX, ev.clientY);
      if (box) showTooltip(box, ev.clientX, ev.clientY); else el.tooltip.hidden = true;
    });
    el.canvas.addEventListener('mouseleave', function () { el.tooltip.hidden = true; });
    el.canvas.addEventListener('click', function (ev) {
      const box = boxAt(ev.clientX, ev.clientY);
      if (box && box.frame >= 0) zoomTo(box.frame);
    });
    el.reset.addEventListener('click', function () { zoomTo(0); });
    el.search.addEventListener('input', runSearch);
    document.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape') {
        zoomTo(0);
      } else if (ev.key === '/' && document.activeElement !== el.search) {
        ev.preventDefault();
        el.search.focus();
      }
    });
    window.addEventListener('resize', schedule);
    runSearch();
    draw();
    showRoot();
  }
})();
