//! The harness: the front door of the project, the `harness` command.
//!
//! A user of the crate (the `harness` binary, the tests, the benchmarks) touches the public
//! modules below; the modules not public inside them are internal.
//!
//! - [`checks`]: one model for every verdict (scenario expectations, the BYOK check, the
//!   platform check, CI verification).
//! - [`report`]: that model rendered as a terminal table, JSON and JUnit XML.
//! - [`differ`]: one answer of a target against the reference's answers to the same
//!   request, value by value (the platform check's oracle).
//! - [`stack`]: the whole stack in one process (key service, platform, telephony, BYOK
//!   wired), for `harness up` and the scenario runner.
//! - [`up`]: `harness up`, the whole stack on localhost.
//! - [`runner`]: `harness run`, scenario files played on a simulated clock.
//! - [`scenario`]: `harness scenario schema|check`, the scenario file format.
//! - [`verify`]: `harness verify`, the verdict on a client from a running mock's journal.
//! - `checks::byok`, `checks::platform`: `harness check byok|platform`.
//! - [`ping`]: `harness ping`, a health check that needs no shell or curl (the container
//!   image's `HEALTHCHECK`).
//! - `init_logging` (internal): the command's logs.

#![warn(missing_docs)]
// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]
// Module docs map the modules inside the crate too, which the public docs do not show;
// CI also builds the docs with the private items, where every such link is checked.
#![allow(rustdoc::private_intra_doc_links)]

pub mod checks;
pub mod differ;
pub mod ping;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod stack;
pub mod up;
pub mod verify;

/// Logs to standard error, filtered by `RUST_LOG` (else `default_filter`), with colour
/// only when standard error is a terminal, without the noise of a connection cancelled by a
/// graceful shutdown (see [`contracts::logging`]).
pub(crate) fn init_logging(default_filter: &str) {
    contracts::logging::init(default_filter);
}

/// Writes `contents` to `path` through a temporary file in the same directory, synced, then
/// renamed over `path`: a reader sees the whole file or none (ready files, remembered seeds,
/// reports).
pub(crate) fn write_atomically(path: &std::path::Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".harness-")
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
