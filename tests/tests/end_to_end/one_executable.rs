//! The ways in without Rust, as far as they run without Docker: one executable under three
//! names (`--version` with the commit and target, the command picked by the name it was
//! started as), `harness up` listening on every address with URLs clients can use, and
//! `harness ping`. The image itself is tried by `.ci/docker.sh`.

use std::process::Command;

use serde_json::Value;

use crate::process::{Running, binary, wait_for_file};

fn output(program: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `harness up --port-base 0 ARGS... --ready-file F`, once it is ready: the process, its
/// connection details, and the folder holding its files.
fn up(args: &[&str]) -> (Running, Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready.json");
    let ready_arg = ready.display().to_string();
    let mut all = vec!["up", "--port-base", "0", "--ready-file", &ready_arg];
    all.extend_from_slice(args);
    let mut running = Running::start(&binary("harness"), &all, &dir.path().join("stderr.log"));
    let details = serde_json::from_str(&wait_for_file(&ready, &mut running)).unwrap();
    (running, details, dir)
}

#[test]
fn one_executable_answers_to_three_names_with_its_commit_and_target() {
    let dir = tempfile::tempdir().unwrap();
    let harness = binary("harness");
    let (_, version, _) = output(&harness, &["--version"]);
    let re_tail = |name: &str, line: &str| {
        let rest = line
            .trim()
            .strip_prefix(&format!("{name} {} (commit ", env!("CARGO_PKG_VERSION")))
            .unwrap_or_else(|| panic!("'{line}' names {name} and the version"));
        let (commit, rest) = rest.split_once(", ").expect("commit, target");
        assert!(
            commit == "unknown"
                || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
            "a commit: {line}"
        );
        let (target, linkage) = rest.split_once(", ").expect("target, linkage");
        assert!(
            target.starts_with(std::env::consts::ARCH) && target.contains(std::env::consts::OS),
            "the build target: {line}"
        );
        assert!(linkage == "static)" || linkage == "dynamic)", "{line}");
        commit.to_string()
    };
    let commit = re_tail("harness", &version);
    for (name, help_word) in [("platform", "serve"), ("customer-kms-sim", "wrap")] {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(&harness, &link).unwrap();
        let (code, v, _) = output(&link, &["--version"]);
        assert_eq!(code, 0);
        assert_eq!(re_tail(name, &v), commit, "one build, one commit");
        // The name picks the command: its own subcommands, its own usage line.
        let (code, help, _) = output(&link, &["--help"]);
        assert_eq!(code, 0, "{help}");
        assert!(
            help.contains(help_word) && help.contains(&format!("Usage: {name}")),
            "{help}"
        );
    }
    let (code, help, _) = output(&harness, &["platform", "serve", "--help"]);
    assert_eq!(code, 0);
    assert!(help.contains("Usage: harness platform serve"), "{help}");
    let (code, help, _) = output(&harness, &["kms", "example-config"]);
    assert_eq!(code, 0);
    assert!(help.contains("[[aliases]]"), "{help}");
}

#[test]
fn up_on_every_address_prints_urls_clients_reach_and_ping_tells_up_from_down() {
    let (mut running, details, _dir) = up(&["--host", "0.0.0.0", "--api-key", "sk-fixed-1"]);
    let url = details["platform"]["url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "{url}: loopback, not 0.0.0.0"
    );
    assert_eq!(details["platform"]["api_key"], "sk-fixed-1");
    let kms = details["key_service"]["url"].as_str().unwrap();
    assert!(kms.starts_with("http://127.0.0.1:"), "{kms}");

    let (code, out, err) = output(&binary("harness"), &["ping", &format!("{url}/healthz")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("200"), "{out}");
    // A path that answers 404 is not healthy; nor is a port nobody listens on.
    let (code, _, err) = output(
        &binary("harness"),
        &["ping", &format!("{url}/nothing-here")],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("404"), "{err}");
    running.signal("TERM");
    assert!(running.wait().success(), "{}", running.stderr());
    let (code, _, err) = output(
        &binary("harness"),
        &["ping", &format!("{url}/healthz"), "--timeout-ms", "500"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("could not connect") || err.contains("no answer"),
        "{err}"
    );
    let (code, _, err) = output(&binary("harness"), &["ping", "not a url"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_public_host_names_the_urls_where_clients_reach_the_stack() {
    let (mut running, details, _dir) = up(&["--public-host", "stack.example"]);
    for url in [
        &details["platform"]["url"],
        &details["platform"]["openapi_url"],
        &details["key_service"]["url"],
        &details["key_service"]["byok_base_url"],
        &details["key_service"]["admin_url"],
    ] {
        assert!(
            url.as_str().unwrap().starts_with("http://stack.example:"),
            "{url}"
        );
    }
    // The platform still reaches its key service (at loopback): a BYOK call works.
    let port = details["platform"]["url"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let key = details["platform"]["api_key"].as_str().unwrap();
    let answer = crate::process::bash(&format!(
        "curl -sS -X POST http://127.0.0.1:{port}/api/outbounds/v1/orgs/org-1/workspaces/ws-1/outbounds \
         -H 'X-API-Key: {key}' -H 'content-type: application/json' \
         -d '{{\"app_config\":{{\"app_id\":\"a\",\"app_version\":1,\"connection_config\":{{\"connection_id\":\"c\",\"agent_phone_number\":\"+14155550199\"}}}},\"user_config\":{{\"user_phone_number\":\"+14155550100\"}}}}'"
    ));
    assert!(answer.contains("attempt_id"), "{answer}");
    running.signal("TERM");
    assert!(running.wait().success(), "{}", running.stderr());
}
