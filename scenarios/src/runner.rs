//! `harness run`: scenario files played on one simulated clock.

use std::process::ExitCode;

/// `harness run` flags.
#[derive(clap::Args, Debug)]
pub struct RunArgs {}

/// Runs `harness run`.
pub async fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harness run` is not built yet")
}
