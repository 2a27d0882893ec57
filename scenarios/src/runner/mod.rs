//! `harness run`: scenario files played on one simulated clock.
//!
//! For each file the runner builds the whole stack in process ([`crate::stack`]: platform,
//! customer-kms-sim over HTTP with BYOK on, telephony) on a simulated clock with the engine
//! driven by the runner, creates what the file creates through the platform's HTTP routes,
//! then moves the clock through `POST /sim/v1/clock/advance` from stop to stop: the engine
//! runs every event due on the way, in time order.
//!
//! - [`play`]: the run itself (setup, stops, timeline steps), on the state of [`mod@run`];
//! - [`judge`]: expectations into checks;
//! - [`observe`]: the dials, as the telephony simulator tells of them;
//! - [`collect`]: the report at the end;
//! - [`dials`]: the export of every dial (`--dials`); [`times`]: the dial times, compactly;
//!   [`users`]: each called user's dials;
//! - [`client`], [`webhooks`], [`cohorts`]: the API client, the webhook receiver, cohort
//!   uploads.

pub(crate) mod client;
pub(crate) mod cohorts;
pub(crate) mod collect;
pub(crate) mod dials;
pub(crate) mod judge;
pub mod observe;
pub(crate) mod play;
pub mod run;
pub(crate) mod times;
pub(crate) mod users;
pub(crate) mod webhooks;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::report::scenario::{ScenarioReport, render_text, to_json};
use crate::report::table::Colour;
use crate::scenario::{Loaded, load_file};

/// `harness run` flags.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  harness run scenarios/examples/lifecycle.toml
  harness run scenarios/examples/*.toml --report-dir reports
  harness run scenarios/examples/weights.toml --seed 7 --json > report.json
  harness run scenarios/examples/windows_dst.toml --dials dials.csv

Exit status: 0 when every expectation holds, 1 when one fails, 2 when a file is invalid or
the run could not be made.")]
pub struct RunArgs {
    /// Scenario files to run, in order.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Write report.json, report.html and junit.xml here (for several files, in a
    /// sub-directory per file, named after it; a name given twice gets -2, -3, ...).
    #[arg(long, value_name = "DIR")]
    pub(crate) report_dir: Option<PathBuf>,
    /// Seed of the run, instead of the file's.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Print only the failing expectations (what was expected and observed) and each file's
    /// summary: one line per file when everything holds.
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Print the report as JSON on standard output (an array for several files) instead of
    /// text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write every dial of the campaigns here, one row each (time, local time, user, agent
    /// number, connection, result, duration, attempt): CSV when the name ends in .csv, JSON
    /// Lines when it ends in .jsonl. For several files, each file's dials go to FILE with its
    /// report name before the extension (dials.lifecycle.csv).
    #[arg(long, value_name = "FILE")]
    pub(crate) dials: Option<PathBuf>,
}

/// Runs `harness run`.
pub async fn run(args: RunArgs) -> Result<ExitCode> {
    let mut loaded = vec![];
    let mut invalid = false;
    for f in &args.files {
        match load_file(f) {
            Ok(l) => loaded.push(l),
            Err(crate::scenario::load::LoadError::Invalid(e)) => {
                invalid = true;
                eprintln!("{e}");
            }
            Err(e) => return Err(e.into()),
        }
    }
    if invalid {
        anyhow::bail!(
            "nothing was run: fix the files above (`harness scenario check` checks them)"
        );
    }
    if let Some(d) = &args.dials {
        dials::Format::of(d)?;
    }
    let colour = Colour::for_stream(&std::io::stdout());
    let show_progress = !args.quiet && !args.json && std::io::stderr().is_terminal();
    let mut reports = vec![];
    let several = loaded.len() > 1;
    let dirs = dir_names(&loaded);
    for (l, dir_name) in loaded.iter().zip(&dirs) {
        let progress = if show_progress {
            let p = ProgressBar::new(1);
            p.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:40}] {percent:>3}% simulated (at {msg}), {elapsed}",
                )
                .expect("a fixed template parses")
                .progress_chars("=> "),
            );
            p.set_prefix(l.name.clone());
            p
        } else {
            ProgressBar::hidden()
        };
        let dials = args.dials.as_ref().map(|d| {
            if several {
                dials::path_for(d, dir_name)
            } else {
                d.clone()
            }
        });
        let report = run_loaded(l, args.seed, dials.as_deref(), &progress).await?;
        progress.finish_and_clear();
        if let Some(dir) = &args.report_dir {
            let dir = if several {
                dir.join(dir_name)
            } else {
                dir.clone()
            };
            write_reports(&report, &dir)?;
        }
        if !args.json {
            print!("{}", render_text(&report, colour, args.quiet));
        }
        reports.push(report);
    }
    if args.json {
        let v: Vec<&ScenarioReport> = reports.iter().collect();
        if several {
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            print!("{}", to_json(v[0]));
        }
    }
    let failed = reports.iter().filter(|r| !r.passed).count();
    if several && !args.json {
        println!(
            "{} scenario{}: {} passed, {failed} failed",
            reports.len(),
            crate::scenario::plural(reports.len()),
            reports.len() - failed
        );
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The report sub-directory of each file: its name without `.toml`, with `-2`, `-3`, ...
/// for a name already taken, so that no report overwrites another.
fn dir_names(loaded: &[Loaded]) -> Vec<String> {
    let mut taken = std::collections::BTreeSet::new();
    loaded
        .iter()
        .map(|l| {
            let stem = Path::new(&l.file)
                .file_stem()
                .map_or_else(|| l.name.clone(), |s| s.to_string_lossy().into_owned());
            let mut name = stem.clone();
            let mut n = 1;
            while !taken.insert(name.clone()) {
                n += 1;
                name = format!("{stem}-{n}");
            }
            name
        })
        .collect()
}

/// Writes `report.json`, `report.html` and `junit.xml` into `dir`.
pub fn write_reports(report: &ScenarioReport, dir: &Path) -> Result<()> {
    crate::report::write_file(&dir.join("report.json"), &to_json(report))?;
    crate::report::write_file(
        &dir.join("report.html"),
        &crate::report::html::render(report),
    )?;
    crate::report::write_file(
        &dir.join("junit.xml"),
        &crate::report::junit::render(&report.expectations),
    )?;
    Ok(())
}

/// Runs a scenario file (with the file's seed unless `seed`), without progress.
pub async fn run_file(path: &Path, seed: Option<u64>) -> Result<ScenarioReport> {
    let l = load_file(path)?;
    run_loaded(&l, seed, None, &ProgressBar::hidden()).await
}

/// Runs a loaded scenario; with `dials`, every dial is written to that file
/// ([`dials::DialExport`]).
pub(crate) async fn run_loaded(
    l: &Loaded,
    seed: Option<u64>,
    dials: Option<&Path>,
    progress: &ProgressBar,
) -> Result<ScenarioReport> {
    let seed = seed.unwrap_or(l.scenario.seed);
    let export = dials.map(dials::DialExport::create).transpose()?;
    let mut run = run::Run::start(l, seed).await?;
    run.observer.lock().export = export;
    let outcome = async {
        run.setup().await?;
        run.play(progress).await?;
        let (export, failed) = {
            let mut o = run.observer.lock();
            (o.export.take(), o.export_error.take())
        };
        if let Some(e) = failed {
            return Err(e);
        }
        if let Some(x) = export {
            x.finish()?;
        }
        collect::report(&run).await
    }
    .await
    .with_context(|| format!("running {}", l.file));
    let run::Run {
        stack, receiver, ..
    } = run;
    stack.stop().await.context("stopping the stack")?;
    receiver.stop().await;
    outcome
}
