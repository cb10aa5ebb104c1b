// What the browser scenarios share: headless chromium with the flags CI needs, sign-in, waiting, and the
// MLflow API's own count of a metric's points.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH, 'x.js'));
const { chromium } = require('playwright-core');

export const env = (k) => { if (!process.env[k]) throw new Error(`${k} is not set`); return process.env[k]; };
export const URL = env('AIR_WEB_URL'), TOKEN = env('AIR_WEB_TOKEN');
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const check = (ok, what) => { if (!ok) throw new Error(`check failed: ${what}`); console.log(`ok: ${what}`); };
export const api = async (p) => (await fetch(URL + p, { headers: { Authorization: `Bearer ${TOKEN}` } })).json();

export async function until(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

// Runs body(page) in a fresh profile; closes the browser and removes the profile whatever happens.
export async function withBrowser(body) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'air-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.AIR_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    return await body(ctx.pages()[0] || await ctx.newPage());
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

export async function signIn(page) {
  await page.goto(URL + '/');
  await page.fill('#token', TOKEN);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
}

// How many points of `key` the latest attempt of `runId` logged, by MLflow's get-history (all pages).
export async function apiPoints(runId, key) {
  const run = await api(`/api/air/v1/runs/${runId}`);
  const mlflow = run.attempts.at(-1).mlflow_run_id;
  let n = 0, token = '';
  do {
    const h = await api(`/api/2.0/mlflow/metrics/get-history?run_id=${mlflow}&metric_key=${key}${token ? `&page_token=${token}` : ''}`);
    n += (h.metrics || []).length;
    token = h.next_page_token || '';
  } while (token);
  return n;
}

export const logTotal = (page) => page.locator('.logbox .logview').getAttribute('data-total').then(Number);
export const chartPoints = (page, key = 'loss') =>
  page.locator(`.chart[data-key="${key}"]`).getAttribute('data-points', { timeout: 500 }).then(Number).catch(() => 0);
