//! The routes the live page (`/ui`, [`super::ui`]) reads beside those any client uses (see
//! [`contracts::wire::live`]); the handlers convert, [`crate::service::live`] does the work:
//!
//! - `GET /sim/v1/stack`: the platform as the key sees it (any key that may read the clock).
//! - `GET /sim/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/activity`:
//!   a campaign's status changes and dials over time; `.../chart?width=N`: the same drawn as
//!   SVG by the scenario report's chart ([`contracts::report::chart`]), `N` pixels wide.
//! - `GET /sim/v1/orgs/{org_id}/workspaces/{workspace_id}/key-service/calls`: the audit of the
//!   key service `harness up` runs beside the platform.

use std::sync::Arc;

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, header};
use warp::reply::Response;

use super::auth::{clock_key, workspace_key, workspace_path};
use super::{RequestMeta, base_url, meta, ok, respond, with_app};
use crate::app::App;
use crate::auth::Principal;
use crate::engine::driver::Driver;
use crate::error::ApiError;
use crate::service::live;

/// The live page's data routes.
pub(crate) fn routes(app: App, driver: Arc<Driver>) -> BoxedFilter<(Response,)> {
    let stack = warp::path!("sim" / "v1" / "stack")
        .and(super::get())
        .and(clock_key(app.clone(), false))
        .and(meta())
        .and(with_app(app.clone()))
        .and(warp::any().map(move || driver.clone()))
        .then(stack);
    let activity = workspace_path!("sim" / "v1"; "campaigns" / String / "activity")
        .and(super::get())
        .and(workspace_key(app.clone()))
        .and(with_app(app.clone()))
        .then(activity);
    let chart = workspace_path!("sim" / "v1"; "campaigns" / String / "chart")
        .and(super::get())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(with_app(app.clone()))
        .then(chart);
    let calls = workspace_path!("sim" / "v1"; "key-service" / "calls")
        .and(super::get())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(with_app(app))
        .map(key_service_calls);
    stack
        .or(activity)
        .unify()
        .or(chart)
        .unify()
        .or(calls)
        .unify()
        .map(respond)
        .boxed()
}

async fn stack(meta: RequestMeta, app: App, driver: Arc<Driver>) -> Result<Response, ApiError> {
    let presented = meta.header(&super::auth::API_KEY).unwrap_or_default();
    let base = base_url(&app, &meta);
    ok(&live::stack(&app, &driver, presented, base).await)
}

async fn activity(id: String, who: Principal, app: App) -> Result<Response, ApiError> {
    ok(&live::activity(&app, &who, &id).await?)
}

async fn chart(
    id: String,
    who: Principal,
    meta: RequestMeta,
    app: App,
) -> Result<Response, ApiError> {
    let width = contracts::validate::live_chart_query(&meta.query_pairs())?;
    let svg = live::chart(&live::activity(&app, &who, &id).await?, width);
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

fn key_service_calls(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    ok(&live::key_service_calls(&app, &who, &meta.query_pairs())?)
}
