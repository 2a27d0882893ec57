//! `states`: a new campaign is `scheduled` and a new deployment `active`; pause, resume and
//! cancel from the documented source states; a cancelled campaign stays cancelled; PATCH
//! applies where its states allow it and never changes a campaign's `start_timestamp` or a
//! deployment's `app_id`; delete is final (GET and list no longer show the deployment).

use reqwest::Method;
use serde_json::json;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{Kind, Makes, secs, ts};
use super::patch_kept::unnamed_changes;
use super::states_deployments::{
    DELETE_FINAL, DELETE_PAUSED, DELETED_PAUSED, DEPLOYMENT, DEPLOYMENT_ACTIVE,
    DEPLOYMENT_APP_ID_FIXED, DEPLOYMENT_PATCH, DEPLOYMENT_PATCH_NULL, DEPLOYMENT_PAUSE_RESUME,
    DEPLOYMENT_REPEAT, deployments,
};
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
    "PATCH of another start_timestamp (beside a valid description) is refused (4xx) and changes nothing: the start stays as created, the description is not applied",
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
    DEPLOYMENT_PATCH_NULL,
    DEPLOYMENT_APP_ID_FIXED,
    DELETE_FINAL,
    DELETE_PAUSED,
    REFUSAL_SHAPE,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "states-campaign", 1);
const PAUSED_CAMPAIGN: Makes = Makes::new(Kind::Campaign, "states-campaign-paused", 1);

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
    (&DEPLOYMENT_PATCH_NULL, &[DEPLOYMENT]),
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

pub(super) use super::exchange::{is_4xx, status, status_value};
pub(super) use super::patch_kept::refused_changed;

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
    // Beside the refused field a valid one: a refusal changes nothing, not even that.
    let before = cx.get(&cx.paths.campaign(id), &[]).await;
    let x = cx
        .send(
            Method::PATCH,
            &cx.paths.campaign(id),
            json!({"start_timestamp": moved, "description": "refused with the start: never applied"}),
        )
        .await;
    let after = cx.get(&cx.paths.campaign(id), &[]).await;
    let kept = |x: &Exchange| {
        x.str_field("start_timestamp")
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .is_some_and(|t| t == start)
    };
    let changed = refused_changed(&before, &after);
    v.varied(&CAMPAIGN_START_FIXED, "start_timestamp", [ts(start), moved]);
    v.judge(
        &CAMPAIGN_START_FIXED,
        is_4xx(&x) && kept(&after) && changed.is_empty(),
        Exchange::all(&[&before, &x, &after])
            .with("start_timestamp", ts(start))
            .with("changed_by_the_refusal", changed),
        format!(
            "a 4xx (422 at [\"body\", \"start_timestamp\"] in this contract) for a PATCH of start_timestamp and description, and the campaign unchanged on GET: start_timestamp still {}, the description not applied either",
            ts(start)
        ),
    );
}
