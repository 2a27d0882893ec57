#!/usr/bin/env python3
"""Self-test of the round-4 blind key service (Service.java), Python 3 standard library only.

Starts the service, proves with its own HTTP requests that the baseline keeps every rule, and
that each defect breaks its own rule (and, apart from the few consequences listed in ALSO, no
other). Crypto checks go through the service's own `wrap`.

    python3 selftest.py [-j 3] [--only NAME,...] [--no-collateral] [-v]
"""
import argparse
import base64
import concurrent.futures
import datetime
import hashlib
import hmac
import http.client
import json
import os
import random
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_ID = "jv-client"
SECRET = "Jx9_tQ4mWz-Rk7vNp2Ls"
STATIC = "sk_jv_8Wq3Zt6Lm1Xp9Rv"
BASE = "/acme/byok/v1"
EP = {"auth": BASE + "/auth", "decrypt": BASE + "/decrypt-key", "rotate": BASE + "/rotate-key"}
FORM = "application/x-www-form-urlencoded"
GRANT = b"grant_type=client_credentials"
MIB = 1024 * 1024

# defect -> (the probe it must fail, service arguments)
DEFECTS = {
    "auth_secret_prefix_compare": ("auth.wrong_secret", []),
    "auth_client_id_case_insensitive": ("auth.unknown_client", []),
    "auth_bearer_token_accepted": ("auth.bearer_credentials", []),
    "auth_form_credentials": ("auth.no_authorization", []),
    "auth_malformed_basic_500": ("auth.malformed_basic", []),
    "auth_grant_type_first_wins": ("auth.wrong_grant_type", []),
    "auth_json_body_accepted": ("auth.content_type", []),
    "auth_no_data_wrapper": ("auth.shape", []),
    "auth_opaque_token": ("auth.jwt", []),
    "jwt_exp_millis": ("auth.jwt_exp", []),
    "alg_none_blacklist": ("decrypt.alg_none", []),
    "signature_over_claims_only": ("decrypt.alg_none", []),
    "token_verdict_cache": ("decrypt.tampered_token", []),
    "jwt_key_is_client_secret": ("decrypt.tampered_token", []),
    "token_expiry_leeway": ("token.expired", ["--expires-in", "10"]),
    "token_min_remaining": ("token.reuse", ["--expires-in", "10"]),
    "auth_returns_cached_token": ("token.renewed", ["--expires-in", "10"]),
    "bearer_prefix_strip": ("decrypt.no_token", []),
    "garbage_token_500": ("decrypt.garbage_token", []),
    "basic_on_decrypt": ("decrypt.basic_credentials", []),
    "static_key_prefix_compare": ("decrypt.wrong_api_key", ["--static-key"]),
    "alias_case_insensitive": ("decrypt.unknown_alias", []),
    "shared_master_key": ("decrypt.other_alias", []),
    "prefix_case_insensitive": ("decrypt.wrong_prefix", []),
    "prefix_optional": ("decrypt.missing_prefix", []),
    "any_version_prefix": ("decrypt.v2_prefix", []),
    "short_envelope_500": ("decrypt.bad_base64", []),
    "header_not_authenticated": ("decrypt.flipped_first", []),
    "tag_first_byte_unchecked": ("decrypt.flipped_tag", []),
    "tag_length_from_envelope": ("decrypt.truncated_key", []),
    "trailing_bytes_ignored": ("decrypt.extended_key", []),
    "missing_alias_defaults": ("decrypt.missing_fields", []),
    "body_cast_500": ("decrypt.malformed_body", []),
    "json_content_type_prefix": ("decrypt.content_type", []),
    "oversized_chunked": ("decrypt.oversized", []),
    "plaintext_urlsafe": ("decrypt.plaintext", []),
    "rotate_answers_default_alias": ("rotate.alias", []),
    "rotate_seals_default_alias": ("rotate.roundtrip", []),
    "rotate_dek_16_bytes": ("rotate.plaintext", []),
    "rotate_requires_body": ("rotate.body", []),
    "rotate_unknown_alias_creates": ("rotate.unknown_alias", []),
    "counter_nonce": ("rotate.unique_nonce", []),
    "seeded_dek": ("rotate.fresh", []),
    "key_id_from_key_bytes": ("rotate.key_hidden", []),
    "rotate_drops_old_master": ("rotate.old_keys", []),
    "trace_echo_normalised": ("headers.trace_echo", []),
    "trace_id_required": ("headers.no_trace_id", []),
    "timestamp_parse_500": ("headers.malformed", []),
    "timestamp_future_accepted": ("headers.skewed_timestamp", []),
    "auth_get_served": ("methods.auth", []),
    "rotate_put_served": ("methods.rotate", []),
    "decrypt_405_no_allow": ("methods.decrypt", []),
    "error_problem_json": ("errors.json", []),
    "error_oauth_shape": ("errors.shape", []),
    "www_authenticate_bearer_everywhere": ("errors.www_authenticate", []),
    "no_store_auth_only": ("errors.no_store", []),
    "leak_basic_echo": ("errors.no_secret", []),
    "leak_token_in_error": ("errors.no_secret", []),
    "leak_masked_secret": ("errors.no_secret", []),
    "leak_key_check_header": ("errors.no_secret", []),
    "pbkdf2_per_call": ("load.p50", []),
}

# Consequences a defect cannot avoid: the same rule seen on the other endpoint, or a check that is
# a superset of the one broken. Anything else failing next to the defect's own probe fails the test.
ALSO = {
    "alg_none_blacklist": {"rotate.alg_none"},
    "signature_over_claims_only": {"rotate.alg_none"},
    "token_verdict_cache": {"rotate.tampered_token"},
    "jwt_key_is_client_secret": {"rotate.tampered_token"},
    "bearer_prefix_strip": {"rotate.no_token"},
    "garbage_token_500": {"rotate.garbage_token"},
    "static_key_prefix_compare": {"rotate.wrong_api_key"},
    "header_not_authenticated": {"decrypt.flipped_any_byte"},
    "tag_first_byte_unchecked": {"decrypt.flipped_any_byte"},
    "pbkdf2_per_call": {"load.p99"},
    # once the first token expired, /auth keeps answering it: everything after needs a token
    "auth_returns_cached_token": {"*"},
}

ERROR_CODES = {401: {"UNAUTHORIZED"}, 400: {"INVALID_REQUEST"}, 404: {"KEY_NOT_FOUND"},
               403: {"KEY_DISABLED", "KEY_REVOKED"}, 422: {"DECRYPTION_FAILED"}, 429: {"RATE_LIMITED"},
               503: {"SERVICE_UNAVAILABLE"}, 500: {"INTERNAL_ERROR"}, 405: {"METHOD_NOT_ALLOWED"},
               413: {"PAYLOAD_TOO_LARGE"}, 415: {"UNSUPPORTED_MEDIA_TYPE", "INVALID_REQUEST"}}


def now_ts(offset=0.0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def b64(b):
    return base64.b64encode(b).decode()


def b64url(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def std_b64_strict(s):
    """bytes of standard base64 text (padding optional), or None"""
    if not isinstance(s, str) or any(c not in string.ascii_letters + string.digits + "+/=" for c in s):
        return None
    if "=" not in s:
        s += "=" * (-len(s) % 4)
    try:
        return base64.b64decode(s, validate=True)
    except Exception:
        return None


def any_b64(s):
    try:
        return base64.b64decode(s.replace("-", "+").replace("_", "/") + "=" * (-len(s) % 4))
    except Exception:
        return None


class Resp:
    def __init__(self, ep, method, status, headers, body, sent):
        self.ep, self.method, self.status, self.headers, self.body, self.sent = ep, method, status, headers, body, sent
        self.text = body.decode("utf-8", "replace")
        try:
            self.json = json.loads(self.text)
        except Exception:
            self.json = None

    def h(self, name):
        return self.headers.get(name.lower())

    def media(self):
        ct = self.h("content-type")
        return ct.split(";")[0].strip().lower() if ct else None

    def __repr__(self):
        return "%s %s -> %s %s" % (self.method, self.ep, self.status, self.text[:160])


def is4xx(r):
    return r is not None and 400 <= r.status < 500


# How the service is started: the real single-file source mode by default; the defect jobs may use
# classes compiled once with javac (same source, no second-long compile per start; see main()).
SOURCE_CMD = ["java", "Service.java"]
RUN_CMD = list(SOURCE_CMD)

# A probe whose verdict depends on the machine's load more than on the service: reported, not judged.
NOISY = {"load.p99"}


class Svc:
    """One service process plus the state a probe run collects."""

    def __init__(self, defect=None, args=(), cmd=None):
        cmd0 = cmd or RUN_CMD
        self.defect, self.args = defect, list(args)
        self.static = "--static-key" in self.args
        self.log = []            # every Resp
        self.secrets_text = set()  # client secret, static key, Basic secrets sent
        self.tokens = set()      # issued and sent bearer tokens
        self.keys = set()        # plaintext keys (bytes)
        self.rotated = []        # (alias, encrypted_dek, plaintext bytes)
        self.lock = threading.Lock()
        self.secrets_text.add(SECRET)
        if self.static:
            self.secrets_text.add(STATIC)
        self.slog = tempfile.NamedTemporaryFile(prefix="r4secrets", delete=False).name
        cmd = cmd0 + ["--port", "0"] + (["--defect", defect] if defect else []) + self.args
        env = dict(os.environ, BLIND_SECRETS_LOG=self.slog)
        self.proc = subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        wcmd = cmd0 + ["wrap", "--alias", "gold"] + (["--defect", defect] if defect else [])
        w = subprocess.run(wcmd, cwd=HERE, capture_output=True, text=True, timeout=300)
        if w.returncode != 0:
            raise RuntimeError("wrap failed: " + w.stderr)
        wj = json.loads(w.stdout)
        self.ek = wj["encrypted_key"]
        self.pk = base64.b64decode(wj["plaintext_key"])
        self.keys.add(self.pk)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("service did not start: " + self.proc.stderr.read())
        self.port = json.loads(line)["port"]
        self.trace_upper = False

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        try:
            os.unlink(self.slog)
        except OSError:
            pass

    # ---- requests ----
    def std_headers(self):
        with self.lock:
            self.trace_upper = not self.trace_upper
            up = self.trace_upper
        t = str(uuid.uuid4())
        return {"x-request-id": str(uuid.uuid4()), "x-request-timestamp": now_ts(),
                "x-trace-id": t.upper() if up else t}

    def req(self, method, ep, body=b"", headers=None, std=True, query="", drop=(), timeout=30):
        hs = self.std_headers() if std else {}
        for k in drop:
            hs.pop(k, None)
        hs.update(headers or {})
        if isinstance(body, str):
            body = body.encode()
        path = EP.get(ep, ep) + query
        authz = hs.get("Authorization")
        if authz is not None:
            self._learn_authz(authz)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for k, v in hs.items():
                conn.putheader(k, v)
            if body or method in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            r = conn.getresponse()
            data = r.read()
            headers = {k.lower(): v for k, v in r.getheaders()}
            resp = Resp(ep, method, r.status, headers, data, hs)
        finally:
            conn.close()
        self._record(resp)
        return resp

    def _learn_authz(self, authz):
        parts = authz.split(" ", 1)
        if len(parts) == 2 and parts[0].lower() == "basic":
            try:
                dec = base64.b64decode(parts[1], validate=True).decode()
                if ":" in dec:
                    s = dec.split(":", 1)[1]
                    if len(s) >= 6:
                        self.secrets_text.add(s)
            except Exception:
                pass
        elif len(parts) == 2 and parts[0].lower() == "bearer" and len(parts[1].strip()) >= 8:
            self.tokens.add(parts[1].strip())

    def _record(self, resp):
        with self.lock:
            self.log.append(resp)
        if resp.status == 200 and resp.json is not None and isinstance(resp.json, dict):
            d = resp.json.get("data") if isinstance(resp.json.get("data"), dict) else resp.json
            if resp.ep == "auth" and isinstance(d.get("access_token"), str):
                self.tokens.add(d["access_token"])
            for k in ("plaintext_key", "plaintext_dek"):
                if isinstance(d.get(k), str):
                    kb = any_b64(d[k])
                    if kb:
                        self.keys.add(kb)

    def raw(self, head, body_iter, ep):
        """send a request by hand; answer Resp, or None when the service closed without answering"""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        data = b""
        try:
            s.sendall(head)
            try:
                for chunk in body_iter:
                    s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            while True:
                try:
                    b = s.recv(65536)
                except (ConnectionResetError, socket.timeout):
                    break
                if not b:
                    break
                data += b
        finally:
            s.close()
        if not data.startswith(b"HTTP/1.1 "):
            return None
        head_b, _, rest = data.partition(b"\r\n\r\n")
        lines = head_b.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0") or 0)
        resp = Resp(ep, "POST", status, headers, rest[:n], {})
        self._record(resp)
        return resp

    # ---- helpers ----
    def basic(self, cid=CLIENT_ID, secret=SECRET):
        return "Basic " + b64(("%s:%s" % (cid, secret)).encode())

    def auth(self, authz="__default__", body=GRANT, ctype=FORM, method="POST", **kw):
        h = {}
        if authz == "__default__":
            authz = self.basic()
        if authz is not None:
            h["Authorization"] = authz
        if ctype is not None:
            h["Content-Type"] = ctype
        return self.req(method, "auth", body, h, **kw)

    @staticmethod
    def tokdata(r):
        if r.json is None or not isinstance(r.json, dict):
            return {}
        return r.json["data"] if isinstance(r.json.get("data"), dict) else r.json

    def token(self):
        r = self.auth()
        t = self.tokdata(r).get("access_token")
        if r.status != 200 or not isinstance(t, str):
            raise ProbeError("no token from /auth: %r" % r)
        return t

    def bearer(self):
        return STATIC if self.static else self.token()

    def dbody(self, alias="gold", ek=None):
        return json.dumps({"data": {"key_alias": alias, "encrypted_key": self.ek if ek is None else ek}})

    def decrypt(self, tok=None, alias="gold", ek=None, body=None, ctype="application/json", authz=None, headers=None, **kw):
        h = dict(headers or {})
        if authz is not None:
            h["Authorization"] = authz
        else:
            h["Authorization"] = "Bearer " + (tok or self.bearer())
        if ctype is not None:
            h["Content-Type"] = ctype
        return self.req("POST", "decrypt", self.dbody(alias, ek) if body is None else body, h, **kw)

    def rotate(self, alias="silver", tok=None, body=None, ctype="application/json", authz=None, method="POST", headers=None, **kw):
        h = dict(headers or {})
        h["Authorization"] = authz if authz is not None else "Bearer " + (tok or self.bearer())
        if body is None:
            body = json.dumps({"data": {"key_alias": alias}}) if alias is not None else b""
        if ctype is not None and body:
            h["Content-Type"] = ctype
        r = self.req(method, "rotate", body, h, **kw)
        d = self.tokdata(r)
        if r.status == 200 and isinstance(d.get("encrypted_dek"), str):
            kb = any_b64(d.get("plaintext_dek") or "")
            with self.lock:
                self.rotated.append((d.get("key_alias"), d["encrypted_dek"], kb))
        return r

    def plaintext_of(self, r):
        d = self.tokdata(r)
        return d.get("plaintext_key")


class ProbeError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
PROBES = []


def probe(name, group, needs=None):
    def deco(f):
        PROBES.append((name, group, needs, f))
        return f
    return deco


def fails(cases):
    """cases: list of (label, ok bool, detail)"""
    return ["%s: %s" % (lab, det) for lab, ok, det in cases if not ok]


# ---- auth ----
@probe("auth.status", 1)
def p_auth_status(x):
    r = x.auth()
    return [] if r.status == 200 else ["/auth answered %r" % r]


@probe("auth.shape", 1)
def p_auth_shape(x):
    r = x.auth()
    out = []
    if r.media() != "application/json":
        out.append("content type %s" % r.h("content-type"))
    j = r.json
    if not (isinstance(j, dict) and isinstance(j.get("data"), dict)):
        return out + ["no data object: %r" % r]
    d = j["data"]
    if not isinstance(d.get("access_token"), str) or not isinstance(d.get("token_type"), str) \
            or "expires_in" not in d:
        out.append("fields: %r" % r)
    return out


@probe("auth.token_type", 1)
def p_auth_token_type(x):
    d = x.tokdata(x.auth())
    return [] if str(d.get("token_type")).lower() == "bearer" else ["token_type %r" % d.get("token_type")]


@probe("auth.expires_in", 1)
def p_auth_expires_in(x):
    e = x.tokdata(x.auth()).get("expires_in")
    return [] if isinstance(e, int) and not isinstance(e, bool) and e > 0 else ["expires_in %r" % (e,)]


@probe("auth.expires_in_bound", 1)
def p_auth_expires_in_bound(x):
    e = x.tokdata(x.auth()).get("expires_in")
    return [] if isinstance(e, int) and e <= 86400 else ["expires_in %r" % (e,)]


def jwt_parts(t):
    p = t.split(".")
    if len(p) != 3:
        return None
    try:
        h = json.loads(unb64url(p[0]))
        c = json.loads(unb64url(p[1]))
        unb64url(p[2])
    except Exception:
        return None
    if not isinstance(h, dict) or not isinstance(c, dict):
        return None
    return h, c, p


@probe("auth.jwt", 1)
def p_auth_jwt(x):
    t = x.token()
    return [] if jwt_parts(t) else ["not a JWT: %s..." % t[:12]]


@probe("auth.jwt_alg", 1)
def p_auth_jwt_alg(x):
    jp = jwt_parts(x.token())
    if not jp:
        return []  # judged by auth.jwt
    alg = jp[0].get("alg")
    return [] if isinstance(alg, str) and alg.lower() != "none" else ["alg %r" % alg]


@probe("auth.jwt_exp", 1)
def p_auth_jwt_exp(x):
    r = x.auth()
    d = x.tokdata(r)
    jp = jwt_parts(d.get("access_token", ""))
    if not jp or not isinstance(d.get("expires_in"), int):
        return []
    c = jp[1]
    if "iat" in c:
        ok = abs((c.get("exp", 0) - c["iat"]) - d["expires_in"]) <= 5
    else:
        ok = abs(c.get("exp", 0) - (time.time() + d["expires_in"])) <= 120
    return [] if ok else ["exp %r iat %r expires_in %r" % (c.get("exp"), c.get("iat"), d["expires_in"])]


@probe("auth.repeat", 1)
def p_auth_repeat(x):
    out = []
    t1 = x.token()
    if x.decrypt(t1).status != 200:
        out.append("first token does not decrypt")
    for i in range(2):
        r = x.auth()
        t = x.tokdata(r).get("access_token")
        if r.status != 200 or not t or x.decrypt(t).status != 200:
            out.append("repeat %d: %r" % (i, r))
    return out


@probe("auth.wrong_secret", 1)
def p_auth_wrong_secret(x):
    forms = [SECRET + "x", SECRET[:-1], SECRET[1:], SECRET[:len(SECRET) // 2], SECRET.swapcase(), "",
             " " + SECRET, SECRET + " ", SECRET + "\t", SECRET + ":x"]
    cases = []
    for f in forms:
        r = x.auth(x.basic(secret=f))
        cases.append((repr(f[:4] + "..."), r.status == 401, r.status))
    return fails(cases)


@probe("auth.unknown_client", 1)
def p_auth_unknown_client(x):
    cases = []
    for cid in ["someone-else", CLIENT_ID.upper(), CLIENT_ID + "x", CLIENT_ID[:-1]]:
        r = x.auth(x.basic(cid=cid))
        cases.append((cid, r.status == 401, r.status))
    return fails(cases)


@probe("auth.bearer_credentials", 1)
def p_auth_bearer_credentials(x):
    t = x.token()
    cases = []
    for lab, v in [("token", t), ("secret", SECRET)]:
        r = x.auth("Bearer " + v)
        cases.append((lab, r.status == 401, r.status))
    return fails(cases)


@probe("auth.no_authorization", 1)
def p_auth_no_authorization(x):
    r1 = x.auth(None)
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": CLIENT_ID,
                                   "client_secret": SECRET}).encode()
    r2 = x.auth(None, body=body)
    return fails([("none", r1.status == 401, r1.status), ("form credentials", r2.status == 401, r2.status)])


@probe("auth.malformed_basic", 1)
def p_auth_malformed_basic(x):
    cases = []
    for lab, v in [("not base64", "Basic %%%not-base64%%%"), ("no colon", "Basic " + b64(b"jv-client")),
                   ("scheme alone", "Basic"), ("not utf-8", "Basic " + b64(b"\xff\xfe:\xfd\xfc"))]:
        r = x.auth(v)
        cases.append((lab, r.status in (400, 401), r.status))
    return fails(cases)


@probe("auth.wrong_grant_type", 1)
def p_auth_wrong_grant_type(x):
    bodies = [b"grant_type=password", b"grant_type=authorization_code", b"grant_type=client_credentials_v2",
              b"grant_type=client", b"grant_type=CLIENT_CREDENTIALS", b"grant_type=Client_Credentials",
              b"grant_type=", b"scope=x", b"grant_type=client_credentials&grant_type=password",
              b"grant_type=password&grant_type=client_credentials"]
    cases = []
    for b in bodies:
        r = x.auth(body=b)
        cases.append((b.decode(), r.status == 400, r.status))
    return fails(cases)


@probe("auth.content_type", 1)
def p_auth_content_type(x):
    cases = []
    r = x.auth(body=json.dumps({"grant_type": "client_credentials"}), ctype="application/json")
    cases.append(("json", r.status in (400, 415), r.status))
    r = x.auth(ctype="text/plain")
    cases.append(("text/plain", r.status in (400, 415), r.status))
    mp = (b"--xyz\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\nclient_credentials\r\n--xyz--\r\n")
    r = x.auth(body=mp, ctype="multipart/form-data; boundary=xyz")
    cases.append(("multipart", r.status in (400, 415), r.status))
    r = x.auth(ctype=None)
    cases.append(("none", r.status in (400, 415), r.status))
    r = x.auth(ctype=FORM + "; charset=utf-8")
    cases.append(("form; charset", r.status == 200, r.status))
    return fails(cases)


# ---- decrypt ----
@probe("decrypt.status", 2)
def p_decrypt_status(x):
    r = x.decrypt()
    return [] if r.status == 200 else ["%r" % r]


@probe("decrypt.shape", 2)
def p_decrypt_shape(x):
    r = x.decrypt()
    ok = r.media() == "application/json" and isinstance(r.json, dict) and isinstance(r.json.get("data"), dict) \
        and isinstance(r.json["data"].get("plaintext_key"), str)
    return [] if ok else ["%r" % r]


@probe("decrypt.plaintext", 2)
def p_decrypt_plaintext(x):
    r = x.decrypt()
    pk = x.plaintext_of(r)
    kb = std_b64_strict(pk) if isinstance(pk, str) else None
    return [] if kb == x.pk and len(kb) == 32 else ["plaintext_key %r" % (pk,)]


@probe("decrypt.repeatable", 2)
def p_decrypt_repeatable(x):
    a, b = x.plaintext_of(x.decrypt()), x.plaintext_of(x.decrypt())
    return [] if a is not None and a == b else ["%r vs %r" % (a, b)]


def bearer_forms_no_token(x, ep):
    t = x.bearer()
    body = x.dbody() if ep == "decrypt" else json.dumps({"data": {"key_alias": "silver"}})
    cases = []

    def go(lab, headers, query="", b=None):
        h = {"Content-Type": "application/json"}
        h.update(headers)
        r = x.req("POST", ep, b if b is not None else body, h, query=query)
        cases.append((lab, r.status == 401, r.status))
    go("no Authorization", {})
    go("Bearer alone", {"Authorization": "Bearer"})
    go("empty", {"Authorization": ""})
    go("query", {}, query="?access_token=" + urllib.parse.quote(t))
    bj = json.loads(body)
    bj["access_token"] = t
    go("body", {}, b=json.dumps(bj))
    go("cookie", {"Cookie": "access_token=" + t})
    go("no scheme", {"Authorization": t})
    for sch in ("Token", "JWT", "Basic"):
        go(sch, {"Authorization": sch + " " + t})
    return fails(cases)


def bearer_forms_garbage(x, ep):
    rnd = random.Random()
    text = "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(40))
    parts = ".".join(b64url(os.urandom(n)) for n in (20, 40, 32))
    cases = []
    for lab, t in [("random text", text), ("random parts", parts)]:
        r = call_ep(x, ep, "Bearer " + t)
        cases.append((lab, r.status == 401, r.status))
    return fails(cases)


def call_ep(x, ep, authz):
    if ep == "decrypt":
        return x.decrypt(authz=authz)
    return x.rotate("silver", authz=authz)


def forge(h, c, key):
    hp = b64url(json.dumps(h).encode())
    cp = b64url(json.dumps(c).encode())
    return hp + "." + cp + "." + b64url(hmac.new(key, (hp + "." + cp).encode(), hashlib.sha256).digest())


def bearer_forms_tampered(x, ep):
    t = x.token()
    call_ep(x, ep, "Bearer " + t)  # use it once: a verdict cache has seen it
    jp = jwt_parts(t)
    if not jp:
        return []
    h, c, p = jp
    s = p[2]
    i = len(s) // 2
    changed = s[:i] + ("A" if s[i] != "A" else "B") + s[i + 1:]
    c_exp = dict(c, exp=c.get("exp", 0) + 3600) if isinstance(c.get("exp"), int) else dict(c, exp=1)
    c_sub = dict(c, sub="someone-else")
    forms = [("sig changed", p[0] + "." + p[1] + "." + changed), ("sig empty", p[0] + "." + p[1] + "."),
             ("sig half", p[0] + "." + p[1] + "." + s[:len(s) // 2]),
             ("other key", forge(h, c, os.urandom(32))), ("client secret", forge(h, c, SECRET.encode())),
             ("exp later", p[0] + "." + b64url(json.dumps(c_exp).encode()) + "." + s),
             ("other sub", p[0] + "." + b64url(json.dumps(c_sub).encode()) + "." + s)]
    cases = []
    for lab, f in forms:
        r = call_ep(x, ep, "Bearer " + f)
        cases.append((lab, r.status == 401, r.status))
    return fails(cases)


def bearer_forms_alg_none(x, ep):
    t = x.token()
    jp = jwt_parts(t)
    if not jp:
        return []
    h, c, p = jp
    cp = p[1]
    forms = []
    for a in ("none", "None", "NONE", "nOnE"):
        forms.append(("alg " + a, b64url(json.dumps({"alg": a, "typ": "JWT"}).encode()) + "." + cp + "."))
    forms.append(("none keeping sig", b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode()) + "." + cp + "." + p[2]))
    forms.append(("no alg", b64url(json.dumps({"typ": "JWT"}).encode()) + "." + cp + "."))
    forms.append(("no alg keeping sig", b64url(json.dumps({"typ": "JWT"}).encode()) + "." + cp + "." + p[2]))
    forms.append(("RS256 keeping sig", b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()) + "." + cp + "." + p[2]))
    cases = []
    for lab, f in forms:
        r = call_ep(x, ep, "Bearer " + f)
        cases.append((lab, r.status == 401, r.status))
    return fails(cases)


def bearer_forms_basic(x, ep):
    bv = b64(("%s:%s" % (CLIENT_ID, SECRET)).encode())
    forms = [("Basic", "Basic " + bv), ("secret as bearer", "Bearer " + SECRET), ("Basic value as bearer", "Bearer " + bv)]
    if x.static:
        forms += [("key as Basic user", "Basic " + b64((STATIC + ":").encode())),
                  ("key as Basic password", "Basic " + b64(("x:" + STATIC).encode()))]
    cases = []
    for lab, a in forms:
        r = call_ep(x, ep, a)
        cases.append((lab, r.status == 401, r.status))
    return fails(cases)


def bearer_forms_wrong_key(x, ep):
    k = STATIC
    forms = [k[:5] + ("A" if k[5] != "A" else "B") + k[6:], k.swapcase(), k[:len(k) // 2], k[1:], k[:-1], k + "x"]
    cases = []
    for f in forms:
        r = call_ep(x, ep, "Bearer " + f)
        cases.append((f[:3] + "...", r.status == 401, r.status))
    return fails(cases)


for _ep in ("decrypt", "rotate"):
    _g = 2 if _ep == "decrypt" else 7
    probe(_ep + ".no_token", _g)(lambda x, ep=_ep: bearer_forms_no_token(x, ep))
    probe(_ep + ".garbage_token", _g)(lambda x, ep=_ep: bearer_forms_garbage(x, ep))
    probe(_ep + ".tampered_token", _g)(lambda x, ep=_ep: bearer_forms_tampered(x, ep))
    probe(_ep + ".alg_none", _g)(lambda x, ep=_ep: bearer_forms_alg_none(x, ep))
    probe(_ep + ".basic_credentials", _g)(lambda x, ep=_ep: bearer_forms_basic(x, ep))
    probe(_ep + ".wrong_api_key", _g, needs="static")(lambda x, ep=_ep: bearer_forms_wrong_key(x, ep))


@probe("setup.static_key", 2, needs="static")
def p_static_ok(x):
    r = x.decrypt(STATIC)
    return [] if r.status == 200 else ["%r" % r]


def refused_4xx(cases_in):
    return fails([(lab, is4xx(r), r.status if r is not None else "closed") for lab, r in cases_in])


@probe("decrypt.unknown_alias", 2)
def p_decrypt_unknown_alias(x):
    return refused_4xx([(a, x.decrypt(alias=a)) for a in ("bronze", "GOLD", "Gold", "gold ", "goldx")])


@probe("decrypt.other_alias", 2)
def p_decrypt_other_alias(x):
    return refused_4xx([("silver", x.decrypt(alias="silver"))])


def env_b(x):
    return x.ek[len("byok:v1:"):]


@probe("decrypt.missing_prefix", 2)
def p_decrypt_missing_prefix(x):
    return refused_4xx([("none", x.decrypt(ek=env_b(x)))])


@probe("decrypt.wrong_prefix", 2)
def p_decrypt_wrong_prefix(x):
    b = env_b(x)
    forms = ["kms:v1:" + b, "BYOK:V1:" + b, "byok:V1:" + b, " byok:v1:" + b, "byok:v1::" + b,
             "byok:v1:byok:v1:" + b, b + "byok:v1:"]
    return refused_4xx([(f[:9], x.decrypt(ek=f)) for f in forms])


@probe("decrypt.v2_prefix", 2)
def p_decrypt_v2_prefix(x):
    return refused_4xx([("v2", x.decrypt(ek="byok:v2:" + env_b(x)))])


@probe("decrypt.bad_base64", 2)
def p_decrypt_bad_base64(x):
    b = env_b(x)
    m = len(b) // 2
    forms = [("outside", b[:m] + "!" + b[m + 1:]), ("space", b[:m] + " " + b[m:]), ("non-ascii", b[:m] + "é" + b[m + 1:]),
             ("nothing", ""), ("one byte", b64(b"\x01")), ("four bytes", b64(b"\x01\x00\x00\x00"))]
    return refused_4xx([(lab, x.decrypt(ek="byok:v1:" + f)) for lab, f in forms])


def flipped(x, i):
    raw = bytearray(base64.b64decode(env_b(x)))
    raw[i] ^= 0x01
    return "byok:v1:" + b64(bytes(raw))


def env_len(x):
    return len(base64.b64decode(env_b(x)))


@probe("decrypt.flipped_first", 2)
def p_flip_first(x):
    return refused_4xx([("byte 0", x.decrypt(ek=flipped(x, 0)))])


@probe("decrypt.flipped_nonce", 2)
def p_flip_nonce(x):
    return refused_4xx([("byte 11", x.decrypt(ek=flipped(x, 11)))])


@probe("decrypt.flipped_byte", 2)
def p_flip_middle(x):
    return refused_4xx([("middle", x.decrypt(ek=flipped(x, env_len(x) // 2)))])


@probe("decrypt.flipped_tag", 2)
def p_flip_tag(x):
    return refused_4xx([("tag first", x.decrypt(ek=flipped(x, env_len(x) - 16)))])


@probe("decrypt.flipped_last", 2)
def p_flip_last(x):
    return refused_4xx([("last", x.decrypt(ek=flipped(x, env_len(x) - 1)))])


@probe("decrypt.flipped_any_byte", 2)
def p_flip_any(x):
    return refused_4xx([("byte %d" % i, x.decrypt(ek=flipped(x, i))) for i in range(env_len(x))])


@probe("decrypt.extended_key", 2)
def p_extended(x):
    raw = base64.b64decode(env_b(x))
    return refused_4xx([("+%d" % n, x.decrypt(ek="byok:v1:" + b64(raw + os.urandom(n)))) for n in (1, 16)])


@probe("decrypt.truncated_key", 2)
def p_truncated(x):
    raw = base64.b64decode(env_b(x))
    return refused_4xx([("-%d" % n, x.decrypt(ek="byok:v1:" + b64(raw[:-n]))) for n in range(1, 9)])


MISSING = [("no key_alias", lambda x: {"data": {"encrypted_key": x.ek}}),
           ("no encrypted_key", lambda x: {"data": {"key_alias": "gold"}}),
           ("no data", lambda x: {"key_alias": "gold", "encrypted_key": x.ek})]


@probe("decrypt.missing_fields", 2)
def p_missing(x):
    return fails([(lab, is4xx(r), r.status) for lab, r in
                  [(lab, x.decrypt(body=json.dumps(f(x)))) for lab, f in MISSING]])


@probe("decrypt.missing_fields_code", 2)
def p_missing_code(x):
    out = []
    for lab, f in MISSING:
        r = x.decrypt(body=json.dumps(f(x)))
        if is4xx(r):
            code = (r.json or {}).get("error", {}).get("code") if isinstance((r.json or {}).get("error"), dict) else None
            if r.status in (401, 403, 404, 405, 413) or code != "INVALID_REQUEST":
                out.append("%s: %s %s" % (lab, r.status, code))
    return out


@probe("decrypt.malformed_body", 2)
def p_malformed(x):
    ek = x.ek
    bodies = [("invalid", b'{"data": {'), ("empty", b""), ("null", b"null"), ("number", b"1"), ("string", b'"s"'),
              ("true", b"true"), ("array", b"[]"), ("data null", b'{"data": null}'), ("data string", b'{"data": "x"}'),
              ("data array", b'{"data": []}'),
              ("nested", json.dumps({"data": {"data": {"key_alias": "gold", "encrypted_key": ek}}}).encode()),
              ("deep", b"[" * 50000 + b"]" * 50000), ("5000 digits", ('{"data": {"key_alias": ' + "9" * 5000 + ', "encrypted_key": "%s"}}' % ek).encode()),
              ("not utf-8", b'{"data": {"key_alias": "go\xffld", "encrypted_key": "' + ek.encode() + b'"}}')]
    for field in ("key_alias", "encrypted_key"):
        for lab, v in [("number", 1), ("null", None), ("object", {}), ("array", [])]:
            d = {"key_alias": "gold", "encrypted_key": ek}
            d[field] = v
            bodies.append(("%s %s" % (field, lab), json.dumps({"data": d}).encode()))
    return fails([(lab, is4xx(r), r.status) for lab, r in [(lab, x.decrypt(body=b)) for lab, b in bodies]])


@probe("decrypt.content_type", 2)
def p_decrypt_ct(x):
    cases = []
    for ct in ("text/plain", FORM, "multipart/form-data; boundary=x", None, "application/json-seq", "application/jsonx"):
        r = x.decrypt(ctype=ct)
        cases.append((str(ct), is4xx(r), r.status))
    r = x.decrypt(ctype="application/json; charset=utf-8")
    cases.append(("json; charset", r.status == 200, r.status))
    return fails(cases)


def padded(obj, size):
    s = json.dumps(obj)
    d = dict(obj)
    d["padding"] = "x" * (size - len(s) - len(', "padding": ""'))
    b = json.dumps(d).encode()
    return b


def oversized(x, ep, body):
    tok = x.bearer()
    common = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
              "x-request-id: %s\r\nx-request-timestamp: %s\r\nx-trace-id: %s\r\n") % (
        EP[ep], tok, uuid.uuid4(), now_ts(), uuid.uuid4())
    r1 = x.raw((common + "Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)).encode(),
               (body[i:i + 65536] for i in range(0, len(body), 65536)), ep)

    def chunks():
        for i in range(0, len(body), 16384):
            c = body[i:i + 16384]
            yield b"%x\r\n" % len(c) + c + b"\r\n"
        yield b"0\r\n\r\n"
    r2 = x.raw((common + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode(), chunks(), ep)
    return fails([("Content-Length", r1 is None or is4xx(r1), r1.status if r1 else "closed"),
                  ("chunked", r2 is None or is4xx(r2), r2.status if r2 else "closed")])


@probe("decrypt.oversized", 2)
def p_oversized(x):
    return oversized(x, "decrypt", padded({"data": {"key_alias": "gold", "encrypted_key": x.ek}}, MIB))


# ---- headers ----
@probe("headers.no_trace_id", 3)
def p_no_trace(x):
    r = x.decrypt(drop=("x-trace-id",))
    return [] if r.status == 200 else ["%r" % r]


@probe("headers.malformed", 3)
def p_headers_malformed(x):
    cases = []
    for lab, hk, v in [("ts no date", "x-request-timestamp", "yesterday"),
                       ("ts no offset", "x-request-timestamp", now_ts()[:-1]),
                       ("ts date only", "x-request-timestamp", now_ts()[:10]),
                       ("request id", "x-request-id", "req-123"), ("trace id", "x-trace-id", "trace-123")]:
        r = x.decrypt(headers={hk: v})
        cases.append((lab, r.status < 500, r.status))
    for hk in ("x-request-timestamp", "x-request-id"):
        r = x.decrypt(drop=(hk,))
        cases.append(("no " + hk, r.status < 500, r.status))
    return fails(cases)


@probe("headers.request_id_required", 3)
def p_request_id_required(x):
    r1 = x.decrypt(drop=("x-request-id",))
    r2 = x.decrypt(headers={"x-request-id": "req-123"})
    return fails([("missing", is4xx(r1), r1.status), ("not a UUID", is4xx(r2), r2.status)])


@probe("headers.skewed_timestamp", 3)
def p_skewed(x):
    return fails([(str(o), is4xx(r), r.status) for o, r in
                  [(o, x.decrypt(headers={"x-request-timestamp": now_ts(o)})) for o in (-3600, -600, 600, 3600)]])


# ---- methods ----
def methods(x, ep):
    cases = []
    if ep == "auth":
        h, body = {"Authorization": x.basic(), "Content-Type": FORM}, GRANT
    elif ep == "decrypt":
        h, body = {"Authorization": "Bearer " + x.bearer(), "Content-Type": "application/json"}, x.dbody().encode()
    else:
        h, body = {"Authorization": "Bearer " + x.bearer(), "Content-Type": "application/json"}, \
            json.dumps({"data": {"key_alias": "silver"}}).encode()
    for m in ("GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"):
        r = x.req(m, ep, body, h)
        allow = [a.strip().upper() for a in (r.h("allow") or "").split(",") if a.strip()]
        good_allow = "POST" in allow and m not in allow
        ok = (r.status == 405 and good_allow) or (m == "OPTIONS" and 200 <= r.status < 300 and good_allow)
        cases.append((m, ok, "%s Allow=%r" % (r.status, r.h("allow"))))
    return fails(cases)


for _ep in ("auth", "decrypt", "rotate"):
    probe("methods." + _ep, 4)(lambda x, ep=_ep: methods(x, ep))


# ---- errors (a battery, then judged over every answer of the run) ----
def error_battery(x):
    if getattr(x, "_battery", False):
        return
    x._battery = True
    x.auth(x.basic(secret=SECRET + "x"))
    x.auth(x.basic(cid="JV-CLIENT"))
    x.auth(x.basic(cid="nobody"))
    x.auth(None)
    x.auth(body=b"grant_type=password")
    x.auth(ctype="text/plain")
    x.req("POST", "decrypt", x.dbody(), {"Content-Type": "application/json"})
    t = x.token()
    x.decrypt(t[:-3] + "abc")
    x.decrypt("garbage-token-0123456789")
    x.decrypt(t, alias="bronze")
    x.decrypt(t, ek="kms:v1:AAAA")
    x.decrypt(t, ek=flipped(x, 20))
    x.decrypt(t, body=json.dumps({"data": {"key_alias": "gold"}}))
    x.decrypt(t, ctype="text/plain")
    x.decrypt(t, body=padded({"data": {"key_alias": "gold", "encrypted_key": x.ek}}, 20000))
    x.req("GET", "decrypt", b"", {"Authorization": "Bearer " + t})
    x.rotate("bronze", t)
    x.rotate("silver", authz="Bearer " + t[:-3] + "xyz")
    x.rotate("silver", t, body=b"{bad")
    x.decrypt(t)
    x.rotate("silver", t)
    x.auth()


def error_answers(x):
    return [r for r in list(x.log) if r.status >= 400 and r.method != "HEAD"]


@probe("errors.json", 5)
def p_errors_json(x):
    error_battery(x)
    bad = [r for r in error_answers(x) if r.media() != "application/json" or r.json is None]
    return ["%r (%s)" % (r, r.h("content-type")) for r in bad[:3]]


def shaped(r):
    j = r.json
    return isinstance(j, dict) and isinstance(j.get("error"), dict) and isinstance(j["error"].get("code"), str) \
        and isinstance(j["error"].get("message"), str)


@probe("errors.shape", 5)
def p_errors_shape(x):
    error_battery(x)
    return ["%r" % r for r in error_answers(x) if r.json is not None and not shaped(r)][:3]


@probe("errors.code", 5)
def p_errors_code(x):
    error_battery(x)
    return ["%r" % r for r in error_answers(x) if shaped(r) and r.json["error"]["code"] not in ERROR_CODES.get(r.status, {r.json["error"]["code"]})][:3]


@probe("errors.message", 5)
def p_errors_message(x):
    error_battery(x)
    return ["%r" % r for r in error_answers(x) if shaped(r) and not (
        1 <= len(r.json["error"]["message"]) <= 200 and all(ord(c) >= 0x20 for c in r.json["error"]["message"]))][:3]


@probe("errors.www_authenticate", 5)
def p_www(x):
    error_battery(x)
    out = []
    for r in error_answers(x):
        if r.status == 401:
            want = "basic" if r.ep == "auth" else "bearer"
            got = (r.h("www-authenticate") or "").strip().lower()
            if not got.startswith(want):
                out.append("%s 401 WWW-Authenticate=%r" % (r.ep, r.h("www-authenticate")))
    return out[:3]


@probe("errors.no_store", 5)
def p_no_store(x):
    error_battery(x)
    out = []
    for r in list(x.log):
        if r.status == 200 and r.ep in EP and "no-store" not in (r.h("cache-control") or "").lower():
            out.append("%s 200 Cache-Control=%r" % (r.ep, r.h("cache-control")))
    return sorted(set(out))


def windows(t, n):
    return {t[i:i + n] for i in range(len(t) - n + 1)}


def enc_windows(b, n):
    out = set()
    for k in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            t = enc(b[k:]).decode().rstrip("=")
            t = t[:-2] if len(t) > 2 else ""
            out |= windows(t, n)
    return out


def hex_windows(b):
    out = set()
    for i in range(len(b) - 3):
        h = b[i:i + 4].hex()
        out |= {h, h.upper()}
    return out


@probe("errors.no_secret", 5)
def p_no_secret(x):
    error_battery(x)
    cred = set()
    for s in x.secrets_text:
        cred |= windows(s, 6) | enc_windows(s.encode(), 8) | windows(urllib.parse.quote(s, safe=""), 8)
    tok = set()
    for t in x.tokens:
        tok |= windows(t, 8)
    key = set()
    for k in x.keys:
        key |= enc_windows(k, 8) | hex_windows(k)
    public = {CLIENT_ID, "gold", "silver", "acme"}
    out = []
    for r in list(x.log):
        hay_headers = " | ".join("%s: %s" % kv for kv in r.headers.items())
        tok_ok = r.ep == "auth" and r.status == 200
        key_ok = r.ep in ("decrypt", "rotate") and r.status == 200
        for where, hay, allow_tok, allow_key in [("headers", hay_headers, False, False), ("body", r.text, tok_ok, key_ok)]:
            found = None
            for n, kind, bag, allowed in [(6, "credential", cred, False), (8, "credential", cred, False),
                                          (8, "token", tok, allow_tok), (8, "key", key, allow_key)]:
                if allowed:
                    continue
                for i in range(len(hay) - n + 1):
                    w = hay[i:i + n]
                    if w in bag and not any(w in p for p in public):
                        found = "%s run %r" % (kind, w)
                        break
                if found:
                    break
            if not found and SECRET[:4] in hay and SECRET[-4:] in hay:
                found = "masked client secret"
            if not found and x.static and STATIC[:4] in hay and STATIC[-4:] in hay:
                found = "masked static key"
            if found:
                out.append("%s %s %s: %s" % (r.method, r.ep, r.status, where + " holds " + found))
    return sorted(set(out))[:4]


@probe("headers.trace_echo", 5)
def p_trace_echo(x):
    error_battery(x)
    out = []
    for r in list(x.log):
        sent = r.sent.get("x-trace-id")
        if sent and len(sent) == 36 and r.h("x-trace-id") != sent:
            out.append("%s %s %s: sent %s got %s" % (r.method, r.ep, r.status, sent, r.h("x-trace-id")))
    return out[:3]


@probe("headers.request_duration", 5)
def p_duration(x):
    error_battery(x)
    out = []
    for r in list(x.log):
        try:
            float(r.h("x-request-duration"))
        except (TypeError, ValueError):
            out.append("%r: X-Request-Duration=%r" % (r, r.h("x-request-duration")))
    return out[:3]


# ---- load ----
def load(x):
    if hasattr(x, "_load"):
        return x._load
    tok = x.bearer()
    for _ in range(8):
        x.decrypt(tok)
    lat, res = [], []

    def one(_):
        t0 = time.monotonic()
        r = x.decrypt(tok)
        return time.monotonic() - t0, r
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        for dt, r in ex.map(one, range(40)):
            lat.append(dt)
            res.append(r)
    lat.sort()
    x._load = (lat[len(lat) // 2], lat[int(len(lat) * 0.99) - 1 if len(lat) > 1 else 0], res)
    return x._load


@probe("load.p50", 6)
def p_p50(x):
    p50, _, _ = load(x)
    return [] if p50 <= 0.25 else ["p50 %.0f ms" % (p50 * 1000)]


@probe("load.p99", 6)
def p_p99(x):
    _, p99, _ = load(x)
    return [] if p99 <= 0.25 else ["p99 %.0f ms" % (p99 * 1000)]


@probe("load.errors", 6)
def p_load_errors(x):
    _, _, res = load(x)
    keys = {x.plaintext_of(r) for r in res}
    bad = [r for r in res if r.status != 200]
    return ([] if not bad and len(keys) == 1 else ["%d not 200, %d keys" % (len(bad), len(keys))])


# ---- rotate (last: rotations may retire older keys) ----
def rotations(x):
    """gold and silver rotations, each decrypted at once"""
    if hasattr(x, "_rot"):
        return x._rot
    tok = x.bearer()
    res = []
    for alias in ("gold", "silver"):
        r = x.rotate(alias, tok)
        d = x.tokdata(r)
        dec = None
        if r.status == 200 and isinstance(d.get("encrypted_dek"), str):
            dec = x.decrypt(tok, alias=alias, ek=d["encrypted_dek"])
        res.append((alias, r, d, dec))
    x._rot = res
    return res


@probe("rotate.status", 7)
def p_rot_status(x):
    return ["%s: %r" % (a, r) for a, r, _, _ in rotations(x) if r.status != 200]


@probe("rotate.shape", 7)
def p_rot_shape(x):
    out = []
    for a, r, d, _ in rotations(x):
        j = r.json
        ok = r.media() == "application/json" and isinstance(j, dict) and isinstance(j.get("data"), dict) and \
            isinstance(j["data"].get("encrypted_dek"), str) and j["data"]["encrypted_dek"].startswith("byok:v1:") and \
            isinstance(j["data"].get("key_alias"), str) and isinstance(j["data"].get("plaintext_dek"), str)
        if not ok:
            out.append("%s: %r" % (a, r))
    return out


@probe("rotate.alias", 7)
def p_rot_alias(x):
    return ["asked %s got %r" % (a, d.get("key_alias")) for a, r, d, _ in rotations(x) if d.get("key_alias") != a]


@probe("rotate.plaintext", 7)
def p_rot_plaintext(x):
    out = []
    for a, r, d, _ in rotations(x):
        kb = std_b64_strict(d.get("plaintext_dek"))
        if kb is None or len(kb) != 32:
            out.append("%s: plaintext_dek of %s bytes" % (a, len(kb) if kb else None))
    return out


@probe("rotate.roundtrip", 7)
def p_rot_roundtrip(x):
    out = []
    for a, r, d, dec in rotations(x):
        if dec is None:
            continue
        if dec.status != 200 or any_b64(x.plaintext_of(dec) or "") != any_b64(d.get("plaintext_dek") or ""):
            out.append("%s: decrypt %r" % (a, dec))
    return out


def four(x):
    if hasattr(x, "_four"):
        return x._four
    rotations(x)
    tok = x.bearer()
    out = []
    for _ in range(4):
        r = x.rotate("gold", tok)
        d = x.tokdata(r)
        if r.status == 200 and isinstance(d.get("encrypted_dek"), str):
            out.append((d["encrypted_dek"], any_b64(d.get("plaintext_dek") or "")))
    x._four = out
    return out


@probe("rotate.fresh", 7)
def p_rot_fresh(x):
    four(x)
    keys = [x.pk] + [k for _, _, k in x.rotated if k]
    return [] if len(set(keys)) == len(keys) else ["%d keys, %d distinct" % (len(keys), len(set(keys)))]


@probe("rotate.unique_nonce", 7)
def p_rot_nonce(x):
    envs = [(x.ek, x.pk)] + four(x)
    out = []
    raws = []
    for e, k in envs:
        try:
            raws.append((base64.b64decode(e[len("byok:v1:"):]), k))
        except Exception:
            pass
    nonces = [r[5:17] for r, _ in raws]
    if len(set(nonces)) != len(nonces):
        out.append("a nonce repeats (documented layout)")
    if any(n[:8] == b"\0" * 8 for n in nonces):
        out.append("a nonce counts (eight zero bytes)")
    for i in range(len(raws)):
        for j in range(i + 1, len(raws)):
            (a, ka), (b, kb) = raws[i], raws[j]
            if not ka or not kb or len(ka) != len(kb):
                continue
            xe = bytes(p ^ q for p, q in zip(a, b))
            xk = bytes(p ^ q for p, q in zip(ka, kb))
            if xk in xe:
                out.append("one keystream sealed two keys")
    return sorted(set(out))


@probe("rotate.key_hidden", 7)
def p_rot_hidden(x):
    out = []
    for e, k in [(x.ek, x.pk)] + four(x):
        if not k:
            continue
        try:
            raw = base64.b64decode(e[len("byok:v1:"):])
        except Exception:
            raw = b""
        kw = {k[i:i + 8] for i in range(len(k) - 7)}
        if any(raw[i:i + 8] in kw for i in range(len(raw) - 7)):
            out.append("8 key bytes in the envelope")
        if any(w in e for w in {k[i:i + 8].hex() for i in range(len(k) - 7)}):
            out.append("key hex in the envelope")
    return sorted(set(out))


@probe("rotate.body", 7)
def p_rot_body(x):
    tok = x.bearer()
    cases = []
    r = x.rotate(None, tok, body=b"", ctype=None)
    cases.append(("no body", r.status == 200 and x.tokdata(r).get("key_alias") == "gold", r.status))
    bodies = [("invalid", b"{bad", "application/json"), ("null", b"null", "application/json"),
              ("data null", b'{"data": null}', "application/json"), ("data string", b'{"data": "x"}', "application/json"),
              ("data array", b'{"data": []}', "application/json")]
    for lab, v in [("number", 1), ("null", None), ("array", []), ("object", {})]:
        bodies.append(("key_alias " + lab, json.dumps({"data": {"key_alias": v}}).encode(), "application/json"))
    good = json.dumps({"data": {"key_alias": "gold"}}).encode()
    bodies += [("text/plain", good, "text/plain"), ("no content type", good, None)]
    for lab, b, ct in bodies:
        h = {"Authorization": "Bearer " + tok}
        if ct:
            h["Content-Type"] = ct
        r = x.req("POST", "rotate", b, h)
        cases.append((lab, is4xx(r), r.status))
    big = padded({"data": {"key_alias": "gold"}}, MIB)
    out = fails(cases)
    out += [f for f in oversized(x, "rotate", big) if f.startswith("Content-Length")]
    return out


@probe("rotate.unknown_alias", 7)
def p_rot_unknown(x):
    r = x.rotate("bronze-" + uuid.uuid4().hex[:6], x.bearer())
    return [] if is4xx(r) else ["%r" % r]


@probe("rotate.old_keys", 8)
def p_rot_old(x):
    four(x)
    tok = x.bearer()
    out = []
    r = x.decrypt(tok)
    if r.status != 200:
        out.append("the wrapped key: %r" % r)
    rot = rotations(x)
    a, rr, d, _ = rot[0]
    if isinstance(d.get("encrypted_dek"), str):
        r = x.decrypt(tok, alias=a, ek=d["encrypted_dek"])
        if r.status != 200:
            out.append("the first rotated key: %r" % r)
    return out


# ---- token expiry (needs --expires-in 10) ----
def expiry_timeline(x):
    if hasattr(x, "_exp"):
        return x._exp
    t0 = time.time()
    r = x.auth()
    d = x.tokdata(r)
    tok, ei = d.get("access_token"), d.get("expires_in")
    res = {}
    if not tok or not isinstance(ei, int) or ei > 12:
        x._exp = {"token.reuse": ["no short token"], "token.expired": ["no short token"], "token.renewed": ["no short token"]}
        return x._exp
    time.sleep(max(0, t0 + ei - max(2, min(30, ei / 10)) - time.time()))
    r = x.decrypt(tok)
    res["token.reuse"] = [] if r.status == 200 else ["at expires_in - 2 s: %r" % r]
    time.sleep(max(0, t0 + ei + 1.5 - time.time()))
    r1 = x.decrypt(tok)
    r2 = x.rotate("silver", tok)
    res["token.expired"] = fails([("decrypt", r1.status == 401, r1.status), ("rotate", r2.status == 401, r2.status)])
    r = x.auth()
    nt = x.tokdata(r).get("access_token")
    ok = r.status == 200 and nt and nt != tok and x.decrypt(nt).status == 200
    res["token.renewed"] = [] if ok else ["after expiry /auth gave %s" % ("the same token" if nt == tok else repr(r))]
    x._exp = res
    return res


for _n in ("token.reuse", "token.expired", "token.renewed"):
    probe(_n, 0, needs="expiry")(lambda x, n=_n: expiry_timeline(x)[n])


# ---------------------------------------------------------------------------------------------
def run_suite(x, only=None):
    """run the probes that apply; answer {probe: [failures]}"""
    results = {}
    exp_thread = None
    expiry = "--expires-in" in x.args
    if expiry and (only is None or any(n.startswith("token.") for n in only)):
        exp_thread = threading.Thread(target=expiry_timeline, args=(x,))
        exp_thread.start()
    for name, group, needs, f in sorted(PROBES, key=lambda p: p[1]):
        if needs == "expiry":
            continue
        if needs == "static" and not x.static:
            continue
        if only is not None and name not in only:
            continue
        try:
            results[name] = f(x)
        except ProbeError as e:
            results[name] = ["probe could not run: %s" % e]
        except Exception as e:
            results[name] = ["probe error: %r" % e]
    if exp_thread:
        exp_thread.join()
        for n in ("token.reuse", "token.expired", "token.renewed"):
            if only is None or n in only:
                results[n] = x._exp[n]
    return results


def secrets_log_ok(x):
    try:
        lines = [ln.strip() for ln in open(x.slog) if ln.strip()]
    except OSError:
        return False
    return len(lines) > 0


def job(name, args, own, collateral, verbose):
    t0 = time.time()
    x = Svc(name, args, SOURCE_CMD if name is None else None)
    try:
        only = None if collateral else {own}
        res = run_suite(x, only)
        log_ok = secrets_log_ok(x)
    finally:
        x.stop()
    failed = {k for k, v in res.items() if v and k not in NOISY}
    problems = []
    if name is None:
        if failed:
            problems.append("baseline %s breaks: %s" % (" ".join(args), "; ".join("%s: %s" % (k, res[k]) for k in sorted(failed))))
        if not log_ok:
            problems.append("BLIND_SECRETS_LOG not written")
    else:
        if own not in failed:
            problems.append("does not break %s" % own)
        allowed = ALSO.get(name, set())
        extra = failed - {own} - allowed
        if extra and "*" not in allowed:
            problems.append("also breaks: %s" % "; ".join("%s: %s" % (k, res[k][:2]) for k in sorted(extra)))
    detail = res.get(own, []) if name else []
    return name or "baseline " + " ".join(args), problems, time.time() - t0, detail, sorted(failed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-collateral", action="store_true", help="run only each defect's own probe")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--source-mode", action="store_true",
                    help="start every defect with `java Service.java` too (slower: a compile per start)")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    t_start = time.time()
    global RUN_CMD
    classes = None
    if not a.source_mode:
        classes = tempfile.mkdtemp(prefix="r4classes")
        c = subprocess.run(["javac", "-nowarn", "-d", classes, "Service.java"], cwd=HERE, capture_output=True, text=True)
        if c.returncode != 0:
            print(c.stderr)
            sys.exit(1)
        RUN_CMD = ["java", "-cp", classes, "Service"]
    listed = subprocess.run(["java", "Service.java", "--list-defects"], cwd=HERE, capture_output=True, text=True).stdout.split()
    problems = []
    if set(listed) != set(DEFECTS):
        problems.append("defect lists differ: %s" % (set(listed) ^ set(DEFECTS)))
    spec = json.load(open(os.path.join(HERE, "defects.json")))
    if {d["name"] for d in spec} != set(DEFECTS):
        problems.append("defects.json differs: %s" % ({d["name"] for d in spec} ^ set(DEFECTS)))
    for d in spec:
        if d["name"] in DEFECTS and d.get("service_args", []) != DEFECTS[d["name"]][1]:
            problems.append("%s: service_args differ from the selftest's" % d["name"])
    bad = subprocess.run(["java", "Service.java", "--port", "0", "--defect", "no_such_defect"], cwd=HERE,
                         capture_output=True, text=True, timeout=120)
    if bad.returncode != 2:
        problems.append("an unknown defect exits %s, not 2" % bad.returncode)
    jobs = []
    if not a.no_baseline:
        jobs += [(None, [], None), (None, ["--static-key"], None), (None, ["--expires-in", "10"], None)]
    names = [n for n in DEFECTS if not a.only or n in a.only.split(",")]
    jobs += [(n, DEFECTS[n][1], DEFECTS[n][0]) for n in names]
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        futs = [ex.submit(job, n, args, own, not a.no_collateral, a.v) for n, args, own in jobs]
        for f in concurrent.futures.as_completed(futs):
            try:
                label, probs, dt, detail, failed = f.result()
            except Exception as e:
                problems.append("job error: %r" % e)
                print("ERROR %r" % e, flush=True)
                continue
            status = "FAIL" if probs else "ok  "
            print("%s %-36s %5.1fs %s" % (status, label, dt, ("; ".join(probs)) if probs else (
                ("breaks: " + ", ".join(failed)) if a.v else "")), flush=True)
            if a.v and detail:
                print("       %s" % detail[:3], flush=True)
            problems += ["%s: %s" % (label, p) for p in probs]
    if classes:
        subprocess.run(["rm", "-rf", classes])
    print("\n%d defects, %d problems, %.0f s" % (len(names), len(problems), time.time() - t_start))
    for p in problems:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
