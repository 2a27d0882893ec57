#!/usr/bin/env python3
"""Self-test of the round 7 proxy.

1. Transparency: the same script of requests (every resource, errors, files, HEAD, 204, the
   simulation API, webhooks) is played against a platform directly and through the proxy
   (without a defect, and with a webhook defect that changes nothing here, so that webhook
   URLs are rerouted); answers and webhook events must be equal (ids aside), and many
   concurrent requests must all be answered.
2. Every defect: its probe runs through the proxy with the defect (the break must show) and
   through the proxy without it (it must not).

Each run gets a fresh platform (in memory, simulated clock). Usage:
    python3 selftest.py [--only NAME ...] [--jobs N] [--skip-transparency] [-v]
"""

import argparse
import concurrent.futures
import csv
import datetime as dt
import hashlib
import hmac
import http.client
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
PLATFORM = os.path.join(ROOT, "target", "debug", "platform")
PROXY = os.path.join(HERE, "proxy.py")
SECRET = "whsec_test"
K1, K2 = "sk-test-1", "sk-test-2"
UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 2, 8, 0, 0, 123000, tzinfo=UTC)  # a Monday
VERBOSE = False


def log(*a):
    if VERBOSE:
        print(*a, file=sys.stderr, flush=True)


def ts(v):
    return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (v.microsecond // 1000)


def parse_ts(s):
    s = re.sub(r"(\.\d{6})\d+", r"\1", s)
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


# --------------------------------------------------------------------------------------
# webhook receiver
# --------------------------------------------------------------------------------------

class Receiver:
    def __init__(self):
        self.events = []
        self.status = 200
        self.lock = threading.Lock()
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                b = self.rfile.read(n)
                with outer.lock:
                    outer.events.append((self.path, {k.lower(): v for k, v in self.headers.items()}, b))
                st = outer.status
                self.send_response(st)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def url(self, path="/hook"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def parsed(self, kind=None):
        out = []
        with self.lock:
            evs = list(self.events)
        for path, h, b in evs:
            j = json.loads(b)
            k = "outbound" if "channel_info" in j else "campaign" if "campaign_id" in j else "deployment"
            if kind is None or kind == k:
                out.append((j, h, b, path))
        return out

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def signature_ok(h, b):
    t = h.get("x-webhook-timestamp", "")
    want = hmac.new(SECRET.encode(), t.encode() + b"." + b, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, h.get("x-webhook-signature", ""))


# --------------------------------------------------------------------------------------
# a platform, optionally behind the proxy
# --------------------------------------------------------------------------------------

class R:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        try:
            self.json = json.loads(body) if body else None
        except Exception:
            self.json = None

    @property
    def ok(self):
        return 200 <= self.status < 300

    def __repr__(self):
        return "R(%s, %r)" % (self.status, self.body[:300])


class Stack:
    def __init__(self, defect=None, direct=False):
        self.tmp = tempfile.mkdtemp(prefix="r7st-")
        ready = os.path.join(self.tmp, "ready.json")
        self.mock_log = open(os.path.join(self.tmp, "mock.log"), "w")
        self.mock = subprocess.Popen(
            [PLATFORM, "serve", "--clock", "simulated", "--database", ":memory:",
             "--api-key", "org-1/ws-1=sk-test-1", "--api-key", "org-1/ws-2=sk-test-2",
             "--listen", "127.0.0.1:0", "--seed", "42",
             "--sim-start", "2026-03-02T08:00:00.123456789Z", "--webhook-secret", SECRET,
             "--ready-file", ready],
            stdout=self.mock_log, stderr=subprocess.STDOUT)
        self.proxy = None
        self.recv = Receiver()
        deadline = time.time() + 30
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if time.time() > deadline or self.mock.poll() is not None:
                self.close()
                raise RuntimeError("the platform did not start")
            time.sleep(0.02)
        self.mock_url = json.load(open(ready))["url"]
        if direct:
            self.url = self.mock_url
        else:
            cmd = [sys.executable, PROXY, "--upstream", self.mock_url, "--listen", "127.0.0.1:0",
                   "--webhook-secret", SECRET]
            if defect:
                cmd += ["--defect", defect]
            self.proxy_err = open(os.path.join(self.tmp, "proxy.log"), "w")
            self.proxy = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.proxy_err)
            line = self.proxy.stdout.readline()
            port = json.loads(line)["port"]
            self.url = "http://127.0.0.1:%d" % port
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def close(self):
        for p in (self.proxy, self.mock):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.proxy is not None and self.proxy.stdout:
            self.proxy.stdout.close()
        self.recv.close()
        self.mock_log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- http -------------------------------------------------------------------------
    def req(self, method, path, body=None, key=K1, headers=None, raw=None, ctype="application/json"):
        c = http.client.HTTPConnection(self.host, self.port, timeout=120)
        h = {}
        if key:
            h["X-API-Key"] = key
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = ctype
        if headers:
            h.update(headers)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        b = r.read()
        hd = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return R(r.status, hd, b)

    # ---- paths ------------------------------------------------------------------------
    @staticmethod
    def C(ws="ws-1"):
        return "/api/scheduling/v1/orgs/org-1/workspaces/%s/campaigns" % ws

    @staticmethod
    def D(ws="ws-1"):
        return "/api/app-authoring/v1/orgs/org-1/workspaces/%s/deployments" % ws

    @staticmethod
    def DC(did, ws="ws-1"):
        return "/api/scheduling/v1/orgs/org-1/workspaces/%s/deployments/%s/cohorts" % (ws, did)

    @staticmethod
    def O(ws="ws-1"):
        return "/api/outbounds/v1/orgs/org-1/workspaces/%s/outbounds" % ws

    def now(self):
        return parse_ts(self.req("GET", "/sim/v1/clock").json["now"])

    def advance(self, seconds):
        r = self.req("POST", "/sim/v1/clock/advance", {"seconds": seconds})
        assert r.status == 200, r
        time.sleep(0.3)  # let the last deliveries land
        return r.json

    # ---- builders ---------------------------------------------------------------------
    def campaign_body(self, name="camp one", start_in=300, dur=2 * 86400, tz="UTC",
                      days=None, window=("00:00", "23:59"), rate=1, conns=None, retry=None,
                      description=None, webhook=True):
        st = self.now() + dt.timedelta(seconds=start_in)
        b = {"name": name, "start_timestamp": ts(st), "end_timestamp": ts(st + dt.timedelta(seconds=dur)),
             "allowed_schedule": {"timezone": tz, "allowed_days": days or ["Monday", "Tuesday", "Wednesday",
                                                                         "Thursday", "Friday", "Saturday",
                                                                         "Sunday"],
                                  "allowed_start_time": window[0], "allowed_end_time": window[1]},
             "app_config": {"app_id": "app-1", "app_version": 3, "attempts_per_second": rate,
                            "connection_configs": conns or [
                                {"connection_id": "conn-a", "phone_numbers": ["+14155550200", "+14155550201"], "weight": 3},
                                {"connection_id": "conn-b", "phone_numbers": ["+14155550202"], "weight": 1}],
                            "retry_config": retry if retry is not None else {
                                "max_retries": 2, "retry_on": ["busy", "no_answer", "failed"],
                                "threshold_seconds": 10, "retry_interval_minutes": 1}}}
        if description is not None:
            b["description"] = description
        if webhook:
            b["app_config"]["webhook_config"] = {"url": self.recv.url("/camp?x=1"), "metadata": {"k": "v"}}
        return b

    def create_campaign(self, ws="ws-1", key=K1, **kw):
        r = self.req("POST", self.C(ws), self.campaign_body(**kw), key=key)
        assert r.status == 200, r
        return r.json

    def deployment_body(self, name="dep one", numbers=("+14155550900",), inbound=None, description=None, conns=None):
        b = {"name": name, "app_id": "app-1", "app_version": 2,
             "connection_configs": conns or [{"connection_id": "conn-1", "phone_numbers": list(numbers)}]}
        if inbound is not None:
            b["inbound_config"] = inbound
        if description is not None:
            b["description"] = description
        return b

    def create_deployment(self, ws="ws-1", key=K1, **kw):
        r = self.req("POST", self.D(ws), self.deployment_body(**kw), key=key)
        assert r.status == 200, r
        return r.json

    def upload(self, parent, csv_text, name="coh one", category=None, transform=None, key=K1):
        tr = transform or {"phone_number": {"column_name": "phone", "country_code": "US"},
                           "user_identifier": {"column_name": "uid"},
                           "app_variables": {"name": {"column_name": "name"}}}
        fields = [("name", None, None, name.encode())]
        if category:
            fields.append(("cohort_category", None, None, category.encode()))
        fields.append(("cohort_file", "users.csv", "text/csv", csv_text.encode()))
        fields.append(("cohort_transformation_file", "t.json", "application/json", json.dumps(tr).encode()))
        body, ct = multipart(fields)
        return self.req("POST", parent + "/cohorts/upload", raw=body, headers={"Content-Type": ct}, key=key)

    def wait_cohort(self, parent, cid, key=K1):
        deadline = time.time() + 20
        while True:
            r = self.req("GET", "%s/cohorts/%s" % (parent, cid), key=key)
            if r.status != 200 or r.json.get("status") != "processing" or time.time() > deadline:
                return r
            time.sleep(0.05)

    def stream(self, parent, n=None, users=None, name="stream one", key=K1, **extra):
        users = users if users is not None else [
            {"phone_number": "+1415555%04d" % (1000 + i), "user_identifier": "u%d" % i,
             "app_variables": {"name": "N%d" % i}} for i in range(n)]
        body = {"name": name, "users": users}
        body.update(extra)
        return self.req("POST", parent + "/cohorts/stream", body, key=key)

    def outbound_body(self, webhook=True, metadata=None):
        b = {"app_config": {"app_id": "app-1", "app_version": 3,
                            "connection_config": {"connection_id": "c1", "agent_phone_number": "+14155550100"},
                            "agent_variables": {"a": 1},
                            "app_overrides": {"initial_bot_message": "hi"}},
             "user_config": {"user_phone_number": "+14155550123"}}
        if webhook:
            b["webhook_config"] = {"url": self.recv.url("/out?y=2"), "metadata": metadata or {"m": "v"}}
        return b


def multipart(fields):
    bd = "r7" + uuid.uuid4().hex
    out = b""
    for name, fn, ct, data in fields:
        out += b"--" + bd.encode() + b"\r\n"
        if fn:
            out += ('Content-Disposition: form-data; name="%s"; filename="%s"\r\n' % (name, fn)).encode()
        else:
            out += ('Content-Disposition: form-data; name="%s"\r\n' % name).encode()
        if ct:
            out += ("Content-Type: %s\r\n" % ct).encode()
        out += b"\r\n" + data + b"\r\n"
    out += b"--" + bd.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + bd


def users_csv(n, first=300, bad=0, crlf=False):
    nl = "\r\n" if crlf else "\n"
    rows = ["phone,uid,name"]
    rows += ["+1415555%04d,u%d,N%d" % (first + i, i, i) for i in range(n)]
    rows += ["12345%d,bad%d,B%d" % (i, i, i) for i in range(bad)]
    return nl.join(rows) + nl


# --------------------------------------------------------------------------------------
# transparency
# --------------------------------------------------------------------------------------

def transparency_script(s):
    """Plays a script of requests; returns a list of (label, status, content-type, extra headers, body)."""
    obs = []

    def rec(label, r):
        extra = {k: r.headers.get(k) for k in ("content-disposition", "allow", "retry-after") if k in r.headers}
        obs.append((label, r.status, r.headers.get("content-type"), extra, r.body))
        return r

    D, C, O = s.D(), s.C(), s.O()
    rec("dep list empty", s.req("GET", D))
    d1 = rec("dep create 1", s.req("POST", D, s.deployment_body(
        name="dep one", description="first", inbound={"start_time": "09:00", "end_time": "17:00",
                                                        "allowed_days": ["monday", "Tuesday"],
                                                        "timezone": "America/New_York"}))).json
    rec("dep create 2", s.req("POST", D, s.deployment_body(name="dep two", conns=[
        {"connection_id": "a", "phone_numbers": ["+14155550901"]},
        {"connection_id": "b", "phone_numbers": ["+14155550902", "+14155550903"]}])))
    rec("dep create 3", s.req("POST", D, s.deployment_body(name="other", numbers=("+14155550904",))))
    rec("dep create 422", s.req("POST", D, {"name": "bad.name" * 10, "app_id": "", "app_version": 0,
                                            "connection_configs": []}))
    rec("dep create 415", s.req("POST", D, s.deployment_body(name="x"), ctype="text/plain"))
    for q in ("?limit=2", "?limit=2&offset=2", "?search=dep&limit=1", "?sort_by=name&sort_order=asc",
              "?search=DEP&sort_by=created_at&sort_order=desc&limit=1&offset=1", "?limit=0", "?limit=101",
              "?offset=-1", "?limit=100"):
        rec("dep list " + q, s.req("GET", D + q))
    did = d1["deployment_id"]
    rec("dep get", s.req("GET", D + "/" + did))
    rec("dep get trailing slash", s.req("GET", D + "/" + did + "/"))
    rec("dep head", s.req("HEAD", D + "/" + did))
    rec("dep patch", s.req("PATCH", D + "/" + did, {"app_version": 4, "description": None}))
    rec("dep patch 2", s.req("PATCH", D + "/" + did, {"inbound_config": {
        "start_time": "08:00", "end_time": "18:00", "allowed_days": ["Wednesday"], "timezone": "Asia/Tokyo"}}))
    rec("dep patch app_id", s.req("PATCH", D + "/" + did, {"app_id": "another"}))
    rec("dep pause", s.req("PUT", D + "/" + did + "/status", {"action": "pause"}))
    rec("dep pause again", s.req("PUT", D + "/" + did + "/status", {"action": "pause"}))
    rec("dep resume", s.req("PUT", D + "/" + did + "/status", {"action": "resume"}))
    rec("dep no key", s.req("GET", D, key=None))
    rec("dep other ws key", s.req("GET", D + "/" + did, key=K2))
    rec("dep ws-2 list", s.req("GET", s.D("ws-2"), key=K2))
    rec("dep method", s.req("POST", D + "/" + did, {}))
    # deployment cohorts
    up = rec("dep cohort upload", s.upload(s.D().replace("app-authoring", "scheduling") + "/" + did,
                                            users_csv(3, first=700, bad=1, crlf=True)))
    dcp = s.DC(did)
    dcoh = up.json["cohort_id"]
    s.wait_cohort(dcp[: -len("/cohorts")], dcoh)
    rec("dep cohort get", s.req("GET", dcp + "/" + dcoh))
    rec("dep cohort list", s.req("GET", dcp))
    rec("dep cohort rejected", s.req("GET", dcp + "/" + dcoh + "/files?file_type=rejected_records"))
    rec("dep cohort file", s.req("GET", dcp + "/" + dcoh + "/files?file_type=cohort"))
    rec("dep cohort stream", s.stream(dcp[: -len("/cohorts")], users=[
        {"phone_number": "07700900123"}, {"phone_number": "+14155550777", "app_variables": {"q": [1, 2]}}],
        country_code="GB"))
    # outbound
    rec("outbound", s.req("POST", O, s.outbound_body()))
    rec("outbound no webhook", s.req("POST", O, s.outbound_body(webhook=False)))
    rec("outbound 422", s.req("POST", O, {"app_config": {"connection_config": {}}, "user_config": {}}))
    rec("outbound bad json", s.req("POST", O, raw=b"{not json", headers={"Content-Type": "application/json"}))
    # campaigns
    c1 = rec("camp create", s.req("POST", C, s.campaign_body(description="desc one"))).json
    cid = c1["campaign_id"]
    c2 = rec("camp create 2", s.req("POST", C, s.campaign_body(name="camp two", tz="Asia/Kolkata",
                                                                 window=("09:00", "17:30"),
                                                                 days=["Monday"]))).json
    rec("camp create 422", s.req("POST", C, s.campaign_body(start_in=60, rate=600)))
    rec("camp list", s.req("GET", C))
    rec("camp list q", s.req("GET", C + "?search=camp&limit=1&sort_by=name&sort_order=asc"))
    rec("camp list status", s.req("GET", C + "?campaign_status=scheduled&search=two"))
    rec("camp get", s.req("GET", C + "/" + cid))
    rec("camp get 2", s.req("GET", C + "/" + c2["campaign_id"]))
    rec("camp patch", s.req("PATCH", C + "/" + cid, {"description": "changed", "app_config": {
        "retry_config": {"max_retries": 1}, "attempts_per_second": 2}}))
    rec("camp patch start", s.req("PATCH", C + "/" + cid, {"start_timestamp": ts(s.now() + dt.timedelta(seconds=999))}))
    rec("camp pause", s.req("PUT", C + "/" + cid + "/status", {"action": "pause"}))
    up = rec("camp upload (paused)", s.upload(C + "/" + cid, 'phone,uid,name\r\n"+1 415 555 0301",u1,"N, one"\r\n'
                                                             '+14155550302,u2,"multi\nline"\r\n12,u3,x\r\n,u4,y\r\n',
                                               category="cohort"))
    coh = up.json["cohort_id"]
    rec("camp cohort get", s.wait_cohort(C + "/" + cid, coh))
    rec("camp resume", s.req("PUT", C + "/" + cid + "/status", {"action": "resume"}))
    rec("camp cohort list", s.req("GET", C + "/" + cid + "/cohorts?limit=5"))
    for ft in ("rejected_records", "cohort", "cohort_transformation", "bogus"):
        rec("camp cohort file " + ft, s.req("GET", C + "/" + cid + "/cohorts/" + coh + "/files?file_type=" + ft))
    rec("camp cohort other parent", s.req("GET", C + "/" + c2["campaign_id"] + "/cohorts/" + coh))
    rec("camp stream", s.stream(C + "/" + cid, n=5))
    rec("camp stream stop", s.stream(C + "/" + cid, users=[{"phone_number": "+14155551002"}],
                                     name="stops", cohort_category="stop_file"))
    rec("camp stream 422", s.stream(C + "/" + cid, users=[]))
    rec("camp cancel 2", s.req("PUT", C + "/" + c2["campaign_id"] + "/status", {"action": "cancel"}))
    rec("camp resume cancelled", s.req("PUT", C + "/" + c2["campaign_id"] + "/status", {"action": "resume"}))
    rec("camp upload cancelled", s.upload(C + "/" + c2["campaign_id"], users_csv(1)))
    # time moves
    rec("advance", s.req("POST", "/sim/v1/clock/advance", {"seconds": 3 * 3600}))
    time.sleep(0.5)
    rec("camp get after", s.req("GET", C + "/" + cid))
    rec("camp list after", s.req("GET", C + "?sort_order=asc"))
    rec("deliveries", s.req("GET", "/sim/v1/orgs/org-1/workspaces/ws-1/webhook-deliveries?limit=100"))
    rec("inbound", s.req("POST", "/sim/v1/orgs/org-1/workspaces/ws-1/inbound-calls",
                         {"caller": "+14155550701", "dialled": "+14155550901"}))
    rec("dep delete", s.req("DELETE", D + "/" + did))
    rec("dep delete again", s.req("DELETE", D + "/" + did))
    rec("dep get deleted", s.req("GET", D + "/" + did))
    rec("unknown route", s.req("GET", "/api/nothing/here"))
    rec("healthz", s.req("GET", "/healthz", key=None))
    events = sorted((b, p, h.get("x-webhook-timestamp"), signature_ok(h, b)) for j, h, b, p in s.recv.parsed())
    obs.append(("events", len(events), None, {}, json.dumps([[e[0].decode(), e[1], e[2], e[3]] for e in events]).encode()))
    return obs


ID_RX = re.compile(r"\b(camp|dep|coh|int|whd|call)-[0-9a-z]{20}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def normalise(obs, s):
    ids = {}

    def idrepl(m):
        return ids.setdefault(m.group(0), "ID%d" % len(ids))

    out = []
    for label, status, ctype, extra, body in obs:
        text = body.decode("utf-8", "replace")
        text = text.replace(s.url, "BASE").replace("127.0.0.1:%d" % s.port, "BASE")
        text = text.replace("127.0.0.1:%d" % s.recv.port, "RECV")
        text = ID_RX.sub(idrepl, text)
        extra = {k: ID_RX.sub(idrepl, v) for k, v in extra.items()}
        out.append((label, status, ctype, extra, text))
    return out


def check_transparency():
    failures = []
    with Stack(direct=True) as s:
        ref = normalise(transparency_script(s), s)
    for defect in (None, "webhook_failure_not_retried"):
        with Stack(defect=defect) as s:
            got = normalise(transparency_script(s), s)
            # concurrency: many requests at once, all answered
            results = []

            def one(i):
                r = s.req("GET", s.D() + "?limit=%d" % (1 + i % 50))
                results.append(r.status)
            threads = [threading.Thread(target=one, args=(i,)) for i in range(80)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if len(results) != 80 or set(results) != {200}:
                failures.append("concurrency (%s): %d answers, statuses %s" % (defect, len(results), set(results)))
        for a, b in zip(ref, got):
            if a != b:
                failures.append("transparency (%s) %s:\n  direct: %r\n  proxy:  %r" % (defect, a[0], a[1:], b[1:]))
        if len(ref) != len(got):
            failures.append("transparency (%s): %d vs %d observations" % (defect, len(ref), len(got)))
    # events: the reference must have seen events, all signed correctly
    ev = [o for o in ref if o[0] == "events"][0]
    if ev[1] < 3:
        failures.append("transparency: only %d webhook events in the script" % ev[1])
    if not all(e[3] for e in json.loads(ev[4])):
        failures.append("transparency: a webhook signature did not verify")
    return failures


# --------------------------------------------------------------------------------------
# probes: each returns True when the defect's break is visible
# --------------------------------------------------------------------------------------

PROBES = {}


def probe(name):
    def deco(f):
        PROBES[name] = f
        return f
    return deco


def camp_run(s, n=20, advance=3 * 3600, **kw):
    c = s.create_campaign(**kw)
    r = s.stream(s.C() + "/" + c["campaign_id"], n=n)
    assert r.status == 200, r
    s.advance(advance)
    return c, s.recv.parsed("campaign")


def outbound_event(s, status=200, advance=600):
    s.recv.status = status
    r = s.req("POST", s.O(), s.outbound_body(metadata={"m": "v"}))
    assert r.status == 200, r
    s.advance(advance)
    evs = s.recv.parsed("outbound")
    assert evs, "no outbound event"
    return r.json, evs


@probe("outbound_loc_drops_parent")
def _(s):
    b = s.outbound_body()
    del b["app_config"]["connection_config"]["agent_phone_number"]
    r = s.req("POST", s.O(), b)
    assert r.status == 422, r
    return ["body", "app_config", "connection_config", "agent_phone_number"] not in [d["loc"] for d in r.json["detail"]]


@probe("outbound_app_version_defaulted")
def _(s):
    b = s.outbound_body()
    del b["app_config"]["app_version"]
    return s.req("POST", s.O(), b).status == 200


@probe("outbound_event_metadata_dropped")
def _(s):
    ans, evs = outbound_event(s)
    j, h, b, p = evs[0]
    assert j["webhook_config"]["url"] == s.recv.url("/out?y=2") and p == "/out?y=2" and signature_ok(h, b)
    return j["webhook_config"].get("metadata") != {"m": "v"}


@probe("outbound_event_attempt_id_mismatch")
def _(s):
    ans, evs = outbound_event(s)
    assert signature_ok(evs[0][1], evs[0][2])
    return evs[0][0]["attempt_id"] != ans["attempt_id"]


@probe("campaign_create_description_null")
def _(s):
    c = s.create_campaign(description="hello there")
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    assert g["description"] == "hello there"
    return c.get("description") != "hello there"


def create_status(s, **kw):
    return s.req("POST", s.C(), s.campaign_body(**kw)).status


@probe("campaign_start_min_accepts_early")
def _(s):
    assert create_status(s, start_in=121) == 200
    return create_status(s, start_in=100) == 200


@probe("campaign_start_max_accepts_late")
def _(s):
    assert create_status(s, start_in=7 * 86400) == 200
    return create_status(s, start_in=7 * 86400 + 600) == 200


@probe("campaign_end_min_accepts_short")
def _(s):
    assert create_status(s, dur=120) == 200
    return create_status(s, dur=100) == 200


@probe("campaign_end_max_refuses_last_hour")
def _(s):
    assert create_status(s, dur=30 * 86400 + 1) == 422
    return create_status(s, dur=30 * 86400 - 600) == 422


@probe("campaign_rate_min_accepts_low")
def _(s):
    assert create_status(s, rate=0.1) == 200
    return create_status(s, rate=0.07) == 200


@probe("campaign_rate_max_refuses_500")
def _(s):
    assert create_status(s, rate=500.5) == 422
    return create_status(s, rate=500) == 422


@probe("campaign_threshold_accepts_1201")
def _(s):
    rc = {"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 1201}
    return create_status(s, retry=rc) == 200


@probe("campaign_description_accepts_151")
def _(s):
    assert create_status(s, description="d" * 150) == 200
    return create_status(s, description="d" * 151) == 200


@probe("campaign_max_retries_plus_one")
def _(s):
    rc = {"max_retries": 1, "retry_on": ["busy", "no_answer", "failed", "provider_error", "internal_error"],
          "threshold_seconds": 10, "retry_interval_minutes": 1}
    c, evs = camp_run(s, retry=rc, rate=2)
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    assert g["app_config"]["retry_config"]["max_retries"] == 1
    assert evs
    return max(e[0]["retry_attempt"] for e in evs) > 1


@probe("campaign_rate_doubled")
def _(s):
    c, evs = camp_run(s, n=12, rate=0.5, retry={"max_retries": 0})
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    assert g["app_config"]["attempts_per_second"] == 0.5
    times = sorted(parse_ts(e[0]["executed_at"]) for e in evs)
    assert len(times) == 12
    return min((b - a).total_seconds() for a, b in zip(times, times[1:])) < 1.9


@probe("campaign_weights_ignored")
def _(s):
    conns = [{"connection_id": "A", "phone_numbers": ["+14155550210"], "weight": 3},
             {"connection_id": "B", "phone_numbers": ["+14155550211"], "weight": 1}]
    c, evs = camp_run(s, n=12, conns=conns, retry={"max_retries": 0})
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    assert [x["weight"] for x in g["app_config"]["connection_configs"]] == [3, 1]
    a = sum(1 for e in evs if e[0]["agent_phone_number"] == "+14155550210")
    assert len(evs) == 12
    return not (8 <= a <= 10)


@probe("campaign_short_duration_not_retried")
def _(s):
    rc = {"max_retries": 2, "retry_on": ["short_duration"], "threshold_seconds": 1200, "retry_interval_minutes": 1}
    c, evs = camp_run(s, retry=rc)
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    assert "short_duration" in g["app_config"]["retry_config"]["retry_on"]
    shorts = [e[0] for e in evs if e[0]["completion_status"] == "partial" and e[0]["retry_attempt"] < 2]
    assert shorts, "no short call"
    return any(e["next_action_status"] is None for e in shorts)


@probe("campaign_window_end_minute_early")
def _(s):
    c = s.create_campaign(window=("09:00", "09:03"), days=["Monday"], rate=1, retry={"max_retries": 0})
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    assert g["allowed_schedule"]["allowed_end_time"] == "09:03"
    assert s.stream(s.C() + "/" + c["campaign_id"], n=400).status == 200
    s.advance(4 * 3600)
    evs = s.recv.parsed("campaign")
    assert evs
    last = max(parse_ts(e[0]["executed_at"]) for e in evs)
    return last < dt.datetime(2026, 3, 2, 9, 2, 0, tzinfo=UTC)


@probe("campaign_stop_file_ignored")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    r = s.upload(p, users_csv(3, first=301))
    assert s.wait_cohort(p, r.json["cohort_id"]).json["status"] == "completed"
    r = s.upload(p, "phone,uid,name\n+14155550302,x,y\n", name="stops", category="stop_file")
    got = s.wait_cohort(p, r.json["cohort_id"]).json
    assert got["status"] == "completed" and got["cohort_category"] == "stop_file", got
    s.advance(3 * 3600)
    evs = s.recv.parsed("campaign")
    assert evs
    return any(e[0]["user_phone_number"] == "+14155550302" for e in evs)


@probe("campaign_list_status_filter_dropped_with_search")
def _(s):
    s.create_campaign(name="alpha one")
    c2 = s.create_campaign(name="alpha two")
    s.create_campaign(name="beta")
    assert s.req("PUT", s.C() + "/" + c2["campaign_id"] + "/status", {"action": "cancel"}).status == 200
    a = s.req("GET", s.C() + "?campaign_status=cancelled").json
    assert [i["name"] for i in a["items"]] == ["alpha two"]
    r = s.req("GET", s.C() + "?campaign_status=cancelled&search=alpha").json
    return [i["name"] for i in r["items"]] != ["alpha two"] or r["total"] != 1


@probe("campaign_list_default_order_asc")
def _(s):
    s.create_campaign(name="first")
    s.advance(1)
    s.create_campaign(name="second")
    assert [i["name"] for i in s.req("GET", s.C() + "?sort_order=asc").json["items"]] == ["first", "second"]
    return [i["name"] for i in s.req("GET", s.C()).json["items"]] != ["second", "first"]


@probe("campaign_get_times_local_as_utc")
def _(s):
    b = s.campaign_body(tz="Asia/Tokyo", window=("09:00", "18:00"))
    c = s.req("POST", s.C(), b).json
    g = s.req("GET", s.C() + "/" + c["campaign_id"]).json
    return parse_ts(g["start_timestamp"]) != parse_ts(b["start_timestamp"]) or \
        parse_ts(g["end_timestamp"]) != parse_ts(b["end_timestamp"])


@probe("campaign_get_status_active_after_end")
def _(s):
    c = s.create_campaign(start_in=121, dur=120)
    s.advance(600)
    lst = s.req("GET", s.C()).json["items"][0]
    assert lst["status"] == "ended"
    return s.req("GET", s.C() + "/" + c["campaign_id"]).json["status"] != "ended"


@probe("campaign_patch_retry_config_reset")
def _(s):
    c = s.create_campaign(retry={"max_retries": 3, "retry_on": ["busy"], "threshold_seconds": 30,
                                 "retry_interval_minutes": 5})
    r = s.req("PATCH", s.C() + "/" + c["campaign_id"], {"app_config": {"retry_config": {"max_retries": 2}}})
    assert r.status == 200, r
    rc = s.req("GET", s.C() + "/" + c["campaign_id"]).json["app_config"]["retry_config"]
    assert rc["max_retries"] == 2
    return (rc["retry_on"], rc["threshold_seconds"], rc["retry_interval_minutes"]) != (["busy"], 30, 5)


@probe("campaign_patch_name_not_stored")
def _(s):
    c = s.create_campaign()
    r = s.req("PATCH", s.C() + "/" + c["campaign_id"], {"name": "renamed"})
    assert r.status == 200 and r.json["name"] == "renamed"
    return s.req("GET", s.C() + "/" + c["campaign_id"]).json["name"] != "renamed"


@probe("campaign_patch_start_change_ignored")
def _(s):
    b = s.campaign_body()
    c = s.req("POST", s.C(), b).json
    same = s.req("PATCH", s.C() + "/" + c["campaign_id"], {"start_timestamp": b["start_timestamp"]})
    assert same.status == 200
    new = ts(parse_ts(b["start_timestamp"]) + dt.timedelta(seconds=60))
    return s.req("PATCH", s.C() + "/" + c["campaign_id"], {"start_timestamp": new}).ok


@probe("campaign_patch_active_allowed")
def _(s):
    c = s.create_campaign(start_in=121)
    s.advance(130)
    assert s.req("GET", s.C() + "/" + c["campaign_id"]).json["status"] == "active"
    return s.req("PATCH", s.C() + "/" + c["campaign_id"], {"name": "changed"}).ok


@probe("campaign_pause_scheduled_refused")
def _(s):
    c = s.create_campaign()
    return s.req("PUT", s.C() + "/" + c["campaign_id"] + "/status", {"action": "pause"}).status != 200


@probe("campaign_resume_cancelled_lies")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    assert s.req("PUT", p + "/status", {"action": "cancel"}).status == 200
    r = s.req("PUT", p + "/status", {"action": "resume"})
    assert s.req("GET", p).json["status"] == "cancelled"
    return r.ok


@probe("cohort_upload_answers_completed")
def _(s):
    c = s.create_campaign()
    r = s.upload(s.C() + "/" + c["campaign_id"], users_csv(2))
    assert r.status == 200
    return r.json["status"] != "processing"


@probe("cohort_upload_paused_campaign_refused")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    assert s.upload(p, users_csv(2)).status == 200
    assert s.req("PUT", p + "/status", {"action": "pause"}).status == 200
    return s.upload(p, users_csv(2, first=400)).status != 200


@probe("cohort_rejected_count_minus_one")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    r = s.upload(p, users_csv(3, bad=2))
    g = s.wait_cohort(p, r.json["cohort_id"]).json
    assert g["result"]["valid_records"] == 3
    return g["result"]["rejected_records"] != 2


@probe("cohort_rejected_file_first_row_only")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    r = s.upload(p, users_csv(3, bad=2))
    coh = r.json["cohort_id"]
    assert s.wait_cohort(p, coh).json["result"]["rejected_records"] == 2
    f = s.req("GET", p + "/cohorts/" + coh + "/files?file_type=rejected_records")
    assert f.status == 200
    rows = list(csv.reader(io.StringIO(f.body.decode())))
    assert rows[0][-1] == "rejected_reason"
    return len(rows) - 1 != 2


@probe("cohort_stream_source_type_upload")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    r = s.stream(p, n=2)
    lst = s.req("GET", p + "/cohorts").json["items"]
    return r.json["source_type"] != "stream" or lst[0]["source_type"] != "stream"


@probe("cohort_stream_country_code_ignored")
def _(s):
    c = s.create_campaign()
    r = s.stream(s.C() + "/" + c["campaign_id"], users=[{"phone_number": "07700900123"},
                                                        {"phone_number": "+14155550100"}], country_code="GB")
    assert r.status == 200
    return r.json["result"]["rejected_records"] != 0


@probe("cohort_stream_1000_refused")
def _(s):
    c = s.create_campaign()
    return s.stream(s.C() + "/" + c["campaign_id"], n=1000).status != 200


@probe("cohort_stream_1001_accepted")
def _(s):
    c = s.create_campaign()
    return s.stream(s.C() + "/" + c["campaign_id"], n=1001).status == 200


@probe("cohort_list_newest_first")
def _(s):
    c = s.create_campaign()
    p = s.C() + "/" + c["campaign_id"]
    s.stream(p, n=1, name="older")
    s.stream(p, n=1, name="newer")
    return [i["name"] for i in s.req("GET", p + "/cohorts").json["items"]] != ["older", "newer"]


@probe("cohort_get_any_parent")
def _(s):
    c1, c2 = s.create_campaign(name="one"), s.create_campaign(name="two")
    coh = s.stream(s.C() + "/" + c1["campaign_id"], n=2).json["cohort_id"]
    assert s.req("GET", s.C() + "/" + c1["campaign_id"] + "/cohorts/" + coh).status == 200
    return s.req("GET", s.C() + "/" + c2["campaign_id"] + "/cohorts/" + coh).status == 200


@probe("deployment_cohort_upload_paused_refused")
def _(s):
    d = s.create_deployment()
    assert s.req("PUT", s.D() + "/" + d["deployment_id"] + "/status", {"action": "pause"}).status == 200
    parent = s.DC(d["deployment_id"])[: -len("/cohorts")]
    return s.upload(parent, users_csv(2)).status != 200


@probe("deployment_cohort_total_excludes_rejected")
def _(s):
    d = s.create_deployment()
    parent = s.DC(d["deployment_id"])[: -len("/cohorts")]
    r = s.upload(parent, users_csv(2, bad=1))
    g = s.wait_cohort(parent, r.json["cohort_id"]).json
    assert g["result"]["rejected_records"] == 1
    return g["result"]["total_records"] != 3


@probe("deployment_create_days_first_only")
def _(s):
    d = s.create_deployment(inbound={"start_time": "09:00", "end_time": "17:00",
                                     "allowed_days": ["Monday", "Tuesday"], "timezone": "UTC"})
    g = s.req("GET", s.D() + "/" + d["deployment_id"]).json
    return g["inbound_config"]["allowed_days"] != ["Monday", "Tuesday"]


@probe("deployment_name_50_refused")
def _(s):
    return s.req("POST", s.D(), s.deployment_body(name="n" * 50)).status != 200


@probe("deployment_name_51_accepted")
def _(s):
    return s.req("POST", s.D(), s.deployment_body(name="n" * 51)).status == 200


@probe("deployment_inbound_tz_utc")
def _(s):
    d = s.create_deployment(inbound={"start_time": "09:00", "end_time": "17:00",
                                     "allowed_days": ["Monday"], "timezone": "Asia/Tokyo"})
    assert s.req("GET", s.D() + "/" + d["deployment_id"]).json["inbound_config"]["timezone"] == "Asia/Tokyo"
    s.advance(2 * 3600)  # Monday 10:00 UTC = 19:00 in Tokyo
    r = s.req("POST", "/sim/v1/orgs/org-1/workspaces/ws-1/inbound-calls",
              {"caller": "+14155551111", "dialled": "+14155550900"})
    return r.json["answered"] is True


def three_deps(s, names=("match a", "match b", "match c")):
    ids = []
    for i, n in enumerate(names):
        ids.append(s.create_deployment(name=n, numbers=("+1415555090%d" % i,))["deployment_id"])
        s.advance(1)
    return ids


@probe("deployment_list_total_page_size")
def _(s):
    three_deps(s)
    return s.req("GET", s.D() + "?limit=2").json["total"] != 3


@probe("deployment_list_next_link_drops_search")
def _(s):
    three_deps(s)
    s.create_deployment(name="other", numbers=("+14155550999",))
    j = s.req("GET", s.D() + "?search=match&limit=1").json
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(j["next_page_uri"]).query)
    return q.get("search") != ["match"]


@probe("deployment_list_next_link_exact_multiple")
def _(s):
    three_deps(s, names=("a", "b"))
    return s.req("GET", s.D() + "?limit=2").json["next_page_uri"] is not None or \
        s.req("GET", s.D() + "?limit=1&offset=1").json["next_page_uri"] is not None


@probe("deployment_list_sort_order_ignored_with_search")
def _(s):
    three_deps(s, names=("srt a", "srt b"))
    assert [i["name"] for i in s.req("GET", s.D() + "?sort_by=created_at&sort_order=asc").json["items"]] == ["srt a", "srt b"]
    j = s.req("GET", s.D() + "?search=srt&sort_by=created_at&sort_order=asc").json
    return [i["name"] for i in j["items"]] != ["srt a", "srt b"]


@probe("deployment_list_phone_numbers_first_connection")
def _(s):
    s.create_deployment(conns=[{"connection_id": "a", "phone_numbers": ["+14155550901"]},
                               {"connection_id": "b", "phone_numbers": ["+14155550902"]}])
    item = s.req("GET", s.D()).json["items"][0]
    return sorted(item["phone_numbers"]) != ["+14155550901", "+14155550902"]


@probe("deployment_list_leaks_other_workspace")
def _(s):
    s.create_deployment(ws="ws-2", key=K2, name="leak two", numbers=("+14155550912",))
    mine = s.create_deployment(name="leak one", numbers=("+14155550911",))["deployment_id"]
    j = s.req("GET", s.D() + "?search=leak").json
    return [i["deployment_id"] for i in j["items"]] != [mine] or j["total"] != 1


@probe("deployment_list_limit_100_refused")
def _(s):
    return s.req("GET", s.D() + "?limit=100").status != 200


@probe("deployment_list_limit_101_accepted")
def _(s):
    return s.req("GET", s.D() + "?limit=101").status == 200


@probe("deployment_get_schedule_in_utc")
def _(s):
    d = s.create_deployment(inbound={"start_time": "09:00", "end_time": "17:00",
                                     "allowed_days": ["Monday"], "timezone": "America/New_York"})
    ic = s.req("GET", s.D() + "/" + d["deployment_id"]).json["inbound_config"]
    return (ic["start_time"], ic["end_time"]) != ("09:00", "17:00")


@probe("deployment_patch_days_union")
def _(s):
    d = s.create_deployment(inbound={"start_time": "09:00", "end_time": "17:00",
                                     "allowed_days": ["Monday"], "timezone": "UTC"})
    r = s.req("PATCH", s.D() + "/" + d["deployment_id"], {"inbound_config": {
        "start_time": "09:00", "end_time": "17:00", "allowed_days": ["Tuesday"], "timezone": "UTC"}})
    assert r.status == 200
    return s.req("GET", s.D() + "/" + d["deployment_id"]).json["inbound_config"]["allowed_days"] != ["Tuesday"]


@probe("deployment_patch_app_version_not_stored")
def _(s):
    d = s.create_deployment()
    r = s.req("PATCH", s.D() + "/" + d["deployment_id"], {"app_version": 7})
    assert r.status == 200 and r.json["app_version"] == 7
    return s.req("GET", s.D() + "/" + d["deployment_id"]).json["app_version"] != 7


@probe("deployment_patch_clears_description")
def _(s):
    d = s.create_deployment(description="keep me")
    assert s.req("PATCH", s.D() + "/" + d["deployment_id"], {"app_version": 5}).status == 200
    return s.req("GET", s.D() + "/" + d["deployment_id"]).json["description"] != "keep me"


@probe("deployment_patch_app_id_change_ignored")
def _(s):
    d = s.create_deployment()
    assert s.req("PATCH", s.D() + "/" + d["deployment_id"], {"app_id": "app-1"}).status == 200
    return s.req("PATCH", s.D() + "/" + d["deployment_id"], {"app_id": "another"}).ok


@probe("deployment_pause_answer_stale")
def _(s):
    d = s.create_deployment()
    r = s.req("PUT", s.D() + "/" + d["deployment_id"] + "/status", {"action": "pause"})
    assert r.status == 200
    assert s.req("GET", s.D() + "/" + d["deployment_id"]).json["status"] == "paused"
    return r.json["status"] != "paused"


@probe("deployment_delete_error_shape")
def _(s):
    r = s.req("DELETE", s.D() + "/dep-doesnotexist")
    assert r.status == 404
    e = (r.json or {}).get("error")
    return not (isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code")))


@probe("deployment_delete_paused_refused")
def _(s):
    d = s.create_deployment()
    assert s.req("PUT", s.D() + "/" + d["deployment_id"] + "/status", {"action": "pause"}).status == 200
    return not s.req("DELETE", s.D() + "/" + d["deployment_id"]).ok


@probe("event_retry_attempt_one_based")
def _(s):
    c, evs = camp_run(s, n=6)
    assert evs and all(signature_ok(e[1], e[2]) for e in evs)
    return min(e[0]["retry_attempt"] for e in evs) != 0


@probe("event_executed_at_call_end")
def _(s):
    c, evs = camp_run(s, n=20)
    conn = [e for e in evs if e[0]["duration"] is not None]
    assert conn, "no connected call"
    return any(parse_ts(e[0]["executed_at"]).timestamp() + e[0]["duration"] > int(e[1]["x-webhook-timestamp"]) + 2
               for e in conn)


@probe("event_short_call_completed")
def _(s):
    rc = {"max_retries": 0, "retry_on": [], "threshold_seconds": 1200}
    c, evs = camp_run(s, n=20, retry=rc)
    conn = [e[0] for e in evs if e[0]["duration"] is not None]
    assert conn
    return any(e["completion_status"] != "partial" or e["failure_reason"] != "short_duration" for e in conn)


@probe("event_agent_number_is_user")
def _(s):
    c, evs = camp_run(s, n=6)
    return any(e[0]["agent_phone_number"] not in ("+14155550200", "+14155550201", "+14155550202") for e in evs)


@probe("event_metadata_first_attempt_only")
def _(s):
    c, evs = camp_run(s, n=12)
    assert any(e[0]["retry_attempt"] > 0 for e in evs), "no retry"
    return any(e[0]["metadata"] != {"k": "v"} for e in evs)


@probe("event_signature_body_only")
def _(s):
    ans, evs = outbound_event(s)
    c, cevs = camp_run(s, n=3)
    return not all(signature_ok(e[1], e[2]) for e in evs + cevs)


@probe("webhook_failure_not_retried")
def _(s):
    ans, evs = outbound_event(s, status=500, advance=600)
    d = s.req("GET", "/sim/v1/orgs/org-1/workspaces/ws-1/webhook-deliveries").json["items"][0]
    assert d["url"] == s.recv.url("/out?y=2")
    return len(evs) == 1


@probe("auth_missing_key_reuses_last")
def _(s):
    assert s.req("GET", s.D()).status == 200
    return s.req("GET", s.D(), key=None).ok


@probe("auth_other_workspace_key_reads")
def _(s):
    d = s.create_deployment()
    c = s.create_campaign()
    assert s.req("GET", s.D("ws-2"), key=K2).status == 200
    return s.req("GET", s.D() + "/" + d["deployment_id"], key=K2).ok or \
        s.req("GET", s.C() + "/" + c["campaign_id"], key=K2).ok


# --------------------------------------------------------------------------------------
# runner
# --------------------------------------------------------------------------------------

def run_probe(name):
    """Returns None when fine, else a failure message."""
    out = {}
    for defect in (name, None):
        try:
            with Stack(defect=defect) as s:
                out[defect] = PROBES[name](s)
        except Exception as e:
            return "%s (%s): %s\n%s" % (name, "with defect" if defect else "clean", repr(e),
                                         traceback.format_exc() if VERBOSE else "")
    if out[name] is not True:
        return "%s: the break does not show through the proxy" % name
    if out[None] is not False:
        return "%s: the probe reports a break without the defect" % name
    return None


def main():
    global VERBOSE
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--skip-transparency", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    VERBOSE = a.verbose
    if not os.path.exists(PLATFORM):
        print("missing %s: build it with `cargo build -p platform`" % PLATFORM)
        return 2
    failures = []
    # the metadata: defects.json equals --list-defects, every defect has a probe
    listed = json.loads(subprocess.run([sys.executable, PROXY, "--list-defects"], capture_output=True,
                                       check=True).stdout)
    saved = json.load(open(os.path.join(HERE, "defects.json")))
    if listed != saved:
        failures.append("defects.json differs from proxy.py --list-defects")
    names = [d["name"] for d in listed]
    missing = set(names) ^ set(PROBES)
    if missing:
        failures.append("defects without probes (or probes without defects): %s" % sorted(missing))
    for d in listed:
        if d["kind"] not in ("error", "assumed") or not all(d[k] for k in ("name", "rule", "source", "what")):
            failures.append("bad entry in defects.json: %s" % d["name"])
    rc = subprocess.run([sys.executable, PROXY, "--upstream", "http://127.0.0.1:9", "--defect", "no_such"],
                        capture_output=True).returncode
    if rc != 2:
        failures.append("an unknown defect exits %s, not 2" % rc)
    t0 = time.time()
    if not a.skip_transparency and not a.only:
        tf = check_transparency()
        failures += tf
        print("transparency: %s (%.1fs)" % ("ok" if not tf else "FAILED", time.time() - t0), flush=True)
    todo = [n for n in names if not a.only or n in a.only]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(run_probe, n): n for n in todo}
        for f in concurrent.futures.as_completed(futs):
            n = futs[f]
            msg = f.result()
            print("%s %s" % ("ok  " if msg is None else "FAIL", n), flush=True)
            if msg:
                failures.append(msg)
    print("\n%d defects probed in %.1fs; %d failure(s)" % (len(todo), time.time() - t0, len(failures)))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
