//! `harness`: the front door of the voice-agent platform harness.
//!
//! One executable serves every command: started under the name `platform` or
//! `customer-kms-sim` (a link to it, as in the container image and the release folder), or as
//! `harness platform ...` / `harness kms ...`, it runs that command instead.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use scenarios::checks::byok::ByokArgs;
use scenarios::checks::platform::PlatformArgs;
use scenarios::ping::PingArgs;
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
    version = VERSION,
    about,
    long_about,
    after_help = "Examples:
  harness up                      # the whole stack on localhost, BYOK wired
  harness run scenarios/examples/lifecycle.toml --report-dir reports
  harness scenario check scenarios/examples/*.toml
  BYOK_CLIENT_SECRET=platform-secret-1 harness check byok --base-url http://127.0.0.1:8700 --partner acme --client-id platform --key-alias tenant-a
  harness check platform --base-url http://127.0.0.1:8080 --api-key sk-test-1 --org org-1 --workspace ws-1
  harness ping http://127.0.0.1:8080/healthz   # exit 0 once the platform answers

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
    /// Exit 0 when a URL answers 2xx: a health check that needs no shell or curl.
    Ping(PingArgs),
    /// The platform alone (`platform serve ...`): what the `platform` executable runs.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Platform {
        /// The `platform` command's arguments (`serve --help` for its flags).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<OsString>,
    },
    /// The simulated key service alone (`customer-kms-sim serve ...`): what the
    /// `customer-kms-sim` executable runs.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Kms {
        /// The `customer-kms-sim` command's arguments (`serve --help` for its flags).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<OsString>,
    },
}

#[derive(Subcommand, Debug)]
enum CheckCommand {
    /// Check a customer's key endpoints (/auth, /decrypt-key, /rotate-key).
    Byok(Box<ByokArgs>),
    /// Check a platform deployment against the platform API contract.
    Platform(Box<PlatformArgs>),
}

/// What `--version` says: the version, the git commit and the build target.
const VERSION: &str = build_info::long_version!();

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    // The name it was started as picks the command (`platform`, `customer-kms-sim`).
    match invoked_as(&args).as_deref() {
        Some("platform") => return platform_command("platform", args),
        Some("customer-kms-sim") => {
            return customer_kms_sim::cli::main(VERSION, "customer-kms-sim", args);
        }
        _ => {}
    }
    let Cli { command } = Cli::parse_from(&args);
    let command = match command {
        Command::Platform { args } => {
            return platform_command("harness platform", with_name("platform", args));
        }
        Command::Kms { args } => {
            return customer_kms_sim::cli::main(
                VERSION,
                "harness kms",
                with_name("customer-kms-sim", args),
            );
        }
        other => other,
    };
    if matches!(command, Command::Run(_)) {
        // A large run allocates on the engine's thread and the runtime's at once: glibc's
        // default arenas kept hundreds of MB of freed memory (see `harness run` in README).
        platform::process::limit_malloc_arenas();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("harness: starting the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match command {
            Command::Up(args) => scenarios::up::run(args).await,
            Command::Run(args) => scenarios::runner::run(args).await,
            Command::Scenario(cmd) => scenarios::scenario::run(cmd).await,
            Command::Check(CheckCommand::Byok(args)) => scenarios::checks::byok::run(*args).await,
            Command::Check(CheckCommand::Platform(args)) => {
                scenarios::checks::platform::run(*args).await
            }
            Command::Verify(args) => scenarios::verify::run(args).await,
            Command::Ping(args) => scenarios::ping::run(args).await,
            Command::Platform { .. } | Command::Kms { .. } => unreachable!("dispatched above"),
        }
    });
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

/// The file name this process was started as, without a `.exe`.
fn invoked_as(args: &[OsString]) -> Option<String> {
    let path = std::path::Path::new(args.first()?);
    let name = path.file_stem()?.to_str()?;
    Some(name.to_string())
}

/// `args` behind a program name, for a command that reads its own name first.
fn with_name(name: &str, args: Vec<OsString>) -> Vec<OsString> {
    std::iter::once(OsString::from(name)).chain(args).collect()
}

/// Runs the `platform` command; its errors are printed as the `platform` binary prints them.
fn platform_command(bin_name: &'static str, args: Vec<OsString>) -> ExitCode {
    match platform::cli::main(VERSION, bin_name, args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:?}");
            ExitCode::FAILURE
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
