//! Keys and encryption at rest, as one story: the sealed-blob format, where data keys come
//! from (the local key service or the customer's, BYOK), and the ring that hands out a
//! workspace's keys.
//!
//! Every value that identifies a person (phone numbers, identifiers, agent variables, the
//! uploaded and rejected files) is stored as a *sealed blob*:
//!
//! ```text
//! blob = 0x01 || u32be(data_key_id) || nonce (12) || AES-256-GCM(ciphertext || tag)
//! aad  = "vap-blob:v1:" || context
//! ```
//!
//! `data_key_id` is the row of `data_keys` whose encrypted key protects the blob, so data
//! stays readable after a rotation. `context` names where the blob lives (for example
//! `cohort_users/coh-…/17`), so a blob copied to another row fails to open.
//!
//! Each data key comes from a [`DataKeySource`]: the platform's local key service (a master key
//! held by the platform, wrapping per-workspace data keys in the `byok:v1:` envelope) or the
//! customer's key service (BYOK). The [`DataKeyRing`] caches plaintext data keys in memory for a
//! bounded lifetime on the injected clock and zeroes them when dropped.
//!
//! - [`blob`]: data keys, sealed blobs, keyed lookup hashes ([`WorkspaceKeys`]).
//! - [`lookup`]: the keyed lookup hash itself (HMAC-SHA256 with its key blocks hashed once).
//! - [`service`]: the [`DataKeySource`] trait and the [`LocalKeyService`].
//! - [`byok`]: the client of the customer's key service ([`ByokKeyService`]).
//! - [`ring`]: the [`DataKeyRing`], single flight and cache, rotation and adoption.

pub(crate) mod blob;
pub(crate) mod byok;
pub(crate) mod lookup;
pub(crate) mod ring;
pub(crate) mod service;

#[cfg(test)]
mod tests;

pub use blob::{CryptoError, DataKey, WorkspaceKeys, blob_key_id};
pub use byok::ByokKeyService;
pub use ring::{DataKeyRing, DataKeyRingError};
pub use service::{
    DataKeySource, KeyCallReason, KeyFuture, KeyServiceError, LOCAL_ALIAS, LocalKeyService,
    key_check,
};
