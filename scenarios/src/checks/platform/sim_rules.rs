//! The judging half of the `sim` group's campaign timeline: once the clock has moved
//! through every campaign's life, the call events each campaign sent are held against the
//! calling window, rules 1 to 5, the retry interval, the stop file and the upload to an
//! active campaign. Each judgement records what it saw vary (the users dialled and not, the
//! attempts per user, the instants against the window), so that a timeline that showed
//! nothing cannot pass.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, magic_number, secs, ts};
use super::receiver::{REFUSE_ONCE, Receiver};
use super::sim_defs::{
    BUDGET, COHORT_ACTIVE, EVENTS, LATE_COHORT, LateUpload, OUTBOUND_EVENT, RATE, RETRIED, RETRIES,
    RETRY_GAP, RULE1, RULE2, RULE3, RULE4, RULE5, SHORT, SHORT_OFF, STOP_FILE, STOPPED, WEIGHTS,
    WINDOW, WINDOWED,
};
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::Evidence;

/// How long to wait for webhooks a target delivers after the clock moved.
const EVENT_WAIT: Duration = Duration::from_secs(10);

/// Users of the window campaign (all never answer; no retries).
pub(super) const WINDOW_USERS: u32 = 10;
/// Its dial rate: a dial every 9.09 s, so that a one-minute window holds 7 and the next
/// would fall 3.6 s after it closes.
pub(super) const WINDOW_RATE: f64 = 0.11;
/// The retry interval of the retries campaign.
pub(super) const RETRY_MINUTES: u32 = 5;
/// Users of the budget campaign (rule 3): more than 0.1 dials a second reach in 120 s.
pub(super) const BUDGET_USERS: u32 = 20;

/// What the campaigns' timeline left to judge.
pub(super) struct Timeline<'a> {
    /// The events received.
    pub(crate) recv: &'a Receiver,
    /// The create answer of each campaign, by label.
    pub(crate) created: &'a BTreeMap<&'static str, Exchange>,
    /// The window campaign's window.
    pub(crate) open: DateTime<Utc>,
    /// Its end.
    pub(crate) close: DateTime<Utc>,
    /// The window campaign's events received by 1 s before the window opened.
    pub(crate) dials_before_open: usize,
    /// The end of the budget campaign.
    pub(crate) budget_end: DateTime<Utc>,
}

impl Timeline<'_> {
    fn id(&self, label: &str) -> &str {
        self.created
            .get(label)
            .and_then(|x| x.str_field("campaign_id"))
            .unwrap_or_default()
    }

    /// The campaign's create request, as evidence: what set the rule judged.
    fn request(&self, label: &str) -> Value {
        self.created
            .get(label)
            .map_or(Value::Null, |x| x.sent.to_value())
    }

    async fn events(&self, label: &str, n: usize) -> Vec<Value> {
        self.recv.wait(self.id(label), n, EVENT_WAIT).await
    }
}

/// The three agent numbers of the weights campaign: two of the weight-3 connection, one of
/// the weight-1 one.
pub(super) fn weighted_numbers(cx: &Ctx) -> [String; 3] {
    [cx.names.number(), cx.names.number(), cx.names.number()]
}

/// The users of the stop-file campaign: `stop-b` is also in its stop file.
pub(super) fn stop_users() -> [(String, String); 3] {
    [
        (magic_number(8, 50), "stop-a".into()),
        (magic_number(8, 51), "stop-b".into()),
        (magic_number(8, 52), "stop-c".into()),
    ]
}

/// Streams the stop file of the campaign `id` (before its start): `stop-b`'s number.
pub(super) async fn stop_file(cx: &Ctx, id: &str) -> Exchange {
    let [_, (excluded, _), _] = stop_users();
    cx.send(
        Method::POST,
        &cx.paths.cohorts(Parent::Campaign(id), &["stream"]),
        json!({
            "name": cx.names.name(super::sim_defs::STOP_LIST.label),
            "cohort_category": "stop_file",
            "users": [{"phone_number": excluded}]
        }),
    )
    .await
}

fn executed(events: &[Value]) -> Vec<DateTime<Utc>> {
    events
        .iter()
        .filter_map(|e| e["executed_at"].as_str())
        .filter_map(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .collect()
}

fn times(t: &[DateTime<Utc>]) -> Vec<String> {
    t.iter().map(|x| ts(*x)).collect()
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

/// Judges the window, rules 1 to 5, the retry interval and the events' schema.
pub(super) async fn judge(cx: &Ctx, v: &mut Verdicts, tl: &Timeline<'_>) {
    window(v, tl).await;
    retries(v, tl).await;
    rate(v, tl).await;
    budget(v, tl).await;
    weights(v, tl).await;
    short(v, tl).await;
    let all: Vec<Value> = tl
        .recv
        .all()
        .into_iter()
        .filter(|e| e.get("campaign_id").is_some())
        .collect();
    // The metadata each campaign was created with, by its id.
    let sent: BTreeMap<&str, Value> = tl
        .created
        .values()
        .filter_map(|x| {
            let metadata =
                x.sent.body.as_ref()?["app_config"]["webhook_config"]["metadata"].clone();
            Some((x.str_field("campaign_id")?, metadata))
        })
        .collect();
    let bad: Vec<Value> = all
        .iter()
        .filter_map(|e| {
            let mut errs: Vec<Value> = cx
                .schemas
                .violations("CampaignCallEvent", e)
                .into_iter()
                .map(Value::from)
                .collect();
            if let Some(want) = e["campaign_id"].as_str().and_then(|id| sent.get(id))
                && e["metadata"] != *want
            {
                errs.push(json!(format!(
                    "metadata {} where the campaign's webhook_config.metadata is {want}",
                    e["metadata"]
                )));
            }
            (!errs.is_empty()).then(|| json!({"event": e, "violations": errs}))
        })
        .take(5)
        .collect();
    // The request that set up the campaign of the first event that does not match.
    let request = bad
        .first()
        .and_then(|b| b["event"]["campaign_id"].as_str())
        .and_then(|id| {
            tl.created
                .values()
                .find(|x| x.str_field("campaign_id") == Some(id))
        })
        .map_or(Value::Null, |x| x.sent.to_value());
    if let Some(first) = all.first() {
        v.varied(
            &EVENTS,
            "schema",
            cx.schemas.discriminates("CampaignCallEvent", first),
        );
    }
    v.judge(
        &EVENTS,
        !all.is_empty() && bad.is_empty(),
        Evidence::new()
            .with("request", request)
            .with("events", all.len())
            .with("not_matching", bad),
        "at least one campaign event, each matching the schema CampaignCallEvent, its metadata the campaign's webhook_config.metadata as sent (retries too)",
    );
}

async fn window(v: &mut Verdicts, tl: &Timeline<'_>) {
    let period = secs(1).as_seconds_f64() / WINDOW_RATE;
    let expected = (60.0 * WINDOW_RATE).ceil() as usize;
    let events = tl.events(WINDOWED.label, expected).await;
    let t = executed(&events);
    let (open, close) = (tl.open, tl.close);
    let first_prompt = t
        .first()
        .is_some_and(|f| *f >= open && *f <= open + secs(1));
    let last_late = t
        .last()
        .is_some_and(|l| (close - *l).as_seconds_f64() <= period && *l < close);
    let phases = [
        (tl.dials_before_open == 0 && t.iter().all(|x| *x >= open)).then_some("none before open"),
        first_prompt.then_some("first as it opens"),
        last_late.then_some("last just before close"),
        t.iter().all(|x| *x < close).then_some("none after close"),
    ];
    v.varied(&WINDOW, "looked", phases.into_iter().flatten());
    v.judge(
        &WINDOW,
        tl.dials_before_open == 0
            && t.len() == expected
            && first_prompt
            && last_late
            && t.iter().all(|x| *x >= open && *x < close),
        Evidence::new()
            .with("request", tl.request(WINDOWED.label))
            .with("window", format!("{} to {} UTC", ts(open), ts(close)))
            .with("dials_before_open", tl.dials_before_open)
            .with("executed_at", times(&t)),
        format!(
            "no dial before the window opens; {expected} dials {period:.2} s apart inside it (of {WINDOW_USERS} users), the first within 1 s of the opening, the last within {period:.2} s of the closing; none at or after it"
        ),
    );
}

async fn retries(v: &mut Verdicts, tl: &Timeline<'_>) {
    let ev = tl.events(RETRIES.label, 4).await;
    let busy = of_user(&ev, "busy");
    let connected = of_user(&ev, "connected");
    let attempts: Vec<Option<u64>> = busy.iter().map(|e| e["retry_attempt"].as_u64()).collect();
    v.varied(&RULE1, "dials per user", [busy.len(), connected.len()]);
    v.judge(
        &RULE1,
        attempts == [Some(0), Some(1), Some(2)]
            && busy.last().is_some_and(|e| e["next_action_status"].is_null())
            && connected.len() == 1,
        Evidence::new()
            .with("request", tl.request(RETRIES.label))
            .with("events", brief(&ev)),
        "the busy user: 3 events, retry_attempt 0, 1, 2, the last with next_action_status null; the connected user: 1 event",
    );
    let owned: Vec<Value> = busy.iter().map(|e| (*e).clone()).collect();
    let t = executed(&owned);
    let least = secs(i64::from(RETRY_MINUTES) * 60);
    let gaps_ok = t
        .windows(2)
        .all(|w| w[1] - w[0] >= least && w[1] - w[0] <= least + secs(60));
    v.varied(&RETRY_GAP, "retry_attempt", attempts.into_iter().flatten());
    v.judge(
        &RETRY_GAP,
        t.len() == 3 && gaps_ok,
        Evidence::new()
            .with("request", tl.request(RETRIES.label))
            .with("executed_at", times(&t)),
        format!(
            "retry_interval_minutes {RETRY_MINUTES}: each retry at least {} s after the attempt before it, and at most a minute later than that",
            least.num_seconds()
        ),
    );
}

async fn rate(v: &mut Verdicts, tl: &Timeline<'_>) {
    let ev = tl.events(RATE.label, 6).await;
    let t = executed(&ev);
    let gap = chrono::Duration::milliseconds(1999);
    let span_ok = t
        .first()
        .zip(t.last())
        .is_some_and(|(f, l)| *l - *f <= secs(12));
    v.varied(&RULE2, "executed_at", times(&t));
    v.judge(
        &RULE2,
        t.len() == 6 && t.windows(2).all(|w| w[1] - w[0] >= gap) && span_ok,
        Evidence::new()
            .with("request", tl.request(RATE.label))
            .with("executed_at", times(&t)),
        "6 dials, successive executed_at at least 2 s apart, all 6 within 12 s",
    );
}

async fn budget(v: &mut Verdicts, tl: &Timeline<'_>) {
    // 0.1 dials per second for 120 s: 12 dials, the last 10 s before the end.
    let ev = tl.events(BUDGET.label, 12).await;
    let t = executed(&ev);
    let end = tl.budget_end;
    let to_end = t.last().map(|l| end - *l);
    let ok = !t.is_empty()
        && t.len() <= 13
        && t.iter().all(|x| *x < end)
        && to_end.is_some_and(|d| d <= secs(10));
    let left = (BUDGET_USERS as usize).saturating_sub(t.len());
    let kinds = [
        (!t.is_empty()).then_some("dialled"),
        (left > 0).then_some("never dialled"),
    ];
    v.varied(&RULE3, "users", kinds.into_iter().flatten());
    v.judge(
        &RULE3,
        ok,
        Evidence::new()
            .with("request", tl.request(BUDGET.label))
            .with("dials", t.len())
            .with("budget", BUDGET_USERS)
            .with("end_timestamp", ts(end))
            .with("executed_at", times(&t)),
        format!(
            "at most 13 dials (0.1 per second for 120 s), the last within 10 s before end_timestamp and none at or after it, so some of the {BUDGET_USERS} users are never dialled"
        ),
    );
}

async fn weights(v: &mut Verdicts, tl: &Timeline<'_>) {
    let request = tl.request(WEIGHTS.label);
    let configs = &request["body"]["app_config"]["connection_configs"];
    let number = |c: usize, i: usize| {
        configs[c]["phone_numbers"][i]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let weighted = [number(0, 0), number(0, 1), number(1, 0)];
    let ev = tl.events(WEIGHTS.label, 12).await;
    let mut by_number = BTreeMap::<String, i64>::new();
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
    v.varied(&RULE4, "agent_phone_number", by_number.keys().cloned());
    v.judge(
        &RULE4,
        ok,
        Evidence::new()
            .with("request", request)
            .with("dials_by_agent_number", json!(by_number)),
        "12 dials: 9 (±1) from the weight-3 connection, split evenly (±1) over its two numbers, 3 (±1) from the weight-1 one",
    );
}

async fn short(v: &mut Verdicts, tl: &Timeline<'_>) {
    let ev = tl.events(SHORT.label, 3).await;
    let off = tl.events(SHORT_OFF.label, 1).await;
    let short = of_user(&ev, "short");
    let long = of_user(&ev, "long");
    let ok = short.len() == 2
        && short[0]["next_action_status"] == json!("short_duration_retry")
        && short[0]["connectivity_status"] == json!("connected")
        && long.len() == 1
        && off.len() == 1;
    v.varied(&RULE5, "dials of the short call", [short.len(), off.len()]);
    v.judge(
        &RULE5,
        ok,
        Evidence::new()
            .with("request", tl.request(SHORT.label))
            .with("retry_on_short_duration", brief(&ev))
            .with("retry_on_busy_only", brief(&off)),
        "the 5 s call (threshold 10 s) retried once with next_action_status short_duration_retry, the 30 s call not; without short_duration in retry_on, the 5 s call not retried",
    );
}

/// Judges the stop file: `stop-b` never dialled, `stop-a` and `stop-c` dialled.
pub(super) async fn judge_stop_file(v: &mut Verdicts, tl: &Timeline<'_>, stop: &Exchange) {
    let ev = tl.events(STOPPED.label, 2).await;
    let dialled = |u: &str| !of_user(&ev, u).is_empty();
    let seen: Vec<&str> = ["stop-a", "stop-b", "stop-c"]
        .into_iter()
        .map(|u| {
            if dialled(u) {
                "dialled"
            } else {
                "never dialled"
            }
        })
        .collect();
    v.varied(&STOP_FILE, "users", seen);
    v.judge(
        &STOP_FILE,
        stop.is_success() && dialled("stop-a") && dialled("stop-c") && !dialled("stop-b"),
        Evidence::new()
            .with("request", tl.request(STOPPED.label))
            .with("stop_file", Value::Object(stop.evidence().0))
            .with("events", brief(&ev)),
        "the stop file accepted (2xx) before the start; stop-a and stop-c dialled, stop-b (in the stop file) never",
    );
}

/// Judges the upload to the active campaign: accepted, completed, its 3 valid users dialled.
pub(super) async fn judge_late_upload(v: &mut Verdicts, tl: &Timeline<'_>, late: &LateUpload) {
    let ev = tl.events(LATE_COHORT.label, 3).await;
    v.varied(
        &COHORT_ACTIVE,
        "cohort status",
        [
            late.upload.body()["status"].clone(),
            late.done.body()["status"].clone(),
        ],
    );
    v.judge(
        &COHORT_ACTIVE,
        late.read.str_field("status") == Some("active")
            && late.upload.str_field("status") == Some("processing")
            && late.done.str_field("status") == Some("completed")
            && ev.len() == 3,
        Exchange::all(&[&late.read, &late.upload, &late.done]).with("events", brief(&ev)),
        "the campaign active 1 s after its start; the upload answered 200 \"status\": \"processing\" and completed; its 3 valid users dialled once each",
    );
}

/// The instant outbound calls placed, each to a user whose outcome the simulated telephony's
/// magic number decides, with the status its event must carry: one who answers (90 s), one
/// always busy, one who never answers.
pub(super) const OUTBOUND_OUTCOMES: [(u8, &str); 3] =
    [(0, "connected"), (1, "busy"), (2, "no_answer")];

/// The instant outbound calls placed: those of [`OUTBOUND_OUTCOMES`], then one whose
/// receiver refuses its event once.
pub(super) struct OutboundCalls {
    outcomes: Vec<Exchange>,
    refused_once: Exchange,
}

/// Places the instant outbound calls of [`OUTBOUND_OUTCOMES`], their events to `recv`, and
/// one more (a user who answers) whose event `recv` answers 500 the first time.
pub(super) async fn outbound_calls(cx: &Ctx, recv: &Receiver) -> OutboundCalls {
    let call = |yy: u8, tag: String| async move {
        let mut body = fixtures::outbound(
            &cx.settings.agent,
            &cx.names.number(),
            &magic_number(yy, 400),
        );
        body["webhook_config"] =
            json!({"url": recv.url(&tag), "metadata": {"run": cx.names.run()}});
        cx.send(Method::POST, &cx.paths.outbounds(), body).await
    };
    let mut outcomes = Vec::new();
    for (yy, _) in OUTBOUND_OUTCOMES {
        outcomes.push(call(yy, "outbound".into()).await);
    }
    let refused_once = call(0, format!("{REFUSE_ONCE}-outbound")).await;
    OutboundCalls {
        outcomes,
        refused_once,
    }
}

/// Judges the outbound calls' events: each its attempt's, the metadata echoed, the status
/// of the outcome its number decides, the schema.
pub(super) async fn judge_outbound(
    cx: &Ctx,
    v: &mut Verdicts,
    tl: &Timeline<'_>,
    placed: &OutboundCalls,
) {
    judge_retried(v, tl, &placed.refused_once).await;
    let calls = &placed.outcomes;
    let mut ok = calls.len() == OUTBOUND_OUTCOMES.len();
    let mut shown = Vec::new();
    let mut statuses = Vec::new();
    for (call, (_, want)) in calls.iter().zip(OUTBOUND_OUTCOMES) {
        let attempt = call.str_field("attempt_id").unwrap_or_default();
        let event = if attempt.is_empty() {
            None
        } else {
            tl.recv.wait_attempt(attempt, EVENT_WAIT).await
        };
        let sent = &call
            .sent
            .body
            .as_ref()
            .map_or(Value::Null, |b| b["webhook_config"].clone());
        ok &= match &event {
            Some(e) => {
                v.varied(
                    &OUTBOUND_EVENT,
                    "schema",
                    cx.schemas.discriminates("OutboundCallEvent", e),
                );
                statuses.push(e["status"].clone());
                cx.schemas.violations("OutboundCallEvent", e).is_empty()
                    && e["webhook_config"]["metadata"] == sent["metadata"]
                    && e["status"] == json!(want)
            }
            None => false,
        };
        shown.push(json!({
            "call": call.evidence().0,
            "expected_status": want,
            "event": event.unwrap_or(Value::Null),
        }));
    }
    v.varied(&OUTBOUND_EVENT, "status", statuses);
    v.judge(
        &OUTBOUND_EVENT,
        ok,
        Evidence::new().with("calls", shown),
        "one event for each attempt_id answered, its \"status\" the outcome the number decides (\"connected\" for a user who answers, \"busy\" for one always busy, \"no_answer\" for one who never answers), webhook_config.metadata as sent, matching the schema OutboundCallEvent",
    );
}

/// Judges the call whose event the receiver answered 500 the first time: it came again, the
/// same attempt's event, signed afresh. The clock has moved hours since (the timeline's
/// steps), far past any backoff.
async fn judge_retried(v: &mut Verdicts, tl: &Timeline<'_>, call: &Exchange) {
    let attempt = call.str_field("attempt_id").unwrap_or_default();
    let got = match attempt {
        "" => Vec::new(),
        a => tl.recv.wait_deliveries(a, 2, EVENT_WAIT).await,
    };
    let shown: Vec<Value> = got
        .iter()
        .map(|d| {
            json!({
                "answered": d.answered,
                "x-webhook-timestamp": d.timestamp,
                "event": serde_json::from_slice::<Value>(&d.body).unwrap_or(Value::Null),
            })
        })
        .collect();
    v.varied(&RETRIED, "answered", got.iter().map(|d| d.answered));
    v.judge(
        &RETRIED,
        got.len() >= 2 && got[0].answered == 500 && got[1].signature.is_some(),
        call.evidence().with("deliveries", shown),
        "the event of the call's attempt_id delivered, answered 500, and delivered again (a non-2xx answer is retried)",
    );
}
