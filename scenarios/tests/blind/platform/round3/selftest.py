#!/usr/bin/env python3
"""Self-test of proxy.py (blind round 3).

1. Builds the mock (`cargo build -p platform`).
2. Transparency: one scripted sequence over every route, straight to platform A and through
   the proxy (no defect) to its twin B (same seed, same start): the answers must be identical
   (page URIs compared with the host left out).
3. Each defect: its own probe passes through the transparent proxy and fails through the
   defective one, each on a fresh platform; the probe also checks that the defect stays
   hidden where it should (a schedule shows as the client sent it, ...).
4. Event defects: every event probe is run against every event defect: only its own fails
   (the webhook detour through the proxy breaks nothing else).

    python3 selftest.py [-j 3] [--only NAME,...] [--no-twin] [--no-cross] [--no-build]

Standard library only.  Exit 0 when everything holds.
"""

import argparse
import concurrent.futures
import hashlib
import hmac
import http.client
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
PLATFORM = os.path.join(ROOT, "target", "debug", "platform")
PROXY = os.path.join(HERE, "proxy.py")
KEY1, KEY2 = "sk-test-1", "sk-test-2"
SECRET = "whsec_test"
SIM_START = "2026-03-02T08:00:00Z"  # a Monday
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

C1 = "/api/scheduling/v1/orgs/org-1/workspaces/ws-1/campaigns"
D1 = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments"
DC1 = "/api/scheduling/v1/orgs/org-1/workspaces/ws-1/deployments"
C2 = "/api/scheduling/v1/orgs/org-1/workspaces/ws-2/campaigns"
D2 = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-2/deployments"
OUT1 = "/api/outbounds/v1/orgs/org-1/workspaces/ws-1/outbounds"
SIM1 = "/sim/v1/orgs/org-1/workspaces/ws-1"


# --------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------

class Platform:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="r3-plat-")
        ready = os.path.join(self.dir, "ready.json")
        self.log = open(os.path.join(self.dir, "platform.log"), "wb")
        self.proc = subprocess.Popen(
            [PLATFORM, "serve", "--clock", "simulated", "--database", ":memory:",
             "--api-key", "org-1/ws-1=sk-test-1", "--api-key", "org-1/ws-2=sk-test-2",
             "--listen", "127.0.0.1:0", "--ready-file", ready, "--seed", "42",
             "--sim-start", SIM_START, "--webhook-secret", SECRET],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        deadline = time.time() + 120
        while True:
            if os.path.exists(ready):
                try:
                    self.url = json.load(open(ready))["url"]
                    break
                except Exception:
                    pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("platform did not start: see %s" % self.dir)
            time.sleep(0.02)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class ProxyProc:
    def __init__(self, upstream, defect=None):
        args = [sys.executable, PROXY, "--upstream", upstream, "--listen", "127.0.0.1:0", "--webhook-secret", SECRET]
        if defect:
            args += ["--defect", defect]
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if not line:
            self.err.seek(0)
            raise RuntimeError("proxy did not start: %s" % self.err.read().decode(errors="replace"))
        self.port = json.loads(line)["port"]
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.seek(0)
        out = self.err.read().decode(errors="replace")
        self.err.close()
        return out


# --------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------

class R:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except Exception:
            self.json = None

    def __repr__(self):
        return "%d %s" % (self.status, self.body[:300])


class Api:
    def __init__(self, base, key=KEY1):
        self.base = base
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port
        self.key = key

    def req(self, method, path, body=None, key="default", headers=None, ctype="application/json", chunked=False):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        h = {}
        k = self.key if key == "default" else key
        if k is not None:
            h["X-API-Key"] = k
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            if ctype:
                h["Content-Type"] = ctype
        if headers:
            h.update(headers)
        if chunked:
            h["Transfer-Encoding"] = "chunked"
            conn.request(method, path, body=iter([data[:7], data[7:]]), headers=h, encode_chunked=True)
        else:
            conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        b = r.read()
        hd = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        return R(r.status, hd, b)

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.req("POST", path, body, **kw)

    def patch(self, path, body, **kw):
        return self.req("PATCH", path, body, **kw)

    def put(self, path, body, **kw):
        return self.req("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.req("DELETE", path, **kw)


class Hooks:
    """A webhook receiver: records every POST by path."""

    def __init__(self):
        self.events = {}
        self.lock = threading.Lock()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                with outer.lock:
                    outer.events.setdefault(self.path, []).append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.srv = S(("127.0.0.1", 0), H)
        self.base = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def url(self, tag):
        return self.base + "/hooks/" + tag

    def got(self, tag):
        with self.lock:
            return list(self.events.get("/hooks/" + tag, []))

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


HOOKS = None


# --------------------------------------------------------------------------------------
# Helpers for probes
# --------------------------------------------------------------------------------------

class Fail(Exception):
    pass


class Env:
    def __init__(self, base, tag, defect=None):
        self.defect = defect
        self.api = Api(base, KEY1)
        self.api2 = Api(base, KEY2)
        self.tag = tag
        self.stealth_errors = []

    def stealth(self, cond, msg):
        if not cond:
            self.stealth_errors.append(msg)

    def hook(self, name):
        return HOOKS.url(self.tag + "-" + name)

    def events(self, name):
        return HOOKS.got(self.tag + "-" + name)


def need(r, status=200, what=""):
    if r.status != status:
        raise Fail("%s: expected %d, got %r" % (what, status, r))
    return r.json


def advance(env, to):
    need(env.api.post("/sim/v1/clock/advance", {"to": to}), 200, "advance to " + to)


def sched(tz, days, start, end):
    return {"timezone": tz, "allowed_days": days, "allowed_start_time": start, "allowed_end_time": end}


def inbound(tz, days, start, end):
    return {"start_time": start, "end_time": end, "allowed_days": days, "timezone": tz}


def normal_days(days):
    return sorted({d.capitalize() for d in days}, key=WEEKDAYS.index)


def camp_body(name, sch, start, end, retries=0, retry_on=None, webhook=None, interval=None, threshold=10, aps=1):
    rc = {"max_retries": retries, "retry_on": retry_on or [], "threshold_seconds": threshold}
    if interval:
        rc["retry_interval_minutes"] = interval
    ac = {"app_id": "app-1", "app_version": 1, "attempts_per_second": aps,
          "connection_configs": [{"connection_id": "conn-a", "phone_numbers": ["+14155550100"], "weight": 1}],
          "retry_config": rc}
    if webhook:
        ac["webhook_config"] = webhook
    return {"name": name, "start_timestamp": start, "end_timestamp": end, "allowed_schedule": sch, "app_config": ac}


def stream(api, parent, users, name="users"):
    return need(api.post(parent + "/cohorts/stream", {"name": name, "users": users}), 200, "stream")


def attempts(env, cid):
    return need(env.api.get(C1 + "/" + cid), 200, "get campaign")["statistics"]["attempts_total"]


def check_sched(env, cid, sent):
    got = need(env.api.get(C1 + "/" + cid), 200, "get campaign")["allowed_schedule"]
    want = dict(sent, allowed_days=normal_days(sent["allowed_days"]))
    env.stealth(got == want, "campaign %s shows schedule %s, client sent %s" % (cid, got, want))


def dial_probe(env, sch, start, end, checks, pre=None, patch=None, users=("+12025550101",)):
    """One user dialled once (always busy, no retry); attempts_total read at each check."""
    if pre:
        advance(env, pre)
    c = need(env.api.post(C1, camp_body("window", sch, start, end)), 200, "create campaign")
    cid = c["campaign_id"]
    shown = sch
    if patch:
        need(env.api.patch(C1 + "/" + cid, {"allowed_schedule": patch}), 200, "patch campaign")
        shown = patch
    stream(env.api, C1 + "/" + cid, [{"phone_number": u} for u in users])
    check_sched(env, cid, shown)
    for t, want in checks:
        advance(env, t)
        n = attempts(env, cid)
        if n != want:
            check_sched(env, cid, shown)
            return False, "at %s attempts_total %d, expected %d" % (t, n, want)
    check_sched(env, cid, shown)
    return True, "dials as the window says"


MISSING = object()


def inbound_probe(env, cfg, checks, patch=MISSING, number="+14155550300"):
    body = {"name": "desk", "app_id": "app-1", "app_version": 1,
            "connection_configs": [{"connection_id": "conn-a", "phone_numbers": [number]}]}
    if cfg is not MISSING:
        body["inbound_config"] = cfg
    d = need(env.api.post(D1, body), 200, "create deployment")
    did = d["deployment_id"]
    shown = None if cfg is MISSING else cfg
    if patch is not MISSING:
        need(env.api.patch(D1 + "/" + did, {"inbound_config": patch}), 200, "patch deployment")
        shown = patch
    before = need(env.api.get(D1 + "/" + did), 200, "get deployment")
    want = None if shown is None else dict(shown, allowed_days=normal_days(shown["allowed_days"]))
    env.stealth(before["inbound_config"] == want, "deployment shows %s, client sent %s" % (before["inbound_config"], want))
    verdict = (True, "answers as the schedule says")
    for t, want_answered in checks:
        if t:
            advance(env, t)
        rec = need(env.api.post(SIM1 + "/inbound-calls", {"caller": "+919876543210", "dialled": number}), 200, "inbound call")
        if rec["answered"] != want_answered:
            verdict = (False, "call at %s answered=%s (rejection %s), expected %s" % (t, rec["answered"], rec["rejection"], want_answered))
            break
    after = need(env.api.get(D1 + "/" + did), 200, "get deployment")
    for k in ("inbound_config", "updated_at", "updated_by", "status"):
        env.stealth(after.get(k) == before.get(k), "deployment %s changed from %r to %r" % (k, before.get(k), after.get(k)))
    lst = need(env.api.get(D1), 200, "list")
    item = [i for i in lst["items"] if i["deployment_id"] == did][0]
    env.stealth(item["inbound_config"] == before["inbound_config"], "list shows inbound_config %s" % item["inbound_config"])
    return verdict


ALL = list(WEEKDAYS)


# --------------------------------------------------------------------------------------
# Probes, one per defect
# --------------------------------------------------------------------------------------

PROBES = {}


def probe(*names):
    def deco(fn):
        for n in names:
            PROBES[n] = fn
        return fn
    return deco


# ---- campaign windows (sim clock starts Monday 2026-03-02 08:00Z)

@probe("campaign_timezone_ignored")
def p_tz(env):
    # 09:00-10:00 in Tokyo (+09) is 00:00-01:00Z
    return dial_probe(env, sched("Asia/Tokyo", ALL, "09:00", "10:00"), "2026-03-02T08:05:00Z", "2026-03-05T00:00:00Z",
                      [("2026-03-02T09:30:00Z", 0), ("2026-03-03T00:00:30Z", 1)])


@probe("campaign_timezone_sign_inverted")
def p_sign(env):
    # 09:00 in New York (EST, -05) is 14:00Z
    return dial_probe(env, sched("America/New_York", ALL, "09:00", "10:00"), "2026-03-02T08:05:00Z", "2026-03-05T00:00:00Z",
                      [("2026-03-02T13:59:50Z", 0), ("2026-03-02T14:00:30Z", 1)])


@probe("campaign_half_hour_zone_truncated")
def p_half(env):
    # 14:00 in Kolkata (+05:30) is 08:30Z
    return dial_probe(env, sched("Asia/Kolkata", ALL, "14:00", "15:00"), "2026-03-02T08:05:00Z", "2026-03-05T00:00:00Z",
                      [("2026-03-02T08:29:50Z", 0), ("2026-03-02T08:30:30Z", 1)])


@probe("campaign_dst_ignored_north")
def p_dst_n(env):
    # June: New York is on EDT (-04): 09:00 is 13:00Z
    return dial_probe(env, sched("America/New_York", ALL, "09:00", "10:00"), "2026-06-01T08:05:00Z", "2026-06-04T00:00:00Z",
                      [("2026-06-01T12:59:50Z", 0), ("2026-06-01T13:00:30Z", 1)], pre="2026-06-01T08:00:00Z")


@probe("campaign_dst_ignored_south")
def p_dst_s(env):
    # March: Sydney is on AEDT (+11): Tuesday 09:00 is Monday 22:00Z
    return dial_probe(env, sched("Australia/Sydney", ALL, "09:00", "10:00"), "2026-03-02T08:05:00Z", "2026-03-05T00:00:00Z",
                      [("2026-03-02T21:59:50Z", 0), ("2026-03-02T22:00:30Z", 1)])


@probe("campaign_allowed_days_ignored")
def p_days(env):
    return dial_probe(env, sched("UTC", ["Wednesday"], "09:00", "10:00"), "2026-03-02T08:05:00Z", "2026-03-06T00:00:00Z",
                      [("2026-03-02T09:30:00Z", 0), ("2026-03-04T09:00:30Z", 1)])


@probe("campaign_sunday_as_saturday")
def p_sunday(env):
    return dial_probe(env, sched("UTC", ["Sunday"], "09:00", "10:00"), "2026-03-02T08:05:00Z", "2026-03-10T00:00:00Z",
                      [("2026-03-07T09:30:00Z", 0), ("2026-03-08T09:00:30Z", 1)])


@probe("campaign_weekday_case_sensitive")
def p_case(env):
    return dial_probe(env, sched("UTC", ["monday", "Wednesday"], "09:00", "10:00"), "2026-03-02T08:05:00Z",
                      "2026-03-06T00:00:00Z", [("2026-03-02T08:59:50Z", 0), ("2026-03-02T09:00:30Z", 1)])


@probe("campaign_weekday_abbreviation_table")
def p_abbrev(env):
    return dial_probe(env, sched("UTC", ["Tuesday", "Wednesday"], "09:00", "10:00"), "2026-03-02T08:05:00Z",
                      "2026-03-06T00:00:00Z", [("2026-03-02T09:30:00Z", 0), ("2026-03-03T09:00:30Z", 1)])


@probe("campaign_overnight_cut_at_midnight")
def p_overnight(env):
    # Monday's 23:00-01:00 window is open on Tuesday 00:30Z, when the campaign starts
    return dial_probe(env, sched("UTC", ["Monday"], "23:00", "01:00"), "2026-03-03T00:30:00Z", "2026-03-05T00:00:00Z",
                      [("2026-03-03T00:29:50Z", 0), ("2026-03-03T00:30:30Z", 1)])


@probe("campaign_overnight_refused")
def p_overnight_refused(env):
    r = env.api.post(C1, camp_body("overnight", sched("UTC", ALL, "22:00", "02:00"), "2026-03-02T08:05:00Z", "2026-03-05T00:00:00Z"))
    if r.status != 200:
        return False, "22:00-02:00 window refused: %r" % r
    check_sched(env, r.json["campaign_id"], sched("UTC", ALL, "22:00", "02:00"))
    return True, "overnight window taken"


@probe("campaign_equal_times_accepted")
def p_equal(env):
    r = env.api.post(C1, camp_body("equal", sched("UTC", ALL, "09:00", "09:00"), "2026-03-02T08:05:00Z", "2026-03-05T00:00:00Z"))
    if r.status == 200:
        check_sched(env, r.json["campaign_id"], sched("UTC", ALL, "09:00", "09:00"))
        return False, "09:00-09:00 window accepted"
    if r.status != 422 or not any(d["loc"][:2] == ["body", "allowed_schedule"] for d in r.json["detail"]):
        return False, "unexpected answer %r" % r
    return True, "equal start and end refused at allowed_schedule"


@probe("campaign_window_end_inclusive")
def p_end_incl(env):
    # the campaign starts at 09:01:00, the instant the 09:00-09:01 window closes
    return dial_probe(env, sched("UTC", ALL, "09:00", "09:01"), "2026-03-02T09:01:00Z", "2026-03-05T00:00:00Z",
                      [("2026-03-02T09:01:30Z", 0), ("2026-03-03T09:00:30Z", 1)])


@probe("campaign_midnight_end_as_2359")
def p_midnight(env):
    return dial_probe(env, sched("UTC", ALL, "23:00", "00:00"), "2026-03-02T23:59:20Z", "2026-03-05T00:00:00Z",
                      [("2026-03-02T23:59:10Z", 0), ("2026-03-02T23:59:50Z", 1)])


@probe("campaign_patch_schedule_ignored")
def p_patch_sched(env):
    return dial_probe(env, sched("UTC", ["Wednesday"], "09:00", "10:00"), "2026-03-02T08:05:00Z", "2026-03-06T00:00:00Z",
                      [("2026-03-02T08:59:50Z", 0), ("2026-03-02T09:00:30Z", 1)],
                      patch=sched("UTC", ["Monday"], "09:00", "10:00"))


# ---- inbound windows

@probe("inbound_timezone_ignored")
def p_in_tz(env):
    return inbound_probe(env, inbound("Asia/Tokyo", ALL, "09:00", "10:00"),
                         [("2026-03-02T09:30:00Z", False), ("2026-03-03T00:30:00Z", True)])


@probe("inbound_timezone_sign_inverted")
def p_in_sign(env):
    return inbound_probe(env, inbound("America/New_York", ALL, "09:00", "17:00"),
                         [("2026-03-02T14:30:00Z", True), ("2026-03-03T04:30:00Z", False)])


@probe("inbound_half_hour_zone_truncated")
def p_in_half(env):
    return inbound_probe(env, inbound("Asia/Kolkata", ALL, "14:00", "15:00"),
                         [("2026-03-02T08:29:00Z", False), ("2026-03-02T08:45:00Z", True)])


@probe("inbound_dst_ignored_south")
def p_in_dst(env):
    return inbound_probe(env, inbound("Australia/Sydney", ALL, "09:00", "10:00"),
                         [("2026-03-02T21:59:00Z", False), ("2026-03-02T22:30:00Z", True)])


@probe("inbound_weekdays_shifted")
def p_in_shift(env):
    return inbound_probe(env, inbound("UTC", ["Tuesday"], "08:00", "17:00"),
                         [("2026-03-02T08:30:00Z", False), ("2026-03-03T08:30:00Z", True)])


@probe("inbound_weekday_case_sensitive")
def p_in_case(env):
    return inbound_probe(env, inbound("UTC", ["monday", "Tuesday"], "08:00", "17:00"),
                         [("2026-03-02T08:30:00Z", True), ("2026-03-02T17:30:00Z", False)])


@probe("inbound_overnight_cut_at_midnight", "inbound_overnight_tail_own_day")
def p_in_overnight(env):
    return inbound_probe(env, inbound("UTC", ["Monday"], "22:00", "02:00"),
                         [("2026-03-02T21:59:00Z", False), ("2026-03-03T01:00:00Z", True), ("2026-03-03T02:00:30Z", False)])


@probe("inbound_end_inclusive")
def p_in_end(env):
    return inbound_probe(env, inbound("UTC", ALL, "09:00", "10:00"),
                         [("2026-03-02T09:59:30Z", True), ("2026-03-02T10:00:30Z", False)])


@probe("inbound_patch_null_schedule_kept")
def p_in_null(env):
    return inbound_probe(env, inbound("UTC", ["Wednesday"], "09:00", "10:00"),
                         [("2026-03-02T08:30:00Z", True)], patch=None)


@probe("inbound_default_business_hours")
def p_in_default(env):
    return inbound_probe(env, MISSING, [("2026-03-02T08:30:00Z", True), ("2026-03-07T20:00:00Z", True)])


@probe("inbound_dst_gap_opening_late")
def p_in_gap(env):
    # 2026-03-08 02:00 EST jumps to 03:00 EDT (07:00Z): an opening at 02:30 opens at 07:00Z
    return inbound_probe(env, inbound("America/New_York", ["Sunday"], "02:30", "05:00"),
                         [("2026-03-08T06:55:00Z", False), ("2026-03-08T07:15:00Z", True)])


@probe("inbound_dst_fold_closing_early")
def p_in_fold(env):
    # 2026-11-01 01:00-02:00 happens twice in New York; a 01:30 closing is the later one (06:30Z)
    return inbound_probe(env, inbound("America/New_York", ["Sunday"], "00:00", "01:30"),
                         [("2026-11-01T05:15:00Z", True), ("2026-11-01T06:00:00Z", True), ("2026-11-01T06:31:00Z", False)])


# ---- values

@probe("campaign_timestamp_offset_dropped")
def p_ts(env):
    c = need(env.api.post(C1, camp_body("offset", sched("UTC", ALL, "09:00", "17:00"),
                                        "2026-03-02T14:30:00+05:30", "2026-03-04T10:00:00+05:30")), 200, "create")
    g = need(env.api.get(C1 + "/" + c["campaign_id"]), 200, "get")
    want = ("2026-03-02T09:00:00.000Z", "2026-03-04T04:30:00.000Z")
    got = (g["start_timestamp"], g["end_timestamp"])
    return got == want, "start/end read back as %s, sent the instants %s" % (got, want)


@probe("deployment_patch_clears_description")
def p_patch_desc(env):
    d = need(env.api.post(D1, {"name": "desk", "app_id": "app-1", "app_version": 1, "description": "front desk",
                               "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550300"]}]}), 200, "create")
    p = need(env.api.patch(D1 + "/" + d["deployment_id"], {"app_version": 2}), 200, "patch")
    g = need(env.api.get(D1 + "/" + d["deployment_id"]), 200, "get")
    ok = p["description"] == "front desk" and g["description"] == "front desk" and g["app_version"] == 2
    return ok, "after PATCH {app_version} description is %r" % g["description"]


@probe("campaign_patch_retry_config_reset")
def p_patch_retry(env):
    c = need(env.api.post(C1, camp_body("retry", sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z",
                                        "2026-03-04T00:00:00Z", retries=2, retry_on=["busy", "no_answer"], threshold=20,
                                        interval=45)), 200, "create")
    need(env.api.patch(C1 + "/" + c["campaign_id"], {"app_config": {"retry_config": {"max_retries": 3}}}), 200, "patch")
    rc = need(env.api.get(C1 + "/" + c["campaign_id"]), 200, "get")["app_config"]["retry_config"]
    want = {"max_retries": 3, "retry_on": ["busy", "no_answer"], "threshold_seconds": 20, "retry_interval_minutes": 45}
    return rc == want, "retry_config after PATCH {max_retries: 3}: %s" % rc


def make_deps(env, names, api=None, base=D1, first=300):
    api = api or env.api
    ids = []
    for i, n in enumerate(names):
        d = need(api.post(base, {"name": n, "app_id": "app-1", "app_version": 1,
                                 "connection_configs": [{"connection_id": "a", "phone_numbers": ["+1415555%04d" % (first + i)]},
                                                        {"connection_id": "b", "phone_numbers": ["+1415556%04d" % (first + i)]}]}),
                 200, "create deployment")
        ids.append(d["deployment_id"])
    return ids


@probe("deployment_list_phone_numbers_first_connection")
def p_phones(env):
    make_deps(env, ["two-lines"])
    it = need(env.api.get(D1), 200, "list")["items"][0]
    want = sorted(n for cc in it["connection_configs"] for n in cc["phone_numbers"])
    return sorted(it["phone_numbers"]) == want, "phone_numbers %s, connections hold %s" % (it["phone_numbers"], want)


@probe("deployment_list_total_is_page_size")
def p_total(env):
    make_deps(env, ["a1", "a2", "a3"])
    p = need(env.api.get(D1 + "?limit=2"), 200, "list")
    return p["total"] == 3 and len(p["items"]) == 2, "total %s with 3 deployments, %d on the page" % (p["total"], len(p["items"]))


def follow(env, uri):
    u = urllib.parse.urlsplit(uri)
    return env.api.get(u.path + ("?" + u.query if u.query else ""))


@probe("deployment_page_uris_drop_query")
def p_uris(env):
    make_deps(env, ["alpha-1", "beta-x", "alpha-2", "beta-y"])
    p = need(env.api.get(D1 + "?search=alpha&limit=1&sort_by=name&sort_order=asc"), 200, "list")
    if not p["next_page_uri"]:
        return False, "no next_page_uri with 2 matches and limit 1"
    q = need(follow(env, p["next_page_uri"]), 200, "follow next")
    names = [i["name"] for i in p["items"] + q["items"]]
    return names == ["alpha-1", "alpha-2"] and q["total"] == 2, "walked %s (total %s) via %s" % (names, q["total"], p["next_page_uri"])


@probe("deployment_prev_page_uri_negative_offset")
def p_prev(env):
    make_deps(env, ["p1", "p2", "p3"])
    p = need(env.api.get(D1 + "?offset=1&limit=2"), 200, "list")
    if not p["prev_page_uri"]:
        return False, "no prev_page_uri at offset 1"
    q = follow(env, p["prev_page_uri"])
    return q.status == 200 and q.json["offset"] == 0, "prev_page_uri %s answered %d" % (p["prev_page_uri"], q.status)


@probe("campaign_next_page_uri_on_exact_last_page")
def p_next_exact(env):
    for n in ("n1", "n2"):
        need(env.api.post(C1, camp_body(n, sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z", "2026-03-04T00:00:00Z")), 200, "create")
    a = need(env.api.get(C1 + "?limit=1"), 200, "list")
    b = need(env.api.get(C1 + "?limit=2"), 200, "list")
    c = need(env.api.get(C1 + "?limit=1&offset=1"), 200, "list")
    ok = a["next_page_uri"] is not None and b["next_page_uri"] is None and c["next_page_uri"] is None
    return ok, "next_page_uri: limit 1 %s, limit 2 (all) %s, last of limit 1 %s" % (a["next_page_uri"], b["next_page_uri"], c["next_page_uri"])


@probe("deployment_search_crosses_workspaces")
def p_cross(env):
    mine = make_deps(env, ["shared-desk"])
    make_deps(env, ["shared-desk"], api=env.api2, base=D2, first=700)
    need(env.api2.get(D2), 200, "list ws-2")
    p = need(env.api.get(D1 + "?search=shared"), 200, "list")
    ids = [i["deployment_id"] for i in p["items"]]
    return ids == mine and p["total"] == 1, "ws-1 search shows %s (total %s); ws-1 has %s" % (ids, p["total"], mine)


@probe("campaign_cohort_list_shows_other_campaigns")
def p_cohorts_other(env):
    cids = []
    for n in ("k1", "k2"):
        cids.append(need(env.api.post(C1, camp_body(n, sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z",
                                                     "2026-03-04T00:00:00Z")), 200, "create")["campaign_id"])
    a = stream(env.api, C1 + "/" + cids[0], [{"phone_number": "+12025550100"}], "ka")
    stream(env.api, C1 + "/" + cids[1], [{"phone_number": "+12025550100"}], "kb")
    p = need(env.api.get(C1 + "/" + cids[0] + "/cohorts"), 200, "list cohorts")
    ids = [i["cohort_id"] for i in p["items"]]
    return ids == [a["cohort_id"]] and p["total"] == 1, "campaign's cohorts %s (total %s), its own %s" % (ids, p["total"], a["cohort_id"])


def multipart(parts):
    boundary = "r3-boundary-7f9c2a"
    out = b""
    for name, filename, data, ctype in parts:
        out += b"--" + boundary.encode() + b"\r\n"
        disp = 'form-data; name="%s"' % name
        if filename:
            disp += '; filename="%s"' % filename
        out += ("Content-Disposition: %s\r\n" % disp).encode()
        if ctype:
            out += ("Content-Type: %s\r\n" % ctype).encode()
        out += b"\r\n" + data + b"\r\n"
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + boundary


TRANSFORM = json.dumps({"phone_number": {"column_name": "phone", "country_code": "US"},
                        "user_identifier": {"column_name": "id"},
                        "app_variables": {"first_name": {"column_name": "first_name"}}}, indent=1).encode()


def upload(api, parent, csv_bytes, name="march", transform=TRANSFORM):
    body, ct = multipart([("name", None, name.encode(), None), ("cohort_file", "users.csv", csv_bytes, "text/csv"),
                          ("cohort_transformation_file", "t.json", transform, "application/json")])
    return api.post(parent + "/cohorts/upload", body, ctype=ct)


def wait_cohort(api, parent, coh):
    for _ in range(600):
        r = need(api.get(parent + "/cohorts/" + coh), 200, "get cohort")
        if r["status"] != "processing":
            return r
        time.sleep(0.02)
    raise Fail("cohort still processing")


def campaign(env, name="cc"):
    return need(env.api.post(C1, camp_body(name, sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z",
                                           "2026-03-04T00:00:00Z")), 200, "create")["campaign_id"]


@probe("rejected_records_values_trimmed")
def p_rejected(env):
    cid = campaign(env)
    csvb = b'phone,id,first_name\n+12025550100,u1,Ada\n  12345 ,u2, Bob \n'
    r = upload(env.api, C1 + "/" + cid, csvb)
    coh = r.json["cohort_id"]
    wait_cohort(env.api, C1 + "/" + cid, coh)
    f = env.api.get(C1 + "/" + cid + "/cohorts/" + coh + "/files?file_type=rejected_records")
    import csv as _csv
    import io as _io
    rows = list(_csv.reader(_io.StringIO(f.body.decode())))
    ok = f.status == 200 and rows[0] == ["phone", "id", "first_name", "rejected_reason"] and rows[1][:3] == ["  12345 ", "u2", " Bob "]
    return ok, "rejected file rows %s" % rows


@probe("cohort_file_line_endings_normalised")
def p_crlf(env):
    cid = campaign(env)
    csvb = b"phone,id,first_name\r\n+12025550100,u1,Ada\r\n+12025550101,u2,Bob\r\n"
    r = upload(env.api, C1 + "/" + cid, csvb)
    coh = r.json["cohort_id"]
    wait_cohort(env.api, C1 + "/" + cid, coh)
    f = env.api.get(C1 + "/" + cid + "/cohorts/" + coh + "/files?file_type=cohort")
    return f.status == 200 and f.body == csvb, "cohort file %r, uploaded %r" % (f.body, csvb)


@probe("cohort_total_records_counts_header")
def p_total_records(env):
    cid = campaign(env)
    s = stream(env.api, C1 + "/" + cid, [{"phone_number": "+12025550100"}, {"phone_number": "+12025550101"}, {"phone_number": "12"}])
    g = need(env.api.get(C1 + "/" + cid + "/cohorts/" + s["cohort_id"]), 200, "get")
    ok = all(x["result"]["total_records"] == x["result"]["valid_records"] + x["result"]["rejected_records"] == 3 for x in (s, g))
    return ok, "result %s" % g["result"]


@probe("attempt_budget_ignores_retries")
def p_budget(env):
    c = need(env.api.post(C1, camp_body("budget", sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z",
                                        "2026-03-04T00:00:00Z", retries=2, retry_on=["busy"])), 200, "create")
    stream(env.api, C1 + "/" + c["campaign_id"], [{"phone_number": "+12025550100"}, {"phone_number": "+12025550101"}])
    st = need(env.api.get(C1 + "/" + c["campaign_id"]), 200, "get")["statistics"]
    return st["attempt_budget"] == 6 and st["users_total"] == 2, "2 users, max_retries 2: attempt_budget %s" % st["attempt_budget"]


@probe("cohort_upload_answers_202")
def p_202(env):
    cid = campaign(env)
    r = upload(env.api, C1 + "/" + cid, b"phone,id,first_name\n+12025550100,u1,Ada\n")
    return r.status == 200 and r.json["status"] == "processing", "upload answered %d" % r.status


@probe("deployment_app_version_float_after_patch")
def p_float(env):
    d = make_deps(env, ["ver"])[0]
    p = env.api.patch(D1 + "/" + d, {"app_version": 2})
    g = env.api.get(D1 + "/" + d)
    ok = all(type(x.json["app_version"]) is int and x.json["app_version"] == 2 for x in (p, g))
    return ok, "app_version after PATCH: %s / %s" % (p.json["app_version"], g.json["app_version"])


@probe("campaign_updated_by_null_until_updated")
def p_updated_by(env):
    r = env.api.post(C1, camp_body("ub", sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z", "2026-03-04T00:00:00Z"))
    g = env.api.get(C1 + "/" + r.json["campaign_id"])
    lst = env.api.get(C1)
    vals = [r.json["updated_by"], g.json["updated_by"], lst.json["items"][0]["updated_by"]]
    return all(isinstance(v, str) for v in vals), "updated_by %s" % vals


@probe("deployment_list_connection_configs_null")
def p_cc_null(env):
    make_deps(env, ["cc"])
    it = need(env.api.get(D1), 200, "list")["items"][0]
    return isinstance(it["connection_configs"], list) and len(it["connection_configs"]) == 2, "list item connection_configs %s" % it["connection_configs"]


@probe("validation_loc_indexes_as_strings")
def p_loc(env):
    b = camp_body("bad", sched("UTC", ALL, "09:00", "17:00"), "2026-03-02T08:05:00Z", "2026-03-04T00:00:00Z")
    b["app_config"]["connection_configs"][0]["weight"] = 0
    r = env.api.post(C1, b)
    locs = [d["loc"] for d in r.json["detail"]] if r.status == 422 else []
    return ["body", "app_config", "connection_configs", 0, "weight"] in locs, "422 locs %s" % locs


@probe("validation_custom_errors_lack_type")
def p_type(env):
    r = env.api.post(OUT1, {"app_config": {"app_id": "a", "app_version": 1,
                                          "connection_config": {"connection_id": "c", "agent_phone_number": "x"}},
                            "user_config": {"user_phone_number": "+1"}})
    ok = r.status == 422 and len(r.json["detail"]) == 2 and all(
        isinstance(d.get("loc"), list) and isinstance(d.get("msg"), str) and isinstance(d.get("type"), str) for d in r.json["detail"])
    return ok, "422 body %s" % r.body[:300]


@probe("conflict_answered_as_detail_string")
def p_409(env):
    d = make_deps(env, ["pz"])[0]
    need(env.api.put(D1 + "/" + d + "/status", {"action": "pause"}), 200, "pause")
    r = env.api.put(D1 + "/" + d + "/status", {"action": "pause"})
    e = (r.json or {}).get("error") if isinstance(r.json, dict) else None
    ok = r.status == 409 and isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code"))
    return ok, "second pause: %r" % r


@probe("deployment_delete_error_code_integer")
def p_del(env):
    r = env.api.delete(D1 + "/dep-00000000000000000000")
    e = (r.json or {}).get("error") if isinstance(r.json, dict) else None
    ok = 400 <= r.status < 500 and isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code"))
    return ok, "delete of an unknown deployment: %r" % r


@probe("deployment_updated_at_never_bumped")
def p_updated_at(env):
    d = make_deps(env, ["ua"])[0]
    advance(env, "2026-03-02T08:10:00Z")
    p = need(env.api.patch(D1 + "/" + d, {"description": "changed"}), 200, "patch")
    g = need(env.api.get(D1 + "/" + d), 200, "get")
    ok = p["updated_at"] == g["updated_at"] == "2026-03-02T08:10:00.000Z" and g["created_at"] == "2026-03-02T08:00:00.000Z"
    return ok, "updated_at after a PATCH at 08:10: %s" % g["updated_at"]


@probe("campaign_status_answer_partial")
def p_status_body(env):
    cid = campaign(env)
    r = need(env.api.put(C1 + "/" + cid + "/status", {"action": "pause"}), 200, "pause")
    ok = r.get("status") == "paused" and all(k in r for k in ("name", "app_id", "created_at", "updated_at", "allowed_schedule"))
    return ok, "status answer keys %s" % sorted(r)


@probe("deployment_get_ignores_workspace")
def p_idor(env):
    d = make_deps(env, ["mine"])[0]
    need(env.api2.get(D2), 200, "ws-2 list")
    r = env.api2.get(D2 + "/" + d)
    return 400 <= r.status < 500, "ws-2's key on its own path GET %s: %d" % (d, r.status)


# ---- events

def campaign_events(env):
    """One always-busy user, max_retries 1 on busy, 1 minute apart; events through webhook_config."""
    url = env.hook("camp")
    c = need(env.api.post(C1, camp_body("ev", sched("UTC", ALL, "00:00", "23:59"), "2026-03-02T08:05:00Z",
                                        "2026-03-04T00:00:00Z", retries=1, retry_on=["busy"], interval=1,
                                        webhook={"url": url, "metadata": {"team": "a"}})), 200, "create")
    cid = c["campaign_id"]
    stream(env.api, C1 + "/" + cid, [{"phone_number": "+12025550101", "user_identifier": "u1"}])
    advance(env, "2026-03-02T08:30:00Z")
    g = need(env.api.get(C1 + "/" + cid), 200, "get")
    env.stealth(g["app_config"]["webhook_config"]["url"] == url, "campaign shows webhook url %s" % g["app_config"]["webhook_config"]["url"])
    dl = need(env.api.get(SIM1 + "/webhook-deliveries"), 200, "deliveries")
    env.stealth(all(i["url"] == url for i in dl["items"]) and dl["items"], "deliveries show urls %s" % [i["url"] for i in dl["items"]])
    evs = env.events("camp")
    env.stealth(len(evs) == 2, "%d campaign events received, expected 2" % len(evs))
    if env.defect != "event_signature_over_reserialised_body":
        for h, b in evs:
            env.stealth(signed(h, b), "a campaign event's signature does not verify")
    return [(h, b, json.loads(b)) for h, b in evs]


def signed(h, b):
    mac = hmac.new(SECRET.encode(), h["x-webhook-timestamp"].encode() + b"." + b, hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, h["x-webhook-signature"])


@probe("event_retry_attempt_one_based")
def p_ev_retry(env):
    evs = campaign_events(env)
    got = sorted(e["retry_attempt"] for _, _, e in evs)
    return got == [0, 1], "retry_attempt values %s" % got


@probe("event_executed_at_is_send_time")
def p_ev_exec(env):
    evs = campaign_events(env)
    got = sorted(e["executed_at"] for _, _, e in evs)
    return got[0] == "2026-03-02T08:05:00.000Z", "executed_at %s (the first dial is at the start, 08:05:00)" % got


@probe("event_signature_over_reserialised_body")
def p_ev_sig(env):
    evs = campaign_events(env)
    bad = [e["attempt_id"] for h, b, e in evs if not signed(h, b)]
    return not bad and evs != [], "signatures not verifying: %s" % bad


@probe("event_attempt_id_reused_by_retries")
def p_ev_id(env):
    evs = campaign_events(env)
    ids = [e["attempt_id"] for _, _, e in evs]
    return len(set(ids)) == len(ids) == 2, "attempt ids %s" % ids


@probe("event_next_action_retry_when_out_of_retries")
def p_ev_next(env):
    evs = campaign_events(env)
    got = [e["next_action_status"] for _, _, e in sorted(evs, key=lambda x: x[2]["retry_attempt"])]
    return got == ["retry", None], "next_action_status of the first dial and of the retry: %s" % got


@probe("outbound_event_metadata_dropped")
def p_ev_meta(env):
    url = env.hook("out")
    need(env.api.post(OUT1, {"app_config": {"app_id": "a", "app_version": 1,
                                            "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
                             "user_config": {"user_phone_number": "+12025550100"},
                             "webhook_config": {"url": url, "metadata": {"ticket": "T-1", "n": 2}}}), 200, "outbound")
    advance(env, "2026-03-02T08:05:00Z")
    evs = env.events("out")
    if len(evs) != 1:
        return False, "%d outbound events" % len(evs)
    h, b, = evs[0]
    e = json.loads(b)
    if env.defect != "event_signature_over_reserialised_body":
        env.stealth(signed(h, b), "outbound event signature does not verify")
    env.stealth(e["webhook_config"]["url"] == url, "outbound event url %s" % e["webhook_config"]["url"])
    return e["webhook_config"] == {"url": url, "metadata": {"ticket": "T-1", "n": 2}}, "event webhook_config %s" % e["webhook_config"]


# Defects whose probe the mock itself fails today (the defect is the mock's own behaviour):
# the probe cannot tell the defective proxy from the transparent one until the mock is fixed.
KNOWN_MOCK_BUGS = {
    "campaign_patch_schedule_ignored":
        "the mock answers a PATCHed allowed_schedule (GET, statistics.attempt_capacity and the activity "
        "windows use it) but its engine keeps dialling by the schedule the campaign was created with",
}

EVENT_PROBES = ["event_retry_attempt_one_based", "event_executed_at_is_send_time", "event_signature_over_reserialised_body",
                "event_attempt_id_reused_by_retries", "event_next_action_retry_when_out_of_retries",
                "outbound_event_metadata_dropped"]


# --------------------------------------------------------------------------------------
# Running probes
# --------------------------------------------------------------------------------------

def run_probe(probe_name, defect):
    plat = prox = None
    try:
        plat = Platform()
        prox = ProxyProc(plat.url, defect)
        env = Env(prox.url, "%s-%s-%d" % (probe_name, defect or "none", threading.get_ident()), defect)
        try:
            ok, info = PROBES[probe_name](env)
        except Fail as e:
            ok, info = None, "probe could not run: %s" % e
        return ok, info, env.stealth_errors
    except Exception:
        return None, traceback.format_exc(), []
    finally:
        err = prox.stop() if prox else ""
        if plat:
            plat.stop()
        if "Traceback" in err:
            print("proxy stderr (%s, %s):\n%s" % (probe_name, defect, err), file=sys.stderr)


# --------------------------------------------------------------------------------------
# Transparency: the same script straight and through the proxy, on twin platforms
# --------------------------------------------------------------------------------------

def script(api, api2, hooks_url):
    """Every route once or more; returns [(label, R)]. Ids come from the side's own answers."""
    out = []

    def rec(label, r):
        out.append((label, r))
        return r

    j = lambda r: r.json if isinstance(r.json, dict) else {}
    rec("healthz", api.get("/healthz", key=None))
    rec("openapi", api.get("/openapi.json", key=None))
    rec("clock", api.get("/sim/v1/clock"))
    rec("stack", api.get("/sim/v1/stack"))
    rec("no key", api.get(D1, key=None))
    rec("wrong key", api.get(D1, key="sk-nope"))
    rec("other ws key", api.get(D1, key=KEY2))
    rec("unknown route", api.get("/api/nothing/v1/here"))
    rec("405", api.req("PUT", D1, {"x": 1}))
    out_body = {"app_config": {"app_id": "a", "app_version": 1, "app_type": "agent",
                               "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"},
                               "agent_variables": {"first_name": "Ada"},
                               "app_overrides": {"initial_bot_message": "Hi"}},
                "user_config": {"user_phone_number": "+12025550100"},
                "webhook_config": {"url": hooks_url + "/twin-out", "metadata": {"k": "v"}}}
    rec("outbound", api.post(OUT1, out_body))
    rec("outbound 422", api.post(OUT1, {"app_config": {}, "user_config": {"user_phone_number": "x"}}))
    rec("outbound 415", api.post(OUT1, b"{}", ctype="text/plain"))
    rec("outbound bad json", api.post(OUT1, b"{nope"))
    rec("outbound chunked", api.req("POST", OUT1, out_body, chunked=True))
    rec("outbound expect", api.req("POST", OUT1, out_body, headers={"Expect": "100-continue"}))
    cb = camp_body("Spring outreach", sched("Asia/Kolkata", ["monday", "Friday", "Tuesday"], "09:00", "17:00"),
                   "2026-03-02T09:00:00Z", "2026-03-06T17:00:00Z", retries=2, retry_on=["busy", "no_answer", "short_duration"],
                   webhook={"url": hooks_url + "/twin-camp", "metadata": {"team": "a"}}, interval=30)
    cb["description"] = "twin"
    c = rec("campaign create", api.post(C1, cb))
    cid = j(c).get("campaign_id", "x")
    c2 = rec("campaign create 2", api.post(C1, camp_body("Second", sched("UTC", ALL, "22:00", "02:00"),
                                                           "2026-03-02T08:05:00Z", "2026-03-10T00:00:00Z")))
    cid2 = j(c2).get("campaign_id", "x")
    rec("campaign create 422", api.post(C1, camp_body("Bad", sched("Nowhere/City", ["Funday"], "9", "09:00"),
                                                        "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z")))
    rec("campaign list", api.get(C1))
    rec("campaign list q", api.get(C1 + "?search=spring&sort_by=name&sort_order=asc&limit=1&offset=0&campaign_status=scheduled"))
    rec("campaign list page", api.get(C1 + "?limit=1&offset=1"))
    rec("campaign list 422", api.get(C1 + "?limit=0"))
    rec("campaign get", api.get(C1 + "/" + cid))
    rec("campaign head", api.req("HEAD", C1 + "/" + cid))
    rec("campaign 404", api.get(C1 + "/camp-nope"))
    rec("campaign patch", api.patch(C1 + "/" + cid, {"description": "changed", "app_config": {"retry_config": {"max_retries": 1}}}))
    rec("campaign patch 422", api.patch(C1 + "/" + cid, {"start_timestamp": "2026-03-03T00:00:00Z"}))
    csvb = b"phone,id,first_name\r\n+1 202 555 0100,u1,Ada\r\n(202) 555-0101,u2,Grace\r\n12345,u5,Barbara\r\n"
    up = rec("cohort upload", upload(api, C1 + "/" + cid, csvb))
    coh = j(up).get("cohort_id", "x")
    if up.status == 200:
        wait_cohort(api, C1 + "/" + cid, coh)
    rec("cohort get", api.get(C1 + "/" + cid + "/cohorts/" + coh))
    rec("cohort file rejected", api.get(C1 + "/" + cid + "/cohorts/" + coh + "/files?file_type=rejected_records"))
    rec("cohort file cohort", api.get(C1 + "/" + cid + "/cohorts/" + coh + "/files?file_type=cohort"))
    rec("cohort file transformation", api.get(C1 + "/" + cid + "/cohorts/" + coh + "/files?file_type=cohort_transformation"))
    rec("cohort file 422", api.get(C1 + "/" + cid + "/cohorts/" + coh + "/files?file_type=nope"))
    bad = rec("cohort upload failing", upload(api, C1 + "/" + cid, b"tel,id\n+12025550100,u1\n"))
    if bad.status == 200:
        wait_cohort(api, C1 + "/" + cid, j(bad).get("cohort_id"))
    rec("cohort upload 415", api.post(C1 + "/" + cid + "/cohorts/upload", b"x", ctype="text/csv"))
    rec("cohort stream", api.post(C1 + "/" + cid + "/cohorts/stream",
                                  {"name": "late", "users": [{"phone_number": "+12025550102", "user_identifier": "u6",
                                                              "app_variables": {"first_name": "Linus"}}, {"phone_number": "1"}]}))
    rec("cohort stream stop", api.post(C1 + "/" + cid2 + "/cohorts/stream",
                                       {"name": "stop", "cohort_category": "stop_file", "users": [{"phone_number": "+12025550102"}]}))
    rec("cohort list", api.get(C1 + "/" + cid + "/cohorts"))
    rec("cohort list page", api.get(C1 + "/" + cid + "/cohorts?limit=1&offset=1"))
    rec("cohort 404", api.get(C1 + "/" + cid + "/cohorts/coh-nope"))
    rec("cohort upload 405", api.get(C1 + "/" + cid + "/cohorts/upload"))
    # deployments
    d = rec("deployment create", api.post(D1, {"name": "Front desk", "app_id": "app-1", "app_version": 1, "description": "d",
                                                 "connection_configs": [{"connection_id": "conn-a", "phone_numbers": ["+14155550300"]},
                                                                        {"connection_id": "conn-b", "phone_numbers": ["+14155550301"]}],
                                                 "inbound_config": inbound("America/New_York", ["Monday", "tuesday"], "03:00", "17:00")}))
    did = j(d).get("deployment_id", "x")
    d2 = rec("deployment create 2", api.post(D1, {"name": "Night", "app_id": "app-1", "app_version": 1,
                                                    "connection_configs": [{"connection_id": "conn-a", "phone_numbers": ["+14155550310"]}]}))
    did2 = j(d2).get("deployment_id", "x")
    rec("deployment create 409", api.post(D1, {"name": "Dup", "app_id": "app-1", "app_version": 1,
                                                "connection_configs": [{"connection_id": "x", "phone_numbers": ["+14155550300"]}]}))
    rec("deployment create 422", api.post(D1, {"name": "bad/name", "app_id": "app-1", "app_version": 0, "connection_configs": []}))
    rec("deployment list", api.get(D1))
    rec("deployment list q", api.get(D1 + "?search=desk&sort_by=name&sort_order=desc&limit=1"))
    rec("deployment list page", api.get(D1 + "?limit=1&offset=1"))
    rec("deployment list 422", api.get(D1 + "?limit=101"))
    rec("deployment head list", api.req("HEAD", D1))
    rec("deployment get", api.get(D1 + "/" + did))
    rec("deployment patch", api.patch(D1 + "/" + did, {"app_version": 2, "description": None,
                                                       "inbound_config": inbound("UTC", ALL, "00:00", "23:59")}))
    rec("deployment patch 422", api.patch(D1 + "/" + did, {"app_id": "other"}))
    rec("deployment pause", api.put(D1 + "/" + did + "/status", {"action": "pause"}))
    rec("deployment pause 409", api.put(D1 + "/" + did + "/status", {"action": "pause"}))
    rec("deployment resume", api.put(D1 + "/" + did + "/status", {"action": "resume"}))
    dup = rec("deployment cohort upload", upload(api, DC1 + "/" + did, b"phone,id,first_name\n+919876543210,c1,Ada\n",
                                                  transform=json.dumps({"phone_number": {"column_name": "phone"},
                                                                        "user_identifier": {"column_name": "id"},
                                                                        "app_variables": {"first_name": {"column_name": "first_name"}}}).encode()))
    if dup.status == 200:
        wait_cohort(api, DC1 + "/" + did, j(dup).get("cohort_id"))
    dcoh = j(dup).get("cohort_id", "x")
    rec("deployment cohort get", api.get(DC1 + "/" + did + "/cohorts/" + dcoh))
    rec("deployment cohort file", api.get(DC1 + "/" + did + "/cohorts/" + dcoh + "/files?file_type=cohort"))
    rec("deployment cohort stream", api.post(DC1 + "/" + did + "/cohorts/stream",
                                             {"name": "more", "country_code": "IN", "users": [{"phone_number": "09876543211"}]}))
    rec("deployment cohort list", api.get(DC1 + "/" + did + "/cohorts"))
    # simulation
    rec("inbound call", api.post(SIM1 + "/inbound-calls", {"caller": "+919876543210", "dialled": "+14155550300"}))
    rec("inbound stranger", api.post(SIM1 + "/inbound-calls", {"caller": "+12025550177", "dialled": "+14155550310"}))
    rec("inbound nobody", api.post(SIM1 + "/inbound-calls", {"caller": "+12025550177", "dialled": "+14155550999"}))
    rec("advance", api.post("/sim/v1/clock/advance", {"to": "2026-03-02T09:30:00Z"}))
    rec("campaign get later", api.get(C1 + "/" + cid))
    rec("campaign pause", api.put(C1 + "/" + cid + "/status", {"action": "pause"}))
    # time between pause and resume: the mock loses a campaign paused and resumed at one instant (README)
    rec("advance paused", api.post("/sim/v1/clock/advance", {"seconds": 60}))
    rec("campaign resume", api.put(C1 + "/" + cid + "/status", {"action": "resume"}))
    rec("campaign cancel 2", api.put(C1 + "/" + cid2 + "/status", {"action": "cancel"}))
    rec("campaign resume 409", api.put(C1 + "/" + cid2 + "/status", {"action": "resume"}))
    rec("campaign status 422", api.put(C1 + "/" + cid + "/status", {"action": "explode"}))
    rec("advance seconds", api.post("/sim/v1/clock/advance", {"seconds": 3600}))
    rec("put clock", api.put("/sim/v1/clock", {"now": "2026-03-02T11:00:00Z"}))
    rec("clock backwards", api.put("/sim/v1/clock", {"now": "2026-03-02T10:00:00Z"}))
    rec("inbound list", api.get(SIM1 + "/inbound-calls"))
    rec("deliveries", api.get(SIM1 + "/webhook-deliveries?limit=3"))
    rec("deliveries page 2", api.get(SIM1 + "/webhook-deliveries?limit=3&offset=3"))
    rec("activity", api.get(SIM1 + "/campaigns/" + cid + "/activity"))
    rec("chart", api.get(SIM1 + "/campaigns/" + cid + "/chart?width=600"))
    rec("key service calls", api.get(SIM1 + "/key-service/calls"))
    rec("data keys", api.get("/admin/v1/orgs/org-1/workspaces/ws-1/data-keys"))
    rec("rotate", api.post("/admin/v1/orgs/org-1/workspaces/ws-1/data-keys/rotate"))
    rec("data keys after", api.get("/admin/v1/orgs/org-1/workspaces/ws-1/data-keys"))
    f = rec("fault add", api.post("/sim/v1/faults", {"kind": "status", "operation_id": "get_deployment", "times": 1, "status": 503,
                                                     "retry_after_seconds": 5}))
    rec("faulted get", api.get(D1 + "/" + did))
    rec("faults list", api.get("/sim/v1/faults"))
    fid = j(f).get("fault_id", "x")
    rec("fault delete", api.delete("/sim/v1/faults/" + fid))
    rec("faults reset", api.delete("/sim/v1/faults"))
    rec("journal", api.get("/sim/v1/journal?limit=5"))
    rec("journal summary", api.get("/sim/v1/journal/summary"))
    rec("deployment delete", api.delete(D1 + "/" + did2))
    rec("deployment delete 404", api.delete(D1 + "/" + did2))
    rec("deployment get 404", api.get(D1 + "/" + did2))
    # the other workspace
    rec("ws2 campaign", api2.post(C2, camp_body("Spring outreach", sched("UTC", ALL, "09:00", "17:00"),
                                                 "2026-03-02T12:00:00Z", "2026-03-05T00:00:00Z")))
    rec("ws2 deployment", api2.post(D2, {"name": "Front desk", "app_id": "app-1", "app_version": 1,
                                         "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550300"]}]}))
    rec("ws2 list", api2.get(D2 + "?search=Front"))
    rec("ws2 reads ws1 id", api2.get(D2 + "/" + did))
    rec("ws2 reset", api2.post("/sim/v1/orgs/org-1/workspaces/ws-2/reset"))
    rec("ws2 list after", api2.get(C2))
    rec("journal delete", api.delete("/sim/v1/journal"))
    rec("ui", api.get("/ui", key=None))
    return out


VOLATILE = {"journal", "journal summary"}  # durations differ between any two runs


def norm(r, side_hosts):
    body = r.body
    for h in side_hosts:
        body = body.replace(h.encode(), b"HOST")
    hd = {k: r.headers.get(k) for k in ("content-type", "content-disposition", "allow", "retry-after") if k in r.headers}
    return r.status, hd, body


def twin():
    a = b = p = None
    try:
        a, b = Platform(), Platform()
        p = ProxyProc(b.url)
        ha = urllib.parse.urlsplit(a.url).netloc
        hb = urllib.parse.urlsplit(b.url).netloc
        hp = urllib.parse.urlsplit(p.url).netloc
        straight = script(Api(a.url, KEY1), Api(a.url, KEY2), HOOKS.base)
        proxied = script(Api(p.url, KEY1), Api(p.url, KEY2), HOOKS.base)
        problems = []
        if len(straight) != len(proxied):
            problems.append("different number of steps")
        for (la, ra), (lb, rb) in zip(straight, proxied):
            na, nb = norm(ra, [ha]), norm(rb, [hp, hb])
            if la in VOLATILE:
                na, nb = na[:2], nb[:2]
            if na != nb:
                problems.append("%s: straight %s %s %r\n   proxied %s %s %r" % (la, na[0], na[1], na[2][:400], nb[0], nb[1], nb[2][:400]))
        return problems, len(straight)
    finally:
        if p:
            err = p.stop()
            if "Traceback" in err:
                print("proxy stderr (twin):\n" + err, file=sys.stderr)
        for x in (a, b):
            if x:
                x.stop()


# --------------------------------------------------------------------------------------

def main():
    global HOOKS
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-twin", action="store_true")
    ap.add_argument("--no-cross", action="store_true")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    if not a.no_build:
        print("building the mock: cargo build -p platform", flush=True)
        subprocess.run(["cargo", "build", "-p", "platform"], cwd=ROOT, check=True)
    defects = json.loads(subprocess.run([sys.executable, PROXY, "--list-defects"], capture_output=True, check=True).stdout)
    names = [d["name"] for d in defects]
    missing = [n for n in names if n not in PROBES]
    extra = [n for n in PROBES if n not in names]
    if missing or extra:
        print("probes missing for %s; probes without a defect: %s" % (missing, extra))
        return 1
    with open(os.path.join(HERE, "defects.json")) as fh:
        listed = json.load(fh)
    if listed != defects:
        print("defects.json differs from proxy.py --list-defects")
        return 1
    only = [x for x in a.only.split(",") if x]
    if only:
        names = [n for n in names if n in only]
    HOOKS = Hooks()
    failures = []
    known = []
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as ex:
        if not a.no_twin and not only:
            jobs[ex.submit(twin)] = ("twin",)
        for n in names:
            jobs[ex.submit(run_probe, n, None)] = ("probe", n, None)
            jobs[ex.submit(run_probe, n, n)] = ("probe", n, n)
        if not a.no_cross:
            for dname in EVENT_PROBES:
                if only and dname not in only:
                    continue
                for pname in EVENT_PROBES:
                    if pname != dname:
                        jobs[ex.submit(run_probe, pname, dname)] = ("cross", pname, dname)
        results = {}
        for fut in concurrent.futures.as_completed(jobs):
            results[jobs[fut]] = fut.result()
    if not a.no_twin and not only:
        problems, steps = results[("twin",)]
        if problems:
            failures.append("transparency: %d of %d steps differ" % (len(problems), steps))
            for p in problems:
                print("  TWIN DIFF " + p)
        else:
            print("transparency: %d steps identical straight and through the proxy" % steps)
    for n in names:
        ok_t, info_t, st_t = results[("probe", n, None)]
        ok_d, info_d, st_d = results[("probe", n, n)]
        good = ok_t is True and ok_d is False and not st_t and not st_d
        label = "PASS" if good else "FAIL"
        if not good and n in KNOWN_MOCK_BUGS and ok_t is False and ok_d is False and not st_t and not st_d:
            label = "MOCK"
            known.append(n)
        elif good and n in KNOWN_MOCK_BUGS:
            print("note: %s is in KNOWN_MOCK_BUGS but the mock now passes its probe: remove it from the list" % n)
        print("%s %-48s transparent: %s | defective: %s" % (label, n, "holds" if ok_t else "BROKEN (%s)" % info_t,
                                                             ("caught: " + info_d) if ok_d is False else "NOT CAUGHT (%s)" % info_d))
        for s in st_t + st_d:
            print("     stealth: " + s)
        if label == "FAIL":
            failures.append(n)
    for n in known:
        print("MOCK %s: the mock breaks this rule itself, so the probe fails through the transparent proxy too: %s" % (n, KNOWN_MOCK_BUGS[n]))
    for key, (ok, info, st) in sorted((k, v) for k, v in results.items() if k[0] == "cross"):
        if ok is not True or st:
            failures.append("cross %s under %s" % (key[1], key[2]))
            print("FAIL cross: probe %s under defect %s: %s %s" % (key[1], key[2], info, st))
    ncross = sum(1 for k in results if k[0] == "cross")
    if ncross:
        print("cross-check: %d event probes under other event defects" % ncross)
    HOOKS.close()
    print("%d defects, %d failures, %.1f s" % (len(names), len(failures), time.time() - t0))
    for f in failures:
        print("  failed: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
