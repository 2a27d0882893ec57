//! Receiving a cohort upload: the file is streamed into sealed chunks as it arrives, and the
//! cohort becomes visible (`processing`) in the same transaction that completes its files;
//! only then is the upload answered and queued for the [worker](crate::ingest). On any
//! failure the chunks already stored are deleted before the answer; if the connection
//! drops, [`Receiving`]'s `Drop` deletes them; if the platform stops, the next start does.
//! Reading the multipart form is the API's part (`crate::api::multipart`).

use bytes::Bytes;
use contracts::model::{Name, Transformation};
use contracts::wire::{Cohort, CohortCategory, CohortFileType, CohortSourceType, CohortStatus};
use futures_util::{Stream, TryStreamExt};
use rusqlite::Connection;

use super::{check_parent, parent_not_found, require_parent, to_wire};
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::ingest;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{self, CohortRecord, Parent};
use crate::store::files::{self, CHUNK_SIZE};
use crate::store::{StoreError, WorkspaceRef};

/// A cohort upload being received: it owns the `uploading` row and its chunks until the
/// cohort is accepted, and deletes them if it is dropped before.
pub struct Receiving {
    app: App,
    keys: WorkspaceKeys,
    id: String,
    ws: WorkspaceRef,
    parent: Parent,
    created_by: String,
    /// The `cohort` file once its row exists: id, bytes and chunks stored.
    file: Option<(i64, u64, u32)>,
    settled: bool,
}

impl Receiving {
    /// Starts receiving an upload for `who` under `parent`, before a byte of the body is
    /// read: the parent must exist and take cohorts (404, 409), the workspace's keys must be
    /// at hand, and the cohort gets its id.
    pub(crate) async fn begin(
        app: &App,
        who: &Principal,
        parent: &Parent,
        trace_id: Option<&str>,
    ) -> Result<Self, ApiError> {
        require_parent(app, &who.ws, parent, Some(app.clock.now())).await?;
        let keys = app.keys.workspace(&who.ws, trace_id).await?;
        let id = app.draw_id(|g| g.cohort_id()).await?;
        app.cohorts.begin_receiving(&id);
        Ok(Receiving {
            app: app.clone(),
            keys,
            id,
            ws: who.ws.clone(),
            parent: parent.clone(),
            created_by: who.name.clone(),
            file: None,
            settled: false,
        })
    }

    /// Streams the `cohort_file` part into sealed chunks of [`CHUNK_SIZE`] as its bytes
    /// arrive; an error of `part` (a body cut off or too large) ends it.
    pub(crate) async fn store_file<S>(&mut self, part: S) -> Result<(), ApiError>
    where
        S: Stream<Item = Result<Bytes, ApiError>>,
    {
        let mut part = std::pin::pin!(part);
        let now = self.app.clock.now();
        let (id, ws, parent, by) = (
            self.id.clone(),
            self.ws.clone(),
            self.parent.clone(),
            self.created_by.clone(),
        );
        let file_id = self
            .app
            .store
            .write(move |c| {
                let tx = c.transaction()?;
                cohorts::insert_uploading(&tx, &id, &ws, &parent, &by, now)?;
                let file_id = files::create(&tx, &id, CohortFileType::Cohort)?;
                tx.commit()?;
                Ok::<_, StoreError>(file_id)
            })
            .await?;
        self.file = Some((file_id, 0, 0));
        let mut buf = Vec::with_capacity(CHUNK_SIZE);
        let (mut size, mut seq) = (0u64, 0u32);
        while let Some(chunk) = part.try_next().await? {
            let mut rest = &chunk[..];
            while !rest.is_empty() {
                let n = rest.len().min(CHUNK_SIZE - buf.len());
                buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if buf.len() == CHUNK_SIZE {
                    size += buf.len() as u64;
                    let full = std::mem::replace(&mut buf, Vec::with_capacity(CHUNK_SIZE));
                    self.put_chunk(file_id, seq, full).await?;
                    seq += 1;
                }
            }
        }
        if !buf.is_empty() {
            size += buf.len() as u64;
            self.put_chunk(file_id, seq, buf).await?;
            seq += 1;
        }
        self.file = Some((file_id, size, seq));
        Ok(())
    }

    async fn put_chunk(&self, file_id: i64, seq: u32, plain: Vec<u8>) -> Result<(), ApiError> {
        let (store, keys) = (self.app.store.clone(), self.keys.clone());
        let stored = tokio::task::spawn_blocking(move || {
            let sealed = keys.seal(&files::chunk_context(file_id, seq), &plain);
            drop(plain);
            store.append_blocking(|c| files::put_chunk(c, file_id, seq, &sealed))
        })
        .await
        .map_err(|e| ApiError::Internal(format!("storing an upload chunk: {e}")))?;
        match stored {
            Ok(()) => Ok(()),
            Err(e) => {
                // The parent may have been deleted meanwhile, taking this upload with it.
                let (ws, parent) = (self.ws.clone(), self.parent.clone());
                match self
                    .app
                    .store
                    .read(move |c| check_parent(c, &ws, &parent, None))
                    .await
                {
                    Err(gone) => Err(gone),
                    Ok(()) => Err(e.into()),
                }
            }
        }
    }

    /// Deletes what was stored, and answers `e`.
    pub(crate) async fn abort(mut self, e: ApiError) -> ApiError {
        self.settled = true;
        if self.file.is_some() {
            let id = self.id.clone();
            if let Err(err) = self
                .app
                .store
                .write(move |c| cohorts::delete_uploading(c, &id))
                .await
            {
                tracing::error!(cohort = %self.id, error = %err, "could not delete a refused upload");
            }
        }
        self.app.cohorts.end_receiving(&self.id);
        e
    }

    /// Stores the transformation file, completes the cohort file and makes the cohort
    /// `processing`, in one transaction that checks the parent again.
    pub(crate) async fn accept(
        mut self,
        name: Name,
        category: CohortCategory,
        transformation: (Vec<u8>, Transformation),
    ) -> Result<Cohort, ApiError> {
        let Some((file_id, size, chunks)) = self.file else {
            return Err(ApiError::Internal(
                "accepting an upload without its file".into(),
            ));
        };
        let now = self.app.clock.now();
        let rec = CohortRecord {
            id: self.id.clone(),
            ws: self.ws.clone(),
            parent: self.parent.clone(),
            name: name.as_str().to_string(),
            status: CohortStatus::Processing,
            source_type: CohortSourceType::FileUpload,
            category,
            result: None,
            failure_reason: None,
            country_code: transformation.1.country_code.clone(),
            created_by: self.created_by.clone(),
            updated_by: self.created_by.clone(),
            created_at: now,
            updated_at: now,
        };
        let (raw, keys) = (transformation.0, self.keys.clone());
        let r2 = rec.clone();
        let accepted = self
            .app
            .store
            .write(move |c| {
                let tx = c.transaction()?;
                check_parent(&tx, &r2.ws, &r2.parent, Some(now))?;
                store_bytes(
                    &tx,
                    &keys,
                    &r2.id,
                    CohortFileType::CohortTransformation,
                    &raw,
                )?;
                files::finish(&tx, file_id, size, chunks)?;
                if !cohorts::finish_upload(&tx, &r2)? {
                    return Err(parent_not_found(&r2.parent));
                }
                tx.commit()?;
                Ok(())
            })
            .await;
        match accepted {
            Ok(()) => {
                self.settled = true;
                self.app.cohorts.end_receiving(&self.id);
                ingest::ensure_started(&self.app);
                Ok(to_wire(&rec))
            }
            Err(e) => Err(self.abort(e).await),
        }
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        // The request went away mid-upload (the client disconnected): delete what it stored.
        let (app, id, stored) = (self.app.clone(), self.id.clone(), self.file.is_some());
        let cleanup = move || {
            if stored
                && let Err(e) = app
                    .store
                    .write_blocking(|c| cohorts::delete_uploading(c, &id))
            {
                tracing::error!(cohort = %id, error = %e, "could not delete an abandoned upload");
            }
            app.cohorts.end_receiving(&id);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(cleanup);
            }
            Err(_) => cleanup(),
        }
    }
}

/// Stores a small file (held in memory) as sealed chunks, complete, inside a transaction.
pub(super) fn store_bytes(
    c: &Connection,
    keys: &WorkspaceKeys,
    cohort_id: &str,
    kind: CohortFileType,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let file_id = files::create(c, cohort_id, kind)?;
    let mut chunks = 0u32;
    for (seq, chunk) in bytes.chunks(CHUNK_SIZE).enumerate() {
        let seq = seq as u32;
        files::put_chunk(
            c,
            file_id,
            seq,
            &keys.seal(&files::chunk_context(file_id, seq), chunk),
        )?;
        chunks += 1;
    }
    files::finish(c, file_id, bytes.len() as u64, chunks)
}
