//! The server answers exactly the routes of the OpenAPI document.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::errors::documented_routes;
use crate::helpers::*;

fn is_route_miss(status: StatusCode, v: &Value) -> bool {
    status == StatusCode::METHOD_NOT_ALLOWED
        || (status == StatusCode::NOT_FOUND && v["error"]["code"] == "route_not_found")
}

#[tokio::test]
async fn every_documented_route_is_answered() {
    let app = spawn_app().await;
    for (method, path) in documented_routes() {
        let (s, v) = app
            .call(
                method.clone(),
                &path,
                Some(KEY),
                Some(&serde_json::json!({})),
            )
            .await;
        assert!(
            !is_route_miss(s, &v),
            "{method} {path} is documented but not served: {s} {v}"
        );
    }
}

/// The documented operations as (method, path template) pairs.
fn templates() -> Vec<(Method, Vec<String>)> {
    let doc = serde_json::to_value(contracts::openapi::platform_document()).unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in ["get", "post", "put", "patch", "delete"] {
            if item.get(m).is_some() {
                let method = Method::from_bytes(m.to_uppercase().as_bytes()).unwrap();
                out.push((method, path.split('/').map(str::to_string).collect()));
            }
        }
    }
    out
}

/// Whether a documented template (with `{param}` segments matching any one segment) covers
/// this method and path.
fn documented(templates: &[(Method, Vec<String>)], method: &Method, path: &str) -> bool {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    templates.iter().any(|(m, t)| {
        m == method
            && t.len() == segs.len()
            && t.iter()
                .zip(&segs)
                .all(|(a, b)| (a.starts_with('{') && !b.is_empty()) || a == b)
    })
}

#[tokio::test]
async fn nothing_undocumented_is_answered() {
    let app = spawn_app().await;
    let templates = templates();
    let documented_routes = documented_routes();
    let methods = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    ];
    let mut probes: Vec<String> = documented_routes.iter().map(|(_, p)| p.clone()).collect();
    // Near misses: extra segments and other versions. (A trailing slash is the same route.)
    let extra: Vec<String> = probes
        .iter()
        .flat_map(|p| [format!("{p}/extra"), p.replace("/v1/", "/v2/")])
        .collect();
    probes.extend(extra);
    probes.extend([
        "/".into(),
        "/api".into(),
        format!("/api/scheduling/v1/orgs/{ORG}"),
    ]);
    for path in probes {
        for method in &methods {
            if documented(&templates, method, &path) {
                continue;
            }
            let (s, v) = app.call(method.clone(), &path, Some(KEY), None).await;
            assert!(
                is_route_miss(s, &v),
                "{method} {path} is served but not documented: {s} {v}"
            );
        }
    }
    let (s, v) = app.call(Method::GET, "/nope", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!("error_route_404", v);
    let (s, v) = app
        .call(Method::PUT, &campaigns_path(), Some(KEY), None)
        .await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    insta::assert_json_snapshot!("error_route_405", v);
}

#[tokio::test]
async fn the_served_document_is_the_committed_one() {
    let app = spawn_app().await;
    let body = app
        .client
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../contracts/openapi/platform.json"
    ))
    .unwrap();
    assert_eq!(body, committed);
}

/// The methods the document lists for a path, HEAD beside GET, in the order `Allow` gives them.
fn documented_methods(item: &Value) -> Vec<Method> {
    let mut out = Vec::new();
    for m in [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    ] {
        let name = if m == Method::HEAD { "get" } else { m.as_str() };
        if item.get(name.to_ascii_lowercase()).is_some() {
            out.push(m);
        }
    }
    out
}

fn fill(path: &str) -> String {
    path.replace("{org_id}", ORG)
        .replace("{workspace_id}", WS)
        .replace("{campaign_id}", "camp-x")
        .replace("{deployment_id}", "dep-x")
        .replace("{cohort_id}", "coh-x")
}

#[tokio::test]
async fn every_other_method_is_405_with_the_allowed_ones() {
    let app = spawn_app().await;
    let doc = contracts::openapi::platform_document();
    let all = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
    ];
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        let allowed = documented_methods(item);
        let allow: Vec<&str> = allowed.iter().map(Method::as_str).collect();
        let allow = allow.join(", ");
        for path in [fill(template), format!("{}/", fill(template))] {
            for method in all.iter().filter(|m| !allowed.contains(m)) {
                let r = app
                    .client
                    .request(method.clone(), app.url(&path))
                    .header("x-api-key", KEY)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    r.status(),
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path}"
                );
                assert_eq!(
                    r.headers()["allow"].to_str().unwrap(),
                    allow,
                    "{method} {path}: Allow lists the documented methods"
                );
                if *method != Method::HEAD {
                    let v: Value = r.json().await.unwrap();
                    assert_eq!(v["error"]["code"], "method_not_allowed");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked} probes");
}

#[tokio::test]
async fn head_answers_every_get_route_like_get_without_a_body() {
    let app = spawn_app().await;
    let deployment = create_deployment(&app, "Desk", "+14155550100").await;
    let doc = contracts::openapi::platform_document();
    let mut checked = 0;
    for (template, item) in doc["paths"].as_object().unwrap() {
        if item.get("get").is_none() {
            continue;
        }
        let path = fill(template).replace("dep-x", &deployment);
        let send = |m: Method| {
            app.client
                .request(m, app.url(&path))
                .header("x-api-key", KEY)
                .send()
        };
        let get = send(Method::GET).await.unwrap();
        let head = send(Method::HEAD).await.unwrap();
        assert_eq!(head.status(), get.status(), "HEAD {path}");
        for h in ["content-type", "content-length"] {
            assert_eq!(
                head.headers().get(h),
                get.headers().get(h),
                "HEAD {path}: {h}"
            );
        }
        assert!(
            head.bytes().await.unwrap().is_empty(),
            "HEAD {path}: no body"
        );
        checked += 1;
    }
    assert!(checked >= 13, "{checked} GET routes");
}
