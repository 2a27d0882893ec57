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
//! The violations are ordered by what they cost the client (see [`causes::by_cost`]), and
//! what each says is in [`causes`].
//!
//! A request may also carry warnings, which do not break the contract: a path of an
//! operation that ends with `/` (`trailing_slash`) and a query parameter of it given more
//! than once (`repeated_query`), both served here but treated otherwise by real platforms.
//! An upload answered 200 carries the cohort it created ([`AcceptedUpload`]), whose fate
//! the journal learns later.
//!
//! A request an injected fault answered before the platform read it is `not_judged`.

use chrono::{DateTime, Utc};
use contracts::error::LocItem;
use contracts::operations::{Catalogue, Operation, Resolved};
use contracts::wire::{ApiKeyUse, CohortStatus, UploadedCohort, Verdict, Violation, ViolationKind};
use warp::http::Method;

use super::causes::{self, asked_violations, by_cost, judge_answer};
use super::kept::{Kept, Texts};
use super::redact;
pub use super::seen::{Answered, Asked, SeenBody};
use crate::store::WorkspaceRef;

pub(crate) use super::causes::misplaced_key;

/// The multipart parts a handler read past because the operation does not know them: put
/// on the answer (as an extension) for the journal, which reports each as `unknown_field`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IgnoredParts(pub Vec<String>);

/// The cohort an upload created, put on its 200 answer (as an extension) for the journal,
/// which then follows what becomes of its file ([`super::Journal::upload_settled`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AcceptedUpload(pub String);

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
    /// What this platform serves but real platforms treat otherwise (a trailing `/`, a
    /// query parameter given twice).
    warnings: Vec<Violation>,
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
        let mut warnings = Vec::new();
        if op.is_some() && asked.path.len() > 1 && asked.path.ends_with('/') {
            warnings.push(causes::trailing_slash(asked.path));
        }
        if let Some(op) = op {
            repeated_parameters(asked.query, op, &mut warnings);
        }
        // The query is read once: for what the journal keeps of it, and for the parameters
        // the operation does not know.
        // The names are borrowed from the query (decoded only when they need it); the set a
        // suggestion needs is made only for a query with an unknown name.
        let mut names: Vec<std::borrow::Cow<'_, str>> = Vec::new();
        let query = redact::query_kept(asked.query, |k| {
            if op.is_some() && !names.contains(&k) {
                names.push(k);
            }
        });
        let unknown_query = match op {
            Some(op)
                if names
                    .iter()
                    .any(|k| !op.query_params.iter().any(|p| p == k)) =>
            {
                let given: std::collections::BTreeSet<String> =
                    names.iter().map(|k| k.to_string()).collect();
                names
                    .iter()
                    .filter(|k| !op.query_params.iter().any(|p| p == *k))
                    .map(|k| {
                        let loc =
                            vec![LocItem::Key("query".into()), LocItem::Key(redact::scrub(k))];
                        let hint = causes::meant(&op.operation_id, &loc, &given, &[], true);
                        Violation {
                            kind: ViolationKind::UnknownField,
                            msg: causes::with_hint("Extra inputs are not permitted", hint),
                            loc,
                            error_type: "extra_forbidden".into(),
                        }
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        Pending {
            at: asked.at,
            method: asked.method.clone(),
            texts: Texts::new(asked.path, &query, key_name),
            operation,
            asked: asked_violations(asked, api_key),
            api_key,
            unknown_query,
            warnings,
        }
    }

    /// The journal entry of the request answered as `answered` (its `seq` is 0 until
    /// recorded). A request a fault answered before the platform read it is not judged.
    pub fn finish(self, answered: &Answered<'_>, catalogue: &Catalogue, body_limit: usize) -> Kept {
        let request_json = answered.request.parsed();
        let response_json = answered.response.parsed();
        let op = self.operation.and_then(|i| catalogue.operations().get(i));
        let (violations, warnings) = if answered.handled {
            let mut out = self.asked;
            judge_answer(
                &mut out,
                answered,
                op,
                request_json.as_ref(),
                response_json.as_ref(),
                self.unknown_query,
            );
            by_cost(&self.method, &mut out);
            (out, self.warnings)
        } else {
            (Vec::new(), Vec::new())
        };
        let cohort = answered
            .accepted_upload
            .filter(|_| answered.status == Some(200))
            .map(|id| {
                Box::new(UploadedCohort {
                    cohort_id: redact::scrub(id),
                    status: CohortStatus::Processing,
                    failure_reason: None,
                })
            });
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
            warnings,
            fault: answered.fault.clone().map(Box::new),
            cohort,
            owner: None,
        }
    }
}

/// Most query parameters compared for repeats: a query is short, and a long one is not
/// compared pair by pair past these.
const REPEATS_CHECKED: usize = 32;

/// A warning for each query parameter of `op` that `raw` gives more than once (at its
/// second occurrence). Compares the names in place, without allocating, unless one repeats.
fn repeated_parameters(raw: &str, op: &Operation, out: &mut Vec<Violation>) {
    if !raw.contains('&') {
        return;
    }
    for (i, (name, _)) in redact::query_pairs(raw).take(REPEATS_CHECKED).enumerate() {
        if !op.query_params.iter().any(|p| *p == name) {
            continue;
        }
        let before = redact::query_pairs(raw)
            .take(i)
            .filter(|(k, _)| *k == name)
            .count();
        if before != 1 {
            continue;
        }
        let values: Option<Vec<String>> = redact::query_value_kept(&name).then(|| {
            redact::query_pairs(raw)
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| redact::scrub(&v))
                .collect()
        });
        out.push(causes::repeated_query(&name, values.as_deref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
