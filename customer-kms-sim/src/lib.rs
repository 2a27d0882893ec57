//! The customer's side of BYOK, simulated: the key service the platform calls to exchange
//! client credentials for a token and to decrypt data keys, complete, and misbehaving on
//! demand.
//!
//! It serves `POST /{partner}/byok/v1/auth`, `/decrypt-key` and `/rotate-key` exactly as
//! the interface describes them, with master keys per alias and version (the `byok:v1:`
//! envelope of [`contracts::envelope`]), HS256 JWTs, faults set at run time, and an audit
//! log of every call. A platform test starts it in process on `127.0.0.1:0`:
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use contracts::clock::SimClock;
//! use customer_kms_sim::{FaultKind, FaultSpec, FaultTrigger, KeyService, KmsConfig};
//!
//! let clock = SimClock::at("2026-03-01T00:00:00Z");
//! let config = KmsConfig::new("acme")
//!     .with_seed(7)
//!     .with_client("platform", &["secret-1", "secret-2"])
//!     .with_api_key("static", "sk_test_1")
//!     .with_alias("tenant-a", 1);
//! let svc = KeyService::new(config, clock.shared())?;
//! let (encrypted_key, _version) = svc.wrap_data_key("tenant-a", &[0x42; 32])?;
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let base_url = format!("http://{}", listener.local_addr()?);
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let server = tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
//!     let _ = stopped.await;
//! }));
//!
//! // The next two decrypt calls answer 503.
//! svc.add_fault(FaultSpec::new(FaultKind::ServiceUnavailable).when(FaultTrigger::Next(2)))?;
//! // ... drive the platform against base_url, then:
//! let failures = svc.audit().count(|e| e.outcome != "OK");
//! # let _ = (encrypted_key, base_url, failures);
//! let _ = stop.send(());
//! server.await?;
//! # Ok(()) }
//! ```
//!
//! A user of the crate touches the items its root re-exports (above) and the public modules
//! [`config`], [`keys`], [`auth`], [`audit`] and [`cli`]; the other modules are internal.
//!
//! Modules:
//! - [`config`]: [`KmsConfig`], read from TOML or built in code; every key is in `README.md`.
//! - [`keys`]: master keys per alias with versions, status, minimum version; seed derivation.
//! - [`auth`]: Basic client credentials, HS256 JWTs, static API keys, constant-time checks.
//! - [`faults`]: fault kinds, scopes and triggers, and where a call meets them.
//! - [`audit`]: the bounded audit log.
//! - [`mutants`]: switches that each break one rule of the contract, to prove a checker.
//! - [`service`]: [`KeyService`], the shared state behind the HTTP layer and the library API.
//! - [`http`]: the warp routes ([`routes`]), the admin API, [`serve`].
//! - [`error`]: [`KmsError`], answered as `{"error": {"code", "message"}}`.
//! - [`cli`]: the `customer-kms-sim` command, shared by its binary and `harness`.

#![warn(missing_docs)]
// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]
// Module docs map the modules inside the crate too, which the public docs do not show;
// CI also builds the docs with the private items, where every such link is checked.
#![allow(rustdoc::private_intra_doc_links)]

pub mod audit;
pub mod auth;
pub mod cli;
pub mod config;
pub(crate) mod error;
pub(crate) mod faults;
pub(crate) mod http;
pub mod keys;
pub(crate) mod mutants;
pub(crate) mod service;

pub use audit::{AuditEntry, AuditLog};
pub use config::{AliasStatus, ConfigError, KmsConfig};
pub use error::KmsError;
pub use faults::{Endpoint, FaultInfo, FaultKind, FaultSpec, FaultTrigger};
pub use http::{routes, serve};
pub use keys::{AliasInfo, KeyError};
pub use mutants::{Mutant, Mutants};
pub use service::KeyService;
