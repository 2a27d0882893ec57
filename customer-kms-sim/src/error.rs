//! The one error type of the service: an error code of the interface, a short message that
//! never carries a secret, and for 429 the `Retry-After` seconds.

use std::borrow::Cow;

use contracts::error::{ByokErrorBody, ByokErrorCode};

use crate::keys::KeyError;

/// A failed call, answered as `{"error": {"code", "message"}}` with the code's status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct KmsError {
    /// The code; its status is [`ByokErrorCode::http_status`].
    pub(crate) code: ByokErrorCode,
    /// A short message for a person; never a secret, token or key.
    pub(crate) message: Cow<'static, str>,
    /// Seconds for `Retry-After` (429 answers).
    pub(crate) retry_after: Option<u64>,
}

impl KmsError {
    /// An error with a code and a message.
    pub(crate) fn new(code: ByokErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        KmsError {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `INVALID_REQUEST` (400).
    pub(crate) fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        KmsError::new(ByokErrorCode::InvalidRequest, message)
    }

    /// `RATE_LIMITED` (429) with `Retry-After: secs`.
    pub(crate) fn rate_limited(secs: u64) -> Self {
        KmsError {
            code: ByokErrorCode::RateLimited,
            message: "too many requests".into(),
            retry_after: Some(secs),
        }
    }

    /// `SERVICE_UNAVAILABLE` (503).
    pub(crate) fn unavailable() -> Self {
        KmsError::new(
            ByokErrorCode::ServiceUnavailable,
            "the key service is unavailable",
        )
    }

    /// The HTTP status.
    pub(crate) fn status(&self) -> u16 {
        self.code.http_status()
    }

    /// The body.
    pub(crate) fn body(&self) -> ByokErrorBody {
        ByokErrorBody::new(self.code, self.message.clone())
    }
}

impl From<KeyError> for KmsError {
    fn from(e: KeyError) -> Self {
        KmsError::new(e.code(), e.to_string())
    }
}

impl warp::reject::Reject for KmsError {}
