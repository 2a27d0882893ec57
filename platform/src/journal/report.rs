//! The journal's summary as a check report: the verdict on a client that `harness verify`
//! gives from a running platform, and that `--report-on-exit DIR` writes at shutdown.
//!
//! One check per operation of the OpenAPI document (`{tag}.{operationId}`, so one JUnit
//! test case each): it passes when the client called the operation and every request kept
//! the contract, fails when a request broke it (the first few are shown, with each
//! violation's `loc`, `msg` and `type`; the first one is the check's cause, JUnit's failure
//! message), and is skipped when the operation was never called. Two more:
//! `coverage.operations` (the share of operations called, against `--min-coverage`) and
//! `routes.unknown` (requests to no operation of the document, whatever their path).
//!
//! The report carries the request counts, the coverage and the requests answered 404 for
//! ids that do not exist (not violations, listed one by one) as figures and notes, so that
//! every form (text, JSON, JUnit) of `harness verify` and of `--report-on-exit` holds them.

use std::path::{Path, PathBuf};

use contracts::report::checks::{Check, CheckReport, Evidence, Outcome, Severity};
use contracts::wire::{JournalSummary, OperationSummary, ViolationExample};
use serde_json::{Map, Value, json};

/// The suite name of the report.
pub(crate) const SUITE: &str = "verify";

/// What makes the verdict fail.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VerifyOptions {
    /// The least share of the document's operations the client must call, in percent.
    pub min_coverage: Option<f64>,
    /// Report requests that break the contract as warnings: the verdict holds anyway.
    pub allow_violations: bool,
}

/// The check report of `summary`, a journal of the platform at `target`.
pub fn report(summary: &JournalSummary, target: &str, opts: &VerifyOptions) -> CheckReport {
    let breaking = if opts.allow_violations {
        Severity::Warning
    } else {
        Severity::Error
    };
    let mut checks: Vec<Check> = summary
        .operations
        .iter()
        .map(|op| operation_check(op, breaking))
        .collect();
    let c = &summary.coverage;
    let coverage_ok = opts.min_coverage.is_none_or(|min| c.percent >= min);
    let mut coverage_evidence = Evidence::new();
    if !coverage_ok {
        coverage_evidence = coverage_evidence.cause(format!(
            "{} of {} operations called ({}%), below --min-coverage {}%; never called: {}",
            c.called,
            c.operations,
            c.percent,
            opts.min_coverage.unwrap_or(0.0),
            summary.not_called.join(", ")
        ));
    }
    checks.push(Check {
        id: "coverage.operations".into(),
        group: "coverage".into(),
        description: match opts.min_coverage {
            Some(min) => format!("at least {min}% of the document's operations are called"),
            None => "share of the document's operations called (no minimum set)".into(),
        },
        severity: Severity::Error,
        result: if coverage_ok {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        evidence: coverage_evidence
            .with("called", c.called)
            .with("operations", c.operations)
            .with("percent", c.percent)
            .with("not_called", summary.not_called.clone()),
        expected: (!coverage_ok).then(|| format!("at least {}%", opts.min_coverage.unwrap_or(0.0))),
        how_to_fix: None,
        skip_reason: None,
        location: None,
    });
    let unknown = &summary.unknown_routes;
    checks.push(Check {
        id: "routes.unknown".into(),
        group: "routes".into(),
        description: "every request is to an operation of the OpenAPI document".into(),
        severity: breaking,
        result: if unknown.requests == 0 {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        evidence: match unknown.examples.first() {
            Some(first) if unknown.requests > 0 => Evidence::new()
                .cause(cause(first))
                .with("requests", unknown.requests)
                .with("examples", examples(&unknown.examples)),
            _ => Evidence::new(),
        },
        expected: (unknown.requests > 0)
            .then(|| "only the methods and paths of GET /openapi.json".to_string()),
        how_to_fix: None,
        skip_reason: None,
        location: None,
    });
    let (figures, notes) = figures(summary);
    CheckReport::new(SUITE, target, checks).with_figures(figures, notes)
}

/// The figures of `summary` the text prints (requests, coverage, the journal's ring, the
/// 404s for unknown ids), and the lines that tell them.
fn figures(summary: &JournalSummary) -> (Map<String, Value>, Vec<String>) {
    let c = &summary.coverage;
    let not_found: Vec<String> = summary
        .not_found
        .listed
        .iter()
        .map(|r| match &r.message {
            Some(m) => format!("#{} {} {} -> 404: {m}", r.seq, r.method, r.path),
            None => format!("#{} {} {} -> 404", r.seq, r.method, r.path),
        })
        .collect();
    let mut figures = Map::new();
    figures.insert(
        "requests".into(),
        json!({
            "total": summary.requests,
            "conforming": summary.conforming,
            "violating": summary.violating,
            "not_judged": summary.not_judged,
            "faults_injected": summary.faults_injected,
        }),
    );
    figures.insert(
        "coverage".into(),
        json!({"operations": c.operations, "called": c.called, "percent": c.percent}),
    );
    figures.insert(
        "journal".into(),
        json!({
            "since": contracts::clock::format_instant(summary.since),
            "entries_kept": summary.entries_kept,
            "entries_dropped": summary.entries_dropped,
            "capacity": summary.capacity,
        }),
    );
    figures.insert(
        "not_found".into(),
        json!({"requests": summary.not_found.requests, "listed": not_found}),
    );
    let plural = |n: u64| if n == 1 { "request" } else { "requests" };
    let mut notes = vec![format!(
        "{} {}: {} kept the contract, {} broke it, {} met a fault first; {} of {} operations called ({}%)",
        summary.requests,
        plural(summary.requests),
        summary.conforming,
        summary.violating,
        summary.not_judged,
        c.called,
        c.operations,
        c.percent
    )];
    if summary.entries_dropped > 0 {
        notes.push(format!(
            "the journal holds the latest {} entries ({} older ones left memory; the counts include them)",
            summary.entries_kept, summary.entries_dropped
        ));
    }
    if summary.not_found.requests > 0 {
        notes.push(format!(
            "{} {} answered 404 for an id that does not exist (not violations; a client that deletes twice or polls a wrong id makes them):",
            summary.not_found.requests,
            plural(summary.not_found.requests)
        ));
        notes.extend(not_found.iter().map(|l| format!("  {l}")));
        let unlisted = summary.not_found.requests - summary.not_found.listed.len() as u64;
        if unlisted > 0 {
            notes.push(format!("  ... and {unlisted} more"));
        }
    }
    (figures, notes)
}

fn operation_check(op: &OperationSummary, breaking: Severity) -> Check {
    let mut check = Check {
        id: format!("{}.{}", op.tag, op.operation_id),
        group: op.tag.clone(),
        description: format!(
            "{} {}: every request keeps the contract",
            op.method, op.path
        ),
        severity: breaking,
        result: Outcome::Pass,
        evidence: Evidence::new(),
        expected: None,
        how_to_fix: None,
        skip_reason: None,
        location: None,
    };
    if op.calls == 0 {
        check.result = Outcome::Skip;
        check.skip_reason = Some("never called".into());
        return check;
    }
    check.evidence = Evidence::new()
        .with("calls", op.calls)
        .with("statuses", json!(op.statuses))
        .with(
            "documented_statuses_not_seen",
            json!(op.documented_statuses_not_seen),
        );
    if op.violating_requests > 0 {
        check.result = Outcome::Fail;
        check.expected = Some("requests that keep the contract".into());
        let mut evidence = match op.examples.first() {
            Some(first) => Evidence::new().cause(cause(first)),
            None => Evidence::new(),
        };
        evidence.0.extend(std::mem::take(&mut check.evidence.0));
        check.evidence = evidence
            .with("violating_requests", op.violating_requests)
            .with("examples", examples(&op.examples));
    }
    check
}

/// The first offending request and its first violation, in one line: `#2 POST /api/... ->
/// 422: body.user_phone_numbr: Extra inputs are not permitted`.
fn cause(e: &ViolationExample) -> String {
    let status = e
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "no answer".into());
    let what = match e.violations.first() {
        Some(v) => format!(": {}: {}", contracts::error::dotted(&v.loc), v.msg),
        None => String::new(),
    };
    let more = match e.violations.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    format!("#{} {} {} -> {status}{what}{more}", e.seq, e.method, e.path)
}

/// Violating requests in a compact form: `#12 POST /api/... -> 422: body.name: String
/// should match pattern ... (string_pattern_mismatch)`.
fn examples(list: &[ViolationExample]) -> Value {
    Value::Array(
        list.iter()
            .map(|e| {
                let status = e
                    .status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "no answer".into());
                let what: Vec<String> = e
                    .violations
                    .iter()
                    .map(|v| {
                        format!(
                            "{}: {} ({})",
                            contracts::error::dotted(&v.loc),
                            v.msg,
                            v.error_type
                        )
                    })
                    .collect();
                Value::String(format!(
                    "#{} {} {} -> {status}: {}",
                    e.seq,
                    e.method,
                    e.path,
                    what.join("; ")
                ))
            })
            .collect(),
    )
}

/// What the exit status of a process that wrote a report on exit says
/// (`--report-exit-status` of `platform serve` and `harness up`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExitStatusRule {
    /// 0 whatever the verdict (a clean stop is a success; the files tell the verdict).
    #[default]
    Zero,
    /// `harness verify`'s rule: 0 when the verdict holds, 1 when not.
    Verdict,
}

impl ExitStatusRule {
    /// The exit status of a clean stop that wrote `report`.
    pub fn status(self, report: &CheckReport) -> u8 {
        match self {
            ExitStatusRule::Verdict if !report.holds() => 1,
            _ => 0,
        }
    }
}

/// Writes the report of every workspace's requests in `app`'s journal into `dir`
/// (`report.json`, `junit.xml`, `report.txt`), as `harness verify` with an operator's key
/// gives it: `--report-on-exit DIR` on `platform serve` and `harness up`. Answers the report
/// and the paths written.
pub fn write_on_exit(
    app: &crate::App,
    target: &str,
    dir: &Path,
    opts: &VerifyOptions,
) -> Result<(CheckReport, Vec<PathBuf>), contracts::report::WriteError> {
    app.journal.flush();
    let report = report(
        &app.journal.summary(&crate::auth::Scope::Operator),
        target,
        opts,
    );
    let written = contracts::report::write_dir(&report, dir)?;
    Ok((report, written))
}
