//! Integration tests of the platform over real HTTP: every endpoint, error shape, limit,
//! the auth matrix, pagination, and persistence across restarts.

#![allow(dead_code)]

mod binary;
mod byok;
mod cohorts;
mod helpers;
mod http;

mod campaigns;
mod ci;
mod deployments;
mod durability;
mod engine;
mod engine_calls;
mod engine_changes;
mod errors;
mod faults;
mod fuzz;
mod isolation;
mod journal;
mod journal_causes;
mod journal_uploads;
mod live;
mod outbound;
mod routes;
mod verdicts;
mod webhooks;
