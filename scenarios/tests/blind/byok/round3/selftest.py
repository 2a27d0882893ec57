#!/usr/bin/env python3
"""Self-test of service.py: the baseline conforms, each defect breaks its rule and only that.

Standard library only. For the baseline and for every defect of defects.json it starts the
service as a child process (`--static-key`, so that both bearer kinds are served), wraps a
data key with `service.py wrap` (same defect), and runs every fast probe below with its own
HTTP requests. The baseline must pass every probe; each defect must fail exactly the probes
this file maps it to (its rule, in one or more forms) and pass all others. The probes that
need to wait for a token to expire run against the baseline and the token defects, with the
short lifetime each needs.

    python3 selftest.py            # everything (about two to four minutes)
    python3 selftest.py -k NAME    # the baseline and the defects whose name contains NAME
    python3 selftest.py -v         # every probe's outcome
"""

import argparse
import base64
import concurrent.futures as cf
import datetime as dt
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = os.path.join(HERE, "service.py")
DEFECTS_JSON = os.path.join(HERE, "defects.json")

HOST = "127.0.0.1"
PARTNER = "acme"
BASE = f"/{PARTNER}/byok/v1/"
CLIENT_ID = "svc-client-7"
CLIENT_SECRET = "Rq3-wK8vPz-Lm2xT9cNe"
STATIC_KEY = "kk_live_5Jf9Tq2Wm8Rz4Hx"
PREFIX = "byok:v1:"
ENDPOINTS = ("auth", "decrypt-key", "rotate-key")


class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


# --------------------------------------------------------------------------- encodings


def b64u_enc(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def b64u_dec(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def env_raw(ek):
    return b64u_dec(ek[len(PREFIX):])


def env_text(raw):
    return PREFIX + b64u_enc(raw)


def flip(raw, i, mask=0x01):
    r = bytearray(raw)
    r[i] ^= mask
    return bytes(r)


def nonce_of(ek):
    raw = env_raw(ek)
    n = raw[1]
    return raw[6 + n: 30 + n]


def lenient_key(text):
    """A plaintext key in any base64 form -> bytes (or None)."""
    if not isinstance(text, str):
        return None
    t = text.strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(t + "=" * (-len(t) % 4), validate=True)
    except Exception:
        return None


def strict_key(text):
    """Standard base64 (padding optional), no whitespace, 32 bytes -> bytes (or None)."""
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", text):
        return None
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except Exception:
        return None
    return raw if len(raw) == 32 else None


def now_ts(offset=0.0):
    t = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=offset)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def runs(s, n):
    return {s[i:i + n] for i in range(0, max(0, len(s) - n + 1))}


# --------------------------------------------------------------------------- HTTP client


class Resp:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # list of (name, value)
        self.body = body

    def h(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    @property
    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except Exception:
            return None

    def err(self):
        """(code, message) of an error body, read leniently (flat shapes too)."""
        j = self.json
        if isinstance(j, dict):
            e = j.get("error") if isinstance(j.get("error"), dict) else j
            return e.get("code"), e.get("message")
        return None, None

    def __repr__(self):
        return f"<{self.status} {self.body[:160]!r}>"


def tracing(trace=None):
    return {"x-request-id": str(uuid.uuid4()), "x-request-timestamp": now_ts(),
            "x-trace-id": trace or str(uuid.uuid4())}


class Client:
    def __init__(self, port):
        self.port = port

    def call(self, method, ep, body=None, auth=None, ctype="application/json", headers=None,
             query="", conn=None, timeout=10, trace=None):
        path = ep if ep.startswith("/") else BASE + ep
        path += query
        hdrs = tracing(trace)
        if auth is not None:
            hdrs["Authorization"] = auth
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        if body is not None and ctype is not None:
            hdrs["Content-Type"] = ctype
        for k, v in (headers or {}).items():
            if v is None:
                hdrs.pop(k, None)
            else:
                hdrs[k] = v
        own = conn is None
        c = conn or http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            data = r.read()
            return Resp(r.status, r.getheaders(), data)
        finally:
            if own:
                c.close()

    # credentials
    @staticmethod
    def basic(user=CLIENT_ID, pw=CLIENT_SECRET):
        return "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()

    def auth(self, auth=None, body="grant_type=client_credentials",
             ctype="application/x-www-form-urlencoded", **kw):
        return self.call("POST", "auth", body=body, auth=self.basic() if auth is None else auth,
                         ctype=ctype, **kw)

    def token(self):
        r = self.auth()
        expect(r.status == 200, f"/auth with the right credentials answered {r!r}")
        try:
            return r.json["data"]["access_token"]
        except Exception:
            raise Fail(f"/auth answered no token: {r!r}")

    def decrypt(self, auth, alias, ek, **kw):
        return self.call("POST", "decrypt-key", body={"data": {"key_alias": alias, "encrypted_key": ek}},
                         auth=auth, **kw)

    def rotate(self, auth, alias=None, **kw):
        body = {"data": {"key_alias": alias}} if alias is not None else None
        if body is None:
            return self.call("POST", "rotate-key", body=None, auth=auth, **kw)
        return self.call("POST", "rotate-key", body=body, auth=auth, **kw)

    def fresh_key(self, bearer, alias="main"):
        r = self.rotate(bearer, alias)
        expect(r.status == 200, f"/rotate-key {alias} answered {r!r}")
        d = r.json["data"]
        return d["encrypted_dek"], lenient_key(d["plaintext_dek"])


def bearer(tok):
    return f"Bearer {tok}"


# --------------------------------------------------------------------------- service


class Service:
    def __init__(self, defect=None, args=(), log=None):
        cmd = [sys.executable, SERVICE, "--port", "0"] + list(args)
        if defect:
            cmd += ["--defect", defect]
        env = dict(os.environ)
        if log:
            env["BLIND_SECRETS_LOG"] = log
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        line = self.p.stdout.readline()
        try:
            self.port = json.loads(line)["port"]
        except Exception:
            err = self.p.stderr.read()
            self.p.kill()
            raise RuntimeError(f"service did not start: {line!r} {err[-500:]}")

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def wrap(alias="main", defect=None):
    cmd = [sys.executable, SERVICE, "wrap", "--alias", alias] + (["--defect", defect] if defect else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    return j["encrypted_key"], base64.b64decode(j["plaintext_key"])


class Ctx:
    def __init__(self, port, wrapped, static):
        self.c = Client(port)
        self.port = port
        self.ek, self.pt = wrapped
        self.static = static
        self.first_rotation = None


# --------------------------------------------------------------------------- JWT helpers


def jwt_split(tok):
    h, p, s = tok.split(".")
    return json.loads(b64u_dec(h)), json.loads(b64u_dec(p)), s


def jwt_make(header, claims, key=None, sig=None):
    h = b64u_enc(json.dumps(header, separators=(",", ":")).encode())
    p = b64u_enc(json.dumps(claims, separators=(",", ":")).encode())
    if sig is None:
        sig = b64u_enc(hmac.new(key, f"{h}.{p}".encode(), hashlib.sha256).digest()) if key else ""
    return f"{h}.{p}.{sig}"


def change_char(s, i):
    c = s[i]
    return s[:i] + ("B" if c != "B" else "C") + s[i + 1:]


# --------------------------------------------------------------------------- probes

PROBES = {}


def probe(name, slow_args=None):
    def deco(f):
        PROBES[name] = (f, slow_args)
        return f
    return deco


def all_401(ctx, forms, eps=("decrypt-key", "rotate-key"), key=None):
    """Each form: (label, kwargs for call). All must be 401."""
    c = ctx.c
    if key is None:
        key = c.fresh_key(bearer(c.token()))[0]
    bad = []
    for ep in eps:
        for label, kw in forms:
            kw = dict(kw)
            if "body" not in kw:
                kw["body"] = {"data": {"key_alias": "main", "encrypted_key": key}} \
                    if ep == "decrypt-key" else {"data": {"key_alias": "main"}}
            r = c.call("POST", ep, **kw)
            if r.status != 401:
                bad.append(f"{ep} {label}: {r.status}")
    expect(not bad, "; ".join(bad))


# ---- the platform's own calls, first rotation (cross-process comparisons)


@probe("p_cross_dek")
def p_cross_dek(ctx):
    """The service's first rotated key differs from the key the wrap command made."""
    fr = ctx.first_rotation
    expect(fr is not None, "no first rotation")
    expect(fr[1] != ctx.pt, "the first rotated data key equals the one `wrap` made in another process")


@probe("p_cross_nonce")
def p_cross_nonce(ctx):
    """The first rotated key is not sealed under the nonce of the wrapped key (keystream reuse)."""
    fr = ctx.first_rotation
    expect(fr is not None, "no first rotation")
    a, b = env_raw(fr[0]), env_raw(ctx.ek)
    expect(nonce_of(fr[0]) != nonce_of(ctx.ek), "the first rotated key reuses the wrapped key's nonce")
    x_env = bytes(p ^ q for p, q in zip(a, b))
    x_pt = bytes(p ^ q for p, q in zip(fr[1], ctx.pt))
    expect(x_pt not in x_env, "the XOR of the two data keys shows in the XOR of their envelopes")


# ---- /auth


@probe("p_auth_shape")
def p_auth_shape(ctx):
    r = ctx.c.auth()
    expect(r.status == 200, f"/auth: {r!r}")
    expect((r.h("Content-Type") or "").split(";")[0].strip().lower() == "application/json", "not application/json")
    d = (r.json or {}).get("data") or {}
    expect(isinstance(d.get("access_token"), str) and d["access_token"], "no access_token")
    expect(isinstance(d.get("token_type"), str) and d["token_type"].lower() == "bearer", "token_type")
    expect(isinstance(d.get("expires_in"), (int, float)) and not isinstance(d.get("expires_in"), bool)
           and d["expires_in"] > 0, "expires_in not a positive number")
    h, claims, s = jwt_split(d["access_token"])
    expect(isinstance(h.get("alg"), str) and h["alg"].lower() != "none" and s, "JWT unsigned")


@probe("p_expires_in_int")
def p_expires_in_int(ctx):
    d = ctx.c.auth().json["data"]
    expect(type(d["expires_in"]) is int, f"expires_in is {d['expires_in']!r}, not a JSON integer")


@probe("p_jwt_exp")
def p_jwt_exp(ctx):
    d = ctx.c.auth().json["data"]
    _, claims, _ = jwt_split(d["access_token"])
    expect(isinstance(claims.get("exp"), int), "no exp")
    if "iat" in claims:
        expect(abs(claims["exp"] - claims["iat"] - d["expires_in"]) <= 5,
               f"exp - iat = {claims['exp'] - claims['iat']}, expires_in = {d['expires_in']}")
    expect(abs(claims["exp"] - (time.time() + d["expires_in"])) <= 120, "exp far from now + expires_in")


@probe("p_expires_bound")
def p_expires_bound(ctx):
    d = ctx.c.auth().json["data"]
    expect(d["expires_in"] <= 86400, f"expires_in {d['expires_in']} is over a day")


@probe("p_tokens_coexist")
def p_tokens_coexist(ctx):
    c = ctx.c
    toks = [c.token() for _ in range(3)]
    for i, t in enumerate(toks):
        r = c.decrypt(bearer(t), "main", ctx.ek)
        expect(r.status == 200, f"token {i + 1} of 3 (all unexpired) refused after the later /auth: {r.status}")


@probe("p_no_authorization")
def p_no_authorization(ctx):
    r = ctx.c.call("POST", "auth", body="grant_type=client_credentials", ctype="application/x-www-form-urlencoded")
    expect(r.status == 401, f"{r.status}")


def auth_forms_401(ctx, forms):
    bad = []
    for label, value in forms:
        r = ctx.c.auth(auth=value)
        if r.status != 401:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_wrong_secret")
def p_wrong_secret(ctx):
    s = CLIENT_SECRET
    b = Client.basic
    auth_forms_401(ctx, [("appended", b(pw=s + "x")), ("no last", b(pw=s[:-1])), ("no first", b(pw=s[1:])),
                         ("half", b(pw=s[: len(s) // 2])), ("case", b(pw=s.swapcase())), ("empty", b(pw=""))])


@probe("p_secret_whitespace")
def p_secret_whitespace(ctx):
    s = CLIENT_SECRET
    b = Client.basic
    auth_forms_401(ctx, [("secret+space", b(pw=s + " ")), ("space+secret", b(pw=" " + s)),
                         ("secret+tab", b(pw=s + "\t")), ("id+space", b(user=CLIENT_ID + " "))])


@probe("p_client_id")
def p_client_id(ctx):
    b = Client.basic
    auth_forms_401(ctx, [("unknown", b(user="unknown-client")), ("case", b(user=CLIENT_ID.upper())),
                         ("longer", b(user=CLIENT_ID + "7")), ("shorter", b(user=CLIENT_ID[:-1]))])


@probe("p_basic_extra_colon")
def p_basic_extra_colon(ctx):
    b = Client.basic
    auth_forms_401(ctx, [("secret:x", b(pw=CLIENT_SECRET + ":x")), ("secret:", b(pw=CLIENT_SECRET + ":"))])


@probe("p_basic_non_utf8")
def p_basic_non_utf8(ctx):
    bad = []
    for raw in (b"\xff\xfe:\xfd", CLIENT_ID.encode() + b":\xc3\x28", b"\x80" + CLIENT_ID.encode() + b":x"):
        r = ctx.c.auth(auth="Basic " + base64.b64encode(raw).decode())
        if r.status not in (400, 401):
            bad.append(f"{raw!r}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_malformed_basic")
def p_malformed_basic(ctx):
    bad = []
    for label, v in (("not base64", "Basic !!!not*base64"), ("no colon", "Basic " + base64.b64encode(b"nocolon").decode()),
                     ("scheme alone", "Basic")):
        r = ctx.c.auth(auth=v)
        if r.status not in (400, 401):
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_bearer_on_auth")
def p_bearer_on_auth(ctx):
    tok = ctx.c.token()
    auth_forms_401(ctx, [("access token", bearer(tok)), ("client secret", bearer(CLIENT_SECRET))])


def grant_forms(ctx, forms):
    bad = []
    for form in forms:
        r = ctx.c.auth(body=form)
        if r.status != 400:
            bad.append(f"{form!r}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_grant_type")
def p_grant_type(ctx):
    grant_forms(ctx, ["grant_type=password", "grant_type=authorization_code", "grant_type=client_credentials_v2",
                      "grant_type=client", "grant_type=", "", "scope=x",
                      "grant_type=client_credentials&grant_type=client_credentials",
                      "grant_type=client_credentials&grant_type=password"])


@probe("p_grant_case")
def p_grant_case(ctx):
    grant_forms(ctx, ["grant_type=CLIENT_CREDENTIALS", "grant_type=Client_Credentials"])


@probe("p_form_creds")
def p_form_creds(ctx):
    r = ctx.c.call("POST", "auth", body=f"grant_type=client_credentials&client_id={CLIENT_ID}&client_secret={CLIENT_SECRET}",
                   ctype="application/x-www-form-urlencoded")
    expect(r.status == 401, f"client credentials in the form body, no Basic: {r.status}")


@probe("p_auth_ctype")
def p_auth_ctype(ctx):
    bad = []
    cases = [("json", json.dumps({"grant_type": "client_credentials"}), "application/json"),
             ("text/plain", "grant_type=client_credentials", "text/plain"),
             ("multipart", "--b\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\nclient_credentials\r\n--b--\r\n",
              "multipart/form-data; boundary=b"),
             ("none", "grant_type=client_credentials", None)]
    for label, body, ct in cases:
        r = ctx.c.auth(body=body, ctype=ct)
        if r.status not in (400, 415):
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_auth_charset")
def p_auth_charset(ctx):
    r = ctx.c.auth(ctype="application/x-www-form-urlencoded; charset=utf-8")
    expect(r.status == 200, f"form with charset: {r.status}")


# ---- bearer refusals


@probe("p_no_token")
def p_no_token(ctx):
    c = ctx.c
    r = c.decrypt(bearer(c.token()), "main", ctx.ek)
    expect(r.status == 200, "warm-up decrypt failed")
    all_401(ctx, [("no Authorization", {}), ("Bearer alone", {"auth": "Bearer"}), ("empty", {"auth": ""}),
                  ("Bearer space", {"auth": "Bearer "})], key=ctx.ek)


@probe("p_token_query")
def p_token_query(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    all_401(ctx, [("query", {"query": "?access_token=" + tok})], key=ek)


@probe("p_token_body")
def p_token_body(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    r1 = ctx.c.call("POST", "decrypt-key", body={"access_token": tok, "data": {"key_alias": "main", "encrypted_key": ek}})
    r2 = ctx.c.call("POST", "rotate-key", body={"access_token": tok, "data": {"key_alias": "main"}})
    expect(r1.status == 401 and r2.status == 401, f"{r1.status} {r2.status}")


@probe("p_token_cookie")
def p_token_cookie(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    all_401(ctx, [("cookie", {"headers": {"Cookie": f"access_token={tok}"}})], key=ek)


@probe("p_scheme")
def p_scheme(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    all_401(ctx, [("bare", {"auth": tok}), ("Token", {"auth": "Token " + tok}), ("Basic", {"auth": "Basic " + tok}),
                  ("JWT", {"auth": "JWT " + tok})], key=ek)


@probe("p_garbage_token")
def p_garbage_token(ctx):
    rnd = "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(40))
    parts = ".".join(b64u_enc(secrets.token_bytes(n)) for n in (20, 40, 32))
    all_401(ctx, [("random", {"auth": bearer(rnd)}), ("jwt-shaped", {"auth": bearer(parts)})])


@probe("p_tampered")
def p_tampered(ctx):
    tok = ctx.c.token()
    h, claims, s = jwt_split(tok)
    hh, pp, _ = tok.split(".")
    c2 = dict(claims, exp=claims["exp"] + 3600)
    c3 = dict(claims, sub="someone-else")
    forms = [("sig char", f"{hh}.{pp}.{change_char(s, 10)}"), ("sig empty", f"{hh}.{pp}."),
             ("sig half", f"{hh}.{pp}.{s[: len(s) // 2]}"),
             ("other key", jwt_make(h, claims, key=secrets.token_bytes(32))),
             ("exp later", jwt_make(h, c2, sig=s)), ("sub", jwt_make(h, c3, sig=s))]
    all_401(ctx, [(l, {"auth": bearer(t)}) for l, t in forms])


@probe("p_alg_none")
def p_alg_none(ctx):
    tok = ctx.c.token()
    h, claims, s = jwt_split(tok)
    forms = [(f"alg {a}", jwt_make({"alg": a, "typ": "JWT"}, claims, sig="")) for a in ("none", "None", "NONE", "nOnE")]
    forms += [("none + sig", jwt_make({"alg": "none", "typ": "JWT"}, claims, sig=s)),
              ("no alg", jwt_make({"typ": "JWT"}, claims, sig="")), ("no alg + sig", jwt_make({"typ": "JWT"}, claims, sig=s)),
              ("RS256 + sig", jwt_make({"alg": "RS256", "typ": "JWT"}, claims, sig=s)),
              ("HS512 + sig", jwt_make({"alg": "HS512", "typ": "JWT"}, claims, sig=s))]
    all_401(ctx, [(l, {"auth": bearer(t)}) for l, t in forms])


@probe("p_jwt_client_secret")
def p_jwt_client_secret(ctx):
    tok = ctx.c.token()
    h, claims, _ = jwt_split(tok)
    c2 = dict(claims, exp=int(time.time()) + 365 * 86400, jti=secrets.token_hex(16))
    forged = jwt_make(h, c2, key=CLIENT_SECRET.encode())
    all_401(ctx, [("signed with the client secret, a year long", {"auth": bearer(forged)})])


@probe("p_expected_sig")
def p_expected_sig(ctx):
    tok = ctx.c.token()
    h, claims, s = jwt_split(tok)
    c2 = dict(claims, exp=claims["exp"] + 30 * 86400)
    t2 = jwt_make(h, c2, sig=s)
    ek, _ = ctx.c.fresh_key(bearer(tok))
    r = ctx.c.decrypt(bearer(t2), "main", ek)
    expect(r.status == 401, f"claims changed under the same signature: {r.status}")
    hh, pp, _ = t2.split(".")
    found = [m for m in re.findall(r"[A-Za-z0-9_-]{43}", r.body.decode("utf-8", "replace")) if m != s]
    for m in found:
        r2 = ctx.c.decrypt(bearer(f"{hh}.{pp}.{m}"), "main", ek)
        expect(r2.status != 200, "the 401 quoted the expected signature: a token living 30 days more was forged with it")
    expect(not found, "the 401 quotes a 43-character signature")


@probe("p_basic_creds")
def p_basic_creds(ctx):
    forms = [("Basic creds", {"auth": Client.basic()}), ("secret as bearer", {"auth": bearer(CLIENT_SECRET)}),
             ("Basic value as bearer", {"auth": bearer(Client.basic().split()[1])})]
    if ctx.static:
        forms += [("static key as Basic user", {"auth": Client.basic(user=STATIC_KEY, pw="")}),
                  ("static key as Basic password", {"auth": Client.basic(user=CLIENT_ID, pw=STATIC_KEY)})]
    all_401(ctx, forms)


@probe("p_static_exact")
def p_static_exact(ctx):
    if not ctx.static:
        return
    c = ctx.c
    r = c.decrypt(bearer(STATIC_KEY), "main", ctx.ek)
    expect(r.status == 200, f"the static key itself: {r.status}")
    k = STATIC_KEY
    forms = [("char", change_char(k, 12)), ("case", k.swapcase()), ("half", k[: len(k) // 2]), ("no first", k[1:]),
             ("no last", k[:-1]), ("appended", k + "x")]
    all_401(ctx, [(l, {"auth": bearer(t)}) for l, t in forms])


def without_echo(msg, sent):
    """The message with every run of 4 or more characters of the key sent taken out."""
    if not isinstance(msg, str):
        return msg
    for n in range(len(sent), 3, -1):
        for i in range(len(sent) - n + 1):
            if sent[i:i + n] in msg:
                msg = msg.replace(sent[i:i + n], "*")
    return msg


@probe("p_static_oracle")
def p_static_oracle(ctx):
    """Two wrong static keys, one close to the key and one not, are refused alike."""
    if not ctx.static:
        return
    c = ctx.c
    ek, _ = c.fresh_key(bearer(c.token()))
    k = STATIC_KEY
    a = k[:-1] + ("X" if k[-1] != "X" else "Y")
    b = ("X" if k[0] != "X" else "Y") + k[1:]
    ra, rb = c.decrypt(bearer(a), "main", ek), c.decrypt(bearer(b), "main", ek)
    expect(ra.status == 401 and rb.status == 401, f"{ra.status} {rb.status}")
    if without_echo(ra.err()[1], a) == without_echo(rb.err()[1], b):
        return
    # The answers depend on the key: show that the key can be read back through them.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    known, tries = "", 0
    while len(known) < 64:
        msgs = {}
        for ch in alphabet:
            tries += 1
            r = c.decrypt(bearer(known + ch), "main", ek)
            if r.status == 200:
                raise Fail(f"the 401 answers differ with the key sent; the static key was read back "
                           f"through them in {tries} requests")
            msgs.setdefault(without_echo(r.err()[1], known + ch), []).append(ch)
        odd = [v for v in msgs.values() if len(v) == 1]
        if len(odd) != 1:
            break
        known += odd[0][0]
    raise Fail("the 401 answers differ with how close the key sent is to the static key")


# ---- decrypt


@probe("p_decrypt_ok")
def p_decrypt_ok(ctx):
    c = ctx.c
    tok = c.token()
    r1 = c.decrypt(bearer(tok), "main", ctx.ek)
    r2 = c.decrypt(bearer(tok), "main", ctx.ek)
    expect(r1.status == 200 and r2.status == 200, f"{r1!r} {r2!r}")
    expect((r1.h("Content-Type") or "").split(";")[0].strip().lower() == "application/json", "not application/json")
    p1, p2 = (lenient_key(r.json["data"]["plaintext_key"]) for r in (r1, r2))
    expect(p1 == ctx.pt and p2 == ctx.pt, "plaintext_key is not the wrapped data key")


@probe("p_plaintext_format")
def p_plaintext_format(ctx):
    r = ctx.c.decrypt(bearer(ctx.c.token()), "main", ctx.ek)
    pk = r.json["data"]["plaintext_key"]
    expect(strict_key(pk) == ctx.pt, f"plaintext_key {pk!r} is not standard base64 of the 32-byte key")


def all_4xx(ctx, alias_ek_forms, tok=None, warm=None):
    c = ctx.c
    tok = tok or c.token()
    bad = []
    for label, alias, ek in alias_ek_forms:
        r = c.decrypt(bearer(tok), alias, ek)
        if not 400 <= r.status < 500:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_unknown_alias")
def p_unknown_alias(ctx):
    all_4xx(ctx, [("unknown", "no-such-alias-x1", ctx.ek)])


@probe("p_alias_case")
def p_alias_case(ctx):
    all_4xx(ctx, [("MAIN", "MAIN", ctx.ek), ("Main", "Main", ctx.ek)])


@probe("p_other_alias")
def p_other_alias(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    all_4xx(ctx, [("main key as spare", "spare", ek)], tok)


@probe("p_other_alias_warm")
def p_other_alias_warm(ctx):
    tok = ctx.c.token()
    r = ctx.c.decrypt(bearer(tok), "main", ctx.ek)
    expect(r.status == 200, "warm-up")
    all_4xx(ctx, [("main key as spare, after it was decrypted", "spare", ctx.ek)], tok)


@probe("p_prefix_forms")
def p_prefix_forms(ctx):
    body = ctx.ek[len(PREFIX):]
    all_4xx(ctx, [(l, "main", v) for l, v in (("none", body), ("kms", "kms:v1:" + body), ("BYOK:V1", "BYOK:V1:" + body),
                                              ("byok:V1", "byok:V1:" + body), ("space", " " + ctx.ek),
                                              ("::", "byok:v1::" + body), ("v2", "byok:v2:" + body))])


@probe("p_prefix_anywhere")
def p_prefix_anywhere(ctx):
    body = ctx.ek[len(PREFIX):]
    all_4xx(ctx, [("doubled", "main", PREFIX + ctx.ek), ("at the end", "main", body + PREFIX),
                  ("inside", "main", body[:40] + PREFIX + body[40:])])


@probe("p_bad_base64")
def p_bad_base64(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    body = ek[len(PREFIX):]
    m = len(body) // 2
    all_4xx(ctx, [(l, "main", v) for l, v in (("!", PREFIX + body[:m] + "!" + body[m:]), ("*", PREFIX + body[:m] + "*" + body[m:]),
                                              ("space", PREFIX + body[:m] + " " + body[m:]), ("nothing", PREFIX),
                                              ("1 byte", env_text(b"\x01")), ("4 bytes", env_text(b"\x01\x04ma")),
                                              ("padded", ek + "=="))], tok)


@probe("p_non_ascii")
def p_non_ascii(ctx):
    tok = ctx.c.token()
    body = ctx.c.fresh_key(bearer(tok))[0][len(PREFIX):]
    m = len(body) // 2
    all_4xx(ctx, [("é inside", "main", PREFIX + body[:m] + "é" + body[m:]), ("é for a char", "main", PREFIX + body[:m] + "é" + body[m + 1:]),
                  ("fullwidth A", "main", PREFIX + "\uff21" + body[1:])], tok)


def tamper_forms(ek):
    raw = env_raw(ek)
    n = len(raw)
    forms = [("first byte", env_text(flip(raw, 0))), ("nonce byte 11", env_text(flip(raw, 11))),
             ("middle byte", env_text(flip(raw, n // 2))), ("tag first", env_text(flip(raw, n - 16))),
             ("last byte", env_text(flip(raw, n - 1)))]
    forms += [(f"cut {k}", env_text(raw[:-k])) for k in range(1, 9)]
    return forms


@probe("p_tamper_cold")
def p_tamper_cold(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    all_4xx(ctx, [(l, "main", v) for l, v in tamper_forms(ek)], tok)


@probe("p_tamper_warm")
def p_tamper_warm(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    r = ctx.c.decrypt(bearer(tok), "main", ek)
    expect(r.status == 200, "warm-up")
    all_4xx(ctx, [(l, "main", v) for l, v in tamper_forms(ek)], tok)


@probe("p_tamper_header")
def p_tamper_header(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    raw = env_raw(ek)
    forms = [(f"byte {i}", "main", env_text(flip(raw, i))) for i in range(1, 10)]
    forms.append(("alias renamed", "main", env_text(raw[:2] + b"mAin" + raw[6:])))
    all_4xx(ctx, forms, tok)


@probe("p_trailing")
def p_trailing(ctx):
    tok = ctx.c.token()
    ek, _ = ctx.c.fresh_key(bearer(tok))
    raw = env_raw(ek)
    all_4xx(ctx, [(f"+{k} bytes", "main", env_text(raw + bytes(k))) for k in (1, 2, 5, 16)], tok)


@probe("p_missing_fields")
def p_missing_fields(ctx):
    c = ctx.c
    tok = c.token()
    bad = []
    for label, body in (("no encrypted_key", {"data": {"key_alias": "main"}}), ("no key_alias", {"data": {"encrypted_key": ctx.ek}}),
                        ("no data", {"key_alias": "main", "encrypted_key": ctx.ek})):
        r = c.call("POST", "decrypt-key", body=body, auth=bearer(tok))
        if not 400 <= r.status < 500:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_missing_fields_code")
def p_missing_fields_code(ctx):
    c = ctx.c
    tok = c.token()
    bad = []
    for label, body in (("no encrypted_key", {"data": {"key_alias": "main"}}), ("no key_alias", {"data": {"encrypted_key": ctx.ek}}),
                        ("no data", {})):
        r = c.call("POST", "decrypt-key", body=body, auth=bearer(tok))
        if r.status != 400 or r.err()[0] != "INVALID_REQUEST":
            bad.append(f"{label}: {r.status} {r.err()[0]}")
    expect(not bad, "; ".join(bad))


def bodies_4xx(ctx, ep, bodies, tok, ctype="application/json"):
    bad = []
    for label, body in bodies:
        r = ctx.c.call("POST", ep, body=body, auth=bearer(tok), ctype=ctype)
        if not 400 <= r.status < 500:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_malformed_body")
def p_malformed_body(ctx):
    ek = ctx.ek
    bodies = [("invalid", '{"data": '), ("empty", b""), ("null", "null"), ("number", "5"), ("string", '"x"'), ("true", "true"),
              ("array", "[]"), ("data null", {"data": None}), ("data string", {"data": "x"}), ("data array", {"data": []})]
    for f in ("key_alias", "encrypted_key"):
        for label, v in (("number", 5), ("null", None), ("object", {}), ("array", [])):
            d = {"key_alias": "main", "encrypted_key": ek}
            d[f] = v
            bodies.append((f"{f} {label}", {"data": d}))
    bodies.append(("nested", {"data": {"data": {"key_alias": "main", "encrypted_key": ek}}}))
    bodies_4xx(ctx, "decrypt-key", bodies, ctx.c.token())


@probe("p_json_edge")
def p_json_edge(ctx):
    ek = ctx.ek
    bodies = [("deep nesting", "[" * 50000 + "]" * 50000),
              ("5000-digit number", '{"data": {"key_alias": ' + "9" * 5000 + ', "encrypted_key": "' + ek + '"}}'),
              ("invalid UTF-8", b'{"data": {"key_alias": "ma\xffin", "encrypted_key": "' + ek.encode() + b'"}}')]
    bodies_4xx(ctx, "decrypt-key", bodies, ctx.c.token())


@probe("p_decrypt_ctype")
def p_decrypt_ctype(ctx):
    c = ctx.c
    tok = c.token()
    body = json.dumps({"data": {"key_alias": "main", "encrypted_key": ctx.ek}})
    bad = []
    for ct in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", None):
        r = c.call("POST", "decrypt-key", body=body, auth=bearer(tok), ctype=ct)
        if not 400 <= r.status < 500:
            bad.append(f"{ct}: {r.status}")
    r = c.call("POST", "decrypt-key", body=body, auth=bearer(tok), ctype="application/json; charset=utf-8")
    if r.status != 200:
        bad.append(f"json with charset: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_ctype_variants")
def p_ctype_variants(ctx):
    c = ctx.c
    tok = c.token()
    body = json.dumps({"data": {"key_alias": "main", "encrypted_key": ctx.ek}})
    bad = []
    for ct in ("application/jsonx", "application/json-seq", "application/json5"):
        r = c.call("POST", "decrypt-key", body=body, auth=bearer(tok), ctype=ct)
        if not 400 <= r.status < 500:
            bad.append(f"{ct}: {r.status}")
    expect(not bad, "; ".join(bad))


def big_body(ctx, ep):
    d = {"key_alias": "main"}
    if ep == "decrypt-key":
        d["encrypted_key"] = ctx.ek
    return json.dumps({"data": d, "pad": "x" * (1024 * 1024)})


def refused_or_closed(fn):
    try:
        r = fn()
    except (ConnectionError, BrokenPipeError, http.client.HTTPException, socket.timeout, OSError):
        return None
    return r


@probe("p_oversized_cl")
def p_oversized_cl(ctx):
    tok = ctx.c.token()
    r = refused_or_closed(lambda: ctx.c.call("POST", "decrypt-key", body=big_body(ctx, "decrypt-key"), auth=bearer(tok)))
    expect(r is None or 400 <= r.status < 500, f"1 MiB with Content-Length: {r.status if r else 'closed'}")


@probe("p_oversized_chunked")
def p_oversized_chunked(ctx):
    tok = ctx.c.token()
    data = big_body(ctx, "decrypt-key").encode()

    def chunks():
        for i in range(0, len(data), 16384):
            yield data[i:i + 16384]
    r = refused_or_closed(lambda: ctx.c.call("POST", "decrypt-key", body=chunks(), auth=bearer(tok)))
    expect(r is None or 400 <= r.status < 500, f"1 MiB chunked: {r.status if r else 'closed'}")


@probe("p_rotate_oversized")
def p_rotate_oversized(ctx):
    tok = ctx.c.token()
    r = refused_or_closed(lambda: ctx.c.call("POST", "rotate-key", body=big_body(ctx, "rotate-key"), auth=bearer(tok)))
    expect(r is None or 400 <= r.status < 500, f"1 MiB to /rotate-key: {r.status if r else 'closed'}")


def raw_request(port, head, body=b"", timeout=3.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    try:
        s.sendall(head.encode("latin-1") + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def head_lines(method, path, extra):
    h = tracing()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"] + [f"{k}: {v}" for k, v in h.items()] + extra
    return "\r\n".join(lines) + "\r\n\r\n"


@probe("p_cl_invalid")
def p_cl_invalid(ctx):
    tok = ctx.c.token()
    bad = []
    for cl in ("abc", "12x"):
        data = raw_request(ctx.port, head_lines("POST", BASE + "decrypt-key",
                                                [f"Authorization: Bearer {tok}", "Content-Type: application/json",
                                                 f"Content-Length: {cl}", "Connection: close"]), b"{}")
        m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
        if not m or not 400 <= int(m.group(1)) < 500:
            bad.append(f"Content-Length {cl}: {data[:40]!r}")
    expect(not bad, "; ".join(bad))


# ---- rotation


@probe("p_rotate_ok")
def p_rotate_ok(ctx):
    c = ctx.c
    tok = c.token()
    for alias in ("main", "spare"):
        r = c.rotate(bearer(tok), alias)
        expect(r.status == 200, f"rotate {alias}: {r!r}")
        d = (r.json or {}).get("data") or {}
        expect(d.get("key_alias") == alias, f"key_alias {d.get('key_alias')!r} for {alias}")
        expect(isinstance(d.get("encrypted_dek"), str) and d["encrypted_dek"].startswith(PREFIX), "encrypted_dek")
        pt = lenient_key(d.get("plaintext_dek"))
        expect(pt is not None and len(pt) == 32, "plaintext_dek not 32 bytes")
        r2 = c.decrypt(bearer(tok), alias, d["encrypted_dek"])
        expect(r2.status == 200, f"the key rotated for {alias} does not decrypt under {alias}: {r2.status}")
        expect(lenient_key(r2.json["data"]["plaintext_key"]) == pt, f"roundtrip under {alias} gives another key")


@probe("p_rotate_plaintext_format")
def p_rotate_plaintext_format(ctx):
    tok = ctx.c.token()
    for _ in range(8):
        r = ctx.c.rotate(bearer(tok), "main")
        v = r.json["data"]["plaintext_dek"]
        expect(strict_key(v) is not None, f"plaintext_dek {v!r} is not standard base64 of 32 bytes")


@probe("p_rotate_no_body")
def p_rotate_no_body(ctx):
    c = ctx.c
    tok = c.token()
    r = c.call("POST", "rotate-key", body=None, auth=bearer(tok), ctype=None)
    expect(r.status == 200, f"/rotate-key without a body: {r.status}")
    d = r.json["data"]
    expect(d["key_alias"] == "main", f"default alias {d['key_alias']!r}")
    r2 = c.decrypt(bearer(tok), "main", d["encrypted_dek"])
    expect(r2.status == 200 and lenient_key(r2.json["data"]["plaintext_key"]) == lenient_key(d["plaintext_dek"]), "roundtrip")


@probe("p_rotate_body_bad")
def p_rotate_body_bad(ctx):
    bodies_4xx(ctx, "rotate-key", [("invalid", "{"), ("null", "null"), ("data null", {"data": None}), ("data string", {"data": "x"}),
                                   ("data array", {"data": []}), ("alias number", {"data": {"key_alias": 5}}),
                                   ("alias null", {"data": {"key_alias": None}})], ctx.c.token())


@probe("p_rotate_alias_types")
def p_rotate_alias_types(ctx):
    bodies_4xx(ctx, "rotate-key", [("alias array", {"data": {"key_alias": ["main"]}}), ("alias object", {"data": {"key_alias": {"a": 1}}})],
               ctx.c.token())


@probe("p_rotate_ctype")
def p_rotate_ctype(ctx):
    tok = ctx.c.token()
    body = json.dumps({"data": {"key_alias": "spare"}})
    bad = []
    for ct in ("text/plain", None, "application/x-www-form-urlencoded"):
        r = ctx.c.call("POST", "rotate-key", body=body, auth=bearer(tok), ctype=ct)
        if not 400 <= r.status < 500:
            bad.append(f"{ct}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_rotate_unknown")
def p_rotate_unknown(ctx):
    tok = ctx.c.token()
    alias = "no-such-alias-" + secrets.token_hex(3)
    r1 = ctx.c.rotate(bearer(tok), alias)
    r2 = ctx.c.rotate(bearer(tok), alias)
    expect(400 <= r1.status < 500 and 400 <= r2.status < 500, f"rotating unknown alias: {r1.status}, again {r2.status}")


@probe("p_rotate_fresh")
def p_rotate_fresh(ctx):
    tok = ctx.c.token()
    keys = [ctx.c.fresh_key(bearer(tok))[1] for _ in range(4)]
    expect(len(set(keys + [ctx.pt])) == 5, "a rotation answered a data key seen before")


@probe("p_old_keys")
def p_old_keys(ctx):
    c = ctx.c
    tok = c.token()
    k1 = c.fresh_key(bearer(tok))
    k2 = c.fresh_key(bearer(tok))
    c.fresh_key(bearer(tok), "spare")
    for label, (ek, pt) in (("first", k1), ("second", k2), ("wrapped", (ctx.ek, ctx.pt))):
        r = c.decrypt(bearer(tok), "main", ek)
        expect(r.status == 200 and lenient_key(r.json["data"]["plaintext_key"]) == pt,
               f"the {label} key no longer decrypts after a rotation: {r.status}")


def rotations(ctx, n, alias="main"):
    tok = ctx.c.token()
    return [ctx.c.fresh_key(bearer(tok), alias) for _ in range(n)]


@probe("p_nonce_unique")
def p_nonce_unique(ctx):
    keys = rotations(ctx, 8)
    nonces = [nonce_of(ek) for ek, _ in keys]
    expect(len(set(nonces)) == len(nonces), "two rotated keys are sealed under one nonce")
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            a, b = env_raw(keys[i][0]), env_raw(keys[j][0])
            xp = bytes(p ^ q for p, q in zip(keys[i][1], keys[j][1]))
            expect(xp not in bytes(p ^ q for p, q in zip(a, b)), "one keystream sealed two keys")


@probe("p_nonce_random")
def p_nonce_random(ctx):
    nonces = list(dict.fromkeys(nonce_of(ek) for ek, _ in rotations(ctx, 6)))
    for n in nonces:
        expect(n.count(0) < 8, f"a nonce with {n.count(0)} zero bytes of 24: {n.hex()}")
    for i in range(len(nonces)):
        for j in range(i + 1, len(nonces)):
            same = sum(1 for p, q in zip(nonces[i], nonces[j]) if p == q)
            expect(same < 8, f"two nonces agree in {same} of 24 bytes: not random")


def untemper(y):
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    t = y
    for _ in range(5):
        t = y ^ ((t << 7) & 0x9D2C5680)
    y = t & 0xFFFFFFFF
    t = y
    for _ in range(3):
        t = y ^ (t >> 11)
    return t & 0xFFFFFFFF


@probe("p_dek_unpredictable")
def p_dek_unpredictable(ctx):
    keys = [pt for _, pt in rotations(ctx, 79)]
    words = []
    for pt in keys[:78]:
        words += [int.from_bytes(pt[4 * i: 4 * i + 4], "little") for i in range(8)]
    clone = random.Random()
    clone.setstate((3, tuple(untemper(w) for w in words) + (624,), None))
    predicted = clone.randbytes(32)
    expect(predicted != keys[78], "the 79th rotated data key was predicted from the 78 before it "
                                   "(Mersenne Twister state recovered)")


# ---- methods and HTTP


def methods_check(ctx, methods):
    c = ctx.c
    tok = c.token()
    bad = []
    for ep in ENDPOINTS:
        for m in methods:
            if ep == "auth":
                kw = {"auth": Client.basic(), "body": "grant_type=client_credentials",
                      "ctype": "application/x-www-form-urlencoded"}
            elif ep == "decrypt-key":
                kw = {"auth": bearer(tok), "body": {"data": {"key_alias": "main", "encrypted_key": ctx.ek}}}
            else:
                kw = {"auth": bearer(tok), "body": {"data": {"key_alias": "main"}}}
            r = c.call(m, ep, **kw)
            allow = [x.strip().upper() for x in (r.h("Allow") or "").split(",") if x.strip()]
            ok = (r.status == 405 or (m == "OPTIONS" and 200 <= r.status < 300)) and "POST" in allow and m not in allow
            if not ok:
                bad.append(f"{m} {ep}: {r.status} Allow={r.h('Allow')!r}")
    expect(not bad, "; ".join(bad))


@probe("p_methods")
def p_methods(ctx):
    methods_check(ctx, ("GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"))


@probe("p_methods_other")
def p_methods_other(ctx):
    methods_check(ctx, ("TRACE", "PROPFIND", "PURGE"))


@probe("p_head_body")
def p_head_body(ctx):
    s = socket.create_connection((HOST, ctx.port), timeout=3)
    try:
        s.sendall(head_lines("HEAD", BASE + "decrypt-key", []).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        s.settimeout(0.4)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                rest += chunk
        except socket.timeout:
            pass
    finally:
        s.close()
    expect(head.startswith(b"HTTP/1.1 405"), f"HEAD: {head[:30]!r}")
    expect(rest == b"", f"the HEAD answer carried {len(rest)} bytes of body: {rest[:60]!r}")


@probe("p_early_drain")
def p_early_drain(ctx):
    c = ctx.c
    tok = c.token()
    ek, _ = c.fresh_key(bearer(tok))
    conn = http.client.HTTPConnection(HOST, ctx.port, timeout=5)
    try:
        r1 = c.decrypt(bearer("not-a-token"), "main", ek, conn=conn)
        expect(r1.status == 401, f"first: {r1.status}")
        try:
            r2 = c.decrypt(bearer(tok), "main", ek, conn=conn)
        except (http.client.HTTPException, OSError) as e:
            raise Fail(f"the request after a refusal on the same connection failed: {e!r}")
        expect(r2.status == 200, f"the request after a refusal on the same connection got {r2!r}")
    finally:
        conn.close()


@probe("p_keepalive_blocking")
def p_keepalive_blocking(ctx):
    c = ctx.c
    tok = c.token()
    a = http.client.HTTPConnection(HOST, ctx.port, timeout=5)
    b = http.client.HTTPConnection(HOST, ctx.port, timeout=3)
    try:
        r = c.decrypt(bearer(tok), "main", ctx.ek, conn=a)
        expect(r.status == 200, "first connection")
        try:
            r2 = c.decrypt(bearer(tok), "main", ctx.ek, conn=b)
        except (socket.timeout, TimeoutError, OSError):
            raise Fail("a second connection is not served while an idle keep-alive connection is open")
        expect(r2.status == 200, f"second connection: {r2.status}")
    finally:
        a.close()
        b.close()


@probe("p_load")
def p_load(ctx):
    c = ctx.c
    tok = c.token()
    c.decrypt(bearer(tok), "main", ctx.ek)

    def one(_):
        t0 = time.monotonic()
        r = c.decrypt(bearer(tok), "main", ctx.ek, timeout=20)
        return time.monotonic() - t0, r
    with cf.ThreadPoolExecutor(8) as ex:
        res = list(ex.map(one, range(24)))
    expect(all(r.status == 200 and lenient_key(r.json["data"]["plaintext_key"]) == ctx.pt for _, r in res),
           "not every call under load answered 200 with the key")
    p50 = statistics.median(t for t, _ in res)
    expect(p50 <= 0.25, f"p50 {p50 * 1000:.0f} ms over the 250 ms budget at 8 concurrent calls")


# ---- tracing headers


@probe("p_trace_echo_upper")
def p_trace_echo_upper(ctx):
    c = ctx.c
    tok = c.token()
    t = str(uuid.uuid4()).upper()
    r = c.decrypt(bearer(tok), "main", ctx.ek, trace=t)
    expect(r.h("X-Trace-Id") == t, f"sent {t}, echoed {r.h('X-Trace-Id')!r}")


@probe("p_trace_echo_errors")
def p_trace_echo_errors(ctx):
    c = ctx.c
    tok = c.token()
    bad = []
    calls = [("401 auth", lambda t: c.auth(auth=Client.basic(pw="x"), trace=t)),
             ("401 decrypt", lambda t: c.decrypt(bearer("x"), "main", ctx.ek, trace=t)),
             ("404 alias", lambda t: c.decrypt(bearer(tok), "nope", ctx.ek, trace=t)),
             ("405", lambda t: c.call("GET", "decrypt-key", trace=t)),
             ("400", lambda t: c.call("POST", "decrypt-key", body="{", auth=bearer(tok), trace=t)),
             ("415", lambda t: c.call("POST", "decrypt-key", body="{}", auth=bearer(tok), ctype="text/plain", trace=t)),
             ("200 auth", lambda t: c.auth(trace=t))]
    for label, fn in calls:
        t = str(uuid.uuid4())
        r = fn(t)
        if r.h("X-Trace-Id") != t:
            bad.append(f"{label} ({r.status}): {r.h('X-Trace-Id')!r}")
    expect(not bad, "; ".join(bad))


@probe("p_trace_keepalive")
def p_trace_keepalive(ctx):
    c = ctx.c
    tok = c.token()
    conn = http.client.HTTPConnection(HOST, ctx.port, timeout=5)
    try:
        for i in range(3):
            t = str(uuid.uuid4())
            r = c.decrypt(bearer(tok), "main", ctx.ek, conn=conn, trace=t)
            expect(r.h("X-Trace-Id") == t, f"request {i + 1} on one connection: sent {t}, echoed {r.h('X-Trace-Id')}")
    finally:
        conn.close()


@probe("p_no_trace_id")
def p_no_trace_id(ctx):
    c = ctx.c
    r = c.decrypt(bearer(c.token()), "main", ctx.ek, headers={"x-trace-id": None})
    expect(r.status == 200, f"without x-trace-id: {r.status}")


@probe("p_malformed_tracing")
def p_malformed_tracing(ctx):
    c = ctx.c
    tok = c.token()
    bad = []
    for label, h in (("ts no date", {"x-request-timestamp": "not-a-date"}), ("rid no uuid", {"x-request-id": "abc"}),
                     ("tid no uuid", {"x-trace-id": "abc"}), ("no ts", {"x-request-timestamp": None}),
                     ("no rid", {"x-request-id": None})):
        r = c.decrypt(bearer(tok), "main", ctx.ek, headers=h)
        if r.status >= 500:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_request_id_400")
def p_request_id_400(ctx):
    c = ctx.c
    tok = c.token()
    bad = []
    for label, h in (("rid no uuid", {"x-request-id": "abc"}), ("no rid", {"x-request-id": None})):
        r = c.decrypt(bearer(tok), "main", ctx.ek, headers=h)
        if r.status != 400:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_ts_naive")
def p_ts_naive(ctx):
    c = ctx.c
    tok = c.token()
    naive = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None).isoformat(timespec="milliseconds")
    bad = []
    for label, v in (("no offset", naive), ("date only", naive[:10])):
        r = c.decrypt(bearer(tok), "main", ctx.ek, headers={"x-request-timestamp": v})
        if r.status >= 500:
            bad.append(f"{label}: {r.status}")
    expect(not bad, "; ".join(bad))


def skew_check(ctx, secs):
    c = ctx.c
    tok = c.token()
    bad = []
    for off in (-secs, secs):
        r = c.decrypt(bearer(tok), "main", ctx.ek, headers={"x-request-timestamp": now_ts(off)})
        if not 400 <= r.status < 500:
            bad.append(f"{off:+d} s: {r.status}")
    expect(not bad, "; ".join(bad))


@probe("p_skew_hour")
def p_skew_hour(ctx):
    skew_check(ctx, 3600)


@probe("p_skew_10min")
def p_skew_10min(ctx):
    skew_check(ctx, 600)


@probe("p_duration")
def p_duration(ctx):
    c = ctx.c
    for r in (c.auth(), c.decrypt(bearer("x"), "main", ctx.ek)):
        v = r.h("X-Request-Duration")
        try:
            float(v)
        except (TypeError, ValueError):
            raise Fail(f"X-Request-Duration {v!r} is not a number")


# ---- error answers


def error_samples(ctx):
    c = ctx.c
    tok = c.token()
    ek, _ = c.fresh_key(bearer(tok))
    raw = env_raw(ek)
    samples = [
        ("401 auth", c.auth(auth=Client.basic(pw="wrong"))),
        ("401 decrypt", c.decrypt(bearer("x"), "main", ctx.ek)),
        ("400 missing", c.call("POST", "decrypt-key", body={"data": {"key_alias": "main"}}, auth=bearer(tok))),
        ("400 grant", c.auth(body="grant_type=password")),
        ("404 alias", c.decrypt(bearer(tok), "nope", ctx.ek)),
        ("405", c.call("PUT", "decrypt-key", body="{}", auth=bearer(tok))),
        ("415", c.call("POST", "decrypt-key", body="{}", auth=bearer(tok), ctype="text/plain")),
        ("422", c.decrypt(bearer(tok), "main", env_text(flip(raw, len(raw) - 1)))),
    ]
    return [(l, r) for l, r in samples if r.status >= 400]


ERROR_CODES = {400: {"INVALID_REQUEST"}, 401: {"UNAUTHORIZED"}, 403: {"KEY_DISABLED", "KEY_REVOKED"}, 404: {"KEY_NOT_FOUND"},
               405: {"METHOD_NOT_ALLOWED"}, 413: {"PAYLOAD_TOO_LARGE"}, 415: {"UNSUPPORTED_MEDIA_TYPE", "INVALID_REQUEST"},
               422: {"DECRYPTION_FAILED"}, 429: {"RATE_LIMITED"}, 500: {"INTERNAL_ERROR"}, 503: {"SERVICE_UNAVAILABLE"}}


@probe("p_error_shape")
def p_error_shape(ctx):
    bad = []
    for label, r in error_samples(ctx):
        j = r.json
        e = j.get("error") if isinstance(j, dict) else None
        if not (isinstance(e, dict) and isinstance(e.get("code"), str) and isinstance(e.get("message"), str)):
            bad.append(f"{label}: {r.body[:80]!r}")
    expect(not bad, "; ".join(bad))


@probe("p_error_ctype")
def p_error_ctype(ctx):
    bad = [f"{l}: {r.h('Content-Type')!r}" for l, r in error_samples(ctx)
           if (r.h("Content-Type") or "").split(";")[0].strip().lower() != "application/json"]
    expect(not bad, "; ".join(bad))


@probe("p_error_codes")
def p_error_codes(ctx):
    bad = []
    for label, r in error_samples(ctx):
        code = r.err()[0]
        if r.status >= 400 and code not in ERROR_CODES.get(r.status, {code}):
            bad.append(f"{label}: {r.status} {code}")
    expect(not bad, "; ".join(bad))


@probe("p_error_message")
def p_error_message(ctx):
    bad = []
    for label, r in error_samples(ctx):
        m = r.err()[1]
        if m is None:
            continue
        if not (isinstance(m, str) and 1 <= len(m) <= 200 and not re.search(r"[\x00-\x1f\x7f]", m)):
            bad.append(f"{label}: {m!r}")
    expect(not bad, "; ".join(bad))


@probe("p_www_authenticate")
def p_www_authenticate(ctx):
    bad = [l for l, r in error_samples(ctx) if r.status == 401 and not r.h("WWW-Authenticate")]
    expect(not bad, "401 without WWW-Authenticate: " + ", ".join(bad))


@probe("p_cache_control")
def p_cache_control(ctx):
    c = ctx.c
    r1 = c.auth()
    r2 = c.decrypt(bearer(r1.json["data"]["access_token"]), "main", ctx.ek)
    for label, r in (("auth", r1), ("decrypt-key", r2)):
        expect("no-store" in (r.h("Cache-Control") or "").lower(), f"{label} success without Cache-Control: no-store")


# ---- secrets


@probe("p_secret_hint")
def p_secret_hint(ctx):
    s = CLIENT_SECRET
    for pw in (s + "x", s[:-1], "", "wrong-secret-00000000"):
        r = ctx.c.auth(auth=Client.basic(pw=pw))
        text = r.body.decode("utf-8", "replace")
        try:
            text += json.dumps(r.json, ensure_ascii=False)
        except Exception:
            pass
        text += " ".join(v for _, v in r.headers)
        leaked = sorted(x for x in runs(s, 4) if x in text)
        expect(not leaked, f"the 401 to a wrong secret shows parts of the real one: {leaked}")


@probe("p_fingerprint")
def p_fingerprint(ctx):
    c = ctx.c
    tok = c.token()
    r1 = c.decrypt(bearer(tok), "main", ctx.ek)
    r2 = c.rotate(bearer(tok), "main")
    for label, r, key in (("decrypt-key", r1, ctx.pt), ("rotate-key", r2, lenient_key(r2.json["data"]["plaintext_dek"]))):
        hx = {key[i:i + 3].hex() for i in range(30)}
        b64 = runs(base64.b64encode(key).decode(), 6) | runs(b64u_enc(key), 6)
        for k, v in r.headers:
            if k.lower() == "x-trace-id":
                continue
            vl = v.lower()
            expect(not any(x in vl for x in hx) and not any(x in v for x in b64),
                   f"{label}: header {k} carries part of the plaintext key")


@probe("p_set_cookie")
def p_set_cookie(ctx):
    r = ctx.c.auth()
    tok = r.json["data"]["access_token"]
    sig = tok.split(".")[2]
    for k, v in r.headers:
        expect(not any(x in v for x in runs(sig, 8)), f"/auth header {k} carries the token")


@probe("p_token_echo")
def p_token_echo(ctx):
    tok = ctx.c.token()
    hh, pp, _ = tok.split(".")
    fake_sig = b64u_enc(secrets.token_bytes(32))
    garbage = "Zq8" + secrets.token_hex(16)
    for sent, secret_part in ((f"{hh}.{pp}.{fake_sig}", fake_sig), (garbage, garbage)):
        r = ctx.c.decrypt(bearer(sent), "main", ctx.ek)
        text = r.body.decode("utf-8", "replace") + " ".join(v for _, v in r.headers)
        leaked = [x for x in runs(secret_part, 6) if x in text]
        expect(not leaked, f"the 401 quotes the bearer token sent ({leaked[:2]})")


# ---- slow: token lifetime (need a short --expires-in)


@probe("p_token_expired", slow_args=["--expires-in", "3"])
def p_token_expired(ctx):
    c = ctx.c
    t0 = time.time()
    r = c.auth()
    tok = r.json["data"]["access_token"]
    exp_in = r.json["data"]["expires_in"]
    expect(c.decrypt(bearer(tok), "main", ctx.ek).status == 200, "fresh token")
    time.sleep(max(0.0, t0 + exp_in + 1.5 - time.time()))
    r1 = c.decrypt(bearer(tok), "main", ctx.ek)
    r2 = c.rotate(bearer(tok), "main")
    expect(r1.status == 401 and r2.status == 401, f"1.5 s after expires_in: decrypt {r1.status}, rotate {r2.status}")


@probe("p_token_renewed", slow_args=["--expires-in", "3"])
def p_token_renewed(ctx):
    c = ctx.c
    r = c.auth()
    tok = r.json["data"]["access_token"]
    time.sleep(r.json["data"]["expires_in"] + 1.5)
    tok2 = c.token()
    r2 = c.decrypt(bearer(tok2), "main", ctx.ek)
    expect(tok2 != tok and r2.status == 200, f"/auth after expiry: same token {tok2 == tok}, decrypt {r2.status}")


@probe("p_token_reuse", slow_args=["--expires-in", "10"])
def p_token_reuse(ctx):
    c = ctx.c
    t0 = time.time()
    r = c.auth()
    tok = r.json["data"]["access_token"]
    exp_in = r.json["data"]["expires_in"]
    margin = min(30, max(2, exp_in / 10))
    time.sleep(max(0.0, t0 + exp_in - margin - time.time()))
    r1 = c.decrypt(bearer(tok), "main", ctx.ek)
    r2 = c.rotate(bearer(tok), "main")
    expect(r1.status == 200 and r2.status == 200,
           f"{margin:.0f} s before expiry: decrypt {r1.status}, rotate {r2.status}")


# --------------------------------------------------------------------------- defects -> probes

# Each defect fails exactly these fast probes (its rule, in the forms that reach it); a set in
# MAYBE may fail as well, by timing. Slow defects name their slow probe.
EXPECT = {
    "auth_client_id_case_insensitive": {"p_client_id"},
    "auth_secret_strip": {"p_secret_whitespace"},
    "auth_basic_split_colon": {"p_basic_extra_colon"},
    "auth_basic_non_utf8_500": {"p_basic_non_utf8"},
    "auth_bearer_refresh": {"p_bearer_on_auth"},
    "auth_grant_type_case_insensitive": {"p_grant_case"},
    "auth_grant_type_first_wins": {"p_grant_type"},
    "auth_form_credentials": {"p_form_creds"},
    "auth_json_body": {"p_auth_ctype"},
    "auth_charset_refused": {"p_auth_charset"},
    "token_expires_in_float": {"p_expires_in_int"},
    "token_exp_millis": {"p_jwt_exp"},
    "token_long_lived": {"p_expires_bound"},
    "token_exp_leeway": {"slow:p_token_expired"},
    "token_early_expiry": {"slow:p_token_reuse"},
    "token_stale_cache": {"slow:p_token_renewed"},
    "token_single_active": {"p_tokens_coexist"},
    "token_signed_with_client_secret": {"p_jwt_client_secret"},
    "jwt_alg_none_accepted": {"p_alg_none"},
    "jwt_expected_signature_leak": {"p_expected_sig"},
    "bearer_token_in_query": {"p_token_query"},
    "bearer_token_from_cookie": {"p_token_cookie"},
    "bearer_scheme_not_checked": {"p_scheme"},
    "static_key_prefix_match": {"p_static_exact"},
    "rotate_accepts_basic": {"p_basic_creds"},
    "cache_before_auth": {"p_no_token"},
    "envelope_header_unauthenticated": {"p_tamper_header"},
    "envelope_trailing_bytes": {"p_trailing"},
    "envelope_prefix_replace": {"p_prefix_anywhere"},
    "envelope_lenient_base64": {"p_bad_base64", "p_prefix_forms"},
    "envelope_short_tag": {"p_tamper_cold", "p_tamper_warm"},
    "envelope_mac_failure_500": {"p_tamper_cold", "p_tamper_warm"},
    "envelope_prefix_case_insensitive": {"p_prefix_forms"},
    "alias_from_envelope": {"p_other_alias", "p_other_alias_warm"},
    "alias_case_insensitive": {"p_alias_case"},
    "nonce_le_counter": {"p_nonce_random", "p_cross_nonce"},
    "nonce_time_based": {"p_nonce_unique"},
    "dek_mersenne_twister": {"p_dek_unpredictable"},
    "dek_seeded_rng": {"p_cross_dek", "p_dek_unpredictable"},
    "decrypt_cache_prefix_key": {"p_tamper_warm"},
    "decrypt_cache_ignores_alias": {"p_other_alias_warm"},
    "json_errors_narrow": {"p_json_edge"},
    "non_ascii_key_500": {"p_non_ascii"},
    "rotate_alias_unhashable_500": {"p_rotate_alias_types"},
    "content_length_invalid_500": {"p_cl_invalid"},
    "ctype_prefix_match": {"p_ctype_variants"},
    "body_limit_chunked_unbounded": {"p_oversized_chunked"},
    "rotate_no_body_limit": {"p_rotate_oversized"},
    "rotate_ignores_content_type": {"p_rotate_ctype"},
    "missing_fields_wrong_code": {"p_missing_fields_code"},
    "methods_no_allow": {"p_methods", "p_methods_other"},
    "methods_unknown_501": {"p_methods_other"},
    "head_with_body": {"p_head_body"},
    "get_decrypts": {"p_methods"},
    "early_answer_no_drain": {"p_early_drain"},
    "single_threaded": {"p_keepalive_blocking"},
    "slow_kdf_per_call": {"p_load"},
    "trace_id_lowercased": {"p_trace_echo_upper"},
    "trace_id_missing_on_errors": {"p_trace_echo_errors"},
    "trace_id_per_connection": {"p_trace_keepalive"},
    "trace_id_required": {"p_no_trace_id"},
    "request_duration_with_unit": {"p_duration"},
    "naive_timestamp_500": {"p_ts_naive"},
    "skew_window_59min": {"p_skew_10min"},
    "request_id_unvalidated": {"p_request_id_400"},
    "error_flat_shape": {"p_error_shape"},
    "error_problem_json": {"p_error_ctype"},
    "error_code_lowercase": {"p_error_codes", "p_missing_fields_code"},
    "error_message_multiline": {"p_error_message"},
    "error_with_200": {"p_tamper_cold", "p_tamper_warm", "p_tamper_header", "p_other_alias", "p_other_alias_warm"},
    "no_www_authenticate": {"p_www_authenticate"},
    "no_cache_control": {"p_cache_control"},
    "secret_masked_hint": {"p_secret_hint"},
    "static_key_position_oracle": {"p_static_oracle"},
    "key_fingerprint_header": {"p_fingerprint"},
    "token_set_cookie": {"p_set_cookie"},
    "token_echo_in_error": {"p_token_echo"},
    "plaintext_dek_urlsafe": {"p_rotate_plaintext_format"},
    "plaintext_trailing_newline": {"p_plaintext_format"},
    "rotate_revokes_old": {"p_old_keys"},
    "rotate_reuses_dek": {"p_rotate_fresh"},
    "rotate_default_alias_seal": {"p_rotate_ok"},
    "rotate_creates_alias": {"p_rotate_unknown"},
    "rotate_requires_body": {"p_rotate_no_body"},
}

# Failures that depend on timing (the second in which two processes seal).
MAYBE = {
    "nonce_time_based": {"p_cross_nonce"},
}

FIRST = ("p_cross_dek", "p_cross_nonce")


def fast_probes():
    return [n for n, (f, slow) in PROBES.items() if slow is None]


def run_fast(defect, args, verbose=False):
    """-> dict probe -> None (pass) or failure text."""
    ek_pt = wrap("main", defect)
    svc = Service(defect, args)
    try:
        ctx = Ctx(svc.port, ek_pt, "--static-key" in args)
        c = ctx.c
        try:
            tok = c.token()
            r = c.rotate(bearer(tok), "main")
            if r.status == 200:
                d = r.json["data"]
                ctx.first_rotation = (d["encrypted_dek"], lenient_key(d["plaintext_dek"]))
        except Exception:
            pass
        out = {}
        for name in fast_probes():
            f = PROBES[name][0]
            try:
                f(ctx)
                out[name] = None
            except Fail as e:
                out[name] = str(e)
            except Exception as e:
                out[name] = f"error: {e!r}"
        return out
    finally:
        svc.stop()


def run_slow(probe_name, defect):
    f, args = PROBES[probe_name]
    ek_pt = wrap("main", defect)
    svc = Service(defect, list(args) + ["--static-key"])
    try:
        ctx = Ctx(svc.port, ek_pt, True)
        try:
            f(ctx)
            return None
        except Fail as e:
            return str(e)
        except Exception as e:
            return f"error: {e!r}"
    finally:
        svc.stop()


def check_secrets_log():
    """The instrumentation writes every token and plaintext key it answers."""
    fd, path = tempfile.mkstemp(prefix="blind-secrets-")
    os.close(fd)
    try:
        svc = Service(None, ["--static-key"], log=path)
        try:
            c = Client(svc.port)
            tok = c.token()
            ek, pt = c.fresh_key(bearer(tok))
            r = c.decrypt(bearer(tok), "main", ek)
        finally:
            svc.stop()
        lines = open(path).read().split()
        return tok in lines and base64.b64encode(pt).decode() in lines and r.status == 200
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("-j", type=int, default=3, help="defects checked at once")
    a = ap.parse_args()
    t_start = time.time()
    problems = []

    # defects.json and the service agree
    with open(DEFECTS_JSON) as f:
        listed = json.load(f)
    names = [d["name"] for d in listed]
    svc_names = subprocess.run([sys.executable, SERVICE, "--list-defects"], capture_output=True, text=True,
                               check=True).stdout.split("\n")
    svc_names = [l.split("\t")[0] for l in svc_names if l.strip()]
    if sorted(names) != sorted(svc_names) or len(set(names)) != len(names):
        problems.append(f"defects.json and service.py disagree: {sorted(set(names) ^ set(svc_names))}")
    if set(names) != set(EXPECT):
        problems.append(f"defects without an expectation here: {sorted(set(names) ^ set(EXPECT))}")
    for d in listed:
        for k in ("name", "rule", "source", "what", "severity", "service_args"):
            if k not in d:
                problems.append(f"{d.get('name')}: no {k}")
        if d.get("severity") not in ("error", "warning"):
            problems.append(f"{d['name']}: severity {d.get('severity')!r}")
    r = subprocess.run([sys.executable, SERVICE, "--port", "0", "--defect", "no_such_defect"], capture_output=True)
    if r.returncode != 2:
        problems.append(f"an unknown defect exits {r.returncode}, not 2")
    if not check_secrets_log():
        problems.append("BLIND_SECRETS_LOG does not record the token and the plaintext key")

    selected = [n for n in names if a.k in n]
    print(f"{len(PROBES)} probes ({len(fast_probes())} fast), {len(names)} defects, checking {len(selected)}", flush=True)

    # baseline: every probe passes
    base = run_fast(None, ["--static-key"])
    slow_names = [n for n, (f, s) in PROBES.items() if s is not None]
    with cf.ThreadPoolExecutor(len(slow_names)) as ex:
        slow_base = dict(zip(slow_names, ex.map(lambda n: run_slow(n, None), slow_names)))
    base_fail = {k: v for k, v in {**base, **slow_base}.items() if v is not None}
    if base_fail:
        for k, v in base_fail.items():
            problems.append(f"baseline fails {k}: {v}")
    print(f"baseline: {len(base) + len(slow_base) - len(base_fail)}/{len(base) + len(slow_base)} probes pass", flush=True)

    def check(name):
        exp = EXPECT[name]
        args = ["--static-key"]
        res = run_fast(name, args)
        failed = {k for k, v in res.items() if v is not None}
        slow_exp = {e[5:] for e in exp if e.startswith("slow:")}
        fast_exp = exp - {e for e in exp if e.startswith("slow:")}
        slow_res = {}
        if slow_exp:
            for sn in slow_names:
                slow_res[sn] = run_slow(sn, name)
        slow_failed = {k for k, v in slow_res.items() if v is not None}
        maybe = MAYBE.get(name, set())
        ok = (fast_exp <= failed <= fast_exp | maybe) and slow_failed == slow_exp
        detail = {k: res.get(k) or slow_res.get(k) for k in sorted(failed | slow_failed)}
        return name, ok, failed | {"slow:" + s for s in slow_failed}, exp, detail

    results = []
    with cf.ThreadPoolExecutor(a.j) as ex:
        for name, ok, failed, exp, detail in ex.map(check, selected):
            results.append((name, ok))
            mark = "ok  " if ok else "FAIL"
            print(f"{mark} {name:36s} breaks {', '.join(sorted(failed)) or '(nothing)'}", flush=True)
            if a.v or not ok:
                if not ok:
                    print(f"       expected {sorted(exp)}", flush=True)
                for k, v in detail.items():
                    print(f"       {k}: {v[:300]}", flush=True)
            if not ok:
                problems.append(f"{name}: fails {sorted(failed)}, expected {sorted(exp)}")

    n_ok = sum(1 for _, ok in results if ok)
    print(f"\n{n_ok}/{len(results)} defects break exactly their rule; baseline passes "
          f"{'all' if not base_fail else 'NOT all'} {len(PROBES)} probes; {time.time() - t_start:.0f} s")
    for p in problems:
        print("PROBLEM:", p)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
