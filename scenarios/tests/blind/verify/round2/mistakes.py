#!/usr/bin/env python3
"""Round 2 of blind client mistakes against `harness verify`.

For each mistake: start a fresh stack, send one correct request and one request with the
mistake to the same operation, run `harness verify --json`, record what it said.
Usage: python3 mistakes.py [HARNESS] [OUT_DIR]
"""
import json, os, signal, subprocess, sys, tempfile, time, urllib.request, urllib.error

HARNESS = sys.argv[1] if len(sys.argv) > 1 else "/tmp/verify-blind2/harness"
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
KEY = "sk-test-1"

CAMPAIGN = {
    "name": "March renewals",
    "description": "Renewal reminders",
    "start_timestamp": "2026-03-03T09:00:00Z",
    "end_timestamp": "2026-03-20T17:00:00Z",
    "allowed_schedule": {"timezone": "UTC",
                         "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
                         "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
    "app_config": {"app_id": "app-1", "app_version": 1, "attempts_per_second": 1,
                   "connection_configs": [{"connection_id": "conn-1", "phone_numbers": ["+14155550100"], "weight": 3}],
                   "retry_config": {"max_retries": 2, "retry_on": ["busy", "no_answer"], "threshold_seconds": 10}},
}
DEPLOYMENT = {"name": "Front desk", "app_id": "app-1", "app_version": 1,
              "connection_configs": [{"connection_id": "conn-1", "phone_numbers": ["+14155550101"]}],
              "inbound_config": {"start_time": "09:00", "end_time": "17:00",
                                 "allowed_days": ["Monday", "Friday"], "timezone": "America/New_York"}}
OUTBOUND = {"app_config": {"app_id": "app-1", "app_version": 1,
                           "connection_config": {"connection_id": "conn-1", "agent_phone_number": "+14155550100"}},
            "user_config": {"user_phone_number": "+919876543210"}}


def clone(x):
    return json.loads(json.dumps(x))


def req(url, method="GET", body=None, ctype="application/json"):
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = urllib.request.Request(url, data=data, method=method)
    r.add_header("X-API-Key", KEY)
    if data is not None:
        r.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(r, timeout=20) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def multipart(parts):
    b = "----blindround2boundary"
    out = b""
    for name, filename, ctype, content in parts:
        out += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"" % (b, name)).encode()
        if filename:
            out += ("; filename=\"%s\"" % filename).encode()
        out += b"\r\n"
        if ctype:
            out += ("Content-Type: %s\r\n" % ctype).encode()
        out += b"\r\n" + content + b"\r\n"
    out += ("--%s--\r\n" % b).encode()
    return out, "multipart/form-data; boundary=" + b


CSV = b"phone,uid\n+14155550123,u1\n"
TRANSFORM = json.dumps({"phone_number": {"column_name": "phone"},
                        "user_identifier": {"column_name": "uid"}}).encode()


def upload_parts(tname="cohort_transformation_file", cname="cohort_category"):
    return [("name", None, None, b"First batch"),
            ("cohort_file", "users.csv", "text/csv", CSV),
            (tname, "t.json", "application/json", TRANSFORM),
            (cname, None, None, b"cohort")]


# Each mistake: name, rule, what, operation, fn(base) -> sends correct + mistaken request
def ws(base, st, svc, tail):
    return "%s/api/%s/v1/orgs/%s/workspaces/%s/%s" % (base, svc, st["org_id"], st["workspace_id"], tail)


def create_campaign(base, st, body, raw=False):
    return req(ws(base, st, "scheduling", "campaigns"), "POST", body)


def m_retry_misspelt(base, st):
    create_campaign(base, st, CAMPAIGN)
    b = clone(CAMPAIGN); rc = b["app_config"]["retry_config"]; rc["max_retires"] = rc.pop("max_retries")
    return create_campaign(base, st, b)


def m_camel(base, st):
    create_campaign(base, st, CAMPAIGN)
    b = clone(CAMPAIGN); ac = b["app_config"]; ac["attemptsPerSecond"] = ac.pop("attempts_per_second")
    return create_campaign(base, st, b)


def m_other_resource(base, st):
    u = ws(base, st, "app-authoring", "deployments")
    req(u, "POST", DEPLOYMENT)
    b = clone(DEPLOYMENT); b["name"] = "Back desk"; b["connection_configs"][0]["phone_numbers"] = ["+14155550102"]
    b["allowed_schedule"] = {"timezone": "America/New_York", "allowed_days": ["Monday"],
                             "allowed_start_time": "09:00", "allowed_end_time": "17:00"}
    del b["inbound_config"]
    return req(u, "POST", b)


def m_query_status(base, st):
    u = ws(base, st, "scheduling", "campaigns")
    req(u + "?campaign_status=active")
    return req(u + "?status=active")


def m_query_page_size(base, st):
    u = ws(base, st, "app-authoring", "deployments")
    req(u + "?limit=10")
    return req(u + "?page_size=10")


def m_single_quotes(base, st):
    u = ws(base, st, "outbounds", "outbounds")
    req(u, "POST", OUTBOUND)
    return req(u, "POST", json.dumps(OUTBOUND).replace('"', "'").encode())


def m_bom(base, st):
    u = ws(base, st, "app-authoring", "deployments")
    req(u, "POST", DEPLOYMENT)
    b = clone(DEPLOYMENT); b["name"] = "Back desk"; b["connection_configs"][0]["phone_numbers"] = ["+14155550102"]
    return req(u, "POST", b"\xef\xbb\xbf" + json.dumps(b).encode())


def m_truncated(base, st):
    create_campaign(base, st, CAMPAIGN)
    raw = json.dumps(CAMPAIGN).encode()
    return req(ws(base, st, "scheduling", "campaigns"), "POST", raw[: len(raw) * 2 // 3])


def m_rate_over(base, st):
    create_campaign(base, st, CAMPAIGN)
    b = clone(CAMPAIGN); b["app_config"]["attempts_per_second"] = 1000
    return create_campaign(base, st, b)


def m_name_long(base, st):
    u = ws(base, st, "app-authoring", "deployments")
    req(u, "POST", DEPLOYMENT)
    b = clone(DEPLOYMENT); b["name"] = "Front desk for the north east regional office team X"  # 52 chars
    b["connection_configs"][0]["phone_numbers"] = ["+14155550102"]
    return req(u, "POST", b)


def _campaign_upload(base, st, parts):
    s, body = create_campaign(base, st, CAMPAIGN)
    cid = json.loads(body).get("campaign_id")
    u = ws(base, st, "scheduling", "campaigns/%s/cohorts/upload" % cid)
    data, ct = multipart(upload_parts())
    req(u, "POST", data, ct)
    data, ct = multipart(parts)
    return req(u, "POST", data, ct)


def m_part_transformation(base, st):
    return _campaign_upload(base, st, upload_parts(tname="transformation_file"))


def m_part_category(base, st):
    p = upload_parts(cname="category")
    p[-1] = ("category", None, None, b"stop_file")
    return _campaign_upload(base, st, p)


MISTAKES = [
    ("retry_config_key_misspelt", "OpenAPI RetryConfigRequest (properties max_retries, retry_on, threshold_seconds, retry_interval_minutes)",
     "app_config.retry_config.max_retries sent as max_retires (depth 3)", "create_campaign", m_retry_misspelt),
    ("app_config_camel_case", "OpenAPI CampaignAppConfigRequest (required attempts_per_second); spec campaign app_config table",
     "app_config.attemptsPerSecond instead of attempts_per_second", "create_campaign", m_camel),
    ("deployment_with_campaign_schedule", "OpenAPI DeploymentCreateRequest (inbound_config; allowed_schedule belongs to CampaignCreateRequest)",
     "deployment create sends allowed_schedule (a campaign field) instead of inbound_config", "create_deployment", m_other_resource),
    ("list_campaigns_status_param", "OpenAPI list_campaigns query parameter campaign_status",
     "GET /campaigns?status=active instead of ?campaign_status=active", "list_campaigns", m_query_status),
    ("list_deployments_page_size", "OpenAPI list_deployments query parameter limit (1 to 100); spec Limits: Deployment list limit",
     "GET /deployments?page_size=10 instead of ?limit=10", "list_deployments", m_query_page_size),
    ("outbound_single_quotes", "RFC 8259 / OpenAPI requestBody application/json of create_outbound",
     "body written with single quotes (Python repr style)", "create_outbound", m_single_quotes),
    ("deployment_utf8_bom", "RFC 8259 section 8.1 (no BOM in JSON sent over the network); requestBody application/json",
     "deployment body prefixed with a UTF-8 BOM", "create_deployment", m_bom),
    ("campaign_truncated_body", "requestBody application/json of create_campaign (CampaignCreateRequest)",
     "body cut off at two thirds (buffer flushed too early)", "create_campaign", m_truncated),
    ("attempts_per_second_over", "spec Limits: attempts_per_second 0.1 to 500; OpenAPI CampaignAppConfigRequest maximum 500",
     "attempts_per_second 1000", "create_campaign", m_rate_over),
    ("deployment_name_too_long", "spec Limits: Deployment name max 50 characters, pattern ^[\\w\\- ]{1,50}$",
     "deployment name of 52 characters", "create_deployment", m_name_long),
    ("upload_transformation_part_misnamed", "OpenAPI CohortUploadForm (required cohort_transformation_file)",
     "multipart part named transformation_file instead of cohort_transformation_file", "upload_campaign_cohort", m_part_transformation),
    ("upload_category_part_misnamed", "OpenAPI CohortUploadForm (cohort_category)",
     "multipart part named category (value stop_file) instead of cohort_category", "upload_campaign_cohort", m_part_category),
]


def start_stack(tmp):
    ready = os.path.join(tmp, "stack.json")
    p = subprocess.Popen([HARNESS, "up", "--clock", "simulated", "--sim-start", "2026-03-02T12:00:00Z",
                          "--api-key", "sk-test-1:ci", "--port-base", "0", "--ready-file", ready],
                         stdout=open(os.path.join(tmp, "up.log"), "w"), stderr=subprocess.STDOUT,
                         start_new_session=True)
    for _ in range(300):
        if os.path.exists(ready):
            try:
                return p, json.load(open(ready))["platform"]
            except Exception:
                pass
        time.sleep(0.1)
    raise RuntimeError("stack did not come up")


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=10)
    except Exception:
        os.killpg(p.pid, signal.SIGKILL)


def main():
    results = []
    for name, rule, what, op, fn in MISTAKES:
        tmp = tempfile.mkdtemp(prefix="blind2-")
        p, st = start_stack(tmp)
        try:
            status, body = fn(st["url"], st)
            rep = os.path.join(tmp, "verify.json")
            v = subprocess.run([HARNESS, "verify", "--url", st["url"], "--api-key", KEY, "--json", rep],
                               capture_output=True, text=True, timeout=60)
            report = json.load(open(rep))
        finally:
            stop(p)
        checks = report.get("checks", [])
        mine = [c for c in checks if op in json.dumps(c.get("id", ""))]
        failing = [c for c in mine if c.get("result") not in ("pass", "passed", "ok")]
        other_fail = [c for c in checks if c.get("result") not in ("pass", "passed", "ok", "skip", "skipped", "not_applicable")]
        results.append({"name": name, "rule": rule, "what": what, "operation": op,
                        "mistake_status": status, "mistake_response": body.decode("utf-8", "replace")[:400],
                        "verify_exit": v.returncode,
                        "check": failing[0] if failing else (mine[0] if mine else None),
                        "cause": ((failing or mine or [{}])[0].get("evidence") or {}).get("cause"),
                        "other_failing_checks": [c.get("id") for c in other_fail if c not in mine],
                        "judged": None})
        print(name, status, v.returncode, results[-1]["cause"], flush=True)
    json.dump(results, open(os.path.join(OUT, "raw_results.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
