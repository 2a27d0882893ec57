//! The `setup` group: whether the service takes the run's own settings, the credentials and
//! the key alias. A refusal of either is most often the customer's own mistake (a wrong
//! `--client-secret`, a mistyped `--key-alias`), so it is said first, in these checks, and
//! the checks that need the refused setting are skipped naming the reason instead of
//! failing as if the service were wrong.

use std::sync::Arc;

use super::context::Ctx;
use super::defs::{SETUP_CREDENTIALS, SETUP_KEY_ALIAS};
use super::probe::{CallError, Exchange};
use super::settings::Credentials;
use crate::checks::Check;

/// Why the checks that need the credentials are skipped.
pub(super) const CREDENTIALS_REFUSED: &str =
    "the service refused the credentials you gave (see setup.credentials)";
/// Why the checks that need the key alias are skipped.
pub(super) const ALIAS_REFUSED: &str =
    "the service refused the key alias you gave (see setup.key_alias)";

/// A setting of the run the service refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// The client credentials or the API key: 401.
    Credentials,
    /// The key alias: 404 `KEY_NOT_FOUND`, 403 `KEY_DISABLED` or `KEY_REVOKED`.
    KeyAlias,
}

impl Refused {
    /// The skip reason of the checks that need the setting.
    pub(super) fn reason(self) -> &'static str {
        match self {
            Refused::Credentials => CREDENTIALS_REFUSED,
            Refused::KeyAlias => ALIAS_REFUSED,
        }
    }
}

/// The code of an answer that refuses the key alias of the request: 404 `KEY_NOT_FOUND`,
/// 403 `KEY_DISABLED` or `KEY_REVOKED`.
pub(crate) fn alias_refusal(ex: &Exchange) -> Option<&'static str> {
    let body = ex.json()?;
    let code = body.pointer("/error/code")?.as_str()?;
    match (ex.status, code) {
        (404, "KEY_NOT_FOUND") => Some("KEY_NOT_FOUND"),
        (403, "KEY_DISABLED") => Some("KEY_DISABLED"),
        (403, "KEY_REVOKED") => Some("KEY_REVOKED"),
        _ => None,
    }
}

/// What the first call with the credentials (`/auth`, or with an API key the first call
/// that sends it) and the first call with the key alias say of the settings.
pub(super) fn refused(
    credentials: Option<&Result<Arc<Exchange>, CallError>>,
    alias: Option<&Result<Arc<Exchange>, CallError>>,
) -> Option<Refused> {
    if let Some(Ok(ex)) = credentials
        && ex.status == 401
    {
        return Some(Refused::Credentials);
    }
    match alias {
        Some(Ok(ex)) if alias_refusal(ex).is_some() => Some(Refused::KeyAlias),
        _ => None,
    }
}

/// `setup.credentials`, judged on the first call that sent them.
pub(super) fn credentials(ctx: &Ctx, first: Option<&Result<Arc<Exchange>, CallError>>) -> Check {
    let ex = match first {
        Some(Ok(ex)) => ex,
        Some(Err(_)) | None => {
            return Check::skip(&SETUP_CREDENTIALS, "no answer to a call with them");
        }
    };
    if ex.status != 401 {
        return Check::pass(&SETUP_CREDENTIALS, ex.evidence());
    }
    let (expected, fix) = match &ctx.s.credentials {
        Credentials::Client { id, .. } => (
            "/auth answers the client id and secret given with 200, not 401".to_string(),
            format!(
                "the service refused the client id '{id}' and the secret you gave: check \
                 --client-id and the client secret (BYOK_CLIENT_SECRET, --client-secret or \
                 client_secret in --config); if they are right, the service's /auth is wrong"
            ),
        ),
        Credentials::ApiKey(_) => (
            "the API key given accepted as a bearer token, not answered 401".to_string(),
            "the service refused the API key you gave: check BYOK_API_KEY (--api-key or \
             api_key in --config); if it is right, the service's bearer check is wrong"
                .to_string(),
        ),
    };
    Check::fail(&SETUP_CREDENTIALS, ex.evidence(), expected).with_fix(fix)
}

/// `setup.key_alias`, judged on the first call that sent the alias (`/rotate-key` when it
/// mints the key, else `/decrypt-key`).
pub(super) fn key_alias(
    ctx: &Ctx,
    first: Option<&Result<Arc<Exchange>, CallError>>,
    refused: Option<Refused>,
) -> Check {
    if refused == Some(Refused::Credentials) {
        return Check::skip(&SETUP_KEY_ALIAS, CREDENTIALS_REFUSED);
    }
    let ex = match first {
        Some(Ok(ex)) => ex,
        Some(Err(_)) | None => {
            return Check::skip(&SETUP_KEY_ALIAS, "no answer to a call with the key alias");
        }
    };
    let alias = &ctx.s.key_alias;
    let fix = match alias_refusal(ex) {
        None if (200..300).contains(&ex.status) => {
            return Check::pass(&SETUP_KEY_ALIAS, ex.evidence());
        }
        None => {
            return Check::skip(
                &SETUP_KEY_ALIAS,
                format!(
                    "the first call with the key alias answered {}, which says nothing of the \
                     alias (see {})",
                    ex.status, ex.check
                ),
            );
        }
        Some("KEY_NOT_FOUND") => format!(
            "the service has no key alias '{alias}' (404 KEY_NOT_FOUND): check --key-alias \
             against the aliases configured at the service"
        ),
        Some(code) => format!(
            "the key alias '{alias}' is not usable at the service (403 {code}): enable it there, \
             or give another --key-alias"
        ),
    };
    Check::fail(
        &SETUP_KEY_ALIAS,
        ex.evidence(),
        format!("a call with the key alias '{alias}' served"),
    )
    .with_fix(fix)
}
