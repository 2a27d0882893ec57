//! Every row of the rule, limit and state tables of `docs/interface.md` (the sections in
//! [`super::RECORD_SECTIONS`]), by its section and point, with the checks that prove it over
//! HTTP or why none does.

use super::Rule;
use super::Why::{NotObservable, OtherCommand, OwnChoice};

const OPEN: &str = "The spec's numbered open points";
const FIELDS: &str = "Fields the spec marks \"not shown\"";
const COHORTS: &str = "Cohorts";
const TIME: &str = "Time, calling windows, numbers";
const VALIDATION: &str = "Validation and errors";
const EVENTS: &str = "Events";
const DIALLING: &str = "Dialling";
const OUTCOMES: &str = "Outcomes and retries";
const LIFE: &str = "Campaign life cycle in time";
const STOP: &str = "Stop files";
const INBOUND: &str = "Inbound calls";

const MOCK: &str = "how this mock answers where the interface is silent; another platform may answer otherwise without breaking the contract";

/// The recorded points.
pub(super) const RECORD: &[Rule] = &[
    Rule::record(
        OPEN,
        "Campaign path prefix",
        &["endpoints.campaign_create", "endpoints.campaign_get"],
    ),
    Rule::record(
        OPEN,
        "Names of the sort query parameters",
        &["pagination.sort_order", "pagination.sort_by_name"],
    ),
    Rule::record(
        OPEN,
        "Body of the campaign status update",
        &[
            "endpoints.campaign_status",
            "states.campaign_pause_resume",
            "states.campaign_cancel",
        ],
    ),
    Rule::record(
        OPEN,
        "Deployment PATCH fields beyond `app_version`",
        &[
            "endpoints.deployment_patch",
            "states.deployment_patch_applies",
            "states.deployment_patch_null_clears",
            "states.deployment_app_id_fixed",
        ],
    ),
    Rule::record(
        OPEN,
        "Cohort upload encoding and response",
        &[
            "endpoints.campaign_cohort_upload",
            "cohorts.upload_answers_processing",
        ],
    ),
    Rule::record(OPEN, "Success status codes", &["endpoints.*"]),
    Rule::record(
        OPEN,
        "Bodies of status updates, deployment delete, campaign GET, rejected-records file",
        &[
            "endpoints.campaign_status",
            "endpoints.deployment_status",
            "endpoints.deployment_delete",
            "endpoints.campaign_get",
            "cohorts.rejected_records_file",
        ],
    ),
    Rule::none_record(
        OPEN,
        "Name of the tracing header",
        OtherCommand,
        "a header the platform sends to the customer's key service: `harness check byok`",
    ),
    Rule::record(
        OPEN,
        "Literal body for resuming",
        &[
            "states.campaign_pause_resume",
            "states.deployment_pause_resume",
        ],
    ),
    Rule::record(
        FIELDS,
        "Outbound request: which fields are required",
        &["errors.outbound_required_fields"],
    ),
    Rule::none_record(
        FIELDS,
        "Outbound phone numbers",
        OwnChoice,
        "the suite sends E.164 numbers and one that is no number at all; refusing national forms is this mock's choice",
    ),
    Rule::record(
        FIELDS,
        "Name of the campaign's agent configuration object",
        &["endpoints.campaign_create"],
    ),
    Rule::record(
        FIELDS,
        "Campaign `connection_configs[]`",
        &["endpoints.campaign_create", "sim.rule4_weights"],
    ),
    Rule::record(
        FIELDS,
        "`allowed_schedule` field names",
        &["sim.calling_window"],
    ),
    Rule::record(
        FIELDS,
        "Values of `retry_on`",
        &["sim.rule1_attempts", "sim.rule5_short_duration"],
    ),
    Rule::none_record(
        FIELDS,
        "`retry_on` object form",
        OwnChoice,
        "an input alias this mock accepts",
    ),
    Rule::record(FIELDS, "`retry_interval_minutes`", &["sim.retry_interval"]),
    Rule::none_record(FIELDS, "`retry_config` defaults", OwnChoice, MOCK),
    Rule::none_record(FIELDS, "Maximum of `max_retries`", OwnChoice, MOCK),
    Rule::record(
        FIELDS,
        "Campaign name",
        &["limits.campaign_and_cohort_name_pattern"],
    ),
    Rule::record(
        FIELDS,
        "Campaign summary field names",
        &["endpoints.campaign_create", "endpoints.campaign_list"],
    ),
    Rule::none_record(FIELDS, "`created_by` / `updated_by`", OwnChoice, MOCK),
    Rule::record(
        FIELDS,
        "Campaign PATCH",
        &[
            "endpoints.campaign_patch",
            "states.campaign_patch_states",
            "states.campaign_patch_merges",
            "states.campaign_start_fixed",
            "sim.campaign_patch_running_refused",
        ],
    ),
    Rule::record(
        FIELDS,
        "Campaign list",
        &[
            "pagination.campaign_list",
            "limits.campaign_list_limit_min",
            "limits.campaign_list_limit_max",
            "limits.campaign_list_offset_min",
        ],
    ),
    Rule::none_record(FIELDS, "List defaults", OwnChoice, MOCK),
    Rule::record(FIELDS, "Cohort CSV columns", &["cohorts.upload_completes"]),
    Rule::record(
        FIELDS,
        "Transformation config",
        &["cohorts.upload_completes", "cohorts.missing_column_fails"],
    ),
    Rule::record(FIELDS, "`country_code`", &["cohorts.upload_completes"]),
    Rule::record(
        FIELDS,
        "Whole-upload failures",
        &["cohorts.missing_column_fails"],
    ),
    Rule::none_record(
        FIELDS,
        "Transformation file that is not JSON or not a valid config",
        OwnChoice,
        "whether a bad config is refused at upload (here) or fails the cohort is a target's choice",
    ),
    Rule::record(
        FIELDS,
        "Row rejections",
        &["cohorts.upload_completes", "cohorts.rejected_records_file"],
    ),
    Rule::record(
        FIELDS,
        "Cohort record fields",
        &[
            "endpoints.campaign_cohort_get",
            "endpoints.deployment_cohort_get",
            "cohorts.upload_completes",
        ],
    ),
    Rule::record(
        FIELDS,
        "Cohort name",
        &["limits.campaign_and_cohort_name_pattern"],
    ),
    Rule::record(
        FIELDS,
        "Cohort stream body",
        &[
            "endpoints.campaign_cohort_stream",
            "limits.cohort_stream_users_min",
            "limits.cohort_stream_users_max",
        ],
    ),
    Rule::record(
        FIELDS,
        "Cohort list",
        &[
            "endpoints.campaign_cohort_list",
            "endpoints.deployment_cohort_list",
            "cohorts.list_only_its_campaign",
            "cohorts.list_upload_order",
            "oracle.assumptions",
        ],
    ),
    Rule::record(
        FIELDS,
        "Deployment connection config",
        &["endpoints.deployment_create"],
    ),
    Rule::record(
        FIELDS,
        "Deployment list",
        &[
            "pagination.totals",
            "pagination.sort_by_name",
            "pagination.search",
        ],
    ),
    Rule::record(
        FIELDS,
        "List `search`",
        &[
            "pagination.search",
            "pagination.campaign_list",
            "pagination.search_case",
            "pagination.search_words",
        ],
    ),
    Rule::none_record(FIELDS, "Agent version", OwnChoice, MOCK),
    Rule::none_record(
        FIELDS,
        "States of an outbound attempt",
        NotObservable,
        "the API does not expose them",
    ),
    Rule::record(
        FIELDS,
        "Source states of pause, resume, cancel",
        &[
            "states.campaign_pause_resume",
            "states.campaign_cancelled_is_final",
            "states.campaign_refusals_are_409",
            "sim.campaign_pause_active",
            "sim.campaign_resume_after_start",
            "sim.campaign_cancel_running",
            "sim.campaign_ended_is_final",
            "sim.campaign_ended_refusals_are_409",
        ],
    ),
    Rule::record(
        FIELDS,
        "Scopes, roles, issuing of `X-API-Key`",
        &["auth.other_workspace_key", "auth.other_workspace_ids"],
    ),
    Rule::record(
        COHORTS,
        "Upload parts",
        &[
            "endpoints.campaign_cohort_upload",
            "endpoints.deployment_cohort_upload",
        ],
    ),
    Rule::none_record(COHORTS, "Upload media type", OwnChoice, MOCK),
    Rule::none_record(
        COHORTS,
        "Upload size",
        OwnChoice,
        "the spec gives no largest upload; the suite sends small files",
    ),
    Rule::record(
        COHORTS,
        "Upload answer and durability",
        &["cohorts.upload_answers_processing"],
    ),
    Rule::record(
        COHORTS,
        "Campaign states that take cohorts",
        &[
            "cohorts.upload_to_paused_campaign",
            "cohorts.upload_to_paused_deployment",
            "sim.cohort_upload_active",
            "endpoints.deployment_cohort_upload",
        ],
    ),
    Rule::none_record(COHORTS, "Processing order", OwnChoice, MOCK),
    Rule::none_record(
        COHORTS,
        "CSV dialect",
        OwnChoice,
        "the suite's files are plain RFC 4180 (LF and CRLF line endings, spaces around values); the finer dialect is this mock's choice",
    ),
    Rule::none_record(COHORTS, "Row numbers", OwnChoice, MOCK),
    Rule::none_record(COHORTS, "Empty values", OwnChoice, MOCK),
    Rule::record(
        COHORTS,
        "Failure and rejection messages",
        &["cohorts.rejected_records_file"],
    ),
    Rule::record(
        COHORTS,
        "Rejected records file",
        &[
            "cohorts.rejected_records_file",
            "cohorts.files_byte_for_byte",
        ],
    ),
    Rule::record(
        COHORTS,
        "Files",
        &[
            "cohorts.uploaded_files",
            "cohorts.files_byte_for_byte",
            "oracle.assumptions",
        ],
    ),
    Rule::none_record(COHORTS, "File errors", OwnChoice, MOCK),
    Rule::record(
        COHORTS,
        "Stream answer",
        &[
            "endpoints.campaign_cohort_stream",
            "endpoints.deployment_cohort_stream",
            "cohorts.stream_country_code",
        ],
    ),
    Rule::none_record(COHORTS, "Stream files", OwnChoice, MOCK),
    Rule::record(COHORTS, "Stop files", &["sim.stop_file_excludes"]),
    Rule::record(
        COHORTS,
        "Callers of a deployment",
        &["sim.inbound_cohort_variables"],
    ),
    Rule::none_record(COHORTS, "Deleting a deployment", OwnChoice, MOCK),
    Rule::none_record(
        COHORTS,
        "Storage of cohort data",
        NotObservable,
        "how a platform stores data is not visible through its API",
    ),
    Rule::none_record(TIME, "Timestamps on input", OwnChoice, MOCK),
    Rule::record(TIME, "Timestamps on output", &["endpoints.*"]),
    Rule::record(
        TIME,
        "Start and end limits",
        &[
            "limits.campaign_start_min",
            "limits.campaign_start_max",
            "limits.campaign_end_min",
            "limits.campaign_end_max",
        ],
    ),
    Rule::record(
        TIME,
        "Calling windows",
        &[
            "sim.calling_window",
            "sim.window_days",
            "sim.window_overnight",
            "sim.inbound_days",
            "sim.inbound_overnight",
        ],
    ),
    Rule::record(
        TIME,
        "Daylight saving",
        &["sim.window_dst", "sim.inbound_dst"],
    ),
    Rule::record(
        TIME,
        "Weekday names",
        &[
            "states.deployment_patch_applies",
            "sim.calling_window",
            "sim.window_days",
            "sim.inbound_days",
        ],
    ),
    Rule::record(
        TIME,
        "Time zones",
        &[
            "states.deployment_patch_applies",
            "sim.window_zones",
            "sim.inbound_zones",
        ],
    ),
    Rule::record(
        TIME,
        "Cohort phone normalisation",
        &["cohorts.upload_completes"],
    ),
    Rule::record(
        VALIDATION,
        "Validation body",
        &[
            "errors.outbound_validation_shape",
            "errors.malformed_json",
            "limits.*",
        ],
    ),
    Rule::record(VALIDATION, "`loc` elements", &["limits.*"]),
    Rule::none_record(VALIDATION, "Validation `type` values", OwnChoice, MOCK),
    Rule::none_record(VALIDATION, "Type coercion", OwnChoice, MOCK),
    Rule::none_record(VALIDATION, "Unknown request fields", OwnChoice, MOCK),
    Rule::none_record(VALIDATION, "JSON media type", OwnChoice, MOCK),
    Rule::none_record(VALIDATION, "NUL in text", OwnChoice, MOCK),
    Rule::record(
        VALIDATION,
        "Other platform errors",
        &[
            "errors.deployment_list_error_shape",
            "errors.unknown_id_404",
            "errors.missing_key_401",
            "auth.refusals_are_401",
            "states.campaign_refusals_are_409",
            "states.deployment_same_status_409",
            "states.refusals_in_error_shape",
        ],
    ),
    Rule::none_record(
        VALIDATION,
        "Customer-hosted errors",
        OtherCommand,
        "the customer's key service answers these: `harness check byok`",
    ),
    Rule::none_record(VALIDATION, "Platform rate limits", OwnChoice, MOCK),
    Rule::none_record(VALIDATION, "HTTP layer refusals", OwnChoice, MOCK),
    Rule::none_record(
        VALIDATION,
        "Keep-alive after an early answer",
        OwnChoice,
        MOCK,
    ),
    Rule::none_record(VALIDATION, "Connections", OwnChoice, MOCK),
    Rule::none_record(VALIDATION, "Largest cohort upload", OwnChoice, MOCK),
    Rule::record(
        EVENTS,
        "Event kinds and payloads",
        &["sim.campaign_event_schema", "sim.outbound_event"],
    ),
    Rule::record(
        EVENTS,
        "`interaction_transcript`",
        &["sim.campaign_event_schema"],
    ),
    Rule::record(
        EVENTS,
        "`duration`",
        &["sim.campaign_event_schema", "sim.rule5_short_duration"],
    ),
    Rule::record(
        EVENTS,
        "Signing",
        &["sim.webhook_signatures", "sim.webhook_signature_form"],
    ),
    Rule::record(EVENTS, "Delivery", &["sim.webhook_retried"]),
    Rule::record(
        DIALLING,
        "What counts as an attempt",
        &["sim.rule1_attempts"],
    ),
    Rule::record(
        DIALLING,
        "Pacing",
        &["sim.rule2_dial_rate", "sim.calling_window"],
    ),
    Rule::none_record(
        DIALLING,
        "Floor",
        NotObservable,
        "it shows after a restart of the target, which the suite cannot make",
    ),
    Rule::record(
        DIALLING,
        "Calling window",
        &[
            "sim.calling_window",
            "sim.window_zones",
            "sim.window_days",
            "sim.rule3_budget",
        ],
    ),
    Rule::none_record(DIALLING, "Which user is dialled next", OwnChoice, MOCK),
    Rule::record(DIALLING, "Connection and number", &["sim.rule4_weights"]),
    Rule::none_record(DIALLING, "Events at one instant", OwnChoice, MOCK),
    Rule::record(
        DIALLING,
        "Instant outbound calls",
        &["endpoints.outbound_create", "sim.outbound_event"],
    ),
    Rule::record(OUTCOMES, "Short calls", &["sim.rule5_short_duration"]),
    Rule::none_record(
        OUTCOMES,
        "Voicemail",
        OwnChoice,
        "an outcome of this harness's simulated telephony",
    ),
    Rule::record(
        OUTCOMES,
        "Retry decision",
        &[
            "sim.rule1_attempts",
            "sim.retry_interval",
            "sim.rule5_short_duration",
        ],
    ),
    Rule::record(
        OUTCOMES,
        "`completion_status`",
        &["sim.campaign_event_schema"],
    ),
    Rule::record(
        OUTCOMES,
        "`connectivity_status`",
        &["sim.campaign_event_schema", "sim.rule5_short_duration"],
    ),
    Rule::record(
        OUTCOMES,
        "`next_action_status`",
        &["sim.rule1_attempts", "sim.rule5_short_duration"],
    ),
    Rule::none_record(OUTCOMES, "`failure_reason`", OwnChoice, MOCK),
    Rule::record(OUTCOMES, "`retry_attempt`", &["sim.rule1_attempts"]),
    Rule::none_record(
        OUTCOMES,
        "Conversation",
        OwnChoice,
        "a simulated conversation of this mock",
    ),
    Rule::record(
        LIFE,
        "Activation and end",
        &["sim.campaign_activates", "sim.campaign_ends"],
    ),
    Rule::record(
        LIFE,
        "Paused campaigns",
        &[
            "states.campaign_pause_resume",
            "sim.campaign_pause_active",
            "sim.campaign_resume_after_start",
        ],
    ),
    Rule::none_record(
        LIFE,
        "Pause",
        OwnChoice,
        "what happens to calls in progress and to the pace at a pause is this mock's choice; that a paused campaign stays paused is `sim.campaign_pause_active`",
    ),
    Rule::record(
        LIFE,
        "End and cancel",
        &["sim.rule3_budget", "sim.campaign_cancel_running"],
    ),
    Rule::record(
        LIFE,
        "Cohorts of a running campaign",
        &["sim.cohort_upload_active"],
    ),
    Rule::record(STOP, "What they exclude", &["sim.stop_file_excludes"]),
    Rule::none_record(STOP, "What they do not do", OwnChoice, MOCK),
    Rule::record(
        INBOUND,
        "Answering",
        &[
            "sim.inbound_paused_not_answered",
            "sim.inbound_outside_schedule",
            "sim.inbound_cohort_variables",
        ],
    ),
    Rule::record(
        INBOUND,
        "Not answered",
        &[
            "sim.inbound_paused_not_answered",
            "sim.inbound_outside_schedule",
            "sim.rule6_delete_stops_inbound",
        ],
    ),
    Rule::record(
        INBOUND,
        "Schedule rules",
        &[
            "sim.inbound_outside_schedule",
            "sim.inbound_zones",
            "sim.inbound_days",
            "sim.inbound_overnight",
            "sim.inbound_dst",
        ],
    ),
    Rule::record(
        INBOUND,
        "Personalisation",
        &["sim.inbound_cohort_variables"],
    ),
    Rule::none_record(
        INBOUND,
        "Timing",
        OwnChoice,
        "ring and talk times of this harness's simulated telephony",
    ),
    Rule::none_record(
        INBOUND,
        "Where the event goes",
        OwnChoice,
        "where a deployment's events go is configured in the platform, not through its API",
    ),
];
