//! The writes of one batch of events ([`WriteBatch`]), collected while its events run and
//! made at once in one transaction; the thread that makes them is `batch.rs`.

use std::cmp::Ordering;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rustc_hash::{FxHashMap, FxHashSet};

use super::Id;
use super::dialing::CallResult;
use crate::store::StoreError;
use crate::store::batch::{self as store_batch, Connection, UserUpdate};
use crate::store::campaign_users::UserRef;
use crate::store::deliveries::Delivery;
use crate::store::states::CallStatus;
use crate::store::{activity, calls, campaigns, deliveries, statistics};

/// The writes of one batch: collected while its events run ([`State::pending`](super::state::State::pending)), then
/// detached from the engine's memory (`State::take_writes`) and made at once, in one
/// transaction ([`WriteBatch::apply`]).
#[derive(Debug, Default)]
pub(super) struct WriteBatch {
    /// Calls dialled in this batch whose rows are not written yet. Their rows are the
    /// engine's record of the calls in progress, copied into `calling` when the batch is
    /// detached (a call that ends within the batch goes to `ended_calls` instead).
    pub(super) dialled: FxHashSet<Id>,
    /// Calls dialled in this batch and still in progress at its end: inserted `calling`.
    pub(super) calling: Vec<calls::Call>,
    /// Calls dialled and ended in this batch, with their result: inserted ended.
    pub(super) ended_calls: Vec<(calls::Call, &'static str)>,
    /// Calls of earlier batches that ended in this one: (attempt, result, end).
    pub(super) call_ends: Vec<(Id, &'static str, DateTime<Utc>)>,
    /// Webhook deliveries queued in this batch, with their due time.
    pub(super) deliveries: Vec<(Delivery, DateTime<Utc>)>,
    /// Ended attempts of this batch by (campaign, result). Hash maps, not ordered ones: an
    /// ordered map's search compared the campaign's id text at each of its steps, at every
    /// call's end; a hash map's lookup compares it once. [`WriteBatch::apply`] sorts them.
    pub(super) results: FxHashMap<(Id, CallResult), u64>,
    /// The same by (campaign, minute dialled, result): the campaign's chart.
    pub(super) dial_minutes: FxHashMap<(Id, i64, CallResult), u64>,
    /// The latest state of each user changed in this batch, by (campaign, queue order).
    pub(super) users: FxHashMap<(Id, i64), UserUpdate>,
    /// The pacing and routing of each run that changed, as stored ([`RunState`](super::state::RunState)).
    pub(super) run_states: Vec<(Id, String)>,
}

/// Orders two ids as texts, without comparing the texts of one id shared twice (a batch's
/// users and counts are nearly all of one campaign).
fn cmp_ids(a: &Id, b: &Id) -> Ordering {
    if Arc::ptr_eq(a, b) {
        Ordering::Equal
    } else {
        a.cmp(b)
    }
}

impl WriteBatch {
    /// Whether there is nothing to write.
    pub(super) fn is_empty(&self) -> bool {
        self.dialled.is_empty()
            && self.calling.is_empty()
            && self.ended_calls.is_empty()
            && self.call_ends.is_empty()
            && self.deliveries.is_empty()
            && self.results.is_empty()
            && self.dial_minutes.is_empty()
            && self.users.is_empty()
            && self.run_states.is_empty()
    }

    /// Makes the writes on `c` (inside the caller's transaction), each kind with one
    /// prepared statement, rows in key order (neighbouring rows share B-tree pages). The
    /// batch is only read, so that whoever holds it chooses where its memory is freed.
    pub(super) fn apply(&self, c: &Connection) -> Result<(), StoreError> {
        let mut rows: Vec<(&calls::Call, CallStatus, Option<&str>)> = self
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
        calls::insert_calls(c, &rows)?;
        let mut call_ends: Vec<_> = self.call_ends.iter().collect();
        call_ends.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        store_batch::end_calls(
            c,
            call_ends
                .into_iter()
                .map(|(id, result, at)| (&**id, *result, *at)),
        )?;
        for (d, at) in &self.deliveries {
            deliveries::insert_delivery(c, d, *at)?;
        }
        let mut results: Vec<_> = self.results.iter().collect();
        results.sort_unstable_by(|((a, ar), _), ((b, br), _)| {
            cmp_ids(a, b).then_with(|| ar.as_str().cmp(br.as_str()))
        });
        for ((campaign_id, result), n) in results {
            statistics::count_results(c, campaign_id, result.as_str(), *n)?;
        }
        let mut minutes: Vec<_> = self.dial_minutes.iter().collect();
        minutes.sort_unstable_by(|((a, am, ar), _), ((b, bm, br), _)| {
            cmp_ids(a, b)
                .then(am.cmp(bm))
                .then_with(|| ar.as_str().cmp(br.as_str()))
        });
        for ((campaign_id, minute, result), n) in minutes {
            activity::count_dials(c, campaign_id, *minute, result.as_str(), *n)?;
        }
        let mut users: Vec<_> = self.users.iter().collect();
        users.sort_unstable_by(|((a, aq), _), ((b, bq), _)| cmp_ids(a, b).then(aq.cmp(bq)));
        store_batch::set_users(
            c,
            users.iter().map(|((campaign_id, queue_seq), w)| {
                (
                    UserRef {
                        campaign_id,
                        queue_seq: *queue_seq,
                    },
                    **w,
                )
            }),
        )?;
        for (id, state) in &self.run_states {
            campaigns::set_engine_state(c, id, state)?;
        }
        Ok(())
    }
}
