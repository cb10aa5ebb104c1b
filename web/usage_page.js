// #/usage: who used how many GPU-hours (GET /api/air/v1/usage; admins see every user, a user its own) and
// the quotas in force (GET /api/air/v1/quotas). docs/scheduler.md "Usage".
import { API, getJson, q } from './api.js';
import { el } from './dom.js';

const WINDOWS = [['1 day', 86400e3], ['7 days', 7 * 86400e3], ['30 days', 30 * 86400e3], ['all time', 0]];
const BY = ['user', 'group', 'pool', 'class', 'policy'];
const hours = (s) => (s / 3600).toFixed(2);
const limit = (n) => (n < 0 ? '-' : String(n));

export function usageView(root) {
  const state = { by: 'user', window: 7 * 86400e3 };
  const body = el('tbody');
  const total = el('span', { class: 'muted' });
  const quotas = el('tbody');
  const err = el('p', { class: 'error' });
  const by = el('select', { 'aria-label': 'Group by', onchange: (e) => { state.by = e.target.value; load(); } },
    BY.map((b) => el('option', { value: b, text: `by ${b}`, selected: b === state.by })));
  const win = el('select', { 'aria-label': 'Since', onchange: (e) => { state.window = Number(e.target.value); load(); } },
    WINDOWS.map(([t, ms]) => el('option', { value: ms, text: t, selected: ms === state.window })));
  root.replaceChildren(
    el('div', { class: 'toolbar' }, el('h1', { text: 'GPU usage' }), by, win, total),
    el('table', { class: 'runs', id: 'usage' },
      el('thead', {}, el('tr', {}, ['Who', 'GPU-hours', 'Wall hours', 'Attempts', 'Runs'].map((h) => el('th', { text: h })))), body),
    el('h2', { text: 'Quotas' }),
    el('table', { class: 'runs', id: 'quotas' },
      el('thead', {}, el('tr', {}, ['Kind', 'Name', 'Pool', 'GPUs at once', 'Queued runs', 'Set by'].map((h) => el('th', { text: h })))), quotas),
    err);
  let gone = false;

  async function load() {
    try {
      const since = state.window ? Date.now() - state.window : 0;
      const u = await getJson(`${API}/usage?${q({ by: state.by, since_ms: since })}`);
      if (gone) return;
      const rows = u.rows || [];
      body.replaceChildren(...rows.map((r) => el('tr', {},
        el('td', { text: r.key || '(none)' }), el('td', { text: hours(r.gpu_seconds) }), el('td', { text: hours(r.wall_seconds) }),
        el('td', { text: String(r.attempts) }), el('td', { text: String(r.runs) }))));
      if (!rows.length) body.append(el('tr', {}, el('td', { colspan: 5, class: 'muted', text: 'No usage recorded in this window.' })));
      const sum = rows.reduce((s, r) => s + r.gpu_seconds, 0);
      total.textContent = `${hours(sum)} GPU-hours${u.user ? ` (${u.user}'s own)` : ' (every user)'}`;
      const qs = (await getJson(`${API}/quotas`)).quotas || [];
      quotas.replaceChildren(...qs.map((x) => el('tr', {},
        el('td', { text: x.kind }), el('td', { text: x.name }), el('td', { text: x.pool === '*' ? '(all)' : x.pool }),
        el('td', { text: limit(x.max_gpus) }), el('td', { text: limit(x.max_queued) }), el('td', { text: x.set_by }))));
      if (!qs.length) quotas.append(el('tr', {}, el('td', { colspan: 6, class: 'muted', text: 'No quotas.' })));
      err.textContent = '';
    } catch (x) {
      err.textContent = x.message;
    }
  }
  load();
  const timer = setInterval(load, 30000);
  return () => { gone = true; clearInterval(timer); };
}
