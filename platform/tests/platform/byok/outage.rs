//! A campaign through a key-service outage: the dials wait, nothing is lost.

use super::*;

/// Users whose outcomes do not depend on when they are dialled (telephony-sim's magic
/// numbers): 00 connects, 01 is always busy, 09 is busy once then connects.
fn campaign_users() -> Vec<Value> {
    let mut users = Vec::new();
    for area in ["202", "212", "213", "312"] {
        for code in ["00", "01", "09"] {
            users.push(json!({"phone_number": format!("+1{area}55501{code}"), "user_identifier": format!("u-{area}-{code}")}));
        }
    }
    users
}

/// 24 attempts: 4 x 1 + 4 x 3 + 4 x 2.
const CAMPAIGN_ATTEMPTS: u64 = 24;

fn outage_campaign() -> Value {
    json!({
        "name": "Outage drill",
        "start_timestamp": "2026-03-02T13:00:00Z",
        "end_timestamp": "2026-03-03T13:00:00Z",
        "allowed_schedule": {
            "timezone": "UTC",
            "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
            "allowed_start_time": "06:00",
            "allowed_end_time": "22:00"
        },
        "app_config": {
            "app_id": "app-1",
            "app_version": 1,
            "attempts_per_second": 0.1,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550150"], "weight": 1}
            ],
            "retry_config": {"max_retries": 2, "retry_on": ["busy"], "threshold_seconds": 10, "retry_interval_minutes": 4}
        }
    })
}

async fn statistics(t: &TestApp, id: &str) -> Value {
    let (s, v) = t.get(&format!("{}/{id}", campaigns_path())).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["statistics"].clone()
}

/// Runs the drill campaign to 16:00; with `outage`, the key service answers 503 to
/// everything from 13:02 to 13:20 (service clock). Answers the final statistics.
async fn run_drill(outage: bool) -> Value {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let (s, v) = t.post(&campaigns_path(), &outage_campaign()).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let id = v["campaign_id"].as_str().unwrap().to_string();
    let (s, v) = t
        .post(
            &format!("{}/{id}/cohorts/stream", campaigns_path()),
            &json!({"name": "Drill", "users": campaign_users()}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["valid_records"], 12, "{v}");
    if outage {
        kms.fault(
            FaultKind::ServiceUnavailable,
            EndpointScope::All,
            FaultTrigger::Window {
                from: Some("2026-03-02T13:02:00Z".parse().unwrap()),
                until: "2026-03-02T13:20:00Z".parse().unwrap(),
            },
        );
    }
    // The key fetched for the first dials at 13:00 lives until 13:05.
    advance_to(&t, "2026-03-02T13:05:00Z").await;
    let before = statistics(&t, &id).await;
    let dialled_before = before["attempts_total"].as_u64().unwrap();
    assert!(
        dialled_before >= 5,
        "dials went on while the key was cached: {before}"
    );
    if outage {
        // During the outage an operation that needs the key is refused (and not kept).
        let (s, v) = post_outbound(&t, None).await;
        assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
        advance_to(&t, "2026-03-02T13:19:59Z").await;
        let during = statistics(&t, &id).await;
        assert_eq!(
            during["attempts_total"], before["attempts_total"],
            "no attempt while the key service is out: {during}"
        );
        assert_eq!(during["users_done"], before["users_done"]);
        assert_eq!(during["users_unfinished"], 0);
        let refused = kms
            .entries(Endpoint::DecryptKey)
            .iter()
            .filter(|e| e.outcome == "SERVICE_UNAVAILABLE")
            .count();
        assert!(
            (3..=30).contains(&refused),
            "the engine retried with backoff, not in a loop: {refused} tries"
        );
    }
    advance_to(&t, "2026-03-02T16:00:00Z").await;
    let after = statistics(&t, &id).await;
    assert_eq!(after["users_total"], 12, "{after}");
    assert_eq!(after["users_done"], 12, "every user finished: {after}");
    assert_eq!(after["users_pending"], 0);
    assert_eq!(after["users_unfinished"], 0);
    assert_eq!(after["attempts_total"], CAMPAIGN_ATTEMPTS, "{after}");
    after
}

#[tokio::test]
async fn an_outage_mid_campaign_holds_the_dials_and_loses_nothing() {
    let calm = run_drill(false).await;
    let stormy = run_drill(true).await;
    for field in [
        "attempts_total",
        "attempts_by_outcome",
        "users_done",
        "users_total",
        "users_unfinished",
    ] {
        assert_eq!(calm[field], stormy[field], "{field}");
    }
}
