//! An engine stopped between any two steps and built again from the same database (a new
//! process: the store reopened, the engine's memory gone) carries on exactly as one that
//! never stopped: no user gets more than `max_retries + 1` attempts, no attempt is lost or
//! repeated, every due retry happens.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use contracts::clock::{Clock, SimClock};
use platform::App;
use platform::auth::Principal;
use platform::engine::{Engine, StepKeys};
use platform::service::{campaigns, cohorts};
use platform::store::WorkspaceRef;
use platform::store::cohorts::Parent;
use serde_json::{Value, json};
use telephony_sim::TelephonySim;

use crate::engine::magic;
use crate::helpers::{START, config};

const SEED: u64 = 7;

fn campaign_body() -> Value {
    json!({
        "name": "Durable",
        "start_timestamp": "2026-03-02T12:05:00Z",
        "end_timestamp": "2026-03-04T12:05:00Z",
        "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday", "Tuesday", "Wednesday"],
                             "allowed_start_time": "12:00", "allowed_end_time": "13:00"},
        "app_config": {
            "app_id": "app-1", "app_version": 1, "attempts_per_second": 0.5,
            "connection_configs": [
                {"connection_id": "a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 2},
                {"connection_id": "b", "phone_numbers": ["+14155550200"], "weight": 1}
            ],
            "retry_config": {"max_retries": 3, "retry_on": ["busy", "no_answer", "failed", "short_duration"],
                             "threshold_seconds": 30, "retry_interval_minutes": 10},
            "webhook_config": {"url": "http://127.0.0.1:9/hooks"}
        }
    })
}

fn who() -> Principal {
    Principal {
        ws: WorkspaceRef::new("org-1", "ws-1"),
        name: "alice".into(),
    }
}

fn build(db: &std::path::Path, clock: &SimClock) -> App {
    App::builder(config(db))
        .sim_clock(clock.clone())
        .build()
        .unwrap()
}

fn engine(app: &App, batch: Option<usize>) -> Engine {
    let e = Engine::new(app.clone(), Arc::new(TelephonySim::new(SEED)), SEED);
    match batch {
        Some(n) => e.with_batch_size(n),
        None => e,
    }
}

async fn keys(app: &App) -> StepKeys {
    let ws = who().ws;
    let k = app.keys.workspace(&ws, None).await.unwrap();
    [(ws, k)].into_iter().collect()
}

/// A campaign of 40 users with mixed outcomes (the telephony model, plus some magic numbers).
async fn setup(app: &App) -> String {
    let summary = campaigns::create(app, &who(), &campaign_body())
        .await
        .unwrap();
    let mut users: Vec<Value> = (0..30)
        .map(|i| json!({"phone_number": format!("+1312{i:07}")}))
        .collect();
    users.extend((0..10).map(|i| json!({"phone_number": magic(600 + i, i % 5)})));
    cohorts::stream(
        app,
        &who(),
        &Parent::campaign(&summary.campaign_id),
        &json!({"name": "users", "users": users}),
        None,
    )
    .await
    .unwrap();
    summary.campaign_id
}

type Row = (String, i64, i64, i64, Option<String>, String);

async fn attempts(app: &App) -> Vec<Row> {
    app.store
        .read(|c| {
            let mut st = c.prepare(
                "SELECT id, row_no, retry_attempt, dialed_ms, result, agent_number FROM attempts ORDER BY dialed_ms, id",
            )?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, platform::store::StoreError>(rows)
        })
        .await
        .unwrap()
}

async fn users(app: &App) -> Vec<(i64, String, i64)> {
    app.store
        .read(|c| {
            // A user's id is its cohort's first id plus its row.
            let mut st = c.prepare(
                "SELECT u.id - a.first_user AS row_no, u.state, u.attempts FROM campaign_users u
                 JOIN campaign_cohorts a ON u.id BETWEEN a.first_user AND a.last_user ORDER BY row_no",
            )?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, platform::store::StoreError>(rows)
        })
        .await
        .unwrap()
}

async fn deliveries(app: &App) -> Vec<(String, String)> {
    app.store
        .read(|c| {
            let mut st = c.prepare("SELECT id, subject_id FROM webhook_deliveries ORDER BY seq")?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, platform::store::StoreError>(rows)
        })
        .await
        .unwrap()
}

fn end() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-04T13:00:00Z")
        .unwrap()
        .to_utc()
}

/// Steps one instant at a time; with `restart`, a new store, app and engine before each;
/// with `batch`, that many events per transaction.
async fn run(
    restart: bool,
    batch: Option<usize>,
) -> (
    Vec<Row>,
    Vec<(i64, String, i64)>,
    Vec<(String, String)>,
    usize,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("platform.db");
    let clock = SimClock::at(START);
    let mut app = build(&db, &clock);
    setup(&app).await;
    let mut eng = engine(&app, batch);
    let mut steps = 0;
    loop {
        if restart {
            drop(eng);
            app.store.checkpoint().unwrap();
            drop(app);
            app = build(&db, &clock);
            eng = engine(&app, batch);
        }
        let Some(next) = eng.next_due().unwrap() else {
            break;
        };
        if next > end() {
            break;
        }
        clock.advance_to(next);
        let k = keys(&app).await;
        eng.step(next, &k).unwrap();
        steps += 1;
    }
    assert!(clock.now() <= end());
    (
        attempts(&app).await,
        users(&app).await,
        deliveries(&app).await,
        steps,
    )
}

#[tokio::test]
async fn an_engine_rebuilt_between_every_two_steps_carries_on_exactly() {
    let (reference, ref_users, ref_deliveries, steps) = run(false, None).await;
    assert!(steps > 50, "a real run: {steps} steps");
    assert!(
        reference.len() > 40,
        "retries happened: {} attempts",
        reference.len()
    );
    let (restarted, users_after, deliveries_after, _) = run(true, None).await;
    assert_eq!(
        restarted, reference,
        "the same attempts, ids, times and results"
    );
    assert_eq!(users_after, ref_users);
    assert_eq!(
        deliveries_after, ref_deliveries,
        "one webhook per attempt, none twice"
    );

    // No user over max_retries + 1 attempts; every user's attempts are all there.
    for (row, state, n) in &ref_users {
        let dials: Vec<&Row> = reference.iter().filter(|a| a.1 == *row).collect();
        assert_eq!(dials.len() as i64, *n, "row {row}");
        assert!(*n <= 4, "row {row}: {n} attempts");
        for (i, d) in dials.iter().enumerate() {
            assert_eq!(d.2, i as i64, "retry_attempt numbers run 0, 1, 2, ...");
        }
        // Every due retry happened: a user left waiting would be `ready` after the end.
        assert!(
            matches!(state.as_str(), "done" | "unfinished"),
            "row {row}: {state}"
        );
        let last = dials.last().and_then(|d| d.4.clone()).unwrap_or_default();
        let retryable = ["busy", "no_answer", "failed", "short_duration"].contains(&last.as_str());
        if state == "done" && retryable {
            assert_eq!(
                *n, 4,
                "row {row}: done after a retryable {last} only when out of retries"
            );
        }
    }
    let ids: std::collections::HashSet<&String> = reference.iter().map(|a| &a.0).collect();
    assert_eq!(ids.len(), reference.len(), "no attempt id twice");
}

#[tokio::test]
async fn batches_of_two_events_whose_writes_overlap_the_next_batch_give_the_same_run() {
    let (reference, ref_users, ref_deliveries, _) = run(false, None).await;
    // A batch that only dials and ends calls has its writes made on another thread while
    // the engine computes the next one; with two events a batch, that happens all the time.
    let (small, small_users, small_deliveries, _) = run(false, Some(2)).await;
    assert_eq!(small, reference);
    assert_eq!(small_users, ref_users);
    assert_eq!(small_deliveries, ref_deliveries);
    // And stopped between any two steps on top of it.
    let (restarted, users_after, deliveries_after, _) = run(true, Some(2)).await;
    assert_eq!(restarted, reference);
    assert_eq!(users_after, ref_users);
    assert_eq!(deliveries_after, ref_deliveries);
}

#[tokio::test]
async fn a_step_whose_writes_fail_loses_nothing_and_the_engine_carries_on_from_the_database() {
    let (reference, ref_users, ref_deliveries, _) = run(false, None).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("platform.db");
    let clock = SimClock::at(START);
    let app = build(&db, &clock);
    setup(&app).await;
    // Batches of two events: the failure can hit a batch written on the writer thread.
    let eng = engine(&app, Some(2));
    let mut failures = 0;
    while let Some(next) = eng.next_due().unwrap() {
        if next > end() {
            break;
        }
        clock.advance_to(next);
        let k = keys(&app).await;
        let written: i64 = app
            .store
            .read_blocking(|c| Ok(c.query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))?))
            .unwrap();
        if failures == 0 && written >= 20 {
            // The disk refuses the next attempt rows once.
            app.store
                .write_blocking(|c| {
                    c.execute_batch(
                        "CREATE TRIGGER refuse BEFORE INSERT ON attempts
                         BEGIN SELECT RAISE(ABORT, 'disk full (test)'); END;",
                    )?;
                    Ok(())
                })
                .unwrap();
            let failed = eng.step(next, &k);
            assert!(failed.is_err(), "the step reports the failed write");
            failures += 1;
            app.store
                .write_blocking(|c| {
                    c.execute_batch("DROP TRIGGER refuse")?;
                    Ok(())
                })
                .unwrap();
        }
        eng.step(next, &k).unwrap();
    }
    assert_eq!(failures, 1);
    assert_eq!(
        attempts(&app).await,
        reference,
        "nothing lost, nothing twice"
    );
    assert_eq!(users(&app).await, ref_users);
    assert_eq!(deliveries(&app).await, ref_deliveries);
}

// ----- ids across restarts -----

/// One of every request that makes an id (campaign, deployment, cohort, attempt, inbound
/// call), through the API; answers the ids in order.
async fn make_one_of_each(t: &crate::helpers::TestApp, round: usize) -> Vec<String> {
    use crate::helpers::*;
    use reqwest::StatusCode;
    let mut ids = Vec::new();
    let mut take = |(s, v): (StatusCode, Value), field: &str| {
        assert_eq!(s, StatusCode::OK, "{field}: {v}");
        let id = v[field].as_str().unwrap().to_string();
        ids.push(id.clone());
        id
    };
    let campaign = take(
        t.post(&campaigns_path(), &campaign_body()).await,
        "campaign_id",
    );
    let number = format!("+1415555030{round}");
    take(
        t.post(&deployments_path(), &deployment_body("Desk", &number))
            .await,
        "deployment_id",
    );
    take(
        t.post(
            &format!("{}/{campaign}/cohorts/stream", campaigns_path()),
            &json!({"name": "c", "users": [{"phone_number": "+12025550100", "user_identifier": "u1"}]}),
        )
        .await,
        "cohort_id",
    );
    take(
        t.post(
            &outbounds_path(),
            &json!({
                "app_config": {"app_id": "app-1", "app_version": 1,
                               "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
                "user_config": {"user_phone_number": "+12025550108"}
            }),
        )
        .await,
        "attempt_id",
    );
    take(
        t.post(
            &format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/inbound-calls"),
            &json!({"caller": "+919876543210", "dialled": number}),
        )
        .await,
        "call_id",
    );
    ids
}

#[tokio::test]
async fn a_restart_with_the_same_seed_carries_on_drawing_ids_where_it_stopped() {
    // The same requests on a platform that never stops...
    let straight = crate::helpers::spawn_app().await;
    let mut expected = make_one_of_each(&straight, 0).await;
    expected.extend(make_one_of_each(&straight, 1).await);
    // ... and on one stopped and started again with the same seed in between: the ids after
    // the restart are new (no UNIQUE failure, no 500) and the very same.
    let first = crate::helpers::spawn_app().await;
    let mut got = make_one_of_each(&first, 0).await;
    let second = first.restart().await;
    got.extend(make_one_of_each(&second, 1).await);
    assert_eq!(got, expected);
    let distinct: std::collections::HashSet<&String> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "no id drawn twice: {got:?}");
}
