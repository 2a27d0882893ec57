//! Deployments under `/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments`.
//!
//! The list, the route most asked for, is also answered without warp's filters
//! ([`is_list`], [`list_direct`]): the router sends it there first. The answer is the one
//! the warp route gives (a test of the router compares the two on every route).

use bytes::Bytes;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{Method, StatusCode, request};
use warp::reply::Response;

use super::auth::{authorize, workspace_key, workspace_key_meta, workspace_of, workspace_path};
use super::{BodyStream, RequestMeta, body, ok, read_json, respond, with_app, with_page_uris};
use crate::app::App;
use crate::auth::Principal;
use crate::error::{ApiError, json_bytes_response};
use crate::service::deployment_lists::{AnswerKey, Lookup};
use crate::service::deployments;

/// Create, list, get, patch, status, delete.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    let base = || workspace_path!("api" / "app-authoring" / "v1"; "deployments");
    let one = || workspace_path!("api" / "app-authoring" / "v1"; "deployments" / String);
    let key = || workspace_key(app.clone());
    let key_meta = || workspace_key_meta(app.clone());
    let create = base()
        .and(warp::post())
        .and(key_meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(create);
    let list = base()
        .and(super::get())
        .and(key_meta())
        .and(with_app(app.clone()))
        .then(list);
    let get = one()
        .and(super::get())
        .and(key())
        .and(with_app(app.clone()))
        .then(get);
    let patch = one()
        .and(warp::patch())
        .and(key_meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(patch);
    let delete = one()
        .and(warp::delete())
        .and(key())
        .and(with_app(app.clone()))
        .then(delete);
    let status = workspace_path!("api" / "app-authoring" / "v1"; "deployments" / String / "status")
        .and(warp::put())
        .and(key_meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(set_status);
    // The list first: it is the route most asked for, and the create on the same path
    // would only reject it for its method.
    list.or(create)
        .unify()
        .or(get)
        .unify()
        .or(patch)
        .unify()
        .or(delete)
        .unify()
        .or(status)
        .unify()
        .map(respond)
        .boxed()
}

async fn create(
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&deployments::create(&app, &who, &value).await?)
}

/// Whether a request is a workspace's deployment list as the list route of [`routes`]
/// takes it: `GET` or `HEAD`, the path
/// `/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments` split as warp
/// splits it (one leading `/` skipped, no decoding), the ids not empty, one trailing `/`
/// allowed.
pub(crate) fn is_list(method: &Method, path: &str) -> bool {
    if *method != Method::GET && *method != Method::HEAD {
        return false;
    }
    let rest = path.strip_prefix('/').unwrap_or(path);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let mut s = contracts::operations::path_segments(rest);
    matches!(
        [s.next(), s.next(), s.next(), s.next(), s.next(), s.next(), s.next(), s.next(), s.next()],
        [
            Some("api"),
            Some("app-authoring"),
            Some("v1"),
            Some("orgs"),
            Some(org),
            Some("workspaces"),
            Some(ws),
            Some("deployments"),
            None,
        ] if !org.is_empty() && !ws.is_empty()
    )
}

/// The answer of the list route to a request [`is_list`] takes, reached without warp's
/// filters: the same key check ([`authorize`], a refusal answered at once as no other route
/// takes such a request) and the same handler. The request's headers are moved, not copied.
pub(crate) async fn list_direct(app: &App, parts: request::Parts) -> Response {
    let meta = RequestMeta {
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts.headers,
    };
    let (org, ws) = workspace_of(&meta.path).unwrap_or_default();
    match authorize(app, &meta, org, ws) {
        Ok(who) => respond(list(who, meta, app.clone()).await),
        Err(refused) => refused.into_response(),
    }
}

/// A list answered from the workspace's snapshot before is answered again with the same
/// bytes (see [`crate::service::deployment_lists`]).
async fn list(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    let key = AnswerKey {
        host: meta.header(warp::http::header::HOST),
        path: &meta.path,
        query: &meta.query,
    };
    if let Lookup::Hit(snapshot) = app.deployment_lists.lookup(&who.ws)
        && let Some(bytes) = snapshot.answer(key)
    {
        return Ok(json_bytes_response(StatusCode::OK, bytes));
    }
    let (page, snapshot) = deployments::list(&app, &who, &meta.query_pairs()).await?;
    let bytes = Bytes::from(
        serde_json::to_vec(&with_page_uris(&app, &meta, page)).expect("answers serialise"),
    );
    if let Some(snapshot) = snapshot {
        snapshot.keep_answer(key, bytes.clone());
    }
    Ok(json_bytes_response(StatusCode::OK, bytes))
}

async fn get(id: String, who: Principal, app: App) -> Result<Response, ApiError> {
    ok(&deployments::get(&app, &who, &id).await?)
}

async fn patch(
    id: String,
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&deployments::patch(&app, &who, &id, value).await?)
}

async fn delete(id: String, who: Principal, app: App) -> Result<Response, ApiError> {
    deployments::delete(&app, &who, &id).await?;
    let mut r = Response::new(Vec::new().into());
    *r.status_mut() = StatusCode::NO_CONTENT;
    Ok(r)
}

async fn set_status(
    id: String,
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&deployments::set_status(&app, &who, &id, &value).await?)
}
