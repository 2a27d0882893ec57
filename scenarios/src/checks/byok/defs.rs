//! Every check of `harness check byok`, in report order: stable ids, groups (the part of the
//! id before the dot), one-line descriptions, severities and the one-line fix of each.
//! `--list-checks` prints this table, and the README's check list is kept equal to it by a
//! test.

use crate::checks::CheckDef;

macro_rules! defs {
    ($($name:ident = $kind:ident($id:literal, $desc:literal, $fix:literal);)*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $desc)]
            pub const $name: CheckDef = CheckDef::$kind($id, $desc);
        )*
        /// Every check, in report order.
        pub const ALL: &[CheckDef] = &[$($name),*];
        /// The one-line fix of every check (`how_to_fix`), by id, in report order.
        pub(crate) const FIXES: &[(&str, &str)] = &[$(($id, $fix)),*];
    };
}

defs! {
    SETUP_CREDENTIALS = error("setup.credentials", "the service accepts the credentials given (client id and secret, or API key)", "the service refused the credentials you gave: check --client-id and the client secret (BYOK_CLIENT_SECRET), or the API key (BYOK_API_KEY); if they are right, the service's authentication is wrong");
    SETUP_KEY_ALIAS = error("setup.key_alias", "the service has the --key-alias given, enabled", "the service refused the key alias you gave: check --key-alias against the aliases configured at the service, and that the alias is enabled");

    TLS_HTTPS = warning("tls.https", "the key endpoints are served over https (plain http only on loopback)", "serve the key endpoints over https wherever the platform reaches them from another machine");
    TLS_CHAIN = error("tls.chain", "the TLS certificate chain verifies (system roots or --ca-cert)", "serve a certificate for the host that chains to a trusted root, or give the private CA with --ca-cert");

    AUTH_STATUS = error("auth.status", "right client credentials: /auth answers 200", "answer 200 with a token to POST /auth with the right Basic credentials and grant_type=client_credentials");
    AUTH_SHAPE = error("auth.shape", "/auth answers JSON {data:{access_token,token_type,expires_in}}", "answer application/json {\"data\": {\"access_token\": string, \"token_type\": \"Bearer\", \"expires_in\": integer}}");
    AUTH_TOKEN_TYPE = error("auth.token_type", "token_type is \"Bearer\" (in any case)", "answer token_type \"Bearer\"");
    AUTH_EXPIRES_IN = error("auth.expires_in", "expires_in is an integer above 0", "answer expires_in as a JSON integer of seconds above 0 (3600, not \"3600\" or 0)");
    AUTH_EXPIRES_IN_BOUND = warning("auth.expires_in_bound", "expires_in is at most a day (86400 s): the token is short-lived", "issue tokens that live minutes to hours (the reference uses 3600 s), never more than a day: a leaked token stays usable for as long as it lives");
    AUTH_JWT = error("auth.jwt", "access_token is a JWT (header.claims.signature)", "issue the access token as a signed JWT: base64url header, claims and signature joined by dots");
    AUTH_JWT_ALG = error("auth.jwt_alg", "the JWT's alg is set and not \"none\"", "sign the JWT and name the algorithm in its header (HS256, RS256, ...)");
    AUTH_JWT_EXP = error("auth.jwt_exp", "the JWT's exp agrees with expires_in", "set the JWT's exp to its iat plus expires_in");
    AUTH_REPEAT = error("auth.repeat", "/auth called again (after its token was used, and once more at once) answers 200 with a token that works", "answer every /auth with the right credentials with 200 and a token, however often the platform asks, and accept each token on /decrypt-key");
    AUTH_WRONG_SECRET = error("auth.wrong_secret", "a wrong client secret in every form (characters appended, cut short, a prefix, a suffix, its case changed, empty, white space around it, another :part) is refused with 401, the same way for wrong secrets of one length", "compare the whole client secret as sent, byte for byte and in constant time (never trimmed, never split past the first colon), and answer 401 alike whatever the guess");
    AUTH_UNKNOWN_CLIENT = error("auth.unknown_client", "a client id that is not the client's (unknown, its case changed, one character more or less) is refused with 401", "compare the whole client id exactly, and answer 401 to a client id you do not know");
    AUTH_BEARER_CREDENTIALS = error("auth.bearer_credentials", "a bearer token (an access token from /auth, the client secret) instead of Basic client credentials is refused with 401", "take only HTTP Basic client credentials on /auth: a token must not buy another token (answer 401)");
    AUTH_NO_AUTHORIZATION = error("auth.no_authorization", "no Authorization header (also with the client credentials in the form instead) is refused with 401", "take the client credentials from HTTP Basic only (never from the form, where they get logged), and answer 401 (not 5xx) when the Authorization header is missing");
    AUTH_MALFORMED_BASIC = error("auth.malformed_basic", "a malformed Basic header (not base64, no colon, empty, bytes that are not UTF-8) is refused with 400 or 401", "answer 400 or 401 (not 5xx) to a Basic header that is not base64 of UTF-8 id:secret");
    AUTH_WRONG_GRANT_TYPE = error("auth.wrong_grant_type", "a grant_type other than client_credentials (another, longer, a prefix, in other cases, empty, missing, given twice) is refused with 400", "answer 400 unless the form has exactly one grant_type, exactly client_credentials (values are case-sensitive)");
    AUTH_CONTENT_TYPE = error("auth.content_type", "a body that is not a form (JSON, text/plain, multipart, none) is refused with 400 or 415, and a form with a charset is served", "read /auth bodies only as application/x-www-form-urlencoded (its parameters, a charset among them, allowed); answer 400 or 415 to anything else");

    DECRYPT_STATUS = error("decrypt.status", "the encrypted key: /decrypt-key answers 200", "answer 200 with the plaintext to POST /decrypt-key with a valid token, the alias and its encrypted key");
    DECRYPT_SHAPE = error("decrypt.shape", "/decrypt-key answers JSON {data:{plaintext_key}}", "answer application/json {\"data\": {\"plaintext_key\": string}}");
    DECRYPT_PLAINTEXT = error("decrypt.plaintext", "plaintext_key is base64 of the expected 32-byte key", "answer plaintext_key as standard base64 (+ and /) of the 32-byte data key the encrypted key holds");
    DECRYPT_REPEATABLE = error("decrypt.repeatable", "the same request twice gives the same plaintext_key", "answer the same plaintext_key every time the same key is decrypted");
    DECRYPT_NO_TOKEN = error("decrypt.no_token", "no bearer token (no Authorization, Bearer alone, an empty header, the token in the query or the body instead) is refused with 401", "take the token from the Authorization header only, and answer 401 when it is missing, empty or holds no token");
    DECRYPT_GARBAGE_TOKEN = error("decrypt.garbage_token", "a garbage bearer token (random text, random JWT-shaped parts) is refused with 401", "answer 401 (not 5xx) to a bearer token that is neither a JWT you issued nor an API key");
    DECRYPT_TAMPERED_TOKEN = error("decrypt.tampered_token", "the token with its signature changed, empty, cut short or of another key, or its claims or header changed under the same signature, is refused with 401", "verify the JWT's whole signature over its header and claims on every call (never a cached verdict keyed by the signature) and answer 401 when it does not verify");
    DECRYPT_ALG_NONE = error("decrypt.alg_none", "an unsigned or mislabelled token (alg none in any case, no alg, alg of another family) is refused with 401", "accept only the one algorithm you sign with, whatever the token's header says, and answer 401 to anything else");
    DECRYPT_BASIC_CREDENTIALS = error("decrypt.basic_credentials", "the client credentials (HTTP Basic, or the secret as a bearer token) instead of a token are refused with 401", "accept only Authorization: Bearer with a token from /auth or the static key on /decrypt-key, and answer 401 to Basic and to the client secret");
    DECRYPT_WRONG_API_KEY = error("decrypt.wrong_api_key", "the static API key altered (a character changed, its case changed, cut, one more character) is refused with 401", "compare the whole static key, byte for byte and in constant time, and answer 401 when it differs in any way");
    DECRYPT_UNKNOWN_ALIAS = error("decrypt.unknown_alias", "an unknown key_alias (one of its own, the alias given in other cases, with a space or a character more) is refused with a 4xx", "compare the alias exactly and answer 404 KEY_NOT_FOUND (not 5xx) to an alias you do not have");
    DECRYPT_OTHER_ALIAS = error("decrypt.other_alias", "the key sent under another existing alias is refused with a 4xx", "bind each encrypted key to its alias (authenticate the alias with the key) and refuse it under any other");
    DECRYPT_MISSING_PREFIX = error("decrypt.missing_prefix", "the key without its byok:v1: prefix is refused with a 4xx", "refuse an encrypted key without the byok:v1: prefix with 400");
    DECRYPT_WRONG_PREFIX = error("decrypt.wrong_prefix", "the key with another prefix (kms:v1:, the prefix in other cases, after a space, its colon doubled) is refused with a 4xx", "compare the prefix exactly (byok:v1:, lower case, at the very start) and refuse anything else with 400 (not 5xx)");
    DECRYPT_V2_PREFIX = error("decrypt.v2_prefix", "the key labelled byok:v2: is refused with a 4xx", "refuse envelope versions you do not implement (byok:v2:) with 400");
    DECRYPT_BAD_BASE64 = error("decrypt.bad_base64", "the key whose text is not base64 of an envelope (a character outside base64, a space, nothing, one or four bytes) is refused with a 4xx", "decode the envelope strictly, check its length before reading its parts, and refuse anything else with 400 (never 5xx)");
    DECRYPT_FLIPPED_FIRST = error("decrypt.flipped_first", "the key with its first byte flipped is refused with a 4xx", "authenticate the envelope's first bytes (its version) with the rest, and refuse an altered key with 422");
    DECRYPT_FLIPPED_NONCE = error("decrypt.flipped_nonce", "the key with a byte of its nonce flipped (byok:v1: bytes 5 to 16) is refused with a 4xx", "decrypt with the nonce the envelope carries and refuse a key whose tag then fails with 422");
    DECRYPT_FLIPPED_BYTE = error("decrypt.flipped_byte", "the key with its middle byte flipped is refused with a 4xx", "verify the authentication tag before using the plaintext, and refuse a key that does not verify with 422");
    DECRYPT_FLIPPED_TAG = error("decrypt.flipped_tag", "the key with the first byte of its tag flipped (16th from the end) is refused with a 4xx", "compare every byte of the authentication tag, the first included, and refuse a key that does not verify with 422");
    DECRYPT_FLIPPED_LAST = error("decrypt.flipped_last", "the key with its last byte flipped is refused with a 4xx", "compare every byte of the authentication tag, the last included, and refuse a key that does not verify with 422");
    DECRYPT_FLIPPED_ANY_BYTE = error("decrypt.flipped_any_byte", "the key with any one of its bytes flipped (each in turn) is refused with a 4xx", "authenticate every byte of the envelope, its header, alias and key id too (as AES-GCM's associated data), and refuse a key altered anywhere with 422");
    DECRYPT_EXTENDED_KEY = error("decrypt.extended_key", "the key with bytes appended after it (1, 16) is refused with a 4xx", "require the envelope's exact length and refuse a key with anything after its tag with 400 or 422");
    DECRYPT_TRUNCATED_KEY = error("decrypt.truncated_key", "the key with its last 1 to 8 bytes cut off is refused with a 4xx", "require the whole 16-byte tag (never a tag length taken from the key) and refuse a shortened key with 400 or 422");
    DECRYPT_MISSING_FIELDS = error("decrypt.missing_fields", "JSON without key_alias, encrypted_key or data is refused with a 4xx", "answer 400 INVALID_REQUEST (not 5xx) to a body without data, key_alias or encrypted_key");
    DECRYPT_MISSING_FIELDS_CODE = warning("decrypt.missing_fields_code", "a request missing a field is refused with INVALID_REQUEST, not a code naming another problem", "answer a missing field with 400 INVALID_REQUEST naming the field: KEY_NOT_FOUND or UNAUTHORIZED sends the operator after the wrong setting");
    DECRYPT_MALFORMED_BODY = error("decrypt.malformed_body", "a body that is not the request (invalid JSON, fields of the wrong type or null, extra nesting) is refused with a 4xx", "parse the body strictly and answer 400 INVALID_REQUEST (never 5xx, never 200) to invalid JSON and to a field of the wrong type");
    DECRYPT_CONTENT_TYPE = error("decrypt.content_type", "a body not labelled JSON (text/plain, form, multipart, none, application/json-seq or jsonx) is refused with a 4xx, and JSON with a charset is served", "read /decrypt-key bodies only when labelled application/json (its parameters, a charset among them, allowed); answer 400 or 415 otherwise");
    DECRYPT_OVERSIZED = error("decrypt.oversized", "a 1 MiB body is refused with a 4xx, with Content-Length and chunked", "limit request bodies as they arrive, whether they announce their length or not (a few KiB is plenty), and answer 413 to larger ones");

    ROTATE_STATUS = error("rotate.status", "/rotate-key answers 200", "answer 200 with a new key to POST /rotate-key with a valid token and the alias");
    ROTATE_SHAPE = error("rotate.shape", "/rotate-key answers JSON {data:{encrypted_dek (byok:v1:...),key_alias,plaintext_dek}}", "answer application/json {\"data\": {\"encrypted_dek\": \"byok:v1:...\", \"key_alias\": string, \"plaintext_dek\": string}}");
    ROTATE_ALIAS = error("rotate.alias", "key_alias is the alias asked for (--key-alias, and --other-key-alias when given)", "rotate the alias that was asked for, whichever it is, and answer it as key_alias");
    ROTATE_PLAINTEXT = error("rotate.plaintext", "plaintext_dek is base64 of 32 bytes", "answer plaintext_dek as standard base64 of a new 32-byte data key");
    ROTATE_ROUNDTRIP = error("rotate.roundtrip", "encrypted_dek decrypts to plaintext_dek through /decrypt-key, under the alias asked for (each alias given)", "seal encrypted_dek under the master key of the alias asked for, so that it decrypts under that alias to exactly plaintext_dek");
    ROTATE_FRESH = error("rotate.fresh", "every rotation gives a data key never seen before (an earlier rotation's, --encrypted-key's)", "draw every data key from a cryptographic random generator (never a seeded or restarted one)");
    ROTATE_OLD_KEYS = error("rotate.old_keys", "keys from before a rotation still decrypt", "keep the older master-key versions for decryption after a rotation");
    ROTATE_BODY = error("rotate.body", "/rotate-key without a body is served, and a body that is not the request (invalid JSON, null, fields of the wrong type, not labelled JSON, 1 MiB) is refused with a 4xx", "serve /rotate-key without a body (the caller's default alias), parse a body strictly, and answer 400 (never 5xx) to one that is not {\"data\": {\"key_alias\": string}}");
    ROTATE_UNKNOWN_ALIAS = error("rotate.unknown_alias", "rotating an alias the service does not have is refused with a 4xx", "answer 404 KEY_NOT_FOUND to /rotate-key for an alias you do not have (never create it)");
    ROTATE_UNIQUE_NONCE = error("rotate.unique_nonce", "no two keys of several rotations are sealed under one nonce, and no nonce is a counter", "draw a fresh random nonce (12 bytes for AES-GCM) for every key you seal: a repeated nonce under one master key reveals the XOR of the keys and breaks the tag, and a counter starts again with the process");
    ROTATE_KEY_HIDDEN = error("rotate.key_hidden", "no plaintext key can be read inside its encrypted key", "seal the data key (AES-GCM under the master key) instead of carrying it in the encrypted key in clear or merely encoded");
    ROTATE_NO_TOKEN = error("rotate.no_token", "no bearer token (no Authorization, Bearer alone, an empty header, the token in the query or the body instead) is refused with 401", "take the token from the Authorization header only on /rotate-key too, and answer 401 when it is missing, empty or holds no token");
    ROTATE_GARBAGE_TOKEN = error("rotate.garbage_token", "a garbage bearer token (random text, random JWT-shaped parts) is refused with 401", "answer 401 (not 5xx) on /rotate-key to a bearer token that is neither a JWT you issued nor an API key");
    ROTATE_TAMPERED_TOKEN = error("rotate.tampered_token", "the token with its signature changed, empty, cut short or of another key, or its claims or header changed under the same signature, is refused with 401", "verify the JWT's whole signature on /rotate-key as on /decrypt-key, and answer 401 when it does not verify");
    ROTATE_ALG_NONE = error("rotate.alg_none", "an unsigned or mislabelled token (alg none in any case, no alg, alg of another family) is refused with 401", "accept only the one algorithm you sign with on /rotate-key too, and answer 401 to anything else");
    ROTATE_BASIC_CREDENTIALS = error("rotate.basic_credentials", "the client credentials (HTTP Basic, or the secret as a bearer token) instead of a token are refused with 401", "accept only Authorization: Bearer with a token from /auth or the static key on /rotate-key, and answer 401 to Basic and to the client secret");
    ROTATE_WRONG_API_KEY = error("rotate.wrong_api_key", "the static API key altered (a character changed, its case changed, cut, one more character) is refused with 401", "compare the whole static key on /rotate-key too, and answer 401 when it differs in any way");

    HEADERS_TRACE_ECHO = error("headers.trace_echo", "every answer echoes the x-trace-id sent as X-Trace-Id", "echo the x-trace-id of each request as X-Trace-Id on every answer, errors included");
    HEADERS_NO_TRACE_ID = error("headers.no_trace_id", "a call without the optional x-trace-id is served", "serve calls that carry no x-trace-id: the header is optional");
    HEADERS_REQUEST_DURATION = warning("headers.request_duration", "answers carry X-Request-Duration in milliseconds", "add X-Request-Duration (the milliseconds spent) to every answer");
    HEADERS_MALFORMED = error("headers.malformed", "malformed or missing tracing headers (a timestamp that is no date, without an offset or a date only, an x-request-id or x-trace-id that is no UUID, either left out) are answered without a 5xx", "validate x-request-id, x-request-timestamp and x-trace-id and answer 400 INVALID_REQUEST (never 5xx) when one is missing or malformed");
    HEADERS_REQUEST_ID_REQUIRED = warning("headers.request_id_required", "a call without x-request-id, or with one that is no UUID, is refused with a 4xx (x-request-id is required)", "require x-request-id and answer 400 INVALID_REQUEST when it is missing or not a UUID");
    HEADERS_SKEWED_TIMESTAMP = warning("headers.skewed_timestamp", "an x-request-timestamp an hour or ten minutes old, or as far ahead, is refused with a 4xx", "refuse an x-request-timestamp a few minutes away from your clock (5 minutes is usual), in the past or the future, with 400");

    METHODS_AUTH = error("methods.auth", "every method but POST on /auth (GET, HEAD, PUT, PATCH, DELETE, OPTIONS, TRACE) answers 405 with Allow: POST", "answer 405 with Allow: POST to every other method on /auth (an OPTIONS may instead answer 2xx with Allow naming POST)");
    METHODS_DECRYPT = error("methods.decrypt", "every method but POST on /decrypt-key (GET, HEAD, PUT, PATCH, DELETE, OPTIONS, TRACE) answers 405 with Allow: POST", "answer 405 with Allow: POST to every other method on /decrypt-key, even with a valid token and body");
    METHODS_ROTATE = error("methods.rotate", "every method but POST on /rotate-key (GET, HEAD, PUT, PATCH, DELETE, OPTIONS, TRACE) answers 405 with Allow: POST", "answer 405 with Allow: POST to every other method on /rotate-key, even with a valid token");

    TOKEN_REUSE = error("token.reuse", "the token keeps working until near its expiry", "accept a token until its expires_in has passed");
    TOKEN_EXPIRED = error("token.expired", "the token is refused with 401 on /decrypt-key and /rotate-key once expired", "check exp on every call, on every endpoint, and answer 401 from the second it passes");
    TOKEN_RENEWED = error("token.renewed", "once the token expired, /auth answers a new token that works", "issue a new token on every /auth (never the expired one again) and accept it until its own expiry");

    LOAD_P50 = error("load.p50", "median /decrypt-key latency under load is within the budget", "decrypt faster under concurrent calls (no per-call key derivation or connection set-up), or give the budget you need with --latency-budget-ms");
    LOAD_P99 = warning("load.p99", "99th-percentile /decrypt-key latency under load is within the budget", "remove the slow outliers under load (queues, locks, cold caches)");
    LOAD_ERRORS = error("load.errors", "every call under load answers 200 with the same plaintext_key", "serve --concurrency calls at once, each 200 with the same key");

    ERRORS_JSON = error("errors.json", "error answers are JSON, labelled application/json", "answer errors with a JSON body labelled application/json");
    ERRORS_WWW_AUTHENTICATE = warning("errors.www_authenticate", "every 401 carries WWW-Authenticate naming its scheme (Basic on /auth, Bearer elsewhere)", "send WWW-Authenticate with every 401 (RFC 9110 section 11.6.1): Basic on /auth, Bearer on the others");
    ERRORS_NO_STORE = warning("errors.no_store", "every answer holding a token or a key carries Cache-Control: no-store", "send Cache-Control: no-store with every answer that holds a token or a key (RFC 6749 section 5.1), so no cache keeps them");
    ERRORS_SHAPE = error("errors.shape", "error bodies are {error:{code,message}} with strings", "answer errors as {\"error\": {\"code\": string, \"message\": string}}");
    ERRORS_CODE = warning("errors.code", "error codes are the documented ones for their status", "use the documented code of each status (401 UNAUTHORIZED, 400 INVALID_REQUEST, 404 KEY_NOT_FOUND, ...)");
    ERRORS_MESSAGE = warning("errors.message", "error messages are short (200 characters at most) and printable", "keep error messages to one printable line of at most 200 characters");
    ERRORS_NO_SECRET = error("errors.no_secret", "no answer echoes a secret, token or plaintext key where it does not belong", "never echo a client secret, API key, token or plaintext key in an error body or a header, in whole, in part or encoded");
}

/// The one-line fix of a check.
pub(crate) fn how_to_fix(id: &str) -> Option<&'static str> {
    FIXES.iter().find(|(i, _)| *i == id).map(|(_, f)| *f)
}

/// The group that is always run and reported first: the run's own settings.
pub(crate) const SETUP_GROUP: &str = "setup";

/// The groups `--only` and `--skip` choose from, in report order (after [`SETUP_GROUP`]).
pub(crate) const GROUPS: &[&str] = &[
    "tls", "auth", "decrypt", "rotate", "headers", "methods", "token", "load", "errors",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_grouped_and_in_group_order() {
        let mut seen = std::collections::HashSet::new();
        let mut last_group = 0;
        for (i, d) in ALL.iter().enumerate() {
            assert!(seen.insert(d.id), "{} twice", d.id);
            // The setup group first, then the others in GROUPS order.
            let g = std::iter::once(SETUP_GROUP)
                .chain(GROUPS.iter().copied())
                .position(|g| g == d.group())
                .unwrap_or_else(|| panic!("{}: unknown group", d.id));
            assert!(g >= last_group, "{} out of group order", d.id);
            last_group = g;
            assert!(!d.description.is_empty() && !d.description.ends_with('.'));
            let fix = how_to_fix(d.id).expect("a fix");
            assert_eq!(FIXES[i].0, d.id);
            assert!(!fix.is_empty() && !fix.ends_with('.') && !fix.contains('\n'));
        }
        assert!(
            !GROUPS.contains(&SETUP_GROUP),
            "setup is not chosen, it always runs"
        );
        for g in GROUPS {
            assert!(ALL.iter().any(|d| d.group() == *g), "empty group {g}");
        }
    }

    #[test]
    fn the_readme_lists_every_check() {
        let readme = include_str!("../../../../docs/guide/check-byok.md");
        for d in ALL {
            let severity = match d.severity {
                crate::checks::Severity::Error => "error",
                crate::checks::Severity::Warning => "warning",
            };
            let fix = how_to_fix(d.id).unwrap_or_default();
            let row = format!("| `{}` | {severity} | {} | {fix} |", d.id, d.description);
            assert!(readme.contains(&row), "README.md lacks the row {row}");
        }
    }
}
