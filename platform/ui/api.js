// Reads of the platform's JSON routes, the same any client uses, with the tab's key in the
// X-API-Key header (never in a URL). Each read says it is the page's (x-harness-observer), so
// the platform neither journals it nor lets a fault rule touch it: watching a client does not
// change what the client sees.

/** No answer at all: the platform is gone (stopped, restarted elsewhere, the network). */
export class Unreachable extends Error {
  constructor(cause) {
    super(`no answer (${cause?.message || cause})`);
    this.unreachable = true;
  }
}

/** A failed read: the status and the platform's error body. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && (body.error?.message
      || (Array.isArray(body.detail) && body.detail.map((d) => `${(d.loc || []).join('.')}: ${d.msg}`).join('; ')));
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code || null;
  }
}

export class Api {
  /** `key` opens `org`/`workspace`. */
  constructor(key, org, workspace) {
    this.key = key;
    this.org = org;
    this.workspace = workspace;
  }

  /** `/{prefix}/orgs/{org}/workspaces/{workspace}{rest}` with the ids encoded. */
  ws(prefix, rest = '') {
    const e = encodeURIComponent;
    return `${prefix}/orgs/${e(this.org)}/workspaces/${e(this.workspace)}${rest}`;
  }

  async request(method, path, body, accept = 'application/json') {
    const headers = { 'X-API-Key': this.key, 'x-harness-observer': 'ui', Accept: accept };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let r;
    try {
      r = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
      });
    } catch (e) {
      // fetch fails only when no answer came (a refused connection, a reset, no network).
      throw new Unreachable(e);
    }
    if (!r.ok) {
      let err = null;
      try { err = await r.json(); } catch { /* not JSON */ }
      throw new ApiError(r.status, err);
    }
    return r;
  }

  async get(path) {
    return (await this.request('GET', path)).json();
  }

  async post(path, body) {
    return (await this.request('POST', path, body)).json();
  }

  async text(path, accept) {
    return (await this.request('GET', path, undefined, accept)).text();
  }

  async blob(path, accept) {
    return (await this.request('GET', path, undefined, accept)).blob();
  }

  /**
   * The last `limit` items of a list that pages oldest first (`offset`, `limit`, `total`),
   * newest first: the total of the previous read says where the end is, and a second read
   * follows when the list grew past it.
   */
  async latest(path, limit, state) {
    const sep = path.includes('?') ? '&' : '?';
    const at = (offset) => this.get(`${path}${sep}offset=${offset}&limit=${limit}`);
    let page = await at(Math.max(0, (state.total || 0) - limit));
    if (page.total > page.offset + page.items.length || page.total < page.offset) {
      page = await at(Math.max(0, page.total - limit));
    }
    state.total = page.total;
    return { items: page.items.slice().reverse(), total: page.total };
  }
}

/** The platform document, read once (no key needed), its 64-bit bounds exact. */
let openapi = null;
export async function openapiDocument() {
  if (!openapi) {
    openapi = fetch('/openapi.json', { headers: { 'x-harness-observer': 'ui' } })
      .then((r) => r.text())
      .then(parseExact)
      .catch((e) => { openapi = null; throw e; });
  }
  return openapi;
}

/**
 * JSON as JSON.parse reads it, except that an integer beyond 2^53 (a 64-bit bound, such as
 * 9223372036854775807) comes back as a BigInt with its exact digits, not as the nearest
 * double (9223372036854776000).
 */
export function parseExact(text) {
  let i = 0;
  const fail = (what) => { throw new SyntaxError(`JSON: expected ${what} at ${i}`); };
  const space = () => {
    for (let c = text.charCodeAt(i); c === 32 || c === 10 || c === 13 || c === 9; c = text.charCodeAt(++i));
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  function string() {
    const start = i++;
    for (; i < text.length; i++) {
      const c = text[i];
      if (c === '\\') i++;
      else if (c === '"') return JSON.parse(text.slice(start, ++i));
    }
    return fail('the end of a string');
  }
  function number() {
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail('a value');
    i = NUMBER.lastIndex;
    const n = Number(m[0]);
    return m[1] || m[2] || Number.isSafeInteger(n) ? n : BigInt(m[0]);
  }
  function value() {
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      const o = {};
      space();
      if (text[i] === '}') { i++; return o; }
      for (;;) {
        space();
        if (text[i] !== '"') fail('a key');
        const k = string();
        space();
        if (text[i++] !== ':') fail("':'");
        // As JSON.parse does: an own property, whatever the key ('__proto__' too).
        Object.defineProperty(o, k, { value: value(), writable: true, enumerable: true, configurable: true });
        space();
        const d = text[i++];
        if (d === '}') return o;
        if (d !== ',') fail("',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      space();
      if (text[i] === ']') { i++; return a; }
      for (;;) {
        a.push(value());
        space();
        const d = text[i++];
        if (d === ']') return a;
        if (d !== ',') fail("',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, i)) { i += word.length; return v; }
    }
    return number();
  }
  const v = value();
  space();
  if (i !== text.length) fail('the end');
  return v;
}
