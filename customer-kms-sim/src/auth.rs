//! Who is calling: HTTP Basic client credentials on `/auth`, and on the other endpoints a
//! bearer token that is either a JWT from `/auth` or a static API key.
//!
//! - Secrets and API keys are kept as SHA-256 digests and compared in constant time
//!   (`subtle`), against every candidate, so neither the length nor the position of a
//!   mismatch shows in the timing. An unknown client id is compared against a dummy digest.
//! - Tokens are HS256 JWTs (`jsonwebtoken`) with `iss`, `sub` (the client id), `aud`, `iat`,
//!   `exp`, `jti` (unique) and `epoch`. Validation pins the algorithm to HS256 (a token
//!   with `alg: none` or any other algorithm is refused), checks signature, issuer and
//!   audience, and checks `exp` against the injected clock (not the system time), with no
//!   leeway: a token is refused from its `exp` second on. A token that passed these checks
//!   is remembered by its SHA-256 digest (at most 4096 of them), so later calls with it skip
//!   the signature check but not the expiry and epoch checks.
//! - "Expire all tokens now" bumps the token epoch: tokens minted in an earlier epoch are
//!   refused. An epoch counter rather than an `iat` watermark, because `iat` has one-second
//!   resolution: a watermark would either spare tokens minted earlier in the same second or
//!   refuse tokens minted right after the expiry, and a simulated clock often stands still.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use contracts::error::ByokErrorCode;
use contracts::ids::IdGen;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::config::{KmsConfig, TokenConfig};
use crate::error::KmsError;

/// The one algorithm tokens are signed and checked with.
pub(crate) const TOKEN_ALGORITHM: Algorithm = Algorithm::HS256;

type Digest32 = [u8; 32];

fn digest(s: &str) -> Digest32 {
    Sha256::digest(s.as_bytes()).into()
}

/// Constant-time: whether `presented` matches any of `candidates`.
fn matches_any(presented: &Digest32, candidates: &[Digest32]) -> bool {
    let mut hit = Choice::from(0);
    for c in candidates {
        hit |= presented.ct_eq(c);
    }
    hit.into()
}

/// Who made a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// An OAuth client (HTTP Basic on `/auth`, or the `sub` of a JWT).
    Client {
        /// Client id.
        id: String,
    },
    /// A static API key.
    ApiKey {
        /// The key's configured name.
        name: String,
    },
}

impl Caller {
    /// The caller as recorded in the audit log: the client id or the key name.
    pub(crate) fn name(&self) -> &str {
        match self {
            Caller::Client { id } => id,
            Caller::ApiKey { name } => name,
        }
    }

    /// `client` or `api_key`.
    pub(crate) fn kind(&self) -> CallerKind {
        match self {
            Caller::Client { .. } => CallerKind::Client,
            Caller::ApiKey { .. } => CallerKind::ApiKey,
        }
    }
}

/// How a caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerKind {
    /// Client credentials or a JWT from `/auth`.
    Client,
    /// A static API key.
    ApiKey,
}

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// Subject: the client id.
    pub sub: String,
    /// Audience.
    pub aud: String,
    /// Issued at, Unix seconds on the service clock.
    pub iat: i64,
    /// Expiry, Unix seconds on the service clock.
    pub exp: i64,
    /// Unique token id (UUIDv4).
    pub jti: String,
    /// Token epoch; "expire all tokens" moves to the next one.
    pub epoch: u64,
}

/// Tokens whose signature, issuer, audience and subject were verified, by SHA-256 of the
/// token: a bearer token is checked once per token rather than once per call (HS256
/// verification and two JSON parses cost more than the rest of a decrypt together).
const VERIFIED_CACHE_CAPACITY: usize = 4096;

#[derive(Clone)]
struct Verified {
    sub: String,
    exp: i64,
    epoch: u64,
}

struct Client {
    secrets: Vec<Digest32>,
    default_alias: Option<String>,
}

struct ApiKey {
    name: String,
    default_alias: Option<String>,
}

/// Credentials and tokens of one key service.
pub struct Authenticator {
    clients: HashMap<String, Client>,
    api_key_digests: Vec<Digest32>,
    api_keys: Vec<ApiKey>,
    token: TokenConfig,
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    epoch: AtomicU64,
    dummy: Digest32,
    verified: RwLock<HashMap<Digest32, Verified>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("clients", &self.clients.len())
            .field("api_keys", &self.api_keys.len())
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// From a validated configuration; `signing_secret` is the HS256 secret.
    pub(crate) fn new(config: &KmsConfig, signing_secret: &[u8]) -> Self {
        let clients = config
            .clients
            .iter()
            .map(|c| {
                (
                    c.id.clone(),
                    Client {
                        secrets: c.secrets.iter().map(|s| digest(s.expose())).collect(),
                        default_alias: c.default_alias.clone(),
                    },
                )
            })
            .collect();
        let api_key_digests = config
            .api_keys
            .iter()
            .map(|k| digest(k.key.expose()))
            .collect();
        let api_keys = config
            .api_keys
            .iter()
            .map(|k| ApiKey {
                name: k.name.clone(),
                default_alias: k.default_alias.clone(),
            })
            .collect();
        let mut validation = Validation::new(TOKEN_ALGORITHM);
        validation.set_audience(&[&config.token.audience]);
        validation.set_issuer(&[&config.token.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Expiry is checked against the injected clock in `verify_token`, not the system time.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.leeway = 0;
        Authenticator {
            clients,
            api_key_digests,
            api_keys,
            token: config.token.clone(),
            encoding: EncodingKey::from_secret(signing_secret),
            decoding: DecodingKey::from_secret(signing_secret),
            validation,
            epoch: AtomicU64::new(0),
            dummy: digest("customer-kms-sim: no such client"),
            verified: RwLock::new(HashMap::new()),
        }
    }

    /// Checks an `Authorization: Basic` header value against the configured clients.
    pub(crate) fn check_basic(&self, header: Option<&str>) -> Result<Caller, KmsError> {
        let value = header.ok_or_else(|| {
            KmsError::new(ByokErrorCode::Unauthorized, "missing Authorization header")
        })?;
        let encoded = strip_scheme(value, "Basic").ok_or_else(|| {
            KmsError::new(
                ByokErrorCode::Unauthorized,
                "Authorization must be Basic with the client id and secret",
            )
        })?;
        let malformed = || {
            KmsError::new(
                ByokErrorCode::Unauthorized,
                "malformed Basic credentials: expected base64 of client_id:client_secret",
            )
        };
        let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
        let decoded = zeroize::Zeroizing::new(decoded);
        let text = std::str::from_utf8(&decoded).map_err(|_| malformed())?;
        let (id, secret) = text.split_once(':').ok_or_else(malformed)?;
        let presented = digest(secret);
        let ok = match self.clients.get(id) {
            Some(c) => matches_any(&presented, &c.secrets),
            None => {
                // Same work for an unknown client as for a known one.
                let _ = matches_any(&presented, &[self.dummy, self.dummy]);
                false
            }
        };
        if ok {
            Ok(Caller::Client { id: id.to_string() })
        } else {
            Err(KmsError::new(
                ByokErrorCode::Unauthorized,
                "invalid client credentials",
            ))
        }
    }

    /// Mints an access token for `client_id` at `now`; answers the token and its lifetime.
    pub(crate) fn issue(&self, client_id: &str, now: DateTime<Utc>, ids: &IdGen) -> (String, u64) {
        let expires_in = self.token.expires_in;
        (
            self.issue_with_lifetime(client_id, now, ids, expires_in),
            expires_in,
        )
    }

    /// Mints a token whose `exp` is `lifetime` seconds after `iat`, whatever `expires_in`
    /// says (the `short_token_exp` mutant; [`Authenticator::issue`] otherwise).
    pub(crate) fn issue_with_lifetime(
        &self,
        client_id: &str,
        now: DateTime<Utc>,
        ids: &IdGen,
        lifetime: u64,
    ) -> String {
        let iat = now.timestamp();
        let claims = Claims {
            iss: self.token.issuer.clone(),
            sub: client_id.to_string(),
            aud: self.token.audience.clone(),
            iat,
            exp: iat.saturating_add(i64::try_from(lifetime).unwrap_or(i64::MAX)),
            jti: ids.uuid_v4().to_string(),
            epoch: self.epoch.load(Ordering::SeqCst),
        };
        jsonwebtoken::encode(&Header::new(TOKEN_ALGORITHM), &claims, &self.encoding)
            .expect("HS256 signing with an HMAC key cannot fail")
    }

    /// Whether `client_id` is a configured client.
    pub(crate) fn knows_client(&self, client_id: &str) -> bool {
        self.clients.contains_key(client_id)
    }

    /// Checks the claims of a token whose signature was not verified (mutants only):
    /// issuer, audience, a configured subject and, when `check_time`, expiry and epoch.
    pub(crate) fn check_unsigned_claims(
        &self,
        claims: &Claims,
        now: DateTime<Utc>,
        check_time: bool,
    ) -> Result<Caller, KmsError> {
        let invalid = || KmsError::new(ByokErrorCode::Unauthorized, "invalid access token");
        if claims.iss != self.token.issuer
            || claims.aud != self.token.audience
            || !self.clients.contains_key(&claims.sub)
        {
            return Err(invalid());
        }
        if check_time {
            self.check_time_and_epoch(claims.exp, claims.epoch, now)?;
        }
        Ok(Caller::Client {
            id: claims.sub.clone(),
        })
    }

    /// Checks an `Authorization: Bearer` header value: a static API key, or a JWT from
    /// `/auth` that is valid at `now`.
    pub(crate) fn check_bearer(
        &self,
        header: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Caller, KmsError> {
        let value = header.ok_or_else(|| {
            KmsError::new(ByokErrorCode::Unauthorized, "missing Authorization header")
        })?;
        let token = strip_scheme(value, "Bearer")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                KmsError::new(
                    ByokErrorCode::Unauthorized,
                    "Authorization must be Bearer with an access token or API key",
                )
            })?;
        let presented = digest(token);
        // Every key is compared, so the position of a match does not show in the timing.
        let mut found = None;
        for (i, d) in self.api_key_digests.iter().enumerate() {
            if bool::from(presented.ct_eq(d)) {
                found = Some(i);
            }
        }
        if let Some(i) = found {
            return Ok(Caller::ApiKey {
                name: self.api_keys[i].name.clone(),
            });
        }
        // A token seen before skips the signature check; its expiry and epoch are checked
        // on every use all the same.
        let cached = self
            .verified
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&presented)
            .cloned();
        if let Some(v) = cached {
            self.check_time_and_epoch(v.exp, v.epoch, now)?;
            return Ok(Caller::Client { id: v.sub });
        }
        let claims = self.verify_token(token, now)?;
        let mut verified = self.verified.write().unwrap_or_else(|p| p.into_inner());
        if verified.len() >= VERIFIED_CACHE_CAPACITY {
            verified.clear();
        }
        verified.insert(
            presented,
            Verified {
                sub: claims.sub.clone(),
                exp: claims.exp,
                epoch: claims.epoch,
            },
        );
        Ok(Caller::Client { id: claims.sub })
    }

    fn check_time_and_epoch(
        &self,
        exp: i64,
        epoch: u64,
        now: DateTime<Utc>,
    ) -> Result<(), KmsError> {
        if now.timestamp() >= exp || epoch != self.epoch.load(Ordering::SeqCst) {
            return Err(KmsError::new(
                ByokErrorCode::Unauthorized,
                "access token expired",
            ));
        }
        Ok(())
    }

    /// Verifies a JWT: algorithm, signature, issuer, audience, expiry on `now`, epoch, and
    /// that its subject is a configured client.
    pub fn verify_token(&self, token: &str, now: DateTime<Utc>) -> Result<Claims, KmsError> {
        let invalid = || KmsError::new(ByokErrorCode::Unauthorized, "invalid access token");
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| invalid())?;
        let claims = data.claims;
        self.check_time_and_epoch(claims.exp, claims.epoch, now)?;
        if !self.clients.contains_key(&claims.sub) {
            return Err(invalid());
        }
        Ok(claims)
    }

    /// Refuses every token minted so far; answers the new epoch.
    pub(crate) fn expire_all(&self) -> u64 {
        self.epoch.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The current token epoch.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// The alias a caller's body-less `/rotate-key` uses, if the caller has one.
    pub(crate) fn default_alias(&self, caller: &Caller) -> Option<&str> {
        match caller {
            Caller::Client { id } => self.clients.get(id)?.default_alias.as_deref(),
            Caller::ApiKey { name } => self
                .api_keys
                .iter()
                .find(|k| &k.name == name)?
                .default_alias
                .as_deref(),
        }
    }
}

/// The credentials after `scheme` and a space, case-insensitive on the scheme.
fn strip_scheme<'a>(value: &'a str, scheme: &str) -> Option<&'a str> {
    let (s, rest) = value.split_once(' ')?;
    s.eq_ignore_ascii_case(scheme).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn auth() -> Authenticator {
        let c = KmsConfig::new("p")
            .with_client("platform", &["s1", "s2"])
            .with_api_key("static", "sk_1")
            .with_alias("a", 1)
            .with_expires_in(60);
        Authenticator::new(&c, &[7; 32])
    }

    fn basic(id: &str, secret: &str) -> String {
        format!("Basic {}", STANDARD.encode(format!("{id}:{secret}")))
    }

    #[test]
    fn basic_accepts_both_secrets_and_refuses_the_rest() {
        let a = auth();
        for s in ["s1", "s2"] {
            assert_eq!(
                a.check_basic(Some(&basic("platform", s))).unwrap(),
                Caller::Client {
                    id: "platform".into()
                }
            );
        }
        assert_eq!(
            a.check_basic(
                Some(&basic("platform", "s1"))
                    .map(|s| s.replace("Basic", "basic"))
                    .as_deref()
            )
            .unwrap()
            .name(),
            "platform",
            "the scheme is case-insensitive"
        );
        for bad in [
            None,
            Some("Bearer abc".to_string()),
            Some("Basic !!!".to_string()),
            Some(format!("Basic {}", STANDARD.encode("no-colon"))),
            Some(basic("platform", "s3")),
            Some(basic("platform", "")),
            Some(basic("other", "s1")),
        ] {
            let e = a.check_basic(bad.as_deref()).unwrap_err();
            assert_eq!(e.code, ByokErrorCode::Unauthorized, "{bad:?}");
            assert!(!e.message.contains("s1"));
        }
    }

    #[test]
    fn tokens_expire_on_the_injected_clock() {
        let a = auth();
        let ids = IdGen::seeded(1);
        let (token, expires_in) = a.issue("platform", t0(), &ids);
        assert_eq!(expires_in, 60);
        let bearer = format!("Bearer {token}");
        assert_eq!(
            a.check_bearer(Some(&bearer), t0()).unwrap().name(),
            "platform"
        );
        let last = t0() + Duration::seconds(59);
        assert!(a.check_bearer(Some(&bearer), last).is_ok());
        let e = a
            .check_bearer(Some(&bearer), t0() + Duration::seconds(60))
            .unwrap_err();
        assert_eq!(e.message, "access token expired");
    }

    #[test]
    fn expire_all_refuses_older_tokens_only() {
        let a = auth();
        let ids = IdGen::seeded(1);
        let (old, _) = a.issue("platform", t0(), &ids);
        assert_eq!(a.expire_all(), 1);
        let (new, _) = a.issue("platform", t0(), &ids);
        assert_eq!(
            a.verify_token(&old, t0()).unwrap_err().message,
            "access token expired"
        );
        assert!(a.verify_token(&new, t0()).is_ok(), "same second, new epoch");
    }

    #[test]
    fn remembered_tokens_still_expire() {
        let a = auth();
        let ids = IdGen::seeded(1);
        let (token, _) = a.issue("platform", t0(), &ids);
        let bearer = format!("Bearer {token}");
        for _ in 0..2 {
            assert!(
                a.check_bearer(Some(&bearer), t0()).is_ok(),
                "verified, then remembered"
            );
        }
        let late = a
            .check_bearer(Some(&bearer), t0() + Duration::seconds(60))
            .unwrap_err();
        assert_eq!(late.message, "access token expired");
        assert!(a.check_bearer(Some(&bearer), t0()).is_ok());
        a.expire_all();
        let e = a.check_bearer(Some(&bearer), t0()).unwrap_err();
        assert_eq!(e.message, "access token expired");
        // A tampered token is not mistaken for the remembered one.
        let mut bad = token.clone();
        bad.pop();
        assert!(
            a.check_bearer(Some(&format!("Bearer {bad}x")), t0())
                .is_err()
        );
    }

    #[test]
    fn token_ids_are_unique() {
        let a = auth();
        let ids = IdGen::seeded(1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100 {
            let (t, _) = a.issue("platform", t0(), &ids);
            assert!(seen.insert(a.verify_token(&t, t0()).unwrap().jti));
        }
    }

    #[test]
    fn api_keys_and_foreign_tokens() {
        let a = auth();
        assert_eq!(
            a.check_bearer(Some("Bearer sk_1"), t0()).unwrap(),
            Caller::ApiKey {
                name: "static".into()
            }
        );
        for bad in [
            None,
            Some("Bearer "),
            Some("Basic sk_1"),
            Some("Bearer sk_2"),
            Some("sk_1"),
        ] {
            assert_eq!(
                a.check_bearer(bad, t0()).unwrap_err().code,
                ByokErrorCode::Unauthorized,
                "{bad:?}"
            );
        }
        // Signed with another key.
        let other = Authenticator::new(
            &KmsConfig::new("p")
                .with_client("platform", &["s1"])
                .with_alias("a", 1),
            &[8; 32],
        );
        let (t, _) = other.issue("platform", t0(), &IdGen::seeded(1));
        assert_eq!(
            a.verify_token(&t, t0()).unwrap_err().message,
            "invalid access token"
        );
    }

    #[test]
    fn algorithm_is_pinned() {
        let a = auth();
        let claims = Claims {
            iss: "customer-kms-sim".into(),
            sub: "platform".into(),
            aud: "byok".into(),
            iat: t0().timestamp(),
            exp: t0().timestamp() + 60,
            jti: "x".into(),
            epoch: 0,
        };
        // HS512 with the right secret.
        let t = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &claims,
            &EncodingKey::from_secret(&[7; 32]),
        )
        .unwrap();
        assert!(a.verify_token(&t, t0()).is_err());
        // alg: none, no signature.
        let b64 = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let none = format!(
            "{}.{}.",
            b64(&serde_json::json!({"alg": "none", "typ": "JWT"})),
            b64(&serde_json::to_value(&claims).unwrap())
        );
        assert!(a.verify_token(&none, t0()).is_err());
        // The right algorithm and secret pass.
        let ok = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(&[7; 32]),
        )
        .unwrap();
        assert!(a.verify_token(&ok, t0()).is_ok());
    }

    #[test]
    fn audience_issuer_and_subject_are_checked() {
        let a = auth();
        let sign = |c: &Claims| {
            jsonwebtoken::encode(
                &Header::new(Algorithm::HS256),
                c,
                &EncodingKey::from_secret(&[7; 32]),
            )
            .unwrap()
        };
        let good = Claims {
            iss: "customer-kms-sim".into(),
            sub: "platform".into(),
            aud: "byok".into(),
            iat: t0().timestamp(),
            exp: t0().timestamp() + 60,
            jti: "x".into(),
            epoch: 0,
        };
        assert!(a.verify_token(&sign(&good), t0()).is_ok());
        for bad in [
            Claims {
                aud: "other".into(),
                ..good.clone()
            },
            Claims {
                iss: "other".into(),
                ..good.clone()
            },
            Claims {
                sub: "stranger".into(),
                ..good.clone()
            },
        ] {
            assert!(a.verify_token(&sign(&bad), t0()).is_err(), "{bad:?}");
        }
    }
}
