//! The cohort worker: one per [`App`], it takes the oldest cohort still `processing`,
//! reads it (see [`super::reader`]), marks it `completed` or `failed`, and repeats; it
//! sleeps until woken when the queue is empty. Storage errors are retried a few times with
//! a backoff; a workspace whose key service is unavailable waits for it.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use contracts::clock::Stopwatch;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::ProcessError;
use super::reader::{self, Outcome};
use crate::app::App;
use crate::keys::{DataKeyRingError, KeyServiceError, WorkspaceKeys};
use crate::store::StoreError;
use crate::store::cohorts::{self, CohortRecord};

/// Failed attempts (storage errors) before a cohort is marked `failed`.
const MAX_ATTEMPTS: u32 = 3;

/// The cohort worker of an [`App`]: its wake-up signal, stop flag and task, and the uploads
/// being received (which the start-up clean-up must leave alone).
#[derive(Debug, Default)]
pub struct Processor {
    wake: Notify,
    pub(super) stop: AtomicBool,
    worker: Mutex<Option<JoinHandle<()>>>,
    receiving: Mutex<HashSet<String>>,
}

impl Processor {
    /// A processor with no worker yet (see [`start`]).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Tells the worker that a cohort is waiting.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Whether the worker was asked to stop.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Stops the worker after the batch it is writing, and waits for it. A cohort it was
    /// processing stays `processing` and is processed again from its start by the next
    /// worker. Uploads accepted afterwards wait, `processing`, until [`start`] is called
    /// (by this app or by the next one over the same database).
    pub async fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_one();
        let handle = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle
            && let Err(e) = h.await
        {
            tracing::error!(error = %e, "cohort worker failed");
        }
    }

    /// Records that the file of cohort `id` is being received.
    pub(crate) fn begin_receiving(&self, id: &str) {
        self.receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string());
    }

    /// Records that cohort `id` is no longer being received (accepted or abandoned).
    pub(crate) fn end_receiving(&self, id: &str) {
        self.receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    fn is_receiving(&self, id: &str) -> bool {
        self.receiving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id)
    }
}

/// Starts the app's cohort worker unless it runs already: it first deletes uploads left
/// unfinished by an earlier run, then processes every cohort still `processing`, oldest
/// first, and waits for more. Call it from within a Tokio runtime (the server calls it
/// before serving; uploads call it too).
pub fn start(app: &App) {
    let mut worker = app.cohorts.worker.lock().unwrap_or_else(|p| p.into_inner());
    if worker.as_ref().is_some_and(|h| !h.is_finished()) {
        return;
    }
    app.cohorts.stop.store(false, Ordering::Release);
    *worker = Some(tokio::spawn(run(app.clone())));
}

/// Starts the worker unless it runs or was shut down, then wakes it: what an accepted
/// upload calls.
pub fn ensure_started(app: &App) {
    if !app.cohorts.stopping() {
        start(app);
    }
    app.cohorts.wake();
}

enum Step {
    /// The cohort reached `completed` or `failed`, or was deleted meanwhile.
    Done,
    /// The worker was asked to stop; the cohort stays `processing`.
    Stopped,
    /// The workspace's keys are unavailable for now.
    RetryLater(String),
}

async fn run(app: App) {
    if let Err(e) = sweep_unfinished_uploads(&app).await {
        tracing::error!(error = %e, "could not delete unfinished uploads");
    }
    let mut attempts: HashMap<String, u32> = HashMap::new();
    let mut backoff = Duration::from_millis(500);
    while !app.cohorts.stopping() {
        let next = app.store.read(cohorts::next_pending).await;
        let job = match next {
            Ok(Some(job)) => job,
            Ok(None) => {
                app.cohorts.wake.notified().await;
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, "cohort queue unreadable");
                pause(&app, backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue;
            }
        };
        match process_one(&app, &job).await {
            Ok(Step::Done) => {
                attempts.remove(&job.id);
                backoff = Duration::from_millis(500);
            }
            Ok(Step::Stopped) => break,
            Ok(Step::RetryLater(why)) => {
                tracing::warn!(cohort = %job.id, %why, "cohort waits for its workspace's keys");
                pause(&app, backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
            Err(e) => {
                let n = attempts.entry(job.id.clone()).or_insert(0);
                *n += 1;
                tracing::error!(cohort = %job.id, attempt = *n, error = %e, "cohort processing failed");
                if *n >= MAX_ATTEMPTS {
                    attempts.remove(&job.id);
                    let reason = "processing failed because the platform's storage failed; \
                                  upload the file again"
                        .to_string();
                    if let Err(e) = finish_failed(&app, &job.id, reason).await {
                        tracing::error!(cohort = %job.id, error = %e, "could not mark the cohort failed");
                    }
                } else {
                    pause(&app, backoff).await;
                }
            }
        }
    }
}

/// Waits for `d`, or less when woken (a new upload, or a stop).
async fn pause(app: &App, d: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = app.cohorts.wake.notified() => {}
    }
}

/// Deletes cohorts still uploading that no request of this app is receiving: uploads cut
/// short by a stop, never answered.
async fn sweep_unfinished_uploads(app: &App) -> Result<(), StoreError> {
    let a = app.clone();
    let removed = app
        .store
        .write(move |c| {
            // Under the writer lock: an upload registers before it inserts its row, so every
            // row seen here belongs to a request registered by now, or to none.
            let mut removed = 0;
            for id in cohorts::uploading_ids(c)? {
                if !a.cohorts.is_receiving(&id) && cohorts::delete_uploading(c, &id)? {
                    removed += 1;
                }
            }
            Ok::<_, StoreError>(removed)
        })
        .await?;
    if removed > 0 {
        tracing::info!(removed, "deleted uploads left unfinished by an earlier run");
    }
    Ok(())
}

/// Marks cohort `id` failed for a reason of the platform's own (its storage, the key
/// service), which the client's upload is not judged for.
async fn finish_failed(app: &App, id: &str, reason: String) -> Result<(), StoreError> {
    app.journal.upload_unjudged(id);
    let now = app.clock.now();
    let id = id.to_string();
    app.store
        .write(move |c| {
            let tx = c.transaction()?;
            cohorts::mark_failed(&tx, &id, &reason, now)?;
            tx.commit()?;
            Ok(())
        })
        .await
}

async fn process_one(app: &App, job: &CohortRecord) -> Result<Step, ProcessError> {
    let keys = match app.keys.workspace(&job.ws, None).await {
        Ok(k) => k,
        Err(DataKeyRingError::Service(KeyServiceError::Unavailable(m))) => {
            return Ok(Step::RetryLater(m));
        }
        Err(DataKeyRingError::Service(KeyServiceError::Refused(m))) => {
            let reason = format!(
                "the key service that protects this workspace's data refused to give the key that opens the upload: {m}"
            );
            finish_failed(app, &job.id, reason).await?;
            return Ok(Step::Done);
        }
        Err(DataKeyRingError::Store(e)) => return Err(e.into()),
    };
    let (app2, job2) = (app.clone(), job.clone());
    tokio::task::spawn_blocking(move || process_blocking(&app2, &keys, &job2))
        .await
        .map_err(|e| ProcessError::Task(e.to_string()))?
}

/// Processes one cohort from its start, on a blocking thread.
fn process_blocking(
    app: &App,
    keys: &WorkspaceKeys,
    job: &CohortRecord,
) -> Result<Step, ProcessError> {
    let store = &app.store;
    store.write_blocking(|c| {
        let tx = c.transaction()?;
        cohorts::clear_results(&tx, &job.id)?;
        tx.commit()?;
        Ok(())
    })?;
    let watch = Stopwatch::start();
    let outcome = match reader::read_upload(app, keys, job) {
        Ok(o) => o,
        Err(e) => {
            if !store.read_blocking(|c| cohorts::is_processing(c, &job.id))? {
                Outcome::Vanished
            } else {
                return Err(e);
            }
        }
    };
    let read_ms = watch.elapsed_ms();
    let now = app.clock.now();
    match outcome {
        Outcome::Completed(result, mut phones) => {
            // The journal learns the fate before a client can read it.
            app.journal.upload_settled(&job.id, None);
            let watch = Stopwatch::start();
            store.append_blocking(|c| {
                let tx = c.transaction()?;
                cohorts::index_phones(&tx, &job.id, &mut phones)?;
                cohorts::mark_completed(&tx, &job.id, result, now)?;
                tx.commit()?;
                Ok(())
            })?;
            tracing::info!(cohort = %job.id, total = result.total_records, valid = result.valid_records,
                rejected = result.rejected_records, read_ms, index_ms = watch.elapsed_ms(), "cohort completed");
            // The engine admits its users.
            app.changes.bump();
            Ok(Step::Done)
        }
        Outcome::Failed(reason) => {
            // A file the platform could not use: the client's upload is judged for it,
            // before a client can read the cohort `failed`.
            app.journal.upload_settled(&job.id, Some(&reason));
            store.write_blocking(|c| {
                let tx = c.transaction()?;
                cohorts::mark_failed(&tx, &job.id, &reason, now)?;
                tx.commit()?;
                Ok(())
            })?;
            tracing::info!(cohort = %job.id, %reason, "cohort failed");
            Ok(Step::Done)
        }
        Outcome::Stopped => Ok(Step::Stopped),
        Outcome::Vanished => {
            app.journal.upload_unjudged(&job.id);
            tracing::info!(cohort = %job.id, "cohort deleted while it was processed");
            Ok(Step::Done)
        }
    }
}
