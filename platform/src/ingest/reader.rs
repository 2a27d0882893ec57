//! Reading one upload: the stored transformation file, then the sealed CSV chunk by chunk,
//! each row through the [row rules](super::rows), the accepted users written in batches by a
//! second thread while this one parses on, the rejected rows into the `rejected_records`
//! file.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use contracts::error::Loc;
use contracts::model::Transformation;
use contracts::validate::{self, Options};
use contracts::wire::{CohortFileType, CohortResult};
use csv::{ByteRecord, StringRecord};

use super::rows::{Admission, Columns, unknown_overrides_reason};
use super::{BATCH_ROWS, ProcessError, TRANSFORMATION_MAX_BYTES};
use crate::app::App;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{self, CohortRecord, NewUser, PhoneEntry};
use crate::store::files::{self, FileError, SealedFileReader, SealedFileWriter};
use crate::store::{Store, StoreError};

/// What reading an upload came to.
pub(super) enum Outcome {
    /// Every row was read: the counts, and the lookup entries of the accepted users (in
    /// hash order once [`read_upload`] returns).
    Completed(CohortResult, Vec<PhoneEntry>),
    /// The whole upload fails, for this `failure_reason`.
    Failed(String),
    /// The worker was asked to stop.
    Stopped,
    /// The cohort was deleted while it was read (its parent was deleted).
    Vanished,
}

/// Reads the upload of `job` from its start, on a blocking thread.
pub(super) fn read_upload(
    app: &App,
    keys: &WorkspaceKeys,
    job: &CohortRecord,
) -> Result<Outcome, ProcessError> {
    let store = &app.store;
    let Some(tf) =
        store.read_blocking(|c| files::get(c, &job.id, CohortFileType::CohortTransformation))?
    else {
        return Ok(Outcome::Vanished);
    };
    if tf.size > TRANSFORMATION_MAX_BYTES {
        return Ok(Outcome::Failed(format!(
            "the transformation file is larger than {TRANSFORMATION_MAX_BYTES} bytes"
        )));
    }
    let raw = files::read_whole(store, keys, tf)?;
    let t = match parse_transformation(&raw) {
        Ok(t) => t,
        Err(reason) => return Ok(Outcome::Failed(reason)),
    };
    if !t.unknown_overrides.is_empty() {
        return Ok(Outcome::Failed(unknown_overrides_reason(
            &t.unknown_overrides,
        )));
    }
    let Some(file) = store.read_blocking(|c| files::get(c, &job.id, CohortFileType::Cohort))?
    else {
        return Ok(Outcome::Vanished);
    };
    let reader = SealedFileReader::new(store.clone(), keys.clone(), file);
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(256 * 1024)
        .from_reader(reader);
    let mut header = ByteRecord::new();
    if !next_record(&mut csv, &mut header)? {
        return Ok(Outcome::Failed(
            "the file is empty: it has no header row and no data row".into(),
        ));
    }
    let header = match StringRecord::from_byte_record(header) {
        Ok(h) => h,
        Err(e) => {
            let col = e.utf8_error().field() + 1;
            return Ok(Outcome::Failed(format!(
                "the file is not UTF-8: the header row (line 1) has bytes that are not UTF-8 in field {col}; save the file as UTF-8 and upload it again"
            )));
        }
    };
    let columns = match Columns::resolve(&t, &header) {
        Ok(c) => c,
        Err(reason) => return Ok(Outcome::Failed(reason)),
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
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Vec<NewUser>>(2);
        let sink = s.spawn(|| sink(store, &job.id, rx));
        let mut outcome = ctx.rows(&mut csv, &tx);
        drop(tx);
        // Sorted into the order the index writes them while the writer stores the last
        // batches, not after, when nothing else runs.
        if let Ok(Outcome::Completed(_, phones)) = &mut outcome {
            phones.sort_unstable();
        }
        let sunk = sink
            .join()
            .unwrap_or_else(|_| Err(StoreError::Task("the batch writer panicked".into())));
        match (outcome, sunk) {
            (Ok(Outcome::Stopped), _) => Ok(Outcome::Stopped),
            (Ok(Outcome::Failed(r)), _) => Ok(Outcome::Failed(r)),
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

/// Writes batches of accepted users, one transaction each.
fn sink(store: &Store, cohort_id: &str, rx: Receiver<Vec<NewUser>>) -> Result<(), StoreError> {
    for users in rx {
        store.append_blocking(|c| {
            let tx = c.transaction()?;
            cohorts::insert_users(&tx, cohort_id, &users)?;
            tx.commit()?;
            Ok(())
        })?;
    }
    Ok(())
}

/// What reading the data rows of one upload needs.
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
    /// Reads the data rows, sending full batches to the writer through `tx`.
    fn rows<R: io::Read>(
        &self,
        csv: &mut csv::Reader<R>,
        tx: &SyncSender<Vec<NewUser>>,
    ) -> Result<Outcome, ProcessError> {
        let mut admission = Admission::new(self.keys, self.cohort_id);
        let mut batch: Vec<NewUser> = Vec::with_capacity(BATCH_ROWS);
        let mut rejected: Option<RejectedWriter> = None;
        let (mut total, mut valid, mut refused) = (0u64, 0u64, 0u64);
        let mut raw = ByteRecord::new();
        while next_record(csv, &mut raw)? {
            if total == u64::from(u32::MAX) {
                return Ok(Outcome::Failed(format!(
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
                    return Ok(Outcome::Failed(format!(
                        "the file is not UTF-8: data row {row_no} (line {line}) has bytes that are not UTF-8 in field {field}; save the file as UTF-8 and upload it again"
                    )));
                }
            };
            let verdict = match self.columns.check(&row, self.region) {
                Err(reason) => Err(reason),
                Ok(user) => admission.admit(row_no, &user, &mut batch),
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
                    return Ok(Outcome::Stopped);
                }
                let users = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_ROWS));
                if tx.send(users).is_err() {
                    // The writer stopped on an error; the caller reports it.
                    return Ok(Outcome::Vanished);
                }
            }
        }
        if total == 0 {
            return Ok(Outcome::Failed(
                "the file has a header row but no data row".into(),
            ));
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            return Ok(Outcome::Vanished);
        }
        if let Some(w) = rejected {
            w.finish()?;
        }
        Ok(Outcome::Completed(
            CohortResult {
                total_records: total,
                valid_records: valid,
                rejected_records: refused,
            },
            admission.into_phones(),
        ))
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
