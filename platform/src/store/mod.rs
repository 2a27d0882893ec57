//! The SQLite store: one file per platform instance (WAL), migrations in code, one writer
//! connection and a few readers, every call off the async threads.
//!
//! One module per table (or a table and the few it owns):
//!
//! - [`campaigns`], [`deployments`]: rows of each resource.
//! - [`cohorts`], [`files`]: cohorts, their users, and their files as sealed chunks.
//! - [`calls`]: calls (the `attempts` table): instant outbound and campaign dials.
//! - [`campaign_users`]: the cohorts a campaign admitted and its users' states.
//! - [`statistics`]: the counts behind campaign statistics, and ended calls by result.
//! - [`deliveries`]: webhook deliveries.
//! - [`inbound`]: inbound calls.
//! - [`activity`]: a campaign's status actions and its dials per minute (the live page).
//! - [`workspace`]: the reset of one workspace (every row its clients made, at once).
//! - [`batch`]: the engine's transactions and bulk writes (the engine runs no SQL itself).
//! - [`bulk`]: many rows inserted with few statements.
//! - [`ids`]: where the seeded id generators stand, so a restart carries on.
//! - [`states`]: the stored states and kinds, with their one string form each.
//!
//! Instants are stored as Unix milliseconds.
//!
//! # Sealed data
//!
//! Values that identify people are sealed blobs (see [`crate::keys`]) and the store holds
//! no key. Its SQL functions move blobs sealed, as stored: user data, call payloads,
//! inbound details and webhook bodies come back sealed for the caller to open. Two modules
//! also open (and seal) with keys their caller passes in, and say so in their names:
//! [`cohorts`] opens a stored user ([`cohorts::open_user`], [`cohorts::open_phone_number`],
//! [`cohorts::StoredUser::open`]), and [`files`] seals and opens file chunks
//! ([`files::SealedFileWriter`], [`files::SealedFileReader`], [`files::open_chunk`],
//! [`files::read_whole`]). Nothing else in the store decrypts.

pub(crate) mod activity;
pub(crate) mod batch;
pub(crate) mod bulk;
pub(crate) mod calls;
pub(crate) mod campaign_users;
pub(crate) mod campaigns;
pub(crate) mod cohort_phones;
pub(crate) mod cohort_users;
pub mod cohorts;
pub(crate) mod deliveries;
pub(crate) mod deployments;
pub(crate) mod files;
pub(crate) mod ids;
pub(crate) mod inbound;
mod migrations;
pub(crate) mod states;
pub(crate) mod statistics;
pub(crate) mod workspace;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

/// An org and workspace: the unit of isolation and of keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceRef {
    /// The org id of the path.
    pub org_id: String,
    /// The workspace id of the path.
    pub workspace_id: String,
}

impl WorkspaceRef {
    /// An org and workspace.
    pub fn new(org_id: impl Into<String>, workspace_id: impl Into<String>) -> Self {
        WorkspaceRef {
            org_id: org_id.into(),
            workspace_id: workspace_id.into(),
        }
    }

    /// Whether this workspace, read as the pattern of an API key (`*` matches any org or
    /// workspace), takes in `ws`.
    pub(crate) fn takes_in(&self, ws: &WorkspaceRef) -> bool {
        pattern_opens(&self.org_id, &self.workspace_id, ws)
    }
}

/// Whether the pattern `org/workspace` of an API key (`*` matches any) takes in `ws`.
pub(crate) fn pattern_opens(org: &str, workspace: &str, ws: &WorkspaceRef) -> bool {
    (org == "*" || org == ws.org_id) && (workspace == "*" || workspace == ws.workspace_id)
}

impl fmt::Display for WorkspaceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.org_id, self.workspace_id)
    }
}

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Stored JSON did not read back.
    #[error("stored record is unreadable: {0}")]
    Corrupt(String),
    /// A blocking task was cancelled or panicked.
    #[error("store task failed: {0}")]
    Task(String),
}

/// A `data_keys` row: an encrypted data key of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataKeyRow {
    /// Its id; sealed blobs carry it.
    pub(crate) id: u32,
    /// `local` or `byok`.
    pub provider: String,
    /// The master-key alias that decrypts it.
    pub(crate) key_alias: String,
    /// The encrypted data key (`byok:v1:...`).
    pub(crate) encrypted_key: String,
    /// When it was added.
    pub(crate) created_at: DateTime<Utc>,
    /// A check value of the plaintext key (`crypto::key_check`), to recognise a wrong
    /// decryption; `None` for keys stored before check values existed.
    pub(crate) key_check: Option<Vec<u8>>,
}

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A file (created when missing), with `-wal` and `-shm` beside it.
    File(PathBuf),
    /// A private in-memory database that lives as long as the store.
    Memory,
}

struct Inner {
    writer: Mutex<Connection>,
    /// The writer's page cache size, MiB (see [`Tuning`]).
    writer_cache_mib: i64,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    location: StoreLocation,
}

/// The platform's database. Cheap to clone; all clones share the connections.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.inner.location)
            .finish()
    }
}

const READERS: usize = 4;

/// How a database's connections are set up.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    /// The writer's page cache, MiB: large, for the engine and cohort processing touch many
    /// pages per transaction.
    writer_cache_mib: i64,
    /// Each reader's page cache, MiB.
    reader_cache_mib: i64,
    /// SQLite's `synchronous`: `NORMAL` (in WAL mode a commit survives a crash of the
    /// process; only a power loss may lose the last ones) or `OFF` (nothing is flushed to
    /// the disk: for a file thrown away after the run).
    synchronous: &'static str,
    /// The page size of a database the store creates, bytes (one that exists keeps its own).
    page_size: i64,
}

/// [`Store::open`]'s.
const KEPT: Tuning = Tuning {
    writer_cache_mib: 32,
    reader_cache_mib: 8,
    synchronous: "NORMAL",
    page_size: 4_096,
};

/// [`Store::open_throwaway`]'s: a quarter of the caches (the 1,000,000-user run of
/// `scenarios/benches/million.toml` peaks 23 MB lower, and runs no slower), no flushes,
/// and pages of 16 KiB: a commit writes each changed page to the WAL with two system calls
/// and a checkpoint copies it back with one more, so larger pages make a quarter of the calls
/// for the same bytes (the attempts of a large run are appended, page after page).
const THROWAWAY: Tuning = Tuning {
    writer_cache_mib: 8,
    reader_cache_mib: 2,
    synchronous: "OFF",
    page_size: 16_384,
};
/// The writer's page cache while it appends pages that are not read again (an upload's
/// chunks, a cohort's users and lookup entries): see [`Store::append_blocking`].
const APPEND_CACHE_MIB: i64 = 4;
/// The WAL's length, in bytes, at which a commit copies it back into the database (SQLite's
/// default is 1,000 pages, 4 MiB of 4 KiB pages). At 32 MiB (8,192 pages of 4 KiB) the
/// engine's batches, which update the same users' pages again and again, copy each page
/// back once per 32 MiB of commits instead of once per 4 MiB: a campaign's writes cost about
/// 7 % less CPU and 13 % less time (`engine_campaign`); the WAL file keeps its largest size
/// on disk.
const WAL_CHECKPOINT_BYTES: i64 = 32 << 20;

fn configure(conn: &Connection, cache_mib: i64, synchronous: &str) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Page cache per connection (negative: KiB).
    conn.pragma_update(None, "cache_size", -cache_mib * 1024)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(64);
    // The query planner stability guarantee: plans do not depend on bound values. Without
    // it SQLite compiles a cached statement again each time a value is bound to a parameter
    // that could change its plan (the org and workspace ids, LIMIT and OFFSET), which cost
    // the list endpoints most of their throughput.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

impl Store {
    /// Opens (creating and migrating as needed) the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_tuned(path.as_ref(), KEPT)
    }

    /// Opens (creating) a database at `path` that is deleted after one run, as `harness
    /// run`'s temporary file is: smaller page caches, and nothing flushed to the disk (a
    /// crash of the machine may leave the file corrupt, which does not matter for a file
    /// nobody opens again).
    pub fn open_throwaway(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_tuned(path.as_ref(), THROWAWAY)
    }

    fn open_tuned(path: &Path, tuning: Tuning) -> Result<Store, StoreError> {
        let path = path.to_path_buf();
        let writer = Connection::open(&path)?;
        // Before anything is written: a new database takes it, an existing one ignores it.
        writer.pragma_update(None, "page_size", tuning.page_size)?;
        writer.pragma_update(None, "journal_mode", "WAL")?;
        configure(&writer, tuning.writer_cache_mib, tuning.synchronous)?;
        let page_size: i64 = writer.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        writer.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_BYTES / page_size)?;
        migrations::run(&writer)?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            // Read-write connections kept to reads by `query_only`: a read-only connection
            // to a WAL database may not map the shared wal-index and would rebuild it from the
            // whole WAL on every read.
            let r = Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | OpenFlags::SQLITE_OPEN_URI,
            )?;
            configure(&r, tuning.reader_cache_mib, tuning.synchronous)?;
            r.pragma_update(None, "query_only", "ON")?;
            readers.push(Mutex::new(r));
        }
        Ok(Store::from_parts(
            (writer, tuning.writer_cache_mib),
            readers,
            StoreLocation::File(path),
        ))
    }

    /// A fresh in-memory database (one connection; for tests and throwaway runs).
    pub(crate) fn in_memory() -> Result<Store, StoreError> {
        let writer = Connection::open_in_memory()?;
        configure(&writer, KEPT.writer_cache_mib, KEPT.synchronous)?;
        migrations::run(&writer)?;
        Ok(Store::from_parts(
            (writer, KEPT.writer_cache_mib),
            Vec::new(),
            StoreLocation::Memory,
        ))
    }

    fn from_parts(
        (writer, writer_cache_mib): (Connection, i64),
        readers: Vec<Mutex<Connection>>,
        location: StoreLocation,
    ) -> Store {
        Store {
            inner: Arc::new(Inner {
                writer: Mutex::new(writer),
                writer_cache_mib,
                readers,
                next_reader: AtomicUsize::new(0),
                location,
            }),
        }
    }

    /// Runs `f` on the writer connection, off the async threads.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut conn)
        })
        .await
        .map_err(|e| E::from(StoreError::Task(e.to_string())))?
    }

    /// Runs `f` on a reader connection (the writer for in-memory stores), off the async
    /// threads.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.read_blocking(f))
            .await
            .map_err(|e| E::from(StoreError::Task(e.to_string())))?
    }

    /// Runs a short read (well under a millisecond: a page of a list, one row) on a reader
    /// connection on the calling async thread, without the hop to the blocking pool. Longer
    /// reads use [`Store::read`].
    pub(crate) fn read_short<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.inner.read_blocking(f)
    }

    /// Runs `f` on the writer connection on the calling thread. For code that already runs
    /// off the async threads (the engine, background processing).
    pub fn write_blocking<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn)
    }

    /// Runs `f` on the writer connection on the calling thread, like
    /// [`Store::write_blocking`], with the writer's page cache held to [`APPEND_CACHE_MIB`]
    /// (its full size is restored after): for writes that append many pages not read again
    /// (a cohort upload's chunks, its users and lookup entries), so that they neither fill
    /// the writer's cache nor keep it filled with their pages.
    pub(crate) fn append_blocking<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        conn.pragma_update(None, "cache_size", -APPEND_CACHE_MIB * 1024)?;
        let out = f(&mut conn);
        // What `f` committed stays committed: a failure to restore the cache only costs
        // speed, so it is logged rather than reported as the append's failure.
        if let Err(e) = conn.pragma_update(None, "cache_size", -self.inner.writer_cache_mib * 1024)
        {
            tracing::warn!(error = %e, "could not restore the writer's page cache size");
        }
        out
    }

    /// The writer connection, held until the guard is dropped. For the engine, whose
    /// batches span several calls.
    pub(crate) fn writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.inner.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on a reader connection on the calling thread.
    pub fn read_blocking<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.inner.read_blocking(f)
    }

    /// Answers `Ok` when a reader connection answers a trivial query: the readiness probe.
    pub(crate) fn ping(&self) -> Result<(), StoreError> {
        self.read_short(|c| {
            c.query_row("SELECT 1", [], |_| Ok(()))?;
            Ok(())
        })
    }

    /// Writes the WAL back into the main file (for a clean shutdown or a file scan).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.write_blocking(|c| {
            if matches!(self.inner.location, StoreLocation::File(_)) {
                c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            }
            Ok(())
        })
    }

    /// The data keys of a workspace, oldest first.
    pub(crate) async fn data_keys(&self, ws: WorkspaceRef) -> Result<Vec<DataKeyRow>, StoreError> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, provider, key_alias, encrypted_key, created_at, key_check FROM data_keys
                 WHERE org_id = ?1 AND workspace_id = ?2 ORDER BY id",
            )?;
            let rows = stmt
                .query_map(params![ws.org_id, ws.workspace_id], |r| {
                    Ok(DataKeyRow {
                        id: r.get::<_, i64>(0)? as u32,
                        provider: r.get(1)?,
                        key_alias: r.get(2)?,
                        encrypted_key: r.get(3)?,
                        created_at: from_ms(r.get(4)?),
                        key_check: r.get(5)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
    }

    /// Adds a data key to a workspace; it becomes the active one.
    pub(crate) async fn insert_data_key(
        &self,
        ws: WorkspaceRef,
        provider: &'static str,
        key_alias: String,
        encrypted_key: String,
        key_check: Vec<u8>,
        now: DateTime<Utc>,
    ) -> Result<DataKeyRow, StoreError> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO data_keys (org_id, workspace_id, provider, key_alias, encrypted_key, created_at, key_check)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![ws.org_id, ws.workspace_id, provider, key_alias, encrypted_key, ms(now), key_check],
            )?;
            Ok(DataKeyRow {
                id: c.last_insert_rowid() as u32,
                provider: provider.to_string(),
                key_alias,
                encrypted_key,
                created_at: now,
                key_check: Some(key_check),
            })
        })
        .await
    }

    /// Records the check value of a data key stored before check values existed.
    pub(crate) async fn set_data_key_check(
        &self,
        id: u32,
        key_check: Vec<u8>,
    ) -> Result<(), StoreError> {
        self.write(move |c| {
            c.execute(
                "UPDATE data_keys SET key_check = ?2 WHERE id = ?1 AND key_check IS NULL",
                params![i64::from(id), key_check],
            )?;
            Ok(())
        })
        .await
    }
}

impl Inner {
    fn read_blocking<T, E>(&self, f: impl FnOnce(&Connection) -> Result<T, E>) -> Result<T, E> {
        if self.readers.is_empty() {
            let conn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
            return f(&conn);
        }
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        // Take the first free reader from a rotating start; wait on one if all are busy.
        for i in 0..n {
            if let Ok(conn) = self.readers[(start + i) % n].try_lock() {
                return f(&conn);
            }
        }
        let conn = self.readers[start % n]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        f(&conn)
    }
}

/// Unix milliseconds of an instant.
pub(crate) fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The instant of Unix milliseconds.
pub fn from_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Reads an optional row.
pub(crate) fn optional<T>(r: rusqlite::Result<T>) -> Result<Option<T>, StoreError> {
    Ok(r.optional()?)
}

/// Reads a JSON column into a type.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Writes a value as a JSON column.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("wire types serialise")
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern matching a substring.
pub(crate) fn like_substring(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// Helpers for the store's tests.
#[cfg(test)]
pub(crate) mod testing {
    use rusqlite::{Connection, Params, Row};

    /// Every row `sql` answers with `params`, each read by `f`.
    pub(crate) fn rows<T>(
        c: &Connection,
        sql: &str,
        params: impl Params,
        f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Vec<T> {
        c.prepare(sql)
            .unwrap()
            .query_map(params, f)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_store_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        let ws = WorkspaceRef::new("o", "w");
        let now = from_ms(1_772_000_000_000);
        {
            let s = Store::open(&path).unwrap();
            s.insert_data_key(
                ws.clone(),
                "local",
                "local".into(),
                "byok:v1:x".into(),
                vec![7; 16],
                now,
            )
            .await
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        let rows = s.data_keys(ws).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].encrypted_key, "byok:v1:x");
        assert_eq!(rows[0].created_at, now);
        assert_eq!(rows[0].key_check.as_deref(), Some(&[7u8; 16][..]));
    }

    #[tokio::test]
    async fn a_missing_key_check_is_filled_in_once() {
        let s = Store::in_memory().unwrap();
        let ws = WorkspaceRef::new("o", "w");
        let now = from_ms(1_772_000_000_000);
        let row = s
            .insert_data_key(
                ws.clone(),
                "local",
                "local".into(),
                "byok:v1:x".into(),
                vec![1],
                now,
            )
            .await
            .unwrap();
        s.write(move |c| {
            c.execute("UPDATE data_keys SET key_check = NULL", [])?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
        assert_eq!(s.data_keys(ws.clone()).await.unwrap()[0].key_check, None);
        s.set_data_key_check(row.id, vec![2]).await.unwrap();
        s.set_data_key_check(row.id, vec![3]).await.unwrap();
        assert_eq!(s.data_keys(ws).await.unwrap()[0].key_check, Some(vec![2]));
    }

    #[tokio::test]
    async fn list_statements_are_not_compiled_again_on_each_run() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path().join("p.db")).unwrap();
        let ws = WorkspaceRef::new("o", "w");
        let p = contracts::validate::deployment_list_query(&[]).unwrap();
        let reprepares = s
            .read(move |c| {
                for _ in 0..3 {
                    deployments::list(c, &ws, &p)?;
                }
                let cols = "d.id, d.org_id, d.workspace_id, d.status, d.spec, d.created_by, d.updated_by, d.created_ms, d.updated_ms";
                let stmt = c.prepare_cached(&format!(
                    "SELECT {cols} FROM deployments d WHERE d.org_id = ?1 AND d.workspace_id = ?2 AND ?3 IS NULL ORDER BY d.created_ms DESC, d.seq DESC LIMIT ?4 OFFSET ?5"
                ))?;
                Ok::<_, StoreError>(stmt.get_status(rusqlite::StatementStatus::RePrepare))
            })
            .await
            .unwrap();
        assert_eq!(reprepares, 0);
    }

    #[test]
    fn like_patterns_escape() {
        assert_eq!(like_substring("50%_a\\"), "%50\\%\\_a\\\\%");
    }
}
