//! Deployments under `/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments`.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::StatusCode;
use warp::reply::Response;

use super::{
    BodyStream, RequestMeta, authorize, body, meta, ok, read_json, respond, with_app,
    with_page_uris,
};
use crate::app::App;
use crate::service::deployments;

/// Create, list, get, patch, status, delete.
pub fn routes(app: App) -> BoxedFilter<(Response,)> {
    let base = || {
        warp::path!(
            "api"
                / "app-authoring"
                / "v1"
                / "orgs"
                / String
                / "workspaces"
                / String
                / "deployments"
        )
    };
    let one = || {
        warp::path!(
            "api"
                / "app-authoring"
                / "v1"
                / "orgs"
                / String
                / "workspaces"
                / String
                / "deployments"
                / String
        )
    };
    let create = base()
        .and(warp::post())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(create);
    let list = base()
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .then(list);
    let get = one()
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .then(get);
    let patch = one()
        .and(warp::patch())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .then(patch);
    let delete = one()
        .and(warp::delete())
        .and(meta())
        .and(with_app(app.clone()))
        .then(delete);
    let status = warp::path!(
        "api"
            / "app-authoring"
            / "v1"
            / "orgs"
            / String
            / "workspaces"
            / String
            / "deployments"
            / String
            / "status"
    )
    .and(warp::put())
    .and(meta())
    .and(body())
    .and(with_app(app))
    .then(set_status);
    create
        .or(list)
        .unify()
        .or(get)
        .unify()
        .or(patch)
        .unify()
        .or(delete)
        .unify()
        .or(status)
        .unify()
        .boxed()
}

async fn create(
    org: String,
    ws: String,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let value = read_json(&app, &meta, body).await?;
            ok(&deployments::create(&app, &who, &value).await?)
        }
        .await,
    )
}

async fn list(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let page = deployments::list(&app, &who, &meta.query_pairs()).await?;
            ok(&with_page_uris(&app, &meta, page))
        }
        .await,
    )
}

async fn get(org: String, ws: String, id: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            ok(&deployments::get(&app, &who, &id).await?)
        }
        .await,
    )
}

async fn patch(
    org: String,
    ws: String,
    id: String,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let value = read_json(&app, &meta, body).await?;
            ok(&deployments::patch(&app, &who, &id, value).await?)
        }
        .await,
    )
}

async fn delete(org: String, ws: String, id: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            deployments::delete(&app, &who, &id).await?;
            let mut r = Response::new(Vec::new().into());
            *r.status_mut() = StatusCode::NO_CONTENT;
            Ok(r)
        }
        .await,
    )
}

async fn set_status(
    org: String,
    ws: String,
    id: String,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let value = read_json(&app, &meta, body).await?;
            ok(&deployments::set_status(&app, &who, &id, &value).await?)
        }
        .await,
    )
}
