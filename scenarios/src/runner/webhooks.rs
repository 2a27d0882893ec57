//! The runner's webhook receiver: a server on 127.0.0.1 that takes every webhook the
//! platform sends to the scenario's campaigns and deployments, checks its signature with the
//! platform's secret, and keeps what the expectations and the report need.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use warp::Filter;

/// What the receiver got for one path (`campaigns/<key>` or `deployments`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Received {
    /// Events received.
    pub(crate) events: u64,
    /// Events whose signature did not verify.
    pub(crate) bad_signatures: u64,
    /// Events by `attempt_id` (campaign events).
    pub(crate) per_attempt: BTreeMap<String, u64>,
    /// Events by `completion_status` (campaign events), when the body has one.
    pub(crate) by_type: BTreeMap<String, u64>,
}

/// Everything received, by path.
pub(crate) type Inbox = Arc<Mutex<BTreeMap<String, Received>>>;

/// A running receiver.
pub(crate) struct Receiver {
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// What it got.
    pub(crate) inbox: Inbox,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// The signature settings the receiver checks against.
#[derive(Clone, Debug)]
pub(crate) struct Signing {
    /// The platform's secret.
    pub(crate) secret: Vec<u8>,
    /// The signature header's name.
    pub(crate) signature_header: String,
    /// The timestamp header's name.
    pub(crate) timestamp_header: String,
}

impl Receiver {
    /// Starts a receiver on a free port.
    pub(crate) async fn start(signing: Signing) -> Result<Receiver> {
        let inbox: Inbox = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the webhook receiver on 127.0.0.1")?;
        let base = format!("http://{}", listener.local_addr()?);
        let signing = Arc::new(signing);
        let store = inbox.clone();
        let route = warp::post()
            .and(warp::path::tail())
            .and(warp::header::headers_cloned())
            .and(warp::body::bytes())
            .map(
                move |tail: warp::path::Tail,
                      headers: warp::http::HeaderMap,
                      body: bytes::Bytes| {
                    record(&store, &signing, tail.as_str(), &headers, &body);
                    warp::reply()
                },
            );
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(
            warp::serve(route)
                .incoming(listener)
                .graceful(async {
                    let _ = rx.await;
                })
                .run(),
        );
        Ok(Receiver {
            base,
            inbox,
            stop: Some(tx),
            task: Some(task),
        })
    }

    /// What was received on `path`.
    pub(crate) fn received(&self, path: &str) -> Received {
        self.inbox
            .lock()
            .expect("the inbox lock is never poisoned")
            .get(path)
            .cloned()
            .unwrap_or_default()
    }

    /// Stops the server.
    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

fn record(
    inbox: &Inbox,
    signing: &Signing,
    path: &str,
    headers: &warp::http::HeaderMap,
    body: &[u8],
) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let valid = match (
        header(&signing.timestamp_header).and_then(|t| t.parse::<i64>().ok()),
        header(&signing.signature_header),
    ) {
        (Some(ts), Some(sig)) => platform::webhooks::verify(&signing.secret, ts, body, sig),
        _ => false,
    };
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let mut inbox = inbox.lock().expect("the inbox lock is never poisoned");
    let r = inbox.entry(path.to_string()).or_default();
    r.events += 1;
    if !valid {
        r.bad_signatures += 1;
    }
    if let Some(j) = &json {
        if let Some(a) = j.get("attempt_id").and_then(|v| v.as_str()) {
            *r.per_attempt.entry(a.to_string()).or_default() += 1;
        }
        if let Some(t) = j.get("completion_status").and_then(|v| v.as_str()) {
            *r.by_type.entry(t.to_string()).or_default() += 1;
        }
    }
}
