//! The contract of the voice-agent calling platform, shared by every crate of the harness.
//!
//! - [`clock`]: the injected [`clock::Clock`], a system clock and a simulated one.
//! - [`domain`]: calling windows and E.164 phone numbers, parsed and always valid.
//! - [`ids`]: ids that are deterministic under a seed.
//! - [`envelope`]: the `byok:v1:` envelope, a data key wrapped under a master key
//!   (layout, wrap, parse, unwrap).
//! - [`error`]: the three error shapes, and the collector validation fills.
//! - [`wire`]: serde types of every request, response and event.
//! - [`model`]: validated domain types of campaigns, deployments, outbound calls, cohorts.
//! - [`validate`]: every rule and limit, checked all at once with exact `loc` paths.
//! - [`openapi`]: the OpenAPI 3.1 documents generated from the wire types.
//! - [`operations`]: the interface's operations read from that document, and the
//!   resolution of a request to one of them.
//! - [`net`]: addresses as users are given them (loopback for `0.0.0.0`, IPv6 in brackets).
//! - [`spelling`]: how far apart two spellings are, for the "did you mean" of file keys and
//!   request fields.
//! - [`report`]: the one model of every verdict of the harness (checks) and its renderers
//!   (a terminal table, JSON, JUnit XML), shared by the `harness` command and the platform.
//! - `shutdown` (feature `shutdown`): the stop signal (Ctrl-C or SIGTERM) of the
//!   long-running commands.
//!
//! These modules are what a user of the crate may touch. Inside [`wire`], the module of each
//! resource is internal: [`wire`] itself re-exports its types.
//!
//! `contracts` depends on no web framework: the platform, the key-service simulator, the
//! scenarios and any client can use it.

#![warn(missing_docs)]
// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]
// Module docs map the modules inside the crate too, which the public docs do not show;
// CI also builds the docs with the private items, where every such link is checked.
#![allow(rustdoc::private_intra_doc_links)]

pub mod clock;
#[cfg(clock_lint_probe)]
pub mod clock_lint_probe;
pub mod domain;
pub mod envelope;
pub mod error;
pub mod ids;
#[cfg(feature = "logging")]
pub mod logging;
pub mod model;
pub mod net;
pub mod openapi;
pub mod operations;
pub mod report;
#[cfg(feature = "shutdown")]
pub mod shutdown;
pub mod spelling;
pub mod validate;
pub mod wire;
