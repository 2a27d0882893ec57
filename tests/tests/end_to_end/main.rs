//! End-to-end tests across crates, with the programs run as a user runs them.
//!
//! - `harness_up`: `harness up` as a process: port 0, the ready file, `--json`, a BYOK round
//!   trip through the curl commands it prints, a clean stop on SIGTERM and Ctrl-C.

mod harness_up;
mod process;
