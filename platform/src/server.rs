//! A whole platform (its state and its engine) and serving it on a listener the caller bound
//! (port 0 works), until a shutdown signal; requests in flight finish first. Connections are
//! served by [`crate::connection`] (limits, timeouts, refusals in the error shape).

use std::future::Future;
use std::sync::Arc;

use telephony_sim::TelephonySim;
use tokio::net::TcpListener;

use crate::app::App;
use crate::connection::Limits;
use crate::engine::Engine;
use crate::engine::driver::Driver;
use crate::webhooks::{WebhookClient, WebhookSettings};

/// A platform: its shared state and the engine that moves it in time.
#[derive(Clone, Debug)]
pub struct Platform {
    /// The shared state.
    pub app: App,
    /// The engine's driver.
    pub driver: Arc<Driver>,
}

/// How many of the latest dials the telephony journal of a configured platform keeps, so
/// that a long-running server's memory stays bounded. Nothing in the server reads the
/// journal (it is for library users and tests of the telephony), so it is kept short.
pub(crate) const TELEPHONY_JOURNAL_LIMIT: usize = 1_000;

impl Platform {
    /// A platform over `app` dialling through `telephony`, signing webhooks with
    /// `webhook_secret`.
    pub fn new(app: App, telephony: Arc<TelephonySim>, webhook_secret: Vec<u8>) -> Platform {
        let seed = app.ids.seed();
        let webhooks = WebhookClient::new(WebhookSettings::new(&app.config, webhook_secret));
        let engine = Arc::new(Engine::new(app.clone(), telephony, seed));
        let driver = Arc::new(Driver::new(engine, webhooks, app.sim.clone()));
        Platform { app, driver }
    }

    /// A platform as configured: the telephony seed and model and the webhook secret from
    /// the configuration (the secret is drawn from the ids when not set). The telephony
    /// journal keeps the latest [`TELEPHONY_JOURNAL_LIMIT`] dials.
    pub fn from_config(app: App) -> Result<Platform, String> {
        let seed = app.config.telephony.seed.unwrap_or_else(|| app.ids.seed());
        let telephony = match &app.config.telephony.model {
            Some(model) => {
                TelephonySim::with_model(seed, model.clone()).map_err(|e| e.to_string())?
            }
            None => TelephonySim::new(seed),
        };
        // A server runs for days: its dial journal keeps only the latest dials.
        telephony.set_journal_limit(Some(TELEPHONY_JOURNAL_LIMIT));
        // A drawn secret is a fixed function of the seed (its own stream), so a restart with
        // the same seed signs with the same secret and moves no id stream.
        let secret = match &app.config.webhook_secret {
            Some(s) => s.as_bytes().to_vec(),
            None => {
                let drawn = contracts::ids::IdGen::seeded_at(
                    app.ids.seed(),
                    contracts::ids::stream::SECRETS,
                    0,
                );
                format!("whsec_{}", hex::encode(drawn.bytes::<16>())).into_bytes()
            }
        };
        Ok(Platform::new(app, Arc::new(telephony), secret))
    }

    /// The webhook signing secret.
    pub fn webhook_secret(&self) -> &[u8] {
        &self.driver.webhook_settings().secret
    }

    /// Every route.
    pub(crate) fn routes(&self) -> crate::api::router::Routes {
        crate::api::router::Routes::new(&self.app, &self.driver)
    }
}

/// What runs beside the routes while a platform is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Whether the engine's own loop ([`Driver::run`]) runs: on the real clock it steps the
    /// engine at each due time, on a simulated clock it runs what the API makes due now.
    /// Off, nothing moves the engine but [`Driver::advance`] and [`Driver::run_until`]
    /// (and the simulation API, which calls them): a caller that drives the engine itself,
    /// such as a scenario runner, turns it off so that every step happens at its command.
    pub engine_loop: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions { engine_loop: true }
    }
}

/// Serves every route on `listener` until `shutdown` completes, then waits for the requests
/// in flight. The cohort worker (resuming cohorts an earlier run left `processing`), the
/// engine and the purge of expired data keys run alongside and stop after the last request.
pub async fn serve(
    platform: Platform,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    serve_with(platform, listener, shutdown, ServeOptions::default()).await;
}

/// [`serve`], choosing with `options` what runs beside the routes.
pub async fn serve_with(
    platform: Platform,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: ServeOptions,
) {
    let app = platform.app.clone();
    crate::ingest::start(&app);
    // Plaintext data keys leave memory when their lifetime ends, also in idle workspaces.
    let purge = tokio::spawn(
        app.keys
            .clone()
            .purge_periodically(std::time::Duration::from_secs(1)),
    );
    let (stop_engine, engine_stopped) = tokio::sync::oneshot::channel::<()>();
    let engine = options.engine_loop.then(|| {
        tokio::spawn(platform.driver.clone().run(async {
            let _ = engine_stopped.await;
        }))
    });
    let limits = Limits::from(&app.config);
    let intercept = std::sync::Arc::new(crate::intercept::Intercept::new(app.clone()));
    crate::connection::serve(
        listener,
        platform.routes(),
        Some(intercept),
        limits,
        shutdown,
    )
    .await;
    let _ = stop_engine.send(());
    if let Some(engine) = engine {
        let _ = engine.await;
    }
    app.cohorts.shutdown().await;
    purge.abort();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PlatformConfig;

    #[test]
    fn a_configured_platform_keeps_only_the_latest_dials_in_its_journal() {
        let config = PlatformConfig {
            database: ":memory:".into(),
            seed: Some(1),
            ..Default::default()
        };
        let app = App::builder(config).build().unwrap();
        let platform = Platform::from_config(app).unwrap();
        let telephony = platform.driver.engine().telephony();
        let at = contracts::clock::Clock::now(&contracts::clock::SystemClock);
        for i in 0..TELEPHONY_JOURNAL_LIMIT + 5 {
            telephony.dial(&telephony_sim::DialRequest {
                attempt_id: format!("a-{i}"),
                from: "+14155550100".into(),
                to: "+13125550123".into(),
                at,
                attempt_index: 0,
            });
        }
        let journal = telephony.journal();
        assert_eq!(journal.len(), TELEPHONY_JOURNAL_LIMIT);
        assert_eq!(
            journal[0].request.attempt_id, "a-5",
            "the oldest went first"
        );
    }
}
