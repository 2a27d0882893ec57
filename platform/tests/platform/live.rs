//! The live page (`/ui`) and what it reads that no other route gives: its files and their
//! headers, `GET /sim/v1/stack`, a campaign's activity (its status changes and its dials over
//! time), the key service's calls, and the page's reads passing by the journal and the fault
//! rules.

use std::sync::Arc;

use contracts::wire::{KeyServiceCall, KeyServiceCalls};
use platform::api::ui::{ASSETS, OBSERVER_HEADER};
use platform::app::{AuditSource, KeyServiceAudit};
use platform::store::WorkspaceRef;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::engine::{ALL_DAYS, add_users, advance, advance_to, campaign, create, magic, stats};
use crate::helpers::*;

#[tokio::test]
async fn the_page_and_its_files_are_served_without_a_key_and_with_a_strict_policy() {
    let app = spawn_app().await;
    let page = app.client.get(app.url("/ui")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let h = page.headers().clone();
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    let csp = h["content-security-policy"].to_str().unwrap();
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(rule), "{rule} missing from {csp}");
    }
    assert_eq!(h["referrer-policy"], "no-referrer");
    assert_eq!(h["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    // Every file the page and its modules load is one the platform serves.
    let mut wanted: Vec<String> = Vec::new();
    for line in html.lines() {
        for attr in ["src=\"/ui/", "href=\"/ui/"] {
            if let Some(rest) = line.split(attr).nth(1) {
                wanted.push(rest.split('"').next().unwrap().to_string());
            }
        }
    }
    for asset in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
        let dir = asset.path.rsplit_once('/').map_or("", |(d, _)| d);
        for line in asset.body.lines().filter(|l| l.starts_with("import ")) {
            let target = line.rsplit_once("from '").unwrap().1.trim_end_matches("';");
            let mut parts: Vec<&str> = if dir.is_empty() {
                vec![]
            } else {
                dir.split('/').collect()
            };
            for seg in target.split('/') {
                match seg {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    s => parts.push(s),
                }
            }
            wanted.push(parts.join("/"));
        }
    }
    assert!(wanted.len() > 10, "{wanted:?}");
    for file in &wanted {
        let r = app
            .client
            .get(app.url(&format!("/ui/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "/ui/{file}");
        let t = r.headers()["content-type"].to_str().unwrap().to_string();
        if file.ends_with(".js") {
            assert_eq!(t, "text/javascript; charset=utf-8", "{file}");
        }
    }
    let (s, v) = app.call(Method::GET, "/ui/missing.js", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "route_not_found", "{v}");
    let (s, v) = app.call(Method::POST, "/ui", None, Some(&json!({}))).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED, "{v}");
}

#[tokio::test]
async fn the_stack_view_shows_what_the_key_opens_and_whether_it_may_move_the_clock() {
    let app = spawn_with(|mut c| {
        c.api_keys
            .push(platform::config::ApiKeyConfig::parse("*/*=key-all:local").unwrap());
        c
    })
    .await;
    let (s, v) = app.call(Method::GET, "/sim/v1/stack", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
    let (s, v) = app.get("/sim/v1/stack").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["platform_url"], app.url(""));
    assert_eq!(v["openapi_url"], app.url("/openapi.json"));
    assert_eq!(v["key_name"], "alice");
    assert_eq!(
        v["workspaces"],
        json!([{"org_id": ORG, "workspace_id": WS}])
    );
    assert_eq!(
        v["seed"],
        Value::Null,
        "a workspace's key does not see the seed"
    );
    assert_eq!(v["clock"]["now"], "2026-03-02T12:00:00.000Z");
    assert_eq!(v["clock"]["simulated"], true);
    assert_eq!(v["clock"]["may_move"], true);
    assert_eq!(v["clock"]["next_due_at"], Value::Null, "nothing is due yet");
    assert_eq!(v["key_services"], json!([]));
    // A campaign makes its start the next due event.
    create(
        &app,
        &campaign(
            1.0,
            json!({"max_retries": 0, "retry_on": []}),
            ("00:00", "23:59"),
            ALL_DAYS,
        ),
    )
    .await;
    let (_, v) = app.get("/sim/v1/stack").await;
    assert_eq!(v["clock"]["next_due_at"], "2026-03-02T12:05:00.000Z");
    let (_, all) = app
        .call(Method::GET, "/sim/v1/stack", Some("key-all"), None)
        .await;
    assert_eq!(all["seed"], 7, "an operator's key sees the seed");
    assert_eq!(
        all["workspaces"],
        json!([{"org_id": "*", "workspace_id": "*"}])
    );

    // With clock admin keys, a workspace's key may only read the clock.
    let locked = spawn_with(|mut c| {
        c.clock_admin_keys = vec!["key-clock".into()];
        c
    })
    .await;
    let (_, v) = locked.get("/sim/v1/stack").await;
    assert_eq!(v["clock"]["may_move"], false);
    let (_, v) = locked
        .call(Method::GET, "/sim/v1/stack", Some("key-clock"), None)
        .await;
    assert_eq!(v["clock"]["may_move"], true);
    assert_eq!(
        v["workspaces"],
        json!([]),
        "a clock admin key opens no workspace"
    );
}

#[tokio::test]
async fn the_pages_reads_pass_by_the_journal_and_the_fault_rules() {
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            "/sim/v1/faults",
            &json!({"kind": "status", "status": 503, "operation_id": "list_campaigns"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let read = |observer: bool| {
        let mut r = app
            .client
            .get(app.url(&campaigns_path()))
            .header("x-api-key", KEY);
        if observer {
            r = r.header(OBSERVER_HEADER, "ui");
        }
        r.send()
    };
    assert_eq!(
        read(true).await.unwrap().status(),
        StatusCode::OK,
        "the page meets no fault"
    );
    assert_eq!(
        read(false).await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "a client meets it"
    );
    let (_, journal) = app.get("/sim/v1/journal").await;
    assert_eq!(
        journal["total"], 1,
        "only the client's read is journaled: {journal}"
    );
    let (_, rules) = app.get("/sim/v1/faults").await;
    assert_eq!(
        rules["items"][0]["matched"], 1,
        "the page's read did not count: {rules}"
    );
    // A write to the interface is the client's whatever it says: it cannot hide a
    // violation from the verdict behind the page's header.
    let s = app
        .client
        .post(app.url(&campaigns_path()))
        .header("x-api-key", KEY)
        .header(OBSERVER_HEADER, "ui")
        .json(&json!({"name": "hidden?"}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, journal) = app.get("/sim/v1/journal").await;
    assert_eq!(journal["total"], 2, "the write is journaled: {journal}");
}

#[tokio::test]
async fn a_campaigns_activity_tells_its_status_changes_and_counts_its_dials_by_minute() {
    let app = spawn_app().await;
    let id = create(
        &app,
        &campaign(
            2.0,
            json!({"max_retries": 1, "retry_on": ["busy"], "threshold_seconds": 10}),
            ("00:00", "23:59"),
            ALL_DAYS,
        ),
    )
    .await;
    let path = format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/campaigns/{id}/activity");
    let (s, v) = app.get(&path).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "scheduled");
    assert_eq!(
        v["status_changes"],
        json!([{"at": "2026-03-02T12:00:00.000Z", "status": "scheduled", "cause": "created", "by": "alice"}])
    );
    assert_eq!(v["from"], "2026-03-02T12:05:00.000Z");
    assert_eq!(
        v["until"], "2026-03-02T12:15:00.000Z",
        "at least ten minutes are shown"
    );
    assert_eq!(v["bucket_secs"], 60);
    assert_eq!(v["buckets"], json!([]));
    // Busy, no answer and connected numbers; paused and resumed on the way.
    let numbers: Vec<String> = (0..30)
        .map(|i| magic(200 + i, [0, 1, 2][i as usize % 3]))
        .collect();
    add_users(&app, &id, &numbers).await;
    advance_to(&app, "2026-03-02T12:06:00Z").await;
    // A minute in: calls in progress are counted as such, beside the ended ones.
    let (_, v) = app.get(&path).await;
    let series: Vec<String> = serde_json::from_value(v["series"].clone()).unwrap();
    assert_eq!(series.last().map(String::as_str), Some("in_progress"));
    let live: u64 = v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[series.len()].as_u64().unwrap())
        .sum();
    let st = stats(&app, &id).await;
    assert_eq!(live, st["users_in_progress"].as_u64().unwrap(), "{v}");
    assert!(live > 0, "calls are in progress at 12:06: {v}");
    let (s, v) = app
        .put(
            &format!("{}/{id}/status", campaigns_path()),
            &json!({"action": "pause"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    advance(&app, 600.0).await;
    let (s, v) = app
        .put(
            &format!("{}/{id}/status", campaigns_path()),
            &json!({"action": "resume"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    advance(&app, 7200.0).await;
    let (_, v) = app.get(&path).await;
    let changes: Vec<(String, String, String)> = v["status_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["at"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
                c["cause"].as_str().unwrap().into(),
            )
        })
        .collect();
    let change = |at: &str, status: &str, cause: &str| {
        (at.to_string(), status.to_string(), cause.to_string())
    };
    assert_eq!(
        changes,
        [
            change("2026-03-02T12:00:00.000Z", "scheduled", "created"),
            change("2026-03-02T12:05:00.000Z", "active", "start_reached"),
            change("2026-03-02T12:06:00.000Z", "paused", "pause"),
            change("2026-03-02T12:16:00.000Z", "active", "resume"),
        ]
    );
    assert_eq!(v["until"], "2026-03-02T14:16:00.000Z", "to now");
    assert_eq!(
        v["bucket_secs"], 300,
        "two hours and eleven minutes in 5-minute buckets"
    );
    // Every ended dial is in a bucket, under its outcome, as the statistics count them.
    let series: Vec<String> = serde_json::from_value(v["series"].clone()).unwrap();
    let mut sums = vec![0u64; series.len()];
    for b in v["buckets"].as_array().unwrap() {
        let b: Vec<u64> = serde_json::from_value(b.clone()).unwrap();
        assert_eq!(b.len(), series.len() + 1);
        for (k, n) in b[1..].iter().enumerate() {
            sums[k] += n;
        }
    }
    let st = stats(&app, &id).await;
    for (k, name) in series.iter().enumerate() {
        let counted = match name.as_str() {
            "in_progress" => &st["users_in_progress"],
            _ => &st["attempts_by_outcome"][name],
        };
        assert_eq!(sums[k], counted.as_u64().unwrap(), "{name}: {v}");
    }
    assert!(sums.iter().sum::<u64>() >= 40, "dials were made: {sums:?}");
    // None while paused (12:06 to 12:16: buckets 0 to 2 hold dials of 12:05 only, after the
    // resume from 12:16, bucket 2 on).
    let indices: Vec<u64> = v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[0].as_u64().unwrap())
        .collect();
    assert_eq!(indices[0], 0, "{indices:?}");
    assert!(
        !indices.contains(&1),
        "nothing dialled 12:10 to 12:15: {indices:?}"
    );
    assert_eq!(
        v["windows"],
        json!([["2026-03-02T12:05:00.000Z", "2026-03-02T14:16:00.000Z"]])
    );

    // The chart: the same activity, drawn by the scenario report's chart.
    let r = app
        .client
        .get(app.url(&path.replace("/activity", "/chart")))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    let svg = r.text().await.unwrap();
    assert!(svg.starts_with("<svg id=\"dials-chart\""), "{svg}");
    let neutral = |width| contracts::report::chart::Frame {
        width,
        window_fill: contracts::report::chart::Frame::NEUTRAL_WINDOWS,
    };
    assert_eq!(
        svg,
        contracts::report::chart::render_in(
            &contracts::report::chart::Chart {
                from: "2026-03-02T12:05:00.000Z".into(),
                until: "2026-03-02T14:16:00.000Z".into(),
                run_until: "2026-03-02T14:16:00.000Z".into(),
                bucket_secs: 300,
                series: series.clone(),
                buckets: serde_json::from_value(v["buckets"].clone()).unwrap(),
                windows: serde_json::from_value(v["windows"].clone()).unwrap(),
                faults: vec![],
                marks: [
                    (2, "12:05", "scheduled -> active"),
                    (3, "12:06", "active -> paused"),
                    (4, "12:16", "paused -> active")
                ]
                .into_iter()
                .map(|(n, at, detail)| contracts::report::chart::Mark {
                    n,
                    at: format!("2026-03-02T{at}:00.000Z"),
                    kind: "status".into(),
                    subject: "Engine test".into(),
                    detail: detail.into(),
                })
                .collect(),
            },
            neutral(1000)
        ),
        "the chart module draws the activity, its marks numbered as the status changes, \
         1000 wide unless asked, its calling windows in grey"
    );
    // Drawn for a phone's width when asked, its text the same size.
    let r = app
        .client
        .get(app.url(&format!(
            "{}?width=358",
            path.replace("/activity", "/chart")
        )))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let narrow = r.text().await.unwrap();
    assert!(narrow.contains("viewBox=\"0 0 358 "), "{narrow}");
    assert!(narrow.contains("font-size=\"11\""));
    assert!(
        narrow.matches("class=\"tick\"").count() <= 3,
        "fewer time ticks: {narrow}"
    );
    let (s, v) = app
        .get(&format!(
            "{}?width=100",
            path.replace("/activity", "/chart")
        ))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["detail"][0]["loc"], json!(["query", "width"]));
    for part in [
        "class=\"series series-busy\"",
        "class=\"series series-connected\"",
        "class=\"window\"",
        "data-n=\"2\u{2013}3\"",
        "Engine test: paused",
    ] {
        assert!(svg.contains(part), "{part} missing");
    }

    // Another workspace's key sees no such campaign.
    let (s, v) = app
        .call(
            Method::GET,
            &format!("/sim/v1/orgs/{ORG}/workspaces/{WS2}/campaigns/{id}/activity"),
            Some(KEY2),
            None,
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!("campaign_not_found"))
    );
}

struct FakeAudit;

impl KeyServiceAudit for FakeAudit {
    fn calls(&self, after: u64, limit: usize) -> KeyServiceCalls {
        let items: Vec<KeyServiceCall> = (1..=3)
            .filter(|seq| *seq > after)
            .take(limit)
            .map(|seq| KeyServiceCall {
                seq,
                at: chrono::DateTime::from_timestamp(1_772_452_800, 0).unwrap(),
                endpoint: if seq == 1 { "auth" } else { "decrypt-key" }.into(),
                caller: Some("platform".into()),
                key_alias: Some("tenant-a".into()),
                outcome: "OK".into(),
                status: Some(200),
                latency_ms: 1.5,
                faults: vec![],
                reason: None,
                request_id: None,
            })
            .collect();
        KeyServiceCalls {
            items,
            next_seq: 4,
            dropped: 0,
        }
    }
}

#[tokio::test]
async fn the_key_services_calls_are_shown_only_for_the_workspace_it_serves_in_process() {
    let calls = format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/key-service/calls");
    let plain = spawn_app().await;
    let (s, v) = plain.get(&calls).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    assert_eq!(v["error"]["code"], "key_service_audit_not_available");
    let app = spawn_built(
        |c| c,
        |b| {
            b.key_service_audit(AuditSource {
                ws: WorkspaceRef::new(ORG, WS),
                audit: Arc::new(FakeAudit),
            })
        },
    )
    .await;
    let (s, v) = app.get(&format!("{calls}?after=1&limit=1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["items"].as_array().unwrap().len(), 1);
    assert_eq!(v["items"][0]["seq"], 2);
    assert_eq!(v["items"][0]["endpoint"], "decrypt-key");
    assert_eq!(v["next_seq"], 4);
    let (s, v) = app.get(&format!("{calls}?limit=101")).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["detail"][0]["loc"], json!(["query", "limit"]));
    let (s, _) = app
        .call(
            Method::GET,
            &format!("/sim/v1/orgs/{ORG}/workspaces/{WS2}/key-service/calls"),
            Some(KEY2),
            None,
        )
        .await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "another workspace's key service is not this one"
    );
    let (s, _) = app.call(Method::GET, &calls, Some(KEY2), None).await;
    assert_eq!(
        s,
        StatusCode::UNAUTHORIZED,
        "another workspace's key may not read it"
    );
}
