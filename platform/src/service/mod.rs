//! What the API does, apart from HTTP: each function checks a request, changes the store
//! and answers wire types. Handlers in [`crate::api`] only convert.
//!
//! - [`outbound`]: instant outbound calls.
//! - [`campaigns`]: create, list, get, patch, status.
//! - [`deployments`]: create, list, get, patch, status, delete; [`deployment_lists`]: the
//!   list served from memory.
//! - [`cohorts`]: upload, stream, list, get, files.
//! - [`sim`]: the simulation API: the clock, inbound calls by hand, what the engine recorded.
//! - [`admin`]: a workspace's data keys: list, rotate.
//! - [`live`]: what the live page (`/ui`) reads that no other route gives.

pub(crate) mod admin;
pub mod campaigns;
pub mod cohorts;
pub(crate) mod deployment_lists;
pub(crate) mod deployments;
pub(crate) mod live;
pub(crate) mod outbound;
pub(crate) mod sim;

use crate::error::ApiError;

/// A 409 for a state that does not allow the action.
pub(crate) fn conflict(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Conflict {
        code,
        message: message.into(),
    }
}
