//! The scenario file format: `harness scenario schema|check`.

use std::process::ExitCode;

/// `harness scenario` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ScenarioCommand {}

/// Runs a `harness scenario` subcommand.
pub async fn run(command: ScenarioCommand) -> anyhow::Result<ExitCode> {
    match command {}
}
