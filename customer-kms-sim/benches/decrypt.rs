//! Benchmark: `POST /decrypt-key` on loopback with keep-alive.
//!
//! `cargo bench -p customer-kms-sim --bench decrypt`
//!
//! The service and the clients share one tokio runtime with one worker per core, as a
//! platform test that starts the simulator in process would. Each of `KMS_BENCH_CONNECTIONS`
//! (default 16) tasks holds one keep-alive connection and sends decrypt requests back to
//! back, each with its own `x-request-id` and a current `x-request-timestamp`,
//! authenticated with a JWT from `/auth` (or the static API key with
//! `KMS_BENCH_AUTH=api-key`). The client is a raw hyper HTTP/1.1 connection
//! (`KMS_BENCH_CLIENT=hyper`, the default) or a reqwest client (`KMS_BENCH_CLIENT=reqwest`,
//! heavier: it parses the URL and builds a pool entry per request, so it measures the
//! client as much as the service). After a warm-up second it measures for
//! `KMS_BENCH_SECS` (default 5) seconds and prints throughput, latency percentiles and the
//! machine's core count. Every answer is checked to be 200 with the right key.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use contracts::clock::{Clock, Stopwatch, SystemClock, format_instant};
use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP};
use customer_kms_sim::{KeyService, KmsConfig};
use http_body_util::{BodyExt, Full};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One keep-alive connection's client.
enum Client {
    Hyper(
        hyper::client::conn::http1::SendRequest<Full<bytes::Bytes>>,
        String,
    ),
    Reqwest(reqwest::Client, reqwest::Url),
}

impl Client {
    async fn hyper(addr: std::net::SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        Client::Hyper(sender, addr.to_string())
    }

    /// Sends one decrypt request; the body of a 200 answer.
    async fn decrypt(
        &mut self,
        path: &str,
        request_id: &str,
        timestamp: &str,
        authorization: &str,
        body: bytes::Bytes,
    ) -> Option<bytes::Bytes> {
        match self {
            Client::Hyper(sender, host) => {
                sender.ready().await.ok()?;
                let req = hyper::Request::post(path)
                    .header("host", host.as_str())
                    .header(HEADER_REQUEST_ID, request_id)
                    .header(HEADER_REQUEST_TIMESTAMP, timestamp)
                    .header("authorization", authorization)
                    .header("content-type", "application/json")
                    .body(Full::new(body))
                    .ok()?;
                let resp = sender.send_request(req).await.ok()?;
                if resp.status() != 200 {
                    return None;
                }
                Some(resp.into_body().collect().await.ok()?.to_bytes())
            }
            Client::Reqwest(client, url) => {
                let resp = client
                    .post(url.clone())
                    .header(HEADER_REQUEST_ID, request_id)
                    .header(HEADER_REQUEST_TIMESTAMP, timestamp)
                    .header("authorization", authorization)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .ok()?;
                if resp.status() != 200 {
                    return None;
                }
                resp.bytes().await.ok()
            }
        }
    }
}

/// CPU time (user + system, all threads) this process has used, from `/proc/self/stat`
/// (Linux; in USER_HZ ticks of 10 ms). `None` elsewhere.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

struct Run {
    latencies_us: Vec<u32>,
    errors: u64,
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let secs: u64 = env_or("KMS_BENCH_SECS", 5);
    let connections: usize = env_or("KMS_BENCH_CONNECTIONS", 16);
    let use_reqwest = std::env::var("KMS_BENCH_CLIENT").is_ok_and(|v| v == "reqwest");
    let use_api_key = std::env::var("KMS_BENCH_AUTH").is_ok_and(|v| v == "api-key");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let config = KmsConfig::new("bench")
            .with_seed(1)
            .with_client("platform", &["bench-secret"])
            .with_api_key("bench-key", "sk_bench")
            .with_alias("tenant-a", 1);
        let svc = KeyService::new(config, SystemClock::shared()).expect("config");
        let data_key = [0x42u8; 32];
        let (encrypted, _) = svc.wrap_data_key("tenant-a", &data_key).unwrap();
        let expected = format!(
            "{{\"data\":{{\"plaintext_key\":\"{}\"}}}}",
            STANDARD.encode(data_key)
        );

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
            let _ = stopped.await;
        }));
        let base = format!("http://{addr}/bench/byok/v1");

        let bearer = if use_api_key {
            "sk_bench".to_string()
        } else {
            let r: serde_json::Value = reqwest::Client::new()
                .post(format!("{base}/auth"))
                .header(HEADER_REQUEST_ID, uuid::Uuid::nil().to_string())
                .header(HEADER_REQUEST_TIMESTAMP, format_instant(SystemClock.now()))
                .basic_auth("platform", Some("bench-secret"))
                .form(&[("grant_type", "client_credentials")])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["data"]["access_token"].as_str().unwrap().to_string()
        };
        let body = bytes::Bytes::from(
            serde_json::to_vec(&serde_json::json!({
                "data": {"key_alias": "tenant-a", "encrypted_key": encrypted}
            }))
            .unwrap(),
        );

        let measuring = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let path = "/bench/byok/v1/decrypt-key".to_string();
        let tasks: Vec<_> = (0..connections)
            .map(|i| {
                let (path, bearer, body, expected) =
                    (path.clone(), bearer.clone(), body.clone(), expected.clone());
                let (measuring, done) = (measuring.clone(), done.clone());
                tokio::spawn(async move {
                    let mut run = Run {
                        latencies_us: Vec::with_capacity(1 << 16),
                        errors: 0,
                    };
                    let auth = format!("Bearer {bearer}");
                    let mut client = if use_reqwest {
                        Client::Reqwest(
                            reqwest::Client::builder()
                                .pool_max_idle_per_host(1)
                                .timeout(Duration::from_secs(10))
                                .build()
                                .unwrap(),
                            reqwest::Url::parse(&format!("http://{addr}{path}")).unwrap(),
                        )
                    } else {
                        Client::hyper(addr).await
                    };
                    let mut n: u64 = 0;
                    while !done.load(Ordering::Relaxed) {
                        n += 1;
                        let id = uuid::Uuid::from_u64_pair(i as u64, n).to_string();
                        let ts = format_instant(SystemClock.now());
                        let sw = Stopwatch::start();
                        let ok = client
                            .decrypt(&path, &id, &ts, &auth, body.clone())
                            .await
                            .is_some_and(|b| b == expected.as_bytes());
                        if measuring.load(Ordering::Relaxed) {
                            if ok {
                                let us = sw.elapsed().as_micros();
                                run.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                            } else {
                                run.errors += 1;
                            }
                        }
                    }
                    run
                })
            })
            .collect();

        tokio::time::sleep(Duration::from_secs(1)).await; // warm-up
        measuring.store(true, Ordering::SeqCst);
        let clock = Stopwatch::start();
        let cpu_before = cpu_time();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        measuring.store(false, Ordering::SeqCst);
        let elapsed = clock.elapsed();
        let cpu_used = cpu_before.zip(cpu_time()).map(|(a, b)| b.saturating_sub(a));
        done.store(true, Ordering::SeqCst);

        let mut latencies = Vec::new();
        let mut errors = 0;
        for t in tasks {
            let run = t.await.unwrap();
            latencies.extend(run.latencies_us);
            errors += run.errors;
        }
        let _ = stop.send(());
        server.await.unwrap();

        latencies.sort_unstable();
        let pct = |p: f64| {
            let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
            f64::from(latencies[i]) / 1000.0
        };
        let rate = latencies.len() as f64 / elapsed.as_secs_f64();
        println!("decrypt-key benchmark (loopback, keep-alive)");
        println!("  cores:        {cores} (service and clients share them)");
        println!(
            "  auth:         {}",
            if use_api_key {
                "static API key"
            } else {
                "JWT (HS256)"
            }
        );
        println!(
            "  client:       {}",
            if use_reqwest {
                "reqwest"
            } else {
                "hyper HTTP/1.1 connections"
            }
        );
        println!("  connections:  {connections}");
        println!(
            "  duration:     {:.1} s (after 1 s warm-up)",
            elapsed.as_secs_f64()
        );
        println!("  requests:     {} ok, {errors} failed", latencies.len());
        println!("  throughput:   {rate:.0} decrypts/s");
        println!(
            "  latency ms:   p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}",
            pct(0.50),
            pct(0.90),
            pct(0.99),
            pct(1.0)
        );
        if let Some(cpu) = cpu_used {
            let per = cpu.as_secs_f64() * 1e6 / latencies.len().max(1) as f64;
            println!(
                "  cpu:          {:.2} core-seconds over {:.1} s wall ({:.0}% of {cores} cores), \
                 {per:.1} us per decrypt (service and client together)",
                cpu.as_secs_f64(),
                elapsed.as_secs_f64(),
                100.0 * cpu.as_secs_f64() / elapsed.as_secs_f64() / cores as f64
            );
            println!(
                "  idle-machine estimate: {:.0} decrypts/s ({cores} cores / cpu per decrypt)",
                cores as f64 * 1e6 / per
            );
        }
        println!("  audit log:    {} entries kept", svc.audit().len());
        assert_eq!(errors, 0, "every answer must be 200 with the right key");
    });
}
