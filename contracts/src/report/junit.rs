//! JUnit XML, as CI systems read it: one `<testsuite>` per report, one `<testcase>` per
//! check (`classname` the suite and group, `name` the check id). A failed `error` check is a
//! `<failure>` whose `message` (what CI pages show, hiding the body) is the check's cause
//! when it has one (`#2 POST /api/... -> 422: body.x: ...`), else its description and
//! expectation; a failed `warning` passes with the advice in `<system-out>`, so the file
//! agrees with the exit status; a skipped check is `<skipped>` with its reason. Under a
//! failure or a warning: what was expected, what was observed and how to fix it. The counts
//! are the JSON summary's (`tests`, `failures`, `skipped`); the report's figures are the
//! suite's properties and its notes the suite's `<system-out>`.

use std::fmt::Write;

use serde_json::Value;

use crate::report::checks::{Check, CheckReport, Outcome, Severity};

/// The report as a JUnit XML document.
pub fn render(report: &CheckReport) -> String {
    let s = &report.summary;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
        escape(&report.suite),
        s.tests,
        s.failures,
        s.skipped
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
        escape(&report.suite),
        s.tests,
        s.failures,
        s.skipped
    );
    let _ = write!(
        out,
        "    <properties><property name=\"target\" value=\"{}\"/>",
        escape(&report.target)
    );
    let mut figures = Vec::new();
    flatten("", &Value::Object(report.figures.clone()), &mut figures);
    for (name, value) in figures {
        let _ = write!(
            out,
            "<property name=\"{}\" value=\"{}\"/>",
            escape(&name),
            escape(&value)
        );
    }
    out.push_str("</properties>\n");
    for c in &report.checks {
        testcase(&mut out, &report.suite, c);
    }
    if !report.notes.is_empty() {
        let _ = writeln!(
            out,
            "    <system-out>{}</system-out>",
            escape(&report.notes.join("\n"))
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The scalar leaves of `v` as `(dotted.name, text)`; a list of scalars is one leaf, its
/// items joined with `; `.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let name = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&name(k), v, out);
            }
        }
        Value::Array(items) => {
            let text: Vec<String> = items.iter().map(scalar).collect();
            out.push((prefix.to_string(), text.join("; ")));
        }
        other => out.push((prefix.to_string(), scalar(other))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn testcase(out: &mut String, suite: &str, c: &Check) {
    let time = c
        .evidence
        .0
        .get("elapsed_ms")
        .and_then(|v| v.as_f64())
        .map(|ms| format!(" time=\"{:.3}\"", ms / 1000.0))
        .unwrap_or_default();
    let _ = write!(
        out,
        "    <testcase classname=\"{}.{}\" name=\"{}\"{time}>",
        escape(suite),
        escape(&c.group),
        escape(&c.id)
    );
    let detail = details(c);
    match (c.result, c.severity) {
        (Outcome::Pass, _) => {}
        (Outcome::Skip, _) => {
            let _ = write!(
                out,
                "<skipped message=\"{}\"/>",
                escape(c.skip_reason.as_deref().unwrap_or("skipped"))
            );
        }
        (Outcome::Fail, Severity::Error) => {
            let _ = write!(
                out,
                "<failure message=\"{}\" type=\"contract\">{}</failure>",
                escape(&first_line(c)),
                escape(&detail)
            );
        }
        (Outcome::Fail, Severity::Warning) => {
            let _ = write!(
                out,
                "<system-out>{}</system-out>",
                escape(&format!("warning: {}\n{detail}", first_line(c)))
            );
        }
    }
    out.push_str("</testcase>\n");
}

fn first_line(c: &Check) -> String {
    if let Some(cause) = c.cause() {
        return cause.to_string();
    }
    match &c.expected {
        Some(e) => format!("{}: expected {e}", c.description),
        None => c.description.clone(),
    }
}

fn details(c: &Check) -> String {
    let mut s = String::new();
    if let Some(cause) = c.cause() {
        let _ = writeln!(s, "cause: {cause}");
    }
    if let Some(loc) = &c.location {
        let _ = writeln!(s, "at: {loc}");
    }
    if let Some(e) = &c.expected {
        let _ = writeln!(s, "expected: {e}");
    }
    let evidence = c.observed();
    if !evidence.is_empty() {
        let _ = writeln!(
            s,
            "observed: {}",
            serde_json::to_string(&evidence).unwrap_or_default()
        );
    }
    if let Some(fix) = &c.how_to_fix {
        let _ = writeln!(s, "how to fix: {fix}");
    }
    s
}

/// Escapes text for an XML attribute or element; characters XML 1.0 cannot hold become
/// `U+FFFD`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::checks::{CheckDef, Evidence};

    #[test]
    fn failures_skips_and_warnings_map_to_junit_elements() {
        const E: CheckDef = CheckDef::error("auth.ok", "right credentials give 200");
        const W: CheckDef = CheckDef::warning("latency.p99", "p99 within the budget");
        const S: CheckDef = CheckDef::error("tls.chain", "the chain verifies");
        let report = CheckReport::new(
            "check byok",
            "http://127.0.0.1:8700/acme",
            vec![
                Check::fail(&E, Evidence::new().status(500).elapsed_ms(12.0), "200 <ok>")
                    .with_fix("answer 200 to the right credentials"),
                Check::fail(&W, Evidence::new(), "at most 250 ms").with_fix("decrypt faster"),
                Check::skip(&S, "the URL is http"),
            ],
        );
        let xml = render(&report);
        assert!(
            xml.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains(
                "<failure message=\"right credentials give 200: expected 200 &lt;ok&gt;\""
            ),
            "{xml}"
        );
        assert!(xml.contains("time=\"0.012\""), "{xml}");
        assert!(xml.contains("<system-out>warning: p99"), "{xml}");
        assert!(
            xml.contains("how to fix: answer 200 to the right credentials&#10;</failure>"),
            "{xml}"
        );
        assert!(
            xml.contains("how to fix: decrypt faster&#10;</system-out>"),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"the URL is http\"/>"),
            "{xml}"
        );
        assert_eq!(xml.matches("<testcase ").count(), 3);
    }

    #[test]
    fn the_failure_message_is_the_cause_and_the_counts_are_the_jsons() {
        const E: CheckDef = CheckDef::error(
            "outbound.create_outbound",
            "every request keeps the contract",
        );
        const W: CheckDef = CheckDef::warning("coverage.operations", "enough is called");
        let cause = "#2 POST /api/outbounds/v1/orgs/o/workspaces/w/outbounds -> 422: body.user_phone_numbr: Extra inputs are not permitted";
        let mut figures = serde_json::Map::new();
        figures.insert(
            "requests".into(),
            serde_json::json!({"total": 3, "violating": 1}),
        );
        let report = CheckReport::new(
            "verify",
            "http://x",
            vec![
                Check::fail(
                    &E,
                    Evidence::new().cause(cause),
                    "requests that keep the contract",
                ),
                Check::fail(&W, Evidence::new(), "50%"),
            ],
        )
        .with_figures(figures, vec!["3 requests: 1 broke it".into()]);
        let xml = render(&report);
        assert!(
            xml.contains(&format!("<failure message=\"{}\"", escape(cause))),
            "{xml}"
        );
        let json: Value = serde_json::from_str(&crate::report::to_json(&report)).unwrap();
        let s = &json["summary"];
        assert_eq!(json["version"], 2);
        assert!(
            xml.contains(&format!(
                "tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\"",
                s["tests"], s["failures"], s["skipped"]
            )),
            "{xml}\n{json}"
        );
        assert_eq!(
            (s["failures"].as_u64(), s["warnings"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(
            xml.matches("<failure ").count() as u64,
            s["failures"].as_u64().unwrap()
        );
        assert!(
            xml.contains("<property name=\"requests.total\" value=\"3\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains("<system-out>3 requests: 1 broke it</system-out>"),
            "{xml}"
        );
    }

    #[test]
    fn control_characters_cannot_break_the_document() {
        assert_eq!(escape("a\u{0}b\"<"), "a\u{FFFD}b&quot;&lt;");
    }
}
