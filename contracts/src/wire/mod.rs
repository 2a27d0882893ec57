//! Serde types of every request, response and event of the interface, field names and enum
//! values exactly as on the wire.

pub mod byok;
