//! JSON streams of users: 1 to 1000, each checked, the users kept as a CSV.

use super::*;

#[tokio::test]
async fn streams_take_1_to_1000_users() {
    let t = spawn_app().await;
    let dep = create_deployment(&t, "Desk", "+14155559999").await;
    let path = format!("{}/stream", deployment_cohorts(&dep));
    let (s, v) = t.post(&path, &json!({"name": "None", "users": []})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("stream_0_users", v);
    let (s, v) = t
        .post(
            &path,
            &json!({"name": "Too many", "users": stream_users(1001)}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("stream_1001_users", v);
    let one = json!({"name": "One", "users": [{
        "phone_number": "(415) 555-0100",
        "user_identifier": "s1",
        "app_variables": {"first_name": "Ann", "score": 7, "tags": ["a", "b"]},
        "app_overrides": {"initial_state_name": "greeting"}
    }], "country_code": "US"});
    let (s, v) = t.post(&path, &one).await;
    assert_eq!(s, StatusCode::OK);
    insta::assert_json_snapshot!("stream_1_user", v);
    let users = users_of(&t, v["cohort_id"].as_str().unwrap()).await;
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].phone_number, "+14155550100");
    assert_eq!(
        Value::Object(users[0].app_variables.clone()),
        json!({"first_name": "Ann", "score": 7, "tags": ["a", "b"]})
    );
    assert_eq!(
        users[0].app_overrides.initial_state_name.as_deref(),
        Some("greeting")
    );
    let (s, v) = t
        .post(
            &path,
            &json!({"name": "Thousand", "users": stream_users(1000)}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["result"],
        json!({"total_records": 1000, "valid_records": 1000, "rejected_records": 0})
    );
    let (s, _, _, body) = download(
        &t,
        &deployment_cohorts(&dep),
        v["cohort_id"].as_str().unwrap(),
        "rejected_records",
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!(
        "rejected_records_none",
        serde_json::from_slice::<Value>(&body).unwrap()
    );
}

#[tokio::test]
async fn streams_reject_bad_and_repeated_numbers_and_keep_the_users_as_csv() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let body = json!({"name": "Mixed", "cohort_category": "cohort", "users": [
        {"phone_number": "+14155550100", "user_identifier": "a", "app_variables": {"note": "x, \"y\""}},
        {"phone_number": "4155550101", "user_identifier": "b"},
        {"phone_number": "+1 415 555 0100", "user_identifier": "c"},
        {"phone_number": "", "user_identifier": "d"},
        {"phone_number": "+442079460018", "app_overrides": {"initial_bot_message": "Hi"}}
    ]});
    let (s, v) = t.post(&format!("{base}/stream"), &body).await;
    assert_eq!(s, StatusCode::OK);
    insta::assert_json_snapshot!("stream_mixed", v);
    let id = v["cohort_id"].as_str().unwrap();
    let (s, ct, cd, csv) = download(&t, &base, id, "cohort").await;
    assert_eq!(
        (s, ct.as_str()),
        (StatusCode::OK, "text/csv; charset=utf-8")
    );
    assert_eq!(cd, format!("attachment; filename=\"{id}.csv\""));
    insta::assert_snapshot!("stream_cohort_file", text(&csv));
    let (_, _, _, rejected) = download(&t, &base, id, "rejected_records").await;
    insta::assert_snapshot!("stream_rejected_records", text(&rejected));
    let (s, _, _, body) = download(&t, &base, id, "cohort_transformation").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!(
        "stream_no_transformation",
        serde_json::from_slice::<Value>(&body).unwrap()
    );
    // Bad stream bodies are 422s in the usual shape.
    let (s, v) = t
        .post(
            &format!("{base}/stream"),
            &json!({"name": "x", "users": [{"user_identifier": 5}], "country_code": "ZZ"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("stream_422", v);
}
