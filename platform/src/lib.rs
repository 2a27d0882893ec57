//! The platform's side of the interface: the HTTP API (outbound calls, campaigns, cohorts,
//! deployments) over a SQLite store, with customer data encrypted at rest, and the engine
//! that dials campaigns, answers inbound calls and delivers webhooks.
//!
//! - [`app`]: the shared state of a running platform.
//! - [`config`]: configuration and API keys.
//! - [`api`]: warp routes, one module per resource.
//! - [`service`]: what each operation does, apart from HTTP.
//! - [`store`]: SQLite, migrations, rows of each resource.
//! - [`crypto`]: data keys, sealed blobs, keyed lookup hashes, the key ring.
//! - [`byok`]: the client of the customer's key service (BYOK), behind the key ring.
//! - [`cohort_processing`]: the background worker that turns uploaded CSV files into users.
//! - [`lifecycle`]: the campaign life cycle as one function of the clock.
//! - [`stats`]: campaign statistics.
//! - [`engine`]: what moves in time: dialling, retries, windows, inbound calls, webhook
//!   delivery; stepped by a real-time driver or on the simulated clock.
//! - [`webhooks`]: webhook signing, verification and backoff.
//! - [`error`]: every failure and its answer.
//! - [`server`]: serving the routes on a listener, with graceful shutdown.
//! - [`intercept`]: what every request to the interface passes through: the fault rules
//!   and the request journal.
//! - [`journal`]: the request journal, the contract's verdict per request, API coverage.
//! - [`faults`]: the platform's failures on demand.
//! - [`fixtures`]: campaigns, deployments and cohorts created at start with fixed ids.
//! - [`connection`]: HTTP/1.1 connections: limits, timeouts, refusals in the error shape.

pub mod api;
pub mod app;
pub mod byok;
pub mod cohort_processing;
pub mod config;
pub mod connection;
pub mod crypto;
pub mod engine;
pub mod error;
pub mod faults;
pub mod fixtures;
pub mod intercept;
pub mod journal;
pub mod lifecycle;
pub mod server;
pub mod service;
pub mod stats;
pub mod store;
pub mod webhooks;

pub use app::App;
