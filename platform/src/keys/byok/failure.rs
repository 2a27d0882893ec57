//! A failed call as a [`KeyServiceError`]: outages (no answer, `5xx`, `408`, `429`) are
//! transient, other refusals are not; every message names the endpoint, status and code and
//! says what to check, and quotes the key service only after masking secrets and anything
//! shaped like a JWT.

use super::error::{CallError, clean};
use super::token::Auth;
use super::{ByokKeyService, Endpoint};
use crate::keys::KeyServiceError;

impl ByokKeyService {
    /// `decrypt-key answered 404 KEY_NOT_FOUND ("...")`.
    pub(super) fn head(
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

    /// A failed call as a key-service error: outages are transient, refusals are not.
    pub(super) fn failure(&self, endpoint: Endpoint, e: CallError, alias: &str) -> KeyServiceError {
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

#[cfg(test)]
mod tests {
    use super::super::error::MAX_QUOTED;
    use super::*;

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
