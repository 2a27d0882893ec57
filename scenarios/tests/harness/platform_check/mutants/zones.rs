//! Mutants of the calling windows as users write them (the `sim.window_*` and
//! `sim.inbound_*` checks of zones, days, overnight windows and daylight saving): each reads
//! the schedules of new campaigns (`allowed_schedule`) and deployments (`inbound_config`)
//! otherwise than the contract says, by rewriting them on their way in, and shows them as
//! written in every answer (so that only the calls and the dials tell).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};

use super::super::support::{Mutation, Req};
use super::mutants;

/// Schedules of created campaigns and deployments changed by `f` on their way in (`f`
/// answers whether it changed something), and given back as sent in every answer that
/// shows them.
fn schedules(f: impl Fn(&mut Value) -> bool + Send + Sync + 'static) -> Mutation {
    let sent: Arc<Mutex<HashMap<String, (&'static str, Value)>>> = Arc::default();
    let keep = sent.clone();
    let creates =
        |r: &Req| r.is(Method::POST, &["campaigns"]) || r.is(Method::POST, &["deployments"]);
    Mutation {
        request: Some(Box::new(move |req| {
            if creates(req) {
                req.edit_json(|b| {
                    let name = b["name"].as_str().unwrap_or_default().to_string();
                    for field in ["allowed_schedule", "inbound_config"] {
                        let before = b[field].clone();
                        if b[field].is_object() && f(&mut b[field]) {
                            keep.lock().unwrap().insert(name.clone(), (field, before));
                        }
                    }
                });
            }
            None
        })),
        response: Some(Box::new(move |_req, resp| {
            let Some(mut v) = resp.json() else { return };
            let sent = sent.lock().unwrap();
            if restore(&mut v, &sent) {
                resp.set_json(&v);
            }
        })),
        ..Mutation::default()
    }
}

/// Puts back the schedules of the resources named in `sent`, wherever an answer shows one.
fn restore(v: &mut Value, sent: &HashMap<String, (&'static str, Value)>) -> bool {
    match v {
        Value::Object(m) => {
            let mut changed = false;
            if let Some((field, schedule)) = m
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| sent.get(n))
                && m.get(*field).is_some_and(Value::is_object)
            {
                m.insert(field.to_string(), schedule.clone());
                changed = true;
            }
            for child in m.values_mut() {
                changed |= restore(child, sent);
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, i| restore(i, sent) | c),
        _ => false,
    }
}

/// The zone `from` read as `to`.
fn zone(from: &'static [(&'static str, &'static str)]) -> Mutation {
    schedules(move |s| {
        let now = s["timezone"].as_str().unwrap_or_default();
        match from.iter().find(|(a, _)| *a == now) {
            Some((_, b)) => {
                s["timezone"] = json!(b);
                true
            }
            None => false,
        }
    })
}

const WEEK: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

mutants! {
    /// Every schedule read in UTC whatever its zone (a zone the database knows).
    fn schedules_read_in_utc() fails [
        "endpoints.campaign_patch",
        "sim.window_zones",
        "sim.window_days",
        "sim.window_overnight",
        "sim.window_dst",
        "sim.inbound_zones",
        "sim.inbound_days",
        "sim.inbound_overnight",
        "sim.inbound_dst",
    ] {
        schedules(|s| {
            let known = s["timezone"].as_str().and_then(|z| z.parse::<chrono_tz::Tz>().ok());
            let utc = s["timezone"] == "UTC";
            if known.is_some() && !utc {
                s["timezone"] = json!("UTC");
            }
            known.is_some() && !utc
        })
    }

    /// A zone half an hour off the hour taken to the whole hour after it.
    fn half_hour_zones_rounded_to_the_hour() fails ["sim.window_zones", "sim.inbound_zones"] {
        zone(&[("Asia/Kolkata", "Asia/Dhaka")])
    }

    /// Each weekday named read as the one after it (Monday as Tuesday, ..., Sunday as
    /// Monday): every day allowed stays every day; a schedule that leaves days out moves by
    /// one, overnight ones with it.
    fn weekdays_read_a_day_late() fails [
        "sim.window_days",
        "sim.inbound_days",
        "sim.window_overnight",
        "sim.inbound_overnight",
    ] {
        schedules(|s| {
            let Some(days) = s["allowed_days"].as_array() else { return false };
            if days.len() == 7 {
                return false;
            }
            let next: Vec<Value> = days
                .iter()
                .map(|d| {
                    let i = WEEK.iter().position(|w| Some(*w) == d.as_str()).unwrap_or(0);
                    json!(WEEK[(i + 1) % 7])
                })
                .collect();
            s["allowed_days"] = json!(next);
            true
        })
    }

    /// A window whose end is before its start cut at midnight.
    fn overnight_windows_cut_at_midnight() fails ["sim.window_overnight", "sim.inbound_overnight"] {
        schedules(|s| {
            let (start, end) = if s.get("allowed_start_time").is_some() {
                ("allowed_start_time", "allowed_end_time")
            } else {
                ("start_time", "end_time")
            };
            let (Some(a), Some(b)) = (s[start].as_str(), s[end].as_str()) else { return false };
            if b < a && b != "00:00" {
                s[end] = json!("00:00");
                return true;
            }
            false
        })
    }

    /// Daylight saving ignored: the zones of the daylight-saving checks read at their
    /// standard offset all year (also seen at noon on a summer day).
    fn daylight_saving_ignored() fails ["sim.window_dst", "sim.inbound_dst", "sim.window_zones", "sim.inbound_zones"] {
        zone(&[("America/New_York", "Etc/GMT+5"), ("Australia/Sydney", "Etc/GMT-10")])
    }
}
