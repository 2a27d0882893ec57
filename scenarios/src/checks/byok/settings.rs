//! What `harness check byok` checks and how: the flags, the configuration file, the
//! environment, resolved into one [`Settings`].
//!
//! A value comes from the command line, else the environment (secrets only:
//! `BYOK_CLIENT_SECRET`, `BYOK_API_KEY`, `BYOK_EXPECTED_PLAINTEXT`), else the file
//! (`--config`), else its default. Secrets never need the command line.

use std::path::{Path, PathBuf};

use customer_kms_sim::config::Secret;
use serde::Deserialize;

use super::defs::GROUPS;
use crate::checks::GroupFilter;

/// A client id no service has (`auth.unknown_client`).
pub(crate) const UNKNOWN_CLIENT: &str = "byok-check-unknown-client";
/// An alias no service has (`decrypt.unknown_alias`, `rotate.unknown_alias`).
pub(crate) const UNKNOWN_ALIAS: &str = "byok-check-no-such-alias";

/// Default of `--latency-budget-ms`.
pub(crate) const DEFAULT_LATENCY_BUDGET_MS: u64 = 250;
/// Default of `--concurrency`.
pub(crate) const DEFAULT_CONCURRENCY: usize = 8;
/// Default of `--calls`.
pub(crate) const DEFAULT_CALLS: usize = 200;
/// Default of `--timeout-ms`.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 10_000;

const EXAMPLES: &str = "\
Examples:
  # Against `customer-kms-sim serve` (its example configuration), minting a key with /rotate-key:
  BYOK_CLIENT_SECRET=platform-secret-1 harness check byok --base-url http://127.0.0.1:8700 \\
    --partner acme --client-id platform --key-alias tenant-a --other-key-alias tenant-b --use-rotate

  # A key of your own, a static API key, a private CA, and reports for CI:
  BYOK_API_KEY=... BYOK_EXPECTED_PLAINTEXT=... harness check byok \\
    --base-url https://kms.example.com --partner acme --key-alias tenant-a \\
    --encrypted-key byok:v1:... --ca-cert ca.pem --json byok.json --junit byok.xml

  # Everything in a file, only two groups:
  harness check byok --config byok.toml --only auth,decrypt

Exit status: 0 when no error check fails, 1 when one does, 2 when the check could not run
(bad flags or file, a service that cannot be reached or does not speak HTTP).";

/// `harness check byok` flags. Every flag can also be a key of the `--config` file (the
/// flag's name with `_` for `-`); the command line wins over the file.
#[derive(clap::Args, Debug, Default)]
#[command(after_long_help = EXAMPLES)]
pub struct ByokArgs {
    /// TOML file holding any of the settings below (keys: the flag names with `_`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Base URL of the key service: the endpoints are {base-url}/{partner}/byok/v1/...
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The {partner} path segment.
    #[arg(long, value_name = "P")]
    pub partner: Option<String>,
    /// Client id for /auth (HTTP Basic user name).
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// Client secret for /auth; better from the environment.
    #[arg(
        long,
        value_name = "S",
        env = "BYOK_CLIENT_SECRET",
        hide_env_values = true
    )]
    pub client_secret: Option<String>,
    /// A static API key instead of client credentials; better from the environment.
    #[arg(long, value_name = "K", env = "BYOK_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// The key_alias whose master key decrypts.
    #[arg(long, value_name = "A")]
    pub key_alias: Option<String>,
    /// Another alias the service has, to check that a key only decrypts under its own
    /// alias (decrypt.other_alias; skipped without it).
    #[arg(long, value_name = "B")]
    pub other_key_alias: Option<String>,
    /// An encrypted data key (byok:v1:...) under --key-alias; needs --expected-plaintext.
    #[arg(long, value_name = "byok:v1:...")]
    pub encrypted_key: Option<String>,
    /// Base64 of the 32-byte data key --encrypted-key holds; better from the environment.
    #[arg(
        long,
        value_name = "BASE64",
        env = "BYOK_EXPECTED_PLAINTEXT",
        hide_env_values = true
    )]
    pub expected_plaintext: Option<String>,
    /// Check /rotate-key, and without --encrypted-key use the key it mints.
    #[arg(long)]
    pub use_rotate: bool,
    /// PEM file of a CA certificate to trust besides the system roots.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// PEM client certificate for mutual TLS (with --client-key).
    #[arg(long, value_name = "FILE")]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of --client-cert.
    #[arg(long, value_name = "FILE")]
    pub client_key: Option<PathBuf>,
    /// Latency budget of a /decrypt-key call under load [default: 250].
    #[arg(long, value_name = "MS")]
    pub latency_budget_ms: Option<u64>,
    /// Most requests in flight at once, in the load phase and overall [default: 8].
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// /decrypt-key calls in the load phase [default: 200].
    #[arg(long, value_name = "N")]
    pub calls: Option<usize>,
    /// Run only these groups (comma-separated): tls, auth, decrypt, rotate, headers,
    /// methods, token, load, errors.
    #[arg(long, value_name = "GROUP,...", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Skip these groups (comma-separated).
    #[arg(long, value_name = "GROUP,...", value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Wait up to this long for the access token to near and pass its expiry (token.reuse,
    /// token.expired); they are skipped when the token lives longer [default: 0].
    #[arg(long, value_name = "SECS")]
    pub expiry_wait_secs: Option<u64>,
    /// Time limit of one request [default: 10000].
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the report as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print the checks (id, severity, description) and exit.
    #[arg(long)]
    pub list_checks: bool,
}

/// The `--config` file: the same settings as the flags.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    base_url: Option<String>,
    partner: Option<String>,
    client_id: Option<String>,
    client_secret: Option<Secret>,
    api_key: Option<Secret>,
    key_alias: Option<String>,
    other_key_alias: Option<String>,
    encrypted_key: Option<String>,
    expected_plaintext: Option<Secret>,
    use_rotate: Option<bool>,
    ca_cert: Option<PathBuf>,
    client_cert: Option<PathBuf>,
    client_key: Option<PathBuf>,
    latency_budget_ms: Option<u64>,
    concurrency: Option<usize>,
    calls: Option<usize>,
    only: Option<Vec<String>>,
    skip: Option<Vec<String>>,
    expiry_wait_secs: Option<u64>,
    timeout_ms: Option<u64>,
    json: Option<PathBuf>,
    junit: Option<PathBuf>,
}

/// How the validator authenticates.
#[derive(Debug, Clone)]
pub(crate) enum Credentials {
    /// Client credentials: `/auth` with HTTP Basic, then the token.
    Client {
        /// The client id.
        id: String,
        /// The client secret.
        secret: Secret,
    },
    /// A static API key, sent as `Bearer` (no `/auth`).
    ApiKey(Secret),
}

/// A data key given by the user.
#[derive(Debug, Clone)]
pub(crate) struct GivenKey {
    /// `byok:v1:...`.
    pub(crate) encrypted_key: String,
    /// Base64 of the 32-byte key it holds.
    pub(crate) expected_plaintext: Secret,
}

/// TLS files.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsFiles {
    /// A CA certificate to trust (PEM).
    pub(crate) ca_cert: Option<PathBuf>,
    /// Client certificate and key for mutual TLS (PEM).
    pub(crate) client_identity: Option<(PathBuf, PathBuf)>,
}

/// Everything a run needs, resolved and checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Base URL, without a trailing `/`.
    pub(crate) base_url: url::Url,
    /// The `{partner}` segment.
    pub(crate) partner: String,
    /// How to authenticate.
    pub(crate) credentials: Credentials,
    /// The alias to decrypt under.
    pub(crate) key_alias: String,
    /// Another alias of the service, for `decrypt.other_alias`.
    pub(crate) other_key_alias: Option<String>,
    /// A key given by the user.
    pub(crate) key: Option<GivenKey>,
    /// Whether `/rotate-key` is checked.
    pub(crate) use_rotate: bool,
    /// TLS files.
    pub(crate) tls: TlsFiles,
    /// Latency budget of one decrypt under load.
    pub(crate) latency_budget_ms: u64,
    /// Most requests in flight.
    pub(crate) concurrency: usize,
    /// Decrypts in the load phase.
    pub(crate) calls: usize,
    /// Groups to run.
    pub(crate) filter: GroupFilter,
    /// Longest wait for a token's expiry.
    pub(crate) expiry_wait_secs: u64,
    /// Time limit of one request.
    pub(crate) timeout_ms: u64,
    /// `--json FILE`.
    pub(crate) json: Option<PathBuf>,
    /// `--junit FILE`.
    pub(crate) junit: Option<PathBuf>,
    /// The run's time: the wall clock from the command line; a simulated clock the service
    /// reads too when the harness checks a service of its own (see [`super::time`]).
    pub time: super::time::CheckTime,
}

impl Settings {
    /// `{base_url}/{partner}/byok/v1/{endpoint}`.
    pub(crate) fn endpoint_url(&self, endpoint: &str) -> String {
        format!(
            "{}/{}/byok/v1/{endpoint}",
            self.base_url.as_str().trim_end_matches('/'),
            self.partner
        )
    }

    /// What the report names as its target (no secrets).
    pub(crate) fn target(&self) -> String {
        format!(
            "{}/{}/byok/v1",
            self.base_url.as_str().trim_end_matches('/'),
            self.partner
        )
    }

    /// Whether the base URL is `https`.
    pub(crate) fn is_https(&self) -> bool {
        self.base_url.scheme() == "https"
    }

    /// What the run sends in the clear: the client id, the key aliases (given, and the one
    /// no service has), the partner, the host, and the client id no service knows. A run of
    /// a secret that is also a run of one of these is no evidence of a leak.
    pub(crate) fn public_values(&self) -> Vec<String> {
        let mut v = vec![
            self.key_alias.clone(),
            self.partner.clone(),
            self.base_url.host_str().unwrap_or_default().to_string(),
            UNKNOWN_ALIAS.to_string(),
            UNKNOWN_CLIENT.to_string(),
        ];
        v.extend(self.other_key_alias.clone());
        if let Credentials::Client { id, .. } = &self.credentials {
            v.push(id.clone());
        }
        v
    }

    /// The credential the settings hold (client secret or API key), for redaction and the
    /// search for echoed secrets. The expected plaintext is a key, not a credential.
    pub(crate) fn credential(&self) -> &str {
        match &self.credentials {
            Credentials::Client { secret, .. } => secret.expose(),
            Credentials::ApiKey(k) => k.expose(),
        }
    }

    /// Resolves flags, environment and file into settings, or says what is wrong.
    pub fn resolve(args: &ByokArgs) -> anyhow::Result<Settings> {
        let file = match &args.config {
            Some(p) => read_file(p)?,
            None => FileSettings::default(),
        };
        let base = args.config.as_deref().and_then(Path::parent);
        let rel = |p: PathBuf| match base {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p,
        };
        let from = |flag: &Option<String>, file: Option<String>| flag.clone().or(file);
        let secret = |flag: &Option<String>, file: Option<Secret>| {
            flag.as_ref().map(|s| Secret::new(s.as_str())).or(file)
        };

        let base_url = from(&args.base_url, file.base_url)
            .ok_or_else(|| anyhow::anyhow!("--base-url is required (or base_url in --config)"))?;
        let base_url = parse_base_url(&base_url)?;
        let partner = from(&args.partner, file.partner)
            .ok_or_else(|| anyhow::anyhow!("--partner is required (or partner in --config)"))?;
        if partner.is_empty()
            || !partner
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
        {
            anyhow::bail!("--partner must be one URL path segment of A-Z a-z 0-9 . _ ~ -");
        }

        let client_id = from(&args.client_id, file.client_id);
        let client_secret = secret(&args.client_secret, file.client_secret);
        let api_key = secret(&args.api_key, file.api_key);
        let credentials = match (client_id, client_secret, api_key) {
            (Some(id), Some(secret), None) => {
                if id.contains(':') {
                    anyhow::bail!("--client-id must not contain ':' (HTTP Basic cannot carry it)");
                }
                if secret.expose().is_empty() {
                    anyhow::bail!("the client secret is empty");
                }
                Credentials::Client { id, secret }
            }
            (None, None, Some(key)) if !key.expose().is_empty() => Credentials::ApiKey(key),
            (None, None, Some(_)) => anyhow::bail!("the API key is empty"),
            (Some(_), None, None) => anyhow::bail!(
                "--client-id needs a client secret: BYOK_CLIENT_SECRET, --client-secret or \
                 client_secret in --config"
            ),
            (None, Some(_), None) => {
                anyhow::bail!("a client secret was given without --client-id")
            }
            (None, None, None) => anyhow::bail!(
                "no credentials: give --client-id with a client secret (BYOK_CLIENT_SECRET), \
                 or a static API key (BYOK_API_KEY)"
            ),
            _ => anyhow::bail!(
                "give client credentials or an API key, not both (check BYOK_CLIENT_SECRET, \
                 BYOK_API_KEY and --config)"
            ),
        };

        let key_alias = from(&args.key_alias, file.key_alias)
            .ok_or_else(|| anyhow::anyhow!("--key-alias is required (or key_alias in --config)"))?;
        if key_alias.is_empty() {
            anyhow::bail!("--key-alias must not be empty");
        }
        let other_key_alias = from(&args.other_key_alias, file.other_key_alias);
        if other_key_alias.as_deref() == Some(key_alias.as_str()) {
            anyhow::bail!("--other-key-alias must differ from --key-alias");
        }
        let use_rotate = args.use_rotate || file.use_rotate.unwrap_or(false);
        let encrypted_key = from(&args.encrypted_key, file.encrypted_key);
        let expected = secret(&args.expected_plaintext, file.expected_plaintext);
        let key = match (encrypted_key, expected) {
            (Some(encrypted_key), Some(expected_plaintext)) => {
                if !encrypted_key.starts_with(contracts::envelope::PREFIX) {
                    anyhow::bail!("--encrypted-key must start with byok:v1:");
                }
                // Any length is taken: a service whose keys are not 32 bytes fails
                // decrypt.plaintext, which says so, rather than stopping the run.
                if super::plaintext::decode_any(expected_plaintext.expose()).is_none() {
                    anyhow::bail!(
                        "the expected plaintext must be base64 (standard alphabet) of the data key (32 bytes)"
                    );
                }
                Some(GivenKey {
                    encrypted_key,
                    expected_plaintext,
                })
            }
            (Some(_), None) => anyhow::bail!(
                "--encrypted-key needs the plaintext it holds: BYOK_EXPECTED_PLAINTEXT, \
                 --expected-plaintext or expected_plaintext in --config"
            ),
            (None, Some(_)) => {
                anyhow::bail!("an expected plaintext was given without --encrypted-key")
            }
            (None, None) if use_rotate => None,
            (None, None) => anyhow::bail!(
                "nothing to decrypt: give --encrypted-key with its expected plaintext, or \
                 --use-rotate to mint a key through /rotate-key"
            ),
        };

        let ca_cert = args.ca_cert.clone().or(file.ca_cert.map(rel));
        let client_cert = args.client_cert.clone().or(file.client_cert.map(rel));
        let client_key = args.client_key.clone().or(file.client_key.map(rel));
        let client_identity = match (client_cert, client_key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => anyhow::bail!("--client-cert and --client-key go together"),
        };
        if base_url.scheme() == "http" && (ca_cert.is_some() || client_identity.is_some()) {
            anyhow::bail!("--ca-cert, --client-cert and --client-key need an https:// --base-url");
        }

        let filter = GroupFilter {
            only: if args.only.is_empty() {
                file.only.unwrap_or_default()
            } else {
                args.only.clone()
            },
            skip: if args.skip.is_empty() {
                file.skip.unwrap_or_default()
            } else {
                args.skip.clone()
            },
        };
        filter.validate(GROUPS).map_err(anyhow::Error::msg)?;

        let latency_budget_ms = args
            .latency_budget_ms
            .or(file.latency_budget_ms)
            .unwrap_or(DEFAULT_LATENCY_BUDGET_MS);
        let concurrency = args
            .concurrency
            .or(file.concurrency)
            .unwrap_or(DEFAULT_CONCURRENCY);
        let calls = args.calls.or(file.calls).unwrap_or(DEFAULT_CALLS);
        let timeout_ms = args
            .timeout_ms
            .or(file.timeout_ms)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(1..=1024).contains(&concurrency) {
            anyhow::bail!("--concurrency must be 1 to 1024");
        }
        if !(1..=1_000_000).contains(&calls) {
            anyhow::bail!("--calls must be 1 to 1000000");
        }
        if latency_budget_ms == 0 {
            anyhow::bail!("--latency-budget-ms must be at least 1");
        }
        if !(1..=600_000).contains(&timeout_ms) {
            anyhow::bail!("--timeout-ms must be 1 to 600000");
        }
        Ok(Settings {
            base_url,
            partner,
            credentials,
            key_alias,
            other_key_alias,
            key,
            use_rotate,
            tls: TlsFiles {
                ca_cert,
                client_identity,
            },
            latency_budget_ms,
            concurrency,
            calls,
            filter,
            expiry_wait_secs: args.expiry_wait_secs.or(file.expiry_wait_secs).unwrap_or(0),
            timeout_ms,
            json: args.json.clone().or(file.json.map(rel)),
            junit: args.junit.clone().or(file.junit.map(rel)),
            time: super::time::CheckTime::Wall,
        })
    }
}

fn read_file(path: &Path) -> anyhow::Result<FileSettings> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read --config {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| anyhow::anyhow!("invalid --config {}: {e}", path.display()))
}

fn parse_base_url(text: &str) -> anyhow::Result<url::Url> {
    let url = url::Url::parse(text.trim()).map_err(|e| {
        anyhow::anyhow!("--base-url {text:?} is not a URL ({e}); e.g. https://kms.example.com")
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        anyhow::bail!(
            "--base-url must be http:// or https://, not {}://",
            url.scheme()
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        anyhow::bail!("--base-url must not carry credentials; use the credential flags");
    }
    if url.query().is_some() || url.fragment().is_some() {
        anyhow::bail!("--base-url must not have a query or fragment");
    }
    if url.host_str().is_none() {
        anyhow::bail!("--base-url needs a host");
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ByokArgs {
        ByokArgs {
            base_url: Some("http://127.0.0.1:8700/".into()),
            partner: Some("acme".into()),
            client_id: Some("platform".into()),
            client_secret: Some("s3cret".into()),
            key_alias: Some("tenant-a".into()),
            use_rotate: true,
            ..ByokArgs::default()
        }
    }

    #[test]
    fn defaults_and_urls() {
        let s = Settings::resolve(&args()).unwrap();
        assert_eq!(
            s.endpoint_url("auth"),
            "http://127.0.0.1:8700/acme/byok/v1/auth"
        );
        assert_eq!(s.latency_budget_ms, 250);
        assert_eq!((s.concurrency, s.calls, s.expiry_wait_secs), (8, 200, 0));
        assert!(!format!("{s:?}").contains("s3cret"), "Debug hides secrets");
        assert_eq!(s.credential(), "s3cret");
    }

    #[test]
    fn a_file_fills_what_the_flags_leave_and_paths_are_relative_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("byok.toml");
        std::fs::write(
            &path,
            "base_url = \"https://kms.example.com\"\npartner = \"p\"\napi_key = \"k-123\"\n\
             key_alias = \"a\"\nuse_rotate = true\nca_cert = \"ca.pem\"\nonly = [\"auth\"]\n\
             calls = 5\n",
        )
        .unwrap();
        let s = Settings::resolve(&ByokArgs {
            config: Some(path),
            partner: Some("flag-wins".into()),
            ..ByokArgs::default()
        })
        .unwrap();
        assert_eq!(s.partner, "flag-wins");
        assert_eq!(s.calls, 5);
        assert!(matches!(&s.credentials, Credentials::ApiKey(k) if k.expose() == "k-123"));
        assert_eq!(s.tls.ca_cert, Some(dir.path().join("ca.pem")));
        assert_eq!(s.filter.only, ["auth"]);
    }

    #[rstest::rstest]
    #[case::no_url(|a: &mut ByokArgs| a.base_url = None, "--base-url is required")]
    #[case::bad_scheme(|a: &mut ByokArgs| a.base_url = Some("ftp://x".into()), "http:// or https://")]
    #[case::creds_in_url(|a: &mut ByokArgs| a.base_url = Some("http://u:p@x".into()), "credentials")]
    #[case::bad_partner(|a: &mut ByokArgs| a.partner = Some("a/b".into()), "--partner")]
    #[case::no_secret(|a: &mut ByokArgs| a.client_secret = None, "BYOK_CLIENT_SECRET")]
    #[case::both(|a: &mut ByokArgs| a.api_key = Some("k".into()), "not both")]
    #[case::nothing_to_decrypt(|a: &mut ByokArgs| a.use_rotate = false, "--use-rotate")]
    #[case::key_without_plaintext(|a: &mut ByokArgs| a.encrypted_key = Some("byok:v1:AAAA".into()), "BYOK_EXPECTED_PLAINTEXT")]
    #[case::bad_plaintext(|a: &mut ByokArgs| { a.encrypted_key = Some("byok:v1:AAAA".into()); a.expected_plaintext = Some("not base64!".into()) }, "must be base64")]
    #[case::bad_prefix(|a: &mut ByokArgs| { a.encrypted_key = Some("kms:AAAA".into()); a.expected_plaintext = Some("AAAA".into()) }, "byok:v1:")]
    #[case::unknown_group(|a: &mut ByokArgs| a.only = vec!["nope".into()], "unknown check group")]
    #[case::ca_on_http(|a: &mut ByokArgs| a.ca_cert = Some("ca.pem".into()), "https://")]
    #[case::half_identity(|a: &mut ByokArgs| { a.base_url = Some("https://x".into()); a.client_cert = Some("c.pem".into()) }, "go together")]
    #[case::zero_calls(|a: &mut ByokArgs| a.calls = Some(0), "--calls")]
    #[case::same_alias(|a: &mut ByokArgs| a.other_key_alias = Some("tenant-a".into()), "must differ")]
    fn bad_settings_say_what_to_fix(#[case] break_it: fn(&mut ByokArgs), #[case] says: &str) {
        let mut a = args();
        break_it(&mut a);
        let err = Settings::resolve(&a).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}
