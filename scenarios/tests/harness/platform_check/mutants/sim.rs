//! Mutants of the `sim` group: the engine, the clock's transitions, the events or the inbound
//! answers break one rule (the campaign bodies are changed on their way in, the events on
//! their way out, the rest in the answers).

use chrono::{DateTime, Duration, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::super::support::{Mutation, SignedAs};
use super::{answer_edit, drop_field, events, mutants, refuse, request_edit, respond, with_seen};

fn parse(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A campaign body changed by `f` on its way in.
fn campaigns(f: impl Fn(&mut Value) + Send + Sync + 'static) -> Mutation {
    request_edit(|r| r.is(Method::POST, &["campaigns"]), f)
}

/// Inbound call answers changed by `f` when their rejection is `rejection`.
fn answered_despite(rejection: &'static str) -> Mutation {
    respond(move |req, resp| {
        if req.path.ends_with("/inbound-calls")
            && resp.status == 200
            && let Some(mut v) = resp.json()
            && v["rejection"] == rejection
        {
            v["answered"] = json!(true);
            v["rejection"] = Value::Null;
            resp.set_json(&v);
        }
    })
}

/// A campaign read as `from` shown as `to`.
fn read_as(from: &'static str, to: &'static str) -> Mutation {
    answer_edit(
        |r| r.method == Method::GET && r.is_campaign(),
        move |v| {
            if v["status"] == from {
                v["status"] = json!(to);
            }
        },
    )
}

mutants! {
    /// Campaigns read active are shown scheduled; the status changes from active see the
    /// campaigns scheduled too.
    fn a_campaign_that_never_activates() fails [
        "sim.campaign_activates",
        "sim.campaign_ends",
        "sim.campaign_pause_active",
        "sim.campaign_resume_after_start",
        "sim.campaign_cancel_running",
        "sim.campaign_ended_is_final",
        "sim.cohort_upload_active",
    ] {
        read_as("active", "scheduled")
    }

    fn a_campaign_that_never_ends() fails ["sim.campaign_ends", "sim.campaign_ended_is_final"] {
        read_as("ended", "active")
    }

    /// A one-minute calling window is widened to the whole day.
    fn the_calling_window_ignored() fails ["sim.calling_window"] {
        campaigns(|b| {
            let s = &b["allowed_schedule"];
            let hm = |v: &Value| chrono::NaiveTime::parse_from_str(v.as_str().unwrap_or(""), "%H:%M").ok();
            let (Some(open), Some(close)) = (hm(&s["allowed_start_time"]), hm(&s["allowed_end_time"])) else { return };
            if close - open == Duration::minutes(1)
                && let Some(start) = parse(&b["start_timestamp"])
            {
                let from = start - Duration::hours(2);
                b["allowed_schedule"]["allowed_start_time"] = json!(from.format("%H:%M").to_string());
                b["allowed_schedule"]["allowed_end_time"] = json!((from - Duration::minutes(1)).format("%H:%M").to_string());
            }
        })
    }

    /// max_retries 2 allows one retry more.
    fn one_retry_too_many() fails ["sim.rule1_attempts", "sim.retry_interval"] {
        campaigns(|b| {
            let r = &mut b["app_config"]["retry_config"]["max_retries"];
            if *r == 2 {
                *r = json!(3);
            }
        })
    }

    fn retries_a_minute_early() fails ["sim.retry_interval"] {
        campaigns(|b| {
            let r = &mut b["app_config"]["retry_config"]["retry_interval_minutes"];
            if *r == 5 {
                *r = json!(4);
            }
        })
    }

    fn the_dial_rate_doubled() fails ["sim.rule2_dial_rate"] {
        campaigns(|b| {
            let r = &mut b["app_config"]["attempts_per_second"];
            if *r == 0.5 {
                *r = json!(1.0);
            }
        })
    }

    /// A 2-minute campaign at 0.1 dials a second dials a minute past its end.
    fn dialling_past_the_end() fails ["sim.rule3_budget"] {
        campaigns(|b| {
            let (Some(start), Some(end)) = (parse(&b["start_timestamp"]), parse(&b["end_timestamp"])) else { return };
            if b["app_config"]["attempts_per_second"] == 0.1 && end - start == Duration::seconds(120) {
                b["end_timestamp"] = json!((end + Duration::seconds(60)).to_rfc3339());
            }
        })
    }

    fn weights_ignored() fails ["sim.rule4_weights"] {
        campaigns(|b| {
            for c in b["app_config"]["connection_configs"].as_array_mut().into_iter().flatten() {
                c["weight"] = json!(1);
            }
        })
    }

    /// threshold_seconds taken as 1 where only short calls are retried.
    fn the_short_call_threshold_ignored() fails ["sim.rule5_short_duration"] {
        campaigns(|b| {
            let retry = &mut b["app_config"]["retry_config"];
            if retry["retry_on"] == json!(["short_duration"]) {
                retry["threshold_seconds"] = json!(1);
            }
        })
    }

    fn campaign_events_without_app_id() fails ["sim.campaign_event_schema"] {
        events(|e| {
            if e.get("campaign_id").is_some() {
                drop_field(e, "app_id");
            }
        })
    }

    fn outbound_events_without_the_metadata() fails ["sim.outbound_event"] {
        events(|e| {
            if e.get("campaign_id").is_none() {
                drop_field(&mut e["webhook_config"], "metadata");
            }
        })
    }

    /// Webhooks signed over the event written again, not over the bytes sent.
    fn webhooks_signed_over_other_bytes() fails ["sim.webhook_signatures"] {
        Mutation {
            bad_signature: true,
            event: Some(Box::new(|_: &mut Value| {})),
            ..Mutation::default()
        }
    }

    /// Webhooks timestamped in Unix milliseconds (and signed over them).
    fn webhook_timestamps_in_milliseconds() fails ["sim.webhook_signature_form"] {
        Mutation {
            signed_as: Some(SignedAs::Millis),
            event: Some(Box::new(|_: &mut Value| {})),
            ..Mutation::default()
        }
    }

    /// Webhook signatures in upper-case hex.
    fn webhook_signatures_in_upper_case() fails ["sim.webhook_signature_form"] {
        Mutation {
            signed_as: Some(SignedAs::UpperHex),
            event: Some(Box::new(|_: &mut Value| {})),
            ..Mutation::default()
        }
    }

    /// The events of retries carry no metadata.
    fn retries_events_without_metadata() fails ["sim.campaign_event_schema"] {
        events(|e| {
            if e["retry_attempt"].as_u64().is_some_and(|n| n > 0) && e.get("metadata").is_some() {
                e["metadata"] = Value::Null;
            }
        })
    }

    /// A receiver's 500 taken for a delivery: the event is never sent again.
    fn a_refused_event_never_sent_again() fails ["sim.webhook_retried"] {
        Mutation {
            failures_hidden: true,
            event: Some(Box::new(|_: &mut Value| {})),
            ..Mutation::default()
        }
    }

    /// A stop file is taken as an ordinary cohort.
    fn stop_files_ignored() fails ["sim.stop_file_excludes"] {
        request_edit(
            |r| r.is(Method::POST, &["campaigns", "*", "cohorts", "stream"]),
            |b| {
                if b["cohort_category"] == "stop_file" {
                    b["cohort_category"] = json!("cohort");
                }
            },
        )
    }

    fn an_upload_to_an_active_campaign_refused() fails ["sim.cohort_upload_active"] {
        with_seen(|req, status| {
            (req.is(Method::POST, &["campaigns", "*", "cohorts", "upload"]) && status.as_deref() == Some("active"))
                .then(|| refuse(409, "campaign_active"))
        })
    }

    /// Knows each campaign's status from the answers that showed it; a pause or cancel of one
    /// last seen active is refused as if active were not a source state.
    fn pausing_or_cancelling_a_running_campaign_refused() fails ["sim.campaign_pause_active", "sim.campaign_cancel_running"] {
        with_seen(|req, status| {
            let action = req.json().and_then(|b| b["action"].as_str().map(str::to_string));
            (req.is(Method::PUT, &["campaigns", "*", "status"])
                && status.as_deref() == Some("active")
                && matches!(action.as_deref(), Some("pause" | "cancel")))
            .then(|| refuse(409, "invalid_status_transition"))
        })
    }

    /// A PATCH of an active campaign answers 200 (and changes nothing).
    fn a_patch_of_an_active_campaign_answered_200() fails ["sim.campaign_patch_running_refused"] {
        with_seen(|req, status| {
            if req.is(Method::PATCH, &["campaigns", "*"]) && status.as_deref() == Some("active") {
                let path = req.path.clone();
                req.make_read(path);
            }
            None
        })
    }

    fn inbound_callers_without_their_variables() fails ["sim.inbound_cohort_variables"] {
        respond(|req, resp| {
            if req.path.ends_with("/inbound-calls") && resp.status == 200
                && let Some(mut v) = resp.json()
            {
                v["agent_variables"] = json!({});
                resp.set_json(&v);
            }
        })
    }

    fn a_paused_deployment_answers() fails ["sim.inbound_paused_not_answered"] {
        answered_despite("deployment_paused")
    }

    fn calls_outside_the_schedule_answered() fails [
        "sim.inbound_outside_schedule",
        "sim.inbound_zones",
        "sim.inbound_days",
        "sim.inbound_overnight",
        "sim.inbound_dst",
    ] {
        answered_despite("outside_schedule")
    }

    fn a_deleted_deployments_number_answers() fails ["sim.rule6_delete_stops_inbound"] {
        answered_despite("no_deployment")
    }
}
