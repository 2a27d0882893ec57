//! The audit log: what each entry holds, and that no plaintext key, secret or token is in it.

use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID};
use customer_kms_sim::Endpoint;
use customer_kms_sim::auth::CallerKind;
use reqwest::{Method, StatusCode};

use crate::helpers::*;

const TRACE: &str = "11111111-2222-4333-8444-555555555555";

#[tokio::test]
async fn one_entry_per_call_with_its_details() {
    let app = spawn_app().await;
    let token = app.token().await;
    let text = app.wrapped(ALIAS_A);
    let id = request_uuid(500);
    let ts = app.timestamp();
    let r = read(
        app.bare(Method::POST, "decrypt-key")
            .header(HEADER_REQUEST_ID, &id)
            .header(HEADER_REQUEST_TIMESTAMP, &ts)
            .header(HEADER_TRACE_ID, TRACE)
            .bearer_auth(&token)
            .json(&serde_json::json!({"data": {"key_alias": ALIAS_A, "encrypted_key": text}})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    read(app.decrypt_request(API_KEY, ALIAS_B, &text)).await; // alias swap: 422
    read(app.bare(Method::GET, "rotate-key")).await; // 405

    let entries = app.svc.audit().entries();
    assert_eq!(entries.len(), 4);
    let [auth, ok, swap, get] = &entries[..] else {
        unreachable!()
    };

    assert_eq!(auth.endpoint, Endpoint::Auth);
    assert_eq!(auth.caller.as_deref(), Some(CLIENT));
    assert_eq!(auth.caller_kind, Some(CallerKind::Client));
    assert_eq!(auth.outcome, "OK");

    assert_eq!(ok.seq, auth.seq + 1);
    assert_eq!(ok.endpoint, Endpoint::DecryptKey);
    assert_eq!(ok.request_id.as_deref(), Some(id.as_str()));
    assert_eq!(ok.trace_id.as_deref(), Some(TRACE));
    assert_eq!(ok.request_timestamp.as_deref(), Some(ts.as_str()));
    assert_eq!(ok.caller.as_deref(), Some(CLIENT));
    assert_eq!(ok.key_alias.as_deref(), Some(ALIAS_A));
    assert_eq!(ok.key_version, Some(2));
    assert_eq!((ok.outcome.as_str(), ok.status), ("OK", Some(200)));
    assert_eq!(ok.time, app.svc.now());
    assert!(ok.latency_ms >= 0.0);

    assert_eq!(swap.caller.as_deref(), Some(API_KEY_NAME));
    assert_eq!(swap.caller_kind, Some(CallerKind::ApiKey));
    assert_eq!(swap.key_alias.as_deref(), Some(ALIAS_B));
    assert_eq!(swap.key_version, Some(2), "read from the envelope");
    assert_eq!(
        (swap.outcome.as_str(), swap.status),
        ("DECRYPTION_FAILED", Some(422))
    );

    assert_eq!(get.method, "GET");
    assert_eq!(get.outcome, "METHOD_NOT_ALLOWED");
    assert_eq!(get.caller, None);

    let mut shown = serde_json::to_value(ok).unwrap();
    shown["latency_ms"] = "[latency]".into();
    insta::assert_json_snapshot!("audit_entry", shown);
}

#[tokio::test]
async fn no_secret_plaintext_or_token_in_the_log() {
    let app = spawn_app().await;
    let token = app.token().await;
    read(app.auth_request(CLIENT, SECRET_2)).await;
    read(app.auth_request(CLIENT, "wrong-secret-value")).await;
    let text = app.wrapped(ALIAS_A);
    read(app.decrypt_request(&token, ALIAS_A, &text)).await;
    read(app.decrypt_request(API_KEY, ALIAS_A, &text)).await;
    let rotated = read(app.rotate_request(&token, Some(ALIAS_B))).await.json();
    let dek = rotated["data"]["plaintext_dek"]
        .as_str()
        .unwrap()
        .to_string();
    let admin_log = read(app.admin(Method::GET, "/audit")).await.body;
    let library_log = serde_json::to_string(&app.svc.audit().entries()).unwrap();
    let master = customer_kms_sim::keys::derive_master_key(SEED, ALIAS_A, 2);
    for log in [&admin_log, &library_log] {
        for secret in [
            SECRET_1,
            SECRET_2,
            "wrong-secret-value",
            API_KEY,
            ADMIN_TOKEN,
            &token,
            &b64(&DATA_KEY),
            &dek,
            &b64(&master[..]),
            &text,
        ] {
            assert!(!log.contains(secret), "the audit log holds {secret:?}");
        }
    }
    assert_eq!(app.svc.audit().len(), 6);
}

#[tokio::test]
async fn admin_reads_pages_and_clears_the_log() {
    let app = spawn_app().await;
    for _ in 0..5 {
        read(app.auth_request(CLIENT, SECRET_1)).await;
    }
    let page = read(app.admin(Method::GET, "/audit?after=2&limit=2"))
        .await
        .json();
    let seqs: Vec<u64> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [3, 4]);
    assert_eq!(page["next_seq"], 6);
    assert_eq!(page["dropped"], 0);
    let bad = read(app.admin(Method::GET, "/audit?after=minus-one")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.code(), "INVALID_REQUEST");

    let cleared = read(app.admin(Method::DELETE, "/audit")).await.json();
    assert_eq!(cleared["removed"], 5);
    assert!(app.svc.audit().is_empty());
}

#[tokio::test]
async fn the_log_is_bounded() {
    let mut config = test_config();
    config.audit_capacity = 3;
    let app = spawn_app_with(config).await;
    for _ in 0..5 {
        read(app.auth_request(CLIENT, SECRET_1)).await;
    }
    assert_eq!(app.svc.audit().len(), 3);
    assert_eq!(app.svc.audit().dropped(), 2);
    assert_eq!(app.svc.audit().entries()[0].seq, 3);
}

#[tokio::test]
async fn faults_that_fired_are_named_in_the_entry() {
    let app = spawn_app().await;
    let f = app
        .svc
        .add_fault(customer_kms_sim::FaultSpec::new(
            customer_kms_sim::FaultKind::ServiceUnavailable,
        ))
        .unwrap();
    read(app.auth_request(CLIENT, SECRET_1)).await;
    let e = app.svc.audit().entries().pop().unwrap();
    assert_eq!(e.faults, [f.id]);
    assert_eq!(e.fault_kinds, ["service_unavailable"]);
    assert_eq!(e.outcome, "SERVICE_UNAVAILABLE");
    assert_eq!(e.status, Some(503));
}

#[tokio::test]
async fn a_damaged_answer_is_logged_ok_with_the_fault_it_served() {
    let app = spawn_app().await;
    let token = app.token().await;
    let f = app
        .svc
        .add_fault(customer_kms_sim::FaultSpec::new(
            customer_kms_sim::FaultKind::MalformedJson,
        ))
        .unwrap();
    let r = read(app.decrypt_request(&token, ALIAS_A, &app.wrapped(ALIAS_A))).await;
    assert_eq!(r.status, StatusCode::OK);
    let e = app.svc.audit().entries().pop().unwrap();
    assert_eq!(
        e.outcome, "OK",
        "the call succeeded; its answer was damaged"
    );
    assert_eq!(e.faults, [f.id]);
    assert_eq!(e.fault_kinds, ["malformed_json"]);
}
