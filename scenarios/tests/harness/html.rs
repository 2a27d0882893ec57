//! `report.html` in a real browser: headless Chromium loads the page, and the chart's
//! elements (calling windows, bars by result, marks) are in the DOM it built; a screenshot
//! is taken. Chromium is found as `$HARNESS_CHROMIUM`, else `chromium`, `chromium-browser`
//! or `google-chrome` on the PATH. Without it the test is skipped with a loud message,
//! unless `HARNESS_REQUIRE_CHROMIUM=1` (as `.ci/run` sets), which makes it fail.
//!
//! Also: the page of the largest chart the runner draws stays far under 2 MB.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HARNESS_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn headless(browser: &Path, args: &[&str], page: &Path) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_renders_in_chromium_with_its_chart() {
    let Some(browser) = chromium() else {
        let required = std::env::var("HARNESS_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "HARNESS_REQUIRE_CHROMIUM=1 but no chromium was found: install Debian's chromium package (bash .ci/install-chromium.sh) or set HARNESS_CHROMIUM"
        );
        eprintln!(
            "\n\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             SKIPPED: the HTML report was NOT checked in a browser: no chromium found.\n\
             Install it (bash .ci/install-chromium.sh) or set HARNESS_CHROMIUM=/path/to/chromium.\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/key_service_outage.toml");
    let report = scenarios::runner::run_file(&file, None).await.unwrap();
    scenarios::runner::write_reports(&report, dir.path()).unwrap();
    let page = dir.path().join("report.html");

    let dom = headless(
        &browser,
        &["--dump-dom", "--virtual-time-budget=2000"],
        &page,
    );
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<svg id=\"dials-chart\""),
        "the chart is in the page"
    );
    for needle in [
        "class=\"window\"",
        "class=\"series series-connected\"",
        "class=\"series series-no_answer\"",
        "class=\"mark mark-fault\"",
        "class=\"mark mark-status\"",
        "id=\"expectations\"",
        "id=\"key-service\"",
        "id=\"verdict\" class=\"verdict pass\"",
    ] {
        assert!(
            dom.contains(needle),
            "{needle} missing from the rendered DOM"
        );
    }

    let png = dir.path().join("report.png");
    let shot = headless(
        &browser,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,1400",
        ],
        &page,
    );
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).expect("a screenshot was written");
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
    assert!(
        bytes.len() > 10_000,
        "a screenshot with content ({} bytes)",
        bytes.len()
    );
    if let Some(keep) = std::env::var_os("HARNESS_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

#[test]
fn the_largest_chart_keeps_the_page_under_2_mb() {
    use scenarios::report::scenario::{ChartReport, ScenarioReport, TimelineEntry};
    let series: Vec<String> = scenarios::runner::judge::result_names();
    let buckets: Vec<Vec<u64>> = (0..scenarios::runner::observe::MAX_BUCKETS as u64)
        .map(|i| {
            std::iter::once(i)
                .chain((0..7).map(|k| 1000 + i * 7 + k))
                .collect()
        })
        .collect();
    let marks: Vec<TimelineEntry> = (0..200)
        .map(|i| TimelineEntry {
            at: format!("2026-03-{:02}T10:00:00.000Z", 2 + i % 28),
            kind: "status".into(),
            subject: "c".into(),
            detail: "active -> paused".into(),
        })
        .collect();
    let report = ScenarioReport {
        scenario: "big".into(),
        file: "big.toml".into(),
        description: None,
        seed: 1,
        start: "2026-03-02T08:00:00.000Z".into(),
        until: "2026-04-01T09:00:00.000Z".into(),
        passed: true,
        timeline: marks.clone(),
        campaigns: vec![],
        cohorts: vec![],
        inbound_calls: vec![],
        key_service: vec![],
        webhooks: vec![],
        telephony_rules: vec![],
        chart: ChartReport {
            from: "2026-03-02T08:00:00.000Z".into(),
            bucket_secs: 3600,
            series,
            buckets,
            windows: (2..31)
                .map(|d| {
                    [
                        format!("2026-03-{d:02}T09:00:00.000Z"),
                        format!("2026-03-{d:02}T17:00:00.000Z"),
                    ]
                })
                .collect(),
            marks,
        },
        expectations: scenarios::checks::CheckReport::new("big", "big.toml", vec![]),
    };
    let html = scenarios::report::html::render(&report);
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    assert_eq!(
        html.matches("<path class=\"series").count(),
        7,
        "one path per result"
    );
}
