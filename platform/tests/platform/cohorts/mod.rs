//! Cohorts over HTTP: multipart upload and background processing, row rejections and
//! whole-upload failures, stream, list, get, files, limits, restarts, encryption at rest,
//! and the store functions the engine and inbound routing use; one file per concern, the
//! helpers they share here.

use std::time::Duration;

use contracts::clock::Stopwatch;
use platform::store::WorkspaceRef;
use platform::store::cohorts::{self as cohort_store, CohortUser};
use reqwest::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

mod key_service;
mod listing;
mod lookup;
mod parents;
mod reading;
mod refusals;
mod storage;
mod stream;

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

fn stream_users(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"phone_number": format!("+1415555{:04}", i), "user_identifier": format!("s{i}")}))
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}
