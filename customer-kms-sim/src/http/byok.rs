//! The three customer-hosted endpoints.
//!
//! A call goes through these steps; the first that fails answers, and the audit log
//! records the call whatever happens:
//!
//! | Step | Failure |
//! |---|---|
//! | 1. method is POST | 405 `METHOD_NOT_ALLOWED`, `Allow: POST` |
//! | 2. arrival faults (latency, 503, 429, 500, hang) | as the fault says |
//! | 3. `x-request-id` present and a UUID; `x-request-timestamp` present, RFC 3339, within the skew window; `x-trace-id` a UUID when present | 400 `INVALID_REQUEST` |
//! | 4. body at most `max_body_bytes` | 413 `PAYLOAD_TOO_LARGE` |
//! | 5. credentials: Basic on `/auth`, Bearer (JWT or API key) on the others | 401 `UNAUTHORIZED` |
//! | 6. content type and body (`grant_type=client_credentials`; `{data:{key_alias, encrypted_key}}`) | 400 `INVALID_REQUEST` |
//! | 7. encrypted key is a readable `byok:v1:` envelope | 400 `INVALID_REQUEST` |
//! | 8. alias exists, is enabled, not revoked | 404 `KEY_NOT_FOUND`, 403 `KEY_DISABLED`, 403 `KEY_REVOKED` |
//! | 9. version known and not below the minimum; envelope opens; 32-byte key | 422 `DECRYPTION_FAILED` |
//! | 10. success faults (malformed JSON, wrong content type, wrong plaintext, truncated key) | 200 with the damage |

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::{Buf, Bytes};
use chrono::{DateTime, Utc};
use contracts::clock::Stopwatch;
use contracts::envelope;
use contracts::error::ByokErrorCode;
use contracts::wire::byok::{
    AccessToken, AuthResponse, DecryptKeyRequest, DecryptKeyResponse,
    GRANT_TYPE_CLIENT_CREDENTIALS, HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID,
    PlaintextKey, RotateKeyRequest, RotateKeyResponse, RotatedKey, TOKEN_TYPE_BEARER,
};
use futures_util::Stream;
use serde::Serialize;
use warp::http::header::HeaderMap;
use warp::http::{Method, StatusCode};
use warp::reply::Response;
use warp::{Filter, Rejection};
use zeroize::Zeroizing;

use super::mutated;
use super::{
    authorization, bytes_response, has_content_type, millis, read_body, stamp, valid_uuid,
};
use crate::audit::{self, AuditEntry};
use crate::auth::Caller;
use crate::error::KmsError;
use crate::faults::{ArrivalOutcome, Endpoint, SuccessFault};
use crate::keys::KeyError;
use crate::mutants::{self, Mutant};
use crate::service::KeyService;

const FORM: &str = "application/x-www-form-urlencoded";
const JSON: &str = "application/json";
const MAX_AUDIT_ALIAS: usize = 128;
const MAX_AUDIT_TIMESTAMP: usize = 64;

/// `/{partner}/byok/v1/{auth,decrypt-key,rotate-key}`, any method.
pub(crate) fn filter(
    svc: KeyService,
) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone + Send + Sync + 'static {
    let partner: String = svc.partner().to_owned();
    warp::path(partner)
        .and(warp::path("byok"))
        .and(warp::path("v1"))
        .and(warp::path::param::<String>())
        .and(warp::path::end())
        .and_then(|segment: String| async move {
            Endpoint::from_segment(&segment).ok_or_else(warp::reject::not_found)
        })
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .and(warp::any().map(move || svc.clone()))
        .then(handle)
}

/// Writes the audit entry when the call ends, also when the connection goes away first
/// (then with outcome `NO_RESPONSE`).
struct Pending {
    svc: KeyService,
    entry: Option<AuditEntry>,
    watch: Stopwatch,
}

impl Pending {
    fn entry(&mut self) -> &mut AuditEntry {
        self.entry.as_mut().expect("entry taken only on finish")
    }

    fn finish(&mut self, resp: &Response) {
        if let Some(mut e) = self.entry.take() {
            e.status = Some(resp.status().as_u16());
            e.latency_ms = millis(self.watch.elapsed());
            self.svc.audit().append(e);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(mut e) = self.entry.take() {
            e.outcome = audit::NO_RESPONSE.into();
            e.latency_ms = millis(self.watch.elapsed());
            self.svc.audit().append(e);
        }
    }
}

async fn handle<S, B>(
    endpoint: Endpoint,
    method: Method,
    headers: HeaderMap,
    body: S,
    svc: KeyService,
) -> Response
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let watch = Stopwatch::start();
    let now = svc.now();
    let request_id = valid_uuid(&headers, HEADER_REQUEST_ID);
    let trace_id = valid_uuid(&headers, HEADER_TRACE_ID);
    let entry = AuditEntry {
        seq: 0,
        time: now,
        endpoint,
        method: method.as_str().to_string(),
        request_id: request_id.clone(),
        trace_id: trace_id.clone(),
        request_timestamp: headers
            .get(HEADER_REQUEST_TIMESTAMP)
            .and_then(|v| v.to_str().ok())
            .map(|s| truncate(s, MAX_AUDIT_TIMESTAMP)),
        caller: None,
        caller_kind: None,
        key_alias: None,
        key_version: None,
        outcome: audit::OK.into(),
        status: None,
        latency_ms: 0.0,
        faults: Vec::new(),
        fault_kinds: Vec::new(),
    };
    let mut pending = Pending {
        svc: svc.clone(),
        entry: Some(entry),
        watch,
    };
    let mut resp = match process(&svc, endpoint, &method, &headers, body, now, &mut pending).await {
        Ok(resp) => resp,
        Err(e) => {
            pending.entry().outcome = e.code.as_str().into();
            mutated::error_response(svc.mutants(), &e)
        }
    };
    let request_id = request_id.unwrap_or_else(|| svc.ids().uuid_v4().to_string());
    stamp(&mut resp, &request_id, trace_id.as_deref(), watch.elapsed());
    sensitive(&mut resp, endpoint);
    mutated::strip_headers(svc.mutants(), &mut resp);
    pending.finish(&resp);
    resp
}

async fn process<S, B>(
    svc: &KeyService,
    endpoint: Endpoint,
    method: &Method,
    headers: &HeaderMap,
    body: S,
    now: DateTime<Utc>,
    pending: &mut Pending,
) -> Result<Response, KmsError>
where
    S: Stream<Item = Result<B, warp::Error>> + Send,
    B: Buf,
{
    let m = svc.mutants();
    if method != Method::POST && !m.is_on(Mutant::AnyMethod) {
        return Err(KmsError::new(
            ByokErrorCode::MethodNotAllowed,
            "only POST is allowed on this path",
        ));
    }

    let ticket = svc.hang_ticket();
    let arrival = svc.faults().on_arrival(endpoint, now);
    pending.entry().faults = arrival.fired;
    pending.entry().fault_kinds = arrival.fired_kinds.iter().map(|k| k.to_string()).collect();
    if !arrival.delay.is_zero() {
        tokio::time::sleep(arrival.delay).await;
    }
    match arrival.outcome {
        None => {}
        Some(ArrivalOutcome::Unavailable) => return Err(KmsError::unavailable()),
        Some(ArrivalOutcome::RateLimited(secs)) => return Err(KmsError::rate_limited(secs)),
        Some(ArrivalOutcome::Internal) => {
            return Err(KmsError::new(
                ByokErrorCode::InternalError,
                "internal error",
            ));
        }
        Some(ArrivalOutcome::Hang) => {
            svc.hang(ticket).await;
            return Err(KmsError::unavailable());
        }
    }

    let (mut request_id, trace_id) = {
        let e = pending.entry();
        (e.request_id.clone(), e.trace_id.clone())
    };
    if m.is_on(Mutant::RequestIdOptional) && request_id.is_none() {
        request_id = Some("00000000-0000-4000-8000-000000000000".into());
    }
    if m.is_on(Mutant::TraceIdRequired) && !headers.contains_key(HEADER_TRACE_ID) {
        return Err(KmsError::invalid("x-trace-id header is required"));
    }
    let skew_secs = if m.is_on(Mutant::SkewIgnored) {
        u64::MAX / 1000
    } else {
        svc.config().skew_secs
    };
    check_headers(
        headers,
        request_id.as_deref(),
        trace_id.as_deref(),
        now,
        skew_secs,
        m.is_on(Mutant::FutureTimestampAccepted),
    )?;
    let max_body = if m.is_on(Mutant::NoBodyLimit) {
        64 << 20
    } else {
        svc.config().max_body_bytes
    };
    let body = read_body(headers, body, max_body).await?;

    let answer = match endpoint {
        Endpoint::Auth => auth(svc, headers, &body, now, pending),
        Endpoint::DecryptKey => {
            if m.is_on(Mutant::SlowDecrypt) {
                tokio::time::sleep(mutants::SLOW_DECRYPT).await;
            }
            let answer = decrypt_key(svc, headers, &body, now, pending);
            if answer.is_ok() && m.is_on(Mutant::SmallPool) {
                let guard = m.enter_pool();
                tokio::time::sleep(mutants::SMALL_POOL_HOLD).await;
                if !guard.admitted() {
                    return Err(KmsError::unavailable());
                }
            }
            answer
        }
        Endpoint::RotateKey => rotate_key(svc, headers, &body, now, pending),
    };
    answer.map(|resp| mutated::success_status(m, endpoint, resp))
}

/// Checks the request headers; `request_id` and `trace_id` are their values when valid.
/// `past_only`: a timestamp ahead of the clock is not refused ([`Mutant::FutureTimestampAccepted`]).
fn check_headers(
    headers: &HeaderMap,
    request_id: Option<&str>,
    trace_id: Option<&str>,
    now: DateTime<Utc>,
    skew_secs: u64,
    past_only: bool,
) -> Result<(), KmsError> {
    if request_id.is_none() {
        return Err(KmsError::invalid(
            if headers.contains_key(HEADER_REQUEST_ID) {
                "x-request-id must be a UUID"
            } else {
                "x-request-id header is required"
            },
        ));
    }
    let ts = headers
        .get(HEADER_REQUEST_TIMESTAMP)
        .ok_or_else(|| KmsError::invalid("x-request-timestamp header is required"))?;
    let ts = ts
        .to_str()
        .ok()
        .and_then(|s| DateTime::parse_from_rfc3339(s.trim()).ok())
        .ok_or_else(|| {
            KmsError::invalid("x-request-timestamp must be an ISO 8601 (RFC 3339) date-time")
        })?;
    let ahead_ms = (now - ts.with_timezone(&Utc)).num_milliseconds();
    let skew_ms = if past_only {
        ahead_ms.max(0).unsigned_abs()
    } else {
        ahead_ms.unsigned_abs()
    };
    if skew_ms > skew_secs.saturating_mul(1000) {
        return Err(KmsError::invalid(format!(
            "x-request-timestamp is more than {skew_secs} seconds away from the service clock"
        )));
    }
    if trace_id.is_none() && headers.contains_key(HEADER_TRACE_ID) {
        return Err(KmsError::invalid("x-trace-id must be a UUID"));
    }
    Ok(())
}

fn note_caller(pending: &mut Pending, caller: &Caller) {
    let e = pending.entry();
    e.caller = Some(caller.name().to_string());
    e.caller_kind = Some(caller.kind());
}

fn auth(
    svc: &KeyService,
    headers: &HeaderMap,
    body: &Bytes,
    now: DateTime<Utc>,
    pending: &mut Pending,
) -> Result<Response, KmsError> {
    let m = svc.mutants();
    let caller = mutated::basic(svc, authorization(headers))?;
    note_caller(pending, &caller);
    let form: Vec<(String, String)> =
        if m.is_on(Mutant::JsonAuthBody) && has_content_type(headers, JSON) {
            serde_json::from_slice::<std::collections::BTreeMap<String, String>>(body)
                .map_err(|_| KmsError::invalid("body must be JSON"))?
                .into_iter()
                .collect()
        } else {
            if !has_content_type(headers, FORM) {
                return Err(KmsError::invalid(
                    "content type must be application/x-www-form-urlencoded",
                ));
            }
            serde_urlencoded::from_bytes(body)
                .map_err(|_| KmsError::invalid("body must be form-encoded"))?
        };
    let grants: Vec<&str> = form
        .iter()
        .filter(|(k, _)| k == "grant_type")
        .map(|(_, v)| v.as_str())
        .collect();
    match grants.as_slice() {
        _ if m.is_on(Mutant::AnyGrantType) => {}
        [] => return Err(KmsError::invalid("grant_type is required")),
        [g] if *g == GRANT_TYPE_CLIENT_CREDENTIALS => {}
        [_] => {
            return Err(KmsError::invalid("grant_type must be client_credentials"));
        }
        _ => return Err(KmsError::invalid("grant_type must appear once")),
    }
    let auth = svc.authenticator();
    let (mut access_token, mut expires_in) = auth.issue(caller.name(), now, svc.ids());
    if m.is_on(Mutant::ShortTokenExp) {
        access_token = auth.issue_with_lifetime(caller.name(), now, svc.ids(), expires_in / 2);
    }
    if m.is_on(Mutant::YearLongToken) {
        expires_in = 365 * 86_400;
        access_token = auth.issue_with_lifetime(caller.name(), now, svc.ids(), expires_in);
    }
    if m.is_on(Mutant::FirstTokenForever) {
        access_token = m.first_token(caller.name(), access_token);
    }
    if m.is_on(Mutant::OpaqueToken) {
        access_token = m.opaque_for(access_token, svc.ids().bytes::<16>());
    }
    let access_token = mutated::issued_token(m, access_token);
    if m.is_on(Mutant::ZeroExpiresIn) {
        expires_in = 0;
    }
    let token_type = if m.is_on(Mutant::WrongTokenType) {
        "mac".to_string()
    } else {
        TOKEN_TYPE_BEARER.into()
    };
    let body = AuthResponse {
        data: AccessToken {
            access_token,
            token_type,
            expires_in,
        },
    };
    let fault = success_fault(svc, Endpoint::Auth, now, pending);
    Ok(render_success(m, Endpoint::Auth, &body, fault))
}

fn decrypt_key(
    svc: &KeyService,
    headers: &HeaderMap,
    body: &Bytes,
    now: DateTime<Utc>,
    pending: &mut Pending,
) -> Result<Response, KmsError> {
    let m = svc.mutants();
    let caller = mutated::bearer(svc, authorization(headers), now)?;
    note_caller(pending, &caller);
    if !has_content_type(headers, JSON) && !m.is_on(Mutant::AnyContentType) {
        return Err(KmsError::invalid("content type must be application/json"));
    }
    mutated::missing_alias(m, body)?;
    let req: DecryptKeyRequest = from_json_object(body).map_err(|_| {
        if m.is_on(Mutant::MissingFields500)
            && serde_json::from_slice::<serde_json::Value>(body).is_ok()
        {
            return KmsError::new(ByokErrorCode::InternalError, "internal error");
        }
        KmsError::invalid(
            r#"body must be JSON {"data": {"key_alias": "...", "encrypted_key": "..."}}"#,
        )
    })?;
    let alias = req.data.key_alias;
    pending.entry().key_alias = Some(truncate(&alias, MAX_AUDIT_ALIAS));
    if alias.is_empty() {
        return Err(KmsError::invalid("key_alias must not be empty"));
    }
    let text = mutated::envelope_text(m, &req.data.encrypted_key)?;
    let env = envelope::parse(&text).map_err(KeyError::from)?;
    pending.entry().key_version = Some(env.version());
    let plaintext = mutated::open(m, svc.keys(), &alias, &env)?;
    let plaintext = mutated::decrypted_key(m, &req.data.encrypted_key, plaintext);
    let fault = success_fault(svc, Endpoint::DecryptKey, now, pending);
    let key = damage_key(&plaintext, fault);
    let body = DecryptKeyResponse {
        data: PlaintextKey {
            plaintext_key: STANDARD.encode(&key[..]),
        },
    };
    Ok(render_success(m, Endpoint::DecryptKey, &body, fault))
}

fn rotate_key(
    svc: &KeyService,
    headers: &HeaderMap,
    body: &Bytes,
    now: DateTime<Utc>,
    pending: &mut Pending,
) -> Result<Response, KmsError> {
    let m = svc.mutants();
    let caller = mutated::bearer(svc, authorization(headers), now)?;
    note_caller(pending, &caller);
    let alias = if body.iter().all(u8::is_ascii_whitespace) {
        svc.authenticator()
            .default_alias(&caller)
            .or_else(|| svc.config().fallback_alias())
            .ok_or_else(|| KmsError::invalid("key_alias is required"))?
            .to_string()
    } else {
        if !has_content_type(headers, JSON) {
            return Err(KmsError::invalid("content type must be application/json"));
        }
        let req: RotateKeyRequest = from_json_object(body).map_err(|_| {
            KmsError::invalid(r#"body must be empty or JSON {"data": {"key_alias": "..."}}"#)
        })?;
        req.data.key_alias
    };
    pending.entry().key_alias = Some(truncate(&alias, MAX_AUDIT_ALIAS));
    if alias.is_empty() {
        return Err(KmsError::invalid("key_alias must not be empty"));
    }
    if m.is_on(Mutant::RotateForgetsOldKeys) {
        let info = svc.keys().rotate(&alias, now)?;
        svc.keys().set_min_version(&alias, info.current_version)?;
    }
    let wrapped = if m.is_on(Mutant::NonceFromKey) {
        svc.new_data_key_sealed_by_itself(&alias)?
    } else {
        svc.new_data_key(&alias)?
    };
    pending.entry().key_version = Some(wrapped.key_version);
    let (encrypted_dek, plaintext) = if m.is_on(Mutant::RotateSameKey) {
        m.first_rotated(
            &alias,
            (wrapped.encrypted_key.clone(), wrapped.plaintext.clone()),
        )
    } else {
        (wrapped.encrypted_key.clone(), wrapped.plaintext.clone())
    };
    let fault = success_fault(svc, Endpoint::RotateKey, now, pending);
    let key = damage_key(&plaintext[..], fault);
    let key_alias = if m.is_on(Mutant::RotateWrongAlias) {
        format!("{}-previous", wrapped.key_alias)
    } else {
        wrapped.key_alias.clone()
    };
    let body = RotateKeyResponse {
        data: RotatedKey {
            encrypted_dek,
            key_alias,
            plaintext_dek: STANDARD.encode(&key[..]),
        },
    };
    Ok(render_success(m, Endpoint::RotateKey, &body, fault))
}

fn success_fault(
    svc: &KeyService,
    endpoint: Endpoint,
    now: DateTime<Utc>,
    pending: &mut Pending,
) -> Option<SuccessFault> {
    let (fault, id, kind) = svc.faults().on_success(endpoint, now)?;
    let entry = pending.entry();
    entry.faults.push(id);
    entry.fault_kinds.push(kind.to_string());
    Some(fault)
}

/// The data key as the answer carries it: itself, one bit flipped, or cut short.
fn damage_key(key: &[u8], fault: Option<SuccessFault>) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(key.to_vec());
    match fault {
        Some(SuccessFault::WrongPlaintext { bit }) if !out.is_empty() => {
            let bit = usize::from(bit) % (out.len() * 8);
            out[bit / 8] ^= 1 << (bit % 8);
        }
        Some(SuccessFault::TruncatedKey { len }) => out.truncate(len),
        _ => {}
    }
    out
}

/// A 200 answer of `body`, bent by the mutants of its fields, damaged as a success fault
/// says.
fn render_success(
    m: &mutants::Mutants,
    endpoint: Endpoint,
    body: &impl Serialize,
    fault: Option<SuccessFault>,
) -> Response {
    match mutated::success_body(m, endpoint, body) {
        Some(bent) => render(&bent, fault),
        None => render(body, fault),
    }
}

/// A 200 answer, damaged as a success fault says.
fn render(body: &impl Serialize, fault: Option<SuccessFault>) -> Response {
    let mut bytes = serde_json::to_vec(body).expect("wire types serialise");
    let mut content_type = JSON;
    match fault {
        Some(SuccessFault::MalformedJson) => bytes.truncate(bytes.len() / 2),
        Some(SuccessFault::WrongContentType) => content_type = "text/html; charset=utf-8",
        _ => {}
    }
    bytes_response(StatusCode::OK, bytes, content_type)
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The headers of answers that may hold a token or a key: `Cache-Control: no-store` on every
/// one (RFC 6749 section 5.1), and on a 401 the scheme the endpoint takes
/// (`WWW-Authenticate`, RFC 9110 section 11.6.1).
fn sensitive(resp: &mut Response, endpoint: Endpoint) {
    use warp::http::header::{CACHE_CONTROL, HeaderValue, WWW_AUTHENTICATE};
    let status = resp.status();
    let h = resp.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if status == StatusCode::UNAUTHORIZED {
        let scheme = match endpoint {
            Endpoint::Auth => "Basic realm=\"byok\"",
            _ => "Bearer realm=\"byok\"",
        };
        h.insert(WWW_AUTHENTICATE, HeaderValue::from_static(scheme));
    }
}

/// A request body read strictly: `T`'s objects must be JSON objects. serde reads a struct
/// from an array of its fields in order too (`{"data": ["tenant-a", "byok:v1:..."]}`), which
/// the contract does not allow.
fn from_json_object<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ()> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|_| ())?;
    if !v.is_object() || !v.get("data").is_some_and(serde_json::Value::is_object) {
        return Err(());
    }
    serde_json::from_value(v).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damage() {
        let key = [0u8; 32];
        let flipped = damage_key(&key, Some(SuccessFault::WrongPlaintext { bit: 9 }));
        assert_eq!(flipped[1], 0b10);
        assert_eq!(flipped.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
        assert_eq!(
            damage_key(&key, Some(SuccessFault::TruncatedKey { len: 16 })).len(),
            16
        );
        assert_eq!(&damage_key(&key, None)[..], &key);
    }

    #[test]
    fn truncate_respects_characters() {
        assert_eq!(truncate("abc", 2), "ab");
        assert_eq!(truncate("aé", 2), "a");
        assert_eq!(truncate("ab", 5), "ab");
    }
}
