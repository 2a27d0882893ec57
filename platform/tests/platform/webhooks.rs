//! Webhook delivery on a clock move: tries in parallel, so that slow receivers do not make
//! a move take one timeout per event.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use reqwest::StatusCode;
use serde_json::{Value, json};
use warp::Filter;

use crate::engine::{advance, magic};
use crate::helpers::*;

/// A receiver that answers nothing until `n` requests are in flight together, then answers
/// them all 200. When they are not all in flight within 30 s (tries one after the other),
/// it answers 503 from then on.
struct Gathering {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Gathering {
    async fn start(n: usize) -> Gathering {
        let (count, _) = tokio::sync::watch::channel(0usize);
        let count = Arc::new(count);
        let gave_up = Arc::new(AtomicBool::new(false));
        let route = warp::post()
            .and(warp::body::bytes())
            .then(move |_body: bytes::Bytes| {
                let count = count.clone();
                let gave_up = gave_up.clone();
                async move {
                    let mut seen = count.subscribe();
                    count.send_modify(|c| *c += 1);
                    let together = !gave_up.load(Ordering::SeqCst)
                        && tokio::time::timeout(
                            std::time::Duration::from_secs(30),
                            seen.wait_for(|c| *c >= n),
                        )
                        .await
                        .is_ok();
                    if !together {
                        gave_up.store(true, Ordering::SeqCst);
                    }
                    let status = if together {
                        warp::http::StatusCode::OK
                    } else {
                        warp::http::StatusCode::SERVICE_UNAVAILABLE
                    };
                    warp::reply::with_status(warp::reply(), status)
                }
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(
            warp::serve(route)
                .incoming(listener)
                .graceful(async {
                    let _ = rx.await;
                })
                .run(),
        );
        Gathering {
            base,
            stop: Some(tx),
        }
    }
}

impl Drop for Gathering {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test]
async fn the_events_due_at_one_move_are_tried_in_parallel() {
    const N: usize = 8;
    let hooks = Gathering::start(N).await;
    // A try may wait for the others longer than the default 10 s on a loaded machine.
    let app = spawn_with(|mut c| {
        c.webhook_timeout_ms = 60_000;
        c
    })
    .await;
    for i in 0..N {
        let (s, v) = app
            .post(
                &outbounds_path(),
                &json!({
                    "app_config": {"app_id": "a", "app_version": 1,
                                   "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
                    "user_config": {"user_phone_number": magic(300 + i as u32, 8)},
                    "webhook_config": {"url": format!("{}/hooks/{i}", hooks.base)}
                }),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    // Every call rings 5 s and talks 30 s: the eight events are due together at +35 s.
    let report = advance(&app, 35.0).await;
    assert_eq!(
        (&report["webhook_attempts"], &report["webhooks_delivered"]),
        (&json!(N), &json!(N)),
        "every event delivered at its first try, all in flight at once: {report}"
    );
    let (_, deliveries) = app
        .get(&format!(
            "/sim/v1/orgs/{ORG}/workspaces/{WS}/webhook-deliveries"
        ))
        .await;
    let items = deliveries["items"].as_array().unwrap();
    assert_eq!(items.len(), N);
    for d in items {
        assert_eq!(
            (&d["status"], &d["tries"], &d["last_status_code"]),
            (&json!("delivered"), &json!(1), &json!(200)),
            "{d}"
        );
        assert_eq!(d["delivered_at"], json!("2026-03-02T12:00:35.000Z"), "{d}");
    }
}

#[tokio::test]
async fn a_failed_try_in_a_parallel_round_is_retried_after_its_backoff() {
    // Half the receivers answer 500, half 200; the failures come back 1 s later.
    let ok = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(200))
        .mount(&ok)
        .await;
    let failing = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(500))
        .up_to_n_times(3)
        .mount(&failing)
        .await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(204))
        .mount(&failing)
        .await;
    let app = spawn_app().await;
    for i in 0..6u32 {
        let url = if i % 2 == 0 { ok.uri() } else { failing.uri() };
        let (s, v) = app
            .post(
                &outbounds_path(),
                &json!({
                    "app_config": {"app_id": "a", "app_version": 1,
                                   "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
                    "user_config": {"user_phone_number": magic(400 + i, 8)},
                    "webhook_config": {"url": format!("{url}/hooks")}
                }),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let first = advance(&app, 35.0).await;
    assert_eq!(
        (&first["webhook_attempts"], &first["webhooks_delivered"]),
        (&json!(6), &json!(3)),
        "{first}"
    );
    let deliveries = |v: &Value| -> Vec<(String, u64, String)> {
        let mut out: Vec<(String, u64, String)> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["status"].as_str().unwrap().to_string(),
                    d["tries"].as_u64().unwrap(),
                    d["next_try_at"].as_str().unwrap_or("-").to_string(),
                )
            })
            .collect();
        out.sort();
        out
    };
    let path = format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/webhook-deliveries");
    let (_, v) = app.get(&path).await;
    let delivered = ("delivered".to_string(), 1, "-".to_string());
    let waiting = (
        "pending".to_string(),
        1,
        "2026-03-02T12:00:36.000Z".to_string(),
    );
    assert_eq!(
        deliveries(&v),
        [
            delivered.clone(),
            delivered.clone(),
            delivered.clone(),
            waiting.clone(),
            waiting.clone(),
            waiting
        ]
    );
    // Not before the backoff has passed on the simulated clock.
    let early = advance(&app, 0.5).await;
    assert_eq!(early["webhook_attempts"], 0, "{early}");
    let second = advance(&app, 0.5).await;
    assert_eq!(
        (&second["webhook_attempts"], &second["webhooks_delivered"]),
        (&json!(3), &json!(3)),
        "{second}"
    );
    let (_, v) = app.get(&path).await;
    let retried = ("delivered".to_string(), 2, "-".to_string());
    assert_eq!(
        deliveries(&v),
        [
            delivered.clone(),
            delivered.clone(),
            delivered,
            retried.clone(),
            retried.clone(),
            retried
        ]
    );
}
