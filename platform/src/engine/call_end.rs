//! The end of a call. The start is common ([`Engine::call_end`]: the call found, held while
//! its workspace's keys are missing); an instant outbound call then ends in `outbound.rs`,
//! a campaign dial here, in named steps ([`Engine::end_campaign_call`]):
//!
//! 1. [`decide_retry`]: rules 1 and 5, and the campaign's end: a retry or done;
//! 2. [`update_user`]: the user back in the queue for the retry, or finished;
//! 3. [`Engine::queue_campaign_webhook`]: the attempt's webhook, with the user's data;
//! 4. [`record_result`]: the result counted for the statistics, the call's row ended
//!    (written once: a call dialled in the same batch is inserted ended).

use std::cmp::Reverse;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use contracts::model::CampaignSpec;
use contracts::wire::CampaignStatus;
use telephony_sim::Outcome;

use super::batch::BatchDb;
use super::campaign::cohort_users_row;
use super::dialing::{self, CallResult, NextStep};
use super::state::{State, UserData, Waiting};
use super::writes::WriteBatch;
use super::{Engine, EngineError, Id, StepKeys, StepReport, events};
use crate::keys::WorkspaceKeys;
use crate::store::batch::Connection;
use crate::store::batch::UserUpdate;
use crate::store::cohorts as cohort_store;
use crate::store::states::{CallKind, CallStatus, DeliveryKind, UserState};
use crate::store::{StoreError, campaigns, ms};
use crate::store::{activity, calls, campaign_users};

/// A call at its end, as [`Engine::call_end`] found it: what the steps that end it need.
pub(super) struct Ended {
    /// The attempt id.
    pub(super) attempt: Id,
    /// The call as it was in progress.
    pub(super) call: calls::Call,
    /// When it ended.
    pub(super) at: DateTime<Utc>,
    /// The telephony outcome.
    pub(super) outcome: Outcome,
    /// Talk time.
    pub(super) talk: Duration,
}

impl Engine {
    /// A call's end at `t`: the call is found (in memory, or in the database after a
    /// restart) and, while its workspace's keys are missing, held; then it ends as an
    /// instant outbound call (`outbound.rs`) or a campaign dial (here).
    pub(super) fn call_end(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        attempt: Id,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let call = match state.inflight.remove(&attempt) {
            Some(call) => call,
            None => match calls::call(db.conn()?, &attempt)? {
                Some(call) => call,
                None => return Ok(()),
            },
        };
        if call.status != CallStatus::Calling {
            return Ok(());
        }
        let Some(keys) = keys.get(&call.ws) else {
            // The webhook needs the keys: the end is processed when they are back.
            let until = state.hold_in_step(&call.ws, t);
            state.calls.push(Reverse((ms(until), attempt.clone())));
            state.inflight.insert(attempt, call);
            return Ok(());
        };
        let ended = Ended {
            at: call.ends_at.unwrap_or(t),
            outcome: call
                .outcome
                .as_deref()
                .and_then(|o| o.parse().ok())
                .unwrap_or(Outcome::InternalError),
            talk: Duration::milliseconds(call.talk_ms.unwrap_or(0)),
            attempt,
            call,
        };
        report.calls_ended += 1;
        if ended.call.kind == CallKind::Outbound {
            self.end_outbound(db, state, keys, ended, report)
        } else {
            self.end_campaign_call(db, state, keys, ended, report)
        }
    }

    /// The end of a campaign dial, in steps: the retry decided, the result recorded, the
    /// user updated, the webhook queued. A call whose campaign is gone ends as an internal
    /// error, nothing else.
    pub(super) fn end_campaign_call(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        keys: &WorkspaceKeys,
        ended: Ended,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let campaign_id = ended
            .call
            .campaign_id
            .clone()
            .unwrap_or_else(|| Id::from(""));
        let cohort_id = ended.call.cohort_id.clone().unwrap_or_else(|| Id::from(""));
        let row_no = ended.call.row_no.unwrap_or(0);
        // The campaign from memory when the engine runs it (one lookup), else from the store.
        let run = state.runs.get(&*campaign_id).map(|run| Known {
            spec: run.spec.clone(),
            status: run.status,
            cid: run.id.clone(),
            position: run.cohorts.iter().position(|k| *k == cohort_id),
        });
        let runs_it = run.is_some();
        let known = match run {
            Some(known) => Some(known),
            None => stored_campaign(db.conn()?, &campaign_id, &cohort_id)?,
        };
        let Some(Known {
            spec,
            status,
            cid,
            position,
        }) = known
        else {
            // The campaign is gone: the call ends as an internal error, written once.
            record_call(&mut state.pending, ended, CallResult::InternalError);
            return Ok(());
        };
        let result = CallResult::classify(ended.outcome, ended.talk, spec.retry.threshold_seconds);
        let attempts = ended.call.retry_attempt + 1;
        // A retry needs a live campaign; a user out of attempts is done either way.
        let live = runs_it && !status.is_final();
        let (next, cut_short) = decide_retry(&spec, result, attempts, ended.at, live);
        let seq = position.map(|p| campaign_users::queue_seq(p as u32, row_no));
        let Some(seq) = seq else {
            tracing::error!(campaign = %campaign_id, cohort = %cohort_id, "a call of a cohort the campaign never admitted");
            record_result(&mut state.pending, cid, ended, result);
            return Ok(());
        };
        let user = UserCall {
            spec,
            campaign_id,
            cid,
            cohort_id,
            row_no,
            seq,
            attempts,
            result,
            next,
            cut_short,
        };
        let left = update_user(state, &user, ended.at);
        if self.queue_campaign_webhook(db, state, keys, &user, &ended, left)? {
            report.webhooks_queued += 1;
        }
        record_result(&mut state.pending, user.cid, ended, result);
        Ok(())
    }

    /// Queues a campaign call's webhook when the campaign has one (answers whether), with
    /// the user's data: `left` when the call finished the user, else from memory while the
    /// user waits there, else from the store.
    fn queue_campaign_webhook(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        keys: &WorkspaceKeys,
        user: &UserCall,
        ended: &Ended,
        left: Option<UserData>,
    ) -> Result<bool, EngineError> {
        let Some(hook) = &user.spec.webhook else {
            return Ok(false);
        };
        let cached: Option<&[u8]> = left.as_ref().map(|d| &*d.sealed).or_else(|| {
            state
                .runs
                .get(&*user.campaign_id)
                .and_then(|r| r.data.get(&user.seq))
                .map(|d| &*d.sealed)
        });
        let stored;
        let sealed = match cached {
            Some(s) => Some(s),
            None => {
                stored = cohort_users_row(db.conn()?, &user.cohort_id, user.row_no)?;
                stored.as_ref().map(|u| &u.data[..])
            }
        };
        let person = sealed
            .and_then(|d| cohort_store::open_user(keys, &user.cohort_id, user.row_no, d).ok());
        let body = events::campaign_event(
            self.seed,
            &user.spec,
            &user.campaign_id,
            &ended.call,
            ended.outcome,
            ended.talk,
            user.result,
            &user.next,
            person.as_ref(),
            hook,
        );
        self.queue_webhook(
            &mut state.pending,
            keys,
            &ended.call.ws,
            DeliveryKind::Campaign,
            &ended.attempt,
            &hook.url,
            &body,
            ended.at,
        );
        Ok(true)
    }
}

/// What a call's end needs of its campaign.
struct Known {
    spec: Arc<CampaignSpec>,
    status: CampaignStatus,
    /// The campaign's id as the engine shares it (the call's own when not in memory).
    cid: Id,
    /// The call's cohort's position among the campaign's admitted cohorts.
    position: Option<usize>,
}

/// [`Known`] of a campaign the engine does not run, from the store (none when it is gone).
fn stored_campaign(
    c: &Connection,
    campaign_id: &Id,
    cohort_id: &str,
) -> Result<Option<Known>, StoreError> {
    let Some(r) = campaigns::get_any(c, campaign_id)? else {
        return Ok(None);
    };
    let position = campaign_users::admitted_cohorts(c, campaign_id)?
        .iter()
        .position(|k| k == cohort_id);
    Ok(Some(Known {
        spec: Arc::new(r.spec),
        status: r.status,
        cid: campaign_id.clone(),
        position,
    }))
}

/// A campaign call's user at the call's end, and what the call meant for them.
struct UserCall {
    spec: Arc<CampaignSpec>,
    campaign_id: Id,
    /// The campaign's id as the engine shares it.
    cid: Id,
    cohort_id: Id,
    row_no: u64,
    /// The user's queue order.
    seq: i64,
    /// Dials made, this one included.
    attempts: u32,
    result: CallResult,
    next: NextStep,
    /// A retry the campaign's end (or cancel) cut short: the user is unfinished.
    cut_short: bool,
}

/// Rules 1 and 5, and the campaign's end: what follows a call's result. A retry when the
/// result is retried and the user has dials left ([`dialing::next_step`]); but a campaign no
/// longer live retries nobody: the retry is cut short (the second value) and the user done.
fn decide_retry(
    spec: &CampaignSpec,
    result: CallResult,
    attempts: u32,
    ended: DateTime<Utc>,
    live: bool,
) -> (NextStep, bool) {
    let next = dialing::next_step(result, attempts, &spec.retry, ended, &spec.window);
    if !live && matches!(next, NextStep::Retry { .. }) {
        (NextStep::Done, true)
    } else {
        (next, false)
    }
}

/// Records a campaign call's result: counted for the campaign's statistics, and the call's
/// row ended.
fn record_result(pending: &mut WriteBatch, cid: Id, ended: Ended, result: CallResult) {
    let minute = activity::minute_of(ended.call.dialed_at.unwrap_or(ended.at));
    *pending
        .dial_minutes
        .entry((cid.clone(), minute, result))
        .or_default() += 1;
    *pending.results.entry((cid, result)).or_default() += 1;
    record_call(pending, ended, result);
}

/// Ends a call's row with its result, written once: a call dialled in this batch is inserted
/// ended, a call of an earlier batch updated.
fn record_call(pending: &mut WriteBatch, ended: Ended, result: CallResult) {
    if pending.dialled.remove(&ended.attempt) {
        pending.ended_calls.push((ended.call, result.as_str()));
    } else {
        pending
            .call_ends
            .push((ended.attempt, result.as_str(), ended.at));
    }
}

/// The user after the call: back in the queue for the retry, or finished (done, or
/// unfinished when the retry was cut short). Answers the user's data when the user left the
/// queue (the webhook needs it).
fn update_user(state: &mut State, user: &UserCall, ended: DateTime<Utc>) -> Option<UserData> {
    let key = (user.cid.clone(), user.seq);
    match user.next {
        NextStep::Retry { due, .. } => {
            state.pending.users.insert(
                key,
                UserUpdate {
                    state: UserState::Ready,
                    attempts: user.attempts,
                    due_ms: ms(due),
                },
            );
            if let Some(run) = state.runs.get_mut(&*user.campaign_id) {
                let number = run.calling.remove(&user.seq).unwrap_or_default();
                run.ready.insert(
                    (ms(due), user.seq),
                    Waiting {
                        attempts: user.attempts,
                        number,
                    },
                );
            }
            None
        }
        NextStep::Done => {
            let user_state = if user.cut_short {
                UserState::Unfinished
            } else {
                UserState::Done
            };
            state.pending.users.insert(
                key,
                UserUpdate {
                    state: user_state,
                    attempts: user.attempts,
                    due_ms: ms(ended),
                },
            );
            state.runs.get_mut(&*user.campaign_id).and_then(|r| {
                r.calling.remove(&user.seq);
                r.data.remove(&user.seq)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::queue::tests::spec;

    #[test]
    fn a_retry_of_a_campaign_no_longer_live_is_cut_short() {
        let spec = spec();
        let at = spec.start;
        let (next, cut) = decide_retry(&spec, CallResult::Busy, 1, at, true);
        assert!(matches!(next, NextStep::Retry { .. }) && !cut);
        let (next, cut) = decide_retry(&spec, CallResult::Busy, 1, at, false);
        assert!(matches!(next, NextStep::Done) && cut);
        // Out of dials (max_retries 1: two dials), or a result not retried: done, not cut.
        assert!(matches!(
            decide_retry(&spec, CallResult::Busy, 2, at, false),
            (NextStep::Done, false)
        ));
        assert!(matches!(
            decide_retry(&spec, CallResult::Completed, 1, at, true),
            (NextStep::Done, false)
        ));
    }
}
