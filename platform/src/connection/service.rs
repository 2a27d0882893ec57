//! One request through the platform's routes, and what the connection needs around it: the
//! target's length, the body's read timeout, and whether the connection can carry the next
//! request (the body read to its end, or a small rest drained) or must say it closes.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use warp::http::Request;
use warp::http::header::EXPECT;
use warp::reply::Response;

use super::answers::{Refusal, close_after};
use super::body::GuardedBody;
use crate::api::router::Routes;
use crate::intercept::Intercept;

use super::{DRAIN_MAX_BYTES, DRAIN_MAX_WAIT, Limits, MAX_URI_BYTES};

/// The platform's routes as a hyper service for one connection.
#[derive(Clone)]
pub(crate) struct RequestService {
    routes: Routes,
    intercept: Option<Arc<Intercept>>,
    limits: Limits,
}

impl RequestService {
    /// A service answering with `routes` under `limits`; the requests `intercept` observes
    /// (fault rules, the request journal) go through it.
    pub(crate) fn new(
        routes: Routes,
        intercept: Option<Arc<Intercept>>,
        limits: Limits,
    ) -> RequestService {
        RequestService {
            routes,
            intercept,
            limits,
        }
    }

    async fn answer(self, req: Request<Incoming>) -> Response {
        let target_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        let expects_continue = req
            .headers()
            .get(EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let (parts, incoming) = req.into_parts();
        let body = GuardedBody::new(
            incoming,
            self.limits.body_read_timeout,
            self.limits.body_min_rate,
        );
        let mut response = if target_len > MAX_URI_BYTES {
            Refusal::UriTooLong.response()
        } else {
            let req = Request::from_parts(parts, body.clone());
            // The live page's reads watch the client; they are not the client's requests.
            let observer = crate::api::ui::observes(&req);
            match &self.intercept {
                Some(i) if !observer && i.observes(req.uri().path()) => {
                    i.handle(req, &self.routes).await
                }
                _ => self.routes.answer(req).await,
            }
        };
        let read_timeout_ms = self.limits.body_read_timeout.as_millis() as u64;
        if body.too_slow() {
            return Refusal::BodyTooSlow {
                min_rate: self.limits.body_min_rate,
                grace_ms: read_timeout_ms,
            }
            .response();
        }
        if body.timed_out() {
            return Refusal::BodyTimeout {
                ms: read_timeout_ms,
            }
            .response();
        }
        if let Some(error) = body.read_error() {
            // The route saw a body it could not read; the client learns that its framing was
            // wrong, not that its JSON was (when it is still there to hear it).
            tracing::debug!(%error, "a request body could not be read");
            return Refusal::BodyMalformed.response();
        }
        if !reusable(&body, expects_continue, self.limits.body_read_timeout).await {
            close_after(&mut response);
        }
        response
    }
}

/// Whether the connection can take another request after this one: its body was read to
/// the end, or a rest of at most [`DRAIN_MAX_BYTES`] arrives soon and is dropped. Not when a
/// read failed, nor when the client waits for `100 Continue` before sending a body nobody
/// asked for (asking for it now would make it send the body only to have it dropped).
async fn reusable(body: &GuardedBody, expects_continue: bool, body_timeout: Duration) -> bool {
    if body.failed() {
        return false;
    }
    if body.finished() {
        return true;
    }
    if expects_continue && !body.polled() {
        return false;
    }
    body.drain(DRAIN_MAX_BYTES, DRAIN_MAX_WAIT.min(body_timeout))
        .await
}

impl hyper::service::Service<Request<Incoming>> for RequestService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.answer(req).await) })
    }
}
