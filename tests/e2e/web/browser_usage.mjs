// The Usage view (tests/e2e/web_usage.sh): the admin sees every user's GPU time and the quotas; bob his own.
import { URL, check, env, until, withBrowser } from './browser_lib.mjs';

const ADMIN = env('AIR_WEB_TOKEN'), BOB = env('AIR_WEB_TOKEN_BOB'), ADMIN_USER = env('AIR_WEB_ADMIN_USER');

async function usageAs(page, token) {
  await page.goto(URL + '/');
  await page.evaluate(() => sessionStorage.clear());
  await page.goto(URL + '/');
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
  await page.click('a[href="#/usage"]');
  await page.waitForSelector('#usage tbody tr');
  await until(async () => (await page.locator('#usage tbody tr td').first().textContent()) !== 'No usage recorded in this window.', 5000, 'usage rows');
  const rows = await page.locator('#usage tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  return Object.fromEntries(rows.map((r) => [r[0], r]));
}

await withBrowser(async (page) => {
  const all = await usageAs(page, ADMIN);
  check(all[ADMIN_USER] && all.bob, `the admin sees both users (${JSON.stringify(Object.keys(all))})`);
  // GPU-hours: the admin's 2-GPU run of ~1 s holds twice bob's 1-GPU one, give or take start-up.
  check(Number(all[ADMIN_USER][3]) === 1 && Number(all.bob[3]) === 1, 'one attempt each');
  const quota = await page.locator('#quotas tbody tr').first().evaluate((tr) => [...tr.cells].map((c) => c.textContent));
  check(quota[0] === 'group' && quota[1] === 'ml' && quota[3] === '4', `the quota is listed (${quota})`);
  await page.selectOption('select[aria-label="Group by"]', 'class');
  await until(async () => (await page.locator('#usage tbody tr td').first().textContent()) === 'NORMAL', 5000, 'usage by class');
  const mine = await usageAs(page, BOB);
  check(Object.keys(mine).length === 1 && mine.bob, `bob sees his own usage only (${JSON.stringify(Object.keys(mine))})`);
  check((await page.locator('.toolbar .muted').textContent()).includes("bob's own"), 'the view says it is bob\'s own');
});
