// Small helpers to build the page from data. Text goes in as text (never as HTML), so what
// a client sent (paths, bodies) cannot become markup.

/** An element: h('td', {class: 'n'}, 'text', child, [more]). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/**
 * A table: caption, column heads, rows (arrays of cells: text, a node, or
 * {text, class}). `opts.empty` is the text of a table without rows.
 */
export function table(caption, heads, rows, opts = {}) {
  const head = h('tr', {}, heads.map((t) => h('th', { scope: 'col' }, t)));
  const body = rows.length
    ? rows.map((r) => h('tr', r.attrs || {}, (r.cells || r).map((c, i) => cell(c, heads[i]))))
    : [h('tr', {}, h('td', { colspan: heads.length, class: 'empty' }, opts.empty || 'none yet'))];
  return h('div', { class: 'scroll' },
    h('table', { class: opts.class || null },
      h('caption', {}, caption), h('thead', {}, head), h('tbody', {}, body)));
}

/** A cell; `label` (its column's head) titles it where a narrow screen stacks the row. */
function cell(c, label) {
  if (c && typeof c === 'object' && !(c instanceof Node) && 'text' in c) {
    return h('td', { class: c.class || null, 'data-label': label || null }, c.text);
  }
  return h('td', { 'data-label': label || null }, c);
}

/** Label and value pairs as a definition list. */
export function facts(pairs) {
  return h('dl', { class: 'facts' },
    pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]));
}

/** An instant as `2026-03-02 09:10:00Z` (the platform's time is UTC). */
export function when(t) {
  if (!t) return '—';
  return String(t).replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** A status as a coloured badge. */
export function badge(text, kind) {
  return h('span', { class: `badge ${kind || text}` }, text);
}

/** A number with thousands separated. */
export function num(n) {
  return n === null || n === undefined ? '—' : Number(n).toLocaleString('en');
}

/** `1 dial`, `2 dials` (`many` when the plural is not `one` + s). */
export function count(n, one, many) {
  return `${num(n)} ${Number(n) === 1 ? one : many || `${one}s`}`;
}

/** Pretty JSON. */
export function json(v) {
  return h('pre', { class: 'json' }, JSON.stringify(v, null, 2));
}

/**
 * Rebuilds `el` with `build()` only when `data` differs from the last time, so that a view
 * refreshed every second does not move what a reader is on; the control that had the focus
 * (named by its `data-focus`) gets it back.
 */
const signatures = new WeakMap();
export function update(el, data, build) {
  const sig = JSON.stringify(data);
  if (signatures.get(el) === sig) return false;
  signatures.set(el, sig);
  const active = document.activeElement;
  const name = active && el.contains(active) ? active.dataset.focus : null;
  fill(el, build());
  if (name) el.querySelector(`[data-focus="${CSS.escape(name)}"]`)?.focus();
  return true;
}
