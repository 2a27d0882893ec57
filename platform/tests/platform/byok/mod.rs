//! BYOK: the platform against the customer's key service. customer-kms-sim runs in process
//! on 127.0.0.1:0 on the platform's own simulated clock; wiremock stand-ins check requests
//! byte for byte and answer what the simulator will not (a 401 that persists).
//!
//! Counts of calls come from the key service's audit log (or wiremock's journal), times from
//! the simulated clock. One file per concern; the helpers they share here.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Duration, Utc};
use contracts::clock::{Clock, SimClock, Stopwatch, format_instant};
use contracts::wire::byok::EndpointScope;
use customer_kms_sim::auth::CallerKind;
use customer_kms_sim::{
    AliasStatus, AuditEntry, Endpoint, FaultKind, FaultSpec, FaultTrigger, KmsConfig,
};
use platform::config::{ByokConfig, Secret};
use platform::store::WorkspaceRef;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::helpers::*;
use crate::outbound::{contains, database_bytes};

mod exact_requests;
mod key_service;
mod outage;
mod reasons;
mod rotation;
mod secrets;

const PARTNER: &str = "acme";
const CLIENT_ID: &str = "platform";
const CLIENT_SECRET: &str = "client-secret-9f3a71";
const STATIC_KEY: &str = "sk_test_static_5c1d88";
/// The data key the customer wrapped for the workspace.
const DATA_KEY: [u8; 32] = [0x5a; 32];

enum Method {
    ClientCredentials,
    StaticKey,
}

/// A customer key service in process, on the platform's clock.
struct Kms {
    svc: customer_kms_sim::KeyService,
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Kms {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

impl Kms {
    fn count(&self, endpoint: Endpoint) -> usize {
        self.svc.audit().count(|e| e.endpoint == endpoint)
    }

    fn entries(&self, endpoint: Endpoint) -> Vec<AuditEntry> {
        self.svc
            .audit()
            .entries()
            .into_iter()
            .filter(|e| e.endpoint == endpoint)
            .collect()
    }

    fn fault(&self, kind: FaultKind, scope: EndpointScope, trigger: FaultTrigger) {
        self.svc
            .add_fault(FaultSpec::new(kind).on(scope).when(trigger))
            .unwrap();
    }
}

fn kms_config() -> KmsConfig {
    KmsConfig::new(PARTNER)
        .with_seed(11)
        .with_client(CLIENT_ID, &[CLIENT_SECRET])
        .with_api_key("static", STATIC_KEY)
        .with_alias("tenant-a", 1)
        .with_alias("tenant-b", 1)
        .with_expires_in(3600)
}

/// The data key wrapped under `alias` as the customer's service would (same configuration
/// and seed, so the same master keys).
fn wrapped(alias: &str) -> String {
    let svc = customer_kms_sim::KeyService::new(kms_config(), SimClock::at(START).shared())
        .expect("kms configuration");
    svc.wrap_data_key(alias, &DATA_KEY).unwrap().0
}

fn byok_entry(base: &str, how: &Method, alias: &str, encrypted_key: String) -> ByokConfig {
    let (client_id, client_secret, api_key) = match how {
        Method::ClientCredentials => (
            Some(CLIENT_ID.to_string()),
            Some(Secret::new(CLIENT_SECRET)),
            None,
        ),
        Method::StaticKey => (None, None, Some(Secret::new(STATIC_KEY))),
    };
    ByokConfig {
        org_id: ORG.into(),
        workspace_id: WS.into(),
        customer_base_url: base.into(),
        partner: PARTNER.into(),
        client_id,
        client_secret,
        api_key,
        key_alias: alias.into(),
        encrypted_key,
        data_key_cache_secs: 300,
        request_timeout_ms: 5_000,
        rotation_period_secs: None,
    }
}

/// A platform whose workspace `ORG/WS` uses BYOK against an in-process key service on the
/// platform's simulated clock. `edit` adjusts the workspace's entry.
async fn byok_app(how: Method, edit: impl FnOnce(&mut ByokConfig)) -> (TestApp, Kms) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let mut entry = byok_entry(&base, &how, "tenant-a", wrapped("tenant-a"));
    edit(&mut entry);
    let t = spawn_with(move |mut c| {
        c.byok.push(entry);
        c
    })
    .await;
    let svc = customer_kms_sim::KeyService::new(kms_config(), t.clock.shared()).unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = rx.await;
    }));
    (
        t,
        Kms {
            svc,
            addr,
            stop: Some(tx),
        },
    )
}

/// A valid instant outbound call (it needs the workspace's key to seal the request).
fn outbound() -> Value {
    json!({
        "app_config": {
            "app_id": "app-1",
            "app_version": 2,
            "connection_config": {"connection_id": "conn-a", "agent_phone_number": "+14155550100"},
            "agent_variables": {"first_name": "Ada"}
        },
        "user_config": {"user_phone_number": "+919876543210"}
    })
}

async fn post_outbound(t: &TestApp, trace_id: Option<&str>) -> (StatusCode, Value) {
    let mut req = t
        .client
        .post(t.url(&outbounds_path()))
        .header("x-api-key", KEY)
        .json(&outbound());
    if let Some(id) = trace_id {
        req = req.header("x-trace-id", id);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn outbound_ok(t: &TestApp) {
    let (s, v) = post_outbound(t, None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

fn now(t: &TestApp) -> DateTime<Utc> {
    Clock::now(&t.clock)
}

/// Moves the simulated clock through the simulation API (the engine runs every step due).
async fn advance_to(t: &TestApp, to: &str) -> Value {
    let (s, v) = t.post("/sim/v1/clock/advance", &json!({"to": to})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

fn admin_path(rest: &str) -> String {
    format!("/admin/v1/orgs/{ORG}/workspaces/{WS}/data-keys{rest}")
}

fn is_uuid(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok()
}

// Cohorts of a deployment, the data the key seals (rotation, outages).

const TRANSFORMATION: &str = r#"{
    "phone_number": {"column_name": "phone", "country_code": "US"},
    "user_identifier": {"column_name": "id", "required": true},
    "app_variables": {"plan": {"column_name": "plan", "required": true}}
}"#;

fn deployment_cohorts(dep: &str) -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts")
}

async fn upload_and_wait(t: &TestApp, base: &str, name: &str, csv: &str) -> String {
    let form = Form::new()
        .text("name", name.to_string())
        .part(
            "cohort_file",
            Part::bytes(csv.as_bytes().to_vec())
                .file_name("users.csv")
                .mime_str("text/csv")
                .unwrap(),
        )
        .part(
            "cohort_transformation_file",
            Part::bytes(TRANSFORMATION.as_bytes().to_vec())
                .file_name("t.json")
                .mime_str("application/json")
                .unwrap(),
        );
    let resp = t
        .client
        .post(t.url(&format!("{base}/upload")))
        .header("x-api-key", KEY)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v: Value = resp.json().await.unwrap();
    let id = v["cohort_id"].as_str().unwrap().to_string();
    let watch = Stopwatch::start();
    loop {
        let (s, v) = t.get(&format!("{base}/{id}")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if v["status"] != "processing" {
            assert_eq!(v["status"], "completed", "{v}");
            return id;
        }
        assert!(watch.elapsed() < StdDuration::from_secs(60), "{v}");
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
}

async fn cohort_file(t: &TestApp, base: &str, id: &str) -> String {
    let resp = t
        .client
        .get(t.url(&format!("{base}/{id}/files?file_type=cohort")))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp.text().await.unwrap()
}

async fn inbound(t: &TestApp, caller: &str, dialled: &str) -> Value {
    let (s, v) = t
        .post(
            &format!("/sim/v1/orgs/{ORG}/workspaces/{WS}/inbound-calls"),
            &json!({"caller": caller, "dialled": dialled}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// The data key ids of a cohort's stored users.
async fn sealed_with(t: &TestApp, cohort: &str) -> Vec<u32> {
    let id = cohort.to_string();
    let users = t
        .app
        .store
        .read(move |c| platform::store::cohorts::users_after(c, &id, 0, 100))
        .await
        .unwrap();
    users
        .iter()
        .map(|u| platform::keys::blob_key_id(&u.data).unwrap())
        .collect()
}

const DESK: &str = "+14155550190";
const CSV_A: &str = "phone,id,plan\n+12025550143,a1,gold\n+12025550144,a2,silver\n";
const CSV_B: &str = "phone,id,plan\n+13125550145,b1,bronze\n";

async fn desk(t: &TestApp) -> String {
    let (s, v) = t
        .post(
            &deployments_path(),
            &json!({
                "name": "Desk",
                "app_id": "app-1",
                "app_version": 1,
                "connection_configs": [{"connection_id": "conn-a", "phone_numbers": [DESK]}]
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["deployment_id"].as_str().unwrap().to_string()
}
