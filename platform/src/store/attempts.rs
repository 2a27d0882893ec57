//! Call attempts. An instant outbound request is stored as a `queued` attempt whose payload
//! (the request, with the user's number and variables) is a sealed blob.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::states::{CallKind, CallStatus};
use super::{StoreError, WorkspaceRef, from_ms, ms, optional};

/// A stored attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    /// The attempt id (a UUIDv7).
    pub id: String,
    /// Outbound for instant outbound calls.
    pub kind: CallKind,
    /// Its workspace.
    pub ws: WorkspaceRef,
    /// Queued, then the engine's states.
    pub status: CallStatus,
    /// Sealed JSON of what to dial.
    pub payload: Vec<u8>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// The context a sealed attempt payload is bound to.
pub fn payload_context(id: &str) -> String {
    format!("attempts/{id}")
}

/// Inserts an attempt.
pub fn insert(c: &Connection, a: &AttemptRow) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO attempts (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            a.id,
            a.kind,
            a.ws.org_id,
            a.ws.workspace_id,
            a.status,
            a.payload,
            ms(a.created_at),
            ms(a.updated_at)
        ],
    )?;
    Ok(())
}

/// An attempt by id.
pub fn get(c: &Connection, id: &str) -> Result<Option<AttemptRow>, StoreError> {
    optional(c.query_row(
        "SELECT id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms
         FROM attempts WHERE id = ?1",
        params![id],
        |r| {
            Ok(AttemptRow {
                id: r.get(0)?,
                kind: r.get(1)?,
                ws: WorkspaceRef::new(r.get::<_, String>(2)?, r.get::<_, String>(3)?),
                status: r.get(4)?,
                payload: r.get(5)?,
                created_at: from_ms(r.get(6)?),
                updated_at: from_ms(r.get(7)?),
            })
        },
    ))
}
