//! What the `sim` checks share: their definitions, what they create, the result of the
//! upload to an active campaign, and the two requests every step sends (move the clock, read
//! a campaign). `sim.rs` runs the timeline, `sim_rules.rs` judges it, `sim_states.rs` and
//! `sim_inbound.rs` add their own.

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::json;

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{Kind, Makes, ts};
use super::target::sim_clock_advance;
use crate::checks::CheckDef;

pub(super) const ACTIVATES: CheckDef = CheckDef::error(
    "sim.campaign_activates",
    "a campaign is scheduled until its start_timestamp and active from it",
);
pub(super) const ENDS: CheckDef = CheckDef::error(
    "sim.campaign_ends",
    "an active campaign is active until its end_timestamp and ended from it",
);
pub(super) const WINDOW: CheckDef = CheckDef::error(
    "sim.calling_window",
    "dials happen only inside allowed_schedule: none before it opens, the first as it opens, the last just before it closes, none after",
);
pub(super) const RULE1: CheckDef = CheckDef::error(
    "sim.rule1_attempts",
    "rule 1: every dial is an attempt; max_retries 2 gives an always-busy user exactly 3, a connected user 1",
);
pub(super) const RETRY_GAP: CheckDef = CheckDef::error(
    "sim.retry_interval",
    "a retry is dialled no sooner than retry_interval_minutes after the attempt before it, and within a minute of it",
);
pub(super) const RULE2: CheckDef = CheckDef::error(
    "sim.rule2_dial_rate",
    "rule 2: attempts_per_second paces dials: at 0.5, successive dials are 2 s apart (not sooner, not much later)",
);
pub(super) const RULE3: CheckDef = CheckDef::error(
    "sim.rule3_budget",
    "rule 3: when rate x window is below the budget, dialling goes on until the end and stops there with users left",
);
pub(super) const RULE4: CheckDef = CheckDef::error(
    "sim.rule4_weights",
    "rule 4: weights 3 and 1 split dials 75/25; the numbers of one connection are used equally",
);
pub(super) const RULE5: CheckDef = CheckDef::error(
    "sim.rule5_short_duration",
    "rule 5: a call shorter than threshold_seconds is retried when short_duration is in retry_on, not otherwise",
);
pub(super) const EVENTS: CheckDef = CheckDef::error(
    "sim.campaign_event_schema",
    "every campaign call event delivered matches the contract's schema (CampaignCallEvent) and carries its campaign's webhook_config.metadata as sent, retries included",
);
pub(super) const STOP_FILE: CheckDef = CheckDef::error(
    "sim.stop_file_excludes",
    "a stop_file cohort excludes its numbers from the campaign: the users in it are never dialled, the others are",
);
pub(super) const SIGNATURES: CheckDef = CheckDef::error(
    "sim.webhook_signatures",
    "every webhook delivery carries x-webhook-timestamp (Unix seconds of the target's clock) and x-webhook-signature, the hex HMAC-SHA256 of {timestamp}.{raw body} under --webhook-secret",
);
pub(super) const SIGNATURE_FORM: CheckDef = CheckDef::warning(
    "sim.webhook_signature_form",
    "the signature headers in the form the record assumes: x-webhook-signature lower-case hex, x-webhook-timestamp Unix seconds of the target's clock at the try (the simulated time on a simulated clock), not milliseconds nor another clock",
);
pub(super) const OUTBOUND_EVENT: CheckDef = CheckDef::error(
    "sim.outbound_event",
    "an instant outbound call with webhook_config sends its event there once it ends: its attempt_id, the metadata echoed, the status of the call's outcome (connected, busy, no_answer: three calls whose numbers decide it), the schema OutboundCallEvent",
);
pub(super) const RETRIED: CheckDef = CheckDef::error(
    "sim.webhook_retried",
    "a receiver that answers an event with 500 gets it again: the event of an instant outbound call, refused once, comes a second time (the same attempt_id, signed afresh)",
);
pub(super) const COHORT_ACTIVE: CheckDef = CheckDef::error(
    "sim.cohort_upload_active",
    "an active campaign takes a cohort upload (the spec: while active); it completes and its users are dialled",
);

const fn campaign(label: &'static str) -> Makes {
    Makes::new(Kind::Campaign, label, 1)
}

const fn cohort(label: &'static str) -> Makes {
    Makes::new(Kind::Cohort, label, 1)
}

pub(super) const ACTIVATION: Makes = campaign("sim-activation");
pub(super) const WINDOWED: Makes = campaign("sim-window");
pub(super) const RETRIES: Makes = campaign("sim-retries");
pub(super) const RATE: Makes = campaign("sim-rate");
pub(super) const BUDGET: Makes = campaign("sim-budget");
pub(super) const WEIGHTS: Makes = campaign("sim-weights");
pub(super) const SHORT: Makes = campaign("sim-short");
pub(super) const SHORT_OFF: Makes = campaign("sim-short-off");
pub(super) const STOPPED: Makes = campaign("sim-stop");
pub(super) const LATE_COHORT: Makes = campaign("sim-cohort-active");

/// The users of each campaign, streamed before its start (one cohort each, named after the
/// campaign), the stop file, and the upload to the active campaign.
pub(super) const USERS: Makes = Makes::new(Kind::Cohort, "sim-", 8);
pub(super) const STOP_LIST: Makes = cohort("sim-stop-list");
pub(super) const LATE_UPLOAD: Makes = cohort("sim-late-upload");

/// What the upload to an active campaign showed: the campaign as read first, the upload's
/// answer, the cohort once processed.
pub(super) struct LateUpload {
    pub(crate) read: Exchange,
    pub(crate) upload: Exchange,
    pub(crate) done: Exchange,
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
