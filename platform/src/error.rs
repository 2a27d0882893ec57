//! Every failure a request can meet, and its answer in the platform's error shapes:
//! 422 `{"detail": [...]}` for validation, `{"error": {"message", "type", "code"}}` for the
//! rest.

use contracts::error::{PlatformErrorBody, ValidationErrors};
use warp::http::StatusCode;
use warp::reply::Response;

use crate::keys::DataKeyRingError;
use crate::store::StoreError;

/// A failed request.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// The request breaks rules of the interface (422).
    #[error("validation failed: {0}")]
    Validation(ValidationErrors),
    /// Missing or wrong `X-API-Key` (401).
    #[error("{message}")]
    Unauthorized {
        /// `missing_api_key` or `invalid_api_key`.
        code: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The key is valid but may not do this (403).
    #[error("{message}")]
    Forbidden {
        /// `clock_admin_key_required`.
        code: &'static str,
        /// Why, and which key would do.
        message: String,
    },
    /// No such resource in this workspace (404).
    #[error("{message}")]
    NotFound {
        /// `campaign_not_found`, `deployment_not_found`, ...
        code: &'static str,
        /// What was not found.
        message: String,
    },
    /// The action is not allowed in the resource's state (409).
    #[error("{message}")]
    Conflict {
        /// `invalid_status_transition`, `phone_number_in_use`, ...
        code: &'static str,
        /// Why.
        message: String,
    },
    /// The body is larger than allowed (413).
    #[error("request body larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The body is not of a media type the route reads (415).
    #[error("{message}")]
    UnsupportedMediaType {
        /// What the route reads.
        message: String,
    },
    /// The key service that protects the workspace's data cannot be used now (503).
    #[error("{0}")]
    DataKeySource(String),
    /// The key service refused (configuration problem) (502).
    #[error("{0}")]
    KeyServiceRefused(String),
    /// Anything else (500); the message is logged, not returned.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// A 404 for a resource kind and id.
    pub(crate) fn not_found(kind: &'static str, id: &str) -> Self {
        let code = match kind {
            "campaign" => "campaign_not_found",
            "deployment" => "deployment_not_found",
            "cohort" => "cohort_not_found",
            "file" => "file_not_found",
            _ => "not_found",
        };
        ApiError::NotFound {
            code,
            message: format!("no {kind} '{id}' in this workspace"),
        }
    }

    /// The HTTP status of this error.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::DataKeySource(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::KeyServiceRefused(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The answer to send.
    pub(crate) fn into_response(self) -> Response {
        let status = self.status();
        if let ApiError::Validation(errors) = self {
            return json_response(status, &errors.into_body());
        }
        let (error_type, code, message) = match self {
            ApiError::Unauthorized { code, message } => ("authentication_error", code, message),
            ApiError::Forbidden { code, message } => ("permission_error", code, message),
            ApiError::NotFound { code, message } => ("not_found_error", code, message),
            ApiError::Conflict { code, message } => ("conflict_error", code, message),
            ApiError::TooLarge { limit } => (
                "request_too_large",
                "request_too_large",
                format!("the request body is larger than the limit of {limit} bytes"),
            ),
            ApiError::UnsupportedMediaType { message } => {
                ("invalid_request_error", "unsupported_media_type", message)
            }
            ApiError::DataKeySource(message) => {
                ("key_service_error", "key_service_unavailable", message)
            }
            ApiError::KeyServiceRefused(message) => {
                ("key_service_error", "key_service_refused", message)
            }
            ApiError::Internal(message) => {
                tracing::error!(%message, "internal error");
                (
                    "internal_error",
                    "internal_error",
                    "the platform failed to handle the request; see its log".to_string(),
                )
            }
            ApiError::Validation(_) => unreachable!("handled above"),
        };
        json_response(status, &PlatformErrorBody::new(error_type, code, message))
    }
}

impl From<ValidationErrors> for ApiError {
    fn from(e: ValidationErrors) -> Self {
        ApiError::Validation(e)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

/// A failed statement inside a service's transaction: a store error.
impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        ApiError::from(StoreError::from(e))
    }
}

impl From<DataKeyRingError> for ApiError {
    fn from(e: DataKeyRingError) -> Self {
        match e {
            DataKeyRingError::Service(crate::keys::KeyServiceError::Unavailable(m)) => {
                ApiError::DataKeySource(format!(
                    "the key service that protects this workspace's data is unavailable: {m}"
                ))
            }
            DataKeyRingError::Service(crate::keys::KeyServiceError::Refused(m)) => {
                ApiError::KeyServiceRefused(format!(
                    "the key service that protects this workspace's data refused: {m}"
                ))
            }
            DataKeyRingError::Store(s) => ApiError::from(s),
        }
    }
}

impl From<crate::keys::CryptoError> for ApiError {
    fn from(e: crate::keys::CryptoError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

/// A JSON answer.
pub(crate) fn json_response<T: serde::Serialize>(status: StatusCode, body: &T) -> Response {
    let bytes = serde_json::to_vec(body).expect("answers serialise");
    json_bytes_response(status, bytes.into())
}

/// A JSON answer already serialised (the bytes are shared, not copied).
pub(crate) fn json_bytes_response(status: StatusCode, bytes: bytes::Bytes) -> Response {
    let mut r = Response::new(bytes.into());
    *r.status_mut() = status;
    r.headers_mut().insert(
        warp::http::header::CONTENT_TYPE,
        warp::http::HeaderValue::from_static("application/json"),
    );
    r
}
