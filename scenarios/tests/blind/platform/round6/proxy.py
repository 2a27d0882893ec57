#!/usr/bin/env python3
"""Round 6: a reverse proxy in front of the platform mock that injects one contract break.

Standard library only. See README.md.
"""
import argparse
import base64
import copy
import datetime
import hashlib
import hmac
import http.client
import json
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK = "/__r6hook/"
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
       "content-length"}

ARGS = None
VERBOSE = False
STATE = {"keys": {}, "cohort_parent": {}, "camp_shadow": {}, "dep_shadow": {}, "lock": threading.Lock()}


def log(*a):
    if VERBOSE:
        print("[r6]", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- time (exact nanoseconds)
TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")


def parse_ns(s):
    m = TS_RE.match(s.strip())
    if not m:
        return None
    base, frac, off = m.groups()
    dt = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S")
    if off == "Z":
        offs = 0
    else:
        sign = 1 if off[0] == "+" else -1
        offs = sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    secs = int((dt - datetime.datetime(1970, 1, 1)).total_seconds()) - offs
    ns = int((frac or "0").ljust(9, "0"))
    return secs * 1_000_000_000 + ns


# ---------------------------------------------------------------- upstream
def upstream_conn():
    u = urllib.parse.urlsplit(ARGS.upstream)
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)


def call(method, path, body=None, headers=None):
    c = upstream_conn()
    try:
        h = dict(headers or {})
        if body is not None:
            h["Content-Length"] = str(len(body))
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        return r.status, r.getheaders(), data
    finally:
        c.close()


def call_json(method, path, key, obj=None):
    h = {"X-API-Key": key}
    body = None
    if obj is not None:
        body = json.dumps(obj).encode()
        h["Content-Type"] = "application/json"
    st, hd, data = call(method, path, body, h)
    try:
        return st, json.loads(data)
    except Exception:
        return st, None


def sim_now_ns(key):
    st, b = call_json("GET", "/sim/v1/clock", key)
    if st == 200 and b:
        return parse_ns(b["now"])
    return int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1e9)


# ---------------------------------------------------------------- helpers
def ws_of(path):
    m = re.search(r"/orgs/([^/]+)/workspaces/([^/]+)", path)
    return (m.group(1), m.group(2)) if m else None


def err(status, code, msg, typ="invalid_request_error"):
    return status, {"error": {"message": msg, "type": typ, "code": code}}


def v422(loc, msg, typ="value_error"):
    return 422, {"detail": [{"loc": loc, "msg": msg, "type": typ}]}


CAMP = re.compile(r"^/api/scheduling/v1/orgs/[^/]+/workspaces/[^/]+/campaigns")
DEP = re.compile(r"^/api/app-authoring/v1/orgs/[^/]+/workspaces/[^/]+/deployments")


def route(method, path):
    """Names the operation."""
    p = path
    if re.fullmatch(r"/api/outbounds/v1/orgs/[^/]+/workspaces/[^/]+/outbounds", p):
        return "outbound"
    m = re.fullmatch(r"/api/scheduling/v1/orgs/[^/]+/workspaces/[^/]+/campaigns(/[^/]+)?(/status|/cohorts(/upload|/stream|/[^/]+(/files)?)?)?", p)
    if m:
        ident, sub, cs, files = m.groups()
        if not ident:
            return "campaign_list" if method == "GET" else "campaign_create"
        if not sub:
            return "campaign_get" if method == "GET" else "campaign_patch"
        if sub == "/status":
            return "campaign_status"
        if cs == "/upload":
            return "campaign_upload"
        if cs == "/stream":
            return "campaign_stream"
        if cs is None:
            return "campaign_cohorts"
        return "campaign_cohort_file" if files else "campaign_cohort_get"
    m = re.fullmatch(r"/api/scheduling/v1/orgs/[^/]+/workspaces/[^/]+/deployments/[^/]+/cohorts(/upload|/stream|/[^/]+(/files)?)?", p)
    if m:
        cs, files = m.groups()
        if cs == "/upload":
            return "deployment_upload"
        if cs == "/stream":
            return "deployment_stream"
        if cs is None:
            return "deployment_cohorts"
        return "deployment_cohort_file" if files else "deployment_cohort_get"
    m = re.fullmatch(r"/api/app-authoring/v1/orgs/[^/]+/workspaces/[^/]+/deployments(/[^/]+)?(/status)?", p)
    if m:
        ident, sub = m.groups()
        if not ident:
            return "deployment_list" if method == "GET" else "deployment_create"
        if sub:
            return "deployment_status"
        return {"GET": "deployment_get", "PATCH": "deployment_patch", "DELETE": "deployment_delete"}.get(method, "?")
    if p.startswith("/sim/v1/") and p.endswith("/inbound-calls"):
        return "sim_inbound"
    return "other"


class Ctx:
    def __init__(self, method, path, query, headers, body):
        self.method = method
        self.path = path
        self.query = query  # list of (k, v)
        self.headers = headers  # list of (k, v)
        self.body = body
        self.op = route(method, path)
        self.key = next((v for k, v in headers if k.lower() == "x-api-key"), None)
        self.json = None
        ct = self.header("content-type") or ""
        if body and "json" in ct:
            try:
                self.json = json.loads(body)
            except Exception:
                self.json = None
        self.extra = {}

    def header(self, name):
        return next((v for k, v in self.headers if k.lower() == name), None)

    def q(self, name):
        vals = [v for k, v in self.query if k == name]
        return vals[-1] if vals else None

    def set_json(self, obj):
        self.json = obj
        self.body = json.dumps(obj).encode()

    def set_q(self, name, value):
        self.query = [(k, v) for k, v in self.query if k != name]
        if value is not None:
            self.query.append((name, value))

    def target(self):
        qs = urllib.parse.urlencode(self.query, safe="/:,+*") if self.query else ""
        return self.path + ("?" + qs if qs else "")


# ---------------------------------------------------------------- defects
D = {}


def defect(name, rule, source, what, kind="error", hook=False):
    def deco(obj):
        D[name] = dict(name=name, rule=rule, source=source, what=what, kind=kind, hook=hook, impl=obj)
        return obj
    return deco


def cls_of(d):
    return d["impl"]


class Base:
    def req(self, ctx):  # return None or (status, json) to answer without forwarding
        return None

    def resp(self, ctx, status, body):  # body json or None; return status, body
        return status, body

    def event(self, ev, headers):  # return ev, headers
        return ev, headers

    def hook_status(self, status):
        return status


def J(ctx):
    return ctx.json if isinstance(ctx.json, dict) else None


# --- instant outbound
@defect("outbound_success_201", "Success status codes: 200 with a JSON body everywhere but DELETE",
        "docs/interface.md: The spec's numbered open points #6 (ref)", "POST .../outbounds answers 201 instead of 200")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "outbound" and st == 200:
            return 201, b
        return st, b


@defect("outbound_loc_dotted", "Instant outbound validation: {detail:[{loc:[string],msg,type}]}, loc the path to the field",
        "spec: Errors", "422 loc given as one dotted string instead of a list")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "outbound" and st == 422 and b:
            for d in b.get("detail", []):
                d["loc"] = ".".join(str(x) for x in d["loc"])
        return st, b


@defect("outbound_detail_first_only", "Validation body: every failure at once",
        "docs/interface.md: Validation and errors (ref)", "422 detail lists only the first failure")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "outbound" and st == 422 and b and b.get("detail"):
            b["detail"] = b["detail"][:1]
        return st, b


@defect("outbound_missing_user_accepted", "Instant outbound validation: {detail:[...]} for a request missing user_config.user_phone_number",
        "spec: Endpoints: Instant outbound; docs/interface.md: required fields (assumed)",
        "a request without user_config is answered 200 with an attempt_id", kind="assumed")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "outbound" and b is not None and "user_config" not in b and "app_config" in b:
            return 200, {"attempt_id": "00000000-0000-7000-8000-000000000000"}
        return None


# --- campaigns
@defect("campaign_create_status_active", "POST /campaigns answers a campaign summary with status scheduled",
        "spec: Endpoints: Campaigns; States: campaign", "create answers status active")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_create" and st == 200 and b:
            b["status"] = "active"
        return st, b


@defect("campaign_description_not_stored", "The create request's description is part of the campaign",
        "spec: Resources: Campaign", "description answered at create but not stored (GET shows null)")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_create" and b and b.get("description"):
            ctx.extra["d"] = b.pop("description")
            ctx.set_json(b)
        return None

    def resp(self, ctx, st, b):
        if "d" in ctx.extra and st == 200 and b:
            b["description"] = ctx.extra["d"]
        return st, b


@defect("campaign_app_version_string", "Campaign summary: agent version (integer)",
        "spec: Resources: Campaign", "summary app_version answered as a string in the list")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_list" and st == 200 and b:
            for it in b.get("items", []):
                it["app_version"] = str(it["app_version"])
        return st, b


@defect("campaign_list_status_filter_ignored", "Campaign list: campaign_status filters",
        "docs/interface.md: Campaign list (ref params)", "campaign_status query parameter ignored")
class _(Base):
    def req(self, ctx):
        if ctx.op == "campaign_list":
            ctx.set_q("campaign_status", None)
        return None


@defect("campaign_list_other_workspace", "A key opens its own workspace: lists never show another workspace's items",
        "spec: Authentication; docs/interface.md: Scopes (key per workspace)",
        "campaign list also shows campaigns of other workspaces the proxy has seen keys for")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_list" and st == 200 and b:
            me = ws_of(ctx.path)
            for ws, key in list(STATE["keys"].items()):
                if ws == me:
                    continue
                p = ctx.path.replace("/orgs/%s/workspaces/%s/" % me, "/orgs/%s/workspaces/%s/" % ws)
                s2, b2 = call_json("GET", p + ("?" + urllib.parse.urlencode(ctx.query) if ctx.query else ""), key)
                if s2 == 200:
                    b["items"].extend(b2["items"])
                    b["total"] += b2["total"]
        return st, b


@defect("campaign_patch_name_not_stored", "A PATCH changes what it names: the campaign keeps the new value",
        "docs/interface.md: Campaign PATCH (ref)", "PATCH answers the new name but does not store it")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_patch" and b and "name" in b:
            ctx.extra["n"] = b.pop("name")
            ctx.set_json(b)
        return None

    def resp(self, ctx, st, b):
        if "n" in ctx.extra and st == 200 and b:
            b["name"] = ctx.extra["n"]
        return st, b


@defect("campaign_patch_days_narrowed", "A PATCH of allowed_schedule sets the calling window as sent",
        "docs/interface.md: Campaign PATCH (ref); spec: allowed_schedule", "PATCHed allowed_days keep only the first day")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_patch" and b and isinstance(b.get("allowed_schedule"), dict):
            d = b["allowed_schedule"].get("allowed_days")
            if isinstance(d, list) and len(d) > 1:
                b["allowed_schedule"]["allowed_days"] = d[:1]
                ctx.set_json(b)
        return None


@defect("campaign_patch_retry_reset", "Campaign PATCH: omitted retry_config fields keep their values",
        "docs/interface.md: Campaign PATCH (assumed)", "a partial retry_config resets retry_on to empty",
        kind="assumed")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_patch" and b and isinstance(b.get("app_config"), dict):
            rc = b["app_config"].get("retry_config")
            if isinstance(rc, dict) and "retry_on" not in rc:
                rc["retry_on"] = []
                ctx.set_json(b)
        return None


@defect("campaign_patch_active_allowed", "Campaign PATCH allowed only while scheduled or paused",
        "docs/interface.md: Campaign PATCH (ref states)", "a refused PATCH of an active campaign answered 200 with the campaign")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_patch" and st == 409:
            s2, b2 = call_json("GET", ctx.path, ctx.key)
            if s2 == 200:
                return 200, b2
        return st, b


@defect("campaign_resume_cancelled", "any -> cancelled: the campaign stops (cancelled is final)",
        "spec: States: campaign", "resume of a cancelled campaign answered 200 active")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_status" and st == 409 and (J(ctx) or {}).get("action") == "resume":
            s2, b2 = call_json("GET", ctx.path[:-len("/status")], ctx.key)
            if s2 == 200 and b2.get("status") == "cancelled":
                b2["status"] = "active"
                return 200, b2
        return st, b


@defect("campaign_pause_scheduled_refused", "any -> paused with PUT status pause",
        "spec: States: campaign", "pausing a scheduled campaign refused with 409")
class _(Base):
    def req(self, ctx):
        if ctx.op == "campaign_status" and (J(ctx) or {}).get("action") == "pause":
            s2, b2 = call_json("GET", ctx.path[:-len("/status")], ctx.key)
            if s2 == 200 and b2.get("status") == "scheduled":
                return err(409, "invalid_status_transition", "cannot pause a scheduled campaign", "conflict_error")
        return None


@defect("campaign_status_answer_stale", "PUT status answers the updated resource",
        "docs/interface.md: open point #7 (ref)", "status update answers the status before the change")
class _(Base):
    def req(self, ctx):
        if ctx.op == "campaign_status":
            s2, b2 = call_json("GET", ctx.path[:-len("/status")], ctx.key)
            if s2 == 200:
                ctx.extra["old"] = b2.get("status")
        return None

    def resp(self, ctx, st, b):
        if ctx.op == "campaign_status" and st == 200 and b and "old" in ctx.extra:
            b["status"] = ctx.extra["old"]
        return st, b


@defect("campaign_start_max_6_days", "Campaign start_timestamp at most 7 days from now",
        "spec: Limits", "a start more than 6 days ahead refused with 422")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_create" and b and isinstance(b.get("start_timestamp"), str):
            s = parse_ns(b["start_timestamp"])
            if s is not None and s - sim_now_ns(ctx.key) > 6 * 86400 * 10**9:
                return v422(["body", "start_timestamp"], "start_timestamp must be at most 6 days from now")
        return None


@defect("campaign_end_from_now", "end_timestamp at most 30 days after start_timestamp",
        "spec: Limits", "the 30-day end limit measured from now instead of from the start")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_create" and b and isinstance(b.get("end_timestamp"), str):
            e = parse_ns(b["end_timestamp"])
            if e is not None and e - sim_now_ns(ctx.key) > 30 * 86400 * 10**9:
                return v422(["body", "end_timestamp"], "end_timestamp must be at most 30 days after start")
        return None


@defect("campaign_end_min_60s", "end_timestamp at least 120 seconds after start_timestamp",
        "spec: Limits", "an end only 60 to 119 s after the start is accepted (end moved to start + 120 s)")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "campaign_create" and b and isinstance(b.get("start_timestamp"), str) and isinstance(b.get("end_timestamp"), str):
            s, e = parse_ns(b["start_timestamp"]), parse_ns(b["end_timestamp"])
            if s is not None and e is not None and 60 * 10**9 <= e - s < 120 * 10**9:
                ns = s + 120 * 10**9
                sec, frac = divmod(ns, 10**9)
                b["end_timestamp"] = datetime.datetime.fromtimestamp(sec, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%09dZ" % frac
                ctx.set_json(b)
        return None


@defect("attempts_per_second_min_refused", "attempts_per_second 0.1 to 500",
        "spec: Limits", "attempts_per_second exactly 0.1 refused with 422")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_create", "campaign_patch") and b and isinstance(b.get("app_config"), dict):
            if b["app_config"].get("attempts_per_second") == 0.1:
                return v422(["body", "app_config", "attempts_per_second"], "Input should be greater than 0.1", "greater_than")
        return None


@defect("attempts_per_second_over_max", "attempts_per_second 0.1 to 500",
        "spec: Limits", "attempts_per_second above 500 accepted (capped to 500)")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_create", "campaign_patch") and b and isinstance(b.get("app_config"), dict):
            v = b["app_config"].get("attempts_per_second")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 500:
                b["app_config"]["attempts_per_second"] = 500
                ctx.set_json(b)
        return None


@defect("threshold_1200_refused", "retry_config.threshold_seconds 1 to 1200",
        "spec: Limits", "threshold_seconds 1200 refused with 422")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_create", "campaign_patch") and b and isinstance(b.get("app_config"), dict):
            rc = b["app_config"].get("retry_config")
            if isinstance(rc, dict) and rc.get("threshold_seconds") == 1200:
                return v422(["body", "app_config", "retry_config", "threshold_seconds"], "Input should be less than 1200", "less_than")
        return None


@defect("threshold_zero_accepted", "retry_config.threshold_seconds 1 to 1200",
        "spec: Limits", "threshold_seconds 0 accepted (stored as 1)")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_create", "campaign_patch") and b and isinstance(b.get("app_config"), dict):
            rc = b["app_config"].get("retry_config")
            if isinstance(rc, dict) and rc.get("threshold_seconds") == 0:
                rc["threshold_seconds"] = 1
                ctx.set_json(b)
        return None


@defect("campaign_description_truncated", "Campaign description max 150 characters",
        "spec: Limits", "a 151-character description is accepted, cut to 150")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_create", "campaign_patch") and b and isinstance(b.get("description"), str) and len(b["description"]) > 150:
            b["description"] = b["description"][:150]
            ctx.set_json(b)
        return None


@defect("campaign_active_shown_scheduled", "scheduled -> active when start_timestamp is reached",
        "spec: States: campaign", "GET answers scheduled for a campaign past its start")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_get" and st == 200 and b and b.get("status") == "active":
            b["status"] = "scheduled"
        return st, b


@defect("campaign_not_ended", "active -> ended when the time window expires",
        "spec: States: campaign", "GET and list answer active for a campaign past its end")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_get" and st == 200 and b and b.get("status") == "ended":
            b["status"] = "active"
        if ctx.op == "campaign_list" and st == 200 and b:
            for it in b.get("items", []):
                if it.get("status") == "ended":
                    it["status"] = "active"
        return st, b


@defect("campaign_days_ignored", "Calls are placed only inside allowed_schedule (days)",
        "spec: What the service does", "allowed_days widened to every day upstream (answers show the days sent)")
class _(Base):
    ALL = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_create", "campaign_patch") and b and isinstance(b.get("allowed_schedule"), dict):
            ctx.extra["days"] = b["allowed_schedule"].get("allowed_days")
            b["allowed_schedule"]["allowed_days"] = list(self.ALL)
            ctx.set_json(b)
        return None

    def resp(self, ctx, st, b):
        if st == 200 and b and "days" in ctx.extra and b.get("campaign_id"):
            STATE["camp_shadow"][b["campaign_id"]] = ctx.extra["days"]
        if st == 200 and b and isinstance(b, dict):
            cid = b.get("campaign_id")
            if cid in STATE["camp_shadow"] and isinstance(b.get("allowed_schedule"), dict):
                b["allowed_schedule"]["allowed_days"] = STATE["camp_shadow"][cid]
        return st, b


@defect("campaign_get_other_workspace", "A key opens its own workspace only",
        "spec: Authentication", "GET of another workspace's campaign id answered from that workspace")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "campaign_get" and st == 404:
            me = ws_of(ctx.path)
            for ws, key in list(STATE["keys"].items()):
                if ws != me:
                    p = ctx.path.replace("/orgs/%s/workspaces/%s/" % me, "/orgs/%s/workspaces/%s/" % ws)
                    s2, b2 = call_json("GET", p, key)
                    if s2 == 200:
                        return 200, b2
        return st, b


# --- cohorts
@defect("cohort_upload_completed_at_once", "POST .../cohorts/upload answers cohort_id and status processing",
        "spec: Endpoints: Campaigns; States: cohort", "multipart upload answered with status completed")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op in ("campaign_upload", "deployment_upload") and st == 200 and b:
            b["status"] = "completed"
        return st, b


@defect("cohort_rejected_records_string", "result.rejected_records (count)",
        "spec: Resources: Cohort", "cohort GET answers rejected_records as a string")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op in ("campaign_cohort_get", "deployment_cohort_get") and st == 200 and b and isinstance(b.get("result"), dict):
            b["result"]["rejected_records"] = str(b["result"]["rejected_records"])
        return st, b


@defect("cohort_rejected_file_no_reason", "Rejected file: original columns plus rejected_reason",
        "docs/interface.md: open point #7 (ref)", "rejected_records file lacks the rejected_reason column")
class _(Base):
    raw = True

    def raw_resp(self, ctx, st, headers, data):
        if ctx.op in ("campaign_cohort_file", "deployment_cohort_file") and st == 200 and ctx.q("file_type") == "rejected_records":
            lines = data.decode("utf-8").split("\n")
            out = []
            for ln in lines:
                if "," in ln:
                    ln = ln.rsplit(",", 1)[0] if not ln.endswith("\r") else ln[:-1].rsplit(",", 1)[0] + "\r"
                out.append(ln)
            data = "\n".join(out).encode()
        return st, headers, data


@defect("cohort_list_newest_first", "Cohort list in upload order, oldest first",
        "docs/interface.md: Cohort list (assumed)", "cohort list answered newest first", kind="assumed")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op in ("campaign_cohorts", "deployment_cohorts") and st == 200 and b:
            b["items"] = list(reversed(b["items"]))
        return st, b


@defect("cohort_stream_1000_refused", "Cohort stream: 1 to 1000 users",
        "docs/interface.md: Cohort stream body (ref)", "a stream of exactly 1000 users refused with 422")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("campaign_stream", "deployment_stream") and b and isinstance(b.get("users"), list) and len(b["users"]) >= 1000:
            return v422(["body", "users"], "List should have at most 999 items", "too_long")
        return None


@defect("cohort_upload_paused_refused", "Cohorts can be uploaded before the start, while active, or after a pause",
        "spec: What the service does", "upload to a paused campaign refused with 409")
class _(Base):
    def req(self, ctx):
        if ctx.op in ("campaign_upload", "campaign_stream"):
            base = ctx.path.rsplit("/cohorts/", 1)[0]
            s2, b2 = call_json("GET", base, ctx.key)
            if s2 == 200 and b2.get("status") == "paused":
                return err(409, "campaign_closed", "campaign is paused", "conflict_error")
        return None


@defect("cohort_get_other_campaign", "GET /campaigns/{id}/cohorts/{cohort_id}: the cohort of that campaign",
        "spec: Endpoints: Campaigns", "a cohort is served under any campaign's path")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op in ("campaign_upload", "campaign_stream", "deployment_upload", "deployment_stream") and st == 200 and b:
            STATE["cohort_parent"][b["cohort_id"]] = ctx.path.rsplit("/cohorts/", 1)[0]
        if ctx.op in ("campaign_cohort_get", "deployment_cohort_get") and st == 404:
            cid = ctx.path.rsplit("/", 1)[1]
            parent = STATE["cohort_parent"].get(cid)
            if parent:
                s2, b2 = call_json("GET", parent + "/cohorts/" + cid, ctx.key)
                if s2 == 200:
                    return 200, b2
        return st, b


@defect("cohort_total_records_off", "Cohort result counts: total = valid + rejected",
        "docs/interface.md: Cohort record fields (ref)", "result.total_records counts the header row too")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op in ("campaign_cohort_get", "deployment_cohort_get", "campaign_stream", "deployment_stream") and st == 200 and b and isinstance(b.get("result"), dict):
            b["result"]["total_records"] += 1
        return st, b


# --- deployments
@defect("deployment_name_truncated", "Deployment name max 50 characters",
        "spec: Limits", "a 51-character name accepted, cut to 50")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("deployment_create", "deployment_patch") and b and isinstance(b.get("name"), str) and len(b["name"]) > 50:
            b["name"] = b["name"][:50]
            ctx.set_json(b)
        return None


@defect("deployment_name_dot_accepted", "Deployment name pattern ^[\\w\\- ]{1,50}$",
        "spec: Limits", "a name with '.' accepted ('.' stored as '_')")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("deployment_create", "deployment_patch") and b and isinstance(b.get("name"), str) and "." in b["name"]:
            b["name"] = b["name"].replace(".", "_")
            ctx.set_json(b)
        return None


@defect("deployment_description_150_refused", "Deployment description max 150 characters",
        "spec: Limits", "a description of exactly 150 characters refused with 422")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("deployment_create", "deployment_patch") and b and isinstance(b.get("description"), str) and len(b["description"]) >= 150:
            return v422(["body", "description"], "String should have at most 149 characters", "string_too_long")
        return None


@defect("deployment_create_status_missing", "POST /deployments answers the deployment with status active",
        "spec: Endpoints: Deployments; States: deployment", "create answer without status (null)")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_create" and st == 200 and b:
            b["status"] = None
        return st, b


@defect("deployment_channel_direction_case", "channel_direction enum inbound, outbound, inbound_outbound",
        "spec: Resources: Deployment", "channel_direction answered upper case on GET")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_get" and st == 200 and b and isinstance(b.get("channel_direction"), str):
            b["channel_direction"] = b["channel_direction"].upper()
        return st, b


@defect("deployment_list_phone_numbers_missing", "List items additionally show phone_numbers",
        "spec: Resources: Deployment", "list items lack phone_numbers")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_list" and st == 200 and b:
            for it in b.get("items", []):
                it.pop("phone_numbers", None)
        return st, b


@defect("deployment_list_limit_100_refused", "Deployment list limit 1 to 100",
        "spec: Limits", "limit=100 refused with 422")
class _(Base):
    def req(self, ctx):
        if ctx.op == "deployment_list" and ctx.q("limit") == "100":
            return v422(["query", "limit"], "Input should be less than 100", "less_than")
        return None


@defect("deployment_list_limit_0_accepted", "Deployment list limit 1 to 100",
        "spec: Limits", "limit=0 accepted as the default page")
class _(Base):
    def req(self, ctx):
        if ctx.op == "deployment_list" and ctx.q("limit") == "0":
            ctx.set_q("limit", None)
        return None


@defect("deployment_list_offset_negative_accepted", "Deployment list offset at least 0",
        "spec: Limits", "offset=-1 accepted as 0")
class _(Base):
    def req(self, ctx):
        o = ctx.q("offset")
        if ctx.op == "deployment_list" and o and o.startswith("-"):
            ctx.set_q("offset", "0")
        return None


@defect("deployment_list_total_is_page", "total: matches for the query",
        "spec: Resources: Paginated deployment list", "total counts only this page's items")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_list" and st == 200 and b:
            b["total"] = len(b["items"])
        return st, b


@defect("deployment_list_next_on_last", "next_page_uri null on the last page",
        "spec: Resources: Paginated deployment list", "next_page_uri points past the last page")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_list" and st == 200 and b and b.get("next_page_uri") is None:
            b["next_page_uri"] = "%s?offset=%d&limit=%d" % (ctx.path, b["offset"] + b["limit"], b["limit"])
        return st, b


@defect("deployment_list_prev_on_first", "prev_page_uri null on the first page",
        "spec: Resources: Paginated deployment list", "prev_page_uri set on the first page")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_list" and st == 200 and b and b.get("offset") == 0:
            b["prev_page_uri"] = "%s?offset=0&limit=%d" % (ctx.path, b["limit"])
        return st, b


@defect("deployment_list_sort_order_ignored", "sort order asc or desc (sort_order)",
        "spec: Endpoints: list query parameters; docs/interface.md open point #2 (ref)", "sort_order ignored: always desc")
class _(Base):
    def req(self, ctx):
        if ctx.op == "deployment_list":
            ctx.set_q("sort_order", None)
        return None


@defect("deployment_list_search_case_sensitive", "List search case-insensitive",
        "docs/interface.md: List search (assumed)", "search matched case-sensitively", kind="assumed")
class _(Base):
    def resp(self, ctx, st, b):
        s = ctx.q("search")
        if ctx.op == "deployment_list" and st == 200 and b and s:
            keep = [it for it in b["items"] if s in (it.get("name") or "") or s in (it.get("description") or "")
                    or any(s in p for p in it.get("phone_numbers", []))]
            b["total"] -= len(b["items"]) - len(keep)
            b["items"] = keep
        return st, b


@defect("deployment_list_other_workspace", "A key opens its own workspace: lists never show another workspace's items",
        "spec: Authentication", "deployment list also shows other workspaces' deployments")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_list" and st == 200 and b:
            me = ws_of(ctx.path)
            for ws, key in list(STATE["keys"].items()):
                if ws != me:
                    p = ctx.path.replace("/orgs/%s/workspaces/%s/" % me, "/orgs/%s/workspaces/%s/" % ws)
                    s2, b2 = call_json("GET", p, key)
                    if s2 == 200:
                        b["items"].extend(b2["items"])
                        b["total"] += b2["total"]
        return st, b


@defect("deployment_patch_schedule_not_stored", "PATCH: the schedule can be changed",
        "spec: Endpoints: Deployments", "PATCH inbound_config answered but not stored")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "deployment_patch" and b and "inbound_config" in b:
            ctx.extra["ic"] = b.pop("inbound_config")
            ctx.set_json(b)
        return None

    def resp(self, ctx, st, b):
        if "ic" in ctx.extra and st == 200 and b:
            b["inbound_config"] = ctx.extra["ic"]
        return st, b


@defect("deployment_patch_app_version_float", "app_version (integer)",
        "spec: Resources: Deployment", "PATCH answers app_version as a float (2.0)")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_patch" and st == 200 and b and isinstance(b.get("app_version"), int):
            b["app_version"] = float(b["app_version"])
        return st, b


@defect("deployment_patch_connections_appended", "PATCH connection_configs sets the list sent",
        "docs/interface.md: open point #4 (ref)", "PATCHed connection_configs appended to the old ones")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "deployment_patch" and b and isinstance(b.get("connection_configs"), list):
            s2, cur = call_json("GET", ctx.path, ctx.key)
            if s2 == 200:
                sent = {p for c in b["connection_configs"] if isinstance(c, dict) for p in c.get("phone_numbers", [])}
                old = [c for c in cur["connection_configs"] if not sent & set(c["phone_numbers"])]
                b["connection_configs"] = old + b["connection_configs"]
                ctx.set_json(b)
        return None


@defect("deployment_patch_null_description_kept", "PATCH null clears description",
        "docs/interface.md: open point #4 (null semantics assumed)", "description: null is ignored", kind="assumed")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op == "deployment_patch" and b and "description" in b and b["description"] is None:
            del b["description"]
            ctx.set_json(b)
        return None


@defect("deployment_pause_answer_stale", "PUT status answers the updated deployment",
        "spec: Endpoints: Deployments", "pause answers status active")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_status" and st == 200 and b and b.get("status") == "paused":
            b["status"] = "active"
        return st, b


@defect("deployment_resume_refused", "paused -> active with the resume action",
        "spec: States: deployment", "resume refused with 422")
class _(Base):
    def req(self, ctx):
        if ctx.op == "deployment_status" and (J(ctx) or {}).get("action") == "resume":
            return v422(["body", "action"], "Input should be 'pause'", "enum")
        return None


@defect("deployment_delete_is_pause", "Deleting a deployment is permanent",
        "spec: Rules 6", "DELETE answered 204 but only pauses the deployment")
class _(Base):
    def req(self, ctx):
        if ctx.op == "deployment_delete":
            s2, b2 = call_json("PUT", ctx.path + "/status", ctx.key, {"action": "pause"})
            if s2 in (200, 409):
                return 204, None
        return None


@defect("deployment_delete_error_shape", "Deployment delete failure: {error:{message,type,code}}",
        "spec: Errors", "a refused DELETE answers {detail: message}")
class _(Base):
    def resp(self, ctx, st, b):
        if ctx.op == "deployment_delete" and st >= 400 and isinstance(b, dict) and "error" in b:
            return st, {"detail": b["error"]["message"]}
        return st, b


@defect("deployment_timezone_utc", "InboundConfig timezone (IANA); calls answered only inside the schedule",
        "spec: Resources: Deployment; What the service does", "inbound schedule read in UTC whatever the timezone")
class _(Base):
    def req(self, ctx):
        b = J(ctx)
        if ctx.op in ("deployment_create", "deployment_patch") and b and isinstance(b.get("inbound_config"), dict):
            ctx.extra["tz"] = b["inbound_config"].get("timezone")
            b["inbound_config"]["timezone"] = "UTC"
            ctx.set_json(b)
        return None

    def resp(self, ctx, st, b):
        if st == 200 and isinstance(b, dict):
            if "tz" in ctx.extra and b.get("deployment_id"):
                STATE["dep_shadow"][b["deployment_id"]] = ctx.extra["tz"]
            items = b.get("items") if isinstance(b.get("items"), list) else [b]
            for it in items:
                if isinstance(it, dict) and it.get("deployment_id") in STATE["dep_shadow"] and isinstance(it.get("inbound_config"), dict):
                    it["inbound_config"]["timezone"] = STATE["dep_shadow"][it["deployment_id"]]
        return st, b


@defect("deployment_paused_still_answers", "A paused deployment does not answer calls",
        "spec: States: deployment; What the service does", "pause answered and shown but not applied upstream")
class _(Base):
    def req(self, ctx):
        if ctx.op == "deployment_status" and (J(ctx) or {}).get("action") == "pause":
            s2, b2 = call_json("GET", ctx.path[:-len("/status")], ctx.key)
            if s2 == 200:
                STATE["dep_shadow"][b2["deployment_id"]] = "paused"
                b2["status"] = "paused"
                return 200, b2
        if ctx.op == "deployment_status" and (J(ctx) or {}).get("action") == "resume":
            did = ctx.path.split("/")[-2]
            if STATE["dep_shadow"].pop(did, None):
                s2, b2 = call_json("GET", ctx.path[:-len("/status")], ctx.key)
                return s2, b2
        return None

    def resp(self, ctx, st, b):
        if st == 200 and isinstance(b, dict) and ctx.op in ("deployment_get", "deployment_list", "deployment_patch"):
            items = b.get("items") if isinstance(b.get("items"), list) else [b]
            for it in items:
                if isinstance(it, dict) and STATE["dep_shadow"].get(it.get("deployment_id")) == "paused":
                    it["status"] = "paused"
        return st, b


# --- webhooks
def sign(ts, body):
    return hmac.new((ARGS.webhook_secret or "").encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()


@defect("webhook_signature_body_only", "Signature: HMAC-SHA256 over {timestamp}.{raw body}",
        "docs/interface.md: Events: Signing (ref)", "signature computed over the body alone", hook=True)
class _(Base):
    def sign_event(self, ts, body):
        return hmac.new((ARGS.webhook_secret or "").encode(), body, hashlib.sha256).hexdigest()


@defect("webhook_timestamp_millis", "x-webhook-timestamp: Unix seconds",
        "docs/interface.md: Webhook delivery: Signature (assumed)", "timestamp header in milliseconds (signed consistently)",
        kind="assumed", hook=True)
class _(Base):
    def event(self, ev, headers):
        headers["x-webhook-timestamp"] = headers.get("x-webhook-timestamp", "0") + "000"
        return ev, headers


@defect("outbound_event_attempt_id_other", "The outbound event's attempt_id is the attempt's (the answer's attempt_id)",
        "docs/interface.md: Events (ref)", "event attempt_id in upper case", hook=True)
class _(Base):
    def event(self, ev, headers):
        if "status" in ev and "campaign_id" not in ev and isinstance(ev.get("attempt_id"), str):
            ev["attempt_id"] = ev["attempt_id"].upper()
        return ev, headers


@defect("outbound_event_metadata_dropped", "webhook_config.metadata: free-form, attached to the webhook",
        "spec: Resources: Outbound call request", "event webhook_config.metadata dropped (null)", hook=True)
class _(Base):
    def event(self, ev, headers):
        if isinstance(ev.get("webhook_config"), dict):
            ev["webhook_config"]["metadata"] = None
        return ev, headers


@defect("campaign_event_retry_attempt_from_1", "retry_attempt: 0 for the first dial",
        "docs/interface.md: Outcomes and retries (ref)", "retry_attempt counted from 1", hook=True)
class _(Base):
    def event(self, ev, headers):
        if isinstance(ev.get("retry_attempt"), int):
            ev["retry_attempt"] += 1
        return ev, headers


@defect("campaign_event_app_version_string", "Campaign event app_version (integer)",
        "docs/interface.md: Events (ref)", "event app_version as a string", hook=True)
class _(Base):
    def event(self, ev, headers):
        if "campaign_id" in ev and isinstance(ev.get("app_version"), int):
            ev["app_version"] = str(ev["app_version"])
        return ev, headers


@defect("webhook_non2xx_not_retried", "Delivery: non-2xx answers are retried",
        "docs/interface.md: Webhook delivery: Success and failure (ref)", "a receiver's 5xx reported as 200: no retry", hook=True)
class _(Base):
    def hook_status(self, status):
        return 200 if status >= 300 else status


# ---------------------------------------------------------------- hook URLs
def enc_url(u):
    return PUBLIC + HOOK + base64.urlsafe_b64encode(u.encode()).decode().rstrip("=")


def dec_url(s):
    tok = s[len(PUBLIC + HOOK):]
    return base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)).decode()


def rewrite_req_hooks(ctx):
    b = J(ctx)
    if not b:
        return
    wc = None
    if ctx.op == "outbound":
        wc = b.get("webhook_config")
    elif ctx.op in ("campaign_create", "campaign_patch") and isinstance(b.get("app_config"), dict):
        wc = b["app_config"].get("webhook_config")
    if isinstance(wc, dict) and isinstance(wc.get("url"), str) and re.match(r"^[Hh][Tt][Tt][Pp][Ss]?://", wc["url"]):
        wc["url"] = enc_url(wc["url"])
        ctx.set_json(b)


def restore_urls(obj):
    if isinstance(obj, dict):
        return {k: restore_urls(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [restore_urls(v) for v in obj]
    if isinstance(obj, str) and obj.startswith(PUBLIC + HOOK):
        try:
            return dec_url(obj)
        except Exception:
            return obj
    return obj


# ---------------------------------------------------------------- HTTP
PUBLIC = ""
DEFECT = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        log(fmt % a)

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = b""
            while True:
                line = self.rfile.readline().strip()
                n = int(line.split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline().strip():
                        pass
                    break
                out += self.rfile.read(n)
                self.rfile.readline()
            return out
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else (b"" if self.headers.get("Content-Length") else None)

    def send(self, status, headers, data, head=False):
        self.send_response_only(status)
        for k, v in headers:
            if k.lower() in HOP and not (head and k.lower() == "content-length"):
                continue
            self.send_header(k, v)
        if status not in (204, 304) and not head:
            self.send_header("Content-Length", str(len(data or b"")))
        elif head and not any(k.lower() == "content-length" for k, _ in headers) and status not in (204, 304):
            self.send_header("Content-Length", str(len(data or b"")))
        self.end_headers()
        if data and not head and status not in (204, 304):
            self.wfile.write(data)
        self.wfile.flush()

    def handle_any(self):
        body = self.read_body()
        split = urllib.parse.urlsplit(self.path)
        path = split.path
        if path.startswith(HOOK):
            return self.handle_hook(path, body)
        query = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        headers = [(k, v) for k, v in self.headers.items()]
        if DEFECT is None:
            st, hd, data = self.forward(self.command, self.path, headers, body)
            return self.send(st, hd, data, self.command == "HEAD")
        ctx = Ctx(self.command, path, query, headers, body)
        ws = ws_of(path)
        if ws and ctx.key and path.startswith("/api/"):
            STATE["keys"].setdefault(ws, ctx.key)
        impl = DEFECT["impl"]()
        if DEFECT["hook"]:
            rewrite_req_hooks(ctx)
        changed_query = False
        orig_q = list(ctx.query)
        short = impl.req(ctx)
        if short is not None:
            st, obj = short
            if obj is None:
                return self.send(st, [], b"", self.command == "HEAD")
            data = json.dumps(obj).encode()
            return self.send(st, [("Content-Type", "application/json")], data, self.command == "HEAD")
        target = ctx.target() if ctx.query != orig_q else self.path
        st, hd, data = self.forward(self.command, target, headers, ctx.body)
        if hasattr(impl, "raw_resp"):
            st, hd, data = impl.raw_resp(ctx, st, hd, data)
            return self.send(st, hd, data, self.command == "HEAD")
        ctype = next((v for k, v in hd if k.lower() == "content-type"), "")
        if "json" in ctype and data:
            try:
                obj = json.loads(data)
            except Exception:
                obj = None
            if obj is not None:
                before = json.dumps(obj)
                obj2 = copy.deepcopy(obj)
                st2, obj2 = impl.resp(ctx, st, obj2)
                if DEFECT["hook"]:
                    obj2 = restore_urls(obj2)
                if st2 != st or json.dumps(obj2) != before:
                    st = st2
                    data = json.dumps(obj2, separators=(",", ":")).encode()
        return self.send(st, hd, data, self.command == "HEAD")

    def forward(self, method, target, headers, body):
        c = upstream_conn()
        try:
            c.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                if k.lower() in HOP:
                    continue
                c.putheader(k, v)
            if body is not None:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body if body else None)
            r = c.getresponse()
            data = r.read()
            return r.status, r.getheaders(), data
        finally:
            c.close()

    def handle_hook(self, path, body):
        try:
            url = dec_url(PUBLIC + path)
        except Exception:
            return self.send(404, [], b"")
        impl = DEFECT["impl"]() if DEFECT else Base()
        hdrs = {k.lower(): v for k, v in self.headers.items()}
        ts = hdrs.get("x-webhook-timestamp", "0")
        try:
            ev = json.loads(body)
        except Exception:
            ev = None
        out = {"content-type": "application/json"}
        for k in ("user-agent",):
            if k in hdrs:
                out[k] = hdrs[k]
        out["x-webhook-timestamp"] = ts
        if ev is not None:
            ev = restore_urls(ev)
            ev, out = impl.event(ev, out)
            data = json.dumps(ev, separators=(",", ":")).encode()
        else:
            data = body
        ts2 = out["x-webhook-timestamp"]
        out["x-webhook-signature"] = impl.sign_event(ts2, data) if hasattr(impl, "sign_event") else sign(ts2, data)
        u = urllib.parse.urlsplit(url)
        try:
            Conn = http.client.HTTPSConnection if u.scheme.lower() == "https" else http.client.HTTPConnection
            c = Conn(u.hostname, u.port, timeout=10)
            c.request("POST", (u.path or "/") + ("?" + u.query if u.query else ""), body=data, headers=out)
            r = c.getresponse()
            r.read()
            st = r.status
            c.close()
        except Exception as e:
            log("hook forward failed", e)
            st = 502
        st = impl.hook_status(st)
        return self.send(st, [("Content-Type", "text/plain")], b"ok" if st < 300 else b"no")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


def main():
    global ARGS, VERBOSE, PUBLIC, DEFECT
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--defect")
    ap.add_argument("--webhook-secret")
    ap.add_argument("--list-defects", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ARGS = ap.parse_args()
    VERBOSE = ARGS.verbose
    if ARGS.list_defects:
        with open(os.path.join(HERE, "defects.json")) as f:
            sys.stdout.write(f.read())
        return 0
    if ARGS.defect:
        if ARGS.defect not in D:
            print("unknown defect: %s" % ARGS.defect, file=sys.stderr)
            return 2
        DEFECT = D[ARGS.defect]
    if not ARGS.upstream:
        print("--upstream is required", file=sys.stderr)
        return 2
    ARGS.upstream = ARGS.upstream.rstrip("/")
    host, port = ARGS.listen.rsplit(":", 1)
    srv = ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    h = srv.server_address[0]
    PUBLIC = "http://%s:%d" % (h if h not in ("0.0.0.0", "") else "127.0.0.1", srv.server_address[1])
    print(json.dumps({"port": srv.server_address[1]}), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
