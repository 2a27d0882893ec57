//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched)
//! with the verdict, the expectations, the chart of dials over time ([`super::chart`]) and the
//! tables of the report.

use std::fmt::Write;

use super::chart;
use super::junit::escape;
use super::scenario::ScenarioReport;
use crate::checks::{Outcome, Severity};

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px;overflow-wrap:anywhere}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555}.verdict{display:inline-block;padding:2px 10px;border-radius:4px;font-weight:600;color:#fff}
.pass{background:#2e7d32}.fail{background:#c62828}
table{border-collapse:collapse;width:100%;margin:6px 0 12px;font-size:13px;table-layout:fixed}th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fdecea}code{font-size:12px;word-break:break-all}pre{white-space:pre-wrap;overflow-wrap:anywhere}
tr:target td{background:#fff8d6}.observed small{color:#666}
#timeline col.n{width:3.5em}#timeline col.at{width:16em}#timeline col.kind{width:5.5em}#timeline col.subject{width:9em}
#expectations col.result{width:5.5em}#expectations col.where{width:11em}
svg .bucket:hover{fill-opacity:.07}svg a:hover text{text-decoration:underline}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
details{margin:6px 0}";

/// An observed value as a person reads it: a string as it is, a table as `key: value`
/// pairs (`total: 11; connected: 3`), a nested table in parentheses, a list joined by
/// commas.
pub(crate) fn readable(v: &serde_json::Value) -> String {
    use serde_json::Value;
    fn inner(v: &Value) -> String {
        match v {
            Value::Object(m) if m.is_empty() => "none".into(),
            Value::Object(m) => m
                .iter()
                .map(|(k, x)| match x {
                    Value::Object(_) | Value::Array(_) => format!("{k} ({})", inner(x)),
                    _ => format!("{k} {}", inner(x)),
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => readable(v),
        }
    }
    match v {
        Value::Null => "none".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "none".into(),
        Value::Array(items) => items.iter().map(inner).collect::<Vec<_>>().join(", "),
        Value::Object(m) if m.is_empty() => "none".into(),
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| format!("{k}: {}", inner(x)))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// The page.
pub fn render(r: &ScenarioReport) -> String {
    let mut s = String::with_capacity(64 * 1024);
    let title = format!("{}: scenario report", r.scenario);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(&title)
    );
    let e = &r.expectations.summary;
    let _ = write!(
        s,
        "<h1>{} <span id=\"verdict\" class=\"verdict {}\">{}</span></h1>\n<p class=\"meta\">{} &middot; seed {} &middot; simulated {} to {} &middot; {}</p>\n",
        escape(&r.scenario),
        if r.passed { "pass" } else { "fail" },
        if r.passed { "PASS" } else { "FAIL" },
        escape(&r.file),
        r.seed,
        escape(&r.start),
        escape(&r.until),
        escape(&e.line())
    );
    if let Some(d) = &r.description {
        let _ = writeln!(s, "<p>{}</p>", escape(d));
    }

    s.push_str("<h2>Dials and inbound calls over time</h2>\n");
    s.push_str("<p class=\"legend\">");
    for series in &r.chart.series {
        let _ = write!(
            s,
            "<span><i style=\"background:{}\"></i>{}</span>",
            chart::colour(series),
            escape(&series.replace('_', " "))
        );
    }
    s.push_str(
        "<span><i style=\"background:#e8ecf1;border:1px solid #c5ccd6\"></i>calling window</span>",
    );
    s.push_str("<span><i style=\"background:#f8d0cf\"></i>key-service fault</span>");
    s.push_str(
        "<span>numbered lines: the rows of the <a href=\"#timeline\">timeline</a></span></p>\n",
    );
    // The calling windows in a neutral grey, as on the live page (pale yellow reads as a
    // warning).
    s.push_str(&chart::render_in(
        &r.chart,
        chart::Frame {
            width: 1000,
            window_fill: chart::Frame::NEUTRAL_WINDOWS,
        },
    ));
    s.push('\n');

    s.push_str("<h2>Expectations</h2>\n<table id=\"expectations\"><colgroup><col class=\"result\"><col><col class=\"where\"><col><col></colgroup><tr><th>Result</th><th>Expectation</th><th>Where</th><th>Expected</th><th>Observed</th></tr>\n");
    for c in &r.expectations.checks {
        let failed = c.result == Outcome::Fail && c.severity == Severity::Error;
        let at = c
            .evidence
            .0
            .get("at")
            .and_then(serde_json::Value::as_str)
            .map_or(String::new(), |a| {
                format!("<br><small>at {}</small>", escape(a))
            });
        let observed = c.evidence.0.get("observed").map_or(String::new(), readable);
        let _ = writeln!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td class=\"observed\">{}{at}</td></tr>",
            if failed { " class=\"failed\"" } else { "" },
            c.result.as_str().to_uppercase(),
            escape(&c.description),
            escape(c.location.as_deref().unwrap_or("")),
            escape(c.expected.as_deref().unwrap_or("")),
            escape(&observed)
        );
    }
    s.push_str("</table>\n");

    for c in &r.campaigns {
        let _ = writeln!(
            s,
            "<h2>Campaign {} <small class=\"meta\">{} &middot; {}</small></h2>",
            escape(&c.key),
            escape(&c.campaign_id),
            escape(&c.status)
        );
        s.push_str("<table class=\"results\"><tr>");
        for n in &c.dials_by_result {
            let _ = write!(s, "<th>{}</th>", escape(&n.name));
        }
        s.push_str("<th>all</th><th>outside window</th></tr><tr>");
        let mut total = 0;
        for n in &c.dials_by_result {
            total += n.count;
            let _ = write!(s, "<td class=\"num\">{}</td>", n.count);
        }
        let _ = writeln!(
            s,
            "<td class=\"num\">{total}</td><td class=\"num\">{}</td></tr></table>",
            c.dials_outside_window
        );
        let removed = c.connections.iter().any(|k| k.removed_at.is_some());
        let _ = writeln!(
            s,
            "<table class=\"connections\"><tr><th>Connection</th><th>Weight</th><th>Dials</th><th>Share</th>{}</tr>",
            if removed { "<th>Removed</th>" } else { "" }
        );
        for k in &c.connections {
            let _ = write!(
                s,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2} %</td>",
                escape(&k.connection_id),
                k.weight,
                k.dials,
                k.share * 100.0
            );
            if removed {
                let _ = write!(
                    s,
                    "<td>{}</td>",
                    k.removed_at
                        .as_deref()
                        .map_or(String::new(), |at| format!("by a patch at {}", escape(at)))
                );
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
        let _ = writeln!(
            s,
            "<details{}><summary>Rate per calling window ({} windows, {} dials/s asked{})</summary><table class=\"windows\"><tr><th>Opens</th><th>Closes</th><th>Dials</th><th>Rate</th><th>Asked</th></tr>",
            if c.windows.len() <= 10 { " open" } else { "" },
            c.windows.len(),
            c.attempts_per_second,
            if c.windows
                .iter()
                .any(|w| w.attempts_per_second != c.attempts_per_second)
            {
                " at the end"
            } else {
                ""
            }
        );
        for w in &c.windows {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&w.from),
                escape(&w.until),
                w.dials,
                super::scenario::rate_text(w.rate),
                super::scenario::rate_text(w.attempts_per_second)
            );
        }
        s.push_str("</table></details>\n");
        let _ = writeln!(
            s,
            "<details><summary>Statistics</summary><pre>{}</pre></details>",
            escape(&serde_json::to_string_pretty(&c.statistics).unwrap_or_default())
        );
    }

    s.push_str("<h2>Timeline</h2>\n<table id=\"timeline\"><colgroup><col class=\"n\"><col class=\"at\"><col class=\"kind\"><col class=\"subject\"><col></colgroup><tr><th>#</th><th>Simulated time</th><th>Kind</th><th>Subject</th><th>What</th></tr>\n");
    for (i, t) in r.timeline.iter().enumerate() {
        let n = i + 1;
        let _ = writeln!(
            s,
            "<tr id=\"t{n}\"><td class=\"num\">{n}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&t.at),
            escape(&t.kind),
            escape(&t.subject),
            escape(&t.detail)
        );
    }
    s.push_str("</table>\n");

    if !r.key_service.is_empty() {
        s.push_str("<h2>Key service calls</h2>\n<table id=\"key-service\"><tr><th>Endpoint</th><th>Outcome</th><th>Fault served</th><th>Calls</th></tr>\n");
        for k in &r.key_service {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                escape(&k.endpoint),
                escape(&k.outcome),
                escape(k.fault.as_deref().unwrap_or("")),
                k.calls
            );
        }
        s.push_str("</table>\n");
    }
    if !r.webhooks.is_empty() {
        s.push_str("<h2>Webhooks received</h2>\n<table id=\"webhooks\"><tr><th>Path</th><th>Events</th><th>Attempts</th><th>Bad signatures</th><th>By status</th></tr>\n");
        for w in &r.webhooks {
            let by: Vec<String> = w
                .by_status
                .iter()
                .map(|c| format!("{} {}", c.name, c.count))
                .collect();
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&w.path),
                w.events,
                w.attempts,
                w.bad_signatures,
                escape(&by.join(", "))
            );
        }
        s.push_str("</table>\n");
    }
    if !r.cohorts.is_empty() {
        s.push_str("<h2>Cohorts</h2>\n<table id=\"cohorts\"><tr><th>Cohort</th><th>Id</th><th>Status</th><th>Result</th></tr>\n");
        for c in &r.cohorts {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                escape(&c.key),
                escape(c.cohort_id.as_deref().unwrap_or("")),
                escape(&c.status),
                escape(&c.result.to_string())
            );
        }
        s.push_str("</table>\n");
    }
    if !r.inbound_calls.is_empty() {
        s.push_str("<h2>Inbound calls</h2>\n<table id=\"inbound\"><tr><th>Call</th><th>At</th><th>Caller</th><th>Dialled</th><th>Answered</th><th>Agent variables</th></tr>\n");
        for c in &r.inbound_calls {
            let answered = if c.answered {
                "yes".to_string()
            } else {
                format!("no ({})", c.rejection.as_deref().unwrap_or("?"))
            };
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                escape(&c.key),
                escape(&c.at),
                escape(&c.caller),
                escape(&c.dialled),
                escape(&answered),
                escape(&c.agent_variables.to_string())
            );
        }
        s.push_str("</table>\n");
    }
    if !r.telephony_rules.is_empty() {
        s.push_str("<h2>Telephony rules</h2>\n<table id=\"rules\"><tr><th>Rule</th><th>Dials answered</th></tr>\n");
        for t in &r.telephony_rules {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
                escape(&t.name),
                t.dials
            );
        }
        s.push_str("</table>\n");
    }
    s.push_str("</body></html>\n");
    s
}
