//! The request body as the routes read it, with a copy kept for the journal.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use warp::http::HeaderValue;

use crate::journal::verdict::SeenBody;

/// A request body that keeps a copy of what passes through it (when watched).
pub(crate) struct TeeBody<B> {
    inner: B,
    pub(super) seen: Option<Arc<Mutex<SeenBody>>>,
    buf: BytesMut,
    limit: usize,
    overflow: bool,
    done: bool,
}

impl<B> TeeBody<B> {
    /// `inner`, watched when `watch` gives the most bytes to copy and the media type.
    pub(super) fn new(inner: B, watch: Option<(usize, Option<HeaderValue>)>) -> TeeBody<B> {
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
