//! Integration tests of the contract: validation boundaries, all-at-once reporting, the
//! OpenAPI documents, property tests over untrusted input.

mod fixtures;
mod fuzz;
mod openapi;
mod openapi_exact;
mod validation;
