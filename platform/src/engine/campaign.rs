//! Campaigns: loading a run into memory, admitting its completed cohorts (and stop files),
//! starting and ending it with the clock (as `crate::lifecycle` decides), and dialling its users. The end of a campaign
//! call is in `call_end.rs`.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use contracts::wire::CohortCategory;
use telephony_sim::DialRequest;

use super::batch::BatchDb;
use super::dialing::campaign_attempt_id;
use super::state::{DialNumber, Run, RunState, State, UserData, Waiting, lines};
use super::writes::WriteBatch;
use super::{Engine, EngineError, Id, StepKeys, StepReport};
use crate::store::batch::{Connection, UserUpdate};
use crate::store::cohorts::{self as cohort_store, Parent};
use crate::store::states::{CallKind, CallStatus, UserState};
use crate::store::{StoreError, campaigns, ms};
use crate::store::{calls, campaign_users};

/// One stored user.
pub(super) fn cohort_users_row(
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

/// Users whose sealed data one read brings into memory ahead of their dials.
const READ_AHEAD: usize = 1_024;
/// At most this many users' data is held read ahead per campaign; past it, what was read
/// ahead is dropped and read again as needed.
const READ_AHEAD_MAX: usize = 16 * READ_AHEAD;

/// Reads the sealed data of the users the run dials next, so that their dials find it in
/// memory: `first` (the queue order of the dial in hand) and the users after it in the
/// queue's own order (due time, then queue order) whose dials need their records
/// ([`needs_record`]: first dials, and every dial of a campaign with stop files) and whose
/// data is not in memory, up to [`READ_AHEAD`], looked up by cohort and row in row order.
/// Memory holds about a thousand users' data per campaign, whatever the campaign's size.
fn read_ahead(c: &Connection, run: &mut Run, first: i64) -> Result<(), StoreError> {
    if run.data.len() >= READ_AHEAD_MAX {
        run.data = Default::default();
    }
    let place = |seq: i64| {
        let (position, row) = campaign_users::queue_place(seq);
        (position, row, seq)
    };
    let mut want: Vec<(u32, u64, i64)> = Vec::with_capacity(READ_AHEAD);
    want.push(place(first));
    want.extend(
        run.ready
            .iter()
            .filter(|((_, seq), w)| needs_record(run, w) && !run.data.contains_key(seq))
            .take(READ_AHEAD - 1)
            .map(|(&(_, seq), _)| place(seq)),
    );
    want.sort_unstable();
    let cohorts = &run.cohorts;
    let rows: Vec<(&str, u64, i64)> = want
        .iter()
        .filter_map(|&(p, row, seq)| Some((&**cohorts.get(p as usize)?, row, seq)))
        .collect();
    for (seq, phone_hash, sealed) in campaign_users::users_data(c, &rows)? {
        run.data.entry(seq).or_insert_with(|| UserData {
            phone_hash,
            sealed: sealed.into_boxed_slice(),
        });
    }
    Ok(())
}

/// An outcome's text, shared by every call with that outcome (campaign dials and instant
/// calls).
pub(super) fn outcome_text(outcome: telephony_sim::Outcome) -> Id {
    static TEXTS: std::sync::LazyLock<Vec<(telephony_sim::Outcome, Id)>> =
        std::sync::LazyLock::new(|| {
            telephony_sim::Outcome::ALL
                .iter()
                .map(|&o| (o, Id::from(o.as_str())))
                .collect()
        });
    TEXTS
        .iter()
        .find(|(o, _)| *o == outcome)
        .map_or_else(|| Id::from(outcome.as_str()), |(_, text)| text.clone())
}

/// Whether the dial of a waiting user reads and opens its record: a retry calls the number
/// its last dial called, unless the campaign has stop files (the record's number hash is
/// looked up in them at each dial).
fn needs_record(run: &Run, user: &Waiting) -> bool {
    run.has_stop_files || user.number == DialNumber::NONE
}

/// Drops the users a stop file excluded from the in-memory queue.
fn drop_excluded(c: &Connection, run: &mut Run) -> Result<(), StoreError> {
    let still: std::collections::HashSet<i64> = campaign_users::ready_users(c, &run.id)?
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

impl Engine {
    /// Loads campaign `id` into memory, or takes in a change made through the API
    /// (configuration and status; the queue stays). A campaign that reached a final status
    /// leaves memory and its waiting users become unfinished.
    pub(super) fn load_run(
        &self,
        c: &Connection,
        state: &mut State,
        id: &str,
    ) -> Result<(), StoreError> {
        let Some((rec, revision)) = campaigns::get_any_revised(c, id)? else {
            state.runs.remove(id);
            return Ok(());
        };
        if rec.status.is_final() {
            state.runs.remove(id);
            state.flush(c)?;
            campaign_users::mark_unfinished(c, id)?;
            return Ok(());
        }
        if let Some(run) = state.runs.get_mut(id) {
            // A change through the API, or several since the engine last looked: the
            // configuration and status the database holds now; the queue stays. What the run
            // becomes depends on the row alone, not on which of the changes the engine saw.
            if run.revision != revision {
                run.restart_pace();
            }
            run.set_spec(rec.spec);
            run.status = rec.status;
            run.revision = revision;
            run.routing.fit(&run.spec.connections);
            run.floor = run.floor.max(self.app.clock.now());
            return Ok(());
        }
        let saved: RunState = campaigns::engine_state(c, id)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let cohorts = campaign_users::admitted_cohorts(c, id)?
            .into_iter()
            .map(Id::from)
            .collect();
        let mut ready = BTreeMap::new();
        for u in campaign_users::ready_users(c, id)? {
            ready.insert(
                (u.due_ms, u.queue_seq),
                Waiting {
                    attempts: u.attempts,
                    number: DialNumber::NONE,
                },
            );
        }
        // The users' data is read ahead at the dials ([`read_ahead`]), not held for all.
        let data = Default::default();
        let has_stop_files =
            !cohort_store::completed_cohorts(c, &Parent::campaign(id), CohortCategory::StopFile)?
                .is_empty();
        let mut routing = saved.routing;
        routing.fit(&rec.spec.connections);
        state.runs.insert(
            id.to_string(),
            Run {
                id: Id::from(id),
                ws: Arc::new(rec.ws),
                revision,
                status: rec.status,
                lines: lines(&rec.spec),
                spec: Arc::new(rec.spec),
                cohorts,
                has_stop_files,
                ready,
                data,
                calling: Default::default(),
                pacing: saved.pacing,
                routing,
                dirty: false,
                floor: self.app.clock.now(),
            },
        );
        Ok(())
    }

    /// Admits the campaign's cohorts that completed since the last look, in upload order.
    pub(super) fn admit(
        &self,
        c: &Connection,
        state: &mut State,
        id: &str,
    ) -> Result<(), StoreError> {
        let Some(run) = state.runs.get_mut(id) else {
            return Ok(());
        };
        for (cohort_id, stop_file, at) in campaign_users::completed_campaign_cohorts(c, id)? {
            if run.cohorts.iter().any(|k| **k == *cohort_id) {
                continue;
            }
            let position = run.cohorts.len() as u32;
            if stop_file {
                campaign_users::admit_stop_file(c, id, &cohort_id, position, at)?;
                run.has_stop_files = true;
                campaign_users::exclude_by_stop_file(c, id, &cohort_id)?;
                run.cohorts.push(Id::from(cohort_id));
                drop_excluded(c, run)?;
            } else {
                campaign_users::admit_cohort(c, id, &cohort_id, position, at)?;
                for queue_seq in campaign_users::admitted_rows(c, &cohort_id, position)? {
                    run.ready.insert(
                        (ms(at), queue_seq),
                        Waiting {
                            attempts: 0,
                            number: DialNumber::NONE,
                        },
                    );
                }
                run.cohorts.push(Id::from(cohort_id));
                if run.has_stop_files {
                    // Users already in a stop file never enter the queue.
                    for (stop, is_stop, _) in campaign_users::completed_campaign_cohorts(c, id)? {
                        if is_stop && run.cohorts.iter().any(|k| **k == *stop) {
                            campaign_users::exclude_by_stop_file(c, id, &stop)?;
                        }
                    }
                    drop_excluded(c, run)?;
                }
            }
        }
        Ok(())
    }

    /// A campaign's change with time at `t` (a start or an end event), as
    /// [`crate::lifecycle::settle_status`] decides from the status stored now: to `active`,
    /// the run dials; to `ended`, its waiting users become unfinished and its run leaves
    /// memory. When the API changed the campaign since the engine last looked (nothing moves),
    /// that change is taken in instead.
    pub(super) fn move_with_time(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        id: &str,
        t: DateTime<Utc>,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let c = db.conn()?;
        let Some(to) = campaigns::settle_one(c, id, t)? else {
            self.load_run(c, state, id)?;
            return Ok(());
        };
        if to.is_final() {
            state.flush(c)?;
            campaign_users::mark_unfinished(c, id)?;
            state.runs.remove(id);
        } else if let Some(run) = state.runs.get_mut(id) {
            run.status = to;
        }
        report.transitions += 1;
        Ok(())
    }

    /// Dials the campaign's next user at `t` (its time from [`super::queue::next_dial`]):
    /// a user in a stop file is excluded instead; the pace's slot is taken (rule 2) and the
    /// connection and number chosen by weight (rule 4).
    pub(super) fn dial(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        id: &str,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let run = state.runs.get_mut(id).expect("event of a run");
        let Some(keys) = keys.get(&run.ws) else {
            // The workspace's key service is down: nothing is dialled or counted; the dial
            // waits for the hold to lapse.
            let ws = run.ws.clone();
            state.hold_in_step(&ws, t);
            return Ok(());
        };
        if !state.holds.is_empty() {
            state.holds.remove(&run.ws);
        }
        let (&key, &user) = run.ready.iter().next().expect("a dial has a user");
        run.ready.remove(&key);
        let (position, row_no) = campaign_users::queue_place(key.1);
        let cohort_id = run.cohorts[position as usize].clone();
        let known = match needs_record(run, &user) {
            true => None,
            false => user.number.unpack(),
        };
        let (phone_number, packed) = match known {
            Some(number) => (number, user.number),
            None => match open_record(db, run, &mut state.pending, key, user, keys)? {
                Some(number) => {
                    let packed = DialNumber::pack(&number);
                    (number, packed)
                }
                None => return Ok(()),
            },
        };
        run.calling.insert(key.1, packed);
        run.take_slot(t);
        let (ci, ni) = run.routing.pick(&run.spec.connections);
        run.dirty = true;
        let (connection_id, numbers) = &run.lines[ci];
        let from = &numbers[ni];
        let attempt_id = campaign_attempt_id(self.seed, id, &cohort_id, row_no, user.attempts, t);
        let result = self.telephony.dial(&DialRequest {
            attempt_id: attempt_id.clone(),
            from: from.to_string(),
            to: phone_number,
            at: t,
            attempt_index: user.attempts,
        });
        let ends = result.ends_at(t);
        let aid = Id::from(attempt_id);
        let call = calls::Call {
            id: aid.clone(),
            kind: CallKind::Campaign,
            ws: run.ws.clone(),
            status: CallStatus::Calling,
            payload: Vec::new(),
            campaign_id: Some(run.id.clone()),
            cohort_id: Some(cohort_id),
            row_no: Some(row_no),
            retry_attempt: user.attempts,
            dialed_at: Some(t),
            ends_at: Some(ends),
            outcome: Some(outcome_text(result.outcome)),
            failure_reason: result.failure_reason,
            talk_ms: Some(result.talk.num_milliseconds()),
            connection_id: Some(connection_id.clone()),
            agent_number: Some(from.clone()),
            created_at: t,
        };
        state.calls.push(Reverse((ms(ends), aid.clone())));
        state.pending.dialled.insert(aid.clone());
        state.pending.users.insert(
            (run.id.clone(), key.1),
            UserUpdate {
                state: UserState::Calling,
                attempts: user.attempts + 1,
                due_ms: key.0,
            },
        );
        state.inflight.insert(aid, call);
        report.dials += 1;
        Ok(())
    }
}

/// The number of waiting user `user` (queue place `key`, just taken out of the queue) from
/// its record, read ahead with the users after it: `None` when the user is not to be
/// dialled (set aside: in a stop file, or a record that does not open; or its cohort is
/// gone).
fn open_record(
    db: &mut BatchDb<'_>,
    run: &mut Run,
    pending: &mut WriteBatch,
    key: (i64, i64),
    user: Waiting,
    keys: &crate::keys::WorkspaceKeys,
) -> Result<Option<String>, EngineError> {
    let (position, row_no) = campaign_users::queue_place(key.1);
    if !run.data.contains_key(&key.1) {
        db.read(|c| read_ahead(c, run, key.1))?;
    }
    let cohort_id = &run.cohorts[position as usize];
    let data = match run.data.remove(&key.1) {
        Some(d) => d,
        // Not among the users read (its cohort is gone): read it alone.
        None => match db.read(|c| cohort_users_row(c, cohort_id, row_no))? {
            Some(u) => UserData {
                phone_hash: u.phone_hash,
                sealed: u.data.into_boxed_slice(),
            },
            None => return Ok(None), // the cohort is gone; skip the user
        },
    };
    if run.has_stop_files && cohort_store::in_stop_file(db.conn()?, &run.id, &data.phone_hash)? {
        set_aside(run, pending, key, user, UserState::Excluded);
        return Ok(None);
    }
    match cohort_store::open_phone_number(keys, cohort_id, row_no, &data.sealed) {
        Ok(number) => Ok(Some(number)),
        Err(e) => {
            tracing::error!(campaign = %run.id, cohort = %cohort_id, row = row_no, error = %e, "a cohort user does not open; skipped");
            set_aside(run, pending, key, user, UserState::Done);
            Ok(None)
        }
    }
}

/// Takes a waiting user out of the queue undialled (in a stop file, or a record that does
/// not open), finished in `state`.
fn set_aside(
    run: &mut Run,
    pending: &mut WriteBatch,
    (due_ms, seq): (i64, i64),
    user: Waiting,
    state: UserState,
) {
    run.data.remove(&seq);
    pending.users.insert(
        (run.id.clone(), seq),
        UserUpdate {
            state,
            attempts: user.attempts,
            due_ms,
        },
    );
}
