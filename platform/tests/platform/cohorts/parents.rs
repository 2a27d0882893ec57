//! The parent of a cohort: open campaigns and deployments of the workspace only; a stop file's
//! own category.

use super::*;

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
