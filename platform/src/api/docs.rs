//! `GET /openapi.json`: the platform document from `contracts`, no key needed.

use std::sync::LazyLock;

use bytes::Bytes;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::{HeaderValue, header};
use warp::reply::Response;

static DOCUMENT: LazyLock<Bytes> = LazyLock::new(|| {
    Bytes::from(contracts::openapi::to_committed_json(
        &contracts::openapi::platform_document(),
    ))
});

/// The document route.
pub(crate) fn routes() -> BoxedFilter<(Response,)> {
    warp::path("openapi.json")
        .and(warp::path::end())
        .and(super::get())
        .map(|| {
            let mut r = Response::new(DOCUMENT.clone().into());
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        })
        .boxed()
}
