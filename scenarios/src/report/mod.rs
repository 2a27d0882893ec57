//! Renderers of a [`CheckReport`]: a terminal table ([`table`]), JSON and JUnit XML
//! ([`junit`]). Every command that judges writes through these, so its outputs look alike.

pub mod html;
pub mod junit;
pub mod scenario;
pub mod svg;
pub mod table;

use std::path::Path;

use anyhow::{Context, Result};

use crate::checks::CheckReport;

/// The JSON form of a report: `{suite, target, checks: [{id, group, description, severity,
/// result, evidence, expected}], summary}`, pretty-printed, fields in a stable order.
pub fn to_json(report: &CheckReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("a report is plain data");
    s.push('\n');
    s
}

/// Writes `text` to `path`, creating its directory, naming the file on failure.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes the report as JSON and as JUnit XML where asked (`--json FILE`, `--junit FILE`).
pub fn write_outputs(
    report: &CheckReport,
    json: Option<&Path>,
    junit: Option<&Path>,
) -> Result<()> {
    if let Some(p) = json {
        write_file(p, &to_json(report))?;
    }
    if let Some(p) = junit {
        write_file(p, &junit::render(report))?;
    }
    Ok(())
}
