//! One request through the platform's routes, and what the connection needs around it: the
//! target's length, the body's read timeout, and whether the connection can carry the next
//! request (the body read to its end, or a small rest drained) or must say it closes.
//!
//! A request is answered without an allocated future when nothing on its way waits (a list
//! answered before, a refused key, a refused target): the service's future is [`Answering`],
//! whose state holds the answer, or the one boxed future of what waits (a route that awaits,
//! a fault's delay, an answer body the journal reads, a request body drained).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use hyper::body::Incoming;
use warp::http::Request;
use warp::http::header::EXPECT;
use warp::reply::Response;

use super::answers::{Refusal, close_after};
use super::body::GuardedBody;
use crate::api::Later;
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

    fn answer(&self, req: Request<Incoming>) -> Answering {
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
        let answered = if target_len > MAX_URI_BYTES {
            Ok(Refusal::UriTooLong.response())
        } else {
            let req = Request::from_parts(parts, body.clone());
            // The live page's reads watch the client; they are not the client's requests.
            let observer = crate::api::ui::observes(&req);
            match &self.intercept {
                Some(i) if !observer && i.observes(req.uri().path()) => i.answer(req, &self.routes),
                _ => self.routes.answer_or_later(req),
            }
        };
        let finish = Finish {
            body,
            expects_continue,
            limits: self.limits,
        };
        match answered {
            Ok(response) => finish.run(response),
            Err(later) => Answering::Routing(later, Some(finish)),
        }
    }
}

/// What is left once the routes answered: the body's failures answered, and whether the
/// connection can carry the next request.
pub(crate) struct Finish {
    body: GuardedBody,
    expects_continue: bool,
    limits: Limits,
}

impl Finish {
    fn run(self, mut response: Response) -> Answering {
        let body = &self.body;
        let read_timeout_ms = self.limits.body_read_timeout.as_millis() as u64;
        if body.too_slow() {
            return Answering::Ready(Some(
                Refusal::BodyTooSlow {
                    min_rate: self.limits.body_min_rate,
                    grace_ms: read_timeout_ms,
                }
                .response(),
            ));
        }
        if body.timed_out() {
            return Answering::Ready(Some(
                Refusal::BodyTimeout {
                    ms: read_timeout_ms,
                }
                .response(),
            ));
        }
        if let Some(error) = body.read_error() {
            // The route saw a body it could not read; the client learns that its framing was
            // wrong, not that its JSON was (when it is still there to hear it).
            tracing::debug!(%error, "a request body could not be read");
            return Answering::Ready(Some(Refusal::BodyMalformed.response()));
        }
        // The connection can take another request when the body was read to the end, or a
        // rest of at most DRAIN_MAX_BYTES arrives soon and is dropped. Not when a read
        // failed, nor when the client waits for `100 Continue` before sending a body nobody
        // asked for (asking for it now would make it send the body only to have it dropped).
        if body.failed() || (self.expects_continue && !body.finished() && !body.polled()) {
            close_after(&mut response);
            return Answering::Ready(Some(response));
        }
        if body.finished() {
            return Answering::Ready(Some(response));
        }
        let body = self.body.clone();
        let wait = DRAIN_MAX_WAIT.min(self.limits.body_read_timeout);
        Answering::Draining(
            Some(response),
            Box::pin(async move { body.drain(DRAIN_MAX_BYTES, wait).await }),
        )
    }
}

/// The future of one request's answer.
pub(crate) enum Answering {
    /// Answered.
    Ready(Option<Response>),
    /// The routes' answer awaited, then [`Finish`].
    Routing(Later, Option<Finish>),
    /// The rest of the request body drained: whether the connection can be kept.
    Draining(Option<Response>, Pin<Box<dyn Future<Output = bool> + Send>>),
}

impl Future for Answering {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match &mut *self {
                Answering::Ready(response) => {
                    return Poll::Ready(Ok(response.take().expect("answered once")));
                }
                Answering::Routing(later, finish) => {
                    let response = ready!(later.as_mut().poll(cx));
                    let finish = finish.take().expect("finished once");
                    *self = finish.run(response);
                }
                Answering::Draining(response, drain) => {
                    let kept = ready!(drain.as_mut().poll(cx));
                    let mut response = response.take().expect("answered once");
                    if !kept {
                        close_after(&mut response);
                    }
                    return Poll::Ready(Ok(response));
                }
            }
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for RequestService {
    type Response = Response;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.answer(req)
    }
}
