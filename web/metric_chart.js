// A metric against step, drawn on a canvas by our own code (no chart library): hover readout, drag to zoom
// (the owner re-fetches that step range from the server, re-sampled), double-click to reset, exponential
// smoothing, and a second run's curve as an overlay. Charts outside the viewport are not drawn.
import { el, fmtNum } from './dom.js';

const PAD = { l: 56, r: 12, t: 10, b: 24 };
const visible = new IntersectionObserver((entries) => {
  for (const e of entries) {
    e.target.chart.inView = e.isIntersecting;
    if (e.isIntersecting && e.target.chart.dirty) e.target.chart.draw();
  }
});
// Colours come from the CSS variables of the theme in force: a theme change redraws every chart.
const charts = new Set();
const redrawAll = () => { for (const c of charts) if (c.root.isConnected) c.draw(); else charts.delete(c); };
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', redrawAll);
window.addEventListener('air:theme', redrawAll);

// TensorBoard's debiased exponential moving average; nulls (NaN, infinities) are skipped.
export function smooth(points, w) {
  if (!w) return points;
  let last = 0, n = 0;
  return points.map(([x, y, t]) => {
    if (y === null) return [x, null, t];
    last = last * w + (1 - w) * y;
    n++;
    return [x, last / (1 - w ** n), t];
  });
}

function ticks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out;
}

export class Chart {
  constructor(key, { onZoom }) {
    this.key = key;
    this.onZoom = onZoom;
    this.main = [];
    this.overlay = null;
    this.smoothing = 0;
    this.zoom = null;  // [lo, hi] steps, or null for the whole run
    this.hover = null;
    this.readout = el('span', { class: 'readout' });
    this.canvas = el('canvas', { class: 'chartcanvas', 'aria-label': `${key} against step` });
    this.root = el('div', { class: 'chart', dataset: { key } },
      el('div', { class: 'charthead' }, el('span', { class: 'charttitle', text: key }), this.readout), this.canvas);
    this.root.chart = this;
    charts.add(this);
    visible.observe(this.root);
    new ResizeObserver(() => this.draw()).observe(this.canvas);
    this.bindMouse();
  }

  width() { return Math.max(100, Math.round(this.canvas.clientWidth || 600)); }

  setData(main, overlay = this.overlay) {
    this.main = main;
    this.overlay = overlay;
    this.root.dataset.points = main.length;
    this.root.dataset.overlayPoints = overlay ? overlay.length : 0;
    this.draw();
  }

  bindMouse() {
    const c = this.canvas;
    const stepAt = (e) => this.xInv(e.offsetX);
    c.addEventListener('mousedown', (e) => { this.drag = { x0: e.offsetX, x1: e.offsetX }; });
    c.addEventListener('mousemove', (e) => {
      if (this.drag) this.drag.x1 = e.offsetX;
      this.hover = stepAt(e);
      this.draw();
    });
    c.addEventListener('mouseleave', () => { this.hover = null; this.draw(); });
    window.addEventListener('mouseup', () => {
      if (!this.drag) return;
      const { x0, x1 } = this.drag;
      this.drag = null;
      if (Math.abs(x1 - x0) > 4) {
        const a = this.xInv(Math.min(x0, x1)), b = this.xInv(Math.max(x0, x1));
        this.zoom = [a, b];
        this.onZoom(this);
      }
      this.draw();
    });
    c.addEventListener('dblclick', () => { this.zoom = null; this.onZoom(this); });
  }

  domain() {
    if (this.zoom) return this.zoom;
    let lo = Infinity, hi = -Infinity;
    for (const s of [this.main, this.overlay || []]) if (s.length) { lo = Math.min(lo, s[0][0]); hi = Math.max(hi, s[s.length - 1][0]); }
    if (lo === Infinity) return [0, 1];
    return lo === hi ? [lo - 1, hi + 1] : [lo, hi];
  }

  xInv(px) {
    const [lo, hi] = this.domain(), w = this.canvas.clientWidth - PAD.l - PAD.r;
    return lo + ((px - PAD.l) / Math.max(1, w)) * (hi - lo);
  }

  draw() {
    if (!this.inView) { this.dirty = true; return; }
    this.dirty = false;
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const W = c.clientWidth, H = c.clientHeight;
    if (!W || !H) return;
    if (c.width !== Math.round(W * dpr)) c.width = Math.round(W * dpr);
    if (c.height !== Math.round(H * dpr)) c.height = Math.round(H * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    const css = getComputedStyle(this.root);
    const color = (name) => css.getPropertyValue(name).trim();
    const [xlo, xhi] = this.domain();
    const series = [
      { pts: this.main, col: color('--series'), raw: true },
      ...(this.overlay ? [{ pts: this.overlay, col: color('--overlay'), dash: [5, 4] }] : []),
    ];
    const shown = series.map((s) => ({ ...s, sm: smooth(s.pts, this.smoothing) }));
    let ylo = Infinity, yhi = -Infinity;
    for (const s of shown) for (const set of [s.pts, s.sm]) for (const [x, y] of set)
      if (y !== null && x >= xlo && x <= xhi) { ylo = Math.min(ylo, y); yhi = Math.max(yhi, y); }
    if (ylo === Infinity) { ylo = 0; yhi = 1; }
    if (ylo === yhi) { ylo -= 1; yhi += 1; }
    const padY = (yhi - ylo) * 0.05;
    ylo -= padY; yhi += padY;
    const pw = W - PAD.l - PAD.r, ph = H - PAD.t - PAD.b;
    const X = (x) => PAD.l + ((x - xlo) / (xhi - xlo)) * pw;
    const Y = (y) => PAD.t + (1 - (y - ylo) / (yhi - ylo)) * ph;
    this.axes(g, color, { xlo, xhi, ylo, yhi, X, Y, W, H });
    g.save();
    g.beginPath();
    g.rect(PAD.l, PAD.t, pw, ph);
    g.clip();
    for (const s of shown) {
      if (this.smoothing && s.raw) this.line(g, s.pts, X, Y, s.col, 1, [], 0.3);
      this.line(g, s.sm, X, Y, s.col, 1.6, s.dash || [], 1);
    }
    if (this.drag) {
      g.fillStyle = color('--zoombox');
      g.fillRect(Math.min(this.drag.x0, this.drag.x1), PAD.t, Math.abs(this.drag.x1 - this.drag.x0), ph);
    }
    g.restore();
    this.drawHover(g, shown, X, Y, color, ph);
  }

  line(g, pts, X, Y, col, width, dash, alpha) {
    g.strokeStyle = col;
    g.lineWidth = width;
    g.globalAlpha = alpha;
    g.setLineDash(dash);
    g.beginPath();
    let pen = false;
    for (const [x, y] of pts) {
      if (y === null) { pen = false; continue; }
      if (pen) g.lineTo(X(x), Y(y)); else g.moveTo(X(x), Y(y));
      pen = true;
    }
    g.stroke();
    if (pts.length === 1 && pts[0][1] !== null) { g.fillStyle = col; g.fillRect(X(pts[0][0]) - 2, Y(pts[0][1]) - 2, 4, 4); }
    g.globalAlpha = 1;
    g.setLineDash([]);
  }

  axes(g, color, { xlo, xhi, ylo, yhi, X, Y, W, H }) {
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = color('--muted');
    g.strokeStyle = color('--grid');
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const v of ticks(ylo, yhi, 4)) {
      g.beginPath(); g.moveTo(PAD.l, Y(v)); g.lineTo(W - PAD.r, Y(v)); g.stroke();
      g.fillText(fmtNum(v), PAD.l - 6, Y(v));
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const v of ticks(xlo, xhi, 6)) g.fillText(fmtNum(v), X(v), H - PAD.b + 6);
  }

  drawHover(g, shown, X, Y, color, ph) {
    if (this.hover === null || !this.main.length) { this.readout.textContent = this.zoom ? 'zoomed · double-click to reset' : ''; return; }
    const nearest = (pts) => {
      let best = null;
      for (const p of pts) if (p[1] !== null && (!best || Math.abs(p[0] - this.hover) < Math.abs(best[0] - this.hover))) best = p;
      return best;
    };
    const p = nearest(shown[0].sm);
    if (!p) return;
    g.strokeStyle = color('--muted');
    g.beginPath(); g.moveTo(X(p[0]), PAD.t); g.lineTo(X(p[0]), PAD.t + ph); g.stroke();
    g.fillStyle = shown[0].col;
    g.beginPath(); g.arc(X(p[0]), Y(p[1]), 3.5, 0, 7); g.fill();
    const raw = nearest(this.main);
    let text = `step ${p[0]}: ${fmtNum(raw && raw[0] === p[0] ? raw[1] : p[1])}`;
    if (this.smoothing) text += ` (smoothed ${fmtNum(p[1])})`;
    if (shown[1]) { const o = nearest(shown[1].sm); if (o) text += ` · other ${fmtNum(o[1])} @ ${o[0]}`; }
    this.readout.textContent = text;
  }
}
