// The run page: summary, attempts, nodes (the first failing node highlighted, fatal lines marked), charts
// of every metric, a live log per node, and the configuration (the YAML as submitted: secret references
// only, values never leave the workspace). Polls the run every second until it ends. A run not over has a
// Cancel button (two clicks: the first arms it for 5 s); the workspace decides who may (CAN_MANAGE_RUN) and
// its refusal is shown as it says it.
import { API, getJson, postJson } from './api.js';
import { ChartsPanel } from './charts_panel.js';
import { el, fmtDuration, fmtTime, stateBadge, TERMINAL } from './dom.js';
import { LogView } from './logview.js';
import { classify } from './patterns.js';
import { SystemPanel } from './system_charts.js';

export function runView(root, runId) {
  const page = new RunPage(root, runId);
  page.refresh();
  return () => page.destroy();
}

class RunPage {
  constructor(root, runId) {
    this.id = runId;
    this.attempt = null;      // the attempt shown; null: follow the newest
    this.logs = new Map();    // node -> LogView of the attempt shown
    this.tab = 0;
    this.alive = true;
    this.charts = new ChartsPanel();
    this.system = new SystemPanel();
    this.alerts = el('ul', { class: 'alerts', hidden: true });
    this.head = el('div', { class: 'runhead' });
    this.cancelBtn = el('button', { id: 'cancel', class: 'btn danger', type: 'button', text: 'Cancel run',
      onclick: () => this.cancel() });
    this.cancelMsg = el('span', { class: 'cancelmsg', role: 'status' });
    this.attempts = el('div', { class: 'attempts' });
    this.failure = el('div', { class: 'failure', hidden: true });
    this.nodes = el('tbody');
    this.tabs = el('div', { class: 'tabs', role: 'tablist' });
    this.logBox = el('div', { class: 'logbox' });
    this.config = el('pre', { class: 'yaml' });
    this.overlay = el('select', { 'aria-label': 'Overlay another run', onchange: (e) => this.setOverlay(e.target.value) });
    const smoothing = el('input', { type: 'range', min: 0, max: 0.99, step: 0.01, value: 0, 'aria-label': 'Smoothing',
      oninput: (e) => { this.charts.setSmoothing(Number(e.target.value)); smoothVal.textContent = Number(e.target.value).toFixed(2); } });
    const smoothVal = el('span', { class: 'muted', text: '0.00' });
    root.replaceChildren(
      el('p', {}, el('a', { href: '#/runs', text: '← Runs' })),
      this.head, this.alerts, this.attempts, this.failure,
      el('section', {}, el('h2', { text: 'Nodes' }),
        el('table', { class: 'nodes' }, el('thead', {}, el('tr', {}, ['Node', 'State', 'Exit code', 'Host', 'PID', 'GPUs', 'Log', 'Message']
          .map((h) => el('th', { text: h })))), this.nodes)),
      el('section', {}, el('div', { class: 'toolbar' }, el('h2', { text: 'Metrics' }),
        el('label', {}, 'Smoothing ', smoothing, ' ', smoothVal), el('label', {}, 'Overlay ', this.overlay),
        el('span', { class: 'muted', text: 'drag to zoom · double-click to reset' })), this.charts.root),
      el('section', {}, el('h2', { text: 'System (per node)' }), this.system.root),
      el('section', {}, el('h2', { text: 'Logs' }), this.tabs, this.logBox),
      el('section', {}, el('details', { open: true }, el('summary', {}, el('h2', { text: 'Configuration' })), this.config)));
    this.loadOverlayChoices();
  }

  destroy() {
    this.alive = false;
    clearTimeout(this.timer);
    clearTimeout(this.disarm);
    for (const v of this.logs.values()) v.destroy();
  }

  async refresh() {
    try {
      this.run = await getJson(`${API}/runs/${encodeURIComponent(this.id)}`);
      this.draw();
    } catch (e) {
      this.head.replaceChildren(el('h1', { text: `Run ${this.id}` }), el('p', { class: 'error', text: e.message }));
    }
    const live = !this.run || !TERMINAL.has(this.run.state);
    if (this.alive && (live || !this.settled)) this.timer = setTimeout(() => this.refresh(), 1000);
    if (this.run && !live) this.settled = true;  // one more pass after the end picks up the final metrics
  }

  async cancel() {
    if (!this.armed) {
      this.armed = true;
      this.cancelBtn.textContent = 'Click again to cancel';
      this.cancelMsg.textContent = '';
      this.cancelMsg.classList.remove('error');
      this.disarm = setTimeout(() => { this.armed = false; this.cancelBtn.textContent = 'Cancel run'; }, 5000);
      return;
    }
    clearTimeout(this.disarm);
    this.armed = false;
    this.cancelBtn.disabled = true;
    this.cancelBtn.textContent = 'Cancelling…';
    try {
      await postJson(`${API}/runs/${encodeURIComponent(this.id)}/cancel`);
      this.cancelMsg.textContent = 'Cancel requested: the nodes are being stopped.';
    } catch (e) {
      this.cancelMsg.textContent = e.message;
      this.cancelMsg.classList.add('error');
      this.cancelBtn.disabled = false;
    }
    this.cancelBtn.textContent = 'Cancel run';
  }

  shownAttempt() {
    const as = this.run.attempts;
    if (!as.length) return null;
    return as.find((a) => a.number === this.attempt) || as[as.length - 1];
  }

  draw() {
    const r = this.run;
    const end = r.ended_at_ms || Date.now();
    const over = TERMINAL.has(r.state);
    this.head.replaceChildren(...[
      el('h1', {}, `Run ${r.run_id} `, stateBadge(r.state)),
      over ? null : el('div', { class: 'actions' }, this.cancelBtn, ' ', this.cancelMsg),
      el('dl', { class: 'facts' },
        fact('Experiment', r.experiment_name || '—'),
        fact('Accelerators', `${r.num_accelerators} × ${r.accelerator_type} (${r.num_nodes} node${r.num_nodes === 1 ? '' : 's'} of ${r.accelerators_per_node})`),
        fact('Submitted', fmtTime(r.submitted_at_ms)),
        fact('Duration', r.started_at_ms ? fmtDuration(end - r.started_at_ms) : '—'),
        fact('Retries', `${Math.max(0, r.attempts.length - 1)} of ${r.max_retries < 0 ? '∞' : r.max_retries}`),
        r.status_message ? fact('Status', r.status_message) : null)].filter(Boolean));
    this.config.textContent = r.workload_yaml || '';
    this.drawAlerts(r);
    const a = this.shownAttempt();
    this.attempts.replaceChildren(el('span', { class: 'muted', text: 'Attempts ' }), ...r.attempts.map((x) =>
      el('button', { class: `chip st-${x.state.toLowerCase()}${a && x.number === a.number ? ' selected' : ''}`,
        text: `#${x.number} ${x.state}`, onclick: () => { this.attempt = x.number; this.draw(); } })));
    if (!a) return;
    this.drawFailure(a);
    this.drawNodes(a);
    this.drawLogs(a);
    this.charts.setRun(a.mlflow_run_id);
    this.system.setRun(a.mlflow_run_id);
    // The training code's metrics in the charts above; the agents' system/... metrics per node below.
    const keys = a.metrics.map((m) => m.key), own = keys.filter((k) => !k.startsWith('system/'));
    const live = !TERMINAL.has(a.state) || !this.settled;
    const alert = (r.alerts || []).filter((x) => x.attempt === a.number && x.active).pop()
      || (r.alerts || []).filter((x) => x.attempt === a.number).pop();
    if (a.mlflow_run_id) {
      this.charts.update(own, live);
      this.system.update(keys.filter((k) => k.startsWith('system/')), live, alert ? alert.node : undefined);
    }
  }

  // Stall and straggler alerts (core/health/stall.h): the active ones first.
  drawAlerts(r) {
    const list = [...(r.alerts || [])].sort((x, y) => (y.active - x.active) || (y.at_ms - x.at_ms));
    this.alerts.hidden = !list.length;
    this.alerts.replaceChildren(...list.map((x) => el('li', {
      class: `alert ${x.kind}${x.active ? ' active' : ''}`, dataset: { node: x.node, kind: x.kind },
    }, el('strong', { text: `${x.kind === 'stall' ? 'Stall' : 'Straggler'} · attempt ${x.attempt} · node ${x.node}` }),
    el('span', { text: ` ${fmtTime(x.at_ms)}: ${x.message}${x.active ? '' : ' (over)'}` }))));
  }

  drawFailure(a) {
    this.failure.hidden = a.failing_node === undefined || a.failing_node === null;
    if (this.failure.hidden) return;
    const exit = a.failing_exit_code ?? 'none';
    this.failure.replaceChildren(
      el('strong', { text: `Node ${a.failing_node} failed first (exit code ${exit})` }),
      a.reason ? el('span', { text: `: ${a.reason}` }) : null,
      el('pre', { class: 'lastlines' }, (a.failing_lines || []).map((l) => el('div', { class: classify(l) || null, text: l }))),
      el('button', { class: 'btn', text: `Open node ${a.failing_node}'s log`, onclick: () => this.showTab(a.failing_node) }));
  }

  drawNodes(a) {
    this.nodes.replaceChildren(...a.nodes.map((n) => el('tr', {
      class: `noderow st-${n.state.toLowerCase()}${n.rank === a.failing_node ? ' failing' : ''}`,
      dataset: { node: n.rank }, onclick: () => this.showTab(n.rank),
    },
    el('td', { text: n.rank }), el('td', {}, stateBadge(n.state)), el('td', { class: 'num', text: n.exit_code ?? '—' }),
    el('td', { text: n.host || '—' }), el('td', { text: n.pid ?? '—' }), el('td', { text: n.gpus || '—' }),
    el('td', { class: 'num', text: fmtBytes(n.log_bytes) }),
    el('td', { text: n.message || '' }))));
  }

  drawLogs(a) {
    if (this.logAttempt !== a.number) {
      for (const v of this.logs.values()) v.destroy();
      this.logs.clear();
      this.logAttempt = a.number;
      this.tab = a.failing_node ?? 0;
    }
    for (const n of a.nodes) {
      if (!this.logs.has(n.rank)) this.logs.set(n.rank, new LogView({ run: this.id, attempt: a.number, node: n.rank }));
    }
    this.tabs.replaceChildren(...a.nodes.map((n) => el('button', {
      class: `tab st-${n.state.toLowerCase()}${n.rank === this.tab ? ' selected' : ''}${n.rank === a.failing_node ? ' failing' : ''}`,
      role: 'tab', 'aria-selected': n.rank === this.tab ? 'true' : 'false', dataset: { node: n.rank },
      text: `Node ${n.rank}`, onclick: () => this.showTab(n.rank),
    })));
    const view = this.logs.get(this.tab);
    if (view && this.logBox.firstChild !== view.root) {
      for (const [rank, v] of this.logs) if (rank !== this.tab) v.stop();
      this.logBox.replaceChildren(view.root);
      view.start();
    }
  }

  showTab(rank) {
    this.tab = rank;
    const a = this.shownAttempt();
    if (a) this.drawLogs(a);
    this.logBox.scrollIntoView({ block: 'nearest' });
  }

  async loadOverlayChoices() {
    try {
      const runs = (await getJson(`${API}/web/runs?all_status=1`)).runs.filter((x) => x.run_id !== this.id);
      this.overlay.replaceChildren(el('option', { value: '', text: 'none' }),
        ...runs.map((x) => el('option', { value: x.run_id, text: `${x.run_id} (${x.experiment_name || '—'}, ${x.state})` })));
    } catch { /* the overlay stays empty */ }
  }

  async setOverlay(runId) {
    if (!runId) return this.charts.setOverlay(null);
    const other = await getJson(`${API}/runs/${encodeURIComponent(runId)}`);
    const a = [...other.attempts].reverse().find((x) => x.mlflow_run_id);
    await this.charts.setOverlay(a ? a.mlflow_run_id : null);
  }
}

function fmtBytes(n) {
  if (!n) return '—';
  const units = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

function fact(k, v) {
  return el('div', {}, el('dt', { text: k }), el('dd', { text: v }));
}
