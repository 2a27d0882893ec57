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
//! ([`token_margin`]) has passed on the injected clock; concurrent callers share one `/auth`
//! call. A `401` from `decrypt-key` or `rotate-key` makes the client forget the token, fetch
//! a new one and retry once; a second `401` is a refusal. With a static API key, `/auth` is
//! never called and a `401` is a refusal at once.
//!
//! Failures map onto [`KeyServiceError`]: no answer (connection, timeout), `5xx`, `408`,
//! `429`, and answers that cannot be used (not JSON, another content type, a plaintext that
//! is not base64 of exactly 32 bytes) are [`KeyServiceError::Unavailable`] (transient: the
//! platform waits and tries again); other `4xx` answers are [`KeyServiceError::Refused`],
//! with a message naming the endpoint, status and code and saying what to check. Messages
//! never carry a secret, token or key: the service's own message is quoted only after
//! configured secrets and anything shaped like a JWT are masked.
//!
//! Plaintext keys and tokens live in `Zeroizing` buffers; answers are read into one.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use chrono::{DateTime, Duration, Utc};
use contracts::clock::{SharedClock, Stopwatch, format_instant};
use contracts::ids::IdGen;
use contracts::wire::byok::{
    DecryptKeyData, DecryptKeyRequest, GRANT_TYPE_CLIENT_CREDENTIALS, HEADER_REQUEST_ID,
    HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID, RotateKeyData, RotateKeyRequest, TOKEN_TYPE_BEARER,
    auth_path, decrypt_key_path, rotate_key_path,
};
use serde::Deserialize;
use zeroize::Zeroizing;

use crate::config::{BYOK_KEY_PREFIX, ByokAuth, ByokConfig, Secret};
use crate::keys::{DataKeySource, KeyFuture, KeyServiceError};
use crate::store::WorkspaceRef;

/// The largest answer read from the key service; a larger one is unusable.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The longest a token is reused before its `expires_in` ends: see [`token_margin`].
pub const TOKEN_MARGIN_SECS: u64 = 30;
/// At most this many characters of the key service's own error message are quoted.
const MAX_QUOTED: usize = 200;

/// How long before its end a token is no longer used: 30 s, or a tenth of the lifetime for
/// tokens shorter than five minutes (so a 60 s token is used for 54 s).
pub fn token_margin(expires_in: u64) -> Duration {
    Duration::seconds(TOKEN_MARGIN_SECS.min(expires_in / 10) as i64)
}

/// The `x-trace-id` to send: the API request's when it is a UUID (in its hyphenated
/// lower-case form), else a fresh one.
pub fn trace_id(from_request: Option<&str>, ids: &IdGen) -> String {
    from_request
        .and_then(|t| uuid::Uuid::try_parse(t.trim()).ok())
        .unwrap_or_else(|| ids.uuid_v4())
        .hyphenated()
        .to_string()
}

/// The three customer-hosted endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/auth`.
    Auth,
    /// `/decrypt-key`.
    DecryptKey,
    /// `/rotate-key`.
    RotateKey,
}

impl Endpoint {
    /// The last path segment.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Auth => "auth",
            Endpoint::DecryptKey => "decrypt-key",
            Endpoint::RotateKey => "rotate-key",
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

enum Auth {
    ClientCredentials {
        client_id: String,
        client_secret: Secret,
    },
    ApiKey(Secret),
}

struct Token {
    value: Zeroizing<String>,
    /// The token is not used from this instant on (its expiry less the margin).
    refresh_at: DateTime<Utc>,
}

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
    token: tokio::sync::Mutex<Option<Token>>,
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

/// What a call got back.
struct Answer {
    status: u16,
    content_type: Option<String>,
    body: Zeroizing<Vec<u8>>,
}

/// Why a call did not succeed.
enum CallError {
    /// No usable answer: connection refused, timeout, cut-off or oversized body.
    Transport(String),
    /// An answer with a status other than 2xx.
    Status {
        status: u16,
        code: Option<String>,
        message: Option<String>,
        retry_after: Option<String>,
    },
}

/// How a request authenticates.
enum Credentials<'a> {
    Basic { id: &'a str, secret: &'a str },
    Bearer(&'a str),
}

/// A string that is zeroed when dropped, read from JSON.
struct SecretText(Zeroizing<String>);

impl<'de> Deserialize<'de> for SecretText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| SecretText(Zeroizing::new(s)))
    }
}

#[derive(Deserialize)]
struct AuthAnswer {
    data: AuthAnswerData,
}

#[derive(Deserialize)]
struct AuthAnswerData {
    access_token: SecretText,
    token_type: String,
    expires_in: u64,
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

#[derive(Deserialize)]
struct ErrorAnswer {
    error: ErrorAnswerInfo,
}

#[derive(Deserialize)]
struct ErrorAnswerInfo {
    code: Option<String>,
    message: Option<String>,
}

impl ByokKeyService {
    /// The key service of one configured workspace, on the platform's clock and ids.
    pub fn new(
        config: &ByokConfig,
        clock: SharedClock,
        ids: Arc<IdGen>,
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
            token: tokio::sync::Mutex::new(None),
        })
    }

    /// The workspace it serves.
    pub fn workspace(&self) -> &WorkspaceRef {
        &self.ws
    }

    /// The full URL of an endpoint.
    pub fn url(&self, endpoint: Endpoint) -> String {
        let path = match endpoint {
            Endpoint::Auth => auth_path(&self.partner),
            Endpoint::DecryptKey => decrypt_key_path(&self.partner),
            Endpoint::RotateKey => rotate_key_path(&self.partner),
        };
        format!("{}{path}", self.base_url)
    }

    /// Decrypts `encrypted_key` of `alias` into the 32-byte data key.
    pub async fn decrypt_key(
        &self,
        alias: &str,
        encrypted_key: &str,
        trace: &str,
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
            .with_bearer(Endpoint::DecryptKey, trace, alias, &body)
            .await?;
        let parsed: DecryptAnswer = self.json(
            Endpoint::DecryptKey,
            &answer,
            "{\"data\": {\"plaintext_key\"}}",
        )?;
        key_from_base64(&parsed.data.plaintext_key.0).map_err(|why| {
            KeyServiceError::Unavailable(format!(
                "decrypt-key answered a plaintext_key that {why}; not used"
            ))
        })
    }

    /// Asks for a new data key under the configured alias: its alias, encrypted form and
    /// plaintext.
    pub async fn rotate_key(
        &self,
        trace: &str,
    ) -> Result<(String, String, Zeroizing<[u8; 32]>), KeyServiceError> {
        let body = serde_json::to_vec(&RotateKeyRequest {
            data: RotateKeyData {
                key_alias: self.key_alias.clone(),
            },
        })
        .expect("wire types serialise");
        let answer = self
            .with_bearer(Endpoint::RotateKey, trace, &self.key_alias, &body)
            .await?;
        let parsed: RotateAnswer = self.json(
            Endpoint::RotateKey,
            &answer,
            "{\"data\": {\"encrypted_dek\", \"key_alias\", \"plaintext_dek\"}}",
        )?;
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

    /// Sends a call that needs a bearer token; on a 401 with client credentials, forgets the
    /// token, fetches a new one and retries once.
    async fn with_bearer(
        &self,
        endpoint: Endpoint,
        trace: &str,
        alias: &str,
        body: &[u8],
    ) -> Result<Answer, KeyServiceError> {
        let token = self.bearer(trace).await?;
        let first = self
            .send(endpoint, trace, Credentials::Bearer(&token), body, false)
            .await;
        match first {
            Err(CallError::Status { status: 401, .. })
                if matches!(self.auth, Auth::ClientCredentials { .. }) =>
            {
                tracing::info!(workspace = %self.ws, %endpoint, "token refused; fetching a new one and retrying once");
                self.forget_token(&token).await;
                let fresh = self.bearer(trace).await?;
                match self
                    .send(endpoint, trace, Credentials::Bearer(&fresh), body, false)
                    .await
                {
                    Ok(answer) => Ok(answer),
                    Err(CallError::Status {
                        status: 401,
                        code,
                        message,
                        ..
                    }) => Err(KeyServiceError::Refused(format!(
                        "{} twice: the key service refused a token it had just issued to {} (check the client's rights at the key service)",
                        self.head(endpoint, 401, code.as_deref(), message.as_deref()),
                        self.describe_auth()
                    ))),
                    Err(e) => Err(self.failure(endpoint, e, alias)),
                }
            }
            Ok(answer) => Ok(answer),
            Err(e) => Err(self.failure(endpoint, e, alias)),
        }
    }

    /// The bearer token: the static key, or the cached token, or a new one from `/auth`.
    async fn bearer(&self, trace: &str) -> Result<Zeroizing<String>, KeyServiceError> {
        let (client_id, client_secret) = match &self.auth {
            Auth::ApiKey(key) => return Ok(Zeroizing::new(key.expose().to_string())),
            Auth::ClientCredentials {
                client_id,
                client_secret,
            } => (client_id, client_secret),
        };
        // Held across the call: concurrent callers wait for this one /auth.
        let mut slot = self.token.lock().await;
        let now = self.clock.now();
        if let Some(t) = slot.as_ref()
            && t.refresh_at > now
        {
            return Ok(t.value.clone());
        }
        *slot = None;
        let form = format!("grant_type={GRANT_TYPE_CLIENT_CREDENTIALS}");
        let answer = self
            .send(
                Endpoint::Auth,
                trace,
                Credentials::Basic {
                    id: client_id,
                    secret: client_secret.expose(),
                },
                form.as_bytes(),
                true,
            )
            .await
            .map_err(|e| self.failure(Endpoint::Auth, e, &self.key_alias))?;
        let parsed: AuthAnswer = self.json(
            Endpoint::Auth,
            &answer,
            "{\"data\": {\"access_token\", \"token_type\", \"expires_in\"}}",
        )?;
        let data = parsed.data;
        if data.access_token.0.is_empty() {
            return Err(KeyServiceError::Unavailable(
                "auth answered an empty access_token".into(),
            ));
        }
        if !data.token_type.eq_ignore_ascii_case(TOKEN_TYPE_BEARER) {
            return Err(KeyServiceError::Unavailable(format!(
                "auth answered token_type '{}', not '{TOKEN_TYPE_BEARER}'",
                clean(&data.token_type)
            )));
        }
        // Measured from before the call was sent, so the token is never used past its end.
        let lifetime = Duration::seconds(data.expires_in.min(i64::MAX as u64 / 1000) as i64);
        let refresh_at = now + lifetime - token_margin(data.expires_in);
        let value = data.access_token.0;
        tracing::debug!(workspace = %self.ws, expires_in = data.expires_in, "token issued");
        if refresh_at > now {
            *slot = Some(Token {
                value: value.clone(),
                refresh_at,
            });
        }
        Ok(value)
    }

    /// Forgets the cached token when it is still the one that was refused.
    async fn forget_token(&self, refused: &str) {
        let mut slot = self.token.lock().await;
        if slot.as_ref().is_some_and(|t| t.value.as_str() == refused) {
            *slot = None;
        }
    }

    /// One HTTP call with the headers every call carries.
    async fn send(
        &self,
        endpoint: Endpoint,
        trace: &str,
        credentials: Credentials<'_>,
        body: &[u8],
        form: bool,
    ) -> Result<Answer, CallError> {
        let request_id = self.ids.uuid_v4().hyphenated().to_string();
        let mut req = self
            .http
            .post(self.url(endpoint))
            .timeout(self.timeout)
            .header(HEADER_REQUEST_ID, &request_id)
            .header(HEADER_REQUEST_TIMESTAMP, format_instant(self.clock.now()))
            .header(HEADER_TRACE_ID, trace)
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                if form {
                    "application/x-www-form-urlencoded"
                } else {
                    "application/json"
                },
            )
            .body(body.to_vec());
        req = match credentials {
            Credentials::Basic { id, secret } => req.basic_auth(id, Some(secret)),
            Credentials::Bearer(token) => req.bearer_auth(token),
        };
        let watch = Stopwatch::start();
        let result = self.exchange(req).await;
        let outcome = match &result {
            Ok(a) => a.status.to_string(),
            Err(CallError::Status { status, .. }) => status.to_string(),
            Err(CallError::Transport(m)) => m.clone(),
        };
        tracing::debug!(
            workspace = %self.ws, %endpoint, %request_id, trace_id = trace,
            elapsed_ms = watch.elapsed_ms(), %outcome, "key service call"
        );
        result
    }

    async fn exchange(&self, req: reqwest::RequestBuilder) -> Result<Answer, CallError> {
        let mut resp = req.send().await.map_err(|e| self.transport(&e))?;
        let status = resp.status().as_u16();
        let header = |name| {
            resp.headers()
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let retry_after = header(reqwest::header::RETRY_AFTER);
        // Allocated once at full size, so the buffer never moves (which would leave an
        // unzeroed copy of a key behind).
        let mut body = Zeroizing::new(Vec::with_capacity(MAX_ANSWER_BYTES));
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport(&e))? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(CallError::Transport(format!(
                    "the answer is larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if (200..300).contains(&status) {
            return Ok(Answer {
                status,
                content_type,
                body,
            });
        }
        let (code, message) = match serde_json::from_slice::<ErrorAnswer>(&body) {
            Ok(e) => (e.error.code, e.error.message),
            Err(_) => (None, None),
        };
        Err(CallError::Status {
            status,
            code,
            message,
            retry_after,
        })
    }

    fn transport(&self, e: &reqwest::Error) -> CallError {
        CallError::Transport(if e.is_timeout() {
            format!("no answer within {} ms", self.timeout.as_millis())
        } else if e.is_connect() {
            "could not connect".to_string()
        } else if e.is_body() || e.is_decode() {
            "the answer was cut off".to_string()
        } else {
            e.to_string()
        })
    }

    /// A successful answer read as JSON of type `T`; anything else is unusable.
    fn json<T: serde::de::DeserializeOwned>(
        &self,
        endpoint: Endpoint,
        answer: &Answer,
        shape: &str,
    ) -> Result<T, KeyServiceError> {
        let ct = answer.content_type.as_deref().unwrap_or("");
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(KeyServiceError::Unavailable(format!(
                "{endpoint} answered {} with content type '{}', not JSON",
                answer.status,
                clean(ct)
            )));
        }
        // The parser's own message is not quoted: it could hold part of a key.
        serde_json::from_slice(&answer.body).map_err(|e| {
            KeyServiceError::Unavailable(match e.classify() {
                serde_json::error::Category::Data => {
                    format!(
                        "{endpoint} answered {} with JSON that is not {shape}",
                        answer.status
                    )
                }
                _ => format!(
                    "{endpoint} answered {} with a body that is not JSON",
                    answer.status
                ),
            })
        })
    }

    /// `decrypt-key answered 404 KEY_NOT_FOUND ("...")`.
    fn head(
        &self,
        endpoint: Endpoint,
        status: u16,
        code: Option<&str>,
        message: Option<&str>,
    ) -> String {
        let code = code
            .map(clean)
            .unwrap_or_else(|| "without an error code".into());
        let said = message
            .map(|m| format!(" (\"{}\")", self.scrub(m)))
            .unwrap_or_default();
        format!("{endpoint} answered {status} {code}{said}")
    }

    fn describe_auth(&self) -> String {
        match &self.auth {
            Auth::ClientCredentials { client_id, .. } => format!("client '{client_id}'"),
            Auth::ApiKey(_) => "the static API key".into(),
        }
    }

    /// A failed call as a key-service error: outages are transient, refusals are not.
    fn failure(&self, endpoint: Endpoint, e: CallError, alias: &str) -> KeyServiceError {
        let (status, code, message, retry_after) = match e {
            CallError::Transport(m) => {
                return KeyServiceError::Unavailable(format!(
                    "{endpoint} at {}: {m}",
                    self.url(endpoint)
                ));
            }
            CallError::Status {
                status,
                code,
                message,
                retry_after,
            } => (status, code, message, retry_after),
        };
        let head = self.head(endpoint, status, code.as_deref(), message.as_deref());
        match (status, code.as_deref()) {
            (429, _) => KeyServiceError::Unavailable(match retry_after {
                Some(r) => format!("{head}: rate limited, retry after {} s", clean(&r)),
                None => format!("{head}: rate limited"),
            }),
            (408 | 500..=599, _) => KeyServiceError::Unavailable(head),
            (401, _) if endpoint == Endpoint::Auth => KeyServiceError::Refused(format!(
                "{head}: the key service refused the client credentials of {} (check client_id and client_secret)",
                self.describe_auth()
            )),
            (401, _) => KeyServiceError::Refused(format!(
                "{head}: the key service refused {} (check api_key)",
                self.describe_auth()
            )),
            (_, Some("KEY_NOT_FOUND")) => KeyServiceError::Refused(format!(
                "{head}: the key service has no master key under alias '{alias}' (check key_alias)"
            )),
            (_, Some("KEY_DISABLED")) => KeyServiceError::Refused(format!(
                "{head}: the master key '{alias}' is disabled at the key service"
            )),
            (_, Some("KEY_REVOKED")) => KeyServiceError::Refused(format!(
                "{head}: the master key '{alias}' was revoked at the key service"
            )),
            (_, Some("DECRYPTION_FAILED")) => KeyServiceError::Refused(format!(
                "{head}: the encrypted data key does not decrypt under alias '{alias}'; it was made under another alias (check key_alias against encrypted_key), with a master-key version the key service no longer allows, or it is damaged"
            )),
            (404, _) => KeyServiceError::Refused(format!(
                "{head}: no such endpoint at {} (check customer_base_url and partner)",
                self.url(endpoint)
            )),
            (300..=399, _) => KeyServiceError::Refused(format!(
                "{head}: redirects are not followed (check customer_base_url)"
            )),
            _ => KeyServiceError::Refused(format!("{head}: the key service refused the request")),
        }
    }

    /// The key service's own message, cut short, without control characters, and with the
    /// configured secrets and anything shaped like a JWT masked.
    fn scrub(&self, message: &str) -> String {
        let mut s = clean(message);
        let secret = match &self.auth {
            Auth::ClientCredentials { client_secret, .. } => client_secret.expose(),
            Auth::ApiKey(key) => key.expose(),
        };
        if !secret.is_empty() {
            s = s.replace(secret, "***");
        }
        s.split(' ')
            .map(|w| if looks_like_jwt(w) { "***" } else { w })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Text from the key service, safe to put in a message: at most [`MAX_QUOTED`] characters,
/// control characters replaced.
fn clean(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_QUOTED)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() > MAX_QUOTED {
        out.push('…');
    }
    out
}

/// Three base64url parts of at least 10 characters joined by dots: the shape of a JWT.
fn looks_like_jwt(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_');
    let parts: Vec<&str> = word.split('.').collect();
    word.len() >= 40
        && parts.len() == 3
        && parts.iter().all(|p| {
            p.len() >= 10
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
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
            base64::DecodeSliceError::DecodeError(_) => "is not base64".to_string(),
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
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>> {
        Box::pin(async move {
            let trace = self::trace_id(trace_id, &self.ids);
            self.decrypt_key(alias, encrypted_key, &trace).await
        })
    }

    fn generate<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)> {
        Box::pin(async move {
            let trace = self::trace_id(trace_id, &self.ids);
            self.rotate_key(&trace).await
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
    fn token_margins() {
        assert_eq!(token_margin(3600), Duration::seconds(30));
        assert_eq!(token_margin(300), Duration::seconds(30));
        assert_eq!(token_margin(60), Duration::seconds(6));
        assert_eq!(token_margin(5), Duration::zero());
    }

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
        assert_eq!(key_from_base64("").unwrap_err(), "is 0 bytes, not 32");
    }

    #[test]
    fn quoted_messages_are_scrubbed() {
        assert!(looks_like_jwt(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwIn0.c2lnbmF0dXJlLXgtYWJj"
        ));
        assert!(!looks_like_jwt("x-request-id.is.required"));
        assert!(!looks_like_jwt("a.b"));
        let c = clean("line\none\u{7}");
        assert_eq!(c, "line one ");
        assert_eq!(clean(&"x".repeat(300)).chars().count(), MAX_QUOTED + 1);
    }
}
