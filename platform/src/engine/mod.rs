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
//! - [`dialing`]: routing by weight, pacing, outcome classification, retry rules, ids.
//! - [`events`]: the webhook payloads.
//! - [`inbound`]: inbound calls.
//! - [`driver`]: the real-time loop and the simulated-clock advance.

pub mod dialing;
pub mod driver;
pub mod events;
pub mod inbound;
mod inflight;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use contracts::model::CampaignSpec;
use contracts::wire::{CampaignStatus, CohortCategory, OutboundRequest};
use rusqlite::Connection;
use telephony_sim::{DialRequest, Outcome, TelephonySim};

use crate::app::App;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{self as cohort_store, Parent};
use crate::store::engine::{self as es, Delivery, Dialed};
use crate::store::states::{CallKind, CallStatus, DeliveryKind, UserState};
use crate::store::{StoreError, WorkspaceRef, campaigns, ms};
use dialing::{CallResult, NextStep, Pacing, Routing, campaign_attempt_id};

/// The most events one transaction holds.
const BATCH: usize = 32_768;

/// The keys a step may use, by workspace. A workspace that is missing is held.
pub type StepKeys = HashMap<WorkspaceRef, WorkspaceKeys>;

/// What a step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Events processed.
    pub events: u64,
    /// Calls placed.
    pub dials: u64,
    /// Calls ended.
    pub calls_ended: u64,
    /// Campaign status changes with time.
    pub transitions: u64,
    /// Webhook deliveries queued.
    pub webhooks_queued: u64,
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

impl From<rusqlite::Error> for EngineError {
    fn from(e: rusqlite::Error) -> Self {
        EngineError::Store(StoreError::Sqlite(e))
    }
}

/// A user waiting in a campaign's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    cohort_position: u32,
    row_no: u64,
    attempts: u32,
}

/// A campaign the engine runs.
#[derive(Debug)]
struct Run {
    id: Id,
    ws: WorkspaceRef,
    spec: Arc<CampaignSpec>,
    status: CampaignStatus,
    updated_ms: i64,
    /// Admitted cohorts by position.
    cohorts: Vec<String>,
    has_stop_files: bool,
    /// Users waiting, by (due ms, queue order).
    ready: BTreeMap<(i64, i64), Waiting>,
    /// The sealed data of every user not finished yet, by queue order: read once at
    /// admission instead of once per dial.
    data: FxMap<i64, UserData>,
    pacing: Option<Pacing>,
    routing: Routing,
    /// Pacing or routing changed since the last write.
    dirty: bool,
    /// No dial before this: the time the engine (re)loaded the campaign. A campaign paused
    /// for a while, or an engine restarted after a stop, dials from now on, never in the past.
    floor: DateTime<Utc>,
}

/// An id shared without copying (campaign and attempt ids in the engine's queues).
type Id = Arc<str>;

/// A fast, non-cryptographic hasher (FxHash) for the engine's in-memory maps: their keys
/// are the engine's own (queue orders, ids), not attacker-chosen.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// A user's number hash and sealed record.
#[derive(Debug)]
struct UserData {
    phone_hash: [u8; 16],
    sealed: Box<[u8]>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
struct RunState {
    pacing: Option<Pacing>,
    routing: Routing,
}

/// A hold on a workspace whose keys could not be had.
#[derive(Debug, Clone, Copy)]
struct Hold {
    until: DateTime<Utc>,
    tries: u32,
}

/// Writes of the current batch, made once at its end: a call that begins and ends within
/// one batch is written once, a user's row once however often it changed.
#[derive(Debug, Default)]
struct Pending {
    /// Calls dialled in this batch whose rows are not written yet.
    calls: std::collections::HashSet<Id, std::hash::BuildHasherDefault<FxHasher>>,
    /// The latest state of each user changed in this batch, by (campaign, queue order).
    users: FxMap<(Id, i64), UserWrite>,
    /// Ended attempts of this batch by (campaign, result).
    results: BTreeMap<(Id, &'static str), u64>,
    /// Calls dialled and ended in this batch, with their result: inserted ended.
    ended_calls: Vec<(es::Call, &'static str)>,
    /// Calls of earlier batches that ended in this one: (attempt, result, end).
    call_ends: Vec<(Id, &'static str, DateTime<Utc>)>,
    /// Webhook deliveries queued in this batch, with their due time.
    deliveries: Vec<(Delivery, DateTime<Utc>)>,
}

/// A batch's writes, detached from the engine's state so that another thread can make
/// them while the engine computes the next batch.
#[derive(Debug, Default)]
struct Writes {
    calling: Vec<es::Call>,
    ended_calls: Vec<(es::Call, &'static str)>,
    call_ends: Vec<(Id, &'static str, DateTime<Utc>)>,
    deliveries: Vec<(Delivery, DateTime<Utc>)>,
    results: BTreeMap<(Id, &'static str), u64>,
    users: FxMap<(Id, i64), UserWrite>,
    run_states: Vec<(Id, String)>,
}

impl Writes {
    fn is_empty(&self) -> bool {
        self.calling.is_empty()
            && self.ended_calls.is_empty()
            && self.call_ends.is_empty()
            && self.deliveries.is_empty()
            && self.results.is_empty()
            && self.users.is_empty()
            && self.run_states.is_empty()
    }

    /// Makes the writes on `c` (inside the caller's transaction), each kind with one
    /// prepared statement, rows in key order (neighbouring rows share B-tree pages).
    fn apply(mut self, c: &Connection) -> Result<(), StoreError> {
        let mut rows: Vec<(&es::Call, CallStatus, Option<&str>)> = self
            .calling
            .iter()
            .map(|call| (call, CallStatus::Calling, None))
            .chain(
                self.ended_calls
                    .iter()
                    .map(|(call, result)| (call, CallStatus::Ended, Some(*result))),
            )
            .collect();
        rows.sort_unstable_by(|a, b| a.0.id.cmp(&b.0.id));
        es::insert_calls(c, &rows)?;
        let mut end = c.prepare_cached(es::END_CALL)?;
        self.call_ends.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (id, result, at) in &self.call_ends {
            es::end_call_with(&mut end, id, result, *at)?;
        }
        for (d, at) in &self.deliveries {
            es::insert_delivery(c, d, *at)?;
        }
        for ((campaign_id, result), n) in self.results {
            es::count_results(c, &campaign_id, result, n)?;
        }
        let mut users: Vec<_> = self.users.into_iter().collect();
        users.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut set = c.prepare_cached(es::SET_USER)?;
        for ((campaign_id, queue_seq), w) in users {
            es::set_user(
                &mut set,
                &es::UserRef {
                    campaign_id: &campaign_id,
                    queue_seq,
                },
                w.state,
                w.attempts,
                w.due_ms,
                w.last_result,
            )?;
        }
        for (id, state) in &self.run_states {
            es::set_engine_state(c, id, state)?;
        }
        Ok(())
    }

    /// Makes the writes in a transaction of their own on a thread of their own.
    fn spawn(self, store: crate::store::Store) -> WriteJob {
        std::thread::Builder::new()
            .name("engine-writer".into())
            .spawn(move || {
                store.write_blocking(|c| {
                    let tx = c.transaction()?;
                    self.apply(&tx)?;
                    tx.commit()?;
                    Ok(())
                })
            })
            .expect("a thread for the engine's writes")
    }
}

/// A batch's writes in progress on another thread.
type WriteJob = std::thread::JoinHandle<Result<(), StoreError>>;

/// Waits for the writes in progress, if any.
fn join(job: &mut Option<WriteJob>) -> Result<(), StoreError> {
    match job.take() {
        None => Ok(()),
        Some(j) => j
            .join()
            .unwrap_or_else(|_| Err(StoreError::Task("the engine's writer panicked".into()))),
    }
}

/// The database as one batch of events sees it. Events that only dial and end calls never
/// touch it (their writes are buffered), so such a batch's writes can be made on another
/// thread while the next batch is computed. The first event that needs the database waits
/// for the writes in progress and opens the batch's transaction on the writer connection.
struct BatchDb<'a> {
    store: &'a crate::store::Store,
    job: &'a mut Option<WriteJob>,
    conn: Option<std::sync::MutexGuard<'a, Connection>>,
}

impl<'a> BatchDb<'a> {
    fn new(store: &'a crate::store::Store, job: &'a mut Option<WriteJob>) -> Self {
        BatchDb {
            store,
            job,
            conn: None,
        }
    }

    /// The writer connection, inside the batch's transaction.
    fn conn(&mut self) -> Result<&Connection, StoreError> {
        if self.conn.is_none() {
            join(self.job)?;
            let c = self.store.writer();
            c.execute_batch("BEGIN")?;
            self.conn = Some(c);
        }
        Ok(self.conn.as_deref().expect("just opened"))
    }

    /// Ends the batch: its writes are committed with the transaction when one is open, else
    /// handed to a writer thread (after the previous one finished).
    fn finish(mut self, writes: Writes) -> Result<(), StoreError> {
        match self.conn.take() {
            Some(c) => {
                let done = writes
                    .apply(&c)
                    .and_then(|()| Ok(c.execute_batch("COMMIT")?));
                if done.is_err() && !c.is_autocommit() {
                    let _ = c.execute_batch("ROLLBACK");
                }
                done
            }
            None if writes.is_empty() => Ok(()),
            None => {
                join(self.job)?;
                *self.job = Some(writes.spawn(self.store.clone()));
                Ok(())
            }
        }
    }
}

impl Drop for BatchDb<'_> {
    fn drop(&mut self) {
        // A batch that failed: nothing of it is kept.
        if let Some(c) = &self.conn
            && !c.is_autocommit()
        {
            let _ = c.execute_batch("ROLLBACK");
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct UserWrite {
    state: UserState,
    attempts: u32,
    due_ms: i64,
    last_result: Option<&'static str>,
}

#[derive(Debug, Default)]
struct State {
    pending: Pending,
    loaded: bool,
    seen_changes: u64,
    runs: BTreeMap<String, Run>,
    /// (processing time ms, attempt id) of calls in progress.
    calls: BinaryHeap<Reverse<(i64, Id)>>,
    /// What the engine knows of the calls in progress (a cache of their rows, without the
    /// sealed request of an instant outbound call, which is read back when the call ends:
    /// every call in progress is here, so each byte kept counts many times).
    inflight: inflight::Inflight,
    /// (created ms, attempt id) of queued instant outbound calls.
    outbound: BinaryHeap<Reverse<(i64, Id)>>,
    /// (ends ms, call id) of answered inbound calls.
    inbound: BinaryHeap<Reverse<(i64, Id)>>,
    holds: FxMap<WorkspaceRef, Hold>,
    /// Set when an event of the current step held a workspace: the step ends there, so that
    /// the driver fetches the workspace's keys again before the hold lapses (a step's keys
    /// are fixed; going on would run the whole backoff without asking the key service).
    held_in_step: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    // At one instant: calls end first, then status changes, then dials.
    CallEnd(Id),
    InboundEnd(Id),
    Activate(Id),
    End(Id),
    Outbound(Id),
    Dial(Id),
}

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

/// The instant outbound request sealed in an attempt's payload, if it opens.
fn open_outbound_request(
    keys: &WorkspaceKeys,
    attempt_id: &str,
    payload: &[u8],
) -> Option<OutboundRequest> {
    let plain = keys
        .open(
            &crate::store::attempts::payload_context(attempt_id),
            payload,
        )
        .ok()?;
    serde_json::from_slice(&plain).ok()
}

fn hold_backoff(tries: u32) -> Duration {
    // 1 s, 2 s, 4 s ... at most 256 s.
    Duration::seconds(1i64 << tries.min(8))
}

impl State {
    /// Detaches the pending writes; with `runs`, also the pacing and routing of every run
    /// that changed.
    fn take_writes(&mut self, runs: bool) -> Writes {
        let p = std::mem::take(&mut self.pending);
        let calling = p
            .calls
            .iter()
            .filter_map(|id| self.inflight.get(id).cloned())
            .collect();
        let mut run_states = Vec::new();
        if runs {
            for run in self.runs.values_mut() {
                if run.dirty {
                    let state = RunState {
                        pacing: run.pacing,
                        routing: run.routing.clone(),
                    };
                    run_states.push((
                        run.id.clone(),
                        serde_json::to_string(&state).expect("state serialises"),
                    ));
                    run.dirty = false;
                }
            }
        }
        Writes {
            calling,
            ended_calls: p.ended_calls,
            call_ends: p.call_ends,
            deliveries: p.deliveries,
            results: p.results,
            users: p.users,
            run_states,
        }
    }

    /// Holds a workspace whose keys could not be had at `now` (1 s, 2 s, 4 s ... later on
    /// each try in a row); answers until when.
    fn hold(&mut self, ws: &WorkspaceRef, now: DateTime<Utc>) -> DateTime<Utc> {
        let tries = self.holds.get(ws).map_or(0, |h| h.tries + 1);
        let until = now + hold_backoff(tries);
        self.holds.insert(ws.clone(), Hold { until, tries });
        until
    }

    /// [`State::hold`] from inside a step: the step ends after this event.
    fn hold_in_step(&mut self, ws: &WorkspaceRef, now: DateTime<Utc>) -> DateTime<Utc> {
        self.held_in_step = true;
        self.hold(ws, now)
    }

    /// Makes the pending writes now, on `c` (mid-batch, before the batch reads what they
    /// change).
    fn flush(&mut self, c: &Connection) -> Result<(), StoreError> {
        self.take_writes(false).apply(c)
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
    pub fn app(&self) -> &App {
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
    pub fn workspaces(&self) -> Result<Vec<WorkspaceRef>, EngineError> {
        let mut st = self.lock();
        self.sync(&mut st)?;
        let mut out: Vec<WorkspaceRef> = st.runs.values().map(|r| r.ws.clone()).collect();
        // Calls in progress from memory (reading them all from the database at every step
        // cost time and filled the page caches in proportion to the calls in progress), queued
        // work and open inbound calls of any workspace from the database (few, and indexed).
        out.extend(st.inflight.workspaces().cloned());
        drop(st);
        // Queued work and open inbound calls of any workspace.
        let extra = self
            .app
            .store
            .read_blocking(es::workspaces_with_live_calls)?;
        out.extend(extra);
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Releases the hold on a workspace whose keys are available again.
    pub fn release_hold(&self, ws: &WorkspaceRef) {
        self.lock().holds.remove(ws);
    }

    /// Holds a workspace whose keys could not be had at `now`: its work waits, with backoff.
    pub fn hold(&self, ws: &WorkspaceRef, now: DateTime<Utc>) {
        self.lock().hold(ws, now);
    }

    /// Whether a workspace is held, and until when.
    pub fn held_until(&self, ws: &WorkspaceRef) -> Option<DateTime<Utc>> {
        self.lock().holds.get(ws).map(|h| h.until)
    }

    /// When the next event is due (`None`: nothing will happen until something changes).
    pub fn next_due(&self) -> Result<Option<DateTime<Utc>>, EngineError> {
        let mut st = self.lock();
        self.sync(&mut st)?;
        Ok(next_event(&st).map(|(t, _)| t))
    }

    /// Makes every event due at or before `until` happen, each at its own time, in batches of
    /// one transaction each, using `keys` for sealed data. Answers what happened.
    pub fn step(&self, until: DateTime<Utc>, keys: &StepKeys) -> Result<StepReport, EngineError> {
        let mut total = StepReport::default();
        let mut job: Option<WriteJob> = None;
        // The state stays locked for the whole step, so that nothing else reads the store
        // while a batch's writes are in progress.
        let mut st = self.lock();
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.steps(&mut st, until, keys, &mut total, &mut job)
        }));
        let result = match run {
            // Every write of the step is made before it answers.
            Ok(result) => result.and_then(|()| join(&mut job).map_err(EngineError::from)),
            Err(panic) => {
                // No writer may outlive the step, and the memory is not to be trusted.
                let _ = join(&mut job);
                *st = State::default();
                std::panic::resume_unwind(panic);
            }
        };
        if result.is_err() {
            let _ = join(&mut job);
            // The memory may be ahead of the database: start again from the database.
            *st = State::default();
        }
        result.map(|()| total)
    }

    fn steps(
        &self,
        st: &mut State,
        until: DateTime<Utc>,
        keys: &StepKeys,
        total: &mut StepReport,
        job: &mut Option<WriteJob>,
    ) -> Result<(), EngineError> {
        loop {
            if self.needs_sync(st) {
                join(job)?;
                self.sync(st)?;
            }
            let mut report = StepReport::default();
            let mut db = BatchDb::new(&self.app.store, job);
            let mut n = 0;
            let mut more = false;
            while let Some((t, ev)) = next_event(st) {
                if t > until {
                    break;
                }
                if n == self.batch {
                    more = true;
                    break;
                }
                st.held_in_step = false;
                self.handle(&mut db, st, t, ev, keys, &mut report)?;
                n += 1;
                if st.held_in_step {
                    break;
                }
            }
            let writes = st.take_writes(true);
            db.finish(writes)?;
            *total += report;
            if !more {
                return Ok(());
            }
        }
    }

    fn needs_sync(&self, st: &State) -> bool {
        !st.loaded || st.seen_changes != self.app.changes.current()
    }

    /// Reloads what the API changed: new and changed campaigns, completed cohorts, queued
    /// instant outbound calls. Cheap when nothing changed.
    fn sync(&self, st: &mut State) -> Result<(), EngineError> {
        let changes = self.app.changes.current();
        if st.loaded && st.seen_changes == changes {
            return Ok(());
        }
        self.app.store.write_blocking(|c| {
            let tx = c.transaction()?;
            if !st.loaded {
                for mut call in es::calls_in_progress(&tx)? {
                    let ends = call.ends_at.map_or(0, ms);
                    let id = Id::from(call.id.as_str());
                    st.calls.push(Reverse((ends, id.clone())));
                    call.payload = Vec::new();
                    st.inflight.insert(id, call);
                }
                st.inbound = es::open_inbound(&tx)?
                    .into_iter()
                    .map(|(t, id)| Reverse((t, Id::from(id))))
                    .collect();
            }
            st.outbound = es::queued_outbound(&tx)?
                .into_iter()
                .map(|(t, id)| Reverse((t, Id::from(id))))
                .collect();
            let live = es::live_campaign_ids(&tx)?;
            let live_ids: Vec<&String> = live.iter().map(|(id, _)| id).collect();
            // Campaigns that stopped being live (cancelled, or ended by the API's view).
            let gone: Vec<String> = st
                .runs
                .keys()
                .filter(|id| !live_ids.contains(id))
                .cloned()
                .collect();
            for id in gone {
                st.runs.remove(&id);
                es::mark_unfinished(&tx, &id)?;
            }
            for (id, updated_ms) in &live {
                let reload = st.runs.get(id).is_none_or(|r| r.updated_ms != *updated_ms);
                if reload {
                    self.load_run(&tx, st, id)?;
                }
                self.admit(&tx, st, id)?;
            }
            tx.commit()?;
            Ok(())
        })?;
        st.loaded = true;
        st.seen_changes = changes;
        Ok(())
    }

    fn load_run(&self, c: &Connection, st: &mut State, id: &str) -> Result<(), StoreError> {
        let Some(rec) = campaigns::get_any(c, id)? else {
            st.runs.remove(id);
            return Ok(());
        };
        if rec.status.is_final() {
            st.runs.remove(id);
            st.flush(c)?;
            es::mark_unfinished(c, id)?;
            return Ok(());
        }
        if let Some(run) = st.runs.get_mut(id) {
            // A change through the API: configuration and status; the queue stays.
            if run.status != rec.status && rec.status == CampaignStatus::Paused {
                run.pacing = None;
            }
            run.spec = Arc::new(rec.spec);
            run.status = rec.status;
            run.updated_ms = ms(rec.updated_at);
            run.routing.fit(&run.spec.connections);
            run.floor = run.floor.max(self.app.clock.now());
            return Ok(());
        }
        let saved: RunState = es::engine_state(c, id)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let cohorts = es::admitted_cohorts(c, id)?;
        let mut ready = BTreeMap::new();
        for u in es::ready_users(c, id)? {
            ready.insert(
                (u.due_ms, u.queue_seq),
                Waiting {
                    cohort_position: u.cohort_position,
                    row_no: u.row_no,
                    attempts: u.attempts,
                },
            );
        }
        let data = es::open_users_data(c, id)?
            .into_iter()
            .map(|(seq, phone_hash, sealed)| {
                (
                    seq,
                    UserData {
                        phone_hash,
                        sealed: sealed.into_boxed_slice(),
                    },
                )
            })
            .collect();
        let has_stop_files =
            !cohort_store::completed_cohorts(c, &Parent::campaign(id), CohortCategory::StopFile)?
                .is_empty();
        let mut routing = saved.routing;
        routing.fit(&rec.spec.connections);
        st.runs.insert(
            id.to_string(),
            Run {
                id: Id::from(id),
                ws: rec.ws,
                updated_ms: ms(rec.updated_at),
                status: rec.status,
                spec: Arc::new(rec.spec),
                cohorts,
                has_stop_files,
                ready,
                data,
                pacing: saved.pacing,
                routing,
                dirty: false,
                floor: self.app.clock.now(),
            },
        );
        Ok(())
    }

    /// Admits the campaign's cohorts that completed since the last look, in upload order.
    fn admit(&self, c: &Connection, st: &mut State, id: &str) -> Result<(), StoreError> {
        let Some(run) = st.runs.get_mut(id) else {
            return Ok(());
        };
        for (cohort_id, stop_file, at) in es::completed_campaign_cohorts(c, id)? {
            if run.cohorts.contains(&cohort_id) {
                continue;
            }
            let position = run.cohorts.len() as u32;
            if stop_file {
                es::admit_stop_file(c, id, &cohort_id, position, at)?;
                run.has_stop_files = true;
                es::exclude_by_stop_file(c, id, &cohort_id)?;
                run.cohorts.push(cohort_id);
                drop_excluded(c, run)?;
            } else {
                es::admit_cohort(c, id, &cohort_id, position, at)?;
                for (row_no, queue_seq, phone_hash, sealed) in
                    es::admitted_rows(c, &cohort_id, position)?
                {
                    run.ready.insert(
                        (ms(at), queue_seq),
                        Waiting {
                            cohort_position: position,
                            row_no,
                            attempts: 0,
                        },
                    );
                    run.data.insert(queue_seq, UserData { phone_hash, sealed });
                }
                run.cohorts.push(cohort_id);
                if run.has_stop_files {
                    // Users already in a stop file never enter the queue.
                    for (stop, is_stop, _) in es::completed_campaign_cohorts(c, id)? {
                        if is_stop && run.cohorts.contains(&stop) {
                            es::exclude_by_stop_file(c, id, &stop)?;
                        }
                    }
                    drop_excluded(c, run)?;
                }
            }
        }
        Ok(())
    }

    fn handle(
        &self,
        db: &mut BatchDb<'_>,
        st: &mut State,
        t: DateTime<Utc>,
        ev: Event,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        report.events += 1;
        match ev {
            Event::Activate(id) => {
                let id: &str = &id;
                let c = db.conn()?;
                if campaigns::transition(
                    c,
                    id,
                    &[CampaignStatus::Scheduled],
                    CampaignStatus::Active,
                )? {
                    if let Some(run) = st.runs.get_mut(id) {
                        run.status = CampaignStatus::Active;
                    }
                    report.transitions += 1;
                } else {
                    // The API changed the campaign since the engine last looked.
                    self.load_run(c, st, id)?;
                }
            }
            Event::End(id) => {
                let id: &str = &id;
                let from = [CampaignStatus::Scheduled, CampaignStatus::Active];
                let c = db.conn()?;
                if campaigns::transition(c, id, &from, CampaignStatus::Ended)? {
                    st.flush(c)?;
                    es::mark_unfinished(c, id)?;
                    st.runs.remove(id);
                    report.transitions += 1;
                } else {
                    self.load_run(c, st, id)?;
                }
            }
            Event::Dial(id) => self.dial(db, st, &id, t, keys, report)?,
            Event::CallEnd(attempt) => {
                st.calls.pop();
                self.call_end(db, st, attempt, t, keys, report)?;
            }
            Event::Outbound(attempt) => {
                st.outbound.pop();
                self.outbound(db.conn()?, st, attempt, t, keys, report)?;
            }
            Event::InboundEnd(call) => {
                st.inbound.pop();
                self.inbound_end(db.conn()?, st, call, t, keys, report)?;
            }
        }
        Ok(())
    }

    fn dial(
        &self,
        db: &mut BatchDb<'_>,
        st: &mut State,
        id: &str,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let run = st.runs.get_mut(id).expect("event of a run");
        let Some(keys) = keys.get(&run.ws) else {
            // The workspace's key service is down: nothing is dialled or counted; the dial
            // waits for the hold to lapse.
            let ws = run.ws.clone();
            st.hold_in_step(&ws, t);
            return Ok(());
        };
        if !st.holds.is_empty() {
            st.holds.remove(&run.ws);
        }
        let (&key, &user) = run.ready.iter().next().expect("a dial has a user");
        run.ready.remove(&key);
        let cohort_id = run.cohorts[user.cohort_position as usize].clone();
        if let std::collections::hash_map::Entry::Vacant(slot) = run.data.entry(key.1) {
            // Not cached (cannot happen after admission): read it.
            match cohort_users_row(db.conn()?, &cohort_id, user.row_no)? {
                Some(u) => {
                    slot.insert(UserData {
                        phone_hash: u.phone_hash,
                        sealed: u.data.into_boxed_slice(),
                    });
                }
                None => return Ok(()), // the cohort is gone; skip the user
            }
        }
        let data = &run.data[&key.1];
        let excluded =
            run.has_stop_files && cohort_store::in_stop_file(db.conn()?, id, &data.phone_hash)?;
        let opened = if excluded {
            None
        } else {
            Some(cohort_store::open_phone_number(
                keys,
                &cohort_id,
                user.row_no,
                &data.sealed,
            ))
        };
        let phone_number = match opened {
            None => {
                run.data.remove(&key.1);
                st.pending.users.insert(
                    (run.id.clone(), key.1),
                    UserWrite {
                        state: UserState::Excluded,
                        attempts: user.attempts,
                        due_ms: key.0,
                        last_result: None,
                    },
                );
                return Ok(());
            }
            Some(Ok(p)) => p,
            Some(Err(e)) => {
                tracing::error!(campaign = id, cohort = %cohort_id, row = user.row_no, error = %e, "a cohort user does not open; skipped");
                run.data.remove(&key.1);
                st.pending.users.insert(
                    (run.id.clone(), key.1),
                    UserWrite {
                        state: UserState::Done,
                        attempts: user.attempts,
                        due_ms: key.0,
                        last_result: Some(CallResult::InternalError.as_str()),
                    },
                );
                return Ok(());
            }
        };
        let rate = run.spec.attempts_per_second;
        run.pacing = Some(match run.pacing {
            Some(p) if p.next_slot(rate) == t => Pacing {
                count: p.count + 1,
                ..p
            },
            _ => Pacing {
                epoch_us: t.timestamp_micros(),
                count: 1,
            },
        });
        let (ci, ni) = run.routing.pick(&run.spec.connections);
        run.dirty = true;
        let conn = &run.spec.connections[ci];
        let from = conn.phone_numbers[ni].to_string();
        let attempt_id =
            campaign_attempt_id(self.seed, id, &cohort_id, user.row_no, user.attempts, t);
        let result = self.telephony.dial(&DialRequest {
            attempt_id: attempt_id.clone(),
            from: from.clone(),
            to: phone_number,
            at: t,
            attempt_index: user.attempts,
        });
        let ends = result.ends_at(t);
        let call = es::Call {
            id: attempt_id.clone(),
            kind: CallKind::Campaign,
            ws: run.ws.clone(),
            status: CallStatus::Calling,
            payload: Vec::new(),
            campaign_id: Some(id.to_string()),
            cohort_id: Some(cohort_id),
            row_no: Some(user.row_no),
            retry_attempt: user.attempts,
            dialed_at: Some(t),
            ends_at: Some(ends),
            outcome: Some(result.outcome.as_str().to_string()),
            failure_reason: result.failure_reason,
            talk_ms: Some(result.talk.num_milliseconds()),
            connection_id: Some(conn.connection_id.clone()),
            agent_number: Some(from),
            created_at: t,
        };
        let aid = Id::from(attempt_id.as_str());
        st.calls.push(Reverse((ms(ends), aid.clone())));
        st.pending.calls.insert(aid.clone());
        st.pending.users.insert(
            (run.id.clone(), key.1),
            UserWrite {
                state: UserState::Calling,
                attempts: user.attempts + 1,
                due_ms: key.0,
                last_result: None,
            },
        );
        st.inflight.insert(aid, call);
        report.dials += 1;
        Ok(())
    }

    fn call_end(
        &self,
        db: &mut BatchDb<'_>,
        st: &mut State,
        attempt: Id,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let attempt_id: &str = &attempt;
        let call = match st.inflight.remove(attempt_id) {
            Some(call) => call,
            None => match es::call(db.conn()?, attempt_id)? {
                Some(call) => call,
                None => return Ok(()),
            },
        };
        if call.status != CallStatus::Calling {
            return Ok(());
        }
        let Some(keys) = keys.get(&call.ws) else {
            // The webhook needs the keys: the end is processed when they are back.
            let until = st.hold_in_step(&call.ws, t);
            st.calls.push(Reverse((ms(until), attempt.clone())));
            st.inflight.insert(attempt, call);
            return Ok(());
        };
        let ended = call.ends_at.unwrap_or(t);
        let outcome: Outcome = call
            .outcome
            .as_deref()
            .and_then(|o| o.parse().ok())
            .unwrap_or(Outcome::InternalError);
        let talk = Duration::milliseconds(call.talk_ms.unwrap_or(0));
        report.calls_ended += 1;
        if call.kind == CallKind::Outbound {
            let result = CallResult::classify(outcome, talk, 0);
            es::end_call(db.conn()?, attempt_id, result.as_str(), ended)?;
            let payload = if call.payload.is_empty() {
                es::call_payload(db.conn()?, attempt_id)?
            } else {
                call.payload.clone()
            };
            let request = match open_outbound_request(keys, attempt_id, &payload) {
                Some(r) => r,
                None => {
                    tracing::error!(
                        attempt = attempt_id,
                        "an outbound request does not open; no webhook"
                    );
                    return Ok(());
                }
            };
            if let Some(hook) = &request.webhook_config {
                let body = events::outbound_event(self.seed, &call, outcome, talk, &request, hook);
                self.queue_webhook(
                    &mut st.pending,
                    keys,
                    &call.ws,
                    DeliveryKind::Outbound,
                    attempt_id,
                    &hook.url,
                    &body,
                    ended,
                );
                report.webhooks_queued += 1;
            }
            return Ok(());
        }
        let campaign_id = call.campaign_id.clone().unwrap_or_default();
        let cohort_id = call.cohort_id.clone().unwrap_or_default();
        let row_no = call.row_no.unwrap_or(0);
        let spec_status = match st.runs.get(&campaign_id) {
            Some(run) => Some((run.spec.clone(), run.status)),
            None => {
                campaigns::get_any(db.conn()?, &campaign_id)?.map(|r| (Arc::new(r.spec), r.status))
            }
        };
        let Some((spec, status)) = spec_status else {
            // The campaign is gone: the call ends as an internal error, written once.
            if st.pending.calls.remove(attempt_id) {
                st.pending
                    .ended_calls
                    .push((call, CallResult::InternalError.as_str()));
            } else {
                st.pending.call_ends.push((
                    attempt.clone(),
                    CallResult::InternalError.as_str(),
                    ended,
                ));
            }
            return Ok(());
        };
        let result = CallResult::classify(outcome, talk, spec.retry.threshold_seconds);
        let attempts = call.retry_attempt + 1;
        // A retry needs a live campaign; a user out of attempts is done either way.
        let live = st.runs.contains_key(&campaign_id) && !status.is_final();
        let mut next = dialing::next_step(result, attempts, &spec.retry, ended, &spec.window);
        let cut_short = !live && matches!(next, NextStep::Retry { .. });
        if cut_short {
            next = NextStep::Done;
        }
        let cid: Id = st
            .runs
            .get(&campaign_id)
            .map_or_else(|| Id::from(campaign_id.as_str()), |r| r.id.clone());
        *st.pending
            .results
            .entry((cid.clone(), result.as_str()))
            .or_default() += 1;
        // Written at the end of the batch; a call dialled in it is written once, ended.
        let insert_ended = st.pending.calls.remove(attempt_id);
        if !insert_ended {
            st.pending
                .call_ends
                .push((attempt.clone(), result.as_str(), ended));
        }
        let seq = match st.runs.get(&campaign_id) {
            Some(run) => run
                .cohorts
                .iter()
                .position(|k| *k == cohort_id)
                .map(|p| p as u32),
            None => es::admitted_cohorts(db.conn()?, &campaign_id)?
                .iter()
                .position(|k| *k == cohort_id)
                .map(|p| p as u32),
        }
        .map(|position| (position, es::queue_seq(position, row_no)));
        let Some((position, seq)) = seq else {
            tracing::error!(campaign = %campaign_id, cohort = %cohort_id, "a call of a cohort the campaign never admitted");
            if insert_ended {
                st.pending.ended_calls.push((call, result.as_str()));
            }
            return Ok(());
        };
        // The user's data for the webhook: from the cache while the user goes on (or was
        // just finished), else from the store.
        let mut person_data: Option<UserData> = None;
        match next {
            NextStep::Retry { due, .. } => {
                st.pending.users.insert(
                    (cid.clone(), seq),
                    UserWrite {
                        state: UserState::Ready,
                        attempts,
                        due_ms: ms(due),
                        last_result: Some(result.as_str()),
                    },
                );
                if let Some(run) = st.runs.get_mut(&campaign_id) {
                    run.ready.insert(
                        (ms(due), seq),
                        Waiting {
                            cohort_position: position,
                            row_no,
                            attempts,
                        },
                    );
                }
            }
            NextStep::Done => {
                let state = if cut_short {
                    UserState::Unfinished
                } else {
                    UserState::Done
                };
                let cached = st
                    .runs
                    .get_mut(&campaign_id)
                    .and_then(|r| r.data.remove(&seq));
                person_data = person_data.or(cached);
                st.pending.users.insert(
                    (cid.clone(), seq),
                    UserWrite {
                        state,
                        attempts,
                        due_ms: ms(ended),
                        last_result: Some(result.as_str()),
                    },
                );
            }
        }
        if let Some(hook) = &spec.webhook {
            let cached = person_data.as_ref().map(|d| d.sealed.to_vec()).or_else(|| {
                st.runs
                    .get(&campaign_id)
                    .and_then(|r| r.data.get(&seq))
                    .map(|d| d.sealed.to_vec())
            });
            let sealed = match cached {
                Some(s) => Some(s),
                None => cohort_users_row(db.conn()?, &cohort_id, row_no)?.map(|u| u.data),
            };
            let person =
                sealed.and_then(|d| cohort_store::open_user(keys, &cohort_id, row_no, &d).ok());
            let body = events::campaign_event(
                self.seed,
                &spec,
                &campaign_id,
                &call,
                outcome,
                talk,
                result,
                &next,
                person.as_ref(),
                hook,
            );
            self.queue_webhook(
                &mut st.pending,
                keys,
                &call.ws,
                DeliveryKind::Campaign,
                attempt_id,
                &hook.url,
                &body,
                ended,
            );
            report.webhooks_queued += 1;
        }
        if insert_ended {
            st.pending.ended_calls.push((call, result.as_str()));
        }
        Ok(())
    }

    fn outbound(
        &self,
        c: &Connection,
        st: &mut State,
        attempt: Id,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let attempt_id: &str = &attempt;
        let Some(call) = es::call(c, attempt_id)? else {
            return Ok(());
        };
        if call.status != CallStatus::Queued {
            return Ok(());
        }
        let Some(keys) = keys.get(&call.ws) else {
            let until = st.hold_in_step(&call.ws, t);
            st.outbound.push(Reverse((ms(until), attempt.clone())));
            return Ok(());
        };
        let request = match open_outbound_request(keys, attempt_id, &call.payload) {
            Some(r) => r,
            None => {
                tracing::error!(
                    attempt = attempt_id,
                    "an outbound request does not open; dropped as failed"
                );
                es::end_call(c, attempt_id, CallResult::InternalError.as_str(), t)?;
                return Ok(());
            }
        };
        let from = request
            .app_config
            .connection_config
            .agent_phone_number
            .clone();
        let result = self.telephony.dial(&DialRequest {
            attempt_id: attempt_id.to_string(),
            from: from.clone(),
            to: request.user_config.user_phone_number.clone(),
            at: t,
            attempt_index: 0,
        });
        let ends = result.ends_at(t);
        es::set_outbound_dialed(
            c,
            &Dialed {
                id: attempt_id,
                at: t,
                ends,
                outcome: result.outcome.as_str(),
                failure_reason: result.failure_reason.as_deref(),
                talk_ms: result.talk.num_milliseconds(),
                connection_id: &request.app_config.connection_config.connection_id,
                agent_number: &from,
            },
        )?;
        st.calls.push(Reverse((ms(ends), attempt.clone())));
        st.inflight.insert(
            attempt.clone(),
            es::Call {
                status: CallStatus::Calling,
                dialed_at: Some(t),
                ends_at: Some(ends),
                outcome: Some(result.outcome.as_str().to_string()),
                failure_reason: result.failure_reason.clone(),
                talk_ms: Some(result.talk.num_milliseconds()),
                connection_id: Some(request.app_config.connection_config.connection_id.clone()),
                agent_number: Some(from),
                // Read back from the database when the call ends.
                payload: Vec::new(),
                ..call
            },
        );
        report.dials += 1;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_webhook(
        &self,
        pending: &mut Pending,
        keys: &WorkspaceKeys,
        ws: &WorkspaceRef,
        kind: DeliveryKind,
        subject: &str,
        url: &str,
        body: &serde_json::Value,
        at: DateTime<Utc>,
    ) {
        let id = format!(
            "whd-{}",
            &dialing::interaction_id(self.seed, &format!("{kind}/{subject}"))[4..]
        );
        let sealed = keys.seal(
            &es::delivery_context(&id),
            &serde_json::to_vec(body).expect("events serialise"),
        );
        pending.deliveries.push((
            Delivery {
                id,
                ws: ws.clone(),
                kind,
                subject_id: subject.to_string(),
                url: url.to_string(),
                body: sealed,
                tries: 0,
                created_at: at,
            },
            at,
        ));
    }
}

/// One stored user.
fn cohort_users_row(
    c: &Connection,
    cohort_id: &str,
    row_no: u64,
) -> Result<Option<cohort_store::StoredUser>, StoreError> {
    Ok(
        cohort_store::users_after(c, cohort_id, row_no.saturating_sub(1), 1)?
            .into_iter()
            .next()
            .filter(|u| u.row_no == row_no),
    )
}

/// Drops the users a stop file excluded from the in-memory queue.
fn drop_excluded(c: &Connection, run: &mut Run) -> Result<(), StoreError> {
    let still: std::collections::HashSet<i64> = es::ready_users(c, &run.id)?
        .into_iter()
        .map(|u| u.queue_seq)
        .collect();
    let gone: Vec<i64> = run
        .ready
        .keys()
        .map(|(_, seq)| *seq)
        .filter(|seq| !still.contains(seq))
        .collect();
    run.ready.retain(|(_, seq), _| still.contains(seq));
    for seq in gone {
        run.data.remove(&seq);
    }
    Ok(())
}

/// When a run next dials: the earliest due user, no sooner than the pace allows, inside the
/// window, before the end, after any hold.
fn next_dial(run: &Run, hold: Option<&Hold>) -> Option<DateTime<Utc>> {
    let (&(due_ms, _), _) = run.ready.iter().next()?;
    let mut t = crate::store::from_ms(due_ms)
        .max(run.spec.start)
        .max(run.floor);
    if let Some(p) = run.pacing {
        t = t.max(p.next_slot(run.spec.attempts_per_second));
    }
    if let Some(h) = hold {
        t = t.max(h.until);
    }
    if !run.spec.window.contains(t) {
        t = run.spec.window.next_open(t);
    }
    (t < run.spec.end).then_some(t)
}

fn next_event(st: &State) -> Option<(DateTime<Utc>, Event)> {
    let mut best: Option<(DateTime<Utc>, Event)> = None;
    let mut offer = |t: DateTime<Utc>, ev: Event| {
        let better = match &best {
            None => true,
            Some((bt, bev)) => (t, &ev) < (*bt, bev),
        };
        if better {
            best = Some((t, ev));
        }
    };
    if let Some(Reverse((t, id))) = st.calls.peek() {
        offer(crate::store::from_ms(*t), Event::CallEnd(id.clone()));
    }
    if let Some(Reverse((t, id))) = st.inbound.peek() {
        offer(crate::store::from_ms(*t), Event::InboundEnd(id.clone()));
    }
    if let Some(Reverse((t, id))) = st.outbound.peek() {
        offer(crate::store::from_ms(*t), Event::Outbound(id.clone()));
    }
    for run in st.runs.values() {
        match run.status {
            CampaignStatus::Scheduled => offer(
                run.spec.start.min(run.spec.end),
                Event::Activate(run.id.clone()),
            ),
            CampaignStatus::Active => {
                offer(run.spec.end, Event::End(run.id.clone()));
                if let Some(t) = next_dial(run, st.holds.get(&run.ws)) {
                    offer(t, Event::Dial(run.id.clone()));
                }
            }
            _ => {}
        }
    }
    best
}
