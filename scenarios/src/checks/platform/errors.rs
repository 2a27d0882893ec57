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
use serde_json::{Value, json};

use super::context::{Ctx, is_error_shape, is_validation_shape, loc, names_loc};
use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes};
use super::target::Key;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

const OUTBOUND_VALIDATION: CheckDef = CheckDef::error(
    "errors.outbound_validation_shape",
    "an invalid outbound request is a 422 {detail: [{loc, msg, type}]} naming the field (two fields, each named, and both named when sent invalid at once)",
);
const OUTBOUND_REQUIRED: CheckDef = CheckDef::warning(
    "errors.outbound_required_fields",
    "an outbound request without a required field (each of them, and user_config whole) is a 422 naming it (assumed)",
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
pub(crate) const CHECKS: &[CheckDef] = &[
    OUTBOUND_VALIDATION,
    OUTBOUND_REQUIRED,
    LIST_ERROR,
    DELETE_ERROR,
    MALFORMED,
    NOT_FOUND,
    UNAUTHORIZED,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "errors", 1);
const DEPLOYMENT: Makes = Makes::new(Kind::Deployment, "errors", 1);

/// What each check creates: a campaign and a deployment to tell an unknown id from a known
/// one (the deployment is deleted by the delete check).
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&DELETE_ERROR, &[DEPLOYMENT]),
    (&NOT_FOUND, &[CAMPAIGN, DEPLOYMENT]),
];

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    outbound_validation(cx, v).await;
    outbound_required(cx, v).await;

    let wrong = format!("harness-check-wrong-key-{}", cx.names.run());
    let right = cx.get(&cx.paths.deployments(), &[]).await;
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
    v.varied(&LIST_ERROR, "status", [right.status, x.status]);
    v.judge(
        &LIST_ERROR,
        refused(&x) && is_error_shape(x.body()),
        x.evidence().with("sent", "a wrong X-API-Key"),
        "a 4xx with {\"error\": {\"message\": string, \"type\": string, \"code\": string}}",
    );

    let known = known(cx).await;
    let unknown = format!("harness-check-missing-{}", cx.names.run());
    let x = cx
        .call(
            Method::DELETE,
            &cx.paths.deployment(&unknown),
            &[],
            Body::Empty,
        )
        .await;
    let mut seen = vec![x.status];
    let mut e = x.evidence();
    if let Some(id) = &known.deployment {
        let deleted = cx.delete_deployment(id).await;
        seen.insert(0, deleted.status);
        e = e.with("known_deleted", Value::Object(deleted.evidence().0));
    }
    v.varied(&DELETE_ERROR, "status", seen);
    v.judge(
        &DELETE_ERROR,
        refused(&x) && is_error_shape(x.body()),
        e,
        "a 4xx (404 in this contract) with {\"error\": {\"message\": string, \"type\": string, \"code\": string}}",
    );

    malformed(cx, v).await;

    let campaign = cx.get(&cx.paths.campaign(&unknown), &[]).await;
    let deployment = cx.get(&cx.paths.deployment(&unknown), &[]).await;
    v.varied(
        &NOT_FOUND,
        "status",
        [
            known.campaign_status,
            known.deployment_status,
            campaign.status,
            deployment.status,
        ],
    );
    let ok = [&campaign, &deployment]
        .iter()
        .all(|x| x.status == 404 && is_error_shape(x.body()));
    v.judge(
        &NOT_FOUND,
        ok,
        Exchange::all(&[&campaign, &deployment]),
        "404 with {\"error\": {\"message\", \"type\", \"code\"}}",
    );

    let with_key = cx.get(&cx.paths.campaigns(), &[]).await;
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
    v.varied(&UNAUTHORIZED, "status", [with_key.status, x.status]);
    v.judge(
        &UNAUTHORIZED,
        x.status == 401 && is_error_shape(x.body()),
        x.evidence(),
        "401 with {\"error\": {\"message\", \"type\", \"code\"}}",
    );
}

/// The two invalid fields of the outbound validation check: where each is, and its value.
const INVALID: [([&str; 2], &str); 2] = [
    (["app_config", "app_version"], "one"),
    (["user_config", "user_phone_number"], "not a phone number"),
];

/// Each invalid field alone, then both at once: every answer a 422 in the validation shape
/// naming each field sent invalid (the validation body lists every failure at once: ref).
async fn outbound_validation(cx: &Ctx, v: &mut Verdicts) {
    let mut locs = Vec::new();
    let mut calls = Vec::new();
    let mut ok = true;
    let sets: [&[usize]; 3] = [&[0], &[1], &[0, 1]];
    for set in sets {
        let mut body = fixtures::outbound(
            &cx.settings.agent,
            &cx.names.number(),
            &cx.settings.user_phone_number,
        );
        for &i in set {
            let (field, value) = INVALID[i];
            body[field[0]][field[1]] = json!(value);
        }
        let x = cx.send(Method::POST, &cx.paths.outbounds(), body).await;
        let at: Vec<Vec<Value>> = set
            .iter()
            .map(|&i| loc(&["body", INVALID[i].0[0], INVALID[i].0[1]]))
            .collect();
        ok &= is_validation_shape(x.body()) && at.iter().all(|l| names_loc(&x, l));
        locs.push(json!(at));
        calls.push(x);
    }
    v.varied(&OUTBOUND_VALIDATION, "loc", locs);
    v.judge(
        &OUTBOUND_VALIDATION,
        ok,
        Exchange::all(&calls.iter().collect::<Vec<_>>()),
        "422 {\"detail\": [{\"loc\": [...], \"msg\": string, \"type\": string}, ...]} with an entry at loc [\"body\", \"app_config\", \"app_version\"] for app_version \"one\", at [\"body\", \"user_config\", \"user_phone_number\"] for the number \"not a phone number\", and both entries when both are sent at once",
    );
}

/// The fields an outbound request must hold (assumed: the spec marks none), by their path in
/// the body; the last is `user_config` whole.
const REQUIRED: [&[&str]; 6] = [
    &["app_config", "app_id"],
    &["app_config", "app_version"],
    &["app_config", "connection_config", "connection_id"],
    &["app_config", "connection_config", "agent_phone_number"],
    &["user_config", "user_phone_number"],
    &["user_config"],
];

/// Each required field left out, one request each: a 422 naming its loc.
async fn outbound_required(cx: &Ctx, v: &mut Verdicts) {
    let mut calls = Vec::new();
    let mut ok = true;
    for path in REQUIRED {
        let mut body = fixtures::outbound(
            &cx.settings.agent,
            &cx.names.number(),
            &cx.settings.user_phone_number,
        );
        let (last, parents) = path.split_last().expect("a path");
        let mut at = &mut body;
        for p in parents {
            at = &mut at[*p];
        }
        if let Some(m) = at.as_object_mut() {
            m.remove(*last);
        }
        let x = cx.send(Method::POST, &cx.paths.outbounds(), body).await;
        let mut want = vec!["body"];
        want.extend_from_slice(path);
        ok &= is_validation_shape(x.body()) && names_loc(&x, &loc(&want));
        calls.push(x);
    }
    v.varied(
        &OUTBOUND_REQUIRED,
        "left out",
        REQUIRED.iter().map(|p| p.join(".")),
    );
    v.judge(
        &OUTBOUND_REQUIRED,
        ok,
        Exchange::all(&calls.iter().collect::<Vec<_>>()),
        "422 in the validation shape with an entry at the loc of the field left out ([\"body\", \"app_config\", \"app_id\"], ..., [\"body\", \"user_config\"])",
    );
}

/// A campaign and a deployment of this run and how GET answered each: what an unknown id
/// is told apart from.
struct Known {
    campaign_status: u16,
    deployment: Option<String>,
    deployment_status: u16,
}

async fn known(cx: &Ctx) -> Known {
    let mut k = Known {
        campaign_status: 0,
        deployment: None,
        deployment_status: 0,
    };
    let x = cx
        .create_scheduled_campaign(&cx.names.name(CAMPAIGN.label))
        .await;
    if let Some(id) = x.str_field("campaign_id") {
        k.campaign_status = cx.get(&cx.paths.campaign(id), &[]).await.status;
    }
    let x = cx
        .create_plain_deployment(&cx.names.name(DEPLOYMENT.label))
        .await;
    if let Some(id) = x.str_field("deployment_id") {
        k.deployment_status = cx.get(&cx.paths.deployment(id), &[]).await.status;
        k.deployment = Some(id.to_string());
    }
    k
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
    v.varied(
        &MALFORMED,
        "route",
        calls.iter().map(|x| x.sent.path.clone()),
    );
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
