#!/usr/bin/env python3
"""A client of the voice-agent calling platform, written from the interface spec.

Without --mistake it runs a realistic workflow with correct requests: deployments (create,
list, get, patch, pause, resume, a cohort upload and a stream, files, delete), a campaign
(create, list, get, patch, a cohort upload with one bad row, its rejected records, a stream,
pause, resume, cancel) and an instant outbound call.

With --mistake NAME it runs the same workflow with exactly one mistake (plus what follows
from it: a request refused by the platform leaves nothing to work on, so the steps that
need what it would have created are skipped, as a real client would stop there).

Python 3 standard library only. Deterministic: no randomness; the only time read is the
platform's own clock (GET /sim/v1/clock, a harness route), else the local clock.
"""

import argparse
import datetime as dt
import http.client
import json
import sys
import time
import urllib.parse

MISTAKES = [
    # headers and keys
    "key_as_bearer_token",
    "key_with_bearer_prefix",
    "wrong_workspace_in_path",
    "no_content_type",
    "json_as_form_urlencoded",
    "latin1_json_body",
    # body fields
    "misspelled_retry_field",
    "app_version_as_string",
    "action_uppercase",
    "null_app_version",
    "campaign_field_on_deployment",
    "agent_config_object_name",
    "threshold_out_of_range",
    "malformed_json_trailing_comma",
    # paths
    "campaigns_under_app_authoring",
    "outbound_v2_path",
    "trailing_slash_on_create_campaign",
    "deployment_cohort_under_app_authoring",
    "campaign_cohort_via_deployment_path",
    # methods and status changes
    "put_for_partial_update",
    "status_in_patch",
    "resume_cancelled_campaign",
    # query
    "repeated_offset",
    "sort_param_names",
    "negative_offset",
    "file_type_wrong_value",
    # multipart uploads
    "wrong_part_names",
    "missing_column",
    "no_header_row",
    "latin1_csv",
    "cohort_urlencoded",
    "multipart_no_boundary",
    # timestamps
    "naive_timestamp",
    "end_31_days_after_start",
    "epoch_timestamp_in_patch",
    # phone numbers
    "outbound_national_number",
    # calling windows
    "timezone_windows_name",
    "day_abbreviations",
    "equal_start_end",
    # size
    "oversize_json_body",
]

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
BOUNDARY = "----round1-client-boundary-5b2c9e"

CAMPAIGN_CSV = (
    "phone,first_name,customer_id,greeting\n"
    "(415) 555-0142,Ada,cust-001,Hello Ada\n"
    "+1 415-555-0143,José,cust-002,Hola José\n"
    "4155550144,Grace,cust-003,\n"
    "555-01,Alan,cust-004,Hi Alan\n"
)
CAMPAIGN_TRANSFORMATION = {
    "phone_number": {"column_name": "phone", "country_code": "US"},
    "user_identifier": {"column_name": "customer_id", "required": True},
    "app_variables": {"first_name": {"column_name": "first_name", "required": False}},
    "app_overrides": {"initial_bot_message": {"column_name": "greeting"}},
}
DEPLOYMENT_CSV = (
    "phone,first_name,customer_id\n"
    "+14155550160,Ada,cust-001\n"
    "+14155550161,Linus,cust-002\n"
)
DEPLOYMENT_TRANSFORMATION = {
    "phone_number": {"column_name": "phone", "country_code": "US"},
    "user_identifier": {"column_name": "customer_id"},
    "app_variables": {"first_name": {"column_name": "first_name"}},
}


def iso(t):
    """RFC 3339 in UTC with an explicit offset."""
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Api:
    def __init__(self, url, key, org, ws, verbose=True):
        u = urllib.parse.urlsplit(url)
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.https = u.scheme == "https"
        self.key = key
        self.org = org
        self.ws = ws
        self.verbose = verbose

    # path builders
    def ws_path(self, prefix, ws=None):
        return "/api/%s/v1/orgs/%s/workspaces/%s" % (prefix, self.org, ws or self.ws)

    def deployments(self, ws=None):
        return self.ws_path("app-authoring", ws) + "/deployments"

    def campaigns(self):
        return self.ws_path("scheduling") + "/campaigns"

    def deployment_cohorts(self, dep_id):
        return self.ws_path("scheduling") + "/deployments/%s/cohorts" % dep_id

    def outbounds(self):
        return self.ws_path("outbounds") + "/outbounds"

    def request(self, method, path, query=None, body=None, headers=None, auth=True):
        """Send one request; answer (status, parsed JSON or text, raw bytes). Never raises
        on an HTTP status; a transport error answers status 0."""
        hdrs = {"Accept": "application/json"}
        if auth:
            hdrs["X-API-Key"] = self.key
        if headers:
            for k, v in headers.items():
                if v is None:
                    hdrs.pop(k, None)
                else:
                    hdrs[k] = v
        target = path
        if query:
            target += "?" + urllib.parse.urlencode(query)
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=60)
        status, raw = 0, b""
        try:
            try:
                conn.request(method, target, body=body, headers=hdrs)
            except (BrokenPipeError, ConnectionResetError) as e:
                # the server may have answered early (413) and closed; read what it said
                if self.verbose:
                    print("  (send interrupted: %s)" % e, file=sys.stderr)
            resp = conn.getresponse()
            status = resp.status
            raw = resp.read()
        except Exception as e:  # a client does not crash on a transport error
            if self.verbose:
                print("  transport error: %s" % e, file=sys.stderr)
        finally:
            conn.close()
        try:
            data = json.loads(raw.decode("utf-8")) if raw else None
        except Exception:
            data = raw.decode("utf-8", "replace")
        if self.verbose:
            shown = target if len(target) < 160 else target[:160] + "..."
            print("%s %s -> %s" % (method, shown, status))
            if status >= 400:
                print("  " + (raw[:300].decode("utf-8", "replace")))
        return status, data, raw

    def json_request(self, method, path, obj, query=None, headers=None, auth=True):
        body = json.dumps(obj).encode("utf-8")
        hdrs = {"Content-Type": "application/json"}
        if headers:
            hdrs.update(headers)
        return self.request(method, path, query=query, body=body, headers=hdrs, auth=auth)


def multipart(fields, boundary=BOUNDARY):
    """fields: list of (name, value bytes/str, filename or None, content type or None)."""
    out = []
    for name, value, filename, ctype in fields:
        if isinstance(value, str):
            value = value.encode("utf-8")
        disp = 'form-data; name="%s"' % name
        if filename:
            disp += '; filename="%s"' % filename
        out.append(("--%s\r\n" % boundary).encode())
        out.append(("Content-Disposition: %s\r\n" % disp).encode())
        if ctype:
            out.append(("Content-Type: %s\r\n" % ctype).encode())
        out.append(b"\r\n")
        out.append(value)
        out.append(b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode())
    return b"".join(out)


def cohort_form(name, csv_bytes, transformation):
    return [
        ("name", name, None, None),
        ("cohort_category", "cohort", None, None),
        ("cohort_file", csv_bytes, "users.csv", "text/csv"),
        ("cohort_transformation_file", json.dumps(transformation, indent=2),
         "transformation.json", "application/json"),
    ]


def platform_now(api):
    """The platform's clock (a harness route, not part of the interface), else ours."""
    status, data, _ = api.request("GET", "/sim/v1/clock")
    if status == 200 and isinstance(data, dict) and data.get("now"):
        s = data["now"].replace("Z", "+00:00")
        try:
            return dt.datetime.fromisoformat(s)
        except ValueError:
            pass
    return dt.datetime.now(dt.timezone.utc)


def poll_cohort(api, path, tries=100):
    for _ in range(tries):
        status, data, _ = api.request("GET", path)
        if status != 200 or not isinstance(data, dict):
            return data
        if data.get("status") in ("completed", "failed"):
            return data
        time.sleep(0.1)
    return None


def upload(api, path, fields, m, csv_text=None):
    """The correct upload: multipart/form-data with the four parts."""
    body = multipart(fields)
    return api.request("POST", path, body=body,
                       headers={"Content-Type": "multipart/form-data; boundary=%s" % BOUNDARY})


# ---------------------------------------------------------------------------------------
# The workflow


def deployments_part(api, m, now):
    dep_body = {
        "name": "Front desk",
        "app_id": "app-frontdesk",
        "app_version": 1,
        "description": "Réception - answers the front desk line",
        "connection_configs": [{"connection_id": "conn-inbound", "phone_numbers": ["+14155550100"]}],
        "inbound_config": {
            "start_time": "09:00",
            "end_time": "18:00",
            "allowed_days": WEEKDAYS,
            "timezone": "America/New_York",
        },
    }
    if m == "latin1_json_body":
        # the team serialises with ensure_ascii=False and encodes in the charset it declares
        body = json.dumps(dep_body, ensure_ascii=False).encode("latin-1")
        status, dep, _ = api.request("POST", api.deployments(), body=body, headers={
            "Content-Type": "application/json; charset=iso-8859-1"})
    else:
        if m == "app_version_as_string":
            dep_body["app_version"] = "1"
        elif m == "campaign_field_on_deployment":
            # the campaign's calling-window object reused on a deployment
            sched = dep_body.pop("inbound_config")
            dep_body["allowed_schedule"] = {
                "timezone": sched["timezone"], "allowed_days": sched["allowed_days"],
                "allowed_start_time": sched["start_time"], "allowed_end_time": sched["end_time"]}
        elif m == "equal_start_end":
            # "always open": midnight to midnight, every day
            dep_body["inbound_config"] = {
                "start_time": "00:00", "end_time": "00:00",
                "allowed_days": WEEKDAYS + ["Saturday", "Sunday"],
                "timezone": "America/New_York"}
        status, dep, _ = api.json_request("POST", api.deployments(), dep_body)
    dep_id = dep.get("deployment_id") if status == 200 and isinstance(dep, dict) else None

    # list, sorted, searched
    query = [("limit", 20), ("offset", 0), ("sort_by", "created_at"), ("sort_order", "desc"),
             ("search", "Front")]
    if m == "key_as_bearer_token":
        api.request("GET", api.deployments(), query=query, auth=False,
                    headers={"Authorization": "Bearer %s" % api.key})
    elif m == "sort_param_names":
        api.request("GET", api.deployments(),
                    query=[("limit", 20), ("offset", 0), ("sort", "created_at"), ("order", "desc"),
                           ("search", "Front")])
    elif m == "negative_offset":
        # "previous page" computed as offset - limit from the first page
        api.request("GET", api.deployments(),
                    query=[("limit", 20), ("offset", -20), ("sort_by", "created_at"),
                           ("sort_order", "desc"), ("search", "Front")])
    else:
        api.request("GET", api.deployments(), query=query)

    if not dep_id:
        return None, None

    # get
    if m == "wrong_workspace_in_path":
        api.request("GET", api.deployments(ws=api.ws + "-staging") + "/" + dep_id)
    else:
        api.request("GET", api.deployments() + "/" + dep_id)

    # patch: a new agent version and a longer schedule
    patch = {
        "app_version": 2,
        "inbound_config": {
            "start_time": "08:00",
            "end_time": "20:00",
            "allowed_days": WEEKDAYS + ["Saturday"],
            "timezone": "America/New_York",
        },
    }
    if m == "day_abbreviations":
        patch["inbound_config"]["allowed_days"] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    if m == "put_for_partial_update":
        full = dict(dep_body)
        full.update(patch)
        api.json_request("PUT", api.deployments() + "/" + dep_id, full)
    else:
        api.json_request("PATCH", api.deployments() + "/" + dep_id, patch)

    # pause and resume
    action = "PAUSE" if m == "action_uppercase" else "pause"
    api.json_request("PUT", api.deployments() + "/" + dep_id + "/status", {"action": action})
    api.json_request("PUT", api.deployments() + "/" + dep_id + "/status", {"action": "resume"})

    # cohort of known callers
    fields = cohort_form("Front desk callers", DEPLOYMENT_CSV, DEPLOYMENT_TRANSFORMATION)
    up_path = api.deployment_cohorts(dep_id) + "/upload"
    if m == "deployment_cohort_under_app_authoring":
        up_path = api.deployments() + "/" + dep_id + "/cohorts/upload"
    if m == "no_header_row":
        csv_text = "".join(DEPLOYMENT_CSV.splitlines(True)[1:])
        fields = cohort_form("Front desk callers", csv_text, DEPLOYMENT_TRANSFORMATION)
    if m == "multipart_no_boundary":
        # Content-Type set by hand, as for the JSON calls: the boundary parameter is lost
        status, coh, _ = api.request("POST", up_path, body=multipart(fields),
                                     headers={"Content-Type": "multipart/form-data"})
    else:
        status, coh, _ = upload(api, up_path, fields, m)
    dep_cohort_id = coh.get("cohort_id") if status == 200 and isinstance(coh, dict) else None
    if dep_cohort_id:
        poll_cohort(api, api.deployment_cohorts(dep_id) + "/" + dep_cohort_id)
        api.request("GET", api.deployment_cohorts(dep_id) + "/" + dep_cohort_id + "/files",
                    query=[("file_type", "cohort")])
    api.request("GET", api.deployment_cohorts(dep_id), query=[("limit", 20), ("offset", 0)])

    # a few VIP callers streamed as JSON
    stream = {"name": "VIP callers", "country_code": "US",
              "users": [{"phone_number": "+14155550150", "user_identifier": "vip-1",
                         "app_variables": {"first_name": "Grace"}}]}
    if m == "malformed_json_trailing_comma":
        # the body is built from a text template
        text = ('{"name": "VIP callers", "country_code": "US", "users": [\n'
                '  {"phone_number": "+14155550150", "user_identifier": "vip-1",'
                ' "app_variables": {"first_name": "Grace"}},\n]}')
        api.request("POST", api.deployment_cohorts(dep_id) + "/stream", body=text.encode(),
                    headers={"Content-Type": "application/json"})
    else:
        api.json_request("POST", api.deployment_cohorts(dep_id) + "/stream", stream)

    # an overflow line, set up and then removed
    status, dep2, _ = api.json_request("POST", api.deployments(), {
        "name": "Overflow line", "app_id": "app-frontdesk", "app_version": 1,
        "connection_configs": [{"connection_id": "conn-inbound", "phone_numbers": ["+14155550101"]}]})
    if status == 200 and isinstance(dep2, dict) and dep2.get("deployment_id"):
        api.request("DELETE", api.deployments() + "/" + dep2["deployment_id"])
    return dep_id, dep_cohort_id


def campaign_part(api, m, now, dep_id):
    start = now + dt.timedelta(hours=1)
    end = start + dt.timedelta(days=7)
    start_s, end_s = iso(start), iso(end)
    if m == "naive_timestamp":
        start_s = start.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        end_s = end.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    elif m == "end_31_days_after_start":
        end_s = iso(start + dt.timedelta(days=31))
    body = {
        "name": "March renewals",
        "description": "Renewal reminders for March",
        "start_timestamp": start_s,
        "end_timestamp": end_s,
        "allowed_schedule": {
            "timezone": "America/New_York",
            "allowed_days": WEEKDAYS,
            "allowed_start_time": "09:00",
            "allowed_end_time": "17:00",
        },
        "app_config": {
            "app_id": "app-renewals",
            "app_version": 3,
            "app_type": "agent",
            "attempts_per_second": 2,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550110", "+14155550111"], "weight": 3},
                {"connection_id": "conn-b", "phone_numbers": ["+14155550112"], "weight": 1},
            ],
            "retry_config": {
                "max_retries": 2,
                "retry_on": ["busy", "no_answer", "short_duration"],
                "threshold_seconds": 15,
                "retry_interval_minutes": 60,
            },
            "webhook_config": {"url": "https://hooks.example.com/voice/campaigns",
                               "metadata": {"source": "crm"}},
        },
    }
    if m == "misspelled_retry_field":
        rc = body["app_config"]["retry_config"]
        rc["max_retry"] = rc.pop("max_retries")
    elif m == "agent_config_object_name":
        body["agent_config"] = body.pop("app_config")
    elif m == "timezone_windows_name":
        body["allowed_schedule"]["timezone"] = "Eastern Standard Time"

    path = api.campaigns()
    headers = None
    if m == "campaigns_under_app_authoring":
        path = api.ws_path("app-authoring") + "/campaigns"
    elif m == "trailing_slash_on_create_campaign":
        path = path + "/"
    elif m == "key_with_bearer_prefix":
        headers = {"X-API-Key": "Bearer %s" % api.key}
    status, camp, _ = api.json_request("POST", path, body, headers=headers)
    camp_id = camp.get("campaign_id") if status == 200 and isinstance(camp, dict) else None

    # list the scheduled campaigns
    q = [("campaign_status", "scheduled"), ("limit", 20), ("offset", 0),
         ("sort_by", "created_at"), ("sort_order", "desc")]
    if m == "repeated_offset":
        # the pager adds its own offset to the base query, which already has one
        q = q + [("offset", 0)]
    api.request("GET", api.campaigns(), query=q)
    if not camp_id:
        return None
    cpath = api.campaigns() + "/" + camp_id
    api.request("GET", cpath)

    # patch: second wave, a day longer, a faster rate, a longer short-call threshold
    patch = {
        "description": "Renewal reminders, second wave",
        "end_timestamp": iso(end + dt.timedelta(days=1)),
        "app_config": {"attempts_per_second": 3, "retry_config": {"threshold_seconds": 20}},
    }
    if m == "threshold_out_of_range":
        # "30 minutes" meant as the short-call threshold, written in seconds
        patch["app_config"]["retry_config"]["threshold_seconds"] = 1800
    elif m == "epoch_timestamp_in_patch":
        patch["end_timestamp"] = int((end + dt.timedelta(days=1)).timestamp())
    api.json_request("PATCH", cpath, patch)

    # upload the March list (one row has a bad number)
    csv_bytes = CAMPAIGN_CSV.encode("utf-8")
    transformation = CAMPAIGN_TRANSFORMATION
    if m == "latin1_csv":
        csv_bytes = CAMPAIGN_CSV.encode("cp1252")  # exported from a spreadsheet in Windows-1252
    elif m == "missing_column":
        # the transformation copied from another list, whose column was phone_number
        transformation = json.loads(json.dumps(CAMPAIGN_TRANSFORMATION))
        transformation["phone_number"]["column_name"] = "phone_number"
    fields = cohort_form("March list", csv_bytes, transformation)
    up_path = cpath + "/cohorts/upload"
    if m == "wrong_part_names":
        fields = [("name", "March list", None, None),
                  ("file", csv_bytes, "users.csv", "text/csv"),
                  ("transformation", json.dumps(transformation), "transformation.json",
                   "application/json")]
        status, coh, _ = upload(api, up_path, fields, m)
    elif m == "cohort_urlencoded":
        form = urllib.parse.urlencode([
            ("name", "March list"), ("cohort_category", "cohort"),
            ("cohort_file", csv_bytes.decode("utf-8")),
            ("cohort_transformation_file", json.dumps(transformation))]).encode()
        status, coh, _ = api.request("POST", up_path, body=form, headers={
            "Content-Type": "application/x-www-form-urlencoded"})
    else:
        status, coh, _ = upload(api, up_path, fields, m)
    coh_id = coh.get("cohort_id") if status == 200 and isinstance(coh, dict) else None
    if coh_id:
        if m == "campaign_cohort_via_deployment_path" and dep_id:
            # one get_cohort helper for both parents, always built from the deployment
            settled = poll_cohort(api, api.deployment_cohorts(dep_id) + "/" + coh_id)
        else:
            settled = poll_cohort(api, cpath + "/cohorts/" + coh_id)
        rejected = 0
        if isinstance(settled, dict) and isinstance(settled.get("result"), dict):
            rejected = settled["result"].get("rejected_records") or 0
        if rejected > 0:
            ft = "rejected" if m == "file_type_wrong_value" else "rejected_records"
            api.request("GET", cpath + "/cohorts/" + coh_id + "/files", query=[("file_type", ft)],
                        headers={"Accept": "text/csv"})
    api.request("GET", cpath + "/cohorts", query=[("limit", 20), ("offset", 0)])

    # late additions streamed as JSON
    api.json_request("POST", cpath + "/cohorts/stream", {
        "name": "Late additions", "country_code": "US",
        "users": [{"phone_number": "4155550145", "user_identifier": "cust-005",
                   "app_variables": {"first_name": "Barbara"}}]})

    # pause, resume, cancel
    status_path = cpath + "/status"
    if m == "status_in_patch":
        api.json_request("PATCH", cpath, {"status": "paused"})
    elif m == "json_as_form_urlencoded":
        # urllib's default Content-Type for a body, kept because nobody set one
        api.request("PUT", status_path, body=json.dumps({"action": "pause"}).encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    else:
        api.json_request("PUT", status_path, {"action": "pause"})
    api.json_request("PUT", status_path, {"action": "resume"})
    api.json_request("PUT", status_path, {"action": "cancel"})
    if m == "resume_cancelled_campaign":
        # "undo" button: resume after a cancel
        api.json_request("PUT", status_path, {"action": "resume"})
    api.request("GET", cpath)
    return camp_id


def outbound_part(api, m):
    body = {
        "app_config": {
            "app_id": "app-renewals",
            "app_version": 3,
            "app_type": "agent",
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550110"},
            "agent_variables": {"first_name": "Ada", "plan": "gold"},
            "app_overrides": {"initial_bot_message": "Hi Ada, this is Acme about your renewal."},
        },
        "user_config": {"user_phone_number": "+14155550130"},
        "webhook_config": {"url": "https://hooks.example.com/voice/calls",
                           "metadata": {"ticket": "T-1042"}},
    }
    path = api.outbounds()
    if m == "null_app_version":
        body["app_config"]["app_version"] = None  # "latest"
    elif m == "outbound_national_number":
        body["user_config"]["user_phone_number"] = "(415) 555-0130"
    elif m == "outbound_v2_path":
        path = api.ws_path("outbounds").replace("/v1/", "/v2/") + "/outbounds"
    elif m == "oversize_json_body":
        # the whole previous conversation log passed to the agent (11 MiB)
        body["app_config"]["agent_variables"]["previous_transcript"] = "agent: hello. " * (11 * 1024 * 1024 // 14 + 1)
    if m == "no_content_type":
        api.request("POST", path, body=json.dumps(body).encode())
    else:
        api.json_request("POST", path, body)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url")
    p.add_argument("--api-key")
    p.add_argument("--org", default="org-1")
    p.add_argument("--workspace", default="ws-1")
    p.add_argument("--mistake")
    p.add_argument("--list", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    a = p.parse_args()
    if a.list:
        print("\n".join(MISTAKES))
        return 0
    if a.mistake is not None and a.mistake not in MISTAKES:
        print("unknown mistake: %s (--list names them)" % a.mistake, file=sys.stderr)
        return 2
    if not a.url or not a.api_key:
        p.error("--url and --api-key are required")
    api = Api(a.url.rstrip("/"), a.api_key, a.org, a.workspace, verbose=not a.quiet)
    m = a.mistake
    now = platform_now(api)
    dep_id, _ = deployments_part(api, m, now)
    campaign_part(api, m, now, dep_id)
    outbound_part(api, m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
