//! `harness check platform` against the mock: the unmodified mock passes every check and is
//! left as it was found; each mutant fails exactly its checks ([`mutants`]); the command as a
//! process against `harness up` as a process (the CI run); `--dry-run` and bad set-ups.

mod blind;
mod made;
mod mutants;
mod support;
mod variations;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};

use scenarios::checks::Outcome;
use scenarios::checks::platform::{GROUPS, auth, pagination, sim};
use serde_json::Value;

use support::{KEY, KEY2, ORG, WS, WS2, run, sim_clock, spawn};

fn all_ids() -> Vec<&'static str> {
    GROUPS.iter().flat_map(|g| g.checks).map(|d| d.id).collect()
}

#[test]
fn check_ids_are_unique_and_prefixed_by_their_group() {
    let ids = all_ids();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate check ids");
    for g in GROUPS {
        for d in g.checks {
            assert_eq!(d.group(), g.name, "{} is listed under {}", d.id, g.name);
        }
    }
}

/// Every check says what it judged and saw it vary: each aspect under `evidence.varied` holds
/// two or more distinct values. A check that declares nothing, or saw one value only (a sort
/// over equal keys, a walk without decoys, a transition looked at on one side), fails here.
fn assert_every_check_saw_its_inputs_vary(report: &scenarios::checks::CheckReport) {
    let vacuous: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Pass)
        // The oracle's checks say how many values they compared (a check that compared none
        // is skipped, never passed).
        .filter(|c| c.group != "oracle")
        .filter_map(|c| {
            let varied = c.evidence.0.get("varied").and_then(Value::as_object);
            let ok = varied.is_some_and(|aspects| {
                !aspects.is_empty()
                    && aspects
                        .values()
                        .all(|seen| seen.as_array().is_some_and(|v| v.len() >= 2))
            });
            (!ok).then(|| format!("{}: {:?}", c.id, varied))
        })
        .collect();
    assert!(
        vacuous.is_empty(),
        "checks that did not show their inputs varying: {vacuous:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unmodified_mock_passes_every_check_and_is_left_clean() {
    let mock = spawn(Some(sim_clock()), None).await;
    let report = run(&mock.url, true, true).await;
    let ids: Vec<&str> = report.checks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, all_ids(), "every check once, in table order");
    let not_passed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result != Outcome::Pass)
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert!(report.holds());
    assert_every_check_saw_its_inputs_vary(&report);

    // Nothing the run created is left: no deployment, and every campaign cancelled or ended.
    let client = reqwest::Client::new();
    let get = |path: String| {
        let client = client.clone();
        let url = format!("{}{path}", mock.url);
        async move {
            client
                .get(url)
                .header("x-api-key", KEY)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let deployments = get(format!(
        "/api/app-authoring/v1/orgs/{ORG}/workspaces/{WS}/deployments?search=harness-check-&limit=100"
    ))
    .await;
    assert_eq!(deployments["total"], 0, "{deployments}");
    let mut offset = 0;
    loop {
        let page = get(format!(
            "/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/campaigns?search=harness-check-&limit=100&offset={offset}"
        ))
        .await;
        let items = page["items"].as_array().unwrap();
        assert!(offset > 0 || !items.is_empty(), "the run created campaigns");
        for c in items {
            assert!(
                matches!(c["status"].as_str(), Some("cancelled" | "ended")),
                "left running: {c}"
            );
        }
        offset += 100;
        if page["next_page_uri"].is_null() {
            break;
        }
    }
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_real_clock_without_sim_or_another_workspace_only_those_checks_skip() {
    let mock = spawn(None, None).await;
    let report = run(&mock.url, false, false).await;
    mock.stop().await;
    let failed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail)
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_every_check_saw_its_inputs_vary(&report);
    for c in &report.checks {
        let reason = c.skip_reason.as_deref();
        if c.group == "sim" {
            assert_eq!(reason, Some(sim::NEEDS_SIM), "{}", c.id);
        } else if c.id == "oracle.campaign_events" || c.id == "oracle.outbound_events" {
            // Campaigns call only as the simulated clock moves, and the suite's instant
            // calls with events are the sim group's: no event to compare, or one.
            assert_ne!(c.result, Outcome::Fail, "{}", c.id);
        } else if GROUPS
            .iter()
            .flat_map(|g| g.checks)
            .any(|d| d.id == c.id && auth::needs_other(d))
        {
            assert_eq!(reason, Some(auth::NEEDS_OTHER), "{}", c.id);
        } else {
            assert_eq!(c.result, Outcome::Pass, "{}", c.id);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_simulated_clock_without_sim_its_time_is_used_and_only_sim_and_the_sort_skip() {
    // The mock's clock stands months away from this machine's (it started at START and
    // was moved on): without --sim the time limits must still be judged by its clock.
    let clock = sim_clock();
    clock.advance(chrono::Duration::days(3)).unwrap();
    let mock = spawn(Some(clock), None).await;
    let mut notes = Vec::new();
    let report = scenarios::checks::platform::check(
        &support::options(&mock.url, false, true),
        &mut |line| notes.push(line.to_string()),
        std::future::pending(),
    )
    .await
    .expect("the checks run");
    mock.stop().await;
    // Its clock stands still without --sim: every created_at is equal, and the sort by
    // created_at, which could not fail, says so instead of passing.
    let not_passed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result != Outcome::Pass && c.group != "sim" && c.group != "oracle")
        .filter(|c| {
            !(c.id == "pagination.sort_order"
                && c.skip_reason.as_deref() == Some(pagination::STILL_CLOCK))
        })
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.id == "pagination.sort_order" && c.result == Outcome::Skip)
    );
    assert!(
        report
            .checks
            .iter()
            .filter(|c| c.group == "sim")
            .all(|c| c.skip_reason.as_deref() == Some(sim::NEEDS_SIM))
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the target runs a simulated clock") && n.contains("--sim")),
        "{notes:?}"
    );
}

/// The `harness` binary.
fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

/// `harness up` as a process on free ports, with the two workspaces' keys, on a simulated
/// clock when `sim`; stopped with SIGTERM when dropped.
struct Up {
    child: Child,
    url: String,
    /// The secret its webhooks are signed with (the ready file's).
    webhook_secret: String,
    _dir: tempfile::TempDir,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

fn up(sim: bool) -> Up {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("platform.toml");
    std::fs::write(
        &keys,
        format!(
            "[[api_keys]]\norg_id = \"{ORG}\"\nworkspace_id = \"{WS}\"\nkey = \"{KEY}\"\nname = \"ci\"\n\n\
             [[api_keys]]\norg_id = \"{ORG}\"\nworkspace_id = \"{WS2}\"\nkey = \"{KEY2}\"\nname = \"other\"\n"
        ),
    )
    .unwrap();
    let ready = dir.path().join("stack.json");
    let clock: &[&str] = if sim {
        &["--clock", "simulated", "--sim-start", support::START]
    } else {
        &["--clock", "real"]
    };
    let mut child = harness()
        .args(["up", "--port-base", "0", "--database", ":memory:"])
        .args(clock)
        .arg("--platform-config")
        .arg(&keys)
        .arg("--ready-file")
        .arg(&ready)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("harness up starts");
    // Wait for the ready file (normally well under a second; generous for a loaded machine).
    let watch = contracts::clock::Stopwatch::start();
    let info: Value = loop {
        if let Ok(text) = std::fs::read_to_string(&ready)
            && let Ok(v) = serde_json::from_str(&text)
        {
            break v;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("harness up exited early: {status}");
        }
        assert!(
            watch.elapsed() < std::time::Duration::from_secs(60),
            "harness up did not write {} within 60 s",
            ready.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(info["platform"]["api_key"], KEY, "{info}");
    Up {
        child,
        url: info["platform"]["url"].as_str().unwrap().to_string(),
        webhook_secret: info["platform"]["webhook_secret"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        _dir: dir,
    }
}

/// The CI run: the whole suite against `harness up` (the platform with BYOK wired to the
/// simulated key service) as a process.
#[test]
fn the_command_passes_against_harness_up_with_json_and_junit_reports() {
    let served = up(true);
    let dir = tempfile::tempdir().unwrap();
    let (json, junit, last) = (
        dir.path().join("report.json"),
        dir.path().join("report.xml"),
        dir.path().join("state/last.json"),
    );
    let out = harness()
        .env("HARNESS_LAST_RUN", &last)
        .args(["check", "platform", "--base-url", &served.url])
        .args(["--api-key", KEY, "--org", ORG, "--workspace", WS])
        .args(["--other-api-key", KEY2, "--other-workspace", WS2, "--sim"])
        .args(["--webhook-secret", &served.webhook_secret])
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let n = all_ids().len();
    assert!(
        stdout.ends_with(&format!("{n} passed, 0 failed, 0 skipped\n")),
        "{stdout}"
    );
    assert!(stderr.contains("[8/9] sim"), "progress per group: {stderr}");
    assert!(
        stderr.contains("[9/9] oracle"),
        "progress per group: {stderr}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["suite"], "check platform");
    assert_eq!(report["summary"]["passed"], n);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!(
            "tests=\"{n}\" failures=\"0\" errors=\"0\" skipped=\"0\""
        )),
        "{xml}"
    );

    // The rules table, with each rule's status on that run.
    let rules = dir.path().join("rules.json");
    let out = harness()
        .env("HARNESS_LAST_RUN", &last)
        .args(["check", "platform", "--list-rules", "--json"])
        .arg(&rules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("status on the last run"), "{stdout}");
    assert!(
        stdout.contains("  [pass] 1. Each dial is one attempt"),
        "{stdout}"
    );
    let table: Value = serde_json::from_str(&std::fs::read_to_string(&rules).unwrap()).unwrap();
    let statuses: BTreeSet<&str> = table["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        BTreeSet::from(["pass", "none"]),
        "every checked rule passed: {table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_exits_1_and_shows_what_was_expected() {
    let m = support::Mutation {
        request: Some(Box::new(|req: &mut support::Req| {
            (req.method == reqwest::Method::POST && req.json().is_none())
                .then(|| support::Resp::json_answer(500, &serde_json::json!({"oops": true})))
        })),
        ..support::Mutation::default()
    };
    let mock = spawn(Some(sim_clock()), Some(m)).await;
    let url = mock.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let last = dir.path().join("last.json");
    let state = last.clone();
    let out = tokio::task::spawn_blocking(move || {
        harness()
            .env("HARNESS_LAST_RUN", &state)
            .args(["check", "platform", "--base-url", &url])
            .args(["--only", "errors,oracle", "--no-oracle"])
            .args(["--org", ORG, "--workspace", WS])
            .env("HARNESS_API_KEY", KEY)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    mock.stop().await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("  FAIL  errors.malformed_json"), "{stdout}");
    assert!(stdout.contains("expected: 422 with"), "{stdout}");
    assert!(stdout.contains("\"status\":500"), "{stdout}");
    // Only the errors group ran: the oracle's checks are skipped with --no-oracle.
    let group = |name: &str| GROUPS.iter().find(|g| g.name == name).unwrap().checks.len();
    assert!(
        stdout.ends_with(&format!(
            "{} passed, 1 failed, {} skipped\n",
            group("errors") - 1,
            group("oracle")
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("--no-oracle: the answers are not compared"),
        "{stdout}"
    );
    // The failure shows the request as sent and the answer.
    assert!(
        stdout.contains("\"request\":{\"method\":\"POST\",\"path\":\"/api/outbounds/v1/orgs/org-1/workspaces/ws-1/outbounds\",\"body\":{\"content_type\":\"application/json\""),
        "{stdout}"
    );

    // --list-rules shows which rules that run failed, passed, and did not reach.
    let out = harness()
        .env("HARNESS_LAST_RUN", &last)
        .args(["check", "platform", "--list-rules"])
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&out.stdout);
    assert!(
        rules
            .lines()
            .any(|l| l.starts_with("  [FAIL (1 of ") && l.ends_with("] Validation body")),
        "{rules}"
    );
    assert!(
        rules.contains("  [pass] Deployment list and delete errors:"),
        "{rules}"
    );
    assert!(
        rules.contains("  [not run] 1. Each dial is one attempt"),
        "{rules}"
    );
}

#[test]
fn dry_run_lists_every_check_and_why_some_would_skip_without_calling() {
    let out = harness()
        .args(["check", "platform", "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for id in all_ids() {
        assert!(stdout.contains(id), "{id} missing from {stdout}");
    }
    assert!(stdout.contains(&format!("skipped: {}", sim::NEEDS_SIM)));
    assert!(stdout.contains(&format!("skipped: {}", auth::NEEDS_OTHER)));
    assert!(stdout.contains("nothing was called (dry run)"));
    assert!(
        stdout.contains(
            "creates in the workspace under check: 1 campaign harness-check-{run}-endpoints\n"
        ),
        "{stdout}"
    );

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plan.json");
    let out = harness()
        .args([
            "check",
            "platform",
            "--dry-run",
            "--sim",
            "--only",
            "sim,auth",
        ])
        .args(["--other-api-key", "k", "--other-workspace", "w"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("skipped:"), "{stdout}");
    assert!(!stdout.contains("limits."), "{stdout}");
    assert!(
        stdout.contains("creates in w: 1 deployment harness-check-{run}-isolation, 1 campaign harness-check-{run}-isolation\n"),
        "{stdout}"
    );
    let plan: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let checks = plan["checks"].as_array().unwrap();
    assert_eq!(checks.len(), sim::CHECKS.len() + auth::CHECKS.len());
    assert!(
        checks
            .iter()
            .all(|c| c["skip_reason"] == "dry run: would run")
    );
    let isolation = checks
        .iter()
        .find(|c| c["id"] == "auth.list_isolation")
        .unwrap();
    assert_eq!(
        isolation["evidence"]["creates"]["w"][0],
        "1 deployment harness-check-{run}-isolation"
    );
}

#[test]
fn help_names_the_groups_of_only_and_skip() {
    let out = harness()
        .args(["check", "platform", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let only = help
        .split("--only <GROUP,...>")
        .nth(1)
        .and_then(|rest| rest.split("--skip").next())
        .unwrap_or_default();
    for g in GROUPS {
        assert!(
            only.contains(g.name),
            "--only does not name {}: {help}",
            g.name
        );
    }
}

#[test]
fn set_up_errors_exit_2_and_say_how_to_fix_them() {
    let out = harness()
        .args(["check", "platform", "--dry-run", "--only", "nope"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("unknown check group(s): nope; the groups are: endpoints"),
        "{stderr}"
    );

    // The oracle alone would judge nothing: it compares what the other groups send.
    let out = harness()
        .args(["check", "platform", "--dry-run", "--only", "oracle"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("no other group runs; name them beside it (--only states,oracle)"),
        "{stderr}"
    );

    let out = harness()
        .args([
            "check",
            "platform",
            "--org",
            "o",
            "--workspace",
            "w",
            "--api-key",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--base-url"));

    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = harness()
        .args([
            "check",
            "platform",
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--org", "o", "--workspace", "w", "--api-key", "k"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot reach the target"), "{stderr}");

    let served = up(false);
    let out = harness()
        .args(["check", "platform", "--base-url", &served.url])
        .args(["--org", ORG, "--workspace", WS, "--api-key", "not-the-key"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the target refuses --api-key"), "{stderr}");

    // --sim against a platform on the real clock.
    let out = harness()
        .args([
            "check",
            "platform",
            "--base-url",
            &served.url,
            "--sim",
            "--only",
            "sim",
        ])
        .args(["--org", ORG, "--workspace", WS, "--api-key", KEY])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--sim was given, but GET /sim/v1/clock answered status 200"),
        "{stderr}"
    );
}
