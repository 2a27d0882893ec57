//! Instant outbound: one request starts one call to one number.
//!
//! `POST {base_url}/api/outbounds/v1/orgs/{org_id}/workspaces/{workspace_id}/outbounds`
//! with an [`OutboundRequest`] answers an [`OutboundResponse`].
//!
//! Which fields are required is not shown by the spec; the harness requires `app_config`
//! (`app_id`, `app_version`, `connection_config` with both fields) and
//! `user_config.user_phone_number`, and treats the rest as optional (assumed).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::common::{AppOverrides, AppType, JsonObject, WebhookConfig};

/// The telephony connection an outbound call leaves from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OutboundConnectionConfig {
    /// The telephony connection.
    pub connection_id: String,
    /// The number the call originates from (E.164).
    pub agent_phone_number: String,
}

/// The agent configuration of an instant outbound call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboundAppConfig {
    /// The agent.
    pub app_id: String,
    /// The agent version (an integer, at least 1).
    pub app_version: i64,
    /// Where the call leaves from.
    pub connection_config: OutboundConnectionConfig,
    /// Free-form variables passed to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub agent_variables: Option<JsonObject>,
    /// `agent` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_type: Option<AppType>,
    /// Overrides of the agent's opening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_overrides: Option<AppOverrides>,
}

/// Who to call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UserConfig {
    /// The number to call (E.164).
    pub user_phone_number: String,
}

/// Body of the instant outbound request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboundRequest {
    /// The agent and the line it calls from.
    pub app_config: OutboundAppConfig,
    /// Who to call.
    pub user_config: UserConfig,
    /// Where the call's notification goes when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_config: Option<WebhookConfig>,
}

/// Answer of the instant outbound request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OutboundResponse {
    /// Identifies this call attempt (a UUIDv7).
    pub attempt_id: String,
}
