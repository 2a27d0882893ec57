//! The journal's summary as a check report: the verdict on a client that `harness verify`
//! gives from a running platform, and that `--report-on-exit DIR` writes at shutdown.
//!
//! One check per operation of the OpenAPI document (`{tag}.{operationId}`, so one JUnit
//! test case each): it passes when the client called the operation and every request kept
//! the contract, fails when a request broke it (the first few are shown, with each
//! violation's `loc`, `msg` and `type`), and is skipped when the operation was never
//! called. Two more: `coverage.operations` (the share of operations called, against
//! `--min-coverage`) and `routes.unknown` (requests to no operation of the document).

use std::path::{Path, PathBuf};

use contracts::report::checks::{Check, CheckReport, Evidence, Outcome, Severity};
use contracts::wire::{JournalSummary, OperationSummary, ViolationExample};
use serde_json::{Value, json};

/// The suite name of the report.
pub const SUITE: &str = "verify";

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
        evidence: Evidence::new()
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
        evidence: if unknown.requests == 0 {
            Evidence::new()
        } else {
            Evidence::new()
                .with("requests", unknown.requests)
                .with("examples", examples(&unknown.examples))
        },
        expected: (unknown.requests > 0)
            .then(|| "only the methods and paths of GET /openapi.json".to_string()),
        how_to_fix: None,
        skip_reason: None,
        location: None,
    });
    CheckReport::new(SUITE, target, checks)
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
        check.evidence = check
            .evidence
            .with("violating_requests", op.violating_requests)
            .with("examples", examples(&op.examples));
    }
    check
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

/// Writes the report of `app`'s journal into `dir` (`report.json`, `junit.xml`,
/// `report.txt`): `--report-on-exit DIR` on `platform serve` and `harness up`. Answers the
/// paths written.
pub fn write_on_exit(
    app: &crate::App,
    target: &str,
    dir: &Path,
    opts: &VerifyOptions,
) -> Result<Vec<PathBuf>, contracts::report::WriteError> {
    app.journal.flush();
    let report = report(&app.journal.summary(), target, opts);
    contracts::report::write_dir(&report, dir)
}
