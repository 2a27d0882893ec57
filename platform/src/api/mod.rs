//! The HTTP API on warp: one module of routes per resource, shared request plumbing here.
//!
//! Handlers never reject: every failure after a route matched becomes an answer in the
//! platform's error shapes ([`crate::error::ApiError`]); a handler returns its result and
//! the route answers it ([`respond`]). The caller's key is checked by a filter after the
//! route's path and method ([`auth`]); a refused key is answered as soon as no other route
//! takes the request ([`auth::answer_refusal`]). A request no route takes gets
//! [`route_miss`]: 405 with `Allow` on a path of the OpenAPI document, 404 elsewhere. Every
//! GET route answers HEAD too ([`get`]).
//!
//! - [`outbound`], [`campaigns`], [`deployments`], [`cohorts`]: the resources;
//!   [`multipart`]: the body of a cohort upload.
//! - [`auth`]: API-key authentication: the filters that give a handler its caller
//!   ([`auth::workspace_key`] and the like), the keys in [`crate::auth::KeyTable`].
//! - [`docs`]: `GET /openapi.json`.
//! - [`sim`]: the simulation API under `/sim/v1`.
//! - [`admin`]: the admin API of a workspace's data keys under `/admin/v1`.
//! - [`journal`], [`faults`]: the request journal and the fault rules under `/sim/v1`.
//! - [`health`]: `GET /healthz`, without a key.
//! - [`ui`]: `GET /ui`, the live page (no key for the page; it asks for one); [`live`]: the
//!   routes it reads that no other route gives.
//!
//! [`router`] holds every route ([`router::Routes`]), each request offered only to the
//! modules its path can match. The connection's service puts [`crate::intercept`] (fault
//! rules, then the journal) in front of the interface's routes.

pub(crate) mod admin;
pub(crate) mod auth;
pub(crate) mod campaigns;
pub(crate) mod cohorts;
pub(crate) mod deployments;
pub(crate) mod docs;
pub(crate) mod faults;
pub(crate) mod health;
pub(crate) mod journal;
pub(crate) mod live;
pub(crate) mod multipart;
pub(crate) mod outbound;
pub(crate) mod router;
pub(crate) mod sim;
pub mod ui;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;

use bytes::{Buf, Bytes, BytesMut};
use contracts::error::{ErrorType, Loc, PlatformErrorBody, ValidationErrors};
use contracts::wire::Page;
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use warp::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use warp::reply::Response;
use warp::{Filter, Rejection};

use crate::app::App;
use crate::error::{ApiError, json_response};

/// GET, and HEAD answered as GET without the body (RFC 9110: a server that serves GET on a
/// route serves HEAD there too). Route modules use it instead of `warp::get()`.
pub(crate) fn get() -> impl Filter<Extract = (), Error = Rejection> + Copy {
    warp::get().or(warp::head()).unify()
}

/// The routes of the OpenAPI document: each path as its segments (`{param}` matches any
/// one segment) and the methods it takes, HEAD included where GET is.
static ROUTES: LazyLock<Vec<(Vec<String>, Vec<Method>)>> = LazyLock::new(|| {
    let doc = contracts::openapi::platform_document();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut methods: Vec<Method> = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ]
        .into_iter()
        .filter(|m| {
            let documented = |m: &Method| item.get(m.as_str().to_ascii_lowercase()).is_some();
            documented(m) || (*m == Method::HEAD && documented(&Method::GET))
        })
        .collect();
        methods.dedup();
        out.push((path.split('/').map(str::to_string).collect(), methods));
    }
    out
});

/// The methods the document lists for `path`, or `None` when it has no such path.
pub(crate) fn allowed_methods(path: &str) -> Option<&'static [Method]> {
    let trimmed = if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    };
    let segments: Vec<&str> = trimmed.split('/').collect();
    // Literal segments win over `{param}` ones (`.../cohorts/upload` is not a cohort id).
    ROUTES
        .iter()
        .filter(|(template, _)| {
            template.len() == segments.len()
                && template
                    .iter()
                    .zip(&segments)
                    .all(|(t, s)| (t.starts_with('{') && !s.is_empty()) || t == s)
        })
        .min_by_key(|(template, _)| template.iter().filter(|t| t.starts_with('{')).count())
        .map(|(_, methods)| methods.as_slice())
}

/// Marks the answer of [`route_miss`] (as a response extension), so that the journal
/// records a request that no route served, whatever its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RouteMiss;

/// The answer when no route took the request: 405 with `Allow` when the path is a route of
/// the document (another method), 404 otherwise; in the platform's error shape.
pub(crate) fn route_miss(path: warp::path::FullPath, method: Method) -> Response {
    let mut answer = route_miss_answer(&path, &method);
    answer.extensions_mut().insert(RouteMiss);
    answer
}

fn route_miss_answer(path: &warp::path::FullPath, method: &Method) -> Response {
    match allowed_methods(path.as_str()) {
        Some(allowed) => {
            let list: Vec<&str> = allowed.iter().map(Method::as_str).collect();
            let list = list.join(", ");
            let mut r = json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                &PlatformErrorBody::new(
                    "invalid_request_error",
                    "method_not_allowed",
                    format!(
                        "{path} takes {list}, not {method}; see GET /openapi.json",
                        path = path.as_str()
                    ),
                ),
            );
            if let Ok(v) = HeaderValue::from_str(&list) {
                r.headers_mut().insert(header::ALLOW, v);
            }
            r
        }
        None => json_response(
            StatusCode::NOT_FOUND,
            &PlatformErrorBody::new(
                "not_found_error",
                "route_not_found",
                "no such route; see GET /openapi.json",
            ),
        ),
    }
}

/// An answer still to come: what awaits, boxed (the way of requests that wait; those that
/// do not are answered without it).
pub(crate) type Later = Pin<Box<dyn Future<Output = Response> + Send>>;

/// What the routes make of a request without awaiting anything
/// ([`router::Routes::answer_now`]).
pub(crate) enum Routed<B> {
    /// Answered.
    Now(Response),
    /// Its route's work that waits.
    Later(Later),
    /// For warp's filters ([`router::Routes::warp`]).
    Warp(Request<B>),
}

/// What handlers need of a request beyond path parameters and body.
#[derive(Debug, Clone)]
pub(crate) struct RequestMeta {
    /// The headers.
    pub(crate) headers: HeaderMap,
    /// The path as requested.
    pub(crate) path: String,
    /// The raw query string (empty when none).
    pub(crate) query: String,
}

impl RequestMeta {
    /// A header as text (by a [`warp::http::HeaderName`] on hot paths: a name given as
    /// text is parsed at each lookup).
    pub(crate) fn header(&self, name: impl warp::http::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The decoded query pairs, in order.
    pub(crate) fn query_pairs(&self) -> Vec<(String, String)> {
        serde_urlencoded::from_str(&self.query).unwrap_or_default()
    }

    /// The `x-trace-id` of the request, if any: carried to the key service.
    pub(crate) fn trace_id(&self) -> Option<String> {
        self.header(contracts::wire::byok::HEADER_TRACE_ID)
            .map(str::to_string)
    }
}

/// Extracts [`RequestMeta`].
pub(crate) fn meta() -> impl Filter<Extract = (RequestMeta,), Error = Infallible> + Clone {
    warp::header::headers_cloned()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .map(|headers, path: warp::path::FullPath, query| RequestMeta {
            headers,
            path: path.as_str().to_string(),
            query,
        })
}

/// The app, for handlers.
pub(crate) fn with_app(app: App) -> impl Filter<Extract = (App,), Error = Infallible> + Clone {
    warp::any().map(move || app.clone())
}

/// A request body as a stream of byte chunks.
pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, warp::Error>> + Send>>;

/// Extracts the body as a [`BodyStream`], read later by the handler (after authentication).
pub(crate) fn body() -> impl Filter<Extract = (BodyStream,), Error = Rejection> + Clone {
    fn to_bytes<B: Buf>(chunk: Result<B, warp::Error>) -> Result<Bytes, warp::Error> {
        chunk.map(|mut b| b.copy_to_bytes(b.remaining()))
    }
    warp::body::stream().map(|s| {
        let s: BodyStream = Box::pin(StreamExt::map(s, to_bytes));
        s
    })
}

/// Reads a whole body up to `limit` bytes (413 above it, early when `Content-Length` says so).
pub(crate) async fn read_limited(
    meta: &RequestMeta,
    mut body: BodyStream,
    limit: u64,
) -> Result<Bytes, ApiError> {
    if let Some(len) = meta
        .header("content-length")
        .and_then(|v| v.parse::<u64>().ok())
        && len > limit
    {
        return Err(ApiError::TooLarge { limit });
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::Validation(ValidationErrors::single(
                &Loc::body(),
                ErrorType::JsonInvalid,
                format!("the body could not be read: {e}"),
            ))
        })?;
        if buf.len() as u64 + chunk.len() as u64 > limit {
            return Err(ApiError::TooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// Reads a JSON body: the media type must be JSON (`application/json` or `+json`; a missing
/// `Content-Type` is refused like a wrong one, so a client that forgets it learns so here
/// rather than from the real platform), the size within the limit, the text valid JSON.
pub(crate) async fn read_json(
    app: &App,
    meta: &RequestMeta,
    body: BodyStream,
) -> Result<Value, ApiError> {
    let Some(ct) = meta.header("content-type") else {
        return Err(ApiError::UnsupportedMediaType {
            message: "this route reads a JSON body: send Content-Type: application/json".into(),
        });
    };
    if !crate::media_type::is_json(ct) {
        let essence = crate::media_type::essence(ct);
        return Err(ApiError::UnsupportedMediaType {
            message: format!("this route reads application/json, not '{essence}'"),
        });
    }
    let bytes = read_limited(meta, body, app.config.max_body_bytes).await?;
    Ok(contracts::validate::parse_json_body(&bytes)?)
}

/// The page with the full URIs of the next and previous pages, keeping the request's other
/// query parameters; `None` at the ends.
pub(crate) fn with_page_uris<T>(app: &App, meta: &RequestMeta, mut page: Page<T>) -> Page<T> {
    (page.next_page_uri, page.prev_page_uri) =
        page_uris(app, meta, page.offset, page.limit, page.total);
    page
}

fn page_uris(
    app: &App,
    meta: &RequestMeta,
    offset: u64,
    limit: u32,
    total: u64,
) -> (Option<String>, Option<String>) {
    let base = base_url(app, meta);
    let others: Vec<(String, String)> = meta
        .query_pairs()
        .into_iter()
        .filter(|(k, _)| k != "offset" && k != "limit")
        .collect();
    let uri = |off: u64| {
        let mut pairs = others.clone();
        pairs.push(("offset".into(), off.to_string()));
        pairs.push(("limit".into(), limit.to_string()));
        let q = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        format!("{base}{}?{q}", meta.path)
    };
    let next = (offset + u64::from(limit) < total).then(|| uri(offset + u64::from(limit)));
    let prev = (offset > 0).then(|| uri(offset.saturating_sub(u64::from(limit))));
    (next, prev)
}

/// The platform's address as the client reaches it: `--public-url`, else `http://` and the
/// request's `Host`.
pub(crate) fn base_url(app: &App, meta: &RequestMeta) -> String {
    match &app.config.public_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => format!("http://{}", meta.header("host").unwrap_or("localhost")),
    }
}

/// Turns a handler's result into an answer.
pub(crate) fn respond(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(ApiError::into_response)
}

/// A 200 JSON answer.
pub(crate) fn ok<T: serde::Serialize>(body: &T) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, body))
}
