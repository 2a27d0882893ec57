//! One model for every verdict the harness gives.
//!
//! Everything that judges (scenario expectations, `harness check byok`, `harness check
//! platform`, `harness verify`) produces [`Check`] values, collects them in a
//! [`CheckReport`], and hands that to the renderers of [`crate::report`]: a terminal table,
//! JSON and JUnit XML. A JUnit file therefore looks the same whichever command wrote it.
//! The model lives in `contracts::report`, shared with the platform's binary; it is
//! re-exported here.
//!
//! A check has a stable [`Check::id`] (`auth.token_type`), a [`Check::group`] (`auth`), a
//! one-line description, a [`Severity`] and an [`Outcome`], with the [`Evidence`] it was
//! judged on and, when it fails, what the contract expects. [`redact`] keeps secrets out of
//! a report before it is rendered.

pub mod byok;
pub mod platform;

pub use contracts::report::checks::*;
pub use contracts::report::redact;
