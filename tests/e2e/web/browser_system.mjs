// The run page's per-node system charts (issue 45) in headless chromium: one chart per system metric with
// one line per node, the node of the run's alert highlighted, another picked from the legend, the alert
// shown, and the training code's charts free of system/... metrics. Screenshot: system-charts.png.
import path from 'node:path';
import { api, check, env, signIn, until, withBrowser } from './browser_lib.mjs';

const RUN = env('AIR_WEB_RUN'), OUT = env('AIR_WEB_OUT');

await withBrowser(async (page) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  await signIn(page);
  await page.goto(`${env('AIR_WEB_URL')}/#/runs/${RUN}`);
  const util = page.locator('.nodechart[data-key="system/gpu_0_utilization_percentage"]');
  try {
    await until(async () => (await util.getAttribute('data-nodes', { timeout: 500 }).catch(() => null)) === '0,1', 30000,
      'the GPU utilisation chart with a line for node 0 and node 1');
  } catch (e) {
    await page.screenshot({ path: path.join(OUT, 'system-charts-failed.png'), fullPage: true });
    console.log(`system charts on the page: ${await page.locator('.nodechart').evaluateAll((l) => l.map((c) => `${c.dataset.key}=${c.dataset.nodes}`))}`);
    throw e;
  }
  check(true, 'gpu_0_utilization_percentage is drawn per node (nodes 0,1)');
  for (const name of ['gpu_0_memory_usage_megabytes', 'gpu_0_power_usage_watts', 'cpu_utilization_percentage',
    'system_memory_usage_megabytes', 'network_receive_megabytes', 'disk_usage_percentage'])
    check(await page.locator(`.nodechart[data-key="system/${name}"]`).count() === 1, `a per-node chart of ${name}`);
  // The straggler alert names node 1: it is shown, and node 1 is the highlighted line.
  await until(async () => (await page.locator('.alerts .alert.straggler').count()) > 0, 30000, 'the straggler alert');
  const text = await page.locator('.alerts .alert.straggler').first().textContent();
  check(/node 1 is a straggler/.test(text), `the alert on the page names node 1 ("${text.trim()}")`);
  await until(async () => (await util.getAttribute('data-highlight')) === '1', 10000, 'node 1 highlighted');
  check(await page.locator('.legend .node-chip.selected').getAttribute('data-node') === '1', 'the legend marks node 1');
  // The highlighted line is drawn in node 1's colour at full strength: some pixel of that hue is opaque.
  const drawn = await util.locator('canvas').evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let opaque = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] === 255) opaque++;
    return opaque;
  });
  check(drawn > 50, `the chart's canvas has drawn lines (${drawn} opaque pixels)`);
  await page.screenshot({ path: path.join(OUT, 'system-charts.png'), fullPage: true });
  await page.locator('.legend .node-chip[data-node="0"]').click();
  await until(async () => (await util.getAttribute('data-highlight')) === '0', 5000, 'node 0 highlighted after a click');
  check(true, 'a click on node 0 in the legend highlights node 0 in every chart');
  const cpu = await page.locator('.nodechart[data-key="system/cpu_utilization_percentage"]').getAttribute('data-highlight');
  check(cpu === '0', 'the CPU chart follows the pick');
  // The training code's own charts hold no system metric.
  const stray = await page.locator('.charts:not(.system) .chart[data-key^="system/"]').count();
  check(stray === 0, 'no system/... metric among the training metrics charts');
  const run = await api(`/api/air/v1/runs/${RUN}`);
  check(run.alerts.some((a) => a.kind === 'straggler' && a.node === 1), 'the API reports the same alert');
  check(errors.length === 0, `no error in the page's console (${errors.join('; ')})`);
});
