//! Cohort processing: turns an uploaded CSV into users, in the background, streamed.
//!
//! # Queue and worker
//!
//! The queue is the database: every cohort in status `processing` that came from a file
//! upload, in upload order (`seq`). One worker per [`App`] takes the head of the queue,
//! processes it, and repeats; it sleeps until [`Processor::wake`] when the queue is empty.
//! [`start`] starts the worker (idempotent); [`crate::server::serve`] calls it before
//! serving. Every accepted upload calls [`ensure_started`], so an app used without `serve`
//! (in-process tests, scenarios) still processes. [`Processor::shutdown`] stops the worker
//! between two batches; only [`start`] runs it again.
//!
//! Nothing answered with 200 is lost: the upload is answered only once its file is stored,
//! and a cohort that was `processing` when the platform stopped is processed again from its
//! start (its partial users and rejected file are deleted first) by the next worker. Uploads
//! that were still being received when the platform stopped were never answered; the worker
//! deletes them when it starts.
//!
//! # Reading a file
//!
//! The sealed chunks are read back in order through [`SealedFileReader`] (one chunk in
//! memory) and parsed with the `csv` crate: a header row, then data rows; a UTF-8 byte-order
//! mark is skipped; quoted fields may hold commas, quotes (`""`) and line breaks; lines end
//! in LF or CRLF; blank lines are skipped. Header names are matched after trimming spaces.
//!
//! The whole upload fails (status `failed`, `failure_reason`, no `result`) when the
//! transformation sets an override other than the three, a column it names is not in the
//! header, the file has no data row (or no header row), or a byte sequence is not UTF-8.
//! Otherwise each data row is accepted or rejected on its own, the rest going on:
//!
//! - the row has another number of fields than the header;
//! - the phone number is empty or does not normalise to E.164 with the config's
//!   `country_code` ([`contracts::domain::phone::normalize`]; the reason is its message);
//! - a `required` column is empty (only white space counts as empty);
//! - the phone number repeats an accepted row of the same cohort (the first one wins).
//!
//! Accepted rows become `cohort_users` rows (keyed phone hash, sealed JSON), written in row
//! order in batches of [`BATCH_ROWS`] per transaction by a second thread while the first
//! parses on; the cohort's lookup entries (`cohort_phones`) are written once, in hash order,
//! in the transaction that marks it `completed`.
//! Rejected rows go to the `rejected_records` file: the original header plus
//! `rejected_reason`, the original field values kept. Empty optional values are left out of
//! the user (no variable, no override, a null identifier).
//!
//! # Memory
//!
//! One file chunk, a few batches, and the duplicate table: an open-addressing table of
//! 8-byte slots (a 32-bit fingerprint of the keyed phone hash and the row number), at most
//! [`DUPLICATE_LOAD`] full, so about 10 to 20 bytes per accepted row (16 MiB for a million).
//! A fingerprint match is confirmed exactly against the full hash of the earlier row (held
//! for rows not yet committed, read by primary key otherwise). Nothing else grows with the
//! file.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use contracts::clock::Stopwatch;
use contracts::domain::phone::{self, E164};
use contracts::error::Loc;
use contracts::model::Transformation;
use contracts::validate::{self, Options};
use contracts::wire::{CohortFileType, CohortResult};
use csv::{ByteRecord, StringRecord};
use serde::Serialize;
use serde::ser::SerializeMap;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::keys::{DataKeyRingError, KeyServiceError, WorkspaceKeys};
use crate::store::cohorts::{self, CohortRecord, NewUser};
use crate::store::files::{self, FileError, SealedFileReader, SealedFileWriter};
use crate::store::{Store, StoreError};

/// Accepted rows written per transaction.
pub const BATCH_ROWS: usize = 8192;
/// The most the duplicate table is filled before it doubles.
pub const DUPLICATE_LOAD: f64 = 0.8;
/// The largest transformation file read back (it was at most this size at upload).
pub const TRANSFORMATION_MAX_BYTES: u64 = 1 << 20;
/// Failed attempts (storage errors) before a cohort is marked `failed`.
const MAX_ATTEMPTS: u32 = 3;

/// The cohort worker of an [`App`]: its wake-up signal, stop flag and task, and the uploads
/// being received (which the start-up clean-up must leave alone).
#[derive(Debug, Default)]
pub struct Processor {
    wake: Notify,
    stop: AtomicBool,
    worker: Mutex<Option<JoinHandle<()>>>,
    receiving: Mutex<HashSet<String>>,
}

impl Processor {
    /// A processor with no worker yet (see [`start`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells the worker that a cohort is waiting.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Whether the worker was asked to stop.
    pub fn stopping(&self) -> bool {
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

/// Resumes what a previous run left: an alias of [`start`], for readers looking for it.
pub fn resume_pending(app: &App) {
    start(app);
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

/// Why processing a cohort failed in a way that may pass (the store, a task).
#[derive(Debug, thiserror::Error)]
enum ProcessError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    File(#[from] FileError),
    #[error("processing task failed: {0}")]
    Task(String),
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
            Ok(removed)
        })
        .await?;
    if removed > 0 {
        tracing::info!(removed, "deleted uploads left unfinished by an earlier run");
    }
    Ok(())
}

async fn finish_failed(app: &App, id: &str, reason: String) -> Result<(), StoreError> {
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
    tokio::task::spawn_blocking(move || ingest(&app2, &keys, &job2))
        .await
        .map_err(|e| ProcessError::Task(e.to_string()))?
}

/// What reading an upload came to.
enum Ingest {
    Completed(CohortResult),
    Failed(String),
    Stopped,
    /// The cohort was deleted while it was read (its deployment was deleted).
    Vanished,
}

/// Processes one cohort from its start, on a blocking thread.
fn ingest(app: &App, keys: &WorkspaceKeys, job: &CohortRecord) -> Result<Step, ProcessError> {
    let store = &app.store;
    store.write_blocking(|c| {
        let tx = c.transaction()?;
        cohorts::clear_results(&tx, &job.id)?;
        tx.commit()?;
        Ok(())
    })?;
    let watch = Stopwatch::start();
    let outcome = match read_upload(app, keys, job) {
        Ok(o) => o,
        Err(e) => {
            if !store.read_blocking(|c| cohorts::is_processing(c, &job.id))? {
                Ingest::Vanished
            } else {
                return Err(e);
            }
        }
    };
    let read_ms = watch.elapsed_ms();
    let now = app.clock.now();
    match outcome {
        Ingest::Completed(result) => {
            let watch = Stopwatch::start();
            store.write_blocking(|c| {
                let tx = c.transaction()?;
                cohorts::index_phones(&tx, &job.id)?;
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
        Ingest::Failed(reason) => {
            store.write_blocking(|c| {
                let tx = c.transaction()?;
                cohorts::mark_failed(&tx, &job.id, &reason, now)?;
                tx.commit()?;
                Ok(())
            })?;
            tracing::info!(cohort = %job.id, %reason, "cohort failed");
            Ok(Step::Done)
        }
        Ingest::Stopped => Ok(Step::Stopped),
        Ingest::Vanished => {
            tracing::info!(cohort = %job.id, "cohort deleted while it was processed");
            Ok(Step::Done)
        }
    }
}

fn read_upload(
    app: &App,
    keys: &WorkspaceKeys,
    job: &CohortRecord,
) -> Result<Ingest, ProcessError> {
    let store = &app.store;
    let Some(tf) =
        store.read_blocking(|c| files::get(c, &job.id, CohortFileType::CohortTransformation))?
    else {
        return Ok(Ingest::Vanished);
    };
    if tf.size > TRANSFORMATION_MAX_BYTES {
        return Ok(Ingest::Failed(format!(
            "the transformation file is larger than {TRANSFORMATION_MAX_BYTES} bytes"
        )));
    }
    let raw = files::read_whole(store, keys, tf)?;
    let t = match parse_transformation(&raw) {
        Ok(t) => t,
        Err(reason) => return Ok(Ingest::Failed(reason)),
    };
    if !t.unknown_overrides.is_empty() {
        return Ok(Ingest::Failed(unknown_overrides_reason(
            &t.unknown_overrides,
        )));
    }
    let Some(file) = store.read_blocking(|c| files::get(c, &job.id, CohortFileType::Cohort))?
    else {
        return Ok(Ingest::Vanished);
    };
    let reader = SealedFileReader::new(store.clone(), keys.clone(), file);
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(256 * 1024)
        .from_reader(reader);
    let mut header = ByteRecord::new();
    if !next_record(&mut csv, &mut header)? {
        return Ok(Ingest::Failed(
            "the file is empty: it has no header row and no data row".into(),
        ));
    }
    let header = match StringRecord::from_byte_record(header) {
        Ok(h) => h,
        Err(e) => {
            let col = e.utf8_error().field() + 1;
            return Ok(Ingest::Failed(format!(
                "the file is not UTF-8: the header row (line 1) has bytes that are not UTF-8 in field {col}; save the file as UTF-8 and upload it again"
            )));
        }
    };
    let columns = match Columns::resolve(&t, &header) {
        Ok(c) => c,
        Err(reason) => return Ok(Ingest::Failed(reason)),
    };
    let ctx = RowsCtx {
        store,
        keys,
        cohort_id: &job.id,
        stop: &app.cohorts.stop,
        region: t.country_code.as_deref(),
        columns: &columns,
        header: &header,
    };
    let committed = AtomicU64::new(0);
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Batch>(2);
        let sink = s.spawn(|| sink(store, &job.id, rx, &committed));
        let outcome = ctx.rows(&mut csv, &tx, &committed);
        drop(tx);
        let sunk = sink
            .join()
            .unwrap_or_else(|_| Err(StoreError::Task("the batch writer panicked".into())));
        match (outcome, sunk) {
            (Ok(Ingest::Stopped), _) => Ok(Ingest::Stopped),
            (Ok(Ingest::Failed(r)), _) => Ok(Ingest::Failed(r)),
            (Ok(o), Ok(())) => Ok(o),
            (_, Err(e)) => Err(e.into()),
            (Err(e), Ok(())) => Err(e),
        }
    })
}

/// Reads the stored transformation config again (it was checked at upload).
fn parse_transformation(raw: &[u8]) -> Result<Transformation, String> {
    let value: serde_json::Value = serde_json::from_slice(raw)
        .map_err(|e| format!("the stored transformation file is not JSON: {e}"))?;
    validate::transformation_config(
        &value,
        &Loc::body().at("cohort_transformation_file"),
        Options::default(),
    )
    .map_err(|e| format!("the stored transformation file is not valid: {e}"))
}

/// The `failure_reason` for override keys outside the three.
pub fn unknown_overrides_reason(keys: &[String]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
    format!(
        "app_overrides of the transformation file has {} {}; the allowed keys are 'initial_bot_message', 'initial_state_name' and 'initial_language_name'",
        if keys.len() == 1 {
            "a key that is not an override:"
        } else {
            "keys that are not overrides:"
        },
        quoted.join(", ")
    )
}

fn next_record<R: io::Read>(
    csv: &mut csv::Reader<R>,
    rec: &mut ByteRecord,
) -> Result<bool, ProcessError> {
    match csv.read_byte_record(rec) {
        Ok(more) => Ok(more),
        Err(e) => match e.into_kind() {
            csv::ErrorKind::Io(io) => match io.into_inner().map(|b| b.downcast::<FileError>()) {
                Some(Ok(fe)) => Err(ProcessError::File(*fe)),
                Some(Err(other)) => Err(ProcessError::Task(other.to_string())),
                None => Err(ProcessError::Task("reading the stored file failed".into())),
            },
            // With byte records and flexible rows, csv reports nothing else; keep the
            // message should a later version do so.
            other => Err(ProcessError::Task(format!("CSV reader: {other:?}"))),
        },
    }
}

/// Where the transformation's columns are in the header.
struct Columns {
    width: usize,
    phone: (usize, String),
    user_identifier: Option<Column>,
    variables: Vec<(String, Column)>,
    overrides: Vec<(Override, usize)>,
}

struct Column {
    index: usize,
    name: String,
    required: bool,
}

#[derive(Clone, Copy)]
enum Override {
    BotMessage,
    StateName,
    LanguageName,
}

impl Columns {
    fn resolve(t: &Transformation, header: &StringRecord) -> Result<Columns, String> {
        let names: Vec<&str> = header.iter().map(|h| h.trim()).collect();
        let mut missing: Vec<String> = Vec::new();
        let mut find = |column: &str, role: &str| -> usize {
            match names.iter().position(|n| *n == column) {
                Some(i) => i,
                None => {
                    missing.push(format!("'{column}' ({role})"));
                    usize::MAX
                }
            }
        };
        let phone = find(&t.phone_column, "phone_number");
        let user_identifier = t.user_identifier.as_ref().map(|u| Column {
            index: find(&u.column, "user_identifier"),
            name: u.column.clone(),
            required: u.required,
        });
        let variables: Vec<(String, Column)> = t
            .app_variables
            .iter()
            .map(|(var, rule)| {
                (
                    var.clone(),
                    Column {
                        index: find(&rule.column, &format!("app_variables.{var}")),
                        name: rule.column.clone(),
                        required: rule.required,
                    },
                )
            })
            .collect();
        let overrides: Vec<(Override, usize)> = t
            .app_overrides
            .iter()
            .map(|(key, column)| {
                let o = match key.as_str() {
                    "initial_bot_message" => Override::BotMessage,
                    "initial_state_name" => Override::StateName,
                    _ => Override::LanguageName,
                };
                (o, find(column, &format!("app_overrides.{key}")))
            })
            .collect();
        if !missing.is_empty() {
            // The header's own names are not quoted: the reason is stored unencrypted, and in
            // a file without a header row the "header" is a user's data.
            let (noun, list) = match missing.split_last() {
                Some((last, [])) => ("column", last.clone()),
                Some((last, rest)) => ("columns", format!("{} and {last}", rest.join(", "))),
                None => unreachable!("missing is not empty"),
            };
            return Err(format!(
                "the header row ({} {}) lacks the {noun} {list} named by the transformation file; the first row of the file must name its columns, spelled exactly as in the transformation file",
                names.len(),
                if names.len() == 1 {
                    "column"
                } else {
                    "columns"
                }
            ));
        }
        Ok(Columns {
            width: header.len(),
            phone: (phone, t.phone_column.clone()),
            user_identifier,
            variables,
            overrides,
        })
    }
}

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// Serialises `(name, value)` pairs as a JSON object without building a map.
struct StrPairs<'a>(&'a [(&'a str, &'a str)]);

impl Serialize for StrPairs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The JSON of an accepted user, as sealed in `cohort_users.data` (the stored form of
/// [`cohorts::CohortUser`]), borrowing its values.
#[derive(Serialize)]
pub(crate) struct UserJson<'a, V: Serialize, O: Serialize> {
    pub phone_number: &'a str,
    pub user_identifier: Option<&'a str>,
    pub app_variables: V,
    pub app_overrides: O,
}

#[derive(Serialize, Default)]
struct OverridesRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_bot_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_state_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_language_name: Option<&'a str>,
}

/// Seals an accepted user for row `row_no` of `cohort_id`.
pub(crate) fn seal_user<V: Serialize, O: Serialize>(
    keys: &WorkspaceKeys,
    cohort_id: &str,
    row_no: u64,
    user: &UserJson<'_, V, O>,
    json: &mut Vec<u8>,
) -> Vec<u8> {
    json.clear();
    serde_json::to_writer(&mut *json, user).expect("user JSON serialises");
    keys.seal(&cohorts::user_context(cohort_id, row_no), json)
}

/// A row that passed the column checks (duplicates are checked next).
struct Accepted<'r> {
    phone: E164,
    user_identifier: Option<&'r str>,
    variables: Vec<(&'r str, &'r str)>,
    overrides: OverridesRef<'r>,
}

impl Columns {
    /// The checks of one row: the user's values, or every reason to reject it.
    fn check<'r>(
        &'r self,
        row: &'r StringRecord,
        region: Option<&str>,
    ) -> Result<Accepted<'r>, String> {
        if row.len() != self.width {
            return Err(format!(
                "the row has {} fields but the header has {}",
                row.len(),
                self.width
            ));
        }
        let mut reasons: Vec<String> = Vec::new();
        let raw_phone = &row[self.phone.0];
        let phone = if is_blank(raw_phone) {
            reasons.push(format!(
                "the phone number is empty (column '{}')",
                self.phone.1
            ));
            None
        } else {
            match phone::normalize(raw_phone, region) {
                Ok(p) => Some(p),
                Err(e) => {
                    reasons.push(e.to_string());
                    None
                }
            }
        };
        let mut user_identifier = None;
        if let Some(u) = &self.user_identifier {
            let v = &row[u.index];
            if is_blank(v) {
                if u.required {
                    reasons.push(format!(
                        "the required column '{}' (user_identifier) is empty",
                        u.name
                    ));
                }
            } else {
                user_identifier = Some(v);
            }
        }
        let mut variables = Vec::with_capacity(self.variables.len());
        for (var, col) in &self.variables {
            let v = &row[col.index];
            if is_blank(v) {
                if col.required {
                    reasons.push(format!(
                        "the required column '{}' (app_variables.{var}) is empty",
                        col.name
                    ));
                }
            } else {
                variables.push((var.as_str(), v));
            }
        }
        let mut overrides = OverridesRef::default();
        for (o, index) in &self.overrides {
            let v = &row[*index];
            if !is_blank(v) {
                match o {
                    Override::BotMessage => overrides.initial_bot_message = Some(v),
                    Override::StateName => overrides.initial_state_name = Some(v),
                    Override::LanguageName => overrides.initial_language_name = Some(v),
                }
            }
        }
        match phone {
            Some(phone) if reasons.is_empty() => Ok(Accepted {
                phone,
                user_identifier,
                variables,
                overrides,
            }),
            _ => Err(reasons.join("; ")),
        }
    }
}

/// A batch of accepted users for the writer thread.
struct Batch {
    no: u64,
    users: Vec<NewUser>,
}

/// Writes batches, one transaction each, and counts the batches committed.
fn sink(
    store: &Store,
    cohort_id: &str,
    rx: Receiver<Batch>,
    committed: &AtomicU64,
) -> Result<(), StoreError> {
    for batch in rx {
        store.write_blocking(|c| {
            let tx = c.transaction()?;
            cohorts::insert_users(&tx, cohort_id, &batch.users)?;
            tx.commit()?;
            Ok(())
        })?;
        committed.store(batch.no + 1, Ordering::Release);
    }
    Ok(())
}

struct RowsCtx<'a> {
    store: &'a Store,
    keys: &'a WorkspaceKeys,
    cohort_id: &'a str,
    stop: &'a AtomicBool,
    region: Option<&'a str>,
    columns: &'a Columns,
    header: &'a StringRecord,
}

impl RowsCtx<'_> {
    fn rows<R: io::Read>(
        &self,
        csv: &mut csv::Reader<R>,
        tx: &SyncSender<Batch>,
        committed: &AtomicU64,
    ) -> Result<Ingest, ProcessError> {
        let mut seen = SeenNumbers::new();
        let mut batch: Vec<NewUser> = Vec::with_capacity(BATCH_ROWS);
        let mut batch_no = 0u64;
        let mut rejected: Option<RejectedWriter> = None;
        let (mut total, mut valid, mut refused) = (0u64, 0u64, 0u64);
        let mut raw = ByteRecord::new();
        let mut json = Vec::with_capacity(256);
        while next_record(csv, &mut raw)? {
            if total == u64::from(u32::MAX) {
                return Ok(Ingest::Failed(format!(
                    "the file has more than {} data rows",
                    u32::MAX
                )));
            }
            total += 1;
            let row_no = total;
            let line = raw.position().map_or(0, |p| p.line());
            let row = match StringRecord::from_byte_record(std::mem::take(&mut raw)) {
                Ok(r) => r,
                Err(e) => {
                    let field = e.utf8_error().field() + 1;
                    return Ok(Ingest::Failed(format!(
                        "the file is not UTF-8: data row {row_no} (line {line}) has bytes that are not UTF-8 in field {field}; save the file as UTF-8 and upload it again"
                    )));
                }
            };
            let verdict = match self.columns.check(&row, self.region) {
                Err(reason) => Err(reason),
                Ok(Accepted {
                    phone,
                    user_identifier,
                    variables,
                    overrides,
                }) => {
                    let hash = self.keys.lookup_hash(phone.as_str());
                    match seen.first_row(&hash, &batch, committed, |row| {
                        self.store
                            .read_blocking(|c| cohorts::row_hash(c, self.cohort_id, row))
                    })? {
                        Some(first) => Err(format!(
                            "duplicate phone number: {} is already in data row {first}",
                            phone.as_str()
                        )),
                        None => {
                            seen.insert(&hash, row_no);
                            let user = UserJson {
                                phone_number: phone.as_str(),
                                user_identifier,
                                app_variables: StrPairs(&variables),
                                app_overrides: overrides,
                            };
                            let data =
                                seal_user(self.keys, self.cohort_id, row_no, &user, &mut json);
                            batch.push(NewUser {
                                row_no,
                                phone_hash: hash,
                                data,
                            });
                            Ok(())
                        }
                    }
                }
            };
            match verdict {
                Ok(()) => valid += 1,
                Err(reason) => {
                    refused += 1;
                    let w = match &mut rejected {
                        Some(w) => w,
                        None => rejected.insert(RejectedWriter::create(self, self.header)?),
                    };
                    w.write(&row, &reason)?;
                }
            }
            raw = row.into_byte_record();
            if batch.len() >= BATCH_ROWS {
                if self.stop.load(Ordering::Acquire) {
                    return Ok(Ingest::Stopped);
                }
                let users = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_ROWS));
                seen.batch_sent(batch_no, &users);
                if tx
                    .send(Batch {
                        no: batch_no,
                        users,
                    })
                    .is_err()
                {
                    // The writer stopped on an error; the caller reports it.
                    return Ok(Ingest::Vanished);
                }
                batch_no += 1;
            }
        }
        if total == 0 {
            return Ok(Ingest::Failed(
                "the file has a header row but no data row".into(),
            ));
        }
        if !batch.is_empty()
            && tx
                .send(Batch {
                    no: batch_no,
                    users: batch,
                })
                .is_err()
        {
            return Ok(Ingest::Vanished);
        }
        if let Some(w) = rejected {
            w.finish()?;
        }
        Ok(Ingest::Completed(CohortResult {
            total_records: total,
            valid_records: valid,
            rejected_records: refused,
        }))
    }
}

/// The `rejected_records` file being written: the original header plus `rejected_reason`.
struct RejectedWriter {
    csv: csv::Writer<SealedFileWriter>,
}

impl RejectedWriter {
    fn create(ctx: &RowsCtx<'_>, header: &StringRecord) -> Result<Self, ProcessError> {
        let file = SealedFileWriter::create(
            ctx.store.clone(),
            ctx.keys.clone(),
            ctx.cohort_id,
            CohortFileType::RejectedRecords,
        )?;
        let mut csv = csv::WriterBuilder::new()
            .flexible(true)
            .buffer_capacity(64 * 1024)
            .from_writer(file);
        let mut h: StringRecord = header.clone();
        h.push_field("rejected_reason");
        csv.write_record(&h).map_err(csv_write_error)?;
        Ok(RejectedWriter { csv })
    }

    fn write(&mut self, row: &StringRecord, reason: &str) -> Result<(), ProcessError> {
        for field in row.iter() {
            self.csv.write_field(field).map_err(csv_write_error)?;
        }
        self.csv.write_record([reason]).map_err(csv_write_error)
    }

    fn finish(self) -> Result<(), ProcessError> {
        let file = self
            .csv
            .into_inner()
            .map_err(|e| csv_write_error(csv::Error::from(e.into_error())))?;
        file.finish()?;
        Ok(())
    }
}

fn csv_write_error(e: csv::Error) -> ProcessError {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => match io.into_inner().map(|b| b.downcast::<FileError>()) {
            Some(Ok(fe)) => ProcessError::File(*fe),
            Some(Err(other)) => ProcessError::Task(other.to_string()),
            None => ProcessError::Task("writing the rejected records failed".into()),
        },
        other => ProcessError::Task(format!("CSV writer: {other:?}")),
    }
}

/// The accepted numbers of a cohort, for exact duplicate detection in 8 bytes per slot: an
/// open-addressing table (linear probing) of `fingerprint << 32 | row`, where the
/// fingerprint is 32 bits of the keyed phone hash whose top bits also choose the slot, and
/// row 0 marks a free slot. A fingerprint match is confirmed against the earlier row's full
/// hash: from the batch being built, from a batch sent but not yet committed (copies kept
/// until the writer commits them), or from the store.
struct SeenNumbers {
    slots: Vec<u64>,
    bits: u32,
    len: usize,
    in_flight: VecDeque<SentBatch>,
}

/// A batch sent to the writer: its number and the `(row, hash)` of its users, in row order.
type SentBatch = (u64, Vec<(u64, [u8; 16])>);

fn fingerprint(hash: &[u8; 16]) -> u32 {
    u32::from_le_bytes(hash[..4].try_into().expect("4 bytes"))
}

impl SeenNumbers {
    const START_BITS: u32 = 12;

    fn new() -> Self {
        SeenNumbers {
            slots: vec![0; 1 << Self::START_BITS],
            bits: Self::START_BITS,
            len: 0,
            in_flight: VecDeque::new(),
        }
    }

    fn home(fp: u32, bits: u32) -> usize {
        (fp as usize) >> (32 - bits)
    }

    /// The first accepted row with this number, if any. `current` is the batch being built
    /// (in row order); `committed` counts the batches the writer has committed; `stored`
    /// reads a committed row's hash.
    fn first_row(
        &mut self,
        hash: &[u8; 16],
        current: &[NewUser],
        committed: &AtomicU64,
        mut stored: impl FnMut(u64) -> Result<Option<[u8; 16]>, StoreError>,
    ) -> Result<Option<u64>, StoreError> {
        let fp = fingerprint(hash);
        let mask = self.slots.len() - 1;
        let mut i = Self::home(fp, self.bits);
        let done = committed.load(Ordering::Acquire);
        while self.in_flight.front().is_some_and(|(no, _)| *no < done) {
            self.in_flight.pop_front();
        }
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return Ok(None);
            }
            if (slot >> 32) as u32 == fp {
                let row = slot & 0xFFFF_FFFF;
                let earlier = match current.binary_search_by_key(&row, |u| u.row_no) {
                    Ok(k) => Some(current[k].phone_hash),
                    Err(_) => match self.in_flight.iter().find_map(|(_, rows)| {
                        rows.binary_search_by_key(&row, |(r, _)| *r)
                            .ok()
                            .map(|k| rows[k].1)
                    }) {
                        Some(h) => Some(h),
                        None => stored(row)?,
                    },
                };
                if earlier.as_ref() == Some(hash) {
                    return Ok(Some(row));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Records an accepted row (after [`SeenNumbers::first_row`] found none).
    fn insert(&mut self, hash: &[u8; 16], row_no: u64) {
        if (self.len + 1) as f64 > self.slots.len() as f64 * DUPLICATE_LOAD {
            self.grow();
        }
        Self::place(
            &mut self.slots,
            self.bits,
            u64::from(fingerprint(hash)) << 32 | row_no,
        );
        self.len += 1;
    }

    fn place(slots: &mut [u64], bits: u32, entry: u64) {
        let mask = slots.len() - 1;
        let mut i = Self::home((entry >> 32) as u32, bits);
        while slots[i] != 0 {
            i = (i + 1) & mask;
        }
        slots[i] = entry;
    }

    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mut slots = vec![0u64; 1 << bits];
        for &entry in self.slots.iter().filter(|e| **e != 0) {
            Self::place(&mut slots, bits, entry);
        }
        self.slots = slots;
        self.bits = bits;
    }

    /// The batch `no` went to the writer: keep its hashes until it is committed.
    fn batch_sent(&mut self, no: u64, users: &[NewUser]) {
        self.in_flight
            .push_back((no, users.iter().map(|u| (u.row_no, u.phone_hash)).collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u64) -> [u8; 16] {
        // Spread like a keyed hash.
        let mut out = [0u8; 16];
        let x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xDEAD_BEEF;
        let y = n.wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(17);
        out[..8].copy_from_slice(&x.to_le_bytes());
        out[8..].copy_from_slice(&y.to_le_bytes());
        out
    }

    fn user(row_no: u64, hash: [u8; 16]) -> NewUser {
        NewUser {
            row_no,
            phone_hash: hash,
            data: Vec::new(),
        }
    }

    #[test]
    fn the_table_finds_every_repeat_and_nothing_else() {
        let committed = AtomicU64::new(0);
        let mut s = SeenNumbers::new();
        let mut lookups = 0;
        // 100,000 numbers, all "committed": the store answers by row.
        let stored = |row: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(Some(h(row))) };
        for n in 1..=100_000 {
            assert_eq!(s.first_row(&h(n), &[], &committed, stored).unwrap(), None);
            s.insert(&h(n), n);
        }
        assert!(s.slots.len() as f64 * DUPLICATE_LOAD >= 100_000.0);
        assert!(
            s.slots.len() <= 1 << 18,
            "8 bytes a slot, at most {} slots",
            1 << 18
        );
        for n in (1..=100_000).step_by(997) {
            let found = s
                .first_row(&h(n), &[], &committed, |row| {
                    lookups += 1;
                    stored(row)
                })
                .unwrap();
            assert_eq!(found, Some(n));
        }
        for n in 200_000..210_000 {
            assert_eq!(s.first_row(&h(n), &[], &committed, stored).unwrap(), None);
        }
        assert!(lookups >= 101, "confirmed against the store");
    }

    #[test]
    fn a_fingerprint_match_is_confirmed_against_the_full_hash() {
        let committed = AtomicU64::new(0);
        let mut s = SeenNumbers::new();
        let a = h(1);
        let mut b = a;
        b[15] ^= 1; // same fingerprint, another number
        s.insert(&a, 1);
        let current = [user(1, a)];
        let none = |_: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(None) };
        assert_eq!(
            s.first_row(&a, &current, &committed, none).unwrap(),
            Some(1)
        );
        assert_eq!(s.first_row(&b, &current, &committed, none).unwrap(), None);
        s.insert(&b, 2);
        let current = [user(1, a), user(2, b)];
        assert_eq!(
            s.first_row(&b, &current, &committed, none).unwrap(),
            Some(2)
        );
    }

    #[test]
    fn rows_are_found_in_the_batch_in_flight_until_it_is_committed() {
        let committed = AtomicU64::new(0);
        let mut s = SeenNumbers::new();
        s.insert(&h(1), 1);
        s.batch_sent(0, &[user(1, h(1))]);
        let none = |_: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(None) };
        assert_eq!(
            s.first_row(&h(1), &[], &committed, none).unwrap(),
            Some(1),
            "in flight"
        );
        committed.store(1, Ordering::Release);
        assert_eq!(
            s.first_row(&h(1), &[], &committed, none).unwrap(),
            None,
            "committed: only the store knows it now"
        );
        assert!(s.in_flight.is_empty());
        let stored = |_: u64| -> Result<Option<[u8; 16]>, StoreError> { Ok(Some(h(1))) };
        assert_eq!(
            s.first_row(&h(1), &[], &committed, stored).unwrap(),
            Some(1)
        );
    }

    #[test]
    fn unknown_override_reasons_name_the_keys() {
        assert_eq!(
            unknown_overrides_reason(&["voice".into()]),
            "app_overrides of the transformation file has a key that is not an override: 'voice'; the allowed keys are 'initial_bot_message', 'initial_state_name' and 'initial_language_name'"
        );
        assert!(
            unknown_overrides_reason(&["a".into(), "b".into()])
                .contains("keys that are not overrides: 'a', 'b'")
        );
    }
}
