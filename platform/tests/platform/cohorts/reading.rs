//! Reading an upload: rows checked and kept, rejected with their reasons, numbers repeated in a
//! cohort.

use super::*;

#[tokio::test]
async fn an_upload_is_answered_processing_and_completes_with_its_rejections() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let (s, answer) = upload(&t, &base, "March list", USERS).await;
    assert_eq!(s, StatusCode::OK);
    insta::assert_json_snapshot!("upload_answer", answer);
    let id = answer["cohort_id"].as_str().unwrap();
    let done = wait_done(&t, &base, id).await;
    insta::assert_json_snapshot!("upload_completed", done);
    let (s, ct, cd, body) = download(&t, &base, id, "rejected_records").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(ct, "text/csv; charset=utf-8");
    assert_eq!(
        cd,
        format!("attachment; filename=\"{id}-rejected_records.csv\"")
    );
    insta::assert_snapshot!("upload_rejected_records", text(&body));

    let users = users_of(&t, id).await;
    let summary: Vec<Value> = users
        .iter()
        .map(|u| {
            json!([
                u.row_no,
                u.phone_number,
                u.user_identifier,
                u.app_variables,
                u.app_overrides
            ])
        })
        .collect();
    assert_eq!(
        Value::Array(summary),
        json!([
            [1, "+14155550100", "u1", {"first_name": "Ann", "plan": "gold"}, {"initial_bot_message": "Hello Ann"}],
            [2, "+14155550101", "u2", {"plan": "silver"}, {}],
            [9, "+14155550105", "u9", {"first_name": "Ivy", "plan": "gold"}, {"initial_bot_message": "Yo"}]
        ])
    );
}

#[tokio::test]
async fn bom_quoted_fields_and_crlf_are_read_and_kept() {
    let t = spawn_app().await;
    let dep = create_deployment(&t, "Front desk", "+14155559999").await;
    let base = deployment_cohorts(&dep);
    let csv = "\u{feff}phone,id,first_name,plan,greeting\r\n\
               \"+1 (415) 555-0100\",\"u1\",\"Smith, Ann\",gold,\"She said \"\"hi\"\"\r\nthen left\"\r\n\
               \"bad, number\",u2,\"Jones, Bo\",gold,\"multi\nline\"\r\n\
               4155550101,u3,Zoë,\"gold\",\r\n";
    let id = upload_ok(&t, &base, "Quoted", csv).await;
    let done = wait_done(&t, &base, &id).await;
    assert_eq!(
        done["result"],
        json!({"total_records": 3, "valid_records": 2, "rejected_records": 1})
    );
    let users = users_of(&t, &id).await;
    assert_eq!(users[0].phone_number, "+14155550100");
    assert_eq!(users[0].app_variables["first_name"], "Smith, Ann");
    assert_eq!(
        users[0].app_overrides.initial_bot_message.as_deref(),
        Some("She said \"hi\"\r\nthen left")
    );
    assert_eq!(users[1].row_no, 3);
    assert_eq!(users[1].app_variables["first_name"], "Zoë");
    // The rejected file keeps the original values, quoted where they need it.
    let (_, _, _, body) = download(&t, &base, &id, "rejected_records").await;
    let mut r = csv::Reader::from_reader(&body[..]);
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "phone",
            "id",
            "first_name",
            "plan",
            "greeting",
            "rejected_reason"
        ]
    );
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(&rows[0][0], "bad, number");
    assert_eq!(&rows[0][2], "Jones, Bo");
    assert_eq!(&rows[0][4], "multi\nline");
    assert!(
        rows[0][5].contains("'bad, number' contains 'b'"),
        "{}",
        &rows[0][5]
    );
    // The cohort file comes back exactly as uploaded, BOM and CRLF included.
    let (s, ct, _, body) = download(&t, &base, &id, "cohort").await;
    assert_eq!(
        (s, ct.as_str()),
        (StatusCode::OK, "text/csv; charset=utf-8")
    );
    assert_eq!(body, csv.as_bytes());
}

#[tokio::test]
async fn a_number_repeated_in_a_cohort_is_rejected_after_its_first_row() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let csv = "\
phone,id,first_name,plan,greeting
+14155550100,a,,gold,
(415) 555-0100,b,,gold,
0014155550100,c,,gold,
4155550199,d,,gold,
bad,e,,gold,
+1 415 555 0199,f,,gold,
";
    let id = upload_ok(&t, &base, "Dups", csv).await;
    let done = wait_done(&t, &base, &id).await;
    assert_eq!(
        done["result"],
        json!({"total_records": 6, "valid_records": 2, "rejected_records": 4})
    );
    let (_, _, _, body) = download(&t, &base, &id, "rejected_records").await;
    insta::assert_snapshot!("duplicates_rejected_records", text(&body));
    let ids: Vec<_> = users_of(&t, &id)
        .await
        .into_iter()
        .map(|u| u.user_identifier.unwrap())
        .collect();
    assert_eq!(ids, ["a", "d"]);
}

#[tokio::test]
async fn numbers_repeated_across_many_batches_are_found() {
    // More rows than one write batch, with every number appearing twice far apart: the
    // duplicate of an early row is confirmed against rows already committed.
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let n = 12_000u64;
    let mut csv = String::from("phone,id,first_name,plan,greeting\n");
    for round in 0..2 {
        for i in 0..n {
            csv.push_str(&format!("+1415{:07},r{round}-{i},,gold,\n", i));
        }
    }
    let id = upload_ok(&t, &base, "Big dups", &csv).await;
    let done = wait_done(&t, &base, &id).await;
    assert_eq!(
        done["result"],
        json!({"total_records": 2 * n, "valid_records": n, "rejected_records": n})
    );
    let (_, _, _, body) = download(&t, &base, &id, "rejected_records").await;
    let mut r = csv::Reader::from_reader(&body[..]);
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len() as u64, n);
    assert_eq!(&rows[0][1], "r1-0");
    assert_eq!(
        &rows[0][5],
        "duplicate phone number: +14150000000 is already in data row 1"
    );
    assert_eq!(
        &rows[n as usize - 1][5],
        format!(
            "duplicate phone number: +1415{:07} is already in data row {n}",
            n - 1
        )
    );
}
