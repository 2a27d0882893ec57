//! Mutants: switches that each make the service break exactly one rule of the contract.
//!
//! They exist to prove a contract checker (`harness check byok`): with one mutant on, the
//! checker must report exactly the checks that name that rule, and with none on, nothing.
//! Switch them in the configuration (`mutants = ["wrong_token_type"]`), with
//! `serve --mutant NAME`, through the admin API (`/_admin/mutants`) or with
//! [`Mutants::set`]. Unlike [faults](crate::faults), which make the service fail the way a
//! real one fails under trouble, a mutant makes it wrong: an implementation bug.
//!
//! The state some mutants need (tokens handed out, keys already decrypted, the calls in
//! flight) lives in `state` ([`Mutants`]), so the HTTP layer stays a list of
//! `if mutants.is_on(...)`.

mod state;

use serde::{Deserialize, Serialize};

pub use state::Mutants;
pub(crate) use state::{SLOW_DECRYPT, SMALL_POOL_HOLD};

/// One broken rule. The name (snake case) is what the configuration, the command line and
/// the admin API use; [`Mutant::rule`] says which rule it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Mutant {
    /// `/auth` answers 201 instead of 200 (with the token).
    #[serde(rename = "auth_status_201")]
    AuthStatus201,
    /// `/auth` answers `expires_in` as a string (`"3600"`).
    ExpiresInString,
    /// `/auth` answers `token_type: "mac"`.
    WrongTokenType,
    /// `/auth` answers `expires_in: 0` (the token itself lives as configured).
    ZeroExpiresIn,
    /// The JWT's `exp` is half of `expires_in` after its `iat`.
    ShortTokenExp,
    /// `/auth` answers an opaque token, not a JWT (the service accepts it).
    OpaqueToken,
    /// The JWT's header says `alg: none`, though the token is signed (the service accepts
    /// the tokens it issued).
    AlgNoneHeader,
    /// `/auth` answers 200 to a known client with a wrong secret.
    AcceptWrongSecret,
    /// `/auth` answers 200 to an unknown client id.
    AcceptUnknownClient,
    /// `/auth` answers 200 to a known client with the first characters of its secret (the
    /// presented secret is compared only as far as it goes).
    SecretPrefixAccepted,
    /// `/auth` without `Authorization` answers 500.
    #[serde(rename = "no_credentials_500")]
    NoCredentials500,
    /// `/auth` with a malformed Basic header answers 500.
    #[serde(rename = "malformed_basic_500")]
    MalformedBasic500,
    /// `/auth` accepts any `grant_type`.
    AnyGrantType,
    /// `/auth` accepts a JSON body instead of a form.
    JsonAuthBody,
    /// `/decrypt-key` without `Authorization` is served.
    NoTokenAccepted,
    /// A bearer token that is neither an API key nor a JWT answers 500.
    #[serde(rename = "garbage_token_500")]
    GarbageToken500,
    /// JWT signatures are not verified.
    UncheckedSignature,
    /// A JWT with `alg: none` is accepted.
    AlgNoneAccepted,
    /// `/decrypt-key` and `/rotate-key` accept the client credentials (HTTP Basic) instead
    /// of a bearer token.
    BasicOnDecrypt,
    /// An expired JWT is accepted.
    ExpiredTokenAccepted,
    /// A JWT is refused once half its lifetime has passed.
    TokenDiesEarly,
    /// A key wrapped for another alias decrypts (the alias does not bind the key).
    NoAliasBinding,
    /// An unknown alias answers 500.
    #[serde(rename = "unknown_alias_500")]
    UnknownAlias500,
    /// An encrypted key without any prefix is read as `byok:v1:`.
    MissingPrefixAccepted,
    /// An encrypted key with another prefix (`kms:v1:`) answers 500.
    #[serde(rename = "wrong_prefix_500")]
    WrongPrefix500,
    /// `byok:v2:` (any `byok:vN:`) is read as `byok:v1:`.
    AnyEnvelopeVersion,
    /// Characters outside the base64 alphabet are dropped instead of refused.
    LenientBase64,
    /// A key altered in its first byte (the high byte of the version) decrypts as the key
    /// it was made from.
    FirstByteIgnored,
    /// A key altered in its last byte (the last byte of the tag) decrypts as the key it was
    /// made from.
    LastByteIgnored,
    /// A key altered in its nonce decrypts as the key it was made from.
    NonceIgnored,
    /// A key altered in the first byte of its tag decrypts as the key it was made from.
    TagStartIgnored,
    /// A key with its tag cut short decrypts as the key it was cut from (the tag is
    /// compared only as far as it goes).
    TruncatedTagAccepted,
    /// A key that does not decrypt (tampered, another alias's) answers 500.
    #[serde(rename = "decryption_failure_500")]
    DecryptionFailure500,
    /// A JSON body without `key_alias` or `encrypted_key` answers 500.
    #[serde(rename = "missing_fields_500")]
    MissingFields500,
    /// A JSON body whose `data` has no `key_alias` answers 404 `KEY_NOT_FOUND`.
    MissingAliasKeyNotFound,
    /// `/decrypt-key` reads JSON whatever the `Content-Type`.
    AnyContentType,
    /// Request bodies have no size limit.
    NoBodyLimit,
    /// `/decrypt-key` answers 201 instead of 200 (with the key).
    #[serde(rename = "decrypt_status_201")]
    DecryptStatus201,
    /// `/decrypt-key` names the field `plaintext` instead of `plaintext_key`.
    PlaintextFieldRenamed,
    /// `/decrypt-key` answers 16 bytes of the data key.
    ShortPlaintext,
    /// A key decrypted before answers a different key (one bit flipped).
    UnstablePlaintext,
    /// `/rotate-key` answers 201 instead of 200 (with the key).
    #[serde(rename = "rotate_status_201")]
    RotateStatus201,
    /// `/rotate-key` answers without `key_alias`.
    RotateWithoutAlias,
    /// `/rotate-key` answers 16 bytes of the new data key as `plaintext_dek`.
    RotateShortPlaintext,
    /// `/rotate-key` rotates the master key and refuses every older version.
    RotateForgetsOldKeys,
    /// `/rotate-key` answers the same data key every time.
    RotateSameKey,
    /// `/rotate-key` names another alias than the one that wrapped the key.
    RotateWrongAlias,
    /// Answers carry no `X-Trace-Id`.
    NoTraceEcho,
    /// A call without `x-trace-id` answers 400.
    TraceIdRequired,
    /// `x-request-timestamp` is not compared with the service clock.
    SkewIgnored,
    /// An `x-request-timestamp` ahead of the service clock is never refused (the skew is
    /// checked one way).
    FutureTimestampAccepted,
    /// Answers carry no `X-Request-Duration`.
    NoRequestDuration,
    /// GET (any method) is served like POST.
    AnyMethod,
    /// Every `/decrypt-key` call takes 600 ms.
    SlowDecrypt,
    /// Every successful decrypt holds 50 ms, and answers 503 when more than 4 are in flight.
    SmallPool,
    /// `/auth` failures echo the presented client id and secret in the message.
    SecretInError,
    /// Error answers are `text/plain`, not JSON.
    ErrorNotJson,
    /// Error bodies are `{"code", "message"}` without the `error` wrapper.
    FlatErrorBody,
    /// Every error code is `ERROR`.
    GenericErrorCode,
    /// Error messages carry a 2,000-character debug dump.
    VerboseErrorMessage,
    /// `/auth` issues tokens that live a year (`expires_in` and `exp` agree).
    YearLongToken,
    /// `/auth` answers a client the first token it issued it, expired or not.
    FirstTokenForever,
    /// `/rotate-key` seals each new data key with its own first 12 bytes as the nonce.
    NonceFromKey,
    /// A call without `x-request-id` is served.
    RequestIdOptional,
    /// A 401 carries no `WWW-Authenticate`.
    NoWwwAuthenticate,
    /// Answers carry no `Cache-Control: no-store`.
    CacheableAnswers,
}

impl Mutant {
    /// Every mutant, in the order of the documentation.
    pub const ALL: [Mutant; 66] = [
        Mutant::AuthStatus201,
        Mutant::ExpiresInString,
        Mutant::WrongTokenType,
        Mutant::ZeroExpiresIn,
        Mutant::ShortTokenExp,
        Mutant::OpaqueToken,
        Mutant::AlgNoneHeader,
        Mutant::AcceptWrongSecret,
        Mutant::AcceptUnknownClient,
        Mutant::SecretPrefixAccepted,
        Mutant::NoCredentials500,
        Mutant::MalformedBasic500,
        Mutant::AnyGrantType,
        Mutant::JsonAuthBody,
        Mutant::NoTokenAccepted,
        Mutant::GarbageToken500,
        Mutant::UncheckedSignature,
        Mutant::AlgNoneAccepted,
        Mutant::BasicOnDecrypt,
        Mutant::ExpiredTokenAccepted,
        Mutant::TokenDiesEarly,
        Mutant::NoAliasBinding,
        Mutant::UnknownAlias500,
        Mutant::MissingPrefixAccepted,
        Mutant::WrongPrefix500,
        Mutant::AnyEnvelopeVersion,
        Mutant::LenientBase64,
        Mutant::FirstByteIgnored,
        Mutant::LastByteIgnored,
        Mutant::NonceIgnored,
        Mutant::TagStartIgnored,
        Mutant::TruncatedTagAccepted,
        Mutant::DecryptionFailure500,
        Mutant::MissingFields500,
        Mutant::MissingAliasKeyNotFound,
        Mutant::AnyContentType,
        Mutant::NoBodyLimit,
        Mutant::DecryptStatus201,
        Mutant::PlaintextFieldRenamed,
        Mutant::ShortPlaintext,
        Mutant::UnstablePlaintext,
        Mutant::RotateStatus201,
        Mutant::RotateWithoutAlias,
        Mutant::RotateShortPlaintext,
        Mutant::RotateForgetsOldKeys,
        Mutant::RotateSameKey,
        Mutant::RotateWrongAlias,
        Mutant::NoTraceEcho,
        Mutant::TraceIdRequired,
        Mutant::SkewIgnored,
        Mutant::FutureTimestampAccepted,
        Mutant::NoRequestDuration,
        Mutant::AnyMethod,
        Mutant::SlowDecrypt,
        Mutant::SmallPool,
        Mutant::SecretInError,
        Mutant::ErrorNotJson,
        Mutant::FlatErrorBody,
        Mutant::GenericErrorCode,
        Mutant::VerboseErrorMessage,
        Mutant::YearLongToken,
        Mutant::FirstTokenForever,
        Mutant::NonceFromKey,
        Mutant::RequestIdOptional,
        Mutant::NoWwwAuthenticate,
        Mutant::CacheableAnswers,
    ];

    /// The name used in the configuration, on the command line and in the admin API.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::AuthStatus201 => "auth_status_201",
            Mutant::ExpiresInString => "expires_in_string",
            Mutant::WrongTokenType => "wrong_token_type",
            Mutant::ZeroExpiresIn => "zero_expires_in",
            Mutant::ShortTokenExp => "short_token_exp",
            Mutant::OpaqueToken => "opaque_token",
            Mutant::AlgNoneHeader => "alg_none_header",
            Mutant::AcceptWrongSecret => "accept_wrong_secret",
            Mutant::AcceptUnknownClient => "accept_unknown_client",
            Mutant::SecretPrefixAccepted => "secret_prefix_accepted",
            Mutant::NoCredentials500 => "no_credentials_500",
            Mutant::MalformedBasic500 => "malformed_basic_500",
            Mutant::AnyGrantType => "any_grant_type",
            Mutant::JsonAuthBody => "json_auth_body",
            Mutant::NoTokenAccepted => "no_token_accepted",
            Mutant::GarbageToken500 => "garbage_token_500",
            Mutant::UncheckedSignature => "unchecked_signature",
            Mutant::AlgNoneAccepted => "alg_none_accepted",
            Mutant::BasicOnDecrypt => "basic_on_decrypt",
            Mutant::ExpiredTokenAccepted => "expired_token_accepted",
            Mutant::TokenDiesEarly => "token_dies_early",
            Mutant::NoAliasBinding => "no_alias_binding",
            Mutant::UnknownAlias500 => "unknown_alias_500",
            Mutant::MissingPrefixAccepted => "missing_prefix_accepted",
            Mutant::WrongPrefix500 => "wrong_prefix_500",
            Mutant::AnyEnvelopeVersion => "any_envelope_version",
            Mutant::LenientBase64 => "lenient_base64",
            Mutant::FirstByteIgnored => "first_byte_ignored",
            Mutant::LastByteIgnored => "last_byte_ignored",
            Mutant::NonceIgnored => "nonce_ignored",
            Mutant::TagStartIgnored => "tag_start_ignored",
            Mutant::TruncatedTagAccepted => "truncated_tag_accepted",
            Mutant::DecryptionFailure500 => "decryption_failure_500",
            Mutant::MissingFields500 => "missing_fields_500",
            Mutant::MissingAliasKeyNotFound => "missing_alias_key_not_found",
            Mutant::AnyContentType => "any_content_type",
            Mutant::NoBodyLimit => "no_body_limit",
            Mutant::DecryptStatus201 => "decrypt_status_201",
            Mutant::PlaintextFieldRenamed => "plaintext_field_renamed",
            Mutant::ShortPlaintext => "short_plaintext",
            Mutant::UnstablePlaintext => "unstable_plaintext",
            Mutant::RotateStatus201 => "rotate_status_201",
            Mutant::RotateWithoutAlias => "rotate_without_alias",
            Mutant::RotateShortPlaintext => "rotate_short_plaintext",
            Mutant::RotateForgetsOldKeys => "rotate_forgets_old_keys",
            Mutant::RotateSameKey => "rotate_same_key",
            Mutant::RotateWrongAlias => "rotate_wrong_alias",
            Mutant::NoTraceEcho => "no_trace_echo",
            Mutant::TraceIdRequired => "trace_id_required",
            Mutant::SkewIgnored => "skew_ignored",
            Mutant::FutureTimestampAccepted => "future_timestamp_accepted",
            Mutant::NoRequestDuration => "no_request_duration",
            Mutant::AnyMethod => "any_method",
            Mutant::SlowDecrypt => "slow_decrypt",
            Mutant::SmallPool => "small_pool",
            Mutant::SecretInError => "secret_in_error",
            Mutant::ErrorNotJson => "error_not_json",
            Mutant::FlatErrorBody => "flat_error_body",
            Mutant::GenericErrorCode => "generic_error_code",
            Mutant::VerboseErrorMessage => "verbose_error_message",
            Mutant::YearLongToken => "year_long_token",
            Mutant::FirstTokenForever => "first_token_forever",
            Mutant::NonceFromKey => "nonce_from_key",
            Mutant::RequestIdOptional => "request_id_optional",
            Mutant::NoWwwAuthenticate => "no_www_authenticate",
            Mutant::CacheableAnswers => "cacheable_answers",
        }
    }

    /// The contract rule it breaks, in one line.
    pub fn rule(self) -> &'static str {
        match self {
            Mutant::AuthStatus201 => "/auth answers 201 instead of 200",
            Mutant::ExpiresInString => "/auth answers expires_in as a string",
            Mutant::WrongTokenType => "/auth answers token_type \"mac\" instead of \"Bearer\"",
            Mutant::ZeroExpiresIn => "/auth answers expires_in 0",
            Mutant::ShortTokenExp => "the JWT's exp is half of expires_in after its iat",
            Mutant::OpaqueToken => "/auth answers an opaque token instead of a JWT",
            Mutant::AlgNoneHeader => "the JWT's header says alg none",
            Mutant::AcceptWrongSecret => "/auth answers 200 to a wrong client secret",
            Mutant::AcceptUnknownClient => "/auth answers 200 to an unknown client id",
            Mutant::SecretPrefixAccepted => "/auth accepts the client secret cut short",
            Mutant::NoCredentials500 => "/auth without Authorization answers 500 instead of 401",
            Mutant::MalformedBasic500 => "/auth with a malformed Basic header answers 500",
            Mutant::AnyGrantType => "/auth accepts any grant_type",
            Mutant::JsonAuthBody => "/auth accepts a JSON body instead of a form",
            Mutant::NoTokenAccepted => "/decrypt-key without Authorization is served",
            Mutant::GarbageToken500 => "a bearer token that is not a JWT answers 500",
            Mutant::UncheckedSignature => "JWT signatures are not verified",
            Mutant::AlgNoneAccepted => "a JWT with alg none is accepted",
            Mutant::BasicOnDecrypt => "/decrypt-key accepts HTTP Basic client credentials",
            Mutant::ExpiredTokenAccepted => "an expired JWT is accepted",
            Mutant::TokenDiesEarly => "a JWT is refused once half its lifetime has passed",
            Mutant::NoAliasBinding => "a key wrapped for another alias decrypts",
            Mutant::UnknownAlias500 => "an unknown alias answers 500 instead of 404",
            Mutant::MissingPrefixAccepted => "an encrypted key without a prefix is read",
            Mutant::WrongPrefix500 => "an encrypted key with another prefix answers 500",
            Mutant::AnyEnvelopeVersion => "byok:v2: is read as byok:v1:",
            Mutant::LenientBase64 => "invalid base64 characters are dropped, not refused",
            Mutant::FirstByteIgnored => "a key altered in its first byte decrypts",
            Mutant::LastByteIgnored => "a key altered in its last byte decrypts",
            Mutant::NonceIgnored => "a key altered in its nonce decrypts",
            Mutant::TagStartIgnored => "a key altered in the first byte of its tag decrypts",
            Mutant::TruncatedTagAccepted => "a key with its tag cut short decrypts",
            Mutant::DecryptionFailure500 => "a key that does not decrypt answers 500",
            Mutant::MissingFields500 => "a body without key_alias or encrypted_key answers 500",
            Mutant::MissingAliasKeyNotFound => "a body without key_alias answers 404 KEY_NOT_FOUND",
            Mutant::AnyContentType => "/decrypt-key reads JSON whatever the Content-Type",
            Mutant::NoBodyLimit => "request bodies have no size limit",
            Mutant::DecryptStatus201 => "/decrypt-key answers 201 instead of 200",
            Mutant::PlaintextFieldRenamed => {
                "/decrypt-key answers plaintext instead of plaintext_key"
            }
            Mutant::ShortPlaintext => "/decrypt-key answers 16 bytes instead of 32",
            Mutant::UnstablePlaintext => "a key decrypted before answers another key",
            Mutant::RotateStatus201 => "/rotate-key answers 201 instead of 200",
            Mutant::RotateWithoutAlias => "/rotate-key answers without key_alias",
            Mutant::RotateShortPlaintext => "/rotate-key answers a 16-byte plaintext_dek",
            Mutant::RotateForgetsOldKeys => "after /rotate-key older keys no longer decrypt",
            Mutant::RotateSameKey => "/rotate-key answers the same data key every time",
            Mutant::RotateWrongAlias => "/rotate-key names another alias than the wrapping one",
            Mutant::NoTraceEcho => "answers do not echo X-Trace-Id",
            Mutant::TraceIdRequired => "a call without x-trace-id answers 400",
            Mutant::SkewIgnored => "x-request-timestamp is not compared with the clock",
            Mutant::FutureTimestampAccepted => "an x-request-timestamp in the future is accepted",
            Mutant::NoRequestDuration => "answers carry no X-Request-Duration",
            Mutant::AnyMethod => "GET is served like POST instead of 405",
            Mutant::SlowDecrypt => "every /decrypt-key call takes 600 ms",
            Mutant::SmallPool => "more than 4 decrypts in flight answer 503",
            Mutant::SecretInError => "/auth failures echo the client secret",
            Mutant::ErrorNotJson => "error answers are text/plain",
            Mutant::FlatErrorBody => "error bodies lack the error wrapper",
            Mutant::GenericErrorCode => "every error code is ERROR",
            Mutant::VerboseErrorMessage => "error messages carry a 2,000-character dump",
            Mutant::YearLongToken => "/auth issues tokens that live a year",
            Mutant::FirstTokenForever => "/auth answers the first token it issued, even expired",
            Mutant::NonceFromKey => {
                "/rotate-key seals a data key with its first 12 bytes as the nonce"
            }
            Mutant::RequestIdOptional => "a call without x-request-id is served",
            Mutant::NoWwwAuthenticate => "a 401 carries no WWW-Authenticate",
            Mutant::CacheableAnswers => "answers carry no Cache-Control: no-store",
        }
    }

    /// The mutant of a name.
    pub(crate) fn from_name(name: &str) -> Option<Mutant> {
        Mutant::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The word of [`Mutants`]' switches that holds this mutant's bit.
    pub(crate) fn word(self) -> usize {
        self as usize / 64
    }

    /// This mutant's bit in its word.
    pub(crate) fn bit(self) -> u64 {
        1 << (self as usize % 64)
    }
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mutant as the admin API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MutantInfo {
    /// Its name.
    pub(crate) name: String,
    /// The rule it breaks.
    pub(crate) rule: String,
    /// Whether it is switched on.
    pub(crate) on: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for m in Mutant::ALL {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name(), "{m:?}");
            assert_eq!(Mutant::from_name(m.name()), Some(m));
            assert!(seen.insert(m.name()));
            assert!(!m.rule().is_empty());
        }
        assert_eq!(Mutant::from_name("nope"), None);
    }

    #[test]
    fn the_readme_lists_every_mutant_with_its_rule() {
        let readme = include_str!("../../README.md");
        for m in Mutant::ALL {
            let row = format!("| `{}` | {} |", m.name(), m.rule());
            assert!(readme.contains(&row), "README.md lacks {row}");
        }
    }
}
