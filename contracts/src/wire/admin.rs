//! The harness's admin API of a workspace's data keys (not part of the interface spec):
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | GET | `/admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys` | | [`DataKeyList`] |
//! | POST | `/admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys/rotate` | none | [`DataKeyInfo`] of the new key |
//!
//! Both take the workspace's `X-API-Key`. No answer carries key material: a data key is
//! named by its id, which every sealed blob carries, and described by the alias of the
//! master key that wraps it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Which key service made and decrypts a data key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DataKeyProvider {
    /// The platform's local master key (no BYOK configured when the key was made).
    Local,
    /// The customer's key service (BYOK).
    Byok,
}

/// One data key of a workspace, without key material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DataKeyInfo {
    /// The key's id; every blob sealed with it records it, so data stays readable after a
    /// rotation.
    pub key_id: u32,
    /// The alias of the master key that wraps it (`local` for the local key).
    pub key_alias: String,
    /// Which key service made it.
    pub provider: DataKeyProvider,
    /// Whether new data is sealed with it (the newest key); older keys only open older data.
    pub active: bool,
    /// When the platform adopted it.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

/// A workspace's data keys, oldest first (the last is the active one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DataKeyList {
    /// The keys.
    pub items: Vec<DataKeyInfo>,
}
