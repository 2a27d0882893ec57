//! The `platform` command (`platform serve`: the platform mock on a port, over a SQLite
//! file). The `platform` binary runs it, and so does `harness` when started under the name
//! `platform` or as `harness platform ...`: one executable serves every command of the
//! harness.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::App;
use crate::app::generate_local_api_key;
use crate::config::{ByokSettings, Database, PlatformConfig};
use crate::journal::report::ExitStatusRule;

/// The voice-agent platform mock: outbound calls, campaigns, cohorts and inbound deployments
/// over HTTP, with customer data encrypted at rest.
#[derive(Parser, Debug)]
#[command(name = "platform", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the platform API until Ctrl-C (requests in flight finish first).
    Serve(ServeArgs),
}

/// What `serve` takes beside the configuration (whose flags are [`PlatformConfig`]'s): the
/// file, the BYOK flags of one workspace, and what it does beside serving.
#[derive(Args, Debug)]
struct ServeArgs {
    /// A TOML configuration file; flags and environment variables override it.
    #[arg(long, env = "PLATFORM_CONFIG")]
    config: Option<PathBuf>,
    /// Create the campaigns, deployments and cohorts of this file at start, with the ids it
    /// gives (TOML, or JSON when it ends in .json); those that exist already are left alone.
    #[arg(long, env = "PLATFORM_FIXTURES", value_name = "FILE")]
    fixtures: Option<PathBuf>,
    /// At shutdown, write the verdict on the clients from the request journal into DIR (every
    /// workspace's requests, as `harness verify` with an operator's key gives it):
    /// report.json, junit.xml (one test case per operation) and report.txt.
    #[arg(long, env = "PLATFORM_REPORT_ON_EXIT", value_name = "DIR")]
    report_on_exit: Option<PathBuf>,
    /// The exit status after a clean stop with --report-on-exit: `zero` (0 whatever the
    /// verdict) or `verdict` (`harness verify`'s: 1 when the verdict fails).
    #[arg(
        long,
        env = "PLATFORM_REPORT_EXIT_STATUS",
        value_enum,
        default_value_t = ExitStatusRule::Zero,
        requires = "report_on_exit"
    )]
    report_exit_status: ExitStatusRule,
    /// Once the platform takes requests, write its address as JSON to FILE (atomically,
    /// mode 0600), for scripts that wait for it: {"url", "openapi_url", "health_url",
    /// "webhook_secret"}, and "api_key" when one was generated.
    #[arg(long, env = "PLATFORM_READY_FILE", value_name = "FILE")]
    ready_file: Option<PathBuf>,
    // BYOK for one workspace: the flags override the fields of the configuration file's
    // `[[byok]]` entry of that workspace, or make one.
    #[command(flatten)]
    byok: ByokSettings,
}

/// What `serve` does beside serving.
#[derive(Debug, Default)]
struct Extras {
    fixtures: Option<PathBuf>,
    report_on_exit: Option<PathBuf>,
    report_exit_status: ExitStatusRule,
    ready_file: Option<PathBuf>,
}

/// The command line: [`Cli`] with the flags of [`PlatformConfig`] on `serve` (which keeps
/// its own description).
fn command() -> clap::Command {
    Cli::command().mut_subcommand("serve", |serve| {
        let about = serve.get_about().cloned().unwrap_or_default();
        let long_about = serve.get_long_about().cloned();
        let serve = PlatformConfig::augment_args(serve).about(about);
        match long_about {
            Some(text) => serve.long_about(text),
            None => serve.long_about(None),
        }
    })
}

impl ServeArgs {
    fn extras(&mut self) -> Extras {
        Extras {
            fixtures: self.fixtures.take(),
            report_on_exit: self.report_on_exit.take(),
            report_exit_status: self.report_exit_status,
            ready_file: self.ready_file.take(),
        }
    }

    /// The configuration: the file's (or the defaults), with the flags and environment
    /// variables in `matches` laid over it.
    fn into_config(self, matches: &clap::ArgMatches) -> Result<PlatformConfig> {
        let mut config = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                PlatformConfig::from_toml(&text)
                    .map_err(anyhow::Error::msg)
                    .with_context(|| format!("parsing {}", path.display()))?
            }
            None => PlatformConfig::default(),
        };
        config.update_from_arg_matches(matches)?;
        self.byok
            .apply(&mut config.byok)
            .map_err(anyhow::Error::msg)?;
        Ok(config)
    }
}

/// Runs the `platform` command with `args` (the first is the program's name), `version`
/// being what `--version` prints and `bin_name` how usage lines name the command
/// (`platform`, or `harness platform`). Call it first thing in `main`, before any thread
/// starts: it may start the process again (see [`crate::process::limit_malloc_arenas`]).
pub fn main<I, T>(
    version: &'static str,
    bin_name: &'static str,
    args: I,
) -> Result<std::process::ExitCode>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // Before any thread or allocation of note: it may start the process again.
    crate::process::limit_malloc_arenas();
    let matches = command()
        .version(version)
        .bin_name(bin_name)
        .get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run(cli, &matches))
}

async fn run(cli: Cli, matches: &clap::ArgMatches) -> Result<std::process::ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,platform=info".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only on a terminal: a log file or pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let Cli { command } = cli;
    match command {
        Command::Serve(mut args) => {
            let extras = args.extras();
            let serve_matches = matches
                .subcommand_matches("serve")
                .expect("the serve subcommand's matches");
            serve(args.into_config(serve_matches)?, extras).await
        }
    }
}

async fn serve(mut config: PlatformConfig, extras: Extras) -> Result<std::process::ExitCode> {
    let seed = config
        .seed
        .unwrap_or_else(|| contracts::ids::IdGen::from_entropy().seed());
    config.seed = Some(seed);
    let generated = if config.api_keys.is_empty() {
        let key = generate_local_api_key(&contracts::ids::IdGen::from_entropy());
        config.api_keys.push(key.clone());
        Some(key)
    } else {
        None
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    let shutdown = contracts::shutdown::signal();
    let app = App::builder(config.clone()).build()?;
    let platform = crate::server::Platform::from_config(app.clone()).map_err(anyhow::Error::msg)?;
    // Where clients reach it: the public URL when given, else this machine's address of the
    // listener (loopback when it listens on every address).
    let url = match &config.public_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => contracts::net::local_url(addr),
    };
    if url == format!("http://{addr}") {
        println!("platform listening on {url}");
    } else {
        println!("platform listening on {url} (bound to {addr})");
    }
    match config.database() {
        Database::Memory => println!("database: in memory (lost at exit)"),
        Database::File(p) => println!("database: {}", p.display()),
    }
    match &generated {
        Some(k) => println!(
            "local API key (every org and workspace): {}  -- send it as X-API-Key",
            k.key
        ),
        None => println!("API keys: {} configured", config.api_keys.len()),
    }
    println!("seed: {seed}");
    if config.byok.is_empty() {
        println!("data keys: local (no BYOK configured)");
    }
    for entry in &config.byok {
        println!("byok: {}", entry.summary());
    }
    match &app.sim {
        Some(sim) => println!(
            "clock: simulated, at {} -- move it with POST /sim/v1/clock/advance ({})",
            contracts::clock::format_instant(contracts::clock::Clock::now(sim)),
            match config.clock_admin_keys.len() {
                0 => "any workspace's key".to_string(),
                n => format!("{n} clock admin key(s) only"),
            }
        ),
        None => println!("clock: real"),
    }
    if config.webhook_secret.is_none() {
        println!(
            "webhook secret: {}",
            String::from_utf8_lossy(platform.webhook_secret())
        );
    }
    println!("OpenAPI document: {url}/openapi.json");
    println!(
        "live page: {url}{} (open it in a browser; it asks for an API key)",
        crate::api::ui::PAGE_PATH
    );
    if let Some(path) = &extras.fixtures {
        let applied = crate::fixtures::Fixtures::load(path)?
            .apply(&app)
            .await
            .with_context(|| format!("creating the fixtures of {}", path.display()))?;
        println!(
            "fixtures: {} created, {} already there ({})",
            applied.created.len(),
            applied.existing.len(),
            path.display()
        );
    }
    match app.journal.settings().capacity {
        0 => println!("request journal: off"),
        n => println!(
            "request journal: the latest {n} requests at {url}/sim/v1/journal{}",
            if app.journal.settings().persist {
                ", kept in the database"
            } else {
                ""
            }
        ),
    }
    if let Some(path) = &extras.ready_file {
        let mut ready = serde_json::json!({
            "url": url,
            "openapi_url": format!("{url}/openapi.json"),
            "health_url": format!("{url}/healthz"),
            "webhook_secret": String::from_utf8_lossy(platform.webhook_secret()),
        });
        if let Some(k) = &generated {
            ready["api_key"] = k.key.clone().into();
        }
        write_ready_file(path, &ready)
            .with_context(|| format!("writing the ready file {}", path.display()))?;
    }
    let store = app.store.clone();
    crate::server::serve(platform, listener, shutdown).await;
    let mut status = std::process::ExitCode::SUCCESS;
    if let Some(dir) = &extras.report_on_exit {
        let (report, written) = crate::journal::report::write_on_exit(
            &app,
            &url,
            dir,
            &crate::journal::report::VerifyOptions::default(),
        )
        .with_context(|| format!("writing the report into {}", dir.display()))?;
        println!(
            "report: {} ({})",
            written
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            report.summary.line()
        );
        status = std::process::ExitCode::from(extras.report_exit_status.status(&report));
    }
    store.checkpoint().context("checkpointing the database")?;
    println!("platform stopped");
    Ok(status)
}

/// Writes `value` to `path` through a temporary file and a rename, so that a script
/// polling for the file never reads half of it; private (0600), as it may hold a key.
fn write_ready_file(path: &std::path::Path, value: &serde_json::Value) -> std::io::Result<()> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp)?;
    f.write_all(format!("{value:#}\n").as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests;
