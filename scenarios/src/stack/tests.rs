//! The stack in process: BYOK wired end to end, a restart on the same database and URL, the
//! seed remembered beside a kept database, and the errors of bad options.

use chrono::Duration;
use contracts::clock::Clock;
use contracts::validate::sim::Advance;
use customer_kms_sim::{Endpoint, KmsConfig};
use platform::config::ApiKeyConfig;
use serde_json::{Value, json};

use super::*;

const START: &str = "2026-03-02T08:00:00Z";

fn simulated() -> StackOptions {
    StackOptions {
        seed: Some(7),
        ..StackOptions::simulated(parse_instant(START).unwrap())
    }
}

fn outbound() -> Value {
    json!({
        "app_config": {
            "app_id": "app-1",
            "app_version": 1,
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550199"}
        },
        "user_config": {"user_phone_number": "+14155550100"}
    })
}

async fn post(stack: &Stack, path: &str, body: &Value) -> (u16, Value) {
    let i = &stack.info().platform;
    let resp = reqwest::Client::new()
        .post(format!("{}{path}", i.url))
        .header("x-api-key", &i.api_key)
        .json(body)
        .send()
        .await
        .expect("the platform answers");
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or(Value::Null),
    )
}

async fn get(stack: &Stack, path: &str) -> (u16, Value) {
    let i = &stack.info().platform;
    let resp = reqwest::Client::new()
        .get(format!("{}{path}", i.url))
        .header("x-api-key", &i.api_key)
        .send()
        .await
        .expect("the platform answers");
    (
        resp.status().as_u16(),
        resp.json().await.unwrap_or(Value::Null),
    )
}

fn outbounds_path(stack: &Stack) -> String {
    let i = &stack.info().platform;
    format!(
        "/api/outbounds/v1/orgs/{}/workspaces/{}/outbounds",
        i.org_id, i.workspace_id
    )
}

fn data_keys_path(stack: &Stack) -> String {
    let i = &stack.info().platform;
    format!(
        "/admin/v1/orgs/{}/workspaces/{}/data-keys",
        i.org_id, i.workspace_id
    )
}

fn decrypts(stack: &Stack) -> usize {
    stack
        .kms()
        .audit()
        .count(|e| e.endpoint == Endpoint::DecryptKey && e.outcome == "OK")
}

#[tokio::test]
async fn a_call_is_sealed_under_the_key_service_s_data_key_and_survives_a_restart() {
    let mut stack = Stack::start(simulated()).await.unwrap();
    let info = stack.info().clone();
    assert_eq!(info.platform.org_id, DEFAULT_ORG);
    assert_eq!(info.platform.workspace_id, DEFAULT_WORKSPACE);
    assert_eq!(info.key_service.client_id, DEFAULT_CLIENT_ID);
    assert_eq!(info.key_service.key_alias, DEFAULT_KEY_ALIAS);
    assert_eq!(info.key_service.partner, DEFAULT_PARTNER);
    assert_eq!(
        info.key_service.byok_base_url,
        format!("{}/acme/byok/v1", info.key_service.url)
    );
    assert!(info.key_service.encrypted_key.starts_with("byok:v1:"));
    assert_eq!(
        (info.seed, info.platform.seed, info.key_service.seed),
        (7, 7, 7)
    );
    assert_eq!(
        info.clock.sim_start.as_deref(),
        Some("2026-03-02T08:00:00.000Z")
    );
    assert!(!info.platform.database.kept);
    assert_eq!(decrypts(&stack), 0, "no key is fetched before it is needed");

    let (status, body) = post(&stack, &outbounds_path(&stack), &outbound()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        stack.kms().audit().count(|e| e.endpoint == Endpoint::Auth),
        1,
        "client credentials exchanged once"
    );
    assert_eq!(decrypts(&stack), 1, "the configured data key decrypted");
    let (status, keys) = get(&stack, &data_keys_path(&stack)).await;
    assert_eq!(status, 200, "{keys}");
    assert_eq!(keys["items"].as_array().unwrap().len(), 1, "{keys}");
    assert_eq!(keys["items"][0]["provider"], "byok", "{keys}");
    assert_eq!(keys["items"][0]["key_alias"], DEFAULT_KEY_ALIAS, "{keys}");

    // The engine moves only when told (manual mode); the one clock moves for both sides.
    let moved = stack
        .driver()
        .advance(Advance::By(Duration::minutes(10)))
        .await
        .unwrap();
    assert_eq!(moved.calls_ended, 1, "{moved:?}");
    assert_eq!(
        stack.kms().now(),
        parse_instant("2026-03-02T08:10:00Z").unwrap()
    );
    assert_eq!(stack.telephony().journal().len(), 1);

    stack.restart_platform().await.unwrap();
    assert_eq!(stack.info().platform.url, info.platform.url, "same URL");
    let (status, keys) = get(&stack, &data_keys_path(&stack)).await;
    assert_eq!(status, 200, "{keys}");
    assert_eq!(
        keys["items"].as_array().unwrap().len(),
        1,
        "the same key after the restart, not a new one: {keys}"
    );
    let (status, body) = post(&stack, &outbounds_path(&stack), &outbound()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        decrypts(&stack),
        2,
        "a restarted platform fetches its key again"
    );
    stack
        .driver()
        .advance(Advance::By(Duration::minutes(1)))
        .await
        .unwrap();
    assert_eq!(
        stack.telephony().journal().len(),
        2,
        "the same telephony after a restart"
    );
    assert_eq!(
        Clock::now(stack.app().clock.as_ref()),
        parse_instant("2026-03-02T08:11:00Z").unwrap(),
        "the same clock after a restart"
    );
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_memory_database_is_kept_across_a_restart() {
    let mut stack = Stack::start(StackOptions {
        database: StackDatabase::Memory,
        ..simulated()
    })
    .await
    .unwrap();
    assert_eq!(stack.info().platform.database.path, ":memory:");
    let (status, body) = post(&stack, &outbounds_path(&stack), &outbound()).await;
    assert_eq!(status, 200, "{body}");
    stack.restart_platform().await.unwrap();
    let (status, keys) = get(&stack, &data_keys_path(&stack)).await;
    assert_eq!(status, 200, "{keys}");
    assert_eq!(keys["items"].as_array().unwrap().len(), 1, "{keys}");
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_kept_database_remembers_its_seed_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dev.db");
    let options = || StackOptions {
        database: StackDatabase::File(db.clone()),
        seed: None,
        ..simulated()
    };
    let first = Stack::start(options()).await.unwrap();
    let seed = first.info().seed;
    let (status, body) = post(&first, &outbounds_path(&first), &outbound()).await;
    assert_eq!(status, 200, "{body}");
    first.stop().await.unwrap();
    assert_eq!(
        std::fs::read_to_string(seed_file(&db)).unwrap().trim(),
        seed.to_string()
    );

    // Reopened without a seed: the same seed, so the same master keys read the same data.
    let second = Stack::start(options()).await.unwrap();
    assert_eq!(second.info().seed, seed);
    let (status, keys) = get(&second, &data_keys_path(&second)).await;
    assert_eq!(status, 200, "{keys}");
    assert_eq!(keys["items"].as_array().unwrap().len(), 1, "{keys}");
    let (status, body) = post(&second, &outbounds_path(&second), &outbound()).await;
    assert_eq!(status, 200, "{body}");
    second.stop().await.unwrap();

    let other = seed.wrapping_add(1);
    let e = Stack::start(StackOptions {
        seed: Some(other),
        ..options()
    })
    .await
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("pass --seed {seed}")) && msg.contains(&format!("seed {other}")),
        "{msg}"
    );
}

#[tokio::test]
async fn a_taken_port_is_named_with_the_fix() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let e = Stack::start(StackOptions {
        ports: Ports::Base(port),
        ..simulated()
    })
    .await
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}"))
            && msg.contains("platform")
            && msg.contains("--port-base"),
        "{msg}"
    );
}

#[tokio::test]
async fn the_key_service_configuration_chooses_client_and_alias() {
    let kms = KmsConfig::new("bank")
        .with_client("first", &["s1"])
        .with_client("second", &["s2"])
        .with_alias("a1", 1)
        .with_alias("a2", 1)
        .with_admin_token("admin-1");
    let stack = Stack::start(StackOptions {
        kms: Some(kms.clone()),
        byok: ByokOptions {
            client_id: Some("second".into()),
            key_alias: Some("a2".into()),
            ..Default::default()
        },
        ..simulated()
    })
    .await
    .unwrap();
    let k = stack.info().key_service.clone();
    assert_eq!(
        (
            k.partner.as_str(),
            k.client_id.as_str(),
            k.client_secret.as_str(),
            k.key_alias.as_str(),
            k.admin_token.as_str()
        ),
        ("bank", "second", "s2", "a2", "admin-1")
    );
    let (status, body) = post(&stack, &outbounds_path(&stack), &outbound()).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        stack
            .kms()
            .audit()
            .entries()
            .iter()
            .any(|e| e.endpoint == Endpoint::DecryptKey
                && e.caller.as_deref() == Some("second")
                && e.key_alias.as_deref() == Some("a2")),
        "the chosen client and alias"
    );
    stack.stop().await.unwrap();

    for (byok, expected) in [
        (
            ByokOptions {
                client_id: Some("third".into()),
                ..Default::default()
            },
            "no client 'third' in the key service's configuration (clients: first, second)",
        ),
        (
            ByokOptions {
                key_alias: Some("a3".into()),
                ..Default::default()
            },
            "no alias 'a3' in the key service's configuration (aliases: a1, a2)",
        ),
    ] {
        let e = Stack::start(StackOptions {
            kms: Some(kms.clone()),
            byok,
            ..simulated()
        })
        .await
        .unwrap_err();
        assert!(e.to_string().contains(expected), "{e}");
    }
}

#[tokio::test]
async fn platform_configurations_that_cannot_be_wired_are_refused() {
    let config = PlatformConfig {
        api_keys: vec![ApiKeyConfig::parse("org-9/ws-9=sk-other").unwrap()],
        ..Default::default()
    };
    let e = Stack::start(StackOptions {
        platform: config,
        ..simulated()
    })
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("no API key") && e.to_string().contains("org-1/ws-1=KEY"),
        "{e}"
    );

    let e = Stack::start(StackOptions {
        workspace: WorkspaceRef::new("org 1", "ws-1"),
        ..simulated()
    })
    .await
    .unwrap_err();
    assert!(e.to_string().contains("they go into URLs"), "{e}");
}

#[tokio::test]
async fn an_api_key_of_the_configuration_that_opens_the_workspace_is_the_one_shown() {
    let config = PlatformConfig {
        api_keys: vec![
            ApiKeyConfig::parse("org-9/ws-9=sk-other").unwrap(),
            ApiKeyConfig::parse("org-1/*=sk-mine:ci").unwrap(),
        ],
        ..Default::default()
    };
    let stack = Stack::start(StackOptions {
        platform: config,
        ..simulated()
    })
    .await
    .unwrap();
    assert_eq!(stack.info().platform.api_key, "sk-mine");
    stack.stop().await.unwrap();
}
