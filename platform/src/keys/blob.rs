//! The sealed-blob format and the keys that seal and open it.
//!
//! ```text
//! blob = 0x01 || u32be(data_key_id) || nonce (12) || AES-256-GCM(ciphertext || tag)
//! aad  = "vap-blob:v1:" || context
//! ```
//!
//! `data_key_id` is the row of `data_keys` whose encrypted key protects the blob, so data
//! stays readable after a rotation. `context` names where the blob lives (for example
//! `cohort_users/coh-…/17`), so a blob copied to another row fails to open.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, AeadInPlace, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use zeroize::Zeroizing;

use super::lookup::LookupKey;

const BLOB_VERSION: u8 = 1;
const BLOB_HEADER: usize = 1 + 4 + 12;
const TAG_LEN: usize = 16;
const AAD_PREFIX: &[u8] = b"vap-blob:v1:";

/// A plaintext data key, with its cipher and lookup key ready. Zeroed when dropped: the
/// lookup key's states are `Zeroizing` ([`LookupKey`]), the AES round keys are zeroed by `aes` (its `zeroize` feature,
/// checked below at compile time).
pub struct DataKey {
    id: u32,
    cipher: Aes256Gcm,
    lookup: LookupKey,
}

// Fails to compile when the `zeroize` feature of `aes` is lost.
const _: fn() = || {
    fn zeroed_on_drop<T: zeroize::ZeroizeOnDrop>() {}
    zeroed_on_drop::<aes::Aes256>();
};

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataKey(id {})", self.id)
    }
}

impl DataKey {
    /// Prepares the 32-byte key stored as `data_keys` row `id`.
    pub(crate) fn new(id: u32, key: &[u8; 32]) -> Self {
        // A separate key for lookup hashes, derived so that the hash reveals nothing about
        // the encryption key: HMAC-SHA256(key, "vap-lookup:v1").
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
        mac.update(b"vap-lookup:v1");
        let lookup: Zeroizing<[u8; 32]> = Zeroizing::new(mac.finalize().into_bytes().into());
        DataKey {
            id,
            cipher: Aes256Gcm::new(key.into()),
            lookup: LookupKey::new(&lookup),
        }
    }

    /// The `data_keys` row of this key.
    #[cfg(test)]
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// Seals `plaintext` for `context`.
    pub(crate) fn seal(&self, context: &str, plaintext: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(sealed_len(plaintext.len()));
        self.seal_append(context, plaintext, &mut out);
        out
    }

    /// Seals `plaintext` for `context` onto the end of `out`: the blob is encrypted in place
    /// where it lands, so sealing many values into one buffer allocates nothing per value
    /// once the buffer has grown.
    pub(crate) fn seal_append(&self, context: &str, plaintext: &[u8], out: &mut Vec<u8>) {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        out.reserve(sealed_len(plaintext.len()));
        let start = out.len();
        out.push(BLOB_VERSION);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plaintext);
        let tag = with_aad(context, |aad| {
            self.cipher.encrypt_in_place_detached(
                Nonce::from_slice(&nonce),
                aad,
                &mut out[start + BLOB_HEADER..],
            )
        })
        .expect("AES-GCM encrypts any plaintext under 64 GiB");
        out.extend_from_slice(&tag);
    }

    fn open_body(&self, context: &str, blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let nonce = &blob[5..BLOB_HEADER];
        with_aad(context, |aad| {
            self.cipher.decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: &blob[BLOB_HEADER..],
                    aad,
                },
            )
        })
        .map_err(|_| CryptoError::Tampered {
            context: context.to_string(),
        })
    }

    /// A keyed hash of a value (a phone number) for equality lookups without storing it.
    pub(crate) fn lookup_hash(&self, value: &str) -> [u8; 16] {
        self.lookup.hash(value.as_bytes())
    }
}

/// The length of the blob that seals `plaintext_len` bytes.
fn sealed_len(plaintext_len: usize) -> usize {
    BLOB_HEADER + plaintext_len + TAG_LEN
}

/// Runs `f` with the associated data of `context` (`AAD_PREFIX || context`), built on the
/// stack when it fits: sealing a user costs no allocation for it.
fn with_aad<T>(context: &str, f: impl FnOnce(&[u8]) -> T) -> T {
    let len = AAD_PREFIX.len() + context.len();
    let mut stack = [0u8; 128];
    let mut heap = Vec::new();
    let buf: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    buf[..AAD_PREFIX.len()].copy_from_slice(AAD_PREFIX);
    buf[AAD_PREFIX.len()..].copy_from_slice(context.as_bytes());
    f(buf)
}

/// The data key id a blob was sealed with.
pub fn blob_key_id(blob: &[u8]) -> Result<u32, CryptoError> {
    if blob.len() < BLOB_HEADER + 16 || blob[0] != BLOB_VERSION {
        return Err(CryptoError::Malformed);
    }
    Ok(u32::from_be_bytes(blob[1..5].try_into().expect("4 bytes")))
}

/// Why a blob or a key could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// Not a sealed blob of this format.
    #[error("stored data is not a sealed blob")]
    Malformed,
    /// The blob does not open: altered, or moved from another place.
    #[error("stored data at {context} failed authentication")]
    Tampered {
        /// Where the blob was read.
        context: String,
    },
    /// No key with this id is known for the workspace.
    #[error("no data key {0} for this workspace")]
    UnknownKey(u32),
}

/// The keys of one workspace at one moment: the active key for new data and every key that
/// may protect existing data.
#[derive(Debug, Clone)]
pub struct WorkspaceKeys {
    pub(super) active: Arc<DataKey>,
    pub(super) lookup: Arc<DataKey>,
    pub(super) all: HashMap<u32, Arc<DataKey>>,
}

impl WorkspaceKeys {
    /// The key new data is sealed with.
    #[cfg(test)]
    pub(crate) fn active(&self) -> &DataKey {
        &self.active
    }

    /// Seals with the active key.
    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Vec<u8> {
        self.active.seal(context, plaintext)
    }

    /// Seals with the active key onto the end of `out` ([`DataKey::seal_append`]).
    pub(crate) fn seal_append(&self, context: &str, plaintext: &[u8], out: &mut Vec<u8>) {
        self.active.seal_append(context, plaintext, out)
    }

    /// Opens a blob with whichever of the workspace's keys sealed it.
    pub(crate) fn open(&self, context: &str, blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let id = blob_key_id(blob)?;
        let key = self.all.get(&id).ok_or(CryptoError::UnknownKey(id))?;
        key.open_body(context, blob)
    }

    /// The keyed lookup hash of `value` (a phone number). It is derived from the
    /// workspace's first data key, so it stays the same across rotations and rows written
    /// before and after one still match.
    pub fn lookup_hash(&self, value: &str) -> [u8; 16] {
        self.lookup.lookup_hash(value)
    }
}

#[cfg(test)]
impl WorkspaceKeys {
    /// One key, active and used for lookup hashes: the keys of unit tests elsewhere in the
    /// crate.
    pub(crate) fn single(key: DataKey) -> Self {
        let key = Arc::new(key);
        WorkspaceKeys {
            active: key.clone(),
            lookup: key.clone(),
            all: HashMap::from([(key.id, key)]),
        }
    }
}
