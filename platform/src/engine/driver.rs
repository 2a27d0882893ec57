//! The two drivers of the engine, and webhook delivery.
//!
//! [`Driver::run_until`] makes everything due up to an instant happen in time order: engine
//! steps and webhook tries interleaved, the keys of each workspace fetched before each step
//! (a workspace whose key service fails is held by the engine). On a simulated clock the clock
//! moves along to each due time, so keys expire and webhooks are stamped as they would be.
//!
//! - Real time ([`Driver::run`]): sleep until the next due time or a change from the API,
//!   run everything due, repeat.
//! - Simulated time ([`Driver::advance`]): the clock only moves when told; an advance runs
//!   every step due up to the target before it answers. In between, changes from the API
//!   still run at once at the current simulated time (an instant outbound call is dialled
//!   when it is made).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use contracts::clock::{ClockError, SimClock};
use contracts::validate::sim::Advance;
use contracts::wire::ClockAdvanceResult;
use futures_util::StreamExt;

use super::{Engine, EngineError, StepKeys};
use crate::keys::WorkspaceKeys;
use crate::store::deliveries;
use crate::store::{StoreError, WorkspaceRef};
use crate::webhooks::{TryResult, WebhookClient, WebhookSettings, backoff};

/// How many deliveries one round sends at most.
pub(crate) const DELIVERY_BATCH: u32 = 256;
/// How many webhook tries are in flight at once. A try may take up to `webhook_timeout_ms`
/// (wall time) when a receiver hangs; tries in parallel keep a few slow or unreachable
/// receivers from holding back everyone else's events, and a clock move from taking one
/// timeout per delivery.
pub(crate) const DELIVERY_CONCURRENCY: usize = 32;

/// A try to make in a round.
struct PlannedTry {
    id: String,
    url: String,
    body: Vec<u8>,
    /// Tries so far, this one included.
    tries: u32,
    /// When it was due: a try is never stamped earlier.
    due_at: DateTime<Utc>,
}

impl PlannedTry {
    /// What to record of the try's `result`, made at `now`: delivered, or failed with the
    /// next try after the backoff (none once the tries are used up).
    fn record(
        self,
        now: DateTime<Utc>,
        result: TryResult,
        settings: &WebhookSettings,
    ) -> deliveries::TryRecord {
        match result {
            TryResult::Delivered { status } => deliveries::TryRecord {
                id: self.id,
                tries: self.tries,
                delivered_at: Some(now),
                next: None,
                status_code: Some(status),
                error: None,
            },
            TryResult::Failed { status, error } => {
                tracing::info!(delivery = %self.id, url = %self.url, tries = self.tries, %error, "webhook try failed");
                let next = (self.tries < settings.max_tries).then(|| {
                    now + backoff(self.tries, settings.initial_backoff, settings.max_backoff)
                });
                deliveries::TryRecord {
                    id: self.id,
                    tries: self.tries,
                    delivered_at: None,
                    next,
                    status_code: status,
                    error: Some(error),
                }
            }
        }
    }
}

/// Why the clock could not be moved.
#[derive(Debug, thiserror::Error)]
pub enum AdvanceError {
    /// The platform runs on the real clock.
    #[error("the platform runs on the real clock; start it with a simulated clock to move time")]
    RealClock,
    /// The target is in the past.
    #[error(transparent)]
    Backwards(#[from] ClockError),
    /// The target is farther than one move may go
    /// (`contracts::validate::limits::CLOCK_MOVE_MAX_SECS`).
    #[error("the simulated clock moves at most 400 days at a time")]
    TooFar {
        /// The clock's time when asked.
        current: DateTime<Utc>,
        /// The instant asked for.
        target: DateTime<Utc>,
    },
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Runs the engine and delivers webhooks.
pub struct Driver {
    engine: Arc<Engine>,
    webhooks: WebhookClient,
    sim: Option<SimClock>,
    run_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("simulated", &self.sim.is_some())
            .finish_non_exhaustive()
    }
}

impl Driver {
    /// A driver of `engine`; `sim` is the simulated clock when the platform runs on one.
    pub(crate) fn new(engine: Arc<Engine>, webhooks: WebhookClient, sim: Option<SimClock>) -> Self {
        Driver {
            engine,
            webhooks,
            sim,
            run_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// How webhooks are signed and sent.
    pub(crate) fn webhook_settings(&self) -> &crate::webhooks::WebhookSettings {
        self.webhooks.settings()
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The keys of `workspaces`; those whose key service fails are left out (and held).
    pub(crate) async fn keys(&self, workspaces: &[WorkspaceRef]) -> StepKeys {
        let app = self.engine.app();
        let mut keys = StepKeys::default();
        for ws in workspaces {
            match app.keys.workspace(ws, None).await {
                Ok(k) => {
                    keys.insert(ws.clone(), k);
                }
                Err(e) => {
                    tracing::warn!(workspace = %ws, error = %e, "keys unavailable; the workspace's calls wait");
                }
            }
        }
        keys
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Engine) -> Result<T, EngineError> + Send + 'static,
    ) -> Result<T, EngineError> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || f(&engine))
            .await
            .map_err(|e| EngineError::Store(StoreError::Task(e.to_string())))?
    }

    /// Removes every row of `ws` its clients made and builds the engine's memory again
    /// ([`Engine::reset_workspace`]), while no step or webhook round runs.
    pub(crate) async fn reset_workspace(
        &self,
        ws: &WorkspaceRef,
    ) -> Result<contracts::wire::ResetCounts, EngineError> {
        let _guard = self.run_lock.lock().await;
        let ws = ws.clone();
        self.blocking(move |e| e.reset_workspace(&ws)).await
    }

    /// Makes everything due up to `until` happen, in time order. Answers what happened.
    pub(crate) async fn run_until(
        &self,
        until: DateTime<Utc>,
    ) -> Result<ClockAdvanceResult, EngineError> {
        let _guard = self.run_lock.lock().await;
        self.run_locked(until).await
    }

    async fn run_locked(&self, until: DateTime<Utc>) -> Result<ClockAdvanceResult, EngineError> {
        let app = self.engine.app().clone();
        let mut out = ClockAdvanceResult {
            from: app.clock.now(),
            now: app.clock.now(),
            ..Default::default()
        };
        loop {
            let t_engine = self.blocking(|e| e.next_due()).await?;
            let t_hooks = app.store.read(deliveries::next_delivery_due).await?;
            let next = match (t_engine, t_hooks) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => break,
                },
            };
            if next > until {
                break;
            }
            if let Some(sim) = &self.sim {
                sim.advance_to(next);
            }
            if t_hooks.is_some_and(|h| t_engine.is_none_or(|e| h <= e)) {
                let bound = t_engine.map_or(until, |e| e.min(until));
                let (attempts, delivered) = self.deliver(bound).await?;
                out.webhook_attempts += attempts;
                out.webhooks_delivered += delivered;
            } else {
                let workspaces = self.blocking(|e| e.workspaces()).await?;
                let keys = self.keys(&workspaces).await;
                let bound = t_hooks.map_or(until, |h| h.min(until));
                let report = self.blocking(move |e| e.step(bound, &keys)).await?;
                out.steps += 1;
                out.dials += report.dials;
                out.calls_ended += report.calls_ended;
                out.campaign_transitions += report.transitions;
            }
        }
        out.now = app.clock.now();
        Ok(out)
    }

    /// Sends the deliveries due up to `bound`, one round: at most [`DELIVERY_BATCH`], oldest
    /// due first, up to [`DELIVERY_CONCURRENCY`] tries in flight at once (the deliveries of
    /// one subject one after the other, in order), then records every result in one
    /// transaction. Answers the tries made and the deliveries delivered.
    async fn deliver(&self, bound: DateTime<Utc>) -> Result<(u64, u64), EngineError> {
        let app = self.engine.app().clone();
        let due = app
            .store
            .read(move |c| deliveries::due_deliveries(c, bound, DELIVERY_BATCH))
            .await?;
        let settings = self.webhooks.settings();
        let mut keys: HashMap<WorkspaceRef, Option<WorkspaceKeys>> = HashMap::new();
        for (_, d) in &due {
            if !keys.contains_key(&d.ws) {
                let k = app.keys.workspace(&d.ws, None).await.ok();
                keys.insert(d.ws.clone(), k);
            }
        }
        let mut records = Vec::with_capacity(due.len());
        // The tries to make, by subject, subjects in the order of their oldest delivery.
        let mut groups: Vec<Vec<PlannedTry>> = vec![];
        let mut group_of: HashMap<String, usize> = HashMap::new();
        for (due_at, d) in due {
            let now = app.clock.now().max(due_at);
            let body = keys
                .get(&d.ws)
                .and_then(Option::as_ref)
                .and_then(|k| k.open(&deliveries::delivery_context(&d.id), &d.body).ok());
            let Some(body) = body else {
                // The workspace's key service is down: the body cannot be read; try later
                // without counting a try.
                records.push(deliveries::TryRecord {
                    id: d.id,
                    tries: d.tries,
                    delivered_at: None,
                    next: Some(now + backoff(1, settings.initial_backoff, settings.max_backoff)),
                    status_code: None,
                    error: Some("key service unavailable".into()),
                });
                continue;
            };
            let i = *group_of.entry(d.subject_id.clone()).or_insert_with(|| {
                groups.push(vec![]);
                groups.len() - 1
            });
            groups[i].push(PlannedTry {
                id: d.id,
                url: d.url,
                body,
                tries: d.tries + 1,
                due_at,
            });
        }
        let webhooks = &self.webhooks;
        let clock = &app.clock;
        let tried: Vec<Vec<deliveries::TryRecord>> = futures_util::stream::iter(groups)
            .map(|group| async move {
                let mut out = Vec::with_capacity(group.len());
                for mut t in group {
                    // Stamped when it is made: on the real clock a round may last a while.
                    let now = clock.now().max(t.due_at);
                    let body = std::mem::take(&mut t.body);
                    let result = webhooks.send(&t.url, body, now.timestamp()).await;
                    out.push(t.record(now, result, webhooks.settings()));
                }
                out
            })
            .buffer_unordered(DELIVERY_CONCURRENCY)
            .collect()
            .await;
        let tried: Vec<deliveries::TryRecord> = tried.into_iter().flatten().collect();
        let attempts = tried.len() as u64;
        let delivered = tried.iter().filter(|r| r.delivered_at.is_some()).count() as u64;
        records.extend(tried);
        if !records.is_empty() {
            app.store
                .write(move |c| deliveries::record_tries(c, &records))
                .await?;
        }
        Ok((attempts, delivered))
    }

    /// Moves a simulated clock (by a duration or to an instant), running every step due up
    /// to the new time first.
    pub async fn advance(&self, how: Advance) -> Result<ClockAdvanceResult, AdvanceError> {
        let sim = self.sim.as_ref().ok_or(AdvanceError::RealClock)?;
        let _guard = self.run_lock.lock().await;
        let from = contracts::clock::Clock::now(sim);
        let target = match how {
            Advance::By(d) => from + d,
            Advance::To(t) => t,
        };
        if target < from {
            return Err(ClockError::Backwards {
                current: contracts::clock::format_instant(from),
                requested: contracts::clock::format_instant(target),
            }
            .into());
        }
        // Checked here, under the run lock, against the clock's time of this move.
        if target - from
            > chrono::Duration::seconds(contracts::validate::limits::CLOCK_MOVE_MAX_SECS)
        {
            return Err(AdvanceError::TooFar {
                current: from,
                target,
            });
        }
        let mut out = self.run_locked(target).await?;
        sim.set(target)?;
        out.from = from;
        out.now = target;
        Ok(out)
    }

    /// When the next thing is due: the engine's next event or the next webhook try, the
    /// earlier (`None`: nothing until something changes). A failed read counts as nothing
    /// due; the loop of [`Driver::run`] wakes at the next change all the same.
    pub(crate) async fn next_due(&self) -> Option<DateTime<Utc>> {
        let next_engine = self.blocking(|e| e.next_due()).await.ok().flatten();
        let next_hooks = self
            .engine
            .app()
            .store
            .read(deliveries::next_delivery_due)
            .await
            .ok()
            .flatten();
        match (next_engine, next_hooks) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The real-time loop: runs what is due, sleeps until the next due time or a change,
    /// until `shutdown`. On a simulated clock it only runs what the API makes due now.
    pub(crate) async fn run(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        let app = self.engine.app().clone();
        tokio::pin!(shutdown);
        loop {
            let now = app.clock.now();
            if let Err(e) = self.run_until(now).await {
                tracing::error!(error = %e, "engine step failed; retrying in a second");
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => continue,
                    _ = &mut shutdown => return,
                }
            }
            let wait = if self.sim.is_some() {
                None
            } else {
                self.next_due().await.map(|t| {
                    (t - app.clock.now())
                        .max(Duration::zero())
                        .to_std()
                        .unwrap_or_default()
                })
            };
            let sleep = async {
                match wait {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = sleep => {},
                _ = app.changes.changed() => {},
                _ = &mut shutdown => return,
            }
        }
    }
}
