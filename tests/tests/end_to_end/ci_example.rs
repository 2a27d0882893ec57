//! The README's CI example as a pipeline runs it: `examples/ci/contract-check.sh` against
//! the workspace's binaries, with a client that keeps the contract and one that breaks it,
//! and the GitHub Actions job of the README checked against the script it runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::process::binary;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

/// Runs the script with `env`; answers its output and the report directory.
fn contract_check(env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let reports = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(root().join("examples/ci/contract-check.sh"))
        .env("PLATFORM", binary("platform"))
        .env("HARNESS", binary("harness"))
        .env("REPORT_DIR", reports.path())
        .envs(env.iter().copied())
        .current_dir(reports.path())
        .output()
        .expect("bash runs");
    (out, reports)
}

fn shown(out: &Output, reports: &Path) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}\nplatform.log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(reports.join("platform.log")).unwrap_or_default()
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_client_that_keeps_the_contract_passes_and_both_reports_are_written() {
    let (out, reports) = contract_check(&[]);
    let dir = reports.path();
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out, dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\n6 passed, 0 failed, 18 skipped (-v lists the passes and skips)\n"),
        "the four operations of the demo client, coverage and routes: {stdout}"
    );
    for f in [
        "contract.xml",
        "contract.json",
        "at-exit/junit.xml",
        "at-exit/report.json",
        "at-exit/report.txt",
    ] {
        assert!(
            dir.join(f).metadata().is_ok_and(|m| m.len() > 0),
            "{f}: {}",
            shown(&out, dir)
        );
    }
    let junit = read(&dir.join("contract.xml"));
    assert!(
        junit.contains("name=\"deployments.set_deployment_status\"") && !junit.contains("<failure"),
        "{junit}"
    );
}

#[test]
fn a_client_that_breaks_the_contract_fails_the_job_and_coverage_has_a_bar() {
    // Not the script's own demo client: one curl call with a field the API does not have.
    let client = r#"curl -fsS -X POST "$PLATFORM_URL/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments" \
        -H "X-API-Key: $PLATFORM_API_KEY" -H 'content-type: application/json' \
        -d '{"name": "Desk", "app_id": "a", "app_version": 1, "descripton": "typo",
             "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"]}]}' >/dev/null"#;
    let (out, reports) = contract_check(&[("CLIENT_TESTS", client)]);
    let dir = reports.path();
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out, dir));
    let junit = read(&dir.join("contract.xml"));
    let case = junit
        .lines()
        .find(|l| l.contains("name=\"deployments.create_deployment\""))
        .unwrap_or_else(|| panic!("{junit}"));
    assert!(
        case.contains("<failure") && case.contains("descripton"),
        "{case}"
    );

    let (out, reports) = contract_check(&[("MIN_COVERAGE", "90")]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the demo client calls 4 operations of 22: {}",
        shown(&out, reports.path())
    );

    let (out, reports) = contract_check(&[("CLIENT_TESTS", "exit 3")]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the client's own failure wins: {}",
        shown(&out, reports.path())
    );
}

/// The README's GitHub Actions job runs the script from the checked-out harness, sets only
/// variables the script reads, and uploads the directory the script writes to.
#[test]
fn the_readmes_github_actions_job_matches_the_script() {
    let readme = read(&root().join("README.md"));
    let section = readme
        .split("### A GitHub Actions job")
        .nth(1)
        .expect("the README has the GitHub Actions section");
    let job = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a yaml block");
    let script = read(&root().join("examples/ci/contract-check.sh"));
    assert!(
        job.contains("run: bash .harness/examples/ci/contract-check.sh")
            && job.contains("path: .harness"),
        "the job runs the script of the harness it checked out:\n{job}"
    );
    let env: Vec<&str> = job
        .split("env:\n")
        .nth(2)
        .expect("the contract step's env")
        .lines()
        .take_while(|l| l.starts_with("          "))
        .filter_map(|l| l.trim().split(':').next())
        .collect();
    assert!(!env.is_empty(), "{job}");
    for var in env {
        assert!(
            script.contains(&format!("${{{var}")),
            "the job sets {var}, which the script does not read"
        );
    }
    assert!(
        script.contains("REPORT_DIR=${REPORT_DIR:-contract-reports}")
            && job.contains("path: contract-reports/"),
        "the job uploads the directory the script writes:\n{job}"
    );
    for built in ["--path .harness/platform", "--path .harness/scenarios"] {
        assert!(job.contains(built), "the job builds {built}:\n{job}");
    }
}
