//! `harness verify`: the verdict on a client, from a running mock's request journal.
//!
//! Reads `GET /sim/v1/journal/summary` of the platform at `--url` with `--api-key`, which
//! gives that key's workspace's requests only (an operator's key: every workspace's), turns
//! it into the check report of [`platform::journal::report`] (one check per operation of
//! the OpenAPI document, plus coverage and unknown routes, with the request counts as
//! figures), prints it failures first (`-v`: every check), writes it as JSON and JUnit where
//! asked, and exits 0 when the client kept the contract (and called enough of the API, every
//! file it uploaded could be processed, and no request met a status of `--fail-on-status`),
//! 1 when not, 2 when the journal could not be read.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use contracts::wire::JournalSummary;
use platform::journal::report::{LISTED_STATUSES, VerifyOptions, report};

use crate::report::{table, write_outputs};

const EXAMPLES: &str = "\
Examples:
  # After the client's tests ran against the mock, the verdict on the requests of the
  # key's workspace:
  harness verify --url http://127.0.0.1:8080 --api-key sk-test-1 --junit verify.xml

  # Every check on its own line, passes and skips too:
  harness verify --url http://127.0.0.1:8080 --api-key sk-test-1 -v

  # Fail the job when less than 80 % of the API was exercised, but only warn on
  # requests that break the contract:
  harness verify --url http://127.0.0.1:8080 --api-key sk-test-1 \\
      --min-coverage 80 --allow-violations --json verify.json

  # A suite that expects no conflict (409) and no oversized body (413), and that only
  # warns when an uploaded file could not be processed:
  harness verify --url http://127.0.0.1:8080 --api-key sk-test-1 \\
      --fail-on-status 409,413 --allow-failed-uploads

Exit status: 0 when every request kept the contract (coverage is at least
--min-coverage, every uploaded file could be processed, no request was answered a
status of --fail-on-status), 1 when not, 2 when the journal could not be read.
Warnings (--allow-violations, --allow-failed-uploads, portability.*) never fail it.";

/// `harness verify` flags.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct VerifyArgs {
    /// The platform mock's address, as printed when it started.
    #[arg(long, env = "HARNESS_URL", value_name = "URL")]
    pub(crate) url: String,
    /// The key of the workspace whose client is judged: the verdict covers that workspace's
    /// requests only. An operator's key (a clock or journal admin key, or one that opens
    /// every workspace) judges every workspace's requests together.
    #[arg(
        long,
        env = "HARNESS_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub(crate) api_key: Option<String>,
    /// List every check, passes and skips too (by default: the failures, then one line that
    /// counts the rest).
    #[arg(short, long)]
    pub(crate) verbose: bool,
    /// Also write the report as JUnit XML: one test case per operation.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Also write the report as JSON.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Fail when less than PCT percent of the document's operations were called.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub(crate) min_coverage: Option<f64>,
    /// Report requests that break the contract as warnings: exit 0 anyway (coverage still
    /// counts).
    #[arg(long)]
    pub(crate) allow_violations: bool,
    /// Report cohort uploads answered 200 whose file the platform then could not process
    /// (the cohort ended `failed`) as warnings, not failures.
    #[arg(long)]
    pub(crate) allow_failed_uploads: bool,
    /// Fail an operation's check when a request to it was answered one of these statuses:
    /// 404, 409 or 413, comma-separated (refusals that are not violations, listed one by
    /// one all the same).
    #[arg(long, value_name = "STATUS,...", value_delimiter = ',', value_parser = parse_listed_status)]
    pub(crate) fail_on_status: Vec<u16>,
}

fn parse_listed_status(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u16>() {
        Ok(n) if LISTED_STATUSES.contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}': give statuses the journal lists one by one: {}",
            LISTED_STATUSES.map(|n| n.to_string()).join(", ")
        )),
    }
}

fn parse_percent(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{s}': give a percentage from 0 to 100")),
    }
}

/// Reads the journal summary of the platform at `url`.
pub(crate) async fn fetch_summary(url: &str, api_key: Option<&str>) -> Result<JournalSummary> {
    let base = url.trim_end_matches('/');
    let endpoint = format!("{base}/sim/v1/journal/summary");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .context("building the HTTP client")?;
    let mut request = client.get(&endpoint);
    if let Some(k) = api_key {
        request = request.header("x-api-key", k);
    }
    let response = request.send().await.with_context(|| {
        format!("cannot reach the platform at {base}: is it running, and is --url right?")
    })?;
    let status = response.status();
    let text = response
        .text()
        .await
        .with_context(|| format!("reading the answer of {endpoint}"))?;
    match status.as_u16() {
        200 => serde_json::from_str(&text).with_context(|| {
            format!("{endpoint} did not answer a journal summary; is {base} this project's platform mock?")
        }),
        401 => bail!(
            "the journal needs the key of the workspace to judge (or an operator's key): --api-key KEY (or HARNESS_API_KEY); the platform said: {text}"
        ),
        404 | 405 => bail!(
            "{base} has no request journal ({endpoint} answered {status}); is it this project's platform mock?"
        ),
        _ => bail!("{endpoint} answered {status}: {text}"),
    }
}

/// Runs `harness verify`.
pub async fn run(args: VerifyArgs) -> Result<ExitCode> {
    let summary = fetch_summary(&args.url, args.api_key.as_deref()).await?;
    let opts = VerifyOptions {
        min_coverage: args.min_coverage,
        allow_violations: args.allow_violations,
        allow_failed_uploads: args.allow_failed_uploads,
        fail_on_status: args.fail_on_status,
    };
    let report = report(&summary, args.url.trim_end_matches('/'), &opts);
    print!(
        "{}",
        table::render_failures_first(
            &report,
            table::Colour::for_stream(&std::io::stdout()),
            args.verbose
        )
    );
    write_outputs(&report, args.json.as_deref(), args.junit.as_deref())?;
    Ok(if report.holds() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
