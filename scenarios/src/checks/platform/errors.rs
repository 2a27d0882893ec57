//! `errors`: the error shapes where the spec names them, and how the target answers a body
//! it cannot read.
//!
//! - Instant outbound validation: 422 `{"detail": [{"loc": [...], "msg", "type"}]}` (spec).
//! - Deployment list and delete failures: `{"error": {"message", "type", "code"}}`, all three
//!   strings (spec).
//! - A malformed JSON body: a 422 in the validation shape, never a 5xx (the reference's
//!   validation answer).
//! - Unknown ids and missing keys: 404 and 401 in the error shape (this contract's
//!   assumptions, so warnings).

use reqwest::Method;
use serde_json::json;

use super::context::{Ctx, is_error_shape, is_validation_shape, loc, names_loc};
use super::exchange::Exchange;
use super::fixtures;
use super::target::{Body, Key};
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

const OUTBOUND_VALIDATION: CheckDef = CheckDef::error(
    "errors.outbound_validation_shape",
    "an invalid outbound request is a 422 {detail: [{loc, msg, type}]} naming the field",
);
const LIST_ERROR: CheckDef = CheckDef::error(
    "errors.deployment_list_error_shape",
    "a refused deployment list answers {error: {message, type, code}}, all strings",
);
const DELETE_ERROR: CheckDef = CheckDef::error(
    "errors.deployment_delete_error_shape",
    "a failed deployment delete (unknown id) answers {error: {message, type, code}}, all strings",
);
const MALFORMED: CheckDef = CheckDef::error(
    "errors.malformed_json",
    "a malformed JSON body is a 422 in the validation shape on every JSON route, never a 5xx",
);
const NOT_FOUND: CheckDef = CheckDef::warning(
    "errors.unknown_id_404",
    "an unknown campaign or deployment id is a 404 in the error shape (assumed)",
);
const UNAUTHORIZED: CheckDef = CheckDef::warning(
    "errors.missing_key_401",
    "a request without X-API-Key is a 401 in the error shape (assumed)",
);

/// The checks of this group.
pub const CHECKS: &[CheckDef] = &[
    OUTBOUND_VALIDATION,
    LIST_ERROR,
    DELETE_ERROR,
    MALFORMED,
    NOT_FOUND,
    UNAUTHORIZED,
];

/// Runs the group.
pub async fn run(cx: &Ctx, v: &mut Verdicts) {
    let mut body = fixtures::outbound(
        &cx.settings.agent,
        &cx.names.number(),
        &cx.settings.user_phone_number,
    );
    body["app_config"]["app_version"] = json!("one");
    let x = cx.send(Method::POST, &cx.paths.outbounds(), body).await;
    let at = loc(&["body", "app_config", "app_version"]);
    v.judge(
        &OUTBOUND_VALIDATION,
        is_validation_shape(x.body()) && names_loc(&x, &at),
        x.evidence().with("sent", "app_config.app_version \"one\""),
        "422 {\"detail\": [{\"loc\": [...], \"msg\": string, \"type\": string}, ...]} with an entry at loc [\"body\", \"app_config\", \"app_version\"]",
    );

    let wrong = format!("harness-check-wrong-key-{}", cx.names.run());
    let x = cx
        .http
        .call(
            Method::GET,
            &cx.paths.deployments(),
            &[],
            Key::Value(&wrong),
            Body::Empty,
        )
        .await;
    v.judge(
        &LIST_ERROR,
        refused(&x) && is_error_shape(x.body()),
        x.evidence().with("sent", "a wrong X-API-Key"),
        "a 4xx with {\"error\": {\"message\": string, \"type\": string, \"code\": string}}",
    );

    let unknown = format!("harness-check-missing-{}", cx.names.run());
    let x = cx
        .call(
            Method::DELETE,
            &cx.paths.deployment(&unknown),
            &[],
            Body::Empty,
        )
        .await;
    v.judge(
        &DELETE_ERROR,
        refused(&x) && is_error_shape(x.body()),
        x.evidence(),
        "a 4xx (404 in this contract) with {\"error\": {\"message\": string, \"type\": string, \"code\": string}}",
    );

    malformed(cx, v).await;

    let campaign = cx.get(&cx.paths.campaign(&unknown), &[]).await;
    let deployment = cx.get(&cx.paths.deployment(&unknown), &[]).await;
    let ok = [&campaign, &deployment]
        .iter()
        .all(|x| x.status == 404 && is_error_shape(x.body()));
    v.judge(
        &NOT_FOUND,
        ok,
        Exchange::all(&[&campaign, &deployment]),
        "404 with {\"error\": {\"message\", \"type\", \"code\"}}",
    );

    let x = cx
        .http
        .call(
            Method::GET,
            &cx.paths.campaigns(),
            &[],
            Key::Missing,
            Body::Empty,
        )
        .await;
    v.judge(
        &UNAUTHORIZED,
        x.status == 401 && is_error_shape(x.body()),
        x.evidence(),
        "401 with {\"error\": {\"message\", \"type\", \"code\"}}",
    );
}

/// A 4xx answer.
fn refused(x: &Exchange) -> bool {
    (400..500).contains(&x.status)
}

async fn malformed(cx: &Ctx, v: &mut Verdicts) {
    let broken = b"{\"name\": \"harness-check\", ".to_vec();
    let routes = [
        cx.paths.outbounds(),
        cx.paths.campaigns(),
        cx.paths.deployments(),
    ];
    let mut calls = Vec::new();
    for path in &routes {
        calls.push(
            cx.call(
                Method::POST,
                path,
                &[],
                Body::Raw("application/json", broken.clone()),
            )
            .await,
        );
    }
    let ok = calls
        .iter()
        .all(|x| x.status == 422 && is_validation_shape(x.body()));
    let refs: Vec<&Exchange> = calls.iter().collect();
    v.judge(
        &MALFORMED,
        ok,
        Exchange::all(&refs).with("sent", String::from_utf8_lossy(&broken).into_owned()),
        "422 with {\"detail\": [{\"loc\", \"msg\", \"type\"}]} from each create route",
    );
}
