//! Cohorts under the scheduling base, for campaigns and deployments.

use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use crate::app::App;

/// The cohort routes.
pub fn routes(_app: App) -> BoxedFilter<(Response,)> {
    warp::path("__cohorts_pending")
        .map(|| Response::new(Vec::new().into()))
        .boxed()
}
