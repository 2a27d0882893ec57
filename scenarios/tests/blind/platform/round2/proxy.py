#!/usr/bin/env python3
"""A reverse proxy in front of the voice-agent platform mock that can break one
contract rule on demand.

    python3 proxy.py --upstream http://127.0.0.1:PORT --listen 127.0.0.1:0 \
        [--defect NAME] [--webhook-secret S] [--rewrite-webhooks]

Prints one line {"port": N} on stdout once listening.  Without --defect it is
transparent: every request (method, path, query, headers, body) goes to the
upstream as sent, and the answer comes back as answered.

Webhooks: when the defect is about events (or with --rewrite-webhooks), the
webhook URLs a client gives (webhook_config.url of instant outbound calls and
app_config.webhook_config.url of campaigns) are replaced in the forwarded
requests by http://<proxy>/__hooks/<base64url of the original URL>; every
answer that echoes such a URL (campaign GET, events, /sim/v1 delivery lists)
gets the original back.  The proxy receives each event, alters it when the
defect says so, and posts it on to the original URL, re-signed with
--webhook-secret as the platform signs (x-webhook-timestamp: the timestamp the
platform sent; x-webhook-signature: hex HMAC-SHA256 of "{timestamp}.{body}"),
unless the defect is about signing.  The receiver's status goes back to the
platform, so its retries work as before.

Standard library only (Python 3.11).
"""

import argparse
import base64
import copy
import csv
import datetime as dt
import hashlib
import hmac
import http.client
import io
import json
import re
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --------------------------------------------------------------------------- the defects
#
# Each entry: name, rule (quoted or paraphrased), source (spec section or a row of
# docs/interface.md with its ref/assumed mark), what the proxy does, and kind
# ("error" when the rule is in the spec or a ref row, "assumed" when only the
# project assumed it).  defects.json is this table written out
# (python3 proxy.py --list-defects > defects.json).


def d(name, area, rule, source, what, kind, hooks=False):
    return {"name": name, "area": area, "rule": rule, "source": source,
            "what": what, "kind": kind, "hooks": hooks}


DEFECTS = [
    # ---------------------------------------------------------------- instant outbound
    d("outbound_validation_error_shape", "instant outbound: POST .../outbounds",
      "Instant outbound validation errors have the body {detail:[{loc:[...],msg,type}]}",
      "spec: Errors (Instant outbound validation)",
      "A 422 of the outbound route is answered as 400 {error:{message,type,code}} (the generic error shape) instead of the validation shape.",
      "error"),
    d("validation_loc_without_body", "validation errors: every route",
      "Validation body: 422 {detail:[{loc,msg,type}]}, loc starts at body, query or path (loc is the path to the offending field)",
      "interface.md: Validation and errors / Validation body (ref); spec: Errors",
      "Every 422 answer has the leading 'body'/'query'/'path' element cut from each loc (['user_config','user_phone_number'] instead of ['body','user_config','user_phone_number']).",
      "error"),
    d("outbound_attempt_id_not_the_attempt", "instant outbound: POST .../outbounds",
      "One request starts one call; the response carries the attempt identifier of that call (the one its notification names)",
      "spec: What the service does (1); spec: Resources: Outbound call request (Response: attempt_id)",
      "The answer's attempt_id is a fresh request UUID, not the id of the attempt that is dialled and reported in the webhook event.",
      "error"),
    d("outbound_event_metadata_dropped", "instant outbound: webhook event",
      "webhook_config.metadata is free-form and attached to the webhook",
      "spec: Resources: Outbound call request (webhook_config.metadata); spec: Events",
      "The instant outbound event is forwarded with webhook_config.metadata removed (re-signed).",
      "error", hooks=True),
    d("outbound_event_not_sent", "instant outbound: webhook event",
      "webhook_config.url is the address for call notifications: a finished instant outbound call is notified there",
      "spec: Resources: Outbound call request (webhook_config.url); interface.md: Events / Event kinds and payloads (ref)",
      "Instant outbound events are swallowed by the proxy (the platform is told 200); campaign events still arrive.",
      "error", hooks=True),

    # ---------------------------------------------------------------- campaign create / limits
    d("campaign_created_active", "campaigns: POST /campaigns",
      "A campaign is created in status scheduled (POST /campaigns answers a summary with status: scheduled)",
      "spec: States: Campaign ((none) -> scheduled); spec: Endpoints: Campaigns",
      "The create answer says status 'active' for a campaign whose start is in the future (GET still says scheduled).",
      "error"),
    d("campaign_start_min_exclusive", "campaigns: POST /campaigns (limits)",
      "start_timestamp at least 120 seconds from now (120 s is allowed)",
      "spec: Limits (Campaign start_timestamp)",
      "Refuses with 422 at body.start_timestamp any start less than 121 s ahead of the platform's clock, so a start 120 s (+ a few ms) ahead is refused.",
      "error"),
    d("campaign_start_max_8_days", "campaigns: POST /campaigns (limits)",
      "start_timestamp at most 7 days from now",
      "spec: Limits (Campaign start_timestamp)",
      "A start between 7 and 8 days ahead is accepted: the proxy forwards it (and the end) moved back to 7 days and restores the client's values in every answer.",
      "error"),
    d("campaign_end_min_60s", "campaigns: POST /campaigns (limits)",
      "end_timestamp at least 120 seconds after start_timestamp",
      "spec: Limits (Campaign end_timestamp)",
      "An end 60 to 120 s after the start is accepted: forwarded as start + 120 s, the client's value restored in answers.",
      "error"),
    d("campaign_end_max_31_days", "campaigns: POST /campaigns (limits)",
      "end_timestamp at most 30 days after start_timestamp",
      "spec: Limits (Campaign end_timestamp)",
      "An end 30 to 31 days after the start is accepted: forwarded as start + 30 days, the client's value restored in answers.",
      "error"),
    d("attempts_per_second_min_exclusive", "campaigns: POST /campaigns (limits)",
      "attempts_per_second 0.1 to 500 (0.1 is allowed)",
      "spec: Limits (attempts_per_second); spec: Resources: Campaign",
      "Refuses attempts_per_second <= 0.1 with 422 at body.app_config.attempts_per_second (greater_than), so the documented minimum 0.1 is refused.",
      "error"),
    d("threshold_seconds_max_3600", "campaigns: POST /campaigns (limits)",
      "retry_config.threshold_seconds 1 to 1200",
      "spec: Limits (retry_config.threshold_seconds)",
      "A threshold of 1201 to 3600 is accepted: forwarded as 1200, the client's value restored in answers.",
      "error"),
    d("campaign_description_max_100", "campaigns: POST /campaigns (limits)",
      "Campaign description max 150 characters",
      "spec: Limits (Campaign description); spec: Resources: Campaign",
      "Descriptions of 101 to 150 characters are refused with 422 string_too_long at body.description.",
      "error"),
    d("campaign_name_pattern_lax", "campaigns: POST /campaigns (limits)",
      "Campaign name: pattern ^[\\w\\- ]{1,50}$",
      "interface.md: Fields the spec marks \"not shown\" / Campaign name (ref)",
      "A name with characters outside the pattern ('.', '/', '!', ...) is accepted: forwarded with them replaced by '-', the client's name restored in answers.",
      "error"),
    d("campaign_app_version_string", "campaigns: summaries (create, list, GET)",
      "The campaign summary carries the agent version as an integer",
      "spec: Resources: Campaign (summary: agent version (integer)); spec: Versioning",
      "app_version of every campaign answer is a string (\"1\") instead of an integer.",
      "error"),

    # ---------------------------------------------------------------- campaign reads
    d("campaign_timestamps_minute_precision", "campaigns: GET /campaigns/{id}",
      "Campaign GET answers the campaign with the start_timestamp and end_timestamp it was given",
      "interface.md: The spec's numbered open points / 7 (campaign GET: summary plus app_config, start_timestamp, end_timestamp, allowed_schedule) (ref); spec: Resources: Campaign",
      "Campaign answers show start_timestamp and end_timestamp cut to the minute (seconds dropped), so they differ from what the client sent and from when the campaign really activates.",
      "error"),
    d("list_leaks_other_workspace", "campaigns and deployments: GET lists",
      "A key opens one workspace: each workspace's lists show its own resources, never another's",
      "spec: Authentication (1); interface.md: Fields the spec marks \"not shown\" / Scopes, roles, issuing of X-API-Key (assumed: keys per workspace); interface.md: The platform check / Lists of two workspaces (spec)",
      "Campaign and deployment lists also include the matching items of every other workspace whose key the proxy has seen (with total raised).",
      "error"),
    d("campaign_list_status_filter_ignored", "campaigns: GET /campaigns",
      "Campaign list takes campaign_status as a filter",
      "interface.md: Fields the spec marks \"not shown\" / Campaign list (ref: params)",
      "The campaign_status query parameter is dropped before it reaches the platform: every status is listed.",
      "error"),

    # ---------------------------------------------------------------- campaign time behaviour
    d("campaign_activates_late", "campaigns: life cycle in time",
      "A campaign activates by itself when start_timestamp is reached (scheduled -> active at start_timestamp, dialling begins)",
      "spec: What the service does (2); spec: States: Campaign (scheduled -> active)",
      "start_timestamp is forwarded 90 s later than sent (the client's value restored in answers): the campaign stays scheduled and dials nothing for 90 s after its start.",
      "error"),
    d("campaign_ends_late", "campaigns: life cycle in time",
      "active -> ended when the time window expires (at end_timestamp); no dial after it",
      "spec: States: Campaign (active -> ended); interface.md: Campaign life cycle in time / Activation and end (spec)",
      "end_timestamp is forwarded 5 minutes later than sent (restored in answers): the campaign is still active and dialling after its end.",
      "error"),
    d("campaign_ends_early", "campaigns: life cycle in time",
      "active -> ended when the time window expires (at end_timestamp), not before",
      "spec: States: Campaign (active -> ended); spec: Rules (3)",
      "end_timestamp is forwarded 60 s earlier than sent (restored in answers): the campaign is ended, and stops dialling, a minute before its end.",
      "error"),
    d("calling_window_closes_late", "campaigns: calling window",
      "Calls are placed only inside the business-hours window allowed_schedule",
      "spec: What the service does (2); interface.md: Dialling / Calling window (spec)",
      "allowed_schedule.allowed_end_time is forwarded one hour later (restored in answers): dials go on for an hour after the window closes. (The one calling-window defect of this set.)",
      "error"),

    # ---------------------------------------------------------------- campaign status / PATCH
    d("campaign_status_answer_stale", "campaigns: PUT /campaigns/{id}/status",
      "PUT status answers the updated status (status updates answer the resource)",
      "spec: Endpoints: Campaigns (PUT status -> updated status); interface.md: The spec's numbered open points / 7 (ref)",
      "The answer to a status change carries the status from before the change (the change itself is applied).",
      "error"),
    d("campaign_pause_scheduled_refused", "campaigns: PUT /campaigns/{id}/status",
      "any -> paused with the pause action (pause allowed from scheduled and active)",
      "spec: States: Campaign (any -> paused); interface.md: Fields the spec marks \"not shown\" / Source states of pause, resume, cancel (assumed)",
      "Pausing a scheduled campaign is refused 409 invalid_status_transition.",
      "error"),
    d("campaign_cancel_is_pause", "campaigns: PUT /campaigns/{id}/status",
      "any -> cancelled with the cancel action; the campaign stops (cancelled is final)",
      "spec: States: Campaign (any -> cancelled)",
      "{\"action\": \"cancel\"} is forwarded as pause: the campaign ends up paused (and can be resumed), never cancelled.",
      "error"),
    d("campaign_resume_literal_refused", "campaigns: PUT /campaigns/{id}/status",
      "The literal body for resuming is {\"action\": \"resume\"}",
      "interface.md: The spec's numbered open points / 9 (ref) and 3 (ref)",
      "{\"action\": \"resume\"} on a campaign is refused with 422 (enum: pause, cancel, activate).",
      "error"),
    d("campaign_pause_keeps_dialing", "campaigns: PUT /campaigns/{id}/status (pause)",
      "Pause: dialling stops at once",
      "interface.md: Campaign life cycle in time / Pause (assumed); spec: States: Campaign (any -> paused)",
      "A pause is answered (and shown in every later answer) as paused but never forwarded: the campaign keeps dialling.",
      "assumed"),
    d("campaign_patch_while_active", "campaigns: PATCH /campaigns/{id}",
      "Campaign PATCH allowed while scheduled or paused (refused while active)",
      "interface.md: Fields the spec marks \"not shown\" / Campaign PATCH (ref: states)",
      "A PATCH of an active campaign is applied: the proxy pauses it, forwards the PATCH and resumes it, answering 200.",
      "error"),
    d("campaign_patch_start_ignored", "campaigns: PATCH /campaigns/{id}",
      "start_timestamp cannot change in a PATCH (only the current value is accepted)",
      "interface.md: Fields the spec marks \"not shown\" / Campaign PATCH (ref: start)",
      "A PATCH with another start_timestamp is answered 200: the proxy drops the field before forwarding (nothing refused).",
      "error"),
    d("campaign_patch_resets_retry_config", "campaigns: PATCH /campaigns/{id}",
      "Omitted retry_config fields keep their values in a PATCH",
      "interface.md: Fields the spec marks \"not shown\" / Campaign PATCH (assumed)",
      "A PATCH with a partial retry_config has its omitted fields filled with defaults (max_retries 0, retry_on [], threshold_seconds 10, retry_interval_minutes 30).",
      "assumed"),

    # ---------------------------------------------------------------- dialling rules
    d("rule1_max_retries_plus_one", "campaigns: dialling (rule 1)",
      "max_retries: N allows up to N+1 attempts per user",
      "spec: Rules (1)",
      "max_retries is forwarded as N+1 (restored in answers): a user whose calls keep failing is dialled N+2 times.",
      "error"),
    d("rule1_first_dial_not_counted", "campaigns: dialling (rule 1)",
      "Each dial counts as one attempt: the first dial is one attempt and each retry one more (N+1 attempts)",
      "spec: Rules (1)",
      "max_retries N >= 1 is forwarded as N-1 (restored in answers): the first dial is counted as a retry, a user gets only N dials.",
      "error"),
    d("rule2_dial_rate_halved", "campaigns: dialling (rule 2)",
      "attempts_per_second is a dial rate",
      "spec: Rules (2); interface.md: Dialling / Pacing (spec)",
      "attempts_per_second is forwarded halved (at least 0.1; restored in answers): dials come at half the rate.",
      "error"),
    d("rule4_weights_ignored", "campaigns: dialling (rule 4)",
      "With several connection_configs, dials are split proportionally by weight (3 and 1: 75 % and 25 %)",
      "spec: Rules (4)",
      "Every weight is forwarded as 1 (restored in answers): dials are split evenly between connections.",
      "error"),
    d("rule4_first_number_only", "campaigns: dialling (rule 4)",
      "Phone numbers inside one connection are used equally",
      "spec: Rules (4)",
      "Each connection is forwarded with its first number only (restored in answers): the other numbers never dial.",
      "error"),
    d("rule5_short_not_retried", "campaigns: dialling (rule 5)",
      "A connected call shorter than threshold_seconds is short-duration and queued for a retry when short_duration is in retry_on",
      "spec: Rules (5)",
      "short_duration is removed from retry_on before forwarding (restored in answers): short calls are never retried.",
      "error"),
    d("rule5_threshold_ignored", "campaigns: dialling (rule 5)",
      "A call that connects but lasts less than threshold_seconds is short-duration",
      "spec: Rules (5)",
      "threshold_seconds is forwarded as 1 (restored in answers): a 5 s call under a 10 s threshold counts as completed.",
      "error"),
    d("retry_on_ignored", "campaigns: dialling (retry_on)",
      "retry_config.retry_on lists the outcomes to retry; other outcomes are not retried",
      "spec: Resources: Campaign (retry_config.retry_on); interface.md: Outcomes and retries / Retry decision (ref)",
      "retry_on is forwarded as every outcome (restored in answers): outcomes the client did not list are retried.",
      "error"),
    d("retry_interval_too_soon", "campaigns: dialling (retry interval)",
      "retry_interval_minutes: least gap between an attempt and the next dial of the user",
      "interface.md: Fields the spec marks \"not shown\" / retry_interval_minutes (ref: field)",
      "retry_interval_minutes is forwarded halved (default 30 -> 15; restored in answers): retries come too soon.",
      "error"),
    d("retry_interval_too_late", "campaigns: dialling (retry interval)",
      "A retry is due retry_interval_minutes after the previous attempt (then waits only for window, pace and turn)",
      "interface.md: Fields the spec marks \"not shown\" / retry_interval_minutes (ref: field); interface.md: Outcomes and retries / Retry decision (ref)",
      "retry_interval_minutes is forwarded 5 minutes longer (restored in answers): every retry comes 5 minutes late.",
      "error"),
    d("stop_file_ignored", "cohorts: stop files",
      "A stop_file cohort excludes its numbers from the campaign",
      "interface.md: Stop files / What they exclude (ref); interface.md: Fields the spec marks \"not shown\" / Cohort record fields (ref: cohort_category)",
      "cohort_category stop_file is forwarded as cohort (restored as stop_file in answers): its numbers are dialled instead of excluded.",
      "error"),

    # ---------------------------------------------------------------- cohorts
    d("cohort_upload_answers_completed", "cohorts: POST .../cohorts/upload",
      "Upload -> processing, with cohort_id returned (clients poll until completed or failed)",
      "spec: States: Cohort ((none) -> processing); spec: Endpoints: Campaigns (upload -> cohort_id, status: processing)",
      "The upload is answered only once processing has finished, with status completed (or failed) and the result.",
      "error"),
    d("cohort_counts_dont_add_up", "cohorts: GET .../cohorts/{cohort_id}",
      "Cohort result: total_records, valid_records, rejected_records (rows read, accepted, rejected)",
      "interface.md: Fields the spec marks \"not shown\" / Cohort record fields (ref); spec: Resources: Cohort",
      "When rows were rejected, valid_records is answered equal to total_records (rejected rows counted as valid too), so the counts no longer add up.",
      "error"),
    d("cohort_rejected_file_no_reason", "cohorts: GET .../files?file_type=rejected_records",
      "Rejected-records file: the original columns plus rejected_reason",
      "interface.md: The spec's numbered open points / 7 (rejected file: original columns plus rejected_reason) (ref)",
      "The rejected_reason column is cut from the rejected-records file.",
      "error"),
    d("cohort_rejected_file_all_rows", "cohorts: GET .../files?file_type=rejected_records",
      "When rejected_records is above 0, the rejected records are downloadable as a file",
      "spec: Resources: Cohort; interface.md: Cohorts / Rejected records file (ref: columns)",
      "The rejected-records file lists every row of the upload (valid rows with an empty rejected_reason), so its rows disagree with rejected_records.",
      "error"),
    d("cohort_transformation_file_reformatted", "cohorts: GET .../files?file_type=cohort_transformation",
      "Files: cohort_transformation is the JSON byte for byte as uploaded",
      "interface.md: Cohorts / Files (assumed: byte for byte)",
      "The transformation file is answered re-serialised (sorted keys, indented), not as uploaded.",
      "assumed"),
    d("cohort_missing_column_completes", "cohorts: GET .../cohorts/{cohort_id}",
      "A named column missing from the header fails the whole upload: status failed with failure_reason",
      "interface.md: Fields the spec marks \"not shown\" / Whole-upload failures (ref); spec: States: Cohort (processing -> failed)",
      "A failed cohort is answered completed, failure_reason null, with every row counted rejected.",
      "error"),
    d("cohort_upload_paused_refused", "cohorts: POST .../campaigns/{id}/cohorts/upload",
      "Cohorts can be uploaded before the start, while active, or after a pause",
      "spec: What the service does (2); interface.md: Cohorts / Campaign states that take cohorts (assumed: scheduled, active, paused)",
      "An upload (or stream) to a paused campaign is refused 409 campaign_closed.",
      "error"),
    d("cohort_active_upload_not_dialled", "cohorts: POST .../campaigns/{id}/cohorts/upload",
      "A cohort uploaded while the campaign is active is processed and queued for calling",
      "spec: What the service does (2); interface.md: Campaign life cycle in time / Cohorts of a running campaign (assumed: at once)",
      "A cohort uploaded to an active campaign is forwarded as a stop_file (shown as cohort in answers): its users are never dialled.",
      "error"),
    d("cohort_list_newest_first", "cohorts: GET .../cohorts",
      "Cohort list in upload order, oldest first",
      "interface.md: Fields the spec marks \"not shown\" / Cohort list (assumed)",
      "The cohort list is answered newest first.",
      "assumed"),

    # ---------------------------------------------------------------- deployments
    d("deployment_create_status_missing", "deployments: POST /deployments",
      "POST /deployments answers the deployment with status: active",
      "spec: Endpoints: Deployments; spec: States: Deployment ((none) -> active)",
      "The create answer has no status field (it is optional in the schema, but the endpoint promises status active).",
      "error"),
    d("deployment_channel_direction_uppercase", "deployments: every answer",
      "channel_direction is one of inbound, outbound, inbound_outbound (exact enumerated values)",
      "spec: Resources: Deployment (channel_direction enum); spec: introduction (enumerated values are exact)",
      "channel_direction is answered in upper case (INBOUND).",
      "error"),
    d("deployment_name_max_64", "deployments: POST /deployments (limits)",
      "Deployment name max 50 characters, pattern ^[\\w\\- ]{1,50}$",
      "spec: Limits (Deployment name); spec: Resources: Deployment",
      "Names of 51 to 64 characters are accepted: forwarded cut to 50, the client's name restored in answers.",
      "error"),
    d("deployment_description_max_149", "deployments: POST/PATCH /deployments (limits)",
      "Deployment description max 150 characters",
      "spec: Limits (Deployment description)",
      "A description of exactly 150 characters (or more) is refused 422 string_too_long 'at most 149'.",
      "error"),
    d("deployment_connection_configs_empty_accepted", "deployments: POST /deployments (limits)",
      "Deployment connection_configs: at least 1 entry",
      "spec: Limits (Deployment connection_configs); spec: Resources: Deployment",
      "connection_configs [] is accepted: forwarded with a placeholder connection, answered with [] (and phone_numbers []).",
      "error"),
    d("deployment_timestamps_local_as_utc", "deployments: every answer",
      "created_at / updated_at are the creation and last-update instants (ISO 8601; output timestamps are UTC with Z)",
      "spec: Resources: Deployment (created_at, updated_at); interface.md: Time, calling windows, numbers / Timestamps on output (assumed: UTC)",
      "created_at and updated_at of deployments are the platform's UTC time plus one hour, still labelled Z (a local time sent as UTC).",
      "error"),
    d("deployment_patch_clears_description", "deployments: PATCH /deployments/{id}",
      "PATCH is a partial update: fields it does not name keep their values",
      "spec: Endpoints: Deployments (PATCH partial update); interface.md: The spec's numbered open points / 4 (ref)",
      "A PATCH that does not name description is forwarded with description: null, clearing it.",
      "error"),
    d("deployment_patch_app_version_not_applied", "deployments: PATCH /deployments/{id}",
      "PATCH accepts app_version and changes the agent version (answers the updated deployment)",
      "spec: Endpoints: Deployments (PATCH: app_version accepted, agent version can be changed)",
      "app_version is dropped before forwarding, but the PATCH answer echoes the requested version; GET shows the old one.",
      "error"),
    d("deployment_patch_app_id_ignored", "deployments: PATCH /deployments/{id}",
      "app_id is refused in a deployment PATCH unless unchanged",
      "interface.md: The spec's numbered open points / 4 (ref)",
      "A PATCH with another app_id is answered 200: the proxy drops app_id before forwarding.",
      "error"),
    d("deployment_patch_schedule_not_applied", "deployments: PATCH /deployments/{id}",
      "PATCH can change the schedule (inbound_config)",
      "spec: Endpoints: Deployments (PATCH: the schedule can be changed)",
      "inbound_config is dropped before forwarding but echoed in the PATCH answer; GET and inbound calls keep the old schedule.",
      "error"),
    d("deployment_status_answer_stale", "deployments: PUT /deployments/{id}/status",
      "PUT status answers the updated deployment",
      "spec: Endpoints: Deployments (PUT status -> updated deployment)",
      "The answer of a pause or resume carries the status from before the change (the change is applied).",
      "error"),
    d("deployment_pause_twice_200", "deployments: PUT /deployments/{id}/status",
      "Pausing a paused deployment is a 409",
      "interface.md: The platform check / 409 for an action a state does not allow (assumed)",
      "A 409 of the deployment status route is replaced by 200 with the unchanged deployment.",
      "assumed"),
    d("deployment_delete_soft", "deployments: DELETE /deployments/{id}",
      "Deleting a deployment is permanent and irreversible; pausing is the reversible alternative (active or paused -> removed)",
      "spec: Rules (6); spec: States: Deployment (DELETE -> removed)",
      "DELETE is answered 204 but the deployment is only paused: GET and the list still show it, and it can be resumed.",
      "error"),
    d("deployment_delete_deferred", "deployments: DELETE /deployments/{id}",
      "Deleting a deployment stops all inbound handling for its phone numbers at once",
      "spec: Rules (6)",
      "DELETE is answered 204 and the deployment is hidden from GET and lists, but it is not deleted: calls to its numbers are still answered.",
      "error"),
    d("deployment_delete_error_detail_shape", "deployments: DELETE /deployments/{id}",
      "A failed deployment delete answers {error:{message,type,code}}",
      "spec: Endpoints: Deployments (DELETE: on failure {error:{message,type,code}}); spec: Errors",
      "Failed deletes answer {\"detail\": \"<message>\"} instead.",
      "error"),
    d("deployment_list_error_code_int", "deployments: GET /deployments",
      "Deployment list errors: {error:{message,type,code}}, all three strings",
      "spec: Errors (Deployment list and delete)",
      "Error answers of the deployment list carry code as the HTTP status integer (401) instead of a string.",
      "error"),

    # ---------------------------------------------------------------- pagination (deployment list)
    d("list_total_is_page_size", "pagination: GET /deployments",
      "total: matches for the query (not the page size)",
      "spec: Resources: Paginated deployment list (total)",
      "total is answered as the number of items on this page.",
      "error"),
    d("list_next_uri_on_last_page", "pagination: GET /deployments",
      "next_page_uri is null on the last page",
      "spec: Resources: Paginated deployment list (next_page_uri)",
      "On the last page next_page_uri points past the end instead of null.",
      "error"),
    d("list_prev_uri_on_first_page", "pagination: GET /deployments",
      "prev_page_uri is null on the first page",
      "spec: Resources: Paginated deployment list (prev_page_uri)",
      "On the first page prev_page_uri is the first page's own URI instead of null.",
      "error"),
    d("list_page_uri_drops_query", "pagination: GET /deployments",
      "Page URIs keep the request's other query parameters (search, sort)",
      "interface.md: Fields the spec marks \"not shown\" / Cohort list, and README Pagination (assumed)",
      "next_page_uri and prev_page_uri keep only offset and limit: following them loses search and sort.",
      "assumed"),
    d("list_sort_order_ignored", "pagination: GET /deployments",
      "Sort order asc or desc",
      "spec: Endpoints: Deployments (list query: sort order asc or desc); interface.md: The spec's numbered open points / 2 (ref)",
      "sort_order is dropped before forwarding: asc gives the same (default desc) order as desc.",
      "error"),
    d("list_limit_over_100_clamped", "pagination: GET /deployments (limits)",
      "Deployment list limit: 1 to 100",
      "spec: Limits (Deployment list limit); spec: Endpoints: Deployments (limit 1 to 100)",
      "limit above 100 is silently clamped to 100 (200) instead of refused with 422.",
      "error"),
    d("list_offset_negative_as_zero", "pagination: GET /deployments (limits)",
      "Deployment list offset: at least 0",
      "spec: Limits (Deployment list offset)",
      "A negative offset is taken as 0 (200) instead of refused with 422.",
      "error"),
    d("list_offset_off_by_one", "pagination: GET /deployments",
      "offset: items skipped",
      "spec: Resources: Paginated deployment list (offset); spec: Endpoints: Deployments (offset: skip count)",
      "offset N > 0 skips N+1 items (the answer still says offset N): walking the pages loses one item per page.",
      "error"),
    d("list_phone_numbers_not_e164", "deployments: GET /deployments (list items)",
      "List items additionally show phone_numbers (array of E.164-style telephone numbers)",
      "spec: Resources: Deployment (list items: phone_numbers)",
      "phone_numbers of list items lose their leading '+'.",
      "error"),
    d("list_total_ignores_search", "pagination: GET /deployments",
      "total: matches for the query (search included)",
      "spec: Resources: Paginated deployment list (total: matches for the query)",
      "With search, total is the count of every deployment of the workspace, not of those matching.",
      "error"),

    # ---------------------------------------------------------------- inbound
    d("inbound_paused_still_answered", "deployments: inbound calls while paused",
      "If the deployment is paused the call is not answered (active -> paused: calls are not answered)",
      "spec: What the service does (3); spec: States: Deployment (active -> paused)",
      "A pause is answered and shown as paused but never forwarded: inbound calls are still answered.",
      "error"),
    d("inbound_schedule_ignored", "deployments: inbound calls outside the schedule",
      "If the call is outside the deployment's schedule it is not answered",
      "spec: What the service does (3)",
      "inbound_config is forwarded as null (restored in answers): the deployment answers at all times.",
      "error"),
    d("inbound_cohort_variables_dropped", "deployments: inbound personalisation",
      "If the caller's number matches a user in an uploaded cohort, the agent receives that user's personalised variables",
      "spec: What the service does (3); interface.md: Inbound calls / Personalisation (ref)",
      "Deployment cohorts are forwarded without app_variables (stream users, upload transformation): known callers reach the agent without their variables.",
      "error"),

    # ---------------------------------------------------------------- auth
    d("auth_missing_key_500", "auth: every route",
      "Platform endpoints: header X-API-Key is required (a request without it is refused)",
      "spec: Authentication (1)",
      "A request without X-API-Key is answered 500 internal_error instead of a 4xx refusal.",
      "error"),
    d("auth_wrong_key_reads_allowed", "auth: every GET",
      "Platform endpoints: header X-API-Key is required; a key opens its workspace only",
      "spec: Authentication (1)",
      "A GET with a key the platform does not know is served with the workspace's key the proxy has seen (reads are not checked).",
      "error"),
    d("auth_cross_workspace_id_lookup", "auth: GET /campaigns/{id}, GET /deployments/{id}",
      "A key opens one workspace: the other workspace's key on its own paths cannot reach this workspace's ids",
      "spec: Authentication (1); interface.md: Fields the spec marks \"not shown\" / Scopes, roles, issuing of X-API-Key (assumed: per workspace)",
      "A GET of a campaign or deployment id that is not in the path's workspace is answered from the workspace that has it (lookup by id only).",
      "error"),
    d("auth_refusals_403_text", "auth: every route",
      "401 with the error shape {error:{message,type,code}} for a missing or wrong key",
      "interface.md: The platform check / 401 with the error shape for a missing or wrong key (assumed)",
      "401 answers become 403 with a text/plain body 'Forbidden'.",
      "assumed"),

    # ---------------------------------------------------------------- webhook events
    d("event_retry_attempt_one_based", "webhooks: campaign events",
      "retry_attempt: 0 for the first dial, then 1, 2, ...",
      "interface.md: Outcomes and retries / retry_attempt (ref)",
      "retry_attempt of campaign events is one higher (1 for the first dial).",
      "error", hooks=True),
    d("event_next_action_status_null", "webhooks: campaign events",
      "next_action_status tells what happens next (retry, short_duration_retry, ...); null only when the user is finished",
      "interface.md: Outcomes and retries / next_action_status (ref: values)",
      "next_action_status is always null, also for attempts that are retried.",
      "error", hooks=True),
    d("event_short_call_completed", "webhooks: campaign events",
      "completion_status: partial for a short call",
      "interface.md: Outcomes and retries / completion_status (assumed mapping, ref values)",
      "A short call's event says completion_status completed instead of partial.",
      "assumed", hooks=True),
    d("event_duration_milliseconds", "webhooks: campaign and outbound events",
      "duration: seconds (talk time), null unless connected",
      "interface.md: Events / duration (assumed)",
      "duration is sent in milliseconds (90000 for a 90 s call).",
      "assumed", hooks=True),
    d("event_executed_at_ist_as_utc", "webhooks: campaign events",
      "executed_at is when the dial was placed (an instant; output timestamps are UTC with Z)",
      "interface.md: Events / Event kinds and payloads (ref); interface.md: The platform check / Observing dials (ref: executed_at); interface.md: Time, calling windows, numbers / Timestamps on output (assumed: UTC)",
      "executed_at is the dial time in UTC+05:30 wall-clock, still labelled Z.",
      "error", hooks=True),
    d("event_only_final_attempts", "webhooks: campaign events",
      "Campaign events: sent once per campaign attempt",
      "interface.md: Events / Event kinds and payloads (ref); interface.md: The platform check / Observing dials (ref)",
      "Events of attempts that are followed by a retry (next_action_status not null) are swallowed: only each user's last attempt is notified.",
      "error", hooks=True),
    d("webhook_signature_body_only", "webhooks: signing",
      "Signing: HMAC-SHA256 of {timestamp}.{raw body}",
      "interface.md: Events / Signing (ref)",
      "Events are re-signed with HMAC-SHA256 over the body alone (no timestamp).",
      "error", hooks=True),
    d("webhook_signature_not_over_sent_bytes", "webhooks: signing",
      "Signing: HMAC-SHA256 over {timestamp}.{raw body}, the exact bytes sent",
      "interface.md: Events / Signing (ref); interface.md: Webhook delivery / Signature (ref)",
      "Events are sent re-serialised (indented JSON) while the signature stays the one over the compact body.",
      "error", hooks=True),
]

DEFECT_BY_NAME = {x["name"]: x for x in DEFECTS}
assert len(DEFECT_BY_NAME) == len(DEFECTS)

# --------------------------------------------------------------------------- helpers

UTC = dt.timezone.utc
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
       "trailer", "upgrade", "proxy-authenticate", "proxy-authorization", "expect"}
RETRY_OUTCOMES = ["busy", "no_answer", "failed", "short_duration", "provider_error",
                  "internal_error"]
NAME_RE = re.compile(r"^[\w\- ]{1,50}$")

P_ORG = r"/orgs/(?P<org>[^/]+)/workspaces/(?P<ws>[^/]+)"
SCHED = r"^/api/scheduling/v1" + P_ORG
AUTH = r"^/api/app-authoring/v1" + P_ORG
ROUTES = [
    ("outbound", r"^/api/outbounds/v1" + P_ORG + r"/outbounds$"),
    ("campaigns", SCHED + r"/campaigns$"),
    ("campaign_status", SCHED + r"/campaigns/(?P<cid>[^/]+)/status$"),
    ("cohort_upload", SCHED + r"/(?P<ptype>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/upload$"),
    ("cohort_stream", SCHED + r"/(?P<ptype>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/stream$"),
    ("cohorts", SCHED + r"/(?P<ptype>campaigns|deployments)/(?P<pid>[^/]+)/cohorts$"),
    ("cohort_files", SCHED + r"/(?P<ptype>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/(?P<coh>[^/]+)/files$"),
    ("cohort", SCHED + r"/(?P<ptype>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/(?P<coh>[^/]+)$"),
    ("campaign", SCHED + r"/campaigns/(?P<cid>[^/]+)$"),
    ("deployments", AUTH + r"/deployments$"),
    ("deployment_status", AUTH + r"/deployments/(?P<did>[^/]+)/status$"),
    ("deployment", AUTH + r"/deployments/(?P<did>[^/]+)$"),
    ("sim_clock", r"^/sim/v1/clock(/advance)?$"),
    ("sim_ws", r"^/sim/v1" + P_ORG + r"/.*$"),
]
ROUTES = [(n, re.compile(p)) for n, p in ROUTES]


def parse_ts(s):
    if not isinstance(s, str):
        return None
    try:
        t = dt.datetime.fromisoformat(s.strip())
    except ValueError:
        return None
    if t.tzinfo is None:
        return None
    return t


def fmt_ts(t):
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def norm_ts(s):
    t = parse_ts(s)
    return fmt_ts(t) if t else s


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def b64e(s):
    return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)).decode()


def sign(secret, timestamp, body):
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def get_path(obj, path):
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        else:
            return None
    return obj


def set_path(obj, path, value):
    """Set obj[path] when the key is there (answers of another shape are left alone)."""
    for p in path[:-1]:
        if not isinstance(obj, dict) or not isinstance(obj.get(p), dict):
            return False
        obj = obj[p]
    if not isinstance(obj, dict) or path[-1] not in obj:
        return False
    obj[path[-1]] = value
    return True


def canon_retry_on(v):
    """The list form the platform answers for a retry_on given as list or object."""
    if isinstance(v, dict):
        names = [k for k, x in v.items() if isinstance(x, dict) and x.get("enabled")]
    elif isinstance(v, list):
        names = [x for x in v if isinstance(x, str)]
    else:
        return v
    return [o for o in RETRY_OUTCOMES if o in names]


def hhmm_add(s, minutes):
    m = re.match(r"^(\d\d):(\d\d)$", s or "")
    if not m:
        return None
    total = int(m.group(1)) * 60 + int(m.group(2)) + minutes
    if total >= 24 * 60 or total < 0:
        return None
    return "%02d:%02d" % (total // 60, total % 60)


class Resp:
    def __init__(self, status, headers, body, reason=None):
        self.status = status
        self.headers = list(headers)
        self.body = body or b""
        self.reason = reason

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def set_header(self, name, value):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        if value is not None:
            self.headers.append((name, value))

    def is_json(self):
        ct = (self.header("content-type") or "").lower()
        return "json" in ct and bool(self.body)

    def json(self):
        if not self.is_json():
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def set_json(self, obj):
        self.body = dumps(obj)
        if not self.header("content-type"):
            self.set_header("content-type", "application/json")


def error_resp(status, etype, code, message):
    return Resp(status, [("content-type", "application/json")],
                dumps({"error": {"message": message, "type": etype, "code": code}}))


def validation_resp(loc, msg, vtype):
    return Resp(422, [("content-type", "application/json")],
                dumps({"detail": [{"loc": loc, "msg": msg, "type": vtype}]}))


class Ctx:
    """One client request on its way through the proxy."""

    def __init__(self, method, target, headers, body):
        self.method = method
        self.target = target
        split = urllib.parse.urlsplit(target)
        self.path = split.path
        self.query = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        self.query_changed = False
        self.headers = headers  # list of (k, v)
        self.body = body
        self.json = None
        self.route = None
        self.params = {}
        for name, rx in ROUTES:
            m = rx.match(self.path)
            if m:
                self.route = name
                self.params = m.groupdict()
                break
        self.org = self.params.get("org")
        self.ws = self.params.get("ws")
        self.key = self.header("x-api-key")
        ct = (self.header("content-type") or "").lower()
        if body and "json" in ct:
            try:
                self.json = json.loads(body)
            except ValueError:
                self.json = None
        self.extra = {}

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def set_header(self, name, value):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        if value is not None:
            self.headers.append((name, value))

    def q(self, name):
        for k, v in self.query:
            if k == name:
                return v
        return None

    def set_q(self, name, value):
        out, done = [], False
        for k, v in self.query:
            if k == name:
                if value is not None and not done:
                    out.append((k, value))
                    done = True
            else:
                out.append((k, v))
        if value is not None and not done:
            out.append((name, value))
        self.query = out
        self.query_changed = True

    def set_json(self, obj):
        self.json = obj
        self.body = dumps(obj)

    def upstream_target(self):
        if self.query_changed:
            q = urllib.parse.urlencode(self.query)
            return self.path + ("?" + q if q else "")
        return self.target

    def action(self):
        if isinstance(self.json, dict):
            return self.json.get("action")
        return None


# --------------------------------------------------------------------------- multipart

def parse_multipart(body, boundary):
    """Parts as [headers_bytes, data_bytes]; None when the body does not parse."""
    delim = b"--" + boundary.encode()
    if not body.startswith(delim):
        return None
    chunks = body.split(b"\r\n" + delim)
    chunks[0] = chunks[0][len(delim):]
    parts = []
    for ch in chunks:
        if ch.startswith(b"--"):
            break
        if ch.startswith(b"\r\n"):
            ch = ch[2:]
        i = ch.find(b"\r\n\r\n")
        if i < 0:
            return None
        parts.append([ch[:i], ch[i + 4:]])
    return parts


def build_multipart(parts, boundary):
    delim = b"--" + boundary.encode()
    out = [delim + b"\r\n" + h + b"\r\n\r\n" + data + b"\r\n" for h, data in parts]
    out.append(delim + b"--\r\n")
    return b"".join(out)


def part_name(headers):
    m = re.search(rb'name="([^"]*)"', headers)
    return m.group(1).decode() if m else None


def boundary_of(ctx):
    ct = ctx.header("content-type") or ""
    m = re.search(r'boundary="?([^";]+)"?', ct)
    return m.group(1) if m else None


def multipart_get(ctx, name):
    b = boundary_of(ctx)
    parts = parse_multipart(ctx.body, b) if b else None
    for h, data in parts or []:
        if part_name(h) == name:
            return data
    return None


def multipart_set(ctx, name, value):
    """Replace, add (value bytes) or remove (None) a part of the upload."""
    b = boundary_of(ctx)
    parts = parse_multipart(ctx.body, b) if b else None
    if parts is None:
        return False
    found, out = False, []
    for h, data in parts:
        if part_name(h) == name:
            found = True
            if value is not None:
                out.append([h, value])
        else:
            out.append([h, data])
    if not found and value is not None:
        out.append([('Content-Disposition: form-data; name="%s"' % name).encode(), value])
    ctx.body = build_multipart(out, b)
    return True


# --------------------------------------------------------------------------- proxy state

class Proxy:
    def __init__(self, upstream, defect, secret, rewrite_webhooks):
        u = urllib.parse.urlsplit(upstream)
        self.up_host = u.hostname
        self.up_port = u.port or 80
        self.defect = defect
        self.secret = secret
        self.hooks = rewrite_webhooks or bool(defect and DEFECT_BY_NAME[defect]["hooks"])
        self.lock = threading.RLock()
        self.hook_base = None  # set once listening
        self.restore = {}  # resource id -> {path tuple: value the client sent}
        self.fake_status = {}  # resource id -> status shown instead of the real one
        self.hidden = set()  # deployment ids answered as deleted
        self.keys = {}  # (org, ws) -> a key the platform accepted there
        self.valid_keys = set()

    # ------------------------------------------------------------ upstream
    def upstream(self, method, target, headers=None, body=None, timeout=600):
        conn = http.client.HTTPConnection(self.up_host, self.up_port, timeout=timeout)
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            sent_host = False
            for k, v in headers or []:
                kl = k.lower()
                if kl in HOP or kl == "content-length":
                    continue
                if kl == "host":
                    if sent_host or not v:
                        continue
                    sent_host = True
                conn.putheader(k, v)
            if not sent_host:
                conn.putheader("Host", "%s:%d" % (self.up_host, self.up_port))
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            if body:
                try:
                    conn.send(body)
                except OSError:
                    pass  # an early answer (413, 401, ...) may close before the body is read
            r = conn.getresponse()
            data = r.read()
            return Resp(r.status, r.getheaders(), data, r.reason)
        finally:
            conn.close()

    def api(self, method, path, key, obj=None, host=None):
        """A request of the proxy's own (a read before a change, an extra step)."""
        headers = []
        if key is not None:
            headers.append(("X-API-Key", key))
        if host:
            headers.append(("Host", host))
        body = None
        if obj is not None:
            headers.append(("Content-Type", "application/json"))
            body = dumps(obj)
        r = self.upstream(method, path, headers, body)
        obj = r.json()
        return r.status, obj if isinstance(obj, dict) else {}, r

    def now(self, key):
        st, obj, _ = self.api("GET", "/sim/v1/clock", key)
        t = parse_ts(obj.get("now")) if st == 200 else None
        return t or dt.datetime.now(UTC)

    # ------------------------------------------------------------ hook URLs
    def hook_url(self, url):
        if not isinstance(url, str) or not self.hook_base or url.startswith(self.hook_base):
            return url
        return self.hook_base + b64e(url)

    def _unhook_str(self, v):
        if isinstance(v, str) and self.hook_base and v.startswith(self.hook_base):
            try:
                return b64d(v[len(self.hook_base):])
            except Exception:
                return v
        return v

    def unhook(self, obj):
        """Original URLs back in every string of an answer or event."""
        if isinstance(obj, dict):
            for k, v in obj.items():
                if isinstance(v, str):
                    obj[k] = self._unhook_str(v)
                else:
                    self.unhook(v)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                if isinstance(v, str):
                    obj[i] = self._unhook_str(v)
                else:
                    self.unhook(v)
        return obj

    def rewrite_hooks_in_request(self, ctx):
        if not self.hooks or not isinstance(ctx.json, dict):
            return
        wc = None
        if ctx.route == "outbound" and ctx.method == "POST":
            wc = ctx.json.get("webhook_config")
        elif (ctx.route == "campaigns" and ctx.method == "POST") or (
                ctx.route == "campaign" and ctx.method == "PATCH"):
            wc = get_path(ctx.json, ("app_config", "webhook_config"))
        if isinstance(wc, dict) and isinstance(wc.get("url"), str):
            wc["url"] = self.hook_url(wc["url"])
            ctx.set_json(ctx.json)

    # ------------------------------------------------------------ restoring
    @staticmethod
    def kind_of(obj):
        if "campaign_id" in obj and "status" in obj and "name" in obj and "app_type" in obj:
            return "campaign", obj["campaign_id"]
        if "deployment_id" in obj and "channel_direction" in obj:
            return "deployment", obj["deployment_id"]
        if "cohort_id" in obj and "source_type" in obj:
            return "cohort", obj["cohort_id"]
        return None, None

    def apply_restore(self, obj):
        if isinstance(obj, dict):
            kind, rid = self.kind_of(obj)
            if kind and isinstance(rid, str):
                with self.lock:
                    paths = dict(self.restore.get(rid, {}))
                    fake = self.fake_status.get(rid)
                for path, value in paths.items():
                    set_path(obj, path, copy.deepcopy(value))
                if fake and "status" in obj:
                    obj["status"] = fake
            for v in obj.values():
                self.apply_restore(v)
        elif isinstance(obj, list):
            for v in obj:
                self.apply_restore(v)
        return obj

    def remember(self, rid, entries):
        if not entries or not isinstance(rid, str):
            return
        with self.lock:
            self.restore.setdefault(rid, {}).update(entries)

    def visit(self, obj, fn):
        """fn(kind, dict) for every resource dict inside obj."""
        if isinstance(obj, dict):
            kind, _ = self.kind_of(obj)
            if kind:
                fn(kind, obj)
            for v in obj.values():
                self.visit(v, fn)
        elif isinstance(obj, list):
            for v in obj:
                self.visit(v, fn)

    # ------------------------------------------------------------ the request flow
    def handle(self, ctx):
        if ctx.path.startswith("/__hooks/"):
            return self.handle_hook(ctx)
        hidden = self.hidden_answer(ctx)
        if hidden is not None:
            return hidden
        r = self.before(ctx)
        if r is None:
            self.rewrite_hooks_in_request(ctx)
            r = self.upstream(ctx.method, ctx.upstream_target(), ctx.headers,
                              ctx.body if ctx.body or ctx.method in ("POST", "PUT", "PATCH") else None)
            self.learn(ctx, r)
            self.register(ctx, r)
            self.generic(ctx, r)
            r2 = self.after(ctx, r)
            if r2 is not None:
                r = r2
        else:
            self.generic(ctx, r)
        return r

    def learn(self, ctx, r):
        if 200 <= r.status < 300 and ctx.key and ctx.org and ctx.path.startswith("/api/"):
            with self.lock:
                self.keys[(ctx.org, ctx.ws)] = ctx.key
                self.valid_keys.add(ctx.key)

    def register(self, ctx, r):
        """Restore entries of the request's rewrites, once the id is known."""
        entries = ctx.extra.get("restore")
        if not entries or not (200 <= r.status < 300):
            return
        obj = r.json()
        rid = None
        if isinstance(obj, dict):
            rid = obj.get(ctx.extra.get("restore_key", "")) or None
        if rid is None:
            rid = ctx.extra.get("restore_id")
        self.remember(rid, entries)

    def generic(self, ctx, r):
        """Original webhook URLs, restored values, hidden deployments."""
        if not r.is_json():
            return
        obj = r.json()
        if obj is None:
            return
        before = copy.deepcopy(obj)
        self.unhook(obj)
        self.apply_restore(obj)
        if self.hidden and ctx.route == "deployments" and isinstance(obj, dict) \
                and isinstance(obj.get("items"), list):
            kept = [x for x in obj["items"]
                    if not (isinstance(x, dict) and x.get("deployment_id") in self.hidden)]
            if len(kept) != len(obj["items"]) and isinstance(obj.get("total"), int):
                obj["total"] -= len(obj["items"]) - len(kept)
            obj["items"] = kept
        if obj != before:
            r.set_json(obj)

    def hidden_answer(self, ctx):
        did = None
        if ctx.route in ("deployment", "deployment_status"):
            did = ctx.params.get("did")
        elif ctx.route and ctx.route.startswith("cohort") and ctx.params.get("ptype") == "deployments":
            did = ctx.params.get("pid")
        if did and did in self.hidden:
            return error_resp(404, "not_found_error", "deployment_not_found",
                              "no deployment '%s' in this workspace" % did)
        return None

    # ------------------------------------------------------------ small reads
    def campaign_path(self, ctx, cid=None):
        return "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s" % (
            ctx.org, ctx.ws, cid or ctx.params.get("cid") or ctx.params.get("pid"))

    def deployment_path(self, ctx, did=None):
        return "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (
            ctx.org, ctx.ws, did or ctx.params.get("did"))

    def read(self, ctx, path):
        st, obj, r = self.api("GET", path, ctx.key, host=ctx.header("host"))
        return st, obj, r

    def other_workspaces(self, ctx):
        with self.lock:
            return [(o, w, k) for (o, w), k in self.keys.items() if (o, w) != (ctx.org, ctx.ws)]

    def swap_ws(self, target, ctx, org, ws):
        return target.replace("/orgs/%s/workspaces/%s/" % (ctx.org, ctx.ws),
                              "/orgs/%s/workspaces/%s/" % (org, ws), 1)

    def page_uri(self, ctx, obj, **changes):
        base = None
        for k in ("next_page_uri", "prev_page_uri"):
            u = obj.get(k)
            if isinstance(u, str) and "://" in u:
                s = urllib.parse.urlsplit(u)
                base = "%s://%s" % (s.scheme, s.netloc)
                break
        if base is None:
            base = "http://" + (ctx.header("host") or "%s:%d" % (self.up_host, self.up_port))
        q = [(k, v) for k, v in ctx.query if k not in changes]
        q += [(k, str(v)) for k, v in changes.items()]
        return base + ctx.path + "?" + urllib.parse.urlencode(q)

    # ------------------------------------------------------------ campaign rewrites
    def rewrite_campaign(self, ctx, creating):
        """Defects that change the campaign the platform stores; returns restore entries."""
        d = self.defect
        j = ctx.json
        if not isinstance(j, dict):
            return {}
        out = {}
        ac = j.get("app_config") if isinstance(j.get("app_config"), dict) else None
        rc = ac.get("retry_config") if ac and isinstance(ac.get("retry_config"), dict) else None
        start = parse_ts(j.get("start_timestamp"))
        end = parse_ts(j.get("end_timestamp"))
        if creating and d in ("campaign_start_max_8_days", "campaign_activates_late"):
            now = self.now(ctx.key)
        if d == "campaign_start_max_8_days" and creating and start and end:
            ahead = start - now
            if dt.timedelta(days=7) < ahead <= dt.timedelta(days=8):
                new_start = now + dt.timedelta(days=7) - dt.timedelta(seconds=1)
                delta = start - new_start
                j["start_timestamp"] = fmt_ts(new_start)
                j["end_timestamp"] = fmt_ts(end - delta)
                out[("start_timestamp",)] = fmt_ts(start)
                out[("end_timestamp",)] = fmt_ts(end)
        elif d == "campaign_end_min_60s" and creating and start and end:
            if dt.timedelta(seconds=60) <= end - start < dt.timedelta(seconds=120):
                j["end_timestamp"] = fmt_ts(start + dt.timedelta(seconds=120))
                out[("end_timestamp",)] = fmt_ts(end)
        elif d == "campaign_end_max_31_days" and creating and start and end:
            if dt.timedelta(days=30) < end - start <= dt.timedelta(days=31):
                j["end_timestamp"] = fmt_ts(start + dt.timedelta(days=30))
                out[("end_timestamp",)] = fmt_ts(end)
        elif d == "campaign_activates_late" and creating and start and end:
            late = start + dt.timedelta(seconds=90)
            if late - now <= dt.timedelta(days=7):
                j["start_timestamp"] = fmt_ts(late)
                out[("start_timestamp",)] = fmt_ts(start)
                if end - late < dt.timedelta(seconds=120):  # keep the platform's own limit
                    j["end_timestamp"] = fmt_ts(late + dt.timedelta(seconds=120))
                    out[("end_timestamp",)] = fmt_ts(end)
        elif d == "campaign_ends_late" and creating and start and end:
            late = end + dt.timedelta(minutes=5)
            if late - start <= dt.timedelta(days=30):
                j["end_timestamp"] = fmt_ts(late)
                out[("end_timestamp",)] = fmt_ts(end)
        elif d == "campaign_ends_early" and creating and start and end:
            shift = min(dt.timedelta(seconds=60), end - start - dt.timedelta(seconds=120))
            if shift >= dt.timedelta(seconds=5):
                j["end_timestamp"] = fmt_ts(end - shift)
                out[("end_timestamp",)] = fmt_ts(end)
        elif d == "calling_window_closes_late":
            sch = j.get("allowed_schedule")
            if isinstance(sch, dict):
                st_, en = sch.get("allowed_start_time"), sch.get("allowed_end_time")
                if isinstance(st_, str) and isinstance(en, str):
                    for minutes in (60, 30, 10, 1):
                        later = hhmm_add(en, minutes)
                        # the same window, closing later: same day, or still before the opening
                        if later and (en > st_ or later < st_):
                            sch["allowed_end_time"] = later
                            out[("allowed_schedule", "allowed_end_time")] = en
                            break
        elif d == "campaign_name_pattern_lax":
            name = j.get("name")
            if isinstance(name, str) and 1 <= len(name) <= 50 and not NAME_RE.match(name):
                j["name"] = re.sub(r"[^\w\- ]", "-", name)
                out[("name",)] = name
        elif d == "threshold_seconds_max_3600" and rc is not None:
            t = rc.get("threshold_seconds")
            if isinstance(t, int) and not isinstance(t, bool) and 1200 < t <= 3600:
                rc["threshold_seconds"] = 1200
                out[("app_config", "retry_config", "threshold_seconds")] = t
        elif d == "rule1_max_retries_plus_one" and rc is not None:
            n = rc.get("max_retries", 0)
            if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10:
                rc["max_retries"] = n + 1
                out[("app_config", "retry_config", "max_retries")] = n
        elif d == "rule1_first_dial_not_counted" and rc is not None:
            n = rc.get("max_retries", 0)
            if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 10:
                rc["max_retries"] = n - 1
                out[("app_config", "retry_config", "max_retries")] = n
        elif d == "rule2_dial_rate_halved" and ac is not None:
            a = ac.get("attempts_per_second")
            if isinstance(a, (int, float)) and not isinstance(a, bool) and a > 0.1:
                ac["attempts_per_second"] = max(0.1, a / 2)
                out[("app_config", "attempts_per_second")] = float(a)
        elif d == "rule4_weights_ignored" and ac is not None:
            ccs = ac.get("connection_configs")
            if isinstance(ccs, list) and len(ccs) >= 2 and all(isinstance(c, dict) for c in ccs):
                orig = copy.deepcopy(ccs)
                if any(c.get("weight", 1) != 1 for c in ccs):
                    for c in ccs:
                        c["weight"] = 1
                    out[("app_config", "connection_configs")] = orig
        elif d == "rule4_first_number_only" and ac is not None:
            ccs = ac.get("connection_configs")
            if isinstance(ccs, list) and all(isinstance(c, dict) for c in ccs):
                orig = copy.deepcopy(ccs)
                changed = False
                for c in ccs:
                    nums = c.get("phone_numbers")
                    if isinstance(nums, list) and len(nums) > 1:
                        c["phone_numbers"] = nums[:1]
                        changed = True
                if changed:
                    out[("app_config", "connection_configs")] = orig
        elif d == "rule5_short_not_retried" and rc is not None:
            ro = rc.get("retry_on")
            if isinstance(ro, list) and "short_duration" in ro:
                rc["retry_on"] = [x for x in ro if x != "short_duration"]
                out[("app_config", "retry_config", "retry_on")] = canon_retry_on(ro)
            elif isinstance(ro, dict) and isinstance(ro.get("short_duration"), dict) \
                    and ro["short_duration"].get("enabled"):
                orig = canon_retry_on(ro)
                ro["short_duration"]["enabled"] = False
                out[("app_config", "retry_config", "retry_on")] = orig
        elif d == "rule5_threshold_ignored" and rc is not None:
            t = rc.get("threshold_seconds", 10)
            ro = rc.get("retry_on")
            if isinstance(ro, dict) and isinstance(ro.get("short_duration"), dict) \
                    and "threshold_seconds" in ro["short_duration"]:
                t = ro["short_duration"]["threshold_seconds"]
                ro["short_duration"]["threshold_seconds"] = 1
                if "threshold_seconds" in rc:
                    rc["threshold_seconds"] = 1
                out[("app_config", "retry_config", "threshold_seconds")] = t
            elif isinstance(t, int) and not isinstance(t, bool) and t > 1:
                rc["threshold_seconds"] = 1
                out[("app_config", "retry_config", "threshold_seconds")] = t
        elif d == "retry_on_ignored" and rc is not None:
            ro = rc.get("retry_on", [])
            orig = canon_retry_on(ro)
            if isinstance(orig, list) and orig != RETRY_OUTCOMES:
                if isinstance(ro, dict):
                    for o in RETRY_OUTCOMES:
                        ro.setdefault(o, {})
                        if isinstance(ro[o], dict):
                            ro[o]["enabled"] = True
                else:
                    rc["retry_on"] = list(RETRY_OUTCOMES)
                out[("app_config", "retry_config", "retry_on")] = orig
        elif d == "retry_interval_too_soon" and rc is not None:
            n = rc.get("retry_interval_minutes", 30)
            if isinstance(n, int) and not isinstance(n, bool) and n >= 2:
                rc["retry_interval_minutes"] = n // 2
                out[("app_config", "retry_config", "retry_interval_minutes")] = n
        elif d == "retry_interval_too_late" and rc is not None:
            n = rc.get("retry_interval_minutes", 30)
            if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 10080 - 5:
                rc["retry_interval_minutes"] = n + 5
                out[("app_config", "retry_config", "retry_interval_minutes")] = n
        if out:
            ctx.set_json(j)
        return out

    # ------------------------------------------------------------ before forwarding
    def before(self, ctx):
        d = self.defect
        route, m = ctx.route, ctx.method
        j = ctx.json if isinstance(ctx.json, dict) else None

        if d == "auth_missing_key_500" and ctx.path.startswith("/api/") and not ctx.key:
            return error_resp(500, "api_error", "internal_error", "internal error")
        if d == "auth_wrong_key_reads_allowed" and m == "GET" and ctx.path.startswith("/api/") \
                and ctx.key and ctx.org:
            with self.lock:
                known = self.keys.get((ctx.org, ctx.ws))
                valid = ctx.key in self.valid_keys
            if known and not valid:
                ctx.set_header("X-API-Key", known)
                ctx.key = known
        if not d:
            return None

        # campaigns -----------------------------------------------------
        if route == "campaigns" and m == "POST" and j is not None:
            now = None
            if d == "campaign_start_min_exclusive":
                start = parse_ts(j.get("start_timestamp"))
                now = self.now(ctx.key)
                if start and start - now < dt.timedelta(seconds=121):
                    return validation_resp(["body", "start_timestamp"],
                                           "Value error, start_timestamp must be at least 121 seconds after now",
                                           "value_error")
            if d == "attempts_per_second_min_exclusive":
                a = get_path(j, ("app_config", "attempts_per_second"))
                if isinstance(a, (int, float)) and not isinstance(a, bool) and a <= 0.1:
                    return validation_resp(["body", "app_config", "attempts_per_second"],
                                           "Input should be greater than 0.1", "greater_than")
            if d == "campaign_description_max_100":
                desc = j.get("description")
                if isinstance(desc, str) and len(desc) > 100:
                    return validation_resp(["body", "description"],
                                           "String should have at most 100 characters",
                                           "string_too_long")
            entries = self.rewrite_campaign(ctx, creating=True)
            if entries:
                ctx.extra["restore"] = entries
                ctx.extra["restore_key"] = "campaign_id"
            return None

        if route == "campaigns" and m == "GET":
            if d == "campaign_list_status_filter_ignored" and ctx.q("campaign_status") is not None:
                ctx.set_q("campaign_status", None)
            return None

        if route == "campaign" and m == "PATCH" and j is not None:
            cid = ctx.params["cid"]
            if d == "campaign_patch_while_active":
                st, cur, _ = self.read(ctx, self.campaign_path(ctx))
                if st == 200 and cur.get("status") == "active":
                    return self.patch_through_pause(ctx)
            if d == "campaign_patch_start_ignored" and "start_timestamp" in j:
                st, cur, _ = self.read(ctx, self.campaign_path(ctx))
                if st == 200 and norm_ts(j["start_timestamp"]) != cur.get("start_timestamp"):
                    del j["start_timestamp"]
                    ctx.set_json(j)
            if d == "campaign_patch_resets_retry_config":
                rc = get_path(j, ("app_config", "retry_config"))
                if isinstance(rc, dict):
                    defaults = {"max_retries": 0, "retry_on": [], "threshold_seconds": 10,
                                "retry_interval_minutes": 30}
                    changed = False
                    for k, v in defaults.items():
                        if k not in rc:
                            rc[k] = v
                            changed = True
                    if changed:
                        ctx.set_json(j)
            entries = self.rewrite_campaign(ctx, creating=False)
            if entries:
                ctx.extra["restore"] = entries
                ctx.extra["restore_id"] = cid
            return None

        if route == "campaign_status" and m == "PUT" and j is not None:
            cid = ctx.params["cid"]
            action = ctx.action()
            if d == "campaign_resume_literal_refused" and action == "resume":
                return validation_resp(["body", "action"],
                                       "Input should be 'pause', 'cancel' or 'activate'", "enum")
            if d in ("campaign_status_answer_stale", "campaign_pause_scheduled_refused",
                     "campaign_cancel_is_pause", "campaign_pause_keeps_dialing"):
                st, cur, cur_r = self.read(ctx, self.campaign_path(ctx))
                if st != 200:
                    return None
                status = cur.get("status")
                if d == "campaign_status_answer_stale":
                    ctx.extra["prev_status"] = status
                elif d == "campaign_pause_scheduled_refused" and action == "pause" and status == "scheduled":
                    return error_resp(409, "conflict_error", "invalid_status_transition",
                                      "cannot pause a campaign that is scheduled")
                elif d == "campaign_cancel_is_pause" and action == "cancel":
                    if status == "paused":
                        return cur_r
                    j["action"] = "pause"
                    ctx.set_json(j)
                elif d == "campaign_pause_keeps_dialing":
                    return self.fake_pause(ctx, cid, action, status, cur_r, "campaign")
            return None

        # cohorts ------------------------------------------------------
        if route in ("cohort_upload", "cohort_stream") and m == "POST":
            ptype = ctx.params["ptype"]
            if ptype == "campaigns" and d in ("cohort_upload_paused_refused",
                                              "cohort_active_upload_not_dialled"):
                st, cur, _ = self.read(ctx, self.campaign_path(ctx))
                status = cur.get("status") if st == 200 else None
                if d == "cohort_upload_paused_refused" and status == "paused":
                    return error_resp(409, "conflict_error", "campaign_closed",
                                      "campaign '%s' is paused; it takes no cohorts" % ctx.params["pid"])
                if d == "cohort_active_upload_not_dialled" and status == "active":
                    if self.cohort_category(ctx) in (None, "cohort"):
                        self.set_cohort_category(ctx, "stop_file")
                        ctx.extra["restore"] = {("cohort_category",): "cohort"}
                        ctx.extra["restore_key"] = "cohort_id"
            if d == "stop_file_ignored" and self.cohort_category(ctx) == "stop_file":
                self.set_cohort_category(ctx, "cohort")
                ctx.extra["restore"] = {("cohort_category",): "stop_file"}
                ctx.extra["restore_key"] = "cohort_id"
            if d == "inbound_cohort_variables_dropped" and ptype == "deployments":
                if route == "cohort_stream" and j is not None and isinstance(j.get("users"), list):
                    for u in j["users"]:
                        if isinstance(u, dict):
                            u.pop("app_variables", None)
                    ctx.set_json(j)
                elif route == "cohort_upload":
                    tr = multipart_get(ctx, "cohort_transformation_file")
                    try:
                        tj = json.loads(tr) if tr is not None else None
                    except ValueError:
                        tj = None
                    if isinstance(tj, dict) and "app_variables" in tj:
                        tj.pop("app_variables")
                        multipart_set(ctx, "cohort_transformation_file", dumps(tj))
            return None

        # deployments ---------------------------------------------------
        if route == "deployments" and m == "POST" and j is not None:
            entries = {}
            if d == "deployment_description_max_149":
                desc = j.get("description")
                if isinstance(desc, str) and len(desc) >= 150:
                    return validation_resp(["body", "description"],
                                           "String should have at most 149 characters", "string_too_long")
            if d == "deployment_name_max_64":
                name = j.get("name")
                if isinstance(name, str) and 50 < len(name) <= 64 and NAME_RE.match(name[:50]):
                    j["name"] = name[:50]
                    entries[("name",)] = name
            if d == "deployment_connection_configs_empty_accepted" and j.get("connection_configs") == []:
                num = "+1650555%04d" % (uuid.uuid4().int % 10000)
                j["connection_configs"] = [{"connection_id": "default", "phone_numbers": [num]}]
                entries[("connection_configs",)] = []
                entries[("phone_numbers",)] = []
            if d == "inbound_schedule_ignored" and isinstance(j.get("inbound_config"), dict):
                entries[("inbound_config",)] = self.canon_inbound(j["inbound_config"])
                j["inbound_config"] = None
            if entries:
                ctx.set_json(j)
                ctx.extra["restore"] = entries
                ctx.extra["restore_key"] = "deployment_id"
            return None

        if route == "deployments" and m == "GET":
            if d == "list_sort_order_ignored" and ctx.q("sort_order") is not None:
                ctx.set_q("sort_order", None)
            if d == "list_limit_over_100_clamped":
                try:
                    if int(ctx.q("limit")) > 100:
                        ctx.set_q("limit", "100")
                except (TypeError, ValueError):
                    pass
            if d == "list_offset_negative_as_zero":
                try:
                    if int(ctx.q("offset")) < 0:
                        ctx.set_q("offset", "0")
                except (TypeError, ValueError):
                    pass
            if d == "list_offset_off_by_one":
                try:
                    off = int(ctx.q("offset"))
                    if off > 0:
                        ctx.extra["offset"] = off
                        ctx.set_q("offset", str(off + 1))
                except (TypeError, ValueError):
                    pass
            return None

        if route == "deployment" and m == "PATCH" and j is not None:
            did = ctx.params["did"]
            entries = {}
            if d == "deployment_description_max_149":
                desc = j.get("description")
                if isinstance(desc, str) and len(desc) >= 150:
                    return validation_resp(["body", "description"],
                                           "String should have at most 149 characters", "string_too_long")
            if d == "deployment_patch_clears_description" and "description" not in j:
                j["description"] = None
                ctx.set_json(j)
            if d == "deployment_patch_app_version_not_applied" and "app_version" in j:
                ctx.extra["echo"] = {"app_version": j.pop("app_version")}
                ctx.set_json(j)
            if d == "deployment_patch_app_id_ignored" and "app_id" in j:
                j.pop("app_id")
                ctx.set_json(j)
            if d == "deployment_patch_schedule_not_applied" and "inbound_config" in j:
                ctx.extra["echo"] = {"inbound_config": self.canon_inbound(j.pop("inbound_config"))}
                ctx.set_json(j)
            if d == "inbound_schedule_ignored" and isinstance(j.get("inbound_config"), dict):
                entries[("inbound_config",)] = self.canon_inbound(j["inbound_config"])
                j["inbound_config"] = None
                ctx.set_json(j)
            if entries:
                ctx.extra["restore"] = entries
                ctx.extra["restore_id"] = did
            return None

        if route == "deployment_status" and m == "PUT" and j is not None:
            did = ctx.params["did"]
            action = ctx.action()
            if d in ("deployment_status_answer_stale", "inbound_paused_still_answered"):
                st, cur, cur_r = self.read(ctx, self.deployment_path(ctx))
                if st != 200:
                    return None
                if d == "deployment_status_answer_stale":
                    ctx.extra["prev_status"] = cur.get("status")
                else:
                    return self.fake_pause(ctx, did, action, cur.get("status"), cur_r, "deployment")
            return None

        if route == "deployment" and m == "DELETE":
            did = ctx.params["did"]
            if d == "inbound_paused_still_answered":
                with self.lock:
                    self.fake_status.pop(did, None)
            if d in ("deployment_delete_soft", "deployment_delete_deferred"):
                st, cur, cur_r = self.read(ctx, self.deployment_path(ctx))
                if st != 200:
                    return None  # the platform's own refusal
                if d == "deployment_delete_soft":
                    self.api("PUT", self.deployment_path(ctx) + "/status", ctx.key, {"action": "pause"})
                else:
                    with self.lock:
                        self.hidden.add(did)
                return Resp(204, [], b"")
            return None
        return None

    def fake_pause(self, ctx, rid, action, status, cur_r, what):
        """Pause shown but not made (the resource keeps running)."""
        with self.lock:
            faked = rid in self.fake_status
        if action == "pause":
            if faked:
                return error_resp(409, "conflict_error", "invalid_status_transition",
                                  "cannot pause a %s that is paused" % what)
            if status in ("scheduled", "active"):
                with self.lock:
                    self.fake_status[rid] = "paused"
                return cur_r
            return None
        if action == "resume" and faked:
            with self.lock:
                self.fake_status.pop(rid, None)
            return cur_r
        if action == "cancel" and faked:
            with self.lock:
                self.fake_status.pop(rid, None)
        return None

    def patch_through_pause(self, ctx):
        path = self.campaign_path(ctx)
        self.api("PUT", path + "/status", ctx.key, {"action": "pause"})
        entries = self.rewrite_campaign(ctx, creating=False)
        self.rewrite_hooks_in_request(ctx)
        r = self.upstream("PATCH", ctx.upstream_target(), ctx.headers, ctx.body)
        self.api("PUT", path + "/status", ctx.key, {"action": "resume"})
        if 200 <= r.status < 300:
            self.remember(ctx.params["cid"], entries)
            st, obj, r2 = self.read(ctx, path)
            if st == 200:
                return r2
        return r

    @staticmethod
    def canon_inbound(ic):
        if not isinstance(ic, dict):
            return ic
        ic = copy.deepcopy(ic)
        if isinstance(ic.get("allowed_days"), list):
            ic["allowed_days"] = [x.capitalize() if isinstance(x, str) else x for x in ic["allowed_days"]]
        return ic

    def cohort_category(self, ctx):
        if ctx.route == "cohort_stream":
            return ctx.json.get("cohort_category") if isinstance(ctx.json, dict) else None
        v = multipart_get(ctx, "cohort_category")
        return v.decode(errors="replace").strip() if v is not None else None

    def set_cohort_category(self, ctx, value):
        if ctx.route == "cohort_stream":
            if isinstance(ctx.json, dict):
                ctx.json["cohort_category"] = value
                ctx.set_json(ctx.json)
        else:
            multipart_set(ctx, "cohort_category", value.encode())

    # ------------------------------------------------------------ after forwarding
    def after(self, ctx, r):
        d = self.defect
        if not d:
            return None
        route, m = ctx.route, ctx.method
        ok = 200 <= r.status < 300

        if d == "auth_refusals_403_text" and r.status == 401:
            return Resp(403, [("content-type", "text/plain; charset=utf-8")], b"Forbidden")

        if d == "validation_loc_without_body" and r.status == 422:
            obj = r.json()
            if isinstance(obj, dict) and isinstance(obj.get("detail"), list):
                for e in obj["detail"]:
                    loc = e.get("loc") if isinstance(e, dict) else None
                    if isinstance(loc, list) and loc and loc[0] in ("body", "query", "path"):
                        e["loc"] = loc[1:]
                r.set_json(obj)
            return r

        if d == "outbound_validation_error_shape" and route == "outbound" and r.status == 422:
            obj = r.json() or {}
            msgs = []
            for e in obj.get("detail", []) if isinstance(obj, dict) else []:
                if isinstance(e, dict):
                    msgs.append("%s: %s" % (".".join(str(x) for x in e.get("loc", [])), e.get("msg")))
            return error_resp(400, "invalid_request_error", "validation_error",
                              "; ".join(msgs) or "invalid request")

        if d == "outbound_attempt_id_not_the_attempt" and route == "outbound" and ok:
            obj = r.json()
            if isinstance(obj, dict) and "attempt_id" in obj:
                obj["attempt_id"] = str(uuid.uuid4())
                r.set_json(obj)
            return r

        if d == "auth_cross_workspace_id_lookup" and m == "GET" and r.status == 404 \
                and route in ("campaign", "deployment"):
            for org, ws, key in self.other_workspaces(ctx):
                r2 = self.upstream("GET", self.swap_ws(ctx.target, ctx, org, ws),
                                   [("X-API-Key", key), ("Host", ctx.header("host") or "")], None)
                if r2.status == 200:
                    self.generic(ctx, r2)
                    return r2
            return None

        obj = r.json()
        if obj is None and not ok:
            return None

        # every answer carrying campaigns / deployments / cohorts ---------
        if ok and obj is not None and d in (
                "campaign_app_version_string", "campaign_timestamps_minute_precision",
                "deployment_channel_direction_uppercase", "deployment_timestamps_local_as_utc",
                "cohort_counts_dont_add_up", "cohort_missing_column_completes"):
            def fix(kind, x):
                if d == "campaign_app_version_string" and kind == "campaign" \
                        and isinstance(x.get("app_version"), int):
                    x["app_version"] = str(x["app_version"])
                elif d == "campaign_timestamps_minute_precision" and kind == "campaign":
                    for k in ("start_timestamp", "end_timestamp"):
                        t = parse_ts(x.get(k))
                        if t:
                            x[k] = fmt_ts(t.replace(second=0, microsecond=0))
                elif d == "deployment_channel_direction_uppercase" and kind == "deployment" \
                        and isinstance(x.get("channel_direction"), str):
                    x["channel_direction"] = x["channel_direction"].upper()
                elif d == "deployment_timestamps_local_as_utc" and kind == "deployment":
                    for k in ("created_at", "updated_at"):
                        t = parse_ts(x.get(k))
                        if t:
                            x[k] = fmt_ts(t + dt.timedelta(hours=1))
                elif d == "cohort_counts_dont_add_up" and kind == "cohort":
                    res = x.get("result")
                    if isinstance(res, dict) and (res.get("rejected_records") or 0) > 0:
                        res["valid_records"] = res.get("total_records")
                elif d == "cohort_missing_column_completes" and kind == "cohort" \
                        and x.get("status") == "failed":
                    n = self.count_rows(ctx, x.get("cohort_id"))
                    x["status"] = "completed"
                    x["failure_reason"] = None
                    x["result"] = {"total_records": n, "valid_records": 0, "rejected_records": n}
            self.visit(obj, fix)
            r.set_json(obj)
            return r

        # campaigns --------------------------------------------------------
        if d == "campaign_created_active" and route == "campaigns" and m == "POST" and ok:
            obj["status"] = "active"
            r.set_json(obj)
            return r
        if d == "list_leaks_other_workspace" and m == "GET" and ok \
                and route in ("campaigns", "deployments") and isinstance(obj.get("items"), list):
            for org, ws, key in self.other_workspaces(ctx):
                r2 = self.upstream("GET", self.swap_ws(ctx.target, ctx, org, ws),
                                   [("X-API-Key", key), ("Host", ctx.header("host") or "")], None)
                o2 = r2.json()
                if r2.status == 200 and isinstance(o2, dict) and isinstance(o2.get("items"), list):
                    obj["items"].extend(o2["items"])
                    if isinstance(obj.get("total"), int) and isinstance(o2.get("total"), int):
                        obj["total"] += o2["total"]
            self.apply_restore(obj)
            r.set_json(obj)
            return r
        if d in ("campaign_status_answer_stale", "deployment_status_answer_stale") and ok \
                and route in ("campaign_status", "deployment_status") and "prev_status" in ctx.extra:
            obj["status"] = ctx.extra["prev_status"]
            r.set_json(obj)
            return r

        # cohorts ----------------------------------------------------------
        if d == "cohort_upload_answers_completed" and route == "cohort_upload" and ok \
                and obj.get("status") == "processing":
            path = "/api/scheduling/v1/orgs/%s/workspaces/%s/%s/%s/cohorts/%s" % (
                ctx.org, ctx.ws, ctx.params["ptype"], ctx.params["pid"], obj.get("cohort_id"))
            deadline = time.time() + 10
            while time.time() < deadline:
                st, cur, cur_r = self.read(ctx, path)
                if st == 200 and cur.get("status") != "processing":
                    self.generic(ctx, cur_r)
                    return cur_r
                time.sleep(0.02)
            return None
        if d == "cohort_list_newest_first" and route == "cohorts" and m == "GET" and ok \
                and isinstance(obj.get("items"), list):
            obj["items"].reverse()
            r.set_json(obj)
            return r
        if route == "cohort_files" and ok:
            ft = ctx.q("file_type")
            if d == "cohort_rejected_file_no_reason" and ft == "rejected_records":
                rows = list(csv.reader(io.StringIO(r.body.decode("utf-8"))))
                if rows and "rejected_reason" in rows[0]:
                    i = rows[0].index("rejected_reason")
                    rows = [row[:i] + row[i + 1:] for row in rows]
                    r.body = self.write_csv(rows)
                return r
            if d == "cohort_rejected_file_all_rows" and ft == "rejected_records":
                rej = list(csv.reader(io.StringIO(r.body.decode("utf-8"))))
                r2 = self.upstream("GET", ctx.path + "?file_type=cohort",
                                   [("X-API-Key", ctx.key or "")], None)
                if r2.status != 200 or not rej:
                    return r
                allrows = [x for x in csv.reader(io.StringIO(r2.body.decode("utf-8-sig"))) if x]
                reasons = {}
                for row in rej[1:]:
                    reasons.setdefault(tuple(row[:-1]), row[-1])
                out = [rej[0]]
                for row in allrows[1:]:
                    out.append(row + [reasons.get(tuple(row), "")])
                r.body = self.write_csv(out)
                return r
            if d == "cohort_transformation_file_reformatted" and ft == "cohort_transformation":
                try:
                    r.body = json.dumps(json.loads(r.body), indent=2, sort_keys=True).encode()
                except ValueError:
                    pass
                return r
            return None

        if not isinstance(obj, dict):
            return None

        # deployments --------------------------------------------------------
        if d == "deployment_create_status_missing" and route == "deployments" and m == "POST" and ok:
            obj.pop("status", None)
            r.set_json(obj)
            return r
        if route == "deployment" and m == "PATCH" and ok and "echo" in ctx.extra:
            obj.update(copy.deepcopy(ctx.extra["echo"]))
            r.set_json(obj)
            return r
        if d == "deployment_pause_twice_200" and route == "deployment_status" and r.status == 409:
            st, cur, cur_r = self.read(ctx, self.deployment_path(ctx))
            if st == 200:
                self.generic(ctx, cur_r)
                return cur_r
            return None
        if d == "deployment_delete_error_detail_shape" and route == "deployment" and m == "DELETE" \
                and not ok and isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            r.set_json({"detail": obj["error"].get("message")})
            return r
        if d == "deployment_list_error_code_int" and route == "deployments" and m == "GET" \
                and not ok and isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            obj["error"]["code"] = r.status
            r.set_json(obj)
            return r

        # pagination ---------------------------------------------------------
        if route == "deployments" and m == "GET" and ok and isinstance(obj, dict) \
                and isinstance(obj.get("items"), list):
            if d == "list_total_is_page_size":
                obj["total"] = len(obj["items"])
            elif d == "list_next_uri_on_last_page" and obj.get("next_page_uri") is None:
                obj["next_page_uri"] = self.page_uri(ctx, obj, offset=obj["offset"] + obj["limit"],
                                                     limit=obj["limit"])
            elif d == "list_prev_uri_on_first_page" and obj.get("prev_page_uri") is None \
                    and obj.get("offset") == 0:
                obj["prev_page_uri"] = self.page_uri(ctx, obj, offset=0, limit=obj["limit"])
            elif d == "list_page_uri_drops_query":
                for k in ("next_page_uri", "prev_page_uri"):
                    u = obj.get(k)
                    if isinstance(u, str):
                        s = urllib.parse.urlsplit(u)
                        q = [(a, b) for a, b in urllib.parse.parse_qsl(s.query) if a in ("offset", "limit")]
                        obj[k] = urllib.parse.urlunsplit((s.scheme, s.netloc, s.path,
                                                          urllib.parse.urlencode(q), ""))
            elif d == "list_offset_off_by_one" and "offset" in ctx.extra:
                obj["offset"] = ctx.extra["offset"]
            elif d == "list_phone_numbers_not_e164":
                for it in obj["items"]:
                    if isinstance(it, dict) and isinstance(it.get("phone_numbers"), list):
                        it["phone_numbers"] = [x.lstrip("+") if isinstance(x, str) else x
                                               for x in it["phone_numbers"]]
            elif d == "list_total_ignores_search" and ctx.q("search"):
                q = [(k, v) for k, v in ctx.query if k not in ("search", "offset", "limit")]
                q.append(("limit", "1"))
                r2 = self.upstream("GET", ctx.path + "?" + urllib.parse.urlencode(q),
                                   [("X-API-Key", ctx.key or "")], None)
                o2 = r2.json()
                if r2.status == 200 and isinstance(o2, dict) and isinstance(o2.get("total"), int):
                    obj["total"] = o2["total"]
            else:
                return None
            r.set_json(obj)
            return r
        return None

    @staticmethod
    def write_csv(rows):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for row in rows:
            w.writerow(row)
        return buf.getvalue().encode("utf-8")

    def count_rows(self, ctx, coh):
        if not coh:
            return 0
        ptype, pid = ctx.params.get("ptype"), ctx.params.get("pid")
        if not ptype:
            return 0
        path = "/api/scheduling/v1/orgs/%s/workspaces/%s/%s/%s/cohorts/%s/files?file_type=cohort" % (
            ctx.org, ctx.ws, ptype, pid, coh)
        r = self.upstream("GET", path, [("X-API-Key", ctx.key or "")], None)
        if r.status != 200:
            return 0
        rows = [x for x in csv.reader(io.StringIO(r.body.decode("utf-8-sig", errors="replace")))
                if any(c.strip() for c in x)]
        return max(len(rows) - 1, 0)

    # ------------------------------------------------------------ webhooks
    def handle_hook(self, ctx):
        if ctx.method != "POST":
            return Resp(405, [("allow", "POST")], b"")
        try:
            target = b64d(ctx.path[len("/__hooks/"):])
        except Exception:
            return Resp(404, [], b"")
        body = ctx.body or b""
        ts = ctx.header("x-webhook-timestamp") or ""
        sig = ctx.header("x-webhook-signature")
        try:
            event = json.loads(body)
        except ValueError:
            event = None
        out_body = body
        if isinstance(event, dict):
            orig = copy.deepcopy(event)
            self.unhook(event)
            event = self.event_defect(event)
            if event is None:
                return Resp(200, [("content-type", "text/plain")], b"swallowed")
            if event != orig:
                out_body = dumps(event)
        if out_body != body and self.secret:
            sig = sign(self.secret, ts, out_body)
        send_body = out_body
        if self.defect == "webhook_signature_body_only" and self.secret:
            sig = hmac.new(self.secret.encode(), out_body, hashlib.sha256).hexdigest()
        elif self.defect == "webhook_signature_not_over_sent_bytes" and isinstance(event, dict):
            send_body = json.dumps(event, indent=2, ensure_ascii=False).encode()
        headers = []
        for k, v in ctx.headers:
            kl = k.lower()
            if kl in ("content-type", "user-agent", "accept") or kl.startswith("x-"):
                if kl == "x-webhook-signature":
                    continue
                headers.append((k, v))
        if sig is not None:
            headers.append(("x-webhook-signature", sig))
        return self.post_to(target, headers, send_body)

    def event_defect(self, e):
        d = self.defect
        campaign = "campaign_id" in e and "retry_attempt" in e
        outbound = "channel_info" in e
        if d == "outbound_event_metadata_dropped" and outbound and isinstance(e.get("webhook_config"), dict):
            e["webhook_config"].pop("metadata", None)
        elif d == "outbound_event_not_sent" and outbound:
            return None
        elif d == "event_retry_attempt_one_based" and campaign and isinstance(e.get("retry_attempt"), int):
            e["retry_attempt"] += 1
        elif d == "event_next_action_status_null" and campaign:
            e["next_action_status"] = None
        elif d == "event_short_call_completed" and campaign and e.get("completion_status") == "partial":
            e["completion_status"] = "completed"
        elif d == "event_duration_milliseconds" and (campaign or outbound) \
                and isinstance(e.get("duration"), (int, float)):
            e["duration"] = int(round(e["duration"] * 1000))
        elif d == "event_executed_at_ist_as_utc" and campaign:
            t = parse_ts(e.get("executed_at"))
            if t:
                e["executed_at"] = fmt_ts(t + dt.timedelta(hours=5, minutes=30))
        elif d == "event_only_final_attempts" and campaign and e.get("next_action_status") is not None:
            return None
        return e

    @staticmethod
    def post_to(url, headers, body):
        s = urllib.parse.urlsplit(url)
        cls = http.client.HTTPSConnection if s.scheme == "https" else http.client.HTTPConnection
        try:
            conn = cls(s.hostname, s.port, timeout=10)
            target = (s.path or "/") + ("?" + s.query if s.query else "")
            conn.putrequest("POST", target)
            for k, v in headers:
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            conn.send(body)
            r = conn.getresponse()
            data = r.read()
            conn.close()
            return Resp(r.status, [("content-type", r.getheader("content-type") or "text/plain")], data)
        except OSError as e:
            return Resp(502, [("content-type", "text/plain")], ("receiver: %s" % e).encode())


# --------------------------------------------------------------------------- HTTP server

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy = None  # set by main

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("proxy: " + (fmt % args) + "\n")

    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                out.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(out)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def handle_any(self):
        try:
            body = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        ctx = Ctx(self.command, self.path, list(self.headers.items()), body)
        try:
            r = self.proxy.handle(ctx)
        except Exception as e:  # never hang a client on a bug of the proxy
            import traceback
            traceback.print_exc(file=sys.stderr)
            r = error_resp(502, "bad_gateway", "proxy_error", "proxy: %s" % e)
        self.send(r)

    def send(self, r):
        self.send_response_only(r.status, r.reason)
        close = False
        has_len = False
        for k, v in r.headers:
            kl = k.lower()
            if kl == "connection":
                if "close" in v.lower():
                    close = True
                continue
            if kl in HOP:
                continue
            if kl == "content-length":
                has_len = True
                continue
            self.send_header(k, v)
        head = self.command == "HEAD"
        no_body = head or r.status in (204, 304) or r.status < 200
        if head:
            cl = r.header("content-length")
            if cl is not None:
                self.send_header("Content-Length", cl)
        elif not no_body or has_len:
            self.send_header("Content-Length", str(0 if no_body else len(r.body)))
        if close or self.close_connection:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if not no_body and r.body:
            self.wfile.write(r.body)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    verbose = False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", help="the platform's base URL, http://127.0.0.1:PORT")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--defect", default=None, help="switch one contract break on (see --list-defects)")
    ap.add_argument("--webhook-secret", default=None,
                    help="the platform's webhook secret, to re-sign altered events")
    ap.add_argument("--rewrite-webhooks", action="store_true",
                    help="route webhook events through the proxy even when the defect does not need it")
    ap.add_argument("--list-defects", action="store_true", help="print the defects as JSON and exit")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    if a.list_defects:
        out = [{k: x[k] for k in ("name", "rule", "source", "what", "kind")} for x in DEFECTS]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if not a.upstream:
        ap.error("--upstream is required")
    if a.defect and a.defect not in DEFECT_BY_NAME:
        ap.error("unknown defect %r (see --list-defects)" % a.defect)
    host, _, port = a.listen.rpartition(":")
    proxy = Proxy(a.upstream.rstrip("/"), a.defect, a.webhook_secret, a.rewrite_webhooks)
    Handler.proxy = proxy
    srv = Server((host or "127.0.0.1", int(port)), Handler)
    srv.verbose = a.verbose
    bound_host, bound_port = srv.server_address[:2]
    proxy.hook_base = "http://%s:%d/__hooks/" % (bound_host, bound_port)
    print(json.dumps({"port": bound_port}), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
