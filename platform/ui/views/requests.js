// Requests: the request journal as it grows, as a list beside a detail pane. Each row says
// its operation, its path without the org and workspace every path of the workspace has,
// its status, its verdict and its first violation; on a simulated clock, where many
// requests share one instant, rows are told apart by their number and the time heads each
// run of rows at one instant. The counts of the verdicts are filters. The pane shows the
// request opened: its redacted bodies, each violation with its loc, its message and what
// the contract expected. Below, the coverage table per operation.

import { openapiDocument } from '../api.js';
import { expected } from '../schema.js';
import { h, fill, table, facts, when, badge, json, update, num } from '../dom.js';

const SHOWN = 100;

/** The filters: the verdict each shows (null: all), and their names. */
const FILTERS = [
  { verdict: null, id: 'all', name: 'All', count: (s) => s.requests },
  { verdict: 'conforms', id: 'conforms', name: 'Keep the contract', count: (s) => s.conforming },
  { verdict: 'violates', id: 'violates', name: 'Break it', count: (s) => s.violating },
  { verdict: 'not_judged', id: 'not-judged', name: 'Met a fault first', count: (s) => s.not_judged },
];

/** A verdict in the words of the filters. */
const VERDICT = { conforms: 'keeps', violates: 'breaks', not_judged: 'fault first' };

/** Whether a journal entry is of the workspace on show (its owner's, else its path's). */
function ours(e, api) {
  const o = e.owner || (e.org_id ? { org_id: e.org_id, workspace_id: e.workspace_id } : null);
  if (!o) return false;
  const match = (pattern, id) => pattern === '*' || pattern === id;
  return match(o.org_id, api.org) && match(o.workspace_id, api.workspace);
}

/**
 * The path without what every path of the workspace starts with
 * (`/api/scheduling/v1/orgs/org-1/workspaces/ws-1/campaigns/c1` is `/campaigns/c1`); a path
 * outside the workspace's stays whole.
 */
export function shortPath(path) {
  const m = /^\/api\/[^/]+\/v\d+\/orgs\/[^/]+\/workspaces\/[^/]+(\/.*)?$/.exec(path);
  return m ? (m[1] || '/') : path;
}

/** The first violation in a line (`body › name: must match ...`), and how many more. */
function firstViolation(e) {
  const [v, ...rest] = e.violations || [];
  if (!v) return null;
  return h('span', { class: 'first-violation' },
    h('span', { class: 'loc' }, v.loc.join(' › ')), `: ${v.msg}`,
    rest.length ? h('span', { class: 'more' }, ` +${rest.length}`) : null);
}

export function create(ctx, el) {
  const state = { total: 0, verdict: null, open: null, entries: [] };
  const filters = h('div', { id: 'journal-filter', class: 'counters', role: 'group', 'aria-label': 'Show the requests that' });
  const summary = h('p', { id: 'journal-summary', class: 'hint' });
  const list = h('div', { id: 'journal', class: 'list-pane' });
  const detail = h('div', { id: 'request-detail', class: 'detail-pane', tabindex: '-1', 'aria-label': 'The request opened' });
  const coverage = h('div', { id: 'coverage' });
  const coverageTitle = h('span', {});
  fill(el,
    h('h2', {}, 'Requests'),
    h('p', { class: 'lead' }, 'What the platform received from this workspace\'s clients and whether each request keeps the contract; open one to see why it does not.'),
    filters, summary,
    h('div', { class: 'split' }, list, detail),
    h('details', { id: 'coverage-details' }, h('summary', {}, coverageTitle), coverage));
  placeholder();

  function placeholder() {
    fill(detail, h('p', { class: 'hint empty-pane' }, 'Open a request to see its bodies and, when it breaks the contract, where and why.'));
  }

  function choose(verdict) {
    state.verdict = verdict;
    state.total = 0;
    ctx.refreshSoon();
  }

  function rowButtons() {
    return [...list.querySelectorAll('button.req')];
  }

  /** Up and Down move between the rows; Home and End to the first and the last. */
  function keys(e) {
    const rows = rowButtons();
    const i = rows.indexOf(e.target);
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: rows.length - 1 }[e.key];
    if (i < 0 || to === undefined || !rows[to]) return;
    e.preventDefault();
    rows[to].focus();
  }

  async function show(seq) {
    state.open = seq;
    const e = state.entries.find((x) => x.seq === seq);
    if (!e) return;
    for (const b of rowButtons()) {
      if (Number(b.dataset.seq) === seq) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
    let doc = null;
    try { doc = await openapiDocument(); } catch { /* the expectations stay unknown */ }
    fill(detail,
      h('div', { class: 'pane-head' },
        h('h3', {}, `Request #${e.seq}: ${e.method} `, h('code', {}, shortPath(e.path))),
        h('button', {
          type: 'button',
          class: 'quiet',
          onclick: () => { state.open = null; placeholder(); list.querySelector(`[data-focus="open-${seq}"]`)?.focus(); ctx.refreshSoon(); },
        }, 'Close')),
      facts([
        ['Path', h('code', {}, e.path)],
        ['At', when(e.at)],
        ['Operation', e.operation_id || 'none of the document'],
        ['Status', e.status === null ? 'no answer (connection closed)' : String(e.status)],
        ['Verdict', badge(VERDICT[e.verdict] || e.verdict, e.verdict)],
        ['Key', e.api_key === 'valid' ? `valid (${e.key_name})` : e.api_key],
        ['Time taken', `${e.duration_ms.toFixed(1)} ms`],
        e.fault && ['Fault', `${e.fault.kind} (${e.fault.fault_id}): ${e.fault.effect}`],
      ]),
      e.violations.length
        ? table('How it breaks the contract', ['Where (loc)', 'Message (type)', 'What the contract expected'],
          e.violations.map((v) => [
            h('code', { class: 'loc' }, v.loc.join(' › ')),
            h('span', {}, v.msg, ' ', h('code', { class: 'type' }, v.type)),
            (doc && expected(doc, e.operation_id, v.loc, v.kind)) || '—',
          ]), { class: 'violations' })
        : h('p', {}, 'It keeps the contract.'),
      Object.keys(e.query || {}).length ? [h('h4', {}, 'Query'), json(e.query)] : null,
      h('h4', {}, 'Request body (redacted)'),
      e.request.json !== null && e.request.json !== undefined ? json(e.request.json) : h('p', {}, e.request.note || (e.request.bytes ? `${num(e.request.bytes)} bytes, not JSON` : 'none')),
      h('h4', {}, 'Answer body (redacted)'),
      e.response.json !== null && e.response.json !== undefined ? json(e.response.json) : h('p', {}, e.response.note || (e.response.bytes ? `${num(e.response.bytes)} bytes, not kept` : 'none')));
    detail.focus();
  }

  function row(e) {
    const open = e.seq === state.open;
    return h('li', { class: e.verdict === 'violates' ? 'bad' : null, dataset: { seq: e.seq, path: e.path } },
      h('button', {
        type: 'button',
        class: 'req',
        dataset: { focus: `open-${e.seq}`, seq: e.seq },
        'aria-current': open ? 'true' : null,
        title: `${e.method} ${e.path}`,
        onclick: () => show(e.seq),
        onkeydown: keys,
      },
      h('span', { class: 'req-line' },
        h('span', { class: 'seq' }, `#${e.seq}`),
        h('span', { class: 'op' }, e.operation_id || 'unknown route'),
        h('span', { class: 'status' }, e.status === null ? 'no answer' : String(e.status)),
        badge(VERDICT[e.verdict] || e.verdict, e.verdict)),
      h('span', { class: 'req-line' },
        h('code', { class: 'path' }, `${e.method} ${shortPath(e.path)}`),
        ctx.stack.clock.simulated ? null : h('span', { class: 'time' }, when(e.at).slice(11))),
      firstViolation(e)));
  }

  function rows(entries) {
    if (!entries.length) {
      return [h('li', { class: 'empty' }, state.verdict ? 'none of these among the latest requests' : 'no request yet')];
    }
    if (!ctx.stack.clock.simulated) return entries.map(row);
    // On a simulated clock many requests share an instant: the instant heads its run.
    const out = [];
    let last = null;
    for (const e of entries) {
      const at = when(e.at);
      if (at !== last) out.push(h('li', { class: 'when', role: 'presentation' }, h('time', { datetime: e.at }, at)));
      last = at;
      out.push(row(e));
    }
    return out;
  }

  async function refresh() {
    const path = `/sim/v1/journal${state.verdict ? `?verdict=${state.verdict}` : ''}`;
    const [page, sum] = await Promise.all([
      ctx.api.latest(path, SHOWN, state),
      ctx.api.get('/sim/v1/journal/summary'),
    ]);
    state.entries = page.items.filter((e) => ours(e, ctx.api));
    update(filters, [sum.requests, sum.conforming, sum.violating, sum.not_judged, state.verdict], () => FILTERS.map((f) => h('button', {
      type: 'button',
      id: `filter-${f.id}`,
      class: `counter ${f.id}`,
      dataset: { focus: `filter-${f.id}` },
      'aria-pressed': String(state.verdict === f.verdict),
      onclick: () => choose(f.verdict),
    }, h('span', { class: 'n' }, num(f.count(sum))), ' ', f.name)));
    fill(summary, `${num(sum.requests)} requests this key sees since ${when(sum.since)}; `
      + `showing the latest ${num(Math.min(SHOWN, page.total))} of ${num(page.total)}${state.verdict ? ` that ${FILTERS.find((f) => f.verdict === state.verdict).name.toLowerCase()}` : ''}, newest first.`);
    update(list, [state.entries, state.verdict, state.open, ctx.stack.clock.simulated], () => h('ol', {
      id: 'journal-list',
      class: 'requests',
      'aria-label': state.verdict ? `Requests that ${FILTERS.find((f) => f.verdict === state.verdict).name.toLowerCase()}, newest first` : 'Requests, newest first',
    }, rows(state.entries)));
    fill(coverageTitle, `Coverage: ${num(sum.coverage.called)} of ${num(sum.coverage.operations)} operations called (${sum.coverage.percent}%)`);
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
