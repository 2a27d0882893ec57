//! The simulation API under `/sim/v1` (the harness's own, not the platform's interface):
//! the clock, inbound calls by hand, what the engine recorded, and the reset of one
//! workspace between tests. The handlers convert; [`crate::service::sim`] does the work.

use std::sync::Arc;

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::auth::{clock_key, reset_key, workspace_key, workspace_path};
use super::{
    BodyStream, RequestMeta, body, meta, ok, read_json, respond, with_app, with_page_uris,
};
use crate::app::App;
use crate::auth::Principal;
use crate::engine::driver::Driver;
use crate::error::ApiError;
use crate::service::sim;
use crate::store::WorkspaceRef;

fn with_driver(
    d: Arc<Driver>,
) -> impl Filter<Extract = (Arc<Driver>,), Error = std::convert::Infallible> + Clone {
    warp::any().map(move || d.clone())
}

/// The simulation routes.
pub(crate) fn routes(app: App, driver: Arc<Driver>) -> BoxedFilter<(Response,)> {
    let clock = || warp::path!("sim" / "v1" / "clock");
    let get_clock = clock()
        .and(super::get())
        .and(clock_key(app.clone(), false))
        .and(with_app(app.clone()))
        .then(get_clock);
    let set_clock = clock()
        .and(warp::put())
        .and(clock_key(app.clone(), true))
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .and(with_driver(driver.clone()))
        .then(set_clock);
    let advance = warp::path!("sim" / "v1" / "clock" / "advance")
        .and(warp::post())
        .and(clock_key(app.clone(), true))
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .and(with_driver(driver.clone()))
        .then(advance);
    let inbound = || workspace_path!("sim" / "v1"; "inbound-calls");
    let post_inbound = inbound()
        .and(warp::post())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .and(with_driver(driver.clone()))
        .then(post_inbound);
    let list_inbound = inbound()
        .and(super::get())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(with_app(app.clone()))
        .then(list_inbound);
    let deliveries = workspace_path!("sim" / "v1"; "webhook-deliveries")
        .and(super::get())
        .and(workspace_key(app.clone()))
        .and(meta())
        .and(with_app(app.clone()))
        .then(list_deliveries);
    let reset = workspace_path!("sim" / "v1"; "reset")
        .and(warp::post())
        .and(reset_key(app.clone()))
        .and(with_app(app))
        .and(with_driver(driver))
        .then(reset);
    get_clock
        .or(set_clock)
        .unify()
        .or(advance)
        .unify()
        .or(post_inbound)
        .unify()
        .or(list_inbound)
        .unify()
        .or(deliveries)
        .unify()
        .or(reset)
        .unify()
        .map(respond)
        .boxed()
}

async fn get_clock(app: App) -> Result<Response, ApiError> {
    ok(&sim::clock(&app))
}

async fn set_clock(
    meta: RequestMeta,
    body: BodyStream,
    app: App,
    driver: Arc<Driver>,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&sim::set_clock(&app, &driver, &value).await?)
}

async fn advance(
    meta: RequestMeta,
    body: BodyStream,
    app: App,
    driver: Arc<Driver>,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    ok(&sim::advance(&app, &driver, &value).await?)
}

async fn post_inbound(
    who: Principal,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
    driver: Arc<Driver>,
) -> Result<Response, ApiError> {
    let value = read_json(&app, &meta, body).await?;
    let trace_id = meta.trace_id();
    ok(&sim::inbound_call(&app, &driver, &who, &value, trace_id.as_deref()).await?)
}

async fn list_inbound(who: Principal, meta: RequestMeta, app: App) -> Result<Response, ApiError> {
    let trace_id = meta.trace_id();
    let page = sim::list_inbound(&app, &who, &meta.query_pairs(), trace_id.as_deref()).await?;
    ok(&with_page_uris(&app, &meta, page))
}

async fn list_deliveries(
    who: Principal,
    meta: RequestMeta,
    app: App,
) -> Result<Response, ApiError> {
    let page = sim::list_deliveries(&app, &who, &meta.query_pairs()).await?;
    ok(&with_page_uris(&app, &meta, page))
}

async fn reset(ws: WorkspaceRef, app: App, driver: Arc<Driver>) -> Result<Response, ApiError> {
    ok(&sim::reset_workspace(&app, &driver, &ws).await?)
}
