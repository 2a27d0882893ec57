//! Encryption at rest: data keys, sealed blobs, keyed lookup hashes, and the key ring that
//! hands out a workspace's keys.
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
//! Each data key comes from a [`KeyService`]: the platform's local key service (a master key
//! held by the platform, wrapping per-workspace data keys in the `byok:v1:` envelope) or the
//! customer's key service (BYOK). The [`KeyRing`] caches plaintext data keys in memory for a
//! bounded lifetime on the injected clock and zeroes them when dropped.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use chrono::{DateTime, Duration, Utc};
use contracts::clock::SharedClock;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::store::{DataKeyRow, Store, WorkspaceRef};

const BLOB_VERSION: u8 = 1;
const BLOB_HEADER: usize = 1 + 4 + 12;
const AAD_PREFIX: &[u8] = b"vap-blob:v1:";

/// A plaintext data key, with its cipher and lookup key ready. Zeroed when dropped.
pub struct DataKey {
    id: u32,
    cipher: Aes256Gcm,
    lookup: Zeroizing<[u8; 32]>,
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataKey(id {})", self.id)
    }
}

impl DataKey {
    /// Prepares the 32-byte key stored as `data_keys` row `id`.
    pub fn new(id: u32, key: &[u8; 32]) -> Self {
        // A separate key for lookup hashes, derived so that the hash reveals nothing about
        // the encryption key: HMAC-SHA256(key, "vap-lookup:v1").
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
        mac.update(b"vap-lookup:v1");
        let lookup: [u8; 32] = mac.finalize().into_bytes().into();
        DataKey {
            id,
            cipher: Aes256Gcm::new(key.into()),
            lookup: Zeroizing::new(lookup),
        }
    }

    /// The `data_keys` row of this key.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Seals `plaintext` for `context`.
    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let aad = aad(context);
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .expect("AES-GCM encrypts any plaintext under 64 GiB");
        let mut out = Vec::with_capacity(BLOB_HEADER + sealed.len());
        out.push(BLOB_VERSION);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    fn open_body(&self, context: &str, blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let nonce = &blob[5..BLOB_HEADER];
        let aad = aad(context);
        self.cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: &blob[BLOB_HEADER..],
                    aad: &aad,
                },
            )
            .map_err(|_| CryptoError::Tampered {
                context: context.to_string(),
            })
    }

    /// A keyed hash of a value (a phone number) for equality lookups without storing it.
    pub fn lookup_hash(&self, value: &str) -> [u8; 16] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.lookup[..]).expect("HMAC takes any key");
        mac.update(value.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; 16];
        out.copy_from_slice(&full[..16]);
        out
    }
}

fn aad(context: &str) -> Vec<u8> {
    let mut a = Vec::with_capacity(AAD_PREFIX.len() + context.len());
    a.extend_from_slice(AAD_PREFIX);
    a.extend_from_slice(context.as_bytes());
    a
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
    active: Arc<DataKey>,
    lookup: Arc<DataKey>,
    all: HashMap<u32, Arc<DataKey>>,
}

impl WorkspaceKeys {
    /// The key new data is sealed with.
    pub fn active(&self) -> &DataKey {
        &self.active
    }

    /// Seals with the active key.
    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Vec<u8> {
        self.active.seal(context, plaintext)
    }

    /// Opens a blob with whichever of the workspace's keys sealed it.
    pub fn open(&self, context: &str, blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
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

/// A future returned by a [`KeyService`].
pub type KeyFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, KeyServiceError>> + Send + 'a>>;

/// Where data keys come from: the platform's own local key, or the customer's key service.
pub trait KeyService: Send + Sync + fmt::Debug {
    /// A short name for logs and the `data_keys.provider` column (`local`, `byok`).
    fn provider(&self) -> &'static str;

    /// The encrypted data key to use for a workspace that has none yet, with its alias.
    /// `None` means "generate one" ([`KeyService::generate`]).
    fn configured_key(&self, ws: &WorkspaceRef) -> Option<(String, String)>;

    /// Decrypts an encrypted data key (`byok:v1:...`) of `alias` into the 32-byte key.
    fn decrypt<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>>;

    /// Makes a new data key: its alias, its encrypted form and the plaintext.
    fn generate<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)>;

    /// How long a plaintext data key may stay in memory.
    fn cache_lifetime(&self) -> Duration;
}

/// Why a key service could not hand out a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyServiceError {
    /// The key service is unreachable, timed out, failed, or answered something unusable;
    /// trying again later may work.
    #[error("the key service is unavailable: {0}")]
    Unavailable(String),
    /// The key service refused (unknown alias, disabled key, decryption failure, bad
    /// credentials); trying again will not help until the configuration changes.
    #[error("the key service refused: {0}")]
    Refused(String),
}

/// The platform's local key service: a 32-byte master key held by the platform wraps one
/// data key per workspace in the `byok:v1:` envelope under the alias `local`. Used when no
/// BYOK is configured for a workspace.
pub struct LocalKeyService {
    master: contracts::envelope::EnvelopeKey,
}

impl fmt::Debug for LocalKeyService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalKeyService(..)")
    }
}

/// The alias of data keys wrapped by the local key service.
pub const LOCAL_ALIAS: &str = "local";

impl LocalKeyService {
    /// A local key service with this master key.
    pub fn new(master_key: &[u8; 32]) -> Self {
        LocalKeyService {
            master: contracts::envelope::EnvelopeKey::new(master_key),
        }
    }
}

impl KeyService for LocalKeyService {
    fn provider(&self) -> &'static str {
        "local"
    }

    fn configured_key(&self, _ws: &WorkspaceRef) -> Option<(String, String)> {
        None
    }

    fn decrypt<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        _trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>> {
        Box::pin(async move {
            let env = contracts::envelope::parse(encrypted_key)
                .map_err(|e| KeyServiceError::Refused(e.to_string()))?;
            let plain = self
                .master
                .unwrap(alias, &env)
                .map_err(|e| KeyServiceError::Refused(format!("local data key: {e}")))?;
            let key: [u8; 32] = plain[..]
                .try_into()
                .map_err(|_| KeyServiceError::Refused("local data key is not 32 bytes".into()))?;
            Ok(Zeroizing::new(key))
        })
    }

    fn generate<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        _trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)> {
        Box::pin(async move {
            let mut key = Zeroizing::new([0u8; 32]);
            rand::rngs::OsRng.fill_bytes(&mut key[..]);
            let mut nonce = [0u8; 12];
            rand::rngs::OsRng.fill_bytes(&mut nonce);
            let wrapped = self
                .master
                .wrap(LOCAL_ALIAS, 1, nonce, &key[..])
                .map_err(|e| KeyServiceError::Refused(e.to_string()))?;
            Ok((LOCAL_ALIAS.to_string(), wrapped, key))
        })
    }

    fn cache_lifetime(&self) -> Duration {
        // The master key is in memory anyway; keep unwrapped data keys for a day.
        Duration::days(1)
    }
}

struct Cached {
    key: Arc<DataKey>,
    expires: DateTime<Utc>,
}

/// Hands out each workspace's data keys, creating the first on demand, decrypting through
/// the workspace's [`KeyService`] and caching plaintext keys until their lifetime ends on
/// the injected clock. Concurrent callers on a cold cache share one decryption per key.
pub struct KeyRing {
    store: Store,
    clock: SharedClock,
    default_service: Arc<dyn KeyService>,
    services: Mutex<HashMap<WorkspaceRef, Arc<dyn KeyService>>>,
    cache: Mutex<HashMap<u32, Cached>>,
    /// One lock per workspace: serialises cold-cache work (creation, decryption) so that
    /// concurrent requests cause one key-service call, not one each.
    flights: Mutex<HashMap<WorkspaceRef, Arc<tokio::sync::Mutex<()>>>>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("default_service", &self.default_service)
            .finish_non_exhaustive()
    }
}

/// Why the key ring could not give keys.
#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    /// The key service failed.
    #[error(transparent)]
    Service(#[from] KeyServiceError),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
}

impl KeyRing {
    /// A key ring over `store`, using `default_service` for workspaces without their own.
    pub fn new(store: Store, clock: SharedClock, default_service: Arc<dyn KeyService>) -> Self {
        KeyRing {
            store,
            clock,
            default_service,
            services: Mutex::new(HashMap::new()),
            cache: Mutex::new(HashMap::new()),
            flights: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `service` for the keys of `ws` from now on.
    pub fn set_service(&self, ws: WorkspaceRef, service: Arc<dyn KeyService>) {
        self.services.lock().expect("lock").insert(ws, service);
    }

    /// The service that holds the keys of `ws`.
    pub fn service(&self, ws: &WorkspaceRef) -> Arc<dyn KeyService> {
        self.services
            .lock()
            .expect("lock")
            .get(ws)
            .cloned()
            .unwrap_or_else(|| self.default_service.clone())
    }

    fn cached(&self, id: u32, now: DateTime<Utc>) -> Option<Arc<DataKey>> {
        let mut cache = self.cache.lock().expect("lock");
        match cache.get(&id) {
            Some(c) if c.expires > now => Some(c.key.clone()),
            Some(_) => {
                // Expired: drop it now (the key is zeroed when the last holder lets go).
                cache.remove(&id);
                None
            }
            None => None,
        }
    }

    /// Forgets every cached plaintext key.
    pub fn clear_cache(&self) {
        self.cache.lock().expect("lock").clear();
    }

    fn flight(&self, ws: &WorkspaceRef) -> Arc<tokio::sync::Mutex<()>> {
        self.flights
            .lock()
            .expect("lock")
            .entry(ws.clone())
            .or_default()
            .clone()
    }

    /// The keys of `ws`, creating its first data key when it has none.
    pub async fn workspace(
        &self,
        ws: &WorkspaceRef,
        trace_id: Option<&str>,
    ) -> Result<WorkspaceKeys, KeyRingError> {
        let rows = self.rows(ws).await?;
        let now = self.clock.now();
        if !rows.is_empty()
            && let Some(keys) = self.assemble(&rows, now)
        {
            return Ok(keys);
        }
        let flight = self.flight(ws);
        let _guard = flight.lock().await;
        // Another caller may have done the work while this one waited.
        let mut rows = self.rows(ws).await?;
        let service = self.service(ws);
        if rows.is_empty() {
            let (alias, encrypted, plain) = match service.configured_key(ws) {
                Some((alias, encrypted)) => {
                    let plain = service.decrypt(ws, &alias, &encrypted, trace_id).await?;
                    (alias, encrypted, plain)
                }
                None => service.generate(ws, trace_id).await?,
            };
            let row = self
                .store
                .insert_data_key(ws.clone(), service.provider(), alias, encrypted, now)
                .await?;
            self.remember(&row, &plain, service.cache_lifetime(), now);
            rows = vec![row];
        }
        for row in &rows {
            if self.cached(row.id, now).is_none() {
                let plain = service
                    .decrypt(ws, &row.key_alias, &row.encrypted_key, trace_id)
                    .await?;
                self.remember(row, &plain, service.cache_lifetime(), now);
            }
        }
        self.assemble(&rows, now).ok_or_else(|| {
            KeyServiceError::Unavailable("data key expired while it was fetched".into()).into()
        })
    }

    /// Adds a new active data key for `ws` (after a rotation at the key service); older keys
    /// stay to read older data.
    pub async fn add_active_key(
        &self,
        ws: &WorkspaceRef,
        alias: String,
        encrypted_key: String,
        plain: &[u8; 32],
    ) -> Result<u32, KeyRingError> {
        let now = self.clock.now();
        let service = self.service(ws);
        let row = self
            .store
            .insert_data_key(ws.clone(), service.provider(), alias, encrypted_key, now)
            .await?;
        self.remember(&row, plain, service.cache_lifetime(), now);
        Ok(row.id)
    }

    async fn rows(&self, ws: &WorkspaceRef) -> Result<Vec<DataKeyRow>, KeyRingError> {
        Ok(self.store.data_keys(ws.clone()).await?)
    }

    fn remember(&self, row: &DataKeyRow, plain: &[u8; 32], lifetime: Duration, now: DateTime<Utc>) {
        self.cache.lock().expect("lock").insert(
            row.id,
            Cached {
                key: Arc::new(DataKey::new(row.id, plain)),
                expires: now + lifetime,
            },
        );
    }

    fn assemble(&self, rows: &[DataKeyRow], now: DateTime<Utc>) -> Option<WorkspaceKeys> {
        let mut all = HashMap::with_capacity(rows.len());
        for row in rows {
            all.insert(row.id, self.cached(row.id, now)?);
        }
        // Rows come oldest first; the newest is active, the oldest keys lookups.
        let active = all.get(&rows.last()?.id)?.clone();
        let lookup = all.get(&rows.first()?.id)?.clone();
        Some(WorkspaceKeys {
            active,
            lookup,
            all,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_open_only_in_their_context_and_with_their_key() {
        let k1 = Arc::new(DataKey::new(1, &[7u8; 32]));
        let k2 = Arc::new(DataKey::new(2, &[9u8; 32]));
        let keys = WorkspaceKeys {
            active: k2.clone(),
            lookup: k1.clone(),
            all: HashMap::from([(1, k1.clone()), (2, k2.clone())]),
        };
        let old = k1.seal("users/1", b"+14155550100");
        let new = keys.seal("users/2", b"+14155550101");
        assert_eq!(blob_key_id(&old).unwrap(), 1);
        assert_eq!(blob_key_id(&new).unwrap(), 2);
        assert_eq!(keys.open("users/1", &old).unwrap(), b"+14155550100");
        assert_eq!(keys.open("users/2", &new).unwrap(), b"+14155550101");
        assert!(matches!(
            keys.open("users/2", &old),
            Err(CryptoError::Tampered { .. })
        ));
        let mut flipped = new.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(keys.open("users/2", &flipped).is_err());
        assert_eq!(blob_key_id(&[1, 2, 3]), Err(CryptoError::Malformed));
        assert_eq!(
            keys.lookup_hash("+1415"),
            k1.lookup_hash("+1415"),
            "stable across rotation"
        );
        let only_new = WorkspaceKeys {
            active: k2.clone(),
            lookup: k2.clone(),
            all: HashMap::from([(2, k2)]),
        };
        assert_eq!(
            only_new.open("users/1", &old),
            Err(CryptoError::UnknownKey(1))
        );
    }

    #[test]
    fn lookup_hashes_are_keyed() {
        let a = DataKey::new(1, &[1u8; 32]);
        let b = DataKey::new(2, &[2u8; 32]);
        assert_eq!(a.lookup_hash("+1415"), a.lookup_hash("+1415"));
        assert_ne!(a.lookup_hash("+1415"), b.lookup_hash("+1415"));
        assert_ne!(a.lookup_hash("+1415"), a.lookup_hash("+1416"));
    }
}
