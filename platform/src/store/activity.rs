//! What the live page (`/ui`) shows of a campaign's past, kept as it happens: the status
//! actions taken through the API (`campaign_actions`), from which
//! [`crate::lifecycle::history`] tells every status change again (those the clock made fall
//! at the start and the end, so they need no row), and the ended dials counted by the
//! minute they were dialled and their result (`campaign_dial_minutes`), from which the
//! campaign's chart is drawn without reading the calls themselves.
//!
//! Campaigns of a database made before these tables existed show the changes with time and
//! the dials made since, not what came before.

use chrono::{DateTime, Utc};
use contracts::wire::{CampaignAction, CampaignStatus};
use rusqlite::{Connection, params};

use super::{StoreError, from_ms, ms};

/// Migration 6: the two tables.
pub(super) const MIGRATION: &str = r#"
    CREATE TABLE campaign_actions (
        campaign_id TEXT NOT NULL,
        seq         INTEGER NOT NULL,
        at_ms       INTEGER NOT NULL,
        action      TEXT NOT NULL,
        status      TEXT NOT NULL,
        actor       TEXT NOT NULL,
        PRIMARY KEY (campaign_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE campaign_dial_minutes (
        campaign_id TEXT NOT NULL,
        minute      INTEGER NOT NULL,
        result      TEXT NOT NULL,
        n           INTEGER NOT NULL,
        PRIMARY KEY (campaign_id, minute, result)
    ) WITHOUT ROWID;
"#;

/// A status action taken on a campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ActionRow {
    /// When.
    pub(crate) at: DateTime<Utc>,
    /// Which.
    pub(crate) action: CampaignAction,
    /// The status it led to.
    pub(crate) status: CampaignStatus,
    /// The name of the key that took it.
    pub(crate) actor: String,
}

/// Records an action after the campaign's earlier ones.
pub(crate) fn record_action(
    c: &Connection,
    campaign_id: &str,
    row: &ActionRow,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO campaign_actions (campaign_id, seq, at_ms, action, status, actor)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM campaign_actions WHERE campaign_id = ?1),
                 ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        campaign_id,
        ms(row.at),
        row.action.as_str(),
        row.status.as_str(),
        row.actor
    ])?;
    Ok(())
}

/// The campaign's actions, oldest first.
pub(crate) fn actions(c: &Connection, campaign_id: &str) -> Result<Vec<ActionRow>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT at_ms, action, status, actor FROM campaign_actions WHERE campaign_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt
        .query_map(params![campaign_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(at, action, status, actor)| {
            let corrupt = || {
                StoreError::Corrupt(format!(
                    "campaign {campaign_id}: action {action} -> {status}"
                ))
            };
            Ok(ActionRow {
                at: from_ms(at),
                action: CampaignAction::parse(&action).ok_or_else(corrupt)?,
                status: CampaignStatus::parse(&status).ok_or_else(corrupt)?,
                actor,
            })
        })
        .collect()
}

/// The minute (since the Unix epoch) of `t`.
pub(crate) fn minute_of(t: DateTime<Utc>) -> i64 {
    ms(t).div_euclid(60_000)
}

/// Adds `n` ended dials of `result` dialled in `minute` ([`minute_of`]) to the campaign's
/// counts.
pub(crate) fn count_dials(
    c: &Connection,
    campaign_id: &str,
    minute: i64,
    result: &str,
    n: u64,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO campaign_dial_minutes (campaign_id, minute, result, n) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (campaign_id, minute, result) DO UPDATE SET n = n + excluded.n",
    )?
    .execute(params![campaign_id, minute, result, n as i64])?;
    Ok(())
}

/// The campaign's ended dials per minute and result, in time order: `(minute, result, n)`.
pub(crate) fn dial_minutes(
    c: &Connection,
    campaign_id: &str,
) -> Result<Vec<(i64, String, u64)>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT minute, result, n FROM campaign_dial_minutes WHERE campaign_id = ?1 ORDER BY minute",
    )?;
    let rows = stmt
        .query_map(params![campaign_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)? as u64,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The campaign's dials in progress (not ended yet) per minute they were dialled, in time
/// order: `(minute, n)`. Read from the calls not ended (few: at most the calls the
/// campaign's connections carry at once), through their partial index.
pub(crate) fn live_dial_minutes(
    c: &Connection,
    campaign_id: &str,
) -> Result<Vec<(i64, u64)>, StoreError> {
    // Times are after 1970: integer division is the floor, as in `minute_of`.
    let mut stmt = c.prepare_cached(
        "SELECT dialed_ms / 60000 AS minute, COUNT(*) FROM attempts
         WHERE status <> 'ended' AND campaign_id = ?1 AND dialed_ms IS NOT NULL
         GROUP BY minute ORDER BY minute",
    )?;
    let rows = stmt
        .query_map(params![campaign_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u64))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(MIGRATION).unwrap();
        c
    }

    #[test]
    fn actions_come_back_in_the_order_taken_per_campaign() {
        let c = db();
        let at = |s: i64| DateTime::from_timestamp(1_772_000_000 + s, 0).unwrap();
        let row = |s, action, status| ActionRow {
            at: at(s),
            action,
            status,
            actor: "ci".into(),
        };
        record_action(
            &c,
            "camp-1",
            &row(10, CampaignAction::Pause, CampaignStatus::Paused),
        )
        .unwrap();
        record_action(
            &c,
            "camp-2",
            &row(5, CampaignAction::Cancel, CampaignStatus::Cancelled),
        )
        .unwrap();
        // Same instant: the order taken decides, not the time.
        record_action(
            &c,
            "camp-1",
            &row(10, CampaignAction::Resume, CampaignStatus::Active),
        )
        .unwrap();
        let got = actions(&c, "camp-1").unwrap();
        assert_eq!(
            got.iter().map(|r| r.action).collect::<Vec<_>>(),
            [CampaignAction::Pause, CampaignAction::Resume]
        );
        assert_eq!(got[1].status, CampaignStatus::Active);
        assert_eq!(actions(&c, "camp-2").unwrap().len(), 1);
        assert!(actions(&c, "camp-3").unwrap().is_empty());
    }

    #[test]
    fn dials_add_up_per_minute_and_result() {
        let c = db();
        let t = DateTime::from_timestamp(29_533_334 * 60, 0).unwrap();
        let m = minute_of(t);
        assert_eq!(m, 29_533_334);
        assert_eq!(minute_of(t + chrono::Duration::milliseconds(59_999)), m);
        assert_eq!(minute_of(t - chrono::Duration::milliseconds(1)), m - 1);
        count_dials(&c, "camp-1", m, "busy", 2).unwrap();
        count_dials(&c, "camp-1", m, "busy", 3).unwrap();
        count_dials(&c, "camp-1", m + 1, "completed", 1).unwrap();
        count_dials(&c, "camp-2", m, "busy", 7).unwrap();
        assert_eq!(
            dial_minutes(&c, "camp-1").unwrap(),
            [
                (m, "busy".to_string(), 5),
                (m + 1, "completed".to_string(), 1)
            ]
        );
    }
}
