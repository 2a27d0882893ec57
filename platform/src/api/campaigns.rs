//! Campaigns under `/api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns`.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::auth::{workspace_key, workspace_path};
use super::{
    BodyStream, RequestMeta, body, meta, ok, read_json, respond, with_app, with_page_uris,
};
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::service::campaigns;

/// Create, list, get, patch, status.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    let base = || workspace_path!("api" / "scheduling" / "v1"; "campaigns");
    let one = || workspace_path!("api" / "scheduling" / "v1"; "campaigns" / String);
    let key = || workspace_key(app.clone());
    let create = base()
        .and(warp::post())
        .and(key())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(create);
    let list = base()
        .and(super::get())
        .and(key())
        .and(meta())
        .and(with_app(app.clone()))
        .then(list);
    let get = one()
        .and(super::get())
        .and(key())
        .and(with_app(app.clone()))
        .then(get);
    let patch = one()
        .and(warp::patch())
        .and(key())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(patch);
    let status = workspace_path!("api" / "scheduling" / "v1"; "campaigns" / String / "status")
        .and(warp::put())
        .and(key())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(set_status);
    create
        .or(list)
        .unify()
        .or(get)
        .unify()
        .or(patch)
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
    ok(&campaigns::create(&app, &who, &value).await?)
}

async fn list(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    let page = campaigns::list(&app, &who, &meta.query_pairs()).await?;
    ok(&with_page_uris(&app, &meta, page))
}

async fn get(id: String, who: Principal, app: App) -> Result<Response, ApiError> {
    ok(&campaigns::get(&app, &who, &id).await?)
}

async fn patch(
    id: String,
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&campaigns::patch(&app, &who, &id, value).await?)
}

async fn set_status(
    id: String,
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&campaigns::set_status(&app, &who, &id, &value).await?)
}
