//! The reference platforms of the oracle: this project's own platform, in process on a free
//! local port, with the target's workspaces and keys, on a clock held at the target's time
//! (a simulated clock set to the target's when the target's is simulated: the suite's moves
//! of the target's clock are sent to it too; else the real clock), and a sink for the
//! webhooks it sends (the suite's webhook URLs are pointed there).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use contracts::clock::SimClock;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use serde_json::Value;
use tokio::sync::oneshot;
use warp::Filter;

use super::super::target::{Http, Workspace};

/// One reference platform.
pub(crate) struct Reference {
    /// Its HTTP side (no oracle of its own).
    pub(crate) http: Http,
    /// Where its webhooks go.
    pub(crate) sink: String,
    /// The events it sent, in arrival order.
    pub(crate) events: Arc<Mutex<Vec<Value>>>,
    stops: Vec<oneshot::Sender<()>>,
}

impl Drop for Reference {
    fn drop(&mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
    }
}

impl std::fmt::Debug for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reference")
            .field("base", &self.http.shown())
            .finish_non_exhaustive()
    }
}

/// Starts a reference with `seed`, the keys of `workspaces`, on a simulated clock at `at`
/// (else the real clock).
pub(crate) async fn start(
    seed: u64,
    workspaces: &[&Workspace],
    at: Option<DateTime<Utc>>,
    timeout: std::time::Duration,
) -> anyhow::Result<Reference> {
    let api_keys = workspaces
        .iter()
        .map(|w| {
            ApiKeyConfig::parse(&format!(
                "{}/{}={}:harness-reference",
                w.org, w.workspace, w.key
            ))
            .map_err(|e| anyhow::anyhow!("a workspace the reference cannot take: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let config = PlatformConfig {
        database: ":memory:".into(),
        api_keys,
        seed: Some(seed),
        webhook_secret: Some("whsec_harness_reference".into()),
        ..Default::default()
    };
    let mut builder = App::builder(config);
    if let Some(at) = at {
        builder = builder.sim_clock(SimClock::new(at));
    }
    let app = builder
        .build()
        .map_err(|e| anyhow::anyhow!("the reference platform: {e}"))?;
    let platform = platform::server::Platform::from_config(app)
        .map_err(|e| anyhow::anyhow!("the reference platform: {e}"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(platform::server::serve(platform, listener, async {
        let _ = stopped.await;
    }));

    let events = Arc::new(Mutex::new(Vec::new()));
    let store = events.clone();
    let sink = warp::post()
        .and(warp::path::full())
        .and(warp::body::bytes())
        .map(move |_: warp::path::FullPath, body: bytes::Bytes| {
            if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                store.lock().expect("not poisoned").push(v);
            }
            warp::reply()
        });
    let sink_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let sink_addr = sink_listener.local_addr()?;
    let (stop_sink, sink_stopped) = oneshot::channel::<()>();
    tokio::spawn(
        warp::serve(sink)
            .incoming(sink_listener)
            .graceful(async {
                let _ = sink_stopped.await;
            })
            .run(),
    );
    Ok(Reference {
        http: Http::new(&format!("http://{addr}"), timeout)?,
        sink: format!("http://{sink_addr}"),
        events,
        stops: vec![stop, stop_sink],
    })
}
