#!/usr/bin/env python3
"""Self-test of the round 4 proxy.

(a) Transparency: a script of requests over every route, sent to two platforms started
    with the same seed and start, one directly and one through the proxy without a defect,
    gets the same answers (status, headers but Date, body; the two base URLs and webhook
    receivers written as placeholders), and the same signed webhook events.
(b) Each defect: a probe of its own holds through a transparent proxy and fails through
    the defective one (each on a fresh platform).

    python3 selftest.py [-j N] [--only NAME[,NAME...]] [--platform PATH] [--skip-transparency]

Python 3 standard library only. Needs the platform binary (cargo build -p platform).
"""

import argparse
import concurrent.futures
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
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
PROXY = os.path.join(HERE, "proxy.py")
SECRET = "whsec_test"
SEED = "42"
START = "2026-03-02T08:00:00Z"
KEYS = {"ws-1": "sk-test-1", "ws-2": "sk-test-2"}
ORG = "org-1"
STARTED = []
STARTED_LOCK = threading.Lock()


# ---------------------------------------------------------------------------- processes

def track(p):
    with STARTED_LOCK:
        STARTED.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Platform:
    def __init__(self, binary, tmp):
        self.ready = os.path.join(tmp, "ready-%s.json" % uuid.uuid4().hex)
        self.p = track(subprocess.Popen(
            [binary, "serve", "--clock", "simulated", "--database", ":memory:",
             "--api-key", "org-1/ws-1=sk-test-1", "--api-key", "org-1/ws-2=sk-test-2",
             "--listen", "127.0.0.1:0", "--seed", SEED, "--sim-start", START,
             "--webhook-secret", SECRET, "--ready-file", self.ready],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 30
        while True:
            if os.path.exists(self.ready):
                try:
                    with open(self.ready) as f:
                        self.url = json.load(f)["url"]
                    break
                except (ValueError, KeyError):
                    pass
            if self.p.poll() is not None or time.time() > deadline:
                raise RuntimeError("the platform did not start")
            time.sleep(0.02)

    def stop(self):
        stop(self.p)


class ProxyProc:
    def __init__(self, upstream, defect, tmp):
        self.log = os.path.join(tmp, "proxy-%s-%s.log" % (defect or "transparent", uuid.uuid4().hex[:6]))
        args = [sys.executable, PROXY, "--upstream", upstream, "--listen", "127.0.0.1:0",
                "--webhook-secret", SECRET, "--verbose"]
        if defect:
            args += ["--defect", defect]
        self.errf = open(self.log, "w")
        self.p = track(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.errf, text=True))
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the proxy did not start: " + open(self.log).read()[-2000:])
        self.port = json.loads(line)["port"]
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        stop(self.p)
        self.errf.close()

    def tail(self, n=3000):
        try:
            return open(self.log).read()[-n:]
        except OSError:
            return ""


# ---------------------------------------------------------------------------- HTTP

class R:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value)
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def h(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


class Receiver:
    """Webhook receiver: records every delivery (headers, raw body) and answers 200."""

    def __init__(self):
        rx = self
        self.items = []
        self.lock = threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                with rx.lock:
                    rx.items.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                     "body": body})
                self.send_response_only(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.base = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def url(self, tag):
        return "%s/%s" % (self.base, tag)

    def got(self, tag=None):
        with self.lock:
            items = list(self.items)
        out = []
        for it in items:
            if tag is None or it["path"].split("?")[0] == "/" + tag:
                d = dict(it)
                try:
                    d["obj"] = json.loads(it["body"])
                except ValueError:
                    d["obj"] = None
                out.append(d)
        return out

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class Client:
    def __init__(self, base, rx=None):
        u = urllib.parse.urlsplit(base)
        self.base = base
        self.host, self.port = u.hostname, u.port
        self.rx = rx

    def req(self, method, path, body=None, ws="ws-1", key=None, headers=None, query=None, ctype=None,
            chunked=False):
        if query:
            path = path + "?" + urllib.parse.urlencode(query)
        h = {}
        k = key if key is not None else KEYS.get(ws)
        if k is not False and k is not None:
            h["X-API-Key"] = k
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        if isinstance(body, str):
            body = body.encode()
        if ctype:
            h["Content-Type"] = ctype
        h.update(headers or {})
        conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
        try:
            if chunked:
                conn.putrequest(method, path, skip_accept_encoding=True)
                for kk, vv in h.items():
                    conn.putheader(kk, vv)
                conn.putheader("Transfer-Encoding", "chunked")
                conn.endheaders()
                for i in range(0, len(body), 7):
                    part = body[i:i + 7]
                    conn.send(b"%x\r\n" % len(part) + part + b"\r\n")
                conn.send(b"0\r\n\r\n")
            else:
                conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return R(r.status, r.reason, r.getheaders(), r.read())
        finally:
            conn.close()

    # paths
    def camps(self, ws="ws-1"):
        return "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns" % (ORG, ws)

    def deps(self, ws="ws-1"):
        return "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments" % (ORG, ws)

    def depc(self, did, ws="ws-1"):
        return "/api/scheduling/v1/orgs/%s/workspaces/%s/deployments/%s/cohorts" % (ORG, ws, did)

    def outs(self, ws="ws-1"):
        return "/api/outbounds/v1/orgs/%s/workspaces/%s/outbounds" % (ORG, ws)

    def sim(self, rest, ws="ws-1"):
        return "/sim/v1/orgs/%s/workspaces/%s/%s" % (ORG, ws, rest)

    def now(self):
        return parse_ts(self.req("GET", "/sim/v1/clock").json["now"])

    def advance(self, seconds):
        r = self.req("POST", "/sim/v1/clock/advance", {"seconds": seconds})
        assert r.status == 200, r
        return r.json

    def advance_to(self, when):
        r = self.req("POST", "/sim/v1/clock/advance", {"to": ts(when)})
        assert r.status == 200, r
        return r.json


def parse_ts(s):
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return dt.datetime.fromisoformat(s)


def ts(d, offset=None):
    if offset is not None:
        d = d.astimezone(dt.timezone(offset))
        base = d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03d" % (d.microsecond // 1000)
        sign = "+" if offset >= dt.timedelta(0) else "-"
        mins = abs(int(offset.total_seconds())) // 60
        return base + "%s%02d:%02d" % (sign, mins // 60, mins % 60)
    d = d.astimezone(dt.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def multipart(parts):
    b = "r4selftest-0f3c9a1e5d7b"  # fixed: the two sides of the transparency script send the same bytes
    out = b""
    for name, val, fn, ct in parts:
        out += ('--%s\r\nContent-Disposition: form-data; name="%s"' % (b, name)).encode()
        if fn:
            out += ('; filename="%s"' % fn).encode()
        out += b"\r\n"
        if ct:
            out += ("Content-Type: %s\r\n" % ct).encode()
        out += b"\r\n" + (val if isinstance(val, bytes) else val.encode()) + b"\r\n"
    out += ("--%s--\r\n" % b).encode()
    return out, "multipart/form-data; boundary=" + b


# ---------------------------------------------------------------------------- probe helpers

class ProbeFail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise ProbeFail(msg)


PROBES = {}


def probe(name):
    def deco(fn):
        PROBES[name] = fn
        return fn
    return deco


ALL_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TRANSFORM = {"phone_number": {"column_name": "phone", "country_code": "US"},
             "user_identifier": {"column_name": "uid"},
             "app_variables": {"city": {"column_name": "city"}}}
CSV3 = b"phone,uid,city\n+14155550101,u1,Paris\n4155550102,u2,Lyon\nnot-a-number,u3,Nice\n"


def campaign_body(now, name="Probe campaign", start_in=600, length=4 * 3600, tz="UTC", days=None,
                  st="00:00", et="23:59", aps=1, retry=None, hook=None, conns=None, description=None):
    start = now + dt.timedelta(seconds=start_in)
    b = {"name": name,
         "start_timestamp": ts(start), "end_timestamp": ts(start + dt.timedelta(seconds=length)),
         "allowed_schedule": {"timezone": tz, "allowed_days": days or ALL_DAYS,
                              "allowed_start_time": st, "allowed_end_time": et},
         "app_config": {"app_id": "agent-probe", "app_version": 2, "attempts_per_second": aps,
                        "connection_configs": conns or [{"connection_id": "conn-a", "phone_numbers": ["+14155550100"],
                                                         "weight": 1}]}}
    if retry is not None:
        b["app_config"]["retry_config"] = retry
    if hook:
        b["app_config"]["webhook_config"] = {"url": hook, "metadata": {"probe": "r4"}}
    if description is not None:
        b["description"] = description
    return b


def create_campaign(c, ws="ws-1", **kw):
    r = c.req("POST", c.camps(ws), campaign_body(c.now(), **kw), ws=ws)
    return r


def must_campaign(c, ws="ws-1", **kw):
    r = create_campaign(c, ws=ws, **kw)
    check(r.status == 200, "campaign create answered %r" % r)
    return r.json["campaign_id"]


def get_campaign(c, cid, ws="ws-1"):
    r = c.req("GET", c.camps(ws) + "/" + cid, ws=ws)
    check(r.status == 200, "campaign GET answered %r" % r)
    return r.json


def users(n, base=1000, prefix="+1415555"):
    return [{"phone_number": "%s%04d" % (prefix, base + i), "user_identifier": "u%d" % i,
             "app_variables": {"n": i}} for i in range(n)]


def stream(c, path, us, name="probe users", ws="ws-1"):
    r = c.req("POST", path + "/cohorts/stream", {"name": name, "users": us}, ws=ws)
    check(r.status == 200, "stream answered %r" % r)
    return r.json


def deployment_body(name="Probe line", numbers=("+14155550200",), inbound=None, description=None, version=1):
    b = {"name": name, "app_id": "agent-probe", "app_version": version,
         "connection_configs": [{"connection_id": "conn-d", "phone_numbers": list(numbers)}]}
    if inbound is not None:
        b["inbound_config"] = inbound
    if description is not None:
        b["description"] = description
    return b


def must_deployment(c, ws="ws-1", **kw):
    r = c.req("POST", c.deps(ws), deployment_body(**kw), ws=ws)
    check(r.status == 200, "deployment create answered %r" % r)
    return r.json["deployment_id"]


def upload(c, path, csv_bytes=CSV3, name="probe upload", tf=None, ws="ws-1"):
    body, ct = multipart([("name", name, None, None),
                          ("cohort_file", csv_bytes, "users.csv", "text/csv"),
                          ("cohort_transformation_file", json.dumps(tf or TRANSFORM), "t.json", "application/json")])
    return c.req("POST", path + "/cohorts/upload", body, ws=ws, ctype=ct)


def settle(c, cohort_path, ws="ws-1", timeout=4):
    deadline = time.time() + timeout
    while True:
        r = c.req("GET", cohort_path, ws=ws)
        if r.status == 200 and r.json.get("status") != "processing":
            return r.json
        if time.time() > deadline:
            return r.json if r.status == 200 else None
        time.sleep(0.05)


def outbound_body(number="+14155551234", hook=None, metadata=None):
    b = {"app_config": {"app_id": "agent-probe", "app_version": 1,
                        "connection_config": {"connection_id": "conn-o", "agent_phone_number": "+14155550999"},
                        "agent_variables": {"x": 1}},
         "user_config": {"user_phone_number": number}}
    if hook:
        b["webhook_config"] = {"url": hook, "metadata": metadata if metadata is not None else {"order": 7}}
    return b


def sig_ok(d):
    t = d["headers"].get("x-webhook-timestamp", "")
    s = d["headers"].get("x-webhook-signature")
    want = hmac.new(SECRET.encode(), t.encode() + b"." + d["body"], hashlib.sha256).hexdigest()
    return s is not None and hmac.compare_digest(s, want)


def run_campaign(c, n=12, retry=None, tz="UTC", conns=None, adv=3600, tag="camp"):
    if retry is None:
        retry = {"max_retries": 1, "retry_on": ["busy", "no_answer", "failed", "short_duration"],
                 "threshold_seconds": 30, "retry_interval_minutes": 1}
    now = c.now()
    cid = must_campaign(c, start_in=130, tz=tz, retry=retry, hook=c.rx.url(tag), conns=conns)
    coh = stream(c, c.camps() + "/" + cid, users(n))
    a = c.advance(adv)
    evs = [e for e in c.rx.got(tag) if isinstance(e["obj"], dict)]
    return {"cid": cid, "cohort_id": coh["cohort_id"], "events": evs, "adv": a, "start": now + dt.timedelta(seconds=130),
            "retry": retry}


def by_user(evs):
    out = {}
    for e in evs:
        out.setdefault(e["obj"]["user_phone_number"], []).append(e["obj"])
    return out


# ---------------------------------------------------------------------------- probes: outbound

@probe("outbound_created_201")
def _(c):
    r = c.req("POST", c.outs(), outbound_body())
    check(r.status == 200, "outbound create answered %d, the contract says 200" % r.status)
    check(isinstance(r.json, dict) and isinstance(r.json.get("attempt_id"), str), "no attempt_id")


@probe("outbound_loc_without_body")
def _(c):
    b = outbound_body()
    del b["user_config"]["user_phone_number"]
    r = c.req("POST", c.outs(), b)
    check(r.status == 422, "answered %r" % r)
    locs = [d.get("loc") for d in r.json.get("detail", [])]
    check(["body", "user_config", "user_phone_number"] in locs, "loc not the path from body: %r" % locs)


@probe("outbound_answer_text_plain")
def _(c):
    r = c.req("POST", c.outs(), outbound_body())
    ct = (r.h("content-type") or "").split(";")[0].strip().lower()
    check(r.status == 200 and ct == "application/json", "answered %d with %r" % (r.status, r.h("content-type")))


def outbound_events(c, n=1, metadata=None):
    ids = []
    for i in range(n):
        r = c.req("POST", c.outs(), outbound_body("+1415555%04d" % (1300 + i), hook=c.rx.url("out"), metadata=metadata))
        check(r.status == 200, "outbound answered %r" % r)
        ids.append(r.json["attempt_id"])
    a = c.advance(600)
    return ids, c.rx.got("out"), a


@probe("outbound_event_metadata_null")
def _(c):
    meta = {"order": 7, "tags": ["a", "b"]}
    ids, evs, _ = outbound_events(c, metadata=meta)
    check(evs, "no event")
    for e in evs:
        check(e["obj"]["webhook_config"].get("metadata") == meta, "metadata %r" % e["obj"]["webhook_config"])


@probe("outbound_event_attempt_id_upper")
def _(c):
    ids, evs, _ = outbound_events(c, n=2)
    got = sorted(e["obj"]["attempt_id"] for e in evs)
    check(got == sorted(ids), "event attempt ids %r, answered %r" % (got, ids))


@probe("outbound_event_busy_as_failed")
def _(c):
    ids, evs, _ = outbound_events(c, n=40)
    busy = [e["obj"] for e in evs if e["obj"].get("failure_reason") == "busy"]
    check(busy, "no busy call among 40 (cannot judge)")
    for e in busy:
        check(e["status"] == "busy", "a busy call reported status %r" % e["status"])


@probe("outbound_event_dropped")
def _(c):
    ids, evs, _ = outbound_events(c, n=2)
    for i in ids:
        n = sum(1 for e in evs if e["obj"].get("attempt_id") == i)
        check(n == 1, "%d events for attempt %s" % (n, i))


# ---------------------------------------------------------------------------- probes: signing

def one_signed(c):
    ids, evs, a = outbound_events(c)
    check(len(evs) == 1, "%d events" % len(evs))
    return evs[0], a


@probe("webhook_signature_stale_body")
def _(c):
    d, _ = one_signed(c)
    check(sig_ok(d), "signature does not verify over the bytes received")


@probe("webhook_signature_body_only")
def _(c):
    run = run_campaign(c, n=2, adv=600)
    check(run["events"], "no campaign event")
    for d in run["events"]:
        check(sig_ok(d), "campaign event signature is not HMAC of {timestamp}.{body}")


@probe("webhook_signature_uppercase_hex")
def _(c):
    d, _ = one_signed(c)
    s = d["headers"].get("x-webhook-signature", "")
    check(re.match(r"^[0-9a-f]{64}$", s), "signature %r is not lower-case hex" % s)
    check(sig_ok(d), "signature does not verify")


@probe("webhook_timestamp_milliseconds")
def _(c):
    d, a = one_signed(c)
    t = d["headers"].get("x-webhook-timestamp", "")
    check(re.match(r"^\d+$", t), "timestamp %r" % t)
    lo, hi = parse_ts(a["from"]).timestamp(), parse_ts(a["now"]).timestamp()
    check(lo <= int(t) <= hi, "timestamp %s not Unix seconds within the advance [%d, %d]" % (t, lo, hi))


@probe("webhook_timestamp_wall_clock")
def _(c):
    run = run_campaign(c, n=3, adv=600)
    check(run["events"], "no campaign event")
    for d in run["events"]:
        t = int(d["headers"].get("x-webhook-timestamp", "0"))
        ex = parse_ts(d["obj"]["executed_at"]).timestamp()
        check(ex <= t <= parse_ts(run["adv"]["now"]).timestamp(),
              "timestamp %d outside [executed_at %d, simulated now]" % (t, ex))


# ---------------------------------------------------------------------------- probes: campaign events

@probe("campaign_event_retry_attempt_from_one")
def _(c):
    run = run_campaign(c, n=6)
    bu = by_user(run["events"])
    check(bu, "no events")
    for u, evs in bu.items():
        evs.sort(key=lambda e: e["executed_at"])
        check([e["retry_attempt"] for e in evs] == list(range(len(evs))),
              "%s retry_attempt %r" % (u, [e["retry_attempt"] for e in evs]))


@probe("campaign_event_short_call_completed")
def _(c):
    retry = {"max_retries": 0, "retry_on": ["short_duration"], "threshold_seconds": 1200, "retry_interval_minutes": 1}
    run = run_campaign(c, n=12, retry=retry)
    conn = [e["obj"] for e in run["events"] if e["obj"].get("connectivity_status") == "connected"]
    check(conn, "no connected call (cannot judge)")
    for e in conn:
        check(e["duration"] < 1200, "duration %r" % e["duration"])
        check(e["completion_status"] == "partial", "a %.1f s call under a 1200 s threshold is %r"
              % (e["duration"], e["completion_status"]))


@probe("campaign_event_executed_at_local_z")
def _(c):
    run = run_campaign(c, n=4, tz="Asia/Tokyo", adv=900)
    check(run["events"], "no events")
    for d in run["events"]:
        ex = parse_ts(d["obj"]["executed_at"])
        sent = int(d["headers"]["x-webhook-timestamp"])
        check(run["start"] <= ex and ex.timestamp() <= sent + 1,
              "executed_at %s not between the start and the delivery (%d)" % (d["obj"]["executed_at"], sent))


@probe("campaign_event_phone_without_plus")
def _(c):
    run = run_campaign(c, n=4, adv=900)
    sent = {u["phone_number"] for u in users(4)}
    check(run["events"], "no events")
    for e in run["events"]:
        check(e["obj"]["user_phone_number"] in sent, "user_phone_number %r" % e["obj"]["user_phone_number"])


@probe("campaign_event_cohort_id_is_campaign_id")
def _(c):
    run = run_campaign(c, n=3, adv=900)
    check(run["events"], "no events")
    for e in run["events"]:
        check(e["obj"]["cohort_id"] == run["cohort_id"], "cohort_id %r, the cohort is %r"
              % (e["obj"]["cohort_id"], run["cohort_id"]))
        check(e["obj"]["campaign_id"] == run["cid"], "campaign_id %r" % e["obj"]["campaign_id"])


@probe("campaign_event_agent_number_fixed")
def _(c):
    conns = [{"connection_id": "conn-a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 1},
             {"connection_id": "conn-b", "phone_numbers": ["+14155550102"], "weight": 1}]
    retry = {"max_retries": 0, "retry_on": [], "threshold_seconds": 10, "retry_interval_minutes": 1}
    run = run_campaign(c, n=12, retry=retry, conns=conns, adv=900)
    counts = {}
    for e in run["events"]:
        counts[e["obj"]["agent_phone_number"]] = counts.get(e["obj"]["agent_phone_number"], 0) + 1
    check(len(run["events"]) == 12, "%d events" % len(run["events"]))
    a = counts.get("+14155550100", 0) + counts.get("+14155550101", 0)
    b = counts.get("+14155550102", 0)
    check(abs(a - 6) <= 1 and abs(b - 6) <= 1, "weights 1:1 split %d:%d (%r)" % (a, b, counts))
    check(abs(counts.get("+14155550100", 0) - counts.get("+14155550101", 0)) <= 1, "numbers not used equally %r" % counts)


@probe("campaign_event_extra_attempt")
def _(c):
    run = run_campaign(c, n=12)
    bu = by_user(run["events"])
    check(bu, "no events")
    for u, evs in bu.items():
        check(len(evs) <= 2, "%s: %d attempts with max_retries 1" % (u, len(evs)))
        check(all(e["retry_attempt"] <= 1 for e in evs), "%s: retry_attempt beyond 1" % u)


@probe("campaign_event_retries_dropped")
def _(c):
    run = run_campaign(c, n=12)
    st = get_campaign(c, run["cid"])["statistics"]
    check(st["users_in_progress"] == 0, "calls still in progress")
    check(len(run["events"]) == st["attempts_total"], "%d events for %d attempts"
          % (len(run["events"]), st["attempts_total"]))
    check(st["attempts_total"] > 12, "no retry made (cannot judge)")


# ---------------------------------------------------------------------------- probes: campaigns

@probe("campaign_create_active_near_start")
def _(c):
    r = create_campaign(c, start_in=300)
    check(r.status == 200, "create answered %r" % r)
    check(r.json["status"] == "scheduled", "created with status %r" % r.json["status"])


@probe("campaign_description_truncated_128")
def _(c):
    desc = ("Spring outreach to members " * 10)[:140]
    r = create_campaign(c, description=desc)
    check(r.status == 200, "create answered %r" % r)
    check(r.json.get("description") == desc, "create answer description %r" % r.json.get("description"))
    check(get_campaign(c, r.json["campaign_id"]).get("description") == desc, "GET description differs")


@probe("campaign_offset_dropped")
def _(c):
    now = c.now()
    start = now + dt.timedelta(days=1)
    end = start + dt.timedelta(days=2)
    b = campaign_body(now)
    b["start_timestamp"] = ts(start, dt.timedelta(hours=5, minutes=30))
    b["end_timestamp"] = ts(end, dt.timedelta(hours=-3))
    r = c.req("POST", c.camps(), b)
    check(r.status == 200, "create answered %r" % r)
    g = get_campaign(c, r.json["campaign_id"])
    check(parse_ts(g["start_timestamp"]) == start, "start %s, sent %s" % (g["start_timestamp"], b["start_timestamp"]))
    check(parse_ts(g["end_timestamp"]) == end, "end %s, sent %s" % (g["end_timestamp"], b["end_timestamp"]))


@probe("campaign_timestamps_whole_seconds")
def _(c):
    now = c.now()
    start = now + dt.timedelta(seconds=3600.25)
    end = start + dt.timedelta(hours=5, milliseconds=125)
    b = campaign_body(now)
    b["start_timestamp"], b["end_timestamp"] = ts(start), ts(end)
    r = c.req("POST", c.camps(), b)
    check(r.status == 200, "create answered %r" % r)
    g = get_campaign(c, r.json["campaign_id"])
    check(parse_ts(g["start_timestamp"]) == start, "start %s, sent %s" % (g["start_timestamp"], b["start_timestamp"]))
    check(parse_ts(g["end_timestamp"]) == end, "end %s, sent %s" % (g["end_timestamp"], b["end_timestamp"]))


@probe("campaign_rate_one_decimal")
def _(c):
    cid = must_campaign(c, aps=0.25)
    got = get_campaign(c, cid)["app_config"]["attempts_per_second"]
    check(got == 0.25, "attempts_per_second %r, sent 0.25" % got)


@probe("campaign_list_names_lowercased")
def _(c):
    cid = must_campaign(c, name="Mixed Case Promo")
    r = c.req("GET", c.camps())
    names = [i["name"] for i in r.json["items"] if i["campaign_id"] == cid]
    check(names == ["Mixed Case Promo"], "list shows %r" % names)


@probe("campaign_list_status_filter_ignored")
def _(c):
    a = must_campaign(c, name="Keep going")
    b = must_campaign(c, name="To cancel")
    check(c.req("PUT", c.camps() + "/" + b + "/status", {"action": "cancel"}).status == 200, "cancel failed")
    r = c.req("GET", c.camps(), query={"campaign_status": "cancelled"})
    ids = [i["campaign_id"] for i in r.json["items"]]
    check(ids == [b] and r.json["total"] == 1, "campaign_status=cancelled lists %r (total %r)" % (ids, r.json["total"]))
    check(a not in ids, "scheduled campaign listed")


@probe("campaign_list_default_ascending")
def _(c):
    a = must_campaign(c, name="Older")
    c.advance(1)
    b = must_campaign(c, name="Newer")
    ids = [i["campaign_id"] for i in c.req("GET", c.camps()).json["items"]]
    check(ids.index(b) < ids.index(a), "default order lists the older first: %r" % ids)


@probe("campaign_list_other_workspace")
def _(c):
    other = must_campaign(c, ws="ws-2", name="Shared name")
    c.req("GET", c.camps("ws-2"), ws="ws-2")
    own = must_campaign(c, name="Shared name")
    for q in (None, {"search": "Shared"}):
        r = c.req("GET", c.camps(), query=q)
        ids = [i["campaign_id"] for i in r.json["items"]]
        check(ids == [own] and r.json["total"] == 1, "ws-1 list %r shows %r (total %r)" % (q, ids, r.json["total"]))
        check(other not in ids, "another workspace's campaign listed")


@probe("campaign_search_case_sensitive")
def _(c):
    cid = must_campaign(c, name="Spring Promo")
    must_campaign(c, name="Autumn sale")
    r = c.req("GET", c.camps(), query={"search": "spring"})
    ids = [i["campaign_id"] for i in r.json["items"]]
    check(ids == [cid] and r.json["total"] == 1, "search=spring lists %r" % ids)


@probe("campaign_budget_without_first_dial")
def _(c):
    retry = {"max_retries": 2, "retry_on": ["busy"], "threshold_seconds": 10, "retry_interval_minutes": 30}
    cid = must_campaign(c, retry=retry)
    stream(c, c.camps() + "/" + cid, users(3))
    st = get_campaign(c, cid)["statistics"]
    check(st["users_total"] == 3, "users_total %r" % st["users_total"])
    check(st["attempt_budget"] == 9, "attempt_budget %r for 3 users x (1 + 2)" % st["attempt_budget"])


@probe("campaign_patch_retry_config_reset")
def _(c):
    retry = {"max_retries": 2, "retry_on": ["busy", "no_answer"], "threshold_seconds": 45, "retry_interval_minutes": 15}
    cid = must_campaign(c, retry=retry)
    r = c.req("PATCH", c.camps() + "/" + cid, {"app_config": {"retry_config": {"max_retries": 1}}})
    check(r.status == 200, "PATCH answered %r" % r)
    rc = get_campaign(c, cid)["app_config"]["retry_config"]
    want = dict(retry, max_retries=1)
    check(rc == want, "retry_config %r, expected %r" % (rc, want))


@probe("campaign_patch_while_active")
def _(c):
    cid = must_campaign(c, start_in=130, name="Running")
    c.advance(140)
    check(get_campaign(c, cid)["status"] == "active", "not active")
    r = c.req("PATCH", c.camps() + "/" + cid, {"name": "Renamed while running"})
    check(400 <= r.status < 500, "PATCH of an active campaign answered %d" % r.status)
    g = get_campaign(c, cid)
    check(g["name"] == "Running" and g["status"] == "active", "state changed: %r %r" % (g["name"], g["status"]))


@probe("campaign_patch_refused_partly_applied")
def _(c):
    cid = must_campaign(c, name="Before")
    start = parse_ts(get_campaign(c, cid)["start_timestamp"])
    r = c.req("PATCH", c.camps() + "/" + cid,
              {"name": "After", "end_timestamp": ts(start + dt.timedelta(seconds=60))})
    check(r.status == 422, "PATCH answered %r" % r)
    check(get_campaign(c, cid)["name"] == "Before", "a refused PATCH changed the name")


@probe("campaign_cancel_paused_refused")
def _(c):
    cid = must_campaign(c)
    check(c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "pause"}).status == 200, "pause refused")
    r = c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "cancel"})
    check(r.status == 200 and r.json["status"] == "cancelled", "cancel of a paused campaign answered %r" % r)
    check(get_campaign(c, cid)["status"] == "cancelled", "not cancelled")


@probe("campaign_status_answer_previous")
def _(c):
    cid = must_campaign(c)
    r = c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "pause"})
    check(r.status == 200 and r.json["status"] == "paused", "pause answered status %r" % (r.json or {}).get("status"))
    r = c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "resume"})
    check(r.status == 200 and r.json["status"] in ("scheduled", "active"), "resume answered %r" % r.json.get("status"))


@probe("campaign_not_ended")
def _(c):
    cid = must_campaign(c, start_in=130, length=130)
    c.advance(300)
    check(get_campaign(c, cid)["status"] == "ended", "status %r after the end" % get_campaign(c, cid)["status"])
    items = c.req("GET", c.camps()).json["items"]
    check([i["status"] for i in items if i["campaign_id"] == cid] == ["ended"], "list status after the end")


@probe("campaign_activation_minute_late")
def _(c):
    cid = must_campaign(c, start_in=130)
    c.advance(131)
    s = get_campaign(c, cid)["status"]
    check(s == "active", "status %r 1 s after the start" % s)


# ---------------------------------------------------------------------------- probes: windows

def window_dials(c, st, et, tz="UTC", n=200, adv=360, days=None, length=4 * 3600):
    cid = must_campaign(c, start_in=130, st=st, et=et, tz=tz, days=days, length=length,
                        retry={"max_retries": 0, "retry_on": [], "threshold_seconds": 10, "retry_interval_minutes": 1})
    stream(c, c.camps() + "/" + cid, users(min(n, 1000)))
    if n > 1000:
        stream(c, c.camps() + "/" + cid, users(n - 1000, base=5000), name="more")
    c.advance(adv)
    g = get_campaign(c, cid)
    return g, g["statistics"]["attempts_total"]


@probe("window_end_minute_late")
def _(c):
    g, n = window_dials(c, "08:00", "08:03")
    check(g["allowed_schedule"]["allowed_end_time"] == "08:03", "window answered %r" % g["allowed_schedule"])
    check(0 < n <= 51, "%d dials in a window closing 50 s after the start at 1 a second" % n)


@probe("window_zone_standard_time")
def _(c):
    g, n = window_dials(c, "19:00", "19:05", tz="Australia/Sydney", n=100)
    check(g["allowed_schedule"]["timezone"] == "Australia/Sydney", "zone answered %r" % g["allowed_schedule"])
    check(n > 0, "no dial inside 19:00-19:05 Sydney summer time (08:00-08:05 UTC)")


@probe("window_overnight_cut_at_midnight")
def _(c):
    now = c.now()
    until = (now + dt.timedelta(days=1)).replace(hour=0, minute=2, second=0, microsecond=0)
    g, n = window_dials(c, "23:59", "00:01", n=300, adv=(until - now).total_seconds(), length=2 * 86400)
    check(n >= 100, "%d dials in the 2-minute window 23:59-00:01 at 1 a second" % n)


@probe("window_lowercase_days_dropped")
def _(c):
    g, n = window_dials(c, "00:00", "23:59", n=5, adv=300, days=["Sunday", "monday"])
    check(g["allowed_schedule"]["allowed_days"] == ["Monday", "Sunday"], "days answered %r" % g["allowed_schedule"])
    check(n > 0, "no dial on a Monday allowed as 'monday'")


# ---------------------------------------------------------------------------- probes: cohorts

@probe("cohort_upload_202")
def _(c):
    did = must_deployment(c)
    r = upload(c, c.depc(did)[: -len("/cohorts")])
    check(r.status == 200, "upload answered %d" % r.status)


@probe("cohort_upload_answers_settled")
def _(c):
    cid = must_campaign(c)
    r = upload(c, c.camps() + "/" + cid)
    check(r.status == 200 and r.json["status"] == "processing", "upload answered %r" % r)


@probe("cohort_total_counts_header")
def _(c):
    cid = must_campaign(c)
    r = upload(c, c.camps() + "/" + cid)
    coh = settle(c, c.camps() + "/" + cid + "/cohorts/" + r.json["cohort_id"])
    res = coh["result"]
    check(res["total_records"] == 3, "total_records %r for 3 rows" % res["total_records"])
    check(res["valid_records"] + res["rejected_records"] == res["total_records"], "counts %r" % res)
    lst = c.req("GET", c.camps() + "/" + cid + "/cohorts").json["items"]
    check(lst[0]["result"] == res, "list result %r" % lst[0]["result"])


@probe("cohort_stream_total_is_valid")
def _(c):
    cid = must_campaign(c)
    us = users(2) + [{"phone_number": "12"}]
    res = stream(c, c.camps() + "/" + cid, us)["result"]
    check(res["total_records"] == 3 and res["rejected_records"] == 1, "stream result %r for 3 users, 1 bad" % res)


@probe("cohort_stream_1001_accepted")
def _(c):
    cid = must_campaign(c)
    r = c.req("POST", c.camps() + "/" + cid + "/cohorts/stream", {"name": "too many", "users": users(1001)})
    check(400 <= r.status < 500, "a stream of 1001 users answered %d" % r.status)


@probe("cohort_list_other_campaigns")
def _(c):
    a = must_campaign(c, name="First")
    b = must_campaign(c, name="Second")
    ca = stream(c, c.camps() + "/" + a, users(2))["cohort_id"]
    stream(c, c.camps() + "/" + b, users(2, base=2000))
    r = c.req("GET", c.camps() + "/" + a + "/cohorts")
    ids = [i["cohort_id"] for i in r.json["items"]]
    check(ids == [ca] and r.json["total"] == 1, "campaign's cohort list %r (total %r)" % (ids, r.json["total"]))


@probe("cohort_list_newest_first")
def _(c):
    did = must_deployment(c)
    base = c.depc(did)[: -len("/cohorts")]
    first = stream(c, base, users(2), name="first")["cohort_id"]
    second = stream(c, base, users(2, base=3000), name="second")["cohort_id"]
    ids = [i["cohort_id"] for i in c.req("GET", c.depc(did)).json["items"]]
    check(ids == [first, second], "list order %r, uploaded %r" % (ids, [first, second]))


@probe("cohort_rejected_file_all_rows")
def _(c):
    cid = must_campaign(c)
    r = upload(c, c.camps() + "/" + cid)
    path = c.camps() + "/" + cid + "/cohorts/" + r.json["cohort_id"]
    coh = settle(c, path)
    n = coh["result"]["rejected_records"]
    check(n == 1, "rejected_records %r" % n)
    f = c.req("GET", path + "/files", query={"file_type": "rejected_records"})
    check(f.status == 200, "file answered %d" % f.status)
    rows = [x for x in csv.reader(io.StringIO(f.body.decode())) if x]
    check(rows[0][-1] == "rejected_reason", "header %r" % rows[0])
    check(len(rows) - 1 == n, "%d rows in the file for %d rejected records" % (len(rows) - 1, n))
    check(all(x[-1] for x in rows[1:]), "a row without a reason")


@probe("cohort_file_octet_stream")
def _(c):
    cid = must_campaign(c)
    r = upload(c, c.camps() + "/" + cid)
    path = c.camps() + "/" + cid + "/cohorts/" + r.json["cohort_id"]
    settle(c, path)
    f = c.req("GET", path + "/files", query={"file_type": "cohort"})
    check(f.status == 200 and (f.h("content-type") or "").startswith("text/csv"), "cohort file %d %r"
          % (f.status, f.h("content-type")))


@probe("cohort_file_crlf")
def _(c):
    did = must_deployment(c)
    r = upload(c, c.depc(did)[: -len("/cohorts")])
    path = c.depc(did) + "/" + r.json["cohort_id"]
    settle(c, path)
    f = c.req("GET", path + "/files", query={"file_type": "cohort"})
    check(f.status == 200 and f.body == CSV3, "cohort file not byte for byte: %r" % f.body[:80])


@probe("cohort_deployment_stuck_processing")
def _(c):
    did = must_deployment(c)
    r = upload(c, c.depc(did)[: -len("/cohorts")])
    coh = settle(c, c.depc(did) + "/" + r.json["cohort_id"])
    check(coh["status"] == "completed" and coh["result"], "cohort still %r" % coh["status"])


# ---------------------------------------------------------------------------- probes: deployments

@probe("deployment_name_trimmed")
def _(c):
    r = c.req("POST", c.deps(), deployment_body(name=" Front desk "))
    check(r.status == 200 and r.json["name"] == " Front desk ", "created name %r" % (r.json or {}).get("name"))
    g = c.req("GET", c.deps() + "/" + r.json["deployment_id"]).json
    check(g["name"] == " Front desk ", "GET name %r" % g["name"])


@probe("deployment_list_numbers_without_plus")
def _(c):
    nums = ["+14155550200", "+442071838750"]
    did = must_deployment(c, numbers=nums)
    it = [i for i in c.req("GET", c.deps()).json["items"] if i["deployment_id"] == did]
    check(it and sorted(it[0]["phone_numbers"]) == sorted(nums), "phone_numbers %r" % (it and it[0]["phone_numbers"]))


@probe("deployment_list_total_page_size")
def _(c):
    for i in range(3):
        must_deployment(c, name="line %d" % i, numbers=["+1415555030%d" % i])
    r = c.req("GET", c.deps(), query={"limit": 2})
    check(len(r.json["items"]) == 2 and r.json["total"] == 3, "total %r" % r.json["total"])


@probe("deployment_list_limit_101_accepted")
def _(c):
    r = c.req("GET", c.deps(), query={"limit": 101})
    check(r.status == 422, "limit=101 answered %d" % r.status)
    check(c.req("GET", c.deps(), query={"limit": 100}).status == 200, "limit=100 refused")


@probe("deployment_list_offset_negative_accepted")
def _(c):
    r = c.req("GET", c.deps(), query={"offset": -1})
    check(r.status == 422, "offset=-1 answered %d" % r.status)


@probe("deployment_list_next_drops_search")
def _(c):
    for i, n in enumerate(["match one", "other one", "match two", "other two", "match three"]):
        must_deployment(c, name=n, numbers=["+1415555040%d" % i])
    seen = []
    url = c.deps() + "?search=match&limit=1"
    for _ in range(10):
        r = c.req("GET", url)
        check(r.status == 200 and r.json["total"] == 3, "page %s: %r" % (url, r))
        seen += [i["name"] for i in r.json["items"]]
        nxt = r.json.get("next_page_uri")
        if not nxt:
            break
        sp = urllib.parse.urlsplit(nxt)
        url = sp.path + "?" + sp.query
    check(sorted(seen) == ["match one", "match three", "match two"], "walk gave %r" % seen)


@probe("deployment_list_sort_order_ignored")
def _(c):
    a = must_deployment(c, name="older", numbers=["+14155550501"])
    c.advance(1)
    b = must_deployment(c, name="newer", numbers=["+14155550502"])
    asc = [i["deployment_id"] for i in c.req("GET", c.deps(), query={"sort_by": "created_at", "sort_order": "asc"}).json["items"]]
    desc = [i["deployment_id"] for i in c.req("GET", c.deps(), query={"sort_by": "created_at", "sort_order": "desc"}).json["items"]]
    check(asc == [a, b] and desc == [b, a], "asc %r desc %r" % (asc, desc))


@probe("deployment_list_prev_on_first")
def _(c):
    must_deployment(c, name="one", numbers=["+14155550601"])
    must_deployment(c, name="two", numbers=["+14155550602"])
    for q in ({"limit": 1}, {"limit": 1, "offset": 0}):
        r = c.req("GET", c.deps(), query=q)
        check(r.json["prev_page_uri"] is None, "first page %r has prev_page_uri %r" % (q, r.json["prev_page_uri"]))
        check(r.json["next_page_uri"], "first page without next_page_uri")


@probe("deployment_list_next_on_last")
def _(c):
    must_deployment(c, name="one", numbers=["+14155550701"])
    must_deployment(c, name="two", numbers=["+14155550702"])
    for q in ({"limit": 2}, {"limit": 1, "offset": 1}):
        r = c.req("GET", c.deps(), query=q)
        check(r.json["next_page_uri"] is None, "last page %r has next_page_uri %r" % (q, r.json["next_page_uri"]))


@probe("deployment_patch_clears_description")
def _(c):
    did = must_deployment(c, description="Main support line")
    r = c.req("PATCH", c.deps() + "/" + did, {"app_version": 2})
    check(r.status == 200 and r.json["app_version"] == 2, "PATCH answered %r" % r)
    g = c.req("GET", c.deps() + "/" + did).json
    check(g["description"] == "Main support line", "description %r after a PATCH of app_version" % g["description"])


@probe("deployment_patch_inbound_null_ignored")
def _(c):
    ic = {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday"], "timezone": "UTC"}
    did = must_deployment(c, inbound=ic)
    r = c.req("PATCH", c.deps() + "/" + did, {"inbound_config": None})
    check(r.status == 200, "PATCH answered %r" % r)
    g = c.req("GET", c.deps() + "/" + did).json
    check(g["inbound_config"] is None, "inbound_config %r after PATCH null" % g["inbound_config"])


@probe("deployment_patch_version_float")
def _(c):
    did = must_deployment(c)
    r = c.req("PATCH", c.deps() + "/" + did, {"app_version": 4})
    v = r.json.get("app_version")
    check(r.status == 200 and type(v) is int and v == 4, "app_version answered %r (%s)" % (v, type(v).__name__))


@probe("deployment_pause_not_applied")
def _(c):
    did = must_deployment(c, numbers=["+14155550800"])
    r = c.req("PUT", c.deps() + "/" + did + "/status", {"action": "pause"})
    check(r.status == 200 and r.json["status"] == "paused", "pause answered %r" % r)
    check(c.req("GET", c.deps() + "/" + did).json["status"] == "paused", "GET not paused")
    call = c.req("POST", c.sim("inbound-calls"), {"caller": "+14155557777", "dialled": "+14155550800"}).json
    check(call["answered"] is False, "a paused deployment answered a call")


@probe("deployment_delete_soft")
def _(c):
    did = must_deployment(c, numbers=["+14155550810"])
    r = c.req("DELETE", c.deps() + "/" + did)
    check(200 <= r.status < 300, "DELETE answered %d" % r.status)
    g = c.req("GET", c.deps() + "/" + did)
    check(g.status == 404, "a deleted deployment answers GET %d" % g.status)
    call = c.req("POST", c.sim("inbound-calls"), {"caller": "+14155557777", "dialled": "+14155550810"}).json
    check(call["answered"] is False and call["deployment_id"] is None, "deleted deployment still routed: %r" % call)


@probe("deployment_delete_error_detail")
def _(c):
    r = c.req("DELETE", c.deps() + "/dep-00000000000000000000")
    check(r.status == 404, "DELETE unknown answered %d" % r.status)
    e = (r.json or {}).get("error")
    check(isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code")),
          "error body %r" % r.body[:200])


@probe("deployment_list_error_code_integer")
def _(c):
    r = c.req("GET", c.deps(), key="sk-wrong")
    check(400 <= r.status < 500, "wrong key answered %d" % r.status)
    e = (r.json or {}).get("error")
    check(isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code")),
          "error body %r" % r.body[:200])


@probe("deployment_schedule_utc")
def _(c):
    ic = {"start_time": "17:00", "end_time": "17:10", "allowed_days": ALL_DAYS, "timezone": "Asia/Tokyo"}
    did = must_deployment(c, inbound=ic, numbers=["+14155550820"])
    check(c.req("GET", c.deps() + "/" + did).json["inbound_config"]["timezone"] == "Asia/Tokyo", "zone answered")
    c.advance(60)
    call = c.req("POST", c.sim("inbound-calls"), {"caller": "+14155557777", "dialled": "+14155550820"}).json
    check(call["answered"] is True, "a call at 17:01 Tokyo inside 17:00-17:10 not answered (%r)" % call["rejection"])


@probe("deployment_schedule_end_minute_late")
def _(c):
    ic = {"start_time": "08:00", "end_time": "08:05", "allowed_days": ALL_DAYS, "timezone": "UTC"}
    must_deployment(c, inbound=ic, numbers=["+14155550830"])
    c.advance(270)
    inside = c.req("POST", c.sim("inbound-calls"), {"caller": "+14155557777", "dialled": "+14155550830"}).json
    c.advance(60)
    outside = c.req("POST", c.sim("inbound-calls"), {"caller": "+14155557778", "dialled": "+14155550830"}).json
    check(inside["answered"] is True, "08:04:30 not answered")
    check(outside["answered"] is False, "08:05:30 answered in a window ending 08:05")


@probe("deployment_overnight_refused")
def _(c):
    ic = {"start_time": "22:00", "end_time": "02:00", "allowed_days": ALL_DAYS, "timezone": "UTC"}
    r = c.req("POST", c.deps(), deployment_body(inbound=ic))
    check(r.status == 200, "overnight schedule answered %r" % r)


@probe("deployment_description_150_refused")
def _(c):
    r = c.req("POST", c.deps(), deployment_body(description="x" * 150))
    check(r.status == 200 and len(r.json["description"]) == 150, "150 characters answered %r" % r)


@probe("deployment_name_dot_accepted")
def _(c):
    r = c.req("POST", c.deps(), deployment_body(name="front.desk"))
    check(r.status == 422, "name 'front.desk' answered %d" % r.status)


# ---------------------------------------------------------------------------- probes: limits

@probe("limit_start_60s_accepted")
def _(c):
    r = create_campaign(c, start_in=90)
    check(400 <= r.status < 500, "start 90 s ahead answered %d" % r.status)
    check(create_campaign(c, start_in=120).status == 200, "start 120 s ahead refused")


@probe("limit_end_30d_1h_accepted")
def _(c):
    r = create_campaign(c, length=30 * 86400 + 1800)
    check(400 <= r.status < 500, "end 30 days 30 min after the start answered %d" % r.status)
    check(create_campaign(c, length=30 * 86400).status == 200, "end 30 days after the start refused")


@probe("limit_aps_500_refused")
def _(c):
    r = create_campaign(c, aps=500)
    check(r.status == 200, "attempts_per_second 500 answered %d" % r.status)


@probe("limit_threshold_0_accepted")
def _(c):
    r = create_campaign(c, retry={"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 0})
    check(400 <= r.status < 500, "threshold_seconds 0 answered %d" % r.status)


@probe("limit_campaign_description_151_accepted")
def _(c):
    r = create_campaign(c, description="y" * 151)
    check(400 <= r.status < 500, "a 151-character description answered %d" % r.status)
    check(create_campaign(c, description="y" * 150).status == 200, "150 characters refused")


# ---------------------------------------------------------------------------- probes: more

@probe("campaign_conflict_detail_shape")
def _(c):
    cid = must_campaign(c)
    check(c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "cancel"}).status == 200, "cancel refused")
    for body in ({"action": "pause"}, {"action": "resume"}):
        r = c.req("PUT", c.camps() + "/" + cid + "/status", body)
        check(400 <= r.status < 500, "%s of a cancelled campaign answered %d" % (body["action"], r.status))
        e = (r.json or {}).get("error")
        check(isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("message", "type", "code")),
              "refusal body %r" % r.body[:200])


@probe("deployment_patch_refused_still_applied")
def _(c):
    did = must_deployment(c, version=1)
    r = c.req("PATCH", c.deps() + "/" + did, {"app_id": "agent-other", "app_version": 7})
    check(r.status == 422, "PATCH of another app_id answered %r" % r)
    g = c.req("GET", c.deps() + "/" + did).json
    check(g["app_id"] == "agent-probe" and g["app_version"] == 1, "a refused PATCH changed %r/%r" % (g["app_id"], g["app_version"]))


@probe("campaign_cancelled_resume_answered_200")
def _(c):
    cid = must_campaign(c)
    check(c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "cancel"}).status == 200, "cancel refused")
    r = c.req("PUT", c.camps() + "/" + cid + "/status", {"action": "resume"})
    check(400 <= r.status < 500, "resume of a cancelled campaign answered %d %r" % (r.status, (r.json or {}).get("status")))
    check(get_campaign(c, cid)["status"] == "cancelled", "no longer cancelled")


@probe("cohort_processing_result_absent")
def _(c):
    cid = must_campaign(c)
    r = upload(c, c.camps() + "/" + cid)
    check(r.status == 200 and r.json["status"] == "processing", "upload answered %r" % r)
    check("result" in r.json and r.json["result"] is None, "a processing cohort's result is absent, not null: %r" % r.json)


@probe("deployment_search_loose")
def _(c):
    a = must_deployment(c, name="north desk", numbers=["+14155550911"])
    must_deployment(c, name="north line", numbers=["+14155550912"])
    must_deployment(c, name="south desk", numbers=["+14155550913"])
    r = c.req("GET", c.deps(), query={"search": "north desk"})
    ids = [i["deployment_id"] for i in r.json["items"]]
    check(ids == [a] and r.json["total"] == 1, "search 'north desk' lists %r" % [i["name"] for i in r.json["items"]])


@probe("deployment_list_limit_0_accepted")
def _(c):
    r = c.req("GET", c.deps(), query={"limit": 0})
    check(r.status == 422, "limit=0 answered %d" % r.status)
    check(c.req("GET", c.deps(), query={"limit": 1}).status == 200, "limit=1 refused")


@probe("limit_start_7d_1h_accepted")
def _(c):
    r = create_campaign(c, start_in=7 * 86400 + 1800)
    check(400 <= r.status < 500, "a start 7 days 30 min ahead answered %d" % r.status)
    check(create_campaign(c, start_in=7 * 86400 - 60).status == 200, "a start just inside 7 days refused")


@probe("limit_end_60s_accepted")
def _(c):
    r = create_campaign(c, length=90)
    check(400 <= r.status < 500, "an end 90 s after the start answered %d" % r.status)
    check(create_campaign(c, length=120).status == 200, "an end 120 s after the start refused")


@probe("limit_aps_0_05_accepted")
def _(c):
    r = create_campaign(c, aps=0.05)
    check(400 <= r.status < 500, "attempts_per_second 0.05 answered %d" % r.status)
    check(create_campaign(c, aps=0.1).status == 200, "attempts_per_second 0.1 refused")


@probe("limit_threshold_1200_refused")
def _(c):
    r = create_campaign(c, retry={"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 1200})
    check(r.status == 200, "threshold_seconds 1200 answered %d" % r.status)


@probe("limit_deployment_name_51_accepted")
def _(c):
    r = c.req("POST", c.deps(), deployment_body(name="n" * 51))
    check(400 <= r.status < 500, "a 51-character name answered %d" % r.status)
    check(c.req("POST", c.deps(), deployment_body(name="n" * 50)).status == 200, "a 50-character name refused")


# ---------------------------------------------------------------------------- (a) transparency

VOLATILE_KEYS = {"duration_ms"}


def normalise(obj, subs):
    if isinstance(obj, dict):
        return {k: normalise(v, subs) for k, v in obj.items() if k not in VOLATILE_KEYS}
    if isinstance(obj, list):
        return [normalise(v, subs) for v in obj]
    if isinstance(obj, str):
        for a, b in subs:
            obj = obj.replace(a, b)
    return obj


def view(r, subs):
    headers = sorted((k.lower(), v) for k, v in r.headers if k.lower() not in ("date", "content-length"))
    clen = r.h("content-length")
    if r.json is not None:
        body = normalise(r.json, subs)
    else:
        text = r.body
        for a, b in subs:
            text = text.replace(a.encode(), b.encode())
        body = hashlib.sha256(text).hexdigest() + " (%d bytes)" % len(text)
    return {"status": r.status, "headers": headers, "body": body,
            "length_ok": clen is None or int(clen) == len(r.body) or r.body == b""}


def quiet_settle(c, path, timeout=20):
    """Wait for a cohort to settle with reads that stay out of the request journal
    (x-harness-observer, docs/interface.md: The live page), so both sides' journals match."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = c.req("GET", path, headers={"x-harness-observer": "selftest"})
        if r.status == 200 and r.json.get("status") != "processing":
            return
        time.sleep(0.05)
    raise RuntimeError("cohort %s did not settle" % path)


class Side:
    def __init__(self, base, platform_url):
        self.rx = Receiver()
        self.c = Client(base, self.rx)
        self.subs = [(base, "BASE"), (platform_url, "BASE"), (self.rx.base, "RX")]
        self.ids = {}


def transparency(binary, tmp, defect=None):
    p1, p2 = Platform(binary, tmp), Platform(binary, tmp)
    px = ProxyProc(p2.url, defect, tmp)
    direct, via = Side(p1.url, p1.url), Side(px.url, p2.url)
    log = []
    diffs = []

    def both(label, fn):
        out = []
        for side in (direct, via):
            r = fn(side)
            out.append(r)
        v1, v2 = view(out[0], direct.subs), view(out[1], via.subs)
        log.append(label)
        if v1 != v2:
            diffs.append((label, v1, v2))
        if not v1["length_ok"] or not v2["length_ok"]:
            diffs.append((label + " (content-length)", v1, v2))
        return out

    try:
        both("GET /healthz", lambda s: s.c.req("GET", "/healthz", key=False))
        both("GET /openapi.json", lambda s: s.c.req("GET", "/openapi.json", key=False))
        both("GET /ui", lambda s: s.c.req("GET", "/ui", key=False))
        both("HEAD /openapi.json", lambda s: s.c.req("HEAD", "/openapi.json", key=False))
        both("GET /sim/v1/clock", lambda s: s.c.req("GET", "/sim/v1/clock"))
        both("GET /sim/v1/stack", lambda s: s.c.req("GET", "/sim/v1/stack"))
        # instant outbound
        both("POST outbound", lambda s: s.c.req("POST", s.c.outs(), outbound_body(hook=s.rx.url("out"))))
        both("POST outbound 422", lambda s: s.c.req("POST", s.c.outs(), {"app_config": {}, "user_config": {}}))
        both("POST outbound no key", lambda s: s.c.req("POST", s.c.outs(), outbound_body(), key=False))
        both("POST outbound other ws key", lambda s: s.c.req("POST", s.c.outs(), outbound_body(), key="sk-test-2"))
        both("POST outbound not json", lambda s: s.c.req("POST", s.c.outs(), b"{nope", ctype="application/json"))
        both("POST outbound text/plain", lambda s: s.c.req("POST", s.c.outs(), b"{}", ctype="text/plain"))
        # campaigns
        def mk(s, **kw):
            return s.c.req("POST", s.c.camps(), campaign_body(s.c.now(), hook=s.rx.url("camp"), **kw))
        r = both("POST campaign", lambda s: mk(s, name="Transparency A", start_in=130, description="first",
                                             retry={"max_retries": 1, "retry_on": ["busy", "no_answer"],
                                                    "threshold_seconds": 20, "retry_interval_minutes": 1}))
        direct.ids["camp"], via.ids["camp"] = r[0].json["campaign_id"], r[1].json["campaign_id"]
        r = both("POST campaign B", lambda s: mk(s, name="Transparency B", start_in=7200))
        direct.ids["camp2"], via.ids["camp2"] = r[0].json["campaign_id"], r[1].json["campaign_id"]
        both("POST campaign ws-2", lambda s: s.c.req("POST", s.c.camps("ws-2"), campaign_body(s.c.now()), ws="ws-2"))
        both("POST campaign 422", lambda s: mk(s, aps=0.01, description="z" * 151))
        both("GET campaign", lambda s: s.c.req("GET", s.c.camps() + "/" + s.ids["camp"]))
        both("HEAD campaign", lambda s: s.c.req("HEAD", s.c.camps() + "/" + s.ids["camp"]))
        both("GET campaign unknown", lambda s: s.c.req("GET", s.c.camps() + "/camp-nope"))
        both("GET campaigns", lambda s: s.c.req("GET", s.c.camps()))
        both("GET campaigns page", lambda s: s.c.req("GET", s.c.camps(), query={"limit": 1, "offset": 1, "sort_by": "name", "sort_order": "asc"}))
        both("GET campaigns search", lambda s: s.c.req("GET", s.c.camps(), query={"search": "transparency b", "campaign_status": "scheduled"}))
        both("GET campaigns 422", lambda s: s.c.req("GET", s.c.camps(), query={"limit": 0}))
        both("PATCH campaign", lambda s: s.c.req("PATCH", s.c.camps() + "/" + s.ids["camp2"], {"name": "Transparency B2", "description": None}))
        both("PATCH campaign 422", lambda s: s.c.req("PATCH", s.c.camps() + "/" + s.ids["camp2"], {"app_config": {"attempts_per_second": 900}}))
        both("PUT campaign pause", lambda s: s.c.req("PUT", s.c.camps() + "/" + s.ids["camp2"] + "/status", {"action": "pause"}))
        both("PUT campaign pause 409", lambda s: s.c.req("PUT", s.c.camps() + "/" + s.ids["camp2"] + "/status", {"action": "pause"}))
        both("PUT campaign resume", lambda s: s.c.req("PUT", s.c.camps() + "/" + s.ids["camp2"] + "/status", {"action": "resume"}))
        # campaign cohorts
        base = lambda s: s.c.camps() + "/" + s.ids["camp"]  # noqa: E731
        r = both("POST upload (multipart)", lambda s: upload(s.c, base(s), name="Transparency upload"))
        direct.ids["coh"], via.ids["coh"] = r[0].json["cohort_id"], r[1].json["cohort_id"]
        r = both("POST stream (chunked)", lambda s: s.c.req(
            "POST", base(s) + "/cohorts/stream",
            json.dumps({"name": "chunked", "users": users(5) + [{"phone_number": "x"}]}).encode(),
            ctype="application/json", chunked=True))
        both("POST upload 415", lambda s: s.c.req("POST", base(s) + "/cohorts/upload", b"a,b", ctype="text/csv"))
        both("POST upload no boundary", lambda s: s.c.req("POST", base(s) + "/cohorts/upload", b"--x--", ctype="multipart/form-data"))
        cp = lambda s: base(s) + "/cohorts/" + s.ids["coh"]  # noqa: E731
        for side in (direct, via):
            quiet_settle(side.c, cp(side))
        both("GET cohort", lambda s: s.c.req("GET", cp(s)))
        both("GET cohorts", lambda s: s.c.req("GET", base(s) + "/cohorts", query={"limit": 1}))
        for ft in ("cohort", "rejected_records", "cohort_transformation", "nope"):
            both("GET cohort file " + ft, lambda s, ft=ft: s.c.req("GET", cp(s) + "/files", query={"file_type": ft}))
        both("HEAD cohort file", lambda s: s.c.req("HEAD", cp(s) + "/files", query={"file_type": "cohort"}))
        both("GET upload 405", lambda s: s.c.req("GET", base(s) + "/cohorts/upload"))
        # deployments
        def dep(s, **kw):
            return s.c.req("POST", s.c.deps(), deployment_body(**kw))
        r = both("POST deployment", lambda s: dep(s, name="Transparency line", numbers=["+14155550900", "+14155550901"],
                                                description="d", inbound={"start_time": "07:00", "end_time": "20:00",
                                                                          "allowed_days": ["Monday", "tuesday"],
                                                                          "timezone": "Europe/Paris"}))
        direct.ids["dep"], via.ids["dep"] = r[0].json["deployment_id"], r[1].json["deployment_id"]
        r = both("POST deployment 2", lambda s: dep(s, name="Second line", numbers=["+14155550902"]))
        direct.ids["dep2"], via.ids["dep2"] = r[0].json["deployment_id"], r[1].json["deployment_id"]
        both("POST deployment 409", lambda s: dep(s, name="Dup", numbers=["+14155550902"]))
        both("POST deployment 422", lambda s: dep(s, name="bad.name", description="q" * 151))
        dp = lambda s, k="dep": s.c.deps() + "/" + s.ids[k]  # noqa: E731
        both("GET deployment", lambda s: s.c.req("GET", dp(s)))
        both("GET deployments", lambda s: s.c.req("GET", s.c.deps()))
        both("GET deployments page", lambda s: s.c.req("GET", s.c.deps(), query={"limit": 1, "sort_by": "name", "sort_order": "asc"}))
        both("GET deployments page 2", lambda s: s.c.req("GET", s.c.deps(), query={"limit": 1, "offset": 1, "search": "line"}))
        both("GET deployments 422", lambda s: s.c.req("GET", s.c.deps(), query={"limit": 101, "offset": -1}))
        both("GET deployments 401", lambda s: s.c.req("GET", s.c.deps(), key="wrong"))
        both("HEAD deployments", lambda s: s.c.req("HEAD", s.c.deps()))
        both("PATCH deployment", lambda s: s.c.req("PATCH", dp(s), {"app_version": 3, "description": None}))
        both("PATCH deployment 422", lambda s: s.c.req("PATCH", dp(s), {"app_id": "other"}))
        both("PUT deployment pause", lambda s: s.c.req("PUT", dp(s) + "/status", {"action": "pause"}))
        both("PUT deployment pause 409", lambda s: s.c.req("PUT", dp(s) + "/status", {"action": "pause"}))
        both("PUT deployment resume", lambda s: s.c.req("PUT", dp(s) + "/status", {"action": "resume"}))
        dc = lambda s: s.c.depc(s.ids["dep"])  # noqa: E731
        r = both("POST deployment upload", lambda s: upload(s.c, dc(s)[: -len("/cohorts")]))
        direct.ids["dcoh"], via.ids["dcoh"] = r[0].json["cohort_id"], r[1].json["cohort_id"]
        both("POST deployment stream", lambda s: s.c.req("POST", dc(s) + "/stream", {"name": "callers", "users": [{"phone_number": "+14155557777", "user_identifier": "vip", "app_variables": {"tier": "gold"}}]}))
        for side in (direct, via):
            quiet_settle(side.c, dc(side) + "/" + side.ids["dcoh"])
        both("GET deployment cohorts", lambda s: s.c.req("GET", dc(s)))
        both("GET deployment cohort", lambda s: s.c.req("GET", dc(s) + "/" + s.ids["dcoh"]))
        both("GET deployment cohort file", lambda s: s.c.req("GET", dc(s) + "/" + s.ids["dcoh"] + "/files", query={"file_type": "rejected_records"}))
        # simulation, events
        both("POST inbound call", lambda s: s.c.req("POST", s.c.sim("inbound-calls"), {"caller": "+14155557777", "dialled": "+14155550900"}))
        both("POST advance", lambda s: s.c.req("POST", "/sim/v1/clock/advance", {"seconds": 3600}))
        both("GET inbound calls", lambda s: s.c.req("GET", s.c.sim("inbound-calls")))
        both("GET webhook deliveries", lambda s: s.c.req("GET", s.c.sim("webhook-deliveries"), query={"limit": 100}))
        both("GET campaign after", lambda s: s.c.req("GET", s.c.camps() + "/" + s.ids["camp"]))
        both("PUT campaign cancel", lambda s: s.c.req("PUT", s.c.camps() + "/" + s.ids["camp"] + "/status", {"action": "cancel"}))
        both("GET activity", lambda s: s.c.req("GET", s.c.sim("campaigns/%s/activity" % s.ids["camp"])))
        both("GET chart", lambda s: s.c.req("GET", s.c.sim("campaigns/%s/chart" % s.ids["camp"]), query={"width": 600}))
        both("GET key-service calls", lambda s: s.c.req("GET", s.c.sim("key-service/calls")))
        both("GET data keys", lambda s: s.c.req("GET", "/admin/v1/orgs/org-1/workspaces/ws-1/data-keys"))
        both("PUT clock", lambda s: s.c.req("PUT", "/sim/v1/clock", {"now": "2026-03-03T12:00:00Z"}))
        both("PUT clock 409", lambda s: s.c.req("PUT", "/sim/v1/clock", {"now": "2026-03-01T12:00:00Z"}))
        both("DELETE deployment", lambda s: s.c.req("DELETE", dp(s, "dep2")))
        both("DELETE deployment 404", lambda s: s.c.req("DELETE", dp(s, "dep2")))
        both("GET deleted deployment", lambda s: s.c.req("GET", dp(s, "dep2")))
        both("OPTIONS deployments", lambda s: s.c.req("OPTIONS", s.c.deps()))
        both("GET unknown route", lambda s: s.c.req("GET", "/api/nothing/here"))
        both("POST faults", lambda s: s.c.req("POST", "/sim/v1/faults", {"kind": "status", "status": 503, "path": "/api/nothing", "times": 1}))
        both("GET faults", lambda s: s.c.req("GET", "/sim/v1/faults"))
        both("DELETE faults", lambda s: s.c.req("DELETE", "/sim/v1/faults"))
        both("GET journal summary", lambda s: s.c.req("GET", "/sim/v1/journal/summary"))
        both("GET journal", lambda s: s.c.req("GET", "/sim/v1/journal", query={"limit": 100}))
        both("POST reset ws-2", lambda s: s.c.req("POST", s.c.sim("reset", "ws-2"), ws="ws-2"))
        # events: the same, signed
        ev = []
        for side in (direct, via):
            got = side.rx.got()
            for g in got:
                if not sig_ok(g):
                    diffs.append(("event signature", g["headers"], None))
            ev.append(sorted(json.dumps([g["path"], g["headers"].get("x-webhook-timestamp"),
                                         normalise(g["obj"], side.subs)], sort_keys=True) for g in got))
        if ev[0] != ev[1]:
            diffs.append(("webhook events", ev[0][:3], ev[1][:3]))
        n_events = len(ev[0])
    finally:
        px.stop()
        p1.stop()
        p2.stop()
        direct.rx.close()
        via.rx.close()
    return log, diffs, n_events, px


# ---------------------------------------------------------------------------- (b) defects

def run_probe(fn, base):
    rx = Receiver()
    try:
        fn(Client(base, rx))
        return True, ""
    except ProbeFail as e:
        return False, str(e)
    except Exception as e:  # a probe that breaks on the answer also catches the defect
        return False, "%s: %s" % (type(e).__name__, e)
    finally:
        rx.close()


def run_defect(name, binary, tmp):
    t0 = time.time()
    p1 = p2 = t = d = None
    try:
        p1, p2 = Platform(binary, tmp), Platform(binary, tmp)
        t, d = ProxyProc(p1.url, None, tmp), ProxyProc(p2.url, name, tmp)
        res = {}

        def go(key, base):
            res[key] = run_probe(PROBES[name], base)

        th = [threading.Thread(target=go, args=("t", t.url)), threading.Thread(target=go, args=("d", d.url))]
        for x in th:
            x.start()
        for x in th:
            x.join()
        ok = res["t"][0] and not res["d"][0]
        info = {"name": name, "ok": ok, "transparent": res["t"], "defective": res["d"], "secs": time.time() - t0}
        if not ok:
            info["proxy_log"] = (d.tail() if res["t"][0] else t.tail())
        return info
    except Exception as e:
        return {"name": name, "ok": False, "transparent": (False, "setup: %r" % e), "defective": (None, ""),
                "secs": time.time() - t0, "proxy_log": traceback.format_exc()}
    finally:
        for x in (t, d, p1, p2):
            if x:
                x.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-j", type=int, default=3, help="defects checked at once (default 3)")
    ap.add_argument("--only", help="comma-separated defect names")
    ap.add_argument("--platform", default=os.path.join(ROOT, "target", "debug", "platform"))
    ap.add_argument("--skip-transparency", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.platform):
        print("no platform binary at %s (cargo build -p platform)" % a.platform)
        return 2
    t0 = time.time()
    with open(os.path.join(HERE, "defects.json"), encoding="utf-8") as f:
        meta = json.load(f)
    names = [m["name"] for m in meta]
    failures = 0
    problems = []
    if len(names) < 40:
        problems.append("fewer than 40 defects")
    for m in meta:
        if set(m) != {"name", "rule", "source", "what", "kind"} or m["kind"] not in ("error", "assumed"):
            problems.append("bad entry %r" % m.get("name"))
    if sorted(set(names)) != sorted(PROBES) or len(set(names)) != len(names):
        problems.append("defects without a probe or probes without a defect: %r" % sorted(set(names) ^ set(PROBES)))
    listed = subprocess.run([sys.executable, PROXY, "--list-defects"], capture_output=True, text=True)
    if listed.returncode != 0 or json.loads(listed.stdout) != meta or listed.stderr:
        problems.append("--list-defects does not print defects.json (or the implementations differ): %s" % listed.stderr)
    bad = subprocess.run([sys.executable, PROXY, "--upstream", "http://127.0.0.1:9", "--defect", "no_such_defect"],
                         capture_output=True, text=True)
    if bad.returncode != 2:
        problems.append("an unknown --defect exits %d, not 2" % bad.returncode)
    for p in problems:
        print("FAIL", p)
        failures += 1
    tmp = tempfile.mkdtemp(prefix="r4selftest-")
    try:
        if not a.skip_transparency and not a.only:
            t1 = time.time()
            log, diffs, n_events, _ = transparency(a.platform, tmp)
            if diffs:
                failures += 1
                print("FAIL transparency: %d of %d exchanges differ" % (len(diffs), len(log)))
                for label, v1, v2 in diffs[:10]:
                    print("  ", label)
                    print("     direct: ", json.dumps(v1)[:700])
                    print("     proxied:", json.dumps(v2)[:700])
            else:
                print("ok   transparency: %d exchanges over every route and %d signed webhook events identical (%.1fs)"
                      % (len(log), n_events, time.time() - t1))
        todo = [n for n in names if not a.only or n in a.only.split(",")]
        kinds = {m["name"]: m["kind"] for m in meta}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.j)) as ex:
            futs = [ex.submit(run_defect, n, a.platform, tmp) for n in todo]
            for f in concurrent.futures.as_completed(futs):
                r = f.result()
                if r["ok"]:
                    print("ok   %-44s %-7s caught: %s (%.1fs)" % (r["name"], kinds.get(r["name"]), r["defective"][1][:110], r["secs"]))
                else:
                    failures += 1
                    why = ("the probe fails through the transparent proxy: %s" % r["transparent"][1]
                           if not r["transparent"][0] else "the probe holds through the defective proxy")
                    print("FAIL %-44s %s (%.1fs)" % (r["name"], why, r["secs"]))
                    if r.get("proxy_log"):
                        print("     proxy log: ...", r["proxy_log"][-1200:].replace("\n", "\n     "))
    finally:
        with STARTED_LOCK:
            for p in STARTED:
                stop(p)
    print("%s: %d defects, %d failures, %.1fs" % ("PASS" if failures == 0 else "FAIL", len(names), failures, time.time() - t0))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
