//! The reset of one workspace: every row its clients' requests made (campaigns and what the
//! engine kept of them, deployments and their numbers, cohorts with their users and files,
//! calls, inbound calls, webhook deliveries) removed in one transaction. Its data keys stay:
//! they are the workspace's set-up, not its test data, and a BYOK workspace keeps its key.
//!
//! The engine's memory must be built again afterwards (`Engine::reset_workspace` does both).

use contracts::wire::ResetCounts;
use rusqlite::{Connection, params};

use super::{StoreError, WorkspaceRef};

/// Removes the rows of `ws`, in the caller's transaction; answers how many of each kind
/// (the journal's and the fault rules' counts are the caller's to fill in).
pub(crate) fn delete(c: &Connection, ws: &WorkspaceRef) -> Result<ResetCounts, StoreError> {
    let p = params![ws.org_id, ws.workspace_id];
    const OF_CAMPAIGNS: &str =
        "campaign_id IN (SELECT id FROM campaigns WHERE org_id = ?1 AND workspace_id = ?2)";
    // The users are keyed by id, in the ranges their campaigns' cohorts took.
    c.execute(
        "DELETE FROM campaign_users WHERE id IN (
             SELECT u.id FROM campaign_cohorts a JOIN campaign_users u ON u.id BETWEEN a.first_user AND a.last_user
             WHERE a.campaign_id IN (SELECT id FROM campaigns WHERE org_id = ?1 AND workspace_id = ?2))",
        p,
    )?;
    for table in [
        "campaign_cohorts",
        "campaign_results",
        "campaign_actions",
        "campaign_dial_minutes",
    ] {
        c.execute(&format!("DELETE FROM {table} WHERE {OF_CAMPAIGNS}"), p)?;
    }
    let count = |table: &str| -> Result<u64, StoreError> {
        Ok(c.execute(
            &format!("DELETE FROM {table} WHERE org_id = ?1 AND workspace_id = ?2"),
            p,
        )? as u64)
    };
    // Files, file chunks, users and phone lookups go with their cohort (foreign keys),
    // numbers with their deployment.
    Ok(ResetCounts {
        cohorts: count("cohorts")?,
        campaigns: count("campaigns")?,
        deployments: count("deployments")?,
        calls: count("attempts")?,
        inbound_calls: count("inbound_calls")?,
        webhook_deliveries: count("webhook_deliveries")?,
        journal_entries: 0,
        fault_rules: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::rows;

    /// The users of the workspace's campaigns go, found by their cohorts' ranges of ids;
    /// another workspace's users, in ranges between them, stay.
    #[test]
    fn a_reset_removes_its_campaigns_users_and_no_others() {
        let c = Connection::open_in_memory().unwrap();
        super::super::migrations::run(&c).unwrap();
        c.execute_batch(
            "INSERT INTO campaigns (id, seq, org_id, workspace_id, name, status, start_ms, end_ms, spec,
                                    created_by, updated_by, created_ms, updated_ms)
             VALUES ('cmp-a', 1, 'o', 'a', 'a', 'active', 0, 1, '{}', 'x', 'x', 0, 0),
                    ('cmp-b', 2, 'o', 'b', 'b', 'active', 0, 1, '{}', 'x', 'x', 0, 0);
             INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms, first_user, last_user)
             VALUES ('cmp-a', 'coh-1', 0, 0, 1, 3), ('cmp-b', 'coh-2', 0, 0, 4, 6),
                    ('cmp-a', 'coh-3', 1, 0, 7, 8);
             INSERT INTO campaign_users (id, state, due_ms)
             VALUES (2, 'ready', 0), (3, 'done', 0), (5, 'ready', 0), (6, 'calling', 0), (8, 'ready', 0);",
        )
        .unwrap();
        let counts = delete(&c, &WorkspaceRef::new("o", "a")).unwrap();
        assert_eq!(counts.campaigns, 1);
        let left: Vec<i64> = rows(&c, "SELECT id FROM campaign_users ORDER BY id", [], |r| {
            r.get(0)
        });
        assert_eq!(left, [5, 6]);
        let ranges: i64 = c
            .query_row("SELECT COUNT(*) FROM campaign_cohorts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ranges, 1);
    }
}
