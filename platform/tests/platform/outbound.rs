//! Instant outbound over HTTP.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

fn body() -> Value {
    json!({
        "app_config": {
            "app_id": "app-1",
            "app_version": 2,
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550100"},
            "agent_variables": {"first_name": "Ada"},
            "app_type": "agent",
            "app_overrides": {"initial_bot_message": "Hello Ada", "initial_state_name": "greet"}
        },
        "user_config": {"user_phone_number": "+919876543210"},
        "webhook_config": {"url": "https://hooks.example.com/outbound", "metadata": {"ticket": 42}}
    })
}

/// Every file of the database: the main file, its WAL and shared memory.
pub fn database_bytes(app: &TestApp) -> Vec<u8> {
    let mut out = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = app.db.clone().into_os_string();
        p.push(suffix);
        if let Ok(b) = std::fs::read(p) {
            out.extend(b);
        }
    }
    out
}

pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn a_valid_request_answers_an_attempt_id() {
    let app = spawn_app().await;
    let (s, v) = app.post(&outbounds_path(), &body()).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    insta::assert_json_snapshot!("outbound_create", v);
    let id = v["attempt_id"].as_str().unwrap();
    let uuid = uuid_version(id);
    assert_eq!(uuid, Some(7), "UUIDv7: {id}");
    let bytes = database_bytes(&app);
    assert!(
        !contains(&bytes, "+919876543210"),
        "no plaintext user number on disk"
    );
    assert!(
        !contains(&bytes, "Ada"),
        "no plaintext agent variable on disk"
    );
}

fn uuid_version(s: &str) -> Option<u32> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    (hex.len() == 32).then(|| u32::from_str_radix(&hex[12..13], 16).ok())?
}

#[tokio::test]
async fn every_failure_of_a_request_at_once() {
    let app = spawn_app().await;
    let mut b = body();
    b["app_config"]["connection_config"]
        .as_object_mut()
        .unwrap()
        .remove("agent_phone_number");
    b["user_config"]["user_phone_number"] = json!("98765 43210");
    b["app_config"]["app_version"] = json!(1.5);
    b["webhook_config"]["url"] = json!("hooks.example.com");
    let (s, v) = app.post(&outbounds_path(), &b).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    insta::assert_json_snapshot!("outbound_422", v);
}
