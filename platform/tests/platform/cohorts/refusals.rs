//! Uploads refused or failed as a whole: each reason said, every problem of a form at once,
//! limits, media type, the key.

use super::*;

/// Uploads `csv` with `transformation` and answers the finished cohort.
async fn upload_and_finish(t: &TestApp, base: &str, csv: &[u8], transformation: &Value) -> Value {
    let tf = serde_json::to_vec(transformation).unwrap();
    let (s, v) = send_form(t, base, form("Failing", csv, &tf)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wait_done(t, base, v["cohort_id"].as_str().unwrap()).await
}

#[tokio::test]
async fn whole_upload_failures_say_why() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let mut unknown_override = transformation();
    unknown_override["app_overrides"]["voice"] = json!({"column_name": "greeting"});
    let mut not_utf8 = b"phone,id,first_name,plan,greeting\n+14155550100,u1,Ann,gold,\n".to_vec();
    not_utf8.extend_from_slice(b"+14155550101,u2,Jos\xe9,gold,\n");
    let cases: Vec<(&str, Vec<u8>, Value)> = vec![
        (
            "missing_columns",
            b"telephone,id,first_name\n+14155550100,u1,Ann\n".to_vec(),
            transformation(),
        ),
        (
            "no_data_row",
            b"phone,id,first_name,plan,greeting\r\n".to_vec(),
            transformation(),
        ),
        ("empty_file", Vec::new(), transformation()),
        (
            "no_header_row",
            b"+14155550100,u1,Ann,gold,Hi\n+14155550101,u2,Bo,gold,\n".to_vec(),
            transformation(),
        ),
        ("not_utf8", not_utf8, transformation()),
        (
            "not_utf8_header",
            b"ph\xf6ne,id\n+14155550100,u1\n".to_vec(),
            transformation(),
        ),
        (
            "unknown_override",
            USERS.as_bytes().to_vec(),
            unknown_override,
        ),
    ];
    for (case, csv, tf) in cases {
        let done = upload_and_finish(&t, &base, &csv, &tf).await;
        assert_eq!(done["status"], "failed", "{case}");
        assert_eq!(done["result"], Value::Null, "{case}");
        insta::assert_snapshot!(
            format!("failure_{case}"),
            done["failure_reason"].as_str().unwrap()
        );
        let id = done["cohort_id"].as_str().unwrap();
        let (s, _, _, body) = download(&t, &base, id, "rejected_records").await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{case}");
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "file_not_found");
        assert!(users_of(&t, id).await.is_empty(), "{case}: no users");
        // The uploaded file is kept, as uploaded.
        let (s, _, _, body) = download(&t, &base, id, "cohort").await;
        assert_eq!((s, body), (StatusCode::OK, csv));
    }
    let (_, failed) = t.get(&format!("{base}?limit=1")).await;
    insta::assert_json_snapshot!("failed_cohort", failed["items"][0]);
}

#[tokio::test]
async fn upload_validation_reports_every_problem_at_once() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    // Not JSON, bad name, unknown category, no cohort_file.
    let f = Form::new()
        .text("name", "bad/name")
        .text("cohort_category", "vip")
        .part(
            "cohort_transformation_file",
            Part::bytes(b"{\"phone_number\": ".to_vec()).file_name("t.json"),
        );
    let (s, v) = send_form(&t, &base, f).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("upload_422_not_json", v);
    // A JSON transformation with structural errors, and a part sent twice.
    let bad = json!({
        "phone_number": {"country_code": "XX"},
        "user_identifier": {"column_name": "id", "required": "yes"},
        "app_variables": {"plan": {"column_name": ""}}
    });
    let f = form(
        "Fine",
        b"phone\n+14155550100\n",
        &serde_json::to_vec(&bad).unwrap(),
    )
    .text("name", "Again");
    let (s, v) = send_form(&t, &base, f).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("upload_422_invalid_transformation", v);
    // Nothing at all.
    let (s, v) = send_form(&t, &base, Form::new()).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("upload_422_empty_form", v);
    // None of these left a cohort or a file behind.
    assert_eq!(count(&t, "cohorts").await, 0);
    assert_eq!(count(&t, "files").await, 0);
    assert_eq!(count(&t, "file_chunks").await, 0);
    let (_, list) = t.get(&base).await;
    assert_eq!(list["total"], 0);
}

#[tokio::test]
async fn unknown_parts_are_ignored_unless_strict() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let tf = serde_json::to_vec(&transformation()).unwrap();
    let (s, v) = send_form(
        &t,
        &base,
        form("Extra", USERS.as_bytes(), &tf).text("colour", "red"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let strict = spawn_with(|c| platform::config::PlatformConfig { strict: true, ..c }).await;
    let camp = create_campaign(&strict).await;
    let base = campaign_cohorts(&camp);
    let (s, v) = send_form(
        &strict,
        &base,
        form("Extra", USERS.as_bytes(), &tf).text("colour", "red"),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        v,
        json!({"detail": [{"loc": ["body", "colour"], "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}]})
    );
}

#[tokio::test]
async fn an_upload_that_is_not_multipart_is_415() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let (s, v) = t
        .post(
            &format!("{}/upload", campaign_cohorts(&camp)),
            &json!({"name": "x"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    insta::assert_json_snapshot!("upload_415", v);
    let resp = t
        .client
        .post(t.url(&format!("{}/upload", campaign_cohorts(&camp))))
        .header("x-api-key", KEY)
        .header("content-type", "multipart/form-data")
        .body("--x--")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("upload_no_boundary", resp.json::<Value>().await.unwrap());
    // A body cut off inside the file part: a clear 422, and nothing kept.
    let resp = t
        .client
        .post(t.url(&format!("{}/upload", campaign_cohorts(&camp))))
        .header("x-api-key", KEY)
        .header("content-type", "multipart/form-data; boundary=B")
        .body("--B\r\nContent-Disposition: form-data; name=\"cohort_file\"\r\n\r\nphone\n+1415")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("upload_truncated", resp.json::<Value>().await.unwrap());
    assert_eq!(count(&t, "cohorts").await, 0);
    assert_eq!(count(&t, "file_chunks").await, 0);
}

#[tokio::test]
async fn an_upload_without_a_key_is_401_before_the_body_is_read() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let tf = serde_json::to_vec(&transformation()).unwrap();
    let resp = t
        .client
        .post(t.url(&format!("{}/upload", campaign_cohorts(&camp))))
        .multipart(form("x", USERS.as_bytes(), &tf))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    insta::assert_json_snapshot!("upload_401", resp.json::<Value>().await.unwrap());
    assert_eq!(count(&t, "cohorts").await, 0);
}

#[tokio::test]
async fn uploads_over_the_limit_are_413_and_leave_nothing() {
    let t = spawn_with(|c| platform::config::PlatformConfig {
        max_upload_bytes: 4096,
        ..c
    })
    .await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let tf = serde_json::to_vec(&transformation()).unwrap();
    let mut big = String::from("phone,id,first_name,plan,greeting\n");
    while big.len() < 6000 {
        big.push_str("+14155550100,u1,Ann,gold,Hello\n");
    }
    // Content-Length says so: refused before reading.
    let (s, v) = send_form(&t, &base, form("Big", big.as_bytes(), &tf)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    insta::assert_json_snapshot!("upload_413", v);
    // No length (chunked): refused once the count passes the limit, after storing some.
    let mut multipart = Vec::new();
    multipart
        .extend_from_slice(b"--B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nBig\r\n");
    multipart.extend_from_slice(
        b"--B\r\nContent-Disposition: form-data; name=\"cohort_file\"; filename=\"u.csv\"\r\n\r\n",
    );
    multipart.extend_from_slice(big.as_bytes());
    multipart.extend_from_slice(b"\r\n--B--\r\n");
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        multipart.chunks(512).map(|c| Ok(c.to_vec())).collect();
    let resp = t
        .client
        .post(t.url(&format!("{base}/upload")))
        .header("x-api-key", KEY)
        .header("content-type", "multipart/form-data; boundary=B")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(resp.json::<Value>().await.unwrap(), v);
    assert_eq!(count(&t, "cohorts").await, 0);
    assert_eq!(count(&t, "files").await, 0);
    assert_eq!(count(&t, "file_chunks").await, 0);
    // Within the limit it is accepted.
    let (s, _) = send_form(&t, &base, form("Small", USERS.as_bytes(), &tf)).await;
    assert_eq!(s, StatusCode::OK);
}
