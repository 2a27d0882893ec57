//! Causes that point the right way: each mistake made as a client would make it, beside a
//! correct request to the same operation, and what the journal's verdict says of it (the
//! media type an operation really reads, a scheme before the key, a body that is not UTF-8,
//! the costliest violation first, an example number that stays an example). Then the
//! requests this platform serves but real platforms treat otherwise: warnings, not
//! violations.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::journal::{JOURNAL, last_entry, violations};

/// The `msg` of the entry's first violation.
fn first_msg(e: &Value) -> String {
    e["violations"][0]["msg"].as_str().unwrap_or("").to_string()
}

fn upload_path(dep: &str) -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts/upload")
}

fn upload_form() -> reqwest::multipart::Form {
    let transformation = json!({
        "phone_number": {"column_name": "phone", "country_code": "US"},
        "user_identifier": {"column_name": "id"}
    });
    reqwest::multipart::Form::new()
        .text("name", "march")
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
}

#[tokio::test]
async fn a_415_names_the_media_type_the_operation_reads() {
    let app = spawn_app().await;
    let dep = create_deployment(&app, "Front desk", "+14155550110").await;
    let upload = upload_path(&dep);
    // Right: multipart.
    let resp = app
        .client
        .post(app.url(&upload))
        .header("x-api-key", KEY)
        .multipart(upload_form())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(last_entry(&app).await["verdict"], "conforms");
    // A form, as a client that confuses the two sends it.
    let resp = app
        .client
        .post(app.url(&upload))
        .header("x-api-key", KEY)
        .form(&[("name", "march")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let e = last_entry(&app).await;
    assert_eq!(
        violations(&e),
        ["content_type/unsupported_media_type@header.content-type"]
    );
    assert_eq!(
        first_msg(&e),
        "the operation reads multipart/form-data, not 'application/x-www-form-urlencoded'"
    );
    // JSON, as a client that sends every body as JSON.
    let (s, _) = app
        .post(&upload, &json!({"name": "march", "cohort_file": "phone\n"}))
        .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        first_msg(&last_entry(&app).await),
        "the operation reads multipart/form-data, not 'application/json'"
    );
    // A JSON operation without a Content-Type: said so, never "not ''".
    let resp = app
        .client
        .post(app.url(&deployments_path()))
        .header("x-api-key", KEY)
        .body(deployment_body("Desk two", "+14155550111").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let msg = first_msg(&last_entry(&app).await);
    assert!(
        msg.starts_with("no Content-Type header: the operation reads application/json"),
        "{msg}"
    );
    assert!(!msg.contains("''"), "{msg}");
}

#[tokio::test]
async fn a_scheme_before_the_key_is_named_and_the_key_never_is() {
    let app = spawn_app().await;
    let (s, _) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK);
    let resp = app
        .client
        .get(app.url(&deployments_path()))
        .header("x-api-key", format!("Bearer {KEY}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let answer: Value = resp.json().await.unwrap();
    let said = answer["error"]["message"].as_str().unwrap();
    assert!(
        said.contains("starts with 'Bearer '"),
        "the platform says it too: {said}"
    );
    assert!(!said.contains(KEY), "{said}");
    let e = last_entry(&app).await;
    assert_eq!(
        violations(&e),
        ["invalid_key/invalid_api_key@header.x-api-key"]
    );
    let msg = first_msg(&e);
    assert!(
        msg.contains("starts with 'Bearer '") && msg.contains("without a scheme"),
        "{msg}"
    );
    assert!(!e.to_string().contains(KEY), "never the key: {e}");
    // Another workspace's key is still what it was.
    let (s, _) = app
        .call(Method::GET, &deployments_path(), Some(KEY2), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(
        first_msg(&last_entry(&app).await),
        "the key does not open the workspace of the path"
    );
}

#[tokio::test]
async fn a_body_that_is_not_utf8_is_said_to_be_so() {
    let app = spawn_app().await;
    create_deployment(&app, "Front desk", "+14155550110").await;
    let mut latin1 = br#"{"name": "Caf"#.to_vec();
    latin1.push(0xE9);
    latin1.extend_from_slice(
        br#"", "app_id": "app-1", "app_version": 1, "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550111"]}]}"#,
    );
    let resp = app
        .client
        .post(app.url(&deployments_path()))
        .header("x-api-key", KEY)
        .header("content-type", "application/json")
        .body(latin1)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let e = last_entry(&app).await;
    assert_eq!(violations(&e), ["validation/json_invalid@body.13"]);
    let msg = first_msg(&e);
    assert!(
        msg.contains("not UTF-8") && msg.contains("must be UTF-8 text"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_write_that_had_no_effect_comes_first() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    let one = format!("{}/{id}", campaigns_path());
    // Right: a rename.
    let (s, v) = app.patch(&one, &json!({"name": "Renamed"})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // A PATCH that tries to pause the campaign, among mistakes the client will see.
    let (s, v) = app
        .patch(
            &one,
            &json!({"status": "paused", "name": "bad/name", "description": 7,
                    "end_timestamp": "tomorrow", "allowed_schedule": {"timezone": "Mars/Base"}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let e = last_entry(&app).await;
    let all = violations(&e);
    assert!(all.len() >= 4, "{all:?}");
    assert_eq!(
        all[0], "unknown_field/extra_forbidden@body.status",
        "{all:?}"
    );
    let msg = first_msg(&e);
    assert!(
        msg.contains("a PATCH never changes the status") && msg.contains("/status does"),
        "{msg}"
    );
    // Accepted otherwise: the status is still first, and the campaign was not paused.
    let (s, v) = app
        .patch(&one, &json!({"status": "paused", "name": "Renamed again"}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "scheduled");
    assert_eq!(
        violations(&last_entry(&app).await),
        ["unknown_field/extra_forbidden@body.status"]
    );
}

#[tokio::test]
async fn an_example_number_stays_an_example() {
    let app = spawn_app().await;
    create_deployment(&app, "Front desk", "+14155550110").await;
    let (s, _) = app
        .post(
            &deployments_path(),
            &deployment_body("Desk two", "+1 212 000 9999"),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let e = last_entry(&app).await;
    let msg = first_msg(&e);
    assert!(
        msg.contains("'<number>' is not an E.164 number")
            && msg.contains("for example '+14155550100'"),
        "the client's number masked, the example kept: {msg}"
    );
    for part in ["request", "response", "violations"] {
        let text = e[part].to_string();
        assert!(
            !text.contains("212 000") && !text.contains("2120009999"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_trailing_slash_and_a_repeated_parameter_are_warnings_and_still_served() {
    let app = spawn_app().await;
    create_deployment(&app, "Front desk", "+14155550110").await;
    for i in 0..3 {
        create_deployment(&app, &format!("Desk {i}"), &format!("+1415555012{i}")).await;
    }
    let (s, v) = app.get(&format!("{}/", deployments_path())).await;
    assert_eq!(s, StatusCode::OK, "served: {v}");
    let e = last_entry(&app).await;
    assert_eq!(e["verdict"], "conforms", "not a violation: {e}");
    assert_eq!(e["warnings"][0]["kind"], "trailing_slash", "{e}");
    let msg = e["warnings"][0]["msg"].as_str().unwrap();
    assert!(msg.contains("redirect") && msg.contains("404"), "{msg}");

    let (s, v) = app
        .get(&format!("{}?limit=1&limit=2", deployments_path()))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["limit"], 2, "this platform takes the last");
    let e = last_entry(&app).await;
    assert_eq!(e["verdict"], "conforms");
    assert_eq!(e["warnings"][0]["kind"], "repeated_query", "{e}");
    assert_eq!(e["warnings"][0]["loc"], json!(["query", "limit"]));
    let msg = e["warnings"][0]["msg"].as_str().unwrap();
    assert!(
        msg.contains("took the last (limit=2)") && msg.contains("the first (limit=1)"),
        "{msg}"
    );
    // A search given twice: its values never kept.
    app.get(&format!(
        "{}?search=%2B14155550110&search=desk",
        deployments_path()
    ))
    .await;
    let e = last_entry(&app).await;
    assert_eq!(e["warnings"][0]["loc"], json!(["query", "search"]));
    assert!(!e.to_string().contains("desk"), "{e}");
    // Right: no warning.
    app.get(&format!("{}?limit=2&offset=1", deployments_path()))
        .await;
    assert!(last_entry(&app).await.get("warnings").is_none());

    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["violating"], 0, "{sum}");
    assert_eq!(sum["trailing_slash"]["requests"], 1, "{sum}");
    assert_eq!(sum["repeated_query"]["requests"], 2, "{sum}");
    assert_eq!(
        sum["repeated_query"]["examples"][0]["violations"][0]["type"],
        "repeated_query"
    );
}
