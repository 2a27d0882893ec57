//! The calling windows of the `sim` group as users write them: time zones west and east of
//! UTC and half an hour off the hour, allowed days that leave days out, windows across
//! midnight, and the days clocks spring forward and fall back, for campaigns
//! (`allowed_schedule`, judged from their dials) and deployments (`inbound_config`, judged
//! from inbound calls placed through the simulation API).
//!
//! The plan ([`super::sim_zones_plan`]) is computed from the target's clock when the part
//! starts; the clock is then moved straight to each instant that matters, in time order
//! (`POST /sim/v1/clock/advance`): where a part is created, and 1 s either side of each
//! window edge, where each deployment gets a call and each campaign's events are counted.
//! What is expected is computed by this harness's own reading of the schedules
//! ([`super::sim_zones_defs`], on the time-zone database), never by the platform's code.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use contracts::clock::Stopwatch;
use reqwest::Method;
use serde_json::{Value, json};

use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, cohort_stream, magic_number, secs, ts};
use super::receiver::Receiver;
use super::sim_defs::advance_to;
use super::sim_zones_defs::*;
use super::sim_zones_plan::{Camp, Dep, Plan};
use super::states::is_4xx;
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::Evidence;

/// How long to wait for campaign events a target delivers after the clock moved.
const EVENT_WAIT: StdDuration = StdDuration::from_secs(10);

/// What became of a campaign of the plan.
#[derive(Default)]
struct CampRun {
    created: Option<Exchange>,
    cohort: Option<Exchange>,
    /// The PATCH to its schedule, when the plan has one.
    patch: Option<Exchange>,
    id: Option<String>,
    stops: Vec<DateTime<Utc>>,
    /// The events received by each stop of the clock.
    seen: Vec<(DateTime<Utc>, usize)>,
}

/// What became of a deployment of the plan: its number and each call placed to it.
#[derive(Default)]
struct DepRun {
    created: Option<Exchange>,
    /// The PATCH to its inbound_config, when the plan has one.
    patch: Option<Exchange>,
    number: String,
    calls: Vec<(DateTime<Utc>, bool, Exchange)>,
}

/// The refusals of a start equal to the end.
#[derive(Default)]
struct Refusals {
    campaign: Option<Exchange>,
    deployment: Option<Exchange>,
}

fn answered(x: &Exchange) -> Option<bool> {
    (x.status == 200)
        .then(|| x.body()["answered"].as_bool())
        .flatten()
}

/// Runs the part; `recv` takes the campaigns' events (without one, only the inbound checks
/// run: the caller blocked the campaign checks).
pub(super) async fn run(cx: &Ctx, v: &mut Verdicts, recv: Option<&Receiver>) {
    let t0 = match cx.now().await {
        Ok(n) => n.at,
        Err(x) => return v.blocked_only(&CHECKS, "reading the simulated clock", x.evidence()),
    };
    let plan = Plan::new(t0);
    if plan.changes.len() != 2 {
        v.blocked_only(
            &[&WINDOW_DST, &INBOUND_DST],
            "finding the next daylight-saving changes of America/New_York and Australia/Sydney in the time-zone database",
            Evidence::new().with("from", ts(t0)),
        );
    }
    let mut camps: Vec<CampRun> = plan
        .camps
        .iter()
        .map(|c| CampRun {
            stops: c.stops(),
            ..CampRun::default()
        })
        .collect();
    let mut deps: Vec<DepRun> = plan.deps.iter().map(|_| DepRun::default()).collect();
    let mut refusals = Refusals::default();

    // Every action in time order: a part's creation before the stops at its instant.
    let mut acts: Vec<(DateTime<Utc>, Option<usize>)> = plan
        .setups
        .iter()
        .enumerate()
        .map(|(i, s)| (s.at, Some(i)))
        .collect();
    let mut stops: Vec<DateTime<Utc>> = camps.iter().flat_map(|c| c.stops.clone()).collect();
    stops.extend(plan.deps.iter().flat_map(|d| d.probes.clone()));
    stops.sort();
    stops.dedup();
    acts.extend(stops.into_iter().map(|t| (t, None)));
    acts.sort_by_key(|(t, what)| (*t, what.is_none()));
    let caller = magic_number(0, 321);
    let mut clock = t0;
    for (t, what) in acts {
        if t > clock {
            let moved = advance_to(cx, t).await;
            if !moved.is_success() {
                return v.blocked_only(
                    &CHECKS,
                    "moving the simulated clock",
                    moved.evidence().with("to", ts(t)),
                );
            }
            clock = t;
        }
        match what {
            Some(part) => {
                let p = Part {
                    cx,
                    recv,
                    plan: &plan,
                    index: part,
                };
                p.create(&mut camps, &mut deps, &mut refusals, clock).await;
            }
            None => {
                for (d, run) in plan.deps.iter().zip(deps.iter_mut()) {
                    if run.created.as_ref().is_some_and(Exchange::is_success)
                        && d.probes.contains(&t)
                    {
                        let x = cx
                            .send(
                                Method::POST,
                                &cx.paths.sim_inbound_calls(),
                                json!({"caller": caller, "dialled": run.number}),
                            )
                            .await;
                        run.calls.push((t, d.sched.contains(t), x));
                    }
                }
                if let Some(recv) = recv {
                    for run in camps.iter_mut() {
                        if let Some(id) = &run.id
                            && run.stops.contains(&t)
                        {
                            let n = recv.events(id).len();
                            run.seen.push((t, n));
                        }
                    }
                }
            }
        }
    }
    judge_inbound(v, &plan, &deps, &refusals);
    let Some(recv) = recv else { return };
    let last = plan.camps.iter().map(|c| c.life.to).max().unwrap_or(clock) + secs(1);
    if last > clock {
        let moved = advance_to(cx, last).await;
        if !moved.is_success() {
            return v.blocked_only(
                &CAMPAIGN_CHECKS,
                "moving the simulated clock past the campaigns' ends",
                moved.evidence().with("to", ts(last)),
            );
        }
    }
    // Wait for the events of every campaign, with one deadline for all.
    let watch = Stopwatch::start();
    while watch.elapsed() < EVENT_WAIT
        && plan.camps.iter().zip(&camps).any(|(c, r)| {
            r.id.as_ref()
                .is_some_and(|id| recv.events(id).len() < c.least())
        })
    {
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    judge_campaigns(v, &plan, &camps, recv, &refusals);
}

/// One part of the plan being created.
struct Part<'a> {
    cx: &'a Ctx,
    recv: Option<&'a Receiver>,
    plan: &'a Plan,
    index: usize,
}

impl Part<'_> {
    async fn create(
        &self,
        camps: &mut [CampRun],
        deps: &mut [DepRun],
        refusals: &mut Refusals,
        now: DateTime<Utc>,
    ) {
        let cx = self.cx;
        if let Some(recv) = self.recv {
            for (c, run) in self.plan.camps.iter().zip(camps.iter_mut()) {
                if c.part == self.index {
                    self.campaign(recv, c, run).await;
                }
            }
        }
        for (d, run) in self.plan.deps.iter().zip(deps.iter_mut()) {
            if d.part == self.index {
                run.number = cx.names.number();
                let mut body = fixtures::deployment(
                    &cx.settings.agent,
                    &cx.names.name(&d.label),
                    std::slice::from_ref(&run.number),
                );
                body["inbound_config"] =
                    d.before_patch.as_ref().unwrap_or(&d.sched).inbound_config();
                let x = cx.create_deployment(body).await;
                if let (Some(_), Some(id)) = (&d.before_patch, x.str_field("deployment_id")) {
                    let patch = json!({"inbound_config": d.sched.inbound_config()});
                    let path = cx.paths.deployment(id);
                    run.patch = Some(cx.send(Method::PATCH, &path, patch).await);
                }
                run.created = Some(x);
            }
        }
        if self.plan.setups[self.index].refusals {
            let (start, end) = (now + secs(180), now + secs(3780));
            let equal = |mut s: Value, a: &str, b: &str| {
                s[a] = json!("12:00");
                s[b] = json!("12:00");
                s
            };
            let night = |name: &str| cx.names.name(&format!("{NIGHT}{name}"));
            let sched = Schedule::new(
                DAYS_ZONE,
                &EVERY_DAY,
                chrono::NaiveTime::MIN,
                chrono::NaiveTime::MIN,
            );
            let mut body = fixtures::campaign(
                &cx.settings.agent,
                &night("equal"),
                &cx.names.number(),
                start,
                end,
            );
            body["allowed_schedule"] = equal(
                sched.allowed_schedule(),
                "allowed_start_time",
                "allowed_end_time",
            );
            refusals.campaign = Some(cx.create_campaign(body).await);
            let mut body =
                fixtures::deployment(&cx.settings.agent, &night("equal"), &[cx.names.number()]);
            body["inbound_config"] = equal(sched.inbound_config(), "start_time", "end_time");
            refusals.deployment = Some(cx.create_deployment(body).await);
        }
    }

    /// Creates the campaign `c` and streams its users (all never answer; no retries).
    async fn campaign(&self, recv: &Receiver, c: &Camp, run: &mut CampRun) {
        let cx = self.cx;
        let name = cx.names.name(&c.label);
        let mut b = fixtures::campaign(
            &cx.settings.agent,
            &name,
            &cx.names.number(),
            c.life.from,
            c.life.to,
        );
        b["allowed_schedule"] = c
            .before_patch
            .as_ref()
            .unwrap_or(&c.sched)
            .allowed_schedule();
        b["app_config"]["attempts_per_second"] = json!(RATE);
        b["app_config"]["retry_config"] =
            json!({"max_retries": 0, "retry_on": [], "threshold_seconds": 10});
        b["app_config"]["webhook_config"] = json!({"url": recv.url(&c.label)});
        let x = cx.create_campaign(b).await;
        run.id = x.str_field("campaign_id").map(str::to_string);
        if let (Some(_), Some(id)) = (&c.before_patch, &run.id) {
            let patch = json!({"allowed_schedule": c.sched.allowed_schedule()});
            run.patch = Some(cx.send(Method::PATCH, &cx.paths.campaign(id), patch).await);
        }
        if let Some(id) = &run.id {
            let users: Vec<(String, String)> = (0..c.users())
                .map(|i| (magic_number(2, 500 + i), format!("tz-user-{i}")))
                .collect();
            run.cohort = Some(
                cx.send(
                    Method::POST,
                    &cx.paths.cohorts(Parent::Campaign(id), &["stream"]),
                    cohort_stream(&name, &users),
                )
                .await,
            );
        }
        run.created = Some(x);
    }
}

fn executed(events: &[Value]) -> Vec<DateTime<Utc>> {
    let mut t: Vec<DateTime<Utc>> = events
        .iter()
        .filter_map(|e| e["executed_at"].as_str())
        .filter_map(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .collect();
    t.sort();
    t
}

/// A campaign's dials against its expected spans: whether they hold, the evidence, and
/// which of the things looked at held.
fn judge_campaign(c: &Camp, run: &CampRun, events: &[Value]) -> (bool, Value, Vec<String>) {
    let tz = c.sched.tz;
    let expected = c.expected();
    let t = executed(events);
    let mut problems: Vec<String> = Vec::new();
    if let Some(x) = refused_any_case(&c.sched, run.created.as_ref()) {
        return (
            true,
            x,
            vec!["day names in another letter case refused".into()],
        );
    }
    let created = run.id.is_some() && run.cohort.as_ref().is_some_and(Exchange::is_success);
    if !created {
        problems.push("the campaign and its users were not created (2xx)".into());
    }
    if c.before_patch.is_some() && !run.patch.as_ref().is_some_and(Exchange::is_success) {
        problems.push("the PATCH of its allowed_schedule was not accepted (2xx)".into());
    }
    let outside: Vec<DateTime<Utc>> = t
        .iter()
        .copied()
        .filter(|x| !expected.iter().any(|s| s.contains(*x)))
        .collect();
    if !outside.is_empty() {
        problems.push(format!(
            "{} dials outside the expected spans",
            outside.len()
        ));
    }
    let edge = |e: DateTime<Utc>| c.life.from < e && e < c.life.to;
    let (mut opens_ok, mut closes_ok) = (None, None);
    for s in &expected {
        let inside: Vec<DateTime<Utc>> = t.iter().copied().filter(|x| s.contains(*x)).collect();
        let (Some(first), Some(last)) = (inside.first(), inside.last()) else {
            problems.push(format!(
                "no dial from {} to {}",
                local(tz, s.from),
                local(tz, s.to)
            ));
            continue;
        };
        let prompt = *first - s.from <= secs(1);
        let full = s.to - *last <= period();
        if !prompt {
            problems.push(format!(
                "the first dial from {} came at {}",
                local(tz, s.from),
                ts(*first)
            ));
        }
        if !full {
            problems.push(format!(
                "the last dial before {} came at {}",
                local(tz, s.to),
                ts(*last)
            ));
        }
        if edge(s.from) {
            opens_ok = Some(opens_ok.unwrap_or(true) && prompt);
        }
        if edge(s.to) {
            closes_ok = Some(closes_ok.unwrap_or(true) && full);
        }
    }
    let mut looked = Vec::new();
    if outside.is_empty() && !t.is_empty() {
        looked.push("none outside its windows".to_string());
    }
    if opens_ok == Some(true) {
        looked.push("the first as a window opens".to_string());
    }
    if closes_ok == Some(true) {
        looked.push("the last just before a window closes".to_string());
    }
    if opens_ok.is_none() && closes_ok.is_none() && problems.is_empty() {
        looked.push("dials throughout its life".to_string());
    }
    let stops: Vec<Value> = run
        .seen
        .iter()
        .map(|(at, n)| json!({"at": ts(*at), "local": local(tz, *at), "events_received": n}))
        .collect();
    let evidence = json!({
        "campaign": c.label,
        "schedule": c.sched.describe(),
        "request": run.created.as_ref().map_or(Value::Null, |x| x.sent.to_value()),
        "response": run.created.as_ref().map_or(Value::Null, Exchange::response),
        "created_with": c.before_patch.as_ref().map_or(Value::Null, |s| json!(s.describe())),
        "patch": run.patch.as_ref().map_or(Value::Null, |x| Value::Object(x.evidence().0)),
        "cohort": run.cohort.as_ref().map_or(Value::Null, Exchange::response),
        "life": c.life.to_value(tz),
        "expected": expected.iter().map(|s| s.to_value(tz)).collect::<Vec<_>>(),
        "executed_at": t.iter().map(|x| ts(*x)).collect::<Vec<_>>(),
        "outside": outside.iter().map(|x| json!({"at": ts(*x), "local": local(tz, *x)})).collect::<Vec<_>>(),
        "clock_stops": stops,
        "problems": problems,
    });
    (problems.is_empty(), evidence, looked)
}

/// The dials of a campaign by local date: `{"2026-03-06 (Friday)": 14, ...}`.
fn by_day(c: &Camp, events: &[Value]) -> serde_json::Map<String, Value> {
    let tz = c.sched.tz;
    let mut days = serde_json::Map::new();
    let mut d = c.life.from.with_timezone(&tz).date_naive();
    let last = c.life.to.with_timezone(&tz).date_naive();
    let key = |d: chrono::NaiveDate| {
        use chrono::Datelike;
        format!("{d} ({})", day_name(d.weekday()))
    };
    while d <= last {
        days.insert(key(d), json!(0));
        d += chrono::Duration::days(1);
    }
    for t in executed(events) {
        let k = key(t.with_timezone(&tz).date_naive());
        let n = days.get(&k).and_then(Value::as_u64).unwrap_or(0);
        days.insert(k, json!(n + 1));
    }
    days
}

fn judge_campaigns(
    v: &mut Verdicts,
    plan: &Plan,
    runs: &[CampRun],
    recv: &Receiver,
    refusals: &Refusals,
) {
    for def in CAMPAIGN_CHECKS {
        let mut ok = true;
        let mut items = Vec::new();
        for (c, run) in plan
            .camps
            .iter()
            .zip(runs)
            .filter(|(c, _)| c.check.id == def.id)
        {
            let events = run
                .id
                .as_ref()
                .map(|id| recv.events(id))
                .unwrap_or_default();
            let (good, mut evidence, looked) = judge_campaign(c, run, &events);
            ok &= good;
            v.varied(def, "looked", looked);
            if def.id == WINDOW_DAYS.id {
                let days = by_day(c, &events);
                v.varied(def, "dials on a local day", days.values().cloned());
                evidence["dials_by_local_day"] = Value::Object(days);
            }
            items.push(evidence);
        }
        let mut e = Evidence::new().with("campaigns", items);
        let mut expected = format!(
            "dials only inside each campaign's expected spans (its schedule read by the recorded rules, inside its life); in each span the first dial within 1 s of its start, the last within {:.2} s of its end ({RATE} dials a second)",
            period().as_seconds_f64()
        );
        if def.id == WINDOW_OVERNIGHT.id {
            let refused = refusals.campaign.as_ref();
            ok &= refused.is_some_and(is_4xx);
            if let Some(x) = refused {
                // The refusal's status beside the overnight campaigns' creations.
                let created = plan
                    .camps
                    .iter()
                    .zip(runs)
                    .filter(|(c, _)| c.check.id == def.id);
                let statuses = created.filter_map(|(_, r)| r.created.as_ref().map(|x| x.status));
                v.varied(def, "status of a create", statuses.chain([x.status]));
                e = e.with("start_equal_to_end", Value::Object(x.evidence().0));
            }
            expected.push_str("; a campaign whose allowed_start_time equals its allowed_end_time refused with a 4xx");
        }
        if plan.changes.len() == 2 && def.id == WINDOW_DST.id {
            e = e.with(
                "changes",
                plan.changes
                    .iter()
                    .map(Change::describe)
                    .collect::<Vec<_>>(),
            );
        }
        if items_empty(&e) {
            continue;
        }
        v.judge(def, ok, e, expected);
    }
}

fn items_empty(e: &Evidence) -> bool {
    e.0.get("campaigns")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

fn judge_inbound(v: &mut Verdicts, plan: &Plan, runs: &[DepRun], refusals: &Refusals) {
    for def in [
        &INBOUND_ZONES,
        &INBOUND_DAYS,
        &INBOUND_OVERNIGHT,
        &INBOUND_DST,
    ] {
        let mut ok = true;
        let mut items = Vec::new();
        for (d, run) in plan
            .deps
            .iter()
            .zip(runs)
            .filter(|(d, _)| d.check.id == def.id)
        {
            let (good, evidence) = judge_deployment(d, run);
            ok &= good;
            v.varied(
                def,
                "answered",
                run.calls.iter().map(|(_, _, x)| json!(answered(x))),
            );
            items.push(evidence);
        }
        if items.is_empty() {
            continue;
        }
        let mut e = Evidence::new().with("deployments", items);
        let mut expected = "at each probe (1 s either side of each opening and closing the schedule gives, in its zone) \"answered\" as listed under expected".to_string();
        if def.id == INBOUND_OVERNIGHT.id {
            let refused = refusals.deployment.as_ref();
            ok &= refused.is_some_and(is_4xx);
            if let Some(x) = refused {
                // The refusal's status beside the overnight deployments' creations.
                let created = plan
                    .deps
                    .iter()
                    .zip(runs)
                    .filter(|(d, _)| d.check.id == def.id);
                let statuses = created.filter_map(|(_, r)| r.created.as_ref().map(|x| x.status));
                v.varied(def, "status of a create", statuses.chain([x.status]));
                e = e.with("start_equal_to_end", Value::Object(x.evidence().0));
            }
            expected
                .push_str("; a deployment whose start_time equals its end_time refused with a 4xx");
        }
        if plan.changes.len() == 2 && def.id == INBOUND_DST.id {
            e = e.with(
                "changes",
                plan.changes
                    .iter()
                    .map(Change::describe)
                    .collect::<Vec<_>>(),
            );
        }
        v.judge(def, ok, e, expected);
    }
}

/// The evidence of a schedule whose day names are in every letter case when the platform
/// refused it with a 4xx: the documents list the names capitalised, so a refusal keeps the
/// contract (what is taken must name the same days).
fn refused_any_case(s: &Schedule, created: Option<&Exchange>) -> Option<Value> {
    let x = created.filter(|x| s.any_case && is_4xx(x))?;
    Some(json!({
        "schedule": s.describe(),
        "request": x.sent.to_value(),
        "response": x.response(),
        "note": "day names in another letter case refused with a 4xx: the documents list them capitalised",
    }))
}

fn judge_deployment(d: &Dep, run: &DepRun) -> (bool, Value) {
    let tz = d.sched.tz;
    if let Some(x) = refused_any_case(&d.sched, run.created.as_ref()) {
        return (true, x);
    }
    let patched = d.before_patch.is_none() || run.patch.as_ref().is_some_and(Exchange::is_success);
    let created = patched && run.created.as_ref().is_some_and(Exchange::is_success);
    let probes: Vec<Value> = run
        .calls
        .iter()
        .map(|(at, want, x)| {
            json!({"at": ts(*at), "local": local(tz, *at), "expected": want, "answered": answered(x),
                   "rejection": x.body().get("rejection").cloned().unwrap_or(Value::Null)})
        })
        .collect();
    let wrong: Vec<Value> = run
        .calls
        .iter()
        .zip(&probes)
        .filter(|((_, want, x), _)| answered(x) != Some(*want))
        .map(|(_, p)| p.clone())
        .collect();
    let ok = created && run.calls.len() == d.probes.len() && wrong.is_empty();
    let evidence = json!({
        "deployment": d.label,
        "schedule": d.sched.describe(),
        "request": run.created.as_ref().map_or(Value::Null, |x| x.sent.to_value()),
        "response": run.created.as_ref().map_or(Value::Null, Exchange::response),
        "created_with": d.before_patch.as_ref().map_or(Value::Null, |s| json!(s.describe())),
        "patch": run.patch.as_ref().map_or(Value::Null, |x| Value::Object(x.evidence().0)),
        "probes": probes,
        "not_as_expected": wrong,
    });
    (ok, evidence)
}
