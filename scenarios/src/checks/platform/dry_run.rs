//! `--dry-run`: every check that would run, its severity, why any would be skipped, and what
//! each would create in which workspace, without calling the target. The resources come
//! from the groups' `MAKES` tables, which a test holds to what a run creates.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::fixtures::{Makes, Side};
use super::{GROUPS, SUITE, unmet};
use crate::checks::{Check, CheckDef, CheckReport, Evidence, GroupFilter, Severity};

/// What the listing knows of the run: which groups, `--sim`, and the two workspaces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Planned<'a> {
    /// `--only` / `--skip`.
    pub(crate) filter: &'a GroupFilter,
    /// `--sim`.
    pub(crate) sim: bool,
    /// `--workspace`, when given.
    pub(crate) workspace: Option<&'a str>,
    /// Whether another workspace was given (`--other-api-key`).
    pub(crate) other: bool,
    /// `--other-workspace`, when given.
    pub(crate) other_workspace: Option<&'a str>,
}

impl Planned<'_> {
    fn name(&self, side: Side) -> String {
        match side {
            Side::Main => self
                .workspace
                .map_or("the workspace under check".to_string(), str::to_string),
            Side::Other => self
                .other_workspace
                .map_or("the other workspace".to_string(), str::to_string),
        }
    }
}

/// What `def` creates on a conforming target, from its group's table.
pub(crate) fn makes_of(def: &CheckDef) -> &'static [Makes] {
    GROUPS
        .iter()
        .flat_map(|g| g.makes)
        .find(|(d, _)| d.id == def.id)
        .map_or(&[], |(_, m)| m)
}

/// What `def` creates, by workspace: `{"ws-1": ["1 campaign harness-check-{run}-..."]}`.
fn creates(def: &CheckDef, p: &Planned<'_>) -> BTreeMap<String, Vec<String>> {
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in makes_of(def) {
        by.entry(p.name(m.side))
            .or_default()
            .push(m.describe("{run}"));
    }
    by
}

/// The checks that would run, as a report in which every check is skipped with the reason
/// (`dry run: would run` when it would run), with what it would create as its evidence.
pub(crate) fn plan(p: &Planned<'_>, target: &str) -> CheckReport {
    let checks = GROUPS
        .iter()
        .filter(|g| p.filter.runs(g.name))
        .flat_map(|g| g.checks)
        .map(|d| match unmet(d, p.sim, p.other) {
            Some(reason) => Check::skip(d, reason),
            None => {
                let mut c = Check::skip(d, "dry run: would run");
                let by: serde_json::Map<String, Value> = creates(d, p)
                    .into_iter()
                    .map(|(ws, what)| (ws, json!(what)))
                    .collect();
                if !by.is_empty() {
                    c.evidence = Evidence::new().with("creates", Value::Object(by));
                }
                c
            }
        })
        .collect();
    CheckReport::new(SUITE, target, checks)
}

/// The dry-run listing: every group and check, with severity, what would skip it, and what
/// it would create in each workspace.
pub(crate) fn listing(p: &Planned<'_>) -> String {
    let mut out = String::new();
    let width = GROUPS
        .iter()
        .flat_map(|g| g.checks)
        .map(|d| d.id.len())
        .max()
        .unwrap_or(0);
    let mut total = 0;
    for g in GROUPS.iter().filter(|g| p.filter.runs(g.name)) {
        let _ = writeln!(out, "{} ({} checks): {}", g.name, g.checks.len(), g.about);
        for d in g.checks {
            total += 1;
            let severity = match d.severity {
                Severity::Error => "error  ",
                Severity::Warning => "warning",
            };
            let _ = writeln!(out, "  {:<width$}  {severity}  {}", d.id, d.description);
            if let Some(why) = unmet(d, p.sim, p.other) {
                let _ = writeln!(out, "  {:<width$}  skipped: {why}", "");
                continue;
            }
            for (ws, what) in creates(d, p) {
                let _ = writeln!(
                    out,
                    "  {:<width$}  creates in {ws}: {}",
                    "",
                    what.join(", ")
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{total} checks; nothing was called (dry run). Names carry the run's token ({{run}}); everything created is removed at the end of its group."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_names_what_a_check_creates_in_each_workspace() {
        let filter = GroupFilter {
            only: vec!["auth".into()],
            skip: vec![],
        };
        let p = Planned {
            filter: &filter,
            sim: false,
            workspace: Some("ws-1"),
            other: true,
            other_workspace: Some("ws-2"),
        };
        let text = listing(&p);
        assert!(
            text.contains("creates in ws-1: 1 deployment harness-check-{run}-isolation, 1 campaign harness-check-{run}-isolation"),
            "{text}"
        );
        assert!(
            text.contains("creates in ws-2: 1 deployment harness-check-{run}-isolation"),
            "{text}"
        );
        let report = plan(&p, "(dry run)");
        let iso = report
            .checks
            .iter()
            .find(|c| c.id == "auth.list_isolation")
            .unwrap();
        assert_eq!(
            iso.evidence.0["creates"]["ws-2"],
            json!([
                "1 deployment harness-check-{run}-isolation",
                "1 campaign harness-check-{run}-isolation"
            ])
        );
        let without = Planned { other: false, ..p };
        assert!(!listing(&without).contains("creates in ws-2"));
    }
}
