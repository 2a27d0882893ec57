//! The rules of a scenario file that its types cannot say: references between sections,
//! times, the key service's and telephony's settings, and the platform API's own validation of
//! the requests inside. Each refusal is a [`Problem`] with its line and column.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::Path;

use chrono::{DateTime, Duration, Utc};
use contracts::domain::phone::normalize;
use contracts::validate::Options;
use serde_json::Value;

use super::expect::Expect;
use super::kms::{KmsFaultKind, kind_name};
use super::locate::{ApiPlace, Seg, Tree, seg};
use super::located::{Located, line_col};
use super::model::Scenario;
use super::setup::{CohortDef, campaign_body};
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

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

/// The problems found in one file's text (`dir` is where files it names are read from).
pub(super) struct Checker<'a> {
    pub(super) text: &'a str,
    pub(super) dir: &'a Path,
    /// The file's spanned tree, to point inside tables kept as JSON.
    pub(super) tree: Tree<'a>,
    pub(super) problems: Vec<Problem>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(text: &'a str, dir: &'a Path) -> Checker<'a> {
        Checker {
            text,
            dir,
            tree: Tree::parse(text),
            problems: Vec::new(),
        }
    }

    /// A problem at `span`.
    pub(super) fn at(&mut self, span: &Range<usize>, message: String) {
        let (line, col) = line_col(self.text, span.start);
        self.problems.push(Problem { line, col, message });
    }

    /// Where `path` is written in the file, else `fallback` (the entry it is part of).
    pub(super) fn place(&self, path: &[Seg], fallback: &Range<usize>) -> Range<usize> {
        self.tree.span(path).unwrap_or_else(|| fallback.clone())
    }

    /// Every rule of the file `s` that its types cannot say.
    pub(super) fn check(&mut self, s: &Scenario, start: DateTime<Utc>) {
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
        for (i, c) in s.campaigns.iter().enumerate() {
            self.campaign(i, c, start);
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
        for (i, d) in s.deployments.iter().enumerate() {
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
                let at = ApiPlace::new("request", &["deployments".into(), i.into()], &d.span);
                self.api_errors(&at, &format!("deployment {:?}", d.key), &e);
            }
        }
        let uploaded_by_step = s.cohorts_uploaded_by_steps();
        for (i, c) in s.cohorts.iter().enumerate() {
            self.cohort(i, c, &campaigns, &deployments);
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
                Action::PatchCampaign { patch, clear, .. }
                | Action::PatchDeployment { patch, clear, .. } => {
                    for field in super::timeline::set_and_cleared(patch, clear) {
                        self.at(
                            &st.span,
                            format!("{field} is both set in patch and cleared by clear: keep one"),
                        );
                    }
                    if st.action.body().is_none() {
                        self.at(
                            &st.span,
                            format!(
                                "clear names a field inside a value that is not a table ({}): clear a field of the body, or one inside a table of it such as \"app_config.webhook_config\"",
                                clear.join(", ")
                            ),
                        );
                    } else if clear.is_empty() && patch.as_object().is_some_and(|m| m.is_empty()) {
                        self.at(
                            &st.span,
                            "the patch changes nothing: give the fields to change in patch = { ... }, or those to clear in clear = [\"...\"]".into(),
                        );
                    }
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
        for (i, e) in s.expect.iter().enumerate() {
            self.expectation(e, s, start, &campaigns, &cohorts, &calls);
            self.meetable(i, e, s);
        }
        self.timeline_states(s, start);
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

    fn campaign(&mut self, i: usize, c: &Located<super::setup::CampaignDef>, start: DateTime<Utc>) {
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
            let at = ApiPlace::new("request", &["campaigns".into(), i.into()], &c.span);
            self.api_errors(&at, &format!("campaign {:?}", c.key), &e);
        }
    }

    fn cohort(
        &mut self,
        i: usize,
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
        if let Some(g) = &c.generate {
            let place = self.place(&["cohorts".into(), i.into(), "generate".into()], &c.span);
            match g.number_pattern() {
                Err(e) => self.at(&place, format!("cohort {:?}: {e}", c.key)),
                Ok(pattern) => {
                    // The first and last numbers stand for all: they differ only in the index.
                    let country = c
                        .transformation
                        .as_ref()
                        .and_then(|t| t["phone_number"]["country_code"].as_str());
                    let last = g.first.saturating_add(g.count.saturating_sub(1));
                    if let Some(e) = [g.first, last]
                        .into_iter()
                        .find_map(|i| normalize(&pattern.number(i), country).err())
                    {
                        self.at(
                            &place,
                            format!(
                                "cohort {:?}: the pattern {:?} makes numbers the platform rejects: {e}",
                                c.key, g.numbers
                            ),
                        );
                    }
                }
            }
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
                let mut path: Vec<Seg> = vec!["cohorts".into(), i.into(), "transformation".into()];
                path.extend(d.loc.iter().map(seg));
                let span = self.place(&path, &c.span);
                self.at(
                    &span,
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
