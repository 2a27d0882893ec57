//! The campaign engine on the simulated clock, driven over HTTP (`/sim/v1/clock/advance`):
//! the spec's rules by name, windows, pacing, pause/resume/cancel, the end, stop files and
//! the users' records; webhooks, instant outbound and inbound calls and the clock are in
//! `engine_calls.rs`.

use chrono::{DateTime, Duration, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// A magic number of the telephony simulator: `+1 NXX 555-01YY` behaves by `YY`
/// (01 busy, 02 no answer, 04 a 5-second call, 00 connected 90 s).
pub fn magic(nxx: u32, yy: u32) -> String {
    format!("+1{nxx:03}55501{yy:02}")
}

/// A campaign starting 12:05Z Monday 2026-03-02, ending three days later, with the given
/// rate, retry policy and calling window (UTC).
pub fn campaign(rate: f64, retry: Value, window: (&str, &str), days: &[&str]) -> Value {
    json!({
        "name": "Engine test",
        "start_timestamp": "2026-03-02T12:05:00Z",
        "end_timestamp": "2026-03-05T12:05:00Z",
        "allowed_schedule": {
            "timezone": "UTC",
            "allowed_days": days,
            "allowed_start_time": window.0,
            "allowed_end_time": window.1
        },
        "app_config": {
            "app_id": "app-1",
            "app_version": 1,
            "attempts_per_second": rate,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 3},
                {"connection_id": "conn-b", "phone_numbers": ["+14155550200", "+14155550201", "+14155550202"], "weight": 1}
            ],
            "retry_config": retry
        }
    })
}

pub const WEEKDAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
pub const ALL_DAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

pub async fn create(app: &TestApp, body: &Value) -> String {
    let (s, v) = app.post(&campaigns_path(), body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["campaign_id"].as_str().unwrap().to_string()
}

/// Adds users to a campaign by a JSON stream; answers the cohort id.
pub async fn add_users(app: &TestApp, campaign: &str, numbers: &[String]) -> String {
    let users: Vec<Value> = numbers
        .iter()
        .enumerate()
        .map(|(i, n)| json!({"phone_number": n, "user_identifier": format!("u{i}"), "app_variables": {"n": i}}))
        .collect();
    let (s, v) = app
        .post(
            &format!("{}/{campaign}/cohorts/stream", campaigns_path()),
            &json!({"name": "users", "users": users}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "completed");
    v["cohort_id"].as_str().unwrap().to_string()
}

pub async fn advance(app: &TestApp, seconds: f64) -> Value {
    let (s, v) = app
        .post("/sim/v1/clock/advance", &json!({"seconds": seconds}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

pub async fn advance_to(app: &TestApp, to: &str) -> Value {
    let (s, v) = app.post("/sim/v1/clock/advance", &json!({"to": to})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

pub async fn stats(app: &TestApp, campaign: &str) -> Value {
    app.get(&format!("{}/{campaign}", campaigns_path())).await.1["statistics"].clone()
}

/// A campaign dial as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Dial {
    pub id: String,
    pub row_no: i64,
    pub retry_attempt: i64,
    pub dialed: DateTime<Utc>,
    pub ends: DateTime<Utc>,
    pub result: Option<String>,
    pub connection_id: String,
    pub agent_number: String,
}

/// Every dial of a campaign, in dial order.
pub async fn dials(app: &TestApp, campaign: &str) -> Vec<Dial> {
    let campaign = campaign.to_string();
    app.app
        .store
        .read(move |c| {
            let mut st = c.prepare(
                "SELECT id, row_no, retry_attempt, dialed_ms, ends_ms, result, connection_id, agent_number
                 FROM attempts WHERE campaign_id = ?1 ORDER BY dialed_ms, id",
            )?;
            let rows = st
                .query_map([campaign], |r| {
                    Ok(Dial {
                        id: r.get(0)?,
                        row_no: r.get(1)?,
                        retry_attempt: r.get(2)?,
                        dialed: platform::store::from_ms(r.get(3)?),
                        ends: platform::store::from_ms(r.get(4)?),
                        result: r.get(5)?,
                        connection_id: r.get(6)?,
                        agent_number: r.get(7)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, platform::store::StoreError>(rows)
        })
        .await
        .unwrap()
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

#[tokio::test]
async fn rule_1_max_retries_2_gives_exactly_3_attempts_of_an_always_busy_number() {
    for (retry_on, expected) in [(json!(["busy"]), 3), (json!(["no_answer"]), 1)] {
        let app = spawn_app().await;
        let retry = json!({"max_retries": 2, "retry_on": retry_on, "retry_interval_minutes": 30});
        let id = create(&app, &campaign(1.0, retry, ("09:00", "17:00"), WEEKDAYS)).await;
        add_users(&app, &id, &[magic(202, 1)]).await;
        advance(&app, 3.0 * 86400.0).await;
        let d = dials(&app, &id).await;
        assert_eq!(d.len(), expected, "retry_on {retry_on}: {d:?}");
        assert!(d.iter().all(|x| x.result.as_deref() == Some("busy")));
        for (i, x) in d.iter().enumerate() {
            assert_eq!(x.retry_attempt, i as i64);
        }
        // No sooner than 30 minutes after the previous attempt ended.
        for w in d.windows(2) {
            assert!(w[1].dialed >= w[0].ends + Duration::minutes(30), "{w:?}");
        }
        let s = stats(&app, &id).await;
        assert_eq!(s["attempts_total"], expected);
        assert_eq!(s["attempts_by_outcome"]["busy"], expected);
        assert_eq!(s["users_done"], 1);
    }
}

#[tokio::test]
async fn rule_2_the_rate_is_a_dial_rate_120_dials_in_the_first_window_minute_at_2_per_second() {
    let app = spawn_app().await;
    let retry = json!({"max_retries": 3, "retry_on": ["no_answer"], "retry_interval_minutes": 30});
    let id = create(&app, &campaign(2.0, retry, ("13:00", "17:00"), WEEKDAYS)).await;
    let numbers: Vec<String> = (200..400).map(|nxx| magic(nxx, 2)).collect();
    add_users(&app, &id, &numbers).await;
    advance_to(&app, "2026-03-02T13:00:59.999Z").await;
    let d = dials(&app, &id).await;
    assert_eq!(
        d.len(),
        120,
        "nothing before the window opens, 2 a second after"
    );
    assert_eq!(d[0].dialed, at("2026-03-02T13:00:00Z"));
    for (i, x) in d.iter().enumerate() {
        assert_eq!(
            x.dialed,
            at("2026-03-02T13:00:00Z") + Duration::milliseconds(500 * i as i64)
        );
    }
    // Unanswered calls ring for 30 s and end, but the pace never waits for answers.
    assert!(d.iter().all(|x| x.ends - x.dialed == Duration::seconds(30)));
}

#[tokio::test]
async fn rule_3_warns_when_the_budget_exceeds_the_capacity() {
    let app = spawn_app().await;
    // 0.1 dials/s over 3 x 1 open minute = 18 dials; 10 users x (1 + 3) = 40 > 18.
    let retry = json!({"max_retries": 3, "retry_on": ["busy"]});
    let id = create(
        &app,
        &campaign(0.1, retry.clone(), ("13:00", "13:01"), WEEKDAYS),
    )
    .await;
    let numbers: Vec<String> = (200..210).map(|nxx| magic(nxx, 1)).collect();
    add_users(&app, &id, &numbers).await;
    let s = stats(&app, &id).await;
    assert_eq!(s["users_total"], 10);
    assert_eq!(s["attempt_budget"], 40);
    assert_eq!(s["attempt_capacity"], 18);
    let warning = s["capacity_warning"].as_str().expect("a warning");
    assert!(
        warning.contains("40") && warning.contains("18"),
        "{warning}"
    );
    insta::assert_json_snapshot!("rule_3_statistics", s);
    // With room to spare, no warning.
    let roomy = create(&app, &campaign(10.0, retry, ("09:00", "17:00"), WEEKDAYS)).await;
    add_users(&app, &roomy, &numbers).await;
    assert_eq!(stats(&app, &roomy).await["capacity_warning"], Value::Null);
    // A cancelled campaign dials no more: its shortfall is no longer a warning.
    let (status, body) = app
        .put(
            &format!("{}/{id}/status", campaigns_path()),
            &json!({"action": "cancel"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(stats(&app, &id).await["capacity_warning"], Value::Null);
}

/// The capacity stated before the start is what the engine then dials: 0.13 a second fits
/// 8 dials in each open minute (at 0, 7.7, ..., 53.8 s), 24 in three, where
/// `floor(0.13 x 180)` would say 23; and the sentence adds up.
#[tokio::test]
async fn rule_3_the_capacity_stated_before_the_start_is_what_the_engine_dials() {
    let app = spawn_app().await;
    let id = create(
        &app,
        &campaign(
            0.13,
            json!({"max_retries": 0}),
            ("13:00", "13:01"),
            WEEKDAYS,
        ),
    )
    .await;
    let numbers: Vec<String> = (200..240).map(|nxx| magic(nxx, 2)).collect();
    add_users(&app, &id, &numbers).await;
    let before = stats(&app, &id).await;
    assert_eq!(before["attempt_capacity"], 24);
    let warning = before["capacity_warning"].as_str().expect("40 > 24 warns");
    assert!(
        warning.contains(
            "exceeds the 24 attempts possible: the 0 made and the 24 more that 0.13 per second allows in the 3 minutes of open window left"
        ),
        "{warning}"
    );
    advance_to(&app, "2026-03-05T13:00:00Z").await;
    assert_eq!(dials(&app, &id).await.len(), 24);
}

#[tokio::test]
async fn rule_4_weights_3_and_1_split_1000_dials_750_250_within_one_at_every_prefix() {
    let app = spawn_app().await;
    let retry = json!({"max_retries": 0});
    let id = create(&app, &campaign(100.0, retry, ("09:00", "17:00"), WEEKDAYS)).await;
    let numbers: Vec<String> = (0..1000).map(|i| format!("+1202{i:07}")).collect();
    add_users(&app, &id, &numbers).await;
    advance_to(&app, "2026-03-02T12:06:00Z").await;
    let d = dials(&app, &id).await;
    assert_eq!(d.len(), 1000);
    let mut a = 0i64;
    for (n, x) in d.iter().enumerate() {
        if x.connection_id == "conn-a" {
            a += 1;
        }
        let expected = (n as f64 + 1.0) * 0.75;
        assert!(
            (a as f64 - expected).abs() <= 1.0,
            "prefix {}: {a} on conn-a",
            n + 1
        );
    }
    assert_eq!(a, 750);
    let count = |num: &str| d.iter().filter(|x| x.agent_number == num).count();
    assert_eq!((count("+14155550100"), count("+14155550101")), (375, 375));
    let b: Vec<usize> = ["+14155550200", "+14155550201", "+14155550202"]
        .map(count)
        .to_vec();
    assert!(
        b.iter().all(|n| (83..=84).contains(n)),
        "numbers of conn-b used equally: {b:?}"
    );
    assert_eq!(b.iter().sum::<usize>(), 250);
}

#[tokio::test]
async fn rule_5_a_short_call_is_retried_only_with_short_duration_in_retry_on() {
    for (retry_on, expected) in [(json!(["short_duration"]), 2), (json!(["busy"]), 1)] {
        let app = spawn_app().await;
        let retry = json!({"max_retries": 1, "retry_on": retry_on, "threshold_seconds": 10});
        let id = create(&app, &campaign(1.0, retry, ("09:00", "17:00"), WEEKDAYS)).await;
        add_users(&app, &id, &[magic(202, 4)]).await;
        advance(&app, 86400.0).await;
        let d = dials(&app, &id).await;
        assert_eq!(d.len(), expected, "{retry_on}");
        assert!(
            d.iter()
                .all(|x| x.result.as_deref() == Some("short_duration"))
        );
        let s = stats(&app, &id).await;
        assert_eq!(s["attempts_by_outcome"]["short_duration"], expected);
    }
    // A 90-second call with a 10-second threshold completes the user.
    let app = spawn_app().await;
    let retry = json!({"max_retries": 3, "retry_on": ["short_duration"], "threshold_seconds": 10});
    let id = create(&app, &campaign(1.0, retry, ("09:00", "17:00"), WEEKDAYS)).await;
    add_users(&app, &id, &[magic(202, 0)]).await;
    advance(&app, 86400.0).await;
    let d = dials(&app, &id).await;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].result.as_deref(), Some("completed"));
}

#[tokio::test]
async fn rule_6_after_delete_an_inbound_call_to_its_number_is_not_answered() {
    let app = spawn_app().await;
    let dep = create_deployment(&app, "Desk", "+14155550199").await;
    app.patch(
        &format!("{}/{dep}", deployments_path()),
        &json!({"inbound_config": null}),
    )
    .await;
    let call = |app: &TestApp| {
        let app_url = format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/inbound-calls");
        let client = app.client.clone();
        let url = app.url(&app_url);
        async move {
            let r = client
                .post(url)
                .header("x-api-key", KEY)
                .json(&json!({"caller": "+919876543210", "dialled": "+14155550199"}))
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()
        }
    };
    let answered = call(&app).await;
    assert_eq!(answered["answered"], true, "{answered}");
    assert_eq!(
        app.delete(&format!("{}/{dep}", deployments_path())).await.0,
        StatusCode::NO_CONTENT
    );
    let after = call(&app).await;
    assert_eq!(after["answered"], false);
    assert_eq!(after["rejection"], "no_deployment");
}

#[tokio::test]
async fn no_dials_outside_the_window_or_on_weekends() {
    let app = spawn_app().await;
    let retry = json!({"max_retries": 5, "retry_on": ["busy"], "retry_interval_minutes": 60});
    // Friday-start campaign: 2026-03-06 is a Friday.
    let mut body = campaign(1.0, retry, ("15:00", "16:00"), WEEKDAYS);
    body["start_timestamp"] = json!("2026-03-06T12:05:00Z");
    body["end_timestamp"] = json!("2026-03-12T12:05:00Z");
    let id = create(&app, &body).await;
    add_users(&app, &id, &[magic(202, 1)]).await;
    advance(&app, 11.0 * 86400.0).await;
    let d: Vec<_> = dials(&app, &id)
        .await
        .into_iter()
        .map(|x| x.dialed)
        .collect();
    // Friday 15:00; the retry due at 16:00:02 falls after the 16:00 close, the weekend is
    // not allowed: Monday 15:00, and so on until the end (Thursday 12:05).
    assert_eq!(
        d,
        [
            "2026-03-06T15:00:00Z",
            "2026-03-09T15:00:00Z",
            "2026-03-10T15:00:00Z",
            "2026-03-11T15:00:00Z"
        ]
        .map(at)
    );
    let s = stats(&app, &id).await;
    assert_eq!(s["users_unfinished"], 1, "retries left at the end");
}

#[tokio::test]
async fn windows_follow_daylight_saving_in_new_york() {
    let app = spawn_app().await;
    // 09:00-17:00 in New York. On Saturday 2026-03-07 that is 14:00Z-22:00Z (EST); the
    // clocks go forward that night, so on Sunday it is 13:00Z-21:00Z (EDT).
    let retry = json!({"max_retries": 10, "retry_on": ["busy"], "retry_interval_minutes": 60});
    let mut body = campaign(1.0, retry, ("09:00", "17:00"), ALL_DAYS);
    body["allowed_schedule"]["timezone"] = json!("America/New_York");
    body["start_timestamp"] = json!("2026-03-07T12:05:00Z");
    body["end_timestamp"] = json!("2026-03-12T12:05:00Z");
    let id = create(&app, &body).await;
    add_users(&app, &id, &[magic(202, 1)]).await;
    advance(&app, 7.0 * 86400.0).await;
    let d: Vec<_> = dials(&app, &id)
        .await
        .into_iter()
        .map(|x| x.dialed)
        .collect();
    assert_eq!(d.len(), 11);
    // Saturday: every hour and 2 s (the busy ring) from 09:00 EST until the close.
    for (k, t) in d[..8].iter().enumerate() {
        let expected = at("2026-03-07T14:00:00Z") + Duration::seconds(k as i64 * 3602);
        assert_eq!(*t, expected, "Saturday dial {k}");
    }
    // The next retry (22:00:16Z) is after the 17:00 EST close; Sunday opens at 09:00 EDT.
    assert_eq!(d[8], at("2026-03-08T13:00:00Z"));
}

#[tokio::test]
async fn pause_stops_dialling_at_once_resume_continues_cancel_stops_for_good() {
    let app = spawn_app().await;
    let id = create(
        &app,
        &campaign(1.0, json!({"max_retries": 0}), ("09:00", "17:00"), WEEKDAYS),
    )
    .await;
    let numbers: Vec<String> = (200..300).map(|nxx| magic(nxx, 2)).collect();
    add_users(&app, &id, &numbers).await;
    advance_to(&app, "2026-03-02T12:05:10Z").await;
    assert_eq!(
        dials(&app, &id).await.len(),
        11,
        "one a second from 12:05:00 to 12:05:10"
    );
    let put = |a: &'static str| json!({"action": a});
    assert_eq!(
        app.put(&format!("{}/{id}/status", campaigns_path()), &put("pause"))
            .await
            .0,
        StatusCode::OK
    );
    advance(&app, 60.0).await;
    assert_eq!(dials(&app, &id).await.len(), 11, "paused: no dials");
    let s = stats(&app, &id).await;
    assert_eq!(s["users_pending"], 89);
    assert_eq!(
        app.put(&format!("{}/{id}/status", campaigns_path()), &put("resume"))
            .await
            .0,
        StatusCode::OK
    );
    advance(&app, 20.0).await;
    let d = dials(&app, &id).await;
    assert_eq!(d.len(), 32, "21 more from 12:06:10 to 12:06:30");
    assert_eq!(
        d[11].dialed,
        at("2026-03-02T12:06:10Z"),
        "resumed at once, none in the paused past, no burst"
    );
    assert_eq!(d[12].dialed, at("2026-03-02T12:06:11Z"));
    assert_eq!(
        app.put(&format!("{}/{id}/status", campaigns_path()), &put("cancel"))
            .await
            .0,
        StatusCode::OK
    );
    advance(&app, 3600.0).await;
    assert_eq!(dials(&app, &id).await.len(), 32);
    let s = stats(&app, &id).await;
    assert_eq!(s["users_unfinished"], 68, "left when cancelled");
    assert_eq!(s["users_done"], 32);
}

#[tokio::test]
async fn the_end_leaves_unfinished_users_counted() {
    let app = spawn_app().await;
    let mut body = campaign(0.1, json!({"max_retries": 0}), ("09:00", "17:00"), WEEKDAYS);
    body["end_timestamp"] = json!("2026-03-02T12:07:00Z");
    let id = create(&app, &body).await;
    let numbers: Vec<String> = (200..250).map(|nxx| magic(nxx, 2)).collect();
    add_users(&app, &id, &numbers).await;
    let report = advance(&app, 3600.0).await;
    assert_eq!(report["campaign_transitions"], 2, "activated and ended");
    let (_, c) = app.get(&format!("{}/{id}", campaigns_path())).await;
    assert_eq!(c["status"], "ended");
    let s = &c["statistics"];
    // 0.1/s for 120 s: 12 dials.
    assert_eq!(s["attempts_total"], 12);
    assert_eq!(s["users_done"], 12);
    assert_eq!(s["users_unfinished"], 38);
    assert_eq!(s["users_pending"], 0);
}

#[tokio::test]
async fn stop_files_exclude_users_already_in_the_campaign() {
    let app = spawn_app().await;
    let id = create(
        &app,
        &campaign(1.0, json!({"max_retries": 0}), ("13:00", "17:00"), WEEKDAYS),
    )
    .await;
    let numbers: Vec<String> = (200..210).map(|nxx| magic(nxx, 2)).collect();
    add_users(&app, &id, &numbers).await;
    let stop: Vec<Value> = numbers[..3]
        .iter()
        .map(|n| json!({"phone_number": n}))
        .collect();
    let (s, v) = app
        .post(
            &format!("{}/{id}/cohorts/stream", campaigns_path()),
            &json!({"name": "stop", "cohort_category": "stop_file", "users": stop}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    advance(&app, 86400.0).await;
    let d = dials(&app, &id).await;
    assert_eq!(d.len(), 7);
    let s = stats(&app, &id).await;
    assert_eq!(s["users_excluded"], 3);
    assert_eq!(s["users_total"], 7);
}

/// Before the engine admits a campaign's users, its statistics already count those whose
/// number is in a stop file as excluded, across two uploads and two stop files.
#[tokio::test]
async fn users_not_yet_admitted_count_as_excluded_when_a_stop_file_holds_their_number() {
    let app = spawn_app().await;
    let id = create(
        &app,
        &campaign(1.0, json!({"max_retries": 0}), ("13:00", "17:00"), WEEKDAYS),
    )
    .await;
    let numbers: Vec<String> = (200..212).map(|nxx| magic(nxx, 2)).collect();
    add_users(&app, &id, &numbers[..6]).await;
    add_users(&app, &id, &numbers[6..]).await;
    // One number of the first upload and one of the second; one number in both stop files,
    // one in no upload.
    for stop in [
        vec![numbers[0].clone(), numbers[7].clone()],
        vec![numbers[7].clone(), magic(299, 2)],
    ] {
        let users: Vec<Value> = stop.iter().map(|n| json!({"phone_number": n})).collect();
        let (s, v) = app
            .post(
                &format!("{}/{id}/cohorts/stream", campaigns_path()),
                &json!({"name": "stop", "cohort_category": "stop_file", "users": users}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let s = stats(&app, &id).await;
    assert_eq!(s["users_excluded"], 2, "{s}");
    assert_eq!(s["users_pending"], 10, "{s}");
    assert!(dials(&app, &id).await.is_empty());
}

/// A stop file admitted while a user's call rings still excludes the user from its retry:
/// the retry looks the user's number up in the stop files as a first dial does.
#[tokio::test]
async fn a_stop_file_admitted_during_a_call_excludes_the_user_from_its_retry() {
    let app = spawn_app().await;
    let retry = json!({"max_retries": 2, "retry_on": ["no_answer"], "retry_interval_minutes": 30});
    let id = create(&app, &campaign(1.0, retry, ("13:00", "17:00"), WEEKDAYS)).await;
    let numbers = [magic(200, 2), magic(201, 2)];
    add_users(&app, &id, &numbers).await;
    // Both dialled at 13:00:00 and 13:00:01; unanswered, their calls ring for 30 s.
    advance_to(&app, "2026-03-02T13:00:10Z").await;
    assert_eq!(dials(&app, &id).await.len(), 2);
    let (s, v) = app
        .post(
            &format!("{}/{id}/cohorts/stream", campaigns_path()),
            &json!({"name": "stop", "cohort_category": "stop_file",
                    "users": [{"phone_number": numbers[0]}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    advance(&app, 86400.0).await;
    let rows: Vec<i64> = dials(&app, &id).await.iter().map(|d| d.row_no).collect();
    assert_eq!(
        rows,
        [1, 2, 2, 2],
        "the first user's retries are never dialled"
    );
    let s = stats(&app, &id).await;
    assert_eq!(s["users_excluded"], 1);
}

/// dials in queue order: across many read-aheads, three cohorts and the retries, each dial
/// still calls its own user's number (the magic numbers' outcomes tell them apart).
#[tokio::test]
async fn every_dial_calls_its_own_user_across_the_read_aheads() {
    let app = spawn_app().await;
    let retry = json!({"max_retries": 1, "retry_on": ["busy"], "retry_interval_minutes": 30});
    let id = create(&app, &campaign(50.0, retry, ("09:00", "17:00"), WEEKDAYS)).await;
    // Busy (dialled twice), no answer, connected: by row, shifted in each cohort.
    let yy = |k: usize, i: usize| [1, 2, 0][(i + k) % 3];
    let mut cohorts = vec![];
    for k in 0..3 {
        let numbers: Vec<String> = (0..800).map(|i| magic(200 + i as u32, yy(k, i))).collect();
        cohorts.push(add_users(&app, &id, &numbers).await);
    }
    advance(&app, 86400.0).await;
    let campaign = id.clone();
    let rows: Vec<(String, i64, i64, Option<String>)> = app
        .app
        .store
        .read(move |c| {
            let mut stmt = c.prepare(
                "SELECT cohort_id, row_no, retry_attempt, result FROM attempts
                 WHERE campaign_id = ?1 ORDER BY cohort_id, row_no, retry_attempt",
            )?;
            let rows = stmt
                .query_map([campaign], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, platform::store::StoreError>(rows)
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 3_200, "2,400 users, the 800 busy ones twice");
    let mut seen = std::collections::BTreeMap::<(usize, i64), Vec<String>>::new();
    for (cohort, row_no, retry_attempt, result) in rows {
        let k = cohorts
            .iter()
            .position(|c| *c == cohort)
            .expect("a cohort of the campaign");
        let list = seen.entry((k, row_no)).or_default();
        assert_eq!(retry_attempt, list.len() as i64);
        list.push(result.unwrap_or_default());
    }
    for ((k, row_no), results) in seen {
        let expected: &[&str] = match yy(k, row_no as usize - 1) {
            1 => &["busy", "busy"],
            2 => &["no_answer"],
            _ => &["completed"],
        };
        assert_eq!(results, expected, "cohort {k}, row {row_no}");
    }
}
