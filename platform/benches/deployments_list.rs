//! `GET .../deployments?limit=20` on loopback with keep-alive: requests per second and
//! latency percentiles.
//!
//! Run with `cargo bench -p platform --bench deployments_list`. Options (environment):
//! `BENCH_SECONDS` (default 10), `BENCH_CONNECTIONS` (default 32), `BENCH_DEPLOYMENTS`
//! (default 500). The load generator runs in the same process (a minimal HTTP/1.1 client
//! on raw sockets, so that it costs the server as little CPU as possible); on a 2-core
//! machine client and server share the cores, so the figure is a lower bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    let seconds = env("BENCH_SECONDS", 10);
    let connections = env("BENCH_CONNECTIONS", 32) as usize;
    let deployments = env("BENCH_DEPLOYMENTS", 500) as usize;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(seconds, connections, deployments, cores));
}

async fn run(seconds: u64, connections: usize, deployments: usize, cores: usize) {
    let dir = tempfile::tempdir().unwrap();
    let config = PlatformConfig {
        database: dir.path().join("bench.db").display().to_string(),
        api_keys: vec![ApiKeyConfig::parse("org/ws=bench-key:bench").unwrap()],
        seed: Some(1),
        ..Default::default()
    };
    let app = App::builder(config).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(platform::server::serve(
        platform::server::Platform::from_config(app.clone()).unwrap(),
        listener,
        std::future::pending(),
    ));

    // Fill the workspace over HTTP.
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

    let request = format!(
        "GET /api/app-authoring/v1/orgs/org/workspaces/ws/deployments?limit=20&offset=40 HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: bench-key\r\n\r\n"
    );
    // Warm up.
    let mut s = TcpStream::connect(addr).await.unwrap();
    for _ in 0..200 {
        roundtrip(&mut s, request.as_bytes()).await;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let stop = stop.clone();
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut latencies = Vec::with_capacity(200_000);
            while !stop.load(Ordering::Relaxed) {
                let sw = Stopwatch::start();
                roundtrip(&mut s, request.as_bytes()).await;
                latencies.push(sw.elapsed().as_micros() as u32);
            }
            latencies
        }));
    }
    let sw = Stopwatch::start();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = sw.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)] as f64 / 1000.0;
    println!(
        "deployments list (limit 20, {deployments} deployments), {connections} keep-alive connections, {seconds} s, {cores} cores (client in the same process)"
    );
    println!(
        "  {} requests, {:.0} requests/s; latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len(),
        all.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(1.0)
    );
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
