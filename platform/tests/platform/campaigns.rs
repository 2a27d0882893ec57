//! Campaigns over HTTP: bodies, limits, status changes, time transitions, persistence.

use chrono::Duration;
use contracts::clock::Clock;
use reqwest::StatusCode;
use rstest::rstest;
use serde_json::{Value, json};

use crate::helpers::*;

fn with(mut body: Value, pointer: &str, value: Value) -> Value {
    *body.pointer_mut(pointer).expect("pointer exists") = value;
    body
}

#[tokio::test]
async fn create_answers_a_scheduled_summary_and_get_the_whole_campaign() {
    let app = spawn_app().await;
    let (status, created) = app.post(&campaigns_path(), &campaign_body()).await;
    assert_eq!(status, StatusCode::OK);
    insta::assert_json_snapshot!("campaign_create", created);
    let id = created["campaign_id"].as_str().unwrap();
    let (status, got) = app.get(&format!("{}/{id}", campaigns_path())).await;
    assert_eq!(status, StatusCode::OK);
    insta::assert_json_snapshot!("campaign_get", got);
}

#[tokio::test]
async fn validation_failures_come_all_at_once() {
    let app = spawn_app().await;
    let mut body = campaign_body();
    body.as_object_mut().unwrap().remove("name");
    body = with(body, "/app_config/attempts_per_second", json!(0.05));
    body = with(body, "/app_config/connection_configs/1/weight", json!(0));
    body = with(body, "/start_timestamp", json!("2026-03-02T12:01:00Z"));
    let (status, err) = app.post(&campaigns_path(), &body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("campaign_create_422", err);
}

#[rstest]
#[case::rate_min("/app_config/attempts_per_second", json!(0.1), true)]
#[case::rate_below("/app_config/attempts_per_second", json!(0.09), false)]
#[case::rate_max("/app_config/attempts_per_second", json!(500), true)]
#[case::rate_above("/app_config/attempts_per_second", json!(500.5), false)]
#[case::threshold_min("/app_config/retry_config/threshold_seconds", json!(1), true)]
#[case::threshold_below("/app_config/retry_config/threshold_seconds", json!(0), false)]
#[case::threshold_max("/app_config/retry_config/threshold_seconds", json!(1200), true)]
#[case::threshold_above("/app_config/retry_config/threshold_seconds", json!(1201), false)]
#[case::description_150("/description", json!("d".repeat(150)), true)]
#[case::description_151("/description", json!("d".repeat(151)), false)]
#[case::name_50("/name", json!("n".repeat(50)), true)]
#[case::name_51("/name", json!("n".repeat(51)), false)]
#[case::name_pattern("/name", json!("no/slash"), false)]
#[case::start_119s("/start_timestamp", json!("2026-03-02T12:01:59Z"), false)]
#[case::start_120s("/start_timestamp", json!("2026-03-02T12:02:00Z"), true)]
#[case::start_7d_1s("/start_timestamp", json!("2026-03-09T12:00:01Z"), false)]
#[case::end_30d("/end_timestamp", json!("2026-04-01T13:00:00Z"), true)]
#[case::end_30d_1s("/end_timestamp", json!("2026-04-01T13:00:01Z"), false)]
#[case::end_119s("/end_timestamp", json!("2026-03-02T13:01:59Z"), false)]
#[case::end_120s("/end_timestamp", json!("2026-03-02T13:02:00Z"), true)]
#[case::no_connections("/app_config/connection_configs", json!([]), false)]
#[case::weight_0("/app_config/connection_configs/0/weight", json!(0), false)]
#[case::weight_1("/app_config/connection_configs/0/weight", json!(1), true)]
#[tokio::test]
async fn limits_through_http(#[case] pointer: &str, #[case] value: Value, #[case] ok: bool) {
    let app = spawn_app().await;
    let mut body = with(campaign_body(), pointer, value);
    if pointer == "/start_timestamp" {
        // Keep the end valid relative to the start being tested.
        body = with(body, "/end_timestamp", json!("2026-03-09T13:00:00Z"));
    }
    let (status, v) = app.post(&campaigns_path(), &body).await;
    if ok {
        assert_eq!(status, StatusCode::OK, "{v}");
    } else {
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        let field = pointer
            .trim_start_matches('/')
            .split('/')
            .collect::<Vec<_>>();
        let loc: Vec<Value> = v["detail"][0]["loc"].as_array().unwrap().clone();
        assert_eq!(loc[0], "body");
        assert_eq!(loc[1], field[0], "{v}");
    }
}

#[tokio::test]
async fn a_start_exactly_7_days_ahead_is_accepted() {
    let app = spawn_app().await;
    let body = with(
        with(
            campaign_body(),
            "/start_timestamp",
            json!("2026-03-09T12:00:00Z"),
        ),
        "/end_timestamp",
        json!("2026-03-10T12:00:00Z"),
    );
    let (status, v) = app.post(&campaigns_path(), &body).await;
    assert_eq!(status, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn status_follows_the_clock() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    let path = format!("{}/{id}", campaigns_path());
    assert_eq!(app.get(&path).await.1["status"], "scheduled");
    app.clock.advance(Duration::hours(1)).unwrap();
    assert_eq!(app.get(&path).await.1["status"], "active", "at the start");
    let (_, list) = app
        .get(&format!("{}?campaign_status=active", campaigns_path()))
        .await;
    assert_eq!(list["total"], 1);
    app.clock.advance(Duration::days(3)).unwrap();
    assert_eq!(app.get(&path).await.1["status"], "ended", "at the end");
    let (_, list) = app
        .get(&format!("{}?campaign_status=active", campaigns_path()))
        .await;
    assert_eq!(list["total"], 0);
    let (_, list) = app
        .get(&format!("{}?campaign_status=ended", campaigns_path()))
        .await;
    assert_eq!(list["total"], 1);
}

async fn act(app: &TestApp, id: &str, action: &str) -> (StatusCode, Value) {
    app.put(
        &format!("{}/{id}/status", campaigns_path()),
        &json!({"action": action}),
    )
    .await
}

#[tokio::test]
async fn pause_resume_cancel_and_their_409s() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    let (s, v) = act(&app, &id, "resume").await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!("campaign_status_409", v);
    let (s, v) = act(&app, &id, "pause").await;
    assert_eq!((s, v["status"].as_str()), (StatusCode::OK, Some("paused")));
    insta::assert_json_snapshot!("campaign_status_pause", v);
    assert_eq!(act(&app, &id, "pause").await.0, StatusCode::CONFLICT);
    // Resumed before the start: back to scheduled.
    assert_eq!(act(&app, &id, "resume").await.1["status"], "scheduled");
    app.clock.advance(Duration::hours(2)).unwrap();
    assert_eq!(act(&app, &id, "pause").await.1["status"], "paused");
    assert_eq!(act(&app, &id, "resume").await.1["status"], "active");
    assert_eq!(act(&app, &id, "cancel").await.1["status"], "cancelled");
    for action in ["pause", "resume", "cancel"] {
        assert_eq!(
            act(&app, &id, action).await.0,
            StatusCode::CONFLICT,
            "{action} after cancel"
        );
    }
    let (s, v) = act(&app, &id, "stop").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["detail"][0]["loc"], json!(["body", "action"]));
}

#[tokio::test]
async fn a_paused_campaign_resumed_after_its_end_is_ended() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    act(&app, &id, "pause").await;
    app.clock.advance(Duration::days(4)).unwrap();
    assert_eq!(
        app.get(&format!("{}/{id}", campaigns_path())).await.1["status"],
        "paused"
    );
    assert_eq!(act(&app, &id, "resume").await.1["status"], "ended");
}

#[tokio::test]
async fn patch_only_while_scheduled_or_paused() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    let path = format!("{}/{id}", campaigns_path());
    let (s, v) = app
        .patch(&path, &json!({"description": null, "app_config": {"attempts_per_second": 5, "retry_config": {"max_retries": 3}}}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["description"], Value::Null);
    assert_eq!(v["app_config"]["attempts_per_second"], 5.0);
    assert_eq!(v["app_config"]["retry_config"]["max_retries"], 3);
    assert_eq!(
        v["app_config"]["retry_config"]["threshold_seconds"], 10,
        "kept"
    );
    assert_eq!(v["updated_by"], "alice");
    let (s, v) = app
        .patch(&path, &json!({"start_timestamp": "2026-03-02T14:00:00Z"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("campaign_patch_422", v);
    app.clock.advance(Duration::hours(1)).unwrap();
    let (s, v) = app.patch(&path, &json!({"name": "Later"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "active");
    insta::assert_json_snapshot!("campaign_patch_409", v);
    act(&app, &id, "pause").await;
    let (s, v) = app.patch(&path, &json!({"name": "Later"})).await;
    assert_eq!((s, v["name"].as_str()), (StatusCode::OK, Some("Later")));
}

#[tokio::test]
async fn list_filters_sorts_searches_and_pages() {
    let app = spawn_app().await;
    for name in ["Alpha", "beta", "Gamma sale"] {
        let body = with(campaign_body(), "/name", json!(name));
        assert_eq!(app.post(&campaigns_path(), &body).await.0, StatusCode::OK);
        app.clock.advance(Duration::seconds(1)).unwrap();
    }
    let names = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, v) = app.get(&campaigns_path()).await;
    assert_eq!(
        names(&v),
        ["Gamma sale", "beta", "Alpha"],
        "created_at desc by default"
    );
    let (_, v) = app
        .get(&format!("{}?sort_by=name&sort_order=asc", campaigns_path()))
        .await;
    assert_eq!(
        names(&v),
        ["Alpha", "beta", "Gamma sale"],
        "case-insensitive name order"
    );
    let (_, v) = app.get(&format!("{}?search=SALE", campaigns_path())).await;
    assert_eq!(names(&v), ["Gamma sale"]);
    let (_, v) = app
        .get(&format!(
            "{}?limit=1&offset=1&sort_by=name&sort_order=asc",
            campaigns_path()
        ))
        .await;
    assert_eq!(names(&v), ["beta"]);
    insta::assert_json_snapshot!("campaign_list_page", v, {".next_page_uri" => "[uri]", ".prev_page_uri" => "[uri]"});
    let next = v["next_page_uri"].as_str().unwrap();
    assert!(
        next.ends_with("?sort_by=name&sort_order=asc&offset=2&limit=1"),
        "{next}"
    );
    let (s, v) = app
        .get(&format!("{}?limit=101&offset=-1", campaigns_path()))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("campaign_list_422", v);
}

#[tokio::test]
async fn campaigns_survive_a_restart() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    act(&app, &id, "pause").await;
    let before = app.get(&format!("{}/{id}", campaigns_path())).await.1;
    let app = app.restart().await;
    let after = app.get(&format!("{}/{id}", campaigns_path())).await.1;
    assert_eq!(before, after);
    assert_eq!(after["status"], "paused");
}

#[tokio::test]
async fn statistics_show_the_budget_beside_the_capacity() {
    let app = spawn_app().await;
    let id = create_campaign(&app).await;
    let (_, v) = app.get(&format!("{}/{id}", campaigns_path())).await;
    let s = &v["statistics"];
    assert_eq!(s["users_total"], 0);
    assert_eq!(s["attempt_budget"], 0);
    // 2 dials/s over the open hours between 13:00Z Monday and 13:00Z Thursday in New York:
    // Monday 13:00Z-22:00Z is 09:00-17:00 EST (8 h, the start is 08:00 EST), Tuesday and
    // Wednesday 8 h each, Thursday until 13:00Z = 08:00 EST (0 h): 24 h.
    assert_eq!(s["attempt_capacity"], 2 * 24 * 3600);
    assert_eq!(s["capacity_warning"], Value::Null);
    let now = app.clock.now();
    assert_eq!(now.to_rfc3339(), "2026-03-02T12:00:00+00:00");
}
