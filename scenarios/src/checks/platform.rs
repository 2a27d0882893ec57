//! `harness check platform`: any implementation of the platform API against the contract.

use std::process::ExitCode;

/// `harness check platform` flags.
#[derive(clap::Args, Debug)]
pub struct PlatformArgs {}

/// Runs `harness check platform`.
pub async fn run(_args: PlatformArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harness check platform` is not built yet")
}
