//! Renderers of a [`CheckReport`](crate::checks::CheckReport): a terminal table
//! ([`table`]), JSON and JUnit XML ([`junit`]). They live in `contracts::report`, shared
//! with the platform's binary; this module keeps their paths in the harness.

pub mod html;
pub mod scenario;
pub mod svg;

pub use contracts::report::{
    WriteError, junit, table, to_json, write_dir, write_file, write_outputs,
};
