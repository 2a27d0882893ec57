//! The runner's overhead over the bare engine: the 100,000-user, 30-day example
//! (`scenarios/examples/large.toml`) through the scenario runner (the whole stack, every
//! call over HTTP, the key service over HTTP, the reports written) against the engine
//! benchmark's campaign (`platform/benches/engine_campaign.rs`: the same users, rate,
//! retries, window and telephony model, driven in process), in the same process, alternately,
//! `BENCH_RUNS` times each (default 3). Both are timed whole, setup included: wall and CPU
//! time, peak memory, the median of each and the ratio ([`bench::Figures`]; `BENCH_JSON=FILE`
//! appends it as a JSON line). Also the size of `report.html`.
//!
//! Same results every round: the runner's dials by result and its `report.json` are the
//! same bytes in every round, and the bare engine makes the same attempts (asserted).
//!
//! Run with `cargo bench -p scenarios --bench runner_overhead`.

use std::path::Path;

#[allow(dead_code)]
#[path = "../../platform/benches/engine_campaign.rs"]
mod engine_campaign;

use engine_campaign::bench::{self, Figures, Phase, Round};

fn main() {
    let runs = bench::env("BENCH_RUNS", 3).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/large.toml");
    let mut figures = Figures::new(
        "runner_overhead",
        "the bare engine's campaign of the same users, setup included",
        "CPU ratio <= 1.25",
    );
    let mut report_json: Option<String> = None;
    let mut bare: Option<engine_campaign::Counts> = None;
    let (mut html_bytes, mut attempts) = (0, 0);
    for i in 1..=runs {
        println!("--- round {i} of {runs}: the bare engine campaign");
        let phase = Phase::start();
        let c = rt.block_on(engine_campaign::campaign(100_000, 50, 30));
        let reference = phase.end();
        match &bare {
            None => bare = Some(c.counts),
            Some(b) => assert_eq!(*b, c.counts, "the bare engine makes the same attempts"),
        }
        println!(
            "bare engine, setup included: wall {:.2} s, CPU {:.2} s, peak {:.0} MiB; {} attempts",
            reference.wall_s, reference.cpu_s, reference.peak_mb, c.counts.attempts
        );

        println!("--- round {i} of {runs}: the runner on scenarios/examples/large.toml");
        let dir = tempfile::tempdir().unwrap();
        let phase = Phase::start();
        let report = rt
            .block_on(scenarios::runner::run_file(&file, None))
            .expect("the large example runs");
        scenarios::runner::write_reports(&report, dir.path()).unwrap();
        let subject = phase.end();
        html_bytes = std::fs::metadata(dir.path().join("report.html"))
            .unwrap()
            .len();
        let json = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
        match &report_json {
            None => report_json = Some(json),
            Some(j) => assert!(*j == json, "report.json is the same bytes in every round"),
        }
        attempts = report.campaigns[0]
            .dials_by_result
            .iter()
            .map(|c| c.count)
            .sum::<u64>();
        println!(
            "runner, reports included: wall {:.2} s, CPU {:.2} s, peak {:.0} MiB; {attempts} attempts; {}; report.html {html_bytes} bytes",
            subject.wall_s,
            subject.cpu_s,
            subject.peak_mb,
            report.expectations.summary.line(),
        );
        assert!(report.passed, "the large example's expectations hold");
        figures.rounds.push(Round { subject, reference });
    }
    let cpu_ratio = bench::Spread::of(figures.rounds.iter().map(Round::cpu_ratio));
    figures
        .with("attempts", attempts)
        .with("report_html_bytes", html_bytes)
        .with(
            "report_json_bytes",
            report_json.as_ref().map_or(0, |j| j.len() as u64),
        );
    figures.met = Some(cpu_ratio.median <= 1.25);
    figures.emit();
}
