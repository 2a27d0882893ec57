//! [`StackInfo`]: how to reach and use a running stack, what `harness up` prints and its
//! `--json` and ready file hold. Fields serialise in declaration order.

use serde::Serialize;

use super::StackClock;

/// How to reach and use a running stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackInfo {
    /// The platform.
    pub(crate) platform: PlatformInfo,
    /// The customer's key service (customer-kms-sim).
    pub(crate) key_service: KeyServiceInfo,
    /// The simulated telephony inside the platform.
    pub(crate) telephony: TelephonyInfo,
    /// The clock both run on.
    pub(crate) clock: ClockInfo,
    /// The stack's seed (the platform's and the key service's unless their configurations
    /// pin their own).
    pub(crate) seed: u64,
}

/// The platform's side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformInfo {
    /// `http://HOST:PORT`: 127.0.0.1 unless a host was given.
    pub(crate) url: String,
    /// The OpenAPI document (no key needed).
    pub(crate) openapi_url: String,
    /// The live page, opened on the workspace with the key: `{url}/ui#key=...&org=...&
    /// workspace=...` (the key in the fragment, which browsers never send; the page moves it
    /// to the tab's session storage).
    pub(crate) ui_url: String,
    /// An API key that opens the BYOK workspace, sent as `X-API-Key`.
    pub(crate) api_key: String,
    /// The org of the BYOK workspace.
    pub(crate) org_id: String,
    /// The BYOK workspace.
    pub(crate) workspace_id: String,
    /// Where the data is.
    pub(crate) database: DatabaseInfo,
    /// The secret webhooks are signed with (HMAC-SHA256).
    pub(crate) webhook_secret: String,
    /// The platform's seed (ids, random choices).
    pub(crate) seed: u64,
}

/// The platform's database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DatabaseInfo {
    /// The SQLite file, or `:memory:`.
    pub(crate) path: String,
    /// Whether it outlives the stack (false: a temporary file or memory).
    pub(crate) kept: bool,
}

/// The customer's key service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyServiceInfo {
    /// `http://HOST:PORT`: 127.0.0.1 unless a host was given.
    pub(crate) url: String,
    /// `{url}/{partner}/byok/v1`: `/auth`, `/decrypt-key`, `/rotate-key` below it.
    pub(crate) byok_base_url: String,
    /// The `{partner}` path segment.
    pub(crate) partner: String,
    /// The client the platform authenticates as (client credentials at `/auth`).
    pub(crate) client_id: String,
    /// Its secret.
    pub(crate) client_secret: String,
    /// The alias whose master key wraps the workspace's data key.
    pub(crate) key_alias: String,
    /// The workspace's data key as the key service wrapped it (`byok:v1:...`), configured in
    /// the platform.
    pub(crate) encrypted_key: String,
    /// The admin API: faults, keys, audit log (`Authorization: Bearer <admin_token>`).
    pub(crate) admin_url: String,
    /// The admin API's bearer token.
    pub(crate) admin_token: String,
    /// The key service's seed (derived master keys, nonces, token ids).
    pub(crate) seed: u64,
}

/// The simulated telephony.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TelephonyInfo {
    /// Seed of the call outcomes.
    pub(crate) seed: u64,
    /// Whether the magic numbers (`+1 NXX 555-01YY`) decide outcomes.
    pub(crate) magic_numbers: bool,
}

/// The clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockInfo {
    /// `real` or `simulated`.
    pub(crate) mode: &'static str,
    /// Where a simulated clock started (RFC 3339); `null` on the real clock.
    pub(crate) sim_start: Option<String>,
}

impl ClockInfo {
    /// The description of `clock`.
    pub(crate) fn of(clock: StackClock) -> ClockInfo {
        match clock {
            StackClock::Real => ClockInfo {
                mode: "real",
                sim_start: None,
            },
            StackClock::Simulated(t) => ClockInfo {
                mode: "simulated",
                sim_start: Some(contracts::clock::format_instant(t)),
            },
        }
    }
}

impl PlatformInfo {
    /// The live page's address on `workspace` with `api_key` in the fragment.
    pub(crate) fn ui_link(
        platform_url: &str,
        api_key: &str,
        workspace: &platform::store::WorkspaceRef,
    ) -> String {
        let fragment = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("key", api_key)
            .append_pair("org", &workspace.org_id)
            .append_pair("workspace", &workspace.workspace_id)
            .finish();
        format!("{platform_url}{}#{fragment}", platform::api::ui::PAGE_PATH)
    }
}
