//! The README's CI example as a pipeline runs it: `examples/ci/contract-check.sh` against
//! the workspace's binaries, with a client that keeps the contract and one that breaks it,
//! and the GitHub Actions job of the README checked against the actions it uses.

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
        stdout.contains("\n8 passed, 0 failed, 18 skipped (-v lists the passes and skips)\n"),
        "the four operations of the demo client, coverage, routes and portability: {stdout}"
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

/// The inputs an action's metadata file declares (`inputs:` keys, two spaces in).
fn action_inputs(path: &Path) -> Vec<String> {
    let text = read(path);
    let inputs = text
        .split("\ninputs:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{} declares inputs", path.display()));
    inputs
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':').to_string())
        .collect()
}

/// The README's GitHub Actions job uses the two actions of this repository with inputs they
/// declare, reads the variables the start script exports, and uploads the folder the verify
/// script writes.
#[test]
fn the_readmes_github_actions_job_matches_the_actions() {
    let readme = read(&root().join("docs/guide/containers-and-action.md"));
    let section = readme
        .split("### The GitHub action")
        .nth(1)
        .expect("the README has the GitHub action section");
    let job = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a yaml block");
    let start_inputs = action_inputs(&root().join("action.yml"));
    let verify_inputs = action_inputs(&root().join("verify/action.yml"));
    assert!(
        start_inputs.contains(&"fixtures".to_string()),
        "{start_inputs:?}"
    );
    let mut uses = Vec::new();
    for step in job.split("      - ").skip(1) {
        let Some(action) = step
            .strip_prefix("uses: ")
            .and_then(|r| r.split_whitespace().next())
        else {
            continue;
        };
        let declared = if action.contains("voice-agent-platform-harness/verify@") {
            &verify_inputs
        } else if action.contains("voice-agent-platform-harness@") {
            &start_inputs
        } else {
            continue;
        };
        uses.push(action.to_string());
        if let Some(with) = step.split("with:\n").nth(1) {
            for key in with.lines().filter_map(|l| l.trim().split(':').next()) {
                if key.is_empty() || key.starts_with('#') {
                    continue;
                }
                assert!(
                    declared.iter().any(|d| d == key),
                    "the job gives {action} the input '{key}', which it does not declare ({declared:?})"
                );
            }
        }
    }
    assert_eq!(
        uses.len(),
        2,
        "the job uses the start and the verify action:\n{job}"
    );
    let start = read(&root().join("scripts/action/start.sh"));
    for var in ["HARNESS_URL", "HARNESS_API_KEY"] {
        assert!(job.contains(var), "the job names {var}:\n{job}");
    }
    assert!(
        start.contains("env_name=\"HARNESS_$(tr 'a-z-' 'A-Z_' <<<\"$name\")\"")
            && start.contains("[url]=")
            && start.contains("[api-key]="),
        "the start script exports HARNESS_URL and HARNESS_API_KEY"
    );
    let verify = read(&root().join("scripts/action/verify.sh"));
    assert!(
        verify.contains("dir=${INPUT_REPORT_DIR:-harness-report}")
            && job.contains("path: harness-report/"),
        "the job uploads the folder the verify script writes:\n{job}"
    );
}
