//! `harness run`: every example passes through the command, the same file and seed give the
//! same bytes, and a failing expectation says where, what and when, with exit status 1.

use std::path::{Path, PathBuf};
use std::process::Command;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// Runs `harness run -q FILE --report-dir DIR` and answers the exit code and output.
pub fn harness_run(file: &Path, dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("run")
        .arg("-q")
        .arg(file)
        .arg("--report-dir")
        .arg(dir)
        .output()
        .expect("harness runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

macro_rules! example_passes {
    ($name:ident, $file:expr) => {
        #[test]
        fn $name() {
            let dir = tempfile::tempdir().unwrap();
            let (code, out) = harness_run(&example($file), dir.path());
            assert_eq!(code, Some(0), "{out}");
            assert!(out.contains(" passed, 0 failed"), "{out}");
            for f in ["report.json", "report.html", "junit.xml"] {
                assert!(dir.path().join(f).is_file(), "{f} written");
            }
            let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
            assert!(junit.contains("failures=\"0\""), "{junit}");
        }
    };
}

example_passes!(example_lifecycle, "lifecycle.toml");
example_passes!(example_windows_dst, "windows_dst.toml");
example_passes!(example_pause_resume_cancel, "pause_resume_cancel.toml");
example_passes!(example_weights, "weights.toml");
example_passes!(example_key_service_outage, "key_service_outage.toml");
example_passes!(example_inbound, "inbound.toml");
example_passes!(example_restart, "restart.toml");
example_passes!(example_capacity, "capacity.toml");
example_passes!(example_large, "large.toml");

#[test]
fn every_example_has_a_test_here() {
    let listed = include_str!("run.rs");
    for entry in std::fs::read_dir(example("")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".toml") {
            assert!(
                listed.contains(&format!("\"{name}\"")),
                "{name} has no example_passes! line"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_file_and_seed_give_the_same_report_bytes() {
    for file in ["lifecycle.toml", "key_service_outage.toml", "restart.toml"] {
        let a = scenarios::runner::run_file(&example(file), None)
            .await
            .unwrap();
        let b = scenarios::runner::run_file(&example(file), None)
            .await
            .unwrap();
        let (ja, jb) = (
            scenarios::report::scenario::to_json(&a),
            scenarios::report::scenario::to_json(&b),
        );
        assert!(ja == jb, "{file}: two runs differ");
        assert_eq!(
            scenarios::report::html::render(&a),
            scenarios::report::html::render(&b),
            "{file}: the HTML differs"
        );
    }
    // Another seed gives other ids and outcomes.
    let c = scenarios::runner::run_file(&example("lifecycle.toml"), Some(43))
        .await
        .unwrap();
    let a = scenarios::runner::run_file(&example("lifecycle.toml"), None)
        .await
        .unwrap();
    assert_ne!(a.campaigns[0].campaign_id, c.campaigns[0].campaign_id);
    assert_eq!(c.seed, 43);
}

#[test]
fn a_failing_expectation_names_its_line_the_expected_and_observed_values_and_the_time() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(example("lifecycle.toml"))
        .unwrap()
        .replace("total = 11\n", "total = 12\n");
    let file = dir.path().join("wrong.toml");
    std::fs::write(&file, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l == "check = \"outcomes\"")
        .unwrap();
    let (code, out) = harness_run(&file, &dir.path().join("reports"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  outcomes.line"), "{out}");
    assert!(
        out.contains(&format!("at:       wrong.toml:{line}\n")),
        "the [[expect]] line {line}, the file outside the current directory by its name: {out}"
    );
    assert!(
        out.contains("expected: total exactly 12, connected exactly 3"),
        "{out}"
    );
    assert!(out.contains("\"total\":11"), "{out}");
    assert!(out.contains("\"at\":\"2026-03-04T09:00:00.000Z\""), "{out}");
    assert!(out.contains("14 passed, 1 failed"), "{out}");
    let junit = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    assert!(junit.contains("failures=\"1\""), "{junit}");
    assert!(junit.contains("<failure message="), "{junit}");
}

#[test]
fn an_invalid_file_runs_nothing_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "start = \"soon\"\n").unwrap();
    let (code, out) = harness_run(&file, dir.path());
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("bad.toml:1:9:"), "{out}");
    assert!(out.contains("nothing was run"), "{out}");
}

/// Runs `harness` with `args` in `cwd`; answers the exit code, stdout and stderr.
fn harness_in(cwd: &Path, args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("harness runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn quiet_prints_one_line_per_passing_file_and_only_the_failing_expectations() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(example("lifecycle.toml")).unwrap();
    std::fs::write(dir.path().join("good.toml"), &text).unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        text.replace("total = 11\n", "total = 12\n"),
    )
    .unwrap();
    let (code, stdout, stderr) = harness_in(
        dir.path(),
        &["run".as_ref(), "-q".as_ref(), "good.toml".as_ref()],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        stdout, "lifecycle: good.toml: 15 passed, 0 failed, 0 skipped\n",
        "one line"
    );
    assert_eq!(stderr, "", "no progress bar when stderr is not a terminal");
    let (code, stdout, _) = harness_in(
        dir.path(),
        &["run".as_ref(), "-q".as_ref(), "bad.toml".as_ref()],
    );
    assert_eq!(code, Some(1));
    assert!(stdout.contains("  FAIL  outcomes.line"), "{stdout}");
    assert!(
        !stdout.contains("PASS"),
        "only the failing expectations: {stdout}"
    );
    assert!(
        stdout.ends_with("14 passed, 1 failed, 0 skipped\n"),
        "{stdout}"
    );
    let (_, loud, _) = harness_in(dir.path(), &["run".as_ref(), "good.toml".as_ref()]);
    assert!(
        loud.contains("timeline:") && loud.contains("  PASS  "),
        "{loud}"
    );
}

#[test]
fn files_of_the_same_name_get_a_report_directory_each() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(example("lifecycle.toml")).unwrap();
    for (sub, seed) in [("a", "seed = 42"), ("b", "seed = 7")] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::write(
            dir.path().join(sub).join("lifecycle.toml"),
            text.replace("seed = 42", seed),
        )
        .unwrap();
    }
    let (code, stdout, stderr) = harness_in(
        dir.path(),
        &[
            "run".as_ref(),
            "-q".as_ref(),
            "a/lifecycle.toml".as_ref(),
            "b/lifecycle.toml".as_ref(),
            "--report-dir".as_ref(),
            "out".as_ref(),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let seed_of = |sub: &str| {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("out").join(sub).join("report.json")).unwrap(),
        )
        .unwrap();
        (v["file"].clone(), v["seed"].clone())
    };
    assert_eq!(seed_of("lifecycle"), ("a/lifecycle.toml".into(), 42.into()));
    assert_eq!(
        seed_of("lifecycle-2"),
        ("b/lifecycle.toml".into(), 7.into())
    );
}

#[test]
fn a_file_named_by_a_relative_or_an_absolute_path_gives_the_same_report_bytes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let relative = Path::new("examples/pause_resume_cancel.toml");
    let absolute = root.join(relative);
    for (sub, file) in [("rel", relative), ("abs", absolute.as_path())] {
        let (code, stdout, stderr) = harness_in(
            root,
            &[
                "run".as_ref(),
                "-q".as_ref(),
                file.as_os_str(),
                "--report-dir".as_ref(),
                dir.path().join(sub).as_os_str(),
            ],
        );
        assert_eq!(code, Some(0), "{stdout}{stderr}");
    }
    let read = |sub: &str| std::fs::read(dir.path().join(sub).join("report.json")).unwrap();
    assert!(read("rel") == read("abs"), "the same bytes");
    let v: serde_json::Value = serde_json::from_slice(&read("rel")).unwrap();
    assert_eq!(v["file"], "examples/pause_resume_cancel.toml");
    assert!(
        v["expectations"]["checks"][0]["location"]
            .as_str()
            .unwrap()
            .starts_with("examples/pause_resume_cancel.toml:"),
        "{v}"
    );
}

/// `--dials FILE`: every dial, one row each, in dial order, with its local time in the
/// campaign's time zone (so a local window is checked on the file alone: 09:00 to 17:00 in
/// New York on both sides of the change to daylight saving time), as CSV or JSON Lines by
/// the name; for several files, one file each.
#[test]
fn every_dial_is_exported_with_its_local_time() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("dials.csv");
    let (code, stdout, stderr) = harness_in(
        dir.path(),
        &[
            "run".as_ref(),
            "-q".as_ref(),
            example("windows_dst.toml").as_os_str(),
            "--dials".as_ref(),
            "dials.csv".as_ref(),
            "--json".as_ref(),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "campaign,at,local_time,attempt_id,user_phone_number,agent_phone_number,connection_id,result,duration,attempt"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let total: u64 = report["campaigns"][0]["dials_by_result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(rows.len() as u64, total, "one row per dial");
    let mut offsets = std::collections::BTreeSet::new();
    let mut previous = "";
    for r in &rows {
        assert_eq!(r.len(), 10, "{r:?}");
        assert_eq!(r[0], "ny");
        assert!(r[1] >= previous, "in dial order");
        previous = r[1];
        let local = chrono::DateTime::parse_from_rfc3339(r[2]).unwrap();
        let utc: chrono::DateTime<chrono::Utc> = r[1].parse().unwrap();
        assert_eq!(local.to_utc(), utc, "the same instant");
        offsets.insert(local.offset().local_minus_utc());
        let hm = local.format("%H:%M").to_string();
        assert!(("09:00".."17:00").contains(&hm.as_str()), "{r:?}");
        assert!(r[4].starts_with("+1312") && r[5] == "+14155550800" && r[6] == "conn-a");
        assert!(
            [
                "connected",
                "short_duration",
                "busy",
                "no_answer",
                "failed",
                "provider_error",
                "internal_error"
            ]
            .contains(&r[7]),
            "{r:?}"
        );
        assert_eq!(r[9], "1", "no retries: every dial a first attempt");
        if r[7] == "busy" {
            assert_eq!(r[8], "", "nothing answered: no duration");
        }
        if r[7] == "connected" {
            assert!(r[8].parse::<f64>().unwrap() > 0.0, "{r:?}");
        }
    }
    assert_eq!(
        offsets.into_iter().collect::<Vec<_>>(),
        [-5 * 3600, -4 * 3600],
        "EST before the change, EDT after"
    );

    // JSON Lines, for two files: one file each, named after its report directory.
    let jsonl = dir.path().join("d.jsonl");
    let (code, _, stderr) = harness_in(
        dir.path(),
        &[
            "run".as_ref(),
            "-q".as_ref(),
            example("weights.toml").as_os_str(),
            example("pause_resume_cancel.toml").as_os_str(),
            "--dials".as_ref(),
            "d.jsonl".as_ref(),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!jsonl.exists());
    let lines = std::fs::read_to_string(dir.path().join("d.pause_resume_cancel.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "campaign",
            "at",
            "local_time",
            "attempt_id",
            "user_phone_number",
            "agent_phone_number",
            "connection_id",
            "result",
            "duration",
            "attempt"
        ]
    );
    assert_eq!(lines.lines().count(), 4202, "every dial before the cancel");
    assert!(dir.path().join("d.weights.jsonl").is_file());

    // Any other name is refused before anything runs.
    let (code, _, stderr) = harness_in(
        dir.path(),
        &[
            "run".as_ref(),
            "-q".as_ref(),
            example("weights.toml").as_os_str(),
            "--dials".as_ref(),
            "dials.txt".as_ref(),
        ],
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("name the file .csv (CSV) or .jsonl"),
        "{stderr}"
    );
}
