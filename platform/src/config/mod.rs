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
//! journal_admin_keys = ["sk-ops"]   # these keys see and clear every workspace's journal
//!                                   #   entries and fault rules
//! header_read_timeout_ms = 30000    # a request head must arrive within this (408 after);
//!                                   #   an idle keep-alive connection closes after it too
//! body_read_timeout_ms = 30000      # longest pause inside a request body (408 after)
//! body_min_bytes_per_sec = 1024     # least average rate of a body after that time (0: none)
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
//!
//! - [`byok`]: the `[[byok]]` entries, described once for the file, the flags and the
//!   environment ([`ByokSettings`]).
//! - [`journal`]: the `[journal]` table.
//! - [`PlatformConfig`] is at once the file's top level and the `platform serve` flags and
//!   environment variables of everything else ([`crate::cli`] lays them over the file).
//!
//! Configuration is a leaf: each part reads its own settings from [`PlatformConfig`]
//! (`connection::Limits::from`, `webhooks::WebhookSettings::new`).
//! - API keys are checked by [`crate::auth`].

use std::net::SocketAddr;
use std::path::PathBuf;

use base64::Engine as _;
use serde::Deserialize;

use crate::store::WorkspaceRef;

pub(crate) mod byok;
pub mod journal;

pub use byok::{
    BYOK_DATA_KEY_CACHE_SECS, BYOK_DATA_KEY_CACHE_SECS_MAX, BYOK_KEY_PREFIX,
    BYOK_REQUEST_TIMEOUT_MS, BYOK_REQUEST_TIMEOUT_MS_MAX, BYOK_ROTATION_PERIOD_SECS_MAX,
    BYOK_ROTATION_PERIOD_SECS_MIN, ByokAuth, ByokConfig, ByokSettings, Secret,
};

/// One API key and the workspace it opens. `*` as org or workspace matches any.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    /// The org it opens, or `*`.
    pub(crate) org_id: String,
    /// The workspace it opens, or `*`.
    pub(crate) workspace_id: String,
    /// The key sent as `X-API-Key`.
    pub key: String,
    /// Who uses it: recorded as `created_by` and `updated_by`.
    #[serde(default = "default_key_name")]
    pub(crate) name: String,
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

    /// Whether this key opens `ws`.
    pub(crate) fn opens(&self, ws: &WorkspaceRef) -> bool {
        crate::store::pattern_opens(&self.org_id, &self.workspace_id, ws)
    }

    /// Whether this key opens every org and workspace (`*/*`).
    pub(crate) fn opens_all(&self) -> bool {
        self.org_id == "*" && self.workspace_id == "*"
    }

    /// The workspaces it opens, as a pattern (`*` for any).
    pub(crate) fn pattern(&self) -> WorkspaceRef {
        WorkspaceRef::new(&self.org_id, &self.workspace_id)
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

impl ClockMode {
    /// Parses `real`, or `simulated` (or `sim`): the flag and environment form.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        match s {
            "real" => Ok(ClockMode::Real),
            "simulated" | "sim" => Ok(ClockMode::Simulated),
            other => Err(format!("'{other}': use real or simulated")),
        }
    }
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
#[derive(Debug, Clone, PartialEq, Default, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
pub struct TelephonyConfig {
    /// Seed of the simulated call outcomes (default: --seed).
    #[arg(
        long = "telephony-seed",
        id = "telephony_seed",
        value_name = "TELEPHONY_SEED",
        env = "PLATFORM_TELEPHONY_SEED"
    )]
    pub seed: Option<u64>,
    /// The call model (rates, durations, magic numbers); see `telephony-sim`.
    #[arg(skip)]
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

/// Everything a platform instance needs to know, declared once for the three places a
/// setting can come from: the configuration file (each field is its key), the `platform
/// serve` flags and their `PLATFORM_...` environment variables (the `#[arg]` of each field;
/// a field without one is set in the file only). `platform serve` reads the file, then lays
/// the flags and the environment over it ([`crate::cli`]): a setting given there wins, one
/// not given leaves the file's value.
#[derive(Debug, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
pub struct PlatformConfig {
    /// Address to listen on; port 0 picks a free port (printed at start)
    /// [default: 127.0.0.1:8080].
    #[arg(long, env = "PLATFORM_LISTEN", required = false)]
    pub listen: SocketAddr,
    /// SQLite file (created when missing), or ":memory:" [default: platform.db].
    #[arg(long, env = "PLATFORM_DATABASE", required = false)]
    pub database: String,
    /// Base64 of the 32-byte local master key that wraps data keys when no BYOK is set;
    /// else read from (or written to) `<database>.key`.
    #[arg(long, env = "PLATFORM_LOCAL_KEY", hide_env_values = true)]
    pub local_key: Option<String>,
    /// An API key: `ORG/WORKSPACE=KEY[:NAME]`; `*` as org or workspace matches any. Repeat
    /// the flag, or separate keys with commas in the environment variable. Without any, a
    /// random key for every org and workspace is made and printed.
    #[arg(long = "api-key", env = "PLATFORM_API_KEYS", value_delimiter = ',', value_parser = ApiKeyConfig::parse)]
    pub api_keys: Vec<ApiKeyConfig>,
    /// Largest cohort upload in bytes (413 above) [default: 104857600].
    #[arg(long, env = "PLATFORM_MAX_UPLOAD_BYTES", required = false)]
    pub max_upload_bytes: u64,
    /// Largest JSON body in bytes (413 above) [default: 10485760].
    #[arg(long, env = "PLATFORM_MAX_BODY_BYTES", required = false)]
    pub max_body_bytes: u64,
    /// Answer unknown request fields with 422 instead of ignoring them.
    #[arg(long, env = "PLATFORM_STRICT", action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new(), required = false)]
    pub strict: bool,
    /// The address clients use, for next_page_uri and prev_page_uri; without it, `http://`
    /// and the request's `Host` header.
    #[arg(long, env = "PLATFORM_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Seed of ids and random choices (printed when not given).
    #[arg(long, env = "PLATFORM_SEED")]
    pub seed: Option<u64>,
    /// `real` (default) or `simulated`: simulated time moves only through /sim/v1/clock.
    #[arg(long, env = "PLATFORM_CLOCK", value_parser = ClockMode::parse, required = false)]
    pub clock: ClockMode,
    /// Where a simulated clock starts (RFC 3339); default: now.
    #[arg(long, env = "PLATFORM_SIM_START")]
    pub sim_start: Option<String>,
    /// The secret webhooks are signed with (HMAC-SHA256); printed when drawn at start-up.
    #[arg(long, env = "PLATFORM_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,
    /// Header carrying the webhook signature.
    #[arg(skip)]
    pub webhook_signature_header: String,
    /// Header carrying the webhook timestamp.
    #[arg(skip)]
    pub webhook_timestamp_header: String,
    /// Tries before a webhook delivery is given up.
    #[arg(skip)]
    pub webhook_max_tries: u32,
    /// Wait after the first failed try, in milliseconds; doubled after each further one.
    #[arg(skip)]
    pub webhook_initial_backoff_ms: u64,
    /// The longest wait between tries, in milliseconds.
    #[arg(skip)]
    pub webhook_max_backoff_ms: u64,
    /// How long one try may take, in milliseconds (wall time).
    #[arg(skip)]
    pub webhook_timeout_ms: u64,
    /// Where a workspace's inbound-call events go: ORG/WORKSPACE=URL. Repeat the flag, or
    /// separate with commas in the environment variable.
    #[arg(long = "deployment-webhook", env = "PLATFORM_DEPLOYMENT_WEBHOOKS", value_delimiter = ',', value_parser = DeploymentWebhook::parse)]
    pub deployment_webhooks: Vec<DeploymentWebhook>,
    /// The simulated telephony.
    #[command(flatten)]
    pub telephony: TelephonyConfig,
    /// BYOK: the workspaces whose data keys come from the customer's key service (the
    /// flags and environment of one workspace are [`ByokSettings`]).
    #[arg(skip)]
    pub byok: Vec<ByokConfig>,
    /// A key that may move the simulated clock; once any is given, workspace keys may only
    /// read it (403 on PUT /sim/v1/clock and POST /sim/v1/clock/advance), and when none is,
    /// any workspace's key may. The one clock is shared by every workspace, so a platform
    /// shared by several teams names its operator's keys here. Repeat the flag, or separate
    /// keys with commas in the environment variable.
    #[arg(
        long = "clock-admin-key",
        env = "PLATFORM_CLOCK_ADMIN_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub clock_admin_keys: Vec<String>,
    /// An operator's key of the request journal and the fault rules: it sees and clears
    /// every workspace's entries and rules, where a workspace's key sees its own only. It
    /// opens no workspace. Repeat the flag, or separate keys with commas in the environment
    /// variable.
    #[arg(
        long = "journal-admin-key",
        env = "PLATFORM_JOURNAL_ADMIN_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub journal_admin_keys: Vec<String>,
    /// Milliseconds a request head may take to arrive (408 after); also how long an idle
    /// keep-alive connection stays open [default: 30000].
    #[arg(long, env = "PLATFORM_HEADER_READ_TIMEOUT_MS", required = false)]
    pub header_read_timeout_ms: u64,
    /// Longest pause, in milliseconds, while a request body arrives (408 after)
    /// [default: 30000].
    #[arg(long, env = "PLATFORM_BODY_READ_TIMEOUT_MS", required = false)]
    pub body_read_timeout_ms: u64,
    /// Least average rate of a request body, bytes per second: the whole body must arrive
    /// within the body read timeout plus one second per this many bytes (408 after); 0 turns
    /// it off [default: 1024].
    #[arg(long, env = "PLATFORM_BODY_MIN_BYTES_PER_SEC", required = false)]
    pub body_min_bytes_per_sec: u64,
    /// Most client connections at once; more wait until one closes. Lowered at start when
    /// the limit of open files (`ulimit -n`) leaves no room for it [default: 1024].
    #[arg(long, env = "PLATFORM_MAX_CONNECTIONS", required = false)]
    pub max_connections: u64,
    /// The request journal (`GET /sim/v1/journal`).
    #[command(flatten)]
    pub journal: journal::JournalSettings,
    /// Fault rules in force from the start (more through `/sim/v1/faults`).
    #[arg(skip)]
    pub faults: Vec<contracts::wire::FaultRule>,
}

/// Default of [`PlatformConfig::webhook_max_tries`].
pub(crate) const WEBHOOK_MAX_TRIES: u32 = 8;
/// Default of [`PlatformConfig::header_read_timeout_ms`]: 30 seconds.
pub(crate) const HEADER_READ_TIMEOUT_MS: u64 = 30_000;
/// Default of [`PlatformConfig::body_read_timeout_ms`]: 30 seconds.
pub(crate) const BODY_READ_TIMEOUT_MS: u64 = 30_000;
/// Default of [`PlatformConfig::body_min_bytes_per_sec`]: 1 KiB per second.
pub(crate) const BODY_MIN_BYTES_PER_SEC: u64 = 1024;
/// Longest allowed read timeout: an hour.
pub(crate) const READ_TIMEOUT_MS_MAX: u64 = 3_600_000;
/// Default of [`PlatformConfig::max_connections`].
pub(crate) const MAX_CONNECTIONS: u64 = 1024;
/// Largest allowed [`PlatformConfig::max_connections`].
pub(crate) const MAX_CONNECTIONS_MAX: u64 = 1_000_000;

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
            webhook_max_tries: WEBHOOK_MAX_TRIES,
            webhook_initial_backoff_ms: 1_000,
            webhook_max_backoff_ms: 600_000,
            webhook_timeout_ms: 10_000,
            deployment_webhooks: Vec::new(),
            telephony: TelephonyConfig::default(),
            byok: Vec::new(),
            clock_admin_keys: Vec::new(),
            journal_admin_keys: Vec::new(),
            header_read_timeout_ms: HEADER_READ_TIMEOUT_MS,
            body_read_timeout_ms: BODY_READ_TIMEOUT_MS,
            body_min_bytes_per_sec: BODY_MIN_BYTES_PER_SEC,
            max_connections: MAX_CONNECTIONS,
            journal: journal::JournalSettings::default(),
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
    pub(crate) fn validate_byok(&self) -> Result<(), String> {
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
    pub(crate) fn validate_server(&self) -> Result<(), String> {
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
        if self.journal_admin_keys.iter().any(|k| k.trim().is_empty()) {
            problems.push("journal_admin_keys: a journal admin key must not be empty".into());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Where the store lives.
    pub(crate) fn database(&self) -> Database {
        if self.database == ":memory:" {
            Database::Memory
        } else {
            Database::File(PathBuf::from(&self.database))
        }
    }

    /// Where the inbound-call events of `ws` go, if anywhere.
    pub(crate) fn deployment_webhook(&self, ws: &WorkspaceRef) -> Option<&str> {
        self.deployment_webhooks
            .iter()
            .find(|w| w.org_id == ws.org_id && w.workspace_id == ws.workspace_id)
            .map(|w| w.url.as_str())
    }

    /// The local master key from `local_key`, if set.
    pub(crate) fn local_key_bytes(&self) -> Result<Option<[u8; 32]>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the module documentation, without the `//! ` prefixes.
    fn documented_example() -> String {
        let source = include_str!("mod.rs");
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
}
