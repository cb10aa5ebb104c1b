// The run page's Cancel button (tests/e2e/web_cancel.sh): bob may view alice's run but not cancel it; alice
// cancels it. The workspace decides; the page shows its answer.
import { URL, api, check, env, sleep, until, withBrowser } from './browser_lib.mjs';

const ALICE = env('AIR_WEB_TOKEN'), BOB = env('AIR_WEB_TOKEN_BOB'), RUN = env('AIR_WEB_ALICE_RUN');
const state = async () => (await api(`/api/air/v1/runs/${RUN}`)).state;

async function openRun(page, token) {
  await page.goto(URL + '/');
  await page.fill('#token', token);
  await page.click('form.signin button[type=submit]');
  await page.waitForSelector('table.runs');
  await page.goto(`${URL}/#/runs/${RUN}`);
  await page.waitForSelector('#cancel');
}

await withBrowser(async (page) => {
  await openRun(page, BOB);
  await page.click('#cancel');
  check((await page.textContent('#cancel')) === 'Click again to cancel', 'one click only arms the button');
  await sleep(500);
  check(await state() === 'RUNNING', 'one click cancels nothing');
  await page.click('#cancel');
  const refusal = await until(() => page.locator('.cancelmsg.error').textContent().catch(() => ''), 10000,
    "the workspace's refusal on the page");
  check(refusal.includes('CAN_MANAGE_RUN'), `the refusal names the missing permission: ${refusal}`);
  await sleep(1500);
  check(await state() === 'RUNNING', "bob's click did not cancel alice's run");
  check(await page.isEnabled('#cancel'), 'the button can be used again after a refusal');

  await page.click('#signout');
  await page.waitForSelector('form.signin');
  await openRun(page, ALICE);
  await page.click('#cancel');
  await page.click('#cancel');
  await until(() => page.textContent('.runhead h1').then((t) => t.includes('CANCELED')).catch(() => false), 30000,
    'the page shows the run CANCELED');
  check(await page.locator('#cancel').count() === 0, 'a run that is over has no Cancel button');
  check(await state() === 'CANCELED', 'the workspace says CANCELED');
});
