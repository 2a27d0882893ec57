//! Every request to the platform's interface (the paths under `/api/`) passes here: the
//! fault rules first ([`crate::faults`]), then the routes, then the journal
//! ([`crate::journal`]), which records the request before its answer leaves. A request to
//! any other path passes here too while the journal is on: it is recorded when no route
//! served it ([`crate::api::RouteMiss`]), so that a client with a wrong base path is judged
//! rather than ignored; the harness's own routes are not recorded, and no fault rule
//! touches them.
//!
//! The request is attributed to its workspace once ([`crate::auth::KeyTable::owner`]):
//! fault rules made with a workspace's key apply to that workspace's requests only, and the
//! journal counts the request in that workspace's verdict.
//!
//! The connection's service ([`crate::connection::service`]) hands such a request to
//! [`Intercept::handle`]; others go straight to the routes. The request's body is wrapped in
//! a [`TeeBody`] that keeps a copy of what the routes read (JSON only, up to the body limit).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use contracts::clock::Stopwatch;
use contracts::error::PlatformErrorBody;
use contracts::operations::{Catalogue, Resolved};
use contracts::wire::AppliedFault;
use futures_util::Stream;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use warp::Reply;
use warp::http::{HeaderValue, Request, StatusCode, header};
use warp::reply::Response;

use crate::api::RouteMiss;
use crate::api::router::Routes;
use crate::app::App;
use crate::config::journal::ResponseBodies;
use crate::error::json_response;
use crate::faults::{Decision, FaultRequest};
use crate::journal::verdict::{
    Exchange, IgnoredParts, SeenBody, entry, misplaced_key, path_workspace,
};
use crate::media_type;

/// Largest 422 answer read for its items when it is above the journal's body limit.
const VALIDATION_ANSWER_MAX: u64 = 1024 * 1024;

/// The fault rules and the journal of one platform, in front of its routes.
#[derive(Clone)]
pub(crate) struct Intercept {
    app: App,
}

impl std::fmt::Debug for Intercept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intercept").finish_non_exhaustive()
    }
}

impl Intercept {
    /// The intercept of `app`'s journal and fault rules.
    pub(crate) fn new(app: App) -> Intercept {
        Intercept { app }
    }

    /// Whether a request to `path` goes through [`Intercept::handle`]: any path while the
    /// journal is on, a path of the interface while a fault rule is set.
    pub(crate) fn observes(&self, path: &str) -> bool {
        self.app.journal.enabled()
            || (path.starts_with(contracts::openapi::INTERFACE_PREFIX) && self.app.faults.any())
    }

    /// Answers `req` with `routes`: a fault rule may answer first, delay it, cut its answer
    /// or drop the connection; the journal records it with its verdict.
    pub(crate) async fn handle<B>(&self, req: Request<B>, routes: &Routes) -> Response
    where
        B: Body<Data = Bytes> + Send + Sync + Unpin + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let watch = Stopwatch::start();
        let app = &self.app;
        let at = app.clock.now();
        let (parts, body) = req.into_parts();
        let method = parts.method.clone();
        let uri = parts.uri.clone();
        let path = uri.path();
        let query = uri.query().unwrap_or("");
        let resolved = Catalogue::platform().resolve(method.as_str(), path);
        let api_key_value = parts.headers.get(&crate::api::auth::API_KEY).cloned();
        let api_key = api_key_value.as_ref().and_then(|v| v.to_str().ok());
        let key_elsewhere = api_key_value
            .is_none()
            .then(|| misplaced_key(&parts.headers))
            .flatten();
        let request_type = parts.headers.get(header::CONTENT_TYPE).cloned();
        let path_ws = path_workspace(&resolved, path);
        let owner = app.auth.owner(api_key, path_ws.as_ref());
        let record = |status: Option<u16>,
                      request: &SeenBody,
                      response: &SeenBody,
                      fault: Option<AppliedFault>,
                      handled: bool,
                      ignored_parts: &[String]| {
            if !app.journal.enabled() {
                return;
            }
            let x = Exchange {
                at,
                method: method.as_str(),
                path,
                query,
                api_key,
                key_elsewhere: key_elsewhere.as_deref(),
                path_workspace: path_ws.as_ref(),
                ignored_parts,
                resolved: &resolved,
                status,
                duration_ms: watch.elapsed().as_secs_f64() * 1000.0,
                request,
                response,
                fault,
                handled,
            };
            app.journal.record(
                entry(&x, &app.auth, app.journal.settings().body_limit_bytes),
                owner.as_deref(),
            );
        };
        let unread = SeenBody {
            content_type: request_type.clone(),
            ..SeenBody::default()
        };
        if !path.starts_with(contracts::openapi::INTERFACE_PREFIX) {
            // Not the interface: recorded only when no route served it.
            let response = routes.answer(Request::from_parts(parts, body)).await;
            if response.extensions().get::<RouteMiss>().is_some() {
                let status = response.status().as_u16();
                let seen = SeenBody {
                    content_type: response.headers().get(header::CONTENT_TYPE).cloned(),
                    not_kept: true,
                    ..SeenBody::default()
                };
                record(Some(status), &unread, &seen, None, true, &[]);
            }
            return response;
        }
        let operation_id = match &resolved {
            Resolved::Operation(_, op, _) => Some(op.operation_id.as_str()),
            _ => None,
        };
        let decision = app.faults.decide(&FaultRequest {
            operation_id,
            path,
            method: method.as_str(),
            path_workspace: path_ws.as_ref(),
            owner: owner.as_deref(),
            api_key,
            now: at,
        });
        let (delay, truncate, applied) = match decision {
            Decision::Answer {
                status,
                retry_after,
                applied,
            } => {
                let (response, seen) = fault_answer(status, retry_after, &applied);
                record(Some(status), &unread, &seen, Some(applied), false, &[]);
                return response;
            }
            Decision::Drop { applied } => {
                record(
                    None,
                    &unread,
                    &SeenBody::default(),
                    Some(applied),
                    false,
                    &[],
                );
                drop_connection();
            }
            Decision::Proceed {
                delay,
                truncate,
                applied,
            } => (delay, truncate, applied),
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let journal_on = app.journal.enabled();
        let capture = if journal_on
            && request_type
                .as_ref()
                .is_none_or(|t| t.to_str().is_ok_and(media_type::is_json))
        {
            app.config.max_body_bytes as usize
        } else {
            0
        };
        // A request without a body (a GET) is not watched.
        let watched = body.size_hint().exact() != Some(0);
        let tee = TeeBody::new(body, watched.then(|| (capture, request_type.clone())));
        let seen_request = tee.seen.clone();
        let response = routes.answer(Request::from_parts(parts, tee)).await;
        let (mut head, body) = response.into_parts();
        let status = head.status.as_u16();
        let ignored_parts = head.extensions.remove::<IgnoredParts>().unwrap_or_default();
        let response_type = head.headers.get(header::CONTENT_TYPE).cloned();
        let size = body.size_hint().exact();
        let settings = app.journal.settings();
        let limit = settings.body_limit_bytes as u64;
        let kept = journal_on
            && (settings.response_bodies == ResponseBodies::All
                || status >= 400
                || applied.is_some());
        let keep = kept
            && response_type
                .as_ref()
                .is_some_and(|t| t.to_str().is_ok_and(media_type::is_json))
            && size.is_some_and(|n| n <= limit || (status == 422 && n <= VALIDATION_ANSWER_MAX));
        let (bytes, body) = if keep || truncate {
            match body.collect().await {
                Ok(c) => {
                    let b = c.to_bytes();
                    (Some(b.clone()), b.into())
                }
                Err(e) => {
                    tracing::warn!(error = %e, "answer body could not be read");
                    (None, Bytes::new().into())
                }
            }
        } else {
            (None, body)
        };
        let seen_response = SeenBody {
            content_type: response_type,
            size: size.or(bytes.as_ref().map(|b| b.len() as u64)).unwrap_or(0),
            complete: bytes.is_some(),
            bytes: bytes.clone().unwrap_or_default(),
            not_kept: !kept,
        };
        let response = match (&bytes, truncate) {
            (Some(b), true) => truncated(head, b.clone()),
            _ => Response::from_parts(head, body),
        };
        let request = match &seen_request {
            Some(seen) => seen
                .lock()
                .map_or_else(|p| p.into_inner().clone(), |s| s.clone()),
            None => unread,
        };
        record(
            Some(status),
            &request,
            &seen_response,
            applied,
            true,
            &ignored_parts.0,
        );
        response
    }
}

/// The answer of a `status` or `rate_limit` fault: the platform's error body, with
/// `Retry-After` when given.
fn fault_answer(
    status: u16,
    retry_after: Option<u64>,
    applied: &AppliedFault,
) -> (Response, SeenBody) {
    let (error_type, code) = match status {
        429 => ("rate_limit_error", "rate_limited"),
        502 => ("bad_gateway", "bad_gateway"),
        503 => ("service_unavailable", "service_unavailable"),
        504 => ("gateway_timeout", "gateway_timeout"),
        _ => ("internal_error", "internal_error"),
    };
    let message = match retry_after {
        Some(s) => format!(
            "the platform cannot take this request now; retry after {s} s (injected by fault rule {})",
            applied.fault_id
        ),
        None => format!(
            "the platform failed to handle the request (injected by fault rule {})",
            applied.fault_id
        ),
    };
    let body = PlatformErrorBody::new(error_type, code, message);
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut response = json_response(code, &body);
    if let Some(s) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    let bytes = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    let seen = SeenBody {
        content_type: Some(HeaderValue::from_static("application/json")),
        size: bytes.len() as u64,
        complete: true,
        bytes,
        not_kept: false,
    };
    (response, seen)
}

/// The answer with its whole length announced but only the first half of its body sent,
/// then an error that makes the server close the connection.
fn truncated(parts: warp::http::response::Parts, body: Bytes) -> Response {
    let whole = body.len();
    let mut response = warp::reply::stream(HalfThenFail::new(body)).into_response();
    *response.status_mut() = parts.status;
    *response.headers_mut() = parts.headers;
    response
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(whole));
    response
}

/// A body that yields its first half, pauses (so the server sends the head and that half),
/// then fails (so the server closes the connection).
struct HalfThenFail {
    half: Option<Bytes>,
    pause: Pin<Box<tokio::time::Sleep>>,
}

impl HalfThenFail {
    /// How long the half waits on the wire before the connection closes.
    const PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

    fn new(body: Bytes) -> HalfThenFail {
        HalfThenFail {
            half: Some(body.slice(..body.len() / 2)),
            pause: Box::pin(tokio::time::sleep(Self::PAUSE)),
        }
    }
}

impl Stream for HalfThenFail {
    type Item = Result<Bytes, io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(half) = self.half.take() {
            return Poll::Ready(Some(Ok(half)));
        }
        match self.pause.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => Poll::Ready(Some(Err(io::Error::other(
                "answer cut short by a truncate fault rule",
            )))),
        }
    }
}

/// The payload of the unwind that ends a connection for a `drop` fault.
#[derive(Debug)]
pub(crate) struct ConnectionDropped;

/// Ends the connection without an answer. warp answers every request it is handed, so
/// the only way to close before the answer is to end the connection's task: unwinding
/// with [`std::panic::resume_unwind`] does that without running the panic hook (nothing is
/// printed), and the runtime drops the connection, closing the socket. Only the connection
/// that met the fault is affected.
fn drop_connection() -> ! {
    std::panic::resume_unwind(Box::new(ConnectionDropped))
}

/// A request body that keeps a copy of what passes through it (when watched).
pub(crate) struct TeeBody<B> {
    inner: B,
    seen: Option<Arc<Mutex<SeenBody>>>,
    buf: BytesMut,
    limit: usize,
    overflow: bool,
    done: bool,
}

impl<B> TeeBody<B> {
    /// `inner`, watched when `watch` gives the most bytes to copy and the media type.
    fn new(inner: B, watch: Option<(usize, Option<HeaderValue>)>) -> TeeBody<B> {
        let (limit, seen) = match watch {
            Some((limit, content_type)) => (
                limit,
                Some(Arc::new(Mutex::new(SeenBody {
                    content_type,
                    ..SeenBody::default()
                }))),
            ),
            None => (0, None),
        };
        TeeBody {
            inner,
            seen,
            buf: BytesMut::new(),
            limit,
            overflow: false,
            done: false,
        }
    }

    /// The body ended: what was kept is the copy.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        if let Some(seen) = &self.seen {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.complete = !self.overflow;
            seen.bytes = std::mem::take(&mut self.buf).freeze();
        }
    }
}

impl<B> Body for TeeBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let next = Pin::new(&mut this.inner).poll_frame(cx);
        match &next {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(chunk), Some(seen)) = (frame.data_ref(), &this.seen) {
                    if !this.overflow && this.buf.len() + chunk.len() <= this.limit {
                        this.buf.extend_from_slice(chunk);
                    } else {
                        this.overflow = true;
                        this.buf.clear();
                    }
                    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                    seen.size += chunk.len() as u64;
                }
                if this.inner.is_end_stream() {
                    this.finish();
                }
            }
            Poll::Ready(None) => this.finish(),
            _ => {}
        }
        next
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
