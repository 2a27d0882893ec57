//! Tests of the `harness` command, a module per command.

mod scenario_check;
mod scenario_fuzz;
