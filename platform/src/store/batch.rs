//! Transactions and bulk writes for the campaign engine, so that the engine runs no SQL of
//! its own: it holds a connection only to hand it back to the store's functions.
//!
//! - [`BatchTx`]: the writer connection with a transaction open, held across the events of
//!   one engine batch (which reads and writes through many store functions), committed at
//!   the batch's end and rolled back if the batch fails.
//! - [`Store::transaction_blocking`] and [`in_transaction`]: one transaction on the calling
//!   thread (the engine's writer thread, its reload of what the API changed, inbound calls).
//! - [`end_calls`] and [`set_users`]: many rows with one prepared statement each.

use std::sync::MutexGuard;

use chrono::{DateTime, Utc};

use super::calls::{END_CALL, end_call_with};
use super::campaign_users::{CampaignUsers, SET_USER, UserRef, set_user};
use super::states::UserState;
use super::{Store, StoreError};

/// The connection the store's functions take. The engine names it (and only it) to pass a
/// connection from [`BatchTx::conn`] or [`Store::transaction_blocking`] back to the store.
pub(crate) use rusqlite::Connection;

/// The writer connection inside a transaction, for one batch of engine events: begun by
/// [`BatchTx::begin`], made durable by [`BatchTx::commit`]. Dropped without a commit (the
/// batch failed, or its writes did), the transaction is rolled back: nothing of the batch is
/// kept. The writer stays locked while it lives, so nothing else writes in between.
pub(crate) struct BatchTx<'a> {
    conn: MutexGuard<'a, Connection>,
}

impl std::fmt::Debug for BatchTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchTx").finish_non_exhaustive()
    }
}

impl<'a> BatchTx<'a> {
    /// Locks the writer connection and opens a transaction on it.
    pub(crate) fn begin(store: &'a Store) -> Result<Self, StoreError> {
        let conn = store.writer();
        conn.execute_batch("BEGIN")?;
        Ok(BatchTx { conn })
    }

    /// The connection, inside the transaction.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Commits the transaction (when the commit fails, it is rolled back).
    pub(crate) fn commit(self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }
}

impl Drop for BatchTx<'_> {
    fn drop(&mut self) {
        // Not committed (or the commit failed): nothing of the batch is kept.
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

impl Store {
    /// Runs `f` in a transaction of its own on the writer connection, on the calling thread
    /// (for code that already runs off the async threads): committed when `f` succeeds,
    /// rolled back when it fails.
    pub fn transaction_blocking<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_blocking(|c| in_transaction(c, f))
    }
}

/// Runs `f` in a transaction on `c`, for a caller that holds the writer connection and does
/// something outside the transaction first: committed when `f` succeeds, rolled back when it
/// fails.
pub(crate) fn in_transaction<T>(
    c: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = c.transaction()?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Marks many calls ended, each `(attempt id, result, when)`, with one prepared statement.
pub(crate) fn end_calls<'a>(
    c: &Connection,
    ends: impl IntoIterator<Item = (&'a str, &'a str, DateTime<Utc>)>,
) -> Result<(), StoreError> {
    let mut stmt = c.prepare_cached(END_CALL)?;
    for (id, result, at) in ends {
        end_call_with(&mut stmt, id, result, at)?;
    }
    Ok(())
}

/// A campaign user's row after a dial or a call: what [`set_users`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UserUpdate {
    /// The user's new state.
    pub(crate) state: UserState,
    /// Dials made so far.
    pub(crate) attempts: u32,
    /// When the next dial is due (or when the user finished), Unix ms.
    pub(crate) due_ms: i64,
}

/// Sets many campaign users' rows with one prepared statement. Each campaign's cohorts are
/// read once for its users in a row (give them grouped by campaign); the users of a campaign
/// that is gone (its workspace was reset) are gone too, and skipped.
pub(crate) fn set_users<'a>(
    c: &Connection,
    users: impl IntoIterator<Item = (UserRef<'a>, UserUpdate)>,
) -> Result<(), StoreError> {
    let mut stmt = c.prepare_cached(SET_USER)?;
    let mut campaign: Option<(&str, CampaignUsers)> = None;
    for (user, w) in users {
        let ids = match &campaign {
            Some((id, ids)) if *id == user.campaign_id => ids,
            _ => {
                let ids = CampaignUsers::read(c, user.campaign_id)?;
                &campaign.insert((user.campaign_id, ids)).1
            }
        };
        if let Some(id) = ids.user_id(user.queue_seq) {
            set_user(&mut stmt, id, w.state, w.attempts, w.due_ms)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(c: &Connection) -> i64 {
        c.query_row("SELECT COUNT(*) FROM data_keys", [], |r| r.get(0))
            .unwrap()
    }

    fn insert(c: &Connection) -> Result<(), StoreError> {
        c.execute(
            "INSERT INTO data_keys (org_id, workspace_id, provider, key_alias, encrypted_key, created_at)
             VALUES ('o', 'w', 'local', 'k', 'e', 0)",
            [],
        )?;
        Ok(())
    }

    #[test]
    fn a_batch_is_kept_only_when_committed() {
        let store = Store::in_memory().unwrap();
        {
            let tx = BatchTx::begin(&store).unwrap();
            insert(tx.conn()).unwrap();
            // Dropped without a commit: rolled back.
        }
        assert_eq!(store.read_blocking(|c| Ok(count(c))).unwrap(), 0);
        let tx = BatchTx::begin(&store).unwrap();
        insert(tx.conn()).unwrap();
        tx.commit().unwrap();
        assert_eq!(store.read_blocking(|c| Ok(count(c))).unwrap(), 1);
        // The writer is free again, outside any transaction.
        assert!(store.writer().is_autocommit());
    }

    #[test]
    fn a_failed_transaction_leaves_nothing() {
        let store = Store::in_memory().unwrap();
        let failed = store.transaction_blocking(|c| {
            insert(c)?;
            Err::<(), _>(StoreError::Task("stop".into()))
        });
        assert!(failed.is_err());
        assert_eq!(store.read_blocking(|c| Ok(count(c))).unwrap(), 0);
        store.transaction_blocking(insert).unwrap();
        assert_eq!(store.read_blocking(|c| Ok(count(c))).unwrap(), 1);
        assert!(store.writer().is_autocommit());
    }
}
