//! One model for every verdict the harness gives.
//!
//! Everything that judges (scenario expectations, `harness check byok`, `harness check
//! platform`, `harness verify`, the platform's `--report-on-exit`) produces [`Check`]
//! values, collects them in a [`CheckReport`], and hands that to the renderers of this
//! module: a terminal table ([`super::table`]), JSON ([`super::to_json`]) and JUnit XML
//! ([`super::junit`]). A JUnit file therefore looks the same whichever command wrote it.
//!
//! A check has a stable [`Check::id`] (`auth.token_type`), a [`Check::group`] (`auth`), a
//! one-line description, a [`Severity`] and an [`Outcome`], with the [`Evidence`] it was
//! judged on and, when it fails, what the contract expects.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How much a failed check matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A failure breaks the contract: the command exits non-zero.
    Error,
    /// A failure is advice: reported, but the exit status stays 0.
    Warning,
}

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The target did what the contract says.
    Pass,
    /// The target did something else.
    Fail,
    /// The check did not run; [`Check::skip_reason`] says why.
    Skip,
}

impl Outcome {
    /// `pass`, `fail` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
        }
    }
}

/// What a check was judged on: the status, the relevant part of a body, timings, or any
/// other named observation, in the order they were added.
///
/// Two names are read by the renderers: `elapsed_ms` (JUnit's `time`) and `cause` (the
/// first thing that failed, in one line that names what to fix: JUnit's failure message,
/// which CI pages show where they hide the body, and the first line under a failure in the
/// text).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Evidence(pub Map<String, Value>);

impl Evidence {
    /// No evidence yet.
    pub fn new() -> Evidence {
        Evidence::default()
    }

    /// Adds the HTTP status seen.
    pub fn status(self, status: u16) -> Evidence {
        self.with("status", status)
    }

    /// Adds the relevant part of a body.
    pub fn body(self, body: impl Into<Value>) -> Evidence {
        self.with("body", body)
    }

    /// Adds how long the call took, in milliseconds (rounded to a tenth).
    pub fn elapsed_ms(self, ms: f64) -> Evidence {
        self.with("elapsed_ms", (ms * 10.0).round() / 10.0)
    }

    /// Adds the cause of a failure: the first thing that failed, in one line
    /// (`#2 POST /api/... -> 422: body.name: String should match pattern ...`).
    pub fn cause(self, cause: impl Into<String>) -> Evidence {
        self.with(CAUSE, cause.into())
    }

    /// Adds any named observation (a later value under the same name replaces the earlier).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Evidence {
        self.0.insert(key.to_string(), value.into());
        self
    }
}

/// One verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, `group.name` (`auth.token_type`); users filter and track by it.
    pub id: String,
    /// The group it belongs to (`auth`, `decrypt`, ...), for `--only` / `--skip` and JUnit
    /// suites.
    pub group: String,
    /// One line: what the check asserts.
    pub description: String,
    /// How much a failure matters.
    pub severity: Severity,
    /// What it found.
    pub result: Outcome,
    /// What it was judged on.
    pub evidence: Evidence,
    /// What the contract expects (shown on failure).
    pub expected: Option<String>,
    /// One line: how to make the target pass (shown on failure); see [`Check::with_fix`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub how_to_fix: Option<String>,
    /// Why it was skipped, when it was.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub skip_reason: Option<String>,
    /// Where the check is defined, when it comes from a file (`scenario.toml:12`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub location: Option<String>,
}

/// The evidence name of a failure's cause ([`Evidence::cause`]).
pub(crate) const CAUSE: &str = "cause";

impl Check {
    /// The cause of its failure, when the evidence gives one ([`Evidence::cause`]).
    pub(crate) fn cause(&self) -> Option<&str> {
        self.evidence.0.get(CAUSE).and_then(Value::as_str)
    }

    /// The evidence but its cause, in order: what renderers show as observed, under the
    /// cause's own line.
    pub(crate) fn observed(&self) -> Map<String, Value> {
        self.evidence
            .0
            .iter()
            .filter(|(k, _)| *k != CAUSE)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// A check that passed.
    pub fn pass(def: &CheckDef, evidence: Evidence) -> Check {
        def.verdict(Outcome::Pass, evidence, None)
    }

    /// A check that failed; `expected` says what the contract wants.
    pub fn fail(def: &CheckDef, evidence: Evidence, expected: impl Into<String>) -> Check {
        def.verdict(Outcome::Fail, evidence, Some(expected.into()))
    }

    /// A check that did not run, and why.
    pub fn skip(def: &CheckDef, reason: impl Into<String>) -> Check {
        let mut c = def.verdict(Outcome::Skip, Evidence::new(), None);
        c.skip_reason = Some(reason.into());
        c
    }

    /// Pass when `ok`, else fail with `expected`.
    pub fn judge(
        def: &CheckDef,
        ok: bool,
        evidence: Evidence,
        expected: impl Into<String>,
    ) -> Check {
        if ok {
            Check::pass(def, evidence)
        } else {
            Check::fail(def, evidence, expected)
        }
    }

    /// Sets the one-line fix: what to change so that the check passes.
    pub fn with_fix(mut self, how_to_fix: impl Into<String>) -> Check {
        self.how_to_fix = Some(how_to_fix.into());
        self
    }
}

/// The static part of a check: everything but its result. Check lists are tables of these,
/// so `--dry-run` and the documentation can list checks without running them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckDef {
    /// Stable identifier, `group.name`.
    pub id: &'static str,
    /// One line: what the check asserts.
    pub description: &'static str,
    /// How much a failure matters.
    pub severity: Severity,
}

impl CheckDef {
    /// An `error` check.
    pub const fn error(id: &'static str, description: &'static str) -> CheckDef {
        CheckDef {
            id,
            description,
            severity: Severity::Error,
        }
    }

    /// A `warning` check.
    pub const fn warning(id: &'static str, description: &'static str) -> CheckDef {
        CheckDef {
            id,
            description,
            severity: Severity::Warning,
        }
    }

    /// The group: the part of the id before the first `.`.
    pub fn group(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }

    fn verdict(&self, result: Outcome, evidence: Evidence, expected: Option<String>) -> Check {
        Check {
            id: self.id.to_string(),
            group: self.group().to_string(),
            description: self.description.to_string(),
            severity: self.severity,
            result,
            evidence,
            expected,
            how_to_fix: None,
            skip_reason: None,
            location: None,
        }
    }
}

/// The version of the JSON form of a report ([`CheckReport::version`]). Version 2 counts
/// in [`Summary`] what the JUnit file counts, under JUnit's names (`tests`, `failures`,
/// `skipped`), where version 1 had `failed` (either severity) and `errors` (JUnit's
/// `failures`).
pub const REPORT_VERSION: u32 = 2;

/// Counts of a report's results: the same as the JUnit file's, under the same names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Checks, of every result: JUnit's `tests`.
    pub(crate) tests: usize,
    /// Checks that passed.
    pub(crate) passed: usize,
    /// Failed checks of severity `error`: JUnit's `failures` (each a `<failure>`); the exit
    /// status is non-zero when this is not 0.
    pub(crate) failures: usize,
    /// Failed checks of severity `warning`: advice, which JUnit shows as passing test cases
    /// with the advice in `<system-out>`.
    pub(crate) warnings: usize,
    /// Checks that did not run: JUnit's `skipped`.
    pub(crate) skipped: usize,
}

impl Summary {
    /// Counts `checks`.
    pub(crate) fn of(checks: &[Check]) -> Summary {
        let mut s = Summary {
            tests: checks.len(),
            ..Summary::default()
        };
        for c in checks {
            match (c.result, c.severity) {
                (Outcome::Pass, _) => s.passed += 1,
                (Outcome::Skip, _) => s.skipped += 1,
                (Outcome::Fail, Severity::Error) => s.failures += 1,
                (Outcome::Fail, Severity::Warning) => s.warnings += 1,
            }
        }
        s
    }

    /// `N passed, M failed, K skipped` (failed: of either severity).
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed,
            self.failures + self.warnings,
            self.skipped
        )
    }
}

/// Every verdict of one command run, with what was judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The version of this JSON form: [`REPORT_VERSION`].
    #[serde(default = "version_1")]
    pub(crate) version: u32,
    /// The suite: `check byok`, `check platform`, `verify`, or a scenario's name. The JUnit
    /// test suite is named after it.
    pub suite: String,
    /// What was judged (a URL, a scenario file), secrets left out.
    pub target: String,
    /// The verdicts, in the order they were made.
    pub checks: Vec<Check>,
    /// Their counts.
    pub summary: Summary,
    /// Figures of the run beside the checks, by name (`harness verify`: the request counts
    /// and the coverage); JUnit properties of the suite.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) figures: Map<String, Value>,
    /// The same figures as lines for a person, printed under the table's summary line and
    /// kept in the JUnit suite's `<system-out>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

fn version_1() -> u32 {
    1
}

impl CheckReport {
    /// A report of `checks`, counted.
    pub fn new(suite: impl Into<String>, target: impl Into<String>, checks: Vec<Check>) -> Self {
        let summary = Summary::of(&checks);
        CheckReport {
            version: REPORT_VERSION,
            suite: suite.into(),
            target: target.into(),
            checks,
            summary,
            figures: Map::new(),
            notes: Vec::new(),
        }
    }

    /// The same report with `figures` and the `notes` that tell them.
    pub fn with_figures(mut self, figures: Map<String, Value>, notes: Vec<String>) -> Self {
        self.figures = figures;
        self.notes = notes;
        self
    }

    /// Whether no `error` check failed: the command's exit status is 0 exactly then.
    pub fn holds(&self) -> bool {
        self.summary.failures == 0
    }
}

/// Which groups to run: `--only GROUP,...` and `--skip GROUP,...`.
#[derive(Clone, Debug, Default)]
pub struct GroupFilter {
    /// When not empty, only these groups run.
    pub only: Vec<String>,
    /// These groups never run.
    pub skip: Vec<String>,
}

impl GroupFilter {
    /// Whether checks of `group` run.
    pub fn runs(&self, group: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|g| g == group))
            && !self.skip.iter().any(|g| g == group)
    }

    /// Refuses groups that are not in `known`, naming them and the known ones.
    pub fn validate(&self, known: &[&str]) -> Result<(), String> {
        let unknown: Vec<&str> = self
            .only
            .iter()
            .chain(&self.skip)
            .map(String::as_str)
            .filter(|g| !known.contains(g))
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "unknown check group(s): {}; the groups are: {}",
                unknown.join(", "),
                known.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: CheckDef = CheckDef::error("auth.token_type", "token_type is Bearer");
    const B: CheckDef = CheckDef::warning("headers.trace_echo", "X-Trace-Id is echoed");

    #[test]
    fn a_report_holds_unless_an_error_check_fails() {
        let ok = CheckReport::new(
            "s",
            "t",
            vec![
                Check::pass(&A, Evidence::new().status(200)),
                Check::fail(&B, Evidence::new(), "an echo"),
            ],
        );
        assert!(ok.holds(), "a failed warning is advice");
        assert_eq!(ok.summary.line(), "1 passed, 1 failed, 0 skipped");
        assert_eq!(
            (ok.summary.tests, ok.summary.failures, ok.summary.warnings),
            (2, 0, 1)
        );
        let broken = CheckReport::new("s", "t", vec![Check::fail(&A, Evidence::new(), "Bearer")]);
        assert!(!broken.holds());
        assert_eq!(broken.summary.failures, 1);
    }

    #[test]
    fn the_group_is_the_id_prefix_and_filters_apply_to_it() {
        assert_eq!(A.group(), "auth");
        let f = GroupFilter {
            only: vec!["auth".into()],
            skip: vec![],
        };
        assert!(f.runs("auth") && !f.runs("headers"));
        let f = GroupFilter {
            only: vec![],
            skip: vec!["auth".into()],
        };
        assert!(!f.runs("auth") && f.runs("headers"));
        assert!(f.validate(&["auth", "headers"]).is_ok());
        let err = GroupFilter {
            only: vec!["nope".into()],
            skip: vec![],
        }
        .validate(&["auth"])
        .unwrap_err();
        assert!(err.contains("nope") && err.contains("auth"), "{err}");
    }

    #[test]
    fn the_json_form_has_the_documented_fields_in_order() {
        let c = Check::fail(&A, Evidence::new().status(200).body("bearer"), "Bearer")
            .with_fix("answer token_type \"Bearer\"");
        let v = serde_json::to_value(&c).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "group",
                "description",
                "severity",
                "result",
                "evidence",
                "expected",
                "how_to_fix"
            ]
        );
        assert_eq!(v["result"], "fail");
        assert_eq!(v["how_to_fix"], "answer token_type \"Bearer\"");
        let without = serde_json::to_value(Check::pass(&A, Evidence::new())).unwrap();
        assert!(without.get("how_to_fix").is_none(), "absent, not null");
        assert_eq!(v["severity"], "error");
    }
}
