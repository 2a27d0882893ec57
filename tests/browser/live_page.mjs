// The live page (`/ui`) in Debian's Chromium, driven by Playwright (playwright-core, no
// browser download), against a running `harness up` on a simulated clock:
//
//   UI_LINK='http://127.0.0.1:PORT/ui#key=...&org=...&workspace=...' \
//   SCREENSHOTS=target/artifacts node tests/browser/live_page.mjs
//
// UI_LINK is the "live page" line `harness up` prints. The page must: open with the key of
// the link and take it out of the address; show a request made meanwhile within 2 seconds;
// show a violating request's loc and what the contract expected; turn a campaign from
// scheduled to active on screen when its own button moves the clock; keep the key out of
// every URL it requests; leave the client's journal alone (its own reads are not counted);
// work from the keyboard, with every control named; fit a phone-width window; and log no
// console error. Screenshots go to SCREENSHOTS: ui.png (the campaign view at 1280 px, the
// README's), one full page per view (ui-<view>.png) and ui-phone.png.
// Exit status 0 when all hold, 1 with the reasons otherwise.

import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const LINK = process.env.UI_LINK;
const SHOTS = process.env.SCREENSHOTS || 'target/artifacts';
const CHROMIUM = process.env.HARNESS_CHROMIUM || '/usr/bin/chromium';
if (!LINK) {
  console.error('set UI_LINK to the live page link harness up prints');
  process.exit(2);
}
mkdirSync(SHOTS, { recursive: true });
const url = new URL(LINK);
const base = url.origin;
const fragment = new URLSearchParams(url.hash.slice(1));
const KEY = fragment.get('key');
const ORG = fragment.get('org');
const WS = fragment.get('workspace');
const ws = (prefix, rest) => `${base}${prefix}/orgs/${ORG}/workspaces/${WS}${rest}`;

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

/** A request as a client makes it (journaled, unlike the page's). */
let made = 0;
async function client(method, path, body) {
  made += 1;
  const r = await fetch(path, {
    method,
    headers: { 'X-API-Key': KEY, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

/** The harness's own routes (never journaled). */
async function sim(path) {
  const r = await fetch(`${base}${path}`, { headers: { 'X-API-Key': KEY } });
  return r.json();
}

const consoleErrors = [];
const pageUrls = [];
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
  page.on('request', (r) => pageUrls.push({ url: r.url(), key: r.headers()['x-api-key'] }));

  // Opens with the link's key, then forgets the fragment.
  await page.goto(LINK);
  await page.waitForSelector('#tab-stack[aria-selected="true"]', { timeout: 10000 });
  check(!page.url().includes(KEY) && !page.url().includes('#'), `the key left the address bar (${page.url()})`);
  check(await page.evaluate(() => sessionStorage.getItem('key')) === KEY, 'the key is in the tab\'s session storage');
  await page.waitForFunction(() => /\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/.test(document.querySelector('#clock-now')?.textContent || ''), null, { timeout: 5000 });
  check((await page.textContent('#clock-mode')) === '(simulated)', 'the clock is shown as simulated');

  // A campaign that starts half an hour from the platform's now.
  const stack = await sim('/sim/v1/stack');
  const now = Date.parse(stack.clock.now);
  const iso = (ms) => new Date(ms).toISOString();
  const created = await client('POST', ws('/api/scheduling/v1', '/campaigns'), {
    name: 'Browser test',
    start_timestamp: iso(now + 30 * 60e3),
    end_timestamp: iso(now + 2 * 86400e3),
    allowed_schedule: { timezone: 'UTC', allowed_days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'], allowed_start_time: '00:00', allowed_end_time: '23:59' },
    app_config: {
      app_id: 'sales', app_version: 1, app_type: 'agent', attempts_per_second: 1,
      connection_configs: [{ connection_id: 'main', phone_numbers: ['+14155550101'], weight: 1 }],
      retry_config: { max_retries: 1, retry_on: ['busy'], threshold_seconds: 20 },
      // Nothing listens there: the deliveries fail and are tried again.
      webhook_config: { url: 'http://127.0.0.1:9/hooks' },
    },
  });
  check(created.status === 200, `the test's campaign was created (${created.status})`);
  const campaignId = created.body?.campaign_id;

  // A request made now appears within 2 seconds.
  await page.click('#tab-requests');
  await page.waitForSelector('#journal table', { timeout: 5000 });
  const probe = ws('/api/scheduling/v1', `/campaigns/${campaignId}`);
  const started = performance.now();
  await client('GET', probe);
  const row = `#journal tr:has(code:text-is("${new URL(probe).pathname}"))`;
  const seen = await page.waitForSelector(row, { timeout: 2000 }).then(() => true, () => false);
  check(seen, `a request made now is listed within 2 s (${Math.round(performance.now() - started)} ms)`);

  // A violating request shows its loc and what the contract expected.
  const bad = await client('POST', ws('/api/app-authoring/v1', '/deployments'), {
    name: 'Front desk!', app_id: 'receptionist', app_version: 3,
    connection_configs: [{ connection_id: 'main', phone_numbers: ['+14155550100'] }],
  });
  check(bad.status === 422, `the violating request was refused (${bad.status})`);
  const badRow = '#journal tr.bad:has(code:text-is("' + new URL(ws('/api/app-authoring/v1', '/deployments')).pathname + '"))';
  await page.waitForSelector(badRow, { timeout: 2000 });
  await page.click(`${badRow} button`);
  await page.waitForSelector('#request-detail table.violations', { timeout: 5000 });
  const locs = await page.$$eval('#request-detail table.violations .loc', (els) => els.map((e) => e.textContent));
  check(locs.includes('body › name'), `the violation's loc is shown (${locs.join('; ')})`);
  const detail = await page.textContent('#request-detail');
  check(detail.includes('matching ^[\\w\\- ]{1,50}$'), 'what the contract expected of the field is shown');
  check(await page.evaluate(() => document.activeElement?.id === 'request-detail'), 'the opened request takes the focus');
  await page.click('#only-violations');
  await page.waitForFunction(() => [...document.querySelectorAll('#journal tbody tr')].every((r) => r.classList.contains('bad')), null, { timeout: 3000 });
  check(true, 'the filter shows only the requests that break the contract');
  await page.screenshot({ path: join(SHOTS, 'ui-requests.png'), fullPage: true });

  // Moving the clock on the page turns the campaign active on screen.
  await page.click('#tab-campaigns');
  const status = `#campaign-list tr[data-campaign="${campaignId}"] .campaign-status`;
  await page.waitForSelector(`${status}:has-text("scheduled")`, { timeout: 5000 });
  await page.click('#advance-hour');
  const active = await page.waitForSelector(`${status}:has-text("active")`, { timeout: 3000 }).then(() => true, () => false);
  check(active, 'the campaign turned from scheduled to active on screen after +1 hour');
  const startListed = await page.waitForSelector('#campaign-changes td:text-is("start reached")', { timeout: 3000 }).then(() => true, () => false);
  check(startListed, 'its status changes list the start');
  check((await page.textContent('#clock-result')).startsWith('Moved an hour'), 'the move is reported');

  // Users: the next hour dials them; the chart, the key service and the webhooks show it.
  const users = Array.from({ length: 24 }, (_, i) => ({
    // Magic numbers: +1 NXX 555-01YY, YY 00 connected, 01 busy, 02 no answer, 04 short.
    phone_number: `+1${300 + i}55501${['00', '01', '02', '04'][i % 4]}`,
    user_identifier: `u${i}`,
  }));
  const cohort = await client('POST', ws('/api/scheduling/v1', `/campaigns/${campaignId}/cohorts/stream`), { name: 'browser', users });
  check(cohort.status === 200, `a cohort was streamed (${cohort.status})`);
  await page.click('#advance-hour');
  const drawn = await page.waitForSelector('#campaign-chart svg#dials-chart path.series', { timeout: 5000 }).then(() => true, () => false);
  check(drawn, 'the chart shows the dials, drawn by the platform');
  check(await page.isVisible('#campaign-chart svg .mark-label'), 'the chart marks the status changes');
  await page.waitForSelector('#campaign-cohorts td:text-is("browser")', { timeout: 3000 });
  check(await page.isVisible('#campaign-chart .legend li'), 'the chart has a legend of its outcomes');
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.screenshot({ path: join(SHOTS, 'ui.png'), fullPage: false });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: join(SHOTS, 'ui-campaigns.png'), fullPage: true });

  // The other views show what happened meanwhile.
  const deployment = await client('POST', ws('/api/app-authoring/v1', '/deployments'), {
    name: 'Front desk', app_id: 'receptionist', app_version: 3,
    connection_configs: [{ connection_id: 'main', phone_numbers: ['+14155550190'] }],
  });
  check(deployment.status === 200, `a deployment was created (${deployment.status})`);
  const call = await fetch(ws('/sim/v1', '/inbound-calls'), {
    method: 'POST',
    headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ caller: '+442071838750', dialled: '+14155550190' }),
  });
  check(call.status === 200, `an inbound call was placed (${call.status})`);
  await page.click('#tab-deployments');
  const answered = await page.waitForSelector('#inbound-calls td:text-is("+14155550190")', { timeout: 3000 }).then(() => true, () => false);
  check(answered && await page.isVisible('#deployment-list td:text-is("Front desk")'), 'the deployment and its inbound call are shown');
  await page.screenshot({ path: join(SHOTS, 'ui-deployments.png'), fullPage: true });
  await page.click('#tab-keys');
  const decrypted = await page.waitForSelector('#key-service td:text-is("decrypt-key")', { timeout: 3000 }).then(() => true, () => false);
  check(decrypted && await page.isVisible('#data-keys td:text-is("byok")'), 'the data key (byok) and the key service\'s decrypt call are shown');
  await page.screenshot({ path: join(SHOTS, 'ui-keys.png'), fullPage: true });
  await page.click('#tab-webhooks');
  const hooks = await page.waitForSelector('#deliveries td:text-is("campaign")', { timeout: 3000 }).then(() => true, () => false);
  check(hooks, 'the campaign\'s webhook deliveries are shown with their tries');
  await page.screenshot({ path: join(SHOTS, 'ui-webhooks.png'), fullPage: true });
  await page.click('#tab-stack');
  await page.screenshot({ path: join(SHOTS, 'ui-stack.png'), fullPage: true });

  // The keyboard moves between views; every control has a name.
  await page.focus('#tab-campaigns');
  await page.keyboard.press('ArrowRight');
  check(await page.getAttribute('#tab-deployments', 'aria-selected') === 'true', 'ArrowRight selects the next view');
  await page.keyboard.press('Home');
  check(await page.evaluate(() => document.activeElement?.id) === 'tab-stack', 'Home goes to the first view');
  const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, a[href]')]
    .filter((e) => e.offsetParent !== null)
    .filter((e) => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector(`label[for="${e.id}"]`))))
    .map((e) => e.outerHTML.slice(0, 80)));
  check(unnamed.length === 0, `every visible control is named (${unnamed.join(' ')})`);

  // A phone-width window: nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const view of ['requests', 'campaigns', 'webhooks']) {
    await page.click(`#tab-${view}`);
    await page.waitForTimeout(100);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `the ${view} view fits a 390 px window (${overflow} px over)`);
  }
  await page.click('#tab-requests');
  await page.screenshot({ path: join(SHOTS, 'ui-phone.png'), fullPage: false });

  // The key only ever travelled in the header; the page's reads are not the client's.
  check(pageUrls.every((r) => !r.url.includes(KEY)), 'no URL the page requested holds the key');
  check(pageUrls.filter((r) => r.url.includes('/api/')).every((r) => r.key === KEY), 'the page sends the key as X-API-Key');
  const summary = await sim('/sim/v1/journal/summary');
  check(summary.requests === made, `the journal counts the test's ${made} requests, not the page's reads (${summary.requests})`);

  // Forgetting the key clears the tab.
  await page.click('#forget');
  check(await page.evaluate(() => sessionStorage.getItem('key')) === null && await page.isVisible('#login'), 'Forget the key clears the tab and asks for one');
} finally {
  await browser.close();
}
check(consoleErrors.length === 0, `no console error (${consoleErrors.join(' | ')})`);

if (failures.length) {
  console.error(`\n${failures.length} failed:\n- ${failures.join('\n- ')}`);
  process.exit(1);
}
console.log('\nthe live page passed');
