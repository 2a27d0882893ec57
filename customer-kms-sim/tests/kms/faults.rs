//! Every fault kind, observed by a real HTTP client; triggers and scopes.

use std::time::Duration;

use contracts::clock::Stopwatch;
use contracts::wire::byok::EndpointScope;
use customer_kms_sim::{FaultKind, FaultSpec, FaultTrigger};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

fn fault(kind: FaultKind) -> FaultSpec {
    FaultSpec::new(kind)
}

async fn decrypt(app: &TestApp) -> Reply {
    read(app.decrypt_request(API_KEY, ALIAS_A, &app.wrapped(ALIAS_A))).await
}

#[tokio::test]
async fn service_unavailable_for_the_next_n_calls() {
    let app = spawn_app().await;
    app.svc
        .add_fault(
            fault(FaultKind::ServiceUnavailable)
                .on(EndpointScope::DecryptKey)
                .when(FaultTrigger::Next(2)),
        )
        .unwrap();
    for _ in 0..2 {
        let r = decrypt(&app).await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        insta::assert_json_snapshot!("fault_service_unavailable", r.json());
    }
    assert_eq!(decrypt(&app).await.status, StatusCode::OK);
    let f = &app.svc.faults().list()[0];
    assert_eq!((f.fired, f.remaining), (2, Some(0)));
}

#[tokio::test]
async fn rate_limited_carries_retry_after() {
    let app = spawn_app().await;
    app.svc
        .add_fault(
            fault(FaultKind::RateLimited {
                retry_after_secs: 7,
            })
            .when(FaultTrigger::Next(1)),
        )
        .unwrap();
    let r = decrypt(&app).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.header("retry-after"), Some("7"));
    insta::assert_json_snapshot!("fault_rate_limited", r.json());
    assert_eq!(decrypt(&app).await.status, StatusCode::OK);
}

#[tokio::test]
async fn internal_error() {
    let app = spawn_app().await;
    app.svc.add_fault(fault(FaultKind::InternalError)).unwrap();
    let r = decrypt(&app).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    insta::assert_json_snapshot!("fault_internal_error", r.json());
}

#[tokio::test]
async fn latency_is_real_wall_time_even_on_a_simulated_clock() {
    let app = spawn_app().await;
    let before = app.svc.now();
    app.svc
        .add_fault(
            fault(FaultKind::Latency {
                ms: 300,
                jitter_ms: 0,
            })
            .when(FaultTrigger::Next(1)),
        )
        .unwrap();
    let sw = Stopwatch::start();
    let r = decrypt(&app).await;
    assert_eq!(r.status, StatusCode::OK, "latency delays, then answers");
    assert!(
        sw.elapsed() >= Duration::from_millis(300),
        "{:?}",
        sw.elapsed()
    );
    let reported: f64 = r.header("x-request-duration").unwrap().parse().unwrap();
    assert!(reported >= 300.0, "{reported}");
    assert_eq!(app.svc.now(), before, "the simulated clock did not move");
    // Only the next call: the fault fired once and is spent (counted, not timed, so that a
    // loaded machine cannot fail this).
    assert_eq!(decrypt(&app).await.status, StatusCode::OK);
    let f = &app.svc.faults().list()[0];
    assert_eq!((f.fired, f.remaining), (1, Some(0)), "only the next call");
}

#[tokio::test]
async fn latency_with_jitter_delays_every_call_it_fires_on() {
    let app = spawn_app().await;
    app.svc
        .add_fault(
            fault(FaultKind::Latency {
                ms: 50,
                jitter_ms: 100,
            })
            .when(FaultTrigger::Next(5)),
        )
        .unwrap();
    for _ in 0..5 {
        let sw = Stopwatch::start();
        assert_eq!(decrypt(&app).await.status, StatusCode::OK);
        let ms = sw.elapsed().as_millis();
        assert!(ms >= 50, "{ms}");
    }
    // The drawn delays stay within ms..=ms + jitter_ms: a unit test of the fault engine
    // checks that on the draws themselves (a wall-clock upper bound would fail on a loaded
    // machine).
    let f = &app.svc.faults().list()[0];
    assert_eq!((f.fired, f.remaining), (5, Some(0)));
}

#[tokio::test]
async fn hang_until_the_client_gives_up() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::Hang).on(EndpointScope::DecryptKey))
        .unwrap();
    let sw = Stopwatch::start();
    let err = app
        .decrypt_request(API_KEY, ALIAS_A, &app.wrapped(ALIAS_A))
        .timeout(Duration::from_millis(300))
        .send()
        .await
        .expect_err("no answer");
    assert!(err.is_timeout(), "{err:?}");
    assert!(sw.elapsed() >= Duration::from_millis(300));

    // The call is in the audit log once the client has gone (waited for with a generous
    // deadline: it normally takes milliseconds).
    let watch = Stopwatch::start();
    while app.svc.audit().count(|e| e.outcome == "NO_RESPONSE") != 1 {
        assert!(
            watch.elapsed() < Duration::from_secs(30),
            "audit: {:?}",
            app.svc.audit().entries()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Other endpoints are not held.
    assert_eq!(
        read(app.auth_request(CLIENT, SECRET_1)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_reset_lets_held_requests_go() {
    let app = spawn_app().await;
    app.svc.add_fault(fault(FaultKind::Hang)).unwrap();
    let req = app.decrypt_request(API_KEY, ALIAS_A, &app.wrapped(ALIAS_A));
    let pending = tokio::spawn(async move { read(req).await });
    // Held once the fault fired on it (waited for, not slept on).
    let watch = Stopwatch::start();
    while app.svc.faults().list()[0].fired == 0 {
        assert!(watch.elapsed() < Duration::from_secs(30), "never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!pending.is_finished(), "held");
    let r = read(app.admin(Method::POST, "/reset")).await;
    assert_eq!(r.status, StatusCode::OK);
    let held = tokio::time::timeout(Duration::from_secs(30), pending)
        .await
        .expect("released")
        .unwrap();
    assert_eq!(held.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        decrypt(&app).await.status,
        StatusCode::OK,
        "the fault is gone"
    );
}

#[tokio::test]
async fn hang_ends_after_max_hang_secs() {
    let mut config = test_config();
    config.max_hang_secs = 1;
    let app = spawn_app_with(config).await;
    app.svc.add_fault(fault(FaultKind::Hang)).unwrap();
    let sw = Stopwatch::start();
    let r = decrypt(&app).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(sw.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn malformed_json_body() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::MalformedJson).when(FaultTrigger::Next(1)))
        .unwrap();
    let r = decrypt(&app).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(
        serde_json::from_str::<serde_json::Value>(&r.body).is_err(),
        "{}",
        r.body
    );
    assert!(
        r.body.starts_with("{\"data\":"),
        "the real body, cut: {}",
        r.body
    );
    decrypt(&app).await.json();
}

#[tokio::test]
async fn wrong_content_type() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::WrongContentType).on(EndpointScope::Auth))
        .unwrap();
    let r = read(app.auth_request(CLIENT, SECRET_1)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(
        r.json()["data"]["access_token"].is_string(),
        "body unchanged"
    );
    let d = decrypt(&app).await;
    assert_eq!(
        d.header("content-type"),
        Some("application/json"),
        "scoped to auth"
    );
}

#[tokio::test]
async fn wrong_plaintext_flips_exactly_one_bit() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::WrongPlaintext).when(FaultTrigger::Next(3)))
        .unwrap();
    for _ in 0..3 {
        let r = decrypt(&app).await;
        assert_eq!(r.status, StatusCode::OK);
        let got = unb64(r.json()["data"]["plaintext_key"].as_str().unwrap());
        assert_eq!(got.len(), 32);
        let diff: u32 = got
            .iter()
            .zip(DATA_KEY)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(diff, 1);
    }
    let r = decrypt(&app).await;
    assert_eq!(
        unb64(r.json()["data"]["plaintext_key"].as_str().unwrap()),
        DATA_KEY
    );
}

#[tokio::test]
async fn wrong_plaintext_on_rotate_key_breaks_the_pair() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::WrongPlaintext).on(EndpointScope::RotateKey))
        .unwrap();
    let r = read(app.rotate_request(API_KEY, Some(ALIAS_A))).await;
    let dek = unb64(r.json()["data"]["plaintext_dek"].as_str().unwrap());
    let real = app
        .svc
        .keys()
        .open_text(ALIAS_A, r.json()["data"]["encrypted_dek"].as_str().unwrap())
        .unwrap();
    assert_ne!(dek, real.to_vec());
    assert_eq!(
        dek.iter()
            .zip(real.iter())
            .map(|(a, b)| (a ^ b).count_ones())
            .sum::<u32>(),
        1
    );
}

#[tokio::test]
async fn truncated_key() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::TruncatedKey { len: 16 }).on(EndpointScope::DecryptKey))
        .unwrap();
    let r = decrypt(&app).await;
    assert_eq!(r.status, StatusCode::OK);
    let got = unb64(r.json()["data"]["plaintext_key"].as_str().unwrap());
    assert_eq!(got, DATA_KEY[..16]);
}

#[tokio::test]
async fn probability_is_seeded_and_gives_roughly_its_share() {
    async fn statuses() -> Vec<u16> {
        let app = spawn_app().await;
        app.svc
            .add_fault(
                fault(FaultKind::ServiceUnavailable)
                    .on(EndpointScope::DecryptKey)
                    .when(FaultTrigger::Probability(0.3)),
            )
            .unwrap();
        let text = app.wrapped(ALIAS_A);
        let mut out = Vec::new();
        for _ in 0..300 {
            out.push(
                read(app.decrypt_request(API_KEY, ALIAS_A, &text))
                    .await
                    .status
                    .as_u16(),
            );
        }
        out
    }
    let a = statuses().await;
    let failed = a.iter().filter(|s| **s == 503).count();
    assert_eq!(failed + a.iter().filter(|s| **s == 200).count(), 300);
    assert!((60..=120).contains(&failed), "{failed} of 300 at p = 0.3");
    assert_eq!(a, statuses().await, "same seed, same sequence");
}

#[tokio::test]
async fn window_follows_the_simulated_clock() {
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::ServiceUnavailable).when(FaultTrigger::ForSecs(60)))
        .unwrap();
    assert_eq!(decrypt(&app).await.status, StatusCode::SERVICE_UNAVAILABLE);
    app.advance(59);
    assert_eq!(decrypt(&app).await.status, StatusCode::SERVICE_UNAVAILABLE);
    app.advance(1);
    assert_eq!(decrypt(&app).await.status, StatusCode::OK);
}

#[tokio::test]
async fn faults_set_over_the_admin_api() {
    let app = spawn_app().await;
    let r = read(app.admin(Method::POST, "/faults").json(&json!({
        "kind": {"rate_limited": {"retry_after_secs": 3}},
        "scope": "auth",
        "trigger": {"next": 1}
    })))
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    insta::assert_json_snapshot!("admin_fault_added", r.json());
    let auth = read(app.auth_request(CLIENT, SECRET_1)).await;
    assert_eq!(auth.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(auth.header("retry-after"), Some("3"));
    assert_eq!(
        read(app.auth_request(CLIENT, SECRET_1)).await.status,
        StatusCode::OK
    );

    let list = read(app.admin(Method::GET, "/faults")).await.json();
    assert_eq!(list["faults"][0]["fired"], 1);
    assert_eq!(list["faults"][0]["remaining"], 0);

    let bad = read(
        app.admin(Method::POST, "/faults")
            .json(&json!({"kind": "earthquake"})),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.code(), "INVALID_REQUEST");
    let bad = read(
        app.admin(Method::POST, "/faults")
            .json(&json!({"kind": "hang", "trigger": {"probability": 2.0}})),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    insta::assert_json_snapshot!("admin_fault_bad_probability", bad.json());
}

#[tokio::test]
async fn arrival_faults_come_before_authentication() {
    // A 503 from an overloaded service does not depend on who calls.
    let app = spawn_app().await;
    app.svc
        .add_fault(fault(FaultKind::ServiceUnavailable))
        .unwrap();
    let r = read(app.decrypt_request("not-a-token", ALIAS_A, "x")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
}
