//! The unmodified simulator passes every check (skipping only what cannot run against it:
//! TLS on plain http, the token-expiry wait unless asked for), in each way of running.

use std::collections::BTreeSet;

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
        set(&[
            "tls.https",
            "tls.chain",
            "decrypt.wrong_api_key",
            "rotate.wrong_api_key",
            "token.reuse",
            "token.expired",
            "token.renewed"
        ])
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
        set(&[
            "tls.https",
            "tls.chain",
            "decrypt.wrong_api_key",
            "rotate.wrong_api_key"
        ])
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
    assert!(
        skipped.iter().all(|id| id.starts_with("tls.")
            || id.starts_with("auth.")
            || id.starts_with("token.")
            || id == "methods.auth"
            || id.ends_with(".tampered_token")),
        "{skipped:?}"
    );
    assert!(ids_with(&report, Outcome::Pass).contains("setup.credentials"));
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
        report
            .checks
            .iter()
            .all(|c| c.group == "auth" || c.group == "setup"),
        "{report:#?}"
    );
    assert_eq!(report.checks.len(), 16 + 2, "the setup checks always run");
    assert_eq!(report.checks[0].id, "setup.credentials");
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
                    // The request sent: fresh ids, the time, keys minted in the run.
                    "x-request-id" | "x-trace-id" => *val = Value::String("[uuid]".into()),
                    "x-request-timestamp" => *val = Value::String("[timestamp]".into()),
                    "encrypted_key" => *val = Value::String("[encrypted_key]".into()),
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

fn check_of<'a>(
    report: &'a scenarios::checks::CheckReport,
    id: &str,
) -> &'a scenarios::checks::Check {
    report.checks.iter().find(|c| c.id == id).unwrap()
}

/// The checks that were skipped for `reason`.
fn skipped_for(report: &scenarios::checks::CheckReport, reason: &str) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Skip && c.skip_reason.as_deref() == Some(reason))
        .map(|c| c.id.clone())
        .collect()
}

/// Asserts that every one of `ids` is in `set`.
fn assert_all_in(set: &BTreeSet<String>, ids: &[&str], what: &str) {
    let missing: Vec<&&str> = ids.iter().filter(|id| !set.contains(**id)).collect();
    assert!(
        missing.is_empty(),
        "not {what}: {missing:?}; {what}: {set:?}"
    );
}

const CREDENTIALS_REFUSED: &str =
    "the service refused the credentials you gave (see setup.credentials)";
const ALIAS_REFUSED: &str = "the service refused the key alias you gave (see setup.key_alias)";

#[tokio::test]
async fn a_wrong_client_secret_is_said_first_and_what_needs_it_is_skipped_not_failed() {
    let kms = spawn_kms(config()).await;
    let args = ByokArgs {
        client_secret: Some("the-customer-typed-this-wrong".into()),
        ..kms.args()
    };
    let report = check(&args).await;
    assert!(!report.holds());
    assert_eq!(failing(&report), set(&["setup.credentials"]), "{report:#?}");
    let first_failure = report.checks.iter().find(|c| c.result == Outcome::Fail);
    assert_eq!(first_failure.unwrap().id, "setup.credentials", "said first");
    let c = check_of(&report, "setup.credentials");
    let fix = c.how_to_fix.as_deref().unwrap();
    assert!(
        fix.starts_with("the service refused the client id 'platform' and the secret you gave")
            && fix.contains("BYOK_CLIENT_SECRET"),
        "{fix}"
    );
    assert_eq!(c.evidence.0["status"], 401);
    let skipped = skipped_for(&report, CREDENTIALS_REFUSED);
    assert_all_in(
        &skipped,
        &[
            "setup.key_alias",
            "auth.status",
            "auth.shape",
            "auth.wrong_secret",
            "auth.wrong_grant_type",
            "auth.content_type",
            "auth.repeat",
            "decrypt.status",
            "decrypt.missing_fields",
            "rotate.status",
            "headers.no_trace_id",
            "methods.auth",
            "methods.decrypt",
            "load.errors",
            "token.reuse",
        ],
        "skipped for that reason",
    );
    // What does not need the right credentials still runs, and passes.
    let passed = ids_with(&report, Outcome::Pass);
    assert_all_in(
        &passed,
        &[
            "auth.unknown_client",
            "auth.no_authorization",
            "auth.malformed_basic",
        ],
        "passed",
    );
}

#[tokio::test]
async fn a_refused_api_key_is_said_first_too() {
    let kms = spawn_kms(config()).await;
    let args = ByokArgs {
        client_id: None,
        client_secret: None,
        api_key: Some("sk_not_the_key_at_all_4711".into()),
        ..kms.args()
    };
    let report = check(&args).await;
    assert_eq!(failing(&report), set(&["setup.credentials"]), "{report:#?}");
    let fix = check_of(&report, "setup.credentials")
        .how_to_fix
        .clone()
        .unwrap();
    assert!(fix.contains("refused the API key you gave") && fix.contains("BYOK_API_KEY"));
    assert!(skipped_for(&report, CREDENTIALS_REFUSED).contains("decrypt.status"));
}

#[rstest::rstest]
#[case::given_key(true)]
#[case::minted_key(false)]
#[tokio::test]
async fn a_mistyped_key_alias_is_said_first_and_what_needs_it_is_skipped_not_failed(
    #[case] given_key: bool,
) {
    let kms = spawn_kms(config()).await;
    let mut args = ByokArgs {
        key_alias: Some("tenant-aa".into()),
        ..kms.args()
    };
    if !given_key {
        args.encrypted_key = None;
        args.expected_plaintext = None;
    }
    let report = check(&args).await;
    assert_eq!(failing(&report), set(&["setup.key_alias"]), "{report:#?}");
    let fix = check_of(&report, "setup.key_alias")
        .how_to_fix
        .clone()
        .unwrap();
    assert!(
        fix.contains("no key alias 'tenant-aa' (404 KEY_NOT_FOUND)") && fix.contains("--key-alias"),
        "{fix}"
    );
    let skipped = skipped_for(&report, ALIAS_REFUSED);
    assert_all_in(
        &skipped,
        &[
            "decrypt.status",
            "decrypt.flipped_tag",
            "rotate.status",
            "rotate.old_keys",
            "headers.no_trace_id",
            "load.p50",
            "load.errors",
            "token.reuse",
        ],
        "skipped for that reason",
    );
    let passed = ids_with(&report, Outcome::Pass);
    assert_all_in(
        &passed,
        &["setup.credentials", "auth.status", "methods.decrypt"],
        "passed",
    );
}

#[tokio::test]
async fn a_mistyped_other_key_alias_skips_decrypt_other_alias_instead_of_passing_it() {
    let kms = spawn_kms(config()).await;
    let args = ByokArgs {
        other_key_alias: Some("tenant-zz".into()),
        ..kms.args()
    };
    let report = check(&args).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
    let c = check_of(&report, "decrypt.other_alias");
    assert_eq!(c.result, Outcome::Skip);
    assert_eq!(
        c.skip_reason.as_deref(),
        Some("the service has no alias 'tenant-zz' (404 KEY_NOT_FOUND): check --other-key-alias")
    );
}

#[tokio::test]
async fn a_disabled_key_alias_is_named_as_such() {
    let kms = spawn_kms(config()).await;
    let args = kms.args();
    kms.svc
        .keys()
        .set_status(ALIAS, customer_kms_sim::AliasStatus::Disabled)
        .unwrap();
    let report = check(&args).await;
    assert_eq!(failing(&report), set(&["setup.key_alias"]), "{report:#?}");
    let fix = check_of(&report, "setup.key_alias")
        .how_to_fix
        .clone()
        .unwrap();
    assert!(fix.contains("403 KEY_DISABLED"), "{fix}");
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
