//! The simulation API under `/sim/v1` (the harness's own, not the platform's interface):
//! the clock, inbound calls by hand, and what the engine recorded.

use std::sync::Arc;

use contracts::validate::{self, sim as sim_rules};
use contracts::wire::{Page, SimClockState, WebhookDeliveryRecord};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::{
    BodyStream, RequestMeta, authorize, body, meta, ok, read_json, respond, with_app,
    with_page_uris,
};
use crate::app::App;
use crate::config::ClockMover;
use crate::engine::driver::{AdvanceError, Driver};
use crate::engine::inbound;
use crate::error::ApiError;
use crate::store::engine as es;

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
            .and(with_app(app))
            .then(list_deliveries);
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
        .boxed()
}

/// The journal and fault routes act on the whole instance: any workspace's key opens
/// them. Answers the key's configured name.
pub(crate) fn authorize_any(app: &App, meta: &RequestMeta) -> Result<String, ApiError> {
    let Some(presented) = meta.header("x-api-key") else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key in the X-API-Key header".into(),
        });
    };
    app.auth.check_any(presented).ok_or(ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    })
}

/// The clock routes act on the whole instance: any workspace's key (or a clock admin key)
/// reads the clock; moving it takes a clock admin key once the platform has any
/// (`clock_admin_keys`), else any workspace's key.
fn authorize_clock(app: &App, meta: &RequestMeta, moving: bool) -> Result<(), ApiError> {
    let Some(presented) = meta.header("x-api-key") else {
        return Err(ApiError::Unauthorized {
            code: "missing_api_key",
            message: "send a workspace's key in the X-API-Key header".into(),
        });
    };
    let unknown = || ApiError::Unauthorized {
        code: "invalid_api_key",
        message: "the X-API-Key is not a key of this platform".into(),
    };
    if !moving {
        return app
            .auth
            .may_read_clock(presented)
            .then_some(())
            .ok_or_else(unknown);
    }
    match app.auth.clock_mover(presented) {
        ClockMover::Allowed => Ok(()),
        ClockMover::NotAdmin => Err(ApiError::Forbidden {
            code: "clock_admin_key_required",
            message: "this platform lets only its clock admin keys move the shared simulated clock (--clock-admin-key); a workspace's key may read it with GET /sim/v1/clock".into(),
        }),
        ClockMover::Unknown => Err(unknown()),
    }
}

/// `field` names the body field of the target (`to` or `now`) for a move that goes too far.
fn advance_error(e: AdvanceError, field: &str) -> ApiError {
    match e {
        AdvanceError::TooFar { current, target } => ApiError::Validation(
            sim_rules::clock_move_too_far(current, target, field)
                .expect("the driver refuses only moves past the bound"),
        ),
        AdvanceError::RealClock => ApiError::Conflict {
            code: "real_clock",
            message: e.to_string(),
        },
        AdvanceError::Backwards(_) => ApiError::Conflict {
            code: "clock_backwards",
            message: e.to_string(),
        },
        AdvanceError::Engine(e) => ApiError::Internal(e.to_string()),
    }
}

async fn get_clock(meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, false)?;
            ok(&SimClockState {
                now: app.clock.now(),
                simulated: app.sim.is_some(),
            })
        }
        .await,
    )
}

async fn set_clock(meta: RequestMeta, body: BodyStream, app: App, driver: Arc<Driver>) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, true)?;
            let value = read_json(&app, &meta, body).await?;
            let to = sim_rules::clock_set(&value, app.validation)?;
            ok(&driver
                .advance(sim_rules::Advance::To(to))
                .await
                .map_err(|e| advance_error(e, "now"))?)
        }
        .await,
    )
}

async fn advance(meta: RequestMeta, body: BodyStream, app: App, driver: Arc<Driver>) -> Response {
    respond(
        async {
            authorize_clock(&app, &meta, true)?;
            let value = read_json(&app, &meta, body).await?;
            let how = sim_rules::clock_advance(&value, app.validation)?;
            let field = match how {
                sim_rules::Advance::By(_) => "seconds",
                sim_rules::Advance::To(_) => "to",
            };
            ok(&driver
                .advance(how)
                .await
                .map_err(|e| advance_error(e, field))?)
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
            let (caller, dialled) = sim_rules::inbound_call(&value, app.validation)?;
            let keys = app
                .keys
                .workspace(&who.ws, meta.trace_id().as_deref())
                .await
                .ok();
            let at = app.clock.now();
            let engine = driver.engine().clone();
            let record = tokio::task::spawn_blocking(move || {
                engine.inbound_call(&who.ws, &caller, &dialled, at, keys.as_ref())
            })
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?
            .map_err(|e| ApiError::Internal(e.to_string()))?;
            ok(&record)
        }
        .await,
    )
}

async fn list_inbound(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let (offset, limit) = validate::cohort_list_query(&meta.query_pairs())?;
            let keys = app
                .keys
                .workspace(&who.ws, meta.trace_id().as_deref())
                .await
                .ok();
            let w = who.ws.clone();
            let (rows, total) = app
                .store
                .read(move |c| es::list_inbound(c, &w, offset, limit))
                .await?;
            ok(&with_page_uris(
                &app,
                &meta,
                Page {
                    items: rows
                        .iter()
                        .map(|r| inbound::record(r, keys.as_ref()))
                        .collect(),
                    total,
                    limit,
                    offset,
                    next_page_uri: None,
                    prev_page_uri: None,
                },
            ))
        }
        .await,
    )
}

async fn list_deliveries(org: String, ws: String, meta: RequestMeta, app: App) -> Response {
    respond(
        async {
            let who = authorize(&app, &meta, &org, &ws)?;
            let (offset, limit) = validate::cohort_list_query(&meta.query_pairs())?;
            let w = who.ws.clone();
            let (rows, total) = app
                .store
                .read(move |c| es::list_deliveries(c, &w, offset, limit))
                .await?;
            let items = rows
                .into_iter()
                .map(|r| WebhookDeliveryRecord {
                    delivery_id: r.id,
                    kind: r.kind.as_str().to_string(),
                    subject_id: r.subject_id,
                    url: r.url,
                    status: r.status.into(),
                    tries: r.tries,
                    last_status_code: r.last_status,
                    last_error: r.last_error,
                    created_at: r.created_at,
                    next_try_at: r.next_try_at,
                    delivered_at: r.delivered_at,
                })
                .collect();
            let page = Page {
                items,
                total,
                limit,
                offset,
                next_page_uri: None,
                prev_page_uri: None,
            };
            ok(&with_page_uris(&app, &meta, page))
        }
        .await,
    )
}
