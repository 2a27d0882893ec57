//! BYOK settings: the workspaces whose data keys come from the customer's key service.
//!
//! [`ByokSettings`] is the one description of a workspace's BYOK settings: its fields are the
//! configuration file's `[[byok]]` keys (serde), the `--byok-...` flags and the
//! `PLATFORM_BYOK_...` environment variables (clap; a flag wins over its variable). The
//! file's entries become [`ByokConfig`] as they are read; [`ByokSettings::apply`] lays the
//! flags and environment over the entry of the workspace they name, or makes one. A
//! [`ByokConfig`] is a complete entry, its defaults filled in; [`ByokConfig::validate`]
//! names every problem of it.

use serde::Deserialize;

use crate::store::WorkspaceRef;

mod settings;

pub use settings::ByokSettings;

/// A secret of the configuration (a client secret, a static API key): `Debug` never shows
/// it, and it is zeroed when dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(zeroize::Zeroizing<String>);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(zeroize::Zeroizing::new(value.into()))
    }

    /// The value, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret::new)
    }
}

/// Default of [`ByokConfig::data_key_cache_secs`]: five minutes.
pub const BYOK_DATA_KEY_CACHE_SECS: u64 = 300;
/// Default of [`ByokConfig::request_timeout_ms`]: five seconds.
pub const BYOK_REQUEST_TIMEOUT_MS: u64 = 5_000;
/// Longest allowed data-key cache lifetime: a day.
pub const BYOK_DATA_KEY_CACHE_SECS_MAX: u64 = 86_400;
/// Longest allowed request timeout: ten minutes.
pub const BYOK_REQUEST_TIMEOUT_MS_MAX: u64 = 600_000;
/// Shortest allowed rotation period: a minute.
pub const BYOK_ROTATION_PERIOD_SECS_MIN: u64 = 60;
/// Longest allowed rotation period: ten years.
pub const BYOK_ROTATION_PERIOD_SECS_MAX: u64 = 10 * 366 * 86_400;
/// The prefix every encrypted data key carries; the rest is the key service's business.
pub const BYOK_KEY_PREFIX: &str = "byok:v1:";

/// BYOK for one workspace, complete: its data keys are decrypted by the customer's key
/// service at `{customer_base_url}/{partner}/byok/v1/...` (see [`crate::keys::byok`]). A
/// workspace without an entry uses the platform's local key. Read from the file through
/// [`ByokSettings`], whose fields document each setting.
///
/// Authentication is one of two methods: client credentials (`client_id` and
/// `client_secret`, exchanged at `/auth` for a token) or a static API key (`api_key`, sent as
/// the bearer token; `/auth` is never called).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ByokSettings")]
pub struct ByokConfig {
    /// The org of the workspace.
    pub org_id: String,
    /// The workspace.
    pub workspace_id: String,
    /// The customer's address, `http(s)://host[:port][/path]`.
    pub customer_base_url: String,
    /// The `{partner}` path segment.
    pub partner: String,
    /// Client id of the client-credentials method (the Basic user name at `/auth`).
    pub client_id: Option<String>,
    /// Client secret of the client-credentials method.
    pub client_secret: Option<Secret>,
    /// A static API key, instead of client credentials.
    pub api_key: Option<Secret>,
    /// The alias of the master key that decrypts `encrypted_key`.
    pub key_alias: String,
    /// The workspace's encrypted data key, `byok:v1:...` (opaque beyond the prefix).
    pub encrypted_key: String,
    /// How long a decrypted data key stays in memory, in seconds of the injected clock.
    pub data_key_cache_secs: u64,
    /// How long one call to the key service may take, in milliseconds (wall clock).
    pub request_timeout_ms: u64,
    /// Rotate the data key (`rotate-key`) when the active one is this many seconds old, on
    /// the injected clock; none: only through the admin route.
    pub rotation_period_secs: Option<u64>,
}

/// How the platform authenticates to the key service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByokAuth<'a> {
    /// Client credentials, exchanged at `/auth` for a short-lived token.
    ClientCredentials {
        /// The client id.
        client_id: &'a str,
        /// The client secret.
        client_secret: &'a Secret,
    },
    /// A long-lived static API key, sent as the bearer token.
    ApiKey(&'a Secret),
}

impl ByokAuth<'_> {
    /// `client credentials` or `static API key`, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            ByokAuth::ClientCredentials { client_id, .. } => {
                format!("client credentials of client '{client_id}'")
            }
            ByokAuth::ApiKey(_) => "a static API key".into(),
        }
    }
}

fn is_partner(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

fn is_workspace_part(s: &str) -> bool {
    !s.is_empty() && s != "*" && !s.contains('/')
}

impl ByokConfig {
    /// The workspace this entry is for.
    pub(crate) fn workspace(&self) -> WorkspaceRef {
        WorkspaceRef::new(&self.org_id, &self.workspace_id)
    }

    /// The authentication method: exactly one of client credentials and a static key.
    pub(crate) fn auth(&self) -> Result<ByokAuth<'_>, String> {
        match (&self.client_id, &self.client_secret, &self.api_key) {
            (Some(id), Some(secret), None) => {
                if id.is_empty() || id.contains(':') {
                    Err("client_id must be non-empty and hold no ':' (HTTP Basic)".into())
                } else if secret.expose().is_empty() {
                    Err("client_secret must not be empty".into())
                } else {
                    Ok(ByokAuth::ClientCredentials {
                        client_id: id,
                        client_secret: secret,
                    })
                }
            }
            (None, None, Some(key)) => {
                if key.expose().is_empty() {
                    Err("api_key must not be empty".into())
                } else {
                    Ok(ByokAuth::ApiKey(key))
                }
            }
            (None, None, None) => Err(
                "no credentials: set client_id and client_secret (client credentials) or api_key (a static key)"
                    .into(),
            ),
            (_, _, Some(_)) => Err(
                "set either client_id and client_secret (client credentials) or api_key (a static key), not both"
                    .into(),
            ),
            (Some(_), None, None) => Err("client_id is set but client_secret is not".into()),
            (None, Some(_), None) => Err("client_secret is set but client_id is not".into()),
        }
    }

    /// `customer_base_url` parsed: http or https, a host, no credentials, query or fragment;
    /// a trailing `/` dropped.
    pub(crate) fn base_url(&self) -> Result<String, String> {
        let url = url::Url::parse(&self.customer_base_url)
            .map_err(|e| format!("customer_base_url is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "customer_base_url must be http or https, not '{}'",
                url.scheme()
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("customer_base_url has no host".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("customer_base_url must not carry credentials; use client_id and client_secret or api_key".into());
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err("customer_base_url must not have a query or fragment".into());
        }
        Ok(url.as_str().trim_end_matches('/').to_string())
    }

    /// Every problem of the entry, or nothing.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if !is_workspace_part(&self.org_id) || !is_workspace_part(&self.workspace_id) {
            problems.push(
                "org_id and workspace_id must name one workspace (not empty, not '*', no '/')"
                    .to_string(),
            );
        }
        if let Err(e) = self.base_url() {
            problems.push(e);
        }
        if !is_partner(&self.partner) {
            problems
                .push("partner must be 1 to 128 of A-Z a-z 0-9 . _ ~ - (one path segment)".into());
        }
        if let Err(e) = self.auth() {
            problems.push(e);
        }
        if self.key_alias.is_empty()
            || self.key_alias.len() > 256
            || self.key_alias.chars().any(char::is_control)
        {
            problems.push("key_alias must be 1 to 256 bytes without control characters".into());
        }
        if !self.encrypted_key.starts_with(BYOK_KEY_PREFIX)
            || self.encrypted_key.len() == BYOK_KEY_PREFIX.len()
        {
            problems.push(format!(
                "encrypted_key must be the encrypted data key from the key service, starting with '{BYOK_KEY_PREFIX}'"
            ));
        }
        if !(1..=BYOK_DATA_KEY_CACHE_SECS_MAX).contains(&self.data_key_cache_secs) {
            problems.push(format!(
                "data_key_cache_secs must be 1 to {BYOK_DATA_KEY_CACHE_SECS_MAX}, not {}",
                self.data_key_cache_secs
            ));
        }
        if !(1..=BYOK_REQUEST_TIMEOUT_MS_MAX).contains(&self.request_timeout_ms) {
            problems.push(format!(
                "request_timeout_ms must be 1 to {BYOK_REQUEST_TIMEOUT_MS_MAX}, not {}",
                self.request_timeout_ms
            ));
        }
        if let Some(p) = self.rotation_period_secs
            && !(BYOK_ROTATION_PERIOD_SECS_MIN..=BYOK_ROTATION_PERIOD_SECS_MAX).contains(&p)
        {
            problems.push(format!(
                "rotation_period_secs must be {BYOK_ROTATION_PERIOD_SECS_MIN} to {BYOK_ROTATION_PERIOD_SECS_MAX}, not {p}"
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "byok for {}/{}: {}",
                self.org_id,
                self.workspace_id,
                problems.join("; ")
            ))
        }
    }

    /// One line for the start-up output: the workspace, the service, the alias and the
    /// method; never a secret.
    pub(crate) fn summary(&self) -> String {
        let auth = self
            .auth()
            .map(|a| a.describe())
            .unwrap_or_else(|e| e.to_string());
        let rotation = match self.rotation_period_secs {
            Some(p) => format!(", rotation every {p} s"),
            None => String::new(),
        };
        format!(
            "{}/{} -> {}/{}/byok/v1 (alias {}, {auth}, data keys cached {} s{rotation})",
            self.org_id,
            self.workspace_id,
            self.customer_base_url.trim_end_matches('/'),
            self.partner,
            self.key_alias,
            self.data_key_cache_secs
        )
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::PlatformConfig;

    pub(super) const BYOK_TOML: &str = r#"
        [[byok]]
        org_id = "o"
        workspace_id = "w"
        customer_base_url = "https://kms.example.com/base/"
        partner = "acme"
        client_id = "platform"
        client_secret = "s3cret-value"
        key_alias = "tenant-a"
        encrypted_key = "byok:v1:AAAA"
    "#;

    #[test]
    fn byok_entries_read_with_their_defaults() {
        let c = PlatformConfig::from_toml(BYOK_TOML).unwrap();
        c.validate_byok().unwrap();
        let e = &c.byok[0];
        assert_eq!(e.data_key_cache_secs, 300);
        assert_eq!(e.request_timeout_ms, 5000);
        assert_eq!(e.rotation_period_secs, None);
        assert_eq!(e.base_url().unwrap(), "https://kms.example.com/base");
        assert!(matches!(
            e.auth().unwrap(),
            ByokAuth::ClientCredentials {
                client_id: "platform",
                ..
            }
        ));
        assert!(
            !format!("{c:?}").contains("s3cret-value"),
            "Debug never shows a secret"
        );
        assert!(!e.summary().contains("s3cret-value"));
        assert!(
            PlatformConfig::from_toml(&BYOK_TOML.replace("partner =", "colour = 1\npartner ="))
                .is_err()
        );
    }

    #[test]
    fn byok_entries_report_every_problem() {
        let mut c = PlatformConfig::from_toml(BYOK_TOML).unwrap();
        let e = &mut c.byok[0];
        e.customer_base_url = "ftp://user:pw@kms.example.com".into();
        e.partner = "a/b".into();
        e.api_key = Some(Secret::new("k"));
        e.key_alias = String::new();
        e.encrypted_key = "byok:v2:AAAA".into();
        e.data_key_cache_secs = 0;
        e.request_timeout_ms = 0;
        e.rotation_period_secs = Some(1);
        let err = c.byok[0].validate().unwrap_err();
        for part in [
            "byok for o/w: ",
            "customer_base_url must be http or https",
            "partner must be",
            "not both",
            "key_alias must be",
            "encrypted_key must be",
            "data_key_cache_secs must be 1 to 86400, not 0",
            "request_timeout_ms must be 1 to 600000, not 0",
            "rotation_period_secs must be 60",
        ] {
            assert!(err.contains(part), "{part} in {err}");
        }
        assert!(!err.contains("pw"), "no credentials echoed: {err}");
        let mut twice = PlatformConfig::from_toml(BYOK_TOML).unwrap();
        twice.byok.push(twice.byok[0].clone());
        assert!(
            twice
                .validate_byok()
                .unwrap_err()
                .contains("more than one entry")
        );
    }

    #[test]
    fn byok_auth_is_exactly_one_method() {
        let base = PlatformConfig::from_toml(BYOK_TOML).unwrap().byok[0].clone();
        let with = |id: Option<&str>, secret: Option<&str>, key: Option<&str>| ByokConfig {
            client_id: id.map(str::to_string),
            client_secret: secret.map(Secret::new),
            api_key: key.map(Secret::new),
            ..base.clone()
        };
        assert!(matches!(
            with(None, None, Some("k")).auth(),
            Ok(ByokAuth::ApiKey(_))
        ));
        assert!(
            with(None, None, None)
                .auth()
                .unwrap_err()
                .contains("no credentials")
        );
        assert!(
            with(Some("p"), None, None)
                .auth()
                .unwrap_err()
                .contains("client_id is set but client_secret is not")
        );
        assert!(
            with(None, Some("s"), None)
                .auth()
                .unwrap_err()
                .contains("client_secret is set but client_id is not")
        );
        assert!(
            with(Some("a:b"), Some("s"), None)
                .auth()
                .unwrap_err()
                .contains("':'")
        );
        assert!(
            with(None, None, Some(""))
                .auth()
                .unwrap_err()
                .contains("api_key must not be empty")
        );
    }
}
