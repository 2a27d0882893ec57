//! `GET .../deployments?limit=20` on loopback with keep-alive: the platform with the request
//! journal off and on, against its floor measured in the same process: a static warp server
//! answering the same bytes (the platform's own answer, read once) on the same path. Each
//! round drives the three servers twice ([`http_load`]): saturated (closed loop: the
//! throughput, and latencies that only restate it), then all three at one fixed rate (open
//! loop, as wrk2: latency from each request's intended send time, so a stall is charged for
//! every request it delays), which is where latencies compare. Then the process's memory
//! over a long run with the journal on.
//!
//! Run with `cargo bench -p platform --bench deployments_list`. Options (environment):
//! `BENCH_REQUESTS` (default 200,000 requests to each server per phase), `BENCH_ROUNDS`
//! (default 3 rounds of the three servers, in an order that rotates), `BENCH_RATE` (the
//! fixed rate, requests/s; by default `BENCH_RATE_FRACTION`, 0.5, of the static server's
//! saturated throughput in the same round), `BENCH_ON_CAPACITY` (the journal's capacity on
//! the journal-on server, default 10,000; 0 makes it alike the journal-off one, to see the
//! noise of the method), `BENCH_CONNECTIONS` (default 32), `BENCH_DEPLOYMENTS` (default
//! 500), `BENCH_MEMORY_REQUESTS` (default 1,000,000; 0 skips the memory run), `BENCH_PAGE`
//! (the page size, default 20: an answer of about 12 KiB; 5: about 3 KiB),
//! `BENCH_RESPONSE_BODIES` (`all`: the journal keeps every answer's body, redacted, when
//! within its 8 KiB limit; by default only failed answers' bodies), `BENCH_MICRO` (N: time
//! the journal's own work for N requests, without the network, and stop),
//! `BENCH_JSON=FILE` (append the report to FILE as a JSON line), `BENCH_CLIENT` (`process`,
//! the default: the load generator, a minimal HTTP/1.1 client on raw sockets, runs each
//! phase in a process of its own ([`load_process`]), so that the CPU time and memory
//! measured are the servers' alone and the client's CPU time is reported apart;
//! `in-process`: in this process, where the CPU time counts client and servers),
//! `BENCH_CALLGRIND=1` (under `valgrind --tool=callgrind`: the servers' counts dumped at the
//! start and end of each phase, so that each phase's instructions are in a file of their
//! own). On a 2-core machine client and servers share the cores either way, so the
//! throughputs are lower bounds.
//!
//! The report's `wall_s` is the time of one round's saturated requests to the platform with
//! the journal on, `reference_wall_s` the static server's for as many: the ratio is the
//! inverse of the throughput ratio. Target: at least half the static server's throughput
//! (a ratio of at most 2), and a p99 at the fixed rate no worse than the static server's:
//! the median over the rounds of the ratio journal on / static, each round's own, at most
//! 1.0. Not judged when the load generator's scheduler fell behind.

#[path = "support/bench.rs"]
mod bench;
#[path = "support/http_load.rs"]
mod http_load;
#[path = "support/load_process.rs"]
mod load_process;

use bench::{Figures, Round, cpu_seconds, env, env_f64, peak_rss_mb, reset_peak, rss_mb};
use contracts::clock::Stopwatch;
use http_load::{Load, Paced, percentile_ms};
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use serde_json::json;

fn main() {
    platform::process::limit_malloc_arenas();
    if load_process::run_client_if_asked() {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(cores));
}

/// The fewest rounds whose median p99 ratio says more than the machine's noise: on a shared
/// 2-core machine a round's ratio spreads from about 0.3 to 2.3, and two runs of 15 rounds of
/// one build gave medians of 0.93 and 1.04.
const P99_VERDICT_ROUNDS: usize = 15;

struct Served {
    addr: std::net::SocketAddr,
    app: App,
    _dir: tempfile::TempDir,
}

/// A platform with the journal's capacity set, filled with `deployments` deployments.
async fn serve(capacity: usize, deployments: usize) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let mut config = PlatformConfig {
        database: dir.path().join("bench.db").display().to_string(),
        api_keys: vec![ApiKeyConfig::parse("org/ws=bench-key:bench").unwrap()],
        seed: Some(1),
        ..Default::default()
    };
    config.journal.capacity = capacity;
    if std::env::var("BENCH_RESPONSE_BODIES").is_ok_and(|v| v == "all") {
        config.journal.response_bodies = platform::config::journal::ResponseBodies::All;
    }
    let app = App::builder(config).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(platform::server::serve(
        platform::server::Platform::from_config(app.clone()).unwrap(),
        listener,
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let base = format!("http://{addr}/api/app-authoring/v1/orgs/org/workspaces/ws/deployments");
    for i in 0..deployments {
        let body = serde_json::json!({
            "name": format!("Desk {i}"),
            "app_id": "app-1",
            "app_version": 1,
            "description": "Front desk, weekdays",
            "connection_configs": [{"connection_id": "conn", "phone_numbers": [format!("+1415{i:07}"), format!("+1416{i:07}")]}],
            "inbound_config": {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday", "Friday"], "timezone": "Europe/London"}
        });
        let r = client
            .post(&base)
            .header("x-api-key", "bench-key")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }
    Served {
        addr,
        app,
        _dir: dir,
    }
}

/// Where the load generator runs (`BENCH_CLIENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// In a process of its own, each phase: the figures are the servers' alone.
    Process,
    /// In this process, beside the servers.
    InProcess,
}

impl Client {
    fn from_env() -> Client {
        match std::env::var("BENCH_CLIENT").as_deref() {
            Ok("in-process") => Client::InProcess,
            Ok("process") | Err(_) => Client::Process,
            Ok(other) => panic!("BENCH_CLIENT is `process` or `in-process`, not `{other}`"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Client::Process => "process",
            Client::InProcess => "in-process",
        }
    }

    async fn saturate(
        self,
        addr: std::net::SocketAddr,
        request: &str,
        connections: usize,
        requests: u64,
    ) -> Load {
        match self {
            Client::Process => load_process::saturate(addr, request, connections, requests).await,
            Client::InProcess => http_load::saturate(addr, request, connections, requests).await,
        }
    }

    async fn paced(
        self,
        addr: std::net::SocketAddr,
        request: &str,
        connections: usize,
        requests: u64,
        rate: f64,
    ) -> Paced {
        match self {
            Client::Process => {
                load_process::paced(addr, request, connections, requests, rate).await
            }
            Client::InProcess => http_load::paced(addr, request, connections, requests, rate).await,
        }
    }
}

fn request(addr: std::net::SocketAddr) -> String {
    let page = env("BENCH_PAGE", 20);
    format!(
        "GET /api/app-authoring/v1/orgs/org/workspaces/ws/deployments?limit={page}&offset=40 HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: bench-key\r\n\r\n"
    )
}

/// The journal's own work for one request, without the network: resolving the request,
/// judging it (and finding its workspace), recording it, timed over `n` requests
/// (`BENCH_MICRO=N`).
fn micro(app: &App, n: u64) {
    use contracts::operations::Catalogue;
    use platform::journal::verdict::{Answered, Asked, Pending, SeenBody, path_workspace};
    let path = "/api/app-authoring/v1/orgs/org/workspaces/ws/deployments";
    let response = SeenBody {
        content_type: Some(warp::http::HeaderValue::from_static("application/json")),
        size: 12_000,
        ..SeenBody::default()
    };
    let request = SeenBody::default();
    let mut times = [0f64; 3];
    let cpu0 = cpu_seconds();
    let all = Stopwatch::start();
    for _ in 0..n {
        let sw = Stopwatch::start();
        let resolved = Catalogue::platform().resolve("GET", path);
        times[0] += sw.elapsed().as_secs_f64();
        let sw = Stopwatch::start();
        let path_ws = path_workspace(&resolved, path);
        let keys = app.auth.matching(Some("bench-key"));
        let owner = app.auth.owner(&keys, path_ws.as_ref());
        let pending = Pending::new(
            &Asked {
                at: contracts::clock::Clock::now(&*app.clock),
                method: &warp::http::Method::GET,
                path,
                query: "limit=20&offset=40",
                api_key: Some("bench-key"),
                key_elsewhere: None,
                path_workspace: path_ws.as_ref(),
                resolved: &resolved,
            },
            app.auth.name_for(&keys, path_ws.as_ref()),
        );
        let e = pending.finish(
            &Answered {
                ignored_parts: &[],
                accepted_upload: None,
                status: Some(200),
                duration_ms: 0.5,
                request: &request,
                response: &response,
                fault: None,
                handled: true,
            },
            Catalogue::platform(),
            app.journal.settings().body_limit_bytes,
        );
        times[1] += sw.elapsed().as_secs_f64();
        let sw = Stopwatch::start();
        app.journal.record(e, owner.as_deref());
        times[2] += sw.elapsed().as_secs_f64();
    }
    let per = |t: f64| t * 1e9 / n as f64;
    println!(
        "journal work per request, {n} requests in one thread: resolve {:.0} ns, judge and redact {:.0} ns, record {:.0} ns; {:.0} ns wall, {:.0} ns CPU in all",
        per(times[0]),
        per(times[1]),
        per(times[2]),
        per(all.elapsed().as_secs_f64()),
        per(cpu_seconds() - cpu0)
    );
}

/// A static warp server answering `body` (with the platform's content type) on the list's
/// path: the floor.
async fn serve_static(body: bytes::Bytes) -> std::net::SocketAddr {
    use warp::Filter;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let route = warp::path!(
        "api" / "app-authoring" / "v1" / "orgs" / "org" / "workspaces" / "ws" / "deployments"
    )
    .and(warp::get())
    .map(move || {
        warp::http::Response::builder()
            .header("content-type", "application/json")
            .body(body.clone())
            .unwrap()
    });
    tokio::spawn(warp::serve(route).incoming(listener).run());
    addr
}

/// `, client N us`: the client's CPU per request, when it ran apart.
fn client_cpu(us: f64) -> String {
    if us.is_nan() {
        String::new()
    } else {
        format!(", client {us:.1} us")
    }
}

/// The answer of the list, as a client reads it.
async fn page(addr: std::net::SocketAddr) -> bytes::Bytes {
    let r = reqwest::Client::new()
        .get(format!(
            "http://{addr}/api/app-authoring/v1/orgs/org/workspaces/ws/deployments?limit={}&offset=40",
            env("BENCH_PAGE", 20)
        ))
        .header("x-api-key", "bench-key")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    r.bytes().await.unwrap()
}

async fn run(cores: usize) {
    let requests = env("BENCH_REQUESTS", 200_000);
    let rounds = env("BENCH_ROUNDS", 3).max(1) as usize;
    let connections = env("BENCH_CONNECTIONS", 32) as usize;
    let deployments = env("BENCH_DEPLOYMENTS", 500) as usize;
    let memory_requests = env("BENCH_MEMORY_REQUESTS", 1_000_000);
    let fixed_rate = Some(env_f64("BENCH_RATE", 0.0)).filter(|r| *r > 0.0);
    let rate_fraction = env_f64("BENCH_RATE_FRACTION", 0.5);
    let client = Client::from_env();
    assert!(
        fixed_rate.is_some() || (rate_fraction > 0.0 && rate_fraction.is_finite()),
        "BENCH_RATE_FRACTION must be above 0"
    );
    let off = serve(0, deployments).await;
    let on_capacity = env(
        "BENCH_ON_CAPACITY",
        platform::config::journal::DEFAULT_CAPACITY as u64,
    ) as usize;
    let on = serve(on_capacity, deployments).await;
    let micro_requests = env("BENCH_MICRO", 0);
    if micro_requests > 0 {
        micro(&on.app, micro_requests);
        return;
    }
    let body = page(off.addr).await;
    // The two platforms' pages differ only in their timestamps and port.
    assert!(
        body.len().abs_diff(page(on.addr).await.len()) <= 2,
        "both platforms answer pages of one size"
    );
    let fixed = serve_static(body.clone()).await;
    assert_eq!(
        body,
        page(fixed).await,
        "the static server answers the same bytes"
    );
    let rate_said = match fixed_rate {
        Some(r) => format!("{r:.0} requests/s (BENCH_RATE)"),
        None => format!(
            "{rate_fraction} of the static server's saturated throughput in the same round (BENCH_RATE_FRACTION)"
        ),
    };
    println!(
        "deployments list (limit {}, {deployments} deployments, answers of {} bytes), {connections} keep-alive connections, {rounds} rounds of {requests} requests to each server (a static warp server, the journal off, the journal on; the order rotates), {cores} cores ({})",
        env("BENCH_PAGE", 20),
        body.len(),
        match client {
            Client::Process =>
                "the client in a process of its own: CPU and memory are the servers' process's, the client's CPU apart",
            Client::InProcess => "the client in the same process: CPU and memory count it",
        }
    );
    println!(
        "each round: first saturated (closed loop: each connection sends when its answer is in), then at a fixed rate (open loop, latency from each request's intended send time) of {rate_said}, the same for the three servers"
    );
    let servers = [
        ("static", fixed),
        ("journal off", off.addr),
        ("journal on", on.addr),
    ];
    println!(
        "servers: static on {fixed}, journal off on {}, journal on on {}",
        off.addr, on.addr
    );
    let mut loads: [Vec<Load>; 3] = [vec![], vec![], vec![]];
    let mut at_rate: [Vec<Paced>; 3] = [vec![], vec![], vec![]];
    for round in 0..rounds {
        // The order rotates, so that a trend of the machine's speed weighs on every server.
        let order = [round % 3, (round + 1) % 3, (round + 2) % 3];
        for i in order {
            let (label, addr) = servers[i];
            let r = client
                .saturate(addr, &request(addr), connections, requests)
                .await;
            println!(
                "  round {}, {label:<11}, saturated: {:.0} requests/s, CPU {:.2} s for {:.2} s wall ({:.1} us of CPU per request{}); latency p50 {:.2} ms, p99 {:.2} ms",
                round + 1,
                r.rps(),
                r.took.cpu_s,
                r.took.wall_s,
                r.cpu_us_per_request(),
                client_cpu(r.client_cpu_us_per_request()),
                r.percentile_ms(0.50),
                r.percentile_ms(0.99)
            );
            loads[i].push(r);
        }
        let rate =
            fixed_rate.unwrap_or_else(|| rate_fraction * loads[0].last().expect("static").rps());
        for i in order {
            let (label, addr) = servers[i];
            let r = client
                .paced(addr, &request(addr), connections, requests, rate)
                .await;
            println!(
                "  round {}, {label:<11}, at {rate:.0} requests/s: latency p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms; sent {:.0} requests/s{}, send delay p99 {:.2} ms, scheduler lag p99 {:.2} ms; CPU {:.1} us per request{}",
                round + 1,
                r.percentile_ms(0.50),
                r.percentile_ms(0.99),
                r.percentile_ms(0.999),
                r.sent_rate(),
                if r.kept_rate() {
                    ""
                } else {
                    " (BEHIND the rate asked)"
                },
                percentile_ms(&r.send_delays, 0.99),
                percentile_ms(&r.release_lags, 0.99),
                r.cpu_us_per_request(),
                client_cpu(r.client_cpu_us_per_request())
            );
            at_rate[i].push(r);
        }
    }
    let [fixed_loads, off_loads, on_loads] = &loads;
    let spread = |v: &[Load], f: &dyn Fn(&Load) -> f64| bench::Spread::of(v.iter().map(f));
    let paced_spread = |v: &[Paced], f: &dyn Fn(&Paced) -> f64| bench::Spread::of(v.iter().map(f));
    let labels = ["static", "journal off", "journal on"];
    println!("saturated (closed loop, {connections} connections):");
    for (label, v) in labels.iter().zip(&loads) {
        println!(
            "  {label:<11}: {} requests/s, {} us CPU per request{}, p50 {} ms, p99 {} ms",
            spread(v, &|r| r.rps()).show(0),
            spread(v, &|r| r.cpu_us_per_request()).show(1),
            if client == Client::Process {
                format!(
                    " (client: {} us)",
                    spread(v, &|r| r.client_cpu_us_per_request()).show(1)
                )
            } else {
                String::new()
            },
            spread(v, &|r| r.percentile_ms(0.50)).show(2),
            spread(v, &|r| r.percentile_ms(0.99)).show(2)
        );
    }
    let rates = paced_spread(&at_rate[0], &|r| r.rate);
    println!(
        "at a fixed rate ({} requests/s, open loop, latency from the intended send time):",
        rates.show(0)
    );
    for (label, v) in labels.iter().zip(&at_rate) {
        println!(
            "  {label:<11}: p50 {} ms, p99 {} ms, p99.9 {} ms; sent {} requests/s; {} us CPU per request",
            paced_spread(v, &|r| r.percentile_ms(0.50)).show(2),
            paced_spread(v, &|r| r.percentile_ms(0.99)).show(2),
            paced_spread(v, &|r| r.percentile_ms(0.999)).show(2),
            paced_spread(v, &|r| r.sent_rate()).show(0),
            paced_spread(v, &|r| r.cpu_us_per_request()).show(1)
        );
    }
    let behind: Vec<String> = labels
        .iter()
        .zip(&at_rate)
        .flat_map(|(label, v)| {
            v.iter()
                .enumerate()
                .filter(|(_, r)| !r.kept_rate())
                .map(move |(n, r)| {
                    format!(
                        "{label} in round {} ({:.0} of {:.0} requests/s)",
                        n + 1,
                        r.sent_rate(),
                        r.rate
                    )
                })
        })
        .collect();
    let scheduler_lagged = at_rate.iter().flatten().any(Paced::scheduler_lagged);
    if !behind.is_empty() {
        println!(
            "  the requests went out below the rate asked for: {} (a server that holds every connection delays the sends; its latencies count the delay)",
            behind.join(", ")
        );
    }
    if scheduler_lagged {
        println!(
            "  the LOAD GENERATOR FELL BEHIND: its scheduler released requests more than 1 ms late (p99) in some phase; the latencies at the fixed rate are not judged"
        );
    } else {
        println!(
            "  the load generator kept its schedule (scheduler lag p99 within 1 ms in every phase)"
        );
    }
    let per_round = |a: &[Load], b: &[Load], f: &dyn Fn(&Load, &Load) -> f64| {
        bench::Spread::of(a.iter().zip(b).map(|(x, y)| f(x, y)))
    };
    let paced_per_round = |a: &[Paced], b: &[Paced], p: f64| {
        bench::Spread::of(
            a.iter()
                .zip(b)
                .map(|(x, y)| x.percentile_ms(p) / y.percentile_ms(p)),
        )
    };
    let [fixed_paced, off_paced, on_paced] = &at_rate;
    let on_static = per_round(on_loads, fixed_loads, &|a, b| a.rps() / b.rps());
    let on_off = per_round(on_loads, off_loads, &|a, b| a.rps() / b.rps());
    let p99_on_static = paced_per_round(on_paced, fixed_paced, 0.99);
    let p99_off_static = paced_per_round(off_paced, fixed_paced, 0.99);
    let p999_on_static = paced_per_round(on_paced, fixed_paced, 0.999);
    println!(
        "throughput (saturated), journal on / static: {}; journal on / off: {}; CPU per request on / off {:.3}",
        on_static.show(3),
        on_off.show(3),
        spread(on_loads, &|r| r.cpu_us_per_request()).median
            / spread(off_loads, &|r| r.cpu_us_per_request()).median
    );
    println!(
        "p99 at the fixed rate, journal on / static (same round): {}; journal off / static: {}; p99.9 journal on / static: {}",
        p99_on_static.show(3),
        p99_off_static.show(3),
        p999_on_static.show(3)
    );
    if rounds < P99_VERDICT_ROUNDS {
        println!(
            "  fewer than {P99_VERDICT_ROUNDS} rounds ({rounds}): a round's p99 ratio wanders by several times on a shared machine, for the journal off as for the journal on, so the p99's verdict of this run is close to a coin's toss (BENCH_ROUNDS={P99_VERDICT_ROUNDS} or more)"
        );
    }
    let mut figures = Figures::new(
        "deployments_list",
        "a static warp server answering the same bytes",
        "throughput (saturated) >= 0.5 of the static server (wall ratio <= 2); p99 at the fixed rate no worse than static: the median over the rounds of (journal on p99 / static p99, same round) <= 1.0, no tolerance",
    );
    figures.rounds = on_loads
        .iter()
        .zip(fixed_loads)
        .map(|(a, b)| Round {
            subject: a.took,
            reference: b.took,
        })
        .collect();
    let json_spread = |s: bench::Spread| json!({"median": s.median, "min": s.min, "max": s.max});
    // A figure of the saturated phases, for each server.
    let saturated_json = |f: &dyn Fn(&Load) -> f64| {
        json!({
            "static": json_spread(spread(fixed_loads, f)),
            "journal_off": json_spread(spread(off_loads, f)),
            "journal_on": json_spread(spread(on_loads, f)),
        })
    };
    let at_rate_json = |v: &[Paced]| {
        json!({
            "p50_ms": json_spread(paced_spread(v, &|r| r.percentile_ms(0.50))),
            "p99_ms": json_spread(paced_spread(v, &|r| r.percentile_ms(0.99))),
            "p999_ms": json_spread(paced_spread(v, &|r| r.percentile_ms(0.999))),
            "sent_rps": json_spread(paced_spread(v, &|r| r.sent_rate())),
            "send_delay_p99_ms": json_spread(paced_spread(v, &|r| percentile_ms(&r.send_delays, 0.99))),
            "scheduler_lag_p99_ms": json_spread(paced_spread(v, &|r| percentile_ms(&r.release_lags, 0.99))),
            "cpu_us_per_request": json_spread(paced_spread(v, &|r| r.cpu_us_per_request())),
            "client_cpu_us_per_request": json_spread(paced_spread(v, &|r| r.client_cpu_us_per_request())),
            "rounds": v.iter().map(|r| json!({
                "rate_rps": r.rate, "sent_rps": r.sent_rate(), "p50_ms": r.percentile_ms(0.50),
                "p99_ms": r.percentile_ms(0.99), "p999_ms": r.percentile_ms(0.999),
            })).collect::<Vec<_>>(),
        })
    };
    figures
        .with("requests_per_round", requests)
        .with("connections", connections as u64)
        .with("answer_bytes", body.len() as u64)
        .with("rps", spread(on_loads, &|r| r.rps()).median.round())
        .with(
            "rps_static",
            spread(fixed_loads, &|r| r.rps()).median.round(),
        )
        .with(
            "rps_journal_off",
            spread(off_loads, &|r| r.rps()).median.round(),
        )
        .with("throughput_ratio_to_static", on_static.median)
        .with("throughput_ratio_on_off", on_off.median)
        .with(
            "saturated_p50_ms",
            spread(on_loads, &|r| r.percentile_ms(0.50)).median,
        )
        .with(
            "saturated_p99_ms",
            spread(on_loads, &|r| r.percentile_ms(0.99)).median,
        )
        .with(
            "saturated_p50_ms_static",
            spread(fixed_loads, &|r| r.percentile_ms(0.50)).median,
        )
        .with(
            "saturated_p99_ms_static",
            spread(fixed_loads, &|r| r.percentile_ms(0.99)).median,
        )
        .with(
            "saturated_p99_ms_journal_off",
            spread(off_loads, &|r| r.percentile_ms(0.99)).median,
        )
        .with("rate_rps", json_spread(rates))
        .with(
            "rate_asked",
            match fixed_rate {
                Some(r) => json!({"fixed_rps": r}),
                None => json!({"fraction_of_static": rate_fraction}),
            },
        )
        .with(
            "at_rate",
            json!({
                "static": at_rate_json(fixed_paced),
                "journal_off": at_rate_json(off_paced),
                "journal_on": at_rate_json(on_paced),
            }),
        )
        .with("p99_at_rate_ratio_to_static", json_spread(p99_on_static))
        .with(
            "p99_at_rate_ratio_off_to_static",
            json_spread(p99_off_static),
        )
        .with("p999_at_rate_ratio_to_static", json_spread(p999_on_static))
        .with("generator_kept_schedule", !scheduler_lagged)
        .with("client", client.name())
        .with(
            "saturated_cpu_us_per_request",
            saturated_json(&|r| r.cpu_us_per_request()),
        )
        .with(
            "saturated_client_cpu_us_per_request",
            saturated_json(&|r| r.client_cpu_us_per_request()),
        )
        .with("sent_below_rate", json!(behind));
    figures.met =
        (!scheduler_lagged).then_some(on_static.median >= 0.5 && p99_on_static.median <= 1.0);
    figures.emit();

    if memory_requests > 0 {
        let rss0 = rss_mb();
        reset_peak();
        let hwm0 = peak_rss_mb();
        let r = client
            .saturate(on.addr, &request(on.addr), connections, memory_requests)
            .await;
        let summary = on.app.journal.summary(&platform::auth::Scope::Operator);
        println!(
            "memory, journal on: {} requests in {:.1} s ({:.0} requests/s); RSS {:.0} MiB before, {:.0} MiB after; peak RSS {:.0} MiB before, {:.0} MiB after; the journal holds {} entries ({} dropped)",
            r.latencies.len(),
            r.took.wall_s,
            r.rps(),
            rss0,
            rss_mb(),
            hwm0,
            peak_rss_mb(),
            summary.entries_kept,
            summary.entries_dropped
        );
    }
}
