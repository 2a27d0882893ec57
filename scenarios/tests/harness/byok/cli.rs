//! The `harness check byok` command itself: exit status, outputs, secrets, and what it says
//! when the service cannot be reached or does not speak HTTP.

use std::path::Path;
use std::process::Output;

use customer_kms_sim::Mutant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// Runs `harness check byok ARGS` with `env` (and no inherited BYOK_ variable), off the
/// async threads so that the in-process key service keeps answering.
pub(super) async fn harness(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.arg("check").arg("byok").args(args);
    for v in [
        "BYOK_CLIENT_SECRET",
        "BYOK_API_KEY",
        "BYOK_EXPECTED_PLAINTEXT",
        "NO_COLOR",
    ] {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied());
    tokio::task::spawn_blocking(move || cmd.output().expect("harness runs"))
        .await
        .expect("the blocking task ends")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(super) fn standard_flags(kms: &Kms, dir: &Path) -> Vec<String> {
    vec![
        "--base-url".into(),
        kms.base_url(),
        "--partner".into(),
        PARTNER.into(),
        "--client-id".into(),
        CLIENT.into(),
        "--key-alias".into(),
        ALIAS.into(),
        "--other-key-alias".into(),
        OTHER_ALIAS.into(),
        "--encrypted-key".into(),
        kms.given_key(),
        "--use-rotate".into(),
        "--latency-budget-ms".into(),
        "1000".into(),
        "--calls".into(),
        "40".into(),
        "--json".into(),
        dir.join("out/byok.json").display().to_string(),
        "--junit".into(),
        dir.join("out/byok.xml").display().to_string(),
    ]
}

fn secrets_env() -> Vec<(&'static str, String)> {
    vec![
        ("BYOK_CLIENT_SECRET", SECRET.to_string()),
        ("BYOK_EXPECTED_PLAINTEXT", plaintext()),
    ]
}

async fn run_standard(kms: &Kms, dir: &Path) -> Output {
    let flags = standard_flags(kms, dir);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let env = secrets_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    harness(&flags, &env).await
}

/// Every text the command produced: standard output and error, the JSON and JUnit files.
pub(super) fn everything(out: &Output, dir: &Path) -> String {
    let (stdout, stderr) = text(out);
    let json = std::fs::read_to_string(dir.join("out/byok.json")).unwrap_or_default();
    let junit = std::fs::read_to_string(dir.join("out/byok.xml")).unwrap_or_default();
    format!("{stdout}\n{stderr}\n{json}\n{junit}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_run_exits_0_writes_json_and_junit_and_prints_no_secret() {
    let kms = spawn_kms(config()).await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_standard(&kms, dir.path()).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("  PASS  auth.token_type"), "{stdout}");
    assert!(stdout.contains("  SKIP  tls.chain"), "{stdout}");
    assert!(
        stdout
            .trim_end()
            .ends_with("81 passed, 0 failed, 7 skipped"),
        "{stdout}"
    );
    assert!(!stdout.contains('\u{1b}'), "no colour into a pipe");
    assert!(stderr.contains("finished in"), "{stderr}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/byok.json")).unwrap())
            .unwrap();
    let checks = json["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 88);
    for c in checks {
        for field in [
            "id",
            "group",
            "severity",
            "result",
            "evidence",
            "expected",
            "how_to_fix",
        ] {
            assert!(c.get(field).is_some(), "{field} in {c}");
        }
    }
    assert_eq!(json["summary"]["passed"], 81);
    // The evidence shows the request sent, the timestamp format with it, and the answer.
    let status = checks.iter().find(|c| c["id"] == "decrypt.status").unwrap();
    let request = &status["evidence"]["request"];
    assert_eq!(request["method"], "POST");
    assert_eq!(request["path"], "/acme/byok/v1/decrypt-key");
    assert_eq!(request["headers"]["authorization"], "Bearer [redacted]");
    assert_eq!(request["body"]["data"]["key_alias"], ALIAS);
    let stamp = request["headers"]["x-request-timestamp"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(stamp).is_ok() && stamp.ends_with('Z'),
        "{stamp}"
    );
    assert_eq!(status["evidence"]["status"], 200);
    assert_eq!(status["evidence"]["content_type"], "application/json");
    assert!(status["how_to_fix"].as_str().is_some_and(|f| !f.is_empty()));
    let junit = std::fs::read_to_string(dir.path().join("out/byok.xml")).unwrap();
    assert!(
        junit.contains("<testsuite name=\"check byok\" tests=\"88\" failures=\"0\""),
        "{junit}"
    );

    let all = everything(&out, dir.path());
    for secret in [SECRET, plaintext().as_str()] {
        assert!(!all.contains(secret), "a secret was printed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_echoes_the_secret_fails_and_the_report_still_hides_it() {
    let kms = spawn_kms(config().with_mutant(Mutant::SecretInError)).await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_standard(&kms, dir.path()).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("  FAIL  errors.no_secret"), "{stdout}");
    assert!(stdout.contains("the body holds a credential"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/byok.json")).unwrap())
            .unwrap();
    let wrong_secret = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "auth.wrong_secret")
        .unwrap();
    let message = wrong_secret["evidence"]["cases"][0]["answer"]["body"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("invalid client credentials platform:[redacted]"),
        "the echoed message is kept, the secret in it redacted: {message}"
    );
    let all = everything(&out, dir.path());
    assert!(
        !all.contains(SECRET),
        "the echoed secret reached the report"
    );
    assert!(!all.contains(&plaintext()));
    let junit = std::fs::read_to_string(dir.path().join("out/byok.xml")).unwrap();
    assert!(
        junit.contains("<failure message=\"no answer echoes a secret"),
        "{junit}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_cannot_be_reached_exits_2_with_a_clear_message() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("http://127.0.0.1:{port}");
    let out = harness(
        &[
            "--base-url",
            &url,
            "--partner",
            "acme",
            "--key-alias",
            "a",
            "--use-rotate",
        ],
        &[("BYOK_API_KEY", "k-0123456789")],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("could not connect"), "{stderr}");
    assert!(stderr.contains("is the service running"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("k-0123456789"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_answers_garbage_exits_2_with_a_clear_message() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                // The garbage answers the request once its head has come, as a service's
                // answer would. (Against a server that wrote at once and closed, one CI
                // run on a loaded machine waited out the check's 10 s timeout; the cause
                // was not pinned down, and this takes away the race between the request
                // and the close.)
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65_536 {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(b"\x00\x01 this is not HTTP at all\r\n\r\n")
                    .await;
                let _ = s.shutdown().await;
            });
        }
    });
    let url = format!("http://{addr}");
    let out = harness(
        &[
            "--base-url",
            &url,
            "--partner",
            "acme",
            "--client-id",
            "c",
            "--key-alias",
            "a",
            "--use-rotate",
        ],
        &[("BYOK_CLIENT_SECRET", "s-0123456789")],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("did not answer HTTP"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn bad_flags_and_files_exit_2_naming_the_fix() {
    let out = harness(&["--partner", "acme"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("--base-url is required"),
        "{:?}",
        text(&out)
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("byok.toml");
    std::fs::write(
        &file,
        "base_url = \"http://127.0.0.1:1\"\nparnter = \"acme\"\n",
    )
    .unwrap();
    let out = harness(&["--config", file.to_str().unwrap()], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("unknown field `parnter`"),
        "{:?}",
        text(&out)
    );
}

#[tokio::test]
async fn list_checks_prints_the_table() {
    let out = harness(&["--list-checks"], &[]).await;
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out).0;
    assert_eq!(stdout.lines().count(), 88);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("auth.token_type") && l.contains("error"))
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("load.p99") && l.contains("warning"))
    );
}

#[test]
fn list_checks_into_a_closed_pipe_exits_quietly() {
    // `harness check byok --list-checks | head`: the reader is gone before the writing.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["check", "byok", "--list-checks"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_holds_everything_but_the_secret() {
    let kms = spawn_kms(config()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("byok.toml");
    std::fs::write(
        &file,
        format!(
            "base_url = \"{}\"\npartner = \"{PARTNER}\"\nclient_id = \"{CLIENT}\"\n\
             key_alias = \"{ALIAS}\"\nuse_rotate = true\nlatency_budget_ms = 1000\ncalls = 20\n\
             only = [\"auth\", \"rotate\"]\njson = \"report.json\"\n",
            kms.base_url()
        ),
    )
    .unwrap();
    let out = harness(
        &["--config", file.to_str().unwrap()],
        &[("BYOK_CLIENT_SECRET", SECRET)],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout
            .trim_end()
            .ends_with("34 passed, 0 failed, 1 skipped"),
        "{stdout}"
    );
    assert!(
        dir.path().join("report.json").exists(),
        "json relative to the file"
    );
}
