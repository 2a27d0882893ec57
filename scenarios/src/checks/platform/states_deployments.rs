//! Part of the `states` group ([`super::states`]): a new deployment is `active`; pause and
//! resume (a second pause refused with 409, assumed); PATCH applies, keeps every field it does
//! not name and never changes `app_id`; delete is final, from `active` and from `paused`.

use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Body;
use super::exchange::Exchange;
use super::exchange::{is_4xx, status, status_value};
use super::fixtures::{Kind, Makes, all_days};
use super::patch_kept::refused_changed;
use super::patch_kept::unnamed_changes;
use super::target::sim_clock_advance;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

pub(super) const DEPLOYMENT_ACTIVE: CheckDef = CheckDef::error(
    "states.deployment_created_active",
    "a new deployment is active (in the create answer and on GET)",
);
pub(super) const DEPLOYMENT_PAUSE_RESUME: CheckDef = CheckDef::error(
    "states.deployment_pause_resume",
    "{action: pause} makes a deployment paused (and a second pause leaves it paused), {action: resume} active again",
);
pub(super) const DEPLOYMENT_REPEAT: CheckDef = CheckDef::warning(
    "states.deployment_same_status_409",
    "pausing a paused deployment is refused with 409 (assumed)",
);
pub(super) const DEPLOYMENT_PATCH: CheckDef = CheckDef::error(
    "states.deployment_patch_applies",
    "PATCH of app_version and inbound_config changes them (answer and GET), keeps every field it does not name, and moves updated_at on (with --sim, to the clock's time a second later); a second PATCH to fewer days replaces the days, and one of connection_configs the list, not merges them",
);
pub(super) const DEPLOYMENT_PATCH_NULL: CheckDef = CheckDef::warning(
    "states.deployment_patch_null_clears",
    "PATCH of description: null, and of inbound_config: null, clears each (null or absent in the answer and on GET) (assumed)",
);
pub(super) const DEPLOYMENT_APP_ID_FIXED: CheckDef = CheckDef::error(
    "states.deployment_app_id_fixed",
    "PATCH of another app_id (beside a valid description) is refused (4xx) and changes nothing: the deployment keeps its app_id, the description is not applied",
);
pub(super) const DELETE_FINAL: CheckDef = CheckDef::error(
    "states.deployment_delete_final",
    "a deleted deployment is gone: GET is a 4xx, the list no longer shows it, a second delete is a 4xx",
);
pub(super) const DELETE_PAUSED: CheckDef = CheckDef::error(
    "states.deployment_delete_paused",
    "a paused deployment can be deleted too; GET is then a 4xx",
);

pub(super) const DEPLOYMENT: Makes = Makes::new(Kind::Deployment, "states-deployment", 1);
pub(super) const DELETED_PAUSED: Makes = Makes::new(Kind::Deployment, "states-delete-paused", 1);

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
pub(super) async fn deployments(cx: &Ctx, v: &mut Verdicts) -> Vec<Exchange> {
    let created = new_deployment(cx, DEPLOYMENT.label).await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        v.blocked_only(
            &[
                &DEPLOYMENT_ACTIVE,
                &DEPLOYMENT_PAUSE_RESUME,
                &DEPLOYMENT_REPEAT,
                &DEPLOYMENT_PATCH,
                &DEPLOYMENT_PATCH_NULL,
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
    patch_nulls(cx, v, &id).await;
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
    // A second schedule with fewer days: a PATCH replaces the list, it does not merge it.
    let narrower = json!({
        "start_time": "09:00",
        "end_time": "17:00",
        "allowed_days": ["Saturday"],
        "timezone": "Europe/Paris"
    });
    let renarrowed = cx
        .send(
            Method::PATCH,
            &cx.paths.deployment(id),
            json!({"inbound_config": narrower}),
        )
        .await;
    let narrowed = cx.get(&cx.paths.deployment(id), &[]).await;
    // A new list of connection configs, one connection with a new number: the list sent is
    // the list kept, nothing of the old one appended.
    let connections = json!([{
        "connection_id": cx.settings.agent.connection_id,
        "phone_numbers": [cx.names.number()],
    }]);
    let reconnected = cx
        .send(
            Method::PATCH,
            &cx.paths.deployment(id),
            json!({"connection_configs": connections}),
        )
        .await;
    let connected = cx.get(&cx.paths.deployment(id), &[]).await;
    let replaced = [&renarrowed, &narrowed]
        .iter()
        .all(|x| x.status == 200 && same_schedule(&x.body()["inbound_config"], &narrower))
        && [&reconnected, &connected].iter().all(|x| {
            x.status == 200 && same_connections(&x.body()["connection_configs"], &connections)
        });
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
        applied(&patched) && applied(&got) && unnamed.is_empty() && replaced,
        Exchange::all(&[
            before,
            &patched,
            &got,
            &renarrowed,
            &narrowed,
            &reconnected,
            &connected,
        ])
        .with("changed_without_being_named", unnamed),
        format!(
            "app_version {version} and inbound_config {schedule} in the answer and on GET, every other field as read before (the first exchange), and updated_at {} the one read before; then inbound_config {narrower} (Saturday only) in the answer and on GET: the days replaced, not merged; then connection_configs exactly {connections}: the list replaced, not appended",
            if cx.settings.sim { "later than" } else { "not earlier than" }
        ),
    );
}

/// PATCH of another app_id: refused, and the app_id unchanged.
/// Answers the refusal.
async fn app_id_fixed(cx: &Ctx, v: &mut Verdicts, id: &str) -> Exchange {
    let mine = cx.settings.agent.app_id.clone();
    let other = format!("{mine}-other");
    // Beside the refused field a valid one: a refusal changes nothing, not even that.
    let before = cx.get(&cx.paths.deployment(id), &[]).await;
    let x = cx
        .send(
            Method::PATCH,
            &cx.paths.deployment(id),
            json!({"app_id": other, "description": "refused with the app_id: never applied"}),
        )
        .await;
    let got = cx.get(&cx.paths.deployment(id), &[]).await;
    let changed = refused_changed(&before, &got);
    v.varied(
        &DEPLOYMENT_APP_ID_FIXED,
        "app_id",
        [mine.as_str(), other.as_str()],
    );
    v.judge(
        &DEPLOYMENT_APP_ID_FIXED,
        is_4xx(&x) && got.str_field("app_id") == Some(mine.as_str()) && changed.is_empty(),
        Exchange::all(&[&before, &x, &got]).with("changed_by_the_refusal", changed),
        format!(
            "a 4xx (422 at [\"body\", \"app_id\"] in this contract) for a PATCH of app_id '{other}' and description, and the deployment unchanged on GET: app_id still '{mine}', the description not applied either"
        ),
    );
    x
}

/// PATCH of `description: null`, then of `inbound_config: null` (the deployment has both):
/// each cleared, in the answer and on GET.
async fn patch_nulls(cx: &Ctx, v: &mut Verdicts, id: &str) {
    let before = cx.get(&cx.paths.deployment(id), &[]).await;
    // Each field set before (from the create and the PATCHes above): a clear is seen.
    let mut ok = ["description", "inbound_config"]
        .iter()
        .all(|f| before.body().get(*f).is_some_and(|v| !v.is_null()));
    let mut calls = vec![before];
    for field in ["description", "inbound_config"] {
        let x = cx
            .send(
                Method::PATCH,
                &cx.paths.deployment(id),
                json!({ field: null }),
            )
            .await;
        let got = cx.get(&cx.paths.deployment(id), &[]).await;
        ok &= [&x, &got]
            .iter()
            .all(|x| x.status == 200 && x.body().get(field).is_none_or(Value::is_null));
        calls.extend([x, got]);
    }
    v.varied(
        &DEPLOYMENT_PATCH_NULL,
        "description",
        [&calls[0], &calls[2]].map(|x| x.body()["description"].clone()),
    );
    v.varied(
        &DEPLOYMENT_PATCH_NULL,
        "inbound_config",
        [&calls[0], &calls[4]].map(|x| x.body()["inbound_config"].clone()),
    );
    v.judge(
        &DEPLOYMENT_PATCH_NULL,
        ok,
        Exchange::all(&calls.iter().collect::<Vec<_>>()),
        "both set on GET before; then 200 with description null (or absent) in the answer to {\"description\": null} and on GET; the same for inbound_config after {\"inbound_config\": null}",
    );
}

/// The same connection configs: the same connections, each with the same numbers (in any
/// order), and no other.
fn same_connections(got: &Value, want: &Value) -> bool {
    let key = |v: &Value| {
        let mut items: Vec<(String, Vec<String>)> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let mut numbers: Vec<String> = c["phone_numbers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect();
                numbers.sort();
                (
                    c["connection_id"].as_str().unwrap_or("").to_string(),
                    numbers,
                )
            })
            .collect();
        items.sort();
        items
    };
    got.is_array() && key(got) == key(want)
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
