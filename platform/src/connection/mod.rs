//! Serving HTTP/1.1 connections the way a server open to any client must: bounded in number,
//! in time and in size, and answering every refusal in the platform's error shape.
//!
//! - At most `max_connections` connections at once; further ones wait in the listen queue
//!   until one closes (a warning is logged when the cap is reached). The cap is lowered, with
//!   a warning, to what the process's limit of open files leaves room for
//!   ([`connection_cap`]), so that connections can never take every file descriptor.
//! - A request head must arrive within `header_read_timeout` (which also closes an idle
//!   keep-alive connection); a partly received head is answered 408. A request body that
//!   stalls for `body_read_timeout`, or arrives slower on average than `body_min_rate` bytes
//!   per second after that same time of grace (a byte now and then), is answered 408; one
//!   whose chunked framing is broken is answered 400.
//! - A malformed request line or header field is answered 400, a target longer than
//!   [`MAX_URI_BYTES`] 414, more than [`MAX_HEADERS`] fields or [`MAX_HEAD_BYTES`] 431, all in
//!   `{"error": {"message", "type", "code"}}` ([`io`] explains how hyper's own empty answers
//!   are replaced).
//! - An answer given before the request body was read (401, 404, 413, ...) keeps the
//!   connection only when the rest of the body is small and arrives at once (it is drained);
//!   otherwise the answer says `Connection: close`, so a client that reuses connections never
//!   sends its next request on a connection the server is closing.
//! - On shutdown, no new connection is accepted, idle ones close, and requests in flight
//!   finish.
//!
//! Modules: [`answers`] (the error answers), [`body`] (the guarded request body), [`io`]
//! (the socket as hyper sees it), [`service`] (one request).

pub(crate) mod answers;
pub(crate) mod body;
pub(crate) mod io;
pub(crate) mod service;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::TokioTimer;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use self::answers::Refusal;
use self::io::GuardedIo;
use self::service::RequestService;
use crate::api::router::Routes;
use crate::config::PlatformConfig;

/// Longest request target (path and query), in bytes; longer is 414 (the OpenAPI document
/// says so from the same constant).
pub(crate) const MAX_URI_BYTES: usize = contracts::validate::limits::HTTP_MAX_URI_BYTES;
/// Most header fields in a request; more is 431.
pub(crate) const MAX_HEADERS: usize = contracts::validate::limits::HTTP_MAX_HEADERS;
/// The most header fields hyper takes when not told a number: it parses them into a list on
/// the stack, left uninitialised. Told a number, it fills a list of that many on the heap
/// at every parse of a request head, so the number is told only when it differs.
const HYPER_DEFAULT_MAX_HEADERS: usize = 100;
/// Largest request head (request line and header fields), in bytes; larger is 431.
pub(crate) const MAX_HEAD_BYTES: usize = contracts::validate::limits::HTTP_MAX_HEAD_BYTES;
/// Largest rest of an unread request body that is drained to keep the connection.
pub(crate) const DRAIN_MAX_BYTES: u64 = 64 * 1024;
/// Longest wait for that rest to arrive.
pub(crate) const DRAIN_MAX_WAIT: Duration = Duration::from_secs(1);

/// File descriptors kept free for everything but client connections (SQLite's files, the
/// listener, the runtime, the clients of webhooks and of the key service).
pub(crate) const RESERVED_FILES: u64 = 64;

/// The connection cap to serve with: `configured`, lowered so that the connections leave
/// [`RESERVED_FILES`] of the process's `open_files` limit free (at least half of it when the
/// limit is small). `None` for the limit means unlimited or unknown: the configured cap.
pub(crate) fn connection_cap(configured: usize, open_files: Option<u64>) -> usize {
    let Some(open_files) = open_files else {
        return configured.max(1);
    };
    let room = open_files.saturating_sub(RESERVED_FILES.min(open_files / 2));
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    configured.min(room).max(1)
}

/// The limits of connections (from the platform's configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Longest time to receive a request head, and to keep an idle connection.
    pub(crate) header_read_timeout: Duration,
    /// Longest pause while receiving a request body.
    pub(crate) body_read_timeout: Duration,
    /// Least average rate of a request body, bytes per second, after `body_read_timeout` of
    /// grace (0: none).
    pub(crate) body_min_rate: u64,
    /// Most connections open at once.
    pub(crate) max_connections: usize,
}

impl From<&PlatformConfig> for Limits {
    fn from(config: &PlatformConfig) -> Self {
        Limits {
            header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
            body_read_timeout: Duration::from_millis(config.body_read_timeout_ms),
            body_min_rate: config.body_min_bytes_per_sec,
            max_connections: usize::try_from(config.max_connections).unwrap_or(usize::MAX),
        }
    }
}

/// Serves `routes` on `listener` until `shutdown` completes; then stops accepting, closes
/// idle connections, and waits for the requests in flight. Requests `intercept` observes
/// (fault rules, the request journal) go through it.
pub(crate) async fn serve(
    listener: TcpListener,
    routes: Routes,
    intercept: Option<Arc<crate::intercept::Intercept>>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let open_files = crate::process::open_file_limit();
    let max_connections = connection_cap(limits.max_connections, open_files);
    if max_connections < limits.max_connections {
        // Lowered: the limit is known.
        let open_files = open_files.unwrap_or_default();
        tracing::warn!(
            configured = limits.max_connections,
            max_connections,
            open_files,
            "the process may open only {open_files} files (ulimit -n): at most \
             {max_connections} connections at once instead of {}, keeping the rest for the \
             database and outgoing calls; raise `ulimit -n` to allow more",
            limits.max_connections,
        );
    }
    let permits = Arc::new(Semaphore::new(max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    // Each connection holds a sender; when all are gone, every connection has ended.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut full = false;
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        max_connections,
        header_read_timeout_ms = limits.header_read_timeout.as_millis() as u64,
        body_read_timeout_ms = limits.body_read_timeout.as_millis() as u64,
        body_min_bytes_per_sec = limits.body_min_rate,
        "serving HTTP/1.1"
    );
    loop {
        if permits.available_permits() == 0 && !full {
            full = true;
            tracing::warn!(
                max_connections,
                "every connection slot is taken; new connections wait until one closes"
            );
        }
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
        };
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
        };
        if permits.available_permits() > 0 {
            full = false;
        }
        let _ = stream.set_nodelay(true);
        let conn = Connection {
            routes: routes.clone(),
            intercept: intercept.clone(),
            limits,
            stop: stop_rx.clone(),
            _alive: alive_tx.clone(),
            _permit: permit,
        };
        tokio::spawn(conn.run(stream));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = alive_rx.recv().await;
}

/// An accept that failed: a connection reset before it was accepted is nothing; anything
/// else (out of file descriptors) is logged, and accepting pauses briefly so that the loop
/// does not spin.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; trying again in 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

struct Connection {
    routes: Routes,
    intercept: Option<Arc<crate::intercept::Intercept>>,
    limits: Limits,
    stop: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    async fn run(self, stream: TcpStream) {
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout)
            .max_header_size(MAX_HEAD_BYTES)
            .keep_alive(true);
        if MAX_HEADERS != HYPER_DEFAULT_MAX_HEADERS {
            builder.max_headers(MAX_HEADERS);
        }
        let service = RequestService::new(self.routes.clone(), self.intercept.clone(), self.limits);
        let mut conn = builder.serve_connection(GuardedIo::new(stream), service);
        let mut stopping = false;
        let mut stop_signal = std::pin::pin!(stopped(self.stop.clone()));
        let result = std::future::poll_fn(|cx| {
            if !stopping && stop_signal.as_mut().poll(cx).is_ready() {
                stopping = true;
                Pin::new(&mut conn).graceful_shutdown();
            }
            conn.poll_without_shutdown(cx)
        })
        .await;
        let parts = conn.into_parts();
        let (mut stream, held) = parts.io.into_parts();
        let last_words = match (&result, held) {
            // hyper refused a head it could not parse: the refusal in the platform's shape.
            (Err(e), Some((status, _))) if e.is_parse() || e.is_parse_too_large() => {
                Refusal::of_status(status)
                    .map(|r| match r {
                        // hyper counts the request line in the head's size: a head too large
                        // because of its target is a target too long.
                        Refusal::HeadersTooLarge if target_too_long(&parts.read_buf) => {
                            Refusal::UriTooLong
                        }
                        r => r,
                    })
                    .map(Refusal::raw)
            }
            // Not hyper's refusal after all: sent as it was.
            (_, Some((_, bytes))) => Some(bytes),
            // A head that began but did not finish in time.
            (Err(e), None) if e.is_timeout() && !parts.read_buf.is_empty() => Some(
                Refusal::HeadTimeout {
                    ms: self.limits.header_read_timeout.as_millis() as u64,
                }
                .raw(),
            ),
            _ => None,
        };
        let close = async {
            if let Some(bytes) = last_words {
                stream.write_all(&bytes).await?;
            }
            stream.shutdown().await?;
            // A lingering close: what the client still sends is read and dropped until it
            // closes too, so that the kernel does not answer it with a reset that could
            // destroy the answer before the client reads it.
            let mut sink = [0u8; 16 * 1024];
            let mut left = LINGER_MAX_BYTES;
            while left > 0 {
                match tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? {
                    0 => break,
                    n => left = left.saturating_sub(n),
                }
            }
            Ok::<(), std::io::Error>(())
        };
        // The client may be gone, or not reading: it gets what it takes in a second.
        let _ = tokio::time::timeout(LINGER, close).await;
    }
}

/// Longest a closing connection waits for the client to take the last answer and close.
const LINGER: Duration = Duration::from_secs(1);
/// Most bytes read and dropped while it waits.
const LINGER_MAX_BYTES: usize = 1024 * 1024;

/// Whether the request line at the start of `head` (unparsed bytes, perhaps cut short) has a
/// target longer than [`MAX_URI_BYTES`].
fn target_too_long(head: &[u8]) -> bool {
    let line = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(head, |end| &head[..end]);
    let mut parts = line.splitn(3, |b| *b == b' ');
    let _method = parts.next();
    parts.next().is_some_and(|t| t.len() > MAX_URI_BYTES)
}

/// Completes when the server stops (or is gone).
async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_room_for_the_processs_other_files() {
        assert_eq!(connection_cap(1024, None), 1024, "no known limit");
        assert_eq!(connection_cap(1024, Some(1_048_576)), 1024, "room enough");
        assert_eq!(connection_cap(1024, Some(1024)), 1024 - 64);
        assert_eq!(connection_cap(1024, Some(160)), 96);
        assert_eq!(connection_cap(1024, Some(100)), 50, "half of a small limit");
        assert_eq!(
            connection_cap(10, Some(160)),
            10,
            "the configured cap when lower"
        );
        assert_eq!(connection_cap(1024, Some(1)), 1, "never none");
        assert_eq!(connection_cap(0, None), 1);
    }

    #[test]
    fn a_long_target_is_found_in_a_head_cut_short() {
        let long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n", "a".repeat(MAX_URI_BYTES));
        assert!(target_too_long(long.as_bytes()));
        assert!(target_too_long(&long.as_bytes()[..MAX_URI_BYTES + 10]));
        let short = format!("GET /a HTTP/1.1\r\nX-Big: {}\r\n", "v".repeat(70_000));
        assert!(!target_too_long(short.as_bytes()));
        assert!(!target_too_long(b""));
    }
}
