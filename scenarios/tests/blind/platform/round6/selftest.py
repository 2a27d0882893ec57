#!/usr/bin/env python3
"""Self-test of round 6: (a) transparency, (b) each defect's probe holds through the
transparent proxy and fails through the defective one. Standard library only.

    python3 selftest.py [--platform PATH] [-j N] [--only NAME,...] [--skip-transparency]
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import hmac
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../../.."))
SECRET = "whsec_test"
START = "2026-03-02T08:00:00.123456789Z"
K1, K2 = "sk-test-1", "sk-test-2"
W1, W2 = "/orgs/org-1/workspaces/ws-1", "/orgs/org-1/workspaces/ws-2"
CP = "/api/scheduling/v1"
DP = "/api/app-authoring/v1"
OP = "/api/outbounds/v1"


# ---------------------------------------------------------------- processes
class Procs:
    def __init__(self):
        self.ps = []
        self.lock = threading.Lock()

    def add(self, p):
        with self.lock:
            self.ps.append(p)

    def stop(self, p):
        try:
            p.terminate()
            p.wait(5)
        except Exception:
            try:
                p.kill()
            except Exception:
                pass


PROCS = Procs()


def start_platform(binary, seed=42):
    fd, ready = tempfile.mkstemp(prefix="r6-", suffix=".url")
    os.close(fd)
    os.unlink(ready)
    p = subprocess.Popen([binary, "serve", "--clock", "simulated", "--database", ":memory:",
                          "--api-key", "org-1/ws-1=" + K1, "--api-key", "org-1/ws-2=" + K2,
                          "--listen", "127.0.0.1:0", "--seed", str(seed), "--sim-start", START,
                          "--webhook-secret", SECRET, "--ready-file", ready],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    PROCS.add(p)
    t = time.time()
    while time.time() - t < 60:
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            try:
                url = json.load(open(ready))["url"]
                os.unlink(ready)
                return p, url
            except Exception:
                pass
        if p.poll() is not None:
            raise RuntimeError("platform exited")
        time.sleep(0.05)
    raise RuntimeError("platform did not start")


def start_proxy(upstream, defect=None):
    cmd = [sys.executable, os.path.join(HERE, "proxy.py"), "--upstream", upstream, "--listen", "127.0.0.1:0",
           "--webhook-secret", SECRET]
    if defect:
        cmd += ["--defect", defect]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    PROCS.add(p)
    line = p.stdout.readline()
    return p, "http://127.0.0.1:%d" % json.loads(line)["port"]


# ---------------------------------------------------------------- client
class C:
    def __init__(self, base):
        self.base = base
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port

    def raw(self, method, path, body=None, headers=None, chunked=False):
        c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            h = dict(headers or {})
            if chunked:
                c.putrequest(method, path)
                for k, v in h.items():
                    c.putheader(k, v)
                c.putheader("Transfer-Encoding", "chunked")
                c.endheaders()
                for i in range(0, len(body), 100):
                    part = body[i:i + 100]
                    c.send(b"%x\r\n" % len(part) + part + b"\r\n")
                c.send(b"0\r\n\r\n")
            else:
                c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
        finally:
            c.close()

    def j(self, method, path, obj=None, key=K1):
        h = {"X-API-Key": key}
        body = None
        if obj is not None:
            body = json.dumps(obj).encode()
            h["Content-Type"] = "application/json"
        st, hd, data = self.raw(method, path, body, h)
        try:
            return st, json.loads(data) if data else None
        except Exception:
            return st, data

    def now_ns(self):
        return parse_ns(self.j("GET", "/sim/v1/clock")[1]["now"])

    def advance(self, secs):
        return self.j("POST", "/sim/v1/clock/advance", {"seconds": secs})


def parse_ns(s):
    base, rest = s[:19], s[19:]
    dt = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    frac = "0"
    if rest.startswith("."):
        frac = rest[1:].rstrip("Z")
    return int(dt.timestamp()) * 10**9 + int(frac.ljust(9, "0")[:9])


def iso(ns):
    s, f = divmod(ns, 10**9)
    return datetime.datetime.fromtimestamp(s, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (f // 10**6)


DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SEQ = [0]
SEQL = threading.Lock()


def uniq():
    with SEQL:
        SEQ[0] += 1
        return SEQ[0]


def camp(c, start=300, length=86400, **kw):
    now = c.now_ns()
    s = now + int(start * 10**9)
    body = {"name": kw.pop("name", "camp %d" % uniq()), "start_timestamp": iso(s), "end_timestamp": iso(s + int(length * 10**9)),
            "allowed_schedule": kw.pop("schedule", {"timezone": "UTC", "allowed_days": list(DAYS), "allowed_start_time": "00:00", "allowed_end_time": "23:59"}),
            "app_config": {"app_id": "app-1", "app_version": 1, "attempts_per_second": kw.pop("aps", 1),
                           "connection_configs": [{"connection_id": "conn-1", "phone_numbers": ["+14155550100"], "weight": 1}],
                           "retry_config": kw.pop("retry", {"max_retries": 1, "retry_on": ["busy"]})}}
    if "webhook" in kw:
        body["app_config"]["webhook_config"] = {"url": kw.pop("webhook"), "metadata": {"k": "v"}}
    if "description" in kw:
        body["description"] = kw.pop("description")
    if "end_abs" in kw:
        body["end_timestamp"] = iso(kw.pop("end_abs"))
    key = kw.pop("key", K1)
    W = W1 if key == K1 else W2
    st, b = c.j("POST", CP + W + "/campaigns", body, key)
    return st, b


def cpath(cid, W=W1):
    return CP + W + "/campaigns/" + cid


def dep(c, key=K1, **kw):
    n = uniq()
    body = {"name": kw.pop("name", "dep %d" % n), "app_id": "app-1", "app_version": 1,
            "connection_configs": [{"connection_id": "conn-1", "phone_numbers": [kw.pop("number", "+1415556%04d" % n)]}]}
    body.update(kw)
    W = W1 if key == K1 else W2
    return c.j("POST", DP + W + "/deployments", body, key)


def dpath(did, W=W1):
    return DP + W + "/deployments/" + did


def stream(c, parent, users, name=None):
    return c.j("POST", parent + "/cohorts/stream", {"name": name or "s%d" % uniq(), "users": users})


def multipart(c, parent, csv, name="up", chunked=False):
    bd = "r6boundaryXYZ"
    tr = json.dumps({"phone_number": {"column_name": "phone", "country_code": "US"}})
    parts = [("name", None, name.encode()), ("cohort_file", "c.csv", csv.encode()), ("cohort_transformation_file", "t.json", tr.encode())]
    out = b""
    for n, fn, data in parts:
        out += b"--" + bd.encode() + b"\r\n"
        disp = 'form-data; name="%s"' % n + ('; filename="%s"' % fn if fn else "")
        out += ("Content-Disposition: %s\r\n\r\n" % disp).encode() + data + b"\r\n"
    out += b"--" + bd.encode() + b"--\r\n"
    st, hd, data = c.raw("POST", parent + "/cohorts/upload", out,
                         {"X-API-Key": K1, "Content-Type": "multipart/form-data; boundary=" + bd}, chunked=chunked)
    return st, json.loads(data)


def settle(c, parent, coh):
    for _ in range(100):
        st, b = c.j("GET", parent + "/cohorts/" + coh)
        if b.get("status") != "processing":
            return b
        time.sleep(0.05)
    return b


# ---------------------------------------------------------------- webhook receiver
class Receiver:
    def __init__(self):
        self.events = {}
        rec = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                rec.events.setdefault(self.path, []).append((dict((k.lower(), v) for k, v in self.headers.items()), body))
                st = 500 if "fail" in self.path else 200
                self.send_response(st)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.base = "http://127.0.0.1:%d" % self.srv.server_address[1]

    def url(self, tag=""):
        return self.base + "/h%d%s" % (uniq(), tag)

    def got(self, url):
        return self.events.get(urllib.parse.urlsplit(url).path, [])


RECV = None


def outbound(c, url=None, meta=None, number="+14155550123"):
    body = {"app_config": {"app_id": "app-1", "app_version": 1,
                           "connection_config": {"connection_id": "conn-1", "agent_phone_number": "+14155550100"}},
            "user_config": {"user_phone_number": number}}
    if url:
        body["webhook_config"] = {"url": url, "metadata": meta or {"m": 1}}
    return c.j("POST", OP + W1 + "/outbounds", body)


def outbound_events(c, tag=""):
    u = RECV.url(tag)
    st, b = outbound(c, u, {"m": 7})
    c.advance(300)
    return b, RECV.got(u)


def campaign_events(c):
    u = RECV.url()
    st, b = camp(c, start=121, length=7200, webhook=u, retry={"max_retries": 2, "retry_on": ["busy", "no_answer", "failed"], "retry_interval_minutes": 1})
    cid = b["campaign_id"]
    stream(c, cpath(cid), [{"phone_number": "+1415555%04d" % i} for i in range(3)])
    c.advance(1800)
    return [json.loads(b) for _, b in RECV.got(u)]


# ---------------------------------------------------------------- probes (True: the rule holds)
P = {}


def probe(name):
    def deco(f):
        P[name] = f
        return f
    return deco


@probe("outbound_success_201")
def _(c):
    return outbound(c)[0] == 200


@probe("outbound_loc_dotted")
def _(c):
    st, b = c.j("POST", OP + W1 + "/outbounds", {})
    return st == 422 and all(isinstance(d["loc"], list) for d in b["detail"])


@probe("outbound_detail_first_only")
def _(c):
    st, b = c.j("POST", OP + W1 + "/outbounds", {})
    return st == 422 and len(b["detail"]) >= 2


@probe("outbound_missing_user_accepted")
def _(c):
    st, b = c.j("POST", OP + W1 + "/outbounds", {"app_config": {"app_id": "a", "app_version": 1, "connection_config": {"connection_id": "k", "agent_phone_number": "+14155550100"}}})
    return st == 422


@probe("campaign_create_status_active")
def _(c):
    return camp(c)[1]["status"] == "scheduled"


@probe("campaign_description_not_stored")
def _(c):
    st, b = camp(c, description="hello there")
    return c.j("GET", cpath(b["campaign_id"]))[1]["description"] == "hello there"


@probe("campaign_app_version_string")
def _(c):
    camp(c)
    st, b = c.j("GET", CP + W1 + "/campaigns")
    return all(type(i["app_version"]) is int for i in b["items"]) and b["items"]


@probe("campaign_list_status_filter_ignored")
def _(c):
    a = camp(c)[1]["campaign_id"]
    c.j("PUT", cpath(a) + "/status", {"action": "cancel"})
    camp(c)
    st, b = c.j("GET", CP + W1 + "/campaigns?campaign_status=cancelled")
    return st == 200 and b["items"] and all(i["status"] == "cancelled" for i in b["items"])


@probe("campaign_list_other_workspace")
def _(c):
    camp(c, key=K2, name="other ws camp")
    camp(c)
    st, b = c.j("GET", CP + W1 + "/campaigns?limit=100")
    return all(i["name"] != "other ws camp" for i in b["items"])


@probe("campaign_patch_name_not_stored")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    c.j("PATCH", cpath(cid), {"name": "renamed"})
    return c.j("GET", cpath(cid))[1]["name"] == "renamed"


@probe("campaign_patch_days_narrowed")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    sch = {"timezone": "UTC", "allowed_days": ["Monday", "Wednesday"], "allowed_start_time": "09:00", "allowed_end_time": "17:00"}
    c.j("PATCH", cpath(cid), {"allowed_schedule": sch})
    return c.j("GET", cpath(cid))[1]["allowed_schedule"]["allowed_days"] == ["Monday", "Wednesday"]


@probe("campaign_patch_retry_reset")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    c.j("PATCH", cpath(cid), {"app_config": {"retry_config": {"max_retries": 2}}})
    rc = c.j("GET", cpath(cid))[1]["app_config"]["retry_config"]
    return rc["retry_on"] == ["busy"] and rc["max_retries"] == 2


@probe("campaign_patch_active_allowed")
def _(c):
    cid = camp(c, start=121)[1]["campaign_id"]
    c.advance(125)
    st, b = c.j("PATCH", cpath(cid), {"name": "late"})
    return 400 <= st < 500 and c.j("GET", cpath(cid))[1]["name"] != "late"


@probe("campaign_resume_cancelled")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    c.j("PUT", cpath(cid) + "/status", {"action": "cancel"})
    st, b = c.j("PUT", cpath(cid) + "/status", {"action": "resume"})
    return 400 <= st < 500 and c.j("GET", cpath(cid))[1]["status"] == "cancelled"


@probe("campaign_pause_scheduled_refused")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    st, b = c.j("PUT", cpath(cid) + "/status", {"action": "pause"})
    return st == 200 and c.j("GET", cpath(cid))[1]["status"] == "paused"


@probe("campaign_status_answer_stale")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    st, b = c.j("PUT", cpath(cid) + "/status", {"action": "pause"})
    return st == 200 and b["status"] == "paused"


@probe("campaign_start_max_6_days")
def _(c):
    return camp(c, start=6.5 * 86400)[0] == 200


@probe("campaign_end_from_now")
def _(c):
    return camp(c, start=5 * 86400, length=29 * 86400)[0] == 200


@probe("campaign_end_min_60s")
def _(c):
    return camp(c, length=90)[0] == 422


@probe("attempts_per_second_min_refused")
def _(c):
    return camp(c, aps=0.1)[0] == 200


@probe("attempts_per_second_over_max")
def _(c):
    return camp(c, aps=501)[0] == 422


@probe("threshold_1200_refused")
def _(c):
    return camp(c, retry={"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 1200})[0] == 200


@probe("threshold_zero_accepted")
def _(c):
    return camp(c, retry={"max_retries": 1, "retry_on": ["short_duration"], "threshold_seconds": 0})[0] == 422


@probe("campaign_description_truncated")
def _(c):
    return camp(c, description="x" * 151)[0] == 422 and camp(c, description="x" * 150)[0] == 200


@probe("campaign_active_shown_scheduled")
def _(c):
    cid = camp(c, start=121)[1]["campaign_id"]
    c.advance(125)
    return c.j("GET", cpath(cid))[1]["status"] == "active"


@probe("campaign_not_ended")
def _(c):
    cid = camp(c, start=121, length=120)[1]["campaign_id"]
    c.advance(250)
    st, b = c.j("GET", CP + W1 + "/campaigns?limit=100")
    return c.j("GET", cpath(cid))[1]["status"] == "ended" and any(i["campaign_id"] == cid and i["status"] == "ended" for i in b["items"])


@probe("campaign_days_ignored")
def _(c):
    now = c.now_ns()
    wd = datetime.datetime.fromtimestamp(now // 10**9, datetime.timezone.utc).weekday()
    sch = {"timezone": "UTC", "allowed_days": [DAYS[(wd + 3) % 7]], "allowed_start_time": "00:00", "allowed_end_time": "23:59"}
    cid = camp(c, start=121, length=3 * 3600, schedule=sch)[1]["campaign_id"]
    stream(c, cpath(cid), [{"phone_number": "+14155559001"}])
    c.advance(3600)
    b = c.j("GET", cpath(cid))[1]
    return b["statistics"]["attempts_total"] == 0 and b["allowed_schedule"]["allowed_days"] == sch["allowed_days"]


@probe("campaign_get_other_workspace")
def _(c):
    cid = camp(c, key=K2)[1]["campaign_id"]
    camp(c)
    return c.j("GET", cpath(cid))[0] == 404


@probe("cohort_upload_completed_at_once")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    st, b = multipart(c, cpath(cid), "phone\n+14155550001\n")
    return st == 200 and b["status"] == "processing"


@probe("cohort_rejected_records_string")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    coh = stream(c, cpath(cid), [{"phone_number": "+14155550001"}, {"phone_number": "nope"}])[1]["cohort_id"]
    b = c.j("GET", cpath(cid) + "/cohorts/" + coh)[1]
    return type(b["result"]["rejected_records"]) is int and b["result"]["rejected_records"] == 1


@probe("cohort_rejected_file_no_reason")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    st, b = multipart(c, cpath(cid), "phone,name\n+14155550001,a\nbad,b\n")
    settle(c, cpath(cid), b["cohort_id"])
    st, hd, data = c.raw("GET", cpath(cid) + "/cohorts/" + b["cohort_id"] + "/files?file_type=rejected_records", None, {"X-API-Key": K1})
    return st == 200 and data.decode().splitlines()[0].split(",")[-1] == "rejected_reason"


@probe("cohort_list_newest_first")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    a = stream(c, cpath(cid), [{"phone_number": "+14155550001"}])[1]["cohort_id"]
    b = stream(c, cpath(cid), [{"phone_number": "+14155550002"}])[1]["cohort_id"]
    items = c.j("GET", cpath(cid) + "/cohorts")[1]["items"]
    return [i["cohort_id"] for i in items] == [a, b]


@probe("cohort_stream_1000_refused")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    st, b = stream(c, cpath(cid), [{"phone_number": "+1415557%04d" % i} for i in range(1000)])
    return st == 200


@probe("cohort_upload_paused_refused")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    c.j("PUT", cpath(cid) + "/status", {"action": "pause"})
    return multipart(c, cpath(cid), "phone\n+14155550001\n")[0] == 200


@probe("cohort_get_other_campaign")
def _(c):
    a = camp(c)[1]["campaign_id"]
    b = camp(c)[1]["campaign_id"]
    coh = stream(c, cpath(a), [{"phone_number": "+14155550001"}])[1]["cohort_id"]
    return c.j("GET", cpath(b) + "/cohorts/" + coh)[0] == 404


@probe("cohort_total_records_off")
def _(c):
    cid = camp(c)[1]["campaign_id"]
    coh = stream(c, cpath(cid), [{"phone_number": "+14155550001"}, {"phone_number": "nope"}])[1]["cohort_id"]
    r = c.j("GET", cpath(cid) + "/cohorts/" + coh)[1]["result"]
    return r["total_records"] == r["valid_records"] + r["rejected_records"] == 2


@probe("deployment_name_truncated")
def _(c):
    return dep(c, name="n" * 51)[0] == 422 and dep(c, name="m" * 50)[0] == 200


@probe("deployment_name_dot_accepted")
def _(c):
    return dep(c, name="front.desk")[0] == 422


@probe("deployment_description_150_refused")
def _(c):
    return dep(c, description="d" * 150)[0] == 200


@probe("deployment_create_status_missing")
def _(c):
    return dep(c)[1]["status"] == "active"


@probe("deployment_channel_direction_case")
def _(c):
    did = dep(c)[1]["deployment_id"]
    return c.j("GET", dpath(did))[1]["channel_direction"] in ("inbound", "outbound", "inbound_outbound")


@probe("deployment_list_phone_numbers_missing")
def _(c):
    dep(c)
    items = c.j("GET", DP + W1 + "/deployments")[1]["items"]
    return items and all(isinstance(i.get("phone_numbers"), list) for i in items)


@probe("deployment_list_limit_100_refused")
def _(c):
    return c.j("GET", DP + W1 + "/deployments?limit=100")[0] == 200


@probe("deployment_list_limit_0_accepted")
def _(c):
    return c.j("GET", DP + W1 + "/deployments?limit=0")[0] == 422


@probe("deployment_list_offset_negative_accepted")
def _(c):
    return c.j("GET", DP + W1 + "/deployments?offset=-1")[0] == 422


@probe("deployment_list_total_is_page")
def _(c):
    for _ in range(3):
        dep(c)
    return c.j("GET", DP + W1 + "/deployments?limit=1")[1]["total"] >= 3


@probe("deployment_list_next_on_last")
def _(c):
    dep(c)
    b = c.j("GET", DP + W1 + "/deployments?limit=100")[1]
    return b["next_page_uri"] is None


@probe("deployment_list_prev_on_first")
def _(c):
    dep(c)
    dep(c)
    b = c.j("GET", DP + W1 + "/deployments?limit=1&offset=0")[1]
    return b["prev_page_uri"] is None and b["next_page_uri"] is not None


@probe("deployment_list_sort_order_ignored")
def _(c):
    dep(c)
    c.advance(1)
    dep(c)
    a = [i["deployment_id"] for i in c.j("GET", DP + W1 + "/deployments?sort_by=created_at&sort_order=asc&limit=100")[1]["items"]]
    d = [i["deployment_id"] for i in c.j("GET", DP + W1 + "/deployments?sort_by=created_at&sort_order=desc&limit=100")[1]["items"]]
    return len(a) >= 2 and a == list(reversed(d))


@probe("deployment_list_search_case_sensitive")
def _(c):
    dep(c, name="Zebra Line")
    b = c.j("GET", DP + W1 + "/deployments?search=zebra")[1]
    return b["total"] == 1 and b["items"][0]["name"] == "Zebra Line"


@probe("deployment_list_other_workspace")
def _(c):
    dep(c, key=K2, name="other ws dep")
    dep(c)
    b = c.j("GET", DP + W1 + "/deployments?limit=100")[1]
    return all(i["name"] != "other ws dep" for i in b["items"])


IC = {"start_time": "10:00", "end_time": "12:00", "allowed_days": ["Monday", "Friday"], "timezone": "Asia/Tokyo"}


@probe("deployment_patch_schedule_not_stored")
def _(c):
    did = dep(c)[1]["deployment_id"]
    c.j("PATCH", dpath(did), {"inbound_config": IC})
    return c.j("GET", dpath(did))[1]["inbound_config"] == IC


@probe("deployment_patch_app_version_float")
def _(c):
    did = dep(c)[1]["deployment_id"]
    st, b = c.j("PATCH", dpath(did), {"app_version": 2})
    return st == 200 and type(b["app_version"]) is int and b["app_version"] == 2


@probe("deployment_patch_connections_appended")
def _(c):
    did = dep(c)[1]["deployment_id"]
    cc = [{"connection_id": "conn-2", "phone_numbers": ["+1415558%04d" % uniq()]}]
    c.j("PATCH", dpath(did), {"connection_configs": cc})
    return c.j("GET", dpath(did))[1]["connection_configs"] == cc


@probe("deployment_patch_null_description_kept")
def _(c):
    did = dep(c, description="desc")[1]["deployment_id"]
    c.j("PATCH", dpath(did), {"description": None})
    return c.j("GET", dpath(did))[1]["description"] is None


@probe("deployment_pause_answer_stale")
def _(c):
    did = dep(c)[1]["deployment_id"]
    st, b = c.j("PUT", dpath(did) + "/status", {"action": "pause"})
    return st == 200 and b["status"] == "paused"


@probe("deployment_resume_refused")
def _(c):
    did = dep(c)[1]["deployment_id"]
    c.j("PUT", dpath(did) + "/status", {"action": "pause"})
    st, b = c.j("PUT", dpath(did) + "/status", {"action": "resume"})
    return st == 200 and c.j("GET", dpath(did))[1]["status"] == "active"


@probe("deployment_delete_is_pause")
def _(c):
    did = dep(c)[1]["deployment_id"]
    st, _b = c.j("DELETE", dpath(did))
    return 200 <= st < 300 and c.j("GET", dpath(did))[0] == 404


@probe("deployment_delete_error_shape")
def _(c):
    st, b = c.j("DELETE", dpath("dep-nope"))
    return st == 404 and all(isinstance(b["error"].get(k), str) for k in ("message", "type", "code"))


def inbound(c, caller, dialled):
    return c.j("POST", "/sim/v1" + W1 + "/inbound-calls", {"caller": caller, "dialled": dialled})[1]


@probe("deployment_timezone_utc")
def _(c):
    now = c.now_ns() // 10**9
    loc = datetime.datetime.fromtimestamp(now + 9 * 3600, datetime.timezone.utc)
    s = (loc - datetime.timedelta(minutes=60)).strftime("%H:%M")
    e = (loc + datetime.timedelta(minutes=60)).strftime("%H:%M")
    num = "+1415559%04d" % uniq()
    ic = {"start_time": s, "end_time": e, "allowed_days": list(DAYS), "timezone": "Asia/Tokyo"}
    st, b = dep(c, number=num, inbound_config=ic)
    r = inbound(c, "+14155550999", num)
    return r["answered"] is True and c.j("GET", dpath(b["deployment_id"]))[1]["inbound_config"] == ic


@probe("deployment_paused_still_answers")
def _(c):
    num = "+1415559%04d" % uniq()
    did = dep(c, number=num)[1]["deployment_id"]
    c.j("PUT", dpath(did) + "/status", {"action": "pause"})
    return inbound(c, "+14155550999", num)["answered"] is False


@probe("webhook_signature_body_only")
def _(c):
    b, got = outbound_events(c)
    return got and all(h["x-webhook-signature"] == hmac.new(SECRET.encode(), h["x-webhook-timestamp"].encode() + b"." + body, hashlib.sha256).hexdigest() for h, body in got)


@probe("webhook_timestamp_millis")
def _(c):
    b, got = outbound_events(c)
    now = c.now_ns() // 10**9
    return got and all(abs(int(h["x-webhook-timestamp"]) - now) < 3600 for h, _ in got)


@probe("outbound_event_attempt_id_other")
def _(c):
    b, got = outbound_events(c)
    return got and all(json.loads(body)["attempt_id"] == b["attempt_id"] for _, body in got)


@probe("outbound_event_metadata_dropped")
def _(c):
    b, got = outbound_events(c)
    return got and all(json.loads(body)["webhook_config"]["metadata"] == {"m": 7} for _, body in got)


@probe("campaign_event_retry_attempt_from_1")
def _(c):
    ev = campaign_events(c)
    return ev and min(e["retry_attempt"] for e in ev) == 0


@probe("campaign_event_app_version_string")
def _(c):
    ev = campaign_events(c)
    return ev and all(type(e["app_version"]) is int for e in ev)


@probe("webhook_non2xx_not_retried")
def _(c):
    b, got = outbound_events(c, "/fail")
    return len(got) >= 2


# ---------------------------------------------------------------- transparency
def script(c, events):
    """Every route once; returns a list of comparable answers."""
    out = []

    def rec(tag, st, hd, data):
        out.append((tag, st, hd.get("content-type"), data))

    def J(m, p, obj=None, key=K1, head=False):
        h = {"X-API-Key": key}
        body = None
        if obj is not None:
            body = json.dumps(obj).encode()
            h["Content-Type"] = "application/json"
        st, hd, data = c.raw(m, p, body, h)
        rec(m + " " + p, st, hd, data)
        try:
            return json.loads(data)
        except Exception:
            return None

    J("GET", "/sim/v1/clock")
    J("GET", "/openapi.json")
    J("HEAD", "/openapi.json")
    J("GET", "/healthz")
    a = J("POST", OP + W1 + "/outbounds", {"app_config": {"app_id": "a", "app_version": 1, "connection_config": {"connection_id": "k", "agent_phone_number": "+14155550100"}},
                                          "user_config": {"user_phone_number": "+14155550123"}, "webhook_config": {"url": events + "/t-out", "metadata": {"x": 1}}})
    J("POST", OP + W1 + "/outbounds", {"user_config": {}})
    body = {"name": "t camp", "description": "d", "start_timestamp": "2026-03-02T08:03:00Z", "end_timestamp": "2026-03-02T12:00:00Z",
            "allowed_schedule": {"timezone": "America/New_York", "allowed_days": ["Monday"], "allowed_start_time": "01:00", "allowed_end_time": "23:00"},
            "app_config": {"app_id": "a", "app_version": 1, "attempts_per_second": 2, "connection_configs": [{"connection_id": "k", "phone_numbers": ["+14155550100"], "weight": 1}],
                           "retry_config": {"max_retries": 1, "retry_on": ["busy", "no_answer"], "retry_interval_minutes": 1}, "webhook_config": {"url": events + "/t-camp", "metadata": {"y": 2}}}}
    cb = J("POST", CP + W1 + "/campaigns", body)
    cid = cb["campaign_id"]
    J("POST", CP + W1 + "/campaigns", {"name": "bad"})
    J("GET", cpath(cid))
    J("HEAD", cpath(cid))
    J("GET", CP + W1 + "/campaigns?sort_by=name&sort_order=asc&search=t")
    J("PATCH", cpath(cid), {"description": "e", "app_config": {"attempts_per_second": 3}})
    J("GET", CP + W1 + "/campaigns/camp-none")
    st, hd, data = c.raw("POST", cpath(cid) + "/cohorts/upload", *mp_body("phone,v\n+14155550001,a\nbad,b\n+14155550002,c\n"))
    rec("upload", st, hd, data)
    up = json.loads(data)
    st, hd, data = c.raw("POST", cpath(cid) + "/cohorts/upload", *mp_body("phone\n+14155550003\n"), chunked=True)
    rec("upload chunked", st, hd, data)
    s = J("POST", cpath(cid) + "/cohorts/stream", {"name": "s", "users": [{"phone_number": "+14155550004", "app_variables": {"a": 1}}, {"phone_number": "x"}]})
    time.sleep(0.5)
    J("GET", cpath(cid) + "/cohorts/" + up["cohort_id"])
    J("GET", cpath(cid) + "/cohorts")
    for ft in ("rejected_records", "cohort", "cohort_transformation"):
        J("GET", cpath(cid) + "/cohorts/" + up["cohort_id"] + "/files?file_type=" + ft)
    J("GET", cpath(cid) + "/cohorts/" + s["cohort_id"] + "/files?file_type=rejected_records")
    d = J("POST", DP + W1 + "/deployments", {"name": "t dep", "app_id": "a", "app_version": 1, "connection_configs": [{"connection_id": "k", "phone_numbers": ["+14155550150"]}],
                                             "inbound_config": {"start_time": "00:00", "end_time": "23:59", "allowed_days": ["Monday"], "timezone": "UTC"}})
    d2 = J("POST", DP + W2 + "/deployments", {"name": "t dep2", "app_id": "a", "app_version": 1, "connection_configs": [{"connection_id": "k", "phone_numbers": ["+14155550151"]}]}, K2)
    did = d["deployment_id"]
    J("GET", dpath(did))
    J("GET", DP + W1 + "/deployments?limit=1&offset=0&sort_by=name&sort_order=asc&search=dep")
    J("GET", DP + W1 + "/deployments?limit=0")
    J("PATCH", dpath(did), {"app_version": 3, "description": None})
    J("PUT", dpath(did) + "/status", {"action": "pause"})
    J("PUT", dpath(did) + "/status", {"action": "resume"})
    J("POST", "/api/scheduling/v1" + W1 + "/deployments/" + did + "/cohorts/stream", {"name": "ds", "users": [{"phone_number": "+14155550999", "app_variables": {"v": 1}}]})
    J("GET", "/api/scheduling/v1" + W1 + "/deployments/" + did + "/cohorts")
    J("POST", "/sim/v1" + W1 + "/inbound-calls", {"caller": "+14155550999", "dialled": "+14155550150"})
    J("PUT", cpath(cid) + "/status", {"action": "pause"})
    J("PUT", cpath(cid) + "/status", {"action": "resume"})
    J("POST", "/sim/v1/clock/advance", {"seconds": 900})
    J("GET", cpath(cid))
    J("GET", "/sim/v1" + W1 + "/inbound-calls")
    J("GET", "/sim/v1" + W1 + "/webhook-deliveries")
    J("GET", "/sim/v1/journal/summary")
    J("DELETE", dpath(d2["deployment_id"], W2), key=K2)
    J("DELETE", dpath(did), key=K2)
    J("DELETE", dpath(did))
    J("GET", DP + W1 + "/deployments")
    J("PUT", "/sim/v1/clock", {"now": "2026-03-03T00:00:00.5Z"})
    J("GET", "/sim/v1/clock", key="wrong")
    return out


def mp_body(csv):
    bd = "tbnd42"
    tr = json.dumps({"phone_number": {"column_name": "phone", "country_code": "US"}})
    out = b""
    for n, fn, data in (("name", None, b"up"), ("cohort_file", "c.csv", csv.encode()), ("cohort_transformation_file", "t.json", tr.encode())):
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"%s\r\n\r\n" % (bd, n, '; filename="%s"' % fn if fn else "")).encode() + data + b"\r\n"
    out += ("--%s--\r\n" % bd).encode()
    return out, {"X-API-Key": K1, "Content-Type": "multipart/form-data; boundary=" + bd}


def transparency(binary):
    p1, u1 = start_platform(binary)
    p2, u2 = start_platform(binary)
    px, ux = start_proxy(u2)
    try:
        a = script(C(u1), RECV.base)
        b = script(C(ux), RECV.base)
        bad = []
        for x, y in zip(a, b):
            if x != y:
                bad.append((x[0], x[1], y[1], x[3][:200], y[3][:200]))
        ev = {k: [bd for _, bd in v] for k, v in RECV.events.items() if k.startswith("/t-")}
        return bad, len(a), ev
    finally:
        for p in (px, p1, p2):
            PROCS.stop(p)


# ---------------------------------------------------------------- main
def run_defect(binary, name):
    t = time.time()
    p, u = start_platform(binary, seed=7)
    pt, ut = start_proxy(u)
    pd, ud = start_proxy(u, name)
    try:
        try:
            ok_t = bool(P[name](C(ut)))
        except Exception:
            ok_t = "error: " + traceback.format_exc(limit=2).strip().splitlines()[-1]
        try:
            ok_d = bool(P[name](C(ud)))
        except Exception as e:
            ok_d = False  # a probe that breaks on the defective answer counts as failing
        return name, ok_t, ok_d, time.time() - t
    finally:
        for x in (pd, pt, p):
            PROCS.stop(x)


def main():
    global RECV
    ap = argparse.ArgumentParser()
    ap.add_argument("--platform", default=os.path.join(ROOT, "target/debug/platform"))
    ap.add_argument("-j", type=int, default=4)
    ap.add_argument("--only")
    ap.add_argument("--skip-transparency", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    RECV = Receiver()
    defs = json.load(open(os.path.join(HERE, "defects.json")))
    names = [d["name"] for d in defs]
    fails = 0
    assert len(set(names)) == len(names)
    missing = [n for n in names if n not in P]
    if missing:
        print("no probe for:", missing)
        fails += len(missing)
    if a.only:
        names = a.only.split(",")
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        tr = ex.submit(transparency, a.platform) if not a.skip_transparency else None
        futs = [ex.submit(run_defect, a.platform, n) for n in names if n in P]
        for f in concurrent.futures.as_completed(futs):
            n, ok_t, ok_d, dt = f.result()
            good = ok_t is True and ok_d is False
            fails += not good
            print("%-4s %-45s transparent=%s defective=%s (%.1fs)" % ("ok" if good else "FAIL", n, ok_t, ok_d, dt), flush=True)
        if tr:
            bad, n, ev = tr.result()
            if bad:
                fails += 1
                print("FAIL transparency: %d of %d answers differ" % (len(bad), n))
                for x in bad[:10]:
                    print("   ", x)
            else:
                print("ok   transparency: %d answers identical" % n)
    print("%s: %d defects, %d failures, %.1fs" % ("PASS" if not fails else "FAIL", len(names), fails, time.time() - t0))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
