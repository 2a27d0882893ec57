//! A webhook receiver for the simulation checks: campaigns send their call events here, and
//! the checks judge the dials from them (when, from which number, which retry, what next).
//!
//! It listens on `--webhook-listen` (a free local port by default) and answers every POST to
//! `/events/{tag}` with 200, but the first delivery of each attempt to a tag starting
//! [`REFUSE_ONCE`], which it answers 500 (a receiver that fails once: the platform must try
//! again); events are kept once per `attempt_id` (deliveries are at least once), and every
//! delivery as it came ([`Delivery`]: its tag, its signing headers, its bytes, the status it
//! was answered).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use contracts::clock::Stopwatch;
use serde_json::Value;
use tokio::sync::oneshot;
use warp::Filter;

/// A running receiver.
#[derive(Debug)]
pub(crate) struct Receiver {
    events: Arc<Mutex<Vec<Value>>>,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    base: String,
    stop: Option<oneshot::Sender<()>>,
}

/// The start of a tag whose receiver answers the first delivery of each attempt with 500.
pub(crate) const REFUSE_ONCE: &str = "refuse-once";

/// One delivery as it came: its signing headers and the exact bytes of its body.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    /// The tag of the URL it came to.
    pub(crate) tag: String,
    /// The status it was answered.
    pub(crate) answered: u16,
    /// The `attempt_id` of its event, when it has one (read once, as it came).
    pub(crate) attempt: Option<String>,
    /// `x-webhook-timestamp`, when sent.
    pub(crate) timestamp: Option<String>,
    /// `x-webhook-signature`, when sent.
    pub(crate) signature: Option<String>,
    /// The body as received.
    pub(crate) body: bytes::Bytes,
}

impl Receiver {
    /// Listens on `listen`; the target is told `public` (or `http://{bound address}`).
    pub(crate) async fn start(listen: &str, public: Option<&str>) -> anyhow::Result<Receiver> {
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
            anyhow::anyhow!(
                "cannot listen for webhooks on {listen}: {e}; choose another --webhook-listen"
            )
        })?;
        let addr = listener.local_addr()?;
        let events = Arc::new(Mutex::new(Vec::new()));
        let deliveries: Arc<Mutex<Vec<Delivery>>> = Arc::new(Mutex::new(Vec::new()));
        let (store, kept) = (events.clone(), deliveries.clone());
        let route = warp::post()
            .and(warp::path!("events" / String))
            .and(warp::header::optional::<String>("x-webhook-timestamp"))
            .and(warp::header::optional::<String>("x-webhook-signature"))
            .and(warp::body::bytes())
            .map(
                move |tag: String,
                      timestamp: Option<String>,
                      signature: Option<String>,
                      body: bytes::Bytes| {
                    let event = serde_json::from_slice::<Value>(&body).ok();
                    let mut kept = kept.lock().expect("not poisoned");
                    // The first delivery of an attempt to a failing receiver is answered 500.
                    let attempt = event
                        .as_ref()
                        .and_then(|e| e["attempt_id"].as_str().map(str::to_string));
                    let refused = tag.starts_with(REFUSE_ONCE)
                        && !kept.iter().any(|d| d.tag == tag && d.attempt == attempt);
                    let answered = if refused { 500 } else { 200 };
                    if let Some(v) = event {
                        store.lock().expect("not poisoned").push(v);
                    }
                    kept.push(Delivery {
                        tag,
                        answered,
                        attempt,
                        timestamp,
                        signature,
                        body,
                    });
                    warp::reply::with_status(
                        warp::reply(),
                        warp::http::StatusCode::from_u16(answered).expect("a status"),
                    )
                },
            );
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(
            warp::serve(route)
                .incoming(listener)
                .graceful(async {
                    let _ = stopped.await;
                })
                .run(),
        );
        let base = match public {
            Some(p) => p.trim_end_matches('/').to_string(),
            None => format!("http://{addr}"),
        };
        Ok(Receiver {
            events,
            deliveries,
            base,
            stop: Some(stop),
        })
    }

    /// The URL a campaign tagged `tag` sends its events to.
    pub(crate) fn url(&self, tag: &str) -> String {
        format!("{}/events/{tag}", self.base)
    }

    /// The events of `campaign_id` received so far, one per attempt, in the order of
    /// `executed_at`.
    pub(crate) fn events(&self, campaign_id: &str) -> Vec<Value> {
        let all = self.events.lock().expect("not poisoned");
        let mut seen = std::collections::BTreeSet::new();
        let mut out: Vec<Value> = all
            .iter()
            .filter(|e| e["campaign_id"].as_str() == Some(campaign_id))
            .filter(|e| {
                let id = e["attempt_id"].as_str().unwrap_or_default().to_string();
                seen.insert(id)
            })
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            let t = |e: &Value| e["executed_at"].as_str().unwrap_or_default().to_string();
            t(a).cmp(&t(b))
        });
        out
    }

    /// Every delivery received, in arrival order.
    pub(crate) fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().expect("not poisoned").clone()
    }

    /// Every event received, as received.
    pub(crate) fn all(&self) -> Vec<Value> {
        self.events.lock().expect("not poisoned").clone()
    }

    /// Waits until an event of `attempt_id` came, or `timeout` passes; answers it.
    pub(crate) async fn wait_attempt(&self, attempt_id: &str, timeout: Duration) -> Option<Value> {
        let watch = Stopwatch::start();
        loop {
            let found = self
                .all()
                .into_iter()
                .find(|e| e["attempt_id"].as_str() == Some(attempt_id));
            if found.is_some() || watch.elapsed() >= timeout {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `n` deliveries of `attempt_id` came, or `timeout` passes; answers them, in
    /// arrival order.
    pub(crate) async fn wait_deliveries(
        &self,
        attempt_id: &str,
        n: usize,
        timeout: Duration,
    ) -> Vec<Delivery> {
        let watch = Stopwatch::start();
        loop {
            let got: Vec<Delivery> = self
                .deliveries()
                .into_iter()
                .filter(|d| d.attempt.as_deref() == Some(attempt_id))
                .collect();
            if got.len() >= n || watch.elapsed() >= timeout {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the events of `campaign_id` number `n` or more, or `timeout` passes;
    /// answers them.
    pub(crate) async fn wait(&self, campaign_id: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let watch = Stopwatch::start();
        loop {
            let got = self.events(campaign_id);
            if got.len() >= n || watch.elapsed() >= timeout {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
