//! Against the simulated key service: one auth per token lifetime, the data key cache,
//! concurrency, refusals and outages, each reported clearly.

use super::*;

#[tokio::test]
async fn one_auth_serves_every_decrypt_until_the_token_expires_on_the_simulated_clock() {
    let (t, kms) = byok_app(Method::ClientCredentials, |e| e.data_key_cache_secs = 30).await;
    // A decrypt every 30 s (each cached key expires after 30 s) for 59 minutes.
    for i in 0..119 {
        if i > 0 {
            t.clock.advance(Duration::seconds(30)).unwrap();
        }
        outbound_ok(&t).await;
    }
    assert_eq!(kms.count(Endpoint::DecryptKey), 119);
    assert_eq!(kms.count(Endpoint::Auth), 1, "one token for 119 decrypts");
    // 3570 s: the token's 3600 s less the 30 s margin.
    t.clock.advance(Duration::seconds(30)).unwrap();
    outbound_ok(&t).await;
    let auths = kms.entries(Endpoint::Auth);
    assert_eq!(
        auths.len(),
        2,
        "a new token when the old one is about to expire"
    );
    assert_eq!(auths[1].time - auths[0].time, Duration::seconds(3570));
    assert!(
        kms.svc.audit().entries().iter().all(|e| e.outcome == "OK"),
        "never a refused token"
    );
}

#[tokio::test]
async fn the_data_key_lives_for_the_configured_lifetime_as_the_audit_log_shows() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let start = now(&t);
    // An operation that needs the key every minute for 30 minutes: a one-user cohort of a
    // deployment (which leaves the engine nothing to do, so only these ask for the key).
    let dep = desk(&t).await;
    let stream = format!("{}/stream", deployment_cohorts(&dep));
    for minute in 0..30 {
        if minute > 0 {
            t.clock.advance(Duration::minutes(1)).unwrap();
        }
        let (s, v) = t
            .post(
                &stream,
                &json!({"name": "Walk-ins", "users": [{"phone_number": "+14155550123"}]}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let times: Vec<i64> = kms
        .entries(Endpoint::DecryptKey)
        .iter()
        .map(|e| (e.time - start).num_seconds())
        .collect();
    assert_eq!(
        times,
        [0, 300, 600, 900, 1200, 1500],
        "one decrypt per 300 s"
    );
    // Idle: the server drops the key when its lifetime ends, without being asked.
    assert_eq!(t.app.keys.cached_key_count(), 1);
    t.clock.advance(Duration::seconds(240)).unwrap();
    let watch = Stopwatch::start();
    while t.app.keys.cached_key_count() > 0 {
        assert!(
            watch.elapsed() < StdDuration::from_secs(30),
            "the expired key is still in memory: {} keys",
            t.app.keys.cached_key_count()
        );
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_hundred_concurrent_requests_on_a_cold_cache_cause_one_decrypt() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let t = Arc::new(t);
    for round in 1..=2 {
        let tasks: Vec<_> = (0..100)
            .map(|_| {
                let t = t.clone();
                tokio::spawn(async move { post_outbound(&t, None).await })
            })
            .collect();
        for task in tasks {
            let (s, v) = task.await.unwrap();
            assert_eq!(s, StatusCode::OK, "{v}");
        }
        assert_eq!(kms.count(Endpoint::DecryptKey), round, "round {round}");
        assert_eq!(kms.count(Endpoint::Auth), 1);
        // The cache expires: the second round starts cold again.
        t.clock.advance(Duration::seconds(300)).unwrap();
    }
}

#[tokio::test]
async fn a_refused_token_is_replaced_once_and_the_call_retried() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    outbound_ok(&t).await;
    t.clock.advance(Duration::seconds(300)).unwrap();
    // Every token issued so far stops working at the key service.
    kms.svc.expire_all_tokens();
    outbound_ok(&t).await;
    let outcomes: Vec<String> = kms
        .svc
        .audit()
        .entries()
        .iter()
        .map(|e| format!("{} {}", e.endpoint.as_str(), e.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            "auth OK",
            "decrypt-key OK",
            "decrypt-key UNAUTHORIZED",
            "auth OK",
            "decrypt-key OK"
        ]
    );
}

#[tokio::test]
async fn a_static_api_key_never_calls_auth() {
    let (t, kms) = byok_app(Method::StaticKey, |_| {}).await;
    for _ in 0..3 {
        outbound_ok(&t).await;
        t.clock.advance(Duration::hours(2)).unwrap();
    }
    let (s, v) = t.post(&admin_path("/rotate"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(kms.count(Endpoint::Auth), 0);
    assert_eq!(kms.count(Endpoint::RotateKey), 1);
    let entries = kms.svc.audit().entries();
    assert!(
        entries
            .iter()
            .all(|e| e.caller_kind == Some(CallerKind::ApiKey) && e.outcome == "OK"),
        "{entries:?}"
    );
    // A static key the service does not know is refused at once: no token to refresh.
    let (t, kms) = byok_app(Method::StaticKey, |e| {
        e.api_key = Some(Secret::new("sk_test_wrong"));
    })
    .await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    insta::assert_json_snapshot!("byok_static_key_refused", v);
    assert_eq!(kms.count(Endpoint::DecryptKey), 1);
    assert_eq!(kms.count(Endpoint::Auth), 0);
}

#[tokio::test]
async fn an_alias_mismatch_and_other_refusals_are_reported_clearly() {
    // The key was wrapped under tenant-a; the workspace names tenant-b.
    let (t, kms) = byok_app(Method::ClientCredentials, |e| {
        e.key_alias = "tenant-b".into()
    })
    .await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    assert_eq!(v["error"]["code"], "key_service_refused");
    insta::assert_json_snapshot!("byok_alias_mismatch", v);
    assert_eq!(
        kms.count(Endpoint::DecryptKey),
        1,
        "a refusal is not retried"
    );

    let (t, _kms) = byok_app(Method::ClientCredentials, |e| {
        e.key_alias = "tenant-x".into()
    })
    .await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    insta::assert_json_snapshot!("byok_unknown_alias", v);

    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    outbound_ok(&t).await;
    kms.svc
        .keys()
        .set_status("tenant-a", AliasStatus::Disabled)
        .unwrap();
    t.clock.advance(Duration::seconds(300)).unwrap();
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    insta::assert_json_snapshot!("byok_alias_disabled", v);

    let (t, _kms) = byok_app(Method::ClientCredentials, |e| {
        e.client_secret = Some(Secret::new("not-the-secret"));
    })
    .await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    insta::assert_json_snapshot!("byok_bad_client_secret", v);

    let (t, _kms) = byok_app(Method::ClientCredentials, |e| e.partner = "other".into()).await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no such endpoint")
            && message.contains("check customer_base_url and partner"),
        "{message}"
    );
}

#[tokio::test]
async fn every_kind_of_outage_answers_503_while_the_key_is_not_cached_and_work_resumes_after() {
    // A timeout long enough that a loaded machine never meets it but for the hang.
    let (t, kms) = byok_app(Method::ClientCredentials, |e| e.request_timeout_ms = 2000).await;
    outbound_ok(&t).await;
    let d = EndpointScope::DecryptKey;
    let cases: Vec<(FaultKind, &str)> = vec![
        (
            FaultKind::ServiceUnavailable,
            "decrypt-key answered 503 SERVICE_UNAVAILABLE (\"the key service is unavailable\")",
        ),
        (
            FaultKind::InternalError,
            "decrypt-key answered 500 INTERNAL_ERROR",
        ),
        (
            FaultKind::RateLimited {
                retry_after_secs: 2,
            },
            "rate limited, retry after 2 s",
        ),
        (FaultKind::Hang, "no answer within 2000 ms"),
        (FaultKind::MalformedJson, "with a body that is not JSON"),
        (
            FaultKind::WrongContentType,
            "with content type 'text/html; charset=utf-8', not JSON",
        ),
        (
            FaultKind::TruncatedKey { len: 16 },
            "a plaintext_key that is 16 bytes, not 32",
        ),
        (
            FaultKind::WrongPlaintext,
            "is not the one this workspace's data is sealed with (its check value differs)",
        ),
    ];
    for (kind, expected) in cases {
        // While the key is cached, a fault changes nothing.
        kms.fault(kind.clone(), d, FaultTrigger::Next(1));
        outbound_ok(&t).await;
        // Once it expires, the fault answers the next call: 503, nothing accepted.
        t.clock.advance(Duration::seconds(300)).unwrap();
        let (s, v) = post_outbound(&t, None).await;
        assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{kind:?}: {v}");
        assert_eq!(v["error"]["code"], "key_service_unavailable");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{kind:?}: {message}");
        kms.svc.release_hangs();
        // The fault is spent: the next request decrypts again and goes through.
        outbound_ok(&t).await;
    }
    // The service goes away altogether: once it refuses connections (waited for).
    let addr = kms.addr;
    drop(kms);
    let watch = Stopwatch::start();
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(
            watch.elapsed() < StdDuration::from_secs(30),
            "still listening"
        );
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    t.clock.advance(Duration::seconds(300)).unwrap();
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not connect"), "{message}");
}

#[tokio::test]
async fn the_503_of_an_unavailable_key_service_is_in_the_platform_error_shape() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    kms.fault(
        FaultKind::ServiceUnavailable,
        EndpointScope::All,
        FaultTrigger::Always,
    );
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    insta::assert_json_snapshot!("byok_503", v);
    let (s, v) = t.post(&admin_path("/rotate"), &json!({})).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let (s, v) = t.get(&admin_path("")).await;
    assert_eq!(s, StatusCode::OK, "listing needs no key service: {v}");
    assert_eq!(v["items"], json!([]), "nothing adopted while out");
}
