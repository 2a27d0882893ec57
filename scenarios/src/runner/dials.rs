//! `harness run --dials FILE`: every dial of the scenario's campaigns, one row each, as CSV
//! (`.csv`) or JSON Lines (`.jsonl`, `.ndjson`), written as the runner takes the dials in
//! (nothing is kept in memory), so that a user can check what the report does not summarise.
//!
//! Columns, in this order: `campaign` (the scenario's key), `at` (RFC 3339 UTC),
//! `local_time` (the same instant in the campaign's calling-window time zone, with its
//! offset), `attempt_id`, `user_phone_number`, `agent_phone_number`, `connection_id`,
//! `result` (as the campaign statistics name it), `duration` (talk seconds, empty when the
//! call was not answered), `attempt` (1 for a user's first dial, 2 for the first retry, ...).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};

/// The header of the CSV form, and the fields of each JSON line.
pub(crate) const COLUMNS: [&str; 10] = [
    "campaign",
    "at",
    "local_time",
    "attempt_id",
    "user_phone_number",
    "agent_phone_number",
    "connection_id",
    "result",
    "duration",
    "attempt",
];

/// How the file is written, by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `.csv`: a header row, then one row per dial.
    Csv,
    /// `.jsonl` or `.ndjson`: one JSON object per line.
    JsonLines,
}

impl Format {
    /// The format a file name asks for.
    pub(crate) fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Ok(Format::Csv),
            Some(e) if e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson") => {
                Ok(Format::JsonLines)
            }
            _ => bail!(
                "--dials {}: name the file .csv (CSV) or .jsonl (JSON Lines)",
                path.display()
            ),
        }
    }
}

/// The file of one scenario when several run: `dials.csv` for `lifecycle` becomes
/// `dials.lifecycle.csv` (the name of its report directory).
pub(crate) fn path_for(path: &Path, name: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    path.with_file_name(format!("{stem}.{name}{ext}"))
}

/// One dial, as written.
pub(crate) struct Row<'a> {
    /// The campaign's key.
    pub(crate) campaign: &'a str,
    /// When it was placed.
    pub(crate) at: DateTime<Utc>,
    /// The same instant in the campaign's time zone (RFC 3339 with its offset).
    pub(crate) local_time: &'a str,
    /// The attempt's id.
    pub(crate) attempt_id: &'a str,
    /// The number called.
    pub(crate) user_phone_number: &'a str,
    /// The number it left from.
    pub(crate) agent_phone_number: &'a str,
    /// Its connection.
    pub(crate) connection_id: &'a str,
    /// Its result.
    pub(crate) result: &'a str,
    /// Talk time, when answered.
    pub(crate) talk_ms: Option<i64>,
    /// 0 for the first dial.
    pub(crate) attempt_index: u32,
}

/// The open file.
pub(crate) struct DialExport {
    out: BufWriter<File>,
    format: Format,
    path: PathBuf,
}

impl std::fmt::Debug for DialExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialExport")
            .field("path", &self.path)
            .field("format", &self.format)
            .finish()
    }
}

impl DialExport {
    /// Creates (or empties) the file and writes the CSV header.
    pub(crate) fn create(path: &Path) -> Result<DialExport> {
        let format = Format::of(path)?;
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut x = DialExport {
            out: BufWriter::with_capacity(256 * 1024, file),
            format,
            path: path.to_path_buf(),
        };
        if format == Format::Csv {
            writeln!(x.out, "{}", COLUMNS.join(","))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(x)
    }

    /// Writes one dial.
    pub(crate) fn write(&mut self, r: &Row<'_>) -> Result<()> {
        let at = contracts::clock::format_instant(r.at);
        let local = r.local_time;
        let duration = r.talk_ms.filter(|ms| *ms > 0).map(|ms| ms as f64 / 1000.0);
        let attempt = u64::from(r.attempt_index) + 1;
        let written = match self.format {
            Format::Csv => {
                let duration = duration.map_or_else(String::new, |d| d.to_string());
                let fields = [
                    r.campaign,
                    &at,
                    local,
                    r.attempt_id,
                    r.user_phone_number,
                    r.agent_phone_number,
                    r.connection_id,
                    r.result,
                    &duration,
                    &attempt.to_string(),
                ];
                let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                writeln!(self.out, "{}", line.join(","))
            }
            Format::JsonLines => {
                let v = serde_json::json!({
                    "campaign": r.campaign,
                    "at": at,
                    "local_time": local,
                    "attempt_id": r.attempt_id,
                    "user_phone_number": r.user_phone_number,
                    "agent_phone_number": r.agent_phone_number,
                    "connection_id": r.connection_id,
                    "result": r.result,
                    "duration": duration,
                    "attempt": attempt,
                });
                writeln!(self.out, "{v}")
            }
        };
        written.with_context(|| format!("writing {}", self.path.display()))
    }

    /// Writes what is buffered.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }
}

/// A CSV field, quoted when it must be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(Format::of(Path::new("d.csv")).unwrap(), Format::Csv);
        assert_eq!(Format::of(Path::new("d.JSONL")).unwrap(), Format::JsonLines);
        assert_eq!(
            Format::of(Path::new("d.ndjson")).unwrap(),
            Format::JsonLines
        );
        let e = Format::of(Path::new("d.txt")).unwrap_err().to_string();
        assert!(e.contains(".csv (CSV) or .jsonl"), "{e}");
        assert_eq!(
            path_for(Path::new("out/dials.csv"), "lifecycle-2"),
            Path::new("out/dials.lifecycle-2.csv")
        );
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
