//! A simulated 30-day campaign of 100,000 users with `max_retries: 3` on the simulated
//! clock, persisted in SQLite: wall time, simulated attempts per wall second, peak memory.
//!
//! Run with `cargo bench -p platform --bench engine_campaign`. Options (environment):
//! `BENCH_USERS` (default 100000), `BENCH_RATE` (dials per second, default 50),
//! `BENCH_DAYS` (default 30), `BENCH_RUNS` (default 3: the campaign is run that many times,
//! each on a fresh database, and the median is reported beside each run, because a shared
//! machine's figures wander).
//!
//! The users are added as JSON streams of 1,000 (the API's limit) before the start; the
//! outcomes come from the telephony simulator's default model (about 20 % connected, 40 %
//! unanswered, 25 % voicemail, 7 % busy, 8 % failed), every failure retried, every 30
//! minutes, inside 09:00-17:00 on weekdays. No webhook: only the engine is measured.

#[path = "support/bench.rs"]
pub(crate) mod bench;

use std::sync::Arc;

use bench::{cpu_seconds, env, peak_rss_mb};
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

fn main() {
    let users = env("BENCH_USERS", 100_000) as usize;
    let rate = env("BENCH_RATE", 50);
    let days = env("BENCH_DAYS", 30) as i64;
    let runs = env("BENCH_RUNS", 3).max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rates: Vec<f64> = (1..=runs)
        .map(|i| {
            println!("run {i} of {runs}");
            rt.block_on(campaign(users, rate, days, cores))
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "median of {runs} runs: {:.0} simulated attempts per wall second; peak memory of the process {:.0} MB",
        rates[rates.len() / 2],
        peak_rss_mb()
    );
}

/// Runs one campaign on a fresh database; answers its simulated attempts per wall second.
pub(crate) async fn campaign(users: usize, rate: u64, days: i64, cores: usize) -> f64 {
    {
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
            "setup: {users} users in {:.1} s (JSON streams of 1,000)",
            setup.elapsed().as_secs_f64()
        );
        let run = Stopwatch::start();
        let cpu_before = cpu_seconds();
        let report = platform
            .driver
            .advance(Advance::To(end + chrono::Duration::hours(1)))
            .await
            .unwrap();
        let wall = run.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu_before;
        let (_, c) = (
            (),
            campaigns::get(&app, &who, &campaign.campaign_id)
                .await
                .unwrap(),
        );
        let s = &c.statistics;
        println!(
            "campaign: {} users, max_retries 3, {rate} dials/s, {days} days simulated, {cores} cores",
            s.users_total
        );
        println!(
            "  {} attempts ({} connected, {} short, {} busy, {} no answer, {} failed); users done {}, unfinished {}",
            s.attempts_total,
            s.attempts_by_outcome.connected,
            s.attempts_by_outcome.short_duration,
            s.attempts_by_outcome.busy,
            s.attempts_by_outcome.no_answer,
            s.attempts_by_outcome.failed,
            s.users_done,
            s.users_unfinished
        );
        println!(
            "  wall time {wall:.2} s: {:.0} simulated attempts per wall second; CPU {cpu:.2} s: {:.0} attempts per CPU second; peak memory {:.0} MB",
            s.attempts_total as f64 / wall,
            s.attempts_total as f64 / cpu,
            peak_rss_mb()
        );
        let _ = report;
        s.attempts_total as f64 / wall
    }
}
