// Campaigns: each campaign's status; the one opened with a progress header (its status and
// dates, a bar of its users done, on a call, pending and unfinished, its dials by outcome as
// chips that are also the chart's legend, its attempt budget), its chart of dials over time
// (the scenario report's chart, drawn by the platform at the width the page has for it), its
// counts, its status changes and its cohorts with their rejected records.

import { ApiError } from '../api.js';
import { h, fill, table, facts, when, badge, update, num, count } from '../dom.js';

/** The chart's series in its order: the results of ended dials, then those in progress. */
export const SERIES = ['connected', 'short_duration', 'busy', 'no_answer', 'failed', 'provider_error', 'internal_error', 'in_progress'];
const OUTCOMES = SERIES.slice(0, -1);

/** An outcome in words, one spelling everywhere (the chart's hover says it the same way). */
export function outcome(name) {
  return name.replace(/_/g, ' ');
}

/** The chart's colour of each series (contracts::report::chart::colour; the browser test
 * checks that the two agree). */
const COLOUR = {
  connected: '#2e7d32',
  short_duration: '#9ccc65',
  busy: '#ef6c00',
  no_answer: '#90a4ae',
  failed: '#c62828',
  provider_error: '#6a1b9a',
  internal_error: '#283593',
  in_progress: '#64b5f6',
};

/** The users' states of the bar, in its order. */
const USERS = [
  ['done', 'users_done', 'done'],
  ['calling', 'users_in_progress', 'on a call'],
  ['pending', 'users_pending', 'pending'],
  ['unfinished', 'users_unfinished', 'unfinished'],
];

const DAY = new Intl.DateTimeFormat('en-GB', {
  weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZone: 'UTC', hourCycle: 'h23',
});
/** `Mon 2 Mar 08:30`. */
function day(t) {
  return DAY.format(new Date(t)).replace(',', '');
}

/** A coloured square (SVG, so no style attribute is needed). */
function swatch(colour) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', '0 0 10 10');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'swatch');
  const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
  rect.setAttribute('width', '10');
  rect.setAttribute('height', '10');
  rect.setAttribute('rx', '2');
  rect.setAttribute('fill', colour);
  svg.append(rect);
  return svg;
}

/** Parses the platform's SVG chart into a node of this page (never as HTML). */
function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  if (doc.querySelector('parsererror') || doc.documentElement.nodeName !== 'svg') return null;
  return document.importNode(doc.documentElement, true);
}

/** Whether the campaign can still dial. */
function live(status) {
  return ['scheduled', 'active', 'paused'].includes(status);
}

/** The attempt budget against what the campaign can still dial; once it has ended, what it
 * did against its budget (its capacity then is only the dials it made). */
function budget(c, s) {
  const retries = c.app_config.retry_config?.max_retries ?? 0;
  const rule = `${count(s.users_total, 'user')} × (1 + ${count(retries, 'retry', 'retries')})`;
  if (!live(c.status)) {
    const left = s.users_unfinished ? `; ${count(s.users_unfinished, 'user')} left unfinished` : '';
    return `It ${c.status === 'cancelled' ? 'was cancelled' : 'ended'} after ${count(s.attempts_total, 'dial')}, against a budget of ${num(s.attempt_budget)} attempts (${rule})${left}.`;
  }
  const fits = s.attempt_capacity >= s.attempt_budget;
  return `Budget ${num(s.attempt_budget)} attempts (${rule}); ${fits ? 'all fit' : `only ${num(s.attempt_capacity)} fit`} in its calling windows before its end (the ${num(s.attempts_total)} made included).`;
}

/** The progress header: status and dates, the users' bar, the outcome chips, the budget. */
function progress(c, a) {
  const s = c.statistics;
  const w = c.allowed_schedule;
  const bar = h('div', { class: 'users-bar', 'aria-hidden': 'true' });
  for (const [cls, field] of USERS) {
    if (!s[field]) continue;
    const seg = h('span', { class: `seg ${cls}` });
    seg.style.flexGrow = String(s[field]);
    bar.append(seg);
  }
  if (!bar.children.length) bar.append(h('span', { class: 'seg none' }));
  const inProgress = (a.buckets || []).reduce((n, b) => n + (b[a.series.indexOf('in_progress') + 1] || 0), 0);
  const chips = [
    ...OUTCOMES.filter((o) => s.attempts_by_outcome[o]).map((o) => [o, s.attempts_by_outcome[o]]),
    ...(inProgress ? [['in_progress', inProgress]] : []),
  ];
  return [
    h('div', { class: 'progress-head' },
      h('h3', { id: 'campaign-title' }, `${c.name} `, h('span', { class: 'campaign-status' }, badge(c.status))),
      h('p', { class: 'hint dates' },
        `${day(c.start_timestamp)} → ${day(c.end_timestamp)} UTC · calls ${w.allowed_days.map((d) => d.slice(0, 3)).join(' ')} `
        + `${w.allowed_start_time}–${w.allowed_end_time} ${w.timezone}`)),
    h('div', { class: 'users' },
      bar,
      h('ul', { id: 'users-legend', class: 'legend', 'aria-label': `Users, ${num(s.users_total)} in all` },
        USERS.map(([cls, field, label]) => h('li', { class: cls, dataset: { state: cls } },
          h('i', { class: `sw ${cls}`, 'aria-hidden': 'true' }), h('strong', {}, num(s[field])), ` ${label}`)),
        h('li', { class: 'total' }, `of ${count(s.users_total, 'user')}${s.users_excluded ? ` (${num(s.users_excluded)} excluded)` : ''}`))),
    h('ul', { id: 'outcome-chips', class: 'chips', 'aria-label': 'Dials by outcome' },
      chips.length
        ? chips.map(([o, n]) => h('li', { class: 'chip', dataset: { outcome: o } }, swatch(COLOUR[o]), `${outcome(o)} `, h('strong', {}, num(n))))
        : h('li', { class: 'chip none' }, 'no dial yet'),
      h('li', { class: 'chip window', dataset: { outcome: 'window' } }, swatch('#e8ecf1'), 'calling window')),
    h('p', { id: 'campaign-budget', class: 'budget' }, budget(c, s),
      s.capacity_warning ? [' ', h('span', { class: 'warning' }, s.capacity_warning)] : null),
  ];
}

export function create(ctx, el) {
  const state = { selected: null };
  const list = h('div', { id: 'campaign-list' });
  const head = h('section', { id: 'campaign-progress', class: 'progress', 'aria-labelledby': 'campaign-title' });
  const chart = h('figure', { id: 'campaign-chart', class: 'chart' });
  const detail = h('div', { id: 'campaign-detail' });
  const changes = h('div', { id: 'campaign-changes' });
  const cohorts = h('div', { id: 'campaign-cohorts' });
  fill(el,
    h('h2', {}, 'Campaigns'),
    h('p', { class: 'lead' }, 'How each campaign is dialling. Open one for its progress, its chart, its status changes and its cohorts.'),
    list, head, chart, detail, changes, cohorts);

  async function download(c, cohort) {
    const path = ctx.api.ws('/api/scheduling/v1', `/campaigns/${encodeURIComponent(c)}/cohorts/${encodeURIComponent(cohort.cohort_id)}/files?file_type=rejected_records`);
    try {
      const blob = await ctx.api.blob(path, 'text/csv');
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: `${cohort.cohort_id}-rejected_records.csv` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      ctx.setStatus(`The rejected records could not be read: ${e.message}`, 'error');
    }
  }

  /** The width to draw the chart for: the figure's, to 10 px. */
  function chartWidth() {
    const w = Math.floor((chart.clientWidth || el.clientWidth || 1000) / 10) * 10;
    return Math.max(280, Math.min(2400, w));
  }

  async function refresh() {
    const page = await ctx.api.get(ctx.api.ws('/api/scheduling/v1', '/campaigns?limit=100&sort_by=created_at&sort_order=desc'));
    const items = page.items;
    if (!items.some((c) => c.campaign_id === state.selected)) state.selected = items[0]?.campaign_id || null;
    update(list, [items, state.selected], () => table(`Campaigns (${num(page.total)})`,
      ['Name', 'Status', 'Id', 'Created', ''],
      items.map((c) => ({
        attrs: { class: c.campaign_id === state.selected ? 'selected' : null, dataset: { campaign: c.campaign_id } },
        cells: [
          c.name, h('span', { class: 'campaign-status' }, badge(c.status)), h('code', {}, c.campaign_id), when(c.created_at),
          h('button', {
            type: 'button',
            class: 'quiet',
            dataset: { focus: `open-${c.campaign_id}` },
            'aria-label': `Open campaign ${c.name}`,
            'aria-pressed': String(c.campaign_id === state.selected),
            onclick: () => { state.selected = c.campaign_id; ctx.refreshSoon(); },
          }, 'Open'),
        ],
      })), { empty: 'no campaign in this workspace yet' }));
    if (!state.selected) {
      ctx.runTargets = [];
      fill(head); fill(detail); fill(chart); fill(changes); fill(cohorts);
      return;
    }
    const id = encodeURIComponent(state.selected);
    const [c, activity, cohortPage] = await Promise.all([
      ctx.api.get(ctx.api.ws('/api/scheduling/v1', `/campaigns/${id}`)),
      ctx.api.get(ctx.api.ws('/sim/v1', `/campaigns/${id}/activity`)),
      ctx.api.get(ctx.api.ws('/api/scheduling/v1', `/campaigns/${id}/cohorts?limit=100`)),
    ]);
    // Times the clock may run to: this campaign's start and end.
    ctx.runTargets = [
      { at: c.start_timestamp, label: `start of ${c.name}` },
      { at: c.end_timestamp, label: `end of ${c.name}` },
    ];
    const s = c.statistics;
    update(head, [c, activity.buckets], () => progress(c, activity));
    const width = chartWidth();
    if (update(chart, [activity, width], () => [h('p', {}, 'Drawing the chart…')])) {
      try {
        const svg = svgNode(await ctx.api.text(ctx.api.ws('/sim/v1', `/campaigns/${id}/chart?width=${width}`), 'image/svg+xml'));
        fill(chart, svg || h('p', {}, 'The chart could not be read.'),
          h('figcaption', {},
            'Dials by when they were dialled, by outcome (the colours of the chips above; in progress: not ended yet); grey: calling windows; dashed: status changes, numbered as in the table below.'));
      } catch (e) {
        fill(chart, h('p', {}, `No chart: ${e instanceof ApiError ? e.message : e}`));
      }
    }
    update(detail, c, () => [
      facts([
        ['Id', c.campaign_id],
        ['Window', `${when(c.start_timestamp)} to ${when(c.end_timestamp)}`],
        ['Calling hours', `${c.allowed_schedule.allowed_days.join(', ')} ${c.allowed_schedule.allowed_start_time}–${c.allowed_schedule.allowed_end_time} ${c.allowed_schedule.timezone}`],
        ['Rate', `${count(c.app_config.attempts_per_second, 'dial')} a second`],
        ['Users', `${num(s.users_total)} in all: ${num(s.users_done)} done, ${num(s.users_in_progress)} on a call, ${num(s.users_pending)} pending, ${num(s.users_unfinished)} unfinished; ${num(s.users_excluded)} excluded`],
        ['Dials', `${num(s.attempts_total)} (${num(s.retries_due)} retries due)`],
      ]),
      table('Dials by outcome', OUTCOMES.map(outcome), [OUTCOMES.map((o) => num(s.attempts_by_outcome[o]))], { class: 'counts' }),
    ]);
    // Numbered as the chart's marks, each row the target of its mark's link.
    update(changes, activity.status_changes, () => table('Status changes', ['#', 'At', 'Status', 'Why', 'By'],
      activity.status_changes.map((x, i) => ({
        attrs: { id: `t${i + 1}` },
        cells: [String(i + 1), when(x.at), badge(x.status), x.cause.replace(/_/g, ' '), x.by || 'the clock'],
      }))));
    update(cohorts, cohortPage.items, () => table('Cohorts', ['Name', 'Kind', 'Status', 'Total', 'Valid', 'Rejected', 'Rejected records'],
      cohortPage.items.map((k) => [
        k.name, k.cohort_category, badge(k.status),
        num(k.result?.total_records), num(k.result?.valid_records), num(k.result?.rejected_records),
        k.result?.rejected_records > 0
          ? h('button', { type: 'button', class: 'quiet', dataset: { focus: `rejected-${k.cohort_id}` }, onclick: () => download(state.selected, k) }, 'Download CSV')
          : (k.failure_reason || '—'),
      ]), { empty: 'no cohort uploaded yet' }));
  }

  return { refresh };
}
