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
    // The users are keyed by their campaign's number.
    c.execute(
        "DELETE FROM campaign_users
         WHERE campaign_num IN (SELECT seq FROM campaigns WHERE org_id = ?1 AND workspace_id = ?2)",
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
