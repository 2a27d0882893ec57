//! `limits`: each validation limit of the spec at and just past its boundary. The valid side
//! is accepted; the invalid side is a 422 whose `detail` names the field (`loc`).
//!
//! Limits that depend on the time of the request (campaign start) use the target's simulated
//! clock with `--sim`: the valid side is within a millisecond of the boundary, the invalid
//! side a second past it. On a real clock both sides stay `--clock-margin` seconds further
//! away, for clock skew and latency.

use reqwest::Method;
use serde_json::{Value, json};

use super::context::{Ctx, loc, names_loc};
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes, cohort_stream, secs, ts};
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

const START_MIN: CheckDef = CheckDef::error(
    "limits.campaign_start_min",
    "start_timestamp 120 s from now is accepted, 119 s is a 422 at [body, start_timestamp]",
);
const START_MAX: CheckDef = CheckDef::error(
    "limits.campaign_start_max",
    "start_timestamp 7 days from now is accepted, 7 days + 1 s is a 422 at [body, start_timestamp]",
);
const END_MIN: CheckDef = CheckDef::error(
    "limits.campaign_end_min",
    "end_timestamp 120 s after the start is accepted, 119 s is a 422 at [body, end_timestamp]",
);
const END_MAX: CheckDef = CheckDef::error(
    "limits.campaign_end_max",
    "end_timestamp 30 days after the start is accepted, 30 days + 1 s is a 422 at [body, end_timestamp]",
);
const RATE_MIN: CheckDef = CheckDef::error(
    "limits.attempts_per_second_min",
    "attempts_per_second 0.1 is accepted, 0.099 is a 422 at [body, app_config, attempts_per_second]",
);
const RATE_MAX: CheckDef = CheckDef::error(
    "limits.attempts_per_second_max",
    "attempts_per_second 500 is accepted, 500.01 is a 422 at [body, app_config, attempts_per_second]",
);
const THRESHOLD_MIN: CheckDef = CheckDef::error(
    "limits.threshold_seconds_min",
    "threshold_seconds 1 is accepted, 0 is a 422 at [body, app_config, retry_config, threshold_seconds]",
);
const THRESHOLD_MAX: CheckDef = CheckDef::error(
    "limits.threshold_seconds_max",
    "threshold_seconds 1200 is accepted, 1201 is a 422 at [body, app_config, retry_config, threshold_seconds]",
);
const CAMPAIGN_DESCRIPTION: CheckDef = CheckDef::error(
    "limits.campaign_description_max",
    "a campaign description of 150 characters is accepted, 151 is a 422 at [body, description]",
);
const DEPLOYMENT_DESCRIPTION: CheckDef = CheckDef::error(
    "limits.deployment_description_max",
    "a deployment description of 150 characters is accepted, 151 is a 422 at [body, description]",
);
const NAME_MAX: CheckDef = CheckDef::error(
    "limits.deployment_name_max",
    "a deployment name of 50 characters is accepted, 51 is a 422 at [body, name]",
);
const NAME_PATTERN: CheckDef = CheckDef::error(
    "limits.deployment_name_pattern",
    "a name of letters, digits, _, - and spaces (doubled and at its end too) is accepted and answered as sent; one with '!', '.', '/', '@', ':', a quote, a tab or a newline, or an empty name, is a 422 at [body, name]",
);
const CONNECTIONS_MIN: CheckDef = CheckDef::error(
    "limits.deployment_connection_configs_min",
    "one connection config is accepted, none is a 422 at [body, connection_configs]",
);
const NAMES_PATTERN: CheckDef = CheckDef::error(
    "limits.campaign_and_cohort_name_pattern",
    "campaign and cohort names of letters, digits, _, - and spaces are accepted; '!' is a 422 at [body, name]",
);
const STREAM_MIN: CheckDef = CheckDef::error(
    "limits.cohort_stream_users_min",
    "a cohort stream of 1 user is accepted, of none a 422 at [body, users]",
);
const STREAM_MAX: CheckDef = CheckDef::error(
    "limits.cohort_stream_users_max",
    "a cohort stream of 1000 users is accepted, of 1001 a 422 at [body, users]",
);
const LIST_LIMIT_MIN: CheckDef = CheckDef::error(
    "limits.list_limit_min",
    "deployment list limit=1 is accepted, limit=0 is a 422 at [query, limit]",
);
const LIST_LIMIT_MAX: CheckDef = CheckDef::error(
    "limits.list_limit_max",
    "deployment list limit=100 is accepted, limit=101 is a 422 at [query, limit]",
);
const LIST_OFFSET_MIN: CheckDef = CheckDef::error(
    "limits.list_offset_min",
    "deployment list offset=0 is accepted, offset=-1 is a 422 at [query, offset]",
);
const CAMPAIGN_LIST_LIMIT_MIN: CheckDef = CheckDef::error(
    "limits.campaign_list_limit_min",
    "campaign list limit=1 is accepted, limit=0 is a 422 at [query, limit]",
);
const CAMPAIGN_LIST_LIMIT_MAX: CheckDef = CheckDef::error(
    "limits.campaign_list_limit_max",
    "campaign list limit=100 is accepted, limit=101 is a 422 at [query, limit]",
);
const CAMPAIGN_LIST_OFFSET_MIN: CheckDef = CheckDef::error(
    "limits.campaign_list_offset_min",
    "campaign list offset=0 is accepted, offset=-1 is a 422 at [query, offset]",
);

/// The checks of this group.
pub(crate) const CHECKS: &[CheckDef] = &[
    START_MIN,
    START_MAX,
    END_MIN,
    END_MAX,
    RATE_MIN,
    RATE_MAX,
    THRESHOLD_MIN,
    THRESHOLD_MAX,
    CAMPAIGN_DESCRIPTION,
    DEPLOYMENT_DESCRIPTION,
    NAME_MAX,
    NAME_PATTERN,
    CONNECTIONS_MIN,
    NAMES_PATTERN,
    STREAM_MIN,
    STREAM_MAX,
    LIST_LIMIT_MIN,
    LIST_LIMIT_MAX,
    LIST_OFFSET_MIN,
    CAMPAIGN_LIST_LIMIT_MIN,
    CAMPAIGN_LIST_LIMIT_MAX,
    CAMPAIGN_LIST_OFFSET_MIN,
];

const fn campaign(label: &'static str) -> Makes {
    Makes::new(Kind::Campaign, label, 1)
}

const fn deployment(label: &'static str) -> Makes {
    Makes::new(Kind::Deployment, label, 1)
}

const STREAM_CAMPAIGN: Makes = campaign("limits-stream");
const MAKES_PATTERN: [Makes; 3] = [
    campaign("campaign-pattern"),
    STREAM_CAMPAIGN,
    Makes::new(Kind::Cohort, "cohort-pattern", 1),
];

/// What each check creates: the accepted side of each boundary (the refused side creates
/// nothing on a conforming target).
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&START_MIN, &[campaign("limits-start-min")]),
    (&START_MAX, &[campaign("limits-start-max")]),
    (&END_MIN, &[campaign("limits-end-min")]),
    (&END_MAX, &[campaign("limits-end-max")]),
    (&RATE_MIN, &[campaign("limits-rate-min")]),
    (&RATE_MAX, &[campaign("limits-rate-max")]),
    (&THRESHOLD_MIN, &[campaign("limits-threshold-min")]),
    (&THRESHOLD_MAX, &[campaign("limits-threshold-max")]),
    (
        &CAMPAIGN_DESCRIPTION,
        &[campaign("limits-campaign-description")],
    ),
    (&DEPLOYMENT_DESCRIPTION, &[deployment("limits-description")]),
    (&NAME_MAX, &[deployment("limits-name-max")]),
    (&NAME_PATTERN, &[Makes::new(Kind::Deployment, "pattern", 2)]),
    (&CONNECTIONS_MIN, &[deployment("limits-connections")]),
    (&NAMES_PATTERN, &MAKES_PATTERN),
    (
        &STREAM_MIN,
        &[
            STREAM_CAMPAIGN,
            Makes::new(Kind::Cohort, "limits-stream-min", 1),
        ],
    ),
    (
        &STREAM_MAX,
        &[
            STREAM_CAMPAIGN,
            Makes::new(Kind::Cohort, "limits-stream-max", 1),
        ],
    ),
];

/// The name label of what `def` creates (its last entry in [`MAKES`]).
fn label(def: &CheckDef) -> &'static str {
    MAKES
        .iter()
        .find(|(d, _)| d.id == def.id)
        .and_then(|(_, m)| m.last())
        .map_or("limits", |m| m.label)
}

/// Judges one boundary: every valid request accepted, every invalid one a 422 at `at`.
fn boundary(
    v: &mut Verdicts,
    def: &CheckDef,
    valid: &[(String, Exchange)],
    invalid: &[(String, Exchange)],
    at: &[&str],
) {
    boundary_echoed(v, def, valid, invalid, at, None);
}

/// [`boundary`], and each valid request's value of `echo` (its field, and its value as sent)
/// answered exactly as sent.
fn boundary_echoed(
    v: &mut Verdicts,
    def: &CheckDef,
    valid: &[(String, Exchange)],
    invalid: &[(String, Exchange)],
    at: &[&str],
    echo: Option<(&str, &[Value])>,
) {
    let want = loc(at);
    let echoed = echo.is_none_or(|(field, sent)| {
        valid
            .iter()
            .zip(sent)
            .all(|((_, x), s)| !x.is_success() || &x.body()[field] == s)
    });
    let ok = valid.iter().all(|(_, x)| x.is_success())
        && echoed
        && invalid.iter().all(|(_, x)| names_loc(x, &want));
    v.varied(
        def,
        "status",
        valid.iter().chain(invalid).map(|(_, x)| x.status),
    );
    let side = |xs: &[(String, Exchange)]| -> Value {
        xs.iter()
            .map(|(what, x)| {
                let mut e = x.evidence().0;
                e.insert("sent".into(), json!(what));
                Value::Object(e)
            })
            .collect()
    };
    let evidence = crate::checks::Evidence::new()
        .with("valid", side(valid))
        .with("invalid", side(invalid));
    let valid_what: Vec<&str> = valid.iter().map(|(w, _)| w.as_str()).collect();
    let invalid_what: Vec<&str> = invalid.iter().map(|(w, _)| w.as_str()).collect();
    v.judge(
        def,
        ok,
        evidence,
        format!(
            "{} accepted (2xx){}; {} refused with 422 and a detail entry at loc {}",
            valid_what.join(", "),
            echo.map_or(String::new(), |(f, _)| format!(
                ", each {f} answered exactly as sent"
            )),
            invalid_what.join(", "),
            Value::Array(want.clone())
        ),
    );
}

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    campaign_limits(cx, v).await;
    deployment_limits(cx, v).await;
    stream_limits(cx, v).await;
    list_limits(cx, v).await;
}

/// A valid campaign body, changed by `edit`.
fn campaign_with(
    cx: &Ctx,
    label: &str,
    start: chrono::DateTime<chrono::Utc>,
    edit: impl FnOnce(&mut Value),
) -> Value {
    let mut body = fixtures::campaign(
        &cx.settings.agent,
        &cx.names.name(label),
        &cx.names.number(),
        start,
        start + secs(86_400),
    );
    edit(&mut body);
    body
}

/// One campaign limit: the fields at fault, then what is sent on the valid and the invalid
/// side (a description and the body).
type CampaignCase = (
    &'static CheckDef,
    Vec<&'static str>,
    (String, Value),
    (String, Value),
);

async fn campaign_limits(cx: &Ctx, v: &mut Verdicts) {
    let now = match cx.now().await {
        Ok(n) => n,
        Err(x) => {
            return v.blocked_only(
                &[
                    &START_MIN,
                    &START_MAX,
                    &END_MIN,
                    &END_MAX,
                    &RATE_MIN,
                    &RATE_MAX,
                    &THRESHOLD_MIN,
                    &THRESHOLD_MAX,
                    &CAMPAIGN_DESCRIPTION,
                ],
                "reading the target's time",
                x.evidence(),
            );
        }
    };
    let (t, m) = (now.at, now.margin);
    let start = |label: &str, at: chrono::DateTime<chrono::Utc>| {
        (
            format!("start_timestamp {} (now {})", ts(at), ts(t)),
            campaign_with(cx, label, at, |_| ()),
        )
    };
    // The rest is relative to a start an hour ahead.
    let s = t + secs(3600) + m;
    let end = |label: &str, after: i64| {
        (
            format!("end_timestamp start + {after} s"),
            campaign_with(cx, label, s, |b| {
                b["end_timestamp"] = json!(ts(s + secs(after)))
            }),
        )
    };
    let field = |label: &str, path: &[&str], value: Value| {
        let what = format!("{} {value}", path.last().copied().unwrap_or_default());
        let body = campaign_with(cx, label, s, |b| {
            let mut at = &mut *b;
            for p in &path[..path.len() - 1] {
                at = &mut at[*p];
            }
            at[path[path.len() - 1]] = value;
        });
        (what, body)
    };
    let rate = ["app_config", "attempts_per_second"];
    let threshold = ["app_config", "retry_config", "threshold_seconds"];
    let day = 86_400;
    let cases: Vec<CampaignCase> = vec![
        // Start: 120 s to 7 days from now.
        (
            &START_MIN,
            vec!["start_timestamp"],
            start(label(&START_MIN), t + secs(120) + m),
            start(label(&START_MIN), t + secs(119) - m),
        ),
        (
            &START_MAX,
            vec!["start_timestamp"],
            start(label(&START_MAX), t + secs(7 * day) - m),
            start(label(&START_MAX), t + secs(7 * day + 1) + m),
        ),
        // End: 120 s to 30 days after the start.
        (
            &END_MIN,
            vec!["end_timestamp"],
            end(label(&END_MIN), 120),
            end(label(&END_MIN), 119),
        ),
        (
            &END_MAX,
            vec!["end_timestamp"],
            end(label(&END_MAX), 30 * day),
            end(label(&END_MAX), 30 * day + 1),
        ),
        (
            &RATE_MIN,
            rate.to_vec(),
            field(label(&RATE_MIN), &rate, json!(0.1)),
            field(label(&RATE_MIN), &rate, json!(0.099)),
        ),
        (
            &RATE_MAX,
            rate.to_vec(),
            field(label(&RATE_MAX), &rate, json!(500)),
            field(label(&RATE_MAX), &rate, json!(500.01)),
        ),
        (
            &THRESHOLD_MIN,
            threshold.to_vec(),
            field(label(&THRESHOLD_MIN), &threshold, json!(1)),
            field(label(&THRESHOLD_MIN), &threshold, json!(0)),
        ),
        (
            &THRESHOLD_MAX,
            threshold.to_vec(),
            field(label(&THRESHOLD_MAX), &threshold, json!(1200)),
            field(label(&THRESHOLD_MAX), &threshold, json!(1201)),
        ),
        (
            &CAMPAIGN_DESCRIPTION,
            vec!["description"],
            field(
                label(&CAMPAIGN_DESCRIPTION),
                &["description"],
                json!("d".repeat(150)),
            ),
            field(
                label(&CAMPAIGN_DESCRIPTION),
                &["description"],
                json!("d".repeat(151)),
            ),
        ),
    ];
    for (def, path, (gw, gb), (bw, bb)) in cases {
        let ok = cx.create_campaign(gb).await;
        let refused = cx.create_campaign(bb).await;
        let mut at = vec!["body"];
        at.extend(path);
        boundary(v, def, &[(gw, ok)], &[(bw, refused)], &at);
    }
}

/// A valid deployment body named `name`, changed by `edit`.
fn deployment_with(cx: &Ctx, name: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut body = fixtures::deployment(&cx.settings.agent, name, &[cx.names.number()]);
    edit(&mut body);
    body
}

/// `harness-check-{run}-{label}` padded with `x` to `len` characters.
fn padded_name(cx: &Ctx, label: &str, len: usize) -> String {
    let mut n = cx.names.name(label);
    while n.chars().count() < len {
        n.push('x');
    }
    n
}

async fn deployment_limits(cx: &Ctx, v: &mut Verdicts) {
    let create = |body: Value| cx.create_deployment(body);
    let name = |n: &str| (format!("name '{n}'"), deployment_with(cx, n, |_| ()));

    let (gw, gb) = name(&padded_name(cx, label(&NAME_MAX), 50));
    let (bw, bb) = name(&padded_name(cx, label(&NAME_MAX), 51));
    let (ok, refused) = (create(gb).await, create(bb).await);
    boundary(
        v,
        &NAME_MAX,
        &[(gw, ok)],
        &[(bw, refused)],
        &["body", "name"],
    );

    // Every form of the pattern: what it allows, spaces doubled and at the end included
    // (answered as sent, not trimmed; every name the suite makes starts with its prefix),
    // and each kind of character it leaves out.
    let pattern = label(&NAME_PATTERN);
    let goods = [
        format!("{} Name_of all-kinds 09", cx.names.name(pattern)),
        format!("{}  spaced_-_ ", cx.names.name(pattern)),
    ];
    let mut valid = Vec::new();
    for n in &goods {
        let (what, body) = name(n);
        valid.push((what, create(body).await));
    }
    let mut invalid = Vec::new();
    for bad in ["!", ".", "/", "@", ":", "'", "\t", "\n"] {
        let (what, body) = name(&format!("{}{bad}x", cx.names.name(pattern)));
        invalid.push((what, create(body).await));
    }
    let (ew, eb) = name("");
    invalid.push((ew, create(eb).await));
    let sent: Vec<Value> = goods.iter().map(|n| json!(n)).collect();
    boundary_echoed(
        v,
        &NAME_PATTERN,
        &valid,
        &invalid,
        &["body", "name"],
        Some(("name", &sent)),
    );

    let described = |len: usize| {
        (
            format!("description of {len} characters"),
            deployment_with(cx, &cx.names.name(label(&DEPLOYMENT_DESCRIPTION)), |b| {
                b["description"] = json!("d".repeat(len))
            }),
        )
    };
    let (gw, gb) = described(150);
    let (bw, bb) = described(151);
    let (ok, refused) = (create(gb).await, create(bb).await);
    boundary(
        v,
        &DEPLOYMENT_DESCRIPTION,
        &[(gw, ok)],
        &[(bw, refused)],
        &["body", "description"],
    );

    let connections = cx.names.name(label(&CONNECTIONS_MIN));
    let gb = deployment_with(cx, &connections, |_| ());
    let bb = deployment_with(cx, &connections, |b| b["connection_configs"] = json!([]));
    let (ok, refused) = (create(gb).await, create(bb).await);
    boundary(
        v,
        &CONNECTIONS_MIN,
        &[("one connection config".into(), ok)],
        &[("connection_configs []".into(), refused)],
        &["body", "connection_configs"],
    );
}

/// The users of a stream: `n` numbers of this run.
fn stream_users(cx: &Ctx, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (cx.names.number(), format!("u{i}")))
        .collect()
}

async fn stream_limits(cx: &Ctx, v: &mut Verdicts) {
    let start = match cx.now().await {
        Ok(n) => n.at + secs(3600),
        Err(x) => {
            return v.blocked_only(
                &[&NAMES_PATTERN, &STREAM_MIN, &STREAM_MAX],
                "reading the target's time",
                x.evidence(),
            );
        }
    };
    let x = cx
        .create_campaign(campaign_with(cx, STREAM_CAMPAIGN.label, start, |_| ()))
        .await;
    let Some(id) = x.str_field("campaign_id").map(str::to_string) else {
        return v.blocked_only(
            &[&NAMES_PATTERN, &STREAM_MIN, &STREAM_MAX],
            "creating a campaign to stream users to",
            x.evidence(),
        );
    };
    let path = cx.paths.cohorts(Parent::Campaign(&id), &["stream"]);
    // Names: every kind of character the pattern allows, and one it does not.
    let named = |label: &str| format!("{} Aa_b- 09", cx.names.name(label));
    let refused = |label: &str| format!("{}!", cx.names.name(label));
    let [c, _, k] = [0, 1, 2].map(|i| MAKES_PATTERN[i].label);
    let campaign_ok = cx
        .create_campaign(campaign_with(cx, c, start, |b| b["name"] = json!(named(c))))
        .await;
    let campaign_bad = cx
        .create_campaign(campaign_with(cx, c, start, |b| {
            b["name"] = json!(refused(c))
        }))
        .await;
    let users = stream_users(cx, 1);
    let cohort_ok = cx
        .send(Method::POST, &path, cohort_stream(&named(k), &users))
        .await;
    let cohort_bad = cx
        .send(Method::POST, &path, cohort_stream(&refused(k), &users))
        .await;
    boundary(
        v,
        &NAMES_PATTERN,
        &[
            (format!("campaign name '{}'", named(c)), campaign_ok),
            (format!("cohort name '{}'", named(k)), cohort_ok),
        ],
        &[
            (format!("campaign name '{}'", refused(c)), campaign_bad),
            (format!("cohort name '{}'", refused(k)), cohort_bad),
        ],
        &["body", "name"],
    );
    for (def, good, bad) in [(&STREAM_MIN, 1, 0), (&STREAM_MAX, 1000, 1001)] {
        let name = cx.names.name(label(def));
        let mut sent = Vec::new();
        for n in [good, bad] {
            let body = cohort_stream(&name, &stream_users(cx, n));
            let x = cx.send(Method::POST, &path, body).await;
            sent.push((format!("{n} users"), x));
        }
        let bad = sent.pop().into_iter().collect::<Vec<_>>();
        boundary(v, def, &sent, &bad, &["body", "users"]);
    }
}

async fn list_limits(cx: &Ctx, v: &mut Verdicts) {
    let lists = [
        (
            cx.paths.deployments(),
            [&LIST_LIMIT_MIN, &LIST_LIMIT_MAX, &LIST_OFFSET_MIN],
        ),
        (
            cx.paths.campaigns(),
            [
                &CAMPAIGN_LIST_LIMIT_MIN,
                &CAMPAIGN_LIST_LIMIT_MAX,
                &CAMPAIGN_LIST_OFFSET_MIN,
            ],
        ),
    ];
    for (path, [limit_min, limit_max, offset_min]) in lists {
        let list = |k: &'static str, value: &'static str| {
            let path = path.clone();
            async move {
                (
                    format!("{k}={value}"),
                    cx.get(&path, &[(k, value.to_string())]).await,
                )
            }
        };
        for (def, key, good, bad) in [
            (limit_min, "limit", "1", "0"),
            (limit_max, "limit", "100", "101"),
            (offset_min, "offset", "0", "-1"),
        ] {
            let ok = list(key, good).await;
            let refused = list(key, bad).await;
            boundary(v, def, &[ok], &[refused], &["query", key]);
        }
    }
}
