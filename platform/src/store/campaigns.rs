//! Campaign rows. The campaign's configuration is stored as the validated model's serde form
//! ([`CampaignSpec`], JSON), read back without validating it again; name, description, status
//! and times are columns for listing. Rows written before that form hold the canonical create
//! request, which is still read (and validated) when the model's form does not parse.
//!
//! When the status moves with the clock is [`crate::lifecycle`]'s decision: [`settle`] and
//! [`settle_one`] store what it answers.
//!
//! The engine keeps its pacing and routing state of each campaign in the `engine_state`
//! column ([`engine_state`], [`set_engine_state`]) and runs the [`live_campaign_ids`]; it
//! takes in a change made through the API when the campaign's `revision` column (counted up
//! by every [`update`]) differs from the one it runs.

use chrono::{DateTime, Utc};
use contracts::model::CampaignSpec;
use contracts::validate::ListParams;
use contracts::wire::{CampaignCreateRequest, CampaignSortBy, CampaignStatus, SortOrder};
use rusqlite::{Connection, Row, params};

use super::{StoreError, WorkspaceRef, from_json, from_ms, like_substring, ms, optional, to_json};
use crate::lifecycle::{self, effective_status, settle_status};

/// A stored campaign.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CampaignRecord {
    /// `camp-…`.
    pub(crate) id: String,
    /// Its workspace.
    pub(crate) ws: WorkspaceRef,
    /// The status last stored (see [`CampaignRecord::status_at`]).
    pub(crate) status: CampaignStatus,
    /// The validated configuration.
    pub(crate) spec: CampaignSpec,
    /// Who created it.
    pub(crate) created_by: String,
    /// Who changed it last.
    pub(crate) updated_by: String,
    /// When it was created.
    pub(crate) created_at: DateTime<Utc>,
    /// When it last changed.
    pub(crate) updated_at: DateTime<Utc>,
}

impl CampaignRecord {
    /// The status at `now`, time transitions applied.
    pub(crate) fn status_at(&self, now: DateTime<Utc>) -> CampaignStatus {
        effective_status(self.status, self.spec.start, self.spec.end, now)
    }
}

const COLUMNS: &str =
    "id, org_id, workspace_id, status, spec, created_by, updated_by, created_ms, updated_ms";

fn read(r: &Row<'_>) -> rusqlite::Result<(UnparsedCampaign, String)> {
    Ok((
        UnparsedCampaign {
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
struct UnparsedCampaign {
    id: String,
    ws: WorkspaceRef,
    status: String,
    created_by: String,
    updated_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

/// The spec column: the model's serde form, or (rows written before it) the canonical create
/// request, validated again.
fn read_spec(id: &str, text: &str) -> Result<CampaignSpec, StoreError> {
    let model_err = match serde_json::from_str::<CampaignSpec>(text) {
        Ok(spec) => return Ok(spec),
        Err(e) => e,
    };
    let Ok(req) = from_json::<CampaignCreateRequest>(text) else {
        return Err(StoreError::Corrupt(format!(
            "campaign {id}: its configuration does not read: {model_err}"
        )));
    };
    CampaignSpec::from_stored(&req).map_err(|e| StoreError::Corrupt(format!("campaign {id}: {e}")))
}

fn finish((r, spec): (UnparsedCampaign, String)) -> Result<CampaignRecord, StoreError> {
    let spec = read_spec(&r.id, &spec)?;
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
pub(crate) fn insert(c: &Connection, rec: &CampaignRecord) -> Result<(), StoreError> {
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
            to_json(&rec.spec),
            rec.created_by,
            rec.updated_by,
            ms(rec.created_at),
            ms(rec.updated_at),
        ],
    )?;
    Ok(())
}

/// Writes a campaign's configuration, status and last change, and counts its revision up
/// (the engine takes in the change when it sees the revision move: [`get_any_revised`],
/// [`live_campaign_ids`]; `updated_ms` cannot tell two changes at one instant apart).
pub(crate) fn update(c: &Connection, rec: &CampaignRecord) -> Result<(), StoreError> {
    c.execute(
        "UPDATE campaigns SET name = ?2, description = ?3, status = ?4, start_ms = ?5, end_ms = ?6,
                spec = ?7, updated_by = ?8, updated_ms = ?9, revision = revision + 1
         WHERE id = ?1",
        params![
            rec.id,
            rec.spec.name.as_str(),
            rec.spec.description.as_ref().map(|d| d.as_str()),
            rec.status.as_str(),
            ms(rec.spec.start),
            ms(rec.spec.end),
            to_json(&rec.spec),
            rec.updated_by,
            ms(rec.updated_at),
        ],
    )?;
    Ok(())
}

/// Writes only the status (a time transition: `updated_*` stay as they are).
pub(crate) fn set_status(
    c: &Connection,
    id: &str,
    status: CampaignStatus,
) -> Result<(), StoreError> {
    c.execute(
        "UPDATE campaigns SET status = ?2 WHERE id = ?1",
        params![id, status.as_str()],
    )?;
    Ok(())
}

/// Stores the change with time due at `now` for one campaign (the engine's start and end
/// events), as [`lifecycle::settle_status`] decides from the status stored now, so that a
/// change made through the API meanwhile wins. Answers the new status, or `None` when nothing
/// moved (or the campaign is gone).
pub(crate) fn settle_one(
    c: &Connection,
    id: &str,
    now: DateTime<Utc>,
) -> Result<Option<CampaignStatus>, StoreError> {
    let row = optional(c.query_row(
        "SELECT status, start_ms, end_ms FROM campaigns WHERE id = ?1",
        params![id],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        },
    ))?;
    let Some((status, start, end)) = row else {
        return Ok(None);
    };
    settle_row(c, id, &status, start, end, now)
}

/// Stores [`lifecycle::settle_status`]'s answer for one row; answers the new status.
fn settle_row(
    c: &Connection,
    id: &str,
    status: &str,
    start_ms: i64,
    end_ms: i64,
    now: DateTime<Utc>,
) -> Result<Option<CampaignStatus>, StoreError> {
    let stored = CampaignStatus::parse(status)
        .ok_or_else(|| StoreError::Corrupt(format!("campaign {id}: status {status}")))?;
    let next = settle_status(stored, from_ms(start_ms), from_ms(end_ms), now);
    if let Some(next) = next {
        set_status(c, id, next)?;
    }
    Ok(next)
}

/// A campaign of the workspace, or `None` (also for another workspace's campaign).
pub(crate) fn get(
    c: &Connection,
    ws: &WorkspaceRef,
    id: &str,
) -> Result<Option<CampaignRecord>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM campaigns WHERE id = ?1 AND org_id = ?2 AND workspace_id = ?3"
    ))?;
    optional(stmt.query_row(params![id, ws.org_id, ws.workspace_id], read))?
        .map(finish)
        .transpose()
}

/// A campaign by id, any workspace (for the engine).
pub(crate) fn get_any(c: &Connection, id: &str) -> Result<Option<CampaignRecord>, StoreError> {
    let mut stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM campaigns WHERE id = ?1"))?;
    optional(stmt.query_row(params![id], read))?
        .map(finish)
        .transpose()
}

/// A campaign by id, any workspace, with its revision (for the engine: the revision it runs,
/// read with the configuration it runs in one query).
pub(crate) fn get_any_revised(
    c: &Connection,
    id: &str,
) -> Result<Option<(CampaignRecord, i64)>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS}, revision FROM campaigns WHERE id = ?1"
    ))?;
    optional(stmt.query_row(params![id], |r| Ok((read(r)?, r.get::<_, i64>(9)?))))?
        .map(|(row, revision)| Ok((finish(row)?, revision)))
        .transpose()
}

/// Stores the changes with time due at `now` for the workspace's campaigns, so that lists
/// filter on the status clients see. Answers the campaigns that changed, with their new
/// status.
///
/// The query only pre-filters, on the `campaigns_due` index: a status the clock moves
/// ([`lifecycle::MOVED_BY_TIME`]) and a start or end already reached (every change with time
/// falls at one of them, see [`lifecycle::next_time_transition`]). Whether and where each row
/// moves is [`lifecycle::settle_status`]'s answer.
pub(crate) fn settle(
    c: &Connection,
    ws: Option<&WorkspaceRef>,
    now: DateTime<Utc>,
) -> Result<Vec<(String, CampaignStatus)>, StoreError> {
    let now_ms = ms(now);
    let [moved_a, moved_b] = lifecycle::MOVED_BY_TIME.map(|s| s.as_str());
    let mut stmt = c.prepare_cached(
        "SELECT id, status, start_ms, end_ms FROM campaigns
         WHERE status IN (?4, ?5) AND (start_ms <= ?1 OR end_ms <= ?1)
           AND (?2 IS NULL OR (org_id = ?2 AND workspace_id = ?3))",
    )?;
    let rows = stmt
        .query_map(
            params![
                now_ms,
                ws.map(|w| w.org_id.as_str()),
                ws.map(|w| w.workspace_id.as_str()),
                moved_a,
                moved_b
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
        if let Some(next) = settle_row(c, &id, &status, start, end, now)? {
            changed.push((id, next));
        }
    }
    Ok(changed)
}

/// One page of the workspace's campaigns and the total number of matches.
pub(crate) fn list(
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
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM campaigns WHERE {filter} ORDER BY {order} {dir}, seq {dir} LIMIT ?5 OFFSET ?6"
    ))?;
    let rows = stmt
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

// The engine's view of campaigns: which it runs, and its pacing and routing state of each
// (the `engine_state` column, JSON).

/// Campaigns the engine runs (not ended, not cancelled), each with its revision (counted up
/// by every change through the API, [`update`]).
pub(crate) fn live_campaign_ids(c: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT id, revision FROM campaigns WHERE status IN ('scheduled', 'active', 'paused') ORDER BY seq",
    )?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The engine state (pacing, routing) of a campaign, as JSON.
pub(crate) fn engine_state(
    c: &Connection,
    campaign_id: &str,
) -> Result<Option<String>, StoreError> {
    Ok(optional(c.query_row(
        "SELECT engine_state FROM campaigns WHERE id = ?1",
        params![campaign_id],
        |r| r.get::<_, Option<String>>(0),
    ))?
    .flatten())
}

/// Writes the engine state of a campaign.
pub(crate) fn set_engine_state(
    c: &Connection,
    campaign_id: &str,
    state: &str,
) -> Result<(), StoreError> {
    c.prepare_cached("UPDATE campaigns SET engine_state = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, state])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        super::super::migrations::run(&c).unwrap();
        c
    }

    fn record() -> CampaignRecord {
        let now = from_ms(1_772_000_000_000);
        let spec = contracts::validate::campaign_create(
            &json!({
                "name": "Stored form",
                "description": "kept as validated",
                "start_timestamp": "2026-03-02T09:00:00Z",
                "end_timestamp": "2026-03-06T17:00:00Z",
                "allowed_schedule": {"timezone": "America/New_York", "allowed_days": ["Monday", "Friday"],
                                     "allowed_start_time": "22:00", "allowed_end_time": "06:00"},
                "app_config": {
                    "app_id": "app-1", "app_version": 3, "attempts_per_second": 0.1,
                    "connection_configs": [{"connection_id": "a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 3},
                                           {"connection_id": "b", "phone_numbers": ["+14155550102"], "weight": 1}],
                    "retry_config": {"max_retries": 2, "retry_on": ["busy", "short_duration"], "threshold_seconds": 15, "retry_interval_minutes": 30},
                    "webhook_config": {"url": "https://example.com/hook", "metadata": {"team": "north"}}
                }
            }),
            now,
            Default::default(),
        )
        .unwrap();
        CampaignRecord {
            id: "camp-1".into(),
            ws: WorkspaceRef::new("o", "w"),
            status: CampaignStatus::Scheduled,
            spec,
            created_by: "a".into(),
            updated_by: "a".into(),
            created_at: now,
            updated_at: now,
        }
    }

    fn spec_column(c: &Connection) -> String {
        c.query_row("SELECT spec FROM campaigns WHERE id = 'camp-1'", [], |r| {
            r.get(0)
        })
        .unwrap()
    }

    #[test]
    fn the_spec_is_stored_as_the_model_and_reads_back_equal() {
        let c = conn();
        let rec = record();
        insert(&c, &rec).unwrap();
        let stored: serde_json::Value = serde_json::from_str(&spec_column(&c)).unwrap();
        assert_eq!(stored["window"]["timezone"], "America/New_York");
        assert!(stored.get("start_timestamp").is_none(), "{stored}");
        assert_eq!(get_any(&c, "camp-1").unwrap(), Some(rec));
    }

    #[test]
    fn a_row_stored_as_the_create_request_still_reads() {
        let c = conn();
        let rec = record();
        insert(&c, &rec).unwrap();
        let old_form = to_json(&rec.spec.to_create_request());
        c.execute(
            "UPDATE campaigns SET spec = ?1 WHERE id = 'camp-1'",
            params![old_form],
        )
        .unwrap();
        assert_eq!(get_any(&c, "camp-1").unwrap(), Some(rec.clone()));
        // The next write stores the model's form.
        update(&c, &rec).unwrap();
        assert!(serde_json::from_str::<CampaignSpec>(&spec_column(&c)).is_ok());
    }

    #[test]
    fn a_spec_that_reads_in_neither_form_is_reported_corrupt() {
        let c = conn();
        insert(&c, &record()).unwrap();
        c.execute(
            r#"UPDATE campaigns SET spec = '{"name": "x"}' WHERE id = 'camp-1'"#,
            [],
        )
        .unwrap();
        let err = get_any(&c, "camp-1").unwrap_err().to_string();
        assert!(err.contains("camp-1"), "{err}");
    }

    #[test]
    fn every_update_counts_the_revision_up_even_at_one_instant() {
        let c = conn();
        let mut rec = record();
        insert(&c, &rec).unwrap();
        let revision = |c: &Connection| get_any_revised(c, "camp-1").unwrap().unwrap().1;
        assert_eq!(revision(&c), 0);
        assert_eq!(live_campaign_ids(&c).unwrap(), [("camp-1".to_string(), 0)]);
        // A pause and a resume at the instant of the create: `updated_ms` does not move.
        for (n, status) in [(1, CampaignStatus::Paused), (2, CampaignStatus::Active)] {
            rec.status = status;
            update(&c, &rec).unwrap();
            assert_eq!(revision(&c), n);
            assert_eq!(live_campaign_ids(&c).unwrap(), [("camp-1".to_string(), n)]);
        }
        let (read, _) = get_any_revised(&c, "camp-1").unwrap().unwrap();
        assert_eq!(read, rec);
        assert_eq!(get_any_revised(&c, "camp-2").unwrap(), None);
        // A change with time is not a change through the API.
        set_status(&c, "camp-1", CampaignStatus::Ended).unwrap();
        assert_eq!(revision(&c), 2);
    }

    #[test]
    fn settle_one_stores_what_the_lifecycle_decides() {
        let c = conn();
        let rec = record();
        insert(&c, &rec).unwrap();
        assert_eq!(
            settle_one(&c, "camp-1", rec.spec.start - chrono::Duration::seconds(1)).unwrap(),
            None
        );
        assert_eq!(
            settle_one(&c, "camp-1", rec.spec.start).unwrap(),
            Some(CampaignStatus::Active)
        );
        assert_eq!(settle_one(&c, "camp-1", rec.spec.start).unwrap(), None);
        set_status(&c, "camp-1", CampaignStatus::Paused).unwrap();
        assert_eq!(settle_one(&c, "camp-1", rec.spec.end).unwrap(), None);
        set_status(&c, "camp-1", CampaignStatus::Active).unwrap();
        assert_eq!(
            settle_one(&c, "camp-1", rec.spec.end).unwrap(),
            Some(CampaignStatus::Ended)
        );
        assert_eq!(settle_one(&c, "camp-2", rec.spec.end).unwrap(), None);
    }
}
