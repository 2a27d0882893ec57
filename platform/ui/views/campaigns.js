// Campaigns: each campaign's status; the one opened with its counts (dials by outcome, users
// done and unfinished, the attempt budget against the capacity), its chart of dials over
// time (the scenario report's chart, drawn by the platform), its status changes, and its
// cohorts with their rejected records.

import { ApiError } from '../api.js';
import { h, fill, table, facts, when, badge, update, num, count } from '../dom.js';

const OUTCOMES = ['connected', 'short_duration', 'busy', 'no_answer', 'failed', 'provider_error', 'internal_error'];

/** Parses the platform's SVG chart into a node of this page (never as HTML). */
function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  if (doc.querySelector('parsererror') || doc.documentElement.nodeName !== 'svg') return null;
  return document.importNode(doc.documentElement, true);
}

/** The outcomes the chart draws, each with its colour as the chart gives it. */
function legend(svg) {
  const items = svg ? [...svg.querySelectorAll('path.series')] : [];
  return h('ul', { class: 'legend', 'aria-label': 'Outcomes' }, items.map((p) => {
    const name = [...p.classList].find((c) => c.startsWith('series-')).slice('series-'.length);
    const swatch = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    swatch.setAttribute('viewBox', '0 0 10 10');
    swatch.setAttribute('aria-hidden', 'true');
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    rect.setAttribute('width', '10');
    rect.setAttribute('height', '10');
    rect.setAttribute('fill', p.getAttribute('fill'));
    swatch.append(rect);
    return h('li', {}, swatch, name.replace(/_/g, ' '));
  }));
}

export function create(ctx, el) {
  const state = { selected: null };
  const list = h('div', { id: 'campaign-list' });
  const detail = h('div', { id: 'campaign-detail' });
  const chart = h('figure', { id: 'campaign-chart', class: 'chart' });
  const changes = h('div', { id: 'campaign-changes' });
  const cohorts = h('div', { id: 'campaign-cohorts' });
  const title = h('h3', { id: 'campaign-title' });
  fill(el,
    h('h2', {}, 'Campaigns'),
    h('p', { class: 'lead' }, 'How each campaign is dialling. Open one for its chart, its counts, its status changes and its cohorts.'),
    list, title, chart, detail, changes, cohorts);

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
            dataset: { focus: `open-${c.campaign_id}` },
            'aria-label': `Open campaign ${c.name}`,
            'aria-pressed': String(c.campaign_id === state.selected),
            onclick: () => { state.selected = c.campaign_id; ctx.refreshSoon(); },
          }, 'Open'),
        ],
      })), { empty: 'no campaign in this workspace yet' }));
    if (!state.selected) {
      fill(title); fill(detail); fill(chart); fill(changes); fill(cohorts);
      return;
    }
    const id = encodeURIComponent(state.selected);
    const [c, activity, cohortPage] = await Promise.all([
      ctx.api.get(ctx.api.ws('/api/scheduling/v1', `/campaigns/${id}`)),
      ctx.api.get(ctx.api.ws('/sim/v1', `/campaigns/${id}/activity`)),
      ctx.api.get(ctx.api.ws('/api/scheduling/v1', `/campaigns/${id}/cohorts?limit=100`)),
    ]);
    const s = c.statistics;
    update(title, [c.name, c.status], () => [`${c.name} `, badge(c.status)]);
    update(detail, c, () => [
      facts([
        ['Id', c.campaign_id],
        ['Window', `${when(c.start_timestamp)} to ${when(c.end_timestamp)}`],
        ['Calling hours', `${c.allowed_schedule.allowed_days.join(', ')} ${c.allowed_schedule.allowed_start_time}–${c.allowed_schedule.allowed_end_time} ${c.allowed_schedule.timezone}`],
        ['Rate', `${count(c.app_config.attempts_per_second, 'dial')} a second`],
        ['Users', `${num(s.users_total)} in all: ${num(s.users_done)} done, ${num(s.users_unfinished)} unfinished, ${num(s.users_pending)} pending, ${num(s.users_in_progress)} on a call, ${num(s.users_excluded)} excluded`],
        ['Dials', `${num(s.attempts_total)} (${num(s.retries_due)} retries due)`],
        ['Budget against capacity', `${num(s.attempt_budget)} attempts needed, ${num(s.attempt_capacity)} possible`],
        s.capacity_warning && ['Warning', h('span', { class: 'warning' }, s.capacity_warning)],
      ]),
      table('Dials by outcome', OUTCOMES, [OUTCOMES.map((o) => num(s.attempts_by_outcome[o]))], { class: 'counts' }),
    ]);
    if (update(chart, activity, () => [h('p', {}, 'Drawing the chart…')])) {
      try {
        const svg = svgNode(await ctx.api.text(ctx.api.ws('/sim/v1', `/campaigns/${id}/chart`), 'image/svg+xml'));
        fill(chart, svg || h('p', {}, 'The chart could not be read.'),
          h('figcaption', {}, legend(svg),
            'Ended dials by when they were dialled and their outcome; shaded: calling windows; dashed: status changes, numbered as in the table below.'));
      } catch (e) {
        fill(chart, h('p', {}, `No chart: ${e instanceof ApiError ? e.message : e}`));
      }
    }
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
          ? h('button', { type: 'button', dataset: { focus: `rejected-${k.cohort_id}` }, onclick: () => download(state.selected, k) }, 'Download CSV')
          : (k.failure_reason || '—'),
      ]), { empty: 'no cohort uploaded yet' }));
  }

  return { refresh };
}
