//! The report as a readable table: one line per check (`PASS`, `FAIL`, `WARN` for a failed
//! warning, `SKIP`), the cause, the expectation, the evidence and the fix under each
//! failure, the summary line `N passed, M failed, K skipped`, and the report's notes. Colour
//! only when asked (on a terminal).
//!
//! [`render`] lists every check in order; [`render_failures_first`] (`harness verify`) puts
//! the failures first and, unless asked for every line, sums up the passes and skips in one.

use std::fmt::Write;

use crate::report::checks::{Check, CheckReport, Outcome, Severity};

/// ANSI colours, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    /// Plain text: files, pipes, CI logs.
    Never,
    /// ANSI escape codes: a terminal.
    Always,
}

impl Colour {
    /// Colour when `stream` is a terminal and `NO_COLOR` is not set.
    pub fn for_stream(stream: &impl std::io::IsTerminal) -> Colour {
        if stream.is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            Colour::Always
        } else {
            Colour::Never
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        match self {
            Colour::Never => text.to_string(),
            Colour::Always => format!("\u{1b}[{code}m{text}\u{1b}[0m"),
        }
    }
}

/// The report as text: every check, in order.
pub fn render(report: &CheckReport, colour: Colour) -> String {
    let mut out = head(report);
    let width = report.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in &report.checks {
        line(&mut out, c, width, colour);
    }
    tail(&mut out, report, colour);
    out
}

/// The report as text, failures first (failed errors, then failed warnings); then every
/// pass and skip when `every_line`, else none: the summary line counts them
/// (`3 passed, 1 failed, 20 skipped (-v lists the passes and skips)`).
pub fn render_failures_first(report: &CheckReport, colour: Colour, every_line: bool) -> String {
    let mut out = head(report);
    let width = report.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let of = |result: Outcome, severity: Option<Severity>| {
        report
            .checks
            .iter()
            .filter(move |c| c.result == result && severity.is_none_or(|s| c.severity == s))
    };
    let failures: Vec<&Check> = of(Outcome::Fail, Some(Severity::Error))
        .chain(of(Outcome::Fail, Some(Severity::Warning)))
        .collect();
    for c in &failures {
        line(&mut out, c, width, colour);
    }
    let s = &report.summary;
    if every_line {
        for c in of(Outcome::Pass, None).chain(of(Outcome::Skip, None)) {
            line(&mut out, c, width, colour);
        }
    }
    let hidden = !every_line && s.passed + s.skipped > 0;
    tail_with(
        &mut out,
        report,
        colour,
        hidden.then_some(" (-v lists the passes and skips)"),
    );
    out
}

fn head(report: &CheckReport) -> String {
    format!("{}: {}\n\n", report.suite, report.target)
}

/// The summary line and the notes.
fn tail(out: &mut String, report: &CheckReport, colour: Colour) {
    tail_with(out, report, colour, None);
}

/// The summary line, with `hint` after it, and the notes.
fn tail_with(out: &mut String, report: &CheckReport, colour: Colour, hint: Option<&str>) {
    let s = &report.summary;
    let mut summary = s.line();
    summary.push_str(hint.unwrap_or(""));
    let painted = if s.failures > 0 {
        colour.paint("1;31", &summary)
    } else {
        colour.paint("1;32", &summary)
    };
    let _ = writeln!(out, "\n{painted}");
    for note in &report.notes {
        let _ = writeln!(out, "{note}");
    }
}

fn line(out: &mut String, c: &Check, width: usize, colour: Colour) {
    let tag = match (c.result, c.severity) {
        (Outcome::Pass, _) => colour.paint("32", "PASS"),
        (Outcome::Fail, Severity::Error) => colour.paint("1;31", "FAIL"),
        (Outcome::Fail, Severity::Warning) => colour.paint("33", "WARN"),
        (Outcome::Skip, _) => colour.paint("2", "SKIP"),
    };
    let mut text = c.description.clone();
    if let Some(reason) = &c.skip_reason {
        let _ = write!(text, " ({reason})");
    }
    let _ = writeln!(out, "  {tag}  {:<width$}  {text}", c.id);
    if c.result == Outcome::Fail {
        let pad = " ".repeat(8);
        if let Some(cause) = c.cause() {
            let _ = writeln!(out, "{pad}cause:    {cause}");
        }
        if let Some(loc) = &c.location {
            let _ = writeln!(out, "{pad}at:       {loc}");
        }
        if let Some(e) = &c.expected {
            let _ = writeln!(out, "{pad}expected: {e}");
        }
        let evidence = c.observed();
        if !evidence.is_empty() {
            let _ = writeln!(
                out,
                "{pad}observed: {}",
                serde_json::to_string(&evidence).unwrap_or_default()
            );
        }
        if let Some(fix) = &c.how_to_fix {
            let _ = writeln!(out, "{pad}fix:      {fix}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::checks::{CheckDef, Evidence};

    #[test]
    fn failures_show_what_was_expected_and_seen() {
        const A: CheckDef = CheckDef::error("auth.token_type", "token_type is Bearer");
        const B: CheckDef = CheckDef::error("auth.expires_in", "expires_in is above 0");
        let report = CheckReport::new(
            "check byok",
            "http://x",
            vec![
                Check::fail(&A, Evidence::new().status(200).body("bearer"), "\"Bearer\"")
                    .with_fix("answer token_type \"Bearer\""),
                Check::pass(&B, Evidence::new()).with_fix("never shown: it passed"),
            ],
        );
        let text = render(&report, Colour::Never);
        assert!(
            text.contains("  FAIL  auth.token_type  token_type is Bearer\n"),
            "{text}"
        );
        assert!(text.contains("expected: \"Bearer\""), "{text}");
        assert!(
            text.contains("observed: {\"status\":200,\"body\":\"bearer\"}"),
            "{text}"
        );
        assert!(
            text.contains("\n        fix:      answer token_type \"Bearer\"\n"),
            "{text}"
        );
        assert!(!text.contains("never shown"), "{text}");
        assert!(text.ends_with("1 passed, 1 failed, 0 skipped\n"), "{text}");
        assert!(!text.contains('\u{1b}'), "no colour unless asked");
        assert!(render(&report, Colour::Always).contains("\u{1b}[1;31mFAIL"));
    }

    #[test]
    fn failures_come_first_and_the_rest_is_one_line_unless_asked() {
        const P: CheckDef = CheckDef::error("a.first", "passes");
        const S: CheckDef = CheckDef::error("b.second", "is skipped");
        const F: CheckDef = CheckDef::error("c.third", "fails");
        const W: CheckDef = CheckDef::warning("d.fourth", "warns");
        let report = CheckReport::new(
            "verify",
            "http://x",
            vec![
                Check::pass(&P, Evidence::new()),
                Check::skip(&S, "never called"),
                Check::fail(&W, Evidence::new(), "more"),
                Check::fail(
                    &F,
                    Evidence::new()
                        .cause("#2 GET /api/x -> 422: query.limit: too big")
                        .status(422),
                    "less",
                ),
            ],
        )
        .with_figures(Default::default(), vec!["2 requests".into()]);
        let text = render_failures_first(&report, Colour::Never, false);
        let fail = text.find("FAIL  c.third").unwrap();
        let warn = text.find("WARN  d.fourth").unwrap();
        assert!(fail < warn, "{text}");
        assert!(!text.contains("PASS") && !text.contains("SKIP"), "{text}");
        assert!(
            text.contains("        cause:    #2 GET /api/x -> 422: query.limit: too big\n"),
            "{text}"
        );
        assert!(
            text.contains("observed: {\"status\":422}"),
            "the cause once: {text}"
        );
        assert!(
            text.ends_with(
                "\n1 passed, 2 failed, 1 skipped (-v lists the passes and skips)\n2 requests\n"
            ),
            "{text}"
        );
        let every = render_failures_first(&report, Colour::Never, true);
        let pass = every.find("PASS  a.first").unwrap();
        let skip = every.find("SKIP  b.second").unwrap();
        assert!(warn < pass && pass < skip, "{every}");
        assert!(
            every.ends_with("\n1 passed, 2 failed, 1 skipped\n2 requests\n"),
            "{every}"
        );
    }
}
