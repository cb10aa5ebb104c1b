// The page's entry: sign-in with the workspace token, the light/dark theme, and the hash router
// (#/runs, #/runs/<id>, #/usage). Nothing here reads or writes the token except through api.js.
import { API, ApiError, getJson, setToken, signOut, token } from './api.js';
import { el } from './dom.js';
import { runView } from './run_page.js';
import { runsView } from './runs_page.js';
import { usageView } from './usage_page.js';

const main = document.getElementById('app');
let leave = null;

function signInView(message) {
  const input = el('input', { type: 'password', id: 'token', autocomplete: 'off', placeholder: 'workspace token', required: true });
  const err = el('p', { class: 'error', text: message || '' });
  const form = el('form', { class: 'signin', onsubmit: async (e) => {
    e.preventDefault();
    try {
      await getJson(`${API}/runs?limit=1`, { token: input.value.trim() });
      setToken(input.value.trim());
      route();
    } catch (x) {
      err.textContent = x instanceof ApiError && x.status === 401 ? 'That token is not valid for this workspace.' : x.message;
    }
  } },
  el('h1', { text: 'Sign in' }),
  el('p', { class: 'muted', text: 'Paste the workspace token (air ui --token prints it). It stays in this tab only.' }),
  input, el('button', { class: 'btn primary', type: 'submit', text: 'Sign in' }), err);
  main.replaceChildren(form);
  input.focus();
}

function route() {
  if (leave) { leave(); leave = null; }
  document.getElementById('signout').hidden = !token();
  if (!token()) return signInView();
  const [path, query] = (location.hash.slice(1) || '/runs').split('?');
  const params = new URLSearchParams(query || '');
  const m = /^\/runs\/([A-Za-z0-9_-]+)$/.exec(path);
  if (m) {
    document.title = `${m[1]} · air`;
    leave = runView(main, m[1]);
  } else if (path === '/usage') {
    document.title = 'Usage · air';
    leave = usageView(main);
  } else {
    document.title = 'Runs · air';
    leave = runsView(main, params);
  }
}

function initTheme() {
  const saved = localStorage.getItem('air.theme');
  if (saved) document.documentElement.dataset.theme = saved;
  document.getElementById('theme').addEventListener('click', () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === 'dark'
      : matchMedia('(prefers-color-scheme: dark)').matches;
    document.documentElement.dataset.theme = dark ? 'light' : 'dark';
    localStorage.setItem('air.theme', document.documentElement.dataset.theme);
    window.dispatchEvent(new Event('air:theme'));
  });
}

document.getElementById('signout').addEventListener('click', () => { signOut(); route(); });
window.addEventListener('air:unauthenticated', () => { signOut(); if (leave) { leave(); leave = null; } signInView('Signed out: the token was not accepted.'); });
window.addEventListener('hashchange', route);
initTheme();
route();
