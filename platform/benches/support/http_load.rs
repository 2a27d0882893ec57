//! A load generator for one HTTP/1.1 route on loopback, on raw keep-alive sockets (so that it
//! costs the server under test as little CPU as possible), in two ways:
//!
//! - [`saturate`]: closed loop. Each connection sends its next request when the answer to
//!   the previous one has arrived, so the server runs as fast as it can: the figure is its
//!   throughput. The latencies there are set by the throughput (about connections /
//!   throughput each), so they compare throughputs a second time.
//! - [`paced`]: open loop at a fixed rate, as wrk2 does. Each request's send time is fixed in
//!   advance (request `k` at `k / rate` seconds), a scheduler thread releases the requests as
//!   their times come, and the first free connection sends each. A request's latency runs
//!   from its intended send time to the end of its answer, so a server that stalls is charged
//!   for every request it delayed, also those that waited for a free connection (no
//!   coordinated omission). Two servers driven at the same rate can be compared by latency.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use contracts::clock::Stopwatch;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::bench::{Phase, Took};

/// Requests sent on one connection to warm the server's path before a phase.
const WARM_UP: usize = 200;

/// What a phase tells at its marks: when it starts measuring (after the warm-up and the
/// connections) and when its last answer is in.
pub trait Hooks {
    /// The phase starts.
    fn started(&self) {}
    /// The phase's last answer is in.
    fn ended(&self) {}
}

/// No marks.
pub struct NoHooks;

impl Hooks for NoHooks {}

/// The requests to one server in one closed-loop phase.
pub struct Load {
    /// Wall and CPU time of the phase, and its peak memory: of the whole process (client and
    /// servers) when the client runs in it, of the servers' process when the client runs in
    /// its own ([`super::load_process`]).
    pub took: Took,
    /// The client's CPU time when it runs in its own process (`NaN` when it shares the
    /// servers' process and `took` counts it).
    pub client_cpu_s: f64,
    /// Each request's latency in microseconds, sorted.
    pub latencies: Vec<u32>,
}

impl Load {
    /// Requests answered per second.
    pub fn rps(&self) -> f64 {
        self.latencies.len() as f64 / self.took.wall_s
    }

    /// CPU microseconds per request (of the process [`Load::took`] measures).
    pub fn cpu_us_per_request(&self) -> f64 {
        self.took.cpu_s * 1e6 / self.latencies.len() as f64
    }

    /// The client's CPU microseconds per request (`NaN` when not apart).
    pub fn client_cpu_us_per_request(&self) -> f64 {
        self.client_cpu_s * 1e6 / self.latencies.len() as f64
    }

    /// The latency at percentile `p` (0.99), in ms.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies, p)
    }
}

/// The value at percentile `p` (0.99) of sorted microseconds, in ms.
pub fn percentile_ms(sorted_us: &[u32], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted_us.len() as f64 * p) as usize).min(sorted_us.len() - 1);
    f64::from(sorted_us[i]) / 1000.0
}

/// Sends `request` `WARM_UP` times on a connection of its own.
async fn warm_up(addr: SocketAddr, request: &[u8]) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    for _ in 0..WARM_UP {
        roundtrip(&mut s, request).await;
    }
}

/// `requests` requests over `connections` keep-alive connections, each sending its next
/// request when its answer has arrived.
pub async fn saturate(addr: SocketAddr, request: &str, connections: usize, requests: u64) -> Load {
    saturate_with(addr, request, connections, requests, &NoHooks).await
}

/// [`saturate`], telling `hooks` when the phase starts and ends.
pub async fn saturate_with(
    addr: SocketAddr,
    request: &str,
    connections: usize,
    requests: u64,
    hooks: &dyn Hooks,
) -> Load {
    let left = Arc::new(AtomicU64::new(requests));
    warm_up(addr, request.as_bytes()).await;
    hooks.started();
    let phase = Phase::start();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (left, req) = (left.clone(), request.to_string());
        tasks.push(tokio::spawn(async move {
            let mut s = connect(addr).await;
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
    hooks.ended();
    latencies.sort_unstable();
    Load {
        took,
        client_cpu_s: f64::NAN,
        latencies,
    }
}

/// The requests to one server in one open-loop phase at a fixed rate.
pub struct Paced {
    /// Wall and CPU time of the phase (see [`Load::took`]).
    pub took: Took,
    /// The client's CPU time when it runs in its own process (see [`Load::client_cpu_s`]).
    pub client_cpu_s: f64,
    /// The rate asked for, requests per second.
    pub rate: f64,
    /// Each request's latency from its intended send time to the end of its answer, in
    /// microseconds, sorted.
    pub latencies: Vec<u32>,
    /// Each request's delay from its intended send time to its actual send, in
    /// microseconds, sorted: the scheduler's lag and the wait for a free connection.
    pub send_delays: Vec<u32>,
    /// How late the scheduler released each request, in microseconds, sorted: the load
    /// generator's own lag, whatever the server does.
    pub release_lags: Vec<u32>,
    /// When the last request was sent, seconds after the schedule began.
    pub last_send_s: f64,
}

impl Paced {
    /// The rate achieved: requests sent per second, from the schedule's start to the last
    /// send (the first request is due at 0).
    pub fn sent_rate(&self) -> f64 {
        let n = self.latencies.len() as f64;
        if self.last_send_s > 0.0 {
            (n - 1.0) / self.last_send_s
        } else {
            f64::NAN
        }
    }

    /// CPU microseconds per request (of the process [`Paced::took`] measures).
    pub fn cpu_us_per_request(&self) -> f64 {
        self.took.cpu_s * 1e6 / self.latencies.len() as f64
    }

    /// The client's CPU microseconds per request (`NaN` when not apart).
    pub fn client_cpu_us_per_request(&self) -> f64 {
        self.client_cpu_s * 1e6 / self.latencies.len() as f64
    }

    /// Whether the requests went out at the rate asked for: the sent rate within 1 % of it.
    pub fn kept_rate(&self) -> bool {
        self.sent_rate() >= self.rate * 0.99
    }

    /// Whether the scheduler itself lagged: its 99th percentile of release lags above 1 ms
    /// (then the client, not the server, is the bottleneck).
    pub fn scheduler_lagged(&self) -> bool {
        percentile_ms(&self.release_lags, 0.99) > 1.0
    }

    /// The latency at percentile `p` (0.99), in ms.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies, p)
    }
}

/// `requests` requests at `rate` requests per second over `connections` keep-alive
/// connections: request `k` is due `k / rate` seconds after the start; a scheduler thread
/// releases each at its time, the first free connection sends it, and its latency is
/// measured from its due time.
pub async fn paced(
    addr: SocketAddr,
    request: &str,
    connections: usize,
    requests: u64,
    rate: f64,
) -> Paced {
    paced_with(addr, request, connections, requests, rate, &NoHooks).await
}

/// [`paced`], telling `hooks` when the phase starts and ends.
pub async fn paced_with(
    addr: SocketAddr,
    request: &str,
    connections: usize,
    requests: u64,
    rate: f64,
    hooks: &dyn Hooks,
) -> Paced {
    assert!(
        rate > 0.0 && rate.is_finite(),
        "a rate of requests per second"
    );
    assert!(requests > 0, "at least one request");
    warm_up(addr, request.as_bytes()).await;
    let mut sockets = Vec::with_capacity(connections);
    for _ in 0..connections {
        sockets.push(connect(addr).await);
    }
    let released = Arc::new(Semaphore::new(0));
    let claimed = Arc::new(AtomicU64::new(0));
    hooks.started();
    let phase = Phase::start();
    let schedule = Stopwatch::start();
    let scheduler = {
        let released = released.clone();
        std::thread::spawn(move || release(&released, schedule, requests, rate, connections))
    };
    let mut tasks = Vec::new();
    for mut s in sockets {
        let (released, claimed, req) = (released.clone(), claimed.clone(), request.to_string());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(100_000);
            let mut send_delays = Vec::with_capacity(100_000);
            let mut last_send = 0f64;
            loop {
                released.acquire().await.unwrap().forget();
                // Permits are released in due order, so the request claimed is due.
                let k = claimed.fetch_add(1, Ordering::Relaxed);
                if k >= requests {
                    break;
                }
                let due = k as f64 / rate;
                let sent = schedule.elapsed().as_secs_f64();
                roundtrip(&mut s, req.as_bytes()).await;
                let done = schedule.elapsed().as_secs_f64();
                latencies.push(micros(done - due));
                send_delays.push(micros(sent - due));
                last_send = last_send.max(sent);
            }
            (latencies, send_delays, last_send)
        }));
    }
    let (mut latencies, mut send_delays, mut last_send_s) = (Vec::new(), Vec::new(), 0f64);
    for t in tasks {
        let (l, d, last) = t.await.unwrap();
        latencies.extend(l);
        send_delays.extend(d);
        last_send_s = last_send_s.max(last);
    }
    let took = phase.end();
    hooks.ended();
    let mut release_lags = scheduler.join().expect("the scheduler thread");
    latencies.sort_unstable();
    send_delays.sort_unstable();
    release_lags.sort_unstable();
    Paced {
        took,
        client_cpu_s: f64::NAN,
        rate,
        latencies,
        send_delays,
        release_lags,
        last_send_s,
    }
}

/// The scheduler: releases request `k` (a permit of `released`) once `k / rate` seconds of
/// `schedule` have passed, sleeping until the next is due; at the end, one permit more for
/// each of `connections`, so that every sender sees there is nothing left. Answers how late
/// it released each request, in microseconds.
fn release(
    released: &Semaphore,
    schedule: Stopwatch,
    requests: u64,
    rate: f64,
    connections: usize,
) -> Vec<u32> {
    let mut lags = Vec::with_capacity(requests as usize);
    let mut next = 0u64;
    while next < requests {
        let now = schedule.elapsed().as_secs_f64();
        // Requests 0..due are due by now.
        let due = ((now * rate).floor() as u64 + 1).min(requests);
        if due > next {
            for k in next..due {
                lags.push(micros(now - k as f64 / rate));
            }
            released.add_permits((due - next) as usize);
            next = due;
        }
        if next < requests {
            let wait = next as f64 / rate - schedule.elapsed().as_secs_f64();
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
        }
    }
    released.add_permits(connections);
    lags
}

/// Seconds as whole microseconds (0 when negative).
fn micros(s: f64) -> u32 {
    (s * 1e6).max(0.0).min(f64::from(u32::MAX)) as u32
}

async fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Sends one request and reads one response (by `Content-Length`), checking it is a 200.
pub async fn roundtrip(s: &mut TcpStream, request: &[u8]) {
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
