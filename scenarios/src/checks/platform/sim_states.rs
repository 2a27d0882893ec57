//! The status changes of the `sim` group: the ones that start from a campaign that time has
//! moved (`active`, paused after its start, `ended`), so they need the simulation API.
//!
//! Five campaigns are created 3 minutes ahead of the target's clock; one is paused before
//! its start. The clock is moved 1 s past the start (`POST /sim/v1/clock/advance`), each
//! campaign is read (`active`, the paused one still `paused`), a PATCH of an active one is
//! refused, then they are paused, resumed or cancelled; the clock is then moved to 1 s
//! before and 1 s after the shortest campaign's end (`active`, then `ended`), and every
//! action and a PATCH on that `ended` campaign must be refused.

use serde_json::json;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes, secs, ts};
use super::sim_defs::{advance_to, status as get};
use super::states::{campaign_action as action, describe, is_4xx, status, status_value};
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
pub(super) const ENDED_FINAL: CheckDef = CheckDef::error(
    "sim.campaign_ended_is_final",
    "a campaign is active 1 s before its end and ended 1 s after; pause, resume and cancel of it are then refused (4xx) and it stays ended",
);
pub(super) const ENDED_409: CheckDef = CheckDef::warning(
    "sim.campaign_ended_refusals_are_409",
    "the refusals of actions on an ended campaign are 409 invalid_status_transition (assumed)",
);
pub(super) const PATCH_RUNNING: CheckDef = CheckDef::error(
    "sim.campaign_patch_running_refused",
    "PATCH of an active and of an ended campaign is refused (4xx) and changes nothing (PATCH only while scheduled or paused)",
);

/// The checks of this part, in table order.
pub(super) const CHECKS: [&CheckDef; 6] = [
    &PAUSE_ACTIVE,
    &RESUME_AFTER_START,
    &CANCEL_RUNNING,
    &ENDED_FINAL,
    &ENDED_409,
    &PATCH_RUNNING,
];

/// What this part creates: five campaigns, shared by its checks.
pub(super) const MADE: [Makes; 5] = [
    Makes::new(Kind::Campaign, "sim-pause-active", 1),
    Makes::new(Kind::Campaign, "sim-resume-late", 1),
    Makes::new(Kind::Campaign, "sim-cancel-active", 1),
    Makes::new(Kind::Campaign, "sim-cancel-paused", 1),
    Makes::new(Kind::Campaign, "sim-ended", 1),
];

/// The error code of a refused status change (an assumed point of the contract).
pub(crate) const REFUSED_CODE: &str = "invalid_status_transition";

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
    for (i, made) in MADE.iter().enumerate() {
        let (label, end) = (
            made.label,
            if i == 4 {
                short_end
            } else {
                start + secs(3600)
            },
        );
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

    // PATCH of an active campaign; then pause from active; time (1 s and past the end of
    // the shortest campaign) leaves it paused.
    let before = get(cx, pause_id).await;
    let patched_active = describe(cx, pause_id, "patched while active").await;
    let paused = action(cx, pause_id, "pause").await;
    let paused_get = get(cx, pause_id).await;

    // Resume after the start.
    let still_paused = get(cx, resume_id).await;
    let resumed = action(cx, resume_id, "resume").await;
    let resumed_get = get(cx, resume_id).await;
    v.varied(
        &RESUME_AFTER_START,
        "status",
        [status_value(&still_paused), status_value(&resumed_get)],
    );
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
    v.varied(
        &CANCEL_RUNNING,
        "status",
        [
            status_value(&active),
            status_value(&paused2),
            status_value(&got),
        ],
    );
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

    // Either side of the shortest campaign's end.
    let before_end = advance_to(cx, short_end - secs(1)).await;
    let still_active = get(cx, ended_id).await;
    let past_end = advance_to(cx, short_end + secs(1)).await;
    let ended = get(cx, ended_id).await;
    let paused_later = get(cx, pause_id).await;
    v.varied(
        &PAUSE_ACTIVE,
        "status",
        [status_value(&before), status_value(&paused_later)],
    );
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

    let patched_ended = describe(cx, ended_id, "patched while ended").await;
    let mut refusals = Vec::new();
    for a in ["pause", "resume", "cancel"] {
        refusals.push(action(cx, ended_id, a).await);
    }
    let after = get(cx, ended_id).await;
    v.varied(
        &ENDED_FINAL,
        "status",
        [status_value(&still_active), status_value(&ended)],
    );
    let mut calls = vec![&before_end, &still_active, &past_end, &ended];
    calls.extend(refusals.iter());
    calls.push(&after);
    v.judge(
        &ENDED_FINAL,
        status(&still_active) == Some("active")
            && status(&ended) == Some("ended")
            && refusals.iter().all(is_4xx)
            && status(&after) == Some("ended"),
        Exchange::all(&calls).with("end_timestamp", ts(short_end)),
        "\"status\": \"active\" 1 s before end_timestamp and \"ended\" 1 s after it; a 4xx for each action; still ended on GET",
    );
    v.varied(
        &ENDED_409,
        "status",
        [before.status]
            .into_iter()
            .chain(refusals.iter().map(|x| x.status)),
    );
    v.judge(
        &ENDED_409,
        refusals.iter().all(refused),
        Exchange::all(&refusals.iter().collect::<Vec<_>>()),
        format!(
            "409 {{\"error\": {{\"code\": \"{REFUSED_CODE}\", ...}}}} for each action on the ended campaign"
        ),
    );

    let text = |x: &Exchange| x.body()["description"].clone();
    v.varied(
        &PATCH_RUNNING,
        "description",
        [
            text(&before),
            json!("patched while active"),
            json!("patched while ended"),
        ],
    );
    v.judge(
        &PATCH_RUNNING,
        is_4xx(&patched_active)
            && text(&paused_get) == text(&before)
            && is_4xx(&patched_ended)
            && text(&after) == text(&ended),
        Exchange::all(&[
            &before,
            &patched_active,
            &paused_get,
            &ended,
            &patched_ended,
            &after,
        ]),
        "a 4xx (409 in this contract) for PATCH of the active campaign and of the ended one, each description unchanged on the next read",
    );
}
