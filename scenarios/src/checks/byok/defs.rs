//! Every check of `harness check byok`, in report order: stable ids, groups (the part of the
//! id before the dot), one-line descriptions and severities. `--list-checks` prints this
//! table, and the README's check list is kept equal to it by a test.

use crate::checks::CheckDef;

macro_rules! defs {
    ($($name:ident = $kind:ident($id:literal, $desc:literal);)*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $desc)]
            pub const $name: CheckDef = CheckDef::$kind($id, $desc);
        )*
        /// Every check, in report order.
        pub const ALL: &[CheckDef] = &[$($name),*];
    };
}

defs! {
    TLS_HTTPS = warning("tls.https", "the key endpoints are served over https (plain http only on loopback)");
    TLS_CHAIN = error("tls.chain", "the TLS certificate chain verifies (system roots or --ca-cert)");

    AUTH_STATUS = error("auth.status", "right client credentials: /auth answers 200");
    AUTH_SHAPE = error("auth.shape", "/auth answers JSON {data:{access_token,token_type,expires_in}}");
    AUTH_TOKEN_TYPE = error("auth.token_type", "token_type is \"Bearer\" (in any case)");
    AUTH_EXPIRES_IN = error("auth.expires_in", "expires_in is an integer above 0");
    AUTH_JWT = error("auth.jwt", "access_token is a JWT (header.claims.signature)");
    AUTH_JWT_ALG = error("auth.jwt_alg", "the JWT's alg is set and not \"none\"");
    AUTH_JWT_EXP = error("auth.jwt_exp", "the JWT's exp agrees with expires_in");
    AUTH_WRONG_SECRET = error("auth.wrong_secret", "a wrong client secret is refused with 401");
    AUTH_UNKNOWN_CLIENT = error("auth.unknown_client", "an unknown client id is refused with 401");
    AUTH_NO_AUTHORIZATION = error("auth.no_authorization", "no Authorization header is refused with 401");
    AUTH_MALFORMED_BASIC = error("auth.malformed_basic", "a malformed Basic header is refused with 400 or 401");
    AUTH_WRONG_GRANT_TYPE = error("auth.wrong_grant_type", "a grant_type other than client_credentials is refused with 400");
    AUTH_JSON_BODY = error("auth.json_body", "a JSON body instead of a form is refused with 400 or 415");

    DECRYPT_STATUS = error("decrypt.status", "the encrypted key: /decrypt-key answers 200");
    DECRYPT_SHAPE = error("decrypt.shape", "/decrypt-key answers JSON {data:{plaintext_key}}");
    DECRYPT_PLAINTEXT = error("decrypt.plaintext", "plaintext_key is base64 of the expected 32-byte key");
    DECRYPT_REPEATABLE = error("decrypt.repeatable", "the same request twice gives the same plaintext_key");
    DECRYPT_NO_TOKEN = error("decrypt.no_token", "no Authorization header is refused with 401");
    DECRYPT_GARBAGE_TOKEN = error("decrypt.garbage_token", "a garbage bearer token is refused with 401");
    DECRYPT_TAMPERED_TOKEN = error("decrypt.tampered_token", "the token with one character changed is refused with 401");
    DECRYPT_ALG_NONE = error("decrypt.alg_none", "an unsigned token (alg none) is refused with 401");
    DECRYPT_UNKNOWN_ALIAS = error("decrypt.unknown_alias", "an unknown key_alias is refused with a 4xx");
    DECRYPT_OTHER_ALIAS = error("decrypt.other_alias", "the key sent under another existing alias is refused with a 4xx");
    DECRYPT_MISSING_PREFIX = error("decrypt.missing_prefix", "the key without its byok:v1: prefix is refused with a 4xx");
    DECRYPT_WRONG_PREFIX = error("decrypt.wrong_prefix", "the key with another prefix (kms:v1:) is refused with a 4xx");
    DECRYPT_V2_PREFIX = error("decrypt.v2_prefix", "the key labelled byok:v2: is refused with a 4xx");
    DECRYPT_BAD_BASE64 = error("decrypt.bad_base64", "the key with a character outside base64 is refused with a 4xx");
    DECRYPT_FLIPPED_BYTE = error("decrypt.flipped_byte", "the key with one ciphertext byte flipped is refused with a 4xx");
    DECRYPT_MISSING_FIELDS = error("decrypt.missing_fields", "JSON without key_alias, encrypted_key or data is refused with a 4xx");
    DECRYPT_CONTENT_TYPE = error("decrypt.content_type", "the JSON body labelled text/plain is refused with a 4xx");
    DECRYPT_OVERSIZED = error("decrypt.oversized", "a 1 MiB body is refused with a 4xx");

    ROTATE_STATUS = error("rotate.status", "/rotate-key answers 200");
    ROTATE_SHAPE = error("rotate.shape", "/rotate-key answers JSON {data:{encrypted_dek (byok:v1:...),key_alias,plaintext_dek}}");
    ROTATE_ALIAS = error("rotate.alias", "key_alias is the alias asked for");
    ROTATE_PLAINTEXT = error("rotate.plaintext", "plaintext_dek is base64 of 32 bytes");
    ROTATE_ROUNDTRIP = error("rotate.roundtrip", "encrypted_dek decrypts to plaintext_dek through /decrypt-key");
    ROTATE_FRESH = error("rotate.fresh", "a second rotation gives another data key");
    ROTATE_OLD_KEYS = error("rotate.old_keys", "keys from before a rotation still decrypt");

    HEADERS_TRACE_ECHO = error("headers.trace_echo", "every answer echoes the x-trace-id sent as X-Trace-Id");
    HEADERS_NO_TRACE_ID = error("headers.no_trace_id", "a call without the optional x-trace-id is served");
    HEADERS_REQUEST_DURATION = warning("headers.request_duration", "answers carry X-Request-Duration in milliseconds");
    HEADERS_SKEWED_TIMESTAMP = warning("headers.skewed_timestamp", "an x-request-timestamp one hour old is refused with a 4xx");

    METHODS_AUTH_GET = error("methods.auth_get", "GET /auth answers 405");
    METHODS_DECRYPT_GET = error("methods.decrypt_get", "GET /decrypt-key answers 405");
    METHODS_ROTATE_GET = error("methods.rotate_get", "GET /rotate-key answers 405");

    TOKEN_REUSE = error("token.reuse", "the token keeps working until near its expiry");
    TOKEN_EXPIRED = error("token.expired", "the token is refused with 401 once expired");

    LOAD_P50 = error("load.p50", "median /decrypt-key latency under load is within the budget");
    LOAD_P99 = warning("load.p99", "99th-percentile /decrypt-key latency under load is within the budget");
    LOAD_ERRORS = error("load.errors", "every call under load answers 200 with the same plaintext_key");

    ERRORS_JSON = error("errors.json", "error answers are JSON, labelled application/json");
    ERRORS_SHAPE = error("errors.shape", "error bodies are {error:{code,message}} with strings");
    ERRORS_CODE = warning("errors.code", "error codes are the documented ones for their status");
    ERRORS_MESSAGE = warning("errors.message", "error messages are short (200 characters at most) and printable");
    ERRORS_NO_SECRET = error("errors.no_secret", "no answer echoes a secret, token or plaintext key where it does not belong");
}

/// The groups, in report order.
pub const GROUPS: &[&str] = &[
    "tls", "auth", "decrypt", "rotate", "headers", "methods", "token", "load", "errors",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_grouped_and_in_group_order() {
        let mut seen = std::collections::HashSet::new();
        let mut last_group = 0;
        for d in ALL {
            assert!(seen.insert(d.id), "{} twice", d.id);
            let g = GROUPS
                .iter()
                .position(|g| *g == d.group())
                .unwrap_or_else(|| panic!("{}: unknown group", d.id));
            assert!(g >= last_group, "{} out of group order", d.id);
            last_group = g;
            assert!(!d.description.is_empty() && !d.description.ends_with('.'));
        }
        for g in GROUPS {
            assert!(ALL.iter().any(|d| d.group() == *g), "empty group {g}");
        }
    }

    #[test]
    fn the_readme_lists_every_check() {
        let readme = include_str!("../../../../README.md");
        for d in ALL {
            let severity = match d.severity {
                crate::checks::Severity::Error => "error",
                crate::checks::Severity::Warning => "warning",
            };
            let row = format!("| `{}` | {severity} | {} |", d.id, d.description);
            assert!(readme.contains(&row), "README.md lacks the row {row}");
        }
    }
}
