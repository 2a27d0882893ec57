//! Each mutant breaks exactly one rule of the contract (the mock behind a proxy); the whole
//! suite, with `--sim` and another workspace, must fail exactly the checks of that rule.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use contracts::clock::{Clock, SimClock};
use reqwest::Method;
use scenarios::checks::Outcome;
use serde_json::{Value, json};

use super::support::{KEY, KEY2, Mutation, Req, Resp, WS, run, sim_clock, spawn};

/// Runs the suite against the mock behind `mutation`, and asserts that exactly `expected`
/// fail and nothing is skipped.
async fn assert_fails_exactly(mutation: Mutation, expected: &[&str]) {
    assert_fails_exactly_on(sim_clock(), mutation, expected).await;
}

/// [`assert_fails_exactly`] with the mock on `clock`.
async fn assert_fails_exactly_on(clock: SimClock, mutation: Mutation, expected: &[&str]) {
    let mock = spawn(Some(clock), Some(mutation)).await;
    let report = run(&mock.url, true, true).await;
    mock.stop().await;
    let failed: BTreeSet<&str> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail)
        .map(|c| c.id.as_str())
        .collect();
    let want: BTreeSet<&str> = expected.iter().copied().collect();
    let details: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail && !want.contains(c.id.as_str()))
        .map(|c| {
            format!(
                "{}: expected {:?}, observed {}",
                c.id,
                c.expected,
                serde_json::to_string(&c.evidence).unwrap()
            )
        })
        .collect();
    assert_eq!(failed, want, "unexpected failures: {details:#?}");
    let skipped: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Skip)
        .map(|c| c.id.as_str())
        .collect();
    assert!(skipped.is_empty(), "skipped: {skipped:?}");
}

fn respond(f: impl Fn(&Req, &mut Resp) + Send + Sync + 'static) -> Mutation {
    Mutation {
        request: None,
        response: Some(Box::new(f)),
    }
}

fn intercept(f: impl Fn(&mut Req) -> Option<Resp> + Send + Sync + 'static) -> Mutation {
    Mutation {
        request: Some(Box::new(f)),
        response: None,
    }
}

fn parse(s: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_summary_without_created_by() {
    let m = respond(|req, resp| {
        if req.method == Method::POST && req.is_campaigns() && resp.status == 200 {
            let mut v = resp.json().unwrap();
            v.as_object_mut().unwrap().remove("created_by");
            resp.set_json(&v);
        }
    });
    assert_fails_exactly(m, &["endpoints.campaign_create"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_for_a_start_60_s_away() {
    // A start 60 to 119 s ahead of the mock's clock is moved to 120 s, so it is accepted.
    let clock = sim_clock();
    let now = clock.clone();
    let m = intercept(move |req| {
        if req.method == Method::POST && req.is_campaigns() {
            let mut body = req.json()?;
            let start = parse(&body["start_timestamp"])?;
            let end = parse(&body["end_timestamp"])?;
            let ahead = start - now.now();
            if ahead >= Duration::seconds(60) && ahead < Duration::seconds(120) {
                let moved = now.now() + Duration::seconds(120);
                body["start_timestamp"] = json!(moved.to_rfc3339());
                body["end_timestamp"] = json!((end + (moved - start)).to_rfc3339());
                req.body = serde_json::to_vec(&body).unwrap();
            }
        }
        None
    });
    assert_fails_exactly_on(clock, m, &["limits.campaign_start_min"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_page_uri_set_on_the_last_page() {
    let m = respond(|req, resp| {
        if req.method == Method::GET && req.is_deployments() && resp.status == 200 {
            let mut v = resp.json().unwrap();
            if v["next_page_uri"].is_null() {
                let offset = v["offset"].as_u64().unwrap() + v["limit"].as_u64().unwrap();
                v["next_page_uri"] = json!(format!("{}?offset={offset}", req.path));
                resp.set_json(&v);
            }
        }
    });
    assert_fails_exactly(m, &["pagination.next_null_on_last_page", "pagination.walk"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_deployment_still_listed() {
    // Remembers each deployment as last answered; once deleted, it reappears in lists whose
    // search it matches.
    let known: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
    let ghosts: Arc<Mutex<Vec<Value>>> = Arc::default();
    let m = respond(move |req, resp| {
        if let Some(v) = resp.json()
            && let Some(id) = v["deployment_id"].as_str()
            && resp.status == 200
        {
            let mut item = v.clone();
            let numbers: Vec<Value> = v["connection_configs"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| c["phone_numbers"].as_array().cloned().unwrap_or_default())
                .collect();
            item["phone_numbers"] = json!(numbers);
            known.lock().unwrap().insert(id.to_string(), item);
        }
        if req.method == Method::DELETE
            && resp.status == 204
            && let Some(item) = req
                .deployment_id()
                .and_then(|id| known.lock().unwrap().get(id).cloned())
        {
            ghosts.lock().unwrap().push(item);
        }
        if req.method == Method::GET && req.is_deployments() && resp.status == 200 {
            let search = req.param("search").unwrap_or_default().to_lowercase();
            let mut v = resp.json().unwrap();
            for g in ghosts.lock().unwrap().iter() {
                let name = g["name"].as_str().unwrap_or_default().to_lowercase();
                if name.contains(&search) {
                    v["items"].as_array_mut().unwrap().push(g.clone());
                    v["total"] = json!(v["total"].as_u64().unwrap() + 1);
                }
            }
            resp.set_json(&v);
        }
    });
    assert_fails_exactly(m, &["states.deployment_delete_final"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_workspaces_key_accepted() {
    let m = intercept(|req| {
        let other = req.headers.get("x-api-key").is_some_and(|k| k == KEY2);
        if other && req.path.contains(&format!("/workspaces/{WS}/")) {
            req.headers.insert("x-api-key", KEY.parse().unwrap());
        }
        None
    });
    assert_fails_exactly(m, &["auth.other_workspace_key"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_for_a_malformed_body() {
    let m = intercept(|req| {
        let json = req
            .headers
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        let writes = matches!(req.method, Method::POST | Method::PUT | Method::PATCH);
        (writes && json && req.json().is_none()).then(|| {
            Resp::json_answer(
                500,
                &json!({"error": {"message": "internal", "type": "internal_error", "code": "internal_error"}}),
            )
        })
    });
    assert_fails_exactly(m, &["errors.malformed_json"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_key_accepted() {
    let m = intercept(|req| {
        if !req.headers.contains_key("x-api-key") && req.path.starts_with("/api/") {
            req.headers.insert("x-api-key", KEY.parse().unwrap());
        }
        None
    });
    assert_fails_exactly(
        m,
        &[
            "auth.no_key",
            "auth.refusals_are_401",
            "errors.missing_key_401",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_rows_not_counted() {
    let m = respond(|req, resp| {
        if req.method == Method::GET && req.is_cohort() && resp.status == 200 {
            let mut v = resp.json().unwrap();
            if v["result"].is_object() {
                v["result"]["rejected_records"] = json!(0);
                resp.set_json(&v);
            }
        }
    });
    assert_fails_exactly(m, &["cohorts.upload_completes"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_campaign_answered_active() {
    let m = respond(|req, resp| {
        if req.method == Method::POST && req.is_campaigns() && resp.status == 200 {
            let mut v = resp.json().unwrap();
            v["status"] = json!("active");
            resp.set_json(&v);
        }
    });
    assert_fails_exactly(m, &["states.campaign_created_scheduled"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_that_never_activates() {
    let m = respond(|req, resp| {
        if req.method == Method::GET && req.is_campaign() && resp.status == 200 {
            let mut v = resp.json().unwrap();
            if v["status"] == "active" {
                v["status"] = json!("scheduled");
                resp.set_json(&v);
            }
        }
    });
    // The status changes from active see the campaigns scheduled too.
    assert_fails_exactly(
        m,
        &[
            "sim.campaign_activates",
            "sim.campaign_pause_active",
            "sim.campaign_resume_after_start",
            "sim.campaign_cancel_running",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_ignored() {
    let m = intercept(|req| {
        if req.method == Method::POST && req.is_campaigns() {
            let mut body = req.json()?;
            for c in body["app_config"]["connection_configs"].as_array_mut()? {
                c["weight"] = json!(1);
            }
            req.body = serde_json::to_vec(&body).unwrap();
        }
        None
    });
    assert_fails_exactly(m, &["sim.rule4_weights"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_or_cancelling_a_running_campaign_refused() {
    // Knows each campaign's status from the answers that showed it; a pause or cancel of
    // one last seen active is refused as if active were not a source state.
    let seen: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let record = seen.clone();
    let m = Mutation {
        request: Some(Box::new(move |req: &mut Req| {
            let id = req.campaign_status_id()?;
            let action = req.json()?["action"].as_str()?.to_string();
            let active = seen.lock().unwrap().get(id).map(String::as_str) == Some("active");
            (active && (action == "pause" || action == "cancel")).then(|| {
                Resp::json_answer(
                    409,
                    &json!({"error": {"message": format!("cannot {action} an active campaign"),
                        "type": "conflict", "code": "invalid_status_transition"}}),
                )
            })
        })),
        response: Some(Box::new(move |_req: &Req, resp: &mut Resp| {
            if let Some(v) = resp.json()
                && let (Some(id), Some(status)) = (v["campaign_id"].as_str(), v["status"].as_str())
            {
                record
                    .lock()
                    .unwrap()
                    .insert(id.to_string(), status.to_string());
            }
        })),
    };
    assert_fails_exactly(
        m,
        &["sim.campaign_pause_active", "sim.campaign_cancel_running"],
    )
    .await;
}
