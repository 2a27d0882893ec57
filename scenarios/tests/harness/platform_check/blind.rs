//! The rounds of contract breaks written blind: for each round under
//! `scenarios/tests/blind/platform/`, a proxy written from the spec, docs/interface.md and the
//! README alone by an author who never read the checks (`proxy.py`, Python's standard
//! library), which puts one break of the contract between the suite and the mock
//! (`defects.json`, each citing its rule). The whole suite as a user runs it by default (`--sim`,
//! another workspace and the webhook secret; the oracle too when `BLIND_ORACLE` is set) runs in
//! process against the mock behind the proxy: the transparent proxy passes, and every break fails an error check (a break
//! of a point only this project assumed may fail a warning only), but those
//! `verdicts.json` names as out of the suite's sight, with the reason, and those it names as
//! open (a class not fixed yet, with what would catch it), which are printed. A round whose
//! first try is not recorded yet is run and printed only.
//!
//! The first-try catch rate of each round (the suite as it stood before the round was
//! run) is in `verdicts.json` and in the README.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use futures_util::StreamExt;
use scenarios::checks::{CheckReport, Outcome, Severity};
use serde_json::Value;

use scenarios::checks::platform::check;

use super::support::{WEBHOOK_SECRET, options, sim_clock, spawn};

/// Defects run at once (each with its own mock and proxy).
const PARALLEL: usize = 3;

/// The rounds, in order (only those `BLIND_ROUNDS`, comma-separated, names, when it is set).
fn rounds() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/blind/platform");
    let only: Option<Vec<String>> = std::env::var("BLIND_ROUNDS")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the rounds' folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("defects.json").is_file())
        .filter(|p| {
            only.as_ref().is_none_or(|o| {
                o.iter()
                    .any(|r| p.file_name().is_some_and(|f| f.to_string_lossy() == *r))
            })
        })
        .collect();
    v.sort();
    v
}

/// The suite against the mock behind the round's proxy with `defect` (none: transparent).
async fn run_with(dir: &Path, defect: Option<&str>) -> CheckReport {
    let mock = spawn(Some(sim_clock()), None).await;
    let mut cmd = Command::new("python3");
    crate::blind::without_nagle(&mut cmd)
        .arg(dir.join("proxy.py"))
        .args(["--upstream", &mock.url, "--listen", "127.0.0.1:0"])
        .args(["--webhook-secret", WEBHOOK_SECRET])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(d) = defect {
        cmd.args(["--defect", d]);
    }
    let mut proxy = cmd.spawn().expect("python3 starts the proxy");
    let mut line = String::new();
    BufReader::new(proxy.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the proxy says its port");
    let port = serde_json::from_str::<Value>(&line).expect("{\"port\": N}")["port"]
        .as_u64()
        .expect("a port");
    let mut opts = options(&format!("http://127.0.0.1:{port}"), true, true);
    if std::env::var_os("BLIND_ORACLE").is_some() {
        opts = opts.with_oracle();
    }
    let report = check(&opts, &mut |_| {}, std::future::pending())
        .await
        .expect("the checks run");
    let _ = proxy.kill();
    let _ = proxy.wait();
    mock.stop().await;
    report
}

fn failed(report: &CheckReport) -> Vec<(String, Severity)> {
    report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail)
        .map(|c| (c.id.clone(), c.severity))
        .collect()
}

/// Whether python3 runs here; CI sets `HARNESS_REQUIRE_BLIND` so that the rounds fail there
/// instead of being skipped.
fn python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var_os("HARNESS_REQUIRE_BLIND").is_none(),
        "HARNESS_REQUIRE_BLIND is set but python3 cannot run"
    );
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_round_of_blind_contract_breaks_is_caught() {
    if !python() {
        eprintln!("skipped: the blind rounds need python3");
        return;
    }
    let mut failures = Vec::new();
    for dir in rounds() {
        let round = dir.file_name().unwrap().to_string_lossy().into_owned();
        let verdicts: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("verdicts.json")).unwrap())
                .unwrap();
        let out_of_sight = verdicts["out_of_sight"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        // Misses whose class is not fixed yet, each with what would catch it: printed, not
        // failed; a round whose first try is not recorded yet is run and printed only.
        let open = verdicts["open"].as_object().cloned().unwrap_or_default();
        let recorded = verdicts.get("first_try").is_some();
        let defects: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("defects.json")).unwrap())
                .unwrap();
        let base = run_with(&dir, None).await;
        let base_failed = failed(&base);
        if base_failed.iter().any(|(_, s)| *s == Severity::Error) {
            failures.push(format!(
                "{round}: the transparent proxy fails {base_failed:?}"
            ));
        }
        let runs: Vec<(&Value, Vec<(String, Severity)>)> =
            futures_util::stream::iter(defects.iter())
                .map(|d| {
                    let dir = &dir;
                    async move {
                        let report = run_with(dir, d["name"].as_str()).await;
                        (d, failed(&report))
                    }
                })
                .buffered(PARALLEL)
                .collect()
                .await;
        let mut caught = 0;
        for (d, got) in runs {
            let name = d["name"].as_str().unwrap();
            let is_caught = match d["kind"].as_str() {
                Some("assumed") => !got.is_empty(),
                _ => got.iter().any(|(_, s)| *s == Severity::Error),
            };
            eprintln!(
                "{round} {name}: {}",
                if is_caught {
                    format!(
                        "caught by {:?}",
                        got.iter().map(|(id, _)| id).collect::<Vec<_>>()
                    )
                } else if got.is_empty() {
                    "MISSED".into()
                } else {
                    format!(
                        "MISSED (warnings only: {:?})",
                        got.iter().map(|(id, _)| id).collect::<Vec<_>>()
                    )
                }
            );
            match (is_caught, out_of_sight.get(name), open.get(name)) {
                (true, _, _) => caught += 1,
                (false, Some(_), _) => {}
                (false, None, Some(why)) => eprintln!("{round} {name}: open ({why})"),
                (false, None, None) if !recorded => {}
                (false, None, None) => {
                    failures.push(format!("{round} {name} ({}): not caught", d["rule"]))
                }
            }
        }
        eprintln!(
            "{round}: {caught} of {} breaks caught; {} out of the suite's sight",
            defects.len(),
            out_of_sight.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
