// Reads of the platform's JSON routes, the same any client uses, with the tab's key in the
// X-API-Key header (never in a URL). Each read says it is the page's (x-harness-observer), so
// the platform neither journals it nor lets a fault rule touch it: watching a client does not
// change what the client sees.

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
    const r = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
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

/** The platform document, read once (no key needed). */
let openapi = null;
export async function openapiDocument() {
  if (!openapi) {
    openapi = fetch('/openapi.json', { headers: { 'x-harness-observer': 'ui' } })
      .then((r) => r.json())
      .catch((e) => { openapi = null; throw e; });
  }
  return openapi;
}
