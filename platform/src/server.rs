//! Serving the platform on a listener the caller bound (port 0 works), until a shutdown
//! signal; requests in flight finish first.

use std::future::Future;

use tokio::net::TcpListener;

use crate::app::App;

/// Serves every route on `listener` until `shutdown` completes, then waits for the requests
/// in flight.
pub async fn serve(
    app: App,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    warp::serve(crate::api::routes(app))
        .incoming(listener)
        .graceful(shutdown)
        .run()
        .await;
}
