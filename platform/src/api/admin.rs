//! The harness's admin API of a workspace's data keys (not part of the interface spec), with
//! the workspace's `X-API-Key`:
//!
//! - `GET /admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys`: the keys, oldest
//!   first, the last active.
//! - `POST /admin/v1/orgs/{org_id}/workspaces/{workspace_id}/data-keys/rotate`: a new data key
//!   from the workspace's key service (BYOK: `rotate-key`) becomes active. No body is read.
//!
//! No answer carries key material. The handlers convert; [`crate::service::admin`] does the
//! work.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::{RequestMeta, authorize, meta, ok, respond, with_app};
use crate::app::App;
use crate::service::admin;

/// The admin routes.
pub fn routes(app: App) -> BoxedFilter<(Response,)> {
    let keys =
        || warp::path!("admin" / "v1" / "orgs" / String / "workspaces" / String / "data-keys");
    let list = keys()
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .then(list);
    let rotate = warp::path!(
        "admin" / "v1" / "orgs" / String / "workspaces" / String / "data-keys" / "rotate"
    )
    .and(warp::post())
    .and(meta())
    .and(with_app(app))
    .then(rotate);
    list.or(rotate).unify().boxed()
}

async fn list(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            ok(&admin::data_keys(&app, &who).await?)
        }
        .await,
    )
}

async fn rotate(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            ok(&admin::rotate(&app, &who, meta.trace_id().as_deref()).await?)
        }
        .await,
    )
}
