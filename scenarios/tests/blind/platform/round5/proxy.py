#!/usr/bin/env python3
"""Reverse proxy in front of the platform mock that can inject one contract break.

Python 3 standard library only. Without --defect it is transparent: every request
(method, path, query, headers, body, chunked or not, HEAD included) goes to the
upstream platform and every answer comes back unchanged (status, reason, headers, body).

With --defect NAME it changes exactly what that defect says (see defects.json and
README.md). Defects on webhook events make the proxy receive the events itself: the
webhook URLs clients register (instant outbound `webhook_config.url`, campaign
`app_config.webhook_config.url`) are replaced in requests by a receiver of the proxy,
the client's URL is put back in every answer that shows it, and each event is changed,
signed again with --webhook-secret (HMAC-SHA256 of "{timestamp}.{body}", lower-case
hex in x-webhook-signature) and forwarded to the client's URL, whose answer status is
passed back to the platform.
"""

import argparse
import copy
import csv
import datetime as dt
import hashlib
import hmac
import http.client
import http.server
import io
import json
import os
import re
import socket
import ssl
import sys
import threading
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
DEFECTS_FILE = os.path.join(HERE, "defects.json")

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
    "transfer-encoding", "upgrade", "expect", "content-length",
}
HOOK_PREFIX = "/__r5hook/"
VERBOSE = False


def log(*a):
    if VERBOSE:
        print("[proxy]", *a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- helpers

def jdump(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_ts(s):
    if not isinstance(s, str):
        return None
    try:
        t = s.strip()
        if t.endswith("z"):
            t = t[:-1] + "Z"
        d = dt.datetime.fromisoformat(t)
        if d.tzinfo is None:
            return None
        return d
    except ValueError:
        return None


def fmt_ts(d):
    d = d.astimezone(dt.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def validation(loc, msg, typ):
    return 422, {"detail": [{"loc": loc, "msg": msg, "type": typ}]}


SEG = r"([^/?#]+)"
ROUTES = [
    ("outbound_create", "POST", r"/api/outbounds/v1/orgs/%s/workspaces/%s/outbounds" % (SEG, SEG), ("org", "ws")),
    ("campaign_list", "GET", r"/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns" % (SEG, SEG), ("org", "ws")),
    ("campaign_create", "POST", r"/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns" % (SEG, SEG), ("org", "ws")),
    ("campaign_status", "PUT", r"/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s/status" % (SEG, SEG, SEG), ("org", "ws", "cid")),
    ("cohort_upload", "POST", r"/api/scheduling/v1/orgs/%s/workspaces/%s/(campaigns|deployments)/%s/cohorts/upload" % (SEG, SEG, SEG), ("org", "ws", "parent", "pid")),
    ("cohort_stream", "POST", r"/api/scheduling/v1/orgs/%s/workspaces/%s/(campaigns|deployments)/%s/cohorts/stream" % (SEG, SEG, SEG), ("org", "ws", "parent", "pid")),
    ("cohort_list", "GET", r"/api/scheduling/v1/orgs/%s/workspaces/%s/(campaigns|deployments)/%s/cohorts" % (SEG, SEG, SEG), ("org", "ws", "parent", "pid")),
    ("cohort_file", "GET", r"/api/scheduling/v1/orgs/%s/workspaces/%s/(campaigns|deployments)/%s/cohorts/%s/files" % (SEG, SEG, SEG, SEG), ("org", "ws", "parent", "pid", "coh")),
    ("cohort_get", "GET", r"/api/scheduling/v1/orgs/%s/workspaces/%s/(campaigns|deployments)/%s/cohorts/%s" % (SEG, SEG, SEG, SEG), ("org", "ws", "parent", "pid", "coh")),
    ("campaign_get", "GET", r"/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s" % (SEG, SEG, SEG), ("org", "ws", "cid")),
    ("campaign_patch", "PATCH", r"/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s" % (SEG, SEG, SEG), ("org", "ws", "cid")),
    ("deployment_list", "GET", r"/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments" % (SEG, SEG), ("org", "ws")),
    ("deployment_create", "POST", r"/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments" % (SEG, SEG), ("org", "ws")),
    ("deployment_status", "PUT", r"/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s/status" % (SEG, SEG, SEG), ("org", "ws", "did")),
    ("deployment_get", "GET", r"/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (SEG, SEG, SEG), ("org", "ws", "did")),
    ("deployment_patch", "PATCH", r"/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (SEG, SEG, SEG), ("org", "ws", "did")),
    ("deployment_delete", "DELETE", r"/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (SEG, SEG, SEG), ("org", "ws", "did")),
]
ROUTES = [(n, m, re.compile("^" + p + "/?$"), k) for (n, m, p, k) in ROUTES]
WS_RE = re.compile(r"^/(?:api/[^/]+/v1|sim/v1|admin/v1)/orgs/([^/?#]+)/workspaces/([^/?#]+)(?:/|$)")


def match_route(method, path):
    m = method.upper()
    if m == "HEAD":
        m = "GET"
    for name, meth, rx, keys in ROUTES:
        if meth != m:
            continue
        mo = rx.match(path)
        if mo:
            return name, dict(zip(keys, mo.groups()))
    return None, {}


def split_query(q):
    """Raw query pairs, kept as written."""
    out = []
    if not q:
        return out
    for part in q.split("&"):
        if part == "":
            continue
        if "=" in part:
            k, v = part.split("=", 1)
        else:
            k, v = part, None
        out.append([k, v])
    return out


def join_query(pairs):
    return "&".join(k if v is None else k + "=" + v for k, v in pairs)


def qget(pairs, name):
    val = None
    for k, v in pairs:
        if urllib.parse.unquote_plus(k) == name:
            val = urllib.parse.unquote_plus(v or "")
    return val


# ----------------------------------------------------------------------------- messages

class Message:
    """A request or an answer: headers as a list of [name, value], body bytes."""

    def __init__(self, headers, body):
        self.headers = [list(h) for h in headers]
        self.body = body
        self._json = None
        self._parsed = False
        self.dirty = False

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def set_header(self, name, value):
        self.headers = [h for h in self.headers if h[0].lower() != name.lower()]
        if value is not None:
            self.headers.append([name, value])

    def json(self):
        if not self._parsed:
            self._parsed = True
            try:
                self._json = json.loads(self.body.decode("utf-8")) if self.body else None
            except (ValueError, UnicodeDecodeError):
                self._json = None
        return self._json

    def set_json(self, obj):
        self._json = obj
        self._parsed = True
        self.body = jdump(obj)
        self.dirty = True

    def set_body(self, body):
        self.body = body
        self._parsed = False
        self.dirty = True


class Response(Message):
    def __init__(self, status, reason, headers, body, chunked=False, close=False):
        super().__init__(headers, body)
        self.status = status
        self.reason = reason
        self.chunked = chunked
        self.close = close

    @staticmethod
    def make(status, obj=None, body=None, ctype="application/json"):
        headers = []
        if obj is not None:
            body = jdump(obj)
        if body is None:
            body = b""
        if ctype and (obj is not None or body):
            headers.append(["content-type", ctype])
        if status != 204:
            headers.append(["content-length", str(len(body))])
        headers.append(["date", http_date()])
        return Response(status, http.client.responses.get(status, ""), headers, body)


def http_date():
    return dt.datetime.now(dt.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")


class Ctx(Message):
    def __init__(self, method, target, headers, body, chunked):
        super().__init__(headers, body)
        self.method = method
        self.target = target
        path, _, query = target.partition("?")
        self.path = path
        self.query = split_query(query)
        self.query_dirty = False
        self.chunked = chunked
        self.op, self.p = match_route(method, path)
        mo = WS_RE.match(path)
        self.ws = (mo.group(1), mo.group(2)) if mo else None
        self.saved = {}

    @property
    def key(self):
        return self.header("x-api-key")

    def q(self, name):
        return qget(self.query, name)

    def set_q(self, name, value):
        pairs = [p for p in self.query if urllib.parse.unquote_plus(p[0]) != name]
        if value is not None:
            pairs.append([name, urllib.parse.quote(str(value), safe="")])
        self.query = pairs
        self.query_dirty = True

    def upstream_target(self):
        if not self.query_dirty:
            return self.target
        q = join_query(self.query)
        return self.path + ("?" + q if q else "")


# ----------------------------------------------------------------------------- upstream

class Upstream:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.scheme = u.scheme or "http"
        self.host = u.hostname
        self.port = u.port or (443 if self.scheme == "https" else 80)
        self.base_path = u.path.rstrip("/")

    def conn(self, timeout=120):
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def send(self, method, target, headers, body, chunked=False, had_length=False):
        c = self.conn()
        try:
            c.putrequest(method, self.base_path + target, skip_host=True, skip_accept_encoding=True)
            has_host = False
            for k, v in headers:
                if k.lower() in HOP_BY_HOP:
                    continue
                if k.lower() == "host":
                    has_host = True
                c.putheader(k, v)
            if not has_host:
                c.putheader("Host", "%s:%d" % (self.host, self.port))
            if chunked:
                c.putheader("Transfer-Encoding", "chunked")
            elif body or had_length:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders()
            try:
                if chunked:
                    data = (b"%x\r\n" % len(body) + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
                    c.send(data)
                elif body:
                    c.send(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # an early answer: read it below
            r = c.getresponse()
            data = r.read()
            hdrs = [[k, v] for k, v in r.getheaders()]
            te = (r.getheader("transfer-encoding") or "").lower()
            conn_hdr = (r.getheader("connection") or "").lower()
            return Response(r.status, r.reason, hdrs, data, chunked="chunked" in te,
                            close="close" in conn_hdr)
        finally:
            c.close()

    def api(self, method, target, key, obj=None, extra_headers=None):
        """The proxy's own calls (reads before a change, replays)."""
        headers = [["Host", "%s:%d" % (self.host, self.port)], ["x-harness-observer", "r5-proxy"]]
        if key is not None:
            headers.append(["X-API-Key", key])
        body = b""
        if obj is not None:
            body = jdump(obj)
            headers.append(["Content-Type", "application/json"])
        if extra_headers:
            headers.extend(extra_headers)
        r = self.send(method, target, headers, body, had_length=obj is not None)
        return r


# ----------------------------------------------------------------------------- state

class State:
    def __init__(self, proxy):
        self.lock = threading.RLock()
        self.proxy = proxy
        self.d = {}

    def get(self, name, factory):
        with self.lock:
            if name not in self.d:
                self.d[name] = factory()
            return self.d[name]


# ----------------------------------------------------------------------------- resources in answers

CAMPAIGN_OPS = {"campaign_create", "campaign_get", "campaign_list", "campaign_patch", "campaign_status"}
DEPLOYMENT_OPS = {"deployment_create", "deployment_get", "deployment_list", "deployment_patch", "deployment_status"}
COHORT_OPS = {"cohort_upload", "cohort_stream", "cohort_get", "cohort_list"}


def objs_of(ctx, resp, ops):
    if ctx.op not in ops or resp.status != 200:
        return []
    j = resp.json()
    if isinstance(j, dict) and isinstance(j.get("items"), list) and ctx.op.endswith("_list"):
        return [x for x in j["items"] if isinstance(x, dict)]
    if isinstance(j, dict):
        return [j]
    return []


def campaigns_in(ctx, resp):
    return objs_of(ctx, resp, CAMPAIGN_OPS)


def deployments_in(ctx, resp):
    return objs_of(ctx, resp, DEPLOYMENT_OPS)


def cohorts_in(ctx, resp):
    return objs_of(ctx, resp, COHORT_OPS)


def touch(resp):
    resp.set_json(resp.json())


# ----------------------------------------------------------------------------- defects

class Defect:
    name = None
    webhook = False  # changes webhook events: the proxy receives them

    def __init__(self, proxy):
        self.proxy = proxy
        self.up = proxy.up
        self.st = proxy.state

    def request(self, ctx):
        return None

    def response(self, ctx, resp):
        pass

    def event(self, ev):
        """ev: dict with 'body' (parsed), 'headers' (list); return 'drop' to swallow it."""
        return None

    # helpers
    def now(self, ctx):
        r = self.up.api("GET", "/sim/v1/clock", ctx.key)
        if r.status == 200 and isinstance(r.json(), dict):
            t = parse_ts(r.json().get("now"))
            if t:
                return t
        return dt.datetime.now(dt.timezone.utc)

    def read(self, ctx, target):
        r = self.up.api("GET", target, ctx.key)
        return r.json() if r.status == 200 else None


REGISTRY = {}


def defect(cls):
    REGISTRY[cls.name] = cls
    return cls


def campaign_path(ctx, cid=None):
    return "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s" % (ctx.p["org"], ctx.p["ws"], cid or ctx.p["cid"])


def deployment_path(ctx, did=None):
    return "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (ctx.p["org"], ctx.p["ws"], did or ctx.p["did"])


# ---- instant outbound

@defect
class OutboundAttemptIdMismatch(Defect):
    name = "outbound_attempt_id_mismatch"

    def response(self, ctx, resp):
        if ctx.op == "outbound_create" and resp.status == 200:
            j = resp.json()
            if isinstance(j, dict) and isinstance(j.get("attempt_id"), str):
                j["attempt_id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, "request:" + j["attempt_id"]))
                resp.set_json(j)


@defect
class Outbound422ErrorShape(Defect):
    name = "outbound_422_error_shape"

    def response(self, ctx, resp):
        if ctx.op == "outbound_create" and resp.status == 422:
            j = resp.json()
            msg = "invalid request"
            if isinstance(j, dict) and j.get("detail"):
                d = j["detail"][0]
                msg = "%s: %s" % (".".join(str(x) for x in d.get("loc", [])), d.get("msg"))
            resp.set_json({"error": {"message": msg, "type": "invalid_request_error", "code": "validation_error"}})


@defect
class OutboundEventStatusCompleted(Defect):
    name = "outbound_event_status_completed"
    webhook = True

    def event(self, ev):
        b = ev["body"]
        if "campaign_id" not in b and b.get("status") == "connected":
            b["status"] = "completed"


@defect
class EventMetadataDropped(Defect):
    name = "event_metadata_dropped"
    webhook = True

    def event(self, ev):
        b = ev["body"]
        if isinstance(b.get("webhook_config"), dict):
            b["webhook_config"]["metadata"] = None
        if "campaign_id" in b:
            b["metadata"] = None


# ---- campaigns: values

@defect
class CampaignStatusUppercase(Defect):
    name = "campaign_status_uppercase"

    def response(self, ctx, resp):
        objs = campaigns_in(ctx, resp)
        for o in objs:
            if isinstance(o.get("status"), str):
                o["status"] = o["status"].upper()
        if objs:
            touch(resp)


OFFSET_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?)([+-]\d\d:?\d\d)$")


@defect
class CampaignStartOffsetIgnored(Defect):
    name = "campaign_start_offset_ignored"

    def request(self, ctx):
        if ctx.op in ("campaign_create", "campaign_patch"):
            j = ctx.json()
            if isinstance(j, dict):
                changed = False
                for f in ("start_timestamp", "end_timestamp"):
                    v = j.get(f)
                    if isinstance(v, str):
                        mo = OFFSET_RE.match(v.strip())
                        if mo:
                            j[f] = mo.group(1) + "Z"
                            changed = True
                if changed:
                    ctx.set_json(j)


@defect
class CampaignDescriptionCut128(Defect):
    name = "campaign_description_cut_128"

    def response(self, ctx, resp):
        objs = [o for o in campaigns_in(ctx, resp) if isinstance(o.get("description"), str) and len(o["description"]) > 128]
        for o in objs:
            o["description"] = o["description"][:128]
        if objs:
            touch(resp)


@defect
class CampaignListStatusFilterIgnored(Defect):
    name = "campaign_list_status_filter_ignored"

    def request(self, ctx):
        if ctx.op == "campaign_list" and ctx.q("campaign_status") is not None:
            ctx.set_q("campaign_status", None)


@defect
class CampaignListLeaksOtherWorkspace(Defect):
    name = "campaign_list_leaks_other_workspace"

    def response(self, ctx, resp):
        seen = self.st.get("seen_campaigns", dict)
        ws = (ctx.p.get("org"), ctx.p.get("ws"))
        if ctx.op in ("campaign_create", "campaign_list") and resp.status == 200:
            with self.st.lock:
                for o in campaigns_in(ctx, resp):
                    if isinstance(o.get("campaign_id"), str):
                        seen.setdefault(ws, {})[o["campaign_id"]] = copy.deepcopy(o)
        if ctx.op == "campaign_list" and resp.status == 200:
            j = resp.json()
            if not isinstance(j, dict) or not isinstance(j.get("items"), list):
                return
            search = (ctx.q("search") or "").lower()
            status = ctx.q("campaign_status")
            have = {o.get("campaign_id") for o in j["items"] if isinstance(o, dict)}
            extra = []
            with self.st.lock:
                for other, items in seen.items():
                    if other == ws:
                        continue
                    for cid, o in items.items():
                        if cid in have:
                            continue
                        text = ((o.get("name") or "") + "\n" + (o.get("description") or "")).lower()
                        if search and search not in text:
                            continue
                        if status and o.get("status") != status:
                            continue
                        extra.append(copy.deepcopy(o))
            if extra:
                j["items"].extend(extra)
                if isinstance(j.get("total"), int):
                    j["total"] += len(extra)
                resp.set_json(j)


@defect
class CampaignPatchNotPersisted(Defect):
    name = "campaign_patch_not_persisted"

    def request(self, ctx):
        if ctx.op == "campaign_patch":
            j = ctx.json()
            if isinstance(j, dict) and "name" in j:
                ctx.saved["name"] = j.pop("name")
                ctx.set_json(j)

    def response(self, ctx, resp):
        if ctx.op == "campaign_patch" and resp.status == 200 and "name" in ctx.saved:
            j = resp.json()
            if isinstance(j, dict):
                j["name"] = ctx.saved["name"]
                resp.set_json(j)


@defect
class CampaignPatchResetsRetryConfig(Defect):
    name = "campaign_patch_resets_retry_config"
    DEFAULTS = {"max_retries": 0, "retry_on": [], "threshold_seconds": 10, "retry_interval_minutes": 30}

    def request(self, ctx):
        if ctx.op == "campaign_patch":
            j = ctx.json()
            rc = j.get("app_config", {}).get("retry_config") if isinstance(j, dict) and isinstance(j.get("app_config"), dict) else None
            if isinstance(rc, dict):
                for k, v in self.DEFAULTS.items():
                    if k not in rc or rc[k] is None:
                        if k == "threshold_seconds" and isinstance(rc.get("retry_on"), dict):
                            continue
                        rc[k] = copy.deepcopy(v)
                ctx.set_json(j)


@defect
class CampaignPatchAllowedWhileActive(Defect):
    name = "campaign_patch_allowed_while_active"

    def response(self, ctx, resp):
        if ctx.op != "campaign_patch" or resp.status != 409:
            return
        cur = self.read(ctx, campaign_path(ctx))
        if not isinstance(cur, dict) or cur.get("status") != "active":
            return
        st = campaign_path(ctx) + "/status"
        if self.up.api("PUT", st, ctx.key, {"action": "pause"}).status != 200:
            return
        r = self.up.send("PATCH", ctx.upstream_target(), ctx.headers, ctx.body, had_length=True)
        r2 = self.up.api("PUT", st, ctx.key, {"action": "resume"})
        if r.status == 200 and r2.status == 200:
            resp.status, resp.reason = 200, "OK"
            resp.set_json(r2.json())


@defect
class CampaignUnknownId422(Defect):
    name = "campaign_unknown_id_422"

    def response(self, ctx, resp):
        if ctx.op in ("campaign_get", "campaign_patch", "campaign_status") and resp.status == 404:
            j = resp.json()
            err = j.get("error") if isinstance(j, dict) else None
            if isinstance(err, dict) and err.get("code") == "campaign_not_found":
                resp.status, resp.reason = 422, "Unprocessable Entity"
                resp.set_json({"detail": [{"loc": ["path", "campaign_id"],
                                           "msg": "Value error, unknown campaign_id %r" % ctx.p.get("cid"),
                                           "type": "value_error"}]})


# ---- campaigns: states and time

class FakeStatus(Defect):
    """Keeps a status for some campaigns that the platform does not have."""

    def fake(self):
        return self.st.get("fake_status", dict)

    def response(self, ctx, resp):
        fake = self.fake()
        objs = [o for o in campaigns_in(ctx, resp) if o.get("campaign_id") in fake]
        for o in objs:
            o["status"] = fake[o["campaign_id"]]
        if objs:
            touch(resp)

    def answer_as(self, ctx, status):
        cur = self.read(ctx, campaign_path(ctx))
        if not isinstance(cur, dict):
            return None
        cur["status"] = status
        cur["updated_at"] = fmt_ts(self.now(ctx))
        return Response.make(200, cur)


@defect
class CampaignCancelledResumable(FakeStatus):
    name = "campaign_cancelled_resumable"

    def request(self, ctx):
        if ctx.op == "campaign_status":
            j = ctx.json()
            if isinstance(j, dict) and j.get("action") == "resume":
                cur = self.read(ctx, campaign_path(ctx))
                if isinstance(cur, dict) and cur.get("status") == "cancelled":
                    with self.st.lock:
                        self.fake()[ctx.p["cid"]] = "active"
                    return self.answer_as(ctx, "active")
        return None


@defect
class CampaignPauseKeepsDialling(FakeStatus):
    name = "campaign_pause_keeps_dialling"

    def request(self, ctx):
        if ctx.op != "campaign_status":
            return None
        j = ctx.json()
        action = j.get("action") if isinstance(j, dict) else None
        cid = ctx.p["cid"]
        fake = self.fake()
        if action == "pause":
            cur = self.read(ctx, campaign_path(ctx))
            if isinstance(cur, dict) and cur.get("status") in ("active", "scheduled"):
                with self.st.lock:
                    fake[cid] = "paused"
                return self.answer_as(ctx, "paused")
        elif action == "resume" and cid in fake:
            with self.st.lock:
                fake.pop(cid, None)
            cur = self.read(ctx, campaign_path(ctx))
            if isinstance(cur, dict):
                cur["updated_at"] = fmt_ts(self.now(ctx))
                return Response.make(200, cur)
        elif action == "cancel":
            with self.st.lock:
                fake.pop(cid, None)
        return None


@defect
class CampaignActivationLate60s(Defect):
    name = "campaign_activation_late_60s"

    def starts(self):
        return self.st.get("starts", dict)

    def request(self, ctx):
        if ctx.op in ("campaign_create",):
            j = ctx.json()
            if isinstance(j, dict):
                ctx.saved["start"] = parse_ts(j.get("start_timestamp"))
        return None

    def response(self, ctx, resp):
        starts = self.starts()
        if ctx.op == "campaign_create" and resp.status == 200 and ctx.saved.get("start"):
            j = resp.json()
            if isinstance(j, dict) and j.get("campaign_id"):
                starts[j["campaign_id"]] = ctx.saved["start"]
        objs = campaigns_in(ctx, resp)
        for o in objs:
            s = parse_ts(o.get("start_timestamp"))
            if s and o.get("campaign_id"):
                starts[o["campaign_id"]] = s
        targets = [o for o in objs if o.get("status") == "active" and starts.get(o.get("campaign_id"))]
        if not targets:
            return
        now = self.now(ctx)
        changed = False
        for o in targets:
            if now < starts[o["campaign_id"]] + dt.timedelta(seconds=60):
                o["status"] = "scheduled"
                changed = True
        if changed:
            touch(resp)


@defect
class CampaignNotEndedAtEnd(Defect):
    name = "campaign_not_ended_at_end"

    def response(self, ctx, resp):
        objs = [o for o in campaigns_in(ctx, resp) if o.get("status") == "ended"]
        for o in objs:
            o["status"] = "active"
        if objs:
            touch(resp)


class ScheduleOverlay(Defect):
    """Stores a changed schedule and shows the client's own in every answer."""
    campaign = True
    deployment = False

    def change(self, sched, kind):
        """Change sched in place (kind 'campaign' or 'deployment'); return True when changed."""
        raise NotImplementedError

    def overlay(self):
        return self.st.get("schedule_overlay", dict)

    def request(self, ctx):
        field = None
        if self.campaign and ctx.op in ("campaign_create", "campaign_patch"):
            field, kind = "allowed_schedule", "campaign"
        if self.deployment and ctx.op in ("deployment_create", "deployment_patch"):
            field, kind = "inbound_config", "deployment"
        if not field:
            return None
        j = ctx.json()
        if not isinstance(j, dict) or not isinstance(j.get(field), dict):
            return None
        original = copy.deepcopy(j[field])
        if self.change(j[field], kind):
            ctx.saved["schedule"] = (field, original)
            ctx.set_json(j)
        return None

    def response(self, ctx, resp):
        ov = self.overlay()
        if "schedule" in ctx.saved and resp.status == 200:
            j = resp.json()
            rid = None
            if isinstance(j, dict):
                rid = j.get("campaign_id") or j.get("deployment_id")
            rid = rid or ctx.p.get("cid") or ctx.p.get("did")
            if rid:
                with self.st.lock:
                    ov[rid] = ctx.saved["schedule"]
        elif ctx.op in ("campaign_patch", "deployment_patch") and resp.status == 200:
            # a PATCH that sets a schedule the defect leaves alone, or clears it
            j = ctx.json()
            rid = ctx.p.get("cid") or ctx.p.get("did")
            if isinstance(j, dict) and ("allowed_schedule" in j or "inbound_config" in j):
                with self.st.lock:
                    ov.pop(rid, None)
        objs = campaigns_in(ctx, resp) + deployments_in(ctx, resp)
        changed = False
        for o in objs:
            rid = o.get("campaign_id") or o.get("deployment_id")
            if rid in ov:
                field, original = ov[rid]
                if isinstance(o.get(field), dict):
                    o[field] = copy.deepcopy(original)
                    changed = True
        if changed:
            touch(resp)


def hhmm_add(s, minutes):
    try:
        h, m = s.split(":")
        t = (int(h) * 60 + int(m) + minutes) % 1440
        return "%02d:%02d" % (t // 60, t % 60)
    except (ValueError, AttributeError):
        return s


@defect
class CampaignWindowEndPlusMinute(ScheduleOverlay):
    name = "campaign_window_end_plus_minute"

    def change(self, sched, kind):
        e = sched.get("allowed_end_time")
        if isinstance(e, str):
            n = hhmm_add(e, 1)
            if n != sched.get("allowed_start_time"):
                sched["allowed_end_time"] = n
                return True
        return False


ALL_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@defect
class CampaignDaysIgnored(ScheduleOverlay):
    name = "campaign_days_ignored"

    def change(self, sched, kind):
        if isinstance(sched.get("allowed_days"), list) and sched["allowed_days"] != ALL_DAYS:
            sched["allowed_days"] = list(ALL_DAYS)
            return True
        return False


STANDARD_OFFSET = {
    "America/New_York": "Etc/GMT+5", "America/Detroit": "Etc/GMT+5", "America/Toronto": "Etc/GMT+5",
    "America/Chicago": "Etc/GMT+6", "America/Denver": "Etc/GMT+7", "America/Los_Angeles": "Etc/GMT+8",
    "America/Halifax": "Etc/GMT+4", "Europe/London": "Etc/GMT", "Europe/Dublin": "Etc/GMT",
    "Europe/Lisbon": "Etc/GMT", "Europe/Paris": "Etc/GMT-1", "Europe/Berlin": "Etc/GMT-1",
    "Europe/Madrid": "Etc/GMT-1", "Europe/Rome": "Etc/GMT-1", "Europe/Amsterdam": "Etc/GMT-1",
    "Europe/Brussels": "Etc/GMT-1", "Europe/Vienna": "Etc/GMT-1", "Europe/Zurich": "Etc/GMT-1",
    "Europe/Stockholm": "Etc/GMT-1", "Europe/Warsaw": "Etc/GMT-1", "Europe/Athens": "Etc/GMT-2",
    "Europe/Helsinki": "Etc/GMT-2", "Europe/Kiev": "Etc/GMT-2", "Europe/Kyiv": "Etc/GMT-2",
    "Australia/Sydney": "Etc/GMT-10", "Australia/Melbourne": "Etc/GMT-10", "Australia/Hobart": "Etc/GMT-10",
    "Australia/Adelaide": "Etc/GMT-9", "Pacific/Auckland": "Etc/GMT-12", "America/Santiago": "Etc/GMT+4",
}


@defect
class ZoneStandardOffset(ScheduleOverlay):
    name = "zone_standard_offset"
    campaign = True
    deployment = True

    def change(self, sched, kind):
        tz = sched.get("timezone")
        if tz in STANDARD_OFFSET:
            sched["timezone"] = STANDARD_OFFSET[tz]
            return True
        return False


@defect
class DeploymentInboundTimezoneUtc(ScheduleOverlay):
    name = "deployment_inbound_timezone_utc"
    campaign = False
    deployment = True

    def change(self, sched, kind):
        if isinstance(sched.get("timezone"), str) and sched["timezone"] not in ("UTC", "Etc/UTC"):
            sched["timezone"] = "UTC"
            return True
        return False


@defect
class OvernightWindowCutAtMidnight(ScheduleOverlay):
    name = "overnight_window_cut_at_midnight"
    campaign = True
    deployment = True

    def change(self, sched, kind):
        a, b = ("allowed_start_time", "allowed_end_time") if kind == "campaign" else ("start_time", "end_time")
        st, en = sched.get(a), sched.get(b)
        if isinstance(st, str) and isinstance(en, str) and en < st and en != "00:00":
            sched[b] = "00:00"
            return True
        return False


# ---- limits

class LimitDefect(Defect):
    def refuse(self, loc, msg, typ):
        s, body = validation(loc, msg, typ)
        return Response.make(s, body)


@defect
class LimitStartMinEdgeRefused(LimitDefect):
    name = "limit_start_min_edge_refused"

    def request(self, ctx):
        if ctx.op == "campaign_create":
            j = ctx.json()
            s = parse_ts(j.get("start_timestamp")) if isinstance(j, dict) else None
            if s:
                d = (s - self.now(ctx)).total_seconds()
                if 120 <= d < 121:
                    return self.refuse(["body", "start_timestamp"],
                                       "Value error, start_timestamp must be more than 120 seconds from now", "value_error")
        return None


@defect
class LimitStartMaxAcceptsBeyond(LimitDefect):
    name = "limit_start_max_accepts_beyond"

    def request(self, ctx):
        if ctx.op == "campaign_create":
            j = ctx.json()
            s = parse_ts(j.get("start_timestamp")) if isinstance(j, dict) else None
            if s:
                now = self.now(ctx)
                d = (s - now).total_seconds()
                if 7 * 86400 < d <= 8 * 86400:
                    j["start_timestamp"] = fmt_ts(now + dt.timedelta(days=7))
                    ctx.set_json(j)
        return None


@defect
class LimitEndMinAcceptsShort(LimitDefect):
    name = "limit_end_min_accepts_short"

    def request(self, ctx):
        if ctx.op == "campaign_create":
            j = ctx.json()
            if isinstance(j, dict):
                s, e = parse_ts(j.get("start_timestamp")), parse_ts(j.get("end_timestamp"))
                if s and e and 60 <= (e - s).total_seconds() < 120:
                    j["end_timestamp"] = fmt_ts(s + dt.timedelta(seconds=120))
                    ctx.set_json(j)
        return None


@defect
class LimitThresholdMaxEdgeRefused(LimitDefect):
    name = "limit_threshold_max_edge_refused"

    def request(self, ctx):
        if ctx.op in ("campaign_create", "campaign_patch"):
            j = ctx.json()
            try:
                t = j["app_config"]["retry_config"]["threshold_seconds"]
            except (KeyError, TypeError):
                return None
            if t == 1200:
                return self.refuse(["body", "app_config", "retry_config", "threshold_seconds"],
                                   "Input should be less than 1200", "less_than")
        return None


@defect
class LimitCampaignDescription150Refused(LimitDefect):
    name = "limit_campaign_description_150_refused"

    def request(self, ctx):
        if ctx.op in ("campaign_create", "campaign_patch"):
            j = ctx.json()
            d = j.get("description") if isinstance(j, dict) else None
            if isinstance(d, str) and len(d) == 150:
                return self.refuse(["body", "description"], "String should have less than 150 characters",
                                   "string_too_long")
        return None


@defect
class LimitDeploymentName51Truncated(LimitDefect):
    name = "limit_deployment_name_51_truncated"

    def request(self, ctx):
        if ctx.op in ("deployment_create", "deployment_patch"):
            j = ctx.json()
            n = j.get("name") if isinstance(j, dict) else None
            if isinstance(n, str) and len(n) > 50:
                j["name"] = n[:50]
                ctx.set_json(j)
        return None


@defect
class LimitDeploymentConnectionsEmpty400(LimitDefect):
    name = "limit_deployment_connections_empty_400"

    def request(self, ctx):
        if ctx.op == "deployment_create":
            j = ctx.json()
            if isinstance(j, dict) and j.get("connection_configs") == []:
                return Response.make(400, {"error": {"message": "connection_configs must not be empty",
                                                     "type": "invalid_request_error", "code": "bad_request"}})
        return None


@defect
class LimitListLimit100Refused(LimitDefect):
    name = "limit_list_limit_100_refused"

    def request(self, ctx):
        if ctx.op == "deployment_list":
            v = ctx.q("limit")
            if v is not None and v.strip() == "100":
                return self.refuse(["query", "limit"], "Input should be less than 100", "less_than")
        return None


@defect
class LimitListOffsetNegativeAsZero(LimitDefect):
    name = "limit_list_offset_negative_as_zero"

    def request(self, ctx):
        if ctx.op == "deployment_list":
            v = ctx.q("offset")
            try:
                if v is not None and int(v) < 0:
                    ctx.set_q("offset", "0")
            except ValueError:
                pass
        return None


# ---- deployments

@defect
class DeploymentPatchClearsDescription(Defect):
    name = "deployment_patch_clears_description"

    def request(self, ctx):
        if ctx.op == "deployment_patch":
            j = ctx.json()
            if isinstance(j, dict) and "description" not in j:
                j["description"] = None
                ctx.set_json(j)
        return None


@defect
class DeploymentPatchAppVersionIgnored(Defect):
    name = "deployment_patch_app_version_ignored"

    def request(self, ctx):
        if ctx.op == "deployment_patch":
            j = ctx.json()
            if isinstance(j, dict) and isinstance(j.get("app_version"), int) and not isinstance(j.get("app_version"), bool) \
                    and j["app_version"] >= 1:
                ctx.saved["app_version"] = j.pop("app_version")
                ctx.set_json(j)
        return None

    def response(self, ctx, resp):
        if ctx.op == "deployment_patch" and resp.status == 200 and "app_version" in ctx.saved:
            j = resp.json()
            if isinstance(j, dict):
                j["app_version"] = ctx.saved["app_version"]
                resp.set_json(j)


@defect
class DeploymentPatchDaysMerged(Defect):
    name = "deployment_patch_days_merged"

    def request(self, ctx):
        if ctx.op == "deployment_patch":
            j = ctx.json()
            ic = j.get("inbound_config") if isinstance(j, dict) else None
            if isinstance(ic, dict) and isinstance(ic.get("allowed_days"), list):
                cur = self.read(ctx, deployment_path(ctx))
                old = (cur or {}).get("inbound_config") or {}
                olds = old.get("allowed_days") or []
                merged = list(ic["allowed_days"])
                low = {str(d).lower() for d in merged}
                for d in olds:
                    if str(d).lower() not in low:
                        merged.append(d)
                if merged != ic["allowed_days"]:
                    ic["allowed_days"] = merged
                    ctx.set_json(j)
        return None


@defect
class DeploymentPatchRefusedStillApplies(Defect):
    name = "deployment_patch_refused_still_applies"

    def response(self, ctx, resp):
        if ctx.op == "deployment_patch" and resp.status == 422:
            j = ctx.json()
            if isinstance(j, dict) and "app_id" in j:
                rest = {k: v for k, v in j.items() if k != "app_id"}
                if rest:
                    self.up.api("PATCH", ctx.upstream_target(), ctx.key, rest)


@defect
class DeploymentResumeNotApplied(Defect):
    name = "deployment_resume_not_applied"

    def request(self, ctx):
        if ctx.op == "deployment_status":
            j = ctx.json()
            if isinstance(j, dict) and j.get("action") == "resume":
                cur = self.read(ctx, deployment_path(ctx))
                if isinstance(cur, dict) and cur.get("status") == "paused":
                    cur["status"] = "active"
                    cur["updated_at"] = fmt_ts(self.now(ctx))
                    return Response.make(200, cur)
        return None


@defect
class DeploymentStatusAnswer204(Defect):
    name = "deployment_status_answer_204"

    def response(self, ctx, resp):
        if ctx.op == "deployment_status" and resp.status == 200:
            resp.status, resp.reason = 204, "No Content"
            resp.set_header("content-type", None)
            resp.set_header("content-length", None)
            resp.set_body(b"")


@defect
class DeploymentDeleteSoft(Defect):
    name = "deployment_delete_soft"

    def request(self, ctx):
        if ctx.op == "deployment_delete":
            r = self.up.api("GET", deployment_path(ctx), ctx.key)
            if r.status == 200:
                return Response.make(204)
        return None


@defect
class DeploymentDelete404Detail(Defect):
    name = "deployment_delete_404_detail"

    def response(self, ctx, resp):
        if ctx.op == "deployment_delete" and resp.status == 404:
            resp.set_json({"detail": "Not Found"})


@defect
class DeploymentUpdatedAtFrozen(Defect):
    name = "deployment_updated_at_frozen"

    def response(self, ctx, resp):
        objs = [o for o in deployments_in(ctx, resp) if "created_at" in o and o.get("updated_at") != o.get("created_at")]
        for o in objs:
            o["updated_at"] = o["created_at"]
        if objs:
            touch(resp)


# ---- deployment list

@defect
class DeploymentListSortOrderSwapped(Defect):
    name = "deployment_list_sort_order_swapped"

    def request(self, ctx):
        if ctx.op == "deployment_list":
            v = ctx.q("sort_order")
            if v in ("asc", "desc"):
                ctx.set_q("sort_order", "desc" if v == "asc" else "asc")
                ctx.saved["order"] = v
        return None

    def response(self, ctx, resp):
        if "order" in ctx.saved and resp.status == 200:
            j = resp.json()
            if isinstance(j, dict):
                other = "desc" if ctx.saved["order"] == "asc" else "asc"
                for f in ("next_page_uri", "prev_page_uri"):
                    if isinstance(j.get(f), str):
                        j[f] = j[f].replace("sort_order=" + other, "sort_order=" + ctx.saved["order"])
                resp.set_json(j)


@defect
class DeploymentListDefaultAsc(Defect):
    name = "deployment_list_default_asc"

    def request(self, ctx):
        if ctx.op == "deployment_list" and ctx.q("sort_order") is None:
            ctx.set_q("sort_order", "asc")
            ctx.saved["added"] = True
        return None

    def response(self, ctx, resp):
        if ctx.saved.get("added") and resp.status == 200:
            j = resp.json()
            if isinstance(j, dict):
                for f in ("next_page_uri", "prev_page_uri"):
                    if isinstance(j.get(f), str):
                        j[f] = re.sub(r"[?&]sort_order=asc(?=&|$)", "", j[f])
                        if "?" not in j[f] and "&" in j[f]:
                            j[f] = j[f].replace("&", "?", 1)
                resp.set_json(j)


@defect
class DeploymentListTotalPageSize(Defect):
    name = "deployment_list_total_page_size"

    def response(self, ctx, resp):
        if ctx.op == "deployment_list" and resp.status == 200:
            j = resp.json()
            if isinstance(j, dict) and isinstance(j.get("items"), list) and j.get("total") != len(j["items"]):
                j["total"] = len(j["items"])
                resp.set_json(j)


@defect
class DeploymentListNextUriDropsSearch(Defect):
    name = "deployment_list_next_uri_drops_search"

    def response(self, ctx, resp):
        if ctx.op == "deployment_list" and resp.status == 200:
            j = resp.json()
            if isinstance(j, dict):
                changed = False
                for f in ("next_page_uri", "prev_page_uri"):
                    v = j.get(f)
                    if isinstance(v, str) and "search=" in v:
                        base, _, q = v.partition("?")
                        pairs = [p for p in split_query(q) if urllib.parse.unquote_plus(p[0]) != "search"]
                        j[f] = base + ("?" + join_query(pairs) if pairs else "")
                        changed = True
                if changed:
                    resp.set_json(j)


@defect
class DeploymentListPageUriAbsent(Defect):
    name = "deployment_list_page_uri_absent"

    def response(self, ctx, resp):
        if ctx.op == "deployment_list" and resp.status == 200:
            j = resp.json()
            if isinstance(j, dict):
                gone = [f for f in ("next_page_uri", "prev_page_uri") if f in j and j[f] is None]
                for f in gone:
                    del j[f]
                if gone:
                    resp.set_json(j)


@defect
class DeploymentListPhoneNumbersFirstConnection(Defect):
    name = "deployment_list_phone_numbers_first_connection"

    def response(self, ctx, resp):
        if ctx.op == "deployment_list" and resp.status == 200:
            changed = False
            for o in deployments_in(ctx, resp):
                cc = o.get("connection_configs")
                if isinstance(cc, list) and len(cc) > 1 and isinstance(cc[0], dict):
                    o["phone_numbers"] = list(cc[0].get("phone_numbers") or [])
                    changed = True
            if changed:
                touch(resp)


@defect
class DeploymentErrorCodeInteger(Defect):
    name = "deployment_error_code_integer"

    def response(self, ctx, resp):
        if ctx.op in ("deployment_list", "deployment_delete") and resp.status >= 400:
            j = resp.json()
            if isinstance(j, dict) and isinstance(j.get("error"), dict):
                j["error"]["code"] = resp.status
                resp.set_json(j)


# ---- cohorts

@defect
class CohortUploadAnswersCompleted(Defect):
    name = "cohort_upload_answers_completed"

    def response(self, ctx, resp):
        if ctx.op == "cohort_upload" and resp.status == 200:
            j = resp.json()
            coh = j.get("cohort_id") if isinstance(j, dict) else None
            if not coh:
                return
            target = "/api/scheduling/v1/orgs/%s/workspaces/%s/%s/%s/cohorts/%s" % (
                ctx.p["org"], ctx.p["ws"], ctx.p["parent"], ctx.p["pid"], coh)
            import time
            deadline = time.time() + 5
            while time.time() < deadline:
                cur = self.read(ctx, target)
                if isinstance(cur, dict) and cur.get("status") != "processing":
                    resp.set_json(cur)
                    return
                time.sleep(0.05)


@defect
class DeploymentCohortValidIncludesRejected(Defect):
    name = "deployment_cohort_valid_includes_rejected"

    def response(self, ctx, resp):
        if ctx.p.get("parent") != "deployments":
            return
        changed = False
        for o in cohorts_in(ctx, resp):
            r = o.get("result")
            if isinstance(r, dict) and r.get("rejected_records"):
                r["valid_records"] = r.get("total_records")
                changed = True
        if changed:
            touch(resp)


@defect
class CohortFailedShownCompleted(Defect):
    name = "cohort_failed_shown_completed"

    def response(self, ctx, resp):
        changed = False
        for o in cohorts_in(ctx, resp):
            if o.get("status") == "failed":
                o["status"] = "completed"
                o["result"] = {"total_records": 0, "valid_records": 0, "rejected_records": 0}
                if "failure_reason" in o:
                    o["failure_reason"] = None
                changed = True
        if changed:
            touch(resp)


@defect
class CohortRejectedFileNoReason(Defect):
    name = "cohort_rejected_file_no_reason"

    def response(self, ctx, resp):
        if ctx.op == "cohort_file" and resp.status == 200 and ctx.q("file_type") == "rejected_records" and resp.body:
            try:
                text = resp.body.decode("utf-8")
            except UnicodeDecodeError:
                return
            rows = list(csv.reader(io.StringIO(text, newline="")))
            if not rows or rows[0][-1:] != ["rejected_reason"]:
                return
            out = io.StringIO()
            w = csv.writer(out, lineterminator="\n")
            for row in rows:
                w.writerow(row[:-1])
            resp.set_body(out.getvalue().encode("utf-8"))
            resp.set_header("content-length", str(len(resp.body)))


@defect
class CohortFileOctetStream(Defect):
    name = "cohort_file_octet_stream"

    def response(self, ctx, resp):
        if ctx.op == "cohort_file" and resp.status == 200 and ctx.q("file_type") == "cohort":
            resp.set_header("content-type", "application/octet-stream")
            resp.dirty = True


@defect
class CohortCountsFloat(Defect):
    name = "cohort_counts_float"

    def response(self, ctx, resp):
        if resp.status == 200:
            changed = False
            for o in cohorts_in(ctx, resp):
                r = o.get("result")
                if isinstance(r, dict):
                    for k in ("total_records", "valid_records", "rejected_records"):
                        if isinstance(r.get(k), int):
                            r[k] = float(r[k])
                            changed = True
            if changed:
                touch(resp)


def multipart_boundary(ctype):
    if not ctype or "multipart/form-data" not in ctype.lower():
        return None
    mo = re.search(r'boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))', ctype, re.I)
    if not mo:
        return None
    return (mo.group(1) or mo.group(2)).encode("latin-1")


def multipart_parts(body, boundary):
    """Split a multipart body into (preamble, [(name, raw_segment)], epilogue) keeping bytes exact."""
    delim = b"--" + boundary
    segs = body.split(b"\r\n" + delim)
    first = segs[0]
    if first.startswith(delim):
        pre, first = b"", first[len(delim):]
    else:
        return None
    parts = []
    raw = [first] + segs[1:]
    closing = None
    for i, s in enumerate(raw):
        if s.startswith(b"--"):
            closing = b"".join([b"\r\n" + delim + x for x in raw[i:]])[len(b"\r\n"):]
            break
        head = s.split(b"\r\n\r\n", 1)[0]
        mo = re.search(rb'name="([^"]*)"', head)
        parts.append((mo.group(1).decode("utf-8", "replace") if mo else None, s))
    if closing is None:
        return None
    return pre, parts, closing


def multipart_join(pre, parts, closing, boundary):
    delim = b"--" + boundary
    out = pre + delim + (b"\r\n" + delim).join(s for _, s in parts)
    return out + b"\r\n" + closing


@defect
class CohortCategoryDropped(Defect):
    name = "cohort_category_dropped"

    def request(self, ctx):
        if ctx.op == "cohort_upload":
            b = multipart_boundary(ctx.header("content-type"))
            mp = multipart_parts(ctx.body, b) if b else None
            if mp:
                pre, parts, closing = mp
                kept = [p for p in parts if p[0] != "cohort_category"]
                if len(kept) != len(parts):
                    ctx.set_body(multipart_join(pre, kept, closing, b))
        elif ctx.op == "cohort_stream":
            j = ctx.json()
            if isinstance(j, dict) and "cohort_category" in j:
                del j["cohort_category"]
                ctx.set_json(j)
        return None


@defect
class CohortStream1000Refused(LimitDefect):
    name = "cohort_stream_1000_refused"

    def request(self, ctx):
        if ctx.op == "cohort_stream":
            j = ctx.json()
            if isinstance(j, dict) and isinstance(j.get("users"), list) and len(j["users"]) == 1000:
                return self.refuse(["body", "users"], "List should have at most 999 items after validation, not 1000",
                                   "too_long")
        return None


@defect
class CohortCountryCodeIgnored(Defect):
    name = "cohort_country_code_ignored"

    def request(self, ctx):
        if ctx.op == "cohort_upload":
            b = multipart_boundary(ctx.header("content-type"))
            mp = multipart_parts(ctx.body, b) if b else None
            if not mp:
                return None
            pre, parts, closing = mp
            out = []
            changed = False
            for name, seg in parts:
                if name == "cohort_transformation_file":
                    head, sep, data = seg.partition(b"\r\n\r\n")
                    try:
                        tf = json.loads(data.decode("utf-8"))
                    except (ValueError, UnicodeDecodeError):
                        tf = None
                    if isinstance(tf, dict) and isinstance(tf.get("phone_number"), dict) and "country_code" in tf["phone_number"]:
                        del tf["phone_number"]["country_code"]
                        seg = head + sep + jdump(tf)
                        changed = True
                out.append((name, seg))
            if changed:
                ctx.set_body(multipart_join(pre, out, closing, b))
        elif ctx.op == "cohort_stream":
            j = ctx.json()
            if isinstance(j, dict) and "country_code" in j:
                del j["country_code"]
                ctx.set_json(j)
        return None


# ---- campaign webhook events

class CampaignEvent(Defect):
    webhook = True

    def event(self, ev):
        b = ev["body"]
        if "campaign_id" in b:
            return self.campaign_event(b, ev)
        return None

    def campaign_event(self, b, ev):
        return None


@defect
class CampaignEventRetryAttemptOneBased(CampaignEvent):
    name = "campaign_event_retry_attempt_one_based"

    def campaign_event(self, b, ev):
        if isinstance(b.get("retry_attempt"), int):
            b["retry_attempt"] += 1


@defect
class CampaignEventCohortIdIsCampaignId(CampaignEvent):
    name = "campaign_event_cohort_id_is_campaign_id"

    def campaign_event(self, b, ev):
        b["cohort_id"] = b.get("campaign_id")


@defect
class CampaignEventPhoneNational(CampaignEvent):
    name = "campaign_event_phone_national"

    def campaign_event(self, b, ev):
        p = b.get("user_phone_number")
        if isinstance(p, str) and p.startswith("+"):
            b["user_phone_number"] = p[2:] if p.startswith("+1") else p[1:]


@defect
class CampaignEventShortReportedCompleted(CampaignEvent):
    name = "campaign_event_short_reported_completed"

    def campaign_event(self, b, ev):
        if b.get("completion_status") == "partial":
            b["completion_status"] = "completed"
            b["failure_reason"] = None
            b["next_action_status"] = None


@defect
class CampaignEventMissingRetries(CampaignEvent):
    name = "campaign_event_missing_retries"

    def campaign_event(self, b, ev):
        if isinstance(b.get("retry_attempt"), int) and b["retry_attempt"] > 0:
            return "drop"


@defect
class CampaignEventSignatureBodyOnly(CampaignEvent):
    name = "campaign_event_signature_body_only"

    def campaign_event(self, b, ev):
        ev["sign"] = "body_only"


@defect
class CampaignEventDurationMs(CampaignEvent):
    name = "campaign_event_duration_ms"

    def campaign_event(self, b, ev):
        if isinstance(b.get("duration"), (int, float)) and not isinstance(b.get("duration"), bool):
            b["duration"] = int(round(b["duration"] * 1000))


# ---- authentication

@defect
class AuthOtherWorkspaceKeyAccepted(Defect):
    name = "auth_other_workspace_key_accepted"

    def request(self, ctx):
        keys = self.st.get("ws_keys", dict)
        k = ctx.key
        if ctx.ws and k is not None and ctx.ws in keys and keys[ctx.ws] != k and k in set(keys.values()):
            ctx.saved["swapped"] = True
            ctx.set_header("X-API-Key", keys[ctx.ws])
        return None

    def response(self, ctx, resp):
        keys = self.st.get("ws_keys", dict)
        if ctx.ws and not ctx.saved.get("swapped") and ctx.key and resp.status < 400:
            with self.st.lock:
                keys[ctx.ws] = ctx.key


# ----------------------------------------------------------------------------- the proxy

class Proxy:
    def __init__(self, upstream, defect_name, secret):
        self.up = Upstream(upstream)
        self.state = State(self)
        self.secret = secret
        self.defect = REGISTRY[defect_name](self) if defect_name else None
        self.hook_base = None  # http://host:port/__r5hook/
        self.urls = []  # token -> original URL
        self.url_tokens = {}
        self.url_lock = threading.Lock()

    @property
    def rewrite(self):
        return self.defect is not None and self.defect.webhook

    # -- webhook URLs
    def token_for(self, url):
        with self.url_lock:
            if url not in self.url_tokens:
                self.url_tokens[url] = len(self.urls)
                self.urls.append(url)
            return self.url_tokens[url]

    def receiver_url(self, url):
        return "%s%d" % (self.hook_base, self.token_for(url))

    def rewrite_request_urls(self, ctx):
        if ctx.op not in ("outbound_create", "campaign_create", "campaign_patch"):
            return
        j = ctx.json()
        if not isinstance(j, dict):
            return
        holder = j if ctx.op == "outbound_create" else j.get("app_config")
        if not isinstance(holder, dict):
            return
        wc = holder.get("webhook_config")
        if not isinstance(wc, dict) or not isinstance(wc.get("url"), str):
            return
        orig = wc["url"]
        if orig.startswith(self.hook_base) or not plausible_url(orig):
            return  # a URL the platform may refuse stays as sent, so its refusal is the platform's own
        new = self.receiver_url(orig)
        old_lit, new_lit = jdump(orig), jdump(new)
        if not ctx.dirty and ctx.body.count(old_lit) == 1:
            ctx.set_body(ctx.body.replace(old_lit, new_lit))
        else:
            wc["url"] = new
            ctx.set_json(j)

    def restore_urls(self, body):
        if not self.urls or not body or self.hook_base.encode() not in body:
            return body
        rx = re.compile(re.escape(self.hook_base.encode()) + rb"(\d+)")

        def sub(mo):
            i = int(mo.group(1))
            if i < len(self.urls):
                return jdump(self.urls[i])[1:-1]
            return mo.group(0)

        return rx.sub(sub, body)

    # -- one request
    def handle(self, ctx):
        d = self.defect
        if d is not None:
            if self.rewrite:
                self.rewrite_request_urls(ctx)
            short = d.request(ctx)
            if short is not None:
                return short
        body = ctx.body
        method = ctx.method
        if d is not None and method.upper() == "HEAD":
            # a defect may change the body: take the GET's answer and send only its head
            method = "GET"
        resp = self.up.send(method, ctx.upstream_target(), ctx.headers, body,
                            chunked=ctx.chunked, had_length=ctx.header("content-length") is not None or ctx.dirty)
        if d is not None:
            d.response(ctx, resp)
            if self.rewrite:
                nb = self.restore_urls(resp.body)
                if nb is not resp.body and nb != resp.body:
                    resp.set_body(nb)
        if resp.dirty and resp.header("content-length") is not None:
            resp.set_header("content-length", str(len(resp.body)))
        return resp

    # -- one webhook event from the platform
    def handle_event(self, token, headers, body):
        if token >= len(self.urls):
            return Response.make(404, {"error": {"message": "unknown receiver", "type": "not_found_error", "code": "not_found"}})
        target = self.urls[token]
        sent = self.restore_urls(body)
        ev = {"headers": headers, "sign": None}
        try:
            ev["body"] = json.loads(sent.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            ev["body"] = None
        out = sent
        verdict = None
        if isinstance(ev["body"], dict):
            before = copy.deepcopy(ev["body"])
            verdict = self.defect.event(ev)
            if ev["body"] != before:
                out = jdump(ev["body"])
        if verdict == "drop":
            log("event dropped", target)
            return Response.make(200, body=b"", ctype=None)
        hdrs = [list(h) for h in headers if h[0].lower() not in HOP_BY_HOP and h[0].lower() != "host"]
        if out != body or ev["sign"]:
            ts = None
            for k, v in hdrs:
                if k.lower() == "x-webhook-timestamp":
                    ts = v
            if self.secret is not None and ts is not None:
                if ev["sign"] == "body_only":
                    msg = out
                else:
                    msg = ts.encode() + b"." + out
                sig = hmac.new(self.secret.encode(), msg, hashlib.sha256).hexdigest()
                hdrs = [h for h in hdrs if h[0].lower() != "x-webhook-signature"]
                hdrs.append(["x-webhook-signature", sig])
        return self.forward_event(target, hdrs, out)

    def forward_event(self, url, headers, body):
        u = urllib.parse.urlsplit(url)
        try:
            if u.scheme.lower() == "https":
                c = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=9,
                                                context=ssl.create_default_context())
            else:
                c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=9)
            path = u.path or "/"
            if u.query:
                path += "?" + u.query
            c.putrequest("POST", path, skip_accept_encoding=True)
            for k, v in headers:
                c.putheader(k, v)
            c.putheader("Content-Length", str(len(body)))
            c.endheaders()
            c.send(body)
            r = c.getresponse()
            data = r.read()
            c.close()
            log("event ->", url, r.status)
            ct = r.getheader("content-type")
            return Response.make(r.status, body=data, ctype=ct)
        except (OSError, http.client.HTTPException) as e:
            log("event ->", url, "failed:", e)
            return Response.make(502, {"error": {"message": "webhook receiver unreachable: %s" % e,
                                                 "type": "api_error", "code": "bad_gateway"}})


def plausible_url(url):
    """An http(s) URL with a host, printable ASCII only: what the platform takes as a webhook URL."""
    if not url or any(not ("!" <= ch <= "~") for ch in url):
        return False
    try:
        u = urllib.parse.urlsplit(url)
        port = u.port
    except ValueError:
        return False
    if u.scheme.lower() not in ("http", "https") or not u.hostname:
        return False
    return port is None or 0 < port < 65536


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy = None

    def log_message(self, fmt, *args):
        log(fmt % args)

    def handle_expect_100(self):
        self.send_response_only(100)
        self.end_headers()
        return True

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # trailers
                    while True:
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(chunks), True
        n = self.headers.get("Content-Length")
        if n is not None:
            try:
                return self.rfile.read(int(n)), False
            except ValueError:
                return b"", False
        return b"", False

    def dispatch(self):
        try:
            body, chunked = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        headers = [[k, v] for k, v in self.headers.items()]
        p = self.proxy
        path = self.path
        if p.rewrite and path.startswith(HOOK_PREFIX) and self.command == "POST":
            try:
                token = int(path[len(HOOK_PREFIX):].split("?")[0].strip("/"))
            except ValueError:
                token = 10 ** 9
            resp = p.handle_event(token, headers, body)
        else:
            ctx = Ctx(self.command, path, headers, body, chunked)
            try:
                resp = p.handle(ctx)
            except (OSError, http.client.HTTPException) as e:
                resp = Response.make(502, {"error": {"message": "upstream failed: %s" % e, "type": "api_error",
                                                     "code": "bad_gateway"}})
                resp.close = True
            log(self.command, path, "->", resp.status)
        self.write(resp)

    def write(self, resp):
        out = ["HTTP/1.1 %d %s\r\n" % (resp.status, resp.reason or http.client.responses.get(resp.status, ""))]
        head_only = self.command == "HEAD"
        chunked = resp.chunked and not head_only and resp.status not in (204, 304)
        has_len = False
        for k, v in resp.headers:
            lk = k.lower()
            if lk in ("transfer-encoding", "connection", "keep-alive"):
                continue
            if lk == "content-length":
                if chunked:
                    continue
                has_len = True
            out.append("%s: %s\r\n" % (k, v))
        if chunked:
            out.append("transfer-encoding: chunked\r\n")
        elif not has_len and not head_only and resp.status not in (204, 304) and not (100 <= resp.status < 200):
            out.append("content-length: %d\r\n" % len(resp.body))
        if resp.close:
            out.append("connection: close\r\n")
            self.close_connection = True
        out.append("\r\n")
        data = "".join(out).encode("latin-1")
        if not head_only and resp.status not in (204, 304):
            if chunked:
                if resp.body:
                    data += b"%x\r\n" % len(resp.body) + resp.body + b"\r\n"
                data += b"0\r\n\r\n"
            else:
                data += resp.body
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_TRACE = dispatch


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def load_defects():
    with open(DEFECTS_FILE, encoding="utf-8") as f:
        return json.load(f)


def main(argv=None):
    global VERBOSE
    ap = argparse.ArgumentParser(description="Reverse proxy in front of the platform mock, with one optional contract break.")
    ap.add_argument("--upstream", help="the platform's base URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (port 0: any free port)")
    ap.add_argument("--defect", help="the defect to inject (see --list-defects); none: transparent")
    ap.add_argument("--webhook-secret", help="the platform's webhook signing secret (to sign changed events again)")
    ap.add_argument("--list-defects", action="store_true", help="print defects.json and exit")
    ap.add_argument("--verbose", action="store_true", help="log to stderr")
    a = ap.parse_args(argv)
    VERBOSE = a.verbose
    if a.list_defects:
        with open(DEFECTS_FILE, encoding="utf-8") as f:
            sys.stdout.write(f.read())
        sys.stdout.flush()
        return 0
    if not a.upstream:
        ap.error("--upstream is required")
    names = {d["name"] for d in load_defects()}
    if a.defect is not None and (a.defect not in names or a.defect not in REGISTRY):
        print("unknown defect %r (see --list-defects)" % a.defect, file=sys.stderr)
        return 2
    if a.defect and REGISTRY[a.defect].webhook and a.webhook_secret is None:
        print("warning: defect %r changes webhook events and no --webhook-secret was given: changed events keep "
              "the platform's signature, which no longer verifies" % a.defect, file=sys.stderr, flush=True)
    host, _, port = a.listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port)
    except ValueError:
        print("--listen must be HOST:PORT", file=sys.stderr)
        return 2
    proxy = Proxy(a.upstream, a.defect, a.webhook_secret)
    Handler.proxy = proxy
    if ":" in host:
        Server.address_family = socket.AF_INET6
    srv = Server((host, port), Handler)
    actual = srv.server_address[1]
    hook_host = host
    if host in ("0.0.0.0", ""):
        hook_host = "127.0.0.1"
    elif host == "::":
        hook_host = "[::1]"
    elif ":" in host:
        hook_host = "[%s]" % host
    proxy.hook_base = "http://%s:%d%s" % (hook_host, actual, HOOK_PREFIX)
    print(json.dumps({"port": actual}), flush=True)
    log("listening on %s:%d, upstream %s, defect %s" % (host, actual, a.upstream, a.defect))
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
