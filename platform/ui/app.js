// The live page: the key (from the address's fragment, or typed in), the views as tabs, and
// one loop that refreshes the clock and the open view at most once a second. When the
// platform stops answering, the page says so in one sentence, dims what it shows (the last
// it read) and disables the clock's buttons, and keeps trying.

import { Api, ApiError } from './api.js';
import { fill } from './dom.js';
import * as stack from './views/stack.js';
import * as requests from './views/requests.js';
import * as campaigns from './views/campaigns.js';
import * as deployments from './views/deployments.js';
import * as keys from './views/keys.js';
import * as webhooks from './views/webhooks.js';

const VIEWS = { stack, requests, campaigns, deployments, keys, webhooks };
const PERIOD_MS = 1000;
const store = window.sessionStorage;
const $ = (id) => document.getElementById(id);

/** The key, org and workspace of the address's fragment (`#key=...&org=...&workspace=...`),
 * moved to the tab's session storage and taken out of the address at once. */
function takeFragment() {
  if (!location.hash || location.hash.length < 2) return;
  const p = new URLSearchParams(location.hash.slice(1));
  if (p.get('key')) {
    store.setItem('key', p.get('key'));
    for (const k of ['org', 'workspace']) {
      if (p.get(k)) store.setItem(k, p.get(k));
      else store.removeItem(k);
    }
  }
  history.replaceState(null, '', location.pathname);
}

let session = null; // { api, views, view, stack }
let timer = null;

function setStatus(text, kind) {
  const s = $('status');
  if (s.textContent !== (text || '')) s.textContent = text || '';
  s.className = kind || '';
}

/** The platform answers again, or not at all. */
function reachable(yes) {
  document.body.classList.toggle('offline', !yes);
  $('main').setAttribute('aria-busy', String(!yes));
  session?.views.stack.setOffline(!yes);
  if (!yes) {
    const where = session?.ctx.stack?.platform_url || location.origin;
    setStatus(`The platform at ${where} does not answer; retrying.`, 'error offline');
  }
}

function showLogin(message) {
  session = null;
  clearTimeout(timer);
  document.body.classList.remove('offline');
  $('main').hidden = true;
  $('tabs').hidden = true;
  $('bar').hidden = true;
  $('forget').hidden = true;
  $('login').hidden = false;
  $('key').value = store.getItem('key') || '';
  $('org').value = store.getItem('org') || '';
  $('workspace').value = store.getItem('workspace') || '';
  $('login-error').textContent = message || '';
  setStatus('');
  ($('key').value ? $('org') : $('key')).focus();
}

/** The one workspace a key opens, when it names exactly one. */
function onlyWorkspace(view) {
  const named = view.workspaces.filter((w) => w.org_id !== '*' && w.workspace_id !== '*');
  return view.workspaces.length === 1 && named.length === 1 ? named[0] : null;
}

async function open() {
  const key = store.getItem('key');
  if (!key) return showLogin();
  const probe = new Api(key, '', '');
  let view;
  try {
    view = await probe.get('/sim/v1/stack');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      store.removeItem('key');
      return showLogin('That key is not a key of this platform.');
    }
    return showLogin(`The platform did not answer: ${e.message}`);
  }
  let org = store.getItem('org');
  let workspace = store.getItem('workspace');
  const only = onlyWorkspace(view);
  if ((!org || !workspace) && only) {
    ({ org_id: org, workspace_id: workspace } = only);
  }
  if (!org || !workspace) {
    return showLogin('This key opens more than one workspace: name the org and the workspace.');
  }
  store.setItem('org', org);
  store.setItem('workspace', workspace);
  const api = new Api(key, org, workspace);
  const ctx = { api, stack: view, setStatus, refreshSoon };
  session = { api, ctx, views: {}, view: null };
  for (const [name, mod] of Object.entries(VIEWS)) {
    session.views[name] = mod.create(ctx, $(`view-${name}`));
  }
  $('login').hidden = true;
  $('main').hidden = false;
  $('tabs').hidden = false;
  $('bar').hidden = false;
  $('forget').hidden = false;
  fill($('workspace-name'), `${org} / ${workspace}`);
  select(store.getItem('view') || 'stack', false);
  loop();
}

async function tick() {
  if (!session) return;
  const { ctx } = session;
  try {
    ctx.stack = await ctx.api.get('/sim/v1/stack');
    reachable(true);
    session.views.stack.header(ctx.stack);
    await session.views[session.view].refresh();
    setStatus('');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      return showLogin(`The platform refused the key: ${e.message}`);
    }
    if (e.unreachable) return reachable(false);
    setStatus(`Could not read the platform: ${e.message}`, 'error');
  }
}

async function loop() {
  clearTimeout(timer);
  const mine = session;
  await tick();
  if (session === mine && session) {
    timer = setTimeout(loop, document.hidden ? PERIOD_MS * 5 : PERIOD_MS);
  }
}

/** Refresh now (after an action), then carry on once a second. */
function refreshSoon() {
  if (session) loop();
}

function select(name, focus) {
  if (!VIEWS[name]) name = 'stack';
  session.view = name;
  store.setItem('view', name);
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.dataset.view === name;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    $(tab.getAttribute('aria-controls')).hidden = !on;
    if (on && focus) tab.focus();
    // A phone's row of tabs scrolls sideways: the selected one in sight.
    else if (on) tab.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }
}

function setUp() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener('click', () => { select(tab.dataset.view, false); refreshSoon(); });
    tab.addEventListener('keydown', (e) => {
      const i = tabs.indexOf(tab);
      const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      select(tabs[(to + tabs.length) % tabs.length].dataset.view, true);
      refreshSoon();
    });
  }
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    store.setItem('key', $('key').value.trim());
    for (const k of ['org', 'workspace']) {
      const v = $(k).value.trim();
      if (v) store.setItem(k, v); else store.removeItem(k);
    }
    open();
  });
  $('forget').addEventListener('click', () => {
    store.clear();
    showLogin('The key is forgotten: this tab no longer holds it.');
  });
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refreshSoon(); });
  takeFragment();
  open();
}

setUp();
