//! `harness check byok`: a customer's key endpoints (`/auth`, `/decrypt-key`,
//! `/rotate-key`) against the contract, check by check.
//!
//! A run makes the calls the platform makes (first `/auth`, then `/rotate-key` when it
//! mints the key, then one `/decrypt-key`), then everything that does not depend on another
//! check at once (at most `--concurrency` requests in flight), then the load phase, then
//! the second rotation; the token-expiry checks wait beside all of that. The checks that
//! judge every answer (trace echo, error bodies, secrets) come last, and every secret the
//! run handled is redacted from the report before it is rendered.
//!
//! - [`settings`]: flags, file and environment; [`defs`]: the check table and each check's
//!   fix.
//! - `probe`: the HTTP client and the journal (`call`: what it sends); `context`: what
//!   checks share.
//! - `secrets`: every secret the run handled, learnt by value and by role, and the one rule
//!   by which they are hidden from the report and looked for in answers.
//! - One module per group: `setup`, `tls`, `auth`, `decrypt` (its altered keys in `tamper`),
//!   `rotate` (its cryptography in `sealing`), `headers` (and `methods`), `token`, `load`,
//!   `errors`; `refusals`, the bearer attacks `decrypt` and `rotate` both get.
//!
//! When the service refuses the run's own settings (401 to the credentials given, 404
//! `KEY_NOT_FOUND` to the key alias), the `setup` group says so first and the checks that
//! need the setting are skipped naming it, not failed.

mod auth;
mod call;
mod context;
mod decrypt;
pub mod defs;
mod errors;
mod headers;
mod jwt;
mod load;
pub(crate) mod plaintext;
mod probe;
mod refusals;
mod rotate;
mod sealing;
mod secrets;
pub(crate) mod settings;
mod setup;
mod tamper;
pub mod time;
mod tls;
mod token;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use contracts::clock::Stopwatch;

pub use settings::{ByokArgs, Settings};

use self::context::{Ctx, TargetKey, skip_all};
use self::defs::*;
use self::probe::{CallError, CallErrorKind, Exchange, Probe};
use crate::checks::{Check, CheckReport};
use crate::report::{self, table};

/// The suite name of the report.
pub(crate) const SUITE: &str = "check byok";

/// Runs `harness check byok`: the report on standard output (a table), `--json` and
/// `--junit` files; exit status 0 when no error check fails, 1 otherwise.
pub async fn run(args: ByokArgs) -> anyhow::Result<ExitCode> {
    if args.list_checks {
        let mut out = std::io::stdout().lock();
        for d in ALL {
            let severity = format!("{:?}", d.severity).to_lowercase();
            writeln!(out, "{:<24} {severity:<8} {}", d.id, d.description)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let settings = Settings::resolve(&args)?;
    let (json, junit) = (settings.json.clone(), settings.junit.clone());
    eprintln!("check byok: {}", settings.target());
    let watch = Stopwatch::start();
    let report = validate(settings).await?;
    let stdout = std::io::stdout();
    let text = table::render(&report, table::Colour::for_stream(&stdout));
    stdout.lock().write_all(text.as_bytes())?;
    eprintln!(
        "check byok: finished in {:.2} s",
        watch.elapsed().as_secs_f64()
    );
    report::write_outputs(&report, json.as_deref(), junit.as_deref())?;
    Ok(if report.holds() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Checks the service `settings` name and answers the report, secrets redacted. An error
/// means the check could not run: the service cannot be reached, does not speak HTTP, or
/// nothing answers at the endpoints' paths.
pub async fn validate(settings: Settings) -> anyhow::Result<CheckReport> {
    let probe = Probe::new(&settings)?;
    let ctx = Ctx::new(settings, probe);
    let mut checks = vec![tls::https(&ctx.s)];
    let mut contacted = false;

    // The platform's first calls: /auth, /rotate-key when it mints the key, /decrypt-key.
    // The first call with the credentials and the first with the key alias also say whether
    // the service takes the run's own settings (the `setup` group).
    let mut auth_base = None;
    let mut token = None;
    if let Some(call) = ctx.auth_call() {
        let sent = ctx.s.time.mark();
        let result = ctx.probe.send(AUTH_STATUS.id, call).await;
        if let Some(e) = first_contact(&ctx, &result).await? {
            return Ok(tls_failed(&ctx, checks, &e));
        }
        contacted = true;
        if let Ok(ex) = &result {
            token = ctx.adopt_token(ex, sent).await;
        }
        auth_base = Some(result);
    }
    let mut refused = setup::refused(auth_base.as_ref(), None);
    let no_token = auth_base.is_some() && token.is_none();
    let mut early_rotation = None;
    let mut first_alias_call = None;
    let mut missing = String::new();
    let mut target: Option<TargetKey> = if let Some(r) = refused {
        missing = r.reason().into();
        None
    } else if no_token {
        missing = "no access token: /auth did not answer one (see auth.status)".into();
        None
    } else if let Some(k) = &ctx.s.key {
        Some(TargetKey {
            encrypted_key: k.encrypted_key.clone(),
            plaintext: k.expected_plaintext.expose().to_string(),
            rotated: false,
        })
    } else {
        let r = rotate::mint(&ctx, ROTATE_STATUS.id).await;
        if !contacted {
            if let Some(e) = first_contact(&ctx, &r.result).await? {
                return Ok(tls_failed(&ctx, checks, &e));
            }
            contacted = true;
        }
        let key = r.key.clone();
        if key.is_none() {
            missing =
                "no key to decrypt: /rotate-key did not answer one (see rotate.status)".into();
        }
        first_alias_call = Some(r.result.clone());
        early_rotation = Some(r);
        key
    };
    let mut decrypt_base = match &target {
        Some(t) => {
            let r = ctx
                .decrypt(DECRYPT_STATUS.id, &ctx.s.key_alias, &t.encrypted_key)
                .await;
            if !contacted && let Some(e) = first_contact(&ctx, &r).await? {
                return Ok(tls_failed(&ctx, checks, &e));
            }
            first_alias_call.get_or_insert_with(|| r.clone());
            Some(r)
        }
        None => None,
    };
    // With an API key the first call with the alias is also the first with the key.
    let first_credentials_call = match &ctx.s.credentials {
        settings::Credentials::Client { .. } => auth_base.as_ref(),
        settings::Credentials::ApiKey(_) => first_alias_call.as_ref(),
    };
    if refused.is_none() {
        refused = setup::refused(first_credentials_call, first_alias_call.as_ref());
        if let Some(r) = refused {
            missing = r.reason().into();
            target = None;
            decrypt_base = None;
            early_rotation = None;
        }
    }
    checks.push(setup::credentials(&ctx, first_credentials_call));
    checks.push(setup::key_alias(&ctx, first_alias_call.as_ref(), refused));
    checks.push(tls::chain(&ctx.s, Ok(())));
    let credentials_refused =
        (refused == Some(setup::Refused::Credentials)).then_some(setup::CREDENTIALS_REFUSED);

    let main = async {
        let mut v = Vec::new();
        let auth = auth::checks(&ctx, auth_base.as_ref(), credentials_refused);
        let decrypt = async {
            match (&target, &decrypt_base) {
                (Some(t), Some(base)) => {
                    let mut c = decrypt::judge_baseline(t, base);
                    if ctx.runs("decrypt") {
                        c.extend(decrypt::checks(&ctx, t, base).await);
                    }
                    c
                }
                _ => skip_group("decrypt", &missing),
            }
        };
        let headers = async {
            match &target {
                Some(t) => headers::requests(&ctx, t).await,
                None => skip_all(
                    &[
                        HEADERS_NO_TRACE_ID,
                        HEADERS_MALFORMED,
                        HEADERS_REQUEST_ID_REQUIRED,
                        HEADERS_SKEWED_TIMESTAMP,
                    ],
                    &missing,
                ),
            }
        };
        let (a, d, h, m) = tokio::join!(
            auth,
            decrypt,
            headers,
            headers::methods(&ctx, credentials_refused)
        );
        v.extend([a, d, h, m].into_iter().flatten());
        if ctx.runs("auth") {
            v.push(match credentials_refused {
                Some(reason) => Check::skip(&AUTH_REPEAT, reason),
                None => auth::repeat(&ctx, target.as_ref()).await,
            });
        }
        if let Some(t) = &target {
            let reference = decrypt_base
                .as_ref()
                .and_then(|r| r.as_ref().ok())
                .filter(|ex| ex.status == 200)
                .and_then(|ex| decrypt::plaintext_of(ex));
            v.extend(load::checks(&ctx, t, reference).await);
        } else {
            v.extend(skip_group("load", &missing));
        }
        if (no_token || refused.is_some()) && ctx.s.use_rotate {
            v.extend(skip_group("rotate", &missing));
        } else {
            v.extend(
                rotate::checks(&ctx, early_rotation, target.as_ref(), decrypt_base.as_ref()).await,
            );
        }
        v
    };
    let tokens = async {
        match &target {
            Some(t) => token::checks(&ctx, token.clone(), t).await,
            None => skip_group("token", &missing),
        }
    };
    // On the wall clock the token checks wait beside the others; on a simulated clock their
    // waits move the clock the other checks' tokens age on, so they come after them.
    let (main, tokens) = match ctx.s.time {
        time::CheckTime::Wall => tokio::join!(main, tokens),
        time::CheckTime::Simulated(_) => (main.await, tokens.await),
    };
    checks.extend(main);
    checks.extend(tokens);

    let journal = ctx.probe.journal();
    checks.extend(headers::judge_journal(&journal));
    checks.extend(errors::checks(&journal, ctx.probe.secrets()));
    Ok(finish(&ctx, checks))
}

/// Judges the first request of a run: `Err` when the check cannot run (exit 2),
/// `Ok(Some(..))` when the TLS certificate did not verify (`tls.chain` fails).
async fn first_contact(
    ctx: &Ctx,
    result: &Result<Arc<Exchange>, CallError>,
) -> anyhow::Result<Option<CallError>> {
    let s = &ctx.s;
    match result {
        Err(e) if e.kind == CallErrorKind::Certificate => Ok(Some(e.clone())),
        Err(e) => {
            if tls::speaks_tls(s, e).await {
                let mut https = s.base_url.clone();
                let _ = https.set_scheme("https");
                anyhow::bail!(
                    "{} speaks TLS: plain http was sent to an https-only service; use --base-url \
                     {}",
                    s.base_url,
                    https.as_str().trim_end_matches('/')
                );
            }
            if s.is_https()
                && s.tls.client_identity.is_none()
                && matches!(e.kind, CallErrorKind::Protocol | CallErrorKind::Tls)
                && tls::asks_for_client_certificate(s).await
            {
                anyhow::bail!(
                    "cannot check {}: {e}; the service asks for a TLS client certificate: give \
                     --client-cert and --client-key",
                    s.target()
                );
            }
            let hint = match e.kind {
                CallErrorKind::Connect => {
                    "is the service running, and are --base-url and the \
                                           port right?"
                }
                CallErrorKind::Timeout => {
                    "the service did not answer; raise --timeout-ms if it \
                                           is slow"
                }
                CallErrorKind::Tls => {
                    "the TLS handshake failed; a service that wants a client \
                                       certificate needs --client-cert and --client-key"
                }
                CallErrorKind::Protocol => "the service did not answer HTTP; check --base-url",
                CallErrorKind::Certificate => unreachable!("handled above"),
            };
            anyhow::bail!("cannot check {}: {e}; {hint}", s.target())
        }
        Ok(ex) if ex.status == 404 => {
            // The service answered for the alias (see setup.key_alias), not for the path.
            if setup::alias_refusal(ex).is_some() {
                return Ok(None);
            }
            anyhow::bail!(
                "nothing answers {} {}: 404 {}; check --base-url and --partner",
                ex.method,
                ctx.probe.url(ex.endpoint),
                shown_body(ctx, ex)
            )
        }
        Ok(ex) if not_a_key_service(ex) => anyhow::bail!(
            "{} {} is not a key service: it answered {} {}{}; check --base-url and --partner \
             (the endpoints are {{base-url}}/{{partner}}/byok/v1/auth, /decrypt-key and \
             /rotate-key)",
            ex.method,
            ctx.probe.url(ex.endpoint),
            ex.status,
            ex.header("content-type")
                .map(|t| format!("({t}) "))
                .unwrap_or_default(),
            shown_body(ctx, ex)
        ),
        Ok(_) => Ok(None),
    }
}

/// An answer's body for a message on standard error: secrets removed, then cut short.
fn shown_body(ctx: &Ctx, ex: &Exchange) -> String {
    let body = match ex.body_evidence() {
        serde_json::Value::String(s) => s,
        v => v.to_string(),
    };
    ctx.probe
        .redactor()
        .text_shortened(&body, crate::checks::redact::MAX_EVIDENCE_CHARS)
}

/// Whether the first answer comes from something other than a key service (an ordinary web
/// server, a proxy's error page): a body that is not JSON with a status the contract never
/// gives to a POST of its endpoints (405, 501: nothing here takes a POST) or labelled as an
/// HTML page. A key service that breaks the contract (a text/plain 500, JSON labelled
/// text/html) is left to the checks.
fn not_a_key_service(ex: &Exchange) -> bool {
    let html = ex
        .header("content-type")
        .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("text/html"));
    ex.json().is_none() && (matches!(ex.status, 405 | 501) || html)
}

/// The report when the certificate did not verify: `tls.chain` fails, the rest is skipped.
fn tls_failed(ctx: &Ctx, mut checks: Vec<Check>, e: &CallError) -> CheckReport {
    checks.push(tls::chain(&ctx.s, Err(e)));
    for d in ALL.iter().filter(|d| d.group() != "tls") {
        checks.push(Check::skip(
            d,
            "the TLS certificate did not verify (see tls.chain)",
        ));
    }
    finish(ctx, checks)
}

fn skip_group(group: &str, reason: &str) -> Vec<Check> {
    ALL.iter()
        .filter(|d| d.group() == group)
        .map(|d| Check::skip(d, reason))
        .collect()
}

/// Filters by group (the setup group always stays), orders as the table, gives every check
/// its fix, counts, and redacts every secret (and only then cuts long evidence).
fn finish(ctx: &Ctx, mut checks: Vec<Check>) -> CheckReport {
    checks.retain(|c| c.group == SETUP_GROUP || ctx.runs(&c.group));
    checks.sort_by_key(|c| ALL.iter().position(|d| d.id == c.id).unwrap_or(usize::MAX));
    for c in &mut checks {
        if c.how_to_fix.is_none() {
            c.how_to_fix = how_to_fix(&c.id).map(str::to_string);
        }
    }
    let mut report = CheckReport::new(SUITE, ctx.s.target(), checks);
    report.redact(&ctx.probe.redactor());
    report
}
