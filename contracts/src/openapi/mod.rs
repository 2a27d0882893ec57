//! The OpenAPI 3.1 documents of the interface, generated from the wire types.
//!
//! - [`platform_document`]: every platform endpoint (`X-API-Key`), committed as
//!   `contracts/openapi/platform.json` and served by the platform at `GET /openapi.json`.
//! - [`byok_document`]: the customer-hosted key endpoints, committed as
//!   `contracts/openapi/byok.json`.
//!
//! A document is made in two steps: utoipa derives it from the wire types and the operation
//! functions of `platform_ops` and `byok_ops`, then `refine` adds what the derive
//! cannot take from the types: the limits of [`crate::validate::limits`] and the patterns of
//! [`crate::domain`] as schema constraints (one source: the constants the validators use),
//! the answers every operation shares, response headers, and the links between operations.
//!
//! A test fails when the committed files differ from what the types generate; regenerate them
//! with `UPDATE_OPENAPI=1 cargo test --workspace --test contracts openapi`.

mod byok_ops;
mod byok_refine;
mod edit;
mod examples;
pub mod fields;
mod links;
mod platform_ops;
mod refine;
mod sim_refine;

use serde_json::Value;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use byok_ops::*;
use platform_ops::*;

use crate::error::{
    ByokErrorBody, ErrorDetail, LocItem, PlatformErrorBody, PlatformErrorInfo, ValidationErrorBody,
};
use crate::wire::byok::AuthForm;
use crate::wire::*;

/// The prefix of every path of the platform's interface.
pub const INTERFACE_PREFIX: &str = "/api/";

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
        description = "Instant outbound calls, campaigns, cohorts and inbound deployments. Every route but /openapi.json, /healthz and the live page (/ui) requires X-API-Key. On a documented path, a method the path does not document answers 405 (code method_not_allowed) with an Allow header naming the methods it has; every GET route also answers HEAD."
    ),
    paths(
        openapi_document,
        create_outbound,
        create_campaign, list_campaigns, get_campaign, patch_campaign, set_campaign_status,
        upload_campaign_cohort, stream_campaign_cohort, list_campaign_cohorts, get_campaign_cohort, get_campaign_cohort_file,
        upload_deployment_cohort, stream_deployment_cohort, list_deployment_cohorts, get_deployment_cohort, get_deployment_cohort_file,
        create_deployment, list_deployments, get_deployment, patch_deployment, set_deployment_status, delete_deployment,
        sim_get_clock, sim_set_clock, sim_advance_clock, sim_inbound_call, sim_list_inbound_calls, sim_list_webhook_deliveries,
        sim_reset_workspace,
        admin_list_data_keys, admin_rotate_data_key,
        health,
        sim_list_journal, sim_reset_journal, sim_journal_summary,
        sim_list_faults, sim_add_fault, sim_delete_fault, sim_reset_faults,
        live_page, sim_stack, sim_campaign_activity, sim_campaign_chart, sim_key_service_calls,
    ),
    components(schemas(
        ValidationErrorBody, ErrorDetail, LocItem, PlatformErrorBody, PlatformErrorInfo,
        OutboundCallEvent, CampaignCallEvent, DeploymentCallEvent, TranscriptTurn, ChannelInfo,
        CallStatus, CompletionStatus, ConnectivityStatus, NextActionStatus,
        TransformationConfig, PhoneNumberMapping, ColumnMapping, OverrideMapping, OverrideMappings,
        CampaignSortBy, DeploymentSortBy, SortOrder, CohortFileType,
    )),
    modifiers(&ApiKeyAuth),
    security(("api_key" = [])),
    tags(
        (name = "outbound", description = "Instant outbound calls"),
        (name = "campaigns", description = "Campaigns: schedule, dial rate, retries, weighted connections"),
        (name = "cohorts", description = "Users of a campaign or a deployment"),
        (name = "deployments", description = "Inbound deployments"),
        (name = "meta", description = "This document, the readiness probe, and the live page"),
        (name = "simulation", description = "The harness's own simulation API (not part of the platform's interface): simulated time (one clock per platform, shared by every workspace), inbound calls by hand, what the engine recorded, the reset of one workspace, the request journal and API coverage, fault rules, and what the live page (/ui) reads"),
        (name = "admin", description = "The harness's own admin API (not part of the platform's interface): a workspace's data keys and their rotation")
    )
)]
pub(crate) struct PlatformApi;

/// The customer-hosted key endpoints.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Customer-hosted BYOK key service",
        version = "v1",
        description = "Endpoints the customer hosts and the platform calls: token exchange, data-key decryption and rotation. Every call carries x-request-id (UUID) and x-request-timestamp (ISO 8601), and may carry x-trace-id. Errors are {error:{code,message}}. On a documented path, another method than POST answers 405 (code METHOD_NOT_ALLOWED) with `Allow: POST`; a path that is not documented (another partner) answers 404 (code NOT_FOUND)."
    ),
    paths(byok_auth, byok_decrypt_key, byok_rotate_key),
    components(schemas(ByokErrorBody, AuthForm)),
    modifiers(&ByokAuth)
)]
pub(crate) struct ByokApi;

/// The platform document, as served and committed.
pub fn platform_document() -> Value {
    let mut doc = to_value(&PlatformApi::openapi());
    refine::platform(&mut doc);
    doc
}

/// The BYOK document, as committed.
pub fn byok_document() -> Value {
    let mut doc = to_value(&ByokApi::openapi());
    refine::byok(&mut doc);
    doc
}

fn to_value(doc: &utoipa::openapi::OpenApi) -> Value {
    serde_json::to_value(doc).expect("OpenAPI documents serialise")
}

/// Pretty JSON of a document, with a final newline, as committed.
pub fn to_committed_json(doc: &Value) -> String {
    let mut s = serde_json::to_string_pretty(doc).expect("OpenAPI documents serialise");
    s.push('\n');
    s
}
