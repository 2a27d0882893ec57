//! Cohorts of campaigns and deployments: upload (received by [`upload::Receiving`] from the
//! API's multipart reader, processed in the background by [`crate::ingest`]), stream (JSON,
//! processed before answering by [`crate::ingest::stream`]), list, get and files.
//!
//! # Upload
//!
//! See [`upload`]: the parent is checked (404 unknown, 409 for an `ended` or `cancelled`
//! campaign) before a byte of the body is read; the file is streamed into sealed chunks as
//! it arrives; the cohort becomes visible (`processing`) in the same transaction that
//! completes its files, and only then is the upload answered.
//!
//! # Stream
//!
//! Up to 1000 users in JSON, processed by the same row rules before answering, stored in one
//! transaction with status `completed`. Its `cohort` file is the request's users as CSV
//! (`phone_number,user_identifier,app_variables,app_overrides`, the last two as JSON text);
//! its `rejected_records` file adds `rejected_reason`; it has no transformation file.

use std::io;

use bytes::Bytes;
use contracts::validate;
use contracts::wire::{
    CampaignStatus, Cohort, CohortFileType, CohortSourceType, CohortStatus, Page,
};
use rusqlite::Connection;
use serde_json::Value;

use super::conflict;
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::ingest;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{self, CohortRecord, Parent, ParentKind};
use crate::store::files;
use crate::store::{Store, WorkspaceRef, campaigns, deployments};

pub(crate) mod upload;

pub use upload::Receiving;
use upload::store_bytes;

/// The answer for a cohort.
pub(crate) fn to_wire(rec: &CohortRecord) -> Cohort {
    Cohort {
        cohort_id: rec.id.clone(),
        name: rec.name.clone(),
        status: rec.status,
        source_type: rec.source_type,
        cohort_category: rec.category,
        result: rec.result,
        failure_reason: rec.failure_reason.clone(),
        created_by: rec.created_by.clone(),
        updated_by: rec.updated_by.clone(),
        created_at: rec.created_at,
        updated_at: rec.updated_at,
    }
}

fn parent_not_found(parent: &Parent) -> ApiError {
    match parent.kind {
        ParentKind::Campaign => ApiError::not_found("campaign", &parent.id),
        ParentKind::Deployment => ApiError::not_found("deployment", &parent.id),
    }
}

/// Whether the parent exists in the workspace and, when `adding` at `now`, takes new cohorts
/// (a campaign that is `ended` or `cancelled` does not).
fn check_parent(
    c: &Connection,
    ws: &WorkspaceRef,
    parent: &Parent,
    adding: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<(), ApiError> {
    match parent.kind {
        ParentKind::Campaign => {
            let Some(rec) = campaigns::get(c, ws, &parent.id)? else {
                return Err(parent_not_found(parent));
            };
            if let Some(now) = adding {
                let status = rec.status_at(now);
                if matches!(status, CampaignStatus::Ended | CampaignStatus::Cancelled) {
                    return Err(conflict(
                        "campaign_closed",
                        format!(
                            "campaign '{}' is {}; cohorts can be added only while a campaign is scheduled, active or paused",
                            parent.id,
                            status.as_str()
                        ),
                    ));
                }
            }
            Ok(())
        }
        ParentKind::Deployment => match deployments::get(c, ws, &parent.id)? {
            Some(_) => Ok(()),
            None => Err(parent_not_found(parent)),
        },
    }
}

async fn require_parent(
    app: &App,
    ws: &WorkspaceRef,
    parent: &Parent,
    adding: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<(), ApiError> {
    let (ws, parent) = (ws.clone(), parent.clone());
    app.store
        .read(move |c| check_parent(c, &ws, &parent, adding))
        .await
}

fn cohort_not_found(parent: &Parent, id: &str) -> ApiError {
    ApiError::NotFound {
        code: "cohort_not_found",
        message: format!(
            "no cohort '{id}' in {} '{}'",
            parent.kind.as_str(),
            parent.id
        ),
    }
}

fn file_not_found(message: String) -> ApiError {
    ApiError::NotFound {
        code: "file_not_found",
        message,
    }
}

/// Adds a cohort of 1 to 1000 users from JSON, processed before the answer (`completed`).
pub async fn stream(
    app: &App,
    who: &Principal,
    parent: &Parent,
    body: &Value,
    trace_id: Option<&str>,
) -> Result<Cohort, ApiError> {
    stream_with_id(app, who, parent, body, trace_id, None).await
}

/// [`stream`] with a given id (fixtures), which must be new; `None` draws one.
pub(crate) async fn stream_with_id(
    app: &App,
    who: &Principal,
    parent: &Parent,
    body: &Value,
    trace_id: Option<&str>,
    id: Option<String>,
) -> Result<Cohort, ApiError> {
    let req = validate::cohort_stream(body, app.validation)?;
    require_parent(app, &who.ws, parent, Some(app.clock.now())).await?;
    let keys = app.keys.workspace(&who.ws, trace_id).await?;
    let id = match id {
        Some(id) => id,
        None => app.draw_id(|g| g.cohort_id()).await?,
    };
    let (k2, id2, country) = (keys.clone(), id.clone(), req.country_code.clone());
    let name = req.name.as_str().to_string();
    let category = req.category;
    let mut prepared =
        tokio::task::spawn_blocking(move || ingest::stream::prepare(&k2, &id2, &req))
            .await
            .map_err(|e| ApiError::Internal(format!("preparing a cohort stream: {e}")))??;
    let now = app.clock.now();
    let rec = CohortRecord {
        id,
        ws: who.ws.clone(),
        parent: parent.clone(),
        name,
        status: CohortStatus::Completed,
        source_type: CohortSourceType::Stream,
        category,
        result: Some(prepared.result),
        failure_reason: None,
        country_code: country,
        created_by: who.name.clone(),
        updated_by: who.name.clone(),
        created_at: now,
        updated_at: now,
    };
    let answer = app
        .store
        .write(move |c| {
            let tx = c.transaction()?;
            check_parent(&tx, &rec.ws, &rec.parent, Some(now))?;
            cohorts::insert(&tx, &rec)?;
            cohorts::insert_users(&tx, &rec.id, &prepared.users)?;
            cohorts::index_phones(&tx, &rec.id, &mut prepared.phones)?;
            store_bytes(
                &tx,
                &keys,
                &rec.id,
                CohortFileType::Cohort,
                &prepared.cohort_csv,
            )?;
            if let Some(rejected) = &prepared.rejected_csv {
                store_bytes(
                    &tx,
                    &keys,
                    &rec.id,
                    CohortFileType::RejectedRecords,
                    rejected,
                )?;
            }
            tx.commit()?;
            Ok(to_wire(&rec))
        })
        .await;
    // A completed cohort: the engine admits its users.
    app.changes.bump();
    answer
}

/// One page of a parent's cohorts in upload order, with the paging read from the query.
pub(crate) async fn list(
    app: &App,
    who: &Principal,
    parent: &Parent,
    query: &[(String, String)],
) -> Result<Page<Cohort>, ApiError> {
    let (offset, limit) = validate::cohort_list_query(query)?;
    let (ws, parent) = (who.ws.clone(), parent.clone());
    let found = app
        .store
        .read(move |c| {
            check_parent(c, &ws, &parent, None)?;
            Ok::<_, ApiError>(cohorts::list(c, &ws, &parent, offset, limit)?)
        })
        .await?;
    let (rows, total) = found;
    let page = Page {
        items: rows.iter().map(to_wire).collect(),
        total,
        limit,
        offset,
        next_page_uri: None,
        prev_page_uri: None,
    };
    Ok(page)
}

async fn find(
    app: &App,
    who: &Principal,
    parent: &Parent,
    id: &str,
) -> Result<CohortRecord, ApiError> {
    let (ws, parent, id) = (who.ws.clone(), parent.clone(), id.to_string());
    app.store
        .read(move |c| {
            check_parent(c, &ws, &parent, None)?;
            cohorts::get(c, &ws, &parent, &id)?.ok_or_else(|| cohort_not_found(&parent, &id))
        })
        .await
}

/// A cohort of the parent.
pub(crate) async fn get(
    app: &App,
    who: &Principal,
    parent: &Parent,
    id: &str,
) -> Result<Cohort, ApiError> {
    Ok(to_wire(&find(app, who, parent, id).await?))
}

/// A file of a cohort, ready to stream: its type, a file name, its size, and its bytes
/// arriving chunk by chunk (decrypted on a blocking thread, at most two chunks ahead).
#[derive(Debug)]
pub(crate) struct CohortFile {
    /// Which file.
    pub(crate) file_type: CohortFileType,
    /// A name for `Content-Disposition`.
    pub(crate) filename: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// Its bytes, in order; an error ends the stream early.
    pub(crate) body: tokio::sync::mpsc::Receiver<Result<Bytes, io::Error>>,
}

/// The file of a cohort asked for by `file_type`: `cohort` (as uploaded), `rejected_records`
/// (409 while processing; 404 when there are none), `cohort_transformation` (as uploaded;
/// 404 for streams).
pub(crate) async fn file(
    app: &App,
    who: &Principal,
    parent: &Parent,
    id: &str,
    query: &[(String, String)],
    trace_id: Option<&str>,
) -> Result<CohortFile, ApiError> {
    let file_type = validate::cohort_files_query(query)?;
    let rec = find(app, who, parent, id).await?;
    match (file_type, rec.status) {
        (CohortFileType::RejectedRecords, CohortStatus::Processing) => {
            return Err(conflict(
                "cohort_processing",
                format!(
                    "cohort '{}' is still processing; its rejected records are known once it is completed",
                    rec.id
                ),
            ));
        }
        (CohortFileType::RejectedRecords, CohortStatus::Failed) => {
            return Err(file_not_found(format!(
                "cohort '{}' failed as a whole (see failure_reason); it has no rejected records",
                rec.id
            )));
        }
        (CohortFileType::CohortTransformation, _)
            if rec.source_type == CohortSourceType::Stream =>
        {
            return Err(file_not_found(format!(
                "cohort '{}' was streamed as JSON; it has no transformation file",
                rec.id
            )));
        }
        _ => {}
    }
    let cid = rec.id.clone();
    let row = app
        .store
        .read(move |c| files::get(c, &cid, file_type))
        .await?
        .filter(|f| f.complete);
    let Some(row) = row else {
        return Err(file_not_found(match file_type {
            CohortFileType::RejectedRecords => format!(
                "cohort '{}' has no rejected records (result.rejected_records is 0)",
                rec.id
            ),
            other => format!("cohort '{}' has no {} file", rec.id, other.as_str()),
        }));
    };
    let keys = app.keys.workspace(&who.ws, trace_id).await?;
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    if row.chunks > 0 {
        // Open the first chunk before answering, so that a file that does not open is an
        // error answer rather than a cut-off download.
        let (store, k) = (app.store.clone(), keys.clone());
        let first = tokio::task::spawn_blocking(move || files::open_chunk(&store, &k, row.id, 0))
            .await
            .map_err(|e| ApiError::Internal(format!("reading a file: {e}")))?
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        tx.try_send(Ok(Bytes::from(first)))
            .map_err(|_| ApiError::Internal("file channel".into()))?;
        let store = app.store.clone();
        tokio::task::spawn_blocking(move || send_chunks(&store, &keys, row, tx));
    }
    let filename = match file_type {
        CohortFileType::Cohort => format!("{}.csv", rec.id),
        CohortFileType::RejectedRecords => format!("{}-rejected_records.csv", rec.id),
        CohortFileType::CohortTransformation => format!("{}-cohort_transformation.json", rec.id),
    };
    Ok(CohortFile {
        file_type,
        filename,
        size: row.size,
        body: rx,
    })
}

/// Sends chunks 1.. of a file into `tx`, stopping at the first error or when the receiver
/// is gone (the client went away).
fn send_chunks(
    store: &Store,
    keys: &WorkspaceKeys,
    row: files::FileRow,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, io::Error>>,
) {
    for seq in 1..row.chunks {
        let item = files::open_chunk(store, keys, row.id, seq)
            .map(Bytes::from)
            .map_err(|e| {
                tracing::error!(file = row.id, seq, error = %e, "a file chunk could not be read");
                io::Error::other(e)
            });
        let failed = item.is_err();
        if tx.blocking_send(item).is_err() || failed {
            return;
        }
    }
}
