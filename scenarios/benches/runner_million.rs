//! The largest run: `harness run` of `scenarios/benches/million.toml` (1,000,000 generated
//! users, 30 days, `max_retries: 2`, about 2.6 million dials) as a separate process, the
//! `harness` executable of this build, with its reports written: wall time, CPU time (the
//! child's user and system time) and peak resident memory (the child's `VmHWM`, read every
//! 20 ms while it runs). Against the floor of its writes, measured in this process after
//! it: one row per dial into the `attempts` table of a fresh database
//! (`engine_campaign::floor`). Targets: under 15 s and 250 MiB.
//!
//! Same results every time: the dials by result must be the counts the file always made,
//! and with `BENCH_RUNS` above 1 every round's `report.json` the same bytes (asserted).
//!
//! Run with `cargo bench -p scenarios --bench runner_million` (options: `BENCH_RUNS`,
//! default 1; `BENCH_JSON=FILE`). The same run by hand, with the figures from GNU time:
//!
//! ```sh
//! cargo build --release -p scenarios --bin harness
//! /usr/bin/time -v target/release/harness run scenarios/benches/million.toml -q --report-dir /tmp/million
//! ```

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use contracts::clock::Stopwatch;

#[allow(dead_code)]
#[path = "../../platform/benches/engine_campaign.rs"]
mod engine_campaign;

use engine_campaign::bench::{self, Figures, Round, Took};

/// Dials by result (connected, short, busy, no answer, failed) that the file makes.
const EXPECTED: [(&str, u64); 5] = [
    ("connected", 363_833),
    ("short_duration", 156_136),
    ("busy", 182_310),
    ("no_answer", 1_689_160),
    ("failed", 207_897),
];

/// Wall and CPU time and peak memory of `harness run FILE` in a child process.
fn run_harness(file: &Path, reports: &Path) -> Took {
    let cpu_before = children_cpu_seconds();
    let watch = Stopwatch::start();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("run")
        .arg(file)
        .arg("-q")
        .arg("--report-dir")
        .arg(reports)
        .spawn()
        .expect("harness starts");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0f64;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        }) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(status) = child.try_wait().expect("waiting for harness") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall_s = watch.elapsed().as_secs_f64();
    assert!(status.success(), "harness run failed: {status}");
    Took {
        wall_s,
        cpu_s: children_cpu_seconds() - cpu_before,
        peak_mb: peak_kb / 1024.0,
    }
}

/// CPU seconds of this process's children that were waited for (`cutime` and `cstime` of
/// `/proc/self/stat`).
fn children_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let f: Vec<String> = s
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .map(str::to_string)
                .collect();
            Some((f.get(13)?.parse::<f64>().ok()? + f.get(14)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

fn main() {
    let runs = bench::env("BENCH_RUNS", 1).max(1);
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/million.toml");
    let mut figures = Figures::new(
        "runner_million",
        "one row per dial into `attempts`, 32,768 a transaction",
        "wall < 15 s, peak < 250 MiB",
    );
    let mut first_json: Option<String> = None;
    let mut dials = 0;
    for i in 1..=runs {
        let dir = tempfile::tempdir().unwrap();
        let subject = run_harness(&file, dir.path());
        let json = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
        let report: serde_json::Value = serde_json::from_str(&json).unwrap();
        let by_result: Vec<(String, u64)> = report["campaigns"][0]["dials_by_result"]
            .as_array()
            .expect("dials by result")
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["count"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        for (name, n) in EXPECTED {
            let got = by_result.iter().find(|(k, _)| k == name).map(|(_, n)| *n);
            assert_eq!(
                got,
                Some(n),
                "{name} dials: the file makes the dials it always made"
            );
        }
        dials = by_result.iter().map(|(_, n)| n).sum::<u64>();
        assert_eq!(report["passed"], true, "the file's expectations hold");
        match &first_json {
            None => first_json = Some(json),
            Some(j) => assert!(*j == json, "report.json is the same bytes in every round"),
        }
        drop(dir);
        let reference = engine_campaign::floor(dials);
        println!(
            "round {i} of {runs}: harness run {:.2} s wall, {:.2} s CPU, peak {:.0} MiB; {dials} dials; floor {:.2} s wall, {:.2} s CPU",
            subject.wall_s, subject.cpu_s, subject.peak_mb, reference.wall_s, reference.cpu_s
        );
        figures.rounds.push(Round { subject, reference });
    }
    let peak = figures.peak().median;
    figures
        .with("users", 1_000_000u64)
        .with("dials", dials)
        .with(
            "peak_bytes_per_user",
            (peak * 1024.0 * 1024.0 / 1e6).round(),
        );
    figures.met = Some(figures.wall().median < 15.0 && figures.peak().median < 250.0);
    figures.emit();
}
