// Stack: where the platform is, whose workspace this is, the clock and the seed; the clock
// bar above every view: the platform's time (the page's only clock), buttons that move a
// simulated clock when the key may (+1 minute, +1 hour, +1 day, to the next due event) and
// "Run to" a time (the opened campaign's end, or any), and one line, always there, for what
// the last move did, so that nothing below moves when it comes.

import { ApiError } from '../api.js';
import { h, fill, facts, when, update, num, count } from '../dom.js';

/** An instant as the Run to field writes it: `2026-03-04 08:00` (seconds when not 0). */
function minute(t) {
  return when(t).replace(/(:00)?Z$/, '');
}

/** `2026-03-04 08:00`, `2026-03-04T08:00:00Z`, ...: an instant in UTC as RFC 3339, or null. */
export function instant(text) {
  const m = /^\s*(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d)(:\d\d(?:\.\d+)?)?\s*(?:Z|UTC)?\s*$/i.exec(text);
  if (!m) return null;
  const iso = `${m[1]}T${m[2]}${m[3] || ':00'}Z`;
  return Number.isNaN(Date.parse(iso)) ? null : iso;
}

export function create(ctx, el) {
  const bar = document.getElementById('bar');
  const state = { moving: false, offline: false, edited: false, may: false };
  const now = h('strong', { id: 'clock-now' });
  const mode = h('span', { id: 'clock-mode' });
  const due = h('span', { id: 'clock-due' });
  const result = h('p', { id: 'clock-result', class: 'result', role: 'status', 'aria-live': 'polite' });
  /** Moves the clock by `body`; `what` says how (`a minute`), or nothing for a time given. */
  const move = async (body, what) => {
    state.moving = true;
    enable();
    fill(result, what ? `Moving ${what}…` : `Running to ${when(body.to)}…`);
    result.title = '';
    try {
      const r = await ctx.api.post('/sim/v1/clock/advance', body);
      const text = `${what ? `Moved ${what} to` : 'Ran to'} ${when(r.now)}: ${count(r.steps, 'engine step')}, ${count(r.dials, 'dial')}, `
        + `${count(r.calls_ended, 'call')} ended, ${count(r.campaign_transitions, 'campaign status change')}, `
        + `${count(r.webhook_attempts, 'webhook try', 'webhook tries')} (${num(r.webhooks_delivered)} delivered).`;
      fill(result, text);
      result.title = text;
      result.className = 'result';
      state.edited = false;
    } catch (e) {
      fill(result, `The clock did not move: ${e instanceof ApiError ? e.message : e.message || e}`);
      result.title = result.textContent;
      result.className = 'result error';
    }
    state.moving = false;
    enable();
    ctx.refreshSoon();
  };
  const buttons = [
    h('button', { type: 'button', id: 'advance-minute', onclick: () => move({ seconds: 60 }, 'a minute') }, '+1 minute'),
    h('button', { type: 'button', id: 'advance-hour', onclick: () => move({ seconds: 3600 }, 'an hour') }, '+1 hour'),
    h('button', { type: 'button', id: 'advance-day', onclick: () => move({ seconds: 86400 }, 'a day') }, '+1 day'),
    h('button', {
      type: 'button',
      id: 'advance-due',
      onclick: () => {
        const { now: t, next_due_at: next } = ctx.stack.clock;
        // Something due already (the engine runs it at once) moves nothing.
        if (next) move({ to: next > t ? next : t }, 'to the next due event');
      },
    }, 'Next due'),
  ];
  const times = h('datalist', { id: 'run-to-times' });
  const target = h('input', {
    id: 'run-to',
    name: 'run-to',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'YYYY-MM-DD HH:MM',
    list: 'run-to-times',
    'aria-describedby': 'run-to-hint',
    oninput: () => { state.edited = true; },
  });
  const run = h('button', { type: 'submit', id: 'run-to-go' }, 'Run');
  const form = h('form', {
    id: 'run-to-form',
    class: 'run-to',
    onsubmit: (e) => {
      e.preventDefault();
      const to = instant(target.value);
      if (!to) {
        fill(result, 'Give the time to run to as YYYY-MM-DD HH:MM, in UTC (the platform\'s time).');
        result.className = 'result error';
        target.focus();
        return;
      }
      move({ to }, null);
    },
  },
  h('label', { for: 'run-to' }, 'Run to'), target, h('span', { class: 'unit', 'aria-hidden': 'true' }, 'UTC'), times, run,
  h('span', { id: 'run-to-hint', class: 'visually-hidden' }, 'A time in UTC, such as the opened campaign\'s end; the clock runs every step due up to it.'));
  fill(bar,
    h('div', { class: 'clock' }, h('span', { class: 'label' }, 'Platform time '), now, ' ', mode, ' ', due),
    h('div', { class: 'moves', role: 'group', 'aria-label': 'Move the simulated clock' }, buttons, form),
    result);

  /** The controls enabled when the key may move the clock, nothing is moving and the
   * platform answers. */
  function enable() {
    const on = state.may && !state.moving && !state.offline;
    for (const b of [...buttons, run, target]) b.disabled = !on;
    buttons[3].disabled = !on || !ctx.stack?.clock.next_due_at;
  }

  /** The platform stopped answering (or answers again): the controls wait for it. */
  function setOffline(off) {
    state.offline = off;
    enable();
  }

  function header(s) {
    now.textContent = when(s.clock.now);
    mode.textContent = s.clock.simulated ? '(simulated)' : '(real)';
    due.textContent = s.clock.next_due_at ? `next due ${when(s.clock.next_due_at)}` : 'nothing due';
    state.may = s.clock.may_move;
    enable();
    // Where to run to: the next due event and the opened campaign's start and end, those
    // still ahead; the field offers the campaign's end until someone types in it.
    const ahead = [
      s.clock.next_due_at && { at: s.clock.next_due_at, label: 'next due event' },
      ...(ctx.runTargets || []),
    ].filter((t) => t && t.at > s.clock.now);
    update(times, ahead, () => ahead.map((t) => h('option', { value: minute(t.at) }, t.label)));
    if (!state.edited && document.activeElement !== target) {
      const end = ahead.find((t) => t.label.startsWith('end of'));
      target.value = end ? minute(end.at) : '';
    }
    if (!result.textContent || result.classList.contains('note')) {
      const note = !s.clock.simulated
        ? 'The platform runs on the real clock: time cannot be moved.'
        : s.clock.may_move ? '' : 'Only the platform\'s clock admin keys may move its clock; this key may read it.';
      if (result.textContent !== note) fill(result, note);
      result.className = note ? 'result note' : 'result';
    }
  }

  async function refresh() {
    const s = ctx.stack;
    update(el, { ...s, clock: { ...s.clock, now: null } }, () => [
      h('h2', {}, 'Stack'),
      h('p', { class: 'lead' }, 'Where the platform is, what this key opens, and its clock.'),
      facts([
        ['Platform', h('a', { href: s.platform_url }, s.platform_url)],
        ['OpenAPI document', h('a', { href: s.openapi_url }, s.openapi_url)],
        ['Org and workspace shown', `${ctx.api.org} / ${ctx.api.workspace}`],
        ['Key', `${s.key_name} (opens ${s.workspaces.map((w) => `${w.org_id}/${w.workspace_id}`).join(', ') || 'no workspace'})`],
        ['Clock', s.clock.simulated ? 'simulated: it moves only when told' : 'real'],
        ['Seed', s.seed === null ? 'shown to an operator\'s key only' : String(s.seed)],
      ]),
      h('h3', {}, 'Key services (BYOK)'),
      s.key_services.length
        ? s.key_services.map((k) => facts([
          ['Workspace', `${k.org_id} / ${k.workspace_id}`],
          ['Endpoints', k.byok_base_url],
          ['Client id', k.client_id || 'none (a static API key)'],
          ['Key alias', k.key_alias],
          ['Audit', k.audit ? 'shown under Key service' : 'not run by this stack'],
        ]))
        : h('p', {}, 'No workspace this key opens uses a customer key service: data keys are the platform\'s own.'),
    ]);
  }

  return { header, refresh, setOffline };
}
