//! The customer-hosted key endpoints, one function per operation for the generator (the
//! functions carry no code).
#![allow(dead_code)]

use crate::error::ByokErrorBody;
use crate::wire::byok::{
    AuthForm, AuthResponse, DecryptKeyRequest, DecryptKeyResponse, RotateKeyRequest,
    RotateKeyResponse,
};

// ----- customer-hosted operations -----

#[utoipa::path(post, path = "/{partner}/byok/v1/auth", tag = "byok",
    params(
        ("partner" = String, Path, description = "A fixed neutral path segment agreed at set-up"),
        ("x-request-id" = String, Header, description = "Unique id of this call (a UUID)"),
        ("x-request-timestamp" = String, Header, format = DateTime, description = "When the caller sent the request"),
        ("x-trace-id" = Option<String>, Header, description = "Traces one request across services (a UUID)")
    ),
    request_body(content = AuthForm, content_type = "application/x-www-form-urlencoded"),
    security(("client_credentials" = [])),
    responses(
        (status = 200, description = "A short-lived token", body = AuthResponse),
        (status = 400, description = "INVALID_REQUEST", body = ByokErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ByokErrorBody),
        (status = 429, description = "RATE_LIMITED", body = ByokErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ByokErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = ByokErrorBody)
    ))]
fn byok_auth() {}

#[utoipa::path(post, path = "/{partner}/byok/v1/decrypt-key", tag = "byok",
    params(
        ("partner" = String, Path, description = "A fixed neutral path segment agreed at set-up"),
        ("x-request-id" = String, Header, description = "Unique id of this call (a UUID)"),
        ("x-request-timestamp" = String, Header, format = DateTime, description = "When the caller sent the request"),
        ("x-trace-id" = Option<String>, Header, description = "Traces one request across services (a UUID)")
    ),
    request_body = DecryptKeyRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The plaintext data key", body = DecryptKeyResponse),
        (status = 400, description = "INVALID_REQUEST", body = ByokErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ByokErrorBody),
        (status = 403, description = "KEY_DISABLED or KEY_REVOKED", body = ByokErrorBody),
        (status = 404, description = "KEY_NOT_FOUND", body = ByokErrorBody),
        (status = 422, description = "DECRYPTION_FAILED", body = ByokErrorBody),
        (status = 429, description = "RATE_LIMITED", body = ByokErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ByokErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = ByokErrorBody)
    ))]
fn byok_decrypt_key() {}

#[utoipa::path(post, path = "/{partner}/byok/v1/rotate-key", tag = "byok",
    params(
        ("partner" = String, Path, description = "A fixed neutral path segment agreed at set-up"),
        ("x-request-id" = String, Header, description = "Unique id of this call (a UUID)"),
        ("x-request-timestamp" = String, Header, format = DateTime, description = "When the caller sent the request"),
        ("x-trace-id" = Option<String>, Header, description = "Traces one request across services (a UUID)")
    ),
    request_body(content = Option<RotateKeyRequest>, description = "Optional: the alias to rotate; without it the caller's default alias"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A new data key, wrapped and in plaintext", body = RotateKeyResponse),
        (status = 400, description = "INVALID_REQUEST", body = ByokErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ByokErrorBody),
        (status = 403, description = "KEY_DISABLED or KEY_REVOKED", body = ByokErrorBody),
        (status = 404, description = "KEY_NOT_FOUND", body = ByokErrorBody),
        (status = 429, description = "RATE_LIMITED", body = ByokErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ByokErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = ByokErrorBody)
    ))]
fn byok_rotate_key() {}
