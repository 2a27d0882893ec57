//! `POST /api/outbounds/v1/orgs/{org_id}/workspaces/{workspace_id}/outbounds`.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::{BodyStream, RequestMeta, authorize, body, meta, ok, read_json, respond, with_app};
use crate::app::App;
use crate::service::outbound;

/// The instant outbound route.
pub fn routes(app: App) -> BoxedFilter<(Response,)> {
    warp::path!("api" / "outbounds" / "v1" / "orgs" / String / "workspaces" / String / "outbounds")
        .and(warp::post())
        .and(meta())
        .and(body())
        .and(with_app(app))
        .then(create)
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
            ok(&outbound::create(&app, &who, &value, meta.trace_id().as_deref()).await?)
        }
        .await,
    )
}
