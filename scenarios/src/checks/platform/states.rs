//! `states`: a new campaign is `scheduled` and a new deployment `active`; pause, resume and
//! cancel from the documented source states; PATCH applies; delete is final (GET and list no
//! longer show the deployment).

use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, all_days, secs};
use super::target::Body;
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
const CAMPAIGN_FINAL: CheckDef = CheckDef::warning(
    "states.campaign_cancelled_is_final",
    "pause, resume and cancel of a cancelled campaign are refused with 409 (assumed); it stays cancelled",
);
const DEPLOYMENT_ACTIVE: CheckDef = CheckDef::error(
    "states.deployment_created_active",
    "a new deployment is active (in the create answer and on GET)",
);
const DEPLOYMENT_PAUSE_RESUME: CheckDef = CheckDef::error(
    "states.deployment_pause_resume",
    "{action: pause} makes a deployment paused, {action: resume} active again",
);
const DEPLOYMENT_REPEAT: CheckDef = CheckDef::warning(
    "states.deployment_same_status_409",
    "pausing a paused deployment is refused with 409 (assumed)",
);
const DEPLOYMENT_PATCH: CheckDef = CheckDef::error(
    "states.deployment_patch_applies",
    "PATCH of app_version and inbound_config changes them (answer and GET)",
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
pub const CHECKS: &[CheckDef] = &[
    CAMPAIGN_SCHEDULED,
    CAMPAIGN_PAUSE_RESUME,
    CAMPAIGN_CANCEL,
    CAMPAIGN_FINAL,
    DEPLOYMENT_ACTIVE,
    DEPLOYMENT_PAUSE_RESUME,
    DEPLOYMENT_REPEAT,
    DEPLOYMENT_PATCH,
    DELETE_FINAL,
    DELETE_PAUSED,
];

/// Runs the group.
pub async fn run(cx: &Ctx, v: &mut Verdicts) {
    campaigns(cx, v).await;
    deployments(cx, v).await;
}

/// The `status` field of an answer.
pub(super) fn status(x: &Exchange) -> Option<&str> {
    x.str_field("status")
}

async fn new_campaign(cx: &Ctx, label: &str) -> Exchange {
    let start = match cx.now().await {
        Ok(n) => n.at + secs(3600),
        Err(x) => return x,
    };
    cx.create_campaign(fixtures::campaign(
        &cx.settings.agent,
        &cx.names.name(label),
        &cx.names.number(),
        start,
        start + secs(86_400),
    ))
    .await
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

async fn campaigns(cx: &Ctx, v: &mut Verdicts) {
    let created = new_campaign(cx, "states-campaign").await;
    let Some(id) = created.str_field("campaign_id").map(str::to_string) else {
        return v.blocked_only(
            &[
                &CAMPAIGN_SCHEDULED,
                &CAMPAIGN_PAUSE_RESUME,
                &CAMPAIGN_CANCEL,
                &CAMPAIGN_FINAL,
            ],
            "creating a campaign",
            created.evidence(),
        );
    };
    let got = cx.get(&cx.paths.campaign(&id), &[]).await;
    v.judge(
        &CAMPAIGN_SCHEDULED,
        status(&created) == Some("scheduled") && status(&got) == Some("scheduled"),
        Exchange::all(&[&created, &got]),
        "\"status\": \"scheduled\" in the create answer and on GET",
    );

    let paused = campaign_action(cx, &id, "pause").await;
    let paused_get = cx.get(&cx.paths.campaign(&id), &[]).await;
    let resumed = campaign_action(cx, &id, "resume").await;
    let resumed_get = cx.get(&cx.paths.campaign(&id), &[]).await;
    let back = |x: &Exchange| matches!(status(x), Some("scheduled" | "active"));
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
    let second = new_campaign(cx, "states-campaign-paused").await;
    let mut calls = vec![cancelled.clone(), second.clone()];
    let mut ok = status(&cancelled) == Some("cancelled");
    match second.str_field("campaign_id") {
        Some(id2) => {
            let p = campaign_action(cx, id2, "pause").await;
            let c = campaign_action(cx, id2, "cancel").await;
            let g = cx.get(&cx.paths.campaign(id2), &[]).await;
            ok &= status(&p) == Some("paused")
                && status(&c) == Some("cancelled")
                && status(&g) == Some("cancelled");
            calls.extend([p, c, g]);
        }
        None => ok = false,
    }
    let refs: Vec<&Exchange> = calls.iter().collect();
    v.judge(
        &CAMPAIGN_CANCEL,
        ok,
        Exchange::all(&refs),
        "\"status\": \"cancelled\" after {\"action\": \"cancel\"} from scheduled and from paused",
    );

    let mut calls = Vec::new();
    for action in ["pause", "resume", "cancel"] {
        calls.push(campaign_action(cx, &id, action).await);
    }
    let got = cx.get(&cx.paths.campaign(&id), &[]).await;
    let ok = calls.iter().all(|x| x.status == 409) && status(&got) == Some("cancelled");
    calls.push(got);
    let refs: Vec<&Exchange> = calls.iter().collect();
    v.judge(
        &CAMPAIGN_FINAL,
        ok,
        Exchange::all(&refs),
        "409 for each action and \"status\": \"cancelled\" on GET",
    );
}

async fn new_deployment(cx: &Ctx, label: &str) -> Exchange {
    cx.create_deployment(fixtures::deployment(
        &cx.settings.agent,
        &cx.names.name(label),
        &[cx.names.number()],
    ))
    .await
}

async fn deployment_action(cx: &Ctx, id: &str, action: &str) -> Exchange {
    cx.send(
        Method::PUT,
        &cx.paths.deployment_status(id),
        json!({"action": action}),
    )
    .await
}

async fn deployments(cx: &Ctx, v: &mut Verdicts) {
    let created = new_deployment(cx, "states-deployment").await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        return v.blocked_only(
            &[
                &DEPLOYMENT_ACTIVE,
                &DEPLOYMENT_PAUSE_RESUME,
                &DEPLOYMENT_REPEAT,
                &DEPLOYMENT_PATCH,
                &DELETE_FINAL,
                &DELETE_PAUSED,
            ],
            "creating a deployment",
            created.evidence(),
        );
    };
    let got = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.judge(
        &DEPLOYMENT_ACTIVE,
        status(&created) == Some("active") && status(&got) == Some("active"),
        Exchange::all(&[&created, &got]),
        "\"status\": \"active\" in the create answer and on GET",
    );

    let paused = deployment_action(cx, &id, "pause").await;
    let again = deployment_action(cx, &id, "pause").await;
    let resumed = deployment_action(cx, &id, "resume").await;
    let got = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.judge(
        &DEPLOYMENT_PAUSE_RESUME,
        status(&paused) == Some("paused")
            && status(&resumed) == Some("active")
            && status(&got) == Some("active"),
        Exchange::all(&[&paused, &resumed, &got]),
        "paused after {\"action\": \"pause\"}, active after {\"action\": \"resume\"}",
    );
    v.judge(
        &DEPLOYMENT_REPEAT,
        again.status == 409,
        again.evidence(),
        "409 for {\"action\": \"pause\"} on a paused deployment",
    );

    patch(cx, v, &id).await;
    delete_final(cx, v, &id).await;

    let created = new_deployment(cx, "states-delete-paused").await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        return v.blocked_only(
            &[&DELETE_PAUSED],
            "creating a deployment",
            created.evidence(),
        );
    };
    let paused = deployment_action(cx, &id, "pause").await;
    let deleted = cx.delete_deployment(&id).await;
    let got = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.judge(
        &DELETE_PAUSED,
        status(&paused) == Some("paused") && deleted.is_success() && is_4xx(&got),
        Exchange::all(&[&paused, &deleted, &got]),
        "pause 200, DELETE 2xx, then GET a 4xx (404 in this contract)",
    );
}

fn is_4xx(x: &Exchange) -> bool {
    (400..500).contains(&x.status)
}

async fn patch(cx: &Ctx, v: &mut Verdicts, id: &str) {
    let version = cx.settings.agent.app_version + 1;
    let schedule = json!({
        "start_time": "08:00",
        "end_time": "18:30",
        "allowed_days": &all_days()[..5],
        "timezone": "Europe/Paris"
    });
    let patched = cx
        .send(
            Method::PATCH,
            &cx.paths.deployment(id),
            json!({"app_version": version, "inbound_config": schedule}),
        )
        .await;
    let got = cx.get(&cx.paths.deployment(id), &[]).await;
    let applied = |x: &Exchange| {
        x.status == 200
            && x.body()["app_version"] == json!(version)
            && same_schedule(&x.body()["inbound_config"], &schedule)
    };
    v.judge(
        &DEPLOYMENT_PATCH,
        applied(&patched) && applied(&got),
        Exchange::all(&[&patched, &got]),
        format!("app_version {version} and inbound_config {schedule} in the answer and on GET"),
    );
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

async fn delete_final(cx: &Ctx, v: &mut Verdicts, id: &str) {
    let name = cx.names.name("states-deployment");
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
}
