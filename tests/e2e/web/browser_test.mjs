// Drives the run page in headless chromium (playwright-core, Debian's /usr/bin/chromium) for
// tests/e2e/web_browser.sh. Prints a table of figures and exits non-zero on the first failed check.
import fs from 'node:fs';
import { api, apiPoints, chartPoints as points, check, env, logTotal, sleep, TOKEN, until, URL, withBrowser } from './browser_lib.mjs';

const SECRET = env('AIR_WEB_SECRET');
const LIVE = env('AIR_WEB_LIVE'), FAILED = env('AIR_WEB_FAILED'), BIG = env('AIR_WEB_BIG'), OUT = env('AIR_WEB_OUT');
const figures = [];
const traffic = [];  // every request's URL and headers and every response body the page saw
await withBrowser(async (page) => {
  page.on('request', (r) => traffic.push(`${r.method()} ${r.url()} ${JSON.stringify(r.headers())}`));
  page.on('response', async (r) => { try { traffic.push(await r.text()); } catch { /* streamed or aborted */ } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));

  // ---- sign in; the runs list
  await page.goto(URL + '/');
  await page.fill('#token', 'not-the-token');
  await page.click('form.signin button[type=submit]');
  await until(() => page.locator('form.signin .error').textContent().then((t) => t.includes('not valid')), 5000, 'a refused token');
  await page.fill('#token', TOKEN);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector(`tr.runrow[data-run="${FAILED}"]`);
  check(await page.evaluate(() => sessionStorage.length === 1 && localStorage.getItem('air.token') === null), 'the token is in sessionStorage only');
  await page.selectOption('select[aria-label=Status]', 'FAILED');
  await until(async () => (await page.locator('tr.runrow').count()) === 1, 3000, 'the status filter');
  check(await page.locator(`tr.runrow[data-run="${FAILED}"]`).count() === 1, 'the status filter shows only the failed run');
  await page.selectOption('select[aria-label=Status]', '');
  await page.waitForSelector(`tr.runrow[data-run="${LIVE}"]`);
  // A queued run shows its place and, as its title, the scheduler's sentence (what `air get run` says).
  const queued = page.locator(`tr.runrow[data-run="${env('AIR_WEB_QUEUED')}"] .queue`);
  await until(async () => (await queued.count()) === 1 && (await queued.textContent()).trim() === '#1', 5000, 'the queued run\'s place');
  const why = await queued.getAttribute('title');
  check(why.includes('queued: position 1 of 1') && why.includes('waiting for 1 GPU'), `the queued run explains its wait (${why})`);
  await page.emulateMedia({ colorScheme: 'light' });
  await page.screenshot({ path: `${OUT}/runs-light.png` });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: `${OUT}/runs-dark.png` });
  await page.emulateMedia({ colorScheme: 'light' });

  // ---- the live run: both nodes' logs appear and grow; node write -> visible latency
  await page.goto(`${URL}/#/runs/${LIVE}`);
  await page.waitForSelector('.logview');
  fs.writeFileSync(env('AIR_WEB_GO'), '');
  await page.evaluate(() => {
    window.__lat = [];
    const seen = new Set();
    new MutationObserver(() => {
      const now = Date.now();
      for (const row of document.querySelectorAll('.logview .logrow .tx')) {
        const m = /^tick (\d+) node (\d) line (\d+)/.exec(row.textContent);
        if (m && !seen.has(m[2] + ':' + m[3])) { seen.add(m[2] + ':' + m[3]); window.__lat.push(now - Number(m[1])); }
      }
    }).observe(document.querySelector('.logbox'), { subtree: true, childList: true, characterData: true });
  });
  const total = () => logTotal(page);
  const t1 = await until(async () => { const t = await total(); return t > 5 && t; }, 15000, "node 0's log");
  await until(async () => (await total()) > t1 + 10, 5000, "node 0's log to grow");
  check(true, "node 0's log appears and grows");
  const chartPoints = () => points(page);
  const p1 = await until(chartPoints, 10000, 'the loss chart');
  await until(async () => (await chartPoints()) > p1, 10000, 'the loss chart to update live');
  check(true, 'the loss chart updates while the run trains');
  await sleep(2500);
  const lat = (await page.evaluate(() => window.__lat)).sort((a, b) => a - b);
  await page.click('.tabs .tab[data-node="1"]');
  const n1 = await until(async () => { const t = await total(); return t > 5 && t; }, 10000, "node 1's log");
  await until(async () => (await total()) > n1 + 10, 5000, "node 1's log to grow");
  check(true, "node 1's log appears and grows");
  check(lat.length > 20, `latency samples (${lat.length})`);
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  figures.push(['log line: node write -> visible (median)', `${q(0.5)} ms`], ['log line: node write -> visible (p95)', `${q(0.95)} ms`]);
  // The target is 500 ms; the median must meet it. The p95 is held to twice that, since a CI machine shared
  // with builds delays the agent's and the browser's threads by hundreds of ms now and then.
  check(q(0.5) < 500, `half the log lines visible within 500 ms of the write (median ${q(0.5)} ms)`);
  check(q(0.95) < 1000, `95% of log lines visible within 1000 ms of the write (p95 ${q(0.95)} ms)`);
  // Follow pauses when the user scrolls up, and "jump to end" resumes it.
  await page.locator('.logbox .logvp').evaluate((e) => { e.scrollTop = 0; });
  await until(() => page.locator('.logbox .logview.paused').count(), 2000, 'follow to pause');
  await page.click('.logbox .jump');
  await until(async () => (await page.locator('.logbox .logview.paused').count()) === 0, 2000, 'jump to end');
  check(true, 'scrolling up pauses following; jump to end resumes it');
  fs.writeFileSync(env('AIR_WEB_STOP'), '');
  await until(async () => (await api(`/api/air/v1/runs/${LIVE}`)).state === 'SUCCEEDED', 30000, 'the live run to succeed');

  // ---- the loss chart has as many points as the metrics API returns
  const want = await apiPoints(LIVE, 'loss');
  await page.reload();
  await until(async () => (await chartPoints()) === want, 10000, `the loss chart to show ${want} points`);
  check(want === 100, `the loss chart has the ${want} points the metrics API returns`);
  // The reload keeps the scroll position of the log viewer below, and the per-node system charts made the page
  // taller: bring the chart into view first, as a user would. The readout follows the pointer on the next frame.
  let jiggle = 0;  // a new position each time: the pointer resting still fires no event on a chart redrawn under it
  const hover = async () => {
    await page.locator('.chart[data-key=loss]').scrollIntoViewIfNeeded();
    const box = await page.locator('.chart[data-key=loss] canvas').boundingBox();
    jiggle = (jiggle + 1) % 5;
    await page.mouse.move(box.x + box.width / 2 + 4 * jiggle, box.y + box.height / 2, { steps: 2 });
    return /^step \d+: /.test(await page.locator('.chart[data-key=loss] .readout').textContent());
  };
  const hovered = await until(hover, 3000, 'the readout under the pointer').catch(() => false);
  check(hovered, 'hovering shows the step and value');
  const box = await page.locator('.chart[data-key=loss] canvas').boundingBox();  // the drag-to-zoom below (in view now)
  // Zoom (drag) re-samples the step range; double-click returns.
  const loss = page.locator('.chart[data-key=loss]');
  await page.mouse.move(box.x + box.width * 0.3, box.y + 40);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.6, box.y + 60, { steps: 4 });
  await page.mouse.up();
  await until(async () => (await chartPoints()) < want, 5000, 'the zoomed chart');
  check(true, `zooming re-samples the range (${await chartPoints()} of ${want} points)`);
  await loss.locator('canvas').dblclick();
  await until(async () => (await chartPoints()) === want, 5000, 'the zoom to reset');
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.locator('section').nth(1).scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${OUT}/run-light.png` });
  await page.emulateMedia({ colorScheme: 'dark' });
  await sleep(200);
  await page.screenshot({ path: `${OUT}/run-dark.png` });
  await page.emulateMedia({ colorScheme: 'light' });

  // ---- a failed run highlights its failing node and marks the fatal line
  await page.goto(`${URL}/#/runs/${FAILED}`);
  await page.waitForSelector('tr.noderow.failing');
  check(await page.locator('tr.noderow.failing').getAttribute('data-node') === '1', 'node 1 is highlighted as the failing node');
  check((await page.locator('.failure').textContent()).includes('Node 1 failed first (exit code 3)'), 'the failure names node 1 and exit code 3');
  check((await page.locator('.failure .fatal').textContent()).includes('CUDA out of memory'), 'the OOM line is marked fatal');
  await until(() => page.locator('.logbox .logrow.fatal').count(), 5000, "the OOM line marked in node 1's log");
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.logbox .logbar button:has-text("Download")')]);
  check(fs.readFileSync(await download.path(), 'utf8').includes('CUDA out of memory'), `Download saves node 1's whole log (${download.suggestedFilename()})`);
  await page.click('.logbox .logbar button:has-text("First error")');
  await until(() => page.locator('.logbox .logrow.current.fatal').count(), 5000, 'first error');
  check(true, 'First error jumps to the OOM line');
  await page.click('.tabs .tab[data-node="0"]');
  await until(async () => (await total()) >= 1, 5000, "node 0's log");
  await page.screenshot({ path: `${OUT}/run-failed.png` });

  // ---- a 1,000,000-line log: opens at its end, scrolls anywhere, never more than a screenful of rows
  const t0 = Date.now();
  await page.goto(`${URL}/#/runs/${BIG}`);
  // A 200,000-point metric opens like a 100-point one: both are sampled to the chart's width by the server.
  const bigChart = until(async () => (await chartPoints()) > 0 && Date.now() - t0, 10000, 'the 200k chart');
  await page.waitForSelector('.logbox .logrow[data-line="999999"]', { timeout: 10000 });
  await until(() => page.locator('.logbox .logrow[data-line="999999"] .tx').textContent().then((t) => t.includes('line 1000000 of')), 5000, 'the last line');
  const open = Date.now() - t0;
  figures.push(['1,000,000-line log: open -> last line shown', `${open} ms`]);
  check(open < 2000, `the 1,000,000-line log opens at its end in ${open} ms (< 2000)`);
  const t2 = Date.now();
  await page.locator('.logbox .logvp').evaluate((e) => { e.scrollTop = e.scrollHeight / 2; });
  await until(() => page.locator('.logbox .logrow .tx').first().textContent().then((t) => t.startsWith('big log line 5')), 3000, 'the middle of the log');
  figures.push(['1,000,000-line log: jump to the middle', `${Date.now() - t2} ms`]);
  check(await page.locator('.logbox .logrow').count() < 100, 'only the visible rows are in the DOM');
  await page.fill('.logbox .search', 'line 777777 of');
  await page.locator('.logbox .search').press('Enter');
  await until(() => page.locator('.logbox .logrow.current .tx').textContent().then((t) => t.includes('line 777777 of')).catch(() => false), 5000, 'the search hit');
  check(true, 'search jumps to line 777,777');
  const tBig = await bigChart;
  const rows = Number(await page.locator('.chart[data-key=loss]').getAttribute('data-total-rows'));
  check(rows === 200000, `the big run logged ${rows} loss points`);
  check((await chartPoints()) <= 2 * 1400, `the chart received ${await chartPoints()} points, not ${rows}`);
  const t3 = Date.now();
  await page.goto(`${URL}/#/runs/${LIVE}`);
  await until(chartPoints, 10000, 'the 100-point chart');
  figures.push(['chart open, 200,000 points (from navigation)', `${tBig} ms`], ['chart open, 100 points', `${Date.now() - t3} ms`]);
  // Another run's curve overlays the chart (here the 200,000-point one, sampled like the rest).
  const loss2 = page.locator('.chart[data-key=loss]');
  await page.selectOption('select[aria-label="Overlay another run"]', BIG);
  await until(async () => Number(await loss2.getAttribute('data-overlay-points')) > 0, 10000, 'the overlay');
  check(true, `another run's loss overlays the chart (${await loss2.getAttribute('data-overlay-points')} points)`);

  // ---- no secret value anywhere: DOM, storage, network
  const dump = await page.evaluate(() => document.documentElement.outerHTML + JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }));
  const b64 = Buffer.from(SECRET).toString('base64').replace(/=+$/, '');
  for (const form of [SECRET, b64]) {
    check(!dump.includes(form), 'no secret value in the DOM or storage');
    check(!traffic.some((t) => t.includes(form)), 'no secret value in the network traffic');
  }
  check(traffic.some((t) => t.includes('[REDACTED]')), 'the redacted line did reach the page');
  check(!traffic.some((t) => t.startsWith('GET') && t.split(' ')[1].includes(TOKEN)), 'the token never appears in a URL');
  check(errors.length === 0, `no page errors (${errors.join('; ')})`);
});
console.log('\n| figure | value |\n|---|---|');
for (const [k, v] of figures) console.log(`| ${k} | ${v} |`);
fs.writeFileSync(`${OUT}/figures.md`, figures.map(([k, v]) => `| ${k} | ${v} |`).join('\n') + '\n');
