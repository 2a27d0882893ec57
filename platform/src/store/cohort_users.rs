//! The users of cohorts (`cohort_users`): stored one row per accepted row of
//! an upload (or user of a stream), in row order, with a keyed hash of the E.164 number and
//! the user as a sealed JSON blob bound to [`user_context`]. The cohort rows themselves are in
//! [`super::cohorts`], which re-exports this module's items.
//!
//! Opens sealed data: [`StoredUser::open`], [`open_user`] and [`open_phone_number`] decrypt a
//! user with the workspace's keys.

use std::fmt::Write as _;

use contracts::wire::{AppOverrides, JsonObject};
use rusqlite::{Connection, Row, params};
use serde::{Deserialize, Serialize};

use super::{StoreError, WorkspaceRef, bulk, cohort_phones, optional};
use crate::keys::{CryptoError, WorkspaceKeys};

/// Users of a cohort in the order they were added, each with its row, the keyed hash of its
/// number and its data, the data of all in one buffer: a batch costs its two buffers however
/// many users it holds, and nothing once it is cleared and filled again. What
/// [`AdmittedUsers`] and [`UserBatch`] hold, and read through. Its `Debug` shows counts
/// only: admitted users' data is their JSON in the open.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Packed {
    entries: Vec<PackedEntry>,
    data: Vec<u8>,
}

/// Where one user of a [`Packed`] batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PackedEntry {
    row_no: u64,
    phone_hash: [u8; 16],
    /// Its data: `data[start..end]` of the batch.
    start: usize,
    end: usize,
}

impl Packed {
    fn with_capacity(users: usize, bytes_each: usize) -> Self {
        Packed {
            entries: Vec::with_capacity(users),
            data: Vec::with_capacity(users * bytes_each),
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.data.clear();
    }

    fn push(&mut self, row_no: u64, phone_hash: [u8; 16], write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.data.len();
        write(&mut self.data);
        self.entries.push(PackedEntry {
            row_no,
            phone_hash,
            start,
            end: self.data.len(),
        });
    }

    fn view<'a>(&'a self, e: &'a PackedEntry) -> NewUser<'a> {
        NewUser {
            row_no: e.row_no,
            phone_hash: &e.phone_hash,
            data: &self.data[e.start..e.end],
        }
    }

    /// Its users, in the order they were added.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = NewUser<'_>> + '_ {
        self.entries.iter().map(|e| self.view(e))
    }

    /// How many users it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no user.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Reads a batch's users through [`Packed`].
macro_rules! packed_users {
    ($batch:ty) => {
        impl std::ops::Deref for $batch {
            type Target = Packed;

            fn deref(&self) -> &Packed {
                &self.0
            }
        }

        impl $batch {
            /// An empty batch with room for `users` users of about `bytes_each` bytes each.
            pub fn with_capacity(users: usize, bytes_each: usize) -> Self {
                Self(Packed::with_capacity(users, bytes_each))
            }

            /// Empties it, keeping its buffers for the next users.
            pub fn clear(&mut self) {
                self.0.clear();
            }
        }
    };
}
packed_users!(AdmittedUsers);
packed_users!(UserBatch);

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed")
            .field("users", &self.entries.len())
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// One user of an [`AdmittedUsers`] or a [`UserBatch`]. Its `Debug` leaves the data out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NewUser<'a> {
    /// Its row: the data row of the upload (1 = the first row after the header) or the
    /// position in a stream (1 = the first user).
    pub row_no: u64,
    /// [`WorkspaceKeys::lookup_hash`] of the E.164 number.
    pub phone_hash: &'a [u8; 16],
    /// Its [`CohortUser`] JSON: in the open in [`AdmittedUsers`], sealed (bound to
    /// [`user_context`]) in a [`UserBatch`].
    pub data: &'a [u8],
}

impl std::fmt::Debug for NewUser<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewUser")
            .field("row_no", &self.row_no)
            .field("data_bytes", &self.data.len())
            .finish_non_exhaustive()
    }
}

/// Users the row rules admitted, their JSON not sealed yet: [`AdmittedUsers::seal_into`]
/// seals them for storing. An upload's reader fills these and its batch writer seals them,
/// so that the two threads share the work; the writer hands each batch back to be filled
/// again, and neither thread frees what the other allocated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdmittedUsers(Packed);

impl AdmittedUsers {
    /// Adds the user of row `row_no`: `write` appends its JSON to the buffer it is given.
    pub(crate) fn push(
        &mut self,
        row_no: u64,
        phone_hash: [u8; 16],
        write: impl FnOnce(&mut Vec<u8>),
    ) {
        self.0.push(row_no, phone_hash, write);
    }

    /// Seals every user for its row of cohort `cohort_id` into `out`, which is emptied first
    /// (and keeps its buffers: a batch writer seals every batch into the same one).
    pub fn seal_into(&self, keys: &WorkspaceKeys, cohort_id: &str, out: &mut UserBatch) {
        out.0.clear();
        let mut context = String::with_capacity(64);
        for u in self.iter() {
            write_user_context(&mut context, cohort_id, u.row_no);
            out.0.push(u.row_no, *u.phone_hash, |buf| {
                keys.seal_append(&context, u.data, buf)
            });
        }
    }

    /// The users sealed for cohort `cohort_id`.
    pub fn seal(&self, keys: &WorkspaceKeys, cohort_id: &str) -> UserBatch {
        let mut out = UserBatch::default();
        self.seal_into(keys, cohort_id, &mut out);
        out
    }
}

/// Users of a cohort sealed and ready to store ([`insert_users`]), in row order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserBatch(Packed);

/// Inserts users of a cohort, [`bulk::ROWS_PER_STATEMENT`] a statement. Callers batch many
/// per transaction.
pub fn insert_users(c: &Connection, cohort_id: &str, users: &UserBatch) -> Result<(), StoreError> {
    bulk::insert_rows(
        c,
        "cohort_users",
        &["cohort_id", "row_no", "phone_hash", "data"],
        &users.0.entries,
        |s, i, e| {
            s.raw_bind_parameter(i, cohort_id)?;
            s.raw_bind_parameter(i + 1, e.row_no as i64)?;
            s.raw_bind_parameter(i + 2, &e.phone_hash[..])?;
            s.raw_bind_parameter(i + 3, &users.0.data[e.start..e.end])
        },
    )
}

/// The context a user's sealed data is bound to.
pub fn user_context(cohort_id: &str, row_no: u64) -> String {
    let mut out = String::new();
    write_user_context(&mut out, cohort_id, row_no);
    out
}

/// [`user_context`] into `out` (cleared first): for callers that seal many users.
fn write_user_context(out: &mut String, cohort_id: &str, row_no: u64) {
    out.clear();
    out.push_str("cohort_users/");
    out.push_str(cohort_id);
    out.push('/');
    let _ = write!(out, "{row_no}"); // writing to a String cannot fail
}

/// A user as stored: sealed. Open it with [`StoredUser::open`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredUser {
    /// Its cohort.
    pub cohort_id: String,
    /// Its row in the cohort (see [`NewUser::row_no`]).
    pub row_no: u64,
    /// The keyed hash of its number.
    pub(crate) phone_hash: [u8; 16],
    /// The sealed [`CohortUser`] JSON.
    pub data: Vec<u8>,
}

/// A user of a cohort, opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CohortUser {
    /// Its row in the cohort.
    #[serde(skip)]
    pub row_no: u64,
    /// The number to call or to recognise, E.164.
    pub phone_number: String,
    /// The user's identifier, when the cohort has one for this user.
    pub user_identifier: Option<String>,
    /// Agent variables (strings from CSV columns; any JSON from a stream).
    pub app_variables: JsonObject,
    /// Agent overrides (left out of the sealed JSON when there are none).
    #[serde(default)]
    pub app_overrides: AppOverrides,
}

/// Why a stored user could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum UserDataError {
    /// The blob does not open with the workspace's keys.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    /// It opened but is not a user record.
    #[error("cohort user {cohort_id}/{row_no} is unreadable: {message}")]
    Corrupt {
        /// Its cohort.
        cohort_id: String,
        /// Its row.
        row_no: u64,
        /// What is wrong.
        message: String,
    },
}

impl StoredUser {
    /// Opens the user with its workspace's keys.
    pub fn open(&self, keys: &WorkspaceKeys) -> Result<CohortUser, UserDataError> {
        open_user(keys, &self.cohort_id, self.row_no, &self.data)
    }
}

/// Opens the sealed data of row `row_no` of a cohort.
pub fn open_user(
    keys: &WorkspaceKeys,
    cohort_id: &str,
    row_no: u64,
    data: &[u8],
) -> Result<CohortUser, UserDataError> {
    let plain = keys.open(&user_context(cohort_id, row_no), data)?;
    let mut user: CohortUser =
        serde_json::from_slice(&plain).map_err(|e| UserDataError::Corrupt {
            cohort_id: cohort_id.to_string(),
            row_no,
            message: e.to_string(),
        })?;
    user.row_no = row_no;
    Ok(user)
}

/// Opens only the number of row `row_no` of a cohort: what a dial needs. The rest of the
/// record is checked to be JSON but not built.
pub fn open_phone_number(
    keys: &WorkspaceKeys,
    cohort_id: &str,
    row_no: u64,
    data: &[u8],
) -> Result<String, UserDataError> {
    #[derive(serde::Deserialize)]
    struct PhoneOnly {
        phone_number: String,
    }
    let plain = keys.open(&user_context(cohort_id, row_no), data)?;
    let user: PhoneOnly = serde_json::from_slice(&plain).map_err(|e| UserDataError::Corrupt {
        cohort_id: cohort_id.to_string(),
        row_no,
        message: e.to_string(),
    })?;
    Ok(user.phone_number)
}

fn read_user(r: &Row<'_>) -> rusqlite::Result<StoredUser> {
    let hash: Vec<u8> = r.get(2)?;
    let mut phone_hash = [0u8; 16];
    if hash.len() == 16 {
        phone_hash.copy_from_slice(&hash);
    }
    Ok(StoredUser {
        cohort_id: r.get(0)?,
        row_no: r.get::<_, i64>(1)? as u64,
        phone_hash,
        data: r.get(3)?,
    })
}

/// Up to `limit` users of a cohort with a row number above `after_row_no`, in row order.
/// Walk a whole cohort by passing the last row number seen (start with 0).
pub fn users_after(
    c: &Connection,
    cohort_id: &str,
    after_row_no: u64,
    limit: u32,
) -> Result<Vec<StoredUser>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT cohort_id, row_no, phone_hash, data FROM cohort_users
         WHERE cohort_id = ?1 AND row_no > ?2 ORDER BY row_no LIMIT ?3",
    )?;
    let rows = stmt
        .query_map(
            params![cohort_id, after_row_no as i64, limit as i64],
            read_user,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// One user of a cohort.
pub fn user(
    c: &Connection,
    cohort_id: &str,
    row_no: u64,
) -> Result<Option<StoredUser>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT cohort_id, row_no, phone_hash, data FROM cohort_users WHERE cohort_id = ?1 AND row_no = ?2",
    )?;
    optional(stmt.query_row(params![cohort_id, row_no as i64], read_user))
}

/// How many users a cohort holds.
pub fn count_users(c: &Connection, cohort_id: &str) -> Result<u64, StoreError> {
    let n: i64 = c
        .prepare_cached("SELECT COUNT(*) FROM cohort_users WHERE cohort_id = ?1")?
        .query_row(params![cohort_id], |r| r.get(0))?;
    Ok(n as u64)
}

/// The user with this number-hash in the most recently uploaded completed `cohort`-category
/// cohort of a deployment (stop files are not used to personalise calls). Inbound routing:
/// hash the caller's E.164 number with [`WorkspaceKeys::lookup_hash`] of the deployment's
/// workspace, then open the answer with [`StoredUser::open`].
pub fn latest_deployment_user(
    c: &Connection,
    ws: &WorkspaceRef,
    deployment_id: &str,
    phone_hash: &[u8; 16],
) -> Result<Option<StoredUser>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT k.num, k.id FROM cohorts k
         WHERE k.org_id = ?1 AND k.workspace_id = ?2
           AND k.parent_kind = 'deployment' AND k.parent_id = ?3
           AND k.category = 'cohort' AND k.status = 'completed'
         ORDER BY k.seq DESC",
    )?;
    let cohorts = stmt
        .query_map(params![ws.org_id, ws.workspace_id, deployment_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (num, id) in cohorts {
        if let Some(row) = cohort_phones::find_row(c, num, phone_hash)?
            && let Some(found) = user(c, &id, u64::from(row))?
        {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Whether a number-hash is in a completed `stop_file` cohort of a campaign: such users are
/// not called.
pub fn in_stop_file(
    c: &Connection,
    campaign_id: &str,
    phone_hash: &[u8; 16],
) -> Result<bool, StoreError> {
    for num in stop_files(c, campaign_id)? {
        if cohort_phones::find_row(c, num, phone_hash)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The `num` of each completed `stop_file` cohort of a campaign.
pub(crate) fn stop_files(c: &Connection, campaign_id: &str) -> Result<Vec<i64>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT num FROM cohorts
         WHERE parent_kind = 'campaign' AND parent_id = ?1
           AND category = 'stop_file' AND status = 'completed'",
    )?;
    let nums = stmt
        .query_map(params![campaign_id], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(nums)
}
