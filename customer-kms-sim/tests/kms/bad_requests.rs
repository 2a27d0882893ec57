//! The table of bad (and two good) requests: each case asserts its status and its body
//! separately; every body is pinned by a snapshot named after the case.

use base64::Engine as _;
use contracts::clock::format_instant;
use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID};
use customer_kms_sim::AliasStatus;
use customer_kms_sim::auth::Claims;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, RequestBuilder};
use rstest::rstest;
use serde_json::json;

use crate::helpers::*;

/// What a case can use: the app, a valid token, and `DATA_KEY` wrapped under tenant-a.
pub struct Fx {
    app: TestApp,
    token: String,
    good: String,
}

async fn fixture() -> Fx {
    let app = spawn_app().await;
    let token = app.token().await;
    let good = app.wrapped(ALIAS_A);
    Fx { app, token, good }
}

/// The envelope text with one byte of its decoded body flipped.
fn tamper(text: &str, index: usize) -> String {
    let mut body = unb64(&text["byok:v1:".len()..]);
    body[index] ^= 0x01;
    format!("byok:v1:{}", b64(&body))
}

fn claims(fx: &Fx) -> Claims {
    let now = fx.app.svc.now().timestamp();
    Claims {
        iss: "customer-kms-sim".into(),
        sub: CLIENT.into(),
        aud: "byok".into(),
        iat: now,
        exp: now + 3600,
        jti: "00000000-0000-4000-8000-00000000abcd".into(),
        epoch: 0,
    }
}

fn decrypt_with(fx: &Fx, bearer: &str) -> RequestBuilder {
    fx.app.decrypt_request(bearer, ALIAS_A, &fx.good)
}

fn decrypt_text(fx: &Fx, text: &str) -> RequestBuilder {
    fx.app.decrypt_request(&fx.token, ALIAS_A, text)
}

type Make = fn(&Fx) -> RequestBuilder;

#[rstest]
// --- /auth
#[case::basic_not_base64("basic_not_base64", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.byok("auth").header("authorization", "Basic !!!not-base64").form(&[("grant_type", "client_credentials")])) as Make)]
#[case::basic_without_colon("basic_without_colon", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.byok("auth").header("authorization", format!("Basic {}", b64(b"platform"))).form(&[("grant_type", "client_credentials")])) as Make)]
#[case::basic_missing("basic_missing", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.byok("auth").form(&[("grant_type", "client_credentials")])) as Make)]
#[case::bearer_on_auth("bearer_on_auth", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.byok("auth").bearer_auth(API_KEY).form(&[("grant_type", "client_credentials")])) as Make)]
#[case::unknown_client("unknown_client", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.auth_request("stranger", SECRET_1)) as Make)]
#[case::wrong_secret("wrong_secret", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.auth_request(CLIENT, "not-the-secret")) as Make)]
#[case::second_secret_accepted("second_secret_accepted", 200, None,
    (|fx| fx.app.auth_request(CLIENT, SECRET_2)) as Make)]
#[case::wrong_grant_type("wrong_grant_type", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("auth").basic_auth(CLIENT, Some(SECRET_1)).form(&[("grant_type", "password")])) as Make)]
#[case::missing_grant_type("missing_grant_type", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("auth").basic_auth(CLIENT, Some(SECRET_1)).form(&[("scope", "keys")])) as Make)]
#[case::grant_type_twice("grant_type_twice", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("auth").basic_auth(CLIENT, Some(SECRET_1)).form(&[("grant_type", "client_credentials"), ("grant_type", "client_credentials")])) as Make)]
#[case::json_instead_of_form("json_instead_of_form", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("auth").basic_auth(CLIENT, Some(SECRET_1)).json(&json!({"grant_type": "client_credentials"}))) as Make)]
// --- bearer
#[case::missing_bearer("missing_bearer", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.byok("decrypt-key").json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::basic_instead_of_bearer("basic_instead_of_bearer", 401, Some("UNAUTHORIZED"),
    (|fx| fx.app.byok("decrypt-key").basic_auth(CLIENT, Some(SECRET_1)).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::garbage_bearer("garbage_bearer", 401, Some("UNAUTHORIZED"),
    (|fx| decrypt_with(fx, "not-a-token")) as Make)]
#[case::expired_jwt("expired_jwt", 401, Some("UNAUTHORIZED"),
    (|fx| { fx.app.advance(3600); decrypt_with(fx, &fx.token) }) as Make)]
#[case::jwt_valid_until_its_last_second("jwt_valid_until_its_last_second", 200, None,
    (|fx| { fx.app.advance(3599); decrypt_with(fx, &fx.token) }) as Make)]
#[case::jwt_after_expire_all("jwt_after_expire_all", 401, Some("UNAUTHORIZED"),
    (|fx| { fx.app.svc.expire_all_tokens(); decrypt_with(fx, &fx.token) }) as Make)]
#[case::jwt_signed_with_another_key("jwt_signed_with_another_key", 401, Some("UNAUTHORIZED"),
    (|fx| decrypt_with(fx, &jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims(fx), &EncodingKey::from_secret(&[1; 32])).unwrap())) as Make)]
#[case::jwt_hs512("jwt_hs512", 401, Some("UNAUTHORIZED"),
    (|fx| decrypt_with(fx, &jsonwebtoken::encode(&Header::new(Algorithm::HS512), &claims(fx), &EncodingKey::from_secret(&customer_kms_sim::keys::derive(SEED, b"jwt-signing-secret")[..])).unwrap())) as Make)]
#[case::jwt_alg_none("jwt_alg_none", 401, Some("UNAUTHORIZED"),
    (|fx| {
        let part = |v: serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let token = format!("{}.{}.", part(json!({"alg": "none", "typ": "JWT"})), part(serde_json::to_value(claims(fx)).unwrap()));
        decrypt_with(fx, &token)
    }) as Make)]
#[case::jwt_wrong_audience("jwt_wrong_audience", 401, Some("UNAUTHORIZED"),
    (|fx| decrypt_with(fx, &jsonwebtoken::encode(&Header::new(Algorithm::HS256), &Claims { aud: "someone-else".into(), ..claims(fx) }, &EncodingKey::from_secret(&customer_kms_sim::keys::derive(SEED, b"jwt-signing-secret")[..])).unwrap())) as Make)]
#[case::static_api_key_accepted("static_api_key_accepted", 200, None,
    (|fx| decrypt_with(fx, API_KEY)) as Make)]
// --- decrypt-key body and keys
#[case::unknown_alias("unknown_alias", 404, Some("KEY_NOT_FOUND"),
    (|fx| fx.app.decrypt_request(&fx.token, "tenant-zz", &fx.good)) as Make)]
#[case::alias_swap("alias_swap", 422, Some("DECRYPTION_FAILED"),
    (|fx| fx.app.decrypt_request(&fx.token, ALIAS_B, &fx.app.svc.keys().wrap_at(ALIAS_A, 1, [5; 12], &DATA_KEY).unwrap())) as Make)]
#[case::tampered_tag("tampered_tag", 422, Some("DECRYPTION_FAILED"),
    (|fx| decrypt_text(fx, &tamper(&fx.good, 4 + 12 + 32 + 5))) as Make)]
#[case::tampered_nonce("tampered_nonce", 422, Some("DECRYPTION_FAILED"),
    (|fx| decrypt_text(fx, &tamper(&fx.good, 4 + 3))) as Make)]
#[case::tampered_ciphertext("tampered_ciphertext", 422, Some("DECRYPTION_FAILED"),
    (|fx| decrypt_text(fx, &tamper(&fx.good, 4 + 12 + 7))) as Make)]
#[case::tampered_version("tampered_version", 422, Some("DECRYPTION_FAILED"),
    (|fx| decrypt_text(fx, &tamper(&fx.good, 3))) as Make)]
#[case::missing_prefix("missing_prefix", 400, Some("INVALID_REQUEST"),
    (|fx| decrypt_text(fx, &fx.good["byok:v1:".len()..])) as Make)]
#[case::byok_v2("byok_v2", 400, Some("INVALID_REQUEST"),
    (|fx| decrypt_text(fx, &fx.good.replace("byok:v1:", "byok:v2:"))) as Make)]
#[case::bad_base64("bad_base64", 400, Some("INVALID_REQUEST"),
    (|fx| decrypt_text(fx, &format!("{}!", fx.good))) as Make)]
#[case::truncated("truncated", 400, Some("INVALID_REQUEST"),
    (|fx| decrypt_text(fx, &format!("byok:v1:{}", b64(&unb64(&fx.good["byok:v1:".len()..])[..20])))) as Make)]
#[case::empty_encrypted_key("empty_encrypted_key", 400, Some("INVALID_REQUEST"),
    (|fx| decrypt_text(fx, "")) as Make)]
#[case::empty_alias("empty_alias", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.decrypt_request(&fx.token, "", &fx.good)) as Make)]
#[case::body_not_json("body_not_json", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("decrypt-key").bearer_auth(&fx.token).header("content-type", "application/json").body("{\"data\": ")) as Make)]
#[case::body_wrong_shape("body_wrong_shape", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("decrypt-key").bearer_auth(&fx.token).json(&json!({"key_alias": ALIAS_A, "encrypted_key": fx.good}))) as Make)]
#[case::form_instead_of_json("form_instead_of_json", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("decrypt-key").bearer_auth(&fx.token).form(&[("key_alias", ALIAS_A)])) as Make)]
#[case::oversized_body("oversized_body", 413, Some("PAYLOAD_TOO_LARGE"),
    (|fx| fx.app.decrypt_request(&fx.token, &"a".repeat(20_000), &fx.good)) as Make)]
#[case::disabled_alias("disabled_alias", 403, Some("KEY_DISABLED"),
    (|fx| { fx.app.svc.keys().set_status(ALIAS_A, AliasStatus::Disabled).unwrap(); decrypt_with(fx, &fx.token) }) as Make)]
#[case::revoked_alias("revoked_alias", 403, Some("KEY_REVOKED"),
    (|fx| { fx.app.svc.keys().set_status(ALIAS_A, AliasStatus::Revoked).unwrap(); decrypt_with(fx, &fx.token) }) as Make)]
#[case::below_min_version("below_min_version", 422, Some("DECRYPTION_FAILED"),
    (|fx| { let old = fx.app.svc.keys().wrap_at(ALIAS_A, 1, [6; 12], &DATA_KEY).unwrap(); fx.app.svc.keys().set_min_version(ALIAS_A, 2).unwrap(); decrypt_text(fx, &old) }) as Make)]
#[case::unknown_version("unknown_version", 422, Some("DECRYPTION_FAILED"),
    (|fx| { let mut body = unb64(&fx.good[8..]); body[3] = 9; decrypt_text(fx, &format!("byok:v1:{}", b64(&body))) }) as Make)]
#[case::not_a_32_byte_key("not_a_32_byte_key", 422, Some("DECRYPTION_FAILED"),
    (|fx| decrypt_text(fx, &contracts::envelope::wrap(&customer_kms_sim::keys::derive_master_key(SEED, ALIAS_A, 2), ALIAS_A, 2, [1; 12], &[1; 16]).unwrap())) as Make)]
#[case::rotate_unknown_alias("rotate_unknown_alias", 404, Some("KEY_NOT_FOUND"),
    (|fx| fx.app.rotate_request(&fx.token, Some("tenant-zz"))) as Make)]
#[case::rotate_revoked_alias("rotate_revoked_alias", 403, Some("KEY_REVOKED"),
    (|fx| { fx.app.svc.keys().set_status(ALIAS_B, AliasStatus::Revoked).unwrap(); fx.app.rotate_request(&fx.token, Some(ALIAS_B)) }) as Make)]
#[case::rotate_body_not_json("rotate_body_not_json", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.byok("rotate-key").bearer_auth(&fx.token).header("content-type", "application/json").body("nope")) as Make)]
// --- methods, paths, headers
#[case::get_auth("get_auth", 405, Some("METHOD_NOT_ALLOWED"),
    (|fx| fx.app.bare(Method::GET, "auth")) as Make)]
#[case::get_decrypt_key("get_decrypt_key", 405, Some("METHOD_NOT_ALLOWED"),
    (|fx| fx.app.bare(Method::GET, "decrypt-key")) as Make)]
#[case::put_rotate_key("put_rotate_key", 405, Some("METHOD_NOT_ALLOWED"),
    (|fx| fx.app.bare(Method::PUT, "rotate-key")) as Make)]
#[case::unknown_endpoint("unknown_endpoint", 404, Some("NOT_FOUND"),
    (|fx| fx.app.byok("encrypt-key")) as Make)]
#[case::other_partner("other_partner", 404, Some("NOT_FOUND"),
    (|fx| fx.app.client.post(fx.app.url("/other/byok/v1/auth"))) as Make)]
#[case::missing_request_id("missing_request_id", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_TIMESTAMP, fx.app.timestamp()).bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::request_id_not_uuid("request_id_not_uuid", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_ID, "req-1").header(HEADER_REQUEST_TIMESTAMP, fx.app.timestamp()).bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::missing_timestamp("missing_timestamp", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_ID, request_uuid(99)).bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::timestamp_not_iso("timestamp_not_iso", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_ID, request_uuid(99)).header(HEADER_REQUEST_TIMESTAMP, "yesterday").bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::timestamp_skewed_past("timestamp_skewed_past", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_ID, request_uuid(99)).header(HEADER_REQUEST_TIMESTAMP, format_instant(fx.app.svc.now() - chrono::Duration::seconds(301))).bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::timestamp_skewed_future("timestamp_skewed_future", 400, Some("INVALID_REQUEST"),
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_ID, request_uuid(99)).header(HEADER_REQUEST_TIMESTAMP, format_instant(fx.app.svc.now() + chrono::Duration::seconds(301))).bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::timestamp_at_the_skew_limit("timestamp_at_the_skew_limit", 200, None,
    (|fx| fx.app.bare(Method::POST, "decrypt-key").header(HEADER_REQUEST_ID, request_uuid(99)).header(HEADER_REQUEST_TIMESTAMP, "2026-03-01T14:05:00+05:00").bearer_auth(&fx.token).json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": fx.good}}))) as Make)]
#[case::trace_id_not_uuid("trace_id_not_uuid", 400, Some("INVALID_REQUEST"),
    (|fx| decrypt_with(fx, &fx.token).header(HEADER_TRACE_ID, "trace me")) as Make)]
#[tokio::test]
async fn bad_request(
    #[case] name: &str,
    #[case] status: u16,
    #[case] code: Option<&str>,
    #[case] make: Make,
) {
    let fx = fixture().await;
    let r = read(make(&fx)).await;
    assert_eq!(r.status.as_u16(), status, "{name}: {}", r.body);
    assert_eq!(r.header("content-type"), Some("application/json"), "{name}");
    let body = r.json();
    match code {
        Some(code) => {
            assert_eq!(body["error"]["code"], code, "{name}");
            let message = body["error"]["message"].as_str().expect("message");
            assert!(
                !message.is_empty() && message.len() < 120,
                "{name}: {message}"
            );
            for secret in [SECRET_1, SECRET_2, API_KEY, &fx.token, &fx.good] {
                assert!(!r.body.contains(secret), "{name} echoes a secret");
            }
            assert_eq!(body.as_object().unwrap().len(), 1, "only `error`");
            assert_eq!(
                body["error"].as_object().unwrap().len(),
                2,
                "code and message"
            );
        }
        None => assert!(body["data"].is_object(), "{name}: {body}"),
    }
    assert!(
        r.header("x-request-id").is_some(),
        "{name}: X-Request-Id on every answer"
    );
    assert!(r.header("x-request-duration").is_some(), "{name}");
    if status == 405 {
        assert_eq!(r.header("allow"), Some("POST"));
    }
    insta::assert_json_snapshot!(format!("bad_request__{name}"), body);
}
