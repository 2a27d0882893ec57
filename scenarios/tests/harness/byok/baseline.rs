//! The unmodified simulator passes every check (skipping only what cannot run against it:
//! TLS on plain http, the token-expiry wait unless asked for), in each way of running.

use std::collections::BTreeSet;

use customer_kms_sim::KmsConfig;
use scenarios::checks::Outcome;
use scenarios::checks::byok::ByokArgs;
use scenarios::checks::byok::defs::ALL;
use serde_json::Value;

use super::*;

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn the_unmodified_simulator_passes_every_check() {
    let kms = spawn_kms(config()).await;
    let report = check(&kms.args()).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
    assert_eq!(
        ids_with(&report, Outcome::Skip),
        set(&["tls.https", "tls.chain", "token.reuse", "token.expired"])
    );
    let ids: Vec<&str> = report.checks.iter().map(|c| c.id.as_str()).collect();
    let all: Vec<&str> = ALL.iter().map(|d| d.id).collect();
    assert_eq!(ids, all, "every check once, in table order");
    assert!(report.holds());
}

#[tokio::test]
async fn with_a_short_lived_token_the_expiry_checks_wait_and_pass() {
    let clock = sim_clock();
    let kms = spawn_kms_on(config().with_expires_in(4), clock.shared()).await;
    let args = ByokArgs {
        expiry_wait_secs: Some(10),
        ..kms.args()
    };
    let report = check_at(&args, CheckTime::Simulated(clock)).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
    assert_eq!(
        ids_with(&report, Outcome::Skip),
        set(&["tls.https", "tls.chain"])
    );
}

#[tokio::test]
async fn a_static_api_key_and_a_key_minted_by_rotate_key() {
    let kms = spawn_kms(config()).await;
    let args = ByokArgs {
        client_id: None,
        client_secret: None,
        api_key: Some(API_KEY.into()),
        encrypted_key: None,
        expected_plaintext: None,
        ..kms.args()
    };
    let report = check(&args).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
    let skipped = ids_with(&report, Outcome::Skip);
    assert!(skipped.iter().all(|id| id.starts_with("tls.")
        || id.starts_with("auth.")
        || id.starts_with("token.")
        || id == "methods.auth_get"));
    assert_eq!(
        ids_with(&report, Outcome::Pass).len() + skipped.len(),
        ALL.len()
    );
}

#[tokio::test]
async fn only_and_skip_choose_the_groups() {
    let kms = spawn_kms(config()).await;
    let args = ByokArgs {
        only: vec!["auth".into(), "errors".into()],
        skip: vec!["errors".into()],
        ..kms.args()
    };
    let report = check(&args).await;
    assert!(
        report.checks.iter().all(|c| c.group == "auth"),
        "{report:#?}"
    );
    assert_eq!(report.checks.len(), 13);
    assert!(report.holds());
}

/// The JSON report of the unmodified simulator; values that change from run to run
/// (timings, the port, claims times, fingerprints of fresh keys) are replaced.
#[tokio::test]
async fn json_report_snapshot() {
    let kms = spawn_kms(config()).await;
    let report = check(&kms.args()).await;
    let mut v: Value = serde_json::from_str(&scenarios::report::to_json(&report)).unwrap();
    normalise(&mut v);
    insta::assert_json_snapshot!("byok_report", v);
}

fn normalise(v: &mut Value) {
    match v {
        // A service that answers 413 may close the connection before the answer is read:
        // then the evidence is the closed connection.
        Value::Object(map) if map.get("id").is_some_and(|id| id == "decrypt.oversized") => {
            map.insert("evidence".into(), Value::String("[413 or closed]".into()));
        }
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                match k.as_str() {
                    "elapsed_ms" | "p50_ms" | "p99_ms" | "max_ms" | "wall_ms" => {
                        *val = Value::String("[ms]".into())
                    }
                    "exp" | "iat" => *val = Value::String("[unix]".into()),
                    "sha256" => *val = Value::String("[sha256]".into()),
                    "encrypted_dek" => *val = Value::String("[encrypted_dek]".into()),
                    "target" => *val = Value::String("[target]".into()),
                    "answers" => *val = Value::String("[n]".into()),
                    _ => normalise(val),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        _ => {}
    }
}

#[tokio::test]
async fn a_wrong_partner_or_port_stops_the_check_with_a_clear_error() {
    let kms = spawn_kms(config()).await;
    let args = ByokArgs {
        partner: Some("nobody".into()),
        ..kms.args()
    };
    let err = cannot_run(&args).await;
    assert!(
        err.contains("nothing answers POST") && err.contains("--partner"),
        "{err}"
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let args = ByokArgs {
        base_url: Some(format!("http://127.0.0.1:{port}")),
        ..kms.args()
    };
    let err = cannot_run(&args).await;
    assert!(
        err.contains("could not connect") && err.contains("is the service running"),
        "{err}"
    );
}

#[tokio::test]
async fn a_service_that_refuses_the_credentials_fails_auth_and_skips_what_needs_a_token() {
    let kms = spawn_kms(
        KmsConfig::new(PARTNER)
            .with_seed(11)
            .with_client(CLIENT, &["another-secret-entirely"])
            .with_alias(ALIAS, 1),
    )
    .await;
    let mut args = kms.args();
    args.other_key_alias = None;
    let report = check(&args).await;
    assert!(!report.holds());
    assert!(failing(&report).contains("auth.status"));
    let skip = report
        .checks
        .iter()
        .find(|c| c.id == "decrypt.status")
        .unwrap();
    assert_eq!(skip.result, Outcome::Skip);
    assert!(
        skip.skip_reason
            .as_deref()
            .unwrap()
            .contains("no access token")
    );
}

/// An ordinary web server, as `python3 -m http.server` answers a POST: 501 with an HTML page.
async fn spawn_web_server() -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Read the head (the body, if any, is left unread: the answer closes).
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let page = "<!DOCTYPE HTML>\n<html><head><title>Error response</title></head>\
                            <body><h1>Error response</h1><p>Error code: 501</p>\
                            <p>Message: Unsupported method ('POST').</p></body></html>\n";
                let answer = format!(
                    "HTTP/1.0 501 Unsupported method ('POST')\r\nServer: SimpleHTTP/0.6\r\n\
                     Content-Type: text/html;charset=utf-8\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn an_ordinary_web_server_stops_the_check_with_a_clear_error() {
    let kms = spawn_kms(config()).await;
    let web = spawn_web_server().await;
    let args = ByokArgs {
        base_url: Some(format!("http://{web}")),
        ..kms.args()
    };
    let err = cannot_run(&args).await;
    assert!(
        err.contains(&format!(
            "POST http://{web}/acme/byok/v1/auth is not a key service"
        )) && err.contains("501 (text/html;charset=utf-8)")
            && err.contains("Unsupported method")
            && err.contains("check --base-url and --partner"),
        "{err}"
    );
}
