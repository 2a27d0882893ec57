//! The writes of one batch of events, and the thread that makes them.
//!
//! Events change the engine's memory at once and the database at the end of their batch
//! ([`WriteBatch`], in `writes.rs`): a call that begins and ends within one batch is written once, a user's
//! row once however often it changed. A batch whose events never needed the database (they
//! only dial and end calls) hands its writes to a writer thread, which makes them in a
//! transaction of their own while the engine computes the next batch; the first event that
//! needs the database waits for those writes and opens the batch's transaction
//! ([`BatchDb`]). Reading what the engine never changes (the users' sealed data, read ahead
//! of the dials) does not count: it goes to a reader connection ([`BatchDb::read`]). The SQL
//! is the store's (`store::batch`).

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

impl WriteBatch {
    /// Makes the writes in a transaction of their own on a thread of their own, then frees
    /// the batch on another ([`free_elsewhere`]): the engine waits for the writer before it
    /// hands over the next batch, and need not wait for the freeing too.
    fn spawn(self, store: Store) -> WriteJob {
        std::thread::Builder::new()
            .name("engine-writer".into())
            .spawn(move || {
                let written = store.transaction_blocking(|c| self.apply(c));
                free_elsewhere(self);
                written
            })
            .expect("a thread for the engine's writes")
    }
}

/// Frees a written batch on a short-lived thread of its own (on this one when no thread can
/// be had). A batch of 32,768 events holds tens of thousands of calls, each with its id and
/// the shared texts it counts references to: freeing them took about a tenth of the
/// writer's time in the 1,000,000-user run (README, Benchmarks).
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

/// A batch's writes in progress on another thread.
pub(super) type WriteJob = std::thread::JoinHandle<Result<(), StoreError>>;

/// Waits for the writes in progress, if any.
pub(super) fn join(job: &mut Option<WriteJob>) -> Result<(), StoreError> {
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
/// A batch that fails keeps nothing (the transaction is rolled back when dropped).
pub(super) struct BatchDb<'a> {
    store: &'a Store,
    job: &'a mut Option<WriteJob>,
    tx: Option<BatchTx<'a>>,
}

impl<'a> BatchDb<'a> {
    pub(super) fn new(store: &'a Store, job: &'a mut Option<WriteJob>) -> Self {
        BatchDb {
            store,
            job,
            tx: None,
        }
    }

    /// The writer connection, inside the batch's transaction.
    pub(super) fn conn(&mut self) -> Result<&Connection, StoreError> {
        if self.tx.is_none() {
            join(self.job)?;
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
    /// handed to a writer thread (after the previous one finished).
    pub(super) fn finish(mut self, writes: WriteBatch) -> Result<(), StoreError> {
        match self.tx.take() {
            Some(tx) => {
                writes.apply(tx.conn())?;
                tx.commit()
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
