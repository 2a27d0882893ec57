//! `harness ping URL`: exit 0 when the URL answers 2xx, 1 when it answers anything else or
//! cannot be reached. A health check for places that have no shell and no curl: the
//! container image's `HEALTHCHECK`, a Compose `healthcheck`, a CI step waiting for a stack.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;

/// The URL pinged when none is given: the platform's readiness probe on its default port.
pub(crate) const DEFAULT_URL: &str = "http://127.0.0.1:8080/healthz";

/// `harness ping` flags.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  harness ping                                   # http://127.0.0.1:8080/healthz
  harness ping http://127.0.0.1:9000/healthz --timeout-ms 500
  HARNESS_PING_URL=http://127.0.0.1:9000/healthz harness ping

Exit status: 0 when the URL answered 2xx, 1 when it answered anything else or could not be
reached within the timeout, 2 when the URL is not a URL.")]
pub struct PingArgs {
    /// The URL to GET.
    #[arg(env = "HARNESS_PING_URL", default_value = DEFAULT_URL)]
    pub(crate) url: String,
    /// How long to wait for the answer, in milliseconds.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    pub(crate) timeout_ms: u64,
    /// Print nothing on success.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// Runs `harness ping`.
pub async fn run(args: PingArgs) -> anyhow::Result<ExitCode> {
    let url = url::Url::parse(&args.url)
        .with_context(|| format!("'{}' is not a URL (for example {DEFAULT_URL})", args.url))?;
    if !matches!(url.scheme(), "http" | "https") {
        anyhow::bail!("'{url}': only http:// and https:// URLs can be pinged");
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(args.timeout_ms))
        // A health check asks the address it was given, not a proxy of the environment.
        .no_proxy()
        .build()
        .context("building the HTTP client")?;
    match client.get(url.clone()).send().await {
        Ok(answer) if answer.status().is_success() => {
            if !args.quiet {
                println!("{url}: {}", answer.status());
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(answer) => {
            eprintln!("{url}: {}", answer.status());
            Ok(ExitCode::FAILURE)
        }
        Err(e) => {
            let why = if e.is_timeout() {
                format!("no answer within {} ms", args.timeout_ms)
            } else if e.is_connect() {
                "could not connect".to_string()
            } else {
                e.to_string()
            };
            eprintln!("{url}: {why}");
            Ok(ExitCode::FAILURE)
        }
    }
}
