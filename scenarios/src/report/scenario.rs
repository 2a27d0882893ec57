//! The report of one scenario run: what happened over time and what was judged. Built by the
//! runner, written as `report.json` (this model, serialised: fields in this order, times in
//! RFC 3339 UTC, no wall-clock figure, so the same file and seed give the same bytes),
//! rendered as `report.html` ([`super::html`]), as `junit.xml` (its [`CheckReport`] through
//! [`super::junit`]) and on the terminal ([`render_text`]).

use std::fmt::Write;

use serde::Serialize;

use crate::checks::{CheckReport, Outcome};
use crate::report::table::{self, Colour};
pub use contracts::report::chart::{Chart, Mark, Period};

/// One scenario run.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    /// The scenario's name.
    pub scenario: String,
    /// The file: its path relative to the current directory when under it, else its name
    /// (the same whether it was named by a relative or an absolute path).
    pub file: String,
    /// What it shows.
    pub description: Option<String>,
    /// The seed it ran with.
    pub seed: u64,
    /// Simulated start of the run.
    pub start: String,
    /// Simulated end of the run.
    pub until: String,
    /// Whether every expectation held.
    pub passed: bool,
    /// What happened, in time order: actions, status changes, faults, restarts.
    pub timeline: Vec<TimelineEntry>,
    /// Each campaign: final state, attempts by result, dials by connection and per window.
    pub campaigns: Vec<CampaignReport>,
    /// Cohorts uploaded.
    pub cohorts: Vec<CohortReport>,
    /// Inbound calls made by the timeline.
    pub inbound_calls: Vec<InboundReport>,
    /// Calls to the key service, by endpoint and outcome.
    pub key_service: Vec<KeyServiceCount>,
    /// Webhooks the runner's receiver got.
    pub webhooks: Vec<WebhookReport>,
    /// Scripted telephony rules and how many dials each answered.
    pub telephony_rules: Vec<RuleReport>,
    /// Dials and inbound calls over time by result, bucketed, with what is marked and
    /// shaded ([`contracts::report::chart`] draws it).
    pub chart: Chart,
    /// The expectations, judged.
    pub expectations: CheckReport,
}

/// Something that happened at a simulated time.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimelineEntry {
    /// When (RFC 3339).
    pub at: String,
    /// `action`, `status`, `fault`, `restart`, `cohort`.
    pub kind: String,
    /// What it concerns (a campaign's key, `key service`, `platform`).
    pub subject: String,
    /// What happened.
    pub detail: String,
}

/// A campaign at the end of the run.
#[derive(Clone, Debug, Serialize)]
pub struct CampaignReport {
    /// The scenario's key.
    pub(crate) key: String,
    /// The platform's id.
    pub campaign_id: String,
    /// Its status at the end.
    pub(crate) status: String,
    /// Its `statistics` at the end, as the API answers them.
    pub(crate) statistics: serde_json::Value,
    /// Dials seen by the telephony, by result.
    pub dials_by_result: Vec<Count>,
    /// Dials by connection, with their share: every connection it had, those a patch
    /// removed too (their shares add up to 1).
    pub(crate) connections: Vec<ConnectionReport>,
    /// The dial rate achieved in each opening of the calling window, under the schedule in
    /// force at its time; none after a cancel, and the one it was cancelled in ends there.
    pub(crate) windows: Vec<WindowReport>,
    /// Dials outside the calling window or the campaign's span.
    pub(crate) dials_outside_window: u64,
    /// The rate asked for at the end (dials per second).
    pub(crate) attempts_per_second: f64,
}

/// A named count.
#[derive(Clone, Debug, Serialize)]
pub struct Count {
    /// The name.
    pub(crate) name: String,
    /// The count.
    pub count: u64,
}

/// Dials on one connection.
#[derive(Clone, Debug, Serialize)]
pub struct ConnectionReport {
    /// `connection_id`.
    pub(crate) connection_id: String,
    /// Its weight.
    pub(crate) weight: u32,
    /// Dials placed on it.
    pub(crate) dials: u64,
    /// Its share of the campaign's dials (0 to 1, 4 decimals).
    pub(crate) share: f64,
    /// Dials by each of its phone numbers, in the connection's order (rule 4: used equally).
    pub(crate) numbers: Vec<NumberReport>,
    /// When a `patch_campaign` took it away (RFC 3339); none while the campaign still has
    /// it. A removed connection keeps the dials it made.
    pub(crate) removed_at: Option<String>,
}

/// Dials that left from one agent number.
#[derive(Clone, Debug, Serialize)]
pub struct NumberReport {
    /// The number (E.164).
    pub(crate) phone_number: String,
    /// Dials that left from it.
    pub(crate) dials: u64,
}

/// One opening of a calling window.
#[derive(Clone, Debug, Serialize)]
pub struct WindowReport {
    /// Opens (RFC 3339).
    pub(crate) from: String,
    /// Closes.
    pub(crate) until: String,
    /// Dials inside.
    pub(crate) dials: u64,
    /// Dials per open second (4 decimals).
    pub(crate) rate: f64,
    /// The rate asked by the spec in force in it (dials per second).
    pub(crate) attempts_per_second: f64,
}

/// A cohort.
#[derive(Clone, Debug, Serialize)]
pub struct CohortReport {
    /// The scenario's key.
    pub(crate) key: String,
    /// The platform's id (none when never uploaded).
    pub(crate) cohort_id: Option<String>,
    /// `completed`, `failed`, `processing`, or `not uploaded`.
    pub(crate) status: String,
    /// `result` as the API answers it.
    pub(crate) result: serde_json::Value,
}

/// An inbound call.
#[derive(Clone, Debug, Serialize)]
pub struct InboundReport {
    /// The scenario's key.
    pub(crate) key: String,
    /// When.
    pub(crate) at: String,
    /// Caller.
    pub(crate) caller: String,
    /// Number dialled.
    pub(crate) dialled: String,
    /// Whether the agent answered.
    pub(crate) answered: bool,
    /// Why not.
    pub(crate) rejection: Option<String>,
    /// What the agent received.
    pub(crate) agent_variables: serde_json::Value,
}

/// Calls to one key-service endpoint with one outcome and the same faults served.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyServiceCount {
    /// `auth`, `decrypt-key`, `rotate-key`.
    pub(crate) endpoint: String,
    /// `OK` or the error code (`NO_RESPONSE` when the caller gave up).
    pub(crate) outcome: String,
    /// The fault kinds served on these calls, joined by `+` (`latency`, `malformed_json`,
    /// ...); none for calls no fault touched.
    pub(crate) fault: Option<String>,
    /// How many.
    pub(crate) calls: u64,
}

/// Webhooks received for one campaign or for the deployments.
#[derive(Clone, Debug, Serialize)]
pub struct WebhookReport {
    /// `campaigns/<key>` or `deployments`.
    pub(crate) path: String,
    /// Events received.
    pub(crate) events: u64,
    /// Events whose signature did not verify.
    pub(crate) bad_signatures: u64,
    /// Distinct attempts with events.
    pub(crate) attempts: u64,
    /// Events by `completion_status`.
    pub(crate) by_status: Vec<Count>,
}

/// A scripted telephony rule.
#[derive(Clone, Debug, Serialize)]
pub struct RuleReport {
    /// Its name.
    pub(crate) name: String,
    /// Dials it answered.
    pub(crate) dials: u64,
}

/// A dial rate people can read: per second, or per hour below 0.01 per second (where
/// "0.000/s" would hide it).
pub(crate) fn rate_text(per_second: f64) -> String {
    if per_second > 0.0 && per_second < 0.01 {
        format!("{:.1}/h", per_second * 3600.0)
    } else {
        format!("{per_second:.3}/s")
    }
}

/// A line of the webhooks received on one path: a campaign's count attempts, the
/// deployments' inbound calls have none.
fn webhook_line(w: &WebhookReport) -> String {
    let events = format!(
        "{} event{}",
        w.events,
        crate::scenario::plural(w.events as usize)
    );
    let signatures = format!(
        "{} bad signature{}",
        w.bad_signatures,
        crate::scenario::plural(w.bad_signatures as usize)
    );
    if w.path == "deployments" {
        format!("webhooks of deployments (inbound calls): {events}, {signatures}")
    } else {
        format!(
            "webhooks {}: {events} for {} attempt{}, {signatures}",
            w.path,
            w.attempts,
            crate::scenario::plural(w.attempts as usize)
        )
    }
}

/// The report as JSON: pretty-printed, ending with a newline.
pub fn to_json(report: &ScenarioReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report is plain data");
    s.push('\n');
    s
}

/// The report for a terminal: the timeline, each campaign's attempts by result and rate per
/// window, key-service calls, webhooks, then the expectations with pass/fail. `quiet`: only
/// the failing expectations (with what was expected and observed) and the summary; one line
/// when every expectation holds.
pub(crate) fn render_text(r: &ScenarioReport, colour: Colour, quiet: bool) -> String {
    let mut out = String::new();
    if quiet {
        let mut failing = r.expectations.clone();
        failing.checks.retain(|c| c.result == Outcome::Fail);
        if failing.checks.is_empty() {
            let _ = writeln!(
                out,
                "{}: {}: {}",
                failing.suite,
                failing.target,
                failing.summary.line()
            );
        } else {
            out.push_str(&table::render(&failing, colour));
        }
        return out;
    }
    {
        let _ = writeln!(out, "== {} ({}, seed {})", r.scenario, r.file, r.seed);
        let _ = writeln!(out, "   {} to {}", r.start, r.until);
        if !r.timeline.is_empty() {
            let _ = writeln!(out, "\ntimeline:");
            for e in &r.timeline {
                let _ = writeln!(
                    out,
                    "  {}  {:<7} {:<12} {}",
                    e.at, e.kind, e.subject, e.detail
                );
            }
        }
        for c in &r.campaigns {
            let _ = writeln!(
                out,
                "\ncampaign {} ({}): {}",
                c.key, c.campaign_id, c.status
            );
            let results: Vec<String> = c
                .dials_by_result
                .iter()
                .filter(|n| n.count > 0)
                .map(|n| format!("{} {}", n.name, n.count))
                .collect();
            let total: u64 = c.dials_by_result.iter().map(|n| n.count).sum();
            let _ = writeln!(out, "  attempts: {total} ({})", results.join(", "));
            let conns: Vec<String> = c
                .connections
                .iter()
                .map(|k| match &k.removed_at {
                    Some(at) => format!(
                        "{} {} ({:.1} %, removed {at})",
                        k.connection_id,
                        k.dials,
                        k.share * 100.0
                    ),
                    None => format!("{} {} ({:.1} %)", k.connection_id, k.dials, k.share * 100.0),
                })
                .collect();
            let _ = writeln!(out, "  connections: {}", conns.join(", "));
            let shown = 8;
            for w in c.windows.iter().take(shown) {
                let _ = writeln!(
                    out,
                    "  window {} to {}: {} dials, {} (asked {})",
                    w.from,
                    w.until,
                    w.dials,
                    rate_text(w.rate),
                    rate_text(w.attempts_per_second)
                );
            }
            if c.windows.len() > shown {
                let _ = writeln!(
                    out,
                    "  ... {} more windows (see report.html)",
                    c.windows.len() - shown
                );
            }
        }
        if !r.key_service.is_empty() {
            let calls: Vec<String> = r
                .key_service
                .iter()
                .map(|k| match &k.fault {
                    Some(f) => format!("{} {} [{f}] {}", k.endpoint, k.outcome, k.calls),
                    None => format!("{} {} {}", k.endpoint, k.outcome, k.calls),
                })
                .collect();
            let _ = writeln!(out, "\nkey service: {}", calls.join(", "));
        }
        for w in &r.webhooks {
            let _ = writeln!(out, "{}", webhook_line(w));
        }
        out.push('\n');
    }
    out.push_str(&table::render(&r.expectations, colour));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_rates_are_shown_per_hour() {
        assert_eq!(rate_text(0.1), "0.100/s");
        assert_eq!(rate_text(0.01), "0.010/s");
        assert_eq!(rate_text(6.0 / 3600.0), "6.0/h");
        assert_eq!(rate_text(0.0), "0.000/s");
    }

    #[test]
    fn deployment_webhooks_are_not_counted_in_attempts() {
        let w = |path: &str, attempts| WebhookReport {
            path: path.into(),
            events: 3,
            bad_signatures: 0,
            attempts,
            by_status: vec![],
        };
        assert_eq!(
            webhook_line(&w("deployments", 0)),
            "webhooks of deployments (inbound calls): 3 events, 0 bad signatures"
        );
        assert_eq!(
            webhook_line(&w("campaigns/c", 1)),
            "webhooks campaigns/c: 3 events for 1 attempt, 0 bad signatures"
        );
    }
}
