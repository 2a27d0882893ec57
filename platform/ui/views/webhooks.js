// Webhooks: the workspace's event deliveries, pending, delivered or failed, with their tries.

import { h, fill, table, when, badge, update, num } from '../dom.js';

const SHOWN = 100;

export function create(ctx, el) {
  const state = { total: 0 };
  const counts = h('p', { id: 'delivery-counts' });
  const list = h('div', { id: 'deliveries' });
  fill(el,
    h('h2', {}, 'Webhooks'),
    h('p', { class: 'lead' }, 'Every event the platform sent (or is still trying to send) to this workspace\'s webhook URLs.'),
    counts, list);

  async function refresh() {
    const page = await ctx.api.latest(ctx.api.ws('/sim/v1', '/webhook-deliveries'), SHOWN, state);
    const by = { pending: 0, delivered: 0, failed: 0 };
    for (const d of page.items) by[d.status] += 1;
    fill(counts, page.total
      ? `${num(page.total)} deliveries; of the latest ${page.items.length}: ${by.pending} pending, ${by.delivered} delivered, ${by.failed} failed.`
      : 'No webhook event yet.');
    update(list, page.items, () => table('Deliveries, newest first',
      ['Created', 'Kind', 'About', 'URL', 'Status', 'Tries', 'Last answer', 'Next try', 'Delivered'],
      page.items.map((d) => ({
        attrs: { class: d.status === 'failed' ? 'bad' : null },
        cells: [
          when(d.created_at), d.kind, h('code', {}, d.subject_id), d.url, badge(d.status), String(d.tries),
          d.last_status_code ?? d.last_error ?? '—', when(d.next_try_at), when(d.delivered_at),
        ],
      })), { empty: 'no webhook event yet' }));
  }

  return { refresh };
}
