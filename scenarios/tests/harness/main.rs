//! The `harness` command's tests: one binary, a module per command.

mod blind;
mod byok;
mod features;
mod guide;
mod help;
mod html;
mod platform_check;
mod run;
mod scenario_check;
mod scenario_fuzz;
mod verify;
