//! The contract of the voice-agent calling platform, shared by every crate of the harness.
//!
//! - [`clock`]: the injected [`clock::Clock`], a system clock and a simulated one.
//! - [`domain`]: calling windows and E.164 phone numbers, parsed and always valid.
//! - [`ids`]: ids that are deterministic under a seed.
//! - [`error`]: the three error shapes, and the collector validation fills.
//! - [`wire`]: serde types of every request, response and event.
//!
//! `contracts` depends on no web framework: the platform, the key-service simulator, the
//! scenarios and any client can use it.

pub mod clock;
pub mod domain;
pub mod error;
pub mod ids;
pub mod wire;
