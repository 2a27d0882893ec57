//! Every rule of the interface spec, by the spec's section, with the checks that prove it
//! over HTTP or why none does.

use super::Rule;
use super::Why::{OtherCommand, OwnChoice};

const RULES: &str = "Rules";
const SERVICE: &str = "What the service does";
const CAMPAIGN: &str = "Resources: campaign";
const COHORT: &str = "Resources: cohort";
const DEPLOYMENT: &str = "Resources: deployment";
const PAGE: &str = "Resources: paginated deployment list";
const KEYS: &str = "Resources: access token, key decryption";
const CAMPAIGN_STATES: &str = "States: campaign";
const COHORT_STATES: &str = "States: cohort";
const DEPLOYMENT_STATES: &str = "States: deployment";
const ENDPOINTS: &str = "Endpoints";
const QUERY: &str = "Endpoints: list query parameters";
const AUTH: &str = "Authentication";
const EVENTS: &str = "Events";
const ERRORS: &str = "Errors";
const LIMITS: &str = "Limits";
const VERSIONING: &str = "Versioning";

const BYOK: &str = "the customer-hosted key endpoints are called by the platform, not through its API: `harness check byok` judges a key service, the platform's own tests its client";

/// The spec's rules.
pub(super) const SPEC: &[Rule] = &[
    Rule::spec(
        RULES,
        "1. Each dial is one attempt (busy, no answer, short and connected alike); max_retries N allows N+1 attempts per user",
        &["sim.rule1_attempts"],
    ),
    Rule::spec(
        RULES,
        "2. attempts_per_second is a dial rate, not an answer rate",
        &["sim.rule2_dial_rate"],
    ),
    Rule::spec(
        RULES,
        "3. Budget = cohort_size x (1 + max_retries); when rate x window time is below it, some users do not finish before the end",
        &["sim.rule3_budget"],
    ),
    Rule::spec(
        RULES,
        "4. Dials are split by the connection_configs' weights (3 and 1: 75 % and 25 %); the numbers of one connection are used equally",
        &["sim.rule4_weights"],
    ),
    Rule::spec(
        RULES,
        "5. A connected call shorter than threshold_seconds is short-duration, retried when short_duration is in retry_on",
        &["sim.rule5_short_duration"],
    ),
    Rule::spec(
        RULES,
        "6. Deleting a deployment is permanent and stops its inbound handling at once; pausing is the reversible alternative",
        &[
            "states.deployment_delete_final",
            "states.deployment_delete_paused",
            "sim.rule6_delete_stops_inbound",
            "sim.inbound_paused_not_answered",
        ],
    ),
    Rule::spec(
        SERVICE,
        "An instant outbound request starts one call; the answer carries attempt_id",
        &["endpoints.outbound_create", "sim.outbound_event"],
    ),
    Rule::spec(
        SERVICE,
        "A campaign is created scheduled and activates by itself at start_timestamp",
        &[
            "states.campaign_created_scheduled",
            "sim.campaign_activates",
        ],
    ),
    Rule::spec(
        SERVICE,
        "Cohorts can be uploaded before the start, while active, or after a pause; each is processed and queued for calling",
        &[
            "endpoints.campaign_cohort_upload",
            "sim.cohort_upload_active",
            "cohorts.upload_to_paused_campaign",
        ],
    ),
    Rule::spec(
        SERVICE,
        "Calls are placed only inside allowed_schedule",
        &[
            "sim.calling_window",
            "sim.window_zones",
            "sim.window_days",
            "oracle.campaign_events",
        ],
    ),
    Rule::spec(
        SERVICE,
        "An inbound call is answered only when its deployment is active and inside its schedule; without inbound_config at all times",
        &[
            "sim.inbound_paused_not_answered",
            "sim.inbound_outside_schedule",
            "sim.inbound_zones",
            "sim.inbound_days",
            "sim.inbound_cohort_variables",
        ],
    ),
    Rule::spec(
        SERVICE,
        "A caller whose number matches a user of an uploaded cohort reaches the agent with that user's variables",
        &["sim.inbound_cohort_variables"],
    ),
    Rule::none(
        SERVICE,
        "The platform exchanges client credentials for a token and decrypts data keys with the customer's key service, caching the plaintext key for a short time",
        OtherCommand,
        BYOK,
    ),
    Rule::spec(
        CAMPAIGN,
        "The campaign create request: name, agent configuration, start and end, allowed_schedule, optional description, rate, retry_config, weighted connection_configs",
        &["endpoints.campaign_create", "limits.campaign_start_min"],
    ),
    Rule::spec(
        CAMPAIGN,
        "retry_config.retry_on lists the outcomes to retry, short_duration among them",
        &["sim.rule1_attempts", "sim.rule5_short_duration"],
    ),
    Rule::spec(
        CAMPAIGN,
        "The campaign summary (create answer, list entries): campaign_id, name, status, agent id, type and version, description, creator, updater, creation and update times; status one of ended, active, paused, scheduled, cancelled",
        &["endpoints.campaign_create", "endpoints.campaign_list"],
    ),
    Rule::spec(
        COHORT,
        "A cohort has cohort_id, status (processing, completed, failed) and result.rejected_records",
        &["endpoints.campaign_cohort_get", "cohorts.upload_completes"],
    ),
    Rule::spec(
        COHORT,
        "When result.rejected_records is above 0, the rejected records are a file with file_type=rejected_records",
        &[
            "cohorts.rejected_records_file",
            "endpoints.campaign_cohort_file",
            "endpoints.deployment_cohort_file",
        ],
    ),
    Rule::spec(
        DEPLOYMENT,
        "The deployment create request: name, app_id, app_version, connection_configs required; description and inbound_config optional",
        &[
            "endpoints.deployment_create",
            "limits.deployment_connection_configs_min",
        ],
    ),
    Rule::spec(
        DEPLOYMENT,
        "The deployment answer: deployment_id, app_id, app_version, connection_configs, channel_direction (inbound, outbound, inbound_outbound), created_by, created_at, updated_at required; name, status (active, paused), description, inbound_config, updated_by optional",
        &["endpoints.deployment_create", "endpoints.deployment_get"],
    ),
    Rule::spec(
        DEPLOYMENT,
        "List items also show phone_numbers",
        &["endpoints.deployment_list", "pagination.walk"],
    ),
    Rule::spec(
        DEPLOYMENT,
        "InboundConfig: start_time and end_time (HH:MM), allowed_days (weekday names), timezone (IANA)",
        &[
            "states.deployment_patch_applies",
            "sim.inbound_outside_schedule",
            "sim.inbound_zones",
            "sim.inbound_days",
        ],
    ),
    Rule::spec(
        PAGE,
        "A page has items, total (matches of the query), limit and offset",
        &["pagination.totals", "pagination.search"],
    ),
    Rule::spec(
        PAGE,
        "next_page_uri is null on the last page",
        &[
            "pagination.next_null_on_last_page",
            "pagination.walk",
            "pagination.campaign_list",
        ],
    ),
    Rule::spec(
        PAGE,
        "prev_page_uri is null on the first page",
        &[
            "pagination.prev_null_on_first_page",
            "pagination.walk",
            "pagination.campaign_list",
        ],
    ),
    Rule::none(
        KEYS,
        "data.access_token, data.token_type (Bearer), data.expires_in; data.key_alias and data.encrypted_key (byok:v1:) to data.plaintext_key",
        OtherCommand,
        BYOK,
    ),
    Rule::spec(
        CAMPAIGN_STATES,
        "(none) -> scheduled on create, with campaign_id",
        &[
            "states.campaign_created_scheduled",
            "endpoints.campaign_create",
        ],
    ),
    Rule::spec(
        CAMPAIGN_STATES,
        "scheduled -> active when start_timestamp is reached",
        &["sim.campaign_activates"],
    ),
    Rule::spec(
        CAMPAIGN_STATES,
        "active -> ended when the time window expires",
        &["sim.campaign_ends", "sim.campaign_ended_is_final"],
    ),
    Rule::spec(
        CAMPAIGN_STATES,
        "any -> paused with the pause action",
        &["states.campaign_pause_resume", "sim.campaign_pause_active"],
    ),
    Rule::spec(
        CAMPAIGN_STATES,
        "paused -> active with the resume action",
        &[
            "states.campaign_pause_resume",
            "sim.campaign_resume_after_start",
        ],
    ),
    Rule::spec(
        CAMPAIGN_STATES,
        "any -> cancelled with the cancel action; the campaign stops",
        &[
            "states.campaign_cancel",
            "states.campaign_cancelled_is_final",
            "sim.campaign_cancel_running",
        ],
    ),
    Rule::spec(
        COHORT_STATES,
        "(none) -> processing on upload, with cohort_id",
        &["cohorts.upload_answers_processing"],
    ),
    Rule::spec(
        COHORT_STATES,
        "processing -> completed when processing succeeds; result.rejected_records available",
        &["cohorts.upload_completes"],
    ),
    Rule::spec(
        COHORT_STATES,
        "processing -> failed when processing fails",
        &["cohorts.missing_column_fails"],
    ),
    Rule::spec(
        DEPLOYMENT_STATES,
        "(none) -> active on create; calls routed at once",
        &[
            "states.deployment_created_active",
            "sim.inbound_cohort_variables",
        ],
    ),
    Rule::spec(
        DEPLOYMENT_STATES,
        "active -> paused with the pause action; calls not answered",
        &[
            "states.deployment_pause_resume",
            "sim.inbound_paused_not_answered",
        ],
    ),
    Rule::spec(
        DEPLOYMENT_STATES,
        "paused -> active with the resume action",
        &[
            "states.deployment_pause_resume",
            "sim.inbound_paused_not_answered",
        ],
    ),
    Rule::spec(
        DEPLOYMENT_STATES,
        "active or paused -> removed by DELETE, permanently",
        &[
            "states.deployment_delete_final",
            "states.deployment_delete_paused",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "POST .../outbounds",
        &["endpoints.outbound_create", "oracle.create_outbound"],
    ),
    Rule::spec(
        ENDPOINTS,
        "POST /campaigns answers a summary with status scheduled",
        &[
            "endpoints.campaign_create",
            "states.campaign_created_scheduled",
            "oracle.create_campaign",
            "oracle.list_campaigns",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "POST /campaigns/{id}/cohorts/upload answers cohort_id and status processing",
        &[
            "endpoints.campaign_cohort_upload",
            "cohorts.upload_answers_processing",
            "oracle.upload_campaign_cohort",
            "oracle.stream_campaign_cohort",
            "oracle.list_campaign_cohorts",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "GET /campaigns/{id}/cohorts/{cohort_id}",
        &[
            "endpoints.campaign_cohort_get",
            "cohorts.read_only_under_its_campaign",
            "oracle.get_campaign_cohort",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "GET /campaigns/{id}/cohorts/{cohort_id}/files?file_type=rejected_records",
        &[
            "endpoints.campaign_cohort_file",
            "cohorts.rejected_records_file",
            "cohorts.read_only_under_its_campaign",
            "oracle.get_campaign_cohort_file",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "GET /campaigns/{id}",
        &[
            "endpoints.campaign_get",
            "oracle.get_campaign",
            "oracle.patch_campaign",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "PUT /campaigns/{id}/status (pause, resume, cancel)",
        &[
            "endpoints.campaign_status",
            "states.campaign_pause_resume",
            "states.campaign_cancel",
            "oracle.set_campaign_status",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "GET .../deployments (the paginated list)",
        &[
            "endpoints.deployment_list",
            "pagination.totals",
            "oracle.list_deployments",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "DELETE .../deployments/{deployment_id}; on failure {error: {message, type, code}}",
        &[
            "endpoints.deployment_delete",
            "errors.deployment_delete_error_shape",
            "oracle.delete_deployment",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "POST /deployments answers the deployment with status active",
        &[
            "endpoints.deployment_create",
            "states.deployment_created_active",
            "oracle.create_deployment",
            "oracle.get_deployment",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "POST /deployments/{id}/cohorts/upload",
        &[
            "endpoints.deployment_cohort_upload",
            "oracle.upload_deployment_cohort",
            "oracle.stream_deployment_cohort",
            "oracle.list_deployment_cohorts",
            "oracle.get_deployment_cohort",
            "oracle.get_deployment_cohort_file",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "PUT /deployments/{id}/status with {action: pause} answers the updated deployment",
        &[
            "endpoints.deployment_status",
            "states.deployment_pause_resume",
            "oracle.set_deployment_status",
        ],
    ),
    Rule::spec(
        ENDPOINTS,
        "PATCH /deployments/{id}: a partial update; app_version, the schedule and the agent version can change",
        &[
            "endpoints.deployment_patch",
            "states.deployment_patch_applies",
            "oracle.patch_deployment",
        ],
    ),
    Rule::spec(
        QUERY,
        "offset: a skip count, at least 0",
        &["limits.list_offset_min", "pagination.totals"],
    ),
    Rule::spec(
        QUERY,
        "limit: 1 to 100",
        &[
            "limits.list_limit_min",
            "limits.list_limit_max",
            "pagination.totals",
        ],
    ),
    Rule::spec(
        QUERY,
        "sort field and sort order (asc or desc)",
        &["pagination.sort_order", "pagination.sort_by_name"],
    ),
    Rule::spec(
        QUERY,
        "search: a search query",
        &["pagination.search", "pagination.campaign_list"],
    ),
    Rule::spec(
        AUTH,
        "Every platform endpoint requires the X-API-Key header",
        &[
            "auth.no_key",
            "auth.wrong_key",
            "auth.other_workspace_key",
            "auth.other_workspace_ids",
            "auth.list_isolation",
        ],
    ),
    Rule::none(
        AUTH,
        "/auth takes HTTP Basic client credentials; /decrypt-key a Bearer token or static key; the token is reused until it expires",
        OtherCommand,
        BYOK,
    ),
    Rule::spec(
        EVENTS,
        "The outbound call request accepts webhook_config (url, metadata)",
        &["sim.outbound_event", "oracle.outbound_events"],
    ),
    Rule::spec(
        ERRORS,
        "Instant outbound validation: {detail: [{loc: [...], msg, type}]}, loc the path to the offending field",
        &["errors.outbound_validation_shape"],
    ),
    Rule::spec(
        ERRORS,
        "Deployment list and delete errors: {error: {message, type, code}}, all strings",
        &[
            "errors.deployment_list_error_shape",
            "errors.deployment_delete_error_shape",
        ],
    ),
    Rule::none(
        ERRORS,
        "Customer-hosted endpoints: {error: {code, message}}, SERVICE_UNAVAILABLE",
        OtherCommand,
        BYOK,
    ),
    Rule::spec(
        LIMITS,
        "Campaign start_timestamp: at least 120 s and at most 7 days from now",
        &["limits.campaign_start_min", "limits.campaign_start_max"],
    ),
    Rule::spec(
        LIMITS,
        "Campaign end_timestamp: at least 120 s and at most 30 days after start_timestamp",
        &["limits.campaign_end_min", "limits.campaign_end_max"],
    ),
    Rule::spec(
        LIMITS,
        "attempts_per_second: 0.1 to 500",
        &[
            "limits.attempts_per_second_min",
            "limits.attempts_per_second_max",
        ],
    ),
    Rule::spec(
        LIMITS,
        "retry_config.threshold_seconds: 1 to 1200 seconds",
        &[
            "limits.threshold_seconds_min",
            "limits.threshold_seconds_max",
        ],
    ),
    Rule::spec(
        LIMITS,
        "Campaign description: at most 150 characters",
        &["limits.campaign_description_max"],
    ),
    Rule::spec(
        LIMITS,
        "Deployment name: at most 50 characters, pattern ^[\\w\\- ]{1,50}$",
        &[
            "limits.deployment_name_max",
            "limits.deployment_name_pattern",
        ],
    ),
    Rule::spec(
        LIMITS,
        "Deployment description: at most 150 characters",
        &["limits.deployment_description_max"],
    ),
    Rule::spec(
        LIMITS,
        "Deployment connection_configs: at least 1 entry",
        &["limits.deployment_connection_configs_min"],
    ),
    Rule::spec(
        LIMITS,
        "Deployment list limit: 1 to 100",
        &["limits.list_limit_min", "limits.list_limit_max"],
    ),
    Rule::spec(
        LIMITS,
        "Deployment list offset: at least 0",
        &["limits.list_offset_min", "pagination.walk"],
    ),
    Rule::none(
        LIMITS,
        "Rate limits of the platform API, the maximum of max_retries, the largest cohort: not shown",
        OwnChoice,
        "the spec gives no values; this mock's choices are recorded below and not asked of a target",
    ),
    Rule::spec(
        VERSIONING,
        "Platform paths carry v1; agents have an integer app_version that a campaign, an outbound call or a deployment selects",
        &["endpoints.*", "states.deployment_patch_applies"],
    ),
    Rule::none(
        VERSIONING,
        "The encrypted key text carries the prefix byok:v1:",
        OtherCommand,
        BYOK,
    ),
];
