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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use contracts::model::CampaignSpec;
use contracts::wire::{CampaignStatus, CohortCategory, OutboundRequest};
use rusqlite::Connection;
use telephony_sim::{DialRequest, Outcome, TelephonySim};

use crate::app::App;
use crate::crypto::WorkspaceKeys;
use crate::store::cohorts::{self as cohort_store, Parent};
use crate::store::engine::{self as es, Delivery, Dialed};
use crate::store::{StoreError, WorkspaceRef, campaigns, ms};
use dialing::{CallResult, NextStep, Pacing, Routing, campaign_attempt_id};

/// The most events one transaction holds.
const BATCH: usize = 4096;

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
    id: String,
    ws: WorkspaceRef,
    spec: CampaignSpec,
    status: CampaignStatus,
    updated_ms: i64,
    /// Admitted cohorts by position.
    cohorts: Vec<String>,
    has_stop_files: bool,
    /// Users waiting, by (due ms, queue order).
    ready: BTreeMap<(i64, i64), Waiting>,
    pacing: Option<Pacing>,
    routing: Routing,
    /// Pacing or routing changed since the last write.
    dirty: bool,
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

#[derive(Debug, Default)]
struct State {
    loaded: bool,
    seen_changes: u64,
    runs: BTreeMap<String, Run>,
    /// (processing time ms, attempt id) of calls in progress.
    calls: BinaryHeap<Reverse<(i64, String)>>,
    /// (created ms, attempt id) of queued instant outbound calls.
    outbound: BinaryHeap<Reverse<(i64, String)>>,
    /// (ends ms, call id) of answered inbound calls.
    inbound: BinaryHeap<Reverse<(i64, String)>>,
    holds: HashMap<WorkspaceRef, Hold>,
    /// Set when an event of the current step held a workspace: the step ends there, so that
    /// the driver fetches the workspace's keys again before the hold lapses (a step's keys
    /// are fixed; going on would run the whole backoff without asking the key service).
    held_in_step: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    // At one instant: calls end first, then status changes, then dials.
    CallEnd(String),
    InboundEnd(String),
    Activate(String),
    End(String),
    Outbound(String),
    Dial(String),
}

/// The campaign engine of one platform.
pub struct Engine {
    app: App,
    telephony: Arc<TelephonySim>,
    seed: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

fn hold_backoff(tries: u32) -> Duration {
    // 1 s, 2 s, 4 s ... at most 5 minutes.
    Duration::seconds(1i64 << tries.min(8)).min(Duration::minutes(5))
}

impl Engine {
    /// An engine over the app's store, dialling through `telephony`. `seed` makes attempt and
    /// interaction ids deterministic.
    pub fn new(app: App, telephony: Arc<TelephonySim>, seed: u64) -> Self {
        Engine {
            app,
            telephony,
            seed,
            state: Mutex::new(State::default()),
        }
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
        drop(st);
        // Calls and queued work of any workspace.
        let extra: Vec<WorkspaceRef> = self.app.store.read_blocking(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT DISTINCT org_id, workspace_id FROM attempts WHERE status IN ('queued', 'calling')
                 UNION SELECT DISTINCT org_id, workspace_id FROM inbound_calls WHERE answered = 1 AND ended = 0",
            )?;
            let rows = stmt
                .query_map([], |r| Ok(WorkspaceRef::new(r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
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
        let mut st = self.lock();
        let tries = st.holds.get(ws).map_or(0, |h| h.tries + 1);
        st.holds.insert(
            ws.clone(),
            Hold {
                until: now + hold_backoff(tries),
                tries,
            },
        );
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
        loop {
            let mut st = self.lock();
            self.sync(&mut st)?;
            let mut report = StepReport::default();
            let more = self.app.store.write_blocking(|c| {
                let tx = c.transaction()?;
                let mut n = 0;
                let mut more = false;
                while let Some((t, ev)) = next_event(&st) {
                    if t > until {
                        break;
                    }
                    if n == BATCH {
                        more = true;
                        break;
                    }
                    st.held_in_step = false;
                    self.handle(&tx, &mut st, t, ev, keys, &mut report)
                        .map_err(|EngineError::Store(e)| e)?;
                    n += 1;
                    if st.held_in_step {
                        break;
                    }
                }
                for run in st.runs.values_mut() {
                    if run.dirty {
                        let state = RunState {
                            pacing: run.pacing,
                            routing: run.routing.clone(),
                        };
                        es::set_engine_state(
                            &tx,
                            &run.id,
                            &serde_json::to_string(&state).expect("state serialises"),
                        )?;
                        run.dirty = false;
                    }
                }
                tx.commit()?;
                Ok(more)
            })?;
            total += report;
            if !more {
                return Ok(total);
            }
        }
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
                st.calls = es::calls_in_progress(&tx)?
                    .into_iter()
                    .map(Reverse)
                    .collect();
                st.inbound = es::open_inbound(&tx)?.into_iter().map(Reverse).collect();
            }
            st.outbound = es::queued_outbound(&tx)?.into_iter().map(Reverse).collect();
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
            es::mark_unfinished(c, id)?;
            return Ok(());
        }
        if let Some(run) = st.runs.get_mut(id) {
            // A change through the API: configuration and status; the queue stays.
            if run.status != rec.status && rec.status == CampaignStatus::Paused {
                run.pacing = None;
            }
            run.spec = rec.spec;
            run.status = rec.status;
            run.updated_ms = ms(rec.updated_at);
            run.routing.fit(&run.spec.connections);
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
        let has_stop_files =
            !cohort_store::completed_cohorts(c, &Parent::campaign(id), CohortCategory::StopFile)?
                .is_empty();
        let mut routing = saved.routing;
        routing.fit(&rec.spec.connections);
        st.runs.insert(
            id.to_string(),
            Run {
                id: id.to_string(),
                ws: rec.ws,
                updated_ms: ms(rec.updated_at),
                status: rec.status,
                spec: rec.spec,
                cohorts,
                has_stop_files,
                ready,
                pacing: saved.pacing,
                routing,
                dirty: false,
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
                for (row_no, queue_seq) in cohort_rows(c, &cohort_id, position)? {
                    run.ready.insert(
                        (ms(at), queue_seq),
                        Waiting {
                            cohort_position: position,
                            row_no,
                            attempts: 0,
                        },
                    );
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
        c: &Connection,
        st: &mut State,
        t: DateTime<Utc>,
        ev: Event,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        report.events += 1;
        match ev {
            Event::Activate(id) => {
                if campaigns::transition(
                    c,
                    &id,
                    &[CampaignStatus::Scheduled],
                    CampaignStatus::Active,
                )? {
                    if let Some(run) = st.runs.get_mut(&id) {
                        run.status = CampaignStatus::Active;
                    }
                    report.transitions += 1;
                } else {
                    // The API changed the campaign since the engine last looked.
                    self.load_run(c, st, &id)?;
                }
            }
            Event::End(id) => {
                let from = [CampaignStatus::Scheduled, CampaignStatus::Active];
                if campaigns::transition(c, &id, &from, CampaignStatus::Ended)? {
                    es::mark_unfinished(c, &id)?;
                    st.runs.remove(&id);
                    report.transitions += 1;
                } else {
                    self.load_run(c, st, &id)?;
                }
            }
            Event::Dial(id) => self.dial(c, st, &id, t, keys, report)?,
            Event::CallEnd(attempt) => {
                st.calls.pop();
                self.call_end(c, st, &attempt, t, keys, report)?;
            }
            Event::Outbound(attempt) => {
                st.outbound.pop();
                self.outbound(c, st, &attempt, t, keys, report)?;
            }
            Event::InboundEnd(call) => {
                st.inbound.pop();
                self.inbound_end(c, st, &call, t, keys, report)?;
            }
        }
        Ok(())
    }

    fn dial(
        &self,
        c: &Connection,
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
            let tries = st.holds.get(&ws).map_or(0, |h| h.tries + 1);
            st.holds.insert(
                ws,
                Hold {
                    until: t + hold_backoff(tries),
                    tries,
                },
            );
            st.held_in_step = true;
            return Ok(());
        };
        st.holds.remove(&run.ws);
        let (&key, &user) = run.ready.iter().next().expect("a dial has a user");
        run.ready.remove(&key);
        let cohort_id = run.cohorts[user.cohort_position as usize].clone();
        let stored = cohort_users_row(c, &cohort_id, user.row_no)?;
        let Some(stored) = stored else {
            // The cohort is gone (cannot happen for a campaign); skip the user.
            return Ok(());
        };
        if run.has_stop_files && cohort_store::in_stop_file(c, id, &stored.phone_hash)? {
            es::set_user(
                c,
                &es::UserRef {
                    campaign_id: id,
                    cohort_id: &cohort_id,
                    row_no: user.row_no,
                },
                "excluded",
                user.attempts,
                key.0,
                None,
            )?;
            return Ok(());
        }
        let person = match stored.open(keys) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(campaign = id, cohort = %cohort_id, row = user.row_no, error = %e, "a cohort user does not open; skipped");
                es::set_user(
                    c,
                    &es::UserRef {
                        campaign_id: id,
                        cohort_id: &cohort_id,
                        row_no: user.row_no,
                    },
                    "done",
                    user.attempts,
                    key.0,
                    Some("internal_error"),
                )?;
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
            to: person.phone_number.clone(),
            at: t,
            attempt_index: user.attempts,
        });
        let ends = result.ends_at(t);
        es::insert_campaign_call(
            c,
            &run.ws,
            id,
            &cohort_id,
            user.row_no,
            user.attempts,
            &Dialed {
                id: &attempt_id,
                at: t,
                ends,
                outcome: result.outcome.as_str(),
                failure_reason: result.failure_reason.as_deref(),
                talk_ms: result.talk.num_milliseconds(),
                connection_id: &conn.connection_id,
                agent_number: &from,
            },
        )?;
        es::set_user(
            c,
            &es::UserRef {
                campaign_id: id,
                cohort_id: &cohort_id,
                row_no: user.row_no,
            },
            "calling",
            user.attempts + 1,
            key.0,
            None,
        )?;
        st.calls.push(Reverse((ms(ends), attempt_id)));
        report.dials += 1;
        Ok(())
    }

    fn call_end(
        &self,
        c: &Connection,
        st: &mut State,
        attempt_id: &str,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let Some(call) = es::call(c, attempt_id)? else {
            return Ok(());
        };
        if call.status != "calling" {
            return Ok(());
        }
        let Some(keys) = keys.get(&call.ws) else {
            // The webhook needs the keys: the end is processed when they are back.
            let ws = call.ws.clone();
            let tries = st.holds.get(&ws).map_or(0, |h| h.tries + 1);
            let until = t + hold_backoff(tries);
            st.holds.insert(ws, Hold { until, tries });
            st.held_in_step = true;
            st.calls.push(Reverse((ms(until), attempt_id.to_string())));
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
        if call.kind == "outbound" {
            let result = CallResult::classify(outcome, talk, 0);
            es::end_call(c, attempt_id, result.as_str(), ended)?;
            let request: OutboundRequest = match keys
                .open(
                    &crate::store::attempts::payload_context(attempt_id),
                    &call.payload,
                )
                .ok()
                .and_then(|p| serde_json::from_slice(&p).ok())
            {
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
                    c, keys, &call.ws, "outbound", attempt_id, &hook.url, &body, ended,
                )?;
                report.webhooks_queued += 1;
            }
            return Ok(());
        }
        let campaign_id = call.campaign_id.clone().unwrap_or_default();
        let cohort_id = call.cohort_id.clone().unwrap_or_default();
        let row_no = call.row_no.unwrap_or(0);
        let spec_status = match st.runs.get(&campaign_id) {
            Some(run) => Some((run.spec.clone(), run.status)),
            None => campaigns::get_any(c, &campaign_id)?.map(|r| (r.spec, r.status)),
        };
        let Some((spec, status)) = spec_status else {
            es::end_call(c, attempt_id, "internal_error", ended)?;
            return Ok(());
        };
        let result = CallResult::classify(outcome, talk, spec.retry.threshold_seconds);
        let attempts = call.retry_attempt + 1;
        let live = st.runs.contains_key(&campaign_id) && !status.is_final();
        let next = if live {
            dialing::next_step(result, attempts, &spec.retry, ended, &spec.window)
        } else {
            NextStep::Done
        };
        es::end_call(c, attempt_id, result.as_str(), ended)?;
        match next {
            NextStep::Retry { due, .. } => {
                let seq = es::user_queue_seq(c, &campaign_id, &cohort_id, row_no)?.unwrap_or(0);
                es::set_user(
                    c,
                    &es::UserRef {
                        campaign_id: &campaign_id,
                        cohort_id: &cohort_id,
                        row_no,
                    },
                    "ready",
                    attempts,
                    ms(due),
                    Some(result.as_str()),
                )?;
                if let Some(run) = st.runs.get_mut(&campaign_id) {
                    let position = run
                        .cohorts
                        .iter()
                        .position(|k| *k == cohort_id)
                        .unwrap_or(0) as u32;
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
                let state = if live || result == CallResult::Completed {
                    "done"
                } else {
                    "unfinished"
                };
                es::set_user(
                    c,
                    &es::UserRef {
                        campaign_id: &campaign_id,
                        cohort_id: &cohort_id,
                        row_no,
                    },
                    state,
                    attempts,
                    ms(ended),
                    Some(result.as_str()),
                )?;
            }
        }
        if let Some(hook) = &spec.webhook {
            let person = cohort_users_row(c, &cohort_id, row_no)?.and_then(|s| s.open(keys).ok());
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
                c, keys, &call.ws, "campaign", attempt_id, &hook.url, &body, ended,
            )?;
            report.webhooks_queued += 1;
        }
        Ok(())
    }

    fn outbound(
        &self,
        c: &Connection,
        st: &mut State,
        attempt_id: &str,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let Some(call) = es::call(c, attempt_id)? else {
            return Ok(());
        };
        if call.status != "queued" {
            return Ok(());
        }
        let Some(keys) = keys.get(&call.ws) else {
            let ws = call.ws.clone();
            let tries = st.holds.get(&ws).map_or(0, |h| h.tries + 1);
            let until = t + hold_backoff(tries);
            st.holds.insert(ws, Hold { until, tries });
            st.held_in_step = true;
            st.outbound
                .push(Reverse((ms(until), attempt_id.to_string())));
            return Ok(());
        };
        let request: OutboundRequest = match keys
            .open(
                &crate::store::attempts::payload_context(attempt_id),
                &call.payload,
            )
            .ok()
            .and_then(|p| serde_json::from_slice(&p).ok())
        {
            Some(r) => r,
            None => {
                tracing::error!(
                    attempt = attempt_id,
                    "an outbound request does not open; dropped as failed"
                );
                es::end_call(c, attempt_id, "internal_error", t)?;
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
        st.calls.push(Reverse((ms(ends), attempt_id.to_string())));
        report.dials += 1;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_webhook(
        &self,
        c: &Connection,
        keys: &WorkspaceKeys,
        ws: &WorkspaceRef,
        kind: &str,
        subject: &str,
        url: &str,
        body: &serde_json::Value,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let id = format!(
            "whd-{}",
            &dialing::interaction_id(self.seed, &format!("{kind}/{subject}"))[4..]
        );
        let sealed = keys.seal(
            &es::delivery_context(&id),
            &serde_json::to_vec(body).expect("events serialise"),
        );
        es::insert_delivery(
            c,
            &Delivery {
                id,
                ws: ws.clone(),
                kind: kind.to_string(),
                subject_id: subject.to_string(),
                url: url.to_string(),
                body: sealed,
                tries: 0,
                created_at: at,
            },
            at,
        )
    }
}

/// The (row, queue order) of every user of a cohort at admission `position`.
fn cohort_rows(
    c: &Connection,
    cohort_id: &str,
    position: u32,
) -> Result<Vec<(u64, i64)>, StoreError> {
    let mut st =
        c.prepare_cached("SELECT row_no FROM cohort_users WHERE cohort_id = ?1 ORDER BY row_no")?;
    let rows = st
        .query_map(rusqlite::params![cohort_id], |r| r.get::<_, i64>(0))?
        .map(|r| r.map(|n| (n as u64, (i64::from(position) << 32) + n)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
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
    run.ready.retain(|(_, seq), _| still.contains(seq));
    Ok(())
}

/// When a run next dials: the earliest due user, no sooner than the pace allows, inside the
/// window, before the end, after any hold.
fn next_dial(run: &Run, hold: Option<&Hold>) -> Option<DateTime<Utc>> {
    let (&(due_ms, _), _) = run.ready.iter().next()?;
    let mut t = crate::store::from_ms(due_ms).max(run.spec.start);
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
