//! `harness check byok`: a customer's key endpoints against the contract, check by check.

use std::process::ExitCode;

/// `harness check byok` flags.
#[derive(clap::Args, Debug)]
pub struct ByokArgs {}

/// Runs `harness check byok`.
pub async fn run(_args: ByokArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harness check byok` is not built yet")
}
