//! The OpenAPI 3.1 documents of the interface, generated from the wire types.
//!
//! - [`platform_document`]: every platform endpoint (`X-API-Key`), committed as
//!   `contracts/openapi/platform.json` and served by the platform at `GET /openapi.json`.
//! - [`byok_document`]: the customer-hosted key endpoints, committed as
//!   `contracts/openapi/byok.json`.
//!
//! A test fails when the committed files differ from what the types generate; regenerate them
//! with `UPDATE_OPENAPI=1 cargo test -p contracts openapi`.
//!
//! The functions below carry no code: each documents one operation for the generator.
#![allow(dead_code)]

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::{
    ByokErrorBody, ErrorDetail, LocItem, PlatformErrorBody, PlatformErrorInfo, ValidationErrorBody,
};
use crate::wire::byok::{
    AuthForm, AuthResponse, DecryptKeyRequest, DecryptKeyResponse, RotateKeyRequest,
    RotateKeyResponse,
};
use crate::wire::*;

/// Path of the served platform document.
pub const OPENAPI_PATH: &str = "/openapi.json";

struct ApiKeyAuth;

impl Modify for ApiKeyAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "The workspace's API key.",
            ))),
        );
    }
}

struct ByokAuth;

impl Modify for ByokAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "client_credentials",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Basic)
                    .description(Some("Client id as user name, client secret as password."))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A JWT from /auth, or a long-lived static API key given at set-up.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The platform API.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Voice-agent calling platform",
        version = "v1",
        description = "Instant outbound calls, campaigns, cohorts and inbound deployments. Every route but /openapi.json requires X-API-Key."
    ),
    paths(
        openapi_document,
        create_outbound,
        create_campaign, list_campaigns, get_campaign, patch_campaign, set_campaign_status,
        upload_campaign_cohort, stream_campaign_cohort, list_campaign_cohorts, get_campaign_cohort, get_campaign_cohort_file,
        upload_deployment_cohort, stream_deployment_cohort, list_deployment_cohorts, get_deployment_cohort, get_deployment_cohort_file,
        create_deployment, list_deployments, get_deployment, patch_deployment, set_deployment_status, delete_deployment,
        sim_get_clock, sim_set_clock, sim_advance_clock, sim_inbound_call, sim_list_inbound_calls, sim_list_webhook_deliveries,
        admin_list_data_keys, admin_rotate_data_key,
        health,
        sim_list_journal, sim_reset_journal, sim_journal_summary,
        sim_list_faults, sim_add_fault, sim_delete_fault, sim_reset_faults,
    ),
    components(schemas(
        ValidationErrorBody, ErrorDetail, LocItem, PlatformErrorBody, PlatformErrorInfo,
        OutboundCallEvent, CampaignCallEvent, DeploymentCallEvent, TranscriptTurn, ChannelInfo,
        CallStatus, CompletionStatus, ConnectivityStatus, NextActionStatus,
        TransformationConfig, PhoneNumberMapping, ColumnMapping, OverrideMapping, OverrideMappings,
    )),
    modifiers(&ApiKeyAuth),
    security(("api_key" = [])),
    tags(
        (name = "outbound", description = "Instant outbound calls"),
        (name = "campaigns", description = "Campaigns: schedule, dial rate, retries, weighted connections"),
        (name = "cohorts", description = "Users of a campaign or a deployment"),
        (name = "deployments", description = "Inbound deployments"),
        (name = "meta", description = "This document"),
        (name = "simulation", description = "The harness's own simulation API (not part of the platform's interface): simulated time, inbound calls by hand, what the engine recorded"),
        (name = "admin", description = "The harness's own admin API (not part of the platform's interface): a workspace's data keys and their rotation")
    )
)]
pub struct PlatformApi;

/// The customer-hosted key endpoints.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Customer-hosted BYOK key service",
        version = "v1",
        description = "Endpoints the customer hosts and the platform calls: token exchange, data-key decryption and rotation. Every call carries x-request-id (UUID) and x-request-timestamp (ISO 8601), and may carry x-trace-id. Errors are {error:{code,message}}."
    ),
    paths(byok_auth, byok_decrypt_key, byok_rotate_key),
    components(schemas(ByokErrorBody, AuthForm)),
    modifiers(&ByokAuth)
)]
pub struct ByokApi;

/// The platform document.
pub fn platform_document() -> utoipa::openapi::OpenApi {
    PlatformApi::openapi()
}

/// The BYOK document.
pub fn byok_document() -> utoipa::openapi::OpenApi {
    ByokApi::openapi()
}

/// Pretty JSON of a document, with a final newline, as committed.
pub fn to_committed_json(doc: &utoipa::openapi::OpenApi) -> String {
    let mut s = doc.to_pretty_json().expect("OpenAPI documents serialise");
    s.push('\n');
    s
}

// ----- platform operations -----

#[utoipa::path(get, path = "/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "This document", content_type = "application/json")))]
fn openapi_document() {}

#[utoipa::path(post, path = "/api/outbounds/v1/orgs/{org_id}/workspaces/{workspace_id}/outbounds", tag = "outbound",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = OutboundRequest,
    responses(
        (status = 200, description = "The call is queued", body = OutboundResponse),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn create_outbound() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = CampaignCreateRequest,
    responses(
        (status = 200, description = "Created, status scheduled", body = CampaignSummary),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn create_campaign() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), CampaignListQuery),
    responses(
        (status = 200, description = "One page of campaigns", body = Page<CampaignSummary>),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_campaigns() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The campaign", body = Campaign),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody)
    ))]
fn get_campaign() {}

#[utoipa::path(patch, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body = CampaignPatchRequest,
    responses(
        (status = 200, description = "The updated campaign", body = Campaign),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "Not scheduled or paused", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn patch_campaign() {}

#[utoipa::path(put, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/status", tag = "campaigns",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body = CampaignStatusRequest,
    responses(
        (status = 200, description = "The campaign in its new status", body = Campaign),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
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
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "The campaign has ended or was cancelled", body = PlatformErrorBody),
        (status = 413, description = "Upload larger than the limit", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn upload_campaign_cohort() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/stream", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path)),
    request_body = CohortStreamRequest,
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 409, description = "The campaign has ended or was cancelled", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn stream_campaign_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "The campaign's cohorts in upload order", body = Page<Cohort>),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such campaign in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_campaign_cohorts() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/{cohort_id}", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), ("cohort_id" = String, Path)),
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such campaign or cohort", body = PlatformErrorBody)
    ))]
fn get_campaign_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/cohorts/{cohort_id}/files", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("campaign_id" = String, Path), ("cohort_id" = String, Path), CohortFilesQuery),
    responses(
        (status = 200, description = "The file: text/csv for cohort and rejected_records, application/json for cohort_transformation", content_type = "text/csv"),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
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
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 413, description = "Upload larger than the limit", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn upload_deployment_cohort() {}

#[utoipa::path(post, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/stream", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body = CohortStreamRequest,
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn stream_deployment_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "The deployment's cohorts in upload order", body = Page<Cohort>),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_deployment_cohorts() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/{cohort_id}", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path), ("cohort_id" = String, Path)),
    responses(
        (status = 200, description = "The cohort", body = Cohort),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment or cohort", body = PlatformErrorBody)
    ))]
fn get_deployment_cohort() {}

#[utoipa::path(get, path = "/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/cohorts/{cohort_id}/files", tag = "cohorts",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path), ("cohort_id" = String, Path), CohortFilesQuery),
    responses(
        (status = 200, description = "The file: text/csv for cohort and rejected_records, application/json for cohort_transformation", content_type = "text/csv"),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
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
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 409, description = "A phone number already belongs to another deployment of this workspace", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn create_deployment() {}

#[utoipa::path(get, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), DeploymentListQuery),
    responses(
        (status = 200, description = "One page of deployments", body = Page<DeploymentListItem>),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn list_deployments() {}

#[utoipa::path(get, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    responses(
        (status = 200, description = "The deployment", body = Deployment),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody)
    ))]
fn get_deployment() {}

#[utoipa::path(patch, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body = DeploymentPatchRequest,
    responses(
        (status = 200, description = "The updated deployment", body = Deployment),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 409, description = "A phone number already belongs to another deployment of this workspace", body = PlatformErrorBody),
        (status = 413, description = "Body too large", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn patch_deployment() {}

#[utoipa::path(put, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}/status", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    request_body = DeploymentStatusRequest,
    responses(
        (status = 200, description = "The deployment in its new status", body = Deployment),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody),
        (status = 409, description = "Already in that status", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn set_deployment_status() {}

#[utoipa::path(delete, path = "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments/{deployment_id}", tag = "deployments",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), ("deployment_id" = String, Path)),
    responses(
        (status = 204, description = "Deleted, permanently"),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 404, description = "No such deployment in this workspace", body = PlatformErrorBody)
    ))]
fn delete_deployment() {}

// ----- simulation operations (the harness's own) -----

#[utoipa::path(get, path = "/sim/v1/clock", tag = "simulation",
    responses(
        (status = 200, description = "The platform's time", body = SimClockState),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody)
    ))]
fn sim_get_clock() {}

#[utoipa::path(put, path = "/sim/v1/clock", tag = "simulation",
    request_body = ClockSetRequest,
    responses(
        (status = 200, description = "Set; every step due up to the new time ran first", body = ClockAdvanceResult),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody),
        (status = 409, description = "The platform runs on the real clock, or the time is in the past", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_set_clock() {}

#[utoipa::path(post, path = "/sim/v1/clock/advance", tag = "simulation",
    request_body = ClockAdvanceRequest,
    responses(
        (status = 200, description = "Advanced; every step due up to the new time ran first", body = ClockAdvanceResult),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody),
        (status = 409, description = "The platform runs on the real clock, or the time is in the past", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_advance_clock() {}

#[utoipa::path(post, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/inbound-calls", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    request_body = InboundCallRequest,
    responses(
        (status = 200, description = "How the platform handled the call (answered or not, and why)", body = InboundCallRecord),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_inbound_call() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/inbound-calls", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "Inbound calls of the workspace, oldest first", body = Page<InboundCallRecord>),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_inbound_calls() {}

#[utoipa::path(get, path = "/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/webhook-deliveries", tag = "simulation",
    params(("org_id" = String, Path), ("workspace_id" = String, Path), CohortListQuery),
    responses(
        (status = 200, description = "Webhook deliveries of the workspace, oldest first", body = Page<WebhookDeliveryRecord>),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_webhook_deliveries() {}

#[utoipa::path(get, path = "/sim/v1/journal", tag = "simulation",
    params(JournalQuery),
    responses(
        (status = 200, description = "Requests to the interface with their verdicts, oldest first", body = Page<JournalEntry>),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_journal() {}

#[utoipa::path(delete, path = "/sim/v1/journal", tag = "simulation",
    responses(
        (status = 204, description = "Emptied: entries, counts and coverage start again (also in the database when kept there)"),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody)
    ))]
fn sim_reset_journal() {}

#[utoipa::path(get, path = "/sim/v1/journal/summary", tag = "simulation",
    responses(
        (status = 200, description = "API coverage per operation of this document, verdict counts, operations never called, documented statuses never produced", body = JournalSummary),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody)
    ))]
fn sim_journal_summary() {}

#[utoipa::path(get, path = "/sim/v1/faults", tag = "simulation",
    params(CohortListQuery),
    responses(
        (status = 200, description = "The fault rules, in the order they are tried", body = Page<FaultRuleState>),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody),
        (status = 422, description = "Bad query", body = ValidationErrorBody)
    ))]
fn sim_list_faults() {}

#[utoipa::path(post, path = "/sim/v1/faults", tag = "simulation",
    request_body = FaultRule,
    responses(
        (status = 200, description = "Added after the existing rules", body = FaultRuleState),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody),
        (status = 422, description = "Validation failed", body = ValidationErrorBody)
    ))]
fn sim_add_fault() {}

#[utoipa::path(delete, path = "/sim/v1/faults/{fault_id}", tag = "simulation",
    params(("fault_id" = String, Path)),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody),
        (status = 404, description = "No such rule", body = PlatformErrorBody)
    ))]
fn sim_delete_fault() {}

#[utoipa::path(delete, path = "/sim/v1/faults", tag = "simulation",
    responses(
        (status = 204, description = "Every rule removed (those of the configuration file too)"),
        (status = 401, description = "Missing or wrong X-API-Key (any workspace's key)", body = PlatformErrorBody)
    ))]
fn sim_reset_faults() {}

#[utoipa::path(get, path = "/healthz", tag = "meta", security(()),
    responses((status = 200, description = "Serving: the routes answer and the database reads", body = Health)))]
fn health() {}

// ----- admin operations (the harness's own) -----

#[utoipa::path(get, path = "/admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys", tag = "admin",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    responses(
        (status = 200, description = "The workspace's data keys, oldest first; the last is active. No key material.", body = DataKeyList),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody)
    ))]
fn admin_list_data_keys() {}

#[utoipa::path(post, path = "/admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys/rotate", tag = "admin",
    params(("org_id" = String, Path), ("workspace_id" = String, Path)),
    responses(
        (status = 200, description = "A new data key from the workspace's key service (BYOK: rotate-key) is active: new data is sealed with it, older data stays readable with the older keys. No body is read; no key material is answered.", body = DataKeyInfo),
        (status = 401, description = "Missing or wrong X-API-Key", body = PlatformErrorBody),
        (status = 502, description = "The key service refused (code key_service_refused)", body = PlatformErrorBody),
        (status = 503, description = "The key service is unavailable (code key_service_unavailable); nothing changed", body = PlatformErrorBody)
    ))]
fn admin_rotate_data_key() {}

// ----- customer-hosted operations -----

#[utoipa::path(post, path = "/{partner}/byok/v1/auth", tag = "byok",
    params(
        ("partner" = String, Path, description = "A fixed neutral path segment agreed at set-up"),
        ("x-request-id" = String, Header, description = "Unique id of this call (a UUID)"),
        ("x-request-timestamp" = String, Header, format = DateTime, description = "When the caller sent the request"),
        ("x-trace-id" = Option<String>, Header, description = "Traces one request across services (a UUID)")
    ),
    request_body(content = AuthForm, content_type = "application/x-www-form-urlencoded"),
    security(("client_credentials" = [])),
    responses(
        (status = 200, description = "A short-lived token", body = AuthResponse),
        (status = 400, description = "INVALID_REQUEST", body = ByokErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ByokErrorBody),
        (status = 429, description = "RATE_LIMITED", body = ByokErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ByokErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = ByokErrorBody)
    ))]
fn byok_auth() {}

#[utoipa::path(post, path = "/{partner}/byok/v1/decrypt-key", tag = "byok",
    params(
        ("partner" = String, Path, description = "A fixed neutral path segment agreed at set-up"),
        ("x-request-id" = String, Header, description = "Unique id of this call (a UUID)"),
        ("x-request-timestamp" = String, Header, format = DateTime, description = "When the caller sent the request"),
        ("x-trace-id" = Option<String>, Header, description = "Traces one request across services (a UUID)")
    ),
    request_body = DecryptKeyRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The plaintext data key", body = DecryptKeyResponse),
        (status = 400, description = "INVALID_REQUEST", body = ByokErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ByokErrorBody),
        (status = 403, description = "KEY_DISABLED or KEY_REVOKED", body = ByokErrorBody),
        (status = 404, description = "KEY_NOT_FOUND", body = ByokErrorBody),
        (status = 422, description = "DECRYPTION_FAILED", body = ByokErrorBody),
        (status = 429, description = "RATE_LIMITED", body = ByokErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ByokErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = ByokErrorBody)
    ))]
fn byok_decrypt_key() {}

#[utoipa::path(post, path = "/{partner}/byok/v1/rotate-key", tag = "byok",
    params(
        ("partner" = String, Path, description = "A fixed neutral path segment agreed at set-up"),
        ("x-request-id" = String, Header, description = "Unique id of this call (a UUID)"),
        ("x-request-timestamp" = String, Header, format = DateTime, description = "When the caller sent the request"),
        ("x-trace-id" = Option<String>, Header, description = "Traces one request across services (a UUID)")
    ),
    request_body(content = Option<RotateKeyRequest>, description = "Optional: the alias to rotate; without it the caller's default alias"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A new data key, wrapped and in plaintext", body = RotateKeyResponse),
        (status = 400, description = "INVALID_REQUEST", body = ByokErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ByokErrorBody),
        (status = 403, description = "KEY_DISABLED or KEY_REVOKED", body = ByokErrorBody),
        (status = 404, description = "KEY_NOT_FOUND", body = ByokErrorBody),
        (status = 429, description = "RATE_LIMITED", body = ByokErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ByokErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = ByokErrorBody)
    ))]
fn byok_rotate_key() {}
