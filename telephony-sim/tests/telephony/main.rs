//! Integration tests of `telephony-sim`: one binary, a module per concern.

mod determinism;
mod inbound;
mod journal;
mod magic;
mod model_stats;
mod model_validation;
mod rules;
mod support;
