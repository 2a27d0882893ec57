//! The one stop signal of every long-running command (`platform serve`,
//! `customer-kms-sim serve`, `harness up`): Ctrl-C (SIGINT) or SIGTERM.
//!
//! Behind the `shutdown` feature, so that clients of the contract do not pull in tokio.

use std::future::Future;

/// Completes at the first Ctrl-C (SIGINT) or SIGTERM.
///
/// The handlers are registered when this is called, not when the future is first polled: call
/// it before printing a banner or writing a ready file, so that a signal sent as soon as they
/// are read is not lost. Needs a tokio runtime with I/O enabled.
pub fn signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let int = signal(SignalKind::interrupt());
        let term = signal(SignalKind::terminate());
        async move {
            match (int, term) {
                (Ok(mut int), Ok(mut term)) => {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
