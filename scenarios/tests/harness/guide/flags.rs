//! Each command's flags in the guide are the flags of its `--help` (its clap definition):
//! a flag `--help` lists that the guide's table lacks, or a flag the table names that the
//! command does not have, fails; so does an environment variable `--help` names for a flag
//! that the flag's row does not, and a short flag (`-q`) on the wrong row.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use super::root;

/// A command as typed after `harness`, and the document whose flag tables are its manual.
const COMMANDS: &[(&[&str], &str)] = &[
    (&["up"], "docs/guide/harness-up.md"),
    (&["run"], "docs/guide/scenarios.md"),
    (&["verify"], "docs/guide/journal-and-verify.md"),
    (&["ping"], "docs/guide/containers-and-action.md"),
    (&["check", "byok"], "docs/guide/check-byok.md"),
    (&["check", "platform"], "docs/guide/check-platform.md"),
    (
        &["platform", "serve"],
        "docs/guide/platform-configuration.md",
    ),
    (&["kms", "serve"], "customer-kms-sim/README.md"),
];

/// A flag as `--help` shows it.
#[derive(Debug, Default)]
struct HelpFlag {
    short: Option<String>,
    env: Option<String>,
}

/// The long flags of `harness ARGS --help`, with their short form and environment variable.
fn help_flags(args: &[&str]) -> BTreeMap<String, HelpFlag> {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .arg("--help")
        .output()
        .expect("harness runs");
    assert!(out.status.success(), "harness {args:?} --help");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut flags = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let option = (2..=6).contains(&indent) && trimmed.starts_with('-');
        if option {
            let mut short = None;
            let mut rest = trimmed;
            if let Some(s) = rest.strip_prefix('-').filter(|s| !s.starts_with('-')) {
                short = Some(format!("-{}", &s[..1]));
                rest = s[1..].trim_start_matches(", ");
            }
            current = None;
            if let Some(long) = rest.strip_prefix("--") {
                let name: String = long
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if name != "help" && name != "version" {
                    let flag = flags
                        .entry(format!("--{name}"))
                        .or_insert_with(HelpFlag::default);
                    flag.short = flag.short.take().or(short);
                    current = Some(format!("--{name}"));
                }
            }
        }
        if let (Some(name), Some(i)) = (&current, line.find("[env: ")) {
            let env: String = line[i + 6..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            flags.get_mut(name).unwrap().env = Some(env);
        }
    }
    flags
}

/// A row of a documented flag table: its flags (long and short) and environment variables.
#[derive(Debug)]
struct Row {
    line: usize,
    longs: Vec<String>,
    shorts: Vec<String>,
    envs: Vec<String>,
}

/// The code spans of a table cell.
fn spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The rows of every table of `text` that has a `Flag` column.
fn flag_rows(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut columns: Option<(usize, Vec<usize>)> = None;
    let cells = |l: &str| -> Vec<String> {
        let l = l.replace("\\|", "/");
        let l = l.trim().trim_start_matches('|').trim_end_matches('|');
        l.split('|').map(|c| c.trim().to_string()).collect()
    };
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with('|') {
            columns = None;
            continue;
        }
        let row = cells(line);
        if columns.is_none() {
            if lines
                .get(i + 1)
                .is_some_and(|l| l.starts_with("|--") || l.starts_with("|:-"))
                && let Some(flag) = row.iter().position(|c| c == "Flag")
            {
                let envs = row
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.starts_with("Env"))
                    .map(|(j, _)| j)
                    .collect();
                columns = Some((flag, envs));
            }
            continue;
        }
        if line.starts_with("|--") || line.starts_with("|:-") {
            continue;
        }
        let (flag, envs) = columns.as_ref().unwrap();
        let flag_cell = row.get(*flag).map(String::as_str).unwrap_or_default();
        let mut r = Row {
            line: i + 1,
            longs: Vec::new(),
            shorts: Vec::new(),
            envs: Vec::new(),
        };
        for span in spans(flag_cell) {
            for word in span.split([' ', ',', '/']) {
                if let Some(name) = word.strip_prefix("--") {
                    if !name.is_empty() && !name.ends_with(['-', '.']) {
                        r.longs.push(word.to_string());
                    }
                } else if word.len() == 2 && word.starts_with('-') {
                    r.shorts.push(word.to_string());
                }
            }
        }
        let env_cells = envs.iter().filter_map(|j| row.get(*j)).map(String::as_str);
        for span in std::iter::once(flag_cell).chain(env_cells).flat_map(spans) {
            let word = span.trim_end_matches(['=', ' ']);
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                r.envs.push(word.to_string());
            }
        }
        if !r.longs.is_empty() {
            rows.push(r);
        }
    }
    rows
}

#[test]
fn every_commands_flags_in_the_guide_are_its_help() {
    let mut problems = Vec::new();
    for (args, doc) in COMMANDS {
        let command = format!("harness {}", args.join(" "));
        let help = help_flags(args);
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        let rows = flag_rows(&text);
        assert!(
            !rows.is_empty(),
            "{doc} has no table with a Flag column for {command}"
        );
        let documented: BTreeSet<&str> = rows
            .iter()
            .flat_map(|r| r.longs.iter().map(String::as_str))
            .collect();
        for (flag, h) in &help {
            let Some(row) = rows.iter().find(|r| r.longs.contains(flag)) else {
                problems.push(format!("{doc}: {command} {flag} is not in its flag table"));
                continue;
            };
            if let Some(env) = &h.env
                && !row.envs.contains(env)
            {
                problems.push(format!(
                    "{doc}:{}: {command} {flag} reads {env}, which its row does not name",
                    row.line
                ));
            }
            if let Some(short) = &h.short
                && !row.shorts.contains(short)
            {
                problems.push(format!(
                    "{doc}:{}: {command} {flag} is also {short}, which its row does not name",
                    row.line
                ));
            }
        }
        for flag in documented {
            if !help.contains_key(flag) {
                problems.push(format!(
                    "{doc}: the flag table names {flag}, which {command} does not have"
                ));
            }
        }
        for row in &rows {
            for short in &row.shorts {
                if !row
                    .longs
                    .iter()
                    .any(|l| help.get(l).is_some_and(|h| h.short.as_ref() == Some(short)))
                {
                    problems.push(format!(
                        "{doc}:{}: {short} is not a short form of {:?} in {command}",
                        row.line, row.longs
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check itself: a table that lacks a flag, or names one the command lacks, fails.
#[test]
fn the_flag_check_sees_a_missing_and_a_misnamed_flag() {
    let table = "| Flag | Environment | Meaning |\n|---|---|---|\n\
                 | `--url URL` | `HARNESS_URL` | x |\n| `-v`, `--verbose` | | x |\n\
                 | `--min-coverag PCT` | | x |\n";
    let rows = flag_rows(table);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].envs, ["HARNESS_URL"]);
    assert_eq!(rows[1].shorts, ["-v"]);
    let help = help_flags(&["verify"]);
    assert!(help.contains_key("--min-coverage"));
    assert!(!help.contains_key("--min-coverag"));
    assert_eq!(help["--url"].env.as_deref(), Some("HARNESS_URL"));
    assert_eq!(help["--verbose"].short.as_deref(), Some("-v"));
}
