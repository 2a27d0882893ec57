//! Error shapes for bad input: malformed JSON, media types, sizes, strict mode, ids of
//! another workspace, and the auth matrix over every documented route.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn raw(
    app: &TestApp,
    path: &str,
    content_type: Option<&str>,
    body: &'static str,
) -> (StatusCode, Value) {
    let mut req = app
        .client
        .post(app.url(path))
        .header("x-api-key", KEY)
        .body(body);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let resp = req.send().await.unwrap();
    (resp.status(), resp.json().await.unwrap())
}

#[tokio::test]
async fn malformed_bodies_get_clear_errors() {
    let app = spawn_app().await;
    let path = campaigns_path();
    let (s, v) = raw(&app, &path, Some("application/json"), "{\"name\": ").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("error_json_invalid", v);
    let (s, v) = raw(&app, &path, Some("application/json"), "").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("error_empty_body", v);
    let (s, v) = raw(&app, &path, Some("text/plain"), "{}").await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    insta::assert_json_snapshot!("error_media_type", v);
    let (s, v) = raw(&app, &path, None, "{}").await;
    assert_eq!(
        s,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "no content type: refused like a wrong one"
    );
    assert_eq!(v["error"]["code"], "unsupported_media_type", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Content-Type: application/json"),
        "{v}"
    );
    let (s, _) = raw(&app, &path, Some("application/json; charset=utf-8"), "[]").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let app = spawn_with(|mut c| {
        c.max_body_bytes = 1024;
        c
    })
    .await;
    let mut body = deployment_body("Desk", "+14155550100");
    body["description"] = json!("x".repeat(2000));
    let (s, v) = app.post(&deployments_path(), &body).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    insta::assert_json_snapshot!("error_413", v);
    let (_, list) = app.get(&deployments_path()).await;
    assert_eq!(list["total"], 0, "nothing stored");
}

#[tokio::test]
async fn strict_mode_refuses_unknown_fields() {
    let lax = spawn_app().await;
    let mut body = deployment_body("Desk", "+14155550100");
    body["colour"] = json!("blue");
    assert_eq!(lax.post(&deployments_path(), &body).await.0, StatusCode::OK);
    let strict = spawn_with(|mut c| {
        c.strict = true;
        c
    })
    .await;
    let (s, v) = strict.post(&deployments_path(), &body).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("error_strict", v);
}

#[tokio::test]
async fn another_workspaces_resources_are_404_never_their_data() {
    let app = spawn_app().await;
    let campaign = create_campaign(&app).await;
    let deployment = create_deployment(&app, "Desk", "+14155550100").await;
    let other = |p: &str| {
        p.replace(
            &format!("/workspaces/{WS}/"),
            &format!("/workspaces/{WS2}/"),
        )
    };
    for path in [
        format!("{}/{campaign}", campaigns_path()),
        format!("{}/{deployment}", deployments_path()),
    ] {
        let (s, v) = app.call(Method::GET, &other(&path), Some(KEY2), None).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}: {v}");
        assert!(v.get("error").is_some());
    }
    let (s, _) = app
        .call(
            Method::DELETE,
            &other(&format!("{}/{deployment}", deployments_path())),
            Some(KEY2),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(
        app.get(&format!("{}/{deployment}", deployments_path()))
            .await
            .0,
        StatusCode::OK,
        "still there"
    );
    let (_, v) = app
        .call(Method::GET, &other(&campaigns_path()), Some(KEY2), None)
        .await;
    assert_eq!(v["total"], 0, "bob sees none of alice's campaigns");
}

/// Every documented route with its parameters filled in.
pub fn documented_routes() -> Vec<(Method, String)> {
    documented_routes_with(&[
        ("{org_id}", ORG),
        ("{workspace_id}", WS),
        ("{campaign_id}", "camp-x"),
        ("{deployment_id}", "dep-x"),
        ("{cohort_id}", "coh-x"),
    ])
}

/// Every documented route with its parameters (`{name}`) replaced by the values given.
pub fn documented_routes_with(values: &[(&str, &str)]) -> Vec<(Method, String)> {
    let doc = serde_json::to_value(contracts::openapi::platform_document()).unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (name, method) in [
            ("get", Method::GET),
            ("post", Method::POST),
            ("put", Method::PUT),
            ("patch", Method::PATCH),
            ("delete", Method::DELETE),
        ] {
            if item.get(name).is_some() {
                let mut filled = path.clone();
                for (param, value) in values {
                    filled = filled.replace(param, value);
                }
                out.push((method.clone(), filled));
            }
        }
    }
    out
}

#[tokio::test]
async fn auth_matrix_every_route_without_a_key_with_a_wrong_key_and_another_workspaces_key() {
    let app = spawn_app().await;
    let routes = documented_routes();
    assert!(routes.len() >= 22, "{routes:?}");
    for (method, path) in routes {
        // The live page's shell holds no data: it asks for a key before it reads anything.
        if path == "/openapi.json" || path == "/healthz" || path == "/ui" {
            let (s, _) = app.call(method, &path, None, None).await;
            assert_eq!(s, StatusCode::OK, "{path} needs no key");
            continue;
        }
        // The clock, journal, fault and stack routes act on the whole instance: any
        // workspace's key opens them, scoped to its own workspace (isolation.rs).
        let instance_wide = [
            "/sim/v1/clock",
            "/sim/v1/journal",
            "/sim/v1/faults",
            "/sim/v1/stack",
        ]
        .iter()
        .any(|p| path.starts_with(p));
        for (key, code) in [
            (None, "missing_api_key"),
            (Some("not-a-key"), "invalid_api_key"),
            (Some(KEY2), "invalid_api_key"),
        ] {
            if instance_wide && key == Some(KEY2) {
                continue;
            }
            let body = json!({});
            let (s, v) = app.call(method.clone(), &path, key, Some(&body)).await;
            assert_eq!(
                s,
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {key:?}: {v}"
            );
            assert_eq!(v["error"]["type"], "authentication_error");
            assert_eq!(v["error"]["code"], code, "{method} {path}");
        }
    }
    let (_, v) = app.call(Method::GET, &campaigns_path(), None, None).await;
    insta::assert_json_snapshot!("error_401_missing", v);
    let (_, v) = app
        .call(Method::GET, &campaigns_path(), Some(KEY2), None)
        .await;
    insta::assert_json_snapshot!("error_401_invalid", v);
}
