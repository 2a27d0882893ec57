//! Master-key rotation: old encrypted keys still decrypt; below the minimum version they
//! do not; disable, enable and revoke.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

async fn decrypt_status(app: &TestApp, alias: &str, text: &str) -> (u16, String) {
    let r = read(app.decrypt_request(API_KEY, alias, text)).await;
    let code = if r.status == StatusCode::OK {
        assert_eq!(
            unb64(r.json()["data"]["plaintext_key"].as_str().unwrap()),
            DATA_KEY
        );
        "OK".to_string()
    } else {
        r.code()
    };
    (r.status.as_u16(), code)
}

#[tokio::test]
async fn old_versions_decrypt_after_rotation_until_the_minimum_moves() {
    let app = spawn_app().await;
    let v1 = app
        .svc
        .keys()
        .wrap_at(ALIAS_A, 1, [1; 12], &DATA_KEY)
        .unwrap();
    let v2 = app.wrapped(ALIAS_A);

    let r = read(app.admin(Method::POST, &format!("/keys/{ALIAS_A}/rotate"))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    insta::assert_json_snapshot!("admin_rotated_alias", r.json());
    assert_eq!(r.json()["current_version"], 3);

    // New keys, from /rotate-key, are wrapped under version 3.
    let rotated = read(app.rotate_request(API_KEY, Some(ALIAS_A)))
        .await
        .json();
    let v3_text = rotated["data"]["encrypted_dek"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(contracts::envelope::parse(&v3_text).unwrap().version(), 3);
    let v3 = app.wrapped(ALIAS_A);
    assert_eq!(contracts::envelope::parse(&v3).unwrap().version(), 3);

    for t in [&v1, &v2, &v3] {
        assert_eq!(decrypt_status(&app, ALIAS_A, t).await, (200, "OK".into()));
    }

    let r = read(
        app.admin(Method::PUT, &format!("/keys/{ALIAS_A}/min-version"))
            .json(&json!({"min_version": 3})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["min_version"], 3);
    for t in [&v1, &v2] {
        assert_eq!(
            decrypt_status(&app, ALIAS_A, t).await,
            (422, "DECRYPTION_FAILED".into())
        );
    }
    assert_eq!(decrypt_status(&app, ALIAS_A, &v3).await.0, 200);

    // The minimum can move back down (a mistaken cut-off is recoverable).
    app.svc.keys().set_min_version(ALIAS_A, 1).unwrap();
    assert_eq!(decrypt_status(&app, ALIAS_A, &v1).await.0, 200);
}

#[tokio::test]
async fn min_version_outside_the_versions_is_refused() {
    let app = spawn_app().await;
    for body in [json!({"min_version": 0}), json!({"min_version": 3})] {
        let r = read(
            app.admin(Method::PUT, &format!("/keys/{ALIAS_A}/min-version"))
                .json(&body),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        insta::assert_json_snapshot!("admin_min_version_out_of_range", r.json());
    }
    let r = read(app.admin(Method::PUT, &format!("/keys/{ALIAS_A}/min-version"))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "a body is required");
}

#[tokio::test]
async fn disable_enable_revoke() {
    let app = spawn_app().await;
    let text = app.wrapped(ALIAS_B);
    let act = |a: &'static str| app.admin(Method::POST, &format!("/keys/{ALIAS_B}/{a}"));

    assert_eq!(read(act("disable")).await.json()["status"], "disabled");
    assert_eq!(
        decrypt_status(&app, ALIAS_B, &text).await,
        (403, "KEY_DISABLED".into())
    );
    assert_eq!(read(act("enable")).await.json()["status"], "enabled");
    assert_eq!(decrypt_status(&app, ALIAS_B, &text).await.0, 200);

    assert_eq!(read(act("revoke")).await.json()["status"], "revoked");
    assert_eq!(
        decrypt_status(&app, ALIAS_B, &text).await,
        (403, "KEY_REVOKED".into())
    );
    let again = read(act("enable")).await;
    assert_eq!(again.status, StatusCode::FORBIDDEN);
    insta::assert_json_snapshot!("admin_enable_revoked", again.json());
    let rotate = read(act("rotate")).await;
    assert_eq!(rotate.code(), "KEY_REVOKED");
    // The other alias is untouched.
    assert_eq!(
        decrypt_status(&app, ALIAS_A, &app.wrapped(ALIAS_A)).await.0,
        200
    );
}

#[tokio::test]
async fn rotation_through_the_library_api() {
    let app = spawn_app().await;
    let old = app.wrapped(ALIAS_B);
    let info = app.svc.keys().rotate(ALIAS_B, app.svc.now()).unwrap();
    assert_eq!(info.current_version, 2);
    assert_eq!(decrypt_status(&app, ALIAS_B, &old).await.0, 200);
    let new = app.wrapped(ALIAS_B);
    assert_eq!(contracts::envelope::parse(&new).unwrap().version(), 2);
    assert_eq!(decrypt_status(&app, ALIAS_B, &new).await.0, 200);
}

#[tokio::test]
async fn configured_keys_and_derived_rotations_agree_with_a_restart() {
    // A service restarted with the same configuration and seed decrypts what the first one
    // wrapped, including under versions added by rotation.
    let first = spawn_app().await;
    first.svc.keys().rotate(ALIAS_A, first.svc.now()).unwrap();
    let text = first.wrapped(ALIAS_A);
    drop(first);
    let second = spawn_app().await;
    second.svc.keys().rotate(ALIAS_A, second.svc.now()).unwrap();
    assert_eq!(decrypt_status(&second, ALIAS_A, &text).await.0, 200);
}
