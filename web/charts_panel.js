// The run page's charts: one per metric of the attempt, each fetched downsampled to its pixel width; while
// the run trains, rows after the page's cursor are appended (or, once a series is sampled, the series is
// re-sampled); a zoom re-samples that step range; another run's curve can be overlaid.
import { API, getJson, q } from './api.js';
import { Chart } from './metric_chart.js';
import { el } from './dom.js';

// The training loss first and the eval loss (air-train's eval_loss) beside it, then the rest by name.
const rank = (k) => (k === 'loss' ? 0 : k === 'eval_loss' ? 1 : 2);
const order = (a, b) => rank(a) - rank(b) || a.localeCompare(b);

export class ChartsPanel {
  constructor() {
    this.charts = new Map();  // key -> { chart, rows, sampled }
    this.smoothing = 0;
    this.overlayRun = null;
    this.grid = el('div', { class: 'charts' });
    this.empty = el('p', { class: 'muted', text: 'No metrics logged yet.' });
    this.root = el('div', {}, this.grid, this.empty);
  }

  setRun(mlflowRunId) {
    if (mlflowRunId === this.run) return;
    this.run = mlflowRunId;
    this.charts.clear();
    this.grid.replaceChildren();
  }

  setSmoothing(w) {
    this.smoothing = w;
    for (const { chart } of this.charts.values()) { chart.smoothing = w; chart.draw(); }
  }

  async setOverlay(mlflowRunId) {
    this.overlayRun = mlflowRunId;
    await Promise.all([...this.charts.values()].map((c) => this.loadOverlay(c)));
  }

  // keys: the attempt's metric names; live: the run still trains.
  async update(keys, live) {
    if (!this.run || this.busy) return;  // the previous update is still out: skip this second
    this.busy = true;
    try {
      await this.updateNow(keys, live);
    } finally {
      this.busy = false;
    }
  }

  async updateNow(keys, live) {
    this.empty.hidden = keys.length > 0;
    const jobs = [];
    for (const key of [...keys].sort(order)) {
      let c = this.charts.get(key);
      if (!c) {
        c = { key, rows: 0, sampled: false };
        c.chart = new Chart(key, { onZoom: () => this.load(c) });
        c.chart.smoothing = this.smoothing;
        this.charts.set(key, c);
        const all = [...this.charts.keys()].sort(order);
        this.grid.insertBefore(c.chart.root, this.grid.children[all.indexOf(key)] || null);
        jobs.push(this.load(c), this.loadOverlay(c));
      } else if (live) {
        jobs.push(this.refresh(c));
      }
    }
    await Promise.all(jobs);
  }

  series(key, run, extra) {
    return getJson(`${API}/web/metric?${q({ run_id: run, key, ...extra })}`);
  }

  async load(c) {
    const z = c.chart.zoom;
    const r = await this.series(c.key, this.run, { points: c.chart.width(), min_step: z?.[0], max_step: z?.[1] });
    if (!z) { c.rows = r.rows_in_range; c.sampled = r.sampled; }
    c.chart.setData(r.points);
    c.chart.root.dataset.totalRows = r.total_rows;
    c.chart.root.dataset.sampled = r.sampled;
  }

  async refresh(c) {
    if (c.chart.zoom) return;  // keep the user's view; double-click returns to the live one
    if (c.sampled) return this.load(c);
    const r = await this.series(c.key, this.run, { after: c.rows });
    if (!r.points.length) return;
    if (r.total_rows > c.chart.width()) return this.load(c);
    c.rows = r.total_rows;
    c.chart.setData(c.chart.main.concat(r.points));
    c.chart.root.dataset.totalRows = r.total_rows;
  }

  async loadOverlay(c) {
    if (!this.overlayRun) { c.chart.setData(c.chart.main, null); return; }
    try {
      const r = await this.series(c.key, this.overlayRun, { points: c.chart.width() });
      c.chart.setData(c.chart.main, r.points);
    } catch {
      c.chart.setData(c.chart.main, null);  // the other run did not log this metric
    }
  }
}
