//! The load generator of [`super::http_load`] in a process of its own: the benchmark runs
//! its own executable again as the client of one phase, so that the server's process
//! counts only the servers' CPU time and memory, and the client's work (its sockets, its
//! scheduler thread, its latency records) is measured apart.
//!
//! The client prints `started` when its phase begins (after its warm-up and connections),
//! `ended` when its last request is answered, then its figures as one JSON line; the server's
//! process measures itself between the two marks ([`Phase`]). The client runs on one thread
//! (a current-thread runtime, and the paced phase's scheduler thread), so that it can take at
//! most about one core from the servers.
//!
//! With `BENCH_CALLGRIND=1`, and the benchmark run under `valgrind --tool=callgrind` (the
//! client is not: valgrind does not follow the child by default), the server's counts are
//! dumped at each mark (`callgrind_control --dump`): each phase's instructions are in a file
//! of their own, whose description names the phase.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::bench::{Phase, Took};
use super::http_load::{self, Load, Paced};

/// Set in the client's process: its job, as JSON.
pub const CLIENT: &str = "BENCH_LOAD_CLIENT";

/// One phase of load, as the client's process is told it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job {
    addr: SocketAddr,
    request: String,
    connections: usize,
    requests: u64,
    /// `None`: saturated (closed loop); else the fixed rate, requests per second.
    rate: Option<f64>,
}

/// What the client's process answers (JSON has no `NaN`: an unknown figure is `None`).
#[derive(Debug, Serialize, Deserialize)]
struct Report {
    /// The client's own wall time, CPU time and peak memory over its phase.
    wall_s: f64,
    cpu_s: Option<f64>,
    peak_mb: Option<f64>,
    latencies: Vec<u32>,
    send_delays: Vec<u32>,
    release_lags: Vec<u32>,
    last_send_s: f64,
}

/// `None` for `NaN`.
fn known(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

/// Runs the client's job when this process is a client ([`CLIENT`] set), and answers
/// whether it was.
pub fn run_client_if_asked() -> bool {
    let Some(job) = std::env::var_os(CLIENT) else {
        return false;
    };
    let job: Job = serde_json::from_str(&job.to_string_lossy()).expect("a client's job");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hooks = Marks;
    let report = rt.block_on(async {
        match job.rate {
            None => {
                let l = http_load::saturate_with(
                    job.addr,
                    &job.request,
                    job.connections,
                    job.requests,
                    &hooks,
                )
                .await;
                Report {
                    wall_s: l.took.wall_s,
                    cpu_s: known(l.took.cpu_s),
                    peak_mb: known(l.took.peak_mb),
                    latencies: l.latencies,
                    send_delays: Vec::new(),
                    release_lags: Vec::new(),
                    last_send_s: 0.0,
                }
            }
            Some(rate) => {
                let p = http_load::paced_with(
                    job.addr,
                    &job.request,
                    job.connections,
                    job.requests,
                    rate,
                    &hooks,
                )
                .await;
                Report {
                    wall_s: p.took.wall_s,
                    cpu_s: known(p.took.cpu_s),
                    peak_mb: known(p.took.peak_mb),
                    latencies: p.latencies,
                    send_delays: p.send_delays,
                    release_lags: p.release_lags,
                    last_send_s: p.last_send_s,
                }
            }
        }
    });
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &report).unwrap();
    writeln!(out).unwrap();
    true
}

/// The client's marks: a line on its standard output at each.
struct Marks;

impl http_load::Hooks for Marks {
    fn started(&self) {
        let mut out = std::io::stdout().lock();
        writeln!(out, "started").unwrap();
        out.flush().unwrap();
    }

    fn ended(&self) {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ended").unwrap();
        out.flush().unwrap();
    }
}

/// [`http_load::saturate`] with the client in its own process: the figures' CPU time and
/// peak memory are the server process's, the client's CPU time is apart.
pub async fn saturate(addr: SocketAddr, request: &str, connections: usize, requests: u64) -> Load {
    let (took, client, report) = Job::new(addr, request, connections, requests, None)
        .run()
        .await;
    Load {
        took,
        client_cpu_s: client.cpu_s,
        latencies: report.latencies,
    }
}

/// [`http_load::paced`] with the client in its own process (see [`saturate`]).
pub async fn paced(
    addr: SocketAddr,
    request: &str,
    connections: usize,
    requests: u64,
    rate: f64,
) -> Paced {
    let (took, client, report) = Job::new(addr, request, connections, requests, Some(rate))
        .run()
        .await;
    Paced {
        took,
        client_cpu_s: client.cpu_s,
        rate,
        latencies: report.latencies,
        send_delays: report.send_delays,
        release_lags: report.release_lags,
        last_send_s: report.last_send_s,
    }
}

impl Job {
    fn new(
        addr: SocketAddr,
        request: &str,
        connections: usize,
        requests: u64,
        rate: Option<f64>,
    ) -> Job {
        Job {
            addr,
            request: request.into(),
            connections,
            requests,
            rate,
        }
    }

    /// Runs the job in a client process, measuring this process between its marks: the
    /// phase as the server saw it (wall time as the client measured it, this process's CPU
    /// time and peak memory), the client's own figures, and its report.
    async fn run(self) -> (Took, Took, Report) {
        let job = self;
        let label = if job.rate.is_some() {
            "paced"
        } else {
            "saturated"
        };
        tokio::task::spawn_blocking(move || {
            let mut child = Command::new(std::env::current_exe().expect("this executable"))
                .env(CLIENT, serde_json::to_string(&job).unwrap())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("the client process starts");
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let mut next = || {
                lines
                    .next()
                    .expect("the client answers")
                    .expect("the client's output")
            };
            assert_eq!(next(), "started", "the client's first mark");
            callgrind_dump(&format!("before {label} phase on {}", job.addr));
            let phase = Phase::start();
            assert_eq!(next(), "ended", "the client's second mark");
            let server = phase.end();
            callgrind_dump(&format!(
                "{label} phase on {}: {} requests",
                job.addr, job.requests
            ));
            let report: Report = serde_json::from_str(&next()).expect("the client's report");
            let status = child.wait().expect("the client ends");
            assert!(status.success(), "the client process failed: {status}");
            let took = Took {
                wall_s: report.wall_s,
                cpu_s: server.cpu_s,
                peak_mb: server.peak_mb,
            };
            let client = Took {
                wall_s: report.wall_s,
                cpu_s: report.cpu_s.unwrap_or(f64::NAN),
                peak_mb: report.peak_mb.unwrap_or(f64::NAN),
            };
            (took, client, report)
        })
        .await
        .expect("the client's phase")
    }
}

/// With `BENCH_CALLGRIND=1`: dumps this process's callgrind counts now, described by
/// `label` (the counts start again from zero).
fn callgrind_dump(label: &str) {
    if std::env::var_os("BENCH_CALLGRIND").is_none() {
        return;
    }
    let pid = std::process::id().to_string();
    let status = Command::new("callgrind_control")
        .args([&format!("--dump={label}"), &pid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!(
            "BENCH_CALLGRIND: callgrind_control --dump failed (is this process run under valgrind --tool=callgrind?)"
        );
    }
}
