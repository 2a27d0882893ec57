//! The live page (`/ui`) in a real browser: `harness up` on a simulated clock, the page opened
//! from the link its banner prints, driven by `tests/browser/live_page.mjs` (Playwright from
//! npm over Debian's Chromium; see that file for what it checks). Screenshots go to
//! `target/artifacts/` (or `$HARNESS_ARTIFACTS`), where CI keeps them.
//!
//! It needs node, the test's npm packages (`bash .ci/install-browser-test.sh`) and Chromium
//! (`bash .ci/install-chromium.sh`, or `$HARNESS_CHROMIUM`). Without them it is skipped with
//! a loud message, unless `HARNESS_REQUIRE_CHROMIUM=1` (as `.ci/run` sets), which makes it
//! fail.

use std::path::{Path, PathBuf};

use crate::process::{Running, binary, wait_for_file};

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HARNESS_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser"]
        .into_iter()
        .find_map(on_path)
}

#[test]
fn the_live_page_shows_the_stack_as_it_moves_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let browser_tests = root.join("tests/browser");
    let missing: Vec<String> = [
        on_path("node")
            .is_none()
            .then(|| "node (Debian's nodejs package)".to_string()),
        (!browser_tests.join("node_modules/playwright-core").is_dir())
            .then(|| "the test's npm packages (bash .ci/install-browser-test.sh)".to_string()),
        chromium()
            .is_none()
            .then(|| "chromium (bash .ci/install-chromium.sh, or HARNESS_CHROMIUM)".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !missing.is_empty() {
        let required = std::env::var("HARNESS_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "HARNESS_REQUIRE_CHROMIUM=1 but the live page cannot be checked in a browser; missing: {}",
            missing.join(", ")
        );
        eprintln!(
            "\n\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             SKIPPED: the live page was NOT checked in a browser; missing: {}\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
            missing.join(", ")
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready.json");
    let ready_arg = ready.display().to_string();
    let mut up = Running::start(
        &binary("harness"),
        &[
            "up",
            "--port-base",
            "0",
            "--clock",
            "simulated",
            "--sim-start",
            "2026-03-02T08:00:00Z",
            "--seed",
            "42",
            "--ready-file",
            &ready_arg,
        ],
        &dir.path().join("up.log"),
    );
    let details: serde_json::Value =
        serde_json::from_str(&wait_for_file(&ready, &mut up)).expect("the ready file is JSON");
    let banner = up.lines_until(|l| l.starts_with("Ctrl-C stops everything"));
    // The link as a user copies it from the banner.
    let link = banner
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("live page"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no live page line in the banner: {banner:#?}"))
        .to_string();
    assert_eq!(
        link, details["platform"]["ui_url"],
        "the banner and the ready file agree"
    );
    let artifacts = std::env::var_os("HARNESS_ARTIFACTS")
        .map_or_else(|| root.join("target/artifacts"), PathBuf::from);
    let shots = artifacts.display().to_string();
    let chromium = chromium().unwrap().display().to_string();
    let mut node = Running::start_with(
        &on_path("node").unwrap(),
        &[&browser_tests.join("live_page.mjs").display().to_string()],
        &[
            ("UI_LINK", &link),
            ("SCREENSHOTS", &shots),
            ("HARNESS_CHROMIUM", &chromium),
        ],
        &dir.path().join("node.log"),
    );
    let out = node.rest();
    let status = node.wait();
    assert!(
        status.success(),
        "the live page failed in Chromium ({status}):\n{}\n{}\nharness up:\n{}",
        out.join("\n"),
        node.stderr(),
        up.stderr()
    );
    let png = std::fs::read(artifacts.join("ui.png")).expect("a screenshot in target/artifacts");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a screenshot with content"
    );
    up.signal("TERM");
    assert!(up.wait().success(), "harness up stops cleanly");
}
