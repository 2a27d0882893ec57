// Requests: the request journal as it grows (time, method, path, status, verdict), a filter
// for the requests that break the contract, one request opened (its redacted bodies, each
// violation with its loc, message and what the contract expected), and the coverage table
// per operation.

import { openapiDocument } from '../api.js';
import { expected } from '../schema.js';
import { h, fill, table, facts, when, badge, json, update, num } from '../dom.js';

const SHOWN = 100;

/** Whether a journal entry is of the workspace on show (its owner's, else its path's). */
function ours(e, api) {
  const o = e.owner || (e.org_id ? { org_id: e.org_id, workspace_id: e.workspace_id } : null);
  if (!o) return false;
  const match = (pattern, id) => pattern === '*' || pattern === id;
  return match(o.org_id, api.org) && match(o.workspace_id, api.workspace);
}

export function create(ctx, el) {
  const state = { total: 0, violating: false, open: null, entries: [] };
  const only = h('input', {
    type: 'checkbox',
    id: 'only-violations',
    onchange: () => { state.violating = only.checked; state.total = 0; ctx.refreshSoon(); },
  });
  const summary = h('p', { id: 'journal-summary' });
  const list = h('div', { id: 'journal' });
  const detail = h('div', { id: 'request-detail', tabindex: '-1' });
  const coverage = h('div', { id: 'coverage' });
  fill(el,
    h('h2', {}, 'Requests'),
    h('p', { class: 'lead' }, 'What the platform received from this workspace\'s clients and whether each request keeps the contract; open one to see why it does not.'),
    h('div', { class: 'controls' }, only, h('label', { for: 'only-violations' }, 'Only requests that break the contract')),
    summary, list, detail, coverage);

  async function show(seq) {
    state.open = seq;
    const e = state.entries.find((x) => x.seq === seq);
    if (!e) return;
    let doc = null;
    try { doc = await openapiDocument(); } catch { /* the expectations stay unknown */ }
    fill(detail,
      h('h3', {}, `Request #${e.seq}: ${e.method} ${e.path}`),
      facts([
        ['At', when(e.at)],
        ['Operation', e.operation_id || 'none of the document'],
        ['Status', e.status === null ? 'no answer (connection closed)' : String(e.status)],
        ['Verdict', badge(e.verdict)],
        ['Key', e.api_key === 'valid' ? `valid (${e.key_name})` : e.api_key],
        ['Time taken', `${e.duration_ms.toFixed(1)} ms`],
        e.fault && ['Fault', `${e.fault.kind} (${e.fault.fault_id}): ${e.fault.effect}`],
      ]),
      e.violations.length
        ? table('How it breaks the contract', ['Where (loc)', 'Message', 'Type', 'What the contract expected'],
          e.violations.map((v) => [
            h('code', { class: 'loc' }, v.loc.join(' › ')),
            v.msg,
            v.type,
            (doc && expected(doc, e.operation_id, v.loc, v.kind)) || '—',
          ]), { class: 'violations' })
        : h('p', {}, 'It keeps the contract.'),
      Object.keys(e.query || {}).length ? [h('h4', {}, 'Query'), json(e.query)] : null,
      h('h4', {}, 'Request body (redacted)'),
      e.request.json !== null && e.request.json !== undefined ? json(e.request.json) : h('p', {}, e.request.note || (e.request.bytes ? `${num(e.request.bytes)} bytes, not JSON` : 'none')),
      h('h4', {}, 'Answer body (redacted)'),
      e.response.json !== null && e.response.json !== undefined ? json(e.response.json) : h('p', {}, e.response.note || (e.response.bytes ? `${num(e.response.bytes)} bytes, not kept` : 'none')),
      h('button', { type: 'button', onclick: () => { state.open = null; fill(detail); list.querySelector(`[data-focus="open-${seq}"]`)?.focus(); } }, 'Close'));
    detail.focus();
  }

  async function refresh() {
    const path = `/sim/v1/journal${state.violating ? '?verdict=violates' : ''}`;
    const [page, sum] = await Promise.all([
      ctx.api.latest(path, SHOWN, state),
      ctx.api.get('/sim/v1/journal/summary'),
    ]);
    state.entries = page.items.filter((e) => ours(e, ctx.api));
    fill(summary, `${num(sum.requests)} requests this key sees since ${when(sum.since)}: ${num(sum.conforming)} keep the contract, `
      + `${num(sum.violating)} break it, ${num(sum.not_judged)} met a fault first. `
      + `${num(sum.coverage.called)} of ${num(sum.coverage.operations)} operations called (${sum.coverage.percent}%). `
      + `Showing the latest ${Math.min(SHOWN, page.total)} of ${num(page.total)}.`);
    update(list, state.entries, () => table(
      state.violating ? 'Requests that break the contract, newest first' : 'Requests, newest first',
      ['#', 'Time', 'Method', 'Path', 'Status', 'Verdict', ''],
      state.entries.map((e) => ({
        attrs: { class: e.verdict === 'violates' ? 'bad' : null, dataset: { seq: e.seq } },
        cells: [
          String(e.seq), when(e.at), e.method, h('code', {}, e.path),
          e.status === null ? 'none' : String(e.status), badge(e.verdict),
          h('button', { type: 'button', dataset: { focus: `open-${e.seq}` }, 'aria-label': `Open request ${e.seq}`, onclick: () => show(e.seq) }, 'Open'),
        ],
      })),
      { empty: 'no request yet', class: 'requests' }));
    update(coverage, sum.operations, () => table('Coverage per operation',
      ['Operation', 'Method and path', 'Calls', 'Statuses', 'Breaking', 'Documented, not seen'],
      sum.operations.map((o) => ({
        attrs: { class: o.calls === 0 ? 'uncalled' : null },
        cells: [
          o.operation_id, h('code', {}, `${o.method} ${o.path}`), num(o.calls),
          Object.entries(o.statuses).map(([s, n]) => `${s}×${n}`).join(' ') || '—',
          num(o.violating_requests), o.documented_statuses_not_seen.join(' ') || '—',
        ],
      }))));
  }

  return { refresh };
}
