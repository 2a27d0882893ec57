#!/usr/bin/env python3
"""Self-test of proxy.py against the platform mock.

    python3 selftest.py [-j JOBS] [-v] [NAME ...]

1. Transparency: the same seeded request sequence (every route: outbound,
   campaigns, cohorts and their files, deployments, lists, errors, the
   simulation API) is sent once straight to a platform and once through the
   proxy without a defect (also with --rewrite-webhooks) to a twin platform
   (same --seed and --sim-start): every answer (status, content type, body) and
   every webhook event must be the same, and every event's signature valid.
2. Each defect: its probe runs against a fresh platform behind the transparent
   proxy (the probe must see the contract kept) and against a fresh platform
   behind the proxy with the defect on (the probe must see the break).

Exit 0 when all of it holds.  Needs target/debug/platform (cargo build -p platform).
"""

import argparse
import concurrent.futures
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[4]
PLATFORM = ROOT / "target" / "debug" / "platform"
PROXY = HERE / "proxy.py"
SIM_START = "2026-03-02T08:00:00Z"  # a Monday
SECRET = "whsec_selftest_round2"
K1, K2 = "sk-test-1", "sk-test-2"
ORG, WS1, WS2 = "org-1", "ws-1", "ws-2"
ALL_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
UTC = dt.timezone.utc

sys.dont_write_bytecode = True
sys.path.insert(0, str(HERE))
import proxy as proxymod  # noqa: E402  (the defect table)


def camp_base(ws=WS1):
    return "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns" % (ORG, ws)


def dep_base(ws=WS1):
    return "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments" % (ORG, ws)


def dep_cohorts(did, ws=WS1):
    return "/api/scheduling/v1/orgs/%s/workspaces/%s/deployments/%s/cohorts" % (ORG, ws, did)


def outbound_path(ws=WS1):
    return "/api/outbounds/v1/orgs/%s/workspaces/%s/outbounds" % (ORG, ws)


def sim_ws(ws=WS1):
    return "/sim/v1/orgs/%s/workspaces/%s" % (ORG, ws)


def ts(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def pts(s):
    return dt.datetime.fromisoformat(s)


def magic(yy, area=202):
    """A telephony-sim magic number: +1 NXX 555 01YY."""
    return "+1%03d55501%02d" % (area, yy)


# --------------------------------------------------------------------------- processes

class Stack:
    """A platform (simulated clock, in memory) and, unless direct, the proxy in front."""

    def __init__(self, defect=None, direct=False, rewrite=False):
        self.tmp = tempfile.mkdtemp(prefix="round2-selftest-")
        ready = os.path.join(self.tmp, "ready.json")
        self.plat = subprocess.Popen(
            [str(PLATFORM), "serve", "--clock", "simulated", "--database", ":memory:",
             "--api-key", "%s/%s=%s" % (ORG, WS1, K1), "--api-key", "%s/%s=%s" % (ORG, WS2, K2),
             "--listen", "127.0.0.1:0", "--ready-file", ready,
             "--seed", "42", "--sim-start", SIM_START, "--webhook-secret", SECRET],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp, "platform.log"), "w"))
        deadline = time.time() + 60
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if self.plat.poll() is not None or time.time() > deadline:
                raise RuntimeError("platform did not start: " +
                                   open(os.path.join(self.tmp, "platform.log")).read()[-2000:])
            time.sleep(0.02)
        self.platform_url = json.load(open(ready))["url"].rstrip("/")
        self.proxy = None
        if direct:
            self.url = self.platform_url
            return
        cmd = [sys.executable, str(PROXY), "--upstream", self.platform_url, "--listen", "127.0.0.1:0",
               "--webhook-secret", SECRET]
        if defect:
            cmd += ["--defect", defect]
        if rewrite:
            cmd += ["--rewrite-webhooks"]
        self.proxy = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                      stderr=open(os.path.join(self.tmp, "proxy.log"), "w"), text=True)
        line = self.proxy.stdout.readline()
        try:
            port = json.loads(line)["port"]
        except Exception:
            raise RuntimeError("proxy did not start: %r %s" % (
                line, open(os.path.join(self.tmp, "proxy.log")).read()[-2000:]))
        self.url = "http://127.0.0.1:%d" % port

    def proxy_log(self):
        try:
            return open(os.path.join(self.tmp, "proxy.log")).read()
        except OSError:
            return ""

    def close(self):
        for p in (self.proxy, self.plat):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


class R:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body) if body and "json" in headers.get("content-type", "") else None
        except ValueError:
            self.json = None

    @property
    def ok(self):
        return 200 <= self.status < 300

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


class Client:
    def __init__(self, url, key=K1):
        self.url = url
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.key = key

    def req(self, method, target, obj=None, raw=None, ct=None, key="default", headers=None):
        if target.startswith("http"):
            u = urllib.parse.urlsplit(target)
            target = u.path + ("?" + u.query if u.query else "")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        h = {}
        k = self.key if key == "default" else key
        if k is not None:
            h["X-API-Key"] = k
        body = None
        if obj is not None:
            body = json.dumps(obj).encode()
            h["Content-Type"] = "application/json"
        elif raw is not None:
            body = raw
            h["Content-Type"] = ct
        h.update(headers or {})
        conn.request(method, target, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return R(r.status, {k.lower(): v for k, v in r.getheaders()}, data)

    # shortcuts
    def get(self, p, **kw):
        return self.req("GET", p, **kw)

    def post(self, p, obj=None, **kw):
        return self.req("POST", p, obj, **kw)

    def put(self, p, obj=None, **kw):
        return self.req("PUT", p, obj, **kw)

    def patch(self, p, obj=None, **kw):
        return self.req("PATCH", p, obj, **kw)

    def delete(self, p, **kw):
        return self.req("DELETE", p, **kw)

    # the simulated clock
    def now(self):
        return pts(self.get("/sim/v1/clock").json["now"])

    def advance(self, seconds=None, to=None):
        body = {"seconds": seconds} if to is None else {"to": ts(to)}
        r = self.post("/sim/v1/clock/advance", body)
        assert r.ok, r
        return r.json


class Hooks:
    """A webhook receiver that records events and checks their signatures."""

    def __init__(self):
        self.events = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                tsh = self.headers.get("x-webhook-timestamp") or ""
                sig = self.headers.get("x-webhook-signature") or ""
                mac = hmac.new(SECRET.encode(), tsh.encode() + b"." + body, hashlib.sha256).hexdigest()
                outer.events.append({"path": self.path, "body": body, "ts": tsh,
                                     "valid": hmac.compare_digest(mac, sig),
                                     "json": json.loads(body)})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/hooks" % self.srv.server_port

    def json_events(self):
        return [e["json"] for e in self.events]

    def campaign(self, cid=None):
        ev = [e for e in self.json_events() if "retry_attempt" in e and (cid is None or e["campaign_id"] == cid)]
        return sorted(ev, key=lambda e: (e["executed_at"], e["user_phone_number"]))

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class Env:
    def __init__(self, stack, defect):
        self.stack = stack
        self.defect = defect
        self.c = Client(stack.url, K1)
        self.c2 = Client(stack.url, K2)
        self._hooks = []

    def hooks(self):
        h = Hooks()
        self._hooks.append(h)
        return h

    def close(self):
        for h in self._hooks:
            h.close()

    def check_signatures(self):
        if self.defect in ("webhook_signature_body_only", "webhook_signature_not_over_sent_bytes"):
            return
        for h in self._hooks:
            for e in h.events:
                assert e["valid"], "an event arrived with a bad signature: %r" % e["body"][:200]


# --------------------------------------------------------------------------- scenario helpers

def campaign_body(c, name="probe", start_in=300, duration=86400, aps=1, ccs=None, retry=None,
                  hook=None, schedule=None, description=None, start=None, end=None):
    now = c.now()
    start = start or now + dt.timedelta(seconds=start_in)
    end = end or start + dt.timedelta(seconds=duration)
    body = {
        "name": name,
        "start_timestamp": ts(start) if isinstance(start, dt.datetime) else start,
        "end_timestamp": ts(end) if isinstance(end, dt.datetime) else end,
        "allowed_schedule": schedule or {"timezone": "UTC", "allowed_days": ALL_DAYS,
                                         "allowed_start_time": "00:00", "allowed_end_time": "23:59"},
        "app_config": {
            "app_id": "app-1", "app_version": 1, "app_type": "agent", "attempts_per_second": aps,
            "connection_configs": ccs or [{"connection_id": "conn-a",
                                           "phone_numbers": ["+14155550100"], "weight": 1}],
            "retry_config": retry if retry is not None else {"max_retries": 0, "retry_on": [],
                                                             "threshold_seconds": 10},
        },
    }
    if hook:
        body["app_config"]["webhook_config"] = {"url": hook, "metadata": {"suite": "round2"}}
    if description is not None:
        body["description"] = description
    return body


def create_campaign(c, **kw):
    r = c.post(camp_base(), campaign_body(c, **kw))
    assert r.ok, r
    return r.json["campaign_id"]


def stream_users(c, ptype, pid, numbers, category=None, variables=None, ws=WS1):
    users = []
    for i, n in enumerate(numbers):
        u = {"phone_number": n, "user_identifier": "u%d" % i}
        if variables:
            u["app_variables"] = variables
        users.append(u)
    body = {"name": "stream-%s" % uuid.uuid4().hex[:6], "users": users}
    if category:
        body["cohort_category"] = category
    r = c.post("/api/scheduling/v1/orgs/%s/workspaces/%s/%s/%s/cohorts/stream" % (ORG, ws, ptype, pid), body)
    assert r.ok, r
    return r.json


TRANSFORM = {"phone_number": {"column_name": "phone", "country_code": "US"},
             "user_identifier": {"column_name": "id", "required": True},
             "app_variables": {"first_name": {"column_name": "first_name"}}}
TRANSFORM_BYTES = json.dumps(TRANSFORM).encode()
CSV_4 = (b"phone,id,first_name\n+12025550100,u1,Ada\n(202) 555-0101,u2,Grace\n"
         b"202-555-0109,u3,Alan\n12345,u5,Barbara\n")


def multipart(parts):
    b = "bnd" + uuid.uuid4().hex
    out = []
    for name, filename, ctype, data in parts:
        h = 'Content-Disposition: form-data; name="%s"' % name
        if filename:
            h += '; filename="%s"' % filename
        h += "\r\n"
        if ctype:
            h += "Content-Type: %s\r\n" % ctype
        out.append(("--%s\r\n%s\r\n" % (b, h)).encode() + data + b"\r\n")
    out.append(("--%s--\r\n" % b).encode())
    return b"".join(out), "multipart/form-data; boundary=%s" % b


def upload(c, ptype, pid, csv_bytes, transform=TRANSFORM_BYTES, category=None, name="upload"):
    parts = [("name", None, None, name.encode()),
             ("cohort_file", "users.csv", "text/csv", csv_bytes),
             ("cohort_transformation_file", "t.json", "application/json", transform)]
    if category:
        parts.append(("cohort_category", None, None, category.encode()))
    raw, ct = multipart(parts)
    return c.post("/api/scheduling/v1/orgs/%s/workspaces/%s/%s/%s/cohorts/upload" % (ORG, WS1, ptype, pid),
                  raw=raw, ct=ct)


def wait_cohort(c, ptype, pid, coh):
    path = "/api/scheduling/v1/orgs/%s/workspaces/%s/%s/%s/cohorts/%s" % (ORG, WS1, ptype, pid, coh)
    deadline = time.time() + 30
    while time.time() < deadline:
        r = c.get(path)
        assert r.ok, r
        if r.json["status"] != "processing":
            return r.json
        time.sleep(0.02)
    raise AssertionError("cohort still processing")


def uploaded_cohort(c, csv_bytes=CSV_4, transform=TRANSFORM_BYTES):
    cid = create_campaign(c)
    r = upload(c, "campaigns", cid, csv_bytes, transform)
    assert r.ok, r
    coh = r.json["cohort_id"]
    done = wait_cohort(c, "campaigns", cid, coh)
    files = "%s/%s/cohorts/%s/files" % (camp_base(), cid, coh)
    return cid, coh, done, files


def create_deployment(c, name="desk", numbers=None, inbound_config=None, description=None, ws=WS1):
    body = {"name": name, "app_id": "app-1", "app_version": 1,
            "connection_configs": [{"connection_id": "conn-d",
                                    "phone_numbers": numbers or ["+1415555%04d" % (uuid.uuid4().int % 10000)]}]}
    if inbound_config is not None:
        body["inbound_config"] = inbound_config
    if description is not None:
        body["description"] = description
    r = c.post(dep_base(ws), body)
    assert r.ok, r
    return r.json


def inbound(c, caller, dialled):
    r = c.post(sim_ws() + "/inbound-calls", {"caller": caller, "dialled": dialled})
    assert r.ok, r
    return r.json


def run_campaign(env, numbers, retry, advance, aps=1, ccs=None, schedule=None, start_in=300):
    """A campaign with its users streamed in before the start; the clock moved to the
    start and `advance` seconds on.  Returns (campaign id, start, campaign events)."""
    c = env.c
    h = env.hooks()
    body = campaign_body(c, start_in=start_in, aps=aps, ccs=ccs, retry=retry, hook=h.url, schedule=schedule)
    r = c.post(camp_base(), body)
    assert r.ok, r
    cid = r.json["campaign_id"]
    stream_users(c, "campaigns", cid, numbers)
    start = pts(body["start_timestamp"])
    c.advance(to=start)
    c.advance(seconds=advance)
    time.sleep(0.05)
    env.check_signatures()
    return cid, start, h.campaign(cid)


def outbound_call(env, with_hook=True, metadata=None):
    c = env.c
    h = env.hooks()
    body = {"app_config": {"app_id": "app-1", "app_version": 1, "app_type": "agent",
                           "connection_config": {"connection_id": "conn-o", "agent_phone_number": "+14155550100"},
                           "agent_variables": {"first_name": "Ada"}},
            "user_config": {"user_phone_number": magic(0)}}
    if with_hook:
        body["webhook_config"] = {"url": h.url, "metadata": metadata or {"ticket": "T-1", "n": 3}}
    r = c.post(outbound_path(), body)
    assert r.ok, r
    c.advance(seconds=300)
    time.sleep(0.05)
    env.check_signatures()
    ev = [e for e in h.json_events() if "channel_info" in e]
    return r.json, ev, body


def shown(cond, detail):
    return bool(cond), detail


# --------------------------------------------------------------------------- the probes
# Each probe returns (broken, detail): broken is True when the answers show the defect.

PROBES = {}


def probe(*names):
    def reg(fn):
        for n in names:
            PROBES[n] = fn
        return fn
    return reg


BAD_OUTBOUND = {"app_config": {"app_id": "app-1", "app_version": 1,
                               "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
                "user_config": {"user_phone_number": "not-a-number"}}


@probe("outbound_validation_error_shape")
def p_outbound_shape(env):
    r = env.c.post(outbound_path(), BAD_OUTBOUND)
    ok = r.status == 422 and isinstance(r.json, dict) and isinstance(r.json.get("detail"), list) \
        and all({"loc", "msg", "type"} <= set(e) for e in r.json["detail"])
    return shown(not ok, "invalid outbound -> %r" % r)


@probe("validation_loc_without_body")
def p_loc(env):
    r = env.c.post(outbound_path(), BAD_OUTBOUND)
    r2 = env.c.get(dep_base() + "?limit=0")
    locs = [e["loc"] for x in (r, r2) for e in (x.json or {}).get("detail", [])]
    ok = r.status == 422 and r2.status == 422 and locs and all(l[0] in ("body", "query") for l in locs)
    return shown(not ok, "locs %r" % locs)


@probe("outbound_attempt_id_not_the_attempt")
def p_attempt_id(env):
    ans, ev, _ = outbound_call(env)
    assert len(ev) == 1, ev
    return shown(ev[0]["attempt_id"] != ans["attempt_id"],
                 "answer %s, event %s" % (ans["attempt_id"], ev[0]["attempt_id"]))


@probe("outbound_event_metadata_dropped")
def p_metadata(env):
    _, ev, body = outbound_call(env)
    assert len(ev) == 1, ev
    return shown(ev[0]["webhook_config"].get("metadata") != body["webhook_config"]["metadata"]
                 or ev[0]["webhook_config"].get("url") != body["webhook_config"]["url"],
                 "event webhook_config %r" % ev[0]["webhook_config"])


@probe("outbound_event_not_sent")
def p_outbound_event(env):
    _, ev, _ = outbound_call(env)
    return shown(len(ev) != 1, "%d outbound events" % len(ev))


@probe("campaign_created_active")
def p_created_active(env):
    r = env.c.post(camp_base(), campaign_body(env.c))
    assert r.ok, r
    return shown(r.json["status"] != "scheduled", "create answered status %s" % r.json["status"])


@probe("campaign_start_min_exclusive")
def p_start_min(env):
    c = env.c
    start = c.now() + dt.timedelta(seconds=120, milliseconds=5)
    r = c.post(camp_base(), campaign_body(c, start=start))
    return shown(not r.ok, "start 120.005 s ahead -> %d" % r.status)


@probe("campaign_start_max_8_days")
def p_start_max(env):
    c = env.c
    start = c.now() + dt.timedelta(days=7, hours=1)
    body = campaign_body(c, start=start, duration=3600)
    r = c.post(camp_base(), body)
    if r.ok:  # the answers must still show what was sent (restored by the proxy)
        g = c.get(camp_base() + "/" + r.json["campaign_id"])
        assert g.json["start_timestamp"] == body["start_timestamp"], g
    return shown(r.ok, "start 7 d 1 h ahead -> %d" % r.status)


@probe("campaign_end_min_60s")
def p_end_min(env):
    c = env.c
    start = c.now() + dt.timedelta(seconds=300)
    r = c.post(camp_base(), campaign_body(c, start=start, end=start + dt.timedelta(seconds=90)))
    return shown(r.ok, "end 90 s after start -> %d" % r.status)


@probe("campaign_end_max_31_days")
def p_end_max(env):
    c = env.c
    start = c.now() + dt.timedelta(seconds=300)
    body = campaign_body(c, start=start, end=start + dt.timedelta(days=30, hours=1))
    r = c.post(camp_base(), body)
    if r.ok:
        g = c.get(camp_base() + "/" + r.json["campaign_id"])
        assert g.json["end_timestamp"] == body["end_timestamp"], g
    return shown(r.ok, "end 30 d 1 h after start -> %d" % r.status)


@probe("attempts_per_second_min_exclusive")
def p_aps_min(env):
    r = env.c.post(camp_base(), campaign_body(env.c, aps=0.1))
    return shown(not r.ok, "attempts_per_second 0.1 -> %r" % r)


@probe("threshold_seconds_max_3600")
def p_threshold_max(env):
    r = env.c.post(camp_base(), campaign_body(env.c, retry={"max_retries": 1, "retry_on": ["short_duration"],
                                                            "threshold_seconds": 1500}))
    if r.ok:
        g = env.c.get(camp_base() + "/" + r.json["campaign_id"])
        assert g.json["app_config"]["retry_config"]["threshold_seconds"] == 1500, g
    return shown(r.ok, "threshold_seconds 1500 -> %d" % r.status)


@probe("campaign_description_max_100")
def p_desc_campaign(env):
    r = env.c.post(camp_base(), campaign_body(env.c, description="d" * 150))
    return shown(not r.ok, "description of 150 -> %r" % r)


@probe("campaign_name_pattern_lax")
def p_name_pattern(env):
    r = env.c.post(camp_base(), campaign_body(env.c, name="spring.sale/2026!"))
    if r.ok:
        assert r.json["name"] == "spring.sale/2026!", r
    return shown(r.ok, "name 'spring.sale/2026!' -> %d" % r.status)


@probe("campaign_app_version_string")
def p_app_version(env):
    r = env.c.post(camp_base(), campaign_body(env.c))
    lst = env.c.get(camp_base())
    vals = [r.json["app_version"]] + [x["app_version"] for x in lst.json["items"]]
    return shown(not all(type(v) is int for v in vals), "app_version values %r" % vals)


@probe("campaign_timestamps_minute_precision")
def p_minute(env):
    c = env.c
    start = c.now() + dt.timedelta(seconds=317, milliseconds=250)
    body = campaign_body(c, start=start)
    cid = c.post(camp_base(), body).json["campaign_id"]
    g = c.get(camp_base() + "/" + cid).json
    return shown(g["start_timestamp"] != body["start_timestamp"] or g["end_timestamp"] != body["end_timestamp"],
                 "sent %s, GET %s" % (body["start_timestamp"], g["start_timestamp"]))


@probe("list_leaks_other_workspace")
def p_leak(env):
    c, c2 = env.c, env.c2
    mine = c.post(camp_base(WS1), campaign_body(c, name="twin")).json["campaign_id"]
    other = c2.post(camp_base(WS2), campaign_body(c2, name="twin")).json["campaign_id"]
    d1 = create_deployment(c, name="twin", ws=WS1)["deployment_id"]
    d2 = create_deployment(c2, name="twin", ws=WS2)["deployment_id"]
    lc = c.get(camp_base(WS1) + "?search=twin").json
    ld = c.get(dep_base(WS1) + "?search=twin").json
    ids = [x["campaign_id"] for x in lc["items"]] + [x["deployment_id"] for x in ld["items"]]
    return shown(other in ids or d2 in ids or lc["total"] != 1 or ld["total"] != 1,
                 "ws-1 lists show %r (mine %s %s)" % (ids, mine, d1))


@probe("campaign_list_status_filter_ignored")
def p_status_filter(env):
    c = env.c
    a = create_campaign(c, name="filter-a")
    create_campaign(c, name="filter-b")
    assert c.put(camp_base() + "/" + a + "/status", {"action": "pause"}).ok
    items = c.get(camp_base() + "?campaign_status=paused").json["items"]
    return shown([x["campaign_id"] for x in items] != [a], "campaign_status=paused lists %d" % len(items))


@probe("campaign_activates_late")
def p_activates(env):
    c = env.c
    h = env.hooks()
    body = campaign_body(c, start_in=300, hook=h.url)
    cid = c.post(camp_base(), body).json["campaign_id"]
    stream_users(c, "campaigns", cid, [magic(0)])
    start = pts(body["start_timestamp"])
    c.advance(to=start - dt.timedelta(seconds=1))
    before = c.get(camp_base() + "/" + cid).json["status"]
    c.advance(to=start + dt.timedelta(seconds=1))
    after = c.get(camp_base() + "/" + cid).json
    assert before == "scheduled", before
    return shown(after["status"] != "active" or after["statistics"]["attempts_total"] < 1,
                 "1 s after start: %s, %d dials" % (after["status"], after["statistics"]["attempts_total"]))


def _window_campaign(env, dur):
    c = env.c
    body = campaign_body(c, start_in=130, duration=dur)
    cid = c.post(camp_base(), body).json["campaign_id"]
    return cid, pts(body["start_timestamp"]), pts(body["end_timestamp"])


@probe("campaign_ends_late")
def p_ends_late(env):
    c = env.c
    cid, start, end = _window_campaign(env, 600)
    c.advance(to=end + dt.timedelta(seconds=1))
    st = c.get(camp_base() + "/" + cid).json["status"]
    return shown(st != "ended", "1 s after end: %s" % st)


@probe("campaign_ends_early")
def p_ends_early(env):
    c = env.c
    cid, start, end = _window_campaign(env, 600)
    c.advance(to=end - dt.timedelta(seconds=30))
    st = c.get(camp_base() + "/" + cid).json["status"]
    return shown(st != "active", "30 s before end: %s" % st)


@probe("calling_window_closes_late")
def p_window(env):
    sched = {"timezone": "UTC", "allowed_days": ALL_DAYS, "allowed_start_time": "08:00",
             "allowed_end_time": "09:00"}
    cid, start, ev = run_campaign(env, [magic(1)],
                                  {"max_retries": 4, "retry_on": ["busy"], "threshold_seconds": 10,
                                   "retry_interval_minutes": 20}, advance=3 * 3600, schedule=sched)
    times = [pts(e["executed_at"]) for e in ev]
    outside = [t for t in times if not (8 <= t.hour < 9)]
    assert len(times) >= 3, times
    return shown(bool(outside), "dials at %s" % [ts(t)[11:19] for t in times])


@probe("campaign_status_answer_stale")
def p_campaign_status_answer(env):
    c = env.c
    cid = create_campaign(c)
    r = c.put(camp_base() + "/" + cid + "/status", {"action": "pause"})
    assert r.ok, r
    return shown(r.json["status"] != "paused", "pause answered %s" % r.json["status"])


@probe("campaign_pause_scheduled_refused")
def p_pause_scheduled(env):
    c = env.c
    cid = create_campaign(c)
    r = c.put(camp_base() + "/" + cid + "/status", {"action": "pause"})
    return shown(not r.ok, "pause of scheduled -> %r" % r)


@probe("campaign_cancel_is_pause")
def p_cancel(env):
    c = env.c
    cid = create_campaign(c)
    r = c.put(camp_base() + "/" + cid + "/status", {"action": "cancel"})
    g = c.get(camp_base() + "/" + cid).json["status"]
    res = c.put(camp_base() + "/" + cid + "/status", {"action": "resume"})
    return shown(g != "cancelled" or res.ok, "after cancel: %s; resume -> %d" % (g, res.status))


@probe("campaign_resume_literal_refused")
def p_resume_literal(env):
    c = env.c
    cid = create_campaign(c)
    assert c.put(camp_base() + "/" + cid + "/status", {"action": "pause"}).ok
    r = c.put(camp_base() + "/" + cid + "/status", {"action": "resume"})
    return shown(not r.ok, "resume -> %r" % r)


@probe("campaign_pause_keeps_dialing")
def p_pause_dialing(env):
    c = env.c
    h = env.hooks()
    nums = [magic(0, area) for area in range(201, 209)]
    body = campaign_body(c, start_in=300, aps=0.1, hook=h.url)
    cid = c.post(camp_base(), body).json["campaign_id"]
    stream_users(c, "campaigns", cid, nums)
    start = pts(body["start_timestamp"])
    c.advance(to=start + dt.timedelta(seconds=1))
    p = c.put(camp_base() + "/" + cid + "/status", {"action": "pause"})
    assert p.ok and p.json["status"] == "paused", p
    c.advance(seconds=300)
    time.sleep(0.05)
    g = c.get(camp_base() + "/" + cid).json
    later = [e for e in h.campaign(cid) if pts(e["executed_at"]) > start + dt.timedelta(seconds=1)]
    return shown(bool(later), "%d dials after the pause (status shown %s)" % (len(later), g["status"]))


@probe("campaign_patch_while_active")
def p_patch_active(env):
    c = env.c
    cid, start, end = _window_campaign(env, 3600)
    c.advance(to=start + dt.timedelta(seconds=1))
    r = c.patch(camp_base() + "/" + cid, {"description": "changed while active"})
    g = c.get(camp_base() + "/" + cid).json
    return shown(r.ok or g.get("description") == "changed while active",
                 "PATCH while active -> %d, description %r" % (r.status, g.get("description")))


@probe("campaign_patch_start_ignored")
def p_patch_start(env):
    c = env.c
    body = campaign_body(c)
    cid = c.post(camp_base(), body).json["campaign_id"]
    other = ts(pts(body["start_timestamp"]) + dt.timedelta(seconds=60))
    r = c.patch(camp_base() + "/" + cid, {"start_timestamp": other})
    return shown(r.ok, "PATCH with another start -> %d" % r.status)


@probe("campaign_patch_resets_retry_config")
def p_patch_retry(env):
    c = env.c
    rc = {"max_retries": 2, "retry_on": ["busy"], "threshold_seconds": 20, "retry_interval_minutes": 40}
    cid = c.post(camp_base(), campaign_body(c, retry=rc)).json["campaign_id"]
    r = c.patch(camp_base() + "/" + cid, {"app_config": {"retry_config": {"retry_interval_minutes": 45}}})
    assert r.ok, r
    got = c.get(camp_base() + "/" + cid).json["app_config"]["retry_config"]
    want = dict(rc, retry_interval_minutes=45)
    return shown(got != want, "retry_config after PATCH %r" % got)


BUSY_RETRY = {"max_retries": 2, "retry_on": ["busy"], "threshold_seconds": 10, "retry_interval_minutes": 1}


@probe("rule1_max_retries_plus_one", "rule1_first_dial_not_counted", "event_only_final_attempts")
def p_rule1(env):
    cid, start, ev = run_campaign(env, [magic(1)], BUSY_RETRY, advance=3600)
    g = env.c.get(camp_base() + "/" + cid).json
    assert g["app_config"]["retry_config"]["max_retries"] == 2, g
    return shown(len(ev) != 3 or g["statistics"]["attempts_total"] != 3,
                 "max_retries 2: %d events, %d attempts" % (len(ev), g["statistics"]["attempts_total"]))


@probe("rule2_dial_rate_halved")
def p_rule2(env):
    c = env.c
    nums = [magic(0, area) for area in range(201, 221)]
    body = campaign_body(c, start_in=300, aps=1)
    cid = c.post(camp_base(), body).json["campaign_id"]
    stream_users(c, "campaigns", cid, nums)
    c.advance(to=pts(body["start_timestamp"]) + dt.timedelta(seconds=5, milliseconds=500))
    g = c.get(camp_base() + "/" + cid).json
    assert g["app_config"]["attempts_per_second"] == 1, g
    n = g["statistics"]["attempts_total"]
    return shown(abs(n - 6) > 1, "%d dials in the first 5.5 s at 1/s" % n)


@probe("rule4_weights_ignored")
def p_rule4_weights(env):
    ccs = [{"connection_id": "conn-a", "phone_numbers": ["+14155550100"], "weight": 3},
           {"connection_id": "conn-b", "phone_numbers": ["+14155550200"], "weight": 1}]
    nums = [magic(0, area) for area in range(201, 213)]
    cid, start, ev = run_campaign(env, nums, {"max_retries": 0, "retry_on": []}, advance=600, ccs=ccs)
    a = sum(1 for e in ev if e["agent_phone_number"] == "+14155550100")
    b = sum(1 for e in ev if e["agent_phone_number"] == "+14155550200")
    assert a + b == 12, (a, b)
    return shown(abs(a - 9) > 1, "weights 3:1 gave %d:%d" % (a, b))


@probe("rule4_first_number_only")
def p_rule4_numbers(env):
    ccs = [{"connection_id": "conn-a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 1}]
    nums = [magic(0, area) for area in range(201, 207)]
    cid, start, ev = run_campaign(env, nums, {"max_retries": 0, "retry_on": []}, advance=600, ccs=ccs)
    a = sum(1 for e in ev if e["agent_phone_number"] == "+14155550100")
    b = sum(1 for e in ev if e["agent_phone_number"] == "+14155550101")
    assert a + b == 6, (a, b)
    return shown(abs(a - b) > 1, "numbers of one connection used %d:%d" % (a, b))


SHORT_RETRY = {"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 10,
               "retry_interval_minutes": 1}


@probe("rule5_short_not_retried", "rule5_threshold_ignored", "event_short_call_completed")
def p_rule5(env):
    cid, start, ev = run_campaign(env, [magic(4)], SHORT_RETRY, advance=3600)
    assert ev, ev
    first = ev[0]
    return shown(len(ev) != 2 or first["failure_reason"] != "short_duration"
                 or first["completion_status"] != "partial",
                 "5 s calls under threshold 10: %d events, first %s/%s" % (
                     len(ev), first["completion_status"], first["failure_reason"]))


@probe("retry_on_ignored")
def p_retry_on(env):
    cid, start, ev = run_campaign(env, [magic(1)], {"max_retries": 2, "retry_on": ["no_answer"],
                                                    "retry_interval_minutes": 1}, advance=3600)
    return shown(len(ev) != 1, "busy user with retry_on [no_answer]: %d dials" % len(ev))


@probe("retry_interval_too_soon", "retry_interval_too_late")
def p_interval(env):
    cid, start, ev = run_campaign(env, [magic(1)], {"max_retries": 1, "retry_on": ["busy"],
                                                    "retry_interval_minutes": 30}, advance=3 * 3600)
    assert len(ev) == 2, ev
    gap = (pts(ev[1]["executed_at"]) - pts(ev[0]["executed_at"])).total_seconds() / 60
    return shown(not (30 <= gap <= 31), "retry %.2f min after the first dial (interval 30)" % gap)


@probe("stop_file_ignored")
def p_stop_file(env):
    c = env.c
    h = env.hooks()
    body = campaign_body(c, start_in=300, hook=h.url)
    cid = c.post(camp_base(), body).json["campaign_id"]
    stream_users(c, "campaigns", cid, [magic(0, 201), magic(0, 202)])
    sf = stream_users(c, "campaigns", cid, [magic(0, 201)], category="stop_file")
    assert sf["cohort_category"] == "stop_file", sf
    c.advance(to=pts(body["start_timestamp"]))
    c.advance(seconds=600)
    time.sleep(0.05)
    called = sorted({e["user_phone_number"] for e in h.campaign(cid)})
    return shown(magic(0, 201) in called, "called %r, stop file had %s" % (called, magic(0, 201)))


@probe("cohort_upload_answers_completed")
def p_upload_processing(env):
    cid = create_campaign(env.c)
    r = upload(env.c, "campaigns", cid, CSV_4)
    assert r.ok, r
    return shown(r.json["status"] != "processing", "upload answered %s" % r.json["status"])


@probe("cohort_counts_dont_add_up")
def p_counts(env):
    _, _, done, _ = uploaded_cohort(env.c)
    res = done["result"]
    return shown(res["total_records"] != res["valid_records"] + res["rejected_records"]
                 or res["rejected_records"] != 1, "result %r" % res)


@probe("cohort_rejected_file_no_reason", "cohort_rejected_file_all_rows")
def p_rejected_file(env):
    _, _, done, files = uploaded_cohort(env.c)
    r = env.c.get(files + "?file_type=rejected_records")
    assert r.ok, r
    lines = [l for l in r.body.decode().splitlines() if l]
    header = lines[0].split(",")
    return shown(header != ["phone", "id", "first_name", "rejected_reason"]
                 or len(lines) - 1 != done["result"]["rejected_records"],
                 "rejected file header %r, %d rows for %d rejected" % (
                     header, len(lines) - 1, done["result"]["rejected_records"]))


@probe("cohort_transformation_file_reformatted")
def p_transformation_file(env):
    _, _, _, files = uploaded_cohort(env.c)
    r = env.c.get(files + "?file_type=cohort_transformation")
    c = env.c.get(files + "?file_type=cohort")
    assert c.ok and c.body == CSV_4, c
    return shown(r.body != TRANSFORM_BYTES, "transformation file %r" % r.body[:80])


@probe("cohort_missing_column_completes")
def p_missing_column(env):
    _, _, done, _ = uploaded_cohort(env.c, csv_bytes=b"number,id,first_name\n+12025550100,u1,Ada\n")
    return shown(done["status"] != "failed", "missing column: %s %r" % (done["status"], done.get("result")))


@probe("cohort_upload_paused_refused")
def p_upload_paused(env):
    c = env.c
    cid = create_campaign(c)
    assert c.put(camp_base() + "/" + cid + "/status", {"action": "pause"}).ok
    r = upload(c, "campaigns", cid, CSV_4)
    return shown(not r.ok, "upload to a paused campaign -> %r" % r)


@probe("cohort_active_upload_not_dialled")
def p_upload_active(env):
    c = env.c
    h = env.hooks()
    body = campaign_body(c, start_in=300, hook=h.url)
    cid = c.post(camp_base(), body).json["campaign_id"]
    c.advance(to=pts(body["start_timestamp"]) + dt.timedelta(seconds=1))
    assert c.get(camp_base() + "/" + cid).json["status"] == "active"
    r = upload(c, "campaigns", cid, b"phone,id,first_name\n+12025550100,u1,Ada\n")
    assert r.ok, r
    done = wait_cohort(c, "campaigns", cid, r.json["cohort_id"])
    assert done["cohort_category"] == "cohort", done
    c.advance(seconds=600)
    time.sleep(0.05)
    ev = h.campaign(cid)
    return shown(len(ev) != 1, "%d dials of the cohort uploaded while active" % len(ev))


@probe("cohort_list_newest_first")
def p_cohort_list(env):
    c = env.c
    cid = create_campaign(c)
    a = stream_users(c, "campaigns", cid, [magic(0, 201)])["cohort_id"]
    b = stream_users(c, "campaigns", cid, [magic(0, 202)])["cohort_id"]
    items = [x["cohort_id"] for x in c.get(camp_base() + "/" + cid + "/cohorts").json["items"]]
    return shown(items != [a, b], "cohort list %r, uploaded %r" % (items, [a, b]))


@probe("deployment_create_status_missing")
def p_dep_status(env):
    d = create_deployment(env.c)
    return shown(d.get("status") != "active", "create answered status %r" % d.get("status"))


@probe("deployment_channel_direction_uppercase")
def p_channel(env):
    d = create_deployment(env.c)
    return shown(d["channel_direction"] not in ("inbound", "outbound", "inbound_outbound"),
                 "channel_direction %r" % d["channel_direction"])


@probe("deployment_name_max_64")
def p_dep_name(env):
    r = env.c.post(dep_base(), {"name": "n" * 51, "app_id": "app-1", "app_version": 1,
                                "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550911"]}]})
    if r.ok:
        assert r.json["name"] == "n" * 51, r
    return shown(r.ok, "name of 51 -> %d" % r.status)


@probe("deployment_description_max_149")
def p_dep_desc(env):
    r = env.c.post(dep_base(), {"name": "desc", "app_id": "app-1", "app_version": 1, "description": "d" * 150,
                                "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550912"]}]})
    return shown(not r.ok, "description of 150 -> %r" % r)


@probe("deployment_connection_configs_empty_accepted")
def p_dep_ccs(env):
    r = env.c.post(dep_base(), {"name": "empty", "app_id": "app-1", "app_version": 1, "connection_configs": []})
    if r.ok:
        assert r.json["connection_configs"] == [], r
    return shown(r.ok, "connection_configs [] -> %d" % r.status)


@probe("deployment_timestamps_local_as_utc")
def p_dep_ts(env):
    c = env.c
    now = c.now()
    d = create_deployment(c)
    lst = c.get(dep_base()).json["items"][0]
    diffs = [abs((pts(x) - now).total_seconds()) for x in (d["created_at"], d["updated_at"], lst["created_at"])]
    return shown(max(diffs) > 1, "created_at %s at clock %s" % (d["created_at"], ts(now)))


@probe("deployment_patch_clears_description")
def p_patch_desc(env):
    c = env.c
    d = create_deployment(c, description="keep me")
    r = c.patch(dep_base() + "/" + d["deployment_id"], {"app_version": 2})
    assert r.ok, r
    g = c.get(dep_base() + "/" + d["deployment_id"]).json
    return shown(g.get("description") != "keep me", "description after PATCH %r" % g.get("description"))


@probe("deployment_patch_app_version_not_applied")
def p_patch_version(env):
    c = env.c
    d = create_deployment(c)
    r = c.patch(dep_base() + "/" + d["deployment_id"], {"app_version": 3})
    assert r.ok and r.json["app_version"] == 3, r
    g = c.get(dep_base() + "/" + d["deployment_id"]).json
    return shown(g["app_version"] != 3, "GET after PATCH app_version 3: %r" % g["app_version"])


@probe("deployment_patch_app_id_ignored")
def p_patch_app_id(env):
    c = env.c
    d = create_deployment(c)
    r = c.patch(dep_base() + "/" + d["deployment_id"], {"app_id": "another-app"})
    return shown(r.ok, "PATCH app_id -> %d" % r.status)


IC_ALL = {"start_time": "00:00", "end_time": "23:59", "allowed_days": ALL_DAYS, "timezone": "UTC"}
IC_LATE = {"start_time": "10:00", "end_time": "11:00", "allowed_days": ALL_DAYS, "timezone": "UTC"}


@probe("deployment_patch_schedule_not_applied")
def p_patch_schedule(env):
    c = env.c
    d = create_deployment(c, inbound_config=IC_ALL)
    r = c.patch(dep_base() + "/" + d["deployment_id"], {"inbound_config": IC_LATE})
    assert r.ok, r
    g = c.get(dep_base() + "/" + d["deployment_id"]).json
    call = inbound(c, "+919876543210", d["connection_configs"][0]["phone_numbers"][0])  # 08:00 UTC
    return shown(g["inbound_config"] != IC_LATE or call["answered"],
                 "GET inbound_config %r, call at 08:00 answered %s" % (g["inbound_config"], call["answered"]))


@probe("deployment_status_answer_stale")
def p_dep_status_answer(env):
    c = env.c
    d = create_deployment(c)
    r = c.put(dep_base() + "/" + d["deployment_id"] + "/status", {"action": "pause"})
    assert r.ok, r
    return shown(r.json["status"] != "paused", "pause answered %s" % r.json["status"])


@probe("deployment_pause_twice_200")
def p_pause_twice(env):
    c = env.c
    d = create_deployment(c)
    assert c.put(dep_base() + "/" + d["deployment_id"] + "/status", {"action": "pause"}).ok
    r = c.put(dep_base() + "/" + d["deployment_id"] + "/status", {"action": "pause"})
    return shown(r.status != 409, "second pause -> %d" % r.status)


@probe("deployment_delete_soft", "deployment_delete_deferred")
def p_delete(env):
    c = env.c
    d = create_deployment(c)
    did, num = d["deployment_id"], d["connection_configs"][0]["phone_numbers"][0]
    r = c.delete(dep_base() + "/" + did)
    assert r.ok, r
    g = c.get(dep_base() + "/" + did)
    listed = [x["deployment_id"] for x in c.get(dep_base()).json["items"]]
    call = inbound(c, "+919876543210", num)
    return shown(g.ok or did in listed or call["answered"],
                 "after DELETE: GET %d, listed %s, call answered %s" % (g.status, did in listed, call["answered"]))


def _error_shape(r):
    e = (r.json or {}).get("error") if isinstance(r.json, dict) else None
    return isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code"))


@probe("deployment_delete_error_detail_shape")
def p_delete_error(env):
    r = env.c.delete(dep_base() + "/dep-does-not-exist")
    assert not r.ok
    return shown(not _error_shape(r), "failed delete -> %r" % r)


@probe("deployment_list_error_code_int")
def p_list_error(env):
    create_deployment(env.c)
    r = env.c.get(dep_base(), key="sk-wrong")
    assert not r.ok
    return shown(not _error_shape(r), "refused list -> %r" % r)


def _deployments(c, names):
    ids = []
    for n in names:
        ids.append(create_deployment(c, name=n)["deployment_id"])
        c.advance(seconds=1)
    return ids


@probe("list_total_is_page_size")
def p_total(env):
    _deployments(env.c, ["a1", "a2", "a3"])
    r = env.c.get(dep_base() + "?limit=2").json
    return shown(r["total"] != 3 or len(r["items"]) != 2, "3 deployments, limit 2: total %d" % r["total"])


@probe("list_next_uri_on_last_page")
def p_next_last(env):
    _deployments(env.c, ["a1", "a2", "a3"])
    r = env.c.get(dep_base() + "?limit=2&offset=2").json
    return shown(r["next_page_uri"] is not None, "last page next_page_uri %r" % r["next_page_uri"])


@probe("list_prev_uri_on_first_page")
def p_prev_first(env):
    _deployments(env.c, ["a1", "a2", "a3"])
    r = env.c.get(dep_base() + "?limit=2&offset=0").json
    return shown(r["prev_page_uri"] is not None, "first page prev_page_uri %r" % r["prev_page_uri"])


@probe("list_page_uri_drops_query")
def p_walk(env):
    c = env.c
    want = _deployments(c, ["walk-a", "decoy-1", "walk-b", "decoy-2", "walk-c"])
    want = [want[0], want[2], want[4]]
    seen, page = [], c.get(dep_base() + "?search=walk&limit=2&sort_by=created_at&sort_order=asc")
    for _ in range(5):
        seen += [x["deployment_id"] for x in page.json["items"]]
        if not page.json["next_page_uri"]:
            break
        page = c.get(page.json["next_page_uri"])
    return shown(seen != want, "walking search=walk gave %r" % seen)


@probe("list_sort_order_ignored")
def p_sort(env):
    c = env.c
    _deployments(c, ["s1", "s2", "s3"])
    asc = [x["deployment_id"] for x in c.get(dep_base() + "?sort_by=created_at&sort_order=asc").json["items"]]
    desc = [x["deployment_id"] for x in c.get(dep_base() + "?sort_by=created_at&sort_order=desc").json["items"]]
    return shown(asc != list(reversed(desc)), "asc %r desc %r" % (asc, desc))


@probe("list_limit_over_100_clamped")
def p_limit(env):
    r = env.c.get(dep_base() + "?limit=101")
    return shown(r.status != 422, "limit=101 -> %d" % r.status)


@probe("list_offset_negative_as_zero")
def p_offset_neg(env):
    r = env.c.get(dep_base() + "?offset=-1")
    return shown(r.status != 422, "offset=-1 -> %d" % r.status)


@probe("list_offset_off_by_one")
def p_offset(env):
    c = env.c
    ids = _deployments(c, ["o1", "o2", "o3", "o4"])
    a = c.get(dep_base() + "?limit=2&offset=0&sort_by=created_at&sort_order=asc").json
    b = c.get(dep_base() + "?limit=2&offset=2&sort_by=created_at&sort_order=asc").json
    got = [x["deployment_id"] for x in a["items"] + b["items"]]
    return shown(got != ids or b["offset"] != 2, "pages give %r of %r" % (got, ids))


@probe("list_phone_numbers_not_e164")
def p_phone_numbers(env):
    d = create_deployment(env.c, numbers=["+14155550921", "+14155550922"])
    it = env.c.get(dep_base()).json["items"][0]
    return shown(it["phone_numbers"] != ["+14155550921", "+14155550922"], "phone_numbers %r" % it["phone_numbers"])


@probe("list_total_ignores_search")
def p_total_search(env):
    _deployments(env.c, ["find-1", "other-1", "find-2", "other-2"])
    r = env.c.get(dep_base() + "?search=find").json
    return shown(r["total"] != 2 or len(r["items"]) != 2, "search=find: total %d, %d items" % (
        r["total"], len(r["items"])))


@probe("inbound_paused_still_answered")
def p_inbound_paused(env):
    c = env.c
    d = create_deployment(c)
    num = d["connection_configs"][0]["phone_numbers"][0]
    first = inbound(c, "+919876543210", num)
    r = c.put(dep_base() + "/" + d["deployment_id"] + "/status", {"action": "pause"})
    assert r.ok and r.json["status"] == "paused", r
    call = inbound(c, "+919876543211", num)
    assert first["answered"], first
    return shown(call["answered"], "call while paused answered %s (%s)" % (call["answered"], call["rejection"]))


@probe("inbound_schedule_ignored")
def p_inbound_schedule(env):
    c = env.c
    d = create_deployment(c, inbound_config=IC_LATE)
    assert d["inbound_config"] == IC_LATE, d
    num = d["connection_configs"][0]["phone_numbers"][0]
    before = inbound(c, "+919876543210", num)  # 08:00 UTC, window 10:00-11:00
    c.advance(to=pts(SIM_START) + dt.timedelta(hours=2, minutes=30))
    inside = inbound(c, "+919876543211", num)
    assert inside["answered"], inside
    return shown(before["answered"], "call at 08:00 for a 10:00-11:00 schedule answered %s" % before["answered"])


@probe("inbound_cohort_variables_dropped")
def p_inbound_vars(env):
    c = env.c
    d = create_deployment(c)
    did, num = d["deployment_id"], d["connection_configs"][0]["phone_numbers"][0]
    r = upload(c, "deployments", did, b"phone,id,first_name\n+919876543210,c1,Ada\n",
               json.dumps({"phone_number": {"column_name": "phone", "country_code": "IN"},
                           "user_identifier": {"column_name": "id"},
                           "app_variables": {"first_name": {"column_name": "first_name"}}}).encode())
    assert r.ok, r
    wait_cohort(c, "deployments", did, r.json["cohort_id"])
    stream_users(c, "deployments", did, ["+919876543299"], variables={"first_name": "Grace"})
    a = inbound(c, "+919876543210", num)
    b = inbound(c, "+919876543299", num)
    return shown(a["agent_variables"] != {"first_name": "Ada"} or b["agent_variables"] != {"first_name": "Grace"},
                 "known callers got %r and %r" % (a["agent_variables"], b["agent_variables"]))


@probe("auth_missing_key_500", "auth_refusals_403_text")
def p_missing_key(env):
    r = env.c.get(dep_base(), key=None)
    return shown(r.status != 401 or not _error_shape(r), "no key -> %r" % r)


@probe("auth_wrong_key_reads_allowed")
def p_wrong_key(env):
    c = env.c
    create_deployment(c)
    assert c.get(dep_base()).ok
    r = c.get(dep_base(), key="sk-wrong-key")
    return shown(r.ok, "wrong key -> %d" % r.status)


@probe("auth_cross_workspace_id_lookup")
def p_cross(env):
    c, c2 = env.c, env.c2
    d = create_deployment(c)["deployment_id"]
    cid = create_campaign(c)
    create_deployment(c2, ws=WS2)
    r1 = c2.get(dep_base(WS2) + "/" + d)
    r2 = c2.get(camp_base(WS2) + "/" + cid)
    return shown(r1.ok or r2.ok, "ws-2 reads ws-1 ids: deployment %d, campaign %d" % (r1.status, r2.status))


@probe("event_retry_attempt_one_based", "event_next_action_status_null")
def p_event_retry(env):
    cid, start, ev = run_campaign(env, [magic(1)], {"max_retries": 1, "retry_on": ["busy"],
                                                    "retry_interval_minutes": 1}, advance=3600)
    assert len(ev) == 2, ev
    got = [(e["retry_attempt"], e["next_action_status"]) for e in ev]
    return shown(got != [(0, "retry"), (1, None)], "(retry_attempt, next_action_status) %r" % got)


@probe("event_duration_milliseconds")
def p_duration(env):
    cid, start, ev = run_campaign(env, [magic(0)], {"max_retries": 0, "retry_on": []}, advance=600)
    _, oev, _ = outbound_call(env)
    durs = [e["duration"] for e in ev + oev]
    return shown(any(abs(x - 90) > 1 for x in durs), "durations of 90 s calls %r" % durs)


@probe("event_executed_at_ist_as_utc")
def p_executed_at(env):
    cid, start, ev = run_campaign(env, [magic(0)], {"max_retries": 0, "retry_on": []}, advance=600)
    assert len(ev) == 1, ev
    lag = (pts(ev[0]["executed_at"]) - start).total_seconds()
    return shown(abs(lag) > 5, "first dial executed_at %s for a start at %s" % (ev[0]["executed_at"], ts(start)))


@probe("webhook_signature_body_only", "webhook_signature_not_over_sent_bytes")
def p_signature(env):
    h = env.hooks()
    c = env.c
    body = campaign_body(c, start_in=300, hook=h.url)
    cid = c.post(camp_base(), body).json["campaign_id"]
    stream_users(c, "campaigns", cid, [magic(0)])
    c.advance(to=pts(body["start_timestamp"]))
    c.advance(seconds=600)
    time.sleep(0.05)
    assert h.events, "no events"
    bad = [e for e in h.events if not e["valid"]]
    return shown(bool(bad), "%d of %d events fail HMAC-SHA256 of {timestamp}.{body}" % (len(bad), len(h.events)))


# --------------------------------------------------------------------------- transparency

def transparency_script(c, c2, hook_url):
    """A seeded sequence over every route; returns [(label, R)] and waits for events."""
    out = []

    def rec(label, r):
        out.append((label, r))
        return r

    rec("clock", c.get("/sim/v1/clock"))
    rec("outbound", c.post(outbound_path(), {
        "app_config": {"app_id": "app-1", "app_version": 1,
                       "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"},
                       "agent_variables": {"k": "v"}},
        "user_config": {"user_phone_number": magic(8)},
        "webhook_config": {"url": hook_url, "metadata": {"m": 1}}}))
    rec("outbound 422", c.post(outbound_path(), BAD_OUTBOUND))
    rec("outbound no key", c.post(outbound_path(), BAD_OUTBOUND, key=None))
    body = campaign_body(c, start_in=300, hook=hook_url, description="transparent",
                         ccs=[{"connection_id": "a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 3},
                              {"connection_id": "b", "phone_numbers": ["+14155550200"], "weight": 1}],
                         retry={"max_retries": 2, "retry_on": ["busy", "no_answer", "short_duration"],
                                "threshold_seconds": 10, "retry_interval_minutes": 5})
    camp = rec("campaign create", c.post(camp_base(), body))
    cid = camp.json["campaign_id"]
    rec("campaign 422", c.post(camp_base(), dict(body, name="bad/name", end_timestamp=body["start_timestamp"])))
    up = rec("upload", upload(c, "campaigns", cid, CSV_4))
    coh = up.json["cohort_id"]
    wait_cohort(c, "campaigns", cid, coh)
    rec("cohort get", c.get("%s/%s/cohorts/%s" % (camp_base(), cid, coh)))
    for ft in ("rejected_records", "cohort", "cohort_transformation"):
        rec("file " + ft, c.get("%s/%s/cohorts/%s/files?file_type=%s" % (camp_base(), cid, coh, ft)))
    rec("stream", c.post("%s/%s/cohorts/stream" % (camp_base(), cid),
                         {"name": "s", "users": [{"phone_number": magic(4)}, {"phone_number": magic(11, 303)}]}))
    rec("stop file", c.post("%s/%s/cohorts/stream" % (camp_base(), cid),
                            {"name": "stop", "cohort_category": "stop_file", "users": [{"phone_number": magic(9)}]}))
    rec("cohort list", c.get("%s/%s/cohorts?limit=2" % (camp_base(), cid)))
    rec("campaign patch", c.patch(camp_base() + "/" + cid, {
        "description": "patched", "app_config": {"webhook_config": {"url": hook_url, "metadata": {"v": 2}}}}))
    rec("campaign patch 422", c.patch(camp_base() + "/" + cid, {"app_config": {"attempts_per_second": 501}}))
    rec("campaign 404", c.get(camp_base() + "/camp-nope"))
    rec("campaign list", c.get(camp_base() + "?search=probe&limit=1"))
    rec("advance 1", c.post("/sim/v1/clock/advance", {"to": body["start_timestamp"]}))
    rec("advance 2", c.post("/sim/v1/clock/advance", {"seconds": 7200}))
    rec("campaign get", c.get(camp_base() + "/" + cid))
    rec("campaign pause", c.put(camp_base() + "/" + cid + "/status", {"action": "pause"}))
    rec("campaign pause again", c.put(camp_base() + "/" + cid + "/status", {"action": "pause"}))
    rec("campaign resume", c.put(camp_base() + "/" + cid + "/status", {"action": "resume"}))
    rec("campaign cancel", c.put(camp_base() + "/" + cid + "/status", {"action": "cancel"}))
    deps = []
    for i, name in enumerate(["front desk", "back office", "night line"]):
        deps.append(rec("deployment create", c.post(dep_base(), {
            "name": name, "app_id": "app-1", "app_version": 1, "description": "d%d" % i,
            "connection_configs": [{"connection_id": "c", "phone_numbers": ["+1415555030%d" % i]}],
            "inbound_config": IC_ALL if i else None})).json["deployment_id"])
        rec("advance", c.post("/sim/v1/clock/advance", {"seconds": 1}))
    rec("deployment 422", c.post(dep_base(), {"name": "x" * 60, "app_id": "a", "app_version": 1,
                                              "connection_configs": []}))
    for q in ("?limit=2", "?limit=2&offset=2", "?sort_by=name&sort_order=asc", "?search=desk",
              "?limit=0", "?offset=-1", "?limit=101"):
        rec("deployment list " + q, c.get(dep_base() + q))
    rec("deployment list other key", c2.get(dep_base()))
    rec("deployment get", c.get(dep_base() + "/" + deps[0]))
    rec("deployment patch", c.patch(dep_base() + "/" + deps[0], {"app_version": 4, "inbound_config": IC_LATE}))
    rec("deployment pause", c.put(dep_base() + "/" + deps[1] + "/status", {"action": "pause"}))
    rec("deployment pause again", c.put(dep_base() + "/" + deps[1] + "/status", {"action": "pause"}))
    rec("deployment stream", c.post(dep_cohorts(deps[2]) + "/stream", {
        "name": "callers", "users": [{"phone_number": "+919876543210", "user_identifier": "c1",
                                      "app_variables": {"first_name": "Ada"}}]}))
    rec("inbound answered", c.post(sim_ws() + "/inbound-calls", {"caller": "+919876543210", "dialled": "+14155550302"}))
    rec("inbound paused", c.post(sim_ws() + "/inbound-calls", {"caller": "+919876543210", "dialled": "+14155550301"}))
    rec("inbound schedule", c.post(sim_ws() + "/inbound-calls", {"caller": "+919876543210", "dialled": "+14155550300"}))
    dcoh = rec("deployment upload", upload(c, "deployments", deps[2], CSV_4)).json["cohort_id"]
    wait_cohort(c, "deployments", deps[2], dcoh)
    rec("deployment cohort list", c.get(dep_cohorts(deps[2])))
    rec("deployment cohort get", c.get(dep_cohorts(deps[2]) + "/" + dcoh))
    rec("deployment cohort file", c.get(dep_cohorts(deps[2]) + "/" + dcoh + "/files?file_type=rejected_records"))
    rec("deployment 404", c.get(dep_base() + "/dep-nope"))
    rec("deployment delete", c.delete(dep_base() + "/" + deps[2]))
    rec("deployment delete again", c.delete(dep_base() + "/" + deps[2]))
    rec("inbound deleted", c.post(sim_ws() + "/inbound-calls", {"caller": "+919876543210", "dialled": "+14155550302"}))
    rec("inbound list", c.get(sim_ws() + "/inbound-calls"))
    rec("head", c.req("HEAD", dep_base()))
    rec("advance 3", c.post("/sim/v1/clock/advance", {"seconds": 600}))
    rec("deliveries", c.get(sim_ws() + "/webhook-deliveries?limit=100"))
    rec("unknown route", c.get("/api/nothing/here"))
    return out


def normalise(body, stack, hook_url):
    b = body.replace(stack.url.encode(), b"<BASE>").replace(stack.platform_url.encode(), b"<BASE>")
    return b.replace(hook_url.encode(), b"<HOOK>")


def transparency(rewrite):
    runs = []
    for direct in (True, False):
        st = Stack(direct=direct, rewrite=rewrite)
        h = Hooks()
        try:
            c, c2 = Client(st.url, K1), Client(st.url, K2)
            out = transparency_script(c, c2, h.url)
            time.sleep(0.1)
            answers = [(label, r.status, r.headers.get("content-type"), r.headers.get("content-disposition"),
                        normalise(r.body, st, h.url)) for label, r in out]
            events = sorted((normalise(e["body"], st, h.url), e["ts"], e["valid"]) for e in h.events)
            if rewrite and not direct:  # the events really went through the proxy
                seen = Client(st.platform_url, K1).get(sim_ws() + "/webhook-deliveries?limit=100").json
                urls = {x["url"] for x in seen["items"]}
                assert urls and all("/__hooks/" in u for u in urls), urls
            runs.append((answers, events))
        finally:
            h.close()
            st.close()
    (a1, e1), (a2, e2) = runs
    problems = []
    assert len(a1) == len(a2)
    for x, y in zip(a1, a2):
        if x != y:
            problems.append("%s: direct %r / proxied %r" % (x[0], x[1:4] + (x[4][:300],), y[1:4] + (y[4][:300],)))
    if e1 != e2:
        problems.append("events differ: %d direct, %d proxied" % (len(e1), len(e2)))
    if not e1 or not all(v for _, _, v in e2):
        problems.append("events missing or badly signed (%d)" % len(e2))
    return problems, len(a1), len(e1)


# --------------------------------------------------------------------------- running

def run_probe(name, defect):
    st = Stack(defect=defect)
    env = Env(st, defect)
    try:
        broken, detail = PROBES[name](env)
        return broken, detail, None
    except Exception:
        return None, None, traceback.format_exc() + "\n" + st.proxy_log()[-3000:]
    finally:
        env.close()
        st.close()


def check_defect(name):
    ok_broken, ok_detail, ok_err = run_probe(name, None)
    bad_broken, bad_detail, bad_err = run_probe(name, name)
    passed = ok_err is None and bad_err is None and ok_broken is False and bad_broken is True
    return name, passed, ok_detail, bad_detail, ok_err or bad_err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("-j", "--jobs", type=int, default=3)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--skip-transparency", action="store_true")
    a = ap.parse_args()
    if not PLATFORM.exists():
        print("selftest: %s is missing; run cargo build -p platform" % PLATFORM)
        return 2
    t0 = time.time()
    failures = 0
    table = [x["name"] for x in proxymod.DEFECTS]
    listed = [x["name"] for x in json.load(open(HERE / "defects.json"))]
    if listed != table:
        print("FAIL defects.json differs from proxy.py --list-defects")
        failures += 1
    missing = [n for n in table if n not in PROBES]
    if missing:
        print("FAIL defects without a probe: %s" % missing)
        failures += 1
    if not a.skip_transparency and not a.names:
        for rewrite in (False, True):
            problems, n, ne = transparency(rewrite)
            label = "transparency%s" % (" (webhooks through the proxy)" if rewrite else "")
            if problems:
                failures += 1
                print("FAIL %s" % label)
                for p in problems:
                    print("     " + p)
            else:
                print("PASS %s: %d answers and %d webhook events identical to the platform's" % (label, n, ne))
    names = a.names or table
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for name, passed, okd, badd, err in ex.map(check_defect, names):
            if passed:
                print("PASS %-45s %s" % (name, badd))
                if a.verbose:
                    print("     transparent: %s" % okd)
            else:
                failures += 1
                print("FAIL %-45s transparent: %s | defect: %s" % (name, okd, badd))
                if err:
                    print("     " + err.replace("\n", "\n     "))
    print("selftest: %d defects checked, %d failures, %.1f s" % (len(names), failures, time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
