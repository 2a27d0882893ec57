//! The writes of one batch of events, and the thread that makes them.
//!
//! Events change the engine's memory at once and the database at the end of their batch
//! ([`WriteBatch`], in `writes.rs`): a call that begins and ends within one batch is written once, a user's
//! row once however often it changed. A batch whose events never needed the database (they
//! only dial and end calls) hands its writes to a writer thread, which makes them in a
//! transaction of their own while the engine computes the next batches (two batches' writes
//! at most in progress, made in order: [`Writes`]); the first event that needs the database
//! waits for those writes and opens the batch's transaction ([`BatchDb`]). Reading what the
//! engine never changes (the users' sealed data, read ahead of the dials) does not count: it
//! goes to a reader connection ([`BatchDb::read`]). The SQL is the store's (`store::batch`).

use std::collections::VecDeque;
use std::sync::mpsc::Receiver;

use chrono::{DateTime, Utc};

use super::state::{RunState, State};
use super::writes::WriteBatch;
use super::{Engine, dialing};
use crate::keys::WorkspaceKeys;
use crate::store::batch::{BatchTx, Connection};
use crate::store::deliveries;
use crate::store::deliveries::Delivery;
use crate::store::states::DeliveryKind;
use crate::store::{Store, StoreError, WorkspaceRef};

/// Frees a written batch on a short-lived thread of its own (on this one when no thread can
/// be had). A batch of 32,768 events holds tens of thousands of calls, each with its id and
/// the shared texts it counts references to: freeing them took about 8 % of the writer's
/// time in the 1,000,000-user run (README, Benchmarks).
fn free_elsewhere(batch: WriteBatch) {
    // When no thread can be had, the closure is dropped here, and the batch with it.
    let _ = std::thread::Builder::new()
        .name("engine-free".into())
        .spawn(move || drop(batch));
}

impl State {
    /// Detaches the pending writes; with `runs`, also the pacing and routing of every run
    /// that changed.
    pub(super) fn take_writes(&mut self, runs: bool) -> WriteBatch {
        let mut batch = std::mem::take(&mut self.pending);
        batch.calling = batch
            .dialled
            .drain()
            .filter_map(|id| self.inflight.get(&id).cloned())
            .collect();
        if runs {
            for run in self.runs.values_mut() {
                if run.dirty {
                    let state = RunState {
                        pacing: run.pacing,
                        routing: run.routing.clone(),
                    };
                    batch.run_states.push((
                        run.id.clone(),
                        serde_json::to_string(&state).expect("state serialises"),
                    ));
                    run.dirty = false;
                }
            }
        }
        batch
    }

    /// Makes the pending writes now, on `c` (mid-batch, before the batch reads what they
    /// change).
    pub(super) fn flush(&mut self, c: &Connection) -> Result<(), StoreError> {
        self.take_writes(false).apply(c)
    }
}

/// How many batches' writes may be in progress at once. With one, the engine waited for the
/// writer after every batch, and the writer for the engine, whenever one batch took either
/// of them longer than the last; with two, each can run a batch ahead of the other (7 % off
/// the 1,000,000-user run's time, README, Benchmarks). Each batch waiting to be written
/// holds its calls and users in memory.
const WRITES_AHEAD: usize = 2;

/// The batches' writes in progress, each in a transaction of its own on a thread of its
/// own, made in the order the batches ran: each writer waits for the one before it, and a
/// batch whose predecessor failed writes nothing (the step fails, and the engine starts
/// again from the database). At most [`WRITES_AHEAD`] at once.
#[derive(Default)]
pub(super) struct Writes {
    jobs: VecDeque<WriteJob>,
    /// Told by the last writer whether its writes were made.
    last: Option<Receiver<bool>>,
}

/// A batch's writes in progress on another thread.
type WriteJob = std::thread::JoinHandle<Result<(), StoreError>>;

impl Writes {
    /// Waits for every write in progress; the first failure, if any.
    pub(super) fn join(&mut self) -> Result<(), StoreError> {
        self.last = None;
        let mut result = Ok(());
        while let Some(job) = self.jobs.pop_front() {
            let done = wait(job);
            if result.is_ok() {
                result = done;
            }
        }
        result
    }

    /// Hands a batch's writes to a writer thread, after the oldest in progress finished
    /// when [`WRITES_AHEAD`] are.
    fn push(&mut self, batch: WriteBatch, store: Store) -> Result<(), StoreError> {
        if self.jobs.len() >= WRITES_AHEAD {
            let oldest = self.jobs.pop_front().expect("more than none");
            if let Err(e) = wait(oldest) {
                let _ = self.join();
                return Err(e);
            }
        }
        let (tell, told) = std::sync::mpsc::channel();
        let before = self.last.replace(told);
        let job = std::thread::Builder::new()
            .name("engine-writer".into())
            .spawn(move || {
                // A writer that failed or panicked sends `false` or nothing.
                if before.is_some_and(|b| b.recv() != Ok(true)) {
                    return Err(StoreError::Task(
                        "the writes of an earlier batch failed".into(),
                    ));
                }
                let written = store.transaction_blocking(|c| batch.apply(c));
                let _ = tell.send(written.is_ok());
                free_elsewhere(batch);
                written
            })
            .expect("a thread for the engine's writes");
        self.jobs.push_back(job);
        Ok(())
    }
}

/// Waits for one batch's writes.
fn wait(job: WriteJob) -> Result<(), StoreError> {
    job.join()
        .unwrap_or_else(|_| Err(StoreError::Task("the engine's writer panicked".into())))
}

/// The database as one batch of events sees it. Events that only dial and end calls never
/// touch it (their writes are buffered), so such a batch's writes can be made on another
/// thread while the next batch is computed. The first event that needs the database waits
/// for the writes in progress and opens the batch's transaction on the writer connection.
/// A batch that fails keeps nothing (the transaction is rolled back when dropped).
pub(super) struct BatchDb<'a> {
    store: &'a Store,
    writes: &'a mut Writes,
    tx: Option<BatchTx<'a>>,
}

impl<'a> BatchDb<'a> {
    pub(super) fn new(store: &'a Store, writes: &'a mut Writes) -> Self {
        BatchDb {
            store,
            writes,
            tx: None,
        }
    }

    /// The writer connection, inside the batch's transaction.
    pub(super) fn conn(&mut self) -> Result<&Connection, StoreError> {
        if self.tx.is_none() {
            self.writes.join()?;
            self.tx = Some(BatchTx::begin(self.store)?);
        }
        Ok(self.tx.as_ref().expect("just opened").conn())
    }

    /// Runs a read of what the engine never changes (a campaign's cohort users, stored
    /// once their upload completed) inside the batch's transaction when one is open, else on
    /// a reader connection: a read alone does not open the transaction, so the batch's
    /// writes can still be made on the writer thread while the next batch is computed.
    pub(super) fn read<T>(
        &mut self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &self.tx {
            Some(tx) => f(tx.conn()),
            None => self.store.read_blocking(f),
        }
    }

    /// Ends the batch: its writes are committed with the transaction when one is open, else
    /// handed to a writer thread ([`Writes`]).
    pub(super) fn finish(mut self, writes: WriteBatch) -> Result<(), StoreError> {
        match self.tx.take() {
            Some(tx) => {
                writes.apply(tx.conn())?;
                tx.commit()
            }
            None if writes.is_empty() => Ok(()),
            None => self.writes.push(writes, self.store.clone()),
        }
    }
}

impl Engine {
    /// Queues a webhook delivery in the batch: `body` sealed with the workspace's keys, due
    /// at `at`, its id derived from the seed and its subject (so a replay keeps it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue_webhook(
        &self,
        pending: &mut WriteBatch,
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
            &deliveries::delivery_context(&id),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch that counts one ended attempt of campaign `campaign`.
    fn batch(campaign: &str) -> WriteBatch {
        let mut b = WriteBatch::default();
        b.results
            .insert((campaign.into(), super::dialing::CallResult::Completed), 1);
        b
    }

    /// A store that logs the campaign of each count in the order written, and refuses `boom`.
    fn store() -> Store {
        let store = Store::in_memory().unwrap();
        store
            .transaction_blocking(|c| {
                c.execute_batch(
                    "CREATE TABLE written (campaign TEXT);
                     CREATE TRIGGER log AFTER INSERT ON campaign_results BEGIN
                         INSERT INTO written VALUES (NEW.campaign_id);
                     END;
                     CREATE TRIGGER refuse BEFORE INSERT ON campaign_results
                     WHEN NEW.campaign_id = 'boom' BEGIN SELECT RAISE(ABORT, 'refused'); END;",
                )?;
                Ok(())
            })
            .unwrap();
        store
    }

    fn written(store: &Store) -> Vec<String> {
        store
            .read_blocking(|c| {
                let mut s = c.prepare("SELECT campaign FROM written ORDER BY rowid")?;
                let rows = s.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<Result<Vec<String>, _>>()?)
            })
            .unwrap()
    }

    #[test]
    fn batches_are_written_in_the_order_they_ran_with_at_most_two_in_progress() {
        let store = store();
        let mut writes = Writes::default();
        let names = ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"];
        for name in names {
            writes.push(batch(name), store.clone()).unwrap();
            assert!(writes.jobs.len() <= WRITES_AHEAD);
        }
        writes.join().unwrap();
        assert!(writes.jobs.is_empty());
        assert_eq!(written(&store), names);
    }

    #[test]
    fn after_a_failed_batch_nothing_more_is_written_and_the_failure_is_answered() {
        let store = store();
        let mut writes = Writes::default();
        writes.push(batch("r0"), store.clone()).unwrap();
        writes.push(batch("boom"), store.clone()).unwrap();
        // The third waits for the first; the second may fail before or after.
        let third = writes.push(batch("r2"), store.clone());
        let joined = writes.join();
        let err = third.and(joined).unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        assert_eq!(written(&store), ["r0"], "nothing after the failed batch");
        // The next step starts afresh.
        writes.push(batch("r3"), store.clone()).unwrap();
        writes.join().unwrap();
        assert_eq!(written(&store), ["r0", "r3"]);
    }
}
