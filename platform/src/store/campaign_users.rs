//! The `campaign_cohorts` and `campaign_users` tables: which cohorts a campaign admitted, and
//! one row per user admitted to a campaign with its state (`ready`, `calling`, `done`,
//! `excluded`, `unfinished`; see [`UserState`]), dials so far and the earliest next dial.
//!
//! A user's row is keyed by one integer, its `id` (the table's rowid): each admitted cohort
//! takes a range of ids of its own, `first_user` to `last_user` in `campaign_cohorts`, and its
//! row `row_no` is user `first_user + row_no` ([`Admitted`]). The engine names a user by its
//! campaign and queue order, which names the cohort (by admission position) and the row
//! ([`queue_place`]); [`CampaignUsers`] turns that into the id.
//!
//! Admission reads the campaign's completed uploads from `cohorts` and their users from
//! `cohort_users` ([`completed_campaign_cohorts`], [`admitted_rows`]); stop files exclude
//! users by number hash ([`exclude_by_stop_file`]). User data is read as stored, sealed:
//! nothing here opens it (the engine does, with the workspace's keys).

use chrono::{DateTime, Utc};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Statement, params};

use super::states::UserState;
use super::{StoreError, cohort_phones, from_ms, ms};

/// The completed cohorts of a campaign, both categories, in upload order:
/// `(id, is_stop_file, completed at)`.
pub(crate) fn completed_campaign_cohorts(
    c: &Connection,
    campaign_id: &str,
) -> Result<Vec<(String, bool, DateTime<Utc>)>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, category, updated_ms FROM cohorts
         WHERE parent_kind = 'campaign' AND parent_id = ?1 AND status = 'completed' ORDER BY seq",
    )?;
    let rows = stmt
        .query_map(params![campaign_id], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, String>(1)? == "stop_file",
                from_ms(r.get(2)?),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The cohorts a campaign admitted, in admission order.
pub(crate) fn admitted_cohorts(
    c: &Connection,
    campaign_id: &str,
) -> Result<Vec<String>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT cohort_id FROM campaign_cohorts WHERE campaign_id = ?1 ORDER BY position",
    )?;
    let rows = stmt
        .query_map(params![campaign_id], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Admits a completed `cohort` upload: its users join the campaign, ready from `at`, queued
/// after every user admitted before. Answers how many joined.
pub(crate) fn admit_cohort(
    c: &Connection,
    campaign_id: &str,
    cohort_id: &str,
    position: u32,
    at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    // The cohort's ids start after every id taken, by a user or by a range (a range outlives
    // its users only within a transaction that deletes both, but the range is the bound).
    let first_user: i64 = c
        .prepare_cached(
            "SELECT MAX(COALESCE((SELECT MAX(id) FROM campaign_users), 0),
                        COALESCE((SELECT MAX(last_user) FROM campaign_cohorts), 0)) + 1",
        )?
        .query_row([], |r| r.get(0))?;
    let last_row: Option<i64> = c
        .prepare_cached("SELECT MAX(row_no) FROM cohort_users WHERE cohort_id = ?1")?
        .query_row(params![cohort_id], |r| r.get(0))?;
    // No users: an empty range, and the next cohort starts at the same id.
    let last_user = first_user + last_row.unwrap_or(-1);
    c.prepare_cached(
        "INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms, first_user, last_user)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![campaign_id, cohort_id, position, ms(at), first_user, last_user])?;
    let n = c
        .prepare_cached(
            "INSERT INTO campaign_users (id, state, attempts, due_ms)
             SELECT ?1 + row_no, 'ready', 0, ?2 FROM cohort_users WHERE cohort_id = ?3",
        )?
        .execute(params![first_user, ms(at), cohort_id])?;
    Ok(n as u64)
}

/// A cohort a campaign admitted, with the range of ids its users took (empty for a stop
/// file, whose users are not admitted, and for a cohort without users).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admitted {
    /// The cohort's admission position (the high half of its users' queue order).
    pub(crate) position: u32,
    /// The id of the cohort's row 0: row `row_no` is user `first_user + row_no`.
    pub(crate) first_user: i64,
    /// The last id the cohort's users took (below `first_user` when there are none).
    pub(crate) last_user: i64,
}

impl Admitted {
    /// The id of the user at `queue_seq` (a queue order of this cohort).
    pub(crate) fn user_id(&self, queue_seq: i64) -> i64 {
        self.first_user + queue_place(queue_seq).1 as i64
    }

    /// The queue order of user `id` (one of this cohort's).
    pub(crate) fn queue_seq(&self, id: i64) -> i64 {
        queue_seq(self.position, (id - self.first_user) as u64)
    }
}

/// The cohorts campaign `campaign_id` admitted, with their users' ids, in admission order.
pub(crate) fn admitted_ranges(
    c: &Connection,
    campaign_id: &str,
) -> Result<Vec<Admitted>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT position, COALESCE(first_user, 0), COALESCE(last_user, -1) FROM campaign_cohorts
         WHERE campaign_id = ?1 ORDER BY position",
    )?;
    let rows = stmt
        .query_map(params![campaign_id], |r| {
            Ok(Admitted {
                position: r.get(0)?,
                first_user: r.get(1)?,
                last_user: r.get(2)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Records a completed stop file as admitted (its numbers are checked at dial time).
pub(crate) fn admit_stop_file(
    c: &Connection,
    campaign_id: &str,
    cohort_id: &str,
    position: u32,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    // Its numbers are checked at dial time: it takes no ids.
    c.prepare_cached(
        "INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![campaign_id, cohort_id, position, ms(at)])?;
    Ok(())
}

/// Marks the users of a stop file's numbers that are waiting for a dial as excluded.
/// Answers how many.
pub(crate) fn exclude_by_stop_file(
    c: &Connection,
    campaign_id: &str,
    stop_cohort_id: &str,
) -> Result<u64, StoreError> {
    let Some(stop) = cohort_phones::cohort_num(c, stop_cohort_id)? else {
        return Ok(0);
    };
    let admitted = c
        .prepare_cached(
            "SELECT a.first_user, k.num FROM campaign_cohorts a JOIN cohorts k ON k.id = a.cohort_id
             WHERE a.campaign_id = ?1 AND a.first_user IS NOT NULL",
        )?
        .query_map(params![campaign_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut exclude = c.prepare_cached(
        "UPDATE campaign_users SET state = 'excluded' WHERE id = ?1 AND state = 'ready'",
    )?;
    let mut n = 0;
    for (first_user, num) in admitted {
        // The rows are the cohort's own: in its range.
        for row in cohort_phones::rows_shared_with(c, num, &[stop])? {
            n += exclude.execute(params![first_user + i64::from(row)])?;
        }
    }
    Ok(n as u64)
}

/// A user waiting for a dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadyUser {
    /// Queue order (the cohort's admission position and the row: [`queue_place`]).
    pub(crate) queue_seq: i64,
    /// Dials so far.
    pub(crate) attempts: u32,
    /// Earliest next dial (Unix ms).
    pub(crate) due_ms: i64,
}

/// A user's queue order, number hash and sealed data.
pub(crate) type SealedUser = (i64, [u8; 16], Vec<u8>);

/// The sealed data of the users `rows`, each `(cohort id, row, queue order)`, sorted by
/// cohort and row; a row not stored is left out. The rows of one cohort are read with one
/// scan of their range when they fill at least a quarter of it (a campaign's dials and
/// retries come in row order, so they mostly do), else one by one. The data is answered
/// sealed, as stored: nothing is decrypted here.
pub(crate) fn users_data(
    c: &Connection,
    rows: &[(&str, u64, i64)],
) -> Result<Vec<SealedUser>, StoreError> {
    let mut out = Vec::with_capacity(rows.len());
    for group in rows.chunk_by(|a, b| a.0 == b.0) {
        let (cohort_id, first, _) = group[0];
        let last = group[group.len() - 1].1;
        if last - first < 4 * group.len() as u64 {
            let mut stmt = c.prepare_cached(
                "SELECT row_no, phone_hash, data FROM cohort_users
                 WHERE cohort_id = ?1 AND row_no BETWEEN ?2 AND ?3 ORDER BY row_no",
            )?;
            let mut found = stmt.query(params![cohort_id, first as i64, last as i64])?;
            let mut wanted = group.iter().peekable();
            while let Some(r) = found.next()? {
                let row_no = r.get::<_, i64>(0)? as u64;
                while wanted.next_if(|w| w.1 < row_no).is_some() {}
                if let Some(&(_, _, seq)) = wanted.next_if(|w| w.1 == row_no) {
                    out.push((seq, stored_hash(r.get_ref(1)?), r.get(2)?));
                }
            }
        } else {
            let mut stmt = c.prepare_cached(
                "SELECT phone_hash, data FROM cohort_users WHERE cohort_id = ?1 AND row_no = ?2",
            )?;
            for &(_, row_no, seq) in group {
                let mut found = stmt.query(params![cohort_id, row_no as i64])?;
                if let Some(r) = found.next()? {
                    out.push((seq, stored_hash(r.get_ref(0)?), r.get(1)?));
                }
            }
        }
    }
    Ok(out)
}

/// A stored number hash (16 bytes; zeros for anything else).
fn stored_hash(v: ValueRef<'_>) -> [u8; 16] {
    let mut phone_hash = [0u8; 16];
    if let ValueRef::Blob(hash) = v
        && hash.len() == 16
    {
        phone_hash.copy_from_slice(hash);
    }
    phone_hash
}

/// The users of a campaign waiting for a dial, in queue order.
pub(crate) fn ready_users(c: &Connection, campaign_id: &str) -> Result<Vec<ReadyUser>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, attempts, due_ms FROM campaign_users
         WHERE id BETWEEN ?1 AND ?2 AND state = 'ready'",
    )?;
    let mut out = Vec::new();
    for cohort in admitted_ranges(c, campaign_id)? {
        let mut rows = stmt.query(params![cohort.first_user, cohort.last_user])?;
        while let Some(r) = rows.next()? {
            out.push(ReadyUser {
                queue_seq: cohort.queue_seq(r.get(0)?),
                attempts: r.get::<_, i64>(1)? as u32,
                due_ms: r.get(2)?,
            });
        }
    }
    Ok(out)
}

/// The queue order of every user of a cohort admitted at `position`, in row order (their
/// records are read at their dials, not here).
pub(crate) fn admitted_rows(
    c: &Connection,
    cohort_id: &str,
    position: u32,
) -> Result<Vec<i64>, StoreError> {
    let mut stmt =
        c.prepare_cached("SELECT row_no FROM cohort_users WHERE cohort_id = ?1 ORDER BY row_no")?;
    let rows = stmt
        .query_map(params![cohort_id], |r| {
            Ok(queue_seq(position, r.get::<_, i64>(0)? as u64))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A user of a campaign: the campaign and the user's queue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UserRef<'a> {
    /// The campaign.
    pub(crate) campaign_id: &'a str,
    /// The user's queue order: `(admission position << 32) + row`.
    pub(crate) queue_seq: i64,
}

/// The queue order of row `row_no` of the cohort admitted at `position`.
pub(crate) fn queue_seq(position: u32, row_no: u64) -> i64 {
    (i64::from(position) << 32) + row_no as i64
}

/// The cohort's position and the row of queue order `seq` ([`queue_seq`]'s inverse).
pub(crate) fn queue_place(seq: i64) -> (u32, u64) {
    ((seq >> 32) as u32, (seq & 0xffff_ffff) as u64)
}

/// A campaign's users by queue order: the ids of the cohorts it admitted, by position
/// (the engine names its users by campaign and queue order; the rows are keyed by id).
#[derive(Debug, Default)]
pub(crate) struct CampaignUsers {
    by_position: Vec<Option<Admitted>>,
}

impl CampaignUsers {
    /// Campaign `campaign_id`'s cohorts as stored (none when the campaign is gone).
    pub(crate) fn read(c: &Connection, campaign_id: &str) -> Result<Self, StoreError> {
        let mut by_position = Vec::new();
        for cohort in admitted_ranges(c, campaign_id)? {
            let at = cohort.position as usize;
            if by_position.len() <= at {
                by_position.resize(at + 1, None);
            }
            by_position[at] = Some(cohort);
        }
        Ok(CampaignUsers { by_position })
    }

    /// The id of the user at `queue_seq`, if its cohort was admitted with a row that high.
    pub(crate) fn user_id(&self, queue_seq: i64) -> Option<i64> {
        let (position, _) = queue_place(queue_seq);
        let cohort = self.by_position.get(position as usize).copied().flatten()?;
        let id = cohort.user_id(queue_seq);
        (id <= cohort.last_user).then_some(id)
    }
}

/// The statement of [`set_user`]: prepare it once for many users.
pub(crate) const SET_USER: &str =
    "UPDATE campaign_users SET state = ?2, attempts = ?3, due_ms = ?4 WHERE id = ?1";

/// Sets the state of user `id` ([`CampaignUsers::user_id`]) after a dial or a call, with
/// the statement [`SET_USER`].
pub(crate) fn set_user(
    stmt: &mut Statement<'_>,
    id: i64,
    state: UserState,
    attempts: u32,
    due_ms: i64,
) -> Result<(), StoreError> {
    stmt.execute(params![id, state, i64::from(attempts), due_ms])?;
    Ok(())
}

/// Marks every user still waiting as unfinished (the campaign ended or was cancelled).
pub(crate) fn mark_unfinished(c: &Connection, campaign_id: &str) -> Result<u64, StoreError> {
    let mut stmt = c.prepare_cached(
        "UPDATE campaign_users SET state = 'unfinished' WHERE id BETWEEN ?1 AND ?2 AND state = 'ready'",
    )?;
    let mut n = 0;
    for cohort in admitted_ranges(c, campaign_id)? {
        n += stmt.execute(params![cohort.first_user, cohort.last_user])?;
    }
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::testing::rows;

    /// Two cohorts: `coh-a` with rows 1 to 40 but 4, `coh-b` with rows 1 to 3; each row's
    /// data is its cohort and row, its hash 16 bytes of the row.
    fn store() -> Store {
        let store = Store::in_memory().unwrap();
        store
            .write_blocking(|c| {
                for (id, rows) in [("coh-a", 40u8), ("coh-b", 3)] {
                    c.execute(
                        "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status,
                                              source_type, category, created_by, updated_by, created_ms, updated_ms)
                         VALUES (?1, ?2, ?2, 'o', 'w', 'campaign', 'cmp-1', 'n', 'completed', 'stream', 'cohort',
                                 'a', 'a', 0, 0)",
                        params![id, i64::from(rows)],
                    )?;
                    for row in (1..=rows).filter(|r| (id, *r) != ("coh-a", 4)) {
                        c.execute(
                            "INSERT INTO cohort_users (cohort_id, row_no, phone_hash, data) VALUES (?1, ?2, ?3, ?4)",
                            params![id, i64::from(row), vec![row; 16], format!("{id}/{row}").into_bytes()],
                        )?;
                    }
                }
                Ok(())
            })
            .unwrap();
        store
    }

    fn read(store: &Store, rows: &[(&str, u64, i64)]) -> Vec<(i64, u8, String)> {
        store
            .read_blocking(|c| users_data(c, rows))
            .unwrap()
            .into_iter()
            .map(|(seq, hash, data)| (seq, hash[0], String::from_utf8(data).unwrap()))
            .collect()
    }

    fn states(c: &Connection) -> Vec<(i64, String)> {
        rows(
            c,
            "SELECT id, state FROM campaign_users ORDER BY id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// Each admitted cohort takes ids of its own after every id taken, across campaigns; the
    /// writer finds a user by its queue order, and nothing outside a cohort's rows.
    #[test]
    fn admitted_cohorts_take_ranges_of_their_own_and_users_are_found_by_queue_order() {
        let store = store();
        let at = from_ms(5);
        store
            .write_blocking(|c| {
                assert_eq!(admit_cohort(c, "cmp-1", "coh-b", 0, at)?, 3);
                admit_stop_file(c, "cmp-1", "stp-1", 1, at)?;
                assert_eq!(admit_cohort(c, "cmp-2", "coh-a", 0, at)?, 39);
                // A cohort without users takes an empty range.
                assert_eq!(admit_cohort(c, "cmp-1", "coh-none", 2, at)?, 0);
                assert_eq!(admit_cohort(c, "cmp-1", "coh-a", 3, at)?, 39);
                let range = |position, first_user, last_user| Admitted {
                    position,
                    first_user,
                    last_user,
                };
                assert_eq!(
                    admitted_ranges(c, "cmp-1")?,
                    [
                        range(0, 1, 4),
                        range(1, 0, -1),
                        range(2, 46, 45),
                        range(3, 46, 86)
                    ]
                );
                assert_eq!(admitted_ranges(c, "cmp-2")?, [range(0, 5, 45)]);
                let ids = CampaignUsers::read(c, "cmp-1")?;
                assert_eq!(ids.user_id(queue_seq(0, 3)), Some(4));
                assert_eq!(ids.user_id(queue_seq(3, 40)), Some(86));
                // Past a cohort's last row, a stop file's, a cohort without users, a
                // position never admitted, a campaign that is gone: none.
                assert_eq!(ids.user_id(queue_seq(0, 4)), None);
                assert_eq!(ids.user_id(queue_seq(1, 0)), None);
                assert_eq!(ids.user_id(queue_seq(2, 0)), None);
                assert_eq!(ids.user_id(queue_seq(4, 1)), None);
                assert_eq!(CampaignUsers::read(c, "cmp-9")?.user_id(1), None);
                // Every user is ready from `at`, each id once.
                let all = states(c);
                assert_eq!(all.len(), 3 + 39 + 39);
                assert!(all.iter().all(|(_, s)| s == "ready"));
                Ok(())
            })
            .unwrap();
    }

    /// A stop file excludes the waiting users of its numbers, and the campaign's end marks
    /// the rest unfinished: in that campaign's ranges only.
    #[test]
    fn exclusions_and_unfinished_users_stay_in_their_campaign() {
        let store = store();
        store
            .write_blocking(|c| {
                c.execute_batch(
                    "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status,
                                          source_type, category, created_by, updated_by, created_ms, updated_ms)
                     VALUES ('stp-1', 9, 9, 'o', 'w', 'campaign', 'cmp-1', 'n', 'completed', 'stream', 'stop_file',
                             'a', 'a', 0, 0)",
                )?;
                // The stop file holds the number of `coh-b`'s row 2.
                let entry = |row: u8, row_no| cohort_phones::PhoneEntry {
                    phone_hash: [row; 16],
                    row_no,
                };
                cohort_phones::index_phones(c, "coh-b", &mut [1, 2, 3].map(|r| entry(r, r.into())))?;
                cohort_phones::index_phones(c, "stp-1", &mut [entry(2, 1)])?;
                admit_cohort(c, "cmp-2", "coh-b", 0, from_ms(0))?;
                admit_cohort(c, "cmp-1", "coh-b", 0, from_ms(0))?;
                admit_stop_file(c, "cmp-1", "stp-1", 1, from_ms(0))?;
                assert_eq!(exclude_by_stop_file(c, "cmp-1", "stp-1")?, 1);
                assert_eq!(mark_unfinished(c, "cmp-1")?, 2);
                assert_eq!(
                    states(c),
                    [
                        (2, "ready".to_string()),
                        (3, "ready".into()),
                        (4, "ready".into()),
                        (6, "unfinished".into()),
                        (7, "excluded".into()),
                        (8, "unfinished".into()),
                    ]
                );
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn users_data_answers_exactly_the_rows_asked_for_scanned_or_looked_up() {
        let store = store();
        // Dense rows of `coh-a` (one range scan) with one not stored amid them, and of
        // `coh-b` with one not stored after them: those are left out.
        let dense = [
            ("coh-a", 2, 102),
            ("coh-a", 3, 103),
            ("coh-a", 4, 104),
            ("coh-a", 5, 105),
            ("coh-a", 6, 106),
            ("coh-b", 1, 201),
            ("coh-b", 3, 203),
            ("coh-b", 9, 209),
        ];
        assert_eq!(
            read(&store, &dense),
            [
                (102, 2, "coh-a/2".to_string()),
                (103, 3, "coh-a/3".into()),
                (105, 5, "coh-a/5".into()),
                (106, 6, "coh-a/6".into()),
                (201, 1, "coh-b/1".into()),
                (203, 3, "coh-b/3".into()),
            ]
        );
        // Sparse rows (each looked up alone), the same answers.
        let sparse = [("coh-a", 1, 1), ("coh-a", 39, 39), ("coh-a", 41, 41)];
        assert_eq!(
            read(&store, &sparse),
            [(1, 1, "coh-a/1".to_string()), (39, 39, "coh-a/39".into())]
        );
        assert!(read(&store, &[]).is_empty());
    }
}
