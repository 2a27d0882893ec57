//! The platform's failures on demand, as a real client (reqwest) sees them: statuses with
//! the documented body and `Retry-After`, delays, closed connections, truncated bodies, a
//! rate limit per key; rules from the configuration and through `/sim/v1/faults`; faults in
//! the journal.

use contracts::clock::Stopwatch;
use contracts::wire::{FaultKind, FaultRule};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::helpers::*;

const FAULTS: &str = "/sim/v1/faults";

async fn add(app: &TestApp, rule: Value) -> Value {
    let (s, v) = app.post(FAULTS, &rule).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// The workspace's list as a client sends it, its answer not yet read.
async fn send_list(app: &TestApp) -> reqwest::Response {
    app.client
        .get(app.url(&deployments_path()))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap()
}

/// The latest entry of the journal, of any workspace.
async fn last_entry(app: &TestApp) -> Value {
    let (_, page) = app
        .call(
            Method::GET,
            "/sim/v1/journal?limit=100",
            Some(OPS_KEY),
            None,
        )
        .await;
    page["items"].as_array().unwrap().last().unwrap().clone()
}

#[tokio::test]
async fn a_status_fault_answers_the_documented_body_with_retry_after() {
    let app = spawn_app().await;
    let rule = add(
        &app,
        json!({"kind": "status", "status": 503, "retry_after_seconds": 7,
               "operation_id": "list_deployments", "times": 1}),
    )
    .await;
    assert_eq!(rule["fault_id"], "flt-1");
    let resp = send_list(&app).await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(resp.headers()["retry-after"], "7");
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "service_unavailable");
    assert_eq!(body["error"]["code"], "service_unavailable");
    assert!(body["error"]["message"].as_str().unwrap().contains("flt-1"));
    let e = last_entry(&app).await;
    assert_eq!(e["status"], 503);
    assert_eq!(e["verdict"], "not_judged");
    assert_eq!(e["fault"]["fault_id"], "flt-1");
    assert_eq!(e["fault"]["kind"], "status");
    // Spent after one: the next request is handled.
    let (s, _) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK);
    let (_, rules) = app.get(FAULTS).await;
    assert_eq!(rules["items"][0]["matched"], 2);
    assert_eq!(rules["items"][0]["injected"], 1);
    assert_eq!(rules["items"][0]["remaining"], 0);
    // Other statuses: no Retry-After on a 500, a 429 has one.
    add(
        &app,
        json!({"kind": "status", "status": 500, "method": "post"}),
    )
    .await;
    let (s, v) = app
        .post(
            &deployments_path(),
            &deployment_body("Desk", "+14155550110"),
        )
        .await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(v["error"]["code"], "internal_error");
    let (s, v) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK, "a GET does not match a POST rule");
    assert_eq!(v["total"], 0, "the faulted create did not happen");
}

#[tokio::test]
async fn a_window_follows_the_platforms_clock() {
    let app = spawn_app().await;
    add(
        &app,
        json!({"kind": "status", "status": 502, "path": "/api/app-authoring/v1/orgs/*/workspaces/{workspace_id}/deployments",
               "from": "2026-03-02T12:10:00Z", "until": "2026-03-02T12:20:00Z"}),
    )
    .await;
    let (s, _) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK, "before the window");
    app.clock.advance(chrono::Duration::minutes(10)).unwrap();
    let (s, v) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::BAD_GATEWAY, "{v}");
    assert_eq!(v["error"]["code"], "bad_gateway");
    app.clock.advance(chrono::Duration::minutes(10)).unwrap();
    let (s, _) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK, "after the window");
}

#[tokio::test]
async fn a_delay_holds_the_answer_for_that_long() {
    let app = spawn_app().await;
    add(
        &app,
        json!({"kind": "delay", "delay_ms": 300, "operation_id": "list_deployments"}),
    )
    .await;
    let watch = Stopwatch::start();
    let (s, _) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK);
    assert!(watch.elapsed_ms() >= 300, "{} ms", watch.elapsed_ms());
    let e = last_entry(&app).await;
    assert_eq!(e["verdict"], "conforms", "a delayed request is judged");
    assert_eq!(e["fault"]["effect"], "delayed 300 ms");
    assert!(e["duration_ms"].as_f64().unwrap() >= 300.0);
}

#[tokio::test]
async fn a_dropped_connection_closes_without_an_answer() {
    let app = spawn_app().await;
    add(
        &app,
        json!({"kind": "drop", "operation_id": "create_deployment"}),
    )
    .await;
    let err = app
        .client
        .post(app.url(&deployments_path()))
        .header("x-api-key", KEY)
        .json(&deployment_body("Desk", "+14155550110"))
        .send()
        .await
        .expect_err("no answer");
    assert!(!err.is_timeout() && err.status().is_none(), "{err:?}");
    let e = last_entry(&app).await;
    assert!(e["status"].is_null(), "{e}");
    assert_eq!(e["fault"]["kind"], "drop");
    let (s, v) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::OK, "other requests are served");
    assert_eq!(v["total"], 0, "the dropped create did not happen");
}

#[tokio::test]
async fn a_truncated_answer_breaks_off_after_half_of_its_body() {
    let app = spawn_app().await;
    add(
        &app,
        json!({"kind": "truncate", "operation_id": "create_deployment"}),
    )
    .await;
    let resp = app
        .client
        .post(app.url(&deployments_path()))
        .header("x-api-key", KEY)
        .json(&deployment_body("Desk", "+14155550110"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let announced: usize = resp.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(announced > 100);
    assert!(resp.bytes().await.is_err(), "the body ends early");
    let e = last_entry(&app).await;
    assert_eq!(e["fault"]["kind"], "truncate");
    assert_eq!(e["status"], 200);
    let (_, v) = app.get(&deployments_path()).await;
    assert_eq!(v["total"], 1, "the create itself happened");
}

#[tokio::test]
async fn a_rate_limit_holds_per_key_and_says_when_to_retry() {
    let app = spawn_app().await;
    // An operator's rule: for every workspace's requests.
    let (s, v) = app
        .call(
            Method::POST,
            FAULTS,
            Some(OPS_KEY),
            Some(&json!({"kind": "rate_limit", "requests_per_second": 0.001, "burst": 2})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v.get("applies_to").is_none(), "{v}");
    for _ in 0..2 {
        let (s, _) = app.get(&deployments_path()).await;
        assert_eq!(s, StatusCode::OK);
    }
    let resp = send_list(&app).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 900, "{retry}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    let other = format!("/api/app-authoring/v1/orgs/{ORG}/workspaces/{WS2}/deployments");
    let (s, _) = app.call(Method::GET, &other, Some(KEY2), None).await;
    assert_eq!(s, StatusCode::OK, "another key has its own budget");
    let e = last_entry(&app).await;
    assert_eq!(e["verdict"], "conforms");
    let (_, sum) = app.get("/sim/v1/journal/summary").await;
    assert_eq!(sum["faults_injected"], 1);
}

#[tokio::test]
async fn rules_are_listed_checked_and_removed() {
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            FAULTS,
            &json!({"kind": "status", "status": 418, "operation_id": "nope"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let locs: Vec<Value> = v["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["loc"].clone())
        .collect();
    assert_eq!(
        locs,
        [json!(["body", "operation_id"]), json!(["body", "status"])],
        "{v}"
    );
    add(&app, json!({"kind": "drop", "times": 1})).await;
    add(&app, json!({"kind": "delay", "delay_ms": 1})).await;
    let (_, list) = app.get(FAULTS).await;
    assert_eq!(list["total"], 2);
    assert_eq!(list["items"][1]["fault_id"], "flt-2");
    assert_eq!(list["items"][1]["rule"]["kind"], "delay");
    let (s, _) = app
        .call(Method::DELETE, &format!("{FAULTS}/flt-1"), Some(KEY), None)
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, v) = app
        .call(Method::DELETE, &format!("{FAULTS}/flt-1"), Some(KEY), None)
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "fault_not_found");
    let (s, _) = app.call(Method::DELETE, FAULTS, Some(KEY), None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, list) = app.get(FAULTS).await;
    assert_eq!(list["total"], 0);
    let (s, _) = app.call(Method::GET, FAULTS, None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // The harness's own routes are never faulted.
    add(&app, json!({"kind": "status", "status": 503})).await;
    let (s, _) = app.get("/sim/v1/clock").await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn rules_of_the_configuration_hold_from_the_start() {
    let app = spawn_with(|mut c| {
        let mut rule = FaultRule::new(FaultKind::Status);
        rule.status = Some(504);
        rule.operation_id = Some("get_deployment".into());
        c.faults = vec![rule];
        c
    })
    .await;
    let (s, v) = app.get(&format!("{}/dep-1", deployments_path())).await;
    assert_eq!(s, StatusCode::GATEWAY_TIMEOUT, "{v}");
    let (_, list) = app.call(Method::GET, FAULTS, Some(OPS_KEY), None).await;
    assert_eq!(list["items"][0]["rule"]["status"], 504);
    let (_, list) = app.get(FAULTS).await;
    assert_eq!(
        list["total"], 0,
        "a rule of the configuration is the operator's: a workspace's key does not list it"
    );
}

#[tokio::test]
async fn rules_apply_to_a_list_answered_from_memory_and_the_journal_records_each() {
    let app = spawn_app().await;
    let (s, _) = app
        .post(
            &deployments_path(),
            &deployment_body("Desk", "+14155550110"),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    // The second list is answered with the bytes the first one kept.
    let (_, first) = app.get(&deployments_path()).await;
    let (s, again) = app.get(&deployments_path()).await;
    assert_eq!((s, &again), (StatusCode::OK, &first));
    let e = last_entry(&app).await;
    assert_eq!(e["status"], 200);
    assert_eq!(e["verdict"], "conforms", "{e}");
    assert_eq!(e["operation_id"], "list_deployments");
    assert_eq!(e["api_key"], "valid");
    add(
        &app,
        json!({"kind": "status", "status": 503, "operation_id": "list_deployments", "times": 1}),
    )
    .await;
    let (s, v) = app.get(&deployments_path()).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    assert_eq!(last_entry(&app).await["fault"]["kind"], "status");
    add(
        &app,
        json!({"kind": "delay", "delay_ms": 200, "operation_id": "list_deployments", "times": 1}),
    )
    .await;
    let watch = Stopwatch::start();
    let (s, v) = app.get(&deployments_path()).await;
    assert_eq!((s, &v), (StatusCode::OK, &first));
    assert!(watch.elapsed_ms() >= 200, "{} ms", watch.elapsed_ms());
    let e = last_entry(&app).await;
    assert_eq!(e["fault"]["kind"], "delay");
    assert!(e["duration_ms"].as_f64().unwrap() >= 200.0, "{e}");
    add(
        &app,
        json!({"kind": "truncate", "operation_id": "list_deployments", "times": 1}),
    )
    .await;
    let resp = send_list(&app).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.bytes().await.is_err(), "the body ends early");
    let e = last_entry(&app).await;
    assert_eq!(e["fault"]["kind"], "truncate");
    assert_eq!(
        e["response"]["bytes"].as_u64(),
        Some(serde_json::to_vec(&first).unwrap().len() as u64),
        "{e}"
    );
    // A refused key is answered and recorded as before.
    let (s, _) = app
        .call(Method::GET, &deployments_path(), Some("sk-wrong"), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(last_entry(&app).await["api_key"], "invalid");
    let (s, v) = app.get(&deployments_path()).await;
    assert_eq!((s, &v), (StatusCode::OK, &first), "every rule spent");
    let (_, rules) = app.get(FAULTS).await;
    let injected: Vec<&Value> = rules["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["injected"])
        .collect();
    assert_eq!(injected, [&json!(1), &json!(1), &json!(1)], "{rules}");
}
