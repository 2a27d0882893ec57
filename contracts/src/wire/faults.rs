//! Fault rules of the simulation API (not part of the platform's interface): the
//! platform's own failures on demand, so that a client can be tested against a platform
//! that fails.
//!
//! | Method | Path | Body | Answer |
//! |---|---|---|---|
//! | GET | `/sim/v1/faults` | | [`crate::wire::Page`] of [`FaultRuleState`] |
//! | POST | `/sim/v1/faults` | [`FaultRule`] | [`FaultRuleState`] |
//! | DELETE | `/sim/v1/faults/{fault_id}` | | 204 |
//! | DELETE | `/sim/v1/faults` | | 204: every rule removed |
//!
//! A rule added with a workspace's key applies to that workspace's requests only, and only
//! that key (or an operator's: a clock or journal admin key, or one that opens every
//! workspace) lists and deletes it; `DELETE /sim/v1/faults` removes the rules the key sees.
//!
//! A rule matches requests by operation (or path pattern), method and workspace, fires by
//! probability, for the next N matching calls, or inside a window of the platform's clock,
//! and then does one thing ([`FaultKind`]). The same type is read from the platform's
//! configuration file (`[[faults]]`); being plain serde, any other file format of the
//! harness can hold it too, checked by [`crate::validate::fault_rule_value`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a fault rule does to a request it fires on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Answer `status` (429, 500, 502, 503 or 504) with the platform's error body, without
    /// handling the request; 429 and 503 carry `Retry-After`.
    Status,
    /// Handle the request after waiting `delay_ms` (or a uniform draw up to `delay_max_ms`)
    /// of real time.
    Delay,
    /// Close the connection without an answer, without handling the request.
    Drop,
    /// Handle the request, then send only the first half of the answer's body and close
    /// the connection (the `Content-Length` announces the whole body).
    Truncate,
    /// Allow each API key `requests_per_second` with bursts of `burst`; above that, answer
    /// 429 with `Retry-After`, without handling the request.
    RateLimit,
}

impl FaultKind {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Status => "status",
            FaultKind::Delay => "delay",
            FaultKind::Drop => "drop",
            FaultKind::Truncate => "truncate",
            FaultKind::RateLimit => "rate_limit",
        }
    }
}

/// One fault rule. Matchers left out match everything; triggers left out always fire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// What the rule does.
    pub kind: FaultKind,
    /// Matches requests of this `operationId` of the OpenAPI document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// Or matches paths of this pattern: `/api/...`, where a `*` or `{name}` segment matches
    /// any one segment (not with `operation_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Matches this method only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Matches requests to this org only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_id: Option<String>,
    /// Matches requests to this workspace only (with `org_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// Fires on this share of matching requests, above 0 and at most 1 (default 1). Draws
    /// follow the platform's seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// Fires on the next this many matching requests only, then is spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// Fires from this instant of the platform's clock on.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::clock::rfc3339::option"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub from: Option<DateTime<Utc>>,
    /// Fires before this instant of the platform's clock only.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::clock::rfc3339::option"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<DateTime<Utc>>,
    /// `status`: the status to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `status`: the `Retry-After` seconds of a 429 or 503 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// `delay`: milliseconds to wait (the least, with `delay_max_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// `delay`: the most milliseconds to wait; the wait is drawn uniformly between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_max_ms: Option<u64>,
    /// `rate_limit`: requests per second each API key may make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_second: Option<f64>,
    /// `rate_limit`: requests a key may make at once after a pause (default: the rate,
    /// rounded up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

impl FaultRule {
    /// A rule of `kind` that matches everything and always fires, for building in code.
    pub fn new(kind: FaultKind) -> FaultRule {
        FaultRule {
            kind,
            operation_id: None,
            path: None,
            method: None,
            org_id: None,
            workspace_id: None,
            probability: None,
            times: None,
            from: None,
            until: None,
            status: None,
            retry_after_seconds: None,
            delay_ms: None,
            delay_max_ms: None,
            requests_per_second: None,
            burst: None,
        }
    }
}

/// A rule as the platform holds it: its id and what it did so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FaultRuleState {
    /// The rule's id (`flt-1`, ...), for `DELETE /sim/v1/faults/{fault_id}`.
    pub fault_id: String,
    /// The rule.
    pub rule: FaultRule,
    /// Requests that matched it.
    pub matched: u64,
    /// Requests it injected its fault into.
    pub injected: u64,
    /// For `times`: how many more it fires on.
    pub remaining: Option<u64>,
    /// The workspaces whose requests it applies to: those of the key that added it (only
    /// that key, or an operator's, lists and deletes it). Absent: every request (a rule of
    /// the configuration, or one an operator's key added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applies_to: Option<Vec<crate::wire::WorkspaceId>>,
}
