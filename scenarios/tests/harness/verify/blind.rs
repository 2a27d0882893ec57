//! The rounds of client mistakes written blind: under `scenarios/tests/blind/verify/`, a
//! client written from the spec, docs/interface.md, the README, the guide's journal chapter
//! and the OpenAPI document alone, by an author who never read how `harness verify` judges
//! (`client.py`), and its mistakes (`mistakes.json`, each citing its rule, the check it
//! should fail or warn, and the words a cause that points the right way holds). Run as a
//! user runs it (a fresh `harness up`, the client, `harness verify --json`), verify passes
//! the correct client and, for every mistake, fails (or warns on) the operation it names
//! with a cause that holds one of those words and none of the words that would send the
//! developer the wrong way. The first try of each round is in its `first_try.json` and in
//! the README.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn every_blind_client_mistake_is_named_with_a_cause_that_points_the_right_way() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/blind/verify/round1");
    if Command::new("python3").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("HARNESS_REQUIRE_BLIND").is_none(),
            "HARNESS_REQUIRE_BLIND is set but python3 does not run"
        );
        eprintln!("skipped: no python3");
        return;
    }
    let work = tempfile::tempdir().expect("a temporary folder");
    let out = work.path().join("outcome.json");
    let runs = work.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let status = Command::new("python3")
        .arg(dir.join("run_round.py"))
        .args(["--harness", env!("CARGO_BIN_EXE_harness")])
        .arg("--out")
        .arg(&out)
        .arg("--runs-dir")
        .arg(&runs)
        .status()
        .expect("the round runs");
    assert!(status.success(), "run_round.py failed");
    let outcome: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let correct = &outcome["correct"];
    assert_eq!(
        correct["exit_code"], 0,
        "the correct client is not passed: {correct}"
    );
    let mistakes = outcome["mistakes"]
        .as_array()
        .expect("the mistakes' outcomes");
    let expected: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("mistakes.json")).unwrap()).unwrap();
    assert_eq!(mistakes.len(), expected.len(), "every mistake ran");
    let missed: Vec<String> = mistakes
        .iter()
        .filter(|m| m["prejudged"] != "caught")
        .map(|m| {
            format!(
                "{} ({}): exit {}, cause {}",
                m["name"], m["prejudged"], m["exit_code"], m["cause"]
            )
        })
        .collect();
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}
