//! `sim`: the checks that need time, run only when the target offers this harness's
//! simulation API (`--sim`): activation and end, the calling window, retries and the rules 1
//! to 6 of the spec.
//!
//! Several campaigns are created at once, each starting 3 minutes ahead and sending its call
//! events to a local [`Receiver`]; the target's clock is then moved through their lives in a
//! few steps (`POST /sim/v1/clock/advance`), with observations between steps, and the events
//! are judged at the end. The users' numbers are the simulated telephony's magic numbers
//! (`+1 NXX 555-01YY`, `YY` deciding the outcome), so every outcome is known in advance.
//! The target's clock moves forward by a few hours of simulated time. The status changes
//! that start from a campaign time has moved are in [`sim_states`], the inbound calls in
//! `sim_inbound.rs`.

use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, cohort_stream, magic_number, secs, ts};
use super::receiver::Receiver;
use super::target::{Parent, sim_clock_advance};
use super::verdicts::Verdicts;
use super::{sim_inbound, sim_states};
use crate::checks::{CheckDef, Evidence};

const ACTIVATES: CheckDef = CheckDef::error(
    "sim.campaign_activates",
    "a campaign is scheduled until its start_timestamp and active from it",
);
const ENDS: CheckDef = CheckDef::error(
    "sim.campaign_ends",
    "an active campaign is ended once its end_timestamp has passed",
);
const WINDOW: CheckDef = CheckDef::error(
    "sim.calling_window",
    "dials happen only inside allowed_schedule: none before it opens, none after it closes",
);
const RULE1: CheckDef = CheckDef::error(
    "sim.rule1_attempts",
    "rule 1: every dial is an attempt; max_retries 2 gives an always-busy user exactly 3, a connected user 1",
);
const RETRY_GAP: CheckDef = CheckDef::error(
    "sim.retry_interval",
    "a retry is dialled no sooner than retry_interval_minutes after the attempt before it",
);
const RULE2: CheckDef = CheckDef::error(
    "sim.rule2_dial_rate",
    "rule 2: attempts_per_second paces dials: at 0.5, successive dials are at least 2 s apart",
);
const RULE3: CheckDef = CheckDef::error(
    "sim.rule3_budget",
    "rule 3: when rate x window is below the budget, dialling stops at the end with users left",
);
const RULE4: CheckDef = CheckDef::error(
    "sim.rule4_weights",
    "rule 4: weights 3 and 1 split dials 75/25; the numbers of one connection are used equally",
);
const RULE5: CheckDef = CheckDef::error(
    "sim.rule5_short_duration",
    "rule 5: a call shorter than threshold_seconds is retried when short_duration is in retry_on, not otherwise",
);
const EVENTS: CheckDef = CheckDef::error(
    "sim.campaign_event_schema",
    "every campaign call event delivered matches the contract's schema (CampaignCallEvent)",
);

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
    sim_states::PAUSE_ACTIVE,
    sim_states::RESUME_AFTER_START,
    sim_states::CANCEL_RUNNING,
    sim_states::ENDED_FINAL,
    sim_inbound::VARIABLES,
    sim_inbound::PAUSED,
    sim_inbound::SCHEDULE,
    sim_inbound::DELETED,
];

/// The checks judged from the campaigns' timeline (the rest are the inbound ones).
fn campaign_checks() -> Vec<&'static CheckDef> {
    vec![
        &ACTIVATES, &ENDS, &WINDOW, &RULE1, &RETRY_GAP, &RULE2, &RULE3, &RULE4, &RULE5, &EVENTS,
    ]
}

/// Why the group is skipped without `--sim`.
pub const NEEDS_SIM: &str = "needs the simulation API: run with --sim against a target that offers /sim/v1 on a simulated clock (the harness's mock with --clock simulated)";

/// How long to wait for webhooks a target delivers after the clock moved.
const EVENT_WAIT: Duration = Duration::from_secs(10);

/// One campaign of the timeline.
struct Plan {
    label: &'static str,
    users: Vec<(String, String)>,
    rate: f64,
    retry: Value,
    connections: Option<Value>,
    end: DateTime<Utc>,
    window: (String, String),
}

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
        &cx.names.name(p.label),
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
    b["app_config"]["webhook_config"] = json!({"url": recv.url(p.label)});
    b
}

/// Runs the group.
pub async fn run(cx: &Ctx, v: &mut Verdicts) {
    match Receiver::start(
        &cx.settings.webhook_listen,
        cx.settings.webhook_public_url.as_deref(),
    )
    .await
    {
        Ok(recv) => campaigns(cx, v, &recv).await,
        Err(e) => v.blocked_only(
            &campaign_checks(),
            "listening for the campaigns' webhooks",
            Evidence::new().with("error", format!("{e:#}")),
        ),
    }
    sim_states::run(cx, v).await;
    sim_inbound::run(cx, v).await;
}

/// Moves the target's simulated clock to `to`.
pub(super) async fn advance_to(cx: &Ctx, to: DateTime<Utc>) -> Exchange {
    cx.send(Method::POST, &sim_clock_advance(), json!({"to": ts(to)}))
        .await
}

/// `GET` of a campaign.
pub(super) async fn status(cx: &Ctx, id: &str) -> Exchange {
    cx.get(&cx.paths.campaign(id), &[]).await
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
    let day = all_day(t);
    // The window campaign's window: the first full hour at least 30 minutes after the start.
    let half = start + secs(1800);
    let open = (half + secs(3600 - 1))
        .with_minute(0)
        .and_then(|x| x.with_second(0))
        .and_then(|x| x.with_nanosecond(0))
        .unwrap_or(half);
    let close = open + secs(3600);
    let retry = |on: &[&str], max: u32, minutes: u32| json!({"max_retries": max, "retry_on": on, "threshold_seconds": 10, "retry_interval_minutes": minutes});
    let (a1, a2, b1) = (cx.names.number(), cx.names.number(), cx.names.number());
    let id = &cx.settings.agent.connection_id;
    let plans = vec![
        Plan {
            label: "sim-activation",
            users: vec![],
            rate: 1.0,
            retry: no_retries(),
            connections: None,
            end: start + secs(3600),
            window: day.clone(),
        },
        Plan {
            label: "sim-window",
            users: users(2, 3, 0),
            rate: 1.0,
            retry: retry(&["no_answer"], 1, 60),
            connections: None,
            end: open + secs(3 * 3600),
            window: (
                open.format("%H:%M").to_string(),
                close.format("%H:%M").to_string(),
            ),
        },
        Plan {
            label: "sim-retries",
            users: vec![
                (magic_number(1, 0), "busy".into()),
                (magic_number(0, 1), "connected".into()),
            ],
            rate: 1.0,
            retry: retry(&["busy", "no_answer"], 2, 5),
            connections: None,
            end: start + secs(3600),
            window: day.clone(),
        },
        Plan {
            label: "sim-rate",
            users: users(2, 6, 0),
            rate: 0.5,
            retry: no_retries(),
            connections: None,
            end: start + secs(600),
            window: day.clone(),
        },
        Plan {
            label: "sim-budget",
            users: users(2, 20, 0),
            rate: 0.1,
            retry: no_retries(),
            connections: None,
            end: start + secs(120),
            window: day.clone(),
        },
        Plan {
            label: "sim-weights",
            users: users(8, 12, 0),
            rate: 10.0,
            retry: no_retries(),
            connections: Some(json!([
                {"connection_id": format!("{id}-a"), "phone_numbers": [a1, a2], "weight": 3},
                {"connection_id": format!("{id}-b"), "phone_numbers": [b1], "weight": 1}
            ])),
            end: start + secs(600),
            window: day.clone(),
        },
        Plan {
            label: "sim-short",
            users: vec![
                (magic_number(4, 0), "short".into()),
                (magic_number(8, 1), "long".into()),
            ],
            rate: 1.0,
            retry: retry(&["short_duration"], 1, 1),
            connections: None,
            end: start + secs(3600),
            window: day.clone(),
        },
        Plan {
            label: "sim-short-off",
            users: vec![(magic_number(4, 2), "short".into())],
            rate: 1.0,
            retry: retry(&["busy"], 1, 1),
            connections: None,
            end: start + secs(3600),
            window: day.clone(),
        },
    ];
    let mut ids = std::collections::BTreeMap::new();
    for p in &plans {
        let x = cx.create_campaign(body(cx, recv, p, start)).await;
        let Some(id) = x.str_field("campaign_id").map(str::to_string) else {
            return v.blocked_only(
                &campaign_checks(),
                &format!("creating the campaign {}", p.label),
                x.evidence(),
            );
        };
        if !p.users.is_empty() {
            let c = cx
                .send(
                    Method::POST,
                    &cx.paths.cohorts(Parent::Campaign(&id), &["stream"]),
                    cohort_stream(&cx.names.name(p.label), &p.users),
                )
                .await;
            if !c.is_success() {
                return v.blocked_only(
                    &campaign_checks(),
                    &format!("adding users to the campaign {}", p.label),
                    c.evidence(),
                );
            }
        }
        ids.insert(p.label, id);
    }
    let id_of = |label: &str| -> String { ids.get(label).cloned().unwrap_or_default() };
    let activation = id_of("sim-activation");

    // Step through time, observing on the way.
    let before_start = status(cx, &activation).await;
    let step1 = advance_to(cx, start - secs(1)).await;
    let just_before = status(cx, &activation).await;
    let step2 = advance_to(cx, start + secs(1)).await;
    let just_after = status(cx, &activation).await;
    let st = |x: &Exchange| x.str_field("status").map(str::to_string);
    v.judge(
        &ACTIVATES,
        st(&before_start).as_deref() == Some("scheduled")
            && st(&just_before).as_deref() == Some("scheduled")
            && step2.is_success()
            && st(&just_after).as_deref() == Some("active"),
        Exchange::all(&[&before_start, &step1, &just_before, &step2, &just_after])
            .with("start_timestamp", ts(start)),
        "scheduled at creation and 1 s before start_timestamp, active 1 s after it",
    );
    let step3 = advance_to(cx, open - secs(1)).await;
    let before_window = recv.events(&id_of("sim-window")).len();
    let end_all = plans.iter().map(|p| p.end).max().unwrap_or(start) + secs(1);
    let step4 = advance_to(cx, end_all).await;
    let ended = status(cx, &activation).await;
    v.judge(
        &ENDS,
        step4.is_success() && st(&ended).as_deref() == Some("ended"),
        Exchange::all(&[&step4, &ended]).with("end_timestamp", ts(plans[0].end)),
        "\"status\": \"ended\" after end_timestamp",
    );
    if !step3.is_success() || !step4.is_success() {
        return v.blocked_only(
            &campaign_checks()[2..],
            "moving the simulated clock",
            Exchange::all(&[&step3, &step4]),
        );
    }

    let window = recv.wait(&id_of("sim-window"), 3, EVENT_WAIT).await;
    let times = executed(&window);
    v.judge(
        &WINDOW,
        before_window == 0 && times.len() == 3 && times.iter().all(|t| *t >= open && *t < close),
        Evidence::new()
            .with("window", format!("{} to {} UTC", ts(open), ts(close)))
            .with("dials_before_open", before_window)
            .with("executed_at", times.iter().map(|t| ts(*t)).collect::<Vec<_>>()),
        "no dial before the window opens; the 3 users dialled once inside it; their retries (due after it closes) not dialled",
    );

    rules(v, recv, &ids, [&a1, &a2, &b1]).await;
    let all = recv.all();
    let bad: Vec<Value> = all
        .iter()
        .filter_map(|e| {
            let errs = cx.schemas.violations("CampaignCallEvent", e);
            (!errs.is_empty()).then(|| json!({"event": e, "violations": errs}))
        })
        .take(5)
        .collect();
    v.judge(
        &EVENTS,
        !all.is_empty() && bad.is_empty(),
        Evidence::new()
            .with("events", all.len())
            .with("not_matching", bad),
        "at least one event, each matching the schema CampaignCallEvent",
    );
}

fn executed(events: &[Value]) -> Vec<DateTime<Utc>> {
    events
        .iter()
        .filter_map(|e| e["executed_at"].as_str())
        .filter_map(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .collect()
}

fn of_user<'a>(events: &'a [Value], user: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["user_identifier"].as_str() == Some(user))
        .collect()
}

fn brief(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            json!({
                "user_identifier": e["user_identifier"], "retry_attempt": e["retry_attempt"],
                "executed_at": e["executed_at"], "connectivity_status": e["connectivity_status"],
                "duration": e["duration"], "next_action_status": e["next_action_status"],
                "agent_phone_number": e["agent_phone_number"]
            })
        })
        .collect()
}

/// Judges rules 1 to 5 from the events; `weighted` are the numbers of the weights campaign
/// (two of the weight-3 connection, one of the weight-1 one).
async fn rules(
    v: &mut Verdicts,
    recv: &Receiver,
    ids: &std::collections::BTreeMap<&str, String>,
    weighted: [&String; 3],
) {
    let id_of = |label: &str| ids.get(label).map(String::as_str).unwrap_or_default();
    // Rule 1 and the retry gap.
    let ev = recv.wait(id_of("sim-retries"), 4, EVENT_WAIT).await;
    let busy = of_user(&ev, "busy");
    let connected = of_user(&ev, "connected");
    let attempts: Vec<Option<u64>> = busy.iter().map(|e| e["retry_attempt"].as_u64()).collect();
    v.judge(
        &RULE1,
        attempts == [Some(0), Some(1), Some(2)]
            && busy.last().is_some_and(|e| e["next_action_status"].is_null())
            && connected.len() == 1,
        Evidence::new().with("events", brief(&ev)),
        "the busy user: 3 events, retry_attempt 0, 1, 2, the last with next_action_status null; the connected user: 1 event",
    );
    let owned: Vec<Value> = busy.iter().map(|e| (*e).clone()).collect();
    let t = executed(&owned);
    v.judge(
        &RETRY_GAP,
        t.len() == 3 && t.windows(2).all(|w| w[1] - w[0] >= secs(300)),
        Evidence::new().with("executed_at", t.iter().map(|x| ts(*x)).collect::<Vec<_>>()),
        "retry_interval_minutes 5: each retry at least 300 s after the attempt before it",
    );

    // Rule 2.
    let ev = recv.wait(id_of("sim-rate"), 6, EVENT_WAIT).await;
    let t = executed(&ev);
    let gap = chrono::Duration::milliseconds(1999);
    v.judge(
        &RULE2,
        t.len() == 6 && t.windows(2).all(|w| w[1] - w[0] >= gap),
        Evidence::new().with("executed_at", t.iter().map(|x| ts(*x)).collect::<Vec<_>>()),
        "6 dials, successive executed_at at least 2 s apart",
    );

    // Rule 3: 20 users, 0.1 dials per second, a 120 s campaign: at most 13 dials.
    let ev = recv.wait(id_of("sim-budget"), 12, EVENT_WAIT).await;
    let t = executed(&ev);
    let first = t.first().copied();
    let ok = !t.is_empty()
        && t.len() <= 13
        && first.is_some_and(|f| t.iter().all(|x| *x - f < secs(120)));
    v.judge(
        &RULE3,
        ok,
        Evidence::new()
            .with("dials", t.len())
            .with("budget", 20)
            .with("executed_at", t.iter().map(|x| ts(*x)).collect::<Vec<_>>()),
        "between 1 and 13 dials (0.1 per second for 120 s), none after the end, so some of the 20 users are never dialled",
    );

    // Rule 4.
    let ev = recv.wait(id_of("sim-weights"), 12, EVENT_WAIT).await;
    let mut by_number = std::collections::BTreeMap::<String, i64>::new();
    for e in &ev {
        *by_number
            .entry(e["agent_phone_number"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let n = |i: usize| by_number.get(weighted[i].as_str()).copied().unwrap_or(0);
    let ok = ev.len() == 12
        && by_number.len() == 3
        && (n(0) + n(1) - 9).abs() <= 1
        && (n(0) - n(1)).abs() <= 1
        && (n(2) - 3).abs() <= 1;
    v.judge(
        &RULE4,
        ok,
        Evidence::new().with("dials_by_agent_number", json!(by_number)),
        "12 dials: 9 (±1) from the weight-3 connection, split evenly (±1) over its two numbers, 3 (±1) from the weight-1 one",
    );

    // Rule 5.
    let ev = recv.wait(id_of("sim-short"), 3, EVENT_WAIT).await;
    let off = recv.wait(id_of("sim-short-off"), 1, EVENT_WAIT).await;
    let short = of_user(&ev, "short");
    let long = of_user(&ev, "long");
    let ok = short.len() == 2
        && short[0]["next_action_status"] == json!("short_duration_retry")
        && short[0]["connectivity_status"] == json!("connected")
        && long.len() == 1
        && off.len() == 1;
    v.judge(
        &RULE5,
        ok,
        Evidence::new()
            .with("retry_on_short_duration", brief(&ev))
            .with("retry_on_busy_only", brief(&off)),
        "the 5 s call (threshold 10 s) retried once with next_action_status short_duration_retry, the 30 s call not; without short_duration in retry_on, the 5 s call not retried",
    );
}
