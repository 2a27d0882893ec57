//! `spawn_app()`: the key service on `127.0.0.1:0` with a simulated clock and a fixed seed,
//! and typed request helpers over reqwest.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use contracts::clock::{Clock, SimClock, format_instant};
use contracts::wire::byok::{HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP};
use customer_kms_sim::{KeyService, KmsConfig};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

pub const PARTNER: &str = "acme";
pub const CLIENT: &str = "platform";
pub const SECRET_1: &str = "client-secret-1";
pub const SECRET_2: &str = "client-secret-2";
pub const API_KEY_NAME: &str = "static-key";
pub const API_KEY: &str = "sk_test_static_0123456789";
pub const ADMIN_TOKEN: &str = "admin-test-token";
pub const ALIAS_A: &str = "tenant-a";
pub const ALIAS_B: &str = "tenant-b";
pub const SEED: u64 = 7;
pub const START: &str = "2026-03-01T09:00:00Z";
pub const DATA_KEY: [u8; 32] = [0x42; 32];

/// The configuration every test starts from: two secrets, one API key, `tenant-a` with two
/// derived versions, `tenant-b` with one.
pub fn test_config() -> KmsConfig {
    KmsConfig::new(PARTNER)
        .with_seed(SEED)
        .with_client(CLIENT, &[SECRET_1, SECRET_2])
        .with_api_key(API_KEY_NAME, API_KEY)
        .with_alias(ALIAS_A, 2)
        .with_alias(ALIAS_B, 1)
        .with_admin_token(ADMIN_TOKEN)
}

pub struct TestApp {
    pub svc: KeyService,
    pub clock: SimClock,
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    request_ids: AtomicU64,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(test_config()).await
}

pub async fn spawn_app_with(config: KmsConfig) -> TestApp {
    let clock = SimClock::at(START);
    let svc = KeyService::new_simulated(config, clock.clone()).expect("valid test config");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = stopped.await;
    }));
    TestApp {
        svc,
        clock,
        addr,
        client: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(20))
            .build()
            .unwrap(),
        request_ids: AtomicU64::new(1),
        stop: Some(stop),
    }
}

/// A deterministic UUID for the n-th request of a test.
pub fn request_uuid(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn endpoint_url(&self, endpoint: &str) -> String {
        self.url(&format!("/{PARTNER}/byok/v1/{endpoint}"))
    }

    /// The current time as `x-request-timestamp` wants it.
    pub fn timestamp(&self) -> String {
        format_instant(self.clock.now())
    }

    /// A request to a BYOK endpoint without any header.
    pub fn bare(&self, method: Method, endpoint: &str) -> RequestBuilder {
        self.client.request(method, self.endpoint_url(endpoint))
    }

    /// A POST to a BYOK endpoint with a fresh `x-request-id` and the current timestamp.
    pub fn byok(&self, endpoint: &str) -> RequestBuilder {
        let n = self.request_ids.fetch_add(1, Ordering::SeqCst);
        self.bare(Method::POST, endpoint)
            .header(HEADER_REQUEST_ID, request_uuid(n))
            .header(HEADER_REQUEST_TIMESTAMP, self.timestamp())
    }

    /// `/auth` with HTTP Basic and `grant_type=client_credentials`.
    pub fn auth_request(&self, id: &str, secret: &str) -> RequestBuilder {
        self.byok("auth")
            .basic_auth(id, Some(secret))
            .form(&[("grant_type", "client_credentials")])
    }

    /// A fresh access token for the test client.
    pub async fn token(&self) -> String {
        let r = read(self.auth_request(CLIENT, SECRET_1)).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        r.json()["data"]["access_token"]
            .as_str()
            .expect("access_token")
            .to_string()
    }

    /// `/decrypt-key` with a bearer token.
    pub fn decrypt_request(
        &self,
        bearer: &str,
        alias: &str,
        encrypted_key: &str,
    ) -> RequestBuilder {
        self.byok("decrypt-key")
            .bearer_auth(bearer)
            .json(&json!({"data": {"key_alias": alias, "encrypted_key": encrypted_key}}))
    }

    /// `/rotate-key` with a bearer token and an optional alias body.
    pub fn rotate_request(&self, bearer: &str, alias: Option<&str>) -> RequestBuilder {
        let r = self.byok("rotate-key").bearer_auth(bearer);
        match alias {
            Some(a) => r.json(&json!({"data": {"key_alias": a}})),
            None => r,
        }
    }

    /// [`DATA_KEY`] wrapped under the alias's current version, through the library.
    pub fn wrapped(&self, alias: &str) -> String {
        self.svc.wrap_data_key(alias, &DATA_KEY).unwrap().0
    }

    /// A request to the admin API with the admin token.
    pub fn admin(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(&format!("/_admin{path}")))
            .bearer_auth(ADMIN_TOKEN)
    }

    /// Moves the simulated clock forward.
    pub fn advance(&self, secs: i64) {
        self.clock.advance(chrono::Duration::seconds(secs)).unwrap();
    }
}

/// An answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Reply {
    /// The body as JSON; panics (failing the test) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `error.code` of an error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("not an error body: {:?}", self.body))
            .to_string()
    }
}

pub async fn read(req: RequestBuilder) -> Reply {
    let resp = req.send().await.expect("request sent");
    Reply {
        status: resp.status(),
        headers: resp.headers().clone(),
        body: resp.text().await.expect("body read"),
    }
}

/// Base64 (standard, padded).
pub fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Base64 decoding (standard, padded).
pub fn unb64(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("not base64 ({e}): {text:?}"))
}
