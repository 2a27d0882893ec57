//! Configuration of a platform instance: from a TOML file, the environment and flags (the
//! binary merges them in that order, later winning).
//!
//! ```toml
//! listen = "127.0.0.1:8080"
//! database = "platform.db"          # ":memory:" for a throwaway store
//! local_key = "<base64 of 32 bytes>" # else read from, or written to, <database>.key
//! max_upload_bytes = 104857600
//! max_body_bytes = 10485760
//! strict = false                    # true: unknown request fields are 422
//! public_url = "https://mock.example.com"  # else taken from the Host header
//! seed = 42                         # ids and randomness; printed when not set
//! clock = "simulated"               # or "real" (default); simulated time moves only by
//! sim_start = "2026-03-02T12:00:00Z" #   /sim/v1/clock; sim_start defaults to the wall clock
//! webhook_secret = "whsec_..."      # signs webhooks; printed when not set
//!
//! [[deployment_webhooks]]           # where a workspace's inbound-call events go
//! org_id = "org-1"
//! workspace_id = "ws-1"
//! url = "https://hooks.example.com/inbound"
//!
//! [telephony]                       # the simulated telephony (see telephony-sim)
//! seed = 7                          # default: the platform's seed
//! magic_numbers = true
//!
//! [[api_keys]]
//! org_id = "org-1"
//! workspace_id = "ws-1"
//! key = "sk-test-1"
//! name = "ci"                       # shown as created_by / updated_by
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;

use base64::Engine as _;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::store::WorkspaceRef;

/// One API key and the workspace it opens. `*` as org or workspace matches any.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The org it opens, or `*`.
    pub org_id: String,
    /// The workspace it opens, or `*`.
    pub workspace_id: String,
    /// The key sent as `X-API-Key`.
    pub key: String,
    /// Who uses it: recorded as `created_by` and `updated_by`.
    #[serde(default = "default_key_name")]
    pub name: String,
}

fn default_key_name() -> String {
    "api-key".into()
}

impl ApiKeyConfig {
    /// Parses `ORG/WORKSPACE=KEY[:NAME]` (the flag and environment form).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (scope, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}': expected ORG/WORKSPACE=KEY[:NAME]"))?;
        let (org_id, workspace_id) = scope
            .split_once('/')
            .ok_or_else(|| format!("'{s}': expected ORG/WORKSPACE before '='"))?;
        let (key, name) = match rest.split_once(':') {
            Some((k, n)) => (k, n.to_string()),
            None => (rest, default_key_name()),
        };
        if org_id.is_empty() || workspace_id.is_empty() || key.is_empty() {
            return Err(format!("'{s}': org, workspace and key must not be empty"));
        }
        Ok(ApiKeyConfig {
            org_id: org_id.into(),
            workspace_id: workspace_id.into(),
            key: key.into(),
            name,
        })
    }

    fn opens(&self, ws: &WorkspaceRef) -> bool {
        (self.org_id == "*" || self.org_id == ws.org_id)
            && (self.workspace_id == "*" || self.workspace_id == ws.workspace_id)
    }
}

/// Which clock the platform runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockMode {
    /// The wall clock.
    #[default]
    Real,
    /// A simulated clock, moved only through `/sim/v1/clock`.
    Simulated,
}

/// Where the inbound-call events of a workspace go.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentWebhook {
    /// The org.
    pub org_id: String,
    /// The workspace.
    pub workspace_id: String,
    /// The URL.
    pub url: String,
}

impl DeploymentWebhook {
    /// Parses `ORG/WORKSPACE=URL` (the flag form).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (scope, url) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}': expected ORG/WORKSPACE=URL"))?;
        let (org_id, workspace_id) = scope
            .split_once('/')
            .ok_or_else(|| format!("'{s}': expected ORG/WORKSPACE before '='"))?;
        url::Url::parse(url).map_err(|e| format!("'{s}': {e}"))?;
        Ok(DeploymentWebhook {
            org_id: org_id.into(),
            workspace_id: workspace_id.into(),
            url: url.into(),
        })
    }
}

/// The simulated telephony.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelephonyConfig {
    /// Seed of call outcomes (default: the platform's seed).
    pub seed: Option<u64>,
    /// The call model (rates, durations, magic numbers); see `telephony-sim`.
    pub model: Option<telephony_sim::Model>,
}

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file.
    File(PathBuf),
    /// A private in-memory store (lost at exit).
    Memory,
}

/// Everything a platform instance needs to know.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlatformConfig {
    /// Where the binary listens (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// The SQLite file, or `:memory:`.
    pub database: String,
    /// Base64 of the 32-byte local master key that wraps data keys when no BYOK is set.
    pub local_key: Option<String>,
    /// API keys.
    pub api_keys: Vec<ApiKeyConfig>,
    /// Largest cohort upload, in bytes (413 above).
    pub max_upload_bytes: u64,
    /// Largest JSON body, in bytes (413 above).
    pub max_body_bytes: u64,
    /// Refuse unknown request fields with 422.
    pub strict: bool,
    /// The address clients reach the platform at, for `next_page_uri`/`prev_page_uri`;
    /// without it, `http://` and the request's `Host` header.
    pub public_url: Option<String>,
    /// Seed of ids and other random choices; drawn at start-up when not set.
    pub seed: Option<u64>,
    /// The real or a simulated clock.
    pub clock: ClockMode,
    /// Where a simulated clock starts (RFC 3339); default: the wall clock at start-up.
    pub sim_start: Option<String>,
    /// The secret webhooks are signed with; drawn at start-up when not set.
    pub webhook_secret: Option<String>,
    /// Header carrying the webhook signature.
    pub webhook_signature_header: String,
    /// Header carrying the webhook timestamp.
    pub webhook_timestamp_header: String,
    /// Tries before a webhook delivery is given up.
    pub webhook_max_tries: u32,
    /// Wait after the first failed try, in milliseconds; doubled after each further one.
    pub webhook_initial_backoff_ms: u64,
    /// The longest wait between tries, in milliseconds.
    pub webhook_max_backoff_ms: u64,
    /// How long one try may take, in milliseconds (wall time).
    pub webhook_timeout_ms: u64,
    /// Where each workspace's inbound-call events go.
    pub deployment_webhooks: Vec<DeploymentWebhook>,
    /// The simulated telephony.
    pub telephony: TelephonyConfig,
}

impl Default for PlatformConfig {
    fn default() -> Self {
        PlatformConfig {
            listen: "127.0.0.1:8080".parse().expect("valid address"),
            database: "platform.db".into(),
            local_key: None,
            api_keys: Vec::new(),
            max_upload_bytes: contracts::validate::limits::UPLOAD_MAX_BYTES_DEFAULT,
            max_body_bytes: 10 * 1024 * 1024,
            strict: false,
            public_url: None,
            seed: None,
            clock: ClockMode::Real,
            sim_start: None,
            webhook_secret: None,
            webhook_signature_header: contracts::wire::webhook::HEADER_SIGNATURE.into(),
            webhook_timestamp_header: contracts::wire::webhook::HEADER_TIMESTAMP.into(),
            webhook_max_tries: crate::webhooks::DEFAULT_MAX_TRIES,
            webhook_initial_backoff_ms: 1_000,
            webhook_max_backoff_ms: 600_000,
            webhook_timeout_ms: 10_000,
            deployment_webhooks: Vec::new(),
            telephony: TelephonyConfig::default(),
        }
    }
}

impl PlatformConfig {
    /// Reads a TOML file.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// Where the store lives.
    pub fn database(&self) -> Database {
        if self.database == ":memory:" {
            Database::Memory
        } else {
            Database::File(PathBuf::from(&self.database))
        }
    }

    /// Where the inbound-call events of `ws` go, if anywhere.
    pub fn deployment_webhook(&self, ws: &WorkspaceRef) -> Option<&str> {
        self.deployment_webhooks
            .iter()
            .find(|w| w.org_id == ws.org_id && w.workspace_id == ws.workspace_id)
            .map(|w| w.url.as_str())
    }

    /// The webhook settings.
    pub fn webhook_settings(&self, secret: Vec<u8>) -> crate::webhooks::WebhookSettings {
        crate::webhooks::WebhookSettings {
            secret,
            signature_header: self.webhook_signature_header.clone(),
            timestamp_header: self.webhook_timestamp_header.clone(),
            max_tries: self.webhook_max_tries.max(1),
            initial_backoff: chrono::Duration::milliseconds(self.webhook_initial_backoff_ms as i64),
            max_backoff: chrono::Duration::milliseconds(self.webhook_max_backoff_ms as i64),
            timeout: std::time::Duration::from_millis(self.webhook_timeout_ms),
        }
    }

    /// The local master key from `local_key`, if set.
    pub fn local_key_bytes(&self) -> Result<Option<[u8; 32]>, String> {
        let Some(b64) = &self.local_key else {
            return Ok(None);
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| format!("local_key is not base64: {e}"))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| format!("local_key must be 32 bytes, not {}", b.len()))?;
        Ok(Some(key))
    }
}

/// The configured API keys, checked in constant time.
#[derive(Debug, Clone)]
pub struct KeyTable {
    keys: Vec<ApiKeyConfig>,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The workspace of the path.
    pub ws: WorkspaceRef,
    /// The key's name (`created_by`, `updated_by`).
    pub name: String,
}

impl KeyTable {
    /// A table of these keys.
    pub fn new(keys: Vec<ApiKeyConfig>) -> Self {
        KeyTable { keys }
    }

    /// The keys.
    pub fn keys(&self) -> &[ApiKeyConfig] {
        &self.keys
    }

    /// The name of the key, if `presented` is a key of any workspace (the simulation API's
    /// instance-wide routes).
    pub fn check_any(&self, presented: &str) -> Option<String> {
        let mut found = None;
        for k in &self.keys {
            if bool::from(k.key.as_bytes().ct_eq(presented.as_bytes())) && found.is_none() {
                found = Some(k.name.clone());
            }
        }
        found
    }

    /// The name of the key that opens `ws`, if `presented` is one.
    pub fn check(&self, presented: &str, ws: &WorkspaceRef) -> Option<String> {
        let mut found = None;
        // Compare against every key, without stopping early, in constant time per key.
        for k in &self.keys {
            if bool::from(k.key.as_bytes().ct_eq(presented.as_bytes()))
                && k.opens(ws)
                && found.is_none()
            {
                found = Some(k.name.clone());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_flags_parse() {
        let k = ApiKeyConfig::parse("org-1/ws-1=sk-1:ci").unwrap();
        assert_eq!(
            (
                k.org_id.as_str(),
                k.workspace_id.as_str(),
                k.key.as_str(),
                k.name.as_str()
            ),
            ("org-1", "ws-1", "sk-1", "ci")
        );
        assert_eq!(ApiKeyConfig::parse("o/w=k").unwrap().name, "api-key");
        assert!(ApiKeyConfig::parse("o=k").is_err());
        assert!(ApiKeyConfig::parse("o/w").is_err());
        assert!(ApiKeyConfig::parse("o/=k").is_err());
    }

    #[test]
    fn keys_open_only_their_workspace() {
        let t = KeyTable::new(vec![
            ApiKeyConfig::parse("o/a=ka:alice").unwrap(),
            ApiKeyConfig::parse("*/*=kall:local").unwrap(),
        ]);
        let a = WorkspaceRef::new("o", "a");
        let b = WorkspaceRef::new("o", "b");
        assert_eq!(t.check("ka", &a).as_deref(), Some("alice"));
        assert_eq!(t.check("ka", &b), None);
        assert_eq!(t.check("kall", &b).as_deref(), Some("local"));
        assert_eq!(t.check("k", &a), None);
        assert_eq!(t.check("", &a), None);
    }

    #[test]
    fn toml_config() {
        let c = PlatformConfig::from_toml(
            r#"
            listen = "127.0.0.1:0"
            database = ":memory:"
            strict = true
            [[api_keys]]
            org_id = "o"
            workspace_id = "w"
            key = "k"
            "#,
        )
        .unwrap();
        assert_eq!(c.database(), Database::Memory);
        assert!(c.strict);
        assert_eq!(c.api_keys[0].name, "api-key");
        assert!(PlatformConfig::from_toml("colour = 1").is_err());
        let bad = PlatformConfig {
            local_key: Some("AAAA".into()),
            ..Default::default()
        };
        assert!(bad.local_key_bytes().unwrap_err().contains("32 bytes"));
    }
}
