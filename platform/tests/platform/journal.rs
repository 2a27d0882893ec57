//! The request journal: a verdict per request, API coverage per operation of the OpenAPI
//! document, bounded memory, redaction, persistence, reset. (What the verdicts name: in
//! `verdicts.rs`.)

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::helpers::*;

pub const JOURNAL: &str = "/sim/v1/journal";

/// The first page of 100 entries of the journal, of every workspace (an operator's key).
pub async fn all_entries(app: &TestApp) -> Value {
    let (s, page) = app
        .call(
            Method::GET,
            &format!("{JOURNAL}?limit=100"),
            Some(OPS_KEY),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{page}");
    page
}

/// The latest entry of the journal, of any workspace.
pub async fn last_entry(app: &TestApp) -> Value {
    let page = all_entries(app).await;
    page["items"]
        .as_array()
        .and_then(|items| items.last().cloned())
        .unwrap_or_else(|| panic!("the journal is empty: {page}"))
}

/// Empties the whole journal (an operator's reset).
async fn reset(app: &TestApp) {
    let (s, v) = app.call(Method::DELETE, JOURNAL, Some(OPS_KEY), None).await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
}

/// `kind/type@loc` of each violation of an entry.
pub fn violations(e: &Value) -> Vec<String> {
    e["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let loc: Vec<String> = v["loc"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_string))
                .collect();
            format!(
                "{}/{}@{}",
                v["kind"].as_str().unwrap(),
                v["type"].as_str().unwrap(),
                loc.join(".")
            )
        })
        .collect()
}

/// One request of the table: what is sent.
struct Case {
    name: &'static str,
    method: Method,
    path: String,
    key: Option<&'static str>,
    content_type: Option<&'static str>,
    body: Option<String>,
    status: u16,
    verdict: &'static str,
    violations: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let deployments = deployments_path();
    let mut misspelt = deployment_body("Desk", "+14155550111");
    misspelt["desciption"] = json!("typo");
    misspelt["connection_configs"][0]["weight"] = json!(1);
    vec![
        Case {
            name: "a valid create conforms",
            method: Method::POST,
            path: deployments.clone(),
            key: Some(KEY),
            content_type: Some("application/json"),
            body: Some(deployment_body("Front desk", "+14155550110").to_string()),
            status: 200,
            verdict: "conforms",
            violations: &[],
        },
        Case {
            name: "each item of a 422 is a violation",
            method: Method::POST,
            path: deployments.clone(),
            key: Some(KEY),
            content_type: Some("application/json"),
            body: Some(
                json!({"name": "bad/name", "app_id": "a", "connection_configs": []}).to_string(),
            ),
            status: 422,
            verdict: "violates",
            violations: &[
                "validation/string_pattern_mismatch@body.name",
                "validation/missing@body.app_version",
                "validation/too_short@body.connection_configs",
            ],
        },
        Case {
            name: "unknown fields are violations though the platform ignores them",
            method: Method::POST,
            path: deployments.clone(),
            key: Some(KEY),
            content_type: Some("application/json"),
            body: Some(misspelt.to_string()),
            status: 200,
            verdict: "violates",
            violations: &[
                "unknown_field/extra_forbidden@body.desciption",
                "unknown_field/extra_forbidden@body.connection_configs.0.weight",
            ],
        },
        Case {
            name: "unknown query parameters too",
            method: Method::GET,
            path: format!("{deployments}?limt=5&limit=5"),
            key: Some(KEY),
            content_type: None,
            body: None,
            status: 200,
            verdict: "violates",
            violations: &["unknown_field/extra_forbidden@query.limt"],
        },
        Case {
            name: "a query out of bounds is the 422's violation",
            method: Method::GET,
            path: format!("{deployments}?limit=500"),
            key: Some(KEY),
            content_type: None,
            body: None,
            status: 422,
            verdict: "violates",
            violations: &["validation/less_than_equal@query.limit"],
        },
        Case {
            name: "a wrong content type",
            method: Method::POST,
            path: deployments.clone(),
            key: Some(KEY),
            content_type: Some("text/plain"),
            body: Some("name=x".into()),
            status: 415,
            verdict: "violates",
            violations: &["content_type/unsupported_media_type@header.content-type"],
        },
        Case {
            name: "an unknown route",
            method: Method::GET,
            path: "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/agents".into(),
            key: Some(KEY),
            content_type: None,
            body: None,
            status: 404,
            verdict: "violates",
            violations: &["unknown_route/unknown_route@path"],
        },
        Case {
            name: "a wrong base path: outside /api/, still a request that served nothing",
            method: Method::GET,
            path: "/apis/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments".into(),
            key: Some(KEY),
            content_type: None,
            body: None,
            status: 404,
            verdict: "violates",
            violations: &["unknown_route/unknown_route@path"],
        },
        Case {
            name: "a method the path does not take",
            method: Method::PUT,
            path: deployments.clone(),
            key: Some(KEY),
            content_type: Some("application/json"),
            body: Some("{}".into()),
            status: 405,
            verdict: "violates",
            violations: &["unknown_route/method_not_allowed@path"],
        },
        Case {
            name: "a missing key",
            method: Method::GET,
            path: deployments.clone(),
            key: None,
            content_type: None,
            body: None,
            status: 401,
            verdict: "violates",
            violations: &["missing_key/missing@header.x-api-key"],
        },
        Case {
            name: "another workspace's key",
            method: Method::GET,
            path: deployments.clone(),
            key: Some(KEY2),
            content_type: None,
            body: None,
            status: 401,
            verdict: "violates",
            violations: &["invalid_key/invalid_api_key@header.x-api-key"],
        },
        Case {
            name: "another workspace's key on a route warp answers",
            method: Method::GET,
            path: format!("{deployments}/dep-nope"),
            key: Some(KEY2),
            content_type: None,
            body: None,
            status: 401,
            verdict: "violates",
            violations: &["invalid_key/invalid_api_key@header.x-api-key"],
        },
        Case {
            name: "a request for a missing resource keeps the contract",
            method: Method::GET,
            path: format!("{deployments}/dep-nope"),
            key: Some(KEY),
            content_type: None,
            body: None,
            status: 404,
            verdict: "conforms",
            violations: &[],
        },
    ]
}

#[tokio::test]
async fn each_violation_kind_is_recorded_with_its_verdict() {
    let app = spawn_app().await;
    for case in cases() {
        let mut req = app.client.request(case.method.clone(), app.url(&case.path));
        if let Some(k) = case.key {
            req = req.header("x-api-key", k);
        }
        if let Some(ct) = case.content_type {
            req = req.header("content-type", ct);
        }
        if let Some(b) = &case.body {
            req = req.body(b.clone());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), case.status, "{}", case.name);
        let e = last_entry(&app).await;
        assert_eq!(e["status"], case.status, "{}: {e}", case.name);
        assert_eq!(e["verdict"], case.verdict, "{}: {e}", case.name);
        assert_eq!(violations(&e), case.violations, "{}: {e}", case.name);
    }
    // Every request was recorded once, in order.
    let page = all_entries(&app).await;
    let seqs: Vec<u64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=cases().len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn in_strict_mode_an_unknown_field_is_the_422s_violation_once() {
    let app = spawn_with(|mut c| {
        c.strict = true;
        c
    })
    .await;
    let mut body = deployment_body("Desk", "+14155550111");
    body["colour"] = json!("red");
    let (s, _) = app.post(&deployments_path(), &body).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let e = last_entry(&app).await;
    assert_eq!(violations(&e), ["validation/extra_forbidden@body.colour"]);
}

#[tokio::test]
async fn entries_name_the_operation_and_keep_the_shape_of_bodies() {
    let app = spawn_app().await;
    create_deployment(&app, "Front desk", "+14155550110").await;
    let e = last_entry(&app).await;
    assert_eq!(e["operation_id"], "create_deployment");
    assert_eq!(
        e["path_template"],
        "/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments"
    );
    assert_eq!(e["org_id"], ORG);
    assert_eq!(e["workspace_id"], WS);
    assert_eq!(e["api_key"], "valid");
    assert_eq!(e["key_name"], "alice");
    assert_eq!(
        e["at"], "2026-03-02T12:00:00.000Z",
        "on the platform's clock"
    );
    assert_eq!(e["request"]["content_type"], "application/json");
    assert_eq!(e["request"]["json"]["name"], "Front desk");
    assert_eq!(
        e["request"]["json"]["connection_configs"][0]["phone_numbers"][0],
        "<phone>"
    );
    assert!(
        e["response"]["json"].is_null(),
        "a successful answer's body is not kept"
    );
    assert_eq!(e["response"]["content_type"], "application/json");
    assert!(e["response"]["bytes"].as_u64().unwrap() > 100);
    assert!(
        e["response"]["note"]
            .as_str()
            .unwrap()
            .contains("response_bodies = \"all\""),
        "{e}"
    );

    // Kept when asked for.
    let app = spawn_with(|mut c| {
        c.journal.response_bodies = platform::config::journal::ResponseBodies::All;
        c
    })
    .await;
    let id = create_deployment(&app, "Front desk", "+14155550110").await;
    let e = last_entry(&app).await;
    assert_eq!(e["response"]["json"]["deployment_id"], id.as_str());
    assert_eq!(e["response"]["json"]["status"], "active");
    assert!(e["response"]["note"].is_null(), "{e}");
    assert!(e["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(e["fault"].is_null());
}

#[tokio::test]
async fn the_summary_is_the_api_coverage_of_a_scripted_client() {
    let app = spawn_app().await;
    let dep = create_deployment(&app, "Front desk", "+14155550110").await;
    app.get(&deployments_path()).await;
    app.get(&format!("{}?limit=500", deployments_path())).await;
    app.get(&format!("{}/{dep}", deployments_path())).await;
    app.get(&format!("{}/dep-nope", deployments_path())).await;
    app.call(Method::GET, "/api/nothing", Some(KEY), None).await;
    // The harness's own routes are not part of the interface: not journaled.
    app.get("/sim/v1/clock").await;
    let (s, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(s, StatusCode::OK, "{sum}");
    assert_eq!(sum["requests"], 6);
    assert_eq!(sum["conforming"], 4);
    assert_eq!(sum["violating"], 2);
    let ops = sum["operations"].as_array().unwrap();
    let op = |id: &str| {
        ops.iter()
            .find(|o| o["operation_id"] == id)
            .unwrap_or_else(|| panic!("{id} in {sum}"))
            .clone()
    };
    let total = ops.len() as u64;
    assert_eq!(sum["coverage"]["operations"], total);
    assert_eq!(sum["coverage"]["called"], 3);
    assert_eq!(
        sum["coverage"]["percent"].as_f64().unwrap(),
        (300.0 / total as f64 * 10.0).round() / 10.0
    );
    let list = op("list_deployments");
    assert_eq!(list["calls"], 2);
    assert_eq!(list["statuses"], json!({"200": 1, "422": 1}));
    assert_eq!(list["violating_requests"], 1);
    assert_eq!(list["documented_statuses_not_seen"], json!([401]));
    assert_eq!(
        list["examples"][0]["violations"][0]["loc"],
        json!(["query", "limit"])
    );
    let get = op("get_deployment");
    assert_eq!(get["statuses"], json!({"200": 1, "404": 1}));
    assert_eq!(get["documented_statuses_not_seen"], json!([401]));
    let create = op("create_deployment");
    assert_eq!(
        create["documented_statuses_not_seen"],
        json!([401, 409, 413, 415, 422])
    );
    assert_eq!(op("delete_deployment")["calls"], 0);
    let not_called: Vec<&str> = sum["not_called"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(not_called.contains(&"create_campaign") && !not_called.contains(&"get_deployment"));
    assert_eq!(not_called.len() as u64, total - 3);
    assert_eq!(sum["unknown_routes"]["requests"], 1);
    assert_eq!(sum["unknown_routes"]["examples"][0]["path"], "/api/nothing");
}

#[tokio::test]
async fn the_ring_is_bounded_and_counts_what_it_dropped() {
    let app = spawn_with(|mut c| {
        c.journal.capacity = 3;
        c
    })
    .await;
    for _ in 0..5 {
        app.get(&deployments_path()).await;
    }
    let (_, page) = app.get(JOURNAL).await;
    assert_eq!(page["total"], 3);
    let seqs: Vec<u64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [3, 4, 5], "the oldest went first");
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["entries_kept"], 3);
    assert_eq!(sum["entries_dropped"], 2);
    assert_eq!(sum["capacity"], 3);
    assert_eq!(sum["requests"], 5, "counts include the dropped entries");
}

#[tokio::test]
async fn lists_filter_and_page_and_a_reset_starts_again() {
    let app = spawn_app().await;
    create_deployment(&app, "Front desk", "+14155550110").await;
    for _ in 0..3 {
        app.get(&deployments_path()).await;
    }
    app.get(&format!("{}?limit=0", deployments_path())).await;
    let (_, p) = app
        .get(&format!("{JOURNAL}?operation=list_deployments&limit=2"))
        .await;
    assert_eq!(p["total"], 4);
    assert_eq!(p["items"].as_array().unwrap().len(), 2);
    assert!(p["next_page_uri"].as_str().unwrap().contains("offset=2"));
    let (_, p) = app.get(&format!("{JOURNAL}?verdict=violates")).await;
    assert_eq!(p["total"], 1);
    assert_eq!(p["items"][0]["status"], 422);
    let (_, p) = app
        .get(&format!("{JOURNAL}?status=200&operation=create_deployment"))
        .await;
    assert_eq!(p["total"], 1);
    let (s, v) = app
        .get(&format!("{JOURNAL}?operation=nope&verdict=maybe&status=x"))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["detail"].as_array().unwrap().len(), 3, "{v}");
    let (s, _) = app.call(Method::GET, JOURNAL, None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "the journal needs a key");

    reset(&app).await;
    let (_, p) = app.get(JOURNAL).await;
    assert_eq!(p["total"], 0);
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["requests"], 0);
    assert_eq!(sum["coverage"]["called"], 0);
    app.get(&deployments_path()).await;
    assert_eq!(last_entry(&app).await["seq"], 1, "numbers start again");
}

#[tokio::test]
async fn a_journal_that_is_off_records_nothing() {
    let app = spawn_with(|mut c| {
        c.journal.capacity = 0;
        c
    })
    .await;
    app.get(&deployments_path()).await;
    let (_, p) = app.get(JOURNAL).await;
    assert_eq!(p["total"], 0);
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["requests"], 0);
}

#[tokio::test]
async fn a_persisted_journal_survives_a_restart() {
    let app = spawn_with(|mut c| {
        c.journal.persist = true;
        c.journal.capacity = 2;
        c
    })
    .await;
    create_deployment(&app, "Front desk", "+14155550110").await;
    app.get(&deployments_path()).await;
    app.get(&format!("{}?limit=500", deployments_path())).await;
    app.app.journal.flush();
    let app = app.restart().await;
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["requests"], 3);
    assert_eq!(sum["violating"], 1);
    assert_eq!(sum["entries_kept"], 2);
    assert_eq!(sum["entries_dropped"], 1);
    app.get(&deployments_path()).await;
    assert_eq!(last_entry(&app).await["seq"], 4, "numbers carry on");
    reset(&app).await;
    app.app.journal.flush();
    let app = app.restart().await;
    let (_, sum) = app.get(&format!("{JOURNAL}/summary")).await;
    assert_eq!(sum["requests"], 0, "a reset empties the database copy too");
}

/// Every secret a client sends, in every place it can go.
const SECRETS: &[&str] = &[
    "key-alice",
    "key-bob",
    "4155550110",
    "415 555 0177",
    "9876543210",
    "Ada Lovelace",
    "VIP-SECRET-42",
    "s3cr3t-token",
    "ada@example.com",
];

#[tokio::test]
async fn the_journal_never_holds_a_key_a_phone_number_or_a_variable_value() {
    let app = spawn_with(|mut c| {
        c.journal.persist = true;
        c.journal.response_bodies = platform::config::journal::ResponseBodies::All;
        c
    })
    .await;
    let dep = create_deployment(&app, "Front desk", "+14155550110").await;
    let outbound = json!({
        "app_config": {
            "app_id": "app-1", "app_version": 1, "app_type": "agent",
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550110"},
            "agent_variables": {"name": "Ada Lovelace", "code": "VIP-SECRET-42", "n": 9876543210u64},
            "app_overrides": {"initial_bot_message": "Hello Ada Lovelace"}
        },
        "user_config": {"user_phone_number": "+919876543210"},
        "webhook_config": {"url": "https://hooks.example.com/x?token=s3cr3t-token", "metadata": {"email": "ada@example.com"}}
    });
    let (s, v) = app.post(&outbounds_path(), &outbound).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // A malformed number comes back in the 422's message.
    let mut bad = outbound.clone();
    bad["user_config"]["user_phone_number"] = json!("415 555 0177");
    let (s, v) = app.post(&outbounds_path(), &bad).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v.to_string().contains("415 555 0177"),
        "the answer echoes it: {v}"
    );
    // A search for a number, a cohort of users with variables, a wrong key.
    app.get(&format!("{}?search=%2B14155550110", deployments_path()))
        .await;
    let cohort = json!({"name": "VIPs", "users": [
        {"phone_number": "+919876543210", "user_identifier": "ada@example.com",
         "app_variables": {"name": "Ada Lovelace", "code": "VIP-SECRET-42"}}
    ]});
    let (s, v) = app
        .post(
            &format!(
                "/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts/stream"
            ),
            &cohort,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    app.call(Method::GET, &deployments_path(), Some(KEY2), None)
        .await;

    let journal = all_entries(&app).await;
    let (_, summary) = app
        .call(
            Method::GET,
            &format!("{JOURNAL}/summary"),
            Some(OPS_KEY),
            None,
        )
        .await;
    app.app.journal.flush();
    let stored: Vec<String> = app
        .app
        .store
        .read_blocking(|c| {
            let mut st = c.prepare("SELECT entry FROM journal_entries")?;
            let rows = st
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .unwrap();
    assert_eq!(stored.len(), 6);
    for (place, text) in [
        ("GET /sim/v1/journal", journal.to_string()),
        ("the summary", summary.to_string()),
        ("the database", stored.join("\n")),
    ] {
        for secret in SECRETS {
            assert!(!text.contains(secret), "{place} holds {secret}: {text}");
        }
    }
    // Still useful: field names, shapes, statuses, operations.
    let items = journal["items"].as_array().unwrap();
    let out = &items[1];
    assert_eq!(out["operation_id"], "create_outbound");
    assert_eq!(
        out["request"]["json"]["app_config"]["agent_variables"],
        json!({"name": "<string>", "code": "<string>", "n": "<number>"})
    );
    assert_eq!(
        out["request"]["json"]["user_config"]["user_phone_number"],
        "<phone>"
    );
    assert_eq!(out["request"]["json"]["webhook_config"]["url"], "<url>");
    assert!(out["response"]["json"]["attempt_id"].is_string());
    let rejected = &items[2];
    assert_eq!(rejected["status"], 422);
    assert_eq!(
        rejected["violations"][0]["loc"],
        json!(["body", "user_config", "user_phone_number"])
    );
    assert!(
        rejected["violations"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("<number>"),
        "{rejected}"
    );
    assert_eq!(items[3]["query"]["search"], "<string>");
    assert_eq!(items[5]["api_key"], "invalid");
}
