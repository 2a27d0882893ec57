//! Integration tests of the contract: validation boundaries, all-at-once reporting, the
//! OpenAPI documents.

mod openapi;
mod openapi_exact;
mod validation;
