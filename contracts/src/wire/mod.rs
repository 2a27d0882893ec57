//! Serde types of every request, response and event of the interface, field names and enum
//! values exactly as on the wire.
//!
//! - [`outbound`]: instant outbound calls.
//! - [`campaign`]: campaigns, their schedule, connections, retry policy and statistics.
//! - [`cohort`]: cohorts, transformation configs, streams and files.
//! - [`deployment`]: inbound deployments.
//! - [`webhook`]: the three event payloads.
//! - [`byok`]: the customer-hosted key endpoints.
//! - [`sim`]: the harness's simulation API (clock, inbound calls, deliveries).
//! - [`common`]: the paginated list and shared pieces.
//! - [`admin`]: the harness's admin API of a workspace's data keys.
//! - [`journal`]: the harness's request journal and API coverage.
//! - [`faults`]: the harness's fault rules (the platform's failures on demand).
//! - [`live`]: what the live page (`/ui`) reads that no other route gives.
//!
//! Request types here describe the body for clients and for the OpenAPI documents; the
//! platform checks incoming bodies with `crate::validate`, which reports every violation at
//! once with its `loc`.

pub(crate) mod admin;
pub mod byok;
pub(crate) mod campaign;
pub(crate) mod cohort;
pub(crate) mod common;
pub(crate) mod deployment;
pub(crate) mod faults;
pub(crate) mod journal;
pub mod live;
pub(crate) mod outbound;
pub(crate) mod sim;
pub mod webhook;

pub use admin::*;
pub use campaign::*;
pub use cohort::*;
pub use common::*;
pub use deployment::*;
pub use faults::*;
pub use journal::*;
pub use live::*;
pub use outbound::*;
pub use sim::*;
pub use webhook::*;
