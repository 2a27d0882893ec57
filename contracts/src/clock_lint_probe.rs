//! Compiled only with `--cfg clock_lint_probe`, which `.ci/run` passes to prove that the
//! workspace lints refuse a read of the wall clock outside `clock.rs`: clippy must reject
//! this module.

/// A stray read of the wall clock.
pub(crate) fn stray_read() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}
