// The run page's system charts (issue 45): the metrics each node agent logs as system/node_<rank>/<name>
// (GPU utilisation, memory and power per GPU; CPU, memory, disk, network), one chart per <name> with one
// line per node, so a straggler stands out. One node is highlighted (drawn over the others, the rest
// faded): the node of the run's active alert, else node 0; the legend's buttons pick another.
import { API, getJson, q } from './api.js';
import { el, fmtNum } from './dom.js';

const PAD = { l: 56, r: 12, t: 10, b: 24 };
// GPU figures first (utilisation, then memory, then power; GPU 0 before GPU 1), then the machine's.
const ORDER = ['utilization', 'memory_usage_megabytes', 'memory_usage_percentage', 'power'];
const rank = (name) => {
  const g = /^gpu_(\d+)_(.*)$/.exec(name);
  if (!g) return [1, 0, name];
  const i = ORDER.findIndex((o) => g[2].startsWith(o));
  return [0, i < 0 ? ORDER.length : i, Number(g[1])];
};
const order = (a, b) => {
  const x = rank(a), y = rank(b);
  return x[0] - y[0] || x[1] - y[1] || (typeof x[2] === 'number' ? x[2] - y[2] : String(x[2]).localeCompare(y[2]));
};

// "system/node_3/gpu_0_utilization_percentage" -> { node: 3, name: "gpu_0_utilization_percentage" }
export function splitSystemKey(key) {
  const m = /^system\/node_(\d+)\/(.+)$/.exec(key);
  return m ? { node: Number(m[1]), name: m[2] } : null;
}

export class SystemPanel {
  constructor() {
    this.charts = new Map();  // name -> NodeChart
    this.highlight = null;    // the node picked in a legend; null: the alert's, else 0
    this.grid = el('div', { class: 'charts system' });
    this.legend = el('div', { class: 'legend', role: 'group', 'aria-label': 'Highlight a node' });
    this.empty = el('p', { class: 'muted', text: 'No system metrics logged yet.' });
    this.root = el('div', {}, this.legend, this.grid, this.empty);
  }

  setRun(mlflowRunId) {
    if (mlflowRunId === this.run) return;
    this.run = mlflowRunId;
    this.charts.clear();
    this.grid.replaceChildren();
  }

  // keys: the attempt's system/... metric names; alertNode: the node of the run's active alert, if any.
  async update(keys, live, alertNode) {
    if (!this.run || this.busy) return;
    this.busy = true;
    try {
      const byName = new Map();
      for (const k of keys) {
        const s = splitSystemKey(k);
        if (!s) continue;
        if (!byName.has(s.name)) byName.set(s.name, []);
        byName.get(s.name).push(s.node);
      }
      this.empty.hidden = byName.size > 0;
      const nodes = [...new Set([].concat(...byName.values()))].sort((a, b) => a - b);
      this.nodes = nodes;
      this.alertNode = alertNode;
      this.drawLegend();
      const jobs = [];
      for (const name of [...byName.keys()].sort(order)) {
        let c = this.charts.get(name);
        const fresh = !c;
        if (fresh) {
          c = new NodeChart(name);
          this.charts.set(name, c);
          const all = [...this.charts.keys()].sort(order);
          this.grid.insertBefore(c.root, this.grid.children[all.indexOf(name)] || null);
        }
        c.highlight = this.shown();
        if (fresh || live) jobs.push(this.load(c, byName.get(name)));
        else c.draw();
      }
      await Promise.all(jobs);
    } finally {
      this.busy = false;
    }
  }

  shown() {
    if (this.highlight !== null) return this.highlight;
    return this.alertNode ?? (this.nodes && this.nodes.length ? this.nodes[0] : 0);
  }

  drawLegend() {
    const h = this.shown();
    this.legend.replaceChildren(el('span', { class: 'muted', text: 'Highlight ' }), ...(this.nodes || []).map((n) => {
      const chip = el('button', {
        class: `chip node-chip${n === h ? ' selected' : ''}${n === this.alertNode ? ' failing' : ''}`,
        dataset: { node: n }, 'aria-pressed': n === h ? 'true' : 'false',
        text: `Node ${n}`, onclick: () => this.pick(n),
      });
      chip.style.setProperty('--node-color', nodeColor(n));  // through the CSSOM: the page's CSP forbids style attributes
      return chip;
    }));
  }

  pick(node) {
    this.highlight = node;
    this.drawLegend();
    for (const c of this.charts.values()) { c.highlight = node; c.draw(); }
  }

  async load(c, nodes) {
    const w = c.width();
    const got = await Promise.all(nodes.map((n) =>
      getJson(`${API}/web/metric?${q({ run_id: this.run, key: `system/node_${n}/${c.name}`, points: w })}`)
        .then((r) => [n, r.points]).catch(() => [n, []])));
    c.setData(new Map(got));
  }
}

// A distinct colour per node (golden-angle hues), the same in every chart and the legend.
export function nodeColor(n) {
  return `hsl(${(n * 137.508 + 210) % 360}deg 70% 50%)`;
}

class NodeChart {
  constructor(name) {
    this.name = name;
    this.series = new Map();  // node -> [[step, value], ...]
    this.highlight = 0;
    this.canvas = el('canvas', { class: 'chartcanvas', 'aria-label': `${name} per node against sample` });
    this.readout = el('span', { class: 'readout' });
    this.root = el('div', { class: 'chart nodechart', dataset: { key: `system/${name}` } },
      el('div', { class: 'charthead' }, el('span', { class: 'charttitle', text: name }), this.readout), this.canvas);
    this.root.chart = this;
    new ResizeObserver(() => this.draw()).observe(this.canvas);
  }

  width() { return Math.max(100, Math.round(this.canvas.clientWidth || 600)); }

  setData(series) {
    this.series = series;
    this.root.dataset.nodes = [...series.keys()].join(',');
    this.draw();
  }

  draw() {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const W = c.clientWidth, H = c.clientHeight;
    this.root.dataset.highlight = this.highlight;
    if (!W || !H) return;
    if (c.width !== Math.round(W * dpr)) c.width = Math.round(W * dpr);
    if (c.height !== Math.round(H * dpr)) c.height = Math.round(H * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    let xlo = Infinity, xhi = -Infinity, ylo = Infinity, yhi = -Infinity;
    for (const pts of this.series.values()) for (const [x, y] of pts) {
      if (y === null) continue;
      xlo = Math.min(xlo, x); xhi = Math.max(xhi, x); ylo = Math.min(ylo, y); yhi = Math.max(yhi, y);
    }
    if (xlo === Infinity) { xlo = 0; xhi = 1; ylo = 0; yhi = 1; }
    if (xlo === xhi) { xlo -= 1; xhi += 1; }
    if (ylo === yhi) { ylo -= 1; yhi += 1; }
    if (this.name.endsWith('_percentage')) { ylo = Math.min(ylo, 0); yhi = Math.max(yhi, 100); }
    const pw = W - PAD.l - PAD.r, ph = H - PAD.t - PAD.b;
    const X = (x) => PAD.l + ((x - xlo) / (xhi - xlo)) * pw;
    const Y = (y) => PAD.t + (1 - (y - ylo) / (yhi - ylo)) * ph;
    const css = getComputedStyle(this.root);
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = css.getPropertyValue('--muted').trim();
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    g.fillText(fmtNum(yhi), PAD.l - 6, PAD.t + 4);
    g.fillText(fmtNum(ylo), PAD.l - 6, PAD.t + ph - 4);
    g.textAlign = 'center';
    g.textBaseline = 'top';
    g.fillText(fmtNum(xlo), PAD.l, H - PAD.b + 6);
    g.fillText(fmtNum(xhi), W - PAD.r, H - PAD.b + 6);
    // The others first and faded, the highlighted node last and bold, so it is never hidden.
    const nodes = [...this.series.keys()].sort((a, b) => (a === this.highlight) - (b === this.highlight) || a - b);
    for (const n of nodes) {
      const on = n === this.highlight;
      g.strokeStyle = nodeColor(n);
      g.globalAlpha = on ? 1 : 0.35;
      g.lineWidth = on ? 2.2 : 1.2;
      g.beginPath();
      let pen = false;
      for (const [x, y] of this.series.get(n)) {
        if (y === null) { pen = false; continue; }
        if (pen) g.lineTo(X(x), Y(y)); else g.moveTo(X(x), Y(y));
        pen = true;
      }
      g.stroke();
    }
    g.globalAlpha = 1;
    const last = (this.series.get(this.highlight) || []).filter((p) => p[1] !== null).pop();
    this.readout.textContent = last ? `node ${this.highlight}: ${fmtNum(last[1])}` : '';
  }
}
