"""Schemathesis hooks for the platform's run (loaded by .ci/schemathesis.sh).

Generated ids name nothing, and some rules no schema can state (a time relative to the
platform's clock, two fields that must differ) refuse almost every generated body. Without
help, the operations on a campaign, a deployment or a cohort answer 404, and the campaign
create 422. Just before each request is sent (`before_call`), these hooks:

- **give it real ids** (examples, coverage and fuzzing phases): the path's org and workspace
  become the fixtures' workspace (.ci/schemathesis/fixtures.toml, the one wired to the key
  service), and its campaign, deployment, cohort or fault id one that exists and can take the
  request: a campaign that is `scheduled` or `paused` for a PATCH, one the body's action
  applies to for a status change (`paused` for `resume`), a live one for a new cohort, a
  cohort with a rejected-records file for that file, an uploaded one for its transformation
  file, a deployment made for the purpose for a DELETE, a fault rule made for the purpose
  for its DELETE; a deployment create gets a workspace of its own (a number routes to one
  deployment of a workspace, and the coverage phase sends the same few numbers). The `Pool`
  below finds them with GETs, and makes more when the run has used them up (a clock move ends
  campaigns, a status change cancels them). The stateful phase keeps the ids its links carry
  (that is what it tests); a step whose path names nothing that exists (where a scenario
  starts, or where the phase explores instead of following a link) gets real ones.
- **fill the rules of two fields or the clock** in positive bodies (data the schema allows), in
  every phase: a campaign's start 120 s to 7 days after the platform's clock (read from
  `GET /sim/v1/clock` at that moment) and its end 120 s to 30 days after it, a PATCH's start,
  end and `app_id` as the campaign allows, a calling window whose end differs from its start,
  one short-call threshold, a deployment's numbers once each, a clock set at most a day ahead.
- **keep workspace-wide operations apart**: a workspace reset always empties the scratch
  workspace (SCRATCH_ORG/SCRATCH_WORKSPACE, where nothing else goes), and the fault routes
  take the key of the faults workspace (the configuration sets it; a rule added with the key
  that opens every workspace is refused here), so a rule never touches another request.

`filter_case` drops the uploads Schemathesis meant to break the form's schema that do not
break it (it cannot check a body holding a file itself).

One request in KEEP_ONE_IN keeps its generated ids, and (independently) one in KEEP_ONE_IN
its generated times, so the refusals are still tested. Which ones depends on the request
alone (a CRC of its parts), so a seeded run stays reproducible. Negative data is left alone,
but for its path: a body meant to be refused is refused by a campaign that exists.

`after_call` writes every request and its status to the tally (tally.py), from which the
script prints how many requests of each operation reached a 2xx.

Environment (set by the script): PLATFORM_URL, PLATFORM_API_KEY, PLATFORM_FAULTS_KEY (the
faults workspace's key), ST_FIXTURES (the fixtures file), ST_TALLY (the tally file), ST_DEBUG
(when set, the tally keeps the first 300 characters of each non-2xx answer to positive data).
"""

from __future__ import annotations

import json
import os
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zlib
from datetime import datetime, timedelta, timezone

import jsonschema_rs
import schemathesis
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode

import tally

KEEP_ONE_IN = 20
SCRATCH_ORG = "st-scratch"
SCRATCH_WORKSPACE = "st-ws"
FAULTS_ORG = "st-faults"
FAULTS_WORKSPACE = "st-ws"

UNIT_PHASES = ("examples", "coverage", "fuzzing")
LIVE = {"scheduled", "active", "paused"}
CAMPAIGN_ACTION_FROM = {"pause": {"scheduled", "active"}, "resume": {"paused"}, "cancel": LIVE}
DEPLOYMENT_ACTION_FROM = {"pause": {"active"}, "resume": {"paused"}}


# ----- the platform, as the hooks call it -----

# The servers are local: no proxy of the environment in between.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Api:
    """A small client of the platform: JSON in and out, with the run's key."""

    def __init__(self, url: str, key: str):
        self.url = url.rstrip("/")
        self.key = key

    def call(self, method, path, body=None, key=None, multipart=None):
        headers = {"X-API-Key": key or self.key}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif multipart is not None:
            boundary = uuid.uuid5(uuid.NAMESPACE_URL, path).hex
            data = _multipart(boundary, multipart)
            headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with _OPENER.open(request, timeout=60) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def ok(self, method, path, body=None, **kwargs):
        status, answer = self.call(method, path, body, **kwargs)
        if not 200 <= status < 300:
            raise RuntimeError(f"hooks: {method} {path} answered {status}: {answer}")
        return answer

    def now(self) -> datetime:
        return parse_time(self.ok("GET", "/sim/v1/clock")["now"])


def _multipart(boundary: str, parts: dict[str, tuple[str | None, bytes]]) -> bytes:
    out = b""
    for name, (filename, content) in parts.items():
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def rfc3339(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# ----- resources that exist -----


class Pool:
    """The fixtures' resources, and more of them made when those are used up."""

    def __init__(self, api: Api, fixtures: dict, faults_key: str):
        self.api = api
        self.faults_key = faults_key
        first = fixtures["deployments"][0]
        self.org, self.ws = first["org_id"], first["workspace_id"]
        self.campaigns = [c["campaign_id"] for c in fixtures.get("campaigns", [])]
        self.deployments = [d["deployment_id"] for d in fixtures.get("deployments", [])]
        # (kind, parent id, cohort id, has rejected records, uploaded)
        self.cohorts = [
            ("campaign" if c.get("campaign_id") else "deployment", c.get("campaign_id") or c.get("deployment_id"),
             c["cohort_id"], True, False)
            for c in fixtures.get("cohorts", [])
        ]
        # Numbers of the pool's resources count on from the workspace's deployments, so that a
        # later pass of the run rarely meets the numbers of an earlier one.
        self.made = self.api.ok("GET", f"{self.base('deployment')}?limit=1")["total"]

    def base(self, kind: str) -> str:
        area = "scheduling" if kind == "campaign" else "app-authoring"
        return f"/api/{area}/v1/orgs/{self.org}/workspaces/{self.ws}/{kind}s"

    def get(self, kind: str, id_: str):
        status, answer = self.api.call("GET", f"{self.base(kind)}/{id_}")
        return answer if status == 200 else None

    def lookup(self, kind: str, params) -> dict | None:
        """The campaign or deployment a request's path names, or with `cohort_id` in it that
        cohort, wherever it is (the stateful phase's are in generated workspaces); None when
        there is none."""
        names = ["org_id", "workspace_id", f"{kind}_id"]
        if isinstance(params, dict) and "cohort_id" in params:
            names.append("cohort_id")
        if not isinstance(params, dict) or not all(isinstance(params.get(n), str) for n in names):
            return None
        area = "app-authoring" if kind == "deployment" and len(names) == 3 else "scheduling"
        org, ws, id_, *cohort = (urllib.parse.quote(params[n], safe="") for n in names)
        path = f"/api/{area}/v1/orgs/{org}/workspaces/{ws}/{kind}s/{id_}"
        if cohort:
            path += f"/cohorts/{cohort[0]}"
        status, answer = self.api.call("GET", path)
        return answer if status == 200 and isinstance(answer, dict) else None

    def _serial(self) -> int:
        self.made += 1
        return self.made

    # Campaigns.

    def campaign(self, statuses: set[str] | None = None) -> dict:
        """The newest campaign in one of `statuses` (any when None), made when none is."""
        for id_ in reversed(self.campaigns[-4:]):
            record = self.get("campaign", id_)
            if record is not None and (statuses is None or record["status"] in statuses):
                return record
        record = self.new_campaign()
        if statuses is not None and record["status"] not in statuses and "paused" in statuses:
            record = self.api.ok("PUT", f"{self.base('campaign')}/{record['campaign_id']}/status", {"action": "pause"})
        return record

    def new_campaign(self) -> dict:
        n = self._serial()
        start = self.api.now() + timedelta(hours=1)
        body = {
            "name": f"Schemathesis {n}",
            "start_timestamp": rfc3339(start),
            "end_timestamp": rfc3339(start + timedelta(days=2)),
            "allowed_schedule": {
                "timezone": "UTC",
                "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
                "allowed_start_time": "08:00",
                "allowed_end_time": "20:00",
            },
            "app_config": {
                "app_id": "st-sales",
                "app_version": 1,
                "attempts_per_second": 1,
                "connection_configs": [
                    {"connection_id": "st-main", "phone_numbers": [f"+1415556{n % 10000:04}"], "weight": 1}
                ],
            },
        }
        summary = self.api.ok("POST", self.base("campaign"), body)
        self.campaigns.append(summary["campaign_id"])
        return self.get("campaign", summary["campaign_id"])

    # Deployments.

    def deployment(self, statuses: set[str] | None = None) -> dict:
        """The newest deployment in one of `statuses` (any when None), made when none is."""
        for id_ in reversed(self.deployments[-4:]):
            record = self.get("deployment", id_)
            if record is None:
                self.deployments.remove(id_)
            elif statuses is None or record["status"] in statuses:
                return record
        record = self.new_deployment()
        self.deployments.append(record["deployment_id"])
        if statuses is not None and record["status"] not in statuses and "paused" in statuses:
            record = self.api.ok(
                "PUT", f"{self.base('deployment')}/{record['deployment_id']}/status", {"action": "pause"}
            )
        return record

    def new_deployment(self) -> dict:
        """A deployment of its own (a DELETE takes one of these), on a number no deployment of
        the workspace has: the next one free, since an earlier pass of the run (another
        process) may have taken those this one counts from."""
        for _ in range(1000):
            n = self._serial()
            body = {
                "name": f"Schemathesis {n}",
                "app_id": "st-receptionist",
                "app_version": 1,
                "connection_configs": [{"connection_id": "st-main", "phone_numbers": [f"+1415557{n % 10000:04}"]}],
            }
            status, answer = self.api.call("POST", self.base("deployment"), body)
            if status == 200:
                return answer
            if status != 409:
                raise RuntimeError(f"hooks: a deployment create answered {status}: {answer}")
        raise RuntimeError("hooks: no free number for a deployment")

    # Cohorts.

    def cohort(self, kind: str, file_type: str | None = None) -> tuple[str, str]:
        """(parent id, cohort id) of a completed cohort of a `kind` parent: with a rejected-records
        file, or uploaded when the transformation file is asked for."""
        uploaded = file_type == "cohort_transformation"
        for k, parent, cohort, rejected, was_uploaded in reversed(self.cohorts):
            if k == kind and (was_uploaded or not uploaded) and (rejected or file_type != "rejected_records"):
                return parent, cohort
        return self.upload(kind)

    def upload(self, kind: str) -> tuple[str, str]:
        """Uploads a cohort (CSV and transformation file) to a live parent and waits for it."""
        parent = self.campaign(LIVE)["campaign_id"] if kind == "campaign" else self.deployment()["deployment_id"]
        csv = b"phone,id,first_name\n+1 202 555 0100,u1,Ada\n(202) 555-0101,u2,Grace\n12345,u3,Barbara\n"
        transformation = {
            "phone_number": {"column_name": "phone", "country_code": "US"},
            "user_identifier": {"column_name": "id", "required": True},
            "app_variables": {"first_name": {"column_name": "first_name"}},
        }
        path = f"{self.base(kind)}/{parent}/cohorts".replace("/app-authoring/", "/scheduling/")
        status, answer = self.api.call(
            "POST",
            f"{path}/upload",
            multipart={
                "name": (None, b"Uploaded"),
                "cohort_file": ("users.csv", csv),
                "cohort_transformation_file": ("transformation.json", json.dumps(transformation).encode()),
            },
        )
        if status != 200:
            raise RuntimeError(f"hooks: the cohort upload answered {status}: {answer}")
        cohort = answer["cohort_id"]
        for _ in range(200):
            record = self.api.ok("GET", f"{path}/{cohort}")
            if record["status"] != "processing":
                break
            time.sleep(0.05)
        if record["status"] != "completed":
            raise RuntimeError(f"hooks: the uploaded cohort is {record['status']}: {record}")
        self.cohorts.append((kind, parent, cohort, record["result"]["rejected_records"] > 0, True))
        return parent, cohort

    # Fault rules.

    def new_fault(self) -> str:
        """A rule of the faults workspace (whose requests nothing sends): a DELETE takes it."""
        rule = {"kind": "status", "status": 503, "times": 1}
        return self.api.ok("POST", "/sim/v1/faults", rule, key=self.faults_key)["fault_id"]


_POOL: Pool | None = None


def pool() -> Pool:
    global _POOL
    if _POOL is None:
        with open(os.environ["ST_FIXTURES"], "rb") as f:
            fixtures = tomllib.load(f)
        api = Api(os.environ["PLATFORM_URL"], os.environ["PLATFORM_API_KEY"])
        _POOL = Pool(api, fixtures, os.environ["PLATFORM_FAULTS_KEY"])
    return _POOL


# ----- the request -----


def operation_id(case) -> str:
    return case.operation.definition.raw.get("operationId")


def fingerprint(case) -> int:
    """A CRC of the request's generated parts: which requests keep what was generated."""
    parts = [operation_id(case), case.path_parameters, case.query, case.body]
    return zlib.crc32(json.dumps(parts, sort_keys=True, default=repr).encode())


def phase(case) -> str | None:
    return None if case.meta is None else str(case.meta.phase.name.value)


def is_positive(case) -> bool:
    return case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE


def negative_at(case, location: ParameterLocation) -> bool:
    return case.meta is not None and case.meta.is_negative_at(location)


def body_positive(case) -> bool:
    """Whether the body is data the schema allows (the case may be negative elsewhere)."""
    return case.meta is not None and not negative_at(case, ParameterLocation.BODY)


# ----- ids -----


def give_ids(op: str, case) -> bool:
    """Puts real ids in the path of `case` for `op`; False when the operation takes none."""
    params = case.path_parameters
    if not isinstance(params, dict) or "org_id" not in params and "fault_id" not in params:
        return False
    p = pool()
    if "org_id" in params:
        params["org_id"], params["workspace_id"] = p.org, p.ws
    if op == "create_deployment":
        # A number routes to one deployment of a workspace at a time (409 for the next): the
        # coverage phase sends the same few numbers again and again, so each create gets a
        # workspace of its own (the same request, the same one).
        params["workspace_id"] = f"{p.ws}-{fingerprint(case) % 10000:04}"
    body = case.body if isinstance(case.body, dict) else {}
    query = case.query if isinstance(case.query, dict) else {}
    action = body.get("action") if isinstance(body.get("action"), str) else None
    if op in ("get_campaign_cohort", "get_campaign_cohort_file"):
        params["campaign_id"], params["cohort_id"] = p.cohort("campaign", query.get("file_type"))
    elif op in ("get_deployment_cohort", "get_deployment_cohort_file"):
        params["deployment_id"], params["cohort_id"] = p.cohort("deployment", query.get("file_type"))
    elif "campaign_id" in params:
        if op == "patch_campaign":
            statuses = {"scheduled", "paused"}
        elif op == "set_campaign_status":
            statuses = CAMPAIGN_ACTION_FROM.get(action, LIVE)
        elif op in ("upload_campaign_cohort", "stream_campaign_cohort"):
            statuses = LIVE
        else:
            statuses = None
        params["campaign_id"] = p.campaign(statuses)["campaign_id"]
    elif "deployment_id" in params:
        if op == "delete_deployment":
            params["deployment_id"] = p.new_deployment()["deployment_id"]
        else:
            statuses = DEPLOYMENT_ACTION_FROM.get(action) if op == "set_deployment_status" else None
            params["deployment_id"] = p.deployment(statuses)["deployment_id"]
    elif "fault_id" in params:
        params["fault_id"] = p.new_fault()
    return True


def names_nothing(params) -> bool:
    """Whether a stateful step's path names a campaign, deployment or cohort that does not
    exist: a step that did not follow a link (where a scenario starts, or where the phase
    chose to explore instead) and would only get a 404. A link's ids are left alone."""
    if not isinstance(params, dict):
        return False
    for kind in ("campaign", "deployment"):
        if f"{kind}_id" in params:
            return pool().lookup(kind, params) is None
    return False


# ----- bodies -----


def distinct_window(window, start_key: str, end_key: str) -> None:
    """A calling window that ends when it starts is refused: end it an hour later."""
    if not isinstance(window, dict) or window.get(start_key) is None or window.get(start_key) != window.get(end_key):
        return
    try:
        hours, minutes = (int(part) for part in str(window[end_key]).split(":"))
    except ValueError:
        return
    window[end_key] = f"{(hours + 1) % 24:02}:{minutes:02}"


def one_threshold(app_config) -> None:
    """`threshold_seconds` given twice (in `retry_config` and in `retry_on.short_duration`)
    must agree."""
    retry = app_config.get("retry_config") if isinstance(app_config, dict) else None
    if not isinstance(retry, dict):
        return
    retry_on = retry.get("retry_on")
    short = retry_on.get("short_duration") if isinstance(retry_on, dict) else None
    if isinstance(short, dict) and "threshold_seconds" in short and retry.get("threshold_seconds") is not None:
        short["threshold_seconds"] = retry["threshold_seconds"]


def numbers_once(connections) -> None:
    """A deployment takes each phone number once across its connections."""
    if not isinstance(connections, list):
        return
    seen = set()
    for n, connection in enumerate(connections):
        numbers = connection.get("phone_numbers") if isinstance(connection, dict) else None
        if not isinstance(numbers, list):
            continue
        kept = [x for x in numbers if x not in seen]
        seen.update(kept)
        connection["phone_numbers"] = kept or [f"+1415558{n % 10000:04}"]


def fill_body(op: str, case, crc: int) -> None:
    body = case.body
    if not isinstance(body, dict):
        return
    if op == "create_campaign":
        now = pool().api.now()
        # A start from 10 minutes to 6 days ahead, an end 10 minutes to 29 days after it.
        start = now + timedelta(seconds=600 + crc % (6 * 86400))
        body["start_timestamp"] = rfc3339(start)
        body["end_timestamp"] = rfc3339(start + timedelta(seconds=600 + (crc // 7) % (29 * 86400)))
        distinct_window(body.get("allowed_schedule"), "allowed_start_time", "allowed_end_time")
        one_threshold(body.get("app_config"))
    elif op == "patch_campaign":
        campaign = pool().lookup("campaign", case.path_parameters)
        if campaign is not None:
            if "start_timestamp" in body:
                body["start_timestamp"] = campaign["start_timestamp"]
            if "end_timestamp" in body:
                start = parse_time(campaign["start_timestamp"])
                end = max(start, pool().api.now()) + timedelta(seconds=600 + crc % 86400)
                body["end_timestamp"] = rfc3339(end)
            app = body.get("app_config")
            if isinstance(app, dict) and "app_id" in app:
                app["app_id"] = campaign["app_config"]["app_id"]
        distinct_window(body.get("allowed_schedule"), "allowed_start_time", "allowed_end_time")
        one_threshold(body.get("app_config"))
    elif op in ("create_deployment", "patch_deployment"):
        if op == "patch_deployment" and "app_id" in body:
            deployment = pool().lookup("deployment", case.path_parameters)
            if deployment is not None:
                body["app_id"] = deployment["app_id"]
        distinct_window(body.get("inbound_config"), "start_time", "end_time")
        numbers_once(body.get("connection_configs"))
    elif op == "sim_set_clock" and "now" in body:
        body["now"] = rfc3339(pool().api.now() + timedelta(seconds=crc % 86400))
    elif op == "sim_advance_clock" and isinstance(body.get("to"), str):
        body["to"] = rfc3339(pool().api.now() + timedelta(seconds=crc % 86400))


# ----- the hooks -----

_IDS: dict[str, str] = {}
UPLOADS = ("upload_campaign_cohort", "upload_deployment_cohort")
_FORM_VALIDATORS: dict[str, object] = {}


def without_files(value):
    """`value` with every file part (bytes) as an empty string: what a JSON Schema can judge."""
    if isinstance(value, dict):
        return {k: without_files(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_files(v) for v in value]
    if type(value) in (str, int, float, bool) or value is None:
        return value
    # A file: Schemathesis's `Binary` (a `str` subclass over bytes), or bytes.
    return ""


@schemathesis.hook
def filter_case(ctx, case):
    """Drops an upload meant to break the form's schema that does not.

    Schemathesis cannot check a body holding a file, so it trusts how it generated it; but a
    mutation can come out valid (entries of `app_variables` without `column_name`, when
    `app_variables` came out null). Sent, such a body is rightly accepted, and reported as
    schema-violating data accepted. The form is checked here without its files instead."""
    if operation_id(case) not in UPLOADS or not negative_at(case, ParameterLocation.BODY):
        return True
    if not isinstance(case.body, dict):
        return True
    op = operation_id(case)
    if op not in _FORM_VALIDATORS:
        document = case.operation.schema.raw_schema
        form = document["components"]["schemas"]["CohortUploadForm"]
        _FORM_VALIDATORS[op] = jsonschema_rs.validator_for({**form, "components": document["components"]})
    encoded = form_encoding(case.operation.definition.raw)
    return not _FORM_VALIDATORS[op].is_valid(as_sent(without_files(case.body), encoded))


def form_encoding(operation: dict) -> set[str]:
    """The parts of the upload form with a content type of their own (the files, the JSON)."""
    content = operation["requestBody"]["content"]["multipart/form-data"]
    return set(content.get("encoding", {}))


def as_sent(form: dict, encoded: set[str]) -> dict:
    """The form as the server reads it. A list is sent as one part per item: none is no part,
    one is that item, more stay a list (a part sent twice, which the platform refuses). A part
    without a content type of its own is text, so a number, a boolean, null or an object
    generated for it arrives as its JSON spelling (what Schemathesis sends)."""
    sent = {}
    for name, value in form.items():
        if isinstance(value, list) and len(value) <= 1:
            if not value:
                continue
            value = value[0]
        if name not in encoded and not isinstance(value, (str, list)):
            value = json.dumps(value)
        sent[name] = value
    return sent


@schemathesis.hook
def before_call(ctx, case, kwargs):
    op = operation_id(case)
    crc = fingerprint(case)
    params = case.path_parameters
    if phase(case) == "stateful" and negative_at(case, ParameterLocation.BODY):
        # A link's body (a status change's action) is merged over the generated one after
        # generation, and may undo the mutation that made it negative: let Schemathesis judge
        # the body sent, as it does bodies a hook changed.
        case.meta.mark_dirty(ParameterLocation.BODY)
    if op == "sim_reset_workspace" and isinstance(params, dict) and not negative_at(case, ParameterLocation.PATH):
        params["org_id"], params["workspace_id"] = SCRATCH_ORG, SCRATCH_WORKSPACE
    if op == "sim_add_fault":
        # The transport sends the case's headers, then the configuration's over them.
        sent = {**(case.headers or {}), **(kwargs.get("headers") or {})}
        if sent.get("X-API-Key") == os.environ["PLATFORM_API_KEY"]:
            raise RuntimeError("hooks: a fault rule must be added with the faults workspace's key (platform.toml)")
        if body_positive(case) and isinstance(case.body, dict):
            if case.body.get("org_id") is not None or case.body.get("workspace_id") is not None:
                case.body["org_id"], case.body["workspace_id"] = FAULTS_ORG, FAULTS_WORKSPACE
    if op != "sim_reset_workspace" and not negative_at(case, ParameterLocation.PATH):
        if phase(case) in UNIT_PHASES:
            if crc % KEEP_ONE_IN != 0 and give_ids(op, case):
                _IDS[case.id] = "real"
        elif phase(case) == "stateful" and names_nothing(case.path_parameters) and give_ids(op, case):
            _IDS[case.id] = "real"
    if body_positive(case) and (crc // KEEP_ONE_IN) % KEEP_ONE_IN != 0:
        fill_body(op, case, crc)


@schemathesis.hook
def after_call(ctx, case, response):
    detail = None
    if os.environ.get("ST_DEBUG") and is_positive(case) and not 200 <= response.status_code < 300:
        detail = response.content[:300].decode(errors="replace")
    tally.record(case, response.status_code, _IDS.pop(case.id, None), detail)
