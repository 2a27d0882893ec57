//! The customer's side of BYOK: a simulated key service with `/auth`, `/decrypt-key` and
//! `/rotate-key`, master keys per alias with versions, JWTs, faults on demand and an audit log.
