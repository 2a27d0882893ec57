//! End-to-end tests across crates, with the programs run as a user runs them.
//!
//! - `harness_up`: `harness up` as a process: port 0, the ready file, `--json`, a BYOK round
//!   trip through the curl commands it prints, a clean stop on SIGTERM and Ctrl-C; fixtures
//!   and the report on exit.
//! - `ci_example`: the README's CI example script against the platform and `harness verify`,
//!   and the GitHub Actions job that uses the actions.
//! - `live_page`: the live page (`/ui`) of `harness up` in Chromium, driven by Playwright
//!   (`tests/browser/`).
//! - `one_executable`: one executable under three names, `harness up --host 0.0.0.0` and
//!   `--public-host`, `harness ping`.

mod ci_example;
mod harness_up;
mod live_page;
mod one_executable;
mod process;
