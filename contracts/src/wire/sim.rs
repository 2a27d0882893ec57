//! The harness's simulation API, under `/sim/v1` (not part of the platform's interface):
//! simulated time in the manner of Stripe's test clocks, inbound calls by hand, and what the
//! engine recorded.
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | GET | `/sim/v1/clock` | | [`SimClockState`] |
//! | PUT | `/sim/v1/clock` | [`ClockSetRequest`] | [`ClockAdvanceResult`] |
//! | POST | `/sim/v1/clock/advance` | [`ClockAdvanceRequest`] | [`ClockAdvanceResult`] |
//! | POST | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/inbound-calls` | [`InboundCallRequest`] | [`InboundCallRecord`] |
//! | GET | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/inbound-calls` | | [`crate::wire::Page`] of [`InboundCallRecord`] |
//! | GET | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/webhook-deliveries` | | [`crate::wire::Page`] of [`WebhookDeliveryRecord`] |
//! | POST | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/reset` | none | [`WorkspaceReset`] |
//! | GET | `/healthz` (no key) | | [`Health`] |
//!
//! The clock is one per platform, shared by every workspace: a workspace's reset leaves it
//! where it is.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The platform's time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SimClockState {
    /// The current time of the platform.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub now: DateTime<Utc>,
    /// Whether the platform runs on a simulated clock (only then can it be set or advanced).
    pub simulated: bool,
}

/// Moves a simulated clock forward: by `seconds`, or to the instant `to` (one of the two).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct ClockAdvanceRequest {
    /// Seconds to move forward (0 to 400 days; fractions allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The instant to move to (not before now, at most 400 days after it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::clock::rfc3339::option"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub to: Option<DateTime<Utc>>,
}

/// Sets a simulated clock (never backwards).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClockSetRequest {
    /// The new time (not before now, at most 400 days after it).
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub now: DateTime<Utc>,
}

/// What moving the clock made happen: every step due up to the new time ran before the
/// answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct ClockAdvanceResult {
    /// The time before.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub from: DateTime<Utc>,
    /// The time now.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub now: DateTime<Utc>,
    /// Engine steps run.
    pub steps: u64,
    /// Calls placed (campaign and instant outbound).
    pub dials: u64,
    /// Calls that ended.
    pub calls_ended: u64,
    /// Campaigns whose status changed with time (activated or ended).
    pub campaign_transitions: u64,
    /// Webhook deliveries attempted.
    pub webhook_attempts: u64,
    /// Webhook deliveries answered with 2xx.
    pub webhooks_delivered: u64,
}

/// A simulated inbound call: `caller` dials `dialled` now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InboundCallRequest {
    /// The caller's number (E.164).
    pub caller: String,
    /// The number dialled: one of a deployment's numbers (E.164).
    pub dialled: String,
}

/// Why an inbound call was not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InboundRejection {
    /// No deployment of the workspace has the dialled number (never had, or deleted).
    NoDeployment,
    /// The deployment is paused.
    DeploymentPaused,
    /// The call came outside the deployment's `inbound_config`.
    OutsideSchedule,
    /// The workspace's data key could not be obtained (key service unavailable).
    KeyServiceUnavailable,
}

/// An inbound call as the platform recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct InboundCallRecord {
    /// The call's id.
    pub call_id: String,
    /// The caller.
    pub caller: String,
    /// The number dialled.
    pub dialled: String,
    /// When it arrived.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: DateTime<Utc>,
    /// Whether the agent answered.
    pub answered: bool,
    /// Why not, when not answered.
    pub rejection: Option<InboundRejection>,
    /// The deployment that took it.
    pub deployment_id: Option<String>,
    /// The conversation's id, when answered.
    pub interaction_id: Option<String>,
    /// The cohort the caller was found in (latest upload wins), if any.
    pub cohort_id: Option<String>,
    /// The caller's identifier from that cohort.
    pub user_identifier: Option<String>,
    /// The variables the agent received (the caller's cohort variables, or none).
    #[schema(value_type = Option<Object>)]
    pub agent_variables: Option<super::JsonObject>,
    /// Talk time in seconds, when answered.
    pub duration: Option<f64>,
    /// When the call ends, when answered.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ends_at: Option<DateTime<Utc>>,
}

/// The state of a webhook delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Waiting for its first or next try.
    Pending,
    /// Answered with 2xx.
    Delivered,
    /// Every try failed; no more tries.
    Failed,
}

/// One webhook event and the tries to deliver it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookDeliveryRecord {
    /// The delivery's id.
    pub delivery_id: String,
    /// `outbound`, `campaign` or `deployment`.
    pub kind: String,
    /// The attempt or interaction the event is about.
    pub subject_id: String,
    /// Where it goes.
    pub url: String,
    /// Its state.
    pub status: DeliveryStatus,
    /// Tries so far.
    pub tries: u32,
    /// HTTP status of the last try, if it got one.
    pub last_status_code: Option<u16>,
    /// Why the last try failed, if it did.
    pub last_error: Option<String>,
    /// When the event was created.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    /// When the next try is due (pending only).
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_try_at: Option<DateTime<Utc>>,
    /// When it was delivered.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub delivered_at: Option<DateTime<Utc>>,
}

/// The answer of `GET /healthz` (no key needed): the platform serves requests and its
/// database answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}

/// What `POST /sim/v1/orgs/{org_id}/workspaces/{workspace_id}/reset` removed: everything the
/// workspace's clients made, so that the next test starts from nothing without a restart.
/// Other workspaces, the workspace's data keys and the platform's one clock are untouched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceReset {
    /// The workspace emptied.
    pub workspace: crate::wire::WorkspaceId,
    /// How many of each were removed.
    pub removed: ResetCounts,
}

/// Counts of what a workspace's reset removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResetCounts {
    /// Campaigns (their users, admissions and result counts with them).
    pub campaigns: u64,
    /// Deployments (their phone numbers with them).
    pub deployments: u64,
    /// Cohorts of campaigns and deployments (their users and files with them).
    pub cohorts: u64,
    /// Calls: instant outbound calls and campaign dials, in progress or ended.
    pub calls: u64,
    /// Inbound calls.
    pub inbound_calls: u64,
    /// Webhook deliveries, pending or done.
    pub webhook_deliveries: u64,
    /// Requests of the workspace counted by the request journal (its entries go too).
    pub journal_entries: u64,
    /// Fault rules added with the workspace's key.
    pub fault_rules: u64,
}
