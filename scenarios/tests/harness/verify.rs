//! `harness verify` against a running platform: exit codes, the table, JSON and JUnit (a
//! snapshot), errors that say how to fix them, each workspace's own verdict from one
//! platform shared by many clients, and the report on exit that is the same in every form.
//! What the causes say of each kind of client mistake, what uploads led to, the refusals
//! and the warnings: [`causes`].

mod blind;
mod causes;

use std::net::SocketAddr;
use std::process::Output;

use contracts::clock::SimClock;
use platform::App;
use platform::config::{ApiKeyConfig, PlatformConfig};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const KEY: &str = "sk-ci";
const DEPLOYMENTS: &str = "/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments";

/// An operator's key of the mocks (a journal admin key).
const OPS_KEY: &str = "sk-ops";

/// A platform on 127.0.0.1:0 over a fresh database, on a simulated clock with a fixed seed.
struct Mock {
    addr: SocketAddr,
    app: App,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Mock {
    async fn start() -> Mock {
        Mock::with_keys(&[format!("acme/prod={KEY}:ci")]).await
    }

    /// A mock with these API keys (`ORG/WORKSPACE=KEY[:NAME]`) and the operator's key.
    async fn with_keys(keys: &[String]) -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let config = PlatformConfig {
            database: dir.path().join("p.db").display().to_string(),
            api_keys: keys
                .iter()
                .map(|k| ApiKeyConfig::parse(k).unwrap())
                .collect(),
            journal_admin_keys: vec![OPS_KEY.into()],
            seed: Some(11),
            ..Default::default()
        };
        let app = App::builder(config)
            .sim_clock(SimClock::at("2026-03-02T12:00:00Z"))
            .build()
            .unwrap();
        let platform = platform::server::Platform::from_config(app.clone()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(platform::server::serve(platform, listener, async {
            let _ = rx.await;
        }));
        Mock {
            addr,
            app,
            stop: Some(tx),
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A client's request: its status.
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> u16 {
        self.call_as(KEY, method, path, body).await
    }

    /// A request with `key`: its status.
    async fn call_as(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> u16 {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.url()))
            .header("x-api-key", key);
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
    verify_args_as(mock, KEY, extra)
}

fn verify_args_as(mock: &Mock, key: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["verify", "--url", &mock.url(), "--api-key", key]
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
        !stdout.contains("PASS") && !stdout.contains("SKIP"),
        "passes and skips are one line: {stdout}"
    );
    assert!(
        stdout.contains("\n6 passed, 0 failed, 20 skipped (-v lists the passes and skips)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 requests: 2 kept the contract, 0 broke it"),
        "{stdout}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(json_path).unwrap()).unwrap();
    assert_eq!(report["suite"], "verify");
    assert_eq!(report["version"], 2);
    assert_eq!(report["summary"]["failures"], 0);
    assert_eq!(report["figures"]["requests"]["total"], 2);
    assert_eq!(report["figures"]["requests"]["conforming"], 2);
    assert_eq!(report["figures"]["coverage"]["called"], 2);
    assert_eq!(
        report["notes"][0],
        stdout
            .lines()
            .find(|l| l.starts_with("2 requests"))
            .unwrap(),
        "the JSON carries what the terminal prints"
    );
    // -v lists every check.
    let out = harness(verify_args(&mock, &["-v"])).await;
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("PASS  deployments.create_deployment"),
        "{stdout}"
    );
    assert!(
        stdout.contains("SKIP  campaigns.create_campaign"),
        "{stdout}"
    );
    assert!(stdout.contains("(never called)"), "{stdout}");
    assert!(!stdout.contains("-v lists"), "{stdout}");
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
    let json_path = dir.path().join("out/verify.json");
    let out = harness(verify_args(
        &mock,
        &[
            "--junit",
            junit.to_str().unwrap(),
            "--json",
            json_path.to_str().unwrap(),
        ],
    ))
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!(
            "verify: {}\n\n  FAIL  deployments.list_deployments",
            mock.url()
        )),
        "failures first: {stdout}"
    );
    assert!(stdout.contains("FAIL  routes.unknown"), "{stdout}");
    assert!(
        stdout.contains("cause:    #3 GET /api/app-authoring/v1/orgs/acme/workspaces/prod/deployments -> 422: query.limit: Input should be less than or equal to 100\n"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&junit)
        .unwrap()
        .replace(&mock.url(), "http://MOCK");
    // CI pages show the failure's message: the first offending request and its cause.
    assert!(
        xml.contains("<failure message=\"#2 POST /api/app-authoring/v1/orgs/acme/workspaces/prod/deployments -&gt; 200: body.desciption: Extra inputs are not permitted (the platform ignored it; did you mean &apos;description&apos;?)\""),
        "{xml}"
    );
    // The JSON counts what the JUnit file counts.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let s = &report["summary"];
    assert!(
        xml.contains(&format!(
            "<testsuite name=\"verify\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            s["tests"], s["failures"], s["skipped"]
        )),
        "{s} {xml}"
    );
    assert_eq!(
        xml.matches("<failure ").count() as u64,
        s["failures"].as_u64().unwrap()
    );
    assert_eq!(
        xml.matches("<skipped ").count() as u64,
        s["skipped"].as_u64().unwrap()
    );
    let operations = contracts::operations::Catalogue::platform()
        .operations()
        .len();
    assert_eq!(
        xml.matches("<testcase ").count(),
        operations + 4,
        "one case per operation, coverage, unknown routes and the two portability warnings"
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

/// A client of its own workspace: `violating` ones send a request with a misspelt field.
async fn client(mock: &Mock, i: usize, violating: bool) {
    let key = format!("sk-ws-{i}");
    let base = format!("/api/app-authoring/v1/orgs/acme/workspaces/ws-{i}/deployments");
    let mut body = deployment(&format!("Desk {i}"), &format!("+141555501{i:02}"));
    if violating {
        body["desciption"] = json!("typo");
    }
    assert_eq!(
        mock.call_as(&key, reqwest::Method::POST, &base, Some(body))
            .await,
        200
    );
    for _ in 0..i {
        assert_eq!(
            mock.call_as(&key, reqwest::Method::GET, &base, None).await,
            200
        );
    }
}

#[tokio::test]
async fn eight_clients_on_one_platform_each_get_their_own_verdict() {
    const N: usize = 8;
    let keys: Vec<String> = (0..N)
        .map(|i| format!("acme/ws-{i}=sk-ws-{i}:client-{i}"))
        .collect();
    let mock = Mock::with_keys(&keys).await;
    // Eight test suites at once, the odd ones breaking the contract.
    futures_util::future::join_all((0..N).map(|i| client(&mock, i, i % 2 == 1))).await;
    let dir = tempfile::tempdir().unwrap();
    let verdicts = futures_util::future::join_all((0..N).map(|i| {
        let json_path = dir.path().join(format!("ws-{i}.json"));
        let args = verify_args_as(
            &mock,
            &format!("sk-ws-{i}"),
            &["--json", json_path.to_str().unwrap()],
        );
        async move {
            let out = harness(args).await;
            let report: Value =
                serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
            (out, report)
        }
    }))
    .await;
    for (i, (out, report)) in verdicts.iter().enumerate() {
        let stdout = text(&out.stdout);
        let expected = if i % 2 == 1 { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "ws-{i}: {stdout}");
        let requests = &report["figures"]["requests"];
        assert_eq!(
            requests["total"],
            1 + i as u64,
            "ws-{i}'s requests only: {stdout}"
        );
        assert_eq!(
            requests["violating"],
            u64::from(i % 2 == 1),
            "ws-{i}: {stdout}"
        );
        let list = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "deployments.list_deployments")
            .unwrap();
        match i {
            0 => assert_eq!(list["result"], "skip", "{list}"),
            _ => assert_eq!(list["evidence"]["calls"], i as u64, "{list}"),
        }
        if i % 2 == 1 {
            let cause = report["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == "deployments.create_deployment")
                .unwrap()["evidence"]["cause"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(cause.contains(&format!("/workspaces/ws-{i}/")), "{cause}");
        }
    }
    // An operator's key judges them all together.
    let out = harness(verify_args_as(&mock, OPS_KEY, &[])).await;
    assert_eq!(out.status.code(), Some(1));
    let total: usize = (0..N).map(|i| 1 + i).sum();
    assert!(
        text(&out.stdout).contains(&format!("{total} requests: ")),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn the_report_on_exit_is_verifys_in_every_form() {
    let mock = Mock::start().await;
    mock.call(
        reqwest::Method::POST,
        DEPLOYMENTS,
        Some(deployment("Desk", "+14155550100")),
    )
    .await;
    mock.call(
        reqwest::Method::GET,
        &format!("{DEPLOYMENTS}?limit=500"),
        None,
    )
    .await;
    mock.call(
        reqwest::Method::DELETE,
        &format!("{DEPLOYMENTS}/dep-nope"),
        None,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (json_path, junit) = (dir.path().join("v.json"), dir.path().join("v.xml"));
    let out = harness(verify_args_as(
        &mock,
        OPS_KEY,
        &[
            "--json",
            json_path.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let at_exit = dir.path().join("at-exit");
    let (report, _) = platform::journal::report::write_on_exit(
        &mock.app,
        &mock.url(),
        &at_exit,
        &Default::default(),
    )
    .unwrap();
    assert!(!report.holds());
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(at_exit.join("report.json")), read(json_path));
    assert_eq!(read(at_exit.join("junit.xml")), read(junit));
    assert_eq!(read(at_exit.join("report.txt")), text(&out.stdout));
    // The 404 for an id that does not exist: listed, not a violation.
    let txt = read(at_exit.join("report.txt"));
    assert!(
        txt.contains("1 request answered 404 for an id that does not exist")
            && txt.contains("#3 DELETE /api/app-authoring/v1/orgs/acme/workspaces/prod/deployments/dep-nope -> 404"),
        "{txt}"
    );
    assert!(
        !txt.contains("FAIL  deployments.delete_deployment"),
        "{txt}"
    );
}
