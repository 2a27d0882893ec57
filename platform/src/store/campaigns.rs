//! Campaign rows. The campaign's configuration is stored as its canonical create request
//! (JSON); name, description, status and times are columns for listing.

use chrono::{DateTime, Utc};
use contracts::model::CampaignSpec;
use contracts::validate::ListParams;
use contracts::wire::{CampaignCreateRequest, CampaignSortBy, CampaignStatus, SortOrder};
use rusqlite::{Connection, Row, params};

use super::{StoreError, WorkspaceRef, from_json, from_ms, like_substring, ms, optional, to_json};
use crate::lifecycle::effective_status;

/// A stored campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignRecord {
    /// `camp-…`.
    pub id: String,
    /// Its workspace.
    pub ws: WorkspaceRef,
    /// The status last stored (see [`CampaignRecord::status_at`]).
    pub status: CampaignStatus,
    /// The validated configuration.
    pub spec: CampaignSpec,
    /// Who created it.
    pub created_by: String,
    /// Who changed it last.
    pub updated_by: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl CampaignRecord {
    /// The status at `now`, time transitions applied.
    pub fn status_at(&self, now: DateTime<Utc>) -> CampaignStatus {
        effective_status(self.status, self.spec.start, self.spec.end, now)
    }
}

const COLUMNS: &str =
    "id, org_id, workspace_id, status, spec, created_by, updated_by, created_ms, updated_ms";

fn read(r: &Row<'_>) -> rusqlite::Result<(CampaignRecord0, String)> {
    Ok((
        CampaignRecord0 {
            id: r.get(0)?,
            ws: WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
            status: r.get(3)?,
            created_by: r.get(5)?,
            updated_by: r.get(6)?,
            created_at: from_ms(r.get(7)?),
            updated_at: from_ms(r.get(8)?),
        },
        r.get(4)?,
    ))
}

/// A row before its spec is parsed.
struct CampaignRecord0 {
    id: String,
    ws: WorkspaceRef,
    status: String,
    created_by: String,
    updated_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

fn finish((r, spec): (CampaignRecord0, String)) -> Result<CampaignRecord, StoreError> {
    let req: CampaignCreateRequest = from_json(&spec)?;
    let spec = CampaignSpec::from_stored(&req)
        .map_err(|e| StoreError::Corrupt(format!("campaign {}: {e}", r.id)))?;
    let status = CampaignStatus::parse(&r.status)
        .ok_or_else(|| StoreError::Corrupt(format!("campaign {}: status {}", r.id, r.status)))?;
    Ok(CampaignRecord {
        id: r.id,
        ws: r.ws,
        status,
        spec,
        created_by: r.created_by,
        updated_by: r.updated_by,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

/// Inserts a new campaign.
pub fn insert(c: &Connection, rec: &CampaignRecord) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO campaigns (id, seq, org_id, workspace_id, name, description, status, start_ms, end_ms,
                                spec, created_by, updated_by, created_ms, updated_ms)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM campaigns), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            rec.id,
            rec.ws.org_id,
            rec.ws.workspace_id,
            rec.spec.name.as_str(),
            rec.spec.description.as_ref().map(|d| d.as_str()),
            rec.status.as_str(),
            ms(rec.spec.start),
            ms(rec.spec.end),
            to_json(&rec.spec.to_create_request()),
            rec.created_by,
            rec.updated_by,
            ms(rec.created_at),
            ms(rec.updated_at),
        ],
    )?;
    Ok(())
}

/// Writes a campaign's configuration, status and last change.
pub fn update(c: &Connection, rec: &CampaignRecord) -> Result<(), StoreError> {
    c.execute(
        "UPDATE campaigns SET name = ?2, description = ?3, status = ?4, start_ms = ?5, end_ms = ?6,
                spec = ?7, updated_by = ?8, updated_ms = ?9
         WHERE id = ?1",
        params![
            rec.id,
            rec.spec.name.as_str(),
            rec.spec.description.as_ref().map(|d| d.as_str()),
            rec.status.as_str(),
            ms(rec.spec.start),
            ms(rec.spec.end),
            to_json(&rec.spec.to_create_request()),
            rec.updated_by,
            ms(rec.updated_at),
        ],
    )?;
    Ok(())
}

/// Writes only the status (a time transition: `updated_*` stay as they are).
pub fn set_status(c: &Connection, id: &str, status: CampaignStatus) -> Result<(), StoreError> {
    c.execute(
        "UPDATE campaigns SET status = ?2 WHERE id = ?1",
        params![id, status.as_str()],
    )?;
    Ok(())
}

/// Moves a campaign from one of `from` to `to` with time (the engine's transitions), unless
/// the API changed its status meanwhile. Answers whether it moved.
pub fn transition(
    c: &Connection,
    id: &str,
    from: &[CampaignStatus],
    to: CampaignStatus,
) -> Result<bool, StoreError> {
    let current: Option<String> = optional(c.query_row(
        "SELECT status FROM campaigns WHERE id = ?1",
        params![id],
        |r| r.get(0),
    ))?;
    let Some(current) = current.and_then(|s| CampaignStatus::parse(&s)) else {
        return Ok(false);
    };
    if !from.contains(&current) {
        return Ok(false);
    }
    set_status(c, id, to)?;
    Ok(true)
}

/// A campaign of the workspace, or `None` (also for another workspace's campaign).
pub fn get(
    c: &Connection,
    ws: &WorkspaceRef,
    id: &str,
) -> Result<Option<CampaignRecord>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM campaigns WHERE id = ?1 AND org_id = ?2 AND workspace_id = ?3"
    ))?;
    optional(st.query_row(params![id, ws.org_id, ws.workspace_id], read))?
        .map(finish)
        .transpose()
}

/// A campaign by id, any workspace (for the engine).
pub fn get_any(c: &Connection, id: &str) -> Result<Option<CampaignRecord>, StoreError> {
    let mut st = c.prepare_cached(&format!("SELECT {COLUMNS} FROM campaigns WHERE id = ?1"))?;
    optional(st.query_row(params![id], read))?
        .map(finish)
        .transpose()
}

/// Stores the time transitions due at `now` for the workspace's campaigns (`scheduled` to
/// `active` or `ended`, `active` to `ended`), so that lists filter on the status clients see.
/// Answers the campaigns that changed, with their new status.
pub fn settle(
    c: &Connection,
    ws: Option<&WorkspaceRef>,
    now: DateTime<Utc>,
) -> Result<Vec<(String, CampaignStatus)>, StoreError> {
    let now_ms = ms(now);
    let mut st = c.prepare_cached(
        "SELECT id, status, start_ms, end_ms FROM campaigns
         WHERE status IN ('scheduled', 'active') AND (start_ms <= ?1 OR end_ms <= ?1)
           AND (?2 IS NULL OR (org_id = ?2 AND workspace_id = ?3))",
    )?;
    let rows = st
        .query_map(
            params![
                now_ms,
                ws.map(|w| w.org_id.as_str()),
                ws.map(|w| w.workspace_id.as_str())
            ],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            },
        )?
        .collect::<Result<Vec<_>, _>>()?;
    let mut changed = Vec::new();
    for (id, status, start, end) in rows {
        let stored = CampaignStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("campaign {id}: status {status}")))?;
        let next = effective_status(stored, from_ms(start), from_ms(end), now);
        if next != stored {
            set_status(c, &id, next)?;
            changed.push((id, next));
        }
    }
    Ok(changed)
}

/// One page of the workspace's campaigns and the total number of matches.
pub fn list(
    c: &Connection,
    ws: &WorkspaceRef,
    p: &ListParams<CampaignSortBy>,
    status: Option<CampaignStatus>,
) -> Result<(Vec<CampaignRecord>, u64), StoreError> {
    let order = match p.sort_by {
        CampaignSortBy::CreatedAt => "created_ms",
        CampaignSortBy::UpdatedAt => "updated_ms",
        CampaignSortBy::Name => "name COLLATE NOCASE",
        CampaignSortBy::StartTimestamp => "start_ms",
    };
    let dir = match p.sort_order {
        SortOrder::Asc => "ASC",
        SortOrder::Desc => "DESC",
    };
    let search = p.search.as_deref().map(like_substring);
    let filter = r"org_id = ?1 AND workspace_id = ?2 AND (?3 IS NULL OR status = ?3)
        AND (?4 IS NULL OR name LIKE ?4 ESCAPE '\' OR description LIKE ?4 ESCAPE '\')";
    let status = status.map(|s| s.as_str());
    let total: i64 = c
        .prepare_cached(&format!("SELECT COUNT(*) FROM campaigns WHERE {filter}"))?
        .query_row(params![ws.org_id, ws.workspace_id, status, search], |r| {
            r.get(0)
        })?;
    let mut st = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM campaigns WHERE {filter} ORDER BY {order} {dir}, seq {dir} LIMIT ?5 OFFSET ?6"
    ))?;
    let rows = st
        .query_map(
            params![
                ws.org_id,
                ws.workspace_id,
                status,
                search,
                p.limit as i64,
                p.offset as i64
            ],
            read,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    let items = rows
        .into_iter()
        .map(finish)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((items, total as u64))
}
