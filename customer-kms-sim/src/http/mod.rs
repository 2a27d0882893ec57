//! The HTTP layer (warp 0.4): the three BYOK endpoints, the admin API, and the one
//! `recover` that turns every rejection into `{"error": {"code", "message"}}`.
//!
//! - [`byok`]: `POST /{partner}/byok/v1/{auth,decrypt-key,rotate-key}`.
//! - [`admin`]: `/_admin/...`, guarded by the admin bearer token.
//! - [`mutated`]: the steps of the endpoints that [mutants](crate::mutants) bend.
//!
//! Every answer, errors included, carries `X-Request-Id` (the caller's `x-request-id` when
//! it is a UUID, otherwise one the service generates), `X-Request-Duration` (milliseconds,
//! three decimals) and, when the caller sent a valid one, `X-Trace-Id`.

pub(crate) mod admin;
pub(crate) mod byok;
pub(crate) mod mutated;

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use contracts::clock::Stopwatch;
use contracts::error::ByokErrorCode;
use contracts::wire::byok::{HEADER_REQUEST_DURATION, HEADER_REQUEST_ID, HEADER_TRACE_ID};
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use warp::http::header::{
    ALLOW, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER,
};
use warp::http::{Method, StatusCode};
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use crate::error::KmsError;
use crate::service::KeyService;

/// Every route of the service: the BYOK endpoints, the admin API, and 404 for the rest.
pub fn routes(
    svc: KeyService,
) -> impl Filter<Extract = (Response,), Error = Infallible> + Clone + Send + Sync + 'static {
    let byok = byok::filter(svc.clone());
    let rest = admin::filter(svc.clone()).recover(recover).unify();
    let ids = svc.clone();
    let rest = warp::any()
        .map(Stopwatch::start)
        .and(warp::header::headers_cloned())
        .and(warp::path::full())
        .and(rest)
        .map(
            move |sw: Stopwatch,
                  headers: HeaderMap,
                  path: warp::path::FullPath,
                  mut resp: Response| {
                // A 405 of the admin API lists the methods of its path.
                if resp.status() == StatusCode::METHOD_NOT_ALLOWED
                    && let Some(allow) = admin::allowed_methods(path.as_str())
                {
                    resp.headers_mut()
                        .insert(ALLOW, HeaderValue::from_static(allow));
                }
                let request_id = valid_uuid(&headers, HEADER_REQUEST_ID)
                    .unwrap_or_else(|| ids.ids().uuid_v4().to_string());
                let trace_id = valid_uuid(&headers, HEADER_TRACE_ID);
                stamp(&mut resp, &request_id, trace_id.as_deref(), sw.elapsed());
                resp
            },
        );
    byok.or(rest).unify()
}

/// Serves `svc` on `listener` until `shutdown` completes, then lets held (`hang`) requests
/// go and finishes the requests in flight.
///
/// ```no_run
/// # async fn run() -> anyhow::Result<()> {
/// use customer_kms_sim::{KeyService, KmsConfig, serve};
/// let config = KmsConfig::new("acme").with_seed(1).with_client("platform", &["s"]).with_alias("tenant-a", 1);
/// let svc = KeyService::new(config, contracts::clock::SystemClock::shared())?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// println!("listening on {}", listener.local_addr()?);
/// serve(listener, svc, async { let _ = tokio::signal::ctrl_c().await; }).await;
/// # Ok(()) }
/// ```
pub async fn serve(
    listener: tokio::net::TcpListener,
    svc: KeyService,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let release = svc.clone();
    let signal = async move {
        shutdown.await;
        release.release_hangs();
    };
    warp::serve(routes(svc))
        .incoming(listener)
        .graceful(signal)
        .run()
        .await;
}

/// The one place rejections become answers.
async fn recover(r: Rejection) -> Result<Response, Infallible> {
    let e = if let Some(e) = r.find::<KmsError>() {
        e.clone()
    } else if r.find::<warp::reject::InvalidQuery>().is_some() {
        // Only a route whose path and method matched reads the query: it wins over the
        // 405s of the routes that share its path.
        KmsError::invalid("invalid query string")
    } else if r.find::<warp::reject::MethodNotAllowed>().is_some() {
        KmsError::new(
            ByokErrorCode::MethodNotAllowed,
            "method not allowed on this path",
        )
    } else if r.is_not_found() {
        KmsError::new(ByokErrorCode::NotFound, "no such endpoint")
    } else {
        tracing::error!(rejection = ?r, "unexpected rejection");
        KmsError::new(ByokErrorCode::InternalError, "internal error")
    };
    Ok(error_response(&e))
}

/// The answer for an error: its status, `{"error": {"code", "message"}}`, `Retry-After`
/// on 429, `Allow: POST` on 405.
pub(crate) fn error_response(e: &KmsError) -> Response {
    let mut resp = json_response(
        StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &e.body(),
    );
    if let Some(secs) = e.retry_after {
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    if e.code == ByokErrorCode::MethodNotAllowed {
        resp.headers_mut()
            .insert(ALLOW, HeaderValue::from_static(Method::POST.as_str()));
    }
    resp
}

/// A JSON answer.
pub(crate) fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    let bytes = serde_json::to_vec(body).expect("wire types serialise");
    bytes_response(status, bytes, "application/json")
}

/// An answer with a body and content type.
pub(crate) fn bytes_response(
    status: StatusCode,
    body: Vec<u8>,
    content_type: &'static str,
) -> Response {
    let mut resp = body.into_response();
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Adds `X-Request-Id`, `X-Request-Duration` and `X-Trace-Id`.
pub(crate) fn stamp(
    resp: &mut Response,
    request_id: &str,
    trace_id: Option<&str>,
    elapsed: Duration,
) {
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert(HEADER_REQUEST_ID, v);
    }
    if let Some(t) = trace_id
        && let Ok(v) = HeaderValue::from_str(t)
    {
        h.insert(HEADER_TRACE_ID, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format_ms(elapsed)) {
        h.insert(HEADER_REQUEST_DURATION, v);
    }
}

/// Milliseconds with three decimals (microsecond resolution).
pub(crate) fn format_ms(d: Duration) -> String {
    format!("{:.3}", millis(d))
}

/// Milliseconds, rounded to the microsecond.
pub(crate) fn millis(d: Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}

/// The header's value when it is a UUID (any form the `uuid` crate reads), as sent.
pub(crate) fn valid_uuid(headers: &HeaderMap, name: &str) -> Option<String> {
    let v = headers.get(name)?.to_str().ok()?;
    uuid::Uuid::parse_str(v).ok().map(|_| v.to_string())
}

/// Reads a body of at most `max` bytes; 413 beyond, refusing early on `Content-Length`.
pub(crate) async fn read_body<S, B>(
    headers: &HeaderMap,
    body: S,
    max: usize,
) -> Result<Bytes, KmsError>
where
    S: Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let too_large = || {
        KmsError::new(
            ByokErrorCode::PayloadTooLarge,
            format!("request body is larger than {max} bytes"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut buf = BytesMut::with_capacity(declared.map_or(0, |n| n as usize));
    let mut body = std::pin::pin!(body);
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(|_| KmsError::invalid("could not read the request body"))?;
        if buf.len() + chunk.remaining() > max {
            return Err(too_large());
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            let n = part.len();
            buf.put_slice(part);
            chunk.advance(n);
        }
    }
    Ok(buf.freeze())
}

/// Whether the request's `Content-Type` is `expected` (parameters such as `charset`
/// allowed, case-insensitive).
pub(crate) fn has_content_type(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .is_some_and(|v| v.eq_ignore_ascii_case(expected))
}

/// The `Authorization` header as text.
pub(crate) fn authorization(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(warp::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}
