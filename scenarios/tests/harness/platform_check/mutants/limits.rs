//! Mutants of the `limits` group: each accepts a request just past one boundary by moving it
//! back inside before the platform sees it.

use chrono::{DateTime, Duration, Utc};
use contracts::clock::Clock;
use reqwest::Method;
use serde_json::{Value, json};

use super::super::support::sim_clock;
use super::{Setup, intercept, mutants, request_edit};

fn parse(s: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn stamp(t: DateTime<Utc>) -> Value {
    json!(t.to_rfc3339())
}

/// A campaign body's start moved by `f` (given the mock's now and the start), the end moved
/// with it.
fn move_start(
    f: impl Fn(DateTime<Utc>, DateTime<Utc>) -> Option<DateTime<Utc>> + Send + Sync + 'static,
) -> Setup {
    let clock = sim_clock();
    let now = clock.clone();
    let mutation = request_edit(
        |r| r.is(Method::POST, &["campaigns"]),
        move |body| {
            let (Some(start), Some(end)) = (
                parse(&body["start_timestamp"]),
                parse(&body["end_timestamp"]),
            ) else {
                return;
            };
            if let Some(moved) = f(now.now(), start) {
                body["start_timestamp"] = stamp(moved);
                body["end_timestamp"] = stamp(end + (moved - start));
            }
        },
    );
    Setup { clock, mutation }
}

/// A campaign body's end moved by `f` (given its start and end).
fn move_end(
    f: impl Fn(DateTime<Utc>, DateTime<Utc>) -> Option<DateTime<Utc>> + Send + Sync + 'static,
) -> super::super::support::Mutation {
    request_edit(
        |r| r.is(Method::POST, &["campaigns"]),
        move |body| {
            if let (Some(start), Some(end)) = (
                parse(&body["start_timestamp"]),
                parse(&body["end_timestamp"]),
            ) && let Some(moved) = f(start, end)
            {
                body["end_timestamp"] = stamp(moved);
            }
        },
    )
}

/// A number at `path` of a campaign body replaced by `f`.
fn campaign_number(
    path: &'static [&'static str],
    f: fn(f64) -> Option<f64>,
) -> super::super::support::Mutation {
    request_edit(
        |r| r.is(Method::POST, &["campaigns"]),
        move |body| {
            let mut at = &mut *body;
            for p in path {
                at = &mut at[*p];
            }
            if let Some(n) = at.as_f64().and_then(f) {
                *at = json!(n);
            }
        },
    )
}

/// A string field of a deployment body replaced by `f`.
fn deployment_text(
    field: &'static str,
    f: fn(&str) -> Option<String>,
) -> super::super::support::Mutation {
    request_edit(
        |r| r.is(Method::POST, &["deployments"]),
        move |body| {
            if let Some(t) = body[field].as_str().and_then(f) {
                body[field] = json!(t);
            }
        },
    )
}

/// A list query parameter of `list` replaced by `f`.
fn list_param(
    list: &'static str,
    name: &'static str,
    f: fn(i64) -> Option<i64>,
) -> super::super::support::Mutation {
    intercept(move |req| {
        if req.is(Method::GET, &[list])
            && let Some(n) = req
                .param(name)
                .and_then(|v| v.parse::<i64>().ok())
                .and_then(f)
        {
            req.set_param(name, &n.to_string());
        }
        None
    })
}

const RATE: &[&str] = &["app_config", "attempts_per_second"];
const THRESHOLD: &[&str] = &["app_config", "retry_config", "threshold_seconds"];

/// `text` cut to `n` characters when longer.
fn cut(text: &str, n: usize) -> Option<String> {
    (text.chars().count() > n).then(|| text.chars().take(n).collect())
}

/// A name with what the pattern refuses taken out (an empty one made up).
fn sanitised(text: &str) -> Option<String> {
    let clean: String = text
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .collect();
    if clean == text && !text.is_empty() {
        None
    } else if clean.is_empty() {
        Some("unnamed".into())
    } else {
        Some(clean)
    }
}

mutants! {
    /// A start 60 to 119 s ahead of the mock's clock is moved to 120 s, so it is accepted.
    fn a_start_under_120_s_accepted() fails ["limits.campaign_start_min"] {
        move_start(|now, start| {
            let ahead = start - now;
            (ahead >= Duration::seconds(60) && ahead < Duration::seconds(120)).then(|| now + Duration::seconds(120))
        })
    }

    fn a_start_past_7_days_accepted() fails ["limits.campaign_start_max"] {
        move_start(|now, start| (start - now > Duration::days(7)).then(|| now + Duration::days(7)))
    }

    fn an_end_under_120_s_after_the_start_accepted() fails ["limits.campaign_end_min"] {
        move_end(|start, end| (end - start < Duration::seconds(120)).then(|| start + Duration::seconds(120)))
    }

    fn an_end_past_30_days_after_the_start_accepted() fails ["limits.campaign_end_max"] {
        move_end(|start, end| (end - start > Duration::days(30)).then(|| start + Duration::days(30)))
    }

    fn a_rate_under_0_1_accepted() fails ["limits.attempts_per_second_min"] {
        campaign_number(RATE, |n| (n < 0.1).then_some(0.1))
    }

    fn a_rate_over_500_accepted() fails ["limits.attempts_per_second_max"] {
        campaign_number(RATE, |n| (n > 500.0).then_some(500.0))
    }

    fn a_threshold_of_0_accepted() fails ["limits.threshold_seconds_min"] {
        campaign_number(THRESHOLD, |n| (n < 1.0).then_some(1.0))
    }

    fn a_threshold_over_1200_accepted() fails ["limits.threshold_seconds_max"] {
        campaign_number(THRESHOLD, |n| (n > 1200.0).then_some(1200.0))
    }

    fn a_campaign_description_over_150_accepted() fails ["limits.campaign_description_max"] {
        request_edit(|r| r.is(Method::POST, &["campaigns"]), |body| {
            if let Some(t) = body["description"].as_str().and_then(|t| cut(t, 150)) {
                body["description"] = json!(t);
            }
        })
    }

    fn a_deployment_description_over_150_accepted() fails ["limits.deployment_description_max"] {
        deployment_text("description", |t| cut(t, 150))
    }

    fn a_deployment_name_over_50_accepted() fails ["limits.deployment_name_max"] {
        deployment_text("name", |t| cut(t, 50))
    }

    fn a_deployment_name_off_the_pattern_accepted() fails ["limits.deployment_name_pattern"] {
        deployment_text("name", sanitised)
    }

    fn a_deployment_without_connection_configs_accepted() fails ["limits.deployment_connection_configs_min"] {
        request_edit(|r| r.is(Method::POST, &["deployments"]), |body| {
            if body["connection_configs"].as_array().is_some_and(Vec::is_empty) {
                body["connection_configs"] = json!([{"connection_id": "added", "phone_numbers": ["+12025550199"]}]);
            }
        })
    }

    fn campaign_and_cohort_names_off_the_pattern_accepted() fails ["limits.campaign_and_cohort_name_pattern"] {
        request_edit(
            |r| r.is(Method::POST, &["campaigns"]) || r.is(Method::POST, &["campaigns", "*", "cohorts", "stream"]),
            |body| {
                if let Some(t) = body["name"].as_str().and_then(sanitised) {
                    body["name"] = json!(t);
                }
            },
        )
    }

    fn a_stream_of_no_users_accepted() fails ["limits.cohort_stream_users_min"] {
        request_edit(|r| r.is(Method::POST, &["campaigns", "*", "cohorts", "stream"]), |body| {
            if body["users"].as_array().is_some_and(Vec::is_empty) {
                body["users"] = json!([{"phone_number": "+12025550198"}]);
            }
        })
    }

    fn a_stream_of_1001_users_accepted() fails ["limits.cohort_stream_users_max"] {
        request_edit(|r| r.is(Method::POST, &["campaigns", "*", "cohorts", "stream"]), |body| {
            if let Some(users) = body["users"].as_array_mut() {
                users.truncate(1000);
            }
        })
    }

    fn a_deployment_list_limit_of_0_accepted() fails ["limits.list_limit_min"] {
        list_param("deployments", "limit", |n| (n < 1).then_some(1))
    }

    fn a_deployment_list_limit_over_100_accepted() fails ["limits.list_limit_max"] {
        list_param("deployments", "limit", |n| (n > 100).then_some(100))
    }

    fn a_negative_deployment_list_offset_accepted() fails ["limits.list_offset_min"] {
        list_param("deployments", "offset", |n| (n < 0).then_some(0))
    }

    fn a_campaign_list_limit_of_0_accepted() fails ["limits.campaign_list_limit_min"] {
        list_param("campaigns", "limit", |n| (n < 1).then_some(1))
    }

    fn a_campaign_list_limit_over_100_accepted() fails ["limits.campaign_list_limit_max"] {
        list_param("campaigns", "limit", |n| (n > 100).then_some(100))
    }

    fn a_negative_campaign_list_offset_accepted() fails ["limits.campaign_list_offset_min"] {
        list_param("campaigns", "offset", |n| (n < 0).then_some(0))
    }
}
