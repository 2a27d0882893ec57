//! Changes made through the API at one simulated instant (a create and a PATCH, a pause, a
//! PATCH and a resume), with the engine looking at the database between them or not: what
//! the engine dials afterwards is what the database says, whatever it saw in between.
//!
//! The engine is driven step by step (as `durability.rs` does), the API's changes made through
//! the services, so that each interleaving of the engine's looks and the changes is made on
//! purpose; the race the tester saw over HTTP (the driver's loop looking between a pause and
//! a resume, or not) is `pause_and_resume_at_one_instant_over_http_always_dials_on`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Datelike, Duration, Timelike, Utc, Weekday};
use chrono_tz::America::Los_Angeles;
use contracts::clock::{Clock, SimClock};
use platform::App;
use platform::auth::Principal;
use platform::engine::{Engine, StepKeys};
use platform::service::{campaigns, cohorts};
use platform::store::WorkspaceRef;
use platform::store::cohorts::Parent;
use reqwest::StatusCode;
use serde_json::{Value, json};
use telephony_sim::TelephonySim;

use crate::engine::{WEEKDAYS, advance, advance_to, create, magic};
use crate::helpers::{START, campaigns_path, config, spawn_app};

const SEED: u64 = 7;

fn who() -> Principal {
    Principal {
        ws: WorkspaceRef::new("org-1", "ws-1"),
        name: "alice".into(),
    }
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

/// A platform's app over a fresh database on a simulated clock at [`START`], and an engine
/// of it (no server, no driver: the test drives the engine).
struct Rig {
    app: App,
    clock: SimClock,
    engine: Arc<Engine>,
    _dir: tempfile::TempDir,
}

impl Rig {
    fn new() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let clock = SimClock::at(START);
        let app = App::builder(config(&dir.path().join("platform.db")))
            .sim_clock(clock.clone())
            .build()
            .unwrap();
        let engine = Arc::new(Engine::new(
            app.clone(),
            Arc::new(TelephonySim::new(SEED)),
            SEED,
        ));
        Rig {
            app,
            clock,
            engine,
            _dir: dir,
        }
    }

    async fn keys(&self) -> StepKeys {
        let ws = who().ws;
        let k = self.app.keys.workspace(&ws, None).await.unwrap();
        [(ws, k)].into_iter().collect()
    }

    /// The engine looks at the database (takes in what the API changed), as the driver's
    /// loop does whenever the API wakes it.
    fn look(&self) {
        self.engine.next_due().unwrap();
    }

    /// Makes everything due up to `until` happen, the clock moving to each due time, then
    /// moves the clock to `until` (as `POST /sim/v1/clock/advance` does).
    async fn run_to(&self, until: DateTime<Utc>) {
        let keys = self.keys().await;
        while let Some(next) = self.engine.next_due().unwrap() {
            if next > until {
                break;
            }
            self.clock.advance_to(next);
            self.engine.step(next, &keys).unwrap();
        }
        self.clock.advance_to(until);
    }

    async fn create(&self, body: &Value) -> String {
        campaigns::create(&self.app, &who(), body)
            .await
            .unwrap()
            .campaign_id
    }

    async fn add_users(&self, campaign: &str, numbers: &[String]) {
        let users: Vec<Value> = numbers.iter().map(|n| json!({"phone_number": n})).collect();
        cohorts::stream(
            &self.app,
            &who(),
            &Parent::campaign(campaign),
            &json!({"name": "users", "users": users}),
            None,
        )
        .await
        .unwrap();
    }

    async fn action(&self, campaign: &str, action: &str) {
        let c = campaigns::set_status(&self.app, &who(), campaign, &json!({"action": action}))
            .await
            .unwrap();
        assert_eq!(c.summary.updated_at, self.clock.now());
    }

    async fn patch(&self, campaign: &str, body: &Value) {
        let c = campaigns::patch(&self.app, &who(), campaign, body.clone())
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&c.allowed_schedule).unwrap(),
            body["allowed_schedule"]
        );
    }

    /// Every campaign dial: (attempt id, cohort, row, retry attempt, dialled at).
    async fn dials(&self) -> Vec<(String, String, i64, i64, DateTime<Utc>)> {
        self.app
            .store
            .read(|c| {
                let mut st = c.prepare(
                    "SELECT id, cohort_id, row_no, retry_attempt, dialed_ms FROM attempts
                     WHERE kind = 'campaign' ORDER BY dialed_ms, id",
                )?;
                let rows = st
                    .query_map([], |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            platform::store::from_ms(r.get(4)?),
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok::<_, platform::store::StoreError>(rows)
            })
            .await
            .unwrap()
    }
}

/// A campaign from 12:05Z Monday 2026-03-02 to Thursday 12:05Z, one dial a second inside
/// 09:00-17:00 UTC on weekdays, busy users retried every hour up to 10 times.
fn campaign() -> Value {
    json!({
        "name": "Changes",
        "start_timestamp": "2026-03-02T12:05:00Z",
        "end_timestamp": "2026-03-05T12:05:00Z",
        "allowed_schedule": {"timezone": "UTC", "allowed_days": WEEKDAYS,
                             "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
        "app_config": {
            "app_id": "app-1", "app_version": 1, "attempts_per_second": 1,
            "connection_configs": [{"connection_id": "a", "phone_numbers": ["+14155550100"], "weight": 1}],
            "retry_config": {"max_retries": 10, "retry_on": ["busy"], "retry_interval_minutes": 60}
        }
    })
}

/// The new schedule: 17:00-22:00 in Los Angeles on weekdays (before the clocks go forward
/// on 2026-03-08, 01:00Z-06:00Z the next day), where the old one (09:00-17:00 UTC) is
/// closed, and closed where the old one is open.
fn new_schedule() -> Value {
    json!({"allowed_schedule": {"timezone": "America/Los_Angeles", "allowed_days": WEEKDAYS,
                                "allowed_start_time": "17:00", "allowed_end_time": "22:00"}})
}

/// Whether `t` is inside [`new_schedule`].
fn in_new_schedule(t: DateTime<Utc>) -> bool {
    let local = t.with_timezone(&Los_Angeles);
    !matches!(local.weekday(), Weekday::Sat | Weekday::Sun) && (17..22).contains(&local.hour())
}

/// Busy users: each is retried every hour and a bit, while the window is open.
fn busy_users(n: u32) -> Vec<String> {
    (0..n).map(|i| magic(200 + i, 1)).collect()
}

/// Which of the engine's looks happen: bit `k` of `looks` set, the engine looks after the
/// `k`-th change.
fn looks_after(looks: u32, k: u32) -> bool {
    looks & (1 << k) != 0
}

#[tokio::test]
async fn a_schedule_patched_at_the_instant_of_the_create_is_the_one_dialled() {
    // The engine looks after the create (as the driver's loop does when the API wakes it),
    // then the PATCH comes at the same simulated instant; or the engine does not look.
    let mut reference = None;
    for looks in 0..2 {
        let rig = Rig::new();
        let id = rig.create(&campaign()).await;
        if looks_after(looks, 0) {
            rig.look();
        }
        rig.patch(&id, &new_schedule()).await;
        rig.add_users(&id, &busy_users(3)).await;
        rig.run_to(at("2026-03-05T12:05:00Z")).await;
        let dials = rig.dials().await;
        let times: Vec<DateTime<Utc>> = dials.iter().map(|d| d.4).collect();
        // Opened: the first dials at the new schedule's first opening after the start
        // (Monday 17:00 in Los Angeles); closed: none at 12:05Z in the old one.
        assert_eq!(
            times[..3],
            [
                at("2026-03-03T01:00:00Z"),
                at("2026-03-03T01:00:01Z"),
                at("2026-03-03T01:00:02Z")
            ],
            "looks {looks:b}"
        );
        assert_eq!(dials.len(), 33, "11 dials of each user, five a night");
        for t in &times {
            assert!(in_new_schedule(*t), "looks {looks:b}: a dial at {t}");
        }
        match &reference {
            None => reference = Some(dials),
            Some(r) => assert_eq!(&dials, r, "looks {looks:b}: the same dials"),
        }
    }
}

#[tokio::test]
async fn a_schedule_patched_while_paused_is_the_one_dialled_after_the_resume() {
    // Paused, PATCHed to another window in another time zone and resumed, all at one
    // instant; the engine looks after none, some or all of the three changes.
    let mut reference = None;
    for looks in 0..8 {
        let rig = Rig::new();
        let id = rig.create(&campaign()).await;
        rig.add_users(&id, &busy_users(6)).await;
        rig.run_to(at("2026-03-02T12:05:02Z")).await;
        assert_eq!(
            rig.dials().await.len(),
            3,
            "12:05:00 to 12:05:02, one a second"
        );
        rig.action(&id, "pause").await;
        if looks_after(looks, 0) {
            rig.look();
        }
        rig.patch(&id, &new_schedule()).await;
        if looks_after(looks, 1) {
            rig.look();
        }
        rig.action(&id, "resume").await;
        if looks_after(looks, 2) {
            rig.look();
        }
        rig.run_to(at("2026-03-05T12:05:00Z")).await;
        let dials = rig.dials().await;
        let after: Vec<DateTime<Utc>> = dials[3..].iter().map(|d| d.4).collect();
        // The three users not dialled yet at the new schedule's first opening, one a second;
        // then everyone's retries, all inside the new schedule.
        assert_eq!(
            after[..3],
            [
                at("2026-03-03T01:00:00Z"),
                at("2026-03-03T01:00:01Z"),
                at("2026-03-03T01:00:02Z")
            ],
            "looks {looks:b}"
        );
        assert_eq!(
            after.len(),
            6 * 11 - 3,
            "11 dials of each user, five a night"
        );
        for t in &after {
            assert!(in_new_schedule(*t), "looks {looks:b}: a dial at {t}");
        }
        match &reference {
            None => reference = Some(dials),
            Some(r) => assert_eq!(&dials, r, "looks {looks:b}: the same dials"),
        }
    }
}

/// One run of [`pause_and_resume_at_one_instant_dials_on_deterministically`]: an active
/// campaign paused and resumed at 12:05:04, the engine looking between the two (or after,
/// or not at all, or all the time from another thread); then its pending users dialled, its
/// busy users retried, and a cohort added at 13:30 dialled. Answers every dial.
async fn pause_resume_run(
    looks: u32,
    hammer: bool,
) -> Vec<(String, String, i64, i64, DateTime<Utc>)> {
    let rig = Rig::new();
    let id = rig.create(&campaign()).await;
    // Rows 1-5 busy (retried every hour), rows 6-10 not answered (done after one dial).
    let mut numbers = busy_users(5);
    numbers.extend((0..5).map(|i| magic(300 + i, 2)));
    rig.add_users(&id, &numbers).await;
    rig.run_to(at("2026-03-02T12:05:04Z")).await;
    assert_eq!(rig.dials().await.len(), 5, "12:05:00 to 12:05:04");
    // Another thread looking as fast as it can: the driver's loop woken by each change.
    let stop = Arc::new(AtomicBool::new(false));
    let looker = hammer.then(|| {
        let (engine, stop) = (rig.engine.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                engine.next_due().unwrap();
            }
        })
    });
    rig.action(&id, "pause").await;
    if looks_after(looks, 0) {
        rig.look();
    }
    rig.action(&id, "resume").await;
    if looks_after(looks, 1) {
        rig.look();
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = looker {
        t.join().unwrap();
    }
    rig.run_to(at("2026-03-02T13:30:00Z")).await;
    rig.add_users(&id, &[magic(400, 2), magic(401, 2)]).await;
    rig.run_to(at("2026-03-02T14:00:00Z")).await;
    rig.dials().await
}

#[tokio::test]
async fn pause_and_resume_at_one_instant_dials_on_deterministically() {
    let reference = pause_resume_run(0, false).await;
    let times = |row: i64, cohort: &str| -> Vec<DateTime<Utc>> {
        reference
            .iter()
            .filter(|d| d.2 == row && d.1 == cohort)
            .map(|d| d.4)
            .collect()
    };
    let first = reference[0].1.clone();
    // The pending users from the resume on, one a second, none in the paused instant twice.
    let firsts: Vec<DateTime<Utc>> = (1..=10).map(|row| times(row, &first)[0]).collect();
    assert_eq!(
        firsts,
        (0..10)
            .map(|s| at("2026-03-02T12:05:00Z") + Duration::seconds(s))
            .collect::<Vec<_>>()
    );
    // The busy users retried an hour after each busy call (2 s), by 13:30 and 14:00.
    for row in 1..=5 {
        let t = times(row, &first);
        assert_eq!(t.len(), 2, "row {row}: {t:?}");
        assert_eq!(t[1], t[0] + Duration::seconds(3602), "row {row}");
    }
    for row in 6..=10 {
        assert_eq!(times(row, &first).len(), 1, "row {row} not answered: done");
    }
    // The cohort added at 13:30 is dialled at once.
    let added: Vec<_> = reference.iter().filter(|d| d.1 != first).collect();
    assert_eq!(
        added.iter().map(|d| d.4).collect::<Vec<_>>(),
        [at("2026-03-02T13:30:00Z"), at("2026-03-02T13:30:01Z")]
    );

    // Whether and when the engine looked between the pause and the resume changes nothing.
    for i in 0..50u32 {
        let (looks, hammer) = (i % 4, i >= 4);
        let dials = pause_resume_run(looks, hammer).await;
        assert_eq!(
            dials, reference,
            "iteration {i}: looks {looks:b}, another thread looking: {hammer}"
        );
    }
}

#[tokio::test]
async fn pause_and_resume_at_one_instant_over_http_always_dials_on() {
    // As the tester drove it: the server's driver loop, woken by each change, racing the
    // next request.
    for i in 0..50 {
        let app = spawn_app().await;
        let retry = json!({"max_retries": 3, "retry_on": ["busy"], "retry_interval_minutes": 30});
        let id = create(
            &app,
            &crate::engine::campaign(1.0, retry, ("09:00", "17:00"), WEEKDAYS),
        )
        .await;
        crate::engine::add_users(&app, &id, &[magic(200, 1), magic(201, 2), magic(202, 2)]).await;
        advance_to(&app, "2026-03-02T12:05:00Z").await;
        let status = format!("{}/{id}/status", campaigns_path());
        for a in ["pause", "resume"] {
            let (s, v) = app.put(&status, &json!({"action": a})).await;
            assert_eq!(s, StatusCode::OK, "{v}");
        }
        advance(&app, 7200.0).await;
        let s = crate::engine::stats(&app, &id).await;
        assert_eq!(s["users_pending"], 0, "iteration {i}: {s}");
        // The busy user dialled at 12:05:00 and retried three times, 30 minutes after each
        // busy call; the two others dialled once.
        assert_eq!(s["attempts_total"], 6, "iteration {i}: {s}");
        assert_eq!(s["attempts_by_outcome"]["busy"], 4, "iteration {i}: {s}");
    }
}
