//! What a verdict names so that a client's author can fix it: a request to a path that
//! serves nothing whatever its prefix, a key in the wrong header, a multipart part the
//! operation does not know, and the 404s for ids that do not exist (listed, not judged).

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;
use crate::journal::{JOURNAL, last_entry, violations};

#[tokio::test]
async fn a_request_that_serves_nothing_is_judged_whatever_its_prefix() {
    let app = spawn_app().await;
    for path in [
        "/apis/outbounds/v1/orgs/org-1/workspaces/ws-1/outbounds",
        "/v1/orgs/org-1/workspaces/ws-1/deployments",
        "/",
        "/sim/v2/clock",
    ] {
        let (s, v) = app
            .call(Method::POST, path, Some(KEY), Some(&json!({})))
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}: {v}");
        let e = last_entry(&app).await;
        assert_eq!(e["path"], path);
        assert_eq!(violations(&e), ["unknown_route/unknown_route@path"], "{e}");
        assert_eq!(e["owner"]["workspace_id"], WS, "the caller's: {e}");
    }
    let msg = last_entry(&app).await["violations"][0]["msg"].clone();
    assert!(
        msg.as_str().unwrap().contains("starts with /api/"),
        "the message says where the interface is: {msg}"
    );
    // The harness's own routes are served: not judged.
    app.get("/sim/v1/clock").await;
    app.call(Method::GET, "/healthz", None, None).await;
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["requests"], 4);
    assert_eq!(sum["unknown_routes"]["requests"], 4);
    assert_eq!(sum["violating"], 4);
}

#[tokio::test]
async fn a_key_in_the_wrong_header_is_named() {
    let app = spawn_app().await;
    for (header, value, named) in [
        (
            "authorization",
            format!("Bearer {KEY}"),
            "Authorization: Bearer",
        ),
        ("api-key", KEY.to_string(), "the header 'api-key'"),
    ] {
        let resp = app
            .client
            .get(app.url(&deployments_path()))
            .header(header, value)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        let e = last_entry(&app).await;
        assert_eq!(violations(&e), ["missing_key/missing@header.x-api-key"]);
        let msg = e["violations"][0]["msg"].as_str().unwrap();
        assert!(msg.contains(named) && msg.contains("X-API-Key"), "{msg}");
        assert!(!e.to_string().contains(KEY), "never the key: {e}");
    }
    app.call(Method::GET, &deployments_path(), None, None).await;
    let e = last_entry(&app).await;
    assert_eq!(
        e["violations"][0]["msg"],
        "Field required: every platform request carries X-API-Key"
    );
}

#[tokio::test]
async fn multipart_parts_the_operation_does_not_know_are_unknown_fields() {
    let app = spawn_app().await;
    let dep = create_deployment(&app, "Front desk", "+14155550110").await;
    let upload =
        format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts/upload");
    let transformation = json!({
        "phone_number": {"column_name": "phone", "country_code": "US"},
        "user_identifier": {"column_name": "id"}
    });
    let form = |category_part: &'static str| {
        reqwest::multipart::Form::new()
            .text("name", "stop list")
            .text(category_part, "stop_file")
            .part(
                "cohort_file",
                reqwest::multipart::Part::bytes(b"phone,id\n4155550123,u1\n".to_vec())
                    .file_name("users.csv"),
            )
            .part(
                "cohort_transformation_file",
                reqwest::multipart::Part::bytes(transformation.to_string().into_bytes())
                    .file_name("t.json"),
            )
    };
    let send = |f: reqwest::multipart::Form| {
        app.client
            .post(app.url(&upload))
            .header("x-api-key", KEY)
            .multipart(f)
            .send()
    };
    // A misspelt category: ignored, so the stop file became a cohort; judged all the same.
    let resp = send(form("cohort_categry")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let e = last_entry(&app).await;
    assert_eq!(e["verdict"], "violates", "{e}");
    assert_eq!(
        violations(&e),
        ["unknown_field/extra_forbidden@body.cohort_categry"]
    );
    // Spelt right: it keeps the contract.
    let resp = send(form("cohort_category")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(last_entry(&app).await["verdict"], "conforms");
    // Refused with the rest of a 422: reported too.
    let resp = send(form("cohort_categry").text("name", "twice"))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let e = last_entry(&app).await;
    let v = violations(&e);
    assert!(
        v.contains(&"unknown_field/extra_forbidden@body.cohort_categry".to_string()),
        "{v:?}"
    );
    // Strict mode refuses it: the 422's item, once.
    let strict = spawn_with(|mut c| {
        c.strict = true;
        c
    })
    .await;
    let dep = create_deployment(&strict, "Front desk", "+14155550110").await;
    let resp = strict
        .client
        .post(strict.url(&format!(
            "/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts/upload"
        )))
        .header("x-api-key", KEY)
        .multipart(form("cohort_categry"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        violations(&last_entry(&strict).await),
        ["validation/extra_forbidden@body.cohort_categry"]
    );
}

#[tokio::test]
async fn requests_for_ids_that_do_not_exist_are_listed_not_judged() {
    let app = spawn_app().await;
    let dep = create_deployment(&app, "Front desk", "+14155550110").await;
    let one = format!("{}/{dep}", deployments_path());
    let (s, _) = app.delete(&one).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = app.delete(&one).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "deleted twice");
    let wrong =
        format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts/coh-nope");
    app.get(&wrong).await;
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["violating"], 0, "{sum}");
    assert_eq!(sum["not_found"]["requests"], 2, "{sum}");
    let listed = &sum["not_found"]["listed"];
    assert_eq!(listed[0]["seq"], 3);
    assert_eq!(listed[0]["method"], "DELETE");
    assert_eq!(listed[0]["path"], one.as_str());
    assert_eq!(listed[0]["operation_id"], "delete_deployment");
    assert!(
        listed[0]["message"].as_str().unwrap().contains(&dep),
        "{listed}"
    );
    assert_eq!(listed[1]["path"], wrong.as_str());
    assert_eq!(listed[1]["operation_id"], "get_deployment_cohort");
}
