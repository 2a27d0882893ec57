//! A request body with a read timeout and a minimum average rate, which the connection keeps
//! after the route is done with it, to learn whether it was read to its end and to drain a
//! small rest.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Sleep;

/// Why a guarded body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// Nothing arrived for longer than the body read timeout.
    #[error("the request body stalled: nothing arrived for {0:?}")]
    TimedOut(Duration),
    /// The body arrived slower than the minimum average rate.
    #[error("the request body arrived slower than {0} bytes per second")]
    TooSlow(u64),
    /// The connection failed or the body was malformed.
    #[error("the request body could not be read: {0}")]
    Read(#[from] hyper::Error),
}

struct State {
    incoming: Incoming,
    timeout: Duration,
    /// Least average rate in bytes per second (0: none).
    min_rate: u64,
    /// The inactivity timer, armed while the body is awaited.
    sleep: Option<Pin<Box<Sleep>>>,
    /// The whole body's deadline, armed at the first read: `timeout` after it, and later by
    /// one second per `min_rate` bytes received.
    deadline: Option<Pin<Box<Sleep>>>,
    finished: bool,
    failed: bool,
    timed_out: bool,
    too_slow: bool,
    /// Why a read failed, when the connection or the body's framing broke.
    read_error: Option<String>,
    polled: bool,
}

/// A request body whose reader gets [`BodyError::TimedOut`] when the client stops sending
/// it for the configured time, and [`BodyError::TooSlow`] when it sends it slower than the
/// minimum average rate (after a grace of that same time), so that a client trickling a byte
/// now and then cannot hold a connection for long. Clones share the one body.
#[derive(Clone)]
pub(crate) struct GuardedBody {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for GuardedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedBody").finish_non_exhaustive()
    }
}

impl GuardedBody {
    /// Guards `incoming` with an inactivity `timeout` and a least average rate of
    /// `min_rate` bytes per second (0: no rate), counted from the first read with `timeout`
    /// of grace: the whole body must arrive within `timeout` plus one second per `min_rate`
    /// bytes.
    pub(crate) fn new(incoming: Incoming, timeout: Duration, min_rate: u64) -> GuardedBody {
        GuardedBody {
            state: Arc::new(Mutex::new(State {
                incoming,
                timeout,
                min_rate,
                sleep: None,
                deadline: None,
                finished: false,
                failed: false,
                timed_out: false,
                too_slow: false,
                read_error: None,
                polled: false,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the whole body has been received.
    pub(crate) fn finished(&self) -> bool {
        let s = self.lock();
        s.finished || s.incoming.is_end_stream()
    }

    /// Whether a read timed out (a pause, or the whole body too slow).
    pub(crate) fn timed_out(&self) -> bool {
        self.lock().timed_out
    }

    /// Whether the body arrived slower than the minimum rate.
    pub(crate) fn too_slow(&self) -> bool {
        self.lock().too_slow
    }

    /// Why a read failed when the connection or the body's framing broke (not a timeout).
    pub(crate) fn read_error(&self) -> Option<String> {
        self.lock().read_error.clone()
    }

    /// Whether a read failed (timed out, or the connection broke): the connection cannot
    /// carry another request.
    pub(crate) fn failed(&self) -> bool {
        self.lock().failed
    }

    /// Whether anything asked for the body yet (for `Expect: 100-continue`, asking makes the
    /// client send it).
    pub(crate) fn polled(&self) -> bool {
        self.lock().polled
    }

    /// Reads and drops the rest of the body if it is at most `max_bytes` and arrives within
    /// `wait`; answers whether the body was then read to its end.
    pub(crate) async fn drain(&self, max_bytes: u64, wait: Duration) -> bool {
        if self.finished() {
            return true;
        }
        if self.lock().incoming.size_hint().lower() > max_bytes {
            return false;
        }
        let mut body = self.clone();
        let mut read = 0u64;
        let drained = async {
            loop {
                match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    None => return true,
                    Some(Ok(frame)) => {
                        read += frame.data_ref().map_or(0, |d| d.len() as u64);
                        if read > max_bytes {
                            return false;
                        }
                    }
                    Some(Err(_)) => return false,
                }
            }
        };
        tokio::time::timeout(wait, drained).await.unwrap_or(false)
    }
}

/// An error and its causes, `: `-separated (hyper's own message names only the stage that
/// failed, "error reading a body from connection"; its cause says what was wrong).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let mut s = self.lock();
        let s = &mut *s;
        if s.finished {
            return Poll::Ready(None);
        }
        if s.timed_out {
            return Poll::Ready(Some(Err(BodyError::TimedOut(s.timeout))));
        }
        s.polled = true;
        if s.min_rate > 0 && s.deadline.is_none() {
            s.deadline = Some(Box::pin(tokio::time::sleep(s.timeout)));
        }
        match Pin::new(&mut s.incoming).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                s.sleep = None;
                if let (Some(deadline), Some(data)) = (s.deadline.as_mut(), frame.data_ref()) {
                    let earned = Duration::from_secs_f64(data.len() as f64 / s.min_rate as f64);
                    let later = deadline.deadline() + earned;
                    deadline.as_mut().reset(later);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                s.failed = true;
                s.read_error = Some(with_causes(&e));
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                s.finished = true;
                s.sleep = None;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let timeout = s.timeout;
                let sleep = s
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if sleep.as_mut().poll(cx).is_ready() {
                    s.timed_out = true;
                    s.failed = true;
                    s.sleep = None;
                    return Poll::Ready(Some(Err(BodyError::TimedOut(timeout))));
                }
                if let Some(deadline) = s.deadline.as_mut()
                    && deadline.as_mut().poll(cx).is_ready()
                {
                    s.timed_out = true;
                    s.too_slow = true;
                    s.failed = true;
                    s.sleep = None;
                    return Poll::Ready(Some(Err(BodyError::TooSlow(s.min_rate))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.finished()
    }

    fn size_hint(&self) -> SizeHint {
        self.lock().incoming.size_hint()
    }
}
