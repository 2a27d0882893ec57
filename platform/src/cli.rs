//! The `platform` command (`platform serve`: the platform mock on a port, over a SQLite
//! file). The `platform` binary runs it, and so does `harness` when started under the name
//! `platform` or as `harness platform ...`: one executable serves every command of the
//! harness.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::App;
use crate::app::generate_local_api_key;
use crate::config::{
    ApiKeyConfig, ByokSettings, ClockMode, Database, DeploymentWebhook, PlatformConfig,
};
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

#[derive(Args, Debug)]
struct ServeArgs {
    /// A TOML configuration file; flags and environment variables override it.
    #[arg(long, env = "PLATFORM_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port (printed at start).
    #[arg(long, env = "PLATFORM_LISTEN")]
    listen: Option<SocketAddr>,
    /// SQLite file (created when missing), or ":memory:".
    #[arg(long, env = "PLATFORM_DATABASE")]
    database: Option<String>,
    /// An API key: ORG/WORKSPACE=KEY[:NAME]; `*` as org or workspace matches any. Repeat the
    /// flag, or separate keys with commas in the environment variable. Without any, a random
    /// key for every org and workspace is made and printed.
    #[arg(long = "api-key", env = "PLATFORM_API_KEYS", value_delimiter = ',', value_parser = ApiKeyConfig::parse)]
    api_keys: Vec<ApiKeyConfig>,
    /// Base64 of the 32-byte local master key; else read from (or written to) <database>.key.
    #[arg(long, env = "PLATFORM_LOCAL_KEY", hide_env_values = true)]
    local_key: Option<String>,
    /// Largest cohort upload in bytes (413 above).
    #[arg(long, env = "PLATFORM_MAX_UPLOAD_BYTES")]
    max_upload_bytes: Option<u64>,
    /// Largest JSON body in bytes (413 above).
    #[arg(long, env = "PLATFORM_MAX_BODY_BYTES")]
    max_body_bytes: Option<u64>,
    /// Answer unknown request fields with 422 instead of ignoring them.
    #[arg(long, env = "PLATFORM_STRICT")]
    strict: bool,
    /// The address clients use, for next_page_uri and prev_page_uri.
    #[arg(long, env = "PLATFORM_PUBLIC_URL")]
    public_url: Option<String>,
    /// Seed of ids and random choices (printed when not given).
    #[arg(long, env = "PLATFORM_SEED")]
    seed: Option<u64>,
    /// `real` (default) or `simulated`: simulated time moves only through /sim/v1/clock.
    #[arg(long, env = "PLATFORM_CLOCK", value_parser = parse_clock)]
    clock: Option<ClockMode>,
    /// Where a simulated clock starts (RFC 3339); default: now.
    #[arg(long, env = "PLATFORM_SIM_START")]
    sim_start: Option<String>,
    /// The secret webhooks are signed with (HMAC-SHA256); printed when drawn at start-up.
    #[arg(long, env = "PLATFORM_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// Where a workspace's inbound-call events go: ORG/WORKSPACE=URL. Repeat the flag, or
    /// separate with commas in the environment variable.
    #[arg(long = "deployment-webhook", env = "PLATFORM_DEPLOYMENT_WEBHOOKS", value_delimiter = ',', value_parser = DeploymentWebhook::parse)]
    deployment_webhooks: Vec<DeploymentWebhook>,
    /// Seed of the simulated telephony's call outcomes (default: --seed).
    #[arg(long, env = "PLATFORM_TELEPHONY_SEED")]
    telephony_seed: Option<u64>,
    /// A key that may move the simulated clock; once any is given, workspace keys may only
    /// read it (403 on PUT /sim/v1/clock and POST /sim/v1/clock/advance). Repeat the flag, or
    /// separate keys with commas in the environment variable.
    #[arg(
        long = "clock-admin-key",
        env = "PLATFORM_CLOCK_ADMIN_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    clock_admin_keys: Vec<String>,
    /// Milliseconds a request head may take to arrive (408 after); also how long an idle
    /// keep-alive connection stays open [default: 30000].
    #[arg(long, env = "PLATFORM_HEADER_READ_TIMEOUT_MS")]
    header_read_timeout_ms: Option<u64>,
    /// Longest pause, in milliseconds, while a request body arrives (408 after)
    /// [default: 30000].
    #[arg(long, env = "PLATFORM_BODY_READ_TIMEOUT_MS")]
    body_read_timeout_ms: Option<u64>,
    /// Least average rate of a request body, bytes per second: the whole body must arrive
    /// within the body read timeout plus one second per this many bytes (408 after); 0 turns
    /// it off [default: 1024].
    #[arg(long, env = "PLATFORM_BODY_MIN_BYTES_PER_SEC")]
    body_min_bytes_per_sec: Option<u64>,
    /// Most client connections at once; more wait until one closes. Lowered at start when
    /// the limit of open files (`ulimit -n`) leaves no room for it [default: 1024].
    #[arg(long, env = "PLATFORM_MAX_CONNECTIONS")]
    max_connections: Option<u64>,
    /// Entries the request journal keeps in memory (GET /sim/v1/journal); 0 turns it off
    /// [default: 10000].
    #[arg(long, env = "PLATFORM_JOURNAL_CAPACITY", value_name = "N")]
    journal_capacity: Option<usize>,
    /// Also keep the request journal in the database, across restarts.
    #[arg(long, env = "PLATFORM_JOURNAL_PERSIST")]
    journal_persist: bool,
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
    /// An operator's key of the request journal and the fault rules: it sees and clears
    /// every workspace's entries and rules, where a workspace's key sees its own only. It
    /// opens no workspace. Repeat the flag, or separate keys with commas in the environment
    /// variable.
    #[arg(
        long = "journal-admin-key",
        env = "PLATFORM_JOURNAL_ADMIN_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    journal_admin_keys: Vec<String>,
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

fn parse_clock(s: &str) -> Result<ClockMode, String> {
    match s {
        "real" => Ok(ClockMode::Real),
        "simulated" | "sim" => Ok(ClockMode::Simulated),
        other => Err(format!("'{other}': use real or simulated")),
    }
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

    fn into_config(self) -> Result<PlatformConfig> {
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
        if let Some(v) = self.listen {
            config.listen = v;
        }
        if let Some(v) = self.database {
            config.database = v;
        }
        if !self.api_keys.is_empty() {
            config.api_keys = self.api_keys;
        }
        if let Some(v) = self.local_key {
            config.local_key = Some(v);
        }
        if let Some(v) = self.max_upload_bytes {
            config.max_upload_bytes = v;
        }
        if let Some(v) = self.max_body_bytes {
            config.max_body_bytes = v;
        }
        if self.strict {
            config.strict = true;
        }
        if let Some(v) = self.public_url {
            config.public_url = Some(v);
        }
        if let Some(v) = self.seed {
            config.seed = Some(v);
        }
        if let Some(v) = self.clock {
            config.clock = v;
        }
        if let Some(v) = self.sim_start {
            config.sim_start = Some(v);
        }
        if let Some(v) = self.webhook_secret {
            config.webhook_secret = Some(v);
        }
        if !self.deployment_webhooks.is_empty() {
            config.deployment_webhooks = self.deployment_webhooks;
        }
        if let Some(v) = self.telephony_seed {
            config.telephony.seed = Some(v);
        }
        if !self.clock_admin_keys.is_empty() {
            config.clock_admin_keys = self.clock_admin_keys;
        }
        if !self.journal_admin_keys.is_empty() {
            config.journal_admin_keys = self.journal_admin_keys;
        }
        if let Some(v) = self.header_read_timeout_ms {
            config.header_read_timeout_ms = v;
        }
        if let Some(v) = self.body_read_timeout_ms {
            config.body_read_timeout_ms = v;
        }
        if let Some(v) = self.body_min_bytes_per_sec {
            config.body_min_bytes_per_sec = v;
        }
        if let Some(v) = self.max_connections {
            config.max_connections = v;
        }
        if let Some(v) = self.journal_capacity {
            config.journal.capacity = v;
        }
        if self.journal_persist {
            config.journal.persist = true;
        }
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
    let matches = Cli::command()
        .version(version)
        .bin_name(bin_name)
        .get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run(cli))
}

async fn run(cli: Cli) -> Result<std::process::ExitCode> {
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
            serve(args.into_config()?, extras).await
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
