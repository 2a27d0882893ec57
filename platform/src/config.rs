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
//! clock_admin_keys = ["sk-clock"]   # only these keys move the simulated clock
//! header_read_timeout_ms = 30000    # a request head must arrive within this (408 after);
//!                                   #   an idle keep-alive connection closes after it too
//! body_read_timeout_ms = 30000      # longest pause inside a request body (408 after)
//! max_connections = 1024            # more wait until one closes (lowered to fit ulimit -n)
//!
//! [[deployment_webhooks]]           # where a workspace's inbound-call events go
//! org_id = "org-1"
//! workspace_id = "ws-1"
//! url = "https://hooks.example.com/inbound"
//!
//! [telephony]                       # the simulated telephony (see telephony-sim)
//! seed = 7                          # default: the platform's seed
//!
//! [telephony.model]                 # every field optional; see telephony_sim::Model
//! connected_rate = 0.2
//! long_call_median_secs = 90.0
//!
//! [[api_keys]]
//! org_id = "org-1"
//! workspace_id = "ws-1"
//! key = "sk-test-1"
//! name = "ci"                       # shown as created_by / updated_by
//!
//! [[byok]]                          # this workspace's data keys come from the customer
//! org_id = "org-1"
//! workspace_id = "ws-1"
//! customer_base_url = "https://kms.customer.example"
//! partner = "acme"                  # {customer_base_url}/{partner}/byok/v1/...
//! client_id = "platform"            # client credentials (/auth) ...
//! client_secret = "..."             #   (or from PLATFORM_BYOK_CLIENT_SECRET)
//! # api_key = "sk_..."              # ... or a static API key instead
//! key_alias = "tenant-a"
//! encrypted_key = "byok:v1:..."
//! data_key_cache_secs = 300         # plaintext data key kept in memory (injected clock)
//! request_timeout_ms = 5000         # per call to the key service (wall clock)
//! rotation_period_secs = 2592000    # optional: rotate when the active key is this old
//!
//! [journal]                         # the request journal (GET /sim/v1/journal)
//! capacity = 10000                  # entries kept in memory; 0 turns the journal off
//! body_limit_bytes = 8192           # larger bodies are kept as their size only
//! persist = false                   # also keep entries in the database
//! response_bodies = "failures"      # answers' bodies kept: "failures" (400 and above) or "all"
//!
//! [[faults]]                        # failures on demand; more through /sim/v1/faults
//! kind = "rate_limit"               # status | delay | drop | truncate | rate_limit
//! requests_per_second = 50.0        # per API key
//! burst = 100
//!
//! [[faults]]
//! kind = "status"
//! status = 503
//! operation_id = "list_deployments" # or path = "/api/app-authoring/v1/orgs/*/..."
//! from = "2026-03-02T12:10:00Z"     # on the platform's clock (simulated or real)
//! until = "2026-03-02T12:20:00Z"
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

// ----- BYOK: data keys from the customer's key service, per workspace -----

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
    pub fn expose(&self) -> &str {
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

fn default_data_key_cache_secs() -> u64 {
    BYOK_DATA_KEY_CACHE_SECS
}

fn default_request_timeout_ms() -> u64 {
    BYOK_REQUEST_TIMEOUT_MS
}

/// BYOK for one workspace: its data keys are decrypted by the customer's key service at
/// `{customer_base_url}/{partner}/byok/v1/...` (see [`crate::keys::byok`]). A workspace without an
/// entry uses the platform's local key.
///
/// Authentication is one of two methods: client credentials (`client_id` and
/// `client_secret`, exchanged at `/auth` for a token) or a static API key (`api_key`, sent as
/// the bearer token; `/auth` is never called).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
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
    #[serde(default)]
    pub client_id: Option<String>,
    /// Client secret of the client-credentials method.
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// A static API key, instead of client credentials.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// The alias of the master key that decrypts `encrypted_key`.
    pub key_alias: String,
    /// The workspace's encrypted data key, `byok:v1:...` (opaque beyond the prefix).
    pub encrypted_key: String,
    /// How long a decrypted data key stays in memory, in seconds of the injected clock.
    #[serde(default = "default_data_key_cache_secs")]
    pub data_key_cache_secs: u64,
    /// How long one call to the key service may take, in milliseconds (wall clock).
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Rotate the data key (`rotate-key`) when the active one is this many seconds old, on
    /// the injected clock; none: only through the admin route.
    #[serde(default)]
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
    pub fn describe(&self) -> String {
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
    pub fn workspace(&self) -> WorkspaceRef {
        WorkspaceRef::new(&self.org_id, &self.workspace_id)
    }

    /// The authentication method: exactly one of client credentials and a static key.
    pub fn auth(&self) -> Result<ByokAuth<'_>, String> {
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
    pub fn base_url(&self) -> Result<String, String> {
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
    pub fn validate(&self) -> Result<(), String> {
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
    pub fn summary(&self) -> String {
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

/// BYOK settings of one workspace from flags or environment variables, laid over the
/// configuration file's entry for that workspace (or making a new one). Fields not given
/// keep the file's values, so a file can hold everything but the secret, which comes from
/// the environment.
#[derive(Debug, Clone, Default)]
pub struct ByokOverride {
    /// `ORG/WORKSPACE`: which workspace (required when any other field is given).
    pub workspace: Option<String>,
    /// See [`ByokConfig::customer_base_url`].
    pub customer_base_url: Option<String>,
    /// See [`ByokConfig::partner`].
    pub partner: Option<String>,
    /// See [`ByokConfig::client_id`]; replaces a file's `api_key`.
    pub client_id: Option<String>,
    /// See [`ByokConfig::client_secret`]; replaces a file's `api_key`.
    pub client_secret: Option<Secret>,
    /// See [`ByokConfig::api_key`]; replaces a file's client credentials.
    pub api_key: Option<Secret>,
    /// See [`ByokConfig::key_alias`].
    pub key_alias: Option<String>,
    /// See [`ByokConfig::encrypted_key`].
    pub encrypted_key: Option<String>,
    /// See [`ByokConfig::data_key_cache_secs`].
    pub data_key_cache_secs: Option<u64>,
    /// See [`ByokConfig::request_timeout_ms`].
    pub request_timeout_ms: Option<u64>,
    /// See [`ByokConfig::rotation_period_secs`].
    pub rotation_period_secs: Option<u64>,
}

impl ByokOverride {
    /// Whether no field was given.
    pub fn is_empty(&self) -> bool {
        self.workspace.is_none()
            && self.customer_base_url.is_none()
            && self.partner.is_none()
            && self.client_id.is_none()
            && self.client_secret.is_none()
            && self.api_key.is_none()
            && self.key_alias.is_none()
            && self.encrypted_key.is_none()
            && self.data_key_cache_secs.is_none()
            && self.request_timeout_ms.is_none()
            && self.rotation_period_secs.is_none()
    }

    /// Lays these settings over `entries`: over the entry of the same workspace, or as a new
    /// entry (which then needs every required setting).
    pub fn apply(self, entries: &mut Vec<ByokConfig>) -> Result<(), String> {
        if self.is_empty() {
            return Ok(());
        }
        let Some(scope) = &self.workspace else {
            return Err(
                "the BYOK flags need --byok-workspace ORG/WORKSPACE (PLATFORM_BYOK_WORKSPACE)"
                    .into(),
            );
        };
        let (org_id, workspace_id) = scope
            .split_once('/')
            .ok_or_else(|| format!("--byok-workspace '{scope}': expected ORG/WORKSPACE"))?;
        let index = entries
            .iter()
            .position(|e| e.org_id == org_id && e.workspace_id == workspace_id);
        let mut entry = match index {
            Some(i) => entries[i].clone(),
            None => {
                let mut missing = Vec::new();
                for (given, flag) in [
                    (self.customer_base_url.is_some(), "--byok-base-url"),
                    (self.partner.is_some(), "--byok-partner"),
                    (self.key_alias.is_some(), "--byok-key-alias"),
                    (self.encrypted_key.is_some(), "--byok-encrypted-key"),
                ] {
                    if !given {
                        missing.push(flag);
                    }
                }
                if !missing.is_empty() {
                    return Err(format!(
                        "BYOK for {scope} is not in the configuration file, so {} must be given too",
                        missing.join(", ")
                    ));
                }
                ByokConfig {
                    org_id: org_id.into(),
                    workspace_id: workspace_id.into(),
                    customer_base_url: String::new(),
                    partner: String::new(),
                    client_id: None,
                    client_secret: None,
                    api_key: None,
                    key_alias: String::new(),
                    encrypted_key: String::new(),
                    data_key_cache_secs: BYOK_DATA_KEY_CACHE_SECS,
                    request_timeout_ms: BYOK_REQUEST_TIMEOUT_MS,
                    rotation_period_secs: None,
                }
            }
        };
        if let Some(v) = self.customer_base_url {
            entry.customer_base_url = v;
        }
        if let Some(v) = self.partner {
            entry.partner = v;
        }
        if self.client_id.is_some() || self.client_secret.is_some() {
            entry.api_key = None;
            if let Some(v) = self.client_id {
                entry.client_id = Some(v);
            }
            if let Some(v) = self.client_secret {
                entry.client_secret = Some(v);
            }
        }
        if let Some(v) = self.api_key {
            entry.api_key = Some(v);
            entry.client_id = None;
            entry.client_secret = None;
        }
        if let Some(v) = self.key_alias {
            entry.key_alias = v;
        }
        if let Some(v) = self.encrypted_key {
            entry.encrypted_key = v;
        }
        if let Some(v) = self.data_key_cache_secs {
            entry.data_key_cache_secs = v;
        }
        if let Some(v) = self.request_timeout_ms {
            entry.request_timeout_ms = v;
        }
        if let Some(v) = self.rotation_period_secs {
            entry.rotation_period_secs = Some(v);
        }
        match index {
            Some(i) => entries[i] = entry,
            None => entries.push(entry),
        }
        Ok(())
    }
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
    /// BYOK: the workspaces whose data keys come from the customer's key service.
    pub byok: Vec<ByokConfig>,
    /// Keys that may move the simulated clock (`PUT /sim/v1/clock`,
    /// `POST /sim/v1/clock/advance`); when empty, any workspace's key may. The one clock is
    /// shared by every workspace, so a platform shared by several teams names its operator's
    /// keys here.
    pub clock_admin_keys: Vec<String>,
    /// Longest time to receive a request's head, in milliseconds (wall clock); also how
    /// long an idle keep-alive connection stays open.
    pub header_read_timeout_ms: u64,
    /// Longest pause while receiving a request body, in milliseconds (wall clock).
    pub body_read_timeout_ms: u64,
    /// Most client connections open at once; further ones wait until one closes.
    pub max_connections: u64,
    /// The request journal (`GET /sim/v1/journal`).
    pub journal: crate::journal::JournalSettings,
    /// Fault rules in force from the start (more through `/sim/v1/faults`).
    pub faults: Vec<contracts::wire::FaultRule>,
}

/// Default of [`PlatformConfig::header_read_timeout_ms`]: 30 seconds.
pub const HEADER_READ_TIMEOUT_MS: u64 = 30_000;
/// Default of [`PlatformConfig::body_read_timeout_ms`]: 30 seconds.
pub const BODY_READ_TIMEOUT_MS: u64 = 30_000;
/// Longest allowed read timeout: an hour.
pub const READ_TIMEOUT_MS_MAX: u64 = 3_600_000;
/// Default of [`PlatformConfig::max_connections`].
pub const MAX_CONNECTIONS: u64 = 1024;
/// Largest allowed [`PlatformConfig::max_connections`].
pub const MAX_CONNECTIONS_MAX: u64 = 1_000_000;

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
            byok: Vec::new(),
            clock_admin_keys: Vec::new(),
            header_read_timeout_ms: HEADER_READ_TIMEOUT_MS,
            body_read_timeout_ms: BODY_READ_TIMEOUT_MS,
            max_connections: MAX_CONNECTIONS,
            journal: crate::journal::JournalSettings::default(),
            faults: Vec::new(),
        }
    }
}

impl PlatformConfig {
    /// Reads a TOML file.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// Checks every BYOK entry, and that no workspace has two.
    pub fn validate_byok(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (i, entry) in self.byok.iter().enumerate() {
            if let Err(e) = entry.validate() {
                problems.push(e);
            }
            if self.byok[..i]
                .iter()
                .any(|e| e.org_id == entry.org_id && e.workspace_id == entry.workspace_id)
            {
                problems.push(format!(
                    "byok for {}/{}: the workspace has more than one entry",
                    entry.org_id, entry.workspace_id
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// Checks every fault rule with the rules of `POST /sim/v1/faults`; problems are named
    /// by their place in the file (`faults.0.status: Field required ...`).
    pub fn validate_faults(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (i, rule) in self.faults.iter().enumerate() {
            let root = contracts::error::Loc::root().at("faults").at(i);
            if let Err(e) = contracts::validate::fault_rule_value(rule, &root) {
                for d in e.details() {
                    problems.push(format!("{}: {}", d.dotted_loc(), d.msg));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    /// Checks the connection limits and the clock admin keys.
    pub fn validate_server(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (name, v) in [
            ("header_read_timeout_ms", self.header_read_timeout_ms),
            ("body_read_timeout_ms", self.body_read_timeout_ms),
        ] {
            if !(1..=READ_TIMEOUT_MS_MAX).contains(&v) {
                problems.push(format!(
                    "{name} must be 1 to {READ_TIMEOUT_MS_MAX}, not {v}"
                ));
            }
        }
        if !(1..=MAX_CONNECTIONS_MAX).contains(&self.max_connections) {
            problems.push(format!(
                "max_connections must be 1 to {MAX_CONNECTIONS_MAX}, not {}",
                self.max_connections
            ));
        }
        if self.clock_admin_keys.iter().any(|k| k.trim().is_empty()) {
            problems.push("clock_admin_keys: a clock admin key must not be empty".into());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// The limits of client connections.
    pub fn connection_limits(&self) -> crate::connection::Limits {
        crate::connection::Limits {
            header_read_timeout: std::time::Duration::from_millis(self.header_read_timeout_ms),
            body_read_timeout: std::time::Duration::from_millis(self.body_read_timeout_ms),
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
        }
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
    clock_admins: Vec<String>,
}

/// Who may move the simulated clock, as [`KeyTable::clock_mover`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockMover {
    /// A clock admin key, or any workspace's key when no clock admin key is configured.
    Allowed,
    /// A workspace's key, while clock admin keys are configured.
    NotAdmin,
    /// No key of this platform.
    Unknown,
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
        KeyTable {
            keys,
            clock_admins: Vec::new(),
        }
    }

    /// The same table with these clock admin keys (see
    /// [`PlatformConfig::clock_admin_keys`]).
    pub fn with_clock_admins(mut self, keys: Vec<String>) -> Self {
        self.clock_admins = keys;
        self
    }

    /// Whether `presented` is a clock admin key (constant time per key).
    fn is_clock_admin(&self, presented: &str) -> bool {
        let mut found = false;
        for k in &self.clock_admins {
            found |= bool::from(k.as_bytes().ct_eq(presented.as_bytes()));
        }
        found
    }

    /// Whether `presented` may read the clock: a key of any workspace or a clock admin key.
    pub fn may_read_clock(&self, presented: &str) -> bool {
        let admin = self.is_clock_admin(presented);
        self.check_any(presented).is_some() || admin
    }

    /// Whether `presented` may move the simulated clock.
    pub fn clock_mover(&self, presented: &str) -> ClockMover {
        let admin = self.is_clock_admin(presented);
        let workspace = self.check_any(presented).is_some();
        match (admin, workspace) {
            (true, _) => ClockMover::Allowed,
            (false, true) if self.clock_admins.is_empty() => ClockMover::Allowed,
            (false, true) => ClockMover::NotAdmin,
            (false, false) => ClockMover::Unknown,
        }
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

    /// The example of the module documentation, without the `//! ` prefixes.
    fn documented_example() -> String {
        let source = include_str!("config.rs");
        let start = source.find("//! ```toml\n").expect("a TOML example") + 12;
        let end = start + source[start..].find("//! ```").expect("its end");
        source[start..end]
            .lines()
            .map(|l| l.strip_prefix("//!").unwrap_or(l).trim_start_matches(' '))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_documented_example_is_a_valid_configuration() {
        let text = documented_example().replace(
            "<base64 of 32 bytes>",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        );
        let config = PlatformConfig::from_toml(&text).unwrap();
        assert_eq!(config.seed, Some(42));
        assert_eq!(config.telephony.seed, Some(7));
        assert_eq!(
            config.telephony.model.as_ref().map(|m| m.connected_rate),
            Some(0.2)
        );
        assert_eq!(config.api_keys.len(), 1);
        assert_eq!(config.byok.len(), 1);
        assert_eq!(config.deployment_webhooks.len(), 1);
        assert_eq!(config.clock_admin_keys, vec!["sk-clock".to_string()]);
        assert_eq!(config.max_connections, 1024);
        config.validate_server().unwrap();
        assert_eq!(config.journal.capacity, 10_000);
        assert_eq!(config.faults.len(), 2);
        config.validate_faults().unwrap();
    }

    #[test]
    fn bad_fault_rules_are_named_by_their_place_in_the_file() {
        let config = PlatformConfig::from_toml(
            r#"
            [[faults]]
            kind = "delay"
            [[faults]]
            kind = "status"
            status = 418
            "#,
        )
        .unwrap();
        let e = config.validate_faults().unwrap_err();
        assert!(
            e.contains("faults.0.delay_ms: Field required for a fault of kind 'delay'"),
            "{e}"
        );
        assert!(
            e.contains("faults.1.status: Value error, a fault answers one of"),
            "{e}"
        );
        let e = PlatformConfig::from_toml("[[faults]]\nkind = \"status\"\nstatuss = 500\n")
            .unwrap_err();
        assert!(e.contains("statuss"), "{e}");
    }

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
    fn clock_admin_keys_alone_move_the_clock_once_configured() {
        let keys = vec![ApiKeyConfig::parse("o/a=ka:alice").unwrap()];
        let open = KeyTable::new(keys.clone());
        assert_eq!(open.clock_mover("ka"), ClockMover::Allowed);
        assert_eq!(open.clock_mover("nope"), ClockMover::Unknown);
        let closed = KeyTable::new(keys).with_clock_admins(vec!["k-clock".into()]);
        assert_eq!(closed.clock_mover("ka"), ClockMover::NotAdmin);
        assert_eq!(closed.clock_mover("k-clock"), ClockMover::Allowed);
        assert_eq!(closed.clock_mover("nope"), ClockMover::Unknown);
        assert!(closed.may_read_clock("ka") && closed.may_read_clock("k-clock"));
        assert!(!closed.may_read_clock("nope"));
        assert_eq!(
            closed.check_any("k-clock"),
            None,
            "an admin key opens no workspace"
        );
    }

    #[test]
    fn connection_limits_are_checked() {
        let bad = PlatformConfig {
            header_read_timeout_ms: 0,
            body_read_timeout_ms: READ_TIMEOUT_MS_MAX + 1,
            max_connections: 0,
            clock_admin_keys: vec![" ".into()],
            ..Default::default()
        };
        let err = bad.validate_server().unwrap_err();
        for part in [
            "header_read_timeout_ms must be 1 to 3600000, not 0",
            "body_read_timeout_ms must be 1 to 3600000, not 3600001",
            "max_connections must be 1 to 1000000, not 0",
            "a clock admin key must not be empty",
        ] {
            assert!(err.contains(part), "{part} in {err}");
        }
        PlatformConfig::default().validate_server().unwrap();
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

    const BYOK_TOML: &str = r#"
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

    #[test]
    fn byok_flags_override_the_file_entry_or_make_one() {
        let mut entries = PlatformConfig::from_toml(BYOK_TOML).unwrap().byok;
        // The secret from the environment, the rest from the file; a static key replaces
        // the client credentials.
        ByokOverride {
            workspace: Some("o/w".into()),
            api_key: Some(Secret::new("sk_env")),
            data_key_cache_secs: Some(60),
            ..Default::default()
        }
        .apply(&mut entries)
        .unwrap();
        assert_eq!(entries.len(), 1);
        assert!(
            matches!(entries[0].auth().unwrap(), ByokAuth::ApiKey(k) if k.expose() == "sk_env")
        );
        assert_eq!(entries[0].data_key_cache_secs, 60);
        assert_eq!(entries[0].partner, "acme");
        // Another workspace needs every required setting.
        let partial = ByokOverride {
            workspace: Some("o/other".into()),
            partner: Some("acme".into()),
            ..Default::default()
        };
        let err = partial.clone().apply(&mut entries).unwrap_err();
        assert!(
            err.contains("--byok-base-url, --byok-key-alias, --byok-encrypted-key"),
            "{err}"
        );
        ByokOverride {
            customer_base_url: Some("http://127.0.0.1:8700".into()),
            key_alias: Some("tenant-b".into()),
            encrypted_key: Some("byok:v1:BBBB".into()),
            client_id: Some("platform".into()),
            client_secret: Some(Secret::new("x")),
            ..partial
        }
        .apply(&mut entries)
        .unwrap();
        assert_eq!(entries.len(), 2);
        entries[1].validate().unwrap();
        let no_ws = ByokOverride {
            partner: Some("acme".into()),
            ..Default::default()
        };
        assert!(
            no_ws
                .apply(&mut entries)
                .unwrap_err()
                .contains("--byok-workspace")
        );
        assert!(ByokOverride::default().apply(&mut entries).is_ok());
    }
}
