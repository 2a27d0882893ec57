//! The inbound half of the `sim` group: calls placed through the simulation API
//! (`POST /sim/v1/orgs/{o}/workspaces/{w}/inbound-calls`) to a deployment's number are
//! answered only while it is active, inside its schedule, and not after it is deleted
//! (rule 6); a caller found in its cohort reaches the agent with their variables, another
//! caller without them. The schedule is looked at on both sides of its opening and of its
//! closing, the target's clock moved to 1 s before and after each.

use chrono::Timelike;
use reqwest::Method;
use serde_json::json;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes, all_days, cohort_stream, secs};
use super::sim_defs::advance_to;
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

pub(super) const VARIABLES: CheckDef = CheckDef::error(
    "sim.inbound_cohort_variables",
    "an inbound call from a number in the deployment's cohort is answered with that user's variables; a caller not in it without them",
);
pub(super) const PAUSED: CheckDef = CheckDef::error(
    "sim.inbound_paused_not_answered",
    "a paused deployment does not answer; resumed, it answers again",
);
pub(super) const SCHEDULE: CheckDef = CheckDef::error(
    "sim.inbound_outside_schedule",
    "a call outside inbound_config's schedule is not answered, inside it is: 1 s before and after it opens, and before and after it closes",
);
pub(super) const DELETED: CheckDef = CheckDef::error(
    "sim.rule6_delete_stops_inbound",
    "rule 6: once a deployment is deleted, calls to its number are no longer answered, at once",
);

/// What the calls to the first deployment need: it and its cohort.
pub(super) const MADE: [Makes; 2] = [
    Makes::new(Kind::Deployment, "sim-inbound", 1),
    Makes::new(Kind::Cohort, "sim-callers", 1),
];
/// What the schedule check needs: a deployment with a schedule.
pub(super) const SCHEDULED: [Makes; 1] = [Makes::new(Kind::Deployment, "sim-schedule", 1)];

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
            &cx.names.name(MADE[0].label),
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
        &cx.names.name(MADE[1].label),
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
    let stranger = call(cx, &fixtures::magic_number(0, 312), &number).await;
    let name = |x: &Exchange| x.body()["agent_variables"]["first_name"].clone();
    v.varied(&VARIABLES, "first_name", [name(&first), name(&stranger)]);
    v.judge(
        &VARIABLES,
        answered(&first) == Some(true)
            && name(&first) == json!("Ada")
            && answered(&stranger) == Some(true)
            && name(&stranger).is_null(),
        Exchange::all(&[&cohort, &first, &stranger]),
        "\"answered\": true with agent_variables {\"first_name\": \"Ada\"} from the cohort; a caller not in it answered without first_name",
    );

    let paused = action(cx, &id, "pause").await;
    let while_paused = call(cx, &caller, &number).await;
    let resumed = action(cx, &id, "resume").await;
    let after = call(cx, &caller, &number).await;
    v.varied(
        &PAUSED,
        "answered",
        [answered(&while_paused), answered(&after)],
    );
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
    v.varied(&DELETED, "answered", [answered(&after), answered(&gone)]);
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
    // Open from the first whole minute at least 2 minutes ahead, for an hour.
    let ahead = now + secs(120 + 59);
    let open = ahead
        .with_second(0)
        .and_then(|t| t.with_nanosecond(0))
        .unwrap_or(ahead);
    let close = open + secs(3600);
    let window = json!({"start_time": hm(open), "end_time": hm(close), "allowed_days": all_days(), "timezone": "UTC"});
    let number = cx.names.number();
    let mut body = fixtures::deployment(
        &cx.settings.agent,
        &cx.names.name(SCHEDULED[0].label),
        std::slice::from_ref(&number),
    );
    body["inbound_config"] = window.clone();
    let created = cx.create_deployment(body).await;
    if created.str_field("deployment_id").is_none() {
        return v.blocked_only(
            &[&SCHEDULE],
            "creating a deployment with a schedule",
            created.evidence(),
        );
    }
    let mut calls = vec![created];
    let mut seen = Vec::new();
    let mut ok = true;
    for (at, want) in [
        (open - secs(1), false),
        (open + secs(1), true),
        (close - secs(1), true),
        (close + secs(1), false),
    ] {
        let moved = advance_to(cx, at).await;
        let x = call(cx, caller, &number).await;
        ok &= moved.is_success() && answered(&x) == Some(want);
        seen.push(answered(&x));
        calls.extend([moved, x]);
    }
    v.varied(&SCHEDULE, "answered", seen);
    v.judge(
        &SCHEDULE,
        ok,
        Exchange::all(&calls.iter().collect::<Vec<_>>())
            .with("open", fixtures::ts(open))
            .with("close", fixtures::ts(close)),
        format!(
            "with inbound_config {window}: \"answered\": false 1 s before {}, true 1 s after it and 1 s before {}, false 1 s after that",
            fixtures::ts(open),
            fixtures::ts(close)
        ),
    );
}
