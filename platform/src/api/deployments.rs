//! Deployments under `/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments`.
//!
//! The list, the route most asked for, is also answered without warp's filters
//! ([`list_direct`]): the router offers every request there first. The answer is the one
//! the warp route gives (a test of the router compares the two on every route).

use bytes::Bytes;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::header::HOST;
use warp::http::{Method, Request, StatusCode};
use warp::reply::Response;

use super::auth::{API_KEY, authorize_key, workspace_key, workspace_key_meta, workspace_path};
use super::{
    BodyStream, RequestMeta, Routed, body, ok, read_json, respond, with_app, with_page_uris,
};
use crate::app::App;
use crate::auth::{KeyMatch, Principal};
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

/// The org and workspace ids of a request for a workspace's deployment list, as the list
/// route of [`routes`] takes it: `GET` or `HEAD`, the path
/// `/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments` as warp
/// matches it (one leading `/` skipped, no decoding), the ids not empty, one trailing `/`
/// allowed.
pub(crate) fn list_request<'p>(method: &Method, path: &'p str) -> Option<(&'p str, &'p str)> {
    if *method != Method::GET && *method != Method::HEAD {
        return None;
    }
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (org, rest) = rest
        .strip_prefix("api/app-authoring/v1/orgs/")?
        .split_once('/')?;
    let (ws, rest) = rest.strip_prefix("workspaces/")?.split_once('/')?;
    (!org.is_empty() && !ws.is_empty() && matches!(rest, "deployments" | "deployments/"))
        .then_some((org, ws))
}

/// The list route's answer to `req` without warp's filters, or `req` back for warp when it
/// is no list request ([`list_request`]): the same key check ([`authorize_key`], with the
/// configured keys the key matched when `keys` gives them; a refusal is answered at once,
/// as no other route takes such a request) and the same handler. A
/// list answered before is found without copying anything of the request; only a load
/// moves its headers and copies its path and query.
pub(crate) fn list_direct<B>(app: &App, req: Request<B>, keys: Option<&KeyMatch>) -> Routed<B> {
    let Some((org, ws)) = list_request(req.method(), req.uri().path()) else {
        return Routed::Warp(req);
    };
    let presented = req.headers().get(&API_KEY).and_then(|v| v.to_str().ok());
    let who = match authorize_key(app, presented, keys, org, ws) {
        Ok(who) => who,
        Err(refused) => return Routed::Now(refused.into_response()),
    };
    let key = AnswerKey {
        host: req.headers().get(HOST).and_then(|v| v.to_str().ok()),
        path: req.uri().path(),
        query: req.uri().query().unwrap_or(""),
    };
    if let Some(bytes) = answered(app, &who, key) {
        return Routed::Now(json_bytes_response(StatusCode::OK, bytes));
    }
    // The list reads no body: dropping it here is what warp's route does too.
    let (parts, _body) = req.into_parts();
    let meta = RequestMeta {
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts.headers,
    };
    let app = app.clone();
    Routed::Later(Box::pin(
        async move { respond(load_list(who, meta, app).await) },
    ))
}

/// The list route of [`routes`]: a list answered from the workspace's snapshot before is
/// answered again with the same bytes (see [`crate::service::deployment_lists`]).
async fn list(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    if let Some(bytes) = answered(&app, &who, answer_key(&meta)) {
        return Ok(json_bytes_response(StatusCode::OK, bytes));
    }
    load_list(who, meta, app).await
}

/// What an answer of the list depends on besides the snapshot.
fn answer_key(meta: &RequestMeta) -> AnswerKey<'_> {
    AnswerKey {
        host: meta.header(HOST),
        path: &meta.path,
        query: &meta.query,
    }
}

/// The answer the workspace's snapshot gave before to a request of `key`, if kept.
fn answered(app: &App, who: &Principal, key: AnswerKey<'_>) -> Option<Bytes> {
    match app.deployment_lists.lookup(&who.ws) {
        Lookup::Hit(snapshot) => snapshot.answer(key),
        _ => None,
    }
}

/// The list loaded (from the workspace's snapshot, or by SQL), answered, and kept in the
/// snapshot for the next request of the same key.
async fn load_list(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    let (page, snapshot) = deployments::list(&app, &who, &meta.query_pairs()).await?;
    let bytes = Bytes::from(
        serde_json::to_vec(&with_page_uris(&app, &meta, page)).expect("answers serialise"),
    );
    if let Some(snapshot) = snapshot {
        snapshot.keep_answer(answer_key(&meta), bytes.clone());
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
