//! The report as a readable table: one line per check (`PASS`, `FAIL`, `WARN` for a failed
//! warning, `SKIP`), the expectation, the evidence and the fix under each failure, and the
//! summary line `N passed, M failed, K skipped`. Colour only when asked (on a terminal).

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

/// The report as text.
pub fn render(report: &CheckReport, colour: Colour) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}\n", report.suite, report.target);
    let width = report.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in &report.checks {
        line(&mut out, c, width, colour);
    }
    let s = &report.summary;
    let summary = s.line();
    let painted = if s.errors > 0 {
        colour.paint("1;31", &summary)
    } else {
        colour.paint("1;32", &summary)
    };
    let _ = writeln!(out, "\n{painted}");
    out
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
        if let Some(loc) = &c.location {
            let _ = writeln!(out, "{pad}at:       {loc}");
        }
        if let Some(e) = &c.expected {
            let _ = writeln!(out, "{pad}expected: {e}");
        }
        if !c.evidence.is_empty() {
            let _ = writeln!(
                out,
                "{pad}observed: {}",
                serde_json::to_string(&c.evidence).unwrap_or_default()
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
}
