//! `spawn_app()`: a platform on 127.0.0.1:0 over a fresh SQLite file, on a simulated clock
//! with seeded ids, and request helpers.

use std::net::SocketAddr;
use std::path::PathBuf;

use contracts::clock::SimClock;
use platform::App;
use platform::app::AppBuilder;
use platform::config::{ApiKeyConfig, PlatformConfig};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;

/// The simulated time every test starts at (a Monday).
pub const START: &str = "2026-03-02T12:00:00Z";
/// Org of the test keys.
pub const ORG: &str = "org-1";
/// Alice's workspace and key.
pub const WS: &str = "ws-1";
pub const KEY: &str = "key-alice";
/// Bob's workspace and key (another workspace of the same org).
pub const WS2: &str = "ws-2";
pub const KEY2: &str = "key-bob";
/// An operator's key of the journal and the fault rules (it sees every workspace's).
pub const OPS_KEY: &str = "key-ops";

pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub clock: SimClock,
    pub app: App,
    pub platform: platform::server::Platform,
    pub db: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    _dir: std::sync::Arc<tempfile::TempDir>,
}

pub fn config(db: &std::path::Path) -> PlatformConfig {
    PlatformConfig {
        database: db.display().to_string(),
        api_keys: vec![
            ApiKeyConfig::parse(&format!("{ORG}/{WS}={KEY}:alice")).unwrap(),
            ApiKeyConfig::parse(&format!("{ORG}/{WS2}={KEY2}:bob")).unwrap(),
        ],
        seed: Some(7),
        webhook_secret: Some(WEBHOOK_SECRET.into()),
        journal_admin_keys: vec![OPS_KEY.into()],
        ..Default::default()
    }
}

/// The webhook signing secret of test platforms.
pub const WEBHOOK_SECRET: &str = "whsec_test";

pub async fn spawn_app() -> TestApp {
    spawn_with(|c| c).await
}

pub async fn spawn_with(edit: impl FnOnce(PlatformConfig) -> PlatformConfig) -> TestApp {
    spawn_built(edit, |b| b).await
}

/// [`spawn_with`], with `build` adding to the app's builder (an in-process key service's
/// audit, ...).
pub async fn spawn_built(
    edit: impl FnOnce(PlatformConfig) -> PlatformConfig,
    build: impl FnOnce(AppBuilder) -> AppBuilder,
) -> TestApp {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let db = dir.path().join("platform.db");
    let clock = SimClock::at(START);
    let app = build(App::builder(edit(config(&db))).sim_clock(clock.clone()))
        .build()
        .expect("app builds");
    serve(app, clock, db, dir).await
}

async fn start(
    config: PlatformConfig,
    clock: SimClock,
    db: PathBuf,
    dir: std::sync::Arc<tempfile::TempDir>,
) -> TestApp {
    let app = App::builder(config)
        .sim_clock(clock.clone())
        .build()
        .expect("app builds");
    serve(app, clock, db, dir).await
}

async fn serve(
    app: App,
    clock: SimClock,
    db: PathBuf,
    dir: std::sync::Arc<tempfile::TempDir>,
) -> TestApp {
    let platform = platform::server::Platform::from_config(app.clone()).expect("platform builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(platform::server::serve(platform.clone(), listener, async {
        let _ = rx.await;
    }));
    TestApp {
        addr,
        client: reqwest::Client::new(),
        clock,
        app,
        platform,
        db,
        shutdown: Some(tx),
        server: Some(server),
        _dir: dir,
    }
}

impl TestApp {
    /// Stops the server (requests in flight finish) and starts a new one over the same
    /// database file and local key, on the same clock.
    pub async fn restart(mut self) -> TestApp {
        let config = self.app.config.clone();
        self.stop().await;
        let dir = self._dir.clone();
        let db = self.db.clone();
        let clock = self.clock.clone();
        drop(self);
        start(config, clock, db, dir).await
    }

    pub async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(s) = self.server.take() {
            s.await.unwrap();
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends a request with an optional key and JSON body; answers status and JSON body
    /// (`Value::Null` for an empty one).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.client.request(method, self.url(path));
        if let Some(k) = key {
            req = req.header("x-api-key", k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, Some(KEY), None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(KEY), Some(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(KEY), Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::PATCH, path, Some(KEY), Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, Some(KEY), None).await
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// `/api/scheduling/v1/orgs/org-1/workspaces/ws-1/campaigns`.
pub fn campaigns_path() -> String {
    format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/campaigns")
}

/// `/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments`.
pub fn deployments_path() -> String {
    format!("/api/app-authoring/v1/orgs/{ORG}/workspaces/{WS}/deployments")
}

/// `/api/outbounds/v1/orgs/org-1/workspaces/ws-1/outbounds`.
pub fn outbounds_path() -> String {
    format!("/api/outbounds/v1/orgs/{ORG}/workspaces/{WS}/outbounds")
}

/// A valid campaign body starting one hour after [`START`], ending three days later.
pub fn campaign_body() -> Value {
    serde_json::json!({
        "name": "Spring outreach",
        "description": "Reminder calls",
        "start_timestamp": "2026-03-02T13:00:00Z",
        "end_timestamp": "2026-03-05T13:00:00Z",
        "allowed_schedule": {
            "timezone": "America/New_York",
            "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
            "allowed_start_time": "09:00",
            "allowed_end_time": "17:00"
        },
        "app_config": {
            "app_id": "app-1",
            "app_version": 3,
            "attempts_per_second": 2,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550100"], "weight": 3},
                {"connection_id": "conn-b", "phone_numbers": ["+14155550101"], "weight": 1}
            ],
            "retry_config": {"max_retries": 2, "retry_on": ["busy", "short_duration"], "threshold_seconds": 10},
            "webhook_config": {"url": "https://hooks.example.com/calls", "metadata": {"team": "a"}}
        }
    })
}

/// A valid deployment body with the given name and number.
pub fn deployment_body(name: &str, number: &str) -> Value {
    serde_json::json!({
        "name": name,
        "app_id": "app-1",
        "app_version": 1,
        "connection_configs": [{"connection_id": "conn-a", "phone_numbers": [number]}],
        "description": "Front desk",
        "inbound_config": {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday", "Friday"], "timezone": "Asia/Kolkata"}
    })
}

/// Creates a campaign and answers its id.
pub async fn create_campaign(app: &TestApp) -> String {
    let (s, v) = app.post(&campaigns_path(), &campaign_body()).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["campaign_id"].as_str().unwrap().to_string()
}

/// Creates a deployment and answers its id.
pub async fn create_deployment(app: &TestApp, name: &str, number: &str) -> String {
    let (s, v) = app
        .post(&deployments_path(), &deployment_body(name, number))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["deployment_id"].as_str().unwrap().to_string()
}
