//! Configuration: what `serve`, `wrap` and `unwrap` read from a TOML file, and what tests
//! build in code with the builder methods of [`KmsConfig`].
//!
//! Every key, its default and a complete example are in the crate's `README.md`;
//! [`EXAMPLE_TOML`] is that example, and a test keeps the two the same.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::mutants::Mutant;

/// The path segment served when none is configured: `/partner/byok/v1/...`.
pub(crate) const DEFAULT_PARTNER: &str = "partner";
/// Largest difference allowed between `x-request-timestamp` and the service clock.
pub(crate) const DEFAULT_SKEW_SECS: u64 = 300;
/// Largest request body accepted, in bytes.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024;
/// Audit entries kept before the oldest are dropped.
pub(crate) const DEFAULT_AUDIT_CAPACITY: usize = 100_000;
/// Longest a `hang` fault holds a request, in wall-clock seconds.
pub(crate) const DEFAULT_MAX_HANG_SECS: u64 = 600;
/// `iss` of the tokens, unless configured.
pub(crate) const DEFAULT_ISSUER: &str = "customer-kms-sim";
/// `aud` of the tokens, unless configured.
pub(crate) const DEFAULT_AUDIENCE: &str = "byok";
/// Longest alias name, in bytes.
pub(crate) const MAX_ALIAS_LEN: usize = 128;
/// Most master-key versions an alias can have.
pub(crate) const MAX_VERSIONS: u32 = 10_000;

/// A complete configuration file; the same text is in `README.md`.
pub const EXAMPLE_TOML: &str = include_str!("../kms.example.toml");

/// A secret from the configuration: client secrets, API keys, master keys, signing secret,
/// admin token. Wiped from memory on drop, never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret::new)
    }
}

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(Zeroizing::new(value.into()))
    }

    /// The secret itself; call only where it is needed.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret::new(s)
    }
}

/// The whole configuration of one key service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KmsConfig {
    /// The `{partner}` path segment: endpoints are `/{partner}/byok/v1/...`.
    #[serde(default = "default_partner")]
    pub partner: String,
    /// Seed of every random choice (derived master keys and signing secret, nonces, data
    /// keys, token ids, fault draws). `None`: drawn at start and printed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Largest allowed difference between `x-request-timestamp` and the service clock.
    #[serde(default = "default_skew")]
    pub(crate) skew_secs: u64,
    /// Largest request body, in bytes; larger bodies answer 413.
    #[serde(default = "default_max_body")]
    pub(crate) max_body_bytes: usize,
    /// Bearer token of the admin API (`/_admin/...`). `None`: the admin API answers 401.
    #[serde(default)]
    pub admin_token: Option<Secret>,
    /// Audit entries kept; the oldest are dropped beyond this.
    #[serde(default = "default_audit_capacity")]
    pub audit_capacity: usize,
    /// Longest a `hang` fault holds a request, in wall-clock seconds.
    #[serde(default = "default_max_hang")]
    pub max_hang_secs: u64,
    /// Alias of `/rotate-key` calls without a body, when the caller has none of its own.
    /// `None`: the first alias.
    #[serde(default)]
    pub(crate) default_alias: Option<String>,
    /// Access tokens of `/auth`.
    #[serde(default)]
    pub(crate) token: TokenConfig,
    /// OAuth clients of `/auth` (client-credentials grant).
    #[serde(default)]
    pub clients: Vec<ClientConfig>,
    /// Long-lived static API keys, accepted as `Authorization: Bearer <key>`.
    #[serde(default)]
    pub(crate) api_keys: Vec<ApiKeyConfig>,
    /// Master keys, one entry per alias.
    #[serde(default)]
    pub aliases: Vec<AliasConfig>,
    /// Mutants switched on at start: each breaks one rule of the contract on purpose
    /// (see [`crate::mutants`]). Empty for a service that keeps the contract.
    #[serde(default)]
    pub mutants: Vec<Mutant>,
}

/// The access tokens `/auth` issues.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// `iss` claim, checked on every token.
    #[serde(default = "default_issuer")]
    pub(crate) issuer: String,
    /// `aud` claim, checked on every token.
    #[serde(default = "default_audience")]
    pub(crate) audience: String,
    /// Lifetime of a token in seconds (`expires_in`).
    #[serde(default = "default_expires_in")]
    pub(crate) expires_in: u64,
    /// HS256 signing secret, base64 of at least 32 bytes. `None`: derived from the seed.
    #[serde(default)]
    pub(crate) signing_secret: Option<Secret>,
}

impl Default for TokenConfig {
    fn default() -> Self {
        TokenConfig {
            issuer: default_issuer(),
            audience: default_audience(),
            expires_in: default_expires_in(),
            signing_secret: None,
        }
    }
}

/// One OAuth client.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// Client id: the user name of HTTP Basic, the `sub` of its tokens.
    pub id: String,
    /// One or two valid secrets (two while a secret is being rotated).
    pub secrets: Vec<Secret>,
    /// Alias for `/rotate-key` without a body.
    #[serde(default)]
    pub default_alias: Option<String>,
}

/// One static API key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// Name recorded as the caller in the audit log.
    pub(crate) name: String,
    /// The key, sent as `Authorization: Bearer <key>`.
    pub key: Secret,
    /// Alias for `/rotate-key` without a body.
    #[serde(default)]
    pub(crate) default_alias: Option<String>,
}

/// Whether an alias may be used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AliasStatus {
    /// Wraps and unwraps.
    #[default]
    Enabled,
    /// Refused with `KEY_DISABLED`; can be enabled again.
    Disabled,
    /// Refused with `KEY_REVOKED`, for good.
    Revoked,
}

impl AliasStatus {
    /// `enabled`, `disabled` or `revoked`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AliasStatus::Enabled => "enabled",
            AliasStatus::Disabled => "disabled",
            AliasStatus::Revoked => "revoked",
        }
    }
}

/// One key alias and its master keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AliasConfig {
    /// The alias (`key_alias` on the wire): 1 to 128 of `A-Z a-z 0-9 . _ : -`.
    pub name: String,
    /// Master keys, base64 of 32 bytes each, for versions 1, 2, ... in order. Empty: every
    /// version is derived from the seed.
    #[serde(default)]
    pub(crate) keys: Vec<Secret>,
    /// Number of versions at start. Versions beyond `keys` are derived from the seed.
    /// Default: the number of `keys`, or 1.
    #[serde(default)]
    pub(crate) versions: Option<u32>,
    /// Lowest version that still decrypts. Default 1.
    #[serde(default)]
    pub(crate) min_version: Option<u32>,
    /// `enabled` (default), `disabled` or `revoked`.
    #[serde(default)]
    pub(crate) status: AliasStatus,
}

impl AliasConfig {
    /// Number of versions at start.
    pub(crate) fn version_count(&self) -> u32 {
        self.versions
            .unwrap_or_else(|| u32::try_from(self.keys.len()).unwrap_or(u32::MAX).max(1))
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not valid TOML or has unknown keys or wrong types.
    #[error("invalid configuration: {0}")]
    Toml(String),
    /// A value breaks a rule.
    #[error("invalid configuration: {field}: {message}")]
    Invalid {
        /// Where, such as `clients[0].secrets`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

impl Default for KmsConfig {
    fn default() -> Self {
        KmsConfig::new(DEFAULT_PARTNER)
    }
}

impl KmsConfig {
    /// A configuration with defaults, serving `/{partner}/byok/v1/...`, and no clients, keys
    /// or aliases yet.
    pub fn new(partner: impl Into<String>) -> Self {
        KmsConfig {
            partner: partner.into(),
            seed: None,
            skew_secs: DEFAULT_SKEW_SECS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            admin_token: None,
            audit_capacity: DEFAULT_AUDIT_CAPACITY,
            max_hang_secs: DEFAULT_MAX_HANG_SECS,
            default_alias: None,
            token: TokenConfig::default(),
            clients: Vec::new(),
            api_keys: Vec::new(),
            aliases: Vec::new(),
            mutants: Vec::new(),
        }
    }

    /// Reads and checks a TOML configuration.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        let config: KmsConfig =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Reads and checks a TOML configuration file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        KmsConfig::from_toml_str(&text)
    }

    /// Pins the seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Adds a client with one or two secrets.
    pub fn with_client(mut self, id: &str, secrets: &[&str]) -> Self {
        self.clients.push(ClientConfig {
            id: id.into(),
            secrets: secrets.iter().map(|s| Secret::new(*s)).collect(),
            default_alias: None,
        });
        self
    }

    /// Adds a static API key.
    pub fn with_api_key(mut self, name: &str, key: &str) -> Self {
        self.api_keys.push(ApiKeyConfig {
            name: name.into(),
            key: Secret::new(key),
            default_alias: None,
        });
        self
    }

    /// Adds an alias with `versions` master-key versions derived from the seed.
    pub fn with_alias(mut self, name: &str, versions: u32) -> Self {
        self.aliases.push(AliasConfig {
            name: name.into(),
            keys: Vec::new(),
            versions: Some(versions),
            min_version: None,
            status: AliasStatus::Enabled,
        });
        self
    }

    /// Adds an alias with the given master keys (versions 1, 2, ...).
    #[cfg(test)]
    pub(crate) fn with_alias_keys(mut self, name: &str, keys: &[[u8; 32]]) -> Self {
        self.aliases.push(AliasConfig {
            name: name.into(),
            keys: keys
                .iter()
                .map(|k| Secret::new(STANDARD.encode(k)))
                .collect(),
            versions: None,
            min_version: None,
            status: AliasStatus::Enabled,
        });
        self
    }

    /// Sets the admin API token.
    pub fn with_admin_token(mut self, token: &str) -> Self {
        self.admin_token = Some(Secret::new(token));
        self
    }

    /// Sets the token lifetime (`expires_in`).
    pub fn with_expires_in(mut self, secs: u64) -> Self {
        self.token.expires_in = secs;
        self
    }

    /// Sets the allowed timestamp skew.
    pub fn with_skew_secs(mut self, secs: u64) -> Self {
        self.skew_secs = secs;
        self
    }

    /// Switches a mutant on at start.
    pub fn with_mutant(mut self, mutant: Mutant) -> Self {
        if !self.mutants.contains(&mutant) {
            self.mutants.push(mutant);
        }
        self
    }

    /// The alias `/rotate-key` uses without a body when the caller has no default.
    pub fn fallback_alias(&self) -> Option<&str> {
        self.default_alias
            .as_deref()
            .or_else(|| self.aliases.first().map(|a| a.name.as_str()))
    }

    /// Checks every rule; the first violation is reported with its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !is_path_segment(&self.partner) {
            return Err(invalid(
                "partner",
                "must be one URL path segment of A-Z a-z 0-9 . _ ~ - (and not `_admin`)",
            ));
        }
        if self.max_body_bytes < 64 {
            return Err(invalid("max_body_bytes", "must be at least 64"));
        }
        if self.audit_capacity == 0 {
            return Err(invalid("audit_capacity", "must be at least 1"));
        }
        if let Some(t) = &self.admin_token
            && t.expose().is_empty()
        {
            return Err(invalid("admin_token", "must not be empty"));
        }
        if self.token.expires_in == 0 {
            return Err(invalid("token.expires_in", "must be at least 1 second"));
        }
        if self.token.issuer.is_empty() {
            return Err(invalid("token.issuer", "must not be empty"));
        }
        if self.token.audience.is_empty() {
            return Err(invalid("token.audience", "must not be empty"));
        }
        if let Some(s) = &self.token.signing_secret {
            match STANDARD.decode(s.expose()) {
                Ok(bytes) if bytes.len() >= 32 => {}
                Ok(_) => {
                    return Err(invalid("token.signing_secret", "must be at least 32 bytes"));
                }
                Err(_) => {
                    return Err(invalid(
                        "token.signing_secret",
                        "must be base64 (standard alphabet, padded)",
                    ));
                }
            }
        }

        if self.aliases.is_empty() {
            return Err(invalid("aliases", "at least one alias is needed"));
        }
        let mut names = HashSet::new();
        for (i, a) in self.aliases.iter().enumerate() {
            let field = |f: &str| format!("aliases[{i}].{f}");
            if !is_alias_name(&a.name) {
                return Err(invalid(
                    field("name"),
                    format!("must be 1 to {MAX_ALIAS_LEN} of A-Z a-z 0-9 . _ : -"),
                ));
            }
            if !names.insert(a.name.as_str()) {
                return Err(invalid(
                    field("name"),
                    format!("alias {} appears twice", a.name),
                ));
            }
            for (k, key) in a.keys.iter().enumerate() {
                match STANDARD.decode(key.expose()) {
                    Ok(bytes) if bytes.len() == 32 => {}
                    Ok(bytes) => {
                        return Err(invalid(
                            field(&format!("keys[{k}]")),
                            format!("a master key is 32 bytes, this one is {}", bytes.len()),
                        ));
                    }
                    Err(_) => {
                        return Err(invalid(
                            field(&format!("keys[{k}]")),
                            "must be base64 (standard alphabet, padded) of 32 bytes",
                        ));
                    }
                }
            }
            let versions = a.version_count();
            if versions == 0 || versions > MAX_VERSIONS {
                return Err(invalid(
                    field("versions"),
                    format!("must be 1 to {MAX_VERSIONS}"),
                ));
            }
            if (versions as usize) < a.keys.len() {
                return Err(invalid(
                    field("versions"),
                    format!("is {versions} but {} keys are given", a.keys.len()),
                ));
            }
            if let Some(min) = a.min_version
                && (min == 0 || min > versions)
            {
                return Err(invalid(
                    field("min_version"),
                    format!("must be 1 to {versions} (the number of versions)"),
                ));
            }
        }
        let alias_known = |name: &str| self.aliases.iter().any(|a| a.name == name);
        if let Some(d) = &self.default_alias
            && !alias_known(d)
        {
            return Err(invalid("default_alias", format!("no alias named {d}")));
        }

        let mut ids = HashSet::new();
        for (i, c) in self.clients.iter().enumerate() {
            let field = |f: &str| format!("clients[{i}].{f}");
            if c.id.is_empty() || c.id.contains(':') || c.id.chars().any(char::is_control) {
                return Err(invalid(
                    field("id"),
                    "must be non-empty, without `:` or control characters",
                ));
            }
            if !ids.insert(c.id.as_str()) {
                return Err(invalid(
                    field("id"),
                    format!("client {} appears twice", c.id),
                ));
            }
            if c.secrets.is_empty() || c.secrets.len() > 2 {
                return Err(invalid(field("secrets"), "a client has one or two secrets"));
            }
            if c.secrets.iter().any(|s| s.expose().is_empty()) {
                return Err(invalid(field("secrets"), "a secret must not be empty"));
            }
            if let Some(d) = &c.default_alias
                && !alias_known(d)
            {
                return Err(invalid(
                    field("default_alias"),
                    format!("no alias named {d}"),
                ));
            }
        }

        let mut key_names = HashSet::new();
        let mut keys = HashSet::new();
        for (i, k) in self.api_keys.iter().enumerate() {
            let field = |f: &str| format!("api_keys[{i}].{f}");
            if k.name.is_empty() {
                return Err(invalid(field("name"), "must not be empty"));
            }
            if !key_names.insert(k.name.as_str()) {
                return Err(invalid(
                    field("name"),
                    format!("API key {} appears twice", k.name),
                ));
            }
            if k.key.expose().is_empty() || k.key.expose().chars().any(char::is_whitespace) {
                return Err(invalid(
                    field("key"),
                    "must be non-empty, without whitespace",
                ));
            }
            if !keys.insert(k.key.expose()) {
                return Err(invalid(field("key"), "two API keys have the same value"));
            }
            if let Some(d) = &k.default_alias
                && !alias_known(d)
            {
                return Err(invalid(
                    field("default_alias"),
                    format!("no alias named {d}"),
                ));
            }
        }
        Ok(())
    }
}

fn is_path_segment(s: &str) -> bool {
    !s.is_empty()
        && s != "_admin"
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
        && s != "."
        && s != ".."
}

/// Whether `s` is a valid alias name: 1 to 128 of `A-Z a-z 0-9 . _ : -`.
pub(crate) fn is_alias_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ALIAS_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

fn default_partner() -> String {
    DEFAULT_PARTNER.into()
}
fn default_skew() -> u64 {
    DEFAULT_SKEW_SECS
}
fn default_max_body() -> usize {
    DEFAULT_MAX_BODY_BYTES
}
fn default_audit_capacity() -> usize {
    DEFAULT_AUDIT_CAPACITY
}
fn default_max_hang() -> u64 {
    DEFAULT_MAX_HANG_SECS
}
fn default_issuer() -> String {
    DEFAULT_ISSUER.into()
}
fn default_audience() -> String {
    DEFAULT_AUDIENCE.into()
}
fn default_expires_in() -> u64 {
    contracts::wire::byok::DEFAULT_EXPIRES_IN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal() -> KmsConfig {
        KmsConfig::new("acme")
            .with_client("platform", &["s1"])
            .with_alias("tenant-a", 1)
    }

    #[test]
    fn example_file_parses_and_validates() {
        let c = KmsConfig::from_toml_str(EXAMPLE_TOML).unwrap();
        assert_eq!(c.partner, "acme");
        assert_eq!(c.clients[0].secrets.len(), 2);
        assert_eq!(c.aliases.len(), 3);
        assert_eq!(c.fallback_alias(), Some("tenant-a"));
    }

    /// Every key of the configuration is in the example, set or commented out: the
    /// destructurings below stop compiling when a field is added, until it is listed here
    /// (and so in the example).
    #[test]
    fn the_example_shows_every_key() {
        let c = KmsConfig::from_toml_str(EXAMPLE_TOML).unwrap();
        let KmsConfig {
            partner: _,
            seed: _,
            skew_secs: _,
            max_body_bytes: _,
            admin_token: _,
            audit_capacity: _,
            max_hang_secs: _,
            default_alias: _,
            token,
            clients,
            api_keys,
            aliases,
            mutants: _,
        } = c;
        let TokenConfig {
            issuer: _,
            audience: _,
            expires_in: _,
            signing_secret: _,
        } = token;
        let ClientConfig {
            id: _,
            secrets: _,
            default_alias: _,
        } = &clients[0];
        let ApiKeyConfig {
            name: _,
            key: _,
            default_alias: _,
        } = &api_keys[0];
        let AliasConfig {
            name: _,
            keys: _,
            versions: _,
            min_version: _,
            status: _,
        } = &aliases[0];
        let keys = [
            "partner",
            "seed",
            "skew_secs",
            "max_body_bytes",
            "admin_token",
            "audit_capacity",
            "max_hang_secs",
            "default_alias",
            "[token]",
            "issuer",
            "audience",
            "expires_in",
            "signing_secret",
            "[[clients]]",
            "id",
            "secrets",
            "[[api_keys]]",
            "name",
            "key",
            "[[aliases]]",
            "keys",
            "versions",
            "min_version",
            "status",
            "mutants",
        ];
        let lines: Vec<&str> = EXAMPLE_TOML
            .lines()
            .map(|l| l.trim_start_matches('#').trim_start())
            .collect();
        for k in keys {
            assert!(
                lines
                    .iter()
                    .any(|l| *l == k || l.starts_with(&format!("{k} ="))),
                "kms.example.toml lacks {k}"
            );
        }
        // The commented mutants line, switched on, is valid.
        let line = EXAMPLE_TOML
            .lines()
            .find_map(|l| l.strip_prefix("# mutants = "))
            .unwrap();
        let c = KmsConfig::from_toml_str(&format!("mutants = {line}\n[[aliases]]\nname = \"a\"\n"))
            .unwrap();
        assert_eq!(c.mutants, [Mutant::WrongTokenType]);
    }

    #[test]
    fn readme_shows_the_example_file_verbatim() {
        assert!(
            include_str!("../README.md").contains(EXAMPLE_TOML),
            "README.md must hold kms.example.toml exactly"
        );
    }

    #[test]
    fn defaults_fill_in() {
        let c = KmsConfig::from_toml_str("[[aliases]]\nname = \"a\"\n").unwrap();
        assert_eq!(c.partner, DEFAULT_PARTNER);
        assert_eq!(c.skew_secs, 300);
        assert_eq!(c.token.expires_in, 3600);
        assert_eq!(c.token.audience, "byok");
        assert_eq!(c.aliases[0].version_count(), 1);
        assert_eq!(c.aliases[0].status, AliasStatus::Enabled);
        assert!(c.admin_token.is_none());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e =
            KmsConfig::from_toml_str("parnter = \"x\"\n[[aliases]]\nname = \"a\"\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `parnter`"), "{e}");
    }

    #[test]
    fn secrets_never_print() {
        let c = KmsConfig::from_toml_str(EXAMPLE_TOML).unwrap();
        let dbg = format!("{c:?}");
        for s in &c.clients[0].secrets {
            assert!(!dbg.contains(s.expose()));
        }
        assert!(!dbg.contains(c.api_keys[0].key.expose()));
        assert!(dbg.contains("Secret(***)"));
    }

    #[rstest::rstest]
    #[case::bad_partner(|c: &mut KmsConfig| c.partner = "a/b".into(), "partner")]
    #[case::admin_partner(|c: &mut KmsConfig| c.partner = "_admin".into(), "partner")]
    #[case::no_alias(|c: &mut KmsConfig| c.aliases.clear(), "aliases")]
    #[case::alias_name(|c: &mut KmsConfig| c.aliases[0].name = "a b".into(), "aliases[0].name")]
    #[case::alias_twice(|c: &mut KmsConfig| { let a = c.aliases[0].clone(); c.aliases.push(a) }, "aliases[1].name")]
    #[case::short_key(|c: &mut KmsConfig| c.aliases[0].keys = vec![Secret::new("AAAA")], "aliases[0].keys[0]")]
    #[case::bad_key(|c: &mut KmsConfig| c.aliases[0].keys = vec![Secret::new("%%")], "aliases[0].keys[0]")]
    #[case::fewer_versions(|c: &mut KmsConfig| { c.aliases[0].keys = vec![Secret::new(STANDARD.encode([0u8; 32])); 2]; c.aliases[0].versions = Some(1) }, "aliases[0].versions")]
    #[case::zero_versions(|c: &mut KmsConfig| c.aliases[0].versions = Some(0), "aliases[0].versions")]
    #[case::min_version(|c: &mut KmsConfig| c.aliases[0].min_version = Some(2), "aliases[0].min_version")]
    #[case::default_alias(|c: &mut KmsConfig| c.default_alias = Some("nope".into()), "default_alias")]
    #[case::three_secrets(|c: &mut KmsConfig| c.clients[0].secrets = vec!["a".into(), "b".into(), "c".into()], "clients[0].secrets")]
    #[case::no_secret(|c: &mut KmsConfig| c.clients[0].secrets.clear(), "clients[0].secrets")]
    #[case::empty_secret(|c: &mut KmsConfig| c.clients[0].secrets = vec!["".into()], "clients[0].secrets")]
    #[case::colon_id(|c: &mut KmsConfig| c.clients[0].id = "a:b".into(), "clients[0].id")]
    #[case::client_twice(|c: &mut KmsConfig| { let x = c.clients[0].clone(); c.clients.push(x) }, "clients[1].id")]
    #[case::same_api_key(|c: &mut KmsConfig| { *c = c.clone().with_api_key("a", "k").with_api_key("b", "k") }, "api_keys[1].key")]
    #[case::zero_lifetime(|c: &mut KmsConfig| c.token.expires_in = 0, "token.expires_in")]
    #[case::short_signing_secret(|c: &mut KmsConfig| c.token.signing_secret = Some(Secret::new(STANDARD.encode([1u8; 16]))), "token.signing_secret")]
    #[case::tiny_body(|c: &mut KmsConfig| c.max_body_bytes = 10, "max_body_bytes")]
    fn rules(#[case] break_it: fn(&mut KmsConfig), #[case] field: &str) {
        let mut c = minimal();
        c.validate().expect("the minimal config is valid");
        break_it(&mut c);
        match c.validate() {
            Err(ConfigError::Invalid { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected an error on {field}, got {other:?}"),
        }
    }
}
