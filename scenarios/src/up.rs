//! `harness up`: the platform, customer-kms-sim and the telephony simulator together on
//! localhost, BYOK wired end to end.

use std::process::ExitCode;

/// `harness up` flags.
#[derive(clap::Args, Debug)]
pub struct UpArgs {}

/// Runs `harness up`.
pub async fn run(_args: UpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`harness up` is not built yet")
}
