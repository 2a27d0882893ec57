//! JUnit XML, as CI systems read it: one `<testsuite>` per report, one `<testcase>` per
//! check (`classname` the suite and group, `name` the check id). A failed `error` check is a
//! `<failure>`; a failed `warning` passes with the advice in `<system-out>`, so the file
//! agrees with the exit status; a skipped check is `<skipped>` with its reason. Under a
//! failure or a warning: what was expected, what was observed and how to fix it.

use std::fmt::Write;

use crate::report::checks::{Check, CheckReport, Outcome, Severity};

/// The report as a JUnit XML document.
pub fn render(report: &CheckReport) -> String {
    let s = &report.summary;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
        escape(&report.suite),
        report.checks.len(),
        s.errors,
        s.skipped
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
        escape(&report.suite),
        report.checks.len(),
        s.errors,
        s.skipped
    );
    let _ = writeln!(
        out,
        "    <properties><property name=\"target\" value=\"{}\"/></properties>",
        escape(&report.target)
    );
    for c in &report.checks {
        testcase(&mut out, &report.suite, c);
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
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
    match &c.expected {
        Some(e) => format!("{}: expected {e}", c.description),
        None => c.description.clone(),
    }
}

fn details(c: &Check) -> String {
    let mut s = String::new();
    if let Some(loc) = &c.location {
        let _ = writeln!(s, "at: {loc}");
    }
    if let Some(e) = &c.expected {
        let _ = writeln!(s, "expected: {e}");
    }
    if !c.evidence.is_empty() {
        let _ = writeln!(
            s,
            "observed: {}",
            serde_json::to_string(&c.evidence).unwrap_or_default()
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
    fn control_characters_cannot_break_the_document() {
        assert_eq!(escape("a\u{0}b\"<"), "a\u{FFFD}b&quot;&lt;");
    }
}
