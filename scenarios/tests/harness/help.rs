//! Every command's `--help` ends with examples.

use std::process::Command;

#[test]
fn every_command_help_has_examples() {
    let commands: &[&[&str]] = &[
        &[],
        &["up"],
        &["run"],
        &["scenario"],
        &["scenario", "schema"],
        &["scenario", "check"],
        &["check"],
        &["check", "byok"],
        &["check", "platform"],
        &["verify"],
    ];
    for args in commands {
        let out = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(*args)
            .arg("--help")
            .output()
            .expect("harness runs");
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let examples = text
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("harness {args:?} --help has no Examples section:\n{text}"));
        assert!(
            examples.contains("harness ") || examples.contains("platform "),
            "harness {args:?}: the examples are commands: {examples}"
        );
    }
    // The top-level list of subcommands is complete here.
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in ["up", "run", "scenario", "check", "verify"] {
        assert!(text.contains(&format!("\n  {sub} ")), "{sub} in {text}");
    }
}
