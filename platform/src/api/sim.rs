//! The simulation API under `/sim/v1` (the harness's own, not the platform's interface):
//! the clock, inbound calls by hand, what the engine recorded, and the reset of one
//! workspace between tests. The handlers convert; [`crate::service::sim`] does the work.

use std::sync::Arc;

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::auth::{authorize_clock, authorize_reset};
use super::{
    BodyStream, RequestMeta, authorize, body, meta, ok, read_json, respond, with_app,
    with_page_uris,
};
use crate::app::App;
use crate::engine::driver::Driver;
use crate::service::sim;

fn with_driver(
    d: Arc<Driver>,
) -> impl Filter<Extract = (Arc<Driver>,), Error = std::convert::Infallible> + Clone {
    warp::any().map(move || d.clone())
}

/// The simulation routes.
pub fn routes(app: App, driver: Arc<Driver>) -> BoxedFilter<(Response,)> {
    let clock = || warp::path!("sim" / "v1" / "clock");
    let get_clock = clock()
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .then(get_clock);
    let set_clock = clock()
        .and(warp::put())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .and(with_driver(driver.clone()))
        .then(set_clock);
    let advance = warp::path!("sim" / "v1" / "clock" / "advance")
        .and(warp::post())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .and(with_driver(driver.clone()))
        .then(advance);
    let inbound =
        || warp::path!("sim" / "v1" / "orgs" / String / "workspaces" / String / "inbound-calls");
    let post_inbound = inbound()
        .and(warp::post())
        .and(meta())
        .and(body())
        .and(with_app(app.clone()))
        .and(with_driver(driver.clone()))
        .then(post_inbound);
    let list_inbound = inbound()
        .and(super::get())
        .and(meta())
        .and(with_app(app.clone()))
        .then(list_inbound);
    let deliveries =
        warp::path!("sim" / "v1" / "orgs" / String / "workspaces" / String / "webhook-deliveries")
            .and(super::get())
            .and(meta())
            .and(with_app(app.clone()))
            .then(list_deliveries);
    let reset = warp::path!("sim" / "v1" / "orgs" / String / "workspaces" / String / "reset")
        .and(warp::post())
        .and(meta())
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
        .boxed()
}

async fn get_clock(meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, false)?;
            ok(&sim::clock(&app))
        }
        .await,
    )
}

async fn set_clock(meta: RequestMeta, body: BodyStream, app: App, driver: Arc<Driver>) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, true)?;
            let value = read_json(&app, &meta, body).await?;
            ok(&sim::set_clock(&app, &driver, &value).await?)
        }
        .await,
    )
}

async fn advance(meta: RequestMeta, body: BodyStream, app: App, driver: Arc<Driver>) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, true)?;
            let value = read_json(&app, &meta, body).await?;
            ok(&sim::advance(&app, &driver, &value).await?)
        }
        .await,
    )
}

async fn post_inbound(
    org: String,
    ws: String,
    meta: RequestMeta,
    body: BodyStream,
    app: App,
    driver: Arc<Driver>,
) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let value = read_json(&app, &meta, body).await?;
            let trace_id = meta.trace_id();
            ok(&sim::inbound_call(&app, &driver, &who, &value, trace_id.as_deref()).await?)
        }
        .await,
    )
}

async fn list_inbound(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let trace_id = meta.trace_id();
            let page =
                sim::list_inbound(&app, &who, &meta.query_pairs(), trace_id.as_deref()).await?;
            ok(&with_page_uris(&app, &meta, page))
        }
        .await,
    )
}

async fn list_deliveries(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let page = sim::list_deliveries(&app, &who, &meta.query_pairs()).await?;
            ok(&with_page_uris(&app, &meta, page))
        }
        .await,
    )
}

async fn reset(
    org: String,
    ws: String,
    meta: RequestMeta,
    app: App,
    driver: Arc<Driver>,
) -> Response {
    respond(
        async {
            let ws = authorize_reset(&app, &meta, &org, &ws)?;
            ok(&sim::reset_workspace(&app, &driver, &ws).await?)
        }
        .await,
    )
}
