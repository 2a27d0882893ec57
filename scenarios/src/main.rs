//! `harness`: the front door of the voice-agent platform harness.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use scenarios::checks::byok::ByokArgs;
use scenarios::checks::platform::PlatformArgs;
use scenarios::runner::RunArgs;
use scenarios::scenario::ScenarioCommand;
use scenarios::up::UpArgs;
use scenarios::verify::VerifyArgs;

/// The voice-agent platform harness: the mock platform with its simulated key service and
/// telephony, scenario runs on a simulated clock, and contract checks.
///
/// Exit status: 0 when everything judged holds, 1 when a check or expectation fails, 2 when
/// the command could not run (bad flags, a bad file, a service that cannot be reached).
#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version,
    about,
    long_about,
    after_help = "Examples:
  harness up                      # the whole stack on localhost, BYOK wired
  harness run scenarios/examples/lifecycle.toml --report-dir reports
  harness scenario check scenarios/examples/*.toml
  BYOK_CLIENT_SECRET=platform-secret-1 harness check byok --base-url http://127.0.0.1:8700 --partner acme --client-id platform --key-alias tenant-a
  harness check platform --base-url http://127.0.0.1:8080 --api-key sk-test-1 --org org-1 --workspace ws-1

Each command has its own --help, with examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the whole stack on localhost: platform, key service, telephony, BYOK wired.
    Up(UpArgs),
    /// Run scenario files on a simulated clock and judge their expectations.
    Run(RunArgs),
    /// The scenario file format: print its JSON Schema, or check a file.
    #[command(
        subcommand,
        after_help = "Examples:
  harness scenario schema > scenario.schema.json
  harness scenario check scenarios/examples/*.toml"
    )]
    Scenario(ScenarioCommand),
    /// Check an implementation against the contract.
    #[command(
        subcommand,
        after_help = "Examples:
  BYOK_CLIENT_SECRET=platform-secret-1 harness check byok --base-url http://127.0.0.1:8700 --partner acme --client-id platform --key-alias tenant-a
  harness check platform --base-url http://127.0.0.1:8080 --api-key sk-test-1 --org org-1 --workspace ws-1"
    )]
    Check(CheckCommand),
    /// Judge a client from a running mock's request journal.
    Verify(VerifyArgs),
}

#[derive(Subcommand, Debug)]
enum CheckCommand {
    /// Check a customer's key endpoints (/auth, /decrypt-key, /rotate-key).
    Byok(Box<ByokArgs>),
    /// Check a platform deployment against the platform API contract.
    Platform(Box<PlatformArgs>),
}

#[tokio::main]
async fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    let result = match command {
        Command::Up(args) => scenarios::up::run(args).await,
        Command::Run(args) => scenarios::runner::run(args).await,
        Command::Scenario(cmd) => scenarios::scenario::run(cmd).await,
        Command::Check(CheckCommand::Byok(args)) => scenarios::checks::byok::run(*args).await,
        Command::Check(CheckCommand::Platform(args)) => {
            scenarios::checks::platform::run(*args).await
        }
        Command::Verify(args) => scenarios::verify::run(args).await,
    };
    match result {
        Ok(code) => code,
        // The reader of standard output went away (`harness ... | head`): nothing to say.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("harness: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Whether `e` comes from writing to a pipe whose reader has closed it.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
