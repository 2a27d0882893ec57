//! Lists in upload order, and the files exactly as uploaded.

use super::*;

#[tokio::test]
async fn lists_page_in_upload_order() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let mut ids = Vec::new();
    for i in 0..5 {
        let (s, v) = t
            .post(
                &format!("{base}/stream"),
                &json!({"name": format!("Batch {i}"), "users": stream_users(1)}),
            )
            .await;
        assert_eq!(s, StatusCode::OK);
        ids.push(v["cohort_id"].as_str().unwrap().to_string());
        t.clock.advance(chrono::Duration::seconds(1)).unwrap();
    }
    let (s, first) = t.get(&format!("{base}?limit=2")).await;
    assert_eq!(s, StatusCode::OK);
    let host = format!("http://{}", t.addr);
    let mut redacted = first.clone();
    for k in ["next_page_uri", "prev_page_uri"] {
        if let Some(u) = redacted[k].as_str() {
            redacted[k] = json!(u.replace(&host, "http://[host]"));
        }
    }
    insta::assert_json_snapshot!("list_first_page", redacted);
    // Walk forward by next_page_uri, then back by prev_page_uri.
    let mut seen = Vec::new();
    let mut page = first;
    loop {
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["cohort_id"].as_str().unwrap().to_string()),
        );
        let Some(next) = page["next_page_uri"].as_str() else {
            break;
        };
        let path = next.strip_prefix(&host).unwrap().to_string();
        page = t.get(&path).await.1;
    }
    assert_eq!(seen, ids);
    let mut back = Vec::new();
    loop {
        let mut items: Vec<String> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cohort_id"].as_str().unwrap().to_string())
            .collect();
        items.extend(back);
        back = items;
        let Some(prev) = page["prev_page_uri"].as_str() else {
            break;
        };
        page = t.get(prev.strip_prefix(&host).unwrap()).await.1;
    }
    assert_eq!(back, ids);
    let (s, v) = t.get(&format!("{base}?limit=0&offset=-1")).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("list_422", v);
}

#[tokio::test]
async fn files_come_back_exactly_as_uploaded() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    // Larger than two chunks, with every byte value a UTF-8 text can hold nearby.
    let mut csv = String::from("phone,id,first_name,plan,greeting\r\n");
    let mut i = 0u64;
    while csv.len() < (5 << 20) / 2 {
        csv.push_str(&format!(
            "+1415{:07},id-{i},\"Ñame, {i}\",gold,\"¡hola! 👋 \"\"{i}\"\"\"\r\n",
            i % 10_000_000
        ));
        i += 1;
    }
    let tf = b"{ \"phone_number\" : {\"column_name\": \"phone\"},\n  \"user_identifier\": {\"column_name\": \"id\"} }\n";
    let (s, v) = send_form(&t, &base, form("Large", csv.as_bytes(), tf)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let id = v["cohort_id"].as_str().unwrap();
    let done = wait_done(&t, &base, id).await;
    assert_eq!(done["result"]["total_records"], i);
    assert_eq!(done["result"]["rejected_records"], 0);
    let (s, ct, cd, body) = download(&t, &base, id, "cohort").await;
    assert_eq!(
        (s, ct.as_str()),
        (StatusCode::OK, "text/csv; charset=utf-8")
    );
    assert_eq!(cd, format!("attachment; filename=\"{id}.csv\""));
    assert!(body == csv.as_bytes(), "the CSV round trip differs");
    let (s, ct, cd, body) = download(&t, &base, id, "cohort_transformation").await;
    assert_eq!((s, ct.as_str()), (StatusCode::OK, "application/json"));
    assert_eq!(
        cd,
        format!("attachment; filename=\"{id}-cohort_transformation.json\"")
    );
    assert_eq!(body, tf);
    let (s, _, _, body) = download(&t, &base, id, "rejected_records").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], "file_not_found");
    // Bad queries.
    let (s, v) = t
        .get(&format!("{base}/{id}/files?file_type=everything"))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("files_422_file_type", v);
    let (s, v) = t.get(&format!("{base}/{id}/files")).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("files_422_missing", v);
}
