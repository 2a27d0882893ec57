//! The report across changes in the middle of a run (issue 50): a schedule patched, a
//! connection removed, a cancel mid-window, users excluded by a stop file, a field cleared by
//! a patch. Each file's comment works its figures out by hand; the tests read them back.

use serde_json::Value;

/// `(from, until, dials)` of each of a campaign's `windows[]`, times as `Thh:mm` on their
/// day (`"03T14:00"`).
fn windows(c: &Value) -> Vec<(String, String, u64)> {
    let short =
        |s: &Value| s.as_str().unwrap()["2026-03-".len().."2026-03-03T14:00".len()].to_string();
    c["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                short(&w["from"]),
                short(&w["until"]),
                w["dials"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn attempts(c: &Value) -> u64 {
    c["dials_by_result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["count"].as_u64().unwrap())
        .sum()
}

fn check<'r>(r: &'r Value, group: &str, n: usize) -> &'r Value {
    r["expectations"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["group"] == group)
        .nth(n)
        .unwrap_or_else(|| panic!("no {group} check {n}"))
}

fn s(x: &str) -> String {
    x.to_string()
}

/// 18:00-20:00 UTC on Monday (720 dials at 0.1 a second), paused, patched to 09:00-10:00 New
/// York time, resumed: Tuesday 14:00-15:00 UTC makes 360. windows[] lists those two openings
/// (not Monday's opening of the new schedule, before the patch), they add up to the
/// attempts, the chart shades them and nothing else, and dial_rate counts the open time of
/// each schedule while it was in force: 1,080 dials in 10,800 s.
#[test]
fn a_patched_schedule_is_read_at_each_instant() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in("report_patched_schedule.toml", dir.path());
    let c = &r["campaigns"][0];
    assert_eq!(
        windows(c),
        [
            (s("02T18:00"), s("02T20:00"), 720),
            (s("03T14:00"), s("03T15:00"), 360)
        ]
    );
    assert_eq!(attempts(c), 1080);
    assert_eq!(
        windows(c).iter().map(|w| w.2).sum::<u64>(),
        attempts(c),
        "the openings' dials add up to the attempts"
    );
    assert_eq!(c["dials_outside_window"], 0);
    for w in c["windows"].as_array().unwrap() {
        assert_eq!(w["rate"], 0.1, "{w}");
        assert_eq!(w["attempts_per_second"], 0.1, "{w}");
    }
    assert_eq!(
        r["chart"]["windows"],
        serde_json::json!([
            ["2026-03-02T18:00:00.000Z", "2026-03-02T20:00:00.000Z"],
            ["2026-03-03T14:00:00.000Z", "2026-03-03T15:00:00.000Z"]
        ])
    );
    let whole = &check(&r, "dial_rate", 0)["evidence"]["observed"];
    assert_eq!(
        (whole["dials"].as_u64(), whole["open_seconds"].as_u64()),
        (Some(1080), Some(10_800)),
        "{whole}"
    );
    let tuesday = &check(&r, "dial_rate", 2)["evidence"]["observed"];
    assert_eq!(
        (tuesday["dials"].as_u64(), tuesday["open_seconds"].as_u64()),
        (Some(360), Some(3_600)),
        "{tuesday}"
    );
    // The report's chart shades the windows in the live page's neutral grey, not in a
    // yellow that reads as a warning.
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert_eq!(html.matches(r#"class="window""#).count(), 2);
    assert!(html.contains(r##"fill="#e8ecf1""##), "neutral windows");
    assert!(!html.contains("#fff3c4"), "no pale yellow");
}

/// Weights 7:3, 1,000 dials (700 and 300), conn-b removed by a patch at 09:17, 1,321 more on
/// conn-a to the cancel at 09:40: conn-b keeps its 300 dials, marked removed at the patch's
/// time, the shares add up to 1; one opening, 09:00 to the cancel, with every dial; none on
/// Tuesday.
#[test]
fn a_removed_connection_keeps_its_dials_and_a_cancel_ends_the_opening() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in("report_removed_connection.toml", dir.path());
    let c = &r["campaigns"][0];
    let connections: Vec<(String, u64, u64, f64, Value)> = c["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["connection_id"].as_str().unwrap().to_string(),
                k["weight"].as_u64().unwrap(),
                k["dials"].as_u64().unwrap(),
                k["share"].as_f64().unwrap(),
                k["removed_at"].clone(),
            )
        })
        .collect();
    assert_eq!(
        connections,
        [
            (s("conn-a"), 1, 2021, 0.8707, Value::Null),
            (
                s("conn-b"),
                3,
                300,
                0.1293,
                Value::from("2026-03-02T09:17:00.000Z")
            ),
        ]
    );
    let shares: f64 = connections.iter().map(|k| k.3).sum();
    assert!((shares - 1.0).abs() < 1e-9, "shares add up to 1: {shares}");
    assert_eq!(
        connections.iter().map(|k| k.2).sum::<u64>(),
        attempts(c),
        "every dial is on a connection"
    );
    assert_eq!(c["connections"][1]["numbers"][0]["dials"], 300);
    assert_eq!(attempts(c), 2321);
    assert_eq!(windows(c), [(s("02T09:00"), s("02T09:40"), 2321)]);
    assert_eq!(
        r["chart"]["windows"],
        serde_json::json!([["2026-03-02T09:00:00.000Z", "2026-03-02T09:40:00.000Z"]])
    );
    let rate = &check(&r, "dial_rate", 0)["evidence"]["observed"];
    assert_eq!(rate["open_seconds"], 2400, "none after the cancel: {rate}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("<th>Removed</th>")
            && html.contains("<td>by a patch at 2026-03-02T09:17:00.000Z</td>"),
        "the connections table says which was removed and when"
    );
}

/// Cohort rows counted exactly (a quoted line break and a blank line are not rows); the
/// histogram of attempts per user counts every user of the uploads, those a stop file
/// excluded too, and says so; `clear` sends `inbound_config: null`.
#[test]
fn users_are_counted_exactly_and_a_patch_clears_a_field() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in("report_users_and_clear.toml", dir.path());
    let cohorts: Vec<&str> = r["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "cohort")
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert_eq!(cohorts.len(), 3, "{cohorts:?}");
    for (detail, rows) in cohorts.iter().zip(["5 rows)", "1 row)", "2 rows)"]) {
        assert!(detail.contains(&format!(", {rows}")), "{detail}");
        assert!(!detail.contains("about"), "{detail}");
    }
    let histogram = check(&r, "attempts_per_user", 0);
    assert_eq!(
        histogram["evidence"]["observed"],
        serde_json::json!({
            "0 attempts": "1 user",
            "1 attempt": "2 users",
            "2 attempts": "2 users",
            "users": "5 (users_total 2, users_excluded 3)"
        })
    );
    assert!(
        histogram["expected"]
            .as_str()
            .unwrap()
            .contains("every user of its uploads, those excluded by a stop file too"),
        "{histogram}"
    );
    let timeline = serde_json::to_string(&r["timeline"]).unwrap();
    assert!(
        timeline.contains(r#"deployment patched: {\"inbound_config\":null}"#),
        "{timeline}"
    );
}

/// Runs a file of `tests/scenarios` with its reports in `dir`; it must pass.
fn run_in(name: &str, dir: &std::path::Path) -> Value {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    let (code, text) = crate::run::harness_run(&file, dir);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}
