//! `GET .../deployments?limit=20` on loopback with keep-alive: requests per second and
//! latency percentiles of the platform with the request journal off and on, against its
//! floor measured in the same process: a static warp server answering the same bytes (the
//! platform's own answer, read once) on the same path. Then the process's memory over a long
//! run with the journal on.
//!
//! Run with `cargo bench -p platform --bench deployments_list`. Options (environment):
//! `BENCH_REQUESTS` (default 200,000 requests to each server per round), `BENCH_ROUNDS`
//! (default 3 rounds of the three servers, in an order that rotates), `BENCH_ON_CAPACITY`
//! (the journal's capacity on the journal-on server, default 10,000; 0 makes it alike the
//! journal-off one, to see the noise of the method), `BENCH_CONNECTIONS` (default 32),
//! `BENCH_DEPLOYMENTS` (default 500), `BENCH_MEMORY_REQUESTS` (default 1,000,000; 0 skips
//! the memory run), `BENCH_PAGE` (the page size, default 20: an answer of about 12 KiB; 5:
//! about 3 KiB), `BENCH_RESPONSE_BODIES` (`all`: the journal keeps every answer's body,
//! redacted, when within its 8 KiB limit; by default only failed answers' bodies),
//! `BENCH_MICRO` (N: time the journal's own work for N requests, without the network, and
//! stop), `BENCH_JSON=FILE` (append the report to FILE as a JSON line). The load generator
//! runs in the same process (a minimal HTTP/1.1 client on raw sockets, so that it costs the
//! servers as little CPU as possible); on a 2-core machine client and server share the
//! cores, so the figures are lower bounds, and the CPU time is the whole process's.
//!
//! The report's `wall_s` is the time of one round's requests to the platform with the
//! journal on, `reference_wall_s` the static server's for as many: the ratio is the
//! inverse of the throughput ratio (target: at most 2, that is at least half the static
//! server's throughput, with a p99 latency no worse).

#[path = "support/bench.rs"]
mod bench;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bench::{Figures, Round, Took, cpu_seconds, env, peak_rss_mb, reset_peak, rss_mb};
use contracts::clock::Stopwatch;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(cores));
}

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

fn request(addr: std::net::SocketAddr) -> String {
    let page = env("BENCH_PAGE", 20);
    format!(
        "GET /api/app-authoring/v1/orgs/org/workspaces/ws/deployments?limit={page}&offset=40 HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: bench-key\r\n\r\n"
    )
}

/// The requests to one server in one round.
struct Load {
    /// Wall and CPU time of the round (the whole process: client and servers), and its
    /// peak memory.
    took: Took,
    /// Each request's latency in microseconds, sorted.
    latencies: Vec<u32>,
}

impl Load {
    fn rps(&self) -> f64 {
        self.latencies.len() as f64 / self.took.wall_s
    }

    fn cpu_us_per_request(&self) -> f64 {
        self.took.cpu_s * 1e6 / self.latencies.len() as f64
    }
}

/// `requests` requests over `connections` keep-alive connections.
async fn load(addr: std::net::SocketAddr, connections: usize, requests: Option<u64>) -> Load {
    let left = Arc::new(AtomicU64::new(requests.unwrap_or(u64::MAX)));
    let req = request(addr);
    // Warm up the connection path.
    let mut s = TcpStream::connect(addr).await.unwrap();
    for _ in 0..200 {
        roundtrip(&mut s, req.as_bytes()).await;
    }
    let phase = bench::Phase::start();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (left, req) = (left.clone(), req.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut latencies = Vec::with_capacity(100_000);
            while left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                let sw = Stopwatch::start();
                roundtrip(&mut s, req.as_bytes()).await;
                latencies.push(sw.elapsed().as_micros() as u32);
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let took = phase.end();
    latencies.sort_unstable();
    Load { took, latencies }
}

/// The journal's own work for one request, without the network: resolving the request,
/// judging it (and finding its workspace), recording it, timed over `n` requests
/// (`BENCH_MICRO=N`).
fn micro(app: &App, n: u64) {
    use contracts::operations::Catalogue;
    use platform::journal::verdict::{Exchange, SeenBody, entry, path_workspace};
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
        let owner = app.auth.owner(Some("bench-key"), path_ws.as_ref());
        let e = entry(
            &Exchange {
                at: contracts::clock::Clock::now(&*app.clock),
                method: "GET",
                path,
                query: "limit=20&offset=40",
                api_key: Some("bench-key"),
                key_elsewhere: None,
                path_workspace: path_ws.as_ref(),
                ignored_parts: &[],
                resolved: &resolved,
                status: Some(200),
                duration_ms: 0.5,
                request: &request,
                response: &response,
                fault: None,
                handled: true,
            },
            &app.auth,
            app.journal.settings().body_limit_bytes,
        );
        times[1] += sw.elapsed().as_secs_f64();
        let sw = Stopwatch::start();
        app.journal.record(e, owner.as_ref());
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

/// The latency at percentile `p` of a round, in ms.
fn percentile(r: &Load, p: f64) -> f64 {
    r.latencies[((r.latencies.len() as f64 * p) as usize).min(r.latencies.len() - 1)] as f64
        / 1000.0
}

async fn run(cores: usize) {
    let requests = env("BENCH_REQUESTS", 200_000);
    let rounds = env("BENCH_ROUNDS", 3).max(1) as usize;
    let connections = env("BENCH_CONNECTIONS", 32) as usize;
    let deployments = env("BENCH_DEPLOYMENTS", 500) as usize;
    let memory_requests = env("BENCH_MEMORY_REQUESTS", 1_000_000);
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
    println!(
        "deployments list (limit {}, {deployments} deployments, answers of {} bytes), {connections} keep-alive connections, {rounds} rounds of {requests} requests to each server (a static warp server, the journal off, the journal on; the order rotates), {cores} cores (client in the same process)",
        env("BENCH_PAGE", 20),
        body.len()
    );
    let servers = [
        ("static", fixed),
        ("journal off", off.addr),
        ("journal on", on.addr),
    ];
    let mut loads: [Vec<Load>; 3] = [vec![], vec![], vec![]];
    for round in 0..rounds {
        // The order rotates, so that a trend of the machine's speed weighs on every server.
        for k in 0..3 {
            let i = (round + k) % 3;
            let (label, addr) = servers[i];
            let r = load(addr, connections, Some(requests)).await;
            println!(
                "  round {}, {label:<11}: {:.0} requests/s, CPU {:.2} s for {:.2} s wall ({:.1} us of CPU per request); latency p50 {:.2} ms, p99 {:.2} ms",
                round + 1,
                r.rps(),
                r.took.cpu_s,
                r.took.wall_s,
                r.cpu_us_per_request(),
                percentile(&r, 0.50),
                percentile(&r, 0.99)
            );
            loads[i].push(r);
        }
    }
    let [fixed_loads, off_loads, on_loads] = &loads;
    let spread = |v: &[Load], f: &dyn Fn(&Load) -> f64| bench::Spread::of(v.iter().map(f));
    for (label, v) in [
        ("static", fixed_loads),
        ("journal off", off_loads),
        ("journal on", on_loads),
    ] {
        println!(
            "{label:<11}: {} requests/s, {} us CPU per request, p50 {} ms, p99 {} ms",
            spread(v, &|r| r.rps()).show(0),
            spread(v, &|r| r.cpu_us_per_request()).show(1),
            spread(v, &|r| percentile(r, 0.50)).show(2),
            spread(v, &|r| percentile(r, 0.99)).show(2)
        );
    }
    let per_round = |a: &[Load], b: &[Load], f: &dyn Fn(&Load, &Load) -> f64| {
        bench::Spread::of(a.iter().zip(b).map(|(x, y)| f(x, y)))
    };
    let on_static = per_round(on_loads, fixed_loads, &|a, b| a.rps() / b.rps());
    let on_off = per_round(on_loads, off_loads, &|a, b| a.rps() / b.rps());
    println!(
        "throughput, journal on / static: {}; journal on / off: {}; CPU per request on / off {:.3}",
        on_static.show(3),
        on_off.show(3),
        spread(on_loads, &|r| r.cpu_us_per_request()).median
            / spread(off_loads, &|r| r.cpu_us_per_request()).median
    );
    let mut figures = Figures::new(
        "deployments_list",
        "a static warp server answering the same bytes",
        "throughput >= 0.5 of the static server (wall ratio <= 2), p99 no worse",
    );
    figures.rounds = on_loads
        .iter()
        .zip(fixed_loads)
        .map(|(a, b)| Round {
            subject: a.took,
            reference: b.took,
        })
        .collect();
    let p99_on = spread(on_loads, &|r| percentile(r, 0.99)).median;
    let p99_static = spread(fixed_loads, &|r| percentile(r, 0.99)).median;
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
        .with("p50_ms", spread(on_loads, &|r| percentile(r, 0.50)).median)
        .with("p99_ms", p99_on)
        .with(
            "p50_ms_static",
            spread(fixed_loads, &|r| percentile(r, 0.50)).median,
        )
        .with("p99_ms_static", p99_static)
        .with(
            "p99_ms_journal_off",
            spread(off_loads, &|r| percentile(r, 0.99)).median,
        );
    figures.met = Some(on_static.median >= 0.5 && p99_on <= p99_static);
    figures.emit();

    if memory_requests > 0 {
        let rss0 = rss_mb();
        reset_peak();
        let hwm0 = peak_rss_mb();
        let r = load(on.addr, connections, Some(memory_requests)).await;
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

/// Sends one request and reads one response (by `Content-Length`), checking it is a 200.
async fn roundtrip(s: &mut TcpStream, request: &[u8]) {
    s.write_all(request).await.unwrap();
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).unwrap();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .expect("content-length");
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "connection closed");
                buf.extend_from_slice(&chunk[..n]);
            }
            return;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
