//! Tests of the `harness` command, a module per command.

mod html;
mod run;
mod scenario_check;
mod scenario_fuzz;
