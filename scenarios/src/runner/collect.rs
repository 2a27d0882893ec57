//! The report of a finished run, from what the runner saw and what the platform, the key
//! service, the telephony and the webhook receiver answer at the end.

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use contracts::clock::format_instant;

use super::judge::{agent_variables, round4};
use super::observe::{RESULTS, series_names};
use super::run::Run;
use crate::checks::{Check, CheckReport, Evidence, Outcome, Severity};
use crate::report::scenario::{
    CampaignReport, Chart, CohortReport, ConnectionReport, Count, InboundReport, KeyServiceCount,
    Mark, NumberReport, Period, RuleReport, ScenarioReport, TimelineEntry, WebhookReport,
    WindowReport,
};

/// Builds the report.
pub(crate) async fn report(run: &Run<'_>) -> Result<ScenarioReport> {
    let l = run.loaded;
    let mut checks: Vec<Check> = run.checks.values().cloned().collect();
    for (name, handle, expected, location) in &run.rules {
        if let Some(n) = expected {
            let hits = handle.hits();
            checks.push(Check {
                id: format!(
                    "telephony_rule.line{}",
                    location.rsplit(':').next().unwrap_or("0")
                ),
                group: "telephony_rule".into(),
                description: format!("telephony rule {name} answers {n} dials"),
                severity: Severity::Error,
                result: if hits == *n {
                    Outcome::Pass
                } else {
                    Outcome::Fail
                },
                evidence: Evidence::new()
                    .with("at", format_instant(run.now))
                    .with("observed", hits),
                expected: Some(format!("exactly {n} dials")),
                how_to_fix: None,
                skip_reason: None,
                location: Some(location.clone()),
            });
        }
    }
    checks.extend(run.refused.iter().cloned());
    let expectations = CheckReport::new(l.name.clone(), l.file.clone(), checks);

    let mut campaigns = vec![];
    let mut windows = vec![];
    // In the order they were created: the file's.
    for def in &l.scenario.campaigns {
        let key = &def.key;
        let Some(created) = run.campaigns.get(key) else {
            continue;
        };
        let v = run.campaign(key).await?;
        let until = run.openings_until(key);
        let observer = run.observer.lock();
        let d = observer.dials(key);
        let watched = &observer.watched[key];
        let spec = watched.spec_at(run.now);
        let total = d.total();
        // Every connection it had: one a patch removed keeps its dials, marked when.
        let connections = watched
            .connections()
            .into_iter()
            .map(|c| {
                let n = d.by_connection.get(&c.connection_id).copied().unwrap_or(0);
                ConnectionReport {
                    weight: c.weight,
                    dials: n,
                    share: if total > 0 {
                        round4(n as f64 / total as f64)
                    } else {
                        0.0
                    },
                    numbers: c
                        .phone_numbers
                        .iter()
                        .map(|p| NumberReport {
                            phone_number: p.clone(),
                            dials: d.by_number.get(p.as_str()).copied().unwrap_or(0),
                        })
                        .collect(),
                    removed_at: c.removed_at.map(format_instant),
                    connection_id: c.connection_id,
                }
            })
            .collect();
        // Each opening under the schedule in force then, none after a cancel. A dial at the
        // cancel's instant was made before it (the engine's events due at an instant run
        // before the step there): it counts in the opening the cancel ends.
        let cancelled = run.campaigns[key].cancelled_at;
        let mut per_window = vec![];
        for o in watched.openings(until) {
            let to = if Some(o.close) == cancelled {
                o.close + Duration::milliseconds(1)
            } else {
                o.close
            };
            let n = d.dials_between(o.open, to);
            let secs = (o.close - o.open).num_seconds().max(1);
            per_window.push(WindowReport {
                from: format_instant(o.open),
                until: format_instant(o.close),
                dials: n,
                rate: round4(n as f64 / secs as f64),
                attempts_per_second: o.attempts_per_second,
            });
            windows.push([format_instant(o.open), format_instant(o.close)]);
        }
        campaigns.push(CampaignReport {
            key: key.clone(),
            campaign_id: created.id.clone(),
            status: v["status"].as_str().unwrap_or("?").to_string(),
            statistics: v["statistics"].clone(),
            dials_by_result: RESULTS
                .iter()
                .enumerate()
                .map(|(i, (_, name))| Count {
                    name: name.to_string(),
                    count: d.by_result[i],
                })
                .collect(),
            connections,
            windows: per_window,
            dials_outside_window: d.outside,
            attempts_per_second: spec.attempts_per_second,
        });
    }
    windows.sort();
    windows.dedup();

    let mut cohorts = vec![];
    for c in &l.scenario.cohorts {
        let (id, status, result) = match run.cohort(&c.key).await {
            Some(v) => (
                v["cohort_id"].as_str().map(str::to_string),
                v["status"].as_str().unwrap_or("?").to_string(),
                v["result"].clone(),
            ),
            None => (None, "not uploaded".into(), serde_json::Value::Null),
        };
        cohorts.push(CohortReport {
            key: c.key.clone(),
            cohort_id: id,
            status,
            result,
        });
    }

    let mut inbound_calls: Vec<InboundReport> = run
        .inbound
        .iter()
        .map(|(key, v)| InboundReport {
            key: key.clone(),
            at: v["at"].as_str().unwrap_or("").to_string(),
            caller: v["caller"].as_str().unwrap_or("").to_string(),
            dialled: v["dialled"].as_str().unwrap_or("").to_string(),
            answered: v["answered"].as_bool().unwrap_or(false),
            rejection: v["rejection"].as_str().map(str::to_string),
            agent_variables: agent_variables(v),
        })
        .collect();
    // Made in time order; sorted by the platform's time all the same (stable: a tie keeps
    // the timeline's order).
    inbound_calls.sort_by(|a, b| a.at.cmp(&b.at));

    let mut kms = std::collections::BTreeMap::<(String, String, Option<String>), u64>::new();
    for e in run.stack.kms().audit().entries() {
        let fault = (!e.fault_kinds.is_empty()).then(|| e.fault_kinds.join("+"));
        *kms.entry((e.endpoint.as_str().to_string(), e.outcome.clone(), fault))
            .or_default() += 1;
    }
    let key_service = kms
        .into_iter()
        .map(|((endpoint, outcome, fault), calls)| KeyServiceCount {
            endpoint,
            outcome,
            fault,
            calls,
        })
        .collect();

    let webhooks = run
        .receiver
        .inbox
        .lock()
        .expect("the inbox lock is never poisoned")
        .iter()
        .map(|(path, r)| WebhookReport {
            path: path.clone(),
            events: r.events,
            bad_signatures: r.bad_signatures,
            attempts: r.per_attempt.len() as u64,
            by_status: r
                .by_type
                .iter()
                .map(|(k, n)| Count {
                    name: k.clone(),
                    count: *n,
                })
                .collect(),
        })
        .collect();

    let telephony_rules = run
        .rules
        .iter()
        .map(|(name, h, _, _)| RuleReport {
            name: name.clone(),
            dials: h.hits(),
        })
        .collect();

    let mut timeline = run.timeline.clone();
    timeline.sort_by(|a, b| a.at.cmp(&b.at));
    let chart = chart(run, &timeline, windows);
    Ok(ScenarioReport {
        scenario: l.name.clone(),
        file: l.file.clone(),
        description: l.scenario.description.clone(),
        seed: run.seed,
        start: format_instant(l.start),
        until: format_instant(l.until),
        passed: expectations.holds(),
        timeline,
        campaigns,
        cohorts,
        inbound_calls,
        key_service,
        webhooks,
        telephony_rules,
        chart,
        expectations,
    })
}

/// The chart: the run from its start to the end of its activity (the last dial or call, the
/// last mark, the last edge of a fault) and a margin, or to its end; the timeline's rows but
/// cohort uploads as marks, numbered as in the timeline.
fn chart(run: &Run<'_>, timeline: &[TimelineEntry], windows: Vec<[String; 2]>) -> Chart {
    let l = run.loaded;
    let observer = run.observer.lock();
    let c = &observer.chart;
    let faults = run.fault_periods();
    let instant = |s: &str| s.parse::<DateTime<Utc>>().ok();
    let last = [
        c.last_active(),
        // A campaign's end with time is not activity: the chart says it comes later.
        timeline
            .iter()
            .filter(|e| !(e.kind == "status" && e.detail.ends_with("-> ended")))
            .filter_map(|e| instant(&e.at))
            .max(),
        faults
            .iter()
            .map(|(from, until, _)| if *until < l.until { *until } else { *from })
            .max(),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(l.until);
    let active = (last - l.start).max(Duration::minutes(10));
    let shown = (l.start + active + active / 20).min(l.until);
    let (bucket_secs, buckets) = c.rebin(shown);
    Chart {
        from: format_instant(c.from),
        until: format_instant(shown),
        run_until: format_instant(l.until),
        bucket_secs,
        series: series_names(),
        buckets: buckets
            .into_iter()
            .map(|(i, b)| std::iter::once(i).chain(b).collect())
            .collect(),
        windows,
        faults: faults
            .into_iter()
            .map(|(from, until, label)| Period {
                from: format_instant(from),
                until: format_instant(until),
                label,
            })
            .collect(),
        marks: timeline
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind != "cohort")
            .map(|(i, e)| Mark {
                n: i + 1,
                at: e.at.clone(),
                kind: e.kind.clone(),
                subject: e.subject.clone(),
                detail: e.detail.clone(),
            })
            .collect(),
    }
}
