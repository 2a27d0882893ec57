//! `harness up`: the platform, customer-kms-sim and the telephony simulator together on
//! localhost, BYOK wired end to end, until Ctrl-C or SIGTERM.
//!
//! - [`files`]: the configuration files (`--config`, `--platform-config`, `--kms-config`).
//! - [`banner`]: what it prints: the connection details as text or one JSON object, with
//!   curl commands that work when pasted.

pub(crate) mod banner;
pub(crate) mod files;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use platform::config::ApiKeyConfig;
use platform::journal::report::ExitStatusRule;
use platform::store::WorkspaceRef;

use crate::stack::{
    DEFAULT_ORG, DEFAULT_PORT_BASE, DEFAULT_WORKSPACE, EngineMode, Ports, Stack, StackClock,
    StackDatabase, StackOptions, parse_instant,
};

const EXAMPLES: &str = "\
Examples:
  # Everything on 127.0.0.1:8080 (platform) and :8081 (key service), a temporary database
  harness up

  # Free ports, connection details as JSON in a file once both listen (for CI)
  harness up --port-base 0 --ready-file /tmp/stack.json --json

  # A simulated clock (moved with POST /sim/v1/clock/advance), pinned seed, kept database
  harness up --clock simulated --sim-start 2026-03-02T08:00:00Z --seed 42 --database dev.db

  # The platform's and the key service's own configuration files
  harness up --platform-config platform.toml --kms-config kms.toml

  # In a container: listen on every address, a fixed API key (also HARNESS_HOST,
  # HARNESS_API_KEYS in the environment)
  harness up --host 0.0.0.0 --api-key sk-ci-1

  # For a client's CI: fixed fixtures, and the verdict on the client written at Ctrl-C
  harness up --port-base 0 --ready-file /tmp/stack.json --fixtures fixtures.toml \\
    --report-on-exit contract-report

Ctrl-C or SIGTERM stops both servers (requests in flight finish first); the exit status is
then 0 (with --report-on-exit and --report-exit-status verdict: 1 when the verdict on the
clients fails). It is 2 when the stack cannot start (a taken port, a bad file).";

/// `harness up` flags.
#[derive(clap::Args, Debug, Default)]
#[command(after_long_help = EXAMPLES)]
pub struct UpArgs {
    /// One TOML file for the whole stack: `[platform]` and `[kms]` tables (the keys of their
    /// own files), `[byok]` (client_id, key_alias, data_key_cache_secs, request_timeout_ms,
    /// rotation_period_secs) and `org_id`, `workspace_id`.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The platform's own configuration file (what `platform serve --config` reads).
    #[arg(long, value_name = "FILE")]
    pub(crate) platform_config: Option<PathBuf>,
    /// The key service's own configuration file (what `customer-kms-sim serve --config`
    /// reads).
    #[arg(long, value_name = "FILE")]
    pub(crate) kms_config: Option<PathBuf>,
    /// The platform's port; the key service listens on the next one. 0: free ports for
    /// both (printed). [default: 8080]
    #[arg(long, value_name = "PORT", env = "HARNESS_PORT_BASE")]
    pub(crate) port_base: Option<u16>,
    /// The address both servers listen on: 0.0.0.0 (or ::) in a container, so that
    /// published ports reach them. [default: 127.0.0.1]
    #[arg(long, value_name = "ADDRESS", env = "HARNESS_HOST")]
    pub(crate) host: Option<std::net::IpAddr>,
    /// The host name the printed URLs (and --json, the ready file) carry, when clients
    /// reach the stack by another name than the address it listens on (a Compose service
    /// name, a load balancer). [default: the --host, or 127.0.0.1 for 0.0.0.0 and ::1 for ::]
    #[arg(long, value_name = "HOST", env = "HARNESS_PUBLIC_HOST")]
    pub(crate) public_host: Option<String>,
    /// An API key of the platform: `KEY[:NAME]` opens the stack's workspace,
    /// `ORG/WORKSPACE=KEY[:NAME]` another (`*` matches any org or workspace). Repeat the flag,
    /// or separate keys with commas in the environment variable. [default: the platform
    /// file's keys, else a generated key for every workspace]
    #[arg(
        long = "api-key",
        value_name = "KEY",
        env = "HARNESS_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub(crate) api_keys: Vec<String>,
    /// `real` or `simulated`: a simulated clock, shared by the platform and the key service,
    /// moves only through the platform's POST /sim/v1/clock/advance. [default: the
    /// platform file's `clock`, else real]
    #[arg(long, value_parser = parse_clock, env = "HARNESS_CLOCK")]
    pub(crate) clock: Option<ClockArg>,
    /// Where a simulated clock starts (RFC 3339). [default: the platform file's
    /// `sim_start`, else now]
    #[arg(long, value_name = "RFC3339", env = "HARNESS_SIM_START")]
    pub(crate) sim_start: Option<String>,
    /// Seed of ids, call outcomes and the key service's keys. [default: the one remembered
    /// beside a --database file, else drawn and printed]
    #[arg(long, env = "HARNESS_SEED")]
    pub(crate) seed: Option<u64>,
    /// SQLite file, kept (with its local key `PATH.key` and the seed `PATH.seed` beside it),
    /// or `:memory:`. [default: the platform file's `database`, else a temporary file
    /// removed at exit]
    #[arg(long, value_name = "PATH")]
    pub(crate) database: Option<String>,
    /// The workspace wired to the key service, ORG/WORKSPACE. [default: the stack file's
    /// org_id/workspace_id, else org-1/ws-1]
    #[arg(long, value_name = "ORG/WORKSPACE", env = "HARNESS_WORKSPACE")]
    pub(crate) workspace: Option<String>,
    /// Print the connection details as one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the connection details (the JSON of --json) to this file once both servers
    /// listen, atomically; it is removed when the stack stops.
    #[arg(long, value_name = "PATH")]
    pub(crate) ready_file: Option<PathBuf>,
    /// Create the campaigns, deployments and cohorts of FILE once the stack listens (before
    /// the ready file is written), with the ids it gives (TOML, or JSON when it ends in
    /// .json); those that exist already are left alone. The format is `platform serve
    /// --fixtures`'.
    #[arg(long, value_name = "FILE", env = "HARNESS_FIXTURES")]
    pub(crate) fixtures: Option<PathBuf>,
    /// When the stack stops, write the verdict on the platform's clients from its request
    /// journal into DIR (every workspace's requests), as `harness verify` with an operator's
    /// key gives it: report.json, junit.xml (one test case per operation) and report.txt.
    #[arg(long, value_name = "DIR")]
    pub(crate) report_on_exit: Option<PathBuf>,
    /// The exit status after Ctrl-C or SIGTERM with --report-on-exit: `zero` (0 whatever the
    /// verdict) or `verdict` (`harness verify`'s: 1 when the verdict fails).
    #[arg(
        long,
        value_enum,
        default_value_t = ExitStatusRule::Zero,
        requires = "report_on_exit"
    )]
    pub(crate) report_exit_status: ExitStatusRule,
}

/// The clock flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockArg {
    /// The wall clock.
    Real,
    /// A simulated clock.
    Simulated,
}

fn parse_clock(s: &str) -> Result<ClockArg, String> {
    match s {
        "real" => Ok(ClockArg::Real),
        "simulated" | "sim" => Ok(ClockArg::Simulated),
        other => Err(format!("'{other}': use real or simulated")),
    }
}

fn parse_workspace(s: &str) -> anyhow::Result<WorkspaceRef> {
    match s.split_once('/') {
        Some((org, ws)) if !org.is_empty() && !ws.is_empty() && !ws.contains('/') => {
            Ok(WorkspaceRef::new(org, ws))
        }
        _ => bail!("--workspace '{s}': expected ORG/WORKSPACE, for example org-1/ws-1"),
    }
}

/// One `--api-key`: `KEY[:NAME]` for `workspace`, or `ORG/WORKSPACE=KEY[:NAME]`.
fn api_key(s: &str, workspace: &WorkspaceRef) -> anyhow::Result<ApiKeyConfig> {
    let full = if s.contains('=') {
        s.to_string()
    } else {
        format!("{}/{}={s}", workspace.org_id, workspace.workspace_id)
    };
    ApiKeyConfig::parse(&full)
        .map_err(|e| anyhow::anyhow!("--api-key {e} (KEY[:NAME] or ORG/WORKSPACE=KEY[:NAME])"))
}

impl UpArgs {
    /// The stack these flags and files describe. Flags win over files; what neither sets
    /// takes the stack's defaults.
    pub(crate) fn options(&self) -> anyhow::Result<StackOptions> {
        let loaded = files::load(
            self.config.as_deref(),
            self.platform_config.as_deref(),
            self.kms_config.as_deref(),
        )?;
        let source = loaded.platform_source.clone().unwrap_or_default();
        if loaded.platform_sets("listen") {
            bail!(
                "{source} sets `listen`, which `harness up` does not use: remove it and choose the ports with --port-base (the platform listens on the base port, the key service on the next)"
            );
        }
        let mut platform = loaded.platform.clone().unwrap_or_default();

        let file_clock =
            StackOptions::clock_of(&platform).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let sim_start = match &self.sim_start {
            Some(s) => Some(parse_instant(s).map_err(|e| anyhow::anyhow!("--sim-start {e}"))?),
            None => None,
        };
        let from_file = match file_clock {
            Some(StackClock::Simulated(t)) => Some(t),
            _ => None,
        };
        let clock = match (self.clock, sim_start, from_file) {
            (Some(ClockArg::Real), Some(_), _) => bail!(
                "--sim-start sets where a simulated clock starts: drop it, or use --clock simulated"
            ),
            (Some(ClockArg::Real), None, _) => StackClock::Real,
            (Some(ClockArg::Simulated), start, file) | (None, start, file @ Some(_)) => {
                StackClock::Simulated(
                    start
                        .or(file)
                        .unwrap_or_else(contracts::clock::sim_start_now),
                )
            }
            (None, Some(_), None) => bail!(
                "--sim-start needs --clock simulated (or clock = \"simulated\" in the platform's file)"
            ),
            (None, None, None) => StackClock::Real,
        };

        let database = match &self.database {
            Some(d) => StackDatabase::parse(d),
            None if loaded.platform_sets("database") => StackDatabase::parse(&platform.database),
            None => StackDatabase::Temporary,
        };
        let workspace = match &self.workspace {
            Some(w) => parse_workspace(w)?,
            None => WorkspaceRef::new(
                loaded.org_id.as_deref().unwrap_or(DEFAULT_ORG),
                loaded.workspace_id.as_deref().unwrap_or(DEFAULT_WORKSPACE),
            ),
        };
        if !self.api_keys.is_empty() {
            platform.api_keys = self
                .api_keys
                .iter()
                .map(|k| api_key(k, &workspace))
                .collect::<anyhow::Result<_>>()?;
        }
        if let Some(h) = &self.public_host
            && (h.is_empty() || h.contains(['/', ' ', '@', '?', '#']))
        {
            bail!("--public-host '{h}': give a host name or address, such as localhost or stack");
        }
        Ok(StackOptions {
            clock,
            seed: self.seed,
            database,
            ports: Ports::from_base(self.port_base.unwrap_or(DEFAULT_PORT_BASE)),
            host: self
                .host
                .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            public_host: self.public_host.clone(),
            workspace,
            platform,
            kms: loaded.kms,
            byok: loaded.byok,
            engine: EngineMode::Background,
        })
    }
}

/// Runs `harness up` until Ctrl-C or SIGTERM.
pub async fn run(args: UpArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging("info");
    let options = args.options()?;
    if let Some(path) = &args.ready_file {
        remove_stale(path)?;
    }
    // Registered before anything is printed: a signal sent as soon as the details are read
    // is not lost.
    let shutdown = contracts::shutdown::signal();
    let stack = Stack::start(options).await?;
    if let Some(path) = &args.fixtures
        && let Err(e) = load_fixtures(&stack, path).await
    {
        let _ = stack.stop().await;
        return Err(e);
    }
    let details = banner::Details::new(stack.info());
    if let Some(path) = &args.ready_file {
        crate::write_atomically(path, format!("{}\n", details.json()).as_bytes())
            .with_context(|| format!("writing the ready file {}", path.display()))?;
    }
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if args.json {
            writeln!(out, "{}", details.json())?;
        } else {
            write!(out, "{}", details.text())?;
        }
        out.flush()?;
    }
    shutdown.await;
    tracing::info!("stopping");
    let app = stack.app().clone();
    let url = stack.info().platform.url.clone();
    let stopped = stack.stop().await;
    if let Some(path) = &args.ready_file {
        let _ = std::fs::remove_file(path);
    }
    stopped?;
    let mut status = ExitCode::SUCCESS;
    if let Some(dir) = &args.report_on_exit {
        let (report, written) = platform::journal::report::write_on_exit(
            &app,
            &url,
            dir,
            &platform::journal::report::VerifyOptions::default(),
        )
        .with_context(|| format!("writing the report on exit into {}", dir.display()))?;
        tracing::info!(files = ?written, verdict = %report.summary.line(), "report on exit written");
        status = ExitCode::from(args.report_exit_status.status(&report));
    }
    if !args.json {
        println!("harness stopped");
    }
    Ok(status)
}

/// Creates the fixtures of `path` in the running stack and says how many.
async fn load_fixtures(stack: &Stack, path: &Path) -> anyhow::Result<()> {
    let applied = platform::fixtures::Fixtures::load(path)?
        .apply(stack.app())
        .await
        .with_context(|| format!("creating the fixtures of {}", path.display()))?;
    tracing::info!(
        created = applied.created.len(),
        existing = applied.existing.len(),
        file = %path.display(),
        "fixtures"
    );
    Ok(())
}

/// Removes a ready file an earlier run left, so that nobody reads it as this run's.
fn remove_stale(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| {
            format!(
                "removing the earlier ready file {} (a reader would take it for this run's)",
                path.display()
            )
        }),
    }
}

#[cfg(test)]
mod tests;
