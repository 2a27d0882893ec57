//! What the client's uploads led to, and the refusals that are not violations: an upload
//! answered 200 whose file the platform could not process is counted against its operation
//! with the cohort and its `failure_reason` (also across a restart of a persisted journal),
//! beside an upload that completes; the 409s and 413s are listed one by one, like the 404s.

use std::time::Duration;

use contracts::clock::Stopwatch;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::journal::{JOURNAL, all_entries};

fn cohorts_of(dep: &str) -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts")
}

/// Uploads `csv` to the deployment's cohorts; answers the cohort id (a 200).
async fn upload(app: &TestApp, dep: &str, csv: &[u8]) -> String {
    let transformation = json!({
        "phone_number": {"column_name": "phone", "country_code": "US"},
        "user_identifier": {"column_name": "id"}
    });
    let form = reqwest::multipart::Form::new()
        .text("name", "march")
        .part(
            "cohort_file",
            reqwest::multipart::Part::bytes(csv.to_vec()).file_name("users.csv"),
        )
        .part(
            "cohort_transformation_file",
            reqwest::multipart::Part::bytes(transformation.to_string().into_bytes())
                .file_name("t.json"),
        );
    let resp = app
        .client
        .post(app.url(&format!("{}/upload", cohorts_of(dep))))
        .header("x-api-key", KEY)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v: Value = resp.json().await.unwrap();
    v["cohort_id"].as_str().unwrap().to_string()
}

/// Waits for the cohort to leave `processing` (polling, as a client does); answers it.
async fn settled(app: &TestApp, dep: &str, id: &str) -> Value {
    let watch = Stopwatch::start();
    loop {
        let (s, v) = app.get(&format!("{}/{id}", cohorts_of(dep))).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if v["status"] != "processing" {
            return v;
        }
        assert!(
            watch.elapsed() < Duration::from_secs(60),
            "{id} still processing"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The entry of the upload that created `cohort_id`.
async fn upload_entry(app: &TestApp, cohort_id: &str) -> Value {
    let page = all_entries(app).await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["cohort"]["cohort_id"] == cohort_id)
        .cloned()
        .unwrap_or_else(|| panic!("no upload of {cohort_id}: {page}"))
}

#[tokio::test]
async fn an_upload_whose_file_cannot_be_processed_is_counted_against_its_operation() {
    let app = spawn_with(|mut c| {
        c.journal.persist = true;
        c
    })
    .await;
    let dep = create_deployment(&app, "Front desk", "+14155550110").await;
    // Right: a file the platform reads.
    let good = upload(&app, &dep, b"phone,id\n4155550123,u1\n").await;
    assert_eq!(settled(&app, &dep, &good).await["status"], "completed");
    // A header row without the column the transformation names; no header row at all.
    let no_column = upload(&app, &dep, b"number,id\n4155550124,u2\n").await;
    let no_header = upload(&app, &dep, b"4155550125,u3\n4155550126,u4\n").await;
    let mut reasons = Vec::new();
    for id in [&no_column, &no_header] {
        let done = settled(&app, &dep, id).await;
        assert_eq!(done["status"], "failed", "{done}");
        reasons.push(done["failure_reason"].as_str().unwrap().to_string());
    }
    // The uploads kept the contract: their entries say what became of the files.
    let e = upload_entry(&app, &good).await;
    assert_eq!(
        (e["verdict"].as_str(), e["cohort"]["status"].as_str()),
        (Some("conforms"), Some("completed"))
    );
    let e = upload_entry(&app, &no_column).await;
    assert_eq!(e["verdict"], "conforms");
    assert_eq!(e["cohort"]["status"], "failed");
    assert_eq!(e["cohort"]["failure_reason"], reasons[0].as_str());

    let check = |sum: &Value| {
        assert_eq!(sum["failed_uploads"], 2, "{sum}");
        assert_eq!(sum["violating"], 0, "{sum}");
        let op = sum["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["operation_id"] == "upload_deployment_cohort")
            .unwrap()
            .clone();
        assert_eq!(op["failed_uploads"], 2, "{op}");
        let first = &op["failed_upload_examples"][0];
        assert_eq!(first["cohort_id"], no_column.as_str());
        assert_eq!(first["failure_reason"], reasons[0].as_str());
        assert_eq!(first["method"], "POST");
        assert!(first["path"].as_str().unwrap().ends_with("/cohorts/upload"));
        assert!(first["seq"].as_u64().unwrap() > 0);
        assert_eq!(
            op["failed_upload_examples"][1]["cohort_id"],
            no_header.as_str()
        );
    };
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    check(&sum);
    // A persisted journal still knows after a restart.
    app.app.journal.flush();
    let app = app.restart().await;
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    check(&sum);
    assert_eq!(
        upload_entry(&app, &no_column).await["cohort"]["status"],
        "failed"
    );
}

#[tokio::test]
async fn conflicts_and_bodies_too_large_are_listed_one_by_one() {
    let app = spawn_with(|mut c| {
        c.max_body_bytes = 4096;
        c
    })
    .await;
    let id = create_campaign(&app).await;
    let status = format!("{}/{id}/status", campaigns_path());
    let (s, _) = app.put(&status, &json!({"action": "cancel"})).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app.put(&status, &json!({"action": "resume"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "resuming a cancelled campaign");
    let mut big = deployment_body("Front desk", "+14155550110");
    big["description"] = json!("x".repeat(5000));
    let (s, _) = app.post(&deployments_path(), &big).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    // Right: the same operations accepted.
    create_deployment(&app, "Front desk", "+14155550110").await;

    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["violating"], 0, "not violations: {sum}");
    assert_eq!(sum["conflicts"]["requests"], 1, "{sum}");
    let conflict = &sum["conflicts"]["listed"][0];
    assert_eq!(conflict["method"], "PUT");
    assert_eq!(conflict["path"], status.as_str());
    assert_eq!(conflict["operation_id"], "set_campaign_status");
    assert!(
        conflict["message"].as_str().unwrap().contains("cancelled"),
        "{conflict}"
    );
    assert_eq!(sum["too_large"]["requests"], 1, "{sum}");
    let large = &sum["too_large"]["listed"][0];
    assert_eq!(large["operation_id"], "create_deployment");
    assert_eq!(large["seq"], 4);
    assert!(large["message"].is_string(), "{large}");
    assert_eq!(sum["not_found"]["requests"], 0);
}
