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

use super::auth::{workspace_key, workspace_path};
use super::{RequestMeta, meta, ok, respond, with_app};
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::service::admin;

/// The admin routes.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    let list = workspace_path!("admin" / "v1"; "data-keys")
        .and(super::get())
        .and(workspace_key(app.clone()))
        .and(with_app(app.clone()))
        .then(list);
    let rotate = workspace_path!("admin" / "v1"; "data-keys" / "rotate")
        .and(warp::post())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(with_app(app))
        .then(rotate);
    list.or(rotate).unify().map(respond).boxed()
}

async fn list(who: Principal, app: App) -> Result<Response, ApiError> {
    ok(&admin::data_keys(&app, &who).await?)
}

async fn rotate(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    ok(&admin::rotate(&app, &who, meta.trace_id().as_deref()).await?)
}
