//! The contract, rule by rule, and the checks that prove each over HTTP: every rule of the
//! interface spec (`spec.rs`) and every row of the rule, limit and state tables of
//! `docs/interface.md` (`record.rs`, the sections of [`RECORD_SECTIONS`]), each mapped to the
//! check ids that prove it, or to why no check can ([`Why`]).
//!
//! The table is the suite's plan: a rule with neither checks nor a reason fails the build,
//! and so does a check that proves no rule. It is rendered into `docs/interface.md`
//! ([`markdown`]) and printed by `harness check platform --list-rules` with each rule's
//! status on the last run ([`listing`]).

mod record;
mod spec;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::GROUPS;
use crate::checks::{CheckReport, Outcome, Severity};

/// The sections of `docs/interface.md` whose table rows are rules, limits or states of the
/// interface (the rest record the harness's own tools: the journal, faults, the OpenAPI
/// documents, ids, statistics, the simulation API, webhook delivery, durability, BYOK).
#[cfg(any(test, doc))]
pub(crate) const RECORD_SECTIONS: &[&str] = &[
    "The spec's numbered open points",
    "Fields the spec marks \"not shown\"",
    "Cohorts",
    "Time, calling windows, numbers",
    "Validation and errors",
    "Events",
    "Dialling",
    "Outcomes and retries",
    "Campaign life cycle in time",
    "Stop files",
    "Inbound calls",
];

/// Where a rule comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A section of the interface spec.
    Spec(&'static str),
    /// A table row of `docs/interface.md`: its section and its point.
    Record(&'static str, &'static str),
}

/// Why no check proves a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// Nothing a client sees over HTTP shows it.
    NotObservable,
    /// How this mock answers where the interface leaves the answer open: a target may
    /// answer otherwise and keep the contract, so it is not asked of one.
    OwnChoice,
    /// Another command of the harness judges it (`harness check byok`).
    OtherCommand,
}

impl Why {
    /// The reason's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Why::NotObservable => "not observable over HTTP",
            Why::OwnChoice => "not a rule a target must follow",
            Why::OtherCommand => "judged by another command",
        }
    }
}

/// What proves a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// These checks (an id, or `group.*` for every check of a group).
    Checks(&'static [&'static str]),
    /// None, and why.
    Unchecked(Why, &'static str),
}

/// One rule of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    /// Where it comes from.
    pub(crate) source: Source,
    /// The rule (for a recorded point: the point, as the document names it).
    pub(crate) rule: &'static str,
    /// What proves it.
    pub(crate) proof: Proof,
}

impl Rule {
    const fn spec(
        section: &'static str,
        rule: &'static str,
        checks: &'static [&'static str],
    ) -> Rule {
        Rule {
            source: Source::Spec(section),
            rule,
            proof: Proof::Checks(checks),
        }
    }

    const fn none(section: &'static str, rule: &'static str, why: Why, text: &'static str) -> Rule {
        Rule {
            source: Source::Spec(section),
            rule,
            proof: Proof::Unchecked(why, text),
        }
    }

    const fn record(
        section: &'static str,
        point: &'static str,
        checks: &'static [&'static str],
    ) -> Rule {
        Rule {
            source: Source::Record(section, point),
            rule: point,
            proof: Proof::Checks(checks),
        }
    }

    const fn none_record(
        section: &'static str,
        point: &'static str,
        why: Why,
        text: &'static str,
    ) -> Rule {
        Rule {
            source: Source::Record(section, point),
            rule: point,
            proof: Proof::Unchecked(why, text),
        }
    }

    /// `spec: Limits` or `interface.md: Cohorts`.
    pub(crate) fn source_text(&self) -> String {
        match self.source {
            Source::Spec(s) => format!("spec: {s}"),
            Source::Record(s, _) => format!("interface.md: {s}"),
        }
    }

    /// The check ids that prove it, `group.*` expanded; unknown ids are kept as written
    /// (a test refuses them).
    pub(crate) fn check_ids(&self) -> Vec<&'static str> {
        let Proof::Checks(ids) = self.proof else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for id in ids {
            match id.strip_suffix(".*") {
                Some(group) => out.extend(
                    GROUPS
                        .iter()
                        .filter(|g| g.name == group)
                        .flat_map(|g| g.checks)
                        .map(|d| d.id),
                ),
                None => out.push(*id),
            }
        }
        out
    }
}

/// Every rule: the spec's, then the recorded points'.
pub(crate) fn all() -> Vec<Rule> {
    spec::SPEC.iter().chain(record::RECORD).copied().collect()
}

/// `a`, `b` as code spans; `group.*` kept short.
fn ids_text(rule: &Rule) -> String {
    match rule.proof {
        Proof::Checks(ids) => ids
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", "),
        Proof::Unchecked(why, text) => format!("none: {} ({text})", why.as_str()),
    }
}

/// The table as Markdown, as `docs/interface.md` carries it.
#[cfg(any(test, doc))]
pub(crate) fn markdown() -> String {
    let mut out = String::from("| Source | Rule | Checked by |\n|---|---|---|\n");
    for r in all() {
        let rule = r.rule.replace('|', "\\|");
        let _ = writeln!(
            out,
            "| {} | {rule} | {} |",
            r.source_text(),
            ids_text(&r).replace('|', "\\|")
        );
    }
    out
}

/// A rule's status on a run: what its checks found.
pub(crate) fn status(rule: &Rule, report: Option<&CheckReport>) -> String {
    let ids = rule.check_ids();
    if ids.is_empty() {
        return "none".into();
    }
    let Some(report) = report else {
        return "not run".into();
    };
    let found: Vec<_> = report
        .checks
        .iter()
        .filter(|c| ids.contains(&c.id.as_str()))
        .collect();
    if found.is_empty() {
        return "not run".into();
    }
    let count = |o: Outcome| found.iter().filter(|c| c.result == o).count();
    let failed_errors = found
        .iter()
        .filter(|c| c.result == Outcome::Fail && c.severity == Severity::Error)
        .count();
    let (pass, fail, skip) = (
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::Skip),
    );
    let not_run = ids.len() - found.len();
    if failed_errors > 0 {
        format!("FAIL ({failed_errors} of {})", ids.len())
    } else if fail > 0 {
        format!("WARN ({fail} of {})", ids.len())
    } else if skip + not_run == 0 {
        "pass".into()
    } else if pass == 0 {
        "skipped".into()
    } else {
        format!("partly ({pass} of {} passed, the rest not run)", ids.len())
    }
}

/// `--list-rules`: every rule with its checks and its status on `report` (the last run).
pub(crate) fn listing(report: Option<&CheckReport>, from: &str) -> String {
    let mut out = String::new();
    match report {
        Some(r) => {
            let _ = writeln!(
                out,
                "Rules of the contract and the checks that prove them; status on the last run ({}: {}, {})\n",
                from,
                r.target,
                r.summary.line()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "Rules of the contract and the checks that prove them; no last run ({from} not found: run `harness check platform` first)\n"
            );
        }
    }
    let rules = all();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut source = String::new();
    for r in &rules {
        let s = r.source_text();
        if s != source {
            let _ = writeln!(out, "{s}");
            source = s;
        }
        let st = status(r, report);
        let key = st.split(" (").next().unwrap_or_default().to_string();
        *counts.entry(key).or_default() += 1;
        let _ = writeln!(out, "  [{st}] {}", r.rule);
        let _ = writeln!(out, "      {}", ids_text(r).replace('`', ""));
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let _ = writeln!(out, "\n{} rules: {}", rules.len(), summary.join(", "));
    out
}

/// The table with statuses as JSON (`--list-rules --json FILE`).
pub(crate) fn to_json(report: Option<&CheckReport>) -> Value {
    let rules: Vec<Value> = all()
        .iter()
        .map(|r| {
            let (source, section, point) = match r.source {
                Source::Spec(s) => ("spec", s, None),
                Source::Record(s, p) => ("interface.md", s, Some(p)),
            };
            let mut v = json!({
                "source": source,
                "section": section,
                "rule": r.rule,
                "checks": r.check_ids(),
                "status": status(r, report),
            });
            if let Some(p) = point {
                v["point"] = json!(p);
            }
            if let Proof::Unchecked(why, text) = r.proof {
                v["unchecked"] = json!({"why": why.as_str(), "detail": text});
            }
            v
        })
        .collect();
    json!({"rules": rules, "last_run": report.map(|r| r.target.clone())})
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Where the table is rendered in `docs/interface.md`.
    const BEGIN: &str = "<!-- rules table: begin (generated from scenarios/src/checks/platform/rules; HARNESS_UPDATE_DOCS=1 cargo test -p scenarios --lib rules rewrites it) -->\n";
    const END: &str = "<!-- rules table: end -->";

    fn docs_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/interface.md")
    }

    fn all_check_ids() -> BTreeSet<&'static str> {
        GROUPS.iter().flat_map(|g| g.checks).map(|d| d.id).collect()
    }

    #[test]
    fn every_rule_has_checks_that_exist_or_a_reason() {
        let known = all_check_ids();
        for r in all() {
            match r.proof {
                Proof::Checks(ids) => {
                    assert!(
                        !ids.is_empty(),
                        "{}: {} has no check",
                        r.source_text(),
                        r.rule
                    );
                    for id in r.check_ids() {
                        assert!(known.contains(id), "{}: unknown check {id}", r.rule);
                    }
                    for id in ids.iter().filter(|i| i.ends_with(".*")) {
                        assert!(!r.check_ids().is_empty(), "{}: no group {id}", r.rule);
                    }
                }
                Proof::Unchecked(_, text) => {
                    assert!(!text.trim().is_empty(), "{}: a reason, please", r.rule)
                }
            }
        }
    }

    #[test]
    fn every_check_proves_a_rule() {
        let proving: BTreeSet<&str> = all().iter().flat_map(|r| r.check_ids()).collect();
        let idle: Vec<&str> = all_check_ids()
            .into_iter()
            .filter(|id| !proving.contains(id))
            .collect();
        assert!(
            idle.is_empty(),
            "checks that prove no rule of the table: {idle:?}"
        );
    }

    /// The first cell (the second in the numbered open points) of every table row of the
    /// sections in [`RECORD_SECTIONS`].
    fn recorded_rows(doc: &str) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        let mut section = String::new();
        let mut line_in_table = 0;
        for line in doc.lines() {
            if let Some(h) = line
                .strip_prefix("### ")
                .or_else(|| line.strip_prefix("## "))
            {
                section = h.trim().to_string();
                line_in_table = 0;
                continue;
            }
            if !line.starts_with('|') {
                line_in_table = 0;
                continue;
            }
            line_in_table += 1;
            if line_in_table <= 2 || !RECORD_SECTIONS.contains(&section.as_str()) {
                continue;
            }
            let cells: Vec<&str> = split_cells(line);
            let at = usize::from(section == RECORD_SECTIONS[0]);
            rows.push((section.clone(), cells[at].to_string()));
        }
        rows
    }

    /// A table row's cells, `\|` kept inside a cell.
    fn split_cells(line: &str) -> Vec<&str> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        let mut cells = Vec::new();
        let mut start = 0;
        let bytes = inner.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
                cells.push(inner[start..i].trim());
                start = i + 1;
            }
        }
        cells.push(inner[start..].trim());
        cells
    }

    #[test]
    fn every_recorded_rule_limit_and_state_row_is_in_the_table() {
        let doc = std::fs::read_to_string(docs_path()).unwrap();
        let rows: BTreeSet<(String, String)> = recorded_rows(&doc).into_iter().collect();
        assert!(
            rows.len() > 50,
            "the document's tables were not found: {rows:?}"
        );
        let table: BTreeSet<(String, String)> = all()
            .iter()
            .filter_map(|r| match r.source {
                Source::Record(s, p) => Some((s.to_string(), p.to_string())),
                Source::Spec(_) => None,
            })
            .collect();
        let missing: Vec<_> = rows.difference(&table).collect();
        assert!(
            missing.is_empty(),
            "rows of docs/interface.md without a rule in scenarios/src/checks/platform/rules/record.rs (give each the checks that prove it, or why none can): {missing:#?}"
        );
        let stale: Vec<_> = table.difference(&rows).collect();
        assert!(
            stale.is_empty(),
            "rules of record.rs naming no row of docs/interface.md: {stale:#?}"
        );
    }

    #[test]
    fn the_document_carries_the_table_as_rendered() {
        let path = docs_path();
        let doc = std::fs::read_to_string(&path).unwrap();
        let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("docs/interface.md has no rules table between its markers:\n{BEGIN}{END}");
        };
        let want = markdown();
        let have = &doc[a + BEGIN.len()..b];
        if have != want {
            if std::env::var_os("HARNESS_UPDATE_DOCS").is_some() {
                let updated = format!("{}{want}{}", &doc[..a + BEGIN.len()], &doc[b..]);
                std::fs::write(&path, updated).unwrap();
            } else {
                panic!(
                    "docs/interface.md's rules table is out of date: HARNESS_UPDATE_DOCS=1 cargo test -p scenarios --lib rules"
                );
            }
        }
    }

    #[test]
    fn a_rules_status_follows_its_checks_on_the_last_run() {
        use crate::checks::{Check, CheckDef, Evidence};
        let rule = Rule::spec("S", "r", &["a.x", "a.y"]);
        const X: CheckDef = CheckDef::error("a.x", "x");
        const Y: CheckDef = CheckDef::warning("a.y", "y");
        let report = |checks| CheckReport::new("check platform", "http://t", checks);
        assert_eq!(status(&rule, None), "not run");
        let pass = report(vec![
            Check::pass(&X, Evidence::new()),
            Check::pass(&Y, Evidence::new()),
        ]);
        assert_eq!(status(&rule, Some(&pass)), "pass");
        let warn = report(vec![
            Check::pass(&X, Evidence::new()),
            Check::fail(&Y, Evidence::new(), "e"),
        ]);
        assert_eq!(status(&rule, Some(&warn)), "WARN (1 of 2)");
        let fail = report(vec![Check::fail(&X, Evidence::new(), "e")]);
        assert_eq!(status(&rule, Some(&fail)), "FAIL (1 of 2)");
        let part = report(vec![Check::pass(&X, Evidence::new()), Check::skip(&Y, "s")]);
        assert!(status(&rule, Some(&part)).starts_with("partly"));
        let skipped = report(vec![Check::skip(&X, "s")]);
        assert_eq!(status(&rule, Some(&skipped)), "skipped");
        let none = Rule::none("S", "r", Why::OwnChoice, "t");
        assert_eq!(status(&none, Some(&pass)), "none");
        let text = listing(Some(&warn), "last.json");
        assert!(
            text.contains("status on the last run (last.json: http://t"),
            "{text}"
        );
    }
}
