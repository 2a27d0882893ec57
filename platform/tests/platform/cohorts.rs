//! Cohorts over HTTP: multipart upload and background processing, row rejections and
//! whole-upload failures, stream, list, get, files, limits, restarts, encryption at rest,
//! and the store functions the engine and inbound routing use.

use std::time::Duration;

use contracts::clock::Stopwatch;
use platform::store::WorkspaceRef;
use platform::store::cohorts::{self as cohort_store, CohortUser};
use reqwest::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

fn campaign_cohorts(id: &str) -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/campaigns/{id}/cohorts")
}

fn deployment_cohorts(id: &str) -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{id}/cohorts")
}

/// The transformation most tests use: phone (US national numbers allowed), a required id,
/// a required `plan`, an optional `first_name`, and the greeting override.
fn transformation() -> Value {
    json!({
        "phone_number": {"column_name": "phone", "country_code": "US"},
        "user_identifier": {"column_name": "id", "required": true},
        "app_variables": {
            "first_name": {"column_name": "first_name"},
            "plan": {"column_name": "plan", "required": true}
        },
        "app_overrides": {"initial_bot_message": {"column_name": "greeting"}}
    })
}

fn form(name: &str, csv: &[u8], transformation: &[u8]) -> Form {
    Form::new()
        .text("name", name.to_string())
        .part(
            "cohort_file",
            Part::bytes(csv.to_vec())
                .file_name("users.csv")
                .mime_str("text/csv")
                .unwrap(),
        )
        .part(
            "cohort_transformation_file",
            Part::bytes(transformation.to_vec())
                .file_name("transformation.json")
                .mime_str("application/json")
                .unwrap(),
        )
}

async fn send_form(app: &TestApp, base: &str, form: Form) -> (StatusCode, Value) {
    let resp = app
        .client
        .post(app.url(&format!("{base}/upload")))
        .header("x-api-key", KEY)
        .multipart(form)
        .send()
        .await
        .expect("upload sent");
    let status = resp.status();
    let bytes = resp.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn upload(app: &TestApp, base: &str, name: &str, csv: &str) -> (StatusCode, Value) {
    let t = serde_json::to_vec(&transformation()).unwrap();
    send_form(app, base, form(name, csv.as_bytes(), &t)).await
}

/// Uploads and answers the cohort id (asserting a 200 `processing` answer).
async fn upload_ok(app: &TestApp, base: &str, name: &str, csv: &str) -> String {
    let (s, v) = upload(app, base, name, csv).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "processing");
    v["cohort_id"].as_str().unwrap().to_string()
}

/// Polls the cohort until it is no longer `processing` (real time, at most 60 s).
async fn wait_done(app: &TestApp, base: &str, id: &str) -> Value {
    let watch = Stopwatch::start();
    loop {
        let (s, v) = app.get(&format!("{base}/{id}")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if v["status"] != "processing" {
            return v;
        }
        assert!(
            watch.elapsed() < Duration::from_secs(60),
            "cohort {id} still processing after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Downloads a file: status, content type, content disposition and body.
async fn download(
    app: &TestApp,
    base: &str,
    id: &str,
    file_type: &str,
) -> (StatusCode, String, String, Vec<u8>) {
    let resp = app
        .client
        .get(app.url(&format!("{base}/{id}/files?file_type={file_type}")))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (ct, cd) = (header("content-type"), header("content-disposition"));
    if status == StatusCode::OK {
        assert_eq!(
            header("content-length"),
            resp.content_length().unwrap().to_string()
        );
    }
    let body = resp.bytes().await.unwrap().to_vec();
    (status, ct, cd, body)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn ws() -> WorkspaceRef {
    WorkspaceRef::new(ORG, WS)
}

/// Every user of a cohort, opened, in row order (through the engine's functions).
async fn users_of(app: &TestApp, cohort_id: &str) -> Vec<CohortUser> {
    let keys = app.app.keys.workspace(&ws(), None).await.unwrap();
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let id = cohort_id.to_string();
        let batch = app
            .app
            .store
            .read(move |c| cohort_store::users_after(c, &id, after, 2))
            .await
            .unwrap();
        let Some(last) = batch.last() else { break };
        after = last.row_no;
        out.extend(batch.iter().map(|u| u.open(&keys).unwrap()));
    }
    let id = cohort_id.to_string();
    let n = app
        .app
        .store
        .read(move |c| cohort_store::count_users(c, &id))
        .await
        .unwrap();
    assert_eq!(n as usize, out.len());
    out
}

/// Rows of a table.
async fn count(app: &TestApp, table: &'static str) -> i64 {
    app.app
        .store
        .read(move |c| {
            Ok::<_, platform::store::StoreError>(c.query_row(
                &format!("SELECT COUNT(*) FROM {table}"),
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap()
}

const USERS: &str = "\
phone,id,first_name,plan,greeting
(415) 555-0100,u1,Ann,gold,Hello Ann
+1 415 555 0101,u2,,silver,
415-555-0102,,Cy,gold,Hi
415.555.0103,u4,Dee,,Hey
not-a-number,u5,Eve,gold,
,u6,Fay,gold,
+14155550100,u7,Gus,gold,
4155550104,u8,Hal,bronze
4155550105,u9,Ivy,gold,Yo
";

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

#[tokio::test]
async fn ended_and_cancelled_campaigns_take_no_cohorts() {
    let t = spawn_app().await;
    let cancelled = create_campaign(&t).await;
    let (s, _) = t
        .put(
            &format!("{}/{cancelled}/status", campaigns_path()),
            &json!({"action": "cancel"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, v) = upload(&t, &campaign_cohorts(&cancelled), "Late", USERS).await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!("upload_409_cancelled", v);
    let stream = json!({"name": "Late", "users": [{"phone_number": "+14155550100"}]});
    let (s, v2) = t
        .post(&format!("{}/stream", campaign_cohorts(&cancelled)), &stream)
        .await;
    assert_eq!((s, &v2), (StatusCode::CONFLICT, &v));

    let ended = create_campaign(&t).await;
    // A paused campaign still takes cohorts.
    t.put(
        &format!("{}/{ended}/status", campaigns_path()),
        &json!({"action": "pause"}),
    )
    .await;
    let (s, _) = upload(&t, &campaign_cohorts(&ended), "Paused", USERS).await;
    assert_eq!(s, StatusCode::OK);
    t.put(
        &format!("{}/{ended}/status", campaigns_path()),
        &json!({"action": "resume"}),
    )
    .await;
    t.clock.advance(chrono::Duration::days(4)).unwrap();
    let (s, v) = upload(&t, &campaign_cohorts(&ended), "Late", USERS).await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!("upload_409_ended", v);
    // Reading them is still allowed.
    let (s, list) = t.get(&campaign_cohorts(&ended)).await;
    assert_eq!((s, list["total"].clone()), (StatusCode::OK, json!(1)));
}

#[tokio::test]
async fn unknown_parents_other_workspaces_and_other_parents_are_404() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let other_camp = create_campaign(&t).await;
    let id = upload_ok(&t, &campaign_cohorts(&camp), "Mine", USERS).await;
    wait_done(&t, &campaign_cohorts(&camp), &id).await;

    let (s, v) = upload(&t, &campaign_cohorts("camp-unknown"), "X", USERS).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!("upload_404_campaign", v);
    let (s, v) = upload(&t, &deployment_cohorts("dep-unknown"), "X", USERS).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!("upload_404_deployment", v);
    let (s, v) = t
        .get(&format!("{}/{id}", campaign_cohorts(&other_camp)))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!("get_404_other_parent", v);
    let (s, v) = t
        .get(&format!("{}/coh-unknown", campaign_cohorts(&camp)))
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("cohort_not_found"))
    );
    let (s, _, _, _) = download(&t, &campaign_cohorts(&other_camp), &id, "cohort").await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Bob's workspace: the same ids under his path are unknown.
    let bob = |p: &str| {
        p.replace(
            &format!("/workspaces/{WS}/"),
            &format!("/workspaces/{WS2}/"),
        )
    };
    for path in [
        campaign_cohorts(&camp),
        format!("{}/{id}", campaign_cohorts(&camp)),
        format!("{}/{id}/files?file_type=cohort", campaign_cohorts(&camp)),
    ] {
        let (s, v) = t.call(Method::GET, &bob(&path), Some(KEY2), None).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}: {v}");
        assert_eq!(v["error"]["code"], "campaign_not_found");
        // Alice's key does not open Bob's workspace at all.
        let (s, _) = t.call(Method::GET, &bob(&path), Some(KEY), None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn a_stop_file_is_a_cohort_of_its_own_category() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let users = upload_ok(&t, &base, "Users", USERS).await;
    wait_done(&t, &base, &users).await;
    let tf = serde_json::to_vec(&json!({"phone_number": {"column_name": "number"}})).unwrap();
    let f = form(
        "Do not call",
        b"number\n+14155550100\n+14155550105\n+19995550000\n",
        &tf,
    )
    .text("cohort_category", "stop_file");
    let (s, v) = send_form(&t, &base, f).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["cohort_category"], "stop_file");
    let done = wait_done(&t, &base, v["cohort_id"].as_str().unwrap()).await;
    insta::assert_json_snapshot!("stop_file_completed", done);
    // Campaign statistics count the users of cohorts minus those in stop files. The users
    // were admitted before the stop file completed: the engine excludes them at its next
    // step, which this waits for (real time, at most 60 s).
    let watch = Stopwatch::start();
    let c = loop {
        let (_, c) = t.get(&format!("{}/{camp}", campaigns_path())).await;
        if c["statistics"]["users_excluded"] == 2 {
            break c;
        }
        assert!(
            watch.elapsed() < Duration::from_secs(60),
            "the stop file excluded no users in 60 s: {c}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(c["statistics"]["users_total"], 1);
    assert_eq!(c["statistics"]["users_excluded"], 2);
    // The engine's check.
    let keys = t.app.keys.workspace(&ws(), None).await.unwrap();
    for (number, stopped) in [("+14155550100", true), ("+14155550101", false)] {
        let (camp, hash) = (camp.clone(), keys.lookup_hash(number));
        let found = t
            .app
            .store
            .read(move |c| cohort_store::in_stop_file(c, &camp, &hash))
            .await
            .unwrap();
        assert_eq!(found, stopped, "{number}");
    }
}

fn stream_users(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"phone_number": format!("+1415555{:04}", i), "user_identifier": format!("s{i}")}))
        .collect()
}

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

#[tokio::test]
async fn a_restart_while_processing_loses_nothing() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    // Hold the worker: the upload is accepted and waits, `processing`.
    t.app.cohorts.shutdown().await;
    let id = upload_ok(&t, &base, "Across a restart", USERS).await;
    let (_, v) = t.get(&format!("{base}/{id}")).await;
    assert_eq!(v["status"], "processing");
    let (s, _, _, body) = download(&t, &base, &id, "rejected_records").await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!(
        "rejected_records_409",
        serde_json::from_slice::<Value>(&body).unwrap()
    );
    // The file is stored before the answer: it can be read back already.
    let (s, _, _, body) = download(&t, &base, &id, "cohort").await;
    assert_eq!((s, body), (StatusCode::OK, USERS.as_bytes().to_vec()));
    let t = t.restart().await;
    let done = wait_done(&t, &base, &id).await;
    assert_eq!(
        done["result"],
        json!({"total_records": 9, "valid_records": 3, "rejected_records": 6})
    );
}

#[tokio::test]
async fn partial_work_is_redone_from_the_start_after_a_restart() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let id = upload_ok(&t, &base, "Redo", USERS).await;
    let before = wait_done(&t, &base, &id).await;
    let (_, _, _, rejected_before) = download(&t, &base, &id, "rejected_records").await;
    let users_before = users_of(&t, &id).await;
    // Simulate a stop in the middle: back to `processing` with some users and the rejected
    // file already written; and an upload cut short while its file was arriving.
    t.app.cohorts.shutdown().await;
    let id2 = id.clone();
    t.app
        .store
        .write(move |c| {
            c.execute(
                "UPDATE cohorts SET status = 'processing', total_records = NULL, valid_records = NULL, rejected_records = NULL WHERE id = ?1",
                [&id2],
            )?;
            c.execute("DELETE FROM cohort_users WHERE cohort_id = ?1 AND row_no > 1", [&id2])?;
            c.execute(
                "INSERT INTO cohorts (id, seq, org_id, workspace_id, parent_kind, parent_id, name, status, source_type, category, created_by, updated_by, created_ms, updated_ms)
                 VALUES ('coh-cut-short', 99, 'org-1', 'ws-1', 'campaign', 'x', '', 'uploading', 'file_upload', 'cohort', 'a', 'a', 0, 0)",
                [],
            )?;
            c.execute("INSERT INTO files (cohort_id, kind) VALUES ('coh-cut-short', 'cohort')", [])?;
            c.execute(
                "INSERT INTO file_chunks (file_id, seq, data) VALUES (last_insert_rowid(), 0, x'00')",
                [],
            )?;
            Ok::<_, platform::store::StoreError>(())
        })
        .await
        .unwrap();
    let (_, v) = t.get(&format!("{base}/{id}")).await;
    assert_eq!(v["status"], "processing");
    let t = t.restart().await;
    let after = wait_done(&t, &base, &id).await;
    assert_eq!(after["result"], before["result"]);
    assert_eq!(
        download(&t, &base, &id, "rejected_records").await.3,
        rejected_before
    );
    assert_eq!(users_of(&t, &id).await, users_before);
    // The cut-short upload is gone with its chunks.
    let left = t
        .app
        .store
        .read(|c| {
            Ok::<_, platform::store::StoreError>(c.query_row(
                "SELECT COUNT(*) FROM cohorts WHERE id = 'coh-cut-short'",
                [],
                |r| r.get::<_, i64>(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(
        count(&t, "files").await,
        3,
        "cohort, transformation, rejected"
    );
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn no_plaintext_number_or_name_reaches_the_database_file() {
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    let csv = "phone,id,first_name,plan,greeting\n\
               +14155557391,cust-8c1e,Zebediah,platinum,Welcome back Zebediah\n\
               +14155557391,cust-dup1,Quillon,gold,\n\
               4155557392,cust-3f5a,Marguerite,gold,\n\
               bad-4155557393,cust-bad,Ottoline,gold,\n";
    let id = upload_ok(&t, &base, "Private", csv).await;
    wait_done(&t, &base, &id).await;
    let (s, _) = t
        .post(
            &format!("{base}/stream"),
            &json!({"name": "Private stream", "users": [{"phone_number": "+14155557394", "user_identifier": "cust-9d2b", "app_variables": {"first_name": "Thaddeus"}}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    // A file without a header row fails as a whole; its first row must not leak either.
    let headerless = "+14155557395,cust-7e4f,Wilhelmina,gold,\n";
    let id = upload_ok(&t, &base, "Headerless", headerless).await;
    assert_eq!(wait_done(&t, &base, &id).await["status"], "failed");
    let needles = [
        "4155557395",
        "Wilhelmina",
        "cust-7e4f",
        "4155557391",
        "4155557392",
        "4155557393",
        "4155557394",
        "Zebediah",
        "Quillon",
        "Marguerite",
        "Ottoline",
        "Thaddeus",
        "cust-8c1e",
        "cust-3f5a",
        "cust-9d2b",
        "platinum",
    ];
    let scan = |when: &str| {
        let mut scanned = 0;
        for suffix in ["", "-wal"] {
            let mut path = t.db.clone().into_os_string();
            path.push(suffix);
            if let Ok(bytes) = std::fs::read(&path) {
                scanned += bytes.len();
                for n in needles {
                    assert!(
                        !contains(&bytes, n),
                        "{when}: '{n}' in plaintext in {path:?}"
                    );
                }
            }
        }
        assert!(scanned > 0, "{when}: nothing scanned");
    };
    scan("before a checkpoint");
    t.app.store.checkpoint().unwrap();
    scan("after a checkpoint");
}

#[tokio::test]
async fn deleting_a_deployment_deletes_its_cohorts_users_and_files() {
    let t = spawn_app().await;
    let dep = create_deployment(&t, "Desk", "+14155559999").await;
    let keep = create_deployment(&t, "Other", "+14155559998").await;
    let id = upload_ok(&t, &deployment_cohorts(&dep), "Callers", USERS).await;
    wait_done(&t, &deployment_cohorts(&dep), &id).await;
    let kept = upload_ok(&t, &deployment_cohorts(&keep), "Kept", USERS).await;
    wait_done(&t, &deployment_cohorts(&keep), &kept).await;
    let fk: i64 = t
        .app
        .store
        .read(|c| {
            Ok::<_, platform::store::StoreError>(
                c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?,
            )
        })
        .await
        .unwrap();
    assert_eq!(fk, 1);
    let (s, _) = t.delete(&format!("{}/{dep}", deployments_path())).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, v) = t.get(&format!("{}/{id}", deployment_cohorts(&dep))).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("deployment_not_found"))
    );
    // Only the other deployment's cohort is left: 1 cohort, its 3 files, its 3 users.
    assert_eq!(count(&t, "cohorts").await, 1);
    assert_eq!(count(&t, "files").await, 3);
    assert_eq!(count(&t, "cohort_users").await, 3);
    let chunks: i64 = t
        .app
        .store
        .read(|c| {
            Ok::<_, platform::store::StoreError>(c.query_row(
                "SELECT COUNT(*) FROM file_chunks k JOIN files f ON f.id = k.file_id",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(count(&t, "file_chunks").await, chunks, "no orphan chunks");
}

#[tokio::test]
async fn callers_are_found_in_the_latest_cohort_of_a_deployment() {
    let t = spawn_app().await;
    let dep = create_deployment(&t, "Desk", "+14155559999").await;
    let other = create_deployment(&t, "Other", "+14155559998").await;
    let base = deployment_cohorts(&dep);
    let first = upload_ok(&t, &base, "First", USERS).await;
    wait_done(&t, &base, &first).await;
    let csv = "phone,id,first_name,plan,greeting\n+14155550100,newer,Ann,platinum,\n";
    let second = upload_ok(&t, &base, "Second", csv).await;
    wait_done(&t, &base, &second).await;
    // A stop file and another deployment's cohort do not count.
    let (s, _) = t
        .post(&format!("{base}/stream"), &json!({"name": "Stop", "cohort_category": "stop_file", "users": [{"phone_number": "+14155550100", "user_identifier": "stop"}]}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = t
        .post(&format!("{}/stream", deployment_cohorts(&other)), &json!({"name": "Other", "users": [{"phone_number": "+14155550101", "user_identifier": "elsewhere"}]}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let keys = t.app.keys.workspace(&ws(), None).await.unwrap();
    let lookup = |number: &str| {
        let (dep, hash, store) = (dep.clone(), keys.lookup_hash(number), t.app.store.clone());
        async move {
            store
                .read(move |c| cohort_store::latest_deployment_user(c, &ws(), &dep, &hash))
                .await
                .unwrap()
        }
    };
    let found = lookup("+14155550100").await.unwrap();
    assert_eq!(found.cohort_id, second);
    assert_eq!(
        found.open(&keys).unwrap().user_identifier.as_deref(),
        Some("newer")
    );
    let found = lookup("+14155550101").await.unwrap();
    assert_eq!(found.cohort_id, first);
    assert_eq!(
        found.open(&keys).unwrap().user_identifier.as_deref(),
        Some("u2")
    );
    assert!(
        lookup("+14155550102").await.is_none(),
        "a rejected row is no user"
    );
    // Another workspace's hash of the same number finds nothing.
    let bob = t
        .app
        .keys
        .workspace(&WorkspaceRef::new(ORG, WS2), None)
        .await
        .unwrap();
    let (dep2, hash) = (dep.clone(), bob.lookup_hash("+14155550100"));
    let none = t
        .app
        .store
        .read(move |c| {
            cohort_store::latest_deployment_user(c, &WorkspaceRef::new(ORG, WS2), &dep2, &hash)
        })
        .await
        .unwrap();
    assert!(none.is_none());
    let completed = t
        .app
        .store
        .read(move |c| {
            cohort_store::completed_cohorts(
                c,
                &cohort_store::Parent::deployment(dep.clone()),
                contracts::wire::CohortCategory::Cohort,
            )
        })
        .await
        .unwrap();
    assert_eq!(
        completed.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        [first, second]
    );
}

/// A key service that can be made to fail: the local service with the test app's master
/// key, behind a switch.
#[derive(Debug)]
struct Switchable {
    inner: platform::keys::LocalKeyService,
    mode: std::sync::Mutex<Option<platform::keys::KeyServiceError>>,
    /// Decrypts answered with the error of `mode`.
    failed: std::sync::atomic::AtomicUsize,
}

impl platform::keys::DataKeySource for Switchable {
    fn provider(&self) -> &'static str {
        "local"
    }

    fn configured_key(&self, _ws: &WorkspaceRef) -> Option<(String, String)> {
        None
    }

    fn decrypt<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
    ) -> platform::keys::KeyFuture<'a, zeroize::Zeroizing<[u8; 32]>> {
        if let Some(e) = self.mode.lock().unwrap().clone() {
            self.failed
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Box::pin(async move { Err(e) });
        }
        self.inner.decrypt(ws, alias, encrypted_key, trace_id)
    }

    fn generate<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
    ) -> platform::keys::KeyFuture<'a, (String, String, zeroize::Zeroizing<[u8; 32]>)> {
        self.inner.generate(ws, trace_id)
    }

    fn cache_lifetime(&self) -> chrono::Duration {
        chrono::Duration::days(1)
    }
}

#[tokio::test]
async fn processing_waits_for_an_unavailable_key_service_and_fails_on_a_refusal() {
    use platform::keys::KeyServiceError;
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    // The workspace's data key exists (the campaign's first upload makes it) and is cached.
    let first = upload_ok(&t, &base, "First", USERS).await;
    wait_done(&t, &base, &first).await;
    let mut key_file = t.db.clone().into_os_string();
    key_file.push(".key");
    let master: [u8; 32] = std::fs::read(&key_file).unwrap().try_into().unwrap();
    let service = std::sync::Arc::new(Switchable {
        inner: platform::keys::LocalKeyService::new(&master),
        mode: std::sync::Mutex::new(None),
        failed: Default::default(),
    });
    t.app.keys.set_service(ws(), service.clone());
    t.app.cohorts.shutdown().await;
    let waiting = upload_ok(&t, &base, "Waiting", USERS).await;
    // The key service goes down and the cached key expires: the worker must wait.
    *service.mode.lock().unwrap() =
        Some(KeyServiceError::Unavailable("down for maintenance".into()));
    t.app.keys.clear_cache();
    platform::ingest::start(&t.app);
    // Once the worker has met the outage (waited for, not slept on), the upload still waits.
    let watch = Stopwatch::start();
    while service.failed.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            watch.elapsed() < Duration::from_secs(30),
            "the worker never asked the key service"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, v) = t.get(&format!("{base}/{waiting}")).await;
    assert_eq!(
        v["status"], "processing",
        "waits while the key service is down"
    );
    // It comes back: the first cohort completes; then it refuses: the next one fails.
    *service.mode.lock().unwrap() = None;
    let done = wait_done(&t, &base, &waiting).await;
    assert_eq!(done["status"], "completed");
    t.app.cohorts.shutdown().await;
    let refused = upload_ok(&t, &base, "Refused", USERS).await;
    *service.mode.lock().unwrap() = Some(KeyServiceError::Refused(
        "key alias 'local' is disabled".into(),
    ));
    t.app.keys.clear_cache();
    platform::ingest::start(&t.app);
    let done = wait_done(&t, &base, &refused).await;
    assert_eq!(done["status"], "failed");
    insta::assert_snapshot!(
        "failure_key_refused",
        done["failure_reason"].as_str().unwrap()
    );
}
