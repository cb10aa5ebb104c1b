// Two people on one workspace's page (tests/e2e/web_two_users.sh): each signs in with their own token, which
// stays in sessionStorage (nothing in localStorage, not even after signing out); bob's runs list shows his
// run and not alice's, her run's page answers him as an unknown run and shows none of her log; alice sees hers.
import { URL, check, env, until, withBrowser } from './browser_lib.mjs';

const ALICE = env('AIR_WEB_TOKEN'), BOB = env('AIR_WEB_TOKEN_BOB');
const ALICE_RUN = env('AIR_WEB_ALICE_RUN'), BOB_RUN = env('AIR_WEB_BOB_RUN');

async function signIn(page, token) {
  await page.goto(URL + '/');
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
}

const storage = (page) => page.evaluate(() => JSON.stringify({ session: { ...sessionStorage }, local: { ...localStorage } }));

await withBrowser(async (page) => {
  await signIn(page, BOB);
  await page.waitForSelector(`tr.runrow[data-run="${BOB_RUN}"]`);
  check(await page.locator(`tr.runrow[data-run="${ALICE_RUN}"]`).count() === 0, "bob's runs list does not show alice's run");
  const s = JSON.parse(await storage(page));
  check(Object.values(s.session).includes(BOB) && !JSON.stringify(s.local).includes(BOB), "bob's token is in sessionStorage only");
  check(!JSON.stringify(s).includes(ALICE), "no trace of alice's token in the page's storage");

  await page.goto(`${URL}/#/runs/${ALICE_RUN}`);
  // A run bob may not view reads as one that does not exist (issue 40): no owner named.
  await until(() => page.locator('.error').first().textContent().then((t) => t.includes('not found')).catch(() => false), 10000,
    "alice's run page refuses bob");
  const text = await page.locator('body').textContent();
  check(text.includes(`run ${ALICE_RUN} not found`), "the refusal reads as an unknown run");
  const err = await page.locator('.error').first().textContent();
  check(!err.includes('alice'), "the refusal does not name the owner");
  check(!text.includes('alice-log-line'), "bob sees none of alice's log");

  await page.click('#signout');
  await page.waitForSelector('form.signin');
  const after = await storage(page);
  check(!after.includes(BOB) && !after.includes(ALICE), 'signing out leaves no token in storage');

  await signIn(page, ALICE);
  await page.waitForSelector(`tr.runrow[data-run="${ALICE_RUN}"]`);
  check(await page.locator(`tr.runrow[data-run="${BOB_RUN}"]`).count() === 0, "alice's list does not show bob's run");
  check(!JSON.stringify(JSON.parse(await storage(page)).local).includes(ALICE), "alice's token is not in localStorage");
});
