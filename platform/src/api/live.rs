//! The routes the live page (`/ui`, [`super::ui`]) reads beside those any client uses (see
//! [`contracts::wire::live`]); the handlers convert, [`crate::service::live`] does the work:
//!
//! - `GET /sim/v1/stack`: the platform as the key sees it (any key that may read the clock).
//! - `GET /sim/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/activity`:
//!   a campaign's status changes and dials over time; `.../chart`: the same drawn as SVG by
//!   the scenario report's chart ([`contracts::report::chart`]).
//! - `GET /sim/v1/orgs/{org_id}/workspaces/{workspace_id}/key-service/calls`: the audit of the
//!   key service `harness up` runs beside the platform.

use std::sync::Arc;

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, header};
use warp::reply::Response;

use super::auth::authorize_clock;
use super::{RequestMeta, authorize, base_url, meta, ok, respond, with_app};
use crate::app::App;
use crate::engine::driver::Driver;
use crate::service::live;

/// The live page's data routes.
pub fn routes(app: App, driver: Arc<Driver>) -> BoxedFilter<(Response,)> {
    let stack = warp::path!("sim" / "v1" / "stack")
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .and(warp::any().map(move || driver.clone()))
        .then(stack);
    let activity = warp::path!(
        "sim" / "v1" / "orgs" / String / "workspaces" / String / "campaigns" / String / "activity"
    )
    .and(super::get())
    .and(meta())
    .and(with_app(app.clone()))
    .then(activity);
    let chart = warp::path!(
        "sim" / "v1" / "orgs" / String / "workspaces" / String / "campaigns" / String / "chart"
    )
    .and(super::get())
    .and(meta())
    .and(with_app(app.clone()))
    .then(chart);
    let calls = warp::path!(
        "sim" / "v1" / "orgs" / String / "workspaces" / String / "key-service" / "calls"
    )
    .and(super::get())
    .and(meta())
    .and(with_app(app))
    .then(key_service_calls);
    stack
        .or(activity)
        .unify()
        .or(chart)
        .unify()
        .or(calls)
        .unify()
        .boxed()
}

async fn stack(meta: RequestMeta, app: App, driver: Arc<Driver>) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, false)?;
            let presented = meta.header("x-api-key").unwrap_or_default();
            let base = base_url(&app, &meta);
            ok(&live::stack(&app, &driver, presented, base).await)
        }
        .await,
    )
}

async fn activity(org: String, ws: String, id: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            ok(&live::activity(&app, &who, &id).await?)
        }
        .await,
    )
}

async fn chart(org: String, ws: String, id: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let svg = live::chart(&live::activity(&app, &who, &id).await?);
            let mut r = Response::new(svg.into());
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("image/svg+xml"),
            );
            h.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            Ok(r)
        }
        .await,
    )
}

async fn key_service_calls(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond((|| {
        let who = authorize(&app, &meta, &org, &ws)?;
        ok(&live::key_service_calls(&app, &who, &meta.query_pairs())?)
    })())
}
