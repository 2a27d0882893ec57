// Deployments: each deployment's status and numbers, and the inbound calls the platform
// answered or refused, and why.

import { h, fill, table, when, badge, update, num } from '../dom.js';

const SHOWN = 100;

export function create(ctx, el) {
  const state = { total: 0 };
  const list = h('div', { id: 'deployment-list' });
  const counts = h('p', { id: 'inbound-counts' });
  const calls = h('div', { id: 'inbound-calls' });
  fill(el,
    h('h2', {}, 'Deployments'),
    h('p', { class: 'lead' }, 'Which agents answer which numbers, and what happened to each inbound call.'),
    list, h('h3', {}, 'Inbound calls'), counts, calls);

  async function refresh() {
    const [page, inbound] = await Promise.all([
      ctx.api.get(ctx.api.ws('/api/app-authoring/v1', '/deployments?limit=100')),
      ctx.api.latest(ctx.api.ws('/sim/v1', '/inbound-calls'), SHOWN, state),
    ]);
    update(list, page.items, () => table(`Deployments (${num(page.total)})`,
      ['Name', 'Status', 'Agent', 'Numbers', 'Hours', 'Id', 'Updated'],
      page.items.map((d) => [
        d.name || '—', badge(d.status || 'active'), `${d.app_id} v${d.app_version}`,
        (d.phone_numbers || d.connection_configs.flatMap((c) => c.phone_numbers || [])).join(', '),
        d.inbound_config
          ? `${d.inbound_config.allowed_days.join(', ')} ${d.inbound_config.start_time}–${d.inbound_config.end_time} ${d.inbound_config.timezone}`
          : 'always',
        h('code', {}, d.deployment_id), when(d.updated_at),
      ]), { empty: 'no deployment in this workspace yet' }));
    const why = {};
    for (const c of inbound.items) {
      const k = c.answered ? 'answered' : `refused: ${c.rejection.replace(/_/g, ' ')}`;
      why[k] = (why[k] || 0) + 1;
    }
    fill(counts, inbound.total
      ? `${num(inbound.total)} inbound calls; of the latest ${inbound.items.length}: ${Object.entries(why).map(([k, n]) => `${n} ${k}`).join(', ')}.`
      : 'No inbound call yet.');
    update(calls, inbound.items, () => table('Inbound calls, newest first',
      ['At', 'Caller', 'Dialled', 'Answered', 'Why not', 'Deployment', 'Caller found in cohort'],
      inbound.items.map((c) => ({
        attrs: { class: c.answered ? null : 'bad' },
        cells: [
          when(c.at), c.caller, c.dialled, c.answered ? 'yes' : 'no',
          c.rejection ? c.rejection.replace(/_/g, ' ') : '—',
          c.deployment_id ? h('code', {}, c.deployment_id) : '—',
          c.cohort_id ? `${c.cohort_id} (${c.user_identifier})` : '—',
        ],
      })), { empty: 'no inbound call yet' }));
  }

  return { refresh };
}
