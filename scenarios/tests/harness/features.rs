//! Scenario features that no example's story needs, run through `harness run`: the files
//! under `scenarios/tests/scenarios/` assert each feature's effect with their expectations,
//! and the tests here read the reports for what an expectation cannot say.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod changes;

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
}

/// Runs one file through `harness run -q --report-dir`, which must pass; answers its
/// report.json.
fn run_passing(file: &Path) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = crate::run::harness_run(file, dir.path());
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
    serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap()
}

fn run(name: &str) -> Value {
    run_passing(&scenario(name))
}

#[test]
fn steps_rules_and_cohorts_have_their_effect() {
    let r = run("steps_rules_cohorts.toml");
    let rules: Vec<(String, u64)> = r["telephony_rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_string(),
                x["dials"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        [
            ("busy twice, then connected".to_string(), 3),
            (
                "no answer on the first dial, connected on the retry".to_string(),
                2
            ),
            ("the 666 exchange answers at once".to_string(), 1),
        ]
    );
    let expectations = r["expectations"]["checks"].as_array().unwrap();
    assert_eq!(expectations.len(), 12, "9 expectations and 3 expect_dials");
    let timeline = serde_json::to_string(&r["timeline"]).unwrap();
    for seen in [
        "patched: {\\\"end_timestamp\\\"",
        "deployment patched",
        "rotated: key 2 active",
        "do-not-call",
    ] {
        assert!(timeline.contains(seen), "{seen} in {timeline}");
    }
}

#[test]
fn every_key_service_fault_kind_is_served_and_logged_with_its_kind() {
    let r = run("key_service_faults.toml");
    let served: Vec<(String, String)> = r["key_service"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| {
            Some((
                k["fault"].as_str()?.to_string(),
                k["outcome"].as_str().unwrap().to_string(),
            ))
        })
        .collect();
    for (fault, outcome) in [
        ("internal_error", "INTERNAL_ERROR"),
        ("hang", "NO_RESPONSE"),
        ("malformed_json", "OK"),
        ("wrong_content_type", "OK"),
        ("wrong_plaintext", "OK"),
        ("truncated_key", "OK"),
        ("service_unavailable", "SERVICE_UNAVAILABLE"),
    ] {
        assert!(
            served.contains(&(fault.to_string(), outcome.to_string())),
            "{fault} served as {outcome}: {served:?}"
        );
    }
}

/// Every timeline action and fault kind is run by an example or a file here; a new one
/// without a scenario fails.
#[test]
fn every_action_and_fault_kind_is_run_somewhere() {
    let mut text = String::new();
    for dir in ["examples", "tests/scenarios"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                text.push_str(&std::fs::read_to_string(p).unwrap());
            }
        }
    }
    let schema: Value = serde_json::from_str(&scenarios::scenario::schema_json()).unwrap();
    let mut names = vec![];
    for variant in schema["$defs"]["Step"]["oneOf"].as_array().unwrap() {
        names.push(format!(
            "do = \"{}\"",
            variant["properties"]["do"]["const"].as_str().unwrap()
        ));
    }
    for kind in schema["$defs"]["KmsFaultKind"]["oneOf"].as_array().unwrap() {
        names.push(format!("kind = \"{}\"", kind["const"].as_str().unwrap()));
    }
    assert!(names.len() >= 13 + 9, "{names:?}");
    for name in [
        "script = \"by_attempt\"",
        "expect_dials",
        "prefix = ",
        "suffix = ",
        "number = ",
        "file = ",
        "category = \"stop_file\"",
        "probability = ",
    ] {
        names.push(name.to_string());
    }
    for name in names {
        assert!(text.contains(&name), "no scenario has {name}");
    }
}

/// The field paths of a report, in order (`[]` for an array's items); values the API or the
/// scenario shape (`statistics`, `result`, `observed`, `agent_variables`) are not entered.
fn field_paths(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if !out.contains(&p) {
                    out.push(p.clone());
                }
                if !["statistics", "result", "observed", "agent_variables"].contains(&k.as_str()) {
                    field_paths(x, &p, out);
                }
            }
        }
        Value::Array(items) => {
            for x in items {
                field_paths(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// report.json's fields and their order are pinned (a change shows in the snapshot), and
/// each is documented in scenarios/README.md.
#[test]
fn the_report_shape_is_pinned_and_documented() {
    let mut paths = vec![];
    field_paths(&run("steps_rules_cohorts.toml"), "", &mut paths);
    let v = run_passing(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lifecycle.toml"));
    let mut more = vec![];
    field_paths(&v, "", &mut more);
    for p in more {
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    insta::assert_snapshot!(paths.join("\n"));
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let reports = &readme[readme.find("## Reports").unwrap()..readme.find("## Errors").unwrap()];
    for p in &paths {
        let field = p.rsplit(['.', '[', ']']).find(|s| !s.is_empty()).unwrap();
        assert!(
            reports.contains(&format!("`{field}`")) || reports.contains(&format!("`{field}[]`")),
            "report.json's {p} is not documented in scenarios/README.md"
        );
    }
}

/// What the report says is exact: each status change at its instant (the steps' at theirs,
/// the start at the start), a pause and a resume at one second both shown; inbound calls in
/// time order whatever their keys, an unknown caller's variables an empty object; dials per
/// number of each connection.
#[test]
fn the_report_is_exact_to_the_second() {
    let r = run("report_exact.toml");
    let status: Vec<(String, String)> = r["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "status" && e["subject"] == "c")
        .map(|e| {
            (
                e["at"].as_str().unwrap().to_string(),
                e["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("08:00:00", "created"),
        ("09:00:00", "scheduled -> active"),
        ("09:30:00", "active -> paused"),
        ("09:30:00", "paused -> active"),
        ("10:00:01", "active -> paused"),
        ("10:30:00", "paused -> active"),
        ("12:00:00", "active -> cancelled"),
    ]
    .iter()
    .map(|(t, d)| (format!("2026-03-02T{t}.000Z"), d.to_string()))
    .collect();
    assert_eq!(status.len(), want.len(), "{status:?}");
    for ((at, detail), (want_at, want_detail)) in status.iter().zip(&want) {
        assert_eq!(at, want_at, "{status:?}");
        assert!(detail.starts_with(want_detail.as_str()), "{status:?}");
    }
    let calls: Vec<(&str, &str)> = r["inbound_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["key"].as_str().unwrap(), c["at"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("b-earlier", "2026-03-02T10:45:00.000Z"),
            ("a-later", "2026-03-02T11:00:00.000Z")
        ]
    );
    assert_eq!(
        r["inbound_calls"][0]["agent_variables"],
        serde_json::json!({})
    );
    assert_eq!(
        r["inbound_calls"][1]["agent_variables"],
        serde_json::json!({"first_name": "Ada"})
    );
    let numbers: Vec<Vec<(String, u64)>> = r["campaigns"][0]["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["numbers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| {
                    (
                        n["phone_number"].as_str().unwrap().to_string(),
                        n["dials"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .collect();
    let n = |p: &str, d: u64| (p.to_string(), d);
    assert_eq!(
        numbers,
        [
            vec![n("+14155550700", 1800), n("+14155550701", 1800)],
            vec![
                n("+14155550710", 400),
                n("+14155550711", 400),
                n("+14155550712", 400)
            ],
        ]
    );
}

/// `numbers_used_equally` fails when a connection's numbers are not used in turn: 5,000
/// users put 1,250 dials on three numbers (417, 417, 416), which `spread = 0` refuses.
#[test]
fn numbers_used_unequally_fail() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(scenario("report_exact.toml"))
        .unwrap()
        .replace("count = 4800", "count = 5000");
    let file = dir.path().join("unequal.toml");
    std::fs::write(&file, text).unwrap();
    let (code, out) = crate::run::harness_run(&file, &dir.path().join("r"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  numbers_used_equally.line97"), "{out}");
    assert!(
        out.contains(r#""conn-b":{"+14155550710":417,"+14155550711":417,"+14155550712":416}"#),
        "{out}"
    );
    assert!(out.contains("5 passed, 1 failed"), "{out}");
}

/// A step the platform refuses at run time (one `scenario check` cannot know: a patch that
/// takes another deployment's number) is a failed check with the platform's answer, the run
/// goes on to the end, and `harness run` exits 1 with its reports written.
#[test]
fn a_step_the_platform_refuses_is_a_failed_check_with_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n[[deployments]]\nkey = \"other\"\n\n[deployments.request]\nname = \"Other\"\napp_id = \"app-1\"\napp_version = 1\nconnection_configs = [{{ connection_id = \"conn-o\", phone_numbers = [\"+14155550791\"] }}]\n\n[[timeline]]\nat = \"+2h\"\ndo = \"patch_deployment\"\ndeployment = \"other\"\npatch = {{ connection_configs = [{{ connection_id = \"conn-o\", phone_numbers = [\"+14155550790\"] }}] }}\n",
        std::fs::read_to_string(scenario("report_exact.toml")).unwrap()
    );
    let file = dir.path().join("refused.toml");
    std::fs::write(&file, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l == "do = \"patch_deployment\"")
        .unwrap();
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["scenario", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(check.status.success(), "scenario check cannot know it");
    let reports = dir.path().join("r");
    let (code, out) = crate::run::harness_run(&file, &reports);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  step.line"), "{out}");
    assert!(
        out.contains("6 passed, 1 failed"),
        "every expectation still judged: {out}"
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("report.json")).unwrap())
            .unwrap();
    let step = r["expectations"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["group"] == "step")
        .expect("the refused step is a check");
    assert_eq!(step["result"], "fail");
    assert_eq!(step["evidence"]["observed"]["status"], 409);
    assert!(
        step["evidence"]["observed"]["answer"]["error"]["message"]
            .as_str()
            .is_some(),
        "{step}"
    );
    assert!(
        step["location"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{}", line - 1)),
        "the [[timeline]] entry: {step}"
    );
    let timeline = serde_json::to_string(&r["timeline"]).unwrap();
    assert!(
        timeline.contains("patch_deployment refused: 409"),
        "{timeline}"
    );
}
