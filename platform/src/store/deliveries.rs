//! Webhook deliveries: the `webhook_deliveries` table. Each event to tell a receiver of is one
//! row, `pending` until a try delivers it (`delivered`) or the tries run out (`failed`; see
//! [`DeliveryState`]). The body is sealed JSON bound to [`delivery_context`]: the store moves
//! it sealed; the delivery loop opens it to send it.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::states::{DeliveryKind, DeliveryState};
use super::{StoreError, WorkspaceRef, from_ms, ms};

/// A delivery to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// `whd-…`.
    pub(crate) id: String,
    /// Its workspace.
    pub(crate) ws: WorkspaceRef,
    /// What it tells of.
    pub(crate) kind: DeliveryKind,
    /// The attempt or interaction.
    pub(crate) subject_id: String,
    /// Where.
    pub(crate) url: String,
    /// Sealed JSON body.
    pub(crate) body: Vec<u8>,
    /// Tries so far.
    pub(crate) tries: u32,
    /// When the event was created.
    pub(crate) created_at: DateTime<Utc>,
}

/// The context a delivery body is sealed for.
pub(crate) fn delivery_context(id: &str) -> String {
    format!("webhook_deliveries/{id}")
}

/// Queues a delivery, due at `at`.
pub(crate) fn insert_delivery(
    c: &Connection,
    d: &Delivery,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO webhook_deliveries (id, seq, org_id, workspace_id, kind, subject_id, url, body, status,
                                         tries, next_try_ms, created_ms)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM webhook_deliveries), ?2, ?3, ?4, ?5, ?6, ?7,
                 'pending', 0, ?8, ?8)",
    )?
    .execute(params![
        d.id,
        d.ws.org_id,
        d.ws.workspace_id,
        d.kind,
        d.subject_id,
        d.url,
        d.body,
        ms(at)
    ])?;
    Ok(())
}

/// When the earliest pending delivery is due.
pub(crate) fn next_delivery_due(c: &Connection) -> Result<Option<DateTime<Utc>>, StoreError> {
    let v: Option<i64> = c
        .prepare_cached("SELECT MIN(next_try_ms) FROM webhook_deliveries WHERE status = 'pending'")?
        .query_row([], |r| r.get(0))?;
    Ok(v.map(from_ms))
}

/// Pending deliveries due at or before `at`, oldest first, at most `limit`.
pub(crate) fn due_deliveries(
    c: &Connection,
    at: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<(DateTime<Utc>, Delivery)>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, org_id, workspace_id, kind, subject_id, url, body, tries, created_ms, next_try_ms
         FROM webhook_deliveries WHERE status = 'pending' AND next_try_ms <= ?1
         ORDER BY next_try_ms, seq LIMIT ?2",
    )?;
    let rows = stmt
        .query_map(params![ms(at), i64::from(limit)], |r| {
            Ok((
                from_ms(r.get(9)?),
                Delivery {
                    id: r.get(0)?,
                    ws: WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
                    kind: r.get(3)?,
                    subject_id: r.get(4)?,
                    url: r.get(5)?,
                    body: r.get(6)?,
                    tries: r.get::<_, i64>(7)? as u32,
                    created_at: from_ms(r.get(8)?),
                },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// What became of one delivery in a round: a try delivered it, or failed with the next try
/// at `next` (`None`: given up), or no try was made and it waits until `next`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TryRecord {
    /// The delivery.
    pub(crate) id: String,
    /// Tries so far, this one included.
    pub(crate) tries: u32,
    /// When it was delivered (the platform's clock), if it was.
    pub(crate) delivered_at: Option<DateTime<Utc>>,
    /// When the next try is due; `None` with `delivered_at` also `None`: given up.
    pub(crate) next: Option<DateTime<Utc>>,
    /// The receiver's answer, when there was one.
    pub(crate) status_code: Option<u16>,
    /// What went wrong, when something did.
    pub(crate) error: Option<String>,
}

/// Records the tries of a round, in one transaction.
pub(crate) fn record_tries(c: &mut Connection, records: &[TryRecord]) -> Result<(), StoreError> {
    let tx = c.transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "UPDATE webhook_deliveries SET status = ?2, tries = ?3, next_try_ms = ?4, last_status = ?5,
                    last_error = ?6, delivered_ms = ?7 WHERE id = ?1",
        )?;
        for r in records {
            let status = DeliveryState::after_try(r.delivered_at.is_some(), r.next.is_some());
            stmt.execute(params![
                r.id,
                status,
                i64::from(r.tries),
                r.next.map(ms),
                r.status_code.map(i64::from),
                r.error,
                r.delivered_at.map(ms)
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// A stored delivery, for listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeliveryRow {
    /// Its id.
    pub(crate) id: String,
    /// What it tells of.
    pub(crate) kind: DeliveryKind,
    /// Its subject.
    pub(crate) subject_id: String,
    /// Where.
    pub(crate) url: String,
    /// Pending, delivered or failed.
    pub(crate) status: DeliveryState,
    /// Tries so far.
    pub(crate) tries: u32,
    /// Last status code.
    pub(crate) last_status: Option<u16>,
    /// Last error.
    pub(crate) last_error: Option<String>,
    /// Created.
    pub(crate) created_at: DateTime<Utc>,
    /// Next try.
    pub(crate) next_try_at: Option<DateTime<Utc>>,
    /// Delivered.
    pub(crate) delivered_at: Option<DateTime<Utc>>,
}

/// A page of a workspace's deliveries, oldest first, and their total.
pub(crate) fn list_deliveries(
    c: &Connection,
    ws: &WorkspaceRef,
    offset: u64,
    limit: u32,
) -> Result<(Vec<DeliveryRow>, u64), StoreError> {
    let total: i64 = c
        .prepare_cached(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE org_id = ?1 AND workspace_id = ?2",
        )?
        .query_row(params![ws.org_id, ws.workspace_id], |r| r.get(0))?;
    let mut stmt = c.prepare_cached(
        "SELECT id, kind, subject_id, url, status, tries, last_status, last_error, created_ms, next_try_ms, delivered_ms
         FROM webhook_deliveries WHERE org_id = ?1 AND workspace_id = ?2 ORDER BY seq LIMIT ?3 OFFSET ?4",
    )?;
    let rows = stmt
        .query_map(
            params![ws.org_id, ws.workspace_id, i64::from(limit), offset as i64],
            |r| {
                let status: DeliveryState = r.get(4)?;
                Ok(DeliveryRow {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    subject_id: r.get(2)?,
                    url: r.get(3)?,
                    next_try_at: if status == DeliveryState::Pending {
                        r.get::<_, Option<i64>>(9)?.map(from_ms)
                    } else {
                        None
                    },
                    status,
                    tries: r.get::<_, i64>(5)? as u32,
                    last_status: r.get::<_, Option<i64>>(6)?.map(|s| s as u16),
                    last_error: r.get(7)?,
                    created_at: from_ms(r.get(8)?),
                    delivered_at: r.get::<_, Option<i64>>(10)?.map(from_ms),
                })
            },
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, total as u64))
}
