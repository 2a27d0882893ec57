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
