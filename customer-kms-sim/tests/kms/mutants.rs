//! Mutants: switched through the admin API, the configuration and `serve --mutant`; each
//! changes only its rule (the checker's tests in `scenarios` prove that rule by rule).

use customer_kms_sim::{KmsConfig, Mutant};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn the_admin_api_lists_and_switches_mutants() {
    let app = spawn_app().await;
    let list = read(app.admin(Method::GET, "/mutants")).await;
    assert_eq!(list.status, StatusCode::OK);
    let all = list.json()["mutants"].as_array().unwrap().clone();
    assert_eq!(all.len(), Mutant::ALL.len());
    let first = Mutant::ALL[0];
    assert_eq!(
        all[0],
        json!({"name": first.name(), "rule": first.rule(), "on": false})
    );

    let on = read(app.admin(Method::POST, "/mutants/wrong_token_type")).await;
    assert_eq!(on.status, StatusCode::OK);
    assert_eq!(on.json()["on"], true);
    let auth = read(app.auth_request(CLIENT, SECRET_1)).await;
    assert_eq!(
        auth.json()["data"]["token_type"],
        "mac",
        "the rule is broken"
    );

    let put = read(
        app.admin(Method::PUT, "/mutants")
            .json(&json!({"on": ["no_trace_echo", "any_method"]})),
    )
    .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert_eq!(
        app.svc.mutants().active(),
        [Mutant::NoTraceEcho, Mutant::AnyMethod]
    );
    let info = read(app.admin(Method::GET, "/info")).await;
    assert_eq!(
        info.json()["mutants"],
        json!(["no_trace_echo", "any_method"])
    );
    let auth = read(app.auth_request(CLIENT, SECRET_1)).await;
    assert_eq!(
        auth.json()["data"]["token_type"],
        "Bearer",
        "PUT replaced the set"
    );

    let off = read(app.admin(Method::DELETE, "/mutants/any_method")).await;
    assert_eq!(off.json()["on"], false);
    let cleared = read(app.admin(Method::DELETE, "/mutants")).await;
    assert_eq!(cleared.json(), json!({"removed": 1}));
    assert!(app.svc.mutants().active().is_empty());

    let unknown = read(app.admin(Method::POST, "/mutants/nope")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(
        unknown.body.contains("GET /_admin/mutants lists them"),
        "{}",
        unknown.body
    );
    let bad_put = read(
        app.admin(Method::PUT, "/mutants")
            .json(&json!({"on": ["nope"]})),
    )
    .await;
    assert_eq!(bad_put.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_reset_leaves_mutants_on() {
    let app = spawn_app_with(test_config().with_mutant(Mutant::SkewIgnored)).await;
    let reset = read(app.admin(Method::POST, "/reset")).await;
    assert_eq!(reset.status, StatusCode::OK);
    assert_eq!(app.svc.mutants().active(), [Mutant::SkewIgnored]);
}

#[tokio::test]
async fn a_mutant_breaks_its_rule_and_keeps_the_others() {
    let app = spawn_app_with(test_config().with_mutant(Mutant::NoAliasBinding)).await;
    let token = app.token().await;
    let key = app.wrapped(ALIAS_A);
    let other = read(app.decrypt_request(&token, ALIAS_B, &key)).await;
    assert_eq!(
        other.status,
        StatusCode::OK,
        "the key decrypts under another alias"
    );
    assert_eq!(
        unb64(other.json()["data"]["plaintext_key"].as_str().unwrap()),
        DATA_KEY
    );
    let mut bytes = unb64(key.strip_prefix("byok:v1:").unwrap());
    bytes[30] ^= 1;
    let tampered = format!("byok:v1:{}", b64(&bytes));
    let refused = read(app.decrypt_request(&token, ALIAS_A, &tampered)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "tampering still fails"
    );
    let no_token = read(
        app.byok("decrypt-key")
            .json(&json!({"data": {"key_alias": ALIAS_A, "encrypted_key": key}})),
    )
    .await;
    assert_eq!(no_token.status, StatusCode::UNAUTHORIZED);
}

#[test]
fn the_configuration_names_mutants_and_refuses_unknown_ones() {
    let c = KmsConfig::from_toml_str(
        "mutants = [\"any_method\", \"no_credentials_500\"]\n[[aliases]]\nname = \"a\"\n",
    )
    .unwrap();
    assert_eq!(c.mutants, [Mutant::AnyMethod, Mutant::NoCredentials500]);
    let err = KmsConfig::from_toml_str("mutants = [\"nope\"]\n[[aliases]]\nname = \"a\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `nope`"), "{err}");
}
