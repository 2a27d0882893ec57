//! The rounds of defects written blind: for each round under `scenarios/tests/blind/byok/`,
//! a key service written from the spec, docs/interface.md and the README alone by an author
//! who never read the checks (round 2 in Node.js with its built-in crypto, round 3 in Python
//! with pycryptodome; `verdicts.json` says how to start each), and its defects
//! (`defects.json`, each citing its rule). `harness check byok`, run as a user runs it,
//! passes the service and fails every defect (a defect of a "should" rule may fail a
//! warning only), but those `verdicts.json` names as out of one run's sight with the
//! reason; and no output of any run (standard output and error, the JSON and JUnit files)
//! holds any 6 characters of any secret the service handled.
//!
//! The first-try catch rate of each round (before the checks were changed for it) is in
//! `verdicts.json` and in the README.
//!
//! Each round's `caught_by.json` records, from the last whole run, the checks that failed
//! each defect. By default a defect runs with the groups of those checks only (`--only`:
//! most runs then skip the token group's wait for an expiry) and must still be caught, its
//! outputs still free of any secret; the defects out of sight are not run, and a defect the
//! record does not name, or that a check of `errors` or `headers` caught (they judge the
//! answers to every other group's requests), runs with every group. Both baselines always
//! run whole.
//! `BLIND_FULL=1` runs every defect with every group, as the first try did, and
//! `BLIND_RECORD=1` does so and writes `caught_by.json` anew; with `BLIND_DEFECTS=name,name`
//! (which runs only those defects) it rewrites their entries only.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;

use super::leak::{assert_no_secret, secret_runs_in};

/// The rounds' folder.
fn rounds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/blind/byok")
}

/// Runs at a time (each is a key service and a check run).
const PARALLEL: usize = 3;

/// What one run of the check gave.
struct Run {
    code: Option<i32>,
    /// The report as written.
    report: String,
    /// Failed checks and their severity.
    failed: BTreeMap<String, String>,
    /// Every output, for the leak scan.
    outputs: String,
    /// Every secret the service handled (its log) and the settings' own.
    secrets: Vec<String>,
    /// Wall time of the run (the service's start, its wrap, the check).
    took: std::time::Duration,
}

/// The fixed settings of a round's service (`verdicts.json`'s `service`).
struct Service {
    dir: PathBuf,
    /// How to start it (`node service.mjs`, `python3 service.py`), from its folder; `{out}`
    /// stands for the folder its build wrote to.
    command: Vec<String>,
    /// How to build it once before the runs (`javac -d {out} Service.java`), if it needs it.
    build: Vec<String>,
    /// Where the build wrote, kept for the round.
    _out: Option<tempfile::TempDir>,
    /// What shows that it can run here.
    check: Vec<String>,
    client: String,
    secret: String,
    static_key: String,
    /// Its two key aliases.
    aliases: [String; 2],
}

fn service(dir: &Path) -> Service {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("verdicts.json")).expect("verdicts.json"),
    )
    .expect("verdicts.json is JSON");
    let s = |k: &str| {
        v["service"][k]
            .as_str()
            .expect("service settings")
            .to_string()
    };
    let list = |k: &str| -> Vec<String> {
        v["service"][k]
            .as_array()
            .expect("service settings")
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect()
    };
    let aliases = list("aliases");
    let build: Vec<String> = v["service"]["build"]
        .as_array()
        .map(|b| {
            b.iter()
                .map(|x| x.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    Service {
        dir: dir.to_path_buf(),
        command: list("command"),
        build,
        _out: None,
        check: list("check"),
        client: s("client_id"),
        secret: s("client_secret"),
        static_key: s("static_key"),
        aliases: [aliases[0].clone(), aliases[1].clone()],
    }
}

/// Starts the service with `args`, runs the check against it as a user would, and answers
/// what it gave.
/// Runs the check against the service with `defect` (none: the baseline), with the groups
/// `only` (empty: every group).
fn run(svc: &Service, defect: Option<&str>, service_args: &[String], only: &[String]) -> Run {
    let started = contracts::clock::Stopwatch::start();
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let log = tmp.path().join("secrets.log");
    let mut defect_args: Vec<String> = Vec::new();
    if let Some(d) = defect {
        defect_args = vec!["--defect".into(), d.into()];
    }
    let mut child = crate::blind::without_nagle(&mut Command::new(&svc.command[0]))
        .current_dir(&svc.dir)
        .args(&svc.command[1..])
        .args(["--port", "0"])
        .args(&defect_args)
        .args(service_args)
        .env("BLIND_SECRETS_LOG", &log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the service starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the service says its port");
    let port = serde_json::from_str::<Value>(&line).expect("{\"port\": N}")["port"]
        .as_u64()
        .expect("a port");
    let wrapped = Command::new(&svc.command[0])
        .current_dir(&svc.dir)
        .args(&svc.command[1..])
        .args(["wrap", "--alias", &svc.aliases[0]])
        .args(&defect_args)
        .output()
        .expect("wrap runs");
    let wrapped: Value = serde_json::from_slice(&wrapped.stdout).expect("wrap answers JSON");
    let encrypted = wrapped["encrypted_key"].as_str().expect("encrypted_key");
    let plaintext = wrapped["plaintext_key"].as_str().expect("plaintext_key");

    let json = tmp.path().join("byok.json");
    let junit = tmp.path().join("byok.xml");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.args([
        "check",
        "byok",
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
    ])
    .args(["--partner", "acme", "--key-alias", &svc.aliases[0]])
    .args(["--other-key-alias", &svc.aliases[1]])
    .args([
        "--use-rotate",
        "--encrypted-key",
        encrypted,
        "--calls",
        "40",
    ])
    .args(["--expiry-wait-secs", "15"])
    .arg("--json")
    .arg(&json)
    .arg("--junit")
    .arg(&junit)
    .args(
        (!only.is_empty())
            .then(|| ["--only".to_string(), only.join(",")])
            .into_iter()
            .flatten(),
    )
    .env("BYOK_EXPECTED_PLAINTEXT", plaintext)
    .env_remove("BYOK_CLIENT_SECRET")
    .env_remove("BYOK_API_KEY")
    .env("NO_COLOR", "1");
    if service_args.iter().any(|a| a == "--static-key") {
        cmd.env("BYOK_API_KEY", &svc.static_key);
    } else {
        cmd.args(["--client-id", &svc.client])
            .env("BYOK_CLIENT_SECRET", &svc.secret);
    }
    let out = cmd.output().expect("harness runs");
    let _ = child.kill();
    let _ = child.wait();

    let report = std::fs::read_to_string(&json).unwrap_or_default();
    let failed = serde_json::from_str::<Value>(&report)
        .ok()
        .and_then(|r| r["checks"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|c| c["result"] == "fail")
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["severity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let outputs = format!(
        "{}\n{}\n{report}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&junit).unwrap_or_default()
    );
    let mut secrets: Vec<String> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    secrets.push(plaintext.to_string());
    Run {
        code: out.status.code(),
        report: report.clone(),
        failed,
        outputs,
        secrets,
        took: started.elapsed(),
    }
}

/// The groups of `check byok`, as `--only` takes them.
const GROUPS: &[&str] = &[
    "tls", "auth", "decrypt", "rotate", "headers", "methods", "token", "load", "errors",
];
/// The groups whose checks judge the answers to every other group's requests (each error
/// answer's shape, each answer's trace header): alone they see nothing.
const JUDGE_EVERY_ANSWER: &[&str] = &["errors", "headers"];

/// The groups a defect runs with, from the checks that caught it last (`recorded`): theirs,
/// or every group (empty) when the record names none, or a group that judges every answer.
/// A check outside the groups (`setup.*`, the set-up's own) needs no group of its own.
fn groups_to_run(recorded: Option<&Value>) -> Vec<String> {
    let mut groups: Vec<String> = recorded
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|id| id.as_str()?.split('.').next().map(str::to_string))
        .filter(|g| GROUPS.contains(&g.as_str()))
        .collect();
    if groups
        .iter()
        .any(|g| JUDGE_EVERY_ANSWER.contains(&g.as_str()))
    {
        return Vec::new();
    }
    groups.sort();
    groups.dedup();
    groups
}

/// Whether the run caught the defect `d`: an error check failed and the exit status says so,
/// or, for a defect of a "should" rule, any check failed.
fn caught(d: &Value, r: &Run) -> bool {
    match d["severity"] == "warning" {
        true => !r.failed.is_empty(),
        false => r.failed.values().any(|sev| sev == "error") && r.code == Some(1),
    }
}

/// Whether the machine runs the round's service (Node.js, Python with its crypto library);
/// without it the round cannot run (CI sets `HARNESS_REQUIRE_BLIND` so that it fails there
/// instead of being skipped).
fn runnable(svc: &Service) -> bool {
    let ok = Command::new(&svc.check[0])
        .args(&svc.check[1..])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("HARNESS_REQUIRE_BLIND").is_none(),
            "HARNESS_REQUIRE_BLIND is set but {:?} fails: install what {} needs",
            svc.check,
            svc.dir.display()
        );
        eprintln!("skipped {}: {:?} fails here", svc.dir.display(), svc.check);
    }
    ok
}

/// Builds the service once (when its settings name a build), into a temporary folder that
/// `{out}` in its command then names.
fn build(svc: &mut Service) {
    if svc.build.is_empty() {
        return;
    }
    let out = tempfile::tempdir().expect("a temporary folder");
    let at = out.path().to_string_lossy().into_owned();
    let fill =
        |v: &[String]| -> Vec<String> { v.iter().map(|a| a.replace("{out}", &at)).collect() };
    let status = Command::new(&svc.build[0])
        .current_dir(&svc.dir)
        .args(&fill(&svc.build)[1..])
        .status()
        .expect("the build runs");
    assert!(
        status.success(),
        "{:?} failed in {}",
        svc.build,
        svc.dir.display()
    );
    svc.command = fill(&svc.command);
    svc._out = Some(out);
}

/// The rounds, in order (only those `BLIND_ROUNDS`, comma-separated, names, when it is set).
fn rounds() -> Vec<PathBuf> {
    let only: Option<Vec<String>> = std::env::var("BLIND_ROUNDS")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let mut v: Vec<PathBuf> = std::fs::read_dir(rounds_dir())
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

#[test]
fn every_round_of_blind_defects_is_caught_and_no_output_holds_a_secret() {
    let mut failures = Vec::new();
    let mut caught_by: BTreeSet<String> = BTreeSet::new();
    for dir in rounds() {
        let round = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut svc = service(&dir);
        if !runnable(&svc) {
            continue;
        }
        build(&mut svc);
        let verdicts: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("verdicts.json")).unwrap())
                .unwrap();
        let out_of_sight = verdicts["out_of_sight"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let defects: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("defects.json")).unwrap())
                .unwrap();

        let base = run(&svc, None, &[], &[]);
        let static_base = run(&svc, None, &["--static-key".to_string()], &[]);
        let mut conforming = true;
        for (name, b) in [("baseline", &base), ("baseline --static-key", &static_base)] {
            if b.code != Some(0) || !b.failed.is_empty() {
                conforming = false;
                failures.push(format!(
                    "{round} {name}: exit {:?}, failed {:?}: {}",
                    b.code, b.failed, b.report
                ));
            }
            assert_no_secret(&b.outputs, &[&svc.secret, &svc.static_key], &b.secrets);
        }

        if !conforming {
            // Defects of a service the check fails anyway prove nothing.
            continue;
        }
        let record = std::env::var_os("BLIND_RECORD").is_some();
        let full = record || std::env::var_os("BLIND_FULL").is_some();
        let recorded: serde_json::Map<String, Value> =
            std::fs::read_to_string(dir.join("caught_by.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
        // `BLIND_DEFECTS=name,name` runs those defects only (to look at one).
        let chosen: Option<Vec<String>> = std::env::var("BLIND_DEFECTS")
            .ok()
            .map(|v| v.split(',').map(str::to_string).collect());
        // Each defect with the groups it runs with (empty: every group).
        let plan: Vec<(&Value, Vec<String>)> = defects
            .iter()
            .filter(|d| {
                chosen
                    .as_ref()
                    .is_none_or(|c| c.iter().any(|n| d["name"] == n.as_str()))
            })
            .filter_map(|d| {
                let name = d["name"].as_str()?;
                if full {
                    return Some((d, Vec::new()));
                }
                if out_of_sight.contains_key(name) {
                    return None;
                }
                Some((d, groups_to_run(recorded.get(name))))
            })
            .collect();
        if !full {
            eprintln!(
                "{round}: {} of {} defects run, each with the groups that caught it last (BLIND_FULL=1: all, with every group)",
                plan.len(),
                defects.len()
            );
        }
        let queue = Mutex::new(plan.iter().collect::<Vec<_>>());
        let results = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..PARALLEL {
                s.spawn(|| {
                    loop {
                        let Some((d, only)) = queue.lock().unwrap().pop() else {
                            return;
                        };
                        let name = d["name"].as_str().unwrap();
                        let args: Vec<String> = d["service_args"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|v| v.as_str().map(String::from))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let r = run(&svc, Some(name), &args, only);
                        // Searched here, beside the other runs, not after them all.
                        let leaks =
                            secret_runs_in(&r.outputs, &[&svc.secret, &svc.static_key], &r.secrets);
                        results.lock().unwrap().push(((*d).clone(), r, leaks));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap();
        results.sort_by(|a, b| a.0["name"].as_str().cmp(&b.0["name"].as_str()));
        if record {
            // With `BLIND_DEFECTS`, the defects run replace their entries; the others stay.
            let mut map = match &chosen {
                Some(_) => recorded.clone(),
                None => serde_json::Map::new(),
            };
            for (d, r, _) in &results {
                let name = d["name"].as_str().unwrap().to_string();
                match caught(d, r) {
                    true => map.insert(name, r.failed.keys().cloned().collect::<Vec<_>>().into()),
                    false => map.remove(&name),
                };
            }
            let text = serde_json::to_string_pretty(&Value::Object(map)).unwrap() + "\n";
            std::fs::write(dir.join("caught_by.json"), text).expect("caught_by.json written");
        }
        let mut n_caught = 0;
        for (d, r, leaks) in &results {
            let name = d["name"].as_str().unwrap();
            assert!(
                leaks.is_empty(),
                "{round} {name}: parts of secrets in the outputs: {leaks:?}"
            );
            let is_caught = caught(d, r);
            caught_by.extend(r.failed.keys().cloned());
            eprintln!(
                "{round} {name} ({:.1} s): {}",
                r.took.as_secs_f64(),
                if is_caught {
                    format!("caught by {:?}", r.failed.keys().collect::<Vec<_>>())
                } else {
                    "MISSED".into()
                }
            );
            match (is_caught, out_of_sight.get(name)) {
                (true, _) => n_caught += 1,
                (false, Some(_)) => {}
                (false, None) => failures.push(format!(
                    "{round} {name} ({}): not caught (exit {:?}, failed {:?})",
                    d["rule"], r.code, r.failed
                )),
            }
        }
        eprintln!(
            "{round}: {n_caught} of {} defects caught ({} run); {} out of one run's sight",
            defects.len(),
            results.len(),
            out_of_sight.len()
        );
    }
    for id in super::mutants::PROVEN_BY_BLIND_ROUNDS {
        if !caught_by.contains(*id) {
            failures.push(format!("no blind defect fails {id}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
