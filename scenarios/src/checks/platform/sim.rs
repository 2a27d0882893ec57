//! `sim`: the checks that need time, run only when the target offers this harness's
//! simulation API (`--sim`): activation and end, the calling window, retries, the rules 1
//! to 6 of the spec, stop files and uploads to an active campaign.
//!
//! Several campaigns are created at once, each starting 3 minutes ahead and sending its call
//! events to a local [`Receiver`]; the target's clock is then moved through their lives in a
//! few steps (`POST /sim/v1/clock/advance`), with observations between steps, and the events
//! are judged at the end (`sim_rules.rs`). Every change that time makes is looked at on
//! both sides of its instant: a campaign 1 s before and after its start and its end, the
//! first and last dial of a calling window against its opening and closing, the retries
//! against their interval from both sides. The users' numbers are the simulated
//! telephony's magic numbers (`+1 NXX 555-01YY`, `YY` deciding the outcome), so every
//! outcome is known in advance. The target's clock moves forward by a few hours of
//! simulated time. The status changes that start from a campaign time has moved are in
//! [`sim_states`], the inbound calls in `sim_inbound.rs`, the calling windows as users write
//! them (time zones, days left out, across midnight, daylight saving: the clock then moves
//! on by days to months, straight to each instant that matters) in `sim_zones.rs`.

use std::collections::BTreeMap;

use chrono::{DateTime, Timelike, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::cohorts_values::wait_for_cohort;
use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes, cohort_stream, magic_number, secs, ts};
use super::receiver::Receiver;
use super::sim_defs::*;
use super::sim_rules::{self, Timeline};
use super::states::status_value;
use super::target::Parent;
use super::verdicts::Verdicts;
use super::{sim_inbound, sim_signatures, sim_states, sim_zones, sim_zones_defs};
use crate::checks::{CheckDef, Evidence};

/// The checks of this group.
pub const CHECKS: &[CheckDef] = &[
    ACTIVATES,
    ENDS,
    WINDOW,
    RULE1,
    RETRY_GAP,
    RULE2,
    RULE3,
    RULE4,
    RULE5,
    EVENTS,
    STOP_FILE,
    COHORT_ACTIVE,
    OUTBOUND_EVENT,
    RETRIED,
    SIGNATURES,
    SIGNATURE_FORM,
    sim_states::PAUSE_ACTIVE,
    sim_states::RESUME_AFTER_START,
    sim_states::CANCEL_RUNNING,
    sim_states::ENDED_FINAL,
    sim_states::ENDED_409,
    sim_states::PATCH_RUNNING,
    sim_inbound::VARIABLES,
    sim_inbound::PAUSED,
    sim_inbound::SCHEDULE,
    sim_inbound::DELETED,
    sim_zones_defs::WINDOW_ZONES,
    sim_zones_defs::WINDOW_DAYS,
    sim_zones_defs::WINDOW_OVERNIGHT,
    sim_zones_defs::WINDOW_DST,
    sim_zones_defs::INBOUND_ZONES,
    sim_zones_defs::INBOUND_DAYS,
    sim_zones_defs::INBOUND_OVERNIGHT,
    sim_zones_defs::INBOUND_DST,
];

/// The checks judged from the campaigns' timeline.
fn campaign_checks() -> Vec<&'static CheckDef> {
    vec![
        &ACTIVATES,
        &ENDS,
        &WINDOW,
        &RULE1,
        &RETRY_GAP,
        &RULE2,
        &RULE3,
        &RULE4,
        &RULE5,
        &EVENTS,
        &STOP_FILE,
        &COHORT_ACTIVE,
        &OUTBOUND_EVENT,
        &RETRIED,
    ]
}

/// Why the group is skipped without `--sim`.
pub const NEEDS_SIM: &str = "needs the simulation API: run with --sim against a target that offers /sim/v1 on a simulated clock (the harness's mock with --clock simulated)";

/// One campaign of the timeline.
struct Plan {
    made: Makes,
    users: Vec<(String, String)>,
    rate: f64,
    retry: Value,
    connections: Option<Value>,
    end: DateTime<Utc>,
    window: (String, String),
}

/// What each check creates: the campaigns of the timeline (each check needs the clock moved
/// through all of them), and the inbound and status checks' own.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&ACTIVATES, &[ACTIVATION]),
    (&ENDS, &[ACTIVATION]),
    (&WINDOW, &[WINDOWED, USERS]),
    (&RULE1, &[RETRIES, USERS]),
    (&RETRY_GAP, &[RETRIES, USERS]),
    (&RULE2, &[RATE, USERS]),
    (&RULE3, &[BUDGET, USERS]),
    (&RULE4, &[WEIGHTS, USERS]),
    (&RULE5, &[SHORT, SHORT_OFF, USERS]),
    (&EVENTS, &[USERS]),
    (&STOP_FILE, &[STOPPED, USERS, STOP_LIST]),
    (&COHORT_ACTIVE, &[LATE_COHORT, LATE_UPLOAD]),
    (
        &OUTBOUND_EVENT,
        &[Makes::new(
            Kind::OutboundCall,
            "sim-outbound",
            sim_rules::OUTBOUND_OUTCOMES.len() as u32,
        )],
    ),
    (
        &RETRIED,
        &[Makes::new(
            Kind::OutboundCall,
            "sim-outbound-refused-once",
            1,
        )],
    ),
    (&sim_states::PAUSE_ACTIVE, &sim_states::MADE),
    (&sim_states::RESUME_AFTER_START, &sim_states::MADE),
    (&sim_states::CANCEL_RUNNING, &sim_states::MADE),
    (&sim_states::ENDED_FINAL, &sim_states::MADE),
    (&sim_states::ENDED_409, &sim_states::MADE),
    (&sim_states::PATCH_RUNNING, &sim_states::MADE),
    (&sim_inbound::VARIABLES, &sim_inbound::MADE),
    (&sim_inbound::PAUSED, &sim_inbound::MADE),
    (&sim_inbound::SCHEDULE, &sim_inbound::SCHEDULED),
    (&sim_inbound::DELETED, &sim_inbound::MADE),
    (
        &sim_zones_defs::WINDOW_ZONES,
        &sim_zones_defs::ZONE_CAMPAIGNS,
    ),
    (&sim_zones_defs::WINDOW_DAYS, &sim_zones_defs::DAY_CAMPAIGNS),
    (
        &sim_zones_defs::WINDOW_OVERNIGHT,
        &sim_zones_defs::NIGHT_CAMPAIGNS,
    ),
    (&sim_zones_defs::WINDOW_DST, &sim_zones_defs::DST_CAMPAIGNS),
    (
        &sim_zones_defs::INBOUND_ZONES,
        &sim_zones_defs::ZONE_DEPLOYMENTS,
    ),
    (
        &sim_zones_defs::INBOUND_DAYS,
        &sim_zones_defs::DAY_DEPLOYMENTS,
    ),
    (
        &sim_zones_defs::INBOUND_OVERNIGHT,
        &sim_zones_defs::NIGHT_DEPLOYMENTS,
    ),
    (
        &sim_zones_defs::INBOUND_DST,
        &sim_zones_defs::DST_DEPLOYMENTS,
    ),
];

/// A window open all day but one minute, that minute two hours before `t` (so never met in
/// the few hours the checks run).
fn all_day(t: DateTime<Utc>) -> (String, String) {
    let open = t - secs(2 * 3600);
    let close = open - secs(60);
    (
        open.format("%H:%M").to_string(),
        close.format("%H:%M").to_string(),
    )
}

fn no_retries() -> Value {
    json!({"max_retries": 0, "retry_on": [], "threshold_seconds": 10})
}

fn users(yy: u8, n: u32, from: u32) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (magic_number(yy, from + i), format!("user-{}", from + i)))
        .collect()
}

fn body(cx: &Ctx, recv: &Receiver, p: &Plan, start: DateTime<Utc>) -> Value {
    let mut b = fixtures::campaign(
        &cx.settings.agent,
        &cx.names.name(p.made.label),
        &cx.names.number(),
        start,
        p.end,
    );
    b["allowed_schedule"]["allowed_start_time"] = json!(p.window.0);
    b["allowed_schedule"]["allowed_end_time"] = json!(p.window.1);
    b["app_config"]["attempts_per_second"] = json!(p.rate);
    b["app_config"]["retry_config"] = p.retry.clone();
    if let Some(c) = &p.connections {
        b["app_config"]["connection_configs"] = c.clone();
    }
    // Metadata of its own: every event of the campaign, retries included, carries it back.
    b["app_config"]["webhook_config"] = json!({
        "url": recv.url(p.made.label),
        "metadata": {"campaign": p.made.label, "run": cx.names.run()},
    });
    b
}

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    match Receiver::start(
        &cx.settings.webhook_listen,
        cx.settings.webhook_public_url.as_deref(),
    )
    .await
    {
        Ok(recv) => {
            let from = cx.now().await.ok().map(|n| n.at);
            campaigns(cx, v, &recv).await;
            sim_zones::run(cx, v, Some(&recv)).await;
            let to = cx.now().await.ok().map(|n| n.at);
            sim_signatures::judge(cx, v, &recv.deliveries(), from.zip(to));
            if let Some(o) = super::oracle::of(&cx.http) {
                o.target_events(recv.all());
            }
        }
        Err(e) => {
            let mut blocked = campaign_checks();
            blocked.extend(sim_zones_defs::CAMPAIGN_CHECKS);
            v.blocked_only(
                &blocked,
                "listening for the campaigns' webhooks",
                Evidence::new().with("error", format!("{e:#}")),
            );
            sim_zones::run(cx, v, None).await;
        }
    }
    sim_states::run(cx, v).await;
    sim_inbound::run(cx, v).await;
}

/// The first whole minute at or after `t`.
fn whole_minute(t: DateTime<Utc>) -> DateTime<Utc> {
    let up = t + secs(59);
    up.with_second(0)
        .and_then(|x| x.with_nanosecond(0))
        .unwrap_or(up)
}

/// The campaigns of the timeline, each to start at `start`.
fn plans(cx: &Ctx, t: DateTime<Utc>, start: DateTime<Utc>, open: DateTime<Utc>) -> Vec<Plan> {
    let day = all_day(t);
    let close = open + secs(60);
    let retry = |on: &[&str], max: u32, minutes: u32| json!({"max_retries": max, "retry_on": on, "threshold_seconds": 10, "retry_interval_minutes": minutes});
    let [a1, a2, b1] = sim_rules::weighted_numbers(cx);
    let id = &cx.settings.agent.connection_id;
    let plan = |made: Makes, users: Vec<(String, String)>, rate: f64, end: DateTime<Utc>| Plan {
        made,
        users,
        rate,
        retry: no_retries(),
        connections: None,
        end,
        window: day.clone(),
    };
    vec![
        plan(ACTIVATION, vec![], 1.0, start + secs(3600)),
        Plan {
            window: (
                open.format("%H:%M").to_string(),
                close.format("%H:%M").to_string(),
            ),
            ..plan(
                WINDOWED,
                users(2, sim_rules::WINDOW_USERS, 0),
                sim_rules::WINDOW_RATE,
                open + secs(3 * 3600),
            )
        },
        Plan {
            retry: retry(&["busy", "no_answer"], 2, sim_rules::RETRY_MINUTES),
            ..plan(
                RETRIES,
                vec![
                    (magic_number(1, 0), "busy".into()),
                    (magic_number(0, 1), "connected".into()),
                ],
                1.0,
                start + secs(3600),
            )
        },
        plan(RATE, users(2, 6, 0), 0.5, start + secs(600)),
        plan(
            BUDGET,
            users(2, sim_rules::BUDGET_USERS, 0),
            0.1,
            start + secs(120),
        ),
        Plan {
            connections: Some(json!([
                {"connection_id": format!("{id}-a"), "phone_numbers": [a1, a2], "weight": 3},
                {"connection_id": format!("{id}-b"), "phone_numbers": [b1], "weight": 1}
            ])),
            ..plan(WEIGHTS, users(8, 12, 0), 10.0, start + secs(600))
        },
        Plan {
            retry: retry(&["short_duration"], 1, 1),
            ..plan(
                SHORT,
                vec![
                    (magic_number(4, 0), "short".into()),
                    (magic_number(8, 1), "long".into()),
                ],
                1.0,
                start + secs(3600),
            )
        },
        Plan {
            retry: retry(&["busy"], 1, 1),
            ..plan(
                SHORT_OFF,
                vec![(magic_number(4, 2), "short".into())],
                1.0,
                start + secs(3600),
            )
        },
        plan(
            STOPPED,
            sim_rules::stop_users().to_vec(),
            1.0,
            start + secs(3600),
        ),
        plan(LATE_COHORT, vec![], 1.0, start + secs(3600)),
    ]
}

/// Creates the campaigns of `plans`, each with its users streamed as one cohort.
async fn create(
    cx: &Ctx,
    recv: &Receiver,
    plans: &[Plan],
    start: DateTime<Utc>,
) -> Result<BTreeMap<&'static str, Exchange>, (String, Exchange)> {
    let mut made = BTreeMap::new();
    for p in plans {
        let x = cx.create_campaign(body(cx, recv, p, start)).await;
        let Some(id) = x.str_field("campaign_id").map(str::to_string) else {
            return Err((format!("creating the campaign {}", p.made.label), x));
        };
        if !p.users.is_empty() {
            let c = cx
                .send(
                    Method::POST,
                    &cx.paths.cohorts(Parent::Campaign(&id), &["stream"]),
                    cohort_stream(&cx.names.name(p.made.label), &p.users),
                )
                .await;
            if !c.is_success() {
                return Err((format!("adding users to the campaign {}", p.made.label), c));
            }
        }
        made.insert(p.made.label, x);
    }
    Ok(made)
}

async fn campaigns(cx: &Ctx, v: &mut Verdicts, recv: &Receiver) {
    let t = match cx.now().await {
        Ok(n) => n.at,
        Err(x) => {
            return v.blocked_only(
                &campaign_checks(),
                "reading the simulated clock",
                x.evidence(),
            );
        }
    };
    let start = t + secs(180);
    // The window campaign's window: one minute, from the first whole minute at least 30
    // minutes after the start.
    let open = whole_minute(start + secs(1800));
    let plans = plans(cx, t, start, open);
    let created = match create(cx, recv, &plans, start).await {
        Ok(c) => c,
        Err((what, x)) => return v.blocked_only(&campaign_checks(), &what, x.evidence()),
    };
    let id_of = |m: &Makes| -> String {
        created
            .get(m.label)
            .and_then(|x| x.str_field("campaign_id"))
            .unwrap_or_default()
            .to_string()
    };
    let stop = sim_rules::stop_file(cx, &id_of(&STOPPED)).await;
    let outbound = sim_rules::outbound_calls(cx, recv).await;
    let activation = id_of(&ACTIVATION);
    let end = plans[0].end;

    // Step through time, observing on the way.
    let before_start = status(cx, &activation).await;
    let step1 = advance_to(cx, start - secs(1)).await;
    let just_before = status(cx, &activation).await;
    let step2 = advance_to(cx, start + secs(1)).await;
    let just_after = status(cx, &activation).await;
    v.varied(
        &ACTIVATES,
        "status",
        [status_value(&just_before), status_value(&just_after)],
    );
    v.judge(
        &ACTIVATES,
        super::states::status(&before_start) == Some("scheduled")
            && super::states::status(&just_before) == Some("scheduled")
            && step2.is_success()
            && super::states::status(&just_after) == Some("active"),
        Exchange::all(&[&before_start, &step1, &just_before, &step2, &just_after])
            .with("start_timestamp", ts(start)),
        "scheduled at creation and 1 s before start_timestamp, active 1 s after it",
    );
    let late = late_upload(cx, &id_of(&LATE_COHORT)).await;
    let step3 = advance_to(cx, open - secs(1)).await;
    let before_window = recv.events(&id_of(&WINDOWED)).len();
    let step4 = advance_to(cx, end - secs(1)).await;
    let before_end = status(cx, &activation).await;
    let step5 = advance_to(cx, end + secs(1)).await;
    let after_end = status(cx, &activation).await;
    v.varied(
        &ENDS,
        "status",
        [status_value(&before_end), status_value(&after_end)],
    );
    v.judge(
        &ENDS,
        super::states::status(&before_end) == Some("active")
            && super::states::status(&after_end) == Some("ended"),
        Exchange::all(&[&step4, &before_end, &step5, &after_end]).with("end_timestamp", ts(end)),
        "\"status\": \"active\" 1 s before end_timestamp and \"ended\" 1 s after it",
    );
    let end_all = plans.iter().map(|p| p.end).max().unwrap_or(start) + secs(1);
    let step6 = advance_to(cx, end_all).await;
    let steps = [&step1, &step2, &step3, &step4, &step5, &step6];
    if steps.iter().any(|x| !x.is_success()) {
        return v.blocked_only(
            &campaign_checks()[2..],
            "moving the simulated clock",
            Exchange::all(&steps),
        );
    }
    let timeline = Timeline {
        recv,
        created: &created,
        open,
        close: open + secs(60),
        dials_before_open: before_window,
        budget_end: plans[4].end,
    };
    sim_rules::judge(cx, v, &timeline).await;
    sim_rules::judge_stop_file(v, &timeline, &stop).await;
    sim_rules::judge_late_upload(v, &timeline, &late).await;
    sim_rules::judge_outbound(cx, v, &timeline, &outbound).await;
}

/// Uploads the cohort file to the campaign `id`, which is active by now.
async fn late_upload(cx: &Ctx, id: &str) -> LateUpload {
    let read = status(cx, id).await;
    let parent = Parent::Campaign(id);
    let upload = super::cohorts_values::upload(cx, parent, LATE_UPLOAD.label, "phone").await;
    let done = match upload.str_field("cohort_id") {
        Some(c) => wait_for_cohort(cx, parent, c).await,
        None => upload.clone(),
    };
    LateUpload { read, upload, done }
}
