//! Campaigns, under `{base_url}/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns`.
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | POST | `/campaigns` | [`CampaignCreateRequest`] | [`CampaignSummary`], status `scheduled` |
//! | GET | `/campaigns` | query [`CampaignListQuery`] | [`crate::wire::Page`] of [`CampaignSummary`] |
//! | GET | `/campaigns/{id}` | | [`Campaign`] |
//! | PATCH | `/campaigns/{id}` | [`CampaignPatchRequest`] | [`Campaign`] |
//! | PUT | `/campaigns/{id}/status` | [`CampaignStatusRequest`] | [`Campaign`] |

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::common::{AppType, DayOfWeek, Patch, SortOrder, WebhookConfig};

/// The life of a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CampaignStatus {
    /// Created; waits for `start_timestamp`.
    Scheduled,
    /// Dialling inside its allowed schedule.
    Active,
    /// Stopped by a pause; resumes on `resume`.
    Paused,
    /// Past `end_timestamp` (final).
    Ended,
    /// Stopped for good by `cancel` (final).
    Cancelled,
}

impl CampaignStatus {
    /// Every status.
    pub const ALL: [CampaignStatus; 5] = [
        CampaignStatus::Scheduled,
        CampaignStatus::Active,
        CampaignStatus::Paused,
        CampaignStatus::Ended,
        CampaignStatus::Cancelled,
    ];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignStatus::Scheduled => "scheduled",
            CampaignStatus::Active => "active",
            CampaignStatus::Paused => "paused",
            CampaignStatus::Ended => "ended",
            CampaignStatus::Cancelled => "cancelled",
        }
    }

    /// Parses a wire value.
    pub fn parse(s: &str) -> Option<Self> {
        CampaignStatus::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// `ended` and `cancelled` never change again.
    pub fn is_final(self) -> bool {
        matches!(self, CampaignStatus::Ended | CampaignStatus::Cancelled)
    }
}

/// The calling window of a campaign: calls are placed only inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AllowedSchedule {
    /// IANA time-zone name, for example `America/New_York`.
    pub timezone: String,
    /// The days calls may be placed, for example Monday to Friday.
    pub allowed_days: Vec<DayOfWeek>,
    /// Opening time of day, `HH:MM`.
    pub allowed_start_time: String,
    /// Closing time of day, `HH:MM` (exclusive). Earlier than the start: the window runs
    /// overnight into the next day; `00:00` means midnight. Equal to the start is refused
    /// (422): a window has a length.
    pub allowed_end_time: String,
}

/// One telephony connection of a campaign, with its share of the dials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CampaignConnectionConfig {
    /// The telephony connection.
    pub connection_id: String,
    /// Numbers the calls leave from (E.164), used in turn.
    pub phone_numbers: Vec<String>,
    /// Relative share of the dials (an integer, at least 1).
    pub weight: u32,
}

/// An outcome that can be retried.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RetryOutcome {
    /// The line was busy.
    Busy,
    /// Nobody answered (voicemail counts here).
    NoAnswer,
    /// The call failed to connect.
    Failed,
    /// Connected but shorter than `threshold_seconds`.
    ShortDuration,
    /// The telephony provider reported an error.
    ProviderError,
    /// The platform failed internally.
    InternalError,
}

impl RetryOutcome {
    /// Every outcome, in the order the list form is written.
    pub const ALL: [RetryOutcome; 6] = [
        RetryOutcome::Busy,
        RetryOutcome::NoAnswer,
        RetryOutcome::Failed,
        RetryOutcome::ShortDuration,
        RetryOutcome::ProviderError,
        RetryOutcome::InternalError,
    ];

    /// The wire value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RetryOutcome::Busy => "busy",
            RetryOutcome::NoAnswer => "no_answer",
            RetryOutcome::Failed => "failed",
            RetryOutcome::ShortDuration => "short_duration",
            RetryOutcome::ProviderError => "provider_error",
            RetryOutcome::InternalError => "internal_error",
        }
    }

    /// Parses a wire value.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        RetryOutcome::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// The retry policy as the platform answers it (the spec's list form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RetryConfig {
    /// Retries after the first dial: at most `max_retries + 1` attempts per user.
    pub max_retries: u32,
    /// Outcomes that are retried.
    pub retry_on: Vec<RetryOutcome>,
    /// A connected call shorter than this many seconds is `short_duration`.
    pub threshold_seconds: u32,
    /// Least gap, in minutes, between the end of an attempt and the next dial of that user.
    pub retry_interval_minutes: u32,
}

/// `{"enabled": bool}` in the object form of `retry_on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RetryToggle {
    /// Whether this outcome is retried.
    pub enabled: bool,
}

/// `{"enabled": bool, "threshold_seconds": int}` in the object form of `retry_on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ShortDurationToggle {
    /// Whether short calls are retried.
    pub enabled: bool,
    /// The short-call threshold (1 to 1200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_seconds: Option<u32>,
}

/// The object form of `retry_on`, accepted on input as an alias of the list form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct RetryOnObject {
    /// Retry busy lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy: Option<RetryToggle>,
    /// Retry unanswered calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<RetryToggle>,
    /// Retry failed calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<RetryToggle>,
    /// Retry short calls, with their threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_duration: Option<ShortDurationToggle>,
    /// Retry provider errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_error: Option<RetryToggle>,
    /// Retry internal errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_error: Option<RetryToggle>,
}

/// `retry_on` as accepted on input: the list (canonical) or the object form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum RetryOn {
    /// `["busy", "short_duration"]`.
    List(Vec<RetryOutcome>),
    /// `{"busy": {"enabled": true}, "short_duration": {"enabled": true, "threshold_seconds": 10}}`.
    Object(RetryOnObject),
}

/// The retry policy as accepted on input. Defaults (assumed): `max_retries` 0, `retry_on`
/// empty, `threshold_seconds` 10, `retry_interval_minutes` 30.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct RetryConfigRequest {
    /// Retries after the first dial (0 to 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Outcomes to retry, list or object form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<RetryOn>,
    /// Short-call threshold in seconds (1 to 1200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_seconds: Option<u32>,
    /// Least minutes between an attempt's end and the next dial of that user (1 to 10080).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_interval_minutes: Option<u32>,
}

/// The agent configuration of a campaign create request (`app_config`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignAppConfigRequest {
    /// The agent.
    pub app_id: String,
    /// The agent version (at least 1).
    pub app_version: i64,
    /// `agent` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_type: Option<AppType>,
    /// Dial rate, 0.1 to 500 dials per second.
    pub attempts_per_second: f64,
    /// Connections the dials are split over, by weight (at least one).
    pub connection_configs: Vec<CampaignConnectionConfig>,
    /// The retry policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_config: Option<RetryConfigRequest>,
    /// Where each attempt's notification goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_config: Option<WebhookConfig>,
}

/// Body of `POST /campaigns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignCreateRequest {
    /// Campaign name, pattern `^[\w\- ]{1,50}$`.
    pub name: String,
    /// At most 150 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When dialling may begin: 120 seconds to 7 days from now.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub start_timestamp: DateTime<Utc>,
    /// When the campaign ends: 120 seconds to 30 days after the start.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub end_timestamp: DateTime<Utc>,
    /// The calling window.
    pub allowed_schedule: AllowedSchedule,
    /// The agent, dial rate, connections, retries and webhook.
    pub app_config: CampaignAppConfigRequest,
}

/// The agent part of a PATCH body: every field optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct CampaignAppConfigPatch {
    /// Cannot change: only the campaign's own agent is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<String>,
    /// `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_type: Option<AppType>,
    /// A new agent version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<i64>,
    /// A new dial rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_per_second: Option<f64>,
    /// New connections (replace the old list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_configs: Option<Vec<CampaignConnectionConfig>>,
    /// A new retry policy; omitted fields keep their values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_config: Option<RetryConfigRequest>,
    /// A new webhook target; `null` removes it.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    #[schema(value_type = Option<WebhookConfig>)]
    pub webhook_config: Patch<WebhookConfig>,
}

/// Body of `PATCH /campaigns/{id}`, allowed while `scheduled` or `paused`. `start_timestamp`
/// and `app_config.app_id` cannot be changed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct CampaignPatchRequest {
    /// A new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A new description; `null` removes it.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    #[schema(value_type = Option<String>)]
    pub description: Patch<String>,
    /// Cannot change: only the campaign's own start is accepted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::clock::rfc3339::option"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub start_timestamp: Option<DateTime<Utc>>,
    /// A new end: 120 seconds to 30 days after the start, and in the future.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::clock::rfc3339::option"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub end_timestamp: Option<DateTime<Utc>>,
    /// A new calling window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_schedule: Option<AllowedSchedule>,
    /// Changes to the agent configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_config: Option<CampaignAppConfigPatch>,
}

/// A status change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CampaignAction {
    /// From `scheduled` or `active` to `paused`.
    Pause,
    /// From `paused` to `active` (or `scheduled` before the start, `ended` after the end).
    Resume,
    /// From `scheduled`, `active` or `paused` to `cancelled`, for good.
    Cancel,
}

impl CampaignAction {
    /// Every action.
    pub const ALL: [CampaignAction; 3] = [
        CampaignAction::Pause,
        CampaignAction::Resume,
        CampaignAction::Cancel,
    ];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignAction::Pause => "pause",
            CampaignAction::Resume => "resume",
            CampaignAction::Cancel => "cancel",
        }
    }

    /// Parses a wire value.
    pub fn parse(s: &str) -> Option<Self> {
        CampaignAction::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// Body of `PUT /campaigns/{id}/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CampaignStatusRequest {
    /// `pause`, `resume` or `cancel`.
    pub action: CampaignAction,
}

/// The agent configuration of a campaign as answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignAppConfig {
    /// The agent.
    pub app_id: String,
    /// The agent version.
    pub app_version: i64,
    /// `agent`.
    pub app_type: AppType,
    /// Dial rate.
    pub attempts_per_second: f64,
    /// Connections and weights.
    pub connection_configs: Vec<CampaignConnectionConfig>,
    /// The retry policy, list form.
    pub retry_config: RetryConfig,
    /// Where each attempt's notification goes.
    pub webhook_config: Option<WebhookConfig>,
}

/// A campaign in lists and in the create answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignSummary {
    /// The campaign's id (`camp-…`).
    pub campaign_id: String,
    /// Its name.
    pub name: String,
    /// Its status now.
    pub status: CampaignStatus,
    /// The agent.
    pub app_id: String,
    /// `agent`.
    pub app_type: AppType,
    /// The agent version.
    pub app_version: i64,
    /// The description, or null.
    pub description: Option<String>,
    /// Who created it (the name of the API key used).
    pub created_by: String,
    /// Who changed it last.
    pub updated_by: String,
    /// When it was created.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
}

/// Attempts counted by outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct AttemptCounts {
    /// Connected and at least `threshold_seconds` long.
    pub connected: u64,
    /// Connected but shorter than `threshold_seconds`.
    pub short_duration: u64,
    /// Busy.
    pub busy: u64,
    /// Not answered (voicemail included).
    pub no_answer: u64,
    /// Failed to connect.
    pub failed: u64,
    /// Provider errors.
    pub provider_error: u64,
    /// Internal errors.
    pub internal_error: u64,
}

/// Progress of a campaign (an extension of the harness: the reference shows none).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct CampaignStatistics {
    /// Users in the campaign's `cohort` uploads (valid records, after `stop_file` exclusions).
    pub users_total: u64,
    /// Users excluded by `stop_file` uploads.
    pub users_excluded: u64,
    /// Users finished: connected long enough, or out of retries, or a non-retried outcome.
    pub users_done: u64,
    /// Users with attempts still to make.
    pub users_pending: u64,
    /// Users whose call is in progress now.
    pub users_in_progress: u64,
    /// Users left unfinished when the campaign ended or was cancelled.
    pub users_unfinished: u64,
    /// Every dial so far.
    pub attempts_total: u64,
    /// Dials by outcome.
    pub attempts_by_outcome: AttemptCounts,
    /// Users whose retry gap has passed and who wait for a dial.
    pub retries_due: u64,
    /// Rule 3: users x (1 + max_retries).
    pub attempt_budget: u64,
    /// Dials the rate allows in the open window time left before `end_timestamp`, plus the
    /// dials already made.
    pub attempt_capacity: u64,
    /// Set when the budget exceeds the capacity: some users may not finish all retries.
    pub capacity_warning: Option<String>,
}

/// A campaign as answered by GET, PATCH and status changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Campaign {
    /// The summary fields.
    #[serde(flatten)]
    pub summary: CampaignSummary,
    /// The agent configuration.
    pub app_config: CampaignAppConfig,
    /// When dialling may begin.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub start_timestamp: DateTime<Utc>,
    /// When the campaign ends.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub end_timestamp: DateTime<Utc>,
    /// The calling window.
    pub allowed_schedule: AllowedSchedule,
    /// Progress so far.
    pub statistics: CampaignStatistics,
}

/// Fields a campaign list can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignSortBy {
    /// Creation time (the default).
    #[default]
    CreatedAt,
    /// Last change.
    UpdatedAt,
    /// Name.
    Name,
    /// Start time.
    StartTimestamp,
}

impl CampaignSortBy {
    /// Every sort field.
    pub const ALL: [CampaignSortBy; 4] = [
        CampaignSortBy::CreatedAt,
        CampaignSortBy::UpdatedAt,
        CampaignSortBy::Name,
        CampaignSortBy::StartTimestamp,
    ];

    /// The wire value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CampaignSortBy::CreatedAt => "created_at",
            CampaignSortBy::UpdatedAt => "updated_at",
            CampaignSortBy::Name => "name",
            CampaignSortBy::StartTimestamp => "start_timestamp",
        }
    }
}

/// Query of `GET /campaigns`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CampaignListQuery {
    /// Only campaigns in this status.
    pub(crate) campaign_status: Option<CampaignStatus>,
    /// Matches to skip (at least 0; default 0).
    pub(crate) offset: Option<i64>,
    /// Page size (1 to 100; default 20).
    pub(crate) limit: Option<i64>,
    /// `created_at` (default), `updated_at`, `name` or `start_timestamp`.
    pub(crate) sort_by: Option<CampaignSortBy>,
    /// `asc` or `desc` (default).
    pub(crate) sort_order: Option<SortOrder>,
    /// Case-insensitive substring of the name or description. At most 1,000 characters, without NUL.
    #[param(max_length = 1000)]
    pub(crate) search: Option<String>,
}
