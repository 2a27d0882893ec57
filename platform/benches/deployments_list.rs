//! `GET .../deployments?limit=20` on loopback with keep-alive: requests per second and
//! latency percentiles, with the request journal off and on, measured in the same process;
//! then the process's memory over a long run with the journal on.
//!
//! Run with `cargo bench -p platform --bench deployments_list`. Options (environment):
//! `BENCH_SECONDS` (default 10, per round), `BENCH_ROUNDS` (default 3 rounds of each, off
//! and on, which goes first alternating), `BENCH_ON_CAPACITY` (the journal's capacity on
//! the second server, default 10,000; 0 makes the two servers alike, to see the noise of
//! the method), `BENCH_CONNECTIONS` (default 32), `BENCH_DEPLOYMENTS` (default 500),
//! `BENCH_MEMORY_REQUESTS` (default 1,000,000; 0 skips the memory run), `BENCH_PAGE` (the
//! page size, default 20: an answer of about 12 KiB; 5: about 3 KiB), `BENCH_RESPONSE_BODIES`
//! (`all`: the journal keeps every answer's body, redacted, when within its 8 KiB limit;
//! by default only failed answers' bodies), `BENCH_MICRO` (N: time the journal's own work
//! for N requests, without the network, and stop). The load generator
//! runs in the same process (a minimal HTTP/1.1 client on raw sockets, so that it costs the
//! server as little CPU as possible); on a 2-core machine client and server share the
//! cores, so the figures are lower bounds, and the CPU time is the whole process's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use contracts::clock::Stopwatch;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(cores));
}

/// The process's CPU time (user + system) in seconds, from `/proc/self/stat` (Linux; clock
/// ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// A line of `/proc/self/status` in MiB (`VmRSS`, `VmHWM`).
fn status_mib(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
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

/// One measured round.
struct Round {
    requests: u64,
    wall: f64,
    cpu: f64,
    latencies: Vec<u32>,
}

impl Round {
    fn rps(&self) -> f64 {
        self.requests as f64 / self.wall
    }

    fn cpu_us_per_request(&self) -> f64 {
        self.cpu * 1e6 / self.requests as f64
    }
}

/// `connections` keep-alive connections for `seconds`, or until `budget` requests (when
/// set) are made.
async fn load(
    addr: std::net::SocketAddr,
    connections: usize,
    seconds: u64,
    budget: Option<u64>,
) -> Round {
    let stop = Arc::new(AtomicBool::new(false));
    let left = Arc::new(AtomicU64::new(budget.unwrap_or(u64::MAX)));
    let req = request(addr);
    // Warm up the connection path.
    let mut s = TcpStream::connect(addr).await.unwrap();
    for _ in 0..200 {
        roundtrip(&mut s, req.as_bytes()).await;
    }
    let cpu0 = cpu_seconds();
    let sw = Stopwatch::start();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (stop, left, req) = (stop.clone(), left.clone(), req.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut latencies = Vec::with_capacity(100_000);
            while !stop.load(Ordering::Relaxed)
                && left
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
    if budget.is_none() {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        stop.store(true, Ordering::Relaxed);
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let wall = sw.elapsed().as_secs_f64();
    latencies.sort_unstable();
    Round {
        requests: latencies.len() as u64,
        wall,
        cpu: cpu_seconds() - cpu0,
        latencies,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
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

async fn run(cores: usize) {
    let seconds = env("BENCH_SECONDS", 10);
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
    println!(
        "deployments list (limit {}, {deployments} deployments), {connections} keep-alive connections, {rounds} rounds of {seconds} s each with the journal off and on (alternating), {cores} cores (client in the same process)",
        env("BENCH_PAGE", 20)
    );
    let (mut off_rps, mut on_rps, mut off_cpu, mut on_cpu) = (vec![], vec![], vec![], vec![]);
    for round in 1..=rounds {
        // Which goes first alternates, so that a trend of the machine's speed weighs on both.
        let order = if round % 2 == 1 {
            [("off", &off), ("on ", &on)]
        } else {
            [("on ", &on), ("off", &off)]
        };
        for (label, served) in order {
            let r = load(served.addr, connections, seconds, None).await;
            let pct = |p: f64| {
                r.latencies[((r.latencies.len() as f64 * p) as usize).min(r.latencies.len() - 1)]
                    as f64
                    / 1000.0
            };
            println!(
                "  round {round}, journal {label}: {} requests, {:.0} requests/s, CPU {:.1} s for {:.1} s wall ({:.1} us of CPU per request); latency p50 {:.2} ms, p99 {:.2} ms",
                r.requests,
                r.rps(),
                r.cpu,
                r.wall,
                r.cpu_us_per_request(),
                pct(0.50),
                pct(0.99)
            );
            if label == "off" {
                off_rps.push(r.rps());
                off_cpu.push(r.cpu_us_per_request());
            } else {
                on_rps.push(r.rps());
                on_cpu.push(r.cpu_us_per_request());
            }
        }
    }
    let (a, b) = (range(&off_rps), range(&on_rps));
    println!(
        "journal off: {:.0} to {:.0} requests/s (median {:.0}), {:.1} to {:.1} us CPU per request",
        a.0,
        a.1,
        median(off_rps.clone()),
        range(&off_cpu).0,
        range(&off_cpu).1
    );
    println!(
        "journal on:  {:.0} to {:.0} requests/s (median {:.0}), {:.1} to {:.1} us CPU per request",
        b.0,
        b.1,
        median(on_rps.clone()),
        range(&on_cpu).0,
        range(&on_cpu).1
    );
    let ratios: Vec<f64> = on_rps.iter().zip(&off_rps).map(|(n, f)| n / f).collect();
    println!(
        "on / off throughput: median of rounds {:.3} (rounds {:.3} to {:.3}); CPU per request on / off {:.3}",
        median(ratios.clone()),
        range(&ratios).0,
        range(&ratios).1,
        median(on_cpu.clone()) / median(off_cpu.clone())
    );

    if memory_requests > 0 {
        let rss0 = status_mib("VmRSS:");
        let hwm0 = status_mib("VmHWM:");
        let r = load(on.addr, connections, 0, Some(memory_requests)).await;
        let summary = on.app.journal.summary(&platform::auth::Scope::Operator);
        println!(
            "memory, journal on: {} requests in {:.1} s ({:.0} requests/s); RSS {:.0} MiB before, {:.0} MiB after; peak RSS {:.0} MiB before, {:.0} MiB after; the journal holds {} entries ({} dropped)",
            r.requests,
            r.wall,
            r.rps(),
            rss0,
            status_mib("VmRSS:"),
            hwm0,
            status_mib("VmHWM:"),
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
