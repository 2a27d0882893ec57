//! Inbound deployments, under
//! `{base_url}/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments`.
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | POST | `/deployments` | [`DeploymentCreateRequest`] | [`Deployment`], status `active` |
//! | GET | `/deployments` | query [`DeploymentListQuery`] | [`crate::wire::Page`] of [`DeploymentListItem`] |
//! | GET | `/deployments/{id}` | | [`Deployment`] |
//! | PATCH | `/deployments/{id}` | [`DeploymentPatchRequest`] | [`Deployment`] |
//! | PUT | `/deployments/{id}/status` | [`DeploymentStatusRequest`] | [`Deployment`] |
//! | DELETE | `/deployments/{id}` | | 204, no body |

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::common::{DayOfWeek, Patch, SortOrder};

/// A telephony connection of a deployment and the numbers it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeploymentConnectionConfig {
    /// The telephony connection.
    pub connection_id: String,
    /// Numbers routed to the deployment (E.164). A number belongs to at most one deployment
    /// of a workspace at a time.
    pub phone_numbers: Vec<String>,
}

/// When a deployment answers. Without it, calls are answered at all times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InboundConfig {
    /// Opening time of day, `HH:MM`.
    pub start_time: String,
    /// Closing time of day, `HH:MM` (exclusive; earlier than the start runs overnight;
    /// equal to the start is refused, 422).
    pub end_time: String,
    /// The days calls are answered.
    pub allowed_days: Vec<DayOfWeek>,
    /// IANA time-zone name.
    pub timezone: String,
}

/// The direction of a deployment's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChannelDirection {
    /// Answers calls (every deployment created through this API).
    Inbound,
    /// Places calls.
    Outbound,
    /// Both.
    InboundOutbound,
}

/// The status of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeploymentStatus {
    /// Calls are routed to the agent.
    Active,
    /// Calls are not answered.
    Paused,
}

impl DeploymentStatus {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentStatus::Active => "active",
            DeploymentStatus::Paused => "paused",
        }
    }
}

/// Body of `POST /deployments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeploymentCreateRequest {
    /// Pattern `^[\w\- ]{1,50}$`.
    pub name: String,
    /// The agent.
    pub app_id: String,
    /// The agent version to deploy (at least 1).
    pub app_version: i64,
    /// At least one entry.
    pub connection_configs: Vec<DeploymentConnectionConfig>,
    /// At most 150 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When calls are answered; null or absent: always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbound_config: Option<InboundConfig>,
}

/// Body of `PATCH /deployments/{id}`: any of these fields; `app_id` cannot be changed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct DeploymentPatchRequest {
    /// A new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A new description; `null` removes it.
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    #[schema(value_type = Option<String>)]
    pub description: Patch<String>,
    /// Cannot change: only the deployment's own agent is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_id: Option<String>,
    /// A new agent version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<i64>,
    /// New connections (replace the old list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_configs: Option<Vec<DeploymentConnectionConfig>>,
    /// A new schedule; `null` removes it (answer at all times).
    #[serde(default, skip_serializing_if = "Patch::is_absent")]
    #[schema(value_type = Option<InboundConfig>)]
    pub inbound_config: Patch<InboundConfig>,
}

/// A status change of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeploymentAction {
    /// Stop answering.
    Pause,
    /// Answer again.
    Resume,
}

/// Body of `PUT /deployments/{id}/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeploymentStatusRequest {
    /// `pause` or `resume`.
    pub action: DeploymentAction,
}

/// A deployment as answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Deployment {
    /// The deployment's id (`dep-…`).
    pub deployment_id: String,
    /// The agent.
    pub app_id: String,
    /// The deployed agent version.
    pub app_version: i64,
    /// Connections and numbers.
    pub connection_configs: Vec<DeploymentConnectionConfig>,
    /// `inbound` for deployments created here.
    pub channel_direction: ChannelDirection,
    /// Who created it.
    pub created_by: String,
    /// When it was created.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
    /// Its name.
    pub name: Option<String>,
    /// `active` or `paused`.
    pub status: Option<DeploymentStatus>,
    /// Its description.
    pub description: Option<String>,
    /// When calls are answered; null: always.
    pub inbound_config: Option<InboundConfig>,
    /// Who changed it last.
    pub updated_by: Option<String>,
}

/// A deployment in a list: the deployment plus all its numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeploymentListItem {
    /// The deployment.
    #[serde(flatten)]
    pub deployment: Deployment,
    /// Every number of every connection (E.164).
    pub phone_numbers: Vec<String>,
}

/// Fields a deployment list can be sorted by (assumed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentSortBy {
    /// Creation time (the default).
    #[default]
    CreatedAt,
    /// Last change.
    UpdatedAt,
    /// Name.
    Name,
}

impl DeploymentSortBy {
    /// Every sort field.
    pub const ALL: [DeploymentSortBy; 3] = [
        DeploymentSortBy::CreatedAt,
        DeploymentSortBy::UpdatedAt,
        DeploymentSortBy::Name,
    ];

    /// The wire value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DeploymentSortBy::CreatedAt => "created_at",
            DeploymentSortBy::UpdatedAt => "updated_at",
            DeploymentSortBy::Name => "name",
        }
    }
}

/// Query of `GET /deployments`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeploymentListQuery {
    /// Matches to skip (at least 0; default 0).
    pub(crate) offset: Option<i64>,
    /// Page size (1 to 100; default 20).
    pub(crate) limit: Option<i64>,
    /// `created_at` (default), `updated_at` or `name`.
    pub(crate) sort_by: Option<DeploymentSortBy>,
    /// `asc` or `desc` (default).
    pub(crate) sort_order: Option<SortOrder>,
    /// Case-insensitive substring of the name, the description or a phone number. At most 1,000 characters, without NUL.
    #[param(max_length = 1000)]
    pub(crate) search: Option<String>,
}
