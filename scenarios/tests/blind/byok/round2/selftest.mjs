#!/usr/bin/env node
// Self-test of service.mjs and its defects, with node built-ins only.
//
// Every run starts the service as a child process (baseline, or one --defect with its
// service_args), runs the same probes against it with a plain HTTP client, and compares the
// set of failing probes with what the defect is expected to break:
//   - the baseline runs (default, --expires-in 3, --static-key) must pass every probe;
//   - each defect run must fail exactly its expected probes and pass every other one
//     (probes that need a setting the run lacks are skipped).
//
//   node selftest.mjs [--only NAME,...] [--jobs N] [--verbose]

import { spawn, execFileSync } from 'node:child_process';
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVICE = path.join(HERE, 'service.mjs');
const DEFECTS = JSON.parse(fs.readFileSync(path.join(HERE, 'defects.json'), 'utf8'));

const CID = 'blind-client';
const SEC = 'Bl1nd-S3cret-q7Vx9Kp2Lm';
const STATIC = 'sk_blind_4Hq8Zr2Nw6Tx1Pv9';
const PARTNER = 'acme';

// ------------------------------------------------------------------ what each defect breaks

const EXPECT = {
  auth_secret_prefix_accepted: ['auth.wrong_secret_short'],
  auth_secret_extension_accepted: ['auth.wrong_secret_long'],
  auth_secret_case_insensitive: ['auth.wrong_secret_case'],
  auth_client_id_ignored: ['auth.unknown_client', 'auth.client_id_case'],
  auth_client_id_case_insensitive: ['auth.client_id_case'],
  auth_no_authorization_500: ['auth.no_authorization'],
  auth_basic_no_colon_500: ['auth.malformed_basic'],
  auth_bearer_refresh: ['auth.bearer_on_auth'],
  auth_grant_type_ignored: ['auth.wrong_grant_type', 'auth.missing_grant_type'],
  auth_grant_type_default: ['auth.missing_grant_type'],
  auth_grant_type_substring: ['auth.wrong_grant_type'],
  auth_json_body_accepted: ['auth.json_body'],
  token_opaque: ['auth.jwt'],
  token_type_jwt: ['auth.token_type'],
  expires_in_string: ['auth.expires_in'],
  expires_in_hardcoded: ['auth.jwt_exp'],
  jwt_exp_milliseconds: ['auth.jwt_exp'],
  jwt_alg_none_accepted: ['decrypt.alg_none', 'rotate.tampered_token'],
  jwt_sig_prefix_compare: ['decrypt.sig_truncated'],
  jwt_sig_decoded_compare: ['decrypt.sig_noncanonical'],
  jwt_exp_leeway: ['token.expired', 'rotate.expired'],
  token_expires_early: ['token.reuse'],
  decrypt_basic_accepted: ['decrypt.basic_credentials'],
  rotate_no_auth: ['rotate.no_token', 'rotate.garbage_token', 'rotate.tampered_token'],
  rotate_ignores_exp: ['rotate.expired'],
  static_key_prefix_compare: ['decrypt.static_key_variants'],
  garbage_token_500: ['decrypt.garbage_token', 'rotate.garbage_token', 'decrypt.static_key_disabled'],
  jwt_bad_header_500: ['decrypt.bad_jwt'],
  token_in_query_accepted: ['decrypt.token_in_query'],
  alias_fallback: ['env.other_alias'],
  tag_length_from_key: ['env.truncated'],
  tag_last_byte_ignored: ['env.flipped_last'],
  tag_not_verified: ['env.flipped_nonce', 'env.flipped_middle', 'env.flipped_tag_first', 'env.flipped_last', 'env.other_alias'],
  header_unauthenticated: ['env.flipped_first'],
  nonce_reuse: ['envelope.nonce_unique'],
  plaintext_urlsafe: ['decrypt.plaintext'],
  plaintext_hex: ['decrypt.plaintext'],
  decrypt_cache_by_alias: ['decrypt.distinct_keys'],
  base64_lenient: ['env.bad_base64'],
  prefix_case_insensitive: ['env.prefix_case'],
  prefix_any_version: ['env.v2_prefix'],
  prefix_optional: ['env.missing_prefix'],
  unknown_alias_500: ['env.unknown_alias'],
  decrypt_failed_500: ['env.flipped_nonce', 'env.flipped_middle', 'env.flipped_tag_first', 'env.flipped_last', 'env.other_alias'],
  short_envelope_500: ['env.short'],
  decrypt_kdf_per_call: ['load.p50'],
  rotate_idempotent_window: ['rotate.fresh'],
  rotate_deterministic_dek: ['rotate.cross_process_fresh'],
  rotate_forgets_old: ['rotate.old_keys'],
  rotate_answers_default_alias: ['rotate.alias'],
  rotate_wraps_default_alias: ['rotate.roundtrip'],
  rotate_plaintext_16: ['rotate.plaintext'],
  rotate_no_body_500: ['rotate.no_body'],
  rotate_unknown_alias_creates: ['rotate.unknown_alias'],
  missing_data_500: ['decrypt.missing_fields'],
  alias_number_500: ['decrypt.wrong_types'],
  body_null_500: ['decrypt.body_not_object'],
  invalid_json_500: ['decrypt.invalid_json', 'rotate.bad_body'],
  missing_field_404: ['decrypt.missing_fields_code'],
  body_limit_absent: ['decrypt.oversized', 'decrypt.oversized_chunked'],
  body_limit_content_length_only: ['decrypt.oversized_chunked'],
  decrypt_content_type_ignored: ['decrypt.content_type'],
  decrypt_content_type_prefix: ['decrypt.content_type'],
  timestamp_unparseable_500: ['headers.bad_timestamp'],
  get_404: ['methods.get', 'methods.other'],
  put_treated_as_post: ['methods.other'],
  allow_header_missing: ['methods.allow'],
  trace_missing_on_errors: ['headers.trace_echo'],
  trace_regenerated: ['headers.trace_echo'],
  trace_required: ['headers.no_trace_id'],
  trace_lowercased: ['headers.trace_echo'],
  trace_missing_on_405: ['headers.trace_echo'],
  no_request_duration: ['headers.request_duration'],
  timestamp_future_accepted: ['headers.skew_future'],
  error_text_plain: ['errors.json', 'errors.shape'],
  error_json_wrong_ctype: ['errors.json'],
  error_flat_shape: ['errors.shape'],
  error_code_number: ['errors.shape'],
  decrypt_ok_text_plain: ['decrypt.shape'],
  auth_error_echoes_credentials: ['secrets.no_secret'],
  auth_debug_header_basic: ['secrets.no_secret'],
  token_echo_in_401: ['secrets.no_secret'],
  token_in_cookie: ['secrets.no_secret'],
  kcv_header_prefix: ['secrets.no_secret'],
  jwt_claims_include_credentials: ['secrets.no_secret'],
};

// ------------------------------------------------------------------ helpers

const b64 = (s) => Buffer.from(s).toString('base64');
const b64u = (s) => Buffer.from(s).toString('base64url');
const uuid = () => crypto.randomUUID();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const is4xx = (s) => s >= 400 && s < 500;
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function strictB64(s) {
  if (typeof s !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const body = s.replace(/=+$/, '');
  if (body.length % 4 === 1) return null;
  const buf = Buffer.from(body, 'base64');
  if (buf.toString('base64').replace(/=+$/, '') !== body) return null;
  return buf;
}
// lenient decoding for comparing keys whatever their encoding (format is judged elsewhere)
function decodeAny(s) {
  if (typeof s !== 'string') return null;
  if (/^[0-9a-f]{64}$/i.test(s)) return Buffer.from(s, 'hex');
  return Buffer.from(s, 'base64');
}
function mediaType(v) { return typeof v === 'string' ? v.split(';')[0].trim().toLowerCase() : ''; }
function parseJson(t) { try { return JSON.parse(t); } catch { return undefined; } }

function rawRequest(port, { method, path: p, headers, body, chunked }) {
  return new Promise((resolve) => {
    const h = { ...headers };
    const buf = body == null ? null : (Buffer.isBuffer(body) ? body : Buffer.from(body));
    if (buf && !chunked) h['content-length'] = buf.length;
    else if (!buf && method !== 'GET' && method !== 'HEAD') h['content-length'] = 0;
    const t0 = performance.now();
    const done = (r) => resolve({ ...r, ms: performance.now() - t0 });
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers: h, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (e) => done({ status: 0, error: e.message, headers: {}, text: '' }));
    });
    req.on('error', (e) => done({ status: 0, error: e.message, headers: {}, text: '' }));
    req.setTimeout(20000, () => req.destroy(new Error('timeout')));
    if (buf && chunked) {
      for (let i = 0; i < buf.length; i += 65536) req.write(buf.subarray(i, i + 65536));
      req.end();
    } else {
      req.end(buf ?? undefined);
    }
  });
}

function startService(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [SERVICE, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`service did not start: ${err}`)); }, 15000);
    proc.stdout.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        const line = out.slice(0, nl);
        const m = /^\{"port": (\d+)\}$/.exec(line);
        if (!m) { proc.kill('SIGKILL'); reject(new Error(`bad first line: ${line}`)); return; }
        resolve({ port: Number(m[1]), proc });
      }
    });
    proc.stderr.on('data', (c) => { err += c; });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`service exited ${code}: ${err}`)); });
  });
}
function stopService(s) {
  return new Promise((resolve) => {
    if (s.proc.exitCode !== null) { resolve(); return; }
    s.proc.removeAllListeners('exit');
    s.proc.on('exit', () => resolve());
    s.proc.kill('SIGTERM');
    setTimeout(() => { try { s.proc.kill('SIGKILL'); } catch { /* gone */ } resolve(); }, 3000);
  });
}

function wrap(alias) {
  const out = execFileSync(process.execPath, [SERVICE, 'wrap', '--alias', alias], { encoding: 'utf8' });
  const m = /^\{"encrypted_key": "(byok:v1:[^"]+)", "plaintext_key": "([^"]+)"\}\n$/.exec(out);
  if (!m) throw new Error(`wrap printed ${out}`);
  return { ek: m[1], pt: m[2], bytes: Buffer.from(m[2], 'base64') };
}

// ------------------------------------------------------------------ the client of one run

class Client {
  constructor(port, opts) {
    this.port = port;
    this.opts = opts;
    this.log = [];
    this.tokens = new Set();
    this.keys = [];
    this.envelopes = [];
  }

  async call(endpoint, o = {}) {
    const method = o.method ?? 'POST';
    const h = {
      'x-request-id': uuid(),
      'x-request-timestamp': o.timestamp ?? new Date().toISOString(),
      'x-trace-id': o.trace ?? uuid(),
    };
    for (const k of o.omit ?? []) delete h[k];
    if (o.auth !== undefined) h.authorization = o.auth;
    if (o.ctype !== undefined) h['content-type'] = o.ctype;
    const p = `/${PARTNER}/byok/v1/${endpoint}${o.query ? `?${o.query}` : ''}`;
    const r = await rawRequest(this.port, { method, path: p, headers: h, body: o.body ?? null, chunked: o.chunked });
    r.json = parseJson(r.text);
    r.req = { endpoint, method, headers: h };
    this.log.push(r);
    return r;
  }

  basic(id = CID, secret = SEC) { return `Basic ${b64(`${id}:${secret}`)}`; }

  async auth(o = {}) {
    const r = await this.call('auth', {
      auth: o.auth ?? this.basic(), ctype: o.ctype ?? 'application/x-www-form-urlencoded',
      body: o.body ?? 'grant_type=client_credentials', ...o.extra,
    });
    const t = r.json?.data?.access_token;
    if (r.status === 200 && typeof t === 'string') this.tokens.add(t);
    return r;
  }

  async decrypt(token, alias, ek, o = {}) {
    return this.call('decrypt-key', {
      auth: token === null ? undefined : `Bearer ${token}`, ctype: 'application/json',
      body: JSON.stringify({ data: { key_alias: alias, encrypted_key: ek } }), ...o,
    });
  }

  async rotate(token, alias, o = {}) {
    const r = await this.call('rotate-key', {
      auth: token === null ? undefined : `Bearer ${token}`,
      ctype: alias === undefined ? undefined : 'application/json',
      body: alias === undefined ? null : JSON.stringify({ data: { key_alias: alias } }), ...o,
    });
    const d = r.json?.data;
    if (r.status === 200 && isObj(d)) {
      if (typeof d.plaintext_dek === 'string') this.keys.push(decodeAny(d.plaintext_dek));
      if (typeof d.encrypted_dek === 'string') this.envelopes.push({ alias: d.key_alias, ek: d.encrypted_dek });
    }
    return r;
  }
}

function jwtParts(t) {
  if (typeof t !== 'string') return null;
  const p = t.split('.');
  if (p.length !== 3 || !p.every((x, i) => (i === 2 ? /^[A-Za-z0-9_-]*$/ : /^[A-Za-z0-9_-]+$/).test(x))) return null;
  const header = parseJson(Buffer.from(p[0], 'base64url').toString('utf8'));
  const payload = parseJson(Buffer.from(p[1], 'base64url').toString('utf8'));
  if (!isObj(header) || !isObj(payload)) return null;
  return { h: p[0], p: p[1], s: p[2], header, payload };
}

function envBytes(ek) { return Buffer.from(ek.slice('byok:v1:'.length), 'base64'); }
function envFrom(buf, prefix = 'byok:v1:') { return prefix + buf.toString('base64'); }
function flip(ek, pos) {
  const b = Buffer.from(envBytes(ek));
  const i = pos < 0 ? b.length + pos : pos;
  b[i] ^= 0x01;
  return envFrom(b);
}

// ------------------------------------------------------------------ probes

const FAIL = (msg) => msg; // a string is a failure
const SKIP = (reason) => ({ skip: reason });
const brief = (r) => `${r.status}${r.error ? ` (${r.error})` : ''} ${r.text.slice(0, 120)}`;

async function expectAll(cases, fn, ok) {
  const bad = [];
  for (const c of cases) {
    const r = await fn(c);
    if (!ok(r)) bad.push(`${JSON.stringify(c).slice(0, 60)} -> ${brief(r)}`);
  }
  return bad.length ? FAIL(bad.join('; ')) : true;
}
const st401 = (r) => r.status === 401;
const st4xx = (r) => is4xx(r.status);
const st4xxOrClosed = (r) => is4xx(r.status) || r.status === 0;

function swapCase(s) { return [...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join(''); }

const PROBES = [];
const probe = (id, severity, group, fn) => PROBES.push({ id, severity, group, fn });

// ---- /auth
probe('auth.status', 'error', 'fast', async (c) => {
  const r = await c.auth();
  c.authAnswer = r;
  return r.status === 200 || FAIL(brief(r));
});
probe('auth.shape', 'error', 'fast', async (c) => {
  const r = c.authAnswer;
  if (r.status !== 200) return SKIP('no 200 from /auth');
  if (mediaType(r.headers['content-type']) !== 'application/json') return FAIL(`content-type ${r.headers['content-type']}`);
  const d = r.json?.data;
  if (!isObj(d) || typeof d.access_token !== 'string' || typeof d.token_type !== 'string' || d.expires_in === undefined) return FAIL(r.text.slice(0, 200));
  return true;
});
probe('auth.token_type', 'error', 'fast', async (c) => {
  const d = c.authAnswer.json?.data;
  if (!isObj(d)) return SKIP('no data');
  return (typeof d.token_type === 'string' && d.token_type.toLowerCase() === 'bearer') || FAIL(`token_type ${JSON.stringify(d.token_type)}`);
});
probe('auth.expires_in', 'error', 'fast', async (c) => {
  const d = c.authAnswer.json?.data;
  if (!isObj(d)) return SKIP('no data');
  return (Number.isInteger(d.expires_in) && d.expires_in > 0) || FAIL(`expires_in ${JSON.stringify(d.expires_in)}`);
});
probe('auth.jwt', 'error', 'fast', async (c) => {
  const t = c.authAnswer.json?.data?.access_token;
  if (typeof t !== 'string') return SKIP('no token');
  return jwtParts(t) !== null || FAIL('access_token is not a JWT (header.claims.signature, base64url JSON)');
});
probe('auth.jwt_alg', 'error', 'fast', async (c) => {
  const j = jwtParts(c.authAnswer.json?.data?.access_token);
  if (!j) return SKIP('not a JWT');
  return (typeof j.header.alg === 'string' && j.header.alg.toLowerCase() !== 'none') || FAIL(`alg ${j.header.alg}`);
});
probe('auth.jwt_exp', 'error', 'fast', async (c) => {
  const d = c.authAnswer.json?.data;
  const j = jwtParts(d?.access_token);
  if (!j) return SKIP('not a JWT');
  if (!Number.isInteger(d.expires_in)) return SKIP('expires_in is not an integer');
  const { exp, iat } = j.payload;
  if (typeof exp !== 'number') return FAIL('no exp');
  if (typeof iat === 'number' && Math.abs(exp - iat - d.expires_in) > 5) return FAIL(`exp - iat = ${exp - iat}, expires_in ${d.expires_in}`);
  if (Math.abs(exp - (Date.now() / 1000 + d.expires_in)) > 120) return FAIL(`exp ${exp} is not now + expires_in`);
  return true;
});
probe('auth.form_charset', 'error', 'fast', async (c) => {
  const r = await c.auth({ ctype: 'application/x-www-form-urlencoded; charset=UTF-8' });
  return r.status === 200 || FAIL(brief(r));
});
probe('auth.wrong_secret_long', 'error', 'fast', (c) => expectAll([`${SEC}x`, `${SEC}0`, SEC + SEC],
  (s) => c.auth({ auth: c.basic(CID, s) }), st401));
probe('auth.wrong_secret_short', 'error', 'fast', (c) => expectAll([SEC.slice(0, -1), SEC.slice(0, 8), SEC[0]],
  (s) => c.auth({ auth: c.basic(CID, s) }), st401));
probe('auth.wrong_secret_case', 'error', 'fast', (c) => expectAll([swapCase(SEC), SEC.toLowerCase()],
  (s) => c.auth({ auth: c.basic(CID, s) }), st401));
probe('auth.unknown_client', 'error', 'fast', (c) => expectAll(['other-client', `${CID}2`, ''],
  (id) => c.auth({ auth: c.basic(id, SEC) }), st401));
probe('auth.client_id_case', 'error', 'fast', (c) => expectAll(['BLIND-CLIENT', 'Blind-Client'],
  (id) => c.auth({ auth: c.basic(id, SEC) }), st401));
probe('auth.no_authorization', 'error', 'fast', async (c) => {
  const r = await c.call('auth', { ctype: 'application/x-www-form-urlencoded', body: 'grant_type=client_credentials' });
  return r.status === 401 || FAIL(brief(r));
});
probe('auth.malformed_basic', 'error', 'fast', (c) => expectAll(
  ['Basic !!!!', `Basic ${b64('no-colon-here')}`, 'Basic', `Basic ${b64(`${CID}:${SEC}`).slice(0, -3)}*`, 'Basic ===='],
  (a) => c.auth({ auth: a }), (r) => r.status === 400 || r.status === 401));
probe('auth.bearer_on_auth', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const cases = [c.token, ...(c.opts.staticKey ? [STATIC] : [])];
  return expectAll(cases, (t) => c.auth({ auth: `Bearer ${t}` }), st401);
});
probe('auth.wrong_grant_type', 'error', 'fast', (c) => expectAll(
  ['grant_type=password', 'grant_type=client_credentials_v2', 'grant_type=CLIENT_CREDENTIALS',
    'grant_type=authorization_code&code=client_credentials', 'grant_type=client_credentials&grant_type=password'],
  (b) => c.auth({ body: b }), (r) => r.status === 400));
probe('auth.missing_grant_type', 'error', 'fast', (c) => expectAll(['', 'scope=byok', 'grant_type='],
  (b) => c.auth({ body: b }), (r) => r.status === 400));
probe('auth.json_body', 'error', 'fast', async (c) => {
  const r = await c.auth({ ctype: 'application/json', body: JSON.stringify({ grant_type: 'client_credentials' }) });
  return r.status === 400 || r.status === 415 || FAIL(brief(r));
});
probe('auth.content_type', 'error', 'fast', (c) => expectAll(['text/plain', 'multipart/form-data; boundary=x', undefined],
  (ct) => c.call('auth', { auth: c.basic(), ctype: ct, body: 'grant_type=client_credentials' }),
  (r) => r.status === 400 || r.status === 415));

// ---- /decrypt-key: the happy path
probe('decrypt.status', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.decrypt(c.token, 'alpha', c.K.ek);
  c.decAnswer = r;
  return r.status === 200 || FAIL(brief(r));
});
probe('decrypt.shape', 'error', 'fast', async (c) => {
  const r = c.decAnswer;
  if (!r || r.status !== 200) return SKIP('no 200');
  if (mediaType(r.headers['content-type']) !== 'application/json') return FAIL(`content-type ${r.headers['content-type']}`);
  return (isObj(r.json?.data) && typeof r.json.data.plaintext_key === 'string') || FAIL(r.text.slice(0, 200));
});
probe('decrypt.plaintext', 'error', 'fast', async (c) => {
  const pk = c.decAnswer?.json?.data?.plaintext_key;
  if (typeof pk !== 'string') return SKIP('no plaintext_key');
  const b = strictB64(pk);
  if (!b) return FAIL('plaintext_key is not standard base64');
  return b.equals(c.K.bytes) || FAIL(`plaintext_key decodes to ${b.length} bytes, not the wrapped key`);
});
probe('decrypt.repeatable', 'error', 'fast', async (c) => {
  const a = c.decAnswer?.json?.data?.plaintext_key;
  if (typeof a !== 'string') return SKIP('no plaintext_key');
  const r = await c.decrypt(c.token, 'alpha', c.K.ek);
  return r.json?.data?.plaintext_key === a || FAIL(`second answer ${brief(r)}`);
});
probe('decrypt.distinct_keys', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  for (const [alias, k] of [['alpha', c.K2], ['beta', c.KB], ['alpha', c.K]]) {
    const r = await c.decrypt(c.token, alias, k.ek);
    const got = decodeAny(r.json?.data?.plaintext_key);
    if (r.status !== 200 || !got || !got.equals(k.bytes)) return FAIL(`${alias}: ${brief(r)} is not the key the envelope holds`);
  }
  return true;
});
probe('decrypt.extra_fields_ok', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.call('decrypt-key', { auth: `Bearer ${c.token}`, ctype: 'application/json',
    body: JSON.stringify({ data: { key_alias: 'alpha', encrypted_key: c.K.ek, note: 'x' }, meta: { a: 1 } }) });
  return r.status === 200 || FAIL(brief(r));
});
probe('decrypt.content_type_charset', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.decrypt(c.token, 'alpha', c.K.ek, { ctype: 'application/json; charset=utf-8' });
  return r.status === 200 || FAIL(brief(r));
});

// ---- /decrypt-key: the bearer check
probe('decrypt.no_token', 'error', 'fast', async (c) => {
  const r = await c.decrypt(null, 'alpha', c.K.ek);
  return r.status === 401 || FAIL(brief(r));
});
probe('decrypt.garbage_token', 'error', 'fast', (c) => expectAll(
  ['garbage', 'abc.def', crypto.randomBytes(24).toString('hex'), 'x'],
  (t) => c.decrypt(t, 'alpha', c.K.ek), st401));
probe('decrypt.bad_jwt', 'error', 'fast', async (c) => {
  const j = jwtParts(c.token);
  const pl = j ? j.p : b64u('{}');
  return expectAll(['a.b.c', `${b64u('not json')}.${pl}.c2ln`, `eyJ.${pl}.x`, `${b64u('[1]')}.${pl}.x`],
    (t) => c.decrypt(t, 'alpha', c.K.ek), st401);
});
probe('decrypt.tampered_sig', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const j = jwtParts(c.token);
  let forged;
  if (j) {
    const mid = Math.floor(j.s.length / 2);
    forged = `${j.h}.${j.p}.${j.s.slice(0, mid)}${j.s[mid] === 'A' ? 'B' : 'A'}${j.s.slice(mid + 1)}`;
  } else {
    const mid = Math.floor(c.token.length / 2);
    forged = c.token.slice(0, mid) + (c.token[mid] === 'A' ? 'B' : 'A') + c.token.slice(mid + 1);
  }
  c.tokens.add(forged);
  const r = await c.decrypt(forged, 'alpha', c.K.ek);
  return r.status === 401 || FAIL(brief(r));
});
probe('decrypt.sig_noncanonical', 'error', 'fast', async (c) => {
  const j = jwtParts(c.token);
  if (!j || j.s.length !== 43) return SKIP('not an HS256 JWT');
  const last = j.s[j.s.length - 1];
  const s2 = j.s.slice(0, -1) + B64URL[B64URL.indexOf(last) ^ 1];
  if (!Buffer.from(s2, 'base64url').equals(Buffer.from(j.s, 'base64url'))) return SKIP('encoding assumption');
  const forged = `${j.h}.${j.p}.${s2}`;
  c.tokens.add(forged);
  const r = await c.decrypt(forged, 'alpha', c.K.ek);
  return r.status === 401 || FAIL(`signature with its last character changed: ${brief(r)}`);
});
probe('decrypt.sig_truncated', 'error', 'fast', async (c) => {
  const j = jwtParts(c.token);
  if (!j) return SKIP('not a JWT');
  const forged = [`${j.h}.${j.p}.`, `${j.h}.${j.p}.${j.s.slice(0, 20)}`, `${j.h}.${j.p}.${j.s.slice(0, 1)}`];
  forged.forEach((t) => c.tokens.add(t));
  return expectAll(forged, (t) => c.decrypt(t, 'alpha', c.K.ek), st401);
});
probe('decrypt.alg_none', 'error', 'fast', async (c) => {
  const j = jwtParts(c.token);
  if (!j) return SKIP('not a JWT');
  const h = b64u(JSON.stringify({ alg: 'none', typ: 'JWT' }));
  const forged = [`${h}.${j.p}.`, `${h}.${j.p}.${j.s}`];
  forged.forEach((t) => c.tokens.add(t));
  return expectAll(forged, (t) => c.decrypt(t, 'alpha', c.K.ek), st401);
});
probe('decrypt.basic_credentials', 'error', 'fast', async (c) => {
  const r = await c.decrypt(null, 'alpha', c.K.ek, { auth: c.basic() });
  return r.status === 401 || FAIL(brief(r));
});
probe('decrypt.token_in_query', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.decrypt(null, 'alpha', c.K.ek, { query: `access_token=${encodeURIComponent(c.token)}` });
  return r.status === 401 || FAIL(brief(r));
});
probe('decrypt.wrong_scheme', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  return expectAll([`Token ${c.token}`, 'Bearer', `Bearer${c.token}`],
    (a) => c.decrypt(null, 'alpha', c.K.ek, { auth: a }), st401);
});
probe('decrypt.static_key', 'error', 'static', async (c) => {
  const r = await c.decrypt(STATIC, 'alpha', c.K.ek);
  const got = decodeAny(r.json?.data?.plaintext_key);
  return (r.status === 200 && got?.equals(c.K.bytes)) || FAIL(brief(r));
});
probe('decrypt.static_key_variants', 'error', 'static', (c) => expectAll(
  [`${STATIC}x`, STATIC.slice(0, -1), STATIC.toUpperCase(), STATIC + STATIC],
  (t) => c.decrypt(t, 'alpha', c.K.ek), st401));
probe('decrypt.static_key_disabled', 'error', 'nostatic', async (c) => {
  const r = await c.decrypt(STATIC, 'alpha', c.K.ek);
  return r.status === 401 || FAIL(brief(r));
});

// ---- /decrypt-key: aliases and the envelope
const envProbe = (id, make) => probe(id, 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const cases = make(c);
  return expectAll(cases, ([alias, ek]) => c.decrypt(c.token, alias, ek), st4xx);
});
envProbe('env.unknown_alias', (c) => [['gamma', c.K.ek], ['ALPHA', c.K.ek], ['alpha ', c.K.ek]]);
envProbe('env.other_alias', (c) => [['beta', c.K.ek], ['alpha', c.KB.ek]]);
envProbe('env.missing_prefix', (c) => [['alpha', c.K.ek.slice(8)], ['alpha', `:${c.K.ek.slice(8)}`]]);
envProbe('env.wrong_prefix', (c) => [['alpha', `kms:v1:${c.K.ek.slice(8)}`], ['alpha', `byok:${c.K.ek.slice(8)}`]]);
envProbe('env.v2_prefix', (c) => [['alpha', `byok:v2:${c.K.ek.slice(8)}`], ['alpha', `byok:v10:${c.K.ek.slice(8)}`]]);
envProbe('env.prefix_case', (c) => [['alpha', `BYOK:V1:${c.K.ek.slice(8)}`], ['alpha', `Byok:v1:${c.K.ek.slice(8)}`]]);
envProbe('env.bad_base64', (c) => {
  const s = c.K.ek.slice(8);
  const mid = Math.floor(s.length / 2);
  const i = s.search(/[+/]/);
  return [
    ['alpha', `byok:v1:${s.slice(0, mid)}!${s.slice(mid)}`],
    ['alpha', `byok:v1:${s.slice(0, mid)} ${s.slice(mid)}`],
    ['alpha', `byok:v1:${s.slice(0, i)}${s[i] === '+' ? '-' : '_'}${s.slice(i + 1)}`],
  ];
});
envProbe('env.flipped_first', (c) => [['alpha', flip(c.K.ek, 0)]]);
envProbe('env.flipped_version', (c) => [['alpha', flip(c.K.ek, 2)], ['alpha', (() => { const b = Buffer.from(envBytes(c.K.ek)); b[1] ^= 0x80; return envFrom(b); })()]]);
envProbe('env.flipped_nonce', (c) => [['alpha', flip(c.K.ek, 8)], ['alpha', flip(c.K.ek, 11)]]);
envProbe('env.flipped_middle', (c) => [['alpha', flip(c.K.ek, Math.floor(envBytes(c.K.ek).length / 2))]]);
envProbe('env.flipped_tag_first', (c) => [['alpha', flip(c.K.ek, -16)]]);
envProbe('env.flipped_last', (c) => [['alpha', flip(c.K.ek, -1)]]);
envProbe('env.truncated', (c) => [['alpha', envFrom(envBytes(c.K.ek).subarray(0, envBytes(c.K.ek).length - 8))]]);
envProbe('env.extended', (c) => [['alpha', envFrom(Buffer.concat([envBytes(c.K.ek), Buffer.alloc(8)]))]]);
envProbe('env.short', (c) => [['alpha', 'byok:v1:'], ['alpha', 'byok:v1:AA=='], ['alpha', 'byok:v1:AAAA'],
  ['alpha', envFrom(envBytes(c.K.ek).subarray(0, 20))]]);

// ---- /decrypt-key: request validation
const bodyProbe = (id, make, ok = st4xx, severity = 'error') => probe(id, severity, 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  return expectAll(make(c), (body) => c.call('decrypt-key', { auth: `Bearer ${c.token}`, ctype: 'application/json', body }), ok);
});
const missingBodies = (c) => [JSON.stringify({}), JSON.stringify({ data: { key_alias: 'alpha' } }),
  JSON.stringify({ data: { encrypted_key: c.K.ek } }), JSON.stringify({ key_alias: 'alpha', encrypted_key: c.K.ek })];
bodyProbe('decrypt.missing_fields', missingBodies);
bodyProbe('decrypt.missing_fields_code', missingBodies, (r) => !is4xx(r.status)
  || (![401, 403, 404, 405, 413].includes(r.status) && (!shaped(r) || r.json.error.code === 'INVALID_REQUEST')), 'warning');
bodyProbe('decrypt.wrong_types', (c) => [
  { data: { key_alias: 123, encrypted_key: c.K.ek } }, { data: { key_alias: 'alpha', encrypted_key: null } },
  { data: 'x' }, { data: [] }, { data: { key_alias: {}, encrypted_key: c.K.ek } },
  { data: { key_alias: true, encrypted_key: c.K.ek } }, { data: { key_alias: 'alpha', encrypted_key: 42 } },
  { data: { key_alias: ['alpha'], encrypted_key: c.K.ek } }].map((b) => JSON.stringify(b)));
bodyProbe('decrypt.bad_alias', (c) => [
  { data: { key_alias: '', encrypted_key: c.K.ek } }, { data: { key_alias: 'al\u0001pha', encrypted_key: c.K.ek } },
  { data: { key_alias: 'a'.repeat(300), encrypted_key: c.K.ek } }].map((b) => JSON.stringify(b)));
bodyProbe('decrypt.body_not_object', () => ['null', '[]', '"alpha"', '42', 'true']);
bodyProbe('decrypt.invalid_json', () => ['{"data":', 'not json', '', '{"data": {"key_alias": "alpha",}}']);
probe('decrypt.content_type', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const body = JSON.stringify({ data: { key_alias: 'alpha', encrypted_key: c.K.ek } });
  return expectAll(['text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream', undefined],
    (ct) => c.call('decrypt-key', { auth: `Bearer ${c.token}`, ctype: ct, body }), st4xx);
});
const bigBody = (c) => {
  const base = JSON.stringify({ data: { key_alias: 'alpha', encrypted_key: c.K.ek }, pad: '' });
  return Buffer.from(base.replace('"pad":""', `"pad":"${'x'.repeat(1024 * 1024)}"`));
};
probe('decrypt.oversized', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.call('decrypt-key', { auth: `Bearer ${c.token}`, ctype: 'application/json', body: bigBody(c) });
  return st4xxOrClosed(r) || FAIL(brief(r));
});
probe('decrypt.oversized_chunked', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.call('decrypt-key', { auth: `Bearer ${c.token}`, ctype: 'application/json', body: bigBody(c), chunked: true });
  return st4xxOrClosed(r) || FAIL(brief(r));
});

// ---- tracing headers
probe('headers.no_trace_id', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.decrypt(c.token, 'alpha', c.K.ek, { omit: ['x-trace-id'] });
  return r.status === 200 || FAIL(brief(r));
});
probe('headers.trace_forms', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  // the exact echo of these is judged by headers.trace_echo
  return expectAll([uuid().toUpperCase(), `Trace-${uuid()}`],
    (t) => c.decrypt(c.token, 'alpha', c.K.ek, { trace: t }), (r) => r.status === 200);
});
probe('headers.skew_past', 'warning', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.decrypt(c.token, 'alpha', c.K.ek, { timestamp: new Date(Date.now() - 3600e3).toISOString() });
  return is4xx(r.status) || FAIL(brief(r));
});
probe('headers.skew_future', 'warning', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.decrypt(c.token, 'alpha', c.K.ek, { timestamp: new Date(Date.now() + 3600e3).toISOString() });
  return is4xx(r.status) || FAIL(brief(r));
});
probe('headers.bad_timestamp', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  return expectAll(['not-a-date', '2026-13-45T99:00:00Z', ''],
    (ts) => c.decrypt(c.token, 'alpha', c.K.ek, { timestamp: ts }), st4xx);
});
probe('headers.timestamp_forms', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const now = new Date();
  return expectAll([now.toISOString().replace(/\.\d+Z$/, 'Z'), now.toISOString().replace('Z', '+00:00'),
    now.toISOString().replace(/Z$/, '123Z')],
  (ts) => c.decrypt(c.token, 'alpha', c.K.ek, { timestamp: ts }), (r) => r.status === 200);
});
probe('headers.missing_request_headers', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  return expectAll(['x-request-id', 'x-request-timestamp'],
    (h) => c.decrypt(c.token, 'alpha', c.K.ek, { omit: [h] }), st4xx);
});

// ---- methods
probe('methods.get', 'error', 'fast', (c) => expectAll(['auth', 'decrypt-key', 'rotate-key'],
  (e) => c.call(e, { method: 'GET' }), (r) => r.status === 405));
probe('methods.other', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const body = JSON.stringify({ data: { key_alias: 'alpha', encrypted_key: c.K.ek } });
  return expectAll([
    ['decrypt-key', 'PUT', `Bearer ${c.token}`, 'application/json', body],
    ['decrypt-key', 'DELETE', `Bearer ${c.token}`, 'application/json', body],
    ['auth', 'PUT', c.basic(), 'application/x-www-form-urlencoded', 'grant_type=client_credentials'],
    ['rotate-key', 'PATCH', `Bearer ${c.token}`, 'application/json', JSON.stringify({ data: { key_alias: 'beta' } })],
  ], ([e, m, a, ct, b]) => c.call(e, { method: m, auth: a, ctype: ct, body: b }), (r) => r.status === 405);
});

// ---- load
probe('load.p50', 'error', 'fast', async (c) => {
  if (!c.token) return SKIP('no token');
  const N = 40;
  const CONC = 8;
  const ms = [];
  const answers = [];
  let next = 0;
  const worker = async () => {
    while (next < N) {
      next += 1;
      const r = await c.decrypt(c.token, 'alpha', c.K.ek);
      ms.push(r.ms);
      answers.push(r);
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker));
  c.loadAnswers = answers;
  ms.sort((a, b) => a - b);
  const p50 = ms[Math.floor(ms.length / 2)];
  return p50 <= 250 || FAIL(`p50 ${p50.toFixed(0)} ms over the 250 ms budget`);
});
probe('load.errors', 'error', 'fast', async (c) => {
  if (!c.loadAnswers) return SKIP('no load phase');
  const bad = c.loadAnswers.filter((r) => r.status !== 200 || !decodeAny(r.json?.data?.plaintext_key)?.equals(c.K.bytes));
  return bad.length === 0 || FAIL(`${bad.length} answers not 200 with the key`);
});

// ---- token lifetime (runs with --expires-in 10 or less)
probe('token.lifetime', null, 'slow', async (c) => {
  const N = c.opts.expiresIn;
  const t0 = Date.now();
  const r = await c.auth();
  const t = r.json?.data?.access_token;
  if (typeof t !== 'string') { c.slow = { reuse: 'no token', expired: 'no token', rotate: 'no token' }; return true; }
  const reuseAt = t0 + (N - Math.min(30, Math.max(2, N / 10))) * 1000;
  await sleep(Math.max(0, reuseAt - Date.now()));
  const a = await c.decrypt(t, 'alpha', c.K.ek);
  await sleep(Math.max(0, t0 + (N + 1.5) * 1000 - Date.now()));
  const b = await c.decrypt(t, 'alpha', c.K.ek);
  const d = await c.rotate(t, 'alpha');
  c.slow = {
    reuse: a.status === 200 || FAIL(`at expires_in - margin: ${brief(a)}`),
    expired: b.status === 401 || FAIL(`1.5 s after expiry: ${brief(b)}`),
    rotate: d.status === 401 || FAIL(`rotate-key 1.5 s after expiry: ${brief(d)}`),
  };
  return true;
});
probe('token.reuse', 'error', 'slowresult', async (c) => c.slow.reuse);
probe('token.expired', 'error', 'slowresult', async (c) => c.slow.expired);
probe('rotate.expired', 'error', 'slowresult', async (c) => c.slow.rotate);

// ---- rotation (after everything that decrypts version-1 keys)
probe('rotate.status', 'error', 'rotate', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.rotate(c.token, 'alpha');
  c.rotA1 = r;
  return r.status === 200 || FAIL(brief(r));
});
probe('rotate.shape', 'error', 'rotate', async (c) => {
  const r = c.rotA1;
  if (r?.status !== 200) return SKIP('no 200');
  if (mediaType(r.headers['content-type']) !== 'application/json') return FAIL(`content-type ${r.headers['content-type']}`);
  const d = r.json?.data;
  return (isObj(d) && typeof d.encrypted_dek === 'string' && d.encrypted_dek.startsWith('byok:v1:')
    && typeof d.key_alias === 'string' && typeof d.plaintext_dek === 'string') || FAIL(r.text.slice(0, 200));
});
probe('rotate.alias', 'error', 'rotate', async (c) => {
  if (c.rotA1?.status !== 200) return SKIP('no rotation');
  const r = await c.rotate(c.token, 'beta');
  c.rotB1 = r;
  const bad = [];
  if (c.rotA1.json?.data?.key_alias !== 'alpha') bad.push(`asked alpha, answered ${c.rotA1.json?.data?.key_alias}`);
  if (r.json?.data?.key_alias !== 'beta') bad.push(`asked beta, answered ${brief(r)}`);
  return bad.length === 0 || FAIL(bad.join('; '));
});
probe('rotate.plaintext', 'error', 'rotate', async (c) => {
  const bad = [];
  for (const r of [c.rotA1, c.rotB1]) {
    if (r?.status !== 200) continue;
    const b = strictB64(r.json?.data?.plaintext_dek);
    if (!b || b.length !== 32) bad.push(`plaintext_dek ${b ? `${b.length} bytes` : 'not standard base64'}`);
  }
  return bad.length === 0 || FAIL(bad.join('; '));
});
probe('rotate.roundtrip', 'error', 'rotate', async (c) => {
  const bad = [];
  for (const r of [c.rotA1, c.rotB1]) {
    const d = r?.json?.data;
    if (r?.status !== 200 || !isObj(d)) continue;
    const x = await c.decrypt(c.token, d.key_alias, d.encrypted_dek);
    const got = decodeAny(x.json?.data?.plaintext_key);
    if (x.status !== 200 || !got || !got.equals(decodeAny(d.plaintext_dek))) bad.push(`${d.key_alias}: ${brief(x)}`);
  }
  return bad.length === 0 || FAIL(bad.join('; '));
});
probe('rotate.fresh', 'error', 'rotate', async (c) => {
  if (c.rotA1?.status !== 200) return SKIP('no rotation');
  const r = await c.rotate(c.token, 'alpha');
  c.rotA2 = r;
  if (r.status !== 200) return FAIL(brief(r));
  return r.json?.data?.plaintext_dek !== c.rotA1.json.data.plaintext_dek || FAIL('the second rotation answered the same data key');
});
probe('rotate.old_keys', 'error', 'rotate', async (c) => {
  if (c.rotA1?.status !== 200) return SKIP('no rotation');
  const bad = [];
  const old = [['alpha', c.K.ek, c.K.bytes], ['alpha', c.rotA1.json.data.encrypted_dek, decodeAny(c.rotA1.json.data.plaintext_dek)]];
  for (const [alias, ek, want] of old) {
    const r = await c.decrypt(c.token, alias, ek);
    const got = decodeAny(r.json?.data?.plaintext_key);
    if (r.status !== 200 || !got?.equals(want)) bad.push(brief(r));
  }
  return bad.length === 0 || FAIL(bad.join('; '));
});
probe('rotate.no_body', 'error', 'rotate', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.rotate(c.token, undefined);
  return (r.status === 200 && r.json?.data?.key_alias === 'alpha') || FAIL(brief(r));
});
probe('rotate.default_alias_forms', 'error', 'rotate', async (c) => {
  if (!c.token) return SKIP('no token');
  return expectAll(['{}', '{"data": {}}'], (b) => c.rotate(c.token, undefined, { ctype: 'application/json', body: b }),
    (r) => r.status === 200 && r.json?.data?.key_alias === 'alpha');
});
probe('rotate.unknown_alias', 'error', 'rotate', async (c) => {
  if (!c.token) return SKIP('no token');
  const r = await c.rotate(c.token, 'gamma');
  return is4xx(r.status) || FAIL(brief(r));
});
probe('rotate.bad_body', 'error', 'rotate', async (c) => {
  if (!c.token) return SKIP('no token');
  return expectAll([['application/json', '{"data": "x"}'], ['application/json', '{"data": {"key_alias": 5}}'],
    ['application/json', 'not json'], ['application/json', '[]'], ['text/plain', '{"data": {"key_alias": "alpha"}}']],
  ([ct, b]) => c.rotate(c.token, undefined, { ctype: ct, body: b }), st4xx);
});
probe('rotate.no_token', 'error', 'rotate', async (c) => {
  const r = await c.rotate(null, 'alpha');
  return r.status === 401 || FAIL(brief(r));
});
probe('rotate.garbage_token', 'error', 'rotate', async (c) => {
  const r = await c.rotate('garbage', 'alpha');
  return r.status === 401 || FAIL(brief(r));
});
probe('rotate.tampered_token', 'error', 'rotate', async (c) => {
  const j = jwtParts(c.token);
  if (!j) return SKIP('not a JWT');
  const h = b64u(JSON.stringify({ alg: 'none', typ: 'JWT' }));
  const mid = Math.floor(j.s.length / 2);
  const forged = [`${j.h}.${j.p}.${j.s.slice(0, mid)}${j.s[mid] === 'A' ? 'B' : 'A'}${j.s.slice(mid + 1)}`, `${h}.${j.p}.`];
  forged.forEach((t) => c.tokens.add(t));
  return expectAll(forged, (t) => c.rotate(t, 'alpha'), st401);
});

// ---- across processes: two fresh instances with the same arguments
probe('cross.run', null, 'cross', async (c) => {
  const others = [];
  try {
    for (let i = 0; i < 2; i++) others.push(await startService(c.args));
    const answers = [];
    for (const s of others) {
      const o = new Client(s.port, c.opts);
      const a = await o.auth();
      const t = a.json?.data?.access_token;
      const r = await o.rotate(t, 'alpha');
      c.log.push(...o.log);
      o.tokens.forEach((x) => c.tokens.add(x));
      c.keys.push(...o.keys);
      c.envelopes.push(...o.envelopes);
      answers.push(r);
    }
    const [x, y] = answers.map((r) => r.json?.data?.plaintext_dek);
    c.cross = {
      fresh: (answers.every((r) => r.status === 200) && x !== y) || FAIL('two processes answered the same data key to their first rotation'),
    };
  } finally {
    for (const s of others) await stopService(s);
  }
  return true;
});
probe('rotate.cross_process_fresh', 'error', 'crossresult', async (c) => c.cross.fresh);
probe('envelope.nonce_unique', 'error', 'crossresult', async (c) => {
  const seen = new Map();
  const all = [...c.envelopes, { alias: 'alpha', ek: c.K.ek }, { alias: 'alpha', ek: c.K2.ek }, { alias: 'beta', ek: c.KB.ek }];
  for (const e of all) {
    const b = envBytes(e.ek);
    if (b.length < 15) continue;
    const key = `${e.alias}|${b.subarray(1, 3).toString('hex')}|${b.subarray(3, 15).toString('hex')}`;
    const rest = b.subarray(15).toString('hex');
    if (seen.has(key) && seen.get(key) !== rest) return FAIL(`two envelopes under ${e.alias} share master-key version and nonce`);
    seen.set(key, rest);
  }
  return true;
});

// ---- judged over every answer of the run
const ERROR_CODES = {
  400: ['INVALID_REQUEST'], 401: ['UNAUTHORIZED'], 403: ['KEY_DISABLED', 'KEY_REVOKED'], 404: ['KEY_NOT_FOUND', 'NOT_FOUND'],
  405: ['METHOD_NOT_ALLOWED'], 413: ['PAYLOAD_TOO_LARGE'], 415: ['UNSUPPORTED_MEDIA_TYPE', 'INVALID_REQUEST'],
  422: ['DECRYPTION_FAILED'], 429: ['RATE_LIMITED'], 500: ['INTERNAL_ERROR'], 503: ['SERVICE_UNAVAILABLE'],
};
const answered = (c) => c.log.filter((r) => r.status > 0 && r.req.method !== 'HEAD');
const errorsOf = (c) => answered(c).filter((r) => r.status >= 400);
const shaped = (r) => isObj(r.json) && isObj(r.json.error) && typeof r.json.error.code === 'string' && typeof r.json.error.message === 'string';
const listBad = (bad) => (bad.length === 0 ? true : FAIL(`${bad.length} answers, e.g. ${bad.slice(0, 2).join(' | ')}`));
const where = (r) => `${r.req.method} ${r.req.endpoint} ${r.status}`;

probe('errors.json', 'error', 'global', async (c) => listBad(errorsOf(c)
  .filter((r) => !['application/json'].includes(mediaType(r.headers['content-type'])) || r.json === undefined)
  .map((r) => `${where(r)} content-type ${r.headers['content-type']}`)));
probe('errors.shape', 'error', 'global', async (c) => listBad(errorsOf(c).filter((r) => !shaped(r)).map((r) => `${where(r)} ${r.text.slice(0, 80)}`)));
probe('errors.code', 'warning', 'global', async (c) => listBad(errorsOf(c).filter(shaped)
  .filter((r) => !(ERROR_CODES[r.status] ?? []).includes(r.json.error.code)).map((r) => `${where(r)} ${r.json.error.code}`)));
probe('errors.message', 'warning', 'global', async (c) => listBad(errorsOf(c).filter(shaped)
  .filter((r) => { const m = r.json.error.message; return m.length < 1 || m.length > 200 || /[\u0000-\u001f\u007f]/.test(m); })
  .map((r) => `${where(r)} ${JSON.stringify(r.json.error.message).slice(0, 80)}`)));
probe('headers.trace_echo', 'error', 'global', async (c) => listBad(answered(c)
  .filter((r) => r.req.headers['x-trace-id'] !== undefined && r.headers['x-trace-id'] !== r.req.headers['x-trace-id'])
  .map((r) => `${where(r)} sent ${r.req.headers['x-trace-id']} got ${r.headers['x-trace-id']}`)));
probe('headers.request_duration', 'warning', 'global', async (c) => listBad(answered(c)
  .filter((r) => !/^\d+(\.\d+)?$/.test(r.headers['x-request-duration'] ?? '')).map((r) => `${where(r)} ${r.headers['x-request-duration']}`)));
probe('methods.allow', 'warning', 'global', async (c) => listBad(answered(c).filter((r) => r.status === 405)
  .filter((r) => !(r.headers.allow ?? '').split(',').map((s) => s.trim().toUpperCase()).includes('POST')).map(where)));

// secrets: every window of W characters of every form of a secret
function formsOfBytes(bytes) {
  const out = [];
  for (const enc of ['base64', 'base64url']) {
    for (let k = 0; k < 3; k++) {
      const s = Buffer.concat([Buffer.alloc(k), bytes]).toString(enc).replace(/=+$/, '');
      out.push(s.slice(Math.ceil((k * 4) / 3), s.length - 2));
    }
  }
  return out;
}
function windowSet(secrets, W) {
  const set = new Set();
  for (const s of secrets) {
    for (let i = 0; i + W <= s.length; i++) set.add(s.slice(i, i + W));
  }
  return set;
}
function findLeak(hay, sets) {
  for (const [W, set] of sets) {
    for (let i = 0; i + W <= hay.length; i++) if (set.has(hay.slice(i, i + W))) return hay.slice(i, i + W);
  }
  return null;
}
probe('secrets.no_secret', 'error', 'global', async (c) => {
  const textForms = (t) => [t, encodeURIComponent(t), ...formsOfBytes(Buffer.from(t))];
  const always = [...textForms(SEC), ...textForms(STATIC)];
  const sensitive = [...[...c.tokens].flatMap(textForms),
    ...[c.K.bytes, c.K2.bytes, c.KB.bytes, ...c.keys].filter(Boolean).flatMap(formsOfBytes)];
  const hexes = [c.K.bytes, c.K2.bytes, c.KB.bytes, ...c.keys].filter(Boolean).map((b) => b.toString('hex'));
  const setsAlways = [[10, windowSet(always, 10)], [16, windowSet([Buffer.from(SEC).toString('hex'), Buffer.from(STATIC).toString('hex')], 16)]];
  const setsAll = [...setsAlways, [10, windowSet(sensitive, 10)], [16, windowSet(hexes, 16)]];
  const bad = [];
  for (const r of answered(c)) {
    const hdrs = Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`).join('\n');
    const leakH = findLeak(hdrs, setsAll) ?? findLeak(hdrs.toLowerCase(), [setsAll[1], setsAll[3]]);
    if (leakH) { bad.push(`${where(r)} header carries a secret`); continue; }
    const leakB = r.status >= 400
      ? (findLeak(r.text, setsAll) ?? findLeak(r.text.toLowerCase(), [setsAll[1], setsAll[3]]))
      : findLeak(r.text, setsAlways);
    if (leakB) bad.push(`${where(r)} body carries a secret`);
  }
  return listBad(bad);
});

// ------------------------------------------------------------------ one run

async function runSuite(args, keys) {
  const opts = {
    staticKey: args.includes('--static-key'),
    expiresIn: args.includes('--expires-in') ? Number(args[args.indexOf('--expires-in') + 1]) : 3600,
  };
  const svc = await startService(args);
  const c = new Client(svc.port, opts);
  c.args = args;
  Object.assign(c, keys);
  const results = {};
  try {
    const refresh = async () => {
      const a = await c.auth();
      c.token = typeof a.json?.data?.access_token === 'string' ? a.json.data.access_token : null;
      c.tokenAt = Date.now();
    };
    await refresh();
    const slow = opts.expiresIn <= 10;
    const order = ['fast', opts.staticKey ? 'static' : 'nostatic', 'slow', 'slowresult', 'rotate', 'cross', 'crossresult', 'global'];
    for (const g of order) {
      for (const p of PROBES.filter((x) => x.group === g)) {
        if ((g === 'slow' || g === 'slowresult') && !slow) { if (p.severity) results[p.id] = { skip: 'needs --expires-in 10 or less' }; continue; }
        if ((g === 'static' && !opts.staticKey) || (g === 'nostatic' && opts.staticKey)) continue;
        // short-lived tokens (--expires-in 10 or less) are renewed well before they expire
        if (Date.now() - c.tokenAt > (opts.expiresIn * 1000) / 3) await refresh();
        let out;
        try { out = await p.fn(c); } catch (e) { out = FAIL(`probe threw: ${e.stack}`); }
        if (p.severity === null) continue;
        results[p.id] = out === true ? { pass: true } : (typeof out === 'string' ? { fail: out } : out);
      }
    }
  } finally {
    await stopService(svc);
  }
  return { results, requests: c.log.length };
}

// ------------------------------------------------------------------ main

async function pool(items, n, fn) {
  const out = new Array(items.length);
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) { const k = i++; out[k] = await fn(items[k], k); }
  }));
  return out;
}

async function main() {
  const argv = process.argv.slice(2);
  const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1].split(',') : null;
  const jobs = argv.includes('--jobs') ? Number(argv[argv.indexOf('--jobs') + 1]) : 4;
  const verbose = argv.includes('--verbose');
  const t0 = Date.now();
  let failures = 0;
  const say = (s) => process.stdout.write(`${s}\n`);

  // defects.json and the service agree
  const names = DEFECTS.map((d) => d.name);
  const fields = ['name', 'rule', 'source', 'what', 'severity', 'service_args'];
  for (const d of DEFECTS) {
    for (const f of fields) if (d[f] === undefined) { say(`FAIL defects.json: ${d.name} lacks ${f}`); failures++; }
    if (!EXPECT[d.name]) { say(`FAIL defects.json: ${d.name} has no expectation in selftest.mjs`); failures++; }
  }
  for (const n of Object.keys(EXPECT)) if (!names.includes(n)) { say(`FAIL selftest: ${n} is not in defects.json`); failures++; }
  if (new Set(names).size !== names.length) { say('FAIL defects.json: duplicate names'); failures++; }
  {
    const r = await new Promise((res) => {
      const p = spawn(process.execPath, [SERVICE, '--port', '0', '--defect', 'no_such_defect'], { stdio: 'ignore' });
      p.on('exit', (code) => res(code));
    });
    if (r !== 2) { say(`FAIL an unknown defect exits ${r}, not 2`); failures++; } else say('ok   an unknown --defect exits 2');
  }

  // keys from `wrap` (a separate process): K has + and / in its plaintext and its envelope
  let K = null;
  for (let i = 0; i < 400 && !K; i++) {
    const w = wrap('alpha');
    if (/[+]/.test(w.pt) && /[/]/.test(w.pt) && /[+]/.test(w.ek.slice(8)) && /[/]/.test(w.ek.slice(8))) K = w;
  }
  if (!K) throw new Error('could not find a suitable wrapped key');
  const keys = { K, K2: wrap('alpha'), KB: wrap('beta') };
  say('ok   wrap prints {"encrypted_key": "byok:v1:...", "plaintext_key": "..."} (alpha, beta)');

  const runs = [
    { name: 'baseline', args: [], expect: [] },
    { name: 'baseline --expires-in 3', args: ['--expires-in', '3'], expect: [] },
    { name: 'baseline --static-key', args: ['--static-key'], expect: [] },
    ...DEFECTS.map((d) => ({ name: d.name, args: ['--defect', d.name, ...d.service_args], expect: EXPECT[d.name] ?? [], severity: d.severity })),
  ].filter((r) => !only || only.includes(r.name) || (r.name.startsWith('baseline') && only.includes('baseline')));

  const sevOf = Object.fromEntries(PROBES.map((p) => [p.id, p.severity]));
  let defectsOk = 0;
  let defectCount = 0;
  await pool(runs, jobs, async (run) => {
    let res;
    let requests = 0;
    try { ({ results: res, requests } = await runSuite(run.args, keys)); } catch (e) { say(`FAIL ${run.name}: ${e.message}`); failures++; return; }
    const failed = Object.keys(res).filter((k) => res[k].fail);
    const skipped = Object.keys(res).filter((k) => res[k].skip);
    const unexpected = failed.filter((k) => !run.expect.includes(k));
    const missing = run.expect.filter((k) => !res[k]?.fail);
    const isBase = run.name.startsWith('baseline');
    if (!isBase) defectCount++;
    if (unexpected.length || missing.length) {
      failures++;
      say(`FAIL ${run.name}${run.args.length ? ` [${run.args.join(' ')}]` : ''}`);
      for (const k of missing) say(`       expected to fail but ${res[k]?.skip ? `skipped (${res[k].skip})` : 'passed'}: ${k}`);
      for (const k of unexpected) say(`       also failed: ${k}: ${res[k].fail.slice(0, 300)}`);
    } else {
      if (!isBase) defectsOk++;
      const n = Object.keys(res).length;
      const what = isBase
        ? `all ${n - skipped.length} probes pass (${requests} requests)${skipped.length ? `, ${skipped.length} skipped (${[...new Set(skipped.map((k) => res[k].skip))].join('; ')})` : ''}`
        : `breaks ${run.expect.map((k) => `${k}${sevOf[k] === 'warning' ? ' (warning)' : ''}`).join(', ')}; ${n - skipped.length - failed.length} other probes pass`;
      say(`ok   ${run.name}: ${what}`);
      if (verbose) for (const k of failed) say(`       ${k}: ${res[k].fail.slice(0, 300)}`);
    }
  });
  say('');
  say(`${defectsOk}/${defectCount} defects each break exactly their rule; probes: ${PROBES.filter((p) => p.severity).length}; ` +
    `${failures === 0 ? 'PASS' : `FAIL (${failures})`} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
