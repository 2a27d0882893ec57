//! Campaign bodies: create, patch, status.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

use super::patch::Patch;
use super::{ALLOWED_SCHEDULE_KEYS, Ctx, Options, limits};
use crate::clock::format_instant;
use crate::error::{ErrorType, Loc, ValidationErrors};
use crate::model::{CampaignSpec, RetryPolicy, WeightedConnection};
use crate::wire::{AppType, CampaignAction, RetryOutcome};

const APP_TYPES: &[(&str, AppType)] = &[("agent", AppType::Agent)];

const CAMPAIGN_ACTIONS: &[(&str, CampaignAction)] = &[
    ("pause", CampaignAction::Pause),
    ("resume", CampaignAction::Resume),
    ("cancel", CampaignAction::Cancel),
];

const RETRY_OUTCOMES: &[(&str, RetryOutcome)] = &[
    ("busy", RetryOutcome::Busy),
    ("no_answer", RetryOutcome::NoAnswer),
    ("failed", RetryOutcome::Failed),
    ("short_duration", RetryOutcome::ShortDuration),
    ("provider_error", RetryOutcome::ProviderError),
    ("internal_error", RetryOutcome::InternalError),
];

const CREATE_KEYS: &[&str] = &[
    "name",
    "description",
    "start_timestamp",
    "end_timestamp",
    "allowed_schedule",
    "app_config",
];
const SCHEDULE_KEYS: &[&str] = &[
    "timezone",
    "allowed_days",
    "allowed_start_time",
    "allowed_end_time",
];
const APP_CONFIG_KEYS: &[&str] = &[
    "app_id",
    "app_version",
    "app_type",
    "attempts_per_second",
    "connection_configs",
    "retry_config",
    "webhook_config",
];
const CONNECTION_KEYS: &[&str] = &["connection_id", "phone_numbers", "weight"];
const RETRY_KEYS: &[&str] = &[
    "max_retries",
    "retry_on",
    "threshold_seconds",
    "retry_interval_minutes",
];

/// Checks a campaign create body at time `now` (for the start and end rules).
pub fn campaign_create(
    body: &Value,
    now: DateTime<Utc>,
    opts: Options,
) -> Result<CampaignSpec, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let spec = create(&mut c, body, Some(now));
    c.into_result(spec)
}

/// The create rules without those that depend on the time of creation: for rebuilding a
/// stored campaign.
pub(crate) fn campaign_create_unchecked_times(
    body: &Value,
    opts: Options,
) -> Result<CampaignSpec, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let spec = create(&mut c, body, None);
    c.into_result(spec)
}

fn create(c: &mut Ctx, body: &Value, now: Option<DateTime<Utc>>) -> Option<CampaignSpec> {
    let loc = Loc::body();
    let m = c.object(body, &loc, CREATE_KEYS)?;
    let name = c
        .required(m, "name", &loc)
        .and_then(|v| c.name(v, &loc.at("name")));
    let description_v = Ctx::optional(m, "description");
    let description = c.description(description_v, &loc.at("description"));
    let description_ok = description_v.is_none() || description.is_some();
    let start = c
        .required(m, "start_timestamp", &loc)
        .and_then(|v| c.timestamp(v, &loc.at("start_timestamp")));
    let end = c
        .required(m, "end_timestamp", &loc)
        .and_then(|v| c.timestamp(v, &loc.at("end_timestamp")));
    if let (Some(now), Some(start)) = (now, start) {
        check_start(c, start, now, &loc.at("start_timestamp"));
    }
    if let (Some(start), Some(end)) = (start, end) {
        check_end(c, start, end, &loc.at("end_timestamp"));
    }
    let window = c.required(m, "allowed_schedule", &loc).and_then(|v| {
        let l = loc.at("allowed_schedule");
        let sm = c.object(v, &l, SCHEDULE_KEYS)?;
        c.window(sm, &l, ALLOWED_SCHEDULE_KEYS)
    });
    let app = c
        .required(m, "app_config", &loc)
        .and_then(|v| app_config(c, v, &loc.at("app_config")));
    let app = app?;
    (description_ok).then_some(())?;
    Some(CampaignSpec {
        name: name?,
        description,
        start: start?,
        end: end?,
        window: window?,
        app_id: app.app_id,
        app_version: app.app_version,
        app_type: app.app_type,
        attempts_per_second: app.attempts_per_second,
        connections: app.connections,
        retry: app.retry,
        webhook: app.webhook,
    })
}

struct AppConfig {
    app_id: String,
    app_version: i64,
    app_type: AppType,
    attempts_per_second: f64,
    connections: Vec<WeightedConnection>,
    retry: RetryPolicy,
    webhook: Option<crate::model::WebhookTarget>,
}

fn app_config(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<AppConfig> {
    let m = c.object(v, loc, APP_CONFIG_KEYS)?;
    let app_id = c
        .required(m, "app_id", loc)
        .and_then(|v| c.nonempty_string(v, &loc.at("app_id")));
    let app_version = c
        .required(m, "app_version", loc)
        .and_then(|v| c.app_version(v, &loc.at("app_version")));
    let app_type = match Ctx::optional(m, "app_type") {
        Some(v) => c.choice(v, &loc.at("app_type"), APP_TYPES),
        None => Some(AppType::Agent),
    };
    let rate = c
        .required(m, "attempts_per_second", loc)
        .and_then(|v| rate(c, v, &loc.at("attempts_per_second")));
    let connections = c
        .required(m, "connection_configs", loc)
        .and_then(|v| connections(c, v, &loc.at("connection_configs")));
    let retry = match Ctx::optional(m, "retry_config") {
        Some(v) => retry_in(c, v, &loc.at("retry_config"), &RetryPolicy::default()),
        None => Some(RetryPolicy::default()),
    };
    let webhook = match Ctx::optional(m, "webhook_config") {
        Some(v) => Some(c.webhook(v, &loc.at("webhook_config"))?),
        None => None,
    };
    Some(AppConfig {
        app_id: app_id?,
        app_version: app_version?,
        app_type: app_type?,
        attempts_per_second: rate?,
        connections: connections?,
        retry: retry?,
        webhook,
    })
}

fn rate(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<f64> {
    let x = c.number_in(v, loc, limits::RATE_MIN, limits::RATE_MAX)?;
    x.is_finite().then_some(x)
}

fn connections(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<Vec<WeightedConnection>> {
    let items = c.array_len(v, loc, limits::CONNECTION_CONFIGS_MIN, None)?;
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        match connection(c, item, &loc.at(i)) {
            Some(conn) => out.push(conn),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn connection(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<WeightedConnection> {
    let m = c.object(v, loc, CONNECTION_KEYS)?;
    let connection_id = c
        .required(m, "connection_id", loc)
        .and_then(|v| c.nonempty_string(v, &loc.at("connection_id")));
    let phone_numbers = c
        .required(m, "phone_numbers", loc)
        .and_then(|v| c.e164_list(v, &loc.at("phone_numbers")));
    let weight = c
        .required(m, "weight", loc)
        .and_then(|v| c.u32_in(v, &loc.at("weight"), limits::WEIGHT_MIN, limits::WEIGHT_MAX));
    Some(WeightedConnection {
        connection_id: connection_id?,
        phone_numbers: phone_numbers?,
        weight: weight?,
    })
}

/// Checks a `retry_config` object at `loc`. Fields left out keep the values of `base`
/// (the defaults when `None`).
pub fn retry_policy(
    v: &Value,
    loc: &Loc,
    base: Option<&RetryPolicy>,
    opts: Options,
) -> Result<RetryPolicy, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let default = RetryPolicy::default();
    let p = retry_in(&mut c, v, loc, base.unwrap_or(&default));
    c.into_result(p)
}

fn retry_in(c: &mut Ctx, v: &Value, loc: &Loc, base: &RetryPolicy) -> Option<RetryPolicy> {
    let m = c.object(v, loc, RETRY_KEYS)?;
    let max_retries = match Ctx::optional(m, "max_retries") {
        Some(v) => c.u32_in(v, &loc.at("max_retries"), 0, limits::MAX_RETRIES_MAX),
        None => Some(base.max_retries),
    };
    let threshold = match Ctx::optional(m, "threshold_seconds") {
        Some(v) => threshold(c, v, &loc.at("threshold_seconds")).map(Some),
        None => Some(None),
    };
    let retry_on = match Ctx::optional(m, "retry_on") {
        Some(v) => retry_on(c, v, &loc.at("retry_on")),
        None => Some((base.retry_on.clone(), None)),
    };
    let interval = match Ctx::optional(m, "retry_interval_minutes") {
        Some(v) => c.u32_in(
            v,
            &loc.at("retry_interval_minutes"),
            limits::RETRY_INTERVAL_MIN,
            limits::RETRY_INTERVAL_MAX,
        ),
        None => Some(base.retry_interval_minutes),
    };
    let (retry_on, object_threshold) = retry_on?;
    let threshold = threshold?;
    let threshold_seconds = match (threshold, object_threshold) {
        (Some(a), Some(b)) if a != b => {
            c.value_error(
                &loc.at("threshold_seconds"),
                format_args!(
                    "threshold_seconds is {a} but retry_on.short_duration.threshold_seconds is {b}; give one, or the same value in both"
                ),
            );
            return None;
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => base.threshold_seconds,
    };
    Some(RetryPolicy {
        max_retries: max_retries?,
        retry_on,
        threshold_seconds,
        retry_interval_minutes: interval?,
    })
}

fn threshold(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<u32> {
    c.u32_in(v, loc, limits::THRESHOLD_MIN, limits::THRESHOLD_MAX)
}

/// `retry_on` in list form, or in the reference's object form; the object form may carry
/// the short-duration threshold.
fn retry_on(c: &mut Ctx, v: &Value, loc: &Loc) -> Option<(BTreeSet<RetryOutcome>, Option<u32>)> {
    match v {
        Value::Array(items) => {
            let mut set = BTreeSet::new();
            let mut ok = true;
            for (i, item) in items.iter().enumerate() {
                match c.choice(item, &loc.at(i), RETRY_OUTCOMES) {
                    Some(o) => {
                        set.insert(o);
                    }
                    None => ok = false,
                }
            }
            ok.then_some((set, None))
        }
        Value::Object(m) => retry_on_object(c, m, loc),
        _ => {
            c.add(
                loc,
                ErrorType::ListType,
                "Input should be a valid list of outcomes, or an object of {\"<outcome>\": {\"enabled\": bool}}",
            );
            None
        }
    }
}

fn retry_on_object(
    c: &mut Ctx,
    m: &Map<String, Value>,
    loc: &Loc,
) -> Option<(BTreeSet<RetryOutcome>, Option<u32>)> {
    let mut set = BTreeSet::new();
    let mut threshold_out = None;
    let mut ok = true;
    for (key, value) in m {
        let l = loc.at(key.as_str());
        let Some(outcome) = RetryOutcome::parse(key) else {
            c.add(
                &l,
                ErrorType::ExtraForbidden,
                format!(
                    "Unknown outcome '{key}'; {}",
                    super::enum_message(RETRY_OUTCOMES.iter().map(|(n, _)| *n)).replacen(
                        "Input should be",
                        "use",
                        1
                    )
                ),
            );
            ok = false;
            continue;
        };
        let known: &[&str] = if outcome == RetryOutcome::ShortDuration {
            &["enabled", "threshold_seconds"]
        } else {
            &["enabled"]
        };
        let Some(om) = c.object(value, &l, known) else {
            ok = false;
            continue;
        };
        let enabled = c
            .required(om, "enabled", &l)
            .and_then(|v| c.boolean(v, &l.at("enabled")));
        if outcome == RetryOutcome::ShortDuration
            && let Some(t) = Ctx::optional(om, "threshold_seconds")
        {
            match threshold(c, t, &l.at("threshold_seconds")) {
                Some(t) => threshold_out = Some(t),
                None => ok = false,
            }
        }
        match enabled {
            Some(true) => {
                set.insert(outcome);
            }
            Some(false) => {}
            None => ok = false,
        }
    }
    ok.then_some((set, threshold_out))
}

fn check_start(c: &mut Ctx, start: DateTime<Utc>, now: DateTime<Utc>, loc: &Loc) {
    let min = now + Duration::seconds(limits::START_MIN_AHEAD_SECS);
    let max = now + Duration::seconds(limits::START_MAX_AHEAD_SECS);
    if start < min || start > max {
        c.value_error(
            loc,
            format_args!(
                "start_timestamp must be at least 120 seconds and at most 7 days from now (now is {}; allowed {} to {})",
                format_instant(now),
                format_instant(min),
                format_instant(max)
            ),
        );
    }
}

fn check_end(c: &mut Ctx, start: DateTime<Utc>, end: DateTime<Utc>, loc: &Loc) -> bool {
    let min = start + Duration::seconds(limits::END_MIN_AFTER_START_SECS);
    let max = start + Duration::seconds(limits::END_MAX_AFTER_START_SECS);
    if end < min || end > max {
        c.value_error(
            loc,
            format_args!(
                "end_timestamp must be at least 120 seconds and at most 30 days after start_timestamp (allowed {} to {})",
                format_instant(min),
                format_instant(max)
            ),
        );
        return false;
    }
    true
}

const PATCH_KEYS: &[&str] = &[
    "name",
    "description",
    "start_timestamp",
    "end_timestamp",
    "allowed_schedule",
    "app_config",
];
const PATCH_APP_KEYS: &[&str] = &[
    "app_id",
    "app_type",
    "app_version",
    "attempts_per_second",
    "connection_configs",
    "retry_config",
    "webhook_config",
];

/// Checks a campaign PATCH body against the campaign as it is (`current`) at time `now`, and
/// answers the campaign as it would become. `start_timestamp` and `app_config.app_id` cannot
/// change (sending their current values is allowed); a new end must be in the future and
/// within 120 seconds to 30 days of the start; `retry_config` fields left out keep their values.
pub fn campaign_patch(
    body: &Value,
    now: DateTime<Utc>,
    current: &CampaignSpec,
    opts: Options,
) -> Result<CampaignSpec, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let spec = patch(&mut c, body, now, current);
    c.into_result(spec)
}

fn patch(
    c: &mut Ctx,
    body: &Value,
    now: DateTime<Utc>,
    cur: &CampaignSpec,
) -> Option<CampaignSpec> {
    let loc = Loc::body();
    let m = c.object(body, &loc, PATCH_KEYS)?;
    let mut next = cur.clone();
    let mut p = Patch::new(m, &loc);
    p.check(c, "start_timestamp", |c, v, l| match c.timestamp(v, l) {
        Some(t) if t != cur.start => {
            c.value_error(
                l,
                "start_timestamp cannot be changed once a campaign is created",
            );
            false
        }
        Some(_) => true,
        None => false,
    });
    p.set(c, "name", &mut next.name, |c, v, l| c.name(v, l));
    p.set_or_clear(c, "description", &mut next.description, |c, v, l| {
        c.description(Some(v), l)
    });
    p.set(c, "end_timestamp", &mut next.end, |c, v, l| {
        let end = c.timestamp(v, l)?;
        if !check_end(c, cur.start, end, l) {
            return None;
        }
        if end <= now {
            c.value_error(
                l,
                format_args!(
                    "end_timestamp must be in the future (now is {})",
                    format_instant(now)
                ),
            );
            return None;
        }
        Some(end)
    });
    p.set(c, "allowed_schedule", &mut next.window, |c, v, l| {
        c.object(v, l, SCHEDULE_KEYS)
            .and_then(|sm| c.window(sm, l, ALLOWED_SCHEDULE_KEYS))
    });
    p.check(c, "app_config", |c, v, l| {
        c.object(v, l, PATCH_APP_KEYS)
            .is_some_and(|am| patch_app(c, am, l, &mut next))
    });
    p.passed().then_some(next)
}

fn patch_app(c: &mut Ctx, m: &Map<String, Value>, loc: &Loc, next: &mut CampaignSpec) -> bool {
    let mut p = Patch::new(m, loc);
    p.fixed(
        c,
        "app_id",
        &next.app_id,
        "app_id cannot be changed; create a new campaign for another agent",
    );
    p.check(c, "app_type", |c, v, l| c.choice(v, l, APP_TYPES).is_some());
    p.set(c, "app_version", &mut next.app_version, |c, v, l| {
        c.app_version(v, l)
    });
    p.set(
        c,
        "attempts_per_second",
        &mut next.attempts_per_second,
        rate,
    );
    p.set(c, "connection_configs", &mut next.connections, connections);
    let base = next.retry.clone();
    p.set(c, "retry_config", &mut next.retry, |c, v, l| {
        retry_in(c, v, l, &base)
    });
    p.set_or_clear(c, "webhook_config", &mut next.webhook, |c, v, l| {
        c.webhook(v, l)
    });
    p.passed()
}

/// Checks a campaign status body: `{"action": "pause" | "resume" | "cancel"}`.
pub fn campaign_status(body: &Value, opts: Options) -> Result<CampaignAction, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let loc = Loc::body();
    let action = c.object(body, &loc, &["action"]).and_then(|m| {
        c.required(m, "action", &loc)
            .and_then(|v| c.choice(v, &loc.at("action"), CAMPAIGN_ACTIONS))
    });
    c.into_result(action)
}
