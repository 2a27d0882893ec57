//! Cohorts under the scheduling base
//! `/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}`, below `/campaigns/{id}` and
//! `/deployments/{id}`: upload, stream, list, get, files.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use contracts::wire::CohortFileType;
use futures_util::Stream;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, header};
use warp::reply::Response;
use warp::{Filter, Reply};

use super::auth::{workspace_key, workspace_path};
use super::{
    BodyStream, RequestMeta, body, meta, ok, read_json, respond, with_app, with_page_uris,
};
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::journal::verdict::{AcceptedUpload, IgnoredParts};
use crate::service::cohorts;
use crate::store::cohorts::{Parent, ParentKind};

/// The cohort routes of campaigns and deployments.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    parent_routes(app.clone(), ParentKind::Campaign, "campaigns")
        .or(parent_routes(app, ParentKind::Deployment, "deployments"))
        .unify()
        .boxed()
}

/// `.../{segment}/{parent_id}/cohorts`, extracting the parent.
fn cohorts_base(
    kind: ParentKind,
    segment: &'static str,
) -> impl Filter<Extract = (Parent,), Error = warp::Rejection> + Clone {
    workspace_path!("api" / "scheduling" / "v1")
        .and(warp::path(segment))
        .and(warp::path::param::<String>())
        .and(warp::path("cohorts"))
        .map(move |id| Parent { kind, id })
}

/// A cohort id: one segment other than `upload` and `stream`, the paths of their own (where
/// GET is a 405, as the document's literal paths win over its `{cohort_id}`).
fn cohort_id() -> impl Filter<Extract = (String,), Error = warp::Rejection> + Copy {
    warp::path::param::<String>().and_then(|id: String| async move {
        if id == "upload" || id == "stream" {
            Err(warp::reject::not_found())
        } else {
            Ok(id)
        }
    })
}

fn parent_routes(app: App, kind: ParentKind, segment: &'static str) -> BoxedFilter<(Response,)> {
    let base = move || cohorts_base(kind, segment);
    let key = || workspace_key(app.clone());
    let upload = base()
        .and(warp::path("upload"))
        .and(warp::path::end())
        .and(warp::post())
        .and(key())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(upload);
    let stream = base()
        .and(warp::path("stream"))
        .and(warp::path::end())
        .and(warp::post())
        .and(key())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(stream)
        .map(respond);
    let list = base()
        .and(warp::path::end())
        .and(super::get())
        .and(key())
        .and(meta())
        .and(with_app(app.clone()))
        .then(list)
        .map(respond);
    let get = base()
        .and(cohort_id())
        .and(warp::path::end())
        .and(super::get())
        .and(key())
        .and(with_app(app.clone()))
        .then(get)
        .map(respond);
    let files = base()
        .and(warp::path::param::<String>())
        .and(warp::path("files"))
        .and(warp::path::end())
        .and(super::get())
        .and(key())
        .and(meta())
        .and(with_app(app.clone()))
        .then(file)
        .map(respond);
    upload
        .or(stream)
        .unify()
        .or(list)
        .unify()
        .or(get)
        .unify()
        .or(files)
        .unify()
        .boxed()
}

/// The upload's answer carries the parts it ignored, for the journal, whatever the outcome,
/// and the cohort it created, when accepted (the journal follows what becomes of its file).
async fn upload(
    parent: Parent,
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Response {
    let mut ignored = Vec::new();
    let length = meta
        .header("content-length")
        .and_then(|v| v.parse::<u64>().ok());
    let cohort = super::multipart::upload(
        &app,
        &who,
        &parent,
        meta.header("content-type"),
        length,
        body,
        meta.trace_id().as_deref(),
        &mut ignored,
    )
    .await;
    let accepted = cohort.as_ref().ok().map(|c| c.cohort_id.clone());
    let mut answer = respond(cohort.and_then(|c| ok(&c)));
    if !ignored.is_empty() {
        answer.extensions_mut().insert(IgnoredParts(ignored));
    }
    if let Some(id) = accepted {
        answer.extensions_mut().insert(AcceptedUpload(id));
    }
    answer
}

async fn stream(
    parent: Parent,
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&cohorts::stream(&app, &who, &parent, &value, meta.trace_id().as_deref()).await?)
}

async fn list(
    parent: Parent,
    who: Principal,
    meta: RequestMeta,
    app: App,
) -> Result<Response, ApiError> {
    let page = cohorts::list(&app, &who, &parent, &meta.query_pairs()).await?;
    ok(&with_page_uris(&app, &meta, page))
}

async fn get(parent: Parent, id: String, who: Principal, app: App) -> Result<Response, ApiError> {
    ok(&cohorts::get(&app, &who, &parent, &id).await?)
}

async fn file(
    parent: Parent,
    id: String,
    who: Principal,
    meta: RequestMeta,
    app: App,
) -> Result<Response, ApiError> {
    let f = cohorts::file(
        &app,
        &who,
        &parent,
        &id,
        &meta.query_pairs(),
        meta.trace_id().as_deref(),
    )
    .await?;
    let content_type = match f.file_type {
        CohortFileType::Cohort | CohortFileType::RejectedRecords => "text/csv; charset=utf-8",
        CohortFileType::CohortTransformation => "application/json",
    };
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", f.filename))
        .map_err(|e| ApiError::Internal(format!("file name header: {e}")))?;
    let mut r = warp::reply::stream(Chunks(f.body)).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(f.size));
    h.insert(header::CONTENT_DISPOSITION, disposition);
    Ok(r)
}

/// A file's chunks as a response body stream.
struct Chunks(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}
