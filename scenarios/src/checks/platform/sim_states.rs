//! The status changes of the `sim` group: the ones that start from a campaign that time has
//! moved (`active`, paused after its start, `ended`), so they need the simulation API.
//!
//! Five campaigns are created 3 minutes ahead of the target's clock; one is paused before
//! its start. The clock is moved 1 s past the start (`POST /sim/v1/clock/advance`), each
//! campaign is read (`active`, the paused one still `paused`), then paused, resumed or
//! cancelled; the clock is then moved past the shortest campaign's end, and every action
//! on that `ended` campaign must be refused.

use serde_json::json;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, secs, ts};
use super::sim::{advance_to, status as get};
use super::states::{campaign_action as action, status};
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

pub(super) const PAUSE_ACTIVE: CheckDef = CheckDef::error(
    "sim.campaign_pause_active",
    "pause of an active campaign makes it paused; it stays paused as the clock moves on",
);
pub(super) const RESUME_AFTER_START: CheckDef = CheckDef::error(
    "sim.campaign_resume_after_start",
    "a campaign paused before its start and resumed after it is active",
);
pub(super) const CANCEL_RUNNING: CheckDef = CheckDef::error(
    "sim.campaign_cancel_running",
    "cancel makes an active campaign and a campaign paused after its start cancelled",
);
pub(super) const ENDED_FINAL: CheckDef = CheckDef::warning(
    "sim.campaign_ended_is_final",
    "pause, resume and cancel of an ended campaign are refused with 409 invalid_status_transition (assumed); it stays ended",
);

/// The checks of this part, in table order.
pub(super) const CHECKS: [&CheckDef; 4] = [
    &PAUSE_ACTIVE,
    &RESUME_AFTER_START,
    &CANCEL_RUNNING,
    &ENDED_FINAL,
];

/// The error code of a refused status change (an assumed point of the contract).
pub const REFUSED_CODE: &str = "invalid_status_transition";

/// Whether `x` is a 409 with the platform's error shape and code [`REFUSED_CODE`].
fn refused(x: &Exchange) -> bool {
    x.status == 409 && x.body()["error"]["code"] == json!(REFUSED_CODE)
}

/// Runs the status-change checks.
pub(super) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let t = match cx.now().await {
        Ok(n) => n.at,
        Err(x) => return v.blocked_only(&CHECKS, "reading the simulated clock", x.evidence()),
    };
    let start = t + secs(180);
    let short_end = start + secs(120);
    let mut ids = Vec::new();
    for (label, end) in [
        ("sim-pause-active", start + secs(3600)),
        ("sim-resume-late", start + secs(3600)),
        ("sim-cancel-active", start + secs(3600)),
        ("sim-cancel-paused", start + secs(3600)),
        ("sim-ended", short_end),
    ] {
        let x = cx
            .create_campaign(fixtures::campaign(
                &cx.settings.agent,
                &cx.names.name(label),
                &cx.names.number(),
                start,
                end,
            ))
            .await;
        match x.str_field("campaign_id") {
            Some(id) => ids.push(id.to_string()),
            None => {
                return v.blocked_only(
                    &CHECKS,
                    &format!("creating the campaign {label}"),
                    x.evidence(),
                );
            }
        }
    }
    let [pause_id, resume_id, cancel_id, cancel_paused_id, ended_id] = &ids[..] else {
        unreachable!("five campaigns were created");
    };

    let early_pause = action(cx, resume_id, "pause").await;
    let moved = advance_to(cx, start + secs(1)).await;
    if !moved.is_success() || status(&early_pause) != Some("paused") {
        return v.blocked_only(
            &CHECKS,
            "pausing a scheduled campaign and moving the simulated clock past its start",
            Exchange::all(&[&early_pause, &moved]),
        );
    }

    // Pause from active; time (1 s and past the end of the shortest campaign) leaves it
    // paused.
    let before = get(cx, pause_id).await;
    let paused = action(cx, pause_id, "pause").await;
    let paused_get = get(cx, pause_id).await;

    // Resume after the start.
    let still_paused = get(cx, resume_id).await;
    let resumed = action(cx, resume_id, "resume").await;
    let resumed_get = get(cx, resume_id).await;
    v.judge(
        &RESUME_AFTER_START,
        status(&still_paused) == Some("paused")
            && status(&resumed) == Some("active")
            && status(&resumed_get) == Some("active"),
        Exchange::all(&[&early_pause, &moved, &still_paused, &resumed, &resumed_get])
            .with("start_timestamp", ts(start)),
        "paused before start_timestamp, still paused 1 s after it; {\"action\": \"resume\"} then answers and GETs \"status\": \"active\"",
    );

    // Cancel from active, and from paused after the start.
    let active = get(cx, cancel_id).await;
    let cancelled = action(cx, cancel_id, "cancel").await;
    let active2 = get(cx, cancel_paused_id).await;
    let paused2 = action(cx, cancel_paused_id, "pause").await;
    let cancelled2 = action(cx, cancel_paused_id, "cancel").await;
    let got = get(cx, cancel_id).await;
    let got2 = get(cx, cancel_paused_id).await;
    v.judge(
        &CANCEL_RUNNING,
        status(&active) == Some("active")
            && status(&cancelled) == Some("cancelled")
            && status(&got) == Some("cancelled")
            && status(&active2) == Some("active")
            && status(&paused2) == Some("paused")
            && status(&cancelled2) == Some("cancelled")
            && status(&got2) == Some("cancelled"),
        Exchange::all(&[
            &active,
            &cancelled,
            &got,
            &active2,
            &paused2,
            &cancelled2,
            &got2,
        ]),
        "active after the start, then \"status\": \"cancelled\" after {\"action\": \"cancel\"} (answer and GET); the same for a campaign paused after its start",
    );

    // Past the shortest campaign's end.
    let past_end = advance_to(cx, short_end + secs(1)).await;
    let ended = get(cx, ended_id).await;
    let paused_later = get(cx, pause_id).await;
    v.judge(
        &PAUSE_ACTIVE,
        status(&before) == Some("active")
            && status(&paused) == Some("paused")
            && status(&paused_get) == Some("paused")
            && past_end.is_success()
            && status(&paused_later) == Some("paused"),
        Exchange::all(&[&before, &paused, &paused_get, &past_end, &paused_later]),
        "active 1 s after start_timestamp; \"status\": \"paused\" after {\"action\": \"pause\"} (answer and GET), still paused once the clock moved 2 minutes on",
    );

    let mut calls = vec![past_end, ended.clone()];
    let mut all_refused = status(&ended) == Some("ended");
    for a in ["pause", "resume", "cancel"] {
        let x = action(cx, ended_id, a).await;
        all_refused &= refused(&x);
        calls.push(x);
    }
    let after = get(cx, ended_id).await;
    all_refused &= status(&after) == Some("ended");
    calls.push(after);
    let refs: Vec<&Exchange> = calls.iter().collect();
    v.judge(
        &ENDED_FINAL,
        all_refused,
        Exchange::all(&refs).with("end_timestamp", ts(short_end)),
        format!(
            "\"status\": \"ended\" after end_timestamp; each action a 409 {{\"error\": {{\"code\": \"{REFUSED_CODE}\", ...}}}}; still ended on GET"
        ),
    );
}
