//! Scenario features that no example's story needs, run through `harness run`: the files
//! under `scenarios/tests/scenarios/` assert each feature's effect with their expectations,
//! and the tests here read the reports for what an expectation cannot say.

use std::path::{Path, PathBuf};

use serde_json::Value;

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
