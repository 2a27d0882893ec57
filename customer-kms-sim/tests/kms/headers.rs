//! Request and answer headers: X-Request-Id, X-Trace-Id, X-Request-Duration on every answer.

use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID};
use reqwest::{Method, StatusCode};

use crate::helpers::*;

const TRACE: &str = "5f0c9d3e-1b2a-4c3d-8e4f-a0b1c2d3e4f5";

fn duration_ms(r: &Reply) -> f64 {
    let v = r.header("x-request-duration").expect("X-Request-Duration");
    let ms: f64 = v
        .parse()
        .unwrap_or_else(|_| panic!("not milliseconds: {v:?}"));
    assert!((0.0..10_000.0).contains(&ms), "{ms}");
    assert_eq!(
        v.split('.').nth(1).map(str::len),
        Some(3),
        "three decimals: {v}"
    );
    ms
}

#[tokio::test]
async fn request_and_trace_ids_are_echoed_on_success_and_error() {
    let app = spawn_app().await;
    let id = request_uuid(4242);
    let ok = read(
        app.bare(Method::POST, "auth")
            .header(HEADER_REQUEST_ID, &id)
            .header(HEADER_REQUEST_TIMESTAMP, app.timestamp())
            .header(HEADER_TRACE_ID, TRACE)
            .basic_auth(CLIENT, Some(SECRET_1))
            .form(&[("grant_type", "client_credentials")]),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.header("x-request-id"), Some(id.as_str()));
    assert_eq!(ok.header("x-trace-id"), Some(TRACE));
    duration_ms(&ok);

    let err = read(
        app.bare(Method::POST, "auth")
            .header(HEADER_REQUEST_ID, &id)
            .header(HEADER_REQUEST_TIMESTAMP, app.timestamp())
            .header(HEADER_TRACE_ID, TRACE)
            .basic_auth(CLIENT, Some("wrong")),
    )
    .await;
    assert_eq!(err.status, StatusCode::UNAUTHORIZED);
    assert_eq!(err.header("x-request-id"), Some(id.as_str()));
    assert_eq!(err.header("x-trace-id"), Some(TRACE));
    duration_ms(&err);
}

#[tokio::test]
async fn without_a_valid_request_id_the_service_makes_one() {
    let app = spawn_app().await;
    for req in [
        app.bare(Method::POST, "decrypt-key"),
        app.bare(Method::POST, "decrypt-key")
            .header(HEADER_REQUEST_ID, "not-a-uuid"),
        app.bare(Method::GET, "auth"),
        app.client.get(app.url("/nowhere")),
        app.admin(Method::GET, "/info"),
    ] {
        let r = read(req).await;
        let id = r.header("x-request-id").expect("X-Request-Id");
        assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
        assert!(r.header("x-trace-id").is_none());
        duration_ms(&r);
    }
}

#[tokio::test]
async fn admin_and_unknown_paths_echo_ids_too() {
    let app = spawn_app().await;
    let id = request_uuid(7);
    for req in [
        app.admin(Method::GET, "/info"),
        app.client.get(app.url("/nowhere")),
        app.client.get(app.url("/_admin/info")),
    ] {
        let r = read(
            req.header(HEADER_REQUEST_ID, &id)
                .header(HEADER_TRACE_ID, TRACE),
        )
        .await;
        assert_eq!(r.header("x-request-id"), Some(id.as_str()));
        assert_eq!(r.header("x-trace-id"), Some(TRACE));
    }
}

#[tokio::test]
async fn skew_window_is_configurable() {
    let app = spawn_app_with(test_config().with_skew_secs(10)).await;
    let at = |secs: i64| {
        contracts::clock::format_instant(app.svc.now() + chrono::Duration::seconds(secs))
    };
    for (offset, status) in [(10, 200), (-10, 200), (11, 400), (-11, 400)] {
        let r = read(
            app.bare(Method::POST, "auth")
                .header(HEADER_REQUEST_ID, request_uuid(1))
                .header(HEADER_REQUEST_TIMESTAMP, at(offset))
                .basic_auth(CLIENT, Some(SECRET_1))
                .form(&[("grant_type", "client_credentials")]),
        )
        .await;
        assert_eq!(r.status.as_u16(), status, "offset {offset}: {}", r.body);
    }
}

#[tokio::test]
async fn the_skew_follows_the_simulated_clock() {
    let app = spawn_app().await;
    let stale = app.timestamp();
    app.advance(3600);
    let r = read(
        app.bare(Method::POST, "auth")
            .header(HEADER_REQUEST_ID, request_uuid(1))
            .header(HEADER_REQUEST_TIMESTAMP, stale)
            .basic_auth(CLIENT, Some(SECRET_1))
            .form(&[("grant_type", "client_credentials")]),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("300 seconds")
    );
}
