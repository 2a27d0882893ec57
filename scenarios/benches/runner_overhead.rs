//! The runner's overhead over the bare engine: the 100,000-user, 30-day example
//! (`scenarios/examples/large.toml`) through the scenario runner (the whole stack, every
//! call over HTTP, the key service over HTTP, the reports written) against the engine
//! benchmark's campaign (`platform/benches/engine_campaign.rs`: the same users, rate,
//! retries, window and telephony model, driven in process), in the same process, alternately,
//! `BENCH_RUNS` times each (default 3). Both are timed whole, setup included: wall and CPU
//! time, the median of each, and the ratio of the medians. Also the size of `report.html`.
//!
//! Run with `cargo bench -p scenarios --bench runner_overhead`.

use std::path::Path;

use contracts::clock::Stopwatch;

#[allow(dead_code)]
#[path = "../../platform/benches/engine_campaign.rs"]
mod engine_campaign;

use engine_campaign::cpu_seconds;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn range(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.2} to {hi:.2}")
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/large.toml");
    let (mut bare_wall, mut bare_cpu, mut run_wall, mut run_cpu) = (vec![], vec![], vec![], vec![]);
    let mut html_bytes = 0;
    let mut json_bytes = 0;
    for i in 1..=runs {
        println!("--- round {i} of {runs}: the bare engine campaign");
        let (w, c) = (Stopwatch::start(), cpu_seconds());
        rt.block_on(engine_campaign::campaign(100_000, 50, 30, cores));
        bare_wall.push(w.elapsed().as_secs_f64());
        bare_cpu.push(cpu_seconds() - c);
        println!(
            "bare engine, setup included: wall {:.2} s, CPU {:.2} s",
            bare_wall[i - 1],
            bare_cpu[i - 1]
        );

        println!("--- round {i} of {runs}: the runner on scenarios/examples/large.toml");
        let dir = tempfile::tempdir().unwrap();
        let (w, c) = (Stopwatch::start(), cpu_seconds());
        let report = rt
            .block_on(scenarios::runner::run_file(&file, None))
            .expect("the large example runs");
        scenarios::runner::write_reports(&report, dir.path()).unwrap();
        run_wall.push(w.elapsed().as_secs_f64());
        run_cpu.push(cpu_seconds() - c);
        html_bytes = std::fs::metadata(dir.path().join("report.html"))
            .unwrap()
            .len();
        json_bytes = std::fs::metadata(dir.path().join("report.json"))
            .unwrap()
            .len();
        let attempts: u64 = report.campaigns[0]
            .dials_by_result
            .iter()
            .map(|c| c.count)
            .sum();
        println!(
            "runner, reports included: wall {:.2} s, CPU {:.2} s; {attempts} attempts; {}; report.html {} bytes, report.json {} bytes",
            run_wall[i - 1],
            run_cpu[i - 1],
            report.expectations.summary.line(),
            html_bytes,
            json_bytes
        );
        assert!(report.passed, "the large example's expectations hold");
    }
    let (bw, bc, rw, rc) = (
        median(bare_wall.clone()),
        median(bare_cpu.clone()),
        median(run_wall.clone()),
        median(run_cpu.clone()),
    );
    println!(
        "\n{runs} rounds on {cores} cores (a shared machine: compare the medians, and rounds taken minutes apart differ)"
    );
    println!(
        "bare engine:  wall median {bw:.2} s (range {}), CPU median {bc:.2} s (range {})",
        range(&bare_wall),
        range(&bare_cpu)
    );
    println!(
        "runner:       wall median {rw:.2} s (range {}), CPU median {rc:.2} s (range {})",
        range(&run_wall),
        range(&run_cpu)
    );
    println!(
        "overhead of the runner: wall {:+.1} %, CPU {:+.1} % (target: under 25 %)",
        (rw / bw - 1.0) * 100.0,
        (rc / bc - 1.0) * 100.0
    );
    println!(
        "report.html {:.2} MB (target: under 2 MB), report.json {:.2} MB",
        html_bytes as f64 / 1e6,
        json_bytes as f64 / 1e6
    );
}
