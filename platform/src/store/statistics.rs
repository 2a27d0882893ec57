//! What campaign statistics are computed from, and the `campaign_results` table that keeps
//! the ended attempts of each campaign counted by result. The arithmetic over these counts
//! (totals, the attempt budget and capacity of rule 3) is [`crate::stats`].

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::states::UserState;
use super::{StoreError, ms};

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
    // Users the engine admitted, by state.
    let mut stmt = c.prepare_cached(
        "SELECT state, COUNT(*), SUM(attempts > 0 AND due_ms <= ?2) FROM campaign_users
         WHERE campaign_num = (SELECT seq FROM campaigns WHERE id = ?1) GROUP BY state",
    )?;
    let users = stmt
        .query_map(params![campaign_id, ms(now)], |r| {
            Ok(UsersInState {
                state: r.get(0)?,
                users: r.get::<_, i64>(1)? as u64,
                retries_due: r.get::<_, Option<i64>>(2)?.unwrap_or(0) as u64,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    // Users of completed uploads the engine has not admitted yet; those in a stop file of
    // the campaign are excluded.
    let (not_admitted, not_admitted_excluded): (i64, i64) = c.query_row(
        "SELECT COUNT(*),
                COALESCE(SUM(EXISTS (SELECT 1 FROM cohort_phones s JOIN cohorts sc ON sc.num = s.cohort_num
                                     WHERE sc.parent_kind = 'campaign' AND sc.parent_id = ?1
                                       AND sc.category = 'stop_file' AND sc.status = 'completed'
                                       AND s.phone_hash = u.phone_hash)), 0)
         FROM cohort_users u JOIN cohorts k ON k.id = u.cohort_id
         WHERE k.parent_kind = 'campaign' AND k.parent_id = ?1
           AND k.category = 'cohort' AND k.status = 'completed'
           AND NOT EXISTS (SELECT 1 FROM campaign_cohorts a WHERE a.campaign_id = ?1 AND a.cohort_id = k.id)",
        params![campaign_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
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
        not_admitted_excluded: not_admitted_excluded.max(0) as u64,
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
