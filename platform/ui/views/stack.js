// Stack: where the platform is, whose workspace this is, the clock and the seed; the clock
// bar above every view, with buttons that move a simulated clock when the key may.

import { ApiError } from '../api.js';
import { h, fill, facts, when, update, num, count } from '../dom.js';

export function create(ctx, el) {
  const bar = document.getElementById('bar');
  const now = h('strong', { id: 'clock-now' });
  const mode = h('span', { id: 'clock-mode' });
  const due = h('span', { id: 'clock-due' });
  const result = h('p', { id: 'clock-result', class: 'result', role: 'status', 'aria-live': 'polite' });
  const note = h('p', { id: 'clock-note', class: 'hint' });
  const move = async (body, what) => {
    for (const b of buttons) b.disabled = true;
    try {
      const r = await ctx.api.post('/sim/v1/clock/advance', body);
      fill(result, `Moved ${what} to ${when(r.now)}: ${count(r.steps, 'engine step')}, ${count(r.dials, 'dial')}, `
        + `${count(r.calls_ended, 'call')} ended, ${count(r.campaign_transitions, 'campaign status change')}, `
        + `${count(r.webhook_attempts, 'webhook try', 'webhook tries')} (${num(r.webhooks_delivered)} delivered).`);
    } catch (e) {
      fill(result, `The clock did not move: ${e instanceof ApiError ? e.message : e}`);
    }
    ctx.refreshSoon();
  };
  const buttons = [
    h('button', { type: 'button', id: 'advance-minute', onclick: () => move({ seconds: 60 }, 'a minute') }, '+1 minute'),
    h('button', { type: 'button', id: 'advance-hour', onclick: () => move({ seconds: 3600 }, 'an hour') }, '+1 hour'),
    h('button', {
      type: 'button',
      id: 'advance-due',
      onclick: () => {
        const { now: t, next_due_at: due } = ctx.stack.clock;
        // Something due already (the engine runs it at once) moves nothing.
        if (due) move({ to: due > t ? due : t }, 'to the next due event');
      },
    }, 'Next due event'),
  ];
  fill(bar,
    h('div', { class: 'clock' }, h('span', {}, 'Platform time '), now, ' ', mode, ' ', due),
    h('div', { class: 'buttons', role: 'group', 'aria-label': 'Move the simulated clock' }, buttons),
    note, result);

  function header(s) {
    now.textContent = when(s.clock.now);
    mode.textContent = s.clock.simulated ? '(simulated)' : '(real)';
    due.textContent = s.clock.next_due_at ? `next due ${when(s.clock.next_due_at)}` : 'nothing due';
    const may = s.clock.may_move;
    buttons[0].disabled = !may;
    buttons[1].disabled = !may;
    buttons[2].disabled = !may || !s.clock.next_due_at;
    note.textContent = !s.clock.simulated
      ? 'The platform runs on the real clock: time cannot be moved.'
      : may ? '' : 'Only the platform\'s clock admin keys may move its clock; this key may read it.';
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

  return { header, refresh };
}
