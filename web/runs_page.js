// The runs list: status, experiment, accelerators x nodes, submitted, duration, latest loss; filters by
// status and experiment (kept in the URL's hash); refreshed every second so status changes show live.
import { API, getJson } from './api.js';
import { el, fmtDuration, fmtNum, fmtTime, stateBadge } from './dom.js';

const STATES = ['', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED', 'TIMED_OUT'];

export function runsView(root, params) {
  const filter = { status: params.get('status') || '', experiment: params.get('experiment') || '' };
  const setHash = () => {
    const p = new URLSearchParams(Object.entries(filter).filter(([, v]) => v));
    history.replaceState(null, '', `#/runs${p.toString() ? `?${p}` : ''}`);
  };
  const status = el('select', { 'aria-label': 'Status', onchange: (e) => { filter.status = e.target.value; setHash(); draw(); } },
    STATES.map((s) => el('option', { value: s, text: s || 'All statuses', selected: s === filter.status })));
  const exp = el('select', { 'aria-label': 'Experiment', onchange: (e) => { filter.experiment = e.target.value; setHash(); draw(); } });
  const body = el('tbody');
  const count = el('span', { class: 'muted' });
  root.replaceChildren(
    el('div', { class: 'toolbar' }, el('h1', { text: 'Runs' }), status, exp, count),
    el('table', { class: 'runs' },
      el('thead', {}, el('tr', {}, ['Run', 'Status', 'Experiment', 'Accelerators', 'Submitted', 'Duration', 'Latest loss']
        .map((h) => el('th', { text: h })))),
      body));
  let runs = [];

  function draw() {
    const exps = [...new Set(runs.map((r) => r.experiment_name))].sort();
    const cur = filter.experiment;
    exp.replaceChildren(el('option', { value: '', text: 'All experiments' }),
      ...exps.map((x) => el('option', { value: x, text: x, selected: x === cur })));
    const shown = runs.filter((r) => (!filter.status || r.state === filter.status) && (!filter.experiment || r.experiment_name === filter.experiment));
    count.textContent = `${shown.length} of ${runs.length}`;
    body.replaceChildren(...shown.map(row));
    if (!shown.length) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted', text: runs.length ? 'No run matches the filters.' : 'No runs yet: air run -f train.yaml' })));
  }

  function row(r) {
    const end = r.ended_at_ms || Date.now();
    return el('tr', { class: `runrow st-${r.state.toLowerCase()}`, dataset: { run: r.run_id } },
      el('td', {}, el('a', { href: `#/runs/${encodeURIComponent(r.run_id)}`, text: r.run_id })),
      // A queued run shows its place (as `air list` does: PENDING #N); the scheduler's sentence is its title.
      el('td', {}, stateBadge(r.state), r.state === 'PENDING' && r.queue_position
        ? el('span', { class: 'queue muted', title: r.status_message || '', text: ` #${r.queue_position}` }) : null),
      el('td', { text: r.experiment_name || '—' }),
      el('td', { text: `${r.num_accelerators} × ${r.accelerator_type} (${r.num_nodes} node${r.num_nodes === 1 ? '' : 's'})` }),
      el('td', { text: fmtTime(r.submitted_at_ms) }),
      el('td', { text: r.started_at_ms ? fmtDuration(end - r.started_at_ms) : '—' }),
      el('td', { class: 'num', text: fmtNum(r.latest_loss) }));
  }

  let timer = 0, alive = true;
  async function refresh() {
    try {
      runs = (await getJson(`${API}/web/runs?all_status=1`)).runs;
      draw();
    } catch (e) {
      count.textContent = `error: ${e.message}`;
    }
    if (alive) timer = setTimeout(refresh, 1000);
  }
  refresh();
  return () => { alive = false; clearTimeout(timer); };
}
