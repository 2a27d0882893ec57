"""Schemathesis hooks for the platform's run (loaded by .ci/schemathesis.sh).

A campaign's start_timestamp must lie 120 s to 7 days after the platform's clock and its
end_timestamp 120 s to 30 days after the start, and the calling window's start and end times
differ. No schema can tie a time to the server's clock or two fields together, so a generated
campaign is almost never valid, and without help the stateful phase would reach campaigns
(get, patch, status, cohorts) only through 404s.

For about half of the generated `create_campaign` bodies this hook moves the two timestamps
into the valid window, measured from the platform's clock as it is at that moment
(`GET /sim/v1/clock`: the run may have moved it), and moves a calling window that ends when
it starts one hour on. The other half keep what was generated and still test the refusals. Which half a body falls in depends on the body alone (a CRC of its
JSON), so a seeded run stays reproducible.

Environment: PLATFORM_URL (http://host:port) and PLATFORM_API_KEY, set by the script.
"""

import json
import os
import urllib.request
import zlib
from datetime import datetime, timedelta, timezone

import schemathesis

CREATE_CAMPAIGN = "create_campaign"


def _operation_id(ctx):
    operation = getattr(ctx, "operation", None)
    if operation is None:
        return None
    return operation.definition.raw.get("operationId")


def _platform_now():
    request = urllib.request.Request(
        os.environ["PLATFORM_URL"].rstrip("/") + "/sim/v1/clock",
        headers={"X-API-Key": os.environ["PLATFORM_API_KEY"]},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        now = json.load(answer)["now"]
    return datetime.fromisoformat(now.replace("Z", "+00:00"))


def _rfc3339(t):
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@schemathesis.hook
def map_body(ctx, body):
    if _operation_id(ctx) != CREATE_CAMPAIGN or not isinstance(body, dict):
        return body
    if zlib.crc32(json.dumps(body, sort_keys=True, default=str).encode()) % 2:
        return body
    start = _platform_now() + timedelta(hours=1)
    body["start_timestamp"] = _rfc3339(start)
    body["end_timestamp"] = _rfc3339(start + timedelta(days=1))
    window = body.get("allowed_schedule")
    if isinstance(window, dict) and window.get("allowed_start_time") == window.get("allowed_end_time"):
        try:
            hours, minutes = (int(part) for part in str(window["allowed_end_time"]).split(":"))
        except (KeyError, ValueError):
            return body
        window["allowed_end_time"] = f"{(hours + 1) % 24:02}:{minutes:02}"
    return body
