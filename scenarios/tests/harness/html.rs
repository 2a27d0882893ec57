//! `report.html` in a real browser: headless Chromium loads the pages of four runs (faults and
//! steps; a pause, a resume and a cancel with most of the run idle after; inbound calls only;
//! patches whose bodies make long words in the timeline) with a probe script added, and the probe asserts in the browser what a person relies
//! on: every mark of the chart has its label as text, no two labels run into each other, no
//! text leaves the chart, nothing overflows the viewport (wide and narrow), the time ticks are
//! round, a bucket's hover names its time and counts, the expectations say what was observed
//! in words. Chromium is found as `$HARNESS_CHROMIUM`, else `chromium`, `chromium-browser` or
//! `google-chrome` on the PATH. Without it the test is skipped with a loud message, unless
//! `HARNESS_REQUIRE_CHROMIUM=1` (as `.ci/run` sets), which makes it fail.
//!
//! Also: the page of the largest chart the runner draws stays far under 2 MB.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

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

/// The probe: what it finds goes into `<pre id="probe">` as JSON.
const PROBE: &str = r#"<script>
(() => {
  const out = {};
  const vw = document.documentElement.clientWidth;
  out.viewport = vw;
  out.scroll_width = document.documentElement.scrollWidth;
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.getAttribute('class') ? '.' + e.getAttribute('class') : '');
  out.overflowing = [...document.body.querySelectorAll('*')]
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > vw + 0.5 || r.left < -0.5); })
    .map(name).slice(0, 10);
  const svg = document.getElementById('dials-chart');
  const sb = svg.getBoundingClientRect();
  const inside = r => r.left >= sb.left - 0.5 && r.right <= sb.right + 0.5 && r.top >= sb.top - 0.5 && r.bottom <= sb.bottom + 0.5;
  out.texts_outside = [...svg.querySelectorAll('text')].filter(t => !inside(t.getBoundingClientRect())).map(t => t.textContent);
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const labels = [...svg.querySelectorAll('text.mark-label')];
  out.marks = svg.querySelectorAll('line.mark').length;
  out.labels = labels.map(t => t.textContent);
  out.label_numbers = labels.map(t => t.getAttribute('data-n'));
  out.label_links = labels.map(t => t.parentElement.getAttribute('href'));
  out.label_overlaps = [];
  labels.forEach((a, i) => labels.slice(i + 1).forEach(b => {
    if (overlap(a.getBoundingClientRect(), b.getBoundingClientRect())) out.label_overlaps.push([a.textContent, b.textContent]);
  }));
  const step = Number(svg.getAttribute('data-tick-secs'));
  const ticks = [...svg.querySelectorAll('text.tick')];
  out.tick_step = step;
  out.ticks = ticks.map(t => t.textContent);
  out.ticks_not_round = ticks.filter(t => (Date.parse(t.getAttribute('data-t')) / 1000) % Math.min(step, 86400) !== 0).map(t => t.getAttribute('data-t'));
  out.tick_overlaps = ticks.filter((t, i) => i > 0 && overlap(ticks[i - 1].getBoundingClientRect(), t.getBoundingClientRect())).length;
  out.caption = (svg.querySelector('text.caption') || {}).textContent || '';
  out.bucket_titles = [...svg.querySelectorAll('rect.bucket > title')].map(t => t.textContent).slice(0, 3);
  out.buckets = svg.querySelectorAll('rect.bucket').length;
  out.series = [...svg.querySelectorAll('path.series')].map(p => p.getAttribute('class'));
  out.faults = svg.querySelectorAll('rect.fault').length;
  out.windows = svg.querySelectorAll('rect.window').length;
  out.observed = [...document.querySelectorAll('#expectations td.observed')].map(td => td.textContent);
  out.timeline_rows = [...document.querySelectorAll('#timeline tr[id]')].map(r => r.id);
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

/// Loads `page` with the probe at `width` pixels and answers what it found.
fn probe(browser: &Path, page: &Path, width: u32) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let probed = page.with_file_name(format!("probed-{width}.html"));
    std::fs::write(&probed, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let out = headless(
        browser,
        &[
            "--dump-dom",
            "--virtual-time-budget=5000",
            &format!("--window-size={width},900"),
        ],
        &probed,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + "<pre id=\"probe\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

/// What every page must hold, at every width.
fn holds_everywhere(name: &str, p: &Value, timeline_rows: usize) {
    let at = format!("{name} at {} px", p["viewport"]);
    assert_eq!(p["overflowing"], serde_json::json!([]), "{at}: {p}");
    assert!(
        p["scroll_width"].as_f64() <= p["viewport"].as_f64(),
        "{at}: the page scrolls sideways: {p}"
    );
    assert_eq!(p["texts_outside"], serde_json::json!([]), "{at}: {p}");
    // Every mark line has its label, the numbers of its timeline rows as text.
    let labels = strings(&p["labels"]);
    assert_eq!(
        labels.len() as u64,
        p["marks"].as_u64().unwrap(),
        "{at}: {p}"
    );
    assert!(!labels.is_empty(), "{at}: {p}");
    for (label, n) in labels.iter().zip(strings(&p["label_numbers"])) {
        assert!(
            label.starts_with(&n) && !n.is_empty(),
            "{at}: {label:?} {n:?}"
        );
    }
    for link in strings(&p["label_links"]) {
        let row = link.trim_start_matches('#').to_string();
        assert!(
            strings(&p["timeline_rows"]).contains(&row),
            "{at}: the label links to a timeline row: {link}"
        );
    }
    assert_eq!(strings(&p["timeline_rows"]).len(), timeline_rows, "{at}");
    assert_eq!(p["label_overlaps"], serde_json::json!([]), "{at}: {p}");
    // Round ticks, at most eight, apart.
    let ticks = strings(&p["ticks"]);
    assert!(!ticks.is_empty() && ticks.len() <= 8, "{at}: {ticks:?}");
    assert_eq!(p["ticks_not_round"], serde_json::json!([]), "{at}: {p}");
    assert_eq!(p["tick_overlaps"], 0, "{at}: {p}");
    // A bucket's hover: its time and counts.
    assert!(p["buckets"].as_u64().unwrap() > 0, "{at}");
    for t in strings(&p["bucket_titles"]) {
        assert!(
            t.contains(" UTC: ") && (t.contains(" dials (") || t.contains(" inbound calls (")),
            "{at}: {t}"
        );
    }
    // What was observed, in words.
    for o in strings(&p["observed"]) {
        assert!(!o.trim_start().starts_with('{'), "{at}: raw JSON: {o}");
        assert!(!o.contains("\"observed\""), "{at}: raw JSON: {o}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_reads_at_a_glance_in_chromium() {
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "examples/key_service_outage.toml",
        "examples/pause_resume_cancel.toml",
        "examples/inbound.toml",
        // A patch's body in the timeline: a long text without spaces.
        "tests/scenarios/steps_rules_cohorts.toml",
    ] {
        let name = file.rsplit('/').next().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let report = scenarios::runner::run_file(&root.join(file), None)
            .await
            .unwrap();
        scenarios::runner::write_reports(&report, dir.path()).unwrap();
        let page = dir.path().join("report.html");
        let wide = probe(&browser, &page, 1200);
        let narrow = probe(&browser, &page, 640);
        for p in [&wide, &narrow] {
            holds_everywhere(name, p, report.timeline.len());
        }
        let series = strings(&wide["series"]).join(" ");
        let labels = strings(&wide["labels"]).join(" | ");
        match name {
            "key_service_outage.toml" => {
                assert!(
                    wide["faults"].as_u64() >= Some(2),
                    "outage and latency shaded: {wide}"
                );
                assert!(wide["windows"].as_u64() >= Some(1), "{wide}");
                assert!(series.contains("series-connected"), "{series}");
                assert!(labels.contains("c: active"), "{labels}");
                assert!(labels.contains("key service: outage"), "{labels}");
            }
            "pause_resume_cancel.toml" => {
                // Cancelled at 11:00 of a two-day run: the chart stops soon after and says
                // where the run ends.
                let caption = wide["caption"].as_str().unwrap();
                assert!(caption.contains("to Mon 2 Mar 11:"), "{caption}");
                assert!(
                    caption.contains("the run goes on to Wed 4 Mar 09:00"),
                    "{caption}"
                );
                assert_eq!(wide["tick_step"], 1800, "{wide}");
                assert!(labels.contains("c: paused"), "{labels}");
                assert!(labels.contains("c: cancelled"), "{labels}");
            }
            "steps_rules_cohorts.toml" => {
                // The campaign's patch at 08:50 shares the line of its start at 09:00 (5-6),
                // the deployment's patch the line of a call 10 minutes before (9-10).
                assert!(labels.contains("5\u{2013}6 c: active"), "{labels}");
                assert!(labels.contains("9\u{2013}10 "), "{labels}");
            }
            _ => {
                // Inbound calls only: charted, not an empty chart.
                assert!(series.contains("series-inbound_answered"), "{series}");
                assert!(series.contains("series-inbound_not_answered"), "{series}");
                assert!(labels.contains("ada: answered"), "{labels}");
                assert!(labels.contains("desk: deployment deleted"), "{labels}");
            }
        }
        if name == "key_service_outage.toml" {
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
            assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000);
            if let Some(keep) = std::env::var_os("HARNESS_KEEP_SCREENSHOT") {
                std::fs::copy(&png, keep).unwrap();
            }
        }
    }
}

#[test]
fn the_largest_chart_keeps_the_page_under_2_mb() {
    use scenarios::report::scenario::{Chart, Mark, ScenarioReport, TimelineEntry};
    let series: Vec<String> = scenarios::runner::observe::series_names();
    let k = series.len() as u64;
    let buckets: Vec<Vec<u64>> = (0..scenarios::runner::observe::MAX_BUCKETS as u64)
        .map(|i| {
            std::iter::once(i)
                .chain((0..k).map(|j| 1000 + i * k + j))
                .collect()
        })
        .collect();
    let entries: Vec<TimelineEntry> = (0..200)
        .map(|i| TimelineEntry {
            at: format!("2026-03-{:02}T10:00:00.000Z", 2 + i % 28),
            kind: "status".into(),
            subject: "c".into(),
            detail: "active -> paused".into(),
        })
        .collect();
    let marks: Vec<Mark> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| Mark {
            n: i + 1,
            at: e.at.clone(),
            kind: e.kind.clone(),
            subject: e.subject.clone(),
            detail: e.detail.clone(),
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
        timeline: entries,
        campaigns: vec![],
        cohorts: vec![],
        inbound_calls: vec![],
        key_service: vec![],
        webhooks: vec![],
        telephony_rules: vec![],
        chart: Chart {
            from: "2026-03-02T08:00:00.000Z".into(),
            until: "2026-04-01T09:00:00.000Z".into(),
            run_until: "2026-04-01T09:00:00.000Z".into(),
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
            faults: vec![],
            marks,
        },
        expectations: scenarios::checks::CheckReport::new("big", "big.toml", vec![]),
    };
    let html = scenarios::report::html::render(&report);
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    assert_eq!(
        html.matches("<path class=\"series").count(),
        9,
        "one path per series"
    );
}
