#!/usr/bin/env python3
"""A customer-hosted key service (BYOK), written from the interface spec.

Serves, on 127.0.0.1:

    POST /acme/byok/v1/auth          HTTP Basic client credentials, form grant_type=client_credentials
    POST /acme/byok/v1/decrypt-key   Bearer token, JSON {"data": {"key_alias", "encrypted_key"}}
    POST /acme/byok/v1/rotate-key    Bearer token, optional JSON {"data": {"key_alias"}}

Usage:

    python3 service.py --port 0 [--defect NAME] [--expires-in N] [--static-key]
        prints one line {"port": N} once listening
    python3 service.py wrap --alias main [--defect NAME]
        prints {"encrypted_key": "byok:v1:...", "plaintext_key": "<base64>"}

Envelope layout (the text after the "byok:v1:" prefix)
------------------------------------------------------
The text after the prefix is URL-safe base64 WITHOUT padding (alphabet A-Z a-z 0-9 - _,
canonical: the unused bits of the last character are zero) of this binary envelope:

    offset        size  field
    0             1     layout byte, 0x01
    1             1     L, length of the alias in bytes (1..255)
    2             L     the key alias, UTF-8 (the alias the key is sealed under)
    2+L           4     master-key version, unsigned big-endian (this service: 1)
    6+L           24    XChaCha20 nonce, fresh from the OS CSPRNG for every seal
    30+L          32    ciphertext of the 32-byte data key
    62+L          16    Poly1305 tag
                        total 78+L bytes ("main": 82 bytes, 110 base64 characters)

Cipher: XChaCha20-Poly1305 (pycryptodome ChaCha20_Poly1305 with a 24-byte nonce) under the
master key of (alias, version). The associated data is the ASCII prefix "byok:v1:" followed
by the header (bytes 0 .. 6+L: layout byte, alias length, alias, version), so the alias and
the version are authenticated with the key; the alias given in a request must also equal the
alias inside the envelope. Master keys are PBKDF2-HMAC-SHA256(MASTER_SEED, "acme/byok/master/"
+ alias + "/v" + version, 600000 iterations), derived once per process and cached, so every
process (serve and wrap) agrees. Data keys are 32 bytes from `secrets`.

Access tokens are HS256 JWTs signed with a key drawn at start (per process), carrying
iss, sub (the client id), aud, iat, nbf, exp (= iat + expires_in), jti and scope.

Test instrumentation (not part of the contract): when BLIND_SECRETS_LOG names a file, every
access token issued and every plaintext data key answered is appended to it, one per line.

`--defect NAME` switches on exactly one deliberate defect (see DEFECTS); an unknown name
exits with status 2.
"""

import argparse
import base64
import binascii
import datetime as dt
import hashlib
import hmac
import http.cookies
import json
import os
import random
import re
import secrets
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from urllib.parse import parse_qs, parse_qsl, urlsplit

from Crypto.Cipher import ChaCha20_Poly1305

# --------------------------------------------------------------------------- settings

PARTNER = "acme"
CLIENT_ID = "svc-client-7"
CLIENT_SECRET = "Rq3-wK8vPz-Lm2xT9cNe"
STATIC_API_KEY = "kk_live_5Jf9Tq2Wm8Rz4Hx"
ALIASES = frozenset({"main", "spare"})
DEFAULT_ALIAS = "main"
MASTER_SEED = bytes.fromhex("3f9c1e7a5b2d4c6e8f0a1b3c5d7e9f21a4c6e8f0b2d4f6a8c0e2b4d6f8a1c3e5")
MASTER_VERSION = 1
KDF_ITERATIONS = 600_000
PREFIX = "byok:v1:"
PREFIX_B = PREFIX.encode("ascii")
LAYOUT_BYTE = 0x01
NONCE_LEN = 24
DEK_LEN = 32
TAG_LEN = 16
MAX_BODY = 64 * 1024
SKEW_SECS = 300
DEFAULT_EXPIRES_IN = 3600
ISSUER = "acme-byok"
AUDIENCE = "acme/byok/v1"
BASE_PATH = f"/{PARTNER}/byok/v1/"
ENDPOINTS = ("auth", "decrypt-key", "rotate-key")
KNOWN_METHODS = ("GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS")

UUID_RE = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
B64URL_RE = re.compile(r"[A-Za-z0-9_-]*")
B64STD_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}")
BEARER_RE = re.compile(r"(?i:bearer) +([A-Za-z0-9\-._~+/]+=*) *")
BASIC_RE = re.compile(r"(?i:basic) +([A-Za-z0-9+/]+=*) *")

# One line per defect: the mistake it makes (the rule each breaks is in defects.json).
DEFECTS = {
    # /auth
    "auth_client_id_case_insensitive": "client id compared without regard to case",
    "auth_secret_strip": "client id and secret stripped of surrounding whitespace before comparing",
    "auth_basic_split_colon": "Basic value split on every colon; a secret followed by ':anything' passes",
    "auth_basic_non_utf8_500": "Basic value decoded as UTF-8 without a guard: 500 on other bytes",
    "auth_bearer_refresh": "a valid access token as Bearer on /auth buys a new token",
    "auth_grant_type_case_insensitive": "grant_type compared without regard to case",
    "auth_grant_type_first_wins": "grant_type given twice: the first one is used",
    "auth_form_credentials": "client_id/client_secret in the form body accepted without Basic",
    "auth_json_body": "/auth also reads a JSON body",
    "auth_charset_refused": "/auth refuses a form labelled with a charset parameter",
    # tokens
    "token_expires_in_float": "expires_in computed from the clock: a JSON float",
    "token_exp_millis": "JWT iat/exp written in milliseconds",
    "token_long_lived": "default token lifetime 30 days",
    "token_exp_leeway": "expired tokens accepted for 60 s more",
    "token_early_expiry": "tokens refused from half their announced lifetime",
    "token_stale_cache": "/auth answers its cached token even once it expired",
    "token_single_active": "a new /auth revokes every earlier token of the client",
    "token_signed_with_client_secret": "JWTs signed (and verified) with the client secret as HMAC key",
    "jwt_alg_none_accepted": "a token whose alg is none (any case) skips signature verification",
    "jwt_expected_signature_leak": "401 for a bad signature quotes the signature expected",
    # bearer check
    "bearer_token_in_query": "token taken from ?access_token= when there is no Authorization",
    "bearer_token_from_cookie": "token taken from the access_token cookie when there is no Authorization",
    "bearer_scheme_not_checked": "the last word of Authorization is the token, whatever the scheme",
    "static_key_prefix_match": "static key compared as a prefix",
    "rotate_accepts_basic": "/rotate-key also accepts the client credentials as HTTP Basic",
    "cache_before_auth": "decrypt cache consulted before the bearer check",
    # envelope and cryptography
    "envelope_header_unauthenticated": "header (alias) not in the associated data nor compared",
    "envelope_trailing_bytes": "bytes after the tag ignored",
    "envelope_prefix_replace": "prefix removed with str.replace wherever it appears",
    "envelope_lenient_base64": "non-alphabet characters silently dropped by the base64 decoder",
    "envelope_short_tag": "a shortened tag compared over its own length",
    "envelope_mac_failure_500": "authentication failure not caught: 500",
    "envelope_prefix_case_insensitive": "prefix compared without regard to case",
    "alias_from_envelope": "master key chosen by the alias inside the envelope, not the request's",
    "alias_case_insensitive": "key_alias lower-cased before lookup on /decrypt-key",
    "nonce_le_counter": "nonce is a per-process little-endian counter per alias",
    "nonce_time_based": "nonce derived from the alias and the current second",
    "dek_mersenne_twister": "data keys from random.randbytes (Mersenne Twister)",
    "dek_seeded_rng": "data keys from a Mersenne Twister seeded with a constant",
    "decrypt_cache_prefix_key": "decrypt cache keyed by the first 40 characters of encrypted_key",
    "decrypt_cache_ignores_alias": "decrypt cache keyed by encrypted_key alone",
    # validation and robustness
    "json_errors_narrow": "only json.JSONDecodeError caught: deep nesting, huge integers, bad UTF-8 give 500",
    "non_ascii_key_500": "a non-ASCII encrypted_key gives 500",
    "rotate_alias_unhashable_500": "/rotate-key key_alias not type-checked: a list or object gives 500",
    "content_length_invalid_500": "Content-Length parsed with int() unguarded: 500",
    "ctype_prefix_match": "/decrypt-key content type compared as a prefix of application/json",
    "body_limit_chunked_unbounded": "the body limit applies to Content-Length only, not to chunked bodies",
    "rotate_no_body_limit": "/rotate-key reads its body without the size limit",
    "rotate_ignores_content_type": "/rotate-key parses its body as JSON whatever its Content-Type",
    "missing_fields_wrong_code": "a missing field answered 404 KEY_NOT_FOUND",
    # methods and HTTP
    "methods_no_allow": "405 answers carry no Allow header",
    "methods_unknown_501": "methods beyond the six common ones answered 501",
    "head_with_body": "HEAD answers carry a body",
    "get_decrypts": "GET on /decrypt-key is served like POST",
    "early_answer_no_drain": "a bearer refusal is answered before the body is read, and the connection kept",
    "single_threaded": "one request at a time (HTTPServer, not threading)",
    "slow_kdf_per_call": "the master key derived (PBKDF2 600k) on every /decrypt-key call",
    # tracing headers
    "trace_id_lowercased": "X-Trace-Id echoed in canonical lower case",
    "trace_id_missing_on_errors": "X-Trace-Id only on 2xx answers",
    "trace_id_per_connection": "the trace id of a connection's first request echoed on all its answers",
    "trace_id_required": "a call without x-trace-id refused",
    "request_duration_with_unit": "X-Request-Duration written with a unit (12.3ms)",
    "naive_timestamp_500": "a timestamp without a UTC offset gives 500",
    "skew_window_59min": "x-request-timestamp allowed 59 minutes from the clock",
    "request_id_unvalidated": "x-request-id neither required nor checked",
    # error answers
    "error_flat_shape": "errors answered {code, message} without the error object",
    "error_problem_json": "errors labelled application/problem+json",
    "error_code_lowercase": "error codes in lower case",
    "error_message_multiline": "validation messages span several lines",
    "error_with_200": "DECRYPTION_FAILED answered with status 200",
    "no_www_authenticate": "401 answers carry no WWW-Authenticate",
    "no_cache_control": "no Cache-Control: no-store on any answer",
    # secrets
    "secret_masked_hint": "a wrong secret's 401 shows the expected secret masked (5 first, 4 last characters)",
    "static_key_position_oracle": "a wrong static key's 401 says where it first differs",
    "key_fingerprint_header": "decrypt/rotate answers carry X-Key-Fingerprint, the first 4 key bytes in hex",
    "token_set_cookie": "/auth also sets the token as a cookie",
    "token_echo_in_error": "a refused bearer token's last 12 characters quoted in the 401",
    # answer format
    "plaintext_dek_urlsafe": "plaintext_dek in URL-safe base64",
    "plaintext_trailing_newline": "plaintext_key from base64.encodebytes (ends with a line break)",
    # rotation
    "rotate_revokes_old": "a rotation revokes the alias's previous rotated key",
    "rotate_reuses_dek": "a rotation re-wraps the alias's current data key",
    "rotate_default_alias_seal": "rotated key sealed under the default alias, answered as the alias asked",
    "rotate_creates_alias": "rotating an unknown alias creates it",
    "rotate_requires_body": "/rotate-key without a body refused",
}

DEFECT = None
EXPIRES_IN = DEFAULT_EXPIRES_IN
STATIC_MODE = False
SIGNING_KEY = secrets.token_bytes(32)


def D(name):
    """True when the defect `name` is switched on."""
    if name not in DEFECTS:
        raise KeyError(name)
    return DEFECT == name


# --------------------------------------------------------------------------- secrets log

_LOG_LOCK = threading.Lock()


def log_secret(value):
    path = os.environ.get("BLIND_SECRETS_LOG")
    if not path:
        return
    with _LOG_LOCK:
        with open(path, "a", encoding="utf-8") as f:
            f.write(value.rstrip("\n") + "\n")


# --------------------------------------------------------------------------- encodings


def b64u_enc(raw):
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def b64u_dec_strict(text):
    """URL-safe base64 without padding, canonical. Raises ValueError."""
    if not B64URL_RE.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64u_enc(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def b64std(raw):
    return base64.b64encode(raw).decode("ascii")


# --------------------------------------------------------------------------- master keys

_MASTER_CACHE = {}
_MASTER_LOCK = threading.Lock()
_EXTRA_ALIASES = set()  # rotate_creates_alias


def known_alias(alias):
    return alias in ALIASES or (D("rotate_creates_alias") and alias in _EXTRA_ALIASES)


def _derive_master(alias, version):
    info = b"acme/byok/master/" + alias.encode("utf-8") + b"/v" + str(version).encode("ascii")
    return hashlib.pbkdf2_hmac("sha256", MASTER_SEED, info, KDF_ITERATIONS, 32)


def master_key(alias, version=MASTER_VERSION):
    if D("slow_kdf_per_call"):
        return _derive_master(alias, version)
    key = (alias, version)
    with _MASTER_LOCK:
        if key not in _MASTER_CACHE:
            _MASTER_CACHE[key] = _derive_master(alias, version)
        return _MASTER_CACHE[key]


# --------------------------------------------------------------------------- randomness

_SEEDED_RNG = random.Random(0xAC3E_2026)
_COUNTERS = {}
_COUNTER_LOCK = threading.Lock()


def new_dek():
    if D("dek_mersenne_twister"):
        return random.randbytes(DEK_LEN)
    if D("dek_seeded_rng"):
        return _SEEDED_RNG.randbytes(DEK_LEN)
    return secrets.token_bytes(DEK_LEN)


def new_nonce(alias):
    if D("nonce_le_counter"):
        with _COUNTER_LOCK:
            n = _COUNTERS.get(alias, 0) + 1
            _COUNTERS[alias] = n
        return n.to_bytes(8, "little") + bytes(NONCE_LEN - 8)
    if D("nonce_time_based"):
        return hashlib.sha256(f"{alias}|{int(time.time())}".encode()).digest()[:NONCE_LEN]
    return secrets.token_bytes(NONCE_LEN)


# --------------------------------------------------------------------------- envelope


class ApiError(Exception):
    def __init__(self, status, code, message, headers=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def _aad(header):
    if D("envelope_header_unauthenticated"):
        return PREFIX_B
    return PREFIX_B + header


def seal(alias, dek):
    alias_b = alias.encode("utf-8")
    header = bytes([LAYOUT_BYTE, len(alias_b)]) + alias_b + MASTER_VERSION.to_bytes(4, "big")
    nonce = new_nonce(alias)
    cipher = ChaCha20_Poly1305.new(key=master_key(alias), nonce=nonce)
    cipher.update(_aad(header))
    ct, tag = cipher.encrypt_and_digest(dek)
    return PREFIX + b64u_enc(header + nonce + ct + tag)


def _bad_key(message):
    return ApiError(400, "INVALID_REQUEST", message)


def _undecryptable(alias):
    return ApiError(422, "DECRYPTION_FAILED", f"the encrypted key does not decrypt under alias '{alias}'")


def parse_envelope(ek):
    """Text of an encrypted key -> raw envelope bytes. Raises ApiError."""
    if D("envelope_prefix_case_insensitive"):
        if ek[: len(PREFIX)].lower() != PREFIX:
            raise _bad_key("encrypted_key must start with byok:v1:")
        text = ek[len(PREFIX):]
    elif D("envelope_prefix_replace"):
        if PREFIX not in ek:
            raise _bad_key("encrypted_key must start with byok:v1:")
        text = ek.replace(PREFIX, "")
    else:
        if not ek.startswith(PREFIX):
            raise _bad_key("encrypted_key must start with byok:v1:")
        text = ek[len(PREFIX):]
    if len(text) > 1024:
        raise _bad_key("encrypted_key is too long")
    if D("envelope_lenient_base64"):
        try:
            return base64.urlsafe_b64decode(text + "==")
        except (binascii.Error, ValueError):
            raise _bad_key("encrypted_key is not base64url after byok:v1:")
    if D("non_ascii_key_500"):
        try:
            data = text.encode("ascii")  # UnicodeEncodeError (a ValueError) escapes
            if not re.fullmatch(rb"[A-Za-z0-9_-]*", data) or len(data) % 4 == 1:
                raise binascii.Error("not base64url")
            raw = base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))
            if b64u_enc(raw) != text:
                raise binascii.Error("not canonical")
            return raw
        except binascii.Error:
            raise _bad_key("encrypted_key is not base64url after byok:v1:")
    try:
        return b64u_dec_strict(text)
    except ValueError:
        raise _bad_key("encrypted_key is not base64url after byok:v1:")


def open_envelope(alias, ek):
    raw = parse_envelope(ek)
    if len(raw) < 2 or raw[1] == 0:
        raise _bad_key("encrypted_key is too short")
    n = raw[1]
    full = 78 + n
    if D("envelope_trailing_bytes"):
        if len(raw) < full:
            raise _bad_key("encrypted_key has the wrong length")
    elif D("envelope_short_tag"):
        if not (full - TAG_LEN + 4 <= len(raw) <= full):
            raise _bad_key("encrypted_key has the wrong length")
    elif len(raw) != full:
        raise _bad_key("encrypted_key has the wrong length")
    if raw[0] != LAYOUT_BYTE:
        raise ApiError(422, "DECRYPTION_FAILED", "unsupported envelope layout")
    header = raw[: 6 + n]
    env_alias = raw[2: 2 + n]
    version = int.from_bytes(raw[2 + n: 6 + n], "big")
    nonce = raw[6 + n: 30 + n]
    ct = raw[30 + n: 62 + n]
    tag = raw[62 + n: 78 + n]
    if D("alias_from_envelope"):
        try:
            key_alias = env_alias.decode("utf-8")
        except UnicodeDecodeError:
            raise _undecryptable(alias)
        if not known_alias(key_alias):
            raise _undecryptable(alias)
    elif D("envelope_header_unauthenticated"):
        key_alias = alias
    else:
        if env_alias != alias.encode("utf-8"):
            raise _undecryptable(alias)
        key_alias = alias
    if version != MASTER_VERSION:
        raise ApiError(422, "DECRYPTION_FAILED", "unknown master-key version")
    cipher = ChaCha20_Poly1305.new(key=master_key(key_alias, version), nonce=nonce)
    cipher.update(_aad(header))
    if D("envelope_short_tag"):
        dek = cipher.decrypt(ct)
        check = ChaCha20_Poly1305.new(key=master_key(key_alias, version), nonce=nonce)
        check.update(_aad(header))
        _, full_tag = check.encrypt_and_digest(dek)
        if not hmac.compare_digest(full_tag[: len(tag)], tag):
            raise _undecryptable(alias)
    elif D("envelope_mac_failure_500"):
        dek = cipher.decrypt_and_verify(ct, tag)  # ValueError escapes
    else:
        try:
            dek = cipher.decrypt_and_verify(ct, tag)
        except ValueError:
            raise _undecryptable(alias)
    return dek, nonce


def nonce_of(ek):
    raw = b64u_dec_strict(ek[len(PREFIX):])
    n = raw[1]
    return raw[6 + n: 30 + n]


# --------------------------------------------------------------------------- tokens

_STATE_LOCK = threading.Lock()
_TOKEN_CACHE = {}      # token_stale_cache: client -> (token, iat, exp)
_ACTIVE_JTI = {}       # token_single_active: client -> jti
_DECRYPT_CACHE = {}    # cache defects
_REVOKED = set()       # rotate_revokes_old: nonces
_CURRENT = {}          # alias -> (nonce, dek) of the last rotation


def _jwt_key():
    if D("token_signed_with_client_secret"):
        return CLIENT_SECRET.encode("utf-8")
    return SIGNING_KEY


def _sign(header, claims):
    h = b64u_enc(json.dumps(header, separators=(",", ":")).encode())
    p = b64u_enc(json.dumps(claims, separators=(",", ":")).encode())
    sig = hmac.new(_jwt_key(), f"{h}.{p}".encode("ascii"), hashlib.sha256).digest()
    return f"{h}.{p}.{b64u_enc(sig)}"


def issue_token(client_id):
    """-> (token, expires_in)"""
    if D("token_stale_cache"):
        with _STATE_LOCK:
            cached = _TOKEN_CACHE.get(client_id)
        if cached and cached[2] > cached[1]:  # meant: cached exp > now
            return cached[0], EXPIRES_IN
    now_f = time.time()
    now = int(now_f)
    exp = now + EXPIRES_IN
    claims = {
        "iss": ISSUER,
        "sub": client_id,
        "aud": AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": exp,
        "jti": secrets.token_hex(16),
        "scope": "byok.decrypt byok.rotate",
    }
    if D("token_exp_millis"):
        claims["iat"] = claims["nbf"] = now * 1000
        claims["exp"] = exp * 1000
    token = _sign({"alg": "HS256", "typ": "JWT"}, claims)
    with _STATE_LOCK:
        if D("token_stale_cache"):
            _TOKEN_CACHE[client_id] = (token, now, exp)
        if D("token_single_active"):
            _ACTIVE_JTI[client_id] = claims["jti"]
    expires_in = EXPIRES_IN
    if D("token_expires_in_float"):
        expires_in = exp - now_f
    return token, expires_in


def _json_obj(raw):
    obj = json.loads(raw.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError("not an object")
    return obj


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def verify_jwt(token):
    """-> claims, or raises ApiError 401."""
    refuse = ApiError(401, "UNAUTHORIZED", "invalid or expired bearer token")
    parts = token.split(".")
    if len(parts) != 3:
        raise refuse
    h, p, s = parts
    try:
        header = _json_obj(b64u_dec_strict(h))
        claims = _json_obj(b64u_dec_strict(p))
        sig = b64u_dec_strict(s)
    except (ValueError, RecursionError):
        raise refuse
    alg = header.get("alg")
    if D("jwt_alg_none_accepted") and isinstance(alg, str) and alg.lower() == "none":
        pass
    else:
        if alg != "HS256":
            raise refuse
        expected = hmac.new(_jwt_key(), f"{h}.{p}".encode("ascii"), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, sig):
            if D("jwt_expected_signature_leak"):
                raise ApiError(401, "UNAUTHORIZED",
                               f"token signature mismatch (expected {b64u_enc(expected)})")
            raise refuse
    exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf", claims.get("iat"))
    if not (_int(exp) and _int(iat) and _int(nbf)):
        raise refuse
    now = time.time()
    if D("token_exp_millis"):
        exp, iat, nbf = exp / 1000, iat / 1000, nbf / 1000
    limit = exp
    if D("token_exp_leeway"):
        limit = exp + 60
    if D("token_early_expiry"):
        limit = iat + (exp - iat) / 2
    if now >= limit or nbf > now + 5:
        raise refuse
    if claims.get("iss") != ISSUER or claims.get("aud") != AUDIENCE or claims.get("sub") != CLIENT_ID:
        raise refuse
    if D("token_single_active"):
        with _STATE_LOCK:
            if _ACTIVE_JTI.get(CLIENT_ID) != claims.get("jti"):
                raise refuse
    return claims


# --------------------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "acme-byok/1.0"
    sys_version = ""
    timeout = 30

    def log_message(self, fmt, *args):  # no access log: headers carry secrets
        pass

    def version_string(self):
        return self.server_version

    # ---- per request state

    def parse_request(self):
        self._t0 = time.monotonic()
        self._trace_out = None
        self._body_read = False
        self._endpoint = None
        return super().parse_request()

    def _begin(self):
        tid = self.headers.get("x-trace-id")
        out = None
        if tid is not None:
            tid = tid.strip()
            if 0 < len(tid) <= 200 and all(0x21 <= ord(c) <= 0x7E for c in tid):
                out = tid
                if D("trace_id_lowercased") and UUID_RE.fullmatch(tid):
                    out = str(uuid.UUID(tid))
        if out is None:
            out = str(uuid.uuid4())
        if D("trace_id_per_connection"):
            if getattr(self, "_conn_trace", None) is None:
                self._conn_trace = out
            out = self._conn_trace
        self._trace_out = out

    def __getattr__(self, name):
        if name.startswith("do_") and name != "do_POST":
            method = name[3:]
            if D("methods_unknown_501") and method not in KNOWN_METHODS:
                raise AttributeError(name)
            if D("get_decrypts") and method == "GET":
                return self._get_maybe_decrypt
            return self._not_allowed
        raise AttributeError(name)

    # ---- writing answers

    def _write(self, status, payload, content_type="application/json", headers=None):
        if isinstance(payload, (bytes, bytearray)):
            data = bytes(payload)
        else:
            data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if not D("no_cache_control"):
            self.send_header("Cache-Control", "no-store")
            self.send_header("Pragma", "no-cache")
        if self._trace_out is None:
            self._begin()
        if not (D("trace_id_missing_on_errors") and status >= 400):
            self.send_header("X-Trace-Id", self._trace_out)
        ms = (time.monotonic() - getattr(self, "_t0", time.monotonic())) * 1000.0
        if D("request_duration_with_unit"):
            self.send_header("X-Request-Duration", f"{ms:.3f}ms")
        else:
            self.send_header("X-Request-Duration", f"{ms:.3f}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" or D("head_with_body"):
            self.wfile.write(data)
        self.wfile.flush()

    def _error(self, status, code, message, headers=None):
        headers = dict(headers or {})
        if status == 401 and not D("no_www_authenticate"):
            scheme = "Basic" if self._endpoint == "auth" else "Bearer"
            headers.setdefault("WWW-Authenticate", f'{scheme} realm="{PARTNER}-byok"')
        if status == 405:
            if D("methods_no_allow"):
                headers.pop("Allow", None)
            else:
                headers["Allow"] = "POST"
        if D("error_with_200") and code == "DECRYPTION_FAILED":
            status = 200
        if not self._body_read and not D("early_answer_no_drain"):
            self._discard_body()
        if D("error_code_lowercase"):
            code = code.lower()
        if D("error_flat_shape"):
            body = {"code": code, "message": message}
        else:
            body = {"error": {"code": code, "message": message}}
        ctype = "application/problem+json" if D("error_problem_json") else "application/json"
        self._write(status, body, ctype, headers)

    def send_error(self, code, message=None, explain=None):
        """Errors raised by http.server itself (bad request line, too many headers, 501)."""
        codes = {400: "INVALID_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
                 413: "PAYLOAD_TOO_LARGE", 414: "INVALID_REQUEST", 431: "INVALID_REQUEST",
                 501: "NOT_IMPLEMENTED", 505: "INVALID_REQUEST"}
        self.close_connection = True
        self._body_read = True
        if not hasattr(self, "_t0"):
            self._t0 = time.monotonic()
        if getattr(self, "_trace_out", None) is None:
            self._trace_out = str(uuid.uuid4()) if not hasattr(self, "headers") else None
        try:
            # never quote http.server's message: it holds the request line (and any query)
            msg = {400: "malformed HTTP request", 414: "request target too long",
                   431: "request header fields too large", 501: f"{self.command} is not supported",
                   505: "HTTP version not supported"}.get(int(code), "the request could not be served")
            msg = re.sub(r"[^\x20-\x7e]", "?", msg)[:200]
            if not hasattr(self, "command") or self.command is None:
                self.command = "POST"
            self._error(int(code), codes.get(int(code), "INTERNAL_ERROR"), msg)
        except Exception:
            pass

    # ---- reading bodies

    def _linger_close(self):
        """Close after an answer while the client may still be sending: read what it sends
        for a short while, so that no reset destroys the answer."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(0.5)
            deadline = time.monotonic() + 1.5
            got = 0
            while time.monotonic() < deadline and got < 8 * 1024 * 1024:
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                got += len(chunk)
        except OSError:
            pass

    def _too_large(self):
        self._body_read = True
        self.close_connection = True
        raise ApiError(413, "PAYLOAD_TOO_LARGE", f"request body over {MAX_BODY} bytes")

    def _read_body(self, limit=MAX_BODY):
        te = self.headers.get("Transfer-Encoding")
        cls = self.headers.get_all("Content-Length") or []
        if te is not None:
            self._body_read = True
            self.close_connection = True
            if te.strip().lower() != "chunked" or cls:
                raise ApiError(400, "INVALID_REQUEST", "unsupported Transfer-Encoding")
            chunked_limit = None if D("body_limit_chunked_unbounded") else limit
            out = bytearray()
            while True:
                line = self.rfile.readline(1024)
                size_text = line.split(b";")[0].strip()
                if not re.fullmatch(rb"[0-9A-Fa-f]{1,8}", size_text):
                    raise ApiError(400, "INVALID_REQUEST", "broken chunked body")
                size = int(size_text, 16)
                if size == 0:
                    while True:
                        t = self.rfile.readline(1024)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    break
                if chunked_limit is not None and len(out) + size > chunked_limit:
                    self._too_large()
                data = self.rfile.read(size)
                if len(data) != size:
                    raise ApiError(400, "INVALID_REQUEST", "broken chunked body")
                out += data
                if self.rfile.read(2) not in (b"\r\n",):
                    raise ApiError(400, "INVALID_REQUEST", "broken chunked body")
            self.close_connection = False
            return bytes(out)
        if not cls:
            self._body_read = True
            return b""
        if D("content_length_invalid_500"):
            n = int(cls[0])
        else:
            if len(set(v.strip() for v in cls)) != 1 or not re.fullmatch(r"[0-9]{1,12}", cls[0].strip()):
                self._body_read = True
                self.close_connection = True
                raise ApiError(400, "INVALID_REQUEST", "invalid Content-Length")
            n = int(cls[0].strip())
        if limit is not None and n > limit:
            self._too_large()
        data = self.rfile.read(n)
        self._body_read = True
        if len(data) != n:
            self.close_connection = True
            raise ApiError(400, "INVALID_REQUEST", "request body cut short")
        return data

    def _discard_body(self):
        try:
            self._read_body()
        except ApiError:
            self.close_connection = True
        except Exception:
            self.close_connection = True
        self._body_read = True

    # ---- routing

    def _route(self):
        path = urlsplit(self.path).path
        if path.startswith(BASE_PATH) and path[len(BASE_PATH):] in ENDPOINTS:
            return path[len(BASE_PATH):]
        return None

    def _not_allowed(self):
        self._begin()
        self._endpoint = self._route()
        if self._endpoint is None:
            return self._error(404, "NOT_FOUND", "no such endpoint")
        self._error(405, "METHOD_NOT_ALLOWED", f"{self.command} is not allowed here; use POST")

    def _get_maybe_decrypt(self):
        if self._route() == "decrypt-key":
            return self.do_POST()
        return self._not_allowed()

    def do_POST(self):
        self._begin()
        big = False
        try:
            self._endpoint = ep = self._route()
            if ep is None:
                raise ApiError(404, "NOT_FOUND", "no such endpoint")
            self._check_tracing()
            if D("early_answer_no_drain") and ep in ("decrypt-key", "rotate-key"):
                self._bearer()
            limit = MAX_BODY
            if D("rotate_no_body_limit") and ep == "rotate-key":
                limit = None
            body = self._read_body(limit)
            if ep == "auth":
                self._auth(body)
            elif ep == "decrypt-key":
                self._decrypt(body)
            else:
                self._rotate(body)
        except ApiError as e:
            big = e.status == 413
            self._error(e.status, e.code, e.message, e.headers)
        except Exception:
            self.close_connection = True
            self._body_read = True
            self._error(500, "INTERNAL_ERROR", "internal error")
        if big:
            self._linger_close()

    # ---- tracing headers

    def _check_tracing(self):
        rid = self.headers.get("x-request-id")
        ts = self.headers.get("x-request-timestamp")
        tid = self.headers.get("x-trace-id")
        if not D("request_id_unvalidated"):
            if rid is None:
                raise ApiError(400, "INVALID_REQUEST", "the x-request-id header is required")
            if not UUID_RE.fullmatch(rid.strip()):
                raise ApiError(400, "INVALID_REQUEST", "x-request-id must be a UUID")
        if tid is None:
            if D("trace_id_required"):
                raise ApiError(400, "INVALID_REQUEST", "the x-trace-id header is required")
        elif not UUID_RE.fullmatch(tid.strip()):
            raise ApiError(400, "INVALID_REQUEST", "x-trace-id must be a UUID")
        if ts is None:
            raise ApiError(400, "INVALID_REQUEST", "the x-request-timestamp header is required")
        bad_ts = ApiError(400, "INVALID_REQUEST", "x-request-timestamp must be an ISO 8601 time with an offset")
        if len(ts) > 64:
            raise bad_ts
        try:
            when = dt.datetime.fromisoformat(ts.strip())
        except ValueError:
            raise bad_ts
        if when.tzinfo is None and not D("naive_timestamp_500"):
            raise bad_ts
        skew_limit = 3540 if D("skew_window_59min") else SKEW_SECS
        if D("naive_timestamp_500"):
            skew = abs((dt.datetime.now(dt.timezone.utc) - when).total_seconds())  # TypeError if naive
        else:
            try:
                skew = abs((dt.datetime.now(dt.timezone.utc) - when).total_seconds())
            except (OverflowError, ValueError, TypeError):
                raise bad_ts
        if skew > skew_limit:
            raise ApiError(400, "INVALID_REQUEST",
                           f"x-request-timestamp is more than {skew_limit} s from the service clock")

    # ---- media types and JSON

    def _media_type(self):
        ctype = self.headers.get("Content-Type")
        if ctype is None:
            return None
        return ctype.split(";", 1)[0].strip().lower()

    def _require_json(self):
        ctype = self.headers.get("Content-Type")
        if D("ctype_prefix_match"):
            ok = ctype is not None and ctype.strip().lower().startswith("application/json")
        else:
            ok = self._media_type() == "application/json"
        if not ok:
            raise ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "the body must be application/json")

    def _invalid(self, what):
        if D("error_message_multiline"):
            return ApiError(400, "INVALID_REQUEST", f"invalid request body:\n  - {what}")
        return ApiError(400, "INVALID_REQUEST", f"invalid request body: {what}")

    def _parse_json(self, body):
        if D("json_errors_narrow"):
            try:
                return json.loads(body)
            except json.JSONDecodeError:
                raise self._invalid("not valid JSON")
        try:
            return json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError):
            raise self._invalid("not valid JSON")

    def _data(self, req):
        if not isinstance(req, dict):
            raise self._invalid("the body must be a JSON object")
        if "data" not in req:
            raise self._invalid("data is missing")
        data = req["data"]
        if not isinstance(data, dict):
            raise self._invalid("data must be an object")
        return data

    def _string_field(self, data, name):
        if name not in data:
            raise self._invalid(f"data.{name} is missing")
        v = data[name]
        if not isinstance(v, str):
            raise self._invalid(f"data.{name} must be a string")
        return v

    # ---- credentials

    def _basic_client(self):
        """Checks Authorization: Basic. -> client id, or raises ApiError 401."""
        refuse = ApiError(401, "UNAUTHORIZED", "invalid client credentials")
        authz = self.headers.get("Authorization")
        if authz is None:
            raise ApiError(401, "UNAUTHORIZED", "client credentials required (HTTP Basic)")
        m = BASIC_RE.fullmatch(authz)
        if not m:
            raise refuse
        try:
            raw = base64.b64decode(m.group(1), validate=True)
        except (binascii.Error, ValueError):
            raise refuse
        if D("auth_basic_non_utf8_500"):
            text = raw.decode("utf-8")
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise refuse
        if ":" not in text:
            raise refuse
        if D("auth_basic_split_colon"):
            parts = text.split(":")
            user, pw = parts[0], parts[1]
        else:
            user, pw = text.split(":", 1)
        return self._check_client(user, pw, refuse)

    def _check_client(self, user, pw, refuse):
        if D("auth_secret_strip"):
            user, pw = user.strip(), pw.strip()
        want_user = CLIENT_ID
        if D("auth_client_id_case_insensitive"):
            user, want_user = user.lower(), want_user.lower()
        ok_user = hmac.compare_digest(user.encode("utf-8", "surrogatepass"), want_user.encode("utf-8"))
        ok_pw = hmac.compare_digest(pw.encode("utf-8", "surrogatepass"), CLIENT_SECRET.encode("utf-8"))
        if ok_user and ok_pw:
            return CLIENT_ID
        if ok_user and D("secret_masked_hint"):
            raise ApiError(401, "UNAUTHORIZED",
                           f"client secret does not match the one on file "
                           f"({CLIENT_SECRET[:5]}\u2026{CLIENT_SECRET[-4:]})")
        raise refuse

    def _bearer(self):
        """Checks Authorization: Bearer on /decrypt-key and /rotate-key. Raises ApiError 401."""
        missing = ApiError(401, "UNAUTHORIZED", "a bearer token is required")
        authz = self.headers.get("Authorization")
        token = None
        if authz is None:
            if D("bearer_token_in_query"):
                q = parse_qs(urlsplit(self.path).query)
                if q.get("access_token"):
                    token = q["access_token"][0]
            if D("bearer_token_from_cookie") and self.headers.get("Cookie"):
                jar = http.cookies.SimpleCookie()
                try:
                    jar.load(self.headers.get("Cookie"))
                except http.cookies.CookieError:
                    pass
                if "access_token" in jar:
                    token = jar["access_token"].value
            if token is None:
                raise missing
        elif D("bearer_scheme_not_checked"):
            words = authz.split()
            if not words:
                raise missing
            token = words[-1]
        else:
            if D("rotate_accepts_basic") and self._endpoint == "rotate-key" and BASIC_RE.fullmatch(authz):
                self._basic_client()
                return "basic"
            m = BEARER_RE.fullmatch(authz)
            if not m:
                raise missing if authz.strip().lower() in ("", "bearer") else \
                    ApiError(401, "UNAUTHORIZED", "invalid or expired bearer token")
            token = m.group(1)
        if STATIC_MODE:
            if D("static_key_prefix_match"):
                if token.startswith(STATIC_API_KEY):
                    return "static"
            elif hmac.compare_digest(token.encode("latin-1", "replace"), STATIC_API_KEY.encode("ascii")):
                return "static"
            if D("static_key_position_oracle") and token.count(".") != 2:
                i = 0
                while i < min(len(token), len(STATIC_API_KEY)) and token[i] == STATIC_API_KEY[i]:
                    i += 1
                raise ApiError(401, "UNAUTHORIZED", f"API key rejected: it differs at character {i + 1}")
        try:
            return verify_jwt(token)
        except ApiError as e:
            if D("token_echo_in_error"):
                raise ApiError(401, "UNAUTHORIZED",
                               f"bearer token ending '\u2026{token[-12:]}' is not valid or has expired")
            raise e

    # ---- endpoints

    def _auth(self, body):
        authz = self.headers.get("Authorization")
        if D("auth_bearer_refresh") and authz is not None and BEARER_RE.fullmatch(authz):
            verify_jwt(BEARER_RE.fullmatch(authz).group(1))
            client = CLIENT_ID
        elif D("auth_form_credentials") and authz is None and \
                self._media_type() == "application/x-www-form-urlencoded":
            form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            if "client_id" in form and "client_secret" in form:
                client = self._check_client(form["client_id"], form["client_secret"],
                                            ApiError(401, "UNAUTHORIZED", "invalid client credentials"))
            else:
                client = self._basic_client()
        else:
            client = self._basic_client()
        mt = self._media_type()
        if D("auth_json_body") and mt == "application/json":
            try:
                req = json.loads(body.decode("utf-8"))
            except (ValueError, RecursionError):
                raise self._invalid("not valid JSON")
            grants = [req.get("grant_type")] if isinstance(req, dict) and "grant_type" in req else []
        else:
            if D("auth_charset_refused"):
                ok = (self.headers.get("Content-Type") or "").strip() == "application/x-www-form-urlencoded"
            else:
                ok = mt == "application/x-www-form-urlencoded"
            if not ok:
                raise ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "the body must be application/x-www-form-urlencoded")
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                raise self._invalid("the form is not UTF-8")
            pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=64) if text else []
            grants = [v for k, v in pairs if k == "grant_type"]
            if D("auth_grant_type_first_wins") and grants:
                grants = grants[:1]
        if len(grants) != 1:
            raise ApiError(400, "INVALID_REQUEST", "grant_type must be given exactly once")
        grant = grants[0]
        if D("auth_grant_type_case_insensitive") and isinstance(grant, str):
            grant = grant.lower()
        if grant != "client_credentials":
            raise ApiError(400, "INVALID_REQUEST", "grant_type must be client_credentials")
        token, expires_in = issue_token(client)
        log_secret(token)
        headers = {}
        if D("token_set_cookie"):
            headers["Set-Cookie"] = f"byok_session={token}; Path=/{PARTNER}/byok; HttpOnly; Secure; SameSite=Strict"
        self._write(200, {"data": {"access_token": token, "token_type": "Bearer", "expires_in": expires_in}},
                    headers=headers)

    def _answer_plaintext(self, dek):
        if D("plaintext_trailing_newline"):
            text = base64.encodebytes(dek).decode("ascii")
        else:
            text = b64std(dek)
        log_secret(b64std(dek))
        headers = {"X-Key-Fingerprint": dek[:4].hex()} if D("key_fingerprint_header") else None
        self._write(200, {"data": {"plaintext_key": text}}, headers=headers)

    def _decrypt(self, body):
        if not D("cache_before_auth"):
            self._bearer()
        self._require_json()
        req = self._parse_json(body)
        data = self._data(req)
        if D("missing_fields_wrong_code"):
            if "key_alias" not in data or "encrypted_key" not in data:
                raise ApiError(404, "KEY_NOT_FOUND", "no key found for the request")
        alias = self._string_field(data, "key_alias")
        ek = self._string_field(data, "encrypted_key")
        if D("cache_before_auth"):
            # a cached key is answered without the token check ("it was authorised before")
            with _STATE_LOCK:
                hit = _DECRYPT_CACHE.get((alias, ek))
            if hit is not None:
                return self._answer_plaintext(hit)
            self._bearer()
        if D("alias_case_insensitive"):
            alias = alias.lower()
        if not known_alias(alias):
            raise ApiError(404, "KEY_NOT_FOUND", "no master key has this alias")
        if D("decrypt_cache_prefix_key") and (alias, ek[:40]) in _DECRYPT_CACHE:
            return self._answer_plaintext(_DECRYPT_CACHE[(alias, ek[:40])])
        if D("decrypt_cache_ignores_alias") and ek in _DECRYPT_CACHE:
            return self._answer_plaintext(_DECRYPT_CACHE[ek])
        dek, nonce = open_envelope(alias, ek)
        if D("rotate_revokes_old"):
            with _STATE_LOCK:
                if nonce in _REVOKED:
                    raise ApiError(403, "KEY_REVOKED", "this data key was revoked by a rotation")
        with _STATE_LOCK:
            if D("cache_before_auth"):
                _DECRYPT_CACHE[(alias, ek)] = dek
            if D("decrypt_cache_prefix_key"):
                _DECRYPT_CACHE[(alias, ek[:40])] = dek
            if D("decrypt_cache_ignores_alias"):
                _DECRYPT_CACHE[ek] = dek
        self._answer_plaintext(dek)

    def _rotate(self, body):
        self._bearer()
        if body == b"":
            if D("rotate_requires_body"):
                raise self._invalid("a body {\"data\": {\"key_alias\"}} is required")
            alias = DEFAULT_ALIAS
        else:
            if not D("rotate_ignores_content_type"):
                self._require_json()
            req = self._parse_json(body)
            if D("rotate_alias_unhashable_500"):
                data = req.get("data") if isinstance(req, dict) else None
                if not isinstance(data, dict):
                    raise self._invalid("data must be an object")
                alias = data.get("key_alias", DEFAULT_ALIAS)
            else:
                alias = self._string_field(self._data(req), "key_alias")
        if alias not in ALIASES and not known_alias(alias):
            if D("rotate_creates_alias") and isinstance(alias, str) and 0 < len(alias) <= 64:
                _EXTRA_ALIASES.add(alias)
            else:
                raise ApiError(404, "KEY_NOT_FOUND", "no master key has this alias")
        seal_alias = DEFAULT_ALIAS if D("rotate_default_alias_seal") else alias
        with _STATE_LOCK:
            current = _CURRENT.get(seal_alias)
        if D("rotate_reuses_dek") and current is not None:
            dek = current[1]
        else:
            dek = new_dek()
        ek = seal(seal_alias, dek)
        with _STATE_LOCK:
            if D("rotate_revokes_old") and current is not None:
                _REVOKED.add(current[0])
            _CURRENT[seal_alias] = (nonce_of(ek), dek)
        if D("plaintext_dek_urlsafe"):
            pt = base64.urlsafe_b64encode(dek).decode("ascii")
        else:
            pt = b64std(dek)
        log_secret(b64std(dek))
        headers = {"X-Key-Fingerprint": dek[:4].hex()} if D("key_fingerprint_header") else None
        self._write(200, {"data": {"encrypted_dek": ek, "key_alias": alias, "plaintext_dek": pt}},
                    headers=headers)


class Threading(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class Single(HTTPServer):
    request_queue_size = 128


# --------------------------------------------------------------------------- CLI


def main(argv):
    global DEFECT, EXPIRES_IN, STATIC_MODE
    if argv and argv[0] == "wrap":
        p = argparse.ArgumentParser(prog="service.py wrap")
        p.add_argument("--alias", default=DEFAULT_ALIAS)
        p.add_argument("--defect")
        a = p.parse_args(argv[1:])
        if a.defect is not None and a.defect not in DEFECTS:
            print(f"unknown defect {a.defect!r}", file=sys.stderr)
            return 2
        DEFECT = a.defect
        if a.alias not in ALIASES:
            print(f"unknown alias {a.alias!r} (known: {', '.join(sorted(ALIASES))})", file=sys.stderr)
            return 2
        dek = new_dek()
        print(json.dumps({"encrypted_key": seal(a.alias, dek), "plaintext_key": b64std(dek)}), flush=True)
        return 0
    p = argparse.ArgumentParser(prog="service.py")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--defect")
    p.add_argument("--expires-in", type=int)
    p.add_argument("--static-key", action="store_true")
    p.add_argument("--list-defects", action="store_true")
    a = p.parse_args(argv)
    if a.list_defects:
        for name, what in DEFECTS.items():
            print(f"{name}\t{what}")
        return 0
    if a.defect is not None and a.defect not in DEFECTS:
        print(f"unknown defect {a.defect!r}", file=sys.stderr)
        return 2
    DEFECT = a.defect
    STATIC_MODE = a.static_key
    if a.expires_in is not None:
        if a.expires_in <= 0:
            print("--expires-in must be above 0", file=sys.stderr)
            return 2
        EXPIRES_IN = a.expires_in
    elif D("token_long_lived"):
        EXPIRES_IN = 30 * 86400
    server_cls = Single if D("single_threaded") else Threading
    httpd = server_cls(("127.0.0.1", a.port), Handler)
    print(json.dumps({"port": httpd.server_address[1]}), flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
