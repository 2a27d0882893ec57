//! Where the [mutants](crate::mutants) change the endpoints: each function here is the
//! contract-keeping step of [`super::byok`] with the mutants that bend it. With no mutant on,
//! every function does exactly what the step did before.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use contracts::envelope::{self, Envelope};
use contracts::error::ByokErrorCode;
use contracts::wire::byok::{HEADER_REQUEST_DURATION, HEADER_TRACE_ID};
use serde_json::json;
use warp::http::StatusCode;
use warp::http::header::CONTENT_TYPE;
use warp::reply::Response;
use zeroize::Zeroizing;

use super::{bytes_response, error_response as contract_error_response};
use crate::auth::{Caller, Claims};
use crate::error::KmsError;
use crate::faults::Endpoint;
use crate::keys::{KeyError, KeyRing};
use crate::mutants::{Mutant, Mutants};
use crate::service::KeyService;

fn internal() -> KmsError {
    KmsError::new(ByokErrorCode::InternalError, "internal error")
}

fn bearer_token(header: Option<&str>) -> Option<&str> {
    let (scheme, rest) = header?.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("Bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// The unverified header and claims of a JWT-shaped token.
fn jwt_parts(token: &str) -> Option<(serde_json::Value, Claims)> {
    let mut parts = token.split('.');
    let (h, c, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let header = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).ok()?).ok()?;
    let claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).ok()?).ok()?;
    Some((header, claims))
}

/// Step 5 on `decrypt-key` and `rotate-key`: the bearer token or API key.
pub(crate) fn bearer(
    svc: &KeyService,
    header: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Caller, KmsError> {
    let m = svc.mutants();
    let auth = svc.authenticator();
    if m.is_on(Mutant::BasicOnDecrypt)
        && let Ok(caller) = auth.check_basic(header)
    {
        return Ok(caller);
    }
    if header.is_none() && m.is_on(Mutant::NoTokenAccepted) {
        return Ok(Caller::Client {
            id: "anonymous".into(),
        });
    }
    let substituted;
    let header = match bearer_token(header).and_then(|t| {
        (m.is_on(Mutant::OpaqueToken) || m.is_on(Mutant::AlgNoneHeader))
            .then(|| m.jwt_of(t))
            .flatten()
    }) {
        Some(jwt) => {
            substituted = format!("Bearer {jwt}");
            Some(substituted.as_str())
        }
        None => header,
    };
    let err = match auth.check_bearer(header, now) {
        Ok(caller) => return dies_early(m, header, caller, now),
        Err(e) => e,
    };
    let Some(token) = bearer_token(header) else {
        return Err(err);
    };
    if !token.contains('.') {
        return Err(if m.is_on(Mutant::GarbageToken500) {
            internal()
        } else {
            err
        });
    }
    let Some((jwt_header, claims)) = jwt_parts(token) else {
        return Err(err);
    };
    let alg_none = jwt_header
        .get("alg")
        .and_then(|a| a.as_str())
        .is_some_and(|a| a.eq_ignore_ascii_case("none"));
    if alg_none && m.is_on(Mutant::AlgNoneAccepted) {
        return auth.check_unsigned_claims(&claims, now, true);
    }
    if !alg_none && m.is_on(Mutant::UncheckedSignature) {
        return auth.check_unsigned_claims(&claims, now, true);
    }
    if !alg_none && m.is_on(Mutant::ExpiredTokenAccepted) && err.message == "access token expired" {
        return auth.check_unsigned_claims(&claims, now, false);
    }
    Err(err)
}

/// [`Mutant::TokenDiesEarly`]: a valid JWT past half its lifetime is refused as expired.
fn dies_early(
    m: &Mutants,
    header: Option<&str>,
    caller: Caller,
    now: DateTime<Utc>,
) -> Result<Caller, KmsError> {
    if !m.is_on(Mutant::TokenDiesEarly) {
        return Ok(caller);
    }
    match bearer_token(header).and_then(jwt_parts) {
        Some((_, c)) if (now.timestamp() - c.iat) * 2 >= c.exp - c.iat => Err(KmsError::new(
            ByokErrorCode::Unauthorized,
            "access token expired",
        )),
        _ => Ok(caller),
    }
}

/// [`Mutant::AlgNoneHeader`] on a token just issued: the same token with `alg: none` in its
/// header (remembered as standing for the real one); otherwise the token unchanged.
pub(crate) fn issued_token(m: &Mutants, jwt: String) -> String {
    if !m.is_on(Mutant::AlgNoneHeader) {
        return jwt;
    }
    let Some((_, rest)) = jwt.split_once('.') else {
        return jwt;
    };
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    m.stand_in(format!("{header}.{rest}"), jwt)
}

/// The status of a success: 201 under [`Mutant::AuthStatus201`],
/// [`Mutant::DecryptStatus201`] and [`Mutant::RotateStatus201`] on their endpoints.
pub(crate) fn success_status(m: &Mutants, endpoint: Endpoint, mut resp: Response) -> Response {
    let mutant = match endpoint {
        Endpoint::Auth => Mutant::AuthStatus201,
        Endpoint::DecryptKey => Mutant::DecryptStatus201,
        Endpoint::RotateKey => Mutant::RotateStatus201,
    };
    if m.is_on(mutant) {
        *resp.status_mut() = StatusCode::CREATED;
    }
    resp
}

/// A success body bent by the mutants of its fields ([`Mutant::ExpiresInString`],
/// [`Mutant::PlaintextFieldRenamed`], [`Mutant::RotateWithoutAlias`],
/// [`Mutant::RotateShortPlaintext`]); `None` when none of them is on.
pub(crate) fn success_body(
    m: &Mutants,
    endpoint: Endpoint,
    body: &impl serde::Serialize,
) -> Option<serde_json::Value> {
    let bent = match endpoint {
        Endpoint::Auth => m.is_on(Mutant::ExpiresInString),
        Endpoint::DecryptKey => m.is_on(Mutant::PlaintextFieldRenamed),
        Endpoint::RotateKey => {
            m.is_on(Mutant::RotateWithoutAlias) || m.is_on(Mutant::RotateShortPlaintext)
        }
    };
    if !bent {
        return None;
    }
    let mut v = serde_json::to_value(body).expect("wire types serialise");
    let Some(data) = v.get_mut("data").and_then(|d| d.as_object_mut()) else {
        return Some(v);
    };
    match endpoint {
        Endpoint::Auth if m.is_on(Mutant::ExpiresInString) => {
            if let Some(e) = data.get("expires_in").cloned() {
                data.insert("expires_in".into(), json!(e.to_string()));
            }
        }
        Endpoint::DecryptKey if m.is_on(Mutant::PlaintextFieldRenamed) => {
            if let Some(p) = data.remove("plaintext_key") {
                data.insert("plaintext".into(), p);
            }
        }
        Endpoint::RotateKey => {
            if m.is_on(Mutant::RotateWithoutAlias) {
                data.remove("key_alias");
            }
            if m.is_on(Mutant::RotateShortPlaintext)
                && let Some(p) = data.get("plaintext_dek").and_then(|p| p.as_str())
                && let Ok(key) = STANDARD.decode(p)
            {
                let short = STANDARD.encode(&key[..key.len().min(16)]);
                data.insert("plaintext_dek".into(), json!(short));
            }
        }
        _ => {}
    }
    Some(v)
}

/// Step 5 on `/auth`: HTTP Basic client credentials.
pub(crate) fn basic(svc: &KeyService, header: Option<&str>) -> Result<Caller, KmsError> {
    let m = svc.mutants();
    let Some(value) = header else {
        return Err(if m.is_on(Mutant::NoCredentials500) {
            internal()
        } else {
            KmsError::new(ByokErrorCode::Unauthorized, "missing Authorization header")
        });
    };
    let err = match svc.authenticator().check_basic(Some(value)) {
        Ok(caller) => return Ok(caller),
        Err(e) => e,
    };
    let presented = value
        .split_once(' ')
        .filter(|(s, _)| s.eq_ignore_ascii_case("Basic"))
        .and_then(|(_, b64)| STANDARD.decode(b64.trim()).ok())
        .map(Zeroizing::new)
        .and_then(|bytes| {
            let text = std::str::from_utf8(&bytes).ok()?;
            let (id, secret) = text.split_once(':')?;
            Some((id.to_string(), Zeroizing::new(secret.to_string())))
        });
    let Some((id, secret)) = presented else {
        return Err(if m.is_on(Mutant::MalformedBasic500) {
            internal()
        } else {
            err
        });
    };
    let known = svc.authenticator().knows_client(&id);
    if (known && m.is_on(Mutant::AcceptWrongSecret))
        || (!known && m.is_on(Mutant::AcceptUnknownClient))
        || (m.is_on(Mutant::SecretPrefixAccepted) && secret_prefix_of_client(svc, &id, &secret))
    {
        return Ok(Caller::Client { id });
    }
    if m.is_on(Mutant::SecretInError) {
        return Err(KmsError::new(
            ByokErrorCode::Unauthorized,
            format!("invalid client credentials {id}:{}", *secret),
        ));
    }
    Err(err)
}

/// [`Mutant::SecretPrefixAccepted`]: whether `secret` is a non-empty prefix of a secret of
/// the client `id` (a comparison that stops at the end of the presented secret).
fn secret_prefix_of_client(svc: &KeyService, id: &str, secret: &str) -> bool {
    !secret.is_empty()
        && svc
            .config()
            .clients
            .iter()
            .filter(|c| c.id == id)
            .flat_map(|c| &c.secrets)
            .any(|s| s.expose().starts_with(secret))
}

/// Step 6 on `/decrypt-key`, [`Mutant::MissingAliasKeyNotFound`]: a JSON body whose `data`
/// has no `key_alias` answers 404 `KEY_NOT_FOUND`, as if the alias were unknown.
pub(crate) fn missing_alias(m: &Mutants, body: &[u8]) -> Result<(), KmsError> {
    if !m.is_on(Mutant::MissingAliasKeyNotFound) {
        return Ok(());
    }
    let body: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    match body.get("data").and_then(|d| d.as_object()) {
        Some(data) if !data.contains_key("key_alias") => Err(KeyError::UnknownAlias.into()),
        _ => Ok(()),
    }
}

/// Step 7: the `byok:v1:` text, before it is parsed.
pub(crate) fn envelope_text<'a>(m: &Mutants, text: &'a str) -> Result<Cow<'a, str>, KmsError> {
    let mut text = Cow::Borrowed(text);
    if m.is_on(Mutant::MissingPrefixAccepted) && !text.contains(':') {
        text = Cow::Owned(format!("{}{text}", envelope::PREFIX));
    }
    if m.is_on(Mutant::WrongPrefix500) && text.contains(':') && !text.starts_with("byok:") {
        return Err(internal());
    }
    if m.is_on(Mutant::AnyEnvelopeVersion)
        && !text.starts_with(envelope::PREFIX)
        && let Some(rest) = text.strip_prefix("byok:v")
        && let Some((version, body)) = rest.split_once(':')
        && version.bytes().all(|b| b.is_ascii_digit())
    {
        text = Cow::Owned(format!("{}{body}", envelope::PREFIX));
    }
    if m.is_on(Mutant::LenientBase64)
        && let Some(body) = text.strip_prefix(envelope::PREFIX)
    {
        let kept: String = body
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
            .collect();
        text = Cow::Owned(format!("{}{kept}", envelope::PREFIX));
    }
    Ok(text)
}

/// Steps 8 and 9: open the envelope under the alias.
pub(crate) fn open(
    m: &Mutants,
    keys: &KeyRing,
    alias: &str,
    env: &Envelope,
) -> Result<Zeroizing<Vec<u8>>, KmsError> {
    match keys.open(alias, env) {
        Ok(key) => {
            if m.tampering() {
                m.remember_opened(alias, env.to_bytes(), &key);
            }
            Ok(key)
        }
        Err(KeyError::UnknownAlias) if m.is_on(Mutant::UnknownAlias500) => Err(internal()),
        Err(e) if e.code() == ByokErrorCode::DecryptionFailed => {
            // The tampering mutants: a key that differs from one opened before only in the
            // part the mutant ignores opens as that key.
            if m.tampering()
                && let Some(key) = m.opened_like(alias, &env.to_bytes())
            {
                return Ok(key);
            }
            if m.is_on(Mutant::NoAliasBinding)
                && let Some(key) = keys
                    .list()
                    .iter()
                    .find_map(|a| keys.open(&a.key_alias, env).ok())
            {
                return Ok(key);
            }
            if m.is_on(Mutant::DecryptionFailure500) {
                return Err(internal());
            }
            Err(e.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The answer for an error of an endpoint.
pub(crate) fn error_response(m: &Mutants, e: &KmsError) -> Response {
    let mut e = e.clone();
    if m.is_on(Mutant::VerboseErrorMessage) {
        e.message = Cow::Owned(format!("{} (debug: {})", e.message, "x".repeat(2000)));
    }
    let code = if m.is_on(Mutant::GenericErrorCode) {
        "ERROR"
    } else {
        e.code.as_str()
    };
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = if m.is_on(Mutant::ErrorNotJson) {
        bytes_response(
            status,
            format!("{code}: {}", e.message).into_bytes(),
            "text/plain; charset=utf-8",
        )
    } else if m.is_on(Mutant::FlatErrorBody) {
        let body = json!({"code": code, "message": e.message});
        bytes_response(status, body.to_string().into_bytes(), "application/json")
    } else if m.is_on(Mutant::GenericErrorCode) {
        let body = json!({"error": {"code": code, "message": e.message}});
        bytes_response(status, body.to_string().into_bytes(), "application/json")
    } else {
        return contract_error_response(&e);
    };
    // The headers the contract-keeping answer carries (Retry-After, Allow).
    let plain = contract_error_response(&e);
    for (name, value) in plain.headers() {
        if name != CONTENT_TYPE {
            resp.headers_mut().insert(name, value.clone());
        }
    }
    resp
}

/// The answer's headers, after they were stamped.
pub(crate) fn strip_headers(m: &Mutants, resp: &mut Response) {
    if m.is_on(Mutant::NoTraceEcho) {
        resp.headers_mut().remove(HEADER_TRACE_ID);
    }
    if m.is_on(Mutant::NoRequestDuration) {
        resp.headers_mut().remove(HEADER_REQUEST_DURATION);
    }
    if m.is_on(Mutant::NoWwwAuthenticate) {
        resp.headers_mut()
            .remove(warp::http::header::WWW_AUTHENTICATE);
    }
    if m.is_on(Mutant::CacheableAnswers) {
        resp.headers_mut().remove(warp::http::header::CACHE_CONTROL);
        resp.headers_mut().remove(warp::http::header::PRAGMA);
    }
}

/// [`Mutant::ShortPlaintext`] and [`Mutant::UnstablePlaintext`] on a decrypted key.
pub(crate) fn decrypted_key(
    m: &Mutants,
    encrypted_key: &str,
    key: Zeroizing<Vec<u8>>,
) -> Zeroizing<Vec<u8>> {
    let mut key = key;
    if m.is_on(Mutant::UnstablePlaintext) && m.decrypted_before(encrypted_key) && !key.is_empty() {
        key[0] ^= 1;
    }
    if m.is_on(Mutant::ShortPlaintext) {
        key.truncate(16);
    }
    key
}
