//! What the live page (`GET /ui`) reads that no other route gives (the harness's own, not the
//! platform's interface). Everything else it shows comes from the routes any client uses.
//!
//! | Method | Path | Answer |
//! |---|---|---|
//! | GET | `/sim/v1/stack` | [`StackView`]: the platform as the key sees it |
//! | GET | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/activity` | [`CampaignActivity`] |
//! | GET | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/chart` | the activity drawn by [`crate::report::chart`], `image/svg+xml` (query: [`LiveChartQuery`]) |
//! | GET | `/sim/v1/orgs/{org_id}/workspaces/{workspace_id}/key-service/calls` | [`KeyServiceCalls`] (query: [`KeyServiceCallsQuery`]) |

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::CampaignStatus;

/// The platform as the request's key sees it: where it is, whose workspaces the key opens,
/// its clock, and the key service a stack runs beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StackView {
    /// The platform's address as clients reach it (`--public-url`, else `http://` and the
    /// request's `Host`).
    pub platform_url: String,
    /// Its OpenAPI document.
    pub openapi_url: String,
    /// The configured name of the key (`created_by` of what it makes).
    pub key_name: String,
    /// The workspaces the key opens, as configured (`*` matches any org or workspace); none
    /// for a clock admin key.
    pub workspaces: Vec<super::WorkspaceId>,
    /// The platform's clock.
    pub clock: StackClock,
    /// The seed of the platform's ids and random choices: shown to an operator's key (a clock
    /// admin key, or one that opens every workspace), `null` to a key of some workspaces
    /// only (the platform's drawn secrets follow from its seed).
    pub seed: Option<u64>,
    /// The customer key services (BYOK) of the workspaces the key opens, without secrets.
    pub key_services: Vec<KeyServiceView>,
}

/// The platform's clock, and what the key may do with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StackClock {
    /// The platform's time.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub now: DateTime<Utc>,
    /// Whether it is simulated (it moves only through `/sim/v1/clock`).
    pub simulated: bool,
    /// Whether this key may move it (`POST /sim/v1/clock/advance`): a simulated clock, and a
    /// clock admin key or, on a platform without any, any workspace's key.
    pub may_move: bool,
    /// When the engine's next event is due (a campaign's start or end, a dial, a call's
    /// end, a retry, a webhook try), over every workspace; `null` when nothing is due until
    /// something changes.
    #[serde(with = "crate::clock::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_due_at: Option<DateTime<Utc>>,
}

/// A workspace's customer key service (BYOK), without its secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KeyServiceView {
    /// The org of the workspace.
    pub org_id: String,
    /// The workspace.
    pub workspace_id: String,
    /// The base of its BYOK endpoints (`{customer_base_url}/{partner}/byok/v1`).
    pub byok_base_url: String,
    /// The client id the platform authenticates with; `null` with a static API key.
    pub client_id: Option<String>,
    /// The master-key alias of the workspace's data keys.
    pub key_alias: String,
    /// Whether its audit is readable at `GET .../key-service/calls`: only for the key
    /// service `harness up` runs beside the platform.
    pub audit: bool,
}

/// Why a campaign's status changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusChangeCause {
    /// Created (`scheduled`).
    Created,
    /// `start_timestamp` reached.
    StartReached,
    /// `end_timestamp` reached.
    EndReached,
    /// `PUT .../status` with `pause`.
    Pause,
    /// `PUT .../status` with `resume`.
    Resume,
    /// `PUT .../status` with `cancel`.
    Cancel,
}

/// One change of a campaign's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CampaignStatusChange {
    /// When, on the platform's clock.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: DateTime<Utc>,
    /// The status from then on.
    pub status: CampaignStatus,
    /// Why.
    pub cause: StatusChangeCause,
    /// The name of the key that made the change (creation and actions; `null` for a change
    /// with time).
    pub by: Option<String>,
}

/// A campaign's past: its status changes and its dials over time, for the live page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignActivity {
    /// The campaign.
    pub campaign_id: String,
    /// Its name.
    pub name: String,
    /// The status now.
    pub status: CampaignStatus,
    /// Every change of its status so far, oldest first.
    pub status_changes: Vec<CampaignStatusChange>,
    /// Where the chart starts: the campaign's `start_timestamp`.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub from: DateTime<Utc>,
    /// Where it stops: now (at least ten minutes after `from`), at most `end_timestamp`.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub until: DateTime<Utc>,
    /// Width of a bucket in seconds: 1, 5, 15 or 30 minutes, 1, 3, 6 or 12 hours, or a day,
    /// the least that keeps the chart within 120 buckets.
    pub bucket_secs: i64,
    /// The series counted, in the order of each bucket's counts: the results of ended dials
    /// (`connected`, `short_duration`, `busy`, `no_answer`, `failed`, `provider_error`,
    /// `internal_error`, as in `attempts_by_outcome`), then `in_progress`, the dials whose
    /// call has not ended yet.
    pub series: Vec<String>,
    /// Dials per bucket of the time they were dialled: `[bucket index, count of each
    /// series...]`, empty buckets left out.
    pub buckets: Vec<Vec<u64>>,
    /// The calling windows between `from` and `until`: `[open, close]` pairs.
    #[schema(value_type = Vec<Vec<String>>)]
    pub windows: Vec<[String; 2]>,
}

/// The drawing of `GET .../campaigns/{campaign_id}/chart`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LiveChartQuery {
    /// The width to draw the chart for, in pixels, 280 to 2,400 (default 1,000, the
    /// scenario report's): its text stays 11 pixels high where it is shown at that width.
    #[param(minimum = 280, maximum = 2400)]
    pub(crate) width: Option<u32>,
}

/// Paging of `GET .../key-service/calls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KeyServiceCallsQuery {
    /// Only calls after this sequence number (default 0: from the oldest kept).
    pub(crate) after: Option<u64>,
    /// Calls per answer, 1 to 100 (default 100).
    pub(crate) limit: Option<u32>,
}

/// One call the platform made to its customer's key service, as the key service's audit
/// recorded it (no key material, secret or token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KeyServiceCall {
    /// Its number in the audit, from 1.
    pub seq: u64,
    /// When it arrived, on the key service's clock.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: DateTime<Utc>,
    /// `auth`, `decrypt-key` or `rotate-key`.
    pub endpoint: String,
    /// The client id (or static key name) that called, once authenticated.
    pub caller: Option<String>,
    /// The `key_alias` of the call.
    pub key_alias: Option<String>,
    /// `OK`, the error code answered, or `NO_RESPONSE`.
    pub outcome: String,
    /// The HTTP status, absent without an answer.
    pub status: Option<u16>,
    /// Time spent, in milliseconds (injected latency included).
    pub latency_ms: f64,
    /// The kinds of the faults that fired on it (`latency`, `hang`, `malformed_json`, ...).
    pub faults: Vec<String>,
    /// Why the platform made the call, as it recorded the call when it made it; `null` for a
    /// call it did not make or no longer remembers (it keeps the reasons of its latest
    /// 4,096 calls, in memory).
    #[serde(default)]
    pub reason: Option<KeyCallReason>,
    /// The call's `x-request-id`, by which the platform finds the reason it recorded: never
    /// answered.
    #[serde(skip)]
    pub request_id: Option<String>,
}

/// Why the platform called its customer's key service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyCallReason {
    /// A cold start: no token yet since the platform started (`auth`), or a data key not in
    /// memory since it started (`decrypt-key`).
    ColdStart,
    /// The workspace's configured `encrypted_key`, new to it, opened to become its active
    /// data key (`decrypt-key`).
    ConfiguredKey,
    /// The cached data key expired: its time in memory (`data_key_cache_secs`) ended
    /// (`decrypt-key`).
    KeyExpired,
    /// The cached token expired: its `expires_in`, less a margin, ended (`auth`).
    TokenExpired,
    /// The key service answered 401 to the cached token: a new token (`auth`), then the
    /// call once more with it (`decrypt-key`, `rotate-key`).
    TokenRefused,
    /// A rotation: the active data key is older than the rotation period (`rotate-key`).
    RotationDue,
    /// A rotation asked for at `POST /admin/v1/.../data-keys/rotate` (`rotate-key`).
    RotationAsked,
    /// The new data key of a rotation, decrypted back to check that it opens
    /// (`decrypt-key`).
    RotationCheck,
}

impl KeyCallReason {
    /// Its name on the wire (`cold_start`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            KeyCallReason::ColdStart => "cold_start",
            KeyCallReason::ConfiguredKey => "configured_key",
            KeyCallReason::KeyExpired => "key_expired",
            KeyCallReason::TokenExpired => "token_expired",
            KeyCallReason::TokenRefused => "token_refused",
            KeyCallReason::RotationDue => "rotation_due",
            KeyCallReason::RotationAsked => "rotation_asked",
            KeyCallReason::RotationCheck => "rotation_check",
        }
    }
}

/// A page of the key service's audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KeyServiceCalls {
    /// Calls after the query's `after`, oldest first.
    pub items: Vec<KeyServiceCall>,
    /// The sequence number the next call will get (`after` for the next poll is one less).
    pub next_seq: u64,
    /// Calls the audit dropped because it was full.
    pub dropped: u64,
}
