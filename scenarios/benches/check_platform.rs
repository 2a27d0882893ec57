//! How long a whole `harness check platform` takes against the mock on loopback, and whether
//! it stays inside its budgets: 5 s of wall time without `--sim` (the mock on its real
//! clock), 30 s with it (on a simulated clock). Both workspaces are given, so every check
//! runs. The bench exits 1 when a median passes its budget.
//!
//! ```sh
//! cargo bench --workspace --bench check_platform --profile dev   # the debug build users run first
//! cargo bench -p scenarios --bench check_platform                # release build
//! ```
//!
//! Each run starts a fresh mock (in this process, on its own tokio runtime, as a separate
//! process would be) and runs the suite against it. Prints wall time and CPU time (mock and
//! checker together) per run: median, min and max over `PLATFORM_BENCH_RUNS` runs
//! (default 5). The oracle runs, as it does by default; `PLATFORM_BENCH_ORACLE=0` leaves it
//! out (`--no-oracle`), to measure what it costs.

use contracts::clock::{SimClock, Stopwatch};
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use scenarios::checks::Outcome;
use scenarios::checks::platform::target::Workspace;
use scenarios::checks::platform::{Options, check};

mod support;
use support::{cpu_time, env_or, summary};

/// One mode of the suite and its budget.
struct Mode {
    name: &'static str,
    sim: bool,
    budget_secs: f64,
}

const MODES: [Mode; 2] = [
    Mode {
        name: "without --sim",
        sim: false,
        budget_secs: 5.0,
    },
    Mode {
        name: "with --sim",
        sim: true,
        budget_secs: 30.0,
    },
];

fn config() -> PlatformConfig {
    PlatformConfig {
        database: ":memory:".into(),
        api_keys: vec![
            ApiKeyConfig::parse("org-1/ws-1=sk-bench-1:bench").expect("key"),
            ApiKeyConfig::parse("org-1/ws-2=sk-bench-2:other").expect("key"),
        ],
        seed: Some(5),
        webhook_secret: Some("whsec_bench".into()),
        ..Default::default()
    }
}

fn options(url: &str, sim: bool, oracle: bool) -> Options {
    let ws = |workspace: &str, key: &str| Workspace {
        org: "org-1".into(),
        workspace: workspace.into(),
        key: key.into(),
    };
    let opts = Options::new(
        url,
        ws("ws-1", "sk-bench-1"),
        Some(ws("ws-2", "sk-bench-2")),
        sim,
    );
    if oracle { opts } else { opts.without_oracle() }
}

fn main() {
    let runs: usize = env_or("PLATFORM_BENCH_RUNS", 5);
    let oracle = env_or::<u8>("PLATFORM_BENCH_ORACLE", 1) != 0;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mock_rt = tokio::runtime::Runtime::new().expect("runtime");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut over = Vec::new();
    println!(
        "check platform: {runs} full runs per mode against the mock on loopback, both workspaces, \
         {}, {cores} cores (the machine is shared: figures vary with its load)",
        if oracle { "oracle on" } else { "--no-oracle" }
    );
    for mode in MODES {
        let mut wall = Vec::new();
        let mut cpu = Vec::new();
        for _ in 0..runs {
            let mut builder = App::builder(config());
            if mode.sim {
                builder = builder.sim_clock(SimClock::at("2026-03-02T08:00:00Z"));
            }
            let app = builder.build().expect("the app builds");
            let platform =
                platform::server::Platform::from_config(app).expect("the platform builds");
            let listener = mock_rt
                .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
                .expect("bind");
            let url = format!("http://{}", listener.local_addr().expect("addr"));
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = mock_rt.spawn(platform::server::serve(platform, listener, async {
                let _ = stopped.await;
            }));
            let cpu_before = cpu_time();
            let watch = Stopwatch::start();
            let report = rt
                .block_on(check(
                    &options(&url, mode.sim, oracle),
                    &mut |_| {},
                    std::future::pending(),
                ))
                .expect("the checks run");
            wall.push(watch.elapsed().as_secs_f64());
            if let Some(c) = cpu_before.zip(cpu_time()).map(|(a, b)| b.saturating_sub(a)) {
                cpu.push(c.as_secs_f64());
            }
            let failed: Vec<&str> = report
                .checks
                .iter()
                .filter(|c| c.result == Outcome::Fail)
                .map(|c| c.id.as_str())
                .collect();
            assert!(failed.is_empty(), "the mock failed {failed:?}");
            let _ = stop.send(());
            let _ = mock_rt.block_on(server);
        }
        let mut sorted = wall.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        println!(
            "{} (budget {} s): median {median:.2} s, {}",
            mode.name,
            mode.budget_secs,
            if median <= mode.budget_secs {
                "inside"
            } else {
                "OVER"
            }
        );
        summary("wall s, whole run", wall);
        summary("cpu s, mock and checker", cpu);
        if median > mode.budget_secs {
            over.push(mode.name);
        }
    }
    if !over.is_empty() {
        eprintln!("over budget: {}", over.join(", "));
        std::process::exit(1);
    }
}
