//! Logging of the `harness` and `customer-kms-sim` commands: standard error, filtered by
//! `RUST_LOG`, colour only on a terminal, without the noise of a connection cancelled by a
//! graceful shutdown.
//!
//! The warp servers of these commands (the webhook receivers of scenario runs, the key
//! service) stop gracefully; a connection accepted but not yet read from when that
//! happens is cancelled, which is no error of anyone's, yet the HTTP layer logs it at ERROR
//! (`server connection error: Custom { kind: Interrupted, error: "Cancelled" }`).
//! [`QuietCancelled`] drops that one event and lets every other through.

use std::io::IsTerminal;

use tracing::field::{Field, Visit};
use tracing::{Event, Metadata};
use tracing_subscriber::layer::{Context, Filter};
use tracing_subscriber::prelude::*;

/// Logs to standard error, filtered by `RUST_LOG` (else `default_filter`), with colour
/// only when standard error is a terminal.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_filter.into());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter)
        .with_filter(QuietCancelled);
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// A filter that drops the HTTP server's report of a connection cancelled by a graceful
/// shutdown, and nothing else.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QuietCancelled;

impl<S> Filter<S> for QuietCancelled {
    fn enabled(&self, _meta: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _cx: &Context<'_, S>) -> bool {
        if !event.metadata().target().starts_with("warp::server") {
            return true;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        !(message.0.contains("kind: Interrupted") && message.0.contains("\"Cancelled\""))
    }
}

/// The `message` field of an event, as text.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_cancelled_connection_is_not_logged_and_other_errors_are() {
        let buf = Buffer::default();
        let out = buf.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || out.clone())
                .with_ansi(false)
                .with_filter(QuietCancelled),
        );
        tracing::subscriber::with_default(subscriber, || {
            let cancelled = std::io::Error::new(std::io::ErrorKind::Interrupted, "Cancelled");
            // As the HTTP layer words it.
            tracing::error!(target: "warp::server::run", "server connection error: {:?}", cancelled);
            let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
            tracing::error!(target: "warp::server::run", "server connection error: {:?}", reset);
            tracing::error!(target: "harness", "Cancelled {:?}", cancelled);
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("ConnectionReset"), "{text}");
        assert!(lines[1].contains("harness"), "{text}");
    }
}
