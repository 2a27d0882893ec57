//! The inbound half of the `sim` group: calls placed through the simulation API
//! (`POST /sim/v1/orgs/{o}/workspaces/{w}/inbound-calls`) to a deployment's number are
//! answered only while it is active, inside its schedule, and not after it is deleted
//! (rule 6); a caller found in its cohort reaches the agent with their variables.

use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, all_days, cohort_stream, secs};
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

pub(super) const VARIABLES: CheckDef = CheckDef::error(
    "sim.inbound_cohort_variables",
    "an inbound call from a number in the deployment's cohort is answered with that user's variables",
);
pub(super) const PAUSED: CheckDef = CheckDef::error(
    "sim.inbound_paused_not_answered",
    "a paused deployment does not answer; resumed, it answers again",
);
pub(super) const SCHEDULE: CheckDef = CheckDef::error(
    "sim.inbound_outside_schedule",
    "a call outside inbound_config's schedule is not answered; inside it is",
);
pub(super) const DELETED: CheckDef = CheckDef::error(
    "sim.rule6_delete_stops_inbound",
    "rule 6: once a deployment is deleted, calls to its number are no longer answered, at once",
);

async fn call(cx: &Ctx, caller: &str, dialled: &str) -> Exchange {
    cx.send(
        Method::POST,
        &cx.paths.sim_inbound_calls(),
        json!({"caller": caller, "dialled": dialled}),
    )
    .await
}

fn answered(x: &Exchange) -> Option<bool> {
    (x.status == 200)
        .then(|| x.body()["answered"].as_bool())
        .flatten()
}

async fn action(cx: &Ctx, id: &str, action: &str) -> Exchange {
    cx.send(
        Method::PUT,
        &cx.paths.deployment_status(id),
        json!({"action": action}),
    )
    .await
}

/// Runs the inbound checks.
pub(super) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let number = cx.names.number();
    let caller = fixtures::magic_number(0, 311);
    let created = cx
        .create_deployment(fixtures::deployment(
            &cx.settings.agent,
            &cx.names.name("sim-inbound"),
            std::slice::from_ref(&number),
        ))
        .await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        return v.blocked_only(
            &[&VARIABLES, &PAUSED, &DELETED, &SCHEDULE],
            "creating a deployment",
            created.evidence(),
        );
    };
    let mut users = cohort_stream(
        &cx.names.name("sim-callers"),
        &[(caller.clone(), "caller-1".into())],
    );
    users["users"][0]["app_variables"] = json!({"first_name": "Ada"});
    let cohort = cx
        .send(
            Method::POST,
            &cx.paths.cohorts(Parent::Deployment(&id), &["stream"]),
            users,
        )
        .await;
    let first = call(cx, &caller, &number).await;
    v.judge(
        &VARIABLES,
        answered(&first) == Some(true)
            && first.body()["agent_variables"]["first_name"] == json!("Ada"),
        Exchange::all(&[&cohort, &first]),
        "\"answered\": true with agent_variables {\"first_name\": \"Ada\"} from the cohort",
    );

    let paused = action(cx, &id, "pause").await;
    let while_paused = call(cx, &caller, &number).await;
    let resumed = action(cx, &id, "resume").await;
    let after = call(cx, &caller, &number).await;
    v.judge(
        &PAUSED,
        paused.is_success()
            && answered(&while_paused) == Some(false)
            && resumed.is_success()
            && answered(&after) == Some(true),
        Exchange::all(&[&paused, &while_paused, &resumed, &after]),
        "\"answered\": false while paused, true after resume",
    );

    let deleted = cx.delete_deployment(&id).await;
    let gone = call(cx, &caller, &number).await;
    v.judge(
        &DELETED,
        answered(&after) == Some(true) && deleted.is_success() && answered(&gone) == Some(false),
        Exchange::all(&[&after, &deleted, &gone]),
        "answered before the delete, \"answered\": false right after it",
    );

    schedule(cx, v, &caller).await;
}

/// `HH:MM` of an instant, UTC.
fn hm(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%H:%M").to_string()
}

async fn schedule(cx: &Ctx, v: &mut Verdicts, caller: &str) {
    let now = match cx.now().await {
        Ok(n) => n.at,
        Err(x) => return v.blocked_only(&[&SCHEDULE], "reading the target's time", x.evidence()),
    };
    let window = |from: chrono::DateTime<chrono::Utc>,
                  to: chrono::DateTime<chrono::Utc>|
     -> Value {
        json!({"start_time": hm(from), "end_time": hm(to), "allowed_days": all_days(), "timezone": "UTC"})
    };
    // Closed now: open from two to three hours ahead.
    let closed = window(now + secs(2 * 3600), now + secs(3 * 3600));
    // Open now: from an hour ago to an hour ahead.
    let open = window(now - secs(3600), now + secs(3600));
    let number = cx.names.number();
    let mut body = fixtures::deployment(
        &cx.settings.agent,
        &cx.names.name("sim-schedule"),
        std::slice::from_ref(&number),
    );
    body["inbound_config"] = closed.clone();
    let created = cx.create_deployment(body).await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        return v.blocked_only(
            &[&SCHEDULE],
            "creating a deployment with a schedule",
            created.evidence(),
        );
    };
    let outside = call(cx, caller, &number).await;
    let patched = cx
        .send(
            Method::PATCH,
            &cx.paths.deployment(&id),
            json!({"inbound_config": open}),
        )
        .await;
    let inside = call(cx, caller, &number).await;
    v.judge(
        &SCHEDULE,
        answered(&outside) == Some(false)
            && patched.is_success()
            && answered(&inside) == Some(true),
        Exchange::all(&[&created, &outside, &patched, &inside]).with("now", fixtures::ts(now)),
        format!("\"answered\": false with inbound_config {closed}, true after PATCH to {open}"),
    );
}
