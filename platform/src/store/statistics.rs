//! What campaign statistics are computed from, and the `campaign_results` table that keeps
//! the ended attempts of each campaign counted by result. The arithmetic over these counts
//! (totals, the attempt budget and capacity of rule 3) is [`crate::stats`].

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::states::UserState;
use super::{StoreError, campaign_users, cohort_phones, cohort_users, ms};

/// The users a campaign admitted in one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsersInState {
    /// The state.
    pub(crate) state: UserState,
    /// How many users are in it.
    pub(crate) users: u64,
    /// Of them, those dialled before whose next dial is due (meaningful for `ready`).
    pub(crate) retries_due: u64,
}

/// The stored counts behind a campaign's statistics at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CampaignCounts {
    /// Admitted users by state (states without users are absent).
    pub(crate) users: Vec<UsersInState>,
    /// Users of completed uploads the engine has not admitted yet (it does so at its next
    /// step).
    pub(crate) not_admitted: u64,
    /// Of [`CampaignCounts::not_admitted`], those whose number is in a completed stop file
    /// of the campaign.
    pub(crate) not_admitted_excluded: u64,
    /// Ended attempts by result (`CallResult::as_str`), as counted by [`count_results`].
    pub(crate) results: Vec<(String, u64)>,
}

/// The counts of campaign `campaign_id` at `now` (`now` decides which retries are due).
pub(crate) fn campaign_counts(
    c: &Connection,
    campaign_id: &str,
    now: DateTime<Utc>,
) -> Result<CampaignCounts, StoreError> {
    // One snapshot for the three reads: the engine admits users of completed uploads at its
    // steps, and between two separate reads a user would be in neither count (a campaign
    // with users read as empty). Inside a caller's transaction its snapshot serves.
    let snapshot = if c.is_autocommit() {
        Some(c.unchecked_transaction()?)
    } else {
        None
    };
    // Users the engine admitted, by state, counted here in one pass over the campaign's
    // users. `GROUP BY state` sorted them all first: twice the instructions of this loop
    // (callgrind, 30,000 users; a count per state filtered in SQL took 1.15 times).
    let mut stmt = c.prepare_cached(
        "SELECT state, attempts > 0 AND due_ms <= ?3 FROM campaign_users WHERE id BETWEEN ?1 AND ?2",
    )?;
    let mut by_state = [(0u64, 0u64); UserState::ALL.len()];
    for cohort in campaign_users::admitted_ranges(c, campaign_id)? {
        let mut rows = stmt.query(params![cohort.first_user, cohort.last_user, ms(now)])?;
        while let Some(r) = rows.next()? {
            let state: UserState = r.get(0)?;
            // `ALL` is in declaration order, as the discriminants are.
            let n = &mut by_state[state as usize];
            n.0 += 1;
            n.1 += u64::from(r.get::<_, bool>(1)?);
        }
    }
    let users = UserState::ALL
        .iter()
        .zip(by_state)
        .filter(|&(_, (users, _))| users > 0)
        .map(|(&state, (users, due))| UsersInState {
            state,
            users,
            retries_due: if state == UserState::Ready { due } else { 0 },
        })
        .collect();
    // Users of completed uploads the engine has not admitted yet; those in a stop file of
    // the campaign are excluded.
    let waiting = c
        .prepare_cached(
            "SELECT k.num, (SELECT COUNT(*) FROM cohort_users u WHERE u.cohort_id = k.id)
             FROM cohorts k
             WHERE k.parent_kind = 'campaign' AND k.parent_id = ?1
               AND k.category = 'cohort' AND k.status = 'completed'
               AND NOT EXISTS (SELECT 1 FROM campaign_cohorts a WHERE a.campaign_id = ?1 AND a.cohort_id = k.id)",
        )?
        .query_map(params![campaign_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let not_admitted: i64 = waiting.iter().map(|(_, users)| users).sum();
    let stops = if waiting.is_empty() {
        Vec::new()
    } else {
        cohort_users::stop_files(c, campaign_id)?
    };
    let mut not_admitted_excluded = 0;
    for (num, _) in &waiting {
        not_admitted_excluded += cohort_phones::rows_shared_with(c, *num, &stops)?.len() as u64;
    }
    // Ended attempts by result.
    let mut stmt =
        c.prepare_cached("SELECT result, n FROM campaign_results WHERE campaign_id = ?1")?;
    let results = stmt
        .query_map(params![campaign_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    // Read only: ending the transaction without a commit changes nothing.
    drop(snapshot);
    Ok(CampaignCounts {
        users,
        not_admitted: not_admitted.max(0) as u64,
        not_admitted_excluded,
        results,
    })
}

/// Adds ended attempts of a campaign to its count for `result`.
pub(crate) fn count_results(
    c: &Connection,
    campaign_id: &str,
    result: &str,
    n: u64,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO campaign_results (campaign_id, result, n) VALUES (?1, ?2, ?3)
         ON CONFLICT (campaign_id, result) DO UPDATE SET n = n + excluded.n",
    )?
    .execute(params![campaign_id, result, n as i64])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::cohort_phones::{PhoneEntry, index_phones};
    use crate::store::from_ms;

    /// A migrated database with the campaigns `cmp-1` to `cmp-{campaigns}`, numbered 1 to
    /// `campaigns`.
    fn database(campaigns: u32) -> Connection {
        let c = Connection::open_in_memory().unwrap();
        super::super::migrations::run(&c).unwrap();
        for n in 1..=campaigns {
            c.execute(
                "INSERT INTO campaigns (id, seq, org_id, workspace_id, name, status, start_ms, end_ms, spec,
                                        created_by, updated_by, created_ms, updated_ms)
                 VALUES ('cmp-' || ?1, ?1, 'o', 'w', 'c' || ?1, 'active', 0, 1, '{}', 'x', 'x', 0, 0)",
                [n],
            )
            .unwrap();
        }
        c
    }

    /// The admitted users are counted by state, the states without users left out, and the
    /// retries due are the ready users dialled before whose next dial is due: all of the
    /// campaign's users and none of another's.
    #[test]
    fn admitted_users_are_counted_by_state_with_the_retries_due() {
        let c = database(2);
        // cmp-1's two cohorts took ids 1 to 4 and 7 to 9, cmp-2's one 5 to 6; id 10 is in
        // no campaign's range.
        c.execute_batch(
            "INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms, first_user, last_user)
             VALUES ('cmp-1', 'coh-a', 0, 0, 1, 4), ('cmp-2', 'coh-x', 0, 0, 5, 6),
                    ('cmp-1', 'coh-b', 1, 0, 7, 9);
             INSERT INTO campaign_users (id, state, attempts, due_ms) VALUES
                 (1, 'ready', 0, 0),       -- never dialled: not a retry
                 (2, 'ready', 1, 10),      -- a retry due at 10
                 (3, 'ready', 2, 11),      -- a retry not due yet
                 (4, 'done', 1, 5),
                 (5, 'ready', 1, 0),       -- another campaign's
                 (6, 'excluded', 0, 0),
                 (7, 'done', 3, 5),
                 (8, 'unfinished', 2, 5),
                 (9, 'calling', 1, 0),
                 (10, 'ready', 1, 0);      -- no campaign's",
        )
        .unwrap();
        let users = |state, users, retries_due| UsersInState {
            state,
            users,
            retries_due,
        };
        let counts = campaign_counts(&c, "cmp-1", from_ms(10)).unwrap();
        assert_eq!(
            counts.users,
            [
                users(UserState::Ready, 3, 1),
                users(UserState::Calling, 1, 0),
                users(UserState::Done, 2, 0),
                users(UserState::Unfinished, 1, 0),
            ]
        );
        let counts = campaign_counts(&c, "cmp-2", from_ms(10)).unwrap();
        assert_eq!(
            counts.users,
            [
                users(UserState::Ready, 1, 1),
                users(UserState::Excluded, 1, 0)
            ]
        );
        assert!(
            campaign_counts(&c, "cmp-3", from_ms(10))
                .unwrap()
                .users
                .is_empty()
        );
    }

    /// Users of uploads the engine has not admitted are counted, and those a completed stop
    /// file holds are counted as excluded: across two uploads and two stop files, one number
    /// in both, and not the users of an admitted upload or of an unfinished stop file.
    #[test]
    fn users_not_admitted_are_excluded_by_the_campaigns_completed_stop_files() {
        let c = database(1);
        let hash = |i: u8| [i; 16];
        // id, category, status, the numbers it holds.
        let cohorts: [(&str, &str, &str, &[u8]); 6] = [
            ("coh-1", "cohort", "completed", &[1, 2, 3, 4]),
            ("coh-2", "cohort", "completed", &[5, 6, 7]),
            ("coh-3", "cohort", "completed", &[1, 5, 9]),
            ("stp-1", "stop_file", "completed", &[1, 6, 9, 40]),
            ("stp-2", "stop_file", "completed", &[6, 7]),
            ("stp-3", "stop_file", "processing", &[2, 3]),
        ];
        for (num, (id, category, status, numbers)) in (1i64..).zip(cohorts) {
            c.execute(
                "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status,
                                      source_type, category, created_by, updated_by, created_ms, updated_ms)
                 VALUES (?1, ?2, ?2, 'o', 'w', 'campaign', 'cmp-1', 'n', ?3, 'stream', ?4, 'a', 'a', 0, 0)",
                params![id, num, status, category],
            )
            .unwrap();
            let mut entries = Vec::new();
            for (row, n) in (1u32..).zip(numbers) {
                c.execute(
                    "INSERT INTO cohort_users (cohort_id, row_no, phone_hash, data) VALUES (?1, ?2, ?3, x'00')",
                    params![id, row, &hash(*n)[..]],
                )
                .unwrap();
                entries.push(PhoneEntry {
                    phone_hash: hash(*n),
                    row_no: row,
                });
            }
            index_phones(&c, id, &mut entries).unwrap();
        }
        // The engine admitted coh-3: its users are not counted here.
        c.execute(
            "INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms) VALUES ('cmp-1', 'coh-3', 0, 0)",
            [],
        )
        .unwrap();
        let counts = campaign_counts(&c, "cmp-1", from_ms(0)).unwrap();
        assert_eq!(counts.not_admitted, 7);
        // 1 (stp-1) in coh-1; 6 (both stop files) and 7 (stp-2) in coh-2.
        assert_eq!(counts.not_admitted_excluded, 3);
    }
}
