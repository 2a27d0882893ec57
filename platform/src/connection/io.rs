//! The connection's socket as hyper sees it, holding back hyper's own empty answers to
//! request heads it cannot parse.
//!
//! hyper answers a malformed request line or header (400), a target too long for it (414)
//! and a header section too large (431) by itself, with an empty body, and then ends the
//! connection with a parse error. [`GuardedIo`] keeps back a write that is exactly such an
//! answer ([`automatic_status`]). Any later write, or a shutdown, sends it on unchanged; when
//! the connection then ends with hyper's parse error, the connection task sends the answer
//! in the platform's error shape instead ([`GuardedIo::into_parts`]). So the replacement
//! happens only when hyper itself has said the bytes were its automatic answer.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::answers::automatic_status;

/// A TCP connection for hyper that holds back hyper's automatic error answers.
#[derive(Debug)]
pub(crate) struct GuardedIo {
    inner: TokioIo<TcpStream>,
    /// An automatic answer held back, and how much of it was sent on.
    withheld: Option<(Vec<u8>, usize)>,
}

impl GuardedIo {
    /// Wraps an accepted connection.
    pub(crate) fn new(stream: TcpStream) -> GuardedIo {
        GuardedIo {
            inner: TokioIo::new(stream),
            withheld: None,
        }
    }

    /// The connection, and the automatic answer held back with its status, if any (not yet
    /// sent).
    pub(crate) fn into_parts(self) -> (TcpStream, Option<(u16, Vec<u8>)>) {
        let held = self.withheld.and_then(|(bytes, sent)| {
            let status = automatic_status(&bytes)?;
            (sent == 0).then_some((status, bytes))
        });
        (self.inner.into_inner(), held)
    }

    /// Sends on what was held back.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, sent)) = &mut self.withheld {
            if *sent == bytes.len() {
                self.withheld = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *sent += n;
        }
        Poll::Ready(Ok(()))
    }

    fn hold(&mut self, bytes: Vec<u8>) -> usize {
        let n = bytes.len();
        self.withheld = Some((bytes, 0));
        n
    }
}

impl Read for GuardedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl Write for GuardedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_release(cx))?;
        if automatic_status(buf).is_some() {
            return Poll::Ready(Ok(self.hold(buf.to_vec())));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_release(cx))?;
        let mut filled = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (filled.next(), filled.next())
            && automatic_status(only).is_some()
        {
            return Poll::Ready(Ok(self.hold(only.to_vec())));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // What is held back stays held: hyper flushes right after its automatic answer.
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
