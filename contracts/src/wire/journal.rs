//! The request journal of the simulation API (not part of the platform's interface): every
//! request a client sent to the interface, with the contract's verdict on it, and the API
//! coverage those requests give.
//!
//! | Method | Path | Answer |
//! |---|---|---|
//! | GET | `/sim/v1/journal` | [`crate::wire::Page`] of [`JournalEntry`] (query: [`JournalQuery`]) |
//! | DELETE | `/sim/v1/journal` | 204: entries, counts and coverage start again |
//! | GET | `/sim/v1/journal/summary` | [`JournalSummary`] |
//!
//! Every entry belongs to one workspace ([`JournalEntry::owner`]). A workspace's key lists,
//! summarises and deletes its workspace's entries only; an operator's key (a clock or
//! journal admin key, or a key that opens every workspace) all of them.
//!
//! Bodies are kept redacted: keys, shapes, ids, enum values, counts and statuses stay;
//! phone numbers, variable values, free text and API keys never enter the journal.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::LocItem;

/// The contract's verdict on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The request keeps the contract.
    Conforms,
    /// The request breaks the contract; [`JournalEntry::violations`] says how.
    Violates,
    /// An injected fault answered before the platform read the request.
    NotJudged,
}

impl Verdict {
    /// The wire value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Conforms => "conforms",
            Verdict::Violates => "violates",
            Verdict::NotJudged => "not_judged",
        }
    }
}

/// How a request breaks the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// A rule of the request's body, query or path: one item of the 422 answer.
    Validation,
    /// A field the operation does not know (ignored unless the platform is strict).
    UnknownField,
    /// A body of a media type the operation does not read (415).
    ContentType,
    /// No operation of the OpenAPI document has this method and path.
    UnknownRoute,
    /// No `X-API-Key` header.
    MissingKey,
    /// An `X-API-Key` that does not open the workspace of the path.
    InvalidKey,
    /// A warning, not a violation (in [`JournalEntry::warnings`]): the path ends with `/`,
    /// which this platform serves as the path without it and real platforms redirect or
    /// refuse.
    TrailingSlash,
    /// A warning, not a violation (in [`JournalEntry::warnings`]): a query parameter given
    /// more than once, of which this platform takes the last and other servers the first,
    /// or refuse.
    RepeatedQuery,
}

/// One way a request breaks the contract, in the shape of a 422 item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Violation {
    /// What kind of break.
    pub kind: ViolationKind,
    /// Where: `["body", ...]`, `["query", name]`, `["header", name]` or `["path"]`.
    pub loc: Vec<LocItem>,
    /// What is wrong, for a person.
    pub msg: String,
    /// What is wrong, for a program: the 422 `type`, or `extra_forbidden`,
    /// `unsupported_media_type`, `unknown_route`, `method_not_allowed`, `missing`,
    /// `invalid_api_key`; for a warning, its kind (`trailing_slash`, `repeated_query`).
    #[serde(rename = "type")]
    pub error_type: String,
}

/// What the request's `X-API-Key` was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyUse {
    /// No header.
    Missing,
    /// A key that does not open the workspace of the path (or of any workspace).
    Invalid,
    /// A key that opens it; [`JournalEntry::key_name`] names it.
    Valid,
}

/// A request or response body as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct JournalBody {
    /// The `Content-Type`, if any.
    pub content_type: Option<String>,
    /// Its size in bytes (of what was read, for a request body the platform did not read
    /// to the end).
    pub bytes: u64,
    /// The JSON, redacted, when it was JSON and within the journal's body limit.
    #[schema(value_type = Option<Object>)]
    pub json: Option<serde_json::Value>,
    /// Why `json` is absent, when a body was there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The fault a rule injected into a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppliedFault {
    /// The rule.
    pub fault_id: String,
    /// `status`, `delay`, `drop`, `truncate` or `rate_limit`.
    pub kind: String,
    /// What was done, for a person (`503`, `delayed 250 ms`, ...).
    pub effect: String,
}

/// The cohort an upload answered 200 created, and what became of its file: `processing`
/// until the platform has read it, then `completed`, or `failed` with the platform's
/// `failure_reason` (the client sent a file the platform could not use).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UploadedCohort {
    /// The cohort's id.
    pub cohort_id: String,
    /// Its status as the platform last knew it.
    pub status: crate::wire::CohortStatus,
    /// Why the file could not be processed, when `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// One request to the platform's interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JournalEntry {
    /// Its number, from 1, in arrival order; never reused until the journal is reset.
    pub seq: u64,
    /// When it arrived, on the platform's clock (simulated or real).
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: DateTime<Utc>,
    /// The method.
    pub method: String,
    /// The path as requested.
    pub path: String,
    /// The query parameters, values redacted where they could hold customer data.
    #[schema(value_type = Object)]
    pub query: serde_json::Map<String, serde_json::Value>,
    /// The `operationId` of the OpenAPI document, when the method and path are one.
    pub operation_id: Option<String>,
    /// The document's path template, when the path is one.
    pub path_template: Option<String>,
    /// The org of the path.
    pub org_id: Option<String>,
    /// The workspace of the path.
    pub workspace_id: Option<String>,
    /// The workspace the entry belongs to, whose key lists and judges it: the one the
    /// request's key opens when the key is valid (so a request to another workspace's path,
    /// or to no path of the interface, counts against the caller); else the one its path
    /// names; `null` when neither (only an operator's key sees it).
    #[serde(default)]
    pub owner: Option<crate::wire::WorkspaceId>,
    /// What the `X-API-Key` was (never the key itself).
    pub api_key: ApiKeyUse,
    /// The configured name of the key, when valid.
    pub key_name: Option<String>,
    /// The status answered; `null` when the connection was closed without an answer.
    pub status: Option<u16>,
    /// Wall time from the request's arrival to its answer, in milliseconds.
    pub duration_ms: f64,
    /// The request body.
    pub request: JournalBody,
    /// The response body.
    pub response: JournalBody,
    /// The verdict.
    pub verdict: Verdict,
    /// How the request breaks the contract (empty when it conforms), what cost the client
    /// most first: a field of a write's body that had no effect, then the refusals.
    pub violations: Vec<Violation>,
    /// What this platform served but real platforms treat differently (`trailing_slash`,
    /// `repeated_query`): warnings, not violations; left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Violation>,
    /// The injected fault, if a rule applied.
    pub fault: Option<AppliedFault>,
    /// For a cohort upload answered 200: the cohort it created and what became of its file;
    /// left out for other requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cohort: Option<UploadedCohort>,
}

/// Filters and paging of `GET /sim/v1/journal`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JournalQuery {
    /// Only requests of this `operationId`; `unknown` for requests outside the document.
    pub(crate) operation: Option<String>,
    /// Only requests answered with this status (`0`: closed without an answer).
    pub(crate) status: Option<u16>,
    /// Only requests with this verdict: `conforms`, `violates`, `not_judged`.
    pub(crate) verdict: Option<String>,
    /// Entries to skip (default 0).
    pub(crate) offset: Option<u64>,
    /// Entries per page, 1 to 100 (default 20).
    pub(crate) limit: Option<u32>,
}

/// The share of the document's operations a client called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Coverage {
    /// Operations of the interface in the document.
    pub operations: u32,
    /// Of those, operations called at least once.
    pub called: u32,
    /// `called / operations` in percent, one decimal.
    pub percent: f64,
}

/// A violating request, as an example (or, in [`FlaggedRequests`], a request with a
/// warning).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ViolationExample {
    /// The entry's number.
    pub seq: u64,
    /// Its method.
    pub method: String,
    /// Its path.
    pub path: String,
    /// Its status (`null`: no answer).
    pub status: Option<u16>,
    /// How it breaks the contract (in [`FlaggedRequests`]: its warnings of that kind).
    pub violations: Vec<Violation>,
}

/// A cohort upload answered 200 whose file the platform then could not process: the cohort
/// ended `failed`. Not a violation of the request's contract, but a file the client's
/// users never reach the platform in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FailedUpload {
    /// The upload's entry number.
    pub seq: u64,
    /// Its method.
    pub method: String,
    /// Its path.
    pub path: String,
    /// The cohort it created.
    pub cohort_id: String,
    /// The platform's `failure_reason` (it never quotes the file's values).
    pub failure_reason: String,
}

/// What the client did with one operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OperationSummary {
    /// The `operationId`.
    pub operation_id: String,
    /// The method.
    pub method: String,
    /// The path template.
    pub path: String,
    /// The document's tag.
    pub tag: String,
    /// Requests.
    pub calls: u64,
    /// Requests per status answered (`"0"`: closed without an answer).
    pub statuses: BTreeMap<String, u64>,
    /// Requests that break the contract.
    pub violating_requests: u64,
    /// The documented statuses no request produced.
    pub documented_statuses_not_seen: Vec<u16>,
    /// Statuses answered that the document does not list for the operation (injected
    /// faults, or a gap in the document).
    pub undocumented_statuses: Vec<u16>,
    /// The first few violating requests.
    pub examples: Vec<ViolationExample>,
    /// Uploads answered 200 whose cohort then ended `failed` (the operations that upload
    /// cohorts only).
    #[serde(default)]
    pub failed_uploads: u64,
    /// The first few of them.
    #[serde(default)]
    pub failed_upload_examples: Vec<FailedUpload>,
}

/// A request of an operation the platform refused for what the state or the size was, not
/// for how it was written: a 404 for an id that does not exist (or is another workspace's),
/// a 409 (the state said no: resuming a cancelled campaign), a 413 (a body above the
/// platform's limit). Not a violation, but worth seeing, as a client that deletes twice,
/// polls a wrong id or sends too much makes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RefusedRequest {
    /// The entry's number.
    pub seq: u64,
    /// Its method.
    pub method: String,
    /// Its path.
    pub path: String,
    /// Its `operationId`.
    pub operation_id: String,
    /// The answer's `error.message` (redacted), when the journal kept it.
    pub message: Option<String>,
}

/// The requests of operations answered one status of [`RefusedRequest`] (404, 409 or 413).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct RefusedRequests {
    /// How many.
    pub requests: u64,
    /// Each of them, oldest first, up to the first 100.
    pub listed: Vec<RefusedRequest>,
}

/// Requests with one kind of warning ([`ViolationKind::TrailingSlash`],
/// [`ViolationKind::RepeatedQuery`]): served, but real platforms treat them differently.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct FlaggedRequests {
    /// How many.
    pub requests: u64,
    /// The first few, each with its warnings of this kind.
    pub examples: Vec<ViolationExample>,
}

/// Requests to no operation of the document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct UnknownRoutes {
    /// How many.
    pub requests: u64,
    /// The first few.
    pub examples: Vec<ViolationExample>,
}

/// The API coverage and the verdicts of every request since the start or the last reset,
/// of the workspaces the key sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JournalSummary {
    /// When counting started (start-up or the last reset; the earliest of the workspaces
    /// counted), on the platform's clock.
    #[serde(with = "crate::clock::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub since: DateTime<Utc>,
    /// Requests to the interface.
    pub requests: u64,
    /// Of those, requests that keep the contract.
    pub conforming: u64,
    /// Requests that break it.
    pub violating: u64,
    /// Requests answered by an injected fault before the platform read them.
    pub not_judged: u64,
    /// Requests that met an injected fault.
    pub faults_injected: u64,
    /// Entries the journal holds now.
    pub entries_kept: u64,
    /// Entries dropped from memory because the journal was full (the counts above still
    /// include them).
    pub entries_dropped: u64,
    /// How many entries the journal holds at most.
    pub capacity: u64,
    /// Operations called.
    pub coverage: Coverage,
    /// Every operation of the interface, in document order.
    pub operations: Vec<OperationSummary>,
    /// The `operationId`s never called.
    pub not_called: Vec<String>,
    /// Requests to no operation of the document.
    pub unknown_routes: UnknownRoutes,
    /// Requests answered 404 for an id that does not exist (not violations).
    #[serde(default)]
    pub not_found: RefusedRequests,
    /// Requests answered 409: the state said no (not violations).
    #[serde(default)]
    pub conflicts: RefusedRequests,
    /// Requests answered 413: a body above the platform's limit (not violations).
    #[serde(default)]
    pub too_large: RefusedRequests,
    /// Cohort uploads answered 200 whose file the platform then could not process (the
    /// cohort ended `failed`); each operation lists its own.
    #[serde(default)]
    pub failed_uploads: u64,
    /// Requests to a path that ends with `/` (warnings: served, but real platforms redirect
    /// or refuse them).
    #[serde(default)]
    pub trailing_slash: FlaggedRequests,
    /// Requests that give a query parameter more than once (warnings: this platform takes
    /// the last, other servers the first, or refuse them).
    #[serde(default)]
    pub repeated_query: FlaggedRequests,
}
