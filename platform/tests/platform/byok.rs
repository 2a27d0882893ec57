//! BYOK: the platform against the customer's key service. customer-kms-sim runs in process
//! on 127.0.0.1:0 on the platform's own simulated clock; wiremock stand-ins check requests
//! byte for byte and answer what the simulator will not (a 401 that persists).
//!
//! Counts of calls come from the key service's audit log (or wiremock's journal), times from
//! the simulated clock.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Duration, Utc};
use contracts::clock::{Clock, SimClock, Stopwatch, format_instant};
use contracts::wire::byok::EndpointScope;
use customer_kms_sim::auth::CallerKind;
use customer_kms_sim::{
    AliasStatus, AuditEntry, Endpoint, FaultKind, FaultSpec, FaultTrigger, KmsConfig,
};
use platform::config::{ByokConfig, Secret};
use platform::store::WorkspaceRef;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::outbound::{contains, database_bytes};

const PARTNER: &str = "acme";
const CLIENT_ID: &str = "platform";
const CLIENT_SECRET: &str = "client-secret-9f3a71";
const STATIC_KEY: &str = "sk_test_static_5c1d88";
/// The data key the customer wrapped for the workspace.
const DATA_KEY: [u8; 32] = [0x5a; 32];

enum Method {
    ClientCredentials,
    StaticKey,
}

/// A customer key service in process, on the platform's clock.
struct Kms {
    svc: customer_kms_sim::KeyService,
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Kms {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

impl Kms {
    fn count(&self, endpoint: Endpoint) -> usize {
        self.svc.audit().count(|e| e.endpoint == endpoint)
    }

    fn entries(&self, endpoint: Endpoint) -> Vec<AuditEntry> {
        self.svc
            .audit()
            .entries()
            .into_iter()
            .filter(|e| e.endpoint == endpoint)
            .collect()
    }

    fn fault(&self, kind: FaultKind, scope: EndpointScope, trigger: FaultTrigger) {
        self.svc
            .add_fault(FaultSpec::new(kind).on(scope).when(trigger))
            .unwrap();
    }
}

fn kms_config() -> KmsConfig {
    KmsConfig::new(PARTNER)
        .with_seed(11)
        .with_client(CLIENT_ID, &[CLIENT_SECRET])
        .with_api_key("static", STATIC_KEY)
        .with_alias("tenant-a", 1)
        .with_alias("tenant-b", 1)
        .with_expires_in(3600)
}

/// The data key wrapped under `alias` as the customer's service would (same configuration
/// and seed, so the same master keys).
fn wrapped(alias: &str) -> String {
    let svc = customer_kms_sim::KeyService::new(kms_config(), SimClock::at(START).shared())
        .expect("kms configuration");
    svc.wrap_data_key(alias, &DATA_KEY).unwrap().0
}

fn byok_entry(base: &str, how: &Method, alias: &str, encrypted_key: String) -> ByokConfig {
    let (client_id, client_secret, api_key) = match how {
        Method::ClientCredentials => (
            Some(CLIENT_ID.to_string()),
            Some(Secret::new(CLIENT_SECRET)),
            None,
        ),
        Method::StaticKey => (None, None, Some(Secret::new(STATIC_KEY))),
    };
    ByokConfig {
        org_id: ORG.into(),
        workspace_id: WS.into(),
        customer_base_url: base.into(),
        partner: PARTNER.into(),
        client_id,
        client_secret,
        api_key,
        key_alias: alias.into(),
        encrypted_key,
        data_key_cache_secs: 300,
        request_timeout_ms: 5_000,
        rotation_period_secs: None,
    }
}

/// A platform whose workspace `ORG/WS` uses BYOK against an in-process key service on the
/// platform's simulated clock. `edit` adjusts the workspace's entry.
async fn byok_app(how: Method, edit: impl FnOnce(&mut ByokConfig)) -> (TestApp, Kms) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let mut entry = byok_entry(&base, &how, "tenant-a", wrapped("tenant-a"));
    edit(&mut entry);
    let t = spawn_with(move |mut c| {
        c.byok.push(entry);
        c
    })
    .await;
    let svc = customer_kms_sim::KeyService::new(kms_config(), t.clock.shared()).unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = rx.await;
    }));
    (
        t,
        Kms {
            svc,
            addr,
            stop: Some(tx),
        },
    )
}

/// A valid instant outbound call (it needs the workspace's key to seal the request).
fn outbound() -> Value {
    json!({
        "app_config": {
            "app_id": "app-1",
            "app_version": 2,
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550100"},
            "agent_variables": {"first_name": "Ada"}
        },
        "user_config": {"user_phone_number": "+919876543210"}
    })
}

async fn post_outbound(t: &TestApp, trace_id: Option<&str>) -> (StatusCode, Value) {
    let mut req = t
        .client
        .post(t.url(&outbounds_path()))
        .header("x-api-key", KEY)
        .json(&outbound());
    if let Some(id) = trace_id {
        req = req.header("x-trace-id", id);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn outbound_ok(t: &TestApp) {
    let (s, v) = post_outbound(t, None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

fn now(t: &TestApp) -> DateTime<Utc> {
    Clock::now(&t.clock)
}

/// Moves the simulated clock through the simulation API (the engine runs every step due).
async fn advance_to(t: &TestApp, to: &str) -> Value {
    let (s, v) = t.post("/sim/v1/clock/advance", &json!({"to": to})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

fn admin_path(rest: &str) -> String {
    format!("/admin/v1/orgs/{ORG}/workspaces/{WS}/data-keys{rest}")
}

fn is_uuid(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok()
}

// ----- exact requests (wiremock) -----

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

// ----- the simulated key service -----

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

// ----- campaigns through an outage -----

/// Users whose outcomes do not depend on when they are dialled (telephony-sim's magic
/// numbers): 00 connects, 01 is always busy, 09 is busy once then connects.
fn campaign_users() -> Vec<Value> {
    let mut users = Vec::new();
    for area in ["202", "212", "213", "312"] {
        for code in ["00", "01", "09"] {
            users.push(json!({"phone_number": format!("+1{area}55501{code}"), "user_identifier": format!("u-{area}-{code}")}));
        }
    }
    users
}

/// 24 attempts: 4 x 1 + 4 x 3 + 4 x 2.
const CAMPAIGN_ATTEMPTS: u64 = 24;

fn outage_campaign() -> Value {
    json!({
        "name": "Outage drill",
        "start_timestamp": "2026-03-02T13:00:00Z",
        "end_timestamp": "2026-03-03T13:00:00Z",
        "allowed_schedule": {
            "timezone": "UTC",
            "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
            "allowed_start_time": "06:00",
            "allowed_end_time": "22:00"
        },
        "app_config": {
            "app_id": "app-1",
            "app_version": 1,
            "attempts_per_second": 0.1,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550150"], "weight": 1}
            ],
            "retry_config": {"max_retries": 2, "retry_on": ["busy"], "threshold_seconds": 10, "retry_interval_minutes": 4}
        }
    })
}

async fn statistics(t: &TestApp, id: &str) -> Value {
    let (s, v) = t.get(&format!("{}/{id}", campaigns_path())).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["statistics"].clone()
}

/// Runs the drill campaign to 16:00; with `outage`, the key service answers 503 to
/// everything from 13:02 to 13:20 (service clock). Answers the final statistics.
async fn run_drill(outage: bool) -> Value {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let (s, v) = t.post(&campaigns_path(), &outage_campaign()).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let id = v["campaign_id"].as_str().unwrap().to_string();
    let (s, v) = t
        .post(
            &format!("{}/{id}/cohorts/stream", campaigns_path()),
            &json!({"name": "Drill", "users": campaign_users()}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["valid_records"], 12, "{v}");
    if outage {
        kms.fault(
            FaultKind::ServiceUnavailable,
            EndpointScope::All,
            FaultTrigger::Window {
                from: Some("2026-03-02T13:02:00Z".parse().unwrap()),
                until: "2026-03-02T13:20:00Z".parse().unwrap(),
            },
        );
    }
    // The key fetched for the first dials at 13:00 lives until 13:05.
    advance_to(&t, "2026-03-02T13:05:00Z").await;
    let before = statistics(&t, &id).await;
    let dialled_before = before["attempts_total"].as_u64().unwrap();
    assert!(
        dialled_before >= 5,
        "dials went on while the key was cached: {before}"
    );
    if outage {
        // During the outage an operation that needs the key is refused (and not kept).
        let (s, v) = post_outbound(&t, None).await;
        assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        advance_to(&t, "2026-03-02T13:19:59Z").await;
        let during = statistics(&t, &id).await;
        assert_eq!(
            during["attempts_total"], before["attempts_total"],
            "no attempt while the key service is out: {during}"
        );
        assert_eq!(during["users_done"], before["users_done"]);
        assert_eq!(during["users_unfinished"], 0);
        let refused = kms
            .entries(Endpoint::DecryptKey)
            .iter()
            .filter(|e| e.outcome == "SERVICE_UNAVAILABLE")
            .count();
        assert!(
            (3..=30).contains(&refused),
            "the engine retried with backoff, not in a loop: {refused} tries"
        );
    }
    advance_to(&t, "2026-03-02T16:00:00Z").await;
    let after = statistics(&t, &id).await;
    assert_eq!(after["users_total"], 12, "{after}");
    assert_eq!(after["users_done"], 12, "every user finished: {after}");
    assert_eq!(after["users_pending"], 0);
    assert_eq!(after["users_unfinished"], 0);
    assert_eq!(after["attempts_total"], CAMPAIGN_ATTEMPTS, "{after}");
    after
}

#[tokio::test]
async fn an_outage_mid_campaign_holds_the_dials_and_loses_nothing() {
    let calm = run_drill(false).await;
    let stormy = run_drill(true).await;
    for field in [
        "attempts_total",
        "attempts_by_outcome",
        "users_done",
        "users_total",
        "users_unfinished",
    ] {
        assert_eq!(calm[field], stormy[field], "{field}");
    }
}

// ----- rotation and data at rest -----

const TRANSFORMATION: &str = r#"{
    "phone_number": {"column_name": "phone", "country_code": "US"},
    "user_identifier": {"column_name": "id", "required": true},
    "app_variables": {"plan": {"column_name": "plan", "required": true}}
}"#;

fn deployment_cohorts(dep: &str) -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts")
}

async fn upload_and_wait(t: &TestApp, base: &str, name: &str, csv: &str) -> String {
    let form = Form::new()
        .text("name", name.to_string())
        .part(
            "cohort_file",
            Part::bytes(csv.as_bytes().to_vec())
                .file_name("users.csv")
                .mime_str("text/csv")
                .unwrap(),
        )
        .part(
            "cohort_transformation_file",
            Part::bytes(TRANSFORMATION.as_bytes().to_vec())
                .file_name("t.json")
                .mime_str("application/json")
                .unwrap(),
        );
    let resp = t
        .client
        .post(t.url(&format!("{base}/upload")))
        .header("x-api-key", KEY)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v: Value = resp.json().await.unwrap();
    let id = v["cohort_id"].as_str().unwrap().to_string();
    let watch = Stopwatch::start();
    loop {
        let (s, v) = t.get(&format!("{base}/{id}")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if v["status"] != "processing" {
            assert_eq!(v["status"], "completed", "{v}");
            return id;
        }
        assert!(watch.elapsed() < StdDuration::from_secs(60), "{v}");
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
}

async fn cohort_file(t: &TestApp, base: &str, id: &str) -> String {
    let resp = t
        .client
        .get(t.url(&format!("{base}/{id}/files?file_type=cohort")))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp.text().await.unwrap()
}

async fn inbound(t: &TestApp, caller: &str, dialled: &str) -> Value {
    let (s, v) = t
        .post(
            &format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/inbound-calls"),
            &json!({"caller": caller, "dialled": dialled}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// The data key ids of a cohort's stored users.
async fn sealed_with(t: &TestApp, cohort: &str) -> Vec<u32> {
    let id = cohort.to_string();
    let users = t
        .app
        .store
        .read(move |c| platform::store::cohorts::users_after(c, &id, 0, 100))
        .await
        .unwrap();
    users
        .iter()
        .map(|u| platform::keys::blob_key_id(&u.data).unwrap())
        .collect()
}

const DESK: &str = "+14155550190";
const CSV_A: &str = "phone,id,plan\n+12025550143,a1,gold\n+12025550144,a2,silver\n";
const CSV_B: &str = "phone,id,plan\n+13125550145,b1,bronze\n";

async fn desk(t: &TestApp) -> String {
    let (s, v) = t
        .post(
            &deployments_path(),
            &json!({
                "name": "Desk",
                "app_id": "app-1",
                "app_version": 1,
                "connection_configs": [{"connection_id": "conn-a", "phone_numbers": [DESK]}]
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["deployment_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn rotation_seals_new_data_under_the_new_key_and_old_data_stays_readable() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let dep = desk(&t).await;
    let base = deployment_cohorts(&dep);
    let a = upload_and_wait(&t, &base, "Before", CSV_A).await;

    let (s, rotated) = t.post(&admin_path("/rotate"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{rotated}");
    insta::assert_json_snapshot!("byok_rotate", rotated, {".key_id" => "[id]"});
    assert_eq!(kms.count(Endpoint::RotateKey), 1);
    let rotate_call = &kms.entries(Endpoint::RotateKey)[0];
    assert_eq!(rotate_call.key_alias.as_deref(), Some("tenant-a"));
    assert!(
        !rotated.to_string().contains("plaintext"),
        "no key material"
    );

    let b = upload_and_wait(&t, &base, "After", CSV_B).await;
    let (s, list) = t.get(&admin_path("")).await;
    assert_eq!(s, StatusCode::OK);
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{list}");
    let (old_id, new_id) = (
        items[0]["key_id"].as_u64().unwrap() as u32,
        items[1]["key_id"].as_u64().unwrap() as u32,
    );
    assert_eq!(items[0]["active"], false);
    assert_eq!(items[1]["active"], true);
    assert_eq!(rotated["key_id"], items[1]["key_id"]);
    assert!(
        items
            .iter()
            .all(|k| k["provider"] == "byok" && k["key_alias"] == "tenant-a")
    );
    assert_eq!(sealed_with(&t, &a).await, [old_id, old_id]);
    assert_eq!(
        sealed_with(&t, &b).await,
        [new_id],
        "new data under the new key"
    );

    // Both cohorts stay readable, also once every key has expired and is decrypted again.
    for round in 0..2 {
        assert_eq!(cohort_file(&t, &base, &a).await, CSV_A);
        assert_eq!(cohort_file(&t, &base, &b).await, CSV_B);
        let ann = inbound(&t, "+12025550143", DESK).await;
        assert_eq!(ann["cohort_id"], a.as_str(), "round {round}: {ann}");
        assert_eq!(ann["user_identifier"], "a1");
        assert_eq!(ann["agent_variables"]["plan"], "gold");
        let bo = inbound(&t, "+13125550145", DESK).await;
        assert_eq!(bo["cohort_id"], b.as_str(), "{bo}");
        assert_eq!(bo["agent_variables"]["plan"], "bronze");
        t.clock.advance(Duration::seconds(300)).unwrap();
    }
    let decrypts = kms.entries(Endpoint::DecryptKey);
    // Adoption, the check of the rotated key, then both keys after the expiry.
    assert_eq!(decrypts.len(), 4, "{decrypts:?}");
}

#[tokio::test]
async fn a_rotation_period_rotates_on_the_simulated_clock() {
    let (t, kms) = byok_app(Method::StaticKey, |e| e.rotation_period_secs = Some(3600)).await;
    outbound_ok(&t).await;
    t.clock.advance(Duration::seconds(3599)).unwrap();
    outbound_ok(&t).await;
    assert_eq!(kms.count(Endpoint::RotateKey), 0);
    t.clock.advance(Duration::seconds(1)).unwrap();
    outbound_ok(&t).await;
    assert_eq!(kms.count(Endpoint::RotateKey), 1);
    let (_, list) = t.get(&admin_path("")).await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["created_at"], format_instant(now(&t)));
    t.clock.advance(Duration::seconds(3600)).unwrap();
    outbound_ok(&t).await;
    assert_eq!(kms.count(Endpoint::RotateKey), 2);
}

#[tokio::test]
async fn no_plaintext_phone_number_reaches_the_database_files() {
    let (t, _kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let dep = desk(&t).await;
    let base = deployment_cohorts(&dep);
    upload_and_wait(&t, &base, "Numbers", CSV_A).await;
    let csv_b = "phone,id,plan\n(312) 555-0145,b1,bronze\n312.555.0146,b2,bronze\n";
    upload_and_wait(&t, &base, "National", csv_b).await;
    let bytes = database_bytes(&t);
    assert!(bytes.len() > 4096, "the database files were read");
    for needle in [
        "+12025550143",
        "2025550143",
        "+12025550144",
        "2025550144",
        "+13125550145",
        "3125550145",
        "(312) 555-0145",
        "312.555.0146",
        "3125550146",
        "silver",
        "bronze",
    ] {
        assert!(!contains(&bytes, needle), "{needle} on disk");
    }
    let key_b64 = STANDARD.encode(DATA_KEY);
    assert!(!contains(&bytes, &key_b64), "no plaintext data key on disk");
    assert!(
        !bytes.windows(DATA_KEY.len()).any(|w| w == DATA_KEY),
        "no raw data key on disk"
    );
}

// ----- secrets -----

/// Every text a secret could leak into must hold none: the client secret, static keys, the
/// data key (base64 or hex), a JWT (all start with the base64 of `{"`), Basic credentials.
fn assert_no_secret(text: &str, extra: &[&str]) {
    assert!(!text.is_empty());
    let basic = STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    let data_key_b64 = STANDARD.encode(DATA_KEY);
    let data_key_hex = hex::encode(DATA_KEY);
    for secret in [
        CLIENT_SECRET,
        STATIC_KEY,
        &data_key_b64,
        &data_key_hex,
        "eyJ",
        &basic,
    ]
    .iter()
    .chain(extra)
    {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
}

#[tokio::test]
async fn secrets_tokens_and_keys_never_reach_answers_the_audit_or_debug_output() {
    let mut seen = Vec::new();
    // Client credentials: a token, decrypts, a refused token, an outage, a rotation, a
    // wrong plaintext.
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    outbound_ok(&t).await;
    t.clock.advance(Duration::seconds(300)).unwrap();
    kms.svc.expire_all_tokens();
    outbound_ok(&t).await;
    kms.fault(
        FaultKind::ServiceUnavailable,
        EndpointScope::DecryptKey,
        FaultTrigger::Next(1),
    );
    t.clock.advance(Duration::seconds(300)).unwrap();
    seen.push(post_outbound(&t, None).await.1);
    seen.push(t.post(&admin_path("/rotate"), &json!({})).await.1);
    seen.push(t.get(&admin_path("")).await.1);
    kms.fault(
        FaultKind::WrongPlaintext,
        EndpointScope::DecryptKey,
        FaultTrigger::Next(1),
    );
    t.clock.advance(Duration::seconds(300)).unwrap();
    seen.push(post_outbound(&t, None).await.1);
    seen.push(serde_json::to_value(kms.svc.audit().entries()).unwrap());
    seen.push(json!(format!("{:?} {:?}", t.app.config, t.app.keys)));
    // Refusals: a wrong secret, a wrong static key.
    let (t2, _k2) = byok_app(Method::ClientCredentials, |e| {
        e.client_secret = Some(Secret::new("wrong-secret-77"))
    })
    .await;
    seen.push(post_outbound(&t2, None).await.1);
    seen.push(json!(format!("{:?}", t2.app.config)));
    let (t3, _k3) = byok_app(Method::StaticKey, |e| {
        e.api_key = Some(Secret::new("sk_test_wrong_1234"))
    })
    .await;
    seen.push(post_outbound(&t3, None).await.1);
    seen.push(json!(format!("{:?}", t3.app.config)));
    let text = serde_json::to_string(&seen).unwrap();
    assert!(text.contains("key_service_unavailable") && text.contains("key_service_refused"));
    assert_no_secret(&text, &["wrong-secret-77", "sk_test_wrong_1234"]);
}

/// Reads a child's pipe to the end on a thread.
fn drain(pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let mut pipe = pipe;
        let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
        s
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_takes_byok_from_flags_and_env_and_never_prints_or_logs_a_secret() {
    use std::io::BufRead;
    // The key service on the real clock. The platform runs on a simulated clock that starts
    // at the wall clock's time and is moved a few seconds, so the data key's one-second
    // lifetime ends exactly when the test moves it, whatever the machine's load (the key
    // service accepts request timestamps within 300 s of its own clock).
    let svc =
        customer_kms_sim::KeyService::new(kms_config(), contracts::clock::SystemClock::shared())
            .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let kms_url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = stopped.await;
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_platform"))
        .args(["serve", "--listen", "127.0.0.1:0", "--seed", "5"])
        .args(["--clock", "simulated"])
        .arg("--database")
        .arg(dir.path().join("p.db"))
        .args(["--api-key", &format!("{ORG}/{WS}={KEY}:alice")])
        .args(["--byok-workspace", &format!("{ORG}/{WS}")])
        .args(["--byok-base-url", &kms_url, "--byok-partner", PARTNER])
        .args(["--byok-key-alias", "tenant-a"])
        .args(["--byok-encrypted-key", &wrapped("tenant-a")])
        .args(["--byok-data-key-cache-secs", "1"])
        .env("PLATFORM_BYOK_CLIENT_ID", CLIENT_ID)
        .env("PLATFORM_BYOK_CLIENT_SECRET", CLIENT_SECRET)
        .env("RUST_LOG", "platform=debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the platform binary starts");
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("platform listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    let stdout = drain(stdout);
    let client = reqwest::Client::new();
    let post = |path: String| {
        client
            .post(format!("{addr}{path}"))
            .header("x-api-key", KEY)
            .json(&outbound())
            .send()
    };
    let advance = |seconds: u64| {
        client
            .post(format!("{addr}/sim/v1/clock/advance"))
            .header("x-api-key", KEY)
            .json(&json!({ "seconds": seconds }))
            .send()
    };
    let ok = post(outbounds_path()).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK, "{}", ok.text().await.unwrap());
    // The data key lives a second: after it, a refused token is replaced (by the engine's
    // step or by the request, whichever needs the key first), then an outage.
    svc.expire_all_tokens();
    assert_eq!(advance(2).await.unwrap().status(), StatusCode::OK);
    let ok = post(outbounds_path()).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    // Every decrypt fails now, the engine's and the request's alike.
    svc.add_fault(
        FaultSpec::new(FaultKind::ServiceUnavailable)
            .on(EndpointScope::DecryptKey)
            .when(FaultTrigger::Always),
    )
    .unwrap();
    assert_eq!(advance(2).await.unwrap().status(), StatusCode::OK);
    let out = post(outbounds_path()).await.unwrap();
    assert_eq!(out.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = out.text().await.unwrap();
    svc.faults().clear();
    let rotated = post(admin_path("/rotate")).await.unwrap();
    assert_eq!(rotated.status(), StatusCode::OK);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = stop.send(());
    let printed = stdout.join().unwrap();
    let logged = stderr.join().unwrap();
    let byok_line = format!(
        "byok: {ORG}/{WS} -> {kms_url}/{PARTNER}/byok/v1 (alias tenant-a, client credentials of client 'platform', data keys cached 1 s)"
    );
    assert!(printed.contains(&byok_line), "{printed}");
    assert!(
        logged.contains("key service call"),
        "debug logs were on: {logged}"
    );
    assert!(
        logged.contains("token refused; fetching a new one"),
        "{logged}"
    );
    assert_eq!(
        svc.audit().count(|e| e.endpoint == Endpoint::Auth),
        2,
        "the client id and secret from the environment were used"
    );
    assert_no_secret(&format!("{first}{printed}\n{logged}\n{body}"), &[]);
}

#[tokio::test]
async fn a_platform_with_a_bad_byok_entry_does_not_start_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&dir.path().join("p.db"));
    let mut entry = byok_entry(
        "http://127.0.0.1:9",
        &Method::ClientCredentials,
        "tenant-a",
        "AAAA".into(),
    );
    entry.api_key = Some(Secret::new(STATIC_KEY));
    config.byok.push(entry);
    let err = platform::App::builder(config)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("byok for org-1/ws-1"), "{err}");
    assert!(err.contains("encrypted_key must be"), "{err}");
    assert!(err.contains("not both"), "{err}");
    assert!(
        !err.contains(STATIC_KEY) && !err.contains(CLIENT_SECRET),
        "{err}"
    );
}

#[tokio::test]
async fn other_workspaces_keep_the_local_key() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let path = outbounds_path().replace(
        &format!("/workspaces/{WS}/"),
        &format!("/workspaces/{WS2}/"),
    );
    let (s, v) = t
        .call(reqwest::Method::POST, &path, Some(KEY2), Some(&outbound()))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(kms.svc.audit().len(), 0, "ws-2 never calls the customer");
    let rows = t.app.keys.rows(&WorkspaceRef::new(ORG, WS2)).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].provider, "local");
}
