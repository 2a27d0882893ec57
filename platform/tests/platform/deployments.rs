//! Deployments over HTTP: bodies, numbers, status, delete, pagination.

use chrono::Duration;
use reqwest::StatusCode;
use rstest::rstest;
use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test]
async fn create_get_patch_and_status_bodies() {
    let app = spawn_app().await;
    let (s, created) = app
        .post(
            &deployments_path(),
            &deployment_body("Front desk", "+14155550100"),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    insta::assert_json_snapshot!("deployment_create", created);
    let id = created["deployment_id"].as_str().unwrap();
    let path = format!("{}/{id}", deployments_path());
    assert_eq!(app.get(&path).await, (StatusCode::OK, created.clone()));
    app.clock.advance(Duration::minutes(5)).unwrap();
    let (s, patched) = app
        .patch(
            &path,
            &json!({"app_version": 2, "inbound_config": null, "description": "Nights"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{patched}");
    insta::assert_json_snapshot!("deployment_patch", patched);
    let (s, paused) = app
        .put(&format!("{path}/status"), &json!({"action": "pause"}))
        .await;
    assert_eq!(
        (s, paused["status"].as_str()),
        (StatusCode::OK, Some("paused"))
    );
    let (s, v) = app
        .put(&format!("{path}/status"), &json!({"action": "pause"}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!("deployment_status_409", v);
    let (s, v) = app
        .put(&format!("{path}/status"), &json!({"action": "resume"}))
        .await;
    assert_eq!((s, v["status"].as_str()), (StatusCode::OK, Some("active")));
    let (s, v) = app
        .put(&format!("{path}/status"), &json!({"action": "cancel"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("deployment_status_422", v);
}

#[tokio::test]
async fn delete_is_permanent() {
    let app = spawn_app().await;
    let id = create_deployment(&app, "Front desk", "+14155550100").await;
    let path = format!("{}/{id}", deployments_path());
    let (s, body) = app.delete(&path).await;
    assert_eq!((s, body), (StatusCode::NO_CONTENT, Value::Null));
    let (s, v) = app.get(&path).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    insta::assert_json_snapshot!("deployment_404", v);
    assert_eq!(app.delete(&path).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        app.patch(&path, &json!({"app_version": 2})).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.put(&format!("{path}/status"), &json!({"action": "resume"}))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    let cohorts = format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{id}/cohorts");
    assert_eq!(app.get(&cohorts).await.0, StatusCode::NOT_FOUND);
    // Its number is free again.
    create_deployment(&app, "Replacement", "+14155550100").await;
    let (_, list) = app.get(&deployments_path()).await;
    assert_eq!(list["total"], 1);
}

#[tokio::test]
async fn a_number_belongs_to_one_deployment_of_a_workspace() {
    let app = spawn_app().await;
    let first = create_deployment(&app, "First", "+14155550100").await;
    let (s, v) = app
        .post(
            &deployments_path(),
            &deployment_body("Second", "+14155550100"),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!("deployment_number_409", v);
    let second = create_deployment(&app, "Second", "+14155550199").await;
    let (s, _) = app
        .patch(
            &format!("{}/{second}", deployments_path()),
            &json!({"connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"]}]}),
        )
        .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "taking another deployment's number by patch"
    );
    // Patching a deployment with its own numbers is fine.
    let (s, _) = app
        .patch(
            &format!("{}/{first}", deployments_path()),
            &json!({"name": "First renamed"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    // Another workspace may use the same number.
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            &format!("/api/app-authoring/v1/orgs/{ORG}/workspaces/{WS2}/deployments"),
            Some(KEY2),
            Some(&deployment_body("Bob desk", "+14155550100")),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

#[rstest]
#[case::name_50("name", json!("n".repeat(50)), true)]
#[case::name_51("name", json!("n".repeat(51)), false)]
#[case::name_pattern("name", json!("a.b"), false)]
#[case::description_150("description", json!("d".repeat(150)), true)]
#[case::description_151("description", json!("d".repeat(151)), false)]
#[case::no_connections("connection_configs", json!([]), false)]
#[case::bad_number("connection_configs", json!([{"connection_id": "c", "phone_numbers": ["555-0100"]}]), false)]
#[case::version_0("app_version", json!(0), false)]
#[tokio::test]
async fn deployment_limits(#[case] field: &str, #[case] value: Value, #[case] ok: bool) {
    let app = spawn_app().await;
    let mut body = deployment_body("Desk", "+14155550100");
    body[field] = value;
    let (s, v) = app.post(&deployments_path(), &body).await;
    if ok {
        assert_eq!(s, StatusCode::OK, "{v}");
    } else {
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(v["detail"][0]["loc"][1], field);
    }
}

#[rstest]
#[case("limit=0", false)]
#[case("limit=1", true)]
#[case("limit=100", true)]
#[case("limit=101", false)]
#[case("offset=-1", false)]
#[case("offset=0", true)]
#[case("sort_by=colour", false)]
#[case("sort_order=up", false)]
#[tokio::test]
async fn list_query_limits(#[case] query: &str, #[case] ok: bool) {
    let app = spawn_app().await;
    let (s, v) = app.get(&format!("{}?{query}", deployments_path())).await;
    if ok {
        assert_eq!(s, StatusCode::OK, "{v}");
    } else {
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(v["detail"][0]["loc"][0], "query");
    }
}

/// A list answered again from memory is the answer of that request: its links follow the
/// `Host` it was sent to, and a write shows at once.
#[tokio::test]
async fn a_repeated_list_follows_its_host_and_every_write() {
    let app = spawn_app().await;
    let first = create_deployment(&app, "Front desk", "+14155550100").await;
    create_deployment(&app, "Back office", "+14155550101").await;
    let path = format!("{}?limit=1", deployments_path());
    let get_via = |host: &'static str| {
        let req = app
            .client
            .get(app.url(&path))
            .header("x-api-key", KEY)
            .header("host", host);
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            r.json::<Value>().await.unwrap()
        }
    };
    let a = get_via("a.example").await;
    assert_eq!(get_via("a.example").await, a);
    assert!(
        a["next_page_uri"]
            .as_str()
            .unwrap()
            .starts_with("http://a.example/"),
        "{a}"
    );
    let b = get_via("b.example").await;
    assert!(
        b["next_page_uri"]
            .as_str()
            .unwrap()
            .starts_with("http://b.example/"),
        "{b}"
    );
    assert_eq!(a["items"], b["items"]);
    // A write: the same request answers what it changed.
    let sorted = format!(
        "{}?limit=1&sort_by=created_at&sort_order=asc",
        deployments_path()
    );
    assert_eq!(app.get(&sorted).await.1["items"][0]["name"], "Front desk");
    let (s, _) = app
        .patch(
            &format!("{}/{first}", deployments_path()),
            &json!({"name": "Renamed"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(app.get(&sorted).await.1["items"][0]["name"], "Renamed");
    create_deployment(&app, "Nights", "+14155550102").await;
    let again = get_via("a.example").await;
    assert_eq!(again["total"], 3, "{again}");
    assert_ne!(again["items"], a["items"], "the newest first");
}

#[tokio::test]
async fn walk_250_deployments_forward_and_back_by_the_uris() {
    let app = spawn_app().await;
    for i in 0..250 {
        let name = if i % 5 == 0 {
            format!("Sales {i:03}")
        } else {
            format!("Support {i:03}")
        };
        create_deployment(&app, &name, &format!("+1415555{i:04}")).await;
        app.clock.advance(Duration::seconds(1)).unwrap();
    }
    let path_of = |uri: &str| uri.split_once(&app.addr.to_string()).unwrap().1.to_string();

    // Search keeps 50 of them; walk forward 7 at a time by name, ascending.
    let mut uri = format!(
        "{}?search=sales&sort_by=name&sort_order=asc&limit=7",
        deployments_path()
    );
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut last;
    loop {
        let (s, v) = app.get(&uri).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["total"], 50);
        assert_eq!(v["limit"], 7);
        if pages == 0 {
            assert_eq!(v["prev_page_uri"], Value::Null);
        }
        for item in v["items"].as_array().unwrap() {
            seen.push(item["name"].as_str().unwrap().to_string());
        }
        pages += 1;
        last = v.clone();
        match v["next_page_uri"].as_str() {
            Some(next) => {
                assert!(
                    next.contains("search=sales") && next.contains("sort_by=name"),
                    "{next}"
                );
                uri = path_of(next);
            }
            None => break,
        }
    }
    assert_eq!(pages, 8);
    let mut expected: Vec<String> = (0..250)
        .step_by(5)
        .map(|i| format!("Sales {i:03}"))
        .collect();
    assert_eq!(seen, expected);

    // And back from the last page.
    let mut back = Vec::new();
    let mut v = last;
    loop {
        let mut page: Vec<String> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect();
        page.reverse();
        back.extend(page);
        match v["prev_page_uri"].as_str() {
            Some(prev) => v = app.get(&path_of(prev)).await.1,
            None => break,
        }
    }
    expected.reverse();
    assert_eq!(back, expected);

    // The whole list, newest first by default.
    let (_, v) = app
        .get(&format!("{}?limit=100&offset=200", deployments_path()))
        .await;
    assert_eq!(v["total"], 250);
    assert_eq!(v["items"].as_array().unwrap().len(), 50);
    assert_eq!(v["items"][49]["name"], "Sales 000", "oldest last");
    assert_eq!(v["next_page_uri"], Value::Null);
    // A phone number finds its deployment.
    let (_, v) = app
        .get(&format!("{}?search=%2B14155550137", deployments_path()))
        .await;
    assert_eq!(v["total"], 1);
    assert_eq!(v["items"][0]["phone_numbers"], json!(["+14155550137"]));
}

#[tokio::test]
async fn deployments_survive_a_restart() {
    let app = spawn_app().await;
    let id = create_deployment(&app, "Front desk", "+14155550100").await;
    let before = app.get(&format!("{}/{id}", deployments_path())).await.1;
    let app = app.restart().await;
    assert_eq!(
        app.get(&format!("{}/{id}", deployments_path())).await.1,
        before
    );
    let (s, _) = app
        .post(
            &deployments_path(),
            &deployment_body("Again", "+14155550100"),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "number ownership survives too");
}

#[tokio::test]
async fn a_restart_with_the_same_seed_makes_new_ids_not_the_earlier_ones_again() {
    let app = spawn_app().await;
    let first = create_deployment(&app, "Front desk", "+14155550100").await;
    let campaign = app.post(&campaigns_path(), &campaign_body()).await.1;
    let app = app.restart().await;
    let second = create_deployment(&app, "Back office", "+14155550101").await;
    assert_ne!(first, second, "the same seed, another run: another id");
    let (s, again) = app.post(&campaigns_path(), &campaign_body()).await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_ne!(again["campaign_id"], campaign["campaign_id"]);
    let (_, list) = app.get(&deployments_path()).await;
    assert_eq!(list["total"], 2, "{list}");
}
