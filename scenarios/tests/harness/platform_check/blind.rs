//! The rounds of contract breaks written blind: for each round under
//! `scenarios/tests/blind/platform/`, a proxy written from the spec, docs/interface.md and the
//! README alone by an author who never read the checks (`proxy.py`, Python's standard
//! library), which puts one break of the contract between the suite and the mock
//! (`defects.json`, each citing its rule). The whole suite as a user runs it by default (`--sim`,
//! another workspace and the webhook secret, the oracle included) runs in
//! process against the mock behind the proxy: the transparent proxy passes, and every break fails an error check (a break
//! of a point only this project assumed may fail a warning only), but those
//! `verdicts.json` names as out of the suite's sight, with the reason, and those it names as
//! open (a class not fixed yet, with what would catch it), which are printed. A round whose
//! first try is not recorded yet is run and printed only.
//!
//! The first-try catch rate of each round (the suite as it stood before the round was
//! run) is in `verdicts.json` and in the README.
//!
//! Each round's `caught_by.json` records, from the last whole run, the checks that failed
//! each break and, when the oracle was among them, the groups whose traffic showed its
//! differences (`oracle_seen_in`). By default a break runs with fewer groups (`--only`) and
//! must still be caught: those of the suite's own checks that caught it (the oracle off), or,
//! when only the oracle did, the oracle with the groups it saw the break in (a run of one or
//! two groups is a few times shorter than the whole suite's); the breaks no check caught (out
//! of sight, open) are not run, and a break the record does not name, or names by a check
//! that no longer exists, runs with every group.
//! `BLIND_FULL=1` runs every break with every group, as the first try did, and
//! `BLIND_RECORD=1` does so and writes `caught_by.json` anew (after a change of the checks
//! that moves what catches a break, or a new round); with `BLIND_DEFECTS=name,name` (which
//! runs only those breaks, to look at one) it rewrites their entries only.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use futures_util::StreamExt;
use scenarios::checks::{CheckReport, Outcome, Severity};
use serde_json::Value;

use scenarios::checks::platform::check;

use super::support::{WEBHOOK_SECRET, options, sim_clock, spawn};

/// Defects run at once (each with its own mock and proxy): more than the cores, since a run
/// behind a break spends much of its time waiting (the oracle asks a read that differs again
/// for up to 3 s; an event a break keeps back is waited for up to 10 s).
const PARALLEL: usize = 6;

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
async fn run_with(dir: &Path, defect: Option<&str>, only: &[String]) -> CheckReport {
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
    let opts =
        options(&format!("http://127.0.0.1:{port}"), true, true).with_only(only.iter().cloned());
    let report = check(&opts, &mut |_| {}, std::future::pending())
        .await
        .expect("the checks run");
    let _ = proxy.kill();
    let _ = proxy.wait();
    mock.stop().await;
    report
}

/// The checks a run failed, each with its severity.
type Failed = Vec<(String, Severity)>;

fn failed(report: &CheckReport) -> Failed {
    report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail)
        .map(|c| (c.id.clone(), c.severity))
        .collect()
}

/// The groups whose traffic showed the differences of the oracle's failed checks.
fn oracle_seen_in(report: &CheckReport) -> Vec<String> {
    let mut groups: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.result == Outcome::Fail && c.group == "oracle")
        .filter_map(|c| c.evidence.0.get("seen_in_groups")?.as_array().cloned())
        .flatten()
        .filter_map(|g| g.as_str().map(str::to_string))
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

/// What `caught_by.json` records of a break: the checks that failed it, and the groups whose
/// traffic showed the oracle's differences (an older record is the list of checks alone).
struct Caught {
    checks: Vec<String>,
    oracle_seen_in: Vec<String>,
}

impl Caught {
    fn read(v: &Value) -> Caught {
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        match v {
            Value::Array(_) => Caught {
                checks: strings(Some(v)),
                oracle_seen_in: Vec::new(),
            },
            _ => Caught {
                checks: strings(v.get("checks")),
                oracle_seen_in: strings(v.get("oracle_seen_in")),
            },
        }
    }

    /// The groups a break runs with (`--only`; empty: every group): those of the checks
    /// other than the oracle's that caught it (the suite's own checks suffice), else the
    /// oracle with the groups whose traffic showed its differences, else every group.
    /// `catalogue` is a whole run's report (each check's group and severity); `assumed`: a
    /// break of a point only this project assumed, which any check may catch.
    fn groups(&self, catalogue: &CheckReport, assumed: bool) -> Vec<String> {
        let mut own: Vec<String> = Vec::new();
        for id in &self.checks {
            let Some(c) = catalogue.checks.iter().find(|c| &c.id == id) else {
                // A check renamed or removed since the record: run everything.
                return Vec::new();
            };
            if c.group != "oracle" && (assumed || c.severity == Severity::Error) {
                own.push(c.group.clone());
            }
        }
        own.sort();
        own.dedup();
        if !own.is_empty() {
            return own;
        }
        if self.oracle_seen_in.is_empty() {
            return Vec::new();
        }
        let mut groups = self.oracle_seen_in.clone();
        groups.push("oracle".into());
        groups
    }
}

/// Whether the checks that failed (`got`) catch the break `d`: an error check, or any check
/// for a break of a point only this project assumed.
fn catches(d: &Value, got: &[(String, Severity)]) -> bool {
    match d["kind"].as_str() {
        Some("assumed") => !got.is_empty(),
        _ => got.iter().any(|(_, s)| *s == Severity::Error),
    }
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
        let mut defects: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("defects.json")).unwrap())
                .unwrap();
        // `BLIND_DEFECTS=name,name` runs those breaks only (to look at one).
        if let Ok(names) = std::env::var("BLIND_DEFECTS") {
            let names: Vec<&str> = names.split(',').collect();
            defects.retain(|d| d["name"].as_str().is_some_and(|n| names.contains(&n)));
        }
        let base = run_with(&dir, None, &[]).await;
        let base_failed = failed(&base);
        if base_failed.iter().any(|(_, s)| *s == Severity::Error) {
            failures.push(format!(
                "{round}: the transparent proxy fails {base_failed:?}"
            ));
        }
        let caught_by: serde_json::Map<String, Value> =
            std::fs::read_to_string(dir.join("caught_by.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
        let record = std::env::var_os("BLIND_RECORD").is_some();
        let full =
            record || std::env::var_os("BLIND_FULL").is_some() || !recorded || caught_by.is_empty();
        // What each break runs: every group, or those that caught it last.
        let plan: Vec<(&Value, Vec<String>)> = defects
            .iter()
            .filter_map(|d| {
                if full {
                    return Some((d, Vec::new()));
                }
                let name = d["name"].as_str()?;
                if open.contains_key(name) || out_of_sight.contains_key(name) {
                    return None;
                }
                // A break the record does not name (a new one) runs with every group.
                let groups = caught_by.get(name).map_or(Vec::new(), |c| {
                    Caught::read(c).groups(&base, d["kind"] == "assumed")
                });
                Some((d, groups))
            })
            .collect();
        if !full {
            eprintln!(
                "{round}: {} of {} breaks run, each with the groups that caught it last (BLIND_FULL=1: all, with every group)",
                plan.len(),
                defects.len()
            );
        }
        let runs: Vec<(&Value, Failed, Vec<String>)> = futures_util::stream::iter(plan)
            .map(|(d, only)| {
                let dir = &dir;
                async move {
                    let report = run_with(dir, d["name"].as_str(), &only).await;
                    (d, failed(&report), oracle_seen_in(&report))
                }
            })
            .buffered(PARALLEL)
            .collect()
            .await;
        if record {
            // With `BLIND_DEFECTS`, the breaks run replace their entries; the others stay.
            let mut map = match std::env::var_os("BLIND_DEFECTS") {
                Some(_) => caught_by.clone(),
                None => serde_json::Map::new(),
            };
            for (d, got, seen_in) in &runs {
                let name = d["name"].as_str().unwrap().to_string();
                if !catches(d, got) {
                    map.remove(&name);
                    continue;
                }
                let mut entry = serde_json::Map::new();
                let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
                entry.insert("checks".into(), ids.into());
                if !seen_in.is_empty() {
                    entry.insert("oracle_seen_in".into(), seen_in.clone().into());
                }
                map.insert(name, Value::Object(entry));
            }
            let text = serde_json::to_string_pretty(&Value::Object(map)).unwrap() + "\n";
            std::fs::write(dir.join("caught_by.json"), text).expect("caught_by.json written");
        }
        let ran = runs.len();
        let mut caught = 0;
        for (d, got, _) in runs {
            let name = d["name"].as_str().unwrap();
            let is_caught = catches(d, &got);
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
            "{round}: {caught} of {} breaks caught ({ran} run); {} out of the suite's sight",
            defects.len(),
            out_of_sight.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
