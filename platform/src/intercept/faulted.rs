//! What a fault rule makes of an answer: the error answer of a `status` or `rate_limit`
//! rule, an answer cut after half its body (`truncate`), no answer at all (`drop`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use contracts::error::PlatformErrorBody;
use contracts::wire::AppliedFault;
use futures_util::Stream;
use warp::Reply;
use warp::http::{HeaderValue, StatusCode, header};
use warp::reply::Response;

use crate::error::json_response;
use crate::journal::verdict::SeenBody;

/// The answer of a `status` or `rate_limit` fault: the platform's error body, with
/// `Retry-After` when given.
pub(super) fn fault_answer(
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
pub(super) fn truncated(parts: warp::http::response::Parts, body: Bytes) -> Response {
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
pub(super) fn drop_connection() -> ! {
    std::panic::resume_unwind(Box::new(ConnectionDropped))
}
