//! Cohorts of campaigns and deployments: upload (multipart, processed in the background by
//! [`crate::cohort_processing`]), stream (JSON, processed before answering), list, get and
//! files.
//!
//! # Upload
//!
//! The caller is authorised and the parent checked (404 unknown, 409 for an `ended` or
//! `cancelled` campaign) before a byte of the body is read; a `Content-Length` above
//! `max_upload_bytes` is a 413 at once. The parts are read in any order: `name` and
//! `cohort_category` (text, at most [`TEXT_PART_MAX_BYTES`]), `cohort_transformation_file`
//! (JSON, at most [`TRANSFORMATION_MAX_BYTES`], checked with
//! [`validate::transformation_config`]), and `cohort_file`, which is streamed into sealed
//! 1 MiB chunks as it arrives. Every problem is reported at once (422, `loc` under
//! `["body", <part>]`). Past `max_upload_bytes` of body the answer is 413. On any failure
//! the chunks already stored are deleted before the answer; if the connection drops, a
//! guard deletes them; if the platform stops, the next start does. The cohort becomes
//! visible (`processing`) in the same transaction that completes its files, and only then is
//! the upload answered.
//!
//! # Stream
//!
//! Up to 1000 users in JSON, processed by the same row rules before answering, stored in one
//! transaction with status `completed`. Its `cohort` file is the request's users as CSV
//! (`phone_number,user_identifier,app_variables,app_overrides`, the last two as JSON text);
//! its `rejected_records` file adds `rejected_reason`; it has no transformation file.

use std::collections::HashMap;
use std::io;

use bytes::Bytes;
use contracts::domain::phone;
use contracts::error::{ErrorType, Loc, ValidationErrors};
use contracts::model::{CohortStream, Name};
use contracts::validate;
use contracts::wire::{
    CampaignStatus, Cohort, CohortCategory, CohortFileType, CohortResult, CohortSourceType,
    CohortStatus, JsonObject, Page,
};
use futures_util::Stream;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;

use super::conflict;
use crate::app::App;
use crate::cohort_processing::{self, UserJson, seal_user};
use crate::config::Principal;
use crate::error::ApiError;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{self, CohortRecord, NewUser, Parent, ParentKind};
use crate::store::files::{self, CHUNK_SIZE};
use crate::store::{Store, StoreError, WorkspaceRef, campaigns, deployments};

pub use crate::cohort_processing::TRANSFORMATION_MAX_BYTES;

/// The largest `name` or `cohort_category` part read.
pub const TEXT_PART_MAX_BYTES: usize = 4096;

/// The multipart parts of an upload.
const PARTS: [&str; 4] = [
    "name",
    "cohort_file",
    "cohort_transformation_file",
    "cohort_category",
];

/// The answer for a cohort.
pub fn to_wire(rec: &CohortRecord) -> Cohort {
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
) -> Result<Result<(), ApiError>, StoreError> {
    match parent.kind {
        ParentKind::Campaign => {
            let Some(rec) = campaigns::get(c, ws, &parent.id)? else {
                return Ok(Err(parent_not_found(parent)));
            };
            if let Some(now) = adding {
                let status = rec.status_at(now);
                if matches!(status, CampaignStatus::Ended | CampaignStatus::Cancelled) {
                    return Ok(Err(conflict(
                        "campaign_closed",
                        format!(
                            "campaign '{}' is {}; cohorts can be added only while a campaign is scheduled, active or paused",
                            parent.id,
                            status.as_str()
                        ),
                    )));
                }
            }
            Ok(Ok(()))
        }
        ParentKind::Deployment => Ok(match deployments::get(c, ws, &parent.id)? {
            Some(_) => Ok(()),
            None => Err(parent_not_found(parent)),
        }),
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
        .await?
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

/// The boundary of a `multipart/form-data` request, or why the request is not one.
fn multipart_boundary(content_type: Option<&str>) -> Result<String, ApiError> {
    let Some(ct) = content_type else {
        return Err(ApiError::UnsupportedMediaType {
            message: "this route reads multipart/form-data (parts name, cohort_file, cohort_transformation_file, cohort_category); the request has no Content-Type".into(),
        });
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence != "multipart/form-data" {
        return Err(ApiError::UnsupportedMediaType {
            message: format!(
                "this route reads multipart/form-data (parts name, cohort_file, cohort_transformation_file, cohort_category), not '{essence}'"
            ),
        });
    }
    multer::parse_boundary(ct).map_err(|_| {
        ValidationErrors::single(
            &Loc::header().at("content-type"),
            ErrorType::ValueError,
            "Value error, multipart/form-data needs a boundary parameter",
        )
        .into()
    })
}

fn multipart_error(e: multer::Error, limit: u64) -> ApiError {
    match e {
        multer::Error::StreamSizeExceeded { .. } => ApiError::TooLarge { limit },
        other => ValidationErrors::single(
            &Loc::body(),
            ErrorType::ValueError,
            format!("Value error, the multipart body could not be read: {other}"),
        )
        .into(),
    }
}

/// Reads a small part whole; `Ok(None)` (the rest drained) when it is larger than `cap`.
async fn read_part(
    field: &mut multer::Field<'static>,
    cap: usize,
) -> Result<Option<Vec<u8>>, multer::Error> {
    let mut buf = Vec::new();
    let mut over = false;
    while let Some(chunk) = field.chunk().await? {
        if over || buf.len() + chunk.len() > cap {
            over = true;
            continue;
        }
        buf.extend_from_slice(&chunk);
    }
    Ok((!over).then_some(buf))
}

async fn drain(field: &mut multer::Field<'static>) -> Result<(), multer::Error> {
    while field.chunk().await?.is_some() {}
    Ok(())
}

/// A text part: `Some(text)` or the failures recorded.
fn text_part(raw: Option<Vec<u8>>, loc: &Loc, errors: &mut ValidationErrors) -> Option<String> {
    let Some(raw) = raw else {
        errors.add(
            loc,
            ErrorType::StringTooLong,
            format!("String should have at most {TEXT_PART_MAX_BYTES} bytes"),
        );
        return None;
    };
    match String::from_utf8(raw) {
        Ok(s) => Some(s),
        Err(_) => {
            errors.add(
                loc,
                ErrorType::StringType,
                "Input should be a valid string, unable to parse raw data as a unicode string",
            );
            None
        }
    }
}

fn category(s: &str) -> Option<CohortCategory> {
    match s {
        "cohort" => Some(CohortCategory::Cohort),
        "stop_file" => Some(CohortCategory::StopFile),
        _ => None,
    }
}

/// The transformation config: its bytes as uploaded and the checked config, or the
/// failures recorded.
fn transformation_part(
    raw: Option<Vec<u8>>,
    errors: &mut ValidationErrors,
) -> Option<(Vec<u8>, contracts::model::Transformation)> {
    let loc = Loc::body().at("cohort_transformation_file");
    let Some(raw) = raw else {
        errors.value_error(
            &loc,
            format_args!("the transformation file is larger than {TRANSFORMATION_MAX_BYTES} bytes"),
        );
        return None;
    };
    if raw.iter().all(u8::is_ascii_whitespace) {
        errors.add(
            &loc,
            ErrorType::JsonInvalid,
            "the transformation file is empty; it must hold a JSON object",
        );
        return None;
    }
    let value: Value = match serde_json::from_slice(&raw) {
        Ok(v) => v,
        Err(e) => {
            errors.add(
                &loc,
                ErrorType::JsonInvalid,
                format!("the transformation file is not JSON: {e}"),
            );
            return None;
        }
    };
    // Read leniently even in strict mode: `validate::transformation_config` checks the
    // free-form maps `app_variables` and `app_overrides` as objects of known keys, so strict
    // mode would refuse every variable name (and an unknown override key must fail the
    // processing, not the upload).
    match validate::transformation_config(&value, &loc, validate::Options::default()) {
        Ok(t) => Some((raw, t)),
        Err(e) => {
            errors.extend(e);
            None
        }
    }
}

/// A cohort upload being received: it owns the `uploading` row and its chunks until the
/// cohort is accepted, and deletes them if it is dropped before.
struct Receiving {
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
    async fn new(
        app: &App,
        keys: WorkspaceKeys,
        who: &Principal,
        parent: &Parent,
    ) -> Result<Self, ApiError> {
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

    /// Streams the `cohort_file` part into sealed chunks.
    async fn store_file(&mut self, field: &mut multer::Field<'static>) -> Result<(), ApiError> {
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
                Ok(file_id)
            })
            .await?;
        self.file = Some((file_id, 0, 0));
        let limit = self.app.config.max_upload_bytes;
        let mut buf = Vec::with_capacity(CHUNK_SIZE);
        let (mut size, mut seq) = (0u64, 0u32);
        while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(e, limit))? {
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
            store.write_blocking(|c| files::put_chunk(c, file_id, seq, &sealed))
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
                    .await?
                {
                    Err(gone) => Err(gone),
                    Ok(()) => Err(e.into()),
                }
            }
        }
    }

    /// Deletes what was stored, and answers `e`.
    async fn abort(mut self, e: ApiError) -> ApiError {
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
    async fn accept(
        mut self,
        name: Name,
        category: CohortCategory,
        transformation: (Vec<u8>, contracts::model::Transformation),
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
                if let Err(e) = check_parent(&tx, &r2.ws, &r2.parent, Some(now))? {
                    return Ok(Err(e));
                }
                store_bytes(
                    &tx,
                    &keys,
                    &r2.id,
                    CohortFileType::CohortTransformation,
                    &raw,
                )?;
                files::finish(&tx, file_id, size, chunks)?;
                if !cohorts::finish_upload(&tx, &r2)? {
                    return Ok(Err(parent_not_found(&r2.parent)));
                }
                tx.commit()?;
                Ok(Ok(()))
            })
            .await;
        match accepted {
            Ok(Ok(())) => {
                self.settled = true;
                self.app.cohorts.end_receiving(&self.id);
                cohort_processing::ensure_started(&self.app);
                Ok(to_wire(&rec))
            }
            Ok(Err(e)) => Err(self.abort(e).await),
            Err(e) => Err(self.abort(e.into()).await),
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
fn store_bytes(
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

/// Receives a multipart upload, stores it, and queues it for processing. The caller has
/// authorised `who`.
pub async fn upload<S, O, E>(
    app: &App,
    who: &Principal,
    parent: &Parent,
    content_type: Option<&str>,
    content_length: Option<u64>,
    body: S,
    trace_id: Option<&str>,
) -> Result<Cohort, ApiError>
where
    S: Stream<Item = Result<O, E>> + Send + 'static,
    O: Into<Bytes> + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let limit = app.config.max_upload_bytes;
    let boundary = multipart_boundary(content_type)?;
    if content_length.is_some_and(|n| n > limit) {
        return Err(ApiError::TooLarge { limit });
    }
    require_parent(app, &who.ws, parent, Some(app.clock.now())).await?;
    let keys = app.keys.workspace(&who.ws, trace_id).await?;
    let constraints =
        multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(limit));
    let mut form = multer::Multipart::with_constraints(body, boundary, constraints);
    let mut receiving = Receiving::new(app, keys, who, parent).await?;
    let mut errors = ValidationErrors::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut name: Option<Name> = None;
    let mut cohort_category = CohortCategory::Cohort;
    let mut transformation = None;
    let mut has_file = false;
    loop {
        let mut field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            // A body with no part at all (only the closing delimiter, or nothing): report
            // the missing parts below rather than a malformed stream.
            Err(multer::Error::IncompleteStream) if seen.is_empty() => break,
            Err(e) => return Err(receiving.abort(multipart_error(e, limit)).await),
        };
        let part = field.name().unwrap_or("").to_string();
        let loc = Loc::body().at(part.as_str());
        let count = seen.entry(part.clone()).or_insert(0);
        *count += 1;
        let read = if *count > 1 && PARTS.contains(&part.as_str()) {
            errors.value_error(
                &loc,
                format_args!("the part '{part}' was sent more than once"),
            );
            drain(&mut field).await
        } else {
            match part.as_str() {
                "name" => read_part(&mut field, TEXT_PART_MAX_BYTES).await.map(|raw| {
                    if let Some(text) = text_part(raw, &loc, &mut errors) {
                        match Name::parse(&text) {
                            Ok(n) => name = Some(n),
                            Err(e) => errors.add(&loc, e.error_type(), e.message()),
                        }
                    }
                }),
                "cohort_category" => read_part(&mut field, TEXT_PART_MAX_BYTES).await.map(|raw| {
                    if let Some(text) = text_part(raw, &loc, &mut errors) {
                        match category(&text) {
                            Some(c) => cohort_category = c,
                            None => errors.add(
                                &loc,
                                ErrorType::Enum,
                                "Input should be 'cohort' or 'stop_file'",
                            ),
                        }
                    }
                }),
                "cohort_transformation_file" => {
                    read_part(&mut field, TRANSFORMATION_MAX_BYTES as usize)
                        .await
                        .map(|raw| transformation = transformation_part(raw, &mut errors))
                }
                "cohort_file" => {
                    has_file = true;
                    if errors.is_empty() {
                        if let Err(e) = receiving.store_file(&mut field).await {
                            return Err(receiving.abort(e).await);
                        }
                        Ok(())
                    } else {
                        // Nothing will be stored: read on only to report every problem.
                        drain(&mut field).await
                    }
                }
                _ => {
                    if app.validation.strict {
                        errors.add(
                            &loc,
                            ErrorType::ExtraForbidden,
                            "Extra inputs are not permitted",
                        );
                    }
                    drain(&mut field).await
                }
            }
        };
        if let Err(e) = read {
            return Err(receiving.abort(multipart_error(e, limit)).await);
        }
    }
    for (part, present) in [
        ("name", seen.contains_key("name")),
        ("cohort_file", has_file),
        (
            "cohort_transformation_file",
            seen.contains_key("cohort_transformation_file"),
        ),
    ] {
        if !present {
            errors.add(&Loc::body().at(part), ErrorType::Missing, "Field required");
        }
    }
    match (name, transformation) {
        (Some(name), Some(t)) if errors.is_empty() => {
            receiving.accept(name, cohort_category, t).await
        }
        _ => Err(receiving.abort(ApiError::Validation(errors)).await),
    }
}

/// What a stream comes to before it is stored.
struct PreparedStream {
    users: Vec<NewUser>,
    cohort_csv: Vec<u8>,
    rejected_csv: Option<Vec<u8>>,
    result: CohortResult,
}

#[derive(Serialize, Default)]
struct StreamOverrides<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_bot_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_state_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_language_name: Option<&'a str>,
}

fn non_blank(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|v| !v.trim().is_empty())
}

/// Applies the row rules to a stream's users: numbers that do not normalise and repeated
/// numbers are rejected; the users are sealed for `cohort_id`.
fn prepare_stream(keys: &WorkspaceKeys, cohort_id: &str, req: &CohortStream) -> PreparedStream {
    const HEADER: [&str; 4] = [
        "phone_number",
        "user_identifier",
        "app_variables",
        "app_overrides",
    ];
    let mut cohort_csv = csv::Writer::from_writer(Vec::new());
    let mut rejected: Option<csv::Writer<Vec<u8>>> = None;
    cohort_csv.write_record(HEADER).expect("CSV to memory");
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut users = Vec::with_capacity(req.users.len());
    let mut json = Vec::with_capacity(256);
    let empty = JsonObject::new();
    for (i, u) in req.users.iter().enumerate() {
        let row_no = i as u64 + 1;
        let variables_text = u
            .app_variables
            .as_ref()
            .map(|v| serde_json::to_string(v).expect("JSON serialises"))
            .unwrap_or_default();
        let overrides_text = u
            .app_overrides
            .as_ref()
            .map(|v| serde_json::to_string(v).expect("JSON serialises"))
            .unwrap_or_default();
        let fields = [
            u.phone_number.as_str(),
            u.user_identifier.as_deref().unwrap_or(""),
            variables_text.as_str(),
            overrides_text.as_str(),
        ];
        cohort_csv.write_record(fields).expect("CSV to memory");
        let verdict = match phone::normalize(&u.phone_number, req.country_code.as_deref()) {
            Err(e) => Err(e.to_string()),
            Ok(p) => match seen.get(p.as_str()) {
                Some(first) => Err(format!(
                    "duplicate phone number: {} is already in data row {first}",
                    p.as_str()
                )),
                None => {
                    seen.insert(p.as_str().to_string(), row_no);
                    let o = u.app_overrides.as_ref();
                    let user = UserJson {
                        phone_number: p.as_str(),
                        user_identifier: non_blank(&u.user_identifier),
                        app_variables: u.app_variables.as_ref().unwrap_or(&empty),
                        app_overrides: StreamOverrides {
                            initial_bot_message: o.and_then(|o| non_blank(&o.initial_bot_message)),
                            initial_state_name: o.and_then(|o| non_blank(&o.initial_state_name)),
                            initial_language_name: o
                                .and_then(|o| non_blank(&o.initial_language_name)),
                        },
                    };
                    users.push(NewUser {
                        row_no,
                        phone_hash: keys.lookup_hash(p.as_str()),
                        data: seal_user(keys, cohort_id, row_no, &user, &mut json),
                    });
                    Ok(())
                }
            },
        };
        if let Err(reason) = verdict {
            let w = rejected.get_or_insert_with(|| {
                let mut w = csv::Writer::from_writer(Vec::new());
                let mut h = HEADER.to_vec();
                h.push("rejected_reason");
                w.write_record(h).expect("CSV to memory");
                w
            });
            let mut row = fields.to_vec();
            row.push(reason.as_str());
            w.write_record(row).expect("CSV to memory");
        }
    }
    let total = req.users.len() as u64;
    let valid = users.len() as u64;
    PreparedStream {
        users,
        cohort_csv: cohort_csv.into_inner().expect("CSV to memory"),
        rejected_csv: rejected.map(|w| w.into_inner().expect("CSV to memory")),
        result: CohortResult {
            total_records: total,
            valid_records: valid,
            rejected_records: total - valid,
        },
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
pub async fn stream_with_id(
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
    let prepared = tokio::task::spawn_blocking(move || prepare_stream(&k2, &id2, &req))
        .await
        .map_err(|e| ApiError::Internal(format!("preparing a cohort stream: {e}")))?;
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
            if let Err(e) = check_parent(&tx, &rec.ws, &rec.parent, Some(now))? {
                return Ok(Err(e));
            }
            cohorts::insert(&tx, &rec)?;
            cohorts::insert_users(&tx, &rec.id, &prepared.users)?;
            cohorts::index_phones(&tx, &rec.id)?;
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
            Ok(Ok(to_wire(&rec)))
        })
        .await?;
    // A completed cohort: the engine admits its users.
    app.changes.bump();
    answer
}

/// One page of a parent's cohorts in upload order, with the paging read from the query.
pub async fn list(
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
            if let Err(e) = check_parent(c, &ws, &parent, None)? {
                return Ok(Err(e));
            }
            Ok(Ok(cohorts::list(c, &ws, &parent, offset, limit)?))
        })
        .await??;
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
            if let Err(e) = check_parent(c, &ws, &parent, None)? {
                return Ok(Err(e));
            }
            Ok(cohorts::get(c, &ws, &parent, &id)?.ok_or_else(|| cohort_not_found(&parent, &id)))
        })
        .await?
}

/// A cohort of the parent.
pub async fn get(
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
pub struct CohortFile {
    /// Which file.
    pub file_type: CohortFileType,
    /// A name for `Content-Disposition`.
    pub filename: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its bytes, in order; an error ends the stream early.
    pub body: tokio::sync::mpsc::Receiver<Result<Bytes, io::Error>>,
}

/// The file of a cohort asked for by `file_type`: `cohort` (as uploaded), `rejected_records`
/// (409 while processing; 404 when there are none), `cohort_transformation` (as uploaded;
/// 404 for streams).
pub async fn file(
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
