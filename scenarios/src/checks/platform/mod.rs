//! `harness check platform`: any implementation of the platform API against the contract,
//! check by check, through HTTP only.
//!
//! The checks are tables of [`CheckDef`]s, one per group, so that `--dry-run` lists them
//! without calling anything:
//!
//! - [`endpoints`]: every operation at its path and method, success bodies against the
//!   contract's JSON Schemas ([`schema`]).
//! - [`limits`]: each validation limit at and just past its boundary.
//! - [`errors`]: the error shapes where the spec names them.
//! - [`states`]: the states of campaigns and deployments and their transitions.
//! - [`pagination`]: totals, page links, walks, sort orders, search.
//! - [`cohorts`]: upload, processing, rejected rows, failed uploads.
//! - [`auth`]: every route without a key, with a wrong key, with another workspace's key.
//! - [`sim`]: what needs time (and the simulation API): activation, windows, retries,
//!   rules 1 to 6.
//! - [`oracle`]: every answer of the groups above against the reference platform's answer
//!   to the same request ([`crate::differ`]).
//!
//! [`target`] is the HTTP side and [`exchange`] a request with its answer as evidence,
//! [`context`] what every group works with, [`fixtures`] what the checks create (names start
//! `harness-check-`; everything is removed at the end; each group's `MAKES` table says what
//! each check creates, which [`dry_run`] lists). [`verdicts`] collects the verdicts of a
//! group with what each check saw vary: a check that could not have failed is not a pass.
//! [`rules`] maps every rule of the contract to the checks that prove it (`--list-rules`,
//! with the status of the last run that [`last_run`] keeps).

pub mod auth;
mod auth_isolation;
pub(crate) mod cohorts;
mod cohorts_values;
mod cohorts_ways;
pub(crate) mod context;
pub(crate) mod dry_run;
pub(crate) mod endpoints;
pub(crate) mod errors;
pub(crate) mod exchange;
pub mod fixtures;
pub(crate) mod last_run;
pub(crate) mod limits;
pub(crate) mod oracle;
pub mod pagination;
mod pagination_campaigns;
mod pagination_links;
mod patch_kept;
mod preflight;
pub(crate) mod receiver;
pub(crate) mod rules;
pub(crate) mod schema;
pub mod sim;
mod sim_defs;
mod sim_inbound;
mod sim_rules;
mod sim_signatures;
pub(crate) mod sim_states;
mod sim_zones;
mod sim_zones_defs;
mod sim_zones_plan;
pub(crate) mod states;
mod states_deployments;
pub mod target;
pub(crate) mod verdicts;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use contracts::clock::{Clock, Stopwatch, SystemClock};

use self::context::{Ctx, Other, Settings};
use self::fixtures::{Agent, Ledger, Makes, Names};
use self::schema::Schemas;
use self::target::{Http, Paths, Workspace};
use self::verdicts::Verdicts;
use crate::checks::{Check, CheckDef, CheckReport, GroupFilter};
use crate::report::{self, table};

/// The suite's name in reports.
pub(crate) const SUITE: &str = "check platform";

/// A group of checks: its name (the prefix of its ids), what it covers, its checks.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// The name, as `--only` and `--skip` take it.
    pub name: &'static str,
    /// One line: what the group covers.
    pub(crate) about: &'static str,
    /// Its checks, in the order they run.
    pub checks: &'static [CheckDef],
    /// What its checks create on a conforming target (`--dry-run` lists it).
    pub makes: &'static [(&'static CheckDef, &'static [Makes])],
}

/// Every group, in the order they run (`sim` last: it moves the target's clock).
pub const GROUPS: &[Group] = &[
    Group {
        name: "endpoints",
        about: "every operation at its path and method; success bodies against the schemas",
        checks: endpoints::CHECKS,
        makes: endpoints::MAKES,
    },
    Group {
        name: "limits",
        about: "each validation limit at and just past its boundary",
        checks: limits::CHECKS,
        makes: limits::MAKES,
    },
    Group {
        name: "errors",
        about: "the error shapes where the spec names them",
        checks: errors::CHECKS,
        makes: errors::MAKES,
    },
    Group {
        name: "states",
        about: "states of campaigns and deployments, their transitions, what PATCH may change",
        checks: states::CHECKS,
        makes: states::MAKES,
    },
    Group {
        name: "pagination",
        about: "totals, page links, walks, sort orders and search",
        checks: pagination::CHECKS,
        makes: pagination::MAKES,
    },
    Group {
        name: "cohorts",
        about: "uploads: processing, completed, rejected rows, failed files, files as uploaded, paused campaigns",
        checks: cohorts::CHECKS,
        makes: cohorts::MAKES,
    },
    Group {
        name: "auth",
        about: "every route without a key, with a wrong key, with another workspace's key; lists kept apart",
        checks: auth::CHECKS,
        makes: auth::MAKES,
    },
    Group {
        name: "sim",
        about: "time, dialling rules, stop files, events and inbound calls through the simulation API (--sim)",
        checks: sim::CHECKS,
        makes: sim::MAKES,
    },
    Group {
        name: "oracle",
        about: "every answer of the groups above against the reference platform's answer to the same request",
        checks: oracle::CHECKS,
        makes: &[],
    },
];

const EXAMPLES: &str = "\
Examples:
  # The mock on a simulated clock, with two workspaces:
  platform serve --clock simulated --database :memory: \\
    --api-key 'org-1/ws-1=sk-test-1' --api-key 'org-1/ws-2=sk-test-2'
  harness check platform --base-url http://127.0.0.1:8080 --api-key sk-test-1 \\
    --org org-1 --workspace ws-1 --other-api-key sk-test-2 --other-workspace ws-2 --sim

  # A platform without the simulation API, reports for CI:
  harness check platform --base-url https://sandbox.example.com --org o --workspace w \\
    --json report.json --junit report.xml        # the key from HARNESS_API_KEY

  # What would run, without calling anything:
  harness check platform --dry-run --only limits,states

Exit status: 0 when every error-severity check passes, 1 when one fails, 2 when the
checks could not run (bad flags, a target that cannot be reached or refuses the key).";

/// `harness check platform` flags.
#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct PlatformArgs {
    /// The platform's base address, the part before /api/... (http:// or https://).
    #[arg(
        long,
        env = "HARNESS_BASE_URL",
        value_name = "URL",
        required_unless_present_any = ["dry_run", "list_rules"]
    )]
    pub(crate) base_url: Option<String>,
    /// The X-API-Key of the workspace under check.
    #[arg(
        long,
        env = "HARNESS_API_KEY",
        value_name = "KEY",
        hide_env_values = true,
        required_unless_present_any = ["dry_run", "list_rules"]
    )]
    pub(crate) api_key: Option<String>,
    /// The org id of the paths.
    #[arg(
        long,
        env = "HARNESS_ORG",
        value_name = "ORG",
        required_unless_present_any = ["dry_run", "list_rules"]
    )]
    pub(crate) org: Option<String>,
    /// The workspace id of the paths.
    #[arg(
        long,
        env = "HARNESS_WORKSPACE",
        value_name = "WORKSPACE",
        required_unless_present_any = ["dry_run", "list_rules"]
    )]
    pub(crate) workspace: Option<String>,
    /// A key of another workspace (it must not open --workspace): enables the checks that
    /// another workspace's key is refused.
    #[arg(
        long,
        env = "HARNESS_OTHER_API_KEY",
        value_name = "KEY",
        hide_env_values = true,
        requires = "other_workspace"
    )]
    pub(crate) other_api_key: Option<String>,
    /// The workspace --other-api-key opens.
    #[arg(long, value_name = "WORKSPACE", requires = "other_api_key")]
    pub(crate) other_workspace: Option<String>,
    /// The org of --other-workspace [default: --org].
    #[arg(long, value_name = "ORG", requires = "other_api_key")]
    pub(crate) other_org: Option<String>,
    /// The target offers this harness's simulation API (/sim/v1, simulated clock): run the
    /// checks that need time. They move the target's clock forward by a few hours, then on
    /// to the nearest daylight-saving changes (days to months).
    #[arg(long)]
    pub(crate) sim: bool,
    /// Run only these groups (comma-separated): endpoints, limits, errors, states,
    /// pagination, cohorts, auth, sim, oracle.
    #[arg(long, value_delimiter = ',', value_name = "GROUP,...")]
    pub(crate) only: Vec<String>,
    /// Do not run these groups (comma-separated; the groups of --only).
    #[arg(long, value_delimiter = ',', value_name = "GROUP,...")]
    pub(crate) skip: Vec<String>,
    /// List the checks that would run, why any would be skipped, and what each would
    /// create in each workspace, without calling the target.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Print every rule of the contract (the spec's and the recorded points') with the checks
    /// that prove it, or why none does, and its status on the last run, without calling the
    /// target. With --json FILE, also write the table as JSON.
    #[arg(long, conflicts_with = "dry_run")]
    pub(crate) list_rules: bool,
    /// Where each run records its report and where --list-rules reads it [default:
    /// $XDG_STATE_HOME/harness/check-platform-last.json, or ~/.local/state/... without it].
    #[arg(long, env = "HARNESS_LAST_RUN", value_name = "FILE")]
    pub(crate) last_run: Option<PathBuf>,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Write the report as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Seconds to wait for any one answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub(crate) timeout: u64,
    /// Seconds to wait for an uploaded cohort to finish processing.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(crate) cohort_timeout: u64,
    /// On a real clock, how many seconds the time-limit checks stay away from a boundary
    /// (clock skew and latency).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub(crate) clock_margin: i64,
    /// The app_id of created campaigns, deployments and the outbound call.
    #[arg(long, value_name = "ID", default_value = "harness-check-app")]
    pub(crate) app_id: String,
    /// The app_version of created resources (the PATCH check moves a deployment to one more).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) app_version: i64,
    /// The connection_id of created resources.
    #[arg(long, value_name = "ID", default_value = "harness-check-conn")]
    pub(crate) connection_id: String,
    /// The number the outbound-call check dials (a fiction number by default).
    #[arg(long, value_name = "E164", default_value = "+12025550102")]
    pub(crate) user_phone_number: String,
    /// Where the simulation checks listen for the campaigns' webhooks.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub(crate) webhook_listen: String,
    /// Do not compare the target's answers and webhook events with the reference
    /// platform's (the `oracle` group, on by default; the same as `--skip oracle`).
    #[arg(long, conflicts_with = "oracle")]
    pub(crate) no_oracle: bool,
    /// The oracle is on by default; kept so that scripts that asked for it still run.
    #[arg(long, hide = true)]
    pub(crate) oracle: bool,
    /// The URL the target posts webhooks to, when it cannot reach --webhook-listen directly.
    #[arg(long, value_name = "URL")]
    pub(crate) webhook_public_url: Option<String>,
    /// The secret the target signs its webhooks with (its ready file's webhook_secret):
    /// every delivery's signature is then verified (sim.webhook_signatures).
    #[arg(
        long,
        env = "HARNESS_WEBHOOK_SECRET",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub(crate) webhook_secret: Option<String>,
}

/// Everything a run needs, apart from the command line.
#[derive(Clone, Debug)]
pub struct Options {
    /// The base address.
    pub(crate) base_url: String,
    /// The workspace under check.
    pub(crate) main: Workspace,
    /// Another workspace.
    pub(crate) other: Option<Workspace>,
    /// Settings of the run.
    pub(crate) settings: Settings,
    /// Which groups run.
    pub(crate) filter: GroupFilter,
    /// Per-request timeout.
    pub(crate) timeout: Duration,
    /// Whether every answer is compared with the reference platform's.
    pub(crate) oracle: bool,
}

impl Options {
    /// Options with defaults for everything but the target and its workspaces.
    pub fn new(base_url: &str, main: Workspace, other: Option<Workspace>, sim: bool) -> Options {
        Options {
            base_url: base_url.to_string(),
            main,
            other,
            settings: Settings {
                agent: Agent {
                    app_id: "harness-check-app".into(),
                    app_version: 1,
                    connection_id: "harness-check-conn".into(),
                },
                user_phone_number: "+12025550102".into(),
                sim,
                clock_margin_secs: 10,
                cohort_timeout_secs: 60,
                webhook_listen: "127.0.0.1:0".into(),
                webhook_public_url: None,
                webhook_secret: None,
            },
            filter: GroupFilter::default(),
            timeout: Duration::from_secs(30),
            oracle: true,
        }
    }
}

impl Options {
    /// These options with the secret the target signs its webhooks with.
    pub fn with_webhook_secret(mut self, secret: &str) -> Options {
        self.settings.webhook_secret = Some(secret.to_string());
        self
    }

    /// These options without the oracle (`--no-oracle`).
    pub fn without_oracle(mut self) -> Options {
        self.oracle = false;
        self
    }

    /// These options running only the groups `only` (`--only`; the references start only
    /// when the oracle's group is among them).
    pub fn with_only(mut self, only: impl IntoIterator<Item = String>) -> Options {
        self.filter.only = only.into_iter().collect();
        self
    }
}

/// The names of the groups.
pub(crate) fn group_names() -> Vec<&'static str> {
    GROUPS.iter().map(|g| g.name).collect()
}

/// Why `def` cannot run with these options, if it cannot.
pub(crate) fn unmet(def: &CheckDef, sim: bool, other: bool) -> Option<&'static str> {
    if def.group() == "sim" && !sim {
        return Some(sim::NEEDS_SIM);
    }
    if auth::needs_other(def) && !other {
        return Some(auth::NEEDS_OTHER);
    }
    None
}

/// Refuses a filter that runs the oracle and no other group: the oracle judges the answers to
/// what the other groups send, so alone it would judge nothing.
fn oracle_not_alone(filter: &GroupFilter, oracle: bool) -> anyhow::Result<()> {
    let others = GROUPS
        .iter()
        .any(|g| g.name != "oracle" && filter.runs(g.name));
    if oracle && filter.runs("oracle") && !others {
        bail!(
            "the oracle compares the answers to what the other groups send, and no other group runs; name them beside it (--only states,oracle)"
        );
    }
    Ok(())
}

/// A run's token: different for every run, so that names and numbers do not collide with an
/// earlier run's leftovers.
fn run_token() -> u32 {
    let t = SystemClock.now();
    let nanos = t.timestamp_subsec_nanos() as u64;
    let x = (t.timestamp() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ nanos
        ^ u64::from(std::process::id());
    (x ^ (x >> 29)) as u32
}

/// Runs the checks of `opts` against its target: every group the filter lets run, each
/// followed by the removal of what it created. `progress` gets a line per group. When `stop`
/// completes (Ctrl-C), the group running is abandoned, what the run created is removed, and
/// the run fails.
pub async fn check(
    opts: &Options,
    progress: &mut dyn FnMut(&str),
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<CheckReport> {
    let mut stop = std::pin::pin!(stop);
    opts.filter
        .validate(&group_names())
        .map_err(anyhow::Error::msg)?;
    oracle_not_alone(&opts.filter, opts.oracle)?;
    let http = Http::new(&opts.base_url, opts.timeout)?;
    let mut cx = Ctx {
        paths: Paths::new(&opts.main.org, &opts.main.workspace),
        main: opts.main.clone(),
        other: opts.other.clone().map(|ws| Other {
            paths: Paths::new(&ws.org, &ws.workspace),
            ws,
        }),
        schemas: Schemas::contract(),
        settings: opts.settings.clone(),
        names: Names::new(run_token()),
        ledger: Ledger::default(),
        http,
        simulated_clock: false,
    };
    cx.simulated_clock = preflight::preflight(&cx).await?;
    if cx.simulated_clock && !cx.settings.sim {
        progress(preflight::SIMULATED_WITHOUT_SIM);
    }
    if !cx.schemas.dangling().is_empty() {
        progress(&format!(
            "note: the contract refers to schemas it does not define ({}); those parts of bodies are not checked",
            cx.schemas.dangling().join(", ")
        ));
    }
    let oracle = opts.oracle && opts.filter.runs("oracle");
    if oracle {
        let at =
            match cx.simulated_clock {
                true => Some(cx.now().await.map_err(|x| {
                    anyhow::anyhow!("cannot read the target's clock: {}", x.outcome())
                })?),
                false => None,
            };
        let workspaces: Vec<&Workspace> = std::iter::once(&cx.main)
            .chain(cx.other.as_ref().map(|o| &o.ws))
            .collect();
        let o = oracle::Oracle::start(
            &cx.http,
            &workspaces,
            at.map(|n| n.at),
            chrono::Duration::seconds(cx.settings.clock_margin_secs),
            opts.timeout,
        )
        .await?;
        cx.http = cx.http.clone().with_oracle(std::sync::Arc::new(o));
    }
    let groups: Vec<&Group> = GROUPS.iter().filter(|g| opts.filter.runs(g.name)).collect();
    let mut checks = Vec::new();
    let mut left = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        progress(&format!(
            "[{}/{}] {} ({} checks, run {})",
            i + 1,
            groups.len(),
            g.name,
            g.checks.len(),
            cx.names.run()
        ));
        let mut v = Verdicts::new(g.checks);
        for d in g.checks {
            if let Some(why) = unmet(d, cx.settings.sim, cx.other.is_some()) {
                v.add(Check::skip(d, why));
            }
        }
        if g.name == "oracle" {
            match oracle::of(&cx.http) {
                Some(o) => o.judge(&mut v, progress).await,
                None => v.skip_rest(oracle::NO_ORACLE),
            }
        } else if g
            .checks
            .iter()
            .any(|d| unmet(d, cx.settings.sim, cx.other.is_some()).is_none())
        {
            if let Some(o) = oracle::of(&cx.http) {
                o.group(g.name);
            }
            let stopped = tokio::select! {
                _ = run_group(g.name, &cx, &mut v) => false,
                _ = &mut stop => true,
            };
            if stopped {
                let left = cx.clean_up().await;
                bail!(
                    "interrupted during the {} checks; {}",
                    g.name,
                    if left.is_empty() {
                        "what the run created was removed".to_string()
                    } else {
                        format!("could not remove: {}", left.join("; "))
                    }
                );
            }
        }
        left.extend(cx.clean_up().await);
        checks.extend(v.into_checks());
    }
    if !left.is_empty() {
        progress(&format!(
            "could not remove (names start {}{}): {}",
            fixtures::NAME_PREFIX,
            cx.names.run(),
            left.join("; ")
        ));
    }
    let mut report = CheckReport::new(SUITE, cx.http.shown(), checks);
    // The keys travel in a header, never in evidence; a target that echoes one in a body
    // must not put it in a report either.
    let keys = std::iter::once(cx.main.key.clone())
        .chain(cx.other.iter().map(|o| o.ws.key.clone()))
        .chain(cx.settings.webhook_secret.clone());
    report.redact(&crate::checks::redact::Redactor::new(keys));
    Ok(report)
}

async fn run_group(name: &str, cx: &Ctx, v: &mut Verdicts) {
    match name {
        "endpoints" => endpoints::run(cx, v).await,
        "limits" => limits::run(cx, v).await,
        "errors" => errors::run(cx, v).await,
        "states" => states::run(cx, v).await,
        "pagination" => pagination::run(cx, v).await,
        "cohorts" => cohorts::run(cx, v).await,
        "auth" => auth::run(cx, v).await,
        "sim" => sim::run(cx, v).await,
        other => unreachable!("group {other} has no runner"),
    }
}

fn options(args: &PlatformArgs) -> anyhow::Result<Options> {
    let need = |v: &Option<String>, flag: &str| -> anyhow::Result<String> {
        v.clone()
            .with_context(|| format!("{flag} is required (or run with --dry-run)"))
    };
    let main = Workspace {
        org: need(&args.org, "--org")?,
        workspace: need(&args.workspace, "--workspace")?,
        key: need(&args.api_key, "--api-key")?,
    };
    let other = match (&args.other_api_key, &args.other_workspace) {
        (Some(key), Some(ws)) => Some(Workspace {
            org: args.other_org.clone().unwrap_or_else(|| main.org.clone()),
            workspace: ws.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    if let Some(o) = &other
        && o.org == main.org
        && o.workspace == main.workspace
    {
        bail!("--other-workspace must be another workspace than --workspace");
    }
    let mut opts = Options::new(&need(&args.base_url, "--base-url")?, main, other, args.sim);
    opts.settings.agent = Agent {
        app_id: args.app_id.clone(),
        app_version: args.app_version,
        connection_id: args.connection_id.clone(),
    };
    opts.settings.user_phone_number = args.user_phone_number.clone();
    opts.settings.clock_margin_secs = args.clock_margin;
    opts.settings.cohort_timeout_secs = args.cohort_timeout;
    opts.settings.webhook_listen = args.webhook_listen.clone();
    opts.settings.webhook_public_url = args.webhook_public_url.clone();
    opts.settings.webhook_secret = args.webhook_secret.clone();
    opts.filter = GroupFilter {
        only: args.only.clone(),
        skip: args.skip.clone(),
    };
    opts.timeout = Duration::from_secs(args.timeout.max(1));
    opts.oracle = !args.no_oracle;
    Ok(opts)
}

/// Runs `harness check platform`.
pub async fn run(args: PlatformArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging("warn");
    let filter = GroupFilter {
        only: args.only.clone(),
        skip: args.skip.clone(),
    };
    filter
        .validate(&group_names())
        .map_err(anyhow::Error::msg)?;
    oracle_not_alone(&filter, !args.no_oracle)?;
    let other = args.other_api_key.is_some();
    let last_run = last_run::path(args.last_run.as_deref());
    if args.list_rules {
        let last = last_run.as_deref().and_then(last_run::read);
        let from = last_run
            .as_deref()
            .map_or("(no state directory)".to_string(), |p| {
                p.display().to_string()
            });
        std::io::stdout()
            .lock()
            .write_all(rules::listing(last.as_ref(), &from).as_bytes())?;
        if let Some(p) = &args.json {
            let mut text = serde_json::to_string_pretty(&rules::to_json(last.as_ref()))?;
            text.push('\n');
            report::write_file(p, &text)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        let planned = dry_run::Planned {
            filter: &filter,
            sim: args.sim,
            workspace: args.workspace.as_deref(),
            other,
            other_workspace: args.other_workspace.as_deref(),
        };
        std::io::stdout()
            .lock()
            .write_all(dry_run::listing(&planned).as_bytes())?;
        let target = args.base_url.as_deref().unwrap_or("(dry run)");
        let report = dry_run::plan(&planned, target);
        report::write_outputs(&report, args.json.as_deref(), args.junit.as_deref())?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = options(&args)?;
    let watch = Stopwatch::start();
    let mut progress = |line: &str| eprintln!("{line}");
    let interrupted = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let report = check(&opts, &mut progress, interrupted).await?;
    report::write_outputs(&report, args.json.as_deref(), args.junit.as_deref())?;
    if let Some(p) = &last_run
        && let Err(e) = last_run::write(p, &report)
    {
        eprintln!("note: the run is not recorded for --list-rules: {e}");
    }
    let colour = table::Colour::for_stream(&std::io::stdout());
    std::io::stdout()
        .lock()
        .write_all(table::render(&report, colour).as_bytes())?;
    eprintln!("took {:.1} s", watch.elapsed().as_secs_f64());
    Ok(if report.holds() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
