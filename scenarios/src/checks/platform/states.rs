//! `states`: a new campaign is `scheduled` and a new deployment `active`; pause, resume and
//! cancel from the documented source states; a cancelled campaign stays cancelled; PATCH
//! applies where its states allow it and never changes a campaign's `start_timestamp` or a
//! deployment's `app_id`; delete is final (GET and list no longer show the deployment).

use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{Kind, Makes, all_days, secs, ts};
use super::patch_kept::unnamed_changes;
use super::target::sim_clock_advance;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

const CAMPAIGN_SCHEDULED: CheckDef = CheckDef::error(
    "states.campaign_created_scheduled",
    "a new campaign is scheduled (in the create answer and on GET)",
);
const CAMPAIGN_PAUSE_RESUME: CheckDef = CheckDef::error(
    "states.campaign_pause_resume",
    "pause makes a campaign paused; resume makes it scheduled again before its start (or active)",
);
const CAMPAIGN_CANCEL: CheckDef = CheckDef::error(
    "states.campaign_cancel",
    "cancel makes a scheduled and a paused campaign cancelled",
);
const CAMPAIGN_FINAL: CheckDef = CheckDef::error(
    "states.campaign_cancelled_is_final",
    "pause, resume and cancel of a cancelled campaign are refused (4xx); it stays cancelled",
);
const CAMPAIGN_REFUSED_409: CheckDef = CheckDef::warning(
    "states.campaign_refusals_are_409",
    "the refusals of actions on a cancelled campaign are 409 in the error shape (assumed)",
);
const CAMPAIGN_PATCH_STATES: CheckDef = CheckDef::error(
    "states.campaign_patch_states",
    "PATCH applies while a campaign is scheduled and while paused, every field it does not name kept; a cancelled one refuses it (4xx) unchanged",
);
const CAMPAIGN_PATCH_MERGES: CheckDef = CheckDef::warning(
    "states.campaign_patch_merges",
    "a PATCH naming one member of app_config.retry_config keeps the members it leaves out (answer and GET; merge assumed)",
);
const REFUSAL_SHAPE: CheckDef = CheckDef::error(
    "states.refusals_in_error_shape",
    "every refusal of this group but a 422 (actions on a cancelled campaign, a PATCH of a cancelled one, a second pause, a deleted deployment read or deleted again) has the body {\"error\": {\"message\", \"type\", \"code\"}}, all strings",
);
const CAMPAIGN_START_FIXED: CheckDef = CheckDef::error(
    "states.campaign_start_fixed",
    "PATCH of another start_timestamp is refused (4xx) and the start stays as created",
);
const DEPLOYMENT_ACTIVE: CheckDef = CheckDef::error(
    "states.deployment_created_active",
    "a new deployment is active (in the create answer and on GET)",
);
const DEPLOYMENT_PAUSE_RESUME: CheckDef = CheckDef::error(
    "states.deployment_pause_resume",
    "{action: pause} makes a deployment paused (and a second pause leaves it paused), {action: resume} active again",
);
const DEPLOYMENT_REPEAT: CheckDef = CheckDef::warning(
    "states.deployment_same_status_409",
    "pausing a paused deployment is refused with 409 (assumed)",
);
const DEPLOYMENT_PATCH: CheckDef = CheckDef::error(
    "states.deployment_patch_applies",
    "PATCH of app_version and inbound_config changes them (answer and GET), keeps every field it does not name, and moves updated_at on (with --sim, to the clock's time a second later)",
);
const DEPLOYMENT_APP_ID_FIXED: CheckDef = CheckDef::error(
    "states.deployment_app_id_fixed",
    "PATCH of another app_id is refused (4xx) and the deployment keeps its app_id",
);
const DELETE_FINAL: CheckDef = CheckDef::error(
    "states.deployment_delete_final",
    "a deleted deployment is gone: GET is a 4xx, the list no longer shows it, a second delete is a 4xx",
);
const DELETE_PAUSED: CheckDef = CheckDef::error(
    "states.deployment_delete_paused",
    "a paused deployment can be deleted too; GET is then a 4xx",
);

/// The checks of this group.
pub(crate) const CHECKS: &[CheckDef] = &[
    CAMPAIGN_SCHEDULED,
    CAMPAIGN_PAUSE_RESUME,
    CAMPAIGN_CANCEL,
    CAMPAIGN_FINAL,
    CAMPAIGN_REFUSED_409,
    CAMPAIGN_PATCH_STATES,
    CAMPAIGN_PATCH_MERGES,
    CAMPAIGN_START_FIXED,
    DEPLOYMENT_ACTIVE,
    DEPLOYMENT_PAUSE_RESUME,
    DEPLOYMENT_REPEAT,
    DEPLOYMENT_PATCH,
    DEPLOYMENT_APP_ID_FIXED,
    DELETE_FINAL,
    DELETE_PAUSED,
    REFUSAL_SHAPE,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "states-campaign", 1);
const PAUSED_CAMPAIGN: Makes = Makes::new(Kind::Campaign, "states-campaign-paused", 1);
const DEPLOYMENT: Makes = Makes::new(Kind::Deployment, "states-deployment", 1);
const DELETED_PAUSED: Makes = Makes::new(Kind::Deployment, "states-delete-paused", 1);

/// What each check creates: one campaign taken through its states (a second one cancelled
/// from paused), one deployment taken through its states and deleted, one deleted paused.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&CAMPAIGN_SCHEDULED, &[CAMPAIGN]),
    (&CAMPAIGN_PAUSE_RESUME, &[CAMPAIGN]),
    (&CAMPAIGN_CANCEL, &[CAMPAIGN, PAUSED_CAMPAIGN]),
    (&CAMPAIGN_FINAL, &[CAMPAIGN]),
    (&CAMPAIGN_REFUSED_409, &[CAMPAIGN]),
    (&CAMPAIGN_PATCH_STATES, &[CAMPAIGN]),
    (&CAMPAIGN_PATCH_MERGES, &[CAMPAIGN]),
    (&CAMPAIGN_START_FIXED, &[CAMPAIGN]),
    (&DEPLOYMENT_ACTIVE, &[DEPLOYMENT]),
    (&DEPLOYMENT_PAUSE_RESUME, &[DEPLOYMENT]),
    (&DEPLOYMENT_REPEAT, &[DEPLOYMENT]),
    (&DEPLOYMENT_PATCH, &[DEPLOYMENT]),
    (&DEPLOYMENT_APP_ID_FIXED, &[DEPLOYMENT]),
    (&DELETE_FINAL, &[DEPLOYMENT]),
    (&DELETE_PAUSED, &[DELETED_PAUSED]),
    (&REFUSAL_SHAPE, &[CAMPAIGN, DEPLOYMENT, DELETED_PAUSED]),
];

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let mut refused = campaigns(cx, v).await;
    refused.extend(deployments(cx, v).await);
    refusal_shape(v, &refused);
}

/// The `status` field of an answer.
pub(super) fn status(x: &Exchange) -> Option<&str> {
    x.str_field("status")
}

/// The `status` field of an answer as a value (null when there is none), for
/// [`Verdicts::varied`].
pub(super) fn status_value(x: &Exchange) -> Value {
    x.body()["status"].clone()
}

/// A 4xx answer.
pub(super) fn is_4xx(x: &Exchange) -> bool {
    (400..500).contains(&x.status)
}

async fn new_campaign(cx: &Ctx, label: &str) -> Exchange {
    cx.create_scheduled_campaign(&cx.names.name(label)).await
}

/// `PUT .../campaigns/{id}/status` with `{"action": action}`.
pub(super) async fn campaign_action(cx: &Ctx, id: &str, action: &str) -> Exchange {
    cx.send(
        Method::PUT,
        &cx.paths.campaign_status(id),
        json!({"action": action}),
    )
    .await
}

/// `PATCH .../campaigns/{id}` with a new description `text`.
pub(super) async fn describe(cx: &Ctx, id: &str, text: &str) -> Exchange {
    cx.send(
        Method::PATCH,
        &cx.paths.campaign(id),
        json!({"description": text}),
    )
    .await
}

/// Runs the campaign checks; answers the refusals they provoked.
async fn campaigns(cx: &Ctx, v: &mut Verdicts) -> Vec<Exchange> {
    let created = new_campaign(cx, CAMPAIGN.label).await;
    let Some(id) = created.str_field("campaign_id").map(str::to_string) else {
        v.blocked_only(
            &[
                &CAMPAIGN_SCHEDULED,
                &CAMPAIGN_PAUSE_RESUME,
                &CAMPAIGN_CANCEL,
                &CAMPAIGN_FINAL,
                &CAMPAIGN_REFUSED_409,
                &CAMPAIGN_PATCH_STATES,
                &CAMPAIGN_PATCH_MERGES,
                &CAMPAIGN_START_FIXED,
            ],
            "creating a campaign",
            created.evidence(),
        );
        return Vec::new();
    };
    let got = cx.get(&cx.paths.campaign(&id), &[]).await;
    let mut seen = vec![status_value(&created), status_value(&got)];

    start_fixed(cx, v, &id, &got).await;
    let patched_scheduled = describe(cx, &id, "patched while scheduled").await;

    let paused = campaign_action(cx, &id, "pause").await;
    let paused_get = cx.get(&cx.paths.campaign(&id), &[]).await;
    let patched_paused = describe(cx, &id, "patched while paused").await;
    // A PATCH that names one field of the retry policy keeps the others.
    let retry = json!({"app_config": {"retry_config": {"max_retries": 2}}});
    let merged = cx
        .send(Method::PATCH, &cx.paths.campaign(&id), retry.clone())
        .await;
    let merged_get = cx.get(&cx.paths.campaign(&id), &[]).await;
    let mut unnamed = Vec::new();
    let mut members = Vec::new();
    // Each answer and read against a read before it (a read may leave out what an answer
    // shows), with what was PATCHed in between.
    let both = json!({"description": "patched while paused", "app_config": retry["app_config"]});
    for (before, after, patch) in [
        (
            &got,
            &patched_scheduled,
            &json!({"description": "patched while scheduled"}),
        ),
        (
            &paused_get,
            &patched_paused,
            &json!({"description": "patched while paused"}),
        ),
        (&paused_get, &merged, &both),
        (&paused_get, &merged_get, &both),
    ] {
        let u = unnamed_changes(before.body(), after.body(), patch);
        unnamed.extend(u.fields);
        members.extend(u.members);
    }
    let retries = |x: &Exchange| x.body()["app_config"]["retry_config"]["max_retries"].clone();
    v.varied(
        &CAMPAIGN_PATCH_MERGES,
        "max_retries",
        [retries(&paused_get), retries(&merged_get)],
    );
    v.judge(
        &CAMPAIGN_PATCH_MERGES,
        merged.status == 200 && members.is_empty(),
        Exchange::all(&[&paused_get, &merged, &merged_get])
            .with("changed_without_being_named", members),
        "200, and app_config.retry_config's retry_on and threshold_seconds as before the PATCH of max_retries, in the answer and on GET",
    );
    let resumed = campaign_action(cx, &id, "resume").await;
    let resumed_get = cx.get(&cx.paths.campaign(&id), &[]).await;
    seen.push(status_value(&paused_get));
    v.varied(&CAMPAIGN_SCHEDULED, "status", seen);
    v.judge(
        &CAMPAIGN_SCHEDULED,
        status(&created) == Some("scheduled") && status(&got) == Some("scheduled"),
        Exchange::all(&[&created, &got]),
        "\"status\": \"scheduled\" in the create answer and on GET",
    );
    let back = |x: &Exchange| matches!(status(x), Some("scheduled" | "active"));
    v.varied(
        &CAMPAIGN_PAUSE_RESUME,
        "status",
        [status_value(&paused_get), status_value(&resumed_get)],
    );
    v.judge(
        &CAMPAIGN_PAUSE_RESUME,
        status(&paused) == Some("paused")
            && status(&paused_get) == Some("paused")
            && back(&resumed)
            && back(&resumed_get),
        Exchange::all(&[&paused, &paused_get, &resumed, &resumed_get]),
        "paused after {\"action\": \"pause\"}; scheduled (before the start) or active after {\"action\": \"resume\"}",
    );

    // Cancel from scheduled (this one) and from paused (a second one).
    let cancelled = campaign_action(cx, &id, "cancel").await;
    let second = new_campaign(cx, PAUSED_CAMPAIGN.label).await;
    let mut calls = vec![cancelled.clone(), second.clone()];
    let mut ok = status(&cancelled) == Some("cancelled");
    let mut seen = vec![status_value(&resumed_get), status_value(&cancelled)];
    match second.str_field("campaign_id") {
        Some(id2) => {
            let p = campaign_action(cx, id2, "pause").await;
            let c = campaign_action(cx, id2, "cancel").await;
            let g = cx.get(&cx.paths.campaign(id2), &[]).await;
            ok &= status(&p) == Some("paused")
                && status(&c) == Some("cancelled")
                && status(&g) == Some("cancelled");
            seen.push(status_value(&p));
            calls.extend([p, c, g]);
        }
        None => ok = false,
    }
    v.varied(&CAMPAIGN_CANCEL, "status", seen);
    let refs: Vec<&Exchange> = calls.iter().collect();
    v.judge(
        &CAMPAIGN_CANCEL,
        ok,
        Exchange::all(&refs),
        "\"status\": \"cancelled\" after {\"action\": \"cancel\"} from scheduled and from paused",
    );

    let patched_cancelled = describe(cx, &id, "patched while cancelled").await;
    let mut calls = Vec::new();
    for action in ["pause", "resume", "cancel"] {
        calls.push(campaign_action(cx, &id, action).await);
    }
    let after = cx.get(&cx.paths.campaign(&id), &[]).await;
    v.varied(
        &CAMPAIGN_FINAL,
        "status",
        [status_value(&resumed_get), status_value(&after)],
    );
    v.judge(
        &CAMPAIGN_FINAL,
        calls.iter().all(is_4xx) && status(&after) == Some("cancelled"),
        Exchange::all(&calls.iter().chain([&after]).collect::<Vec<_>>()),
        "a 4xx for each action and \"status\": \"cancelled\" on GET",
    );
    v.varied(
        &CAMPAIGN_REFUSED_409,
        "status",
        [resumed.status]
            .into_iter()
            .chain(calls.iter().map(|x| x.status)),
    );
    v.judge(
        &CAMPAIGN_REFUSED_409,
        calls
            .iter()
            .all(|x| x.status == 409 && super::context::is_error_shape(x.body())),
        Exchange::all(&calls.iter().collect::<Vec<_>>()),
        "409 with {\"error\": {\"message\", \"type\", \"code\"}} for each action on the cancelled campaign",
    );

    let text = |x: &Exchange| x.body()["description"].clone();
    v.varied(
        &CAMPAIGN_PATCH_STATES,
        "status",
        [
            status_value(&got),
            status_value(&paused_get),
            status_value(&after),
        ],
    );
    v.varied(
        &CAMPAIGN_PATCH_STATES,
        "description",
        [text(&got), text(&patched_scheduled), text(&patched_paused)],
    );
    v.judge(
        &CAMPAIGN_PATCH_STATES,
        text(&patched_scheduled) == json!("patched while scheduled")
            && text(&patched_paused) == json!("patched while paused")
            && is_4xx(&patched_cancelled)
            && text(&after) == json!("patched while paused")
            && unnamed.is_empty(),
        Exchange::all(&[
            &patched_scheduled,
            &patched_paused,
            &patched_cancelled,
            &after,
        ])
        .with("changed_without_being_named", unnamed),
        "200 with the new description while scheduled and while paused, every other field (but updated_at, updated_by) as read before; a 4xx while cancelled (409 in this contract), the description then still the one set while paused",
    );
    // A success beside the refusals: the shape looked at tells them apart.
    calls.extend([patched_cancelled, resumed]);
    calls
}

/// Every refusal in `xs` but a 422 (which has the validation shape) in the error shape.
fn refusal_shape(v: &mut Verdicts, xs: &[Exchange]) {
    let refusals: Vec<&Exchange> = xs.iter().filter(|x| is_4xx(x) && x.status != 422).collect();
    if refusals.is_empty() {
        return;
    }
    v.varied(
        &REFUSAL_SHAPE,
        "error shape",
        xs.iter()
            .map(|x| json!(super::context::is_error_shape(x.body()))),
    );
    v.judge(
        &REFUSAL_SHAPE,
        refusals
            .iter()
            .all(|x| super::context::is_error_shape(x.body())),
        Exchange::all(&refusals),
        "{\"error\": {\"message\", \"type\", \"code\"}}, all strings, in each refusal",
    );
}

/// PATCH of a start an hour later than the campaign's: refused, and the start unchanged.
async fn start_fixed(cx: &Ctx, v: &mut Verdicts, id: &str, got: &Exchange) {
    let start = got
        .str_field("start_timestamp")
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&chrono::Utc));
    let Some(start) = start else {
        return v.blocked_only(
            &[&CAMPAIGN_START_FIXED],
            "reading the campaign's start_timestamp",
            got.evidence(),
        );
    };
    let moved = ts(start + secs(3600));
    let x = cx
        .send(
            Method::PATCH,
            &cx.paths.campaign(id),
            json!({"start_timestamp": moved}),
        )
        .await;
    let after = cx.get(&cx.paths.campaign(id), &[]).await;
    let kept = |x: &Exchange| {
        x.str_field("start_timestamp")
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .is_some_and(|t| t == start)
    };
    v.varied(&CAMPAIGN_START_FIXED, "start_timestamp", [ts(start), moved]);
    v.judge(
        &CAMPAIGN_START_FIXED,
        is_4xx(&x) && kept(&after),
        Exchange::all(&[&x, &after]).with("start_timestamp", ts(start)),
        format!(
            "a 4xx (422 at [\"body\", \"start_timestamp\"] in this contract), and start_timestamp still {} on GET",
            ts(start)
        ),
    );
}

async fn new_deployment(cx: &Ctx, label: &str) -> Exchange {
    cx.create_plain_deployment(&cx.names.name(label)).await
}

async fn deployment_action(cx: &Ctx, id: &str, action: &str) -> Exchange {
    cx.send(
        Method::PUT,
        &cx.paths.deployment_status(id),
        json!({"action": action}),
    )
    .await
}

/// Runs the deployment checks; answers the refusals they provoked.
async fn deployments(cx: &Ctx, v: &mut Verdicts) -> Vec<Exchange> {
    let created = new_deployment(cx, DEPLOYMENT.label).await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        v.blocked_only(
            &[
                &DEPLOYMENT_ACTIVE,
                &DEPLOYMENT_PAUSE_RESUME,
                &DEPLOYMENT_REPEAT,
                &DEPLOYMENT_PATCH,
                &DEPLOYMENT_APP_ID_FIXED,
                &DELETE_FINAL,
                &DELETE_PAUSED,
            ],
            "creating a deployment",
            created.evidence(),
        );
        return Vec::new();
    };
    let got = cx.get(&cx.paths.deployment(&id), &[]).await;

    let paused = deployment_action(cx, &id, "pause").await;
    let again = deployment_action(cx, &id, "pause").await;
    let still = cx.get(&cx.paths.deployment(&id), &[]).await;
    let resumed = deployment_action(cx, &id, "resume").await;
    let after = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.varied(
        &DEPLOYMENT_ACTIVE,
        "status",
        [status_value(&got), status_value(&still)],
    );
    v.judge(
        &DEPLOYMENT_ACTIVE,
        status(&created) == Some("active") && status(&got) == Some("active"),
        Exchange::all(&[&created, &got]),
        "\"status\": \"active\" in the create answer and on GET",
    );
    v.varied(
        &DEPLOYMENT_PAUSE_RESUME,
        "status",
        [status_value(&still), status_value(&after)],
    );
    v.judge(
        &DEPLOYMENT_PAUSE_RESUME,
        status(&paused) == Some("paused")
            && status(&still) == Some("paused")
            && status(&resumed) == Some("active")
            && status(&after) == Some("active"),
        Exchange::all(&[&paused, &again, &still, &resumed, &after]),
        "paused after {\"action\": \"pause\"} and still paused on GET after a second one; active after {\"action\": \"resume\"}",
    );
    v.varied(&DEPLOYMENT_REPEAT, "status", [paused.status, again.status]);
    v.judge(
        &DEPLOYMENT_REPEAT,
        again.status == 409,
        again.evidence(),
        "409 for {\"action\": \"pause\"} on a paused deployment",
    );

    patch(cx, v, &id, &after).await;
    let mut refused = vec![again];
    refused.push(app_id_fixed(cx, v, &id).await);
    refused.extend(delete_final(cx, v, &id, &got).await);

    let created = new_deployment(cx, DELETED_PAUSED.label).await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        v.blocked_only(
            &[&DELETE_PAUSED],
            "creating a deployment",
            created.evidence(),
        );
        return refused;
    };
    let paused = deployment_action(cx, &id, "pause").await;
    let before = cx.get(&cx.paths.deployment(&id), &[]).await;
    let deleted = cx.delete_deployment(&id).await;
    let gone = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.varied(&DELETE_PAUSED, "GET status", [before.status, gone.status]);
    v.judge(
        &DELETE_PAUSED,
        status(&paused) == Some("paused") && deleted.is_success() && is_4xx(&gone),
        Exchange::all(&[&paused, &deleted, &gone]),
        "pause 200, DELETE 2xx, then GET a 4xx (404 in this contract)",
    );
    refused.push(gone);
    refused
}

async fn patch(cx: &Ctx, v: &mut Verdicts, id: &str, before: &Exchange) {
    let version = cx.settings.agent.app_version + 1;
    let schedule = json!({
        "start_time": "08:00",
        "end_time": "18:30",
        "allowed_days": &all_days()[..5],
        "timezone": "Europe/Paris"
    });
    // With --sim the clock moves a second first, so that updated_at must move with it.
    if cx.settings.sim {
        cx.send(Method::POST, &sim_clock_advance(), json!({"seconds": 1}))
            .await;
    }
    let body = json!({"app_version": version, "inbound_config": schedule});
    let patched = cx
        .send(Method::PATCH, &cx.paths.deployment(id), body.clone())
        .await;
    let got = cx.get(&cx.paths.deployment(id), &[]).await;
    let instant = |x: &Exchange| {
        x.str_field("updated_at")
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
    };
    let moved = |x: &Exchange| match (instant(before), instant(x)) {
        (Some(b), Some(a)) if cx.settings.sim => a > b,
        (Some(b), Some(a)) => a >= b,
        _ => false,
    };
    let unnamed: Vec<Value> = [&patched, &got]
        .iter()
        .flat_map(|x| unnamed_changes(before.body(), x.body(), &body).fields)
        .collect();
    let applied = |x: &Exchange| {
        x.status == 200
            && x.body()["app_version"] == json!(version)
            && same_schedule(&x.body()["inbound_config"], &schedule)
            && moved(x)
    };
    v.varied(
        &DEPLOYMENT_PATCH,
        "app_version",
        [
            before.body()["app_version"].clone(),
            got.body()["app_version"].clone(),
        ],
    );
    v.varied(
        &DEPLOYMENT_PATCH,
        "inbound_config",
        [
            before.body()["inbound_config"].clone(),
            got.body()["inbound_config"].clone(),
        ],
    );
    v.judge(
        &DEPLOYMENT_PATCH,
        applied(&patched) && applied(&got) && unnamed.is_empty(),
        Exchange::all(&[before, &patched, &got]).with("changed_without_being_named", unnamed),
        format!(
            "app_version {version} and inbound_config {schedule} in the answer and on GET, every other field as read before (the first exchange), and updated_at {} the one read before",
            if cx.settings.sim { "later than" } else { "not earlier than" }
        ),
    );
}

/// PATCH of another app_id: refused, and the app_id unchanged.
/// Answers the refusal.
async fn app_id_fixed(cx: &Ctx, v: &mut Verdicts, id: &str) -> Exchange {
    let mine = cx.settings.agent.app_id.clone();
    let other = format!("{mine}-other");
    let x = cx
        .send(
            Method::PATCH,
            &cx.paths.deployment(id),
            json!({"app_id": other}),
        )
        .await;
    let got = cx.get(&cx.paths.deployment(id), &[]).await;
    v.varied(
        &DEPLOYMENT_APP_ID_FIXED,
        "app_id",
        [mine.as_str(), other.as_str()],
    );
    v.judge(
        &DEPLOYMENT_APP_ID_FIXED,
        is_4xx(&x) && got.str_field("app_id") == Some(mine.as_str()),
        Exchange::all(&[&x, &got]),
        format!(
            "a 4xx (422 at [\"body\", \"app_id\"] in this contract) for app_id '{other}', and app_id still '{mine}' on GET"
        ),
    );
    x
}

/// The same schedule: equal fields, days in any order.
fn same_schedule(got: &Value, want: &Value) -> bool {
    let days = |v: &Value| {
        let mut d: Vec<String> = v["allowed_days"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        d.sort();
        d
    };
    ["start_time", "end_time", "timezone"]
        .iter()
        .all(|k| got[k] == want[k])
        && days(got) == days(want)
}

/// Answers the refusals (the read and the second delete of the deleted deployment).
async fn delete_final(cx: &Ctx, v: &mut Verdicts, id: &str, before: &Exchange) -> [Exchange; 2] {
    let name = cx.names.name(DEPLOYMENT.label);
    let deleted = cx.delete_deployment(id).await;
    let got = cx.get(&cx.paths.deployment(id), &[]).await;
    let listed = cx
        .get(
            &cx.paths.deployments(),
            &[("search", name.clone()), ("limit", "100".into())],
        )
        .await;
    let still_listed = listed.body()["items"].as_array().is_some_and(|items| {
        items
            .iter()
            .any(|d| d["deployment_id"].as_str() == Some(id))
    });
    let again = cx
        .call(Method::DELETE, &cx.paths.deployment(id), &[], Body::Empty)
        .await;
    v.varied(&DELETE_FINAL, "GET status", [before.status, got.status]);
    v.judge(
        &DELETE_FINAL,
        deleted.is_success()
            && is_4xx(&got)
            && listed.status == 200
            && !still_listed
            && is_4xx(&again),
        Exchange::all(&[&deleted, &got, &listed, &again])
            .with("still_listed", still_listed)
            .with("deployment_id", id),
        "DELETE 2xx; then GET a 4xx, the list (search by its name) without it, DELETE again a 4xx",
    );
    [got, again]
}
