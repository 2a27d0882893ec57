//! What is stored: a restart loses nothing, no plaintext at rest, deleting a deployment deletes
//! its cohorts.

use super::*;

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
