//! What a violation or a warning of one request says: a cause its client's author can act
//! on, pointing the right way.
//!
//! - A wrong route, a missing or wrong key ([`asked_violations`]): a key sent in another
//!   header is named by its header; a key sent in `X-API-Key` behind a scheme
//!   (`X-API-Key: Bearer <key>`) is named by the scheme ([`key_scheme`]), never by the key.
//! - What the answer shows ([`judge_answer`]): a 415 names the media type the operation
//!   really reads (`multipart/form-data` for a cohort upload), or says that the request had
//!   no `Content-Type`; the 422's items as answered; fields and multipart parts the
//!   operation does not know, even when ignored, with the name each most likely meant
//!   ([`meant`]; a `status` in a PATCH says where a status changes).
//! - The order of a request's violations ([`by_cost`]): a field of a write's body that the
//!   platform ignored comes first, as the write had no effect and nothing else will say so;
//!   the refusals the client saw anyway follow.
//! - Warnings ([`trailing_slash`], [`repeated_query`]): what this platform serves but real
//!   platforms treat otherwise, and how.

use std::collections::BTreeSet;

use contracts::error::{LocItem, ValidationErrorBody};
use contracts::openapi::fields;
use contracts::operations::{Catalogue, Operation, Resolved};
use contracts::wire::{ApiKeyUse, Violation, ViolationKind};
use serde_json::Value;
use warp::http::Method;

use super::redact;
use super::seen::{Answered, Asked};

/// Authorization schemes named when a request sends its key in `Authorization`, or puts one
/// before the key in `X-API-Key`; any other first word could be the key itself, and is not
/// repeated.
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

/// The scheme an `X-API-Key` value starts with (`Bearer` of `Bearer sk-...`, in any letter
/// case), when a word follows it: the header takes the key alone. Never the key.
pub(crate) fn key_scheme(value: &str) -> Option<&'static str> {
    let mut words = value.split_whitespace();
    let first = words.next()?;
    words.next()?;
    AUTH_SCHEMES
        .iter()
        .find(|s| s.eq_ignore_ascii_case(first))
        .copied()
}

/// What a 401 says of an `X-API-Key` that does not open the workspace: the scheme it
/// starts with, when it starts with one ([`key_scheme`]).
pub(crate) fn scheme_hint(value: &str) -> Option<String> {
    key_scheme(value).map(|s| {
        format!(
            "the X-API-Key header starts with '{s} ': it takes the key alone, without a scheme (X-API-Key: <key>, not X-API-Key: {s} <key>)"
        )
    })
}

/// A violation of `kind` at `loc` (of plain keys), its message scrubbed of numbers.
pub(super) fn violation(
    kind: ViolationKind,
    loc: &[&str],
    msg: impl Into<String>,
    t: &str,
) -> Violation {
    Violation {
        kind,
        loc: loc.iter().map(|s| LocItem::Key((*s).to_string())).collect(),
        msg: redact::scrub(&msg.into()),
        error_type: t.to_string(),
    }
}

/// How the route and the key of a request break the contract.
pub(super) fn asked_violations(x: &Asked<'_>, api_key: ApiKeyUse) -> Vec<Violation> {
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
            x.api_key
                .and_then(scheme_hint)
                .unwrap_or_else(|| "the key does not open the workspace of the path".into()),
            "invalid_api_key",
        )),
        ApiKeyUse::Valid => {}
    }
    out
}

/// What a 415 says: the media type the operation reads, and what the request sent (or that
/// it sent no `Content-Type`).
fn content_type_message(operation: Option<&Operation>, sent: Option<&str>) -> String {
    let reads = operation
        .and_then(|op| op.request_media_type.as_deref())
        .unwrap_or("application/json");
    match sent.map(crate::media_type::essence) {
        None => format!(
            "no Content-Type header: the operation reads {reads}; send the body as {reads}, with its Content-Type"
        ),
        Some(e) if e.is_empty() => format!(
            "an empty Content-Type header: the operation reads {reads}; send the body as {reads}, with its Content-Type"
        ),
        Some(e) => format!("the operation reads {reads}, not '{e}'"),
    }
}

/// Why an unknown field of `operation`'s body had no effect, when more can be said than
/// that it was ignored: a `status` in a PATCH (a status changes through `PUT .../status`).
fn ignored_hint(operation: &Operation, loc: &[LocItem]) -> Option<String> {
    let [LocItem::Key(body), LocItem::Key(field)] = loc else {
        return None;
    };
    if body != "body"
        || operation.method != "PATCH"
        || !matches!(field.as_str(), "status" | "action")
    {
        return None;
    }
    let status_path = format!("{}/status", operation.path);
    let put = Catalogue::platform()
        .operations()
        .iter()
        .find(|o| o.method == "PUT" && o.path == status_path)?;
    Some(format!(
        "the platform ignored it: a PATCH never changes the status, so nothing was paused, resumed or cancelled; {} {} does",
        put.method, put.path
    ))
}

/// How the answer shows the request breaks the contract, added to `out`: a 415, the 422's
/// items, fields of the body and multipart parts the operation does not know, then the
/// query parameters it does not know (`unknown_query`) but those the 422 named.
pub(super) fn judge_answer(
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
            content_type_message(operation, x.request.media_type()),
            "unsupported_media_type",
        ));
    }
    let mut answered_unknown = Vec::new();
    let mut missing = Vec::new();
    if x.status == Some(422)
        && let Some(body) = response_json
        && let Ok(errors) = serde_json::from_value::<ValidationErrorBody>(body.clone())
    {
        for d in errors.detail {
            if d.error_type == "extra_forbidden" {
                answered_unknown.push(d.loc.clone());
            }
            if d.error_type == "missing" {
                missing.push(d.loc.clone());
            }
            out.push(Violation {
                kind: ViolationKind::Validation,
                loc: d.loc,
                msg: redact::scrub(&d.msg),
                error_type: d.error_type,
            });
        }
    }
    let accepted = x.status.is_some_and(|s| (200..300).contains(&s));
    if let Some(op) = operation {
        let ignored = request_json
            .filter(|_| op.json_body)
            .map(|v| contracts::validate::unknown_fields(&op.operation_id, v))
            .unwrap_or_default();
        for d in ignored {
            if !answered_unknown.contains(&d.loc) {
                let given = request_json
                    .map(|v| names_beside(v, &d.loc))
                    .unwrap_or_default();
                let hint = ignored_hint(op, &d.loc)
                    .or_else(|| meant(&op.operation_id, &d.loc, &given, &missing, accepted));
                out.push(Violation {
                    kind: ViolationKind::UnknownField,
                    msg: with_hint(&d.msg, hint),
                    loc: d.loc,
                    error_type: d.error_type,
                });
            }
        }
        // The parts a form gave are not at hand: an accepted upload gave every required
        // one; of a refused one, the 422's missing parts are the names it meant.
        let given = if accepted {
            fields::required_names(&op.operation_id)
        } else {
            BTreeSet::new()
        };
        for part in x.ignored_parts {
            let loc = vec![
                LocItem::Key("body".into()),
                LocItem::Key(redact::scrub(part)),
            ];
            if !answered_unknown.contains(&loc) {
                let hint = meant(&op.operation_id, &loc, &given, &missing, accepted);
                out.push(Violation {
                    kind: ViolationKind::UnknownField,
                    loc,
                    msg: with_hint(
                        "Extra inputs are not permitted: the operation has no such multipart part",
                        hint,
                    ),
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

/// `msg` with what more there is to say of an unknown field in brackets.
pub(super) fn with_hint(msg: &str, hint: Option<String>) -> String {
    match hint {
        Some(h) => format!("{msg} ({h})"),
        None => msg.to_string(),
    }
}

/// What an unknown field at `loc` of `operation_id` comes to: ignored when the request was
/// `accepted` (so that part of it had no effect), and the name it most likely meant: one the
/// 422 names as missing beside it first, else the closest the document knows there that the
/// request did not give (`given`).
pub(super) fn meant(
    operation_id: &str,
    loc: &[LocItem],
    given: &BTreeSet<String>,
    missing: &[Vec<LocItem>],
    accepted: bool,
) -> Option<String> {
    let Some((LocItem::Key(name), parent)) = loc.split_last() else {
        return accepted.then(|| "the platform ignored it".into());
    };
    let known = fields::known_names(operation_id, parent);
    let wanted: BTreeSet<String> = missing
        .iter()
        .filter(|m| m.len() == loc.len() && m.starts_with(parent))
        .filter_map(|m| match m.last() {
            Some(LocItem::Key(k)) => Some(k.clone()),
            _ => None,
        })
        .collect();
    let guess = fields::closest(name, &wanted, &BTreeSet::new())
        .or_else(|| fields::closest(name, &known, given))
        .map(|k| format!("did you mean '{k}'?"));
    match (accepted, guess) {
        (true, Some(g)) => Some(format!("the platform ignored it; {g}")),
        (true, None) => Some("the platform ignored it".into()),
        (false, g) => g,
    }
}

/// The names the object holding `loc` gives in `body` (`loc` starts with `body`).
fn names_beside(body: &Value, loc: &[LocItem]) -> BTreeSet<String> {
    let mut at = body;
    for item in loc.iter().skip(1).take(loc.len().saturating_sub(2)) {
        at = match item {
            LocItem::Key(k) => &at[k.as_str()],
            LocItem::Index(i) => &at[*i],
        };
    }
    at.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Orders a request's violations by what they cost the client, keeping the order within
/// each rank: first the fields of a write's body (POST, PUT, PATCH) that the platform
/// ignored, as that part of the write had no effect and no answer says so; then the rest
/// (the route, the key, the media type, the 422's items, ignored query parameters), which
/// the client's own answer showed or which changed no state.
pub(super) fn by_cost(method: &Method, violations: &mut [Violation]) {
    let write = matches!(*method, Method::POST | Method::PUT | Method::PATCH);
    if !write {
        return;
    }
    violations.sort_by_key(|v| {
        let ignored_write = v.kind == ViolationKind::UnknownField
            && matches!(v.loc.first(), Some(LocItem::Key(k)) if k == "body");
        u8::from(!ignored_write)
    });
}

/// The warning of a path of `operation` that ends with `/` (which this platform serves as
/// the path without it).
pub(super) fn trailing_slash(path: &str) -> Violation {
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    violation(
        ViolationKind::TrailingSlash,
        &["path"],
        format!(
            "the path ends with '/': this platform served it as {trimmed}, but real platforms answer it with a redirect (FastAPI's 307 to the path without '/', which many clients do not follow for a POST) or 404; drop the trailing '/'"
        ),
        "trailing_slash",
    )
}

/// The warning of a query parameter `name` given `values.len()` times (the values as the
/// journal may keep them: `None` for a parameter that could hold customer data).
pub(super) fn repeated_query(name: &str, values: Option<&[String]>) -> Violation {
    let (given, last, first) = match values {
        Some(v) if v.len() > 1 => (
            format!(
                " ({})",
                v.iter()
                    .map(|x| format!("{name}={x}"))
                    .collect::<Vec<_>>()
                    .join("&")
            ),
            format!(" ({name}={})", v[v.len() - 1]),
            format!(" ({name}={})", v[0]),
        ),
        _ => (String::new(), String::new(), String::new()),
    };
    Violation {
        kind: ViolationKind::RepeatedQuery,
        loc: vec![
            LocItem::Key("query".into()),
            LocItem::Key(redact::scrub(name)),
        ],
        msg: redact::scrub(&format!(
            "'{name}' is given more than once{given}: this platform took the last{last}, but real platforms differ (many take the first{first}, some refuse the request or read a list); send it once"
        )),
        error_type: "repeated_query".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warp::http::{HeaderMap, HeaderValue};

    fn with(name: &'static str, value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn an_unknown_name_says_what_it_meant_and_ignored_only_when_accepted() {
        let key = |k: &str| LocItem::Key(k.into());
        let none = BTreeSet::new();
        let at = [key("body"), key("desciption")];
        assert_eq!(
            meant("create_deployment", &at, &none, &[], true).as_deref(),
            Some("the platform ignored it; did you mean 'description'?")
        );
        assert_eq!(
            meant("create_deployment", &at, &none, &[], false).as_deref(),
            Some("did you mean 'description'?")
        );
        // A name the 422 says is missing beside it comes first.
        let at = [key("body"), key("agent_config")];
        let missing = [vec![key("body"), key("app_config")]];
        assert_eq!(
            meant("create_campaign", &at, &none, &missing, false).as_deref(),
            Some("did you mean 'app_config'?")
        );
        // Nothing near, or no place at all.
        let at = [key("body"), key("colour")];
        assert_eq!(meant("create_deployment", &at, &none, &[], false), None);
        assert_eq!(
            meant("create_deployment", &[], &none, &[], true).as_deref(),
            Some("the platform ignored it")
        );
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
    fn a_scheme_before_the_key_is_named_without_the_key() {
        assert_eq!(key_scheme("Bearer sk-secret-1"), Some("Bearer"));
        assert_eq!(key_scheme("bearer   sk-secret-1"), Some("Bearer"));
        assert_eq!(key_scheme("Bearer"), None, "no key after it");
        assert_eq!(key_scheme("sk-secret-1"), None);
        let hint = scheme_hint("Bearer sk-secret-1").unwrap();
        assert!(
            hint.contains("'Bearer '") && !hint.contains("secret"),
            "{hint}"
        );
    }

    #[test]
    fn a_415_names_the_media_type_the_operation_reads() {
        let c = Catalogue::platform();
        let upload = c
            .operations()
            .iter()
            .find(|o| o.operation_id == "upload_campaign_cohort");
        assert_eq!(
            content_type_message(upload, Some("application/x-www-form-urlencoded")),
            "the operation reads multipart/form-data, not 'application/x-www-form-urlencoded'"
        );
        assert_eq!(
            content_type_message(upload, Some("application/json; charset=utf-8")),
            "the operation reads multipart/form-data, not 'application/json'"
        );
        let create = c
            .operations()
            .iter()
            .find(|o| o.operation_id == "create_deployment");
        let none = content_type_message(create, None);
        assert!(
            none.starts_with("no Content-Type header: the operation reads application/json"),
            "{none}"
        );
        assert!(!none.contains("''"), "{none}");
    }

    #[test]
    fn an_ignored_field_of_a_write_comes_first() {
        let v = |kind, loc: &[&str]| violation(kind, loc, "m", "t");
        let mut list = vec![
            v(ViolationKind::Validation, &["body", "name"]),
            v(ViolationKind::UnknownField, &["query", "limt"]),
            v(ViolationKind::UnknownField, &["body", "status"]),
            v(ViolationKind::Validation, &["body", "end_timestamp"]),
        ];
        by_cost(&Method::PATCH, &mut list);
        let locs: Vec<String> = list
            .iter()
            .map(|v| contracts::error::dotted(&v.loc))
            .collect();
        assert_eq!(
            locs,
            [
                "body.status",
                "body.name",
                "query.limt",
                "body.end_timestamp"
            ]
        );
        let mut read = list.clone();
        read.reverse();
        let before = read.clone();
        by_cost(&Method::GET, &mut read);
        assert_eq!(read, before, "a read's order is the order found");
    }

    #[test]
    fn a_repeated_parameter_says_which_value_was_taken() {
        let values = ["10".to_string(), "50".to_string()];
        let w = repeated_query("limit", Some(&values));
        assert!(w.msg.contains("(limit=10&limit=50)"), "{}", w.msg);
        assert!(w.msg.contains("took the last (limit=50)"), "{}", w.msg);
        assert!(w.msg.contains("take the first (limit=10)"), "{}", w.msg);
        let hidden = repeated_query("search", None);
        assert!(!hidden.msg.contains('='), "{}", hidden.msg);
    }
}
