//! `harness verify` against a running platform: exit codes, the table, JSON and JUnit (a
//! snapshot), and errors that say how to fix them.

use std::net::SocketAddr;
use std::process::Output;

use contracts::clock::SimClock;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const KEY: &str = "sk-ci";
const DEPLOYMENTS: &str = "/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments";

/// A platform on 127.0.0.1:0 over a fresh database, on a simulated clock with a fixed seed.
struct Mock {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Mock {
    async fn start() -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let config = PlatformConfig {
            database: dir.path().join("p.db").display().to_string(),
            api_keys: vec![ApiKeyConfig::parse(&format!("acme/prod={KEY}:ci")).unwrap()],
            seed: Some(11),
            ..Default::default()
        };
        let app = App::builder(config)
            .sim_clock(SimClock::at("2026-03-02T12:00:00Z"))
            .build()
            .unwrap();
        let platform = platform::server::Platform::from_config(app).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(platform::server::serve(platform, listener, async {
            let _ = rx.await;
        }));
        Mock {
            addr,
            stop: Some(tx),
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A client's request: status and body.
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> u16 {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.url()))
            .header("x-api-key", KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap().status().as_u16()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Runs `harness` with `args` off the async threads.
async fn harness(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(&args)
            .env_remove("HARNESS_URL")
            .env_remove("HARNESS_API_KEY")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn verify_args(mock: &Mock, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["verify", "--url", &mock.url(), "--api-key", KEY]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn deployment(name: &str, number: &str) -> Value {
    json!({"name": name, "app_id": "app-1", "app_version": 1,
           "connection_configs": [{"connection_id": "c", "phone_numbers": [number]}]})
}

#[tokio::test]
async fn a_client_that_keeps_the_contract_passes() {
    let mock = Mock::start().await;
    let s = mock
        .call(
            reqwest::Method::POST,
            DEPLOYMENTS,
            Some(deployment("Desk", "+14155550100")),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        mock.call(reqwest::Method::GET, DEPLOYMENTS, None).await,
        200
    );
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("verify.json");
    let out = harness(verify_args(
        &mock,
        &["--json", json_path.to_str().unwrap(), "--min-coverage", "5"],
    ))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("PASS  deployments.create_deployment"),
        "{stdout}"
    );
    assert!(
        stdout.contains("SKIP  campaigns.create_campaign"),
        "{stdout}"
    );
    assert!(stdout.contains("(never called)"), "{stdout}");
    assert!(
        stdout.contains("2 requests: 2 kept the contract, 0 broke it"),
        "{stdout}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(json_path).unwrap()).unwrap();
    assert_eq!(report["suite"], "verify");
    assert_eq!(report["summary"]["errors"], 0);
}

#[tokio::test]
async fn a_broken_request_fails_with_one_junit_case_per_operation() {
    let mock = Mock::start().await;
    mock.call(
        reqwest::Method::POST,
        DEPLOYMENTS,
        Some(deployment("Desk", "+14155550100")),
    )
    .await;
    let mut typo = deployment("Desk two", "+14155550101");
    typo["desciption"] = json!("front");
    assert_eq!(
        mock.call(reqwest::Method::POST, DEPLOYMENTS, Some(typo))
            .await,
        200
    );
    assert_eq!(
        mock.call(
            reqwest::Method::GET,
            &format!("{DEPLOYMENTS}?limit=500"),
            None
        )
        .await,
        422
    );
    assert_eq!(
        mock.call(reqwest::Method::GET, "/api/app-authoring/v1/agents", None)
            .await,
        404
    );
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("out/verify.xml");
    let out = harness(verify_args(&mock, &["--junit", junit.to_str().unwrap()])).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("FAIL  deployments.list_deployments"),
        "{stdout}"
    );
    assert!(stdout.contains("FAIL  routes.unknown"), "{stdout}");
    let xml = std::fs::read_to_string(&junit)
        .unwrap()
        .replace(&mock.url(), "http://MOCK");
    let operations = contracts::operations::Catalogue::platform()
        .operations()
        .len();
    assert_eq!(
        xml.matches("<testcase ").count(),
        operations + 2,
        "one case per operation, coverage and unknown routes"
    );
    insta::assert_snapshot!("verify_junit", xml);

    // The same journal, with violations allowed: warnings, exit 0.
    let out = harness(verify_args(&mock, &["--allow-violations"])).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("WARN  deployments.list_deployments"),
        "{stdout}"
    );
}

#[tokio::test]
async fn too_little_coverage_fails() {
    let mock = Mock::start().await;
    mock.call(reqwest::Method::GET, DEPLOYMENTS, None).await;
    let out = harness(verify_args(&mock, &["--min-coverage", "50"])).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  coverage.operations"), "{stdout}");
    assert!(stdout.contains("expected: at least 50%"), "{stdout}");
    let out = harness(verify_args(&mock, &["--min-coverage", "150"])).await;
    assert_eq!(out.status.code(), Some(2), "a bad flag");
    assert!(
        text(&out.stderr).contains("from 0 to 100"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn a_journal_that_cannot_be_read_exits_2_and_says_why() {
    let mock = Mock::start().await;
    let out = harness(vec!["verify".into(), "--url".into(), mock.url()]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--api-key"),
        "{}",
        text(&out.stderr)
    );
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let out = harness(vec![
        "verify".into(),
        "--url".into(),
        format!("http://{closed}"),
        "--api-key".into(),
        KEY.into(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot reach the platform"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn help_shows_examples() {
    let out = harness(vec!["verify".into(), "--help".into()]).await;
    let help = text(&out.stdout);
    assert!(
        help.contains("Examples:") && help.contains("--min-coverage 80"),
        "{help}"
    );
}
