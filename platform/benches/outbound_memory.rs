//! Instant outbound calls over HTTP until `BENCH_CALLS` (default 100,000): what the process
//! keeps per call. Prints the resident memory (`VmRSS`) after every tenth of the calls, the
//! peak (`VmHWM`), CPU and wall time, then the memory once every call has ended.
//!
//! The measurement runs twice, each in its own process: with glibc's default malloc arenas
//! (the reference: how the server ran before it limited them) and with the arenas the
//! `platform` binary runs with (`MALLOC_ARENA_MAX=2`, see `platform::process`); a last line
//! compares the two.
//!
//! Run with `cargo bench -p platform --bench outbound_memory`. Options (environment):
//! `BENCH_CALLS` (100000), `BENCH_CONNECTIONS` (8 keep-alive clients), `BENCH_CLOCK`
//! (`simulated`, the default: no call ends until the clock is moved at the end, so every
//! call is in progress at once, the worst case; or `real`: calls end after their simulated
//! ring and talk time, up to an hour). The platform is configured as `platform serve`
//! configures it; the client runs in the same process, so its memory counts too.

#[path = "support/bench.rs"]
mod bench;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bench::{cpu_seconds, env, peak_rss_mb, rss_mb};
use contracts::clock::{SimClock, Stopwatch};
use contracts::validate::sim::Advance;
use platform::App;
use platform::config::{ApiKeyConfig, ClockMode, PlatformConfig};

/// Set in the measuring child processes.
const CHILD: &str = "BENCH_OUTBOUND_MEMORY_CHILD";

fn main() {
    if std::env::var_os(CHILD).is_some() {
        measure();
        return;
    }
    let mut results = Vec::new();
    for (label, arenas) in [
        ("glibc default arenas (reference)", None),
        (
            "MALLOC_ARENA_MAX=2 (as the platform binary runs)",
            Some(platform::process::ARENAS),
        ),
    ] {
        println!("== {label}");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child.env(CHILD, "1");
        match arenas {
            Some(n) => child.env(platform::process::MALLOC_ARENA_MAX, n),
            None => child.env_remove(platform::process::MALLOC_ARENA_MAX),
        };
        let out = child.output().expect("the measuring process runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        print!("{text}");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result = text
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .map(|r| {
                r.split_whitespace()
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.parse::<f64>().unwrap_or(f64::NAN)))
                    .collect::<std::collections::HashMap<_, _>>()
            })
            .expect("a RESULT line");
        results.push(result);
    }
    let (reference, limited) = (&results[0], &results[1]);
    println!(
        "== peak memory {:.0} MB with the limit against {:.0} MB without ({:.2}x); \
         CPU {:.1} s against {:.1} s ({:.2}x); wall {:.1} s against {:.1} s",
        limited["peak_mb"],
        reference["peak_mb"],
        limited["peak_mb"] / reference["peak_mb"],
        limited["cpu_s"],
        reference["cpu_s"],
        limited["cpu_s"] / reference["cpu_s"],
        limited["wall_s"],
        reference["wall_s"],
    );
}

fn measure() {
    let calls = env("BENCH_CALLS", 100_000);
    let connections = env("BENCH_CONNECTIONS", 8);
    let simulated = std::env::var("BENCH_CLOCK").map_or(true, |v| v != "real");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(calls, connections, simulated));
}

async fn run(calls: u64, connections: u64, simulated: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bench.db");
    let config = PlatformConfig {
        database: db.display().to_string(),
        api_keys: vec![ApiKeyConfig::parse("org/ws=bench-key:bench").unwrap()],
        seed: Some(1),
        clock: if simulated {
            ClockMode::Simulated
        } else {
            ClockMode::Real
        },
        ..Default::default()
    };
    let mut builder = App::builder(config);
    if simulated {
        builder = builder.sim_clock(SimClock::at("2026-03-02T12:00:00Z"));
    }
    let app = builder.build().unwrap();
    let platform = platform::server::Platform::from_config(app.clone()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(platform::server::serve(
        platform.clone(),
        listener,
        std::future::pending(),
    ));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{calls} instant outbound calls, {connections} keep-alive connections, {} clock, {cores} cores",
        if simulated { "simulated" } else { "real" }
    );
    println!("  start: resident {:.1} MB", rss_mb());

    let url = format!("http://{addr}/api/outbounds/v1/orgs/org/workspaces/ws/outbounds");
    let body = serde_json::to_vec(&serde_json::json!({
        "app_config": {
            "app_id": "app-1", "app_version": 1,
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550100"},
            "agent_variables": {"first_name": "Ada", "plan": "gold"}
        },
        "user_config": {"user_phone_number": "+13125550123"}
    }))
    .unwrap();
    let made = Arc::new(AtomicU64::new(0));
    let wall = Stopwatch::start();
    let cpu_before = cpu_seconds();
    let step = (calls / 10).max(1);
    let mut clients = Vec::new();
    for _ in 0..connections {
        let (url, body, made) = (url.clone(), body.clone(), made.clone());
        clients.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .unwrap();
            loop {
                let n = made.fetch_add(1, Ordering::Relaxed);
                if n >= calls {
                    break;
                }
                let r = client
                    .post(&url)
                    .header("x-api-key", "bench-key")
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.text().await.unwrap());
                let _ = r.bytes().await;
                if (n + 1) % step == 0 {
                    println!(
                        "  {:>7} calls: resident {:>6.1} MB, {:>5.1} s",
                        n + 1,
                        rss_mb(),
                        wall.elapsed().as_secs_f64()
                    );
                }
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    let elapsed = wall.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let resident = rss_mb();
    println!(
        "  done: {calls} calls in {elapsed:.1} s wall ({:.0}/s), {cpu:.1} s CPU; resident {resident:.1} MB, peak {:.1} MB",
        calls as f64 / elapsed,
        peak_rss_mb()
    );
    if simulated {
        // Every call ends: the clock moves past the longest call.
        let moved = platform
            .driver
            .advance(Advance::By(chrono::Duration::hours(2)))
            .await
            .unwrap();
        println!(
            "  after every call ended ({} ended): resident {:.1} MB, peak {:.1} MB",
            moved.calls_ended,
            rss_mb(),
            peak_rss_mb()
        );
    }
    let db_mb = std::fs::metadata(&db).map_or(0, |m| m.len()) as f64 / 1e6;
    println!("  database {db_mb:.1} MB (WAL not counted)");
    println!(
        "RESULT peak_mb={:.1} rss_mb={:.1} cpu_s={cpu:.2} wall_s={elapsed:.2}",
        peak_rss_mb(),
        rss_mb()
    );
}
