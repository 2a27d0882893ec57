//! What a CI job uses: `GET /healthz`, fixtures with fixed ids, and `platform serve` with
//! `--fixtures`, `--ready-file` and `--report-on-exit`.

use std::process::{Command, Stdio};
use std::time::Duration as StdDuration;

use contracts::clock::Stopwatch;
use platform::fixtures::{FixtureError, Fixtures};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::helpers::*;

#[tokio::test]
async fn healthz_answers_without_a_key() {
    let app = spawn_app().await;
    let (s, v) = app.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"status": "ok"}));
    let (_, sum) = app.get("/sim/v1/journal/summary").await;
    assert_eq!(sum["requests"], 0, "probes are not journaled");
}

const FIXTURES: &str = r#"
[[deployments]]
org_id = "org-1"
workspace_id = "ws-1"
deployment_id = "dep-front-desk"
[deployments.body]
name = "Front desk"
app_id = "receptionist"
app_version = 3
connection_configs = [{ connection_id = "main", phone_numbers = ["+14155550100"] }]

[[campaigns]]
org_id = "org-1"
workspace_id = "ws-1"
campaign_id = "cmp-spring"
start_in_seconds = 600
end_in_seconds = 864000
[campaigns.body]
name = "Spring promo"
allowed_schedule = { timezone = "Europe/London", allowed_days = ["Monday"], allowed_start_time = "09:00", allowed_end_time = "17:00" }
[campaigns.body.app_config]
app_id = "sales"
app_version = 1
app_type = "agent"
attempts_per_second = 2.0
connection_configs = [{ connection_id = "main", phone_numbers = ["+14155550101"], weight = 1 }]
retry_config = { max_retries = 1, retry_on = ["busy"], threshold_seconds = 20 }

[[cohorts]]
org_id = "org-1"
workspace_id = "ws-1"
cohort_id = "coh-vip"
deployment_id = "dep-front-desk"
[cohorts.body]
name = "VIP callers"
users = [{ phone_number = "+442071838750", user_identifier = "u-1", app_variables = { tier = "gold" } }]
"#;

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[tokio::test]
async fn fixtures_are_created_with_their_ids_once() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Fixtures::load(&write(dir.path(), "f.toml", FIXTURES)).unwrap();
    let applied = fixtures.apply(&app.app).await.unwrap();
    assert_eq!(
        applied.created,
        [
            "deployments[0] dep-front-desk",
            "campaigns[0] cmp-spring",
            "cohorts[0] coh-vip"
        ]
    );
    let (s, d) = app
        .get(&format!("{}/dep-front-desk", deployments_path()))
        .await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(d["created_by"], "fixtures");
    let (s, c) = app.get(&format!("{}/cmp-spring", campaigns_path())).await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(
        c["start_timestamp"], "2026-03-02T12:10:00.000Z",
        "now + 600 s"
    );
    assert_eq!(c["status"], "scheduled");
    let (s, k) = app
        .get(&format!(
            "/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/dep-front-desk/cohorts/coh-vip"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{k}");
    assert_eq!(k["status"], "completed");
    // A second start on the same database leaves them alone.
    let again = fixtures.apply(&app.app).await.unwrap();
    assert!(again.created.is_empty());
    assert_eq!(again.existing.len(), 3);

    // The same in JSON.
    let json_text = json!({"deployments": [{"org_id": ORG, "workspace_id": WS2, "deployment_id": "dep-2",
        "body": deployment_body("Desk two", "+14155550199")}]});
    let f = Fixtures::load(&write(dir.path(), "f.json", &json_text.to_string())).unwrap();
    assert_eq!(f.apply(&app.app).await.unwrap().created.len(), 1);
}

#[tokio::test]
async fn bad_fixtures_say_which_and_why() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let e = Fixtures::load(&write(
        dir.path(),
        "f.toml",
        "[[deployments]]\norg_id = 1\n",
    ))
    .unwrap_err();
    assert!(matches!(e, FixtureError::Parse { .. }), "{e}");
    assert!(e.to_string().contains("line 2"), "{e}");
    let e = Fixtures::load(&write(
        dir.path(),
        "f.toml",
        "[[deployments]]\norg_id = \"o\"\nworkspace_id = \"w\"\ndeployment_id = \"has space\"\nbody = {}\n",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("'has space'"), "{e}");
    let bad = FIXTURES.replace("name = \"Front desk\"", "name = \"Front/desk\"");
    let e = Fixtures::load(&write(dir.path(), "f.toml", &bad))
        .unwrap()
        .apply(&app.app)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "deployments[0] dep-front-desk: body.name: String should match pattern '^[\\w\\- ]{1,50}$'"
    );
    assert!(
        Fixtures::load(&dir.path().join("missing.toml"))
            .unwrap_err()
            .to_string()
            .starts_with("reading ")
    );
}

/// Starts `platform serve` with the fixtures, a ready file and a report on exit (and
/// `extra`), makes a good and a bad request, stops it with SIGTERM; answers its exit status,
/// standard output, ready file and address.
async fn serve_and_stop(
    dir: &std::path::Path,
    extra: &[&str],
) -> (std::process::ExitStatus, String, Value, String) {
    let fixtures = write(dir, "fixtures.toml", FIXTURES);
    let ready = dir.join("ready.json");
    let reports = dir.join("reports");
    let child = Command::new(env!("CARGO_BIN_EXE_platform"))
        .args(["serve", "--listen", "127.0.0.1:0", "--seed", "3"])
        .arg("--database")
        .arg(dir.join("p.db"))
        .args(["--api-key", &format!("{ORG}/{WS}={KEY}:alice")])
        .arg("--fixtures")
        .arg(&fixtures)
        .arg("--ready-file")
        .arg(&ready)
        .arg("--report-on-exit")
        .arg(&reports)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the platform binary starts");
    let watch = Stopwatch::start();
    while !ready.exists() {
        assert!(
            watch.elapsed() < StdDuration::from_secs(60),
            "no ready file after 60 s"
        );
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&ready).unwrap()).unwrap();
    let url = info["url"].as_str().unwrap().to_string();
    let client = reqwest::Client::new();
    let got = client
        .get(format!("{url}{}/dep-front-desk", deployments_path()))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), StatusCode::OK, "the fixture is there");
    let bad = client
        .get(format!("{url}{}?limit=500", deployments_path()))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status, stdout, info, url)
}

#[tokio::test]
async fn serve_writes_a_ready_file_and_a_report_on_exit() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stdout, info, url) = serve_and_stop(dir.path(), &[]).await;
    assert_eq!(info["health_url"], format!("{url}/healthz"));
    assert!(info.get("api_key").is_none(), "no key was generated");
    assert!(
        info["webhook_secret"]
            .as_str()
            .is_some_and(|s| s.starts_with("whsec_")),
        "the drawn webhook secret, as harness up gives it: {info}"
    );
    assert!(status.success(), "by default a clean stop is 0: {status:?}");
    assert!(
        stdout.contains("fixtures: 3 created, 0 already there"),
        "{stdout}"
    );
    assert!(stdout.contains("report: "), "{stdout}");
    let reports = dir.path().join("reports");
    let junit = std::fs::read_to_string(reports.join("junit.xml")).unwrap();
    assert!(
        junit.contains("name=\"deployments.get_deployment\"></testcase>")
            || junit.contains("name=\"deployments.get_deployment\">"),
        "{junit}"
    );
    assert!(
        junit.contains("<failure"),
        "the 422 fails list_deployments: {junit}"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(report["suite"], "verify");
    assert_eq!(report["target"], url);
    assert_eq!(report["figures"]["requests"]["total"], 2);
    let list = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "deployments.list_deployments")
        .unwrap();
    assert_eq!(list["result"], "fail");
    assert!(
        std::fs::read_to_string(reports.join("report.txt"))
            .unwrap()
            .contains("FAIL  deployments.list_deployments")
    );

    // With harness verify's rule, the failed verdict is the exit status.
    let dir = tempfile::tempdir().unwrap();
    let (status, stdout, _, _) =
        serve_and_stop(dir.path(), &["--report-exit-status", "verdict"]).await;
    assert_eq!(status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("platform stopped"), "{stdout}");
}

/// The fenced block of `README.md` that starts with `first_line`.
fn readme_block(first_line: &str) -> String {
    let readme = ["platform-configuration.md", "fixtures.md"]
        .map(|f| {
            std::fs::read_to_string(format!("{}/../docs/guide/{f}", env!("CARGO_MANIFEST_DIR")))
                .unwrap()
        })
        .concat();
    let start = readme
        .find(&format!("```toml\n{first_line}"))
        .unwrap_or_else(|| panic!("a block starting with {first_line}"))
        + "```toml\n".len();
    let end = start + readme[start..].find("```").unwrap();
    readme[start..end].to_string()
}

#[test]
fn the_readmes_configuration_example_is_valid() {
    let config = platform::config::PlatformConfig::from_toml(&readme_block("listen = ")).unwrap();
    assert_eq!(config.journal.capacity, 10_000);
    assert_eq!(
        config.journal.response_bodies,
        platform::config::journal::ResponseBodies::Failures
    );
    assert_eq!(config.faults.len(), 1);
    config.validate_faults().unwrap();
}

#[test]
fn the_readmes_fixture_example_loads() {
    let dir = tempfile::tempdir().unwrap();
    let f = Fixtures::load(&write(
        dir.path(),
        "f.toml",
        &readme_block("[[deployments]]"),
    ))
    .unwrap();
    assert_eq!(
        (f.deployments.len(), f.campaigns.len(), f.cohorts.len()),
        (1, 1, 1)
    );
}
