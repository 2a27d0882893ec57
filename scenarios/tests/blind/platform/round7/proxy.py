#!/usr/bin/env python3
"""Round 7 of blind contract breaks: a reverse proxy in front of the platform mock.

Without --defect it is transparent: every method, path, query, header, status, media type
and body byte passes through unchanged.  With --defect NAME it breaks exactly one rule of the
interface contract (the list: --list-defects, or defects.json beside this file).

Standard library only.
"""

import argparse
import base64
import copy
import datetime as dt
import email.utils
import hashlib
import hmac
import http.client
import json
import re
import socket
import sys
import threading
import urllib.parse
import zoneinfo
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --------------------------------------------------------------------------------------
# The defects (metadata). `webhook` marks the defects that change webhook deliveries: only
# those reroute webhook URLs through the proxy.
# --------------------------------------------------------------------------------------

NS = 'docs/interface.md: Fields the spec marks "not shown"'

DEFECTS = [
    # ---- instant outbound -------------------------------------------------------------
    dict(name="outbound_loc_drops_parent", kind="error",
         rule="validation loc is the full path to the offending field",
         source="spec: Errors (instant outbound validation: loc is the path to the offending field)",
         what="422 answers of POST .../outbounds give loc as [\"body\", <last key>] for nested fields, "
              "dropping the parent objects (app_config, connection_config, user_config, ...)"),
    dict(name="outbound_app_version_defaulted", kind="assumed",
         rule="app_config.app_version is required in an outbound request",
         source=NS + " (Outbound request: which fields are required) (assumed)",
         what="an outbound request without app_config.app_version is accepted (version 1 is used) "
              "instead of a 422 at body.app_config.app_version"),
    dict(name="outbound_event_metadata_dropped", kind="error", webhook=True,
         rule="webhook_config.metadata is attached to the instant outbound webhook",
         source="spec: Resources and their fields (Outbound call request: webhook_config.metadata, "
                "free-form, attached to the webhook)",
         what="the instant outbound event carries webhook_config.metadata as {} instead of the "
              "request's metadata (url and every other field intact)"),
    dict(name="outbound_event_attempt_id_mismatch", kind="error", webhook=True,
         rule="the outbound event names the attempt the request answered",
         source="spec: What the service does (1. the response carries an attempt identifier); "
                "docs/interface.md: Events (Event kinds and payloads) (ref)",
         what="the instant outbound event's attempt_id differs from the attempt_id the POST "
              "answered in its last hex digit"),
    # ---- campaign create --------------------------------------------------------------
    dict(name="campaign_create_description_null", kind="error",
         rule="the create answer (campaign summary) carries the description",
         source="spec: Resources and their fields (Campaign summary: create response carries "
                "description)",
         what="POST /campaigns answers description: null although the description is stored "
              "(GET and the list show it)"),
    dict(name="campaign_start_min_accepts_early", kind="error",
         rule="start_timestamp at least 120 seconds from now",
         source="spec: Limits (Campaign start_timestamp)",
         what="a start 60 to 119 s from now is accepted (moved silently to 120 s from now) "
              "instead of a 422"),
    dict(name="campaign_start_max_accepts_late", kind="error",
         rule="start_timestamp at most 7 days from now",
         source="spec: Limits (Campaign start_timestamp)",
         what="a start up to one hour beyond 7 days from now is accepted (moved to exactly 7 days) "
              "instead of a 422"),
    dict(name="campaign_end_min_accepts_short", kind="error",
         rule="end_timestamp at least 120 seconds after start_timestamp",
         source="spec: Limits (Campaign end_timestamp)",
         what="on create an end 60 to 119 s after the start is accepted (moved to 120 s after it) "
              "instead of a 422"),
    dict(name="campaign_end_max_refuses_last_hour", kind="error",
         rule="end_timestamp may be up to 30 days after start_timestamp",
         source="spec: Limits (Campaign end_timestamp)",
         what="on create an end within the last hour before 30 days after the start (30 days "
              "included) is refused with a 422 at body.end_timestamp"),
    dict(name="campaign_rate_min_accepts_low", kind="error",
         rule="attempts_per_second at least 0.1",
         source="spec: Limits (attempts_per_second 0.1 to 500)",
         what="attempts_per_second from 0.05 to below 0.1 is accepted (stored as 0.1) on create "
              "and PATCH instead of a 422"),
    dict(name="campaign_rate_max_refuses_500", kind="error",
         rule="attempts_per_second may be 500",
         source="spec: Limits (attempts_per_second 0.1 to 500)",
         what="attempts_per_second exactly 500 is refused with a 422 (less_than) on create and PATCH"),
    dict(name="campaign_threshold_accepts_1201", kind="error",
         rule="retry_config.threshold_seconds at most 1200",
         source="spec: Limits (retry_config.threshold_seconds 1 to 1200 seconds)",
         what="threshold_seconds from 1201 to 1300 is accepted (stored as 1200) on create and PATCH "
              "instead of a 422"),
    dict(name="campaign_description_accepts_151", kind="error",
         rule="campaign description at most 150 characters",
         source="spec: Limits (Campaign description max 150 characters)",
         what="a description of 151 to 160 characters is accepted (cut to 150) on create and PATCH "
              "instead of a 422"),
    # ---- campaign behaviour hidden behind correct answers ------------------------------
    dict(name="campaign_max_retries_plus_one", kind="error",
         rule="max_retries N allows up to N+1 attempts per user",
         source="spec: Rules (1. max_retries: N allows up to N+1 attempts per user)",
         what="the engine is given max_retries + 1 (answers still show the requested value): a "
              "user is dialled up to N+2 times, events show retry_attempt N+1"),
    dict(name="campaign_rate_doubled", kind="error",
         rule="attempts_per_second is the dial rate",
         source="spec: Rules (2. attempts_per_second is a dial rate)",
         what="the engine dials at twice attempts_per_second (answers still show the requested "
              "rate): event executed_at values are 1/(2 x rate) apart"),
    dict(name="campaign_weights_ignored", kind="error",
         rule="dials are split proportionally by connection weight",
         source="spec: Rules (4. with several connection_configs dials are split by weight)",
         what="every connection gets weight 1 in the engine (answers still show the weights): "
              "weights 3 and 1 split dials 50/50"),
    dict(name="campaign_short_duration_not_retried", kind="error",
         rule="a short-duration call is retried when short_duration is in retry_on",
         source="spec: Rules (5. short-duration call queued for a retry when short_duration is "
                "in retry_config.retry_on)",
         what="short_duration is dropped from retry_on in the engine (answers still list it): short "
              "calls end the user, their events have next_action_status null"),
    dict(name="campaign_window_end_minute_early", kind="error",
         rule="calls are placed inside the whole allowed_schedule time range",
         source="spec: What the service does (2. calls placed only inside allowed_schedule, "
                "time range); " + NS + " (allowed_schedule field names) (ref)",
         what="the engine closes the calling window one minute before allowed_end_time (answers "
              "still show the requested end): no dial in the window's last minute"),
    dict(name="campaign_stop_file_ignored", kind="error",
         rule="a stop_file cohort excludes its numbers from the campaign",
         source="docs/interface.md: Stop files (What they exclude) (ref)",
         what="a campaign cohort uploaded or streamed with cohort_category stop_file is processed "
              "as an ordinary cohort (answers still say stop_file): its numbers are dialled"),
    # ---- campaign list / get ----------------------------------------------------------
    dict(name="campaign_list_status_filter_dropped_with_search", kind="error",
         rule="the campaign list filters by campaign_status",
         source=NS + " (Campaign list: campaign_status) (ref)",
         what="GET /campaigns ignores campaign_status when search is also given (search alone "
              "and campaign_status alone work)"),
    dict(name="campaign_list_default_order_asc", kind="error",
         rule="sort_order defaults to desc",
         source="docs/interface.md: The spec's numbered open points (2. sort_by, sort_order; "
                "default desc) (ref)",
         what="GET /campaigns without sort_order lists in ascending order (explicit asc and desc "
              "work; page links unchanged)"),
    dict(name="campaign_get_times_local_as_utc", kind="error",
         rule="start_timestamp and end_timestamp are the instants given",
         source="spec: Resources and their fields (Campaign start_timestamp, end_timestamp ISO 8601); "
                "docs/interface.md: The spec's numbered open points (7. campaign GET) (ref)",
         what="GET /campaigns/{id} writes start_timestamp and end_timestamp as the wall-clock time "
              "of allowed_schedule.timezone with a Z suffix (wrong instants outside UTC zones)"),
    dict(name="campaign_get_status_active_after_end", kind="error",
         rule="an active campaign becomes ended when its window expires",
         source="spec: States and transitions (Campaign: active -> ended when the time window "
                "expires)",
         what="GET /campaigns/{id} answers status active for an ended campaign (the list says ended)"),
    # ---- campaign patch / status ------------------------------------------------------
    dict(name="campaign_patch_retry_config_reset", kind="assumed",
         rule="a PATCH keeps the retry_config members it leaves out",
         source=NS + " (Campaign PATCH: omitted retry_config fields keep their values) (assumed)",
         what="PATCH with a partial app_config.retry_config resets the members it leaves out to "
              "the defaults (max_retries 0, retry_on [], threshold_seconds 10, "
              "retry_interval_minutes 30)"),
    dict(name="campaign_patch_name_not_stored", kind="error",
         rule="a campaign PATCH applies while scheduled or paused",
         source=NS + " (Campaign PATCH: allowed while scheduled or paused) (ref)",
         what="PATCH answers the new name but does not store it (GET and the list keep the old name)"),
    dict(name="campaign_patch_start_change_ignored", kind="error",
         rule="start_timestamp cannot change in a PATCH",
         source=NS + " (Campaign PATCH: start_timestamp cannot change) (ref)",
         what="a PATCH with another start_timestamp is answered 200 (the field silently ignored) "
              "instead of a 4xx"),
    dict(name="campaign_patch_active_allowed", kind="error",
         rule="a campaign PATCH is refused while active",
         source=NS + " (Campaign PATCH: allowed while scheduled or paused) (ref)",
         what="a PATCH of an active campaign is applied (the platform pauses, patches and resumes "
              "it) and answered 200 instead of a 4xx"),
    dict(name="campaign_pause_scheduled_refused", kind="error",
         rule="any campaign can be paused",
         source="spec: States and transitions (Campaign: any -> paused with pause)",
         what="PUT status {action: pause} on a scheduled campaign is refused with 409 "
              "invalid_status_transition"),
    dict(name="campaign_resume_cancelled_lies", kind="error",
         rule="a cancelled campaign stops; actions on it are refused",
         source="spec: States and transitions (Campaign: any -> cancelled; campaign stops)",
         what="PUT status {action: resume} on a cancelled campaign answers 200 with status active "
              "(it stays cancelled)"),
    # ---- cohorts ----------------------------------------------------------------------
    dict(name="cohort_upload_answers_completed", kind="error",
         rule="an upload answers status processing",
         source="spec: States and transitions (Cohort: (none) -> processing on upload); "
                "spec: Endpoints (upload answers cohort_id, status: processing)",
         what="POST .../cohorts/upload answers status completed (result still null) instead of "
              "processing"),
    dict(name="cohort_upload_paused_campaign_refused", kind="error",
         rule="cohorts can be uploaded to a paused campaign",
         source="spec: What the service does (2. cohorts can be uploaded before the start, "
                "while active, or after a pause)",
         what="a cohort upload to a paused campaign is refused with 409 campaign_closed"),
    dict(name="cohort_rejected_count_minus_one", kind="error",
         rule="result.rejected_records counts the rejected records",
         source="spec: Resources and their fields (Cohort: result.rejected_records count)",
         what="campaign cohorts answer result.rejected_records one less than the rows rejected "
              "(when any were)"),
    dict(name="cohort_rejected_file_first_row_only", kind="error",
         rule="the rejected-records file holds every rejected record",
         source="spec: Resources and their fields (Cohort: rejected records downloadable with "
                "file_type=rejected_records); docs/interface.md: Cohorts (Rejected records file) (ref)",
         what="files?file_type=rejected_records holds the header and only the first rejected row"),
    dict(name="cohort_stream_source_type_upload", kind="error",
         rule="a streamed cohort has source_type stream",
         source=NS + " (Cohort record fields: source_type file_upload, stream) (ref)",
         what="cohorts made by .../cohorts/stream are answered with source_type file_upload "
              "(stream answer, get and list)"),
    dict(name="cohort_stream_country_code_ignored", kind="assumed",
         rule="a stream's country_code normalises national numbers",
         source="docs/interface.md: Cohorts (Stream answer: the body's country_code for national "
                "numbers) (assumed)",
         what="the stream body's country_code is ignored: users with national numbers are rejected"),
    dict(name="cohort_stream_1000_refused", kind="error",
         rule="a stream takes 1 to 1000 users",
         source=NS + " (Cohort stream body: 1 to 1000 users) (ref)",
         what="a stream of exactly 1000 users is refused with a 422 (too_long) at body.users"),
    dict(name="cohort_stream_1001_accepted", kind="error",
         rule="a stream takes at most 1000 users",
         source=NS + " (Cohort stream body: 1 to 1000 users) (ref)",
         what="a stream of 1001 to 1100 users is accepted (users past the 1000th dropped) "
              "instead of a 422"),
    dict(name="cohort_list_newest_first", kind="assumed",
         rule="cohort lists are in upload order, oldest first",
         source=NS + " (Cohort list: upload order, oldest first) (assumed)",
         what="the cohort lists of campaigns and deployments give each page newest first"),
    dict(name="cohort_get_any_parent", kind="assumed",
         rule="a cohort is read only under its own campaign or deployment",
         source="docs/interface.md: Cohorts (File errors: a cohort of another parent: 404 "
                "cohort_not_found) (assumed)",
         what="GET .../cohorts/{cohort_id} (and its files) under another campaign or deployment "
              "of the workspace answers the cohort instead of a 404"),
    dict(name="deployment_cohort_upload_paused_refused", kind="assumed",
         rule="deployments take cohorts whether active or paused",
         source="docs/interface.md: Cohorts (Campaign states that take cohorts: deployments take "
                "cohorts whether active or paused) (assumed)",
         what="a cohort upload to a paused deployment is refused with 409 deployment_paused"),
    dict(name="deployment_cohort_total_excludes_rejected", kind="error",
         rule="result.total_records counts every record, valid and rejected",
         source=NS + " (Cohort record fields: result {total_records, valid_records, "
                     "rejected_records}) (ref)",
         what="cohorts read under a deployment answer result.total_records equal to valid_records "
              "(the rejected rows left out of the total)"),
    # ---- deployments ------------------------------------------------------------------
    dict(name="deployment_create_days_first_only", kind="error",
         rule="inbound_config.allowed_days is stored as given",
         source="spec: Resources and their fields (InboundConfig allowed_days)",
         what="POST /deployments stores only the first of allowed_days (the create answer echoes "
              "them all; GET, the list and inbound calls use one day)"),
    dict(name="deployment_name_50_refused", kind="error",
         rule="a deployment name may have 50 characters",
         source="spec: Limits (Deployment name max 50 characters, pattern ^[\\w\\- ]{1,50}$)",
         what="a deployment name of exactly 50 characters is refused with a 422 (create and PATCH)"),
    dict(name="deployment_name_51_accepted", kind="error",
         rule="a deployment name has at most 50 characters",
         source="spec: Limits (Deployment name max 50 characters, pattern ^[\\w\\- ]{1,50}$)",
         what="a deployment name of 51 to 60 characters is accepted (cut to 50) on create and PATCH"),
    dict(name="deployment_inbound_tz_utc", kind="error",
         rule="the inbound schedule is read in its IANA timezone",
         source="spec: Resources and their fields (InboundConfig timezone, IANA); spec: What the "
                "service does (3. calls outside the schedule are not answered)",
         what="the inbound schedule is applied in UTC whatever its timezone (answers still show "
              "the timezone given)"),
    dict(name="deployment_list_total_page_size", kind="error",
         rule="total is the number of matches for the query",
         source="spec: Resources and their fields (Paginated deployment list: total, matches for "
                "the query)",
         what="the deployment list answers total = the number of items on the page"),
    dict(name="deployment_list_next_link_drops_search", kind="error",
         rule="next_page_uri is the next page of the same query",
         source="spec: Resources and their fields (Paginated deployment list: next_page_uri); "
                "spec: Endpoints (List query parameters: search)",
         what="the deployment list's next_page_uri loses the search parameter (prev_page_uri keeps it)"),
    dict(name="deployment_list_next_link_exact_multiple", kind="error",
         rule="next_page_uri is null on the last page",
         source="spec: Resources and their fields (Paginated deployment list: next_page_uri null "
                "on the last page)",
         what="when a page ends exactly at total, next_page_uri points past the end instead of null"),
    dict(name="deployment_list_sort_order_ignored_with_search", kind="error",
         rule="sort_order asc or desc orders the list",
         source="spec: Endpoints (List query parameters: sort order asc or desc); "
                "docs/interface.md: The spec's numbered open points (2. sort_by, sort_order) (ref)",
         what="the deployment list ignores sort_order when search is given (always the default desc)"),
    dict(name="deployment_list_phone_numbers_first_connection", kind="error",
         rule="list items show the deployment's phone numbers",
         source="spec: Resources and their fields (Deployment list items additionally show "
                "phone_numbers)",
         what="a list item's phone_numbers holds only the first connection's numbers"),
    dict(name="deployment_list_leaks_other_workspace", kind="error",
         rule="a workspace's key lists only its own workspace",
         source="spec: Authentication (1. X-API-Key required; keys per workspace); "
                "docs/interface.md: The platform check (Lists of two workspaces) (spec)",
         what="a deployment list with search also shows the matching deployments of the org's "
              "other workspaces (and counts them in total)"),
    dict(name="deployment_list_limit_100_refused", kind="error",
         rule="the list limit may be 100",
         source="spec: Limits (Deployment list limit 1 to 100)",
         what="limit=100 on the deployment list is refused with a 422 at query.limit"),
    dict(name="deployment_list_limit_101_accepted", kind="error",
         rule="the list limit is at most 100",
         source="spec: Limits (Deployment list limit 1 to 100)",
         what="limit=101 to 200 on the deployment list is accepted (read as 100) instead of a 422"),
    dict(name="deployment_get_schedule_in_utc", kind="error",
         rule="inbound_config start_time and end_time are local times of its timezone",
         source="spec: Resources and their fields (InboundConfig: start_time, end_time HH:MM, "
                "timezone IANA)",
         what="GET /deployments/{id} answers start_time and end_time converted to UTC while "
              "keeping the timezone name"),
    dict(name="deployment_patch_days_union", kind="error",
         rule="a PATCH replaces the schedule",
         source="spec: Endpoints (Deployment PATCH: the schedule can be changed)",
         what="PATCH inbound_config.allowed_days is merged with the stored days (union) instead of "
              "replacing them"),
    dict(name="deployment_patch_app_version_not_stored", kind="error",
         rule="PATCH app_version changes the deployed version",
         source="spec: Endpoints (Deployment PATCH: app_version accepted; the agent version can "
                "be changed)",
         what="PATCH answers the new app_version but does not store it (GET and the list keep "
              "the old one)"),
    dict(name="deployment_patch_clears_description", kind="error",
         rule="a PATCH changes only the fields it names",
         source="spec: Endpoints (Deployment PATCH: partial update)",
         what="a PATCH that does not name description clears it"),
    dict(name="deployment_patch_app_id_change_ignored", kind="error",
         rule="a deployment PATCH with another app_id is refused",
         source="docs/interface.md: The spec's numbered open points (4. app_id is refused unless "
                "unchanged) (ref)",
         what="a PATCH with another app_id is answered 200 (app_id silently kept) instead of a 4xx"),
    dict(name="deployment_pause_answer_stale", kind="error",
         rule="PUT status answers the updated deployment",
         source="spec: Endpoints (Deployment PUT status answers the updated deployment); spec: "
                "States and transitions (Deployment: active -> paused)",
         what="PUT status {action: pause} answers status active although the deployment is paused"),
    dict(name="deployment_delete_error_shape", kind="error",
         rule="a failed delete answers {error: {message, type, code}}",
         source="spec: Errors (Deployment list and delete: {error:{message,type,code}}); "
                "spec: Endpoints (DELETE on failure)",
         what="a failed DELETE keeps its status but answers {\"detail\": <message>}"),
    dict(name="deployment_delete_paused_refused", kind="error",
         rule="a paused deployment can be deleted",
         source="spec: States and transitions (Deployment: active or paused -> removed by DELETE)",
         what="DELETE of a paused deployment is refused with 409 deployment_paused"),
    # ---- campaign webhook events ------------------------------------------------------
    dict(name="event_retry_attempt_one_based", kind="error", webhook=True,
         rule="retry_attempt is 0 for the first dial",
         source="docs/interface.md: Outcomes and retries (retry_attempt: 0 for the first dial, "
                "then 1, 2, ...) (ref)",
         what="campaign events count retry_attempt from 1"),
    dict(name="event_executed_at_call_end", kind="error", webhook=True,
         rule="executed_at is when the dial was placed",
         source="docs/interface.md: Events (Event kinds and payloads) (ref); docs/interface.md: "
                "The platform check (Observing dials: executed_at) (ref)",
         what="events of connected calls give executed_at = dial time + duration (the call's end)"),
    dict(name="event_short_call_completed", kind="assumed", webhook=True,
         rule="a short call is completion_status partial with failure_reason short_duration",
         source="docs/interface.md: Outcomes and retries (completion_status: partial for a short "
                "one; failure_reason short_duration) (assumed)",
         what="events of short-duration calls say completion_status completed and "
              "failure_reason null"),
    dict(name="event_agent_number_is_user", kind="error", webhook=True,
         rule="agent_phone_number is the number the call left from",
         source="spec: Resources and their fields (agent_phone_number: number the call originates "
                "from); docs/interface.md: Events (Event kinds and payloads) (ref)",
         what="campaign events give agent_phone_number = the user's number"),
    dict(name="event_metadata_first_attempt_only", kind="error", webhook=True,
         rule="every campaign event carries the campaign's webhook metadata",
         source="docs/interface.md: Events (Event kinds and payloads) (ref); spec: Resources and "
                "their fields (webhook_config.metadata attached to the webhook)",
         what="campaign events of retries (retry_attempt > 0) carry metadata null; first "
              "attempts carry it"),
    dict(name="event_signature_body_only", kind="error", webhook=True,
         rule="x-webhook-signature is HMAC-SHA256 over {timestamp}.{raw body}",
         source="docs/interface.md: Events (Signing: HMAC-SHA256 of {timestamp}.{raw body}) (ref)",
         what="webhook signatures are HMAC-SHA256 over the body alone, without the timestamp"),
    dict(name="webhook_failure_not_retried", kind="error", webhook=True,
         rule="a delivery answered non-2xx is retried",
         source="docs/interface.md: Webhook delivery (Success and failure: non-2xx retried) (ref)",
         what="a receiver's non-2xx answer (or no answer) counts as delivered: no retry"),
    # ---- authentication ---------------------------------------------------------------
    dict(name="auth_missing_key_reuses_last", kind="error",
         rule="every platform request needs X-API-Key",
         source="spec: Authentication (1. Platform endpoints: header X-API-Key is required)",
         what="a request without X-API-Key to a workspace's path is served with the key last "
              "used successfully for that workspace"),
    dict(name="auth_other_workspace_key_reads", kind="error",
         rule="another workspace's key is refused",
         source="spec: Authentication (1. X-API-Key is required); docs/interface.md: The platform "
                "check (Refusals of a key) (spec)",
         what="GET of one campaign or deployment with another workspace's key of the org is "
              "answered 200 with the resource"),
]
DEFECT_BY_NAME = {d["name"]: d for d in DEFECTS}

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
       "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
       "expect", "content-length"}
OBSERVER = ("x-harness-observer", "round7-proxy")
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
RETRY_ORDER = ["busy", "no_answer", "failed", "short_duration", "provider_error", "internal_error"]
NAME_RE = re.compile(r"^[\w\- ]{1,50}$")
HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
UTC = dt.timezone.utc


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_ts(s):
    if not isinstance(s, str):
        return None
    t = s.strip()
    t = re.sub(r"(\.\d{6})\d+", r"\1", t)
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        v = dt.datetime.fromisoformat(t)
    except ValueError:
        return None
    if v.tzinfo is None:
        return None
    return v


def fmt_ts(v):
    v = v.astimezone(UTC)
    return v.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (v.microsecond // 1000)


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def get_path(obj, path):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None, False
        obj = obj[p]
    return obj, True


def set_path(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def walk(obj):
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v)


def zone(name):
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except Exception:
        return None


def canon_day(d):
    if not isinstance(d, str):
        return None
    for w in WEEKDAYS:
        if d.lower() == w.lower():
            return w
    return None


def date_header():
    return email.utils.formatdate(usegmt=True)


def remove_query_param(uri, name, value=None):
    if not isinstance(uri, str):
        return uri
    parts = urllib.parse.urlsplit(uri)
    if not parts.query:
        return uri
    kept = []
    for piece in parts.query.split("&"):
        k, _, v = piece.partition("=")
        if urllib.parse.unquote_plus(k) == name and (value is None or urllib.parse.unquote_plus(v) == value):
            continue
        kept.append(piece)
    return urllib.parse.urlunsplit(parts._replace(query="&".join(kept)))


def csv_record_ends(data):
    ends, inq = [], False
    for i, ch in enumerate(data):
        if ch == 0x22:
            inq = not inq
        elif ch == 0x0A and not inq:
            ends.append(i + 1)
    if data and (not ends or ends[-1] != len(data)):
        ends.append(len(data))
    return ends


def multipart_map(body, ctype, part_name, fn):
    """Apply fn(bytes)->bytes|None to the content of the form part named part_name."""
    m = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', ctype or "", re.I)
    if not m:
        return None
    delim = b"--" + (m.group(1) or m.group(2)).encode("latin-1")
    pieces = body.split(delim)
    changed = False
    for i in range(1, len(pieces) - 1):
        p = pieces[i]
        he = p.find(b"\r\n\r\n")
        if he < 0 or not p.endswith(b"\r\n"):
            continue
        head, content = p[:he], p[he + 4:-2]
        disp = re.search(rb'content-disposition:[^\r\n]*\bname="([^"]*)"', head, re.I)
        if not disp or disp.group(1).decode("latin-1") != part_name:
            continue
        new = fn(content)
        if new is not None and new != content:
            pieces[i] = head + b"\r\n\r\n" + new + b"\r\n"
            changed = True
    return delim.join(pieces) if changed else None


# --------------------------------------------------------------------------------------
# Requests and answers
# --------------------------------------------------------------------------------------

class Msg:
    def header(self, name):
        n = name.lower()
        for k, v in self.headers:
            if k.lower() == n:
                return v
        return None

    def set_header(self, name, value):
        n = name.lower()
        out, done = [], False
        for k, v in self.headers:
            if k.lower() == n:
                if not done:
                    out.append((k, value))
                    done = True
            else:
                out.append((k, v))
        if not done:
            out.append((name, value))
        self.headers = out

    def del_header(self, name):
        n = name.lower()
        self.headers = [(k, v) for k, v in self.headers if k.lower() != n]

    @property
    def json(self):
        if not hasattr(self, "_json"):
            try:
                self._json = json.loads(self.body) if self.body else None
            except Exception:
                self._json = None
        return self._json

    def set_json(self, obj):
        self._json = obj
        self.body = dumps(obj)


class Req(Msg):
    def __init__(self, method, target, headers, body):
        self.method, self.headers, self.body = method, headers, body
        self.set_target(target)

    def set_target(self, target):
        self.target = target
        p, _, q = target.partition("?")
        self.path, self.query = p, q

    def qs(self):
        return urllib.parse.parse_qsl(self.query, keep_blank_values=True)

    def q(self, name):
        v = None
        for k, val in self.qs():
            if k == name:
                v = val  # the platform takes the last
        return v

    def set_qs(self, pairs):
        self.query = urllib.parse.urlencode(pairs)
        self.target = self.path + ("?" + self.query if self.query else "")

    def modify_json(self):
        """Return the parsed body for modification; call commit() after."""
        return self.json

    def commit(self):
        self.body = dumps(self._json)


class Resp(Msg):
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    @property
    def ok(self):
        return 200 <= self.status < 300


def json_resp(status, obj, reason=None):
    reason = reason or http.client.responses.get(status, "")
    body = dumps(obj)
    return Resp(status, reason, [("content-type", "application/json"), ("date", date_header())], body)


def err422(loc, msg, typ):
    return json_resp(422, {"detail": [{"loc": loc, "msg": msg, "type": typ}]})


def err(status, typ, code, message):
    return json_resp(status, {"error": {"message": message, "type": typ, "code": code}})


# --------------------------------------------------------------------------------------
# Routes
# --------------------------------------------------------------------------------------

_WS = r"/orgs/(?P<org>[^/]+)/workspaces/(?P<ws>[^/]+)"
_SCH = r"^/api/scheduling/v1" + _WS
_PAR = _SCH + r"/(?P<pk>campaigns|deployments)/(?P<pid>[^/]+)/cohorts"
ROUTES = [
    ("outbound", re.compile(r"^/api/outbounds/v1" + _WS + r"/outbounds/?$")),
    ("cohort_upload", re.compile(_PAR + r"/upload/?$")),
    ("cohort_stream", re.compile(_PAR + r"/stream/?$")),
    ("cohort_files", re.compile(_PAR + r"/(?P<coh>[^/]+)/files/?$")),
    ("cohort_list", re.compile(_PAR + r"/?$")),
    ("cohort", re.compile(_PAR + r"/(?P<coh>[^/]+)/?$")),
    ("campaigns", re.compile(_SCH + r"/campaigns/?$")),
    ("campaign_status", re.compile(_SCH + r"/campaigns/(?P<cid>[^/]+)/status/?$")),
    ("campaign", re.compile(_SCH + r"/campaigns/(?P<cid>[^/]+)/?$")),
    ("deployments", re.compile(r"^/api/app-authoring/v1" + _WS + r"/deployments/?$")),
    ("deployment_status", re.compile(r"^/api/app-authoring/v1" + _WS + r"/deployments/(?P<did>[^/]+)/status/?$")),
    ("deployment", re.compile(r"^/api/app-authoring/v1" + _WS + r"/deployments/(?P<did>[^/]+)/?$")),
]
WS_PATH = re.compile(r"^/api/[^/]+/v1" + _WS + r"(/|$)")


def match_route(path):
    for name, rx in ROUTES:
        m = rx.match(path)
        if m:
            return name, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items() if v is not None}
    return None, {}


# --------------------------------------------------------------------------------------
# The proxy
# --------------------------------------------------------------------------------------

class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.keys_by_ws = {}        # (org, ws) -> key last used with success
        self.ws_by_key = {}         # key -> (org, ws)
        self.cshadow = {}           # campaign_id -> original value (hidden-field defects)
        self.dshadow = {}           # deployment_id -> original timezone
        self.stop_cohorts = set()   # cohort ids whose stop_file category was dropped
        self.cohort_parent = {}     # (org, ws, cohort_id) -> (pk, pid)


class Proxy:
    def __init__(self, upstream, defect, secret, verbose):
        u = urllib.parse.urlsplit(upstream)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise SystemExit("--upstream must be an http(s) URL")
        self.up_scheme, self.up_host = u.scheme, u.hostname
        self.up_port = u.port or (443 if u.scheme == "https" else 80)
        self.up_netloc = u.netloc
        self.up_prefix = u.path.rstrip("/")
        self.defect = defect
        self.meta = DEFECT_BY_NAME.get(defect) if defect else None
        self.webhooks = bool(self.meta and self.meta.get("webhook"))
        self.secret = secret
        self.verbose = verbose
        self.st = State()
        self.recv_prefix = None  # set once the port is known

    # ---- upstream ---------------------------------------------------------------------
    def connect(self, timeout):
        if self.up_scheme == "https":
            import ssl
            return http.client.HTTPSConnection(self.up_host, self.up_port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.up_host, self.up_port, timeout=timeout)

    def send_upstream(self, method, target, headers, body, had_length, timeout=600):
        c = self.connect(timeout)
        try:
            c.putrequest(method, self.up_prefix + target, skip_host=True, skip_accept_encoding=True)
            has_host = False
            for k, v in headers:
                lk = k.lower()
                if lk in HOP:
                    continue
                if lk == "host":
                    has_host = True
                c.putheader(k, v)
            if not has_host:
                c.putheader("Host", self.up_netloc)
            if body or had_length:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body if body else None)
            r = c.getresponse()
            data = r.read()
            hdrs = r.getheaders()
            return Resp(r.status, r.reason, hdrs, data)
        finally:
            c.close()

    def aux(self, method, path, key, body=None, observe=True):
        """The proxy's own request to the platform (reads carry the observer header)."""
        headers = [("Host", self.up_netloc)]
        if key:
            headers.append(("X-API-Key", key))
        if observe and method in ("GET", "HEAD"):
            headers.append(OBSERVER)
        data = b""
        if body is not None:
            data = body if isinstance(body, bytes) else dumps(body)
            headers.append(("Content-Type", "application/json"))
        try:
            return self.send_upstream(method, path, headers, data, body is not None, timeout=60)
        except Exception:
            return None

    def now(self, key):
        r = self.aux("GET", "/sim/v1/clock", key)
        if r is not None and r.status == 200 and isinstance(r.json, dict) and r.json.get("simulated"):
            v = parse_ts(r.json.get("now"))
            if v:
                return v, True
        return dt.datetime.now(UTC), False

    # ---- webhook urls -----------------------------------------------------------------
    def wrap_url(self, url):
        if not isinstance(url, str) or url.startswith(self.recv_prefix):
            return url
        try:
            p = urllib.parse.urlsplit(url)
        except ValueError:
            return url
        if p.scheme not in ("http", "https") or not p.hostname:
            return url
        token = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
        return self.recv_prefix + token

    def unwrap(self, s):
        token = s[len(self.recv_prefix):]
        try:
            return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8")
        except Exception:
            return s

    def rewrite_request_webhooks(self, req, route):
        j = req.json
        if not isinstance(j, dict):
            return
        paths = []
        if route == "outbound" and req.method == "POST":
            paths = [("webhook_config", "url")]
        elif (route == "campaigns" and req.method == "POST") or (route == "campaign" and req.method == "PATCH"):
            paths = [("app_config", "webhook_config", "url")]
        changed = False
        for path in paths:
            v, ok = get_path(j, path)
            if ok and isinstance(v, str):
                w = self.wrap_url(v)
                if w != v:
                    set_path(j, path, w)
                    changed = True
        if changed:
            req.set_json(j)

    def restore_answer_webhooks(self, resp):
        if self.recv_prefix.encode() not in resp.body:
            return
        j = resp.json
        if j is None:
            return

        def fix(o):
            if isinstance(o, dict):
                return {k: fix(v) for k, v in o.items()}
            if isinstance(o, list):
                return [fix(v) for v in o]
            if isinstance(o, str) and o.startswith(self.recv_prefix):
                return self.unwrap(o)
            return o
        resp.set_json(fix(j))

    # ---- learning ---------------------------------------------------------------------
    def learn(self, req, resp, params):
        key = req.header("X-API-Key")
        m = WS_PATH.match(req.path)
        if key and m and resp.ok:
            ws = (urllib.parse.unquote(m.group("org")), urllib.parse.unquote(m.group("ws")))
            with self.st.lock:
                self.st.keys_by_ws[ws] = key
                self.st.ws_by_key[key] = ws
        if resp.ok and "pk" in params and isinstance(resp.json, (dict, list)):
            for o in walk(resp.json):
                if isinstance(o.get("cohort_id"), str) and "source_type" in o:
                    self.st.cohort_parent[(params["org"], params["ws"], o["cohort_id"])] = (params["pk"], params["pid"])

    # ---- one request ------------------------------------------------------------------
    def handle(self, req, had_length):
        if req.path.startswith("/__r7/wh/"):
            return self.handle_webhook(req)
        route, params = match_route(req.path)
        ctx = Ctx(self, req, route, params)
        api = req.path.startswith("/api/")
        if self.webhooks and route:
            self.rewrite_request_webhooks(req, route)
        hooks = HOOKS.get(self.defect) if (self.defect and api) else None
        resp = None
        if hooks and hooks.before:
            resp = hooks.before(ctx)
        if resp is None:
            try:
                resp = self.send_upstream(req.method, req.target, req.headers, req.body, had_length)
            except Exception as e:  # the platform did not answer
                return err(502, "api_error", "bad_gateway", "proxy: upstream failed: %s" % e)
            if hooks and hooks.after:
                r2 = hooks.after(ctx, resp)
                if r2 is not None:
                    resp = r2
        self.learn(req, resp, params)
        if self.webhooks:
            self.restore_answer_webhooks(resp)
        return resp

    # ---- webhook receiver -------------------------------------------------------------
    def handle_webhook(self, req):
        token = req.path[len("/__r7/wh/"):]
        wrapped = self.recv_prefix + token
        orig = self.unwrap(wrapped)
        raw = req.body
        body = raw.replace(json.dumps(wrapped).encode(), dumps(orig))
        hooks = HOOKS.get(self.defect)
        try:
            ev = json.loads(body)
        except Exception:
            ev = None
        if hooks and hooks.event and isinstance(ev, dict):
            kind = "outbound" if "channel_info" in ev else "campaign" if "campaign_id" in ev else "deployment"
            ev2 = copy.deepcopy(ev)
            if hooks.event(self, kind, ev2):
                body = dumps(ev2)
        headers = [(k, v) for k, v in req.headers
                   if k.lower() not in HOP and k.lower() != "host"]
        msg = Msg()
        msg.headers = headers
        ts = msg.header("x-webhook-timestamp") or ""
        if hooks and hooks.sign:
            sig = hooks.sign(self, ts, body)
        elif body != raw:
            sig = hmac.new(self.secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        else:
            sig = None
        if sig is not None:
            msg.set_header("x-webhook-signature", sig)
        status, rbody, rheaders = 502, b"", []
        try:
            p = urllib.parse.urlsplit(orig)
            if p.scheme == "https":
                import ssl
                c = http.client.HTTPSConnection(p.hostname, p.port or 443, timeout=9,
                                                context=ssl.create_default_context())
            else:
                c = http.client.HTTPConnection(p.hostname, p.port or 80, timeout=9)
            target = (p.path or "/") + ("?" + p.query if p.query else "")
            c.putrequest("POST", target, skip_accept_encoding=True)
            for k, v in msg.headers:
                c.putheader(k, v)
            c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
            r = c.getresponse()
            rbody = r.read()
            status = r.status
            rheaders = [(k, v) for k, v in r.getheaders() if k.lower() in ("content-type",)]
            c.close()
        except Exception as e:
            rbody = ("proxy: webhook receiver failed: %s" % e).encode()
            rheaders = [("content-type", "text/plain")]
        if hooks and hooks.receiver_status:
            status = hooks.receiver_status(status)
        return Resp(status, http.client.responses.get(status, ""), rheaders + [("date", date_header())], rbody)


class Ctx:
    def __init__(self, proxy, req, route, params):
        self.p, self.req, self.route, self.params = proxy, req, route, params
        self.m = req.method
        self.key = req.header("X-API-Key")
        self.note = {}

    def on(self, route, *methods):
        return self.route == route and (not methods or self.m in methods)

    def aux(self, method, path, body=None, observe=True, key=None):
        return self.p.aux(method, path, key or self.key, body, observe)

    def now(self):
        return self.p.now(self.key)

    @property
    def ws_prefix(self):
        return "/orgs/%s/workspaces/%s" % (urllib.parse.quote(self.params["org"], safe=""),
                                            urllib.parse.quote(self.params["ws"], safe=""))

    def campaign_path(self, cid=None):
        return "/api/scheduling/v1" + self.ws_prefix + "/campaigns/" + urllib.parse.quote(cid or self.params["cid"], safe="")

    def deployment_path(self, did=None):
        return "/api/app-authoring/v1" + self.ws_prefix + "/deployments/" + urllib.parse.quote(did or self.params["did"], safe="")

    def get_json(self, path):
        r = self.aux("GET", path)
        if r is not None and r.status == 200 and isinstance(r.json, dict):
            return r.json
        return None


# --------------------------------------------------------------------------------------
# Defect hooks
# --------------------------------------------------------------------------------------

class Hooks:
    def __init__(self, before=None, after=None, event=None, sign=None, receiver_status=None):
        self.before, self.after, self.event = before, after, event
        self.sign, self.receiver_status = sign, receiver_status


HOOKS = {}


def defect(name, **kw):
    assert name in DEFECT_BY_NAME, name
    HOOKS[name] = Hooks(**kw)


def body_dict(ctx):
    j = ctx.req.json
    return j if isinstance(j, dict) else None


def campaign_write(ctx):
    return ctx.on("campaigns", "POST") or ctx.on("campaign", "PATCH")


# ---- instant outbound ----------------------------------------------------------------

def _loc_after(ctx, resp):
    if not (ctx.on("outbound", "POST") and resp.status == 422 and isinstance(resp.json, dict)):
        return None
    j = resp.json
    changed = False
    for d in j.get("detail") or []:
        loc = d.get("loc") if isinstance(d, dict) else None
        if isinstance(loc, list) and len(loc) > 2 and loc[0] == "body":
            d["loc"] = ["body", loc[-1]]
            changed = True
    if changed:
        resp.set_json(j)


defect("outbound_loc_drops_parent", after=_loc_after)


def _outbound_version_before(ctx):
    j = body_dict(ctx)
    if ctx.on("outbound", "POST") and j and isinstance(j.get("app_config"), dict) \
            and "app_version" not in j["app_config"]:
        j["app_config"]["app_version"] = 1
        ctx.req.set_json(j)


defect("outbound_app_version_defaulted", before=_outbound_version_before)


def _ev_metadata(p, kind, ev):
    wc = ev.get("webhook_config")
    if kind == "outbound" and isinstance(wc, dict) and isinstance(wc.get("metadata"), dict) and wc["metadata"]:
        wc["metadata"] = {}
        return True
    return False


defect("outbound_event_metadata_dropped", event=_ev_metadata)


def _ev_attempt(p, kind, ev):
    a = ev.get("attempt_id")
    if kind == "outbound" and isinstance(a, str) and a:
        last = a[-1]
        digits = "0123456789abcdef"
        if last.lower() in digits:
            ev["attempt_id"] = a[:-1] + digits[(digits.index(last.lower()) + 1) % 16]
        else:
            ev["attempt_id"] = a[:-1] + "0"
        return True
    return False


defect("outbound_event_attempt_id_mismatch", event=_ev_attempt)


# ---- campaign create ------------------------------------------------------------------

def _desc_null_after(ctx, resp):
    if ctx.on("campaigns", "POST") and resp.status == 200 and isinstance(resp.json, dict) \
            and isinstance(resp.json.get("description"), str):
        j = resp.json
        j["description"] = None
        resp.set_json(j)


defect("campaign_create_description_null", after=_desc_null_after)


def _times(ctx):
    j = body_dict(ctx)
    if not (ctx.on("campaigns", "POST") and j):
        return None, None, None
    return j, parse_ts(j.get("start_timestamp")), parse_ts(j.get("end_timestamp"))


def _start_min_before(ctx):
    j, st, en = _times(ctx)
    if not st:
        return
    now, sim = ctx.now()
    d = (st - now).total_seconds()
    if 60 <= d < 120:
        new = now + dt.timedelta(seconds=121 if sim else 122)  # the clock reads in ms
        j["start_timestamp"] = fmt_ts(new)
        if en and (en - new).total_seconds() < 120:
            j["end_timestamp"] = fmt_ts(en + (new - st))
        ctx.req.set_json(j)


defect("campaign_start_min_accepts_early", before=_start_min_before)


def _start_max_before(ctx):
    j, st, en = _times(ctx)
    if not st:
        return
    now, sim = ctx.now()
    d = (st - now).total_seconds()
    week = 7 * 86400
    if week < d <= week + 3600:
        new = now + dt.timedelta(seconds=week - 1 if sim else week - 2)
        j["start_timestamp"] = fmt_ts(new)
        if en and (en - new).total_seconds() > 30 * 86400:
            j["end_timestamp"] = fmt_ts(new + dt.timedelta(days=30))
        ctx.req.set_json(j)


defect("campaign_start_max_accepts_late", before=_start_max_before)


def _end_min_before(ctx):
    j, st, en = _times(ctx)
    if st and en and 60 <= (en - st).total_seconds() < 120:
        j["end_timestamp"] = fmt_ts(st + dt.timedelta(seconds=120))
        ctx.req.set_json(j)


defect("campaign_end_min_accepts_short", before=_end_min_before)


def _end_max_before(ctx):
    j, st, en = _times(ctx)
    if st and en and 30 * 86400 - 3600 < (en - st).total_seconds() <= 30 * 86400:
        return err422(["body", "end_timestamp"],
                      "Value error, end_timestamp must be at least 120 seconds and at most 30 days "
                      "after start_timestamp (allowed %s to %s)" % (
                          fmt_ts(st + dt.timedelta(seconds=120)),
                          fmt_ts(st + dt.timedelta(days=30) - dt.timedelta(hours=1))),
                      "value_error")


defect("campaign_end_max_refuses_last_hour", before=_end_max_before)


def _app_field(ctx, *path):
    j = body_dict(ctx)
    if not (campaign_write(ctx) and j):
        return j, None, False
    v, ok = get_path(j, ("app_config",) + path)
    return j, v, ok


def _rate_min_before(ctx):
    j, v, ok = _app_field(ctx, "attempts_per_second")
    if ok and is_num(v) and 0.05 <= v < 0.1:
        j["app_config"]["attempts_per_second"] = 0.1
        ctx.req.set_json(j)


defect("campaign_rate_min_accepts_low", before=_rate_min_before)


def _rate_max_before(ctx):
    j, v, ok = _app_field(ctx, "attempts_per_second")
    if ok and is_num(v) and v == 500:
        return err422(["body", "app_config", "attempts_per_second"],
                      "Input should be less than 500", "less_than")


defect("campaign_rate_max_refuses_500", before=_rate_max_before)


def _threshold_before(ctx):
    j, v, ok = _app_field(ctx, "retry_config", "threshold_seconds")
    if ok and is_int(v) and 1200 < v <= 1300:
        rc = j["app_config"]["retry_config"]
        rc["threshold_seconds"] = 1200
        sd, ok2 = get_path(rc, ("retry_on", "short_duration", "threshold_seconds"))
        if ok2 and sd == v:
            rc["retry_on"]["short_duration"]["threshold_seconds"] = 1200
        ctx.req.set_json(j)


defect("campaign_threshold_accepts_1201", before=_threshold_before)


def _desc151_before(ctx):
    j = body_dict(ctx)
    if campaign_write(ctx) and j and isinstance(j.get("description"), str) and 150 < len(j["description"]) <= 160:
        j["description"] = j["description"][:150]
        ctx.req.set_json(j)


defect("campaign_description_accepts_151", before=_desc151_before)


# ---- hidden campaign fields (the engine gets another value, answers show the given one) ----

def shadow_defect(name, path, forward, restore):
    """forward(orig, body) -> new value or None; restore(answer_value, orig) -> value."""

    def before(ctx):
        j = body_dict(ctx)
        if not (campaign_write(ctx) and j):
            return
        v, ok = get_path(j, path)
        if not ok:
            return
        new = forward(v, j)
        if new is None:
            ctx.note["clear"] = True
            return
        ctx.note["orig"] = copy.deepcopy(v)
        set_path(j, path, new)
        ctx.req.set_json(j)

    def after(ctx, resp):
        st = ctx.p.st
        if resp.ok and campaign_write(ctx):
            cid = ctx.params.get("cid") or (resp.json or {}).get("campaign_id")
            if cid and "orig" in ctx.note:
                st.cshadow[cid] = ctx.note["orig"]
            elif cid and ctx.note.get("clear"):
                st.cshadow.pop(cid, None)
        j = resp.json
        if not isinstance(j, (dict, list)) or not st.cshadow:
            return
        changed = False
        for o in walk(j):
            cid = o.get("campaign_id")
            if isinstance(cid, str) and cid in st.cshadow:
                v, ok = get_path(o, path)
                if ok:
                    nv = restore(v, st.cshadow[cid])
                    if nv != v or type(nv) is not type(v):
                        set_path(o, path, nv)
                        changed = True
        if changed:
            resp.set_json(j)

    defect(name, before=before, after=after)


shadow_defect(
    "campaign_max_retries_plus_one", ("app_config", "retry_config", "max_retries"),
    lambda v, j: v + 1 if is_int(v) and 0 <= v < 10 else None,
    lambda a, o: o)
shadow_defect(
    "campaign_rate_doubled", ("app_config", "attempts_per_second"),
    lambda v, j: v * 2 if is_num(v) and 0.1 <= v <= 250 else None,
    lambda a, o: float(o) if isinstance(a, float) else o)


def _weights_fwd(v, j):
    if not (isinstance(v, list) and v and all(isinstance(c, dict) and is_int(c.get("weight")) and c["weight"] >= 1 for c in v)):
        return None
    if all(c["weight"] == 1 for c in v):
        return None
    out = copy.deepcopy(v)
    for c in out:
        c["weight"] = 1
    return out


def _weights_restore(a, orig):
    if not (isinstance(a, list) and len(a) == len(orig)):
        return a
    out = copy.deepcopy(a)
    for c, o in zip(out, orig):
        if isinstance(c, dict):
            c["weight"] = o["weight"]
    return out


shadow_defect("campaign_weights_ignored", ("app_config", "connection_configs"), _weights_fwd, _weights_restore)


def _retry_on_fwd(v, j):
    if isinstance(v, list) and "short_duration" in v:
        return [x for x in v if x != "short_duration"]
    if isinstance(v, dict) and isinstance(v.get("short_duration"), dict) and v["short_duration"].get("enabled") is True:
        out = copy.deepcopy(v)
        out["short_duration"]["enabled"] = False
        return out
    return None


def _retry_on_restore(a, orig):
    if not isinstance(a, list) or "short_duration" in a:
        return a
    out = a + ["short_duration"]
    return sorted(out, key=lambda x: RETRY_ORDER.index(x) if x in RETRY_ORDER else 99)


shadow_defect("campaign_short_duration_not_retried", ("app_config", "retry_config", "retry_on"),
              _retry_on_fwd, _retry_on_restore)


def _end_minute_fwd(v, j):
    if not isinstance(v, str):
        return None
    m = HHMM.match(v)
    if not m:
        return None
    mins = (int(m.group(1)) * 60 + int(m.group(2)) - 1) % 1440
    new = "%02d:%02d" % divmod(mins, 60)
    if new == (j.get("allowed_schedule") or {}).get("allowed_start_time"):
        return None
    return new


shadow_defect("campaign_window_end_minute_early", ("allowed_schedule", "allowed_end_time"),
              _end_minute_fwd, lambda a, o: o)


# ---- stop files -------------------------------------------------------------------------

def _stop_before(ctx):
    if ctx.params.get("pk") != "campaigns" or ctx.m != "POST":
        return
    if ctx.route == "cohort_upload":
        new = multipart_map(ctx.req.body, ctx.req.header("content-type"), "cohort_category",
                            lambda c: b"cohort" if c.strip() == b"stop_file" else None)
        if new is not None:
            ctx.req.body = new
            ctx.note["stop"] = True
    elif ctx.route == "cohort_stream":
        j = body_dict(ctx)
        if j and j.get("cohort_category") == "stop_file":
            j["cohort_category"] = "cohort"
            ctx.req.set_json(j)
            ctx.note["stop"] = True


def _stop_after(ctx, resp):
    st = ctx.p.st
    if ctx.note.get("stop") and resp.ok and isinstance(resp.json, dict) and resp.json.get("cohort_id"):
        st.stop_cohorts.add(resp.json["cohort_id"])
    j = resp.json
    if not st.stop_cohorts or not isinstance(j, (dict, list)):
        return
    changed = False
    for o in walk(j):
        if o.get("cohort_id") in st.stop_cohorts and o.get("cohort_category") == "cohort":
            o["cohort_category"] = "stop_file"
            changed = True
    if changed:
        resp.set_json(j)


defect("campaign_stop_file_ignored", before=_stop_before, after=_stop_after)


# ---- campaign list / get ----------------------------------------------------------------

def _status_filter_before(ctx):
    if ctx.on("campaigns", "GET"):
        qs = ctx.req.qs()
        if any(k == "campaign_status" for k, _ in qs) and any(k == "search" and v != "" for k, v in qs):
            ctx.req.set_qs([(k, v) for k, v in qs if k != "campaign_status"])


defect("campaign_list_status_filter_dropped_with_search", before=_status_filter_before)


def _default_asc_before(ctx):
    if ctx.on("campaigns", "GET"):
        qs = ctx.req.qs()
        if not any(k == "sort_order" for k, _ in qs):
            ctx.req.set_target(ctx.req.target + ("&" if ctx.req.query else "?") + "sort_order=asc")
            ctx.note["added"] = True


def _default_asc_after(ctx, resp):
    if ctx.note.get("added") and resp.status == 200 and isinstance(resp.json, dict):
        j = resp.json
        for k in ("next_page_uri", "prev_page_uri"):
            if isinstance(j.get(k), str):
                j[k] = remove_query_param(j[k], "sort_order", "asc")
        resp.set_json(j)


defect("campaign_list_default_order_asc", before=_default_asc_before, after=_default_asc_after)


def _local_times_after(ctx, resp):
    if not (ctx.on("campaign", "GET") and resp.status == 200 and isinstance(resp.json, dict)):
        return
    j = resp.json
    tz = zone((j.get("allowed_schedule") or {}).get("timezone"))
    if tz is None:
        return
    changed = False
    for k in ("start_timestamp", "end_timestamp"):
        v = parse_ts(j.get(k))
        if v and v.astimezone(tz).utcoffset():
            local = v.astimezone(tz).replace(tzinfo=None)
            j[k] = local.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (local.microsecond // 1000)
            changed = True
    if changed:
        resp.set_json(j)


defect("campaign_get_times_local_as_utc", after=_local_times_after)


def _active_after_end_after(ctx, resp):
    if ctx.on("campaign", "GET") and resp.status == 200 and isinstance(resp.json, dict) \
            and resp.json.get("status") == "ended":
        j = resp.json
        j["status"] = "active"
        resp.set_json(j)


defect("campaign_get_status_active_after_end", after=_active_after_end_after)


# ---- campaign patch / status ------------------------------------------------------------

def _retry_reset_before(ctx):
    j = body_dict(ctx)
    if not (ctx.on("campaign", "PATCH") and j):
        return
    rc, ok = get_path(j, ("app_config", "retry_config"))
    if not (ok and isinstance(rc, dict)):
        return
    changed = False
    for k, default in (("max_retries", 0), ("retry_on", []), ("threshold_seconds", 10),
                       ("retry_interval_minutes", 30)):
        if k in rc:
            continue
        if k == "threshold_seconds":
            sd, ok2 = get_path(rc, ("retry_on", "short_duration", "threshold_seconds"))
            if ok2:
                continue
        rc[k] = default
        changed = True
    if changed:
        ctx.req.set_json(j)


defect("campaign_patch_retry_config_reset", before=_retry_reset_before)


def _name_not_stored_before(ctx):
    j = body_dict(ctx)
    if ctx.on("campaign", "PATCH") and j and isinstance(j.get("name"), str) and NAME_RE.match(j["name"]):
        ctx.note["name"] = j.pop("name")
        ctx.req.set_json(j)


def _name_not_stored_after(ctx, resp):
    if "name" in ctx.note and resp.ok and isinstance(resp.json, dict):
        j = resp.json
        j["name"] = ctx.note["name"]
        resp.set_json(j)


defect("campaign_patch_name_not_stored", before=_name_not_stored_before, after=_name_not_stored_after)


def _start_change_before(ctx):
    j = body_dict(ctx)
    if not (ctx.on("campaign", "PATCH") and j and "start_timestamp" in j):
        return
    new = parse_ts(j.get("start_timestamp"))
    if not new:
        return
    cur = ctx.get_json(ctx.campaign_path())
    old = parse_ts((cur or {}).get("start_timestamp"))
    if old and old != new:
        j.pop("start_timestamp")
        ctx.req.set_json(j)


defect("campaign_patch_start_change_ignored", before=_start_change_before)


def _patch_active_after(ctx, resp):
    if not (ctx.on("campaign", "PATCH") and resp.status == 409):
        return None
    cur = ctx.get_json(ctx.campaign_path())
    if not cur or cur.get("status") != "active":
        return None
    path = ctx.campaign_path()
    r1 = ctx.aux("PUT", path + "/status", {"action": "pause"}, observe=False)
    if r1 is None or not r1.ok:
        return None
    r2 = ctx.aux("PATCH", path, ctx.req.body, observe=False)
    r3 = ctx.aux("PUT", path + "/status", {"action": "resume"}, observe=False)
    if r2 is not None and r2.ok and r3 is not None and r3.ok:
        return r3
    return r2 if r2 is not None else None


defect("campaign_patch_active_allowed", after=_patch_active_after)


def _pause_scheduled_before(ctx):
    j = body_dict(ctx)
    if ctx.on("campaign_status", "PUT") and j and j.get("action") == "pause":
        cur = ctx.get_json(ctx.campaign_path())
        if cur and cur.get("status") == "scheduled":
            return err(409, "conflict_error", "invalid_status_transition",
                       "cannot pause a campaign that is scheduled")


defect("campaign_pause_scheduled_refused", before=_pause_scheduled_before)


def _resume_cancelled_after(ctx, resp):
    j = body_dict(ctx)
    if ctx.on("campaign_status", "PUT") and j and j.get("action") == "resume" and resp.status == 409:
        cur = ctx.get_json(ctx.campaign_path())
        if cur and cur.get("status") == "cancelled":
            cur["status"] = "active"
            return json_resp(200, cur, "OK")


defect("campaign_resume_cancelled_lies", after=_resume_cancelled_after)


# ---- cohorts ------------------------------------------------------------------------------

def _cohort_objs(j):
    return [o for o in walk(j) if isinstance(o.get("cohort_id"), str) and "source_type" in o] \
        if isinstance(j, (dict, list)) else []


def _upload_completed_after(ctx, resp):
    if ctx.on("cohort_upload", "POST") and resp.ok and isinstance(resp.json, dict) \
            and resp.json.get("status") == "processing":
        j = resp.json
        j["status"] = "completed"
        resp.set_json(j)


defect("cohort_upload_answers_completed", after=_upload_completed_after)


def _upload_paused_before(ctx):
    if ctx.on("cohort_upload", "POST") and ctx.params.get("pk") == "campaigns":
        cur = ctx.get_json(ctx.campaign_path(ctx.params["pid"]))
        if cur and cur.get("status") == "paused":
            return err(409, "conflict_error", "campaign_closed",
                       "campaign '%s' is paused: it takes no cohorts" % ctx.params["pid"])


defect("cohort_upload_paused_campaign_refused", before=_upload_paused_before)


def _rejected_minus_after(ctx, resp):
    if ctx.params.get("pk") != "campaigns" or not resp.ok:
        return
    j = resp.json
    changed = False
    for o in _cohort_objs(j):
        r = o.get("result")
        if isinstance(r, dict) and is_int(r.get("rejected_records")) and r["rejected_records"] > 0:
            r["rejected_records"] -= 1
            changed = True
    if changed:
        resp.set_json(j)


defect("cohort_rejected_count_minus_one", after=_rejected_minus_after)


def _rejected_first_after(ctx, resp):
    if ctx.on("cohort_files", "GET") and resp.status == 200 and ctx.req.q("file_type") == "rejected_records":
        ends = csv_record_ends(resp.body)
        if len(ends) > 2:
            resp.body = resp.body[:ends[1]]


defect("cohort_rejected_file_first_row_only", after=_rejected_first_after)


def _source_type_after(ctx, resp):
    if "pk" not in ctx.params or not resp.ok:
        return
    j = resp.json
    changed = False
    for o in _cohort_objs(j):
        if o.get("source_type") == "stream":
            o["source_type"] = "file_upload"
            changed = True
    if changed:
        resp.set_json(j)


defect("cohort_stream_source_type_upload", after=_source_type_after)


def _country_before(ctx):
    j = body_dict(ctx)
    if ctx.on("cohort_stream", "POST") and j and "country_code" in j:
        j.pop("country_code")
        ctx.req.set_json(j)


defect("cohort_stream_country_code_ignored", before=_country_before)


def _stream_1000_before(ctx):
    j = body_dict(ctx)
    if ctx.on("cohort_stream", "POST") and j and isinstance(j.get("users"), list) and len(j["users"]) == 1000:
        return err422(["body", "users"], "List should have at most 999 items after validation, not 1000",
                      "too_long")


defect("cohort_stream_1000_refused", before=_stream_1000_before)


def _stream_1001_before(ctx):
    j = body_dict(ctx)
    if ctx.on("cohort_stream", "POST") and j and isinstance(j.get("users"), list) and 1000 < len(j["users"]) <= 1100:
        j["users"] = j["users"][:1000]
        ctx.req.set_json(j)


defect("cohort_stream_1001_accepted", before=_stream_1001_before)


def _newest_first_after(ctx, resp):
    if ctx.on("cohort_list", "GET") and resp.status == 200 and isinstance(resp.json, dict) \
            and isinstance(resp.json.get("items"), list) and len(resp.json["items"]) > 1:
        j = resp.json
        j["items"].reverse()
        resp.set_json(j)


defect("cohort_list_newest_first", after=_newest_first_after)


def _any_parent_after(ctx, resp):
    if not ((ctx.on("cohort", "GET") or ctx.on("cohort_files", "GET")) and resp.status == 404):
        return None
    code = ((resp.json or {}).get("error") or {}).get("code") if isinstance(resp.json, dict) else None
    if code != "cohort_not_found":
        return None
    par = ctx.p.st.cohort_parent.get((ctx.params["org"], ctx.params["ws"], ctx.params["coh"]))
    if not par or par == (ctx.params["pk"], ctx.params["pid"]):
        return None
    old = "/%s/%s/cohorts/" % (ctx.params["pk"], urllib.parse.quote(ctx.params["pid"], safe=""))
    new = "/%s/%s/cohorts/" % (par[0], urllib.parse.quote(par[1], safe=""))
    if old not in ctx.req.target:
        return None
    r = ctx.aux("GET", ctx.req.target.replace(old, new, 1))
    if r is not None and r.status == 200:
        return r
    return None


defect("cohort_get_any_parent", after=_any_parent_after)


def _dep_upload_paused_before(ctx):
    if ctx.on("cohort_upload", "POST") and ctx.params.get("pk") == "deployments":
        cur = ctx.get_json(ctx.deployment_path(ctx.params["pid"]))
        if cur and cur.get("status") == "paused":
            return err(409, "conflict_error", "deployment_paused",
                       "deployment '%s' is paused: resume it before uploading cohorts" % ctx.params["pid"])


defect("deployment_cohort_upload_paused_refused", before=_dep_upload_paused_before)


def _dep_total_after(ctx, resp):
    if ctx.params.get("pk") != "deployments" or not resp.ok:
        return
    j = resp.json
    changed = False
    for o in _cohort_objs(j):
        r = o.get("result")
        if isinstance(r, dict) and is_int(r.get("valid_records")) and r.get("total_records") != r["valid_records"]:
            r["total_records"] = r["valid_records"]
            changed = True
    if changed:
        resp.set_json(j)


defect("deployment_cohort_total_excludes_rejected", after=_dep_total_after)


# ---- deployments ----------------------------------------------------------------------------

def _days_first_before(ctx):
    j = body_dict(ctx)
    if not (ctx.on("deployments", "POST") and j):
        return
    days, ok = get_path(j, ("inbound_config", "allowed_days"))
    if ok and isinstance(days, list) and len(days) > 1 and all(canon_day(d) for d in days):
        ctx.note["days"] = [canon_day(d) for d in days]
        j["inbound_config"]["allowed_days"] = days[:1]
        ctx.req.set_json(j)


def _days_first_after(ctx, resp):
    if "days" in ctx.note and resp.ok and isinstance(resp.json, dict) \
            and isinstance(resp.json.get("inbound_config"), dict):
        j = resp.json
        j["inbound_config"]["allowed_days"] = ctx.note["days"]
        resp.set_json(j)


defect("deployment_create_days_first_only", before=_days_first_before, after=_days_first_after)


def _dep_write(ctx):
    return ctx.on("deployments", "POST") or ctx.on("deployment", "PATCH")


def _name50_before(ctx):
    j = body_dict(ctx)
    if _dep_write(ctx) and j and isinstance(j.get("name"), str) and len(j["name"]) == 50 and NAME_RE.match(j["name"]):
        return err422(["body", "name"], "String should have at most 49 characters", "string_too_long")


defect("deployment_name_50_refused", before=_name50_before)


def _name51_before(ctx):
    j = body_dict(ctx)
    if _dep_write(ctx) and j and isinstance(j.get("name"), str) and 50 < len(j["name"]) <= 60 \
            and re.fullmatch(r"[\w\- ]+", j["name"]):
        j["name"] = j["name"][:50]
        ctx.req.set_json(j)


defect("deployment_name_51_accepted", before=_name51_before)


def _tz_before(ctx):
    j = body_dict(ctx)
    if not (_dep_write(ctx) and j and "inbound_config" in j):
        return
    ic = j["inbound_config"]
    tzname = ic.get("timezone") if isinstance(ic, dict) else None
    z = zone(tzname)
    if z is not None and tzname not in ("UTC", "Etc/UTC"):
        ctx.note["tz"] = tzname
        ic["timezone"] = "UTC"
        ctx.req.set_json(j)
    else:
        ctx.note["clear"] = True


def _tz_after(ctx, resp):
    st = ctx.p.st
    if resp.ok and _dep_write(ctx) and isinstance(resp.json, dict):
        did = resp.json.get("deployment_id")
        if did and "tz" in ctx.note:
            st.dshadow[did] = ctx.note["tz"]
        elif did and ctx.note.get("clear"):
            st.dshadow.pop(did, None)
    j = resp.json
    if not st.dshadow or not isinstance(j, (dict, list)):
        return
    changed = False
    for o in walk(j):
        did = o.get("deployment_id")
        if isinstance(did, str) and did in st.dshadow and isinstance(o.get("inbound_config"), dict):
            o["inbound_config"]["timezone"] = st.dshadow[did]
            changed = True
    if changed:
        resp.set_json(j)


defect("deployment_inbound_tz_utc", before=_tz_before, after=_tz_after)


def _dep_page(ctx, resp):
    return ctx.on("deployments", "GET") and resp.status == 200 and isinstance(resp.json, dict) \
        and isinstance(resp.json.get("items"), list)


def _total_page_after(ctx, resp):
    if _dep_page(ctx, resp):
        j = resp.json
        if j.get("total") != len(j["items"]):
            j["total"] = len(j["items"])
            resp.set_json(j)


defect("deployment_list_total_page_size", after=_total_page_after)


def _next_search_after(ctx, resp):
    if _dep_page(ctx, resp) and isinstance(resp.json.get("next_page_uri"), str):
        j = resp.json
        nu = remove_query_param(j["next_page_uri"], "search")
        if nu != j["next_page_uri"]:
            j["next_page_uri"] = nu
            resp.set_json(j)


defect("deployment_list_next_link_drops_search", after=_next_search_after)


def _next_exact_after(ctx, resp):
    if not _dep_page(ctx, resp):
        return
    j = resp.json
    off, lim, total = j.get("offset"), j.get("limit"), j.get("total")
    if j.get("next_page_uri") is None and is_int(off) and is_int(lim) and is_int(total) \
            and total > 0 and lim > 0 and off + lim == total:
        pairs = [(k, v) for k, v in ctx.req.qs() if k not in ("offset", "limit")]
        pairs += [("offset", str(off + lim)), ("limit", str(lim))]
        host = ctx.req.header("Host") or ctx.p.up_netloc
        base = "http://%s%s" % (host, ctx.req.path.rstrip("/"))
        prev = j.get("prev_page_uri")
        if isinstance(prev, str):
            base = prev.split("?", 1)[0]
        j["next_page_uri"] = base + "?" + urllib.parse.urlencode(pairs)
        resp.set_json(j)


defect("deployment_list_next_link_exact_multiple", after=_next_exact_after)


def _sort_search_before(ctx):
    if ctx.on("deployments", "GET"):
        qs = ctx.req.qs()
        if any(k == "search" and v != "" for k, v in qs) and any(k == "sort_order" for k, _ in qs):
            ctx.req.set_qs([(k, v) for k, v in qs if k != "sort_order"])


defect("deployment_list_sort_order_ignored_with_search", before=_sort_search_before)


def _phones_first_after(ctx, resp):
    if not _dep_page(ctx, resp):
        return
    j = resp.json
    changed = False
    for it in j["items"]:
        cc = it.get("connection_configs") if isinstance(it, dict) else None
        if isinstance(cc, list) and len(cc) > 1 and isinstance(cc[0], dict):
            first = list(cc[0].get("phone_numbers") or [])
            if it.get("phone_numbers") != first:
                it["phone_numbers"] = first
                changed = True
    if changed:
        resp.set_json(j)


defect("deployment_list_phone_numbers_first_connection", after=_phones_first_after)


def _leak_after(ctx, resp):
    if not _dep_page(ctx, resp):
        return
    search = ctx.req.q("search")
    if not search:
        return
    j = resp.json
    org, ws = ctx.params["org"], ctx.params["ws"]
    with ctx.p.st.lock:
        others = [(w, k) for w, k in ctx.p.st.keys_by_ws.items() if w[0] == org and w[1] != ws]
    changed = False
    for (o, w), key in others:
        path = "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments?%s" % (
            urllib.parse.quote(o, safe=""), urllib.parse.quote(w, safe=""),
            urllib.parse.urlencode([("search", search), ("limit", "100")]))
        r = ctx.p.aux("GET", path, key)
        if r is None or r.status != 200 or not isinstance(r.json, dict):
            continue
        items = r.json.get("items") or []
        if not items:
            continue
        room = max(0, (j.get("limit") or 0) - len(j["items"]))
        j["items"].extend(items[:room])
        j["total"] = (j.get("total") or 0) + (r.json.get("total") or len(items))
        changed = True
    if changed:
        resp.set_json(j)


defect("deployment_list_leaks_other_workspace", after=_leak_after)


def _limit_int(ctx):
    v = ctx.req.q("limit")
    try:
        return int(v) if v is not None and re.fullmatch(r"[+]?\d+", v.strip()) else None
    except ValueError:
        return None


def _limit100_before(ctx):
    if ctx.on("deployments", "GET") and _limit_int(ctx) == 100:
        return err422(["query", "limit"], "Input should be less than or equal to 99", "less_than_equal")


defect("deployment_list_limit_100_refused", before=_limit100_before)


def _limit101_before(ctx):
    if ctx.on("deployments", "GET"):
        v = _limit_int(ctx)
        if v is not None and 100 < v <= 200:
            ctx.req.set_qs([(k, "100" if k == "limit" else val) for k, val in ctx.req.qs()])


defect("deployment_list_limit_101_accepted", before=_limit101_before)


def _sched_utc_after(ctx, resp):
    if not (ctx.on("deployment", "GET") and resp.status == 200 and isinstance(resp.json, dict)):
        return
    j = resp.json
    ic = j.get("inbound_config")
    if not isinstance(ic, dict):
        return
    tz = zone(ic.get("timezone"))
    if tz is None:
        return
    now, _ = ctx.now()
    day = now.astimezone(tz).date()
    changed = False
    for k in ("start_time", "end_time"):
        m = HHMM.match(ic.get(k) or "")
        if not m:
            continue
        local = dt.datetime(day.year, day.month, day.day, int(m.group(1)), int(m.group(2)), tzinfo=tz)
        if local.utcoffset():
            ic[k] = local.astimezone(UTC).strftime("%H:%M")
            changed = True
    if changed:
        resp.set_json(j)


defect("deployment_get_schedule_in_utc", after=_sched_utc_after)


def _days_union_before(ctx):
    j = body_dict(ctx)
    if not (ctx.on("deployment", "PATCH") and j):
        return
    days, ok = get_path(j, ("inbound_config", "allowed_days"))
    if not (ok and isinstance(days, list) and days and all(canon_day(d) for d in days)):
        return
    cur = ctx.get_json(ctx.deployment_path())
    old = ((cur or {}).get("inbound_config") or {}).get("allowed_days") or []
    union = set(canon_day(d) for d in days) | set(canon_day(d) for d in old if canon_day(d))
    merged = [w for w in WEEKDAYS if w in union]
    if len(merged) != len(set(canon_day(d) for d in days)):
        j["inbound_config"]["allowed_days"] = merged
        ctx.req.set_json(j)


defect("deployment_patch_days_union", before=_days_union_before)


def _app_version_before(ctx):
    j = body_dict(ctx)
    if ctx.on("deployment", "PATCH") and j and is_int(j.get("app_version")) and j["app_version"] >= 1:
        ctx.note["av"] = j.pop("app_version")
        ctx.req.set_json(j)


def _app_version_after(ctx, resp):
    if "av" in ctx.note and resp.ok and isinstance(resp.json, dict):
        j = resp.json
        j["app_version"] = ctx.note["av"]
        resp.set_json(j)


defect("deployment_patch_app_version_not_stored", before=_app_version_before, after=_app_version_after)


def _clears_desc_before(ctx):
    j = body_dict(ctx)
    if ctx.on("deployment", "PATCH") and j is not None and "description" not in j:
        j["description"] = None
        ctx.req.set_json(j)


defect("deployment_patch_clears_description", before=_clears_desc_before)


def _app_id_before(ctx):
    j = body_dict(ctx)
    if ctx.on("deployment", "PATCH") and j and isinstance(j.get("app_id"), str):
        cur = ctx.get_json(ctx.deployment_path())
        if cur and cur.get("app_id") != j["app_id"]:
            j.pop("app_id")
            ctx.req.set_json(j)


defect("deployment_patch_app_id_change_ignored", before=_app_id_before)


def _pause_stale_after(ctx, resp):
    j = body_dict(ctx)
    if ctx.on("deployment_status", "PUT") and j and j.get("action") == "pause" and resp.ok \
            and isinstance(resp.json, dict) and resp.json.get("status") == "paused":
        a = resp.json
        a["status"] = "active"
        resp.set_json(a)


defect("deployment_pause_answer_stale", after=_pause_stale_after)


def _delete_shape_after(ctx, resp):
    if ctx.on("deployment", "DELETE") and resp.status >= 400 and isinstance(resp.json, dict) \
            and isinstance(resp.json.get("error"), dict):
        resp.set_json({"detail": resp.json["error"].get("message")})


defect("deployment_delete_error_shape", after=_delete_shape_after)


def _delete_paused_before(ctx):
    if ctx.on("deployment", "DELETE"):
        cur = ctx.get_json(ctx.deployment_path())
        if cur and cur.get("status") == "paused":
            return err(409, "conflict_error", "deployment_paused",
                       "cannot delete a deployment that is paused; resume it first")


defect("deployment_delete_paused_refused", before=_delete_paused_before)


# ---- campaign events ------------------------------------------------------------------------

def _ev_retry(p, kind, ev):
    if kind == "campaign" and is_int(ev.get("retry_attempt")):
        ev["retry_attempt"] += 1
        return True
    return False


defect("event_retry_attempt_one_based", event=_ev_retry)


def _ev_exec_end(p, kind, ev):
    if kind == "campaign" and is_num(ev.get("duration")):
        t = parse_ts(ev.get("executed_at"))
        if t:
            ev["executed_at"] = fmt_ts(t + dt.timedelta(seconds=ev["duration"]))
            return True
    return False


defect("event_executed_at_call_end", event=_ev_exec_end)


def _ev_short(p, kind, ev):
    if kind == "campaign" and ev.get("completion_status") == "partial":
        ev["completion_status"] = "completed"
        ev["failure_reason"] = None
        return True
    return False


defect("event_short_call_completed", event=_ev_short)


def _ev_agent_user(p, kind, ev):
    if kind == "campaign" and isinstance(ev.get("user_phone_number"), str):
        ev["agent_phone_number"] = ev["user_phone_number"]
        return True
    return False


defect("event_agent_number_is_user", event=_ev_agent_user)


def _ev_meta_first(p, kind, ev):
    if kind == "campaign" and is_int(ev.get("retry_attempt")) and ev["retry_attempt"] > 0 \
            and ev.get("metadata") is not None:
        ev["metadata"] = None
        return True
    return False


defect("event_metadata_first_attempt_only", event=_ev_meta_first)


defect("event_signature_body_only",
       sign=lambda p, ts, body: hmac.new(p.secret.encode(), body, hashlib.sha256).hexdigest())

defect("webhook_failure_not_retried", receiver_status=lambda s: 200)


# ---- authentication -----------------------------------------------------------------------

def _missing_key_before(ctx):
    if ctx.key is None:
        m = WS_PATH.match(ctx.req.path)
        if m:
            ws = (urllib.parse.unquote(m.group("org")), urllib.parse.unquote(m.group("ws")))
            key = ctx.p.st.keys_by_ws.get(ws)
            if key:
                ctx.req.set_header("X-API-Key", key)


defect("auth_missing_key_reuses_last", before=_missing_key_before)


def _other_ws_before(ctx):
    if (ctx.on("campaign", "GET") or ctx.on("deployment", "GET")) and ctx.key:
        st = ctx.p.st
        ws = (ctx.params["org"], ctx.params["ws"])
        own = st.ws_by_key.get(ctx.key)
        if own is not None and own != ws and own[0] == ws[0] and ws in st.keys_by_ws:
            ctx.req.set_header("X-API-Key", st.keys_by_ws[ws])


defect("auth_other_workspace_key_reads", before=_other_ws_before)

assert set(HOOKS) == set(DEFECT_BY_NAME), set(DEFECT_BY_NAME) ^ set(HOOKS)


# --------------------------------------------------------------------------------------
# HTTP server
# --------------------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120
    proxy = None

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def log_message(self, fmt, *args):
        if self.proxy.verbose:
            sys.stderr.write("proxy: %s\n" % (fmt % args))

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline(3)
            return b"".join(chunks), True
        cl = self.headers.get("Content-Length")
        if cl is not None:
            n = int(cl.strip())
            return (self.rfile.read(n) if n > 0 else b""), True
        return b"", False

    def _serve(self):
        p = self.proxy
        try:
            body, had_length = self._read_body()
        except Exception:
            self.close_connection = True
            return
        req = Req(self.command, self.path, list(self.headers.items()), body)
        try:
            resp = p.handle(req, had_length)
        except Exception as e:  # never leave a client hanging
            if p.verbose:
                import traceback
                traceback.print_exc()
            resp = err(502, "api_error", "bad_gateway", "proxy error: %s" % e)
        self._write(resp)

    def _write(self, resp):
        try:
            self.send_response_only(resp.status, resp.reason or None)
            close = False
            for k, v in resp.headers:
                lk = k.lower()
                if lk == "connection" and "close" in v.lower():
                    close = True
                if lk in HOP and not (lk == "content-length" and self.command == "HEAD"):
                    continue
                self.send_header(k, v)
            no_body = self.command == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200
            if not no_body:
                self.send_header("Content-Length", str(len(resp.body)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if not no_body and resp.body:
                self.wfile.write(resp.body)
            self.wfile.flush()
            if self.proxy.verbose:
                sys.stderr.write("proxy: %s %s -> %s\n" % (self.command, self.path, resp.status))
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", help="the platform's base URL, e.g. http://127.0.0.1:8080")
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any free port)")
    ap.add_argument("--defect", help="the one rule to break (see --list-defects)")
    ap.add_argument("--webhook-secret", help="the platform's webhook secret, to re-sign changed events")
    ap.add_argument("--list-defects", action="store_true", help="print the defects as JSON and exit")
    ap.add_argument("--verbose", action="store_true", help="log requests to stderr")
    a = ap.parse_args(argv)
    if a.list_defects:
        out = [{k: d[k] for k in ("name", "rule", "source", "what", "kind")} for d in DEFECTS]
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
        return 0
    if a.defect and a.defect not in DEFECT_BY_NAME:
        sys.stderr.write("unknown defect %r (see --list-defects)\n" % a.defect)
        return 2
    if not a.upstream:
        sys.stderr.write("--upstream is required\n")
        return 2
    host, _, port = a.listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port)
    except ValueError:
        sys.stderr.write("--listen must be HOST:PORT\n")
        return 2
    secret = a.webhook_secret
    meta = DEFECT_BY_NAME.get(a.defect) if a.defect else None
    if secret is None:
        secret = "whsec_test"
        if meta and meta.get("webhook"):
            sys.stderr.write("proxy: no --webhook-secret given; re-signing with 'whsec_test'\n")
    proxy = Proxy(a.upstream, a.defect, secret, a.verbose)
    Handler.proxy = proxy
    if ":" in host:
        Server.address_family = socket.AF_INET6
    srv = Server((host, port), Handler)
    real_port = srv.server_address[1]
    adv = host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    if ":" in adv:
        adv = "[%s]" % adv
    proxy.recv_prefix = "http://%s:%d/__r7/wh/" % (adv, real_port)
    sys.stdout.write(json.dumps({"port": real_port}) + "\n")
    sys.stdout.flush()
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
