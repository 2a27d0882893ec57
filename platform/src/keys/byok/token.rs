//! The bearer token of a key-service call: the static key, or a token from `/auth`
//! (client credentials) cached until `expires_in` less [`token_margin`] has passed on the
//! injected clock, one `/auth` call shared by concurrent callers; a `401` makes the client
//! forget the token, fetch a new one and retry once. Each `/auth` call says why it is made:
//! no token yet (a cold start), the token expired, or the key service refused it.

use chrono::{DateTime, Duration, Utc};
use contracts::wire::byok::{GRANT_TYPE_CLIENT_CREDENTIALS, TOKEN_TYPE_BEARER};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::error::{CallError, clean};
use super::http::{Answer, Credentials, SecretText};
use super::{ByokKeyService, Endpoint};
use crate::config::Secret;
use crate::keys::{KeyCallReason, KeyServiceError};

/// The longest a token is reused before its `expires_in` ends: see [`token_margin`].
pub(crate) const TOKEN_MARGIN_SECS: u64 = 30;
/// How long before its end a token is no longer used: 30 s, or a tenth of the lifetime for
/// tokens shorter than five minutes (so a 60 s token is used for 54 s).
pub(crate) fn token_margin(expires_in: u64) -> Duration {
    Duration::seconds(TOKEN_MARGIN_SECS.min(expires_in / 10) as i64)
}

/// How the client authenticates to the key service.
pub(super) enum Auth {
    ClientCredentials {
        client_id: String,
        client_secret: Secret,
    },
    ApiKey(Secret),
}

/// The cached token, and why the next `/auth` call will be made.
pub(super) struct TokenSlot {
    token: Option<Token>,
    /// Why a token is needed when there is none: no token yet, the last one expired, the
    /// key service refused the last one.
    why_next: KeyCallReason,
}

impl Default for TokenSlot {
    fn default() -> Self {
        TokenSlot {
            token: None,
            why_next: KeyCallReason::ColdStart,
        }
    }
}

/// A token from `/auth`, cached.
pub(super) struct Token {
    value: Zeroizing<String>,
    /// The token is not used from this instant on (its expiry less the margin).
    refresh_at: DateTime<Utc>,
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

impl ByokKeyService {
    /// Sends a call that needs a bearer token, made for `reason`; on a 401 with client
    /// credentials, forgets the token, fetches a new one and retries once (both for
    /// [`KeyCallReason::TokenRefused`]).
    pub(super) async fn with_bearer(
        &self,
        endpoint: Endpoint,
        trace: &str,
        alias: &str,
        body: &[u8],
        reason: KeyCallReason,
    ) -> Result<Answer, KeyServiceError> {
        let token = self.bearer(trace).await?;
        let first = self
            .send(
                endpoint,
                trace,
                Credentials::Bearer(&token),
                body,
                false,
                reason,
            )
            .await;
        match first {
            Err(CallError::Status { status: 401, .. })
                if matches!(self.auth, Auth::ClientCredentials { .. }) =>
            {
                tracing::info!(workspace = %self.ws, %endpoint, "token refused; fetching a new one and retrying once");
                self.forget_token(&token).await;
                let fresh = self.bearer(trace).await?;
                match self
                    .send(
                        endpoint,
                        trace,
                        Credentials::Bearer(&fresh),
                        body,
                        false,
                        KeyCallReason::TokenRefused,
                    )
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
        if let Some(t) = slot.token.as_ref() {
            if t.refresh_at > now {
                return Ok(t.value.clone());
            }
            slot.why_next = KeyCallReason::TokenExpired;
        }
        slot.token = None;
        let why = slot.why_next;
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
                why,
            )
            .await
            .map_err(|e| self.failure(Endpoint::Auth, e, &self.key_alias))?;
        let parsed: AuthAnswer = self.json(Endpoint::Auth, &answer, &super::shape::AUTH)?;
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
            slot.token = Some(Token {
                value: value.clone(),
                refresh_at,
            });
        } else {
            // Used once, not kept: the next call needs another, as after an expiry.
            slot.why_next = KeyCallReason::TokenExpired;
        }
        Ok(value)
    }

    /// Forgets the cached token when it is still the one that was refused.
    async fn forget_token(&self, refused: &str) {
        let mut slot = self.token.lock().await;
        if slot
            .token
            .as_ref()
            .is_none_or(|t| t.value.as_str() == refused)
        {
            slot.token = None;
            slot.why_next = KeyCallReason::TokenRefused;
        }
    }

    pub(super) fn describe_auth(&self) -> String {
        match &self.auth {
            Auth::ClientCredentials { client_id, .. } => format!("client '{client_id}'"),
            Auth::ApiKey(_) => "the static API key".into(),
        }
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
}
