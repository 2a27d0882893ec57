//! Serving the platform on a listener the caller bound (port 0 works), until a shutdown
//! signal; requests in flight finish first.

use std::future::Future;

use tokio::net::TcpListener;

use crate::app::App;

/// Serves every route on `listener` until `shutdown` completes, then waits for the requests
/// in flight. The cohort worker runs alongside (resuming cohorts an earlier run left
/// `processing`) and is stopped after the last request.
pub async fn serve(
    app: App,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    crate::cohort_processing::start(&app);
    warp::serve(crate::api::routes(app.clone()))
        .incoming(listener)
        .graceful(shutdown)
        .run()
        .await;
    app.cohorts.shutdown().await;
}
