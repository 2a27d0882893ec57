//! Renderers of a [`CheckReport`](crate::checks::CheckReport): a terminal table
//! ([`table`]), JSON and JUnit XML ([`junit`]), and the chart of dials over time
//! ([`chart`]). They live in `contracts::report`, shared with the platform's binary (the
//! chart with its live page); this module keeps their paths in the harness. Its own:
//! [`html`] and [`scenario`], the scenario report.

pub mod html;
pub mod scenario;

pub use contracts::report::{
    WriteError, chart, junit, table, to_json, write_dir, write_file, write_outputs,
};
