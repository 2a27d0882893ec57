//! Cohort rows; the users they hold are in [`super::cohort_users`] (re-exported here).
//!
//! A cohort belongs to a campaign or a deployment ([`Parent`]) of one workspace. Its `status`
//! column holds the wire statuses (`processing`, `completed`, `failed`) and one internal
//! state, [`UPLOADING`]: the row exists while its file is being received (the file's chunks
//! need it as their foreign key), is never answered, and becomes `processing` in the same
//! transaction that completes the file. `seq` orders cohorts by the moment they were
//! accepted: the list order and the processing queue.
//!
//! Users (`cohort_users`) are stored one row per accepted row of the upload, in row order:
//! the row number, a keyed hash of the E.164 number (no plaintext number is stored), and the
//! user as a sealed JSON blob bound to [`user_context`]. Lookups by number go through
//! `cohort_phone_blocks` (the cohort's `num`, sorted blocks of hash and row: see
//! `store/cohort_phones.rs`), written by [`index_phones`] once a cohort's users are all
//! stored, so that ingesting never updates a randomly ordered index row by row. For the
//! engine and inbound routing:
//! [`users_after`] and [`count_users`] walk a cohort's users in row order,
//! [`StoredUser::open`] turns one into a [`CohortUser`], [`latest_deployment_user`] finds a
//! caller among a deployment's cohorts (latest upload wins), [`completed_cohorts`] and
//! [`in_stop_file`] tell which users a campaign calls.

use chrono::{DateTime, Utc};
use contracts::wire::{
    CohortCategory, CohortFileType, CohortResult, CohortSourceType, CohortStatus,
};
use rusqlite::{Connection, Row, params};

use super::{StoreError, WorkspaceRef, files, from_ms, ms, optional};

/// The internal status of a cohort whose file is still being received.
pub(crate) const UPLOADING: &str = "uploading";

/// What a cohort belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParentKind {
    /// A campaign: its users are called.
    Campaign,
    /// A deployment: its users are recognised when they call in.
    Deployment,
}

impl ParentKind {
    /// The `parent_kind` column value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ParentKind::Campaign => "campaign",
            ParentKind::Deployment => "deployment",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "campaign" => Some(ParentKind::Campaign),
            "deployment" => Some(ParentKind::Deployment),
            _ => None,
        }
    }
}

/// The campaign or deployment a cohort belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Parent {
    /// Campaign or deployment.
    pub(crate) kind: ParentKind,
    /// Its id.
    pub(crate) id: String,
}

impl Parent {
    /// A campaign parent.
    pub fn campaign(id: impl Into<String>) -> Self {
        Parent {
            kind: ParentKind::Campaign,
            id: id.into(),
        }
    }

    /// A deployment parent.
    pub fn deployment(id: impl Into<String>) -> Self {
        Parent {
            kind: ParentKind::Deployment,
            id: id.into(),
        }
    }
}

/// A stored cohort (never one that is still [`UPLOADING`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CohortRecord {
    /// `coh-…`.
    pub id: String,
    /// Its workspace.
    pub(crate) ws: WorkspaceRef,
    /// Its campaign or deployment.
    pub(crate) parent: Parent,
    /// Its name.
    pub(crate) name: String,
    /// `processing`, `completed` or `failed`.
    pub(crate) status: CohortStatus,
    /// File upload or stream.
    pub(crate) source_type: CohortSourceType,
    /// `cohort` or `stop_file`.
    pub(crate) category: CohortCategory,
    /// Counts once completed.
    pub(crate) result: Option<CohortResult>,
    /// Why it failed.
    pub(crate) failure_reason: Option<String>,
    /// The default region for national numbers, if one was given.
    pub(crate) country_code: Option<String>,
    /// Who uploaded it.
    pub(crate) created_by: String,
    /// Who changed it last.
    pub(crate) updated_by: String,
    /// When it was accepted.
    pub(crate) created_at: DateTime<Utc>,
    /// When it last changed (processing finished).
    pub(crate) updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, org_id, workspace_id, parent_kind, parent_id, name, status, source_type, category, \
     total_records, valid_records, rejected_records, failure_reason, country_code, created_by, updated_by, \
     created_ms, updated_ms";

fn source_str(s: CohortSourceType) -> &'static str {
    match s {
        CohortSourceType::FileUpload => "file_upload",
        CohortSourceType::Stream => "stream",
    }
}

fn read(r: &Row<'_>) -> Result<CohortRecord, StoreError> {
    let id: String = r.get(0)?;
    let corrupt = |what: &str, v: &str| StoreError::Corrupt(format!("cohort {id}: {what} '{v}'"));
    let kind: String = r.get(3)?;
    let status: String = r.get(6)?;
    let source: String = r.get(7)?;
    let category: String = r.get(8)?;
    let Some(kind) = ParentKind::parse(&kind) else {
        return Err(corrupt("parent kind", &kind));
    };
    let status = match status.as_str() {
        "processing" => CohortStatus::Processing,
        "completed" => CohortStatus::Completed,
        "failed" => CohortStatus::Failed,
        other => return Err(corrupt("status", other)),
    };
    let source_type = match source.as_str() {
        "file_upload" => CohortSourceType::FileUpload,
        "stream" => CohortSourceType::Stream,
        other => return Err(corrupt("source type", other)),
    };
    let category = match category.as_str() {
        "cohort" => CohortCategory::Cohort,
        "stop_file" => CohortCategory::StopFile,
        other => return Err(corrupt("category", other)),
    };
    let counts: (Option<i64>, Option<i64>, Option<i64>) = (r.get(9)?, r.get(10)?, r.get(11)?);
    let result = match (status, counts) {
        (CohortStatus::Completed, (Some(t), Some(v), Some(rj))) => Some(CohortResult {
            total_records: t as u64,
            valid_records: v as u64,
            rejected_records: rj as u64,
        }),
        _ => None,
    };
    Ok(CohortRecord {
        ws: WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
        parent: Parent {
            kind,
            id: r.get(4)?,
        },
        name: r.get(5)?,
        status,
        source_type,
        category,
        result,
        failure_reason: r.get(12)?,
        country_code: r.get(13)?,
        created_by: r.get(14)?,
        updated_by: r.get(15)?,
        created_at: from_ms(r.get(16)?),
        updated_at: from_ms(r.get(17)?),
        id,
    })
}

/// Inserts the [`UPLOADING`] row of a cohort whose file is about to be received. Its name,
/// category and times are written by [`finish_upload`].
pub(crate) fn insert_uploading(
    c: &Connection,
    id: &str,
    ws: &WorkspaceRef,
    parent: &Parent,
    created_by: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status, source_type,
                              category, created_by, updated_by, created_ms, updated_ms)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM cohorts), (SELECT IFNULL(MAX(num), 0) + 1 FROM cohorts), ?2, ?3, ?4, ?5, '', ?6, 'file_upload',
                 'cohort', ?7, ?7, ?8, ?8)",
        params![
            id,
            ws.org_id,
            ws.workspace_id,
            parent.kind.as_str(),
            parent.id,
            UPLOADING,
            created_by,
            ms(now)
        ],
    )?;
    Ok(())
}

/// Turns an [`UPLOADING`] row into the accepted cohort `rec` (status `processing`), at the
/// end of the queue. Answers false when the row is gone (its parent was deleted meanwhile).
pub(crate) fn finish_upload(c: &Connection, rec: &CohortRecord) -> Result<bool, StoreError> {
    let n = c.execute(
        "UPDATE cohorts SET seq = (SELECT MAX(seq) + 1 FROM cohorts), name = ?2, status = 'processing',
                category = ?3, country_code = ?4, created_by = ?5, updated_by = ?6, created_ms = ?7,
                updated_ms = ?8
         WHERE id = ?1 AND status = ?9",
        params![
            rec.id,
            rec.name,
            rec.category.as_str(),
            rec.country_code,
            rec.created_by,
            rec.updated_by,
            ms(rec.created_at),
            ms(rec.updated_at),
            UPLOADING
        ],
    )?;
    Ok(n > 0)
}

/// Deletes a cohort that is still [`UPLOADING`], with the chunks received so far. Answers
/// whether there was one.
pub(crate) fn delete_uploading(c: &Connection, id: &str) -> Result<bool, StoreError> {
    let n = c.execute(
        "DELETE FROM cohorts WHERE id = ?1 AND status = ?2",
        params![id, UPLOADING],
    )?;
    Ok(n > 0)
}

/// Every cohort still [`UPLOADING`]: after a restart, uploads that were never answered.
pub(crate) fn uploading_ids(c: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = c.prepare_cached("SELECT id FROM cohorts WHERE status = ?1")?;
    let ids = stmt
        .query_map(params![UPLOADING], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(ids)
}

/// Inserts a whole cohort (a stream, processed before it is stored).
pub(crate) fn insert(c: &Connection, rec: &CohortRecord) -> Result<(), StoreError> {
    let r = rec.result;
    c.execute(
        "INSERT INTO cohorts (id, seq, num, org_id, workspace_id, parent_kind, parent_id, name, status, source_type,
                              category, total_records, valid_records, rejected_records, failure_reason,
                              country_code, created_by, updated_by, created_ms, updated_ms)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM cohorts), (SELECT IFNULL(MAX(num), 0) + 1 FROM cohorts),
                 ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                 ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            rec.id,
            rec.ws.org_id,
            rec.ws.workspace_id,
            rec.parent.kind.as_str(),
            rec.parent.id,
            rec.name,
            rec.status.as_str(),
            source_str(rec.source_type),
            rec.category.as_str(),
            r.map(|r| r.total_records as i64),
            r.map(|r| r.valid_records as i64),
            r.map(|r| r.rejected_records as i64),
            rec.failure_reason,
            rec.country_code,
            rec.created_by,
            rec.updated_by,
            ms(rec.created_at),
            ms(rec.updated_at),
        ],
    )?;
    Ok(())
}

/// A cohort of a parent in a workspace, or `None` (also for another parent's or workspace's,
/// and while it is still uploading).
pub(crate) fn get(
    c: &Connection,
    ws: &WorkspaceRef,
    parent: &Parent,
    id: &str,
) -> Result<Option<CohortRecord>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM cohorts
         WHERE id = ?1 AND org_id = ?2 AND workspace_id = ?3 AND parent_kind = ?4 AND parent_id = ?5
           AND status <> ?6"
    ))?;
    stmt.query_and_then(
        params![
            id,
            ws.org_id,
            ws.workspace_id,
            parent.kind.as_str(),
            parent.id,
            UPLOADING
        ],
        read,
    )?
    .next()
    .transpose()
}

/// One page of a parent's cohorts in upload order, and how many it has.
pub(crate) fn list(
    c: &Connection,
    ws: &WorkspaceRef,
    parent: &Parent,
    offset: u64,
    limit: u32,
) -> Result<(Vec<CohortRecord>, u64), StoreError> {
    let filter = "org_id = ?1 AND workspace_id = ?2 AND parent_kind = ?3 AND parent_id = ?4 AND status <> ?5";
    let p = (
        ws.org_id.as_str(),
        ws.workspace_id.as_str(),
        parent.kind.as_str(),
        parent.id.as_str(),
        UPLOADING,
    );
    let total: i64 = c
        .prepare_cached(&format!("SELECT COUNT(*) FROM cohorts WHERE {filter}"))?
        .query_row(params![p.0, p.1, p.2, p.3, p.4], |r| r.get(0))?;
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM cohorts WHERE {filter} ORDER BY seq LIMIT ?6 OFFSET ?7"
    ))?;
    let rows = stmt
        .query_and_then(
            params![p.0, p.1, p.2, p.3, p.4, limit as i64, offset as i64],
            read,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, total as u64))
}

/// The cohorts of a parent with this category that finished processing, in upload order.
pub fn completed_cohorts(
    c: &Connection,
    parent: &Parent,
    category: CohortCategory,
) -> Result<Vec<CohortRecord>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM cohorts
         WHERE parent_kind = ?1 AND parent_id = ?2 AND category = ?3 AND status = 'completed'
         ORDER BY seq"
    ))?;
    let rows = stmt
        .query_and_then(
            params![parent.kind.as_str(), parent.id, category.as_str()],
            read,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The uploaded cohort that waits longest for processing: the head of the queue.
pub(crate) fn next_pending(c: &Connection) -> Result<Option<CohortRecord>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM cohorts WHERE status = 'processing' AND source_type = 'file_upload'
         ORDER BY seq LIMIT 1"
    ))?;
    stmt.query_and_then([], read)?.next().transpose()
}

/// Whether a cohort exists and is still `processing`.
pub(crate) fn is_processing(c: &Connection, id: &str) -> Result<bool, StoreError> {
    let mut stmt =
        c.prepare_cached("SELECT 1 FROM cohorts WHERE id = ?1 AND status = 'processing'")?;
    Ok(optional(stmt.query_row(params![id], |_| Ok(())))?.is_some())
}

/// Deletes what processing produced so far (users, their lookup entries and the
/// rejected-records file), so that a cohort can be processed again from its start.
pub(crate) fn clear_results(c: &Connection, id: &str) -> Result<(), StoreError> {
    c.prepare_cached(
        "DELETE FROM cohort_phone_blocks WHERE cohort_num = (SELECT num FROM cohorts WHERE id = ?1)",
    )?
    .execute(params![id])?;
    c.prepare_cached("DELETE FROM cohort_users WHERE cohort_id = ?1")?
        .execute(params![id])?;
    files::delete(c, id, CohortFileType::RejectedRecords)?;
    Ok(())
}

/// Records a finished cohort: status `completed` and its counts. Answers false when it is
/// no longer `processing` (deleted meanwhile).
pub(crate) fn mark_completed(
    c: &Connection,
    id: &str,
    result: CohortResult,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let n = c.execute(
        "UPDATE cohorts SET status = 'completed', total_records = ?2, valid_records = ?3,
                rejected_records = ?4, failure_reason = NULL, updated_ms = ?5
         WHERE id = ?1 AND status = 'processing'",
        params![
            id,
            result.total_records as i64,
            result.valid_records as i64,
            result.rejected_records as i64,
            ms(now)
        ],
    )?;
    Ok(n > 0)
}

/// Records a failed cohort: status `failed`, the reason, no counts, no users and no
/// rejected-records file. Answers false when it is no longer `processing`.
pub(crate) fn mark_failed(
    c: &Connection,
    id: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    clear_results(c, id)?;
    let n = c.execute(
        "UPDATE cohorts SET status = 'failed', total_records = NULL, valid_records = NULL,
                rejected_records = NULL, failure_reason = ?2, updated_ms = ?3
         WHERE id = ?1 AND status = 'processing'",
        params![id, reason, ms(now)],
    )?;
    Ok(n > 0)
}

pub use super::cohort_phones::{PhoneEntry, index_phones};
pub use super::cohort_users::{
    AdmittedUsers, CohortUser, NewUser, Packed, StoredUser, UserBatch, UserDataError, count_users,
    in_stop_file, insert_users, latest_deployment_user, open_phone_number, open_user, user,
    user_context, users_after,
};
