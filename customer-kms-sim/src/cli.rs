//! The `customer-kms-sim` command: run the simulated key service, or mint and read
//! encrypted keys with the same configuration. The `customer-kms-sim` binary runs it, and so
//! does `harness` when started under the name `customer-kms-sim` or as `harness kms ...`.

use std::ffi::OsString;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use contracts::clock::{SimClock, SystemClock, format_instant};
use contracts::envelope;
use contracts::wire::byok::{auth_path, decrypt_key_path, rotate_key_path};
use rand::RngCore;
use rand::rngs::OsRng;
use zeroize::Zeroizing;

use crate::config::{EXAMPLE_TOML, KmsConfig, Secret};
use crate::keys::{DATA_KEY_LEN, KeyRing, KeySource, master_keys};
use crate::{KeyService, Mutant, serve};

/// The customer's side of BYOK, simulated: /auth, /decrypt-key and /rotate-key, master keys
/// per alias with versions, JWTs, faults on demand and an audit log.
///
/// Without --config every command uses the built-in example configuration (print it with
/// `customer-kms-sim example-config`). `wrap` and `unwrap` given the same configuration and
/// seed as `serve` produce and read keys that `serve` accepts.
#[derive(Parser, Debug)]
#[command(name = "customer-kms-sim", about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the key service until Ctrl-C (or SIGTERM).
    Serve(ServeArgs),
    /// Print an encrypted data key (`byok:v1:...`) for configuring a platform.
    Wrap(WrapArgs),
    /// Decrypt an encrypted data key, for debugging.
    Unwrap(UnwrapArgs),
    /// Print the example configuration file (every key, with defaults).
    ExampleConfig,
}

#[derive(Args, Debug)]
struct ConfigArgs {
    /// TOML configuration file (default: the built-in example configuration).
    #[arg(long, short = 'c', env = "KMS_SIM_CONFIG")]
    config: Option<PathBuf>,
    /// Seed of every random choice; overrides `seed` in the file.
    #[arg(long, env = "KMS_SIM_SEED")]
    seed: Option<u64>,
}

impl ConfigArgs {
    fn load(&self) -> anyhow::Result<KmsConfig> {
        let mut config = match &self.config {
            Some(path) => KmsConfig::from_file(path)?,
            None => KmsConfig::from_toml_str(EXAMPLE_TOML)?,
        };
        if let Some(seed) = self.seed {
            config.seed = Some(seed);
        }
        Ok(config)
    }
}

#[derive(Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Address to listen on; port 0 picks a free port (the real one is printed).
    #[arg(
        long,
        short = 'l',
        default_value = "127.0.0.1:8700",
        env = "KMS_SIM_LISTEN"
    )]
    listen: SocketAddr,
    /// The {partner} path segment; overrides `partner` in the file.
    #[arg(long)]
    partner: Option<String>,
    /// Bearer token of the admin API; overrides `admin_token`. Without either, a random
    /// token is generated and printed.
    #[arg(long, env = "KMS_SIM_ADMIN_TOKEN")]
    admin_token: Option<String>,
    /// Run on a simulated clock starting at this RFC 3339 instant; it moves only through
    /// `POST /_admin/clock/advance`.
    #[arg(long, value_name = "RFC3339")]
    sim_clock: Option<String>,
    /// Token lifetime in seconds; overrides `token.expires_in`.
    #[arg(long)]
    expires_in: Option<u64>,
    /// Allowed x-request-timestamp skew in seconds; overrides `skew_secs`.
    #[arg(long)]
    skew_secs: Option<u64>,
    /// Switch a mutant on: the service then breaks one rule of the contract on purpose
    /// (repeatable; `GET /_admin/mutants` lists them with their rules).
    #[arg(long, value_name = "NAME", value_parser = parse_mutant, long_help = mutant_help())]
    mutant: Vec<Mutant>,
}

/// `--help` for `--mutant`: every mutant with the rule it breaks.
fn mutant_help() -> String {
    let width = Mutant::ALL
        .iter()
        .map(|m| m.name().len())
        .max()
        .unwrap_or(0);
    let rows: Vec<String> = Mutant::ALL
        .iter()
        .map(|m| format!("  {:<width$}  {}", m.name(), m.rule()))
        .collect();
    format!(
        "Switch a mutant on: the service then breaks one rule of the contract on purpose \
         (repeatable; also `mutants = [...]` in the configuration and the admin API \
         /_admin/mutants). The mutants:\n{}",
        rows.join("\n")
    )
}

fn parse_mutant(name: &str) -> Result<Mutant, String> {
    Mutant::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
        format!(
            "no mutant named {name:?}; the mutants are: {}",
            names.join(", ")
        )
    })
}

#[derive(Args, Debug)]
struct WrapArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The key alias whose master key wraps.
    #[arg(long, short = 'a')]
    alias: String,
    /// The data key to wrap, base64 of 32 bytes. Default: a fresh random key, printed too.
    #[arg(long, short = 'k')]
    key: Option<String>,
    /// Master-key version to wrap under (default: the alias's current version).
    #[arg(long)]
    key_version: Option<u32>,
    /// Print JSON instead of labelled lines.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct UnwrapArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The key alias the key was wrapped under.
    #[arg(long, short = 'a')]
    alias: String,
    /// The encrypted key (`byok:v1:...`); `-` reads it from standard input.
    #[arg(long, short = 'e')]
    encrypted_key: String,
    /// Print JSON instead of labelled lines.
    #[arg(long)]
    json: bool,
}

/// Runs the `customer-kms-sim` command with `args` (the first is the program's name),
/// `version` being what `--version` prints and `bin_name` how usage lines name the command
/// (`customer-kms-sim`, or `harness kms`).
pub fn main<I, T>(version: &'static str, bin_name: &'static str, args: I) -> std::process::ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command()
        .version(version)
        .bin_name(bin_name)
        .get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Serve(args) => serve_cmd(args),
        Command::Wrap(args) => wrap_cmd(args),
        Command::Unwrap(args) => unwrap_cmd(args),
        Command::ExampleConfig => {
            write!(std::io::stdout().lock(), "{EXAMPLE_TOML}").map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A closed pipe (`... | head`) is the reader's choice, not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn serve_cmd(args: ServeArgs) -> anyhow::Result<()> {
    // Colour only on a terminal: a log file or pipe gets plain text; a connection cancelled
    // by the graceful stop is not an error.
    contracts::logging::init("warn");

    let mut config = args.config.load()?;
    if let Some(p) = args.partner {
        config.partner = p;
    }
    if let Some(s) = args.expires_in {
        config.token.expires_in = s;
    }
    if let Some(s) = args.skew_secs {
        config.skew_secs = s;
    }
    for m in args.mutant {
        config = config.with_mutant(m);
    }
    let mut generated_admin = None;
    if let Some(t) = args.admin_token {
        config.admin_token = Some(Secret::new(t));
    } else if config.admin_token.is_none() {
        let mut b = [0u8; 16];
        OsRng.fill_bytes(&mut b);
        let token: String = b.iter().map(|x| format!("{x:02x}")).collect();
        generated_admin = Some(token.clone());
        config.admin_token = Some(Secret::new(token));
    }
    let svc = match &args.sim_clock {
        Some(start) => {
            let t = chrono::DateTime::parse_from_rfc3339(start)
                .with_context(|| format!("--sim-clock {start:?} is not an RFC 3339 instant"))?;
            KeyService::new_simulated(config, SimClock::new(t.with_timezone(&chrono::Utc)))?
        }
        None => KeyService::new(config, SystemClock::shared())?,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr()?;
        let shutdown = contracts::shutdown::signal();
        let p = svc.partner().to_string();
        let mut out = std::io::stdout().lock();
        let url = contracts::net::local_url(addr);
        if url == format!("http://{addr}") {
            writeln!(out, "customer-kms-sim listening on {url}")?;
        } else {
            writeln!(out, "customer-kms-sim listening on {url} (bound to {addr})")?;
        }
        writeln!(out, "partner path: /{p}/byok/v1")?;
        writeln!(out, "  POST {url}{}", auth_path(&p))?;
        writeln!(out, "  POST {url}{}", decrypt_key_path(&p))?;
        writeln!(out, "  POST {url}{}", rotate_key_path(&p))?;
        writeln!(out, "admin API: {url}/_admin")?;
        if let Some(t) = &generated_admin {
            writeln!(out, "admin token (generated): {t}")?;
        }
        writeln!(out, "seed: {}", svc.seed())?;
        writeln!(
            out,
            "clock: {} {}",
            if svc.clock().is_simulated() {
                "simulated,"
            } else {
                "system,"
            },
            format_instant(svc.now())
        )?;
        writeln!(out, "aliases: {}", alias_names(&svc).join(", "))?;
        let mutants = svc.mutants().active();
        if !mutants.is_empty() {
            let names: Vec<&str> = mutants.iter().map(|m| m.name()).collect();
            writeln!(
                out,
                "mutants on: {} (this service breaks the contract on purpose)",
                names.join(", ")
            )?;
        }
        out.flush()?;
        drop(out);
        serve(listener, svc, shutdown).await;
        writeln!(std::io::stdout().lock(), "customer-kms-sim stopped")?;
        Ok(())
    })
}

fn alias_names(svc: &KeyService) -> Vec<String> {
    svc.keys()
        .list()
        .into_iter()
        .map(|a| {
            format!(
                "{} (v{}, {})",
                a.key_alias,
                a.current_version,
                a.status.as_str()
            )
        })
        .collect()
}

/// The key ring `wrap` and `unwrap` use: the same as `serve` with this configuration.
fn key_ring(config: &KmsConfig, alias: &str) -> anyhow::Result<KeyRing> {
    let Some(a) = config.aliases.iter().find(|a| a.name == alias) else {
        let names: Vec<&str> = config.aliases.iter().map(|a| a.name.as_str()).collect();
        bail!(
            "no alias {alias:?} in the configuration (aliases: {})",
            names.join(", ")
        );
    };
    let seed = match config.seed {
        Some(s) => s,
        None => {
            if master_keys(0, a)
                .iter()
                .any(|(_, src)| *src == KeySource::Derived)
            {
                bail!(
                    "alias {alias:?} has keys derived from the seed, and no seed is set: \
                     set `seed` in the configuration or pass --seed (the one `serve` printed)"
                );
            }
            0
        }
    };
    Ok(KeyRing::new(
        seed,
        &config.aliases,
        chrono::DateTime::UNIX_EPOCH,
    ))
}

fn wrap_cmd(args: WrapArgs) -> anyhow::Result<()> {
    let config = args.config.load()?;
    let ring = key_ring(&config, &args.alias)?;
    let info = ring.info(&args.alias)?;
    let version = args.key_version.unwrap_or(info.current_version);
    if version == 0 || version > info.current_version {
        bail!(
            "alias {:?} has versions 1 to {}, not {version}",
            args.alias,
            info.current_version
        );
    }
    let (data_key, generated) = match &args.key {
        Some(b64) => {
            let bytes = Zeroizing::new(
                STANDARD
                    .decode(b64.trim())
                    .context("--key must be base64 (standard alphabet, padded)")?,
            );
            if bytes.len() != DATA_KEY_LEN {
                bail!("--key must be 32 bytes, it is {}", bytes.len());
            }
            let mut k = Zeroizing::new([0u8; DATA_KEY_LEN]);
            k.copy_from_slice(&bytes);
            (k, false)
        }
        None => {
            let mut k = Zeroizing::new([0u8; DATA_KEY_LEN]);
            OsRng.fill_bytes(&mut k[..]);
            (k, true)
        }
    };
    // A fresh nonce from the operating system: never reuse one under a master key.
    let mut nonce = [0u8; envelope::NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    let text = ring.wrap_at(&args.alias, version, nonce, &data_key)?;
    let plaintext = Zeroizing::new(STANDARD.encode(&data_key[..]));
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut v = serde_json::json!({
            "key_alias": args.alias,
            "key_version": version,
            "encrypted_key": text,
        });
        if generated {
            v["plaintext_key"] = serde_json::Value::String(plaintext.to_string());
        }
        writeln!(out, "{v}")?;
    } else {
        writeln!(out, "key_alias:     {}", args.alias)?;
        writeln!(out, "key_version:   {version}")?;
        writeln!(out, "encrypted_key: {text}")?;
        if generated {
            writeln!(
                out,
                "plaintext_key: {} (generated data key, base64; keep it secret)",
                *plaintext
            )?;
        }
    }
    Ok(())
}

fn unwrap_cmd(args: UnwrapArgs) -> anyhow::Result<()> {
    let config = args.config.load()?;
    let ring = key_ring(&config, &args.alias)?;
    let text = if args.encrypted_key == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_line(&mut s)
            .context("cannot read the encrypted key from standard input")?;
        s.trim().to_string()
    } else {
        args.encrypted_key.trim().to_string()
    };
    let env = envelope::parse(&text)?;
    let plaintext = ring.open(&args.alias, &env)?;
    let b64 = Zeroizing::new(STANDARD.encode(&plaintext[..]));
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "key_alias": args.alias,
                "key_version": env.version(),
                "plaintext_key": *b64,
            })
        )?;
    } else {
        writeln!(out, "key_alias:     {}", args.alias)?;
        writeln!(out, "key_version:   {}", env.version())?;
        writeln!(out, "plaintext_key: {}", *b64)?;
    }
    Ok(())
}
