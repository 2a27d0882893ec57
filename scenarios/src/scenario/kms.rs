//! The key service's faults in a scenario: [`KmsFaultDef`], its kinds, and the endpoints a
//! fault or a count covers.

use contracts::wire::byok::EndpointScope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::time::{At, Span};

/// A key-service fault over a stretch of simulated time: one of the fault kinds of
/// customer-kms-sim, set at `from` and removed at `until`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KmsFaultDef {
    /// `service_unavailable` (503), `rate_limited` (429), `internal_error` (500), `latency`,
    /// `hang`, `malformed_json`, `wrong_content_type`, `wrong_plaintext`, `truncated_key`.
    pub(crate) kind: KmsFaultKind,
    /// When it is set (default: the start).
    #[serde(default)]
    pub(crate) from: Option<At>,
    /// When it is removed (default: never, or once `next` calls met it).
    #[serde(default)]
    pub(crate) until: Option<At>,
    /// Which endpoint: `all` (default), `auth`, `decrypt-key`, `rotate-key`.
    #[serde(default)]
    pub(crate) endpoint: EndpointScope,
    /// Only the next N calls it applies to.
    #[serde(default)]
    pub(crate) next: Option<u32>,
    /// Each call with this probability (0 to 1, seeded).
    #[serde(default)]
    pub(crate) probability: Option<f64>,
    /// `rate_limited`: the `Retry-After` seconds (default 1).
    #[serde(default)]
    pub(crate) retry_after_secs: Option<u64>,
    /// `latency`: the delay, wall clock (default 100ms).
    #[serde(default)]
    pub(crate) delay: Option<Span>,
    /// `truncated_key`: bytes kept (default 16).
    #[serde(default)]
    pub(crate) len: Option<usize>,
}

/// The fault kinds of the key service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum KmsFaultKind {
    /// 503 `SERVICE_UNAVAILABLE`.
    ServiceUnavailable,
    /// 429 `RATE_LIMITED` with `Retry-After`.
    RateLimited,
    /// 500 `INTERNAL_ERROR`.
    InternalError,
    /// A delay (wall clock), then the normal answer.
    Latency,
    /// No answer until the platform's timeout.
    Hang,
    /// 200 with half a JSON body.
    MalformedJson,
    /// 200 labelled `text/html`.
    WrongContentType,
    /// 200 whose data key has one bit flipped.
    WrongPlaintext,
    /// 200 whose data key is cut short.
    TruncatedKey,
}

/// The fault kind's name as written in files.
pub(crate) fn kind_name(k: KmsFaultKind) -> &'static str {
    match k {
        KmsFaultKind::ServiceUnavailable => "service_unavailable",
        KmsFaultKind::RateLimited => "rate_limited",
        KmsFaultKind::InternalError => "internal_error",
        KmsFaultKind::Latency => "latency",
        KmsFaultKind::Hang => "hang",
        KmsFaultKind::MalformedJson => "malformed_json",
        KmsFaultKind::WrongContentType => "wrong_content_type",
        KmsFaultKind::WrongPlaintext => "wrong_plaintext",
        KmsFaultKind::TruncatedKey => "truncated_key",
    }
}
