//! Exact requests, checked byte for byte by a wiremock stand-in: headers, credentials, trace
//! ids, the auth answer's fields, a 401 retried once.

use super::*;

fn token_answer(token: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(
        json!({"data": {"access_token": token, "token_type": "Bearer", "expires_in": 3600}}),
    )
}

fn key_answer() -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({"data": {"plaintext_key": STANDARD.encode(DATA_KEY)}}))
}

async fn wiremock_app(server: &MockServer, how: Method) -> TestApp {
    let entry = byok_entry(
        &server.uri(),
        &how,
        "tenant-a",
        "byok:v1:opaque-to-the-platform".into(),
    );
    spawn_with(move |mut c| {
        c.byok.push(entry);
        c
    })
    .await
}

fn header<'a>(r: &'a wiremock::Request, name: &str) -> &'a str {
    r.headers
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing on {}", r.url))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn every_call_carries_the_headers_credentials_and_body_of_the_interface() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/auth"))
        .respond_with(token_answer("token-1"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/decrypt-key"))
        .respond_with(key_answer())
        .mount(&server)
        .await;
    let t = wiremock_app(&server, Method::ClientCredentials).await;
    let trace = "3f0e2b4c-6a1d-4e8f-9b2a-7c5d1e0f4a3b";
    let (s, v) = post_outbound(&t, Some(trace)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let first_at = now(&t);
    t.clock.advance(Duration::seconds(300)).unwrap();
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let second_at = now(&t);

    let received = server.received_requests().await.unwrap();
    let of = |p: &str| -> Vec<&wiremock::Request> {
        received.iter().filter(|r| r.url.path() == p).collect()
    };
    let auth = of("/acme/byok/v1/auth");
    let decrypt = of("/acme/byok/v1/decrypt-key");
    assert_eq!(auth.len(), 1, "one token for both decrypts");
    assert_eq!(decrypt.len(), 2, "one decrypt per cache lifetime");

    let a = auth[0];
    assert_eq!(a.method.as_str(), "POST");
    assert_eq!(
        header(a, "authorization"),
        format!(
            "Basic {}",
            STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
        )
    );
    assert_eq!(
        header(a, "content-type"),
        "application/x-www-form-urlencoded"
    );
    assert_eq!(a.body, b"grant_type=client_credentials");
    assert_eq!(header(a, "x-trace-id"), trace, "the API request's trace id");

    for (r, at, expected_trace) in [
        (decrypt[0], first_at, Some(trace)),
        (decrypt[1], second_at, None),
    ] {
        assert_eq!(r.method.as_str(), "POST");
        assert_eq!(header(r, "authorization"), "Bearer token-1");
        assert_eq!(header(r, "content-type"), "application/json");
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            body,
            json!({"data": {"key_alias": "tenant-a", "encrypted_key": "byok:v1:opaque-to-the-platform"}})
        );
        let stamp = header(r, "x-request-timestamp");
        assert_eq!(
            DateTime::parse_from_rfc3339(stamp).unwrap().to_utc(),
            at,
            "RFC 3339 of the simulated clock: {stamp}"
        );
        assert_eq!(stamp, format_instant(at));
        let trace_sent = header(r, "x-trace-id");
        assert!(is_uuid(trace_sent), "{trace_sent}");
        match expected_trace {
            Some(id) => assert_eq!(trace_sent, id),
            None => assert_ne!(trace_sent, trace, "a fresh trace id without one"),
        }
    }
    assert_eq!(header(a, "x-request-timestamp"), format_instant(first_at));
    let ids: Vec<&str> = received.iter().map(|r| header(r, "x-request-id")).collect();
    assert!(ids.iter().all(|id| is_uuid(id)), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        ids.len(),
        "a fresh request id per call: {ids:?}"
    );
}

#[tokio::test]
async fn a_trace_id_that_is_not_a_uuid_is_replaced_by_a_fresh_one() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/decrypt-key"))
        .respond_with(key_answer())
        .mount(&server)
        .await;
    let t = wiremock_app(&server, Method::StaticKey).await;
    let (s, v) = post_outbound(&t, Some("trace-me-please")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1);
    let sent = header(&received[0], "x-trace-id");
    assert!(is_uuid(sent), "{sent}");
    assert_eq!(
        header(&received[0], "authorization"),
        format!("Bearer {STATIC_KEY}")
    );
}

#[tokio::test]
async fn an_auth_answer_with_expires_in_as_a_string_is_named_field_and_problem() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/auth"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"data": {"access_token": "token-x", "token_type": "Bearer", "expires_in": "3600"}}),
        ))
        .mount(&server)
        .await;
    let t = wiremock_app(&server, Method::ClientCredentials).await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "auth answered 200 with data.expires_in a string, not an integer of seconds (0 or more); the interface answers"
        ),
        "{message}"
    );
    assert!(
        !message.contains("3600") && !message.contains("token-x"),
        "{message}"
    );
}

#[tokio::test]
async fn a_401_fetches_one_new_token_and_retries_once_then_refuses_clearly() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/auth"))
        .respond_with(token_answer("token-x"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/decrypt-key"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"code": "UNAUTHORIZED", "message": "token not accepted"}}),
        ))
        .mount(&server)
        .await;
    let t = wiremock_app(&server, Method::ClientCredentials).await;
    let (s, v) = post_outbound(&t, None).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    insta::assert_json_snapshot!("byok_401_after_retry", v);
    let received = server.received_requests().await.unwrap();
    let paths: Vec<&str> = received.iter().map(|r| r.url.path()).collect();
    assert_eq!(
        paths,
        [
            "/acme/byok/v1/auth",
            "/acme/byok/v1/decrypt-key",
            "/acme/byok/v1/auth",
            "/acme/byok/v1/decrypt-key"
        ],
        "one refresh, one retry"
    );
}

#[tokio::test]
async fn answers_that_cannot_be_used_are_an_outage_not_a_refusal() {
    let server = MockServer::start().await;
    let t = wiremock_app(&server, Method::StaticKey).await;
    let cases: Vec<(ResponseTemplate, &str)> = vec![
        (
            ResponseTemplate::new(200)
                .set_body_raw(&b"{\"data\": {\"plaintext_key\": "[..], "application/json"),
            "decrypt-key answered 200 with a body that is not JSON",
        ),
        (
            ResponseTemplate::new(200).set_body_raw(
                serde_json::to_vec(&json!({"data": {"plaintext_key": STANDARD.encode(DATA_KEY)}}))
                    .unwrap(),
                "text/html",
            ),
            "decrypt-key answered 200 with content type 'text/html', not JSON",
        ),
        (
            ResponseTemplate::new(200).set_body_json(json!({"data": {"key": "x"}})),
            "decrypt-key answered 200 with no data.plaintext_key; the interface answers {\"data\": {\"plaintext_key\"}}",
        ),
        (
            ResponseTemplate::new(200).set_body_json(json!({"data": {"plaintext_key": 7}})),
            "decrypt-key answered 200 with data.plaintext_key a number, not a string",
        ),
        (
            ResponseTemplate::new(200).set_body_json(
                json!({"data": {"plaintext_key": base64::engine::general_purpose::URL_SAFE.encode([0xfbu8; 32])}}),
            ),
            "decrypt-key answered a plaintext_key that is URL-safe base64 (with - or _) where the interface uses standard base64 (+ and /); not used",
        ),
        (
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": {"plaintext_key": STANDARD.encode([1u8; 31])}})),
            "decrypt-key answered a plaintext_key that is 31 bytes, not 32; not used",
        ),
        (
            ResponseTemplate::new(200).set_body_json(json!({"data": {"plaintext_key": "%%%"}})),
            "decrypt-key answered a plaintext_key that is not base64; not used",
        ),
        (
            ResponseTemplate::new(502).set_body_string("<html>bad gateway</html>"),
            "decrypt-key answered 502 without an error code",
        ),
        (
            ResponseTemplate::new(429)
                .insert_header("retry-after", "7")
                .set_body_json(json!({"error": {"code": "RATE_LIMITED", "message": "slow down"}})),
            "decrypt-key answered 429 RATE_LIMITED (\"slow down\"): rate limited, retry after 7 s",
        ),
    ];
    for (answer, expected) in cases {
        server.reset().await;
        Mock::given(method("POST"))
            .and(path("/acme/byok/v1/decrypt-key"))
            .respond_with(answer)
            .mount(&server)
            .await;
        let (s, v) = post_outbound(&t, None).await;
        assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{expected}: {v}");
        assert_eq!(v["error"]["code"], "key_service_unavailable");
        assert_eq!(v["error"]["type"], "key_service_error");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message}\nlacks {expected}");
        assert!(!message.contains(&STANDARD.encode([1u8; 31])));
    }
    // Nothing was accepted while the key service misbehaved.
    let n: i64 = t
        .app
        .store
        .read(|c| {
            Ok::<_, platform::store::StoreError>(c.query_row(
                "SELECT COUNT(*) FROM attempts",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(n, 0);
    server.reset().await;
    Mock::given(method("POST"))
        .and(path("/acme/byok/v1/decrypt-key"))
        .respond_with(key_answer())
        .mount(&server)
        .await;
    outbound_ok(&t).await;
}

#[tokio::test]
async fn token_type_is_compared_without_regard_to_case_as_rfc_6749_says() {
    for (token_type, accepted) in [("bearer", true), ("BEARER", true), ("mac", false)] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/acme/byok/v1/auth"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": {
                "access_token": "token-1", "token_type": token_type, "expires_in": 3600}})))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/acme/byok/v1/decrypt-key"))
            .respond_with(key_answer())
            .mount(&server)
            .await;
        let t = wiremock_app(&server, Method::ClientCredentials).await;
        let (s, v) = post_outbound(&t, None).await;
        if accepted {
            assert_eq!(s, StatusCode::OK, "{token_type}: {v}");
        } else {
            assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{token_type}: {v}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains("token_type 'mac'"), "{message}");
        }
    }
}
