// Talking to the workspace: the token lives in sessionStorage only (gone when the tab closes) and travels
// as a bearer header, never in a URL.
const KEY = 'air.token';

export const token = () => sessionStorage.getItem(KEY) || '';
export const setToken = (t) => sessionStorage.setItem(KEY, t);
export const signOut = () => sessionStorage.removeItem(KEY);

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function request(path, opts = {}) {
  const headers = { Authorization: `Bearer ${opts.token ?? token()}` };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body, signal: opts.signal, cache: 'no-store' });
  if (!res.ok) {
    let msg = `${res.status} ${res.statusText}`;
    try {
      msg = (await res.json()).error.message || msg;
    } catch { /* not JSON */ }
    // A refused token while signed in signs the page out (not while trying a token at sign-in).
    if (res.status === 401 && opts.token === undefined) window.dispatchEvent(new Event('air:unauthenticated'));
    throw new ApiError(res.status, msg);
  }
  return res;
}

export const getJson = async (path, opts) => (await request(path, opts)).json();
export const getBlob = async (path, opts) => (await request(path, opts)).blob();
// The page's one action so far: POST with a JSON body (cancel a run). The bearer header, not a cookie, carries
// the token, so another site cannot make the browser send it.
export const postJson = async (path, body = {}) =>
  (await request(path, { method: 'POST', body: JSON.stringify(body) })).json();

export const API = '/api/air/v1';
export const nodePath = (run, attempt, node) => `${API}/runs/${encodeURIComponent(run)}/attempts/${attempt}/nodes/${node}`;
export const q = (params) => new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null)).toString();
