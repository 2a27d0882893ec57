//! The one model of every verdict of the harness ([`checks`]) and its renderers: a
//! terminal table ([`table`]), JSON ([`to_json`]) and JUnit XML ([`junit`]). Every command
//! that judges writes through these, so its outputs look alike. [`redact`] keeps secrets
//! out of a report before it is rendered. [`chart`] draws dials over time as SVG: the
//! scenario report's chart and the live page's campaign chart, one drawing for both.
//!
//! It lives in `contracts` so that both the `harness` command (`scenarios`) and the
//! platform's own binary (`platform serve --report-on-exit`, the live page at `/ui`) write
//! the same reports and draw the same charts.

pub mod chart;
pub mod checks;
pub mod junit;
pub mod redact;
pub mod table;

use std::path::{Path, PathBuf};

pub use checks::*;

/// A report file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}; check that the directory exists or can be created and is writable", path.display())]
pub struct WriteError {
    /// The file (or the directory made for it) that failed.
    pub(crate) path: PathBuf,
    /// Why.
    #[source]
    pub(crate) source: std::io::Error,
}

/// The JSON form of a report: `{suite, target, checks: [{id, group, description, severity,
/// result, evidence, expected}], summary}`, pretty-printed, fields in a stable order.
pub fn to_json(report: &CheckReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report is plain data");
    s.push('\n');
    s
}

/// Writes `text` to `path`, creating its directory, naming the file on failure.
pub fn write_file(path: &Path, text: &str) -> Result<(), WriteError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| WriteError {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| WriteError {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes the report as JSON and as JUnit XML where asked (`--json FILE`, `--junit FILE`).
pub fn write_outputs(
    report: &CheckReport,
    json: Option<&Path>,
    junit: Option<&Path>,
) -> Result<(), WriteError> {
    if let Some(p) = json {
        write_file(p, &to_json(report))?;
    }
    if let Some(p) = junit {
        write_file(p, &junit::render(report))?;
    }
    Ok(())
}

/// The files [`write_dir`] writes, in a directory.
pub(crate) const DIR_FILES: [&str; 3] = ["report.json", "junit.xml", "report.txt"];

/// Writes the report into `dir` (created when missing) as `report.json`, `junit.xml` and
/// `report.txt` (the text of `harness verify`, failures first, without colour): what
/// `--report-on-exit DIR` leaves for a CI job to archive. Answers the paths written.
pub fn write_dir(report: &CheckReport, dir: &Path) -> Result<Vec<PathBuf>, WriteError> {
    let [json, junit, text] = DIR_FILES.map(|f| dir.join(f));
    write_file(&json, &to_json(report))?;
    write_file(&junit, &junit::render(report))?;
    write_file(
        &text,
        &table::render_failures_first(report, table::Colour::Never, false),
    )?;
    Ok(vec![json, junit, text])
}

#[cfg(test)]
mod tests {
    use super::checks::{Check, CheckDef, Evidence};
    use super::*;

    #[test]
    fn a_directory_gets_the_three_forms() {
        const A: CheckDef = CheckDef::error("deployments.list_deployments", "called, kept");
        const F: CheckDef = CheckDef::error("routes.unknown", "known routes only");
        let report = CheckReport::new(
            "verify",
            "http://x",
            vec![
                Check::pass(&A, Evidence::new()),
                Check::fail(&F, Evidence::new(), "none"),
            ],
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("nested/report");
        let written = write_dir(&report, &out).unwrap();
        assert_eq!(written.len(), 3);
        let back: CheckReport =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(back, report);
        assert!(
            std::fs::read_to_string(out.join("junit.xml"))
                .unwrap()
                .contains("<testcase ")
        );
        let text = std::fs::read_to_string(out.join("report.txt")).unwrap();
        assert!(
            text.contains("FAIL  routes.unknown") && !text.contains("PASS"),
            "{text}"
        );
    }

    #[test]
    fn a_file_that_cannot_be_written_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let err = write_file(&blocker.join("report.json"), "{}").unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&blocker.display().to_string()), "{text}");
        assert!(text.contains("writable"), "{text}");
    }
}
