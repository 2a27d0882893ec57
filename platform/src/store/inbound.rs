//! Inbound calls: the `inbound_calls` table. One row per call to a deployment's number,
//! answered or refused, with the deployment, interaction and matching cohort when answered.
//! The caller's details are sealed JSON bound to [`inbound_context`]: the store moves them
//! sealed; the engine opens them with the workspace's keys.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};

use super::{StoreError, WorkspaceRef, from_ms, ms, optional};

/// An inbound call as stored. `details` is sealed JSON (caller, identifier, variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InboundRow {
    /// Its id.
    pub(crate) id: String,
    /// Its workspace.
    pub(crate) ws: WorkspaceRef,
    /// The number dialled.
    pub(crate) dialled: String,
    /// When it arrived.
    pub(crate) at: DateTime<Utc>,
    /// Whether it was answered.
    pub(crate) answered: bool,
    /// Why not.
    pub(crate) rejection: Option<String>,
    /// The deployment.
    pub(crate) deployment_id: Option<String>,
    /// The interaction.
    pub(crate) interaction_id: Option<String>,
    /// The cohort the caller was found in.
    pub(crate) cohort_id: Option<String>,
    /// Talk time.
    pub(crate) talk_ms: Option<i64>,
    /// When it ends.
    pub(crate) ends_at: Option<DateTime<Utc>>,
    /// Sealed details.
    pub(crate) details: Option<Vec<u8>>,
}

/// The context inbound details are sealed for.
pub(crate) fn inbound_context(id: &str) -> String {
    format!("inbound_calls/{id}")
}

/// Inserts an inbound call.
pub(crate) fn insert_inbound(c: &Connection, row: &InboundRow) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO inbound_calls (id, seq, org_id, workspace_id, dialled, at_ms, answered, rejection,
                                    deployment_id, interaction_id, cohort_id, talk_ms, ends_ms, ended, details)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM inbound_calls), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                 ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        row.id,
        row.ws.org_id,
        row.ws.workspace_id,
        row.dialled,
        ms(row.at),
        row.answered,
        row.rejection,
        row.deployment_id,
        row.interaction_id,
        row.cohort_id,
        row.talk_ms,
        row.ends_at.map(ms),
        !row.answered,
        row.details
    ])?;
    Ok(())
}

const INBOUND_COLUMNS: &str =
    "id, org_id, workspace_id, dialled, at_ms, answered, rejection, deployment_id,
    interaction_id, cohort_id, talk_ms, ends_ms, details";

fn read_inbound(r: &Row<'_>) -> rusqlite::Result<InboundRow> {
    Ok(InboundRow {
        id: r.get(0)?,
        ws: WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
        dialled: r.get(3)?,
        at: from_ms(r.get(4)?),
        answered: r.get(5)?,
        rejection: r.get(6)?,
        deployment_id: r.get(7)?,
        interaction_id: r.get(8)?,
        cohort_id: r.get(9)?,
        talk_ms: r.get(10)?,
        ends_at: r.get::<_, Option<i64>>(11)?.map(from_ms),
        details: r.get(12)?,
    })
}

/// An inbound call by id.
pub(crate) fn inbound(c: &Connection, id: &str) -> Result<Option<InboundRow>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {INBOUND_COLUMNS} FROM inbound_calls WHERE id = ?1"
    ))?;
    optional(stmt.query_row(params![id], read_inbound))
}

/// Answered inbound calls that have not ended: `(ends, id)`.
pub(crate) fn open_inbound(c: &Connection) -> Result<Vec<(i64, String)>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT ends_ms, id FROM inbound_calls WHERE answered = 1 AND ended = 0 ORDER BY ends_ms, id",
    )?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Marks an inbound call ended.
pub(crate) fn end_inbound(c: &Connection, id: &str) -> Result<(), StoreError> {
    c.prepare_cached("UPDATE inbound_calls SET ended = 1 WHERE id = ?1")?
        .execute(params![id])?;
    Ok(())
}

/// A page of a workspace's inbound calls, oldest first, and their total.
pub(crate) fn list_inbound(
    c: &Connection,
    ws: &WorkspaceRef,
    offset: u64,
    limit: u32,
) -> Result<(Vec<InboundRow>, u64), StoreError> {
    let total: i64 = c
        .prepare_cached(
            "SELECT COUNT(*) FROM inbound_calls WHERE org_id = ?1 AND workspace_id = ?2",
        )?
        .query_row(params![ws.org_id, ws.workspace_id], |r| r.get(0))?;
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {INBOUND_COLUMNS} FROM inbound_calls WHERE org_id = ?1 AND workspace_id = ?2 ORDER BY seq LIMIT ?3 OFFSET ?4"
    ))?;
    let rows = stmt
        .query_map(
            params![ws.org_id, ws.workspace_id, i64::from(limit), offset as i64],
            read_inbound,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, total as u64))
}
