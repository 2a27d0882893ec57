//! `POST /api/outbounds/v1/orgs/{org_id}/workspaces/{workspace_id}/outbounds`.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::auth::{workspace_key, workspace_path};
use super::{BodyStream, RequestMeta, body, meta, ok, read_json, respond, with_app};
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::service::outbound;

/// The instant outbound route.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    workspace_path!("api" / "outbounds" / "v1"; "outbounds")
        .and(warp::post())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(body())
        .and(with_app(app))
        .then(create)
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
    ok(&outbound::create(&app, &who, &value, meta.trace_id().as_deref()).await?)
}
