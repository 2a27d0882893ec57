#!/usr/bin/env python3
"""Round 4 of blind contract breaks: a reverse proxy in front of the platform mock.

Without --defect it forwards every request and answer unchanged. With --defect NAME it
breaks one rule of the interface (see defects.json and README.md). Python 3 standard
library only.

    proxy.py --upstream http://127.0.0.1:8080 --listen 127.0.0.1:0 \
             [--defect NAME] [--webhook-secret SECRET] [--verbose]
    proxy.py --list-defects

On start it prints one line, {"port": N}, on stdout.
"""

import argparse
import csv
import datetime as dt
import email.utils
import hashlib
import hmac
import http.client
import http.server
import io
import json
import math
import os
import re
import ssl
import sys
import threading
import time
import urllib.parse
import uuid

try:
    import zoneinfo
except ImportError:  # pragma: no cover
    zoneinfo = None

HERE = os.path.dirname(os.path.abspath(__file__))
DEFECTS_FILE = os.path.join(HERE, "defects.json")
HOOK_PREFIX = "/__r4hook/"
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate",
    "proxy-authorization", "te", "trailer", "trailers", "upgrade", "transfer-encoding",
}
# The pattern the platform's OpenAPI document gives webhook URLs: only URLs of this form
# are sent through the receiver (anything else is left for the platform to judge).
WEBHOOK_URL_RE = re.compile(
    r"^[Hh][Tt][Tt][Pp][Ss]?://(([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*|((25[0-5]|2[0-4][0-9]|"
    r"1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))(:([0-9]{1,4}|"
    r"[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?([/?#][!-~]*)?$"
)
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
VERBOSE = False


def log(*a):
    if VERBOSE:
        print("[r4proxy]", *a, file=sys.stderr, flush=True)


def warn(*a):
    print("[r4proxy]", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- helpers

def jdump(obj):
    """JSON as the platform writes it: compact, UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def replace_strings(raw, fn):
    """Rewrite the JSON string tokens of raw (bytes) for which fn gives a new value,
    leaving every other byte as it is."""
    def sub(m):
        try:
            s = json.loads(m.group(0))
        except Exception:
            return m.group(0)
        if not isinstance(s, str):
            return m.group(0)
        r = fn(s)
        if r is None or r == s:
            return m.group(0)
        return json.dumps(r, ensure_ascii=False).encode("utf-8")
    return JSON_STRING.sub(sub, raw)


def parse_ts(s):
    s2 = s.strip()
    if s2[-1:] in ("Z", "z"):
        s2 = s2[:-1] + "+00:00"
    d = dt.datetime.fromisoformat(s2)
    if d.tzinfo is None:
        raise ValueError("no offset")
    return d


def fmt_ts(d):
    d = d.astimezone(dt.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def dig(obj, path):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def has_path(obj, path):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return False
        obj = obj[p]
    return True


def put(obj, path, value):
    for p in path[:-1]:
        if not isinstance(obj.get(p), dict):
            return False
        obj = obj[p]
    obj[path[-1]] = value
    return True


def hhmm_add(s, minutes):
    h, m = int(s[:2]), int(s[3:5])
    t = (h * 60 + m + minutes) % (24 * 60)
    return "%02d:%02d" % (t // 60, t % 60)


def http_date():
    return email.utils.formatdate(usegmt=True)


# ---------------------------------------------------------------------------- messages

class Resp:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = list(headers)
        self.body = body
        self._json = None
        self._parsed = False

    def get(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def set(self, name, value):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        if value is not None:
            self.headers.append((name, value))

    def json(self):
        if not self._parsed:
            self._parsed = True
            try:
                self._json = json.loads(self.body) if self.body else None
            except Exception:
                self._json = None
        return self._json

    def set_json(self, obj):
        self._json = obj
        self._parsed = True
        self.body = jdump(obj)

    def set_body(self, body):
        self.body = body
        self._parsed = False

    @property
    def ok(self):
        return 200 <= self.status < 300


def make_json(status, obj, reason=None):
    body = jdump(obj)
    return Resp(status, reason or http.client.responses.get(status, ""),
                [("content-type", "application/json"), ("content-length", str(len(body))),
                 ("date", http_date())], body)


def platform_error(status, message, type_, code):
    return make_json(status, {"error": {"message": message, "type": type_, "code": code}})


def validation_error(loc, msg, type_):
    return make_json(422, {"detail": [{"loc": loc, "msg": msg, "type": type_}]})


ORG_WS = r"/orgs/(?P<org>[^/]+)/workspaces/(?P<ws>[^/]+)"
SCHED = r"/api/scheduling/v1" + ORG_WS
AUTH = r"/api/app-authoring/v1" + ORG_WS
ROUTES = [
    ("create_outbound", "POST", r"/api/outbounds/v1" + ORG_WS + r"/outbounds"),
    ("list_campaigns", "GET", SCHED + r"/campaigns"),
    ("create_campaign", "POST", SCHED + r"/campaigns"),
    ("get_campaign", "GET", SCHED + r"/campaigns/(?P<cid>[^/]+)"),
    ("patch_campaign", "PATCH", SCHED + r"/campaigns/(?P<cid>[^/]+)"),
    ("set_campaign_status", "PUT", SCHED + r"/campaigns/(?P<cid>[^/]+)/status"),
    ("upload_campaign_cohort", "POST", SCHED + r"/campaigns/(?P<cid>[^/]+)/cohorts/upload"),
    ("stream_campaign_cohort", "POST", SCHED + r"/campaigns/(?P<cid>[^/]+)/cohorts/stream"),
    ("list_campaign_cohorts", "GET", SCHED + r"/campaigns/(?P<cid>[^/]+)/cohorts"),
    ("get_campaign_cohort", "GET", SCHED + r"/campaigns/(?P<cid>[^/]+)/cohorts/(?P<coh>[^/]+)"),
    ("get_campaign_cohort_file", "GET", SCHED + r"/campaigns/(?P<cid>[^/]+)/cohorts/(?P<coh>[^/]+)/files"),
    ("upload_deployment_cohort", "POST", SCHED + r"/deployments/(?P<did>[^/]+)/cohorts/upload"),
    ("stream_deployment_cohort", "POST", SCHED + r"/deployments/(?P<did>[^/]+)/cohorts/stream"),
    ("list_deployment_cohorts", "GET", SCHED + r"/deployments/(?P<did>[^/]+)/cohorts"),
    ("get_deployment_cohort", "GET", SCHED + r"/deployments/(?P<did>[^/]+)/cohorts/(?P<coh>[^/]+)"),
    ("get_deployment_cohort_file", "GET", SCHED + r"/deployments/(?P<did>[^/]+)/cohorts/(?P<coh>[^/]+)/files"),
    ("list_deployments", "GET", AUTH + r"/deployments"),
    ("create_deployment", "POST", AUTH + r"/deployments"),
    ("get_deployment", "GET", AUTH + r"/deployments/(?P<did>[^/]+)"),
    ("delete_deployment", "DELETE", AUTH + r"/deployments/(?P<did>[^/]+)"),
    ("patch_deployment", "PATCH", AUTH + r"/deployments/(?P<did>[^/]+)"),
    ("set_deployment_status", "PUT", AUTH + r"/deployments/(?P<did>[^/]+)/status"),
    ("sim_inbound_call", "POST", r"/sim/v1" + ORG_WS + r"/inbound-calls"),
]
ROUTES = [(op, m, re.compile("^" + rx + "/?$")) for op, m, rx in ROUTES]
WS_IN_PATH = re.compile(r"/orgs/([^/]+)/workspaces/([^/]+)(/|$)")


def match_op(method, path):
    for op, m, rx in ROUTES:
        if m == method:
            mm = rx.match(path)
            if mm:
                return op, {k: urllib.parse.unquote(v) for k, v in mm.groupdict().items()}
    return None, {}


class Req:
    def __init__(self, method, target, headers, body, chunked):
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.chunked = chunked
        sp = urllib.parse.urlsplit(target)
        self.path = sp.path
        self.query = urllib.parse.parse_qsl(sp.query, keep_blank_values=True)
        self.op, self.p = match_op(method, self.path)
        self.org = self.p.get("org")
        self.ws = self.p.get("ws")
        if self.org is None:
            m = WS_IN_PATH.search(self.path)
            if m:
                self.org, self.ws = urllib.parse.unquote(m.group(1)), urllib.parse.unquote(m.group(2))
        self.key = self.header("x-api-key")
        self.stash = {}
        self._json = None
        self._parsed = False

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def q(self, name):
        v = None
        for k, val in self.query:
            if k == name:
                v = val
        return v

    def set_q(self, name, value):
        self.query = [(k, v) for k, v in self.query if k != name]
        if value is not None:
            self.query.append((name, value))
        qs = urllib.parse.urlencode(self.query)
        self.target = self.path + ("?" + qs if qs else "")

    def json(self):
        if not self._parsed:
            self._parsed = True
            try:
                self._json = json.loads(self.body) if self.body else None
            except Exception:
                self._json = None
        return self._json

    def set_json(self, obj):
        self._json = obj
        self._parsed = True
        self.body = jdump(obj)

    def set_body(self, body):
        self.body = body
        self._parsed = False


class Event:
    """One webhook try received from the platform, on its way to the client's URL."""

    def __init__(self, px, hook, headers, body):
        self.px = px
        self.hook = hook
        self.headers = headers
        self.ts = headers.get("x-webhook-timestamp", "")
        self.sig = headers.get("x-webhook-signature")
        self.body = body  # the receiver URLs already restored
        try:
            self.obj = json.loads(body)
        except Exception:
            self.obj = None

    @property
    def kind(self):
        o = self.obj if isinstance(self.obj, dict) else {}
        if "campaign_id" in o:
            return "campaign"
        if "channel_info" in o:
            return "outbound"
        if "deployment_id" in o:
            return "deployment"
        return None

    def out(self, obj=None, body=None, ts=None, sig=None, headers=None):
        """An outgoing delivery: signed afresh over its body unless sig is given
        (sig=False leaves the signature header out)."""
        if body is None:
            body = self.body if obj is None else jdump(obj)
        ts = self.ts if ts is None else ts
        if sig is None:
            sig = self.px.sign(ts, body)
        h = [(k, v) for k, v in self.headers.items()
             if k not in ("x-webhook-timestamp", "x-webhook-signature", "host", "content-length",
                          "connection", "transfer-encoding")]
        h.append(("x-webhook-timestamp", ts))
        if sig is not False:
            h.append(("x-webhook-signature", sig))
        if headers:
            h.extend(headers)
        return (h, body)


# ---------------------------------------------------------------------------- defects

IMPLS = {}


def defect(name):
    def deco(cls):
        cls.name = name
        IMPLS[name] = cls
        return cls
    return deco


class Defect:
    webhook = False     # webhook URLs of requests go through the proxy's receiver
    campaigns = False   # keep the campaigns read or created (for events)

    def on_request(self, px, rq):
        return None

    def on_response(self, px, rq, rs):
        pass

    def on_event(self, px, ev):
        return [ev.out()]


class EventDefect(Defect):
    webhook = True
    kinds = ("campaign", "outbound")

    def on_event(self, px, ev):
        if ev.kind in self.kinds and isinstance(ev.obj, dict):
            r = self.change(px, ev, ev.obj)
            if r is not None:
                return r
            return [ev.out(obj=ev.obj)]
        return [ev.out()]

    def change(self, px, ev, obj):
        """Change obj in place (then sent signed), or return a list of deliveries."""
        return None


CAMPAIGN_READS = ("get_campaign", "patch_campaign", "set_campaign_status")


def campaign_items(rq, rs):
    """The campaign objects of an answer: one, or a list's items."""
    j = rs.json()
    if not rs.ok or not isinstance(j, dict):
        return []
    if rq.op in CAMPAIGN_READS or rq.op == "create_campaign":
        return [j]
    if rq.op == "list_campaigns":
        return [i for i in j.get("items", []) if isinstance(i, dict)]
    return []


DEPLOYMENT_READS = ("get_deployment", "patch_deployment", "set_deployment_status", "create_deployment")


def deployment_items(rq, rs):
    j = rs.json()
    if not rs.ok or not isinstance(j, dict):
        return []
    if rq.op in DEPLOYMENT_READS:
        return [j]
    if rq.op == "list_deployments":
        return [i for i in j.get("items", []) if isinstance(i, dict)]
    return []


class RewriteRestore(Defect):
    """Changes what a create or PATCH sends to the platform, keeps what the client sent,
    and puts it back in every answer about that resource: the platform acts on one value
    while the client reads the one it sent."""
    resource = "campaign"   # or "deployment"
    paths = ()              # field paths this defect may rewrite

    def rewrite(self, px, rq, obj):
        """Rewrite obj in place; return {path: value the client sent} for what changed."""
        return {}

    def _ops(self):
        if self.resource == "campaign":
            return ("create_campaign", "patch_campaign"), "cid", "campaign_id", campaign_items
        return ("create_deployment", "patch_deployment"), "did", "deployment_id", deployment_items

    def on_request(self, px, rq):
        writes, _, _, _ = self._ops()
        if rq.op not in writes:
            return None
        obj = rq.json()
        if not isinstance(obj, dict):
            return None
        named = [p for p in self.paths if has_path(obj, p)]
        changed = self.rewrite(px, rq, obj)
        rq.stash["named"] = named
        rq.stash["changed"] = changed
        if changed:
            log(self.name, "rewrote", list(changed))
            rq.set_json(obj)
        return None

    def on_response(self, px, rq, rs):
        writes, pkey, idkey, items = self._ops()
        st = px.state.setdefault(self.name, {})
        if rq.op in writes and rs.ok and isinstance(rs.json(), dict):
            rid = rs.json().get(idkey)
            if rid:
                with px.lock:
                    mine = st.setdefault(rid, {})
                    for p in rq.stash.get("named", []):
                        mine.pop(p, None)
                    mine.update(rq.stash.get("changed", {}))
        changed = False
        for it in items(rq, rs):
            rid = it.get(idkey)
            with px.lock:
                mine = dict(st.get(rid, {}))
            for p, v in mine.items():
                if has_path(it, p):  # only where the answer shows the field
                    put(it, p, json.loads(json.dumps(v)))
                    changed = True
        if changed:
            rs.set_json(rs.json())


# ---- instant outbound

@defect("outbound_created_201")
class OutboundCreated201(Defect):
    def on_response(self, px, rq, rs):
        if rq.op == "create_outbound" and rs.status == 200:
            rs.status, rs.reason = 201, "Created"


@defect("outbound_loc_without_body")
class OutboundLocWithoutBody(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "create_outbound" and rs.status == 422 and isinstance(j, dict):
            for d in j.get("detail", []):
                loc = d.get("loc")
                if isinstance(loc, list) and loc[:1] == ["body"]:
                    d["loc"] = loc[1:]
            rs.set_json(j)


@defect("outbound_answer_text_plain")
class OutboundAnswerTextPlain(Defect):
    def on_response(self, px, rq, rs):
        if rq.op == "create_outbound" and rs.status == 200:
            rs.set("content-type", "text/plain; charset=utf-8")


@defect("outbound_event_metadata_null")
class OutboundEventMetadataNull(EventDefect):
    kinds = ("outbound",)

    def change(self, px, ev, obj):
        if isinstance(obj.get("webhook_config"), dict):
            obj["webhook_config"]["metadata"] = None


@defect("outbound_event_attempt_id_upper")
class OutboundEventAttemptIdUpper(EventDefect):
    kinds = ("outbound",)

    def change(self, px, ev, obj):
        if isinstance(obj.get("attempt_id"), str):
            obj["attempt_id"] = obj["attempt_id"].upper()


@defect("outbound_event_busy_as_failed")
class OutboundEventBusyAsFailed(EventDefect):
    kinds = ("outbound",)

    def change(self, px, ev, obj):
        if obj.get("status") == "busy":
            obj["status"] = "failed"


@defect("outbound_event_dropped")
class OutboundEventDropped(EventDefect):
    kinds = ("outbound",)

    def change(self, px, ev, obj):
        log("dropped outbound event", obj.get("attempt_id"))
        return []


# ---- signing of every event

@defect("webhook_signature_stale_body")
class WebhookSignatureStaleBody(EventDefect):
    def change(self, px, ev, obj):
        signed = px.sign(ev.ts, ev.body)
        pretty = json.dumps(obj, separators=(", ", ": "), ensure_ascii=False).encode("utf-8")
        return [ev.out(body=pretty, sig=signed)]


@defect("webhook_signature_body_only")
class WebhookSignatureBodyOnly(EventDefect):
    def change(self, px, ev, obj):
        sig = hmac.new(px.secret.encode(), ev.body, hashlib.sha256).hexdigest()
        return [ev.out(sig=sig)]


@defect("webhook_signature_uppercase_hex")
class WebhookSignatureUppercaseHex(EventDefect):
    def change(self, px, ev, obj):
        return [ev.out(sig=px.sign(ev.ts, ev.body).upper())]


@defect("webhook_timestamp_milliseconds")
class WebhookTimestampMilliseconds(EventDefect):
    def change(self, px, ev, obj):
        try:
            ts = str(int(ev.ts) * 1000)
        except ValueError:
            return None
        return [ev.out(ts=ts)]


@defect("webhook_timestamp_wall_clock")
class WebhookTimestampWallClock(EventDefect):
    def change(self, px, ev, obj):
        return [ev.out(ts=str(int(time.time())))]


# ---- campaign events

@defect("campaign_event_retry_attempt_from_one")
class CampaignEventRetryAttemptFromOne(EventDefect):
    kinds = ("campaign",)

    def change(self, px, ev, obj):
        if isinstance(obj.get("retry_attempt"), int):
            obj["retry_attempt"] += 1


@defect("campaign_event_short_call_completed")
class CampaignEventShortCallCompleted(EventDefect):
    kinds = ("campaign",)

    def change(self, px, ev, obj):
        if obj.get("completion_status") == "partial":
            obj["completion_status"] = "completed"


@defect("campaign_event_executed_at_local_z")
class CampaignEventExecutedAtLocalZ(EventDefect):
    kinds = ("campaign",)
    campaigns = True

    def change(self, px, ev, obj):
        c = px.campaign(obj.get("campaign_id"))
        tz = dig(c, ("allowed_schedule", "timezone")) if c else None
        if not tz or zoneinfo is None or not isinstance(obj.get("executed_at"), str):
            return None
        try:
            local = parse_ts(obj["executed_at"]).astimezone(zoneinfo.ZoneInfo(tz))
        except Exception:
            return None
        obj["executed_at"] = local.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (local.microsecond // 1000)


@defect("campaign_event_phone_without_plus")
class CampaignEventPhoneWithoutPlus(EventDefect):
    kinds = ("campaign",)

    def change(self, px, ev, obj):
        if isinstance(obj.get("user_phone_number"), str):
            obj["user_phone_number"] = obj["user_phone_number"].lstrip("+")


@defect("campaign_event_cohort_id_is_campaign_id")
class CampaignEventCohortIdIsCampaignId(EventDefect):
    kinds = ("campaign",)

    def change(self, px, ev, obj):
        if obj.get("campaign_id"):
            obj["cohort_id"] = obj["campaign_id"]


@defect("campaign_event_agent_number_fixed")
class CampaignEventAgentNumberFixed(EventDefect):
    kinds = ("campaign",)
    campaigns = True

    def change(self, px, ev, obj):
        c = px.campaign(obj.get("campaign_id"))
        conns = dig(c, ("app_config", "connection_configs")) if c else None
        if conns and conns[0].get("phone_numbers"):
            obj["agent_phone_number"] = conns[0]["phone_numbers"][0]


@defect("campaign_event_extra_attempt")
class CampaignEventExtraAttempt(EventDefect):
    kinds = ("campaign",)
    campaigns = True

    def change(self, px, ev, obj):
        c = px.campaign(obj.get("campaign_id"))
        rc = dig(c, ("app_config", "retry_config")) if c else None
        if not isinstance(rc, dict):
            return None
        if (obj.get("retry_attempt") == rc.get("max_retries") and obj.get("next_action_status") is None
                and obj.get("completion_status") != "completed"):
            extra = dict(obj)
            extra["retry_attempt"] = obj["retry_attempt"] + 1
            extra["attempt_id"] = str(uuid.uuid4())
            try:
                at = parse_ts(obj["executed_at"]) + dt.timedelta(minutes=rc.get("retry_interval_minutes") or 30)
                extra["executed_at"] = fmt_ts(at)
            except Exception:
                pass
            log("extra attempt for", obj.get("user_phone_number"))
            return [ev.out(), ev.out(obj=extra)]
        return [ev.out()]


@defect("campaign_event_retries_dropped")
class CampaignEventRetriesDropped(EventDefect):
    kinds = ("campaign",)

    def change(self, px, ev, obj):
        if isinstance(obj.get("retry_attempt"), int) and obj["retry_attempt"] >= 1:
            return []
        return [ev.out()]


# ---- campaigns

@defect("campaign_create_active_near_start")
class CampaignCreateActiveNearStart(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "create_campaign" and rs.status == 200 and isinstance(j, dict):
            try:
                start = parse_ts(rq.json()["start_timestamp"])
                now = px.now(rq.key)
            except Exception:
                return
            if (start - now).total_seconds() <= 3600 and j.get("status") == "scheduled":
                j["status"] = "active"
                rs.set_json(j)


def _campaign_writes(rq):
    obj = rq.json()
    if rq.op in ("create_campaign", "patch_campaign") and isinstance(obj, dict):
        return obj
    return None


@defect("campaign_description_truncated_128")
class CampaignDescriptionTruncated128(Defect):
    def on_request(self, px, rq):
        obj = _campaign_writes(rq)
        if obj and isinstance(obj.get("description"), str) and 128 < len(obj["description"]) <= 150:
            obj["description"] = obj["description"][:128]
            rq.set_json(obj)


TS_OFFSET = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?)([+-]\d\d:?\d\d)$")


@defect("campaign_offset_dropped")
class CampaignOffsetDropped(Defect):
    def on_request(self, px, rq):
        obj = _campaign_writes(rq)
        if not obj:
            return
        changed = False
        for k in ("start_timestamp", "end_timestamp"):
            v = obj.get(k)
            if isinstance(v, str):
                m = TS_OFFSET.match(v.strip())
                if m and m.group(2) not in ("+00:00", "-00:00", "+0000"):
                    obj[k] = m.group(1) + "Z"
                    changed = True
        if changed:
            rq.set_json(obj)


FRACTION = re.compile(r"^(.*T\d\d:\d\d:\d\d)\.\d+(.*)$")


@defect("campaign_timestamps_whole_seconds")
class CampaignTimestampsWholeSeconds(Defect):
    def on_request(self, px, rq):
        obj = _campaign_writes(rq)
        if not obj:
            return
        changed = False
        for k in ("start_timestamp", "end_timestamp"):
            v = obj.get(k)
            if isinstance(v, str):
                m = FRACTION.match(v)
                if m:
                    obj[k] = m.group(1) + m.group(2)
                    changed = True
        if changed:
            rq.set_json(obj)


@defect("campaign_rate_one_decimal")
class CampaignRateOneDecimal(Defect):
    def on_request(self, px, rq):
        obj = _campaign_writes(rq)
        aps = dig(obj, ("app_config", "attempts_per_second")) if obj else None
        if isinstance(aps, (int, float)) and not isinstance(aps, bool) and 0.1 <= aps <= 500:
            floored = math.floor(aps * 10 + 1e-9) / 10
            if floored != aps:
                obj["app_config"]["attempts_per_second"] = floored
                rq.set_json(obj)


@defect("campaign_list_names_lowercased")
class CampaignListNamesLowercased(Defect):
    def on_response(self, px, rq, rs):
        if rq.op == "list_campaigns":
            items = campaign_items(rq, rs)
            for it in items:
                if isinstance(it.get("name"), str):
                    it["name"] = it["name"].lower()
            if items:
                rs.set_json(rs.json())


@defect("campaign_list_status_filter_ignored")
class CampaignListStatusFilterIgnored(Defect):
    def on_request(self, px, rq):
        if rq.op == "list_campaigns" and rq.q("campaign_status") is not None:
            rq.set_q("campaign_status", None)


@defect("campaign_list_default_ascending")
class CampaignListDefaultAscending(Defect):
    def on_request(self, px, rq):
        if rq.op == "list_campaigns" and rq.q("sort_order") is None:
            rq.set_q("sort_order", "asc")


@defect("campaign_list_other_workspace")
class CampaignListOtherWorkspace(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op != "list_campaigns" or rs.status != 200 or not isinstance(j, dict):
            return
        extra = []
        total = 0
        for (org, ws), key in px.known_keys():
            if org != rq.org or ws == rq.ws:
                continue
            q = [(k, v) for k, v in rq.query if k not in ("offset",)]
            other = px.api("GET", "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns" % (org, ws), key, query=q)
            oj = other.json()
            if other.status == 200 and isinstance(oj, dict):
                extra.extend(oj.get("items", []))
                total += oj.get("total", 0)
        if extra:
            j["items"].extend(extra[: max(0, j.get("limit", 20) - len(j["items"]))])
            j["total"] = j.get("total", 0) + total
            rs.set_json(j)


@defect("campaign_search_case_sensitive")
class CampaignSearchCaseSensitive(Defect):
    def on_response(self, px, rq, rs):
        s = rq.q("search")
        j = rs.json()
        if rq.op != "list_campaigns" or not s or rs.status != 200 or not isinstance(j, dict):
            return
        keep = [i for i in j.get("items", [])
                if s in (i.get("name") or "") or s in (i.get("description") or "")]
        if len(keep) != len(j.get("items", [])):
            j["total"] = max(0, j.get("total", 0) - (len(j["items"]) - len(keep)))
            j["items"] = keep
            rs.set_json(j)


@defect("campaign_budget_without_first_dial")
class CampaignBudgetWithoutFirstDial(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op in CAMPAIGN_READS and rs.status == 200 and isinstance(j, dict):
            st = j.get("statistics")
            mr = dig(j, ("app_config", "retry_config", "max_retries"))
            if isinstance(st, dict) and isinstance(mr, int) and isinstance(st.get("users_total"), int):
                st["attempt_budget"] = st["users_total"] * mr
                rs.set_json(j)


RETRY_DEFAULTS = {"max_retries": 0, "retry_on": [], "threshold_seconds": 10, "retry_interval_minutes": 30}


@defect("campaign_patch_retry_config_reset")
class CampaignPatchRetryConfigReset(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        rc = dig(obj, ("app_config", "retry_config")) if rq.op == "patch_campaign" else None
        if isinstance(rc, dict):
            missing = [k for k in RETRY_DEFAULTS if k not in rc]
            if missing:
                for k in missing:
                    rc[k] = RETRY_DEFAULTS[k]
                rq.set_json(obj)


@defect("campaign_patch_while_active")
class CampaignPatchWhileActive(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op != "patch_campaign" or rs.status != 409 or not isinstance(j, dict):
            return
        path = px.campaign_path(rq)
        got = px.api("GET", path, rq.key)
        if got.status != 200 or (got.json() or {}).get("status") != "active":
            return
        px.api("PUT", path + "/status", rq.key, {"action": "pause"})
        again = px.forward(rq)
        resumed = px.api("PUT", path + "/status", rq.key, {"action": "resume"})
        if again.ok and resumed.ok:
            log("patched an active campaign")
            rs.status, rs.reason, rs.headers = resumed.status, resumed.reason, resumed.headers
            rs.set_body(resumed.body)


@defect("campaign_patch_refused_partly_applied")
class CampaignPatchRefusedPartlyApplied(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        obj = rq.json()
        if rq.op != "patch_campaign" or rs.status != 422 or not isinstance(j, dict) or not isinstance(obj, dict):
            return
        rest = json.loads(json.dumps(obj))
        for d in j.get("detail", []):
            loc = d.get("loc") or []
            if len(loc) >= 2 and loc[0] == "body":
                if loc[1] == "app_config" and len(loc) >= 3 and isinstance(rest.get("app_config"), dict):
                    rest["app_config"].pop(loc[2], None)
                    if not rest["app_config"]:
                        rest.pop("app_config")
                else:
                    rest.pop(loc[1], None)
            else:
                return
        if rest and rest != obj:
            r = px.api("PATCH", px.campaign_path(rq), rq.key, rest)
            log("applied the valid part of a refused PATCH:", r.status)


@defect("campaign_cancel_paused_refused")
class CampaignCancelPausedRefused(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op == "set_campaign_status" and isinstance(obj, dict) and obj.get("action") == "cancel":
            got = px.api("GET", px.campaign_path(rq), rq.key)
            if got.status == 200 and (got.json() or {}).get("status") == "paused":
                return platform_error(409, "cannot cancel a campaign that is paused; resume it first",
                                      "conflict_error", "invalid_status_transition")


@defect("campaign_status_answer_previous")
class CampaignStatusAnswerPrevious(Defect):
    def on_request(self, px, rq):
        if rq.op == "set_campaign_status":
            got = px.api("GET", px.campaign_path(rq), rq.key)
            if got.status == 200:
                rq.stash["before"] = (got.json() or {}).get("status")

    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "set_campaign_status" and rs.status == 200 and isinstance(j, dict) and rq.stash.get("before"):
            j["status"] = rq.stash["before"]
            rs.set_json(j)


@defect("campaign_not_ended")
class CampaignNotEnded(Defect):
    def on_response(self, px, rq, rs):
        items = campaign_items(rq, rs)
        changed = False
        for it in items:
            if it.get("status") == "ended":
                it["status"] = "active"
                changed = True
        if changed:
            rs.set_json(rs.json())


@defect("campaign_activation_minute_late")
class CampaignActivationMinuteLate(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op == "create_campaign" and isinstance(obj, dict):
            rq.stash["start"] = obj.get("start_timestamp")

    def on_response(self, px, rq, rs):
        st = px.state.setdefault(self.name, {})
        if rq.op == "create_campaign" and rs.status == 200 and isinstance(rs.json(), dict):
            try:
                st[rs.json()["campaign_id"]] = parse_ts(rq.stash["start"])
            except Exception:
                pass
        items = campaign_items(rq, rs)
        if not any(i.get("status") == "active" for i in items):
            return
        try:
            now = px.now(rq.key)
        except Exception:
            return
        changed = False
        for it in items:
            start = None
            try:
                start = parse_ts(it["start_timestamp"]) if "start_timestamp" in it else st.get(it.get("campaign_id"))
            except Exception:
                pass
            if it.get("status") == "active" and start and now < start + dt.timedelta(seconds=60):
                it["status"] = "scheduled"
                changed = True
        if changed:
            rs.set_json(rs.json())


# ---- calling windows (the platform is given another window; answers show the one sent)

def canonical_days(days):
    """Day names as the platform answers them: canonical case, once each, Monday first."""
    if not isinstance(days, list) or not all(isinstance(d, str) and d.capitalize() in DAYS for d in days):
        return days
    return sorted({d.capitalize() for d in days}, key=DAYS.index)


def _schedule_copy(s):
    c = json.loads(json.dumps(s))
    if "allowed_days" in c:
        c["allowed_days"] = canonical_days(c["allowed_days"])
    return c


class WindowDefect(RewriteRestore):
    resource = "campaign"
    paths = (("allowed_schedule",),)

    def rewrite(self, px, rq, obj):
        s = obj.get("allowed_schedule")
        if not isinstance(s, dict):
            return {}
        sent = _schedule_copy(s)
        try:
            if self.change(s):
                return {("allowed_schedule",): sent}
        except Exception as e:
            log(self.name, "left alone:", e)
        return {}


@defect("window_end_minute_late")
class WindowEndMinuteLate(WindowDefect):
    def change(self, s):
        st, en = s["allowed_start_time"], s["allowed_end_time"]
        new = hhmm_add(en, 1)
        if new == st or not re.match(r"^\d\d:\d\d$", en):
            return False
        s["allowed_end_time"] = new
        return True


def standard_zone(name):
    """An Etc/GMT zone at the standard offset of a zone with daylight saving, or None."""
    if zoneinfo is None:
        return None
    z = zoneinfo.ZoneInfo(name)
    year = dt.datetime.now(dt.timezone.utc).year
    jan = dt.datetime(year, 1, 15, 12, tzinfo=z).utcoffset()
    jul = dt.datetime(year, 7, 15, 12, tzinfo=z).utcoffset()
    if jan == jul:
        return None
    std = min(jan, jul)
    secs = int(std.total_seconds())
    if secs % 3600:
        return None
    hours = secs // 3600
    return "Etc/GMT" if hours == 0 else "Etc/GMT%+d" % (-hours)


@defect("window_zone_standard_time")
class WindowZoneStandardTime(WindowDefect):
    def change(self, s):
        z = standard_zone(s["timezone"])
        if not z:
            return False
        s["timezone"] = z
        return True


@defect("window_overnight_cut_at_midnight")
class WindowOvernightCutAtMidnight(WindowDefect):
    def change(self, s):
        st, en = s["allowed_start_time"], s["allowed_end_time"]
        if en < st and en != "00:00":
            s["allowed_end_time"] = "00:00"
            return True
        return False


@defect("window_lowercase_days_dropped")
class WindowLowercaseDaysDropped(WindowDefect):
    def change(self, s):
        days = s.get("allowed_days")
        if not isinstance(days, list):
            return False
        keep = [d for d in days if d in DAYS]
        if keep and len(keep) != len(days):
            s["allowed_days"] = keep
            return True
        return False


# ---- cohorts

@defect("cohort_upload_202")
class CohortUpload202(Defect):
    def on_response(self, px, rq, rs):
        if rq.op == "upload_deployment_cohort" and rs.status == 200:
            rs.status, rs.reason = 202, "Accepted"


@defect("cohort_upload_answers_settled")
class CohortUploadAnswersSettled(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op != "upload_campaign_cohort" or rs.status != 200 or not isinstance(j, dict):
            return
        path = rq.path.rstrip("/")[: -len("/upload")] + "/" + j.get("cohort_id", "")
        deadline = time.time() + 10
        while time.time() < deadline:
            got = px.api("GET", path, rq.key)
            gj = got.json()
            if got.status == 200 and isinstance(gj, dict) and gj.get("status") != "processing":
                rs.set_json(gj)
                return
            time.sleep(0.05)


COHORT_READS = ("get_campaign_cohort", "list_campaign_cohorts", "get_deployment_cohort", "list_deployment_cohorts")


def cohort_items(rq, rs, ops=COHORT_READS):
    j = rs.json()
    if rq.op not in ops or not rs.ok or not isinstance(j, dict):
        return []
    if rq.op.startswith("list_"):
        return [i for i in j.get("items", []) if isinstance(i, dict)]
    return [j]


@defect("cohort_total_counts_header")
class CohortTotalCountsHeader(Defect):
    def on_response(self, px, rq, rs):
        changed = False
        for it in cohort_items(rq, rs, ("get_campaign_cohort", "list_campaign_cohorts")):
            r = it.get("result")
            if isinstance(r, dict) and isinstance(r.get("total_records"), int):
                r["total_records"] += 1
                changed = True
        if changed:
            rs.set_json(rs.json())


@defect("cohort_stream_total_is_valid")
class CohortStreamTotalIsValid(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op in ("stream_campaign_cohort", "stream_deployment_cohort") and rs.status == 200 and isinstance(j, dict):
            r = j.get("result")
            if isinstance(r, dict) and "valid_records" in r:
                r["total_records"] = r["valid_records"]
                rs.set_json(j)


@defect("cohort_stream_1001_accepted")
class CohortStream1001Accepted(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op in ("stream_campaign_cohort", "stream_deployment_cohort") and isinstance(obj, dict):
            users = obj.get("users")
            if isinstance(users, list) and len(users) == 1001:
                obj["users"] = users[:1000]
                rq.set_json(obj)


@defect("cohort_list_other_campaigns")
class CohortListOtherCampaigns(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op != "list_campaign_cohorts" or rs.status != 200 or not isinstance(j, dict):
            return
        base = "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns" % (rq.org, rq.ws)
        camps = px.api("GET", base, rq.key, query=[("limit", "100")]).json() or {}
        added = 0
        for c in camps.get("items", []):
            if c.get("campaign_id") == rq.p.get("cid"):
                continue
            other = px.api("GET", base + "/" + c["campaign_id"] + "/cohorts", rq.key, query=[("limit", "100")]).json() or {}
            for it in other.get("items", []):
                if len(j["items"]) < (j.get("limit") or 20):
                    j["items"].append(it)
                added += 1
        if added:
            j["total"] = j.get("total", 0) + added
            rs.set_json(j)


@defect("cohort_list_newest_first")
class CohortListNewestFirst(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "list_deployment_cohorts" and rs.status == 200 and isinstance(j, dict):
            if len(j.get("items", [])) > 1:
                j["items"].reverse()
                rs.set_json(j)


def _csv_rows(data):
    text = data.decode("utf-8-sig", errors="replace")
    return [r for r in csv.reader(io.StringIO(text, newline="")) if r]


@defect("cohort_rejected_file_all_rows")
class CohortRejectedFileAllRows(Defect):
    def on_response(self, px, rq, rs):
        if rq.op not in ("get_campaign_cohort_file", "get_deployment_cohort_file") or rs.status != 200:
            return
        if rq.q("file_type") != "rejected_records":
            return
        q = [(k, v) for k, v in rq.query if k != "file_type"] + [("file_type", "cohort")]
        whole = px.api("GET", rq.path, rq.key, query=q)
        if whole.status != 200:
            return
        rejected = _csv_rows(rs.body)
        rows = _csv_rows(whole.body)
        if not rejected or not rows:
            return
        pending = {}
        for r in rejected[1:]:
            pending.setdefault(tuple(r[:-1]), []).append(r[-1])
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(rejected[0])
        for r in rows[1:]:
            reasons = pending.get(tuple(r))
            w.writerow(list(r) + [reasons.pop(0) if reasons else ""])
        rs.set_body(out.getvalue().encode("utf-8"))


@defect("cohort_file_octet_stream")
class CohortFileOctetStream(Defect):
    def on_response(self, px, rq, rs):
        if rq.op in ("get_campaign_cohort_file", "get_deployment_cohort_file") and rs.status == 200 \
                and rq.q("file_type") == "cohort":
            rs.set("content-type", "application/octet-stream")


@defect("cohort_file_crlf")
class CohortFileCrlf(Defect):
    def on_response(self, px, rq, rs):
        if rq.op in ("get_campaign_cohort_file", "get_deployment_cohort_file") and rs.status == 200 \
                and rq.q("file_type") == "cohort":
            b = rs.body
            if b"\r\n" in b:
                rs.set_body(b.replace(b"\r\n", b"\n"))
            else:
                rs.set_body(b.replace(b"\n", b"\r\n"))


@defect("cohort_deployment_stuck_processing")
class CohortDeploymentStuckProcessing(Defect):
    def on_response(self, px, rq, rs):
        changed = False
        for it in cohort_items(rq, rs, ("get_deployment_cohort", "list_deployment_cohorts")):
            if it.get("status") == "completed":
                it["status"] = "processing"
                it["result"] = None
                changed = True
        if changed:
            rs.set_json(rs.json())


# ---- deployments

def _deployment_writes(rq):
    obj = rq.json()
    if rq.op in ("create_deployment", "patch_deployment") and isinstance(obj, dict):
        return obj
    return None


@defect("deployment_name_trimmed")
class DeploymentNameTrimmed(Defect):
    def on_request(self, px, rq):
        obj = _deployment_writes(rq)
        n = obj.get("name") if obj else None
        if isinstance(n, str) and n.strip() and n.strip() != n:
            obj["name"] = n.strip()
            rq.set_json(obj)


@defect("deployment_list_numbers_without_plus")
class DeploymentListNumbersWithoutPlus(Defect):
    def on_response(self, px, rq, rs):
        if rq.op != "list_deployments":
            return
        items = deployment_items(rq, rs)
        for it in items:
            if isinstance(it.get("phone_numbers"), list):
                it["phone_numbers"] = [n.lstrip("+") if isinstance(n, str) else n for n in it["phone_numbers"]]
        if items:
            rs.set_json(rs.json())


@defect("deployment_list_total_page_size")
class DeploymentListTotalPageSize(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "list_deployments" and rs.status == 200 and isinstance(j, dict):
            j["total"] = len(j.get("items", []))
            rs.set_json(j)


@defect("deployment_list_limit_101_accepted")
class DeploymentListLimit101Accepted(Defect):
    def on_request(self, px, rq):
        if rq.op == "list_deployments" and rq.q("limit") == "101":
            rq.set_q("limit", "100")
            rq.stash["limit"] = 101

    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.stash.get("limit") and rs.status == 200 and isinstance(j, dict):
            j["limit"] = 101
            rs.set_json(j)


@defect("deployment_list_offset_negative_accepted")
class DeploymentListOffsetNegativeAccepted(Defect):
    def on_request(self, px, rq):
        v = rq.q("offset")
        if rq.op == "list_deployments" and v is not None and re.match(r"^-\d+$", v.strip()):
            rq.set_q("offset", "0")


@defect("deployment_list_next_drops_search")
class DeploymentListNextDropsSearch(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "list_deployments" and rs.status == 200 and isinstance(j, dict) and j.get("next_page_uri"):
            sp = urllib.parse.urlsplit(j["next_page_uri"])
            q = [(k, v) for k, v in urllib.parse.parse_qsl(sp.query, keep_blank_values=True) if k != "search"]
            j["next_page_uri"] = urllib.parse.urlunsplit(sp._replace(query=urllib.parse.urlencode(q)))
            rs.set_json(j)


@defect("deployment_list_sort_order_ignored")
class DeploymentListSortOrderIgnored(Defect):
    def on_request(self, px, rq):
        if rq.op == "list_deployments" and rq.q("sort_order") is not None:
            rq.set_q("sort_order", None)


def page_uri(rq, offset, limit):
    q = [(k, v) for k, v in rq.query if k not in ("offset", "limit")]
    q += [("offset", str(offset)), ("limit", str(limit))]
    return "http://%s%s?%s" % (rq.header("host") or "localhost", rq.path, urllib.parse.urlencode(q))


@defect("deployment_list_prev_on_first")
class DeploymentListPrevOnFirst(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "list_deployments" and rs.status == 200 and isinstance(j, dict):
            if j.get("offset") == 0 and j.get("prev_page_uri") is None and j.get("total"):
                j["prev_page_uri"] = page_uri(rq, 0, j.get("limit"))
                rs.set_json(j)


@defect("deployment_list_next_on_last")
class DeploymentListNextOnLast(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "list_deployments" and rs.status == 200 and isinstance(j, dict):
            off, lim, tot = j.get("offset"), j.get("limit"), j.get("total")
            if j.get("next_page_uri") is None and tot and isinstance(off, int) and isinstance(lim, int) \
                    and off + lim == tot:
                j["next_page_uri"] = page_uri(rq, off + lim, lim)
                rs.set_json(j)


@defect("deployment_patch_clears_description")
class DeploymentPatchClearsDescription(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op == "patch_deployment" and isinstance(obj, dict) and "description" not in obj:
            obj["description"] = None
            rq.set_json(obj)


@defect("deployment_patch_inbound_null_ignored")
class DeploymentPatchInboundNullIgnored(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op == "patch_deployment" and isinstance(obj, dict) and "inbound_config" in obj \
                and obj["inbound_config"] is None:
            del obj["inbound_config"]
            rq.set_json(obj)


@defect("deployment_patch_version_float")
class DeploymentPatchVersionFloat(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "patch_deployment" and rs.status == 200 and isinstance(j, dict) \
                and isinstance(j.get("app_version"), int):
            j["app_version"] = float(j["app_version"])
            rs.set_json(j)


@defect("deployment_pause_not_applied")
class DeploymentPauseNotApplied(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op == "set_deployment_status" and isinstance(obj, dict) and obj.get("action") == "pause":
            got = px.api("GET", px.deployment_path(rq), rq.key)
            gj = got.json()
            if got.status == 200 and isinstance(gj, dict) and gj.get("status") == "active":
                gj["status"] = "paused"
                return make_json(200, gj)


@defect("deployment_delete_soft")
class DeploymentDeleteSoft(Defect):
    def on_request(self, px, rq):
        if rq.op == "delete_deployment":
            path = px.deployment_path(rq)
            got = px.api("GET", path, rq.key)
            if got.status == 200:
                px.api("PUT", path + "/status", rq.key, {"action": "pause"})
                return Resp(204, "No Content", [("date", http_date())], b"")


@defect("deployment_delete_error_detail")
class DeploymentDeleteErrorDetail(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "delete_deployment" and rs.status >= 400 and isinstance(j, dict) and isinstance(j.get("error"), dict):
            rs.set_json({"detail": j["error"].get("message", "Not Found")})


@defect("deployment_list_error_code_integer")
class DeploymentListErrorCodeInteger(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op == "list_deployments" and rs.status >= 400 and isinstance(j, dict) and isinstance(j.get("error"), dict):
            j["error"]["code"] = rs.status
            rs.set_json(j)


class InboundDefect(RewriteRestore):
    resource = "deployment"
    paths = (("inbound_config",),)

    def rewrite(self, px, rq, obj):
        ic = obj.get("inbound_config")
        if not isinstance(ic, dict):
            return {}
        sent = json.loads(json.dumps(ic))
        if "allowed_days" in sent:
            sent["allowed_days"] = canonical_days(sent["allowed_days"])
        try:
            if self.change(ic):
                return {("inbound_config",): sent}
        except Exception as e:
            log(self.name, "left alone:", e)
        return {}


@defect("deployment_schedule_utc")
class DeploymentScheduleUtc(InboundDefect):
    def change(self, ic):
        if isinstance(ic.get("timezone"), str) and ic["timezone"] not in ("UTC", "Etc/UTC"):
            ic["timezone"] = "UTC"
            return True
        return False


@defect("deployment_schedule_end_minute_late")
class DeploymentScheduleEndMinuteLate(InboundDefect):
    def change(self, ic):
        new = hhmm_add(ic["end_time"], 1)
        if new == ic["start_time"]:
            return False
        ic["end_time"] = new
        return True


@defect("deployment_overnight_refused")
class DeploymentOvernightRefused(Defect):
    def on_request(self, px, rq):
        obj = _deployment_writes(rq)
        ic = obj.get("inbound_config") if obj else None
        if isinstance(ic, dict) and isinstance(ic.get("start_time"), str) and isinstance(ic.get("end_time"), str):
            if re.match(r"^\d\d:\d\d$", ic["end_time"]) and ic["end_time"] < ic["start_time"]:
                return validation_error(["body", "inbound_config", "end_time"],
                                        "Value error, end_time must be later than start_time", "value_error")


@defect("deployment_description_150_refused")
class DeploymentDescription150Refused(Defect):
    def on_request(self, px, rq):
        obj = _deployment_writes(rq)
        d = obj.get("description") if obj else None
        if isinstance(d, str) and len(d) == 150:
            return validation_error(["body", "description"], "String should have at most 149 characters",
                                    "string_too_long")


@defect("deployment_name_dot_accepted")
class DeploymentNameDotAccepted(RewriteRestore):
    resource = "deployment"
    paths = (("name",),)

    def rewrite(self, px, rq, obj):
        n = obj.get("name")
        if isinstance(n, str) and "." in n and 0 < len(n) <= 50:
            fixed = n.replace(".", "_")
            if re.match(r"^[\w\- ]{1,50}$", fixed):
                obj["name"] = fixed
                return {("name",): n}
        return {}


# ---- campaign limits

@defect("limit_start_60s_accepted")
class LimitStart60sAccepted(RewriteRestore):
    paths = (("start_timestamp",),)

    def rewrite(self, px, rq, obj):
        if rq.op != "create_campaign" or not isinstance(obj.get("start_timestamp"), str):
            return {}
        try:
            start = parse_ts(obj["start_timestamp"])
            now = px.now(rq.key)
        except Exception:
            return {}
        ahead = (start - now).total_seconds()
        if 60 <= ahead < 120:
            obj["start_timestamp"] = fmt_ts(now + dt.timedelta(seconds=120 if px.simulated else 121))
            return {("start_timestamp",): fmt_ts(start)}
        return {}


@defect("limit_end_30d_1h_accepted")
class LimitEnd30d1hAccepted(RewriteRestore):
    paths = (("end_timestamp",),)

    def rewrite(self, px, rq, obj):
        if rq.op != "create_campaign":
            return {}
        try:
            start = parse_ts(obj["start_timestamp"])
            end = parse_ts(obj["end_timestamp"])
        except Exception:
            return {}
        span = (end - start).total_seconds()
        if 30 * 86400 < span <= 30 * 86400 + 3600:
            obj["end_timestamp"] = fmt_ts(start + dt.timedelta(days=30))
            return {("end_timestamp",): fmt_ts(end)}
        return {}


@defect("limit_aps_500_refused")
class LimitAps500Refused(Defect):
    def on_request(self, px, rq):
        obj = _campaign_writes(rq)
        aps = dig(obj, ("app_config", "attempts_per_second")) if obj else None
        if isinstance(aps, (int, float)) and not isinstance(aps, bool) and aps == 500:
            return validation_error(["body", "app_config", "attempts_per_second"],
                                    "Input should be less than 500", "less_than")


@defect("limit_threshold_0_accepted")
class LimitThreshold0Accepted(RewriteRestore):
    paths = (("app_config", "retry_config", "threshold_seconds"),)

    def rewrite(self, px, rq, obj):
        p = ("app_config", "retry_config", "threshold_seconds")
        if dig(obj, p) == 0 and not isinstance(dig(obj, p), bool):
            put(obj, p, 1)
            return {p: 0}
        return {}


@defect("limit_campaign_description_151_accepted")
class LimitCampaignDescription151Accepted(RewriteRestore):
    paths = (("description",),)

    def rewrite(self, px, rq, obj):
        d = obj.get("description")
        if isinstance(d, str) and len(d) == 151:
            obj["description"] = d[:150]
            return {("description",): d}
        return {}


# ---- more refusals, limits, states, exactness

@defect("campaign_conflict_detail_shape")
class CampaignConflictDetailShape(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        if rq.op in ("set_campaign_status", "patch_campaign") and rs.status == 409 \
                and isinstance(j, dict) and isinstance(j.get("error"), dict):
            rs.set_json({"detail": j["error"].get("message", "Conflict")})


@defect("deployment_patch_refused_still_applied")
class DeploymentPatchRefusedStillApplied(Defect):
    def on_response(self, px, rq, rs):
        j = rs.json()
        obj = rq.json()
        if rq.op != "patch_deployment" or rs.status != 422 or not isinstance(j, dict) or not isinstance(obj, dict):
            return
        refused = {(d.get("loc") or [None, None])[1] for d in j.get("detail", []) if (d.get("loc") or [None])[0] == "body"}
        if "app_id" not in refused:
            return
        rest = {k: v for k, v in obj.items() if k not in refused}
        if rest:
            r = px.api("PATCH", px.deployment_path(rq), rq.key, rest)
            log("applied the rest of a refused deployment PATCH:", r.status)


@defect("campaign_cancelled_resume_answered_200")
class CampaignCancelledResumeAnswered200(Defect):
    def on_request(self, px, rq):
        obj = rq.json()
        if rq.op == "set_campaign_status" and isinstance(obj, dict) and obj.get("action") == "resume":
            got = px.api("GET", px.campaign_path(rq), rq.key)
            gj = got.json()
            if got.status == 200 and isinstance(gj, dict) and gj.get("status") == "cancelled":
                gj["status"] = "active"
                return make_json(200, gj)


@defect("cohort_processing_result_absent")
class CohortProcessingResultAbsent(Defect):
    def on_response(self, px, rq, rs):
        ops = COHORT_READS + ("upload_campaign_cohort", "upload_deployment_cohort")
        j = rs.json()
        if rq.op not in ops or not rs.ok or not isinstance(j, dict):
            return
        items = j.get("items", []) if rq.op.startswith("list_") else [j]
        changed = False
        for it in items:
            if isinstance(it, dict) and "result" in it and it["result"] is None:
                del it["result"]
                changed = True
        if changed:
            rs.set_json(j)


@defect("deployment_search_loose")
class DeploymentSearchLoose(Defect):
    def on_request(self, px, rq):
        s = rq.q("search")
        if rq.op == "list_deployments" and s and len(s.split()) > 1:
            rq.set_q("search", s.split()[0])


@defect("deployment_list_limit_0_accepted")
class DeploymentListLimit0Accepted(Defect):
    def on_request(self, px, rq):
        if rq.op == "list_deployments" and rq.q("limit") == "0":
            rq.set_q("limit", None)


@defect("limit_start_7d_1h_accepted")
class LimitStart7d1hAccepted(RewriteRestore):
    paths = (("start_timestamp",),)

    def rewrite(self, px, rq, obj):
        if rq.op != "create_campaign" or not isinstance(obj.get("start_timestamp"), str):
            return {}
        try:
            start = parse_ts(obj["start_timestamp"])
            now = px.now(rq.key)
        except Exception:
            return {}
        ahead = (start - now).total_seconds()
        if 7 * 86400 < ahead <= 7 * 86400 + 3600:
            obj["start_timestamp"] = fmt_ts(now + dt.timedelta(days=7) - dt.timedelta(seconds=0 if px.simulated else 1))
            return {("start_timestamp",): fmt_ts(start)}
        return {}


@defect("limit_end_60s_accepted")
class LimitEnd60sAccepted(RewriteRestore):
    paths = (("end_timestamp",),)

    def rewrite(self, px, rq, obj):
        if rq.op != "create_campaign":
            return {}
        try:
            start = parse_ts(obj["start_timestamp"])
            end = parse_ts(obj["end_timestamp"])
        except Exception:
            return {}
        if 60 <= (end - start).total_seconds() < 120:
            obj["end_timestamp"] = fmt_ts(start + dt.timedelta(seconds=120))
            return {("end_timestamp",): fmt_ts(end)}
        return {}


@defect("limit_aps_0_05_accepted")
class LimitAps005Accepted(RewriteRestore):
    paths = (("app_config", "attempts_per_second"),)

    def rewrite(self, px, rq, obj):
        p = ("app_config", "attempts_per_second")
        v = dig(obj, p)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.05 <= v < 0.1:
            put(obj, p, 0.1)
            return {p: v}
        return {}


@defect("limit_threshold_1200_refused")
class LimitThreshold1200Refused(Defect):
    def on_request(self, px, rq):
        obj = _campaign_writes(rq)
        v = dig(obj, ("app_config", "retry_config", "threshold_seconds")) if obj else None
        if v == 1200 and not isinstance(v, bool):
            return validation_error(["body", "app_config", "retry_config", "threshold_seconds"],
                                    "Input should be less than or equal to 1199", "less_than_equal")


@defect("limit_deployment_name_51_accepted")
class LimitDeploymentName51Accepted(RewriteRestore):
    resource = "deployment"
    paths = (("name",),)

    def rewrite(self, px, rq, obj):
        n = obj.get("name")
        if isinstance(n, str) and len(n) == 51 and re.match(r"^[\w\- ]+$", n):
            obj["name"] = n[:50]
            return {("name",): n}
        return {}


# ---------------------------------------------------------------------------- the proxy

class Proxy:
    def __init__(self, upstream, defect_name, secret, meta):
        u = urllib.parse.urlsplit(upstream)
        self.up_https = u.scheme == "https"
        self.up_host = u.hostname
        self.up_port = u.port or (443 if self.up_https else 80)
        self.up_prefix = u.path.rstrip("/")
        self.defect = IMPLS[defect_name]() if defect_name else None
        if self.defect:
            self.defect.meta = meta
        self.secret = secret
        self.lock = threading.RLock()
        self.keys = {}
        self.hooks = {}
        self.hook_ids = {}
        self.campaigns = {}
        self.state = {}
        self.base = None
        self.hook_re = None
        self.simulated = True

    # upstream ------------------------------------------------------------
    def connect(self, timeout=900):
        if self.up_https:
            return http.client.HTTPSConnection(self.up_host, self.up_port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.up_host, self.up_port, timeout=timeout)

    def send(self, method, target, headers, body, chunked=False):
        conn = self.connect()
        try:
            conn.putrequest(method, self.up_prefix + target, skip_host=True, skip_accept_encoding=True)
            has_host = False
            for k, v in headers:
                lk = k.lower()
                if lk in HOP_BY_HOP or lk in ("content-length", "expect"):
                    continue
                if lk == "host":
                    has_host = True
                conn.putheader(k, v)
            if not has_host:
                conn.putheader("Host", "%s:%d" % (self.up_host, self.up_port))
            if chunked:
                conn.putheader("Transfer-Encoding", "chunked")
            elif body or method in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            if chunked:
                step = 16384
                for i in range(0, len(body), step):
                    part = body[i:i + step]
                    conn.send(b"%x\r\n" % len(part) + part + b"\r\n")
                conn.send(b"0\r\n\r\n")
            elif body:
                conn.send(body)
            r = conn.getresponse()
            data = r.read()
            return Resp(r.status, r.reason, r.getheaders(), data)
        finally:
            conn.close()

    def forward(self, rq):
        return self.send(rq.method, rq.target, rq.headers, rq.body, rq.chunked)

    def api(self, method, path, key, obj=None, query=None):
        """A call of the proxy's own, with the client's key."""
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = [("X-API-Key", key or "")]
        body = b""
        if obj is not None:
            body = jdump(obj)
            headers.append(("Content-Type", "application/json"))
        return self.send(method, target, headers, body)

    def now(self, key):
        r = self.api("GET", "/sim/v1/clock", key)
        j = r.json()
        if r.status == 200 and isinstance(j, dict) and j.get("now"):
            self.simulated = bool(j.get("simulated"))
            return parse_ts(j["now"])
        self.simulated = False
        return dt.datetime.now(dt.timezone.utc)

    def campaign_path(self, rq):
        return "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s" % (rq.org, rq.ws, rq.p["cid"])

    def deployment_path(self, rq):
        return "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (rq.org, rq.ws, rq.p["did"])

    # state ---------------------------------------------------------------
    def remember_key(self, rq, rs):
        if rq.org and rq.key and rs.ok and rq.path.startswith("/api/"):
            with self.lock:
                self.keys[(rq.org, rq.ws)] = rq.key

    def known_keys(self):
        with self.lock:
            return list(self.keys.items())

    def campaign(self, cid):
        with self.lock:
            return self.campaigns.get(cid)

    def cache_campaign(self, rq, rs):
        j = rs.json()
        if not rs.ok or not isinstance(j, dict):
            return
        if rq.op in CAMPAIGN_READS and j.get("campaign_id"):
            with self.lock:
                self.campaigns[j["campaign_id"]] = j
        elif rq.op == "create_campaign" and j.get("campaign_id"):
            got = self.api("GET", "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s"
                           % (rq.org, rq.ws, j["campaign_id"]), rq.key)
            if got.status == 200 and isinstance(got.json(), dict):
                got_j = json.loads(self.restore_bytes(got.body))
                with self.lock:
                    self.campaigns[j["campaign_id"]] = got_j

    # webhooks ------------------------------------------------------------
    def sign(self, ts, body):
        return hmac.new((self.secret or "").encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()

    def hook_url(self, url, org, ws):
        with self.lock:
            k = (url, org, ws)
            if k not in self.hook_ids:
                n = len(self.hooks) + 1
                self.hooks[n] = {"url": url, "org": org, "ws": ws}
                self.hook_ids[k] = n
            return "%s%s%d" % (self.base, HOOK_PREFIX, self.hook_ids[k])

    def rewrite_hooks(self, rq):
        if rq.op == "create_outbound":
            paths = [("webhook_config", "url")]
        elif rq.op in ("create_campaign", "patch_campaign"):
            paths = [("app_config", "webhook_config", "url")]
        else:
            return
        obj = rq.json()
        if not isinstance(obj, dict):
            return
        mapping = {}
        for p in paths:
            v = dig(obj, p)
            if isinstance(v, str) and WEBHOOK_URL_RE.match(v) and HOOK_PREFIX not in v:
                mapping[v] = self.hook_url(v, rq.org, rq.ws)
        if mapping:
            rq.set_body(replace_strings(rq.body, lambda s: mapping.get(s)))
            rq._parsed = False

    def restore_text(self, s):
        def back(m):
            h = self.hooks.get(int(m.group(1)))
            return h["url"] if h else m.group(0)
        return self.hook_re.sub(back, s)

    def restore_bytes(self, body):
        if not self.hook_re or not body or HOOK_PREFIX.encode() not in body:
            return body
        try:
            json.loads(body)
            return replace_strings(body, lambda s: self.restore_text(s) if HOOK_PREFIX in s else None)
        except Exception:
            return self.restore_text(body.decode("utf-8", "replace")).encode("utf-8")

    def deliver(self, url, headers, body):
        u = urllib.parse.urlsplit(url)
        try:
            if u.scheme.lower() == "https":
                conn = http.client.HTTPSConnection(u.hostname, u.port or 443, timeout=9,
                                                   context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=9)
            target = (u.path or "/") + ("?" + u.query if u.query else "")
            conn.putrequest("POST", target, skip_accept_encoding=True)
            for k, v in headers:
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            conn.send(body)
            r = conn.getresponse()
            r.read()
            conn.close()
            return r.status
        except Exception as e:
            log("delivery to", url, "failed:", e)
            return 502


# ---------------------------------------------------------------------------- HTTP server

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "r4proxy"

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def log_message(self, fmt, *args):
        log(self.address_string(), fmt % args)

    def send_error(self, code, message=None, explain=None):
        """What Python's HTTP layer refuses before any request reaches the platform (a head
        it cannot read, more than 100 header fields), in the platform's error shape."""
        codes = {400: "bad_request", 408: "request_timeout", 414: "uri_too_long",
                 431: "request_header_fields_too_large"}
        body = jdump({"error": {"message": message or http.client.responses.get(code, "error"),
                                "type": "invalid_request_error", "code": codes.get(code, "bad_request")}})
        try:
            self.send_response_only(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.send_header("date", http_date())
            self.send_header("Connection", "close")
            self.end_headers()
            if getattr(self, "command", None) != "HEAD":
                self.wfile.write(body)
        except OSError:
            pass
        self.close_connection = True

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = b""
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    break
                out += self.rfile.read(size)
                self.rfile.readline(65537)
            return out, True
        n = int(self.headers.get("Content-Length") or 0)
        return (self.rfile.read(n) if n > 0 else b""), False

    def _reply(self, rs, head_only=False):
        self.send_response_only(rs.status, rs.reason)
        close = False
        has_len = False
        for k, v in rs.headers:
            lk = k.lower()
            if lk in HOP_BY_HOP:
                if lk == "connection" and "close" in v.lower():
                    close = True
                continue
            if lk == "content-length":
                has_len = True
                if not head_only:
                    v = str(len(rs.body))
            self.send_header(k, v)
        if not has_len and not head_only and (rs.body or rs.status not in (204, 304) and rs.status >= 200):
            self.send_header("Content-Length", str(len(rs.body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if not head_only and rs.body:
            self.wfile.write(rs.body)
        self.wfile.flush()

    def _handle(self):
        px = self.server.px
        try:
            body, chunked = self._read_body()
        except Exception as e:
            warn("could not read the request body:", e)
            self.close_connection = True
            return
        if self.path.startswith(HOOK_PREFIX) and self.command == "POST" and px.hook_re is not None:
            return self._hook(body)
        rq = Req(self.command, self.path, list(self.headers.items()), body, chunked)
        d = px.defect
        rs = None
        try:
            if d and d.webhook:
                px.rewrite_hooks(rq)
            if d and rq.op:
                rs = d.on_request(px, rq)
                if rs is not None:
                    log(d.name, "answered", rq.method, rq.path, rs.status)
        except Exception as e:
            warn("defect request hook failed:", repr(e))
            rs = None
        if rs is None:
            try:
                rs = px.forward(rq)
            except Exception as e:
                warn("upstream failed:", repr(e))
                rs = platform_error(502, "the proxy could not reach the platform: %s" % e, "api_error", "bad_gateway")
                rs.set("connection", "close")
                self._reply(rs, head_only=self.command == "HEAD")
                return
            if d:
                try:
                    if d.webhook:
                        rs.set_body(px.restore_bytes(rs.body))
                    if d.campaigns and rq.op:
                        px.cache_campaign(rq, rs)
                    px.remember_key(rq, rs)
                    if rq.op:
                        d.on_response(px, rq, rs)
                except Exception as e:
                    warn("defect response hook failed:", repr(e))
        log(rq.method, rq.target, "->", rs.status)
        self._reply(rs, head_only=self.command == "HEAD")

    def _hook(self, body):
        px = self.server.px
        m = re.match(r"^%s(\d+)$" % re.escape(HOOK_PREFIX), self.path.split("?")[0])
        hook = px.hooks.get(int(m.group(1))) if m else None
        if not hook:
            self._reply(make_json(404, {"error": "no such hook"}))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        ev = Event(px, hook, headers, px.restore_bytes(body))
        try:
            outs = px.defect.on_event(px, ev) if px.defect else [ev.out()]
        except Exception as e:
            warn("defect event hook failed:", repr(e))
            outs = [ev.out()]
        status = 200
        for i, (h, b) in enumerate(outs):
            st = px.deliver(hook["url"], h, b)
            if i == 0:
                status = st
        log("event", ev.kind, "->", hook["url"], len(outs), "deliveries, answered", status)
        self._reply(Resp(status, http.client.responses.get(status, ""), [("content-length", "0")], b""))


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def load_meta():
    with open(DEFECTS_FILE, encoding="utf-8") as f:
        return json.load(f)


def main(argv=None):
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", help="the platform's URL")
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any)")
    ap.add_argument("--defect", help="the defect to inject (none: transparent)")
    ap.add_argument("--webhook-secret", help="the platform's webhook signing secret")
    ap.add_argument("--list-defects", action="store_true", help="print defects.json and exit")
    ap.add_argument("--verbose", action="store_true", help="log to stderr")
    a = ap.parse_args(argv)
    VERBOSE = a.verbose
    meta = load_meta()
    names = [d["name"] for d in meta]
    if set(names) != set(IMPLS):
        warn("defects.json and the implementations differ:", sorted(set(names) ^ set(IMPLS)))
    if a.list_defects:
        with open(DEFECTS_FILE, encoding="utf-8") as f:
            sys.stdout.write(f.read())
        return 0
    if not a.upstream:
        ap.error("--upstream is required")
    if a.defect and a.defect not in IMPLS:
        print("unknown defect %r (see --list-defects)" % a.defect, file=sys.stderr)
        return 2
    entry = next((d for d in meta if d["name"] == a.defect), None)
    if a.defect and IMPLS[a.defect].webhook and not a.webhook_secret:
        print("defect %r changes webhook events: --webhook-secret is required" % a.defect, file=sys.stderr)
        return 2
    host, _, port = a.listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    px = Proxy(a.upstream, a.defect, a.webhook_secret, entry)
    srv = Server((host, int(port)), Handler)
    srv.px = px
    own = "127.0.0.1" if host in ("0.0.0.0", "", "localhost") else host
    px.base = "http://%s:%d" % (own, srv.server_address[1])
    if px.defect and px.defect.webhook:
        px.hook_re = re.compile(re.escape(px.base + HOOK_PREFIX) + r"(\d+)")
    print(json.dumps({"port": srv.server_address[1]}), flush=True)
    log("listening on", px.base, "upstream", a.upstream, "defect", a.defect)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
