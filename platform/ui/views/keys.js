// Key service: the platform's data keys for the workspace (provider, alias, active) and,
// under `harness up`, the key service's audit: the auth, decrypt and rotate calls it received,
// why the platform made each (as it recorded it), their outcomes, latency and faults.

import { h, fill, table, when, badge, update, num } from '../dom.js';

const KEPT = 200;

/** Why the platform made a call, in words (`reason` of the platform's record of it). */
const WHY = {
  cold_start: { auth: 'cold start: no token yet since the platform started', 'decrypt-key': 'cold start: the key not in memory since the platform started' },
  configured_key: 'first use of the configured key (cold start): it becomes the active data key',
  key_expired: 'the cached data key expired (data_key_cache_secs)',
  token_expired: 'the cached token expired (expires_in)',
  token_refused: { auth: 'the key service refused the cached token (401): a new one', default: 'again, with a new token, after a 401' },
  rotation_due: 'rotation: the active key is older than the rotation period',
  rotation_asked: 'rotation asked for (POST .../data-keys/rotate)',
  rotation_check: 'rotation: the new key decrypted back, to check it opens',
};

/** A call's reason in words; a call the platform did not record says so. */
export function why(call) {
  const w = call.reason && WHY[call.reason];
  if (!w) return call.reason ? call.reason.replace(/_/g, ' ') : 'not recorded by this platform';
  return typeof w === 'string' ? w : (w[call.endpoint] || w.default || Object.values(w)[0]);
}

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
    const reasons = {};
    for (const c of state.calls) {
      const k = (c.reason || 'not recorded').replace(/_/g, ' ');
      reasons[k] = (reasons[k] || 0) + 1;
    }
    update(service, [ks, state.calls], () => [
      h('p', {}, `${ks.byok_base_url}: client ${ks.client_id || '(static key)'}, alias ${ks.key_alias}. `
        + `${num(state.total)} calls so far${state.dropped ? ` (${num(state.dropped)} dropped from the audit)` : ''}; `
        + `of the latest ${state.calls.length}: ${Object.entries(by).map(([k, n]) => `${n} ${k}`).join(', ') || 'none'}`
        + `${state.calls.length ? `; why: ${Object.entries(reasons).map(([k, n]) => `${n} ${k}`).join(', ')}` : ''}.`),
      table('Key service calls, newest first', ['#', 'At', 'Endpoint', 'Why the platform called', 'Outcome', 'Status', 'Latency', 'Faults', 'Caller', 'Alias'],
        state.calls.map((c) => ({
          attrs: { class: c.outcome === 'OK' ? null : 'bad', dataset: { reason: c.reason || '' } },
          cells: [String(c.seq), { text: when(c.at), class: 'nowrap' }, { text: c.endpoint, class: 'nowrap' }, { text: why(c), class: 'why' },
            badge(c.outcome, c.outcome === 'OK' ? 'ok' : 'failed'), c.status ?? 'none',
            `${c.latency_ms.toFixed(1)} ms`, c.faults.join(', ') || '—', c.caller || '—', c.key_alias || '—'],
        })), { empty: 'no call yet: the platform calls the key service when it first needs the workspace\'s data key' }),
    ]);
  }

  return { refresh };
}
