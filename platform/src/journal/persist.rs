//! The journal's copy in the database (`[journal] persist = true`): table
//! `journal_entries`, one redacted entry per row as JSON, written behind by a thread of its
//! own in batches, so requests never wait for the disk.
//!
//! The table is created here when missing (not by a numbered migration): it is the
//! harness's diagnostic record, not data of the platform, and an older platform that does
//! not know it simply leaves it alone.

use std::sync::mpsc;

use contracts::wire::JournalEntry;
use rusqlite::params;

use crate::store::{Store, StoreError, WorkspaceRef};

const CREATE: &str = "CREATE TABLE IF NOT EXISTS journal_entries (
    seq INTEGER PRIMARY KEY,
    entry TEXT NOT NULL
)";

/// Entries written in one transaction at most.
const BATCH: usize = 512;

enum Message {
    Write(u64, String),
    Clear,
    /// Removes the entries of these owners (`None`: of no workspace).
    DeleteOwners(Vec<Option<WorkspaceRef>>),
    /// Sets the cohort of the upload entry `seq` to `completed`, or `failed` for the reason.
    SetCohortFate(u64, Option<String>),
    Flush(mpsc::Sender<()>),
}

/// Writes entries to the database behind the requests.
#[derive(Debug)]
pub(crate) struct Persister {
    tx: std::sync::Mutex<mpsc::Sender<Message>>,
}

impl Persister {
    /// Starts the writer thread over `store`.
    pub(crate) fn start(store: Store) -> Persister {
        let (tx, rx) = mpsc::channel::<Message>();
        std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || writer(store, rx))
            .expect("the journal writer thread starts");
        Persister {
            tx: std::sync::Mutex::new(tx),
        }
    }

    fn send(&self, m: Message) {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let _ = tx.send(m);
    }

    /// Queues `entry` for writing.
    pub(crate) fn write(&self, entry: &JournalEntry) {
        match serde_json::to_string(entry) {
            Ok(json) => self.send(Message::Write(entry.seq, json)),
            Err(e) => tracing::warn!(error = %e, "journal entry not kept in the database"),
        }
    }

    /// Queues the update of the upload entry `seq`: its cohort `completed` (`fate` `None`)
    /// or `failed` for the reason `fate` gives.
    pub(crate) fn set_cohort_fate(&self, seq: u64, fate: &Option<String>) {
        self.send(Message::SetCohortFate(seq, fate.clone()));
    }

    /// Queues the removal of every entry.
    pub(crate) fn clear(&self) {
        self.send(Message::Clear);
    }

    /// Queues the removal of the entries of `owners` (`None`: those of no workspace).
    pub(crate) fn delete_owners(&self, owners: Vec<Option<WorkspaceRef>>) {
        self.send(Message::DeleteOwners(owners));
    }

    /// Waits until everything queued so far is written.
    pub(crate) fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        self.send(Message::Flush(tx));
        let _ = rx.recv();
    }
}

fn writer(store: Store, rx: mpsc::Receiver<Message>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        let mut waiting = Vec::new();
        let result = store.write_blocking(|c| {
            let tx = c.transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO journal_entries (seq, entry) VALUES (?1, ?2)",
                )?;
                for m in batch {
                    match m {
                        Message::Write(seq, json) => {
                            insert.execute(params![seq as i64, json])?;
                        }
                        Message::Clear => {
                            tx.execute("DELETE FROM journal_entries", [])?;
                        }
                        Message::DeleteOwners(owners) => {
                            for owner in owners {
                                delete_owner(&tx, owner.as_ref())?;
                            }
                        }
                        Message::SetCohortFate(seq, fate) => {
                            set_cohort_fate(&tx, seq, fate.as_deref())?;
                        }
                        Message::Flush(done) => waiting.push(done),
                    }
                }
            }
            tx.commit()?;
            Ok(())
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, "journal entries not kept in the database");
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}

/// Removes the entries of `owner` (the `owner` of their JSON; `None`: of no workspace).
fn delete_owner(c: &rusqlite::Connection, owner: Option<&WorkspaceRef>) -> rusqlite::Result<usize> {
    match owner {
        Some(ws) => c.execute(
            "DELETE FROM journal_entries
             WHERE json_extract(entry, '$.owner.org_id') = ?1
               AND json_extract(entry, '$.owner.workspace_id') = ?2",
            params![ws.org_id, ws.workspace_id],
        ),
        None => c.execute(
            "DELETE FROM journal_entries WHERE json_extract(entry, '$.owner') IS NULL",
            [],
        ),
    }
}

/// Sets the cohort of the entry `seq` (when it has one) to `completed`, or `failed` for
/// `reason`.
fn set_cohort_fate(
    c: &rusqlite::Connection,
    seq: u64,
    reason: Option<&str>,
) -> rusqlite::Result<usize> {
    match reason {
        Some(reason) => c.execute(
            "UPDATE journal_entries
             SET entry = json_set(entry, '$.cohort.status', 'failed', '$.cohort.failure_reason', ?2)
             WHERE seq = ?1 AND json_extract(entry, '$.cohort') IS NOT NULL",
            params![seq as i64, reason],
        ),
        None => c.execute(
            "UPDATE journal_entries SET entry = json_set(entry, '$.cohort.status', 'completed')
             WHERE seq = ?1 AND json_extract(entry, '$.cohort') IS NOT NULL",
            params![seq as i64],
        ),
    }
}

/// Creates the table when missing, and hands every entry of earlier runs to `add`, oldest
/// first. Answers the number the next entry gets.
pub(crate) fn load(store: &Store, mut add: impl FnMut(JournalEntry)) -> Result<u64, StoreError> {
    store.write_blocking(|c| {
        c.execute(CREATE, [])?;
        Ok(())
    })?;
    store.read_blocking(|c| {
        let mut next_seq = 1;
        let mut stmt = c.prepare("SELECT seq, entry FROM journal_entries ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let text: String = row.get(1)?;
            let entry: JournalEntry = match serde_json::from_str(&text) {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(seq, error = %e, "unreadable journal entry skipped");
                    continue;
                }
            };
            next_seq = seq as u64 + 1;
            add(entry);
        }
        Ok(next_seq)
    })
}
