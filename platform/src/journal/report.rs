//! The journal's summary as a check report: the verdict on a client that `harness verify`
//! gives from a running platform, and that `--report-on-exit DIR` writes at shutdown.
//!
//! One check per operation of the OpenAPI document (`{tag}.{operationId}`, so one JUnit
//! test case each): it passes when the client called the operation, every request kept the
//! contract and, for a cohort upload, every file it uploaded could be processed; it fails
//! when a request broke the contract (the first few are shown, with each violation's `loc`,
//! `msg` and `type`; the first one is the check's cause, JUnit's failure message), when an
//! upload answered 200 led to a cohort that `failed` (the upload, the cohort and its
//! `failure_reason`; a warning with [`VerifyOptions::allow_failed_uploads`]), or when a
//! request was answered a status of [`VerifyOptions::fail_on_status`]; it is skipped when
//! the operation was never called. More checks: `coverage.operations` (the share of
//! operations called, against `--min-coverage`), `routes.unknown` (requests to no operation
//! of the document, whatever their path), and two warnings, `portability.trailing_slash`
//! and `portability.repeated_query` (requests served here that real platforms treat
//! otherwise).
//!
//! The report carries the request counts, the coverage, the requests answered 404, 409 or
//! 413 (not violations, listed one by one) and the failed uploads as figures and notes
//! ([`notes`]), so that every form (text, JSON, JUnit) of `harness verify` and of
//! `--report-on-exit` holds them.

mod notes;

use std::path::{Path, PathBuf};

use contracts::report::checks::{Check, CheckReport, Evidence, Outcome, Severity};
use contracts::wire::{
    FailedUpload, FlaggedRequests, JournalSummary, OperationSummary, RefusedRequest,
    RefusedRequests, ViolationExample,
};
use serde_json::{Value, json};

/// The suite name of the report.
pub(crate) const SUITE: &str = "verify";

/// The statuses `--fail-on-status` takes: those of the refusals the summary lists one by
/// one (404, 409, 413).
pub const LISTED_STATUSES: [u16; 3] = [404, 409, 413];

/// What makes the verdict fail.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyOptions {
    /// The least share of the document's operations the client must call, in percent.
    pub min_coverage: Option<f64>,
    /// Report requests that break the contract as warnings: the verdict holds anyway.
    pub allow_violations: bool,
    /// Report uploads whose files the platform could not process as warnings.
    pub allow_failed_uploads: bool,
    /// Statuses of [`LISTED_STATUSES`] whose requests fail their operation's check (a
    /// client's suite that expects none: `--fail-on-status 409,413`).
    pub fail_on_status: Vec<u16>,
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
        .map(|op| operation_check(op, summary, opts))
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
    checks.push(portability_check(
        "portability.trailing_slash",
        "no path ends with '/' (served here as the path without it; real platforms redirect or refuse it)",
        &summary.trailing_slash,
        "drop the trailing '/' from the paths the client builds",
    ));
    checks.push(portability_check(
        "portability.repeated_query",
        "no query parameter is given twice (this platform takes the last value; real platforms differ)",
        &summary.repeated_query,
        "send each query parameter once",
    ));
    let (figures, notes) = notes::figures(summary);
    CheckReport::new(SUITE, target, checks).with_figures(figures, notes)
}

/// A warning on requests that this platform served but real platforms treat otherwise.
fn portability_check(id: &str, description: &str, flagged: &FlaggedRequests, fix: &str) -> Check {
    let found = flagged.requests > 0;
    Check {
        id: id.into(),
        group: "portability".into(),
        description: description.into(),
        severity: Severity::Warning,
        result: if found { Outcome::Fail } else { Outcome::Pass },
        evidence: match flagged.examples.first() {
            Some(first) if found => Evidence::new()
                .cause(cause(first))
                .with("requests", flagged.requests)
                .with("examples", examples(&flagged.examples)),
            _ => Evidence::new(),
        },
        expected: found.then(|| "requests every platform reads the same way".to_string()),
        how_to_fix: found.then(|| fix.to_string()),
        skip_reason: None,
        location: None,
    }
}

/// One reason an operation's check fails.
struct Problem {
    severity: Severity,
    cause: String,
    expected: String,
}

/// The refusals of `summary` answered `status` (one of [`LISTED_STATUSES`]).
fn refused(summary: &JournalSummary, status: u16) -> Option<&RefusedRequests> {
    match status {
        404 => Some(&summary.not_found),
        409 => Some(&summary.conflicts),
        413 => Some(&summary.too_large),
        _ => None,
    }
}

fn operation_check(op: &OperationSummary, summary: &JournalSummary, opts: &VerifyOptions) -> Check {
    let breaking = if opts.allow_violations {
        Severity::Warning
    } else {
        Severity::Error
    };
    let uploads = op.path.ends_with("/cohorts/upload");
    let mut description = format!(
        "{} {}: every request keeps the contract",
        op.method, op.path
    );
    if uploads {
        description.push_str(" and every file it uploads can be processed");
    }
    let fail_on: Vec<u16> = opts
        .fail_on_status
        .iter()
        .copied()
        .filter(|s| LISTED_STATUSES.contains(s))
        .collect();
    if !fail_on.is_empty() {
        let list: Vec<String> = fail_on.iter().map(u16::to_string).collect();
        description.push_str(&format!(" (none answered {})", list.join(" or ")));
    }
    let mut check = Check {
        id: format!("{}.{}", op.tag, op.operation_id),
        group: op.tag.clone(),
        description,
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
    let mut evidence = Evidence::new()
        .with("calls", op.calls)
        .with("statuses", json!(op.statuses))
        .with(
            "documented_statuses_not_seen",
            json!(op.documented_statuses_not_seen),
        );
    let mut problems = Vec::new();
    if op.violating_requests > 0 {
        if let Some(first) = op.examples.first() {
            problems.push(Problem {
                severity: breaking,
                cause: cause(first),
                expected: "requests that keep the contract".into(),
            });
        }
        evidence = evidence
            .with("violating_requests", op.violating_requests)
            .with("examples", examples(&op.examples));
    }
    if op.failed_uploads > 0 {
        if let Some(first) = op.failed_upload_examples.first() {
            problems.push(Problem {
                severity: if opts.allow_failed_uploads {
                    Severity::Warning
                } else {
                    Severity::Error
                },
                cause: failed_upload(first),
                expected: "files the platform can process (the cohort completes)".into(),
            });
        }
        evidence = evidence.with("failed_uploads", op.failed_uploads).with(
            "failed_upload_examples",
            op.failed_upload_examples
                .iter()
                .map(failed_upload)
                .collect::<Vec<_>>(),
        );
    }
    for status in fail_on {
        let answered = op.statuses.get(&status.to_string()).copied().unwrap_or(0);
        if answered == 0 {
            continue;
        }
        let listed: Vec<String> = refused(summary, status)
            .map(|r| {
                r.listed
                    .iter()
                    .filter(|e| e.operation_id == op.operation_id)
                    .map(|e| refused_line(e, status))
                    .collect()
            })
            .unwrap_or_default();
        problems.push(Problem {
            severity: Severity::Error,
            cause: match listed.first() {
                Some(line) => format!("{line} (--fail-on-status {status})"),
                None => {
                    format!("{answered} requests answered {status} (--fail-on-status {status})")
                }
            },
            expected: format!("no request answered {status}"),
        });
        evidence = evidence.with(&format!("answered_{status}"), listed);
    }
    if problems.is_empty() {
        check.evidence = evidence;
        return check;
    }
    let severity = if problems.iter().any(|p| p.severity == Severity::Error) {
        Severity::Error
    } else {
        Severity::Warning
    };
    let first = problems
        .iter()
        .find(|p| p.severity == severity)
        .unwrap_or(&problems[0]);
    check.severity = severity;
    check.result = Outcome::Fail;
    check.expected = Some(
        problems
            .iter()
            .map(|p| p.expected.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    );
    if op.failed_uploads > 0 {
        check.how_to_fix = Some(
            "send a file the platform can read: the failure_reason says what it lacks (a header row, the column the transformation names)".into(),
        );
    }
    let mut with_cause = Evidence::new().cause(first.cause.clone());
    with_cause.0.extend(evidence.0);
    check.evidence = with_cause;
    check
}

/// A failed upload in one line: `#5 POST /api/... -> 200: cohort coh-1 failed: <reason>`.
fn failed_upload(f: &FailedUpload) -> String {
    format!(
        "#{} {} {} -> 200: cohort {} failed: {}",
        f.seq, f.method, f.path, f.cohort_id, f.failure_reason
    )
}

/// A refused request in one line: `#7 PUT /api/... -> 409: <message>`.
fn refused_line(r: &RefusedRequest, status: u16) -> String {
    match &r.message {
        Some(m) => format!("#{} {} {} -> {status}: {m}", r.seq, r.method, r.path),
        None => format!("#{} {} {} -> {status}", r.seq, r.method, r.path),
    }
}

/// The first offending request and its first violation (the one that cost the client most),
/// in one line: `#2 POST /api/... -> 422: body.user_phone_numbr: Extra inputs are not
/// permitted`, with how many more the request has.
fn cause(e: &ViolationExample) -> String {
    let status = e
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "no answer".into());
    let what = match e.violations.first() {
        Some(v) => format!(": {}: {}", place(v), v.msg),
        None => String::new(),
    };
    let more = match e.violations.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    format!("#{} {} {} -> {status}{what}{more}", e.seq, e.method, e.path)
}

/// Where a violation is, as dotted text (`body.app_config.weight`); a body that is not
/// JSON is at `body` (the 422's `["body", 85]` holds a byte offset, which the message
/// states, not a field).
fn place(v: &contracts::wire::Violation) -> String {
    if v.error_type == "json_invalid" {
        return v
            .loc
            .first()
            .map(|_| "body".to_string())
            .unwrap_or_default();
    }
    contracts::error::dotted(&v.loc)
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
                    .map(|v| format!("{}: {} ({})", place(v), v.msg, v.error_type))
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
