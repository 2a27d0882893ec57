// Key service: the platform's data keys for the workspace (provider, alias, active) and,
// under `harness up`, the key service's audit: the auth, decrypt and rotate calls it received,
// their outcomes, latency and faults.

import { h, fill, table, when, badge, update, num } from '../dom.js';

const KEPT = 200;

export function create(ctx, el) {
  const state = { after: 0, calls: [], dropped: 0 };
  const dataKeys = h('div', { id: 'data-keys' });
  const service = h('div', { id: 'key-service' });
  fill(el,
    h('h2', {}, 'Key service'),
    h('p', { class: 'lead' }, 'The data keys that seal this workspace\'s data, and what its key service was asked.'),
    dataKeys, service);

  async function refresh() {
    const keys = await ctx.api.get(ctx.api.ws('/admin/v1', '/data-keys'));
    update(dataKeys, keys.items, () => table('Data keys, oldest first', ['Id', 'Provider', 'Alias', 'Active', 'Adopted'],
      keys.items.map((k) => ({
        attrs: { class: k.active ? 'selected' : null },
        cells: [String(k.key_id), k.provider, k.key_alias, k.active ? 'active' : 'older', when(k.created_at)],
      })), { empty: 'no data key yet: the first is made when the workspace first stores data' }));
    const ks = ctx.stack.key_services.find((k) => k.org_id === ctx.api.org && k.workspace_id === ctx.api.workspace);
    if (!ks) {
      update(service, 'none', () => h('p', {}, 'This workspace uses no customer key service: its data keys are wrapped by the platform\'s local key.'));
      return;
    }
    if (!ks.audit) {
      update(service, ks, () => h('p', {}, `The workspace's key service is at ${ks.byok_base_url} (alias ${ks.key_alias}); its audit is shown only for the key service harness up runs beside the platform.`));
      return;
    }
    let page = await ctx.api.get(ctx.api.ws('/sim/v1', `/key-service/calls?after=${state.after}&limit=100`));
    if (page.next_seq - 1 < state.after) {
      // The key service was reset (its numbering starts again): read it from the start.
      Object.assign(state, { after: 0, calls: [] });
      page = await ctx.api.get(ctx.api.ws('/sim/v1', '/key-service/calls?after=0&limit=100'));
    }
    state.calls = [...page.items.slice().reverse(), ...state.calls].slice(0, KEPT);
    // The next read starts after the last call read (more may wait beyond this page).
    if (page.items.length) state.after = page.items[page.items.length - 1].seq;
    state.total = page.next_seq - 1;
    state.dropped = page.dropped;
    const by = {};
    for (const c of state.calls) {
      const k = `${c.endpoint} ${c.outcome}`;
      by[k] = (by[k] || 0) + 1;
    }
    update(service, [ks, state.calls], () => [
      h('p', {}, `${ks.byok_base_url}: client ${ks.client_id || '(static key)'}, alias ${ks.key_alias}. `
        + `${num(state.total)} calls so far${state.dropped ? ` (${num(state.dropped)} dropped from the audit)` : ''}; `
        + `of the latest ${state.calls.length}: ${Object.entries(by).map(([k, n]) => `${n} ${k}`).join(', ') || 'none'}.`),
      table('Key service calls, newest first', ['#', 'At', 'Endpoint', 'Caller', 'Alias', 'Outcome', 'Status', 'Latency', 'Faults'],
        state.calls.map((c) => ({
          attrs: { class: c.outcome === 'OK' ? null : 'bad' },
          cells: [String(c.seq), when(c.at), c.endpoint, c.caller || '—', c.key_alias || '—',
            badge(c.outcome, c.outcome === 'OK' ? 'ok' : 'failed'), c.status ?? 'none',
            `${c.latency_ms.toFixed(1)} ms`, c.faults.join(', ') || '—'],
        })), { empty: 'no call yet: the platform calls the key service when it first needs the workspace\'s data key' }),
    ]);
  }

  return { refresh };
}
