//! The admin API: its guard, and the routes not covered by the fault, rotation and audit
//! tests.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn the_admin_token_guards_every_admin_path() {
    let app = spawn_app().await;
    for (method, path) in [
        (Method::GET, "/info"),
        (Method::GET, "/audit"),
        (Method::POST, "/reset"),
        (Method::POST, "/keys/tenant-a/revoke"),
        (Method::GET, "/no-such-route"),
    ] {
        let url = app.url(&format!("/_admin{path}"));
        let none = read(app.client.request(method.clone(), &url)).await;
        assert_eq!(none.status, StatusCode::UNAUTHORIZED, "{path}");
        let wrong = read(app.client.request(method.clone(), &url).bearer_auth("nope")).await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(wrong.code(), "UNAUTHORIZED");
        let basic = read(
            app.client
                .request(method, &url)
                .basic_auth("admin", Some(ADMIN_TOKEN)),
        )
        .await;
        assert_eq!(basic.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let wrong = read(app.client.get(app.url("/_admin/info")).bearer_auth("nope")).await;
    insta::assert_json_snapshot!("admin_unauthorized", wrong.json());
    assert_eq!(
        app.svc.keys().info(ALIAS_A).unwrap().status,
        customer_kms_sim::AliasStatus::Enabled,
        "nothing was revoked"
    );
}

#[tokio::test]
async fn without_an_admin_token_the_admin_api_is_closed() {
    let mut config = test_config();
    config.admin_token = None;
    let app = spawn_app_with(config).await;
    let r = read(app.admin(Method::GET, "/info")).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.body.contains("no admin token configured"), "{}", r.body);
}

#[tokio::test]
async fn info_keys_and_clock() {
    let app = spawn_app().await;
    let info = read(app.admin(Method::GET, "/info")).await;
    assert_eq!(info.status, StatusCode::OK);
    insta::assert_json_snapshot!("admin_info", info.json());

    let keys = read(app.admin(Method::GET, "/keys")).await;
    insta::assert_json_snapshot!("admin_keys", keys.json());
    let one = read(app.admin(Method::GET, "/keys/tenant-b")).await.json();
    assert_eq!(one["current_version"], 1);
    let missing = read(app.admin(Method::GET, "/keys/tenant-zz")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.code(), "KEY_NOT_FOUND");

    let advanced = read(
        app.admin(Method::POST, "/clock/advance")
            .json(&json!({"secs": 90})),
    )
    .await;
    assert_eq!(advanced.status, StatusCode::OK, "{}", advanced.body);
    assert_eq!(advanced.json()["now"], "2026-03-01T09:01:30.000Z");
    assert_eq!(
        read(app.admin(Method::GET, "/clock")).await.json()["simulated"],
        true
    );
    for body in [
        json!({"secs": -5}),
        json!({"secs": "soon"}),
        json!({"secs": 400_000_000u64}),
    ] {
        let bad = read(app.admin(Method::POST, "/clock/advance").json(&body)).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{body}");
    }
    // Never past the end of RFC 3339 time, however often it is asked.
    let ten_years = json!({"secs": 10 * 366 * 86_400});
    let mut refused = false;
    for _ in 0..900 {
        let r = read(app.admin(Method::POST, "/clock/advance").json(&ten_years)).await;
        if r.status == StatusCode::BAD_REQUEST {
            assert!(r.body.contains("9999-12-31"), "{}", r.body);
            refused = true;
            break;
        }
        assert_eq!(r.status, StatusCode::OK);
    }
    assert!(refused);
    assert!(
        read(app.admin(Method::GET, "/info"))
            .await
            .status
            .is_success()
    );
}

#[tokio::test]
async fn tokens_expire_through_the_admin_api() {
    let app = spawn_app().await;
    let token = app.token().await;
    let text = app.wrapped(ALIAS_A);
    assert_eq!(
        read(app.decrypt_request(&token, ALIAS_A, &text))
            .await
            .status,
        StatusCode::OK
    );
    let r = read(app.admin(Method::POST, "/tokens/expire")).await;
    assert_eq!(r.json(), json!({"epoch": 1}));
    let old = read(app.decrypt_request(&token, ALIAS_A, &text)).await;
    assert_eq!(old.status, StatusCode::UNAUTHORIZED);
    assert_eq!(old.json()["error"]["message"], "access token expired");
    let fresh = app.token().await;
    assert_eq!(
        read(app.decrypt_request(&fresh, ALIAS_A, &text))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        read(app.decrypt_request(API_KEY, ALIAS_A, &text))
            .await
            .status,
        StatusCode::OK,
        "static API keys are not tokens"
    );
}

#[tokio::test]
async fn wrap_over_the_admin_api() {
    let app = spawn_app().await;
    let given = read(
        app.admin(Method::POST, "/keys/tenant-b/wrap")
            .json(&json!({"plaintext_key": b64(&DATA_KEY)})),
    )
    .await
    .json();
    assert_eq!(given["key_version"], 1);
    let text = given["encrypted_key"].as_str().unwrap();
    let r = read(app.decrypt_request(API_KEY, ALIAS_B, text)).await;
    assert_eq!(
        unb64(r.json()["data"]["plaintext_key"].as_str().unwrap()),
        DATA_KEY
    );

    let generated = read(app.admin(Method::POST, "/keys/tenant-b/wrap"))
        .await
        .json();
    assert_eq!(
        unb64(generated["plaintext_key"].as_str().unwrap()).len(),
        32
    );
    let short = read(
        app.admin(Method::POST, "/keys/tenant-b/wrap")
            .json(&json!({"plaintext_key": b64(&[1; 16])})),
    )
    .await;
    assert_eq!(short.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        short.json()["error"]["message"],
        "plaintext_key must be 32 bytes"
    );
}

#[tokio::test]
async fn fault_routes() {
    let app = spawn_app().await;
    let add = |body: serde_json::Value| app.admin(Method::POST, "/faults").json(&body);
    let a = read(add(json!({"kind": "hang", "scope": "rotate-key"})))
        .await
        .json();
    read(add(
        json!({"kind": "internal_error", "trigger": {"window": {"until": "2026-03-01T10:00:00Z"}}}),
    ))
    .await;
    let one = read(app.admin(
        Method::GET,
        &format!("/faults/{}", a["id"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(one.json()["kind"], "hang");
    let listed = read(app.admin(Method::GET, "/faults")).await.json();
    insta::assert_json_snapshot!("admin_faults", listed);

    let del = read(app.admin(Method::DELETE, "/faults/flt-1")).await;
    assert_eq!(del.json(), json!({"removed": 1}));
    let gone = read(app.admin(Method::DELETE, "/faults/flt-1")).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.code(), "NOT_FOUND");
    assert_eq!(
        read(app.admin(Method::DELETE, "/faults")).await.json(),
        json!({"removed": 1})
    );
    assert!(app.svc.faults().list().is_empty());
}

#[tokio::test]
async fn reset_clears_faults_and_audit() {
    let app = spawn_app().await;
    read(app.auth_request(CLIENT, SECRET_1)).await;
    app.svc
        .add_fault(customer_kms_sim::FaultSpec::new(
            customer_kms_sim::FaultKind::InternalError,
        ))
        .unwrap();
    let r = read(app.admin(Method::POST, "/reset")).await;
    assert_eq!(r.json(), json!({"faults_removed": 1, "audit_removed": 1}));
    assert_eq!(
        read(app.auth_request(CLIENT, SECRET_1)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn admin_errors_use_the_error_shape() {
    let app = spawn_app().await;
    let cases = [
        (
            app.admin(Method::DELETE, "/keys"),
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (app.admin(Method::GET, "/nothing-here"), 404, "NOT_FOUND"),
        (
            app.admin(Method::POST, "/keys/tenant-a/explode"),
            404,
            "NOT_FOUND",
        ),
        (
            app.admin(Method::POST, "/faults").body("{not json"),
            400,
            "INVALID_REQUEST",
        ),
        (app.admin(Method::POST, "/faults"), 400, "INVALID_REQUEST"),
        (
            app.admin(Method::POST, "/faults").body("x".repeat(20_000)),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    ];
    for (req, status, code) in cases {
        let r = read(req).await;
        assert_eq!(r.status.as_u16(), status, "{}", r.body);
        assert_eq!(r.code(), code);
    }
}

#[tokio::test]
async fn a_405_lists_the_methods_of_its_path_and_head_answers_like_get() {
    let app = spawn_app().await;
    for (method, path, allow) in [
        (Method::DELETE, "/keys", "GET, HEAD"),
        (Method::PUT, "/faults", "GET, HEAD, POST, DELETE"),
        (Method::GET, "/reset", "POST"),
        (Method::POST, "/keys/tenant-a/min-version", "PUT"),
    ] {
        let r = app.admin(method.clone(), path).send().await.unwrap();
        assert_eq!(
            r.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        assert_eq!(r.headers()["allow"], allow, "{method} {path}");
    }
    let get = app.admin(Method::GET, "/info").send().await.unwrap();
    let head = app.admin(Method::HEAD, "/info").send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(
        head.headers()["content-length"],
        get.headers()["content-length"]
    );
    assert!(head.bytes().await.unwrap().is_empty());
}
