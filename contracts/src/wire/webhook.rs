//! The three webhook payloads, delivered as JSON POSTs and signed.
//!
//! Signing (reference: HMAC-SHA256 over `{timestamp}.{raw body}`; the details are assumed):
//! the hex digest goes in [`HEADER_SIGNATURE`], the Unix-seconds timestamp in
//! [`HEADER_TIMESTAMP`] (both names configurable on the platform). Delivery is at least once,
//! retried with backoff on failure or a non-2xx answer, in order per attempt.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::common::{JsonObject, WebhookConfig};

/// Default header carrying the hex HMAC-SHA256 signature.
pub const HEADER_SIGNATURE: &str = "x-webhook-signature";
/// Default header carrying the Unix-seconds timestamp that was signed.
pub const HEADER_TIMESTAMP: &str = "x-webhook-timestamp";

/// How an instant outbound call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// Someone answered.
    Connected,
    /// Nobody answered (voicemail included).
    NoAnswer,
    /// The line was busy.
    Busy,
    /// The call could not be placed (provider and internal errors included).
    Failed,
}

/// One turn of a conversation transcript (assumed shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TranscriptTurn {
    /// `agent` or `user`.
    pub role: String,
    /// What was said.
    pub content: String,
}

/// The line a call used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChannelInfo {
    /// `telephony`.
    pub channel_type: String,
    /// The telephony connection used.
    pub channel_provider: String,
    /// The agent's number.
    pub agent_phone_number: String,
}

/// Sent once per finished instant outbound attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboundCallEvent {
    /// The attempt.
    pub attempt_id: String,
    /// How it ended.
    pub status: CallStatus,
    /// The line used.
    pub channel_info: ChannelInfo,
    /// Talk time in seconds; null unless connected.
    pub duration: Option<f64>,
    /// The conversation's id; null unless connected.
    pub interaction_id: Option<String>,
    /// Why it did not connect; null when connected.
    pub failure_reason: Option<String>,
    /// The agent's variables at the end of the call.
    #[schema(value_type = Option<Object>)]
    pub final_agent_variables: Option<JsonObject>,
    /// The request's `webhook_config`, echoed.
    pub webhook_config: WebhookConfig,
    /// The conversation; null unless connected.
    pub interaction_transcript: Option<Vec<TranscriptTurn>>,
}

/// Whether the user's business with the campaign is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompletionStatus {
    /// Connected for at least `threshold_seconds`.
    Completed,
    /// Connected, but shorter than `threshold_seconds`.
    Partial,
    /// Did not connect.
    Failed,
}

/// How the call connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectivityStatus {
    /// Answered.
    Connected,
    /// Busy.
    Busy,
    /// Not answered.
    NoAnswer,
    /// Could not be placed.
    Failed,
}

/// What the campaign does next for this user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextActionStatus {
    /// Retried after `retry_interval_minutes` (busy, no answer, failed).
    Retry,
    /// Retried in the next calling window (the gap runs past the window's close).
    Reschedule,
    /// Retried by a business rule (reserved; the harness does not emit it).
    BusinessRetry,
    /// Retried because the call was shorter than `threshold_seconds`.
    ShortDurationRetry,
    /// Retried after a provider error.
    ProviderErrorRetry,
    /// Retried after an internal error.
    InternalErrorRetry,
}

/// Sent once per campaign attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignCallEvent {
    /// The agent.
    pub app_id: String,
    /// The agent version.
    pub app_version: i64,
    /// The attempt.
    pub attempt_id: String,
    /// The campaign.
    pub campaign_id: String,
    /// The cohort the user came from.
    pub cohort_id: String,
    /// `completed`, `partial` or `failed`.
    pub completion_status: CompletionStatus,
    /// How the call connected; null when it was never placed.
    pub connectivity_status: Option<ConnectivityStatus>,
    /// What happens next; null when this was the user's last attempt.
    pub next_action_status: Option<NextActionStatus>,
    /// Why it did not complete.
    pub failure_reason: Option<String>,
    /// The user's identifier from the cohort.
    pub user_identifier: Option<String>,
    /// The user's number.
    pub user_phone_number: String,
    /// The number the call left from.
    pub agent_phone_number: String,
    /// Talk time in seconds; null unless connected.
    pub duration: Option<f64>,
    /// The conversation's id; null unless connected.
    pub interaction_id: Option<String>,
    /// 0 for the first dial, 1 for the first retry, ...
    pub retry_attempt: u32,
    /// When the dial was placed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub executed_at: DateTime<Utc>,
    /// The user's variables from the cohort.
    #[schema(value_type = Option<Object>)]
    pub initial_agent_variables: Option<JsonObject>,
    /// The agent's variables at the end of the call.
    #[schema(value_type = Option<Object>)]
    pub final_agent_variables: Option<JsonObject>,
    /// The conversation; null unless connected.
    pub interaction_transcript: Option<Vec<TranscriptTurn>>,
    /// The campaign's `webhook_config.metadata`.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<JsonObject>,
}

/// Sent once per answered inbound call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeploymentCallEvent {
    /// The agent.
    pub app_id: String,
    /// The deployed version.
    pub app_version: i64,
    /// The deployment.
    pub deployment_id: String,
    /// The conversation's id.
    pub interaction_id: String,
    /// The caller.
    pub user_phone_number: String,
    /// The number dialled.
    pub agent_phone_number: String,
    /// Talk time in seconds.
    pub duration: Option<f64>,
    /// The agent's variables at the end of the call (personalised from the cohort when the
    /// caller was found there).
    #[schema(value_type = Option<Object>)]
    pub final_agent_variables: Option<JsonObject>,
    /// Variables the agent produced.
    #[schema(value_type = Option<Object>)]
    pub output_agent_variables: Option<JsonObject>,
    /// When the call was answered.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub start_datetime: DateTime<Utc>,
    /// When it ended.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub end_datetime: DateTime<Utc>,
    /// The conversation.
    pub interaction_transcript: Option<Vec<TranscriptTurn>>,
}
