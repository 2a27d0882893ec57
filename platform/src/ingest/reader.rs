//! Reading one upload: the stored transformation file, then the sealed CSV chunk by chunk,
//! each row through the [row rules](super::rows), the accepted users written in batches by a
//! second thread while this one parses on, the rejected rows into the `rejected_records`
//! file.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TrySendError, channel, sync_channel};

use contracts::error::Loc;
use contracts::model::Transformation;
use contracts::validate::{self, Options};
use contracts::wire::{CohortFileType, CohortResult};
use csv::{ByteRecord, StringRecord};

use super::rows::{Admission, Columns, unknown_overrides_reason};
use super::{BATCH_ROW_BYTES, BATCH_ROWS, BATCHES_QUEUED, ProcessError, TRANSFORMATION_MAX_BYTES};
use crate::app::App;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{self, AdmittedUsers, CohortRecord, PhoneEntry, UserBatch};
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
        let (tx, rx) = sync_channel::<Batch>(BATCHES_QUEUED);
        let (spent_tx, spent) = channel::<Batch>();
        let sink = s.spawn(|| sink(store, keys, &job.id, rx, spent_tx));
        let mut batches = Batches {
            full: tx,
            spent,
            keys,
            cohort_id: &job.id,
            admitted: Vec::new(),
            sealed: Vec::new(),
        };
        let mut outcome = ctx.rows(&mut csv, &mut batches);
        // The writer ends once it has written the batches it holds.
        drop(batches);
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

/// The batch writer: seals each batch the reader did not seal, writes it in one
/// transaction, and hands it back for the reader to fill again.
fn sink(
    store: &Store,
    keys: &WorkspaceKeys,
    cohort_id: &str,
    rx: Receiver<Batch>,
    spent: Sender<Batch>,
) -> Result<(), StoreError> {
    let mut own = UserBatch::with_capacity(BATCH_ROWS, BATCH_ROW_BYTES);
    for batch in rx {
        let sealed = match &batch {
            Batch::Sealed(sealed) => sealed,
            Batch::Admitted(users) => {
                users.seal_into(keys, cohort_id, &mut own);
                &own
            }
        };
        store.append_blocking(|c| {
            let tx = c.transaction()?;
            cohorts::insert_users(&tx, cohort_id, sealed)?;
            tx.commit()?;
            Ok(())
        })?;
        // The reader may have finished: the batch is then simply dropped.
        let _ = spent.send(batch);
    }
    Ok(())
}

/// A full batch on its way to the store.
///
/// The sealing goes to whichever thread has time for it: the batch writer seals the
/// batches it receives admitted, and the reader seals a full batch itself when the writer
/// already has [`BATCHES_QUEUED`] waiting (it would only wait for room otherwise). On two
/// cores neither thread is then left idle while the other has work: which of the two is
/// the slower depends on the rows and on the disk.
enum Batch {
    /// Admitted users, their JSON in the open: the writer seals them.
    Admitted(AdmittedUsers),
    /// Users the reader sealed.
    Sealed(UserBatch),
}

/// The reader's ends of the two channels to the batch writer (full batches go out, written
/// ones come back), and the written ones it holds to fill again: a few batches' buffers
/// serve the whole upload.
struct Batches<'a> {
    full: SyncSender<Batch>,
    spent: Receiver<Batch>,
    keys: &'a WorkspaceKeys,
    cohort_id: &'a str,
    admitted: Vec<AdmittedUsers>,
    sealed: Vec<UserBatch>,
}

impl Batches<'_> {
    /// Takes back the batches the writer has written.
    fn take_spent(&mut self) {
        while let Ok(batch) = self.spent.try_recv() {
            match batch {
                Batch::Admitted(mut users) => {
                    users.clear();
                    self.admitted.push(users);
                }
                Batch::Sealed(mut users) => {
                    users.clear();
                    self.sealed.push(users);
                }
            }
        }
    }

    /// An empty batch to fill: a written one when the writer has handed one back.
    fn empty(&mut self) -> AdmittedUsers {
        self.take_spent();
        self.admitted
            .pop()
            .unwrap_or_else(|| AdmittedUsers::with_capacity(BATCH_ROWS, BATCH_ROW_BYTES))
    }

    /// Hands a full batch to the writer, sealing it first when the writer is behind.
    /// `false` when the writer has stopped (on an error, which the caller reports).
    fn send(&mut self, users: AdmittedUsers) -> bool {
        match self.offer(users) {
            Offered::Taken => true,
            Offered::Stopped => false,
            Offered::Full(sealed) => self.full.send(sealed).is_ok(),
        }
    }

    /// Offers a full batch to the writer without waiting: taken when there is room, sealed
    /// here when there is none (the writer is behind).
    fn offer(&mut self, users: AdmittedUsers) -> Offered {
        match self.full.try_send(Batch::Admitted(users)) {
            Ok(()) => Offered::Taken,
            Err(TrySendError::Disconnected(_)) => Offered::Stopped,
            Err(TrySendError::Full(Batch::Admitted(mut users))) => {
                self.take_spent();
                let mut sealed = self
                    .sealed
                    .pop()
                    .unwrap_or_else(|| UserBatch::with_capacity(BATCH_ROWS, BATCH_ROW_BYTES));
                users.seal_into(self.keys, self.cohort_id, &mut sealed);
                users.clear();
                self.admitted.push(users);
                Offered::Full(Batch::Sealed(sealed))
            }
            Err(TrySendError::Full(sealed)) => Offered::Full(sealed),
        }
    }
}

/// What became of a batch offered to the writer.
enum Offered {
    /// The writer's queue took it as it was.
    Taken,
    /// The writer has stopped.
    Stopped,
    /// The queue is full: the batch, sealed, still to send.
    Full(Batch),
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
    /// Reads the data rows, sending full batches to the writer.
    fn rows<R: io::Read>(
        &self,
        csv: &mut csv::Reader<R>,
        batches: &mut Batches<'_>,
    ) -> Result<Outcome, ProcessError> {
        let mut admission = Admission::new(self.keys);
        let mut batch = batches.empty();
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
                let full = std::mem::replace(&mut batch, batches.empty());
                if !batches.send(full) {
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
        if !batch.is_empty() && !batches.send(batch) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::DataKey;

    fn admitted(rows: &[u64]) -> AdmittedUsers {
        let mut users = AdmittedUsers::default();
        for &row in rows {
            users.push(row, [row as u8; 16], |out| {
                out.extend_from_slice(format!("{{\"row\":{row}}}").as_bytes())
            });
        }
        users
    }

    #[test]
    fn the_reader_leaves_sealing_to_the_writer_unless_the_writers_queue_is_full() {
        let keys = WorkspaceKeys::single(DataKey::new(1, &[3u8; 32]));
        let (full, rx) = sync_channel(1);
        let (spent_tx, spent) = channel();
        let mut batches = Batches {
            full,
            spent,
            keys: &keys,
            cohort_id: "coh-1",
            admitted: Vec::new(),
            sealed: Vec::new(),
        };
        // Room in the queue: the batch goes as admitted, for the writer to seal.
        assert!(matches!(batches.offer(admitted(&[1, 2])), Offered::Taken));
        // The queue is full: the reader seals the next one itself and keeps its buffer.
        let Offered::Full(Batch::Sealed(sealed)) = batches.offer(admitted(&[3, 4])) else {
            panic!("a full queue: the batch comes back sealed");
        };
        assert_eq!(
            batches.admitted.len(),
            1,
            "the admitted buffer is kept to refill"
        );
        assert!(batches.admitted[0].is_empty());
        let users: Vec<_> = sealed.iter().collect();
        assert_eq!(users.len(), 2);
        for (u, row) in users.iter().zip([3u64, 4]) {
            assert_eq!(u.row_no, row);
            assert_eq!(*u.phone_hash, [row as u8; 16]);
            let plain = keys
                .open(&cohorts::user_context("coh-1", row), u.data)
                .unwrap();
            assert_eq!(plain, format!("{{\"row\":{row}}}").as_bytes());
        }
        // The first batch reached the writer unsealed; written, it comes back to be reused.
        let Ok(Batch::Admitted(first)) = rx.try_recv() else {
            panic!("the first batch went to the writer as admitted");
        };
        assert_eq!(first.iter().map(|u| u.row_no).collect::<Vec<_>>(), [1, 2]);
        spent_tx.send(Batch::Admitted(first)).unwrap();
        spent_tx.send(Batch::Sealed(sealed)).unwrap();
        let reused = batches.empty();
        assert!(reused.is_empty());
        assert_eq!(
            batches.sealed.len(),
            1,
            "a written sealed buffer is kept to seal into"
        );
        assert!(batches.sealed[0].is_empty());
        // The writer stopped: the reader is told.
        drop(rx);
        assert!(matches!(batches.offer(admitted(&[5])), Offered::Stopped));
    }
}
