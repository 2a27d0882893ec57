//! Expectations judged into checks: each names its place in the file, what was expected,
//! what was observed and the simulated time it was judged at.

use anyhow::Result;
use chrono::{DateTime, Utc};
use contracts::clock::format_instant;
use serde_json::{Value, json};

use super::run::Run;
use crate::checks::{Check, Evidence, Outcome, Severity};
use crate::scenario::expect::{Count, Expect};

/// Judges expectation `i` of the file now.
pub(crate) async fn judge(run: &Run<'_>, i: usize) -> Result<Check> {
    let e = &run.loaded.scenario.expect[i];
    let kind = e.check.name();
    let now = run.now;
    let (ok, expected, observed, about) = verdict(run, &e.check, now).await?;
    let name = e
        .name
        .clone()
        .unwrap_or_else(|| format!("{kind} {about}").trim().to_string());
    let location = run.loaded.location(&e.span);
    let line = location.rsplit(':').next().unwrap_or("0");
    Ok(Check {
        id: format!("{kind}.line{line}"),
        group: kind.to_string(),
        description: name,
        severity: Severity::Error,
        result: if ok { Outcome::Pass } else { Outcome::Fail },
        evidence: Evidence::new()
            .with("at", format_instant(now))
            .with("observed", observed),
        expected: Some(expected),
        how_to_fix: None,
        skip_reason: None,
        location: Some(location),
    })
}

type Verdict = (bool, String, Value, String);

fn count(c: &Count, n: u64) -> (bool, String) {
    (c.admits(n), c.to_string())
}

async fn verdict(run: &Run<'_>, check: &Expect, now: DateTime<Utc>) -> Result<Verdict> {
    Ok(match check {
        Expect::CampaignStatus { campaign, status } => {
            let v = run.campaign(campaign).await?;
            let seen = v["status"].as_str().unwrap_or("?").to_string();
            (
                seen == status.as_str(),
                format!("status {}", status.as_str()),
                json!(seen),
                campaign.clone(),
            )
        }
        Expect::CapacityWarning { campaign, warned } => {
            let v = run.campaign(campaign).await?;
            let warning = v["statistics"]["capacity_warning"].clone();
            (
                warning.is_null() != *warned,
                if *warned {
                    "statistics.capacity_warning set (rule 3: the budget exceeds the capacity)"
                        .into()
                } else {
                    "no statistics.capacity_warning".into()
                },
                warning,
                campaign.clone(),
            )
        }
        Expect::AttemptsPerUser {
            campaign,
            number,
            attempts,
        } => {
            // Every user of the campaign's uploads, those a stop file excluded too
            // (`users_total` leaves them out, though some were dialled before): those never
            // dialled are at 0 attempts. Read before the observer is locked.
            let (users, excluded) = match number {
                Some(_) => (0, 0),
                None => {
                    let v = run.campaign(campaign).await?;
                    let s = &v["statistics"];
                    (
                        s["users_total"].as_u64().unwrap_or(0),
                        s["users_excluded"].as_u64().unwrap_or(0),
                    )
                }
            };
            let mut observer = run.observer.lock();
            let mut histogram = std::collections::BTreeMap::<u32, u64>::new();
            let mut counted = 0;
            match number {
                Some(n) => {
                    let a = observer
                        .dials(campaign)
                        .users
                        .user(super::users::number_key(n))
                        .attempts;
                    *histogram.entry(a).or_default() += 1;
                }
                None => {
                    let mut dialled = 0;
                    if let Some(d) = observer.dials_mut(campaign) {
                        for u in d.users.users() {
                            *histogram.entry(u.attempts).or_default() += 1;
                            dialled += 1;
                        }
                    }
                    let never = (users + excluded).saturating_sub(dialled);
                    if never > 0 {
                        *histogram.entry(0).or_default() += never;
                    }
                    counted = dialled + never;
                }
            }
            let ok =
                !histogram.is_empty() && histogram.keys().all(|a| attempts.admits(u64::from(*a)));
            let mut observed: serde_json::Map<String, Value> = histogram
                .iter()
                .map(|(a, n)| {
                    (
                        format!("{a} attempt{}", crate::scenario::plural(*a as usize)),
                        json!(format!("{n} user{}", crate::scenario::plural(*n as usize))),
                    )
                })
                .collect();
            let whom = match number {
                Some(n) => n.clone(),
                None => {
                    observed.insert(
                        "users".into(),
                        json!(format!(
                            "{counted} (users_total {users}, users_excluded {excluded})"
                        )),
                    );
                    "every user of its uploads, those excluded by a stop file too".into()
                }
            };
            (
                ok,
                format!("{attempts} attempts for {whom}"),
                Value::Object(observed),
                campaign.clone(),
            )
        }
        Expect::Outcomes {
            campaign,
            total,
            connected,
            short_duration,
            busy,
            no_answer,
            failed,
            provider_error,
            internal_error,
        } => {
            let v = run.campaign(campaign).await?;
            let s = &v["statistics"];
            let by = &s["attempts_by_outcome"];
            let wanted: Vec<(&str, &Option<Count>, u64)> = vec![
                ("total", total, s["attempts_total"].as_u64().unwrap_or(0)),
                (
                    "connected",
                    connected,
                    by["connected"].as_u64().unwrap_or(0),
                ),
                (
                    "short_duration",
                    short_duration,
                    by["short_duration"].as_u64().unwrap_or(0),
                ),
                ("busy", busy, by["busy"].as_u64().unwrap_or(0)),
                (
                    "no_answer",
                    no_answer,
                    by["no_answer"].as_u64().unwrap_or(0),
                ),
                ("failed", failed, by["failed"].as_u64().unwrap_or(0)),
                (
                    "provider_error",
                    provider_error,
                    by["provider_error"].as_u64().unwrap_or(0),
                ),
                (
                    "internal_error",
                    internal_error,
                    by["internal_error"].as_u64().unwrap_or(0),
                ),
            ];
            counts(campaign, &wanted)
        }
        Expect::Users {
            campaign,
            total,
            done,
            unfinished,
            excluded,
            pending,
        } => {
            let v = run.campaign(campaign).await?;
            let s = &v["statistics"];
            let n = |k: &str| s[k].as_u64().unwrap_or(0);
            let wanted: Vec<(&str, &Option<Count>, u64)> = vec![
                ("total", total, n("users_total")),
                ("done", done, n("users_done")),
                ("unfinished", unfinished, n("users_unfinished")),
                ("excluded", excluded, n("users_excluded")),
                ("pending", pending, n("users_pending")),
            ];
            counts(campaign, &wanted)
        }
        Expect::DialRate {
            campaign,
            from,
            until,
            rate,
            tolerance,
        } => {
            let openings_until = run.openings_until(campaign);
            let observer = run.observer.lock();
            let watched = &observer.watched[campaign];
            let spec = watched.spec_at(now);
            let from = from.map_or(spec.start, |a| run.loaded.at(a));
            let until = until
                .map_or(spec.end.min(now), |a| run.loaded.at(a))
                .min(now);
            // Open time under the schedule in force at each instant (a patch's from its
            // time), within the campaign's span, none after a cancel.
            let open = watched.open_seconds_between(openings_until, from, until);
            let n = observer.dials(campaign).dials_between(from, until);
            let achieved = if open > 0 {
                n as f64 / open as f64
            } else {
                0.0
            };
            let tol = tolerance.unwrap_or(0.05);
            let ok = open > 0 && (achieved - rate).abs() <= rate * tol;
            (
                ok,
                format!("{rate} dials per open second, within {} %", tol * 100.0),
                json!({"dials": n, "open_seconds": open, "rate": round4(achieved),
                       "from": format_instant(from), "until": format_instant(until)}),
                campaign.clone(),
            )
        }
        Expect::WeightSplit {
            campaign,
            shares,
            tolerance,
        } => {
            let observer = run.observer.lock();
            let d = observer.dials(campaign);
            let total = d.total().max(1) as f64;
            let tol = tolerance.unwrap_or(0.02);
            let mut ok = d.total() > 0;
            let mut observed = serde_json::Map::new();
            for (conn, want) in shares {
                let got = *d.by_connection.get(conn).unwrap_or(&0) as f64 / total;
                ok &= (got - want).abs() <= tol;
                observed.insert(conn.clone(), json!(round4(got)));
            }
            for (conn, n) in &d.by_connection {
                if !shares.contains_key(conn) {
                    ok = false;
                    observed.insert(conn.clone(), json!(round4(*n as f64 / total)));
                }
            }
            let want: Vec<String> = shares.iter().map(|(c, s)| format!("{c} {s}")).collect();
            (
                ok,
                format!("shares {} (each within {tol})", want.join(", ")),
                Value::Object(observed),
                campaign.clone(),
            )
        }
        Expect::NumbersUsedEqually {
            campaign,
            connection,
            spread,
        } => {
            let observer = run.observer.lock();
            let d = observer.dials(campaign);
            let spec = observer.watched[campaign].spec_at(now);
            let allowed = spread.unwrap_or(1);
            let mut ok = true;
            let mut observed = serde_json::Map::new();
            for c in &spec.connections {
                if connection.as_ref().is_some_and(|k| k != &c.connection_id) {
                    continue;
                }
                let per: Vec<(String, u64)> = c
                    .phone_numbers
                    .iter()
                    .map(|p| {
                        let n = d.by_number.get(p.as_str()).copied().unwrap_or(0);
                        (p.as_str().to_string(), n)
                    })
                    .collect();
                let most = per.iter().map(|(_, n)| *n).max().unwrap_or(0);
                let least = per.iter().map(|(_, n)| *n).min().unwrap_or(0);
                // A connection that dialled nothing shows nothing about its numbers.
                ok &= most > 0 && most - least <= allowed;
                observed.insert(
                    c.connection_id.clone(),
                    Value::Object(per.into_iter().map(|(p, n)| (p, json!(n))).collect()),
                );
            }
            let which = connection
                .as_ref()
                .map_or("each connection".to_string(), |k| format!("connection {k}"));
            (
                ok && !observed.is_empty(),
                format!(
                    "the numbers of {which} used equally: dials differing by at most {allowed}"
                ),
                Value::Object(observed),
                campaign.clone(),
            )
        }
        Expect::NoDialOutsideWindow { campaign } => {
            let observer = run.observer.lock();
            let d = observer.dials(campaign);
            (
                d.outside == 0,
                "no dial outside the calling window, the start or the end".into(),
                json!({"dials": d.total(), "outside": d.outside, "examples": d.outside_examples}),
                campaign.clone(),
            )
        }
        Expect::NoDialRepeated { campaign } => {
            let mut observer = run.observer.lock();
            let repeats: u64 = observer
                .dials_mut(campaign)
                .map_or(0, |d| d.users.users().map(|u| u64::from(u.repeats)).sum());
            let d = observer.dials(campaign);
            (
                repeats == 0,
                "every user's attempt placed once".into(),
                json!({"dials": d.total(), "repeated": repeats}),
                campaign.clone(),
            )
        }
        Expect::KeyServiceCalls {
            endpoint,
            outcome,
            fault,
            calls,
        } => {
            let fault = fault.map(crate::scenario::kms::kind_name);
            let n = run.stack.kms().audit().count(|e| {
                (endpoint.as_str() == "all" || e.endpoint.as_str() == endpoint.as_str())
                    && outcome.as_ref().is_none_or(|o| &e.outcome == o)
                    && fault.is_none_or(|f| e.fault_kinds.iter().any(|k| k == f))
            }) as u64;
            let (ok, want) = count(calls, n);
            let what = match (outcome, fault) {
                (Some(o), Some(f)) => format!("{} calls ({o}, served {f})", endpoint.as_str()),
                (Some(o), None) => format!("{} calls ({o})", endpoint.as_str()),
                (None, Some(f)) => format!("{} calls (served {f})", endpoint.as_str()),
                (None, None) => format!("{} calls", endpoint.as_str()),
            };
            (
                ok,
                format!("{want} {what}"),
                json!(n),
                endpoint.as_str().to_string(),
            )
        }
        Expect::Webhooks {
            campaign,
            per_attempt,
        } => {
            let want = per_attempt.unwrap_or(Count::exactly(1));
            let got = run.receiver.received(&format!("campaigns/{campaign}"));
            let no_ids = std::collections::BTreeSet::new();
            let observer = run.observer.lock();
            let ids = observer
                .dials(campaign)
                .attempt_ids
                .as_ref()
                .unwrap_or(&no_ids);
            let mut wrong = 0u64;
            let mut examples = vec![];
            for id in ids {
                let n = got.per_attempt.get(id).copied().unwrap_or(0);
                if !want.admits(n) {
                    wrong += 1;
                    if examples.len() < 5 {
                        examples.push(format!("{id}: {n}"));
                    }
                }
            }
            let unknown = got.per_attempt.keys().filter(|a| !ids.contains(*a)).count();
            let ok = !ids.is_empty() && wrong == 0 && unknown == 0 && got.bad_signatures == 0;
            (
                ok,
                format!("{want} signed event(s) per attempt, every signature valid"),
                json!({"attempts": ids.len(), "events": got.events, "attempts_off": wrong,
                       "examples": examples, "events_for_unknown_attempts": unknown,
                       "bad_signatures": got.bad_signatures}),
                campaign.clone(),
            )
        }
        Expect::Inbound {
            call,
            answered,
            rejection,
            variables,
        } => {
            let v = run.inbound_call(call).cloned().unwrap_or(Value::Null);
            let got_answered = v["answered"].as_bool();
            let received = agent_variables(&v);
            let mut ok = got_answered == Some(*answered);
            if let Some(r) = rejection {
                ok &= v["rejection"].as_str() == Some(r.as_str());
            }
            if let Some(vars) = variables {
                ok &= &received == vars;
            }
            let mut want = if *answered {
                "answered".to_string()
            } else {
                "not answered".to_string()
            };
            if let Some(r) = rejection {
                want.push_str(&format!(" ({r})"));
            }
            if let Some(vars) = variables {
                want.push_str(&format!(", the agent receiving {vars}"));
            }
            (
                ok,
                want,
                json!({"answered": v["answered"], "rejection": v["rejection"], "agent_variables": received}),
                call.clone(),
            )
        }
        Expect::RejectedRecords { cohort, rejected } => match run.cohort(cohort).await {
            Some(v) => {
                let n = v["result"]["rejected_records"].as_u64();
                let (ok, want) = count(rejected, n.unwrap_or(0));
                (
                    ok && n.is_some(),
                    format!("{want} rejected records"),
                    json!({"status": v["status"], "result": v["result"]}),
                    cohort.clone(),
                )
            }
            None => (
                false,
                format!("{rejected} rejected records"),
                json!("the cohort was not uploaded by then"),
                cohort.clone(),
            ),
        },
    })
}

fn counts(campaign: &str, wanted: &[(&str, &Option<Count>, u64)]) -> Verdict {
    let mut ok = true;
    let mut want = vec![];
    let mut observed = serde_json::Map::new();
    for (name, c, n) in wanted {
        if let Some(c) = c {
            ok &= c.admits(*n);
            want.push(format!("{name} {c}"));
            observed.insert(name.to_string(), json!(n));
        }
    }
    (
        ok,
        want.join(", "),
        Value::Object(observed),
        campaign.to_string(),
    )
}

/// What the agent of an inbound call received, as the platform's record says: the caller's
/// cohort variables, an empty object when there were none (a caller in no cohort, a call
/// not answered).
pub(crate) fn agent_variables(record: &Value) -> Value {
    match &record["agent_variables"] {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    }
}

/// Rounds to 4 decimals (so reports do not carry float noise).
pub(crate) fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
