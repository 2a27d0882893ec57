//! The campaign engine: what makes the platform move in time.
//!
//! A discrete-event core: [`Engine::next_due`] says when the next thing happens, and
//! [`Engine::step`] makes everything due up to an instant happen, each event at its own time,
//! in one SQLite transaction per batch. Two drivers use it ([`driver`]): a real-time loop
//! that sleeps until the next due time (or a wake-up from the API), and the simulated-clock
//! advance that moves the clock straight to each due time.
//!
//! Events:
//! - a campaign's start (`scheduled` to `active`) and end (`active` to `ended`, users still
//!   waiting counted unfinished);
//! - a campaign dial: at the campaign's pace, inside its calling window, the user whose
//!   next dial is due earliest (cohorts in upload order, rows in order), on the connection
//!   chosen by weight ([`dialing`]);
//! - a call's end: the result classified (short calls by the threshold), the user retried or
//!   done, the webhook queued;
//! - an instant outbound call: dialled at once, no window;
//! - an inbound call's end: the deployment webhook queued.
//!
//! The database is the truth; the engine's memory is a cache rebuilt from it, so an engine
//! stopped between any two steps and built again from the same database carries on with no
//! dial lost or repeated. Attempt ids are derived from the dial's identity, so a replayed
//! dial keeps its id.
//!
//! Customer data (numbers, variables, webhook bodies) is sealed; a step gets the keys of the
//! workspaces it touches from the caller ([`StepKeys`]). A workspace whose keys cannot be had
//! (its key service is down) is held: its dials wait, uncounted, and are tried again with
//! backoff.
//!
//! # Where things are
//!
//! - `mod.rs` (here): [`Engine`], [`Engine::step`] (batches of events, each batch one
//!   transaction), `sync` (taking in what the API changed), the dispatch of each event.
//! - `state.rs`: the memory: runs and their queues of waiting users, calls in progress,
//!   queued work, holds on workspaces whose keys are missing.
//! - `queue.rs`: the choice of the next event and of each run's next dial (pure, unit-tested).
//! - `batch.rs`: the one write-batch type of a batch's writes, the writer thread that makes
//!   them while the next batch is computed, and webhook deliveries queued in a batch.
//! - `campaign.rs`: loading and admitting campaigns, their start and end, their dials.
//! - `call_end.rs`: the end of a call (its common start), and of a campaign call in named
//!   steps: decide the retry, update the user, queue the webhook, record the result.
//! - `outbound.rs`: instant outbound calls, dialled and ended.
//! - `inflight.rs`: the calls in progress kept in memory, counted by workspace.
//! - [`dialing`]: routing by weight, pacing, outcome classification, retry rules, ids.
//! - [`events`]: the webhook payloads.
//! - [`inbound`]: inbound calls.
//! - [`driver`]: the real-time loop and the simulated-clock advance.
//!
//! The engine runs no SQL of its own: it reads and writes through `store` (the batch's
//! transaction and bulk writes are `store::batch`).

pub mod dialing;
pub mod driver;
pub(crate) mod events;
pub(crate) mod inbound;

mod batch;
mod call_end;
mod campaign;
mod inflight;
mod outbound;
mod queue;
mod state;
mod writes;

use std::cmp::Reverse;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap;
use telephony_sim::TelephonySim;

use crate::app::App;
use crate::keys::WorkspaceKeys;
use crate::store::inbound::open_inbound;
use crate::store::{StoreError, WorkspaceRef, ms};
use crate::store::{calls, campaign_users, campaigns};
use batch::{BatchDb, Writes};
use queue::{Event, next_event};
use state::State;

/// The most events one transaction holds.
const BATCH: usize = 32_768;

/// The keys a step may use, by workspace. A workspace that is missing is held. Looked up at
/// every dial and call's end: hashed with `FxHash` (std's SipHash took about 290
/// instructions a lookup).
pub type StepKeys = FxHashMap<WorkspaceRef, WorkspaceKeys>;

/// What a step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Events processed.
    pub(crate) events: u64,
    /// Calls placed.
    pub(crate) dials: u64,
    /// Calls ended.
    pub(crate) calls_ended: u64,
    /// Campaign status changes with time.
    pub(crate) transitions: u64,
    /// Webhook deliveries queued.
    pub(crate) webhooks_queued: u64,
}

impl std::ops::AddAssign for StepReport {
    fn add_assign(&mut self, o: Self) {
        self.events += o.events;
        self.dials += o.dials;
        self.calls_ended += o.calls_ended;
        self.transitions += o.transitions;
        self.webhooks_queued += o.webhooks_queued;
    }
}

/// A failure of the engine (the database).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An id shared without copying (campaign and attempt ids in the engine's queues).
type Id = Arc<str>;

/// The campaign engine of one platform.
pub struct Engine {
    app: App,
    telephony: Arc<TelephonySim>,
    seed: u64,
    batch: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over the app's store, dialling through `telephony`. `seed` makes attempt and
    /// interaction ids deterministic.
    pub fn new(app: App, telephony: Arc<TelephonySim>, seed: u64) -> Self {
        Engine {
            app,
            telephony,
            seed,
            batch: BATCH,
            state: Mutex::new(State::default()),
        }
    }

    /// Makes at most `events` events per transaction (default 32,768). Small batches are
    /// for tests: they make every batch boundary, and the overlap of one batch's writes with
    /// the next batch, happen in a short run.
    pub fn with_batch_size(mut self, events: usize) -> Self {
        self.batch = events.max(1);
        self
    }

    /// The app.
    pub(crate) fn app(&self) -> &App {
        &self.app
    }

    /// The telephony simulator.
    pub fn telephony(&self) -> &Arc<TelephonySim> {
        &self.telephony
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The workspaces whose keys the next steps may need.
    pub(crate) fn workspaces(&self) -> Result<Vec<WorkspaceRef>, EngineError> {
        let mut state = self.lock();
        self.sync(&mut state)?;
        let mut out: Vec<WorkspaceRef> = state.runs.values().map(|r| (*r.ws).clone()).collect();
        // Calls in progress from memory (reading them all from the database at every step
        // cost time and filled the page caches in proportion to the calls in progress), queued
        // work and open inbound calls of any workspace from the database (few, and indexed).
        out.extend(state.inflight.workspaces().cloned());
        drop(state);
        // Queued work and open inbound calls of any workspace.
        let extra = self
            .app
            .store
            .read_blocking(calls::workspaces_with_live_calls)?;
        out.extend(extra);
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Removes every row of `ws` its clients made ([`crate::store::workspace::delete`]), in
    /// one transaction taken while no step runs, and builds the engine's memory again from
    /// the database: the workspace's campaigns stop, its calls in progress are forgotten,
    /// and the other workspaces' carry on as they were.
    pub(crate) fn reset_workspace(
        &self,
        ws: &WorkspaceRef,
    ) -> Result<contracts::wire::ResetCounts, EngineError> {
        let mut state = self.lock();
        let removed = self
            .app
            .store
            .transaction_blocking(|tx| crate::store::workspace::delete(tx, ws))?;
        let mut holds = std::mem::take(&mut state.holds);
        holds.remove(ws);
        *state = State::default();
        state.holds = holds;
        Ok(removed)
    }

    /// When the next event is due (`None`: nothing will happen until something changes).
    pub fn next_due(&self) -> Result<Option<DateTime<Utc>>, EngineError> {
        let mut state = self.lock();
        self.sync(&mut state)?;
        Ok(next_event(&state).map(|(t, _)| t))
    }

    /// Makes every event due at or before `until` happen, each at its own time, in batches of
    /// one transaction each, using `keys` for sealed data. Answers what happened.
    pub fn step(&self, until: DateTime<Utc>, keys: &StepKeys) -> Result<StepReport, EngineError> {
        let mut total = StepReport::default();
        let mut writes = Writes::default();
        // The state stays locked for the whole step, so that nothing else reads the store
        // while a batch's writes are in progress.
        let mut state = self.lock();
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.steps(&mut state, until, keys, &mut total, &mut writes)
        }));
        let result = match run {
            // Every write of the step is made before it answers.
            Ok(result) => result.and_then(|()| writes.join().map_err(EngineError::from)),
            Err(panic) => {
                // No writer may outlive the step, and the memory is not to be trusted.
                let _ = writes.join();
                *state = State::default();
                std::panic::resume_unwind(panic);
            }
        };
        if result.is_err() {
            let _ = writes.join();
            // The memory may be ahead of the database: start again from the database.
            *state = State::default();
        }
        result.map(|()| total)
    }

    /// The batches of a step: each batch runs up to [`Engine::with_batch_size`] events due at
    /// or before `until` (fewer when an event held a workspace), then ends with its writes.
    fn steps(
        &self,
        state: &mut State,
        until: DateTime<Utc>,
        keys: &StepKeys,
        total: &mut StepReport,
        writes: &mut Writes,
    ) -> Result<(), EngineError> {
        loop {
            if self.needs_sync(state) {
                writes.join()?;
                self.sync(state)?;
            }
            let mut report = StepReport::default();
            let mut db = BatchDb::new(&self.app.store, writes);
            let mut n = 0;
            let mut more = false;
            while let Some((t, ev)) = next_event(state) {
                if t > until {
                    break;
                }
                if n == self.batch {
                    more = true;
                    break;
                }
                state.held_in_step = false;
                self.handle(&mut db, state, t, ev, keys, &mut report)?;
                n += 1;
                if state.held_in_step {
                    break;
                }
            }
            let writes = state.take_writes(true);
            db.finish(writes)?;
            *total += report;
            if !more {
                return Ok(());
            }
        }
    }

    fn needs_sync(&self, state: &State) -> bool {
        !state.loaded || state.seen_changes != self.app.changes.current()
    }

    /// Reloads what the API changed: new and changed campaigns, completed cohorts, queued
    /// instant outbound calls. Cheap when nothing changed.
    fn sync(&self, state: &mut State) -> Result<(), EngineError> {
        let changes = self.app.changes.current();
        if state.loaded && state.seen_changes == changes {
            return Ok(());
        }
        self.app.store.transaction_blocking(|tx| {
            if !state.loaded {
                for mut call in calls::calls_in_progress(tx)? {
                    let ends = call.ends_at.map_or(0, ms);
                    let id = call.id.clone();
                    state.calls.push(Reverse((ends, id.clone())));
                    call.payload = Vec::new();
                    state.inflight.insert(id, call);
                }
                state.inbound = open_inbound(tx)?
                    .into_iter()
                    .map(|(t, id)| Reverse((t, Id::from(id))))
                    .collect();
            }
            state.outbound = calls::queued_outbound(tx)?
                .into_iter()
                .map(|(t, id)| Reverse((t, Id::from(id))))
                .collect();
            let live = campaigns::live_campaign_ids(tx)?;
            let live_ids: Vec<&String> = live.iter().map(|(id, _)| id).collect();
            // Campaigns that stopped being live (cancelled, or ended by the API's view).
            let gone: Vec<String> = state
                .runs
                .keys()
                .filter(|id| !live_ids.contains(id))
                .cloned()
                .collect();
            for id in gone {
                state.runs.remove(&id);
                campaign_users::mark_unfinished(tx, &id)?;
            }
            for (id, revision) in &live {
                let reload = state.runs.get(id).is_none_or(|r| r.revision != *revision);
                if reload {
                    self.load_run(tx, state, id)?;
                }
                self.admit(tx, state, id)?;
            }
            Ok(())
        })?;
        state.loaded = true;
        state.seen_changes = changes;
        Ok(())
    }

    /// Makes one event happen at `t`.
    fn handle(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        t: DateTime<Utc>,
        ev: Event,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        report.events += 1;
        match ev {
            Event::Activate(id) | Event::End(id) => {
                self.move_with_time(db, state, &id, t, report)?
            }
            Event::Dial(id) => self.dial(db, state, &id, t, keys, report)?,
            Event::CallEnd(attempt) => {
                state.calls.pop();
                self.call_end(db, state, attempt, t, keys, report)?;
            }
            Event::Outbound(attempt) => {
                state.outbound.pop();
                self.outbound(db.conn()?, state, attempt, t, keys, report)?;
            }
            Event::InboundEnd(call) => {
                state.inbound.pop();
                self.inbound_end(db.conn()?, state, call, t, keys, report)?;
            }
        }
        Ok(())
    }
}
