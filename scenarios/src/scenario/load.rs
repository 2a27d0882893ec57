//! Reading a scenario file: TOML into the types of this module, then every rule the types
//! cannot say (references between sections, times, the API's own validation of the requests
//! inside), each refusal with its line and column. Never a panic: every input is either a
//! [`Loaded`] scenario or a [`ScenarioError`] listing what is wrong and where.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use contracts::error::LocItem;
use contracts::validate::Options;
use serde_json::Value;

use super::expect::Expect;
use super::located::{Located, line_col};
use super::model::{KmsFaultKind, Scenario};
use super::setup::CohortDef;
use super::time::At;
use super::timeline::Action;

/// One thing wrong with a file, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// A scenario file that cannot run: every problem found, with its place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ScenarioError {
    /// The file as named on the command line.
    pub file: String,
    /// The problems, in file order.
    pub problems: Vec<Problem>,
    /// The file's lines, for the excerpts.
    lines: Vec<String>,
}

impl ScenarioError {
    fn render(&self) -> String {
        let mut out = String::new();
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(out, "{}:{}:{}: {}", self.file, p.line, p.col, p.message);
            if let Some(text) = self.lines.get(p.line - 1) {
                let gutter = p.line.to_string().len();
                let _ = writeln!(out, "{:gutter$} |", "");
                let _ = writeln!(out, "{} | {}", p.line, text);
                let _ = writeln!(
                    out,
                    "{:gutter$} | {}^",
                    "",
                    " ".repeat(p.col.saturating_sub(1))
                );
            }
        }
        let n = self.problems.len();
        let _ = write!(
            out,
            "{}: {n} problem{}",
            self.file,
            if n == 1 { "" } else { "s" }
        );
        out
    }
}

/// A scenario that passed every check, with its times resolved.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub scenario: Scenario,
    /// The file as reports name it ([`report_path`]), the same on every machine.
    pub file: String,
    /// The directory CSV files are read from.
    pub dir: PathBuf,
    /// The file's text.
    pub text: String,
    /// The name in reports.
    pub name: String,
    /// The simulated start.
    pub start: DateTime<Utc>,
    /// The simulated end of the run.
    pub until: DateTime<Utc>,
}

impl Loaded {
    /// `file:line` of a span, for check locations.
    pub fn location(&self, span: &Range<usize>) -> String {
        format!("{}:{}", self.file, line_col(&self.text, span.start).0)
    }

    /// A time of the file as an instant.
    pub fn at(&self, at: At) -> DateTime<Utc> {
        at.resolve(self.start)
    }
}

/// Reads and checks a scenario file.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError::Read {
        file: path.display().to_string(),
        message: e.to_string(),
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = path
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    let mut loaded =
        load_str(&text, &path.display().to_string(), &dir, &name).map_err(LoadError::Invalid)?;
    loaded.file = report_path(path);
    Ok(loaded)
}

/// How reports name a scenario file, so that the same file gives the same `report.json`
/// however it was named and wherever it is run: its path relative to the current directory
/// (with `/`) when it is under it, else its file name alone.
pub fn report_path(path: &Path) -> String {
    let name = || {
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let (Ok(abs), Ok(cwd)) = (
        std::fs::canonicalize(path),
        std::env::current_dir().and_then(std::fs::canonicalize),
    ) else {
        return name();
    };
    match abs.strip_prefix(&cwd) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => name(),
    }
}

/// Why a file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {file}: {message}")]
    Read {
        /// The file.
        file: String,
        /// The operating system's reason.
        message: String,
    },
    /// The file is not a valid scenario.
    #[error(transparent)]
    Invalid(#[from] ScenarioError),
}

/// Checks a scenario's text; `file` names it in messages, `dir` is where its CSV files are,
/// `default_name` its name when it has none.
pub fn load_str(
    text: &str,
    file: &str,
    dir: &Path,
    default_name: &str,
) -> Result<Loaded, ScenarioError> {
    let fail = |problems: Vec<Problem>| ScenarioError {
        file: file.to_string(),
        problems,
        lines: text.lines().map(str::to_string).collect(),
    };
    let scenario: Scenario = toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        fail(vec![Problem {
            line,
            col,
            message: tidy_toml_message(e.message()),
        }])
    })?;
    let mut v = Checker {
        text,
        dir,
        problems: Vec::new(),
    };
    let start = match scenario.start.value {
        At::Absolute(t) => t,
        At::AfterStart(_) => {
            v.at(
                &scenario.start.span,
                "start must be an RFC 3339 instant, such as \"2026-03-02T08:00:00Z\"".into(),
            );
            DateTime::<Utc>::UNIX_EPOCH
        }
    };
    v.check(&scenario, start);
    let until = scenario
        .until
        .as_ref()
        .map(|u| u.resolve(start))
        .unwrap_or_else(|| default_until(&scenario, start));
    if let Some(u) = &scenario.until
        && until <= start
    {
        v.at(
            &u.span,
            format!("until ({}) must be after the start", u.value),
        );
    }
    if !v.problems.is_empty() {
        v.problems.sort_by_key(|p| (p.line, p.col));
        v.problems.dedup();
        return Err(fail(v.problems));
    }
    Ok(Loaded {
        name: scenario
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        scenario,
        file: file.to_string(),
        dir: dir.to_path_buf(),
        text: text.to_string(),
        start,
        until,
    })
}

/// toml's messages end with a newline and sometimes name internal types.
fn tidy_toml_message(m: &str) -> String {
    let m = m
        .trim()
        .replace("`$__toml_private_datetime`", "a date-time");
    if m == "missing field `start`" {
        return format!(
            "{m}: add start = \"2026-03-02T08:00:00Z\" (where the simulated clock starts)"
        );
    }
    m
}

/// One hour after the latest time the file names.
fn default_until(s: &Scenario, start: DateTime<Utc>) -> DateTime<Utc> {
    let mut latest = start;
    let mut see = |a: At| latest = latest.max(a.resolve(start));
    for c in &s.campaigns {
        see(c.end);
    }
    for st in &s.timeline {
        see(st.at);
        if let Action::KeyServiceOutage { duration, .. } = &st.action {
            see(At::Absolute(st.at.resolve(start) + duration.0));
        }
    }
    for e in &s.expect {
        if let Some(a) = e.at {
            see(a);
        }
    }
    for f in &s.key_service.faults {
        for a in [f.from, f.until].into_iter().flatten() {
            see(a);
        }
    }
    latest + Duration::hours(1)
}

struct Checker<'a> {
    text: &'a str,
    dir: &'a Path,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn at(&mut self, span: &Range<usize>, message: String) {
        let (line, col) = line_col(self.text, span.start);
        self.problems.push(Problem { line, col, message });
    }

    fn check(&mut self, s: &Scenario, start: DateTime<Utc>) {
        let campaigns = self.keys("campaign", s.campaigns.iter().map(|c| (&c.key, &c.span)));
        let deployments = self.keys(
            "deployment",
            s.deployments.iter().map(|d| (&d.key, &d.span)),
        );
        let cohorts = self.keys("cohort", s.cohorts.iter().map(|c| (&c.key, &c.span)));
        let calls = self.keys(
            "inbound call",
            s.timeline.iter().filter_map(|st| match &st.action {
                Action::InboundCall { key, .. } => Some((key, &st.span)),
                _ => None,
            }),
        );
        let not_before_start = |a: At| a.resolve(start) >= start;
        self.key_service(s, start);
        self.telephony(s);
        let mut agent_numbers: BTreeMap<String, String> = BTreeMap::new();
        for c in &s.campaigns {
            self.campaign(c, start);
            for n in agent_numbers_of(&c.request) {
                if let Some(other) = agent_numbers.insert(n.clone(), c.key.clone())
                    && other != c.key
                {
                    self.at(
                        &c.span,
                        format!(
                            "campaigns {other:?} and {:?} both dial from {n}: give each campaign its own numbers, so that the report can tell their dials apart",
                            c.key
                        ),
                    );
                }
            }
        }
        for d in &s.deployments {
            let body = &d.request;
            if !body.is_object() {
                self.at(
                    &d.span,
                    format!(
                        "deployment {:?}: request must be a table of the create request's fields, under [deployments.request]",
                        d.key
                    ),
                );
            } else if let Err(e) =
                contracts::validate::deployment_create(body, Options { strict: true })
            {
                self.api_errors(&d.span, &format!("deployment {:?}", d.key), &e);
            }
        }
        let uploaded_by_step: BTreeSet<&str> = s
            .timeline
            .iter()
            .filter_map(|st| match &st.action {
                Action::UploadCohort { cohort } => Some(cohort.as_str()),
                _ => None,
            })
            .collect();
        for c in &s.cohorts {
            self.cohort(c, &campaigns, &deployments);
            if let Some(a) = c.upload_at {
                if uploaded_by_step.contains(c.key.as_str()) {
                    self.at(
                        &c.span,
                        format!(
                            "cohort {:?} has upload_at and is uploaded by an upload_cohort step: keep one",
                            c.key
                        ),
                    );
                }
                if !not_before_start(a) {
                    self.at(
                        &c.span,
                        format!("cohort {:?}: upload_at {a} is before the start", c.key),
                    );
                }
            }
        }
        for st in &s.timeline {
            if !not_before_start(st.at) {
                self.at(&st.span, format!("step at {} is before the start", st.at));
            }
            let refs: Vec<(&str, &String, &BTreeSet<String>)> = match &st.action {
                Action::Pause { campaign }
                | Action::Resume { campaign }
                | Action::Cancel { campaign }
                | Action::PatchCampaign { campaign, .. } => {
                    vec![("campaign", campaign, &campaigns)]
                }
                Action::UploadCohort { cohort } => vec![("cohort", cohort, &cohorts)],
                Action::PauseDeployment { deployment }
                | Action::ResumeDeployment { deployment }
                | Action::DeleteDeployment { deployment }
                | Action::PatchDeployment { deployment, .. } => {
                    vec![("deployment", deployment, &deployments)]
                }
                Action::InboundCall { .. }
                | Action::KeyServiceOutage { .. }
                | Action::RotateDataKey {}
                | Action::RestartPlatform {} => vec![],
            };
            for (kind, key, known) in refs {
                self.reference(&st.span, kind, key, known);
            }
            match &st.action {
                Action::PatchCampaign { patch, .. } | Action::PatchDeployment { patch, .. }
                    if !patch.is_object() =>
                {
                    self.at(
                        &st.span,
                        "patch must be a table of the fields to change, such as patch = { name = \"New name\" }".into(),
                    );
                }
                Action::KeyServiceOutage { duration, .. } if duration.0 <= Duration::zero() => {
                    self.at(
                        &st.span,
                        "an outage needs a duration above 0 in `for`".into(),
                    );
                }
                _ => {}
            }
        }
        for e in &s.expect {
            self.expectation(e, s, start, &campaigns, &cohorts, &calls);
        }
    }

    /// Keys must be unique and not empty; answers the set of them.
    fn keys<'k>(
        &mut self,
        kind: &str,
        items: impl Iterator<Item = (&'k String, &'k Range<usize>)>,
    ) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        for (key, span) in items {
            if key.trim().is_empty() {
                self.at(span, format!("a {kind} needs a non-empty key"));
            } else if !seen.insert(key.clone()) {
                self.at(
                    span,
                    format!("a second {kind} with key {key:?}: keys must be unique"),
                );
            }
        }
        seen
    }

    fn reference(&mut self, span: &Range<usize>, kind: &str, key: &str, known: &BTreeSet<String>) {
        if !known.contains(key) {
            let list = if known.is_empty() {
                format!("there is no {kind} in the file")
            } else {
                format!(
                    "the {kind}s are: {}",
                    known
                        .iter()
                        .map(|k| format!("{k:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            self.at(span, format!("no {kind} with key {key:?}; {list}"));
        }
    }

    fn key_service(&mut self, s: &Scenario, start: DateTime<Utc>) {
        let ks = &s.key_service;
        for f in &ks.faults {
            let from = f.from.map_or(start, |a| a.resolve(start));
            if from < start {
                self.at(
                    &f.span,
                    format!(
                        "fault from {} is before the start",
                        f.from.unwrap_or(At::AfterStart(Duration::zero()))
                    ),
                );
            }
            if let Some(u) = f.until
                && u.resolve(start) <= from
            {
                self.at(&f.span, format!("fault until {u} must be after its from"));
            }
            if f.next == Some(0) {
                self.at(&f.span, "next must be at least 1".into());
            }
            if let Some(p) = f.probability
                && !(0.0..=1.0).contains(&p)
            {
                self.at(&f.span, format!("probability {p} must be from 0 to 1"));
            }
            if f.next.is_some() && f.probability.is_some() {
                self.at(&f.span, "give next or probability, not both".into());
            }
            let misplaced = [
                (
                    "retry_after_secs",
                    f.retry_after_secs.is_some(),
                    KmsFaultKind::RateLimited,
                ),
                ("delay", f.delay.is_some(), KmsFaultKind::Latency),
                ("len", f.len.is_some(), KmsFaultKind::TruncatedKey),
            ];
            for (field, given, kind) in misplaced {
                if given && f.kind != kind {
                    self.at(
                        &f.span,
                        format!("{field} only applies to kind = \"{}\"", kind_name(kind)),
                    );
                }
            }
            if let Some(d) = f.delay
                && d.0 > Duration::minutes(10)
            {
                self.at(&f.span, "a latency delay is at most 10m".into());
            }
            if let Some(l) = f.len
                && l >= 32
            {
                self.at(
                    &f.span,
                    format!("len {l}: a truncated key keeps fewer than 32 bytes"),
                );
            }
        }
        for c in &ks.clients {
            if c.secrets.is_empty() || c.secrets.len() > 2 {
                self.at(
                    &c.span,
                    format!(
                        "key_service client {:?} needs one or two secrets, such as secrets = [\"platform-secret-1\"]",
                        c.id
                    ),
                );
            }
        }
        for (what, d) in [
            ("token_lifetime", &ks.token_lifetime),
            ("data_key_cache", &ks.data_key_cache),
            ("request_timeout", &ks.request_timeout),
        ] {
            if let Some(d) = d
                && d.value.0 < Duration::seconds(1)
            {
                self.at(&d.span, format!("key_service.{what} must be at least 1s"));
            }
        }
    }

    fn telephony(&mut self, s: &Scenario) {
        if let Some(m) = &s.telephony.model
            && let Err(e) = m.validate()
        {
            self.at(&m.span, format!("telephony.model: {e}"));
        }
        for r in &s.telephony.rules {
            let matchers = [&r.number, &r.prefix, &r.suffix]
                .iter()
                .filter(|m| m.is_some())
                .count();
            if matchers != 1 {
                self.at(
                    &r.span,
                    "a telephony rule needs exactly one of number, prefix or suffix".into(),
                );
            }
            if r.answers.is_empty() {
                self.at(&r.span, "a telephony rule needs at least one answer".into());
            }
        }
    }

    fn campaign(&mut self, c: &Located<super::setup::CampaignDef>, start: DateTime<Utc>) {
        let Some(obj) = c.request.as_object() else {
            self.at(
                &c.span,
                format!(
                    "campaign {:?}: request must be a table of the create request's fields, under [campaigns.request]",
                    c.key
                ),
            );
            return;
        };
        for field in ["start_timestamp", "end_timestamp"] {
            if obj.contains_key(field) {
                self.at(
                    &c.span,
                    format!(
                        "campaign {:?}: set {field} with the campaign's `{}`, not in request",
                        c.key,
                        if field == "start_timestamp" {
                            "start"
                        } else {
                            "end"
                        }
                    ),
                );
            }
        }
        let body = campaign_body(c, start, "http://127.0.0.1:9/scenario-webhooks");
        if let Err(e) = contracts::validate::campaign_create(&body, start, Options { strict: true })
        {
            self.api_errors(&c.span, &format!("campaign {:?}", c.key), &e);
        }
    }

    fn api_errors(
        &mut self,
        span: &Range<usize>,
        what: &str,
        e: &contracts::error::ValidationErrors,
    ) {
        for d in e.details() {
            let path: Vec<String> = d
                .loc
                .iter()
                .skip(1)
                .map(|i| match i {
                    LocItem::Key(k) => k.clone(),
                    LocItem::Index(n) => n.to_string(),
                })
                .collect();
            self.at(
                span,
                format!(
                    "{what}: the API would refuse request.{}: {} ({})",
                    path.join("."),
                    d.msg,
                    d.error_type
                ),
            );
        }
    }

    fn cohort(
        &mut self,
        c: &Located<CohortDef>,
        campaigns: &BTreeSet<String>,
        deployments: &BTreeSet<String>,
    ) {
        match (&c.campaign, &c.deployment) {
            (Some(k), None) => self.reference(&c.span, "campaign", k, campaigns),
            (None, Some(k)) => self.reference(&c.span, "deployment", k, deployments),
            _ => self.at(
                &c.span,
                format!(
                    "cohort {:?} needs exactly one of campaign or deployment",
                    c.key
                ),
            ),
        }
        let sources = [c.csv.is_some(), c.file.is_some(), c.generate.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if sources != 1 {
            self.at(
                &c.span,
                format!(
                    "cohort {:?} needs exactly one of csv, file or generate",
                    c.key
                ),
            );
        }
        if let Some(g) = &c.generate
            && let Err(e) = g.width()
        {
            self.at(&c.span, format!("cohort {:?}: {e}", c.key));
        }
        if let Some(f) = &c.file {
            let p = self.dir.join(f);
            if !p.is_file() {
                self.at(
                    &c.span,
                    format!(
                        "cohort {:?}: no file {} (a file is read relative to the scenario file)",
                        c.key,
                        p.display()
                    ),
                );
            }
        }
        if let Some(cat) = &c.category
            && !["cohort", "stop_file"].contains(&cat.as_str())
        {
            self.at(
                &c.span,
                format!(
                    "cohort {:?}: category {cat:?} is not cohort or stop_file",
                    c.key
                ),
            );
        }
        if let Some(t) = &c.transformation
            && let Err(e) = contracts::validate::transformation_config(
                t,
                &contracts::error::Loc::root(),
                Options::default(),
            )
        {
            for d in e.details() {
                self.at(
                    &c.span,
                    format!("cohort {:?}: transformation: {}", c.key, d.msg),
                );
            }
        }
    }

    fn expectation(
        &mut self,
        e: &Located<super::expect::Expectation>,
        s: &Scenario,
        start: DateTime<Utc>,
        campaigns: &BTreeSet<String>,
        cohorts: &BTreeSet<String>,
        calls: &BTreeSet<String>,
    ) {
        if let Some(a) = e.at
            && a.resolve(start) < start
        {
            self.at(&e.span, format!("expectation at {a} is before the start"));
        }
        if let Some(c) = e.check.campaign() {
            self.reference(&e.span, "campaign", c, campaigns);
        }
        match &e.check {
            Expect::RejectedRecords { cohort, .. } => {
                self.reference(&e.span, "cohort", cohort, cohorts)
            }
            Expect::Inbound {
                call, variables, ..
            } => {
                self.reference(&e.span, "inbound call", call, calls);
                if variables.as_ref().is_some_and(|v| !v.is_object()) {
                    self.at(
                        &e.span,
                        "variables must be a table of what the agent received, such as variables = { first_name = \"Ada\" }".into(),
                    );
                }
            }
            Expect::DialRate {
                rate,
                tolerance,
                from,
                until,
                ..
            } => {
                if !(*rate > 0.0 && rate.is_finite()) {
                    self.at(&e.span, format!("rate {rate} must be above 0: the dials per second expected, such as 0.5"));
                }
                self.tolerance(&e.span, *tolerance);
                if let (Some(f), Some(u)) = (from, until)
                    && u.resolve(start) <= f.resolve(start)
                {
                    self.at(&e.span, format!("until {u} must be after from {f}"));
                }
            }
            Expect::WeightSplit {
                shares, tolerance, ..
            } => {
                self.tolerance(&e.span, *tolerance);
                let sum: f64 = shares.values().sum();
                if shares.is_empty()
                    || (sum - 1.0).abs() > 1e-6
                    || shares.values().any(|v| *v < 0.0)
                {
                    self.at(
                        &e.span,
                        format!(
                            "shares add up to {sum}: give each connection's share, adding up to 1"
                        ),
                    );
                }
            }
            Expect::Webhooks { campaign, .. }
                if s.campaigns
                    .iter()
                    .any(|c| &c.key == campaign && !c.webhooks) =>
            {
                self.at(
                    &e.span,
                    format!(
                        "webhooks of campaign {campaign:?} are judged only with webhooks = true on the campaign"
                    ),
                );
            }
            _ => {}
        }
    }

    fn tolerance(&mut self, span: &Range<usize>, t: Option<f64>) {
        if let Some(t) = t
            && !(0.0..=1.0).contains(&t)
        {
            self.at(span, format!("tolerance {t} must be from 0 to 1"));
        }
    }
}

/// The agent numbers of a campaign request's connections.
fn agent_numbers_of(request: &Value) -> Vec<String> {
    request["app_config"]["connection_configs"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["phone_numbers"].as_array().into_iter().flatten())
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// The fault kind's name as written in files.
pub fn kind_name(k: KmsFaultKind) -> &'static str {
    match k {
        KmsFaultKind::ServiceUnavailable => "service_unavailable",
        KmsFaultKind::RateLimited => "rate_limited",
        KmsFaultKind::InternalError => "internal_error",
        KmsFaultKind::Latency => "latency",
        KmsFaultKind::Hang => "hang",
        KmsFaultKind::MalformedJson => "malformed_json",
        KmsFaultKind::WrongContentType => "wrong_content_type",
        KmsFaultKind::WrongPlaintext => "wrong_plaintext",
        KmsFaultKind::TruncatedKey => "truncated_key",
    }
}

/// The campaign's create body: its `request` with the timestamps and, with `webhooks`, the
/// webhook URL filled in.
pub fn campaign_body(
    c: &super::setup::CampaignDef,
    start: DateTime<Utc>,
    webhook_url: &str,
) -> Value {
    let mut body = c.request.clone();
    if let Some(o) = body.as_object_mut() {
        o.insert(
            "start_timestamp".into(),
            contracts::clock::format_instant(c.start.resolve(start)).into(),
        );
        o.insert(
            "end_timestamp".into(),
            contracts::clock::format_instant(c.end.resolve(start)).into(),
        );
        if c.webhooks
            && let Some(app) = o.get_mut("app_config").and_then(Value::as_object_mut)
        {
            let metadata = app
                .get("webhook_config")
                .and_then(|w| w.get("metadata"))
                .cloned()
                .unwrap_or_else(|| serde_json::json!({}));
            app.insert(
                "webhook_config".into(),
                serde_json::json!({"url": webhook_url, "metadata": metadata}),
            );
        }
    }
    body
}

/// Every campaign's key and its create body, by key (for the runner).
pub fn campaign_bodies(l: &Loaded, webhook_base: &str) -> BTreeMap<String, Value> {
    l.scenario
        .campaigns
        .iter()
        .map(|c| {
            (
                c.key.clone(),
                campaign_body(c, l.start, &format!("{webhook_base}/campaigns/{}", c.key)),
            )
        })
        .collect()
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}
