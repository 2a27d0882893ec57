//! The contract's verdict on one request, and the journal entry that carries it.
//!
//! A request breaks the contract when:
//! - no operation of the OpenAPI document has its method and path (`unknown_route`), whatever
//!   its prefix;
//! - it has no `X-API-Key` (`missing_key`; a key sent in another header, such as
//!   `Authorization: Bearer`, is named), or one that does not open the workspace of the path
//!   (`invalid_key`);
//! - the platform answered 415: its body is not of the media type the operation reads
//!   (`content_type`);
//! - the platform answered 422: every item of that answer, `loc`, `msg` and `type` as
//!   answered (`validation`);
//! - its body or query has fields the operation does not know, even when the platform
//!   ignored them (`unknown_field`, from [`contracts::validate::unknown_fields`], the
//!   document's query parameters, and the multipart parts the upload handler reports as
//!   ignored through [`IgnoredParts`]).
//!
//! A request an injected fault answered before the platform read it is `not_judged`.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use contracts::error::{LocItem, ValidationErrorBody};
use contracts::operations::{Catalogue, Operation, Resolved};
use contracts::wire::{ApiKeyUse, AppliedFault, Verdict, Violation, ViolationKind};
use serde_json::Value;
use warp::http::{HeaderValue, Method};

use super::kept::{Kept, KeptBody, Media, Note, Texts};
use super::redact;
use crate::store::WorkspaceRef;

/// A body as seen on the wire: what was captured of it.
#[derive(Debug, Clone, Default)]
pub struct SeenBody {
    /// Its `Content-Type` (a header's value: cloning it copies nothing).
    pub content_type: Option<HeaderValue>,
    /// The bytes captured (all of them when `complete`).
    pub bytes: bytes::Bytes,
    /// Bytes that passed, captured or not.
    pub size: u64,
    /// Whether `bytes` is the whole body.
    pub complete: bool,
    /// Left unread on purpose: the body of a successful answer, which the journal's
    /// settings do not keep.
    pub not_kept: bool,
}

impl SeenBody {
    /// Its `Content-Type` as text (none when not visible ASCII).
    pub(crate) fn media_type(&self) -> Option<&str> {
        self.content_type.as_ref().and_then(|v| v.to_str().ok())
    }

    fn is_json(&self) -> bool {
        self.media_type().is_some_and(crate::media_type::is_json)
    }

    /// The JSON, when the body is complete JSON.
    fn parsed(&self) -> Option<Value> {
        (self.complete && !self.bytes.is_empty() && (self.is_json() || self.content_type.is_none()))
            .then(|| serde_json::from_slice(&self.bytes).ok())
            .flatten()
    }

    /// The journal's copy: redacted JSON within `limit` bytes, else a note.
    fn record(&self, parsed: Option<&Value>, limit: usize) -> KeptBody {
        let mut out = KeptBody {
            media: Media::of(self.media_type()),
            bytes: self.size,
            json: None,
            note: Note::None,
        };
        if self.size == 0 {
            return out;
        }
        out.note = if self.not_kept {
            Note::NotKept
        } else if self.size > limit as u64 {
            Note::TooLarge(limit)
        } else if !self.complete {
            Note::NotReadToEnd
        } else if let Some(v) = parsed {
            out.json = Some(Box::new(redact::json(v)));
            return out;
        } else if self.is_json() {
            Note::NotValidJson
        } else {
            Note::NotJson
        };
        out
    }
}

/// The multipart parts a handler read past because the operation does not know them: put
/// on the answer (as an extension) for the journal, which reports each as `unknown_field`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IgnoredParts(pub Vec<String>);

/// The workspace a path names: its `org_id` and `workspace_id` parameters when it is an
/// operation of the document, else the segments after `orgs/` and `workspaces/` (a client
/// with a wrong prefix still aims at a workspace).
pub fn path_workspace(resolved: &Resolved<'_>, path: &str) -> Option<WorkspaceRef> {
    if let Resolved::Operation(_, _, params) = resolved {
        return match (params.get("org_id"), params.get("workspace_id")) {
            (Some(o), Some(w)) => Some(WorkspaceRef::new(o, w)),
            _ => None,
        };
    }
    let segments: Vec<&str> = contracts::operations::path_segments(path).collect();
    segments.windows(4).find_map(|w| match w {
        ["orgs", org, "workspaces", ws] if !org.is_empty() && !ws.is_empty() => {
            Some(WorkspaceRef::new(*org, *ws))
        }
        _ => None,
    })
}

/// Authorization schemes named when a request sends its key in `Authorization`; any other
/// first word could be the key itself, and is not repeated.
const AUTH_SCHEMES: [&str; 6] = ["Bearer", "Basic", "Token", "ApiKey", "Key", "Digest"];

/// Where a request without `X-API-Key` put its key, when it looks like it sent one: the
/// scheme of an `Authorization` header (`Authorization: Bearer`, for a scheme of
/// `AUTH_SCHEMES`), or the name of a header such as `api-key` or `x_api_key`. Never the
/// value.
pub(crate) fn misplaced_key(headers: &warp::http::HeaderMap) -> Option<String> {
    if let Some(auth) = headers.get(warp::http::header::AUTHORIZATION) {
        let first = auth
            .to_str()
            .ok()
            .and_then(|v| v.split_whitespace().next())
            .unwrap_or("");
        let scheme = AUTH_SCHEMES.iter().find(|s| s.eq_ignore_ascii_case(first));
        return Some(match scheme {
            Some(s) => format!("Authorization: {s}"),
            None => "Authorization".into(),
        });
    }
    headers.keys().find_map(|name| {
        let folded: String = name
            .as_str()
            .chars()
            .filter(|c| *c != '-' && *c != '_')
            .collect();
        ["apikey", "apitoken", "authtoken"]
            .iter()
            .any(|k| folded.contains(k))
            .then(|| format!("the header '{}'", name.as_str()))
    })
}

/// What a request asked: everything known of it before its answer.
#[derive(Debug)]
pub struct Asked<'a> {
    /// When it arrived, on the platform's clock.
    pub at: DateTime<Utc>,
    /// The method.
    pub method: &'a Method,
    /// The path.
    pub path: &'a str,
    /// The raw query string.
    pub query: &'a str,
    /// The `X-API-Key` header, if any.
    pub api_key: Option<&'a str>,
    /// Without `X-API-Key`: where the request seems to have sent its key
    /// ([`misplaced_key`]).
    pub key_elsewhere: Option<&'a str>,
    /// The workspace the path names ([`path_workspace`]).
    pub path_workspace: Option<&'a WorkspaceRef>,
    /// What the method and path are in the document.
    pub resolved: &'a Resolved<'a>,
}

/// How a request was answered.
#[derive(Debug)]
pub struct Answered<'a> {
    /// Multipart parts the handler ignored ([`IgnoredParts`]).
    pub ignored_parts: &'a [String],
    /// The status answered (`None`: no answer).
    pub status: Option<u16>,
    /// Wall milliseconds until the answer.
    pub duration_ms: f64,
    /// The request body.
    pub request: &'a SeenBody,
    /// The response body.
    pub response: &'a SeenBody,
    /// The fault injected, if any.
    pub fault: Option<AppliedFault>,
    /// Whether the platform's handlers saw the request (not when a fault answered first).
    pub handled: bool,
}

/// A request judged on what it asked (its route, its key, its query), waiting for its
/// answer: it holds nothing of the request, so it waits across the answer, and what the
/// entry keeps of the request is copied once.
#[derive(Debug)]
pub struct Pending {
    at: DateTime<Utc>,
    method: Method,
    /// The path, the query as kept (redacted) and the key's name.
    texts: Texts,
    /// The operation's index in the catalogue.
    operation: Option<usize>,
    api_key: ApiKeyUse,
    /// How the route or the key breaks the contract: first in the entry.
    asked: Vec<Violation>,
    /// Query parameters the operation does not know: last in the entry, but for those the
    /// answer's 422 names.
    unknown_query: Vec<Violation>,
}

impl Pending {
    /// `asked` judged: its route, its key, its query. `key_name` is the name the key table
    /// gives the key sent for the path's workspace
    /// ([`crate::auth::KeyTable::name_for`]); `None` for no key of it.
    pub fn new(asked: &Asked<'_>, key_name: Option<&str>) -> Pending {
        let (operation, op) = match asked.resolved {
            Resolved::Operation(i, op, _) => (Some(*i), Some(*op)),
            _ => (None, None),
        };
        let (api_key, key_name) = match (asked.api_key, key_name) {
            (None, _) => (ApiKeyUse::Missing, None),
            (Some(_), Some(name)) => (ApiKeyUse::Valid, Some(name)),
            (Some(_), None) => (ApiKeyUse::Invalid, None),
        };
        // The query is read once: for what the journal keeps of it, and for the parameters
        // the operation does not know.
        let mut unknown_query = Vec::new();
        let mut seen: Vec<Cow<'_, str>> = Vec::new();
        let query = redact::query_kept(asked.query, |k| {
            let Some(op) = op else { return };
            if op.query_params.iter().any(|p| *p == k) || seen.contains(&k) {
                return;
            }
            unknown_query.push(Violation {
                kind: ViolationKind::UnknownField,
                loc: vec![
                    LocItem::Key("query".into()),
                    LocItem::Key(redact::scrub(&k)),
                ],
                msg: "Extra inputs are not permitted (the platform ignored it)".into(),
                error_type: "extra_forbidden".into(),
            });
            seen.push(k);
        });
        Pending {
            at: asked.at,
            method: asked.method.clone(),
            texts: Texts::new(asked.path, &query, key_name),
            operation,
            asked: asked_violations(asked, api_key),
            api_key,
            unknown_query,
        }
    }

    /// The journal entry of the request answered as `answered` (its `seq` is 0 until
    /// recorded). A request a fault answered before the platform read it is not judged.
    pub fn finish(self, answered: &Answered<'_>, catalogue: &Catalogue, body_limit: usize) -> Kept {
        let request_json = answered.request.parsed();
        let response_json = answered.response.parsed();
        let op = self.operation.and_then(|i| catalogue.operations().get(i));
        let violations = if answered.handled {
            let mut out = self.asked;
            judge_answer(
                &mut out,
                answered,
                op,
                request_json.as_ref(),
                response_json.as_ref(),
                self.unknown_query,
            );
            out
        } else {
            Vec::new()
        };
        let verdict = if !answered.handled {
            Verdict::NotJudged
        } else if violations.is_empty() {
            Verdict::Conforms
        } else {
            Verdict::Violates
        };
        Kept {
            seq: 0,
            at: self.at,
            method: self.method,
            texts: self.texts,
            operation: self.operation.and_then(|i| u16::try_from(i).ok()),
            api_key: self.api_key,
            status: answered.status,
            duration_ms: (answered.duration_ms * 1000.0).round() / 1000.0,
            request: answered.request.record(request_json.as_ref(), body_limit),
            response: answered.response.record(response_json.as_ref(), body_limit),
            verdict,
            violations,
            fault: answered.fault.clone().map(Box::new),
            owner: None,
        }
    }
}

fn violation(kind: ViolationKind, loc: &[&str], msg: impl Into<String>, t: &str) -> Violation {
    Violation {
        kind,
        loc: loc.iter().map(|s| LocItem::Key((*s).to_string())).collect(),
        msg: redact::scrub(&msg.into()),
        error_type: t.to_string(),
    }
}

/// How the route and the key of a request break the contract.
fn asked_violations(x: &Asked<'_>, api_key: ApiKeyUse) -> Vec<Violation> {
    let mut out = Vec::new();
    match x.resolved {
        Resolved::Unknown => out.push(violation(
            ViolationKind::UnknownRoute,
            &["path"],
            if x.path.starts_with(contracts::openapi::INTERFACE_PREFIX) {
                format!(
                    "no operation of the OpenAPI document has the path {}",
                    x.path
                )
            } else {
                format!(
                    "no operation of the OpenAPI document has the path {}: every path of the interface starts with {}",
                    x.path,
                    contracts::openapi::INTERFACE_PREFIX
                )
            },
            "unknown_route",
        )),
        Resolved::WrongMethod { path, allowed } => out.push(violation(
            ViolationKind::UnknownRoute,
            &["path"],
            format!("{path} takes {}, not {}", allowed.join(", "), x.method),
            "method_not_allowed",
        )),
        Resolved::Operation(..) => {}
    }
    match api_key {
        ApiKeyUse::Missing => out.push(violation(
            ViolationKind::MissingKey,
            &["header", "x-api-key"],
            match x.key_elsewhere {
                Some(place) => format!(
                    "Field required: the key was sent in {place}, but the platform reads it from the X-API-Key header only"
                ),
                None => "Field required: every platform request carries X-API-Key".into(),
            },
            "missing",
        )),
        ApiKeyUse::Invalid => out.push(violation(
            ViolationKind::InvalidKey,
            &["header", "x-api-key"],
            "the key does not open the workspace of the path",
            "invalid_api_key",
        )),
        ApiKeyUse::Valid => {}
    }
    out
}

/// How the answer shows the request breaks the contract, added to `out`: a 415, the 422's
/// items, fields of the body and multipart parts the operation does not know, then the
/// query parameters it does not know (`unknown_query`) but those the 422 named.
fn judge_answer(
    out: &mut Vec<Violation>,
    x: &Answered<'_>,
    operation: Option<&Operation>,
    request_json: Option<&Value>,
    response_json: Option<&Value>,
    unknown_query: Vec<Violation>,
) {
    if x.status == Some(415) {
        out.push(violation(
            ViolationKind::ContentType,
            &["header", "content-type"],
            format!(
                "the operation reads application/json, not '{}'",
                x.request.media_type().unwrap_or("")
            ),
            "unsupported_media_type",
        ));
    }
    let mut answered_unknown = Vec::new();
    if x.status == Some(422)
        && let Some(body) = response_json
        && let Ok(errors) = serde_json::from_value::<ValidationErrorBody>(body.clone())
    {
        for d in errors.detail {
            if d.error_type == "extra_forbidden" {
                answered_unknown.push(d.loc.clone());
            }
            out.push(Violation {
                kind: ViolationKind::Validation,
                loc: d.loc,
                msg: redact::scrub(&d.msg),
                error_type: d.error_type,
            });
        }
    }
    if let Some(op) = operation {
        let ignored = request_json
            .filter(|_| op.json_body)
            .map(|v| contracts::validate::unknown_fields(&op.operation_id, v))
            .unwrap_or_default();
        for d in ignored {
            if !answered_unknown.contains(&d.loc) {
                out.push(Violation {
                    kind: ViolationKind::UnknownField,
                    loc: d.loc,
                    msg: format!("{} (the platform ignored it)", d.msg),
                    error_type: d.error_type,
                });
            }
        }
        for part in x.ignored_parts {
            let loc = vec![
                LocItem::Key("body".into()),
                LocItem::Key(redact::scrub(part)),
            ];
            if !answered_unknown.contains(&loc) {
                out.push(Violation {
                    kind: ViolationKind::UnknownField,
                    loc,
                    msg: "Extra inputs are not permitted: the operation has no such multipart part (the platform ignored it)".into(),
                    error_type: "extra_forbidden".into(),
                });
            }
        }
    }
    out.extend(
        unknown_query
            .into_iter()
            .filter(|v| !answered_unknown.contains(&v.loc)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use warp::http::HeaderMap;

    fn with(name: &'static str, value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn a_misplaced_key_is_named_by_its_header_never_by_its_value() {
        let named = |name, value| misplaced_key(&with(name, value));
        assert_eq!(
            named("authorization", "bearer sk1234abcd").as_deref(),
            Some("Authorization: Bearer")
        );
        assert_eq!(
            named("authorization", "sk1234abcd").as_deref(),
            Some("Authorization"),
            "a first word that is no scheme may be the key"
        );
        assert_eq!(
            named("x_api_key", "sk1").as_deref(),
            Some("the header 'x_api_key'")
        );
        assert_eq!(named("accept", "application/json"), None);
    }

    #[test]
    fn a_path_names_its_workspace_even_under_a_wrong_prefix() {
        let catalogue = contracts::operations::Catalogue::platform();
        let at = |path: &str| path_workspace(&catalogue.resolve("GET", path), path);
        let ws = Some(WorkspaceRef::new("o", "w"));
        assert_eq!(
            at("/api/app-authoring/v1/orgs/o/workspaces/w/deployments"),
            ws
        );
        assert_eq!(
            at("/apis/app-authoring/v1/orgs/o/workspaces/w/deployments"),
            ws
        );
        assert_eq!(at("/v1/orgs/o/workspaces/w"), ws);
        assert_eq!(at("/v1/orgs/o/workspaces/"), None);
        assert_eq!(at("/nothing"), None);
    }
}
