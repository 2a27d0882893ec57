//! BYOK ("bring your own key"): the platform's client of the customer's key service.
//!
//! A workspace configured for BYOK ([`crate::config::ByokConfig`]) gets a [`ByokKeyService`]
//! behind the [`DataKeySource`] trait; the [`crate::keys::DataKeyRing`] asks it for the workspace's
//! data keys and caches them. It calls the three customer-hosted endpoints:
//!
//! | Call | When | Sent |
//! |---|---|---|
//! | `POST {customer_base_url}/{partner}/byok/v1/auth` | client credentials only, when no unexpired token is cached | HTTP Basic (client id, secret); form `grant_type=client_credentials` |
//! | `POST .../decrypt-key` | a data key is not cached (cold or expired cache) | `Authorization: Bearer`; `{"data": {"key_alias", "encrypted_key"}}` |
//! | `POST .../rotate-key` | rotation (admin route or rotation period) | `Authorization: Bearer`; `{"data": {"key_alias"}}` |
//!
//! Every call carries `x-request-id` (a fresh UUIDv4), `x-request-timestamp` (RFC 3339, the
//! injected clock) and `x-trace-id` (the API request's `x-trace-id` when it is a UUID, else a
//! fresh UUID per operation). A call has the configured timeout (wall clock) and follows no
//! redirect.
//!
//! Tokens: the token from `/auth` is cached and reused until `expires_in` less a margin
//! ([`token_margin`](token::token_margin)) has passed on the injected clock; concurrent
//! callers share one `/auth` call. A `401` from `decrypt-key` or `rotate-key` makes the
//! client forget the token, fetch a new one and retry once; a second `401` is a refusal.
//! With a static API key, `/auth` is never called and a `401` is a refusal at once.
//!
//! Failures map onto [`KeyServiceError`]: no answer (connection, timeout), `5xx`, `408`,
//! `429`, and answers that cannot be used (not JSON, another content type, a field missing
//! or of the wrong type, a plaintext that is not standard base64 of exactly 32 bytes) are
//! [`KeyServiceError::Unavailable`] (transient: the platform waits and tries again), with a
//! message naming the field and its problem (`shape`); other `4xx` answers are
//! [`KeyServiceError::Refused`],
//! with a message naming the endpoint, status and code and saying what to check. Messages
//! never carry a secret, token or key: the service's own message is quoted only after
//! configured secrets and anything shaped like a JWT are masked.
//!
//! Plaintext keys and tokens live in `Zeroizing` buffers; answers are read into one.
//!
//! - [`http`]: one call, its headers and timeout, its answer.
//! - [`token`]: the bearer token, its cache and the retry on a `401`.
//! - `error`: why a call failed, and the key service's text made safe to quote.
//! - [`failure`]: a failed call as a [`KeyServiceError`], with scrubbed messages.
//! - [`reasons`]: why each call was made (a cold start, an expired key or token, a
//!   rotation), by its `x-request-id`, for the live page.
//! - `shape`: the fields of each successful answer, to name what is wrong with one.
//! - The settings of a workspace's BYOK are [`crate::config::ByokConfig`].

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use chrono::Duration;
use contracts::clock::SharedClock;
use contracts::ids::IdGen;
use contracts::wire::byok::{DecryptKeyData, DecryptKeyRequest, RotateKeyData, RotateKeyRequest};
use serde::Deserialize;
use zeroize::Zeroizing;

use crate::config::{BYOK_KEY_PREFIX, ByokAuth, ByokConfig};
use crate::keys::{DataKeySource, KeyCallReason, KeyFuture, KeyServiceError};
use crate::store::WorkspaceRef;

mod error;
pub(crate) mod failure;
pub(crate) mod http;
pub(crate) mod reasons;
mod shape;
pub(crate) mod token;

use error::clean;
use http::SecretText;
use reasons::CallReasons;
use token::{Auth, TokenSlot};

/// The `x-trace-id` to send: the API request's when it is a UUID (in its hyphenated
/// lower-case form), else a fresh one.
pub(crate) fn trace_id(from_request: Option<&str>, ids: &IdGen) -> String {
    from_request
        .and_then(|t| uuid::Uuid::try_parse(t.trim()).ok())
        .unwrap_or_else(|| ids.uuid_v4())
        .hyphenated()
        .to_string()
}

pub(crate) use contracts::wire::byok::Endpoint;

/// A workspace's data keys through the customer's key service (BYOK).
pub struct ByokKeyService {
    ws: WorkspaceRef,
    key_alias: String,
    encrypted_key: String,
    auth: Auth,
    base_url: String,
    partner: String,
    http: reqwest::Client,
    clock: SharedClock,
    ids: Arc<IdGen>,
    cache_lifetime: Duration,
    timeout: std::time::Duration,
    rotation_period: Option<Duration>,
    token: tokio::sync::Mutex<TokenSlot>,
    /// Where each call's reason is recorded.
    reasons: Arc<CallReasons>,
}

impl fmt::Debug for ByokKeyService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByokKeyService")
            .field("workspace", &self.ws)
            .field("base_url", &self.base_url)
            .field("partner", &self.partner)
            .field("key_alias", &self.key_alias)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct DecryptAnswer {
    data: DecryptAnswerData,
}

#[derive(Deserialize)]
struct DecryptAnswerData {
    plaintext_key: SecretText,
}

#[derive(Deserialize)]
struct RotateAnswer {
    data: RotateAnswerData,
}

#[derive(Deserialize)]
struct RotateAnswerData {
    encrypted_dek: String,
    key_alias: String,
    plaintext_dek: SecretText,
}

impl ByokKeyService {
    /// The key service of one configured workspace, on the platform's clock and ids; the
    /// reason of each call goes to `reasons`.
    pub(crate) fn new(
        config: &ByokConfig,
        clock: SharedClock,
        ids: Arc<IdGen>,
        reasons: Arc<CallReasons>,
    ) -> Result<ByokKeyService, String> {
        config.validate()?;
        let auth = match config.auth()? {
            ByokAuth::ClientCredentials {
                client_id,
                client_secret,
            } => Auth::ClientCredentials {
                client_id: client_id.to_string(),
                client_secret: client_secret.clone(),
            },
            ByokAuth::ApiKey(key) => Auth::ApiKey(key.clone()),
        };
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!(
                "voice-agent-platform/",
                env!("CARGO_PKG_VERSION"),
                " byok"
            ))
            .build()
            .map_err(|e| format!("byok for {}: HTTP client: {e}", config.workspace()))?;
        Ok(ByokKeyService {
            ws: config.workspace(),
            key_alias: config.key_alias.clone(),
            encrypted_key: config.encrypted_key.clone(),
            auth,
            base_url: config.base_url()?,
            partner: config.partner.clone(),
            http,
            clock,
            ids,
            cache_lifetime: Duration::seconds(config.data_key_cache_secs as i64),
            timeout: std::time::Duration::from_millis(config.request_timeout_ms),
            rotation_period: config
                .rotation_period_secs
                .map(|s| Duration::seconds(s as i64)),
            token: tokio::sync::Mutex::new(TokenSlot::default()),
            reasons,
        })
    }

    /// The full URL of an endpoint.
    pub(crate) fn url(&self, endpoint: Endpoint) -> String {
        format!("{}{}", self.base_url, endpoint.path(&self.partner))
    }

    /// Decrypts `encrypted_key` of `alias` into the 32-byte data key.
    pub(crate) async fn decrypt_key(
        &self,
        alias: &str,
        encrypted_key: &str,
        trace: &str,
        reason: KeyCallReason,
    ) -> Result<Zeroizing<[u8; 32]>, KeyServiceError> {
        if !encrypted_key.starts_with(BYOK_KEY_PREFIX) {
            return Err(KeyServiceError::Refused(format!(
                "the encrypted data key does not start with '{BYOK_KEY_PREFIX}'"
            )));
        }
        let body = serde_json::to_vec(&DecryptKeyRequest {
            data: DecryptKeyData {
                key_alias: alias.to_string(),
                encrypted_key: encrypted_key.to_string(),
            },
        })
        .expect("wire types serialise");
        let answer = self
            .with_bearer(Endpoint::DecryptKey, trace, alias, &body, reason)
            .await?;
        let parsed: DecryptAnswer = self.json(Endpoint::DecryptKey, &answer, &shape::DECRYPT)?;
        key_from_base64(&parsed.data.plaintext_key.0).map_err(|why| {
            KeyServiceError::Unavailable(format!(
                "decrypt-key answered a plaintext_key that {why}; not used"
            ))
        })
    }

    /// Asks for a new data key under the configured alias: its alias, encrypted form and
    /// plaintext.
    pub(crate) async fn rotate_key(
        &self,
        trace: &str,
        reason: KeyCallReason,
    ) -> Result<(String, String, Zeroizing<[u8; 32]>), KeyServiceError> {
        let body = serde_json::to_vec(&RotateKeyRequest {
            data: RotateKeyData {
                key_alias: self.key_alias.clone(),
            },
        })
        .expect("wire types serialise");
        let answer = self
            .with_bearer(Endpoint::RotateKey, trace, &self.key_alias, &body, reason)
            .await?;
        let parsed: RotateAnswer = self.json(Endpoint::RotateKey, &answer, &shape::ROTATE)?;
        let data = parsed.data;
        if data.key_alias != self.key_alias {
            return Err(KeyServiceError::Refused(format!(
                "rotate-key answered a data key under alias '{}', not the configured alias '{}'; not adopted (check key_alias)",
                clean(&data.key_alias),
                self.key_alias
            )));
        }
        if !data.encrypted_dek.starts_with(BYOK_KEY_PREFIX)
            || data.encrypted_dek.len() == BYOK_KEY_PREFIX.len()
        {
            return Err(KeyServiceError::Unavailable(format!(
                "rotate-key answered an encrypted_dek that does not start with '{BYOK_KEY_PREFIX}'; not adopted"
            )));
        }
        let key = key_from_base64(&data.plaintext_dek.0).map_err(|why| {
            KeyServiceError::Unavailable(format!(
                "rotate-key answered a plaintext_dek that {why}; not adopted"
            ))
        })?;
        Ok((data.key_alias, data.encrypted_dek, key))
    }
}

/// Base64 (standard alphabet, padding optional) of exactly 32 bytes, decoded into a buffer
/// that is zeroed; `Err` says what is wrong without quoting the text.
fn key_from_base64(text: &str) -> Result<Zeroizing<[u8; 32]>, String> {
    const ENGINE: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let mut buf = Zeroizing::new([0u8; 48]);
    let n = ENGINE
        .decode_slice(text, &mut buf[..])
        .map_err(|e| match e {
            base64::DecodeSliceError::OutputSliceTooSmall => "is longer than 32 bytes".to_string(),
            base64::DecodeSliceError::DecodeError(_) => shape::why_not_base64(text).to_string(),
        })?;
    if n != 32 {
        return Err(format!("is {n} bytes, not 32"));
    }
    let mut key = Zeroizing::new([0u8; 32]);
    key.copy_from_slice(&buf[..32]);
    Ok(key)
}

impl DataKeySource for ByokKeyService {
    fn provider(&self) -> &'static str {
        "byok"
    }

    fn configured_key(&self, _ws: &WorkspaceRef) -> Option<(String, String)> {
        Some((self.key_alias.clone(), self.encrypted_key.clone()))
    }

    fn decrypt<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
        reason: KeyCallReason,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>> {
        Box::pin(async move {
            let trace = self::trace_id(trace_id, &self.ids);
            self.decrypt_key(alias, encrypted_key, &trace, reason).await
        })
    }

    fn generate<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
        reason: KeyCallReason,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)> {
        Box::pin(async move {
            let trace = self::trace_id(trace_id, &self.ids);
            self.rotate_key(&trace, reason).await
        })
    }

    fn cache_lifetime(&self) -> Duration {
        self.cache_lifetime
    }

    fn rotation_period(&self) -> Option<Duration> {
        self.rotation_period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_are_carried_only_when_they_are_uuids() {
        let ids = IdGen::seeded(1);
        let given = "7E57D00D-0000-4000-8000-000000000001";
        assert_eq!(
            trace_id(Some(given), &ids),
            "7e57d00d-0000-4000-8000-000000000001"
        );
        let fresh = trace_id(Some("not-a-uuid"), &ids);
        assert!(uuid::Uuid::try_parse(&fresh).is_ok());
        assert_ne!(fresh, trace_id(None, &ids), "fresh each time");
    }

    #[test]
    fn keys_must_be_base64_of_32_bytes() {
        use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
        let key = [0x42u8; 32];
        assert_eq!(*key_from_base64(&STANDARD.encode(key)).unwrap(), key);
        assert_eq!(*key_from_base64(&STANDARD_NO_PAD.encode(key)).unwrap(), key);
        assert_eq!(
            key_from_base64(&STANDARD.encode([1u8; 16])).unwrap_err(),
            "is 16 bytes, not 32"
        );
        assert_eq!(
            key_from_base64(&STANDARD.encode([1u8; 33])).unwrap_err(),
            "is 33 bytes, not 32"
        );
        assert_eq!(
            key_from_base64(&STANDARD.encode([1u8; 64])).unwrap_err(),
            "is longer than 32 bytes"
        );
        assert_eq!(key_from_base64("not base64!").unwrap_err(), "is not base64");
        let url_safe = base64::engine::general_purpose::URL_SAFE.encode([0xfbu8; 32]);
        assert!(
            key_from_base64(&url_safe)
                .unwrap_err()
                .starts_with("is URL-safe base64 (with - or _) where the interface uses standard")
        );
        assert_eq!(key_from_base64("").unwrap_err(), "is 0 bytes, not 32");
    }
}
