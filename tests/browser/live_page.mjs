// The live page (`/ui`) in Debian's Chromium, driven by Playwright (playwright-core, no
// browser download), against a running `harness up` on a simulated clock:
//
//   UI_LINK='http://127.0.0.1:PORT/ui#key=...&org=...&workspace=...' \
//   SCREENSHOTS=target/artifacts node tests/browser/live_page.mjs
//
// UI_LINK is the "live page" line `harness up` prints; with UI_DIR=platform/ui the page's
// files come from that directory instead of the platform (for work on the page without a
// rebuild). The page must: open with the key of the link and take it out of the address;
// show one clock (the platform's); list a request made meanwhile within 2 seconds, in a
// list beside the request opened, each row with its operation, a short path, its number
// (rows at one simulated instant under one time) and its first violation; filter by the
// verdict counters; show a violating request's loc and what the contract expected, 64-bit
// bounds exact; turn a campaign from scheduled to active on screen when the clock's own
// button moves it, without the result pushing the tabs down; head the campaign with its
// progress (status, users' bar, outcome chips in the chart's colours, the budget said as
// what it is once it ended), count calls in progress in the chart, shade calling windows in
// grey; move the clock by a day and run it to the campaign's end; say why the key service
// was called; dim its data, disable the clock and say so when the platform stops answering,
// and recover; keep the key out of every URL it requests; leave the client's journal alone;
// work from the keyboard, with every control named; fit a phone-width window with the
// chart's text still 10 px or more; and log no console error. Screenshots go to
// SCREENSHOTS: ui.png (the campaign view at 1280 px, the README's), one full page per view
// (ui-<view>.png), ui-offline.png, ui-phone.png and ui-phone-campaigns.png.
// Exit status 0 when all hold, 1 with the reasons otherwise.

import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';

const LINK = process.env.UI_LINK;
const SHOTS = process.env.SCREENSHOTS || 'target/artifacts';
const CHROMIUM = process.env.HARNESS_CHROMIUM || '/usr/bin/chromium';
const UI_DIR = process.env.UI_DIR;
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
const pathOf = (u) => new URL(u).pathname;

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};
/** Waits for `selector`: true when it came within `ms`. */
const seen = (page, selector, ms = 3000) => page.waitForSelector(selector, { timeout: ms }).then(() => true, () => false);
/** Waits until `fn` (in the page) is true: true when it became so within `ms`. */
const until = (page, fn, arg, ms = 3000) => page.waitForFunction(fn, arg, { timeout: ms }).then(() => true, () => false);

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

/** `2026-03-02 09:00:00Z`, as the page writes instants. */
const shown = (t) => String(t).replace('T', ' ').replace(/\.\d+Z$/, 'Z');

const consoleErrors = [];
const pageUrls = [];
/** While the test refuses the page's requests on purpose. */
let offline = false;
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('console', (m) => {
    // The offline check refuses the page's requests on purpose: the browser logs each.
    if (m.type() === 'error' && !(offline && /ERR_CONNECTION_REFUSED|Failed to load resource/.test(m.text()))) consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));
  page.on('request', (r) => pageUrls.push({ url: r.url(), key: r.headers()['x-api-key'] }));
  if (UI_DIR) {
    await page.route(`${base}/ui/**`, (route) => {
      const rel = normalize(new URL(route.request().url()).pathname.slice('/ui/'.length) || 'index.html');
      const type = rel.endsWith('.css') ? 'text/css' : rel.endsWith('.js') ? 'text/javascript' : 'text/html';
      route.fulfill({ status: 200, contentType: type, body: readFileSync(join(UI_DIR, rel)) });
    });
    await page.route(`${base}/ui`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: readFileSync(join(UI_DIR, 'index.html')) }));
  }

  // Opens with the link's key, then forgets the fragment.
  await page.goto(LINK);
  await page.waitForSelector('#tab-stack[aria-selected="true"]', { timeout: 10000 });
  check(!page.url().includes(KEY) && !page.url().includes('#'), `the key left the address bar (${page.url()})`);
  check(await page.evaluate(() => sessionStorage.getItem('key')) === KEY, 'the key is in the tab\'s session storage');
  await page.waitForFunction(() => /\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ/.test(document.querySelector('#clock-now')?.textContent || ''), null, { timeout: 5000 });
  check((await page.textContent('#clock-mode')) === '(simulated)', 'the clock is shown as simulated');
  // One clock on screen: the platform's; the page says no time of this computer.
  const clocks = await page.evaluate(() => [...document.querySelectorAll('header, #bar')]
    .map((e) => e.innerText).join(' ').match(/\d\d:\d\d:\d\d/g) || []);
  check(clocks.length === 1 && !/Read at|this computer/.test(await page.textContent('#status')), `one clock on screen (${clocks.join(', ')})`);

  // A campaign that starts half an hour from the platform's now and ends two days later.
  const stack = await sim('/sim/v1/stack');
  const now = Date.parse(stack.clock.now);
  const iso = (ms) => new Date(ms).toISOString();
  const end = iso(now + 2 * 86400e3);
  const created = await client('POST', ws('/api/scheduling/v1', '/campaigns'), {
    name: 'Browser test',
    start_timestamp: iso(now + 30 * 60e3),
    end_timestamp: end,
    allowed_schedule: { timezone: 'UTC', allowed_days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'], allowed_start_time: '08:00', allowed_end_time: '20:00' },
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

  // Requests: a request made now appears within 2 seconds, in the list beside the pane.
  await page.click('#tab-requests');
  await page.waitForSelector('#journal ol.requests', { timeout: 5000 });
  const probe = ws('/api/scheduling/v1', `/campaigns/${campaignId}`);
  const started = performance.now();
  await client('GET', probe);
  const row = `#journal li[data-path="${pathOf(probe)}"]`;
  check(await seen(page, row, 2000), `a request made now is listed within 2 s (${Math.round(performance.now() - started)} ms)`);
  const line = await page.textContent(`${row} .req`);
  check(line.includes('get_campaign') && (await page.textContent(`${row} .path`)) === `GET /campaigns/${campaignId}`,
    `the row names the operation and a short path (${line.trim()})`);

  // A violating request: its first violation on its row, the rest counted.
  const bad = await client('POST', ws('/api/app-authoring/v1', '/deployments'), {
    name: 'Front desk!', app_id: 'receptionist', app_version: 0,
    connection_configs: [{ connection_id: 'main', phone_numbers: ['+14155550100'] }],
  });
  check(bad.status === 422, `the violating request was refused (${bad.status})`);
  const badRow = `#journal li.bad[data-path="${pathOf(ws('/api/app-authoring/v1', '/deployments'))}"]`;
  await page.waitForSelector(badRow, { timeout: 2000 });
  const first = await page.textContent(`${badRow} .first-violation`);
  check(/^body › (name|app_version): .+ \+1$/.test(first), `the row shows its first violation and how many more (${first})`);
  // On a simulated clock every request so far came at one instant: one time heads them all,
  // and the rows are told apart by their numbers.
  const runs = await page.$$eval('#journal li.when', (els) => els.map((e) => e.textContent));
  const numbers = await page.$$eval('#journal button.req .seq', (els) => els.map((e) => e.textContent));
  check(runs.length === 1 && numbers.length >= 3 && new Set(numbers).size === numbers.length
    && await page.$$eval('#journal .req .time', (els) => els.length) === 0,
  `rows at one simulated instant share one time and have their own numbers (${runs.join(', ')}: ${numbers.join(' ')})`);

  await page.click(`${badRow} button.req`);
  await page.waitForSelector('#request-detail table.violations', { timeout: 5000 });
  const locs = await page.$$eval('#request-detail table.violations .loc', (els) => els.map((e) => e.textContent));
  check(locs.includes('body › name'), `the violation's loc is shown (${locs.join('; ')})`);
  const detail = await page.textContent('#request-detail');
  check(detail.includes('matching ^[\\w\\- ]{1,50}$'), 'what the contract expected of the field is shown');
  check(detail.includes('at most 9223372036854775807') && !detail.includes('9223372036854776000'),
    'a 64-bit bound is shown exact (app_version at most 9223372036854775807)');
  check(await page.evaluate(() => document.activeElement?.id === 'request-detail'), 'the opened request takes the focus');
  const [listBox, paneBox] = [await page.locator('#journal').boundingBox(), await page.locator('#request-detail').boundingBox()];
  check(paneBox.x >= listBox.x + listBox.width - 1 && paneBox.y < listBox.y + listBox.height,
    'the opened request is shown beside the list');
  check(await page.getAttribute(`${badRow} button.req`, 'aria-current') === 'true', 'its row is marked as the one opened');
  // The counts are filters.
  const counters = await page.$$eval('#journal-filter button', (els) => els.map((e) => `${e.id}=${e.getAttribute('aria-pressed')}`));
  check(counters.join(' ') === 'filter-all=true filter-conforms=false filter-violates=false filter-not-judged=false', `the verdict counts are buttons (${counters.join(' ')})`);
  await page.click('#filter-violates');
  check(await until(page, () => document.querySelector('#filter-violates')?.getAttribute('aria-pressed') === 'true'
    && document.querySelectorAll('#journal li[data-seq]').length > 0
    && [...document.querySelectorAll('#journal li[data-seq]')].every((r) => r.classList.contains('bad'))),
  'the count of requests that break the contract shows only those');
  await page.click('#filter-conforms');
  check(await until(page, () => document.querySelectorAll('#journal li[data-seq]').length > 0
    && [...document.querySelectorAll('#journal li[data-seq]')].every((r) => !r.classList.contains('bad'))),
  'the count of those that keep it shows only those');
  await page.click('#filter-all');
  await until(page, () => document.querySelector('#journal li.bad'));
  // Up and Down move between the rows.
  await page.focus('#journal button.req');
  await page.keyboard.press('ArrowDown');
  check(await page.evaluate(() => document.activeElement === document.querySelectorAll('#journal button.req')[1]), 'ArrowDown goes to the next request');
  await page.screenshot({ path: join(SHOTS, 'ui-requests.png'), fullPage: true });

  // Moving the clock on the page turns the campaign active on screen; the result takes the
  // line kept for it, so the tabs stay where they were.
  await page.click('#tab-campaigns');
  const status = `#campaign-list tr[data-campaign="${campaignId}"] .campaign-status`;
  await page.waitForSelector(`${status}:has-text("scheduled")`, { timeout: 5000 });
  const tabsBefore = (await page.locator('#tabs').boundingBox()).y;
  await page.click('#advance-hour');
  check(await seen(page, `${status}:has-text("active")`), 'the campaign turned from scheduled to active on screen after +1 hour');
  check(await seen(page, '#campaign-changes td:text-is("start reached")'), 'its status changes list the start');
  check((await page.textContent('#clock-result')).startsWith('Moved an hour'), 'the move is reported');
  const tabsAfter = (await page.locator('#tabs').boundingBox()).y;
  check(tabsAfter === tabsBefore, `the result does not push the tabs down (${tabsBefore} then ${tabsAfter})`);

  // Users: a minute of dialling; the chart counts the calls still in progress.
  const users = Array.from({ length: 24 }, (_, i) => ({
    // Magic numbers: +1 NXX 555-01YY, YY 00 connected, 01 busy, 02 no answer, 04 short.
    phone_number: `+1${300 + i}55501${['00', '01', '02', '04'][i % 4]}`,
    user_identifier: `u${i}`,
  }));
  const cohort = await client('POST', ws('/api/scheduling/v1', `/campaigns/${campaignId}/cohorts/stream`), { name: 'browser', users });
  check(cohort.status === 200, `a cohort was streamed (${cohort.status})`);
  await page.click('#advance-minute');
  await page.waitForFunction(() => /^Moved a minute/.test(document.querySelector('#clock-result')?.textContent || ''), null, { timeout: 5000 });
  const campaignPath = ws('/api/scheduling/v1', `/campaigns/${campaignId}`);
  const stats = async () => (await client('GET', campaignPath)).body.statistics;
  const activity = await sim(pathOf(ws('/sim/v1', `/campaigns/${campaignId}/activity`)));
  const charted = activity.buckets.reduce((n, b) => n + b.slice(1).reduce((a, x) => a + x, 0), 0);
  const st = await stats();
  check(charted === st.attempts_total && st.users_in_progress > 0,
    `the chart counts every dial, those in progress too (${charted} charted, ${st.attempts_total} made, ${st.users_in_progress} on a call)`);
  check(await seen(page, '#campaign-chart svg#dials-chart path.series-in_progress') && await seen(page, '#outcome-chips li[data-outcome="in_progress"]'),
    'the chart and the chips show the calls in progress');
  check(await until(page, (n) => document.querySelector('#users-legend li[data-state="calling"] strong')?.textContent === String(n), st.users_in_progress),
    `the progress header counts the users on a call (${st.users_in_progress})`);

  // An hour on: every user dialled.
  await page.click('#advance-hour');
  check(await seen(page, '#campaign-chart svg#dials-chart path.series-connected', 5000), 'the chart shows the dials, drawn by the platform');
  check(await page.isVisible('#campaign-chart svg .mark-label'), 'the chart marks the status changes');
  await page.waitForSelector('#campaign-cohorts td:text-is("browser")', { timeout: 3000 });
  await until(page, () => !document.querySelector('#outcome-chips li[data-outcome="in_progress"]'), null, 5000);
  const st2 = await stats();
  const legend = await page.$$eval('#users-legend li[data-state] strong', (els) => els.map((e) => Number(e.textContent.replace(/,/g, ''))));
  check(legend.join(' ') === [st2.users_done, st2.users_in_progress, st2.users_pending, st2.users_unfinished].join(' '),
    `the users' bar says done, on a call, pending, unfinished (${legend.join(' ')})`);
  // The chips are the chart's legend: the same colours, the same words as the table.
  const chipColours = () => [...document.querySelectorAll('#outcome-chips li[data-outcome]')].map((li) => {
    const o = li.dataset.outcome;
    const chip = li.querySelector('rect')?.getAttribute('fill');
    const drawn = document.querySelector(o === 'window' ? '#dials-chart rect.window' : `#dials-chart path.series-${o}`)?.getAttribute('fill');
    return chip && chip === drawn;
  });
  // The chart is drawn after the header, in the same refresh.
  await page.waitForFunction(`(${chipColours})().every(Boolean)`, null, { timeout: 3000 }).catch(() => {});
  const colours = await page.evaluate(() => [...document.querySelectorAll('#outcome-chips li[data-outcome]')].map((li) => {
    const o = li.dataset.outcome;
    const chip = li.querySelector('rect')?.getAttribute('fill');
    const drawn = document.querySelector(o === 'window' ? '#dials-chart rect.window' : `#dials-chart path.series-${o}`)?.getAttribute('fill');
    return [o, chip, drawn];
  }));
  check(colours.length >= 3 && colours.every(([, a, b]) => a && a === b), `each chip has its series' colour in the chart (${colours.map((c) => c.join(':')).join(' ')})`);
  check(colours.some(([o, c]) => o === 'window' && c === '#e8ecf1'), 'the calling windows are shaded in a neutral grey');
  const chipWords = await page.$$eval('#outcome-chips li[data-outcome]', (els) => els.map((e) => e.textContent.replace(/\s*[\d,]+$/, '').trim()));
  const heads = await page.$$eval('#campaign-detail table.counts th', (els) => els.map((e) => e.textContent));
  check(chipWords.filter((w) => w !== 'calling window').every((w) => heads.includes(w)) && heads.every((w) => !w.includes('_')),
    `one spelling of outcomes in the chips and the table (${chipWords.join(', ')} | ${heads.join(', ')})`);
  check(/^Budget \d+ attempts \(24 users × \(1 \+ 1 retry\)\)/.test(await page.textContent('#campaign-budget')), 'the budget is said while the campaign dials');
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.mouse.move(0, 999);
  await page.screenshot({ path: join(SHOTS, 'ui.png'), fullPage: false });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: join(SHOTS, 'ui-campaigns.png'), fullPage: true });

  // +1 day, then run to the campaign's end (the field offers it): the budget is then said
  // as what it was, not as what is possible.
  const before = Date.parse((await sim('/sim/v1/stack')).clock.now);
  await page.click('#advance-day');
  await page.waitForFunction(() => /^Moved a day/.test(document.querySelector('#clock-result')?.textContent || ''), null, { timeout: 10000 });
  const after = Date.parse((await sim('/sim/v1/stack')).clock.now);
  check(after - before === 86400e3, `+1 day moves the clock a day (${iso(before)} to ${iso(after)})`);
  check(await until(page, (t) => document.querySelector('#run-to')?.value === t, shown(end).slice(0, 16)), `Run to offers the campaign's end (${await page.inputValue('#run-to')})`);
  const offered = await page.inputValue('#run-to');
  await page.fill('#run-to', 'tomorrow');
  await page.click('#run-to-go');
  check(await until(page, () => /^Give the time to run to as YYYY-MM-DD HH:MM/.test(document.querySelector('#clock-result').textContent)),
    'Run to a time it cannot read says how to write one, and moves nothing');
  await page.fill('#run-to', offered);
  await page.click('#run-to-go');
  check(await seen(page, `${status}:has-text("ended")`, 10000), 'Run to the campaign\'s end ends it');
  check((await page.textContent('#clock-result')).startsWith(`Ran to ${shown(end)}`), `the run is reported (${await page.textContent('#clock-result')})`);
  check((await sim('/sim/v1/stack')).clock.now.startsWith(end.slice(0, 19)), 'the clock is at the campaign\'s end');
  // The header follows the list within the same refresh.
  await until(page, () => document.querySelector('#campaign-progress .campaign-status')?.textContent === 'ended');
  const said = await page.textContent('#campaign-budget');
  check(/^It ended after \d+ dials, against a budget of 48 attempts/.test(said) && !said.includes('possible'), `after its end the budget is said as what it was (${said})`);

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
  const answered = await seen(page, '#inbound-calls td:text-is("+14155550190")');
  check(answered && await page.isVisible('#deployment-list td:text-is("Front desk")'), 'the deployment and its inbound call are shown');
  await page.screenshot({ path: join(SHOTS, 'ui-deployments.png'), fullPage: true });

  // The key service: why each call was made (the data key of two days ago had expired).
  await page.click('#tab-keys');
  const decrypted = await seen(page, '#key-service td:text-is("decrypt-key")');
  check(decrypted && await page.isVisible('#data-keys td:text-is("byok")'), 'the data key (byok) and the key service\'s decrypt call are shown');
  const whys = await page.$$eval('#key-service tr[data-reason]', (rows) => rows.map((r) => [r.children[2].textContent, r.dataset.reason, r.querySelector('.why').textContent]));
  const reasons = new Set(whys.map(([e, r]) => `${e} ${r}`));
  check(whys.length > 0 && whys.every(([, r, w]) => r && w && !w.includes('not recorded')), `every call says why it was made (${whys.map(([e, r]) => `${e}:${r}`).join(' ')})`);
  check(reasons.has('auth cold_start') && reasons.has('decrypt-key configured_key'), 'the first calls are a cold start');
  check(reasons.has('decrypt-key key_expired') && reasons.has('auth token_expired'), 'a day on, the cached key and the token had expired');
  check(whys.some(([, r, w]) => r === 'key_expired' && w === 'the cached data key expired (data_key_cache_secs)'), 'the reason is said in words');
  await page.screenshot({ path: join(SHOTS, 'ui-keys.png'), fullPage: true });
  await page.click('#tab-webhooks');
  check(await seen(page, '#deliveries td:text-is("campaign")'), 'the campaign\'s webhook deliveries are shown with their tries');
  await page.screenshot({ path: join(SHOTS, 'ui-webhooks.png'), fullPage: true });
  await page.click('#tab-stack');
  await page.screenshot({ path: join(SHOTS, 'ui-stack.png'), fullPage: true });

  // The platform stops answering: the data dims, the clock's buttons wait, one sentence
  // says so; it answers again: all as before.
  await page.click('#tab-campaigns');
  await page.waitForSelector('#campaign-progress h3');
  offline = true;
  await page.route(`${base}/**`, (route) => (route.request().url().includes('/ui/') ? route.fallback() : route.abort('connectionrefused')));
  check(await seen(page, 'body.offline', 5000), 'when the platform does not answer, the page says so');
  check((await page.textContent('#status')) === `The platform at ${base} does not answer; retrying.`, `in a plain sentence (${await page.textContent('#status')})`);
  check(await page.isDisabled('#advance-hour') && await page.isDisabled('#advance-day') && await page.isDisabled('#run-to-go'), 'the clock\'s buttons are disabled');
  check(Number(await page.evaluate(() => getComputedStyle(document.querySelector('main')).opacity)) < 1, 'the data is dimmed');
  await page.screenshot({ path: join(SHOTS, 'ui-offline.png'), fullPage: false });
  await page.unroute(`${base}/**`);
  check(await until(page, () => !document.body.classList.contains('offline') && !document.querySelector('#advance-hour').disabled
    && document.querySelector('#status').textContent === '', null, 5000), 'when it answers again, the page is as before');
  offline = false;

  // The keyboard moves between views; every control has a name.
  await page.focus('#tab-campaigns');
  await page.keyboard.press('ArrowRight');
  check(await page.getAttribute('#tab-deployments', 'aria-selected') === 'true', 'ArrowRight selects the next view');
  await page.keyboard.press('Home');
  check(await page.evaluate(() => document.activeElement?.id) === 'tab-stack', 'Home goes to the first view');
  const unnamed = [];
  for (const view of ['stack', 'requests', 'campaigns', 'keys']) {
    await page.click(`#tab-${view}`);
    await page.waitForSelector(`#view-${view} > *`);
    unnamed.push(...await page.evaluate(() => [...document.querySelectorAll('button, input, a[href]')]
      .filter((e) => e.offsetParent !== null)
      .filter((e) => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector(`label[for="${e.id}"]`))))
      .map((e) => e.outerHTML.slice(0, 80))));
  }
  check(unnamed.length === 0, `every visible control is named (${unnamed.join(' ')})`);

  // A phone-width window: nothing wider than the screen; the chart drawn for its width,
  // its text as large as on a computer.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const view of ['requests', 'campaigns', 'keys', 'webhooks']) {
    await page.click(`#tab-${view}`);
    await page.waitForSelector(`#view-${view} > *`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, `the ${view} view fits a 390 px window (${overflow} px over)`);
  }
  await page.click('#tab-campaigns');
  check(await until(page, () => {
    const svg = document.querySelector('#dials-chart');
    return svg && Math.abs(svg.viewBox.baseVal.width - svg.getBoundingClientRect().width) <= 12;
  }, null, 5000), 'the chart is drawn for the phone\'s width');
  const smallest = await page.evaluate(() => Math.min(...[...document.querySelectorAll('#dials-chart text')]
    .map((t) => t.getBoundingClientRect().height).filter((x) => x > 0)));
  check(smallest >= 10, `the chart's text is readable at 390 px (${smallest.toFixed(1)} px high at the least)`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, 'ui-phone-campaigns.png'), fullPage: true });
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
