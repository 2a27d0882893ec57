//! Webhooks, instant outbound and inbound calls, and the simulated clock, as the engine
//! runs them (driven over HTTP, `/sim/v1/clock/advance`).

use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::engine::*;
use crate::helpers::*;

async fn webhook_receiver() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hooks"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    server
}

/// Every event the receiver got, each signature checked ([`verify`]).
async fn verified_events(hooks: &MockServer) -> Vec<Value> {
    hooks
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(verify)
        .collect()
}

fn verify(req: &wiremock::Request) -> Value {
    let ts: i64 = req
        .headers
        .get("x-webhook-timestamp")
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let sig = req
        .headers
        .get("x-webhook-signature")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(
        platform::webhooks::verify(WEBHOOK_SECRET.as_bytes(), ts, &req.body, sig),
        "signature of {}",
        String::from_utf8_lossy(&req.body)
    );
    serde_json::from_slice(&req.body).unwrap()
}

#[tokio::test]
async fn campaign_webhooks_are_signed_and_tell_what_comes_next() {
    let hooks = webhook_receiver().await;
    let app = spawn_app().await;
    let mut body = campaign(
        1.0,
        json!({"max_retries": 1, "retry_on": ["busy"]}),
        ("09:00", "17:00"),
        WEEKDAYS,
    );
    body["app_config"]["webhook_config"] =
        json!({"url": format!("{}/hooks", hooks.uri()), "metadata": {"batch": 7}});
    let id = create(&app, &body).await;
    add_users(&app, &id, &[magic(202, 1), magic(203, 0)]).await;
    let report = advance(&app, 86400.0).await;
    assert_eq!(report["webhooks_delivered"], 3, "{report}");
    let events = verified_events(&hooks).await;
    assert_eq!(events.len(), 3);
    let busy_first = events
        .iter()
        .find(|e| e["connectivity_status"] == "busy" && e["retry_attempt"] == 0)
        .unwrap();
    assert_eq!(busy_first["next_action_status"], "retry");
    assert_eq!(busy_first["completion_status"], "failed");
    let busy_last = events
        .iter()
        .find(|e| e["connectivity_status"] == "busy" && e["retry_attempt"] == 1)
        .unwrap();
    assert_eq!(
        busy_last["next_action_status"],
        Value::Null,
        "out of retries"
    );
    let connected = events
        .iter()
        .find(|e| e["connectivity_status"] == "connected")
        .unwrap();
    assert_eq!(connected["completion_status"], "completed");
    assert_eq!(connected["duration"], 90.0);
    assert_eq!(connected["metadata"], json!({"batch": 7}));
    assert_eq!(connected["user_phone_number"], magic(203, 0));
    assert_eq!(connected["initial_agent_variables"], json!({"n": 1}));
    insta::assert_json_snapshot!("campaign_webhook_connected", connected);
    let (_, deliveries) = app
        .get(&format!(
            "/sim/v1/orgs/{ORG}/workspaces/{WS}/webhook-deliveries"
        ))
        .await;
    assert_eq!(deliveries["total"], 3);
    assert!(
        deliveries["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["status"] == "delivered")
    );
}

#[tokio::test]
async fn failed_webhooks_are_retried_with_backoff_on_the_clock() {
    let hooks = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(2)
        .mount(&hooks)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&hooks)
        .await;
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            &outbounds_path(),
            &json!({
                "app_config": {"app_id": "a", "app_version": 1, "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
                "user_config": {"user_phone_number": magic(202, 0)},
                "webhook_config": {"url": format!("{}/x", hooks.uri())}
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // The call lasts 5 s of ringing and 90 s of talk; the first try fails at its end, the
    // second 1 s later, the third 2 s after that succeeds.
    advance(&app, 95.0).await;
    assert_eq!(hooks.received_requests().await.unwrap().len(), 1);
    advance(&app, 1.0).await;
    assert_eq!(hooks.received_requests().await.unwrap().len(), 2);
    advance(&app, 2.0).await;
    let reqs = hooks.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 3);
    let event = verify(&reqs[2]);
    assert_eq!(event["attempt_id"], v["attempt_id"]);
    let (_, deliveries) = app
        .get(&format!(
            "/sim/v1/orgs/{ORG}/workspaces/{WS}/webhook-deliveries"
        ))
        .await;
    let d = &deliveries["items"][0];
    assert_eq!(
        (d["status"].as_str(), d["tries"].as_u64()),
        (Some("delivered"), Some(3))
    );
}

#[tokio::test]
async fn instant_outbound_is_dialled_at_once_and_its_webhook_sent_when_it_ends() {
    let hooks = webhook_receiver().await;
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            &outbounds_path(),
            &json!({
                "app_config": {
                    "app_id": "a", "app_version": 1,
                    "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"},
                    "agent_variables": {"name": "Ada"},
                    "app_overrides": {"initial_bot_message": "Hello Ada"}
                },
                "user_config": {"user_phone_number": magic(202, 8)},
                "webhook_config": {"url": format!("{}/hooks", hooks.uri()), "metadata": {"ticket": 1}}
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let attempt = v["attempt_id"].as_str().unwrap().to_string();
    // Dialled at the current simulated time, no window; 5 s ring + 30 s talk.
    advance(&app, 34.0).await;
    assert!(
        hooks.received_requests().await.unwrap().is_empty(),
        "not before it ends"
    );
    advance(&app, 1.0).await;
    let reqs = hooks.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 1);
    let event = verify(&reqs[0]);
    assert_eq!(event["attempt_id"], attempt.as_str());
    assert_eq!(event["status"], "connected");
    assert_eq!(event["duration"], 30.0);
    assert_eq!(
        event["webhook_config"],
        json!({"url": format!("{}/hooks", hooks.uri()), "metadata": {"ticket": 1}})
    );
    insta::assert_json_snapshot!("outbound_webhook", event, {".attempt_id" => "[attempt]", ".webhook_config.url" => "[url]"});
}

#[tokio::test]
async fn inbound_calls_are_personalised_from_the_latest_cohort_and_refused_when_paused_or_outside()
{
    let hooks = webhook_receiver().await;
    let url = format!("{ORG}/{WS}={}/hooks", hooks.uri());
    let app = spawn_with(move |mut c| {
        c.deployment_webhooks = vec![platform::config::DeploymentWebhook::parse(&url).unwrap()];
        c
    })
    .await;
    let dep = create_deployment(&app, "Desk", "+14155550199").await;
    let cohorts =
        format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts/stream");
    for (name, greeting) in [("first", "Hi from first"), ("second", "Hi from second")] {
        let (s, v) = app
            .post(
                &cohorts,
                &json!({"name": name, "users": [{"phone_number": "+919876543210", "user_identifier": name,
                        "app_variables": {"tier": name}, "app_overrides": {"initial_bot_message": greeting}}]}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let inbound = format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/inbound-calls");
    let call = |caller: &str| json!({"caller": caller, "dialled": "+14155550199"});
    // Monday 12:00Z is 17:30 in Kolkata: outside 09:00-17:00.
    let (_, v) = app.post(&inbound, &call("+919876543210")).await;
    assert_eq!(
        (v["answered"].as_bool(), v["rejection"].as_str()),
        (Some(false), Some("outside_schedule"))
    );
    app.clock.advance(Duration::hours(18)).unwrap(); // Tuesday 06:00Z = 11:30 IST
    let (_, v) = app.post(&inbound, &call("+919876543210")).await;
    assert_eq!(v["answered"], false, "Tuesday is not an allowed day: {v}");
    app.clock.advance(Duration::days(3)).unwrap(); // Friday 06:00Z = 11:30 IST
    let (_, v) = app.post(&inbound, &call("+919876543210")).await;
    assert_eq!(v["answered"], true, "{v}");
    assert_eq!(v["user_identifier"], "second", "the latest upload wins");
    assert_eq!(v["agent_variables"], json!({"tier": "second"}));
    insta::assert_json_snapshot!("inbound_answered", v, {".call_id" => "[id]", ".interaction_id" => "[id]", ".cohort_id" => "[id]"});
    let (_, v) = app.post(&inbound, &call("+14155550123")).await;
    assert_eq!(
        (v["answered"].as_bool(), v["cohort_id"].as_str()),
        (Some(true), None),
        "unknown caller: answered, not personalised"
    );
    app.put(
        &format!("{}/{dep}/status", deployments_path()),
        &json!({"action": "pause"}),
    )
    .await;
    let (_, v) = app.post(&inbound, &call("+919876543210")).await;
    assert_eq!(
        (v["answered"].as_bool(), v["rejection"].as_str()),
        (Some(false), Some("deployment_paused"))
    );
    let (_, list) = app.get(&inbound).await;
    assert_eq!(list["total"], 5);
    // The answered calls' events arrive when they end.
    advance(&app, 3600.0).await;
    let events = verified_events(&hooks).await;
    assert_eq!(events.len(), 2);
    let personal = events
        .iter()
        .find(|e| e["user_phone_number"] == "+919876543210")
        .unwrap();
    assert_eq!(personal["deployment_id"], dep.as_str());
    assert_eq!(personal["final_agent_variables"], json!({"tier": "second"}));
    assert_eq!(
        personal["interaction_transcript"][0]["content"],
        "Hi from second"
    );
    let (s, _) = app
        .call(
            Method::POST,
            &inbound,
            Some(KEY),
            Some(&json!({"caller": "123", "dialled": "+1"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn the_clock_only_moves_forward_and_only_when_simulated() {
    let app = spawn_app().await;
    let (_, v) = app.get("/sim/v1/clock").await;
    assert_eq!(
        v,
        json!({"now": "2026-03-02T12:00:00.000Z", "simulated": true})
    );
    let (s, v) = app
        .put("/sim/v1/clock", &json!({"now": "2026-03-01T00:00:00Z"}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    insta::assert_json_snapshot!("clock_backwards", v);
    let (s, v) = app
        .put("/sim/v1/clock", &json!({"now": "2026-03-03T00:00:00Z"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["now"], "2026-03-03T00:00:00.000Z");
    let (s, v) = app
        .post("/sim/v1/clock/advance", &json!({"seconds": -5}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
}

#[tokio::test]
async fn no_move_takes_the_shared_clock_more_than_400_days_ahead() {
    let app = spawn_app().await;
    for (method, path, body, field) in [
        (
            Method::POST,
            "/sim/v1/clock/advance",
            json!({"to": "9999-01-01T00:00:00Z"}),
            "to",
        ),
        (
            Method::PUT,
            "/sim/v1/clock",
            json!({"now": "9999-01-01T00:00:00Z"}),
            "now",
        ),
        (
            Method::POST,
            "/sim/v1/clock/advance",
            json!({"to": "2027-04-06T12:00:00.001Z"}),
            "to",
        ),
    ] {
        let (s, v) = app.call(method, path, Some(KEY), Some(&body)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {v}");
        assert_eq!(v["detail"][0]["loc"], json!(["body", field]), "{v}");
        assert!(
            v["detail"][0]["msg"]
                .as_str()
                .unwrap()
                .contains("at most 2027-04-06T12:00:00.000Z"),
            "{v}"
        );
    }
    let (_, v) = app.get("/sim/v1/clock").await;
    assert_eq!(
        v["now"], "2026-03-02T12:00:00.000Z",
        "the clock did not move"
    );
    // Exactly 400 days is allowed.
    let (s, v) = app
        .post(
            "/sim/v1/clock/advance",
            &json!({"to": "2027-04-06T12:00:00Z"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn clock_admin_keys_alone_move_the_clock_and_any_key_reads_it() {
    let app = spawn_with(|mut c| {
        c.clock_admin_keys = vec!["sk-clock-admin".into()];
        c
    })
    .await;
    let advance = json!({"seconds": 60});
    let (s, v) = app.post("/sim/v1/clock/advance", &advance).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{v}");
    assert_eq!(v["error"]["code"], "clock_admin_key_required", "{v}");
    assert_eq!(v["error"]["type"], "permission_error", "{v}");
    let (s, _) = app
        .put("/sim/v1/clock", &json!({"now": "2026-03-03T00:00:00Z"}))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, v) = app.get("/sim/v1/clock").await;
    assert_eq!(s, StatusCode::OK, "a workspace key reads the clock: {v}");
    assert_eq!(v["now"], "2026-03-02T12:00:00.000Z", "it did not move");
    let (s, v) = app
        .call(
            Method::POST,
            "/sim/v1/clock/advance",
            Some("sk-clock-admin"),
            Some(&advance),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["now"], "2026-03-02T12:01:00.000Z");
    let (s, _) = app
        .call(
            Method::POST,
            "/sim/v1/clock/advance",
            Some("no-such-key"),
            Some(&advance),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // The admin key opens no workspace.
    let (s, _) = app
        .call(Method::GET, &campaigns_path(), Some("sk-clock-admin"), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}
