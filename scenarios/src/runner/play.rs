//! Playing one scenario: the stack on a simulated clock, the setup through the API, then the
//! clock moved from stop to stop (timeline steps, fault edges, campaign starts and ends,
//! expectation times, and regular ticks for progress), each advance running every engine
//! event due on the way; at each stop the dials seen are taken in, status changes noted,
//! the steps run and the expectations due judged. The steps themselves, and the key-service
//! faults and cohort uploads they switch on, are in `play/actions.rs`.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail};
use chrono::{DateTime, Duration, Utc};
use contracts::clock::format_instant;
use customer_kms_sim::{FaultKind, FaultSpec, FaultTrigger, KmsConfig};
use indicatif::ProgressBar;
use reqwest::Method;
use serde_json::{Value, json};
use telephony_sim::{NumberMatcher, Response, Script};

use super::client::Api;
use super::observe::{Observer, Shared};
use super::webhooks::{Receiver, Signing};
use crate::checks::Check;
use crate::report::scenario::TimelineEntry;
use crate::scenario::Loaded;
use crate::scenario::kms::{KmsFaultDef, KmsFaultKind};
use crate::scenario::model::{Answer, AnswerOutcome, ScriptKind};
use crate::scenario::setup::campaign_body;
use crate::scenario::time::At;
use crate::scenario::timeline::Action;
use crate::stack::{ByokOptions, EngineMode, Stack, StackClock, StackDatabase, StackOptions};

mod actions;

use super::run::{Created, Event, FaultSet, Run};
use actions::{Refusable, response};

/// The platform's webhook secret in scenario runs (fixed, so reports do not depend on it).
pub(crate) const WEBHOOK_SECRET: &str = "whsec_scenario";
/// The API key of the scenario's workspace.
pub(crate) const API_KEY: &str = "sk-scenario";
/// How many progress ticks a run is cut into (also how often the journal is drained).
const TICKS: i64 = 200;

impl<'a> Run<'a> {
    /// Starts the stack and the receiver, installs the telephony rules.
    pub(crate) async fn start(loaded: &'a Loaded, seed: u64) -> Result<Run<'a>> {
        let s = &loaded.scenario;
        let ks = &s.key_service;
        let receiver = Receiver::start(Signing {
            secret: WEBHOOK_SECRET.as_bytes().to_vec(),
            signature_header: contracts::wire::HEADER_SIGNATURE.into(),
            timestamp_header: contracts::wire::HEADER_TIMESTAMP.into(),
        })
        .await?;
        let mut options = StackOptions::simulated(loaded.start);
        options.clock = StackClock::Simulated(loaded.start);
        options.engine = EngineMode::Manual;
        options.database = StackDatabase::Temporary;
        options.seed = Some(seed);
        let org = crate::stack::DEFAULT_ORG;
        let ws = crate::stack::DEFAULT_WORKSPACE;
        let mut config = platform::config::PlatformConfig {
            api_keys: vec![
                platform::config::ApiKeyConfig::parse(&format!("{org}/{ws}={API_KEY}:scenario"))
                    .map_err(|e| anyhow!(e))?,
            ],
            webhook_secret: Some(WEBHOOK_SECRET.into()),
            ..Default::default()
        };
        config.telephony.seed = Some(s.telephony.seed.unwrap_or(seed));
        config.telephony.model = s.telephony.model.as_ref().map(|m| m.value.clone());
        config.deployment_webhooks = vec![platform::config::DeploymentWebhook {
            org_id: org.into(),
            workspace_id: ws.into(),
            url: format!("{}/deployments", receiver.base),
        }];
        options.platform = config;
        let mut kms = KmsConfig::new(&ks.partner)
            .with_seed(seed)
            .with_admin_token("scenario-admin");
        let clients = if ks.clients.is_empty() {
            vec![(
                "platform".to_string(),
                vec!["platform-secret-1".to_string()],
            )]
        } else {
            ks.clients
                .iter()
                .map(|c| (c.id.clone(), c.secrets.clone()))
                .collect()
        };
        for (id, secrets) in &clients {
            let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
            kms = kms.with_client(id, &secrets);
        }
        let aliases = if ks.aliases.is_empty() {
            vec![("tenant-a".to_string(), 1)]
        } else {
            ks.aliases
                .iter()
                .map(|a| (a.name.clone(), a.versions))
                .collect()
        };
        for (name, versions) in &aliases {
            kms = kms.with_alias(name, *versions);
        }
        if let Some(t) = &ks.token_lifetime {
            kms = kms.with_expires_in(t.value.0.num_seconds().max(1) as u64);
        }
        options.kms = Some(kms);
        options.byok = ByokOptions {
            client_id: Some(clients[0].0.clone()),
            key_alias: Some(aliases[0].0.clone()),
            data_key_cache_secs: ks
                .data_key_cache
                .as_ref()
                .map_or(platform::config::BYOK_DATA_KEY_CACHE_SECS, |d| {
                    d.0.num_seconds().max(1) as u64
                }),
            request_timeout_ms: ks
                .request_timeout
                .as_ref()
                .map_or(platform::config::BYOK_REQUEST_TIMEOUT_MS, |d| {
                    d.0.num_milliseconds().max(1) as u64
                }),
            rotation_period_secs: None,
        };
        let stack = Stack::start(options).await.context("starting the stack")?;
        let telephony = stack.telephony().clone();
        // Each dial is taken in as it is made: the journal keeps none.
        let observer = Shared::new(Observer::new(loaded.start, loaded.until));
        telephony.set_journal_limit(Some(0));
        telephony.watch_dials(Some(std::sync::Arc::new(observer.clone())));
        let mut rules = vec![];
        for r in &s.telephony.rules {
            let (matcher, described) = match (&r.number, &r.prefix, &r.suffix) {
                (Some(n), _, _) => (NumberMatcher::exact(n), format!("number {n}")),
                (_, Some(p), _) => (NumberMatcher::prefix(p), format!("numbers starting {p}")),
                (_, _, Some(x)) => (NumberMatcher::suffix(x), format!("numbers ending {x}")),
                _ => bail!("a telephony rule without a matcher passed the checks"),
            };
            let answers: Vec<Response> = r.answers.iter().map(response).collect();
            let script = match r.script {
                ScriptKind::Sequence => Script::try_sequence(answers),
                ScriptKind::ByAttempt => Script::try_by_attempt(answers),
            }?;
            let name = r.name.clone().unwrap_or(described);
            let handle = telephony
                .given(matcher)
                .respond_with(script)
                .named(name.clone());
            rules.push((name, handle, r.expect_dials, loaded.location(&r.span)));
        }
        let info = stack.info().platform.clone();
        let api = Api::new(&info.url, API_KEY, &info.org_id, &info.workspace_id);
        Ok(Run {
            loaded,
            seed,
            stack,
            api,
            receiver,
            observer,
            campaigns: BTreeMap::new(),
            deployments: BTreeMap::new(),
            cohorts: BTreeMap::new(),
            inbound: vec![],
            timeline: vec![],
            checks: BTreeMap::new(),
            refused: vec![],
            rules,
            faults: vec![],
            stops: BTreeMap::new(),
            statuses_stale: true,
            reads: Default::default(),
            now: loaded.start,
        })
    }

    fn at(&self, a: At) -> DateTime<Utc> {
        self.loaded.at(a)
    }

    fn note(&mut self, kind: &str, subject: &str, detail: impl Into<String>) {
        self.note_at(self.now, kind, subject, detail);
    }

    /// Something that happened at `at` (a stop's time, or earlier: the instant a campaign
    /// moved with time between two stops).
    fn note_at(&mut self, at: DateTime<Utc>, kind: &str, subject: &str, detail: impl Into<String>) {
        self.timeline.push(TimelineEntry {
            at: format_instant(at),
            kind: kind.into(),
            subject: subject.into(),
            detail: detail.into(),
        });
    }

    /// A campaign's status is now `status` (as an answer of the platform says): noted at
    /// `at` when it changed.
    pub(super) fn status_now(&mut self, key: &str, at: DateTime<Utc>, status: &str) {
        let Some(c) = self.campaigns.get_mut(key) else {
            return;
        };
        if c.status != status {
            if status == "cancelled" && c.cancelled_at.is_none() {
                c.cancelled_at = Some(at);
            }
            let before = std::mem::replace(&mut c.status, status.to_string());
            self.note_at(at, "status", key, format!("{before} -> {status}"));
        }
    }

    fn stop_at(&mut self, t: DateTime<Utc>, e: Event) {
        let t = t.max(self.now).min(self.loaded.until);
        self.stops.entry(t).or_default().insert(e);
    }

    /// Creates what the file creates at the start and plans every stop.
    pub(crate) async fn setup(&mut self) -> Result<()> {
        let s = &self.loaded.scenario;
        for d in &s.deployments {
            let v = self
                .api
                .post(&format!("{}/deployments", self.api.authoring()), &d.request)
                .await
                .with_context(|| {
                    format!(
                        "creating deployment {:?} ({})",
                        d.key,
                        self.loaded.location(&d.span)
                    )
                })?;
            let id = str_field(&v, "deployment_id")?;
            self.deployments.insert(d.key.clone(), id.clone());
            self.note("action", &d.key, format!("deployment created ({id})"));
        }
        for c in &s.campaigns {
            let body = campaign_body(
                c,
                self.loaded.start,
                &format!("{}/campaigns/{}", self.receiver.base, c.key),
            );
            let v = self
                .api
                .post(&format!("{}/campaigns", self.api.scheduling()), &body)
                .await
                .with_context(|| {
                    format!(
                        "creating campaign {:?} ({})",
                        c.key,
                        self.loaded.location(&c.span)
                    )
                })?;
            let id = str_field(&v, "campaign_id")?;
            let status = str_field(&v, "status")?;
            let spec =
                contracts::validate::campaign_create(&body, self.loaded.start, Default::default())
                    .map_err(|e| anyhow!("campaign {:?}: {e}", c.key))?;
            self.observer
                .lock()
                .watch(&c.key, self.loaded.start, spec, c.webhooks);
            self.note("status", &c.key, format!("created ({id}): {status}"));
            self.campaigns.insert(
                c.key.clone(),
                Created {
                    id,
                    status,
                    cancelled_at: None,
                },
            );
            self.stop_at(self.at(c.start), Event::Look);
            self.stop_at(self.at(c.end), Event::Look);
        }
        let by_step = s.cohorts_uploaded_by_steps();
        for (i, c) in s.cohorts.iter().enumerate() {
            if by_step.contains(c.key.as_str()) {
                continue;
            }
            match c.upload_at {
                None => self.upload(i).await?,
                Some(a) => self.stop_at(self.at(a), Event::Upload(i)),
            }
        }
        for (i, f) in s.key_service.faults.iter().enumerate() {
            let from = f.from.map_or(self.loaded.start, |a| self.at(a));
            self.stop_at(from, Event::FaultOn(i));
        }
        for (i, st) in s.timeline.iter().enumerate() {
            self.stop_at(self.at(st.at), Event::Step(i));
        }
        for (i, e) in s.expect.iter().enumerate() {
            let t = e.at.map_or(self.loaded.until, |a| self.at(a));
            self.stop_at(t, Event::Judge(i));
        }
        let span = self.loaded.until - self.loaded.start;
        let tick = Duration::milliseconds((span.num_milliseconds() / TICKS).max(1000));
        let mut t = self.loaded.start + tick;
        while t < self.loaded.until {
            self.stop_at(t, Event::Look);
            t += tick;
        }
        self.stop_at(self.loaded.until, Event::Look);
        Ok(())
    }

    /// Plays every stop to the end.
    pub(crate) async fn play(&mut self, progress: &ProgressBar) -> Result<()> {
        let total = (self.loaded.until - self.loaded.start).num_seconds().max(1) as u64;
        progress.set_length(total);
        while let Some((t, events)) = self.stops.pop_first() {
            if t > self.now {
                let moved = self
                    .api
                    .post("/sim/v1/clock/advance", &json!({"to": format_instant(t)}))
                    .await
                    .context("moving the clock")?;
                // Campaigns change status with time only when the engine activates or ends
                // them, and the advance counts those.
                if moved["campaign_transitions"].as_u64() != Some(0) {
                    self.statuses_stale = true;
                }
                self.now = t;
                self.forget_reads();
            }
            self.look().await?;
            if events
                .iter()
                .any(|e| matches!(e, Event::Step(_) | Event::Upload(_)))
            {
                self.statuses_stale = true;
            }
            for e in events {
                match e {
                    Event::FaultOff(i) => {
                        let id = self.faults[i].id.clone();
                        self.faults[i].until = Some(self.now);
                        self.stack.kms().faults().remove(&id);
                        self.note("fault", "key service", format!("fault {id} removed"));
                    }
                    Event::FaultOn(i) => self.fault_on(i)?,
                    Event::Upload(i) => {
                        let done = self.upload(i).await;
                        self.refusal(done, Refusable::Upload(i))?;
                        self.forget_reads();
                    }
                    Event::Step(i) => {
                        let done = self.step(i).await;
                        self.refusal(done, Refusable::Step(i))?;
                        self.forget_reads();
                    }
                    Event::Judge(i) => {
                        let check = super::judge::judge(self, i).await?;
                        self.checks.insert(i, check);
                    }
                    Event::Look => {}
                }
            }
            progress.set_position((self.now - self.loaded.start).num_seconds().max(0) as u64);
            let seen = self.observer.lock().seen;
            progress.set_message(format!(
                "{} UTC, {} dial{}",
                self.now.format("%Y-%m-%d %H:%M"),
                seen,
                crate::scenario::plural(seen as usize)
            ));
        }
        Ok(())
    }

    /// Stops the run if the export of dials failed since the last look, and notes status
    /// changes.
    async fn look(&mut self) -> Result<()> {
        if let Some(e) = self.observer.lock().export_error.take() {
            return Err(e);
        }
        if !std::mem::take(&mut self.statuses_stale) {
            return Ok(());
        }
        let keys: Vec<String> = self.campaigns.keys().cloned().collect();
        for key in keys {
            let v = self.campaign(&key).await?;
            let status = str_field(&v, "status")?;
            let before = self.campaigns[&key].status.clone();
            if status == before {
                continue;
            }
            // Only the clock moved it (the steps note their own changes): at the start or
            // the end it is due at, as the platform's life cycle says.
            let changes = {
                let observer = self.observer.lock();
                let spec = observer.watched[&key].spec_at(self.now);
                time_changes(&before, &status, spec.start, spec.end, self.now)
            };
            for (at, to) in changes {
                self.status_now(&key, at, &to);
            }
        }
        Ok(())
    }

    /// A cohort's record now, or the last one read when it cannot be read any more (its
    /// deployment was deleted).
    pub(crate) async fn cohort(&self, key: &str) -> Option<Value> {
        let (path, last) = self.cohorts.get(key)?;
        Some(self.api.get(path).await.unwrap_or_else(|_| last.clone()))
    }

    /// The key-service faults set over stretches of time: from, until (the end of the run
    /// when never removed) and what.
    pub(crate) fn fault_periods(&self) -> Vec<(DateTime<Utc>, DateTime<Utc>, String)> {
        self.faults
            .iter()
            .filter(|f| f.timed)
            .map(|f| {
                (
                    f.from,
                    f.until.unwrap_or(self.loaded.until),
                    f.label.clone(),
                )
            })
            .collect()
    }

    /// The platform's record of an inbound call, by key.
    pub(crate) fn inbound_call(&self, key: &str) -> Option<&Value> {
        self.inbound.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `GET` of a campaign by key (read once per stop while nothing changes it).
    pub(crate) async fn campaign(&self, key: &str) -> Result<Value> {
        if let Some(v) = self.lock_reads().get(key) {
            return Ok(v.clone());
        }
        let id = &self
            .campaigns
            .get(key)
            .ok_or_else(|| anyhow!("no campaign {key:?}"))?
            .id;
        let v = self
            .api
            .get(&format!("{}/campaigns/{id}", self.api.scheduling()))
            .await?;
        self.lock_reads().insert(key.to_string(), v.clone());
        Ok(v)
    }

    fn lock_reads(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        self.reads.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn forget_reads(&mut self) {
        self.lock_reads().clear();
    }
}

/// The changes with time that take a campaign from `before` to `after` by `now`, each at the
/// instant it was due ([`platform::lifecycle::next_time_transition`]: the start or the end);
/// anything else is put at `now`.
fn time_changes(
    before: &str,
    after: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, String)> {
    use contracts::wire::CampaignStatus;
    let mut out = vec![];
    let mut at = CampaignStatus::parse(before);
    while let Some(s) = at.filter(|s| s.as_str() != after) {
        match platform::lifecycle::next_time_transition(s, start, end) {
            Some((t, to)) if t <= now => {
                out.push((t, to.as_str().to_string()));
                at = Some(to);
            }
            _ => break,
        }
    }
    if out.last().is_none_or(|(_, s)| s != after) {
        out.push((now, after.to_string()));
    }
    out
}

/// The spec of a campaign as `GET` answers it (after a patch).
pub(crate) fn spec_of(v: &Value) -> Result<contracts::model::CampaignSpec> {
    let mut body = serde_json::Map::new();
    for k in [
        "name",
        "description",
        "start_timestamp",
        "end_timestamp",
        "allowed_schedule",
        "app_config",
    ] {
        if let Some(x) = v.get(k).filter(|x| !x.is_null()) {
            body.insert(k.into(), x.clone());
        }
    }
    let start: DateTime<Utc> = v["start_timestamp"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("the campaign has no start_timestamp"))?;
    contracts::validate::campaign_create(
        &Value::Object(body),
        start - Duration::hours(1),
        Default::default(),
    )
    .map_err(|e| anyhow!("the campaign as answered does not read back: {e}"))
}

/// A string field of an answer.
pub(crate) fn str_field(v: &Value, name: &str) -> Result<String> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| anyhow!("the answer has no {name}: {v}"))
}
