//! The last run's report, kept for `--list-rules`: each run of `harness check platform`
//! writes its JSON report (the same as `--json`) to `--last-run FILE`, by default
//! `$XDG_STATE_HOME/harness/check-platform-last.json` (`~/.local/state/...` without
//! `XDG_STATE_HOME`); `--list-rules` reads it to show each rule's status on that run.

use std::path::{Path, PathBuf};

use crate::checks::CheckReport;
use crate::report;

/// The file's name under the state directory.
const FILE: &str = "harness/check-platform-last.json";

/// The default place of the last run's report, when a state directory can be named.
pub(crate) fn default_path() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join(FILE))
}

/// `--last-run`, or the default.
pub(crate) fn path(given: Option<&Path>) -> Option<PathBuf> {
    given.map(Path::to_path_buf).or_else(default_path)
}

/// Records `r` as the last run.
pub(crate) fn write(path: &Path, r: &CheckReport) -> Result<(), report::WriteError> {
    report::write_file(path, &report::to_json(r))
}

/// The last run's report, when one was recorded and reads.
pub(crate) fn read(path: &Path) -> Option<CheckReport> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}
