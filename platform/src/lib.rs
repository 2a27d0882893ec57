//! The platform's side of the interface: the HTTP API (outbound calls, campaigns, cohorts,
//! deployments), its SQLite store, the campaign engine, inbound routing, webhooks, and the
//! BYOK client that keeps customer data under the customer's key.
