// For tests/e2e/web_browser_trainer.sh: the tiny FSDP run's page while it trains and after it ends.
import { api, apiPoints, chartPoints, check, env, logTotal, until, URL, withBrowser, signIn } from './browser_lib.mjs';

const RUN = env('AIR_WEB_RUN');
await withBrowser(async (page) => {
  await signIn(page);
  await page.goto(`${URL}/#/runs/${RUN}`);
  for (const node of [0, 1]) {
    await until(() => page.locator(`.tabs .tab[data-node="${node}"]`).count(), 60000, `node ${node}'s tab`);
    await page.click(`.tabs .tab[data-node="${node}"]`);
    await until(async () => (await logTotal(page)) > 3, 120000, `node ${node}'s log`);
    check(true, `node ${node}'s log appears while the run trains`);
  }
  await until(async () => ['SUCCEEDED', 'FAILED'].includes((await api(`/api/air/v1/runs/${RUN}`)).state), 300000, 'the run to end');
  const want = await apiPoints(RUN, 'loss');
  await page.reload();
  await until(async () => (await chartPoints(page)) === want, 10000, `the loss chart to show ${want} points`);
  check(want > 0, `the loss chart has the ${want} points the MLflow API returns`);
});
