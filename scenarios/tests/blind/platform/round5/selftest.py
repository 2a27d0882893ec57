#!/usr/bin/env python3
"""Self-test of proxy.py (Python 3 standard library only).

(a) Transparency: one script of requests over every route runs against a platform
    directly and against a second platform (same seed, same start) through the proxy
    without a defect; every answer (status, reason, headers but Date, body) and every
    webhook event must be identical. The same script then runs through a proxy with a
    webhook defect (`campaign_event_signature_body_only`), which rewrites webhook URLs:
    every answer must still be identical, and so must every event but the signatures it
    changes on purpose.
(b) Each defect: a probe of its own holds through the transparent proxy and fails
    through the defective one (each run on a fresh platform).

Usage: selftest.py [-j N] [--only NAME[,NAME...]] [--skip-transparency] [--platform PATH] [-v]
"""

import argparse
import concurrent.futures as cf
import datetime as dt
import hashlib
import hmac
import http.client
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
PROXY = os.path.join(HERE, "proxy.py")
SECRET = "whsec_test"
START = "2026-03-02T08:00:00Z"
KEYS = {"ws-1": "sk-test-1", "ws-2": "sk-test-2"}
ORG = "org-1"
VERBOSE = False


class Fail(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def ts(s):
    if not isinstance(s, str):
        raise Fail("not a timestamp: %r" % (s,))
    try:
        d = dt.datetime.fromisoformat(s)
    except ValueError:
        raise Fail("not an ISO 8601 timestamp: %r" % (s,))
    if d.tzinfo is None:
        raise Fail("timestamp without offset: %r" % (s,))
    return d


def iso(d):
    return d.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


T0 = ts(START)


# ----------------------------------------------------------------------------- webhook receiver

class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.events = {}
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                parts = self.path.split("/")
                run = parts[2] if len(parts) > 2 else ""
                try:
                    j = json.loads(body)
                except ValueError:
                    j = None
                with rec.lock:
                    rec.events.setdefault(run, []).append(
                        {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                         "body": body, "json": j})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def url(self, run, suffix="hook"):
        return "http://127.0.0.1:%d/r/%s/%s" % (self.port, run, suffix)

    def get(self, run):
        with self.lock:
            return list(self.events.get(run, []))

    def clear(self, run):
        with self.lock:
            self.events.pop(run, None)


RECV = None


# ----------------------------------------------------------------------------- processes

def platform_bin(arg):
    if arg:
        return arg
    p = os.path.join(REPO, "target", "debug", "platform")
    if not os.path.exists(p):
        subprocess.run(["cargo", "build", "-p", "platform"], cwd=REPO, check=True)
    return p


class R:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (k, v)
        self.h = {k.lower(): v for k, v in headers}
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            self.json = None

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


class Env:
    """A fresh platform, optionally behind the proxy (transparent or with a defect)."""

    def __init__(self, plat_bin, proxied=True, defect=None, run=None):
        self.tmp = tempfile.mkdtemp(prefix="r5st-")
        self.run = run or uuid.uuid4().hex[:12]
        self.procs = []
        ready = os.path.join(self.tmp, "ready.json")
        args = [plat_bin, "serve", "--clock", "simulated", "--database", ":memory:",
                "--api-key", "org-1/ws-1=sk-test-1", "--api-key", "org-1/ws-2=sk-test-2",
                "--listen", "127.0.0.1:0", "--seed", "42", "--sim-start", START,
                "--webhook-secret", SECRET, "--ready-file", ready]
        self.plog = open(os.path.join(self.tmp, "platform.log"), "wb")
        p = subprocess.Popen(args, stdout=self.plog, stderr=subprocess.STDOUT)
        self.procs.append(p)
        deadline = time.time() + 30
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if p.poll() is not None or time.time() > deadline:
                self.close()
                raise RuntimeError("platform did not start")
            time.sleep(0.02)
        time.sleep(0.01)
        with open(ready) as f:
            self.platform_url = json.load(f)["url"]
        self.url = self.platform_url
        if proxied:
            pargs = [sys.executable, PROXY, "--upstream", self.platform_url, "--listen", "127.0.0.1:0",
                     "--webhook-secret", SECRET]
            if defect:
                pargs += ["--defect", defect]
            if VERBOSE:
                pargs.append("--verbose")
            self.xlog = open(os.path.join(self.tmp, "proxy.log"), "wb")
            q = subprocess.Popen(pargs, stdout=subprocess.PIPE, stderr=self.xlog)
            self.procs.append(q)
            line = q.stdout.readline()
            if not line:
                self.close()
                raise RuntimeError("proxy did not start")
            self.url = "http://127.0.0.1:%d" % json.loads(line)["port"]
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if p.stdout:
                p.stdout.close()
        self.procs = []
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- requests
    def raw(self, method, path, body=None, headers=None, chunked=False):
        c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            c.putrequest(method, path, skip_accept_encoding=True)
            for k, v in (headers or []):
                c.putheader(k, v)
            if chunked:
                c.putheader("Transfer-Encoding", "chunked")
            elif body is not None:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders()
            if chunked:
                data = b""
                for i in range(0, len(body), 97):
                    part = body[i:i + 97]
                    data += b"%x\r\n" % len(part) + part + b"\r\n"
                c.send(data + b"0\r\n\r\n")
            elif body:
                c.send(body)
            r = c.getresponse()
            return R(r.status, r.reason, r.getheaders(), r.read())
        finally:
            c.close()

    def req(self, method, path, obj=None, ws="ws-1", key=None, headers=None, raw=None, ctype=None,
            chunked=False, observer=False, nokey=False):
        h = []
        if not nokey:
            h.append(("X-API-Key", key if key is not None else KEYS[ws]))
        body = None
        if obj is not None:
            body = json.dumps(obj).encode()
            h.append(("Content-Type", ctype or "application/json"))
        elif raw is not None:
            body = raw
            if ctype:
                h.append(("Content-Type", ctype))
        if observer:
            h.append(("x-harness-observer", "selftest"))
        h.extend(headers or [])
        return self.raw(method, path, body, h, chunked=chunked)

    # -- paths
    def S(self, ws="ws-1"):
        return "/api/scheduling/v1/orgs/%s/workspaces/%s" % (ORG, ws)

    def A(self, ws="ws-1"):
        return "/api/app-authoring/v1/orgs/%s/workspaces/%s" % (ORG, ws)

    def O(self, ws="ws-1"):
        return "/api/outbounds/v1/orgs/%s/workspaces/%s/outbounds" % (ORG, ws)

    def SIM(self, ws="ws-1"):
        return "/sim/v1/orgs/%s/workspaces/%s" % (ORG, ws)

    # -- simulation
    def now(self):
        r = self.req("GET", "/sim/v1/clock", observer=True)
        return ts(r.json["now"])

    def advance(self, seconds=None, to=None):
        body = {"seconds": seconds} if seconds is not None else {"to": iso(to) if isinstance(to, dt.datetime) else to}
        r = self.req("POST", "/sim/v1/clock/advance", body)
        check(r.status == 200, "clock advance failed: %r" % r)
        return r.json

    def hook(self, suffix="hook"):
        return RECV.url(self.run, suffix)

    def events(self):
        return RECV.get(self.run)

    def inbound(self, caller, dialled, ws="ws-1"):
        r = self.req("POST", self.SIM(ws) + "/inbound-calls", {"caller": caller, "dialled": dialled}, ws=ws)
        check(r.status == 200, "inbound call failed: %r" % r)
        return r.json


# ----------------------------------------------------------------------------- builders

def multipart(parts, boundary="r5boundary7d41c2e9a0b64f1e"):
    b = boundary
    out = b""
    for name, (fn, ct, data) in parts:
        if isinstance(data, str):
            data = data.encode()
        disp = 'form-data; name="%s"' % name + ('; filename="%s"' % fn if fn else "")
        out += ("--%s\r\nContent-Disposition: %s\r\n" % (b, disp)).encode()
        if ct:
            out += ("Content-Type: %s\r\n" % ct).encode()
        out += b"\r\n" + data + b"\r\n"
    out += ("--%s--\r\n" % b).encode()
    return out, "multipart/form-data; boundary=" + b


TF = {"phone_number": {"column_name": "phone", "country_code": "US"},
      "user_identifier": {"column_name": "uid"},
      "app_variables": {"first_name": {"column_name": "first"}}}


def users_csv(n, base=300, prefix="+1415555", extra_rows=""):
    rows = "".join("%s%04d,u%d,N%d\n" % (prefix, base + i, i, i) for i in range(n))
    return "phone,uid,first\n" + rows + extra_rows


def upload(e, parent, pid, csv_text, tf=TF, name="cohort one", category=None, ws="ws-1", chunked=False):
    parts = [("name", (None, None, name)),
             ("cohort_file", ("users.csv", "text/csv", csv_text)),
             ("cohort_transformation_file", ("t.json", "application/json", json.dumps(tf)))]
    if category:
        parts.append(("cohort_category", (None, None, category)))
    body, ct = multipart(parts)
    return e.req("POST", "%s/%s/%s/cohorts/upload" % (e.S(ws), parent, pid), raw=body, ctype=ct, ws=ws,
                 chunked=chunked)


def wait_cohort(e, parent, pid, coh, ws="ws-1"):
    deadline = time.time() + 15
    while True:
        r = e.req("GET", "%s/%s/%s/cohorts/%s" % (e.S(ws), parent, pid, coh), ws=ws, observer=True)
        if r.status != 200 or not isinstance(r.json, dict) or r.json.get("status") not in ("processing", "PROCESSING"):
            return r
        if time.time() > deadline:
            raise Fail("cohort %s still processing" % coh)
        time.sleep(0.03)


def camp_body(now, name="Campaign one", start_in=300, length=86400, **kw):
    start = now + dt.timedelta(seconds=start_in)
    b = {"name": name, "description": kw.pop("description", "a campaign"),
         "start_timestamp": iso(start), "end_timestamp": iso(start + dt.timedelta(seconds=length)),
         "allowed_schedule": kw.pop("schedule", {"timezone": "UTC", "allowed_days": ALL_DAYS,
                                                 "allowed_start_time": "00:00", "allowed_end_time": "23:59"}),
         "app_config": {"app_id": "agent-1", "app_version": 3, "app_type": "agent",
                        "attempts_per_second": kw.pop("aps", 1),
                        "connection_configs": kw.pop("connections", [
                            {"connection_id": "conn-1", "phone_numbers": ["+14155550100"], "weight": 1}]),
                        "retry_config": kw.pop("retry", {"max_retries": 1, "retry_on": ["busy", "no_answer"],
                                                         "threshold_seconds": 20, "retry_interval_minutes": 1})}}
    hook = kw.pop("webhook", None)
    if hook:
        b["app_config"]["webhook_config"] = {"url": hook, "metadata": kw.pop("metadata", {"campaign": name})}
    b.update(kw)
    return b


ALL_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def make_campaign(e, ws="ws-1", **kw):
    b = camp_body(e.now(), **kw)
    r = e.req("POST", e.S(ws) + "/campaigns", b, ws=ws)
    check(r.status == 200 and isinstance(r.json, dict), "campaign create refused: %r" % r)
    return r.json["campaign_id"], b


def get_campaign(e, cid, ws="ws-1"):
    r = e.req("GET", "%s/campaigns/%s" % (e.S(ws), cid), ws=ws)
    check(r.status == 200 and isinstance(r.json, dict), "campaign get: %r" % r)
    return r.json


NUM = [7000]
NUM_LOCK = threading.Lock()


def numbers(n):
    with NUM_LOCK:
        out = ["+1415555%04d" % (NUM[0] + i) for i in range(n)]
        NUM[0] += n
    return out


def dep_body(name="Deployment one", nums=None, **kw):
    b = {"name": name, "app_id": "agent-9", "app_version": 4,
         "connection_configs": kw.pop("connections", [{"connection_id": "conn-d", "phone_numbers": nums or numbers(1)}])}
    b.update(kw)
    return b


def make_deployment(e, ws="ws-1", **kw):
    b = dep_body(**kw)
    r = e.req("POST", e.A(ws) + "/deployments", b, ws=ws)
    check(r.status == 200 and isinstance(r.json, dict), "deployment create refused: %r" % r)
    return r.json["deployment_id"], b


def outbound_body(hook, user="+14155550123", metadata=None):
    return {"app_config": {"app_id": "agent-1", "app_version": 2, "app_type": "agent",
                           "connection_config": {"connection_id": "conn-1", "agent_phone_number": "+14155550100"},
                           "agent_variables": {"first_name": "Ann"},
                           "app_overrides": {"initial_bot_message": "Hello Ann"}},
            "user_config": {"user_phone_number": user},
            "webhook_config": {"url": hook, "metadata": metadata if metadata is not None else {"ticket": "T-1", "n": 1}}}


def verify_sig(ev):
    t = ev["headers"].get("x-webhook-timestamp")
    s = ev["headers"].get("x-webhook-signature")
    if t is None or s is None:
        return False
    want = hmac.new(SECRET.encode(), t.encode() + b"." + ev["body"], hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, s)


def campaign_run(e, n_users=8, retry=None, until=1800, aps=1, **kw):
    """A campaign starting in 130 s with a cohort of n_users; the clock moved `until` s past its start."""
    cid, body = make_campaign(e, start_in=130, aps=aps, webhook=e.hook("camp"),
                              retry=retry or {"max_retries": 2, "retry_on": ["busy", "no_answer", "failed"],
                                              "threshold_seconds": 20, "retry_interval_minutes": 1}, **kw)
    r = upload(e, "campaigns", cid, users_csv(n_users))
    check(r.status == 200, "upload: %r" % r)
    coh = r.json["cohort_id"]
    wait_cohort(e, "campaigns", cid, coh)
    e.advance(to=ts(body["start_timestamp"]) + dt.timedelta(seconds=until))
    evs = [x for x in e.events() if isinstance(x["json"], dict) and "campaign_id" in x["json"]]
    return cid, coh, body, evs


# ----------------------------------------------------------------------------- probes

PROBES = {}


def probe(name):
    def deco(f):
        PROBES[name] = f
        return f
    return deco


# ---- instant outbound

@probe("outbound_attempt_id_mismatch")
def _(e):
    r = e.req("POST", e.O(), outbound_body(e.hook("o")))
    check(r.status == 200 and isinstance(r.json, dict), "outbound refused: %r" % r)
    aid = r.json.get("attempt_id")
    e.advance(600)
    evs = e.events()
    check(len(evs) == 1, "expected one outbound event, got %d" % len(evs))
    check(evs[0]["json"].get("attempt_id") == aid,
          "answer attempt_id %r != event attempt_id %r" % (aid, evs[0]["json"].get("attempt_id")))


@probe("outbound_422_error_shape")
def _(e):
    b = outbound_body(e.hook("o"), user="not-a-number")
    r = e.req("POST", e.O(), b)
    check(r.status == 422, "expected 422, got %r" % r)
    j = r.json
    check(isinstance(j, dict) and isinstance(j.get("detail"), list) and j["detail"], "no detail list: %r" % r)
    locs = [d.get("loc") for d in j["detail"]]
    check(["body", "user_config", "user_phone_number"] in locs, "loc of the bad number missing: %r" % locs)
    check(all(isinstance(d.get("msg"), str) and isinstance(d.get("type"), str) for d in j["detail"]), "msg/type")


OUT_USERS = ["+14155550123", "+14155550124", "+14155550125", "+14155550126", "+14155550127",
             "+14155550128", "+14155550129", "+14155550130"]


@probe("outbound_event_status_completed")
def _(e):
    for u in OUT_USERS:
        r = e.req("POST", e.O(), outbound_body(e.hook("o"), user=u))
        check(r.status == 200, "outbound refused: %r" % r)
    e.advance(900)
    evs = [x["json"] for x in e.events()]
    check(len(evs) == len(OUT_USERS), "events: %d" % len(evs))
    for ev in evs:
        check(ev.get("status") in ("connected", "no_answer", "busy", "failed"), "status %r" % ev.get("status"))
    connected = [ev for ev in evs if ev.get("duration") is not None]
    check(connected, "no connected call to judge")
    for ev in connected:
        check(ev["status"] == "connected", "a call with a duration has status %r" % ev["status"])


@probe("event_metadata_dropped")
def _(e):
    meta = {"ticket": "T-42", "nested": {"a": [1, 2]}, "n": 7}
    hook = e.hook("o")
    r = e.req("POST", e.O(), outbound_body(hook, metadata=meta))
    check(r.status == 200, "outbound refused: %r" % r)
    e.advance(600)
    evs = e.events()
    check(len(evs) == 1, "events: %d" % len(evs))
    wc = evs[0]["json"].get("webhook_config")
    check(isinstance(wc, dict) and wc.get("metadata") == meta, "metadata %r" % (wc,))
    check(wc.get("url") == hook, "url %r" % wc.get("url"))
    check(verify_sig(evs[0]), "signature does not verify")


# ---- campaigns: values

@probe("campaign_status_uppercase")
def _(e):
    cid, _b = make_campaign(e)
    check(get_campaign(e, cid)["status"] == "scheduled", "get status")
    r = e.req("GET", e.S() + "/campaigns")
    check(r.status == 200 and [i["status"] for i in r.json["items"]] == ["scheduled"], "list status %r" % r)
    r = e.req("PUT", "%s/campaigns/%s/status" % (e.S(), cid), {"action": "pause"})
    check(r.status == 200 and r.json.get("status") == "paused", "pause answer %r" % r)


@probe("campaign_start_offset_ignored")
def _(e):
    b = camp_body(e.now())
    b["start_timestamp"] = "2026-03-02T11:00:00+02:00"
    b["end_timestamp"] = "2026-03-03T11:00:00+02:00"
    r = e.req("POST", e.S() + "/campaigns", b)
    check(r.status == 200, "create refused: %r" % r)
    c = get_campaign(e, r.json["campaign_id"])
    check(ts(c["start_timestamp"]) == ts("2026-03-02T09:00:00Z"), "start %s" % c["start_timestamp"])
    check(ts(c["end_timestamp"]) == ts("2026-03-03T09:00:00Z"), "end %s" % c["end_timestamp"])


DESC150 = ("Spring outreach for renewals, mixed case & punctuation: cafe, naive, 'quotes' and \"more\" "
           "- padded to exactly one hundred fifty chars....")
DESC150 = (DESC150 + "x" * 150)[:150]


@probe("campaign_description_cut_128")
def _(e):
    b = camp_body(e.now(), description=DESC150)
    r = e.req("POST", e.S() + "/campaigns", b)
    check(r.status == 200, "create refused: %r" % r)
    check(r.json.get("description") == DESC150, "create answer description differs")
    cid = r.json["campaign_id"]
    check(get_campaign(e, cid)["description"] == DESC150, "get description differs")
    r = e.req("GET", e.S() + "/campaigns")
    check([i.get("description") for i in r.json["items"]] == [DESC150], "list description differs")


@probe("campaign_list_status_filter_ignored")
def _(e):
    a, _ = make_campaign(e, name="Keep going")
    b, _ = make_campaign(e, name="To cancel")
    r = e.req("PUT", "%s/campaigns/%s/status" % (e.S(), b), {"action": "cancel"})
    check(r.status == 200, "cancel: %r" % r)
    r = e.req("GET", e.S() + "/campaigns?campaign_status=cancelled")
    check(r.status == 200, "list: %r" % r)
    check([i["campaign_id"] for i in r.json["items"]] == [b], "cancelled list %r" % [i["campaign_id"] for i in r.json["items"]])
    check(r.json["total"] == 1, "total %r" % r.json["total"])
    r = e.req("GET", e.S() + "/campaigns?campaign_status=scheduled")
    check([i["campaign_id"] for i in r.json["items"]] == [a], "scheduled list")


@probe("campaign_list_leaks_other_workspace")
def _(e):
    mine, _ = make_campaign(e, name="Leak probe one")
    theirs, _ = make_campaign(e, ws="ws-2", name="Leak probe two")
    check(mine != theirs, "ids")
    for q in ("?search=Leak", "", "?search=probe%20two"):
        r = e.req("GET", e.S() + "/campaigns" + q)
        check(r.status == 200, "list: %r" % r)
        ids = [i["campaign_id"] for i in r.json["items"]]
        check(theirs not in ids, "ws-2's campaign listed in ws-1 (%s)" % q)
        check(r.json["total"] == len(ids), "total %r vs %d items" % (r.json["total"], len(ids)))
    r = e.req("GET", e.S("ws-2") + "/campaigns?search=Leak", ws="ws-2")
    check([i["campaign_id"] for i in r.json["items"]] == [theirs], "ws-2 list")


@probe("campaign_patch_not_persisted")
def _(e):
    cid, _ = make_campaign(e, name="Before rename")
    r = e.req("PATCH", "%s/campaigns/%s" % (e.S(), cid), {"name": "After rename"})
    check(r.status == 200 and r.json.get("name") == "After rename", "patch answer %r" % r)
    check(get_campaign(e, cid)["name"] == "After rename", "get name not changed")
    r = e.req("GET", e.S() + "/campaigns")
    check([i["name"] for i in r.json["items"]] == ["After rename"], "list name not changed")


@probe("campaign_patch_resets_retry_config")
def _(e):
    rc = {"max_retries": 2, "retry_on": ["busy", "no_answer"], "threshold_seconds": 25, "retry_interval_minutes": 5}
    cid, _ = make_campaign(e, retry=rc)
    r = e.req("PATCH", "%s/campaigns/%s" % (e.S(), cid), {"app_config": {"retry_config": {"max_retries": 3}}})
    check(r.status == 200, "patch: %r" % r)
    got = get_campaign(e, cid)["app_config"]["retry_config"]
    want = dict(rc, max_retries=3)
    check(got == want, "retry_config %r, want %r" % (got, want))


@probe("campaign_patch_allowed_while_active")
def _(e):
    cid, b = make_campaign(e, name="Running one", start_in=130)
    e.advance(to=ts(b["start_timestamp"]) + dt.timedelta(seconds=5))
    check(get_campaign(e, cid)["status"] == "active", "not active")
    r = e.req("PATCH", "%s/campaigns/%s" % (e.S(), cid), {"name": "Renamed while active"})
    check(400 <= r.status < 500, "PATCH of an active campaign answered %r" % r)
    c = get_campaign(e, cid)
    check(c["name"] == "Running one" and c["status"] == "active", "campaign changed: %s %s" % (c["name"], c["status"]))


@probe("campaign_unknown_id_422")
def _(e):
    make_campaign(e)
    for method, suffix, body in (("GET", "", None), ("PATCH", "", {"name": "x"}), ("PUT", "/status", {"action": "pause"})):
        r = e.req(method, "%s/campaigns/%s%s" % (e.S(), "camp-unknown00000000000", suffix), body)
        check(r.status == 404, "%s of an unknown campaign answered %r" % (method, r))
        err = (r.json or {}).get("error")
        check(isinstance(err, dict) and isinstance(err.get("code"), str), "error body %r" % r)


# ---- campaigns: states and time

@probe("campaign_cancelled_resumable")
def _(e):
    cid, _ = make_campaign(e)
    r = e.req("PUT", "%s/campaigns/%s/status" % (e.S(), cid), {"action": "cancel"})
    check(r.status == 200 and r.json.get("status") == "cancelled", "cancel %r" % r)
    r = e.req("PUT", "%s/campaigns/%s/status" % (e.S(), cid), {"action": "resume"})
    check(400 <= r.status < 500, "resume of a cancelled campaign answered %r" % r)
    check(get_campaign(e, cid)["status"] == "cancelled", "status after resume")


@probe("campaign_pause_keeps_dialling")
def _(e):
    cid, b = make_campaign(e, start_in=130, aps=0.2, webhook=e.hook("camp"))
    r = upload(e, "campaigns", cid, users_csv(30))
    wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    start = ts(b["start_timestamp"])
    e.advance(to=start + dt.timedelta(seconds=21))
    r = e.req("PUT", "%s/campaigns/%s/status" % (e.S(), cid), {"action": "pause"})
    check(r.status == 200 and r.json.get("status") == "paused", "pause %r" % r)
    paused_at = e.now()
    e.advance(600)
    evs = [x["json"] for x in e.events()]
    check(evs, "no dial before the pause to judge")
    late = [ev["executed_at"] for ev in evs if ts(ev["executed_at"]) > paused_at]
    check(not late, "dials after the pause at %s: %s" % (iso(paused_at), late[:3]))
    check(get_campaign(e, cid)["status"] == "paused", "status")


@probe("campaign_activation_late_60s")
def _(e):
    cid, b = make_campaign(e, start_in=130)
    start = ts(b["start_timestamp"])
    e.advance(to=start - dt.timedelta(seconds=1))
    check(get_campaign(e, cid)["status"] == "scheduled", "active before its start")
    e.advance(to=start + dt.timedelta(seconds=1))
    check(get_campaign(e, cid)["status"] == "active", "not active 1 s after its start")
    r = e.req("GET", e.S() + "/campaigns")
    check([i["status"] for i in r.json["items"]] == ["active"], "list status")


@probe("campaign_not_ended_at_end")
def _(e):
    cid, b = make_campaign(e, start_in=130, length=130)
    end = ts(b["end_timestamp"])
    e.advance(to=end - dt.timedelta(seconds=1))
    check(get_campaign(e, cid)["status"] == "active", "not active before its end")
    e.advance(to=end + dt.timedelta(seconds=1))
    check(get_campaign(e, cid)["status"] == "ended", "not ended 1 s after its end")
    r = e.req("GET", e.S() + "/campaigns")
    check([i["status"] for i in r.json["items"]] == ["ended"], "list status")


@probe("campaign_window_end_plus_minute")
def _(e):
    sched = {"timezone": "UTC", "allowed_days": ["Monday"], "allowed_start_time": "08:00", "allowed_end_time": "08:04"}
    cid, b = make_campaign(e, start_in=130, aps=0.5, schedule=sched, webhook=e.hook("camp"))
    r = upload(e, "campaigns", cid, users_csv(120))
    wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    e.advance(to=ts("2026-03-02T08:10:00Z"))
    close = ts("2026-03-02T08:04:00Z")
    evs = [x["json"] for x in e.events()]
    check(evs, "no dials")
    late = sorted(ev["executed_at"] for ev in evs if ts(ev["executed_at"]) >= close)
    check(not late, "dials at or after the window's end 08:04: %s" % late[:3])
    check(max(ts(ev["executed_at"]) for ev in evs) >= close - dt.timedelta(seconds=30), "window not used to its end")
    c = get_campaign(e, cid)
    check(c["allowed_schedule"] == sched, "schedule shown %r" % c["allowed_schedule"])


@probe("campaign_days_ignored")
def _(e):
    sched = {"timezone": "UTC", "allowed_days": ["Tuesday"], "allowed_start_time": "08:00", "allowed_end_time": "20:00"}
    cid, b = make_campaign(e, start_in=130, length=86400 + 7200, schedule=sched, webhook=e.hook("camp"))
    r = upload(e, "campaigns", cid, users_csv(5))
    wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    e.advance(to=ts("2026-03-02T12:00:00Z"))
    check(not e.events(), "dials on Monday, a day left out: %s" % [x["json"]["executed_at"] for x in e.events()][:3])
    e.advance(to=ts("2026-03-03T08:30:00Z"))
    evs = [x["json"] for x in e.events()]
    check(evs, "no dials on Tuesday")
    check(all(ts(ev["executed_at"]) >= ts("2026-03-03T08:00:00Z") for ev in evs), "dials before Tuesday 08:00")
    check(get_campaign(e, cid)["allowed_schedule"] == sched, "schedule shown")


@probe("zone_standard_offset")
def _(e):
    # Sunday 2026-03-08: New York is on summer time (UTC-4) from 02:00 local.
    sched = {"timezone": "America/New_York", "allowed_days": ["Sunday"], "allowed_start_time": "09:00",
             "allowed_end_time": "09:30"}
    b = camp_body(e.now(), schedule=sched, webhook=e.hook("camp"))
    b["start_timestamp"], b["end_timestamp"] = "2026-03-08T12:00:00Z", "2026-03-08T16:00:00Z"
    r = e.req("POST", e.S() + "/campaigns", b)
    check(r.status == 200, "create: %r" % r)
    cid = r.json["campaign_id"]
    r = upload(e, "campaigns", cid, users_csv(5))
    wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    nums = numbers(1)
    inbound = {"start_time": "09:00", "end_time": "17:00", "allowed_days": ALL_DAYS, "timezone": "America/New_York"}
    did, _ = make_deployment(e, nums=nums, inbound_config=inbound)
    e.advance(to=ts("2026-03-08T13:20:00Z"))
    call = e.inbound("+14155559999", nums[0])
    check(call["answered"] is True, "inbound call at 09:20 New York summer time not answered: %r" % call.get("rejection"))
    e.advance(to=ts("2026-03-08T15:00:00Z"))
    evs = [x["json"] for x in e.events()]
    check(evs, "no dials")
    lo, hi = ts("2026-03-08T13:00:00Z"), ts("2026-03-08T13:30:00Z")
    bad = [ev["executed_at"] for ev in evs if not (lo <= ts(ev["executed_at"]) < hi)]
    check(not bad, "dials outside 09:00-09:30 New York summer time (13:00-13:30Z): %s" % bad[:3])
    check(get_campaign(e, cid)["allowed_schedule"]["timezone"] == "America/New_York", "zone shown")


@probe("deployment_inbound_timezone_utc")
def _(e):
    nums = numbers(1)
    inbound = {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
               "timezone": "America/New_York"}
    did, _ = make_deployment(e, nums=nums, inbound_config=inbound)
    r = e.req("GET", "%s/deployments/%s" % (e.A(), did))
    check(r.json["inbound_config"] == inbound, "inbound_config shown %r" % r.json["inbound_config"])
    e.advance(to=ts("2026-03-02T13:30:00Z"))  # 08:30 in New York (UTC-5)
    c1 = e.inbound("+14155559998", nums[0])
    check(c1["answered"] is False, "answered at 08:30 New York time, before 09:00")
    e.advance(to=ts("2026-03-02T14:30:00Z"))  # 09:30 in New York
    c2 = e.inbound("+14155559998", nums[0])
    check(c2["answered"] is True, "not answered at 09:30 New York time: %r" % c2.get("rejection"))


@probe("overnight_window_cut_at_midnight")
def _(e):
    sched = {"timezone": "UTC", "allowed_days": ["Monday"], "allowed_start_time": "23:58", "allowed_end_time": "00:02"}
    cid, b = make_campaign(e, start_in=130, length=20 * 3600, aps=0.2, schedule=sched, webhook=e.hook("camp"))
    r = upload(e, "campaigns", cid, users_csv(60))
    wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    nums = numbers(1)
    inbound = {"start_time": "22:00", "end_time": "02:00", "allowed_days": ALL_DAYS, "timezone": "UTC"}
    make_deployment(e, nums=nums, inbound_config=inbound)
    e.advance(to=ts("2026-03-03T01:00:00Z"))
    call = e.inbound("+14155559995", nums[0])
    check(call["answered"] is True, "call at 01:00 inside 22:00-02:00 not answered: %r" % call.get("rejection"))
    evs = [x["json"] for x in e.events()]
    check(evs, "no dials")
    lo, mid, hi = ts("2026-03-02T23:58:00Z"), ts("2026-03-03T00:00:00Z"), ts("2026-03-03T00:02:00Z")
    bad = [ev["executed_at"] for ev in evs if not (lo <= ts(ev["executed_at"]) < hi)]
    check(not bad, "dials outside 23:58-00:02: %s" % bad[:3])
    check(any(ts(ev["executed_at"]) >= mid for ev in evs), "no dial after midnight inside 23:58-00:02")
    check(get_campaign(e, cid)["allowed_schedule"] == sched, "schedule shown")


# ---- limits

def limit_pair(e, ok_body, bad_body, path, what, method="POST"):
    r = e.req(method, path, ok_body)
    check(r.status == 200, "%s at the limit refused: %r" % (what, r))
    r = e.req(method, path, bad_body)
    check(r.status == 422, "%s past the limit answered %r" % (what, r))


@probe("limit_start_min_edge_refused")
def _(e):
    now = e.now()
    ok = camp_body(now, start_in=120)
    bad = camp_body(now, start_in=119)
    limit_pair(e, ok, bad, e.S() + "/campaigns", "start 120 s from now")


@probe("limit_start_max_accepts_beyond")
def _(e):
    now = e.now()
    ok = camp_body(now, start_in=7 * 86400)
    bad = camp_body(now, start_in=7 * 86400 + 60)
    limit_pair(e, ok, bad, e.S() + "/campaigns", "start 7 days from now")


@probe("limit_end_min_accepts_short")
def _(e):
    now = e.now()
    ok = camp_body(now, length=120)
    bad = camp_body(now, length=119)
    limit_pair(e, ok, bad, e.S() + "/campaigns", "end 120 s after the start")


@probe("limit_threshold_max_edge_refused")
def _(e):
    now = e.now()
    ok = camp_body(now, retry={"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 1200})
    bad = camp_body(now, retry={"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 1201})
    limit_pair(e, ok, bad, e.S() + "/campaigns", "threshold_seconds 1200")


@probe("limit_campaign_description_150_refused")
def _(e):
    now = e.now()
    limit_pair(e, camp_body(now, description=DESC150), camp_body(now, description=DESC150 + "y"),
               e.S() + "/campaigns", "description of 150 characters")


@probe("limit_deployment_name_51_truncated")
def _(e):
    name50 = "Deployment name of exactly fifty characters 0123456"[:50]
    check(len(name50) == 50, "name length")
    r = e.req("POST", e.A() + "/deployments", dep_body(name=name50 + "7"))
    check(r.status == 422, "51-character name answered %r" % r)
    r = e.req("POST", e.A() + "/deployments", dep_body(name=name50))
    check(r.status == 200 and r.json.get("name") == name50, "50-character name: %r" % r)


@probe("limit_deployment_connections_empty_400")
def _(e):
    r = e.req("POST", e.A() + "/deployments", dep_body(connections=[]))
    check(r.status == 422, "empty connection_configs answered %r" % r)
    locs = [d.get("loc") for d in (r.json or {}).get("detail", [])]
    check(any(l[:2] == ["body", "connection_configs"] for l in locs if isinstance(l, list)), "loc %r" % locs)


@probe("limit_list_limit_100_refused")
def _(e):
    make_deployment(e)
    r = e.req("GET", e.A() + "/deployments?limit=100")
    check(r.status == 200 and r.json.get("limit") == 100, "limit=100 answered %r" % r)
    r = e.req("GET", e.A() + "/deployments?limit=101")
    check(r.status == 422, "limit=101 answered %r" % r)


@probe("limit_list_offset_negative_as_zero")
def _(e):
    make_deployment(e)
    r = e.req("GET", e.A() + "/deployments?offset=0")
    check(r.status == 200, "offset=0 answered %r" % r)
    r = e.req("GET", e.A() + "/deployments?offset=-1")
    check(r.status == 422, "offset=-1 answered %r" % r)


# ---- deployments

def dep_get(e, did):
    r = e.req("GET", "%s/deployments/%s" % (e.A(), did))
    check(r.status == 200, "deployment get: %r" % r)
    return r.json


@probe("deployment_patch_clears_description")
def _(e):
    did, _ = make_deployment(e, description="keep me")
    r = e.req("PATCH", "%s/deployments/%s" % (e.A(), did), {"app_version": 5})
    check(r.status == 200 and r.json.get("description") == "keep me", "patch answer %r" % r)
    check(dep_get(e, did)["description"] == "keep me", "description changed by a PATCH that did not name it")


@probe("deployment_patch_app_version_ignored")
def _(e):
    did, _ = make_deployment(e)
    r = e.req("PATCH", "%s/deployments/%s" % (e.A(), did), {"app_version": 7})
    check(r.status == 200 and r.json.get("app_version") == 7, "patch answer %r" % r)
    check(dep_get(e, did)["app_version"] == 7, "app_version not stored")
    r = e.req("GET", e.A() + "/deployments")
    check([i["app_version"] for i in r.json["items"]] == [7], "list app_version")


@probe("deployment_patch_days_merged")
def _(e):
    ic = {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
          "timezone": "Europe/Berlin"}
    did, _ = make_deployment(e, inbound_config=ic)
    new = dict(ic, allowed_days=["Saturday"])
    r = e.req("PATCH", "%s/deployments/%s" % (e.A(), did), {"inbound_config": new})
    check(r.status == 200 and r.json["inbound_config"]["allowed_days"] == ["Saturday"], "patch answer %r" % r)
    check(dep_get(e, did)["inbound_config"] == new, "inbound_config %r" % dep_get(e, did)["inbound_config"])


@probe("deployment_patch_refused_still_applies")
def _(e):
    did, _ = make_deployment(e, name="Original name")
    r = e.req("PATCH", "%s/deployments/%s" % (e.A(), did), {"app_id": "another-agent", "name": "Changed name"})
    check(400 <= r.status < 500, "PATCH with another app_id answered %r" % r)
    d = dep_get(e, did)
    check(d["name"] == "Original name" and d["app_id"] == "agent-9", "refused PATCH changed %s/%s" % (d["name"], d["app_id"]))


@probe("deployment_resume_not_applied")
def _(e):
    nums = numbers(1)
    did, _ = make_deployment(e, nums=nums)
    r = e.req("PUT", "%s/deployments/%s/status" % (e.A(), did), {"action": "pause"})
    check(r.status == 200, "pause: %r" % r)
    check(e.inbound("+14155559997", nums[0])["answered"] is False, "paused deployment answered")
    r = e.req("PUT", "%s/deployments/%s/status" % (e.A(), did), {"action": "resume"})
    check(r.status == 200 and r.json.get("status") == "active", "resume: %r" % r)
    check(dep_get(e, did)["status"] == "active", "status after resume")
    check(e.inbound("+14155559997", nums[0])["answered"] is True, "resumed deployment does not answer")


@probe("deployment_status_answer_204")
def _(e):
    did, _ = make_deployment(e)
    r = e.req("PUT", "%s/deployments/%s/status" % (e.A(), did), {"action": "pause"})
    check(r.status == 200, "pause answered %r" % r)
    check(isinstance(r.json, dict) and r.json.get("deployment_id") == did and r.json.get("status") == "paused",
          "pause body %r" % r)


@probe("deployment_delete_soft")
def _(e):
    nums = numbers(1)
    did, _ = make_deployment(e, nums=nums)
    r = e.req("DELETE", "%s/deployments/%s" % (e.A(), did))
    check(200 <= r.status < 300, "delete answered %r" % r)
    r = e.req("GET", "%s/deployments/%s" % (e.A(), did))
    check(400 <= r.status < 500, "deleted deployment still read: %r" % r)
    r = e.req("GET", e.A() + "/deployments")
    check(did not in [i["deployment_id"] for i in r.json["items"]], "deleted deployment still listed")
    check(e.inbound("+14155559996", nums[0])["answered"] is False, "deleted deployment answers calls")


@probe("deployment_delete_404_detail")
def _(e):
    r = e.req("DELETE", "%s/deployments/%s" % (e.A(), "dep-doesnotexist000000"))
    check(r.status == 404, "delete of an unknown id answered %r" % r)
    err = (r.json or {}).get("error")
    check(isinstance(err, dict) and all(isinstance(err.get(k), str) for k in ("message", "type", "code")),
          "error body %r" % r)


@probe("deployment_updated_at_frozen")
def _(e):
    did, _ = make_deployment(e)
    e.advance(30)
    now = e.now()
    r = e.req("PATCH", "%s/deployments/%s" % (e.A(), did), {"description": "changed"})
    check(r.status == 200, "patch %r" % r)
    check(ts(r.json["updated_at"]) == now, "patch answer updated_at %s, clock %s" % (r.json["updated_at"], iso(now)))
    d = dep_get(e, did)
    check(ts(d["updated_at"]) == now and ts(d["created_at"]) == T0, "get updated_at %s" % d["updated_at"])


# ---- deployment list

def three_deployments(e, names=("Alpha dep", "Bravo dep", "Charlie dep")):
    ids = []
    for n in names:
        ids.append(make_deployment(e, name=n)[0])
        e.advance(1)
    return ids


@probe("deployment_list_sort_order_swapped")
def _(e):
    ids = three_deployments(e)
    r = e.req("GET", e.A() + "/deployments?sort_by=created_at&sort_order=asc")
    check([i["deployment_id"] for i in r.json["items"]] == ids, "asc order")
    r = e.req("GET", e.A() + "/deployments?sort_by=created_at&sort_order=desc")
    check([i["deployment_id"] for i in r.json["items"]] == ids[::-1], "desc order")


@probe("deployment_list_default_asc")
def _(e):
    ids = three_deployments(e)
    r = e.req("GET", e.A() + "/deployments")
    check([i["deployment_id"] for i in r.json["items"]] == ids[::-1], "default order is not newest first")


@probe("deployment_list_total_page_size")
def _(e):
    ids = three_deployments(e)
    r = e.req("GET", e.A() + "/deployments?limit=1")
    check(r.json["total"] == 3 and len(r.json["items"]) == 1, "total %r" % r.json["total"])
    r = e.req("GET", e.A() + "/deployments?limit=2&offset=2")
    check(r.json["total"] == 3 and len(r.json["items"]) == 1, "total on the last page %r" % r.json["total"])


@probe("deployment_list_page_uri_absent")
def _(e):
    three_deployments(e)
    r = e.req("GET", e.A() + "/deployments?limit=2")
    check("prev_page_uri" in r.json and r.json["prev_page_uri"] is None, "first page prev_page_uri: %r" % r.json.get("prev_page_uri", "absent"))
    check(isinstance(r.json.get("next_page_uri"), str), "first page next_page_uri %r" % r.json.get("next_page_uri"))
    r = e.req("GET", e.A() + "/deployments?limit=2&offset=2")
    check("next_page_uri" in r.json and r.json["next_page_uri"] is None, "last page next_page_uri: %r" % r.json.get("next_page_uri", "absent"))
    check(isinstance(r.json.get("prev_page_uri"), str), "last page prev_page_uri")


@probe("deployment_list_next_uri_drops_search")
def _(e):
    three_deployments(e, ("Match one", "Other one", "Match two"))
    make_deployment(e, name="Other two")
    r = e.req("GET", e.A() + "/deployments?search=Match&limit=1")
    check(r.json["total"] == 2, "total %r" % r.json["total"])
    seen = [i["name"] for i in r.json["items"]]
    nxt = r.json["next_page_uri"]
    hops = 0
    while nxt and hops < 5:
        u = urllib.parse.urlsplit(nxt)
        r = e.req("GET", u.path + ("?" + u.query if u.query else ""))
        check(r.status == 200, "next page %r" % r)
        seen += [i["name"] for i in r.json["items"]]
        nxt = r.json["next_page_uri"]
        hops += 1
    check(sorted(seen) == ["Match one", "Match two"], "pages of search=Match: %r" % seen)


@probe("deployment_list_phone_numbers_first_connection")
def _(e):
    a, b, c = numbers(3)
    conns = [{"connection_id": "conn-a", "phone_numbers": [a, b]}, {"connection_id": "conn-b", "phone_numbers": [c]}]
    did, _ = make_deployment(e, connections=conns)
    r = e.req("GET", e.A() + "/deployments")
    item = r.json["items"][0]
    check(sorted(item["phone_numbers"]) == sorted([a, b, c]), "phone_numbers %r" % item["phone_numbers"])


@probe("deployment_error_code_integer")
def _(e):
    r = e.req("GET", e.A() + "/deployments", key="sk-not-a-key")
    check(400 <= r.status < 500, "wrong key answered %r" % r)
    err = (r.json or {}).get("error")
    check(isinstance(err, dict) and all(isinstance(err.get(k), str) for k in ("message", "type", "code")), "list error %r" % r)
    r = e.req("DELETE", e.A() + "/deployments/dep-unknown0000000000000")
    err = (r.json or {}).get("error")
    check(r.status == 404 and isinstance(err, dict) and all(isinstance(err.get(k), str) for k in ("message", "type", "code")),
          "delete error %r" % r)


# ---- cohorts

BAD_ROWS = "not-a-number,u90,Bad\n+1415555,u91,Short\n"


@probe("cohort_upload_answers_completed")
def _(e):
    cid, _ = make_campaign(e)
    r = upload(e, "campaigns", cid, users_csv(3))
    check(r.status == 200 and r.json.get("status") == "processing", "upload answer %r" % r)
    r = wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    check(r.json["status"] == "completed", "cohort %r" % r)


@probe("deployment_cohort_valid_includes_rejected")
def _(e):
    did, _ = make_deployment(e)
    r = upload(e, "deployments", did, users_csv(3, extra_rows=BAD_ROWS))
    check(r.status == 200, "upload %r" % r)
    coh = r.json["cohort_id"]
    r = wait_cohort(e, "deployments", did, coh)
    want = {"total_records": 5, "valid_records": 3, "rejected_records": 2}
    check(r.json["result"] == want, "result %r" % r.json["result"])
    r = e.req("GET", "%s/deployments/%s/cohorts" % (e.S(), did))
    check(r.json["items"][0]["result"] == want, "list result %r" % r.json["items"][0]["result"])
    s = e.req("POST", "%s/deployments/%s/cohorts/stream" % (e.S(), did),
              {"name": "streamed", "users": [{"phone_number": "+14155558001"}, {"phone_number": "bad"}]})
    check(s.status == 200 and s.json["result"] == {"total_records": 2, "valid_records": 1, "rejected_records": 1},
          "stream result %r" % s)


@probe("cohort_failed_shown_completed")
def _(e):
    cid, _ = make_campaign(e)
    tf = {"phone_number": {"column_name": "no_such_column"}}
    r = upload(e, "campaigns", cid, users_csv(3), tf=tf)
    check(r.status == 200, "upload %r" % r)
    r = wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    check(r.json["status"] == "failed", "cohort naming a missing column is %r" % r.json["status"])
    r = e.req("GET", "%s/campaigns/%s/cohorts" % (e.S(), cid))
    check(r.json["items"][0]["status"] == "failed", "list status")


@probe("cohort_rejected_file_no_reason")
def _(e):
    cid, _ = make_campaign(e)
    r = upload(e, "campaigns", cid, users_csv(2, extra_rows=BAD_ROWS))
    coh = r.json["cohort_id"]
    r = wait_cohort(e, "campaigns", cid, coh)
    check(r.json["result"]["rejected_records"] == 2, "rejected %r" % r.json["result"])
    f = e.req("GET", "%s/campaigns/%s/cohorts/%s/files?file_type=rejected_records" % (e.S(), cid, coh))
    check(f.status == 200, "file %r" % f)
    lines = f.body.decode().splitlines()
    check(lines[0] == "phone,uid,first,rejected_reason", "header %r" % lines[0])
    check(len(lines) == 3, "rows %d" % (len(lines) - 1))


@probe("cohort_file_octet_stream")
def _(e):
    cid, _ = make_campaign(e)
    csv_text = users_csv(2)
    r = upload(e, "campaigns", cid, csv_text)
    coh = r.json["cohort_id"]
    wait_cohort(e, "campaigns", cid, coh)
    f = e.req("GET", "%s/campaigns/%s/cohorts/%s/files?file_type=cohort" % (e.S(), cid, coh))
    check(f.status == 200 and f.body == csv_text.encode(), "file %r" % f)
    check((f.h.get("content-type") or "").split(";")[0].strip() == "text/csv", "content-type %r" % f.h.get("content-type"))


@probe("cohort_counts_float")
def _(e):
    cid, _ = make_campaign(e)
    r = upload(e, "campaigns", cid, users_csv(2, extra_rows=BAD_ROWS))
    wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    r = e.req("GET", "%s/campaigns/%s/cohorts/%s" % (e.S(), cid, r.json["cohort_id"]))
    lst = e.req("GET", "%s/campaigns/%s/cohorts" % (e.S(), cid))
    for res in (r.json["result"], lst.json["items"][0]["result"]):
        check(res == {"total_records": 4, "valid_records": 2, "rejected_records": 2}, "result %r" % res)
        check(all(type(v) is int for v in res.values()), "counts not integers: %r" % res)


@probe("cohort_category_dropped")
def _(e):
    cid, _ = make_campaign(e)
    r = upload(e, "campaigns", cid, users_csv(2), category="stop_file", name="stop list")
    check(r.status == 200 and r.json.get("cohort_category") == "stop_file", "upload answer %r" % r)
    r = wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    check(r.json["cohort_category"] == "stop_file", "get %r" % r.json["cohort_category"])
    s = e.req("POST", "%s/campaigns/%s/cohorts/stream" % (e.S(), cid),
              {"name": "stop stream", "cohort_category": "stop_file", "users": [{"phone_number": "+14155558002"}]})
    check(s.status == 200 and s.json.get("cohort_category") == "stop_file", "stream %r" % s)


@probe("cohort_stream_1000_refused")
def _(e):
    cid, _ = make_campaign(e)
    users = [{"phone_number": "+1415556%04d" % i} for i in range(1001)]
    path = "%s/campaigns/%s/cohorts/stream" % (e.S(), cid)
    r = e.req("POST", path, {"name": "thousand", "users": users[:1000]})
    check(r.status == 200 and r.json["result"]["total_records"] == 1000, "1000 users answered %r" % r)
    r = e.req("POST", path, {"name": "too many", "users": users})
    check(r.status == 422, "1001 users answered %r" % r)


@probe("cohort_country_code_ignored")
def _(e):
    cid, _ = make_campaign(e)
    csv_text = "phone,uid,first\n(415) 555-0181,u1,A\n415.555.0182,u2,B\n4155550183,u3,C\n"
    r = upload(e, "campaigns", cid, csv_text)
    r = wait_cohort(e, "campaigns", cid, r.json["cohort_id"])
    check(r.json["result"] == {"total_records": 3, "valid_records": 3, "rejected_records": 0},
          "national numbers under country_code US: %r" % r.json["result"])


# ---- campaign webhook events

@probe("campaign_event_retry_attempt_one_based")
def _(e):
    cid, coh, b, evs = campaign_run(e)
    check(evs, "no events")
    by = {}
    for x in evs:
        by.setdefault(x["json"]["user_phone_number"], []).append(x["json"])
    check(any(len(v) > 1 for v in by.values()), "no retry to judge")
    for u, v in by.items():
        v.sort(key=lambda ev: ts(ev["executed_at"]))
        check([ev["retry_attempt"] for ev in v] == list(range(len(v))), "retry_attempt of %s: %r" % (u, [ev["retry_attempt"] for ev in v]))


@probe("campaign_event_cohort_id_is_campaign_id")
def _(e):
    cid, coh, b, evs = campaign_run(e, n_users=4)
    check(evs, "no events")
    for x in evs:
        check(x["json"]["campaign_id"] == cid and x["json"]["cohort_id"] == coh,
              "event ids %s/%s, want %s/%s" % (x["json"]["campaign_id"], x["json"]["cohort_id"], cid, coh))


@probe("campaign_event_phone_national")
def _(e):
    cid, coh, b, evs = campaign_run(e, n_users=4)
    want = {"+1415555%04d" % (300 + i) for i in range(4)}
    check(evs, "no events")
    got = {x["json"]["user_phone_number"] for x in evs}
    check(got <= want, "user_phone_number %r" % sorted(got - want))
    check(all(x["json"]["agent_phone_number"] == "+14155550100" for x in evs), "agent_phone_number")


@probe("campaign_event_short_reported_completed")
def _(e):
    retry = {"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 1200, "retry_interval_minutes": 1}
    cid, coh, b, evs = campaign_run(e, n_users=12, retry=retry)
    conn = [x["json"] for x in evs if x["json"].get("connectivity_status") == "connected"]
    check(conn, "no connected call to judge")
    for ev in conn:
        check(ev["duration"] is not None and ev["duration"] < 1200, "duration %r" % ev["duration"])
        check(ev["completion_status"] != "completed",
              "a call of %ss under threshold 1200 s reported completed" % ev["duration"])
        if ev["retry_attempt"] == 0:
            check(ev["next_action_status"] is not None, "short call not retried in the event")


@probe("campaign_event_missing_retries")
def _(e):
    cid, coh, b, evs = campaign_run(e)
    evs = [x["json"] for x in evs]
    check(any(ev["next_action_status"] for ev in evs), "no retry to judge")
    have = {(ev["user_phone_number"], ev["retry_attempt"]) for ev in evs}
    for ev in evs:
        if ev["next_action_status"]:
            check((ev["user_phone_number"], ev["retry_attempt"] + 1) in have,
                  "no event for the retry of %s after attempt %d" % (ev["user_phone_number"], ev["retry_attempt"]))


@probe("campaign_event_signature_body_only")
def _(e):
    cid, coh, b, evs = campaign_run(e, n_users=4)
    check(evs, "no events")
    for x in evs:
        check(verify_sig(x), "signature does not verify over {timestamp}.{body}")


@probe("campaign_event_duration_ms")
def _(e):
    cid, coh, b, evs = campaign_run(e, n_users=8)
    conn = [x for x in evs if x["json"].get("duration") is not None]
    check(conn, "no connected call to judge")
    for x in conn:
        sent = int(x["headers"]["x-webhook-timestamp"])
        start = ts(x["json"]["executed_at"]).timestamp()
        check(start + x["json"]["duration"] <= sent + 1,
              "duration %r s does not fit between the dial and the event" % x["json"]["duration"])


# ---- authentication

@probe("auth_other_workspace_key_accepted")
def _(e):
    did, _ = make_deployment(e)
    r = e.req("GET", e.A("ws-2") + "/deployments", ws="ws-2")
    check(r.status == 200, "ws-2 list %r" % r)
    r = e.req("GET", "%s/deployments/%s" % (e.A("ws-1"), did), key=KEYS["ws-2"])
    check(400 <= r.status < 500, "ws-2's key read a ws-1 deployment: %r" % r)
    r = e.req("GET", e.A("ws-1") + "/deployments", key=KEYS["ws-2"])
    check(400 <= r.status < 500, "ws-2's key listed ws-1: %r" % r)


# ----------------------------------------------------------------------------- (a) transparency

def script(e):
    """Every route, in a fixed order; yields (label, R, compare_in_rewrite_mode)."""
    hook = RECV.url("transparency", "hook")
    S, A, O, SIM = e.S(), e.A(), e.O(), e.SIM()
    out = []

    def go(label, *a, rewrite_ok=True, **k):
        out.append((label, e.req(*a, **k), rewrite_ok))
        return out[-1][1]

    go("health", "GET", "/healthz", nokey=True)
    go("openapi", "GET", "/openapi.json", nokey=True)
    go("openapi head", "HEAD", "/openapi.json", nokey=True)
    go("ui", "GET", "/ui", nokey=True)
    go("clock", "GET", "/sim/v1/clock")
    go("stack", "GET", "/sim/v1/stack")
    go("unknown route", "GET", "/api/nothing/here")
    go("405", "DELETE", S + "/campaigns")
    go("no key", "GET", A + "/deployments", nokey=True)
    go("wrong key", "GET", A + "/deployments", key="nope")
    go("other ws key", "GET", A + "/deployments", key=KEYS["ws-2"])
    # outbound
    go("outbound", "POST", O, outbound_body(hook, metadata={"m": "v"}))
    go("outbound 2", "POST", O, outbound_body(hook, user="+14155550124"))
    go("outbound chunked", "POST", O, raw=json.dumps(outbound_body(hook, user="+14155550125")).encode(),
       ctype="application/json", chunked=True)
    go("outbound 422", "POST", O, {"app_config": {}, "user_config": {"user_phone_number": "x"}})
    go("outbound 415", "POST", O, raw=b"{}", ctype="text/plain")
    go("outbound bad json", "POST", O, raw=b"{nope", ctype="application/json")
    # campaigns
    now = T0
    cb = camp_body(now, name="Transparent one", start_in=130, aps=0.5, webhook=hook, metadata={"x": 1},
                   description="first")
    c1 = go("campaign create", "POST", S + "/campaigns", cb)
    cid = c1.json["campaign_id"]
    cb2 = camp_body(now, name="Transparent two", start_in=600, schedule={"timezone": "America/New_York",
                    "allowed_days": ["monday", "Tuesday"], "allowed_start_time": "22:00", "allowed_end_time": "02:00"})
    c2 = go("campaign create 2", "POST", S + "/campaigns", cb2)
    cid2 = c2.json["campaign_id"]
    go("campaign create 422", "POST", S + "/campaigns", camp_body(now, start_in=10, aps=1000))
    go("campaign list", "GET", S + "/campaigns")
    go("campaign list q", "GET", S + "/campaigns?sort_by=name&sort_order=asc&limit=1&offset=0&search=trans")
    go("campaign list status", "GET", S + "/campaigns?campaign_status=scheduled")
    go("campaign list 422", "GET", S + "/campaigns?limit=0")
    go("campaign get", "GET", S + "/campaigns/" + cid)
    go("campaign head", "HEAD", S + "/campaigns/" + cid)
    go("campaign 404", "GET", S + "/campaigns/camp-nope")
    go("campaign patch", "PATCH", S + "/campaigns/" + cid2, {"description": "patched", "app_config": {
        "retry_config": {"max_retries": 3}, "webhook_config": {"url": hook, "metadata": {"p": 2}}}})
    go("campaign patch 422", "PATCH", S + "/campaigns/" + cid2, {"start_timestamp": iso(now + dt.timedelta(days=2))})
    go("campaign pause", "PUT", S + "/campaigns/" + cid2 + "/status", {"action": "pause"})
    go("campaign pause again", "PUT", S + "/campaigns/" + cid2 + "/status", {"action": "pause"})
    go("campaign resume", "PUT", S + "/campaigns/" + cid2 + "/status", {"action": "resume"})
    go("campaign bad action", "PUT", S + "/campaigns/" + cid2 + "/status", {"action": "stop"})
    # cohorts of the campaign
    body, ct = multipart([("name", (None, None, "cohort a")),
                          ("cohort_file", ("a.csv", "text/csv", users_csv(6, extra_rows=BAD_ROWS))),
                          ("cohort_transformation_file", ("t.json", "application/json", json.dumps(TF)))])
    u1 = go("upload", "POST", S + "/campaigns/%s/cohorts/upload" % cid, raw=body, ctype=ct)
    coh1 = u1.json["cohort_id"]
    body2, ct2 = multipart([("cohort_transformation_file", ("t.json", "application/json", json.dumps(TF))),
                            ("name", (None, None, "cohort b")),
                            ("cohort_category", (None, None, "stop_file")),
                            ("cohort_file", ("b.csv", "text/csv", users_csv(2, base=305)))])
    u2 = go("upload chunked", "POST", S + "/campaigns/%s/cohorts/upload" % cid, raw=body2, ctype=ct2, chunked=True)
    coh2 = u2.json["cohort_id"]
    go("upload 415", "POST", S + "/campaigns/%s/cohorts/upload" % cid, raw=b"x", ctype="text/csv")
    go("upload 422", "POST", S + "/campaigns/%s/cohorts/upload" % cid, raw=body[: len(body) // 2], ctype=ct)
    wait_cohort(e, "campaigns", cid, coh1)
    wait_cohort(e, "campaigns", cid, coh2)
    go("stream", "POST", S + "/campaigns/%s/cohorts/stream" % cid,
       {"name": "streamed", "country_code": "US", "users": [{"phone_number": "4155550390", "user_identifier": "s1",
                                                             "app_variables": {"k": "v"}}, {"phone_number": "x"}]})
    go("cohort list", "GET", S + "/campaigns/%s/cohorts" % cid)
    go("cohort list page", "GET", S + "/campaigns/%s/cohorts?limit=1&offset=1" % cid)
    go("cohort get", "GET", S + "/campaigns/%s/cohorts/%s" % (cid, coh1))
    go("cohort 404", "GET", S + "/campaigns/%s/cohorts/coh-nope" % cid)
    for ft in ("cohort", "rejected_records", "cohort_transformation"):
        go("file " + ft, "GET", S + "/campaigns/%s/cohorts/%s/files?file_type=%s" % (cid, coh1, ft))
    go("file head", "HEAD", S + "/campaigns/%s/cohorts/%s/files?file_type=cohort" % (cid, coh1))
    go("file 404", "GET", S + "/campaigns/%s/cohorts/%s/files?file_type=rejected_records" % (cid, coh2))
    go("file 422", "GET", S + "/campaigns/%s/cohorts/%s/files?file_type=nope" % (cid, coh1))
    # deployments
    d1 = go("deployment create", "POST", A + "/deployments", dep_body(name="Dep one", nums=["+14155550801"],
            description="d", inbound_config={"start_time": "08:00", "end_time": "20:00", "allowed_days": ALL_DAYS,
                                             "timezone": "UTC"}))
    did = d1.json["deployment_id"]
    go("clock +1", "POST", "/sim/v1/clock/advance", {"seconds": 1})
    d2 = go("deployment create 2", "POST", A + "/deployments", dep_body(name="Dep two", connections=[
        {"connection_id": "a", "phone_numbers": ["+14155550802", "+14155550803"]},
        {"connection_id": "b", "phone_numbers": ["+14155550804"]}]))
    did2 = d2.json["deployment_id"]
    go("deployment 409", "POST", A + "/deployments", dep_body(name="Dep three", nums=["+14155550801"]))
    go("deployment 422", "POST", A + "/deployments", dep_body(name="bad.name", connections=[]))
    go("deployment list", "GET", A + "/deployments")
    go("deployment list q", "GET", A + "/deployments?sort_by=created_at&sort_order=asc&limit=1&offset=1&search=dep")
    go("deployment list 422", "GET", A + "/deployments?limit=101&offset=-1")
    go("deployment get", "GET", A + "/deployments/" + did)
    go("deployment patch", "PATCH", A + "/deployments/" + did, {"app_version": 6, "description": None})
    go("deployment patch 422", "PATCH", A + "/deployments/" + did, {"app_id": "other"})
    go("deployment pause", "PUT", A + "/deployments/" + did2 + "/status", {"action": "pause"})
    go("deployment pause 409", "PUT", A + "/deployments/" + did2 + "/status", {"action": "pause"})
    go("deployment resume", "PUT", A + "/deployments/" + did2 + "/status", {"action": "resume"})
    body3, ct3 = multipart([("name", (None, None, "dep cohort")),
                            ("cohort_file", ("d.csv", "text/csv", "phone,uid,first\n+14155550901,x1,Al\n")),
                            ("cohort_transformation_file", ("t.json", "application/json", json.dumps(TF)))])
    u3 = go("dep upload", "POST", S + "/deployments/%s/cohorts/upload" % did, raw=body3, ctype=ct3)
    coh3 = u3.json["cohort_id"]
    wait_cohort(e, "deployments", did, coh3)
    go("dep stream", "POST", S + "/deployments/%s/cohorts/stream" % did,
       {"name": "dep stream", "users": [{"phone_number": "+14155550902"}]})
    go("dep cohort list", "GET", S + "/deployments/%s/cohorts" % did)
    go("dep cohort get", "GET", S + "/deployments/%s/cohorts/%s" % (did, coh3))
    go("dep cohort file", "GET", S + "/deployments/%s/cohorts/%s/files?file_type=cohort" % (did, coh3))
    # simulated time and what it shows
    go("inbound answered", "POST", SIM + "/inbound-calls", {"caller": "+14155550901", "dialled": "+14155550801"})
    go("inbound paused dep", "POST", SIM + "/inbound-calls", {"caller": "+14155550905", "dialled": "+14155550802"})
    go("advance", "POST", "/sim/v1/clock/advance", {"seconds": 400})
    go("campaign get active", "GET", S + "/campaigns/" + cid)
    go("campaign pause active", "PUT", S + "/campaigns/" + cid + "/status", {"action": "pause"})
    go("advance 2", "POST", "/sim/v1/clock/advance", {"to": "2026-03-02T08:30:00Z"})
    go("campaign resume active", "PUT", S + "/campaigns/" + cid + "/status", {"action": "resume"})
    go("set clock", "PUT", "/sim/v1/clock", {"now": "2026-03-02T09:00:00Z"})
    go("clock backwards", "PUT", "/sim/v1/clock", {"now": "2026-03-02T08:00:00Z"})
    go("campaign get later", "GET", S + "/campaigns/" + cid)
    go("campaign list later", "GET", S + "/campaigns")
    go("inbound list", "GET", SIM + "/inbound-calls")
    go("deliveries", "GET", SIM + "/webhook-deliveries?limit=100")
    go("activity", "GET", SIM + "/campaigns/%s/activity" % cid)
    go("chart", "GET", SIM + "/campaigns/%s/chart?width=600" % cid)
    go("key calls", "GET", SIM + "/key-service/calls")
    go("data keys", "GET", "/admin/v1/orgs/org-1/workspaces/ws-1/data-keys")
    go("rotate", "POST", "/admin/v1/orgs/org-1/workspaces/ws-1/data-keys/rotate")
    go("fault add", "POST", "/sim/v1/faults", {"kind": "status", "status": 503, "operation_id": "list_deployments",
                                               "times": 1})
    go("faults", "GET", "/sim/v1/faults")
    go("fault fires", "GET", A + "/deployments")
    go("fault spent", "GET", A + "/deployments")
    go("faults delete", "DELETE", "/sim/v1/faults")
    go("cancel", "PUT", S + "/campaigns/" + cid2 + "/status", {"action": "cancel"})
    go("deployment delete", "DELETE", A + "/deployments/" + did2)
    go("deployment delete 404", "DELETE", A + "/deployments/" + did2)
    go("journal", "GET", "/sim/v1/journal?limit=100", rewrite_ok=False)
    go("journal summary", "GET", "/sim/v1/journal/summary", rewrite_ok=False)
    go("journal delete", "DELETE", "/sim/v1/journal")
    go("ws-2 list", "GET", e.A("ws-2") + "/deployments", ws="ws-2")
    go("reset ws-2", "POST", e.SIM("ws-2") + "/reset", ws="ws-2")
    return out


def normalize(e, r):
    body = r.body
    for base in {e.url, e.platform_url}:
        body = body.replace(base.encode(), b"{BASE}")
    host = "127.0.0.1:%d" % e.port
    body = body.replace(host.encode(), b"{HOST}")
    if r.h.get("content-type", "").startswith("application/json"):
        try:
            j = json.loads(body)

            def scrub(o):
                if isinstance(o, dict):
                    return {k: (0 if k == "duration_ms" else scrub(v)) for k, v in o.items()}
                if isinstance(o, list):
                    return [scrub(x) for x in o]
                return o
            body = json.dumps(scrub(j), sort_keys=False).encode()
        except ValueError:
            pass
    headers = [(k.lower(), v) for k, v in r.headers if k.lower() != "date"]
    if any(k == "content-length" for k, _ in headers) and body != r.body:
        headers = [(k, v) for k, v in headers if k != "content-length"]
    return (r.status, r.reason, headers, body)


def run_script(plat, proxied, defect=None):
    RECV.clear("transparency")
    e = Env(plat, proxied=proxied, defect=defect)
    try:
        res = script(e)
        e.advance(600)  # deliver what is due
        time.sleep(0.2)
        norm = [(label, normalize(e, r), ok) for (label, r, ok) in res]
        evs = RECV.get("transparency")
        return norm, evs
    finally:
        e.close()


def transparency(plat):
    problems = []
    direct, ev_d = run_script(plat, proxied=False)
    prox, ev_p = run_script(plat, proxied=True)
    rew, ev_w = run_script(plat, proxied=True, defect="campaign_event_signature_body_only")

    def compare(a, b, what, rewrite):
        for (la, ra, ok), (lb, rb, _) in zip(a, b):
            if rewrite and not ok:
                continue
            if ra != rb:
                diff = []
                for i, name in enumerate(("status", "reason", "headers", "body")):
                    if ra[i] != rb[i]:
                        diff.append("%s: %r != %r" % (name, ra[i] if i < 3 else ra[i][:400], rb[i] if i < 3 else rb[i][:400]))
                problems.append("%s: %s differs: %s" % (what, la, "; ".join(diff)))
        if len(a) != len(b):
            problems.append("%s: %d vs %d answers" % (what, len(a), len(b)))

    def evkey(ev):
        return ev["body"]

    def compare_events(a, b, what, skip_campaign_sig):
        if len(a) != len(b):
            problems.append("%s: %d vs %d webhook events" % (what, len(a), len(b)))
            return
        for x, y in zip(sorted(a, key=evkey), sorted(b, key=evkey)):
            if x["body"] != y["body"]:
                problems.append("%s: event body differs: %r vs %r" % (what, x["body"][:200], y["body"][:200]))
                continue
            hx = {k: v for k, v in x["headers"].items() if k not in ("host",)}
            hy = {k: v for k, v in y["headers"].items() if k not in ("host",)}
            if skip_campaign_sig and isinstance(x["json"], dict) and "campaign_id" in x["json"]:
                hx.pop("x-webhook-signature", None)
                hy.pop("x-webhook-signature", None)
            if hx != hy:
                problems.append("%s: event headers differ: %r vs %r" % (what, hx, hy))
            if not verify_sig(y) and not (skip_campaign_sig and "campaign_id" in (y["json"] or {})):
                problems.append("%s: event signature does not verify" % what)

    compare(direct, prox, "transparent proxy", False)
    compare_events(ev_d, ev_p, "transparent proxy", False)
    compare(direct, rew, "webhook-rewriting proxy", True)
    compare_events(ev_d, ev_w, "webhook-rewriting proxy", True)
    n_events = len(ev_d)
    return problems, len(direct), n_events


# ----------------------------------------------------------------------------- (b) defects

def run_probe(plat, name, defect):
    e = Env(plat, proxied=True, defect=defect)
    try:
        PROBES[name](e)
        return "pass", ""
    except Fail as x:
        return "fail", str(x)
    except Exception as x:  # a probe that breaks is not a proof
        return "error", "%s: %s" % (type(x).__name__, "".join(traceback.format_exception_only(type(x), x)).strip())
    finally:
        RECV.clear(e.run)
        e.close()


def one_defect(plat, name):
    t = time.time()
    base = run_probe(plat, name, None)
    bad = run_probe(plat, name, name)
    ok = base[0] == "pass" and bad[0] == "fail"
    return name, ok, base, bad, time.time() - t


def main():
    global RECV, VERBOSE
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=4, help="defects run in parallel (default 4)")
    ap.add_argument("--only", help="comma-separated defect names")
    ap.add_argument("--skip-transparency", action="store_true")
    ap.add_argument("--skip-defects", action="store_true")
    ap.add_argument("--platform", help="the platform binary (default: target/debug/platform, built when missing)")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    VERBOSE = a.v
    t0 = time.time()
    plat = platform_bin(a.platform)
    RECV = Receiver()
    with open(os.path.join(HERE, "defects.json"), encoding="utf-8") as f:
        defects = json.load(f)
    failures = 0
    names = [d["name"] for d in defects]
    missing = [n for n in names if n not in PROBES]
    extra = [n for n in PROBES if n not in names]
    if missing or extra:
        print("probes missing for %s; probes without a defect: %s" % (missing, extra))
        failures += 1
    errors = sum(d["kind"] == "error" for d in defects)
    print("defects.json: %d defects, %d error, %d assumed" % (len(defects), errors, len(defects) - errors))
    if len(defects) < 40 or errors < 40:
        print("FAIL: at least 40 defects of kind error are required")
        failures += 1
    # unknown defect exits 2
    rc = subprocess.run([sys.executable, PROXY, "--upstream", "http://127.0.0.1:9", "--defect", "no_such_defect"],
                        capture_output=True).returncode
    print("unknown --defect exits %d" % rc)
    if rc != 2:
        failures += 1
    listed = subprocess.run([sys.executable, PROXY, "--list-defects"], capture_output=True).stdout
    if json.loads(listed) != defects:
        print("FAIL: --list-defects does not print defects.json")
        failures += 1
    if not a.skip_transparency:
        t = time.time()
        problems, n, nev = transparency(plat)
        if problems:
            failures += 1
            print("(a) transparency: FAIL")
            for p in problems[:40]:
                print("   ", p)
        else:
            print("(a) transparency: %d answers and %d webhook events identical directly, through the transparent "
                  "proxy and (answers, events but campaign signatures) through a webhook-rewriting proxy (%.1f s)"
                  % (n, nev, time.time() - t))
    if not a.skip_defects:
        todo = [n for n in names if n in PROBES]
        if a.only:
            want = set(a.only.split(","))
            todo = [n for n in todo if n in want]
        t = time.time()
        results = []
        with cf.ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
            futs = [ex.submit(one_defect, plat, n) for n in todo]
            for f in cf.as_completed(futs):
                name, ok, base, bad, secs = f.result()
                results.append((name, ok, base, bad, secs))
                mark = "ok  " if ok else "FAIL"
                line = "%s %-48s %4.1fs" % (mark, name, secs)
                if not ok:
                    line += "\n       transparent: %s %s\n       defective:   %s %s" % (base[0], base[1], bad[0], bad[1])
                elif a.v:
                    line += "  (%s)" % bad[1][:150]
                print(line, flush=True)
        bad_n = sum(1 for r in results if not r[1])
        failures += bad_n
        print("(b) defects: %d of %d proven (probe holds through the transparent proxy, fails through the defect) "
              "in %.1f s" % (len(results) - bad_n, len(results), time.time() - t))
    print("self-test %s in %.1f s" % ("PASSED" if failures == 0 else "FAILED", time.time() - t0))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
