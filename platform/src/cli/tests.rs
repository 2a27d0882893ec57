//! Every setting of `platform serve` reaches the configuration, from its flag and its
//! environment variable, and the README's tables name exactly the flags and variables the
//! command has.

use std::collections::BTreeSet;

use clap::FromArgMatches;

use super::{Cli, Command, ServeArgs, command};
use crate::config::PlatformConfig;

/// A value of each configuration flag that differs from its default (`None`: a switch).
const SETTINGS: &[(&str, Option<&str>)] = &[
    ("listen", Some("127.0.0.1:9999")),
    ("database", Some(":memory:")),
    (
        "local-key",
        Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
    ),
    ("api-key", Some("org-1/ws-1=sk-1:ci")),
    ("max-upload-bytes", Some("7")),
    ("max-body-bytes", Some("7")),
    ("strict", None),
    ("public-url", Some("https://mock.example.com")),
    ("seed", Some("7")),
    ("clock", Some("simulated")),
    ("sim-start", Some("2026-03-02T12:00:00Z")),
    ("webhook-secret", Some("whsec_7")),
    (
        "deployment-webhook",
        Some("org-1/ws-1=https://hooks.example.com/in"),
    ),
    ("telephony-seed", Some("7")),
    ("clock-admin-key", Some("sk-clock")),
    ("journal-admin-key", Some("sk-ops")),
    ("header-read-timeout-ms", Some("7")),
    ("body-read-timeout-ms", Some("7")),
    ("body-min-bytes-per-sec", Some("7")),
    ("max-connections", Some("7")),
    ("journal-capacity", Some("7")),
    ("journal-persist", None),
];

/// The flags of `serve` that are not the configuration's: the file, what it does beside
/// serving, and BYOK for one workspace (its own type, `ByokSettings`, tested with it).
const OTHERS: &[&str] = &[
    "config",
    "fixtures",
    "report-on-exit",
    "report-exit-status",
    "ready-file",
];

fn serve_command() -> clap::Command {
    command()
        .find_subcommand("serve")
        .expect("a serve subcommand")
        .clone()
}

/// The configuration `platform serve` makes of `flags` over `file`.
fn config_of(file: &PlatformConfig, flags: &[&str]) -> PlatformConfig {
    let matches = command()
        .try_get_matches_from(["platform", "serve"].iter().chain(flags))
        .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
    let serve = matches.subcommand_matches("serve").unwrap();
    let mut config = file.clone();
    config.update_from_arg_matches(serve).unwrap();
    config
}

fn debug(c: &PlatformConfig) -> String {
    format!("{c:?}")
}

#[test]
fn every_flag_reaches_the_configuration_and_a_setting_not_given_leaves_the_files() {
    let command = serve_command();
    let flags: BTreeSet<String> = command
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .filter(|l| l != "help" && !l.starts_with("byok-"))
        .collect();
    let listed: BTreeSet<String> = SETTINGS
        .iter()
        .map(|(f, _)| f.to_string())
        .chain(OTHERS.iter().map(|f| f.to_string()))
        .collect();
    assert_eq!(flags, listed, "every flag of serve has a sample here");

    let defaults = PlatformConfig::default();
    for (flag, value) in SETTINGS {
        let mut args = vec![format!("--{flag}")];
        args.extend(value.map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let given = config_of(&defaults, &args);
        assert_ne!(
            debug(&given),
            debug(&defaults),
            "--{flag} does not reach the configuration"
        );
        // The same setting in the file, and no flag: the file's value stands.
        assert_eq!(
            debug(&config_of(&given, &[])),
            debug(&given),
            "without --{flag}, the file's value of it is replaced"
        );
    }
}

#[test]
fn the_other_flags_reach_what_serve_does() {
    let matches = command()
        .try_get_matches_from([
            "platform",
            "serve",
            "--config",
            "p.toml",
            "--fixtures",
            "f.toml",
            "--report-on-exit",
            "out",
            "--report-exit-status",
            "verdict",
            "--ready-file",
            "ready.json",
            "--byok-workspace",
            "org-1/ws-1",
            "--byok-base-url",
            "http://127.0.0.1:9",
            "--byok-partner",
            "acme",
            "--byok-client-id",
            "platform",
            "--byok-client-secret",
            "s3cret",
            "--byok-key-alias",
            "tenant-a",
            "--byok-encrypted-key",
            "byok:v1:AAAA",
        ])
        .unwrap();
    let Cli {
        command: Command::Serve(mut args),
    } = Cli::from_arg_matches(&matches).unwrap();
    let extras = args.extras();
    assert_eq!(args.config.as_deref(), Some(std::path::Path::new("p.toml")));
    assert_eq!(
        format!("{extras:?}"),
        "Extras { fixtures: Some(\"f.toml\"), report_on_exit: Some(\"out\"), report_exit_status: Verdict, ready_file: Some(\"ready.json\") }"
    );
    let ServeArgs { byok, .. } = args;
    let mut entries = Vec::new();
    byok.apply(&mut entries).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].partner, "acme");
}

/// The environment variable of a flag: `PLATFORM_` and the flag in capitals, in the plural
/// for a flag that may be repeated (the variable then takes a list).
fn expected_env(arg: &clap::Arg) -> String {
    let long = arg.get_long().unwrap();
    let mut name = format!("PLATFORM_{}", long.replace('-', "_").to_uppercase());
    if arg.get_value_delimiter().is_some() {
        name.push('S');
    }
    name
}

#[test]
fn every_flag_has_its_environment_variable_and_the_readme_lists_both() {
    let readme = include_str!("../../../docs/guide/platform-configuration.md");
    // The README's table rows: a column of flags beside a column of the same number of
    // `PLATFORM_` variables, paired in the order they are written.
    let mut documented = BTreeSet::new();
    let words = |cell: &str, prefix: &str| -> Vec<String> {
        cell.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .filter(|w| w.starts_with(prefix) && !w.ends_with(['-', '_']))
            .map(str::to_string)
            .collect()
    };
    for line in readme.lines().filter(|l| l.starts_with("| ")) {
        // `a\|b` is a `|` inside a cell.
        let line = line.replace("\\|", "/");
        let cells: Vec<&str> = line.split('|').collect();
        for pair in cells.windows(2) {
            let (flags, envs) = (words(pair[0], "--"), words(pair[1], "PLATFORM_"));
            if !flags.is_empty() && flags.len() == envs.len() {
                documented.extend(flags.into_iter().zip(envs));
            }
        }
    }
    let command = serve_command();
    let mut declared = BTreeSet::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long().filter(|l| *l != "help") else {
            continue;
        };
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("--{long} has no environment variable"))
            .to_string_lossy()
            .to_string();
        assert_eq!(env, expected_env(arg), "--{long}");
        declared.insert((format!("--{long}"), env));
    }
    let missing: Vec<_> = declared.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "not in the README's tables: {missing:?}"
    );
    let stale: Vec<_> = documented
        .iter()
        .filter(|(f, e)| {
            e.starts_with("PLATFORM_") && !declared.iter().any(|(g, d)| g == f || d == e)
        })
        .collect();
    assert!(
        stale.is_empty(),
        "in the README, not in the command: {stale:?}"
    );
}
