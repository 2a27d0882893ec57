//! A simulated 30-day campaign of 100,000 users with `max_retries: 3` on the simulated
//! clock, persisted in SQLite, against its floor measured in the same run: writing one row
//! per attempt (as many as the campaign made) into the same `attempts` table of a fresh
//! database, in transactions of the engine's batch size (32,768), with one prepared
//! statement. Printed and reported ([`bench::Figures`]): wall and CPU time of the campaign
//! (the engine loading its users and running every event), peak memory, the memory per
//! waiting user, the floor and the ratio.
//!
//! Run with `cargo bench -p platform --bench engine_campaign`. Options (environment):
//! `BENCH_USERS` (default 100000), `BENCH_RATE` (dials per second, default 50),
//! `BENCH_DAYS` (default 30), `BENCH_RUNS` (default 3 rounds of the campaign and its floor,
//! each on a fresh database), `BENCH_JSON=FILE` (append the report to FILE as a JSON line).
//!
//! The users are added as JSON streams of 1,000 (the API's limit) before the start; the
//! outcomes come from the telephony simulator's default model (about 20 % connected, 40 %
//! unanswered, 25 % voicemail, 7 % busy, 8 % failed), every failure retried, every 30
//! minutes, inside 09:00-17:00 on weekdays. No webhook: only the engine is measured.
//!
//! Same results after every change: every round must make the same attempts with the same
//! outcomes, and with the default options exactly the counts the engine made before it was
//! optimised (asserted).

#[path = "support/bench.rs"]
pub(crate) mod bench;

use std::sync::Arc;

use bench::{Figures, Phase, Round, Took, env, rss_mb};
use contracts::clock::{Clock, SimClock, Stopwatch};
use contracts::validate::sim::Advance;
use platform::App;
use platform::auth::Principal;
use platform::config::{ApiKeyConfig, PlatformConfig};
use platform::server::Platform;
use platform::service::{campaigns, cohorts};
use platform::store::WorkspaceRef;
use platform::store::cohorts::Parent;
use serde_json::json;
use telephony_sim::TelephonySim;

/// What the default campaign (100,000 users, 50 dials/s, 30 days, seed 1) makes: attempts,
/// then connected, short, busy, no answer, failed; users done and unfinished.
const DEFAULT_COUNTS: Counts = Counts {
    attempts: 324_142,
    by_outcome: [45_181, 19_575, 22_700, 211_056, 25_630],
    done: 100_000,
    unfinished: 0,
};

/// The engine's transaction size, which the floor's transactions copy.
const FLOOR_BATCH: u64 = 32_768;

fn main() {
    platform::process::limit_malloc_arenas();
    let users = env("BENCH_USERS", 100_000) as usize;
    let rate = env("BENCH_RATE", 50);
    let days = env("BENCH_DAYS", 30) as i64;
    let runs = env("BENCH_RUNS", 3).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut figures = Figures::new(
        "engine_campaign",
        "one row per attempt into `attempts`, 32,768 a transaction",
        "wall ratio <= 3",
    );
    let mut first: Option<Counts> = None;
    // The memory per waiting user is read in the first round only: later rounds load their
    // users into memory the earlier ones freed, which the resident size does not show.
    let mut per_user = None;
    for i in 1..=runs {
        println!("round {i} of {runs}");
        let c = rt.block_on(campaign(users, rate, days));
        println!(
            "  campaign: {} attempts, {:?} by outcome, done {}, unfinished {}; wall {:.3} s, CPU {:.3} s, peak {:.0} MiB; {:.0} bytes per waiting user",
            c.counts.attempts,
            c.counts.by_outcome,
            c.counts.done,
            c.counts.unfinished,
            c.took.wall_s,
            c.took.cpu_s,
            c.took.peak_mb,
            c.bytes_per_user
        );
        let reference = floor(c.counts.attempts);
        println!(
            "  floor:    {} rows; wall {:.3} s, CPU {:.3} s",
            c.counts.attempts, reference.wall_s, reference.cpu_s
        );
        match &first {
            None => first = Some(c.counts),
            Some(f) => assert_eq!(
                *f, c.counts,
                "the same seed makes the same attempts in every round"
            ),
        }
        if (users, rate, days) == (100_000, 50, 30) {
            assert_eq!(
                c.counts, DEFAULT_COUNTS,
                "the default campaign makes the attempts it always made"
            );
        }
        per_user.get_or_insert(c.bytes_per_user);
        figures.rounds.push(Round {
            subject: c.took,
            reference,
        });
    }
    let counts = first.expect("at least one round");
    let wall = figures.wall().median;
    figures
        .with("users", users as u64)
        .with("attempts", counts.attempts)
        .with(
            "attempts_per_wall_second",
            (counts.attempts as f64 / wall).round(),
        )
        .with(
            "bytes_per_waiting_user",
            per_user.unwrap_or(f64::NAN).round(),
        );
    figures.met = Some(figures.ratio().median <= 3.0);
    figures.emit();
}

/// A campaign's attempts and what became of its users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) attempts: u64,
    /// Connected, short, busy, no answer, failed.
    pub(crate) by_outcome: [u64; 5],
    pub(crate) done: u64,
    pub(crate) unfinished: u64,
}

/// One campaign measured.
pub(crate) struct Campaign {
    pub(crate) counts: Counts,
    /// From the first advance (the engine loads the users) to the end.
    pub(crate) took: Took,
    /// Resident memory the engine took when it loaded the waiting users, per user.
    pub(crate) bytes_per_user: f64,
}

/// Runs one campaign on a fresh database.
pub(crate) async fn campaign(users: usize, rate: u64, days: i64) -> Campaign {
    let dir = tempfile::tempdir().unwrap();
    let clock = SimClock::at("2026-03-02T08:00:00Z");
    let config = PlatformConfig {
        database: dir.path().join("bench.db").display().to_string(),
        api_keys: vec![ApiKeyConfig::parse("org/ws=k:bench").unwrap()],
        seed: Some(1),
        ..Default::default()
    };
    let app = App::builder(config)
        .sim_clock(clock.clone())
        .build()
        .unwrap();
    let telephony = TelephonySim::new(1);
    telephony.set_journal_limit(Some(0));
    let platform = Platform::new(app.clone(), Arc::new(telephony), b"bench".to_vec());
    let who = Principal {
        ws: WorkspaceRef::new("org", "ws"),
        name: "bench".into(),
    };
    let start = clock.now() + chrono::Duration::hours(1);
    let end = start + chrono::Duration::days(days);
    let campaign = campaigns::create(
        &app,
        &who,
        &json!({
            "name": "Bench",
            "start_timestamp": contracts::clock::format_instant(start),
            "end_timestamp": contracts::clock::format_instant(end),
            "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
                                 "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
            "app_config": {
                "app_id": "app-1", "app_version": 1, "attempts_per_second": rate,
                "connection_configs": [
                    {"connection_id": "a", "phone_numbers": ["+14155550100", "+14155550101"], "weight": 3},
                    {"connection_id": "b", "phone_numbers": ["+14155550200"], "weight": 1}
                ],
                "retry_config": {"max_retries": 3, "retry_on": ["busy", "no_answer", "failed", "short_duration", "provider_error", "internal_error"],
                                 "threshold_seconds": 15, "retry_interval_minutes": 30}
            }
        }),
    )
    .await
    .unwrap();
    let setup = Stopwatch::start();
    for chunk in 0..users.div_ceil(1000) {
        let batch: Vec<_> = (chunk * 1000..((chunk + 1) * 1000).min(users))
            .map(|i| json!({"phone_number": format!("+1312{i:07}"), "user_identifier": format!("u{i}"), "app_variables": {"i": i}}))
            .collect();
        cohorts::stream(
            &app,
            &who,
            &Parent::campaign(&campaign.campaign_id),
            &json!({"name": format!("batch {chunk}"), "users": batch}),
            None,
        )
        .await
        .unwrap();
    }
    println!(
        "  setup: {users} users in {:.1} s (JSON streams of 1,000)",
        setup.elapsed().as_secs_f64()
    );
    let phase = Phase::start();
    // Up to just before the start: the engine loads the campaign and admits its users, and
    // nobody is dialled yet.
    let before = rss_mb();
    platform
        .driver
        .advance(Advance::To(start - chrono::Duration::seconds(1)))
        .await
        .unwrap();
    let loaded = rss_mb();
    platform
        .driver
        .advance(Advance::To(end + chrono::Duration::hours(1)))
        .await
        .unwrap();
    let took = phase.end();
    let c = campaigns::get(&app, &who, &campaign.campaign_id)
        .await
        .unwrap();
    let s = &c.statistics;
    let o = &s.attempts_by_outcome;
    Campaign {
        counts: Counts {
            attempts: s.attempts_total,
            by_outcome: [o.connected, o.short_duration, o.busy, o.no_answer, o.failed],
            done: s.users_done,
            unfinished: s.users_unfinished,
        },
        took,
        bytes_per_user: (loaded - before) * 1024.0 * 1024.0 / users.max(1) as f64,
    }
}

/// The floor: `rows` rows written into the `attempts` table of a fresh database (the
/// platform's schema and settings), one prepared statement, [`FLOOR_BATCH`] rows a
/// transaction, each row with the columns and sizes of an ended campaign call.
pub(crate) fn floor(rows: u64) -> Took {
    let dir = tempfile::tempdir().unwrap();
    let store = platform::store::Store::open(dir.path().join("floor.db")).unwrap();
    let phase = Phase::start();
    let mut done = 0u64;
    while done < rows {
        let n = FLOOR_BATCH.min(rows - done);
        store
            .transaction_blocking(|c| {
                let mut st = c.prepare_cached(
                    "INSERT INTO attempts (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms,
                         campaign_id, cohort_id, row_no, retry_attempt, dialed_ms, ends_ms, outcome,
                         failure_reason, talk_ms, connection_id, agent_number, result)
                     VALUES (?1, 'campaign', 'org', 'ws', 'ended', x'', ?2, ?2, ?3, ?4, ?5, ?6, ?2, ?7,
                             'no_answer', NULL, 0, 'a', '+14155550100', 'no_answer')",
                )?;
                for k in done..done + n {
                    let at = 1_772_441_000_000 + k as i64 * 20;
                    let id = uuid::Builder::from_unix_timestamp_millis(
                        at as u64,
                        &(k as u128).to_be_bytes()[6..].try_into().unwrap(),
                    )
                    .into_uuid()
                    .to_string();
                    st.execute(rusqlite::params![
                        id,
                        at,
                        "cmp-0195a1b2c3d4e5f6a7b8c9d0e1f2a3b4",
                        "coh-0195a1b2c3d4e5f6a7b8c9d0e1f2a3b4",
                        (k % 100_000) as i64 + 1,
                        (k / 100_000) as i64,
                        at + 45_000,
                    ])?;
                }
                Ok(())
            })
            .unwrap();
        done += n;
    }
    phase.end()
}
