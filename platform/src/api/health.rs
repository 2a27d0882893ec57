//! `GET /healthz`: a readiness probe for CI and orchestrators. No key: it tells only that
//! the platform serves requests and its database answers (503 when it does not).

use contracts::error::PlatformErrorBody;
use contracts::wire::Health;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::StatusCode;
use warp::reply::Response;

use super::with_app;
use crate::app::App;
use crate::error::json_response;

/// The probe's route.
pub(crate) fn routes(app: App) -> BoxedFilter<(Response,)> {
    warp::path!("healthz")
        .and(super::get())
        .and(with_app(app))
        .then(health)
        .boxed()
}

async fn health(app: App) -> Response {
    match app.store.ping() {
        Ok(()) => json_response(
            StatusCode::OK,
            &Health {
                status: "ok".into(),
            },
        ),
        Err(e) => {
            tracing::error!(error = %e, "health probe: the database does not answer");
            json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &PlatformErrorBody::new(
                    "service_unavailable",
                    "database_unavailable",
                    "the platform's database does not answer; see the platform's log",
                ),
            )
        }
    }
}
