//! The platform's operations, one function per operation for the generator (the functions
//! carry no code). Responses every operation shares (401, 413, 415, 404 of a route's parent
//! and the key-service answers) are added by [`super::refine`].
#![allow(dead_code)]

use crate::error::{PlatformErrorBody, ValidationErrorBody};
use crate::wire::*;

// ----- platform operations -----

#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "This document", content_type = "application/json")))]
fn openapi_document() {}

#[utoipa::path(post, path = "/api/outbounds/v1/orgs/{org_id}/workspaces/{workspace_id}/outbounds", tag = "outbound",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = OutboundRequest,
    responses(
        (status = 200, description = "The call is queued", body = OutboundResponse),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn create_outbound() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = CampaignCreateRequest,
    responses(
        (status = 200, description = "Created, status scheduled", body = CampaignSummary),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn create_campaign() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), CampaignListQuery),
    responses(
        (status = 200, description = "One page of campaigns", body = Page<CampaignSummary>),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_campaigns() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The campaign", body = Campaign),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody)
    ))]
fn get_campaign() {}

#[utoipa::path(patch, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body = CampaignPatchRequest,
    responses(
        (status = 200, description = "The updated campaign", body = Campaign),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "Not scheduled or paused", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn patch_campaign() {}

#[utoipa::path(put, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/status", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body = CampaignStatusRequest,
    responses(
        (status = 200, description = "The campaign in its new status", body = Campaign),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "The action is not allowed in the current status", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn set_campaign_status() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/upload", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body(content = CohortUploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "Accepted, status processing", body = Cohort),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "The campaign has ended or was cancelled", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn upload_campaign_cohort() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/stream", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body = CohortStreamRequest,
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "The campaign has ended or was cancelled", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn stream_campaign_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "The campaign's cohorts in upload order", body = Page<Cohort>),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_campaign_cohorts() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/{cohort_id}", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), ("cohort_id" = String, Path)),
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 404, description = "No such campaign or cohort", body = PlatformErrorBody)
    ))]
fn get_campaign_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/{cohort_id}/files", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), ("cohort_id" = String, Path), CohortFilesQuery),
    responses(
        (status = 200, description = "The file: text/csv for cohort and rejected_records, application/json for cohort_transformation", content_type = "text/csv"),
        (status = 404, description = "No such campaign, cohort or file", body = PlatformErrorBody),
        (status = 409, description = "The cohort is still processing", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn get_campaign_cohort_file() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/upload", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body(content = CohortUploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "Accepted, status processing", body = Cohort),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn upload_deployment_cohort() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/stream", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body = CohortStreamRequest,
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn stream_deployment_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "The deployment's cohorts in upload order", body = Page<Cohort>),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_deployment_cohorts() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/{cohort_id}", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path), ("cohort_id" = String, Path)),
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 404, description = "No such deployment or cohort", body = PlatformErrorBody)
    ))]
fn get_deployment_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/{cohort_id}/files", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path), ("cohort_id" = String, Path), CohortFilesQuery),
    responses(
        (status = 200, description = "The file: text/csv for cohort and rejected_records, application/json for cohort_transformation", content_type = "text/csv"),
        (status = 404, description = "No such deployment, cohort or file", body = PlatformErrorBody),
        (status = 409, description = "The cohort is still processing", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn get_deployment_cohort_file() {}

#[utoipa::path(post, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = DeploymentCreateRequest,
    responses(
        (status = 200, description = "Created, status active", body = Deployment),
        (status = 409, description = "A phone number already belongs to another deployment of this workspace", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn create_deployment() {}

#[utoipa::path(get, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), DeploymentListQuery),
    responses(
        (status = 200, description = "One page of deployments", body = Page<DeploymentListItem>),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_deployments() {}

#[utoipa::path(get, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    responses(
        (status = 200, description = "The deployment", body = Deployment),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody)
    ))]
fn get_deployment() {}

#[utoipa::path(patch, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body = DeploymentPatchRequest,
    responses(
        (status = 200, description = "The updated deployment", body = Deployment),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 409, description = "A phone number already belongs to another deployment of this workspace", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn patch_deployment() {}

#[utoipa::path(put, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/status", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body = DeploymentStatusRequest,
    responses(
        (status = 200, description = "The deployment in its new status", body = Deployment),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 409, description = "Already in that status", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn set_deployment_status() {}

#[utoipa::path(delete, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    responses(
        (status = 204, description = "Deleted, permanently"),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody)
    ))]
fn delete_deployment() {}

// ----- simulation operations (the harness's own) -----

#[utoipa::path(get, path = "/sim/v1/clock", tag = "simulation",
    responses(
        (status = 200, description = "The platform's time: one clock per platform, shared by every workspace (a workspace's reset leaves it alone)", body = SimClockState),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key, or a clock admin key)", body = PlatformErrorBody)
    ))]
fn sim_get_clock() {}

#[utoipa::path(put, path = "/sim/v1/clock", tag = "simulation",
    request_body = ClockSetRequest,
    responses(
        (status = 200, description = "Set; every step due up to the new time ran first", body = ClockAdvanceResult),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key, or a clock admin key)", body = PlatformErrorBody),
        (status = 403, description = "The platform restricts moving the clock to its clock admin keys (`--clock-admin-key`), and this is a workspace's key", body = PlatformErrorBody),
        (status = 409, description = "The platform runs on the real clock, or the time is in the past", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_set_clock() {}

#[utoipa::path(post, path = "/sim/v1/clock/advance", tag = "simulation",
    request_body = ClockAdvanceRequest,
    responses(
        (status = 200, description = "Advanced; every step due up to the new time ran first", body = ClockAdvanceResult),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key, or a clock admin key)", body = PlatformErrorBody),
        (status = 403, description = "The platform restricts moving the clock to its clock admin keys (`--clock-admin-key`), and this is a workspace's key", body = PlatformErrorBody),
        (status = 409, description = "The platform runs on the real clock, or the time is in the past", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_advance_clock() {}

#[utoipa::path(post, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/inbound-calls", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = InboundCallRequest,
    responses(
        (status = 200, description = "How the platform handled the call (answered or not, and why)", body = InboundCallRecord),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_inbound_call() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/inbound-calls", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "Inbound calls of the workspace, oldest first", body = Page<InboundCallRecord>),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_inbound_calls() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/webhook-deliveries", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "Webhook deliveries of the workspace, oldest first", body = Page<WebhookDeliveryRecord>),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_webhook_deliveries() {}

#[utoipa::path(post, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/reset", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    responses(
        (status = 200, description = "The workspace is empty for the next test: its campaigns, deployments, cohorts, calls, inbound calls, webhook deliveries, request-journal entries and the fault rules its key added are removed, in one call, without a restart. Other workspaces, the workspace's data keys and the simulated clock (one per platform, shared by every workspace) are untouched. The workspace's key, or an operator's (a clock or journal admin key); no body is read.", body = WorkspaceReset),
        (status = 401, description = "Missing or wrong X-API-Key (the workspace's key, or an operator's key)", body = PlatformErrorBody)
    ))]
fn sim_reset_workspace() {}

#[utoipa::path(get, path = "/sim/v1/journal", tag = "simulation",
    params(JournalQuery),
    responses(
        (status = 200, description = "Requests to the interface (and to paths that serve nothing) with their verdicts, oldest first: those of the key's workspace, or every workspace's for an operator's key (a clock or journal admin key, or one that opens every workspace)", body = Page<JournalEntry>),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_journal() {}

#[utoipa::path(delete, path = "/sim/v1/journal", tag = "simulation",
    responses(
        (status = 204, description = "Emptied what the key sees: its workspace's entries, counts and coverage start again (also in the database when kept there), other workspaces' stay; an operator's key empties the whole journal, and entry numbers start again from 1"),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody)
    ))]
fn sim_reset_journal() {}

#[utoipa::path(get, path = "/sim/v1/journal/summary", tag = "simulation",
    responses(
        (status = 200, description = "API coverage per operation of this document, verdict counts, operations never called, documented statuses never produced, requests answered 404 for ids that do not exist: of the key's workspace's requests, or of all for an operator's key", body = JournalSummary),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody)
    ))]
fn sim_journal_summary() {}

#[utoipa::path(get, path = "/sim/v1/faults", tag = "simulation",
    params(CohortListQuery),
    responses(
        (status = 200, description = "The fault rules the key sees (those its workspace's key added; every rule for an operator's key), in the order they are tried", body = Page<FaultRuleState>),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_faults() {}

#[utoipa::path(post, path = "/sim/v1/faults", tag = "simulation",
    request_body = FaultRule,
    responses(
        (status = 200, description = "Added after the existing rules: with a workspace's key, applying to that workspace's requests only (`applies_to`); with an operator's key, to every request", body = FaultRuleState),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody),
        (status = 422, description = "Validation failed (also: a workspace's rule whose org_id or workspace_id names a workspace its key does not open)", body = ValidationErrorBody)
    ))]
fn sim_add_fault() {}

#[utoipa::path(delete, path = "/sim/v1/faults/{fault_id}", tag = "simulation",
    params(("fault_id" = String, Path)),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody),
        (status = 404, description = "No such rule that the key sees", body = PlatformErrorBody)
    ))]
fn sim_delete_fault() {}

#[utoipa::path(delete, path = "/sim/v1/faults", tag = "simulation",
    responses(
        (status = 204, description = "Every rule the key sees removed: its workspace's rules; for an operator's key every rule (those of the configuration file too)"),
        (status = 401, description = "Missing or wrong X-API-Key (a workspace's key, or an operator's key)", body = PlatformErrorBody)
    ))]
fn sim_reset_faults() {}

#[utoipa::path(get, path = "/healthz", tag = "meta", security(()),
    responses(
        (status = 200, description = "Serving: the routes answer and the database reads", body = Health),
        (status = 503, description = "The database does not answer (`database_unavailable`)", body = PlatformErrorBody)
    ))]
fn health() {}

// ----- admin operations (the harness's own) -----

#[utoipa::path(get, path = "/admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys", tag = "admin",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    responses(
        (status = 200, description = "The workspace's data keys, oldest first; the last is active. No key material.", body = DataKeyList)
    ))]
fn admin_list_data_keys() {}

#[utoipa::path(post, path = "/admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys/rotate", tag = "admin",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    responses(
        (status = 200, description = "A new data key from the workspace's key service (BYOK: rotate-key) is active: new data is sealed with it, older data stays readable with the older keys. No body is read; no key material is answered.", body = DataKeyInfo),
        (status = 502, description = "The key service refused (code key_service_refused)", body = PlatformErrorBody),
        (status = 503, description = "The key service is unavailable (code key_service_unavailable); nothing changed", body = PlatformErrorBody)
    ))]
fn admin_rotate_data_key() {}

// ----- the live page (the harness's own) -----

#[utoipa::path(get, path = "/ui", tag = "meta", security(()),
    responses((status = 200, description = "The live page: a read-only view of this platform (the stack, the request journal, campaigns, deployments, data keys and the key service's audit, webhook deliveries) that asks for an API key, keeps it in the tab's session storage and reads the JSON routes of this document with it. `/ui#key=KEY&org=ORG&workspace=WORKSPACE` opens it on a workspace (the fragment never leaves the browser). Its files are served under /ui/.", content_type = "text/html")))]
fn live_page() {}

#[utoipa::path(get, path = "/sim/v1/stack", tag = "simulation",
    responses(
        (status = 200, description = "The platform as the key sees it: its address, the workspaces the key opens, the clock (whether the key may move it, when the next event is due), the seed (to an operator's key), the customer key services of those workspaces without secrets", body = StackView),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key, or a clock admin key)", body = PlatformErrorBody)
    ))]
fn sim_stack() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/activity", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The campaign's status changes so far and its dials over time, ended ones by outcome and those in progress, from its start to now (at most its end), with its calling windows", body = CampaignActivity),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody)
    ))]
fn sim_campaign_activity() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/chart", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), LiveChartQuery),
    responses(
        (status = 200, description = "The campaign's activity drawn as the scenario report draws its chart (one drawing for both), `width` pixels wide: dials per time bucket stacked by outcome, then those in progress, calling windows shaded in grey, status changes since the start as dashed lines numbered as in the activity's status_changes (from 1). Self-contained SVG: no script, no style sheet.", content_type = "image/svg+xml", body = String),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_campaign_chart() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/key-service/calls", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), KeyServiceCallsQuery),
    responses(
        (status = 200, description = "The calls the workspace's customer key service received (auth, decrypt-key, rotate-key), oldest first, with their outcomes, latency and faults, as its audit recorded them; never a key, secret or token. Only for the workspace `harness up` wires to the key service it runs.", body = KeyServiceCalls),
        (status = 404, description = "No audit of this workspace's key service here (`key_service_audit_not_available`): `platform serve`, or another workspace", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_key_service_calls() {}
