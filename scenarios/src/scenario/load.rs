//! Reading a scenario file: TOML into the types of this module, then every rule the types
//! cannot say (references between sections, times, the API's own validation of the requests
//! inside: [`super::check`]), each refusal with its line and column. Never a panic: every
//! input is either a [`Loaded`] scenario or a [`ScenarioError`] listing what is wrong and
//! where.

use std::fmt::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};

use super::check::{Checker, Problem};
use super::located::line_col;
use super::model::Scenario;
use super::time::At;
use super::timeline::Action;

/// A scenario file that cannot run: every problem found, with its place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ScenarioError {
    /// The file as named on the command line.
    pub(crate) file: String,
    /// The problems, in file order.
    pub problems: Vec<Problem>,
    /// The file's lines, for the excerpts.
    lines: Vec<String>,
}

impl ScenarioError {
    fn render(&self) -> String {
        let mut out = String::new();
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(out, "{}:{}:{}: {}", self.file, p.line, p.col, p.message);
            if let Some(text) = self.lines.get(p.line - 1) {
                let gutter = p.line.to_string().len();
                let _ = writeln!(out, "{:gutter$} |", "");
                let _ = writeln!(out, "{} | {}", p.line, text);
                let _ = writeln!(
                    out,
                    "{:gutter$} | {}^",
                    "",
                    " ".repeat(p.col.saturating_sub(1))
                );
            }
        }
        let n = self.problems.len();
        let _ = write!(
            out,
            "{}: {n} problem{}",
            self.file,
            if n == 1 { "" } else { "s" }
        );
        out
    }
}

/// A scenario that passed every check, with its times resolved.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub(crate) scenario: Scenario,
    /// The file as reports name it ([`report_path`]), the same on every machine.
    pub(crate) file: String,
    /// The directory CSV files are read from.
    pub(crate) dir: PathBuf,
    /// The file's text.
    pub(crate) text: String,
    /// The name in reports.
    pub(crate) name: String,
    /// The simulated start.
    pub(crate) start: DateTime<Utc>,
    /// The simulated end of the run.
    pub(crate) until: DateTime<Utc>,
}

impl Loaded {
    /// `file:line` of a span, for check locations.
    pub(crate) fn location(&self, span: &Range<usize>) -> String {
        format!("{}:{}", self.file, line_col(&self.text, span.start).0)
    }

    /// A time of the file as an instant.
    pub(crate) fn at(&self, at: At) -> DateTime<Utc> {
        at.resolve(self.start)
    }
}

/// Reads and checks a scenario file.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError::Read {
        file: path.display().to_string(),
        message: e.to_string(),
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = path
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    let mut loaded =
        load_str(&text, &path.display().to_string(), &dir, &name).map_err(LoadError::Invalid)?;
    loaded.file = report_path(path);
    Ok(loaded)
}

/// How reports name a scenario file, so that the same file gives the same `report.json`
/// however it was named and wherever it is run: its path relative to the current directory
/// (with `/`) when it is under it, else its file name alone.
pub(crate) fn report_path(path: &Path) -> String {
    let name = || {
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let (Ok(abs), Ok(cwd)) = (
        std::fs::canonicalize(path),
        std::env::current_dir().and_then(std::fs::canonicalize),
    ) else {
        return name();
    };
    match abs.strip_prefix(&cwd) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => name(),
    }
}

/// Why a file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {file}: {message}")]
    Read {
        /// The file.
        file: String,
        /// The operating system's reason.
        message: String,
    },
    /// The file is not a valid scenario.
    #[error(transparent)]
    Invalid(#[from] ScenarioError),
}

/// Checks a scenario's text; `file` names it in messages, `dir` is where its CSV files are,
/// `default_name` its name when it has none.
pub fn load_str(
    text: &str,
    file: &str,
    dir: &Path,
    default_name: &str,
) -> Result<Loaded, ScenarioError> {
    let fail = |problems: Vec<Problem>| ScenarioError {
        file: file.to_string(),
        problems,
        lines: text.lines().map(str::to_string).collect(),
    };
    let scenario: Scenario = toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        fail(vec![Problem {
            line,
            col,
            message: tidy_toml_message(e.message()),
        }])
    })?;
    let mut v = Checker::new(text, dir);
    let start = match scenario.start.value {
        At::Absolute(t) => t,
        At::AfterStart(_) => {
            v.at(
                &scenario.start.span,
                "start must be an RFC 3339 instant, such as \"2026-03-02T08:00:00Z\"".into(),
            );
            DateTime::<Utc>::UNIX_EPOCH
        }
    };
    v.check(&scenario, start);
    let until = scenario
        .until
        .as_ref()
        .map(|u| u.resolve(start))
        .unwrap_or_else(|| default_until(&scenario, start));
    if let Some(u) = &scenario.until
        && until <= start
    {
        v.at(
            &u.span,
            format!("until ({}) must be after the start", u.value),
        );
    }
    if !v.problems.is_empty() {
        v.problems.sort_by_key(|p| (p.line, p.col));
        v.problems.dedup();
        return Err(fail(v.problems));
    }
    Ok(Loaded {
        name: scenario
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        scenario,
        file: file.to_string(),
        dir: dir.to_path_buf(),
        text: text.to_string(),
        start,
        until,
    })
}

/// toml's messages end with a newline and sometimes name internal types; an unknown field
/// or value gets the one meant, when one is near.
fn tidy_toml_message(m: &str) -> String {
    let m = m
        .trim()
        .replace("`$__toml_private_datetime`", "a date-time");
    if m == "missing field `start`" {
        return format!(
            "{m}: add start = \"2026-03-02T08:00:00Z\" (where the simulated clock starts)"
        );
    }
    match meant(&m) {
        Some(w) => format!("{m}; did you mean `{w}`?"),
        None => m,
    }
}

/// In "unknown field `x`, expected one of `a`, `b`" (or a variant, or "expected `a` or
/// `b`"), the expected name nearest to `x`.
fn meant(m: &str) -> Option<String> {
    let rest = m
        .strip_prefix("unknown field `")
        .or_else(|| m.strip_prefix("unknown variant `"))?;
    let (word, expected) = rest.split_once('`')?;
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    super::locate::near(word, names).map(str::to_string)
}

/// One hour after the latest time the file names.
fn default_until(s: &Scenario, start: DateTime<Utc>) -> DateTime<Utc> {
    let mut latest = start;
    let mut see = |a: At| latest = latest.max(a.resolve(start));
    for c in &s.campaigns {
        see(c.end);
    }
    for st in &s.timeline {
        see(st.at);
        if let Action::KeyServiceOutage { duration, .. } = &st.action {
            see(At::Absolute(st.at.resolve(start) + duration.0));
        }
    }
    for e in &s.expect {
        if let Some(a) = e.at {
            see(a);
        }
    }
    for f in &s.key_service.faults {
        for a in [f.from, f.until].into_iter().flatten() {
            see(a);
        }
    }
    latest + Duration::hours(1)
}
