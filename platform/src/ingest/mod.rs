//! Cohort ingest: turns an uploaded CSV into users, in the background, streamed; and a JSON
//! stream's users, before the answer, by the same row rules.
//!
//! - [`worker`]: the queue and the worker ([`Processor`], [`start`], [`ensure_started`]).
//! - [`reader`]: reading one upload: the transformation, the CSV, the batch writer, the
//!   rejected records file.
//! - [`rows`]: the row rules, pure and shared by uploads and streams; [`rows::Admission`]
//!   adds the rule across rows (repeated numbers) and seals each user.
//! - [`dedup`]: the duplicate table.
//! - [`stream`]: a JSON stream's users through the same rules.
//!
//! # Queue and worker
//!
//! The queue is the database: every cohort in status `processing` that came from a file
//! upload, in upload order (`seq`). One worker per [`App`](crate::App) takes the head of the queue,
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
//! The sealed chunks are read back in order through
//! [`SealedFileReader`](crate::store::files::SealedFileReader) (one chunk in memory) and
//! parsed with the `csv` crate: a header row, then data rows; a UTF-8 byte-order mark is
//! skipped; quoted fields may hold commas, quotes (`""`) and line breaks; lines end
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
//! These rules live in [`rows`]; a JSON stream applies the same ones ([`stream`]).
//!
//! Accepted rows become `cohort_users` rows (keyed phone hash, sealed JSON), written in row
//! order in batches of [`BATCH_ROWS`] per transaction by a second thread while the first
//! parses on. The reader hands each batch over admitted (the users' JSON in one buffer) and
//! the writer seals it, unless the writer already has [`BATCHES_QUEUED`] waiting: then the
//! reader seals it itself rather than wait. Written batches come back to be filled again, so
//! neither thread allocates per row or frees what the other allocated. The cohort's lookup
//! entries, kept in memory as the rows are admitted, are sorted and written once, packed 48
//! to a row of `cohort_phone_blocks` in hash order, in the transaction that marks it
//! `completed`. These writes, and those of the upload's chunks, hold the writer's page cache
//! small ([`Store::append_blocking`](crate::store::Store::append_blocking)): they append
//! pages that are not read again.
//! Rejected rows go to the `rejected_records` file: the original header plus
//! `rejected_reason`, the original field values kept. Empty optional values are left out of
//! the user (no variable, no override, a null identifier).
//!
//! # Memory
//!
//! One file chunk, a few batches (each two buffers: the entries and the users' JSON or
//! sealed data, about 1.3 MB for 8,192 short rows), a small page cache of the writer, and
//! the duplicate table ([`dedup`]): the accepted rows' lookup entries (keyed phone hash and
//! row, 20 bytes each, written to `cohort_phone_blocks` at the end) and an open-addressing table
//! of 8-byte slots over them (a 32-bit fingerprint of the hash and the entry's position), at
//! most
//! [`DUPLICATE_LOAD`] full: about 30 to 40 bytes per accepted row (36 MiB for a million).
//! A fingerprint match is confirmed exactly against the full hash of the entry. Nothing
//! else grows with the file.

use crate::store::StoreError;
use crate::store::files::FileError;

pub(crate) mod dedup;
pub(crate) mod reader;
pub(crate) mod rows;
pub(crate) mod stream;
pub(crate) mod worker;

pub use rows::unknown_overrides_reason;
pub use worker::{Processor, ensure_started, start};

/// Accepted rows written per transaction.
pub const BATCH_ROWS: usize = 8192;
/// Bytes a batch reserves per row at first for the users' JSON or sealed data (a user of a
/// few short columns; the buffer grows for larger ones and is reused from batch to batch).
pub(crate) const BATCH_ROW_BYTES: usize = 160;
/// Full batches that wait for the writer while the reader parses on: they absorb the
/// writer's pauses (its commits and checkpoints) without holding much memory.
pub(crate) const BATCHES_QUEUED: usize = 1;
/// The most the duplicate table is filled before it doubles.
pub(crate) const DUPLICATE_LOAD: f64 = 0.8;
/// The largest transformation file read back (it was at most this size at upload).
pub(crate) const TRANSFORMATION_MAX_BYTES: u64 = 1 << 20;

/// Why processing a cohort failed in a way that may pass (the store, a task).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProcessError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored file could not be read or written.
    #[error(transparent)]
    File(#[from] FileError),
    /// A blocking task or the CSV layer failed.
    #[error("processing task failed: {0}")]
    Task(String),
}
