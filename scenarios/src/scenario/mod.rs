//! The scenario file format and `harness scenario schema|check`.
//!
//! A scenario file is TOML (documented field by field in `scenarios/README.md`):
//! - [`model`]: the file's top level, the key service and the telephony sections;
//! - [`setup`]: campaigns, cohorts and deployments created through the API;
//! - [`timeline`]: actions at simulated times;
//! - [`expect`]: what must hold;
//! - [`kms`]: the key service's faults, their kinds and the endpoints they cover;
//! - [`time`]: times (absolute or `+duration`) and durations;
//! - [`located`]: values with their place in the file;
//! - [`locate`]: the place of a field inside a table kept as JSON, and near names;
//! - [`load`]: reading a file and every check beyond its types, with lines and columns
//!   (`check.rs`: references, times, settings; `api.rs`: the API's validation of the
//!   requests inside, at the field's line; `states.rs`: what the platform would refuse of
//!   the timeline, from the statuses the steps lead to; [`meetable`]: expectations that
//!   cannot be met by construction).
//!
//! The JSON Schema (`harness scenario schema`) is generated from these types.

mod api;
pub(crate) mod check;
pub(crate) mod expect;
pub(crate) mod kms;
pub(crate) mod load;
pub(crate) mod locate;
pub(crate) mod located;
pub(crate) mod meetable;
pub(crate) mod model;
pub(crate) mod setup;
mod states;
pub(crate) mod time;
pub(crate) mod timeline;

use std::path::PathBuf;
use std::process::ExitCode;

pub use load::{Loaded, ScenarioError, load_file, load_str};
pub use model::Scenario;

/// `harness scenario` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ScenarioCommand {
    /// Print the JSON Schema of scenario files (for editors: completion and checking).
    ///
    /// Examples:
    ///   harness scenario schema > scenario.schema.json
    #[command(verbatim_doc_comment)]
    Schema,
    /// Check scenario files without running them: syntax, references between sections,
    /// times, and the API's validation of every request inside. Exit status 0 when every
    /// file is valid, 1 when one has problems (each printed with its line and column), 2
    /// when a file cannot be read.
    ///
    /// Examples:
    ///   harness scenario check scenarios/examples/*.toml
    ///   harness scenario check my-scenario.toml && harness run my-scenario.toml
    #[command(verbatim_doc_comment)]
    Check {
        /// The scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// The JSON Schema of the scenario format, pretty-printed.
pub fn schema_json() -> String {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(Scenario)).expect("a schema is plain JSON");
    for def in ["Step", "Expectation"] {
        close_tagged(&mut schema["$defs"][def]);
    }
    let mut s = serde_json::to_string_pretty(&schema).expect("a schema is plain JSON");
    s.push('\n');
    s
}

/// A `[[timeline]]` step or an `[[expect]]` entry is a few common fields (`at`, `name`)
/// flattened beside one variant of a tagged enum (`do`, `check`): the generated schema lists
/// the common fields outside a `oneOf` of the variants, and refuses no unknown field. Each
/// variant gets the common fields and `additionalProperties: false` (every JSON Schema
/// draft, so every editor, reads it), as the loader refuses unknown fields.
fn close_tagged(def: &mut serde_json::Value) {
    let common = def["properties"].as_object().cloned().unwrap_or_default();
    let Some(variants) = def["oneOf"].as_array_mut() else {
        return;
    };
    for v in variants {
        if let Some(props) = v["properties"].as_object_mut() {
            for (k, s) in &common {
                props.entry(k.clone()).or_insert_with(|| s.clone());
            }
            v["additionalProperties"] = serde_json::Value::Bool(false);
        }
    }
}

/// Runs a `harness scenario` subcommand.
pub async fn run(command: ScenarioCommand) -> anyhow::Result<ExitCode> {
    match command {
        ScenarioCommand::Schema => {
            print!("{}", schema_json());
            Ok(ExitCode::SUCCESS)
        }
        ScenarioCommand::Check { files } => {
            let mut bad = false;
            for f in &files {
                match load_file(f) {
                    Ok(l) => {
                        let s = &l.scenario;
                        println!(
                            "{}: ok ({} campaign{}, {} cohort{}, {} deployment{}, {} step{}, {} expectation{})",
                            f.display(),
                            s.campaigns.len(),
                            plural(s.campaigns.len()),
                            s.cohorts.len(),
                            plural(s.cohorts.len()),
                            s.deployments.len(),
                            plural(s.deployments.len()),
                            s.timeline.len(),
                            plural(s.timeline.len()),
                            s.expect.len(),
                            plural(s.expect.len()),
                        );
                    }
                    Err(load::LoadError::Invalid(e)) => {
                        bad = true;
                        eprintln!("{e}");
                    }
                    Err(e @ load::LoadError::Read { .. }) => return Err(e.into()),
                }
            }
            Ok(if bad {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// `s` unless one.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
