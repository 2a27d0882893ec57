#!/usr/bin/env node
// A customer-hosted key service (BYOK), written from the interface spec and docs/interface.md.
// Node.js 20, built-in modules only.
//
//   node service.mjs --port 0 [--defect NAME] [--expires-in N] [--static-key]
//       listens on 127.0.0.1, prints one line {"port": N} once listening
//   node service.mjs wrap --alias alpha [--defect NAME]
//       prints {"encrypted_key": "byok:v1:...", "plaintext_key": "<base64>"}
//
// Endpoints (partner "acme"):
//   POST /acme/byok/v1/auth         HTTP Basic client credentials, form body grant_type=client_credentials
//                                   -> {"data": {"access_token", "token_type": "Bearer", "expires_in"}}
//   POST /acme/byok/v1/decrypt-key  Bearer token, JSON {"data": {"key_alias", "encrypted_key"}}
//                                   -> {"data": {"plaintext_key"}}
//   POST /acme/byok/v1/rotate-key   Bearer token, optional JSON {"data": {"key_alias"}} (default alias "alpha")
//                                   -> {"data": {"encrypted_dek", "key_alias", "plaintext_dek"}}
//
// Envelope layout (this service's own; the text after the "byok:v1:" prefix is standard base64,
// padding optional, of exactly 63 bytes):
//
//   offset  size  field
//   0       1     layout id, 0xB7
//   1       2     master-key version, unsigned big-endian (1 = the version `wrap` uses; every
//                 /rotate-key raises the alias's current version by one)
//   3       12    AES-256-GCM nonce (random per encryption)
//   15      32    ciphertext of the 32-byte data key
//   47      16    GCM authentication tag (always the full 16 bytes)
//
//   key  = HKDF-SHA256(ikm = SEED, salt = "blind-byok/master", info = "<alias>/v<version>", 32 bytes)
//   AAD  = UTF-8 "byok:v1:" || alias || 0x00 || bytes 0..2 of the envelope (layout id and version)
//
// The alias is bound through both the key and the AAD, so a data key only opens under its own alias.
// Access tokens are HS256 JWTs (key derived from SEED), claims iss, sub, aud, iat, exp, jti with
// exp = iat + expires_in (seconds).

import http from 'node:http';
import fs from 'node:fs';
import crypto from 'node:crypto';
import process from 'node:process';
import { performance } from 'node:perf_hooks';

const PARTNER = 'acme';
const CLIENT_ID = 'blind-client';
const CLIENT_SECRET = 'Bl1nd-S3cret-q7Vx9Kp2Lm';
const STATIC_KEY = 'sk_blind_4Hq8Zr2Nw6Tx1Pv9';
const SEED = 'blind-byok-round2/master-seed/7f3c91d2a4e8b605c1';
const INITIAL_ALIASES = ['alpha', 'beta'];
const DEFAULT_ALIAS = 'alpha';
const PREFIX = 'byok:v1:';
const LAYOUT_ID = 0xb7;
const HDR_LEN = 3;
const NONCE_LEN = 12;
const TAG_LEN = 16;
const DEK_LEN = 32;
const BODY_LIMIT = 16 * 1024;
const DRAIN_LIMIT = 8 * 1024 * 1024;
const SKEW_SECS = 300;
const ISSUER = 'blind-byok';
const AUDIENCE = 'acme/byok/v1';
const MAX_VERSION = 0xffff;

export const DEFECTS = [
  // /auth authentication
  'auth_secret_prefix_accepted', 'auth_secret_extension_accepted', 'auth_secret_case_insensitive',
  'auth_client_id_ignored', 'auth_client_id_case_insensitive', 'auth_no_authorization_500',
  'auth_basic_no_colon_500', 'auth_bearer_refresh', 'auth_grant_type_ignored',
  'auth_grant_type_default', 'auth_grant_type_substring', 'auth_json_body_accepted',
  // tokens and lifetime
  'token_opaque', 'token_type_jwt', 'expires_in_string', 'expires_in_hardcoded',
  'jwt_exp_milliseconds', 'jwt_alg_none_accepted', 'jwt_sig_prefix_compare',
  'jwt_sig_decoded_compare', 'jwt_exp_leeway', 'token_expires_early',
  // bearer check
  'decrypt_basic_accepted', 'rotate_no_auth', 'rotate_ignores_exp', 'static_key_prefix_compare',
  'garbage_token_500', 'jwt_bad_header_500', 'token_in_query_accepted',
  // cryptography and envelope
  'alias_fallback', 'tag_length_from_key', 'tag_last_byte_ignored', 'tag_not_verified',
  'header_unauthenticated', 'nonce_reuse', 'plaintext_urlsafe', 'plaintext_hex',
  'decrypt_cache_by_alias', 'base64_lenient', 'prefix_case_insensitive', 'prefix_any_version',
  'prefix_optional', 'unknown_alias_500', 'decrypt_failed_500', 'short_envelope_500',
  'decrypt_kdf_per_call',
  // rotation
  'rotate_idempotent_window', 'rotate_deterministic_dek', 'rotate_forgets_old',
  'rotate_answers_default_alias', 'rotate_wraps_default_alias', 'rotate_plaintext_16',
  'rotate_no_body_500', 'rotate_unknown_alias_creates',
  // request validation and robustness
  'missing_data_500', 'alias_number_500', 'body_null_500', 'invalid_json_500',
  'missing_field_404', 'body_limit_absent', 'body_limit_content_length_only',
  'decrypt_content_type_ignored', 'decrypt_content_type_prefix', 'timestamp_unparseable_500',
  // methods
  'get_404', 'put_treated_as_post', 'allow_header_missing',
  // tracing headers
  'trace_missing_on_errors', 'trace_regenerated', 'trace_required', 'trace_lowercased',
  'trace_missing_on_405', 'no_request_duration', 'timestamp_future_accepted',
  // error bodies
  'error_text_plain', 'error_json_wrong_ctype', 'error_flat_shape', 'error_code_number',
  'decrypt_ok_text_plain',
  // secrets
  'auth_error_echoes_credentials', 'auth_debug_header_basic', 'token_echo_in_401',
  'token_in_cookie', 'kcv_header_prefix', 'jwt_claims_include_credentials',
];

// ---------------------------------------------------------------- arguments

function usage(msg) {
  process.stderr.write(`service.mjs: ${msg}\n` +
    'usage: node service.mjs --port N [--defect NAME] [--expires-in N] [--static-key]\n' +
    '       node service.mjs wrap --alias ALIAS [--defect NAME]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { cmd: 'serve', port: null, defect: null, expiresIn: 3600, staticKey: false, alias: null };
  let i = 0;
  if (argv[0] === 'wrap') { o.cmd = 'wrap'; i = 1; } else if (argv[0] === 'serve') { i = 1; }
  for (; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--port') {
      const v = val();
      if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) usage('--port must be 0 to 65535');
      o.port = Number(v);
    } else if (a === '--defect') {
      const v = val();
      if (!DEFECTS.includes(v)) usage(`unknown defect '${v}'`);
      o.defect = v;
    } else if (a === '--expires-in') {
      const v = val();
      if (!/^\d{1,9}$/.test(v) || Number(v) < 1) usage('--expires-in must be a whole number of seconds, 1 or more');
      o.expiresIn = Number(v);
    } else if (a === '--static-key') {
      o.staticKey = true;
    } else if (a === '--alias') {
      o.alias = val();
    } else {
      usage(`unknown argument '${a}'`);
    }
  }
  if (o.cmd === 'serve' && o.port === null) usage('--port is required');
  if (o.cmd === 'wrap' && !o.alias) usage('wrap needs --alias');
  return o;
}

const OPTS = parseArgs(process.argv.slice(2));
const DEFECT = OPTS.defect;
const D = (name) => DEFECT === name;
const EXPIRES_IN = OPTS.expiresIn;

// ---------------------------------------------------------------- keys

const masterCache = new Map();
function masterKey(alias, version) {
  const id = `${alias}/v${version}`;
  let k = masterCache.get(id);
  if (!k) {
    k = Buffer.from(crypto.hkdfSync('sha256', SEED, 'blind-byok/master', id, 32));
    masterCache.set(id, k);
  }
  return k;
}
const JWT_KEY = Buffer.from(crypto.hkdfSync('sha256', SEED, 'blind-byok/jwt', 'hs256', 32));
const CMP_KEY = crypto.randomBytes(32);

// alias -> { current, min } (master-key versions this instance accepts)
const aliases = new Map(INITIAL_ALIASES.map((a) => [a, { current: 1, min: 1 }]));

let nonceCounter = 0n;
function newNonce() {
  if (D('nonce_reuse')) {
    // defect: a per-process counter, not persisted, so every process starts again at 1
    nonceCounter += 1n;
    const n = Buffer.alloc(NONCE_LEN);
    n.writeBigUInt64BE(nonceCounter, 4);
    return n;
  }
  return crypto.randomBytes(NONCE_LEN);
}

let drbgCounter = 0;
function newDataKey(len) {
  if (D('rotate_deterministic_dek')) {
    // defect: a seeded generator, restarted with every process
    drbgCounter += 1;
    return crypto.createHmac('sha256', SEED).update(`dek/${drbgCounter}`).digest().subarray(0, len);
  }
  return crypto.randomBytes(len);
}

function aad(alias, hdr) {
  return Buffer.concat([Buffer.from(`${PREFIX}${alias}\0`, 'utf8'), hdr]);
}

function seal(alias, version, dek) {
  const hdr = Buffer.alloc(HDR_LEN);
  hdr[0] = LAYOUT_ID;
  hdr.writeUInt16BE(version, 1);
  const nonce = newNonce();
  const c = crypto.createCipheriv('aes-256-gcm', masterKey(alias, version), nonce, { authTagLength: TAG_LEN });
  c.setAAD(aad(alias, hdr));
  const ct = Buffer.concat([c.update(dek), c.final()]);
  return PREFIX + Buffer.concat([hdr, nonce, ct, c.getAuthTag()]).toString('base64');
}

// ---------------------------------------------------------------- helpers

class ApiError extends Error {
  constructor(status, code, message, headers = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}
const bad = (msg) => new ApiError(400, 'INVALID_REQUEST', msg);

function safeEqual(a, b) {
  const ha = crypto.createHmac('sha256', CMP_KEY).update(String(a)).digest();
  const hb = crypto.createHmac('sha256', CMP_KEY).update(String(b)).digest();
  return crypto.timingSafeEqual(ha, hb);
}

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// Standard base64, padding optional, canonical (no whitespace, no URL-safe characters, no stray bits).
function strictB64(s) {
  if (typeof s !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const body = s.replace(/=+$/, '');
  const pad = s.length - body.length;
  if (body.length % 4 === 1) return null;
  if (pad > 0 && (body.length + pad) % 4 !== 0) return null;
  const buf = Buffer.from(body, 'base64');
  if (buf.toString('base64').replace(/=+$/, '') !== body) return null;
  return buf;
}

function mediaType(v) {
  if (typeof v !== 'string') return '';
  return v.split(';')[0].trim().toLowerCase();
}
const isJsonType = (mt) => mt === 'application/json' || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(mt);

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_RE = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

function parseIso(s) {
  const m = ISO_RE.exec(s);
  if (!m) return NaN;
  const frac = m[3] ? m[3].slice(0, 4) : '';
  const tz = m[4].toUpperCase();
  const t = Date.parse(`${m[1]}T${m[2]}${frac}${tz}`);
  if (Number.isNaN(t)) return NaN;
  // reject dates that roll over (2026-02-30)
  const [y, mo, d] = m[1].split('-').map(Number);
  const probe = new Date(Date.UTC(y, mo - 1, d));
  if (probe.getUTCMonth() !== mo - 1 || probe.getUTCDate() !== d) return NaN;
  return t;
}

function cleanMessage(msg) {
  // one printable line of at most 200 characters
  return String(msg).replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 200) || 'error';
}

// ---------------------------------------------------------------- responses

function baseHeaders(res, ctx, status) {
  let trace = ctx.trace;
  if (D('trace_regenerated')) trace = crypto.randomUUID();
  if (D('trace_lowercased')) trace = trace.toLowerCase();
  let sendTrace = true;
  if (D('trace_missing_on_errors') && status >= 400) sendTrace = false;
  if (D('trace_missing_on_405') && ctx.routerLevel) sendTrace = false;
  if (sendTrace) {
    try { res.setHeader('X-Trace-Id', trace); } catch { res.setHeader('X-Trace-Id', crypto.randomUUID()); }
  }
  if (!D('no_request_duration')) {
    res.setHeader('X-Request-Duration', (performance.now() - ctx.start).toFixed(3));
  }
  res.setHeader('Cache-Control', 'no-store');
  for (const [k, v] of Object.entries(ctx.extraHeaders)) res.setHeader(k, v);
}

// Instrumentation for the harness's tests (not part of the service): with BLIND_SECRETS_LOG
// set, every token and plaintext key an answer carries is appended to that file, one a line,
// so that the test can search every output of the checker for any part of them.
function logSecrets(obj) {
  const file = process.env.BLIND_SECRETS_LOG;
  const data = obj && obj.data;
  if (!file || !data || typeof data !== 'object') return;
  for (const k of ['access_token', 'plaintext_key', 'plaintext_dek']) {
    if (typeof data[k] === 'string') fs.appendFileSync(file, data[k] + '\n');
  }
}

function sendJson(res, ctx, status, obj, headers = {}, contentType = 'application/json') {
  logSecrets(obj);
  baseHeaders(res, ctx, status);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  const body = Buffer.from(JSON.stringify(obj));
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', body.length);
  res.statusCode = status;
  res.end(body);
}

function sendError(res, ctx, err) {
  if (res.headersSent) { res.destroy(); return; }
  const status = err.status;
  const headers = { ...err.headers };
  if (D('allow_header_missing')) delete headers.Allow;
  baseHeaders(res, ctx, status);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  const message = cleanMessage(err.message);
  let body;
  if (D('error_text_plain')) {
    body = Buffer.from(`${err.code}: ${message}`);
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  } else if (D('error_json_wrong_ctype')) {
    body = Buffer.from(JSON.stringify({ error: { code: err.code, message } }));
    // defect: no Content-Type on error answers
  } else if (D('error_flat_shape')) {
    body = Buffer.from(JSON.stringify({ code: err.code, message }));
    res.setHeader('Content-Type', 'application/json');
  } else if (D('error_code_number')) {
    body = Buffer.from(JSON.stringify({ error: { code: status, message } }));
    res.setHeader('Content-Type', 'application/json');
  } else {
    body = Buffer.from(JSON.stringify({ error: { code: err.code, message } }));
    res.setHeader('Content-Type', 'application/json');
  }
  res.setHeader('Content-Length', body.length);
  res.statusCode = status;
  res.end(body);
}

// ---------------------------------------------------------------- request body

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    let limit = BODY_LIMIT;
    if (D('body_limit_absent')) limit = Infinity;
    if (D('body_limit_content_length_only')) {
      // defect: only the announced length is checked; a chunked body is read whole
      const cl = Number(req.headers['content-length']);
      if (Number.isFinite(cl) && cl > BODY_LIMIT) tooLarge = true;
      limit = Infinity;
    }
    req.on('data', (c) => {
      size += c.length;
      if (size > DRAIN_LIMIT) { req.destroy(); reject(new Error('body too large to drain')); return; }
      if (tooLarge) return;
      if (size > limit) { tooLarge = true; chunks.length = 0; return; }
      chunks.push(c);
    });
    req.on('end', () => resolve({ buf: Buffer.concat(chunks), size, tooLarge }));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------- tokens

const opaqueTokens = new Map();

function issueToken(sub, creds) {
  if (D('token_opaque')) {
    const t = crypto.randomBytes(32).toString('base64url');
    opaqueTokens.set(t, { sub, exp: Date.now() / 1000 + EXPIRES_IN });
    return t;
  }
  let iat = Math.floor(Date.now() / 1000);
  let exp = iat + EXPIRES_IN;
  if (D('jwt_exp_milliseconds')) { iat = Date.now(); exp = iat + EXPIRES_IN * 1000; }
  let claims = { iss: ISSUER, sub, aud: AUDIENCE, iat, exp, jti: crypto.randomUUID() };
  if (D('jwt_claims_include_credentials') && creds) {
    claims = { iss: ISSUER, sub, aud: AUDIENCE, ...creds, iat, exp, jti: crypto.randomUUID() };
  }
  const h = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const p = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const s = crypto.createHmac('sha256', JWT_KEY).update(`${h}.${p}`).digest('base64url');
  return `${h}.${p}.${s}`;
}

const B64URL_RE = /^[A-Za-z0-9_-]+$/;

// Returns the subject, or null when the token is not valid.
function verifyJwt(token, endpoint) {
  if (D('token_opaque')) {
    const t = opaqueTokens.get(token);
    if (!t || Date.now() / 1000 >= t.exp) return null;
    return t.sub;
  }
  const parts = token.split('.');
  if (D('garbage_token_500')) {
    // defect: assumes three parts
    const [, , s] = parts;
    if (s.length > 512) return null;
  }
  if (parts.length !== 3) return null;
  const [h, p, s] = parts;
  if (!B64URL_RE.test(h) || !B64URL_RE.test(p) || !/^[A-Za-z0-9_-]*$/.test(s)) return null;
  let header;
  if (D('jwt_bad_header_500')) {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
  } else {
    try { header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')); } catch { return null; }
  }
  if (!isObj(header)) return null;
  if (D('jwt_alg_none_accepted') && header.alg === 'none') {
    // defect: unsigned tokens are trusted
  } else {
    if (header.alg !== 'HS256') return null;
    const mac = crypto.createHmac('sha256', JWT_KEY).update(`${h}.${p}`).digest();
    const expected = mac.toString('base64url');
    let ok;
    if (D('jwt_sig_prefix_compare')) {
      const g = Buffer.from(s);
      const e = Buffer.from(expected);
      ok = g.length <= e.length && crypto.timingSafeEqual(g, e.subarray(0, g.length));
    } else if (D('jwt_sig_decoded_compare')) {
      const g = Buffer.from(s, 'base64url');
      ok = g.length === mac.length && crypto.timingSafeEqual(g, mac);
    } else {
      ok = safeEqual(s, expected);
    }
    if (!ok) return null;
  }
  let claims;
  try { claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')); } catch { return null; }
  if (!isObj(claims)) return null;
  if (claims.iss !== ISSUER || claims.aud !== AUDIENCE || claims.sub !== CLIENT_ID) return null;
  if (typeof claims.exp !== 'number' || typeof claims.iat !== 'number') return null;
  const now = D('jwt_exp_milliseconds') ? Date.now() : Date.now() / 1000;
  if (D('rotate_ignores_exp') && endpoint === 'rotate-key') return claims.sub;
  if (D('jwt_exp_leeway')) return now < claims.exp + 300 ? claims.sub : null;
  if (D('token_expires_early')) return now < claims.iat + (claims.exp - claims.iat) / 2 ? claims.sub : null;
  return now < claims.exp ? claims.sub : null;
}

function parseAuthorization(v) {
  if (typeof v !== 'string') return null;
  const m = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)(?:[ \t]+(.*))?$/.exec(v.trim());
  if (!m) return { scheme: '', rest: '' };
  return { scheme: m[1].toLowerCase(), rest: (m[2] || '').trim() };
}

function decodeBasic(rest) {
  const buf = strictB64(rest);
  if (!buf || buf.length === 0) return null;
  const text = buf.toString('utf8');
  if (D('auth_basic_no_colon_500')) {
    const [, id, secret] = /^([^:]*):(.*)$/s.exec(text);
    return { id, secret };
  }
  const i = text.indexOf(':');
  if (i < 0) return null;
  return { id: text.slice(0, i), secret: text.slice(i + 1) };
}

function clientOk(id, secret) {
  let idOk;
  if (D('auth_client_id_ignored')) idOk = true;
  else if (D('auth_client_id_case_insensitive')) idOk = safeEqual(id.toLowerCase(), CLIENT_ID.toLowerCase());
  else idOk = safeEqual(id, CLIENT_ID);
  let secretOk;
  const g = Buffer.from(secret, 'utf8');
  const e = Buffer.from(CLIENT_SECRET, 'utf8');
  if (D('auth_secret_prefix_accepted')) {
    secretOk = g.length > 0 && g.length <= e.length && crypto.timingSafeEqual(g, e.subarray(0, g.length));
  } else if (D('auth_secret_extension_accepted')) {
    secretOk = g.length >= e.length && crypto.timingSafeEqual(g.subarray(0, e.length), e);
  } else if (D('auth_secret_case_insensitive')) {
    secretOk = safeEqual(secret.toLowerCase(), CLIENT_SECRET.toLowerCase());
  } else {
    secretOk = safeEqual(secret, CLIENT_SECRET);
  }
  return idOk && secretOk;
}

function staticKeyOk(token) {
  if (!OPTS.staticKey) return false;
  if (D('static_key_prefix_compare')) {
    const g = Buffer.from(token);
    const e = Buffer.from(STATIC_KEY);
    return g.length >= e.length && crypto.timingSafeEqual(g.subarray(0, e.length), e);
  }
  return safeEqual(token, STATIC_KEY);
}

const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="byok", error="invalid_token"' };
const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="byok", charset="UTF-8"' };

function requireBearer(req, url, endpoint) {
  let authz = req.headers.authorization;
  if (authz === undefined && D('token_in_query_accepted') && url.searchParams.get('access_token')) {
    authz = `Bearer ${url.searchParams.get('access_token')}`;
  }
  if (authz === undefined) throw new ApiError(401, 'UNAUTHORIZED', 'missing Authorization header: send Authorization: Bearer <token>', BEARER_CHALLENGE);
  const a = parseAuthorization(authz);
  if (a.scheme === 'basic' && D('decrypt_basic_accepted') && endpoint === 'decrypt-key') {
    const c = decodeBasic(a.rest);
    if (c && clientOk(c.id, c.secret)) return c.id;
  }
  if (a.scheme !== 'bearer') throw new ApiError(401, 'UNAUTHORIZED', 'only Authorization: Bearer <token> is accepted on this endpoint', BEARER_CHALLENGE);
  const token = a.rest;
  const reject = () => {
    const msg = D('token_echo_in_401') ? `access token rejected: ${token}` : 'the access token is invalid or expired';
    return new ApiError(401, 'UNAUTHORIZED', msg, BEARER_CHALLENGE);
  };
  if (!token) throw reject();
  if (staticKeyOk(token)) return 'static-key';
  const sub = verifyJwt(token, endpoint);
  if (!sub) throw reject();
  return sub;
}

// ---------------------------------------------------------------- envelope

function unlockKeystore() {
  // defect decrypt_kdf_per_call: the key store's passphrase is stretched on every call
  crypto.scryptSync(SEED, 'blind-byok/keystore', 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 128 * 1024 * 1024 });
}

function openEnvelope(alias, ek) {
  let rest;
  if (D('prefix_case_insensitive')) {
    if (ek.slice(0, PREFIX.length).toLowerCase() !== PREFIX) throw bad('encrypted_key must start with byok:v1:');
    rest = ek.slice(PREFIX.length);
  } else if (D('prefix_any_version')) {
    const m = /^byok:v\d+:/.exec(ek);
    if (!m) throw bad('encrypted_key must start with byok:v1:');
    rest = ek.slice(m[0].length);
  } else if (D('prefix_optional')) {
    rest = ek.startsWith(PREFIX) ? ek.slice(PREFIX.length) : ek;
  } else {
    if (!ek.startsWith(PREFIX)) throw bad('encrypted_key must start with byok:v1: (no other format or version is supported)');
    rest = ek.slice(PREFIX.length);
  }
  let buf;
  if (D('base64_lenient')) buf = Buffer.from(rest, 'base64');
  else buf = strictB64(rest);
  if (!buf) throw bad('encrypted_key is not valid standard base64 after its byok:v1: prefix');

  const dekLens = D('rotate_plaintext_16') ? [DEK_LEN, 16] : [DEK_LEN];
  if (D('tag_length_from_key')) {
    if (buf.length < HDR_LEN + NONCE_LEN + DEK_LEN + 4) throw bad('encrypted_key is too short for a byok:v1 envelope');
  } else if (D('short_envelope_500')) {
    // defect: no length check
  } else if (!dekLens.some((n) => buf.length === HDR_LEN + NONCE_LEN + n + TAG_LEN)) {
    throw bad('encrypted_key has the wrong length for a byok:v1 envelope');
  }
  if (!D('header_unauthenticated') && !D('short_envelope_500') && buf[0] !== LAYOUT_ID) {
    throw bad('encrypted_key has an unknown envelope layout');
  }
  const version = buf.readUInt16BE(1);
  const nonce = buf.subarray(HDR_LEN, HDR_LEN + NONCE_LEN);
  let ct;
  let tag;
  if (D('tag_length_from_key')) {
    ct = buf.subarray(HDR_LEN + NONCE_LEN, HDR_LEN + NONCE_LEN + DEK_LEN);
    tag = buf.subarray(HDR_LEN + NONCE_LEN + DEK_LEN);
  } else if (D('tag_last_byte_ignored')) {
    ct = buf.subarray(HDR_LEN + NONCE_LEN, buf.length - TAG_LEN);
    tag = buf.subarray(buf.length - TAG_LEN, buf.length - 1);
  } else {
    ct = buf.subarray(HDR_LEN + NONCE_LEN, Math.max(HDR_LEN + NONCE_LEN, buf.length - TAG_LEN));
    tag = buf.subarray(Math.max(0, buf.length - TAG_LEN));
  }
  const hdr = D('header_unauthenticated')
    ? Buffer.from([LAYOUT_ID, buf[1], buf[2]])
    : buf.subarray(0, HDR_LEN);

  const candidates = D('alias_fallback') ? [alias, ...[...aliases.keys()].filter((a) => a !== alias)] : [alias];
  for (const a of candidates) {
    const st = aliases.get(a);
    if (version < st.min || version > st.current) continue;
    const strictTag = !(D('tag_length_from_key') || D('tag_last_byte_ignored'));
    const d = crypto.createDecipheriv('aes-256-gcm', masterKey(a, version), nonce, strictTag ? { authTagLength: TAG_LEN } : undefined);
    d.setAAD(aad(a, hdr));
    if (D('tag_length_from_key')) {
      try { d.setAuthTag(tag); } catch { continue; }
    } else {
      d.setAuthTag(tag);
    }
    const pt1 = d.update(ct);
    let pt;
    if (D('decrypt_failed_500')) {
      pt = Buffer.concat([pt1, d.final()]);
    } else {
      try {
        pt = Buffer.concat([pt1, d.final()]);
      } catch {
        if (D('tag_not_verified')) pt = pt1; else continue;
      }
    }
    if (!dekLens.includes(pt.length)) continue;
    return { dek: pt, version };
  }
  throw new ApiError(422, 'DECRYPTION_FAILED', 'the encrypted key does not decrypt under this key alias (another alias, a master-key version no longer allowed, or a damaged key)');
}

// ---------------------------------------------------------------- endpoints

function validateAlias(alias, field) {
  if (typeof alias !== 'string') throw bad(`${field} must be a string`);
  const n = Buffer.byteLength(alias);
  if (n === 0 || n > 256) throw bad(`${field} must be 1 to 256 bytes`);
  if (/[\u0000-\u001f\u007f]/.test(alias)) throw bad(`${field} must not contain control characters`);
}

function parseJsonBody(raw) {
  const text = raw.buf.toString('utf8');
  if (D('invalid_json_500')) return JSON.parse(text);
  try { return JSON.parse(text); } catch { throw bad('the body is not valid JSON'); }
}

async function doAuth(req, res, ctx, raw) {
  if (D('auth_debug_header_basic') && req.headers.authorization !== undefined) {
    ctx.extraHeaders['X-Authorization-Received'] = req.headers.authorization;
  }
  let sub;
  let creds = null;
  if (D('auth_no_authorization_500')) {
    const [scheme] = req.headers.authorization.split(' ');
    void scheme;
  }
  const authz = req.headers.authorization;
  if (authz === undefined) throw new ApiError(401, 'UNAUTHORIZED', 'missing Authorization header: send HTTP Basic client credentials', BASIC_CHALLENGE);
  const a = parseAuthorization(authz);
  if (a.scheme === 'bearer' && D('auth_bearer_refresh')) {
    sub = verifyJwt(a.rest, 'auth');
    if (!sub) throw new ApiError(401, 'UNAUTHORIZED', 'the access token is invalid or expired', BASIC_CHALLENGE);
  } else {
    if (a.scheme !== 'basic') throw new ApiError(401, 'UNAUTHORIZED', '/auth takes HTTP Basic client credentials (Authorization: Basic ...)', BASIC_CHALLENGE);
    const c = decodeBasic(a.rest);
    if (!c) throw new ApiError(401, 'UNAUTHORIZED', 'malformed Basic credentials: expected base64 of client_id:client_secret', BASIC_CHALLENGE);
    if (!clientOk(c.id, c.secret)) {
      const msg = D('auth_error_echoes_credentials') ? `invalid client credentials for ${c.id}:${c.secret}` : 'invalid client credentials';
      throw new ApiError(401, 'UNAUTHORIZED', msg, BASIC_CHALLENGE);
    }
    sub = CLIENT_ID;
    creds = { client_id: c.id, client_secret: c.secret };
  }
  if (raw.tooLarge) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the body is larger than ${BODY_LIMIT} bytes`);
  const mt = mediaType(req.headers['content-type']);
  let grants;
  let text = raw.buf.toString('utf8');
  if (D('auth_json_body_accepted') && isJsonType(mt)) {
    const body = parseJsonBody(raw);
    grants = isObj(body) && body.grant_type !== undefined ? [body.grant_type] : [];
    text = grants.length ? `grant_type=${grants[0]}` : '';
  } else if (mt !== 'application/x-www-form-urlencoded') {
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'the /auth body must be application/x-www-form-urlencoded');
  } else {
    grants = new URLSearchParams(text).getAll('grant_type');
  }
  if (D('auth_grant_type_ignored')) {
    // defect: grant_type not looked at
  } else if (D('auth_grant_type_substring')) {
    if (!/grant_type=client_credentials/.test(text)) throw bad('grant_type must be client_credentials');
  } else if (D('auth_grant_type_default') && grants.length === 0) {
    // defect: a missing grant_type is taken as client_credentials
  } else {
    if (grants.length === 0) throw bad('grant_type is required (client_credentials)');
    if (grants.length > 1) throw bad('grant_type must be given once');
    if (grants[0] !== 'client_credentials') throw bad('unsupported grant_type: only client_credentials is accepted');
  }
  const token = issueToken(sub, creds);
  let expiresIn = EXPIRES_IN;
  if (D('expires_in_hardcoded')) expiresIn = 3600;
  if (D('expires_in_string')) expiresIn = String(expiresIn);
  const headers = {};
  if (D('token_in_cookie')) headers['Set-Cookie'] = `byok_token=${token}; Path=/; HttpOnly; SameSite=Strict`;
  sendJson(res, ctx, 200, {
    data: { access_token: token, token_type: D('token_type_jwt') ? 'JWT' : 'Bearer', expires_in: expiresIn },
  }, headers);
}

const decryptCache = new Map();

async function doDecrypt(req, res, ctx, raw, url) {
  requireBearer(req, url, 'decrypt-key');
  if (raw.tooLarge) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the body is larger than ${BODY_LIMIT} bytes`);
  const mt = mediaType(req.headers['content-type']);
  if (D('decrypt_content_type_ignored')) {
    // defect: the body is read as JSON whatever its label
  } else if (D('decrypt_content_type_prefix')) {
    if (!mt.startsWith('application/')) throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json');
  } else if (!isJsonType(mt)) {
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json');
  }
  const body = parseJsonBody(raw);
  if (D('body_null_500')) {
    if (typeof body !== 'object' || Array.isArray(body)) throw bad('the body must be a JSON object {"data": {...}}');
  } else if (!isObj(body)) {
    throw bad('the body must be a JSON object {"data": {...}}');
  }
  const data = body.data;
  if (!D('missing_data_500')) {
    if (data === undefined) throw bad('data is required: {"data": {"key_alias", "encrypted_key"}}');
    if (!isObj(data)) throw bad('data must be an object with key_alias and encrypted_key');
  }
  const alias = data.key_alias;
  const ek = data.encrypted_key;
  if (D('missing_field_404') && alias === undefined) {
    throw new ApiError(404, 'KEY_NOT_FOUND', 'no master key with this key alias');
  }
  if (alias === undefined) throw bad('data.key_alias is required');
  if (D('alias_number_500')) {
    if (!alias) throw bad('data.key_alias is required');
    if (Buffer.byteLength(alias) > 256) throw bad('data.key_alias must be 1 to 256 bytes');
  }
  validateAlias(alias, 'data.key_alias');
  if (ek === undefined) throw bad('data.encrypted_key is required');
  if (typeof ek !== 'string') throw bad('data.encrypted_key must be a string');
  if (D('unknown_alias_500')) {
    void aliases.get(alias).current;
  } else if (!aliases.has(alias)) {
    throw new ApiError(404, 'KEY_NOT_FOUND', 'no master key with this key alias');
  }
  if (D('decrypt_kdf_per_call')) unlockKeystore();
  let { dek, version } = openEnvelope(alias, ek);
  if (D('decrypt_cache_by_alias')) {
    const k = `${alias}/v${version}`;
    if (decryptCache.has(k)) dek = decryptCache.get(k); else decryptCache.set(k, dek);
  }
  let plaintext = dek.toString('base64');
  if (D('plaintext_urlsafe')) plaintext = dek.toString('base64url');
  if (D('plaintext_hex')) plaintext = dek.toString('hex');
  const headers = {};
  if (D('kcv_header_prefix')) headers['X-Key-Check'] = dek.subarray(0, 8).toString('hex');
  sendJson(res, ctx, 200, { data: { plaintext_key: plaintext } }, headers,
    D('decrypt_ok_text_plain') ? 'text/plain; charset=utf-8' : 'application/json');
}

const lastRotation = new Map();

async function doRotate(req, res, ctx, raw, url) {
  if (!D('rotate_no_auth')) requireBearer(req, url, 'rotate-key');
  if (raw.tooLarge) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `the body is larger than ${BODY_LIMIT} bytes`);
  let alias = DEFAULT_ALIAS;
  if (raw.buf.length === 0 && D('rotate_no_body_500')) {
    const parse = (t) => (t ? JSON.parse(t) : undefined);
    const { data } = parse(raw.buf.toString('utf8'));
    void data;
  }
  if (raw.buf.length > 0) {
    if (!isJsonType(mediaType(req.headers['content-type']))) {
      throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'the body must be application/json');
    }
    const body = parseJsonBody(raw);
    if (!isObj(body)) throw bad('the body must be a JSON object {"data": {"key_alias"}}');
    if (body.data !== undefined) {
      if (!isObj(body.data)) throw bad('data must be an object');
      if (body.data.key_alias !== undefined) {
        validateAlias(body.data.key_alias, 'data.key_alias');
        alias = body.data.key_alias;
      }
    }
  }
  if (!aliases.has(alias)) {
    if (D('rotate_unknown_alias_creates')) aliases.set(alias, { current: 1, min: 1 });
    else throw new ApiError(404, 'KEY_NOT_FOUND', 'no master key with this key alias');
  }
  if (D('rotate_answers_default_alias')) alias = DEFAULT_ALIAS;
  if (D('rotate_idempotent_window')) {
    const prev = lastRotation.get(alias);
    if (prev && Date.now() - prev.at < 60_000) {
      sendJson(res, ctx, 200, { data: prev.data });
      return;
    }
  }
  const sealAlias = D('rotate_wraps_default_alias') ? DEFAULT_ALIAS : alias;
  const st = aliases.get(sealAlias);
  if (st.current >= MAX_VERSION) throw new ApiError(503, 'SERVICE_UNAVAILABLE', 'the service is unavailable: no master-key version left for this alias');
  st.current += 1;
  if (D('rotate_forgets_old')) st.min = st.current;
  const dek = newDataKey(D('rotate_plaintext_16') ? 16 : DEK_LEN);
  const data = { encrypted_dek: seal(sealAlias, st.current, dek), key_alias: alias, plaintext_dek: dek.toString('base64') };
  lastRotation.set(alias, { at: Date.now(), data });
  sendJson(res, ctx, 200, { data });
}

function checkRequestHeaders(req) {
  const rid = req.headers['x-request-id'];
  if (rid === undefined || rid === '') throw bad('x-request-id header is required');
  if (!UUID_RE.test(rid)) throw bad('x-request-id must be a UUID');
  const ts = req.headers['x-request-timestamp'];
  if (ts === undefined || ts === '') throw bad('x-request-timestamp header is required');
  let t;
  if (D('timestamp_unparseable_500')) {
    const d = new Date(ts);
    d.toISOString();
    t = d.getTime();
  } else {
    t = parseIso(ts);
    if (Number.isNaN(t)) throw bad('x-request-timestamp must be an ISO 8601 date-time with a time zone');
  }
  const skew = (Date.now() - t) / 1000;
  if (skew > SKEW_SECS || (!D('timestamp_future_accepted') && -skew > SKEW_SECS)) {
    throw bad(`x-request-timestamp is more than ${SKEW_SECS} s away from the service clock`);
  }
  if (D('trace_required') && req.headers['x-trace-id'] === undefined) throw bad('x-trace-id header is required');
}

const ROUTE_RE = /^\/([^/]+)\/byok\/v1\/(auth|decrypt-key|rotate-key)$/;

async function handle(req, res) {
  const ctx = { start: performance.now(), extraHeaders: {}, routerLevel: false };
  const sent = req.headers['x-trace-id'];
  ctx.trace = typeof sent === 'string' && /^[\x20-\x7e]{1,256}$/.test(sent) ? sent : crypto.randomUUID();
  try {
    let raw;
    try { raw = await readBody(req); } catch { return; }
    const url = new URL(req.url, 'http://localhost');
    const m = ROUTE_RE.exec(url.pathname);
    if (!m || m[1] !== PARTNER) {
      ctx.routerLevel = true;
      throw new ApiError(404, 'NOT_FOUND', 'no such endpoint');
    }
    const method = req.method;
    if (D('get_404')) {
      if (method !== 'POST') { ctx.routerLevel = true; throw new ApiError(404, 'NOT_FOUND', 'no such endpoint'); }
    } else if (D('put_treated_as_post')) {
      if (method === 'GET' || method === 'HEAD') { ctx.routerLevel = true; throw new ApiError(405, 'METHOD_NOT_ALLOWED', 'only POST is allowed', { Allow: 'POST' }); }
    } else if (method !== 'POST') {
      ctx.routerLevel = true;
      throw new ApiError(405, 'METHOD_NOT_ALLOWED', 'only POST is allowed', { Allow: 'POST' });
    }
    checkRequestHeaders(req);
    if (m[2] === 'auth') await doAuth(req, res, ctx, raw);
    else if (m[2] === 'decrypt-key') await doDecrypt(req, res, ctx, raw, url);
    else await doRotate(req, res, ctx, raw, url);
  } catch (e) {
    if (e instanceof ApiError) sendError(res, ctx, e);
    else sendError(res, ctx, new ApiError(500, 'INTERNAL_ERROR', 'internal error'));
  }
}

// ---------------------------------------------------------------- main

if (OPTS.cmd === 'wrap') {
  if (!aliases.has(OPTS.alias)) usage(`unknown alias '${OPTS.alias}' (known: ${[...aliases.keys()].join(', ')})`);
  const dek = crypto.randomBytes(DEK_LEN);
  const ek = seal(OPTS.alias, 1, dek);
  process.stdout.write(`{"encrypted_key": "${ek}", "plaintext_key": "${dek.toString('base64')}"}\n`);
} else {
  const server = http.createServer({ requestTimeout: 30_000, headersTimeout: 30_000, keepAliveTimeout: 5_000 }, (req, res) => {
    handle(req, res).catch(() => { try { res.destroy(); } catch { /* ignore */ } });
  });
  server.listen(OPTS.port, '127.0.0.1', () => {
    process.stdout.write(`{"port": ${server.address().port}}\n`);
  });
  const stop = () => { server.close(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
