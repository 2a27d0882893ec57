// What the contract expected at a violation's `loc`, read from the platform's OpenAPI
// document: the schema of the field the request got wrong, in words. The document is read
// with its 64-bit bounds exact (BigInt beyond 2^53: see api.js's parseExact), and they are
// written as their digits.

import { count } from './dom.js';

/** A value of the document as JSON writes it, a BigInt as its exact digits. */
function literal(v) {
  return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `\u0000${x}` : x))
    .replace(/"\\u0000(-?\d+)"/g, '$1');
}

function resolve(doc, s) {
  let seen = 0;
  while (s && s.$ref && seen++ < 20) {
    const path = s.$ref.replace(/^#\//, '').split('/');
    s = path.reduce((o, k) => (o ? o[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), doc);
  }
  return s;
}

/** The alternatives of a schema (oneOf, anyOf, allOf), or the schema itself. */
function branches(doc, s) {
  s = resolve(doc, s);
  if (!s) return [];
  const alts = [...(s.allOf || []), ...(s.oneOf || []), ...(s.anyOf || [])];
  return alts.length ? [s, ...alts.flatMap((a) => branches(doc, a))] : [s];
}

/** The schema of `key` (a property name or an array index) inside `s`, and whether required. */
function child(doc, s, key) {
  for (const b of branches(doc, s)) {
    if (typeof key === 'number' || /^\d+$/.test(String(key))) {
      if (b.items) return { schema: resolve(doc, b.items), required: true };
    } else if (b.properties && key in b.properties) {
      const required = branches(doc, s).some((x) => (x.required || []).includes(key));
      return { schema: resolve(doc, b.properties[key]), required };
    } else if (b.additionalProperties && typeof b.additionalProperties === 'object') {
      return { schema: resolve(doc, b.additionalProperties), required: false };
    }
  }
  return null;
}

function operation(doc, id) {
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      if (op && op.operationId === id) return { path, method, op };
    }
  }
  return null;
}

/** The schema's rules in words: type, format, bounds, pattern, values. */
export function describe(doc, schema, required) {
  const parts = [];
  const types = new Set();
  const rules = [];
  for (const b of branches(doc, schema)) {
    const t = b.type;
    if (Array.isArray(t)) t.forEach((x) => types.add(x));
    else if (t) types.add(t);
    if (b.format) rules.push(`format ${b.format}`);
    if (b.enum) rules.push(`one of ${b.enum.map(literal).join(', ')}`);
    if (b.const !== undefined) rules.push(`exactly ${literal(b.const)}`);
    if (b.minimum !== undefined) rules.push(`at least ${b.minimum}`);
    if (b.exclusiveMinimum !== undefined) rules.push(`above ${b.exclusiveMinimum}`);
    if (b.maximum !== undefined) rules.push(`at most ${b.maximum}`);
    if (b.exclusiveMaximum !== undefined) rules.push(`below ${b.exclusiveMaximum}`);
    if (b.minLength !== undefined) rules.push(`at least ${count(b.minLength, 'character')}`);
    if (b.maxLength !== undefined) rules.push(`at most ${count(b.maxLength, 'character')}`);
    if (b.minItems !== undefined) rules.push(`at least ${count(b.minItems, 'item')}`);
    if (b.maxItems !== undefined) rules.push(`at most ${count(b.maxItems, 'item')}`);
    if (b.pattern) rules.push(`matching ${b.pattern}`);
  }
  if (required !== undefined) parts.push(required ? 'required' : 'optional');
  if (types.size) parts.push([...types].join(' or '));
  return [...parts, ...new Set(rules)].join(', ');
}

/**
 * What the contract expected at `loc` of a request to operation `id`: a sentence, or null
 * when the document does not say (an unknown route, a key).
 */
export function expected(doc, id, loc, kind) {
  const found = id && operation(doc, id);
  if (!found || !loc || !loc.length) return null;
  const [where, ...rest] = loc;
  if (where === 'body') {
    const content = found.op.requestBody?.content || {};
    const media = content['application/json'] || content['multipart/form-data'] || Object.values(content)[0];
    let s = resolve(doc, media?.schema);
    let required;
    let parent = s;
    for (const key of rest) {
      parent = s;
      const c = s && child(doc, s, key);
      if (!c) {
        if (kind === 'unknown_field') {
          const known = branches(doc, parent).flatMap((b) => Object.keys(b.properties || {}));
          return known.length ? `no such field here; the fields are ${[...new Set(known)].join(', ')}` : 'no such field here';
        }
        return null;
      }
      s = c.schema;
      required = c.required;
    }
    return s ? describe(doc, s, rest.length ? required : true) || null : null;
  }
  if (where === 'query' || where === 'path' || where === 'header') {
    const params = [...(doc.paths[found.path].parameters || []), ...(found.op.parameters || [])]
      .map((p) => resolve(doc, p));
    const p = params.find((x) => x.in === where && x.name === rest[0]);
    if (!p) return kind === 'unknown_field' ? `no such ${where} parameter` : null;
    return describe(doc, resolve(doc, p.schema), !!p.required) || null;
  }
  return null;
}
