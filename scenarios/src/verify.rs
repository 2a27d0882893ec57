//! `harness verify`: the verdict on a client, from a running mock's request journal.

use std::process::ExitCode;

/// `harness verify` flags.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {}

/// Runs `harness verify`.
pub async fn run(_args: VerifyArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harness verify` is not built yet")
}
