//! Files of cohorts (the uploaded CSV, the transformation config, the rejected records),
//! stored as numbered chunks so that no file is ever held whole in memory.
//!
//! A file is a `files` row (`cohort_id`, `kind` = the wire [`CohortFileType`], plaintext
//! `size`, number of `chunks`, `complete` once every chunk is written) and its `file_chunks`
//! rows. Every chunk holds at most [`CHUNK_SIZE`] bytes of plaintext and is a sealed blob
//! bound to [`chunk_context`] (`files/{file_id}/{seq}`): a chunk moved to another file or
//! position does not open. Deleting a cohort deletes its files and chunks (foreign-key
//! cascades).
//!
//! The SQL functions move sealed bytes only. [`SealedFileWriter`] and [`SealedFileReader`]
//! add a workspace's keys, for code that runs off the async threads (cohort processing,
//! downloads).

use std::io::{self, Read, Write};

use contracts::wire::CohortFileType;
use rusqlite::{Connection, params};

use super::{Store, StoreError, optional};
use crate::keys::{CryptoError, WorkspaceKeys};

/// Plaintext bytes per chunk: 1 MiB.
pub(crate) const CHUNK_SIZE: usize = 1 << 20;

/// A `files` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileRow {
    /// Its id; chunk contexts carry it.
    pub(crate) id: i64,
    /// Plaintext bytes in all.
    pub(crate) size: u64,
    /// Number of chunks (`0..chunks`).
    pub(crate) chunks: u32,
    /// Whether every chunk has been written.
    pub(crate) complete: bool,
}

/// The context a chunk is sealed for.
pub(crate) fn chunk_context(file_id: i64, seq: u32) -> String {
    format!("files/{file_id}/{seq}")
}

/// Creates an empty, incomplete file of a cohort. A cohort has at most one file per kind.
pub(crate) fn create(
    c: &Connection,
    cohort_id: &str,
    kind: CohortFileType,
) -> Result<i64, StoreError> {
    c.prepare_cached("INSERT INTO files (cohort_id, kind) VALUES (?1, ?2)")?
        .execute(params![cohort_id, kind.as_str()])?;
    Ok(c.last_insert_rowid())
}

/// Stores chunk `seq` (sealed) of a file.
pub(crate) fn put_chunk(
    c: &Connection,
    file_id: i64,
    seq: u32,
    sealed: &[u8],
) -> Result<(), StoreError> {
    c.prepare_cached("INSERT INTO file_chunks (file_id, seq, data) VALUES (?1, ?2, ?3)")?
        .execute(params![file_id, seq, sealed])?;
    Ok(())
}

/// Marks a file complete with its plaintext size and chunk count.
pub(crate) fn finish(
    c: &Connection,
    file_id: i64,
    size: u64,
    chunks: u32,
) -> Result<(), StoreError> {
    c.prepare_cached("UPDATE files SET size = ?2, chunks = ?3, complete = 1 WHERE id = ?1")?
        .execute(params![file_id, size as i64, chunks])?;
    Ok(())
}

/// The file of a kind of a cohort, complete or not.
pub(crate) fn get(
    c: &Connection,
    cohort_id: &str,
    kind: CohortFileType,
) -> Result<Option<FileRow>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, size, chunks, complete FROM files WHERE cohort_id = ?1 AND kind = ?2",
    )?;
    optional(stmt.query_row(params![cohort_id, kind.as_str()], |r| {
        Ok(FileRow {
            id: r.get(0)?,
            size: r.get::<_, i64>(1)? as u64,
            chunks: r.get(2)?,
            complete: r.get(3)?,
        })
    }))
}

/// A sealed chunk.
pub(crate) fn chunk(c: &Connection, file_id: i64, seq: u32) -> Result<Option<Vec<u8>>, StoreError> {
    let mut stmt =
        c.prepare_cached("SELECT data FROM file_chunks WHERE file_id = ?1 AND seq = ?2")?;
    optional(stmt.query_row(params![file_id, seq], |r| r.get(0)))
}

/// Deletes the file of a kind of a cohort and its chunks. Answers whether there was one.
pub(crate) fn delete(
    c: &Connection,
    cohort_id: &str,
    kind: CohortFileType,
) -> Result<bool, StoreError> {
    let n = c
        .prepare_cached("DELETE FROM files WHERE cohort_id = ?1 AND kind = ?2")?
        .execute(params![cohort_id, kind.as_str()])?;
    Ok(n > 0)
}

/// Why a sealed file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A chunk did not open (altered, moved, or its key is gone).
    #[error("file chunk: {0}")]
    Crypto(#[from] CryptoError),
    /// A chunk the file row counts is not there (the file was deleted while read).
    #[error("file {file_id} has no chunk {seq}; it was deleted or is incomplete")]
    Missing {
        /// The file.
        file_id: i64,
        /// The chunk.
        seq: u32,
    },
}

impl From<FileError> for io::Error {
    fn from(e: FileError) -> Self {
        io::Error::other(e)
    }
}

/// Reads and opens chunk `seq` of a file.
pub(crate) fn open_chunk(
    store: &Store,
    keys: &WorkspaceKeys,
    file_id: i64,
    seq: u32,
) -> Result<Vec<u8>, FileError> {
    let sealed = store
        .read_blocking(|c| chunk(c, file_id, seq))?
        .ok_or(FileError::Missing { file_id, seq })?;
    Ok(keys.open(&chunk_context(file_id, seq), &sealed)?)
}

/// Reads a sealed file in order, one chunk in memory at a time. Blocking: for threads off the
/// async runtime.
pub(crate) struct SealedFileReader {
    store: Store,
    keys: WorkspaceKeys,
    file: FileRow,
    next: u32,
    buf: Vec<u8>,
    pos: usize,
}

impl SealedFileReader {
    /// A reader of `file` from its start.
    pub(crate) fn new(store: Store, keys: WorkspaceKeys, file: FileRow) -> Self {
        SealedFileReader {
            store,
            keys,
            file,
            next: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

/// Reads a whole sealed file into memory. For files known to be small (a transformation
/// config); callers check [`FileRow::size`] first.
pub(crate) fn read_whole(
    store: &Store,
    keys: &WorkspaceKeys,
    file: FileRow,
) -> Result<Vec<u8>, FileError> {
    let mut out = Vec::with_capacity(file.size as usize);
    for seq in 0..file.chunks {
        out.extend_from_slice(&open_chunk(store, keys, file.id, seq)?);
    }
    Ok(out)
}

impl Read for SealedFileReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.next >= self.file.chunks {
                return Ok(0);
            }
            self.buf = open_chunk(&self.store, &self.keys, self.file.id, self.next)?;
            self.next += 1;
            self.pos = 0;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Writes a new sealed file chunk by chunk: at most one chunk of plaintext is buffered, and
/// each full chunk is sealed and stored in its own short transaction. Blocking: for threads
/// off the async runtime. [`SealedFileWriter::finish`] stores the last chunk and marks the
/// file complete; a writer dropped before that leaves an incomplete file for its owner to
/// delete.
pub(crate) struct SealedFileWriter {
    store: Store,
    keys: WorkspaceKeys,
    file_id: i64,
    buf: Vec<u8>,
    seq: u32,
    size: u64,
}

impl SealedFileWriter {
    /// Creates the file row (kind `kind` of `cohort_id`) and a writer for it.
    pub(crate) fn create(
        store: Store,
        keys: WorkspaceKeys,
        cohort_id: &str,
        kind: CohortFileType,
    ) -> Result<Self, StoreError> {
        let file_id = store.write_blocking(|c| create(c, cohort_id, kind))?;
        Ok(SealedFileWriter {
            store,
            keys,
            file_id,
            buf: Vec::with_capacity(CHUNK_SIZE),
            seq: 0,
            size: 0,
        })
    }

    fn flush_chunk(&mut self) -> Result<(), FileError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let sealed = self
            .keys
            .seal(&chunk_context(self.file_id, self.seq), &self.buf);
        let (id, seq) = (self.file_id, self.seq);
        self.store
            .write_blocking(|c| put_chunk(c, id, seq, &sealed))?;
        self.size += self.buf.len() as u64;
        self.seq += 1;
        self.buf.clear();
        Ok(())
    }

    /// Stores what is buffered and marks the file complete. Answers the finished row.
    pub(crate) fn finish(mut self) -> Result<FileRow, FileError> {
        self.flush_chunk()?;
        let (id, size, chunks) = (self.file_id, self.size, self.seq);
        self.store.write_blocking(|c| finish(c, id, size, chunks))?;
        Ok(FileRow {
            id,
            size,
            chunks,
            complete: true,
        })
    }
}

impl Write for SealedFileWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = CHUNK_SIZE - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK_SIZE {
            self.flush_chunk()?;
        }
        Ok(n)
    }

    /// Chunks are stored when full or at [`SealedFileWriter::finish`]; a flush stores
    /// nothing early, so that every chunk but the last is exactly [`CHUNK_SIZE`] bytes.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
