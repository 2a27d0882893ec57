//! The three error shapes of the interface, and the collector that validation fills.
//!
//! - [`ValidationErrorBody`]: `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`,
//!   status 422, every validation failure of a platform request, all at once.
//! - [`PlatformErrorBody`]: `{"error": {"message", "type", "code"}}`, the platform's 401, 404,
//!   409, 413 and other non-validation failures.
//! - [`ByokErrorBody`]: `{"error": {"code", "message"}}`, every failure of the
//!   customer-hosted key endpoints.
//!
//! Validation `type` values and messages follow the conventions of pydantic v2 (the
//! `{detail:[{loc,msg,type}]}` shape is its own), so that a client written against the
//! platform sees familiar, stable values. [`ErrorType`] lists them.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One step of a `loc` path: an object key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum LocItem {
    /// An object key, or one of the roots `body`, `query`, `path`, `header`.
    Key(String),
    /// A list index.
    Index(usize),
}

impl From<&str> for LocItem {
    fn from(s: &str) -> Self {
        LocItem::Key(s.to_string())
    }
}

impl From<String> for LocItem {
    fn from(s: String) -> Self {
        LocItem::Key(s)
    }
}

impl From<usize> for LocItem {
    fn from(i: usize) -> Self {
        LocItem::Index(i)
    }
}

/// A path to a value in a request, such as `["body","app_config","connection_configs",0,"weight"]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Loc(Vec<LocItem>);

impl Loc {
    /// The root of a request body.
    pub fn body() -> Self {
        Loc(vec![LocItem::Key("body".into())])
    }

    /// The root of the query string.
    pub(crate) fn query() -> Self {
        Loc(vec![LocItem::Key("query".into())])
    }

    /// The root of the headers.
    pub fn header() -> Self {
        Loc(vec![LocItem::Key("header".into())])
    }

    /// An empty path (for values validated outside a request).
    pub fn root() -> Self {
        Loc(Vec::new())
    }

    /// This path extended by one step.
    pub fn at(&self, item: impl Into<LocItem>) -> Loc {
        let mut v = self.0.clone();
        v.push(item.into());
        Loc(v)
    }

    /// The steps of this path.
    pub(crate) fn items(&self) -> &[LocItem] {
        &self.0
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            match item {
                LocItem::Key(k) => f.write_str(k)?,
                LocItem::Index(n) => write!(f, "{n}")?,
            }
        }
        Ok(())
    }
}

/// The stable `type` values of validation errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// A required field is absent (`Field required`).
    Missing,
    /// Not a string.
    StringType,
    /// Not an integer.
    IntType,
    /// A number with a fractional part where an integer is expected.
    IntFromFloat,
    /// A query or path value that does not parse as an integer.
    IntParsing,
    /// Not a number.
    FloatType,
    /// A query value that does not parse as a number.
    FloatParsing,
    /// Not a boolean.
    BoolType,
    /// Not a list.
    ListType,
    /// Not an object where a free-form dictionary is expected.
    DictType,
    /// Not an object where a structured object is expected.
    ModelType,
    /// Below an inclusive lower bound.
    GreaterThanEqual,
    /// Above an inclusive upper bound.
    LessThanEqual,
    /// A string longer than allowed.
    StringTooLong,
    /// A string shorter than allowed (an empty required string).
    StringTooShort,
    /// A string that does not match a pattern.
    StringPatternMismatch,
    /// A list with too few items.
    TooShort,
    /// A list with too many items.
    TooLong,
    /// A value outside an enumeration.
    Enum,
    /// Not an ISO 8601 date-time.
    DatetimeParsing,
    /// A date-time without a time-zone offset.
    TimezoneAware,
    /// Not a URL.
    UrlParsing,
    /// A URL whose scheme is not `http` or `https`.
    UrlScheme,
    /// A rule of the interface beyond the basic types (a bound relative to now, a phone
    /// number, a time zone, a duplicate, ...). The message says which.
    ValueError,
    /// A body that is not JSON.
    JsonInvalid,
    /// A field that is not part of the request (strict mode only).
    ExtraForbidden,
}

impl ErrorType {
    /// The wire value of this type.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorType::Missing => "missing",
            ErrorType::StringType => "string_type",
            ErrorType::IntType => "int_type",
            ErrorType::IntFromFloat => "int_from_float",
            ErrorType::IntParsing => "int_parsing",
            ErrorType::FloatType => "float_type",
            ErrorType::FloatParsing => "float_parsing",
            ErrorType::BoolType => "bool_type",
            ErrorType::ListType => "list_type",
            ErrorType::DictType => "dict_type",
            ErrorType::ModelType => "model_type",
            ErrorType::GreaterThanEqual => "greater_than_equal",
            ErrorType::LessThanEqual => "less_than_equal",
            ErrorType::StringTooLong => "string_too_long",
            ErrorType::StringTooShort => "string_too_short",
            ErrorType::StringPatternMismatch => "string_pattern_mismatch",
            ErrorType::TooShort => "too_short",
            ErrorType::TooLong => "too_long",
            ErrorType::Enum => "enum",
            ErrorType::DatetimeParsing => "datetime_parsing",
            ErrorType::TimezoneAware => "timezone_aware",
            ErrorType::UrlParsing => "url_parsing",
            ErrorType::UrlScheme => "url_scheme",
            ErrorType::ValueError => "value_error",
            ErrorType::JsonInvalid => "json_invalid",
            ErrorType::ExtraForbidden => "extra_forbidden",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validation failure: where, what, and its stable type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Path to the offending value, starting with `body`, `query`, `path` or `header`.
    pub loc: Vec<LocItem>,
    /// What is wrong, for a person.
    pub msg: String,
    /// What is wrong, for a program (see [`ErrorType`]).
    #[serde(rename = "type")]
    pub error_type: String,
}

impl ErrorDetail {
    /// `loc` as dotted text (`body.app_config.connection_configs.0.weight`), for messages
    /// outside HTTP (files, logs).
    pub fn dotted_loc(&self) -> String {
        dotted(&self.loc)
    }
}

/// A `loc` as dotted text (`body.app_config.connection_configs.0.weight`).
pub fn dotted(loc: &[LocItem]) -> String {
    let mut out = String::new();
    for (i, item) in loc.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        match item {
            LocItem::Key(k) => out.push_str(k),
            LocItem::Index(n) => out.push_str(&n.to_string()),
        }
    }
    out
}

/// The 422 body: every validation failure of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ValidationErrorBody {
    /// All failures, in the order of the request's fields.
    pub detail: Vec<ErrorDetail>,
}

/// A set of validation failures collected while checking one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors {
    details: Vec<ErrorDetail>,
    /// The fields each object with an unknown field takes, by the object's `loc`: not part
    /// of the 422 body, for messages outside HTTP that suggest the field meant.
    known_fields: Vec<(Vec<LocItem>, Vec<String>)>,
}

impl ValidationErrors {
    /// No failures yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding one failure.
    pub fn single(loc: &Loc, error_type: ErrorType, msg: impl Into<String>) -> Self {
        let mut e = Self::new();
        e.add(loc, error_type, msg);
        e
    }

    /// Records one failure.
    pub fn add(&mut self, loc: &Loc, error_type: ErrorType, msg: impl Into<String>) {
        self.details.push(ErrorDetail {
            loc: loc.items().to_vec(),
            msg: msg.into(),
            error_type: error_type.as_str().to_string(),
        });
    }

    /// Records a `value_error` with pydantic's `Value error, ` message prefix.
    pub fn value_error(&mut self, loc: &Loc, msg: impl fmt::Display) {
        self.add(loc, ErrorType::ValueError, format!("Value error, {msg}"));
    }

    /// Moves every failure of `other` into this set.
    pub fn extend(&mut self, other: ValidationErrors) {
        self.details.extend(other.details);
        self.known_fields.extend(other.known_fields);
    }

    /// Records the fields the object at `loc` takes, when one of its fields is unknown.
    pub(crate) fn note_known_fields(&mut self, loc: &Loc, fields: &[&str]) {
        if self.known_fields_at(loc.items()).is_none() {
            self.known_fields.push((
                loc.items().to_vec(),
                fields.iter().map(|f| f.to_string()).collect(),
            ));
        }
    }

    /// The fields the object at `loc` takes, when one of its fields was unknown
    /// (`extra_forbidden`): what a message may suggest instead.
    pub fn known_fields_at(&self, loc: &[LocItem]) -> Option<&[String]> {
        self.known_fields
            .iter()
            .find(|(l, _)| l.as_slice() == loc)
            .map(|(_, f)| f.as_slice())
    }

    /// Whether nothing failed.
    pub fn is_empty(&self) -> bool {
        self.details.is_empty()
    }

    /// The failures so far.
    pub fn details(&self) -> &[ErrorDetail] {
        &self.details
    }

    /// The 422 body for these failures.
    pub fn into_body(self) -> ValidationErrorBody {
        ValidationErrorBody {
            detail: self.details,
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.details.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let loc: Vec<String> = d
                .loc
                .iter()
                .map(|l| match l {
                    LocItem::Key(k) => k.clone(),
                    LocItem::Index(n) => n.to_string(),
                })
                .collect();
            write!(f, "{}: {} ({})", loc.join("."), d.msg, d.error_type)?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// The inner object of [`PlatformErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PlatformErrorInfo {
    /// What went wrong, for a person.
    pub(crate) message: String,
    /// The class of error, for example `authentication_error`, `not_found_error`,
    /// `conflict_error`, `request_too_large`, `invalid_request_error`, `key_service_error`.
    #[serde(rename = "type")]
    pub(crate) error_type: String,
    /// The specific error, for example `invalid_api_key`, `campaign_not_found`,
    /// `invalid_status_transition`.
    pub(crate) code: String,
}

/// The platform's error body for everything but validation: `{"error": {"message", "type", "code"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PlatformErrorBody {
    /// The error.
    pub error: PlatformErrorInfo,
}

impl PlatformErrorBody {
    /// A body with the given type, code and message.
    pub fn new(
        error_type: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        PlatformErrorBody {
            error: PlatformErrorInfo {
                message: message.into(),
                error_type: error_type.into(),
                code: code.into(),
            },
        }
    }
}

/// The error codes of the customer-hosted key endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ByokErrorCode {
    /// 401: missing, malformed, wrong or expired credentials or token.
    Unauthorized,
    /// 400: a malformed request (body, content type, `grant_type`, headers, timestamp skew,
    /// an encrypted key that is not `byok:v1:`).
    InvalidRequest,
    /// 404: no master key under this alias.
    KeyNotFound,
    /// 403: the alias exists but is disabled (it can be enabled again).
    KeyDisabled,
    /// 403: the alias was revoked (permanently).
    KeyRevoked,
    /// 422: the encrypted key does not decrypt under this alias (tampered, wrong alias,
    /// version below the minimum).
    DecryptionFailed,
    /// 429: too many requests; see `Retry-After`.
    RateLimited,
    /// 503: the key service cannot serve now.
    ServiceUnavailable,
    /// 500: an unexpected failure.
    InternalError,
    /// 405: a method other than POST.
    MethodNotAllowed,
    /// 413: the body is larger than the service accepts.
    PayloadTooLarge,
    /// 404: no endpoint at this path.
    NotFound,
}

impl ByokErrorCode {
    /// Every code.
    pub const ALL: [ByokErrorCode; 12] = [
        ByokErrorCode::Unauthorized,
        ByokErrorCode::InvalidRequest,
        ByokErrorCode::KeyNotFound,
        ByokErrorCode::KeyDisabled,
        ByokErrorCode::KeyRevoked,
        ByokErrorCode::DecryptionFailed,
        ByokErrorCode::RateLimited,
        ByokErrorCode::ServiceUnavailable,
        ByokErrorCode::InternalError,
        ByokErrorCode::MethodNotAllowed,
        ByokErrorCode::PayloadTooLarge,
        ByokErrorCode::NotFound,
    ];

    /// The HTTP status that goes with this code.
    pub fn http_status(self) -> u16 {
        match self {
            ByokErrorCode::Unauthorized => 401,
            ByokErrorCode::InvalidRequest => 400,
            ByokErrorCode::KeyNotFound => 404,
            ByokErrorCode::KeyDisabled | ByokErrorCode::KeyRevoked => 403,
            ByokErrorCode::DecryptionFailed => 422,
            ByokErrorCode::RateLimited => 429,
            ByokErrorCode::ServiceUnavailable => 503,
            ByokErrorCode::InternalError => 500,
            ByokErrorCode::MethodNotAllowed => 405,
            ByokErrorCode::PayloadTooLarge => 413,
            ByokErrorCode::NotFound => 404,
        }
    }

    /// The wire value (`KEY_NOT_FOUND`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ByokErrorCode::Unauthorized => "UNAUTHORIZED",
            ByokErrorCode::InvalidRequest => "INVALID_REQUEST",
            ByokErrorCode::KeyNotFound => "KEY_NOT_FOUND",
            ByokErrorCode::KeyDisabled => "KEY_DISABLED",
            ByokErrorCode::KeyRevoked => "KEY_REVOKED",
            ByokErrorCode::DecryptionFailed => "DECRYPTION_FAILED",
            ByokErrorCode::RateLimited => "RATE_LIMITED",
            ByokErrorCode::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            ByokErrorCode::InternalError => "INTERNAL_ERROR",
            ByokErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ByokErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ByokErrorCode::NotFound => "NOT_FOUND",
        }
    }
}

impl fmt::Display for ByokErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The inner object of [`ByokErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ByokErrorInfo {
    /// The error code.
    pub(crate) code: ByokErrorCode,
    /// A short message; never echoes a secret or a key.
    pub(crate) message: String,
}

/// The key service's error body: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ByokErrorBody {
    /// The error.
    pub error: ByokErrorInfo,
}

impl ByokErrorBody {
    /// A body with the given code and message.
    pub fn new(code: ByokErrorCode, message: impl Into<String>) -> Self {
        ByokErrorBody {
            error: ByokErrorInfo {
                code,
                message: message.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_body_shape() {
        let mut e = ValidationErrors::new();
        let loc = Loc::body()
            .at("app_config")
            .at("connection_configs")
            .at(0)
            .at("weight");
        e.add(
            &loc,
            ErrorType::GreaterThanEqual,
            "Input should be greater than or equal to 1",
        );
        e.value_error(&Loc::body().at("start_timestamp"), "too soon");
        let body = serde_json::to_value(e.into_body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"detail": [
                {"loc": ["body","app_config","connection_configs",0,"weight"],
                 "msg": "Input should be greater than or equal to 1", "type": "greater_than_equal"},
                {"loc": ["body","start_timestamp"], "msg": "Value error, too soon", "type": "value_error"}
            ]})
        );
    }

    #[test]
    fn platform_and_byok_shapes() {
        let p = PlatformErrorBody::new("not_found_error", "campaign_not_found", "no such campaign");
        assert_eq!(
            serde_json::to_value(p).unwrap(),
            serde_json::json!({"error": {"message": "no such campaign", "type": "not_found_error", "code": "campaign_not_found"}})
        );
        let b = ByokErrorBody::new(ByokErrorCode::ServiceUnavailable, "service unavailable");
        assert_eq!(
            serde_json::to_value(b).unwrap(),
            serde_json::json!({"error": {"code": "SERVICE_UNAVAILABLE", "message": "service unavailable"}})
        );
        for code in [
            ByokErrorCode::KeyNotFound,
            ByokErrorCode::RateLimited,
            ByokErrorCode::NotFound,
        ] {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                serde_json::Value::String(code.as_str().into())
            );
        }
    }
}
